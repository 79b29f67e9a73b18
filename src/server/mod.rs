//! The MCP server: rmcp's `ServerHandler` over the tools, resources and prompts.
//!
//! The server answers `initialize` at once and brings the index up to date in
//! the background: a vault that already has an index is served immediately
//! while it catches up (its overview says `fresh: false` until then); a vault
//! indexed for the first time makes tool calls wait, with progress
//! notifications, until the build is done. While running, a debounced file
//! watcher re-syncs the index within about a second of an edit, rename or
//! delete; if watching is impossible, calls re-check the files themselves at
//! most every two seconds. Stdout carries JSON-RPC only; logs are JSON lines on
//! stderr and never contain note text.

mod confirm;
mod http;
mod prompts;
mod resources;
mod stdio;
mod tokens;
mod watch;

pub use http::{
    DEFAULT_RATE, DEFAULT_REQUEST_TIMEOUT_SECS, DEFAULT_SESSION_IDLE_SECS, DEFAULT_SESSIONS_PER_TOKEN,
    HttpOptions, is_loopback, is_valid_origin_pattern, serve_http,
};
pub use tokens::{TokenFile, TokenRecord};

use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CustomRequest, CustomResult, ErrorCode as RpcCode,
    GetPromptRequestParams, GetPromptResponse, Implementation, ListPromptsResult,
    ListResourceTemplatesResult, ListResourcesResult, ListToolsResult, PaginatedRequestParams,
    ProgressNotificationParam, ReadResourceRequestParams, ReadResourceResponse, ServerCapabilities,
    ServerConfig,
};
use rmcp::service::RequestContext;
use rmcp::{ErrorData as McpError, RoleServer, ServerHandler, ServiceExt};
use serde_json::{Value, json};
use tokio::sync::watch as channel;

use crate::engine::{Engine, EngineOptions};
use crate::error::Error;
use crate::tools::{self, Access, CallContext};

/// How the server was asked to run.
#[derive(Debug, Clone)]
pub struct ServerOptions {
    /// The vault folder.
    pub vault: PathBuf,
    /// The index folder (`<vault>/.kb` when `None`).
    pub index_dir: Option<PathBuf>,
    /// The access level of stdio connections.
    pub access: Access,
}

/// Where the engine is in its start-up.
#[derive(Clone)]
enum Readiness {
    /// Opening the vault or building the index for the first time: (done, total) files.
    Starting(usize, usize),
    /// Serving from an existing index while the start-up sync compares it with
    /// the files: calls wait for it a little ([`CATCH_UP_WAIT`]), then answer
    /// with what the index holds and searches say they may be stale.
    CatchingUp(Arc<Engine>),
    /// Serving.
    Ready(Arc<Engine>),
    /// The vault or index could not be opened.
    Failed(Error),
}

/// State shared by every connection of one server process.
pub struct Shared {
    readiness: channel::Receiver<Readiness>,
    /// Set by a call that found start-up failed: start-up tries again at once
    /// (its cause, a full disk say, may be gone), so the server comes back
    /// without a restart.
    retry: AtomicBool,
    /// Whether a file watcher is running; when not, calls re-check the files.
    watching: AtomicBool,
    last_check: std::sync::Mutex<Instant>,
}

/// The longest a call waits for the first index build.
const READY_WAIT: Duration = Duration::from_secs(300);

/// The longest a call waits for the start-up sync of an existing index before
/// it answers from the index as it is (searches then carry `stale`). The sync
/// of an unchanged vault is a walk: about 0.6 s at 100,000 notes
/// (`incremental/walk_1_note` in BENCHMARKS.md).
const CATCH_UP_WAIT: Duration = Duration::from_secs(3);

/// Writes one JSON log line to stderr.
pub fn log(event: Value) {
    let mut line = json!({ "ts": jiff::Timestamp::now().to_string() });
    if let (Value::Object(line), Value::Object(event)) = (&mut line, event) {
        line.extend(event);
    }
    eprintln!("{line}");
}

