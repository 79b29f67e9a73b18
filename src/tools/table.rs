//! The tool table: each tool declared once, in one row: its name, access
//! level, effect, input and output schemas, description, and the call into
//! its engine method. `tools/list` and `tools/call` both read it.

use std::sync::Arc;

use rmcp::model::{JsonObject, MetaObject, Tool, ToolAnnotations};

use super::app::APP_TOOLS;
use super::invoke::{Answer, Call, answered};
use super::render;
use super::schema::{input, output};
use crate::engine::Engine;
use crate::engine::types::*;
use crate::error::{Error, ErrorCode};

/// The contract's annotation classes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Effect {
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
    pub(super) title: &'static str,
    pub(super) description: &'static str,
    pub(super) level: Access,
    pub(super) effect: Effect,
    pub(super) input: fn() -> Arc<JsonObject>,
    pub(super) output: fn() -> Arc<JsonObject>,
    /// Parses the arguments, calls the engine, renders the answer.
    pub(super) run: fn(Call<'_>) -> Answer,
}

/// What the overview says at `apply` to a client that declares neither
/// elicitation nor MCP Apps (see [`super::CallContext::approves_itself`]).
pub(super) const HOST_APPROVES: &str = "\nApprovals: this client shows neither kb-mcp's confirmation question nor its review card, so your host's own approval of apply_proposal is the person's second approval; `kb-index review` shows them every proposal whole.";

