//! Project-wide checks: the layering of both crates' sources, the index schema declaration,
//! the `kb-index` command line's exit codes, and that what the README's server
//! command leaves in a vault never reaches a test's copy of the fixture.

#![allow(
    clippy::disallowed_methods,
    clippy::disallowed_types,
    reason = "the tests build and inspect vaults on disk"
)]

use crate::common;

use std::io::{BufRead, BufReader, Write};
use std::path::Path;
use std::process::{Command, Stdio};

/// Layers from the bottom; a file may name only its own layer and those below.
/// `index` and `write` are siblings and must not name each other.
const LAYERS: &[(&str, u8)] = &[
    ("error", 0),
    ("sandbox", 1),
    ("vault", 2),
    ("index", 3),
    ("write", 3),
    ("engine", 4),
    ("eval", 5),
    ("review", 6),
    ("tools", 7),
    ("server", 8),
];

fn rank(layer: &str) -> Option<u8> {
    LAYERS.iter().find(|(name, _)| *name == layer).map(|(_, rank)| *rank)
}

fn rust_files(dir: &Path) -> Vec<std::path::PathBuf> {
    walkdir::WalkDir::new(dir)
        .into_iter()
        .filter_map(Result::ok)
        .filter(|e| e.path().extension().is_some_and(|x| x == "rs"))
        .map(|e| e.into_path())
        .collect()
}

/// Code lines of a file, without `//` comments (doc comments may name anything).
fn code_lines(text: &str) -> impl Iterator<Item = (usize, &str)> {
    text.lines()
        .enumerate()
        .map(|(i, line)| (i + 1, line.split("//").next().unwrap_or("")))
        .filter(|(_, l)| !l.trim().is_empty())
}

/// The source folders of the two crates: the engine's, then kb-mcp's.
fn source_folders() -> [std::path::PathBuf; 2] {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    [root.join("crates/kb-engine/src"), root.join("src")]
}

/// Within each crate, a file names only its own layer and those below (Cargo
/// keeps rmcp, tokio and HTTP out of the engine crate, which does not depend
/// on them); the outside crates each layer may name are checked here.
#[test]
fn layers_point_one_way_and_each_outside_crate_stays_in_its_layer() {
    let mut problems = Vec::new();
    for (src, file) in source_folders()
        .into_iter()
        .flat_map(|src| rust_files(&src).into_iter().map(move |f| (src.clone(), f)))
    {
        let relative = file.strip_prefix(&src).unwrap().to_string_lossy().replace('\\', "/");
        let first = relative.split('/').next().unwrap().trim_end_matches(".rs").to_owned();
        let is_bin = first == "bin";
        let text = std::fs::read_to_string(&file).unwrap();
        assert!(text.starts_with("//!"), "{relative} must start with a `//!` paragraph saying what it owns");
        if first == "lib" {
            continue;
        }
        let own = if is_bin {
            9
        } else {
            rank(&first).unwrap_or_else(|| panic!("{relative}: unknown layer `{first}`"))
        };
        for (number, line) in code_lines(&text) {
            let mut rest = line;
            while let Some(at) = rest.find("crate::") {
                let name: String =
                    rest[at + 7..].chars().take_while(|c| c.is_alphanumeric() || *c == '_').collect();
                if let Some(other) = rank(&name) {
                    let sibling =
                        (first == "index" && name == "write") || (first == "write" && name == "index");
                    if other > own || sibling {
                        problems.push(format!(
                            "{relative}:{number}: layer `{first}` names `{name}` above or beside it"
                        ));
                    }
                }
                rest = &rest[at + 7..];
            }
            let rules: [(&str, &[&str]); 5] = [
                ("tantivy::", &["index"]),
                ("rmcp::", &["tools", "server"]),
                ("std::fs", &["sandbox", "bin"]),
                ("tokio::", &["review", "server", "bin"]),
                ("jsonschema::", &["tools"]),
            ];
            for (needle, allowed) in rules {
                if line.contains(needle) && !allowed.contains(&first.as_str()) {
                    problems.push(format!("{relative}:{number}: `{needle}` outside {allowed:?}"));
                }
            }
        }
    }
    assert!(problems.is_empty(), "layering violations:\n{}", problems.join("\n"));
}

