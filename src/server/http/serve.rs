//! Serving: listening, the connection loop with its header and request
//! timeouts, signals, and the drain that lets requests in flight finish on
//! shutdown.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::time::Duration;

use axum::Router;
use axum::middleware;
use axum::response::IntoResponse;
use hyper_util::rt::{TokioIo, TokioTimer};
use hyper_util::service::TowerToHyperService;
use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;
use rmcp::transport::streamable_http_server::{StreamableHttpServerConfig, StreamableHttpService};
use serde_json::json;
use tokio::net::TcpListener;
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;

use super::gate::{Gate, METRICS_PATH, guard};
use super::in_flight::IdsInFlight;
use super::limits::{MAX_BODY_BYTES, RateLimiter};
use super::options::HttpOptions;
use super::origin::{HostAllowList, LOOPBACK_ORIGINS, OriginPattern, allowed_hosts};
use super::revocation::Revocations;
use super::sessions::{Sessions, sweep_sessions};
use crate::engine::types::Access;
use crate::error::{Error, Result};
use crate::server::oauth::{OAuth, oauth_state_path};
use crate::server::tokens::TokenStore;
use crate::server::{KbServer, ServerOptions, Shared, Vaults, log};

/// How long requests in flight may take to finish once shutdown begins.
const SHUTDOWN_GRACE: Duration = Duration::from_secs(30);

/// How long a client may take to send a request's headers.
const HEADER_TIMEOUT: Duration = Duration::from_secs(10);

/// Serves MCP over Streamable HTTP until SIGINT or SIGTERM.
pub async fn serve_http(options: ServerOptions, http: HttpOptions) -> Result<()> {
    let tokens = TokenStore::open(&http.tokens)?;
    let mut signals = Signals::install()?;
    let listener = TcpListener::bind(http.addr)
        .await
        .map_err(|err| Error::internal(format!("cannot listen on {}: {err}", http.addr)))?;
    let local =
        listener.local_addr().map_err(|err| Error::internal(format!("reading the bound address: {err}")))?;

    let vaults = Vaults::start(&options);
    crate::server::published::spawn(&vaults, "http", Some(local.to_string()));
    let sessions_stop = CancellationToken::new();
    let mut sessions = LocalSessionManager::default();
    sessions.session_config.keep_alive = Some(http.session_idle);
    let sessions = Arc::new(sessions);
    let issuer = http.public_url.clone().unwrap_or_else(|| format!("http://{local}"));
    let public = url::Url::parse(&issuer)
        .map_err(|err| Error::invalid(format!("--public-url `{issuer}` is not a URL: {err}")))?;
    let mut extra_hosts = http.allowed_hosts.clone();
    extra_hosts.extend(public.host_str().map(|h| h.trim_matches(['[', ']']).to_owned()));
    let origins: Vec<String> = LOOPBACK_ORIGINS
        .iter()
        .map(|o| (*o).to_owned())
        .chain(http.allowed_origins.iter().cloned())
        .chain(Some(public.origin().ascii_serialization()).filter(|o| o != "null"))
        .collect();
    let hosts = allowed_hosts(local, &extra_hosts);
    // What the consent page says is granted: the vault's folder, or the names of all.
    let vault_name = match options.vaults.as_slice() {
        [one] => one
            .path
            .file_name()
            .map_or_else(|| one.path.display().to_string(), |name| name.to_string_lossy().into_owned()),
        many => many.iter().map(|vault| vault.name.as_str()).collect::<Vec<_>>().join(", "),
    };
    let oauth = OAuth::new(
        oauth_state_path(&http.tokens),
        &issuer,
        vault_name,
        http.access_token_lifetime.as_secs().max(1),
        http.testing_cimd_root.as_deref(),
    )?;
    let config = StreamableHttpServerConfig::default()
        .with_allowed_hosts(hosts.clone())
        .with_allowed_origins(origins.clone())
        .with_max_request_body_bytes(MAX_BODY_BYTES)
        .with_cancellation_token(sessions_stop.child_token());
    let factory = vaults.clone();
    // The level given here is never used: every HTTP request carries its token's.
    let service = StreamableHttpService::new(
        move || Ok(KbServer::new(factory.clone(), Access::Read)),
        sessions.clone(),
        config,
    );
    let gate = Arc::new(Gate {
        tokens,
        hosts: HostAllowList::new(&hosts),
        origins: origins.iter().filter_map(|o| OriginPattern::parse(o)).collect(),
        limiter: RateLimiter::new(http.rate),
        request_timeout: http.request_timeout,
        drain: Arc::new(Drain::default()),
        sessions: Sessions::new(sessions, http.sessions_per_token, http.session_idle),
        in_flight: IdsInFlight::default(),
        revocations: Revocations::default(),
        metrics: vaults.metrics_handle(),
        oauth: oauth.clone(),
    });
    tokio::spawn(sweep_sessions(gate.clone(), sessions_stop.child_token()));
    let app = Router::new()
        .route_service("/mcp", service)
        .route(METRICS_PATH, axum::routing::get(metrics).with_state(vaults.first().clone()))
        .merge(oauth.routes())
        .layer(middleware::from_fn_with_state(gate.clone(), guard));

    log(json!({
        "event": "start", "transport": "http", "version": env!("CARGO_PKG_VERSION"),
        "tokens": gate.tokens.len(), "rate": http.rate,
        "session_idle_s": http.session_idle.as_secs(), "request_timeout_s": http.request_timeout.as_secs(),
        "sessions_per_token": http.sessions_per_token, "oauth_issuer": issuer,
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

/// `GET /metrics`: the server's metrics in the Prometheus text format (the
/// gate lets only tokens of scope `metrics` this far).
async fn metrics(
    axum::extract::State(shared): axum::extract::State<Arc<Shared>>,
) -> axum::response::Response {
    let text = shared.metrics_prometheus();
    ([(::http::header::CONTENT_TYPE, "text/plain; version=0.0.4; charset=utf-8")], text).into_response()
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

/// Requests in flight, for a graceful shutdown.
#[derive(Default)]
pub(super) struct Drain {
    draining: AtomicBool,
    pub(super) in_flight: AtomicUsize,
    pub(super) idle: tokio::sync::Notify,
}

/// One request in flight; dropping it ends it.
pub(super) struct InFlight(Arc<Drain>);

impl Drop for InFlight {
    fn drop(&mut self) {
        if self.0.in_flight.fetch_sub(1, Ordering::AcqRel) == 1 {
            self.0.idle.notify_waiters();
        }
    }
}

impl Drain {
    pub(super) fn enter(self: &Arc<Self>) -> InFlight {
        self.in_flight.fetch_add(1, Ordering::AcqRel);
        InFlight(self.clone())
    }

    fn start(&self) {
        self.draining.store(true, Ordering::Release);
    }

    pub(super) fn is_draining(&self) -> bool {
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
