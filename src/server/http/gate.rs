//! The gate every request passes before its body is read: Host and Origin,
//! the bearer token and its scope, the rate limit, the body cap, sessions;
//! refusals say what was wrong.

use std::sync::Arc;
use std::time::Duration;

use ::http::{HeaderMap, HeaderValue, Method, StatusCode, header};
use axum::body::Body;
use axum::extract::{Request, State};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use serde_json::json;

use super::in_flight::{IdClaim, IdsInFlight};
use super::limits::{
    BODY_TIMEOUT, BodyError, MAX_BODY_BYTES, RateLimiter, Watched, ending_event, read_capped, timeout_event,
};
use super::origin::{HostAllowList, OriginPattern, host_name};
use super::revocation::{EndsAtRevocation, REVOKED_MESSAGE, Revocations};
use super::serve::Drain;
use super::sessions::{Sessions, is_initialize};
use super::step_up::scope_needed;
use crate::error::cut_middle;
use crate::server::log;
use crate::server::metrics::{Metrics, PendingCount};
use crate::server::oauth::{OAuth, is_oauth_path};
use crate::server::rpc::{
    INVALID_REQUEST, IdField, MessageScan, Reply, duplicate_id, too_many_values, unusable_id_message,
};
use crate::server::tokens::{Scope, TokenStore};

/// Where the metrics are read (by a token of scope `metrics`).
pub(super) const METRICS_PATH: &str = "/metrics";

/// The header that names a Streamable HTTP session.
const HEADER_SESSION_ID: &str = "mcp-session-id";

/// When a request reached the gate: a tool call's latency in the metrics
/// counts from here, as its client's does (body, parsing and the hand-off
/// to the session included).
#[derive(Debug, Clone, Copy)]
pub(crate) struct Arrived(pub(crate) std::time::Instant);

/// Everything the per-request checks need.
pub(super) struct Gate {
    pub(super) tokens: TokenStore,
    /// The `Host` values allowed (rmcp checks them again).
    pub(super) hosts: HostAllowList,
    pub(super) origins: Vec<OriginPattern>,
    pub(super) limiter: RateLimiter,
    pub(super) request_timeout: Duration,
    pub(super) drain: Arc<Drain>,
    pub(super) sessions: Sessions,
    pub(super) in_flight: IdsInFlight,
    /// Ends a revoked token's open streams.
    pub(super) revocations: Revocations,
    /// Where each tool call is counted once its answer is written.
    pub(super) metrics: Arc<Metrics>,
    /// The OAuth endpoints and the access tokens they issued.
    pub(super) oauth: Arc<OAuth>,
}

impl Gate {
    /// The keys of every token and OAuth grant admitted now (sessions of others are closed).
    pub(super) fn live_keys(&self) -> Vec<[u8; 32]> {
        let mut keys = self.tokens.keys();
        keys.extend(self.oauth.keys());
        keys
    }
}

