//! Reading files into index documents and writing them to the index: one
//! file's document (or why it is no note), and many read and parsed in
//! parallel with rayon and handed to one index writer in one commit.

use std::sync::atomic::{AtomicUsize, Ordering};

use rayon::prelude::*;

use super::nanos;
use crate::engine::Engine;
use crate::engine::pdf::pdf_document;
use crate::error::{ErrorCode, Result};
use crate::index::IndexDocument;
use crate::sandbox::{Area, NotePath, ScannedFile};
use crate::vault::{Diagnostic, NoteKind, NoteRecord, content_hash, decode_note, parse_note};

/// Files above this size are recorded but not indexed as text.
pub(in crate::engine) const INDEX_MAX_BYTES: u64 = 32 * 1024 * 1024;

/// A Markdown file that cannot be served as a note (not UTF-8, or unreadable),
/// as it was when last read: it is not in the index, and is read again only
/// when its size or modification time moves.
#[derive(Debug, Clone)]
pub(in crate::engine) struct Unreadable {
    pub(super) size: u64,
    pub(super) modified_ns: i64,
    pub(super) reason: String,
}

impl Unreadable {
    pub(super) fn matches(&self, file: &ScannedFile) -> bool {
        self.size == file.stat.size && self.modified_ns == nanos(file.stat.modified)
    }
}

/// What reading one file for the index gave.
pub(super) enum Loaded {
    /// A note to index.
    Document(Box<IndexDocument>),
    /// The file vanished before it could be read.
    Vanished,
    /// The file cannot be served as a note; why.
    Unreadable(String),
}

/// What [`Engine::write_files`] indexed.
#[derive(Debug, Default)]
pub(super) struct Written {
    /// The records of the files indexed.
    pub(super) records: Vec<NoteRecord>,
    /// Bytes of Markdown indexed.
    pub(super) bytes: u64,
    /// Files that vanished before they could be read, and files that turned
    /// out not to be notes (removed from the index).
    pub(super) vanished: Vec<String>,
    /// Files that cannot be served as notes (path, why).
    pub(super) unreadable: Vec<(String, String)>,
}

pub(in crate::engine) fn kind_of(area: Area) -> NoteKind {
    match area {
        Area::Standard => NoteKind::Standard,
        Area::ReadAlso => NoteKind::ReadAlso,
        Area::Note | Area::Inbox | Area::Memory => NoteKind::Note,
    }
}

/// A note's index document from its bytes, as read from the file at `path`
/// (of `kind`, with these times); why it cannot be served as a note when it
/// cannot (not UTF-8).
pub(in crate::engine) fn document_of(
    path: &NotePath,
    kind: NoteKind,
    bytes: &[u8],
    modified_ns: i64,
    born_ns: Option<i64>,
) -> std::result::Result<IndexDocument, String> {
    if path.is_pdf() {
        // Never parsed as text (an ASCII PDF would decode): a PDF's document
        // is its extracted text, made by `Engine::load`.
        return Err("a PDF: indexed by its extracted text".to_owned());
    }
    let hash = content_hash(bytes);
    let size = bytes.len() as u64;
    match decode_note(bytes) {
        Ok(text) => {
            let note = parse_note(path, text);
            let body = note.index_body(text).into_owned();
            let record = NoteRecord::from_note(note, kind, size, modified_ns, born_ns, hash);
            Ok(IndexDocument { record, body })
        }
        Err(diagnostic) => Err(diagnostic.message),
    }
}

