//! Read-only resources: `kb://note/{path}` and four JSON views of the vault.
//!
//! Resources go through the same engine calls (and so the same sandbox) as the
//! tools: a note resource is `read_note` by path, and the JSON views are the
//! results of `list_tags`, `list_recent_notes` and `list_standards`.

use rmcp::model::{ReadResourceResult, Resource, ResourceContents, ResourceTemplate};
use serde_json::json;

use crate::engine::Engine;
use crate::engine::types::{ListTagsArgs, ReadNoteArgs, RecentArgs};
use crate::error::{Error, Result};
use crate::vault::NoteKind;

const NOTE_PREFIX: &str = "kb://note/";
/// Most notes listed by `kb://tree`.
const TREE_CAP: usize = 20_000;

pub(super) fn fixed() -> Vec<Resource> {
    vec![
        Resource::new("kb://tree", "tree")
            .with_title("Folders and notes")
            .with_description("Every folder and note of the vault, with titles, as JSON")
            .with_mime_type("application/json"),
        Resource::new("kb://tags", "tags")
            .with_title("Tags")
            .with_description("Tags with note counts and registry status, as JSON (list_tags)")
            .with_mime_type("application/json"),
        Resource::new("kb://recent", "recent")
            .with_title("Recent notes")
            .with_description("Notes changed in the last 7 days, as JSON (list_recent_notes)")
            .with_mime_type("application/json"),
        Resource::new("kb://standards", "standards")
            .with_title("Standards")
            .with_description("The vault's standards, as JSON (list_standards)")
            .with_mime_type("application/json"),
    ]
}

pub(super) fn templates() -> Vec<ResourceTemplate> {
    vec![
        ResourceTemplate::new("kb://note/{path}", "note")
            .with_title("A note")
            .with_description("A note, standard or read_also file by vault-relative path, exactly as on disk")
            .with_mime_type("text/markdown"),
    ]
}

/// Decodes `%XX` escapes once (a URI template variable is percent-encoded by clients).
fn percent_decode(text: &str) -> Result<String> {
    String::from_utf8(crate::sandbox::percent_decode(text.as_bytes()))
        .map_err(|_| Error::denied("the resource path is not valid UTF-8 after decoding"))
}

fn json_contents(uri: &str, value: &impl serde::Serialize) -> Result<ReadResourceResult> {
    let text = serde_json::to_string_pretty(value).map_err(|e| Error::internal(e.to_string()))?;
    Ok(ReadResourceResult::new(vec![ResourceContents::text(text, uri).with_mime_type("application/json")]))
}

pub(super) fn read(engine: &Engine, uri: &str) -> Result<ReadResourceResult> {
    if let Some(encoded) = uri.strip_prefix(NOTE_PREFIX) {
        let path = percent_decode(encoded)?;
        let mut content = String::new();
        let mut offset = 0u64;
        // A resource is the whole note: page through read_note up to its hard cap.
        loop {
            let page = engine.read_note(&ReadNoteArgs {
                path: Some(path.clone()),
                offset: Some(offset),
                ..ReadNoteArgs::default()
            })?;
            content.push_str(&page.content);
            match page.next_offset {
                Some(next) if content.len() < 16 * 1024 * 1024 => offset = next,
                _ => break,
            }
        }
        return Ok(ReadResourceResult::new(vec![
            ResourceContents::text(content, uri).with_mime_type("text/markdown"),
        ]));
    }
    match uri {
        "kb://tags" => {
            json_contents(uri, &engine.list_tags(&ListTagsArgs { prefix: None, limit: Some(1000) })?)
        }
        "kb://recent" => json_contents(uri, &engine.list_recent_notes(&RecentArgs::default())?),
        "kb://standards" => json_contents(uri, &engine.list_standards()?),
        "kb://tree" => {
            let catalog = engine.catalog();
            let mut folders = std::collections::BTreeSet::new();
            let mut notes = Vec::new();
            for record in catalog.records().iter().take(TREE_CAP) {
                let mut folder = String::new();
                for part in record.folder().split('/').filter(|p| !p.is_empty()) {
                    if !folder.is_empty() {
                        folder.push('/');
                    }
                    folder.push_str(part);
                    folders.insert(folder.clone());
                }
                let kind = match record.kind {
                    NoteKind::Note => "note",
                    NoteKind::Standard => "standard",
                    NoteKind::ReadAlso => "read_also",
                };
                notes.push(json!({ "path": record.path, "title": record.title, "kind": kind }));
            }
            let truncated = catalog.records().len() > TREE_CAP;
            json_contents(uri, &json!({ "folders": folders, "notes": notes, "truncated": truncated }))
        }
        other => Err(Error::not_found(format!("no resource `{other}`")).with_hint(
            "resources are kb://tree, kb://tags, kb://recent, kb://standards and kb://note/{path}",
        )),
    }
}
