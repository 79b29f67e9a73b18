//! The OAuth endpoints, as axum handlers: the two metadata documents,
//! registration (RFC 7591), the authorization endpoint (the consent page and
//! its form), the token endpoint (code exchange with PKCE, refresh with
//! rotation) and revocation (RFC 7009). Errors at the token, registration and
//! revocation endpoints are RFC 6749 JSON errors; errors a person meets are
//! pages (see [`super::consent`]). Before the client and its redirect URI are
//! known to match, nothing is ever redirected.

use std::collections::HashMap;
use std::sync::Arc;

use axum::extract::{Form, Query, State};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use axum::{Json, Router};
use http::{HeaderMap, HeaderValue, StatusCode, header};
use serde_json::{Value, json};

use super::challenge::Challenges;
use super::client_metadata::{Fetcher, is_document_url, remember_document_client};
use super::consent::{Consent, ending};
use super::flow::{Flow, Presented, WRONG_PER_ATTEMPT, is_challenge, parse_scope, pkce_matches};
use super::passphrase;
use super::redirect::redirect_uri_allowed;
use super::state::{OAuthStore, RefreshRefused, TokenPair, now_s};
use crate::engine::types::Access;
use crate::server::log;
use crate::server::tokens::{Grant, Scope, TokenLimits};

/// Where each endpoint lives.
const AUTHORIZE: &str = "/oauth/authorize";
const TOKEN: &str = "/oauth/token";
const REGISTER: &str = "/oauth/register";
const REVOKE: &str = "/oauth/revoke";
const RESOURCE_METADATA: &str = "/.well-known/oauth-protected-resource";
const SERVER_METADATA: &str = "/.well-known/oauth-authorization-server";

/// The scopes, lowest first.
const SCOPES: [&str; 3] = ["read", "propose", "apply"];

/// Whether `path` is one of the OAuth endpoints (they need no bearer token).
pub(in crate::server) fn is_oauth_path(path: &str) -> bool {
    path.starts_with("/oauth/") || path.starts_with("/.well-known/")
}

/// kb-mcp as its own authorization server, and the resource it guards.
pub(in crate::server) struct OAuth {
    store: Arc<OAuthStore>,
    flow: Flow,
    /// The public base URL, without a trailing slash: the issuer.
    issuer: String,
    /// `<issuer>/mcp`: the audience every token is bound to.
    resource: String,
    vault: String,
    access_lifetime_s: u64,
    /// The `WWW-Authenticate` values of 401s and 403s.
    pub(in crate::server) challenges: Challenges,
    /// Client ID Metadata Documents, fetched and cached.
    documents: Fetcher,
}

impl OAuth {
    pub(in crate::server) fn new(
        state: std::path::PathBuf,
        issuer: &str,
        vault: String,
        access_lifetime_s: u64,
        testing_root: Option<&[u8]>,
    ) -> crate::error::Result<Arc<OAuth>> {
        let issuer = issuer.trim_end_matches('/').to_owned();
        let resource = format!("{issuer}/mcp");
        let challenges = Challenges::new(&format!("{issuer}{RESOURCE_METADATA}/mcp"))?;
        Ok(Arc::new(OAuth {
            store: OAuthStore::open(state)?,
            flow: Flow::default(),
            issuer,
            resource,
            vault,
            access_lifetime_s,
            challenges,
            documents: Fetcher::new(testing_root)?,
        }))
    }

    /// What an OAuth access token grants here, if it is live and for this resource.
    pub(in crate::server) fn verify(&self, presented: &str) -> Option<Grant> {
        if !presented.starts_with(super::state::ACCESS_PREFIX) {
            return None;
        }
        let granted = self.store.read(|file| file.verify(presented, &self.resource))?;
        Some(Grant {
            name: Arc::from(format!("oauth:{}", granted.client_name)),
            scope: Scope::Tools(granted.scope),
            limits: TokenLimits::default(),
            key: granted.key,
            oauth: true,
        })
    }

    /// The session keys of the live grants.
    pub(in crate::server) fn keys(&self) -> Vec<[u8; 32]> {
        self.store.read(|file| file.keys())
    }

    /// The routes of the endpoints.
    pub(in crate::server) fn routes(self: &Arc<Self>) -> Router {
        Router::new()
            .route(RESOURCE_METADATA, get(resource_metadata).options(preflight))
            .route(&format!("{RESOURCE_METADATA}/mcp"), get(resource_metadata).options(preflight))
            .route(SERVER_METADATA, get(server_metadata).options(preflight))
            .route(REGISTER, post(register).options(preflight))
            .route(AUTHORIZE, get(authorize).post(consent_answer))
            .route(TOKEN, post(token).options(preflight))
            .route(REVOKE, post(revoke).options(preflight))
            .with_state(self.clone())
    }
}

