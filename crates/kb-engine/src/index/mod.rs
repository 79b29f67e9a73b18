//! The search index: the only code that names tantivy.
//!
//! One index folder holds the searchable fields of every note and, stored beside
//! them, each note's [`NoteRecord`] (its manifest entry and parse summary), so the
//! manifest is committed atomically with the index it describes. Tantivy allows
//! one `IndexWriter` per folder across processes: the writer is taken only for
//! the moment of an update, waited for when another process holds it, and
//! released right after the commit, after which the reader is reloaded by hand so
//! the very next search sees the change.
//!
//! The files: `open` (opening and repairing a folder), `writer` (updates
//! and commits), `search` (requests, hits, running a query), `query` (the
//! query built from a question), `tokenizer` and `script` (how text becomes
//! terms), `snippet`, `fuzzy`, `fusion` (a question's two rankings as one), `schema` (from `index-schema/`),
//! `baseline` (the plain BM25 index evaluations compare against),
//! `language` (which language a note and a query are in), `language_column` (the notes' languages kept per segment), `read_only`, `errors`;
//! `semantic` (the embeddings a search also ranks by).

mod baseline;
mod errors;
mod fusion;
mod fuzzy;
mod language;
mod language_column;
mod memory;
mod open;
mod query;
mod read_only;
mod schema;
mod script;
mod search;
pub mod semantic;
mod snippet;
mod standing;
mod tokenizer;
mod writer;

pub use baseline::BaselineIndex;
pub use memory::MemoryIndex;
pub use open::OpenedIndex;
pub use script::{is_cjk, is_han, is_hangul, is_kana};
pub use search::{
    NoteTexts, SearchHit, SearchOutcome, SearchPasses, SearchRequest, SearchScope, is_question_query,
};
pub use snippet::Snippet;
pub use writer::{DocumentSink, Journal, PendingUpdate};

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use serde::{Deserialize, Serialize};
use tantivy::schema::document::{DeserializeError, DocumentDeserialize, DocumentDeserializer};
use tantivy::schema::{Field, Value};
use tantivy::{DocAddress, Executor, Index, IndexReader, Searcher, TantivyDocument};

use crate::error::{Error, Result};
use crate::sandbox;
use crate::vault::{Diagnostic, Heading, Headings, Links, NoteKind, NoteRecord};
use errors::tantivy_error;
use schema::IndexSchema;

/// Loads what the first query would otherwise wait for (the Chinese segmenter).
pub fn warm_up() {
    query::warm_up();
}

/// What a commit records about the index as a whole.
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq, Eq)]
struct Payload {
    schema_version: u32,
    built_at: Option<String>,
    updated_at: Option<String>,
    /// Commits so far: each update counts one.
    #[serde(default)]
    seq: u64,
    /// Changes after this commit are all in `journal` (older ones were dropped,
    /// or the index was rebuilt then).
    #[serde(default)]
    journal_from: u64,
    /// The latest notes added, changed and removed, oldest first, at most
    /// [`JOURNAL_MAX`]: what `get_vault_overview {since}` reports.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    journal: Vec<JournalEntry>,
}

/// Most changes the commit payload remembers (about 60 bytes each).
const JOURNAL_MAX: usize = 1000;

/// One note added, changed or removed by a commit.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq)]
struct JournalEntry {
    seq: u64,
    op: ChangeOp,
    path: String,
}

/// What a commit did to a note.
#[derive(Debug, Clone, Copy, Serialize, Deserialize, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) enum ChangeOp {
    /// It was not in the index before.
    #[serde(rename = "a")]
    Added,
    /// It was, with other content.
    #[serde(rename = "c")]
    Changed,
    /// It left the index.
    #[serde(rename = "r")]
    Removed,
}

/// The notes the index took in or dropped after a commit, by path.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct ChangesSince {
    /// The last commit: where the next look starts.
    pub seq: u64,
    /// False when some changes since were forgotten (too many, or a rebuild).
    pub complete: bool,
    /// Each note's net change (added then removed is none), by path.
    pub changes: Vec<(ChangeOp, String)>,
}

