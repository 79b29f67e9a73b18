//! The Streamable HTTP transport: the same server as stdio, at `/mcp`, for
//! clients that reach it over a network (ChatGPT through a tunnel, a reverse
//! proxy with TLS, another machine).
//!
//! rmcp's `StreamableHttpService` speaks the protocol; this module puts a gate
//! in front of it and runs the listener. The gate checks every request, in this
//! order, before the service sees it: the server is not shutting down (503); a
//! declared body size within [`MAX_BODY_BYTES`] (413); the `Origin` header, when
//! a browser sends one, on the allow-list (403: DNS-rebinding protection, as the
//! MCP specification requires); an `Authorization: Bearer` token from the token
//! file (401 with `WWW-Authenticate`, and nothing about the vault); the token's
//! request rate (429 with `Retry-After`); the body itself, read within a time
//! limit and the size cap (408, 413). The token's scope then rides in the
//! request's extensions, where [`super::KbServer`] reads it for `tools/list` and
//! for every `tools/call`. A request that runs past the request timeout gets 504,
//! or, once its answer has begun streaming, a JSON-RPC timeout error (-32001)
//! that ends the stream. rmcp itself checks the `Host` header against the
//! allowed hosts. Headers must arrive within 10 s; sessions expire when idle.
//!
//! Sessions belong to the token that opened them: another token naming a
//! session gets 404, as if it did not exist; one token holds at most
//! `--sessions-per-token` sessions (429 beyond, saying how to end one); a
//! revoked token's sessions, and the event streams open in them, are closed
//! within about half a second (the token file is checked four times a second).
//! `DELETE /mcp` ends a session with 204 (rmcp says 202, which clients such as
//! the official Python SDK take for a failure).
//!
//! Shutdown (SIGINT, SIGTERM) stops accepting connections, answers new requests
//! with 503, lets the requests in flight finish (for up to [`SHUTDOWN_GRACE`],
//! or until a second signal), then ends the sessions and closes the
//! connections. A tool call, apply included, runs on a blocking thread that
//! always completes once started, and the process waits for it; an apply not
//! yet started when the server drains never starts.

use std::collections::HashMap;
use std::net::{IpAddr, SocketAddr};
use std::path::PathBuf;
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};
use std::time::{Duration, Instant};

use ::http::{HeaderMap, HeaderValue, Method, StatusCode, header};
use axum::Router;
use axum::body::{Body, Bytes, HttpBody};
use axum::extract::{Request, State};
use axum::middleware::{self, Next};
use axum::response::{IntoResponse, Response};
use hyper_util::rt::{TokioIo, TokioTimer};
use hyper_util::service::TowerToHyperService;
use rmcp::transport::streamable_http_server::session::SessionManager as _;
use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;
use rmcp::transport::streamable_http_server::{StreamableHttpServerConfig, StreamableHttpService};
use serde_json::json;
use tokio::net::TcpListener;
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;

use super::tokens::{Grant, TokenStore};
use super::{KbServer, ServerOptions, Shared, log};
use crate::error::{Error, Result};
use crate::tools::Access;

/// The largest request body accepted (a proposal's content is capped at 2 MiB by
/// default; JSON around it needs a little more).
const MAX_BODY_BYTES: usize = 4 << 20;
/// How long requests in flight may take to finish once shutdown begins.
const SHUTDOWN_GRACE: Duration = Duration::from_secs(30);
/// How long a client may take to send a request's headers.
const HEADER_TIMEOUT: Duration = Duration::from_secs(10);
/// How long a client may take to send a request's body.
const BODY_TIMEOUT: Duration = Duration::from_secs(30);
/// The header that names a Streamable HTTP session.
const HEADER_SESSION_ID: &str = "mcp-session-id";
/// How often open sessions are checked against the token file and their idle time.
const SWEEP_EVERY: Duration = Duration::from_millis(250);
/// Browser origins always allowed: pages served from this machine.
const LOOPBACK_ORIGINS: [&str; 3] = ["http://localhost:*", "http://127.0.0.1:*", "http://[::1]:*"];
/// `Host` names always allowed.
const LOOPBACK_HOSTS: [&str; 3] = ["localhost", "127.0.0.1", "::1"];