impl Shared {
    /// Starts opening the vault and syncing the index in the background.
    pub fn start(options: &ServerOptions) -> Arc<Shared> {
        let (sender, readiness) = channel::channel(Readiness::Starting(0, 0));
        let shared = Arc::new(Shared {
            readiness,
            retry: AtomicBool::new(false),
            watching: AtomicBool::new(false),
            last_check: std::sync::Mutex::new(Instant::now()),
        });
        let engine_options =
            EngineOptions { vault: options.vault.clone(), index_dir: options.index_dir.clone() };
        let background = shared.clone();
        std::thread::spawn(move || background.bring_up(&engine_options, sender));
        shared
    }

    fn bring_up(self: &Arc<Self>, options: &EngineOptions, sender: channel::Sender<Readiness>) {
        let mut started = Instant::now();
        let engine = loop {
            let engine = match Engine::open(options) {
                Ok(engine) => {
                    let dir = engine.index().dir().display().to_string();
                    if let Some(reason) = engine.index_repaired() {
                        log(json!({ "event": "index_rebuilt", "dir": dir, "reason": reason }));
                    }
                    if let Some(reason) = engine.index_moved() {
                        log(json!({ "event": "index_location", "dir": dir, "reason": reason }));
                    }
                    if let Some(reason) = engine.index().read_only() {
                        log(json!({ "event": "index_read_only", "dir": dir, "reason": reason }));
                    }
                    Arc::new(engine)
                }
                Err(error) => {
                    log(json!({ "event": "open_failed", "error": error.to_string() }));
                    self.fail_until_retry(&sender, &options.vault, error, "opening the vault again");
                    started = Instant::now();
                    continue;
                }
            };
            // An existing index is served while it catches up (calls wait for that a little).
            let has_index = !engine.catalog().records().is_empty();
            if has_index {
                let _ = sender.send(Readiness::CatchingUp(engine.clone()));
            }
            let progress = |done: usize, total: usize| {
                if !has_index && (done.is_multiple_of(64) || done == total) {
                    let _ = sender.send(Readiness::Starting(done, total));
                }
            };
            match engine.sync(false, Some(&progress)) {
                Ok(report) => {
                    log(json!({
                        "event": "index_synced",
                        "files": report.files, "added": report.added, "changed": report.changed,
                        "removed": report.removed, "full": report.full, "ms": started.elapsed().as_millis() as u64,
                    }));
                    if report.files == 0 {
                        log(json!({ "event": "no_notes", "warning": engine.why_no_notes() }));
                    }
                }
                Err(error) => {
                    log(json!({ "event": "sync_failed", "error": error.to_string() }));
                    if !has_index {
                        self.fail_until_retry(&sender, &options.vault, error, "building the index again");
                        started = Instant::now();
                        continue;
                    }
                }
            }
            break engine;
        };
        // Ready even when the sync failed over an existing index: that index is
        // served, and its searches keep saying they may be stale.
        let _ = sender.send(Readiness::Ready(engine.clone()));
        match engine.recover_proposals(crate::write::Actor::Mcp) {
            Ok(completed) if !completed.is_empty() => {
                log(json!({ "event": "recovered", "proposals": completed }))
            }
            Ok(_) => {}
            Err(error) => log(json!({ "event": "recover_failed", "error": error.to_string() })),
        }
        let watching = watch::spawn(engine);
        self.watching.store(watching, Ordering::Relaxed);
    }

