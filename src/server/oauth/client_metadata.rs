//! Client ID Metadata Documents (the client registration the MCP 2025-11-25
//! revision recommends, draft-ietf-oauth-client-id-metadata-document): a
//! client whose `client_id` is an `https://` URL is described by the JSON
//! document served at that URL, fetched here when it asks for authorization.
//!
//! The fetch is strict, because anyone who reaches the authorization
//! endpoint chooses the URL: HTTPS only (rustls, the public roots), no proxy,
//! no redirects (a 3xx is refused; the draft wants the document at its own
//! URL), a 200 only, at most [`MAX_DOCUMENT_BYTES`], all of it within
//! [`FETCH_TIMEOUT`], and only from public addresses, checked where the name
//! is resolved so that the connection goes to the address that was checked
//! (see [`super::public_address`]). The document must name the URL as its
//! `client_id` exactly, list its redirect URIs (each one a URI registration
//! would accept), and be a public client's (no secret, no other token
//! endpoint authentication than `none`), served as `application/json`. A
//! valid document is cached for its `Cache-Control: max-age`, at most a day
//! ([`MAX_CACHE`]; an hour without one; not at all with `no-store` or
//! `no-cache`); refusals are not cached. Requests for one URL that arrive
//! together make one fetch: the others wait for it and read its result from
//! the cache.
//!
//! For the tests alone, [`Fetcher::new`] takes a certificate to trust
//! *instead of* the public roots, which also allows loopback addresses
//! (`kb-mcp --testing-cimd-trust CERT.pem`): with it, no real client's
//! document can be fetched at all, so it cannot be left on by mistake in
//! a deployment that works.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use serde_json::Value;

use super::public_address::{NotPublic, PublicOnly, allowed};
use super::redirect::redirect_uri_allowed;
use super::state::{Client, OAuthStore};

/// The largest document read (the draft suggests 5 KB; hosts' real documents
/// have been seen above that, so a little room is left).
pub(super) const MAX_DOCUMENT_BYTES: usize = 32 * 1024;
/// The whole fetch: connection, TLS, headers and body.
pub(super) const FETCH_TIMEOUT: Duration = Duration::from_secs(5);
/// The longest a document is cached.
pub(super) const MAX_CACHE: Duration = Duration::from_secs(24 * 3600);
/// How long a document without `max-age` is cached.
const DEFAULT_CACHE: Duration = Duration::from_secs(3600);
/// The most documents cached.
const MAX_CACHED: usize = 256;
/// The most redirect URIs a document may list.
const MAX_REDIRECT_URIS: usize = 20;

/// What a valid document says about its client.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct DocumentClient {
    pub(super) client_name: String,
    pub(super) redirect_uris: Vec<String>,
}

/// Whether a `client_id` names a metadata document (rather than a registered client).
pub(super) fn is_document_url(client_id: &str) -> bool {
    client_id.starts_with("https://")
}

/// Fetches, checks and caches metadata documents.
pub(super) struct Fetcher {
    http: reqwest::Client,
    loopback: bool,
    cache: Mutex<HashMap<String, (DocumentClient, Instant)>>,
    /// One lock per URL being fetched now.
    fetching: Mutex<HashMap<String, Arc<tokio::sync::Mutex<()>>>>,
}

impl Fetcher {
    /// A fetcher trusting the public roots; or, for the tests only,
    /// `testing_root` (a PEM certificate) alone, with loopback addresses allowed.
    pub(super) fn new(testing_root: Option<&[u8]>) -> crate::error::Result<Fetcher> {
        let invalid = |err: reqwest::Error| crate::error::Error::invalid(format!("the HTTPS client: {err}"));
        let mut builder = reqwest::Client::builder()
            .https_only(true)
            .no_proxy()
            .redirect(reqwest::redirect::Policy::none())
            .timeout(FETCH_TIMEOUT)
            .connect_timeout(FETCH_TIMEOUT)
            .user_agent(concat!("kb-mcp/", env!("CARGO_PKG_VERSION")))
            .dns_resolver(PublicOnly { loopback: testing_root.is_some() });
        if let Some(pem) = testing_root {
            builder = builder.tls_certs_only([reqwest::Certificate::from_pem(pem).map_err(invalid)?]);
        }
        Ok(Fetcher {
            http: builder.build().map_err(invalid)?,
            loopback: testing_root.is_some(),
            cache: Mutex::default(),
            fetching: Mutex::default(),
        })
    }

