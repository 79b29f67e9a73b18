//! Several vaults behind one server (issue 39): the real `kb-mcp` binary
//! serving two vaults over stdio (each tool's `vault`, `list_vaults`, a search
//! of every vault, proposals and applies landing in their own vault), a server
//! of one vault unchanged, the command line's checks, a vaults file, and
//! `kb-index --vault NAME`. Tokens scoped to a vault are in `http.rs`.

#![allow(
    clippy::disallowed_methods,
    clippy::disallowed_types,
    reason = "the tests build and inspect vaults on disk"
)]

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use rmcp::model::*;
use rmcp::transport::TokioChildProcess;
use rmcp::{ServiceError, ServiceExt};
use serde_json::{Value, json};

use crate::common;
use crate::mcp::{Client, call};

const BIN: &str = env!("CARGO_BIN_EXE_kb-mcp");
const KB_INDEX: &str = env!("CARGO_BIN_EXE_kb-index");

/// Two copies of the fixture vault, each with a note of its own.
struct Two {
    _tmp: tempfile::TempDir,
    work: PathBuf,
    home: PathBuf,
}

fn two_vaults() -> Two {
    let tmp = tempfile::tempdir().unwrap();
    let work = tmp.path().join("Work");
    let home = tmp.path().join("笔记");
    for vault in [&work, &home] {
        common::copy_fixture(&common::fixture_vault(), vault);
        common::without_semantic(vault);
    }
    common::put(
        &work,
        "z/Quarterly budget.md",
        "# Quarterly budget\n\nThe zebrafish grant pays for the lab.\n",
    );
    common::put(
        &home,
        "z/Sourdough starter.md",
        "# Sourdough starter\n\nFeed the zebrafish-shaped jar daily.\n",
    );
    Two { _tmp: tmp, work, home }
}

async fn serve(args: &[String]) -> Client {
    let mut command = tokio::process::Command::new(BIN);
    command.args(args);
    let (transport, _stderr) = TokioChildProcess::builder(command).stderr(Stdio::null()).spawn().unwrap();
    ClientConfig::new(ClientCapabilities::default(), Implementation::new("kb-mcp-vault-tests", "0"))
        .with_protocol_version(ProtocolVersion::V_2025_11_25)
        .serve(transport)
        .await
        .unwrap()
}

fn named(name: &str, path: &Path) -> String {
    format!("{name}={}", path.display())
}

fn structured(result: &CallToolResult) -> Value {
    assert_ne!(result.is_error, Some(true), "{result:?}");
    result.structured_content.clone().unwrap()
}

fn error_of(result: &CallToolResult) -> Value {
    assert_eq!(result.is_error, Some(true), "{result:?}");
    assert!(result.structured_content.is_none(), "an error carries no structuredContent: {result:?}");
    common::tool_error(&serde_json::to_value(result).unwrap())
}

fn paths(found: &Value) -> Vec<String> {
    found["results"].as_array().unwrap().iter().map(|hit| hit["path"].as_str().unwrap().to_owned()).collect()
}

