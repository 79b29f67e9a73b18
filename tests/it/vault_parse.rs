//! The note parser and the `kb.toml` parser, driven by tables of cases.
//!
//! One `check_*` helper per area (metadata, diagnostics, headings, links, tags, block
//! ids, decoding, configuration) runs every case and reports all failures at once.
//! Beyond the examples: a property test that parsing never panics, a pass over every
//! note of the fixture vault, and an oracle test that compares our ATX headings with
//! the `markdown` crate's syntax tree.

#![allow(
    clippy::disallowed_methods,
    clippy::disallowed_types,
    reason = "the tests build and inspect vaults on disk"
)]

use std::fmt::Debug;
use std::path::{Path, PathBuf};

use kb_mcp::error::ErrorCode;
use kb_mcp::sandbox::NotePath;
use kb_mcp::vault::{Anchor, LinkKind, Note, VaultConfig, decode_note, parse_frontmatter, parse_note};
use proptest::prelude::*;

fn parse_at(path: &str, text: &str) -> Note {
    let path = NotePath::parse(path).unwrap_or_else(|err| panic!("test path {path:?} refused: {err}"));
    parse_note(&path, text)
}

fn parse(text: &str) -> Note {
    parse_at("z/note.md", text)
}

/// Runs `actual` on every case's input and compares with its expectation; panics
/// listing every mismatch.
fn check_all<I: Debug + ?Sized, E: Debug, A: Debug + PartialEq<E>>(
    area: &str,
    cases: &[(&I, E)],
    actual: impl Fn(&I) -> A,
) {
    let mut failures = Vec::new();
    for (input, expected) in cases {
        let got = actual(input);
        if got != *expected {
            failures.push(format!("input: {input:?}\n  expected: {expected:?}\n  got:      {got:?}"));
        }
    }
    assert!(failures.is_empty(), "{area}: {} case(s) failed:\n{}", failures.len(), failures.join("\n"));
}

fn strings(list: &[&str]) -> Vec<String> {
    list.iter().map(|s| (*s).to_owned()).collect()
}

