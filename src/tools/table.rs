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
    tighten(schema_for_input::<T>().unwrap_or_default(), Side::Input)
}

fn output<T: JsonSchema + 'static>() -> Arc<JsonObject> {
    tighten(schema_for_output::<T>(), Side::Output)
}

/// Which way a schema faces: what the model writes, or what it reads back.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Side {
    Input,
    Output,
}

/// Rust-specific `format` values (`uint32`, `int64`, `float`, …) that JSON Schema does
/// not define and validators warn about; the numeric bounds stay.
const RUST_FORMATS: &[&str] = &[
    "uint", "uint8", "uint16", "uint32", "uint64", "int", "int8", "int16", "int32", "int64", "float",
    "double",
];

/// Writes schemars' schemas the way `tools/list` publishes them, as small as they can be
/// while saying the same about the values:
/// - no `$schema` (MCP's default dialect, 2020-12, is what schemars writes), no
///   Rust-specific `format`, no `additionalProperties: true` (the default);
/// - inputs: an optional argument is typed as what it is (`integer`, not
///   `["integer", "null"]`, which clients' form builders and the Inspector warn
///   about); leaving it out is how it is not given, and an explicit `null` is
///   dropped before validation (`admit`);
/// - outputs: no descriptions, titles or `minimum: 0` (the field names, types and the
///   tool description say it), `required` only at the
///   top level, `null` kept where a result does carry one;
/// - both: a `$defs` entry used once stands in place of its reference; an enum of
///   documented constants is a plain `enum`, without a `type` its values say.
fn tighten(schema: Arc<JsonObject>, side: Side) -> Arc<JsonObject> {
    let mut root = (*schema).clone();
    root.remove("$schema");
    // The top level keeps its `type` (MCP asks for an object) and its `required`.
    let kept: Vec<(String, Value)> =
        ["type", "required"].iter().filter_map(|k| Some(((*k).to_owned(), root.get(*k)?.clone()))).collect();
    inline_single_use(&mut root);
    tighten_schema(&mut root, side);
    root.extend(kept);
    Arc::new(root)
}

/// Puts each `$defs` entry that is referred to once in place of its reference: a
/// definition pays for itself only when shared.
fn inline_single_use(root: &mut JsonObject) {
    fn count(value: &Value, uses: &mut std::collections::HashMap<String, usize>) {
        match value {
            Value::Object(map) => {
                if let Some(Value::String(target)) = map.get("$ref") {
                    *uses.entry(target.clone()).or_default() += 1;
                }
                map.values().for_each(|v| count(v, uses));
            }
            Value::Array(items) => items.iter().for_each(|v| count(v, uses)),
            _ => {}
        }
    }
    fn replace(value: &mut Value, target: &str, definition: &JsonObject) {
        match value {
            Value::Object(map) => {
                if map.get("$ref").and_then(Value::as_str) == Some(target) {
                    map.remove("$ref");
                    for (key, value) in definition {
                        // The reference's own keywords (its description) win.
                        map.entry(key.clone()).or_insert_with(|| value.clone());
                    }
                    return;
                }
                map.values_mut().for_each(|v| replace(v, target, definition));
            }
            Value::Array(items) => items.iter_mut().for_each(|v| replace(v, target, definition)),
            _ => {}
        }
    }
    loop {
        let mut uses = std::collections::HashMap::new();
        count(&Value::Object(root.clone()), &mut uses);
        let Some(Value::Object(definitions)) = root.get("$defs") else { return };
        let single = definitions.iter().find_map(|(name, definition)| {
            let target = format!("#/$defs/{name}");
            let refers_to_itself = {
                let mut own = std::collections::HashMap::new();
                count(definition, &mut own);
                own.contains_key(&target)
            };
            (uses.get(&target) == Some(&1) && !refers_to_itself)
                .then(|| (name.clone(), target, definition.as_object().cloned().unwrap_or_default()))
        });
        let Some((name, target, definition)) = single else { return };
        if let Some(Value::Object(definitions)) = root.get_mut("$defs") {
            definitions.remove(&name);
            if definitions.is_empty() {
                root.remove("$defs");
            }
        }
        let mut whole = Value::Object(std::mem::take(root));
        replace(&mut whole, &target, &definition);
        if let Value::Object(map) = whole {
            *root = map;
        }
    }
}

