//! The write layer's promises, tested on temp copies of the fixture vault:
//! proposing writes only inbox files; patches touch only the bytes their edits
//! name (line endings, BOM, final newline, other frontmatter lines survive);
//! apply checks everything before touching anything, writes once, archives,
//! logs exactly one audit line that matches `index-schema/audit.schema.json`;
//! a crash after any step is recovered; two concurrent applies of one id give
//! one success; a tampered or re-targeted proposal writes nothing.

#![allow(
    clippy::disallowed_methods,
    clippy::disallowed_types,
    reason = "the tests build and inspect vaults on disk"
)]

use crate::common;

use std::cell::Cell;
use std::fs;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Barrier};

use jiff::Timestamp;
use kb_mcp::error::{Error, ErrorCode, Result};
use kb_mcp::sandbox::{NotePath, Sandbox, read_vault_config};
use kb_mcp::vault::{Limits, VaultConfig, content_hash, parse_frontmatter, parse_note};
use kb_mcp::write::{
    self, Actor, ApplyStatus, Edit, NewNote, PatchRequest, ProposalKind, ProposalStatus, Staged,
    StatusFilter, Step, apply_edits,
};
use proptest::prelude::*;
use proptest::test_runner::{Config, TestRunner};
use serde_json::{Map, Value, json};
use tempfile::TempDir;

use common::Editing;

// ---------------------------------------------------------------- helpers

/// A temp copy of the fixture vault with its sandbox and limits.
struct Vault {
    _tmp: TempDir,
    root: PathBuf,
    sandbox: Sandbox,
    limits: Limits,
}

fn vault() -> Vault {
    let (tmp, root) = common::temp_vault();
    let config = VaultConfig::parse(read_vault_config(&root).unwrap().as_deref()).unwrap();
    let sandbox = Sandbox::open(&root, config.policy.clone()).unwrap();
    Vault { _tmp: tmp, root, sandbox, limits: config.limits }
}

impl Vault {
    /// A second, independent sandbox over the same folder (its own lock handle).
    fn reopen(&self) -> Sandbox {
        Sandbox::open(&self.root, self.sandbox.policy().clone()).unwrap()
    }

    fn path(&self, rel: &str) -> PathBuf {
        self.root.join(rel)
    }

    fn read(&self, rel: &str) -> Vec<u8> {
        fs::read(self.path(rel)).unwrap_or_else(|err| panic!("{rel}: {err}"))
    }

    fn text(&self, rel: &str) -> String {
        String::from_utf8(self.read(rel)).unwrap()
    }

    fn exists(&self, rel: &str) -> bool {
        self.path(rel).exists()
    }

    fn write(&self, rel: &str, bytes: impl AsRef<[u8]>) {
        let path = self.path(rel);
        fs::create_dir_all(path.parent().unwrap()).unwrap();
        fs::write(path, bytes).unwrap();
    }

    fn hash(&self, rel: &str) -> String {
        content_hash(&self.read(rel))
    }

    fn snapshot(&self) -> Vec<(String, Vec<u8>)> {
        common::snapshot(&self.root)
    }

    /// The parsed lines of the audit log.
    fn audit(&self) -> Vec<Value> {
        if !self.exists("inbox/_applied.jsonl") {
            return Vec::new();
        }
        self.text("inbox/_applied.jsonl").lines().map(|line| serde_json::from_str(line).unwrap()).collect()
    }

    fn audit_for(&self, id: &str) -> Vec<Value> {
        self.audit().into_iter().filter(|line| line["proposal_id"] == id).collect()
    }

    /// Every file under a folder, relative to the vault.
    fn files_under(&self, rel: &str) -> Vec<String> {
        let dir = self.path(rel);
        if !dir.exists() {
            return Vec::new();
        }
        let mut out: Vec<String> = walkdir::WalkDir::new(&dir)
            .into_iter()
            .filter_map(|entry| entry.ok())
            .filter(|entry| entry.file_type().is_file())
            .map(|entry| rel_of(&self.root, entry.path()))
            .collect();
        out.sort();
        out
    }

    fn propose(&self, note: &NewNote) -> Result<Staged> {
        write::propose_new(&self.sandbox, &self.limits, note, now())
    }

    /// Proposes a patch against the note's current hash.
    fn patch(&self, path: &str, edits: Vec<Edit>) -> Result<Staged> {
        let request = PatchRequest {
            path: path.to_owned(),
            base_hash: self.hash(path),
            reason: "test".to_owned(),
            edits,
        };
        write::propose_patch(&self.sandbox, &self.limits, &request, now())
    }

    /// The staged note of a proposal.
    fn staged_text(&self, staged: &Staged) -> String {
        self.text(&staged.files[0])
    }

    fn meta_file(staged: &Staged) -> &str {
        staged.files.iter().find(|file| file.ends_with(".proposal.json")).unwrap()
    }

    fn rewrite_meta(&self, staged: &Staged, change: impl FnOnce(&mut Map<String, Value>)) {
        let file = Self::meta_file(staged);
        let mut meta: Map<String, Value> = serde_json::from_slice(&self.read(file)).unwrap();
        change(&mut meta);
        self.write(file, serde_json::to_vec_pretty(&meta).unwrap());
    }
}

fn rel_of(root: &Path, path: &Path) -> String {
    path.strip_prefix(root).unwrap().to_string_lossy().replace('\\', "/")
}

fn now() -> Timestamp {
    "2026-01-20T02:00:00Z".parse().unwrap()
}

fn note(title: &str) -> NewNote {
    NewNote {
        title: title.to_owned(),
        body: "Body text with [[备份仓库]].".to_owned(),
        reason: "a test proposal".to_owned(),
        ..NewNote::default()
    }
}

/// An index callback that accepts everything.
fn no_index(_: &[NotePath]) -> Result<()> {
    Ok(())
}

fn apply(vault: &Vault, id: &str) -> Result<write::Applied> {
    write::apply(&vault.sandbox, id, Actor::Cli, &mut no_index)
}

fn code(result: Result<impl std::fmt::Debug>) -> ErrorCode {
    result.expect_err("expected an error").code
}

/// Paths whose bytes differ between two snapshots (added, removed or changed).
fn changed(before: &[(String, Vec<u8>)], after: &[(String, Vec<u8>)]) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for (path, bytes) in after {
        if before.iter().find(|(p, _)| p == path).is_none_or(|(_, old)| old != bytes) {
            out.push(path.clone());
        }
    }
    for (path, _) in before {
        if !after.iter().any(|(p, _)| p == path) {
            out.push(path.clone());
        }
    }
    out.sort();
    out
}

fn schema(name: &str) -> jsonschema::Validator {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("index-schema").join(name);
    let schema: Value = serde_json::from_slice(&fs::read(path).unwrap()).unwrap();
    jsonschema::validator_for(&schema).unwrap()
}

fn assert_valid(validator: &jsonschema::Validator, value: &Value) {
    let errors: Vec<String> = validator.iter_errors(value).map(|err| err.to_string()).collect();
    assert!(errors.is_empty(), "{value} does not match its schema: {errors:?}");
}

/// The note used for edit tests: LF, frontmatter, sections, a code fence.
const NOTE: &str = "---\ntitle: T\ntags: [a]\n---\n# T\n\nintro\n\n## One\n\none\n\n```\n## not a heading\n```\n\n## Two\n\ntwo\n";

fn staged_edit(edits: Vec<Edit>) -> String {
    let vault = vault();
    vault.write("z/t.md", NOTE);
    let staged = vault.patch("z/t.md", edits).unwrap();
    assert_eq!(staged.kind, ProposalKind::Patch);
    let text = vault.staged_text(&staged);
    assert_eq!(content_hash(text.as_bytes()), staged.content_hash);
    text
}

fn fields(value: Value) -> Map<String, Value> {
    match value {
        Value::Object(map) => map,
        _ => panic!("not an object"),
    }
}

// ---------------------------------------------------------------- propose_new

#[test]
fn propose_new_writes_only_the_two_inbox_files() {
    let vault = vault();
    let before = vault.snapshot();
    let staged = vault.propose(&note("新的笔记")).unwrap();
    let after = vault.snapshot();
    let short = &staged.proposal_id[2..10];
    let stem = format!("新的笔记-{short}");
    assert_eq!(
        changed(&before, &after),
        vec![format!("inbox/new/{stem}.md"), format!("inbox/new/{stem}.proposal.json")]
    );
    assert_eq!(staged.files, vec![format!("inbox/new/{stem}.md"), format!("inbox/new/{stem}.proposal.json")]);
    assert_eq!(staged.target, "z/新的笔记.md");
    assert!(staged.proposal_id.starts_with("p_") && staged.proposal_id.len() == 34);
    let text = vault.staged_text(&staged);
    assert!(text.starts_with("---\ntitle: 新的笔记\naliases: []\ntags: []\ncreated: "), "{text}");
    assert!(text.ends_with("---\n\nBody text with [[备份仓库]].\n"), "{text}");
    assert_eq!(staged.preview, text);
    let meta: Value = serde_json::from_slice(&vault.read(&staged.files[1])).unwrap();
    assert_valid(&schema("proposal.schema.json"), &meta);
    let keys: Vec<&str> = meta.as_object().unwrap().keys().map(String::as_str).collect();
    let mut expected = vec![
        "content_file",
        "content_sha256",
        "created_at",
        "kind",
        "proposal_id",
        "reason",
        "schema",
        "target",
    ];
    let mut keys_sorted = keys.clone();
    keys_sorted.sort_unstable();
    expected.sort_unstable();
    assert_eq!(keys_sorted, expected);
    assert_eq!(meta["content_sha256"], staged.content_hash);
    // Ids are random, not derived from the content.
    let again = vault.propose(&note("新的笔记")).unwrap();
    assert_ne!(again.proposal_id, staged.proposal_id);
    assert_eq!(again.content_hash, staged.content_hash);
}

#[test]
fn propose_new_frontmatter_round_trips_awkward_values() {
    let vault = vault();
    let title = "Deploy: \"prod\" # 1 'quoted' - 生产";
    let staged = vault
        .propose(&NewNote {
            title: title.to_owned(),
            body: "x".to_owned(),
            reason: "r".to_owned(),
            folder: Some("z/tech".to_owned()),
            tags: vec!["#rust".to_owned(), "type/concept".to_owned(), "rust".to_owned()],
            aliases: vec!["yes".to_owned(), "a, b".to_owned(), "123".to_owned()],
            description: Some("Line: with colon #hash".to_owned()),
        })
        .unwrap();
    assert_eq!(staged.target, "z/tech/Deploy- -prod- - 1 'quoted' - 生产.md");
    let text = vault.staged_text(&staged);
    let parsed = parse_note(&NotePath::parse(&staged.target).unwrap(), &text);
    assert!(parsed.diagnostics.is_empty(), "{:?}", parsed.diagnostics);
    assert_eq!(parsed.title, title);
    assert_eq!(parsed.aliases, vec!["yes", "a, b", "123"]);
    assert_eq!(parsed.tags, vec!["rust", "type/concept"]);
    assert_eq!(parsed.description, "Line: with colon #hash");
    assert!(parsed.created.is_some());
}

#[test]
fn propose_new_refuses_an_existing_target() {
    let vault = vault();
    let before = vault.snapshot();
    let err = vault.propose(&note("备份仓库")).unwrap_err();
    assert_eq!(err.code, ErrorCode::TargetExists);
    assert!(err.message.contains("z/备份仓库.md"), "{}", err.message);
    assert_eq!(vault.snapshot(), before);
}

#[test]
fn propose_new_slug_edge_cases() {
    let vault = vault();
    let long = "长".repeat(300);
    for (title, target) in [
        ("中文标题 v2", "z/中文标题 v2.md".to_owned()),
        ("a/b:c?*", "z/a-b-c.md".to_owned()),
        ("CON", "z/CON-note.md".to_owned()),
        ("lpt1.txt", "z/lpt1-note.txt.md".to_owned()),
        ("..", "z/untitled.md".to_owned()),
        ("../../etc/passwd", "z/etc-passwd.md".to_owned()),
        // A zero-width character is invisible in a file name, so the slug drops it.
        ("x／y：z\u{200B}!", "z/x-y：z!.md".to_owned()),
        ("Rust~1", "z/Rust-1.md".to_owned()),
        (long.as_str(), format!("z/{}.md", "长".repeat(26))),
    ] {
        let staged = vault.propose(&note(title)).unwrap();
        assert_eq!(staged.target, target, "title {title:?}");
        let name = staged.target.rsplit('/').next().unwrap();
        assert!(name.len() <= 80 + 3, "{name} is too long");
        assert!(NotePath::parse(&staged.files[1]).is_ok());
    }
}

/// Issue 12 item 21: the path layer allows the fullwidth colon (Chinese titles use
/// it all the time) but a new note's slug turned it into `-`. The slug and the path
/// checks share one table of forbidden characters, so a character the path layer
/// accepts stays in the file name, and one it refuses never reaches it.
#[test]
fn issue_12_a_new_notes_file_name_keeps_what_paths_allow() {
    let vault = vault();
    for (title, target) in [
        ("读书笔记：深度工作", "z/读书笔记：深度工作.md"),
        // Joiners that emoji and Persian need, allowed in paths, stay too.
        ("family 👨\u{200D}👩\u{200D}👧", "z/family 👨\u{200D}👩\u{200D}👧.md"),
        ("می\u{200C}خواهم", "z/می\u{200C}خواهم.md"),
        // Look-alikes of ':' and '/' the path layer refuses still become `-`.
        ("a\u{2236}b\u{2215}c", "z/a-b-c.md"),
    ] {
        let staged = vault.propose(&note(title)).unwrap();
        assert_eq!(staged.target, target, "title {title:?}");
        assert!(NotePath::parse(&staged.target).is_ok());
    }
}

#[test]
fn propose_new_refuses_bad_arguments() {
    let vault = vault();
    let before = vault.snapshot();
    assert_eq!(code(vault.propose(&note("  "))), ErrorCode::InvalidArgument);
    assert_eq!(
        code(vault.propose(&NewNote { reason: " ".to_owned(), ..note("t") })),
        ErrorCode::InvalidArgument
    );
    assert_eq!(code(vault.propose(&note("two\nlines"))), ErrorCode::InvalidArgument);
    let with_frontmatter = NewNote { body: "---\ntitle: x\n---\nbody".to_owned(), ..note("t") };
    assert_eq!(code(vault.propose(&with_frontmatter)), ErrorCode::InvalidArgument);
    let spaced_tag = NewNote { tags: vec!["two words".to_owned()], ..note("t") };
    assert_eq!(code(vault.propose(&spaced_tag)), ErrorCode::InvalidArgument);
    for folder in ["docs", "refs", "inbox", "../outside", "/tmp", "z/private", ".git", "C:\\x"] {
        let err = vault.propose(&NewNote { folder: Some(folder.to_owned()), ..note("t") }).unwrap_err();
        assert_eq!(err.code, ErrorCode::PathDenied, "folder {folder}: {err}");
    }
    assert_eq!(vault.snapshot(), before);
}