/// An expected diagnostic: its line and a fragment of its message.
#[derive(Debug)]
struct Expect(Option<u32>, &'static str);

/// A diagnostic as found, equal to an [`Expect`] when lines agree and the message
/// contains the fragment.
#[derive(Debug)]
struct Found(Option<u32>, String);

/// Text expected to contain a fragment.
#[derive(Debug)]
struct Contains(&'static str);

impl PartialEq<Contains> for String {
    fn eq(&self, other: &Contains) -> bool {
        self.contains(other.0)
    }
}

impl PartialEq<Expect> for Found {
    fn eq(&self, other: &Expect) -> bool {
        self.0 == other.0 && self.1.contains(other.1)
    }
}

// ---------------------------------------------------------------------------
// Frontmatter metadata

#[test]
fn titles() {
    check_all(
        "title",
        &[
            ("---\ntitle: From YAML\n---\n# From H1\n", "From YAML"),
            ("---\ntitle: 2024\n---\n# From H1\n", "2024"),
            ("---\ntitle: '  spaced  '\n---\n", "spaced"),
            ("---\ntitle: ''\n---\n# From H1\n", "From H1"),
            ("---\ntitle: [a, b]\n---\n# From H1\n", "From H1"),
            ("# From H1\n\n# Second H1\n", "From H1"),
            ("\n\n# 一级标题 #\nText\n", "一级标题"),
            ("---\ntags: [x]\n---\n\n# After frontmatter\n", "After frontmatter"),
            // Issue 19: only an H1 that opens the note names it, never a closing one.
            ("## Not H1\n\n# 一级标题 #\n", "note"),
            ("Some text first.\n\n# References\n- a\n", "note"),
            ("---\ntags: [x]\n---\nText.\n# Footnotes\n", "note"),
            ("Setext title\n============\n", "Setext title"),
            ("```\n# in code\n```\n", "note"),
            ("no headings at all", "note"),
            ("", "note"),
            ("#\n# Real\n", "note"),
        ],
        |text: &str| parse(text).title,
    );
    assert_eq!(parse_at("z/备份 仓库.MD", "").title, "备份 仓库");
}

#[test]
fn aliases() {
    check_all(
        "aliases",
        &[
            ("---\naliases:\n  - backup repo\n  - 备份库\n---\n", strings(&["backup repo", "备份库"])),
            ("---\naliases: [a, b, a]\n---\n", strings(&["a", "b"])),
            ("---\naliases: single alias\n---\n", strings(&["single alias"])),
            ("---\naliases: one, two ,three\n---\n", strings(&["one", "two", "three"])),
            ("---\nalias: old name\n---\n", strings(&["old name"])),
            ("---\naliases: [[x]]\n---\n", strings(&["x"])),
            ("---\naliases:\n  - [[x]]\n  - y\n---\n", strings(&["x", "y"])),
            ("---\naliases:\n---\n", strings(&[])),
            ("---\naliases: ''\n---\n", strings(&[])),
            ("---\naliases: []\n---\n", strings(&[])),
            ("---\naliases: [2024, true]\n---\n", strings(&["2024", "true"])),
            ("---\nAliases: [Cap]\n---\n", strings(&["Cap"])),
            ("no frontmatter", strings(&[])),
        ],
        |text: &str| parse(text).aliases,
    );
}

#[test]
fn frontmatter_tags() {
    check_all(
        "frontmatter tags",
        &[
            ("---\ntags: [type/concept, 备份]\n---\n", strings(&["type/concept", "备份"])),
            ("---\ntags:\n  - b\n  - a\n---\n", strings(&["a", "b"])),
            ("---\ntags: one two\n---\n", strings(&["one", "two"])),
            ("---\ntags: one, two,three\n---\n", strings(&["one", "three", "two"])),
            ("---\ntags: '#quoted'\n---\n", strings(&["quoted"])),
            ("---\ntags: ['#a', '#b/']\n---\n", strings(&["a", "b"])),
            ("---\ntags: type/synthesis\n---\n", strings(&["type/synthesis"])),
            ("---\ntag: solo\n---\n", strings(&["solo"])),
            ("---\ntags: [[nested]]\n---\n", strings(&["nested"])),
            ("---\ntags: #comment\n---\n", strings(&[])),
            ("---\ntags:\n---\n", strings(&[])),
            ("---\ntags: [Dup, dup, DUP]\n---\n", strings(&["Dup"])),
            ("---\ntags: [b, B]\n---\n#a #b\n", strings(&["a", "b"])),
            ("---\ntags: [x]\n---\n#y #X\n", strings(&["x", "y"])),
            ("---\ntags: [2024]\n---\n", strings(&["2024"])),
        ],
        |text: &str| parse(text).tags,
    );
}

#[test]
fn descriptions() {
    check_all(
        "description",
        &[
            ("---\ndescription: '  One sentence.  '\n---\n", "One sentence."),
            ("---\nsummary: Older key.\n---\n", "Older key."),
            ("---\ndescription: Wins\nsummary: Loses\n---\n", "Wins"),
            ("---\ndescription: ''\nsummary: Fallback\n---\n", "Fallback"),
            ("---\ndescription: [not, text]\n---\n", ""),
            ("no frontmatter", ""),
        ],
        |text: &str| parse(text).description,
    );
}

#[test]
fn created_times() {
    check_all(
        "created",
        &[
            ("---\ncreated: 2024-03-15\n---\n", "2024-03-15T00:00:00Z"),
            ("---\ncreated: 2025-01-02T10:30:00+08:00\n---\n", "2025-01-02T10:30:00+08:00"),
            ("---\ncreated: 2025-01-02T10:30:00Z\n---\n", "2025-01-02T10:30:00Z"),
            ("---\ncreated: 2025-01-02T10:30:00.5-05:00\n---\n", "2025-01-02T10:30:00.5-05:00"),
            ("---\ncreated: 2024-03-15 10:30\n---\n", "2024-03-15T10:30:00Z"),
            ("---\ncreated: 2024-03-15 10:30:15\n---\n", "2024-03-15T10:30:15Z"),
            ("---\ncreated: 2024-03-15T10:30\n---\n", "2024-03-15T10:30:00Z"),
            ("---\ncreated: '2024-03-15'\n---\n", "2024-03-15T00:00:00Z"),
            ("---\ndate: 2023-12-31\n---\n", "2023-12-31T00:00:00Z"),
            ("---\ncreated_at: 2023-12-31\n---\n", "2023-12-31T00:00:00Z"),
            ("---\ncreated: 2024-01-01\ndate: 2023-01-01\n---\n", "2024-01-01T00:00:00Z"),
            ("---\ncreated: yesterday\ndate: 2023-01-01\n---\n", "2023-01-01T00:00:00Z"),
            ("---\ncreated: yesterday\n---\n", ""),
            ("---\ncreated: 2024-02-30\n---\n", ""),
            ("---\ncreated: 20240315\n---\n", "2024-03-15T00:00:00Z"),
            ("---\ncreated: 15/03/2024\n---\n", ""),
            ("---\ncreated:\n---\n", ""),
            ("no frontmatter", ""),
        ],
        |text: &str| parse(text).created.unwrap_or_default(),
    );
}

#[test]
fn frontmatter_values() {
    let note = parse(
        "---\ntitle: T\nnested:\n  a: [1, 2.5, true, null]\n1: numeric key\nnan: .nan\nday: 2024-03-15\n---\nbody\n",
    );
    assert_eq!(
        note.frontmatter,
        serde_json::json!({
            "title": "T",
            "nested": {"a": [1, 2.5, true, null]},
            "1": "numeric key",
            "nan": ".nan",
            "day": "2024-03-15",
        })
    );
    check_all(
        "frontmatter object",
        &[
            ("no frontmatter", serde_json::json!({})),
            ("---\n---\nbody", serde_json::json!({})),
            ("---\n# only a comment\n---\n", serde_json::json!({})),
            ("---\n- a list\n---\n", serde_json::json!({})),
            ("---\njust a scalar\n---\n", serde_json::json!({})),
            ("---\nkey: [unclosed\n---\n", serde_json::json!({})),
            ("---\n? [a, b]\n: complex key\n---\n", serde_json::json!({"[\"a\",\"b\"]": "complex key"})),
            (
                "---\nbase: &b {x: 1}\nmerged:\n  <<: *b\n  y: 2\n---\n",
                serde_json::json!({"base": {"x": 1}, "merged": {"x": 1, "y": 2}}),
            ),
            ("---\ntagged: !custom value\n---\n", serde_json::json!({"tagged": "value"})),
        ],
        |text: &str| parse(text).frontmatter,
    );
}

#[test]
fn frontmatter_blocks() {
    // What `parse_frontmatter` finds, written `yaml=… end=… body_line=… error=…`.
    check_all(
        "frontmatter block",
        &[
            ("---\na: 1\n---\nbody", "yaml=\"a: 1\\n\" end=13 body_line=4 error=false"),
            ("---  \r\na: 1\r\n--- \r\nbody", "yaml=\"a: 1\\r\\n\" end=19 body_line=4 error=false"),
            ("\u{feff}---\na: 1\n...\nbody", "yaml=\"a: 1\\n\" end=16 body_line=4 error=false"),
            ("---\n---", "yaml=\"\" end=7 body_line=3 error=false"),
            ("---\na: [\n---\n", "yaml=\"a: [\\n\" end=13 body_line=4 error=true"),
            ("---\na: 1\n", "none"),
            ("--- \na: 1", "none"),
            ("----\na: 1\n---\n", "none"),
            (" ---\na: 1\n---\n", "none"),
            ("text\n---\na: 1\n---\n", "none"),
            ("", "none"),
        ],
        |text: &str| match parse_frontmatter(text) {
            Some(fm) => format!(
                "yaml={:?} end={} body_line={} error={}",
                &text[fm.yaml.clone()],
                fm.end,
                fm.body_line,
                fm.error.is_some()
            ),
            None => "none".to_owned(),
        },
    );
    let fm = parse_frontmatter("---\na: 1\n---\n").expect("frontmatter");
    assert_eq!(fm.value, serde_json::json!({"a": 1}));
    let bad = parse_frontmatter("---\na: 1\nb: [\n---\n").expect("frontmatter");
    assert_eq!(bad.value, serde_json::Value::Null);
    assert!(bad.error.as_deref().is_some_and(|e| e.contains("not valid YAML")), "{:?}", bad.error);
}

// ---------------------------------------------------------------------------
// Body position and diagnostics

#[test]
fn body_positions() {
    check_all(
        "body offset and line",
        &[
            ("no frontmatter\n", (0, 1)),
            ("\u{feff}no frontmatter\n", (3, 1)),
            ("---\na: 1\n---\nbody\n", (13, 4)),
            ("\u{feff}---\na: 1\n---\nbody\n", (16, 4)),
            ("---\r\na: 1\r\n---\r\nbody\r\n", (16, 4)),
            ("---\na: [bad\n---\nbody\n", (16, 4)),
            ("---\na: 1\nnever closed\n", (0, 1)),
            ("\u{feff}---\na: 1\n", (3, 1)),
            ("---\na: 1\n---", (12, 4)),
        ],
        |text: &str| {
            let note = parse(text);
            assert_eq!(note.body(text).len(), text.len() - note.body_offset);
            assert_eq!(kb_mcp::vault::body_offset(text), note.body_offset, "the cheap body_offset");
            (note.body_offset, note.body_line)
        },
    );
}

#[test]
fn diagnostics() {
    let cases: &[(&str, Vec<Expect>)] = &[
        ("---\ntitle: ok\n---\n# fine\n", vec![]),
        ("---\ntitle: ok\nbad: [unclosed\n---\nbody\n", vec![Expect(Some(4), "not valid YAML")]),
        ("---\ntitle: a: b\n---\n", vec![Expect(Some(2), "not valid YAML")]),
        ("---\na: 1\na: 2\n---\n", vec![Expect(Some(2), "duplicate entry with key")]),
        ("---\ntitle: x\nnever closed\n", vec![Expect(Some(1), "never closed")]),
        ("---\n- a\n- b\n---\n", vec![Expect(Some(2), "a list, not a mapping")]),
        ("---\nplain scalar\n---\n", vec![Expect(Some(2), "a string, not a mapping")]),
        ("---\ntitle: t\ntags: #project\n---\n", vec![Expect(Some(3), "comment")]),
        ("---\ntags:\n  - ok\n  - #lost\n---\n", vec![Expect(Some(4), "comment")]),
        ("---\ntags: [ok]\n---\n", vec![]),
        ("---\ncreated: someday\n---\n", vec![Expect(Some(2), "`created: someday` is not a date")]),
        (
            "---\ncreated: someday\ndate: 2024-01-01\n---\n```\n",
            vec![
                Expect(Some(2), "is not a date"),
                Expect(Some(5), "code fence opened on line 5 is never closed"),
            ],
        ),
        (
            "intro\n\n```rust\nfn main() {}\n",
            vec![Expect(Some(3), "code fence opened on line 3 is never closed")],
        ),
        ("---\na: 1\n---\n~~~\ncode\n", vec![Expect(Some(4), "code fence opened on line 4 is never closed")]),
        ("```\ncode\n```\n", vec![]),
        ("> ```\n> code\n\nafter the quote\n", vec![]),
    ];
    check_all("diagnostics", cases, |text: &str| {
        parse(text).diagnostics.into_iter().map(|d| Found(d.line, d.message)).collect::<Vec<_>>()
    });
    // The body survives broken YAML: headings and links after it still count.
    let note = parse("---\nbad: [\n---\n# Heading\n[[link]]\n");
    assert_eq!(note.headings.len(), 1);
    assert_eq!(note.headings[0].line, 4);
    assert_eq!(note.links.len(), 1);
    assert_eq!(note.links[0].line, 5);
    assert_eq!(note.frontmatter, serde_json::json!({}));
}

/// Issue 12 item 10: frontmatter parsing is bounded. Nested flow collections cost
/// YAML quadratic time in their depth (200 KB took about two minutes), so a block
/// nested deeper than the limit, or longer than the size limit, is not parsed: the
/// note keeps its body, title and links, and gets a diagnostic. The diagnostic's
/// wording (not YAML's own "recursion limit") shows the parser never ran.
#[test]
fn issue_12_frontmatter_beyond_the_limits_is_a_diagnostic_not_a_parse() {
    let deep = |depth: usize| {
        format!(
            "---\ntitle: Deep\nx: {}{}\n---\n# Body heading\n[[link]]\n",
            "[".repeat(depth),
            "]".repeat(depth)
        )
    };
    let huge_nested = deep(100_000);
    assert!(huge_nested.len() > 200_000);
    let long_value =
        format!("---\ntitle: Long\nabstract: {}\n---\n# Body heading\n[[link]]\n", "x".repeat(1100 * 1024));
    for (what, text, needle) in [
        ("100 levels", deep(100), "levels deep"),
        ("200 KB nested", huge_nested, "levels deep"),
        ("1.1 MiB", long_value, "more than the limit"),
    ] {
        let note = parse(&text);
        assert_eq!(note.frontmatter, serde_json::json!({}), "{what}");
        assert_eq!(note.title, "Body heading", "{what}: the title falls back to the H1");
        assert_eq!(note.links.len(), 1, "{what}");
        assert!(
            note.diagnostics.iter().any(|d| d.line.is_some() && d.message.contains(needle)),
            "{what}: {:?}",
            note.diagnostics.iter().map(|d| &d.message[..d.message.len().min(200)]).collect::<Vec<_>>()
        );
    }
    // Within the limits, nesting and brackets inside strings and comments are read as before.
    let note = parse(&format!(
        "---\nx: {}1{}\ns: \"{}\"\nq: '{}'\n# {}\n---\n",
        "[".repeat(60),
        "]".repeat(60),
        "[".repeat(100),
        "{".repeat(100),
        "[".repeat(100)
    ));
    assert!(note.diagnostics.is_empty(), "{:?}", note.diagnostics);
    assert_eq!(note.frontmatter["s"], serde_json::json!("[".repeat(100)));
}

/// Issue 12 item 10: 50,000 aliases are kept in order without repeats (the
/// duplicate check was a scan of the list so far: quadratic).
#[test]
fn issue_12_fifty_thousand_aliases() {
    let list: String = (0..50_000).map(|i| format!("  - a{i}\n")).collect();
    let note = parse(&format!("---\naliases:\n{list}  - a7\n---\n"));
    assert_eq!(note.aliases.len(), 50_000);
    assert_eq!(note.aliases[49_999], "a49999");
    assert!(note.diagnostics.is_empty());
}

// ---------------------------------------------------------------------------
// Headings

#[test]
fn headings() {
    let cases: &[(&str, &[&str])] = &[
        ("# One\n## Two\n###### Six\n####### Seven\n", &["H1@1 One", "H2@2 Two", "H6@3 Six"]),
        ("#NoSpace\n#\tTab\n   # Three spaces\n    # Four\n", &["H1@2 Tab", "H1@3 Three spaces"]),
        (
            "## Closed ##\n# Hash# kept\n### \\#\n# #\n",
            &["H2@1 Closed", "H1@2 Hash# kept", "H3@3 \\#", "H1@4 "],
        ),
        ("## Heading #tag\n", &["H2@1 Heading #tag"]),
        ("---\ntitle: t\n---\n\n# After frontmatter\n", &["H1@5 After frontmatter"]),
        ("---\r\ntitle: t\r\n---\r\n# CRLF\r\ntext\r\n## Two\r\n", &["H1@4 CRLF", "H2@6 Two"]),
        ("```\n# code\n```\n~~~~\n# code\n~~~\n# still code\n~~~~\n# Out\n", &["H1@9 Out"]),
        ("```md\n# code\n``\n# code\n````\n# Out\n", &["H1@6 Out"]),
        ("> # quoted\n- # in list\n", &[]),
        ("Setext one\n===\n\nSetext two\n---\n", &["H1@1 Setext one", "H2@4 Setext two"]),
        ("Two line\nparagraph\n---\n", &["H2@1 Two line paragraph"]),
        ("---\nunclosed frontmatter\n", &[]),
        ("---\ntitle: t\n---\n---\n", &[]),
        ("- item\n---\n", &[]),
        ("para\n\n---\n", &[]),
        ("# H\n---\n", &["H1@1 H"]),
        ("\u{feff}# BOM heading\n", &["H1@1 BOM heading"]),
        ("## 中文标题 ##\n", &["H2@1 中文标题"]),
    ];
    check_all("headings", cases, |text: &str| {
        parse(text)
            .headings
            .into_iter()
            .map(|h| format!("H{}@{} {}", h.level, h.line, h.text))
            .collect::<Vec<_>>()
    });
}

// ---------------------------------------------------------------------------
// Links

/// Links written `kind@line target#anchor|display` (`#^id` for a block anchor).
fn link_summary(note: Note) -> Vec<String> {
    note.links
        .into_iter()
        .map(|link| {
            let kind = link.kind.name();
            let anchor = match link.anchor {
                None => String::new(),
                Some(Anchor::Heading(h)) => format!("#{h}"),
                Some(Anchor::Block(b)) => format!("#^{b}"),
            };
            let display = link.display.map(|d| format!("|{d}")).unwrap_or_default();
            format!("{kind}@{} {}{anchor}{display}", link.line, link.target)
        })
        .collect()
}

#[test]
fn wikilinks() {
    let cases: &[(&str, &[&str])] = &[
        ("[[target]]", &["wikilink@1 target"]),
        ("[[ 备份仓库 ]]", &["wikilink@1 备份仓库"]),
        ("[[target|shown]]", &["wikilink@1 target|shown"]),
        ("[[target#Heading]]", &["wikilink@1 target#Heading"]),
        ("[[target#Heading|shown]]", &["wikilink@1 target#Heading|shown"]),
        ("[[#Local heading]]", &["wikilink@1 #Local heading"]),
        ("[[target#^block-1]]", &["wikilink@1 target#^block-1"]),
        ("[[#^abc|see]]", &["wikilink@1 #^abc|see"]),
        ("[[a#b#c]]", &["wikilink@1 a#b#c"]),
        ("[[tech/git/remote.md]]", &["wikilink@1 tech/git/remote.md"]),
        ("![[embed]]", &["embed@1 embed"]),
        ("![[image.png|100]]", &["embed@1 image.png|100"]),
        ("![[note#Section]]", &["embed@1 note#Section"]),
        ("| [[a\\|b]] | c |", &["wikilink@1 a|b"]),
        ("[[a]] and [[b]]\n\n[[c]]", &["wikilink@1 a", "wikilink@1 b", "wikilink@3 c"]),
        ("[[]] [[ ]] [[|x]] [[#]]", &[]),
        ("[[unclosed\nnext]]", &[]),
        ("\\[[escaped]]", &[]),
        ("\\![[not embed]]", &["wikilink@1 not embed"]),
        ("[[a [[b]]", &["wikilink@1 b"]),
        ("`[[in code]]` [[out]]", &["wikilink@1 out"]),
        ("``[[a]]` still code``", &[]),
        ("`unclosed [[x]]", &["wikilink@1 x"]),
        ("```\n[[fenced]]\n```\n[[after]]", &["wikilink@4 after"]),
        ("~~~md\n[[fenced]]\n~~~\n", &[]),
        ("> [[quoted]]", &["wikilink@1 quoted"]),
        ("---\nsee: '[[in a property]] too'\n---\n[[body]]", &["wikilink@4 body"]),
        ("---\r\na: 1\r\n---\r\n\r\n[[crlf]]\r\n", &["wikilink@5 crlf"]),
        ("# Heading [[in heading]]", &["wikilink@1 in heading"]),
    ];
    check_all("wikilinks", cases, |text: &str| link_summary(parse(text)));
}

/// Issue 34 item 4: a quoted `"[[Note]]"` as a property's value or list item
/// is a link (kind `property`) at its line in the frontmatter, as Obsidian reads
/// it; unquoted (a nested YAML list), in `aliases`, `tags` or `cssclasses`,
/// with text around it or in a comment, it is not.
#[test]
fn issue_34_links_in_properties() {
    let cases: &[(&str, &[&str])] = &[
        ("---\nrelated: \"[[A]]\"\n---\n", &["property@2 A"]),
        (
            "---\nup: [\"[[B]]\", \"[[C|see C]]\"]\nnext:\n  - \"[[D#Heading]]\"\n  - '[[E#^blk]]'\n---\n[[body]]\n",
            &[
                "property@2 B",
                "property@2 C|see C",
                "property@4 D#Heading",
                "property@5 E#^blk",
                "wikilink@7 body",
            ],
        ),
        ("---\ntitle: T\nUp: '[[Bob''s note]]' # [[comment]]\n---\n", &["property@3 Bob's note"]),
        ("---\nup: [[A]]\nnext:\n  - [[B]]\n---\n", &[]),
        ("---\naliases: [\"[[A]]\"]\ntags: '[[B]]'\ncssclasses: \"[[C]]\"\n---\n", &[]),
        ("---\nup: \"see [[A]]\"\npic: \"![[B]]\"\n# old: \"[[C]]\"\nmeta:\n  up: \"[[D]]\"\n---\n", &[]),
        ("---\nup: \"[[A]]\"\nbad: [\n---\n", &[]),
    ];
    check_all("property links", cases, |text: &str| link_summary(parse(text)));
    // The spans are the link's bytes, and the model reads what parse_note reads.
    let text = "---\nup: [\"[[B]]\", '[[C|see C]]'] # x\nnext:\n  - \"[[D#Heading]]\"\n---\n[[body]]\n";
    let model = spans(text);
    let links: Vec<[&str; 4]> = model
        .links
        .iter()
        .map(|l| {
            let part = |s: Option<kb_mcp::vault::Span>| s.map_or("-", |s| s.of(text));
            [l.span.of(text), l.target.of(text), part(l.anchor), part(l.display)]
        })
        .collect();
    assert_eq!(
        links,
        [
            ["[[B]]", "B", "-", "-"],
            ["[[C|see C]]", "C", "-", "see C"],
            ["[[D#Heading]]", "D", "Heading", "-"],
            ["[[body]]", "body", "-", "-"],
        ]
    );
    let note = parse(text);
    assert_eq!(note.links, model.links.iter().map(|l| l.link.clone()).collect::<Vec<_>>());
}

#[test]
fn markdown_links() {
    let cases: &[(&str, &[&str])] = &[
        ("[text](other.md)", &["markdown@1 z/other.md|text"]),
        ("[text](./other.md)", &["markdown@1 z/other.md|text"]),
        ("[up](../top.md)", &["markdown@1 top.md|up"]),
        ("[root](/docs/std.md)", &["markdown@1 docs/std.md|root"]),
        ("[esc](../../x.md)", &["markdown@1 ../../x.md|esc"]),
        ("[s](my%20note.md)", &["markdown@1 z/my note.md|s"]),
        ("[s](%E5%A4%87%E4%BB%BD.md)", &["markdown@1 z/备份.md|s"]),
        ("[s](<path with spaces.md>)", &["markdown@1 z/path with spaces.md|s"]),
        ("[s](folder/note.md#Some%20Heading)", &["markdown@1 z/folder/note.md#Some Heading|s"]),
        ("[s](note.md#^blk)", &["markdown@1 z/note.md#^blk|s"]),
        ("[same](#heading)", &["markdown@1 #heading|same"]),
        ("[s](note.md \"a title\")", &["markdown@1 z/note.md|s"]),
        ("[s](a_(b).md)", &["markdown@1 z/a_(b).md|s"]),
        ("[](empty-text.md)", &["markdown@1 z/empty-text.md"]),
        ("[**bold** [nested]](n.md)", &["markdown@1 z/n.md|**bold** [nested]"]),
        ("![alt](pic.png)", &["embed@1 z/pic.png|alt"]),
        ("![](../attachments/diagram.png)", &["embed@1 attachments/diagram.png"]),
        ("[web](https://example.com/a.md)", &[]),
        ("[mail](mailto:a@b.c) [app](obsidian://open?x) [proto](//host/x.md)", &[]),
        ("![remote](https://example.com/p.png)", &[]),
        ("[empty]() [hash](#)", &[]),
        ("[spaces](my note.md)", &[]),
        ("[unclosed](note.md", &[]),
        ("\\[not](a.md)", &[]),
        ("`[code](a.md)` [real](b.md)", &["markdown@1 z/b.md|real"]),
        ("```\n[fenced](a.md)\n```", &[]),
        ("[ref][label] and [shortcut]", &[]),
        ("- [ ] task [link](t.md)", &["markdown@1 z/t.md|link"]),
    ];
    check_all("markdown links", cases, |text: &str| link_summary(parse(text)));
    // At the top level, relative links start at the root.
    assert_eq!(
        link_summary(parse_at("top.md", "[x](sub/a.md) [y](../a.md)")),
        ["markdown@1 sub/a.md|x", "markdown@1 ../a.md|y"]
    );
    assert_eq!(link_summary(parse_at("a/b/c.md", "[x](../d/e.md)")), &["markdown@1 a/d/e.md|x"]);
}

/// A link's context as a backlink shows it: its line, trimmed and cut.
fn context_of(text: &str, line: u32) -> String {
    kb_mcp::vault::link_context(text.split('\n').nth(line as usize - 1).unwrap())
}

#[test]
fn link_contexts() {
    let long = format!("  {} [[x]]  ", "字".repeat(300));
    check_all(
        "link context",
        &[
            ("  see [[a]] here  ", vec!["see [[a]] here".to_owned()]),
            ("[[a]] [[b]]", vec!["[[a]] [[b]]".to_owned(), "[[a]] [[b]]".to_owned()]),
            ("one\r\n> [x](y.md)\r\n", vec!["> [x](y.md)".to_owned()]),
            (long.as_str(), vec![format!("{}…", "字".repeat(159))]),
        ],
        |text: &str| parse(text).links.into_iter().map(|l| context_of(text, l.line)).collect::<Vec<_>>(),
    );
    for link in parse(&long).links {
        assert!(context_of(&long, link.line).chars().count() <= 160);
    }
}

// ---------------------------------------------------------------------------
// Inline tags

#[test]
fn inline_tags() {
    check_all(
        "inline tags",
        &[
            ("#tag at start", strings(&["tag"])),
            ("text #tag and #other/nested/deep.", strings(&["other/nested/deep", "tag"])),
            ("(#paren) a,#comma", strings(&["comma", "paren"])),
            ("#中文标签 #日本語 #한국어", strings(&["中文标签", "日本語", "한국어"])),
            ("全角空格\u{3000}#标签，后面", strings(&["标签"])),
            ("#snake_case #kebab-case #trailing/", strings(&["kebab-case", "snake_case", "trailing"])),
            ("#123 #2024-01 #1a #_ #-", strings(&["1a"])),
            ("a#b word#tag https://x.com/a#frag", strings(&[])),
            ("`#code` ``#also `code``", strings(&[])),
            ("```\n#fenced\n```\n~~~\n#tilde\n~~~\n#after", strings(&["after"])),
            ("````\n```\n#still\n````\n", strings(&[])),
            ("# Heading\n## Heading #intag\n####### #seven", strings(&["intag", "seven"])),
            ("[[note#heading]] [[#local]] ![[x#y]]", strings(&[])),
            ("[#text](a.md) [t](b.md#frag)", strings(&[])),
            ("\\#escaped #real", strings(&["real"])),
            ("#Tag #tag #TAG", strings(&["Tag"])),
            ("#b #a #B/c", strings(&["B/c", "a", "b"])),
            ("> #quoted - #listed", strings(&["listed", "quoted"])),
            ("&#123; C# #", strings(&[])),
            ("#ภาษาไทย #emoji🙂", strings(&["emoji🙂", "ภาษาไทย"])),
        ],
        |text: &str| parse(text).tags,
    );
}

// ---------------------------------------------------------------------------
// Block ids

#[test]
fn block_ids() {
    check_all(
        "block ids",
        &[
            ("A paragraph. ^para-1\n", strings(&["para-1"])),
            ("- item ^item1\n> quote ^q\n", strings(&["item1", "q"])),
            ("| table |\n^table-id\n", strings(&["table-id"])),
            ("trailing spaces ^id   \r\n", strings(&["id"])),
            ("x^2 and [^1] and ^under_score and ^ \n", strings(&[])),
            ("```\ncode ^nope\n```\n", strings(&[])),
            ("# Heading ^nope\n", strings(&[])),
        ],
        |text: &str| parse(text).block_ids,
    );
}

// ---------------------------------------------------------------------------
// Decoding

#[test]
fn decoding() {
    let mut utf16le = vec![0xFF, 0xFE];
    utf16le.extend("# Title\n".encode_utf16().flat_map(u16::to_le_bytes));
    let bom_less_utf16le: Vec<u8> = "# Title\nbody\n".encode_utf16().flat_map(u16::to_le_bytes).collect();
    let bom_less_utf16be: Vec<u8> = "# Title\nbody\n".encode_utf16().flat_map(u16::to_be_bytes).collect();
    let mut late_nul = "a".repeat(9000).into_bytes();
    late_nul.push(0);
    let cases: Vec<(&[u8], Vec<Expect>)> = vec![
        (b"plain", vec![]),
        ("\u{feff}# 中文".as_bytes(), vec![]),
        (b"", vec![]),
        (&late_nul, vec![]),
        (&utf16le, vec![Expect(None, "not UTF-8 (looks like UTF-16LE")]),
        (&[0xFE, 0xFF, 0, b'#'], vec![Expect(None, "UTF-16BE")]),
        (&[0xFF, 0xFE, 0, 0, b'#', 0, 0, 0], vec![Expect(None, "UTF-32LE")]),
        (&bom_less_utf16le, vec![Expect(Some(1), "UTF-16LE")]),
        (&bom_less_utf16be, vec![Expect(Some(1), "UTF-16BE")]),
        (b"line one\nbinary\0\x01\x02\x03data", vec![Expect(Some(2), "binary")]),
        (b"one\ncaf\xe9\n", vec![Expect(Some(2), "invalid byte 0xE9 at offset 7")]),
        (b"\xd6\xd0\xce\xc4", vec![Expect(Some(1), "invalid byte")]),
    ];
    check_all("decode_note", &cases, |bytes: &[u8]| match decode_note(bytes) {
        Ok(text) => {
            assert_eq!(text.as_bytes(), bytes, "decoding keeps the bytes, BOM included");
            vec![]
        }
        Err(d) => {
            assert!(d.message.ends_with("convert the file to UTF-8 to index it"), "{}", d.message);
            vec![Found(d.line, d.message)]
        }
    });
}

// ---------------------------------------------------------------------------
// Properties and real vaults

/// Pieces that make the parser's decisions interesting, glued at random.
const FRAGMENTS: &[&str] = &[
    "---",
    "...",
    "[[",
    "]]",
    "![",
    "[",
    "]",
    "](",
    "(",
    ")",
    "<",
    ">",
    "#",
    "##",
    "`",
    "``",
    "```",
    "~~~",
    "\\",
    "|",
    "^id",
    " ^b-1",
    "%E5%",
    "%20",
    "\r\n",
    "\n",
    "\n\n",
    " ",
    "\t",
    "> ",
    "- ",
    "1. ",
    "===",
    "tags: #x\n",
    "title: [a\n",
    "aliases: [[x]]\n",
    "created: 2024-03-15\n",
    "\u{feff}",
    "备份仓库",
    "標籤",
    "한국어",
    "ภาษา",
    "a",
    "b.md",
    "http:",
    "mailto:",
    "/",
    "./",
    "../",
    "\"",
    "*",
    "=",
];

fn fragment() -> impl Strategy<Value = String> {
    prop_oneof![
        6 => proptest::sample::select(FRAGMENTS).prop_map(str::to_owned),
        1 => any::<char>().prop_map(String::from),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 1000, ..ProptestConfig::default() })]

    #[test]
    fn parse_never_panics(parts in proptest::collection::vec(fragment(), 0..60)) {
        let text = parts.concat();
        let note = parse(&text);
        prop_assert!(note.body_offset <= text.len());
        prop_assert_eq!(kb_mcp::vault::body_offset(&text), note.body_offset);
        prop_assert!(text.is_char_boundary(note.body_offset));
        let lines = u32::try_from(text.split('\n').count()).unwrap_or(u32::MAX);
        for heading in &note.headings {
            prop_assert!(heading.line >= note.body_line && heading.line <= lines);
        }
        for link in &note.links {
            // A property's link lies in the frontmatter, the others in the body.
            let first = if link.kind.name() == "property" { 2 } else { note.body_line };
            prop_assert!(link.line >= first && link.line <= lines);
            prop_assert!(context_of(&text, link.line).chars().count() <= 160);
        }
        prop_assert!(note.tags.windows(2).all(|w| w[0] < w[1]));
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 256, ..ProptestConfig::default() })]

    #[test]
    fn parse_never_panics_on_any_string(text in any::<String>()) {
        let note = parse(&text);
        prop_assert!(text.is_char_boundary(note.body_offset));
        let head = &text.as_bytes()[..text.len().min(8192)];
        prop_assert_eq!(decode_note(text.as_bytes()).is_ok(), !head.contains(&0));
    }
}