#[tokio::test]
async fn two_vaults_are_served_apart_and_searched_together() {
    let two = two_vaults();
    let client = serve(&[
        "--vault".into(),
        named("work", &two.work),
        "--vault".into(),
        named("home", &two.home),
        "--access".into(),
        "apply".into(),
    ])
    .await;

    // Every tool takes `vault`, naming the two (and `*` for the searches); list_vaults is listed.
    let tools = client.list_all_tools().await.unwrap();
    assert!(tools.iter().any(|tool| tool.name == "list_vaults"));
    for tool in &tools {
        let vault = &tool.input_schema.get("properties").cloned().unwrap_or_default()["vault"];
        let every = matches!(tool.name.as_ref(), "search_knowledge" | "search_note_content");
        let want = if every { json!(["work", "home", "*"]) } else { json!(["work", "home"]) };
        if tool.name != "list_vaults" {
            assert_eq!(vault["enum"], want, "{}", tool.name);
        }
    }
    // The listing grows by the names (about 1.6 KB for two at `apply`), within 2 KiB of a single
    // vault's cap (mcp.rs: 28 KiB at `propose` and `apply`).
    let size = serde_json::to_string(&json!({ "tools": tools })).unwrap().len();
    assert!(size < 30 * 1024, "tools/list of two vaults at apply: {size} bytes");
    let initialized = client.peer_info().unwrap().instructions.clone().unwrap_or_default();
    assert!(initialized.contains("`work` (the default) and `home`"), "{initialized}");

    let listed = structured(&call(&client, "list_vaults", json!({})).await.unwrap());
    let vaults = listed["vaults"].as_array().unwrap();
    assert_eq!(vaults.len(), 2);
    assert_eq!((vaults[0]["name"].as_str(), vaults[0]["default"].as_bool()), (Some("work"), Some(true)));
    assert_eq!((vaults[1]["name"].as_str(), vaults[1]["default"].as_bool()), (Some("home"), Some(false)));
    let notes = |at: usize| vaults[at]["counts"]["notes"].as_u64().unwrap();
    assert_eq!(notes(0), notes(1), "two copies of one vault, a note added to each");
    let refused = call(&client, "list_vaults", json!({"vault": "home", "x": 1})).await.unwrap();
    assert_eq!(error_of(&refused)["code"], "invalid_argument");
    let overview = structured(&call(&client, "get_vault_overview", json!({"metrics": true})).await.unwrap());
    let counted =
        overview["metrics"]["tools"].as_array().unwrap().iter().find(|t| t["tool"] == "list_vaults");
    assert_eq!(counted.map(|t| t["calls"].clone()), Some(json!(2)), "counted under its name: {overview}");

    // Without `vault`, the default; with it, that vault; each answer names its vault.
    let found = structured(&call(&client, "search_knowledge", json!({"query": "zebrafish"})).await.unwrap());
    assert_eq!(paths(&found), ["z/Quarterly budget.md"]);
    assert_eq!(found["vault"], "work");
    let found = structured(
        &call(&client, "search_note_content", json!({"query": "zebrafish", "vault": "home"})).await.unwrap(),
    );
    assert_eq!(paths(&found), ["z/Sourdough starter.md"]);
    assert_eq!(found["vault"], "home");
    let read = call(&client, "read_note", json!({"path": "z/Sourdough starter.md"})).await.unwrap();
    assert_eq!(error_of(&read)["code"], "not_found", "the default vault has no such note");
    let read =
        call(&client, "read_note", json!({"path": "z/Sourdough starter.md", "vault": "home"})).await.unwrap();
    assert!(read.content[0].as_text().unwrap().text.ends_with("(vault: home)"));

    // `*`: both vaults' hits, each naming its vault.
    for tool in ["search_knowledge", "search_note_content"] {
        let every =
            structured(&call(&client, tool, json!({"query": "zebrafish", "vault": "*"})).await.unwrap());
        let mut hits: Vec<(String, String)> = every["results"]
            .as_array()
            .unwrap()
            .iter()
            .map(|hit| (hit["vault"].as_str().unwrap().to_owned(), hit["path"].as_str().unwrap().to_owned()))
            .collect();
        hits.sort();
        assert_eq!(
            hits,
            [
                ("home".to_owned(), "z/Sourdough starter.md".to_owned()),
                ("work".to_owned(), "z/Quarterly budget.md".to_owned())
            ],
            "{tool}"
        );
        assert_eq!(every["total"], 2, "{tool}");
        let text =
            call(&client, tool, json!({"query": "zebrafish", "vault": "*", "limit": 1})).await.unwrap();
        assert_eq!(
            structured(&text)["results"].as_array().unwrap().len(),
            1,
            "the limit holds across vaults"
        );
    }

    // Bad `vault`s: the same clear error, nothing else happens.
    for (arguments, wanted) in [
        (json!({"query": "x", "vault": "nope"}), "no vault named \"nope\""),
        (json!({"query": "x", "vault": "../笔记"}), "no vault named"),
        (json!({"query": "x", "vault": 7}), "must be a vault's name"),
        (json!({"query": "x", "vault": ["work"]}), "must be a vault's name"),
    ] {
        let refused = call(&client, "search_knowledge", arguments).await.unwrap();
        let error = error_of(&refused);
        assert_eq!(error["code"], "invalid_argument");
        assert!(error["message"].as_str().unwrap().contains(wanted), "{error}");
    }
    let refused = call(&client, "read_note", json!({"path": "x.md", "vault": "*"})).await.unwrap();
    assert!(error_of(&refused)["message"].as_str().unwrap().contains("only search_knowledge"));

    // A proposal lands in its vault's inbox; its id finds it there without `vault`.
    let staged = structured(
        &call(
            &client,
            "propose_new_note",
            json!({"vault": "home", "title": "Rye ratio", "body": "1:5 with the starter.\n", "reason": "the person asked"}),
        )
        .await
        .unwrap(),
    );
    let id = staged["proposal_id"].as_str().unwrap().to_owned();
    assert_eq!(staged["vault"], "home");
    let pending = |vault: &Path| common::files_in(&vault.join("inbox")).len();
    assert!(pending(&two.home) > 0 && pending(&two.work) == 0, "staged in home only");
    let listed = structured(&call(&client, "list_proposals", json!({})).await.unwrap());
    assert_eq!(listed["vault"], "work");
    assert_eq!(listed["proposals"].as_array().unwrap().len(), 0, "work has none pending");
    let wrong = call(&client, "apply_proposal", json!({"proposal_id": id, "vault": "work"})).await.unwrap();
    assert_eq!(error_of(&wrong)["code"], "proposal_not_found");
    let applied = structured(&call(&client, "apply_proposal", json!({"proposal_id": id})).await.unwrap());
    assert_eq!(applied["vault"], "home");
    let target = applied["target"].as_str().unwrap();
    assert!(two.home.join(target).is_file() && !two.work.join(target).exists(), "{target}");
    assert_eq!(common::audit_lines(&two.home).len(), 1);
    assert!(common::audit_lines(&two.work).is_empty());
    let found = structured(
        &call(&client, "search_knowledge", json!({"query": "rye ratio", "vault": "home"})).await.unwrap(),
    );
    assert_eq!(paths(&found)[0], target, "indexed in its vault when the apply returns");
    client.cancel().await.unwrap();
}

