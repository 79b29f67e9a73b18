//! A proposal's metadata file, and the checks that its files are intact.
//!
//! The metadata is plain JSON anyone can edit, so nothing in it is trusted: the
//! files it names must be exactly the expected siblings of the metadata file
//! (never a path of its own choosing), and the staged note must still hash to
//! what it recorded.

use serde::{Deserialize, Serialize};

use super::layout::{
    FILE_MAX_BYTES, Inbox, META_MAX_BYTES, META_SUFFIX, ProposalKind, ProposalStatus, SCHEMA, content_name,
    diff_name, is_hash, is_id, short_id,
};
use crate::error::{Error, ErrorCode, Result};
use crate::sandbox::{NotePath, Sandbox};
use crate::vault::content_hash;

/// A proposal's metadata file, exactly as the contract lists its fields.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct Metadata {
    /// Always [`SCHEMA`].
    pub(crate) schema: u32,
    pub(crate) proposal_id: String,
    pub(crate) kind: ProposalKind,
    pub(crate) target: String,
    /// Where the staged note was written (its pending location, vault-relative).
    pub(crate) content_file: String,
    pub(crate) content_sha256: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) base_sha256: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) diff_file: Option<String>,
    pub(crate) reason: String,
    pub(crate) created_at: String,
}

/// `proposal_not_found` for an id.
pub(crate) fn not_found(id: &str) -> Error {
    Error::new(ErrorCode::ProposalNotFound, format!("no proposal has the id {id:?}"))
        .with_hint("proposal ids look like p_ and 32 hex digits; list_proposals shows the pending ones")
}

/// `proposal_tampered` for a proposal.
pub(crate) fn tampered(id: &str, why: &str) -> Error {
    Error::new(ErrorCode::ProposalTampered, format!("proposal {id} was changed after it was staged: {why}"))
        .with_hint("nothing was written; reject it and propose the change again")
}

/// A metadata file found in the inbox, parsed.
#[derive(Debug, Clone)]
pub(crate) struct Located {
    pub(crate) meta: Metadata,
    /// Where the metadata file is now.
    pub(crate) meta_path: NotePath,
    /// The folder it is in now.
    pub(crate) dir: String,
    /// Its name without [`META_SUFFIX`].
    pub(crate) stem: String,
    pub(crate) status: ProposalStatus,
}

impl Located {
    pub(crate) fn id(&self) -> &str {
        &self.meta.proposal_id
    }

    /// The staged note where it is now.
    pub(crate) fn content_path(&self) -> Result<NotePath> {
        NotePath::parse(&format!("{}/{}", self.dir, content_name(self.meta.kind, &self.stem)))
    }

    /// The diff where it is now (patches only).
    pub(crate) fn diff_path(&self) -> Result<Option<NotePath>> {
        match self.meta.kind {
            ProposalKind::New => Ok(None),
            _ => NotePath::parse(&format!("{}/{}", self.dir, diff_name(&self.stem))).map(Some),
        }
    }

    /// The names of its files, metadata first.
    pub(crate) fn file_names(&self) -> Vec<String> {
        let mut names = vec![format!("{}{META_SUFFIX}", self.stem), content_name(self.meta.kind, &self.stem)];
        if self.meta.kind != ProposalKind::New {
            names.push(diff_name(&self.stem));
        }
        names
    }
}

/// What is wrong with a proposal's files, as a `proposal_tampered` error whose
/// message is only the flaw; [`tampered`] words it for a given id.
pub(crate) fn flaw(why: impl Into<String>) -> Error {
    Error::new(ErrorCode::ProposalTampered, why)
}

/// Reads and parses a metadata file; the error says why it is not valid metadata.
pub(super) fn read_metadata(sandbox: &Sandbox, path: &NotePath) -> Result<Metadata> {
    let bytes = sandbox.read(path, META_MAX_BYTES).map_err(|err| flaw(err.message))?;
    serde_json::from_slice(&bytes)
        .map_err(|err| flaw(format!("{path} is not valid proposal metadata: {err}")))
}

/// Parses the metadata file at `path` into a [`Located`].
pub(crate) fn locate(sandbox: &Sandbox, path: &NotePath, status: ProposalStatus) -> Result<Located> {
    let meta = read_metadata(sandbox, path)?;
    let stem = path.file_name().strip_suffix(META_SUFFIX).unwrap_or(path.file_name()).to_owned();
    Ok(Located { meta, meta_path: path.clone(), dir: path.parent().to_owned(), stem, status })
}