fn markdown_files(dir: &Path, out: &mut Vec<PathBuf>) {
    let Ok(entries) = std::fs::read_dir(dir) else { return };
    for entry in entries.flatten() {
        let path = entry.path();
        if path.is_dir() {
            markdown_files(&path, out);
        } else if path.extension().is_some_and(|e| e == "md") {
            out.push(path);
        }
    }
}

#[test]
fn fixture_vault_parses() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures/vault");
    let mut files = Vec::new();
    markdown_files(&root, &mut files);
    files.sort();
    for file in files {
        let bytes = std::fs::read(&file).expect("readable fixture");
        let relative =
            file.strip_prefix(&root).expect("inside the vault").to_string_lossy().replace('\\', "/");
        let text = decode_note(&bytes).unwrap_or_else(|d| panic!("{relative}: {}", d.message));
        let note = parse_at(&relative, text);
        let lines: Vec<&str> = text.split('\n').collect();
        for heading in &note.headings {
            let line = lines.get(heading.line as usize - 1).copied().unwrap_or("");
            let next = lines.get(heading.line as usize).copied().unwrap_or("");
            let setext = next.trim_start().starts_with(['=', '-']);
            assert!(
                line.trim_start().starts_with('#') || setext,
                "{relative}: heading {:?} points at line {} = {line:?}",
                heading.text,
                heading.line
            );
        }
        for link in &note.links {
            let line = lines.get(link.line as usize - 1).copied().unwrap_or("");
            let written = if link.kind == LinkKind::Markdown {
                line.contains("](")
            } else {
                line.contains("[[") && line.contains(link.target.as_str())
            };
            assert!(written, "{relative}: link {:?} not on line {} = {line:?}", link.target, link.line);
        }
    }
}

