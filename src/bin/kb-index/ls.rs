//! `kb-index ls [FOLDER]`: what `list_notes` returns, for a person: the folder's
//! subfolders with their note counts, then its notes (every page). The index is
//! brought up to date first. Exit 1 when nothing matched.

use std::io::Write;

use kb_mcp::engine::Engine;
use kb_mcp::engine::types::{LIST_NOTES_LIMIT, ListNotesArgs, ListSort};

use crate::Failure;
use crate::output::count;

/// The arguments of `kb-index ls`.
#[derive(Debug, clap::Args)]
pub(crate) struct LsArgs {
    /// The folder, vault-relative (default: the vault's top level).
    folder: Option<String>,
    /// Only notes carrying this tag (a parent tag matches its children).
    #[arg(long)]
    tag: Option<String>,
    /// Order of the notes: path, or updated / created (newest first).
    #[arg(long, default_value = "path", value_parser = ["path", "updated", "created"])]
    sort: String,
    /// Print JSON (the tool's structured result, every page in one).
    #[arg(short, long)]
    json: bool,
}

pub(crate) fn run(engine: &Engine, args: &LsArgs, out: &mut dyn Write) -> Result<u8, Failure> {
    let sort = match args.sort.as_str() {
        "updated" => ListSort::Updated,
        "created" => ListSort::Created,
        _ => ListSort::Path,
    };
    if let Err(error) = engine.sync(false, None) {
        if engine.record_count() == 0 {
            return Err(error.into());
        }
        eprintln!("kb-index: warning: listing the index as it is, which may be stale: {error}");
    }
    let mut request = ListNotesArgs {
        folder: args.folder.clone(),
        tag: args.tag.clone(),
        sort: Some(sort),
        limit: Some(LIST_NOTES_LIMIT.max),
        cursor: None,
    };
    let mut listing = engine.list_notes(&request)?;
    while let Some(cursor) = listing.next_cursor.take() {
        request.cursor = Some(cursor);
        let page = engine.list_notes(&request)?;
        listing.notes.extend(page.notes);
        listing.next_cursor = page.next_cursor;
    }
    if args.json {
        writeln!(out, "{}", serde_json::to_string_pretty(&listing).unwrap_or_default())?;
    } else {
        for sub in &listing.folders {
            writeln!(out, "{}/  ({})", sub.path, count(sub.notes, "note"))?;
        }
        if listing.folders_omitted > 0 {
            writeln!(out, "… and {} (name one to list it)", count(listing.folders_omitted, "more folder"))?;
        }
        for note in &listing.notes {
            let day = note.updated.get(..10).unwrap_or(&note.updated);
            writeln!(out, "{}  {day}  {}", note.path, note.title)?;
        }
        let shown = if listing.folder.is_empty() { "the vault's top level" } else { listing.folder.as_str() };
        let folders = listing.folders.len() as u64 + listing.folders_omitted;
        writeln!(out, "{shown}: {}, {}", count(listing.total, "note"), count(folders, "folder"))?;
    }
    Ok(if listing.notes.is_empty() && listing.folders.is_empty() { 1 } else { 0 })
}
