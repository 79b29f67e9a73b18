//! Shared helpers for the integration tests: temp copies of the fixture vault.

#![allow(dead_code, unreachable_pub)]

use std::path::{Path, PathBuf};

/// The repository's fixture vault.
pub fn fixture_vault() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures/vault")
}

/// Copies a folder recursively (files and folders only).
pub fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for entry in std::fs::read_dir(from).unwrap() {
        let entry = entry.unwrap();
        let target = to.join(entry.file_name());
        let kind = entry.file_type().unwrap();
        if kind.is_dir() {
            copy_dir(&entry.path(), &target);
        } else if kind.is_file() {
            std::fs::copy(entry.path(), &target).unwrap();
        }
    }
}

/// What a run of kb-mcp or kb-index leaves in a vault and a test must never
/// start from: the index folder, the inbox (proposals, the apply lock, the
/// audit log) and the lock file, compared case-insensitively at the top level
/// (on macOS and Windows `Inbox` is `inbox`).
pub const RUN_LEFTOVERS: [&str; 4] = [".kb", ".kb-history", "inbox", "_apply.lock"];

/// The fixture's own files below `from`, as vault-relative paths, sorted: every
/// file but what a run leaves behind ([`RUN_LEFTOVERS`]) and, in a git
/// checkout, what git ignores. A person who ran the README's server command on
/// `fixtures/vault` before `cargo test` thus cannot change what a test starts
/// from (issue 18).
pub fn fixture_files(from: &Path) -> Vec<String> {
    let mut files = Vec::new();
    for entry in walkdir::WalkDir::new(from).sort_by_file_name().into_iter().filter_entry(|entry| {
        entry.depth() != 1
            || !RUN_LEFTOVERS
                .iter()
                .any(|left| entry.file_name().to_string_lossy().eq_ignore_ascii_case(left))
    }) {
        let entry = entry.unwrap();
        if entry.file_type().is_file() {
            let rel = entry.path().strip_prefix(from).unwrap().to_string_lossy().replace('\\', "/");
            files.push(rel);
        }
    }
    if let Some(ignored) = git_ignored(from) {
        files.retain(|file| !ignored.contains(file));
    }
    files
}

/// The files below `dir` that git ignores, as paths relative to `dir`; `None`
/// outside a git checkout or without git.
fn git_ignored(dir: &Path) -> Option<Vec<String>> {
    let output = std::process::Command::new("git")
        .args(["ls-files", "--others", "--ignored", "--exclude-standard", "-z", "."])
        .current_dir(dir)
        .stderr(std::process::Stdio::null())
        .output()
        .ok()?;
    if !output.status.success() {
        return None;
    }
    Some(
        output
            .stdout
            .split(|byte| *byte == 0)
            .filter(|path| !path.is_empty())
            .map(|path| String::from_utf8_lossy(path).into_owned())
            .collect(),
    )
}

/// Copies the fixture's own files ([`fixture_files`]) from `from` to `to`.
pub fn copy_fixture(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for file in fixture_files(from) {
        let target = to.join(&file);
        std::fs::create_dir_all(target.parent().unwrap()).unwrap();
        std::fs::copy(from.join(&file), &target).unwrap();
    }
}

/// A temp folder holding a fresh copy of the fixture vault at `<tmp>/vault`
/// (its own files only: see [`fixture_files`]).
pub fn temp_vault() -> (tempfile::TempDir, PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    let vault = dir.path().join("vault");
    copy_fixture(&fixture_vault(), &vault);
    (dir, vault)
}

/// Turns the semantic layer off in the vault's `kb.toml`: for tests that
/// measure a server's memory around one request, which the embedding model
/// (about 100 MiB, loaded in the background at start) would blur.
pub fn without_semantic(vault: &Path) {
    let path = vault.join("kb.toml");
    let mut text = std::fs::read_to_string(&path).unwrap_or_default();
    text.push_str("\n[semantic]\nenabled = false\n");
    std::fs::write(path, text).unwrap();
}