/// Text of an mdast node, concatenated.
fn mdast_text(node: &markdown::mdast::Node) -> String {
    use markdown::mdast::Node;
    match node {
        Node::Text(t) => t.value.clone(),
        Node::InlineCode(c) => format!("`{}`", c.value),
        other => {
            other.children().map(|children| children.iter().map(mdast_text).collect()).unwrap_or_default()
        }
    }
}

#[test]
fn headings_agree_with_mdast() {
    let documents = [
        "# One\n\nText\n\n## Two\n\n### Three ###\n\n#NotHeading\n\n    # indented code\n",
        "Intro\n\n```\n# not a heading\n```\n\n~~~~\n## nor this\n~~~~\n\n## After fences\n",
        "# 中文标题\n\n段落。\n\n## 同步不等于备份\n\n###### 六级\n\n####### seven\n",
        "#\n\n# #\n\n## Closing ## \n\n#\tTab\n\n   ### Indented three\n",
        "Para\nstill para\n# Interrupts\ntext\n## Second\n",
        "Setext One\n==========\n\nSetext Two\n----------\n\nText\n\n---\n\n* * *\n",
        "- list\n- # in list item\n\n> # quoted\n\n# Top `code`\n",
        "Foo\n-\n\nBar\n= =\n\nBaz\n    ---\n\nQux\n   ===\n\n# a [[link]] #tag\n",
        "```\n# a\n````\n# b\n``` \n# c\n",
        "~~~\n# a\n```\n# b\n~~~~\n# c\n",
    ];
    for document in documents {
        let tree = markdown::to_mdast(document, &markdown::ParseOptions::gfm()).expect("mdast");
        let expected: Vec<(u8, String, u32)> = tree
            .children()
            .into_iter()
            .flatten()
            .filter_map(|node| match node {
                markdown::mdast::Node::Heading(h) => Some((
                    h.depth,
                    mdast_text(node),
                    h.position.as_ref().map_or(0, |p| u32::try_from(p.start.line).unwrap_or(0)),
                )),
                _ => None,
            })
            .collect();
        let ours: Vec<(u8, String, u32)> =
            parse(document).headings.into_iter().map(|h| (h.level, h.text, h.line)).collect();
        assert_eq!(ours, expected, "document:\n{document}");
    }
}

