//! `read_note`: finding a note by path or reference, and serving one page of
//! it (or of one section) with its title, frontmatter and outline, all bounded
//! by the page size, from a file of any size read in one streaming pass.

use crate::engine::bounded::{
    self, METADATA_BUDGET, TEXT_MAX_CHARS, WHOLE_MAX, cap_frontmatter, cut_chars, window_text,
};
use crate::engine::types::*;
use crate::engine::{Engine, NoteName, one_of};
use crate::error::{Error, Result};
use crate::sandbox::OpenedFile;
use crate::sandbox::{NotePath, Zone, file_time, rfc3339};
use crate::vault::{ContentHasher, content_hash, decode_note, read_canvas, section_named};

impl Engine {
    /// Resolves `path` or `ref` to a readable note path (and a `#heading` from the ref).
    pub(crate) fn locate(&self, name: &NoteName) -> Result<(NotePath, Option<String>)> {
        match name {
            NoteName::Path(path) => Ok((self.sandbox().resolve_read(path)?, None)),
            NoteName::Ref(reference) => {
                let catalog = self.catalog();
                if let Some(found) = pdf_named(catalog.records(), reference) {
                    return found;
                }
                let (index, anchor) = catalog.graph().resolver.resolve_ref(
                    catalog.records(),
                    catalog.attachments(),
                    reference,
                )?;
                let path = self.sandbox().resolve_read(&catalog.records()[index].path)?;
                Ok((path, anchor.map(str::to_owned)))
            }
        }
    }

