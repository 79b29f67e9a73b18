//! Running a call: parse the arguments, call the one engine method, and turn
//! its result (or its error) into the tool result with text and structure.

use rmcp::ErrorData as McpError;
use rmcp::model::{CallToolResult, ContentBlock};
use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::{Value, json};

use super::Access;
use super::admit::invalid_arguments;
use super::render;
use super::table::exists;
use crate::engine::Engine;
use crate::engine::types::*;
use crate::error::Error;

pub(super) fn parse<T: DeserializeOwned>(name: &str, arguments: Value) -> Result<T, Error> {
    serde_json::from_value(arguments).map_err(|e| invalid_arguments(name, &[(String::new(), e.to_string())]))
}

/// The contract's error result: `isError` with `{"error": {code, message, hint}}`.
pub fn error_result(error: &Error) -> CallToolResult {
    let mut object = json!({ "code": error.code.as_str(), "message": error.message });
    if let Some(hint) = &error.hint {
        object["hint"] = json!(hint);
    }
    if let Some(Value::Object(details)) = &error.details {
        for (key, value) in details {
            object[key.as_str()] = value.clone();
        }
    }
    let text = match &error.hint {
        Some(hint) => format!("{}: {}\nhint: {hint}", error.code, error.message),
        None => format!("{}: {}", error.code, error.message),
    };
    let mut result = CallToolResult::structured_error(json!({ "error": object }));
    result.content = vec![ContentBlock::text(text)];
    result
}

pub(super) fn success<T: Serialize>(value: &T, text: String) -> Result<CallToolResult, McpError> {
    let value = serde_json::to_value(value).map_err(|e| McpError::internal_error(e.to_string(), None))?;
    let mut result = CallToolResult::structured(value);
    result.content = vec![ContentBlock::text(text)];
    Ok(result)
}

/// What a call needs besides the engine.
#[derive(Debug, Clone, Copy)]
pub struct CallContext {
    /// The caller's access level.
    pub access: Access,
}

