//! The tool table: each tool declared once, with its name, access level,
//! effect, input and output schemas and description; `tools/list` reads it.

use std::sync::Arc;

use rmcp::handler::server::tool::{schema_for_input, schema_for_output};
use rmcp::model::{JsonObject, Tool, ToolAnnotations};
use schemars::JsonSchema;
use serde_json::Value;

use super::Access;
use crate::engine::types::*;

/// The contract's annotation classes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Effect {
    /// Read-only, idempotent.
    Reads,
    /// Writes only into the inbox.
    Stages,
    /// Changes a note.
    Applies,
}

/// One tool's declaration.
pub(super) struct ToolDef {
    pub(super) name: &'static str,
    title: &'static str,
    description: &'static str,
    pub(super) level: Access,
    effect: Effect,
    pub(super) input: fn() -> Arc<JsonObject>,
    output: fn() -> Arc<JsonObject>,
}

pub(super) fn input<T: JsonSchema + 'static>() -> Arc<JsonObject> {
    // Every argument type is a struct, so the schema root is an object.
    standard(schema_for_input::<T>().unwrap_or_default())
}

fn output<T: JsonSchema + 'static>() -> Arc<JsonObject> {
    standard(schema_for_output::<T>())
}

/// Drops schemars' Rust-specific `format` values (`uint32`, `int64`, `float`, …), which
/// JSON Schema does not define and validators warn about; the numeric bounds stay.
fn standard(schema: Arc<JsonObject>) -> Arc<JsonObject> {
    const RUST_FORMATS: &[&str] = &[
        "uint", "uint8", "uint16", "uint32", "uint64", "int", "int8", "int16", "int32", "int64", "float",
        "double",
    ];
    fn walk(value: &mut Value) {
        match value {
            Value::Object(map) => {
                if map.get("format").and_then(Value::as_str).is_some_and(|f| RUST_FORMATS.contains(&f)) {
                    map.remove("format");
                }
                map.values_mut().for_each(walk);
            }
            Value::Array(items) => items.iter_mut().for_each(walk),
            _ => {}
        }
    }
    let mut value = Value::Object((*schema).clone());
    walk(&mut value);
    match value {
        Value::Object(map) => Arc::new(map),
        _ => schema,
    }
}