#[test]
fn propose_new_size_cap() {
    let vault = vault();
    let limits = Limits { proposal_max_bytes: 200, ..vault.limits };
    let big = NewNote { body: "x".repeat(300), ..note("big") };
    let err = write::propose_new(&vault.sandbox, &limits, &big, now()).unwrap_err();
    assert_eq!(err.code, ErrorCode::TooLarge);
    assert!(!vault.exists("inbox"));
}

// ---------------------------------------------------------------- edits

#[test]
fn patch_replace_all() {
    let text = staged_edit(vec![Edit::ReplaceAll { content: "# New\n".to_owned() }]);
    assert_eq!(text, "# New\n");
}

#[test]
fn patch_replace_section() {
    let text =
        staged_edit(vec![Edit::ReplaceSection { heading: "one".to_owned(), content: "uno\n".to_owned() }]);
    assert_eq!(text, NOTE.replace("## One\n\none\n\n```\n## not a heading\n```\n\n", "## One\nuno\n"));
    let text = staged_edit(vec![Edit::ReplaceSection {
        heading: "## Two".to_owned(),
        content: "## Zwei\n\nzwei".to_owned(),
    }]);
    assert_eq!(text, NOTE.replace("## Two\n\ntwo\n", "## Zwei\n\nzwei\n"));
    // The last section of a level-1 heading runs to the end.
    let text =
        staged_edit(vec![Edit::ReplaceSection { heading: "# T".to_owned(), content: "all".to_owned() }]);
    assert_eq!(text, "---\ntitle: T\ntags: [a]\n---\n# T\nall\n");
}

#[test]
fn patch_replace_section_unknown_heading_lists_the_headings() {
    let vault = vault();
    vault.write("z/t.md", NOTE);
    let edit = Edit::ReplaceSection { heading: "not a heading".to_owned(), content: String::new() };
    let err = vault.patch("z/t.md", vec![edit]).unwrap_err();
    assert_eq!(err.code, ErrorCode::NotFound);
    assert!(err.message.contains("# T, ## One, ## Two"), "{}", err.message);
    assert_eq!(err.details.unwrap()["headings"], json!(["# T", "## One", "## Two"]));
}

#[test]
fn patch_append() {
    assert_eq!(staged_edit(vec![Edit::Append { content: "end".to_owned() }]), format!("{NOTE}end\n"));
}

#[test]
fn patch_prepend_goes_after_the_frontmatter() {
    let text = staged_edit(vec![Edit::Prepend { content: "> note".to_owned() }]);
    assert_eq!(text, NOTE.replace("---\n# T", "---\n> note\n# T"));
}

#[test]
fn patch_find_replace() {
    let text =
        staged_edit(vec![Edit::FindReplace { find: "intro".to_owned(), replace: "Intro!".to_owned() }]);
    assert_eq!(text, NOTE.replace("intro", "Intro!"));
}

#[test]
fn patch_set_frontmatter() {
    let edit = Edit::SetFrontmatter { fields: fields(json!({"tags": ["a", "b"], "status": "draft: 1"})) };
    let text = staged_edit(vec![edit]);
    assert_eq!(text, NOTE.replace("tags: [a]\n", "tags: [a, b]\nstatus: \"draft: 1\"\n"));
    let edit = Edit::SetFrontmatter { fields: fields(json!({"tags": null})) };
    assert_eq!(staged_edit(vec![edit]), NOTE.replace("tags: [a]\n", ""));
}

#[test]
fn patch_edits_apply_in_order() {
    let text = staged_edit(vec![
        Edit::Append { content: "XYZ".to_owned() },
        Edit::FindReplace { find: "XYZ".to_owned(), replace: "done".to_owned() },
    ]);
    assert_eq!(text, format!("{NOTE}done\n"));
}

#[test]
fn find_replace_zero_and_two_matches_say_how_many() {
    let vault = vault();
    vault.write("z/t.md", NOTE);
    let before = vault.snapshot();
    let err = vault
        .patch("z/t.md", vec![Edit::FindReplace { find: "absent".into(), replace: "x".into() }])
        .unwrap_err();
    assert_eq!(err.code, ErrorCode::InvalidArgument);
    assert!(err.message.contains("`find` matched 0 times; it must match exactly once"), "{}", err.message);
    assert_eq!(err.details.as_ref().unwrap()["matches"], 0);
    vault.write("z/t.md", format!("{NOTE}intro\n"));
    let err = vault
        .patch("z/t.md", vec![Edit::FindReplace { find: "intro".into(), replace: "x".into() }])
        .unwrap_err();
    assert!(err.message.contains("edit 1 (find_replace): `find` matched 2 times"), "{}", err.message);
    assert!(err.message.contains("add surrounding text to make it unique"), "{}", err.message);
    assert_eq!(err.details.as_ref().unwrap()["matches"], 2);
    assert!(changed(&before, &vault.snapshot()) == vec!["z/t.md".to_owned()], "nothing staged");
}

#[test]
fn set_frontmatter_keeps_every_other_line_byte_identical() {
    let vault = vault();
    let path = "z/备份仓库.md";
    let original = vault.text(path);
    let edit = Edit::SetFrontmatter { fields: fields(json!({"tags": ["备份"], "reviewed": "2026-01-20"})) };
    let staged = vault.patch(path, vec![edit]).unwrap();
    let text = vault.staged_text(&staged);
    let old_fm = parse_frontmatter(&original).unwrap();
    let new_fm = parse_frontmatter(&text).unwrap();
    let old_lines: Vec<&str> = original[old_fm.yaml.clone()].lines().collect();
    let new_lines: Vec<&str> = text[new_fm.yaml.clone()].lines().collect();
    let kept: Vec<&str> = old_lines.iter().copied().filter(|line| !line.starts_with("tags:")).collect();
    let rest: Vec<&str> = new_lines
        .iter()
        .copied()
        .filter(|line| !line.starts_with("tags:") && !line.starts_with("reviewed:"))
        .collect();
    assert_eq!(kept, rest);
    assert!(new_lines.contains(&"tags: [备份]") && new_lines.last() == Some(&"reviewed: 2026-01-20"));
    assert_eq!(&text[new_fm.end..], &original[old_fm.end..], "the body is untouched");
    assert_eq!(new_fm.value["aliases"], json!(["backup repo", "备份库"]));
}

#[test]
fn crlf_and_bom_are_preserved() {
    let vault = vault();
    let crlf = "z/daily/2026-01-20.md";
    let staged = vault
        .patch(
            crlf,
            vec![
                Edit::Append { content: "line one\nline two\n".to_owned() },
                Edit::SetFrontmatter { fields: fields(json!({"mood": "ok"})) },
                Edit::Prepend { content: "top\n".to_owned() },
                Edit::ReplaceSection { heading: "回顾".to_owned(), content: "a\nb\n".to_owned() },
            ],
        )
        .unwrap();
    let text = vault.staged_text(&staged);
    assert!(text.contains("mood: ok\r\n---\r\ntop\r\n"), "{text:?}");
    assert!(text.contains("## 回顾\r\na\r\nb\r\n"), "{text:?}");
    let bytes = text.as_bytes();
    for (at, &byte) in bytes.iter().enumerate() {
        if byte == b'\n' {
            assert!(at > 0 && bytes[at - 1] == b'\r', "a bare LF at byte {at}: {text:?}");
        }
    }
    let bom = "z/tech/rust/生命周期.md";
    let staged = vault
        .patch(
            bom,
            vec![
                Edit::Prepend { content: "first".to_owned() },
                Edit::SetFrontmatter { fields: fields(json!({"title": "生命周期 (lifetimes)"})) },
            ],
        )
        .unwrap();
    let text = vault.staged_text(&staged);
    assert!(text.starts_with("\u{feff}---\ntitle: 生命周期 (lifetimes)\n"), "{text:?}");
    assert_eq!(text.matches('\u{feff}').count(), 1);
    let staged = vault.patch(bom, vec![Edit::ReplaceAll { content: "# only\n".to_owned() }]).unwrap();
    assert_eq!(vault.staged_text(&staged), "\u{feff}# only\n");
}

#[test]
fn trailing_newline_is_preserved() {
    let vault = vault();
    vault.write("z/bare.md", "# Bare\n\nlast line");
    let staged = vault.patch("z/bare.md", vec![Edit::Append { content: "added\n".to_owned() }]).unwrap();
    assert_eq!(vault.staged_text(&staged), "# Bare\n\nlast line\nadded");
    let staged = vault
        .patch("z/bare.md", vec![Edit::ReplaceSection { heading: "Bare".into(), content: "x\n".into() }])
        .unwrap();
    assert_eq!(vault.staged_text(&staged), "# Bare\nx");
    vault.write("z/full.md", "# Full\n");
    let staged = vault.patch("z/full.md", vec![Edit::Append { content: "added".to_owned() }]).unwrap();
    assert_eq!(vault.staged_text(&staged), "# Full\nadded\n");
}

#[test]
fn stale_base_carries_the_current_hash() {
    let vault = vault();
    let path = "z/备份仓库.md";
    let request = PatchRequest {
        path: path.to_owned(),
        base_hash: format!("sha256:{}", "0".repeat(64)),
        reason: "r".to_owned(),
        edits: vec![Edit::Append { content: "x".to_owned() }],
    };
    let err = write::propose_patch(&vault.sandbox, &vault.limits, &request, now()).unwrap_err();
    assert_eq!(err.code, ErrorCode::StaleBase);
    assert_eq!(err.details.unwrap()["current_hash"], vault.hash(path));
    assert!(err.hint.unwrap().contains("read the note again"));
    assert!(!vault.exists("inbox"));
}

#[test]
fn a_patch_that_changes_nothing_is_refused() {
    let vault = vault();
    vault.write("z/t.md", NOTE);
    for edit in [
        Edit::FindReplace { find: "intro".into(), replace: "intro".into() },
        Edit::SetFrontmatter { fields: fields(json!({"title": "T", "absent": null})) },
        Edit::ReplaceAll { content: NOTE.to_owned() },
    ] {
        let err = vault.patch("z/t.md", vec![edit]).unwrap_err();
        assert_eq!(err.code, ErrorCode::InvalidArgument);
        assert!(err.message.contains("the edits change nothing"), "{}", err.message);
    }
    assert_eq!(code(vault.patch("z/t.md", Vec::new())), ErrorCode::InvalidArgument);
}

#[test]
fn patch_size_cap() {
    let vault = vault();
    vault.write("z/t.md", NOTE);
    let limits = Limits { proposal_max_bytes: NOTE.len() as u64 + 10, ..vault.limits };
    let request = PatchRequest {
        path: "z/t.md".to_owned(),
        base_hash: vault.hash("z/t.md"),
        reason: "r".to_owned(),
        edits: vec![Edit::Append { content: "x".repeat(100) }],
    };
    assert_eq!(code(write::propose_patch(&vault.sandbox, &limits, &request, now())), ErrorCode::TooLarge);
}

#[test]
fn only_notes_can_be_patched() {
    let vault = vault();
    let before = vault.snapshot();
    for path in ["docs/tags.md", "refs/git-cheatsheet.md", "z/private/secret-plan.md", "../x.md", "kb.toml"] {
        let request = PatchRequest {
            path: path.to_owned(),
            base_hash: String::new(),
            reason: "r".to_owned(),
            edits: vec![Edit::Append { content: "x".to_owned() }],
        };
        let err = write::propose_patch(&vault.sandbox, &vault.limits, &request, now()).unwrap_err();
        assert_eq!(err.code, ErrorCode::PathDenied, "{path}: {err}");
    }
    let request = PatchRequest {
        path: "z/missing.md".to_owned(),
        base_hash: String::new(),
        reason: "r".to_owned(),
        edits: vec![Edit::Append { content: "x".to_owned() }],
    };
    assert_eq!(
        code(write::propose_patch(&vault.sandbox, &vault.limits, &request, now())),
        ErrorCode::NotFound
    );
    assert_eq!(vault.snapshot(), before);
}

#[test]
fn patch_writes_the_note_the_diff_and_the_metadata() {
    let vault = vault();
    let path = "z/tech/git/冲突处理.md";
    let before = vault.snapshot();
    let staged = vault.patch(path, vec![Edit::Append { content: "新的一行".to_owned() }]).unwrap();
    let stem = format!("冲突处理-{}", &staged.proposal_id[2..10]);
    let expected: Vec<String> =
        [".new.md", ".diff", ".proposal.json"].iter().map(|ext| format!("inbox/patch/{stem}{ext}")).collect();
    assert_eq!(staged.files, expected);
    let mut sorted = expected.clone();
    sorted.sort();
    assert_eq!(changed(&before, &vault.snapshot()), sorted);
    let diff = vault.text(&expected[1]);
    assert_eq!(staged.diff.as_deref(), Some(diff.as_str()));
    assert!(diff.starts_with(&format!("--- a/{path}\n+++ b/{path}\n@@ ")), "{diff}");
    assert!(diff.ends_with("+新的一行\n"), "{diff}");
    assert_eq!((staged.added, staged.removed), (1, 0));
    assert_eq!(staged.base_hash.as_deref(), Some(vault.hash(path).as_str()));
    let meta: Value = serde_json::from_slice(&vault.read(&expected[2])).unwrap();
    assert_valid(&schema("proposal.schema.json"), &meta);
    assert_eq!(meta["diff_file"], expected[1]);
    assert_eq!(meta["base_sha256"], vault.hash(path));
}

#[test]
fn diff_marks_a_missing_final_newline() {
    let vault = vault();
    vault.write("z/bare.md", "a\nb");
    let staged =
        vault.patch("z/bare.md", vec![Edit::FindReplace { find: "b".into(), replace: "c".into() }]).unwrap();
    assert_eq!(
        staged.diff.unwrap(),
        "--- a/z/bare.md\n+++ b/z/bare.md\n@@ -1,2 +1,2 @@\n a\n-b\n\\ No newline at end of file\n+c\n\\ No newline at end of file\n"
    );
    assert_eq!((staged.added, staged.removed), (1, 1));
}