/// Runs an admitted call (blocking: run it off the async runtime).
pub fn invoke(
    engine: &Engine,
    context: CallContext,
    name: &str,
    arguments: Value,
) -> Result<CallToolResult, McpError> {
    if !exists(name) {
        return Err(McpError::invalid_params(format!("unknown tool `{name}`"), None));
    }
    let outcome = (|| match name {
        "get_vault_overview" => {
            let args: OverviewArgs = parse(name, arguments)?;
            let pending = engine.pending_proposals();
            engine
                .overview_since(context.access.as_str(), pending, args.since.as_deref())
                .map(|v| rendered(&v, render::overview))
        }
        "search_knowledge" => {
            let args: SearchArgs = parse(name, arguments)?;
            engine.search_knowledge(&args).map(|v| rendered(&v, render::knowledge))
        }
        "search_note_content" => {
            let args: SearchArgs = parse(name, arguments)?;
            engine.search_note_content(&args).map(|v| rendered(&v, render::content))
        }
        "read_note" => {
            let args: ReadNoteArgs = parse(name, arguments)?;
            engine.read_note(&args).map(|v| rendered(&v, render::note))
        }
        "list_standards" => {
            let _: NoArgs = parse(name, arguments)?;
            engine.list_standards().map(|v| rendered(&v, render::standards))
        }
        "list_tags" => {
            let args: ListTagsArgs = parse(name, arguments)?;
            engine.list_tags(&args).map(|v| rendered(&v, render::tags))
        }
        "get_related_notes" => {
            let args: NoteRefArgs = parse(name, arguments)?;
            engine.get_related_notes(&args).map(|v| rendered(&v, render::related))
        }
        "list_recent_notes" => {
            let args: RecentArgs = parse(name, arguments)?;
            engine.list_recent_notes(&args).map(|v| rendered(&v, render::recent))
        }
        "recall_context" => {
            let args: RecallArgs = parse(name, arguments)?;
            engine.recall_context(&args).map(|v| rendered(&v, render::recall))
        }
        "list_notes" => {
            let args: ListNotesArgs = parse(name, arguments)?;
            engine.list_notes(&args).map(|v| rendered(&v, render::notes))
        }
        "audit_vault" => {
            let args: AuditArgs = parse(name, arguments)?;
            if args.fix && context.access < Access::Propose {
                return Err(Error::new(
                    crate::error::ErrorCode::PermissionDenied,
                    format!("`audit_vault` with `fix: true` needs access level `propose`; this connection has `{}`", context.access.as_str()),
                )
                .with_hint("call audit_vault without `fix` to see the findings, or ask the person for access propose"));
            }
            engine.audit_vault(&args).map(|v| rendered(&v, render::audit))
        }
        "propose_new_note" => {
            let args: ProposeNewArgs = parse(name, arguments)?;
            engine.propose_new_note(&args).map(|v| rendered(&v, render::proposed_new))
        }
        "propose_note_patch" => {
            let args: ProposePatchArgs =
                parse_listed(name, arguments, "edits", |args: &mut ProposePatchArgs, edits| {
                    args.edits = edits
                })?;
            engine.propose_note_patch(&args).map(|v| rendered(&v, render::proposed_patch))
        }
        "propose_move" => {
            let args: ProposeMoveArgs = parse(name, arguments)?;
            engine.propose_move(&args).map(|v| rendered(&v, render::proposed_move))
        }
        "propose_delete" => {
            let args: ProposeDeleteArgs = parse(name, arguments)?;
            engine.propose_delete(&args).map(|v| rendered(&v, render::proposed_delete))
        }
        "propose_batch" => {
            let args: ProposeBatchArgs =
                parse_listed(name, arguments, "items", |args: &mut ProposeBatchArgs, items| {
                    args.items = items
                })?;
            engine.propose_batch(&args).map(|v| rendered(&v, render::proposed_batch))
        }
        "revert_proposal" => {
            let args: RevertArgs = parse(name, arguments)?;
            engine.revert_proposal(&args).map(|v| rendered(&v, render::proposed_revert))
        }
        "list_proposals" => {
            let args: ListProposalsArgs = parse(name, arguments)?;
            engine.list_proposals(&args).map(|v| rendered(&v, render::proposals))
        }
        "apply_proposal" => {
            let args: ApplyArgs = parse(name, arguments)?;
            engine.apply_proposal(&args, crate::write::Actor::Mcp).map(|v| rendered(&v, render::applied))
        }
        other => Err(Error::internal(format!("tool `{other}` is declared but not wired"))),
    })();
    match outcome {
        Ok((text, value)) => crate::engine::timing::time("render", || success(&value, text)),
        Err(error) => Ok(error_result(&error)),
    }
}

/// Arguments holding a list (`edits`, `items`) whose elements are parsed one by
/// one, so that an error names the element (`items[2]`: missing field `base_hash`).
fn parse_listed<T: DeserializeOwned, I: DeserializeOwned>(
    name: &str,
    mut arguments: Value,
    key: &str,
    set: impl FnOnce(&mut T, Vec<I>),
) -> Result<T, Error> {
    let list = match arguments.get_mut(key).map(|value| std::mem::replace(value, json!([]))) {
        Some(Value::Array(list)) => list,
        Some(_) => return Err(invalid_arguments(name, &[(key.to_owned(), "must be an array".to_owned())])),
        None => Vec::new(),
    };
    let mut args: T = parse(name, arguments)?;
    let list = list
        .into_iter()
        .enumerate()
        .map(|(number, element)| {
            serde_json::from_value(element)
                .map_err(|e| invalid_arguments(name, &[(format!("{key}[{number}]"), e.to_string())]))
        })
        .collect::<Result<Vec<I>, Error>>()?;
    set(&mut args, list);
    Ok(args)
}

/// A result's text and structure (timed: the debug log's `render` stage).
fn rendered<T: Serialize>(value: &T, render: impl FnOnce(&T) -> String) -> (String, Value) {
    crate::engine::timing::time("render", || (render(value), to_value(value)))
}

fn to_value<T: Serialize>(value: &T) -> Value {
    serde_json::to_value(value).unwrap_or(Value::Null)
}
