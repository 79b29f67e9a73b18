//! Updates: the one writer, taken only for the moment of an update (waiting
//! while another process holds it), documents added from many threads, the
//! commit and its payload, and the merges that follow many small updates.

use std::collections::BTreeSet;
use std::sync::Mutex;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use tantivy::schema::Field;
use tantivy::{IndexWriter, TantivyDocument, TantivyError, Term};

use super::errors::{folder_error, tantivy_error};
use super::schema;
use super::{IndexDocument, SearchIndex};
use crate::error::{Error, ErrorCode, Result};

/// How long an update waits for another process's writer before giving up.
const WRITER_WAIT: Duration = Duration::from_secs(30);

/// Memory for a bulk build's writer (split across its threads).
const BULK_MEMORY: usize = 192 * 1024 * 1024;

/// Segments that small updates may leave before they are merged into one.
const MAX_SEGMENTS: usize = 16;

/// Segments above this share of all documents are left alone by the merges
/// that follow small updates.
const SMALL_SEGMENT_SHARE: f64 = 0.01;

/// Memory for a small update's single-threaded writer (tantivy's minimum is 15 MB).
const SMALL_MEMORY: usize = 24 * 1024 * 1024;

/// Documents from which an update indexes on several threads, as a build does
/// (a move of a note with 10,000 backlinks re-indexes 10,000 notes: on one
/// thread, that was seconds).
const MANY_DOCUMENTS: usize = 1_000;

pub(super) fn now() -> String {
    jiff::Timestamp::now().to_string()
}

impl SearchIndex {
    /// Takes the writer, waiting up to `wait` while another process holds it: a
    /// build's (`reset`), or an update's, on several threads when it adds
    /// `documents` by the thousand.
    fn writer(&self, reset: bool, documents: usize, wait: Duration) -> Result<IndexWriter> {
        let started = Instant::now();
        loop {
            let attempt = if reset || documents >= MANY_DOCUMENTS {
                self.index.writer(BULK_MEMORY)
            } else {
                self.index.writer_with_num_threads(1, SMALL_MEMORY)
            };
            match attempt {
                Ok(writer) => {
                    if !reset {
                        // An update must release the writer (and tantivy's cross-process
                        // lock) as soon as it commits: no merges here, see `update`.
                        writer.set_merge_policy(Box::new(tantivy::indexer::NoMergePolicy));
                    }
                    return Ok(writer);
                }
                Err(TantivyError::LockFailure(..)) if started.elapsed() < wait => {
                    std::thread::sleep(Duration::from_millis(20));
                }
                Err(TantivyError::LockFailure(..)) => {
                    return Err(Error::new(
                        ErrorCode::Conflict,
                        format!("the index in {} is being written by another process", self.dir.display()),
                    )
                    .with_hint("wait for the other kb-index or kb-mcp to finish its update, then retry"));
                }
                Err(err) => return Err(folder_error(&self.dir, "opening the index writer", err)),
            }
        }
    }

    /// Applies a change: with `reset`, the index is emptied first (a full build);
    /// `remove` paths are deleted; `produce` adds about `documents` documents
    /// (which picks one indexing thread or several) through the sink (it may
    /// call it from many threads). Commits, releases the writer and reloads.
    ///
    /// `before` gives the content hash a path had in the index before (`None`:
    /// not indexed): the commit's journal records each note added, changed (to
    /// other content) or removed, for `get_vault_overview {since}`.
    pub fn update<F>(
        &self,
        reset: bool,
        documents: usize,
        remove: &[String],
        before: Journal<'_>,
        produce: F,
    ) -> Result<usize>
    where
        F: FnOnce(&DocumentSink<'_>) -> Result<()>,
    {
        let _serial = self.serialise();
        let pending = self.begin(reset, documents, remove)?;
        if let Err(err) = produce(&pending.sink()) {
            pending.rollback();
            return Err(err);
        }
        self.commit(pending, before)
    }

    /// Holds off this process's other updates (each holds it from
    /// `SearchIndex::begin` to its commit or roll-back; other processes are
    /// kept out by tantivy's lock on the writer).
    pub fn serialise(&self) -> std::sync::MutexGuard<'_, ()> {
        self.writing.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    /// [`SearchIndex::serialise`] when no other update of this process is under
    /// way; `None` when one is.
    pub(crate) fn try_serialise(&self) -> Option<std::sync::MutexGuard<'_, ()>> {
        match self.writing.try_lock() {
            Ok(guard) => Some(guard),
            Err(std::sync::TryLockError::Poisoned(poisoned)) => Some(poisoned.into_inner()),
            Err(std::sync::TryLockError::WouldBlock) => None,
        }
    }

