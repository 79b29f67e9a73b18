//! The sandbox's promises, tested from outside the crate: hostile path text is
//! refused with the right code, deny rules hold in every letter case, symlinks
//! cannot lead a read or a write out of the vault or into a denied folder (even
//! when swapped in between check and use), the walk skips what it must, and
//! writes are atomic and never clobber.
//!
//! Every test builds its own small vault in a temporary folder, beside an
//! `outside` folder holding a secret that must never come back.

#![allow(
    clippy::disallowed_methods,
    clippy::disallowed_types,
    reason = "the tests build and inspect vaults on disk"
)]

use crate::common;

use std::fs;
use std::path::{Path, PathBuf};

use kb_mcp::error::ErrorCode::{self, InvalidArgument, NotFound, PathDenied, TargetExists, TooLarge};
use kb_mcp::sandbox::{Area, NotePath, Policy, Sandbox, WriteMode, read_vault_config};
use proptest::prelude::*;
use proptest::test_runner::{Config, TestRunner};
use tempfile::TempDir;

/// The secret outside the vault; no read may ever return it.
const SECRET: &str = "TOP SECRET: outside the vault";

/// The test vault: path and content of every file.
const FILES: &[(&str, &str)] = &[
    ("z/note.md", "# Note\n"),
    ("z/中文笔记.md", "# 中文\n"),
    ("z/100% done.md", "done\n"),
    ("z/v1.2 notes.md", "v1.2\n"),
    ("z/sub/deep/n.md", "deep\n"),
    ("z/日本語メモ.md", "メモ\n"),
    ("z/한국어 메모.md", "메모\n"),
    ("z/پایگاه\u{200C}ها.md", "zwnj in a Persian word\n"),
    ("z/读书笔记：深度工作.md", "a fullwidth colon, common in Chinese titles\n"),
    ("z/with space.md", "space\n"),
    ("z/3-2-1 备份原则.md", "备份\n"),
    ("z/知识管理 MOC.md", "MOC\n"),
    ("z/a%20b.md", "literal percent\n"),
    ("z/café.md", "nfc\n"),
    ("z/cafe\u{301}.md", "nfd\n"),
    ("z/emoji 🎉.md", "party\n"),
    ("z/a..b.md", "dots inside a name\n"),
    ("z/NOTE2.MD", "upper-case extension\n"),
    ("z/image.png", "png"),
    ("z/private/secret.md", "private\n"),
    ("z/Node_Modules/x.md", "module\n"),
    ("z/.hidden.md", "hidden\n"),
    ("z/.env", "TOKEN=1\n"),
    ("z/id_rsa.pub", "ssh-rsa\n"),
    ("z/server.PEM", "cert\n"),
    ("docs/std.md", "# Standard\n"),
    ("refs/ref.md", "# Ref\n"),
    ("refs/table.csv", "a,b\n"),
    ("inbox/new/p.md", "proposal\n"),
    ("top.md", "top level, outside the allow-list\n"),
    ("other/x.md", "other\n"),
    (".git/config", "[core]\n"),
    (".git/notes.md", "git notes\n"),
    (".obsidian/app.json", "{}\n"),
    ("node_modules/pkg/readme.md", "pkg\n"),
    ("kb.toml", "[vault]\nnotes = [\"z\"]\n"),
];

/// A vault built from [`FILES`], a secret beside it, and (on Unix) symlinks.
struct Fixture {
    _tmp: TempDir,
    root: PathBuf,
    outside: PathBuf,
    sandbox: Sandbox,
}

fn policy() -> Policy {
    Policy {
        notes: vec!["z".to_owned()],
        standards: vec!["docs".to_owned()],
        inbox: "inbox".to_owned(),
        read_also: vec!["refs".to_owned()],
        deny: vec!["z/private".to_owned()],
        memory: Some("z/Agent memory".to_owned()),
    }
}

fn write(path: &Path, text: impl AsRef<[u8]>) {
    fs::create_dir_all(path.parent().unwrap()).unwrap();
    fs::write(path, text).unwrap();
}

fn fixture() -> Fixture {
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path().join("vault");
    let outside = tmp.path().join("outside");
    for (path, text) in FILES {
        write(&root.join(path), text);
    }
    write(&outside.join("secret.md"), SECRET);
    #[cfg(unix)]
    {
        use std::os::unix::fs::symlink;
        symlink(outside.join("secret.md"), root.join("z/out_file.md")).unwrap();
        symlink(&outside, root.join("z/out_dir")).unwrap();
        symlink(root.join(".git/notes.md"), root.join("z/git_link.md")).unwrap();
        symlink(root.join(".git"), root.join("z/git_dir")).unwrap();
        symlink("note.md", root.join("z/good_link.md")).unwrap();
        symlink("../docs/std.md", root.join("z/std_link.md")).unwrap();
        symlink("../inbox/new/p.md", root.join("z/inbox_link.md")).unwrap();
        symlink("image.png", root.join("z/picture.png")).unwrap();
        symlink("sub", root.join("z/link_dir")).unwrap();
        symlink("missing.md", root.join("z/dangling.md")).unwrap();
    }
    let sandbox = Sandbox::open(&root, policy()).unwrap();
    let root = sandbox.root().to_path_buf();
    Fixture { _tmp: tmp, root, outside, sandbox }
}

/// One hostile or benign input against `resolve_read`: `None` means accepted
/// (as exactly the same text), `Some(code)` the expected refusal.
fn check(fx: &Fixture, input: &str, expected: Option<ErrorCode>) {
    let got = fx.sandbox.resolve_read(input);
    match (expected, got) {
        (None, Ok(path)) => assert_eq!(path.as_str(), input, "accepted {input:?} but rewrote it"),
        (None, Err(err)) => panic!("{input:?} should be accepted, got {err}"),
        (Some(code), Ok(path)) => panic!("{input:?} should fail with {code}, was accepted as {path}"),
        (Some(code), Err(err)) => {
            assert_eq!(err.code, code, "{input:?}: {err}");
            assert!(!err.message.is_empty(), "{input:?}: empty message");
            assert!(!err.message.contains(SECRET), "{input:?}: message leaks the secret");
        }
    }
}