    /// After a failed start-up: waits until `kb.toml` changes or a call asks
    /// to try again; says which (the log event's name).
    fn wait_for_retry(&self, vault: &std::path::Path) -> &'static str {
        let read = || crate::sandbox::read_vault_config(vault).map_err(|error| error.to_string());
        let before = read();
        for tick in 1u64.. {
            std::thread::sleep(Duration::from_millis(100));
            if self.retry.swap(false, Ordering::Relaxed) {
                return "retry_requested";
            }
            if tick.is_multiple_of(5) && read() != before {
                return "config_changed";
            }
        }
        unreachable!("the loop above only ends by returning")
    }

    /// Tells calls that start-up failed with `error`, then waits until it is worth
    /// trying again: an invalid kb.toml is the usual cause (it changed), or a call
    /// asks (a full disk may have been freed meanwhile). Start-up then begins anew.
    fn fail_until_retry(
        &self,
        sender: &channel::Sender<Readiness>,
        vault: &std::path::Path,
        error: Error,
        action: &str,
    ) {
        let _ = sender.send(Readiness::Failed(error));
        let why = self.wait_for_retry(vault);
        log(json!({ "event": why, "action": action }));
        let _ = sender.send(Readiness::Starting(0, 0));
    }

    /// The engine, waiting for start-up and telling the client how far it got.
    async fn engine(&self, context: &RequestContext<RoleServer>) -> Result<Arc<Engine>, Error> {
        let mut readiness = self.readiness.clone();
        let asked = Instant::now();
        let deadline = asked + READY_WAIT;
        let token = context.meta.get_progress_token();
        let mut retried = false;
        loop {
            let state = readiness.borrow_and_update().clone();
            match state {
                Readiness::Ready(engine) => {
                    if asked.elapsed() >= Duration::from_millis(1) {
                        log(
                            json!({ "event": "waited_for_start_up", "ms": asked.elapsed().as_millis() as u64 }),
                        );
                    }
                    return Ok(engine);
                }
                Readiness::CatchingUp(engine) => {
                    let waited = asked.elapsed();
                    if waited >= CATCH_UP_WAIT {
                        log(
                            json!({ "event": "answered_while_catching_up", "waited_ms": waited.as_millis() as u64 }),
                        );
                        return Ok(engine);
                    }
                    if let Ok(Err(_)) =
                        tokio::time::timeout(CATCH_UP_WAIT - waited, readiness.changed()).await
                    {
                        return Ok(engine); // start-up ended without saying more
                    }
                }
                Readiness::Failed(error) if retried => return Err(error),
                Readiness::Failed(_) => {
                    // Start-up failed earlier: ask it to try again (once per call), since
                    // its cause may be gone, and wait for the outcome.
                    retried = true;
                    self.retry.store(true, Ordering::Relaxed);
                    while matches!(*readiness.borrow_and_update(), Readiness::Failed(_)) {
                        if Instant::now() >= deadline
                            || tokio::time::timeout(Duration::from_secs(5), readiness.changed())
                                .await
                                .is_err()
                        {
                            break;
                        }
                    }
                }
                Readiness::Starting(done, total) => {
                    if let Some(token) = &token {
                        let message = if total == 0 {
                            "opening the vault".to_owned()
                        } else {
                            format!("indexing notes: {done} of {total}")
                        };
                        let mut param =
                            ProgressNotificationParam::new(token.clone(), done as f64).with_message(message);
                        if total > 0 {
                            param = param.with_total(total as f64);
                        }
                        let _ = context.peer.notify_progress(param).await;
                    }
                    if Instant::now() >= deadline {
                        return Err(Error::new(
                            crate::error::ErrorCode::IndexUnavailable,
                            format!("the index is still being built ({done} of {total} notes)"),
                        )
                        .with_hint("retry in a minute"));
                    }
                    let _ = tokio::time::timeout(Duration::from_millis(500), readiness.changed()).await;
                }
            }
        }
    }

    /// Without a watcher, re-checks the files before answering, at most every two seconds.
    fn check_files(&self, engine: &Engine) {
        if self.watching.load(Ordering::Relaxed) {
            return;
        }
        let mut last = self.last_check.lock().unwrap_or_else(|p| p.into_inner());
        if last.elapsed() >= Duration::from_secs(2) {
            *last = Instant::now();
            if let Err(error) = engine.sync(false, None) {
                log(json!({ "event": "sync_failed", "error": error.to_string() }));
            }
        }
    }
}

/// The instructions sent in the `initialize` result.
pub const INSTRUCTIONS: &str = "kb-mcp gives you controlled access to the person's Markdown knowledge vault (Obsidian-style notes, often in Chinese and English).
Find: search_knowledge (what notes are about) and search_note_content (text inside notes); then read_note. Explore: get_related_notes, list_tags, list_recent_notes.
Writing is by proposal only, and only the person applies it. Safe order: 1) get_vault_overview; 2) search for existing notes on the topic so you do not duplicate one; 3) list_standards and read the relevant standards; 4) propose_new_note, or propose_note_patch with the base_hash from read_note; 5) stop and ask the person to review the proposal. Never apply a proposal the person has not approved.
Use only paths that tools returned; all paths are vault-relative with forward slashes.";

