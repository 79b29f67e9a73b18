//! A tool call from its arrival to its answer, and its account: one log
//! line and one count in the metrics for every call, however it ended.
//!
//! The handler (`handler.rs`) only starts the call and accounts for it;
//! here the call is admitted (the tool exists, the caller's access allows
//! it, its arguments fit the schema), waits for the engine, asks the person
//! before an apply where it must (`confirm.rs`), runs on a blocking thread
//! and is rendered. [`Accounted`] then writes the `tool` log line (tool,
//! duration, outcome, result size, the HTTP token's name; the query only
//! in the debug log) and records the call in [`Metrics`].

use std::io::Write as _;
use std::time::Instant;

use rmcp::model::{CallToolRequestParams, CallToolResponse, CallToolResult};
use rmcp::service::RequestContext;
use rmcp::{ErrorData as McpError, RoleServer};
use serde_json::{Map, Value, json};

use super::blocking;
use super::confirm;
use super::handler::KbServer;
use super::http::Arrived;
use super::metrics::{Metrics, PendingCount, UNKNOWN_TOOL};
use super::shared::Waited;
use super::timing::ms;
use super::tokens::Grant;
use super::vaults::{self, Served, Wanted};
use super::{debug_log, log};
use crate::engine;
use crate::engine::types::Access;
use crate::error::Error;
use crate::review;
use crate::tools::{self, CallContext};

/// How a call was answered, when its log line says more than its result.
enum Answered {
    /// The result says it all (`ok` or its error's code).
    Plain(CallToolResponse),
    /// The log line's outcome is this word (`asked`, `unasked`, `declined`).
    Said(CallToolResponse, &'static str),
}

impl KbServer {
    /// Answers a tool call, and says how when its log line names the outcome
    /// in words of its own (`unasked`, `declined`, `asked`).
    pub(super) async fn answer_call(
        &self,
        request: CallToolRequestParams,
        context: &RequestContext<RoleServer>,
        started: Instant,
    ) -> (Result<CallToolResponse, McpError>, Option<&'static str>) {
        let answer = self.answer(request, context, started).await;
        match answer {
            Ok(Answered::Plain(response)) => (Ok(response), None),
            Ok(Answered::Said(response, said)) => (Ok(response), Some(said)),
            Err(error) => (Err(error), None),
        }
    }