#[test]
fn hostile_inputs_are_refused() {
    let fx = fixture();
    let long_path = format!("z/{}.md", "a/".repeat(520));
    let long_segment = format!("z/{}.md", "a".repeat(300));
    let table: &[(&str, ErrorCode)] = &[
        ("", InvalidArgument),
        // absolute, rooted, UNC, drive forms
        ("/etc/passwd", PathDenied),
        ("/z/note.md", PathDenied),
        ("C:\\x", PathDenied),
        ("C:x", PathDenied),
        ("c:/x", PathDenied),
        ("\\\\server\\share", PathDenied),
        ("//server/share", PathDenied),
        ("~/x.md", PathDenied),
        // traversal and non-normal segments
        ("../outside/secret.md", PathDenied),
        ("z/../../outside/secret.md", PathDenied),
        ("z/../docs/std.md", PathDenied),
        ("./z/note.md", PathDenied),
        ("z/./note.md", PathDenied),
        ("z//note.md", PathDenied),
        ("z/note.md/", PathDenied),
        ("z/", PathDenied),
        // NUL and control characters
        ("z/note.md\0", PathDenied),
        ("z/no\0te.md", PathDenied),
        ("z/note\n.md", PathDenied),
        ("z/note\r.md", PathDenied),
        ("z/\tnote.md", PathDenied),
        ("z/note\u{7f}.md", PathDenied),
        ("z/note\u{85}.md", PathDenied),
        // backslashes, streams, characters Windows refuses
        ("z\\note.md", PathDenied),
        ("z/note.md:secret", PathDenied),
        ("z/note.md::$DATA", PathDenied),
        ("z/a<b.md", PathDenied),
        ("z/what?.md", PathDenied),
        ("z/star*.md", PathDenied),
        ("z/pipe|.md", PathDenied),
        ("z/quote\".md", PathDenied),
        // percent-encoding, single, mixed case, double and triple
        ("%2e%2e/outside/secret.md", PathDenied),
        ("z/%2E%2E/%2e%2e/outside/secret.md", PathDenied),
        (".%2e/outside/secret.md", PathDenied),
        ("z/%2e/note.md", PathDenied),
        ("z%2fnote.md", PathDenied),
        ("z%2Fnote.md", PathDenied),
        ("z%5cnote.md", PathDenied),
        ("z%5Cnote.md", PathDenied),
        ("z/note.md%00", PathDenied),
        ("z/note%3a.md", PathDenied),
        ("%252e%252e/outside/secret.md", PathDenied),
        ("z%252fnote.md", PathDenied),
        ("%25252e%25252e/outside/secret.md", PathDenied),
        ("z/%e2%88%95note.md", PathDenied),
        // Windows device names, any case, with extensions and trailing spaces
        ("z/CON", PathDenied),
        ("z/con.md", PathDenied),
        ("z/nul.md", PathDenied),
        ("z/NUL", PathDenied),
        ("z/PRN.md", PathDenied),
        ("z/AUX.md", PathDenied),
        ("z/COM1.md", PathDenied),
        ("z/com9.md", PathDenied),
        ("z/LPT1.md", PathDenied),
        ("z/lpt0.md", PathDenied),
        ("z/COM¹.md", PathDenied),
        ("z/LPT³.md", PathDenied),
        ("z/CONIN$.md", PathDenied),
        ("z/conout$.md", PathDenied),
        ("z/CON .md", PathDenied),
        ("z/aux.tar.md", PathDenied),
        ("con/x.md", PathDenied),
        // trailing dots and spaces, 8.3 short names
        ("z/note.md.", PathDenied),
        ("z/note.md ", PathDenied),
        (".git./config", PathDenied),
        ("z/sub./deep/n.md", PathDenied),
        ("GIT~1/config", PathDenied),
        ("z/PROGRA~1.md", PathDenied),
        ("z/note~2.md", PathDenied),
        // look-alikes of / \ . :
        ("z\u{2215}note.md", PathDenied),
        ("z\u{2044}note.md", PathDenied),
        ("z\u{FF0F}note.md", PathDenied),
        ("z\u{FF3C}note.md", PathDenied),
        ("z/note\u{FF0E}md", PathDenied),
        ("z/note\u{2024}md", PathDenied),
        ("z/note\u{FE52}md", PathDenied),
        ("z/note.md\u{2236}x", PathDenied),
        ("z/note\u{2236}md", PathDenied),
        ("z\u{29F8}note.md", PathDenied),
        ("z\u{29F9}note.md", PathDenied),
        ("..\u{FF0F}outside/secret.md", PathDenied),
        // invisible and bidi characters
        ("z/note\u{2061}.md", PathDenied),
        ("z/\u{202E}dm.eton", PathDenied),
        ("z/note\u{2066}.md", PathDenied),
        ("z/\u{FEFF}note.md", PathDenied),
        ("z/note\u{2060}.md", PathDenied),
        ("z/\u{200F}note.md", PathDenied),
        // too long
        (&long_path, PathDenied),
        (&long_segment, PathDenied),
        // denied folders and files, any letter case
        (".git/config", PathDenied),
        (".git/notes.md", PathDenied),
        (".GIT/config", PathDenied),
        (".Obsidian/app.json", PathDenied),
        (".obsidian/workspace.md", PathDenied),
        ("Node_Modules/x.md", PathDenied),
        ("z/Node_Modules/x.md", PathDenied),
        ("node_modules/pkg/readme.md", PathDenied),
        (".ENV", PathDenied),
        (".env.local", PathDenied),
        ("z/.env", PathDenied),
        ("z/id_rsa.pub", PathDenied),
        ("z/server.PEM", PathDenied),
        ("z/tls.key", PathDenied),
        (".kb/meta.json", PathDenied),
        (".trash/old.md", PathDenied),
        (".ssh/id_rsa", PathDenied),
        ("z/.hidden.md", PathDenied),
        ("z/private/secret.md", PathDenied),
        ("z/PRIVATE/secret.md", PathDenied),
        // outside the readable areas, or not Markdown
        ("inbox/new/p.md", PathDenied),
        ("top.md", PathDenied),
        ("other/x.md", PathDenied),
        ("docs2/x.md", PathDenied),
        ("Z/note.md", PathDenied),
        ("kb.toml", PathDenied),
        ("z/image.png", PathDenied),
        ("refs/table.csv", PathDenied),
        ("z/sub", PathDenied),
        // well-formed but missing
        ("z/missing.md", NotFound),
        ("docs/missing.md", NotFound),
        ("z/sub/missing/x.md", NotFound),
        ("z/note.md/x.md", NotFound),
    ];
    assert!(table.len() >= 70, "only {} hostile inputs", table.len());
    for (input, code) in table {
        check(&fx, input, Some(*code));
    }
}