// ---------------------------------------------------------------------------
// kb.toml

#[test]
fn config_defaults() {
    let defaults = VaultConfig::parse(None).expect("defaults");
    assert_eq!(defaults.policy.notes, vec![String::new()]);
    assert_eq!(defaults.policy.standards, vec!["docs".to_owned()]);
    assert_eq!(defaults.policy.inbox, "inbox");
    assert!(defaults.policy.read_also.is_empty() && defaults.policy.deny.is_empty());
    assert_eq!(defaults.tag_registry, None);
    assert_eq!(defaults.limits.read_max_bytes, 262_144);
    assert_eq!(defaults.limits.read_page_bytes, 65_536);
    assert_eq!(defaults.limits.proposal_max_bytes, 2_097_152);
    assert_eq!(VaultConfig::parse(Some("")).expect("empty file"), defaults);
    assert_eq!(VaultConfig::parse(Some("# only a comment\n[vault]\n")).expect("empty section"), defaults);
}

#[test]
fn config_full_example() {
    let text = r#"
[vault]
notes = ["z", "more/"]
standards = ["docs"]
inbox = "proposals"
read_also = ["refs", ".notes"]
deny = ["z/private", "*.secret.md"]
[tags]
registry = "docs/tags.md"
[limits]
read_max_bytes = 1000
read_page_bytes = 500
proposal_max_bytes = 1073741824
"#;
    let config = VaultConfig::parse(Some(text)).expect("valid");
    assert_eq!(config.policy.notes, strings(&["z", "more"]));
    assert_eq!(config.policy.standards, strings(&["docs"]));
    assert_eq!(config.policy.inbox, "proposals");
    assert_eq!(config.policy.read_also, strings(&["refs", ".notes"]));
    assert_eq!(config.policy.deny, strings(&["z/private", "*.secret.md"]));
    assert_eq!(config.tag_registry.as_deref(), Some("docs/tags.md"));
    assert_eq!(config.limits.read_max_bytes, 1000);
    assert_eq!(config.limits.read_page_bytes, 500);
    assert_eq!(config.limits.proposal_max_bytes, 1 << 30);

    let fixture =
        std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures/vault/kb.toml"));
    if let Ok(fixture) = fixture {
        VaultConfig::parse(Some(&fixture)).expect("the fixture vault's kb.toml is valid");
    }
}