    /// Starts an update (see [`SearchIndex::update`]), the caller holding
    /// [`SearchIndex::serialise`]: takes the writer (waiting while another
    /// process holds it), empties the index first with `reset`, deletes
    /// `remove`. Documents added to the update are searchable only once it is
    /// committed ([`SearchIndex::commit`]); dropped or rolled back, nothing of
    /// it is kept. It may be filled on another thread than the one that
    /// commits it.
    pub(crate) fn begin(&self, reset: bool, documents: usize, remove: &[String]) -> Result<PendingUpdate> {
        self.begin_waiting(reset, documents, remove, WRITER_WAIT)
    }

    /// [`SearchIndex::begin`] of an update of `documents` documents without
    /// waiting for another process's writer (`conflict` while one holds it).
    pub(crate) fn begin_at_once(&self, documents: usize) -> Result<PendingUpdate> {
        self.begin_waiting(false, documents, &[], Duration::ZERO)
    }

    fn begin_waiting(
        &self,
        reset: bool,
        documents: usize,
        remove: &[String],
        wait: Duration,
    ) -> Result<PendingUpdate> {
        if let Some(why) = &self.read_only {
            return Err(Error::new(ErrorCode::IndexUnavailable, format!("cannot update the index: {why}"))
                .with_hint("searches keep using the index as it is; make the folder writable, or pass --index-dir with a folder you can write"));
        }
        let writer = self.writer(reset, documents, wait)?;
        if reset {
            writer.delete_all_documents().map_err(|e| folder_error(&self.dir, "emptying the index", e))?;
        }
        let pending = PendingUpdate {
            writer,
            fields: self.schema.fields.clone(),
            reset,
            added: AtomicUsize::new(0),
            changes: Mutex::new(Vec::new()),
        };
        for path in remove {
            pending.remove(path);
        }
        Ok(pending)
    }

    /// Commits an update begun by `SearchIndex::begin` (see
    /// [`SearchIndex::update`] for `before`), releases the writer and reloads;
    /// returns the number of documents added.
    pub fn commit(&self, pending: PendingUpdate, before: Journal<'_>) -> Result<usize> {
        let PendingUpdate { mut writer, reset, added, changes, .. } = pending;
        let added = added.into_inner();
        let changes = changes.into_inner().unwrap_or_else(|p| p.into_inner());
        let mut payload = self.payload();
        payload.schema_version = self.schema.version;
        let stamp = now();
        if reset || payload.built_at.is_none() {
            payload.built_at = Some(stamp.clone());
        }
        payload.updated_at = Some(stamp);
        payload.seq += 1;
        if reset {
            // A rebuild lists everything anew: a look from before it cannot be answered.
            payload.journal.clear();
            payload.journal_from = payload.seq;
        } else {
            payload.journal.extend(journal_entries(payload.seq, changes, before));
            if payload.journal.len() > super::JOURNAL_MAX {
                let drop = payload.journal.len() - super::JOURNAL_MAX;
                payload.journal_from = payload.journal_from.max(payload.journal[drop - 1].seq);
                payload.journal.drain(..drop);
            }
        }
        let mut prepared =
            writer.prepare_commit().map_err(|e| folder_error(&self.dir, "preparing the commit", e))?;
        prepared.set_payload(&serde_json::to_string(&payload).unwrap_or_default());
        prepared.commit().map_err(|e| folder_error(&self.dir, "committing the index", e))?;
        self.reload()?;
        let searcher = self.reader.searcher();
        let segments = searcher.segment_readers().len();
        if reset || segments <= MAX_SEGMENTS {
            // Bulk merges finish in the background; small updates have none pending.
            std::thread::spawn(move || {
                let _ = writer.wait_merging_threads();
            });
        } else {
            // Small updates left many small segments: merge them in the background,
            // holding the writer meanwhile (other updates wait for it, searches do
            // not). Only the small ones: rewriting the bulk build's segments too
            // would hold the writer for seconds at 100k notes.
            let ids = small_segments(&searcher);
            std::thread::spawn(move || {
                let _ = writer.merge(&ids).wait();
                let _ = writer.wait_merging_threads();
            });
        }
        Ok(added)
    }
}