/// One schema object; recurses into its subschemas.
fn tighten_schema(schema: &mut JsonObject, side: Side) {
    if schema.get("format").and_then(Value::as_str).is_some_and(|f| RUST_FORMATS.contains(&f)) {
        schema.remove("format");
    }
    if schema.get("additionalProperties") == Some(&Value::Bool(true)) {
        // What JSON Schema assumes anyway.
        schema.remove("additionalProperties");
    }
    enum_of_constants(schema);
    let all_strings = |values: &Value| values.as_array().is_some_and(|v| v.iter().all(Value::is_string));
    if schema.get("type").and_then(Value::as_str) == Some("string")
        && (schema.contains_key("const") || schema.get("enum").is_some_and(all_strings))
    {
        // A constant, or a list of string values, says its type.
        schema.remove("type");
    }
    if side == Side::Output {
        for keyword in ["description", "title"] {
            if schema.get(keyword).is_some_and(Value::is_string) {
                schema.remove(keyword);
            }
        }
        if schema.get("minimum").and_then(Value::as_u64) == Some(0) {
            schema.remove("minimum");
        }
        // Which fields a result always has is said once, at its top level; an
        // object's `properties` say it is an object, an array's `items` that it is one.
        schema.remove("required");
        if schema.contains_key("properties") && schema.get("type").and_then(Value::as_str) == Some("object") {
            schema.remove("type");
        }
        if schema.contains_key("items") && schema.get("type").and_then(Value::as_str) == Some("array") {
            schema.remove("type");
        }
    }
    let required: Vec<String> = schema
        .get("required")
        .and_then(Value::as_array)
        .map(|r| r.iter().filter_map(Value::as_str).map(str::to_owned).collect())
        .unwrap_or_default();
    if side == Side::Input
        && let Some(Value::Object(items)) = schema.get_mut("items")
        && schema_has_description(items)
    {
        // An argument's description covers its elements.
        items.remove("description");
    }
    for (key, value) in schema.iter_mut() {
        match (key.as_str(), value) {
            ("properties", Value::Object(properties)) => {
                for (name, property) in properties.iter_mut() {
                    let Value::Object(property) = property else { continue };
                    if side == Side::Input && !required.contains(name) {
                        drop_null(property);
                    }
                    tighten_schema(property, side);
                }
            }
            ("$defs", Value::Object(definitions)) => {
                for definition in definitions.values_mut() {
                    if let Value::Object(definition) = definition {
                        tighten_schema(definition, side);
                    }
                }
            }
            (_, Value::Object(sub)) => tighten_schema(sub, side),
            (_, Value::Array(items)) => {
                for item in items {
                    if let Value::Object(sub) = item {
                        tighten_schema(sub, side);
                    }
                }
            }
            _ => {}
        }
    }
}

fn schema_has_description(_items: &JsonObject) -> bool {
    true
}

/// `{"oneOf": [{"const": "a", "type": "string", "description": …}, …]}`, schemars'
/// spelling of a documented Rust enum, as `{"type": "string", "enum": ["a", …]}`: the
/// property's own description says what the values mean.
fn enum_of_constants(schema: &mut JsonObject) {
    let Some(Value::Array(alternatives)) = schema.get("oneOf") else { return };
    let constants: Option<Vec<Value>> = alternatives
        .iter()
        .map(|a| {
            let a = a.as_object()?;
            let plain = a.keys().all(|k| matches!(k.as_str(), "const" | "type" | "description"))
                && a.get("type").and_then(Value::as_str) == Some("string");
            a.get("const").filter(|c| plain && c.is_string()).cloned()
        })
        .collect();
    if let Some(constants) = constants {
        schema.remove("oneOf");
        schema.insert("type".to_owned(), Value::from("string"));
        schema.insert("enum".to_owned(), Value::Array(constants));
    }
}