    async fn answer(
        &self,
        request: CallToolRequestParams,
        context: &RequestContext<RoleServer>,
        started: Instant,
    ) -> Result<Answered, McpError> {
        let name = request.name.to_string();
        let access = self.access(context);
        let apps = self.shows_apps(context);
        let responses = request.input_responses.clone();
        let request_state = request.request_state.clone();
        let visible = self.visible(context);
        let refused = |error: &Error| Ok(Answered::Plain(tools::error_result(error).into()));
        let Some(&default) = visible.first() else { return refused(&vaults::none_granted()) };
        let names: Vec<&str> = visible.iter().map(|served| served.name.as_str()).collect();
        // Only a connection that may use several vaults has the `vault` argument.
        let many = visible.len() > 1;
        let mut raw = request.arguments;
        let wanted = match many.then(|| vaults::take_argument(&mut raw)).transpose() {
            Ok(wanted) => wanted.unwrap_or(Wanted::Default),
            Err(error) => return refused(&error),
        };
        if many && name == tools::LIST_VAULTS {
            return self.list_vaults(raw, &visible, context, access).await;
        }
        let arguments = match tools::admit(&name, access, apps, raw)? {
            Ok(arguments) => arguments,
            // Not granted (`permission_denied`) or arguments off the schema (`invalid_argument`).
            Err(refused) => return Ok(Answered::Plain(refused.into())),
        };
        let served = match wanted {
            Wanted::Every if tools::searches_every_vault(&name) => {
                let call_context = self.call_context(context, access, apps, None);
                return self.search_every(&name, arguments, &visible, context, call_context).await;
            }
            Wanted::Every => {
                return refused(&Error::invalid(format!(
                    "`vault: \"*\"` searches every vault: only search_knowledge and search_note_content take it, not {name}"
                )));
            }
            Wanted::Named(given) => match visible.iter().find(|served| served.name == given) {
                Some(&served) => served,
                None => return refused(&tools::unknown_vault(&given, &names)),
            },
            Wanted::Default => match arguments.get("proposal_id").and_then(Value::as_str) {
                Some(id) if many => holder(&visible, id).await.unwrap_or(default),
                _ => default,
            },
        };
        let shared = served.shared.clone();
        let timings = self.vaults.timings();
        let dispatch = timings.arrival(&context.id).map(|arrived| started.saturating_duration_since(arrived));
        // Searches read only the index (and their hits' files): they are answered from
        // the stored index during the start-up sync, saying they may be stale.
        let patient = !matches!(name.as_str(), "search_knowledge" | "search_note_content");
        let (engine, waited) = shared.engine_waiting(context, patient).await;
        let waited_ms = started.elapsed();
        let engine = match engine {
            Ok(engine) => engine,
            Err(error) => {
                let stages = (std::time::Duration::ZERO, Vec::new(), Instant::now());
                timings.handled(&context.id, breakdown(&name, dispatch, waited, waited_ms, stages));
                return Ok(Answered::Plain(tools::error_result(&error).into()));
            }
        };
        if name == "apply_proposal" {
            let id = arguments["proposal_id"].as_str().unwrap_or_default().to_owned();
            let answer = (responses.as_ref(), request_state.as_deref());
            match confirm::apply(&engine, &id, answer, context).await? {
                confirm::Confirmation::Proceed => {}
                confirm::Confirmation::Ask(question) => return Ok(Answered::Said(question.into(), "asked")),
                confirm::Confirmation::Unasked => {
                    let error = Error::new(
                        crate::error::ErrorCode::PermissionDenied,
                        format!(
                            "the answer to apply proposal {id} is not to a question this server asked \
                             (its requestState is missing, altered, for another proposal, expired or used); \
                             nothing was applied"
                        ),
                    )
                    .with_hint("call apply_proposal again without an answer: the person is asked afresh");
                    return Ok(Answered::Said(tools::error_result(&error).into(), "unasked"));
                }
                confirm::Confirmation::Declined => {
                    let error = Error::new(
                        crate::error::ErrorCode::PermissionDenied,
                        format!("the person declined to apply proposal {id}; it stays pending"),
                    )
                    .with_hint("do not retry; ask the person what to change, or leave the proposal for them");
                    return Ok(Answered::Said(tools::error_result(&error).into(), "declined"));
                }
            }
        }
        let metrics = (name == "get_vault_overview" && arguments.get("metrics") == Some(&Value::Bool(true)))
            .then(|| std::sync::Arc::new(shared.metrics_snapshot()));
        let call_context = self.call_context(context, access, apps, metrics);
        let tool = name.clone();
        let handed_off = Instant::now();
        let (result, stages) = blocking::run(move || {
            let queue = handed_off.elapsed();
            let _ = engine::timing::take();
            let result = (|| {
                // The kb.toml on disk is in force before anything is answered.
                if let Err(error) = engine::timing::time("config", || engine.refresh_config()) {
                    return Ok(tools::error_result(&error));
                }
                // The propose and apply levels are refused while the inbox is a folder of the person's own.
                if tools::level(&tool) > Some(Access::Read)
                    && let Some(error) = engine.inbox_conflict()
                {
                    return Ok(tools::error_result(&error));
                }
                engine::timing::time("files", || shared.check_files(&engine));
                let invoked = Instant::now();
                let result = tools::invoke(&engine, call_context, &tool, arguments);
                engine::timing::record("invoke", invoked.elapsed());
                result
            })();
            (result, (queue, engine::timing::take(), Instant::now()))
        })
        .await
        .map_err(|e| McpError::internal_error(format!("tool task failed: {e}"), None))?;
        timings.handled(&context.id, breakdown(&name, dispatch, waited, waited_ms, stages));
        result.map(|result| {
            let result = with_card_key(result, apps && tools::shown_in_card(&name));
            Answered::Plain(if many { tools::named(result, &served.name) } else { result }.into())
        })
    }

    /// What a call needs besides its engine: the caller's access, client and principal.
    fn call_context(
        &self,
        context: &RequestContext<RoleServer>,
        access: Access,
        apps: bool,
        metrics: Option<std::sync::Arc<engine::types::ServerMetrics>>,
    ) -> CallContext {
        let asks = context.client_capabilities().is_some_and(|c| c.elicitation.is_some());
        let principal = context
            .extensions
            .get::<::http::request::Parts>()
            .and_then(|parts| parts.extensions.get::<Grant>())
            .map_or_else(engine::types::Principal::local, |grant| {
                engine::types::Principal::named(&grant.name)
            });
        CallContext { access, apps, asks, metrics, principal }
    }

