//! The review page: `kb-index review` serves the review view on loopback,
//! with the pending proposals, each one's review, and Apply and Reject.
//!
//! It is safe to leave open. It listens on 127.0.0.1 only and answers only
//! requests whose `Host` is that address (or `localhost`) with its port, so a
//! page elsewhere cannot reach it by rebinding a name. The URL printed (and
//! opened with `--open`) carries a one-time secret in its fragment, which never
//! leaves the browser but in the page's first POST: exchanged once for a
//! session cookie (`HttpOnly`, `SameSite=Strict`) and a per-page token. Every
//! read needs the cookie; every change is a POST needing the cookie, the
//! page's token in `X-KB-Token` and the page's own `Origin`. Nothing else
//! touches the vault, and what Apply does is exactly `kb-index inbox apply`
//! (the audit line says `by: cli`, `via: review_page`).

use std::collections::HashMap;
use std::net::{Ipv4Addr, SocketAddr};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use axum::Router;
use axum::body::Bytes;
use axum::extract::{Path, RawQuery, Request, State};
use axum::http::{HeaderMap, HeaderValue, Method, StatusCode, header};
use axum::middleware::{self, Next};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use serde_json::{Value, json};

use crate::engine::Engine;
use crate::engine::types::{Actor, ApplyArgs, ListProposalsArgs};
use crate::error::{Error, ErrorCode, Result};

/// The cookie naming a browser's session.
const SESSION_COOKIE: &str = "kb_review_session";

/// The header carrying the page's token on every change.
const TOKEN_HEADER: &str = "x-kb-token";

/// Page tokens kept per session (one per page load; the oldest goes first).
const TOKENS_PER_SESSION: usize = 16;

/// The largest request body accepted (a rejection's reason is the largest).
const BODY_MAX_BYTES: usize = 64 * 1024;

/// The page's policy: its own inline script and style, data images, fetches
/// to itself; no frames, forms, plugins or base changes.
const CONTENT_SECURITY_POLICY: &str = "default-src 'none'; script-src 'unsafe-inline'; \
    style-src 'unsafe-inline'; img-src data:; connect-src 'self'; base-uri 'none'; \
    form-action 'none'; frame-ancestors 'none'";

/// A running review page's state.
struct Page {
    engine: Arc<Engine>,
    /// The port it listens on (the `Host` and `Origin` it accepts name it).
    port: u16,
    /// The one-time secret of the URL printed; `None` once used.
    secret: Mutex<Option<String>>,
    /// Sessions by cookie value, each with the page tokens it was given.
    sessions: Mutex<HashMap<String, Vec<String>>>,
    /// When the index last caught up with the files (a review judges the
    /// links it breaks on the index).
    synced: Mutex<Option<Instant>>,
}

/// How stale the index may be when a review is computed.
const SYNC_EVERY: Duration = Duration::from_secs(3);

impl Page {
    /// Brings the index up to date with the files, at most every [`SYNC_EVERY`].
    fn catch_up(&self) -> Result<()> {
        let mut synced = self.synced.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        if synced.is_none_or(|at| at.elapsed() >= SYNC_EVERY) {
            self.engine.sync(false, None)?;
            *synced = Some(Instant::now());
        }
        Ok(())
    }
}

/// A review page bound to a port, ready to serve.
pub struct ReviewPage {
    listener: tokio::net::TcpListener,
    page: Arc<Page>,
    url: String,
}

impl ReviewPage {
    /// Binds 127.0.0.1:`port` (0: a free port) for `engine`'s vault.
    pub async fn bind(engine: Arc<Engine>, port: u16) -> Result<ReviewPage> {
        let listener = tokio::net::TcpListener::bind(SocketAddr::from((Ipv4Addr::LOCALHOST, port)))
            .await
            .map_err(|err| {
                Error::invalid(format!("cannot listen on 127.0.0.1:{port}: {err}"))
                    .with_hint("choose another --port, or leave it out for a free one")
            })?;
        let port = listener.local_addr().map_err(|err| Error::internal(err.to_string()))?.port();
        let secret = random_hex()?;
        let url = format!("http://127.0.0.1:{port}/#secret={secret}");
        let page = Arc::new(Page {
            engine,
            port,
            secret: Mutex::new(Some(secret)),
            sessions: Mutex::new(HashMap::new()),
            synced: Mutex::new(None),
        });
        Ok(ReviewPage { listener, page, url })
    }

