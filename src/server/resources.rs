//! Read-only resources: `kb://note/{path}`, four JSON views of the vault,
//! `kb://skill`, the Agent Skill that says how to work with it, and for a
//! client that shows MCP Apps the review card, `ui://kb-mcp/review`. `skill://`
//! URIs are passed to `skills.rs`.
//!
//! Resources go through the same engine calls (and so the same sandbox) as the
//! tools: a note resource is `read_note` by path, and the JSON views are the
//! results of `list_tags`, `list_recent_notes` and `list_standards`.

use rmcp::model::{MetaObject, ReadResourceResult, Resource, ResourceContents, ResourceTemplate};
use serde_json::json;

use crate::engine::Engine;
use crate::engine::types::{ListTagsArgs, ReadNoteArgs, RecentArgs};
use crate::error::{Error, Result};
use crate::review;

const NOTE_PREFIX: &str = "kb://note/";
/// The most `kb://tree` answers, in bytes: past it, the notes are cut and a hint
/// points at `list_notes`, which pages.
const TREE_BUDGET: usize = 64 * 1024;

/// The Agent Skill (`skills/kb-mcp/SKILL.md`): the workflow an agent should follow,
/// served as `kb://skill` so that a client without skill support can still read it.
pub(super) const SKILL: &str = include_str!("../../skills/kb-mcp/SKILL.md");

pub(super) fn fixed() -> Vec<Resource> {
    vec![
        Resource::new("kb://tree", "tree")
            .with_title("Folders and notes")
            .with_description(
                "The vault's folders and notes with titles, as JSON, capped at 64 KiB (list_notes pages)",
            )
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
        Resource::new("kb://skill", "skill")
            .with_title("How to work with this vault")
            .with_description(
                "The Agent Skill (SKILL.md): the safe order of work, queries in Chinese and English, access levels",
            )
            .with_mime_type("text/markdown"),
    ]
}

/// The review card, listed to a client that declared the MCP Apps extension.
pub(super) fn card() -> Resource {
    Resource::new(review::CARD_URI, "review")
        .with_title("Review a proposal")
        .with_description("The review card: a proposal's diff and checks, with the person's Apply and Reject")
        .with_mime_type(review::CARD_MIME_TYPE)
}

/// The review card's HTML. Its `_meta.ui` asks for no network at all (the
/// view talks only to its host) and a border.
pub(super) fn read_card() -> ReadResourceResult {
    let mut meta = MetaObject::new();
    meta.0.insert("ui".to_owned(), json!({ "csp": {}, "prefersBorder": true }));
    ReadResourceResult::new(vec![
        ResourceContents::text(review::VIEW_HTML, review::CARD_URI)
            .with_mime_type(review::CARD_MIME_TYPE)
            .with_meta(meta),
    ])
}

pub(super) fn templates() -> Vec<ResourceTemplate> {
    vec![
        ResourceTemplate::new("kb://note/{path}", "note")
            .with_title("A note")
            .with_description("A note, standard or read_also file by vault-relative path, as on disk: its first page (read_note pages)")
            .with_mime_type("text/markdown"),
    ]
}

/// Decodes `%XX` escapes once (a URI template variable is percent-encoded by clients).
fn percent_decode(text: &str) -> Result<String> {
    String::from_utf8(crate::sandbox::percent_decode(text.as_bytes()))
        .map_err(|_| Error::denied("the resource path is not valid UTF-8 after decoding"))
}

fn json_contents(uri: &str, value: &impl serde::Serialize) -> Result<ReadResourceResult> {
    let text = serde_json::to_string(value).map_err(|e| Error::internal(e.to_string()))?;
    Ok(ReadResourceResult::new(vec![ResourceContents::text(text, uri).with_mime_type("application/json")]))
}

pub(super) fn read(engine: &Engine, uri: &str) -> Result<ReadResourceResult> {
    if super::skills::is_skill_uri(uri) {
        return super::skills::read(engine, uri);
    }
    if let Some(encoded) = uri.strip_prefix(NOTE_PREFIX) {
        let path = percent_decode(encoded)?;
        // One page, as `read_note` serves it: a resource cannot be paged, so a longer
        // note ends with a Markdown comment (invisible when rendered) that says how
        // to read on with the tool that pages.
        let page = engine.read_note(&ReadNoteArgs { path: Some(path), ..ReadNoteArgs::default() })?;
        let mut content = page.content;
        if let Some(next) = page.next_offset {
            content.push_str(&format!(
                "\n\n<!-- kb-mcp: this resource holds the first {next} of the note's {} bytes; read on with \
                 the read_note tool: {{\"path\": {}, \"offset\": {next}}} -->\n",
                page.size,
                serde_json::Value::String(page.path),
            ));
        }
        return Ok(ReadResourceResult::new(vec![
            ResourceContents::text(content, uri).with_mime_type("text/markdown"),
        ]));
    }
    match uri {
        "kb://skill" => Ok(ReadResourceResult::new(vec![
            ResourceContents::text(SKILL, uri).with_mime_type("text/markdown"),
        ])),
        "kb://tags" => {
            json_contents(uri, &engine.list_tags(&ListTagsArgs { prefix: None, limit: Some(1000) })?)
        }
        "kb://recent" => json_contents(uri, &engine.list_recent_notes(&RecentArgs::default())?),
        "kb://standards" => json_contents(uri, &engine.list_standards()?),
        "kb://tree" => {
            let tree = engine.tree(TREE_BUDGET);
            let notes: Vec<serde_json::Value> = tree
                .notes
                .iter()
                .map(|note| json!({ "path": note.path, "title": note.title, "kind": note.kind }))
                .collect();
            let truncated = notes.len() < tree.notes_total;
            let mut listing = json!({
                "folders": tree.folders,
                "notes": notes,
                "notes_total": tree.notes_total,
                "truncated": truncated,
            });
            if truncated {
                listing["hint"] = json!(format!(
                    "the tree lists {} of {} notes (it is capped at {} KiB): walk the vault folder by folder \
                     with the list_notes tool ({{\"folder\": \"…\"}}, paged with `cursor`), or find notes with \
                     search_knowledge",
                    notes.len(),
                    tree.notes_total,
                    TREE_BUDGET / 1024
                ));
            }
            json_contents(uri, &listing)
        }
        other => Err(Error::not_found(format!("no resource `{other}`")).with_hint(
            "resources are kb://tree, kb://tags, kb://recent, kb://standards, kb://skill, kb://note/{path} \
             and the skills under skill:// (skill://index.json lists them)",
        )),
    }
}
