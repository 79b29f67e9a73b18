//! Admitting a call: the caller's access level, then the arguments checked
//! against the tool's input schema, with errors that name each argument.

use std::collections::HashMap;
use std::sync::OnceLock;

use rmcp::ErrorData as McpError;
use rmcp::model::{CallToolResult, JsonObject};
use serde_json::{Value, json};

use super::app::{APP_TOOLS, is_app_only};
use super::invoke::error_result;
use super::table::{TOOLS, def};
use crate::engine::types::Access;
use crate::error::{Error, ErrorCode};

/// Compiled input validators, one per tool.
fn validator(name: &str) -> Option<&'static jsonschema::Validator> {
    static VALIDATORS: OnceLock<HashMap<&'static str, jsonschema::Validator>> = OnceLock::new();
    VALIDATORS
        .get_or_init(|| {
            TOOLS
                .iter()
                .chain(APP_TOOLS)
                .filter_map(|t| {
                    // Compiled as draft 7, which our schemas' keywords mean the same in
                    // (`$ref` into `$defs` is a plain JSON pointer): a 2020-12 validator
                    // keeps a compiled copy of its meta-schema's dynamic references,
                    // about 2.5 MiB per tool, 33 MiB for the table.
                    let mut schema = (*(t.input)()).clone();
                    schema.remove("$schema");
                    jsonschema::options()
                        .with_draft(jsonschema::Draft::Draft7)
                        .build(&Value::Object(schema))
                        .ok()
                        .map(|v| (t.name, v))
                })
                .collect()
        })
        .get(name)
}

/// Checks a call before it runs: the tool exists, the caller may use it, and the
/// arguments match its input schema. Returns the arguments as a JSON value.
pub fn admit(
    name: &str,
    access: Access,
    apps: bool,
    arguments: Option<JsonObject>,
) -> Result<Result<Value, CallToolResult>, McpError> {
    // The card's tools do not exist for a client that cannot show the card.
    let Some(tool) = def(name).filter(|_| apps || !is_app_only(name)) else {
        let name = crate::error::cut_middle(name, 200);
        return Err(McpError::invalid_params(
            format!("unknown tool `{name}`; call tools/list for the available tools"),
            None,
        ));
    };
    if tool.level > access {
        let error = Error::new(
            ErrorCode::PermissionDenied,
            format!(
                "`{name}` needs access level `{}`; this connection has `{}`",
                tool.level.as_str(),
                access.as_str()
            ),
        )
        .with_hint(
            "ask the person to start kb-mcp with a higher --access level (or use a token with that scope)",
        );
        return Ok(Err(error_result(&error)));
    }
    // An optional argument given as `null` is one not given: the published schemas
    // type optional arguments without `null` (see `table::tighten`).
    let mut arguments = arguments.unwrap_or_default();
    arguments.retain(|_, value| !value.is_null());
    let arguments = Value::Object(arguments);
    if let Some(validator) = validator(name) {
        let problems: Vec<(String, String)> = validator
            .iter_errors(&arguments)
            .take(5)
            .map(|e| (argument_name(e.instance_path.as_str()), e.to_string()))
            .collect();
        if !problems.is_empty() {
            return Ok(Err(error_result(&invalid_arguments(name, &problems))));
        }
    }
    Ok(Ok(arguments))
}

/// A JSON pointer into the arguments as the model wrote it: `/edits/0/op` is `edits[0].op`.
fn argument_name(pointer: &str) -> String {
    let mut name = String::new();
    for segment in pointer.split('/').skip(1) {
        let segment = segment.replace("~1", "/").replace("~0", "~");
        if !segment.is_empty() && segment.bytes().all(|b| b.is_ascii_digit()) {
            name.push_str(&format!("[{segment}]"));
        } else {
            if !name.is_empty() {
                name.push('.');
            }
            name.push_str(&segment);
        }
    }
    name
}

/// The `invalid_argument` error for schema mismatches: (argument, rule) pairs, the
/// argument empty when the rule is about the arguments as a whole (a missing or
/// unknown argument).
pub(super) fn invalid_arguments(tool: &str, problems: &[(String, String)]) -> Error {
    let described: Vec<String> = problems
        .iter()
        .map(
            |(argument, rule)| {
                if argument.is_empty() { rule.clone() } else { format!("`{argument}`: {rule}") }
            },
        )
        .collect();
    let listed: Vec<Value> =
        problems.iter().map(|(argument, rule)| json!({ "argument": argument, "rule": rule })).collect();
    Error::invalid(format!("invalid arguments for `{tool}`: {}", described.join("; ")))
        .with_hint("fix the argument and call again; the tool's inputSchema (tools/list) gives each argument's type and range")
        .with_details(json!({ "problems": listed }))
}
