//! PDFs in the vault (issue 40, part 3): their text is extracted in a child
//! process (the binaries run themselves), indexed as the PDF's body with its
//! file name as title, found by both searches (Chinese too), read by page with
//! `read_note`, kept by content hash beside the index; a hostile PDF (a page
//! tree claiming a million pages, objects nested 100,000 deep, a compression
//! bomb, garbage, a file named .pdf that is not one, encrypted, truncated, no
//! text) is skipped with its reason in `audit_vault`'s `skipped_file`, the
//! build finishing and the server answering; proposals never target a PDF and
//! a folder move still carries it.

#![allow(
    clippy::disallowed_methods,
    clippy::disallowed_types,
    reason = "the tests build and inspect vaults on disk"
)]

use std::fs;
use std::path::Path;
use std::time::{Duration, Instant};

use kb_mcp::engine::types::*;
use kb_mcp::engine::{Engine, EngineOptions, PdfExtractor};
use kb_mcp::error::ErrorCode;
use kb_mcp::write::Actor;
use serde_json::json;

use crate::common::{self, put};
use crate::pdf_make::*;

const REPORT: &str = "z/docs/report.pdf";
const MANUAL: &str = "z/docs/备份手册.pdf";

fn report() -> Vec<u8> {
    text_pdf(&[
        &["Quarterly overview", "Revenue grew in the northern region."],
        &["Second page: the glacier survey", "Measurements of the meltwater basin."],
        &["Third page: appendix", "Tables and sources."],
    ])
}

fn manual() -> Vec<u8> {
    text_pdf(&[&["备份手册", "把笔记推送到远程仓库，每周检查一次恢复演练。"]])
}

/// The extractor the binaries use: `kb-index` running itself as a child.
fn extractor() -> PdfExtractor {
    PdfExtractor::Command {
        program: env!("CARGO_BIN_EXE_kb-index").into(),
        args: vec!["__extract-pdf".into()],
    }
}

fn open(vault: &Path, extract: bool) -> Engine {
    let engine = Engine::open(&EngineOptions { vault: vault.to_owned(), index_dir: None }).unwrap();
    if extract {
        engine.set_pdf_extractor(extractor());
    }
    engine.sync(true, None).unwrap();
    engine
}

/// The fixture vault with the two ordinary PDFs and a note linking the report.
fn pdf_vault() -> (tempfile::TempDir, std::path::PathBuf) {
    let (tmp, vault) = common::temp_vault();
    fs::create_dir_all(vault.join("z/docs")).unwrap();
    fs::write(vault.join(REPORT), report()).unwrap();
    fs::write(vault.join(MANUAL), manual()).unwrap();
    put(&vault, "z/docs/index.md", "# Docs\nSee [[report.pdf]] and [the report](report.pdf).\n");
    (tmp, vault)
}

fn skipped(engine: &Engine) -> Vec<(String, String)> {
    let audit = engine
        .audit_vault(&AuditArgs {
            checks: Some(vec![AuditCheck::SkippedFile]),
            limit: Some(100),
            ..Default::default()
        })
        .unwrap();
    audit.findings.into_iter().map(|f| (f.path, f.message)).collect()
}