/// The journal entries of one commit (`seq`) from its changes in the order
/// made (a path's last change counts: a document added, then replaced or
/// removed again within the update, is what came last).
fn journal_entries(
    seq: u64,
    changes: Vec<(String, Option<String>)>,
    before: Journal<'_>,
) -> Vec<super::JournalEntry> {
    let mut last: std::collections::HashMap<&str, usize> = std::collections::HashMap::new();
    for (at, (path, _)) in changes.iter().enumerate() {
        last.insert(path, at);
    }
    let mut entries = Vec::new();
    for (at, (path, hash)) in changes.iter().enumerate() {
        if last.get(path.as_str()) != Some(&at) {
            continue;
        }
        let op = match (before(path), hash) {
            (None, Some(_)) => super::ChangeOp::Added,
            (Some(old), Some(hash)) if old != *hash => super::ChangeOp::Changed,
            (Some(_), None) => super::ChangeOp::Removed,
            _ => continue,
        };
        entries.push(super::JournalEntry { seq, op, path: path.clone() });
    }
    entries
}

/// An update begun and not committed (see `SearchIndex::begin`): the writer
/// is held, documents go in from any thread, nothing shows until
/// [`SearchIndex::commit`]. Dropped, or `PendingUpdate::rollback`ed, it
/// leaves the index as it was.
pub struct PendingUpdate {
    writer: IndexWriter,
    fields: schema::Fields,
    reset: bool,
    added: AtomicUsize,
    /// Every document added (path and content hash) and path removed
    /// (`None`), in order, for the commit's journal.
    changes: Mutex<Vec<(String, Option<String>)>>,
}

impl PendingUpdate {
    /// What adds documents to it.
    pub(crate) fn sink(&self) -> DocumentSink<'_> {
        DocumentSink { pending: self }
    }

    /// Deletes `path`'s document, and any added to this update before.
    pub fn remove(&self, path: &str) {
        self.writer.delete_term(Term::from_field_text(self.fields.path, path));
        self.changes.lock().unwrap_or_else(|p| p.into_inner()).push((path.to_owned(), None));
    }

    /// Drops everything added; the writer is released.
    pub(crate) fn rollback(mut self) {
        let _ = self.writer.rollback();
    }
}

/// Adds documents to an update in progress; usable from many threads.
pub struct DocumentSink<'a> {
    pending: &'a PendingUpdate,
}

/// The content hash each path had in the index before an update (`None`: not
/// indexed), for the commit's journal.
pub type Journal<'a> = &'a (dyn Fn(&str) -> Option<String> + Sync);

impl DocumentSink<'_> {
    /// Replaces the document of `document.record.path` (deleting any older version).
    pub fn replace(&self, document: &IndexDocument) -> Result<()> {
        let pending = self.pending;
        pending.writer.delete_term(Term::from_field_text(pending.fields.path, &document.record.path));
        self.add(document)
    }

    /// Adds a document (the caller knows the path is not indexed yet).
    pub fn add(&self, document: &IndexDocument) -> Result<()> {
        let pending = self.pending;
        let doc = to_document(&pending.fields, document)?;
        pending.writer.add_document(doc).map_err(|e| tantivy_error("adding a document", e))?;
        pending.added.fetch_add(1, Ordering::Relaxed);
        pending
            .changes
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .push((document.record.path.clone(), Some(document.record.hash.clone())));
        Ok(())
    }
}

