//! Which redirect URIs a client may use, whether it registered itself
//! (RFC 7591) or is described by a metadata document: HTTPS; HTTP on a
//! loopback host (native apps, RFC 8252 §7.3); or an app's private scheme
//! (§7.1). Never a fragment, never a scheme a browser would run.

/// Whether a redirect URI may be registered: HTTPS; HTTP on a loopback host
/// (native apps, RFC 8252 §7.3); or an app's private scheme (§7.1). Never a
/// fragment, never a scheme a browser would run.
pub(super) fn redirect_uri_allowed(text: &str) -> bool {
    let Ok(url) = url::Url::parse(text) else { return false };
    if url.fragment().is_some() || text.len() > 2000 {
        return false;
    }
    match url.scheme() {
        "https" => url.host().is_some(),
        "http" => matches!(url.host_str(), Some("localhost" | "127.0.0.1" | "[::1]")),
        "javascript" | "data" | "file" | "vbscript" | "blob" | "about" | "ftp" | "ws" | "wss" => false,
        _ => true,
    }
}

#[cfg(test)]
mod tests {
    use super::redirect_uri_allowed;

    #[test]
    fn redirect_uris_are_https_loopback_or_an_apps_own() {
        for good in [
            "https://claude.ai/api/mcp/auth_callback",
            "https://chatgpt.com/connector_platform_oauth_redirect",
            "http://127.0.0.1:33418/callback",
            "http://localhost/cb",
            "cursor://anysphere.cursor-retrieval/oauth/callback",
        ] {
            assert!(redirect_uri_allowed(good), "{good}");
        }
        for bad in ["http://evil.example/cb", "javascript:alert(1)", "https://a.example/cb#frag", "not a url"]
        {
            assert!(!redirect_uri_allowed(bad), "{bad}");
        }
    }
}