/// Every file under a folder with its bytes, for "nothing changed" checks.
pub fn snapshot(dir: &Path) -> Vec<(String, Vec<u8>)> {
    let mut out = Vec::new();
    for entry in walkdir::WalkDir::new(dir).sort_by_file_name() {
        let entry = entry.unwrap();
        if entry.file_type().is_file() {
            let rel = entry.path().strip_prefix(dir).unwrap().to_string_lossy().replace('\\', "/");
            // kb-mcp's own folders: the index and (for a vault that is no git
            // repository) the history.
            if !rel.starts_with(".kb/") && !rel.starts_with(".kb-history/") {
                out.push((rel, std::fs::read(entry.path()).unwrap()));
            }
        }
    }
    out
}

/// A temp folder holding a fresh copy of `fixtures/person-vault` (a vault as a
/// person keeps it: no `kb.toml`, an `Inbox/` of their own, Obsidian's
/// `Templates/` named in `.obsidian/templates.json`, an Excalidraw drawing) at
/// `<tmp>/vault`.
pub fn temp_person_vault() -> (tempfile::TempDir, PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    let vault = dir.path().join("vault");
    copy_dir(&Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures/person-vault"), &vault);
    (dir, vault)
}

/// A person vault with two things that cannot be served as notes, made at test
/// time: `Daily/旧笔记.md` saved in GBK (not UTF-8) and `Shared`, a symlink to a
/// folder of another vault (a common multi-vault setup).
#[cfg(unix)]
pub fn person_vault_with_exclusions() -> (tempfile::TempDir, std::path::PathBuf) {
    let (tmp, vault) = temp_person_vault();
    // A note whose title 旧笔记 is written in GBK.
    let mut gbk = b"---\ntags: [daily, legacy]\n---\n# ".to_vec();
    gbk.extend_from_slice(&[0xBE, 0xC9, 0xB1, 0xCA, 0xBC, 0xC7, b'\n']);
    std::fs::write(vault.join("Daily/旧笔记.md"), gbk).unwrap();
    let other = tmp.path().join("other-vault/Shared");
    std::fs::create_dir_all(&other).unwrap();
    std::fs::write(other.join("Shared note.md"), "# Shared note\n\nlives in another vault\n").unwrap();
    std::os::unix::fs::symlink(&other, vault.join("Shared")).unwrap();
    (tmp, vault)
}

/// The real `kb-mcp` binary on `vault` at `access`, for tests that write raw
/// JSON-RPC lines to its stdin and read its stdout themselves.
pub fn raw_stdio_server(vault: &Path, access: &str, stderr: std::process::Stdio) -> std::process::Child {
    std::process::Command::new(env!("CARGO_BIN_EXE_kb-mcp"))
        .args(["--access", access, "--vault"])
        .arg(vault)
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(stderr)
        .spawn()
        .unwrap()
}

/// How long a raw-stdio test waits for one answer: far beyond any answer's
/// time, so running out means none came (a hang), never a slow machine.
pub const NO_ANSWER: std::time::Duration = std::time::Duration::from_secs(60);

/// The real `kb-mcp` on stdio driven by raw lines, for tests that send what no
/// client library would (ids in flight twice, lines over the size limit, stdin
/// closed mid-call): stdout is read line by line on a thread, so a test waits
/// for each answer with [`NO_ANSWER`] as its bound, and stderr is kept for the end.
pub struct RawStdio {
    child: std::process::Child,
    stdin: Option<std::process::ChildStdin>,
    lines: std::sync::mpsc::Receiver<String>,
    stderr: Option<std::thread::JoinHandle<String>>,
}

impl RawStdio {
    /// Starts the server on `vault` at `access` and opens a session for a
    /// client declaring `capabilities` (initialize, then initialized).
    pub fn start(vault: &Path, access: &str, capabilities: serde_json::Value) -> RawStdio {
        use std::io::{BufRead, Read};
        let mut child = raw_stdio_server(vault, access, std::process::Stdio::piped());
        let stdin = child.stdin.take();
        let stdout = child.stdout.take().unwrap();
        let (sender, lines) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            for line in std::io::BufReader::new(stdout).lines().map_while(Result::ok) {
                if sender.send(line).is_err() {
                    break;
                }
            }
        });
        let mut stderr = child.stderr.take().unwrap();
        let stderr = std::thread::spawn(move || {
            let mut log = String::new();
            let _ = stderr.read_to_string(&mut log);
            log
        });
        let mut server = RawStdio { child, stdin, lines, stderr: Some(stderr) };
        let init = serde_json::json!({"jsonrpc": "2.0", "id": "init", "method": "initialize", "params": {
            "protocolVersion": "2025-11-25", "capabilities": capabilities,
            "clientInfo": {"name": "raw", "version": "0"}}});
        server.send(&init.to_string());
        let answer = server.next();
        assert!(answer["result"]["serverInfo"].is_object(), "initialize: {answer}");
        server.send(r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#);
        server
    }

    /// The server's process id.
    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// Writes one line (a newline is added) and flushes it.
    pub fn send(&mut self, line: &str) {
        use std::io::Write;
        let stdin = self.stdin.as_mut().expect("stdin is still open");
        stdin.write_all(line.as_bytes()).unwrap();
        stdin.write_all(b"\n").unwrap();
        stdin.flush().unwrap();
    }

    /// The next line the server writes, as written; fails after [`NO_ANSWER`].
    pub fn next_line(&self) -> String {
        self.lines.recv_timeout(NO_ANSWER).expect("no line from the server: a request went unanswered")
    }

    /// The next message the server writes.
    pub fn next(&self) -> serde_json::Value {
        let line = self.next_line();
        serde_json::from_str(&line).unwrap_or_else(|e| panic!("stdout line is not JSON ({e}): {line}"))
    }

    /// Closes stdin, as a client ending the session does.
    pub fn close_stdin(&mut self) {
        self.stdin = None;
    }

    /// Closes stdin, waits for a clean exit, and returns the lines written
    /// since the last one read, and the log.
    pub fn finish(mut self) -> (Vec<String>, String) {
        self.close_stdin();
        let deadline = std::time::Instant::now() + NO_ANSWER;
        let status = loop {
            if let Some(status) = self.child.try_wait().unwrap() {
                break status;
            }
            assert!(std::time::Instant::now() < deadline, "the server did not exit after stdin closed");
            std::thread::sleep(std::time::Duration::from_millis(20));
        };
        let rest: Vec<String> = self.lines.iter().collect();
        let log = self.stderr.take().unwrap().join().unwrap();
        assert!(status.success(), "exit status {status}: {log}");
        (rest, log)
    }
}