#[test]
fn benign_inputs_are_accepted_unchanged() {
    let fx = fixture();
    let benign = [
        "z/note.md",
        "z/中文笔记.md",
        "z/100% done.md",
        "z/v1.2 notes.md",
        "z/sub/deep/n.md",
        "z/日本語メモ.md",
        "z/한국어 메모.md",
        "z/پایگاه\u{200C}ها.md",
        "z/读书笔记：深度工作.md",
        "z/with space.md",
        "z/3-2-1 备份原则.md",
        "z/知识管理 MOC.md",
        "z/a%20b.md",
        "z/café.md",
        "z/cafe\u{301}.md",
        "z/emoji 🎉.md",
        "z/a..b.md",
        "z/NOTE2.MD",
        "docs/std.md",
        "refs/ref.md",
    ];
    for input in benign {
        check(&fx, input, None);
    }
    // NFC and NFD stay distinct: nothing is normalised.
    assert_ne!(NotePath::parse("z/café.md").unwrap(), NotePath::parse("z/cafe\u{301}.md").unwrap());
}

#[test]
fn messages_name_the_input_and_the_reason() {
    let err = NotePath::parse("z/../x.md").unwrap_err();
    assert!(err.message.contains("z/../x.md") && err.message.contains(".."), "{}", err.message);
    let err = NotePath::parse("z/nul.md").unwrap_err();
    assert!(err.message.contains("nul.md") && err.message.contains("device"), "{}", err.message);
    let err = NotePath::parse("z/a\u{202E}b.md").unwrap_err();
    assert!(err.message.contains("U+202E"), "{}", err.message);
    assert!(err.hint.is_some());
    let fx = fixture();
    let err = fx.sandbox.resolve_read("z/image.png").unwrap_err();
    assert!(
        err.message.contains("only Markdown notes (.md), canvases and PDFs can be read"),
        "{}",
        err.message
    );
    let err = fx.sandbox.resolve_read("z/missing.md").unwrap_err();
    assert!(err.message.contains("z/missing.md"), "{}", err.message);
}

#[test]
fn note_path_accessors() {
    let path = NotePath::parse("z/sub/备份仓库.MD").unwrap();
    assert_eq!(path.file_name(), "备份仓库.MD");
    assert_eq!(path.stem(), "备份仓库");
    assert_eq!(path.parent(), "z/sub");
    assert!(path.is_markdown());
    assert_eq!(path.to_string(), "z/sub/备份仓库.MD");
    let top = NotePath::parse("readme.txt").unwrap();
    assert_eq!((top.parent(), top.stem(), top.is_markdown()), ("", "readme.txt", false));
}

#[test]
fn areas_follow_the_configured_folders() {
    let policy = policy();
    let table = [
        ("z/a.md", Some(Area::Note)),
        ("z/sub/a.md", Some(Area::Note)),
        ("z", Some(Area::Note)),
        ("docs/a.md", Some(Area::Standard)),
        ("refs/a.md", Some(Area::ReadAlso)),
        ("inbox/new/a.md", Some(Area::Inbox)),
        ("inbox/_applied.jsonl", Some(Area::Inbox)),
        ("docs2/x.md", None),
        ("zz/a.md", None),
        ("Z/a.md", None),
        ("top.md", None),
        ("z/private/x.md", None),
        ("z/private", None),
        ("z/.obsidian/x.md", None),
        (".kb/x.md", None),
    ];
    for (input, area) in table {
        assert_eq!(policy.area_of(&NotePath::parse(input).unwrap()), area, "{input}");
    }
    let defaults = Policy::default();
    let table = [
        ("a.md", Some(Area::Note)),
        ("x/y/a.md", Some(Area::Note)),
        ("docs/x.md", Some(Area::Standard)),
        ("inbox/x.md", Some(Area::Inbox)),
        (".obsidian/x.md", None),
        ("node_modules/x.md", None),
    ];
    for (input, area) in table {
        assert_eq!(defaults.area_of(&NotePath::parse(input).unwrap()), area, "{input}");
    }
    // Nested folders: the read-only designation wins over notes.
    let nested = Policy { standards: vec!["z/std".to_owned()], ..policy };
    assert_eq!(nested.area_of(&NotePath::parse("z/std/a.md").unwrap()), Some(Area::Standard));
}