/// Requests per second each token may make by default (bursts of twice that).
pub const DEFAULT_RATE: f64 = 20.0;
/// Seconds an idle session lives by default (30 minutes).
pub const DEFAULT_SESSION_IDLE_SECS: u64 = 30 * 60;
/// Seconds one request may run by default (2 minutes).
pub const DEFAULT_REQUEST_TIMEOUT_SECS: u64 = 120;
/// Sessions one token may hold open at once by default.
pub const DEFAULT_SESSIONS_PER_TOKEN: usize = 32;

/// How the HTTP transport was asked to run.
#[derive(Debug, Clone)]
pub struct HttpOptions {
    /// Where to listen (port 0 picks a free port; the `listening` log line says which).
    pub addr: SocketAddr,
    /// The token file.
    pub tokens: PathBuf,
    /// Browser origins allowed besides the loopback ones (`scheme://host[:port|:*]`).
    pub allowed_origins: Vec<String>,
    /// `Host` header values allowed besides the loopback names and the bound address
    /// (a tunnel's or reverse proxy's public host name).
    pub allowed_hosts: Vec<String>,
    /// Requests per second each token may make on average (bursts of twice that);
    /// 0 turns the limit off.
    pub rate: f64,
    /// How long an idle session lives.
    pub session_idle: Duration,
    /// How long one request may run.
    pub request_timeout: Duration,
    /// How many sessions one token may hold open at once.
    pub sessions_per_token: usize,
}

impl HttpOptions {
    /// The defaults ([`DEFAULT_RATE`], [`DEFAULT_SESSION_IDLE_SECS`],
    /// [`DEFAULT_REQUEST_TIMEOUT_SECS`], [`DEFAULT_SESSIONS_PER_TOKEN`]), which `kb-mcp`'s flags default to as well.
    pub fn new(addr: SocketAddr, tokens: PathBuf) -> Self {
        HttpOptions {
            addr,
            tokens,
            allowed_origins: Vec::new(),
            allowed_hosts: Vec::new(),
            rate: DEFAULT_RATE,
            session_idle: Duration::from_secs(DEFAULT_SESSION_IDLE_SECS),
            request_timeout: Duration::from_secs(DEFAULT_REQUEST_TIMEOUT_SECS),
            sessions_per_token: DEFAULT_SESSIONS_PER_TOKEN,
        }
    }
}