impl Drop for RawStdio {
    fn drop(&mut self) {
        if matches!(self.child.try_wait(), Ok(None)) {
            let _ = self.child.kill();
            let _ = self.child.wait();
        }
    }
}

/// Keeps a test file's list of `#[cfg(unix)]` parts complete (one entry per
/// marker in `source`, the file's own text) and, off Unix, names each skipped
/// part in the test output so that a green run there does not hide what it left out.
pub fn check_unix_only(file: &str, source: &str, unix_only: &[&str]) {
    let marker = concat!("#[cfg(", "unix)]");
    let count = source.matches(marker).count();
    assert_eq!(count, unix_only.len(), "list every {marker} of {file} in UNIX_ONLY");
    if !cfg!(unix) {
        for part in unix_only {
            eprintln!("SKIPPED (not Unix): {part}");
        }
    }
}

/// Issue 15: a vault built to hold one of every problem `audit_vault` looks for
/// (and decoys it must not report: a Latin title inside a longer word, a title
/// inside inline and fenced code, a Chinese title inside a link).
pub fn messy_vault() -> (tempfile::TempDir, std::path::PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    let vault = dir.path().join("vault");
    let files: &[(&str, &str)] = &[
        (
            "kb.toml",
            "[vault]\nnotes = [\"z\"]\nstandards = [\"docs\"]\n[tags]\nregistry = \"docs/tags.md\"\n\
             [limits]\nread_max_bytes = 1000\n\
             [lint]\nrequired = [\"tags\"]\ntypes = { created = \"date\", status = [\"draft\", \"done\"] }\n\
             [lint.folders.\"z/daily\"]\nrequired = [\"created\"]\n",
        ),
        ("docs/tags.md", "# Tags\n\n- #git\n- #type/synthesis\n- #backup\n- #moc\n"),
        (
            "z/备份仓库.md",
            "---\ntags: [backup]\n---\n# 备份仓库\n\n## 同步不等于备份\n同步会把删除也同步过去。[[Git 远程仓库#推送]]\n",
        ),
        (
            "z/Git 远程仓库.md",
            "---\ntags: [git]\ncreated: 2026-03-01\n---\n# Git 远程仓库\n\n## 推送\n推送之前先做快照：[[备份仓库#同步不等与备份]]\n\n先读 [[Setup]]。\n",
        ),
        (
            "z/daily/2026-03-02.md",
            "---\ntags: [daily]\n---\n今天整理了备份仓库的目录。\n\n[[Git 远程仓库]]\n",
        ),
        ("z/Rust.md", "---\ntags: [synthesis]\nstatus: wip\n---\n# Rust\n\nA language.\n"),
        (
            "z/Trusty.md",
            "# Trusty\n\nTrusty rusty tools, #gitt and `Rust` in code.\n\n```\nRust\n```\n\nLearning Rust is fun. [[备份仓库]]\n",
        ),
        ("z/孤立笔记.md", "---\ntags: [backup]\n---\n孤零零。\n"),
        (
            "z/Backup MOC.md",
            "---\ntags: [moc, backup]\n---\n# Backup MOC\n\n- [[备份仓库]]\n- [[备份仓]]\n- [[Nonexistent thing]]\n",
        ),
        ("z/a/Setup.md", "---\ntags: [git]\n---\n# Setup\n"),
        ("z/b/Setup.md", "---\ntags: [git]\n---\n# Setup\n\nSee [[Rust]].\n"),
    ];
    for (path, text) in files {
        let file = vault.join(path);
        std::fs::create_dir_all(file.parent().unwrap()).unwrap();
        std::fs::write(file, text).unwrap();
    }
    let big = format!(
        "---\ntags: [git]\n---\n# Large note\n\n[[Rust#^nope]]\n\n{}\n",
        "lorem ipsum dolor sit amet. ".repeat(50)
    );
    std::fs::write(vault.join("z/Large note.md"), big).unwrap();
    std::fs::write(vault.join("z/bad.md"), b"caf\xe9 latin-1\n").unwrap();
    (dir, vault)
}