    /// `list_vaults`: each vault this connection may use, with its counts.
    async fn list_vaults(
        &self,
        arguments: Option<Map<String, Value>>,
        visible: &[&Served],
        context: &RequestContext<RoleServer>,
        access: Access,
    ) -> Result<Answered, McpError> {
        if let Some(given) = arguments.as_ref().and_then(|arguments| arguments.keys().next()) {
            let error = Error::invalid(format!("list_vaults takes no arguments; `{given}` is not one"))
                .with_hint("call list_vaults with {}");
            return Ok(Answered::Plain(tools::error_result(&error).into()));
        }
        let mut engines = Vec::new();
        for served in visible {
            engines.push((served.name.clone(), served.shared.engine_waiting(context, true).await.0));
        }
        let listed = blocking::run(move || {
            let summaries = engines
                .iter()
                .enumerate()
                .map(|(at, (name, engine))| tools::summarize(name, at == 0, engine.as_deref(), access))
                .collect();
            tools::listed(summaries)
        })
        .await
        .map_err(|e| McpError::internal_error(format!("tool task failed: {e}"), None))??;
        Ok(Answered::Plain(listed.into()))
    }

    /// A search of every vault this connection may use (`vault: "*"`).
    async fn search_every(
        &self,
        name: &str,
        arguments: Value,
        visible: &[&Served],
        context: &RequestContext<RoleServer>,
        call_context: CallContext,
    ) -> Result<Answered, McpError> {
        let mut engines = Vec::new();
        for served in visible {
            // Searches do not wait for a start-up sync (see `answer`).
            let engine = served.shared.engine_waiting(context, false).await.0;
            engines.push((served.name.clone(), served.shared.clone(), engine));
        }
        let name = name.to_owned();
        let result = blocking::run(move || {
            let vaults: Vec<_> = engines
                .into_iter()
                .map(|(vault, shared, engine)| {
                    if let Ok(engine) = &engine {
                        shared.check_files(engine);
                    }
                    (vault, engine)
                })
                .collect();
            tools::search_every(&vaults, &call_context, &name, arguments)
        })
        .await
        .map_err(|e| McpError::internal_error(format!("tool task failed: {e}"), None))??;
        Ok(Answered::Plain(result.into()))
    }
}

/// The vault among `visible` whose inbox holds the proposal `id` (pending or
/// archived), looked at in order; `None` when none does or none is serving yet.
async fn holder<'a>(visible: &[&'a Served], id: &str) -> Option<&'a Served> {
    let engines: Vec<(usize, std::sync::Arc<crate::engine::Engine>)> = visible
        .iter()
        .enumerate()
        .filter_map(|(at, served)| Some((at, served.shared.engine_now()?)))
        .collect();
    let id = id.to_owned();
    let found = blocking::run(move || {
        engines.iter().find(|(_, engine)| engine.holds_proposal(&id)).map(|(at, _)| *at)
    })
    .await
    .ok()
    .flatten()?;
    visible.get(found).copied()
}

/// What the account of one call needs from its request: taken before the
/// request is consumed.
pub(super) struct Accounted {
    tool: String,
    /// When the call arrived: at the HTTP gate (see [`Arrived`]), else at the handler.
    arrived: Instant,
    /// The HTTP token's name (none over stdio).
    token: Option<String>,
    /// The query, kept only when the debug log is on.
    query: Option<String>,
    /// Where an HTTP call leaves its count for the transport.
    pending: Option<PendingCount>,
}

impl Accounted {
    /// The account of a call the handler started at `started`.
    pub(super) fn of(
        request: &CallToolRequestParams,
        context: &RequestContext<RoleServer>,
        started: Instant,
    ) -> Accounted {
        let http = context.extensions.get::<::http::request::Parts>().map(|parts| &parts.extensions);
        let arrived = http.and_then(|ext| ext.get::<Arrived>()).map_or(started, |arrived| arrived.0);
        let token = http.and_then(|ext| ext.get::<Grant>()).map(|grant| grant.name.to_string());
        let pending = http.and_then(|ext| ext.get::<PendingCount>()).cloned();
        let query = debug_log()
            .then(|| request.arguments.as_ref()?.get("query")?.as_str().map(str::to_owned))
            .flatten();
        Accounted { tool: request.name.to_string(), arrived, token, query, pending }
    }

