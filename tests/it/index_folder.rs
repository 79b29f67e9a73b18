//! The index folder (issue 12, items 1, 5, 6, 7 and 14): kb-mcp deletes only
//! what it can prove it wrote, repairs a damaged index by itself, says a full
//! disk is full and recovers when space is back, keeps reading from an index
//! it cannot write, and never takes `/`, the home folder or any folder that
//! does not look like a vault for a vault.
//!
//! Full disks and read-only folders are real here, not simulated: the tests
//! run the binaries in a private mount namespace (`unshare -rm`) with a small
//! tmpfs or a read-only bind mount. Where the system allows no namespaces,
//! the read-only tests fall back to file modes when they bind this user (not
//! root), and otherwise print that they were skipped and why.

#![allow(
    clippy::disallowed_methods,
    clippy::disallowed_types,
    reason = "the tests build and inspect vaults on disk"
)]

use crate::common;

use std::fs;
use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

use kb_mcp::engine::types::SearchArgs;
use kb_mcp::engine::{Engine, EngineOptions};
use kb_mcp::error::ErrorCode;

const KB_INDEX: &str = env!("CARGO_BIN_EXE_kb-index");
const KB_MCP: &str = env!("CARGO_BIN_EXE_kb-mcp");

fn kb_index(args: &[&str]) -> Output {
    Command::new(KB_INDEX).args(args).env_remove("KB_VAULT").output().unwrap()
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

fn s(path: &Path) -> &str {
    path.to_str().unwrap()
}

fn write(path: &Path, content: &str) {
    fs::create_dir_all(path.parent().unwrap()).unwrap();
    fs::write(path, content).unwrap();
}

/// A vault whose top level holds only folders: 9 notes in `Notes/`, 9 in `Journal/`.
fn folders_only_vault(root: &Path) -> PathBuf {
    let vault = root.join("V");
    for i in 0..9 {
        write(&vault.join(format!("Notes/note {i}.md")), &format!("# Note {i}\n\nlighthouse keeper {i}\n"));
        write(&vault.join(format!("Journal/2026-01-0{}.md", i + 1)), &format!("# Day {i}\n"));
    }
    vault
}

fn open(vault: &Path, index_dir: Option<&Path>) -> kb_mcp::error::Result<Engine> {
    Engine::open(&EngineOptions { vault: vault.to_owned(), index_dir: index_dir.map(Path::to_owned) })
}

fn first_hit(engine: &Engine, query: &str) -> Option<String> {
    let args = SearchArgs { query: query.to_owned(), ..SearchArgs::default() };
    engine.search_knowledge(&args).unwrap().results.into_iter().next().map(|hit| hit.path)
}

// ---- item 1: never delete what kb-mcp did not create ----

#[test]
fn issue12_an_index_dir_that_is_the_vault_is_refused_and_no_note_is_lost() {
    let tmp = tempfile::tempdir().unwrap();
    let vault = folders_only_vault(tmp.path());
    let before = common::snapshot(&vault);
    let built = kb_index(&["build", "--vault", s(&vault), "--index-dir", s(&vault)]);
    assert_eq!(built.status.code(), Some(2), "{}", text(&built.stderr));
    let message = text(&built.stderr);
    assert!(message.contains("is the vault itself") && message.contains("--index-dir"), "{message}");
    // As left by an older version: an index inside the vault whose meta.json is unreadable.
    write(&vault.join("meta.json"), "not json");
    for args in [vec!["status"], vec!["search", "lighthouse"], vec!["build", "--full"]] {
        let mut all = args.clone();
        all.extend(["--vault", s(&vault), "--index-dir", s(&vault)]);
        let out = kb_index(&all);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {}", text(&out.stderr));
    }
    fs::remove_file(vault.join("meta.json")).unwrap();
    assert_eq!(common::snapshot(&vault), before, "no note may be touched");
}

#[cfg(unix)]
#[test]
fn issue12_a_kb_symlink_to_an_outside_folder_is_refused_and_never_followed() {
    let tmp = tempfile::tempdir().unwrap();
    let vault = folders_only_vault(tmp.path());
    let outside = tmp.path().join("outside");
    write(&outside.join("meta.json"), "{ garbled");
    write(&outside.join("keep.txt"), "precious");
    write(&outside.join("sub/deep.txt"), "precious too");
    std::os::unix::fs::symlink(&outside, vault.join(".kb")).unwrap();
    let before = common::snapshot(&outside);
    let out = kb_index(&["search", "lighthouse", "--vault", s(&vault)]);
    assert_eq!(out.status.code(), Some(2), "{}", text(&out.stderr));
    assert!(text(&out.stderr).contains("symbolic link"), "{}", text(&out.stderr));
    let error = open(&vault, None).unwrap_err();
    assert_eq!(error.code, ErrorCode::InvalidArgument, "{error}");
    assert_eq!(common::snapshot(&outside), before);
}

#[test]
fn issue12_an_index_dir_holding_other_files_is_refused_and_left_alone() {
    let tmp = tempfile::tempdir().unwrap();
    let vault = folders_only_vault(tmp.path());
    let outside = tmp.path().join("Pictures");
    write(&outside.join("meta.json"), "\u{0}\u{1} unreadable");
    write(&outside.join("holiday.jpg"), "jpeg bytes");
    write(&outside.join("2025/beach.jpg"), "more bytes");
    let before = common::snapshot(&outside);
    for args in [vec!["search", "lighthouse"], vec!["build"], vec!["status"]] {
        let mut all = args.clone();
        all.extend(["--vault", s(&vault), "--index-dir", s(&outside)]);
        let out = kb_index(&all);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {}", text(&out.stderr));
        let message = text(&out.stderr);
        assert!(message.contains("Pictures") && message.contains("not kb-mcp's index"), "{message}");
        assert!(message.contains("--index-dir"), "the error says what to pass instead: {message}");
    }
    assert_eq!(common::snapshot(&outside), before);
}

#[test]
fn issue12_an_index_dir_inside_a_readable_area_or_a_file_is_refused() {
    let (_tmp, vault) = common::temp_vault();
    // The fixture's kb.toml: notes z, standards docs, read_also refs, inbox inbox.
    for inside in ["z/index", "docs/index", "refs/index", "inbox/index", "z"] {
        let dir = vault.join(inside);
        let error = open(&vault, Some(&dir)).unwrap_err();
        assert_eq!(error.code, ErrorCode::InvalidArgument, "{inside}: {error}");
        assert!(
            error.message.contains("inside") || error.message.contains("not kb-mcp's"),
            "{inside}: {error}"
        );
        assert!(!vault.join("z/index").exists() && !vault.join("docs/index").exists());
    }
    let file = vault.join("z/卡片笔记法.md");
    let error = open(&vault, Some(&file)).unwrap_err();
    assert_eq!(error.code, ErrorCode::InvalidArgument);
    assert!(error.message.contains("is a file"), "{error}");
    // Outside the readable areas (a hidden folder of the vault, or elsewhere) is fine.
    let engine = open(&vault, Some(&vault.join(".cache/kb"))).unwrap();
    assert!(engine.index_location().dir.join(kb_mcp::sandbox::INDEX_MARKER).is_file());
}

#[test]
fn issue12_a_rebuild_deletes_only_the_index_files_of_a_marked_folder() {
    let (tmp, vault) = common::temp_vault();
    let index = tmp.path().join("index");
    let engine = open(&vault, Some(&index)).unwrap();
    engine.sync(false, None).unwrap();
    drop(engine);
    assert!(index.join(kb_mcp::sandbox::INDEX_MARKER).is_file(), "the marker is written with the index");
    // Another schema version: rebuilt, the marker kept.
    let meta = fs::read_to_string(index.join("meta.json")).unwrap();
    let bumped = meta.replace("\\\"schema_version\\\":", "\\\"schema_version\\\":9");
    assert_ne!(meta, bumped, "meta.json records the schema version in its payload");
    fs::write(index.join("meta.json"), bumped).unwrap();
    let engine = open(&vault, Some(&index)).unwrap();
    let why = engine.index_location().repaired.expect("the index was rebuilt");
    assert!(why.contains("schema version"), "{why}");
    engine.sync(false, None).unwrap();
    assert_eq!(first_hit(&engine, "备份仓库").as_deref(), Some("z/备份仓库.md"));
    drop(engine);
    assert!(index.join(kb_mcp::sandbox::INDEX_MARKER).is_file());
    // A file that is not the index's, then damage: refused, nothing deleted.
    write(&index.join("notes.txt"), "mine");
    fs::write(index.join("meta.json"), "garbage").unwrap();
    let before = common::snapshot(&index);
    let error = open(&vault, Some(&index)).unwrap_err();
    assert_eq!(error.code, ErrorCode::InvalidArgument, "{error}");
    assert!(error.message.contains("notes.txt"), "{error}");
    assert_eq!(common::snapshot(&index), before);
    // No marker (not the vault's own .kb): a damaged index there is not deleted either.
    fs::remove_file(index.join("notes.txt")).unwrap();
    fs::remove_file(index.join(kb_mcp::sandbox::INDEX_MARKER)).unwrap();
    let before = common::snapshot(&index);
    let error = open(&vault, Some(&index)).unwrap_err();
    assert_eq!(error.code, ErrorCode::IndexUnavailable, "{error}");
    assert!(error.message.contains("cannot prove"), "{error}");
    assert_eq!(common::snapshot(&index), before);
}

// ---- item 5: a damaged index is rebuilt by itself ----

/// The first segment file with this extension in an index folder.
fn segment_file(index: &Path, extension: &str) -> PathBuf {
    let mut found: Vec<PathBuf> = fs::read_dir(index)
        .unwrap()
        .map(|entry| entry.unwrap().path())
        .filter(|path| path.to_string_lossy().ends_with(extension))
        .collect();
    found.sort();
    found.into_iter().next().unwrap_or_else(|| panic!("no {extension} file in {}", index.display()))
}

fn truncate_half(path: &Path) {
    let bytes = fs::read(path).unwrap();
    fs::write(path, &bytes[..bytes.len() / 2]).unwrap();
}

fn garble(path: &Path) {
    let mut bytes = fs::read(path).unwrap();
    let len = bytes.len();
    for byte in &mut bytes[len / 4..len] {
        *byte = 0xA5;
    }
    fs::write(path, bytes).unwrap();
}

#[test]
fn issue12_a_damaged_index_is_rebuilt_on_open() {
    type Damage = fn(&Path);
    let cases: [(&str, Damage); 10] = [
        ("meta.json missing, segments present", |i| fs::remove_file(i.join("meta.json")).unwrap()),
        ("meta.json truncated", |i| truncate_half(&i.join("meta.json"))),
        ("meta.json garbled", |i| garble(&i.join("meta.json"))),
        ("meta.json empty", |i| fs::write(i.join("meta.json"), "").unwrap()),
        ("a store file missing", |i| fs::remove_file(segment_file(i, ".store")).unwrap()),
        ("a store file truncated", |i| truncate_half(&segment_file(i, ".store"))),
        ("a store file garbled", |i| garble(&segment_file(i, ".store"))),
        ("a term dictionary truncated", |i| truncate_half(&segment_file(i, ".term"))),
        ("a postings file missing", |i| fs::remove_file(segment_file(i, ".idx")).unwrap()),
        ("a fast-field file garbled", |i| garble(&segment_file(i, ".fast"))),
    ];
    for (case, damage) in cases {
        let (_tmp, vault) = common::temp_vault();
        let engine = open(&vault, None).unwrap();
        engine.sync(false, None).unwrap();
        let notes = engine.record_count();
        drop(engine);
        let index = vault.join(".kb");
        damage(&index);
        let engine =
            open(&vault, None).unwrap_or_else(|e| panic!("{case}: the damaged index was not repaired: {e}"));
        let why = engine.index_location().repaired.unwrap_or_else(|| panic!("{case}: no reason was given"));
        assert!(!why.is_empty(), "{case}");
        engine.sync(false, None).unwrap();
        assert_eq!(engine.record_count(), notes, "{case}");
        assert_eq!(first_hit(&engine, "备份仓库").as_deref(), Some("z/备份仓库.md"), "{case}");
        assert!(index.join(kb_mcp::sandbox::INDEX_MARKER).is_file(), "{case}");
    }
}

#[test]
fn issue12_build_full_always_works_on_a_damaged_index() {
    let (_tmp, vault) = common::temp_vault();
    assert!(kb_index(&["build", "--vault", s(&vault)]).status.success());
    let index = vault.join(".kb");
    truncate_half(&segment_file(&index, ".store"));
    fs::write(index.join("meta.json"), "{").unwrap();
    let out = kb_index(&["build", "--full", "--vault", s(&vault)]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let said = text(&out.stderr);
    assert_eq!(
        said.lines().filter(|l| l.contains("rebuilding the index")).count(),
        1,
        "one line says why: {said}"
    );
    let out = kb_index(&["search", "备份仓库", "--vault", s(&vault)]);
    assert!(out.status.success() && text(&out.stdout).contains("z/备份仓库.md"), "{}", text(&out.stderr));
}

// ---- items 6 and 7: real full disks and read-only folders ----

/// Runs `script` (sh, with `$1`… from `args`) in a private mount namespace
/// where it may mount; `None` when this system allows no such namespace.
fn in_namespace(script: &str, args: &[&str], envs: &[(&str, &Path)]) -> Option<Output> {
    let probe = Command::new("unshare").args(["-rm", "true"]).output().ok()?;
    if !probe.status.success() {
        return None;
    }
    let mut command = Command::new("unshare");
    command.args(["-rm", "sh", "-c", script, "sh"]).args(args).env_remove("KB_VAULT");
    for (key, value) in envs {
        command.env(key, value);
    }
    Some(command.output().unwrap())
}

fn skipped(test: &str, why: &str) {
    eprintln!("SKIPPED {test}: {why}");
}

#[test]
fn issue12_a_full_disk_is_reported_as_a_full_disk() {
    let tmp = tempfile::tempdir().unwrap();
    let vault = folders_only_vault(tmp.path());
    let disk = tmp.path().join("disk");
    fs::create_dir(&disk).unwrap();
    let script = "mount -t tmpfs -o size=64k tmpfs \"$1\" || exit 99
        dd if=/dev/zero of=\"$1/filler\" bs=4k 2>/dev/null
        exec \"$2\" build --vault \"$3\" --index-dir \"$1/index\"";
    let Some(out) = in_namespace(script, &[s(&disk), KB_INDEX, s(&vault)], &[]) else {
        return skipped("full disk", "no private mount namespace (unshare -rm) on this system");
    };
    if out.status.code() == Some(99) {
        return skipped("full disk", "tmpfs cannot be mounted in a private namespace here");
    }
    let message = text(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{message}");
    assert!(message.contains("is full") && message.contains("disk/index"), "{message}");
    assert!(!message.contains("meta.json does not exist"), "{message}");
}

/// A line-by-line JSON-RPC conversation with a server.
struct Rpc {
    child: std::process::Child,
    lines: BufReader<std::process::ChildStdout>,
    next_id: u64,
}

impl Rpc {
    fn call(&mut self, method: &str, params: serde_json::Value) -> serde_json::Value {
        self.next_id += 1;
        let id = self.next_id;
        let request = serde_json::json!({ "jsonrpc": "2.0", "id": id, "method": method, "params": params });
        let stdin = self.child.stdin.as_mut().unwrap();
        writeln!(stdin, "{request}").unwrap();
        stdin.flush().unwrap();
        loop {
            let mut line = String::new();
            assert!(self.lines.read_line(&mut line).unwrap() > 0, "the server closed stdout");
            let message: serde_json::Value = serde_json::from_str(&line).unwrap();
            if message["id"] == id {
                return message;
            }
        }
    }

    fn notify(&mut self, method: &str) {
        let stdin = self.child.stdin.as_mut().unwrap();
        writeln!(stdin, "{}", serde_json::json!({ "jsonrpc": "2.0", "method": method })).unwrap();
    }
}

#[test]
fn issue12_the_server_recovers_from_a_full_disk_without_a_restart() {
    let tmp = tempfile::tempdir().unwrap();
    let vault = folders_only_vault(tmp.path());
    let disk = tmp.path().join("disk");
    fs::create_dir(&disk).unwrap();
    if in_namespace("mount -t tmpfs -o size=64k tmpfs \"$1\"", &[s(&disk)], &[])
        .is_none_or(|o| !o.status.success())
    {
        return skipped("server full disk", "tmpfs cannot be mounted in a private namespace here");
    }
    let script = "mount -t tmpfs -o size=256k tmpfs \"$1\" || exit 99
        dd if=/dev/zero of=\"$1/filler\" bs=4k 2>/dev/null
        exec \"$2\" --vault \"$3\" --index-dir \"$1/index\"";
    let mut child = Command::new("unshare")
        .args(["-rm", "sh", "-c", script, "sh", s(&disk), KB_MCP, s(&vault)])
        .env_remove("KB_VAULT")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let pid = child.id();
    let lines = BufReader::new(child.stdout.take().unwrap());
    let mut rpc = Rpc { child, lines, next_id: 0 };
    let init = serde_json::json!({ "protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": { "name": "t", "version": "1" } });
    rpc.call("initialize", init);
    rpc.notify("notifications/initialized");
    let overview = serde_json::json!({ "name": "get_vault_overview", "arguments": {} });
    let failed = rpc.call("tools/call", overview.clone());
    assert_eq!(failed["result"]["isError"], true, "{failed}");
    let said = common::tool_error(&failed["result"])["message"].as_str().unwrap_or_default().to_owned();
    assert!(said.contains("is full"), "{failed}");
    // Space comes back: the filler is removed through the server's own view of the mounts.
    fs::remove_file(format!("/proc/{pid}/root{}/filler", disk.display())).unwrap();
    let served = rpc.call("tools/call", overview);
    assert_ne!(served["result"]["isError"], true, "{served}");
    assert_eq!(served["result"]["structuredContent"]["counts"]["notes"], 18, "{served}");
    let _ = rpc.child.kill();
    let _ = rpc.child.wait();
}

/// Whether file modes stop this process (they do not for root).
fn modes_bind_us(tmp: &Path) -> bool {
    use std::os::unix::fs::PermissionsExt;
    let dir = tmp.join("mode-probe");
    fs::create_dir(&dir).unwrap();
    fs::set_permissions(&dir, fs::Permissions::from_mode(0o555)).unwrap();
    let bound = fs::write(dir.join("x"), "x").is_err();
    fs::set_permissions(&dir, fs::Permissions::from_mode(0o755)).unwrap();
    bound
}

/// Runs kb-index commands (one per line of `commands`, `$V`, `$I` and `$K`
/// standing for the vault, the index folder and the binary) with `read_only`
/// made unwritable. `None` when that cannot be done honestly here.
fn with_read_only(
    tmp: &Path,
    read_only: &Path,
    vault: &Path,
    index: &Path,
    cache: &Path,
    commands: &str,
) -> Option<Output> {
    let script =
        format!("V=\"$2\"; I=\"$3\"; K=\"$4\"; mount --bind -o ro \"$1\" \"$1\" || exit 99\n{commands}");
    let envs = [("XDG_CACHE_HOME", cache)];
    if let Some(out) = in_namespace(&script, &[s(read_only), s(vault), s(index), KB_INDEX], &envs)
        && out.status.code() != Some(99)
    {
        return Some(out);
    }
    if !modes_bind_us(tmp) {
        use std::os::unix::fs::PermissionsExt;
        fs::set_permissions(read_only, fs::Permissions::from_mode(0o555)).unwrap();
        let script = format!("V=\"$1\"; I=\"$2\"; K=\"$3\"\n{commands}");
        let out = Command::new("sh")
            .args(["-c", &script, "sh", s(vault), s(index), KB_INDEX])
            .env("XDG_CACHE_HOME", cache)
            .env_remove("KB_VAULT")
            .output()
            .unwrap();
        fs::set_permissions(read_only, fs::Permissions::from_mode(0o755)).unwrap();
        return Some(out);
    }
    None
}

#[cfg(unix)]
#[test]
fn issue12_reads_keep_working_from_an_index_folder_that_cannot_be_written() {
    let tmp = tempfile::tempdir().unwrap();
    let vault = folders_only_vault(tmp.path());
    let index = tmp.path().join("index");
    assert!(kb_index(&["build", "--vault", s(&vault), "--index-dir", s(&index)]).status.success());
    write(&vault.join("Notes/new.md"), "# New\n");
    let commands = "\"$K\" search Note --vault \"$V\" --index-dir \"$I\" || exit 10
        \"$K\" status --vault \"$V\" --index-dir \"$I\"; echo \"status=$?\"";
    let Some(out) = with_read_only(tmp.path(), &index, &vault, &index, &tmp.path().join("cache"), commands)
    else {
        return skipped(
            "read-only index",
            "neither a read-only bind mount nor file modes can stop this user",
        );
    };
    let (stdout, stderr) = (text(&out.stdout), text(&out.stderr));
    assert!(out.status.success(), "{stdout}{stderr}");
    assert!(stdout.contains("Notes/note"), "the search answered from the index: {stdout}{stderr}");
    assert!(stdout.contains("cannot be written") && stdout.contains("fresh      no"), "{stdout}");
    assert!(stdout.contains("status=1"), "stale is reported: {stdout}");
}

#[cfg(unix)]
#[test]
fn issue12_a_vault_that_cannot_hold_kb_uses_the_cache_folder() {
    let tmp = tempfile::tempdir().unwrap();
    let vault = folders_only_vault(tmp.path());
    let cache = tmp.path().join("cache");
    let commands = "\"$K\" build --vault \"$V\" || exit 10
        \"$K\" status --vault \"$V\" || exit 11
        \"$K\" search Note --vault \"$V\" || exit 12";
    let unused = tmp.path().join("unused");
    let Some(out) = with_read_only(tmp.path(), &vault, &vault, &unused, &cache, commands) else {
        return skipped(
            "read-only vault",
            "neither a read-only bind mount nor file modes can stop this user",
        );
    };
    let (stdout, stderr) = (text(&out.stdout), text(&out.stderr));
    assert!(out.status.success(), "{stdout}{stderr}");
    assert!(!vault.join(".kb").exists());
    let cached = cache.join("kb-mcp");
    assert!(stderr.contains(s(&cached)) && stderr.contains("cannot hold"), "said in the log: {stderr}");
    assert!(stdout.contains(s(&cached)) && stdout.contains("cache folder"), "said by status: {stdout}");
    assert!(stdout.contains("Notes/note"), "{stdout}");
    let entries: Vec<_> = fs::read_dir(&cached).unwrap().collect();
    assert_eq!(entries.len(), 1, "one folder per vault");
}

// ---- item 14: the vault when none is given ----

#[test]
fn issue12_no_vault_uses_the_current_folder_only_when_it_looks_like_a_vault() {
    let tmp = tempfile::tempdir().unwrap();
    let run = |bin: &str, dir: &Path, home: &Path, args: &[&str]| {
        Command::new(bin)
            .args(args)
            .current_dir(dir)
            .env_remove("KB_VAULT")
            .env("HOME", home)
            .stdin(Stdio::null())
            .output()
            .unwrap()
    };
    let home = tmp.path().join("home");
    write(&home.join("todo.md"), "# a note in the home folder\n");
    let empty = tmp.path().join("empty");
    fs::create_dir(&empty).unwrap();
    let cases: [(&Path, &str); 3] = [
        (Path::new("/"), "root of the file system"),
        (&home, "home folder"),
        (&empty, "does not look like a vault"),
    ];
    for (dir, why) in cases {
        for (bin, args) in [(KB_INDEX, &["build"][..]), (KB_INDEX, &["status"][..]), (KB_MCP, &[][..])] {
            let out = run(bin, dir, &home, args);
            let message = text(&out.stderr);
            assert_eq!(out.status.code(), Some(2), "{bin} {args:?} in {}: {message}", dir.display());
            assert!(message.contains(why) && message.contains("--vault"), "{message}");
        }
    }
    assert!(!empty.join(".kb").exists() && !home.join(".kb").exists());
    // A folder that looks like a vault: `.obsidian/`, `kb.toml`, or Markdown a level down.
    let obsidian = tmp.path().join("obsidian");
    fs::create_dir_all(obsidian.join(".obsidian")).unwrap();
    write(&obsidian.join("Notes/a.md"), "# A\n");
    let nested = folders_only_vault(&tmp.path().join("nested"));
    for dir in [&obsidian, &nested] {
        let out = run(KB_INDEX, dir, &home, &["build"]);
        assert!(out.status.success(), "{}: {}", dir.display(), text(&out.stderr));
    }
}

#[test]
fn issue12_status_creates_nothing() {
    let tmp = tempfile::tempdir().unwrap();
    let vault = folders_only_vault(tmp.path());
    let out = kb_index(&["status", "--vault", s(&vault)]);
    assert_eq!(out.status.code(), Some(1), "not fresh: {}", text(&out.stderr));
    assert!(text(&out.stdout).contains("no index yet"), "{}", text(&out.stdout));
    assert!(!vault.join(".kb").exists(), "status created the index folder");
    let elsewhere = tmp.path().join("idx");
    kb_index(&["status", "--vault", s(&vault), "--index-dir", s(&elsewhere)]);
    assert!(!elsewhere.exists());
}

#[test]
fn issue12_a_vault_with_no_notes_is_a_warning_that_says_why() {
    let tmp = tempfile::tempdir().unwrap();
    let vault = folders_only_vault(tmp.path());
    write(&vault.join("kb.toml"), "[vault]\nnotes = [\"Zettel\"]\n");
    let out = kb_index(&["build", "--vault", s(&vault)]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let message = text(&out.stderr);
    assert!(
        message.contains("warning") && message.contains("`Zettel`") && message.contains("does not exist"),
        "{message}"
    );
    let empty = tmp.path().join("empty");
    fs::create_dir(&empty).unwrap();
    let out = kb_index(&["build", "--vault", s(&empty)]);
    assert!(out.status.success());
    assert!(text(&out.stderr).contains("holds no Markdown"), "{}", text(&out.stderr));
}