#[test]
fn pdfs_are_searched_listed_and_read_by_page() {
    let (_tmp, vault) = pdf_vault();
    let engine = open(&vault, true);
    assert_eq!(skipped(&engine), Vec::new(), "both PDFs are indexed");

    let hits = engine
        .search_note_content(&SearchArgs { query: "glacier meltwater".into(), ..Default::default() })
        .unwrap();
    let hit = &hits.results[0];
    assert_eq!((hit.path.as_str(), hit.title.as_str()), (REPORT, "report.pdf"), "{hits:?}");
    assert_eq!(hit.snippets[0].heading.as_deref(), Some("Page 2"), "a snippet names its page: {hit:?}");
    assert!(hit.snippets[0].text.contains("**glacier**"), "{hit:?}");

    let hits =
        engine.search_note_content(&SearchArgs { query: "恢复演练".into(), ..Default::default() }).unwrap();
    let hit = hits
        .results
        .iter()
        .find(|h| h.path == MANUAL)
        .unwrap_or_else(|| panic!("Chinese text is found: {hits:?}"));
    assert!(hit.snippets[0].text.contains("**恢复演练**"), "{hit:?}");
    let hits =
        engine.search_knowledge(&SearchArgs { query: "备份手册".into(), ..Default::default() }).unwrap();
    assert!(hits.results.iter().any(|h| h.path == MANUAL && h.title == "备份手册.pdf"), "{hits:?}");

    let page = engine
        .read_note(&ReadNoteArgs {
            path: Some(REPORT.into()),
            section: Some("Page 2".into()),
            ..Default::default()
        })
        .unwrap();
    assert!(page.content.starts_with("## Page 2\n"), "{}", page.content);
    assert!(
        page.content.contains("glacier survey") && page.content.contains("meltwater"),
        "{}",
        page.content
    );
    assert!(!page.content.contains("Quarterly") && !page.content.contains("appendix"), "{}", page.content);
    let same = engine
        .read_note(&ReadNoteArgs {
            path: Some(REPORT.into()),
            section: Some("2".into()),
            ..Default::default()
        })
        .unwrap();
    assert_eq!(same.content, page.content, "a bare page number selects the page too");

    let by_ref = engine
        .read_note(&ReadNoteArgs { reference: Some("report.pdf#Page 2".into()), ..Default::default() })
        .unwrap();
    assert_eq!(
        (by_ref.path.as_str(), &by_ref.content),
        (REPORT, &page.content),
        "a ref names a PDF by its file name"
    );

    let whole = engine.read_note(&ReadNoteArgs { path: Some(REPORT.into()), ..Default::default() }).unwrap();
    let outline: Vec<&str> = whole.outline.iter().map(|h| h.text.as_str()).collect();
    assert_eq!(outline, ["Page 1", "Page 2", "Page 3"]);
    assert_eq!(whole.hash, kb_mcp::vault::content_hash(&report()), "the hash is the file's");
    assert_eq!(whole.size, report().len() as u64);
    assert!(whole.hint.as_deref().is_some_and(|h| h.contains("a PDF")), "{:?}", whole.hint);
    let missing = engine
        .read_note(&ReadNoteArgs {
            path: Some(REPORT.into()),
            section: Some("Page 9".into()),
            ..Default::default()
        })
        .unwrap_err();
    assert_eq!(missing.code, ErrorCode::NotFound, "{missing:?}");
    let raw = engine
        .read_note(&ReadNoteArgs { path: Some(REPORT.into()), raw: Some(true), ..Default::default() })
        .unwrap_err();
    assert_eq!(raw.code, ErrorCode::InvalidArgument, "{raw:?}");

    let listed =
        engine.list_notes(&ListNotesArgs { folder: Some("z/docs".into()), ..Default::default() }).unwrap();
    let titles: Vec<&str> = listed.notes.iter().map(|n| n.title.as_str()).collect();
    assert!(titles.contains(&"report.pdf") && titles.contains(&"备份手册.pdf"), "{titles:?}");

    // Links to a PDF are attachment links as before: resolved, never broken, the PDF no orphan.
    let related = engine
        .get_related_notes(&NoteRefArgs { path: Some("z/docs/index.md".into()), reference: None })
        .unwrap();
    assert!(related.broken.is_empty(), "{related:?}");
    let audit = engine.audit_vault(&AuditArgs { limit: Some(100), ..Default::default() }).unwrap();
    assert!(audit.findings.iter().all(|f| !f.path.ends_with(".pdf")), "no finding about a PDF: {audit:?}");

    // The text is kept by content hash: a rebuild by another engine extracts nothing again.
    let kept: Vec<_> = fs::read_dir(vault.join(".kb/pdf-text")).unwrap().collect();
    assert_eq!(kept.len(), 2, "one kept text per PDF");
    drop(engine);
    let again = Engine::open(&EngineOptions { vault: vault.clone(), index_dir: None }).unwrap();
    // No extractor at all: only the kept texts can index the PDFs.
    again.sync(true, None).unwrap();
    assert_eq!(skipped(&again), Vec::new(), "kept texts index the PDFs without extracting");
    let hits =
        again.search_note_content(&SearchArgs { query: "glacier".into(), ..Default::default() }).unwrap();
    assert_eq!(hits.results[0].path, REPORT);
}

#[test]
fn without_an_extractor_a_pdf_is_skipped_saying_so() {
    let (_tmp, vault) = pdf_vault();
    let engine = open(&vault, false);
    let skipped = skipped(&engine);
    assert_eq!(skipped.len(), 2, "{skipped:?}");
    assert!(skipped.iter().all(|(_, why)| why.contains("PDF text extraction is not set up")), "{skipped:?}");
}