    /// The URL to open: the page, with its one-time secret.
    pub fn url(&self) -> &str {
        &self.url
    }

    /// Serves until `shutdown` completes.
    pub async fn serve(self, shutdown: impl Future<Output = ()> + Send + 'static) -> Result<()> {
        let router = Router::new()
            .route("/", get(view))
            .route("/api/session", post(session))
            .route("/api/proposals", get(proposals))
            .route("/api/proposals/{id}", get(review))
            .route("/api/proposals/{id}/apply", post(apply))
            .route("/api/proposals/{id}/reject", post(reject))
            .fallback(|| async { refusal(StatusCode::NOT_FOUND, "not_found", "no such page") })
            .layer(middleware::from_fn_with_state(self.page.clone(), guard))
            .with_state(self.page);
        axum::serve(self.listener, router)
            .with_graceful_shutdown(shutdown)
            .await
            .map_err(|err| Error::internal(format!("the review page stopped: {err}")))
    }
}

/// 32 random bytes as hex, or the error saying there is no randomness.
fn random_hex() -> Result<String> {
    super::random_hex().ok_or_else(|| Error::internal("no randomness for the page's secrets"))
}

/// An error answer: `{"error": {code, message}}` with `status`.
fn refusal(status: StatusCode, code: &str, message: &str) -> Response {
    (status, axum::Json(json!({ "error": { "code": code, "message": message } }))).into_response()
}

/// An engine error as an answer, with the status its code means.
fn failure(error: &Error) -> Response {
    let status = match error.code {
        ErrorCode::NotFound | ErrorCode::ProposalNotFound => StatusCode::NOT_FOUND,
        ErrorCode::InvalidArgument | ErrorCode::PathDenied | ErrorCode::TooLarge => StatusCode::BAD_REQUEST,
        ErrorCode::PermissionDenied => StatusCode::FORBIDDEN,
        ErrorCode::StaleBase
        | ErrorCode::ProposalNotPending
        | ErrorCode::ProposalTampered
        | ErrorCode::TargetExists
        | ErrorCode::Conflict => StatusCode::CONFLICT,
        _ => StatusCode::INTERNAL_SERVER_ERROR,
    };
    (status, axum::Json(error.to_contract_json())).into_response()
}

/// Every request: a loopback `Host` naming this port, and an `Origin` (when
/// sent, and always on a POST) that is this page's.
fn foreign(page: &Page, request: &Request) -> Option<Response> {
    let headers = request.headers();
    let ours = |value: &str, scheme: &str| {
        [format!("{scheme}127.0.0.1:{}", page.port), format!("{scheme}localhost:{}", page.port)]
            .iter()
            .any(|allowed| value.eq_ignore_ascii_case(allowed))
    };
    let host = headers.get(header::HOST).and_then(|v| v.to_str().ok()).unwrap_or_default();
    if !ours(host, "") {
        return Some(refusal(
            StatusCode::FORBIDDEN,
            "permission_denied",
            "this page answers only its own address",
        ));
    }
    match headers.get(header::ORIGIN).map(|v| v.to_str().unwrap_or_default()) {
        Some(origin) if !ours(origin, "http://") => Some(refusal(
            StatusCode::FORBIDDEN,
            "permission_denied",
            "a request from another site is refused",
        )),
        None if !matches!(*request.method(), Method::GET | Method::HEAD) => {
            Some(refusal(StatusCode::FORBIDDEN, "permission_denied", "a change must come from the page"))
        }
        _ => None,
    }
}