/// Every tool, in the order `tools/list` shows them.
pub(super) static TOOLS: &[ToolDef] = &[
    ToolDef {
        name: "get_vault_overview",
        title: "Vault overview",
        description: "Start here: folders, counts, index (`fresh`?), skipped files, warnings, conflict copies, access, `replica`, `memory`, `changes` (`cursor`: next `since`); `metrics`: calls, errors, latency.",
        level: Access::Read,
        effect: Effect::Reads,
        input: input::<OverviewArgs>,
        output: output::<Overview>,
        run: |mut call| {
            let args: OverviewArgs = call.args()?;
            let caller = Caller::Agent(call.context.access);
            let overview = call.engine.overview_since(caller, args.since.as_deref()).map(|mut overview| {
                if args.metrics == Some(true) {
                    overview.metrics = call.context.metrics.as_deref().cloned();
                }
                overview.memory = call.engine.memory_counts(&call.context.principal);
                overview
            });
            let answer = answered(overview, render::overview);
            let context = call.context;
            answer.map(|(mut text, value)| {
                if context.access >= Access::Apply && !context.approves_itself() {
                    text.push_str(HOST_APPROVES);
                }
                (text, value)
            })
        },
    },
    ToolDef {
        name: "search_knowledge",
        title: "Search notes by topic",
        description: "Find notes by topic: ranked search of titles, aliases, descriptions, tags (and meaning: `ranking`); also to check none exists before proposing one. CJK needs no spaces.",
        level: Access::Read,
        effect: Effect::Reads,
        input: input::<SearchArgs>,
        output: output::<KnowledgeResults>,
        run: |mut call| {
            let args: SearchArgs = call.args()?;
            answered(call.engine.search_knowledge_for(&args, &call.context.principal), render::knowledge)
        },
    },
    ToolDef {
        name: "search_note_content",
        title: "Search note text",
        description: "Full-text search in note bodies: facts, phrases, commands, names. Query as in search_knowledge. Up to 3 snippets per hit (terms in **bold**, heading, line).",
        level: Access::Read,
        effect: Effect::Reads,
        input: input::<SearchArgs>,
        output: output::<ContentResults>,
        run: |mut call| {
            let args: SearchArgs = call.args()?;
            answered(call.engine.search_note_content_for(&args, &call.context.principal), render::content)
        },
    },
    ToolDef {
        name: "read_note",
        title: "Read a note",
        description: "Read a note, standard, canvas or PDF by `path` or `ref` (a wikilink); `at`: a past version. Gives text, frontmatter, outline, `hash` (a patch's base_hash); paged while `truncated`.",
        level: Access::Read,
        effect: Effect::Reads,
        input: input::<ReadNoteArgs>,
        output: output::<NoteContent>,
        run: |call| call.answer(Engine::read_note, render::note),
    },
    ToolDef {
        name: "list_standards",
        title: "List standards",
        description: "The owner's rules for notes (how to write them, which keys and tags). Read the relevant ones before proposing.",
        level: Access::Read,
        effect: Effect::Reads,
        input: input::<NoArgs>,
        output: output::<Standards>,
        run: |mut call| {
            let NoArgs {} = call.args()?;
            answered(call.engine.list_standards(), render::standards)
        },
    },
    ToolDef {
        name: "list_tags",
        title: "List tags",
        description: "Tags (frontmatter and inline; nested in full: type/x), note counts, registered or not, most used first.",
        level: Access::Read,
        effect: Effect::Reads,
        input: input::<ListTagsArgs>,
        output: output::<Tags>,
        run: |call| call.answer(Engine::list_tags, render::tags),
    },
    ToolDef {
        name: "get_related_notes",
        title: "Related notes",
        description: "A note's outlinks, backlinks (with their line), broken links, and MOCs linking to it.",
        level: Access::Read,
        effect: Effect::Reads,
        input: input::<NoteRefArgs>,
        output: output::<Related>,
        run: |call| call.answer(Engine::get_related_notes, render::related),
    },
    ToolDef {
        name: "list_recent_notes",
        title: "Recent notes",
        description: "Notes changed in the last `days` days, newest first; sort=created: by creation (frontmatter created/date, else file birth).",
        level: Access::Read,
        effect: Effect::Reads,
        input: input::<RecentArgs>,
        output: output::<Recent>,
        run: |call| call.answer(Engine::list_recent_notes, render::recent),
    },
    ToolDef {
        name: "recall_context",
        title: "Recall context",
        description: "Instead of several searches and reads: a pack on a topic or question within a token budget (default 4000): top notes' best sections, linked notes' openings, each with why.",
        level: Access::Read,
        effect: Effect::Reads,
        input: input::<RecallArgs>,
        output: output::<RecallPack>,
        run: |mut call| {
            let args: RecallArgs = call.args()?;
            answered(call.engine.recall_context_for(&args, &call.context.principal), render::recall)
        },
    },
    ToolDef {
        name: "list_notes",
        title: "List a folder",
        description: "A folder's notes and (page 1) its subfolders with counts. Next page: `cursor` = `next_cursor`, same folder, tag, sort.",
        level: Access::Read,
        effect: Effect::Reads,
        input: input::<ListNotesArgs>,
        output: output::<NoteList>,
        run: |call| call.answer(Engine::list_notes, render::notes),
    },
    ToolDef {
        name: "list_history",
        title: "History",
        description: "A note's versions, newest first: when, who (on disk or a proposal), lines +/-, hash.",
        level: Access::Read,
        effect: Effect::Reads,
        input: input::<HistoryArgs>,
        output: output::<HistoryResults>,
        run: |call| call.answer(Engine::list_history, render::history),
    },
    ToolDef {
        name: "audit_vault",
        title: "Audit the vault",
        description: "What needs care: broken links, orphans, [lint] frontmatter, duplicate titles, unlinked mentions, notes a MOC lacks...; `fix` stages mechanical fixes.",
        level: Access::Read,
        effect: Effect::Reads,
        input: input::<AuditArgs>,
        output: output::<Audit>,
        run: |mut call| {
            let args: AuditArgs = call.args()?;
            let access = call.context.access;
            if args.fix && access < Access::Propose {
                return Err(Error::new(
                    ErrorCode::PermissionDenied,
                    format!("`audit_vault` with `fix: true` needs access level `propose`; this connection has `{access}`"),
                )
                .with_hint("call audit_vault without `fix` to see the findings, or ask the person for access propose"));
            }
            answered(call.engine.audit_vault(&args), render::audit)
        },
    },
    ToolDef {
        name: "propose_new_note",
        title: "Propose a new note",
        description: "Stage a new note for the person to approve (the vault is unchanged). First search_knowledge (no duplicates) and read the standards. Then stop for review.",
        level: Access::Propose,
        effect: Effect::Stages,
        input: input::<ProposeNewArgs>,
        output: output::<ProposeNewResult>,
        run: |call| call.answer(Engine::propose_new_note, render::proposed_new),
    },
    ToolDef {
        name: "propose_note_patch",
        title: "Propose a patch",
        description: "Stage a change to a note for the person to approve (the vault is unchanged). A changed note: stale_base. Keep edits small. Then stop for review.",
        level: Access::Propose,
        effect: Effect::Stages,
        input: input::<ProposePatchArgs>,
        output: output::<ProposePatchResult>,
        run: |mut call| {
            let args = call.listed_args("edits", |args: &mut ProposePatchArgs, edits| args.edits = edits)?;
            answered(call.engine.propose_note_patch(&args), render::proposed_patch)
        },
    },
    ToolDef {
        name: "propose_move",
        title: "Propose a move",
        description: "Stage moving a note (.md) or folder; every link to it is rewritten in its own form.",
        level: Access::Propose,
        effect: Effect::Stages,
        input: input::<ProposeMoveArgs>,
        output: output::<ProposeMoveResult>,
        run: |call| call.answer(Engine::propose_move, render::proposed_move),
    },
    ToolDef {
        name: "propose_delete",
        title: "Propose a delete",
        description: "Stage deleting a note (to inbox/trash/); `breaks` lists links that will break.",
        level: Access::Propose,
        effect: Effect::Stages,
        input: input::<ProposeDeleteArgs>,
        output: output::<ProposeDeleteResult>,
        run: |call| call.answer(Engine::propose_delete, render::proposed_delete),
    },
    ToolDef {
        name: "propose_batch",
        title: "Propose a batch",
        description: "Stage up to 100 new notes, patches, moves and deletes as ONE proposal, applied all or nothing.",
        level: Access::Propose,
        effect: Effect::Stages,
        input: input::<ProposeBatchArgs>,
        output: output::<ProposeBatchResult>,
        run: |mut call| {
            let args = call.listed_args("items", |args: &mut ProposeBatchArgs, items| args.items = items)?;
            answered(call.engine.propose_batch(&args), render::proposed_batch)
        },
    },
    ToolDef {
        name: "revert_proposal",
        title: "Propose a revert",
        description: "Stage the inverse of an applied proposal, keeping later edits on other lines; stale_base names collisions.",
        level: Access::Propose,
        effect: Effect::Stages,
        input: input::<RevertArgs>,
        output: output::<RevertResult>,
        run: |call| call.answer(Engine::revert_proposal, render::proposed_revert),
    },
    ToolDef {
        name: "propose_restore",
        title: "Propose a restore",
        description: "Stage a note back to a past version (list_history): a patch, or the note made again when gone.",
        level: Access::Propose,
        effect: Effect::Stages,
        input: input::<RestoreArgs>,
        output: output::<RestoreResult>,
        run: |call| call.answer(Engine::propose_restore, render::proposed_restore),
    },
    ToolDef {
        name: "remember",
        title: "Remember",
        description: "Keep one fact you learned (about the person or the vault) in your memory: a dated note the person can edit; brought back first by recall_context and searches. Not for notes: propose those.",
        level: Access::Propose,
        effect: Effect::Stages,
        input: input::<RememberArgs>,
        output: output::<Remembered>,
        run: |mut call| {
            let args: RememberArgs = call.args()?;
            answered(call.engine.remember(&args, &call.context.principal), render::remembered)
        },
    },
    ToolDef {
        name: "list_proposals",
        title: "List proposals",
        description: "Staged proposals, newest first: a summary and live checks (a failing one means apply refuses); conflict copies.",
        level: Access::Propose,
        effect: Effect::Reads,
        input: input::<ListProposalsArgs>,
        output: output::<Proposals>,
        run: |call| call.answer(Engine::list_proposals, render::proposals),
    },
    ToolDef {
        name: "apply_proposal",
        title: "Apply an approved proposal",
        description: "Apply ONE proposal the person explicitly approved, never on your own; this writes notes. Checks run first; a failure changes nothing. applied_index_failed: written, not indexed; never apply again.",
        level: Access::Apply,
        effect: Effect::Applies,
        input: input::<ApplyArgs>,
        output: output::<ApplyResult>,
        run: |mut call| {
            let args: ApplyArgs = call.args()?;
            answered(call.engine.apply_proposal(&args, Actor::Mcp), render::applied)
        },
    },
];