/// The checks in front of the MCP service, in order (see the module docs).
pub(super) async fn guard(State(gate): State<Arc<Gate>>, request: Request, next: Next) -> Response {
    let arrived = Arrived(std::time::Instant::now());
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
    if let Some(host) = request.headers().get(header::HOST).and_then(|h| h.to_str().ok())
        && gate.hosts.allows(host) == Some(false)
    {
        // A tunnel's or proxy's name forgotten at start: say which flag allows it.
        let host = cut_middle(host, 200);
        let fix = format!("--allowed-host {}", host_name(&host));
        log(
            json!({ "event": "http_refused", "status": 403, "why": "host not allowed", "host": host, "fix": fix }),
        );
        return refuse_owned(
            StatusCode::FORBIDDEN,
            format!(
                "the Host `{host}` is not allowed (a protection against DNS rebinding); if clients reach this \
                 server by that name (a tunnel or reverse proxy), start kb-mcp with `{fix}`"
            ),
        );
    }
    if let Some(origin) = request.headers().get(header::ORIGIN) {
        let text = origin.to_str().ok();
        let allowed = text.is_some_and(|o| gate.origins.iter().any(|p| p.matches(o)));
        if !allowed {
            let origin = cut_middle(text.unwrap_or("(not text)"), 200);
            let fix = format!("--allow-origin {origin}");
            log(json!({
                "event": "http_refused", "status": 403, "why": "origin not allowed", "origin": origin, "fix": fix,
            }));
            return refuse_owned(
                StatusCode::FORBIDDEN,
                format!(
                    "the Origin `{origin}` is not allowed; if a web page at that origin should reach this server, \
                     start kb-mcp with `{fix}`"
                ),
            );
        }
    }
    if is_oauth_path(request.uri().path()) {
        // The OAuth endpoints are how a client gets a token: they share one rate limit.
        if gate.limiter.admit(&Arc::from("oauth endpoints"), None).is_err() {
            return refuse(StatusCode::TOO_MANY_REQUESTS, "too many OAuth requests; try again shortly", &[]);
        }
        return next.run(request).await;
    }
    let presented = bearer(request.headers());
    let Some(grant) =
        presented.and_then(|token| gate.tokens.verify(token).or_else(|| gate.oauth.verify(token)))
    else {
        // RFC 6750 §3.1: no error code when no token came; `invalid_token` when a wrong one did.
        let (why, challenge) = match presented {
            None => ("missing token", gate.oauth.challenges.missing()),
            Some(_) => ("unknown token", gate.oauth.challenges.invalid()),
        };
        log(json!({ "event": "http_refused", "status": 401, "why": why }));
        let mut response = refuse(StatusCode::UNAUTHORIZED, "a valid bearer token is required", &[]);
        response.headers_mut().insert(header::WWW_AUTHENTICATE, challenge);
        return response;
    };
    let reads_metrics = request.uri().path() == METRICS_PATH;
    match (grant.scope, reads_metrics) {
        (Scope::Tools(_), false) | (Scope::Metrics, true) => {}
        (Scope::Metrics, false) => {
            log(
                json!({ "event": "http_refused", "status": 403, "why": "metrics token", "token": &*grant.name }),
            );
            return refuse(
                StatusCode::FORBIDDEN,
                "this token's scope is `metrics`: it reads GET /metrics and nothing else; MCP needs a token of scope read, propose or apply",
                &[],
            );
        }
        (Scope::Tools(_), true) => {
            log(
                json!({ "event": "http_refused", "status": 403, "why": "not a metrics token", "token": &*grant.name }),
            );
            return refuse(
                StatusCode::FORBIDDEN,
                "reading /metrics needs a token of scope `metrics`: create one with `kb-mcp token add NAME --scope metrics`",
                &[],
            );
        }
    }
    if let Err(wait) = gate.limiter.admit(&grant.name, grant.limits.rate) {
        log(json!({ "event": "http_refused", "status": 429, "token": &*grant.name }));
        let seconds = wait.as_secs_f64().ceil().max(1.0).to_string();
        let mut response = refuse(StatusCode::TOO_MANY_REQUESTS, "too many requests for this token", &[]);
        if let Ok(value) = HeaderValue::from_str(&seconds) {
            response.headers_mut().insert(header::RETRY_AFTER, value);
        }
        return response;
    }
    if reads_metrics {
        return next.run(request).await;
    }
    let access = match grant.scope {
        Scope::Tools(access) => access,
        Scope::Metrics => unreachable!("a metrics token reaches only /metrics (checked above)"),
    };
    let (mut parts, body) = request.into_parts();
    let bytes = match tokio::time::timeout(BODY_TIMEOUT, read_capped(body, MAX_BODY_BYTES)).await {
        Err(_) => return refuse(StatusCode::REQUEST_TIMEOUT, "the request body took too long", &[]),
        Ok(Err(BodyError::TooLarge)) => return too_large(),
        Ok(Err(BodyError::Broken)) => {
            return refuse(StatusCode::BAD_REQUEST, "the request body broke off", &[]);
        }
        Ok(Ok(bytes)) => bytes,
    };
    // Counted before rmcp builds a tree of the body (a million keys cost hundreds of MiB).
    if parts.method == Method::POST {
        match too_many_values(&bytes) {
            Some(Ok(reply)) => return answer_here(&reply, "too_many_values"),
            Some(Err(why)) => {
                log(json!({ "event": "rpc_dropped", "why": why }));
                return StatusCode::ACCEPTED.into_response();
            }
            None => {}
        }
    }
    if grant.oauth
        && parts.method == Method::POST
        && let Some(needed) = scope_needed(&bytes, access)
    {
        log(
            json!({ "event": "http_refused", "status": 403, "why": "insufficient scope", "token": &*grant.name, "needed": needed.as_str() }),
        );
        let mut response = refuse_owned(
            StatusCode::FORBIDDEN,
            format!("this call needs the scope `{}`; this token has `{}`", needed.as_str(), access.as_str()),
        );
        response.headers_mut().insert(header::WWW_AUTHENTICATE, gate.oauth.challenges.insufficient(needed));
        return response;
    }
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
    let claim = if parts.method == Method::POST {
        match admit_id(&gate.in_flight, session.as_deref(), &bytes) {
            Ok(claim) => claim,
            Err((reply, why)) => return answer_here(&reply, why),
        }
    } else {
        None
    };
    let method = parts.method.clone();
    let revoked = gate.revocations.of(grant.key);
    let timeout = grant.limits.request_timeout_s.map_or(gate.request_timeout, Duration::from_secs);
    parts.extensions.insert(access);
    parts.extensions.insert(arrived);
    let pending = PendingCount::default();
    parts.extensions.insert(pending.clone());
    parts.extensions.insert(grant);
    let timed_out = timeout_event(&bytes);
    let revoked_event = ending_event(&bytes, -32000, REVOKED_MESSAGE);
    let request = Request::from_parts(parts, Body::from(bytes));
    // The standalone GET stream lives as long as the session (or its token): neither counted nor timed.
    if method == Method::GET {
        let response = next.run(request).await;
        if !is_event_stream(&response) {
            return response;
        }
        return response.map(|body| Body::new(EndsAtRevocation::new(body, revoked, None)));
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
    let deadline = now.checked_add(timeout).unwrap_or_else(|| now + Duration::from_secs(365 * 24 * 3600));
    match tokio::time::timeout_at(deadline, next.run(request)).await {
        Ok(response) => {
            if let (Some(opening), Some(id)) =
                (opening, response.headers().get(HEADER_SESSION_ID).and_then(|v| v.to_str().ok()))
            {
                opening.opened(id);
            }
            let is_stream = is_event_stream(&response);
            response.map(|body| {
                let watched = Body::new(Watched {
                    inner: body,
                    deadline: Box::pin(tokio::time::sleep_until(deadline)),
                    last_event: if is_stream { timed_out } else { None },
                    ended: false,
                    _in_flight: in_flight,
                    claim,
                    count: Some((pending, gate.metrics.clone(), arrived.0)),
                });
                if is_stream {
                    Body::new(EndsAtRevocation::new(watched, revoked, revoked_event))
                } else {
                    watched
                }
            })
        }
        Err(_) => {
            // A call still running is counted by its handler when it ends.
            pending.close(&gate.metrics, arrived.0.elapsed());
            log(json!({ "event": "http_timeout", "after_s": timeout.as_secs() }));
            refuse(StatusCode::GATEWAY_TIMEOUT, "the request took too long", &[])
        }
    }
}

/// Whether a response is a stream of server-sent events.
fn is_event_stream(response: &Response) -> bool {
    response
        .headers()
        .get(header::CONTENT_TYPE)
        .is_some_and(|v| v.as_bytes().starts_with(b"text/event-stream"))
}

/// What rmcp would answer wrongly or not at all is answered here: a request
/// whose id rmcp cannot hold (rmcp said 415 in plain text, no id), and one
/// whose id is in flight in its session (see [`super::in_flight`]). Any other
/// request's id is claimed until its answer goes out.
fn admit_id(
    in_flight: &IdsInFlight,
    session: Option<&str>,
    body: &[u8],
) -> Result<Option<IdClaim>, (Reply, &'static str)> {
    let scanned = MessageScan::of(body);
    if !(scanned.object && scanned.closed && scanned.method) {
        return Ok(None);
    }
    let sent = match scanned.id {
        IdField::Absent => return Ok(None),
        IdField::Unusable(what) => {
            return Err((Reply::error(None, INVALID_REQUEST, &unusable_id_message(what)), "bad_id"));
        }
        IdField::Sent(sent) => sent,
    };
    let Some(id) = sent.request_id() else {
        let message = unusable_id_message(sent.json());
        return Err((Reply::error(Some(sent), INVALID_REQUEST, &message), "bad_id"));
    };
    // Without a session (initialize; 2026-07-28 requests) each request is served on its own.
    let Some(session) = session else { return Ok(None) };
    match in_flight.claim(session, id) {
        Some(claim) => Ok(Some(claim)),
        None => Err((duplicate_id(sent), "duplicate_id")),
    }
}

/// A JSON-RPC answer of the gate's own, as JSON (`200`: it answers the
/// request, which clients route by its id; any MCP client reads JSON answers).
fn answer_here(reply: &Reply, why: &str) -> Response {
    reply.log(why);
    let mut response = (StatusCode::OK, reply.line()).into_response();
    response.headers_mut().insert(header::CONTENT_TYPE, HeaderValue::from_static("application/json"));
    response
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