/// The structural checks: the metadata names exactly the files a proposal of its
/// kind and id has beside it, and its hashes are well formed. The error says what is wrong.
pub(crate) fn validate(inbox: &Inbox, located: &Located) -> Result<()> {
    let meta = &located.meta;
    if meta.schema != SCHEMA {
        return Err(flaw(format!("its metadata has schema {}, expected {SCHEMA}", meta.schema)));
    }
    if !is_id(&meta.proposal_id) {
        return Err(flaw(format!("its metadata holds the malformed id {:?}", meta.proposal_id)));
    }
    if !located.stem.ends_with(&format!("-{}", short_id(&meta.proposal_id))) {
        return Err(flaw(format!("its metadata file {} is not named after its id", located.meta_path)));
    }
    let pending = inbox.pending_dir(meta.kind);
    if located.status == ProposalStatus::Pending && located.dir != pending {
        return Err(flaw(format!(
            "a {} proposal lies in {}, not in {pending}",
            kind_name(meta.kind),
            located.dir
        )));
    }
    let expected_content = format!("{pending}/{}", content_name(meta.kind, &located.stem));
    if meta.content_file != expected_content {
        return Err(flaw(format!(
            "its metadata names content_file {:?}; a proposal's note is always {expected_content:?}",
            meta.content_file
        )));
    }
    let expected_diff =
        (meta.kind != ProposalKind::New).then(|| format!("{pending}/{}", diff_name(&located.stem)));
    if meta.diff_file != expected_diff {
        return Err(flaw(format!(
            "its metadata names diff_file {:?}, expected {expected_diff:?}",
            meta.diff_file
        )));
    }
    if !is_hash(&meta.content_sha256) {
        return Err(flaw(format!("content_sha256 {:?} is not a sha256:<hex> hash", meta.content_sha256)));
    }
    match (&meta.base_sha256, meta.kind) {
        (Some(base), ProposalKind::Patch) if is_hash(base) => Ok(()),
        (None, kind) if kind != ProposalKind::Patch => Ok(()),
        (base, kind) => {
            Err(flaw(format!("base_sha256 {base:?} does not fit a {} proposal", kind_name(kind))))
        }
    }
}

fn kind_name(kind: ProposalKind) -> &'static str {
    match kind {
        ProposalKind::New => "new-note",
        kind => kind.name(),
    }
}

/// Structure, files in place, and the staged note's hash; returns the staged note.
pub(crate) fn intact(sandbox: &Sandbox, inbox: &Inbox, located: &Located) -> Result<Vec<u8>> {
    validate(inbox, located)?;
    let content_path = located.content_path()?;
    if let Some(diff) = located.diff_path()? {
        match sandbox.stat(&diff) {
            Ok(Some(_)) => {}
            _ => return Err(flaw(format!("its diff {diff} is missing"))),
        }
    }
    let content = match sandbox.read(&content_path, FILE_MAX_BYTES) {
        Ok(bytes) => bytes,
        Err(err) if err.code == ErrorCode::NotFound => {
            return Err(flaw(format!("its staged note {content_path} is missing")));
        }
        Err(err) => return Err(flaw(err.message)),
    };
    let hash = content_hash(&content);
    if hash != located.meta.content_sha256 {
        return Err(flaw(format!(
            "{content_path} hashes to {hash}, but the proposal recorded {}",
            located.meta.content_sha256
        )));
    }
    Ok(content)
}

/// [`intact`] from file metadata alone, for listings: the structure is valid,
/// the files are in place, and the staged note was not modified after its
/// metadata file was written (the metadata is written last). Only a staged note
/// modified later is read and hashed. A listing thus costs the same whatever the
/// size of the staged notes; `apply` always checks the hash itself.
pub(crate) fn looks_intact(sandbox: &Sandbox, inbox: &Inbox, located: &Located) -> bool {
    if validate(inbox, located).is_err() {
        return false;
    }
    let present = |path: &NotePath| sandbox.stat(path).ok().flatten();
    if let Ok(Some(diff)) = located.diff_path()
        && present(&diff).is_none()
    {
        return false;
    }
    let (Ok(content_path), Some(meta)) = (located.content_path(), present(&located.meta_path)) else {
        return false;
    };
    match present(&content_path) {
        None => false,
        Some(content) if content.modified <= meta.modified => true,
        Some(_) => intact(sandbox, inbox, located).is_ok(),
    }
}