#[tokio::test]
async fn a_server_of_one_vault_has_no_vault_argument() {
    let two = two_vaults();
    let client = serve(&["--vault".into(), two.work.display().to_string()]).await;
    let tools = client.list_all_tools().await.unwrap();
    assert!(!tools.iter().any(|tool| tool.name == "list_vaults"));
    assert!(
        tools.iter().all(|tool| tool.input_schema.get("properties").and_then(|p| p.get("vault")).is_none())
    );
    let refused =
        call(&client, "search_knowledge", json!({"query": "zebrafish", "vault": "Work"})).await.unwrap();
    assert_eq!(error_of(&refused)["code"], "invalid_argument");
    let found = structured(&call(&client, "search_knowledge", json!({"query": "zebrafish"})).await.unwrap());
    assert!(found.get("vault").is_none(), "{found}");
    let unknown = call(&client, "list_vaults", json!({})).await;
    assert!(matches!(unknown, Err(ServiceError::McpError(_))), "{unknown:?}");
    client.cancel().await.unwrap();
}

fn run(bin: &str, args: &[String]) -> (i32, String, String) {
    common::outcome(Command::new(bin).args(args).stdin(Stdio::null()).output().unwrap())
}

#[test]
fn the_command_line_refuses_vaults_it_cannot_tell_apart() {
    let two = two_vaults();
    let twin = two._tmp.path().join("elsewhere").join("Work");
    common::copy_fixture(&common::fixture_vault(), &twin);
    for (args, wanted) in [
        (vec![two.work.display().to_string(), twin.display().to_string()], "two vaults are named \"Work\""),
        (vec![named("a", &two.work), named("A", &two.home)], "two vaults are named"),
        (vec![named("a", &two.work), named("b", &two.work)], "is given twice"),
        (vec![named("a", &two.work), named("b", &two.work.join("z"))], "the vault b"),
        (vec![named("a", &two.work.join("z").join("..")), named("b", &two.work)], "is given twice"),
        (vec![named("a", &two.work), named("b", &two._tmp.path().join("missing"))], "does not exist"),
    ] {
        let args: Vec<String> = args.into_iter().flat_map(|arg| ["--vault".to_owned(), arg]).collect();
        let (code, _, err) = run(BIN, &args);
        assert_eq!(code, 2, "{args:?}: {err}");
        assert!(err.contains(wanted), "{args:?}: {err}");
    }
    let (code, _, err) = run(
        BIN,
        &[
            "--vault".into(),
            named("a", &two.work),
            "--vault".into(),
            named("b", &two.home),
            "--index-dir".into(),
            "/tmp/x".into(),
        ],
    );
    assert_eq!(code, 2);
    assert!(err.contains("--index-dir names the index of one vault"), "{err}");
}

