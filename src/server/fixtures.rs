//! The official MCP conformance suite's fixtures, for a test build only.
//!
//! Most scenarios of `@modelcontextprotocol/conformance` call tools, resources
//! and prompts of the reference "everything" server by name (`test_simple_text`,
//! `test://static-text`, `test_simple_prompt`, the `test_input_required_result_*`
//! round trips of 2026-07-28, …) and use logging, completion and resource
//! subscriptions. This module serves them beside kb-mcp's own, so that
//! `tests/clients/conformance.sh` can run every scored scenario of both protocol
//! revisions through kb-mcp's real transports, gate and rmcp. It is compiled only
//! with the cargo feature `conformance-fixtures` (off by default, never in a
//! release binary): without it no fixture name, capability or code path exists.
//! Nothing here touches the vault. The test build also shows the skills
//! extension to every client, since the suite's client declares none.

// Logging, sampling and roots are deprecated by SEP-2577; the suite still calls them.
#![allow(deprecated)]

#[cfg(not(debug_assertions))]
compile_error!("the `conformance-fixtures` feature is for test builds only, never a release binary");

use std::sync::OnceLock;
use std::time::Duration;

use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, ClientResult, CompleteResult, ContentBlock,
    CreateMessageRequest, ElicitRequest, ErrorCode, GetPromptRequestParams, GetPromptResponse,
    GetPromptResult, InputRequiredResult, InputResponses, LoggingLevel, LoggingMessageNotificationParam,
    ProgressNotificationParam, Prompt, ReadResourceResult, RequestStateCodec, Resource, ResourceTemplate,
    SKILLS_EXTENSION_ID, ServerCapabilities, ServerRequest, Tool,
};
use rmcp::service::RequestContext;
use rmcp::{ErrorData as McpError, RoleServer};
use serde::de::DeserializeOwned;
use serde_json::{Map, Value, json};

/// A 1×1 red PNG and a minimal WAV, as the reference server sends them.
const PNG: &str =
    "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8DwHwAFBQIAX8jx0gAAAABJRU5ErkJggg==";
const WAV: &str = "UklGRiYAAABXQVZFZm10IBAAAAABAAEAQB8AAAB9AAACABAAZGF0YQIAAAA=";

/// The fixture tools: name, description, and the one string argument a tool requires, if any.
const TOOLS: &[(&str, &str, &str)] = &[
    ("test_simple_text", "Tests simple text content response", ""),
    ("test_image_content", "Tests image content response", ""),
    ("test_audio_content", "Tests audio content response", ""),
    ("test_embedded_resource", "Tests embedded resource content response", ""),
    ("test_multiple_content_types", "Tests a response with text, image and resource content", ""),
    ("test_tool_with_logging", "Tests a tool that sends log messages while it runs", ""),
    ("test_tool_with_progress", "Tests a tool that reports progress", ""),
    ("test_error_handling", "Tests an error result", ""),
    ("test_sampling", "Tests server-initiated sampling", "prompt"),
    ("test_elicitation", "Tests server-initiated elicitation", "message"),
    ("test_elicitation_sep1034_defaults", "Tests elicitation with default values (SEP-1034)", ""),
    ("test_elicitation_sep1330_enums", "Tests elicitation with enum schemas (SEP-1330)", ""),
    ("json_schema_2020_12_tool", "Tool with JSON Schema 2020-12 features (SEP-1613)", ""),
    ("test_missing_capability", "Needs the sampling capability (SEP-2575)", ""),
    ("test_streaming_elicitation", "Answers on its request's own stream (SEP-2575)", ""),
    ("test_logging_tool", "Logs only when the request sets a log level (SEP-2575)", ""),
    ("test_input_required_result_elicitation", "Input-required round trip: elicitation", ""),
    ("test_input_required_result_sampling", "Input-required round trip: sampling", ""),
    ("test_input_required_result_list_roots", "Input-required round trip: roots/list", ""),
    ("test_input_required_result_request_state", "Input-required round trip with requestState", ""),
    ("test_input_required_result_multiple_inputs", "Input-required round trip with three requests", ""),
    ("test_input_required_result_multi_round", "Input-required round trips over two rounds", ""),
    ("test_input_required_result_tampered_state", "Input-required round trip whose state is sealed", ""),
    ("test_input_required_result_capabilities", "Asks only for what the client declared", ""),
];

