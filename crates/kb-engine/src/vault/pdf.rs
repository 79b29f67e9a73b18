//! PDFs in the vault: the text of a PDF by page, extracted with `pdf-extract`
//! (on `lopdf`), and a PDF as a [`Note`] whose body is that text.
//!
//! Why `pdf-extract`: it is pure Rust (no C library to build or ship), kept up
//! (0.12, on lopdf 0.42), and, unlike lopdf's own `extract_text`, it reads the
//! fonts' `ToUnicode` maps and CID fonts, so Chinese text comes out as text.
//! Nothing here parses PDF syntax by hand.
//!
//! A parser meeting a hostile file may overflow its stack (an abort, not a
//! panic), allocate without end or loop: [`extract_pdf`] is meant to run in a
//! child process under memory, CPU and wall-clock limits (`sandbox::run_pdf_extractor`,
//! the binaries' hidden `extract-pdf` command). What it checks itself before the
//! text is extracted: encryption (only an empty user password is tried), the
//! page tree's depth (walked level by level, at most 64), the page count it
//! claims and the pages it holds (at most [`PDF_PAGES_MAX`]), and the text kept (at most [`PDF_TEXT_MAX_BYTES`], the
//! rest cut and said). No I/O here: bytes in, pages out.

use serde::{Deserialize, Serialize};

use super::note::Note;
use crate::sandbox::NotePath;

/// Most pages a PDF may have for its text to be extracted.
pub const PDF_PAGES_MAX: usize = 2_000;

/// Most bytes of text kept from one PDF; the rest is cut (`truncated`).
pub const PDF_TEXT_MAX_BYTES: usize = 4 * 1024 * 1024;

/// Whether a path names a PDF (`.pdf`, any case).
pub fn is_pdf(path: &str) -> bool {
    path.len() > 4
        && path.is_char_boundary(path.len() - 4)
        && path[path.len() - 4..].eq_ignore_ascii_case(".pdf")
}

/// The text of a PDF, page by page (page 1 first).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct PdfText {
    /// Each page's text (an empty string for a page without text).
    pub pages: Vec<String>,
    /// Whether text past [`PDF_TEXT_MAX_BYTES`] was cut.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub truncated: bool,
}

/// What extracting a PDF gave: its text, or why it has none we index (the
/// reason `audit_vault` shows in its `skipped_file` finding).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum PdfOutcome {
    /// The text, page by page.
    Text(PdfText),
    /// Why the PDF is skipped.
    Skipped(String),
}

impl PdfText {
    /// The text as one body: the pages in order, separated by blank lines.
    pub fn body(&self) -> String {
        let mut body = String::new();
        for page in &self.pages {
            if !body.is_empty() {
                body.push_str("\n\n");
            }
            body.push_str(page.trim_end());
        }
        body
    }

    /// The text as `read_note` shows it: a `## Page N` heading before each
    /// page (so `section: "Page 2"` reads page 2 and the outline lists the
    /// pages), each page's text after a blank line.
    pub fn labelled(&self) -> String {
        let mut text = String::new();
        for (i, page) in self.pages.iter().enumerate() {
            if i > 0 {
                text.push('\n');
            }
            text.push_str(&format!("## Page {}\n\n", i + 1));
            let page = page.trim();
            if page.is_empty() {
                text.push_str("(no text on this page)\n");
            } else {
                // A line of the PDF's text that looks like a heading would be
                // taken for a page: indent it by one space (not a heading then).
                for line in page.lines() {
                    if line.trim_start().starts_with('#') {
                        text.push(' ');
                    }
                    text.push_str(line.trim_end());
                    text.push('\n');
                }
            }
        }
        text
    }
}

/// Extracts a PDF's text by page, in process. Never panics on its own
/// account; the parser underneath may panic (caught and reported), or abort
/// and exhaust memory or time, which only a child process contains.
pub fn extract_pdf(bytes: &[u8]) -> PdfOutcome {
    match std::panic::catch_unwind(|| extract(bytes)) {
        Ok(Ok(text)) => PdfOutcome::Text(text),
        Ok(Err(reason)) => PdfOutcome::Skipped(reason),
        Err(panic) => {
            let message = panic
                .downcast_ref::<&str>()
                .map(|s| (*s).to_owned())
                .or_else(|| panic.downcast_ref::<String>().cloned())
                .unwrap_or_else(|| "the parser failed".to_owned());
            PdfOutcome::Skipped(format!("malformed: {}", one_line(&message)))
        }
    }
}