/// Serves MCP over Streamable HTTP until SIGINT or SIGTERM.
pub async fn serve_http(options: ServerOptions, http: HttpOptions) -> Result<()> {
    let tokens = TokenStore::open(&http.tokens)?;
    let mut signals = Signals::install()?;
    let listener = TcpListener::bind(http.addr)
        .await
        .map_err(|err| Error::internal(format!("cannot listen on {}: {err}", http.addr)))?;
    let local =
        listener.local_addr().map_err(|err| Error::internal(format!("reading the bound address: {err}")))?;

    let shared = Shared::start(&options);
    let sessions_stop = CancellationToken::new();
    let mut sessions = LocalSessionManager::default();
    sessions.session_config.keep_alive = Some(http.session_idle);
    let sessions = Arc::new(sessions);
    let origins: Vec<String> = LOOPBACK_ORIGINS
        .iter()
        .map(|o| (*o).to_owned())
        .chain(http.allowed_origins.iter().cloned())
        .collect();
    let config = StreamableHttpServerConfig::default()
        .with_allowed_hosts(allowed_hosts(local, &http.allowed_hosts))
        .with_allowed_origins(origins.clone())
        .with_max_request_body_bytes(MAX_BODY_BYTES)
        .with_cancellation_token(sessions_stop.child_token());
    let factory = shared.clone();
    // The level given here is never used: every HTTP request carries its token's.
    let service = StreamableHttpService::new(
        move || Ok(KbServer::new(factory.clone(), Access::Read)),
        sessions.clone(),
        config,
    );
    let gate = Arc::new(Gate {
        tokens,
        origins: origins.iter().filter_map(|o| OriginPattern::parse(o)).collect(),
        limiter: RateLimiter::new(http.rate),
        request_timeout: http.request_timeout,
        drain: Arc::new(Drain::default()),
        sessions: Sessions::new(sessions, http.sessions_per_token, http.session_idle),
    });
    tokio::spawn(sweep_sessions(gate.clone(), sessions_stop.child_token()));
    let app = Router::new()
        .route_service("/mcp", service)
        .layer(middleware::from_fn_with_state(gate.clone(), guard));

    log(json!({
        "event": "start", "transport": "http", "version": env!("CARGO_PKG_VERSION"),
        "tokens": gate.tokens.len(), "rate": http.rate,
        "session_idle_s": http.session_idle.as_secs(), "request_timeout_s": http.request_timeout.as_secs(),
        "sessions_per_token": http.sessions_per_token,
    }));
    log(json!({ "event": "listening", "addr": local.to_string(), "url": format!("http://{local}/mcp") }));

    let connections = TaskTracker::new();
    let closing = CancellationToken::new();
    let reason = loop {
        tokio::select! {
            reason = signals.next() => break reason,
            accepted = listener.accept() => match accepted {
                Ok((stream, _peer)) => {
                    let _ = stream.set_nodelay(true);
                    let service = TowerToHyperService::new(app.clone());
                    let closing = closing.clone();
                    connections.spawn(async move {
                        let mut builder = hyper::server::conn::http1::Builder::new();
                        builder.timer(TokioTimer::new()).header_read_timeout(HEADER_TIMEOUT);
                        let connection = builder.serve_connection(TokioIo::new(stream), service);
                        tokio::pin!(connection);
                        tokio::select! {
                            _ = connection.as_mut() => {}
                            () = closing.cancelled() => {
                                connection.as_mut().graceful_shutdown();
                                let _ = connection.await;
                            }
                        }
                    });
                }
                Err(error) => {
                    // Out of file descriptors and the like: back off instead of spinning.
                    log(json!({ "event": "accept_failed", "error": error.to_string() }));
                    tokio::time::sleep(Duration::from_millis(100)).await;
                }
            },
        }
    };
    drop(listener);
    gate.drain.start();
    log(json!({ "event": "shutting_down", "signal": reason, "in_flight": gate.drain.in_flight() }));
    // A second signal stops waiting (a tool call already running still completes).
    let finished = tokio::select! {
        finished = gate.drain.wait_idle(SHUTDOWN_GRACE) => finished,
        again = signals.next() => {
            log(json!({ "event": "shutdown_forced", "signal": again, "in_flight": gate.drain.in_flight() }));
            false
        }
    };
    sessions_stop.cancel();
    closing.cancel();
    connections.close();
    let closed = tokio::time::timeout(Duration::from_secs(5), connections.wait()).await.is_ok();
    log(json!({ "event": "stop", "reason": reason, "drained": finished, "connections_closed": closed }));
    Ok(())
}

/// The `Host` values rmcp accepts: loopback names, the bound address, and the extras.
fn allowed_hosts(local: SocketAddr, extra: &[String]) -> Vec<String> {
    let mut hosts: Vec<String> = LOOPBACK_HOSTS.iter().map(|h| (*h).to_owned()).collect();
    if !local.ip().is_unspecified() && !local.ip().is_loopback() {
        hosts.push(local.ip().to_string());
    }
    hosts.extend(extra.iter().cloned());
    hosts
}

/// SIGINT and SIGTERM, installed before the server says it is listening.
struct Signals {
    #[cfg(unix)]
    interrupt: tokio::signal::unix::Signal,
    #[cfg(unix)]
    terminate: tokio::signal::unix::Signal,
}

impl Signals {
    fn install() -> Result<Signals> {
        #[cfg(unix)]
        {
            use tokio::signal::unix::{SignalKind, signal};
            Ok(Signals {
                interrupt: signal(SignalKind::interrupt())
                    .map_err(|err| Error::internal(format!("installing the SIGINT handler: {err}")))?,
                terminate: signal(SignalKind::terminate())
                    .map_err(|err| Error::internal(format!("installing the SIGTERM handler: {err}")))?,
            })
        }
        #[cfg(not(unix))]
        Ok(Signals {})
    }

    async fn next(&mut self) -> &'static str {
        #[cfg(unix)]
        {
            tokio::select! {
                _ = self.interrupt.recv() => "SIGINT",
                _ = self.terminate.recv() => "SIGTERM",
            }
        }
        #[cfg(not(unix))]
        {
            let _ = tokio::signal::ctrl_c().await;
            "ctrl-c"
        }
    }
}

/// Everything the per-request checks need.
struct Gate {
    tokens: TokenStore,
    origins: Vec<OriginPattern>,
    limiter: RateLimiter,
    request_timeout: Duration,
    drain: Arc<Drain>,
    sessions: Sessions,
}