/// Applies a proposal's diff with `git apply` to a copy of the note as it was: the
/// diff a person reviews must be one `patch` and `git apply` accept, and must
/// produce exactly the staged note.
fn assert_diff_applies(before: &str, staged: &Staged, after: &str) {
    let diff = staged.diff.as_deref().expect("a patch has a diff");
    let dir = TempDir::new().unwrap();
    let file = dir.path().join("z/diffed.md");
    fs::create_dir_all(file.parent().unwrap()).unwrap();
    fs::write(&file, before).unwrap();
    fs::write(dir.path().join("p.diff"), diff).unwrap();
    for check in [true, false] {
        let mut git = std::process::Command::new("git");
        git.current_dir(dir.path()).arg("apply");
        if check {
            git.arg("--check");
        }
        let output = git.arg("p.diff").output().expect("git runs");
        assert!(
            output.status.success(),
            "git apply{} refused the diff: {}\n{diff}",
            if check { " --check" } else { "" },
            String::from_utf8_lossy(&output.stderr)
        );
    }
    assert_eq!(fs::read_to_string(&file).unwrap(), after, "{diff}");
    // `git apply` and `patch` forgive a hunk that names the wrong line (they
    // search nearby): check each header against the lines it shows.
    let old_lines: Vec<&str> = before.split_inclusive('\n').collect();
    let new_lines: Vec<&str> = after.split_inclusive('\n').collect();
    let mut hunk: Option<(usize, usize)> = None;
    for line in diff.lines().skip(2) {
        if let Some(header) = line.strip_prefix("@@ -") {
            let numbers: Vec<usize> = header
                .trim_end_matches(" @@")
                .split([' ', ',', '+'])
                .filter(|n| !n.is_empty())
                .map(|n| n.parse().unwrap())
                .collect();
            assert_eq!(numbers.len(), 4, "{line}");
            let start = |at: usize, len: usize| if len == 0 { at } else { at - 1 };
            hunk = Some((start(numbers[0], numbers[1]), start(numbers[2], numbers[3])));
            continue;
        }
        let Some((old_at, new_at)) = hunk.as_mut() else { panic!("a line before any hunk: {line}\n{diff}") };
        let (mark, content) = line.split_at(1);
        let strip = |l: &str| l.trim_end_matches('\n').to_owned();
        if matches!(mark, " " | "-") {
            assert_eq!(
                old_lines.get(*old_at).map(|l| strip(l)),
                Some(content.to_owned()),
                "old side\n{diff}"
            );
            *old_at += 1;
        }
        if matches!(mark, " " | "+") {
            assert_eq!(
                new_lines.get(*new_at).map(|l| strip(l)),
                Some(content.to_owned()),
                "new side\n{diff}"
            );
            *new_at += 1;
        }
    }
}

/// Issue 12 item 18: a `set_frontmatter` diff named the wrong first line
/// (`@@ -2,9 +2,9 @@` over a context starting at line 1). Every edit kind's diff
/// must apply with `git apply`.
#[test]
fn issue_12_every_edit_kinds_diff_applies_with_git() {
    let head = "---\ntitle: Diffed\ntags: [a, b]\ncreated: 2026-01-02\nstatus: draft\n---\n# Diffed\n\nIntro line.\n\n";
    let mut long = String::from(head);
    for section in 1..=4 {
        long.push_str(&format!("## Part {section}\n\n"));
        for line in 1..=5 {
            long.push_str(&format!("Line {line} of part {section}.\n"));
        }
        long.push('\n');
    }
    long.push_str("Last line.\n");
    let short = "---\ntitle: Short\n---\nOne.\nTwo.";
    let mut fields = Map::new();
    fields.insert("status".into(), json!("done"));
    let mut several = Map::new();
    several.insert("status".into(), Value::Null);
    several.insert("aliases".into(), json!(["d"]));
    let cases: Vec<(&str, Vec<Edit>)> = vec![
        ("set_frontmatter", vec![Edit::SetFrontmatter { fields: fields.clone() }]),
        ("set_frontmatter (remove, add)", vec![Edit::SetFrontmatter { fields: several }]),
        ("replace_all", vec![Edit::ReplaceAll { content: "Only this.\n".into() }]),
        ("append", vec![Edit::Append { content: "Appended.".into() }]),
        ("prepend", vec![Edit::Prepend { content: "Prepended.".into() }]),
        (
            "find_replace",
            vec![Edit::FindReplace { find: "Line 3 of part 2".into(), replace: "Changed".into() }],
        ),
        (
            "replace_section",
            vec![Edit::ReplaceSection { heading: "Part 3".into(), content: "New part three.\n".into() }],
        ),
        (
            "far apart",
            vec![
                Edit::SetFrontmatter { fields: fields.clone() },
                Edit::FindReplace { find: "Line 4 of part 4".into(), replace: "Far".into() },
            ],
        ),
    ];
    let vault = vault();
    for (text, label) in [(long.as_str(), "long"), (short, "short")] {
        for (kind, edits) in &cases {
            if text == short
                && matches!(edits[..], [Edit::FindReplace { .. }] | [Edit::ReplaceSection { .. }] | [_, _])
            {
                continue;
            }
            vault.write("z/diffed.md", text);
            let staged = vault
                .patch("z/diffed.md", edits.clone())
                .unwrap_or_else(|err| panic!("{label} {kind}: {err}"));
            let after = vault.staged_text(&staged);
            assert_diff_applies(text, &staged, &after);
        }
    }
}

#[test]
fn edits_deserialize_strictly() {
    let edit: Edit =
        serde_json::from_value(json!({"op": "find_replace", "find": "a", "replace": "b"})).unwrap();
    assert_eq!(edit, Edit::FindReplace { find: "a".into(), replace: "b".into() });
    let edit: Edit = serde_json::from_value(json!({"op": "set_frontmatter", "fields": {"a": null}})).unwrap();
    assert_eq!(edit.op(), "set_frontmatter");
    assert!(serde_json::from_value::<Edit>(json!({"op": "append", "content": "x", "extra": 1})).is_err());
    assert!(serde_json::from_value::<Edit>(json!({"op": "delete_all"})).is_err());
}

// ---------------------------------------------------------------- apply

#[test]
fn apply_new_writes_archives_audits_and_indexes_once() {
    let vault = vault();
    let staged = vault.propose(&note("新的笔记")).unwrap();
    let staged_bytes = vault.read(&staged.files[0]);
    let before = vault.snapshot();
    let mut indexed: Vec<String> = Vec::new();
    let applied =
        write::apply(&vault.sandbox, &staged.proposal_id, Actor::Mcp, &mut |paths: &[NotePath]| {
            indexed.extend(paths.iter().map(|path| path.as_str().to_owned()));
            Ok(())
        })
        .unwrap();
    assert_eq!(indexed, vec!["z/新的笔记.md"]);
    assert_eq!(applied.status, ApplyStatus::Applied);
    assert_eq!(applied.target, "z/新的笔记.md");
    assert_eq!(vault.read("z/新的笔记.md"), staged_bytes);
    assert_eq!(applied.new_hash, content_hash(&staged_bytes));
    assert!(
        applied.archive.starts_with("inbox/applied/") && applied.archive.len() == "inbox/applied/".len() + 10
    );
    let stem = format!("新的笔记-{}", &staged.proposal_id[2..10]);
    assert_eq!(
        vault.files_under(&applied.archive),
        vec![format!("{}/{stem}.md", applied.archive), format!("{}/{stem}.proposal.json", applied.archive)]
    );
    assert!(vault.files_under("inbox/new").is_empty());
    let audit = vault.audit();
    assert_eq!(audit.len(), 1);
    assert_eq!(audit[0], applied.audit);
    assert_valid(&schema("audit.schema.json"), &audit[0]);
    let mut keys: Vec<&str> = audit[0].as_object().unwrap().keys().map(String::as_str).collect();
    keys.sort_unstable();
    assert_eq!(keys, vec!["archive", "at", "by", "content_sha256", "index", "kind", "proposal_id", "target"]);
    assert_eq!(audit[0]["by"], "mcp");
    assert_eq!(audit[0]["index"], "ok");
    assert_eq!(audit[0]["archive"], applied.archive);
    // Nothing else changed: the note, the moved files, the audit log and the lock file.
    let mut expected = vec![
        "z/新的笔记.md".to_owned(),
        staged.files[0].clone(),
        staged.files[1].clone(),
        format!("{}/{stem}.md", applied.archive),
        format!("{}/{stem}.proposal.json", applied.archive),
        "inbox/_applied.jsonl".to_owned(),
        "inbox/_apply.lock".to_owned(),
    ];
    expected.sort();
    assert_eq!(changed(&before, &vault.snapshot()), expected);
}

#[test]
fn apply_patch_writes_the_staged_text() {
    let vault = vault();
    let path = "z/daily/2026-01-20.md";
    let staged = vault.patch(path, vec![Edit::Append { content: "晚上：复盘".to_owned() }]).unwrap();
    let staged_bytes = vault.read(&staged.files[0]);
    let applied = apply(&vault, &staged.proposal_id).unwrap();
    assert_eq!(vault.read(path), staged_bytes);
    assert_eq!(applied.new_hash, vault.hash(path));
    let audit = vault.audit();
    assert_eq!(audit.len(), 1);
    assert_valid(&schema("audit.schema.json"), &audit[0]);
    assert_eq!(audit[0]["base_sha256"], staged.base_hash.unwrap());
    assert_eq!(audit[0]["kind"], "patch");
    assert_eq!(vault.files_under(&applied.archive).len(), 3);
    assert!(vault.files_under("inbox/patch").is_empty());
}

#[test]
fn applying_twice_is_not_pending() {
    let vault = vault();
    let staged = vault.propose(&note("twice")).unwrap();
    apply(&vault, &staged.proposal_id).unwrap();
    let snapshot = vault.snapshot();
    let err = apply(&vault, &staged.proposal_id).unwrap_err();
    assert_eq!(err.code, ErrorCode::ProposalNotPending);
    assert_eq!(vault.snapshot(), snapshot);
    assert_eq!(vault.audit().len(), 1);
}

#[test]
fn unknown_ids_are_not_found() {
    let vault = vault();
    vault.propose(&note("some")).unwrap();
    let before = vault.snapshot();
    for id in [format!("p_{}", "0".repeat(32)), "p_123".to_owned(), "../x".to_owned(), String::new()] {
        assert_eq!(code(apply(&vault, &id)), ErrorCode::ProposalNotFound, "{id}");
    }
    let staged = vault.propose(&note("other")).unwrap();
    let upper = staged.proposal_id.to_uppercase().replacen('P', "p", 1);
    assert_eq!(code(apply(&vault, &upper)), ErrorCode::ProposalNotFound);
    let prefix = &staged.proposal_id[..20];
    assert_eq!(code(apply(&vault, prefix)), ErrorCode::ProposalNotFound);
    assert!(changed(&before, &vault.snapshot()).iter().all(|path| path.starts_with("inbox/")));
    assert!(!vault.exists("z/some.md") && !vault.exists("z/other.md"));
}

#[test]
fn tampered_content_is_refused_and_the_vault_untouched() {
    let vault = vault();
    let staged = vault.propose(&note("tamper")).unwrap();
    vault.write(&staged.files[0], "---\ntitle: evil\n---\nevil\n");
    let before = vault.snapshot();
    let err = apply(&vault, &staged.proposal_id).unwrap_err();
    assert_eq!(err.code, ErrorCode::ProposalTampered, "{err}");
    assert_eq!(changed(&before, &vault.snapshot()), vec!["inbox/_apply.lock".to_owned()]);
    let listed = write::list(&vault.sandbox, StatusFilter::Pending, 10).unwrap();
    assert!(!listed[0].checks.intact);
    // A removed staged note or diff is tampering too.
    let patch = vault.patch("z/设计.md", vec![Edit::Append { content: "x".to_owned() }]).unwrap();
    fs::remove_file(vault.path(&patch.files[1])).unwrap();
    assert_eq!(code(apply(&vault, &patch.proposal_id)), ErrorCode::ProposalTampered);
}

#[test]
fn metadata_pointing_elsewhere_writes_nothing() {
    let vault = vault();
    #[cfg(unix)]
    {
        let outside = vault._tmp.path().join("outside");
        fs::create_dir_all(&outside).unwrap();
        std::os::unix::fs::symlink(&outside, vault.path("z/link")).unwrap();
    }
    let mut targets =
        vec!["../x.md", "docs/x.md", "/etc/passwd", "C:\\x.md", "inbox/x.md", "z/private/x.md", "x.md"];
    if cfg!(unix) {
        targets.push("z/link/x.md");
    }
    for target in targets {
        let staged = vault.propose(&note("retarget")).unwrap();
        vault.rewrite_meta(&staged, |meta| {
            meta.insert("target".to_owned(), json!(target));
        });
        let before = vault.snapshot();
        let err = apply(&vault, &staged.proposal_id).unwrap_err();
        assert!(matches!(err.code, ErrorCode::PathDenied | ErrorCode::ProposalTampered), "{target}: {err}");
        let after = vault.snapshot();
        assert!(changed(&before, &after).iter().all(|path| path == "inbox/_apply.lock"), "{target}");
        assert_eq!(write::list(&vault.sandbox, StatusFilter::Pending, 100).unwrap().len(), 1);
        #[cfg(unix)]
        assert!(fs::read_dir(vault._tmp.path().join("outside")).unwrap().next().is_none());
        fs::remove_dir_all(vault.path("inbox/new")).unwrap();
    }
    for content_file in ["../x.md", "docs/x.md", "/etc/passwd", "inbox/new/other.md", "z/备份仓库.md"] {
        let staged = vault.propose(&note("refile")).unwrap();
        vault.rewrite_meta(&staged, |meta| {
            meta.insert("content_file".to_owned(), json!(content_file));
        });
        let before = vault.snapshot();
        assert_eq!(code(apply(&vault, &staged.proposal_id)), ErrorCode::ProposalTampered, "{content_file}");
        assert!(changed(&before, &vault.snapshot()).iter().all(|path| path == "inbox/_apply.lock"));
        fs::remove_dir_all(vault.path("inbox/new")).unwrap();
    }
    // Extra or broken metadata is tampering too.
    let staged = vault.propose(&note("extra")).unwrap();
    vault.rewrite_meta(&staged, |meta| {
        meta.insert("then_run".to_owned(), json!("rm -rf"));
    });
    assert_eq!(code(apply(&vault, &staged.proposal_id)), ErrorCode::ProposalTampered);
    vault.write(Vault::meta_file(&staged), "{ not json");
    assert_eq!(code(apply(&vault, &staged.proposal_id)), ErrorCode::ProposalTampered);
    assert!(!vault.exists("z/extra.md"));
}

#[test]
fn a_new_target_created_after_proposing_is_target_exists() {
    let vault = vault();
    let staged = vault.propose(&note("late")).unwrap();
    vault.write("z/late.md", "mine\n");
    let err = apply(&vault, &staged.proposal_id).unwrap_err();
    assert_eq!(err.code, ErrorCode::TargetExists);
    assert_eq!(vault.text("z/late.md"), "mine\n");
    let listed = write::list(&vault.sandbox, StatusFilter::Pending, 10).unwrap();
    assert_eq!(listed[0].status, ProposalStatus::Pending);
    assert!(listed[0].checks.intact && !listed[0].checks.target_free);
}