/// A CORS preflight for the endpoints a browser-based client calls (the MCP
/// Inspector): the gate has already checked the `Origin` against the allowed ones.
async fn preflight() -> Response {
    let mut response = StatusCode::NO_CONTENT.into_response();
    let headers = response.headers_mut();
    headers.insert(header::ACCESS_CONTROL_ALLOW_ORIGIN, HeaderValue::from_static("*"));
    headers.insert(header::ACCESS_CONTROL_ALLOW_METHODS, HeaderValue::from_static("GET, POST, OPTIONS"));
    headers.insert(
        header::ACCESS_CONTROL_ALLOW_HEADERS,
        HeaderValue::from_static("authorization, content-type, mcp-protocol-version"),
    );
    headers.insert(header::ACCESS_CONTROL_MAX_AGE, HeaderValue::from_static("600"));
    response
}

fn public_json(value: Value) -> Response {
    let mut response = Json(value).into_response();
    response.headers_mut().insert(header::ACCESS_CONTROL_ALLOW_ORIGIN, HeaderValue::from_static("*"));
    response
}

fn no_store(status: StatusCode, value: Value) -> Response {
    let mut response = (status, Json(value)).into_response();
    response.headers_mut().insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
    response.headers_mut().insert(header::ACCESS_CONTROL_ALLOW_ORIGIN, HeaderValue::from_static("*"));
    response
}

/// An RFC 6749 §5.2 error.
fn oauth_error(status: StatusCode, error: &str, description: &str) -> Response {
    log(json!({ "event": "oauth_refused", "error": error, "why": description }));
    no_store(status, json!({ "error": error, "error_description": description }))
}

async fn resource_metadata(State(oauth): State<Arc<OAuth>>) -> Response {
    public_json(json!({
        "resource": oauth.resource,
        "authorization_servers": [oauth.issuer],
        "scopes_supported": SCOPES,
        "bearer_methods_supported": ["header"],
        "resource_name": format!("kb-mcp: {}", oauth.vault),
    }))
}

async fn server_metadata(State(oauth): State<Arc<OAuth>>) -> Response {
    let at = |path: &str| format!("{}{path}", oauth.issuer);
    public_json(json!({
        "issuer": oauth.issuer,
        "authorization_endpoint": at(AUTHORIZE),
        "token_endpoint": at(TOKEN),
        "registration_endpoint": at(REGISTER),
        "revocation_endpoint": at(REVOKE),
        "scopes_supported": SCOPES,
        "response_types_supported": ["code"],
        "grant_types_supported": ["authorization_code", "refresh_token"],
        "code_challenge_methods_supported": ["S256"],
        "token_endpoint_auth_methods_supported": ["none"],
        "revocation_endpoint_auth_methods_supported": ["none"],
        "authorization_response_iss_parameter_supported": true,
        "client_id_metadata_document_supported": true,
    }))
}