/// The checks in front of the MCP service, in order (see the module docs).
async fn guard(State(gate): State<Arc<Gate>>, request: Request, next: Next) -> Response {
    if gate.drain.is_draining() {
        return refuse(
            StatusCode::SERVICE_UNAVAILABLE,
            "the server is shutting down",
            &[(header::RETRY_AFTER, "5"), (header::CONNECTION, "close")],
        );
    }
    let declared = request
        .headers()
        .get(header::CONTENT_LENGTH)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.parse::<u64>().ok());
    if declared.is_some_and(|n| n > MAX_BODY_BYTES as u64) {
        return too_large();
    }
    if let Some(origin) = request.headers().get(header::ORIGIN) {
        let allowed = origin.to_str().ok().is_some_and(|o| gate.origins.iter().any(|p| p.matches(o)));
        if !allowed {
            log(json!({ "event": "http_refused", "status": 403, "why": "origin not allowed" }));
            return refuse(StatusCode::FORBIDDEN, "this Origin is not allowed", &[]);
        }
    }
    let Some(grant) = bearer(request.headers()).and_then(|token| gate.tokens.verify(token)) else {
        log(json!({ "event": "http_refused", "status": 401, "why": "missing or unknown token" }));
        return refuse(
            StatusCode::UNAUTHORIZED,
            "a valid bearer token is required",
            &[(header::WWW_AUTHENTICATE, "Bearer realm=\"kb-mcp\"")],
        );
    };
    if let Err(wait) = gate.limiter.admit(&grant.name) {
        log(json!({ "event": "http_refused", "status": 429, "token": &*grant.name }));
        let seconds = wait.as_secs_f64().ceil().max(1.0).to_string();
        let mut response = refuse(StatusCode::TOO_MANY_REQUESTS, "too many requests for this token", &[]);
        if let Ok(value) = HeaderValue::from_str(&seconds) {
            response.headers_mut().insert(header::RETRY_AFTER, value);
        }
        return response;
    }
    let (mut parts, body) = request.into_parts();
    let bytes = match tokio::time::timeout(BODY_TIMEOUT, read_capped(body, MAX_BODY_BYTES)).await {
        Err(_) => return refuse(StatusCode::REQUEST_TIMEOUT, "the request body took too long", &[]),
        Ok(Err(BodyError::TooLarge)) => return too_large(),
        Ok(Err(BodyError::Broken)) => {
            return refuse(StatusCode::BAD_REQUEST, "the request body broke off", &[]);
        }
        Ok(Ok(bytes)) => bytes,
    };
    let session = parts.headers.get(HEADER_SESSION_ID).and_then(|v| v.to_str().ok()).map(str::to_owned);
    let opening = match &session {
        Some(id) => {
            if !gate.sessions.admit(id, &grant) {
                log(
                    json!({ "event": "http_refused", "status": 404, "why": "session of another token", "token": &*grant.name }),
                );
                return refuse(StatusCode::NOT_FOUND, "no such session: start a new one (initialize)", &[]);
            }
            None
        }
        None if parts.method == Method::POST && is_initialize(&bytes) => {
            match gate.sessions.reserve(&grant).await {
                Ok(opening) => Some(opening),
                Err(open) => {
                    log(
                        json!({ "event": "http_refused", "status": 429, "why": "session cap", "token": &*grant.name, "sessions": open }),
                    );
                    return refuse_owned(
                        StatusCode::TOO_MANY_REQUESTS,
                        format!(
                            "this token already has {open} open sessions, the most allowed (--sessions-per-token); \
                         end sessions you no longer use (DELETE /mcp with their Mcp-Session-Id) or wait until they expire"
                        ),
                    );
                }
            }
        }
        None => None,
    };
    let method = parts.method.clone();
    parts.extensions.insert(grant.access);
    parts.extensions.insert(grant);
    let timed_out = timeout_event(&bytes);
    let request = Request::from_parts(parts, Body::from(bytes));
    // The standalone GET stream lives as long as the session: neither counted nor timed.
    if method == Method::GET {
        return next.run(request).await;
    }
    if method == Method::DELETE {
        let response = next.run(request).await;
        if !response.status().is_success() {
            return response;
        }
        if let Some(id) = &session {
            gate.sessions.forget(id);
        }
        // rmcp answers 202; clients (the official Python SDK) expect 200 or 204 for an ended session.
        return StatusCode::NO_CONTENT.into_response();
    }
    let in_flight = gate.drain.enter();
    let now = tokio::time::Instant::now();
    // A timeout too far out to add (a library caller's Duration::MAX) means a year.
    let deadline =
        now.checked_add(gate.request_timeout).unwrap_or_else(|| now + Duration::from_secs(365 * 24 * 3600));
    match tokio::time::timeout_at(deadline, next.run(request)).await {
        Ok(response) => {
            if let (Some(opening), Some(id)) =
                (opening, response.headers().get(HEADER_SESSION_ID).and_then(|v| v.to_str().ok()))
            {
                opening.opened(id);
            }
            let is_stream = response
                .headers()
                .get(header::CONTENT_TYPE)
                .is_some_and(|v| v.as_bytes().starts_with(b"text/event-stream"));
            response.map(|body| {
                Body::new(Watched {
                    inner: body,
                    deadline: Box::pin(tokio::time::sleep_until(deadline)),
                    last_event: if is_stream { timed_out } else { None },
                    ended: false,
                    _in_flight: in_flight,
                })
            })
        }
        Err(_) => {
            log(json!({ "event": "http_timeout", "after_s": gate.request_timeout.as_secs() }));
            refuse(StatusCode::GATEWAY_TIMEOUT, "the request took too long", &[])
        }
    }
}

