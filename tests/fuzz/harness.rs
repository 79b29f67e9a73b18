//! The bodies of the three fuzz targets, shared by the fuzzer
//! (`tests/fuzz/fuzz_targets/*.rs`) and by `tests/it/fuzz_regressions.rs`, which
//! replays every kept corpus and crash file through them: a file means the same
//! thing to both, so an input the fuzzer found stays a test without the fuzzer.
//!
//! Each function takes raw bytes and panics when a promise breaks:
//! - [`path_resolver`]: a path `NotePath` accepts has no traversal, separator or
//!   stream trick left in it, and a path the sandbox resolves for reading (or as
//!   a note target) stays inside the vault, out of denied places, away from the
//!   secret planted outside, and off symlinks where it writes;
//! - [`note_parser`]: parsing never panics and keeps offsets on character
//!   boundaries and line numbers inside the text;
//! - [`patch_edits`]: the edit engine never panics, keeps a BOM, and a
//!   frontmatter merge leaves the body byte for byte.
//!
//! The edits are decoded from the bytes by [`Bytes`], a small structure-aware
//! reader (interesting fragments: fences, headings, frontmatter, CRLF, BOM, CJK),
//! rather than by the `arbitrary` crate, so that the regression test needs no
//! dependency the main crate does not have.

use std::fs;
use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use kb_mcp::sandbox::{Area, NotePath, Policy, Sandbox};
use kb_mcp::vault::{decode_note, parse_frontmatter, parse_note};
use kb_mcp::write::{Edit, apply_edits};
use serde_json::{Map, Value, json};

/// Planted in every file no read may return.
const SECRET: &str = "fuzz-secret-never-read";

/// The vault the resolver runs against, built once per process.
struct Vault {
    root: PathBuf,
    sandbox: Sandbox,
}

fn policy() -> Policy {
    Policy {
        notes: vec!["z".to_owned()],
        standards: vec!["docs".to_owned()],
        inbox: "inbox".to_owned(),
        read_also: vec!["refs".to_owned()],
        deny: vec!["z/private".to_owned()],
        memory: None,
    }
}

fn put(path: &Path, text: &str) {
    fs::create_dir_all(path.parent().expect("a parent")).expect("create a folder");
    fs::write(path, text).expect("write a file");
}

fn vault() -> &'static Vault {
    static VAULT: OnceLock<Vault> = OnceLock::new();
    VAULT.get_or_init(|| {
        let base = std::env::temp_dir().join(format!("kb-mcp-fuzz-{}", std::process::id()));
        let _ = fs::remove_dir_all(&base);
        let root = base.join("vault");
        let outside = base.join("outside");
        for (path, text) in [
            ("z/note.md", "# Note\n"),
            ("z/中文 笔记.md", "# 中文\n"),
            ("z/sub/deep.md", "deep\n"),
            ("z/image.png", "png"),
            ("docs/std.md", "# Standard\n"),
            ("refs/ref.md", "# Ref\n"),
            ("inbox/new/p.md", SECRET),
            ("z/private/p.md", SECRET),
            ("z/.hidden.md", SECRET),
            ("z/.env", SECRET),
            ("z/key.pem", SECRET),
            (".git/config", SECRET),
            (".git/notes.md", SECRET),
            ("node_modules/x.md", SECRET),
            ("top.md", SECRET),
            ("other/x.md", SECRET),
        ] {
            put(&root.join(path), text);
        }
        put(&outside.join("secret.md"), SECRET);
        #[cfg(unix)]
        {
            use std::os::unix::fs::symlink;
            let links: [(&Path, &str); 8] = [
                (&outside.join("secret.md"), "z/out.md"),
                (&outside, "z/outdir"),
                (Path::new("../.git"), "z/git"),
                (Path::new("../.git/notes.md"), "z/gitnote.md"),
                (Path::new("note.md"), "z/good.md"),
                (Path::new("loop.md"), "z/loop.md"),
                (Path::new(".."), "z/up"),
                (Path::new("private"), "z/priv"),
            ];
            for (target, link) in links {
                symlink(target, root.join(link)).expect("a symlink");
            }
        }
        let sandbox = Sandbox::open(&root, policy()).expect("the fuzz vault opens");
        Vault { root: sandbox.root().to_path_buf(), sandbox }
    })
}

