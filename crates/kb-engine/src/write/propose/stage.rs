//! Staging proposals: building a new note or a patched note and writing it to
//! the inbox, and nothing else.
//!
//! Both functions check everything they can before writing (arguments, the
//! target, the base hash, the size cap), then write the staged note, the diff and
//! last the metadata file, each create-new under a fresh name: a proposal becomes
//! visible only once it is complete, and a failure removes what was written.

use jiff::Timestamp;
use serde::Serialize;

use super::linkers::linkers_of;
use super::note::{NewNote, PatchRequest, build_new, build_patch};
use super::view::VaultView;
use crate::error::{Error, ErrorCode, Result};
use crate::sandbox::{NotePath, Sandbox, WriteMode, Zone, rfc3339};
use crate::vault::{Limits, content_hash};
use crate::write::inbox::{
    Inbox, META_SUFFIX, Metadata, ProposalKind, SCHEMA, content_name, diff_name, new_id, short_id,
};
use crate::write::plan::Plan;
use crate::write::text::{slug, unified_diff};

/// Characters of the staged note shown in [`Staged::preview`].
const PREVIEW_CHARS: usize = 800;

/// A staged proposal: what was written to the inbox.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Staged {
    /// The server-generated id (`p_` and 32 hex digits).
    pub proposal_id: String,
    /// New note or patch.
    pub kind: ProposalKind,
    /// The note the proposal would write.
    pub target: String,
    /// The inbox files written, vault-relative.
    pub files: Vec<String>,
    /// `sha256:<hex>` of the staged note.
    pub content_hash: String,
    /// For a patch, the hash of the note it was made against.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub base_hash: Option<String>,
    /// The start of the staged note (about 800 characters).
    pub preview: String,
    /// For a patch, the unified diff.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub diff: Option<String>,
    /// Lines added.
    pub added: u32,
    /// Lines removed.
    pub removed: u32,
    /// The whole staged note (what the apply writes).
    #[serde(skip)]
    pub text: String,
}

/// Stages a new note: `inbox/new/<stem>.md` (the complete note, frontmatter
/// included) and `inbox/new/<stem>.proposal.json`. The target is
/// `<folder or first notes root>/<title as a safe file name>.md`; `target_exists`
/// when it exists, `path_denied` when it is not in a notes root, `too_large` above
/// `proposal_max_bytes`.
pub fn propose_new(sandbox: &Sandbox, limits: &Limits, note: &NewNote, now: Timestamp) -> Result<Staged> {
    let reason = required_reason(&note.reason)?;
    let (target, text) = build_new(sandbox, limits, note, now)?;
    stage_new(sandbox, limits, target, text, &slug::slug(note.title.trim()), reason, now)
}

/// Stages `text` as a new note at `target` (checked free by the caller):
/// `inbox/new/<slug>-<short id>.md` and its metadata.
pub(super) fn stage_new(
    sandbox: &Sandbox,
    limits: &Limits,
    target: NotePath,
    text: String,
    slug: &str,
    reason: String,
    now: Timestamp,
) -> Result<Staged> {
    let id = new_id()?;
    let stem = format!("{slug}-{}", short_id(&id));
    let inbox = Inbox::of(sandbox);
    let content_file = inbox.path(&format!("new/{}", content_name(ProposalKind::New, &stem)))?;
    let meta = Metadata {
        schema: SCHEMA,
        proposal_id: id.clone(),
        kind: ProposalKind::New,
        target: target.as_str().to_owned(),
        content_file: content_file.as_str().to_owned(),
        content_sha256: content_hash(text.as_bytes()),
        base_sha256: None,
        diff_file: None,
        reason,
        created_at: rfc3339(now, Zone::Local),
    };
    let meta_file = inbox.path(&format!("new/{stem}{META_SUFFIX}"))?;
    stage(sandbox, limits, &[(&content_file, text.as_bytes()), (&meta_file, &metadata_bytes(&meta)?)], &[])?;
    Ok(Staged {
        proposal_id: id,
        kind: ProposalKind::New,
        target: meta.target,
        files: vec![content_file.as_str().to_owned(), meta_file.as_str().to_owned()],
        content_hash: meta.content_sha256,
        base_hash: None,
        preview: preview(&text),
        diff: None,
        added: count_lines(&text),
        removed: 0,
        text,
    })
}