#[test]
fn config_folders() {
    check_all(
        "config notes folders",
        &[
            ("[vault]\nnotes = [\"\"]", Contains("ok [\"\"]")),
            ("[vault]\nnotes = [\".\"]", Contains("ok [\"\"]")),
            ("[vault]\nnotes = [\"./z/\", \"z\"]", Contains("ok [\"z\"]")),
            ("[vault]\nnotes = [\"z/sub\"]", Contains("ok [\"z/sub\"]")),
            ("[vault]\nnotes = []", Contains("ok []")),
            (
                "[vault]\nnotes = [\"../outside\"]",
                Contains("entry \"../outside\" is not a safe vault-relative folder"),
            ),
            ("[vault]\nnotes = [\"z/../../x\"]", Contains("is not a safe vault-relative folder")),
            ("[vault]\nnotes = [\"/abs\"]", Contains("is not a safe vault-relative folder")),
            ("[vault]\nnotes = [\"C:/x\"]", Contains("is not a safe vault-relative folder")),
            ("[vault]\nnotes = [\"a\\\\b\"]", Contains("is not a safe vault-relative folder")),
            (
                "[vault]\nnotes = [\".git\"]",
                Contains("`vault.notes` entry \".git\" lies in a place that is never readable"),
            ),
            ("[vault]\nstandards = [\"z/.obsidian\"]", Contains("never readable")),
            ("[vault]\nread_also = [\"node_modules\"]", Contains("never readable")),
            ("[vault]\ninbox = \".kb\"", Contains("never readable")),
            ("[tags]\nregistry = \".env/tags.md\"", Contains("never readable")),
        ],
        |text: &str| match VaultConfig::parse(Some(text)) {
            Ok(config) => format!("ok {:?}", config.policy.notes),
            Err(e) => {
                assert_eq!(e.code, ErrorCode::InvalidArgument);
                e.message
            }
        },
    );
}

#[test]
fn config_errors() {
    check_all(
        "config errors",
        &[
            ("[vault]\nnote = [\"z\"]", "kb.toml: unknown key `vault.note` (did you mean `notes`?)"),
            (
                "[vault]\nregistry = \"docs/tags.md\"",
                "kb.toml: unknown key `vault.registry` (did you mean `registry` in `[tags]`?)",
            ),
            ("[vault]\ncolour = 1", "kb.toml: unknown key `vault.colour`"),
            ("[valut]\nnotes = []", "kb.toml: unknown section `[valut]` (did you mean `vault`?)"),
            ("[server]\nport = 1", "kb.toml: unknown section `[server]`"),
            ("vault = 3", "kb.toml: `vault` must be a table (a `[vault]` section), found an integer"),
            ("[vault]\nnotes = \"z\"", "kb.toml: `vault.notes` must be a list of strings, found a string"),
            (
                "[vault]\nnotes = [\"z\", 3]",
                "kb.toml: `vault.notes` must be a list of strings, but item 2 is an integer",
            ),
            ("[vault]\ninbox = [\"inbox\"]", "kb.toml: `vault.inbox` must be a string, found a list"),
            (
                "[vault]\ninbox = \"\"",
                "kb.toml: `vault.inbox` = \"\" names the vault root; name a folder inside the vault",
            ),
            (
                "[vault]\nstandards = [\"/\"]",
                "kb.toml: `vault.standards` = \"/\" names the vault root; name a folder inside the vault",
            ),
            (
                "[vault]\ndeny = [\"\"]",
                "kb.toml: `vault.deny` entry \"\" is not a name or glob; write e.g. \"z/private\" or \"*.secret.md\"",
            ),
            (
                "[tags]\nregistry = \"docs/tags.txt\"",
                "kb.toml: `tags.registry` = \"docs/tags.txt\" must name a Markdown note ending in .md",
            ),
            (
                "[limits]\nread_max_bytes = \"big\"",
                "kb.toml: `limits.read_max_bytes` must be an integer number of bytes, found a string",
            ),
            (
                "[limits]\nread_max_bytes = 0",
                "kb.toml: `limits.read_max_bytes` must be between 1 and 1073741824 bytes (1 GiB), found 0",
            ),
            (
                "[limits]\nproposal_max_bytes = 1073741825",
                "kb.toml: `limits.proposal_max_bytes` must be between 1 and 1073741824 bytes (1 GiB), found 1073741825",
            ),
            (
                "[limits]\nproposal_max_bytes = -5",
                "kb.toml: `limits.proposal_max_bytes` must be between 1 and 1073741824 bytes (1 GiB), found -5",
            ),
        ],
        |text: &str| match VaultConfig::parse(Some(text)) {
            Ok(_) => "accepted".to_owned(),
            Err(e) => {
                assert_eq!(e.code, ErrorCode::InvalidArgument);
                assert!(e.hint.is_some());
                e.message
            }
        },
    );
    // Syntax errors name the line and column.
    let err = VaultConfig::parse(Some("[vault]\nnotes = [\"z\"\ninbox = 'x'\n")).expect_err("bad TOML");
    assert!(err.message.starts_with("kb.toml: invalid TOML at line "), "{}", err.message);
    let err = VaultConfig::parse(Some("[vault]\nnotes = = 1\n")).expect_err("bad TOML");
    assert!(err.message.starts_with("kb.toml: invalid TOML at line 2, column "), "{}", err.message);
    let err = VaultConfig::parse(Some("[vault]\ninbox = 'a'\ninbox = 'b'\n")).expect_err("duplicate key");
    assert!(err.message.contains("line 3"), "{}", err.message);
}

// ---------------------------------------------------------------------------
// The Markdown model (issue 14): spans, comments, tables, fence indentation

fn spans(text: &str) -> kb_mcp::vault::NoteSpans {
    kb_mcp::vault::note_spans(&NotePath::parse("z/note.md").expect("path"), text)
}