/// An optional argument's schema without its `null` alternative:
/// `{"type": ["integer", "null"]}` becomes `{"type": "integer"}`, and
/// `{"anyOf": [{"$ref": …}, {"type": "null"}]}` the `$ref` alone.
fn drop_null(property: &mut JsonObject) {
    if let Some(Value::Array(types)) = property.get_mut("type") {
        types.retain(|t| t != "null");
        if types.len() == 1 {
            let only = types.remove(0);
            property.insert("type".to_owned(), only);
        }
    }
    if property.get("default").is_some_and(Value::is_null) {
        property.remove("default");
    }
    if let Some(Value::Array(alternatives)) = property.get_mut("anyOf") {
        alternatives.retain(|a| a.get("type").and_then(Value::as_str) != Some("null"));
        if alternatives.len() == 1
            && let Some(Value::Object(only)) = alternatives.pop()
        {
            property.remove("anyOf");
            for (key, value) in only {
                property.entry(key).or_insert(value);
            }
        }
    }
}

/// Every tool, in the order `tools/list` shows them.
pub(super) static TOOLS: &[ToolDef] = &[
    ToolDef {
        name: "get_vault_overview",
        title: "Vault overview",
        description: "Start here: folders, counts (notes, tags, links, broken links, orphans, pending proposals), index state (`fresh`: all indexed), skipped files, access level, and `changes` (pass its `cursor` as `since` later: what changed since).",
        level: Access::Read,
        effect: Effect::Reads,
        input: input::<OverviewArgs>,
        output: output::<Overview>,
    },
    ToolDef {
        name: "search_knowledge",
        title: "Search notes by topic",
        description: "Find notes by what they are about: ranked search of titles, aliases, descriptions, tags; also to check none exists before proposing one. Query: words, \"exact phrase\", -excluded; CJK needs no spaces; questions work.",
        level: Access::Read,
        effect: Effect::Reads,
        input: input::<SearchArgs>,
        output: output::<KnowledgeResults>,
    },
    ToolDef {
        name: "search_note_content",
        title: "Search note text",
        description: "Full-text search in note bodies (headings weigh more): facts, phrases, commands, names. Query as in search_knowledge. Up to 3 snippets per hit (terms in **bold**, heading, 1-based line).",
        level: Access::Read,
        effect: Effect::Reads,
        input: input::<SearchArgs>,
        output: output::<ContentResults>,
    },
    ToolDef {
        name: "read_note",
        title: "Read a note",
        description: "Read a note or standard by `path` (z/备份仓库.md) or `ref`, a wikilink target (备份仓库#Heading): text as on disk, frontmatter, outline, size, time, `hash` (a patch's base_hash). `section`: one heading's part. Pages of 64 KiB unless `max_bytes`; while `truncated`, call again with `offset` = `next_offset`.",
        level: Access::Read,
        effect: Effect::Reads,
        input: input::<ReadNoteArgs>,
        output: output::<NoteContent>,
    },
    ToolDef {
        name: "list_standards",
        title: "List standards",
        description: "The owner's rules for notes (how to write them, which keys and tags to use). Read the relevant ones before proposing.",
        level: Access::Read,
        effect: Effect::Reads,
        input: input::<NoArgs>,
        output: output::<Standards>,
    },
    ToolDef {
        name: "list_tags",
        title: "List tags",
        description: "Tags (frontmatter and inline, nested in full: type/synthesis) with note counts and whether the registry lists them, most used first. Prefer registered tags.",
        level: Access::Read,
        effect: Effect::Reads,
        input: input::<ListTagsArgs>,
        output: output::<Tags>,
    },
    ToolDef {
        name: "get_related_notes",
        title: "Related notes",
        description: "A note's links, by `path` or `ref`: outlinks (as written, resolved path or null, kind, line), backlinks (note, line, its text), broken links, and MOCs linking to it.",
        level: Access::Read,
        effect: Effect::Reads,
        input: input::<NoteRefArgs>,
        output: output::<Related>,
    },
    ToolDef {
        name: "list_recent_notes",
        title: "Recent notes",
        description: "Notes changed in the last `days` days (default 7), newest first; sort=created for notes created then (frontmatter created/date, else the file's birth time).",
        level: Access::Read,
        effect: Effect::Reads,
        input: input::<RecentArgs>,
        output: output::<Recent>,
    },
    ToolDef {
        name: "recall_context",
        title: "Recall context",
        description: "One call instead of several searches and reads: a context pack on a topic or question within a token budget (default 4000): each top note's best section, then openings of linked notes, with path, heading, text and why.",
        level: Access::Read,
        effect: Effect::Reads,
        input: input::<RecallArgs>,
        output: output::<RecallPack>,
    },
    ToolDef {
        name: "list_notes",
        title: "List a folder",
        description: "The vault's ls: notes directly in a folder (default: top level) and, on the first page, its subfolders with note counts. `tag` filters; `sort`: path, updated, created. Pass `next_cursor` as `cursor` (same folder, tag, sort) for more.",
        level: Access::Read,
        effect: Effect::Reads,
        input: input::<ListNotesArgs>,
        output: output::<NoteList>,
    },
    ToolDef {
        name: "audit_vault",
        title: "Audit the vault",
        description: "Find what needs care: broken links and anchors, ambiguous links, orphans, unregistered tags, frontmatter against kb.toml's [lint], duplicate titles, unlinked mentions, notes missing from their tag's MOC, skipped, empty, oversize notes. `checks` picks some (default all); paged by `next_cursor`. `fix: true` (access propose) stages the mechanical fixes.",
        level: Access::Read,
        effect: Effect::Reads,
        input: input::<AuditArgs>,
        output: output::<Audit>,
    },
    ToolDef {
        name: "propose_new_note",
        title: "Propose a new note",
        description: "Stage a new note for the person to approve (the vault does not change). First search_knowledge (no duplicates) and read the standards. Returns `similar` notes. Then stop for review.",
        level: Access::Propose,
        effect: Effect::Stages,
        input: input::<ProposeNewArgs>,
        output: output::<ProposeNewResult>,
    },
    ToolDef {
        name: "propose_note_patch",
        title: "Propose a patch",
        description: "Stage a change to a note for the person to approve (the vault does not change). base_hash is read_note's `hash` (else stale_base). Keep edits small. Returns a proposal_id and diff. Then stop for review.",
        level: Access::Propose,
        effect: Effect::Stages,
        input: input::<ProposePatchArgs>,
        output: output::<ProposePatchResult>,
    },
    ToolDef {
        name: "propose_move",
        title: "Propose a move",
        description: "Stage moving a note (.md) or folder; every link to it is rewritten in its own form; keep_alias keeps the old name as an alias.",
        level: Access::Propose,
        effect: Effect::Stages,
        input: input::<ProposeMoveArgs>,
        output: output::<ProposeMoveResult>,
    },
    ToolDef {
        name: "propose_delete",
        title: "Propose a delete",
        description: "Stage deleting a note (to inbox/trash/); `breaks` lists links that will break.",
        level: Access::Propose,
        effect: Effect::Stages,
        input: input::<ProposeDeleteArgs>,
        output: output::<ProposeDeleteResult>,
    },
    ToolDef {
        name: "propose_batch",
        title: "Propose a batch",
        description: "Stage up to 100 new notes, patches, moves and deletes as ONE proposal, applied all or nothing.",
        level: Access::Propose,
        effect: Effect::Stages,
        input: input::<ProposeBatchArgs>,
        output: output::<ProposeBatchResult>,
    },
    ToolDef {
        name: "revert_proposal",
        title: "Propose a revert",
        description: "Stage the exact inverse of an applied proposal; stale_base lists files changed since.",
        level: Access::Propose,
        effect: Effect::Stages,
        input: input::<RevertArgs>,
        output: output::<RevertResult>,
    },
    ToolDef {
        name: "list_proposals",
        title: "List proposals",
        description: "Staged proposals, newest first (pending by default): a one-line summary and live checks (a failing one means apply refuses).",
        level: Access::Propose,
        effect: Effect::Reads,
        input: input::<ListProposalsArgs>,
        output: output::<Proposals>,
    },
    ToolDef {
        name: "apply_proposal",
        title: "Apply an approved proposal",
        description: "Apply ONE proposal the person explicitly approved, never on your own initiative; this writes notes. Checks run first; a failure changes nothing. applied_index_failed: written, not indexed; never apply again.",
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