/// Every tool, in the order `tools/list` shows them.
pub(super) static TOOLS: &[ToolDef] = &[
    ToolDef {
        name: "get_vault_overview",
        title: "Vault overview",
        description: "Start here. Returns the vault's folders (notes roots, standards, inbox), counts of notes, standards, tags, links, broken links, orphans and pending proposals, the index state (documents, last build and update, and `fresh`: true only when every note on disk is indexed at its current content), the server version, your access level, and `changes`: pass its `cursor` as `since` next time to get the notes added, changed and removed since (by mcp, cli or outside) and the proposals applied and rejected.",
        level: Access::Read,
        effect: Effect::Reads,
        input: input::<OverviewArgs>,
        output: output::<Overview>,
    },
    ToolDef {
        name: "search_knowledge",
        title: "Search notes by topic",
        description: "Find notes by what they are about: ranked search over titles, aliases, descriptions and tags, with titles and aliases weighing most and an exact title or alias match ranking first. Use it to find the note on a topic, or to check that a note does not exist yet before proposing one. Query syntax: words, \"exact phrase\", -excluded; Chinese, Japanese and Korean need no spaces; a question works too (question words are ignored, and notes matching more words rank first). Filters: `tags` (a parent tag matches its children), `folder`. Returns path, title, aliases, description, tags, score and the fields that matched for each note, best first, and `total` (all matches). Read a result with read_note.",
        level: Access::Read,
        effect: Effect::Reads,
        input: input::<SearchArgs>,
        output: output::<KnowledgeResults>,
    },
    ToolDef {
        name: "search_note_content",
        title: "Search note text",
        description: "Full-text search inside notes (headings count more than plain text). Use it for facts, phrases, commands or names mentioned inside notes rather than what a note is about. Query syntax: words, \"exact phrase\", -excluded; Chinese, Japanese and Korean words are found inside unspaced sentences. Filters: `tags`, `folder`. Returns for each note its path, title, score and up to three snippets: the matching line with the matched terms in **bold**, the heading it sits under, and its 1-based line number in the file; `total` counts all matching notes. Snippets are excerpts: call read_note for the full text.",
        level: Access::Read,
        effect: Effect::Reads,
        input: input::<SearchArgs>,
        output: output::<ContentResults>,
    },
    ToolDef {
        name: "read_note",
        title: "Read a note",
        description: "Read one note, standard or read_also file, by exact vault-relative `path` (e.g. z/备份仓库.md) or by `ref`, a wikilink target (备份仓库, z/备份仓库 or 备份仓库#Heading); give exactly one. Returns the text exactly as on disk (frontmatter included), the parsed frontmatter, an outline of headings with 1-based line numbers, the size, the modification time, and `hash`, which is the base_hash a patch proposal needs. `section` returns one heading and everything under it. Long notes come in pages (64 KiB unless `max_bytes` says otherwise; the outline comes with the first page): when `truncated` is true, call again with `offset` set to `next_offset`.",
        level: Access::Read,
        effect: Effect::Reads,
        input: input::<ReadNoteArgs>,
        output: output::<NoteContent>,
    },
    ToolDef {
        name: "list_standards",
        title: "List standards",
        description: "List the vault's standards: the owner's rules for notes (how to write them, which frontmatter keys and tags to use). Read the relevant ones with read_note before proposing a note or a patch. Returns path, title, description and last update of each, by path. Takes no arguments.",
        level: Access::Read,
        effect: Effect::Reads,
        input: input::<NoArgs>,
        output: output::<Standards>,
    },
    ToolDef {
        name: "list_tags",
        title: "List tags",
        description: "List the tags used in notes (frontmatter tags and inline #tags), each with the number of notes carrying it and whether the vault's tag registry lists it; nested tags such as type/synthesis are listed under their full name. Sorted by count. `prefix` narrows the list (e.g. type/), `limit` caps it (default 100). Prefer registered tags when proposing notes.",
        level: Access::Read,
        effect: Effect::Reads,
        input: input::<ListTagsArgs>,
        output: output::<Tags>,
    },
    ToolDef {
        name: "get_related_notes",
        title: "Related notes (links)",
        description: "The link neighbourhood of one note, named by `path` or `ref`: its outlinks (the target as written, the vault path it resolves to or null, the kind wikilink/embed/markdown, and the line), its backlinks (the linking note, line and the line's text), its broken links (missing note or heading), and the maps of content (MOC notes) that link to it. Use it to explore around a note or before changing one.",
        level: Access::Read,
        effect: Effect::Reads,
        input: input::<NoteRefArgs>,
        output: output::<Related>,
    },
    ToolDef {
        name: "list_recent_notes",
        title: "Recent notes",
        description: "Notes changed in the last `days` days (default 7), newest first, or created in that time with sort=created (creation is the frontmatter created/date, else the file's birth time). Returns path, title, created and updated times (RFC 3339); `limit` caps the list (default 20).",
        level: Access::Read,
        effect: Effect::Reads,
        input: input::<RecentArgs>,
        output: output::<Recent>,
    },
    ToolDef {
        name: "recall_context",
        title: "Recall context on a topic",
        description: "One call instead of several searches and reads: a context pack for a topic or question within a token budget (default 4000). It holds the most relevant section of each of the best matching notes, then the opening of the notes they link to and that link to them, each item with its path, section heading, text and the reason it is there (match, outlink of …, backlink of …), deduplicated and in a fixed order. Tokens are estimated conservatively (one per Chinese, Japanese or Korean character). `folder` restricts the matches. Read a whole note with read_note when a piece is not enough.",
        level: Access::Read,
        effect: Effect::Reads,
        input: input::<RecallArgs>,
        output: output::<RecallPack>,
    },
    ToolDef {
        name: "list_notes",
        title: "List a folder",
        description: "The vault's ls: the notes directly in one folder (default: the vault's top level) and its subfolders, each with the number of notes below it. Use it to see what a folder holds or to walk the vault folder by folder; use search_knowledge to find notes on a topic. Filters: `tag` (a parent tag matches its children; folder counts count tagged notes only). `sort`: path (default), updated or created (newest first). Returns path, title, updated and created times and tags of each note, `total` (the folder's notes on all pages) and, when more remain, `next_cursor`: pass it as `cursor` with the same folder, tag and sort for the next page (limit 1 to 200, default 50). Subfolders come on the first page. Pages stay consistent while notes change. Templates and files that are not notes are not listed (see get_vault_overview).",
        level: Access::Read,
        effect: Effect::Reads,
        input: input::<ListNotesArgs>,
        output: output::<NoteList>,
    },
    ToolDef {
        name: "audit_vault",
        title: "Audit the vault's health",
        description: "Find what needs care: broken links and anchors, ambiguous links, orphans, unregistered tags, frontmatter breaking kb.toml's [lint], duplicate titles, unlinked mentions, notes missing from their tag's map of content, skipped files, empty and oversize notes. `checks` picks some (default all), `folder` narrows. Returns counts per check, `errors`, and findings {check, severity, path, line, message, fix} by path; `fix` is the mechanical change when there is one. Page with `next_cursor` (limit 1 to 500, default 100). With access propose, `fix: true` stages the fixes as one patch proposal per note and returns their ids.",
        level: Access::Read,
        effect: Effect::Reads,
        input: input::<AuditArgs>,
        output: output::<Audit>,
    },
    ToolDef {
        name: "propose_new_note",
        title: "Propose a new note",
        description: "Stage a new note for the person to approve; nothing in the vault changes. Before calling: search_knowledge for existing notes on the topic (do not duplicate one), and read the relevant standards (list_standards). Give the title (the file name is derived from it; Chinese is kept), the Markdown body without frontmatter (the server writes title, aliases, tags, description and created), the reason, and optionally a folder inside a notes root, tags (prefer registered ones: list_tags), aliases and a description. Writes only two files under the inbox. Returns the proposal_id, the target path it would create, the inbox files, a preview, and `similar`: existing notes it may duplicate. Fails with target_exists if that note already exists. Then stop and ask the person to review it; only they apply it.",
        level: Access::Propose,
        effect: Effect::Stages,
        input: input::<ProposeNewArgs>,
        output: output::<ProposeNewResult>,
    },
    ToolDef {
        name: "propose_note_patch",
        title: "Propose a change to a note",
        description: "Stage a change to an existing note for the person to approve; nothing in the vault changes. First read_note and pass its `hash` as base_hash (a note edited since is refused with stale_base, which carries the current hash). Edits apply in order and should be as small as possible: {op: append, content}, {op: prepend, content} (after the frontmatter), {op: find_replace, find, replace} (find must occur exactly once), {op: replace_section, heading, content} (replaces what is under a heading), {op: set_frontmatter, fields} (merges keys; null removes one; other frontmatter lines stay byte for byte), {op: replace_all, content}. Line endings, a BOM and the final newline are preserved. Returns the proposal_id, a unified diff, and lines added and removed. Then stop and ask the person to review it.",
        level: Access::Propose,
        effect: Effect::Stages,
        input: input::<ProposePatchArgs>,
        output: output::<ProposePatchResult>,
    },
    ToolDef {
        name: "list_proposals",
        title: "List proposals",
        description: "List staged proposals (pending by default, or applied, or all) newest first, each with its kind, target, reason, creation time, status and live checks: intact (its files match their hash), base_current (a patch's note has not changed since), target_free (a new note's path is still free). A proposal failing a check will be refused on apply.",
        level: Access::Propose,
        effect: Effect::Reads,
        input: input::<ListProposalsArgs>,
        output: output::<Proposals>,
    },
    ToolDef {
        name: "apply_proposal",
        title: "Apply an approved proposal",
        description: "Apply ONE proposal the person has explicitly approved, by its proposal_id; this writes a note. Never call it on your own initiative. Every check runs before anything is touched (the proposal is intact, a new note's target is still free, a patch's note still has its base hash, the target lies inside a notes root); any failure leaves the proposal pending and the vault unchanged. On success the note is written atomically, the proposal archived, one line appended to the audit log, and the index updated so the note is searchable at once. status applied_index_failed means the note is written but the index is not: do not apply again. When the client supports it, the person is asked to confirm first.",
        level: Access::Apply,
        effect: Effect::Applies,
        input: input::<ApplyArgs>,
        output: output::<ApplyResult>,
    },
];