/// `POST /oauth/register`: dynamic client registration for public clients.
async fn register(State(oauth): State<Arc<OAuth>>, body: axum::body::Bytes) -> Response {
    let invalid = |what: &str| oauth_error(StatusCode::BAD_REQUEST, "invalid_client_metadata", what);
    let Ok(Value::Object(metadata)) = serde_json::from_slice::<Value>(&body) else {
        return invalid("the body must be a JSON object of client metadata");
    };
    let uris: Vec<String> = match metadata.get("redirect_uris").and_then(Value::as_array) {
        Some(uris) if !uris.is_empty() && uris.len() <= 10 => {
            uris.iter().filter_map(Value::as_str).map(str::to_owned).collect()
        }
        _ => return invalid("redirect_uris must list 1 to 10 redirect URIs"),
    };
    if let Some(bad) = uris.iter().find(|uri| !redirect_uri_allowed(uri)) {
        return oauth_error(
            StatusCode::BAD_REQUEST,
            "invalid_redirect_uri",
            &format!(
                "`{bad}` is not allowed: use https, http on localhost, or an app's own scheme, without a fragment"
            ),
        );
    }
    for (field, allowed) in
        [("grant_types", &["authorization_code", "refresh_token"][..]), ("response_types", &["code"])]
    {
        if let Some(values) = metadata.get(field).and_then(Value::as_array)
            && values.iter().any(|v| !v.as_str().is_some_and(|v| allowed.contains(&v)))
        {
            return invalid(&format!("{field} may hold only {}", allowed.join(", ")));
        }
    }
    let name: String = metadata
        .get("client_name")
        .and_then(Value::as_str)
        .map(|n| n.chars().filter(|c| !c.is_control()).take(100).collect::<String>())
        .filter(|n| !n.trim().is_empty())
        .unwrap_or_else(|| "unnamed client".to_owned());
    let registered = oauth.store.change(|file| match file.register(name, uris) {
        Ok(client) => (Ok(client), true),
        Err(error) => (Err(error), false),
    });
    let client = match registered {
        Ok(Ok(client)) => client,
        Ok(Err(error)) | Err(error) => {
            return oauth_error(StatusCode::SERVICE_UNAVAILABLE, "temporarily_unavailable", &error.message);
        }
    };
    log(
        json!({ "event": "oauth_client_registered", "client": client.client_name, "client_id": client.client_id }),
    );
    no_store(
        StatusCode::CREATED,
        json!({
            "client_id": client.client_id,
            "client_id_issued_at": now_s(),
            "client_name": client.client_name,
            "redirect_uris": client.redirect_uris,
            "grant_types": ["authorization_code", "refresh_token"],
            "response_types": ["code"],
            "token_endpoint_auth_method": "none",
            "scope": SCOPES.join(" "),
        }),
    )
}

/// A redirect back to the client with `params` (and the issuer, RFC 9207).
fn back_to_client(
    redirect_uri: &str,
    params: &[(&str, &str)],
    state: Option<&str>,
    issuer: &str,
) -> Response {
    let Ok(mut url) = url::Url::parse(redirect_uri) else {
        return ending(StatusCode::BAD_REQUEST, "Cannot return to the app", "Its redirect URI is malformed.");
    };
    {
        let mut query = url.query_pairs_mut();
        for (name, value) in params {
            query.append_pair(name, value);
        }
        if let Some(state) = state {
            query.append_pair("state", state);
        }
        query.append_pair("iss", issuer);
    }
    let mut response = StatusCode::SEE_OTHER.into_response();
    if let Ok(location) = HeaderValue::from_str(url.as_str()) {
        response.headers_mut().insert(header::LOCATION, location);
    }
    response.headers_mut().insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
    response
}

/// `GET /oauth/authorize`: checks the request and shows the consent page.
async fn authorize(
    State(oauth): State<Arc<OAuth>>,
    Query(query): Query<HashMap<String, String>>,
) -> Response {
    let param = |name: &str| query.get(name).map(String::as_str).filter(|v| !v.is_empty());
    let Some(client_id) = param("client_id") else {
        return ending(
            StatusCode::BAD_REQUEST,
            "No client named",
            "The app sent no client_id. Start again from the app.",
        );
    };
    let client = if is_document_url(client_id) {
        match remember_document_client(&oauth.documents, &oauth.store, client_id).await {
            Ok(client) => client,
            Err(why) => {
                log(
                    json!({ "event": "oauth_refused", "error": "client metadata document", "why": why, "client_id": client_id }),
                );
                return ending(
                    StatusCode::BAD_REQUEST,
                    "Cannot identify the app",
                    &format!(
                        "The app identified itself by the URL {client_id}, but {why}. No access was granted."
                    ),
                );
            }
        }
    } else if let Some(client) = oauth.store.read(|file| file.client(client_id).cloned()) {
        client
    } else {
        return ending(
            StatusCode::BAD_REQUEST,
            "Unknown app",
            "This server does not know the app's client id (it may have been revoked, or registered with \
             another server). Remove the connection in the app and add it again.",
        );
    };
    let redirect_uri = match param("redirect_uri") {
        Some(uri) if client.redirect_uris.iter().any(|r| r == uri) => uri.to_owned(),
        None if client.redirect_uris.len() == 1 => client.redirect_uris[0].clone(),
        _ => {
            log(json!({ "event": "oauth_refused", "error": "redirect_uri", "client_id": client_id }));
            return ending(
                StatusCode::BAD_REQUEST,
                "Wrong return address",
                "The redirect_uri of this request is not one the app registered, so kb-mcp will not send \
                 anything there. Start again from the app.",
            );
        }
    };
    let state = param("state").map(str::to_owned);
    let fail = |error: &str, description: &str| {
        log(json!({ "event": "oauth_refused", "error": error, "why": description, "client_id": client_id }));
        back_to_client(
            &redirect_uri,
            &[("error", error), ("error_description", description)],
            state.as_deref(),
            &oauth.issuer,
        )
    };
    if param("response_type") != Some("code") {
        return fail("unsupported_response_type", "only response_type=code is supported");
    }
    let Some(challenge) = param("code_challenge") else {
        return fail(
            "invalid_request",
            "PKCE is required: send code_challenge with code_challenge_method=S256",
        );
    };
    if param("code_challenge_method") != Some("S256") || !is_challenge(challenge) {
        return fail(
            "invalid_request",
            "only a code_challenge_method of S256, with a 43-character challenge",
        );
    }
    let Some(scope) = parse_scope(param("scope")) else {
        return fail("invalid_scope", "the scopes are read, propose and apply");
    };
    if param("resource").is_some_and(|r| r != oauth.resource) {
        return fail("invalid_target", "this server grants access to its own resource only");
    }
    let begun = oauth.flow.begin(
        client.client_id.clone(),
        (redirect_uri.clone(), param("redirect_uri").is_some()),
        challenge.to_owned(),
        state.clone(),
        scope,
        oauth.resource.clone(),
    );
    let (id, attempt) = match begun {
        Ok(begun) => begun,
        Err(error) => return fail("server_error", &error.message),
    };
    let has_owner = oauth.store.read(|file| file.has_owner());
    Consent {
        client_name: &client.client_name,
        client_id: &client.client_id,
        registered: &client.registered,
        redirect_uri: &redirect_uri,
        vault: &oauth.vault,
        issuer: &oauth.issuer,
        asked: attempt.scope,
        attempt: &id,
        csrf: &attempt.csrf,
        has_owner,
        error: None,
    }
    .render()
}