#[test]
fn proposals_never_target_a_pdf_and_folder_moves_carry_it() {
    let (_tmp, vault) = pdf_vault();
    let engine = open(&vault, true);
    let hash = kb_mcp::vault::content_hash(&report());
    let patch = engine
        .propose_note_patch(&ProposePatchArgs {
            path: REPORT.into(),
            base_hash: hash,
            reason: "edit".into(),
            edits: vec![kb_mcp::write::Edit::Append { content: "x".into() }],
        })
        .unwrap_err();
    assert_eq!(patch.code, ErrorCode::PathDenied, "{patch:?}");
    assert!(patch.message.contains("is a PDF"), "{patch:?}");
    let moved = engine
        .propose_move(&ProposeMoveArgs {
            from: REPORT.into(),
            to: "z/docs/other.pdf".into(),
            reason: "rename".into(),
            keep_alias: None,
        })
        .unwrap_err();
    assert!(moved.message.contains("is a PDF"), "{moved:?}");
    let deleted =
        engine.propose_delete(&ProposeDeleteArgs { path: REPORT.into(), reason: "gone".into() }).unwrap_err();
    assert!(deleted.message.contains("is a PDF"), "{deleted:?}");

    // A folder move carries the PDFs and rewrites the path link to one.
    let staged = engine
        .propose_move(&ProposeMoveArgs {
            from: "z/docs".into(),
            to: "z/archive".into(),
            reason: "archive".into(),
            keep_alias: None,
        })
        .unwrap();
    engine.apply_proposal(&ApplyArgs { proposal_id: staged.proposal_id.clone() }, Actor::Cli).unwrap();
    assert_eq!(fs::read(vault.join("z/archive/report.pdf")).unwrap(), report());
    assert!(!vault.join(REPORT).exists());
    engine.sync(false, None).unwrap();
    let hits =
        engine.search_note_content(&SearchArgs { query: "glacier".into(), ..Default::default() }).unwrap();
    assert_eq!(hits.results.iter().map(|h| h.path.as_str()).collect::<Vec<_>>(), ["z/archive/report.pdf"]);
    let related = engine
        .get_related_notes(&NoteRefArgs { path: Some("z/archive/index.md".into()), reference: None })
        .unwrap();
    assert!(related.broken.is_empty(), "links to the PDFs still resolve: {related:?}");
}