/// Facts about the index for `get_vault_overview` and `kb-index status`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct IndexMeta {
    /// The schema version of `index-schema/`.
    pub schema_version: u32,
    /// Documents in the index.
    pub documents: u64,
    /// When the last full build finished (RFC 3339).
    pub built_at: Option<String>,
    /// When the last update finished (RFC 3339).
    pub updated_at: Option<String>,
}

/// A note ready to be indexed: its record and body text.
#[derive(Debug, Clone)]
pub struct IndexDocument {
    /// The record stored beside the fields.
    pub record: NoteRecord,
    /// The body text (after the frontmatter); empty for a file that could not be decoded.
    pub body: String,
}

/// The index of one vault.
pub struct SearchIndex {
    index: Index,
    reader: IndexReader,
    schema: IndexSchema,
    dir: PathBuf,
    folder: sandbox::IndexFolder,
    /// Why the index is served as it is, when its folder cannot be written.
    read_only: Option<String>,
    /// Serialises this process's writers (other processes are kept out by tantivy's lock).
    writing: Mutex<()>,
    /// Threads a costly search spreads its segments over (`None` on one core).
    parallel: Option<Executor>,
    /// Each field's BM25 statistics, kept while the segments stay the same.
    field_stats: query::FieldStatsCache,
    /// Each segment's note languages, read once (see [`language_column`]).
    languages: Arc<language_column::LanguageColumns>,
}

impl std::fmt::Debug for SearchIndex {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SearchIndex").field("dir", &self.dir).finish_non_exhaustive()
    }
}

impl SearchIndex {
    /// Why the index cannot be updated (its folder cannot be written), when
    /// so: searches use it as it is, and the overview reports it stale.
    pub fn read_only(&self) -> Option<&str> {
        self.read_only.as_deref()
    }

    /// The index folder as checked by the sandbox (whether it is kb-mcp's own,
    /// and why it lives in the cache folder when it does).
    pub fn folder(&self) -> &sandbox::IndexFolder {
        &self.folder
    }

    /// The folder the index lives in.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// The opstamp of the last commit on disk (by any process): changes exactly
    /// when the index does.
    pub(crate) fn committed_opstamp(&self) -> u64 {
        self.index.load_metas().map(|metas| metas.opstamp).unwrap_or(0)
    }

    /// Segments the reader sees (small updates add one each until they are merged).
    pub(crate) fn segment_count(&self) -> usize {
        self.reader.searcher().segment_readers().len()
    }

    /// Makes commits by other processes (or this one) visible to searches.
    pub(crate) fn reload(&self) -> Result<()> {
        self.reader.reload().map_err(|e| tantivy_error("reloading the index reader", e))
    }

    fn payload(&self) -> Payload {
        self.index
            .load_metas()
            .ok()
            .and_then(|m| m.payload)
            .and_then(|p| serde_json::from_str(&p).ok())
            .unwrap_or_default()
    }

    /// The notes added, changed and removed by the commits after commit `seq`
    /// (`None`: none, only where to start next time), from the journal the
    /// commits carry: nothing is read but the index's metadata.
    pub(crate) fn changes_since(&self, seq: Option<u64>) -> ChangesSince {
        let payload = self.payload();
        let Some(after) = seq else {
            return ChangesSince { seq: payload.seq, complete: true, changes: Vec::new() };
        };
        // Per path: whether it was indexed before the first change and after the last.
        let mut net: std::collections::BTreeMap<&str, (bool, bool)> = std::collections::BTreeMap::new();
        for entry in payload.journal.iter().filter(|e| e.seq > after) {
            let exists = entry.op != ChangeOp::Removed;
            net.entry(entry.path.as_str()).or_insert((entry.op != ChangeOp::Added, exists)).1 = exists;
        }
        let changes = net
            .into_iter()
            .filter_map(|(path, state)| {
                let op = match state {
                    (false, true) => ChangeOp::Added,
                    (true, true) => ChangeOp::Changed,
                    (true, false) => ChangeOp::Removed,
                    (false, false) => return None,
                };
                Some((op, path.to_owned()))
            })
            .collect();
        ChangesSince {
            seq: payload.seq,
            complete: after >= payload.journal_from && after <= payload.seq,
            changes,
        }
    }