/// The error object of a tool's error result, given as JSON (`{"isError": true,
/// "content": [{"type": "text", "text": "{\"error\": {…}}"}]}`), as the contract
/// has it: the JSON in the text content and no `structuredContent` (the TypeScript
/// SDK 1.x checks any structured content against the tool's output schema).
pub fn tool_error(result: &serde_json::Value) -> serde_json::Value {
    assert_eq!(result["isError"], true, "expected an error result: {result}");
    assert!(result.get("structuredContent").is_none(), "an error carries no structuredContent: {result}");
    let text = result["content"][0]["text"].as_str().unwrap_or_else(|| panic!("no text content: {result}"));
    let mut parsed: serde_json::Value =
        serde_json::from_str(text).unwrap_or_else(|e| panic!("the error text is not JSON ({e}): {text}"));
    let error = parsed["error"].take();
    assert!(error["code"].is_string() && error["message"].is_string(), "{text}");
    error
}

/// Where the Obsidian Help corpus sits: `../shared/corpora/obsidian-help` beside
/// the repository (the README's "The Obsidian Help corpus" says how to get it).
pub fn corpus_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../shared/corpora/obsidian-help")
}

/// The Obsidian Help corpus for a test that needs it (`what` names that test's
/// work), or `None` when the test is to be skipped: set `KB_SKIP_CORPUS_EVAL=1`,
/// or the corpus is missing. A skip says so on stderr, past the test harness's
/// capture, so a fresh clone's `cargo test` shows what it did not run; with
/// `KB_REQUIRE_CORPUS=1` (CI) a missing corpus fails the test instead.
pub fn obsidian_help(what: &str) -> Option<PathBuf> {
    use std::io::Write as _;
    use std::sync::atomic::{AtomicBool, Ordering};
    static SAID: AtomicBool = AtomicBool::new(false);
    let corpus = corpus_dir();
    let present = corpus.join("en").is_dir() && corpus.join("zh").is_dir();
    let why = if std::env::var("KB_SKIP_CORPUS_EVAL").as_deref() == Ok("1") {
        "KB_SKIP_CORPUS_EVAL=1".to_owned()
    } else if present {
        return Some(corpus);
    } else if std::env::var("KB_REQUIRE_CORPUS").as_deref() == Ok("1") {
        panic!(
            "the Obsidian Help corpus is not at {} (with en/ and zh/), and KB_REQUIRE_CORPUS=1 requires it \
             for {what}: put it there (README, \"The Obsidian Help corpus\")",
            corpus.display()
        );
    } else {
        format!("the Obsidian Help corpus is not at {}", corpus.display())
    };
    if !SAID.swap(true, Ordering::Relaxed) {
        // Straight to stderr: the harness captures eprintln! of a passing test.
        let _ = writeln!(
            std::io::stderr(),
            "SKIPPED: the tests that need the Obsidian Help corpus ({why}); \
             README, \"The Obsidian Help corpus\", says how to get it"
        );
    }
    None
}