#[test]
fn deny_rules_are_case_insensitive_and_hard() {
    let policy = Policy {
        notes: vec!["z".to_owned(), ".notes".to_owned(), ".git".to_owned(), ".env".to_owned()],
        deny: vec![
            "z/private".to_owned(),
            "*.secret.md".to_owned(),
            "drafts/*".to_owned(),
            "tmp".to_owned(),
            "**/cache".to_owned(),
            "私密".to_owned(),
        ],
        ..Policy::default()
    };
    let denied = [
        ".git",
        ".git/config",
        ".GIT/config",
        "z/.Git/x.md",
        ".Obsidian/app.json",
        ".trash/x.md",
        ".kb",
        "Node_Modules/x.md",
        ".ENV",
        ".env.local",
        ".ssh/config",
        "z/id_rsa",
        "z/ID_RSA.pub",
        "z/id_ed25519",
        "z/server.PEM",
        "z/tls.Key",
        "z/.hidden.md",
        "z/private",
        "z/private/x.md",
        "z/Private/x.md",
        "z/a.secret.md",
        "z/A.SECRET.md",
        "drafts/x.md",
        "drafts/sub/x.md",
        "z/tmp/x.md",
        "z/TMP/x.md",
        "a/b/cache/x.md",
        "z/私密/x.md",
        ".notes/.inner/x.md",
        ".git./config",
    ];
    for path in denied {
        assert!(policy.is_denied(path), "{path} should be denied");
    }
    let allowed =
        ["", "z", "z/a.md", "z/privateer.md", "drafts", "z/drafts/x.md", "z/a.secret.txt", ".notes/x.md"];
    for path in allowed {
        assert!(!policy.is_denied(path), "{path} should not be denied");
    }
    // A config folder can name a dot-folder, but never a hard-denied one.
    assert_eq!(policy.area_of(&NotePath::parse(".notes/x.md").unwrap()), Some(Area::Note));
    assert_eq!(policy.area_of(&NotePath::parse(".git/x.md").unwrap()), None);
    assert_eq!(policy.area_of(&NotePath::parse(".env/x.md").unwrap()), None);
}

#[test]
fn open_checks_the_root() {
    let tmp = tempfile::tempdir().unwrap();
    let err = Sandbox::open(&tmp.path().join("missing"), Policy::default()).unwrap_err();
    assert_eq!(err.code, NotFound);
    write(&tmp.path().join("file.md"), "x");
    let err = Sandbox::open(&tmp.path().join("file.md"), Policy::default()).unwrap_err();
    assert_eq!(err.code, InvalidArgument);
    let sandbox = Sandbox::open(tmp.path(), Policy::default()).unwrap();
    assert_eq!(sandbox.root(), fs::canonicalize(tmp.path()).unwrap());
    assert_eq!(sandbox.policy(), &Policy::default());
}

#[test]
fn read_returns_bytes_and_enforces_the_limit() {
    let fx = fixture();
    let path = fx.sandbox.resolve_read("z/note.md").unwrap();
    assert_eq!(fx.sandbox.read(&path, 1024).unwrap(), b"# Note\n");
    assert_eq!(fx.sandbox.read(&path, 7).unwrap(), b"# Note\n");
    let err = fx.sandbox.read(&path, 6).unwrap_err();
    assert_eq!(err.code, TooLarge);
    assert!(err.message.contains('7') && err.message.contains('6'), "{}", err.message);
    assert!(err.hint.as_deref().is_some_and(|hint| hint.contains("max_bytes")));
    // The library may read inbox files (proposals), agents may not.
    let proposal = NotePath::parse("inbox/new/p.md").unwrap();
    assert_eq!(fx.sandbox.read(&proposal, 1024).unwrap(), b"proposal\n");
    for denied in ["top.md", "z/private/secret.md", ".git/notes.md", "z/image.png"] {
        let err = fx.sandbox.read(&NotePath::parse(denied).unwrap(), 1024).unwrap_err();
        assert_eq!(err.code, PathDenied, "{denied}");
    }
    let err = fx.sandbox.read(&NotePath::parse("z/gone.md").unwrap(), 1024).unwrap_err();
    assert_eq!(err.code, NotFound);
}

#[test]
fn stat_reports_size_or_none() {
    let fx = fixture();
    let stat = fx.sandbox.stat(&NotePath::parse("z/note.md").unwrap()).unwrap().unwrap();
    assert_eq!(stat.size, 7);
    assert!(fx.sandbox.stat(&NotePath::parse("z/missing.md").unwrap()).unwrap().is_none());
    let err = fx.sandbox.stat(&NotePath::parse("z/private/secret.md").unwrap()).unwrap_err();
    assert_eq!(err.code, PathDenied);
}

#[cfg(unix)]
#[test]
fn symlinks_cannot_lead_reads_astray() {
    let fx = fixture();
    let table: &[(&str, Option<ErrorCode>)] = &[
        ("z/out_file.md", Some(PathDenied)),
        ("z/out_dir/secret.md", Some(PathDenied)),
        ("z/git_link.md", Some(PathDenied)),
        ("z/git_dir/notes.md", Some(PathDenied)),
        ("z/inbox_link.md", Some(PathDenied)),
        ("z/dangling.md", Some(NotFound)),
        ("z/good_link.md", None),
        ("z/std_link.md", None),
        ("z/link_dir/deep/n.md", None),
    ];
    for (input, expected) in table {
        check(&fx, input, *expected);
    }
    // `read` re-checks on its own, whatever the caller resolved before.
    for input in ["z/out_file.md", "z/out_dir/secret.md", "z/git_link.md"] {
        let err = fx.sandbox.read(&NotePath::parse(input).unwrap(), 1 << 20).unwrap_err();
        assert_eq!(err.code, PathDenied, "{input}");
    }
    let good = fx.sandbox.resolve_read("z/good_link.md").unwrap();
    assert_eq!(fx.sandbox.read(&good, 1024).unwrap(), b"# Note\n");
    let err = fx.sandbox.stat(&NotePath::parse("z/out_file.md").unwrap()).unwrap_err();
    assert_eq!(err.code, PathDenied);
}

