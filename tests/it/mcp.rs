//! The real `kb-mcp` binary driven over stdio by rmcp's client: `tools/list`
//! against a golden file, every tool's success and error paths with output
//! schema validation, access levels, three protocol versions, resources,
//! prompts, stdout cleanliness, a malformed line, freshness, and exit on EOF.

#![allow(
    clippy::disallowed_methods,
    clippy::disallowed_types,
    reason = "the tests build and inspect vaults on disk"
)]

use crate::common;

use std::io::{BufRead, BufReader, Write};
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use rmcp::model::*;
use rmcp::service::RunningService;
use rmcp::transport::TokioChildProcess;
use rmcp::{ClientLifecycleMode, ClientServiceExt, RoleClient, ServiceError, ServiceExt};
use serde_json::{Value, json};

pub(crate) type Client = RunningService<RoleClient, ClientConfig>;

const BIN: &str = env!("CARGO_BIN_EXE_kb-mcp");

fn command(vault: &Path, access: &str) -> tokio::process::Command {
    let mut command = tokio::process::Command::new(BIN);
    command.arg("--vault").arg(vault).arg("--access").arg(access);
    command
}

fn client_config(version: ProtocolVersion) -> ClientConfig {
    ClientConfig::new(ClientCapabilities::default(), Implementation::new("kb-mcp-tests", "0"))
        .with_protocol_version(version)
}

async fn connect_with(vault: &Path, access: &str, version: ProtocolVersion) -> Client {
    let (transport, _stderr) =
        TokioChildProcess::builder(command(vault, access)).stderr(Stdio::null()).spawn().unwrap();
    if version.has_initialize() {
        client_config(version).serve(transport).await.unwrap()
    } else {
        client_config(version.clone())
            .serve_with_lifecycle(
                transport,
                ClientLifecycleMode::Discover { preferred_versions: vec![version] },
            )
            .await
            .unwrap()
    }
}

pub(crate) async fn connect(vault: &Path, access: &str) -> Client {
    connect_with(vault, access, ProtocolVersion::V_2025_11_25).await
}

fn args(value: Value) -> JsonObject {
    value.as_object().cloned().unwrap_or_default()
}

pub(crate) async fn call(
    client: &Client,
    name: &str,
    arguments: Value,
) -> Result<CallToolResult, ServiceError> {
    client.call_tool(CallToolRequestParams::new(name.to_owned()).with_arguments(args(arguments))).await
}

fn error_code(result: &CallToolResult) -> String {
    error_object(result)["code"].as_str().unwrap().to_owned()
}

fn error_object(result: &CallToolResult) -> Value {
    common::tool_error(&serde_json::to_value(result).unwrap())
}

fn rpc_code(error: ServiceError) -> i32 {
    match error {
        ServiceError::McpError(data) => data.code.0,
        other => panic!("expected a JSON-RPC error, got {other:?}"),
    }
}

/// One valid call per read tool.
fn read_calls() -> Vec<(&'static str, Value)> {
    vec![
        ("get_vault_overview", json!({})),
        ("search_knowledge", json!({"query": "备份", "limit": 5})),
        ("search_note_content", json!({"query": "远程仓库", "tags": ["备份"], "explain": true})),
        ("read_note", json!({"ref": "备份仓库#同步不等于备份"})),
        ("list_standards", json!({})),
        ("list_tags", json!({"prefix": "type"})),
        ("get_related_notes", json!({"path": "z/备份仓库.md"})),
        ("list_recent_notes", json!({"days": 30, "sort": "created"})),
        ("recall_context", json!({"topic": "如何同步远程仓库", "budget_tokens": 800})),
        ("list_notes", json!({"folder": "z", "sort": "updated", "limit": 5})),
        ("list_history", json!({"path": "z/备份仓库.md", "limit": 5})),
        ("audit_vault", json!({"checks": ["broken_link", "orphan"], "limit": 5})),
    ]
}

/// How long a test waits for the file watcher to act on a change: it acts
/// after its 0.3 s debounce; this bound only catches one that never does. It
/// took over 10 s once, with this file's 28 tests running side by side on a
/// 2-core machine at load 7.7 (and 2 s alone right after).
const WATCHER_BOUND: Duration = Duration::from_secs(30);

#[tokio::test(flavor = "multi_thread")]
async fn tools_list_matches_the_golden_file() {
    let (_tmp, vault) = common::temp_vault();
    let client = connect(&vault, "apply").await;
    let tools = client.list_tools(None).await.unwrap().tools;
    let actual = serde_json::to_string_pretty(&serde_json::to_value(&tools).unwrap()).unwrap() + "\n";
    let golden = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/golden/tools-list.json");
    if std::env::var_os("UPDATE_GOLDEN").is_some() {
        std::fs::write(&golden, &actual).unwrap();
    }
    let expected = std::fs::read_to_string(&golden).unwrap_or_default();
    assert!(expected == actual, "tools/list changed; review and rerun with UPDATE_GOLDEN=1\n{actual}");
    for tool in &tools {
        let annotations = tool.annotations.as_ref().unwrap();
        assert!(
            tool.title.is_some() && annotations.title == tool.title,
            "{} needs a title in both places",
            tool.name
        );
        assert_eq!(annotations.open_world_hint, Some(false));
        assert!(tool.output_schema.is_some());
    }
    client.cancel().await.unwrap();
}

#[tokio::test(flavor = "multi_thread")]
async fn every_read_tool_answers_with_content_that_matches_its_output_schema() {
    let (_tmp, vault) = common::temp_vault();
    let client = connect(&vault, "read").await;
    let tools = client.list_tools(None).await.unwrap().tools;
    let names: Vec<&str> = tools.iter().map(|t| t.name.as_ref()).collect();
    assert_eq!(
        names,
        [
            "get_vault_overview",
            "search_knowledge",
            "search_note_content",
            "read_note",
            "list_standards",
            "list_tags",
            "get_related_notes",
            "list_recent_notes",
            "recall_context",
            "list_notes",
            "list_history",
            "audit_vault"
        ]
    );
    for (name, arguments) in read_calls() {
        let tool = tools.iter().find(|t| t.name == name).unwrap();
        let annotations = tool.annotations.as_ref().unwrap();
        assert_eq!(
            (annotations.read_only_hint, annotations.destructive_hint, annotations.idempotent_hint),
            (Some(true), Some(false), Some(true))
        );
        let result = call(&client, name, arguments).await.unwrap();
        assert_ne!(result.is_error, Some(true), "{name}: {result:?}");
        let structured = result.structured_content.clone().unwrap();
        let schema = Value::Object((**tool.output_schema.as_ref().unwrap()).clone());
        let validator = jsonschema::validator_for(&schema).unwrap();
        let problems: Vec<String> = validator.iter_errors(&structured).map(|e| e.to_string()).collect();
        assert!(problems.is_empty(), "{name} result does not match its output schema: {problems:?}");
        let text = result.content[0]
            .as_text()
            .unwrap_or_else(|| panic!("{name}: expected text content"))
            .text
            .clone();
        assert!(!text.is_empty());
        // Bounded: nothing close to a megabyte.
        assert!(serde_json::to_string(&structured).unwrap().len() < 300_000, "{name} answer too large");
    }
    let overview = call(&client, "get_vault_overview", json!({})).await.unwrap().structured_content.unwrap();
    assert_eq!(overview["access"], "read");
    assert_eq!(overview["counts"]["notes"], 40);
    assert_eq!(overview["index"]["fresh"], true);
    client.cancel().await.unwrap();
}

#[tokio::test(flavor = "multi_thread")]
async fn failures_are_is_error_results_and_bad_arguments_are_invalid_argument() {
    let (_tmp, vault) = common::temp_vault();
    let client = connect(&vault, "read").await;
    let cases = [
        ("read_note", json!({"path": "../../etc/passwd"}), "path_denied"),
        ("read_note", json!({"path": ".git/config"}), "path_denied"),
        ("read_note", json!({"path": "z/没有这个.md"}), "not_found"),
        ("read_note", json!({"ref": "同步"}), "ambiguous_ref"),
        ("read_note", json!({}), "invalid_argument"),
        ("get_related_notes", json!({"path": "C:\\Windows\\win.ini"}), "path_denied"),
        ("search_note_content", json!({"query": "x", "folder": "/etc"}), "path_denied"),
        ("search_knowledge", json!({"query": "  "}), "invalid_argument"),
        ("list_notes", json!({"folder": "z/private"}), "path_denied"),
        ("list_notes", json!({"folder": "z/没有"}), "not_found"),
        ("list_notes", json!({"cursor": "bogus"}), "invalid_argument"),
    ];
    for (name, arguments, code) in cases {
        let result = call(&client, name, arguments.clone()).await.unwrap();
        assert_eq!(error_code(&result), code, "{name} {arguments}");
        let error = &error_object(&result);
        assert!(error["message"].as_str().is_some_and(|m| !m.is_empty()));
        assert!(error["hint"].as_str().is_some_and(|h| !h.is_empty()), "every error has a hint: {error}");
    }
    let ambiguous = call(&client, "read_note", json!({"ref": "同步"})).await.unwrap();
    assert_eq!(error_object(&ambiguous)["candidates"].as_array().unwrap().len(), 2);

    // Arguments off the schema are tool errors the model can read and fix (issue 13):
    // `invalid_argument`, naming the argument and the rule it broke.
    let malformed = [
        ("search_knowledge", json!({"query": "x", "limit": 99}), "`limit`", "maximum"),
        ("list_tags", json!({"limit": "5"}), "`limit`", "integer"),
        ("search_knowledge", json!({"query": 5}), "`query`", "string"),
        ("search_knowledge", json!({}), "query", "required"),
        ("read_note", json!({"path": "z/备份仓库.md", "bogus": true}), "bogus", "not allowed"),
        ("list_recent_notes", json!({"sort": "sideways"}), "`sort`", "sideways"),
        ("list_notes", json!({"limit": 500}), "`limit`", "maximum"),
    ];
    for (name, arguments, argument, rule) in malformed {
        let result = call(&client, name, arguments.clone()).await.unwrap();
        assert_eq!(error_code(&result), "invalid_argument", "{name} {arguments}");
        let error = &error_object(&result);
        let message = error["message"].as_str().unwrap();
        assert!(message.contains(argument) && message.contains(rule), "{name} {arguments}: {message}");
        assert!(error["hint"].as_str().is_some_and(|h| h.contains("inputSchema")), "{error}");
    }
    assert_eq!(
        rpc_code(call(&client, "no_such_tool", json!({})).await.unwrap_err()),
        -32602,
        "an unknown tool is not a valid call at all"
    );
    client.cancel().await.unwrap();
}

#[tokio::test(flavor = "multi_thread")]
async fn a_tool_not_granted_is_absent_and_refused() {
    let (_tmp, vault) = common::temp_vault();
    let before = common::snapshot(&vault);
    let client = connect(&vault, "read").await;
    let tools = client.list_tools(None).await.unwrap().tools;
    assert!(tools.iter().all(|t| t.annotations.as_ref().unwrap().read_only_hint == Some(true)));
    for name in ["propose_new_note", "apply_proposal"] {
        if tools.iter().any(|t| t.name == name) {
            panic!("{name} listed at read level");
        }
        match call(&client, name, json!({"proposal_id": "x", "title": "t", "body": "b", "reason": "r"})).await
        {
            Ok(result) => assert_eq!(error_code(&result), "permission_denied"),
            Err(error) => assert_eq!(rpc_code(error), -32602, "an unknown tool is invalid params"),
        }
    }
    client.cancel().await.unwrap();
    let mut after = common::snapshot(&vault);
    after.retain(|(path, _)| !path.starts_with(".kb"));
    assert_eq!(after, before, "a read-level session changes nothing in the vault");
}

