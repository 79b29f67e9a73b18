//! The real `kb-mcp` binary over Streamable HTTP: the token commands, the safe
//! start-up refusals, the gate in front of `/mcp` (401, 403, 413, 429, Host,
//! live revocation), tools per token scope through rmcp's HTTP client, a
//! propose → apply round trip, a graceful SIGTERM, and a bounded load test
//! (32 readers and an applier; small by default, full with `KB_LOAD=1`).
//! Every server listens on 127.0.0.1 with a port the kernel picks.

#![allow(
    clippy::disallowed_methods,
    clippy::disallowed_types,
    reason = "the tests build and inspect vaults on disk"
)]

use crate::common;

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex, mpsc};
use std::time::{Duration, Instant};

use kb_mcp::engine::types::Access;
use kb_mcp::server::TokenFile;
use rmcp::ClientServiceExt as _;
use rmcp::model::*;
use rmcp::service::RunningService;
use rmcp::transport::StreamableHttpClientTransport;
use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
use rmcp::{RoleClient, ServiceError, ServiceExt};
use serde_json::{Value, json};

type Client = RunningService<RoleClient, ClientConfig>;

const BIN: &str = env!("CARGO_BIN_EXE_kb-mcp");

fn kb_mcp(args: &[&str]) -> (i32, String, String) {
    let output = Command::new(BIN).args(args).stdin(Stdio::null()).output().unwrap();
    crate::common::outcome(output)
}

/// `kb-mcp token add`, returning the token (the last line of stdout).
fn token_add(file: &Path, name: &str, scope: &str) -> String {
    let (code, out, err) =
        kb_mcp(&["token", "add", name, "--scope", scope, "--tokens", file.to_str().unwrap()]);
    assert_eq!(code, 0, "{err}");
    out.lines().last().unwrap().to_owned()
}

/// A running `kb-mcp --http` on a temp copy of the fixture vault.
struct Server {
    child: Child,
    addr: SocketAddr,
    vault: PathBuf,
    tokens: PathBuf,
    log: Arc<Mutex<Vec<String>>>,
    _tmp: tempfile::TempDir,
}

impl Server {
    /// Starts a server; `tokens` are (name, scope) pairs created first.
    fn start(tokens: &[(&str, Access)], extra: &[&str]) -> (Server, Vec<String>) {
        Server::start_on(tokens, extra, |_| {})
    }

    /// [`Server::start`] on the test vault as `prepare` leaves it.
    fn start_on(
        tokens: &[(&str, Access)],
        extra: &[&str],
        prepare: impl FnOnce(&Path),
    ) -> (Server, Vec<String>) {
        let (tmp, vault) = common::temp_vault();
        prepare(&vault);
        let file = tmp.path().join("tokens.json");
        let mut stored = TokenFile::default();
        let secrets: Vec<String> =
            tokens.iter().map(|(name, scope)| stored.add(name, *scope).unwrap()).collect();
        stored.save(&file).unwrap();
        let mut child = Command::new(BIN)
            .args(["--http", "127.0.0.1:0", "--tokens"])
            .arg(&file)
            .arg("--vault")
            .arg(&vault)
            .args(extra)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let stderr = child.stderr.take().unwrap();
        let log = Arc::new(Mutex::new(Vec::new()));
        let (found, listening) = mpsc::channel();
        let lines = log.clone();
        std::thread::spawn(move || {
            for line in BufReader::new(stderr).lines().map_while(Result::ok) {
                if let Ok(event) = serde_json::from_str::<Value>(&line)
                    && event["event"] == "listening"
                {
                    let _ = found.send(event["addr"].as_str().unwrap().parse::<SocketAddr>().unwrap());
                }
                lines.lock().unwrap().push(line);
            }
        });
        let addr =
            listening.recv_timeout(Duration::from_secs(30)).expect("the server did not start listening");
        (Server { child, addr, vault, tokens: file, log, _tmp: tmp }, secrets)
    }

    fn url(&self) -> String {
        format!("http://{}/mcp", self.addr)
    }

    fn logged(&self) -> String {
        self.log.lock().unwrap().join("\n")
    }