/// Issue 16: the engine is the library's boundary and hands out none of its
/// internals: no public engine function returns (or public type is) its index,
/// sandbox, configuration, catalog or link graph; callers ask it questions.
#[test]
fn the_engine_hands_out_none_of_its_internals() {
    let engine = Path::new(env!("CARGO_MANIFEST_DIR")).join("crates/kb-engine/src/engine");
    let internals = ["SearchIndex", "Sandbox", "VaultConfig", "Catalog", "Graph"];
    let mut problems = Vec::new();
    for file in rust_files(&engine) {
        let text = std::fs::read_to_string(&file).unwrap();
        let code: String = code_lines(&text).map(|(_, line)| format!("{line}\n")).collect();
        for (at, _) in code.match_indices("pub ") {
            let item = &code[at + 4..];
            let Some(rest) = item.strip_prefix("fn ").or_else(|| item.strip_prefix("struct ")) else {
                continue;
            };
            let signature = &rest[..rest.find(['{', ';']).unwrap_or(rest.len())];
            let name = signature.split(['(', '<', ' ']).next().unwrap_or_default();
            let returns = signature.split_once("->").map_or("", |(_, returns)| returns);
            for internal in internals {
                if name == internal || returns.contains(internal) {
                    problems.push(format!("{}: pub {}", file.display(), signature.trim()));
                }
            }
        }
    }
    assert!(problems.is_empty(), "the engine hands out its internals:\n{}", problems.join("\n"));
}

#[test]
fn the_index_schema_declaration_and_the_code_agree() {
    kb_mcp::index::check_schema().unwrap();
    let declared: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(
            Path::new(env!("CARGO_MANIFEST_DIR")).join("crates/kb-engine/index-schema/schema.json"),
        )
        .unwrap(),
    )
    .unwrap();
    assert_eq!(declared["schema_version"].as_u64().unwrap(), u64::from(kb_mcp::index::schema_version()));
    // Every weighted field is a declared text or raw field.
    let names: Vec<&str> =
        declared["fields"].as_array().unwrap().iter().map(|f| f["name"].as_str().unwrap()).collect();
    for (tool, weights) in declared["weights"].as_object().unwrap() {
        for field in weights.as_object().unwrap().keys() {
            assert!(names.contains(&field.as_str()), "{tool} weighs undeclared field {field}");
        }
    }
}

fn kb_index(vault: &Path, args: &[&str]) -> (i32, String, String) {
    let output =
        Command::new(env!("CARGO_BIN_EXE_kb-index")).args(args).arg("--vault").arg(vault).output().unwrap();
    crate::common::outcome(output)
}