#[test]
fn issue_14_spans_cover_exactly_what_is_written() {
    let text = "---\ntitle: t\n---\n# Head [[a]] ##\nSee [[ b/c #Sec | shown ]], ![[img.png]], [[#^blk]] and \
                [x y](<../d e.md#H%20i> \"t\") ![p](p.png) #tag/sub. end ^id-1\n\nSet\next\n===\n";
    let model = spans(text);
    let heads: Vec<(&str, &str)> =
        model.headings.iter().map(|h| (h.span.of(text), h.text.of(text))).collect();
    assert_eq!(heads, [("# Head [[a]] ##", "Head [[a]]"), ("Set\next\n===", "Set\next")]);
    let links: Vec<[&str; 4]> = model
        .links
        .iter()
        .map(|l| {
            let part = |s: Option<kb_mcp::vault::Span>| s.map_or("-", |s| s.of(text));
            [l.span.of(text), l.target.of(text), part(l.anchor), part(l.display)]
        })
        .collect();
    assert_eq!(
        links,
        [
            ["[[a]]", "a", "-", "-"],
            ["[[ b/c #Sec | shown ]]", "b/c", "Sec", "shown"],
            ["![[img.png]]", "img.png", "-", "-"],
            ["[[#^blk]]", "", "^blk", "-"],
            ["[x y](<../d e.md#H%20i> \"t\")", "../d e.md", "H%20i", "x y"],
            ["![p](p.png)", "p.png", "-", "p"],
        ]
    );
    assert_eq!(model.links[3].target.start, text.find("#^blk").unwrap());
    let tags: Vec<&str> = model.tags.iter().map(|t| t.span.of(text)).collect();
    assert_eq!(tags, ["#tag/sub"]);
    let ids: Vec<&str> = model.block_ids.iter().map(|b| b.span.of(text)).collect();
    assert_eq!(ids, ["^id-1"]);
    // The model reads what parse_note reads.
    let note = parse(text);
    assert_eq!(note.links, model.links.iter().map(|l| l.link.clone()).collect::<Vec<_>>());
    assert_eq!(note.headings, model.headings.iter().map(|h| h.heading.clone()).collect::<Vec<_>>());
}

#[test]
fn issue_14_html_comments_hide_headings_links_tags_and_block_ids() {
    let cases: &[(&str, &[&str])] = &[
        ("<!--\n# Hidden\n[[a]] #t ^id\n-->\n# Shown\n", &["H1@5 Shown"]),
        ("<!-- # one line --> [[a]]\n# After\n", &["H1@2 After"]),
        ("para\n<!--\n## Hidden\n-->\n", &[]),
        ("text <!-- [[a]] #t --> [[b]] #u\n", &["wikilink@1 b", "tag u"]),
        ("text <!-- starts\n[[a]] #t\nends --> [[b]]\n", &["wikilink@3 b"]),
        ("text <!-- never closed [[a]]\n\n[[b]]\n", &["wikilink@1 a", "wikilink@3 b"]),
        ("`<!--` [[a]] `-->`\n", &["wikilink@1 a"]),
        ("```\n<!--\n```\n# Out\n", &["H1@4 Out"]),
        ("line ^id <!-- x -->\n", &[]),
        ("line <!-- x --> ^id\n", &["id id"]),
    ];
    check_all("comments", cases, |text: &str| {
        let note = parse(text);
        let mut out: Vec<String> =
            note.headings.iter().map(|h| format!("H{}@{} {}", h.level, h.line, h.text)).collect();
        out.extend(link_summary(note.clone()));
        out.extend(note.tags.iter().map(|t| format!("tag {t}")));
        out.extend(note.block_ids.iter().map(|b| format!("id {b}")));
        out
    });
}

#[test]
fn issue_14_a_table_followed_by_a_rule_stays_a_table() {
    let cases: &[(&str, &[&str])] = &[
        ("| a | b |\n| --- | --- |\n| 1 | 2 |\n---\n", &[]),
        ("a | b\n--|--\n1 | 2\n---\n# After\n", &["H1@5 After"]),
        ("| a |\n| :-: |\n---\n", &[]),
        // Not a table (cell counts differ), so the paragraph is a heading.
        ("a | b\n---\n", &["H2@1 a | b"]),
        ("| a | b |\n| --- |\n| 1 | 2 |\n---\n", &["H2@1 | a | b | | --- | | 1 | 2 |"]),
        // A blank line ends the table.
        ("| a |\n| --- |\n\nText\n---\n", &["H2@4 Text"]),
    ];
    check_all("tables", cases, |text: &str| {
        parse(text)
            .headings
            .into_iter()
            .map(|h| format!("H{}@{} {}", h.level, h.line, h.text))
            .collect::<Vec<_>>()
    });
}

#[test]
fn issue_14_fences_open_at_most_three_columns_in() {
    let cases: &[(&str, &[&str])] = &[
        ("   ```\n[[in code]]\n   ```\n[[out]]\n", &["wikilink@4 out"]),
        ("para\n    ```\n[[a]]\n    ```\n", &["wikilink@3 a"]),
        ("- item\n    ```\n    [[code]]\n    ```\n- [[b]]\n", &["wikilink@5 b"]),
        ("1. item\n\n   ```\n   [[code]]\n   ```\n", &[]),
        ("```\n[[code]]\n    ```\n[[still code]]\n```\n[[out]]\n", &["wikilink@6 out"]),
    ];
    check_all("fences", cases, |text: &str| link_summary(parse(text)));
}

/// Issue 34, item 10: text indented four columns where it cannot continue a
/// paragraph is an indented code block, as Obsidian shows it: its links, tags
/// and block ids are not there (a move rewrote a link inside one). Indentation
/// counts from a list item's content column, so nested list content (spaces
/// or Obsidian's tabs) stays text.
#[test]
fn issue_34_an_indented_code_block_holds_no_link() {
    let cases: &[(&str, &[&str])] = &[
        ("text\n\n    [[code]] #t ^id\n\n[[out]]\n", &["wikilink@5 out"]),
        ("\t[[tab code]]\n", &[]),
        ("# H\n    [[after a heading]]\n", &[]),
        ("para\n    [[lazy continuation]]\n", &["wikilink@2 lazy continuation"]),
        ("- item\n\n    [[item paragraph]]\n", &["wikilink@3 item paragraph"]),
        ("- item\n\n      [[code in the item]]\n", &[]),
        ("1. a\n2. b\n\n       [[code in b]]\n", &[]),
        ("- a\n\t- b\n\n\t\t[[nested paragraph]]\n", &["wikilink@4 nested paragraph"]),
        ("- a\n\n        [[deep]]\n\nafter [[x]]\n", &["wikilink@5 x"]),
    ];
    check_all("indented code", cases, |text: &str| {
        let note = parse(text);
        let mut out = link_summary(note.clone());
        out.extend(note.tags.iter().map(|t| format!("tag {t}")));
        out.extend(note.block_ids.iter().map(|b| format!("id {b}")));
        out
    });
}

/// Where our Markdown model differs from CommonMark + GFM (the `markdown`
/// crate) on purpose. The reference-parser property test below does not
/// generate these constructs; each is a choice, not an oversight.
///
/// 1. Wikilinks, embeds (`[[…]]`, `![[…]]`), inline `#tags` and `^block-ids`
///    are Obsidian syntax the reference does not know; the test checks instead
///    that each is found exactly where the reference sees text (not code, not
///    HTML).
/// 2. Headings count only at the top level: a heading inside a block quote or a
///    list item is not in the outline (the reference nests it).
/// 3. Lists are modelled only as far as placing a fence and indented code goes
///    (both count from the last item's content column, and a fence in an item
///    ends with it); list items do not nest otherwise.
/// 4. An inline HTML comment that spans lines hides every line up to its `-->`
///    (before the next blank line), even a line that would start a block (a
///    heading, a fence) and so end the paragraph for the reference.
/// 5. A heading's text is its source text: inline Markdown (links, emphasis,
///    escapes, comments) is kept as written, where the reference gives the
///    rendered words.
/// 6. A GFM table's rows are not split into cells: a row's links and tags count
///    wherever they are, and a delimiter row needs the header's cell count.
/// 7. HTML blocks other than comments (`<div>`, `<details>`) are text: links in
///    them count, as Obsidian shows them.
/// 8. A Markdown link is only `[text](destination)` on one line; reference
///    links (`[text][label]`), autolinks and links spanning lines are not
///    recorded.
/// 9. A note that opens with a `---` line has frontmatter up to the next `---`
///    line (the reference reads a thematic break and text).
///
/// Where the reference itself strays from GFM, the generator steers around it
/// (and says so where it does): `# #todo` is read as the heading `todo`; a table
/// row starting with `#` ends the table; a comment opened in a table row runs on
/// over the next rows; after a table lazily continuing a list item or a quote,
/// later tables are not recognised; two `---` lines right under a setext
/// heading are read as a heading `---`. Inputs on which it panics are skipped.
const INTENDED_DIFFERENCES: usize = 9;