/// How a person's editor saves a note, for the tests that race one against applies.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Editing {
    /// Opens the note, appends, closes (an autosave of a log or a journal).
    Append,
    /// Truncates the note and writes it whole, in place.
    InPlace,
    /// Writes a temporary file beside the note and renames it over the note.
    Rename,
}

impl Editing {
    /// Every style.
    pub const ALL: [Editing; 3] = [Editing::Append, Editing::InPlace, Editing::Rename];

    /// Saves `text` to the note at `path` as this editor does (appended, or as
    /// the whole note), creating the note when it is gone.
    pub fn save(self, path: &Path, text: &str) {
        use std::io::Write as _;
        match self {
            Editing::Append => {
                let mut file = std::fs::OpenOptions::new().append(true).create(true).open(path).unwrap();
                file.write_all(text.as_bytes()).unwrap();
            }
            Editing::InPlace => std::fs::write(path, text).unwrap(),
            Editing::Rename => {
                let name = path.file_name().unwrap().to_string_lossy();
                let swap = path.with_file_name(format!(".{name}.editor-swp"));
                std::fs::write(&swap, text).unwrap();
                std::fs::rename(&swap, path).unwrap();
            }
        }
    }
}

/// Writes `text` to the vault file `rel`, creating its folders.
/// The audit log's lines, parsed (none when there is no log).
pub fn audit_lines(vault: &Path) -> Vec<serde_json::Value> {
    std::fs::read_to_string(vault.join("inbox/_applied.jsonl"))
        .unwrap_or_default()
        .lines()
        .map(|line| serde_json::from_str(line).unwrap())
        .collect()
}

pub fn put(vault: &Path, rel: &str, text: &str) {
    let path = vault.join(rel);
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(path, text).unwrap();
}

/// The text of the vault file `rel`.
pub fn read(vault: &Path, rel: &str) -> String {
    std::fs::read_to_string(vault.join(rel)).unwrap()
}

/// Every regular file under `dir`, any depth, sorted.
pub fn files_in(dir: &Path) -> Vec<PathBuf> {
    let mut files: Vec<PathBuf> = walkdir::WalkDir::new(dir)
        .into_iter()
        .flatten()
        .filter(|entry| entry.file_type().is_file())
        .map(|entry| entry.into_path())
        .collect();
    files.sort();
    files
}

