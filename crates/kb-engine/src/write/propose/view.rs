//! The vault as a planner sees it: the records, attachments and graph a move,
//! delete or batch is planned on, the text of a note as the plan reads it, and
//! the links a plan breaks, each as a person finds it in the note.

use std::collections::HashMap;
use std::sync::Arc;

use crate::error::{Error, Result};
use crate::sandbox::{NotePath, Sandbox};
use crate::vault::graph::Graph;
use crate::vault::{AnchorRef, LinkKind, LinkRef, NoteRecord, decode_note};

/// Largest note a move reads.
const NOTE_MAX_BYTES: u64 = 1 << 30;

/// The vault as the planner sees it: the records (sorted by path), the
/// attachments (sorted) and their graph.
pub struct VaultView<'a> {
    /// Every note's record, sorted by path.
    pub records: &'a [Arc<NoteRecord>],
    /// Every attachment path, sorted.
    pub attachments: &'a [String],
    /// The graph of both.
    pub graph: &'a Graph,
    /// Notes whose text is not the file's (a batch's earlier items changed
    /// them), by path; `None` outside a batch.
    pub texts: Option<&'a HashMap<String, String>>,
}

/// A note's text as a plan reads it: the batch's text when an earlier item
/// changed it, else the file's.
pub(super) fn read_text(sandbox: &Sandbox, view: &VaultView<'_>, path: &str) -> Result<String> {
    if let Some(text) = view.texts.and_then(|texts| texts.get(path)) {
        return Ok(text.clone());
    }
    let note = NotePath::parse(path)?;
    let bytes = sandbox.read(&note, NOTE_MAX_BYTES)?;
    decode_note(&bytes)
        .map(str::to_owned)
        .map_err(|why| Error::invalid(format!("{path} cannot be rewritten: {}", why.message)))
}

/// A link to a deleted note: it will stop resolving, or lead to another note.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Break {
    /// The note holding it.
    pub path: String,
    /// Its 1-based line.
    pub line: u32,
    /// The link as written.
    pub link: String,
    /// `None`: the link will stop resolving. `Some`: it will lead to this note
    /// instead (another note of the same name, or one with it as an alias).
    pub leads_to: Option<String>,
}

/// A link as a person finds it in the note: `[[target#anchor]]`,
/// `![[target]]`, `[text](target#anchor)`, a canvas's `file node target` (the
/// display text of a wikilink left out: the link is named by where it leads).
pub(crate) fn written(link: LinkRef<'_>) -> String {
    let anchor = match link.anchor {
        Some(AnchorRef::Heading(heading)) => format!("#{heading}"),
        Some(AnchorRef::Block(id)) => format!("#^{id}"),
        None => String::new(),
    };
    match link.kind {
        LinkKind::Markdown => format!("[{}]({}{anchor})", link.display.unwrap_or_default(), link.target),
        LinkKind::Embed => format!("![[{}{anchor}]]", link.target),
        LinkKind::Wikilink | LinkKind::Property => format!("[[{}{anchor}]]", link.target),
        LinkKind::Canvas => format!("file node {}{anchor}", link.target),
    }
}