#[test]
fn a_stale_target_is_stale_base() {
    let vault = vault();
    let path = "z/设计.md";
    let staged = vault.patch(path, vec![Edit::Append { content: "x".to_owned() }]).unwrap();
    vault.write(path, "changed by hand\n");
    let err = apply(&vault, &staged.proposal_id).unwrap_err();
    assert_eq!(err.code, ErrorCode::StaleBase);
    assert_eq!(err.details.unwrap()["current_hash"], vault.hash(path));
    assert_eq!(vault.text(path), "changed by hand\n");
    let listed = write::list(&vault.sandbox, StatusFilter::Pending, 10).unwrap();
    assert!(listed[0].checks.intact && !listed[0].checks.base_current);
    fs::remove_file(vault.path(path)).unwrap();
    assert_eq!(code(apply(&vault, &staged.proposal_id)), ErrorCode::StaleBase);
}

#[test]
fn an_index_failure_is_applied_index_failed_and_consumes_the_proposal() {
    let vault = vault();
    let staged = vault.propose(&note("unindexed")).unwrap();
    let applied = write::apply(&vault.sandbox, &staged.proposal_id, Actor::Cli, &mut |_: &[NotePath]| {
        Err(Error::index("the index is locked"))
    })
    .unwrap();
    assert_eq!(applied.status, ApplyStatus::AppliedIndexFailed);
    assert!(applied.index_error.unwrap().contains("the index is locked"));
    assert!(vault.exists("z/unindexed.md"));
    let audit = vault.audit();
    assert_eq!(audit.len(), 1);
    assert_eq!(audit[0]["index"], "failed");
    assert_valid(&schema("audit.schema.json"), &audit[0]);
    assert_eq!(code(apply(&vault, &staged.proposal_id)), ErrorCode::ProposalNotPending);
}

/// The files of a proposal in its pending folder and anywhere under the applied folders.
fn where_is(vault: &Vault, staged: &Staged) -> (Vec<String>, Vec<String>) {
    let short = &staged.proposal_id[2..10];
    let pending: Vec<String> = staged.files.iter().filter(|file| vault.exists(file)).cloned().collect();
    let archived: Vec<String> =
        vault.files_under("inbox/applied").into_iter().filter(|file| file.contains(short)).collect();
    (pending, archived)
}

#[test]
fn a_crash_after_any_step_is_recovered() {
    let steps = [
        Step::Claimed,
        Step::Swapping,
        Step::Written,
        Step::Archiving,
        Step::Archived,
        Step::Indexed,
        Step::Audited,
    ];
    for kind in [ProposalKind::New, ProposalKind::Patch] {
        for &step in &steps {
            if step == Step::Swapping && kind == ProposalKind::New {
                continue; // a new note is created, never swapped
            }
            let before_write = matches!(step, Step::Claimed | Step::Swapping);
            for finish_by_apply in [false, true] {
                let vault = vault();
                let path = "z/设计.md";
                let original = vault.read(path);
                let staged = match kind {
                    ProposalKind::New => vault.propose(&note("crash")).unwrap(),
                    _ => vault.patch(path, vec![Edit::Append { content: "after".to_owned() }]).unwrap(),
                };
                let target = staged.target.clone();
                let staged_bytes = vault.read(&staged.files[0]);
                let old_target = (kind == ProposalKind::Patch).then(|| original.clone());
                let calls = Cell::new(0);
                let mut index = |seen: &[NotePath]| -> Result<()> {
                    assert_eq!(seen.len(), 1);
                    assert_eq!(seen[0].as_str(), target);
                    calls.set(calls.get() + 1);
                    Ok(())
                };
                let err = write::apply_with_failpoint(
                    &vault.sandbox,
                    &staged.proposal_id,
                    Actor::Cli,
                    &mut index,
                    &mut |at| if at == step { Err(Error::internal("simulated crash")) } else { Ok(()) },
                )
                .unwrap_err();
                assert_eq!(err.message, "simulated crash", "{step:?}");

                // Old state or new state, nothing in between.
                let on_disk = vault.exists(&target).then(|| vault.read(&target));
                let (pending, archived) = where_is(&vault, &staged);
                if on_disk == old_target {
                    assert!(before_write, "{kind:?} {step:?}: the target is untouched only before the write");
                    assert_eq!(pending, staged.files, "{step:?}: the proposal stays pending");
                } else {
                    assert_eq!(on_disk.as_deref(), Some(staged_bytes.as_slice()), "{kind:?} {step:?}");
                }
                let audited = vault.audit_for(&staged.proposal_id).len();
                assert_eq!(audited, usize::from(step == Step::Audited), "{step:?}");
                let (in_pending, in_archive) = match step {
                    Step::Claimed | Step::Prepared | Step::Swapping | Step::Written | Step::File(_) => {
                        (staged.files.len(), 0)
                    }
                    Step::Archiving => (staged.files.len() - 1, 1),
                    Step::Archived | Step::Indexed | Step::Audited => (0, staged.files.len()),
                };
                assert_eq!((pending.len(), archived.len()), (in_pending, in_archive), "{kind:?} {step:?}");

                // Finish: by the next apply, or by a recovery pass (a server start).
                if before_write {
                    let recovery = write::recover(&vault.sandbox, Actor::Cli, &mut index).unwrap();
                    assert_eq!(recovery, write::Recovery::default(), "nothing to recover before the write");
                    assert_eq!(apply(&vault, &staged.proposal_id).unwrap().new_hash, staged.content_hash);
                    calls.set(calls.get() + 1);
                } else if finish_by_apply {
                    let result = write::apply(&vault.sandbox, &staged.proposal_id, Actor::Cli, &mut index);
                    if step == Step::Audited {
                        assert_eq!(code(result), ErrorCode::ProposalNotPending);
                    } else {
                        let applied = result.unwrap();
                        assert_eq!(applied.status, ApplyStatus::Applied);
                        assert_eq!(applied.new_hash, staged.content_hash);
                    }
                } else {
                    let recovery = write::recover(&vault.reopen(), Actor::Mcp, &mut index).unwrap();
                    assert!(recovery.failed.is_empty(), "{recovery:?}");
                    let expected =
                        if step == Step::Audited { Vec::new() } else { vec![staged.proposal_id.clone()] };
                    assert_eq!(recovery.completed, expected, "{kind:?} {step:?}");
                }
                // Recovery is idempotent.
                let again = write::recover(&vault.sandbox, Actor::Cli, &mut index).unwrap();
                assert!(again.completed.is_empty() && again.failed.is_empty(), "{again:?}");

                assert_eq!(vault.read(&target), staged_bytes, "{kind:?} {step:?}");
                let (pending, archived) = where_is(&vault, &staged);
                assert!(pending.is_empty(), "{kind:?} {step:?}: {pending:?}");
                assert_eq!(archived.len(), staged.files.len(), "{kind:?} {step:?}: {archived:?}");
                let lines = vault.audit_for(&staged.proposal_id);
                assert_eq!(lines.len(), 1, "{kind:?} {step:?}: {lines:?}");
                assert_valid(&schema("audit.schema.json"), &lines[0]);
                assert_eq!(lines[0]["index"], "ok");
                assert!(calls.get() >= 1, "{step:?}: the index callback ran");
                assert_eq!(code(apply(&vault, &staged.proposal_id)), ErrorCode::ProposalNotPending);
                assert!(temp_files(&vault.root).is_empty());
            }
        }
    }
}

#[test]
fn a_crash_between_link_and_unlink_of_the_metadata_is_recovered() {
    let vault = vault();
    let staged = vault.propose(&note("twin")).unwrap();
    let err = write::apply_with_failpoint(
        &vault.sandbox,
        &staged.proposal_id,
        Actor::Cli,
        &mut no_index,
        &mut |at| if at == Step::Archiving { Err(Error::internal("crash")) } else { Ok(()) },
    )
    .unwrap_err();
    assert_eq!(err.message, "crash");
    // Put the metadata back beside its archived copy, as a crash between the
    // hard link and the removal of the source would leave it.
    let (_, archived) = where_is(&vault, &staged);
    let meta = archived.iter().find(|file| file.ends_with(".proposal.json")).unwrap();
    vault.write(&staged.files[1], vault.read(meta));
    let recovery = write::recover(&vault.sandbox, Actor::Cli, &mut no_index).unwrap();
    assert_eq!(recovery.completed, vec![staged.proposal_id.clone()]);
    let (pending, archived) = where_is(&vault, &staged);
    assert!(pending.is_empty() && archived.len() == 2, "{pending:?} {archived:?}");
    assert_eq!(vault.audit_for(&staged.proposal_id).len(), 1);
}

#[test]
fn a_partial_audit_line_does_not_hide_or_corrupt_the_next() {
    let vault = vault();
    let first = vault.propose(&note("first")).unwrap();
    apply(&vault, &first.proposal_id).unwrap();
    let second = vault.propose(&note("second")).unwrap();
    let err = write::apply_with_failpoint(
        &vault.sandbox,
        &second.proposal_id,
        Actor::Cli,
        &mut no_index,
        &mut |at| if at == Step::Indexed { Err(Error::internal("crash")) } else { Ok(()) },
    )
    .unwrap_err();
    assert_eq!(err.message, "crash");
    // A crash mid-append left half a line.
    let mut log = vault.read("inbox/_applied.jsonl");
    log.extend_from_slice(b"{\"at\":\"2026-01-20T");
    vault.write("inbox/_applied.jsonl", log);
    write::recover(&vault.sandbox, Actor::Cli, &mut no_index).unwrap();
    let text = vault.text("inbox/_applied.jsonl");
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(lines.len(), 3, "{text}");
    let last: Value = serde_json::from_str(lines[2]).unwrap();
    assert_eq!(last["proposal_id"], second.proposal_id);
    assert_eq!(last["recovered"], true);
    assert_valid(&schema("audit.schema.json"), &last);
}

#[test]
fn concurrent_applies_of_one_id_give_one_success() {
    for kind in [ProposalKind::New, ProposalKind::Patch] {
        for round in 0..4 {
            let vault = vault();
            let staged = match kind {
                ProposalKind::New => vault.propose(&note(&format!("race {round}"))).unwrap(),
                _ => {
                    vault.patch("z/设计.md", vec![Edit::Append { content: format!("race {round}") }]).unwrap()
                }
            };
            let barrier = Arc::new(Barrier::new(2));
            let results: Vec<Result<write::Applied>> = std::thread::scope(|scope| {
                let handles: Vec<_> = (0..2)
                    .map(|_| {
                        let sandbox = vault.reopen();
                        let barrier = Arc::clone(&barrier);
                        let id = staged.proposal_id.clone();
                        scope.spawn(move || {
                            barrier.wait();
                            write::apply(&sandbox, &id, Actor::Mcp, &mut no_index)
                        })
                    })
                    .collect();
                handles.into_iter().map(|handle| handle.join().unwrap()).collect()
            });
            let wins = results.iter().filter(|result| result.is_ok()).count();
            assert_eq!(wins, 1, "{kind:?}: {results:?}");
            let loser = results.into_iter().find_map(Result::err).unwrap();
            assert_eq!(loser.code, ErrorCode::ProposalNotPending, "{loser}");
            assert_eq!(vault.audit_for(&staged.proposal_id).len(), 1);
            assert_eq!(vault.hash(&staged.target), staged.content_hash);
        }
    }
}

/// Set in the child processes of [`concurrent_applies_across_processes_give_one_success`]:
/// `<vault>|<proposal id>|<result file>|<go file>`.
const CHILD_ENV: &str = "KB_WRITE_TEST_CHILD";

#[test]
fn concurrent_applies_across_processes_give_one_success() {
    if let Ok(job) = std::env::var(CHILD_ENV) {
        // Child: wait for the go signal, apply, write down how it went.
        let parts: Vec<&str> = job.split('|').collect();
        let (root, id, result, go) = (Path::new(parts[0]), parts[1], parts[2], Path::new(parts[3]));
        let config = VaultConfig::parse(read_vault_config(root).unwrap().as_deref()).unwrap();
        let sandbox = Sandbox::open(root, config.policy).unwrap();
        while !go.exists() {
            std::thread::sleep(std::time::Duration::from_millis(1));
        }
        let outcome = match write::apply(&sandbox, id, Actor::Cli, &mut no_index) {
            Ok(applied) => format!("ok {}", applied.new_hash),
            Err(err) => err.code.to_string(),
        };
        fs::write(result, outcome).unwrap();
        return;
    }
    let vault = vault();
    let staged = vault.propose(&note("two processes")).unwrap();
    let go = vault._tmp.path().join("go");
    let children: Vec<(std::process::Child, PathBuf)> = (0..2)
        .map(|n| {
            let result = vault._tmp.path().join(format!("result-{n}"));
            let job = format!(
                "{}|{}|{}|{}",
                vault.root.display(),
                staged.proposal_id,
                result.display(),
                go.display()
            );
            let child = std::process::Command::new(std::env::current_exe().unwrap())
                .args([
                    "--exact",
                    "write::concurrent_applies_across_processes_give_one_success",
                    "--test-threads=1",
                ])
                .env(CHILD_ENV, job)
                .stdout(std::process::Stdio::null())
                .spawn()
                .unwrap();
            (child, result)
        })
        .collect();
    fs::write(&go, "go").unwrap();
    let mut outcomes: Vec<String> = children
        .into_iter()
        .map(|(mut child, result)| {
            assert!(child.wait().unwrap().success());
            fs::read_to_string(result).unwrap()
        })
        .collect();
    outcomes.sort();
    assert_eq!(outcomes, vec![format!("ok {}", staged.content_hash), "proposal_not_pending".to_owned()]);
    assert_eq!(vault.audit_for(&staged.proposal_id).len(), 1);
    assert_eq!(vault.hash(&staged.target), staged.content_hash);
}

#[test]
fn edits_have_a_json_schema() {
    let schema = serde_json::to_value(schemars::schema_for!(Edit)).unwrap();
    let text = schema.to_string();
    for op in ["replace_all", "replace_section", "append", "prepend", "find_replace", "set_frontmatter"] {
        assert!(text.contains(&format!("\"{op}\"")), "{op} missing from {text}");
    }
    let validator = jsonschema::validator_for(&schema).unwrap();
    assert!(validator.is_valid(&json!({"op": "find_replace", "find": "a", "replace": "b"})));
    assert!(!validator.is_valid(&json!({"op": "find_replace", "find": "a"})));
}

#[test]
fn different_proposals_apply_side_by_side() {
    let vault = vault();
    let staged: Vec<Staged> =
        (0..6).map(|i| vault.propose(&note(&format!("parallel {i}"))).unwrap()).collect();
    std::thread::scope(|scope| {
        for chunk in staged.chunks(2) {
            let sandbox = vault.reopen();
            scope.spawn(move || {
                for one in chunk {
                    write::apply(&sandbox, &one.proposal_id, Actor::Cli, &mut no_index).unwrap();
                }
            });
        }
    });
    let audit = vault.audit();
    assert_eq!(audit.len(), 6);
    for line in &audit {
        assert_valid(&schema("audit.schema.json"), line);
    }
}