/// The prompt asked for a context before it is given (2026-07-28).
const INPUT_PROMPT: &str = "test_input_required_result_prompt";

fn from_json<T: DeserializeOwned>(value: Value) -> Result<T, McpError> {
    serde_json::from_value(value).map_err(|e| McpError::internal_error(format!("fixture: {e}"), None))
}

/// Shows a client what the fixtures need: logging and resource subscriptions
/// where the handshake has them (`legacy`), completions, and the skills
/// extension (kb-mcp's own skills, shown to every client of this build).
pub(super) fn advertise(capabilities: &mut ServerCapabilities, legacy: bool) {
    capabilities.completions = Some(Default::default());
    if legacy {
        capabilities.logging = Some(Default::default());
        if let Some(resources) = capabilities.resources.as_mut() {
            resources.subscribe = Some(true);
        }
    }
    capabilities
        .extensions
        .get_or_insert_with(Default::default)
        .insert(SKILLS_EXTENSION_ID.to_owned(), Default::default());
}

/// Whether a request came over the handshake revisions (2025-11-25 and before).
fn legacy(context: &RequestContext<RoleServer>) -> bool {
    context.protocol_version().is_none_or(|v| v.has_initialize())
}

pub(super) fn is_tool(name: &str) -> bool {
    TOOLS.iter().any(|(tool, ..)| *tool == name)
}

pub(super) fn tools() -> Vec<Tool> {
    TOOLS
        .iter()
        .map(|(name, description, argument)| {
            let schema = if *name == "json_schema_2020_12_tool" {
                // The reference server's schema: `$defs`, `$ref`, composition and conditionals.
                json!({ "$schema": "https://json-schema.org/draft/2020-12/schema", "type": "object",
                    "$defs": { "address": { "$anchor": "addressDef", "type": "object",
                        "properties": { "street": { "type": "string" }, "city": { "type": "string" } } } },
                    "properties": { "name": { "type": "string" }, "address": { "$ref": "#/$defs/address" },
                        "contactMethod": { "type": "string", "enum": ["phone", "email"] },
                        "phone": { "type": "string" }, "email": { "type": "string" } },
                    "allOf": [{ "anyOf": [{ "required": ["phone"] }, { "required": ["email"] }] }],
                    "if": { "properties": { "contactMethod": { "const": "phone" } }, "required": ["contactMethod"] },
                    "then": { "required": ["phone"] }, "else": { "required": ["email"] },
                    "additionalProperties": false })
            } else {
                let properties = Map::from_iter(
                    (!argument.is_empty()).then(|| ((*argument).to_owned(), json!({ "type": "string" }))),
                );
                json!({ "type": "object", "properties": properties, "required": properties.keys().collect::<Vec<_>>() })
            };
            let Value::Object(schema) = schema else { unreachable!("a schema is an object") };
            Tool::new(*name, *description, schema)
        })
        .collect()
}

fn text(text: impl Into<String>) -> CallToolResponse {
    CallToolResult::success(vec![ContentBlock::text(text)]).into()
}

/// The states of the round trips, sealed under a key of this process.
fn codec() -> Result<&'static RequestStateCodec, McpError> {
    static CODEC: OnceLock<Option<RequestStateCodec>> = OnceLock::new();
    CODEC
        .get_or_init(|| {
            let mut key = [0u8; 32];
            getrandom::fill(&mut key).ok()?;
            RequestStateCodec::try_new(key.to_vec()).ok()
        })
        .as_ref()
        .ok_or_else(|| McpError::internal_error("fixture: no randomness for the state key", None))
}

/// An input-required result asking the client `requests`, with `state` sealed.
fn ask<'a>(
    requests: impl IntoIterator<Item = (&'a str, Value)>,
    state: Option<Value>,
) -> Result<InputRequiredResult, McpError> {
    let seal =
        |state: Value| codec()?.seal_json(&state).map_err(|e| McpError::internal_error(e.to_string(), None));
    let requests: Map<String, Value> =
        requests.into_iter().map(|(key, request)| (key.to_owned(), request)).collect();
    Ok(InputRequiredResult::new(Some(from_json(Value::Object(requests))?), state.map(seal).transpose()?))
}