#[tokio::test]
async fn a_vaults_file_names_the_vaults_for_the_server_and_the_cli() {
    let two = two_vaults();
    let file = two._tmp.path().join("vaults.toml");
    let index = two._tmp.path().join("home-index");
    std::fs::write(
        &file,
        format!(
            "[[vault]]\nname = \"home\"\npath = \"笔记\"\nindex_dir = \"{}\"\n\n[[vault]]\nname = \"work\"\npath = \"{}\"\n",
            index.display(),
            two.work.display()
        ),
    )
    .unwrap();
    let client = serve(&["--vaults".into(), file.display().to_string()]).await;
    let listed = structured(&call(&client, "list_vaults", json!({})).await.unwrap());
    assert_eq!(listed["vaults"][0]["name"], "home", "the file's order: the first is the default");
    let found = structured(&call(&client, "search_knowledge", json!({"query": "zebrafish"})).await.unwrap());
    assert_eq!(paths(&found), ["z/Sourdough starter.md"]);
    client.cancel().await.unwrap();
    assert!(index.join("kb-mcp-index.json").is_file(), "the file's index_dir is used");

    // The CLI picks a vault of the same file by name.
    let file = file.display().to_string();
    let (code, out, err) = run(
        KB_INDEX,
        &[
            "--vaults".into(),
            file.clone(),
            "--vault".into(),
            "work".into(),
            "search".into(),
            "zebrafish".into(),
        ],
    );
    assert_eq!(code, 0, "{err}");
    assert!(out.contains("Quarterly budget") && !out.contains("Sourdough"), "{out}");
    let (code, out, err) =
        run(KB_INDEX, &["--vaults".into(), file.clone(), "search".into(), "zebrafish".into()]);
    assert_eq!(code, 0, "{err}");
    assert!(out.contains("Sourdough starter"), "without --vault, the file's first: {out}");
    let (code, _, err) =
        run(KB_INDEX, &["--vaults".into(), file, "--vault".into(), "nowhere".into(), "status".into()]);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("does not exist"), "{err}");
    let broken = two._tmp.path().join("broken.toml");
    std::fs::write(&broken, "[[vault]]\nname = \"x\"\n").unwrap();
    let (code, _, err) = run(BIN, &["--vaults".into(), broken.display().to_string()]);
    assert_eq!(code, 2);
    assert!(err.contains("the vaults file") && err.contains("path"), "{err}");
}
