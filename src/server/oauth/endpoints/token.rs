//! The token endpoint (a code for tokens with PKCE, or a refresh token for
//! new ones, rotated) and revocation (RFC 7009). Errors are RFC 6749 JSON
//! errors.

use std::collections::HashMap;
use std::sync::Arc;

use axum::extract::{Form, State};
use axum::response::Response;
use http::StatusCode;
use serde_json::json;

use super::{OAuth, no_store, oauth_error};
use crate::server::log;
use crate::server::oauth::flow::{Presented, parse_scope, pkce_matches};
use crate::server::oauth::state::{RefreshRefused, TokenPair};

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
pub(super) async fn token(
    State(oauth): State<Arc<OAuth>>,
    Form(form): Form<HashMap<String, String>>,
) -> Response {
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
pub(super) async fn revoke(
    State(oauth): State<Arc<OAuth>>,
    Form(form): Form<HashMap<String, String>>,
) -> Response {
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