fn elicit(message: &str, field: &str, kind: &str) -> Value {
    json!({ "method": "elicitation/create", "params": { "message": message, "requestedSchema": {
        "type": "object", "properties": { field: { "type": kind } }, "required": [field] } } })
}

fn sample(prompt: &str) -> Value {
    json!({ "method": "sampling/createMessage", "params": {
        "messages": [{ "role": "user", "content": { "type": "text", "text": prompt } }], "maxTokens": 100 } })
}

/// An answer the client gave under `key`, if it has the shape of a result.
fn answer<'a>(responses: Option<&'a InputResponses>, key: &str) -> Option<&'a Map<String, Value>> {
    responses.and_then(|r| r.get(key)).and_then(Value::as_object)
}

/// The state the client echoed: `Ok(None)` when there is none, an error when it is not ours.
fn opened(state: Option<&str>) -> Result<Option<Value>, McpError> {
    let Some(state) = state else { return Ok(None) };
    codec()?
        .open_json(state)
        .map(Some)
        .map_err(|_| McpError::invalid_params("requestState failed its integrity check", None))
}

async fn sleep() {
    tokio::time::sleep(Duration::from_millis(50)).await;
}

/// A request to the client on a handshake session, and its answer as JSON.
async fn ask_client(context: &RequestContext<RoleServer>, request: ServerRequest) -> Result<Value, String> {
    let answer: ClientResult = context.peer.send_request(request).await.map_err(|e| e.to_string())?;
    serde_json::to_value(answer).map_err(|e| e.to_string())
}

