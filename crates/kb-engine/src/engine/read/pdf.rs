//! `read_note` of a PDF: its extracted text (kept in the index folder, or
//! extracted now), each page under a `## Page N` heading, the pages as the
//! outline, one page with `section: "Page N"` (or `"N"`), paged by bytes like
//! any note. `hash` and `size` are the file's. A PDF whose text cannot be
//! extracted is an error saying why.

use super::note::page_of;
use crate::engine::Engine;
use crate::engine::bounded::{TEXT_MAX_CHARS, cut_chars};
use crate::engine::types::*;
use crate::error::{Error, Result};
use crate::sandbox::{NotePath, Zone, file_time, rfc3339};
use crate::vault::{parse_note, section_named};

impl Engine {
    /// `read_note` for a PDF at `path` (a readable vault path); `anchor` is
    /// a `#Page N` a `ref` carried.
    pub(super) fn read_pdf(
        &self,
        path: &NotePath,
        anchor: Option<String>,
        args: &ReadNoteArgs,
    ) -> Result<NoteContent> {
        if args.raw == Some(true) {
            return Err(Error::invalid(format!("{path} is a PDF: `raw` reads a canvas's JSON only"))
                .with_hint("read a PDF without `raw`: its text, by page"));
        }
        let limits = self.config().limits;
        let max = args.max_bytes.unwrap_or(limits.read_page_bytes).clamp(1, limits.read_max_bytes) as usize;
        let offset = args.offset.unwrap_or(0);
        let folder = Some(self.index.folder()).filter(|f| f.exists());
        let read = self.pdf.read(&self.sandbox(), folder, path, false)?;
        let text = read.text.map_err(|reason| {
            Error::invalid(format!("{path} is a PDF whose text cannot be read: {reason}"))
                .with_hint("audit_vault lists such files under skipped_file")
        })?;
        let labelled = text.labelled();
        let note = parse_note(path, &labelled);
        let section = args.section.clone().or(anchor);
        let section =
            section.as_deref().map(str::trim).filter(|s| !s.is_empty()).map(|s| {
                if s.bytes().all(|b| b.is_ascii_digit()) { format!("Page {s}") } else { s.to_owned() }
            });
        let content = match &section {
            Some(wanted) => section_named(&labelled, &note.headings, wanted)
                .and_then(|range| labelled.get(range))
                .ok_or_else(|| {
                    Error::not_found(format!("{path} has no page `{}`", cut_chars(wanted, 200))).with_hint(
                        format!(
                            "this PDF has {} pages: section \"Page 1\" to \"Page {}\"",
                            text.pages.len(),
                            text.pages.len()
                        ),
                    )
                })?,
            None => labelled.as_str(),
        };
        let (content, truncated, next_offset) =
            page_of(content.as_bytes(), 0, offset, max, content.len() as u64)?;
        let content =
            String::from_utf8(content).map_err(|_| Error::internal("a page cut inside a character"))?;
        let first_page = offset == 0 && section.is_none();
        let outline: Vec<OutlineEntry> = if first_page {
            note.headings
                .iter()
                .map(|h| OutlineEntry {
                    level: h.level,
                    text: cut_chars(&h.text, TEXT_MAX_CHARS),
                    line: h.line,
                })
                .collect()
        } else {
            Vec::new()
        };
        let mut hint = format!(
            "a PDF: `content` is its extracted text, {} pages, each under a `## Page N` heading; read one with \
             `section: \"Page N\"`",
            text.pages.len()
        );
        if text.truncated {
            hint.push_str("; its text was cut at 4 MiB");
        }
        let stat = self.sandbox().stat(path)?;
        Ok(NoteContent {
            path: path.as_str().to_owned(),
            title: path.file_name().to_owned(),
            frontmatter: serde_json::Map::new(),
            content,
            hash: read.hash,
            size: read.size,
            modified: stat
                .map(|s| rfc3339(file_time(crate::engine::sync::nanos(s.modified)), Zone::Utc))
                .unwrap_or_default(),
            outline,
            truncated,
            next_offset,
            frontmatter_truncated: false,
            frontmatter_omitted: 0,
            outline_truncated: false,
            outline_omitted: 0,
            hint: (first_page || section.is_some()).then_some(hint),
        })
    }
}