/// The `kb_csrf` cookie of a request.
fn csrf_cookie(headers: &HeaderMap) -> Option<String> {
    headers
        .get_all(header::COOKIE)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(';'))
        .find_map(|pair| pair.trim().strip_prefix("kb_csrf=").map(str::to_owned))
}

/// Whether the request's `Origin`, when sent, is this page's own (the `Host` it was sent to).
fn same_origin(headers: &HeaderMap) -> bool {
    let Some(origin) = headers.get(header::ORIGIN) else { return true };
    let host = headers.get(header::HOST).and_then(|h| h.to_str().ok());
    let origin_host = origin.to_str().ok().and_then(|o| url::Url::parse(o).ok()).map(|u| {
        let host = u.host_str().unwrap_or("").to_owned();
        match u.port() {
            Some(port) => format!("{host}:{port}"),
            None => host,
        }
    });
    match (origin_host, host) {
        (Some(origin), Some(host)) => origin.eq_ignore_ascii_case(host),
        _ => false,
    }
}

/// `POST /oauth/authorize`: the owner's answer on the consent page.
async fn consent_answer(
    State(oauth): State<Arc<OAuth>>,
    headers: HeaderMap,
    Form(form): Form<HashMap<String, String>>,
) -> Response {
    let field = |name: &str| form.get(name).map(String::as_str).unwrap_or("");
    let attempt_id = field("attempt");
    let Some(attempt) = oauth.flow.attempt(attempt_id) else {
        return ending(
            StatusCode::BAD_REQUEST,
            "This request is over",
            "It expired, was already answered, or was ended after wrong passphrases; no access was granted. \
             Start again from the app.",
        );
    };
    let form_csrf = field("csrf");
    let csrf_ok = same_origin(&headers)
        && bool::from(subtle::ConstantTimeEq::ct_eq(form_csrf.as_bytes(), attempt.csrf.as_bytes()))
        && csrf_cookie(&headers).is_some_and(|c| {
            bool::from(subtle::ConstantTimeEq::ct_eq(c.as_bytes(), attempt.csrf.as_bytes()))
        });
    if !csrf_ok {
        oauth.flow.end(attempt_id);
        log(json!({ "event": "oauth_refused", "error": "csrf", "client_id": attempt.client_id }));
        return ending(
            StatusCode::FORBIDDEN,
            "This answer did not come from kb-mcp's consent page",
            "The form was sent from another page or without the consent page's cookie, so it was refused and \
             the request ended; no access was granted. Start again from the app.",
        );
    }
    if field("decision") != "allow" {
        oauth.flow.end(attempt_id);
        log(json!({ "event": "oauth_denied", "client_id": attempt.client_id }));
        return back_to_client(
            &attempt.redirect_uri,
            &[("error", "access_denied"), ("error_description", "the owner denied access")],
            attempt.state.as_deref(),
            &oauth.issuer,
        );
    }
    if let Some(wait) = oauth.flow.locked_for() {
        return ending(
            StatusCode::TOO_MANY_REQUESTS,
            "Too many wrong passphrases",
            &format!(
                "Consent is paused for {} more minutes after too many wrong passphrases. Nothing was granted.",
                wait.as_secs().div_ceil(60)
            ),
        );
    }
    let Some(scope) = Access::parse(field("scope")).filter(|s| *s <= attempt.scope) else {
        return ending(
            StatusCode::BAD_REQUEST,
            "No such access level",
            "Choose one of the levels the consent page offered. Nothing was granted.",
        );
    };
    let Some(stored) = oauth.store.read(|file| file.owner_hash()) else {
        return ending(
            StatusCode::FORBIDDEN,
            "No owner passphrase is set",
            "Run `kb-mcp owner set --tokens FILE` on the machine that runs kb-mcp, then start again from the app.",
        );
    };
    let given = field("passphrase").to_owned();
    let matched =
        tokio::task::spawn_blocking(move || passphrase::verify(&given, &stored)).await.unwrap_or(false);
    if !matched {
        log(json!({ "event": "oauth_refused", "error": "wrong passphrase", "client_id": attempt.client_id }));
        if !oauth.flow.wrong_passphrase(attempt_id) {
            return ending(
                StatusCode::FORBIDDEN,
                "Wrong passphrase",
                &format!(
                    "{WRONG_PER_ATTEMPT} wrong passphrases ended this request; nothing was granted. Start again from the app."
                ),
            );
        }
        let client = oauth.store.read(|file| file.client(&attempt.client_id).cloned());
        let Some(client) = client else {
            return ending(StatusCode::BAD_REQUEST, "Unknown app", "The app was revoked meanwhile.");
        };
        let mut page = Consent {
            client_name: &client.client_name,
            client_id: &client.client_id,
            registered: &client.registered,
            redirect_uri: &attempt.redirect_uri,
            vault: &oauth.vault,
            issuer: &oauth.issuer,
            asked: attempt.scope,
            attempt: attempt_id,
            csrf: &attempt.csrf,
            has_owner: true,
            error: Some("Wrong passphrase; nothing was granted. Try again."),
        }
        .render();
        *page.status_mut() = StatusCode::FORBIDDEN;
        return page;
    }
    oauth.flow.end(attempt_id);
    let code = match oauth.flow.issue_code(&attempt, scope) {
        Ok(code) => code,
        Err(error) => return ending(StatusCode::INTERNAL_SERVER_ERROR, "Something failed", &error.message),
    };
    log(json!({ "event": "oauth_consent", "client_id": attempt.client_id, "scope": scope.as_str() }));
    back_to_client(&attempt.redirect_uri, &[("code", &code)], attempt.state.as_deref(), &oauth.issuer)
}

