//! Running a call: parse the arguments, call the one engine method, and turn
//! its result (or its error) into the tool result with text and structure.

use rmcp::ErrorData as McpError;
use rmcp::model::{CallToolResult, ContentBlock};
use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::{Value, json};

use super::admit::invalid_arguments;
use super::table::def;
use crate::engine::Engine;
use std::sync::Arc;

use crate::engine::types::{Access, Principal, ServerMetrics};
use crate::error::Error;

pub(super) fn parse<T: DeserializeOwned>(name: &str, arguments: Value) -> Result<T, Error> {
    serde_json::from_value(arguments).map_err(|e| invalid_arguments(name, &[(String::new(), e.to_string())]))
}

/// The contract's error result: `isError` with the JSON `{"error": {code,
/// message, hint, …}}` (the code's [default hint](crate::error::ErrorCode::default_hint)
/// where the error names none) as its one text content and no `structuredContent`
/// (its message, hint and details cut to the bounds of [`Error::bounded`]: an
/// error naming an argument never echoes a megabyte of it)
/// (clients on the TypeScript SDK 1.x check any `structuredContent` against the
/// tool's output schema, errors included, and would show a schema error instead).
pub fn error_result(error: &Error) -> CallToolResult {
    CallToolResult::error(vec![ContentBlock::text(error.to_contract_json().to_string())])
}

/// The error object (`{code, message, hint, …}`) of an error result made by
/// [`error_result`], read back from its text; `None` for any other result.
pub fn error_of(result: &CallToolResult) -> Option<Value> {
    if result.is_error != Some(true) {
        return None;
    }
    let text = result.content.first()?.as_text()?;
    let mut parsed: Value = serde_json::from_str(&text.text).ok()?;
    Some(parsed.get_mut("error")?.take())
}

/// The code of an error result (`not_found`, …), `"error"` when it carries none.
pub fn error_code(result: &CallToolResult) -> String {
    error_of(result).and_then(|e| e["code"].as_str().map(str::to_owned)).unwrap_or_else(|| "error".to_owned())
}

pub(super) fn success<T: Serialize>(value: &T, text: String) -> Result<CallToolResult, McpError> {
    let value = serde_json::to_value(value).map_err(|e| McpError::internal_error(e.to_string(), None))?;
    let mut result = CallToolResult::structured(value);
    result.content = vec![ContentBlock::text(text)];
    Ok(result)
}

/// What a call needs besides the engine.
#[derive(Debug, Clone)]
pub struct CallContext {
    /// The caller's access level.
    pub access: Access,
    /// Whether the client declared the MCP Apps extension (it may show the
    /// review card, whose tools are admitted only then).
    pub apps: bool,
    /// Whether the client can ask the person (elicitation: the confirmation
    /// before `apply_proposal`).
    pub asks: bool,
    /// The running server's metrics, for `get_vault_overview {metrics: true}`
    /// (taken by the server only for that call).
    pub metrics: Option<Arc<ServerMetrics>>,
    /// Who is calling, for the agent's memory: the HTTP token's name, or
    /// `local` over stdio.
    pub principal: Principal,
}

impl CallContext {
    /// Whether kb-mcp itself can put a change before the person in this
    /// client: by its confirmation question or its review card. When not, the
    /// host's own approval of a destructive tool is the second approval.
    pub fn approves_itself(&self) -> bool {
        self.apps || self.asks
    }
}

/// Runs an admitted call (blocking: run it off the async runtime): the tool's
/// table row parses the arguments, calls its engine method and renders the answer.
pub fn invoke(
    engine: &Engine,
    context: CallContext,
    name: &str,
    arguments: Value,
) -> Result<CallToolResult, McpError> {
    let Some(tool) = def(name) else {
        let name = crate::error::cut_middle(name, 200);
        return Err(McpError::invalid_params(format!("unknown tool `{name}`"), None));
    };
    match (tool.run)(Call { engine, context, name: tool.name, arguments }) {
        Ok((text, value)) => crate::engine::timing::time("render", || success(&value, text)),
        Err(error) => Ok(error_result(&error)),
    }
}

/// A call on its way to its engine method: what a table row's `run` is given.
pub(super) struct Call<'a> {
    /// The engine that answers.
    pub(super) engine: &'a Engine,
    /// The caller's access level.
    pub(super) context: CallContext,
    /// The tool's name, for errors about its arguments.
    name: &'static str,
    /// The admitted arguments (taken by [`Call::args`]).
    arguments: Value,
}

/// A call's answer: its text and its structured result, or the error.
pub(super) type Answer = Result<(String, Value), Error>;

impl Call<'_> {
    /// The arguments as `A`.
    pub(super) fn args<A: DeserializeOwned>(&mut self) -> Result<A, Error> {
        parse(self.name, std::mem::take(&mut self.arguments))
    }

    /// The arguments as `A`, the list under `key` parsed element by element
    /// (see [`parse_listed`]) and put in place by `set`.
    pub(super) fn listed_args<A: DeserializeOwned, I: DeserializeOwned>(
        &mut self,
        key: &str,
        set: impl FnOnce(&mut A, Vec<I>),
    ) -> Result<A, Error> {
        parse_listed(self.name, std::mem::take(&mut self.arguments), key, set)
    }

    /// The usual call: the arguments as `A`, given to `method`, its result rendered.
    pub(super) fn answer<A: DeserializeOwned, R: Serialize>(
        mut self,
        method: fn(&Engine, &A) -> crate::error::Result<R>,
        render: fn(&R) -> String,
    ) -> Answer {
        let args: A = self.args()?;
        answered(method(self.engine, &args), render)
    }
}

/// An engine method's result as a call's answer.
pub(super) fn answered<R: Serialize>(result: crate::error::Result<R>, render: fn(&R) -> String) -> Answer {
    result.map(|value| rendered(&value, render))
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