#[tokio::test(flavor = "multi_thread")]
async fn every_protocol_version_works_from_a_real_client() {
    let (_tmp, vault) = common::temp_vault();
    for version in
        [ProtocolVersion::V_2025_06_18, ProtocolVersion::V_2025_11_25, ProtocolVersion::V_2026_07_28]
    {
        let client = connect_with(&vault, "read", version.clone()).await;
        let info = client.peer_info().unwrap();
        if version.has_initialize() {
            assert_eq!(info.protocol_version, version);
        }
        assert_eq!(info.server_info.as_ref().unwrap().name, "kb-mcp");
        // Told what a read connection can do, and nothing it cannot.
        let told = info.instructions.as_deref().unwrap_or("");
        assert!(told.contains("recall_context") && told.contains("can only read"), "{version:?}: {told}");
        assert!(!told.contains("propose_new_note") && !told.contains("apply_proposal"), "{version:?}");
        assert_eq!(client.list_tools(None).await.unwrap().tools.len(), 12, "{version:?}");
        let result = call(&client, "search_knowledge", json!({"query": "Zettelkasten"})).await.unwrap();
        assert_eq!(
            result.structured_content.unwrap()["results"][0]["path"],
            "z/卡片笔记法.md",
            "{version:?}"
        );
        client.cancel().await.unwrap();
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn resources_and_prompts() {
    let (_tmp, vault) = common::temp_vault();
    let client = connect(&vault, "read").await;
    let resources = client.list_resources(None).await.unwrap().resources;
    let uris: Vec<&str> = resources.iter().map(|r| r.uri.as_str()).collect();
    assert_eq!(uris, ["kb://tree", "kb://tags", "kb://recent", "kb://standards", "kb://skill"]);
    // The Agent Skill is served as the repository holds it.
    let skill = client.read_resource(ReadResourceRequestParams::new("kb://skill")).await.unwrap();
    let file = std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("skills/kb-mcp/SKILL.md"))
        .unwrap();
    match &skill.contents[0] {
        ResourceContents::TextResourceContents { text, mime_type, .. } => {
            assert_eq!(text, &file);
            assert_eq!(mime_type.as_deref(), Some("text/markdown"));
        }
        other => panic!("{other:?}"),
    }
    let templates = client.list_resource_templates(None).await.unwrap().resource_templates;
    assert_eq!(templates[0].uri_template, "kb://note/{path}");

    let note = client
        .read_resource(ReadResourceRequestParams::new("kb://note/z/%E5%A4%87%E4%BB%BD%E4%BB%93%E5%BA%93.md"))
        .await
        .unwrap();
    let bytes = std::fs::read_to_string(vault.join("z/备份仓库.md")).unwrap();
    match &note.contents[0] {
        ResourceContents::TextResourceContents { text, mime_type, .. } => {
            assert_eq!(text, &bytes);
            assert_eq!(mime_type.as_deref(), Some("text/markdown"));
        }
        other => panic!("{other:?}"),
    }
    for uri in ["kb://tree", "kb://tags", "kb://recent", "kb://standards"] {
        let result = client.read_resource(ReadResourceRequestParams::new(uri)).await.unwrap();
        let ResourceContents::TextResourceContents { text, .. } = &result.contents[0] else { panic!() };
        let _: Value = serde_json::from_str(text).unwrap();
    }
    for hostile in [
        "kb://note/..%2F..%2Fetc%2Fpasswd",
        "kb://note/%2e%2e/x.md",
        "kb://note/.git/config",
        "kb://note/z/private/secret-plan.md",
    ] {
        let error = client.read_resource(ReadResourceRequestParams::new(hostile)).await.unwrap_err();
        assert_eq!(rpc_code(error), -32602, "{hostile}");
    }
    assert!(client.read_resource(ReadResourceRequestParams::new("kb://note/z/none.md")).await.is_err());

    let prompts = client.list_prompts(None).await.unwrap().prompts;
    let names: Vec<&str> = prompts.iter().map(|p| p.name.as_str()).collect();
    assert_eq!(names, ["new_knowledge_note", "expand_note", "review_note", "learning_path"]);
    let prompt = client
        .get_prompt(
            GetPromptRequestParams::new("new_knowledge_note")
                .with_arguments(args(json!({"topic": "冷备份"}))),
        )
        .await
        .unwrap();
    let text = &prompt.messages[0].content.as_text().unwrap().text;
    // At read access the prompt ends in "show me the note", not in a tool it cannot call.
    assert!(text.contains("冷备份") && text.contains("cannot stage proposals"), "{text}");
    assert!(!text.contains("propose_new_note"), "{text}");
    assert!(client.get_prompt(GetPromptRequestParams::new("expand_note")).await.is_err(), "missing argument");
    client.cancel().await.unwrap();
}

/// The file watcher brings a new note into search and takes a deleted one out
/// without a restart, and the overview counts its report as fresh without a walk. It takes about 0.3 s (the debounce); the 10 s bound only
/// catches a watcher that never reports, and leaves room for a loaded machine
/// (speed belongs in the benchmarks).
#[tokio::test(flavor = "multi_thread")]
async fn edits_on_disk_become_searchable_without_a_restart() {
    let (_tmp, vault) = common::temp_vault();
    let client = connect(&vault, "read").await;
    // Wait until the server is serving.
    let first = call(&client, "get_vault_overview", json!({})).await.unwrap().structured_content.unwrap();
    // A walk from now on would say so in `verified_at` (to the second).
    tokio::time::sleep(Duration::from_millis(1100)).await;
    std::fs::write(
        vault.join("z/蜂鸟观察.md"),
        "# 蜂鸟观察\n\nHummingbirds hover at the feeder every morning.\n",
    )
    .unwrap();
    let written = Instant::now();
    let mut found = false;
    while written.elapsed() < WATCHER_BOUND {
        let result = call(&client, "search_note_content", json!({"query": "hummingbirds"})).await.unwrap();
        if result.structured_content.unwrap()["total"] == 1 {
            found = true;
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert!(found, "a new note was not searchable within {WATCHER_BOUND:?}");
    // Issue 42: the overview took the watcher's report in and did not walk.
    let overview = call(&client, "get_vault_overview", json!({})).await.unwrap().structured_content.unwrap();
    assert_eq!(overview["index"]["fresh"], true, "{overview}");
    assert_eq!(overview["index"]["verified_at"], first["index"]["verified_at"], "{overview}");
    std::fs::remove_file(vault.join("z/蜂鸟观察.md")).unwrap();
    let removed = Instant::now();
    loop {
        let result = call(&client, "search_note_content", json!({"query": "hummingbirds"})).await.unwrap();
        if result.structured_content.unwrap()["total"] == 0 {
            break;
        }
        assert!(removed.elapsed() < WATCHER_BOUND, "a deleted note stayed searchable");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    client.cancel().await.unwrap();
}

#[test]
fn stdout_is_json_rpc_only_a_malformed_line_is_survived_and_eof_ends_the_process() {
    let (_tmp, vault) = common::temp_vault();
    let mut child = common::raw_stdio_server(&vault, "read", Stdio::piped());
    let mut stdin = child.stdin.take().unwrap();
    let lines = [
        json!({"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"raw","version":"0"}}}).to_string(),
        json!({"jsonrpc":"2.0","method":"notifications/initialized"}).to_string(),
        "this is not json {".to_owned(),
        json!({"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"search_note_content","arguments":{"query":"备份"}}}).to_string(),
        json!({"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"arguments":5}}).to_string(),
        json!({"jsonrpc":"2.0","id":4,"method":"tools/list"}).to_string(),
    ];
    for line in &lines {
        writeln!(stdin, "{line}").unwrap();
    }
    stdin.flush().unwrap();
    let stdout = BufReader::new(child.stdout.take().unwrap());
    let mut seen = std::collections::BTreeMap::new();
    let mut lines_out = stdout.lines();
    while seen.len() < 4 {
        let line = lines_out.next().expect("server closed stdout early").unwrap();
        let message: Value =
            serde_json::from_str(&line).unwrap_or_else(|_| panic!("stdout line is not JSON: {line}"));
        assert_eq!(message["jsonrpc"], "2.0", "{line}");
        if let Some(id) = message["id"].as_u64() {
            seen.insert(id, message);
        }
    }
    assert!(seen[&2]["result"]["structuredContent"]["total"].as_u64().unwrap() > 0);
    assert_eq!(seen[&3]["error"]["code"], -32602);
    assert_eq!(seen[&4]["result"]["tools"].as_array().unwrap().len(), 12);
    drop(stdin);
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        if let Some(status) = child.try_wait().unwrap() {
            assert!(status.success(), "exit status {status}");
            break;
        }
        assert!(Instant::now() < deadline, "the server did not exit after stdin closed");
        std::thread::sleep(Duration::from_millis(50));
    }
    for line in lines_out {
        let line = line.unwrap();
        serde_json::from_str::<Value>(&line).unwrap_or_else(|_| panic!("stdout line is not JSON: {line}"));
    }
    let mut stderr = String::new();
    std::io::Read::read_to_string(&mut child.stderr.take().unwrap(), &mut stderr).unwrap();
    for line in stderr.lines() {
        let log: Value =
            serde_json::from_str(line).unwrap_or_else(|_| panic!("stderr log line is not JSON: {line}"));
        assert!(!line.contains("远程仓库"), "logs never carry note text");
        assert!(log["ts"].is_string());
    }
}

/// Issue 12, item 9: every request on stdio gets exactly one answer, whatever its
/// id or encoding, and each refusal is logged; notifications get none. Raw lines
/// go to the real binary's stdin and each answer is awaited with a timeout.
#[test]
fn every_stdio_request_is_answered_once_whatever_its_id_or_encoding() {
    let (_tmp, vault) = common::temp_vault();
    let mut child = common::raw_stdio_server(&vault, "read", Stdio::piped());
    let mut stdin = child.stdin.take().unwrap();
    let (sender, answers) = std::sync::mpsc::channel::<String>();
    let stdout = child.stdout.take().unwrap();
    std::thread::spawn(move || {
        for line in BufReader::new(stdout).lines().map_while(Result::ok) {
            let _ = sender.send(line);
        }
    });
    let mut send = move |bytes: &[u8]| {
        stdin.write_all(bytes).unwrap();
        stdin.write_all(b"\n").unwrap();
        stdin.flush().unwrap();
    };
    let next = || -> Value {
        let line = answers.recv_timeout(Duration::from_secs(20)).expect("no answer: the request was dropped");
        serde_json::from_str(&line).unwrap_or_else(|_| panic!("stdout line is not JSON: {line}"))
    };
    send(json!({"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"raw","version":"0"}}}).to_string().as_bytes());
    assert_eq!(next()["id"], 1);
    send(br#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#);

    let mut invalid_utf8 = br#"{"jsonrpc":"2.0","id":"utf8","method":"tools/call","params":{"name":"search_knowledge","arguments":{"query":"caf"#.to_vec();
    invalid_utf8.extend_from_slice(b"\xe9\"}}}");
    // (line, the id the answer carries, its JSON-RPC error code or the tool error code)
    let cases: Vec<(Vec<u8>, Value, Value)> = vec![
        (
            br#"{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"search_knowledge","arguments":{"query":"smile \ud83d"}}}"#.to_vec(),
            json!(2),
            json!("invalid_argument"),
        ),
        (br#"{"jsonrpc":"2.0","id":18446744073709551616,"method":"ping"}"#.to_vec(), json!(18446744073709551616f64), json!(-32600)),
        (br#"{"jsonrpc":"2.0","id":9223372036854775808,"method":"ping"}"#.to_vec(), json!(9223372036854775808u64), json!(-32600)),
        (br#"{"jsonrpc":"2.0","id":1.5,"method":"ping"}"#.to_vec(), json!(1.5), json!(-32600)),
        (br#"{"jsonrpc":"2.0","id":null,"method":"ping"}"#.to_vec(), Value::Null, json!(-32600)),
        (br#"{"jsonrpc":"2.0","id":true,"method":"ping"}"#.to_vec(), Value::Null, json!(-32600)),
        (br#"{"jsonrpc":"2.0","id":{"a":1},"method":"ping"}"#.to_vec(), Value::Null, json!(-32600)),
        (br#"{"jsonrpc":"2.0","id":[1],"method":"ping"}"#.to_vec(), Value::Null, json!(-32600)),
        (invalid_utf8, json!("utf8"), json!(-32700)),
        (b"\xff\xfe not even json".to_vec(), Value::Null, json!(-32700)),
        (b"{\"jsonrpc\":\"2.0\",\"id\":3,\"method\":\"ping\"".to_vec(), Value::Null, json!(-32700)),
        (br#"[{"jsonrpc":"2.0","id":4,"method":"ping"}]"#.to_vec(), Value::Null, json!(-32600)),
    ];
    for (line, id, code) in &cases {
        send(line);
        let answer = next();
        let shown = String::from_utf8_lossy(line);
        assert_eq!(answer["jsonrpc"], "2.0", "{shown}: {answer}");
        assert_eq!(&answer["id"], id, "{shown}: {answer}");
        let got = match answer.get("error") {
            Some(error) => {
                assert!(error["message"].as_str().is_some_and(|m| m.len() > 10), "{answer}");
                error["code"].clone()
            }
            None => {
                assert_eq!(answer["result"]["isError"], true, "{answer}");
                let error = &common::tool_error(&answer["result"]);
                assert!(
                    error["message"].as_str().unwrap().contains("`query`"),
                    "names the argument: {error}"
                );
                error["code"].clone()
            }
        };
        assert_eq!(&got, code, "{shown}: {answer}");
    }
    // Notifications, however broken, are never answered: the next line out answers the ping.
    send(
        br#"{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":1,"reason":"\ud83d"}}"#,
    );
    send(b"{\"jsonrpc\":\"2.0\",\"method\":\"notifications/progress\",\"params\":{\"x\":\"\xff\"}}");
    send(br#"{"jsonrpc":"2.0","id":"last","method":"ping"}"#);
    let last = next();
    assert_eq!((last["id"].clone(), last["result"].clone()), (json!("last"), json!({})), "{last}");

    drop(send);
    let deadline = Instant::now() + Duration::from_secs(10);
    while child.try_wait().unwrap().is_none() {
        assert!(Instant::now() < deadline, "the server did not exit after stdin closed");
        std::thread::sleep(Duration::from_millis(50));
    }
    assert!(answers.try_recv().is_err(), "exactly one answer per request");
    let mut stderr = String::new();
    std::io::Read::read_to_string(&mut child.stderr.take().unwrap(), &mut stderr).unwrap();
    let refused = stderr.lines().filter(|l| l.contains("\"rpc_refused\"")).count();
    let dropped = stderr.lines().filter(|l| l.contains("\"rpc_dropped\"")).count();
    assert_eq!((refused, dropped), (cases.len(), 2), "each refusal is logged:\n{stderr}");
}

/// A client that answers the server's confirmation question with `answer`.
struct Confirmer {
    answer: bool,
    version: ProtocolVersion,
    asked: std::sync::Arc<std::sync::Mutex<Vec<String>>>,
}

impl rmcp::ClientHandler for Confirmer {
    fn get_info(&self) -> ClientConfig {
        let mut capabilities = ClientCapabilities::default();
        capabilities.elicitation = Some(ElicitationCapability::default());
        ClientConfig::new(capabilities, Implementation::new("confirmer", "0"))
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
        Ok(serde_json::from_value(json!({"action": "accept", "content": {"apply": self.answer}})).unwrap())
    }
}

async fn connect_confirmer(
    vault: &Path,
    answer: bool,
    version: ProtocolVersion,
) -> (RunningService<RoleClient, Confirmer>, std::sync::Arc<std::sync::Mutex<Vec<String>>>) {
    let asked = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
    let (transport, _stderr) =
        TokioChildProcess::builder(command(vault, "apply")).stderr(Stdio::null()).spawn().unwrap();
    let handler = Confirmer { answer, version: version.clone(), asked: asked.clone() };
    let client = if version.has_initialize() {
        handler.serve(transport).await.unwrap()
    } else {
        handler
            .serve_with_lifecycle(
                transport,
                ClientLifecycleMode::Discover { preferred_versions: vec![version] },
            )
            .await
            .unwrap()
    };
    (client, asked)
}

async fn propose_new(client: &Client, title: &str, body: &str) -> Value {
    let result = call(
        client,
        "propose_new_note",
        json!({"title": title, "body": body, "reason": "test", "tags": ["备份"]}),
    )
    .await
    .unwrap();
    assert_ne!(result.is_error, Some(true), "{result:?}");
    result.structured_content.unwrap()
}

#[tokio::test(flavor = "multi_thread")]
async fn propose_then_apply_over_mcp_writes_the_note_and_makes_it_findable_at_once() {
    let (_tmp, vault) = common::temp_vault();
    let client = connect(&vault, "apply").await;
    let tools = client.list_tools(None).await.unwrap().tools;
    assert_eq!(
        tools.len(),
        22,
        "the twelve tools, recall_context, list_notes, list_history, audit_vault, propose_move, propose_delete, propose_batch, revert_proposal, propose_restore and remember at --access apply"
    );
    let apply_tool = tools.iter().find(|t| t.name == "apply_proposal").unwrap().annotations.clone().unwrap();
    assert_eq!((apply_tool.read_only_hint, apply_tool.destructive_hint), (Some(false), Some(true)));
    let propose_tool =
        tools.iter().find(|t| t.name == "propose_new_note").unwrap().annotations.clone().unwrap();
    assert_eq!((propose_tool.read_only_hint, propose_tool.destructive_hint), (Some(false), Some(false)));

    let before = common::snapshot(&vault);
    let staged = propose_new(
        &client,
        "冷备份 cold storage",
        "离线的冷备份是最后一道防线。Glacier vaults hold them.\n",
    )
    .await;
    assert_eq!(staged["kind"], "new");
    assert_eq!(staged["target"], "z/冷备份 cold storage.md");
    assert_eq!(staged["vault_changed"], false);
    assert!(!staged["similar"].as_array().unwrap().is_empty(), "similar notes are reported");
    let mut after: Vec<(String, Vec<u8>)> = common::snapshot(&vault);
    after.retain(|(path, _)| !path.starts_with("inbox/"));
    assert_eq!(after, before, "proposing writes only inbox files");

    let listed = call(&client, "list_proposals", json!({})).await.unwrap().structured_content.unwrap();
    assert_eq!(listed["proposals"][0]["proposal_id"], staged["proposal_id"]);
    assert_eq!(
        listed["proposals"][0]["checks"],
        json!({"intact": true, "base_current": true, "target_free": true})
    );

    let id = staged["proposal_id"].as_str().unwrap();
    let applied = call(&client, "apply_proposal", json!({"proposal_id": id})).await.unwrap();
    let applied = applied.structured_content.unwrap();
    assert_eq!(applied["status"], "applied", "{applied}");
    assert_eq!(applied["index"]["updated"], true);
    let written = std::fs::read(vault.join("z/冷备份 cold storage.md")).unwrap();
    assert_eq!(applied["new_hash"], kb_mcp::vault::content_hash(&written));
    let found = call(&client, "search_note_content", json!({"query": "glacier"}))
        .await
        .unwrap()
        .structured_content
        .unwrap();
    assert_eq!(found["results"][0]["path"], "z/冷备份 cold storage.md", "findable right after apply");
    let audit = std::fs::read_to_string(vault.join("inbox/_applied.jsonl")).unwrap();
    assert_eq!(audit.lines().count(), 1);
    let line: Value = serde_json::from_str(audit.lines().next().unwrap()).unwrap();
    assert_eq!(line["by"], "mcp");
    assert_eq!(line["index"], "ok");

    assert_eq!(
        error_code(&call(&client, "apply_proposal", json!({"proposal_id": id})).await.unwrap()),
        "proposal_not_pending"
    );
    assert_eq!(
        error_code(
            &call(&client, "apply_proposal", json!({"proposal_id": "p_00000000000000000000000000000000"}))
                .await
                .unwrap()
        ),
        "proposal_not_found"
    );

    // A patch against the hash read_note returned.
    let note =
        call(&client, "read_note", json!({"path": "z/设计.md"})).await.unwrap().structured_content.unwrap();
    let patch = call(
        &client,
        "propose_note_patch",
        json!({"path": "z/设计.md", "base_hash": note["hash"], "reason": "add a line", "edits": [{"op": "append", "content": "补充：设计要可回滚。\n"}]}),
    )
    .await
    .unwrap()
    .structured_content
    .unwrap();
    assert_eq!(patch["added"], 1);
    assert!(patch["diff"].as_str().unwrap().contains("+补充：设计要可回滚。"));
    let stale = call(
        &client,
        "propose_note_patch",
        json!({"path": "z/设计.md", "base_hash": "sha256:0000000000000000000000000000000000000000000000000000000000000000", "reason": "x", "edits": [{"op": "append", "content": "x\n"}]}),
    )
    .await
    .unwrap();
    assert_eq!(error_code(&stale), "stale_base");
    assert_eq!(error_object(&stale)["current_hash"], note["hash"]);
    let applied = call(&client, "apply_proposal", json!({"proposal_id": patch["proposal_id"]}))
        .await
        .unwrap()
        .structured_content
        .unwrap();
    assert_eq!(applied["status"], "applied");
    assert!(std::fs::read_to_string(vault.join("z/设计.md")).unwrap().ends_with("补充：设计要可回滚。\n"));
    // Issue 13: an applied proposal's checks are not failures (its note has moved
    // on), and one proposal is "1 proposal".
    let all = call(&client, "list_proposals", json!({"status": "all"})).await.unwrap();
    let text = all.content[0].as_text().unwrap().text.clone();
    assert!(text.starts_with("2 proposals\n- "), "{text}");
    assert!(!text.contains("(a check fails)"), "{text}");
    let one = call(&client, "list_proposals", json!({"status": "all", "limit": 1})).await.unwrap();
    assert!(one.content[0].as_text().unwrap().text.starts_with("1 proposal\n- "));
    let tags = call(&client, "list_tags", json!({"limit": 1})).await.unwrap();
    assert!(tags.content[0].as_text().unwrap().text.starts_with("1 tag\n"), "{tags:?}");
    client.cancel().await.unwrap();
}

/// A save that reaches a note's replaced file after the apply (an editor
/// whose open found it just before the swap) lands in the file parked in the
/// inbox; the running server sees that write and keeps it as a conflict copy
/// at once, without waiting for the next apply or start.
#[tokio::test(flavor = "multi_thread")]
async fn a_late_save_into_a_parked_file_becomes_a_conflict_copy_while_serving() {
    let (_tmp, vault) = common::temp_vault();
    let client = connect(&vault, "apply").await;
    let note =
        call(&client, "read_note", json!({"path": "z/设计.md"})).await.unwrap().structured_content.unwrap();
    let patch = call(
        &client,
        "propose_note_patch",
        json!({"path": "z/设计.md", "base_hash": note["hash"], "reason": "a line", "edits": [{"op": "append", "content": "from the agent\n"}]}),
    )
    .await
    .unwrap()
    .structured_content
    .unwrap();
    let applied =
        call(&client, "apply_proposal", json!({"proposal_id": patch["proposal_id"]})).await.unwrap();
    assert_eq!(applied.structured_content.unwrap()["status"], "applied");
    let parked = common::files_in(&vault.join("inbox/displaced"));
    assert_eq!(parked.len(), 1, "{parked:?}");
    assert!(parked[0].starts_with(vault.join("inbox/displaced/z")), "{parked:?}");
    // Past the watcher's debounce: the sweep the parking started has run and
    // waits for the files to age; the write must wake it.
    tokio::time::sleep(std::time::Duration::from_secs(2)).await;
    std::fs::write(&parked[0], "# 设计\n\nthe person's save\n").unwrap();
    let copies = || -> Vec<String> {
        let files = common::files_in(&vault.join("inbox/conflicts"));
        files.iter().map(|file| std::fs::read_to_string(file).unwrap()).collect()
    };
    let started = std::time::Instant::now();
    while copies().is_empty() && started.elapsed() < std::time::Duration::from_secs(20) {
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    }
    assert_eq!(copies(), vec!["# 设计\n\nthe person's save\n".to_owned()]);
    let overview = call(&client, "get_vault_overview", json!({})).await.unwrap().structured_content.unwrap();
    assert_eq!(overview["conflict_copies"]["total"], 1, "{overview}");
    assert_eq!(overview["conflict_copies"]["copies"][0]["note"], "z/设计.md", "{overview}");
    client.cancel().await.unwrap();
}

#[tokio::test(flavor = "multi_thread")]
async fn propose_level_cannot_apply() {
    let (_tmp, vault) = common::temp_vault();
    let client = connect(&vault, "propose").await;
    let names: Vec<String> =
        client.list_tools(None).await.unwrap().tools.into_iter().map(|t| t.name.to_string()).collect();
    assert_eq!(names.len(), 21);
    assert!(!names.contains(&"apply_proposal".to_owned()));
    let told = client.peer_info().unwrap().instructions.clone().unwrap_or_default();
    assert!(told.contains("propose_new_note") && told.contains("cannot apply"), "{told}");
    assert!(!told.contains("apply_proposal"), "{told}");
    let prompt = client
        .get_prompt(
            GetPromptRequestParams::new("new_knowledge_note")
                .with_arguments(args(json!({"topic": "冷备份"}))),
        )
        .await
        .unwrap();
    let text = &prompt.messages[0].content.as_text().unwrap().text;
    assert!(text.contains("propose_new_note") && text.contains("approval"), "{text}");
    let staged = propose_new(&client, "Propose only", "body\n").await;
    let refused =
        call(&client, "apply_proposal", json!({"proposal_id": staged["proposal_id"]})).await.unwrap();
    assert_eq!(error_code(&refused), "permission_denied");
    assert!(!vault.join("z/Propose only.md").exists());
    client.cancel().await.unwrap();
}

#[tokio::test(flavor = "multi_thread")]
async fn the_person_confirms_or_declines_an_apply_through_elicitation_in_both_protocol_eras() {
    for version in [ProtocolVersion::V_2025_11_25, ProtocolVersion::V_2026_07_28] {
        let (_tmp, vault) = common::temp_vault();
        let (decliner, asked) = connect_confirmer(&vault, false, version.clone()).await;
        let body: String = (1..=60).map(|n| format!("line {n}\n")).collect();
        let staged = call_with(
            &decliner,
            "propose_new_note",
            json!({"title": "Needs consent", "body": body, "reason": "r"}),
        )
        .await;
        let id = staged.structured_content.unwrap()["proposal_id"].as_str().unwrap().to_owned();
        let declined = call_with(&decliner, "apply_proposal", json!({"proposal_id": id})).await;
        assert_eq!(error_code(&declined), "permission_denied", "{version:?}");
        assert!(!vault.join("z/Needs consent.md").exists(), "{version:?}: a decline writes nothing");
        let question = asked.lock().unwrap().clone();
        assert!(question[0].contains("z/Needs consent.md") && question[0].contains("create"), "{question:?}");
        // Issue 13: the person sees the change itself: the first 40 lines of the diff.
        assert!(question[0].contains("\n+++ b/z/Needs consent.md\n"), "{question:?}");
        assert!(question[0].contains("\n+line 1\n") && !question[0].contains("+line 60"), "{question:?}");
        assert!(question[0].contains("more lines of diff"), "{question:?}");
        decliner.cancel().await.unwrap();

        let (accepter, _) = connect_confirmer(&vault, true, version.clone()).await;
        let applied = call_with(&accepter, "apply_proposal", json!({"proposal_id": id})).await;
        assert_eq!(applied.structured_content.unwrap()["status"], "applied", "{version:?}");
        assert!(vault.join("z/Needs consent.md").exists());
        accepter.cancel().await.unwrap();
    }
}

async fn call_with<S: rmcp::Service<RoleClient>>(
    client: &RunningService<RoleClient, S>,
    name: &str,
    arguments: Value,
) -> CallToolResult {
    client
        .call_tool(CallToolRequestParams::new(name.to_owned()).with_arguments(args(arguments)))
        .await
        .unwrap()
}

#[tokio::test(flavor = "multi_thread")]
async fn the_cli_and_mcp_paths_produce_the_same_archive_and_audit_shape() {
    let (_tmp, vault) = common::temp_vault();
    let client = connect(&vault, "apply").await;
    let by_mcp = propose_new(&client, "Via MCP", "one\n").await;
    let by_cli = propose_new(&client, "Via CLI", "two\n").await;
    call(&client, "apply_proposal", json!({"proposal_id": by_mcp["proposal_id"]})).await.unwrap();
    client.cancel().await.unwrap();
    let output = Command::new(env!("CARGO_BIN_EXE_kb-index"))
        .args(["inbox", "apply", "--yes", "--only", by_cli["proposal_id"].as_str().unwrap(), "--vault"])
        .arg(&vault)
        .output()
        .unwrap();
    assert!(output.status.success(), "{}", String::from_utf8_lossy(&output.stderr));
    let lines: Vec<Value> = std::fs::read_to_string(vault.join("inbox/_applied.jsonl"))
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(lines.len(), 2);
    let keys = |v: &Value| v.as_object().unwrap().keys().cloned().collect::<Vec<_>>();
    assert_eq!(keys(&lines[0]), keys(&lines[1]));
    assert_eq!((lines[0]["by"].as_str(), lines[1]["by"].as_str()), (Some("mcp"), Some("cli")));
    assert_eq!(lines[0]["archive"], lines[1]["archive"], "same dated archive folder");
    let archive = vault.join(lines[0]["archive"].as_str().unwrap());
    let mut names: Vec<String> = std::fs::read_dir(archive)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    assert_eq!(names.len(), 4, "two files per new-note proposal: {names:?}");
    assert!(names.iter().filter(|n| n.ends_with(".proposal.json")).count() == 2);
}

/// One progress notification: progress, total, message.
type Progress = (f64, Option<f64>, Option<String>);

/// A client that counts progress notifications.
struct ProgressCounter {
    seen: std::sync::Arc<std::sync::Mutex<Vec<Progress>>>,
}

impl rmcp::ClientHandler for ProgressCounter {
    fn get_info(&self) -> ClientConfig {
        client_config(ProtocolVersion::V_2025_11_25)
    }

    async fn on_progress(
        &self,
        params: ProgressNotificationParam,
        _context: rmcp::service::NotificationContext<RoleClient>,
    ) {
        self.seen.lock().unwrap().push((params.progress, params.total, params.message));
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn a_call_during_the_first_index_build_waits_and_reports_progress() {
    let dir = tempfile::tempdir().unwrap();
    let vault = dir.path().join("big");
    std::fs::create_dir_all(vault.join("notes")).unwrap();
    for i in 0..2000 {
        let text = format!(
            "# Note {i}\n\n关于第{i}号主题的笔记，链接到 [[Note {}]]。 lorem ipsum dolor {i}\n",
            (i * 7) % 2000
        );
        std::fs::write(vault.join(format!("notes/note {i}.md")), text).unwrap();
    }
    let seen = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
    let (transport, _stderr) =
        TokioChildProcess::builder(command(&vault, "read")).stderr(Stdio::null()).spawn().unwrap();
    let client = ProgressCounter { seen: seen.clone() }.serve(transport).await.unwrap();
    // initialize answered at once; this call arrives while the first build runs.
    let result = client
        .call_tool(
            CallToolRequestParams::new("search_note_content").with_arguments(args(json!({"query": "主题"}))),
        )
        .await
        .unwrap();
    assert_eq!(result.structured_content.unwrap()["total"], 2000, "the call waited for the whole index");
    let seen = seen.lock().unwrap().clone();
    assert!(!seen.is_empty(), "no progress notification while waiting for the index");
    assert!(seen.iter().any(|(_, _, message)| {
        message.as_deref().is_some_and(|m| m.contains("index") || m.contains("opening"))
    }));
    client.cancel().await.unwrap();
}

/// Every read call that could reveal `z/Secrets/passwords.md`, with what it answered
/// (`isError` results as their error text).
async fn secret_views(client: &Client) -> Vec<(&'static str, String)> {
    let calls = [
        ("read_note", json!({"path": "z/Secrets/passwords.md"})),
        ("search_note_content", json!({"query": "zebracorn"})),
        ("search_knowledge", json!({"query": "zebracorn passwords"})),
        ("list_recent_notes", json!({"days": 3650, "limit": 100})),
        ("list_tags", json!({"limit": 1000})),
        ("get_related_notes", json!({"path": "z/备份仓库.md"})),
        ("recall_context", json!({"topic": "router password zebracorn"})),
    ];
    let mut out = Vec::new();
    for (name, arguments) in calls {
        let result = call(client, name, arguments).await.unwrap();
        out.push((name, serde_json::to_string(&result).unwrap()));
    }
    out
}

const SECRET_KB_TOML: &str = "[vault]\nnotes = [\"z\"]\nstandards = [\"docs\"]\ninbox = \"inbox\"\n\
                              read_also = [\"refs\"]\ndeny = [\"z/private\", \"z/Secrets\"]\n\
                              [tags]\nregistry = \"docs/tags.md\"\n";

/// Issue 12, item 4: a `deny` added to `kb.toml` while the server runs hides the
/// notes from the very next call; an invalid `kb.toml` makes every call fail with
/// its line and column until it is fixed; removing the rule shows them again.
#[tokio::test(flavor = "multi_thread")]
async fn issue12_a_deny_rule_added_while_running_hides_notes_at_once() {
    let (_tmp, vault) = common::temp_vault();
    std::fs::create_dir_all(vault.join("z/Secrets")).unwrap();
    std::fs::write(
        vault.join("z/Secrets/passwords.md"),
        "# passwords\n\nzebracorn is the router password. #vaultsecret\n\nSee [[备份仓库]].\n",
    )
    .unwrap();
    let original = std::fs::read_to_string(vault.join("kb.toml")).unwrap();
    let client = connect(&vault, "read").await;
    for (name, text) in secret_views(&client).await {
        assert!(
            text.contains("Secrets/passwords") || text.contains("\"tag\":\"vaultsecret\""),
            "{name} did not show the note before the rule: {text}"
        );
    }
    std::fs::write(vault.join("kb.toml"), SECRET_KB_TOML).unwrap();
    // No waiting: the very next call must see the rule.
    for (name, text) in secret_views(&client).await.into_iter().filter(|(name, _)| *name != "read_note") {
        assert!(
            !text.contains("Secrets/passwords") && !text.contains("vaultsecret"),
            "{name} still showed the denied note: {text}"
        );
    }
    let read = call(&client, "read_note", json!({"path": "z/Secrets/passwords.md"})).await.unwrap();
    assert_eq!(error_code(&read), "path_denied");

    // An invalid kb.toml: every call fails, naming the line and column.
    std::fs::write(vault.join("kb.toml"), "[vault]\nnotes = [\"z\"\ndeny = 3\n").unwrap();
    for (name, arguments) in [
        ("get_vault_overview", json!({})),
        ("read_note", json!({"path": "z/备份仓库.md"})),
        ("search_note_content", json!({"query": "备份"})),
    ] {
        let result = call(&client, name, arguments).await.unwrap();
        assert_eq!(result.is_error, Some(true), "{name} answered with an invalid kb.toml: {result:?}");
        let text = serde_json::to_string(&result).unwrap();
        assert!(text.contains("kb.toml") && text.contains("line 3, column"), "{name}: {text}");
    }
    let resource = client.read_resource(ReadResourceRequestParams::new("kb://tags")).await;
    assert!(resource.is_err(), "a resource was served with an invalid kb.toml");

    // Fixed (and the rule gone): the note is back.
    std::fs::write(vault.join("kb.toml"), &original).unwrap();
    let read = call(&client, "read_note", json!({"path": "z/Secrets/passwords.md"})).await.unwrap();
    assert_ne!(read.is_error, Some(true), "{read:?}");
    let found = call(&client, "search_note_content", json!({"query": "zebracorn"})).await.unwrap();
    assert_eq!(found.structured_content.unwrap()["total"], 1);
    client.cancel().await.unwrap();
}

/// Issue 12, item 4: a server started with an invalid `kb.toml` says why on every
/// call and serves again soon after the file is fixed (the watcher's debounce),
/// without a restart.
#[tokio::test(flavor = "multi_thread")]
async fn issue12_a_server_started_with_an_invalid_kb_toml_recovers_when_it_is_fixed() {
    let (_tmp, vault) = common::temp_vault();
    let original = std::fs::read_to_string(vault.join("kb.toml")).unwrap();
    std::fs::write(vault.join("kb.toml"), "[vault]\nnotes = \"z\n").unwrap();
    let client = connect(&vault, "read").await;
    let result = call(&client, "get_vault_overview", json!({})).await.unwrap();
    let text = serde_json::to_string(&result).unwrap();
    assert_eq!(result.is_error, Some(true));
    assert!(text.contains("kb.toml") && text.contains("line 2, column"), "{text}");
    std::fs::write(vault.join("kb.toml"), &original).unwrap();
    let fixed = Instant::now();
    loop {
        let result = call(&client, "read_note", json!({"path": "z/备份仓库.md"})).await.unwrap();
        if result.is_error != Some(true) {
            break;
        }
        assert!(fixed.elapsed() < WATCHER_BOUND, "still failing after the fix: {result:?}");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    client.cancel().await.unwrap();
}

/// Issue 18: a server started on an index that lacks notes written while no
/// server ran must not answer a search from that index as if it were complete:
/// the first searches either find the new note (the start-up sync is waited
/// for) or say, in the structured result and in the text, that they are stale.
#[tokio::test(flavor = "multi_thread")]
async fn a_search_at_start_up_finds_a_just_added_note_or_says_it_is_stale() {
    let (_tmp, vault) = common::temp_vault();
    let built = Command::new(env!("CARGO_BIN_EXE_kb-index"))
        .arg("build")
        .arg("--vault")
        .arg(&vault)
        .output()
        .unwrap();
    assert!(built.status.success(), "{}", String::from_utf8_lossy(&built.stderr));
    // Written while no server runs: enough other notes that the start-up sync
    // takes longer than a client's handshake.
    std::fs::create_dir_all(vault.join("z/bulk")).unwrap();
    for i in 0..1500 {
        let body = format!("# Bulk {i}\n\nFiller text about gardens, rivers and week {i}.\n");
        std::fs::write(vault.join(format!("z/bulk/bulk-{i}.md")), body).unwrap();
    }
    std::fs::write(vault.join("z/刚加的笔记.md"), "# Zephyrquokka\n\nThe zephyrquokka note, added last.\n")
        .unwrap();

    let client = connect(&vault, "read").await;
    for tool in ["search_note_content", "search_knowledge", "recall_context"] {
        let arguments = if tool == "recall_context" {
            json!({"topic": "zephyrquokka"})
        } else {
            json!({"query": "zephyrquokka"})
        };
        let result = call(&client, tool, arguments).await.unwrap();
        let structured = result.structured_content.clone().unwrap();
        let text = result.content[0].as_text().unwrap().text.clone();
        let list = if tool == "recall_context" { &structured["items"] } else { &structured["results"] };
        let found = list.as_array().unwrap().iter().any(|hit| hit["path"] == "z/刚加的笔记.md");
        let stale = structured["stale"].is_string() && text.starts_with("STALE: ");
        assert!(found || stale, "{tool}: neither found the new note nor said it is stale: {structured}");
        if found && structured.get("stale").is_some() {
            assert!(text.starts_with("STALE: "), "{tool}: the text must carry the stale notice too: {text}");
        }
    }
    // Once caught up, nothing is stale and the note is found (a loaded machine
    // may take longer than the server's wait: ask until it has caught up).
    let deadline = Instant::now() + Duration::from_secs(120);
    let structured = loop {
        let result = call(&client, "search_note_content", json!({"query": "zephyrquokka"})).await.unwrap();
        let structured = result.structured_content.unwrap();
        if structured.get("stale").is_none() || Instant::now() > deadline {
            break structured;
        }
    };
    assert_eq!(structured["results"][0]["path"], "z/刚加的笔记.md", "{structured}");
    assert!(structured.get("stale").is_none(), "{structured}");
    client.cancel().await.unwrap();
}

/// Issue 12, item 15: the person's own `Inbox/` (the default inbox `inbox`,
/// compared case-insensitively) makes the server refuse to stage proposals, with
/// a message saying how to choose another inbox; reading goes on, the person's
/// Inbox notes included; a read-level server creates nothing in the vault.
#[tokio::test(flavor = "multi_thread")]
async fn issue12_a_persons_own_inbox_is_never_used_for_proposals() {
    let (_tmp, vault) = common::temp_person_vault();
    let before = common::snapshot(&vault);
    let reader = connect(&vault, "read").await;
    for (name, arguments) in [
        ("get_vault_overview", json!({})),
        ("search_knowledge", json!({"query": "卡片笔记"})),
        ("list_tags", json!({})),
        ("list_recent_notes", json!({"days": 3650})),
        ("get_related_notes", json!({"path": "Inbox/想法.md"})),
        ("read_note", json!({"path": "Inbox/想法.md"})),
        ("search_note_content", json!({"query": "卡片"})),
    ] {
        let result = call(&reader, name, arguments).await.unwrap();
        assert_ne!(result.is_error, Some(true), "{name}: {result:?}");
    }
    let found = call(&reader, "search_note_content", json!({"query": "每张卡片只写一个想法"})).await.unwrap();
    assert_eq!(found.structured_content.unwrap()["results"][0]["path"], "Inbox/想法.md");
    reader.cancel().await.unwrap();
    assert_eq!(common::snapshot(&vault), before, "a read-level server changed the vault");

    let proposer = connect(&vault, "apply").await;
    let staged = call(
        &proposer,
        "propose_new_note",
        json!({"title": "新想法", "body": "Something new.\n", "reason": "test"}),
    )
    .await
    .unwrap();
    assert_eq!(error_code(&staged), "permission_denied");
    let text = serde_json::to_string(&staged).unwrap();
    assert!(text.contains("Inbox/") && text.contains("kb.toml") && text.contains("inbox ="), "{text}");
    assert!(text.contains("no restart"), "the hint says the change is taken in at once: {text}");
    let read = call(&proposer, "read_note", json!({"path": "Inbox/Reading list.md"})).await.unwrap();
    assert_ne!(read.is_error, Some(true), "{read:?}");
    assert_eq!(common::snapshot(&vault), before, "a refused proposal changed the vault");

    // With another inbox chosen in kb.toml, the same session stages proposals there: no restart.
    std::fs::write(vault.join("kb.toml"), "[vault]\ninbox = \"_kb-inbox\"\n").unwrap();
    let staged = call(
        &proposer,
        "propose_new_note",
        json!({"title": "新想法", "body": "Something new.\n", "reason": "test"}),
    )
    .await
    .unwrap();
    assert_ne!(staged.is_error, Some(true), "{staged:?}");
    assert!(vault.join("_kb-inbox").is_dir());
    proposer.cancel().await.unwrap();
}

/// Issue 12, item 17: skipped files (a symlinked folder out of the vault, a note
/// that is not UTF-8, the templates) are named with their reasons by `kb-index
/// build`, the text of `kb-index status` and of `get_vault_overview`, and its
/// structured answer; the note that is not UTF-8 is listed nowhere as a note.
#[cfg(unix)]
#[tokio::test(flavor = "multi_thread")]
async fn issue12_skipped_files_are_named_in_every_text() {
    let (_tmp, vault) = common::person_vault_with_exclusions();
    let kb_index = |args: &[&str]| {
        Command::new(env!("CARGO_BIN_EXE_kb-index")).args(args).arg("--vault").arg(&vault).output().unwrap()
    };
    let built = kb_index(&["build"]);
    assert!(built.status.success(), "{}", String::from_utf8_lossy(&built.stderr));
    let stderr = String::from_utf8_lossy(&built.stderr);
    assert!(
        stderr.contains("skipped Shared: a symbolic link to a folder leading outside the vault"),
        "{stderr}"
    );
    assert!(stderr.contains("skipped Daily/旧笔记.md: not UTF-8"), "{stderr}");

    let status = kb_index(&["status"]);
    let text = String::from_utf8_lossy(&status.stdout);
    assert!(status.status.success(), "{text}{}", String::from_utf8_lossy(&status.stderr));
    assert!(text.contains("skipped    4 files"), "{text}");
    for line in ["Daily/旧笔记.md: not UTF-8", "Shared: a symbolic link", "Templates/Daily.md: a template"]
    {
        assert!(text.contains(line), "{line:?} missing from:\n{text}");
    }

    let client = connect(&vault, "read").await;
    let overview = call(&client, "get_vault_overview", json!({})).await.unwrap();
    let structured = overview.structured_content.clone().unwrap();
    assert_eq!(structured["index"]["skipped_files"], 4, "{structured}");
    assert_eq!(structured["index"]["skipped"][0]["path"], "Daily/旧笔记.md", "{structured}");
    assert_eq!(structured["counts"]["notes"], 7, "{structured}");
    let text = overview.content[0].as_text().unwrap().text.clone();
    assert!(text.contains("4 files skipped"), "{text}");
    for line in
        ["- Daily/旧笔记.md: not UTF-8", "- Shared: a symbolic link", "- Templates/Meeting.md: a template"]
    {
        assert!(text.contains(line), "{line:?} missing from:\n{text}");
    }
    for (name, arguments) in [("list_recent_notes", json!({"days": 36500})), ("list_tags", json!({}))] {
        let listed = call(&client, name, arguments).await.unwrap();
        let answer = serde_json::to_string(&listed).unwrap();
        assert!(!answer.contains("旧笔记") && !answer.contains("legacy"), "{name}: {answer}");
    }
    let read = call(&client, "read_note", json!({"path": "Daily/旧笔记.md"})).await.unwrap();
    assert_eq!(read.is_error, Some(true), "{read:?}");
    client.cancel().await.unwrap();
}

/// Issue 12, item 15, for the command line: `kb-index inbox` obeys the rule the
/// server obeys. With the person's own `Inbox/` where the inbox would be, every
/// `inbox` command is refused with the message saying how to choose another
/// inbox in `kb.toml`, and nothing is created in the vault (no lock, no log).
#[test]
fn issue12_kb_index_inbox_refuses_a_persons_own_inbox() {
    let (_tmp, vault) = common::temp_person_vault();
    let before = common::snapshot(&vault);
    let id = "p_0123456789abcdef0123456789abcdef";
    for args in [
        vec!["inbox", "apply", "--yes", "--only", id],
        vec!["inbox", "apply"],
        vec!["inbox", "reject", id, "--reason", "no"],
        vec!["inbox", "list"],
    ] {
        let output = Command::new(env!("CARGO_BIN_EXE_kb-index"))
            .args(&args)
            .arg("--vault")
            .arg(&vault)
            .env_remove("KB_VAULT")
            .output()
            .unwrap();
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert!(!output.status.success(), "{args:?} succeeded: {stderr}");
        assert!(
            stderr.contains("Inbox/") && stderr.contains("kb.toml") && stderr.contains("inbox ="),
            "{args:?}: {stderr}"
        );
        assert_eq!(common::snapshot(&vault), before, "{args:?} changed the vault");
    }
    // With another inbox chosen in kb.toml, the inbox commands work.
    std::fs::write(vault.join("kb.toml"), "[vault]\ninbox = \"_kb-inbox\"\n").unwrap();
    let output = Command::new(env!("CARGO_BIN_EXE_kb-index"))
        .args(["inbox", "list", "--vault"])
        .arg(&vault)
        .env_remove("KB_VAULT")
        .output()
        .unwrap();
    assert!(output.status.success(), "{}", String::from_utf8_lossy(&output.stderr));
    assert!(String::from_utf8_lossy(&output.stdout).contains("no pending proposals"));
}

/// Issue 15: `list_notes` through rmcp's client: listed at the read level, folders
/// with counts, a page and its cursor, the text rendering.
#[tokio::test(flavor = "multi_thread")]
async fn issue15_list_notes_walks_the_vault_page_by_page() {
    let (_tmp, vault) = common::temp_vault();
    let client = connect(&vault, "read").await;
    let top = call(&client, "list_notes", json!({})).await.unwrap();
    let structured = top.structured_content.clone().unwrap();
    let folders: Vec<&str> =
        structured["folders"].as_array().unwrap().iter().map(|f| f["path"].as_str().unwrap()).collect();
    assert_eq!(folders, ["docs", "refs", "z"], "{structured}");
    assert!(top.content[0].as_text().unwrap().text.contains("z/ ("), "{top:?}");

    let mut seen = Vec::new();
    let mut cursor: Option<String> = None;
    let mut totals = Vec::new();
    loop {
        let mut arguments = json!({"folder": "z", "limit": 4});
        if let Some(cursor) = &cursor {
            arguments["cursor"] = json!(cursor);
        }
        let page = call(&client, "list_notes", arguments).await.unwrap();
        assert_ne!(page.is_error, Some(true), "{page:?}");
        let page = page.structured_content.unwrap();
        totals.push(page["total"].as_u64().unwrap());
        seen.extend(page["notes"].as_array().unwrap().iter().map(|n| n["path"].as_str().unwrap().to_owned()));
        match page.get("next_cursor").and_then(Value::as_str) {
            Some(next) => cursor = Some(next.to_owned()),
            None => break,
        }
    }
    assert!(totals.len() > 1 && totals.iter().all(|&t| t == seen.len() as u64), "{totals:?} {seen:?}");
    let mut sorted = seen.clone();
    sorted.sort();
    assert_eq!(sorted, seen, "by path, each once");
    assert!(seen.iter().all(|p| p.starts_with("z/") && !p[2..].contains('/')), "{seen:?}");
    client.cancel().await.unwrap();
}

/// Issue 15: `kb-index ls [FOLDER]` prints a folder's subfolders with counts and
/// its notes, from the same engine method as `list_notes`; errors exit 2.
#[test]
fn issue15_kb_index_ls_lists_a_folder() {
    let (_tmp, vault) = common::temp_person_vault();
    let kb_index = |args: &[&str]| {
        Command::new(env!("CARGO_BIN_EXE_kb-index")).args(args).arg("--vault").arg(&vault).output().unwrap()
    };
    let top = kb_index(&["ls"]);
    let text = String::from_utf8_lossy(&top.stdout);
    assert!(top.status.success(), "{text}{}", String::from_utf8_lossy(&top.stderr));
    assert!(text.starts_with("Daily/  (2 notes)\nDrawings/  (1 note)\n"), "{text}");
    assert!(!text.contains("Templates"), "{text}");
    let daily = kb_index(&["ls", "Daily", "--sort", "updated"]);
    let text = String::from_utf8_lossy(&daily.stdout);
    assert!(text.contains("Daily/2026-12-01.md  ") && text.contains("Daily: 2 notes, 0 folders"), "{text}");
    let json = kb_index(&["ls", "--tag", "meeting", "--json"]);
    let listing: Value = serde_json::from_slice(&json.stdout).unwrap();
    assert_eq!(listing["folders"], json!([{"path": "Meetings", "notes": 1}]), "{listing}");
    let denied = kb_index(&["ls", ".obsidian"]);
    assert_eq!(denied.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&denied.stderr).contains("path_denied"), "{denied:?}");
    let none = kb_index(&["ls", "Daily", "--tag", "nothing-carries-this"]);
    assert_eq!(none.status.code(), Some(1), "nothing matched");
}

/// Issue 13 (lean answers): on a 459 KB note `read_note` answered 535 KB (a 256 KiB
/// page as text and again as structure, the whole outline with every page), and
/// `kb://note/…` returned the whole file; `kb://tree` was 887 KB on obsidian-help.
/// A page's text is the page, the default page is 64 KiB, the note resource is
/// that page with a pointer to `read_note`, and the tree is capped with a pointer to
/// `list_notes`.
#[tokio::test(flavor = "multi_thread")]
async fn issue13_answers_and_resources_stay_lean_on_a_big_note_and_a_big_vault() {
    let (_tmp, vault) = common::temp_vault();
    let mut text = String::from("# Big note\n");
    let mut n = 0;
    while text.len() < 459 * 1024 {
        n += 1;
        text.push_str(&format!("\n## Section {n}\n\n{}\n", "Syncing is not a backup. ".repeat(60)));
    }
    std::fs::write(vault.join("z/big.md"), &text).unwrap();
    let many = vault.join("z/many");
    std::fs::create_dir_all(&many).unwrap();
    for n in 0..1500 {
        let name = format!("a rather long note name to fill the tree quickly, number {n:04}");
        std::fs::write(many.join(format!("{name}.md")), format!("# {name}\n")).unwrap();
    }
    let client = connect(&vault, "read").await;

    let page = call(&client, "read_note", json!({"path": "z/big.md"})).await.unwrap();
    let structured = page.structured_content.as_ref().unwrap();
    assert_eq!(structured["content"].as_str().unwrap().len(), 65_536);
    let shown = page.content[0].as_text().unwrap();
    assert!(shown.text.contains(&text[..65_536]), "the text content is the page itself");
    assert!(serde_json::from_str::<Value>(&shown.text).is_err(), "the text content is not JSON");
    let whole = serde_json::to_string(&page).unwrap();
    assert!(whole.len() < 2 * 65_536 + 16 * 1024, "read_note answered {} bytes", whole.len());
    let later = call(&client, "read_note", json!({"path": "z/big.md", "offset": 100_000, "max_bytes": 2048}))
        .await
        .unwrap();
    let later = serde_json::to_string(&later).unwrap();
    assert!(later.len() < 6 * 1024, "a 2 KB page answered {} bytes: {later}", later.len());

    let resource = client.read_resource(ReadResourceRequestParams::new("kb://note/z/big.md")).await.unwrap();
    let ResourceContents::TextResourceContents { text: served, .. } = &resource.contents[0] else { panic!() };
    assert!(served.starts_with(&text[..65_536]), "the resource starts with the note's first page");
    assert!(served.len() < 65_536 + 512, "kb://note answered {} bytes", served.len());
    assert!(
        served
            .trim_end()
            .ends_with("read on with the read_note tool: {\"path\": \"z/big.md\", \"offset\": 65536} -->"),
        "{}",
        &served[65_536..]
    );

    let tree = client.read_resource(ReadResourceRequestParams::new("kb://tree")).await.unwrap();
    let ResourceContents::TextResourceContents { text: tree, .. } = &tree.contents[0] else { panic!() };
    assert!(tree.len() <= 64 * 1024, "kb://tree answered {} bytes", tree.len());
    let tree: Value = serde_json::from_str(tree).unwrap();
    assert_eq!(tree["truncated"], true);
    assert!(tree["notes_total"].as_u64().unwrap() > 1500);
    assert!(tree["folders"].as_array().unwrap().iter().any(|f| f == "z/many"));
    assert!(tree["hint"].as_str().unwrap().contains("list_notes"), "{}", tree["hint"]);
    client.cancel().await.unwrap();
}

/// Issue 15: `audit_vault` through rmcp's client: a read tool whose broken
/// links and anchors add up to the overview's count, whose `fix: true` is
/// refused below access propose, and whose unknown checks are argument errors.
#[tokio::test(flavor = "multi_thread")]
async fn issue15_audit_vault_and_overview_since_over_mcp() {
    let (_tmp, vault) = common::temp_vault();
    let client = connect(&vault, "read").await;
    let overview = call(&client, "get_vault_overview", json!({})).await.unwrap().structured_content.unwrap();
    let result = call(&client, "audit_vault", json!({"checks": ["broken_link", "broken_anchor", "orphan"]}))
        .await
        .unwrap();
    assert_ne!(result.is_error, Some(true), "{result:?}");
    let audit = result.structured_content.unwrap();
    let broken =
        audit["counts"]["broken_link"].as_u64().unwrap() + audit["counts"]["broken_anchor"].as_u64().unwrap();
    assert_eq!(broken, overview["counts"]["broken_links"].as_u64().unwrap(), "{audit}");
    assert_eq!(audit["counts"]["orphan"], 1);
    let orphans: Vec<&str> = audit["findings"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|f| f["check"] == "orphan")
        .map(|f| f["path"].as_str().unwrap())
        .collect();
    assert_eq!(orphans, ["z/reading/孤立的想法.md"]);
    assert!(result.content[0].as_text().unwrap().text.contains("orphan z/reading/孤立的想法.md"), "{audit}");
    let refused = call(&client, "audit_vault", json!({"fix": true})).await.unwrap();
    assert_eq!(error_code(&refused), "permission_denied");
    let unknown = call(&client, "audit_vault", json!({"checks": ["spelling"]})).await.unwrap();
    assert_eq!(error_code(&unknown), "invalid_argument");
    // The overview's changes since its own cursor: none; a garbled cursor is an argument error.
    let cursor = overview["changes"]["cursor"].as_str().unwrap();
    let since = call(&client, "get_vault_overview", json!({"since": cursor})).await.unwrap();
    let changes = &since.structured_content.unwrap()["changes"];
    assert_eq!(changes["added"], json!([]), "{changes}");
    assert_eq!(changes["applied"], json!([]), "{changes}");
    let garbled = call(&client, "get_vault_overview", json!({"since": "c1garbled"})).await.unwrap();
    assert_eq!(error_code(&garbled), "invalid_argument");
    client.cancel().await.unwrap();

    // At access propose the mechanical fixes are staged, one proposal per kind
    // (in the messy vault only the map of content's line); the rest are counted.
    let (_tmp, messy) = common::messy_vault();
    let client = connect(&messy, "propose").await;
    let fixed = call(&client, "audit_vault", json!({"fix": true, "limit": 1})).await.unwrap();
    assert_ne!(fixed.is_error, Some(true), "{fixed:?}");
    let text = fixed.content[0].as_text().unwrap().text.clone();
    let fixed = fixed.structured_content.unwrap();
    assert_eq!(fixed["proposals"].as_array().unwrap().len(), 1, "{fixed}");
    assert_eq!(fixed["unstaged"], json!({"suggestion": 4}));
    assert!(text.contains("4 fixes left as suggestions"), "{text}");
    assert!(text.contains("[suggestion: link to z/备份仓库.md instead of `备份仓`]"), "{text}");
    let pending = call(&client, "list_proposals", json!({})).await.unwrap().structured_content.unwrap();
    assert_eq!(pending["proposals"].as_array().unwrap().len(), 1, "{pending}");
    client.cancel().await.unwrap();
}

/// Issue 15: `kb-index audit` prints the errors and warnings (`-v` also the
/// info findings) and exits 1 on errors;
/// `--fix` stages the fixes, `--fix --yes` applies them; an unknown check is bad usage.
#[test]
fn issue15_kb_index_audit_reports_and_fixes() {
    let (_tmp, vault) = common::messy_vault();
    let kb_index = |args: &[&str]| {
        Command::new(env!("CARGO_BIN_EXE_kb-index")).args(args).arg("--vault").arg(&vault).output().unwrap()
    };
    let all = kb_index(&["audit"]);
    let text = String::from_utf8_lossy(&all.stdout);
    assert_eq!(all.status.code(), Some(1), "{text}{}", String::from_utf8_lossy(&all.stderr));
    assert!(
        text.contains("z/Backup MOC.md:7: error [broken_link] [[备份仓]] leads to no note or file"),
        "{text}"
    );
    assert!(text.contains("    suggestion: link to z/备份仓库.md instead of `备份仓`"), "{text}");
    assert!(text.contains("    fix: add [[孤立笔记]] to z/Backup MOC.md"), "{text}");
    assert!(text.trim_end().ends_with("21 findings, 7 errors (ambiguous_link 1, broken_anchor 2, broken_link 2, duplicate_title 2, empty_note 1, frontmatter 3, moc_missing 1, orphan 2, oversize_note 1, skipped_file 1, unlinked_mention 2, unregistered_tag 3)"), "{text}");
    // Issue 34, "first hour": info lines (orphans, unlinked mentions) drowned the
    // errors; they are counted by default and listed with -v; --json keeps all.
    assert!(!text.contains(": info ["), "{text}");
    assert!(
        text.contains(
            "4 info findings not listed (orphans, unlinked mentions); `kb-index audit -v` lists them"
        ),
        "{text}"
    );
    assert_eq!(text.lines().filter(|l| l.contains(": error [") || l.contains(": warning [")).count(), 17);
    let verbose = kb_index(&["audit", "-v"]);
    let listed = String::from_utf8_lossy(&verbose.stdout);
    assert_eq!(listed.lines().filter(|l| l.contains(": info [")).count(), 4, "{listed}");
    assert!(!listed.contains("not listed"), "{listed}");
    assert!(listed.trim_end().ends_with(text.trim_end().lines().last().unwrap()), "{listed}");
    let every: Value = serde_json::from_slice(&kb_index(&["audit", "--json"]).stdout).unwrap();
    assert_eq!(every["findings"].as_array().unwrap().len(), 21, "--json lists every finding");
    let json = kb_index(&["audit", "z/daily", "--json"]);
    let audit: Value = serde_json::from_slice(&json.stdout).unwrap();
    assert_eq!(audit["total"], 3, "{audit}");
    let orphans = kb_index(&["audit", "--checks", "orphan,duplicate_title"]);
    assert_eq!(orphans.status.code(), Some(0), "no errors among these");
    let bad = kb_index(&["audit", "--checks", "spelling"]);
    assert_eq!(bad.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&bad.stderr).contains("unknown check `spelling`"), "{bad:?}");
    let before = std::fs::read(vault.join("z/Backup MOC.md")).unwrap();
    let staged = kb_index(&["audit", "--fix"]);
    let text = String::from_utf8_lossy(&staged.stdout);
    let id = text.split("staged 1 fix proposal: ").nth(1).and_then(|rest| rest.split(';').next()).unwrap();
    assert!(text.contains("4 fixes left as suggestions"), "{text}");
    assert_eq!(std::fs::read(vault.join("z/Backup MOC.md")).unwrap(), before, "--fix alone writes no note");
    // The line is pending now: a second call does not stage it again.
    let again = kb_index(&["audit", "--fix"]);
    let text = String::from_utf8_lossy(&again.stdout);
    assert!(
        text.contains("no mechanical fix staged") && text.contains("a pending proposal already changes"),
        "{text}"
    );
    let rejected = kb_index(&["inbox", "reject", id, "--reason", "test"]);
    assert!(rejected.status.success(), "{rejected:?}");
    let applied = kb_index(&["audit", "--fix", "--yes", "--checks", "broken_link,moc_missing"]);
    let text = String::from_utf8_lossy(&applied.stdout);
    assert!(
        text.contains("applied 1 fix proposal: ") && text.contains("after the fixes: 2 errors"),
        "{text}"
    );
    assert!(
        std::fs::read_to_string(vault.join("z/Backup MOC.md"))
            .unwrap()
            .ends_with("- [[备份仓]]\n- [[Nonexistent thing]]\n- [[孤立笔记]]\n")
    );
}

/// Issue 13 (tools/list): 23.4 KB at `read` and 36.3 KB at `apply`, optional
/// arguments typed `["integer", "null"]` (the MCP Inspector warned about each).
/// The caps are 16 KiB at `read` and 28 KiB at `propose` and `apply` (24 KiB
/// until issue 37's `ranking` and `lexical_only`, 320 bytes after the tools'
/// descriptions gave back 36; 25 KiB until issue 38's `list_history`, 1.2 KB;
/// 26 KiB until its `propose_restore`, 1.45 KB);
/// tools added later must fit under them too. No optional argument admits `null` in its
/// schema, and an explicit `null` is still taken as the argument left out.
#[tokio::test(flavor = "multi_thread")]
async fn issue13_tools_list_stays_under_its_size_caps_at_every_level() {
    let (_tmp, vault) = common::temp_vault();
    for (access, cap) in [("read", 16 * 1024), ("propose", 28 * 1024), ("apply", 28 * 1024)] {
        let client = connect(&vault, access).await;
        let listed = client.list_tools(None).await.unwrap();
        let size = serde_json::to_string(&listed).unwrap().len();
        assert!(size <= cap, "tools/list at {access} is {size} bytes, over its cap of {cap}");
        for tool in &listed.tools {
            let input = Value::Object((*tool.input_schema).clone());
            let text = input.to_string();
            assert!(!text.contains("\"null\""), "{}: an input admits null: {text}", tool.name);
            assert!(!text.contains("$schema"), "{}", tool.name);
            let output = tool.output_schema.as_ref().unwrap();
            assert_eq!(output["type"], "object", "{}", tool.name);
        }
        if access == "read" {
            let result =
                call(&client, "search_knowledge", json!({"query": "备份", "limit": null, "tags": null}))
                    .await
                    .unwrap();
            assert_ne!(result.is_error, Some(true), "{result:?}");
            let result =
                call(&client, "search_knowledge", json!({"query": "备份", "limit": "5"})).await.unwrap();
            assert_eq!(error_code(&result), "invalid_argument");
        }
        client.cancel().await.unwrap();
    }
}

/// Runs `kb-mcp` on `vault` with `env`, writes `lines` (raw JSON-RPC) to its
/// stdin, waits for the answers to ids 1..=`answers`, closes stdin and returns
/// its stderr log lines once it has exited, and the answers by id.
fn session(
    vault: &Path,
    env: &[(&str, &str)],
    lines: &[Value],
    answers: u64,
) -> (Vec<Value>, std::collections::BTreeMap<u64, Value>) {
    let (mut child, mut stdin) = spawn_server(vault, env);
    for line in lines {
        writeln!(stdin, "{line}").unwrap();
    }
    stdin.flush().unwrap();
    let mut answered = std::collections::BTreeMap::new();
    for line in BufReader::new(child.stdout.take().unwrap()).lines() {
        let message: Value = serde_json::from_str(&line.unwrap()).unwrap();
        if let Some(id) = message["id"].as_u64() {
            answered.insert(id, message);
        }
        if answered.len() as u64 == answers {
            break;
        }
    }
    let stderr = stop_server(child, stdin);
    (stderr.lines().map(|line| serde_json::from_str(line).unwrap()).collect(), answered)
}

/// Starts `kb-mcp` on `vault` with `env`, its three streams piped; returns it
/// and its stdin.
fn spawn_server(vault: &Path, env: &[(&str, &str)]) -> (std::process::Child, std::process::ChildStdin) {
    let mut command = Command::new(BIN);
    command.arg("--vault").arg(vault).stdin(Stdio::piped()).stdout(Stdio::piped()).stderr(Stdio::piped());
    for (key, value) in env {
        command.env(key, value);
    }
    let mut child = command.spawn().unwrap();
    let stdin = child.stdin.take().unwrap();
    (child, stdin)
}

/// Closes the server's stdin, checks that it exits cleanly and returns its stderr.
fn stop_server(mut child: std::process::Child, stdin: std::process::ChildStdin) -> String {
    drop(stdin);
    let mut stderr = String::new();
    std::io::Read::read_to_string(&mut child.stderr.take().unwrap(), &mut stderr).unwrap();
    assert!(child.wait().unwrap().success(), "{stderr}");
    stderr
}

/// Issue 17: the server's own reads are not changes. The watcher used to take
/// every file it opened (a search's snippets, a walk's folders) for a change and
/// sync, and each sync's walk opened every folder again: an idle server on a
/// 100,000-note vault walked it without end (9 s of CPU every 20 s) and threw
/// away the link graph each time. Now reads start no sync at all.
#[test]
fn issue17_the_servers_own_reads_start_no_sync() {
    let (_tmp, vault) = common::temp_vault();
    let (mut child, mut stdin) = spawn_server(&vault, &[("KB_LOG", "debug")]);
    let mut lines = initialize_and_search("备份");
    lines.push(json!({"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"read_note","arguments":{"path":"z/设计.md"}}}));
    lines.push(json!({"jsonrpc":"2.0","id":4,"method":"tools/call","params":{"name":"get_related_notes","arguments":{"path":"z/设计.md"}}}));
    lines.push(json!({"jsonrpc":"2.0","id":5,"method":"tools/call","params":{"name":"get_vault_overview","arguments":{}}}));
    for line in &lines {
        writeln!(stdin, "{line}").unwrap();
    }
    stdin.flush().unwrap();
    let mut answered = 0;
    for line in BufReader::new(child.stdout.take().unwrap()).lines() {
        let message: Value = serde_json::from_str(&line.unwrap()).unwrap();
        assert!(message.get("error").is_none(), "{message}");
        answered += usize::from(message["id"].as_u64().is_some());
        if answered == 4 {
            break;
        }
    }
    // Longer than the watcher's 300 ms debounce, so that any sync the reads
    // started has run (and logged) before the server stops.
    std::thread::sleep(Duration::from_millis(1500));
    let stderr = stop_server(child, stdin);
    let syncs: Vec<&str> = stderr.lines().filter(|line| line.contains("\"watch_sync\"")).collect();
    assert!(syncs.is_empty(), "reads started syncs: {syncs:?}");

    // A real edit still does (the same log line, so the check above can fail).
    let (_tmp2, vault2) = common::temp_vault();
    let (mut child, mut stdin) = spawn_server(&vault2, &[("KB_LOG", "debug")]);
    for line in initialize_and_search("备份") {
        writeln!(stdin, "{line}").unwrap();
    }
    stdin.flush().unwrap();
    let mut stdout = BufReader::new(child.stdout.take().unwrap()).lines();
    let mut answer = || serde_json::from_str::<Value>(&stdout.next().unwrap().unwrap()).unwrap();
    answer();
    answer();
    std::fs::write(vault2.join("z/设计.md"), "# 设计\n\n改过了，信天翁。\n").unwrap();
    // Ask until the edit is searchable (the watcher's sync has run), however slow the machine.
    for id in 10.. {
        let call = json!({"jsonrpc":"2.0","id":id,"method":"tools/call","params":{"name":"search_note_content","arguments":{"query":"信天翁"}}});
        writeln!(stdin, "{call}").unwrap();
        stdin.flush().unwrap();
        if answer()["result"]["structuredContent"]["total"].as_u64() == Some(1) {
            break;
        }
        assert!(id < 10 + 600, "the edit never became searchable");
        std::thread::sleep(Duration::from_millis(100));
    }
    let stderr = stop_server(child, stdin);
    assert!(stderr.contains("\"watch_sync\""), "an edit started no sync: {stderr}");
}

fn initialize_and_search(query: &str) -> Vec<Value> {
    vec![
        json!({"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"raw","version":"0"}}}),
        json!({"jsonrpc":"2.0","method":"notifications/initialized"}),
        json!({"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"search_note_content","arguments":{"query":query}}}),
    ]
}

/// Issue 17: with the debug log on (`KB_LOG=debug`, or `--log-level debug`),
/// each request gets one `timing` line on stderr saying where its time went,
/// stage by stage; a call that waited for the start-up sync says so. Without
/// it, no such line is written.
#[test]
fn issue17_debug_log_breaks_each_request_down_and_names_a_wait_for_the_start_up_sync() {
    let (_tmp, vault) = common::temp_vault();
    let built = Command::new(env!("CARGO_BIN_EXE_kb-index"))
        .arg("--vault")
        .arg(&vault)
        .arg("build")
        .output()
        .unwrap();
    assert!(built.status.success(), "{}", String::from_utf8_lossy(&built.stderr));

    // The default level: no timing lines.
    let (quiet, _) = session(&vault, &[], &initialize_and_search("备份"), 2);
    assert!(quiet.iter().all(|line| line["event"] != "timing"), "{quiet:?}");

    // Debug: a line per request, every stage of a search named.
    let (logged, _) = session(&vault, &[("KB_LOG", "debug")], &initialize_and_search("备份"), 2);
    let timing: Vec<&Value> = logged.iter().filter(|line| line["event"] == "timing").collect();
    assert_eq!(timing.len(), 2, "one line per request: {logged:?}");
    assert_eq!(timing[0]["method"], "initialize");
    let search = timing[1];
    assert_eq!(search["method"], "tools/call", "{search}");
    assert_eq!(search["tool"], "search_note_content", "{search}");
    assert_eq!(search["level"], "debug");
    for field in [
        "total_ms",
        "dispatch_ms",
        "wait_ms",
        "queue_ms",
        "config_ms",
        "files_ms",
        "query_ms",
        "snippets_ms",
        "render_ms",
        "engine_ms",
        "resume_ms",
        "serialize_ms",
        "write_ms",
    ] {
        assert!(search[field].as_f64().is_some_and(|ms| ms >= 0.0), "{field} missing: {search}");
    }
    assert!(search["bytes"].as_u64().unwrap() > 0, "{search}");
    assert!(["nothing", "start_up", "start_up_sync"].contains(&search["waited_for"].as_str().unwrap()));

    // Notes added while no server ran: the start-up sync has them to index. A
    // search sent at once is answered from the stored index during the sync
    // (without waiting for it to end), says so in the log, and says it may be stale.
    for i in 0..300 {
        std::fs::write(
            vault.join(format!("z/added-{i}.md")),
            format!("# Added {i}\n\nA note about backups {i}.\n"),
        )
        .unwrap();
    }
    let (logged, answers) = session(&vault, &[("KB_LOG", "debug")], &initialize_and_search("backups"), 2);
    assert!(answers[&2]["result"]["structuredContent"]["stale"].is_string(), "{}", answers[&2]);
    let search = logged
        .iter()
        .find(|line| line["event"] == "timing" && line["tool"] == "search_note_content")
        .unwrap_or_else(|| panic!("no timing line for the search: {logged:?}"));
    assert_eq!(search["waited_for"], "start_up_sync", "{search}");
    assert!(
        logged.iter().any(
            |line| line["event"] == "answered_while_catching_up" && line["waited_for"] == "start_up_sync"
        ),
        "{logged:?}"
    );
}

/// Issue 34, item 8: a stdio message over the 16 MiB line limit is answered
/// with its own id, read by a scan of the line wherever the id stands (rmcp
/// writes it first, the TypeScript SDK last), with an error naming the limit
/// and what to do; a notification that large is never answered.
#[test]
fn issue34_an_oversized_line_is_answered_with_its_id_wherever_it_stands() {
    let (_tmp, vault) = common::temp_vault();
    let mut server = common::RawStdio::start(&vault, "propose", json!({}));
    // 100 notes of 170 KiB: each far under the 2 MiB proposal cap, the batch over 16 MiB.
    let items: Vec<Value> = (0..100)
        .map(|n| json!({"kind": "new", "title": format!("Imported {n}"), "body": "x".repeat(170 << 10)}))
        .collect();
    let batch = json!({"jsonrpc": "2.0", "id": "big-batch", "method": "tools/call",
        "params": {"name": "propose_batch", "arguments": {"reason": "import", "items": items}}});
    server.send(&batch.to_string());
    let answer = server.next();
    assert_eq!(answer["id"], "big-batch", "{answer}");
    assert_eq!(answer["error"]["code"], -32600, "{answer}");
    let message = answer["error"]["message"].as_str().unwrap();
    assert!(
        message.contains("16 MiB") && message.contains("batch"),
        "names the limit and the way out: {message}"
    );
    assert_eq!(answer["error"]["data"]["limit_bytes"], 16 << 20, "{answer}");

    // The id last, after 17 MiB of params, an escaped string; then a number past 64 bits.
    let query = "a".repeat(17 << 20);
    let tail = format!(
        r#"{{"method":"tools/call","params":{{"name":"search_knowledge","arguments":{{"query":"{query}"}}}},"jsonrpc":"2.0","id":"last \"one\" \u00e9"}}"#
    );
    server.send(&tail);
    let line = server.next_line();
    assert!(
        line.contains(r#""id":"last \"one\" \u00e9""#),
        "the id as sent: {}",
        &line[..line.len().min(300)]
    );
    let huge_id = format!(
        r#"{{"jsonrpc":"2.0","id":18446744073709551616,"method":"ping","params":{{"pad":"{query}"}}}}"#
    );
    server.send(&huge_id);
    let line = server.next_line();
    assert!(line.contains(r#""id":18446744073709551616"#), "{}", &line[..line.len().min(300)]);

    // A notification is never answered, however large: the next line answers the ping.
    server.send(&format!(
        r#"{{"jsonrpc":"2.0","method":"notifications/progress","params":{{"pad":"{query}"}}}}"#
    ));
    server.send(r#"{"jsonrpc":"2.0","id":"after","method":"ping"}"#);
    let after = server.next();
    assert_eq!((after["id"].clone(), after["result"].clone()), (json!("after"), json!({})), "{after}");
    let (rest, log) = server.finish();
    assert!(rest.is_empty(), "one answer per request: {rest:?}");
    let oversized = log.lines().filter(|l| l.contains("\"rpc_refused\"") && l.contains("oversized")).count();
    assert_eq!(oversized, 3, "each refusal is logged:\n{log}");
}

/// Issue 34, item 8: a request whose id kb-mcp cannot hold (an integer past 64
/// bits, a number JSON parsers reject as out of range, a fraction) is
/// answered with the id exactly as it was sent, never with a rounded one or null.
#[test]
fn issue34_ids_kb_mcp_cannot_hold_are_echoed_exactly_as_sent() {
    let (_tmp, vault) = common::temp_vault();
    let mut server = common::RawStdio::start(&vault, "read", json!({}));
    for id in ["18446744073709551616", "1e400", "1.50", "-123456789012345678901234567890", "2.0E+3"] {
        server.send(&format!(r#"{{"jsonrpc":"2.0","id":{id},"method":"ping"}}"#));
        let line = server.next_line();
        assert!(line.contains(&format!(r#""id":{id}"#)), "{id}: {line}");
        // serde_json cannot read `1e400`: the rest of the answer is read without the id.
        let answer: Value =
            serde_json::from_str(&line.replacen(id, "0", 1)).unwrap_or_else(|e| panic!("{e}: {line}"));
        assert_eq!(answer["error"]["code"], -32600, "{id}: {line}");
        assert!(answer["error"]["message"].as_str().unwrap().contains(id), "names the id: {line}");
    }
    // Last in the line, after the method, as some clients write it.
    server.send(r#"{"method":"ping","jsonrpc":"2.0","id":36893488147419103232}"#);
    let line = server.next_line();
    assert!(line.contains(r#""id":36893488147419103232"#), "{line}");
    let (rest, _) = server.finish();
    assert!(rest.is_empty(), "one answer per request: {rest:?}");
}

/// Stages a new note through a raw session and returns its proposal id.
fn stage_raw(server: &mut common::RawStdio, title: &str) -> String {
    server.send(
        &json!({"jsonrpc": "2.0", "id": "stage", "method": "tools/call", "params": {"name": "propose_new_note",
            "arguments": {"title": title, "body": "staged\n", "reason": "test"}}})
        .to_string(),
    );
    let staged = server.next();
    assert_eq!(staged["id"], "stage", "{staged}");
    staged["result"]["structuredContent"]["proposal_id"]
        .as_str()
        .unwrap_or_else(|| panic!("{staged}"))
        .to_owned()
}

/// Issue 34, item 8: while a request is in flight, another request with its id
/// gets an invalid-request error naming the id, and the first completes with
/// its own answer. (An apply waiting for the person's confirmation is a
/// request that stays in flight for as long as the test wants.) Before, rmcp
/// kept one answer per id: of eight, one was answered, with the wrong result.
#[test]
fn issue34_a_second_request_with_an_id_in_flight_is_refused_and_the_first_completes() {
    let (_tmp, vault) = common::temp_vault();
    let mut server = common::RawStdio::start(&vault, "apply", json!({"elicitation": {}}));
    let proposal = stage_raw(&mut server, "Held in flight");
    server.send(
        &json!({"jsonrpc": "2.0", "id": 7, "method": "tools/call",
            "params": {"name": "apply_proposal", "arguments": {"proposal_id": proposal}}})
        .to_string(),
    );
    let question = server.next();
    assert_eq!(question["method"], "elicitation/create", "the server asks the person: {question}");
    let duplicates = [
        json!({"jsonrpc": "2.0", "id": 7, "method": "ping"}),
        json!({"jsonrpc": "2.0", "id": 7, "method": "tools/list"}),
        json!({"jsonrpc": "2.0", "id": 7, "method": "tools/call",
            "params": {"name": "search_knowledge", "arguments": {"query": "backup"}}}),
        json!({"jsonrpc": "2.0", "id": 7, "method": "tools/call",
            "params": {"name": "apply_proposal", "arguments": {"proposal_id": proposal}}}),
    ];
    for duplicate in &duplicates {
        server.send(&duplicate.to_string());
        let refused = server.next();
        assert_eq!(
            (refused["id"].clone(), refused["error"]["code"].clone()),
            (json!(7), json!(-32600)),
            "{refused}"
        );
        let message = refused["error"]["message"].as_str().unwrap();
        assert!(message.contains("id 7") && message.contains("in flight"), "{message}");
    }
    // A string id "7" is another id: it is served.
    server.send(r#"{"jsonrpc":"2.0","id":"7","method":"ping"}"#);
    assert_eq!(server.next()["id"], "7");
    // The person declines: the apply is answered, once, with its own result.
    server
        .send(&json!({"jsonrpc": "2.0", "id": question["id"], "result": {"action": "decline"}}).to_string());
    let applied = server.next();
    assert_eq!(applied["id"], 7, "{applied}");
    assert_eq!(common::tool_error(&applied["result"])["code"], "permission_denied", "{applied}");
    assert!(!vault.join("z/Held in flight.md").exists());
    // Answered, the id is free again.
    server.send(r#"{"jsonrpc":"2.0","id":7,"method":"ping"}"#);
    let ping = server.next();
    assert_eq!((ping["id"].clone(), ping["result"].clone()), (json!(7), json!({})), "{ping}");
    let (rest, log) = server.finish();
    assert!(rest.is_empty(), "one answer per request: {rest:?}");
    let refused = log.lines().filter(|l| l.contains("\"rpc_refused\"") && l.contains("duplicate_id")).count();
    assert_eq!(refused, duplicates.len(), "each refusal is logged:\n{log}");
}

/// Issue 34, item 8: a call sent just before stdin closes is answered before
/// the server exits, however long it takes (within its bound). The apply waits
/// for the inbox lock this test holds for longer than rmcp's own 5 s drain at
/// the end of input, after which the answer used to be dropped.
#[test]
fn issue34_a_call_sent_just_before_stdin_closes_is_answered_before_exit() {
    let (_tmp, vault) = common::temp_vault();
    let mut server = common::RawStdio::start(&vault, "apply", json!({}));
    let proposal = stage_raw(&mut server, "Last call");
    let lock = std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .create(true)
        .truncate(false)
        .open(vault.join("inbox/_apply.lock"))
        .unwrap();
    lock.lock().unwrap();
    server.send(
        &json!({"jsonrpc": "2.0", "id": "last", "method": "tools/call",
            "params": {"name": "apply_proposal", "arguments": {"proposal_id": proposal}}})
        .to_string(),
    );
    server.close_stdin();
    std::thread::sleep(Duration::from_secs(7));
    lock.unlock().unwrap();
    let (rest, log) = server.finish();
    assert_eq!(rest.len(), 1, "exactly the one answer: {rest:?}\n{log}");
    let applied: Value = serde_json::from_str(&rest[0]).unwrap();
    assert_eq!(applied["id"], "last", "{applied}");
    assert_eq!(applied["result"]["structuredContent"]["status"], "applied", "{applied}");
    assert!(vault.join("z/Last call.md").exists());
}

/// Issue 34: answers flooded an agent. A folder move of 19,000 notes answered
/// 30.6 MB (every moved note and every diff line), and an `invalid_argument`
/// echoed a 1.26 MB argument. Now a proposal's diff is cut at 64 KiB (a last
/// line says how much is left out and that `kb-index inbox show ID` shows it
/// whole), `moves` lists 100 notes (`moves_omitted` counts the rest), a
/// delete names 100 links of each kind (`unlisted`), an apply's audit line
/// lists 100 files (`files_omitted`), and an error's message keeps its first
/// 750 and last 250 characters, saying how many it left out.
#[tokio::test(flavor = "multi_thread")]
async fn issue34_answers_cap_diffs_move_lists_and_echoed_values() {
    let (_tmp, vault) = common::temp_vault();
    std::fs::create_dir_all(vault.join("z/many")).unwrap();
    for n in 0..150 {
        std::fs::write(vault.join(format!("z/many/note {n:03}.md")), format!("# Note {n}\n\nSee [[hub]].\n"))
            .unwrap();
    }
    std::fs::write(vault.join("z/hub.md"), "# Hub\n").unwrap();
    let long: String = (0..6000).map(|n| format!("line {n} of a long note\n")).collect();
    std::fs::write(vault.join("z/long.md"), &long).unwrap();
    let client = connect(&vault, "apply").await;
    let size = |result: &CallToolResult| serde_json::to_string(result).unwrap().len();

    let note = call(&client, "read_note", json!({"path": "z/long.md", "max_bytes": 1024})).await.unwrap();
    let hash = note.structured_content.unwrap()["hash"].as_str().unwrap().to_owned();
    let patch = call(
        &client,
        "propose_note_patch",
        json!({"path": "z/long.md", "base_hash": hash, "reason": "rewrite",
               "edits": [{"op": "replace_all", "content": long.replace("line", "row")}]}),
    )
    .await
    .unwrap();
    assert_ne!(patch.is_error, Some(true), "{patch:?}");
    let staged = patch.structured_content.clone().unwrap();
    let id = staged["proposal_id"].as_str().unwrap();
    let diff = staged["diff"].as_str().unwrap();
    assert!(diff.len() < 64 * 1024 + 400, "{}", diff.len());
    let last = diff.lines().last().unwrap();
    assert!(last.contains("more lines") && last.contains(&format!("`kb-index inbox show {id}`")), "{last}");
    assert_eq!(staged["added"], 6000, "the counts are the whole diff's");
    assert!(size(&patch) < 3 * 64 * 1024, "{}", size(&patch));

    let moved = call(&client, "propose_move", json!({"from": "z/many", "to": "z/moved", "reason": "tidy"}))
        .await
        .unwrap();
    let staged = moved.structured_content.clone().unwrap();
    assert_eq!(staged["moves"].as_array().unwrap().len(), 100, "{staged}");
    assert_eq!(staged["moves_omitted"], 50);
    assert!(moved.content[0].as_text().unwrap().text.contains("(150 notes move"), "{moved:?}");
    let applied =
        call(&client, "apply_proposal", json!({"proposal_id": staged["proposal_id"]})).await.unwrap();
    let audit = &applied.structured_content.clone().unwrap()["audit"];
    assert_eq!(audit["files"].as_array().unwrap().len(), 100, "{audit}");
    assert!(audit["files_omitted"].as_u64().unwrap() >= 50, "{audit}");

    let deleted =
        call(&client, "propose_delete", json!({"path": "z/hub.md", "reason": "gone"})).await.unwrap();
    let staged = deleted.structured_content.clone().unwrap();
    assert_eq!(staged["breaks"].as_array().unwrap().len(), 100, "{staged}");
    assert_eq!(staged["unlisted"], 50);

    // An echoed argument: a schema error and a path error.
    let huge = "a".repeat(1_260_000);
    for (tool, arguments) in [
        ("search_knowledge", json!({"query": "x", "limit": huge})),
        ("read_note", json!({"path": format!("z/{huge}.md")})),
        ("list_notes", json!({"folder": "z", "cursor": huge})),
    ] {
        let result = call(&client, tool, arguments).await.unwrap();
        let text = &result.content[0].as_text().unwrap().text;
        assert!(text.len() < 4096, "{tool} answered {} bytes", text.len());
        let message = error_object(&result)["message"].as_str().unwrap().to_owned();
        if tool == "search_knowledge" {
            assert!(message.contains("characters left out") && message.ends_with("\"integer\""), "{message}");
        }
    }
    client.cancel().await.unwrap();
}

/// The most memory the process `pid` has held (`VmHWM`), in MiB; `None` off Linux.
fn peak_mib(pid: u32) -> Option<u64> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    let line = status.lines().find(|line| line.starts_with("VmHWM:"))?;
    Some(line.split_whitespace().nth(1)?.parse::<u64>().ok()? / 1024)
}

/// Issue 34: a 12 MB request of a million keys raised the server to 798 MiB
/// (two trees of it were built before the schema refused it). Its JSON values
/// are now counted as it is read, building nothing: past 100,000 the request
/// is answered with an error naming the limit and carrying its id, and the
/// server stays small; a notification that large is dropped unanswered.
#[test]
fn issue34_a_request_of_a_million_keys_is_refused_before_it_is_built() {
    let (_tmp, vault) = common::temp_vault();
    common::without_semantic(&vault);
    let mut server = common::RawStdio::start(&vault, "read", json!({}));
    let keys: String = (0..1_000_000).map(|n| format!(r#""k{n}":0"#)).collect::<Vec<_>>().join(",");
    let line = format!(
        r#"{{"jsonrpc":"2.0","id":"keys","method":"tools/call","params":{{"name":"search_knowledge","arguments":{{"query":"x",{keys}}}}}}}"#
    );
    assert!(line.len() > 11_000_000 && line.len() < 16 << 20, "{}", line.len());
    let before = peak_mib(server.pid());
    server.send(&line);
    let answer = server.next();
    assert_eq!(answer["id"], "keys", "{answer}");
    assert_eq!(answer["error"]["code"], -32600, "{answer}");
    let message = answer["error"]["message"].as_str().unwrap();
    assert!(message.contains("100000 JSON values"), "names the limit: {message}");
    assert_eq!(answer["error"]["data"]["limit_values"], 100_000, "{answer}");
    if let (Some(before), Some(after)) = (before, peak_mib(server.pid())) {
        assert!(after < before + 100, "the server grew from {before} MiB to {after} MiB");
        eprintln!("peak memory: {before} MiB before the request, {after} MiB after");
    }
    // A notification that large gets no answer; the next request does.
    server.send(&format!(r#"{{"jsonrpc":"2.0","method":"notifications/progress","params":{{{keys}}}}}"#));
    server.send(r#"{"jsonrpc":"2.0","id":"after","method":"ping"}"#);
    assert_eq!(server.next()["id"], "after");
    // A large but ordinary request still passes.
    let items: Vec<Value> = (0..2000).map(|n| json!(format!("tag{n}"))).collect();
    server.send(
        &json!({"jsonrpc": "2.0", "id": "ok", "method": "tools/call",
            "params": {"name": "search_knowledge", "arguments": {"query": "备份", "tags": items}}})
        .to_string(),
    );
    let answer = server.next();
    assert_eq!(answer["id"], "ok");
    assert!(answer["result"].is_object(), "{answer}");
    let (rest, log) = server.finish();
    assert!(rest.is_empty(), "{rest:?}");
    assert!(log.contains("too_many_values"), "{log}");
}

/// Issue 34, "first hour": a vault with its own `Inbox/` was refused only at
/// the first proposal. The server now says so at start (a `warning` line on
/// stderr), `get_vault_overview` lists it in `warnings`, and `kb-index status`
/// prints it, each with the `kb.toml` line that fixes it; once fixed, none.
#[test]
fn issue34_a_persons_own_inbox_is_reported_at_start_with_the_line_that_fixes_it() {
    let (_tmp, vault) = common::temp_person_vault();
    let fix = r#"put `inbox = "_kb-inbox"` under `[vault]` in kb.toml"#;
    let mut server = common::RawStdio::start(&vault, "read", json!({}));
    server.send(
        &json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": "get_vault_overview"}})
            .to_string(),
    );
    let overview = server.next();
    let warnings =
        overview["result"]["structuredContent"]["warnings"].as_array().cloned().unwrap_or_default();
    assert_eq!(warnings.len(), 1, "{overview}");
    let warning = warnings[0].as_str().unwrap();
    assert!(
        warning.contains("proposals are refused") && warning.contains("Inbox/") && warning.contains(fix),
        "{warning}"
    );
    let text = overview["result"]["content"][0]["text"].as_str().unwrap();
    assert!(text.contains("warning: proposals are refused"), "{text}");
    let (_, log) = server.finish();
    let logged = log
        .lines()
        .filter_map(|line| serde_json::from_str::<Value>(line).ok())
        .find(|line| line["event"] == "warning")
        .unwrap_or_else(|| panic!("no warning at start: {log}"));
    assert!(logged["message"].as_str().unwrap().contains(fix), "{logged}");

    let status = Command::new(env!("CARGO_BIN_EXE_kb-index"))
        .arg("status")
        .arg("--vault")
        .arg(&vault)
        .output()
        .unwrap();
    let printed = String::from_utf8_lossy(&status.stdout);
    assert!(
        printed
            .lines()
            .any(|line| line.starts_with("warning    proposals are refused") && line.contains(fix)),
        "{printed}"
    );

    std::fs::write(vault.join("kb.toml"), "[vault]\ninbox = \"_kb-inbox\"\n").unwrap();
    let status = Command::new(env!("CARGO_BIN_EXE_kb-index"))
        .args(["status", "--json", "--vault"])
        .arg(&vault)
        .output()
        .unwrap();
    let json: Value = serde_json::from_slice(&status.stdout).unwrap();
    assert!(json.get("warnings").is_none(), "fixed: {json}");
}

/// Issue 34: kb-mcp keeps files that may hold a person's save apart, in
/// `inbox/conflicts/<date>/<note path>.conflict-<id>.md`, but nothing showed
/// them. `get_vault_overview` and `list_proposals` now carry
/// `conflict_copies` (how many, and the first 20 with the note each belongs
/// to; absent when there are none), and their text says what the person does.
/// A kept copy no longer makes the inbox look like the person's own folder.
#[tokio::test(flavor = "multi_thread")]
async fn issue34_conflict_copies_are_shown_by_the_overview_and_list_proposals() {
    let (_tmp, vault) = common::temp_vault();
    let client = connect(&vault, "propose").await;
    let overview = call(&client, "get_vault_overview", json!({})).await.unwrap();
    assert!(overview.structured_content.unwrap().get("conflict_copies").is_none(), "none yet");
    let folder = vault.join("inbox/conflicts/2026-12-06/z");
    std::fs::create_dir_all(&folder).unwrap();
    for n in 0..25 {
        std::fs::write(folder.join(format!("备份仓库.conflict-{n:08x}.md")), "a save\n").unwrap();
    }
    for (tool, arguments) in [("get_vault_overview", json!({})), ("list_proposals", json!({}))] {
        let result = call(&client, tool, arguments).await.unwrap();
        let copies = result.structured_content.clone().unwrap()["conflict_copies"].clone();
        assert_eq!(copies["total"], 25, "{tool}: {copies}");
        let listed = copies["copies"].as_array().unwrap();
        assert_eq!(listed.len(), 20, "{tool}");
        assert_eq!(listed[0]["path"], "inbox/conflicts/2026-12-06/z/备份仓库.conflict-00000000.md");
        assert_eq!(listed[0]["note"], "z/备份仓库.md");
        let text = &result.content[0].as_text().unwrap().text;
        assert!(
            text.contains("25 conflict copies")
                && text.contains("compare each with its note")
                && text.contains("… and 5 more"),
            "{tool}: {text}"
        );
    }
    // The inbox is still kb-mcp's: `conflicts/` is a folder of its own, not the
    // person's (a kept copy made every proposal refused).
    let staged =
        call(&client, "propose_new_note", json!({"title": "After a conflict", "body": "b\n", "reason": "r"}))
            .await
            .unwrap();
    assert_ne!(staged.is_error, Some(true), "{staged:?}");
    client.cancel().await.unwrap();
}

// ---------------------------------------------------------------------------
// Issue 36: the review card (MCP Apps), offered only to a client that shows it

/// A client's capabilities declaring the MCP Apps extension.
fn shows_apps() -> Value {
    json!({"extensions": {"io.modelcontextprotocol/ui": {"mimeTypes": ["text/html;profile=mcp-app"]}}})
}

/// One request over a raw session; its answer (the whole message).
fn raw_request(server: &mut common::RawStdio, id: &str, method: &str, params: Value) -> Value {
    server.send(&json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}).to_string());
    let answer = server.next();
    assert_eq!(answer["id"], id, "{answer}");
    answer
}

/// A tool call over a raw session; its result.
fn raw_call(server: &mut common::RawStdio, id: &str, name: &str, arguments: Value) -> Value {
    let answer = raw_request(server, id, "tools/call", json!({"name": name, "arguments": arguments}));
    answer["result"].clone()
}

/// The error code of an error result (its text is the contract's JSON).
fn raw_error_code(result: &Value) -> String {
    assert_eq!(result["isError"], true, "{result}");
    assert!(result.get("structuredContent").is_none(), "{result}");
    let text: Value = serde_json::from_str(result["content"][0]["text"].as_str().unwrap()).unwrap();
    text["error"]["code"].as_str().unwrap().to_owned()
}

fn tool_names(listed: &Value) -> Vec<String> {
    listed["result"]["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["name"].as_str().unwrap().to_owned())
        .collect()
}

/// A client that does not declare the extension sees exactly what it saw
/// before: no card tools, no `_meta.ui`, no card resource, no key; a card
/// tool called anyway is unknown. One that declares it gets the card on the
/// tools whose results it shows, the card's own tools for the view alone
/// (`approve_proposal` only at `apply`), the resource, and the key in the
/// results' `_meta`, never in what the model reads.
#[test]
fn issue36_the_review_card_is_offered_only_to_a_client_that_shows_apps() {
    let (_tmp, vault) = common::temp_vault();
    let card_tools = ["review_proposal", "approve_proposal", "reject_proposal"];

    let mut plain = common::RawStdio::start(&vault, "apply", json!({}));
    let listed = raw_request(&mut plain, "l", "tools/list", json!({}));
    assert!(tool_names(&listed).iter().all(|name| !card_tools.contains(&name.as_str())), "{listed}");
    assert!(!listed.to_string().contains("ui://"), "{listed}");
    let resources = raw_request(&mut plain, "r", "resources/list", json!({}));
    assert!(!resources.to_string().contains("ui://kb-mcp/review"), "{resources}");
    let refused = raw_request(
        &mut plain,
        "a",
        "tools/call",
        json!({"name": "approve_proposal", "arguments": {"proposal_id": "p_x", "review_token": "x"}}),
    );
    assert!(refused["error"]["message"].as_str().unwrap().contains("unknown tool"), "{refused}");
    let staged = raw_call(
        &mut plain,
        "s",
        "propose_new_note",
        json!({"title": "Plain", "body": "b\n", "reason": "t"}),
    );
    assert!(staged.get("_meta").is_none_or(|meta| meta.get("kb-mcp/review").is_none()), "{staged}");
    plain.finish();

    let mut apps = common::RawStdio::start(&vault, "apply", shows_apps());
    let listed = raw_request(&mut apps, "l", "tools/list", json!({}));
    let tools = listed["result"]["tools"].as_array().unwrap();
    let tool =
        |name: &str| tools.iter().find(|t| t["name"] == name).unwrap_or_else(|| panic!("{name}: {listed}"));
    for name in ["propose_new_note", "propose_note_patch", "propose_move", "propose_batch", "list_proposals"]
    {
        assert_eq!(tool(name)["_meta"]["ui"]["resourceUri"], "ui://kb-mcp/review", "{name}");
        assert_eq!(tool(name)["_meta"]["ui"]["visibility"], json!(["model", "app"]), "{name}");
        assert_eq!(tool(name)["_meta"]["ui/resourceUri"], "ui://kb-mcp/review", "{name}");
    }
    assert!(tool("search_knowledge").get("_meta").is_none());
    for name in card_tools {
        assert_eq!(tool(name)["_meta"]["ui"]["visibility"], json!(["app"]), "{name}");
    }
    let resources = raw_request(&mut apps, "r", "resources/list", json!({}));
    let card = resources["result"]["resources"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["uri"] == "ui://kb-mcp/review")
        .unwrap_or_else(|| panic!("{resources}"))
        .clone();
    assert_eq!(card["mimeType"], "text/html;profile=mcp-app");
    let read = raw_request(&mut apps, "h", "resources/read", json!({"uri": "ui://kb-mcp/review"}));
    let contents = &read["result"]["contents"][0];
    assert_eq!(contents["mimeType"], "text/html;profile=mcp-app", "{read}");
    assert_eq!(contents["_meta"]["ui"]["csp"], json!({}), "no network asked for");
    let html = contents["text"].as_str().unwrap();
    assert_eq!(html, kb_mcp::review::VIEW_HTML, "the card is the page's view, byte for byte");
    let staged = raw_call(
        &mut apps,
        "s",
        "propose_new_note",
        json!({"title": "Carded", "body": "b\n", "reason": "t"}),
    );
    let key = staged["_meta"]["kb-mcp/review"]["token"].as_str().unwrap_or_else(|| panic!("{staged}"));
    assert_eq!(key.len(), 64);
    assert!(!staged["content"].to_string().contains(key), "the model's text never holds the key");
    assert!(!staged["structuredContent"].to_string().contains(key), "nor the structured result");
    apps.finish();

    let mut proposer = common::RawStdio::start(&vault, "propose", shows_apps());
    let names = tool_names(&raw_request(&mut proposer, "l", "tools/list", json!({})));
    assert!(names.contains(&"reject_proposal".to_owned()) && names.contains(&"review_proposal".to_owned()));
    assert!(!names.contains(&"approve_proposal".to_owned()), "{names:?}");
    let refused =
        raw_call(&mut proposer, "a", "approve_proposal", json!({"proposal_id": "p_x", "review_token": "x"}));
    assert_eq!(raw_error_code(&refused), "permission_denied");
    proposer.finish();
}

/// The card's review re-checks live and pages its files; Apply and Reject
/// need the card's key (a model calling them without it is refused and
/// nothing changes); with it, they do what `apply_proposal` and
/// `kb-index inbox reject` do, and the audit line says `via: review_card`. A
/// proposal whose note changed since cannot be applied from the card.
#[test]
fn issue36_only_the_cards_key_applies_and_the_audit_line_says_so() {
    let (_tmp, vault) = common::temp_vault();
    let mut server = common::RawStdio::start(&vault, "apply", shows_apps());
    let staged = raw_call(
        &mut server,
        "s1",
        "propose_new_note",
        json!({"title": "From the card", "body": "<script>alert(1)</script> stays text\n", "reason": "card"}),
    );
    let key = staged["_meta"]["kb-mcp/review"]["token"].as_str().unwrap().to_owned();
    let id = staged["structuredContent"]["proposal_id"].as_str().unwrap().to_owned();
    let target = staged["structuredContent"]["target"].as_str().unwrap().to_owned();

    let review = raw_call(&mut server, "r1", "review_proposal", json!({"proposal_id": id}));
    let page = &review["structuredContent"];
    assert_eq!(page["applicable"], true, "{review}");
    assert_eq!(page["files_total"], 1);
    assert_eq!(page["proposal"]["reason"], "card");
    assert!(page["files"][0]["diff"].as_str().unwrap().contains("+<script>alert(1)</script> stays text"));

    // The index folder (`.kb/`) is left out: the server's metrics snapshot there changes with every call.
    let before = common::snapshot(&vault);
    for token in ["", "0000", &"0".repeat(64)] {
        let refused = raw_call(
            &mut server,
            "a0",
            "approve_proposal",
            json!({"proposal_id": id, "review_token": token}),
        );
        assert_eq!(raw_error_code(&refused), "permission_denied", "token {token:?}");
    }
    assert!(common::snapshot(&vault) == before, "a refused click changes nothing");

    let applied =
        raw_call(&mut server, "a1", "approve_proposal", json!({"proposal_id": id, "review_token": key}));
    assert_eq!(applied["structuredContent"]["status"], "applied", "{applied}");
    assert!(std::fs::read_to_string(vault.join(&target)).unwrap().contains("stays text"));
    let audit = std::fs::read_to_string(vault.join("inbox/_applied.jsonl")).unwrap();
    let line: Value = serde_json::from_str(audit.lines().last().unwrap()).unwrap();
    assert_eq!(
        (line["proposal_id"].as_str(), line["by"].as_str(), line["via"].as_str()),
        (Some(id.as_str()), Some("mcp"), Some("review_card"))
    );
    let again =
        raw_call(&mut server, "a2", "approve_proposal", json!({"proposal_id": id, "review_token": key}));
    assert_eq!(raw_error_code(&again), "proposal_not_pending");

    let second = raw_call(
        &mut server,
        "s2",
        "propose_new_note",
        json!({"title": "Not this", "body": "b\n", "reason": "r"}),
    );
    let second = second["structuredContent"]["proposal_id"].as_str().unwrap().to_owned();
    let empty = raw_call(
        &mut server,
        "j0",
        "reject_proposal",
        json!({"proposal_id": second, "review_token": key, "reason": "  "}),
    );
    assert_eq!(raw_error_code(&empty), "invalid_argument");
    let rejected = raw_call(
        &mut server,
        "j1",
        "reject_proposal",
        json!({"proposal_id": second, "review_token": key, "reason": "not needed"}),
    );
    assert!(rejected["structuredContent"]["archive"].as_str().unwrap().contains("rejected"), "{rejected}");
    let audit = std::fs::read_to_string(vault.join("inbox/_applied.jsonl")).unwrap();
    let line: Value = serde_json::from_str(audit.lines().last().unwrap()).unwrap();
    assert_eq!(
        (line["status"].as_str(), line["by"].as_str(), line["via"].as_str()),
        (Some("rejected"), Some("mcp"), Some("review_card"))
    );
    assert_eq!(line["reason"], "not needed");

    // A delete's review names the links it breaks, which no diff shows.
    let delete = raw_call(
        &mut server,
        "d",
        "propose_delete",
        json!({"path": "z/3-2-1 备份原则.md", "reason": "tidy"}),
    );
    let delete =
        delete["structuredContent"]["proposal_id"].as_str().unwrap_or_else(|| panic!("{delete}")).to_owned();
    let review = raw_call(&mut server, "rd", "review_proposal", json!({"proposal_id": delete}));
    assert!(!review["structuredContent"]["breaks"].as_array().unwrap().is_empty(), "{review}");

    let read = raw_call(&mut server, "n", "read_note", json!({"path": target}));
    let hash = read["structuredContent"]["hash"].as_str().unwrap().to_owned();
    let patch = raw_call(
        &mut server,
        "s3",
        "propose_note_patch",
        json!({"path": target, "base_hash": hash, "reason": "r",
            "edits": [{"op": "append", "content": "patched\n"}]}),
    );
    let patch =
        patch["structuredContent"]["proposal_id"].as_str().unwrap_or_else(|| panic!("{patch}")).to_owned();
    std::fs::write(vault.join(&target), "the person rewrote it\n").unwrap();
    let review =
        raw_call(&mut server, "r3", "review_proposal", json!({"proposal_id": patch, "review_token": key}));
    assert_eq!(review["structuredContent"]["applicable"], false, "{review}");
    assert_eq!(review["structuredContent"]["proposal"]["checks"]["base_current"], false);
    let stale =
        raw_call(&mut server, "a3", "approve_proposal", json!({"proposal_id": patch, "review_token": key}));
    assert_eq!(raw_error_code(&stale), "stale_base");
    assert_eq!(std::fs::read_to_string(vault.join(&target)).unwrap(), "the person rewrote it\n");
    server.finish();
}

// ---------------------------------------------------------------------------
// Issue 33 §3: skills over MCP

const SKILLS: &str = "io.modelcontextprotocol/skills";
const WORKFLOW_SKILL: &str = "skill://kb-mcp/SKILL.md";
const CONVENTIONS_SKILL: &str = "skill://vault-conventions/SKILL.md";

/// A client's capabilities declaring the skills extension.
fn loads_skills() -> Value {
    json!({"extensions": {SKILLS: {}}})
}

/// The server's `initialize` answer to a client declaring `capabilities`.
fn initialize_answer(vault: &Path, capabilities: Value) -> Value {
    let mut child = common::raw_stdio_server(vault, "read", Stdio::null());
    let mut stdin = child.stdin.take().unwrap();
    let init = json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-11-25", "capabilities": capabilities,
        "clientInfo": {"name": "raw", "version": "0"}}});
    writeln!(stdin, "{init}").unwrap();
    let mut line = String::new();
    BufReader::new(child.stdout.take().unwrap()).read_line(&mut line).unwrap();
    drop(stdin);
    assert!(child.wait().unwrap().success());
    serde_json::from_str(&line).unwrap()
}

fn resource_uris(listed: &Value) -> Vec<String> {
    listed["result"]["resources"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["uri"].as_str().unwrap().to_owned())
        .collect()
}

/// A resource's text as served.
fn raw_read(server: &mut common::RawStdio, uri: &str) -> String {
    let read = raw_request(server, "read", "resources/read", json!({"uri": uri}));
    read["result"]["contents"][0]["text"].as_str().unwrap_or_else(|| panic!("{uri}: {read}")).to_owned()
}

/// `sha256:<hex>` of `bytes`, computed here rather than by the server's code.
fn sha256(bytes: &[u8]) -> String {
    use sha2::Digest;
    let hex: String = sha2::Sha256::digest(bytes).iter().map(|b| format!("{b:02x}")).collect();
    format!("sha256:{hex}")
}

/// The entries of `skills/list`, by URI.
fn listed_skills(server: &mut common::RawStdio) -> Vec<Value> {
    let listed = raw_request(server, "skills", "skills/list", json!({}));
    listed["result"]["skills"].as_array().unwrap_or_else(|| panic!("{listed}")).clone()
}

/// The digest `skills/list` gives the conventions skill's `SKILL.md`.
fn conventions_digest(server: &mut common::RawStdio) -> String {
    let skills = listed_skills(server);
    let skill = skills.iter().find(|s| s["uri"] == CONVENTIONS_SKILL).unwrap();
    skill["resources"][0]["digest"].as_str().unwrap().to_owned()
}

/// Checks that every file of a listed skill reads back with the digest and
/// size the entry gives, and that its frontmatter is the entry's.
fn check_skill_files(server: &mut common::RawStdio, skill: &Value) {
    let files = skill["resources"].as_array().unwrap_or_else(|| panic!("{skill}"));
    assert!(files.iter().any(|f| f["uri"] == skill["uri"]), "the manifest lists its SKILL.md: {skill}");
    for file in files {
        let uri = file["uri"].as_str().unwrap();
        let text = raw_read(server, uri);
        assert_eq!(file["digest"], sha256(text.as_bytes()), "{uri}");
        assert_eq!(file["size"], text.len(), "{uri}");
        let entry: rmcp::model::SkillResource = serde_json::from_value(file.clone()).unwrap();
        entry.verify(text.as_bytes()).unwrap();
    }
    let text = raw_read(server, skill["uri"].as_str().unwrap());
    let frontmatter = text.strip_prefix("---\n").and_then(|rest| rest.split_once("\n---\n")).unwrap().0;
    let name = skill["frontmatter"]["name"].as_str().unwrap();
    assert!(frontmatter.lines().any(|l| l == format!("name: {name}")), "{frontmatter}");
    let description = skill["frontmatter"]["description"].as_str().unwrap();
    assert!(frontmatter.lines().any(|l| l == format!("description: {description}")), "{frontmatter}");
    assert_eq!(skill["uri"], format!("skill://{name}/SKILL.md"), "the URI ends in the skill's name");
}

/// A client that does not declare the extension sees no skills in the
/// capabilities or in `resources/list` (exactly what it saw before), though a
/// skill it names still reads; one that declares it sees both.
#[test]
fn issue33_skills_are_offered_only_to_a_client_that_declares_the_extension() {
    let (_tmp, vault) = common::temp_vault();

    let plain = initialize_answer(&vault, json!({}));
    let extensions = &plain["result"]["capabilities"]["extensions"];
    assert!(extensions.get(SKILLS).is_none(), "{plain}");
    assert!(extensions.get("io.modelcontextprotocol/ui").is_some(), "other extensions stay: {plain}");
    let mut server = common::RawStdio::start(&vault, "read", json!({}));
    let uris = resource_uris(&raw_request(&mut server, "l", "resources/list", json!({})));
    assert_eq!(uris, ["kb://tree", "kb://tags", "kb://recent", "kb://standards", "kb://skill"]);
    assert!(raw_read(&mut server, CONVENTIONS_SKILL).starts_with("---\nname: vault-conventions\n"));
    assert_eq!(raw_read(&mut server, WORKFLOW_SKILL), raw_read(&mut server, "kb://skill"));
    server.finish();

    let declared = initialize_answer(&vault, loads_skills());
    assert_eq!(declared["result"]["capabilities"]["extensions"][SKILLS], json!({}), "{declared}");
    assert!(declared["result"]["capabilities"]["resources"].is_object(), "skills ride on resources");
    let mut server = common::RawStdio::start(&vault, "read", loads_skills());
    let listed = raw_request(&mut server, "l", "resources/list", json!({}));
    assert_eq!(
        resource_uris(&listed)[5..],
        ["skill://index.json", WORKFLOW_SKILL, CONVENTIONS_SKILL],
        "{listed}"
    );
    let resources = listed["result"]["resources"].as_array().unwrap();
    let conventions = resources.iter().find(|r| r["uri"] == CONVENTIONS_SKILL).unwrap();
    assert_eq!(
        (conventions["name"].as_str(), conventions["mimeType"].as_str()),
        (Some("vault-conventions"), Some("text/markdown"))
    );
    server.finish();
}

/// `skills/list`, `skills/get` and `skill://index.json` describe both skills
/// alike, and every digest and size is that of the bytes `resources/read`
/// serves; the workflow skill is the repository's file, the conventions skill
/// is the fixture vault's standards, registered tags and folders, within 32 KiB.
#[test]
fn issue33_the_index_lists_both_skills_with_the_digests_of_the_bytes_served() {
    let (_tmp, vault) = common::temp_vault();
    let mut server = common::RawStdio::start(&vault, "read", loads_skills());
    let skills = listed_skills(&mut server);
    let uris: Vec<&str> = skills.iter().map(|s| s["uri"].as_str().unwrap()).collect();
    assert_eq!(uris, [WORKFLOW_SKILL, CONVENTIONS_SKILL]);
    for skill in &skills {
        check_skill_files(&mut server, skill);
        let got = raw_request(&mut server, "get", "skills/get", json!({"uri": skill["uri"]}));
        assert_eq!(&got["result"]["skill"], skill, "skills/get gives the listed entry");
    }
    let unknown = raw_request(&mut server, "get", "skills/get", json!({"uri": "skill://other/SKILL.md"}));
    assert_eq!(unknown["error"]["code"], -32602, "{unknown}");
    let malformed = raw_request(&mut server, "get", "skills/get", json!({}));
    assert_eq!(malformed["error"]["code"], -32602, "a known method with bad params: {malformed}");

    let index: Value = serde_json::from_str(&raw_read(&mut server, "skill://index.json")).unwrap();
    let entries = index["skills"].as_array().unwrap();
    assert_eq!(entries.len(), 2);
    for (entry, skill) in entries.iter().zip(&skills) {
        for field in ["uri", "frontmatter", "resources"] {
            assert_eq!(entry[field], skill[field], "{field}");
        }
        assert_eq!(entry["name"], skill["frontmatter"]["name"]);
        assert_eq!(entry["description"], skill["frontmatter"]["description"]);
        assert_eq!((entry["type"].as_str(), &entry["url"]), (Some("skill-md"), &skill["uri"]));
        assert_eq!(entry["digest"], skill["resources"][0]["digest"]);
    }

    let workflow =
        std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("skills/kb-mcp/SKILL.md"))
            .unwrap();
    assert_eq!(raw_read(&mut server, WORKFLOW_SKILL), workflow);
    let conventions = raw_read(&mut server, CONVENTIONS_SKILL);
    assert!(conventions.len() <= 32 * 1024, "{}", conventions.len());
    for expected in [
        "| `z/` | ",
        "| `z/tech/` | ",
        "`docs/`",
        "registry `docs/tags.md`",
        "`type/concept` (",
        "`知识管理` (",
        "### `docs/写作规范.md`: 写作规范",
        "> ## 一条笔记只讲一个想法",
        "### `docs/frontmatter.md`: Frontmatter reference",
        "sets no frontmatter rules",
    ] {
        assert!(conventions.contains(expected), "{expected:?} in\n{conventions}");
    }
    assert!(!conventions.contains("secret-plan"), "nothing denied is named");
    assert_eq!(raw_read(&mut server, CONVENTIONS_SKILL), conventions, "the same vault gives the same bytes");
    server.finish();
}

/// The conventions skill is made from the vault as it is: editing a standard,
/// adding `[lint]` rules to `kb.toml` and adding a long standard each give it
/// a new digest, and a standard too long for the page is cut with the
/// `read_note` call that reads on exactly where the quote stops.
#[test]
fn issue33_the_conventions_skill_changes_with_the_vault() {
    let (_tmp, vault) = common::temp_vault();
    let mut server = common::RawStdio::start(&vault, "read", loads_skills());
    let first = conventions_digest(&mut server);
    assert_eq!(conventions_digest(&mut server), first, "nothing changed, nothing moves");

    let standard = vault.join("docs/写作规范.md");
    let mut text = std::fs::read_to_string(&standard).unwrap();
    text.push_str("\n## 新规则\n\n每条笔记都要写出处。\n");
    std::fs::write(&standard, &text).unwrap();
    let edited = conventions_digest(&mut server);
    assert_ne!(edited, first, "a standard edited");
    let conventions = raw_read(&mut server, CONVENTIONS_SKILL);
    assert_eq!(sha256(conventions.as_bytes()), edited);
    assert!(conventions.contains("> 每条笔记都要写出处。"), "{conventions}");

    let config = std::fs::read_to_string(vault.join("kb.toml")).unwrap();
    std::fs::write(
        vault.join("kb.toml"),
        format!(
            "{config}[lint]\nrequired = [\"tags\", \"created\"]\ntypes = {{ created = \"date\", status = [\"draft\", \"final\"] }}\n"
        ),
    )
    .unwrap();
    let linted = conventions_digest(&mut server);
    assert_ne!(linted, edited, "kb.toml's rules changed");
    let conventions = raw_read(&mut server, CONVENTIONS_SKILL);
    for expected in [
        "- Every note must carry `tags`, `created` (not empty).",
        "- Every note: `created`, where present, is a date like 2026-03-01.",
        "- Every note: `status`, where present, is one of `draft`, `final`.",
    ] {
        assert!(conventions.contains(expected), "{expected:?} in\n{conventions}");
    }

    let paragraph = "长段落的规范文字，用来把这条规范撑到超过一页。".repeat(20);
    let long: String = (0..200).map(|i| format!("## 第 {i} 条\n\n{paragraph}\n\n")).collect();
    let long = format!("---\ntitle: 长规范\ndescription: 一条很长的规范。\n---\n\n# 长规范\n\n{long}");
    std::fs::write(vault.join("docs/长规范.md"), &long).unwrap();
    let deadline = Instant::now() + Duration::from_secs(30);
    let conventions = loop {
        let conventions = raw_read(&mut server, CONVENTIONS_SKILL);
        if conventions.contains("### `docs/长规范.md`: 长规范") {
            break conventions;
        }
        assert!(Instant::now() < deadline, "the new standard never appeared:\n{conventions}");
        std::thread::sleep(Duration::from_millis(100));
    };
    assert_ne!(conventions_digest(&mut server), linted, "a standard added");
    assert!(conventions.len() <= 32 * 1024, "{}", conventions.len());
    assert!(conventions.contains("> 每条笔记都要写出处。"), "the short standards stay whole");
    let pointer = "read on with `read_note {\"path\": \"docs/长规范.md\", \"offset\": ";
    let at = conventions.find(pointer).unwrap_or_else(|| panic!("{conventions}"));
    let offset: usize = conventions[at + pointer.len()..].split('}').next().unwrap().parse().unwrap();
    assert!(offset > 1000 && offset < long.len(), "{offset}");
    let section = conventions.split("### `docs/长规范.md`").nth(1).unwrap().split("\n#").next().unwrap();
    let last_quoted = section.lines().rev().find_map(|l| l.strip_prefix("> ")).unwrap();
    assert!(long[..offset].ends_with(last_quoted.trim_end()), "the quote stops at the offset: {last_quoted}");
    let rest =
        raw_call(&mut server, "rest", "read_note", json!({"path": "docs/长规范.md", "offset": offset}));
    let rest = rest["structuredContent"]["content"].as_str().unwrap_or_else(|| panic!("{rest}"));
    assert!(long[offset..].starts_with(rest), "read_note reads on where the quote stopped");
    server.finish();
}

/// rmcp's own client, declaring the extension, finds the skills in the
/// capabilities and loads them (`skills/list`, `skills/get`, `resources/read`
/// verified against the digests) in both revisions: after `initialize`
/// (2025-11-25) and statelessly, the capabilities on each request
/// (2026-07-28). Without the extension, neither revision lists them.
#[tokio::test(flavor = "multi_thread")]
async fn issue33_a_client_library_loads_the_skills_in_both_revisions() {
    let (_tmp, vault) = common::temp_vault();
    for version in [ProtocolVersion::V_2025_11_25, ProtocolVersion::V_2026_07_28] {
        for declares in [false, true] {
            let mut extensions = ExtensionCapabilities::new();
            if declares {
                extensions.insert(SKILLS.to_owned(), serde_json::Map::new());
            }
            let capabilities = ClientCapabilities::builder().enable_extensions_with(extensions).build();
            let config = ClientConfig::new(capabilities, Implementation::new("kb-mcp-tests", "0"))
                .with_protocol_version(version.clone());
            let (transport, _stderr) =
                TokioChildProcess::builder(command(&vault, "read")).stderr(Stdio::null()).spawn().unwrap();
            let client = if version.has_initialize() {
                config.serve(transport).await.unwrap()
            } else {
                config
                    .serve_with_lifecycle(
                        transport,
                        ClientLifecycleMode::Discover { preferred_versions: vec![version.clone()] },
                    )
                    .await
                    .unwrap()
            };
            let supports = client.peer_info().unwrap().capabilities.supports_skills();
            assert_eq!(supports, declares, "{version:?}");
            let resources = client.list_all_resources().await.unwrap();
            let skill_files = resources.iter().filter(|r| r.uri.starts_with("skill://")).count();
            assert_eq!(skill_files, if declares { 3 } else { 0 }, "{version:?}");
            if declares {
                let skills = client.list_all_skills().await.unwrap();
                let names: Vec<&str> = skills.iter().map(|s| s.name()).collect();
                assert_eq!(names, ["kb-mcp", "vault-conventions"], "{version:?}");
                for skill in &skills {
                    skill.validate().unwrap();
                    let got = client.get_skill(GetSkillRequestParams::new(skill.uri.clone())).await.unwrap();
                    assert_eq!(&got.skill, skill);
                    let SkillResources::Files(files) = &skill.resources else { panic!("{skill:?}") };
                    for file in files {
                        let read =
                            client.read_resource(ReadResourceRequestParams::new(file.uri.clone())).await;
                        let ResourceContents::TextResourceContents { text, .. } = &read.unwrap().contents[0]
                        else {
                            panic!("{}", file.uri)
                        };
                        file.verify(text.as_bytes()).unwrap();
                    }
                }
            }
            client.cancel().await.unwrap();
        }
    }
}

// ---------------------------------------------------------------------------
// Issue 33 §2: the input-required round trip of 2026-07-28 counts only an
// answer to a question this server asked

/// One `tools/call` of `apply_proposal` without following rounds, carrying
/// `answer` (the person's `apply`) and `state` when given.
async fn apply_once(
    client: &RunningService<RoleClient, Confirmer>,
    id: &str,
    answer: Option<bool>,
    state: Option<&str>,
) -> CallToolResponse {
    let mut params =
        CallToolRequestParams::new("apply_proposal").with_arguments(args(json!({"proposal_id": id})));
    if let Some(apply) = answer {
        let mut responses = InputResponses::new();
        responses
            .insert("confirm_apply".to_owned(), json!({"action": "accept", "content": {"apply": apply}}));
        params.input_responses = Some(responses);
    }
    params.request_state = state.map(str::to_owned);
    client.call_tool_once(params).await.unwrap()
}

fn refused_code(response: &CallToolResponse) -> String {
    match response {
        CallToolResponse::Complete(result) => error_code(result),
        other => panic!("expected a refusal, got {other:?}"),
    }
}

/// A retry whose answer comes without the question's `requestState`, with a
/// forged one, with one asked about another proposal, or with one already
/// used (a decline replayed as an accept) is refused and writes nothing; the
/// state the server sealed, echoed once, applies.
#[tokio::test(flavor = "multi_thread")]
async fn issue33_a_forged_or_replayed_confirmation_state_is_refused() {
    let (_tmp, vault) = common::temp_vault();
    let (client, _) = connect_confirmer(&vault, true, ProtocolVersion::V_2026_07_28).await;
    let stage = |title: &'static str| {
        let client = &client;
        async move {
            let staged =
                call_with(client, "propose_new_note", json!({"title": title, "body": "b\n", "reason": "r"}))
                    .await;
            staged.structured_content.unwrap()["proposal_id"].as_str().unwrap().to_owned()
        }
    };
    let (first, second) = (stage("First").await, stage("Second").await);

    assert_eq!(refused_code(&apply_once(&client, &first, Some(true), None).await), "permission_denied");
    assert_eq!(
        refused_code(&apply_once(&client, &first, Some(true), Some("forged")).await),
        "permission_denied"
    );
    let CallToolResponse::InputRequired(question) = apply_once(&client, &first, None, None).await else {
        panic!("the person is asked first");
    };
    let state = question.request_state.clone().expect("the question carries a sealed state");
    let mut altered = state.clone();
    altered.push('A');
    assert_eq!(
        refused_code(&apply_once(&client, &first, Some(true), Some(&altered)).await),
        "permission_denied"
    );
    let other = apply_once(&client, &second, Some(true), Some(&state)).await;
    assert_eq!(refused_code(&other), "permission_denied", "a state asked about another proposal");
    assert!(!vault.join("z/First.md").exists() && !vault.join("z/Second.md").exists());

    let declined = apply_once(&client, &first, Some(false), Some(&state)).await;
    assert_eq!(refused_code(&declined), "permission_denied", "the person declined");
    let replayed = apply_once(&client, &first, Some(true), Some(&state)).await;
    assert_eq!(refused_code(&replayed), "permission_denied", "a used state, replayed as an accept");
    assert!(!vault.join("z/First.md").exists(), "nothing applied");

    let CallToolResponse::InputRequired(question) = apply_once(&client, &first, None, None).await else {
        panic!("asked again");
    };
    let applied = apply_once(&client, &first, Some(true), question.request_state.as_deref()).await;
    let CallToolResponse::Complete(applied) = applied else { panic!("applied") };
    assert_eq!(applied.structured_content.unwrap()["status"], "applied");
    assert!(vault.join("z/First.md").exists());
    client.cancel().await.unwrap();
}

/// Issue 33 §2: a client at `apply` that declares neither elicitation nor MCP
/// Apps gets no second approval from kb-mcp; the log says so when it
/// connects, and the overview tells its agent. A client that can ask is not
/// told.
#[test]
fn issue33_a_client_without_elicitation_or_apps_is_told_who_approves() {
    let (_tmp, vault) = common::temp_vault();
    let mut plain = common::RawStdio::start(&vault, "apply", json!({}));
    let overview = raw_call(&mut plain, "o", "get_vault_overview", json!({}));
    assert!(overview["content"][0]["text"].as_str().unwrap().contains("Approvals:"), "{overview}");
    let (_, log) = plain.finish();
    assert!(log.contains("\"event\":\"approval\""), "{log}");

    for capabilities in [json!({"elicitation": {}}), shows_apps()] {
        let mut asking = common::RawStdio::start(&vault, "apply", capabilities.clone());
        let overview = raw_call(&mut asking, "o", "get_vault_overview", json!({}));
        assert!(!overview["content"][0]["text"].as_str().unwrap().contains("Approvals:"), "{capabilities}");
        let (_, log) = asking.finish();
        assert!(!log.contains("\"event\":\"approval\""), "{capabilities}: {log}");
    }
}

/// Issue 33 §4: the conformance suite's fixtures (`src/server/fixtures.rs`) exist only in
/// a build with the test-only feature `conformance-fixtures`. The default build lists no
/// `test_*` tool or prompt, no `test://` resource or template, and declares neither
/// logging nor completions, in either protocol era.
#[cfg(not(feature = "conformance-fixtures"))]
#[tokio::test(flavor = "multi_thread")]
async fn issue33_the_default_build_serves_no_conformance_fixture() {
    let (_tmp, vault) = common::temp_vault();
    for version in [ProtocolVersion::V_2025_11_25, ProtocolVersion::V_2026_07_28] {
        let client = connect_with(&vault, "apply", version.clone()).await;
        let tools = client.list_tools(None).await.unwrap().tools;
        assert!(!tools.is_empty() && tools.iter().all(|t| !t.name.starts_with("test_")), "{version:?}");
        assert!(tools.iter().all(|t| t.name != "json_schema_2020_12_tool"), "{version:?}");
        let prompts = client.list_prompts(None).await.unwrap().prompts;
        assert!(prompts.iter().all(|p| !p.name.starts_with("test_")), "{version:?}");
        let resources = client.list_resources(None).await.unwrap().resources;
        assert!(resources.iter().all(|r| !r.uri.starts_with("test://")), "{version:?}");
        let templates = client.list_resource_templates(None).await.unwrap().resource_templates;
        assert!(templates.iter().all(|t| !t.uri_template.starts_with("test://")), "{version:?}");
        let refused = call(&client, "test_simple_text", json!({})).await;
        assert!(refused.is_err() || refused.unwrap().is_error == Some(true), "{version:?}");
        if version.has_initialize() {
            let capabilities = &client.peer_info().unwrap().capabilities;
            assert!(capabilities.logging.is_none() && capabilities.completions.is_none());
        }
        client.cancel().await.unwrap();
    }
}

/// Issue 37: a server embeds its vault in the background while it answers:
/// every search says how it ranked, lexical (and why) until the notes are
/// embedded, then `hybrid` with the model's id, in `structuredContent` as
/// the published output schema says (rmcp's client checks it).
#[tokio::test(flavor = "multi_thread")]
async fn issue37_a_server_ranks_by_meaning_once_it_embedded_the_notes() {
    let tmp = tempfile::tempdir().unwrap();
    let vault = tmp.path().join("vault");
    common::copy_dir(&Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures/english-vault"), &vault);
    let client = connect(&vault, "read").await;
    let question =
        json!({"query": "why do I keep believing a job will be finished sooner than it really is"});
    let started = std::time::Instant::now();
    let mut seen = Vec::new();
    let hybrid = loop {
        let result = call(&client, "search_knowledge", question.clone()).await.unwrap();
        let structured = result.structured_content.clone().unwrap();
        let ranking = structured["ranking"].clone();
        assert!(matches!(ranking["path"].as_str(), Some("lexical" | "hybrid")), "{ranking}");
        if ranking["path"] == "hybrid" {
            break structured;
        }
        assert!(ranking["why"].as_str().is_some_and(|w| w.starts_with("building:")), "{ranking}");
        seen.push(ranking);
        assert!(started.elapsed() < Duration::from_secs(300), "never hybrid: {seen:?}");
        tokio::time::sleep(Duration::from_millis(200)).await;
    };
    assert!(hybrid["ranking"]["why"].as_str().unwrap().starts_with("pocket-encoder/"), "{hybrid}");
    let paths: Vec<&str> =
        hybrid["results"].as_array().unwrap().iter().map(|h| h["path"].as_str().unwrap()).collect();
    assert!(
        paths
            .iter()
            .take(5)
            .any(|p| *p == "work/Estimating projects.md" || *p == "reading/Thinking, Fast and Slow.md"),
        "{paths:?}"
    );
    let pack = call(&client, "recall_context", json!({"topic": "estimates that run late"})).await.unwrap();
    assert_eq!(pack.structured_content.unwrap()["ranking"]["path"], "hybrid");
    client.cancel().await.unwrap();
}