pub(super) async fn call_tool(
    request: CallToolRequestParams,
    context: RequestContext<RoleServer>,
) -> Result<CallToolResponse, McpError> {
    let responses = request.input_responses.as_ref();
    let state = opened(request.request_state.as_deref())?;
    let argument = |key: &str| argument(request.arguments.as_ref(), key);
    let capabilities = context.client_capabilities().unwrap_or_default();
    Ok(match request.name.as_ref() {
        "test_simple_text"
        | "test_image_content"
        | "test_audio_content"
        | "test_embedded_resource"
        | "test_multiple_content_types"
        | "test_error_handling" => from_json::<CallToolResult>(fixed(&request.name))?.into(),
        "test_tool_with_logging" | "test_logging_tool" => {
            // The stateless revision logs only for a request that set a level.
            let logs = legacy(&context) || context.meta.log_level().is_some();
            for message in ["Tool execution started", "Tool processing data", "Tool execution completed"] {
                if logs {
                    let param = LoggingMessageNotificationParam::new(LoggingLevel::Info, json!(message));
                    let _ = context.peer.notify_logging_message(param).await;
                }
                sleep().await;
            }
            text("Tool with logging executed successfully")
        }
        "test_tool_with_progress" => {
            let token = context.meta.get_progress_token();
            for step in [0.0, 50.0, 100.0] {
                if let Some(token) = token.clone() {
                    let param = ProgressNotificationParam::new(token, step).with_total(100.0);
                    let _ =
                        context.peer.notify_progress(param.with_message(format!("step {step} of 100"))).await;
                }
                sleep().await;
            }
            text(format!("Progress reported: {}", token.is_some()))
        }
        "test_sampling" => {
            let params = from_json(json!({ "maxTokens": 100, "messages": [{ "role": "user",
                "content": { "type": "text", "text": argument("prompt") } }] }))?;
            let answer =
                ask_client(&context, ServerRequest::CreateMessageRequest(CreateMessageRequest::new(params)));
            match answer.await {
                Ok(result) => {
                    text(format!("LLM response: {}", result["content"]["text"].as_str().unwrap_or("none")))
                }
                Err(e) => text(format!("Sampling not supported or error: {e}")),
            }
        }
        "test_elicitation" | "test_elicitation_sep1034_defaults" | "test_elicitation_sep1330_enums" => {
            let params = from_json(elicitation(&request.name, argument("message")))?;
            match ask_client(&context, ServerRequest::ElicitRequest(ElicitRequest::new(params))).await {
                Ok(result) => {
                    text(format!("User response: action={}, content={}", result["action"], result["content"]))
                }
                Err(e) => text(format!("Elicitation not supported or error: {e}")),
            }
        }
        "json_schema_2020_12_tool" => text(format!(
            "JSON Schema 2020-12 tool called with: {}",
            Value::Object(request.arguments.clone().unwrap_or_default())
        )),
        "test_missing_capability" if capabilities.sampling.is_none() => {
            return Err(McpError::missing_required_client_capability(from_json(json!({ "sampling": {} }))?));
        }
        "test_missing_capability" => text("Success"),
        "test_streaming_elicitation" => text("Streaming complete"),
        "test_input_required_result_elicitation" => match answer(responses, "user_name") {
            Some(a) => text(format!("Hello, {}!", a["content"]["name"].as_str().unwrap_or("unknown"))),
            None => ask([("user_name", elicit("What is your name?", "name", "string"))], None)?.into(),
        },
        "test_input_required_result_sampling" => match answer(responses, "capital_question") {
            Some(a) => {
                text(format!("Sampling result: {}", a["content"]["text"].as_str().unwrap_or("no response")))
            }
            None => ask([("capital_question", sample("What is the capital of France?"))], None)?.into(),
        },
        "test_input_required_result_list_roots" => match answer(responses, "client_roots") {
            Some(a) => text(format!("Found {} root(s)", a["roots"].as_array().map_or(0, Vec::len))),
            None => ask([("client_roots", json!({ "method": "roots/list" }))], None)?.into(),
        },
        "test_input_required_result_request_state" | "test_input_required_result_tampered_state" => {
            match (state, answer(responses, "confirm")) {
                (Some(state), Some(_)) if state["tool"] == request.name.as_ref() => {
                    text("state-ok: requestState validated (integrity-ok)")
                }
                _ => {
                    let state = json!({ "tool": request.name });
                    ask([("confirm", elicit("Please confirm", "ok", "boolean"))], Some(state))?.into()
                }
            }
        }
        "test_input_required_result_multiple_inputs" => {
            let keys = ["user_name", "greeting", "client_roots"];
            match state {
                Some(_) if keys.iter().all(|k| answer(responses, k).is_some()) => {
                    text("Name, greeting and roots: all three answers received")
                }
                _ => ask(
                    [
                        ("user_name", elicit("What is your name?", "name", "string")),
                        ("greeting", sample("Generate a greeting")),
                        ("client_roots", json!({ "method": "roots/list" })),
                    ],
                    Some(json!({ "tool": "multiple" })),
                )?
                .into(),
            }
        }
        "test_input_required_result_multi_round" => {
            let round = state.as_ref().and_then(|s| s["round"].as_u64());
            match (round, answer(responses, "step1"), answer(responses, "step2")) {
                (Some(1), Some(a), _) => {
                    let step2 = elicit("Step 2: What is your favorite color?", "color", "string");
                    ask([("step2", step2)], Some(json!({ "round": 2, "name": a["content"]["name"] })))?.into()
                }
                (Some(2), _, Some(a)) => {
                    let name = state.as_ref().map_or(Value::Null, |s| s["name"].clone());
                    text(format!("Multi-round complete for {name} who likes {}", a["content"]["color"]))
                }
                _ => {
                    let step1 = elicit("Step 1: What is your name?", "name", "string");
                    ask([("step1", step1)], Some(json!({ "round": 1 })))?.into()
                }
            }
        }
        "test_input_required_result_capabilities" => {
            let mut asked = Vec::new();
            if capabilities.elicitation.is_some() {
                asked.push(("elicit_input", elicit("Elicitation input", "value", "string")));
            }
            if capabilities.sampling.is_some() {
                asked.push(("sample_input", sample("Sample request")));
            }
            if responses.is_some_and(|r| !r.is_empty()) {
                text("capabilities-ok")
            } else if asked.is_empty() {
                text("No supported capabilities declared")
            } else {
                ask(asked, Some(json!({ "tool": "capabilities" })))?.into()
            }
        }
        other => return Err(McpError::invalid_params(format!("unknown fixture tool `{other}`"), None)),
    })
}