    /// The log once a line holding every one of `needles` has arrived, or as it
    /// stands after `limit` (stderr is read on another thread, so a line the
    /// server wrote a moment ago may not be here yet).
    fn logged_once(&self, needles: &[&str], limit: Duration) -> String {
        let start = Instant::now();
        loop {
            let log = self.logged();
            if log.lines().any(|line| needles.iter().all(|n| line.contains(n))) || start.elapsed() > limit {
                return log;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    async fn connect(&self, token: &str) -> Client {
        let transport = StreamableHttpClientTransport::from_config(
            StreamableHttpClientTransportConfig::with_uri(self.url()).auth_header(token.to_owned()),
        );
        ClientConfig::new(ClientCapabilities::default(), Implementation::new("kb-mcp-http-tests", "0"))
            .with_protocol_version(ProtocolVersion::V_2025_11_25)
            .serve(transport)
            .await
            .unwrap()
    }

    /// A client speaking 2026-07-28: no session, each request on its own.
    async fn connect_without_session(&self, token: &str) -> Client {
        let transport = StreamableHttpClientTransport::from_config(
            StreamableHttpClientTransportConfig::with_uri(self.url()).auth_header(token.to_owned()),
        );
        ClientConfig::new(ClientCapabilities::default(), Implementation::new("kb-mcp-http-tests", "0"))
            .with_protocol_version(ProtocolVersion::V_2026_07_28)
            .serve_with_lifecycle(
                transport,
                rmcp::ClientLifecycleMode::Discover {
                    preferred_versions: vec![ProtocolVersion::V_2026_07_28],
                },
            )
            .await
            .unwrap()
    }

    /// Sends SIGTERM and waits for the exit code, failing after `limit`.
    #[cfg(unix)]
    fn terminate(&mut self, limit: Duration) -> i32 {
        let status = Command::new("kill").args(["-TERM", &self.child.id().to_string()]).status().unwrap();
        assert!(status.success());
        let started = Instant::now();
        loop {
            if let Some(status) = self.child.try_wait().unwrap() {
                return status.code().unwrap_or(-1);
            }
            assert!(started.elapsed() < limit, "no exit within {limit:?} of SIGTERM");
            std::thread::sleep(Duration::from_millis(20));
        }
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// A raw HTTP/1.1 response.
struct Reply {
    status: u16,
    headers: Vec<(String, String)>,
    body: String,
}

impl Reply {
    fn header(&self, name: &str) -> Option<&str> {
        self.headers.iter().find(|(n, _)| n.eq_ignore_ascii_case(name)).map(|(_, v)| v.as_str())
    }
}

const INITIALIZE: &str = r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"raw","version":"0"}}}"#;

/// One POST to `/mcp` over a fresh connection; `headers` come after the defaults
/// (Host, Accept, Content-Type), `body` is sent as is unless `declared` overrides
/// the Content-Length (and then no body is sent).
fn post(addr: SocketAddr, headers: &[(&str, &str)], body: &str, declared: Option<u64>) -> Reply {
    send(addr, "POST /mcp", headers, body, declared)
}

/// One GET of `path` over a fresh connection, as [`post`].
fn get(addr: SocketAddr, path: &str, headers: &[(&str, &str)]) -> Reply {
    send(addr, &format!("GET {path}"), headers, "", None)
}

fn send(addr: SocketAddr, line: &str, headers: &[(&str, &str)], body: &str, declared: Option<u64>) -> Reply {
    let mut stream = TcpStream::connect(addr).unwrap();
    stream.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    let mut request = format!(
        "{line} HTTP/1.1\r\nHost: 127.0.0.1:{}\r\nAccept: application/json, text/event-stream\r\n\
         Content-Type: application/json\r\nConnection: close\r\n",
        addr.port()
    );
    let mut host_given = false;
    for (name, value) in headers {
        if name.eq_ignore_ascii_case("host") {
            host_given = true;
        }
        request.push_str(&format!("{name}: {value}\r\n"));
    }
    if host_given {
        let first = request.find("Host: ").unwrap();
        let end = first + request[first..].find("\r\n").unwrap() + 2;
        request.replace_range(first..end, "");
    }
    match declared {
        Some(length) => request.push_str(&format!("Content-Length: {length}\r\n\r\n")),
        None => request.push_str(&format!("Content-Length: {}\r\n\r\n{body}", body.len())),
    }
    stream.write_all(request.as_bytes()).unwrap();
    let mut raw = Vec::new();
    let _ = stream.read_to_end(&mut raw);
    let text = String::from_utf8_lossy(&raw).into_owned();
    let (head, body) = text.split_once("\r\n\r\n").unwrap_or((&text, ""));
    let mut lines = head.lines();
    let status = lines.next().unwrap_or("").split(' ').nth(1).unwrap_or("0").parse().unwrap();
    let headers = lines
        .filter_map(|l| l.split_once(':'))
        .map(|(n, v)| (n.trim().to_owned(), v.trim().to_owned()))
        .collect();
    Reply { status, headers, body: body.to_owned() }
}

fn bearer(token: &str) -> String {
    format!("Bearer {token}")
}

fn args(value: Value) -> JsonObject {
    value.as_object().cloned().unwrap_or_default()
}

async fn call(client: &Client, name: &str, arguments: Value) -> Result<CallToolResult, ServiceError> {
    client.call_tool(CallToolRequestParams::new(name.to_owned()).with_arguments(args(arguments))).await
}

fn error_code(result: &CallToolResult) -> Option<String> {
    (result.is_error == Some(true)).then(|| {
        common::tool_error(&serde_json::to_value(result).unwrap())["code"].as_str().unwrap().to_owned()
    })
}

#[test]
fn token_commands_keep_only_salted_hashes() {
    let tmp = tempfile::tempdir().unwrap();
    let file = tmp.path().join("conf/tokens.json");
    let path = file.to_str().unwrap();
    let (code, out, _) = kb_mcp(&["token", "add", "laptop", "--scope", "read", "--tokens", path]);
    assert_eq!(code, 0);
    let token = out.lines().last().unwrap();
    assert!(token.starts_with("kb_") && token.len() == 67, "{token}");
    let phone = token_add(&file, "phone", "apply");
    assert_ne!(token, phone);

    let stored = std::fs::read_to_string(&file).unwrap();
    assert!(!stored.contains(&token[3..]) && !stored.contains(&phone[3..]), "no plaintext token on disk");
    let parsed: Value = serde_json::from_str(&stored).unwrap();
    assert_eq!(parsed["version"], 1);
    let record = &parsed["tokens"][0];
    assert_eq!((record["name"].as_str(), record["scope"].as_str()), (Some("laptop"), Some("read")));
    assert_eq!(record["salt"].as_str().unwrap().len(), 32);
    assert!(record["hash"].as_str().unwrap().starts_with("sha256:"));
    assert_ne!(parsed["tokens"][0]["salt"], parsed["tokens"][1]["salt"]);
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        assert_eq!(std::fs::metadata(&file).unwrap().permissions().mode() & 0o777, 0o600);
    }

    let (code, _, err) = kb_mcp(&["token", "add", "laptop", "--scope", "apply", "--tokens", path]);
    assert_eq!(code, 2, "a duplicate name is bad input (issue 13): {err}");
    assert!(err.contains("already exists"));
    let (code, _, _) = kb_mcp(&["token", "add", "bad name", "--scope", "read", "--tokens", path]);
    assert_eq!(code, 2);

    let (code, out, _) = kb_mcp(&["token", "list", "--tokens", path]);
    assert_eq!(code, 0);
    assert!(out.contains("laptop") && out.contains("phone") && out.contains("apply"), "{out}");
    assert!(!out.contains("sha256") && !out.contains(&token[3..]), "list shows no hashes or tokens");

    let (code, _, _) = kb_mcp(&["token", "revoke", "laptop", "--tokens", path]);
    assert_eq!(code, 0);
    let (code, _, err) = kb_mcp(&["token", "revoke", "laptop", "--tokens", path]);
    assert_eq!(code, 1, "{err}");
    let (_, out, _) = kb_mcp(&["token", "list", "--tokens", path]);
    assert!(!out.contains("laptop") && out.contains("phone"));
}

#[test]
fn http_refuses_to_start_unsafely() {
    let (tmp, vault) = common::temp_vault();
    let file = tmp.path().join("tokens.json");
    let vault = vault.to_str().unwrap();
    let (code, _, err) = kb_mcp(&["--http", "127.0.0.1:0", "--vault", vault]);
    assert_eq!(code, 2);
    assert!(err.contains("every HTTP request needs a token") && err.contains("kb-mcp token add"), "{err}");
    let (code, _, err) =
        kb_mcp(&["--http", "127.0.0.1:0", "--vault", vault, "--tokens", file.to_str().unwrap()]);
    assert_eq!(code, 2, "a missing token file: {err}");
    token_add(&file, "t", "read");
    let tokens = file.to_str().unwrap();
    for addr in ["0.0.0.0:0", "[::]:0", "192.0.2.1:8765"] {
        let (code, _, err) = kb_mcp(&["--http", addr, "--vault", vault, "--tokens", tokens]);
        assert_eq!(code, 2, "{addr}: {err}");
        assert!(err.contains("--allow-remote"), "{err}");
    }
    let (code, _, err) = kb_mcp(&["--http", "nonsense", "--vault", vault, "--tokens", tokens]);
    assert_eq!(code, 2, "{err}");
    let (code, _, err) =
        kb_mcp(&["--http", "127.0.0.1:0", "--vault", vault, "--tokens", tokens, "--allow-origin", "evil"]);
    assert_eq!(code, 2, "{err}");
}

#[test]
fn the_gate_refuses_without_revealing_anything() {
    let (server, secrets) = Server::start(
        &[
            ("rebind", Access::Read),
            ("tunnel", Access::Read),
            ("burst", Access::Read),
            ("revoked", Access::Read),
        ],
        &["--rate", "0.5", "--allowed-host", "kb.example.com"],
    );
    let [rebind, tunnel, burst, revoked] = [&secrets[0], &secrets[1], &secrets[2], &secrets[3]];
    let addr = server.addr;

    // RFC 6750 §3.1: `invalid_token` only when a bearer token was presented.
    for (headers, error) in [
        (vec![], ""),
        (
            vec![("Authorization", bearer("kb_0123"))],
            "error=\"invalid_token\", error_description=\"the access token is unknown, expired, revoked or \
             for another resource\", ",
        ),
        (vec![("Authorization", "Basic a2I6eA==".to_owned())], ""),
    ] {
        let headers: Vec<(&str, &str)> = headers.iter().map(|(n, v)| (*n, v.as_str())).collect();
        let reply = post(addr, &headers, INITIALIZE, None);
        assert_eq!(reply.status, 401, "{headers:?}");
        let metadata = format!("http://{addr}/.well-known/oauth-protected-resource/mcp");
        let challenge = format!("Bearer realm=\"kb-mcp\", {error}resource_metadata=\"{metadata}\"");
        assert_eq!(reply.header("www-authenticate"), Some(challenge.as_str()));
        assert_eq!(reply.body, "a valid bearer token is required\n", "nothing about the vault");
        assert!(reply.header("mcp-session-id").is_none());
    }

    let foreign = post(
        addr,
        &[("Origin", "https://evil.example"), ("Authorization", &bearer(rebind))],
        INITIALIZE,
        None,
    );
    assert_eq!(foreign.status, 403, "a foreign browser origin");
    let local_page = post(addr, &[("Origin", "http://localhost:5173")], INITIALIZE, None);
    assert_eq!(local_page.status, 401, "a loopback origin passes the origin check");

    let big = post(addr, &[("Authorization", &bearer(rebind))], "", Some(5 << 20));
    assert_eq!(big.status, 413, "a declared body over 4 MiB");

    let rebinding =
        post(addr, &[("Host", "evil.example:80"), ("Authorization", &bearer(rebind))], INITIALIZE, None);
    assert_eq!(rebinding.status, 403, "a Host that is not allowed (DNS rebinding)");
    let tunnel =
        post(addr, &[("Host", "kb.example.com"), ("Authorization", &bearer(tunnel))], INITIALIZE, None);
    assert_eq!(tunnel.status, 200, "an --allowed-host passes: {}", tunnel.body);
    assert!(tunnel.body.contains("\"serverInfo\""));

    // --rate 0.5 allows one request every two seconds (a burst of one), then asks to wait.
    let statuses: Vec<u16> =
        (0..2).map(|_| post(addr, &[("Authorization", &bearer(burst))], INITIALIZE, None).status).collect();
    assert_eq!(statuses, [200, 429]);
    let limited = post(addr, &[("Authorization", &bearer(burst))], INITIALIZE, None);
    assert_eq!(limited.status, 429);
    let wait: u64 = limited.header("retry-after").unwrap().parse().unwrap();
    assert!((1..=2).contains(&wait), "Retry-After {wait}");

    // A revoked token stops working on the running server (the file is re-read within a second).
    assert_eq!(post(addr, &[("Authorization", &bearer(revoked))], INITIALIZE, None).status, 200);
    let (code, _, _) = kb_mcp(&["token", "revoke", "revoked", "--tokens", server.tokens.to_str().unwrap()]);
    assert_eq!(code, 0);
    std::thread::sleep(Duration::from_millis(1100));
    assert_eq!(post(addr, &[("Authorization", &bearer(revoked))], INITIALIZE, None).status, 401);

    let log = server.logged_once(&["\"token\":\"burst\""], Duration::from_secs(10));
    for secret in &secrets {
        assert!(!log.contains(&secret[3..]), "tokens never reach the log");
    }
    assert!(log.contains("\"token\":\"burst\""), "the log names the rate-limited token");
}

#[test]
fn idle_sessions_expire() {
    let (server, secrets) = Server::start(&[("reader", Access::Read)], &["--session-idle", "1"]);
    let auth = bearer(&secrets[0]);
    let opened = post(server.addr, &[("Authorization", &auth)], INITIALIZE, None);
    assert_eq!(opened.status, 200);
    let session = opened.header("mcp-session-id").unwrap().to_owned();
    let initialized = r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#;
    let ping = r#"{"jsonrpc":"2.0","id":2,"method":"ping"}"#;
    let with_session = [("Authorization", auth.as_str()), ("Mcp-Session-Id", session.as_str())];
    assert_eq!(post(server.addr, &with_session, initialized, None).status, 202);
    let alive = post(server.addr, &with_session, ping, None);
    assert_eq!(alive.status, 200, "{}", alive.body);
    std::thread::sleep(Duration::from_millis(2500));
    assert_eq!(post(server.addr, &with_session, ping, None).status, 404, "the idle session is gone");
}

#[tokio::test(flavor = "multi_thread")]
async fn each_token_sees_and_may_call_only_what_its_scope_grants() {
    let (server, secrets) = Server::start(
        &[("reader", Access::Read), ("proposer", Access::Propose), ("applier", Access::Apply)],
        &[],
    );
    let mut clients = Vec::new();
    for (secret, level) in secrets.iter().zip([Access::Read, Access::Propose, Access::Apply]) {
        let client = server.connect(secret).await;
        let listed: Vec<String> =
            client.list_tools(None).await.unwrap().tools.into_iter().map(|t| t.name.to_string()).collect();
        let expected: Vec<String> =
            kb_mcp::tools::list(level, false).into_iter().map(|t| t.name.to_string()).collect();
        assert_eq!(listed, expected, "{level:?}: the same list as stdio at that level");
        // The instructions follow the token's scope, not the server's default.
        let told = client.peer_info().unwrap().instructions.clone().unwrap_or_default();
        assert_eq!(told, kb_mcp::server::instructions(level), "{level:?}");
        clients.push(client);
    }
    let counts: Vec<usize> = [Access::Read, Access::Propose, Access::Apply]
        .iter()
        .map(|level| kb_mcp::tools::list(*level, false).len())
        .collect();
    assert!(counts[0] >= 8 && counts[1] == counts[0] + 9 && counts[2] == counts[1] + 1, "{counts:?}");
    let [reader, proposer, applier] = [&clients[0], &clients[1], &clients[2]];

    let overview = call(reader, "get_vault_overview", json!({})).await.unwrap();
    assert_eq!(overview.structured_content.unwrap()["access"], "read");
    let found = call(reader, "search_knowledge", json!({"query": "备份"})).await.unwrap();
    assert!(found.structured_content.unwrap()["total"].as_u64().unwrap() > 0);

    // Refused when called anyway, whatever the list said.
    let refused =
        call(reader, "propose_new_note", json!({"title": "x", "body": "y", "reason": "z"})).await.unwrap();
    assert_eq!(error_code(&refused).as_deref(), Some("permission_denied"));
    let staged = call(
        proposer,
        "propose_new_note",
        json!({"title": "Over HTTP", "body": "Written through the HTTP transport.\n", "reason": "test"}),
    )
    .await
    .unwrap();
    assert_eq!(error_code(&staged), None, "{staged:?}");
    let id = staged.structured_content.unwrap()["proposal_id"].as_str().unwrap().to_owned();
    for client in [reader, proposer] {
        let refused = call(client, "apply_proposal", json!({"proposal_id": id})).await.unwrap();
        assert_eq!(error_code(&refused).as_deref(), Some("permission_denied"));
    }
    assert!(!server.vault.join("z/Over HTTP.md").exists());

    let applied = call(applier, "apply_proposal", json!({"proposal_id": id})).await.unwrap();
    assert_eq!(error_code(&applied), None, "{applied:?}");
    assert_eq!(applied.structured_content.unwrap()["status"], "applied");
    let written = std::fs::read_to_string(server.vault.join("z/Over HTTP.md")).unwrap();
    assert!(written.contains("Written through the HTTP transport."));
    let again = call(applier, "apply_proposal", json!({"proposal_id": id})).await.unwrap();
    assert_eq!(error_code(&again).as_deref(), Some("proposal_not_pending"));
    let read = call(reader, "read_note", json!({"path": "z/Over HTTP.md"})).await.unwrap();
    assert_eq!(error_code(&read), None, "the applied note is readable at once");

    for client in clients {
        client.cancel().await.unwrap();
    }
}

#[cfg(unix)]
#[tokio::test(flavor = "multi_thread")]
async fn sigterm_lets_the_request_in_flight_finish_then_exits_0() {
    // A fresh vault: the first call waits for the index build, so it is likely in flight at SIGTERM.
    let (mut server, secrets) = Server::start(&[("reader", Access::Read)], &[]);
    let client = server.connect(&secrets[0]).await;
    let pending = tokio::spawn(async move {
        let result = call(&client, "search_note_content", json!({"query": "远程仓库"})).await;
        (client, result)
    });
    tokio::time::sleep(Duration::from_millis(50)).await;
    // `terminate` fails the test when the process has not exited within 30 s of
    // SIGTERM: a hang is caught, while the time the request in flight needs (its
    // first index build, seconds on a loaded machine) is no part of the check.
    let code = tokio::task::block_in_place(|| server.terminate(Duration::from_secs(30)));
    assert_eq!(code, 0, "{}", server.logged());
    let (_client, result) = pending.await.unwrap();
    let result = result.expect("the request in flight finished");
    assert_eq!(error_code(&result), None);
    let log = server.logged();
    assert!(log.contains("\"event\":\"shutting_down\"") && log.contains("\"drained\":true"), "{log}");
    assert!(TcpStream::connect(server.addr).is_err(), "no longer listening");
}

/// Latency percentiles of a list of durations.
fn percentile(sorted: &[Duration], p: f64) -> Duration {
    if sorted.is_empty() {
        return Duration::ZERO;
    }
    let rank = ((p / 100.0) * sorted.len() as f64).ceil() as usize;
    sorted[rank.clamp(1, sorted.len()) - 1]
}

/// `tool {topic}` called once per topic, one call at a time on one kept-alive
/// connection with `token` (an MCP session opened first), each timed from the
/// request's first byte to the answer's last, as an HTTP load tool times it.
async fn timed_http_calls(addr: SocketAddr, token: &str, tool: &str, topics: &[&str]) -> Vec<Duration> {
    let http = reqwest::Client::new();
    let url = format!("http://{addr}/mcp");
    let post = |body: Value, session: Option<&str>| {
        let mut request = http
            .post(&url)
            .header("Authorization", bearer(token))
            .header("Content-Type", "application/json")
            .header("Accept", "application/json, text/event-stream")
            .body(body.to_string());
        if let Some(session) = session {
            request = request.header("Mcp-Session-Id", session).header("MCP-Protocol-Version", "2025-11-25");
        }
        request.send()
    };
    let opened = post(
        json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
            "protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "timer", "version": "1"}}}),
        None,
    )
    .await
    .unwrap();
    let session = opened.headers()["mcp-session-id"].to_str().unwrap().to_owned();
    opened.bytes().await.unwrap();
    post(json!({"jsonrpc": "2.0", "method": "notifications/initialized"}), Some(&session))
        .await
        .unwrap()
        .bytes()
        .await
        .unwrap();
    let mut took = Vec::with_capacity(topics.len());
    for (n, topic) in topics.iter().enumerate() {
        let call = json!({"jsonrpc": "2.0", "id": n + 1, "method": "tools/call",
            "params": {"name": tool, "arguments": {"topic": topic}}});
        let started = Instant::now();
        let answer = post(call, Some(&session)).await.unwrap();
        let status = answer.status();
        let body = answer.bytes().await.unwrap();
        took.push(started.elapsed());
        let text = String::from_utf8_lossy(&body);
        assert!(
            status == 200 && text.contains("\"result\"") && !text.contains("\"isError\":true"),
            "{status}: {text}"
        );
    }
    took
}

/// 32 read clients search and read while one client proposes and applies, each
/// apply raced by a second apply of the same proposal. No request may fail,
/// every proposal is applied exactly once. `KB_LOAD=1` runs the full size
/// (32 × 200 reads, 20 applies, at most 120 s; then 1,000 timed calls of one
/// client) and prints the latencies that
/// BENCHMARKS.md records; by default a small version keeps the suite fast.
#[tokio::test(flavor = "multi_thread")]
async fn load_32_readers_and_an_applier_lose_nothing() {
    let full = std::env::var("KB_LOAD").is_ok_and(|v| v == "1");
    let (readers, per_reader, proposals) = if full { (32, 200, 20) } else { (32, 5, 3) };
    let deadline = Instant::now() + Duration::from_secs(if full { 120 } else { 60 });
    let mut tokens: Vec<(String, Access)> =
        (0..readers).map(|i| (format!("reader-{i}"), Access::Read)).collect();
    tokens.push(("applier".to_owned(), Access::Apply));
    let named: Vec<(&str, Access)> = tokens.iter().map(|(n, a)| (n.as_str(), *a)).collect();
    let (server, secrets) = Server::start(&named, &["--rate", "100000"]);
    let grafana = token_add(&server.tokens, "grafana", "metrics");
    let server = Arc::new(server);
    // Wait for the first index build, so that the latencies measure serving only.
    let warm_up = server.connect(&secrets[0]).await;
    assert_eq!(error_code(&call(&warm_up, "get_vault_overview", json!({})).await.unwrap()), None);
    warm_up.cancel().await.unwrap();
    let load_started = Instant::now();

    let queries = ["备份", "远程仓库", "卡片笔记", "Zettelkasten", "sync", "链接", "restore", "永久笔记"];
    let notes =
        ["z/备份仓库.md", "z/卡片笔记法.md", "z/永久笔记.md", "z/Restore drills.md", "z/同步工具对比.md"];
    let mut tasks = Vec::new();
    for (i, secret) in secrets.iter().take(readers).enumerate() {
        let server = server.clone();
        let secret = secret.clone();
        tasks.push(tokio::spawn(async move {
            let client = server.connect(&secret).await;
            let mut latencies = Vec::with_capacity(per_reader);
            let mut failures = Vec::new();
            for n in 0..per_reader {
                if Instant::now() > deadline {
                    failures.push("deadline passed".to_owned());
                    break;
                }
                let (tool, arguments) = match (i + n) % 3 {
                    0 => ("search_knowledge", json!({"query": queries[(i + n) % queries.len()]})),
                    1 => ("search_note_content", json!({"query": queries[(i * 7 + n) % queries.len()]})),
                    _ => ("read_note", json!({"path": notes[(i + n) % notes.len()]})),
                };
                let started = Instant::now();
                match call(&client, tool, arguments).await {
                    Ok(result) if result.is_error != Some(true) => latencies.push((tool, started.elapsed())),
                    Ok(result) => failures.push(format!("{tool}: {:?}", result.structured_content)),
                    Err(error) => failures.push(format!("{tool}: {error}")),
                }
            }
            let _ = client.cancel().await;
            (latencies, failures)
        }));
    }
    let applier_secret = secrets[readers].clone();
    let applier_server = server.clone();
    let applier = tokio::spawn(async move {
        let client = Arc::new(applier_server.connect(&applier_secret).await);
        let mut latencies = Vec::new();
        let mut outcomes = Vec::new();
        for n in 0..proposals {
            let staged = call(
                &client,
                "propose_new_note",
                json!({"title": format!("Load note {n}"), "body": format!("Body {n}.\n"), "reason": "load test"}),
            )
            .await
            .unwrap();
            assert_eq!(error_code(&staged), None, "{staged:?}");
            let id = staged.structured_content.unwrap()["proposal_id"].as_str().unwrap().to_owned();
            let started = Instant::now();
            let race = |client: Arc<Client>, id: String| async move {
                call(&client, "apply_proposal", json!({"proposal_id": id})).await
            };
            let (first, second) =
                tokio::join!(race(client.clone(), id.clone()), race(client.clone(), id.clone()));
            latencies.push(started.elapsed());
            let mut codes: Vec<Option<String>> =
                [first, second].iter().map(|r| error_code(r.as_ref().unwrap())).collect();
            codes.sort();
            outcomes.push((id, codes));
        }
        (latencies, outcomes)
    });

    let mut latencies = Vec::new();
    let mut failures = Vec::new();
    for task in tasks {
        let (mut l, mut f) = task.await.unwrap();
        latencies.append(&mut l);
        failures.append(&mut f);
    }
    let (mut apply_latencies, outcomes) = applier.await.unwrap();
    let wall = load_started.elapsed();
    assert!(
        failures.is_empty(),
        "{} failed requests, e.g. {:?}",
        failures.len(),
        &failures[..failures.len().min(3)]
    );
    assert_eq!(latencies.len(), readers * per_reader);
    for (id, codes) in &outcomes {
        assert_eq!(codes, &[None, Some("proposal_not_pending".to_owned())], "{id}: exactly one apply wins");
    }

    let audit = std::fs::read_to_string(server.vault.join("inbox/_applied.jsonl")).unwrap();
    let lines: Vec<Value> = audit.lines().map(|l| serde_json::from_str(l).unwrap()).collect();
    assert_eq!(lines.len(), proposals, "one audit line per apply");
    for (id, _) in &outcomes {
        assert_eq!(lines.iter().filter(|l| l["proposal_id"] == id.as_str()).count(), 1, "{id} audited once");
    }
    for n in 0..proposals {
        let text = std::fs::read_to_string(server.vault.join(format!("z/Load note {n}.md"))).unwrap();
        assert_eq!(text.matches(&format!("Body {n}.")).count(), 1, "note {n} written once");
    }

    // The server counted exactly what the clients sent. Its percentiles are
    // printed beside the clients'; under this load (32 clients in this very
    // process, on the server's cores) a client's time is mostly its own wait
    // for a core, which no server sees: the agreement is checked below, with
    // one client that is not starved.
    let sent = latencies.len() as f64 + 3.0 * proposals as f64 + 1.0;
    let metrics = metrics_once(server.addr, &grafana, |text| {
        let counted: f64 = text
            .lines()
            .filter(|line| line.starts_with("kb_mcp_tool_calls_total{"))
            .filter_map(|line| line.rsplit(' ').next()?.parse::<f64>().ok())
            .sum();
        counted >= sent
    });
    assert_eq!(metrics.status, 200, "{}", metrics.body);
    let counted = |tool: &str| sample(&metrics.body, &format!("kb_mcp_tool_calls_total{{tool=\"{tool}\"}}"));
    for tool in ["search_knowledge", "search_note_content", "read_note"] {
        let sent = latencies.iter().filter(|(t, _)| *t == tool).count() as f64;
        assert_eq!(counted(tool), Some(sent), "{tool}: the server counted what the clients sent");
        let mut client: Vec<Duration> =
            latencies.iter().filter(|(t, _)| *t == tool).map(|(_, took)| *took).collect();
        client.sort();
        let series = format!("kb_mcp_tool_latency_seconds{{tool=\"{tool}\",quantile=\"0.99\"}}");
        let server_p99 = sample(&metrics.body, &series).unwrap() * 1000.0;
        let client_p99 = percentile(&client, 99.0).as_secs_f64() * 1000.0;
        eprintln!("http load: {tool} p99 server {server_p99:.1} ms, client {client_p99:.1} ms");
    }
    assert_eq!(counted("propose_new_note"), Some(proposals as f64));
    assert_eq!(counted("apply_proposal"), Some(2.0 * proposals as f64));
    assert_eq!(
        sample(
            &metrics.body,
            "kb_mcp_tool_errors_total{tool=\"apply_proposal\",code=\"proposal_not_pending\"}"
        ),
        Some(proposals as f64)
    );

    // One client, one call at a time: the server counts each call, and (at
    // full size) the p99 it reports is within 20 % of the client's. The tool
    // is one the load above did not call, so the server's histogram holds
    // these calls only. The client times each call as an HTTP load tool does,
    // from the request's first byte to the answer's last; an SDK client adds
    // its own parsing and hand-offs (about 0.35 ms a call with rmcp's), which
    // no server can see.
    let calls = if full { 1000 } else { 20 };
    let topics: Vec<&str> = (0..calls).map(|n| queries[n % queries.len()]).collect();
    let mut took = timed_http_calls(server.addr, &secrets[0], "recall_context", &topics).await;
    took.sort();
    let metrics = metrics_once(server.addr, &grafana, |text| {
        sample(text, "kb_mcp_tool_calls_total{tool=\"recall_context\"}") == Some(calls as f64)
    });
    let quantile = |q: &str| {
        let series = format!("kb_mcp_tool_latency_seconds{{tool=\"recall_context\",quantile=\"{q}\"}}");
        sample(&metrics.body, &series).unwrap() * 1000.0
    };
    let (server_p50, server_p99) = (quantile("0.5"), quantile("0.99"));
    let client_p50 = percentile(&took, 50.0).as_secs_f64() * 1000.0;
    let client_p99 = percentile(&took, 99.0).as_secs_f64() * 1000.0;
    eprintln!(
        "http load: one client, {calls} recall_context: p50 server {server_p50:.2} ms, client {client_p50:.2} ms; \
         p99 server {server_p99:.2} ms, client {client_p99:.2} ms"
    );
    assert!(server_p50 <= client_p50 * 1.01, "the server cannot see more than its client");
    if full {
        let off = (server_p99 - client_p99).abs() / client_p99;
        assert!(off <= 0.2, "server p99 {server_p99:.2} ms vs client {client_p99:.2} ms");
    }

    let mut latencies: Vec<Duration> = latencies.into_iter().map(|(_, took)| took).collect();
    latencies.sort();
    apply_latencies.sort();
    let ms = |d: Duration| d.as_secs_f64() * 1000.0;
    eprintln!(
        "http load: {} reads by {readers} clients in {:.1} s ({:.0}/s), p50 {:.1} ms, p99 {:.1} ms, \
         max {:.1} ms; {proposals} racing apply pairs, p50 {:.1} ms, p99 {:.1} ms",
        latencies.len(),
        wall.as_secs_f64(),
        latencies.len() as f64 / wall.as_secs_f64(),
        ms(percentile(&latencies, 50.0)),
        ms(percentile(&latencies, 99.0)),
        ms(*latencies.last().unwrap()),
        ms(percentile(&apply_latencies, 50.0)),
        ms(percentile(&apply_latencies, 99.0)),
    );
}

/// Runs `kb-mcp` and returns its exit code and stderr, or `None` for the code when
/// it was still running after 10 s (it started serving) and had to be killed.
fn kb_mcp_exit(args: &[&str]) -> (Option<i32>, String) {
    let mut child = Command::new(BIN)
        .args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let deadline = Instant::now() + Duration::from_secs(10);
    let code = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break status.code();
        }
        if Instant::now() > deadline {
            let _ = child.kill();
            let _ = child.wait();
            break None;
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    let mut err = String::new();
    let _ = child.stderr.take().unwrap().read_to_string(&mut err);
    (code, err)
}

/// Issue 12, item 22: a numeric flag out of range is a usage error (exit 2) naming
/// the flag and its range, never a server whose every request panics; the extremes
/// of each range serve requests.
#[test]
fn numeric_flags_are_range_checked_at_start() {
    let (tmp, vault) = common::temp_vault();
    let file = tmp.path().join("tokens.json");
    token_add(&file, "t", "read");
    let base =
        ["--http", "127.0.0.1:0", "--vault", vault.to_str().unwrap(), "--tokens", file.to_str().unwrap()];
    for (flag, value) in [
        ("--rate", "1e-30"),
        ("--rate", "-1"),
        ("--rate", "NaN"),
        ("--rate", "inf"),
        ("--rate", "1e300"),
        ("--request-timeout", "18446744073709551615"),
        ("--request-timeout", "0"),
        ("--session-idle", "99999999999"),
        ("--session-idle", "0"),
        ("--sessions-per-token", "0"),
    ] {
        let mut args = base.to_vec();
        args.extend([flag, value]);
        let (code, err) = kb_mcp_exit(&args);
        assert_eq!(code, Some(2), "{flag} {value} must be refused at start: {err}");
        assert!(
            err.contains(flag) && (err.contains("range") || err.contains("is not in")),
            "{flag} {value}: {err}"
        );
    }

    let (server, secrets) = Server::start(
        &[("slow", Access::Read)],
        &["--rate", "0.01", "--request-timeout", "86400", "--session-idle", "604800"],
    );
    let auth = bearer(&secrets[0]);
    assert_eq!(post(server.addr, &[("Authorization", &auth)], INITIALIZE, None).status, 200);
    let limited = post(server.addr, &[("Authorization", &auth)], INITIALIZE, None);
    assert_eq!(limited.status, 429, "the smallest rate asks to wait instead of panicking");
    let wait: u64 = limited.header("retry-after").unwrap().parse().unwrap();
    assert!((1..=100).contains(&wait), "Retry-After {wait}");
}

/// A raw request over a fresh connection that the server closes after answering.
fn raw_request(addr: SocketAddr, method: &str, headers: &[(&str, &str)]) -> TcpStream {
    let mut stream = TcpStream::connect(addr).unwrap();
    stream.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    let mut request = format!(
        "{method} /mcp HTTP/1.1\r\nHost: 127.0.0.1:{}\r\nAccept: application/json, text/event-stream\r\n\
         Mcp-Protocol-Version: 2025-11-25\r\nConnection: close\r\n",
        addr.port()
    );
    for (name, value) in headers {
        request.push_str(&format!("{name}: {value}\r\n"));
    }
    request.push_str("\r\n");
    stream.write_all(request.as_bytes()).unwrap();
    stream
}

/// Issue 12, items 13 and 23: a session answers only to the token that opened
/// it, a token holds at most --sessions-per-token sessions, `DELETE /mcp` ends
/// one with 204, and revoking a token closes its open event stream.
#[test]
fn sessions_are_bound_to_their_token_capped_ended_with_204_and_closed_on_revocation() {
    let (server, secrets) =
        Server::start(&[("alice", Access::Read), ("bob", Access::Read)], &["--sessions-per-token", "2"]);
    let (alice, bob) = (bearer(&secrets[0]), bearer(&secrets[1]));
    let addr = server.addr;
    let open = |auth: &str| {
        let reply = post(addr, &[("Authorization", auth)], INITIALIZE, None);
        assert_eq!(reply.status, 200, "{}", reply.body);
        let id = reply.header("mcp-session-id").unwrap().to_owned();
        let initialized = r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#;
        assert_eq!(
            post(addr, &[("Authorization", auth), ("Mcp-Session-Id", &id)], initialized, None).status,
            202
        );
        id
    };
    let ping = r#"{"jsonrpc":"2.0","id":2,"method":"ping"}"#;
    let first = open(&alice);

    let stolen = post(addr, &[("Authorization", &bob), ("Mcp-Session-Id", &first)], ping, None);
    assert_eq!(stolen.status, 404, "another valid token cannot use the session: {}", stolen.body);
    let own = post(addr, &[("Authorization", &alice), ("Mcp-Session-Id", &first)], ping, None);
    assert_eq!(own.status, 200, "{}", own.body);

    let second = open(&alice);
    let over = post(addr, &[("Authorization", &alice)], INITIALIZE, None);
    assert_eq!(over.status, 429, "a third session for one token: {}", over.body);
    assert!(over.body.contains("--sessions-per-token") && over.body.contains("DELETE"), "{}", over.body);
    open(&bob);

    let mut ended = String::new();
    let _ = raw_request(addr, "DELETE", &[("Authorization", &alice), ("Mcp-Session-Id", &second)])
        .read_to_string(&mut ended);
    assert!(ended.starts_with("HTTP/1.1 204"), "DELETE ends a session with 204: {ended}");
    let gone = post(addr, &[("Authorization", &alice), ("Mcp-Session-Id", &second)], ping, None);
    assert_eq!(gone.status, 404);
    open(&alice);

    // The open event stream of a revoked token ends (the old server kept it for minutes).
    let mut stream = raw_request(addr, "GET", &[("Authorization", &alice), ("Mcp-Session-Id", &first)]);
    let mut head = Vec::new();
    let mut byte = [0u8; 1];
    while !head.ends_with(b"\r\n\r\n") {
        assert_eq!(stream.read(&mut byte).unwrap(), 1, "the stream's headers");
        head.push(byte[0]);
    }
    let head = String::from_utf8_lossy(&head).into_owned();
    assert!(head.starts_with("HTTP/1.1 200") && head.contains("text/event-stream"), "{head}");
    let (code, _, err) = kb_mcp(&["token", "revoke", "alice", "--tokens", server.tokens.to_str().unwrap()]);
    assert_eq!(code, 0, "{err}");
    let revoked = Instant::now();
    let mut rest = Vec::new();
    let read = stream.read_to_end(&mut rest);
    assert!(read.is_ok(), "the revoked token's stream is still open after 10 s: {read:?}");
    eprintln!("the revoked token's stream ended {} ms after the revocation", revoked.elapsed().as_millis());
    let bobs = post(addr, &[("Authorization", &bob)], INITIALIZE, None);
    assert_eq!(bobs.status, 200, "other tokens are untouched");
    let closed = [r#""event":"session_closed""#, r#""why":"token revoked""#];
    let log = server.logged_once(&closed, Duration::from_secs(10));
    assert!(log.lines().any(|line| closed.iter().all(|n| line.contains(n))), "{log}");
}

/// The JSON-RPC messages of a reply's body: the body itself when it is JSON,
/// else the `data` of each server-sent event (chunk-size lines are skipped).
fn messages(reply: &Reply) -> Vec<Value> {
    if reply.header("content-type").is_some_and(|kind| kind.starts_with("application/json")) {
        return vec![serde_json::from_str(&reply.body).unwrap_or_else(|e| panic!("{e}: {}", reply.body))];
    }
    reply
        .body
        .lines()
        .filter_map(|line| line.strip_prefix("data:"))
        .filter_map(|data| serde_json::from_str(data.trim()).ok())
        .collect()
}

/// Opens a session for a client declaring `capabilities`; returns its id.
fn open_session(addr: SocketAddr, auth: &str, capabilities: Value) -> String {
    let initialize = json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-11-25", "capabilities": capabilities, "clientInfo": {"name": "raw", "version": "0"}}});
    let reply = post(addr, &[("Authorization", auth)], &initialize.to_string(), None);
    assert_eq!(reply.status, 200, "{}", reply.body);
    let session = reply.header("mcp-session-id").unwrap().to_owned();
    let initialized = r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#;
    let reply = post(addr, &[("Authorization", auth), ("Mcp-Session-Id", &session)], initialized, None);
    assert_eq!(reply.status, 202, "{}", reply.body);
    session
}

/// A POST whose answer is read as it streams, for a request that stays in flight.
struct Streaming(BufReader<TcpStream>);

impl Streaming {
    fn open(addr: SocketAddr, headers: &[(&str, &str)], body: &str) -> Streaming {
        let mut stream = TcpStream::connect(addr).unwrap();
        stream.set_read_timeout(Some(common::NO_ANSWER)).unwrap();
        let mut request = format!(
            "POST /mcp HTTP/1.1\r\nHost: 127.0.0.1:{}\r\nAccept: application/json, text/event-stream\r\n\
             Content-Type: application/json\r\nConnection: close\r\nContent-Length: {}\r\n",
            addr.port(),
            body.len()
        );
        for (name, value) in headers {
            request.push_str(&format!("{name}: {value}\r\n"));
        }
        request.push_str("\r\n");
        request.push_str(body);
        stream.write_all(request.as_bytes()).unwrap();
        let mut reader = BufReader::new(stream);
        let mut status = String::new();
        reader.read_line(&mut status).unwrap();
        assert!(status.starts_with("HTTP/1.1 200"), "{status}");
        Streaming(reader)
    }

    /// The next JSON-RPC message on the stream; fails when it ends or after [`common::NO_ANSWER`].
    fn next(&mut self) -> Value {
        loop {
            let mut line = String::new();
            let read = self.0.read_line(&mut line).expect("no message on the stream: a hang");
            assert!(read > 0, "the stream ended without the message");
            if let Some(data) = line.trim_end().strip_prefix("data:")
                && let Ok(message) = serde_json::from_str::<Value>(data.trim())
            {
                return message;
            }
        }
    }
}

/// Issue 34, item 8: over HTTP, a request whose id kb-mcp cannot hold (past 64
/// bits, out of any parser's range, a fraction; null, a boolean) gets a
/// JSON-RPC error carrying the id exactly as sent (null when it cannot be
/// one), where rmcp answered 415 with a line of text and no id.
#[test]
fn issue34_ids_kb_mcp_cannot_hold_get_a_json_rpc_error_over_http() {
    let (server, secrets) = Server::start(&[("alice", Access::Read)], &[]);
    let auth = bearer(&secrets[0]);
    let session = open_session(server.addr, &auth, json!({}));
    let headers = [("Authorization", auth.as_str()), ("Mcp-Session-Id", session.as_str())];
    for (id, echoed) in [
        ("18446744073709551616", "18446744073709551616"),
        ("1e400", "1e400"),
        ("1.50", "1.50"),
        ("null", "null"),
        ("true", "null"),
    ] {
        let reply =
            post(server.addr, &headers, &format!(r#"{{"jsonrpc":"2.0","id":{id},"method":"ping"}}"#), None);
        assert_eq!(reply.status, 200, "{id}: {}", reply.body);
        assert!(reply.header("content-type").is_some_and(|t| t.starts_with("application/json")), "{id}");
        assert!(reply.body.contains(&format!(r#""id":{echoed}"#)), "{id}: {}", reply.body);
        // serde_json cannot read `1e400`: the rest of the answer is read without the id.
        let answer: Value = serde_json::from_str(&reply.body.replacen(echoed, "0", 1)).unwrap();
        assert_eq!(answer["error"]["code"], -32600, "{id}: {answer}");
        assert!(answer["error"]["message"].as_str().unwrap().contains("cannot answer to"), "{answer}");
    }
    let ping = post(server.addr, &headers, r#"{"jsonrpc":"2.0","id":2,"method":"ping"}"#, None);
    assert_eq!(messages(&ping)[0]["result"], json!({}), "the session still works");
}

/// Issue 34, item 8: over HTTP, while a request is in flight, other requests
/// with its id in the same session get an invalid-request error at once, and
/// the first completes with its own answer. Before, rmcp routed the one answer
/// to the last of them and the others hung until the request timeout (120 s).
#[test]
fn issue34_a_second_request_with_an_id_in_flight_is_refused_over_http_and_none_hangs() {
    let (server, secrets) = Server::start(&[("alice", Access::Apply)], &[]);
    let addr = server.addr;
    let auth = bearer(&secrets[0]);
    let session = open_session(addr, &auth, json!({"elicitation": {}}));
    let headers = [("Authorization", auth.as_str()), ("Mcp-Session-Id", session.as_str())];
    let stage = json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {"name": "propose_new_note",
        "arguments": {"title": "Held over HTTP", "body": "staged\n", "reason": "test"}}});
    let staged = messages(&post(addr, &headers, &stage.to_string(), None)).pop().unwrap();
    let proposal = staged["result"]["structuredContent"]["proposal_id"].as_str().unwrap().to_owned();
    // The apply stays in flight while the person is asked.
    let apply = json!({"jsonrpc": "2.0", "id": 7, "method": "tools/call",
        "params": {"name": "apply_proposal", "arguments": {"proposal_id": proposal}}});
    let mut first = Streaming::open(addr, &headers, &apply.to_string());
    let question = first.next();
    assert_eq!(question["method"], "elicitation/create", "{question}");
    let duplicates = [
        json!({"jsonrpc": "2.0", "id": 7, "method": "ping"}),
        json!({"jsonrpc": "2.0", "id": 7, "method": "tools/list"}),
        json!({"jsonrpc": "2.0", "id": 7, "method": "tools/call",
            "params": {"name": "search_knowledge", "arguments": {"query": "backup"}}}),
        apply.clone(),
    ];
    let sent: Vec<_> = duplicates
        .iter()
        .map(|duplicate| {
            let (auth, session, body) = (auth.clone(), session.clone(), duplicate.to_string());
            std::thread::spawn(move || {
                post(addr, &[("Authorization", &auth), ("Mcp-Session-Id", &session)], &body, None)
            })
        })
        .collect();
    for reply in sent {
        let reply = reply.join().unwrap();
        assert_eq!(reply.status, 200, "{}", reply.body);
        let refused = &messages(&reply)[0];
        assert_eq!(
            (refused["id"].clone(), refused["error"]["code"].clone()),
            (json!(7), json!(-32600)),
            "{refused}"
        );
        let message = refused["error"]["message"].as_str().unwrap();
        assert!(message.contains("id 7") && message.contains("in flight"), "{message}");
    }
    // The person declines: the first request gets its own answer.
    let decline = json!({"jsonrpc": "2.0", "id": question["id"], "result": {"action": "decline"}});
    assert_eq!(post(addr, &headers, &decline.to_string(), None).status, 202);
    let answered = first.next();
    assert_eq!(answered["id"], 7, "{answered}");
    assert_eq!(common::tool_error(&answered["result"])["code"], "permission_denied", "{answered}");
    // Answered, the id is free again.
    let ping = post(addr, &headers, r#"{"jsonrpc":"2.0","id":7,"method":"ping"}"#, None);
    assert_eq!(messages(&ping).pop().unwrap(), json!({"jsonrpc": "2.0", "id": 7, "result": {}}));
    let refused = server.logged_once(&["duplicate_id"], Duration::from_secs(10));
    assert_eq!(refused.lines().filter(|l| l.contains("duplicate_id")).count(), duplicates.len(), "{refused}");
}

/// Issue 34: a request of hundreds of thousands of keys made rmcp build a tree
/// of it (the 4 MiB body cap allows 350,000 keys, a few hundred MiB of tree).
/// The gate counts the body's JSON values first and answers a request of more
/// than 100,000 with a JSON-RPC error carrying its id and naming the limit; the
/// server stays small and the session keeps working.
#[test]
fn issue34_a_request_of_too_many_values_is_answered_at_the_gate() {
    let (server, secrets) = Server::start_on(&[("alice", Access::Read)], &[], common::without_semantic);
    let auth = bearer(&secrets[0]);
    let session = open_session(server.addr, &auth, json!({}));
    let headers = [("Authorization", auth.as_str()), ("Mcp-Session-Id", session.as_str())];
    let keys: String = (0..300_000).map(|n| format!(r#""k{n}":0"#)).collect::<Vec<_>>().join(",");
    let body = format!(
        r#"{{"jsonrpc":"2.0","id":"keys","method":"tools/call","params":{{"name":"search_knowledge","arguments":{{"query":"x",{keys}}}}}}}"#
    );
    assert!(body.len() < 4 << 20, "{}", body.len());
    let reply = post(server.addr, &headers, &body, None);
    assert_eq!(reply.status, 200, "{}", reply.body);
    let answer = &messages(&reply)[0];
    assert_eq!(answer["id"], "keys", "{answer}");
    assert_eq!(answer["error"]["code"], -32600, "{answer}");
    assert!(answer["error"]["message"].as_str().unwrap().contains("100000 JSON values"), "{answer}");
    let status = std::fs::read_to_string(format!("/proc/{}/status", server.child.id())).unwrap_or_default();
    if let Some(peak) = status.lines().find(|l| l.starts_with("VmHWM:")) {
        let kib: u64 = peak.split_whitespace().nth(1).unwrap().parse().unwrap();
        assert!(kib < 200 * 1024, "the server grew to {} MiB", kib / 1024);
    }
    let ping = post(server.addr, &headers, r#"{"jsonrpc":"2.0","id":2,"method":"ping"}"#, None);
    assert_eq!(messages(&ping)[0]["result"], json!({}), "the session still works");
    assert!(server.logged().contains("too_many_values"), "{}", server.logged());
}

/// Issue 34: a revoked token's open stream stayed open. Revocation closed the
/// token's sessions, which ended their standalone streams, but a request still
/// in flight (here an apply waiting for the person's confirmation) kept its
/// answer stream open as long as it waited. Now every stream the token holds
/// ends within a sweep of the revocation, a request's with a JSON-RPC error
/// answering it; the apply never happens.
#[test]
fn issue34_a_revoked_tokens_request_in_flight_ends_at_revocation() {
    let (server, secrets) = Server::start(&[("alice", Access::Apply), ("bob", Access::Read)], &[]);
    let addr = server.addr;
    let auth = bearer(&secrets[0]);
    let session = open_session(addr, &auth, json!({"elicitation": {}}));
    let headers = [("Authorization", auth.as_str()), ("Mcp-Session-Id", session.as_str())];
    let stage = json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {"name": "propose_new_note",
        "arguments": {"title": "Held then revoked", "body": "staged\n", "reason": "test"}}});
    let staged = messages(&post(addr, &headers, &stage.to_string(), None)).pop().unwrap();
    let proposal = staged["result"]["structuredContent"]["proposal_id"].as_str().unwrap().to_owned();
    let apply = json!({"jsonrpc": "2.0", "id": 7, "method": "tools/call",
        "params": {"name": "apply_proposal", "arguments": {"proposal_id": proposal}}});
    let mut held = Streaming::open(addr, &headers, &apply.to_string());
    assert_eq!(held.next()["method"], "elicitation/create");
    held.0.get_ref().set_read_timeout(Some(Duration::from_secs(5))).unwrap();

    let (code, _, err) = kb_mcp(&["token", "revoke", "alice", "--tokens", server.tokens.to_str().unwrap()]);
    assert_eq!(code, 0, "{err}");
    let revoked = Instant::now();
    let answer = held.next();
    let took = revoked.elapsed();
    assert_eq!(answer["id"], 7, "{answer}");
    assert!(answer["error"]["message"].as_str().unwrap().contains("revoked"), "{answer}");
    assert!(took < Duration::from_secs(3), "the stream ended {} ms after the revocation", took.as_millis());
    let mut rest = String::new();
    let _ = held.0.read_to_string(&mut rest);
    assert!(!rest.contains("\"result\""), "no other answer: {rest}");
    assert!(!server.vault.join("z/Held then revoked.md").exists(), "the apply never happened");
    let bobs = post(addr, &[("Authorization", &bearer(&secrets[1]))], INITIALIZE, None);
    assert_eq!(bobs.status, 200, "other tokens are untouched");
    let log = server.logged_once(&["stream_closed"], Duration::from_secs(10));
    assert!(log.contains(r#""why":"token revoked""#), "{log}");
}

/// Issue 34: a revoked token's open stream stayed open 10 s. A request without
/// a session (MCP 2026-07-28) has no session for revocation to close: one
/// waiting for the vault's recovery (the test holds the inbox lock, as another
/// process's apply would) kept its stream open until its wait ran out, 10 s,
/// and was then answered. Now it ends within a sweep of the revocation with a
/// JSON-RPC error saying why.
#[tokio::test(flavor = "multi_thread")]
async fn issue34_a_revoked_tokens_sessionless_request_ends_at_revocation() {
    let held: Arc<Mutex<Option<std::fs::File>>> = Arc::default();
    let lock = held.clone();
    let (server, secrets) = Server::start_on(&[("alice", Access::Read)], &[], move |vault| {
        std::fs::create_dir_all(vault.join("inbox")).unwrap();
        std::fs::write(vault.join("inbox/_applying.json"), "{}").unwrap();
        let file = std::fs::OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(false)
            .open(vault.join("inbox/_apply.lock"))
            .unwrap();
        file.lock().unwrap();
        *lock.lock().unwrap() = Some(file);
    });
    let client = server.connect_without_session(&secrets[0]).await;
    let pending = tokio::spawn(async move {
        let result = call(&client, "search_note_content", json!({"query": "备份"})).await;
        (client, result)
    });
    tokio::time::sleep(Duration::from_millis(1500)).await;
    assert!(!pending.is_finished(), "the call waits for the recovery");
    let tokens = server.tokens.clone();
    let (code, _, err) = tokio::task::block_in_place(|| {
        kb_mcp(&["token", "revoke", "alice", "--tokens", tokens.to_str().unwrap()])
    });
    assert_eq!(code, 0, "{err}");
    let revoked = Instant::now();
    let (_client, result) = tokio::time::timeout(Duration::from_secs(30), pending).await.unwrap().unwrap();
    let took = revoked.elapsed();
    let error = format!("{result:?}");
    assert!(result.is_err() && error.contains("revoked"), "{error}");
    assert!(took < Duration::from_secs(3), "the stream ended {} ms after the revocation", took.as_millis());
    drop(held);
}

/// Issue 34, "first hour": a forgotten `--allowed-host` got a bare 403 with
/// nothing logged (rmcp refused the Host itself), and an Origin refusal did
/// not name the origin. Both are now refused at the gate with a JSON log line
/// naming the host or origin and the flag that allows it, and a 403 body
/// saying the same.
#[test]
fn issue34_a_refused_host_or_origin_is_logged_with_the_flag_that_allows_it() {
    let (server, secrets) = Server::start(&[("alice", Access::Read)], &["--allowed-host", "kb.example.com"]);
    let auth = bearer(&secrets[0]);
    let refused =
        post(server.addr, &[("Host", "tunnel.example.net:443"), ("Authorization", &auth)], INITIALIZE, None);
    assert_eq!(refused.status, 403);
    assert!(
        refused.body.contains("`tunnel.example.net:443`")
            && refused.body.contains("`--allowed-host tunnel.example.net`"),
        "{}",
        refused.body
    );
    let log = server.logged_once(&["host not allowed"], Duration::from_secs(10));
    let line: Value =
        serde_json::from_str(log.lines().find(|l| l.contains("host not allowed")).unwrap()).unwrap();
    assert_eq!(line["host"], "tunnel.example.net:443", "{line}");
    assert_eq!(line["fix"], "--allowed-host tunnel.example.net", "{line}");

    let refused = post(
        server.addr,
        &[("Origin", "https://chat.example.org"), ("Authorization", &auth)],
        INITIALIZE,
        None,
    );
    assert_eq!(refused.status, 403);
    assert!(refused.body.contains("`--allow-origin https://chat.example.org`"), "{}", refused.body);
    let log = server.logged_once(&["origin not allowed"], Duration::from_secs(10));
    let line: Value =
        serde_json::from_str(log.lines().find(|l| l.contains("origin not allowed")).unwrap()).unwrap();
    assert_eq!(line["origin"], "https://chat.example.org", "{line}");
    assert_eq!(line["fix"], "--allow-origin https://chat.example.org", "{line}");

    let allowed =
        post(server.addr, &[("Host", "KB.example.com"), ("Authorization", &auth)], INITIALIZE, None);
    assert_eq!(allowed.status, 200, "{}", allowed.body);
}

// ---------------------------------------------------------------------------
// Issue 33 §2: both revisions over HTTP, with rmcp's client library

/// A client that can ask the person, who accepts (`ServerHandler`'s
/// elicitation on 2025-11-25, the input-required round trip on 2026-07-28).
struct Accepter {
    version: ProtocolVersion,
    asked: Arc<Mutex<Vec<String>>>,
}

impl rmcp::ClientHandler for Accepter {
    fn get_info(&self) -> ClientConfig {
        let mut capabilities = ClientCapabilities::default();
        capabilities.elicitation = Some(ElicitationCapability::default());
        ClientConfig::new(capabilities, Implementation::new("kb-mcp-http-accepter", "0"))
            .with_protocol_version(self.version.clone())
    }

    async fn create_elicitation(
        &self,
        request: ElicitRequestParams,
        _context: rmcp::service::RequestContext<RoleClient>,
    ) -> Result<ElicitResult, rmcp::ErrorData> {
        if let ElicitRequestParams::FormElicitationParams { message, .. } = &request {
            self.asked.lock().unwrap().push(message.clone());
        }
        Ok(serde_json::from_value(json!({"action": "accept", "content": {"apply": true}})).unwrap())
    }
}

/// A 2025-11-25 client (a session, the question an `elicitation/create`
/// request on it) and a 2026-07-28 client (no session, the question an
/// `input_required` result answered by a retry) each search, propose and apply
/// with the person's confirmation, over HTTP against one server; the person
/// was asked once each, with the change in the question.
#[tokio::test(flavor = "multi_thread")]
async fn issue33_both_revisions_search_propose_and_apply_confirmed_over_http() {
    let (server, secrets) = Server::start(&[("applier", Access::Apply)], &[]);
    for (version, title) in
        [(ProtocolVersion::V_2025_11_25, "Handshake era"), (ProtocolVersion::V_2026_07_28, "Stateless era")]
    {
        let asked = Arc::new(Mutex::new(Vec::new()));
        let transport = StreamableHttpClientTransport::from_config(
            StreamableHttpClientTransportConfig::with_uri(server.url()).auth_header(secrets[0].clone()),
        );
        let handler = Accepter { version: version.clone(), asked: asked.clone() };
        let client = if version.has_initialize() {
            handler.serve(transport).await.unwrap()
        } else {
            handler
                .serve_with_lifecycle(
                    transport,
                    rmcp::ClientLifecycleMode::Discover { preferred_versions: vec![version.clone()] },
                )
                .await
                .unwrap()
        };
        let call = |name: &'static str, arguments: Value| {
            let client = &client;
            async move {
                client
                    .call_tool(CallToolRequestParams::new(name).with_arguments(args(arguments)))
                    .await
                    .unwrap()
            }
        };
        let found = call("search_knowledge", json!({"query": "备份"})).await;
        assert!(!found.structured_content.unwrap()["results"].as_array().unwrap().is_empty(), "{version:?}");
        let staged =
            call("propose_new_note", json!({"title": title, "body": "confirmed\n", "reason": "r"})).await;
        let id = staged.structured_content.unwrap()["proposal_id"].as_str().unwrap().to_owned();
        let applied = call("apply_proposal", json!({"proposal_id": id})).await;
        assert_eq!(applied.structured_content.unwrap()["status"], "applied", "{version:?}");
        assert!(server.vault.join(format!("z/{title}.md")).exists(), "{version:?}");
        let asked = asked.lock().unwrap().clone();
        assert_eq!(asked.len(), 1, "{version:?}: asked once: {asked:?}");
        assert!(asked[0].contains(&format!("z/{title}.md")), "{version:?}: {asked:?}");
        client.cancel().await.unwrap();
    }
}

/// `GET /metrics` with `token` once `ready` holds for its text (an HTTP call
/// is counted when its answer has been written, a moment after the client
/// has it), or as it is after ten seconds.
fn metrics_once(addr: SocketAddr, token: &str, ready: impl Fn(&str) -> bool) -> Reply {
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let reply = get(addr, "/metrics", &[("Authorization", &bearer(token))]);
        if reply.status != 200 || ready(&reply.body) || Instant::now() > deadline {
            return reply;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// The value of the Prometheus sample `name{labels}` in `text` (labels as
/// written, in order), if there is one.
fn sample(text: &str, series: &str) -> Option<f64> {
    text.lines().find_map(|line| line.strip_prefix(series)?.strip_prefix(' ')?.parse().ok())
}

/// Issue 40: every call counted per tool and readable three ways: the
/// overview's `metrics`, `GET /metrics` for a token of scope `metrics` only,
/// and the `tool` log line (size, token); a token's own rate limit holds
/// beside the server's.
#[tokio::test(flavor = "multi_thread")]
async fn metrics_count_every_call_and_only_a_metrics_token_reads_them() {
    let (server, secrets) = Server::start(&[("reader", Access::Read)], &["--rate", "100000"]);
    let file = server.tokens.to_str().unwrap().to_owned();
    let grafana = token_add(Path::new(&file), "grafana", "metrics");
    let (code, out, err) =
        kb_mcp(&["token", "add", "slow", "--scope", "read", "--rate", "0.5", "--tokens", &file]);
    assert_eq!(code, 0, "{err}");
    let slow = out.lines().last().unwrap().to_owned();
    let (code, listed, _) = kb_mcp(&["token", "list", "--tokens", &file]);
    assert_eq!(code, 0);
    assert!(listed.lines().any(|l| l.starts_with("slow") && l.contains("0.5/s")), "{listed}");
    assert!(listed.lines().any(|l| l.starts_with("grafana") && l.contains("metrics")), "{listed}");
    let (code, _, err) =
        kb_mcp(&["token", "add", "bad", "--scope", "read", "--request-timeout", "0", "--tokens", &file]);
    assert_eq!(code, 2, "a timeout of 0 is refused: {err}");
    // The running server re-reads the token file within a second.
    std::thread::sleep(Duration::from_millis(1100));

    let client = server.connect(&secrets[0]).await;
    for query in ["备份", "sync", "卡片笔记"] {
        assert_eq!(
            error_code(&call(&client, "search_knowledge", json!({"query": query})).await.unwrap()),
            None
        );
    }
    let missing = call(&client, "read_note", json!({"path": "z/no such note.md"})).await.unwrap();
    assert_eq!(error_code(&missing).as_deref(), Some("not_found"));
    let overview = call(&client, "get_vault_overview", json!({"metrics": true})).await.unwrap();
    let metrics = &overview.structured_content.as_ref().unwrap()["metrics"];
    let tool = |name: &str| metrics["tools"].as_array().unwrap().iter().find(|t| t["tool"] == name).cloned();
    assert_eq!(tool("search_knowledge").unwrap()["calls"], 3, "{metrics}");
    assert_eq!(tool("read_note").unwrap()["errors"], json!({"not_found": 1}), "{metrics}");
    assert!(tool("get_vault_overview").is_none(), "a call is counted once answered");
    assert!(metrics["index"]["documents"].as_u64().unwrap() > 0 && metrics["index"]["watching"] == true);
    let without = call(&client, "get_vault_overview", json!({})).await.unwrap();
    assert!(without.structured_content.unwrap().get("metrics").is_none(), "metrics only when asked");

    let addr = server.addr;
    let read = metrics_once(addr, &grafana, |text| {
        sample(text, "kb_mcp_tool_calls_total{tool=\"get_vault_overview\"}") == Some(2.0)
    });
    assert_eq!(read.status, 200, "{}", read.body);
    assert!(read.header("content-type").unwrap().starts_with("text/plain; version=0.0.4"));
    let text = &read.body;
    assert_eq!(sample(text, "kb_mcp_tool_calls_total{tool=\"search_knowledge\"}"), Some(3.0), "{text}");
    assert_eq!(sample(text, "kb_mcp_tool_calls_total{tool=\"get_vault_overview\"}"), Some(2.0), "{text}");
    assert_eq!(sample(text, "kb_mcp_tool_errors_total{tool=\"read_note\",code=\"not_found\"}"), Some(1.0));
    assert_eq!(sample(text, "kb_mcp_tool_latency_seconds_count{tool=\"search_knowledge\"}"), Some(3.0));
    let p99 = sample(text, "kb_mcp_tool_latency_seconds{tool=\"search_knowledge\",quantile=\"0.99\"}");
    assert!(p99.is_some_and(|s| s > 0.0 && s < 60.0), "{text}");
    assert!(sample(text, "kb_mcp_index_documents").is_some_and(|n| n > 0.0), "{text}");

    assert_eq!(get(addr, "/metrics", &[]).status, 401, "no token");
    let refused = get(addr, "/metrics", &[("Authorization", &bearer(&secrets[0]))]);
    assert_eq!(refused.status, 403, "a read token does not read the metrics");
    assert!(refused.body.contains("--scope metrics"), "{}", refused.body);
    let refused = post(addr, &[("Authorization", &bearer(&grafana))], INITIALIZE, None);
    assert_eq!(refused.status, 403, "a metrics token does not reach MCP");

    // The slow token's own rate (0.5/s, a burst of one) holds while the server allows 100000/s.
    let statuses: Vec<u16> =
        (0..2).map(|_| post(addr, &[("Authorization", &bearer(&slow))], INITIALIZE, None).status).collect();
    assert_eq!(statuses, [200, 429]);
    let limited = post(addr, &[("Authorization", &bearer(&slow))], INITIALIZE, None);
    let wait: u64 = limited.header("retry-after").unwrap().parse().unwrap();
    assert!((1..=2).contains(&wait), "Retry-After {wait}");
    assert_eq!(post(addr, &[("Authorization", &bearer(&secrets[0]))], INITIALIZE, None).status, 200);

    let log = server.logged_once(&["\"outcome\":\"not_found\""], Duration::from_secs(10));
    let line: Value = log
        .lines()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .find(|l| l["event"] == "tool" && l["tool"] == "read_note")
        .unwrap();
    assert_eq!((line["token"].as_str(), line["outcome"].as_str()), (Some("reader"), Some("not_found")));
    assert!(line["bytes"].as_u64().unwrap() > 0 && line["ms"].as_f64().is_some(), "{line}");
    assert!(!log.contains("卡片笔记"), "a query reaches the log only at debug level");
    client.cancel().await.unwrap();
}

/// Issue 39: what one token's agent remembers about the person, another
/// token's agent reads in no tool, resource or error; what agents remember
/// about the vault, every token reads; tokens the person names in
/// `[memory] share_person` share one memory of the person.
#[tokio::test(flavor = "multi_thread")]
async fn issue39_a_tokens_memory_of_the_person_is_its_own_unless_shared() {
    // The entry's name holds its first words; the rest is in the file alone.
    const SECRET: &str = "Alice is quietly interviewing at Zanzibar Labs next Tuesday; codeword PLUMTREE";
    let (server, secrets) =
        Server::start(&[("alice", Access::Propose), ("bob", Access::Propose), ("carol", Access::Read)], &[]);
    let alice = server.connect(&secrets[0]).await;
    let bob = server.connect(&secrets[1]).await;
    let carol = server.connect(&secrets[2]).await;

    let kept = call(&alice, "remember", json!({"about": "person", "text": SECRET, "category": "plans"}))
        .await
        .unwrap();
    assert_eq!(error_code(&kept), None, "{kept:?}");
    let path = kept.structured_content.unwrap()["path"].as_str().unwrap().to_owned();
    assert!(path.starts_with("Agent memory/person/alice/"), "{path}");
    let shared = call(
        &bob,
        "remember",
        json!({"about": "vault", "text": "Meeting notes live under z/meetings by year"}),
    )
    .await
    .unwrap();
    assert_eq!(error_code(&shared), None);
    let audit = std::fs::read_to_string(server.vault.join("inbox/_applied.jsonl")).unwrap();
    assert!(audit.contains("\"principal\":\"alice\"") && audit.contains("\"principal\":\"bob\""), "{audit}");

    // Alice's agent finds it; nobody else's does, in any tool.
    let recalled = call(&alice, "recall_context", json!({"topic": "Zanzibar Labs interview"})).await.unwrap();
    let first = &recalled.structured_content.unwrap()["items"][0];
    assert_eq!(first["memory"], "person");
    assert!(
        first["text"].as_str().unwrap().contains("PLUMTREE"),
        "what the others must not see is there: {first}"
    );
    let uri = format!("kb://note/{}", path.replace(' ', "%20"));
    for (who, client) in [("bob", &bob), ("carol", &carol)] {
        let mut answers = Vec::new();
        for (tool, args) in [
            ("search_knowledge", json!({"query": "Zanzibar Labs interviewing"})),
            ("search_note_content", json!({"query": "Zanzibar Labs interviewing"})),
            ("recall_context", json!({"topic": "Zanzibar Labs interview next Tuesday"})),
            ("get_vault_overview", json!({})),
            ("read_note", json!({"path": path})),
            ("get_related_notes", json!({"path": path})),
            ("list_history", json!({"path": path})),
            ("list_notes", json!({"folder": "Agent memory/person/alice"})),
            ("list_recent_notes", json!({})),
            ("list_tags", json!({})),
            ("audit_vault", json!({})),
            (
                "propose_note_patch",
                json!({"path": path, "base_hash": "sha256:00", "edits": [{"op": "append", "text": "x"}], "reason": "r"}),
            ),
            ("propose_delete", json!({"path": path, "reason": "r"})),
        ] {
            let answer = call(client, tool, args).await.unwrap();
            answers.push(serde_json::to_string(&answer).unwrap());
        }
        let resource = client.read_resource(ReadResourceRequestParams::new(uri.clone())).await;
        answers.push(format!("{resource:?}"));
        answers.push(client.list_resources(None).await.map(|r| format!("{r:?}")).unwrap_or_default());
        for answer in &answers {
            assert!(!answer.contains("PLUMTREE"), "{who} learned alice's memory: {answer}");
        }
        let overview =
            call(client, "get_vault_overview", json!({})).await.unwrap().structured_content.unwrap();
        assert_eq!(overview["memory"]["person"], 0, "{who}");
        assert_eq!(overview["memory"]["vault"], 1, "{who} reads the vault's memory");
        let found =
            call(client, "search_knowledge", json!({"query": "where do meeting notes live"})).await.unwrap();
        assert_eq!(found.structured_content.unwrap()["results"][0]["memory"], "vault", "{who}");
    }
    // A read token lists no `remember` and is refused it.
    let refused = call(&carol, "remember", json!({"about": "person", "text": "x"})).await.unwrap();
    assert_eq!(error_code(&refused).as_deref(), Some("permission_denied"));
    for client in [alice, bob, carol] {
        client.cancel().await.unwrap();
    }
    drop(server);

    // Shared by the person's choice: alice and bob keep one memory of the person.
    let (server, secrets) =
        Server::start_on(&[("alice", Access::Propose), ("bob", Access::Propose)], &[], |vault| {
            let toml = std::fs::read_to_string(vault.join("kb.toml")).unwrap();
            std::fs::write(
                vault.join("kb.toml"),
                format!("{toml}\n[memory]\nshare_person = [\"alice\", \"bob\"]\n"),
            )
            .unwrap();
        });
    let alice = server.connect(&secrets[0]).await;
    let bob = server.connect(&secrets[1]).await;
    let kept = call(&alice, "remember", json!({"about": "person", "text": SECRET})).await.unwrap();
    let path = kept.structured_content.unwrap()["path"].as_str().unwrap().to_owned();
    assert!(path.starts_with("Agent memory/person/@shared/"), "{path}");
    let recalled = call(&bob, "recall_context", json!({"topic": "Zanzibar Labs interview"})).await.unwrap();
    let items = &recalled.structured_content.unwrap()["items"];
    assert_eq!(items[0]["path"], path.as_str(), "{items}");
    for client in [alice, bob] {
        client.cancel().await.unwrap();
    }
}

/// Issue 39: two vaults behind one HTTP server; a token scoped to one vault
/// sees a server of that vault alone (no `vault` argument, no `list_vaults`,
/// nothing of the other in any tool, resource or error), an unscoped token
/// sees both, and proposals land in the vault they were made in.
#[tokio::test]
async fn issue39_a_token_scoped_to_one_vault_never_learns_another_exists() {
    const SECRET: &str = "MARIGOLD";
    let other = tempfile::tempdir().unwrap();
    let home = other.path().join("home");
    common::copy_fixture(&common::fixture_vault(), &home);
    common::put(
        &home,
        "z/Surprise plan.md",
        &format!("# Surprise plan\n\nThe {SECRET} party is on Friday.\n"),
    );
    let home_arg = format!("home={}", home.display());
    let (server, secrets) = Server::start(&[("both", Access::Apply)], &["--vault", &home_arg, "--rate", "0"]);
    let add = |name: &str, vault: &str| {
        let file = server.tokens.to_str().unwrap();
        let (code, out, err) =
            kb_mcp(&["token", "add", name, "--scope", "apply", "--vault", vault, "--tokens", file]);
        assert_eq!(code, 0, "{err}");
        assert!(out.contains(&format!("vaults: {vault}")), "{out}");
        out.lines().last().unwrap().to_owned()
    };
    let (mine, theirs) = (add("mine", "vault"), add("theirs", "home"));
    let (code, listed, _) = kb_mcp(&["token", "list", "--tokens", server.tokens.to_str().unwrap()]);
    assert!(code == 0 && listed.contains("vaults home"), "{listed}");
    // The server re-reads the token file within a second.
    std::thread::sleep(Duration::from_millis(800));
    let both = server.connect(&secrets[0]).await;
    let mine = server.connect(&mine).await;
    let theirs = server.connect(&theirs).await;

    let listed = call(&both, "list_vaults", json!({})).await.unwrap().structured_content.unwrap();
    let names: Vec<&str> =
        listed["vaults"].as_array().unwrap().iter().map(|v| v["name"].as_str().unwrap()).collect();
    assert_eq!(names, ["vault", "home"]);
    let every =
        call(&both, "search_note_content", json!({"query": "surprise party Friday", "vault": "*"})).await;
    let every = every.unwrap().structured_content.unwrap();
    assert_eq!(
        (&every["results"][0]["vault"], &every["results"][0]["path"]),
        (&json!("home"), &json!("z/Surprise plan.md"))
    );

    // `mine` may use `vault` alone: a server of one vault, nothing of `home` anywhere.
    let tools = mine.list_all_tools().await.unwrap();
    assert!(!tools.iter().any(|tool| tool.name == "list_vaults"));
    let listing = serde_json::to_string(&tools).unwrap();
    assert!(!listing.contains("\"home\"") && !listing.contains("\"vault\":{\"enum\""), "{listing}");
    let instructions = mine.peer_info().unwrap().instructions.clone().unwrap_or_default();
    assert!(!instructions.contains("`home`"), "{instructions}");
    let foreign = call(&mine, "search_knowledge", json!({"query": SECRET, "vault": "home"})).await.unwrap();
    let missing =
        call(&mine, "search_knowledge", json!({"query": SECRET, "vault": "nowhere"})).await.unwrap();
    assert_eq!(error_code(&foreign).as_deref(), Some("invalid_argument"));
    let said =
        |result: &CallToolResult, name: &str| serde_json::to_string(result).unwrap().replace(name, "NAME");
    assert_eq!(said(&foreign, "home"), said(&missing, "nowhere"), "a foreign vault answers as a missing one");
    for tool in &tools {
        let foreign = call(&mine, &tool.name, json!({"vault": "home"})).await.unwrap();
        let missing = call(&mine, &tool.name, json!({"vault": "nowhere"})).await.unwrap();
        assert_eq!(error_code(&foreign).as_deref(), Some("invalid_argument"), "{}", tool.name);
        assert_eq!(said(&foreign, "home"), said(&missing, "nowhere"), "{}", tool.name);
    }
    let mut answers = Vec::new();
    for (tool, args) in [
        ("search_knowledge", json!({"query": "surprise plan"})),
        ("search_note_content", json!({"query": "surprise party Friday"})),
        ("recall_context", json!({"topic": "surprise party plan"})),
        ("get_vault_overview", json!({})),
        ("read_note", json!({"path": "z/Surprise plan.md"})),
        ("list_notes", json!({"folder": "z"})),
        ("list_recent_notes", json!({})),
        ("list_proposals", json!({})),
        ("list_vaults", json!({})),
    ] {
        answers.push(format!("{:?}", call(&mine, tool, args).await));
    }
    let uri = "kb://note/z/Surprise%20plan.md".to_owned();
    answers.push(format!("{:?}", mine.read_resource(ReadResourceRequestParams::new(uri.clone())).await));
    answers.push(format!("{:?}", mine.list_resources(None).await));
    for answer in &answers {
        assert!(!answer.contains(SECRET) && !answer.contains(&home.display().to_string()), "{answer}");
    }

    // `theirs` may use `home` alone: its default, where its proposals land.
    let found = call(&theirs, "search_knowledge", json!({"query": "surprise plan"})).await.unwrap();
    let found = found.structured_content.unwrap();
    assert_eq!(found["results"][0]["path"], "z/Surprise plan.md");
    assert!(found.get("vault").is_none(), "one vault: answers need not name it");
    let staged = call(
        &theirs,
        "propose_new_note",
        json!({"title": "Party list", "body": "Balloons.\n", "reason": "the person asked"}),
    )
    .await
    .unwrap();
    let id = staged.structured_content.unwrap()["proposal_id"].as_str().unwrap().to_owned();
    let stolen = call(&mine, "apply_proposal", json!({"proposal_id": id})).await.unwrap();
    assert_eq!(error_code(&stolen).as_deref(), Some("proposal_not_found"), "{stolen:?}");
    let applied = call(&theirs, "apply_proposal", json!({"proposal_id": id})).await.unwrap();
    let target = applied.structured_content.unwrap()["target"].as_str().unwrap().to_owned();
    assert!(home.join(&target).is_file() && !server.vault.join(&target).exists(), "{target}");
    assert!(!server.vault.join("inbox/_applied.jsonl").exists(), "nothing was applied in `vault`");
    for client in [both, mine, theirs] {
        client.cancel().await.unwrap();
    }
}