/// Stages a patch: `inbox/patch/<stem>.new.md` (the whole patched note),
/// `<stem>.diff` (a unified diff) and `<stem>.proposal.json`. `stale_base`
/// (carrying `current_hash`) when `base_hash` is not the note's current hash;
/// `invalid_argument` when the edits change nothing.
pub fn propose_patch(
    sandbox: &Sandbox,
    limits: &Limits,
    request: &PatchRequest,
    now: Timestamp,
) -> Result<Staged> {
    let reason = required_reason(&request.reason)?;
    let (target, text, patched) = build_patch(sandbox, limits, request, None)?;
    stage_patch(sandbox, limits, target, &text, patched, reason, now)
}

/// Stages `patched` as the new text of the note at `target`, whose text on
/// disk is `current` (the base): the whole note, its diff and the metadata.
pub(super) fn stage_patch(
    sandbox: &Sandbox,
    limits: &Limits,
    target: NotePath,
    current: &str,
    patched: String,
    reason: String,
    now: Timestamp,
) -> Result<Staged> {
    let current_hash = content_hash(current.as_bytes());
    let (diff, added, removed) = unified_diff(target.as_str(), current, &patched);

    let id = new_id()?;
    let stem = format!("{}-{}", slug::slug(target.stem()), short_id(&id));
    let inbox = Inbox::of(sandbox);
    let content_file = inbox.path(&format!("patch/{}", content_name(ProposalKind::Patch, &stem)))?;
    let diff_file = inbox.path(&format!("patch/{}", diff_name(&stem)))?;
    let meta_file = inbox.path(&format!("patch/{stem}{META_SUFFIX}"))?;
    let meta = Metadata {
        schema: SCHEMA,
        proposal_id: id.clone(),
        kind: ProposalKind::Patch,
        target: target.as_str().to_owned(),
        content_file: content_file.as_str().to_owned(),
        content_sha256: content_hash(patched.as_bytes()),
        base_sha256: Some(current_hash.clone()),
        diff_file: Some(diff_file.as_str().to_owned()),
        reason,
        created_at: rfc3339(now, Zone::Local),
    };
    stage(
        sandbox,
        limits,
        &[
            (&content_file, patched.as_bytes()),
            (&diff_file, diff.as_bytes()),
            (&meta_file, &metadata_bytes(&meta)?),
        ],
        std::slice::from_ref(&target),
    )?;
    Ok(Staged {
        proposal_id: id,
        kind: ProposalKind::Patch,
        target: meta.target,
        files: [&content_file, &diff_file, &meta_file].iter().map(|path| path.as_str().to_owned()).collect(),
        content_hash: meta.content_sha256,
        base_hash: Some(current_hash),
        preview: preview(&patched),
        diff: Some(diff),
        added,
        removed,
        text: patched,
    })
}

/// A proposal's reason, trimmed; an empty one is refused before anything is planned or staged.
pub fn required_reason(reason: &str) -> Result<String> {
    let reason = reason.trim();
    if reason.is_empty() {
        return Err(Error::invalid(
            "`reason` is empty; say why the change should be made, for the person approving it",
        ));
    }
    Ok(reason.to_owned())
}

fn metadata_bytes(meta: &Metadata) -> Result<Vec<u8>> {
    let mut bytes = serde_json::to_vec_pretty(meta)
        .map_err(|err| Error::internal(format!("cannot serialise proposal metadata: {err}")))?;
    bytes.push(b'\n');
    Ok(bytes)
}

/// Writes the files in order, each create-new; on failure removes the ones
/// written. They hold the text of the notes `from` (a patched note, every
/// note a plan holds), so none is more readable than the most private of
/// those (with none, they get the default mode). First checks the caps on
/// pending proposals.
fn stage(sandbox: &Sandbox, limits: &Limits, files: &[(&NotePath, &[u8])], from: &[NotePath]) -> Result<()> {
    let inbox = Inbox::of(sandbox);
    let adding: u64 = files.iter().map(|(_, bytes)| bytes.len() as u64).sum();
    check_pending_caps(sandbox, &inbox, limits, adding)?;
    let notes = sandbox.permissions_of(from)?;
    for (done, (path, bytes)) in files.iter().enumerate() {
        if let Err(err) = sandbox.write_atomic_from(path, bytes, WriteMode::CreateNew, &notes) {
            for (written, _) in &files[..done] {
                let _ = sandbox.remove_inbox_file(written);
            }
            return Err(err);
        }
    }
    Ok(())
}

