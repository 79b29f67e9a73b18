//! OAuth 2.1 against the real `kb-mcp --http`, driven over raw HTTP as a
//! client and a browser would: the metadata the 401 points at, registration,
//! the consent page and its form, the code exchange with PKCE, tools limited
//! to the granted scope, refresh with rotation, revocation, `kb-mcp clients`;
//! and the attacks: a wrong redirect URI, a missing or wrong PKCE verifier, a
//! reused code, a token for another resource, an expired or revoked token,
//! a forged or replayed consent form, a metadata document at a private
//! address. Static tokens keep working throughout. Client ID Metadata
//! Documents are in [`cimd`], the shapes of 401 and 403 in [`challenges`].

use crate::common;

mod challenges;
mod cimd;

use std::collections::HashMap;
use std::io::{BufRead, BufReader, Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::mpsc;
use std::time::Duration;

use base64::Engine as _;
use kb_mcp::engine::types::Access;
use kb_mcp::server::TokenFile;
use serde_json::{Value, json};
use sha2::{Digest, Sha256};

const BIN: &str = env!("CARGO_BIN_EXE_kb-mcp");
const PASSPHRASE: &str = "correct horse battery staple";
const REDIRECT: &str = "http://127.0.0.1:9/callback";
const VERIFIER: &str = "dBjftJeZ4CVP-mB92K27uhbUJU1p1r_wW1gFWFOEjXk";

/// A running `kb-mcp --http` with one static token and an owner passphrase.
struct Server {
    child: Child,
    addr: SocketAddr,
    tokens: PathBuf,
    static_token: String,
    _tmp: tempfile::TempDir,
}

impl Server {
    fn start(extra: &[&str]) -> Server {
        let (tmp, vault) = common::temp_vault();
        let tokens = tmp.path().join("tokens.json");
        let mut file = TokenFile::default();
        let static_token = file.add("laptop", Access::Read).unwrap();
        file.save(&tokens).unwrap();
        let mut owner = Command::new(BIN)
            .args(["owner", "set", "--tokens"])
            .arg(&tokens)
            .stdin(Stdio::piped())
            .stdout(Stdio::null())
            .spawn()
            .unwrap();
        owner.stdin.take().unwrap().write_all(format!("{PASSPHRASE}\n").as_bytes()).unwrap();
        assert!(owner.wait().unwrap().success());
        let mut child = Command::new(BIN)
            .args(["--http", "127.0.0.1:0", "--tokens"])
            .arg(&tokens)
            .arg("--vault")
            .arg(&vault)
            .args(extra)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let stderr = child.stderr.take().unwrap();
        let (found, listening) = mpsc::channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stderr).lines().map_while(Result::ok) {
                if let Ok(event) = serde_json::from_str::<Value>(&line)
                    && event["event"] == "listening"
                {
                    let _ = found.send(event["addr"].as_str().unwrap().parse::<SocketAddr>().unwrap());
                }
            }
        });
        let addr =
            listening.recv_timeout(Duration::from_secs(30)).expect("the server did not start listening");
        Server { child, addr, tokens, static_token, _tmp: tmp }
    }

    fn base(&self) -> String {
        format!("http://{}", self.addr)
    }

    fn send(&self, method: &str, path: &str, headers: &[(&str, &str)], body: &str) -> Reply {
        let mut stream = TcpStream::connect(self.addr).unwrap();
        stream.set_read_timeout(Some(Duration::from_secs(20))).unwrap();
        let mut request = format!(
            "{method} {path} HTTP/1.1\r\nHost: {}\r\nConnection: close\r\nContent-Length: {}\r\n",
            self.addr,
            body.len()
        );
        for (name, value) in headers {
            request.push_str(&format!("{name}: {value}\r\n"));
        }
        request.push_str("\r\n");
        request.push_str(body);
        stream.write_all(request.as_bytes()).unwrap();
        let mut raw = Vec::new();
        let _ = stream.read_to_end(&mut raw);
        let text = String::from_utf8_lossy(&raw).into_owned();
        let (head, body) = text.split_once("\r\n\r\n").unwrap_or((&text, ""));
        let mut lines = head.lines();
        let status = lines.next().unwrap_or("").split(' ').nth(1).unwrap_or("0").parse().unwrap();
        let headers = lines
            .filter_map(|l| l.split_once(':'))
            .map(|(n, v)| (n.trim().to_ascii_lowercase(), v.trim().to_owned()))
            .collect();
        Reply { status, headers, body: body.to_owned() }
    }

    fn get(&self, path: &str) -> Reply {
        self.send("GET", path, &[], "")
    }

    fn form(&self, path: &str, fields: &[(&str, &str)], headers: &[(&str, &str)]) -> Reply {
        let body = url::form_urlencoded::Serializer::new(String::new()).extend_pairs(fields).finish();
        let mut all = vec![("Content-Type", "application/x-www-form-urlencoded")];
        all.extend_from_slice(headers);
        self.send("POST", path, &all, &body)
    }

    fn register(&self, name: &str) -> String {
        let body = json!({ "client_name": name, "redirect_uris": [REDIRECT] }).to_string();
        let reply = self.send("POST", "/oauth/register", &[("Content-Type", "application/json")], &body);
        assert_eq!(reply.status, 201, "{}", reply.body);
        reply.json()["client_id"].as_str().unwrap().to_owned()
    }

    /// The consent page for `client` asking for `scope`: its attempt id, CSRF value and cookie.
    fn consent_page(&self, client: &str, scope: &str) -> (Reply, String, String) {
        let query = url::form_urlencoded::Serializer::new(String::new())
            .extend_pairs([
                ("response_type", "code"),
                ("client_id", client),
                ("redirect_uri", REDIRECT),
                ("code_challenge", &challenge(VERIFIER)),
                ("code_challenge_method", "S256"),
                ("state", "xyz"),
                ("scope", scope),
                ("resource", &format!("{}/mcp", self.base())),
            ])
            .finish();
        let page = self.get(&format!("/oauth/authorize?{query}"));
        assert_eq!(page.status, 200, "{}", page.body);
        let attempt = hidden(&page.body, "attempt");
        let csrf = hidden(&page.body, "csrf");
        let cookie = page.header("set-cookie").unwrap().split(';').next().unwrap().to_owned();
        assert_eq!(cookie, format!("kb_csrf={csrf}"));
        (page, attempt, csrf)
    }

    /// The owner's answer on a consent page.
    fn answer(
        &self,
        attempt: &str,
        csrf: &str,
        cookie: Option<&str>,
        scope: &str,
        passphrase: &str,
    ) -> Reply {
        let cookie = cookie.map(|c| format!("kb_csrf={c}"));
        let origin = self.base();
        let mut headers = vec![("Origin", origin.as_str())];
        if let Some(cookie) = &cookie {
            headers.push(("Cookie", cookie));
        }
        let fields = [
            ("attempt", attempt),
            ("csrf", csrf),
            ("scope", scope),
            ("passphrase", passphrase),
            ("decision", "allow"),
        ];
        self.form("/oauth/authorize", &fields, &headers)
    }

    /// A fresh code for `client`, the owner granting `scope`.
    fn code(&self, client: &str, scope: &str) -> String {
        let (_, attempt, csrf) = self.consent_page(client, "read propose apply");
        let reply = self.answer(&attempt, &csrf, Some(&csrf), scope, PASSPHRASE);
        assert_eq!(reply.status, 303, "{}", reply.body);
        let location = url::Url::parse(reply.header("location").unwrap()).unwrap();
        let query: HashMap<String, String> = location.query_pairs().into_owned().collect();
        assert_eq!(query["state"], "xyz");
        assert_eq!(query["iss"], self.base());
        query["code"].clone()
    }

    fn exchange(&self, client: &str, code: &str, verifier: Option<&str>, redirect: &str) -> Reply {
        let mut fields = vec![
            ("grant_type", "authorization_code"),
            ("client_id", client),
            ("code", code),
            ("redirect_uri", redirect),
        ];
        if let Some(verifier) = verifier {
            fields.push(("code_verifier", verifier));
        }
        self.form("/oauth/token", &fields, &[])
    }

    /// Tokens for `client` at `scope`: (access, refresh).
    fn tokens_for(&self, client: &str, scope: &str) -> (String, String) {
        let code = self.code(client, scope);
        let reply = self.exchange(client, &code, Some(VERIFIER), REDIRECT);
        assert_eq!(reply.status, 200, "{}", reply.body);
        let answer = reply.json();
        assert_eq!(answer["token_type"], "Bearer");
        assert_eq!(answer["scope"], scope);
        (
            answer["access_token"].as_str().unwrap().to_owned(),
            answer["refresh_token"].as_str().unwrap().to_owned(),
        )
    }

    /// The status of an MCP `initialize` sent with `token`.
    fn initialize(&self, token: &str) -> Reply {
        let auth = format!("Bearer {token}");
        let body = r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"raw","version":"0"}}}"#;
        self.send(
            "POST",
            "/mcp",
            &[
                ("Authorization", &auth),
                ("Accept", "application/json, text/event-stream"),
                ("Content-Type", "application/json"),
            ],
            body,
        )
    }

    /// The tool names `token` sees.
    fn tool_names(&self, token: &str) -> Vec<String> {
        let auth = format!("Bearer {token}");
        let opened = self.initialize(token);
        assert_eq!(opened.status, 200, "{}", opened.body);
        let session = opened.header("mcp-session-id").unwrap().to_owned();
        let headers = [
            ("Authorization", auth.as_str()),
            ("Accept", "application/json, text/event-stream"),
            ("Content-Type", "application/json"),
            ("Mcp-Session-Id", session.as_str()),
        ];
        let initialized = r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#;
        assert_eq!(self.send("POST", "/mcp", &headers, initialized).status, 202);
        let list = self.send("POST", "/mcp", &headers, r#"{"jsonrpc":"2.0","id":2,"method":"tools/list"}"#);
        let message = list
            .body
            .lines()
            .filter_map(|line| line.strip_prefix("data:"))
            .find_map(|data| serde_json::from_str::<Value>(data.trim()).ok())
            .or_else(|| serde_json::from_str(&list.body).ok())
            .unwrap_or_else(|| panic!("no tools/list answer: {}", list.body));
        message["result"]["tools"]
            .as_array()
            .unwrap()
            .iter()
            .map(|t| t["name"].as_str().unwrap().to_owned())
            .collect()
    }

    fn kb_mcp(&self, args: &[&str]) -> (i32, String) {
        let output = Command::new(BIN).args(args).arg("--tokens").arg(&self.tokens).output().unwrap();
        (output.status.code().unwrap_or(-1), String::from_utf8_lossy(&output.stdout).into_owned())
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

struct Reply {
    status: u16,
    headers: Vec<(String, String)>,
    body: String,
}

impl Reply {
    fn header(&self, name: &str) -> Option<&str> {
        self.headers.iter().find(|(n, _)| n == name).map(|(_, v)| v.as_str())
    }

    fn json(&self) -> Value {
        serde_json::from_str(&self.body).unwrap_or_else(|e| panic!("{e}: {}", self.body))
    }

    /// The query of this reply's redirect.
    fn redirect_query(&self) -> HashMap<String, String> {
        let location = self.header("location").unwrap_or_else(|| panic!("no redirect: {}", self.body));
        url::Url::parse(location).unwrap().query_pairs().into_owned().collect()
    }
}

fn challenge(verifier: &str) -> String {
    base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(Sha256::digest(verifier.as_bytes()))
}

/// The value of a hidden form field of a page.
fn hidden(page: &str, name: &str) -> String {
    let marker = format!("name=\"{name}\" value=\"");
    let start = page.find(&marker).unwrap_or_else(|| panic!("no {name} in {page}")) + marker.len();
    page[start..][..page[start..].find('"').unwrap()].to_owned()
}

fn error_of(reply: &Reply) -> String {
    reply.json()["error"].as_str().unwrap_or_default().to_owned()
}

#[test]
fn metadata_and_the_401_point_a_client_at_the_authorization_server() {
    let server = Server::start(&[]);
    let base = server.base();
    let refused = server.initialize("kb_wrong");
    assert_eq!(refused.status, 401);
    let challenge = refused.header("www-authenticate").unwrap();
    assert_eq!(
        challenge,
        format!(
            "Bearer realm=\"kb-mcp\", error=\"invalid_token\", error_description=\"the access token is unknown, \
             expired, revoked or for another resource\", \
             resource_metadata=\"{base}/.well-known/oauth-protected-resource/mcp\""
        )
    );
    for path in ["/.well-known/oauth-protected-resource/mcp", "/.well-known/oauth-protected-resource"] {
        let metadata = server.get(path).json();
        assert_eq!(metadata["resource"], format!("{base}/mcp"));
        assert_eq!(metadata["authorization_servers"], json!([base]));
        assert_eq!(metadata["scopes_supported"], json!(["read", "propose", "apply"]));
    }
    let metadata = server.get("/.well-known/oauth-authorization-server").json();
    assert_eq!(metadata["issuer"], base);
    assert_eq!(metadata["authorization_endpoint"], format!("{base}/oauth/authorize"));
    assert_eq!(metadata["token_endpoint"], format!("{base}/oauth/token"));
    assert_eq!(metadata["registration_endpoint"], format!("{base}/oauth/register"));
    assert_eq!(metadata["code_challenge_methods_supported"], json!(["S256"]));
    // A browser-based client (the MCP Inspector) may call the endpoints: CORS preflight.
    let preflight = server.send(
        "OPTIONS",
        "/oauth/register",
        &[("Origin", "http://localhost:6274"), ("Access-Control-Request-Method", "POST")],
        "",
    );
    assert_eq!(preflight.status, 204, "{}", preflight.body);
    assert_eq!(preflight.header("access-control-allow-origin"), Some("*"));
    // The static token works beside OAuth.
    assert_eq!(server.initialize(&server.static_token).status, 200);

    // --public-url names the issuer and resource, and its host is allowed.
    let public = Server::start(&["--public-url", "https://kb.example.com/"]);
    let metadata =
        public.send("GET", "/.well-known/oauth-protected-resource", &[("Host", "kb.example.com")], "").json();
    assert_eq!(metadata["resource"], "https://kb.example.com/mcp");
    assert_eq!(metadata["authorization_servers"], json!(["https://kb.example.com"]));
}

#[test]
fn a_client_registers_gets_consent_and_calls_tools_within_the_granted_scope() {
    let server = Server::start(&[]);
    let client = server.register("Test <App>");
    let (page, _, _) = server.consent_page(&client, "read propose apply");
    assert!(page.body.contains("Test &lt;App&gt;") && !page.body.contains("<App>"), "{}", page.body);
    assert!(page.body.contains("<b>vault</b>"), "names the vault: {}", page.body);
    assert!(page.header("content-security-policy").unwrap().contains("default-src 'none'"));
    assert_eq!(page.header("x-frame-options"), Some("DENY"));

    // The owner grants less than was asked: propose, not apply.
    let (access, refresh) = server.tokens_for(&client, "propose");
    let tools = server.tool_names(&access);
    assert!(tools.iter().any(|t| t == "propose_new_note"), "{tools:?}");
    assert!(!tools.iter().any(|t| t == "apply_proposal"), "{tools:?}");

    // Refresh rotates; the old refresh token, presented again, ends the family.
    let refreshed = server.form(
        "/oauth/token",
        &[("grant_type", "refresh_token"), ("client_id", &client), ("refresh_token", &refresh)],
        &[],
    );
    assert_eq!(refreshed.status, 200, "{}", refreshed.body);
    let new_access = refreshed.json()["access_token"].as_str().unwrap().to_owned();
    assert_eq!(server.initialize(&new_access).status, 200);
    let reused = server.form(
        "/oauth/token",
        &[("grant_type", "refresh_token"), ("client_id", &client), ("refresh_token", &refresh)],
        &[],
    );
    assert_eq!((reused.status, error_of(&reused).as_str()), (400, "invalid_grant"));
    assert_eq!(server.initialize(&new_access).status, 401, "the family is revoked");
    assert_eq!(server.initialize(&access).status, 401);

    // Revocation (RFC 7009) of an access token.
    let (access, _) = server.tokens_for(&client, "read");
    assert_eq!(server.initialize(&access).status, 200);
    let revoked = server.form("/oauth/revoke", &[("token", &access), ("client_id", &client)], &[]);
    assert_eq!(revoked.status, 200);
    assert_eq!(server.initialize(&access).status, 401);

    // `kb-mcp clients list` and `revoke`, effective at the next request.
    let (access, _) = server.tokens_for(&client, "read");
    let (code, listed) = server.kb_mcp(&["clients", "list"]);
    assert_eq!(code, 0);
    assert!(listed.contains("Test <App>") && listed.contains(&client) && listed.contains("read"), "{listed}");
    let (code, said) = server.kb_mcp(&["clients", "revoke", "Test <App>"]);
    assert_eq!(code, 0, "{said}");
    assert_eq!(server.initialize(&access).status, 401);
    assert_eq!(server.initialize(&server.static_token).status, 200, "static tokens are untouched");
}

#[test]
fn codes_need_their_client_redirect_uri_and_pkce_verifier_once() {
    let server = Server::start(&[]);
    let client = server.register("app");
    let attack = |code: &str, verifier: Option<&str>, redirect: &str, expected: &str| {
        let reply = server.exchange(&client, code, verifier, redirect);
        assert_eq!(reply.status, 400, "{}", reply.body);
        assert_eq!(error_of(&reply), expected, "{}", reply.body);
        assert!(reply.json().get("access_token").is_none());
    };
    let code = server.code(&client, "read");
    attack(&code, None, REDIRECT, "invalid_request");
    attack(&code, Some(VERIFIER), REDIRECT, "invalid_grant"); // spent by the attempt without a verifier
    let code = server.code(&client, "read");
    attack(&code, Some("dBjftJeZ4CVP-mB92K27uhbUJU1p1r_wW1gFWFOEjXK"), REDIRECT, "invalid_grant");
    let code = server.code(&client, "read");
    attack(&code, Some(VERIFIER), "http://127.0.0.1:9/other", "invalid_grant");
    let other = server.register("other");
    let code = server.code(&client, "read");
    let stolen = server.exchange(&other, &code, Some(VERIFIER), REDIRECT);
    assert_eq!(error_of(&stolen), "invalid_grant");

    // Code reuse: the second exchange fails and revokes what the first issued.
    let code = server.code(&client, "read");
    let first = server.exchange(&client, &code, Some(VERIFIER), REDIRECT);
    assert_eq!(first.status, 200, "{}", first.body);
    let access = first.json()["access_token"].as_str().unwrap().to_owned();
    assert_eq!(server.initialize(&access).status, 200);
    attack(&code, Some(VERIFIER), REDIRECT, "invalid_grant");
    assert_eq!(server.initialize(&access).status, 401);

    // A redirect URI named in the request must be named again at the exchange.
    let code = server.code(&client, "read");
    let fields = [
        ("grant_type", "authorization_code"),
        ("client_id", client.as_str()),
        ("code", code.as_str()),
        ("code_verifier", VERIFIER),
    ];
    assert_eq!(error_of(&server.form("/oauth/token", &fields, &[])), "invalid_grant");
    // One the request left out (the client has one) may be left out there too.
    let query = url::form_urlencoded::Serializer::new(String::new())
        .extend_pairs([
            ("response_type", "code"),
            ("client_id", client.as_str()),
            ("code_challenge", &challenge(VERIFIER)),
            ("code_challenge_method", "S256"),
        ])
        .finish();
    let page = server.get(&format!("/oauth/authorize?{query}"));
    assert_eq!(page.status, 200, "{}", page.body);
    let (attempt, csrf) = (hidden(&page.body, "attempt"), hidden(&page.body, "csrf"));
    let code =
        server.answer(&attempt, &csrf, Some(&csrf), "read", PASSPHRASE).redirect_query()["code"].clone();
    let reply = server.form(
        "/oauth/token",
        &[
            ("grant_type", "authorization_code"),
            ("client_id", client.as_str()),
            ("code", code.as_str()),
            ("code_verifier", VERIFIER),
        ],
        &[],
    );
    assert_eq!(reply.status, 200, "{}", reply.body);

    // A token for another resource is never issued.
    let code = server.code(&client, "read");
    let mut fields = vec![
        ("grant_type", "authorization_code"),
        ("client_id", client.as_str()),
        ("code", code.as_str()),
        ("redirect_uri", REDIRECT),
        ("code_verifier", VERIFIER),
    ];
    fields.push(("resource", "https://other.example/mcp"));
    let reply = server.form("/oauth/token", &fields, &[]);
    assert_eq!((reply.status, error_of(&reply).as_str()), (400, "invalid_target"));
}

#[test]
fn authorization_requests_are_checked_before_anything_is_sent_back() {
    let server = Server::start(&[]);
    let client = server.register("app");
    let base = server.base();
    let ask = |pairs: &[(&str, &str)]| {
        let query = url::form_urlencoded::Serializer::new(String::new()).extend_pairs(pairs).finish();
        server.get(&format!("/oauth/authorize?{query}"))
    };
    let good_challenge = challenge(VERIFIER);
    let with = |extra: &[(&'static str, &str)]| -> Vec<(String, String)> {
        let mut pairs: Vec<(String, String)> = vec![
            ("response_type".into(), "code".into()),
            ("client_id".into(), client.clone()),
            ("redirect_uri".into(), REDIRECT.into()),
            ("code_challenge".into(), good_challenge.clone()),
            ("code_challenge_method".into(), "S256".into()),
        ];
        for (name, value) in extra {
            pairs.retain(|(n, _)| n != name);
            if !value.is_empty() {
                pairs.push(((*name).into(), (*value).into()));
            }
        }
        pairs
    };
    let get = |pairs: Vec<(String, String)>| {
        let pairs: Vec<(&str, &str)> = pairs.iter().map(|(n, v)| (n.as_str(), v.as_str())).collect();
        ask(&pairs)
    };
    // A wrong redirect URI gets a page, never a redirect.
    let wrong = get(with(&[("redirect_uri", "https://evil.example/cb")]));
    assert_eq!(wrong.status, 400);
    assert!(
        wrong.header("location").is_none() && wrong.body.contains("Wrong return address"),
        "{}",
        wrong.body
    );
    // An unregistered redirect URI is refused at registration too.
    let body = json!({ "client_name": "x", "redirect_uris": ["http://evil.example/cb"] }).to_string();
    let refused = server.send("POST", "/oauth/register", &[("Content-Type", "application/json")], &body);
    assert_eq!((refused.status, error_of(&refused).as_str()), (400, "invalid_redirect_uri"));
    // PKCE is required, S256 only.
    for (extra, error) in [
        (vec![("code_challenge", "")], "invalid_request"),
        (vec![("code_challenge_method", "plain")], "invalid_request"),
        (vec![("scope", "read admin")], "invalid_scope"),
        (vec![("resource", "https://other.example/mcp")], "invalid_target"),
        (vec![("response_type", "token")], "unsupported_response_type"),
    ] {
        let reply = get(with(&extra));
        assert_eq!(reply.status, 303, "{extra:?}: {}", reply.body);
        let query = reply.redirect_query();
        assert_eq!(query["error"], error, "{extra:?}");
        assert_eq!(query["iss"], base);
        assert!(!query.contains_key("code"));
    }
    // A client id that is a metadata document URL, at a private address: never fetched.
    let document = get(with(&[("client_id", "https://127.0.0.1/client.json")]));
    assert_eq!(document.status, 400);
    assert!(
        document.header("location").is_none() && document.body.contains("not a public address"),
        "{}",
        document.body
    );
}

#[test]
fn the_consent_form_refuses_forgeries_replays_and_wrong_passphrases() {
    let server = Server::start(&[]);
    let client = server.register("app");
    let over = |reply: &Reply| {
        assert!(reply.header("location").is_none(), "no code: {:?}", reply.headers);
    };
    // CSRF: the form without the page's cookie is refused and ends the attempt.
    let (_, attempt, csrf) = server.consent_page(&client, "read");
    let forged = server.answer(&attempt, &csrf, None, "read", PASSPHRASE);
    assert_eq!(forged.status, 403);
    assert!(forged.body.contains("did not come from"), "{}", forged.body);
    over(&forged);
    let after = server.answer(&attempt, &csrf, Some(&csrf), "read", PASSPHRASE);
    assert_eq!(after.status, 400);
    over(&after);
    // CSRF: a cross-origin post, even with the cookie (a page on another local port).
    let (_, attempt, csrf) = server.consent_page(&client, "read");
    let cookie = format!("kb_csrf={csrf}");
    let fields = [
        ("attempt", attempt.as_str()),
        ("csrf", &csrf),
        ("scope", "read"),
        ("passphrase", PASSPHRASE),
        ("decision", "allow"),
    ];
    let cross =
        server.form("/oauth/authorize", &fields, &[("Origin", "http://localhost:1"), ("Cookie", &cookie)]);
    assert_eq!(cross.status, 403);
    over(&cross);
    // A wrong CSRF value.
    let (_, attempt, csrf) = server.consent_page(&client, "read");
    let wrong = server.answer(&attempt, "not-the-value", Some(&csrf), "read", PASSPHRASE);
    assert_eq!(wrong.status, 403);
    over(&wrong);
    // More access than asked for.
    let (_, attempt, csrf) = server.consent_page(&client, "read");
    let more = server.answer(&attempt, &csrf, Some(&csrf), "apply", PASSPHRASE);
    assert_eq!(more.status, 400);
    over(&more);
    // A wrong passphrase, then the right one; then the same form replayed.
    let wrong = server.answer(&attempt, &csrf, Some(&csrf), "read", "not the passphrase");
    assert_eq!(wrong.status, 403);
    assert!(wrong.body.contains("Wrong passphrase"));
    over(&wrong);
    let right = server.answer(&attempt, &csrf, Some(&csrf), "read", PASSPHRASE);
    assert_eq!(right.status, 303, "{}", right.body);
    assert!(right.redirect_query().contains_key("code"));
    let replayed = server.answer(&attempt, &csrf, Some(&csrf), "read", PASSPHRASE);
    assert_eq!(replayed.status, 400);
    assert!(replayed.body.contains("This request is over"));
    over(&replayed);
    // Three wrong passphrases end an attempt.
    let (_, attempt, csrf) = server.consent_page(&client, "read");
    for _ in 0..3 {
        assert_eq!(server.answer(&attempt, &csrf, Some(&csrf), "read", "guess guess guess").status, 403);
    }
    let late = server.answer(&attempt, &csrf, Some(&csrf), "read", PASSPHRASE);
    assert_eq!(late.status, 400);
    over(&late);
    // Deny sends the client an error, not a code.
    let (_, attempt, csrf) = server.consent_page(&client, "read");
    let deny_fields = [
        ("attempt", attempt.as_str()),
        ("csrf", &csrf),
        ("scope", "read"),
        ("passphrase", ""),
        ("decision", "deny"),
    ];
    let cookie = format!("kb_csrf={csrf}");
    let base = server.base();
    let denied = server.form("/oauth/authorize", &deny_fields, &[("Origin", &base), ("Cookie", &cookie)]);
    assert_eq!(denied.status, 303);
    assert_eq!(denied.redirect_query()["error"], "access_denied");
}

#[test]
fn an_expired_access_token_is_refused_and_a_refresh_replaces_it() {
    let server = Server::start(&["--access-token-lifetime", "3"]);
    let client = server.register("app");
    let (access, refresh) = server.tokens_for(&client, "read");
    assert_eq!(server.initialize(&access).status, 200);
    std::thread::sleep(Duration::from_millis(3100));
    let expired = server.initialize(&access);
    assert_eq!(expired.status, 401);
    assert!(expired.header("www-authenticate").unwrap().contains("resource_metadata="));
    let refreshed = server.form(
        "/oauth/token",
        &[("grant_type", "refresh_token"), ("client_id", &client), ("refresh_token", &refresh)],
        &[],
    );
    assert_eq!(refreshed.status, 200, "{}", refreshed.body);
    assert_eq!(server.initialize(refreshed.json()["access_token"].as_str().unwrap()).status, 200);
}

/// `kb-mcp owner set` refuses a short passphrase and changes nothing.
#[test]
fn a_short_owner_passphrase_is_refused() {
    let tmp = tempfile::tempdir().unwrap();
    let tokens = tmp.path().join("tokens.json");
    let mut owner = Command::new(BIN)
        .args(["owner", "set", "--tokens"])
        .arg(&tokens)
        .stdin(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    owner.stdin.take().unwrap().write_all(b"too short\n").unwrap();
    let output = owner.wait_with_output().unwrap();
    assert_eq!(output.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&output.stderr).contains("shorter than 12"));
    assert!(!kb_mcp::server::oauth_state_path(&tokens).exists());
}

/// The state file beside the token file holds hashes, never a token.
#[test]
fn the_oauth_state_file_is_private_and_holds_no_token() {
    let server = Server::start(&[]);
    let client = server.register("app");
    let (access, refresh) = server.tokens_for(&client, "read");
    let state_path = kb_mcp::server::oauth_state_path(&server.tokens);
    let text = std::fs::read_to_string(&state_path).unwrap();
    assert!(!text.contains(&access) && !text.contains(&refresh) && !text.contains(PASSPHRASE));
    assert!(text.contains("$argon2id$"));
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt as _;
        let mode = std::fs::metadata(&state_path).unwrap().permissions().mode();
        assert_eq!(mode & 0o077, 0, "{mode:o}");
    }
    assert!(Path::new(&state_path).parent() == server.tokens.parent());
}