#[test]
fn search_folders_must_be_readable_folders() {
    let fx = fixture();
    let folder = |input: &str| fx.sandbox.resolve_folder(input).map(|f| f.map(|f| f.as_str().to_owned()));
    // Accepted: readable folders (one trailing slash allowed), a folder that does
    // not exist (it holds nothing), and no folder at all.
    assert_eq!(folder("").unwrap(), None);
    for (input, want) in [
        ("z", "z"),
        ("z/", "z"),
        ("z/sub/deep", "z/sub/deep"),
        ("docs", "docs"),
        ("refs", "refs"),
        ("z/no such folder", "z/no such folder"),
    ] {
        assert_eq!(folder(input).unwrap().as_deref(), Some(want), "{input}");
    }
    // Refused: absolute (`/` is not "no folder"), outside the areas, the inbox,
    // denied, a file, blank.
    for input in
        ["/", "//", "/z", "..", "z/../..", "inbox", "inbox/new", "templates", ".git", "z/private", " "]
    {
        let err = folder(input).unwrap_err();
        assert_eq!(err.code, PathDenied, "{input}: {err}");
    }
    let err = folder("z/note.md").unwrap_err();
    assert_eq!(err.code, PathDenied);
    assert!(err.message.contains("is a file"), "{err}");
    #[cfg(unix)]
    {
        // Symlinks are judged by where they lead.
        assert_eq!(folder("z/link_dir").unwrap().as_deref(), Some("z/link_dir"));
        for input in ["z/out_dir", "z/git_dir"] {
            assert_eq!(folder(input).unwrap_err().code, PathDenied, "{input}");
        }
        std::os::unix::fs::symlink("loop_b", fx.root.join("z/loop_a")).unwrap();
        std::os::unix::fs::symlink("loop_a", fx.root.join("z/loop_b")).unwrap();
        let err = folder("z/loop_a").unwrap_err();
        assert_eq!(err.code, PathDenied, "a symlink loop: {err}");
        std::os::unix::fs::symlink("self.md", fx.root.join("z/self.md")).unwrap();
        let err = fx.sandbox.resolve_read("z/self.md").unwrap_err();
        assert_eq!(err.code, PathDenied, "a symlink loop: {err}");
        assert!(err.message.contains("loop"), "{err}");
    }
}

#[cfg(unix)]
#[test]
fn a_symlink_swapped_in_after_resolving_is_caught() {
    use std::os::unix::fs::symlink;
    let fx = fixture();
    let path = fx.sandbox.resolve_read("z/note.md").unwrap();
    // The file becomes a symlink to the secret.
    fs::remove_file(fx.root.join("z/note.md")).unwrap();
    symlink(fx.outside.join("secret.md"), fx.root.join("z/note.md")).unwrap();
    let err = fx.sandbox.read(&path, 1 << 20).unwrap_err();
    assert_eq!(err.code, PathDenied, "{err}");
    // A parent folder becomes a symlink to the outside.
    let deep = fx.sandbox.resolve_read("z/sub/deep/n.md").unwrap();
    fs::rename(fx.root.join("z/sub"), fx.root.join("z/sub-old")).unwrap();
    fs::create_dir_all(fx.outside.join("deep")).unwrap();
    fs::write(fx.outside.join("deep/n.md"), SECRET).unwrap();
    symlink(&fx.outside, fx.root.join("z/sub")).unwrap();
    let err = fx.sandbox.read(&deep, 1 << 20).unwrap_err();
    assert_eq!(err.code, PathDenied, "{err}");
    assert!(!err.message.contains(SECRET));
}

#[cfg(unix)]
#[test]
fn note_targets_must_not_pass_through_symlinks() {
    let fx = fixture();
    let table: &[(&str, Option<ErrorCode>)] = &[
        ("z/new.md", None),
        ("z/note.md", None),
        ("z/brand/new/folder/n.md", None),
        ("z/sub/deep/new.md", None),
        ("z/link_dir/new.md", Some(PathDenied)),
        ("z/link_dir/deep/n.md", Some(PathDenied)),
        ("z/out_dir/new.md", Some(PathDenied)),
        ("z/good_link.md", Some(PathDenied)),
        ("z/dangling.md", Some(PathDenied)),
        ("z/sub", Some(PathDenied)),
        ("z/sub.md/x.md", None),
        ("z/note.md/x.md", Some(PathDenied)),
        ("docs/new.md", Some(PathDenied)),
        ("refs/new.md", Some(PathDenied)),
        ("inbox/new/x.md", Some(PathDenied)),
        ("z/private/x.md", Some(PathDenied)),
        ("top.md", Some(PathDenied)),
        ("z/x.txt", Some(PathDenied)),
        ("z/../x.md", Some(PathDenied)),
        ("", Some(InvalidArgument)),
    ];
    for (input, expected) in table {
        let got = fx.sandbox.resolve_note_target(input);
        match (expected, got) {
            (None, Ok(path)) => assert_eq!(path.as_str(), *input),
            (None, Err(err)) => panic!("{input:?} should be a valid target: {err}"),
            (Some(code), Ok(_)) => panic!("{input:?} should fail with {code}"),
            (Some(code), Err(err)) => assert_eq!(err.code, *code, "{input:?}: {err}"),
        }
    }
    // Nothing was created by resolving.
    assert!(!fx.root.join("z/brand").exists());
    // write_atomic refuses the symlinked parent as well.
    let through_link = NotePath::parse("z/link_dir/new.md").unwrap();
    let err = fx.sandbox.write_atomic(&through_link, b"x", WriteMode::CreateNew).unwrap_err();
    assert_eq!(err.code, PathDenied);
    assert!(!fx.root.join("z/sub/new.md").exists());
}