fn extract(bytes: &[u8]) -> Result<PdfText, String> {
    use pdf_extract::{Document, Object, OutputDev, PlainTextOutput};
    if !bytes.starts_with(b"%PDF-") && !bytes.get(..1024).is_some_and(|head| contains(head, b"%PDF-")) {
        return Err("not a PDF: the file does not start with `%PDF-`".to_owned());
    }
    let mut doc =
        Document::load_mem(bytes).map_err(|err| format!("malformed: {}", one_line(&err.to_string())))?;
    if doc.is_encrypted() && doc.decrypt("").is_err() {
        return Err("encrypted: its text needs a password".to_owned());
    }
    let root =
        doc.catalog().ok().and_then(|catalog| catalog.get(b"Pages").ok()).and_then(|p| p.as_reference().ok());
    if let Some(root) = root {
        check_page_tree(&doc, root)?;
    }
    // The count the page tree claims, before walking it.
    let claimed = root
        .and_then(|id| doc.get_dictionary(id).ok())
        .and_then(|pages| pages.get(b"Count").ok())
        .and_then(|count| match count {
            Object::Integer(n) => Some(*n),
            _ => None,
        });
    if let Some(claimed) = claimed.filter(|&n| n > PDF_PAGES_MAX as i64) {
        return Err(format!("too many pages: its page tree claims {claimed}, more than {PDF_PAGES_MAX}"));
    }
    let pages = doc.get_pages();
    if pages.len() > PDF_PAGES_MAX {
        return Err(format!("too many pages: {}, more than {PDF_PAGES_MAX}", pages.len()));
    }
    if pages.is_empty() {
        return Err("malformed: no pages".to_owned());
    }
    let mut text = PdfText::default();
    let mut kept = 0usize;
    for &number in pages.keys() {
        let mut page = String::new();
        if kept < PDF_TEXT_MAX_BYTES {
            let mut output = PlainTextOutput::new(&mut page);
            let output: &mut dyn OutputDev = &mut output;
            pdf_extract::output_doc_page(&doc, output, number)
                .map_err(|err| format!("malformed: page {number}: {}", one_line(&err.to_string())))?;
        }
        let room = PDF_TEXT_MAX_BYTES.saturating_sub(kept);
        if page.len() > room {
            let mut cut = room;
            while !page.is_char_boundary(cut) {
                cut -= 1;
            }
            page.truncate(cut);
            text.truncated = true;
        }
        kept += page.len();
        text.pages.push(page);
    }
    if text.pages.iter().all(|page| page.trim().is_empty()) {
        return Err(format!(
            "no text layer: none of its {} pages holds text (a scan? kb-mcp does not read images)",
            text.pages.len()
        ));
    }
    Ok(text)
}

/// Deepest page tree walked (real ones are a few levels deep).
const PAGE_TREE_DEPTH_MAX: usize = 64;

/// Walks the page tree level by level (no recursion, each node once) before
/// the parser walks it: refuses a tree deeper than [`PAGE_TREE_DEPTH_MAX`]
/// or with more nodes than [`PDF_PAGES_MAX`] pages could need.
fn check_page_tree(doc: &pdf_extract::Document, root: pdf_extract::ObjectId) -> Result<(), String> {
    let mut seen = std::collections::HashSet::new();
    let mut level = vec![root];
    let mut depth = 0;
    while !level.is_empty() {
        depth += 1;
        if depth > PAGE_TREE_DEPTH_MAX {
            return Err(format!("malformed: its page tree is more than {PAGE_TREE_DEPTH_MAX} levels deep"));
        }
        let mut next = Vec::new();
        for id in level {
            if !seen.insert(id) {
                continue;
            }
            if seen.len() > 4 * PDF_PAGES_MAX {
                return Err(format!(
                    "too many pages: its page tree holds more than {} nodes",
                    4 * PDF_PAGES_MAX
                ));
            }
            let kids = doc.get_dictionary(id).ok().and_then(|node| node.get(b"Kids").ok());
            if let Some(pdf_extract::Object::Array(kids)) = kids {
                next.extend(kids.iter().filter_map(|kid| kid.as_reference().ok()));
            }
        }
        level = next;
    }
    Ok(())
}

fn contains(haystack: &[u8], needle: &[u8]) -> bool {
    haystack.windows(needle.len()).any(|window| window == needle)
}

/// A message on one line, at most 300 characters.
fn one_line(message: &str) -> String {
    let line: String = message.split_whitespace().collect::<Vec<_>>().join(" ");
    match line.char_indices().nth(300) {
        Some((at, _)) => format!("{}…", &line[..at]),
        None => line,
    }
}

/// A PDF as a [`Note`]: titled by its file name (`.pdf` kept, so every list
/// and hit shows it is a PDF), no frontmatter, headings, links or tags.
pub(crate) fn pdf_note(path: &NotePath) -> Note {
    Note {
        path: path.clone(),
        title: path.file_name().to_owned(),
        aliases: Vec::new(),
        tags: Vec::new(),
        description: String::new(),
        created: None,
        frontmatter: serde_json::Value::Object(serde_json::Map::new()),
        headings: Vec::new(),
        links: Vec::new(),
        block_ids: Vec::new(),
        body_offset: 0,
        body_line: 1,
        diagnostics: Vec::new(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn is_pdf_takes_any_case_and_nothing_else() {
        assert!(is_pdf("a/b.pdf"));
        assert!(is_pdf("B.PDF"));
        assert!(!is_pdf(".pdf"));
        assert!(!is_pdf("a.pdf.md"));
        assert!(!is_pdf("a/中.df"));
    }

    #[test]
    fn garbage_and_truncated_files_are_skipped_with_a_reason() {
        let PdfOutcome::Skipped(reason) = extract_pdf(b"hello, not a pdf") else { panic!() };
        assert!(reason.starts_with("not a PDF"), "{reason}");
        let PdfOutcome::Skipped(reason) = extract_pdf(b"%PDF-1.4\n1 0 obj <<") else { panic!() };
        assert!(reason.starts_with("malformed"), "{reason}");
    }

    #[test]
    fn labelled_text_puts_a_heading_before_each_page() {
        let text =
            PdfText { pages: vec!["one".into(), String::new(), "# not a heading".into()], truncated: false };
        assert_eq!(
            text.labelled(),
            "## Page 1\n\none\n\n## Page 2\n\n(no text on this page)\n\n## Page 3\n\n # not a heading\n"
        );
        assert_eq!(text.body(), "one\n\n\n\n# not a heading");
    }
}