/// Inline pieces of generated notes: words, links of every form, tags, code,
/// comments.
const INLINE: &[&str] = &[
    "word",
    "more words",
    "[[alpha]]",
    "[[beta|shown]]",
    "[[gamma#Sec]]",
    "![[delta]]",
    "[text](epsilon.md)",
    "[t](<z eta.md>)",
    "![pic](theta.png)",
    "#todo",
    "#area/x",
    "`code [[alpha]] #todo`",
    "``a ` [[beta]]``",
    "<!-- c [[alpha]] #todo -->",
    "\\[[escaped]]",
    "*em*",
];

fn inline_line() -> impl Strategy<Value = String> {
    proptest::collection::vec(proptest::sample::select(INLINE), 1..5).prop_map(|parts| parts.join(" "))
}

/// Inline pieces that keep a heading's text equal to the reference's words. It
/// starts with a word: the reference reads `# #todo` as the heading `todo`.
fn heading_line() -> impl Strategy<Value = String> {
    let pieces = proptest::sample::select(&["word", "[[alpha]]", "#todo", "two words", "![[delta]]"][..]);
    proptest::collection::vec(pieces, 0..4).prop_map(|parts| format!("word {}", parts.join(" ")))
}

fn block() -> impl Strategy<Value = String> {
    prop_oneof![
        3 => proptest::collection::vec(inline_line(), 1..4).prop_map(|lines| lines.join("\n")),
        2 => (1..=6usize, heading_line()).prop_map(|(level, text)| format!("{} {text}", "#".repeat(level))),
        1 => (heading_line(), prop_oneof![Just("==="), Just("---")]).prop_map(|(t, u)| format!("{t}\n{u}")),
        1 => (0..=5usize, prop_oneof![Just("```"), Just("~~~~")], inline_line(), any::<bool>()).prop_map(
            |(indent, fence, line, close)| {
                let pad = " ".repeat(indent);
                if indent > 3 {
                    // Not a fence: paragraph text, or after a blank line indented code.
                    return format!("\npara\n{pad}{fence}\n{pad}{line}\n\n{pad}{line}");
                }
                let closing = if close { format!("\n{pad}{fence}") } else { String::new() };
                format!("{pad}{fence}\n{pad}{line}\n# word inside{closing}")
            }
        ),
        1 => (inline_line(), any::<bool>()).prop_map(|(cell, rule)| {
            let cell = cell.replace('|', " ");
            // A rule or a blank line after: the reference ends a table at a row
            // that starts with `#`, GFM does not.
            let rule = if rule { "\n---" } else { "\n" };
            format!("| a | b |\n| --- | :-: |\n| {cell} | x |{rule}")
        }),
        1 => (heading_line(), inline_line()).prop_map(|(h, l)| format!("<!--\n# {h}\n{l}\n--> {l}")),
        // After a blank line: the reference lets a comment opened in a table
        // row run on over the next rows.
        1 => (inline_line(), inline_line()).prop_map(|(a, b)| format!("\ntext <!-- {a}\nwords\nend --> {b}")),
        // A blank line after lists and quotes: the reference misreads every later
        // table after a table that lazily continues a list item or a quote.
        1 => (inline_line(), 0..3usize).prop_map(|(l, kind)| match kind {
            0 => format!("- {l}\n  ```\n  {l}\n  ```\n"),
            1 => format!("> {l}\n"),
            _ => format!("1. {l}\n"),
        }),
        // After a blank line: the reference reads `---` right under a setext
        // heading and another `---` as a heading `---`.
        1 => prop_oneof![Just("\n---".to_owned()), Just("\n***".to_owned()), Just("para\n---".to_owned())],
    ]
}

fn generated_note() -> impl Strategy<Value = String> {
    proptest::collection::vec((block(), any::<bool>()), 0..10).prop_map(|blocks| {
        // Not `---` first: that opens frontmatter (difference 9).
        let mut out = String::from("intro");
        for (block, tight) in blocks {
            if !out.is_empty() {
                out.push_str(if tight { "\n" } else { "\n\n" });
            }
            out.push_str(&block);
        }
        out.push('\n');
        out
    })
}

/// What the reference parser sees: byte ranges of code and HTML (where nothing
/// is a link or tag), the starts of its links and images, its top-level headings.
#[derive(Default)]
struct Reference {
    literal: Vec<std::ops::Range<usize>>,
    link_starts: Vec<usize>,
    headings: Vec<(u8, String, u32)>,
}

fn walk(node: &markdown::mdast::Node, top: bool, out: &mut Reference) {
    use markdown::mdast::Node;
    let range = node.position().map_or(0..0, |p| p.start.offset..p.end.offset);
    match node {
        Node::Code(_) | Node::InlineCode(_) | Node::Html(_) => out.literal.push(range),
        Node::Link(_) | Node::Image(_) => out.link_starts.push(range.start),
        Node::Heading(h) if top => {
            let line = node.position().map_or(0, |p| u32::try_from(p.start.line).unwrap_or(0));
            let text = mdast_text(node).split_whitespace().collect::<Vec<_>>().join(" ");
            out.headings.push((h.depth, text, line));
        }
        _ => {}
    }
    for child in node.children().into_iter().flatten() {
        walk(child, false, out);
    }
}

fn reference(text: &str) -> Option<Reference> {
    let owned = text.to_owned();
    // The reference parser has panicked on generated inputs: such a case is skipped.
    let tree = std::panic::catch_unwind(move || markdown::to_mdast(&owned, &markdown::ParseOptions::gfm()))
        .ok()?
        .ok()?;
    let mut out = Reference::default();
    for child in tree.children().into_iter().flatten() {
        walk(child, true, &mut out);
    }
    Some(out)
}

/// Starts of `needle` in `text` not escaped by a backslash.
fn occurrences(text: &str, needle: &str) -> Vec<usize> {
    text.match_indices(needle)
        .map(|(at, _)| at)
        .filter(|&at| at == 0 || text.as_bytes()[at - 1] != b'\\')
        .collect()
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 512, ..ProptestConfig::default() })]

    /// Issue 14: our model agrees with the reference parser on generated notes,
    /// apart from [`INTENDED_DIFFERENCES`].
    #[test]
    fn issue_14_model_agrees_with_the_reference_parser(text in generated_note()) {
        prop_assert_eq!(INTENDED_DIFFERENCES, 9);
        let Some(reference) = reference(&text) else { return Ok(()) };
        let model = spans(&text);
        let literal = |at: usize| reference.literal.iter().any(|r| r.contains(&at));
        // Headings: level, line and text (whitespace collapsed; inline Markdown
        // is kept as written, difference 5, so such a text is not compared).
        let plain = |ours: &str| !ours.contains(['(', '*', '\\', '<', '`']);
        let ours: Vec<(u8, u32, Option<String>)> = model
            .headings
            .iter()
            .map(|h| (h.heading.level, h.heading.line, Some(kb_mcp::vault::heading_key(&h.heading.text))))
            .collect();
        let theirs: Vec<(u8, u32, Option<String>)> = reference
            .headings
            .iter()
            .zip(ours.iter().map(Some).chain(std::iter::repeat(None)))
            .map(|((l, t, n), mine)| {
                let compared = mine.and_then(|m| m.2.as_deref()).is_none_or(plain);
                (*l, *n, if compared { Some(t.to_lowercase()) } else { mine.and_then(|m| m.2.clone()) })
            })
            .collect();
        prop_assert_eq!(ours, theirs, "headings of {:?}", text);
        // Markdown links and images: exactly the reference's.
        let mut ours: Vec<usize> = model
            .links
            .iter()
            .filter(|l| !l.span.of(&text).trim_start_matches('!').starts_with("[["))
            .map(|l| l.span.start)
            .collect();
        ours.sort_unstable();
        let mut theirs = reference.link_starts.clone();
        theirs.sort_unstable();
        prop_assert_eq!(ours, theirs, "Markdown links of {:?}", text);
        // Wikilinks and tags: wherever the reference sees text, and only there.
        let wikilinks: Vec<usize> = model
            .links
            .iter()
            .filter(|l| l.span.of(&text).trim_start_matches('!').starts_with("[["))
            .map(|l| l.span.start + usize::from(text[l.span.start..].starts_with('!')))
            .collect();
        for at in occurrences(&text, "[[") {
            prop_assert_eq!(wikilinks.contains(&at), !literal(at), "wikilink at {} of {:?}", at, text);
        }
        let tags: Vec<usize> = model.tags.iter().map(|t| t.span.start).collect();
        for needle in ["#todo", "#area/x"] {
            for at in occurrences(&text, needle) {
                prop_assert_eq!(tags.contains(&at), !literal(at), "tag at {} of {:?}", at, text);
            }
        }
    }
}
