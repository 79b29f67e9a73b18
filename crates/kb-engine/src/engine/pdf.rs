//! PDFs as the engine serves them: how their text is extracted (a configured
//! [`PdfExtractor`]), kept (by content hash in the index folder's `pdf-text/`,
//! see `sandbox::IndexFolder::read_pdf_text`) and turned into an index
//! document (the file name as title, the text as body) or a skip reason.
//!
//! The engine does not know the binaries: they set [`PdfExtractor::Command`]
//! to themselves with their hidden `extract-pdf` command, which calls
//! [`extract_pdf_child`] under memory and CPU limits. With no extractor set
//! (the engine used as a library) PDFs are skipped with a reason saying so:
//! a PDF parser run in process can abort the whole process on a hostile file
//! (a stack overflow is no panic), which a library must not risk.
//!
//! Bounds, all before or around the parser: a PDF over [`PDF_MAX_BYTES`] is
//! not read; the child gets [`EXTRACT_TIMEOUT`] of wall-clock time (killed
//! after), and on Unix [`CHILD_MEMORY_MAX`] of address space and
//! [`CHILD_CPU_SECONDS`] of CPU; inside, at most `PDF_PAGES_MAX` pages and
//! `PDF_TEXT_MAX_BYTES` of text.

use std::collections::HashSet;
use std::ffi::OsString;
use std::path::PathBuf;
use std::sync::{Mutex, RwLock};
use std::time::Duration;

use crate::error::ErrorCode;
use crate::index::IndexDocument;
use crate::sandbox::{IndexFolder, NotePath, Sandbox, run_pdf_extractor};
use crate::vault::{NoteKind, NoteRecord, PdfOutcome, PdfText, content_hash, extract_pdf, pdf_note};

/// Largest PDF whose text is extracted.
pub const PDF_MAX_BYTES: u64 = 64 * 1024 * 1024;

/// Wall-clock time one extraction may take before its child is killed.
pub const EXTRACT_TIMEOUT: Duration = Duration::from_secs(20);

/// Address space the extracting child may use (RLIMIT_AS, Unix).
pub const CHILD_MEMORY_MAX: u64 = 1024 * 1024 * 1024;

/// CPU seconds the extracting child may use (RLIMIT_CPU, Unix).
pub const CHILD_CPU_SECONDS: u64 = 15;

/// How the engine extracts a PDF's text.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub enum PdfExtractor {
    /// Not at all: PDFs are skipped, with a reason saying so.
    #[default]
    Off,
    /// By running `program args…` with the PDF on its stdin: it answers with
    /// [`extract_pdf_child`]'s JSON on its stdout.
    Command {
        /// The program (the binaries give their own path).
        program: PathBuf,
        /// Its arguments (the hidden command that extracts).
        args: Vec<OsString>,
    },
}

/// The skip reason when no extractor is set.
const OFF_REASON: &str =
    "PDF text extraction is not set up in this program (the kb-mcp and kb-index binaries set it up)";

/// What the child process does with the bytes of one PDF: its outcome as
/// JSON (a [`PdfOutcome`]). Called by the binaries' hidden `extract-pdf`
/// command, after they set their limits.
pub fn extract_pdf_child(bytes: &[u8]) -> Vec<u8> {
    let outcome = extract_pdf(bytes);
    serde_json::to_vec(&outcome)
        .unwrap_or_else(|_| b"{\"skipped\":\"the text could not be encoded\"}".to_vec())
}

/// The engine's PDF text service.
#[derive(Debug, Default)]
pub(crate) struct PdfTexts {
    extractor: RwLock<PdfExtractor>,
    /// The keys read or written since the last prune.
    touched: Mutex<HashSet<String>>,
}

impl PdfTexts {
    pub(crate) fn set(&self, extractor: PdfExtractor) {
        *self.extractor.write().unwrap_or_else(|p| p.into_inner()) = extractor;
    }

    /// The text of a PDF whose bytes are `bytes` (content hash `hash`): kept
    /// in `folder` when it was extracted before (a kept skip counts only when
    /// `retry_skipped` is false), else extracted now and kept.
    pub(crate) fn text_of(
        &self,
        folder: Option<&IndexFolder>,
        bytes: &[u8],
        hash: &str,
        retry_skipped: bool,
    ) -> Result<PdfText, String> {
        let key = hash.strip_prefix("sha256:").unwrap_or(hash);
        self.touched.lock().unwrap_or_else(|p| p.into_inner()).insert(key.to_owned());
        if let Some(kept) = folder.and_then(|f| f.read_pdf_text(key))
            && let Ok(outcome) = serde_json::from_slice::<PdfOutcome>(&kept)
        {
            match outcome {
                PdfOutcome::Text(text) => return Ok(text),
                PdfOutcome::Skipped(reason) if !retry_skipped => return Err(reason),
                PdfOutcome::Skipped(_) => {}
            }
        }
        let extractor = self.extractor.read().unwrap_or_else(|p| p.into_inner()).clone();
        let outcome = match &extractor {
            PdfExtractor::Off => return Err(OFF_REASON.to_owned()),
            PdfExtractor::Command { program, args } => {
                match run_pdf_extractor(program, args, bytes, EXTRACT_TIMEOUT) {
                    Ok(stdout) => serde_json::from_slice::<PdfOutcome>(&stdout).unwrap_or_else(|err| {
                        PdfOutcome::Skipped(format!("the text extractor answered nonsense: {err}"))
                    }),
                    Err(reason) if reason.starts_with("the text extractor could not be started") => {
                        // Not the PDF's fault: nothing kept, tried again next time.
                        return Err(reason);
                    }
                    Err(reason) => PdfOutcome::Skipped(reason),
                }
            }
        };
        if let Some(folder) = folder
            && let Ok(json) = serde_json::to_vec(&outcome)
        {
            // Best effort: a read-only index folder keeps nothing.
            let _ = folder.write_pdf_text(key, &json);
        }
        match outcome {
            PdfOutcome::Text(text) => Ok(text),
            PdfOutcome::Skipped(reason) => Err(reason),
        }
    }