/// `too_large` when one more proposal of `adding` bytes would pass
/// `[limits] pending_max_count` or `pending_max_bytes`: an agent cannot fill the
/// disk with proposals nobody reviews. Costs one listing of the pending folders,
/// which the count cap keeps short.
fn check_pending_caps(sandbox: &Sandbox, inbox: &Inbox, limits: &Limits, adding: u64) -> Result<()> {
    let mut count = 0u64;
    let mut bytes = 0u64;
    for kind in ProposalKind::ALL {
        let dir = NotePath::parse(&inbox.pending_dir(kind))?;
        for file in sandbox.list_inbox(&dir)? {
            count += u64::from(file.file_name().ends_with(META_SUFFIX));
            bytes += sandbox.stat(&file)?.map_or(0, |stat| stat.size);
        }
    }
    let what_to_do = "ask the person to apply or reject pending proposals (kb-index inbox list, \
                      kb-index inbox reject), then propose again";
    if count >= limits.pending_max_count {
        return Err(Error::new(
            ErrorCode::TooLarge,
            format!(
                "{count} proposals are pending, the most [limits] pending_max_count allows ({}); nothing was staged",
                limits.pending_max_count
            ),
        )
        .with_hint(format!("{what_to_do}; or raise pending_max_count in kb.toml")));
    }
    if bytes + adding > limits.pending_max_bytes {
        return Err(Error::new(
            ErrorCode::TooLarge,
            format!(
                "pending proposals hold {bytes} bytes; this one ({adding} bytes) would pass [limits] pending_max_bytes ({}); nothing was staged",
                limits.pending_max_bytes
            ),
        )
        .with_hint(format!("{what_to_do}; or raise pending_max_bytes in kb.toml")));
    }
    Ok(())
}

fn preview(text: &str) -> String {
    match text.char_indices().nth(PREVIEW_CHARS) {
        Some((cut, _)) => format!("{}…", &text[..cut]),
        None => text.to_owned(),
    }
}

fn count_lines(text: &str) -> u32 {
    u32::try_from(text.lines().count()).unwrap_or(u32::MAX)
}

/// A staged multi-file proposal.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StagedPlan {
    /// Its id.
    pub proposal_id: String,
    /// The inbox files written, vault-relative.
    pub files: Vec<String>,
    /// Its summary line, then the diff of every file it touches.
    pub diff: String,
}

/// Stages a multi-file proposal: `inbox/<kind>/<stem>.plan.json` (every file
/// operation with its text before and after, and the notes outside it linking
/// to what it moves or trashes as `view`, the vault it was planned on, has
/// them: see `linkers.rs`), `<stem>.diff` (its summary line, then every file's
/// diff) and last `<stem>.proposal.json`, none more readable than the most
/// private note whose text the plan holds.
#[expect(clippy::too_many_arguments, reason = "what a staged plan is made of, passed on whole")]
pub fn stage_plan(
    sandbox: &Sandbox,
    limits: &Limits,
    view: &VaultView<'_>,
    kind: ProposalKind,
    target: &str,
    reason: &str,
    mut plan: Plan,
    now: Timestamp,
) -> Result<StagedPlan> {
    let reason = required_reason(reason)?;
    if plan.files.is_empty() {
        return Err(Error::invalid("the proposal would change no file"));
    }
    plan.linkers = Some(linkers_of(view, &plan));
    let (bytes, changes) = plan.staged()?;
    let mut diff = format!("# {}\n", plan.summary);
    for remark in &plan.remarks {
        diff.push_str(&format!("# {remark}\n"));
    }
    for change in changes {
        diff.push_str(&change.diff);
    }
    let id = new_id()?;
    let name =
        NotePath::parse(target).map(|path| path.stem().to_owned()).unwrap_or_else(|_| kind.name().to_owned());
    let stem = format!("{}-{}", slug::slug(&name), short_id(&id));
    let inbox = Inbox::of(sandbox);
    let content_file = inbox.path(&format!("{}/{}", kind.name(), content_name(kind, &stem)))?;
    let diff_file = inbox.path(&format!("{}/{}", kind.name(), diff_name(&stem)))?;
    let meta_file = inbox.path(&format!("{}/{stem}{META_SUFFIX}", kind.name()))?;
    let meta = Metadata {
        schema: SCHEMA,
        proposal_id: id.clone(),
        kind,
        target: target.to_owned(),
        content_file: content_file.as_str().to_owned(),
        content_sha256: content_hash(&bytes),
        base_sha256: None,
        diff_file: Some(diff_file.as_str().to_owned()),
        reason,
        created_at: rfc3339(now, Zone::Local),
    };
    stage(
        sandbox,
        limits,
        &[(&content_file, &bytes), (&diff_file, diff.as_bytes()), (&meta_file, &metadata_bytes(&meta)?)],
        &plan.notes_held()?,
    )?;
    Ok(StagedPlan {
        proposal_id: id,
        files: [&content_file, &diff_file, &meta_file].iter().map(|path| path.as_str().to_owned()).collect(),
        diff,
    })
}