/// The token of an `Authorization: Bearer` header.
fn bearer(headers: &HeaderMap) -> Option<&str> {
    let value = headers.get(header::AUTHORIZATION)?.to_str().ok()?;
    let (scheme, token) = value.split_once(' ')?;
    scheme.eq_ignore_ascii_case("bearer").then(|| token.trim())
}

/// A short plain-text refusal: never anything about the vault.
fn refuse(
    status: StatusCode,
    message: &'static str,
    headers: &[(header::HeaderName, &'static str)],
) -> Response {
    let mut response = (status, format!("{message}\n")).into_response();
    for (name, value) in headers {
        response.headers_mut().insert(name.clone(), HeaderValue::from_static(value));
    }
    response
}

/// A refusal whose text is built at run time (never anything about the vault).
fn refuse_owned(status: StatusCode, message: String) -> Response {
    (status, format!("{message}\n")).into_response()
}

fn too_large() -> Response {
    log(json!({ "event": "http_refused", "status": 413 }));
    refuse(StatusCode::PAYLOAD_TOO_LARGE, "the request body is larger than 4 MiB", &[])
}

enum BodyError {
    TooLarge,
    Broken,
}

/// Reads a whole body, stopping as soon as it passes `limit` bytes.
async fn read_capped(mut body: Body, limit: usize) -> Result<Bytes, BodyError> {
    let mut collected: Vec<u8> = Vec::new();
    while let Some(frame) = std::future::poll_fn(|cx| Pin::new(&mut body).poll_frame(cx)).await {
        let frame = frame.map_err(|_| BodyError::Broken)?;
        if let Ok(data) = frame.into_data() {
            if collected.len() + data.len() > limit {
                return Err(BodyError::TooLarge);
            }
            collected.extend_from_slice(&data);
        }
    }
    Ok(Bytes::from(collected))
}

/// For a JSON-RPC request, the server-sent event that ends its stream when it
/// runs out of time: an error response with the request's id, so the client
/// gets an answer instead of a broken stream (-32001, "request timed out", as
/// MCP SDKs call it).
fn timeout_event(body: &[u8]) -> Option<Bytes> {
    let message: serde_json::Value = serde_json::from_slice(body).ok()?;
    let id = message.get("id").filter(|_| message.get("method").is_some())?;
    let error = json!({
        "jsonrpc": "2.0",
        "id": id,
        "error": { "code": -32001, "message": "the request timed out on the server; it may still complete" },
    });
    Some(Bytes::from(format!("event: message\ndata: {error}\n\n")))
}

/// A response body that counts as in flight until it ends, and ends at the
/// deadline: with a timeout error event when it is a stream answering a request,
/// else by breaking off.
struct Watched {
    inner: Body,
    deadline: Pin<Box<tokio::time::Sleep>>,
    last_event: Option<Bytes>,
    ended: bool,
    _in_flight: InFlight,
}

impl HttpBody for Watched {
    type Data = Bytes;
    type Error = axum::Error;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<http_body::Frame<Bytes>, axum::Error>>> {
        if self.ended {
            return Poll::Ready(None);
        }
        match Pin::new(&mut self.inner).poll_frame(cx) {
            Poll::Pending => {
                if self.deadline.as_mut().poll(cx).is_ready() {
                    log(json!({ "event": "http_timeout", "while": "streaming" }));
                    self.ended = true;
                    match self.last_event.take() {
                        Some(event) => Poll::Ready(Some(Ok(http_body::Frame::data(event)))),
                        None => Poll::Ready(Some(Err(axum::Error::new("the request took too long")))),
                    }
                } else {
                    Poll::Pending
                }
            }
            ready => ready,
        }
    }

    fn is_end_stream(&self) -> bool {
        self.ended || self.inner.is_end_stream()
    }

    fn size_hint(&self) -> http_body::SizeHint {
        self.inner.size_hint()
    }
}

/// Whether a request body is a JSON-RPC `initialize` request (the one that opens a session).
fn is_initialize(body: &[u8]) -> bool {
    serde_json::from_slice::<serde_json::Value>(body)
        .is_ok_and(|message| message.get("method").and_then(|m| m.as_str()) == Some("initialize"))
}

/// The sessions opened through the gate: which token opened each, and when it
/// was last used. A session answers only to the token that opened it; a token
/// holds at most `cap` sessions; a revoked token's sessions (and with them their
/// open event streams) are closed by [`sweep_sessions`] within a sweep of the
/// token file noticing, and idle ones are closed after `idle`.
struct Sessions {
    manager: Arc<LocalSessionManager>,
    cap: usize,
    idle: Duration,
    state: Mutex<SessionTable>,
}

#[derive(Default)]
struct SessionTable {
    open: HashMap<String, SessionEntry>,
    /// Initialize requests under way, per token key: they count against the cap.
    opening: HashMap<[u8; 32], usize>,
}

struct SessionEntry {
    owner: [u8; 32],
    name: Arc<str>,
    last_used: Instant,
}

/// A slot reserved for a session being opened; released unless [`Opening::opened`] fills it.
struct Opening<'a> {
    sessions: &'a Sessions,
    owner: [u8; 32],
    name: Arc<str>,
}

impl Opening<'_> {
    fn opened(self, id: &str) {
        let mut table = self.sessions.table();
        table.open.insert(
            id.to_owned(),
            SessionEntry { owner: self.owner, name: self.name.clone(), last_used: Instant::now() },
        );
        // Dropping `self` then releases the reservation (counting it twice for a moment is
        // on the safe side of the cap).
    }
}