    /// The client the document at `url` describes, from the cache or fetched;
    /// or why it cannot be used, in words for the person on the consent page.
    pub(super) async fn client(&self, url: &str) -> Result<DocumentClient, String> {
        if let Some(client) = self.cached(url) {
            return Ok(client);
        }
        let parsed = check_url(url, self.loopback)?;
        let lock = self
            .fetching
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .entry(url.to_owned())
            .or_default()
            .clone();
        let fetched = {
            let _only_fetch = lock.lock().await;
            match self.cached(url) {
                Some(client) => Ok(client),
                None => self.fetch_and_cache(url, parsed).await,
            }
        };
        // Clones are made and dropped under this lock: the last request to
        // finish sees the map's alone, and removes it.
        let mut fetching = self.fetching.lock().unwrap_or_else(|e| e.into_inner());
        drop(lock);
        if fetching.get(url).is_some_and(|held| Arc::strong_count(held) == 1) {
            fetching.remove(url);
        }
        fetched
    }

    /// The client cached for `url`, while its document is fresh.
    fn cached(&self, url: &str) -> Option<DocumentClient> {
        let cache = self.cache.lock().unwrap_or_else(|e| e.into_inner());
        cache.get(url).filter(|(_, until)| *until > Instant::now()).map(|(client, _)| client.clone())
    }

    /// Fetches and checks the document at `url`, caching a valid one.
    async fn fetch_and_cache(&self, url: &str, parsed: url::Url) -> Result<DocumentClient, String> {
        let now = Instant::now();
        let (body, lifetime) = match tokio::time::timeout(FETCH_TIMEOUT, self.fetch(parsed)).await {
            Err(_) => return Err(format!("its metadata document took longer than {FETCH_TIMEOUT:?}")),
            Ok(fetched) => fetched?,
        };
        let client = check_document(url, &body)?;
        if !lifetime.is_zero() {
            let mut cache = self.cache.lock().unwrap_or_else(|e| e.into_inner());
            if cache.len() >= MAX_CACHED {
                cache.retain(|_, (_, until)| *until > now);
            }
            if cache.len() >= MAX_CACHED
                && let Some(soonest) =
                    cache.iter().min_by_key(|(_, (_, until))| *until).map(|(k, _)| k.clone())
            {
                cache.remove(&soonest);
            }
            cache.insert(url.to_owned(), (client.clone(), now + lifetime));
        }
        Ok(client)
    }

    /// The document's bytes and how long they may be cached.
    async fn fetch(&self, url: url::Url) -> Result<(Vec<u8>, Duration), String> {
        let mut response = self
            .http
            .get(url)
            .header(http::header::ACCEPT, "application/json")
            .send()
            .await
            .map_err(|err| why_unreachable(&err))?;
        let status = response.status();
        if status.is_redirection() {
            return Err(format!(
                "its metadata document answered with a redirect ({status}); kb-mcp follows none"
            ));
        }
        if status != http::StatusCode::OK {
            return Err(format!("its metadata document answered {status}"));
        }
        let too_large = || format!("its metadata document is larger than {MAX_DOCUMENT_BYTES} bytes");
        if response.content_length().is_some_and(|n| n > MAX_DOCUMENT_BYTES as u64) {
            return Err(too_large());
        }
        let media_type = response.headers().get(http::header::CONTENT_TYPE);
        if !is_json(media_type) {
            let shown = media_type.and_then(|v| v.to_str().ok()).unwrap_or("no Content-Type");
            return Err(format!("its metadata document is served as `{shown}`, not application/json"));
        }
        let lifetime = cache_lifetime(response.headers().get(http::header::CACHE_CONTROL));
        let mut body = Vec::new();
        while let Some(chunk) = response.chunk().await.map_err(|err| why_unreachable(&err))? {
            if body.len() + chunk.len() > MAX_DOCUMENT_BYTES {
                return Err(too_large());
            }
            body.extend_from_slice(&chunk);
        }
        Ok((body, lifetime))
    }
}

/// The client `client_id` names by its metadata document, kept in the state
/// file (added, or updated when its document changed) so that its grants are
/// listed and revoked like any client's; or why it cannot be used.
pub(super) async fn remember_document_client(
    documents: &Fetcher,
    store: &OAuthStore,
    client_id: &str,
) -> Result<Client, String> {
    let described = documents.client(client_id).await?;
    let remembered = store.change(|file| {
        match file.remember(client_id.to_owned(), described.client_name, described.redirect_uris) {
            Ok((client, changed)) => (Ok(client), changed),
            Err(error) => (Err(error), false),
        }
    });
    match remembered {
        Ok(Ok(client)) => Ok(client),
        Ok(Err(error)) | Err(error) => Err(format!("it could not be recorded: {}", error.message)),
    }
}