/// Every file under `dir` (any depth) whose name starts with `prefix`, with its text.
pub fn texts_under(dir: &Path, prefix: &str) -> Vec<(PathBuf, String)> {
    let mut out = Vec::new();
    let Ok(entries) = std::fs::read_dir(dir) else { return out };
    for entry in entries.flatten() {
        let path = entry.path();
        if path.is_dir() {
            out.extend(texts_under(&path, prefix));
        } else if entry.file_name().to_string_lossy().starts_with(prefix) {
            out.push((path.clone(), std::fs::read_to_string(&path).unwrap_or_default()));
        }
    }
    out
}

/// Sets the flag when dropped: a racing test's helper thread stops even when
/// the test panics (a scope would otherwise wait for it forever).
pub struct StopOnDrop<'a>(pub &'a std::sync::atomic::AtomicBool);

impl Drop for StopOnDrop<'_> {
    fn drop(&mut self) {
        self.0.store(true, std::sync::atomic::Ordering::Relaxed);
    }
}

/// Issue 34 item 4: the frontmatter of `z/hub.md` in [`property_vault`], links
/// written as Obsidian writes them in properties: a quoted value (with a
/// comment after it), a flow list (one item with display text), a block list
/// (a heading and a block anchor), a link to no note, a link to a heading its
/// note lacks; and what is no link: a name in `aliases`, an unquoted `[[C]]`
/// (YAML's nested list). Lines 3 to 9 hold the links.
pub const PROPERTY_HUB: &str = "---\ntitle: Hub\nrelated: \"[[A]]\" # the main one\nup: [\"[[B]]\", \"[[C|see C]]\"]\n\
next:\n  - \"[[D#Heading]]\"\n  - '[[A#^blk]]'\nmissing: \"[[Nowhere]]\"\ngone: \"[[A#No such heading]]\"\n\
aliases: [\"[[B]]\"]\nplain: [[C]]\n---\n# Hub\n\nNo link in the body.\n";

/// Issue 34 item 4: a vault whose only links are in `z/hub.md`'s properties
/// ([`PROPERTY_HUB`]), to `A` to `D`; `z/lonely.md` writes `up: [[A]]`
/// unquoted, which is no link.
pub fn property_vault() -> (tempfile::TempDir, std::path::PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    let vault = dir.path().join("vault");
    let files: &[(&str, &str)] = &[
        ("kb.toml", "[vault]\nnotes = [\"z\"]\n"),
        ("z/A.md", "# A\n\n## Heading\n\nText ^blk\n"),
        ("z/B.md", "# B\n"),
        ("z/C.md", "# C\n"),
        ("z/D.md", "# D\n\n## Heading\n"),
        ("z/hub.md", PROPERTY_HUB),
        ("z/lonely.md", "---\nup: [[A]]\n---\n# Lonely\n"),
    ];
    for (path, text) in files {
        let file = vault.join(path);
        std::fs::create_dir_all(file.parent().unwrap()).unwrap();
        std::fs::write(file, text).unwrap();
    }
    (dir, vault)
}

/// A finished command's exit code (-1 when a signal ended it), stdout and
/// stderr as text.
pub fn outcome(output: std::process::Output) -> (i32, String, String) {
    (
        output.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&output.stdout).into_owned(),
        String::from_utf8_lossy(&output.stderr).into_owned(),
    )
}

/// Stages a patch of `path` with one `find_replace` edit (its reason says
/// what it replaces) against the note as it is now; its proposal id.
pub fn propose_patch(engine: &kb_mcp::engine::Engine, path: &str, find: &str, replace: &str) -> String {
    use kb_mcp::engine::types::{ProposePatchArgs, ReadNoteArgs};
    let read = engine.read_note(&ReadNoteArgs { path: Some(path.into()), ..Default::default() }).unwrap();
    engine
        .propose_note_patch(&ProposePatchArgs {
            path: path.into(),
            base_hash: read.hash,
            reason: format!("{find} reads {replace}"),
            edits: serde_json::from_value(
                serde_json::json!([{"op": "find_replace", "find": find, "replace": replace}]),
            )
            .unwrap(),
        })
        .unwrap()
        .proposal_id
}
