//! The shapes of 401 and 403 (RFC 6750 §3, the MCP authorization spec): no
//! token gets the bare challenge; an unknown, revoked or expired token
//! `error="invalid_token"`; an OAuth token whose scope is below its tool
//! call's `403` with `error="insufficient_scope"` and the `scope` to ask for,
//! while a static token's call keeps its tool error.

use super::*;

impl Server {
    /// A session opened with `token`, and the headers that continue it.
    fn session(&self, token: &str) -> Vec<(&'static str, String)> {
        let opened = self.initialize(token);
        assert_eq!(opened.status, 200, "{}", opened.body);
        let headers = vec![
            ("Authorization", format!("Bearer {token}")),
            ("Accept", "application/json, text/event-stream".to_owned()),
            ("Content-Type", "application/json".to_owned()),
            ("Mcp-Session-Id", opened.header("mcp-session-id").unwrap().to_owned()),
        ];
        let initialized = r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#;
        assert_eq!(self.send("POST", "/mcp", &borrowed(&headers), initialized).status, 202);
        headers
    }

    /// `tools/call` of `name` with `token`.
    fn call_tool(&self, token: &str, name: &str) -> Reply {
        let headers = self.session(token);
        let body = json!({
            "jsonrpc": "2.0", "id": 3, "method": "tools/call",
            "params": { "name": name, "arguments": { "path": "new.md", "content": "x" } },
        })
        .to_string();
        self.send("POST", "/mcp", &borrowed(&headers), &body)
    }
}

fn borrowed<'a>(headers: &'a [(&'static str, String)]) -> Vec<(&'static str, &'a str)> {
    headers.iter().map(|(n, v)| (*n, v.as_str())).collect()
}

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

#[test]
fn an_oauth_token_below_a_tools_scope_gets_403_insufficient_scope() {
    let server = Server::start(&[]);
    let client = server.register("app");
    let (read, _) = server.tokens_for(&client, "read");
    let refused = server.call_tool(&read, "propose_new_note");
    assert_eq!(refused.status, 403, "{}", refused.body);
    let challenge = refused.header("www-authenticate").unwrap();
    assert!(
        challenge.starts_with("Bearer realm=\"kb-mcp\", error=\"insufficient_scope\", scope=\"propose\""),
        "{challenge}"
    );
    assert!(challenge.contains("resource_metadata=\""), "{challenge}");
    let beyond = server.call_tool(&read, "apply_proposal");
    assert_eq!(beyond.status, 403, "{}", beyond.body);
    assert!(beyond.header("www-authenticate").unwrap().contains("scope=\"apply\""));

    // The granted scope is enough: the call goes through to the tool.
    let (propose, _) = server.tokens_for(&client, "propose");
    let allowed = server.call_tool(&propose, "propose_new_note");
    assert_eq!(allowed.status, 200, "{}", allowed.body);
    // A static token cannot step up: it keeps the tool's own PermissionDenied result.
    let static_call = server.call_tool(&server.static_token, "propose_new_note");
    assert_eq!(static_call.status, 200, "{}", static_call.body);
    assert!(static_call.body.contains("needs access level"), "{}", static_call.body);
}