// ---------------------------------------------------------------- reject, list, ids

#[test]
fn reject_moves_the_proposal_with_its_reason_and_logs_it() {
    let vault = vault();
    let staged = vault.patch("z/设计.md", vec![Edit::Append { content: "no".to_owned() }]).unwrap();
    let before = vault.read("z/设计.md");
    assert_eq!(
        code(write::reject(&vault.sandbox, &staged.proposal_id, "  ", Actor::Cli)),
        ErrorCode::InvalidArgument
    );
    let rejected = write::reject(&vault.sandbox, &staged.proposal_id, "not wanted", Actor::Cli).unwrap();
    assert_eq!(vault.read("z/设计.md"), before);
    assert!(rejected.archive.starts_with("inbox/rejected/"));
    let files = vault.files_under(&rejected.archive);
    assert_eq!(files.len(), 4, "{files:?}");
    let record = files.iter().find(|file| file.ends_with(".rejection.json")).unwrap();
    let record: Value = serde_json::from_slice(&vault.read(record)).unwrap();
    assert_eq!(record["reason"], "not wanted");
    assert!(vault.files_under("inbox/patch").is_empty());
    let audit = vault.audit();
    assert_eq!(audit, vec![rejected.audit.clone()]);
    assert_eq!(audit[0]["status"], "rejected");
    assert_eq!(audit[0]["reason"], "not wanted");
    assert_valid(&schema("audit.schema.json"), &audit[0]);
    assert_eq!(code(apply(&vault, &staged.proposal_id)), ErrorCode::ProposalNotPending);
    assert_eq!(
        code(write::reject(&vault.sandbox, &staged.proposal_id, "again", Actor::Cli)),
        ErrorCode::ProposalNotPending
    );
    let all = write::list(&vault.sandbox, StatusFilter::All, 10).unwrap();
    assert_eq!(all.len(), 1);
    assert_eq!(all[0].status, ProposalStatus::Rejected);
    assert!(write::list(&vault.sandbox, StatusFilter::Pending, 10).unwrap().is_empty());
}

#[test]
fn list_shows_live_checks_newest_first() {
    let vault = vault();
    let older = write::propose_new(&vault.sandbox, &vault.limits, &note("older"), now()).unwrap();
    let later: Timestamp = "2026-01-21T00:00:00Z".parse().unwrap();
    let newer = write::propose_new(&vault.sandbox, &vault.limits, &note("newer"), later).unwrap();
    let patch = vault.patch("z/设计.md", vec![Edit::Append { content: "p".to_owned() }]).unwrap();
    assert_eq!(write::pending_count(&vault.sandbox), 3);
    let listed = write::list(&vault.sandbox, StatusFilter::Pending, 10).unwrap();
    let ids: Vec<&str> = listed.iter().map(|view| view.proposal_id.as_str()).collect();
    assert_eq!(ids[0], newer.proposal_id);
    assert!(ids.contains(&older.proposal_id.as_str()) && ids.contains(&patch.proposal_id.as_str()));
    for view in &listed {
        assert!(view.checks.intact && view.checks.base_current && view.checks.target_free, "{view:?}");
        assert_eq!(view.reason, if view.kind == ProposalKind::Patch { "test" } else { "a test proposal" });
    }
    assert_eq!(write::list(&vault.sandbox, StatusFilter::Pending, 1).unwrap().len(), 1);
    apply(&vault, &older.proposal_id).unwrap();
    let applied = write::list(&vault.sandbox, StatusFilter::Applied, 10).unwrap();
    assert_eq!(applied.len(), 1);
    assert_eq!(applied[0].status, ProposalStatus::Applied);
    assert_eq!(write::list(&vault.sandbox, StatusFilter::All, 10).unwrap().len(), 3);
    assert_eq!(write::pending_count(&vault.sandbox), 2);
    let json = serde_json::to_value(&applied[0]).unwrap();
    assert_eq!(json["status"], "applied");
    assert_eq!(json["kind"], "new");
}

#[test]
fn resolve_id_accepts_ids_prefixes_and_slugs() {
    let vault = vault();
    let staged = vault.propose(&note("备忘 one")).unwrap();
    let other = vault.propose(&note("备忘 one")).unwrap();
    let stem = format!("备忘 one-{}", &staged.proposal_id[2..10]);
    assert_eq!(write::resolve_id(&vault.sandbox, &staged.proposal_id).unwrap(), staged.proposal_id);
    assert_eq!(write::resolve_id(&vault.sandbox, &stem).unwrap(), staged.proposal_id);
    assert_eq!(write::resolve_id(&vault.sandbox, &staged.proposal_id[..12]).unwrap(), staged.proposal_id);
    let err = write::resolve_id(&vault.sandbox, "备忘 one").unwrap_err();
    assert_eq!(err.code, ErrorCode::InvalidArgument);
    assert!(err.message.contains(&other.proposal_id));
    assert_eq!(code(write::resolve_id(&vault.sandbox, "nothing")), ErrorCode::ProposalNotFound);
    assert_eq!(code(write::resolve_id(&vault.sandbox, "p_")), ErrorCode::ProposalNotFound);
}

/// Temporary files of atomic writes anywhere in a folder.
fn temp_files(root: &Path) -> Vec<String> {
    walkdir::WalkDir::new(root)
        .into_iter()
        .filter_map(|entry| entry.ok())
        .filter(|entry| entry.file_name().to_string_lossy().contains(".kb-tmp"))
        .map(|entry| rel_of(root, entry.path()))
        .collect()
}

#[test]
fn no_temporary_files_are_left_anywhere() {
    let vault = vault();
    let new = vault.propose(&note("tidy")).unwrap();
    let patch = vault.patch("z/设计.md", vec![Edit::Append { content: "tidy".to_owned() }]).unwrap();
    let _ = vault.propose(&note("备份仓库"));
    apply(&vault, &new.proposal_id).unwrap();
    apply(&vault, &patch.proposal_id).unwrap();
    let rejected = vault.propose(&note("tidy 2")).unwrap();
    write::reject(&vault.sandbox, &rejected.proposal_id, "no", Actor::Mcp).unwrap();
    assert_eq!(temp_files(&vault.root), Vec::<String>::new());
}

// ---------------------------------------------------------------- properties

/// Text made of pieces that matter to the edits: fences, headings, frontmatter
/// markers, CRLF, BOMs, multi-byte characters.
fn text_strategy() -> impl Strategy<Value = String> {
    let piece = prop_oneof![
        Just("---\n".to_owned()),
        Just("---\r\n".to_owned()),
        Just("# A\n".to_owned()),
        Just("## b\r\n".to_owned()),
        Just("```\n".to_owned()),
        Just("~~~~\n".to_owned()),
        Just("key: value\n".to_owned()),
        Just("  - item\n".to_owned()),
        Just("\u{feff}".to_owned()),
        Just("\r".to_owned()),
        Just("\n".to_owned()),
        "[a-c#:\\- 中\u{1F600}]{0,6}",
    ];
    prop::collection::vec(piece, 0..12).prop_map(|pieces| pieces.concat())
}

fn value_strategy() -> impl Strategy<Value = Value> {
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::Bool),
        any::<i32>().prop_map(|n| json!(n)),
        "[a-z0-9:#'\" ,\\[\\]{}\\-中]{0,8}".prop_map(Value::String),
        Just(json!("yes")),
        Just(json!("1:30")),
        Just(json!("\u{7f}\u{85}")),
    ];
    leaf.prop_recursive(2, 8, 3, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..3).prop_map(Value::Array),
            prop::collection::btree_map("[a-z:# ]{1,4}", inner, 0..3)
                .prop_map(|map| Value::Object(map.into_iter().collect())),
        ]
    })
}

fn edit_strategy() -> impl Strategy<Value = Edit> {
    let short = "[a-c#\\n:中]{0,5}";
    prop_oneof![
        text_strategy().prop_map(|content| Edit::ReplaceAll { content }),
        (short, text_strategy()).prop_map(|(heading, content)| Edit::ReplaceSection { heading, content }),
        text_strategy().prop_map(|content| Edit::Append { content }),
        text_strategy().prop_map(|content| Edit::Prepend { content }),
        (short, short).prop_map(|(find, replace)| Edit::FindReplace { find, replace }),
        prop::collection::btree_map("[a-z: ]{0,4}", value_strategy(), 0..3)
            .prop_map(|map| Edit::SetFrontmatter { fields: map.into_iter().collect() }),
    ]
}

fn runner(cases: u32) -> TestRunner {
    TestRunner::new(Config { cases, failure_persistence: None, ..Config::default() })
}

#[test]
fn apply_edits_never_panics() {
    runner(256)
        .run(&(text_strategy(), prop::collection::vec(edit_strategy(), 0..4)), |(text, edits)| {
            if let Ok(result) = apply_edits(&text, &edits) {
                // A BOM is never duplicated or moved by an edit that does not name it.
                let named_bom = edits.iter().any(|edit| format!("{edit:?}").contains('\u{feff}'));
                if text.starts_with('\u{feff}') && !named_bom {
                    prop_assert!(result.starts_with('\u{feff}'), "the BOM moved");
                }
            }
            Ok(())
        })
        .unwrap();
}

#[test]
fn set_frontmatter_leaves_unnamed_lines_unchanged() {
    // Frontmatter entries: a single line, a block list, or a comment.
    let entry = prop_oneof![
        ("[a-f]", "[a-z0-9 ]{0,6}").prop_map(|(key, value)| (Some(key.clone()), format!("{key}: {value}\n"))),
        ("[a-f]", prop::collection::vec("[a-z]{1,4}", 1..3)).prop_map(|(key, items)| {
            let list: String = items.iter().map(|item| format!("  - {item}\n")).collect();
            (Some(key.clone()), format!("{key}:\n{list}"))
        }),
        "[a-z ]{0,6}".prop_map(|text| (None, format!("# {text}\n"))),
        Just((None, "\n".to_owned())),
    ];
    let fields = prop::collection::btree_map("[a-h]", value_strategy(), 1..4);
    let crlf = any::<bool>();
    runner(256)
        .run(&(prop::collection::vec(entry, 0..8), fields, crlf), |(entries, fields, crlf)| {
            let eol = if crlf { "\r\n" } else { "\n" };
            let mut yaml = String::new();
            for (_, text) in &entries {
                yaml.push_str(&text.replace('\n', eol));
            }
            let text = format!("---{eol}{yaml}---{eol}body{eol}");
            let fields: Map<String, Value> = fields.into_iter().collect();
            let result = apply_edits(&text, &[Edit::SetFrontmatter { fields: fields.clone() }]).unwrap();
            let named = |line: &str| fields.keys().any(|key| line.starts_with(&format!("{key}:")));
            let old = parse_frontmatter(&text).unwrap();
            let new = parse_frontmatter(&result).unwrap();
            let old_kept: Vec<&str> = text[old.yaml.clone()]
                .split_inclusive('\n')
                .scan(false, |in_named, line| {
                    // Lines of a named key: its `key:` line and its `  - ` items.
                    if named(line) {
                        *in_named = true;
                    } else if !line.starts_with("  - ") {
                        *in_named = false;
                    }
                    Some((*in_named, line))
                })
                .filter(|(in_named, _)| !in_named)
                .map(|(_, line)| line)
                .collect();
            let new_kept: Vec<&str> =
                result[new.yaml.clone()].split_inclusive('\n').filter(|line| !named(line)).collect();
            prop_assert_eq!(old_kept, new_kept);
            prop_assert_eq!(&result[new.end..], &text[old.end..]);
            if let Value::Object(map) = &new.value
                && old.error.is_none()
            {
                for (key, value) in &fields {
                    prop_assert_eq!(map.get(key).unwrap_or(&Value::Null), value, "key {}", key);
                }
            }
            Ok(())
        })
        .unwrap();
}

#[test]
fn staging_then_applying_reproduces_the_staged_text() {
    let vault = vault();
    let counter = Cell::new(0u32);
    let body = prop::collection::vec("[a-z中 #]{0,10}", 1..6);
    let edit = prop_oneof![
        "[a-z中\\n]{1,8}".prop_map(|content| Edit::Append { content }),
        "[a-z中\\n]{1,8}".prop_map(|content| Edit::Prepend { content }),
        Just(Edit::FindReplace { find: "UNIQUE".to_owned(), replace: "replaced\nline".to_owned() }),
        ("[a-z]{1,3}", value_strategy()).prop_map(|(key, value)| Edit::SetFrontmatter {
            fields: fields(json!({ key: if value.is_null() { json!("x") } else { value } }))
        }),
    ];
    let shape = (any::<bool>(), any::<bool>(), any::<bool>(), any::<bool>());
    runner(32)
        .run(
            &(body, prop::collection::vec(edit, 1..3), shape),
            |(lines, edits, (crlf, bom, frontmatter, final_nl))| {
                counter.set(counter.get() + 1);
                let eol = if crlf { "\r\n" } else { "\n" };
                let mut text = String::new();
                if bom {
                    text.push('\u{feff}');
                }
                if frontmatter {
                    text.push_str(&format!("---{eol}title: t{eol}---{eol}"));
                }
                text.push_str(&lines.join(eol));
                text.push_str(&format!("{eol}UNIQUE"));
                if final_nl {
                    text.push_str(eol);
                }
                let path = format!("z/prop/{}.md", counter.get());
                vault.write(&path, &text);
                let expected = apply_edits(&text, &edits);
                let staged = vault.patch(&path, edits);
                match (expected, staged) {
                    (Ok(expected), Ok(staged)) => {
                        prop_assert_eq!(vault.text(&staged.files[0]), expected.clone());
                        write::apply(&vault.sandbox, &staged.proposal_id, Actor::Cli, &mut no_index).unwrap();
                        prop_assert_eq!(vault.text(&path), expected.clone());
                        prop_assert_eq!(expected.starts_with('\u{feff}'), bom);
                        prop_assert_eq!(expected.ends_with('\n'), final_nl);
                        if crlf {
                            prop_assert!(!expected.replace("\r\n", "").contains('\n'));
                        }
                    }
                    (Err(expected), Err(staged)) => prop_assert_eq!(expected.code, staged.code),
                    (Ok(expected), Err(staged)) => {
                        // Only a no-op is refused beyond what apply_edits refuses.
                        prop_assert_eq!(expected, text);
                        prop_assert_eq!(staged.code, ErrorCode::InvalidArgument);
                    }
                    (Err(expected), Ok(_)) => {
                        prop_assert!(false, "staged what apply_edits refused: {}", expected)
                    }
                }
                Ok(())
            },
        )
        .unwrap();
}

