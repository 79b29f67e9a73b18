//! The OAuth endpoints, as axum handlers: the two metadata documents,
//! registration (RFC 7591), the authorization endpoint (the consent page and
//! its form), the token endpoint (code exchange with PKCE, refresh with
//! rotation) and revocation (RFC 7009). Errors at the token, registration and
//! revocation endpoints are RFC 6749 JSON errors; errors a person meets are
//! pages (see [`super::consent`]). Before the client and its redirect URI are
//! known to match, nothing is ever redirected. This file holds the server's
//! state, its routes, the metadata documents and registration;
//! [`authorize`] the consent page and its answer, [`token`] the token and
//! revocation endpoints.

mod authorize;
mod token;

use std::sync::Arc;

use axum::extract::State;
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use axum::{Json, Router};
use http::{HeaderValue, StatusCode, header};
use serde_json::{Value, json};

use super::challenge::Challenges;
use super::client_metadata::Fetcher;
use super::flow::Flow;
use super::redirect::redirect_uri_allowed;
use super::state::{OAuthStore, now_s};
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
            vaults: None,
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
            .route(AUTHORIZE, get(authorize::authorize).post(authorize::consent_answer))
            .route(TOKEN, post(token::token).options(preflight))
            .route(REVOKE, post(token::revoke).options(preflight))
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