/// Refuses a [`foreign`] request; answers the others with headers that keep
/// the page out of caches, frames and other sites' sniffing.
async fn guard(State(page): State<Arc<Page>>, request: Request, next: Next) -> Response {
    if let Some(refused) = foreign(&page, &request) {
        // Read what was sent first: closing on an unread body resets the
        // connection, and the client may lose the answer with it.
        let _ = axum::body::to_bytes(request.into_body(), BODY_MAX_BYTES).await;
        return refused;
    }
    let mut response = next.run(request).await;
    let headers = response.headers_mut();
    headers.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
    headers.insert(header::X_CONTENT_TYPE_OPTIONS, HeaderValue::from_static("nosniff"));
    headers.insert(header::REFERRER_POLICY, HeaderValue::from_static("no-referrer"));
    headers.insert(header::X_FRAME_OPTIONS, HeaderValue::from_static("DENY"));
    response
}

/// `GET /`: the view. It holds no data; it asks for everything after.
async fn view() -> Response {
    (
        [
            (header::CONTENT_TYPE, HeaderValue::from_static("text/html; charset=utf-8")),
            (header::CONTENT_SECURITY_POLICY, HeaderValue::from_static(CONTENT_SECURITY_POLICY)),
        ],
        super::VIEW_HTML,
    )
        .into_response()
}

/// The session a request's cookie names, if it is one of ours.
fn session_of(page: &Page, headers: &HeaderMap) -> Option<String> {
    let cookies = headers.get_all(header::COOKIE).iter().filter_map(|v| v.to_str().ok());
    let value = cookies
        .flat_map(|line| line.split(';'))
        .filter_map(|pair| pair.trim().split_once('='))
        .find(|(name, _)| *name == SESSION_COOKIE)
        .map(|(_, value)| value.to_owned())?;
    let sessions = page.sessions.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
    sessions.keys().find(|known| super::same_secret(known, &value)).cloned()
}

/// `POST /api/session` `{"secret"?}`: the URL's secret, once, makes a
/// session (its cookie set); a session's cookie alone gets the page another
/// token. Answers `{"token"}`.
async fn session(State(page): State<Arc<Page>>, headers: HeaderMap, body: Bytes) -> Response {
    let asked: Value = serde_json::from_slice(&body).unwrap_or(Value::Null);
    let offered = asked.get("secret").and_then(Value::as_str);
    let mut cookie = None;
    let session = match (offered, session_of(&page, &headers)) {
        (Some(offered), _) => {
            let mut secret = page.secret.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
            if !secret.as_deref().is_some_and(|secret| super::same_secret(secret, offered)) {
                return refusal(
                    StatusCode::UNAUTHORIZED,
                    "permission_denied",
                    "this link was already used or is not this page's: run `kb-index review` again",
                );
            }
            *secret = None;
            let Ok(id) = random_hex() else {
                return refusal(StatusCode::INTERNAL_SERVER_ERROR, "internal", "no randomness");
            };
            cookie = Some(id.clone());
            id
        }
        (None, Some(session)) => session,
        (None, None) => {
            return refusal(
                StatusCode::UNAUTHORIZED,
                "permission_denied",
                "open the link `kb-index review` printed (it holds a one-time secret)",
            );
        }
    };
    let Ok(token) = random_hex() else {
        return refusal(StatusCode::INTERNAL_SERVER_ERROR, "internal", "no randomness");
    };
    {
        let mut sessions = page.sessions.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        let tokens = sessions.entry(session).or_default();
        tokens.push(token.clone());
        if tokens.len() > TOKENS_PER_SESSION {
            tokens.remove(0);
        }
    }
    let mut response = axum::Json(json!({ "token": token })).into_response();
    if let Some(cookie) = cookie
        && let Ok(value) =
            HeaderValue::from_str(&format!("{SESSION_COOKIE}={cookie}; HttpOnly; SameSite=Strict; Path=/"))
    {
        response.headers_mut().insert(header::SET_COOKIE, value);
    }
    response
}