/// Why a fetch failed, naming a refused address when that was the cause.
fn why_unreachable(err: &reqwest::Error) -> String {
    let mut source: Option<&(dyn std::error::Error + 'static)> = Some(err);
    while let Some(cause) = source {
        if let Some(refused) = cause.downcast_ref::<NotPublic>() {
            return format!(
                "its metadata document's host resolves to {refused}; kb-mcp fetches only from public addresses"
            );
        }
        source = cause.source();
    }
    if err.is_timeout() {
        return format!("its metadata document took longer than {FETCH_TIMEOUT:?}");
    }
    format!("its metadata document could not be fetched: {err}")
}

/// The URL a `client_id` must be: HTTPS, with a path, no fragment or user
/// information, written the way the URL parser writes it (no dot segments,
/// lower-case host, no default port), and not an address that is not public.
fn check_url(text: &str, loopback: bool) -> Result<url::Url, String> {
    let url = url::Url::parse(text).map_err(|err| format!("its client_id is not a URL: {err}"))?;
    if url.scheme() != "https" || text.len() > 1000 {
        return Err("its client_id must be an https:// URL of at most 1000 characters".to_owned());
    }
    if url.path() == "/" || url.fragment().is_some() || !url.username().is_empty() || url.password().is_some()
    {
        return Err("its client_id URL must have a path, and no fragment or user name".to_owned());
    }
    if url.as_str() != text {
        return Err(format!("its client_id must be written in normal form (`{}`)", url.as_str()));
    }
    let literal = match url.host() {
        Some(url::Host::Ipv4(ip)) => Some(std::net::IpAddr::V4(ip)),
        Some(url::Host::Ipv6(ip)) => Some(std::net::IpAddr::V6(ip)),
        _ => None,
    };
    if let Some(ip) = literal.filter(|ip| !allowed(*ip, loopback)) {
        return Err(format!(
            "its metadata document's host {ip} is not a public address; kb-mcp fetches only from public addresses"
        ));
    }
    Ok(url)
}

/// Whether a `Content-Type` says JSON: `application/json`, with any parameters.
fn is_json(header: Option<&http::HeaderValue>) -> bool {
    let Some(text) = header.and_then(|h| h.to_str().ok()) else { return false };
    text.split(';').next().is_some_and(|media| media.trim().eq_ignore_ascii_case("application/json"))
}

/// How long a response may be cached, from its `Cache-Control`.
fn cache_lifetime(header: Option<&http::HeaderValue>) -> Duration {
    let Some(text) = header.and_then(|h| h.to_str().ok()) else { return DEFAULT_CACHE };
    let mut lifetime = DEFAULT_CACHE;
    for directive in text.split(',').map(|d| d.trim().to_ascii_lowercase()) {
        if directive == "no-store" || directive == "no-cache" {
            return Duration::ZERO;
        }
        if let Some(seconds) =
            directive.strip_prefix("max-age=").and_then(|s| s.trim_matches('"').parse::<u64>().ok())
        {
            lifetime = Duration::from_secs(seconds);
        }
    }
    lifetime.min(MAX_CACHE)
}

/// Checks a document against the URL it was fetched from.
fn check_document(url: &str, body: &[u8]) -> Result<DocumentClient, String> {
    let Ok(Value::Object(document)) = serde_json::from_slice::<Value>(body) else {
        return Err("its metadata document is not a JSON object".to_owned());
    };
    if document.get("client_id").and_then(Value::as_str) != Some(url) {
        return Err("its metadata document names another client_id than its own URL".to_owned());
    }
    if document.contains_key("client_secret") || document.contains_key("client_secret_expires_at") {
        return Err(
            "its metadata document holds a client secret, which a metadata document must not".to_owned()
        );
    }
    if let Some(method) = document.get("token_endpoint_auth_method")
        && method.as_str() != Some("none")
    {
        return Err("its metadata document asks for a token endpoint authentication other than `none`, which kb-mcp does not offer".to_owned());
    }
    let uris: Vec<String> = match document.get("redirect_uris").and_then(Value::as_array) {
        Some(uris) if !uris.is_empty() && uris.len() <= MAX_REDIRECT_URIS => uris
            .iter()
            .map(|u| u.as_str().map(str::to_owned))
            .collect::<Option<_>>()
            .ok_or_else(|| "its metadata document's redirect_uris must be strings".to_owned())?,
        _ => return Err(format!("its metadata document must list 1 to {MAX_REDIRECT_URIS} redirect_uris")),
    };
    if let Some(bad) = uris.iter().find(|uri| !redirect_uri_allowed(uri)) {
        return Err(format!(
            "its metadata document lists `{}`, a redirect URI kb-mcp does not allow",
            crate::error::cut_middle(bad, 200)
        ));
    }
    for (field, allowed) in
        [("grant_types", &["authorization_code", "refresh_token"][..]), ("response_types", &["code"])]
    {
        if let Some(values) = document.get(field).and_then(Value::as_array)
            && values.iter().any(|v| !v.as_str().is_some_and(|v| allowed.contains(&v)))
        {
            return Err(format!("its metadata document's {field} may hold only {}", allowed.join(", ")));
        }
    }
    let host = url::Url::parse(url).ok().and_then(|u| u.host_str().map(str::to_owned)).unwrap_or_default();
    let client_name = document
        .get("client_name")
        .and_then(Value::as_str)
        .map(|n| n.chars().filter(|c| !c.is_control()).take(100).collect::<String>())
        .filter(|n| !n.trim().is_empty())
        .unwrap_or(host);
    Ok(DocumentClient { client_name, redirect_uris: uris })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    const URL: &str = "https://app.example/oauth/client.json";

    fn check(document: &Value) -> Result<DocumentClient, String> {
        check_document(URL, document.to_string().as_bytes())
    }

    #[test]
    fn a_document_must_name_itself_and_a_public_clients_redirect_uris() {
        let good =
            json!({ "client_id": URL, "client_name": "App", "redirect_uris": ["https://app.example/cb"] });
        assert_eq!(check(&good).unwrap().client_name, "App");
        let unnamed = json!({ "client_id": URL, "redirect_uris": ["http://127.0.0.1:3000/cb"] });
        assert_eq!(check(&unnamed).unwrap().client_name, "app.example");
        for bad in [
            json!({ "client_id": "https://other.example/c.json", "redirect_uris": ["https://app.example/cb"] }),
            json!({ "client_id": URL }),
            json!({ "client_id": URL, "redirect_uris": [] }),
            json!({ "client_id": URL, "redirect_uris": ["javascript:alert(1)"] }),
            json!({ "client_id": URL, "redirect_uris": ["https://app.example/cb"], "client_secret": "x" }),
            json!({ "client_id": URL, "redirect_uris": ["https://app.example/cb"], "token_endpoint_auth_method": "client_secret_basic" }),
            json!({ "client_id": URL, "redirect_uris": ["https://app.example/cb"], "grant_types": ["implicit"] }),
            json!(["not an object"]),
        ] {
            assert!(check(&bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn client_id_urls_are_https_with_a_path_in_normal_form_and_public() {
        assert!(check_url(URL, false).is_ok());
        for bad in [
            "http://app.example/c.json",
            "https://app.example/",
            "https://app.example/a/../c.json",
            "https://APP.example/c.json",
            "https://user@app.example/c.json",
            "https://app.example/c.json#x",
            "https://10.0.0.1/c.json",
            "https://127.0.0.1/c.json",
            "https://[::1]/c.json",
        ] {
            assert!(check_url(bad, false).is_err(), "{bad}");
        }
        assert!(check_url("https://127.0.0.1/c.json", true).is_ok());
    }

    #[test]
    fn a_document_is_json_by_its_media_type_alone() {
        let of = |v: &'static str| is_json(Some(&http::HeaderValue::from_static(v)));
        assert!(of("application/json") && of("Application/JSON; charset=utf-8"));
        assert!(!of("text/html") && !of("application/jsonp") && !of("text/json") && !is_json(None));
    }

    #[test]
    fn the_cache_lifetime_follows_max_age_within_bounds() {
        let of = |v: &'static str| cache_lifetime(Some(&http::HeaderValue::from_static(v)));
        assert_eq!(cache_lifetime(None), DEFAULT_CACHE);
        assert_eq!(of("public, max-age=600"), Duration::from_secs(600));
        assert_eq!(of("max-age=99999999"), MAX_CACHE);
        assert_eq!(of("no-store"), Duration::ZERO);
        assert_eq!(of("max-age=600, no-cache"), Duration::ZERO);
    }
}