impl Engine {
    /// Reads, parses and indexes `work` (in parallel, one writer) and removes
    /// `removed`, in one commit; files that vanished meanwhile are removed in a
    /// second one. Writes nothing when there is nothing to write (and not `full`).
    pub(super) fn write_files(
        &self,
        full: bool,
        work: &[&ScannedFile],
        removed: &[String],
        progress: Option<&(dyn Fn(usize, usize) + Sync)>,
    ) -> Result<Written> {
        if work.is_empty() && removed.is_empty() && !full {
            return Ok(Written::default());
        }
        let catalog = self.catalog();
        let total = work.len();
        let done = AtomicUsize::new(0);
        let mut written = Written::default();
        let produce = |sink: &crate::index::DocumentSink<'_>| -> Result<()> {
            let results: Vec<Result<Loaded>> = work
                .par_iter()
                .map(|file| {
                    let outcome = match self.load(file, full) {
                        Ok(Loaded::Document(document)) => {
                            if full {
                                sink.add(&document)?
                            } else {
                                sink.replace(&document)?
                            }
                            Ok(Loaded::Document(document))
                        }
                        other => other,
                    };
                    let n = done.fetch_add(1, Ordering::Relaxed) + 1;
                    if let Some(report) = progress {
                        report(n, total);
                    }
                    outcome
                })
                .collect();
            let mut unreadable = self.unreadable.lock().unwrap_or_else(|p| p.into_inner());
            for (file, result) in work.iter().zip(results) {
                let path = file.path.as_str().to_owned();
                match result? {
                    Loaded::Document(document) => {
                        unreadable.remove(&path);
                        written.bytes += document.record.size;
                        written.records.push(document.record);
                    }
                    Loaded::Vanished => {
                        unreadable.remove(&path);
                        written.vanished.push(path);
                    }
                    Loaded::Unreadable(reason) => {
                        let known = Unreadable {
                            size: file.stat.size,
                            modified_ns: nanos(file.stat.modified),
                            reason: reason.clone(),
                        };
                        unreadable.insert(path.clone(), known);
                        if catalog.get(&path).is_some() {
                            written.vanished.push(path.clone());
                        }
                        written.unreadable.push((path, reason));
                    }
                }
            }
            Ok(())
        };
        let before = |path: &str| catalog.get(path).map(|record| record.hash.clone());
        self.index.update(full, work.len(), removed, &before, produce)?;
        if !written.vanished.is_empty() {
            self.index.update(false, 0, &written.vanished, &before, |_| Ok(()))?;
        }
        Ok(written)
    }

    /// Reads and parses one file into an index document (a PDF: its text,
    /// extracted or kept; a PDF skipped before is tried again when
    /// `retry_skipped`, as a full rebuild does).
    pub(super) fn load(&self, file: &ScannedFile, retry_skipped: bool) -> Result<Loaded> {
        let modified_ns = nanos(file.stat.modified);
        let born_ns = file.stat.created.map(nanos);
        let kind = kind_of(file.area);
        if file.path.is_pdf() {
            let folder = Some(self.index.folder()).filter(|f| f.exists());
            let read = match self.pdf.read(&self.sandbox(), folder, &file.path, retry_skipped) {
                Ok(read) => read,
                Err(err) if err.code == ErrorCode::NotFound => return Ok(Loaded::Vanished),
                Err(err) => return Ok(Loaded::Unreadable(unreadable_reason(&err.message))),
            };
            return Ok(match &read.text {
                Ok(text) => Loaded::Document(Box::new(pdf_document(
                    &file.path,
                    kind,
                    &read,
                    text,
                    modified_ns,
                    born_ns,
                ))),
                Err(reason) => Loaded::Unreadable(format!("a PDF whose text is not indexed: {reason}")),
            });
        }
        let bytes = match self.sandbox().read(&file.path, INDEX_MAX_BYTES) {
            Ok(bytes) => bytes,
            Err(err) if err.code == ErrorCode::NotFound => return Ok(Loaded::Vanished),
            Err(err) if err.code == ErrorCode::TooLarge => {
                // Too large to index, still a note: read_note reads it by pages.
                let note = parse_note(&file.path, "");
                let mut record =
                    NoteRecord::from_note(note, kind, file.stat.size, modified_ns, born_ns, String::new());
                record.diagnostics =
                    vec![Diagnostic { line: None, message: format!("not indexed: {}", err.message) }];
                return Ok(Loaded::Document(Box::new(IndexDocument { record, body: String::new() })));
            }
            Err(err) => return Ok(Loaded::Unreadable(unreadable_reason(&err.message))),
        };
        Ok(match document_of(&file.path, kind, &bytes, modified_ns, born_ns) {
            Ok(document) => Loaded::Document(Box::new(document)),
            Err(reason) => Loaded::Unreadable(reason),
        })
    }

    /// Why a new file cannot be served as a note, when it cannot (read without
    /// parsing it), remembered as [`Engine::load`] would.
    pub(super) fn check_readable(&self, file: &ScannedFile) -> Option<String> {
        let reason = if file.path.is_pdf() {
            // Never extracted here (a child process a file): a PDF is skipped
            // when a sync kept its skip (or it is too large), else indexable.
            let folder = Some(self.index.folder()).filter(|f| f.exists())?;
            self.pdf.kept_skip(&self.sandbox(), folder, &file.path)?
        } else {
            match self.sandbox().read(&file.path, INDEX_MAX_BYTES) {
                Ok(bytes) => decode_note(&bytes).err()?.message,
                Err(err) if matches!(err.code, ErrorCode::NotFound | ErrorCode::TooLarge) => return None,
                Err(err) => unreadable_reason(&err.message),
            }
        };
        let known = Unreadable {
            size: file.stat.size,
            modified_ns: nanos(file.stat.modified),
            reason: reason.clone(),
        };
        self.unreadable
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .insert(file.path.as_str().to_owned(), known);
        Some(reason)
    }
}

/// The reason given for a file the sandbox refused to read.
fn unreadable_reason(message: &str) -> String {
    format!("cannot be read ({message}); not a note until it can be")
}
