//! An entry of the agent's memory: the one write an agent makes without a
//! proposal, and only into the memory folder (issue 39).
//!
//! It runs under the inbox lock, after recovery has completed an apply a
//! crash interrupted (so that the audit log's last line is still the one
//! recovery looks for), and is audited like an apply: one line, `kind:
//! "memory"`, with the entry's path, hash, `by` and principal. The entry is a
//! new file, written create-new (temporary file, fsync, link): the memory
//! only grows, and nothing an agent does replaces or changes an entry. The
//! caps are checked under the lock, so two agents racing cannot both pass
//! the last free place. A crash between the entry and its line leaves the
//! entry without its line, never a line without its entry.

use jiff::Timestamp;
use serde::Serialize;
use serde_json::Value;

use super::{Actor, settle_inbox, unsettled};
use crate::error::{Error, ErrorCode, Result};
use crate::sandbox::{NotePath, Sandbox, WriteMode, Zone, rfc3339};
use crate::vault::content_hash;
use crate::write::text::{slug::slug, yaml};

/// What to remember, and where its caps are counted.
pub struct MemoryEntry<'a> {
    /// The folder of this memory (`Agent memory/vault`, or one principal's
    /// `Agent memory/person/<name>`): the caps count its entries.
    pub folder: &'a NotePath,
    /// The entry's text, checked by the caller.
    pub text: &'a str,
    /// `person` or `vault`.
    pub about: &'a str,
    /// A word or two to file it under, checked by the caller.
    pub category: Option<&'a str>,
    /// Who remembered it: the HTTP token's name, `local` over stdio.
    pub principal: &'a str,
    /// At most this many entries in `folder`, this one included.
    pub max_entries: usize,
    /// At most this many bytes in `folder`, this entry included.
    pub max_bytes: u64,
    /// Who is writing (the audit line's `by`).
    pub actor: Actor,
}

/// An entry written.
#[derive(Debug, Clone)]
pub struct Remembered {
    /// Its vault path.
    pub path: NotePath,
    /// `sha256:` of its bytes.
    pub content_sha256: String,
    /// When (RFC 3339, local time).
    pub at: String,
    /// Entries in its folder now, and their bytes.
    pub entries: usize,
    /// Bytes of the entries in its folder now.
    pub bytes: u64,
}

/// A memory line of the audit log.
#[derive(Serialize)]
struct MemoryLine<'a> {
    at: String,
    kind: &'static str,
    target: &'a str,
    content_sha256: &'a str,
    by: &'static str,
    about: &'a str,
    principal: &'a str,
}

/// Writes one entry under the inbox lock: `too_large` past a cap, nothing
/// written; otherwise the entry (its name made unique with ` 2`, ` 3`…) and
/// its audit line. `index` takes the paths recovery touched.
pub fn remember(
    sandbox: &Sandbox,
    entry: &MemoryEntry<'_>,
    index: &mut dyn FnMut(&[NotePath]) -> Result<()>,
) -> Result<Remembered> {
    let mut settled = settle_inbox(sandbox, entry.actor, index)?;
    unsettled(&settled.recovered.summary.failed)?;
    let at = rfc3339(Timestamp::now(), Zone::Local);
    let bytes = entry_file(entry, &at)?;
    let present = sandbox.list_memory(entry.folder)?;
    let held: u64 = present.iter().map(|file| file.stat.size).sum();
    let size = bytes.len() as u64;
    if present.len() >= entry.max_entries {
        return Err(full(
            entry,
            format!("it holds {} entries, the cap is {}", present.len(), entry.max_entries),
        ));
    }
    if held + size > entry.max_bytes {
        return Err(full(
            entry,
            format!("it holds {held} bytes and this entry is {size}; the cap is {} bytes", entry.max_bytes),
        ));
    }
    let path = write_unique(sandbox, entry, &entry_name(entry.text, &at), &bytes)?;
    let content_sha256 = content_hash(&bytes);
    let line = MemoryLine {
        at: at.clone(),
        kind: "memory",
        target: path.as_str(),
        content_sha256: &content_sha256,
        by: entry.actor.by(),
        about: entry.about,
        principal: entry.principal,
    };
    settled.log.append(sandbox, "", &line)?;
    Ok(Remembered { path, content_sha256, at, entries: present.len() + 1, bytes: held + size })
}

/// The entry as a note: frontmatter saying what it is, then the text.
fn entry_file(entry: &MemoryEntry<'_>, at: &str) -> Result<Vec<u8>> {
    let mut lines = vec!["---".to_owned(), yaml::entry("memory", &Value::from(entry.about))?];
    if let Some(category) = entry.category {
        lines.push(yaml::entry("category", &Value::from(category))?);
    }
    lines.push(yaml::entry("remembered", &Value::from(at))?);
    lines.push(yaml::entry("by", &Value::from(entry.principal))?);
    lines.push("---".to_owned());
    lines.push(entry.text.trim_end().to_owned());
    let mut text = lines.join("\n");
    text.push('\n');
    Ok(text.into_bytes())
}

/// `2026-12-07 141503 prefers notes in chinese`: the local time, then the
/// text's first words, as a file name.
fn entry_name(text: &str, at: &str) -> String {
    let stamp: String = at.chars().take(19).filter(|c| *c != ':').collect::<String>().replace('T', " ");
    let mut words = String::new();
    for word in text.split_whitespace() {
        if words.chars().count() + word.chars().count() > 48 {
            break;
        }
        if !words.is_empty() {
            words.push(' ');
        }
        words.push_str(word);
    }
    if words.is_empty() {
        // One long word (a CJK sentence has no spaces): its start.
        words = text.trim().chars().take(24).collect();
    }
    format!("{stamp} {}", slug(&words))
}

/// The memory is full: nothing was written.
fn full(entry: &MemoryEntry<'_>, why: String) -> Error {
    Error::new(
        ErrorCode::TooLarge,
        format!("the agent's memory in {} is full ({why}); nothing was remembered", entry.folder),
    )
    .with_hint(format!(
        "ask the person to prune {}/ in their editor (or propose deleting entries that no longer hold)",
        entry.folder
    ))
}

/// Writes the entry create-new under the first free name.
fn write_unique(sandbox: &Sandbox, entry: &MemoryEntry<'_>, name: &str, bytes: &[u8]) -> Result<NotePath> {
    for attempt in 1..=100 {
        let file = match attempt {
            1 => format!("{}/{name}.md", entry.folder),
            n => format!("{}/{name} {n}.md", entry.folder),
        };
        let path = NotePath::parse(&file)?;
        match sandbox.write_atomic(&path, bytes, WriteMode::CreateNew) {
            Ok(()) => return Ok(path),
            Err(err) if err.code == ErrorCode::TargetExists => continue,
            Err(err) => return Err(err),
        }
    }
    Err(Error::new(
        ErrorCode::Conflict,
        format!("a hundred entries named {name} already exist in {}", entry.folder),
    )
    .with_hint("remember it again in a moment, or in other words"))
}