#[test]
fn write_atomic_creates_replaces_and_never_clobbers() {
    let fx = fixture();
    let existing = NotePath::parse("z/note.md").unwrap();
    let err = fx.sandbox.write_atomic(&existing, b"clobbered", WriteMode::CreateNew).unwrap_err();
    assert_eq!(err.code, TargetExists);
    assert!(err.message.contains("z/note.md"));
    assert_eq!(fs::read(fx.root.join("z/note.md")).unwrap(), b"# Note\n");

    fx.sandbox.write_atomic(&existing, "# 新\n".as_bytes(), WriteMode::Replace).unwrap();
    assert_eq!(fs::read_to_string(fx.root.join("z/note.md")).unwrap(), "# 新\n");

    let fresh = NotePath::parse("z/新/folder/笔记.md").unwrap();
    fx.sandbox.write_atomic(&fresh, b"fresh", WriteMode::CreateNew).unwrap();
    assert_eq!(fs::read(fx.root.join("z/新/folder/笔记.md")).unwrap(), b"fresh");
    let again = fx.sandbox.write_atomic(&fresh, b"again", WriteMode::CreateNew).unwrap_err();
    assert_eq!(again.code, TargetExists);

    let inbox = NotePath::parse("inbox/new/x.proposal.json").unwrap();
    fx.sandbox.write_atomic(&inbox, b"{}", WriteMode::CreateNew).unwrap();
    assert_eq!(fs::read(fx.root.join("inbox/new/x.proposal.json")).unwrap(), b"{}");

    for refused in
        ["docs/x.md", "refs/x.md", "z/private/x.md", ".git/x.md", "top.md", "other/x.md", "z/x.txt"]
    {
        let path = NotePath::parse(refused).unwrap();
        let before = fs::read(fx.root.join(refused)).ok();
        for mode in [WriteMode::CreateNew, WriteMode::Replace] {
            let err = fx.sandbox.write_atomic(&path, b"x", mode).unwrap_err();
            assert_eq!(err.code, PathDenied, "{refused}");
        }
        assert_eq!(fs::read(fx.root.join(refused)).ok(), before, "{refused} was written");
    }
    let standard = NotePath::parse("docs/std.md").unwrap();
    assert_eq!(fx.sandbox.write_atomic(&standard, b"x", WriteMode::Replace).unwrap_err().code, PathDenied);
    assert_eq!(fs::read(fx.root.join("docs/std.md")).unwrap(), b"# Standard\n");

    let leftovers: Vec<_> = walkdir(&fx.root).into_iter().filter(|path| path.contains("kb-tmp")).collect();
    assert!(leftovers.is_empty(), "temporary files left behind: {leftovers:?}");
}

/// Every path below `root`, as text.
fn walkdir(root: &Path) -> Vec<String> {
    let mut found = Vec::new();
    let mut stack = vec![root.to_path_buf()];
    while let Some(dir) = stack.pop() {
        for entry in fs::read_dir(&dir).unwrap() {
            let entry = entry.unwrap();
            if entry.file_type().unwrap().is_dir() {
                stack.push(entry.path());
            }
            found.push(entry.path().to_string_lossy().into_owned());
        }
    }
    found
}

#[test]
fn scan_lists_readable_markdown_and_attachments_only() {
    let fx = fixture();
    #[cfg(unix)]
    {
        use std::os::unix::ffi::OsStrExt;
        let bad = std::ffi::OsStr::from_bytes(b"z/bad\xff.md");
        write(&fx.root.join(bad), "not UTF-8");
    }
    write(&fx.root.join("z/colon:name.md"), "not a valid vault path on every platform");
    write(&fx.root.join("z/.obsidian/x.md"), "hidden");
    let scan = fx.sandbox.scan().unwrap();
    let markdown: Vec<&str> = scan.markdown.iter().map(|file| file.path.as_str()).collect();
    let mut expected = vec![
        "docs/std.md",
        "refs/ref.md",
        "z/100% done.md",
        "z/3-2-1 备份原则.md",
        "z/NOTE2.MD",
        "z/a%20b.md",
        "z/a..b.md",
        "z/cafe\u{301}.md",
        "z/café.md",
        "z/emoji 🎉.md",
        "z/note.md",
        "z/sub/deep/n.md",
        "z/v1.2 notes.md",
        "z/with space.md",
        "z/پایگاه\u{200C}ها.md",
        "z/中文笔记.md",
        "z/日本語メモ.md",
        "z/知识管理 MOC.md",
        "z/读书笔记：深度工作.md",
        "z/한국어 메모.md",
    ];
    if cfg!(unix) {
        // Links to valid notes count; links out of the vault, into .git or the
        // inbox, dangling links and linked folders do not.
        expected.extend(["z/good_link.md", "z/std_link.md"]);
    }
    expected.sort_unstable();
    assert_eq!(markdown, expected);
    let areas: Vec<Area> = scan.markdown.iter().map(|file| file.area).collect();
    assert!(
        areas.contains(&Area::Standard) && areas.contains(&Area::ReadAlso) && areas.contains(&Area::Note)
    );
    let note = scan.markdown.iter().find(|file| file.path.as_str() == "z/note.md").unwrap();
    assert_eq!(note.stat.size, 7);
    if cfg!(unix) {
        let link = scan.markdown.iter().find(|file| file.path.as_str() == "z/good_link.md").unwrap();
        assert_eq!(link.stat.size, 7, "a link's stat is its target's");
    }
    let attachments: Vec<&str> = scan.attachments.iter().map(NotePath::as_str).collect();
    let mut expected = vec!["refs/table.csv", "z/image.png"];
    if cfg!(unix) {
        expected.push("z/picture.png");
    }
    expected.sort_unstable();
    assert_eq!(attachments, expected);
}

#[test]
fn scan_enters_folders_above_nested_roots_only() {
    let tmp = tempfile::tempdir().unwrap();
    for path in ["work/notes/a.md", "work/other/b.md", "work/c.md", "x/d.md"] {
        write(&tmp.path().join(path), "x");
    }
    let policy = Policy { notes: vec!["work/notes".to_owned()], ..Policy::default() };
    let scan = Sandbox::open(tmp.path(), policy).unwrap().scan().unwrap();
    let found: Vec<&str> = scan.markdown.iter().map(|file| file.path.as_str()).collect();
    assert_eq!(found, ["work/notes/a.md"]);
}