    /// Logs the call's `tool` line and counts it. The outcome is `ok`, the
    /// error's code, `rpc_error <code>` for a JSON-RPC error, or `said`.
    pub(super) fn finish(
        self,
        metrics: &Metrics,
        response: &Result<CallToolResponse, McpError>,
        said: Option<&'static str>,
    ) {
        let took = self.arrived.elapsed();
        let (code, bytes) = match response {
            Ok(CallToolResponse::Complete(result)) => (result_code(result), result_size(result)),
            Ok(_) => ("ok".to_owned(), 0),
            Err(error) => (format!("rpc_error {}", error.code.0), 0),
        };
        let known = tools::level(&self.tool).is_some();
        let counted = if known { self.tool.as_str() } else { UNKNOWN_TOOL };
        // Over HTTP the transport counts the call once its answer is written.
        if !self.pending.as_ref().is_some_and(|pending| pending.leave(counted, &code)) {
            metrics.record_call(counted, &code, took);
        }
        let mut line = Map::new();
        line.insert("event".to_owned(), json!("tool"));
        line.insert("tool".to_owned(), json!(crate::error::cut_middle(&self.tool, 100)));
        line.insert("ms".to_owned(), json!(took.as_secs_f64() * 1000.0));
        line.insert("outcome".to_owned(), json!(said.map_or(code, str::to_owned)));
        line.insert("bytes".to_owned(), json!(bytes));
        if let Some(token) = self.token {
            line.insert("token".to_owned(), json!(token));
        }
        if let Some(query) = self.query {
            line.insert("level".to_owned(), json!("debug"));
            line.insert("query".to_owned(), json!(crate::error::cut_middle(&query, 500)));
        }
        log(Value::Object(line));
    }
}

/// `ok`, or the error's code.
fn result_code(result: &CallToolResult) -> String {
    if result.is_error == Some(true) { tools::error_code(result) } else { "ok".to_owned() }
}

/// The result's size: the bytes of its JSON as sent, counted without
/// keeping them.
fn result_size(result: &CallToolResult) -> usize {
    struct Counter(usize);
    impl std::io::Write for Counter {
        fn write(&mut self, bytes: &[u8]) -> std::io::Result<usize> {
            self.0 += bytes.len();
            Ok(bytes.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }
    let mut counter = Counter(0);
    let _ = serde_json::to_writer(&mut counter, result);
    let _ = counter.flush();
    counter.0
}

/// A tool call's timing fields (see [`super::timing`]): `dispatch_ms` from the
/// line read to the handler, `wait_ms` for start-up (`waited_for` says for
/// what), `queue_ms` for a blocking thread, the stages on it (`config_ms`,
/// `files_ms`, the engine's own such as `reload_ms`, `query_ms`,
/// `snippets_ms`, and `render_ms`; `engine_ms` is the call less its
/// rendering), and `resume_ms` back to the async side.
fn breakdown(
    tool: &str,
    dispatch: Option<std::time::Duration>,
    waited: Waited,
    waited_ms: std::time::Duration,
    (queue, stages, finished): (std::time::Duration, Vec<(&'static str, std::time::Duration)>, Instant),
) -> serde_json::Map<String, serde_json::Value> {
    let mut fields = serde_json::Map::new();
    fields.insert("tool".to_owned(), json!(tool));
    if let Some(dispatch) = dispatch {
        fields.insert("dispatch_ms".to_owned(), ms(dispatch));
    }
    fields.insert("wait_ms".to_owned(), ms(waited_ms));
    fields.insert("waited_for".to_owned(), json!(waited.as_str()));
    fields.insert("queue_ms".to_owned(), ms(queue));
    let of = |name: &str| stages.iter().find(|(stage, _)| *stage == name).map(|(_, took)| *took);
    if let Some(invoke) = of("invoke") {
        let render = of("render").unwrap_or_default();
        fields.insert("engine_ms".to_owned(), ms(invoke.saturating_sub(render)));
    }
    for (stage, took) in &stages {
        if *stage != "invoke" {
            fields.insert(format!("{stage}_ms"), ms(*took));
        }
    }
    fields.insert("resume_ms".to_owned(), ms(finished.elapsed()));
    fields
}

/// A successful result the review card shows, with the approval key in its
/// `_meta` (`shown`): hosts hand a result's `_meta` to the view, not to the model.
fn with_card_key(mut result: rmcp::model::CallToolResult, shown: bool) -> rmcp::model::CallToolResult {
    if shown && result.is_error != Some(true) {
        let meta = result.meta.get_or_insert_with(rmcp::model::MetaObject::new);
        meta.0.insert(review::KEY_META.to_owned(), json!({ "token": review::key() }));
    }
    result
}