    /// Facts about the index as last committed.
    pub fn meta(&self) -> IndexMeta {
        let payload = self.payload();
        IndexMeta {
            schema_version: self.schema.version,
            documents: self.reader.searcher().num_docs(),
            built_at: payload.built_at,
            updated_at: payload.updated_at,
        }
    }

    /// Every stored record (the manifest), sorted by path.
    pub fn records(&self) -> Result<Vec<NoteRecord>> {
        read_records(&self.reader, &self.schema.fields)
    }

    /// A hit's record: what a hit needs, read up to the links, which no hit
    /// needs and which were most of the decoding (a search decodes a record per
    /// hit), or up to the headings when `headings` is false (a
    /// `search_knowledge` hit shows none). A record is stored in its fields'
    /// order (see [`NoteRecord`]), so everything before the key is read and the
    /// fields from it on are left at their defaults. The key is found where it
    /// is: inside a string every `"` is escaped, so it cannot follow a comma.
    fn hit_record_of(&self, doc: &TantivyDocument, headings: bool) -> Option<NoteRecord> {
        hit_record(doc.get_first(self.schema.fields.record)?.as_str()?, headings)
    }

    /// A hit's record without its headings, from the record's head, which is
    /// stored first on its own (`hit`): the stored document is decoded no
    /// further, so a long record (headings and links are most of it) costs a
    /// hit nothing. A document stored otherwise is read whole.
    fn lean_hit_record(
        &self,
        searcher: &Searcher,
        address: DocAddress,
    ) -> tantivy::Result<Option<NoteRecord>> {
        let FirstValue(first) = searcher.doc(address)?;
        Ok(match first {
            Some((field, head)) if field == self.schema.fields.hit => from_head(&head),
            _ => self.hit_record_of(&searcher.doc(address)?, false),
        })
    }
}

/// The key a record's headings start at (see [`record_head`]).
const HEADINGS_KEY: &str = ",\"headings\":";

/// A record's JSON up to `key`, closed there: the fields before it, which
/// come first in a [`NoteRecord`]. The key is found where it is: inside a
/// string every `"` is escaped, so it cannot follow a comma. All of it when
/// it holds no such key.
fn record_head<'a>(json: &'a str, key: &str) -> std::borrow::Cow<'a, str> {
    match json.find(key) {
        Some(at) => format!("{}}}", &json[..at]).into(),
        None => json.into(),
    }
}

/// A stored document's first value alone: the values after it are not decoded.
struct FirstValue(Option<(Field, String)>);

impl DocumentDeserialize for FirstValue {
    fn deserialize<'de, D: DocumentDeserializer<'de>>(mut stored: D) -> Result<Self, DeserializeError> {
        Ok(FirstValue(stored.next_field::<String>()?))
    }
}

/// A hit's record from its stored JSON (see `SearchIndex::hit_record_of`).
fn hit_record(json: &str, headings: bool) -> Option<NoteRecord> {
    from_head(&record_head(json, if headings { ",\"links\":" } else { HEADINGS_KEY }))
}

/// A hit's record from the head of its stored JSON (see [`record_head`]): the
/// fields after the head are left at their defaults.
fn from_head(head: &str) -> Option<NoteRecord> {
    let hit: HitRecord = serde_json::from_str(head).ok()?;
    Some(NoteRecord {
        path: hit.path,
        kind: hit.kind,
        size: hit.size,
        modified_ns: hit.modified_ns,
        born_ns: hit.born_ns,
        hash: hit.hash,
        title: hit.title,
        aliases: hit.aliases,
        tags: hit.tags,
        description: hit.description,
        created: hit.created,
        headings: hit.headings,
        links: Links::default(),
        block_ids: hit.block_ids,
        body_line: hit.body_line,
        diagnostics: hit.diagnostics,
    })
}

/// A stored [`NoteRecord`] read for a search hit (see `hit_record_of`).
#[derive(Deserialize)]
struct HitRecord {
    path: String,
    kind: NoteKind,
    size: u64,
    modified_ns: i64,
    born_ns: Option<i64>,
    hash: String,
    title: String,
    aliases: Vec<String>,
    tags: Vec<String>,
    description: String,
    created: Option<String>,
    #[serde(default)]
    headings: Headings,
    #[serde(default)]
    block_ids: Vec<String>,
    #[serde(default)]
    body_line: u32,
    #[serde(default)]
    diagnostics: Vec<Diagnostic>,
}