pub(super) fn def(name: &str) -> Option<&'static ToolDef> {
    TOOLS.iter().find(|t| t.name == name)
}

fn annotations(tool: &ToolDef) -> ToolAnnotations {
    let (read_only, destructive, idempotent) = match tool.effect {
        Effect::Reads => (true, false, true),
        Effect::Stages => (false, false, false),
        Effect::Applies => (false, true, false),
    };
    let mut annotations = ToolAnnotations::with_title(tool.title)
        .read_only(read_only)
        .destructive(destructive)
        .idempotent(idempotent)
        .open_world(false);
    annotations.title = Some(tool.title.to_owned());
    annotations
}

/// The tools a caller with `access` sees, in `tools/list` order.
pub fn list(access: Access) -> Vec<Tool> {
    TOOLS
        .iter()
        .filter(|t| t.level <= access)
        .map(|t| {
            Tool::new(t.name, t.description, (t.input)())
                .with_title(t.title)
                .with_raw_output_schema((t.output)())
                .with_annotations(annotations(t))
        })
        .collect()
}

/// Whether a tool exists at all (at any level).
pub fn exists(name: &str) -> bool {
    def(name).is_some()
}

/// The access level a tool needs; `None` for an unknown tool.
pub fn level(name: &str) -> Option<Access> {
    def(name).map(|tool| tool.level)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::types::{
        AUDIT_LIMIT, Bound, LIST_NOTES_LIMIT, PROPOSALS_LIMIT, RECALL_BUDGET, RECENT_DAYS, RECENT_LIMIT,
        SEARCH_LIMIT, TAGS_LIMIT,
    };

    /// Each numeric argument's bound reaches the input schema (minimum, maximum,
    /// and the numbers in its description) and the tool description's defaults.
    #[test]
    fn bounds_reach_schemas_and_descriptions() {
        let cases: [(&str, &str, Bound); 9] = [
            ("search_knowledge", "limit", SEARCH_LIMIT),
            ("search_note_content", "limit", SEARCH_LIMIT),
            ("list_tags", "limit", TAGS_LIMIT),
            ("list_recent_notes", "days", RECENT_DAYS),
            ("list_recent_notes", "limit", RECENT_LIMIT),
            ("list_proposals", "limit", PROPOSALS_LIMIT),
            ("recall_context", "budget_tokens", RECALL_BUDGET),
            ("list_notes", "limit", LIST_NOTES_LIMIT),
            ("audit_vault", "limit", AUDIT_LIMIT),
        ];
        for (tool, argument, bound) in cases {
            let def = def(tool).unwrap();
            let schema = (def.input)();
            let property = &schema["properties"][argument];
            assert_eq!(property["minimum"], bound.min, "{tool}.{argument}");
            assert_eq!(property["maximum"], bound.max, "{tool}.{argument}");
            assert_eq!(bound.check(argument, None).unwrap(), bound.default);
            assert_eq!(bound.check(argument, Some(bound.max)).unwrap(), bound.max);
            let err = bound.check(argument, Some(bound.max + 1)).unwrap_err();
            assert!(
                err.message.contains(&format!("between {} and {}", bound.min, bound.max)),
                "{}",
                err.message
            );
            let text = property["description"].as_str().unwrap();
            for number in [bound.default, bound.max] {
                assert!(text.contains(&number.to_string()), "{tool}.{argument}: {text}");
            }
            if def.description.contains("(default ") && def.description.contains(&format!("`{argument}`")) {
                assert!(
                    def.description.contains(&format!("(default {})", bound.default)),
                    "{tool}: {}",
                    def.description
                );
            }
        }
        assert!(
            def("recall_context")
                .unwrap()
                .description
                .contains(&format!("(default {})", RECALL_BUDGET.default))
        );
    }
}