/// The results of the tools that always answer the same.
fn fixed(tool: &str) -> Value {
    let png = json!({ "type": "image", "data": PNG, "mimeType": "image/png" });
    let content = match tool {
        "test_image_content" => json!([png]),
        "test_audio_content" => json!([{ "type": "audio", "data": WAV, "mimeType": "audio/wav" }]),
        "test_embedded_resource" => {
            json!([{ "type": "resource", "resource": { "uri": "test://embedded-resource",
            "mimeType": "text/plain", "text": "This is an embedded resource content." } }])
        }
        "test_multiple_content_types" => {
            json!([{ "type": "text", "text": "Multiple content types test:" }, png,
            { "type": "resource", "resource": { "uri": "test://mixed-content-resource",
                "mimeType": "application/json", "text": "{\"test\":\"data\",\"value\":123}" } }])
        }
        "test_error_handling" => {
            let text = "This tool intentionally returns an error for testing";
            return json!({ "resultType": "complete", "isError": true, "content": [{ "type": "text", "text": text }] });
        }
        _ => json!([{ "type": "text", "text": "This is a simple text response for testing." }]),
    };
    json!({ "resultType": "complete", "content": content })
}

/// The form each elicitation fixture asks the person to fill in.
fn elicitation(tool: &str, message: &str) -> Value {
    match tool {
        "test_elicitation_sep1034_defaults" => json!({
            "message": "Please review and update the form fields with defaults",
            "requestedSchema": { "type": "object", "required": [], "properties": {
                "name": { "type": "string", "description": "User name", "default": "John Doe" },
                "age": { "type": "integer", "description": "User age", "default": 30 },
                "score": { "type": "number", "description": "User score", "default": 95.5 },
                "status": { "type": "string", "description": "User status",
                    "enum": ["active", "inactive", "pending"], "default": "active" },
                "verified": { "type": "boolean", "description": "Verification status", "default": true } } } }),
        "test_elicitation_sep1330_enums" => json!({
            "message": "Please select options from the enum fields",
            "requestedSchema": { "type": "object", "required": [], "properties": {
                "untitledSingle": { "type": "string", "description": "Select one option",
                    "enum": ["option1", "option2", "option3"] },
                "titledSingle": { "type": "string", "description": "Select one option with titles", "oneOf": [
                    { "const": "value1", "title": "First Option" }, { "const": "value2", "title": "Second Option" },
                    { "const": "value3", "title": "Third Option" }] },
                "legacyEnum": { "type": "string", "description": "Select one option (legacy)",
                    "enum": ["opt1", "opt2", "opt3"], "enumNames": ["Option One", "Option Two", "Option Three"] },
                "untitledMulti": { "type": "array", "description": "Select multiple options", "minItems": 1,
                    "maxItems": 3, "items": { "type": "string", "enum": ["option1", "option2", "option3"] } },
                "titledMulti": { "type": "array", "description": "Select multiple options with titles",
                    "minItems": 1, "maxItems": 3, "items": { "anyOf": [
                        { "const": "value1", "title": "First Choice" }, { "const": "value2", "title": "Second Choice" },
                        { "const": "value3", "title": "Third Choice" }] } } } } }),
        _ => json!({
            "message": message,
            "requestedSchema": { "type": "object", "required": ["username", "email"], "properties": {
                "username": { "type": "string", "description": "User's response" },
                "email": { "type": "string", "description": "User's email address" } } } }),
    }
}

pub(super) fn resources() -> Vec<Resource> {
    let resource = |uri: &str, name: &str, mime: &str| {
        Resource::new(uri, name).with_description(format!("The suite's {name} resource")).with_mime_type(mime)
    };
    vec![
        resource("test://static-text", "static-text", "text/plain"),
        resource("test://static-binary", "static-binary", "image/png"),
        resource("test://watched-resource", "watched-resource", "text/plain"),
    ]
}

pub(super) fn templates() -> Vec<ResourceTemplate> {
    let template = ResourceTemplate::new("test://template/{id}/data", "template");
    vec![template.with_description("Substitutes {id}").with_mime_type("application/json")]
}