/// The refusal of a request that may not read (`change`: false) or change
/// (true); `None` when it may: it needs a session, and for a change the page
/// token of that session.
fn refused(page: &Page, headers: &HeaderMap, change: bool) -> Option<Response> {
    let Some(session) = session_of(page, headers) else {
        return Some(refusal(
            StatusCode::UNAUTHORIZED,
            "permission_denied",
            "no session: open the link `kb-index review` printed",
        ));
    };
    if !change {
        return None;
    }
    let token = headers.get(TOKEN_HEADER).and_then(|v| v.to_str().ok()).unwrap_or_default();
    let sessions = page.sessions.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
    let known =
        sessions.get(&session).is_some_and(|tokens| tokens.iter().any(|t| super::same_secret(t, token)));
    (!known).then(|| refusal(StatusCode::FORBIDDEN, "permission_denied", "a change needs the page's token"))
}

/// Runs an engine call off the async threads and answers with its JSON.
async fn answer<T: serde::Serialize + Send + 'static>(
    page: Arc<Page>,
    call: impl FnOnce(&Page) -> Result<T> + Send + 'static,
) -> Response {
    match tokio::task::spawn_blocking(move || call(&page)).await {
        Ok(Ok(value)) => axum::Json(value).into_response(),
        Ok(Err(error)) => failure(&error),
        Err(err) => refusal(StatusCode::INTERNAL_SERVER_ERROR, "internal", &err.to_string()),
    }
}

/// `GET /api/proposals`: the pending proposals, newest first.
async fn proposals(State(page): State<Arc<Page>>, headers: HeaderMap) -> Response {
    if let Some(refused) = refused(&page, &headers, false) {
        return refused;
    }
    answer(page, |page| page.engine.list_proposals(&ListProposalsArgs { status: None, limit: Some(100) }))
        .await
}

/// `GET /api/proposals/{id}?file_offset=N&file_limit=M`: one page of a review.
async fn review(
    State(page): State<Arc<Page>>,
    Path(id): Path<String>,
    RawQuery(query): RawQuery,
    headers: HeaderMap,
) -> Response {
    if let Some(refused) = refused(&page, &headers, false) {
        return refused;
    }
    let number = |name: &str| {
        query.as_deref().unwrap_or_default().split('&').find_map(|pair| {
            let (key, value) = pair.split_once('=')?;
            (key == name).then(|| value.parse::<usize>().ok()).flatten()
        })
    };
    let (offset, limit) = (number("file_offset").unwrap_or(0), number("file_limit"));
    answer(page, move |page| {
        page.catch_up()?;
        page.engine.review_page(&id, offset, limit)
    })
    .await
}

/// `POST /api/proposals/{id}/apply`: the person's Apply.
async fn apply(
    State(page): State<Arc<Page>>,
    Path(id): Path<String>,
    headers: HeaderMap,
    _body: Bytes,
) -> Response {
    if let Some(refused) = refused(&page, &headers, true) {
        return refused;
    }
    answer(page, move |page| page.engine.apply_proposal(&ApplyArgs { proposal_id: id }, Actor::ReviewPage))
        .await
}

/// `POST /api/proposals/{id}/reject` `{"reason"}`: the person's Reject.
async fn reject(
    State(page): State<Arc<Page>>,
    Path(id): Path<String>,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    if let Some(refused) = refused(&page, &headers, true) {
        return refused;
    }
    if body.len() > BODY_MAX_BYTES {
        return refusal(StatusCode::PAYLOAD_TOO_LARGE, "too_large", "the reason is too long");
    }
    let asked: Value = serde_json::from_slice(&body).unwrap_or(Value::Null);
    // An empty reason is refused by the reject itself (`invalid_argument`: 400).
    let reason = asked.get("reason").and_then(Value::as_str).unwrap_or_default().to_owned();
    answer(page, move |page| page.engine.reject_proposal(&id, &reason, Actor::ReviewPage)).await
}