impl Drop for Opening<'_> {
    fn drop(&mut self) {
        drop_opening(&mut self.sessions.table(), &self.owner);
    }
}

fn drop_opening(table: &mut SessionTable, owner: &[u8; 32]) {
    if let Some(count) = table.opening.get_mut(owner) {
        *count -= 1;
        if *count == 0 {
            table.opening.remove(owner);
        }
    }
}

impl Sessions {
    fn new(manager: Arc<LocalSessionManager>, cap: usize, idle: Duration) -> Sessions {
        Sessions { manager, cap: cap.max(1), idle, state: Mutex::new(SessionTable::default()) }
    }

    fn table(&self) -> std::sync::MutexGuard<'_, SessionTable> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Whether `grant` may use session `id`: any session it opened, and sessions the
    /// gate does not know (rmcp answers those with 404).
    fn admit(&self, id: &str, grant: &Grant) -> bool {
        match self.table().open.get_mut(id) {
            Some(entry) if entry.owner == grant.key => {
                entry.last_used = Instant::now();
                true
            }
            Some(_) => false,
            None => true,
        }
    }

    /// Reserves a session for `grant`, or says how many it already has open.
    async fn reserve(&self, grant: &Grant) -> Result<Opening<'_>, usize> {
        // Sessions rmcp has already ended no longer count.
        let mine: Vec<String> = self
            .table()
            .open
            .iter()
            .filter(|(_, e)| e.owner == grant.key)
            .map(|(id, _)| id.clone())
            .collect();
        if mine.len() >= self.cap {
            for id in mine {
                if !self.manager.has_session(&Arc::from(id.as_str())).await.unwrap_or(false) {
                    self.table().open.remove(&id);
                }
            }
        }
        let mut table = self.table();
        let open = table.open.values().filter(|e| e.owner == grant.key).count()
            + table.opening.get(&grant.key).copied().unwrap_or(0);
        if open >= self.cap {
            return Err(open);
        }
        *table.opening.entry(grant.key).or_default() += 1;
        Ok(Opening { sessions: self, owner: grant.key, name: grant.name.clone() })
    }

    /// Drops a session the client ended.
    fn forget(&self, id: &str) {
        self.table().open.remove(id);
    }

    /// Closes the sessions of tokens no longer admitted and the ones idle too long.
    async fn sweep(&self, tokens: &TokenStore) {
        let live = tokens.keys();
        let mut closing: Vec<(String, Arc<str>, &'static str)> = Vec::new();
        self.table().open.retain(|id, entry| {
            let why = if !live.contains(&entry.owner) {
                "token revoked"
            } else if entry.last_used.elapsed() > self.idle {
                "idle"
            } else {
                return true;
            };
            closing.push((id.clone(), entry.name.clone(), why));
            false
        });
        for (id, name, why) in closing {
            // Logged first, so the line is there by the time the client sees its stream end.
            if why != "idle" {
                log(json!({ "event": "session_closed", "token": &*name, "why": why }));
            }
            let _ = self.manager.close_session(&Arc::from(id.as_str())).await;
        }
    }
}