    /// `read_note`. A note up to `WHOLE_MAX` is read and parsed whole (the parse
    /// cached by content hash); a larger one is hashed in one streaming pass that
    /// keeps only its first `WHOLE_MAX` bytes (parsed for title, frontmatter, outline
    /// and sections) and the requested page. Frontmatter and outline are capped to
    /// the page size (see `METADATA_BUDGET`).
    pub fn read_note(&self, args: &ReadNoteArgs) -> Result<NoteContent> {
        let name = one_of(args.path.as_deref(), args.reference.as_deref())?;
        // A past version (`at`): the note as the history holds it, read as a note on disk is.
        let (path, anchor, file) = match &args.at {
            Some(at) => {
                let (given, anchor) = match &name {
                    NoteName::Path(path) => (path.clone(), None),
                    NoteName::Ref(_) => {
                        let (path, anchor) = self.locate(&name)?;
                        (path.as_str().to_owned(), anchor)
                    }
                };
                let (path, past) = self.note_at(&given, at)?;
                let path = NotePath::parse(&path)?;
                let modified = jiff::Timestamp::from_second(past.time)
                    .map(|t| rfc3339(t, Zone::Utc))
                    .unwrap_or_default();
                (
                    path,
                    anchor,
                    Source::Past { bytes: past.bytes.unwrap_or_default(), commit: past.commit, modified },
                )
            }
            None => {
                let (path, anchor) = self.locate(&name)?;
                if path.is_pdf() {
                    return self.read_pdf(&path, anchor, args);
                }
                let file = Source::Disk(self.sandbox().open_read(&path)?);
                (path, anchor, file)
            }
        };
        let limits = self.config().limits;
        let page_max = limits.read_max_bytes;
        let max = args.max_bytes.unwrap_or(limits.read_page_bytes).clamp(1, page_max) as usize;
        let offset = args.offset.unwrap_or(0);
        // The outline describes the whole note: it comes once, with the first page.
        let first_page = offset == 0;
        let section = args.section.clone().or(anchor);
        let section = section.as_deref().map(str::trim).filter(|s| !s.is_empty());
        let size = file.len();
        let whole = size <= WHOLE_MAX;
        let not_utf8 = |message: &str| {
            Error::invalid(format!("{path} is not UTF-8 text: {message}"))
                .with_hint("only UTF-8 Markdown notes can be read")
        };
        // Whole: every byte. Otherwise the head, and the page's bytes (plus a few to
        // find character boundaries) when the page is not inside the head.
        let page_span = (offset, offset.saturating_add(max as u64 + 4));
        let (head, page_bytes, hash) = if whole {
            let bytes = file.read_at(0, usize::try_from(size).unwrap_or(usize::MAX).saturating_add(1))?;
            let hash = content_hash(&bytes);
            (bytes, None, hash)
        } else {
            let mut hasher = ContentHasher::default();
            let mut head = Vec::new();
            let mut page = Vec::new();
            let want_page = section.is_none() && page_span.1 > WHOLE_MAX;
            file.for_each_chunk(|at, chunk| {
                hasher.update(chunk);
                let end = at + chunk.len() as u64;
                if at < WHOLE_MAX {
                    head.extend_from_slice(&chunk[..(WHOLE_MAX.min(end) - at) as usize]);
                }
                if want_page && at < page_span.1 && end > page_span.0 {
                    let from = page_span.0.max(at) - at;
                    let to = page_span.1.min(end) - at;
                    page.extend_from_slice(&chunk[from as usize..to as usize]);
                }
                true
            })?;
            (head, want_page.then_some(page), hasher.finish())
        };
        let text = if whole {
            decode_note(&head).map_err(|d| not_utf8(&d.message))?
        } else {
            window_text(&head).ok_or_else(|| not_utf8("an invalid byte in its first 8 MiB"))?
        };
        let note = bounded::parsed(&path, &hash, text);
        let mut hints = Vec::new();
        // A canvas reads as its text nodes (a canvas past `WHOLE_MAX` as its JSON).
        let canvas = path.is_canvas() && whole && args.raw != Some(true);
        let words = canvas.then(|| read_canvas(text).text);
        let (content, truncated, next_offset) = match section {
            Some(wanted) => {
                let found = section_named(text, &note.headings, wanted)
                    .and_then(|range| text.get(range))
                    .ok_or_else(|| {
                        let available: Vec<String> =
                            note.headings.iter().take(50).map(|h| cut_chars(&h.text, 100)).collect();
                        let more = if note.headings.len() > 50 { " | …" } else { "" };
                        let searched = if whole { "" } else { " (in its first 8 MiB)" };
                        Error::not_found(format!(
                            "{path} has no heading `{}`{searched}",
                            cut_chars(wanted, 200)
                        ))
                        .with_hint(format!("headings of this note: {}{more}", available.join(" | ")))
                    })?;
                if !whole && found.as_ptr() as usize + found.len() == text.as_ptr() as usize + text.len() {
                    hints.push(format!(
                        "this note is {size} bytes; sections are read from its first {WHOLE_MAX} bytes and this one \
                         may go on: read on without `section` from offset {}",
                        text.len()
                    ));
                }
                page_of(found.as_bytes(), 0, offset, max, found.len() as u64)?
            }
            None => match (&words, page_bytes) {
                (Some(words), _) => page_of(words.as_bytes(), 0, offset, max, words.len() as u64)?,
                (None, Some(bytes)) => page_of(&bytes, offset, offset, max, size)?,
                (None, None) => {
                    page_of(head.as_slice(), 0, offset, max, if whole { head.len() as u64 } else { size })?
                }
            },
        };
        let content = String::from_utf8(content).map_err(|_| not_utf8("an invalid byte in the page read"))?;
        let budget = max.clamp(METADATA_BUDGET.0, METADATA_BUDGET.1);
        let frontmatter = match &note.frontmatter {
            serde_json::Value::Object(map) => map,
            _ => &serde_json::Map::new(),
        };
        let (frontmatter, frontmatter_omitted) = cap_frontmatter(frontmatter, budget);
        if frontmatter_omitted > 0 {
            hints.push(
                "frontmatter is cut to fit the page: the whole frontmatter is the start of the note's text \
                 (read from offset 0)"
                    .to_owned(),
            );
        }
        let mut outline = Vec::new();
        let mut used = 2usize;
        for heading in note.headings.iter().filter(|_| first_page) {
            let entry = OutlineEntry {
                level: heading.level,
                text: cut_chars(&heading.text, TEXT_MAX_CHARS),
                line: heading.line,
            };
            used += entry.text.len() + 32;
            if used > budget {
                break;
            }
            outline.push(entry);
        }
        let outline_omitted = if first_page { (note.headings.len() - outline.len()) as u64 } else { 0 };
        if outline_omitted > 0 {
            hints.push(format!(
                "outline lists {} of {} headings: read a part with `section` or page with `offset`",
                outline.len(),
                note.headings.len()
            ));
        }
        if !whole && first_page {
            hints.push(format!(
                "this note is {size} bytes: its title, frontmatter and outline come from its first {WHOLE_MAX} bytes"
            ));
        }
        if canvas && first_page {
            hints.push(
                "a canvas: `content` is its text nodes, top to bottom then left to right; `raw: true` reads \
                 its JSON"
                    .to_owned(),
            );
        }
        let modified = match &file {
            Source::Disk(_) => self
                .sandbox()
                .stat(&path)?
                .map(|s| rfc3339(file_time(crate::engine::sync::nanos(s.modified)), Zone::Utc))
                .unwrap_or_default(),
            Source::Past { commit, modified, .. } => {
                hints.insert(
                    0,
                    format!(
                        "the note as it was at {modified} (version {}); read without `at` for it now",
                        &commit[..12]
                    ),
                );
                modified.clone()
            }
        };
        Ok(NoteContent {
            path: path.as_str().to_owned(),
            title: cut_chars(&note.title, TEXT_MAX_CHARS),
            frontmatter,
            content,
            hash,
            size,
            modified,
            outline,
            truncated,
            next_offset,
            frontmatter_truncated: frontmatter_omitted > 0,
            frontmatter_omitted,
            outline_truncated: outline_omitted > 0 || (!whole && first_page),
            outline_omitted,
            hint: (!hints.is_empty()).then(|| hints.join("; ")),
        })
    }
}