/// A tool's row, the review card's tools included.
pub(super) fn def(name: &str) -> Option<&'static ToolDef> {
    TOOLS.iter().chain(APP_TOOLS).find(|t| t.name == name)
}

/// The tools whose results the review card shows (`_meta.ui.resourceUri`).
const SHOWN_IN_CARD: &[&str] = &[
    "propose_new_note",
    "propose_note_patch",
    "propose_move",
    "propose_delete",
    "propose_batch",
    "revert_proposal",
    "propose_restore",
    "list_proposals",
];

/// Whether a tool's result is shown in the review card (on a connection
/// whose client declared the MCP Apps extension).
pub fn shown_in_card(name: &str) -> bool {
    SHOWN_IN_CARD.contains(&name)
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
/// `apps`: the client declared the MCP Apps extension; then the tools the
/// card shows name it, and the card's own tools follow, for the view alone.
pub fn list(access: Access, apps: bool) -> Vec<Tool> {
    let tool = |t: &ToolDef| {
        Tool::new(t.name, t.description, (t.input)())
            .with_title(t.title)
            .with_raw_output_schema((t.output)())
            .with_annotations(annotations(t))
    };
    let granted = |t: &&ToolDef| t.level <= access;
    let mut tools: Vec<Tool> = TOOLS
        .iter()
        .filter(granted)
        .map(|t| match apps && shown_in_card(t.name) {
            true => tool(t).with_meta(card_meta(&["model", "app"])),
            false => tool(t),
        })
        .collect();
    if apps {
        tools.extend(APP_TOOLS.iter().filter(granted).map(|t| tool(t).with_meta(card_meta(&["app"]))));
    }
    tools
}

/// A tool's `_meta` naming the review card, and who may call it. The flat
/// `ui/resourceUri` key is the extension's older spelling, which hosts of
/// early 2026 read.
fn card_meta(visibility: &[&str]) -> MetaObject {
    let mut meta = MetaObject::new();
    meta.0.insert(
        "ui".to_owned(),
        serde_json::json!({ "resourceUri": crate::review::CARD_URI, "visibility": visibility }),
    );
    meta.0.insert("ui/resourceUri".to_owned(), serde_json::json!(crate::review::CARD_URI));
    meta
}

/// Whether a tool exists at all (at any level).
pub fn exists(name: &str) -> bool {
    def(name).is_some()
}

/// The access level a tool needs; `None` for an unknown tool.
pub fn level(name: &str) -> Option<Access> {
    // `list_vaults` is no row of the table (it reads every vault), but a tool at `read`.
    def(name).map(|tool| tool.level).or_else(|| (name == super::LIST_VAULTS).then_some(Access::Read))
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
        let cases: [(&str, &str, Bound); 10] = [
            ("search_knowledge", "limit", SEARCH_LIMIT),
            ("search_note_content", "limit", SEARCH_LIMIT),
            ("list_tags", "limit", TAGS_LIMIT),
            ("list_recent_notes", "days", RECENT_DAYS),
            ("list_recent_notes", "limit", RECENT_LIMIT),
            ("list_proposals", "limit", PROPOSALS_LIMIT),
            ("recall_context", "budget_tokens", RECALL_BUDGET),
            ("list_notes", "limit", LIST_NOTES_LIMIT),
            ("audit_vault", "limit", AUDIT_LIMIT),
            ("list_history", "limit", HISTORY_LIMIT),
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
            // The range is the schema's (above); the description names the default.
            let text = property["description"].as_str().unwrap();
            assert!(text.contains(&format!("(default {})", bound.default)), "{tool}.{argument}: {text}");
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