/// One connection's handler.
#[derive(Clone)]
pub struct KbServer {
    shared: Arc<Shared>,
    access: Access,
}

impl KbServer {
    /// A handler for a connection with `access`.
    pub fn new(shared: Arc<Shared>, access: Access) -> Self {
        KbServer { shared, access }
    }

    /// The access level of this request (HTTP requests carry their token's scope).
    fn access(&self, context: &RequestContext<RoleServer>) -> Access {
        context
            .extensions
            .get::<::http::request::Parts>()
            .and_then(|parts| parts.extensions.get::<Access>())
            .copied()
            .unwrap_or(self.access)
    }

    async fn engine_or_error(&self, context: &RequestContext<RoleServer>) -> Result<Arc<Engine>, McpError> {
        self.shared
            .engine(context)
            .await
            .map_err(|e| McpError::internal_error(e.to_string(), Some(json!({ "code": e.code.as_str() }))))
    }
}

/// Maps an engine error to a JSON-RPC error (for resources and prompts, which have no `isError`).
fn rpc_error(error: &Error) -> McpError {
    use crate::error::ErrorCode::*;
    let data = Some(json!({ "code": error.code.as_str(), "hint": error.hint }));
    match error.code {
        NotFound => McpError::resource_not_found(error.message.clone(), data),
        InvalidArgument | PathDenied | AmbiguousRef | TooLarge | PermissionDenied => {
            McpError::invalid_params(error.message.clone(), data)
        }
        _ => McpError::internal_error(error.message.clone(), data),
    }
}