/// The PDF a `ref` names (`report.pdf`, `docs/report.pdf`, `report.pdf#Page 2`):
/// links treat a PDF as an attachment, so the link resolver does not name it.
/// `None` when the ref names no PDF; an error when it names several.
fn pdf_named(
    records: &[std::sync::Arc<crate::vault::NoteRecord>],
    reference: &str,
) -> Option<Result<(NotePath, Option<String>)>> {
    let (target, anchor) = match reference.split_once('#') {
        Some((target, anchor)) => (target.trim(), Some(anchor.trim().to_owned()).filter(|a| !a.is_empty())),
        None => (reference.trim(), None),
    };
    if !crate::vault::is_pdf(target) {
        return None;
    }
    let wanted = target.trim_start_matches('/').to_lowercase();
    let found: Vec<&str> = records
        .iter()
        .map(|r| r.path.as_str())
        .filter(|path| crate::vault::is_pdf(path))
        .filter(|path| {
            let path = path.to_lowercase();
            path == wanted || path.ends_with(&format!("/{wanted}"))
        })
        .collect();
    match found.as_slice() {
        [] => None,
        [one] => Some(NotePath::parse(one).map(|path| (path, anchor))),
        many => Some(Err(Error::new(
            crate::error::ErrorCode::AmbiguousRef,
            format!("`ref` {target} names {} PDFs: {}", many.len(), many.join(", ")),
        ))),
    }
}

/// The page of at most `max` bytes from `offset` of a content of `len` bytes, of
/// which `bytes` holds the part from `base` on (at least up to the page's end and
/// a few bytes more, or to the end): cut to character boundaries, returned with
/// whether more follows and where it continues.
pub(super) fn page_of(
    bytes: &[u8],
    base: u64,
    offset: u64,
    max: usize,
    len: u64,
) -> Result<(Vec<u8>, bool, Option<u64>)> {
    if offset > len {
        return Err(Error::invalid(format!("`offset` {offset} is past the end ({len} bytes)")));
    }
    let is_boundary = |at: u64| -> bool {
        at >= len || bytes.get((at - base) as usize).is_none_or(|&b| (b as i8) >= -0x40)
    };
    let mut start = offset;
    while !is_boundary(start) {
        start += 1;
    }
    let mut end = start.saturating_add(max as u64).min(len);
    while end > start && !is_boundary(end) {
        end -= 1;
    }
    if end == start && start < len {
        // A page smaller than one character still returns that character.
        end = start + 1;
        while !is_boundary(end) {
            end += 1;
        }
    }
    let from = ((start - base) as usize).min(bytes.len());
    let to = ((end - base) as usize).min(bytes.len());
    let truncated = end < len;
    Ok((bytes[from..to].to_vec(), truncated, truncated.then_some(end)))
}

/// Where a read's bytes come from: the file on disk, or a past version the
/// history holds (with its commit and time).
enum Source {
    Disk(OpenedFile),
    Past { bytes: Vec<u8>, commit: String, modified: String },
}

impl Source {
    fn len(&self) -> u64 {
        match self {
            Source::Disk(file) => file.len(),
            Source::Past { bytes, .. } => bytes.len() as u64,
        }
    }

    fn read_at(&self, offset: u64, max: usize) -> Result<Vec<u8>> {
        match self {
            Source::Disk(file) => file.read_at(offset, max),
            Source::Past { bytes, .. } => {
                let from = usize::try_from(offset).unwrap_or(usize::MAX).min(bytes.len());
                Ok(bytes[from..from.saturating_add(max).min(bytes.len())].to_vec())
            }
        }
    }

    fn for_each_chunk(&self, mut visit: impl FnMut(u64, &[u8]) -> bool) -> Result<u64> {
        match self {
            Source::Disk(file) => file.for_each_chunk(visit),
            Source::Past { bytes, .. } => {
                let mut at = 0u64;
                for chunk in bytes.chunks(1 << 20) {
                    if !visit(at, chunk) {
                        break;
                    }
                    at += chunk.len() as u64;
                }
                Ok(bytes.len() as u64)
            }
        }
    }
}