#[test]
fn vault_config_is_read_with_care() {
    let tmp = tempfile::tempdir().unwrap();
    assert_eq!(read_vault_config(tmp.path()).unwrap(), None);
    write(&tmp.path().join("kb.toml"), "[vault]\n");
    assert_eq!(read_vault_config(tmp.path()).unwrap().as_deref(), Some("[vault]\n"));
    write(&tmp.path().join("kb.toml"), vec![b'#'; 64 * 1024 + 1]);
    assert_eq!(read_vault_config(tmp.path()).unwrap_err().code, TooLarge);
    write(&tmp.path().join("kb.toml"), b"\xff\xfe");
    let err = read_vault_config(tmp.path()).unwrap_err();
    assert_eq!(err.code, InvalidArgument);
    assert!(err.message.contains("kb.toml"));
    fs::remove_file(tmp.path().join("kb.toml")).unwrap();
    fs::create_dir(tmp.path().join("kb.toml")).unwrap();
    assert_eq!(read_vault_config(tmp.path()).unwrap_err().code, InvalidArgument);
    #[cfg(unix)]
    {
        fs::remove_dir(tmp.path().join("kb.toml")).unwrap();
        write(&tmp.path().join("elsewhere.toml"), "[vault]\n");
        std::os::unix::fs::symlink("elsewhere.toml", tmp.path().join("kb.toml")).unwrap();
        assert_eq!(read_vault_config(tmp.path()).unwrap_err().code, InvalidArgument);
    }
}

#[test]
fn inbox_files_can_be_listed_moved_appended_and_removed() {
    let fx = fixture();
    let sandbox = &fx.sandbox;
    let path = |text: &str| NotePath::parse(text).unwrap();
    sandbox.write_atomic(&path("inbox/new/p.proposal.json"), b"{}", WriteMode::CreateNew).unwrap();
    let listed = sandbox.list_inbox(&path("inbox/new")).unwrap();
    assert_eq!(listed, [path("inbox/new/p.md"), path("inbox/new/p.proposal.json")]);
    assert!(sandbox.list_inbox(&path("inbox/patch")).unwrap().is_empty());
    assert_eq!(sandbox.list_inbox(&path("z")).unwrap_err().code, PathDenied);

    let archived = path("inbox/applied/2024-03-15/p.md");
    sandbox.move_in_inbox(&path("inbox/new/p.md"), &archived).unwrap();
    assert_eq!(fs::read(fx.root.join("inbox/applied/2024-03-15/p.md")).unwrap(), b"proposal\n");
    assert!(!fx.root.join("inbox/new/p.md").exists());
    // The second of two moves fails: the source is gone.
    let err = sandbox.move_in_inbox(&path("inbox/new/p.md"), &archived).unwrap_err();
    assert_eq!(err.code, NotFound);
    // Never overwrites.
    sandbox.write_atomic(&path("inbox/new/q.md"), b"q", WriteMode::CreateNew).unwrap();
    let err = sandbox.move_in_inbox(&path("inbox/new/q.md"), &archived).unwrap_err();
    assert_eq!(err.code, TargetExists);
    assert_eq!(fs::read(fx.root.join("inbox/new/q.md")).unwrap(), b"q");
    // Only inside the inbox.
    let err = sandbox.move_in_inbox(&path("inbox/new/q.md"), &path("z/q.md")).unwrap_err();
    assert_eq!(err.code, PathDenied);

    let audit = path("inbox/_applied.jsonl");
    sandbox.append_inbox(&audit, b"{\"n\":1}\n").unwrap();
    sandbox.append_inbox(&audit, b"{\"n\":2}\n").unwrap();
    assert_eq!(sandbox.read(&audit, 1024).unwrap(), b"{\"n\":1}\n{\"n\":2}\n");
    assert_eq!(sandbox.append_inbox(&path("z/log.md"), b"x").unwrap_err().code, PathDenied);

    assert!(sandbox.remove_inbox_file(&path("inbox/new/q.md")).unwrap());
    assert!(!sandbox.remove_inbox_file(&path("inbox/new/q.md")).unwrap());
    assert_eq!(sandbox.remove_inbox_file(&path("z/note.md")).unwrap_err().code, PathDenied);
}

/// Pieces hostile paths are made of.
fn hostile_path() -> impl Strategy<Value = String> {
    let piece = prop_oneof![
        Just("..".to_owned()),
        Just(".".to_owned()),
        Just("a".to_owned()),
        Just("z".to_owned()),
        Just("docs".to_owned()),
        Just("note.md".to_owned()),
        Just("secret.md".to_owned()),
        Just(".git".to_owned()),
        Just("out_dir".to_owned()),
        Just("out_file.md".to_owned()),
        Just("link_dir".to_owned()),
        Just("%2e".to_owned()),
        Just("%2e%2e".to_owned()),
        Just("%2f".to_owned()),
        Just("%252e".to_owned()),
        Just("\\".to_owned()),
        Just(":".to_owned()),
        Just("C:".to_owned()),
        Just("/".to_owned()),
        Just("中文".to_owned()),
        Just("\u{2215}".to_owned()),
        Just("\u{FF0E}".to_owned()),
        Just("\u{202E}".to_owned()),
        Just("~1".to_owned()),
        Just("CON".to_owned()),
        Just(" ".to_owned()),
        "\\PC{0,6}",
    ];
    (
        proptest::option::of(Just("/")),
        proptest::collection::vec(piece, 1..8),
        proptest::option::of(Just(".md")),
    )
        .prop_map(|(lead, pieces, ext)| {
            let mut text = lead.unwrap_or_default().to_owned();
            for (i, piece) in pieces.iter().enumerate() {
                if i > 0 && i % 2 == 0 {
                    text.push('/');
                }
                text.push_str(piece);
            }
            text.push_str(ext.unwrap_or_default());
            text
        })
}