/// `NotePath::parse`, `Policy::area_of`, and the read and note-target resolvers
/// on the input as a path.
pub(crate) fn path_resolver(data: &[u8]) {
    let input = String::from_utf8_lossy(data);
    let vault = vault();
    let policy = vault.sandbox.policy();
    if let Ok(path) = NotePath::parse(&input) {
        let text = path.as_str();
        assert_eq!(text, input, "parse rewrote the path");
        assert!(text.len() <= 1024, "{text:?}: too long to accept");
        assert!(!text.starts_with('/') && !text.ends_with('/'), "{text:?}: rooted or a folder");
        assert!(!text.contains(['\\', ':', '\0']), "{text:?}: a backslash, colon or NUL");
        assert!(
            !text.split('/').any(|segment| segment.is_empty() || segment == "." || segment == ".."),
            "{text:?}: an empty, `.` or `..` segment"
        );
        if policy.area_of(&path).is_some() {
            assert!(!policy.is_denied(text), "{text:?}: denied but given an area");
        }
    }
    if let Ok(path) = vault.sandbox.resolve_read(&input) {
        assert!(path.is_markdown(), "{path}: read resolves only Markdown");
        let real = fs::canonicalize(vault.root.join(path.as_str())).expect("a resolved path exists");
        let rel =
            real.strip_prefix(&vault.root).unwrap_or_else(|_| panic!("{path} leads to {}", real.display()));
        let rel = rel.to_string_lossy().replace('\\', "/");
        assert!(!policy.is_denied(&rel), "{path} leads into denied {rel}");
        if let Ok(bytes) = vault.sandbox.read(&path, 1 << 16) {
            assert!(!String::from_utf8_lossy(&bytes).contains(SECRET), "{path} read a secret");
        }
    }
    if let Ok(path) = vault.sandbox.resolve_note_target(&input) {
        assert!(path.is_markdown(), "{path}: a note target is Markdown");
        assert_eq!(policy.area_of(&path), Some(Area::Note), "{path}: a note target is in a notes folder");
        let mut on_disk = vault.root.clone();
        for segment in path.as_str().split('/') {
            on_disk.push(segment);
            if let Ok(meta) = fs::symlink_metadata(&on_disk) {
                assert!(!meta.file_type().is_symlink(), "{path}: a note target passes a symlink");
            }
        }
    }
}

/// `decode_note`, then `parse_note` and `parse_frontmatter`, on the bytes as
/// decoded and as lossy UTF-8.
pub(crate) fn note_parser(data: &[u8]) {
    let path = NotePath::parse("z/fuzz.md").expect("a valid path");
    let lossy = String::from_utf8_lossy(data);
    for text in decode_note(data).ok().into_iter().chain([lossy.as_ref()]) {
        let note = parse_note(&path, text);
        assert!(note.body_offset <= text.len() && text.is_char_boundary(note.body_offset));
        let lines = u32::try_from(text.split('\n').count()).unwrap_or(u32::MAX);
        for heading in &note.headings {
            assert!(heading.line >= note.body_line && heading.line <= lines, "heading line {}", heading.line);
        }
        for link in &note.links {
            assert!(link.line >= note.body_line && link.line <= lines, "link line {}", link.line);
            let line = text.split('\n').nth(link.line as usize - 1).unwrap_or_default();
            let context = kb_mcp::vault::link_context(line);
            assert!(context.chars().count() <= 160, "a link context of {} characters", context.len());
        }
        assert!(note.tags.windows(2).all(|pair| pair[0] < pair[1]), "tags not sorted: {:?}", note.tags);
        if let Some(frontmatter) = parse_frontmatter(text) {
            let yaml = &frontmatter.yaml;
            assert!(yaml.start <= yaml.end && yaml.end <= frontmatter.end && frontmatter.end <= text.len());
            for at in [yaml.start, yaml.end, frontmatter.end] {
                assert!(text.is_char_boundary(at), "a frontmatter offset inside a character");
            }
            assert!(frontmatter.value.is_object() || frontmatter.value.is_null());
        }
    }
}