/// The property above checks that staging, `apply_edits` and applying agree;
/// this table says what they agree on, written out by hand: line endings, BOM,
/// frontmatter and the final newline kept through every kind of edit.
#[test]
fn staging_then_applying_writes_exactly_the_expected_text() {
    let vault = vault();
    let cases: Vec<(&str, Vec<Edit>, &str)> = vec![
        (
            "\u{feff}---\r\ntitle: t\r\n---\r\nabc\r\nUNIQUE",
            vec![
                Edit::Append { content: "x\ny".to_owned() },
                Edit::Prepend { content: "top".to_owned() },
                Edit::FindReplace { find: "UNIQUE".to_owned(), replace: "replaced\nline".to_owned() },
                Edit::SetFrontmatter { fields: fields(json!({"k": "v"})) },
            ],
            "\u{feff}---\r\ntitle: t\r\nk: v\r\n---\r\ntop\r\nabc\r\nreplaced\r\nline\r\nx\r\ny",
        ),
        ("a中\nUNIQUE\n", vec![Edit::Prepend { content: "p".to_owned() }], "p\na中\nUNIQUE\n"),
        (
            "---\ntitle: t\n---\nbody\nUNIQUE\n",
            vec![
                Edit::SetFrontmatter { fields: fields(json!({"n": 1})) },
                Edit::Append { content: "中".to_owned() },
            ],
            // The key is quoted: YAML 1.1 readers take a bare `n` for false.
            "---\ntitle: t\n\"n\": 1\n---\nbody\nUNIQUE\n中\n",
        ),
        (
            "body\r\nUNIQUE\r\n",
            vec![Edit::FindReplace { find: "UNIQUE".to_owned(), replace: "a\nb".to_owned() }],
            "body\r\na\r\nb\r\n",
        ),
    ];
    for (i, (text, edits, expected)) in cases.into_iter().enumerate() {
        let path = format!("z/literal/{i}.md");
        vault.write(&path, text);
        let staged = vault.patch(&path, edits).unwrap();
        assert_eq!(vault.text(&staged.files[0]), expected, "case {i}: staged");
        write::apply(&vault.sandbox, &staged.proposal_id, Actor::Cli, &mut no_index).unwrap();
        assert_eq!(vault.text(&path), expected, "case {i}: applied");
    }
}

// ---------------------------------------------------------------- racing saves (issue 12, item 2)

/// The text of the racing editor's save `i`.
fn save_text(i: u64) -> String {
    format!("# Race\n\nsave {i}\n")
}

/// A note's text without the lines applies added (`apply <k>`): the save it was made over.
fn without_applies(text: &str) -> String {
    let lines: Vec<&str> =
        text.lines().filter(|line| !line.starts_with("apply ") && !line.is_empty()).collect();
    lines.join("\n")
}

/// Whether `text` is save `i` with applies added on top.
fn holds_save(text: &str, i: u64) -> bool {
    without_applies(text) == without_applies(&save_text(i))
}

/// The note's text once it stops changing, as an editor reads a file again
/// after the change events settle: an apply that meets a save exchanges its
/// text in and, finding the save in the file it took away, exchanges that
/// file straight back (`conflict`), and a read in between sees the proposal's
/// text for an instant. What the note holds for good is what counts: the
/// text as soon as it holds save `i`, else once unchanged for half a second
/// (at most 5 s).
fn settled_text(path: &Path, i: u64) -> String {
    use std::time::{Duration, Instant};
    let started = Instant::now();
    let mut text = fs::read_to_string(path).unwrap();
    let mut since = Instant::now();
    while started.elapsed() < Duration::from_secs(5) {
        std::thread::sleep(Duration::from_millis(20));
        let now = fs::read_to_string(path).unwrap();
        if holds_save(&now, i) {
            return now;
        }
        if now != text {
            (text, since) = (now, Instant::now());
        } else if since.elapsed() >= Duration::from_millis(500) {
            break;
        }
    }
    text
}

/// Conflict copies of a note (`<stem>.conflict-…`), kept apart in the inbox's
/// `conflicts/` folder, with their text.
fn conflict_copies(vault: &Vault, stem: &str) -> Vec<(String, String)> {
    common::texts_under(&vault.path("inbox/conflicts"), &format!("{stem}.conflict-"))
        .into_iter()
        .map(|(path, text)| (rel_of(&vault.root, &path), text))
        .collect()
}

/// What a racing run saw.
#[derive(Debug, Default)]
struct RaceFigures {
    saves: u64,
    applies: u64,
    applied: u64,
    conflicts: u64,
    stale: u64,
    lost: Vec<String>,
    /// The applies that answered `conflict`, by number.
    conflicted: std::collections::BTreeSet<u64>,
}

/// How the racing editor saves: by one style, or alternately in place and by rename.
#[derive(Debug, Clone, Copy)]
enum Style {
    Alternate,
    Only(Editing),
}

/// How the racing editor times its saves.
#[derive(Debug, Clone, Copy)]
enum Saves {
    /// One save every so often, whatever the applies do.
    Steady(std::time::Duration),
    /// One save per apply, at a random moment within this long after the apply
    /// starts (so that saves land in every part of it), and none in between.
    Aimed(std::time::Duration),
}

/// An editor saves the note (in `style`) while `applies` patches are proposed
/// and applied to it. A whole-note save is lost when the next thing the editor
/// finds in the note is neither that save nor an apply made over that save, and
/// no conflict copy holds it; an appended save (`save <i>` on a line of its own)
/// is lost when neither the note nor a conflict copy holds its line at the end.
fn race(applies: u64, saves: Saves, style: Style) -> RaceFigures {
    use std::sync::Mutex;
    use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
    use std::time::{Duration, Instant};
    let vault = vault();
    let rel = "z/race.md";
    vault.write(rel, save_text(0));
    let path = vault.path(rel);
    let swap = vault.path("z/.race.md.editor-swp");
    let stop = AtomicBool::new(false);
    // Aimed saves: the delay in microseconds plus one; 0 when no save is due.
    let aim = AtomicU64::new(0);
    // (save i, what the editor found in the note right before save i + 1).
    let found: Mutex<Vec<(u64, String)>> = Mutex::new(Vec::new());
    let mut figures = RaceFigures::default();
    let mut seed = u64::from(std::process::id()) | 1;
    let mut random = move |below: u64| {
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        seed % below.max(1)
    };
    let last_save = std::thread::scope(|scope| {
        let editor = scope.spawn(|| {
            let mut i = 0;
            let mut last = Instant::now();
            while !stop.load(Ordering::Relaxed) {
                match saves {
                    Saves::Steady(every) => {
                        let wait = every.saturating_sub(last.elapsed());
                        std::thread::sleep(wait);
                    }
                    Saves::Aimed(_) => {
                        let due = aim.swap(0, Ordering::AcqRel);
                        if due == 0 {
                            std::thread::sleep(Duration::from_micros(200));
                            continue;
                        }
                        std::thread::sleep(Duration::from_micros(due - 1));
                    }
                }
                last = Instant::now();
                let mut before = fs::read_to_string(&path).unwrap();
                if !matches!(style, Style::Only(Editing::Append)) && !holds_save(&before, i) {
                    before = settled_text(&path, i);
                }
                found.lock().unwrap().push((i, before));
                i += 1;
                match style {
                    Style::Only(Editing::Append) => Editing::Append.save(&path, &format!("save {i}\n")),
                    Style::Only(editing) => editing.save(&path, &save_text(i)),
                    Style::Alternate if i % 2 == 0 => fs::write(&path, save_text(i)).unwrap(),
                    Style::Alternate => {
                        fs::write(&swap, save_text(i)).unwrap();
                        fs::rename(&swap, &path).unwrap();
                    }
                }
            }
            i
        });
        // A panic below must still stop the editor, or the scope waits for it forever.
        let _stop = common::StopOnDrop(&stop);
        for k in 0..applies {
            figures.applies += 1;
            let base = vault.read(rel);
            let request = PatchRequest {
                path: rel.to_owned(),
                base_hash: content_hash(&base),
                reason: "race".to_owned(),
                edits: vec![Edit::Append { content: format!("apply {k}") }],
            };
            let Ok(staged) = write::propose_patch(&vault.sandbox, &vault.limits, &request, now()) else {
                continue;
            };
            if let Saves::Aimed(within) = saves {
                aim.store(random(within.as_micros() as u64) + 1, Ordering::Release);
            }
            match write::apply(&vault.sandbox, &staged.proposal_id, Actor::Mcp, &mut no_index) {
                Ok(_) => figures.applied += 1,
                Err(err) if err.code == ErrorCode::StaleBase => {
                    figures.stale += 1;
                    // Out of the pending cap's way: the race goes on with fresh proposals.
                    let _ = write::reject(&vault.sandbox, &staged.proposal_id, "stale", Actor::Cli);
                }
                Err(err) if err.code == ErrorCode::Conflict => {
                    figures.conflicts += 1;
                    figures.conflicted.insert(k);
                    let details = err.details.clone().unwrap_or_default();
                    assert_eq!(details["target"], rel, "{err}");
                    assert!(details.get("conflict_copy").is_some(), "{err}");
                    let pending = write::list(&vault.sandbox, StatusFilter::Pending, 500).unwrap();
                    assert!(
                        pending.iter().any(|view| view.proposal_id == staged.proposal_id),
                        "a conflicting proposal stays pending"
                    );
                    let _ = write::reject(&vault.sandbox, &staged.proposal_id, "conflict", Actor::Cli);
                }
                Err(err) => panic!("apply {k}: {err}"),
            }
            // Let the aimed save land before the next proposal reads the note.
            while aim.load(Ordering::Acquire) != 0 {
                std::thread::sleep(Duration::from_micros(200));
            }
            std::thread::sleep(Duration::from_millis(1));
        }
        stop.store(true, Ordering::Relaxed);
        editor.join().unwrap()
    });
    figures.saves = last_save;
    // What the next apply or server start does: a save that reached a
    // replaced file after its apply had finished becomes a conflict copy.
    write::recover(&vault.sandbox, Actor::Cli, &mut |_| Ok(())).unwrap();
    let copies = conflict_copies(&vault, "race");
    if let Style::Only(Editing::Append) = style {
        let mut texts = vec![vault.text(rel)];
        texts.extend(copies.into_iter().map(|(_, text)| text));
        for i in 0..last_save {
            let line = format!("save {i}");
            if !texts.iter().any(|text| text.lines().any(|l| l == line)) {
                figures.lost.push(format!("save {i}: its line is in neither the note nor a conflict copy"));
            }
        }
        return figures;
    }
    let kept = |i: u64| copies.iter().any(|(_, text)| text == &save_text(i));
    let mut found = found.into_inner().unwrap();
    found.push((last_save, vault.text(rel)));
    for (i, text) in found {
        if !holds_save(&text, i) && !kept(i) {
            let conflicted: Vec<&str> = text
                .lines()
                .filter(|line| {
                    line.strip_prefix("apply ")
                        .and_then(|k| k.parse().ok())
                        .is_some_and(|k| figures.conflicted.contains(&k))
                })
                .collect();
            figures.lost.push(format!(
                "save {i}: the editor next found {text:?} (answered conflict: {conflicted:?})"
            ));
        }
    }
    figures
}

#[test]
fn a_save_racing_an_apply_is_never_lost() {
    // tests/stress/racing-saves.sh runs this long: KB_RACE_APPLIES=300, steady saves.
    let env = |name: &str| std::env::var(name).ok().and_then(|n| n.parse::<u64>().ok());
    let applies = env("KB_RACE_APPLIES").unwrap_or(30);
    let saves = match env("KB_RACE_SAVE_MS") {
        Some(ms) => Saves::Steady(std::time::Duration::from_millis(ms)),
        None => Saves::Aimed(std::time::Duration::from_millis(env("KB_RACE_AIM_MS").unwrap_or(60))),
    };
    let figures = race(applies, saves, Style::Alternate);
    eprintln!(
        "racing saves ({saves:?}): {} applies: {} applied, {} conflict, {} stale_base; {} saves, {} lost",
        figures.applies,
        figures.applied,
        figures.conflicts,
        figures.stale,
        figures.saves,
        figures.lost.len()
    );
    assert!(figures.lost.is_empty(), "{} saves lost: {:#?}", figures.lost.len(), figures.lost);
    assert!(figures.saves > 0 && figures.applies == applies);
}

/// Issue 34, item 3: 1,000 patches (`KB_RACE_APPLIES` to change it) applied to
/// a note per editing style, each against an editor saving every 20 ms in that
/// style, and not one save lost. An appending editor that opened the note just
/// before a swap writes just after it, into the file the swap replaced: the
/// apply finds that late save before its commit point, puts it back into the
/// note and stays pending.
#[test]
fn no_save_is_lost_to_a_patch_in_any_editing_style() {
    let applies = std::env::var("KB_RACE_APPLIES").ok().and_then(|n| n.parse().ok()).unwrap_or(1000);
    let runs: Vec<(Editing, RaceFigures)> = std::thread::scope(|scope| {
        let handles: Vec<_> = Editing::ALL
            .map(|editing| {
                scope.spawn(move || {
                    let saves = Saves::Steady(std::time::Duration::from_millis(20));
                    (editing, race(applies, saves, Style::Only(editing)))
                })
            })
            .into_iter()
            .collect();
        handles.into_iter().map(|handle| handle.join().unwrap()).collect()
    });
    for (editing, figures) in &runs {
        eprintln!(
            "racing patches ({editing:?}): {} applies: {} applied, {} conflict, {} stale_base; {} saves, {} lost",
            figures.applies,
            figures.applied,
            figures.conflicts,
            figures.stale,
            figures.saves,
            figures.lost.len()
        );
    }
    for (editing, figures) in runs {
        assert!(
            figures.lost.is_empty(),
            "{editing:?}: {} saves lost: {:#?}",
            figures.lost.len(),
            figures.lost
        );
        assert!(figures.saves > 0 && figures.applies == applies && figures.applied > 0, "{editing:?}");
    }
}

/// The deterministic window of issue 34, item 3: an editor opens the note
/// right before the swap (`Step::Swapping`) and appends right after it
/// (`Step::Written`). The save must end up in the note, the apply answer
/// `conflict` and the proposal stay pending.
#[test]
fn an_append_opened_before_the_swap_and_written_after_it_is_kept() {
    use std::io::Write as _;
    let vault = vault();
    let rel = "z/late.md";
    vault.write(rel, "# Late\n\nfirst\n");
    let request = PatchRequest {
        path: rel.to_owned(),
        base_hash: content_hash(&vault.read(rel)),
        reason: "late".to_owned(),
        edits: vec![Edit::Append { content: "from the proposal".to_owned() }],
    };
    let staged = write::propose_patch(&vault.sandbox, &vault.limits, &request, now()).unwrap();
    let mut editor: Option<fs::File> = None;
    let err = write::apply_with_failpoint(
        &vault.sandbox,
        &staged.proposal_id,
        Actor::Cli,
        &mut no_index,
        &mut |at| {
            match at {
                Step::Swapping => {
                    editor = Some(fs::OpenOptions::new().append(true).open(vault.path(rel)).unwrap())
                }
                Step::Written => editor.take().unwrap().write_all(b"the person's line\n").unwrap(),
                _ => {}
            }
            Ok(())
        },
    )
    .unwrap_err();
    assert_eq!(err.code, ErrorCode::Conflict, "{err}");
    assert_eq!(vault.text(rel), "# Late\n\nfirst\nthe person's line\n", "the late save is in the note");
    let pending = write::list(&vault.sandbox, StatusFilter::Pending, 10).unwrap();
    assert!(pending.iter().any(|view| view.proposal_id == staged.proposal_id), "the proposal stays pending");
    assert!(temp_files(&vault.root).is_empty(), "{:?}", temp_files(&vault.root));
    // Applied again, the proposal meets the note as the person left it: stale.
    assert_eq!(code(apply(&vault, &staged.proposal_id)), ErrorCode::StaleBase);
}