fn tokens_answer(pair: &TokenPair, lifetime_s: u64) -> Response {
    no_store(
        StatusCode::OK,
        json!({
            "access_token": pair.access,
            "token_type": "Bearer",
            "expires_in": lifetime_s,
            "refresh_token": pair.refresh,
            "scope": pair.scope.as_str(),
        }),
    )
}

/// `POST /oauth/token`: a code for tokens, or a refresh token for new ones.
async fn token(State(oauth): State<Arc<OAuth>>, Form(form): Form<HashMap<String, String>>) -> Response {
    let field = |name: &str| form.get(name).map(String::as_str).filter(|v| !v.is_empty());
    let Some(client_id) = field("client_id") else {
        return oauth_error(StatusCode::UNAUTHORIZED, "invalid_client", "client_id is required");
    };
    if field("resource").is_some_and(|r| r != oauth.resource) {
        return oauth_error(
            StatusCode::BAD_REQUEST,
            "invalid_target",
            "this server issues tokens for its own resource only",
        );
    }
    match field("grant_type") {
        Some("authorization_code") => {
            let Some(code) = field("code") else {
                return oauth_error(StatusCode::BAD_REQUEST, "invalid_request", "code is required");
            };
            let issued = match oauth.flow.present(code) {
                Presented::Fresh(issued) => issued,
                Presented::Reused(grant) => {
                    if let Some(grant) = grant {
                        let _ = oauth.store.change(|file| {
                            file.revoke_grant(&grant);
                            ((), true)
                        });
                    }
                    return oauth_error(
                        StatusCode::BAD_REQUEST,
                        "invalid_grant",
                        "this code was already used; the tokens issued for it are revoked",
                    );
                }
                Presented::Unknown => {
                    return oauth_error(StatusCode::BAD_REQUEST, "invalid_grant", "unknown or expired code");
                }
            };
            if issued.client_id != client_id {
                return oauth_error(
                    StatusCode::BAD_REQUEST,
                    "invalid_grant",
                    "the code was issued to another client",
                );
            }
            // OAuth 2.1: required when the authorization request named it; identical whenever sent.
            let named = field("redirect_uri");
            if named.is_some_and(|uri| uri != issued.redirect_uri)
                || (issued.redirect_given && named.is_none())
            {
                return oauth_error(
                    StatusCode::BAD_REQUEST,
                    "invalid_grant",
                    "redirect_uri does not match the authorization request",
                );
            }
            let Some(verifier) = field("code_verifier") else {
                return oauth_error(
                    StatusCode::BAD_REQUEST,
                    "invalid_request",
                    "code_verifier is required (PKCE)",
                );
            };
            if !pkce_matches(verifier, &issued.challenge) {
                return oauth_error(
                    StatusCode::BAD_REQUEST,
                    "invalid_grant",
                    "code_verifier does not match the code_challenge",
                );
            }
            let lifetime = oauth.access_lifetime_s;
            let granted = oauth.store.change(|file| {
                match file.grant(client_id, issued.scope, &issued.resource, lifetime) {
                    Ok(granted) => (Ok(granted), true),
                    Err(error) => (Err(error), false),
                }
            });
            match granted {
                Ok(Ok((grant, pair))) => {
                    oauth.flow.spent_into(code, grant);
                    log(
                        json!({ "event": "oauth_granted", "client_id": client_id, "scope": pair.scope.as_str() }),
                    );
                    tokens_answer(&pair, lifetime)
                }
                Ok(Err(error)) | Err(error) => {
                    oauth_error(StatusCode::INTERNAL_SERVER_ERROR, "server_error", &error.message)
                }
            }
        }
        Some("refresh_token") => {
            let Some(presented) = field("refresh_token") else {
                return oauth_error(StatusCode::BAD_REQUEST, "invalid_request", "refresh_token is required");
            };
            if parse_scope(field("scope")).is_none() {
                return oauth_error(
                    StatusCode::BAD_REQUEST,
                    "invalid_scope",
                    "the scopes are read, propose and apply",
                );
            }
            let lifetime = oauth.access_lifetime_s;
            let refreshed = oauth.store.change(|file| match file.refresh(presented, client_id, lifetime) {
                Ok(pair) => (Ok(pair), true),
                Err(RefreshRefused::Reused) => (Err(RefreshRefused::Reused), true),
                Err(RefreshRefused::Invalid) => (Err(RefreshRefused::Invalid), false),
            });
            match refreshed {
                Ok(Ok(pair)) => tokens_answer(&pair, lifetime),
                Ok(Err(RefreshRefused::Reused)) => oauth_error(
                    StatusCode::BAD_REQUEST,
                    "invalid_grant",
                    "this refresh token was already used; every token of its grant is revoked",
                ),
                Ok(Err(RefreshRefused::Invalid)) => oauth_error(
                    StatusCode::BAD_REQUEST,
                    "invalid_grant",
                    "unknown, expired or revoked refresh token",
                ),
                Err(error) => oauth_error(StatusCode::INTERNAL_SERVER_ERROR, "server_error", &error.message),
            }
        }
        _ => oauth_error(
            StatusCode::BAD_REQUEST,
            "unsupported_grant_type",
            "grant_type must be authorization_code or refresh_token",
        ),
    }
}

/// `POST /oauth/revoke` (RFC 7009): always 200, whether the token was known or not.
async fn revoke(State(oauth): State<Arc<OAuth>>, Form(form): Form<HashMap<String, String>>) -> Response {
    let Some(presented) = form.get("token").filter(|t| !t.is_empty()) else {
        return oauth_error(StatusCode::BAD_REQUEST, "invalid_request", "token is required");
    };
    let client_id = form.get("client_id").map(String::as_str);
    let revoked = oauth.store.change(|file| {
        let revoked = file.revoke_token(presented, client_id);
        (revoked, revoked)
    });
    if revoked.unwrap_or(false) {
        log(json!({ "event": "oauth_token_revoked", "client_id": client_id }));
    }
    no_store(StatusCode::OK, json!({}))
}
