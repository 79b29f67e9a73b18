//! The authorization endpoint: `GET /oauth/authorize` checks the request
//! (client, redirect URI, PKCE challenge, scope, resource) and shows the
//! consent page; `POST` takes the owner's answer (passphrase, CSRF cookie and
//! field, same origin) and sends the client back with a code. Until the client
//! and its redirect URI are known to match, errors are pages, never redirects.

use std::collections::HashMap;
use std::sync::Arc;

use axum::extract::{Form, Query, State};
use axum::response::{IntoResponse, Response};
use http::{HeaderMap, HeaderValue, StatusCode, header};
use serde_json::json;

use super::OAuth;
use crate::engine::types::Access;
use crate::server::log;
use crate::server::oauth::client_metadata::{is_document_url, remember_document_client};
use crate::server::oauth::consent::{Consent, ending};
use crate::server::oauth::flow::{WRONG_PER_ATTEMPT, is_challenge, parse_scope};
use crate::server::oauth::passphrase;

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
pub(super) async fn authorize(
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
pub(super) async fn consent_answer(
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