/// Every hostile PDF, where it goes and what its skip reason says.
fn hostile_suite() -> Vec<(&'static str, Vec<u8>, &'static [&'static str])> {
    let mut truncated = report();
    truncated.truncate(60);
    vec![
        ("z/pdf/million-pages.pdf", claimed_pages_pdf(1_000_000), &["too many pages"]),
        ("z/pdf/walked-pages.pdf", many_pages_pdf(5_000), &["too many pages"]),
        ("z/pdf/deep.pdf", deep_pdf(100_000), &["malformed: its page tree is more than 64 levels deep"]),
        ("z/pdf/bomb.pdf", bomb_pdf(1536), &["out of memory", "malformed", "timed out"]),
        (
            "z/pdf/garbage.pdf",
            (0..4096u32).map(|i| (i.wrapping_mul(2_654_435_761) >> 13) as u8).collect(),
            &["not a PDF"],
        ),
        ("z/pdf/notes.pdf", b"# Not a PDF\n\nJust Markdown named .pdf\n".to_vec(), &["not a PDF"]),
        ("z/pdf/truncated.pdf", truncated, &["malformed"]),
        ("z/pdf/locked.pdf", encrypted_pdf(), &["encrypted"]),
        ("z/pdf/scan.pdf", blank_pdf(), &["no text layer"]),
    ]
}

fn hostile_vault() -> (tempfile::TempDir, std::path::PathBuf) {
    let (tmp, vault) = pdf_vault();
    fs::create_dir_all(vault.join("z/pdf")).unwrap();
    for (path, bytes, _) in hostile_suite() {
        fs::write(vault.join(path), bytes).unwrap();
    }
    (tmp, vault)
}

fn check_skips(findings: &[(String, String)]) {
    for (path, _, reasons) in hostile_suite() {
        let found = findings.iter().find(|(p, _)| p == path);
        let Some((_, message)) = found else { panic!("{path} is not reported skipped: {findings:?}") };
        assert!(
            reasons.iter().any(|r| message.contains(r)),
            "{path}: {message} (expected one of {reasons:?})"
        );
    }
    assert!(!findings.iter().any(|(p, _)| p == REPORT || p == MANUAL), "{findings:?}");
}

#[test]
fn hostile_pdfs_are_skipped_with_their_reasons_by_the_engine() {
    let (_tmp, vault) = hostile_vault();
    let started = Instant::now();
    let engine = open(&vault, true);
    assert!(started.elapsed() < Duration::from_secs(60), "the build took {:?}", started.elapsed());
    check_skips(&skipped(&engine));
    let hits =
        engine.search_note_content(&SearchArgs { query: "glacier".into(), ..Default::default() }).unwrap();
    assert_eq!(hits.results[0].path, REPORT, "the ordinary PDFs beside them are indexed");
}

/// Through the real binaries: `kb-index build` finishes, then `kb-mcp`
/// reports every hostile PDF skipped and keeps answering.
#[test]
fn hostile_pdfs_through_the_real_binaries() {
    let (_tmp, vault) = hostile_vault();
    let started = Instant::now();
    let build = std::process::Command::new(env!("CARGO_BIN_EXE_kb-index"))
        .args(["build", "--full", "--vault"])
        .arg(&vault)
        .output()
        .unwrap();
    assert!(build.status.success(), "{}", String::from_utf8_lossy(&build.stderr));
    assert!(started.elapsed() < Duration::from_secs(60), "the build took {:?}", started.elapsed());
    // Another process (no sync) knows the skipped PDFs from the kept outcomes: the index is fresh.
    let status = std::process::Command::new(env!("CARGO_BIN_EXE_kb-index"))
        .args(["status", "--json", "--vault"])
        .arg(&vault)
        .output()
        .unwrap();
    let status: serde_json::Value = serde_json::from_slice(&status.stdout).unwrap();
    assert_eq!(status["index"]["fresh"], json!(true), "{status}");
    let listed: Vec<(String, String)> = status["index"]["skipped"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| (s["path"].as_str().unwrap().to_owned(), s["reason"].as_str().unwrap().to_owned()))
        .collect();
    check_skips(&listed);

    let mut server = common::RawStdio::start(&vault, "read", json!({}));
    let mut call = |id: u32, name: &str, arguments: serde_json::Value| {
        server.send(
            &json!({"jsonrpc": "2.0", "id": id, "method": "tools/call", "params": {"name": name, "arguments": arguments}})
                .to_string(),
        );
        let answer = server.next();
        assert_eq!(answer["result"]["isError"], json!(false), "{name}: {answer}");
        answer["result"]["structuredContent"].clone()
    };
    let audit = call(1, "audit_vault", json!({"checks": ["skipped_file"], "limit": 100}));
    let findings: Vec<(String, String)> = audit["findings"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| (f["path"].as_str().unwrap().to_owned(), f["message"].as_str().unwrap().to_owned()))
        .collect();
    check_skips(&findings);
    let hits = call(2, "search_note_content", json!({"query": "恢复演练"}));
    assert!(hits["results"].as_array().unwrap().iter().any(|h| h["path"] == json!(MANUAL)), "{hits}");
    let page = call(3, "read_note", json!({"path": REPORT, "section": "Page 2"}));
    assert!(page["content"].as_str().unwrap().contains("glacier survey"), "{page}");
    let listed = call(4, "list_notes", json!({"folder": "z/docs"}));
    assert!(
        listed["notes"].as_array().unwrap().iter().any(|n| n["title"] == json!("report.pdf")),
        "{listed}"
    );
    server.finish();
}

/// The bomb is a real one: its stream inflates to exactly what it claims.
#[test]
fn the_compression_bomb_inflates_as_made() {
    use std::io::Read;
    let pdf = bomb_pdf(3);
    let start = pdf.windows(7).position(|w| w == b"stream\n").unwrap() + 7;
    let end = pdf.windows(10).rposition(|w| w == b"\nendstream").unwrap();
    let mut inflated = Vec::new();
    flate2::read::ZlibDecoder::new(&pdf[start..end]).read_to_end(&mut inflated).unwrap();
    assert_eq!(inflated.len(), 3 << 20);
    assert!(inflated.iter().all(|&b| b == 0));
    assert!(pdf.len() < 16 * 1024, "{} bytes", pdf.len());
}
