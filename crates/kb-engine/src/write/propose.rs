//! Staging proposals: building a new note or a patched note and writing it to
//! the inbox, and nothing else.
//!
//! Both functions check everything they can before writing (arguments, the
//! target, the base hash, the size cap), then write the staged note, the diff and
//! last the metadata file, each create-new under a fresh name: a proposal becomes
//! visible only once it is complete, and a failure removes what was written.

use std::collections::HashMap;

use jiff::Timestamp;
use serde_json::json;

use super::diff::unified_diff;
use super::edit::apply_edits;
use super::linkers::linkers_of;
use super::moves::VaultView;
use super::proposal::{self, Inbox, META_SUFFIX, Metadata, SCHEMA, content_name, diff_name};
use super::{NewNote, PatchRequest, ProposalKind, Staged, slug, yaml};
use crate::error::{Error, ErrorCode, Result};
use crate::sandbox::{NotePath, Sandbox, WriteMode, Zone, rfc3339};
use crate::vault::{Limits, content_hash, decode_note, parse_frontmatter};

/// Characters of the staged note shown in [`Staged::preview`].
const PREVIEW_CHARS: usize = 800;

/// Stages a new note: `inbox/new/<stem>.md` (the complete note, frontmatter
/// included) and `inbox/new/<stem>.proposal.json`. The target is
/// `<folder or first notes root>/<title as a safe file name>.md`; `target_exists`
/// when it exists, `path_denied` when it is not in a notes root, `too_large` above
/// `proposal_max_bytes`.
pub fn propose_new(sandbox: &Sandbox, limits: &Limits, note: &NewNote, now: Timestamp) -> Result<Staged> {
    let reason = required_reason(&note.reason)?;
    let (target, text) = build_new(sandbox, limits, note, now)?;
    let slug = slug::slug(note.title.trim());
    let id = proposal::new_id()?;
    let stem = format!("{slug}-{}", proposal::short_id(&id));
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

/// A new note's target and complete text (frontmatter included), checked as
/// [`propose_new`] checks them (all but the reason), without staging anything.
pub(super) fn build_new(
    sandbox: &Sandbox,
    limits: &Limits,
    note: &NewNote,
    now: Timestamp,
) -> Result<(NotePath, String)> {
    let title = note.title.trim();
    if title.is_empty() {
        return Err(Error::invalid("`title` is empty; give the note a title"));
    }
    if title.chars().any(char::is_control) {
        return Err(Error::invalid(
            "`title` must be one line of text, without line breaks or control characters",
        ));
    }
    let tags = names("tags", &note.tags, true)?;
    let aliases = names("aliases", &note.aliases, false)?;
    let body = note.body.replace("\r\n", "\n");
    if parse_frontmatter(&body).is_some() {
        return Err(Error::invalid("`body` starts with a frontmatter block; pass the body only").with_hint(
            "give title, tags, aliases and description as arguments; the frontmatter is built from them",
        ));
    }
    let slug = slug::slug(title);
    let folder = match note
        .folder
        .as_deref()
        .map(|folder| NotePath::parse_folder(folder.trim()))
        .transpose()?
        .flatten()
    {
        Some(folder) => folder.as_str().to_owned(),
        None => sandbox.policy().notes.first().cloned().unwrap_or_default(),
    };
    let target_text = if folder.is_empty() { format!("{slug}.md") } else { format!("{folder}/{slug}.md") };
    let target = sandbox.resolve_note_target(&target_text)?;
    sandbox.check_new_names(&target)?;
    // The very name, or a twin in another case, normalisation or with
    // invisible characters (`café` precomposed beside `café` decomposed).
    if let Some(twin) = sandbox.twin_of(&target)? {
        let what = if twin == target {
            format!("{target} already exists")
        } else {
            format!(
                "{target} is taken: {twin} has the same name written another way (case, accents or invisible characters)"
            )
        };
        return Err(Error::new(ErrorCode::TargetExists, what)
            .with_hint("read that note and propose a patch to it, or choose another title or folder")
            .with_details(json!({ "target": target.as_str(), "existing": twin.as_str() })));
    }

    let mut frontmatter = vec![
        yaml::entry("title", &json!(title))?,
        yaml::entry("aliases", &json!(aliases))?,
        yaml::entry("tags", &json!(tags))?,
    ];
    if let Some(description) = note.description.as_deref().map(str::trim).filter(|d| !d.is_empty()) {
        frontmatter.push(yaml::entry("description", &json!(description))?);
    }
    frontmatter.push(yaml::entry("created", &json!(rfc3339(now, Zone::Local)))?);
    let mut text = format!("---\n{}\n---\n", frontmatter.join("\n"));
    let body = body.trim_end_matches('\n');
    if !body.trim().is_empty() {
        text.push('\n');
        text.push_str(body);
        text.push('\n');
    }
    check_size(&text, limits)?;

    Ok((target, text))
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
    let current_hash = content_hash(text.as_bytes());
    let text = text.as_str();
    let (diff, added, removed) = unified_diff(target.as_str(), text, &patched);

    let id = proposal::new_id()?;
    let stem = format!("{}-{}", slug::slug(target.stem()), proposal::short_id(&id));
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

/// A patch's target, the note's text on disk and the patched text, checked as
/// [`propose_patch`] checks them (all but the reason), without staging
/// anything. `overlay` holds the texts the edits apply to when they are not
/// the file's (a batch's earlier items changed the note), by path; the base
/// hash is always checked against the file.
pub(super) fn build_patch(
    sandbox: &Sandbox,
    limits: &Limits,
    request: &PatchRequest,
    overlay: Option<&HashMap<String, String>>,
) -> Result<(NotePath, String, String)> {
    if request.edits.is_empty() {
        return Err(Error::invalid("`edits` is empty; give at least one edit"));
    }
    let target = sandbox.resolve_note_target(&request.path)?;
    let cap = limits.proposal_max_bytes.max(limits.read_max_bytes);
    let bytes = sandbox.read(&target, cap).map_err(|err| match err.code {
        ErrorCode::TooLarge => Error::new(
            ErrorCode::TooLarge,
            format!("{target} is larger than {cap} bytes, more than a proposal may be"),
        )
        .with_hint("raise [limits] proposal_max_bytes in kb.toml, or edit this note by hand"),
        _ => err,
    })?;
    let current_hash = content_hash(&bytes);
    if request.base_hash.trim() != current_hash {
        return Err(Error::stale_base(&target, &request.base_hash, Some(&current_hash)));
    }
    let text = decode_note(&bytes).map_err(|diagnostic| {
        Error::invalid(format!("{target} cannot be patched: {}", diagnostic.message))
    })?;
    let current = overlay.and_then(|texts| texts.get(target.as_str())).map_or(text, String::as_str);
    let patched = apply_edits(current, &request.edits)?;
    if patched == current {
        return Err(Error::invalid("the edits change nothing; the note already reads like that")
            .with_hint("compare the edits with the note's current text (read_note)"));
    }
    check_size(&patched, limits)?;
    Ok((target, text.to_owned(), patched))
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

/// Trimmed, de-duplicated tags or aliases; tags lose a leading `#` and may not
/// hold spaces.
fn names(field: &str, values: &[String], is_tag: bool) -> Result<Vec<String>> {
    let mut out: Vec<String> = Vec::new();
    for raw in values {
        let value = raw.trim();
        let value = if is_tag { value.trim_start_matches('#') } else { value };
        if value.is_empty() {
            continue;
        }
        if value.chars().any(char::is_control) || (is_tag && value.chars().any(char::is_whitespace)) {
            return Err(Error::invalid(format!(
                "`{field}` entry {raw:?} is not valid{}",
                if is_tag {
                    ": tags are one word (use - or / instead of spaces)"
                } else {
                    ": it must be one line"
                }
            )));
        }
        if !out.iter().any(|known| known == value) {
            out.push(value.to_owned());
        }
    }
    Ok(out)
}

fn check_size(text: &str, limits: &Limits) -> Result<()> {
    let size = text.len() as u64;
    if size > limits.proposal_max_bytes {
        return Err(Error::new(
            ErrorCode::TooLarge,
            format!(
                "the proposed note is {size} bytes, more than the limit of {} bytes",
                limits.proposal_max_bytes
            ),
        )
        .with_hint("split the note, or raise [limits] proposal_max_bytes in kb.toml"));
    }
    Ok(())
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
    mut plan: super::Plan,
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
    let id = proposal::new_id()?;
    let name =
        NotePath::parse(target).map(|path| path.stem().to_owned()).unwrap_or_else(|_| kind.name().to_owned());
    let stem = format!("{}-{}", slug::slug(&name), proposal::short_id(&id));
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