/// `apply_edits` on a text and edits decoded from the bytes.
pub(crate) fn patch_edits(data: &[u8]) {
    let mut bytes = Bytes(data);
    let text = bytes.text(24);
    let edits: Vec<Edit> = (0..bytes.byte() % 5).map(|_| bytes.edit()).collect();
    let Ok(result) = apply_edits(&text, &edits) else { return };
    let names_bom =
        edits.iter().any(|edit| serde_json::to_string(edit).unwrap_or_default().contains('\u{feff}'));
    if text.starts_with('\u{feff}') && !names_bom {
        assert!(result.starts_with('\u{feff}'), "the BOM moved: {text:?} with {edits:?} gave {result:?}");
    }
    let merges_only = edits.iter().all(|edit| matches!(edit, Edit::SetFrontmatter { .. }));
    if merges_only && let Some(old) = parse_frontmatter(&text) {
        let new = parse_frontmatter(&result).unwrap_or_else(|| {
            panic!("a frontmatter merge lost the frontmatter: {text:?} with {edits:?} gave {result:?}")
        });
        assert_eq!(
            &result[new.end..],
            &text[old.end..],
            "a frontmatter merge changed the body: {text:?} with {edits:?}"
        );
    }
}

/// Pieces that matter to the parsers and the edits.
const FRAGMENTS: &[&str] = &[
    "---\n",
    "---\r\n",
    "--- \n",
    "...\n",
    "# A\n",
    "## b\r\n",
    "### C #\n",
    "#tag ",
    "#a/b ",
    "```\n",
    "~~~~\n",
    "    code\n",
    "`x`",
    "title: t\n",
    "tags: [a, b]\n",
    "aliases:\n  - x\n",
    "  - item\n",
    "created: 2024-03-15\n",
    "description: d\n",
    "key: value\n",
    "key: [\n",
    "a: {b: c}\n",
    "\u{feff}",
    "\r",
    "\n",
    "\r\n",
    "\n\n",
    "[[note]]",
    "[[a#b|c]]",
    "![[img.png]]",
    "[[#h]]",
    "[t](x.md)",
    "[t](<a b.md>)",
    "<x.md>",
    "^block\n",
    "%%c%%",
    "<!-- c -->",
    "中文",
    "備份",
    "한국어",
    "😀",
    "\u{200d}",
    " ",
    "\t",
    "a",
    "b",
    "A",
    ":",
    "-",
    "|",
    "\\",
    "\"",
    "'",
    "{",
    "}",
    "[",
    "]",
    "(",
    ")",
    "*",
    "_",
    "=",
    "> ",
    "1. ",
    "- [ ] ",
];

/// A structure-aware reader of fuzzer bytes; past the end it reads zeros.
struct Bytes<'a>(&'a [u8]);

impl Bytes<'_> {
    fn byte(&mut self) -> u8 {
        match self.0.split_first() {
            Some((&first, rest)) => {
                self.0 = rest;
                first
            }
            None => 0,
        }
    }

    /// Up to `max - 1` pieces: fragments, or raw bytes as lossy UTF-8.
    fn text(&mut self, max: u8) -> String {
        let pieces = self.byte() % max;
        let mut out = String::new();
        for _ in 0..pieces {
            let choice = self.byte();
            if choice < 0xC0 {
                out.push_str(FRAGMENTS[usize::from(choice) % FRAGMENTS.len()]);
            } else {
                let len = usize::from(choice - 0xC0).min(self.0.len());
                let (raw, rest) = self.0.split_at(len);
                self.0 = rest;
                out.push_str(&String::from_utf8_lossy(raw));
            }
        }
        out
    }

    fn value(&mut self, depth: u8) -> Value {
        match self.byte() % 8 {
            0 => Value::Null,
            1 => json!(true),
            2 => json!(i64::from(self.byte()) - 128),
            3 => json!(
                ["yes", "no", "1:30", "\u{7f}\u{85}", "- x", "# y", "[a", "{b", "", "~", "null"]
                    [usize::from(self.byte()) % 11]
            ),
            4 | 5 => json!(self.text(6)),
            6 if depth > 0 => Value::Array((0..self.byte() % 3).map(|_| self.value(depth - 1)).collect()),
            7 if depth > 0 => Value::Object(self.fields(depth - 1)),
            _ => json!(false),
        }
    }

    fn fields(&mut self, depth: u8) -> Map<String, Value> {
        (0..self.byte() % 4).map(|_| (self.text(3), self.value(depth))).collect()
    }

    fn edit(&mut self) -> Edit {
        match self.byte() % 6 {
            0 => Edit::ReplaceAll { content: self.text(12) },
            1 => Edit::ReplaceSection { heading: self.text(3), content: self.text(8) },
            2 => Edit::Append { content: self.text(8) },
            3 => Edit::Prepend { content: self.text(8) },
            4 => Edit::FindReplace { find: self.text(3), replace: self.text(4) },
            _ => Edit::SetFrontmatter { fields: self.fields(2) },
        }
    }
}