impl ServerHandler for KbServer {
    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(
            ServerCapabilities::builder().enable_tools().enable_resources().enable_prompts().build(),
        )
        .with_server_info(
            Implementation::new("kb-mcp", env!("CARGO_PKG_VERSION"))
                .with_title("kb-mcp: your Markdown knowledge vault")
                .with_description("Search, read and (by proposal only) extend a local Obsidian-style vault"),
        )
        .with_instructions(INSTRUCTIONS)
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, McpError> {
        Ok(ListToolsResult::with_all_items(tools::list(self.access(&context))))
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, McpError> {
        let started = Instant::now();
        let name = request.name.to_string();
        let access = self.access(&context);
        let responses = request.input_responses.clone();
        let arguments = match tools::admit(&name, access, request.arguments)? {
            Ok(arguments) => arguments,
            Err(refused) => {
                // Not granted (`permission_denied`) or arguments off the schema (`invalid_argument`).
                let outcome = refused
                    .structured_content
                    .as_ref()
                    .and_then(|v| v["error"]["code"].as_str())
                    .unwrap_or("error")
                    .to_owned();
                log(json!({ "event": "tool", "tool": name, "ms": 0, "outcome": outcome }));
                return Ok(refused.into());
            }
        };
        let engine = match self.shared.engine(&context).await {
            Ok(engine) => engine,
            Err(error) => return Ok(tools::error_result(&error).into()),
        };
        if name == "apply_proposal" {
            let id = arguments["proposal_id"].as_str().unwrap_or_default().to_owned();
            match confirm::apply(&engine, &id, responses.as_ref(), &context).await? {
                confirm::Confirmation::Proceed => {}
                confirm::Confirmation::Ask(question) => return Ok(question.into()),
                confirm::Confirmation::Declined => {
                    let error = Error::new(
                        crate::error::ErrorCode::PermissionDenied,
                        format!("the person declined to apply proposal {id}; it stays pending"),
                    )
                    .with_hint("do not retry; ask the person what to change, or leave the proposal for them");
                    log(
                        json!({ "event": "tool", "tool": name, "ms": started.elapsed().as_secs_f64() * 1000.0, "outcome": "declined" }),
                    );
                    return Ok(tools::error_result(&error).into());
                }
            }
        }
        let shared = self.shared.clone();
        let call_context = CallContext { access };
        let tool = name.clone();
        let result = tokio::task::spawn_blocking(move || {
            // The kb.toml on disk is in force before anything is answered.
            if let Err(error) = engine.refresh_config() {
                return Ok(tools::error_result(&error));
            }
            // The propose and apply levels are refused while the inbox is a folder of the person's own.
            if tools::level(&tool) > Some(Access::Read)
                && let Some(error) = engine.inbox_conflict()
            {
                return Ok(tools::error_result(&error));
            }
            shared.check_files(&engine);
            tools::invoke(&engine, call_context, &tool, arguments)
        })
        .await
        .map_err(|e| McpError::internal_error(format!("tool task failed: {e}"), None))?;
        let outcome = match &result {
            Ok(r) if r.is_error == Some(true) => r
                .structured_content
                .as_ref()
                .and_then(|v| v["error"]["code"].as_str())
                .unwrap_or("error")
                .to_owned(),
            Ok(_) => "ok".to_owned(),
            Err(e) => format!("rpc_error {}", e.code.0),
        };
        log(
            json!({ "event": "tool", "tool": name, "ms": started.elapsed().as_secs_f64() * 1000.0, "outcome": outcome }),
        );
        result.map(Into::into)
    }

    async fn list_resources(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListResourcesResult, McpError> {
        Ok(ListResourcesResult::with_all_items(resources::fixed()))
    }

    async fn list_resource_templates(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListResourceTemplatesResult, McpError> {
        Ok(ListResourceTemplatesResult::with_all_items(resources::templates()))
    }

    async fn read_resource(
        &self,
        request: ReadResourceRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<ReadResourceResponse, McpError> {
        let engine = self.engine_or_error(&context).await?;
        let uri = request.uri.clone();
        let result = tokio::task::spawn_blocking(move || {
            engine.refresh_config()?;
            resources::read(&engine, &uri)
        })
        .await
        .map_err(|e| McpError::internal_error(format!("resource task failed: {e}"), None))?;
        result.map(Into::into).map_err(|e| rpc_error(&e))
    }

    async fn list_prompts(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListPromptsResult, McpError> {
        Ok(ListPromptsResult::with_all_items(prompts::list()))
    }

    async fn get_prompt(
        &self,
        request: GetPromptRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<GetPromptResponse, McpError> {
        prompts::get(&request.name, request.arguments.as_ref()).map(Into::into)
    }

    async fn on_custom_request(
        &self,
        request: CustomRequest,
        _context: RequestContext<RoleServer>,
    ) -> Result<CustomResult, McpError> {
        // rmcp hands known methods with malformed params here; they are bad params, not unknown methods.
        match request.method.as_str() {
            "tools/call" | "resources/read" | "prompts/get" | "tools/list" => Err(McpError::invalid_params(
                format!(
                    "malformed params for `{}`: check the request against the MCP schema",
                    request.method
                ),
                None,
            )),
            other => Err(McpError::new(RpcCode::METHOD_NOT_FOUND, format!("unknown method `{other}`"), None)),
        }
    }
}

/// Serves MCP on stdin/stdout until stdin closes.
pub async fn serve_stdio(options: ServerOptions) -> crate::error::Result<()> {
    let shared = Shared::start(&options);
    let server = KbServer::new(shared, options.access);
    log(
        json!({ "event": "start", "transport": "stdio", "access": options.access.as_str(), "version": env!("CARGO_PKG_VERSION") }),
    );
    let (transport, writer) = stdio::transport(tokio::io::stdin(), tokio::io::stdout());
    let reason = match server.serve(transport).await {
        Ok(running) => format!("{:?}", running.waiting().await),
        // stdin closed before a session began (or the client spoke out of turn): not a crash.
        Err(error) => error.to_string(),
    };
    // The transport is gone: the writer ends once the last answers are on stdout.
    let _ = tokio::time::timeout(Duration::from_secs(5), writer).await;
    log(json!({ "event": "stop", "reason": reason }));
    Ok(())
}