#[test]
fn kb_index_exit_codes() {
    let (tmp, vault) = common::temp_vault();
    let (code, out, _) = kb_index(&vault, &["build"]);
    assert_eq!(code, 0);
    assert!(out.contains("45 notes"), "{out}");
    let (code, out, _) = kb_index(&vault, &["search", "远程仓库", "--content"]);
    assert_eq!(code, 0);
    assert!(out.contains("z/备份仓库.md"), "{out}");
    let (code, out, _) = kb_index(&vault, &["search", "备份", "--json"]);
    assert_eq!(code, 0);
    let json: serde_json::Value = serde_json::from_str(&out).unwrap();
    assert!(json["titles_total"].as_u64().unwrap() > 0 && !json["results"].as_array().unwrap().is_empty());
    assert_eq!(kb_index(&vault, &["search", "qwertyzzz"]).0, 1, "nothing matched");
    assert_eq!(kb_index(&vault, &["status"]).0, 0, "fresh");
    std::fs::write(vault.join("z/new.md"), "# new\n").unwrap();
    assert_eq!(kb_index(&vault, &["status"]).0, 1, "stale index is a failed check");
    assert_eq!(kb_index(&vault, &["build", "--full"]).0, 0);
    assert_eq!(
        kb_index(&vault, &["search", "x", "--limit", "1001"]).0,
        2,
        "bad input: the CLI takes up to 1000"
    );
    assert_eq!(kb_index(&vault, &["frobnicate"]).0, 2, "bad usage");

    let (code, _, err) = kb_index(&tmp.path().join("missing"), &["build"]);
    assert_eq!(code, 2);
    assert!(err.contains("does not exist"), "{err}");

    std::fs::write(vault.join("kb.toml"), "[vault]\nnote = [\"z\"]\n").unwrap();
    let (code, _, err) = kb_index(&vault, &["build"]);
    assert_eq!(code, 2);
    assert!(err.contains("note"), "the message names the bad key: {err}");
}

/// Issue 18: the README's first command (the server on the fixture vault, here
/// on a copy of it) leaves an index and an inbox behind; the suite's
/// fixture-copying helper must copy none of it, so a person who ran the server
/// before `cargo test` gets the same test outcomes as a fresh clone.
#[test]
fn what_a_server_run_leaves_in_the_fixture_is_never_copied_into_a_test() {
    let run = tempfile::tempdir().unwrap();
    let vault = run.path().join("vault");
    common::copy_dir(&common::fixture_vault(), &vault);
    let own = common::fixture_files(&common::fixture_vault());
    assert!(own.iter().any(|f| f == "kb.toml") && own.iter().any(|f| f.starts_with("z/")), "{own:?}");

    // The server as the README starts it, at propose access so that it also
    // stages a proposal, driven over stdio by one search and one proposal.
    let mut server = common::raw_stdio_server(&vault, "propose", Stdio::null());
    let mut stdin = server.stdin.take().unwrap();
    let mut stdout = BufReader::new(server.stdout.take().unwrap());
    let mut send = |line: serde_json::Value| writeln!(stdin, "{line}").unwrap();
    send(serde_json::json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "t", "version": "0"}}}));
    send(serde_json::json!({"jsonrpc": "2.0", "method": "notifications/initialized"}));
    send(serde_json::json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {
        "name": "search_note_content", "arguments": {"query": "远程仓库"}}}));
    send(serde_json::json!({"jsonrpc": "2.0", "id": 3, "method": "tools/call", "params": {
        "name": "propose_new_note", "arguments": {"title": "Left behind", "body": "x", "reason": "test"}}}));
    let mut answered = 0;
    let mut line = String::new();
    while answered < 3 && stdout.read_line(&mut line).unwrap() > 0 {
        let reply: serde_json::Value = serde_json::from_str(&line).unwrap();
        if reply.get("id").is_some() {
            assert!(reply.get("result").is_some(), "{reply}");
            assert_ne!(reply["result"]["isError"], true, "{reply}");
            answered += 1;
        }
        line.clear();
    }
    assert_eq!(answered, 3, "the server answered every request");
    drop(stdin); // end of input: the server exits
    assert!(server.wait().unwrap().success());
    assert!(
        vault.join(".kb").is_dir() && vault.join("inbox/new").is_dir(),
        "the run left its index and inbox"
    );

    // What the helper copies from the used vault is the fixture's own files.
    assert_eq!(common::fixture_files(&vault), own);
    let copy = run.path().join("copy");
    common::copy_fixture(&vault, &copy);
    let copied: Vec<String> = common::snapshot(&copy).into_iter().map(|(path, _)| path).collect();
    assert_eq!(copied, own, "nothing the run left behind is copied");
    for left in [".kb", ".kb-history", "inbox", "Inbox"] {
        assert!(!copy.join(left).exists(), "{left} was copied");
    }
}
