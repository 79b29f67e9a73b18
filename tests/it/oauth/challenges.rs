//! The shapes of 401 and 403 (RFC 6750 §3, the MCP authorization spec): no
//! token gets the bare challenge; an unknown, revoked or expired token
//! `error="invalid_token"`; an OAuth token whose scope is below its tool
//! call's `403` with `error="insufficient_scope"` and the `scope` to ask for,
//! while a static token's call keeps its tool error.

use super::*;

#[test]
fn a_401_says_invalid_token_only_when_a_token_was_presented() {
    let server = Server::start(&["--access-token-lifetime", "1"]);
    let metadata =
        format!("resource_metadata=\"{}/.well-known/oauth-protected-resource/mcp\"", server.base());
    let bare = server.send("POST", "/mcp", &[("Content-Type", "application/json")], "{}");
    assert_eq!(bare.status, 401);
    assert_eq!(bare.header("www-authenticate").unwrap(), format!("Bearer realm=\"kb-mcp\", {metadata}"));
    let client = server.register("app");
    let (access, _) = server.tokens_for(&client, "read");
    let revoked = {
        let (other, _) = server.tokens_for(&client, "read");
        server.form("/oauth/revoke", &[("token", &other), ("client_id", &client)], &[]);
        other
    };
    std::thread::sleep(Duration::from_millis(2100));
    for token in ["kb_wrong", "kbo_unknown", revoked.as_str(), access.as_str()] {
        let refused = server.initialize(token);
        assert_eq!(refused.status, 401, "{token}");
        let challenge = refused.header("www-authenticate").unwrap();
        assert!(challenge.starts_with("Bearer realm=\"kb-mcp\", error=\"invalid_token\""), "{challenge}");
        assert!(challenge.ends_with(&metadata), "{challenge}");
    }
}
