//! The note a new-note or patch proposal would write: built and checked as
//! the propose tools check it (all but the reason), without staging anything,
//! for a proposal of its own or an item of a batch.

use std::collections::HashMap;

use jiff::Timestamp;
use serde_json::json;

use crate::error::{Error, ErrorCode, Result};
use crate::sandbox::{NotePath, Sandbox, Zone, rfc3339};
use crate::vault::{Limits, content_hash, decode_note, parse_frontmatter};
use crate::write::text::{Edit, apply_edits, slug, yaml};

/// A new note to propose (`propose_new_note`).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct NewNote {
    /// The note's title; also gives its file name.
    pub title: String,
    /// The Markdown body, without frontmatter.
    pub body: String,
    /// Why the note should exist, for the person who approves it.
    pub reason: String,
    /// The vault-relative folder inside a notes root; the first notes root when `None`.
    pub folder: Option<String>,
    /// Tags, with or without `#`.
    pub tags: Vec<String>,
    /// Other names of the note.
    pub aliases: Vec<String>,
    /// A one-line summary.
    pub description: Option<String>,
}

/// A patch to propose (`propose_note_patch`).
#[derive(Debug, Clone, PartialEq)]
pub struct PatchRequest {
    /// The vault-relative note path.
    pub path: String,
    /// The `sha256:<hex>` of the note the edits were written against.
    pub base_hash: String,
    /// Why, for the person who approves it.
    pub reason: String,
    /// The edits, applied in order.
    pub edits: Vec<Edit>,
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
    check_free(sandbox, &target)?;

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

/// `target_exists` unless a new note may be written at `target`: no note
/// there, not even a twin of its name, and a name every system can hold.
pub(super) fn check_free(sandbox: &Sandbox, target: &NotePath) -> Result<()> {
    sandbox.check_new_names(target)?;
    // The very name, or a twin in another case, normalisation or with
    // invisible characters (`café` precomposed beside `café` decomposed).
    if let Some(twin) = sandbox.twin_of(target)? {
        let what = if twin == *target {
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
    Ok(())
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

pub(super) fn check_size(text: &str, limits: &Limits) -> Result<()> {
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