/// The window no watch can close: an editor saving in place found the note's
/// file just before the swap, and its open (which truncates) and its write
/// come after the apply has finished, when nothing yet held the file open (a
/// truncate can wait that long for the disk's journal). The replaced file is
/// parked in the inbox rather than removed, so the save lands there, and the
/// next apply or start keeps it as a conflict copy.
#[test]
fn a_save_into_the_replaced_file_after_the_apply_is_kept() {
    use std::io::Write as _;
    let vault = vault();
    let rel = "z/late.md";
    vault.write(rel, "# Late\n\nfirst\n");
    let staged = vault.patch(rel, vec![Edit::Append { content: "from the proposal".to_owned() }]).unwrap();
    let mut editor: Option<fs::File> = None;
    write::apply_with_failpoint(&vault.sandbox, &staged.proposal_id, Actor::Cli, &mut no_index, &mut |at| {
        if at == Step::Archived {
            // The open completes only now, past the watch, on the file the
            // swap replaced (found before the swap, wherever it is now).
            assert!(temp_files(&vault.path("z")).is_empty(), "parked before the archive");
            let parked = common::files_in(&vault.path("inbox/displaced"));
            assert_eq!(parked.len(), 1, "{parked:?}");
            assert_eq!(fs::read_to_string(&parked[0]).unwrap(), "# Late\n\nfirst\n");
            editor = Some(fs::OpenOptions::new().write(true).truncate(true).open(&parked[0]).unwrap());
        }
        Ok(())
    })
    .unwrap();
    editor.take().unwrap().write_all(b"# Late\n\nthe person's save\n").unwrap();
    assert_eq!(vault.text(rel), "# Late\n\nfirst\nfrom the proposal\n");
    assert!(temp_files(&vault.root).is_empty(), "{:?}", temp_files(&vault.root));
    let recovery = write::recover(&vault.sandbox, Actor::Cli, &mut |_| Ok(())).unwrap();
    assert_eq!(recovery.swept.len(), 1, "{recovery:?}");
    let copies = conflict_copies(&vault, "late");
    assert_eq!(copies.len(), 1, "{copies:?}");
    assert_eq!(copies[0].1, "# Late\n\nthe person's save\n");
    let listed = write::conflict_copies(&vault.sandbox);
    assert_eq!(listed.len(), 1);
    assert_eq!(listed[0].note, rel, "the copy names its note");
}

// ---------------------------------------------------------------- permissions (issue 12, item 3)

#[cfg(unix)]
fn mode_of(vault: &Vault, rel: &str) -> u32 {
    use std::os::unix::fs::PermissionsExt;
    fs::metadata(vault.path(rel)).unwrap().permissions().mode() & 0o7777
}

#[cfg(unix)]
#[test]
fn applying_and_staging_never_widen_a_notes_permissions() {
    use std::os::unix::fs::PermissionsExt;
    for mode in [0o600, 0o640, 0o400] {
        let vault = vault();
        let rel = "z/设计.md";
        fs::set_permissions(vault.path(rel), fs::Permissions::from_mode(mode)).unwrap();
        let staged = vault.patch(rel, vec![Edit::Append { content: "private".to_owned() }]).unwrap();
        for file in &staged.files {
            let staged_mode = mode_of(&vault, file);
            assert_eq!(staged_mode & !mode & 0o777, 0, "{file} is {staged_mode:o}, the note {mode:o}");
        }
        apply(&vault, &staged.proposal_id).unwrap();
        assert_eq!(mode_of(&vault, rel), mode, "the applied note keeps its mode");
        assert_eq!(vault.hash(rel), staged.content_hash);
        // Archived copies stay as they were staged.
        for file in vault.files_under("inbox/applied") {
            assert_eq!(mode_of(&vault, &file) & !mode & 0o777, 0, "{file}");
        }
    }
}

#[cfg(unix)]
#[test]
fn a_new_note_gets_the_default_mode() {
    let vault = vault();
    let staged = vault.propose(&note("default mode")).unwrap();
    apply(&vault, &staged.proposal_id).unwrap();
    // What this process creates by default (its umask decides).
    vault.write("z/probe.md", "probe");
    assert_eq!(mode_of(&vault, &staged.target), mode_of(&vault, "z/probe.md"));
}

// ---------------------------------------------------------------- audit line (issue 12, item 6)

#[test]
fn an_apply_that_cannot_append_its_audit_line_says_so_precisely() {
    let vault = vault();
    let staged = vault.propose(&note("unaudited")).unwrap();
    // Right before the append, something stops it (here a folder where the log should be).
    let log = vault.path("inbox/_applied.jsonl");
    let err = write::apply_with_failpoint(
        &vault.sandbox,
        &staged.proposal_id,
        Actor::Cli,
        &mut no_index,
        &mut |at| {
            if at == Step::Indexed {
                let _ = fs::remove_file(&log);
                fs::create_dir_all(&log).unwrap();
            }
            Ok(())
        },
    )
    .unwrap_err();
    assert!(err.message.contains(&format!("proposal {} is applied", staged.proposal_id)), "{err}");
    assert!(err.message.contains("audit line could not be appended to inbox/_applied.jsonl"), "{err}");
    assert!(err.hint.as_deref().unwrap().contains("do not apply it again"), "{err}");
    assert_eq!(err.details.as_ref().unwrap()["applied"], true);
    assert_eq!(vault.hash(&staged.target), staged.content_hash);
    // Once the log can be written again, the next start completes it.
    fs::remove_dir(vault.path("inbox/_applied.jsonl")).unwrap();
    let recovery = write::recover(&vault.sandbox, Actor::Cli, &mut no_index).unwrap();
    assert_eq!(recovery.completed, vec![staged.proposal_id.clone()]);
    assert_eq!(vault.audit_for(&staged.proposal_id).len(), 1);
}

// ---------------------------------------------------------------- crash leftovers (issue 12, item 8)

#[test]
fn the_next_start_removes_what_killed_proposes_and_applies_left() {
    let vault = vault();
    let rel = "z/设计.md";
    // A propose killed before its metadata: the staged note and diff are orphans.
    let orphan = vault.patch(rel, vec![Edit::Append { content: "orphan".to_owned() }]).unwrap();
    fs::remove_file(vault.path(Vault::meta_file(&orphan))).unwrap();
    // ... long enough ago (a propose under way is never swept).
    let young = vault.patch(rel, vec![Edit::Append { content: "young".to_owned() }]).unwrap();
    fs::remove_file(vault.path(Vault::meta_file(&young))).unwrap();
    let long_ago = std::time::SystemTime::now() - std::time::Duration::from_secs(3600);
    for file in orphan.files.iter().filter(|file| vault.exists(file)) {
        fs::File::options().write(true).open(vault.path(file)).unwrap().set_modified(long_ago).unwrap();
    }
    // A killed write's temporary file in the inbox.
    vault.write("inbox/new/.x-0123abcd.md.kb-tmp-0123456789abcdef", "half");
    fs::File::options()
        .write(true)
        .open(vault.path("inbox/new/.x-0123abcd.md.kb-tmp-0123456789abcdef"))
        .unwrap()
        .set_modified(std::time::SystemTime::now() - std::time::Duration::from_secs(3600))
        .unwrap();
    // A pending patch whose apply was killed: its temporary copy beside the note
    // (the full staged text, and a part of it).
    let pending = vault.patch(rel, vec![Edit::Append { content: "pending".to_owned() }]).unwrap();
    let staged = vault.read(&pending.files[0]);
    vault.write("z/.设计.md.kb-tmp-00000000000000aa", &staged);
    vault.write("z/.设计.md.kb-tmp-00000000000000bb", &staged[..staged.len() / 2]);
    // A temporary file holding bytes that are not ours: it may be a person's save.
    vault.write("z/.设计.md.kb-tmp-00000000000000cc", "a save of the person's");
    // Files that only look similar are never touched.
    vault.write("inbox/patch/my notes.md", "mine");
    vault.write("z/.设计.md.kb-tmp-notours", "not ours");
    vault.write("z/.other.kb-tmp-0123456789abcdef", "not beside a proposal's note");

    let recovery = write::recover(&vault.sandbox, Actor::Cli, &mut no_index).unwrap();
    assert!(recovery.failed.is_empty(), "{recovery:?}");
    for file in &orphan.files {
        assert!(!vault.exists(file), "{file} is an orphan: {recovery:?}");
    }
    assert!(!vault.exists("inbox/new/.x-0123abcd.md.kb-tmp-0123456789abcdef"));
    assert!(!vault.exists("z/.设计.md.kb-tmp-00000000000000aa"));
    assert!(!vault.exists("z/.设计.md.kb-tmp-00000000000000bb"));
    assert!(!vault.exists("z/.设计.md.kb-tmp-00000000000000cc"));
    let copies = conflict_copies(&vault, "设计");
    assert_eq!(copies.len(), 1, "{copies:?}");
    assert_eq!(copies[0].1, "a save of the person's");
    for kept in ["inbox/patch/my notes.md", "z/.设计.md.kb-tmp-notours", "z/.other.kb-tmp-0123456789abcdef"]
    {
        assert!(vault.exists(kept), "{kept} is not ours to remove");
    }
    for file in &pending.files {
        assert!(vault.exists(file), "{file} belongs to a pending proposal");
    }
    for file in young.files.iter().filter(|file| !file.ends_with(".proposal.json")) {
        assert!(vault.exists(file), "{file} may belong to a propose under way");
    }
    assert_eq!(recovery.swept.len(), 6, "{:#?}", recovery.swept);
    apply(&vault, &pending.proposal_id).unwrap();
}

#[test]
fn right_after_a_crash_a_proposal_without_its_audit_line_is_not_listed_applied() {
    let vault = vault();
    let staged = vault.propose(&note("half done")).unwrap();
    let err = write::apply_with_failpoint(
        &vault.sandbox,
        &staged.proposal_id,
        Actor::Cli,
        &mut no_index,
        &mut |at| if at == Step::Indexed { Err(Error::internal("killed")) } else { Ok(()) },
    )
    .unwrap_err();
    assert_eq!(err.message, "killed");
    assert!(vault.audit_for(&staged.proposal_id).is_empty());
    let listed = write::list(&vault.sandbox, StatusFilter::All, 50).unwrap();
    let view = listed.iter().find(|view| view.proposal_id == staged.proposal_id).unwrap();
    assert_eq!(view.status, ProposalStatus::Interrupted);
    write::recover(&vault.sandbox, Actor::Cli, &mut no_index).unwrap();
    let listed = write::list(&vault.sandbox, StatusFilter::Applied, 50).unwrap();
    assert_eq!(listed[0].status, ProposalStatus::Applied);
}

// ---------------------------------------------------------------- pending caps (issue 12, item 12)

#[test]
fn pending_proposals_are_capped_by_count_and_bytes() {
    let config =
        VaultConfig::parse(Some("[limits]\npending_max_count = 3\npending_max_bytes = 5000\n")).unwrap();
    assert_eq!((config.limits.pending_max_count, config.limits.pending_max_bytes), (3, 5000));
    let mut vault = vault();
    vault.limits.pending_max_count = 3;
    let first = vault.propose(&note("one")).unwrap();
    vault.propose(&note("two")).unwrap();
    vault.propose(&note("three")).unwrap();
    let before = vault.snapshot();
    let err = vault.propose(&note("four")).unwrap_err();
    assert_eq!(err.code, ErrorCode::TooLarge);
    assert!(
        err.message.contains("3 proposals are pending") && err.message.contains("pending_max_count"),
        "{err}"
    );
    assert!(err.hint.as_deref().unwrap().contains("apply or reject"), "{err}");
    assert_eq!(changed(&before, &vault.snapshot()), Vec::<String>::new(), "nothing was staged");
    apply(&vault, &first.proposal_id).unwrap();
    vault.propose(&note("four")).unwrap();

    let mut vault = self::vault();
    vault.limits.pending_max_bytes = 2000;
    vault.propose(&note("small")).unwrap();
    let big = NewNote { body: "x".repeat(3000), ..note("big") };
    let err = vault.propose(&big).unwrap_err();
    assert_eq!(err.code, ErrorCode::TooLarge);
    assert!(err.message.contains("pending_max_bytes (2000)"), "{err}");
}

// ---------------------------------------------------------------- cost independent of history (issue 12, item 12)

/// Issue 12, item 12: applying must not grow with the history. Here the audit
/// log starts with 2 GiB of garbage (a sparse file: no disk is used), more than
/// any read of the whole log allows, the rejected archive is not even a folder,
/// and the applied archive holds a thousand date folders: an apply, a reject's
/// recovery pass or a server start that read the log or walked the archive
/// would fail or be slow. They only read the log's end and the journal.
#[test]
fn issue_12_applying_reads_neither_the_whole_audit_log_nor_the_archive() {
    let vault = vault();
    let first = vault.propose(&note("first")).unwrap();
    apply(&vault, &first.proposal_id).unwrap();
    let log = vault.path("inbox/_applied.jsonl");
    let lines = fs::read(&log).unwrap();
    let huge = 2u64 << 30;
    {
        use std::io::Write;
        let mut file = fs::File::options().write(true).open(&log).unwrap();
        file.set_len(huge).unwrap();
        std::io::Seek::seek(&mut file, std::io::SeekFrom::End(0)).unwrap();
        file.write_all(b"\n").unwrap();
        file.write_all(&lines).unwrap();
    }
    vault.write("inbox/rejected", "not a folder");
    for day in 0..1000 {
        vault.write(
            &format!("inbox/applied/1990-{:02}-{:02}/x-0123abcd.proposal.json", day / 28 + 1, day % 28 + 1),
            "{",
        );
    }

    let patch = vault.patch("z/设计.md", vec![Edit::Append { content: "more".to_owned() }]).unwrap();
    let new = vault.propose(&note("second")).unwrap();
    let recovery = write::recover(&vault.reopen(), Actor::Mcp, &mut no_index).unwrap();
    assert_eq!(recovery, write::Recovery::default());
    assert_eq!(apply(&vault, &patch.proposal_id).unwrap().new_hash, patch.content_hash);
    // Interrupted after the archive: completed from the journal and the log's last line.
    let err =
        write::apply_with_failpoint(&vault.sandbox, &new.proposal_id, Actor::Cli, &mut no_index, &mut |at| {
            if at == Step::Archived { Err(Error::internal("crash")) } else { Ok(()) }
        })
        .unwrap_err();
    assert_eq!(err.message, "crash");
    let recovery = write::recover(&vault.reopen(), Actor::Mcp, &mut no_index).unwrap();
    assert_eq!(recovery.completed, vec![new.proposal_id.clone()], "{recovery:?}");
    assert_eq!(code(apply(&vault, &new.proposal_id)), ErrorCode::ProposalNotPending);

    let size = fs::metadata(&log).unwrap().len();
    assert!(size > huge, "the log was appended to, never rewritten");
    let mut file = fs::File::open(&log).unwrap();
    std::io::Seek::seek(&mut file, std::io::SeekFrom::Start(huge)).unwrap();
    let mut tail = String::new();
    std::io::Read::read_to_string(&mut file, &mut tail).unwrap();
    let ids: Vec<String> = tail
        .lines()
        .filter(|line| !line.is_empty())
        .map(|line| serde_json::from_str::<Value>(line).unwrap()["proposal_id"].as_str().unwrap().to_owned())
        .collect();
    assert_eq!(ids, [first.proposal_id, patch.proposal_id, new.proposal_id]);
}