/// Every [`SWEEP_EVERY`], closes the sessions of revoked tokens and idle ones.
async fn sweep_sessions(gate: Arc<Gate>, stop: CancellationToken) {
    let mut ticks = tokio::time::interval(SWEEP_EVERY);
    ticks.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        tokio::select! {
            _ = ticks.tick() => gate.sessions.sweep(&gate.tokens).await,
            () = stop.cancelled() => return,
        }
    }
}

/// Requests in flight, for a graceful shutdown.
#[derive(Default)]
struct Drain {
    draining: AtomicBool,
    in_flight: AtomicUsize,
    idle: tokio::sync::Notify,
}

/// One request in flight; dropping it ends it.
struct InFlight(Arc<Drain>);

impl Drop for InFlight {
    fn drop(&mut self) {
        if self.0.in_flight.fetch_sub(1, Ordering::AcqRel) == 1 {
            self.0.idle.notify_waiters();
        }
    }
}

impl Drain {
    fn enter(self: &Arc<Self>) -> InFlight {
        self.in_flight.fetch_add(1, Ordering::AcqRel);
        InFlight(self.clone())
    }

    fn start(&self) {
        self.draining.store(true, Ordering::Release);
    }

    fn is_draining(&self) -> bool {
        self.draining.load(Ordering::Acquire)
    }

    fn in_flight(&self) -> usize {
        self.in_flight.load(Ordering::Acquire)
    }

    /// Waits until no request is in flight, for at most `grace`; true when none is.
    async fn wait_idle(&self, grace: Duration) -> bool {
        let deadline = tokio::time::Instant::now() + grace;
        loop {
            let notified = self.idle.notified();
            tokio::pin!(notified);
            notified.as_mut().enable();
            if self.in_flight() == 0 {
                return true;
            }
            if tokio::time::timeout_at(deadline, notified).await.is_err() {
                return self.in_flight() == 0;
            }
        }
    }
}

/// A token bucket per token name.
struct RateLimiter {
    /// Tokens added per second (0: no limit).
    rate: f64,
    burst: f64,
    buckets: Mutex<HashMap<Arc<str>, Bucket>>,
}

struct Bucket {
    level: f64,
    updated: Instant,
}

impl RateLimiter {
    fn new(rate: f64) -> Self {
        let rate = if rate.is_finite() && rate > 0.0 { rate } else { 0.0 };
        RateLimiter { rate, burst: (2.0 * rate).max(1.0), buckets: Mutex::new(HashMap::new()) }
    }

    /// Admits one request by `name`, or says how long to wait.
    fn admit(&self, name: &Arc<str>) -> Result<(), Duration> {
        if self.rate == 0.0 {
            return Ok(());
        }
        let now = Instant::now();
        let mut buckets = self.buckets.lock().unwrap_or_else(|p| p.into_inner());
        let bucket = buckets.entry(name.clone()).or_insert(Bucket { level: self.burst, updated: now });
        let refill = now.duration_since(bucket.updated).as_secs_f64() * self.rate;
        bucket.level = (bucket.level + refill).min(self.burst);
        bucket.updated = now;
        if bucket.level >= 1.0 {
            bucket.level -= 1.0;
            Ok(())
        } else {
            // A wait too long to represent (a tiny rate from a library caller) is capped at a day.
            Err(Duration::try_from_secs_f64((1.0 - bucket.level) / self.rate)
                .unwrap_or(Duration::from_secs(86_400))
                .min(Duration::from_secs(86_400)))
        }
    }
}