/// Every stored record a reader sees, sorted by path.
fn read_records(reader: &IndexReader, fields: &schema::Fields) -> Result<Vec<NoteRecord>> {
    let searcher = reader.searcher();
    let mut records = Vec::with_capacity(searcher.num_docs() as usize);
    for segment in searcher.segment_readers() {
        let store =
            segment.get_store_reader(64).map_err(|e| Error::index(format!("reading stored records: {e}")))?;
        let alive = segment.alive_bitset();
        for doc_id in 0..segment.max_doc() {
            if alive.is_some_and(|bits| !bits.is_alive(doc_id)) {
                continue;
            }
            let doc: TantivyDocument =
                store.get(doc_id).map_err(|e| tantivy_error("reading a stored record", e))?;
            if let Some(record) = record_of(fields, &doc) {
                records.push(record);
            }
        }
    }
    records.sort_by(|a, b| a.path.cmp(&b.path));
    records.dedup_by(|a, b| a.path == b.path);
    Ok(records)
}

fn record_of(fields: &schema::Fields, doc: &TantivyDocument) -> Option<NoteRecord> {
    let json = doc.get_first(fields.record)?.as_str()?;
    serde_json::from_str(json).ok()
}

/// Cuts highlighted snippets from a note's current text (see [`Snippet`]).
pub fn snippets(
    text: &str,
    body_offset: usize,
    terms: &BTreeSet<String>,
    headings: &[Heading],
    max: usize,
) -> Vec<Snippet> {
    snippet::snippets(text, body_offset, terms, headings, max)
}

/// The schema declaration's version (for tests and status output).
pub fn schema_version() -> u32 {
    schema::declaration().map(|d| d.schema_version).unwrap_or(0)
}

/// Checks that `index-schema/schema.json` and the code agree; the error names the difference.
pub fn check_schema() -> Result<()> {
    schema::build().map(|_| ())
}

/// Bytes used by the files of a folder (the index size on disk).
pub fn folder_size(dir: &Path) -> u64 {
    sandbox::folder_size(dir)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sandbox::NotePath;
    use crate::vault::parse_note;

    #[test]
    fn a_hit_record_is_the_record_up_to_its_links_or_its_headings() {
        let text = "---\ntitle: 'a ,\"links\":[ ,\"headings\": title'\naliases: [x]\ntags: [t]\n---\n\
                    # Heading ,\"links\":[] ,\"headings\": here\n\nSee [[other]] and [[more#part|shown]]. ^block\n";
        let path = NotePath::parse("folder/note.md").unwrap();
        let note = parse_note(&path, text);
        let record = NoteRecord::from_note(note, NoteKind::Note, 7, 8, Some(9), "sha256:00".to_owned());
        assert!(!record.links.is_empty() && !record.block_ids.is_empty() && record.body_line > 1);
        let json = serde_json::to_string(&record).unwrap();
        let hit = hit_record(&json, true).unwrap();
        let expected = NoteRecord {
            links: Links::default(),
            block_ids: Vec::new(),
            body_line: 0,
            diagnostics: Vec::new(),
            ..record.clone()
        };
        assert_eq!(hit, expected);
        assert_eq!(hit.title, "a ,\"links\":[ ,\"headings\": title");
        // Up to its headings: the same, headings left out.
        let lean = hit_record(&json, false).unwrap();
        assert!(!record.headings.is_empty());
        assert_eq!(lean, NoteRecord { headings: Default::default(), ..expected.clone() });
        // The head stored on its own reads the same.
        let head = record_head(&json, HEADINGS_KEY);
        assert!(head.len() < json.len() && !head.contains("Heading"));
        assert_eq!(from_head(&head).unwrap(), lean);
        // A record stored without links (none written that way) is read whole.
        let whole = json.replacen(",\"links\":", ",\"lanks\":", 1);
        let read = hit_record(&whole, true).unwrap();
        assert_eq!((read.block_ids, read.body_line), (record.block_ids, record.body_line));
    }
}