    /// After a full sync (every PDF read): drops the kept texts of PDFs
    /// no longer in the vault (those neither read since the last prune nor
    /// indexed).
    pub(crate) fn prune(&self, folder: &IndexFolder, records: &[std::sync::Arc<NoteRecord>]) {
        let mut touched = self.touched.lock().unwrap_or_else(|p| p.into_inner());
        let mut keep = std::mem::take(&mut *touched);
        keep.extend(
            records
                .iter()
                .filter(|r| crate::vault::is_pdf(&r.path))
                .filter_map(|r| r.hash.strip_prefix("sha256:").map(str::to_owned)),
        );
        folder.prune_pdf_texts(&keep);
    }

    /// Why the PDF at `path` is skipped, as a sync kept it (or because it is
    /// too large), without extracting anything; `None` when it is not known
    /// to be skipped.
    pub(crate) fn kept_skip(
        &self,
        sandbox: &Sandbox,
        folder: &IndexFolder,
        path: &NotePath,
    ) -> Option<String> {
        let bytes = match sandbox.read(path, PDF_MAX_BYTES) {
            Ok(bytes) => bytes,
            Err(err) if err.code == ErrorCode::TooLarge => {
                return Some(format!(
                    "a PDF whose text is not indexed: too large: over {} MiB",
                    PDF_MAX_BYTES / (1024 * 1024)
                ));
            }
            Err(_) => return None,
        };
        let hash = content_hash(&bytes);
        let key = hash.strip_prefix("sha256:")?;
        match serde_json::from_slice::<PdfOutcome>(&folder.read_pdf_text(key)?).ok()? {
            PdfOutcome::Skipped(reason) => Some(format!("a PDF whose text is not indexed: {reason}")),
            PdfOutcome::Text(_) => None,
        }
    }

    /// Reads a PDF through the sandbox and gives its bytes, hash and text.
    pub(crate) fn read(
        &self,
        sandbox: &Sandbox,
        folder: Option<&IndexFolder>,
        path: &NotePath,
        retry_skipped: bool,
    ) -> crate::error::Result<PdfRead> {
        let bytes = match sandbox.read(path, PDF_MAX_BYTES) {
            Ok(bytes) => bytes,
            Err(err) if err.code == ErrorCode::TooLarge => {
                return Ok(PdfRead {
                    size: 0,
                    hash: String::new(),
                    text: Err(format!("too large: over {} MiB", PDF_MAX_BYTES / (1024 * 1024))),
                });
            }
            Err(err) => return Err(err),
        };
        let hash = content_hash(&bytes);
        let text = self.text_of(folder, &bytes, &hash, retry_skipped);
        Ok(PdfRead { size: bytes.len() as u64, hash, text })
    }
}

/// A PDF as read: its size, hash and text (or why it has none).
pub(crate) struct PdfRead {
    pub(crate) size: u64,
    pub(crate) hash: String,
    pub(crate) text: Result<PdfText, String>,
}

/// A PDF's index document: titled by its file name, its body the text.
pub(crate) fn pdf_document(
    path: &NotePath,
    kind: NoteKind,
    read: &PdfRead,
    text: &PdfText,
    modified_ns: i64,
    born_ns: Option<i64>,
) -> IndexDocument {
    let record =
        NoteRecord::from_note(pdf_note(path), kind, read.size, modified_ns, born_ns, read.hash.clone());
    IndexDocument { record, body: text.body() }
}

/// The labelled text (see `PdfText::labelled`) kept in `folder` for the PDF
/// content `hash`, if any (a skip is none), without reading the PDF: what
/// its snippets and recall cut from.
pub(crate) fn kept_labelled(folder: &IndexFolder, hash: &str) -> Option<String> {
    let key = hash.strip_prefix("sha256:")?;
    match serde_json::from_slice::<PdfOutcome>(&folder.read_pdf_text(key)?).ok()? {
        PdfOutcome::Text(text) => Some(text.labelled()),
        PdfOutcome::Skipped(_) => None,
    }
}

impl crate::engine::Engine {
    /// The labelled text (see `PdfText::labelled`) kept for the PDF content
    /// `hash`, without reading the PDF: what its snippets and recall cut from.
    pub(crate) fn pdf_text_kept(&self, hash: &str) -> Option<String> {
        let folder = Some(self.index.folder()).filter(|f| f.exists())?;
        kept_labelled(folder, hash)
    }
}