/// An allowed browser origin: `scheme://host[:port]`, or `:*` for any port.
#[derive(Debug, Clone, PartialEq, Eq)]
struct OriginPattern {
    scheme: String,
    host: String,
    /// `None`: any port.
    port: Option<u16>,
}

impl OriginPattern {
    fn parse(text: &str) -> Option<OriginPattern> {
        let text = text.trim().trim_end_matches('/').to_ascii_lowercase();
        if let Some(base) = text.strip_suffix(":*") {
            let (scheme, host) = Self::split(base)?;
            return Some(OriginPattern { scheme, host, port: None });
        }
        let (scheme, host, port) = Self::parse_origin(&text)?;
        Some(OriginPattern { scheme, host, port: Some(port) })
    }

    /// `scheme://host[:port]` with the scheme's default port filled in.
    fn parse_origin(text: &str) -> Option<(String, String, u16)> {
        let (scheme, authority) = Self::split(text)?;
        let (host, port) = match authority.rsplit_once(':') {
            Some((host, port)) if !port.contains(']') => (host.to_owned(), port.parse().ok()?),
            _ => {
                let default = match scheme.as_str() {
                    "http" => 80,
                    "https" => 443,
                    _ => return None,
                };
                (authority, default)
            }
        };
        Some((scheme, host, port))
    }

    fn split(text: &str) -> Option<(String, String)> {
        let (scheme, rest) = text.split_once("://")?;
        if scheme.is_empty() || rest.is_empty() || rest.contains('/') {
            return None;
        }
        Some((scheme.to_owned(), rest.to_owned()))
    }

    fn matches(&self, origin: &str) -> bool {
        let origin = origin.trim().to_ascii_lowercase();
        let Some((scheme, host, port)) = Self::parse_origin(&origin) else { return false };
        scheme == self.scheme && host == self.host && self.port.is_none_or(|p| p == port)
    }
}

/// Whether `text` is a valid allowed-origin entry: `scheme://host[:port]` or
/// `scheme://host:*` (any port).
pub fn is_valid_origin_pattern(text: &str) -> bool {
    OriginPattern::parse(text).is_some()
}

/// Whether an address is on this machine only.
pub fn is_loopback(ip: IpAddr) -> bool {
    match ip {
        IpAddr::V4(v4) => v4.is_loopback(),
        IpAddr::V6(v6) => v6.is_loopback() || v6.to_ipv4_mapped().is_some_and(|v4| v4.is_loopback()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn origins_match_scheme_host_and_port() {
        let patterns: Vec<OriginPattern> =
            ["http://localhost:*", "https://chat.example.com", "http://[::1]:*"]
                .iter()
                .filter_map(|p| OriginPattern::parse(p))
                .collect();
        let allowed = |o: &str| patterns.iter().any(|p| p.matches(o));
        assert!(allowed("http://localhost:3000"));
        assert!(allowed("http://LOCALHOST"));
        assert!(allowed("https://chat.example.com"));
        assert!(allowed("https://chat.example.com:443"));
        assert!(allowed("http://[::1]:8080"));
        assert!(!allowed("https://chat.example.com:8443"));
        assert!(!allowed("http://chat.example.com"));
        assert!(!allowed("https://localhost:3000"));
        assert!(!allowed("http://localhost.evil.com"));
        assert!(!allowed("null"));
        assert!(!allowed("http://evil.com"));
    }

    #[test]
    fn the_bucket_allows_a_burst_then_asks_to_wait() {
        let limiter = RateLimiter::new(1.0);
        let name: Arc<str> = Arc::from("t");
        assert!(limiter.admit(&name).is_ok());
        assert!(limiter.admit(&name).is_ok());
        let wait = limiter.admit(&name).unwrap_err();
        assert!(wait > Duration::ZERO && wait <= Duration::from_secs(1));
        assert!(limiter.admit(&Arc::from("other")).is_ok(), "buckets are per token");
        assert!(RateLimiter::new(0.0).admit(&name).is_ok());
    }
}