/// Issue 12, item 12: listing pending proposals reads their metadata, not their
/// staged notes (500 proposals against one 1.9 MB note made `list_proposals`
/// read about a gigabyte). A staged note too large to read at all, untouched
/// since it was proposed, is listed without being read; a staged note changed
/// after its metadata was written is read and found tampered; `apply` checks
/// the hash itself either way.
#[test]
fn issue_12_listing_does_not_read_staged_notes() {
    let vault = vault();
    let edited = vault.patch("z/设计.md", vec![Edit::Append { content: "edited".to_owned() }]).unwrap();
    let big = vault.propose(&note("big")).unwrap();
    let meta_time = fs::metadata(vault.path(Vault::meta_file(&big))).unwrap().modified().unwrap();
    {
        let file = fs::File::options().write(true).open(vault.path(&big.files[0])).unwrap();
        file.set_len(2u64 << 30).unwrap();
        file.set_modified(meta_time).unwrap();
    }
    let later = meta_time + std::time::Duration::from_secs(5);
    let mut text = vault.read(&edited.files[0]);
    text.extend_from_slice(b"sneaked in\n");
    vault.write(&edited.files[0], text);
    fs::File::options().write(true).open(vault.path(&edited.files[0])).unwrap().set_modified(later).unwrap();

    let listed = write::list(&vault.sandbox, StatusFilter::Pending, 10).unwrap();
    let checks = |id: &str| listed.iter().find(|view| view.proposal_id == id).unwrap().checks;
    assert!(checks(&big.proposal_id).intact, "listed from its metadata: {listed:?}");
    assert!(!checks(&edited.proposal_id).intact, "changed after proposing: {listed:?}");
    assert_eq!(code(apply(&vault, &big.proposal_id)), ErrorCode::ProposalTampered);
    assert_eq!(code(apply(&vault, &edited.proposal_id)), ErrorCode::ProposalTampered);
}

/// `kb-index inbox list` summarises every pending proposal from one listing of
/// the inbox (it looked each one up again: 150 patches took 1.4 s in a debug
/// build, most of it checking the same file names 150 times over).
#[test]
fn issue_12_every_pending_proposal_is_described_from_one_listing() {
    let vault = vault();
    let patch = vault.patch("z/设计.md", vec![Edit::Append { content: "one\ntwo".to_owned() }]).unwrap();
    let new = vault.propose(&note("described")).unwrap();
    let applied = vault.propose(&note("applied")).unwrap();
    apply(&vault, &applied.proposal_id).unwrap();

    let all = write::describe_pending(&vault.sandbox).unwrap();
    assert_eq!(all.keys().collect::<Vec<_>>(), {
        let mut ids = vec![&patch.proposal_id, &new.proposal_id];
        ids.sort();
        ids
    });
    let described = &all[&patch.proposal_id];
    assert_eq!((described.kind, described.target.as_str()), (ProposalKind::Patch, "z/设计.md"));
    assert_eq!(described.diff_stat, Some((2, 0)), "two lines appended");
    assert_eq!(all[&new.proposal_id].diff_stat, None);
    for (id, description) in &all {
        assert_eq!(&write::describe(&vault.sandbox, id).unwrap(), description, "{id}");
    }
}

/// The journal is written atomically, so its temporary file exists for an
/// instant; a server checking meanwhile whether the inbox is a person's own
/// must not take it for a person's file (the HTTP load test caught it: a racing
/// apply was refused with `permission_denied`).
#[test]
fn issue_12_the_journals_temporary_file_is_kb_mcps_own() {
    let vault = vault();
    vault.write("inbox/._applying.json.kb-tmp-0123456789abcdef", "{}");
    assert_eq!(vault.sandbox.foreign_inboxes(), Vec::new());
    vault.write("inbox/.notes.kb-tmp-0123456789abcdef", "{}");
    assert_eq!(vault.sandbox.foreign_inboxes().len(), 1, "only its own files' temporary files are its own");
}

// ---------------------------------------------------------------- a real kill -9 (issue 12, item 8)

/// Set in the child process of the kill test: `root|id|step|marker`.
const KILL_CHILD_ENV: &str = "KB_MCP_TEST_KILLED_APPLY";

/// The steps of an apply, by name (for the child's job).
const STEPS: [(&str, Step); 7] = [
    ("claimed", Step::Claimed),
    ("swapping", Step::Swapping),
    ("written", Step::Written),
    ("archiving", Step::Archiving),
    ("archived", Step::Archived),
    ("indexed", Step::Indexed),
    ("audited", Step::Audited),
];

/// A real crash, not a returned error: a child process (this test binary,
/// re-executed) applies a proposal and stops at one step, where the parent
/// kills it with SIGKILL. A fresh sandbox's recovery then leaves the note
/// either as it was or exactly as proposed, one audit line when applied, no
/// temporary file anywhere, no orphan staged file, no journal, and the
/// listing says what is true. For every step, for new notes and patches.
#[test]
fn issue_12_an_apply_killed_at_any_step_is_recovered() {
    if let Ok(job) = std::env::var(KILL_CHILD_ENV) {
        // Child: apply, and at the step, say so and wait to be killed.
        let parts: Vec<&str> = job.split('|').collect();
        let (root, id, step, marker) = (Path::new(parts[0]), parts[1], parts[2], Path::new(parts[3]));
        let step = STEPS.iter().find(|(name, _)| *name == step).unwrap().1;
        let config = VaultConfig::parse(read_vault_config(root).unwrap().as_deref()).unwrap();
        let sandbox = Sandbox::open(root, config.policy).unwrap();
        let _ = write::apply_with_failpoint(&sandbox, id, Actor::Cli, &mut no_index, &mut |at| {
            if at == step {
                fs::write(marker, "here").unwrap();
                loop {
                    std::thread::sleep(std::time::Duration::from_secs(1));
                }
            }
            Ok(())
        });
        panic!("the apply went past {step:?} without stopping");
    }
    if !cfg!(unix) {
        eprintln!("skipped: killing a process with SIGKILL at a chosen step needs a Unix system");
        return;
    }
    for kind in [ProposalKind::New, ProposalKind::Patch] {
        for (name, step) in STEPS {
            if step == Step::Swapping && kind == ProposalKind::New {
                continue; // a new note is created, never swapped
            }
            let vault = vault();
            let path = "z/设计.md";
            let original = vault.read(path);
            let staged = match kind {
                ProposalKind::New => vault.propose(&note("killed")).unwrap(),
                _ => vault.patch(path, vec![Edit::Append { content: "after".to_owned() }]).unwrap(),
            };
            let proposed = vault.read(&staged.files[0]);
            let before = (kind == ProposalKind::Patch).then(|| original.clone());
            let marker = vault._tmp.path().join("marker");
            let job = format!("{}|{}|{name}|{}", vault.root.display(), staged.proposal_id, marker.display());
            let mut child = std::process::Command::new(std::env::current_exe().unwrap())
                .args([
                    "--exact",
                    "write::issue_12_an_apply_killed_at_any_step_is_recovered",
                    "--test-threads=1",
                ])
                .env(KILL_CHILD_ENV, job)
                .stdout(std::process::Stdio::null())
                .stderr(std::process::Stdio::null())
                .spawn()
                .unwrap();
            let waited = std::time::Instant::now();
            while !marker.exists() {
                assert!(
                    child.try_wait().unwrap().is_none(),
                    "{kind:?} {step:?}: the child ended before the step"
                );
                assert!(
                    waited.elapsed().as_secs() < 120,
                    "{kind:?} {step:?}: the child never reached the step"
                );
                std::thread::sleep(std::time::Duration::from_millis(5));
            }
            child.kill().unwrap(); // SIGKILL on Unix
            child.wait().unwrap();
            let label = format!("{kind:?} killed at {step:?}");

            // Right after the crash: the note is before or after, never between,
            // and the listing says what is true.
            let on_disk = vault.exists(&staged.target).then(|| vault.read(&staged.target));
            assert!(on_disk == before || on_disk.as_deref() == Some(proposed.as_slice()), "{label}");
            let status = |vault: &Vault| {
                let listed = write::list(&vault.sandbox, StatusFilter::All, 50).unwrap();
                listed.iter().find(|view| view.proposal_id == staged.proposal_id).map(|view| view.status)
            };
            let applied = !matches!(step, Step::Claimed | Step::Swapping);
            let expected_now = match step {
                Step::Claimed | Step::Prepared | Step::Swapping | Step::Written | Step::File(_) => {
                    ProposalStatus::Pending
                }
                Step::Archiving | Step::Archived | Step::Indexed => ProposalStatus::Interrupted,
                Step::Audited => ProposalStatus::Applied,
            };
            assert_eq!(status(&vault), Some(expected_now), "{label}");

            // A fresh start recovers.
            let fresh = vault.reopen();
            let recovery = write::recover(&fresh, Actor::Mcp, &mut no_index).unwrap();
            assert!(recovery.failed.is_empty(), "{label}: {recovery:?}");
            let completed = applied && step != Step::Audited;
            assert_eq!(recovery.completed.len(), usize::from(completed), "{label}: {recovery:?}");
            assert_eq!(temp_files(&vault.root), Vec::<String>::new(), "{label}");
            assert!(!vault.exists("inbox/_applying.json"), "{label}: the journal is settled");
            let (pending, archived) = where_is(&vault, &staged);
            let conflicts = conflict_copies(&vault, "设计");
            assert!(conflicts.is_empty(), "{label}: {conflicts:?}");
            if applied {
                assert_eq!(vault.read(&staged.target), proposed, "{label}");
                assert_eq!(vault.audit_for(&staged.proposal_id).len(), 1, "{label}");
                assert!(pending.is_empty(), "{label}: {pending:?}");
                assert_eq!(archived.len(), staged.files.len(), "{label}: {archived:?}");
                assert_eq!(status(&vault), Some(ProposalStatus::Applied), "{label}");
            } else {
                assert_eq!(
                    vault.exists(&staged.target).then(|| vault.read(&staged.target)),
                    before,
                    "{label}"
                );
                assert!(vault.audit_for(&staged.proposal_id).is_empty(), "{label}");
                assert_eq!(pending, staged.files, "{label}: the proposal stays pending, whole");
                assert_eq!(status(&vault), Some(ProposalStatus::Pending), "{label}");
                assert_eq!(
                    apply(&vault, &staged.proposal_id).unwrap().new_hash,
                    staged.content_hash,
                    "{label}"
                );
                assert_eq!(vault.audit_for(&staged.proposal_id).len(), 1, "{label}");
            }
        }
    }
}

// ---------------------------------------------------------------- a save landing in the swap (issue 12, item 2)

/// Deterministic, not timed: the person's save lands at `Step::Swapping`, after
/// the apply's last re-check of the note and right before the swap, the window
/// a racing save can still hit. Saved in place or by rename, the save is put
/// back, the caller gets `conflict` naming the note and the proposed file, and
/// the proposal stays pending, whole, with no audit line and nothing left over.
#[test]
fn issue_12_a_save_landing_right_before_the_swap_is_put_back_and_reported() {
    for by_rename in [false, true] {
        let vault = vault();
        let rel = "z/设计.md";
        let staged = vault.patch(rel, vec![Edit::Append { content: "proposed".to_owned() }]).unwrap();
        let save = b"# the person's save\n".to_vec();
        let note = vault.path(rel);
        let err = write::apply_with_failpoint(
            &vault.sandbox,
            &staged.proposal_id,
            Actor::Mcp,
            &mut no_index,
            &mut |at| {
                if at == Step::Swapping {
                    if by_rename {
                        let temp = vault.path("z/.设计.md.editor-save");
                        fs::write(&temp, &save).unwrap();
                        fs::rename(&temp, &note).unwrap();
                    } else {
                        fs::write(&note, &save).unwrap();
                    }
                }
                Ok(())
            },
        )
        .unwrap_err();
        let label = if by_rename { "saved by rename" } else { "saved in place" };
        assert_eq!(err.code, ErrorCode::Conflict, "{label}: {err}");
        assert!(err.message.contains(rel) && err.message.contains("stays pending"), "{label}: {err}");
        let details = err.details.as_ref().unwrap();
        assert_eq!(details["target"], rel, "{label}");
        assert_eq!(details["proposed_file"], staged.files[0], "{label}");
        assert_eq!(vault.read(rel), save, "{label}: the save is kept");
        let copies = conflict_copies(&vault, "设计");
        match details["conflict_copy"].as_str() {
            None => assert!(copies.is_empty(), "{label}: {copies:?}"),
            Some(copy) => assert!(copies.iter().any(|(path, _)| path == copy), "{label}: {copies:?}"),
        }
        let (pending, archived) = where_is(&vault, &staged);
        assert_eq!(pending, staged.files, "{label}: the proposal stays pending");
        assert!(archived.is_empty(), "{label}");
        assert!(vault.audit_for(&staged.proposal_id).is_empty(), "{label}");
        assert_eq!(temp_files(&vault.root), Vec::<String>::new(), "{label}");
        assert!(!vault.exists("inbox/_applying.json"), "{label}");
        let listed = write::list(&vault.sandbox, StatusFilter::Pending, 10).unwrap();
        assert!(!listed[0].checks.base_current, "{label}: the note moved on");
        assert_eq!(code(apply(&vault, &staged.proposal_id)), ErrorCode::StaleBase, "{label}");
    }
}