#[test]
fn no_accepted_path_leads_outside_the_vault() {
    let fx = fixture();
    let canonical_root = fs::canonicalize(&fx.root).unwrap();
    let mut runner = TestRunner::new(Config { cases: 512, failure_persistence: None, ..Config::default() });
    let strategy = prop_oneof![hostile_path(), any::<String>()];
    runner
        .run(&strategy, |input| {
            if let Ok(path) = NotePath::parse(&input) {
                let text = path.as_str();
                prop_assert_eq!(text, input.as_str());
                prop_assert!(!text.split('/').any(|segment| segment == ".." || segment == "."));
                prop_assert!(!text.contains('\\') && !text.contains(':') && !text.contains('\0'));
                prop_assert!(!text.starts_with('/') && !text.ends_with('/'));
            }
            if let Ok(path) = fx.sandbox.resolve_read(&input) {
                let real = fs::canonicalize(fx.root.join(path.as_str())).unwrap();
                prop_assert!(real.starts_with(&canonical_root), "{} -> {}", input, real.display());
                let rel = real.strip_prefix(&canonical_root).unwrap().to_string_lossy().into_owned();
                prop_assert!(!fx.sandbox.policy().is_denied(&rel), "{} -> {}", input, rel);
                let bytes = fx.sandbox.read(&path, 1 << 20).unwrap();
                prop_assert!(!String::from_utf8_lossy(&bytes).contains(SECRET));
            }
            Ok(())
        })
        .unwrap();
}

#[cfg(unix)]
#[test]
fn reads_racing_a_symlink_swap_never_return_the_secret() {
    use std::os::unix::fs::symlink;
    let fx = fixture();
    // The file itself flips between a regular file and a symlink to the secret.
    write(&fx.root.join("z/race.md"), "harmless\n");
    let (target, staging) = (fx.root.join("z/race.md"), fx.root.join("z/race.tmp"));
    race(&fx, "z/race.md", || {
        let _ = fs::remove_file(&staging);
        symlink(fx.outside.join("secret.md"), &staging).unwrap();
        fs::rename(&staging, &target).unwrap();
        fs::write(&staging, "harmless\n").unwrap();
        fs::rename(&staging, &target).unwrap();
    });
    // Its parent folder flips between a real folder and a symlink to the outside.
    write(&fx.root.join("z/racedir/race.md"), "harmless\n");
    write(&fx.outside.join("racedir/race.md"), SECRET);
    let (folder, parked) = (fx.root.join("z/racedir"), fx.root.join("z/racedir-parked"));
    race(&fx, "z/racedir/race.md", || {
        fs::rename(&folder, &parked).unwrap();
        symlink(fx.outside.join("racedir"), &folder).unwrap();
        fs::remove_file(&folder).unwrap();
        fs::rename(&parked, &folder).unwrap();
    });
}

/// Reads `input` thousands of times while `swap` runs in a loop on another
/// thread; every read must return the harmless bytes or be refused.
#[cfg(unix)]
fn race(fx: &Fixture, input: &str, swap: impl Fn() + Sync) {
    use std::sync::atomic::{AtomicBool, Ordering};
    let path = fx.sandbox.resolve_read(input).unwrap();
    let stop = AtomicBool::new(false);
    let (mut leaks, mut odd_errors) = (Vec::new(), Vec::new());
    std::thread::scope(|scope| {
        scope.spawn(|| {
            while !stop.load(Ordering::Relaxed) {
                swap();
            }
        });
        // No assertion in here: a panic would leave the swapping thread running.
        for _ in 0..6000 {
            match fx.sandbox.read(&path, 1024) {
                Ok(bytes) if bytes != b"harmless\n" => {
                    leaks.push(String::from_utf8_lossy(&bytes).into_owned())
                }
                Ok(_) => {}
                Err(err) if matches!(err.code, PathDenied | NotFound) => {}
                Err(err) => odd_errors.push(err.to_string()),
            }
        }
        stop.store(true, Ordering::Relaxed);
    });
    assert!(leaks.is_empty(), "{input}: {} reads returned other bytes, e.g. {:?}", leaks.len(), leaks[0]);
    assert!(odd_errors.is_empty(), "{input}: unexpected errors: {odd_errors:?}");
}

#[test]
fn scan_reports_markdown_files_whose_names_are_refused() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    std::fs::create_dir_all(root.join("z")).unwrap();
    std::fs::write(root.join("z/ok.md"), "ok\n").unwrap();
    std::fs::write(root.join("z/evil\u{202E}gnp.md"), "bidi\n").unwrap();
    std::fs::write(root.join("z/picture\u{202E}.png"), "not markdown\n").unwrap();
    let sandbox = kb_mcp::sandbox::Sandbox::open(root, kb_mcp::sandbox::Policy::default()).unwrap();
    let scan = sandbox.scan().unwrap();
    assert_eq!(scan.markdown.iter().map(|f| f.path.as_str()).collect::<Vec<_>>(), ["z/ok.md"]);
    assert_eq!(scan.skipped.len(), 1, "{:?}", scan.skipped);
    assert_eq!(scan.skipped[0].path, "z/evil\u{202E}gnp.md");
    assert!(scan.skipped[0].reason.contains("U+202E"), "{}", scan.skipped[0].reason);
}

/// Every Unix-only part of this file, in file order, and what it checks: symlinks
/// (creating them needs Unix; Windows needs Developer Mode or administrator
/// rights, and its junctions are another mechanism) and non-UTF-8 file names.
const UNIX_ONLY: &[&str] = &[
    "fixture: symlinks to the outside, to .git and inside the vault",
    "symlinks_cannot_lead_reads_astray (whole test)",
    "search_folders_must_be_readable_folders: folders judged by where a symlink leads",
    "a_symlink_swapped_in_after_resolving_is_caught (whole test)",
    "note_targets_must_not_pass_through_symlinks (whole test)",
    "scan_lists_readable_markdown_and_attachments_only: a non-UTF-8 file name",
    "vault_config_is_read_with_care: a kb.toml that is a symlink",
    "reads_racing_a_symlink_swap_never_return_the_secret (whole test)",
    "race: the helper of the test above",
];

/// Off Unix the checks above do not run; this says so in the test output, and
/// everywhere it keeps the list above complete.
#[test]
fn unix_only_checks_are_listed_and_reported_when_skipped() {
    common::check_unix_only("tests/it/sandbox.rs", include_str!("sandbox.rs"), UNIX_ONLY);
}