fn to_document(fields: &schema::Fields, document: &IndexDocument) -> Result<TantivyDocument> {
    let record = &document.record;
    let mut doc = TantivyDocument::new();
    let text = |doc: &mut TantivyDocument, field: Field, value: &str| doc.add_text(field, value);
    let json =
        serde_json::to_string(record).map_err(|e| Error::internal(format!("serialising a record: {e}")))?;
    // The head first: a `search_knowledge` hit reads the first stored value alone.
    text(&mut doc, fields.hit, &super::record_head(&json, super::HEADINGS_KEY));
    text(&mut doc, fields.path, &record.path);
    text(&mut doc, fields.title, &record.title);
    if !record.stem().eq_ignore_ascii_case(record.title.trim()) {
        // Obsidian names a note by its file: the name stays searchable as a title.
        text(&mut doc, fields.title, record.stem());
    }
    for alias in &record.aliases {
        text(&mut doc, fields.aliases, alias);
    }
    text(&mut doc, fields.description, &record.description);
    let mut tag_keys = BTreeSet::new();
    for tag in &record.tags {
        text(&mut doc, fields.tags, &tag.replace('/', " "));
        let lower = tag.to_lowercase();
        let mut prefix = String::new();
        for part in lower.split('/') {
            if !prefix.is_empty() {
                prefix.push('/');
            }
            prefix.push_str(part);
            tag_keys.insert(prefix.clone());
        }
    }
    for key in tag_keys {
        text(&mut doc, fields.tag_filter, &key);
    }
    for heading in record.headings.iter() {
        text(&mut doc, fields.headings, heading.text);
    }
    text(&mut doc, fields.body, &document.body);
    let mut names = BTreeSet::new();
    for name in std::iter::once(record.title.as_str())
        .chain(record.aliases.iter().map(String::as_str))
        .chain([record.stem()])
    {
        let key = name.trim().to_lowercase();
        if !key.is_empty() {
            names.insert(key);
        }
    }
    for name in names {
        text(&mut doc, fields.name_key, &name);
    }
    let mut folder = String::new();
    for part in record.folder().split('/').filter(|p| !p.is_empty()) {
        if !folder.is_empty() {
            folder.push('/');
        }
        folder.push_str(part);
        text(&mut doc, fields.folder, &folder);
    }
    doc.add_u64(fields.language, super::language::detect(&document.body));
    text(&mut doc, fields.record, &json);
    Ok(doc)
}

/// The segments to merge after many small updates: all but those holding more
/// than [`SMALL_SEGMENT_SHARE`] of the documents (the bulk build's), at least
/// two; all of them when too many large ones have piled up.
fn small_segments(searcher: &tantivy::Searcher) -> Vec<tantivy::index::SegmentId> {
    let readers = searcher.segment_readers();
    let total: u64 = readers.iter().map(|r| u64::from(r.max_doc())).sum();
    let limit = (total as f64 * SMALL_SEGMENT_SHARE) as u64;
    let mut small: Vec<(u32, tantivy::index::SegmentId)> = readers
        .iter()
        .filter(|r| u64::from(r.max_doc()) <= limit.max(1))
        .map(|r| (r.max_doc(), r.segment_id()))
        .collect();
    if readers.len() - small.len() > MAX_SEGMENTS {
        // Merged small segments grew past the share: once in a long while, all of them.
        return readers.iter().map(|r| r.segment_id()).collect();
    }
    if small.len() < 2 {
        small = readers.iter().map(|r| (r.max_doc(), r.segment_id())).collect();
        small.sort_unstable();
        small.truncate(2);
    }
    small.into_iter().map(|(_, id)| id).collect()
}

#[cfg(test)]
mod tests {
    use tantivy::Index;

    use super::*;
    use crate::index::{FirstValue, tokenizer};
    use crate::sandbox::NotePath;
    use crate::vault::{NoteKind, NoteRecord, parse_note};

    #[test]
    fn a_note_is_stored_with_its_records_head_first() {
        let schema = schema::build().unwrap();
        let index = Index::create_in_ram(schema.schema.clone());
        index.tokenizers().register(tokenizer::ANALYZER, tokenizer::index_analyzer());
        let text = "---\naliases: [x]\n---\n# Note\n\n## A heading\n\nSee [[other]].\n";
        let note = parse_note(&NotePath::parse("a/note.md").unwrap(), text);
        let record = NoteRecord::from_note(note, NoteKind::Note, 7, 8, None, "sha256:00".to_owned());
        let document = IndexDocument { record: record.clone(), body: text.to_owned() };
        let mut writer: tantivy::IndexWriter = index.writer_with_num_threads(1, 15_000_000).unwrap();
        writer.add_document(to_document(&schema.fields, &document).unwrap()).unwrap();
        writer.commit().unwrap();
        let searcher = index.reader().unwrap().searcher();
        let FirstValue(first) = searcher.doc(tantivy::DocAddress::new(0, 0)).unwrap();
        let (field, head) = first.unwrap();
        assert_eq!(field, schema.fields.hit);
        let full = serde_json::to_string(&record).unwrap();
        assert!(full.starts_with(head.trim_end_matches('}')) && head.len() < full.len());
        assert!(!head.contains("headings") && head.contains("\"aliases\":[\"x\"]"));
    }
}