pub(super) fn read_resource(uri: &str) -> Option<ReadResourceResult> {
    let contents = match uri {
        "test://static-text" => json!({ "text": "This is the content of the static text resource." }),
        "test://watched-resource" => json!({ "text": "Watched resource content" }),
        "test://static-binary" => json!({ "blob": PNG, "mimeType": "image/png" }),
        _ => {
            let id = uri.strip_prefix("test://template/")?.strip_suffix("/data")?;
            let body = json!({ "id": id, "templateTest": true, "data": format!("Data for ID: {id}") });
            json!({ "text": body.to_string(), "mimeType": "application/json" })
        }
    };
    let mut contents = from_json::<Map<String, Value>>(contents).ok()?;
    contents.insert("uri".to_owned(), json!(uri));
    contents.entry("mimeType").or_insert(json!("text/plain"));
    from_json(json!({ "resultType": "complete", "contents": [contents] })).ok()
}

pub(super) fn prompts() -> Vec<Prompt> {
    let argument =
        |name: &str| json!({ "name": name, "description": format!("The {name}"), "required": true });
    from_json(json!([
        { "name": "test_simple_prompt", "description": "A simple prompt without arguments" },
        { "name": "test_prompt_with_arguments", "description": "A prompt with required arguments",
            "arguments": [argument("arg1"), argument("arg2")] },
        { "name": "test_prompt_with_embedded_resource", "description": "A prompt with an embedded resource",
            "arguments": [argument("resourceUri")] },
        { "name": "test_prompt_with_image", "description": "A prompt that includes image content" },
        { "name": INPUT_PROMPT, "description": "A prompt that asks the client for a context first" },
    ]))
    .unwrap_or_default()
}

pub(super) fn is_prompt(name: &str) -> bool {
    prompts().iter().any(|p| p.name == name)
}

/// A string argument of a call or a prompt, or "".
fn argument<'a>(arguments: Option<&'a Map<String, Value>>, key: &str) -> &'a str {
    arguments.and_then(|a| a.get(key)).and_then(Value::as_str).unwrap_or_default()
}

pub(super) fn get_prompt(request: &GetPromptRequestParams) -> Result<GetPromptResponse, McpError> {
    let argument = |key: &str| argument(request.arguments.as_ref(), key);
    let text = |text: String| json!({ "role": "user", "content": { "type": "text", "text": text } });
    let messages = match request.name.as_str() {
        "test_simple_prompt" => json!([text("This is a simple prompt for testing.".into())]),
        "test_prompt_with_arguments" => {
            json!([text(format!(
                "Prompt with arguments: arg1='{}', arg2='{}'",
                argument("arg1"),
                argument("arg2")
            ))])
        }
        "test_prompt_with_embedded_resource" => json!([{ "role": "user", "content": { "type": "resource",
            "resource": { "uri": argument("resourceUri"), "mimeType": "text/plain",
                "text": "Embedded resource content for testing." } } },
            text("Please process the embedded resource above.".into())]),
        "test_prompt_with_image" => json!([{ "role": "user", "content": { "type": "image", "data": PNG,
            "mimeType": "image/png" } }, text("Please analyze the image above.".into())]),
        _ => match answer(request.input_responses.as_ref(), "user_context") {
            Some(a) => json!([text(format!("Prompt with context: {}", a["content"]["context"]))]),
            None => {
                let question = elicit("What context should the prompt use?", "context", "string");
                return Ok(ask([("user_context", question)], None)?.into());
            }
        },
    };
    Ok(from_json::<GetPromptResult>(json!({ "resultType": "complete", "messages": messages }))?.into())
}

/// `completion/complete`: a few values for any argument, filtered by what was typed.
pub(super) fn complete(typed: &str) -> Result<CompleteResult, McpError> {
    let values: Vec<&str> = ["paris", "park", "party"].into_iter().filter(|v| v.starts_with(typed)).collect();
    let completion = json!({ "values": values, "total": values.len(), "hasMore": false });
    from_json(json!({ "resultType": "complete", "completion": completion }))
}

/// A method of the handshake revisions only (`logging/setLevel`, `resources/subscribe`,
/// `resources/unsubscribe`): answered there, unknown on the stateless revision.
pub(super) fn legacy_only(context: &RequestContext<RoleServer>, name: &'static str) -> Result<(), McpError> {
    legacy(context).then_some(()).ok_or_else(|| McpError::new(ErrorCode::METHOD_NOT_FOUND, name, None))
}
