//! The search index: the only code that names tantivy.
//!
//! One index folder holds the searchable fields of every note and, stored beside
//! them, each note's [`NoteRecord`] (its manifest entry and parse summary), so the
//! manifest is committed atomically with the index it describes. Tantivy allows
//! one `IndexWriter` per folder across processes: the writer is taken only for
//! the moment of an update, waited for when another process holds it, and
//! released right after the commit, after which the reader is reloaded by hand so
//! the very next search sees the change.

mod baseline;
mod fuzzy;
mod query;
mod read_only;
mod schema;
mod script;
mod snippet;
mod tokenizer;

pub use baseline::BaselineIndex;
pub use script::{is_cjk, is_han, is_hangul, is_kana};
pub use snippet::Snippet;

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use serde::{Deserialize, Serialize};
use tantivy::collector::{Count, TopDocs};
use tantivy::query::{EnableScoring, Query};
use tantivy::schema::{Field, Value};
use tantivy::{
    DocAddress, Executor, Index, IndexReader, IndexWriter, ReloadPolicy, Searcher, TantivyDocument,
    TantivyError, Term,
};

use crate::error::{Error, ErrorCode, Result};
use crate::sandbox::{self, NotePath};
use crate::vault::{Heading, NoteRecord};
use schema::IndexSchema;

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
/// Decompressed blocks of stored records the searcher keeps, per segment.
/// tantivy keeps 100 (each about 16 KiB): up to 25 MiB for a 16-segment
/// index that a search (ten hits) hardly ever reads twice.
const DOC_STORE_CACHE_BLOCKS: usize = 8;
/// The most threads one search uses (one per core up to this).
const SEARCH_THREADS: usize = 4;
/// Postings (notes whose body holds a query's terms, summed over its terms)
/// from which a content search visits the segments on several threads. Below
/// it the hand-off costs more than it saves (a no-hit search takes 0.15 ms
/// alone, 0.3 ms spread); above it a one-word search at 10k notes already
/// gains a sixth, three common words at 100k notes a third.
const PARALLEL_POSTINGS: u64 = 2_000;

/// See [`SearchScope::min_share`]; chosen with `kb-index eval` (BENCHMARKS.md, "Search quality").
const KNOWLEDGE_MIN_SHARE: f32 = 0.0;
const CONTENT_MIN_SHARE: f32 = 0.6;

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

/// Which tool's fields and weights a search uses.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SearchScope {
    /// Titles (and file names), aliases, descriptions and tags, with headings
    /// and text weighted low (`search_knowledge`).
    Knowledge,
    /// Headings and bodies (`search_note_content`).
    Content,
}

impl SearchScope {
    /// The share of query terms a note must match to rank first; when fewer notes
    /// than asked for match that many, notes holding any one term follow them.
    /// Titles and tags are short, so one matching word already says much; bodies are
    /// long, so a note should hold most of the query's words.
    fn min_share(self) -> f32 {
        match self {
            SearchScope::Knowledge => KNOWLEDGE_MIN_SHARE,
            SearchScope::Content => CONTENT_MIN_SHARE,
        }
    }

    fn weights_key(self) -> &'static str {
        match self {
            SearchScope::Knowledge => "search_knowledge",
            SearchScope::Content => "search_note_content",
        }
    }
}

/// A search request.
#[derive(Debug, Clone)]
pub struct SearchRequest<'a> {
    /// The query text (words, `"phrases"`, `-exclusions`).
    pub query: &'a str,
    /// Which tool's fields.
    pub scope: SearchScope,
    /// Tags the note must carry (a parent tag matches its children).
    pub tags: &'a [String],
    /// A folder the note must lie under, checked by the sandbox.
    pub folder: Option<&'a NotePath>,
    /// How many hits to return.
    pub limit: usize,
    /// Whether to explain each hit's score.
    pub explain: bool,
}

/// One search hit.
#[derive(Debug, Clone)]
pub struct SearchHit {
    /// The note's record.
    pub record: NoteRecord,
    /// Its BM25-based score.
    pub score: f32,
    /// The fields in which query terms occur (from the record; `body` is decided by snippets).
    pub matched: Vec<String>,
    /// tantivy's score explanation, when asked for.
    pub explanation: Option<serde_json::Value>,
}

/// A page of search hits.
#[derive(Debug, Clone)]
pub struct SearchOutcome {
    /// All matching notes, not only those returned.
    pub total: usize,
    /// The best hits, best first; ties ordered by path.
    pub hits: Vec<SearchHit>,
    /// The analysed terms, for snippets.
    pub terms: BTreeSet<String>,
    /// Whether the search needed any one term only, because requiring more found nothing.
    pub relaxed: bool,
    /// Whether only typo-tolerant matching found anything (snippets may then be empty).
    pub fuzzy: bool,
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
}

impl std::fmt::Debug for SearchIndex {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SearchIndex").field("dir", &self.dir).finish_non_exhaustive()
    }
}

fn tantivy_error(context: &str, err: TantivyError) -> Error {
    Error::index(format!("{context}: {err}"))
}

/// A tantivy error on the index folder: a full disk and a folder that cannot be
/// written are said plainly, naming the folder.
fn folder_error(dir: &Path, context: &str, err: TantivyError) -> Error {
    if tantivy_disk_full(&err) {
        return sandbox::disk_full(dir);
    }
    if tantivy_read_only(&err) {
        return Error::new(
            ErrorCode::IndexUnavailable,
            format!("{context}: the index folder {} cannot be written ({err})", dir.display()),
        )
        .with_hint("searches keep using the index as it is; make the folder writable, or pass --index-dir with a folder you can write, to bring it up to date");
    }
    tantivy_error(context, err)
}

fn now() -> String {
    jiff::Timestamp::now().to_string()
}

/// The index of a vault, opened, with the records it holds.
pub struct OpenedIndex {
    /// The index.
    pub index: SearchIndex,
    /// Every stored record (the manifest), sorted by path.
    pub records: Vec<NoteRecord>,
    /// Why the index was rebuilt from scratch while opening (it was damaged or
    /// made by another schema), when it was: one line for the log.
    pub repaired: Option<String>,
}

/// Whether a tantivy error comes from a full disk.
fn tantivy_disk_full(err: &TantivyError) -> bool {
    if let TantivyError::IoError(io) = err
        && sandbox::is_disk_full(io)
    {
        return true;
    }
    let text = format!("{err:?}");
    text.contains("StorageFull") || text.contains("QuotaExceeded") || text.contains("No space left on device")
}

/// Whether a tantivy error comes from a folder that cannot be written.
fn tantivy_read_only(err: &TantivyError) -> bool {
    let text = format!("{err:?}");
    text.contains("PermissionDenied")
        || text.contains("ReadOnlyFilesystem")
        || text.contains("Read-only file system")
}

/// What an opened index folder holds, or why it cannot be served.
enum Probe {
    /// No index yet (no `meta.json`, no segments).
    Empty,
    /// A working index and its records.
    Working(Index, IndexReader, Vec<NoteRecord>),
    /// Damaged or from another schema: why.
    Unusable(String),
    /// Readable, but the folder cannot be written (tantivy's lock file): why.
    ReadOnly(String),
}

impl SearchIndex {
    /// Opens the index in `folder`. An index that cannot be opened (damaged,
    /// or built with another schema version) is rebuilt from scratch when kb-mcp
    /// can prove the folder is its own ([`OpenedIndex::repaired`] says why);
    /// a folder that does not exist (only with [`sandbox::IndexAccess::Existing`])
    /// gives an empty index in memory, so nothing is created.
    pub fn open(folder: sandbox::IndexFolder) -> Result<OpenedIndex> {
        let schema = schema::build().map_err(Error::internal)?;
        let dir = folder.path().to_owned();
        if !folder.exists() {
            let index = Index::create_in_ram(schema.schema.clone());
            let index = Self::finish(index, schema, folder)?;
            return Ok(OpenedIndex { index, records: Vec::new(), repaired: None });
        }
        let mut folder = folder;
        let guarded = |read_only: bool| {
            std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                Self::probe(&folder, &schema, read_only)
            }))
            .unwrap_or_else(|_| {
                Probe::Unusable("reading it failed (tantivy panicked on its files)".to_owned())
            })
        };
        let mut probe = guarded(false);
        let mut read_only = None;
        if let Probe::ReadOnly(why) = probe {
            let why = if why.contains("ReadOnlyFilesystem") {
                "read-only file system"
            } else {
                "permission denied"
            };
            read_only = Some(format!("the index folder {} cannot be written ({why})", dir.display()));
            probe = guarded(true);
        }
        let (index, records, repaired) = match probe {
            Probe::Working(index, reader, records) => {
                folder.adopt();
                let mut this = Self::finish_with(index, reader, schema, folder)?;
                this.read_only = read_only;
                return Ok(OpenedIndex { index: this, records, repaired: None });
            }
            Probe::ReadOnly(why) => {
                return Err(folder_error(&dir, "opening the index", TantivyError::SystemError(why)));
            }
            Probe::Empty | Probe::Unusable(_) if folder.access() == sandbox::IndexAccess::Existing => {
                // Create nothing: report what is there (an empty index in memory).
                let damage = match probe {
                    Probe::Unusable(reason) => Some(format!(
                        "the index in {} cannot be opened: {reason}; `kb-index build` rebuilds it",
                        dir.display()
                    )),
                    _ => None,
                };
                let index = Self::finish(Index::create_in_ram(schema.schema.clone()), schema, folder)?;
                return Ok(OpenedIndex { index, records: Vec::new(), repaired: damage });
            }
            Probe::Empty => (Self::create(&dir, &schema)?, Vec::new(), None),
            Probe::Unusable(reason) => {
                folder.clear()?;
                (Self::create(&dir, &schema)?, Vec::new(), Some(reason))
            }
        };
        let index = Self::finish(index, schema, folder)?;
        Ok(OpenedIndex { index, records, repaired })
    }

    /// Opens what the folder holds and reads every stored record, so that any
    /// damage shows now rather than in the middle of a call.
    fn probe(folder: &sandbox::IndexFolder, schema: &IndexSchema, read_only: bool) -> Probe {
        let dir = folder.path();
        let opened = if read_only {
            read_only::ReadOnlyFolder::open(dir).and_then(Index::open)
        } else {
            Index::open_in_dir(dir)
        };
        let index = match opened {
            Ok(index) => index,
            Err(TantivyError::OpenReadError(tantivy::directory::error::OpenReadError::FileDoesNotExist(
                _,
            ))) => {
                return match folder.holds_index_files() {
                    Ok(false) => Probe::Empty,
                    Ok(true) => {
                        Probe::Unusable("its meta.json is missing but segment files are present".to_owned())
                    }
                    Err(err) => Probe::Unusable(err.message),
                };
            }
            Err(err) => return Probe::Unusable(format!("it cannot be opened ({err})")),
        };
        match index.load_metas() {
            Ok(metas) => {
                let payload: Payload =
                    metas.payload.as_deref().and_then(|p| serde_json::from_str(p).ok()).unwrap_or_default();
                if metas.payload.is_some() && payload.schema_version != schema.version {
                    return Probe::Unusable(format!(
                        "it was built with index schema version {}; this kb-mcp uses version {}",
                        payload.schema_version, schema.version
                    ));
                }
            }
            Err(err) => return Probe::Unusable(format!("its meta.json cannot be read ({err})")),
        }
        if index.schema() != schema.schema {
            return Probe::Unusable("its fields differ from this version's schema".to_owned());
        }
        index.tokenizers().register(tokenizer::ANALYZER, tokenizer::index_analyzer());
        let reader: IndexReader = match index
            .reader_builder()
            .reload_policy(ReloadPolicy::Manual)
            .doc_store_cache_num_blocks(DOC_STORE_CACHE_BLOCKS)
            .try_into()
        {
            Ok(reader) => reader,
            Err(err) if !read_only && tantivy_read_only(&err) => return Probe::ReadOnly(err.to_string()),
            Err(err) => return Probe::Unusable(format!("its segments cannot be opened ({err})")),
        };
        match read_records(&reader, &schema.fields) {
            Ok(records) => Probe::Working(index, reader, records),
            Err(err) => Probe::Unusable(format!("its stored records cannot be read ({})", err.message)),
        }
    }

    fn finish(index: Index, schema: IndexSchema, folder: sandbox::IndexFolder) -> Result<SearchIndex> {
        index.tokenizers().register(tokenizer::ANALYZER, tokenizer::index_analyzer());
        let reader = index
            .reader_builder()
            .reload_policy(ReloadPolicy::Manual)
            .doc_store_cache_num_blocks(DOC_STORE_CACHE_BLOCKS)
            .try_into()
            .map_err(|e| tantivy_error("opening an index reader", e))?;
        Self::finish_with(index, reader, schema, folder)
    }

    fn finish_with(
        index: Index,
        reader: IndexReader,
        schema: IndexSchema,
        folder: sandbox::IndexFolder,
    ) -> Result<SearchIndex> {
        let cores = std::thread::available_parallelism().map_or(1, |n| n.get()).min(SEARCH_THREADS);
        let parallel = if cores > 1 {
            Some(
                Executor::multi_thread(cores, "kb-search-")
                    .map_err(|e| tantivy_error("starting the search threads", e))?,
            )
        } else {
            None
        };
        let dir = folder.path().to_owned();
        Ok(SearchIndex {
            index,
            reader,
            schema,
            dir,
            folder,
            read_only: None,
            writing: Mutex::new(()),
            parallel,
        })
    }

    fn create(dir: &Path, schema: &IndexSchema) -> Result<Index> {
        match Index::create_in_dir(dir, schema.schema.clone()) {
            Ok(index) => Ok(index),
            // Another process created it in the meantime.
            Err(TantivyError::IndexAlreadyExists) => {
                Index::open_in_dir(dir).map_err(|e| folder_error(dir, "opening the index", e))
            }
            Err(err) => Err(folder_error(dir, "creating the index", err)),
        }
    }

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
    pub fn committed_opstamp(&self) -> u64 {
        self.index.load_metas().map(|metas| metas.opstamp).unwrap_or(0)
    }

    /// Segments the reader sees (small updates add one each until they are merged).
    pub fn segment_count(&self) -> usize {
        self.reader.searcher().segment_readers().len()
    }

    /// Makes commits by other processes (or this one) visible to searches.
    pub fn reload(&self) -> Result<()> {
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

    fn record_of(&self, doc: &TantivyDocument) -> Option<NoteRecord> {
        record_of(&self.schema.fields, doc)
    }

    /// Takes the writer, waiting while another process holds it.
    fn writer(&self, bulk: bool) -> Result<IndexWriter> {
        let started = Instant::now();
        loop {
            let attempt = if bulk {
                self.index.writer(BULK_MEMORY)
            } else {
                self.index.writer_with_num_threads(1, SMALL_MEMORY)
            };
            match attempt {
                Ok(writer) => {
                    if !bulk {
                        // A small update must release the writer (and tantivy's cross-process
                        // lock) as soon as it commits: no merges here, see `update`.
                        writer.set_merge_policy(Box::new(tantivy::indexer::NoMergePolicy));
                    }
                    return Ok(writer);
                }
                Err(TantivyError::LockFailure(..)) if started.elapsed() < WRITER_WAIT => {
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
    /// `remove` paths are deleted; `produce` adds documents through the sink (it may
    /// call it from many threads). Commits, releases the writer and reloads.
    pub fn update<F>(&self, reset: bool, remove: &[String], produce: F) -> Result<usize>
    where
        F: FnOnce(&DocumentSink<'_>) -> Result<()>,
    {
        if let Some(why) = &self.read_only {
            return Err(Error::new(ErrorCode::IndexUnavailable, format!("cannot update the index: {why}"))
                .with_hint("searches keep using the index as it is; make the folder writable, or pass --index-dir with a folder you can write"));
        }
        let _serial = self.writing.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
        let mut writer = self.writer(reset)?;
        if reset {
            writer.delete_all_documents().map_err(|e| folder_error(&self.dir, "emptying the index", e))?;
        }
        for path in remove {
            writer.delete_term(Term::from_field_text(self.schema.fields.path, path));
        }
        let sink = DocumentSink {
            writer: &writer,
            fields: &self.schema.fields,
            added: std::sync::atomic::AtomicUsize::new(0),
        };
        let outcome = produce(&sink);
        let added = sink.added.load(std::sync::atomic::Ordering::Relaxed);
        if let Err(err) = outcome {
            let _ = writer.rollback();
            return Err(err);
        }
        let mut payload = self.payload();
        payload.schema_version = self.schema.version;
        let stamp = now();
        if reset || payload.built_at.is_none() {
            payload.built_at = Some(stamp.clone());
        }
        payload.updated_at = Some(stamp);
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

    /// Runs a search.
    pub fn search(&self, request: &SearchRequest<'_>) -> Result<SearchOutcome> {
        let plan = query::parse(request.query);
        if plan.is_empty() {
            return Err(Error::invalid("the query has no words to search for")
                .with_hint("give one or more words, a \"quoted phrase\", or -words to exclude"));
        }
        let fields = &self.schema.fields;
        let weights = &self.schema.weights[request.scope.weights_key()];
        let filters = query::Filters {
            tags: request.tags.iter().map(|t| t.trim().trim_start_matches('#').to_lowercase()).collect(),
            folder: request.folder.map(|folder| folder.as_str().to_owned()),
        };
        let searcher = self.reader.searcher();
        let limit = request.limit.max(1);
        let mut relaxed = false;
        let min_share = request.scope.min_share();
        let boosts = match request.scope {
            // Title fields weigh a word by its rarity among titles, where any word is
            // rare; the whole vault's text says how much a word tells.
            SearchScope::Knowledge => self.rarity_boosts(&searcher, &plan),
            // Body BM25 already weighs words by their rarity in the text.
            SearchScope::Content => std::collections::BTreeMap::new(),
        };
        let built = query::build(&plan, fields, weights, &filters, min_share, false, &boosts);
        let terms = plan.positive_terms();
        let executor = self.executor_for(&searcher, &terms);
        let (mut top, mut total) = self.run(&searcher, built.as_ref(), limit, executor)?;
        // Notes holding fewer of the words, ranked after those holding enough.
        let mut fill = Vec::new();
        if total < limit && !plan.words.is_empty() && min_share > 0.0 && plan.units().len() > 1 {
            let any = query::build(&plan, fields, weights, &filters, min_share, true, &boosts);
            let (more, any_total) = self.run(&searcher, any.as_ref(), limit, executor)?;
            if total == 0 {
                relaxed = true;
                (top, total) = (more, any_total);
            } else {
                let strict: BTreeSet<DocAddress> = top.iter().map(|(_, address)| *address).collect();
                fill = more.into_iter().filter(|(_, address)| !strict.contains(address)).collect();
                fill.truncate(limit - top.len());
                total = any_total;
            }
        } else if total == 0 && !plan.words.is_empty() {
            relaxed = true;
            let any = query::build(&plan, fields, weights, &filters, min_share, true, &boosts);
            (top, total) = self.run(&searcher, any.as_ref(), limit, executor)?;
        }
        let mut fuzzy = false;
        if total == 0
            && let Some(typo_tolerant) = query::build_fuzzy(&plan, fields, weights, &filters)
        {
            fuzzy = true;
            (top, total) = self.run(&searcher, typo_tolerant.as_ref(), limit, executor)?;
        }
        let strict_hits = top.len();
        let mut hits = Vec::with_capacity(top.len() + fill.len());
        for (score, address) in top.into_iter().chain(fill) {
            let doc: TantivyDocument =
                searcher.doc(address).map_err(|e| tantivy_error("reading a hit's stored record", e))?;
            let Some(record) = self.record_of(&doc) else { continue };
            let matched = matched_fields(&record, &terms);
            let explanation =
                request.explain.then(|| self.explain(&searcher, address, &plan, weights, relaxed));
            hits.push(SearchHit { record, score, matched, explanation });
        }
        // Equal scores come out in path order, so results are identical run to run.
        let order = |a: &SearchHit, b: &SearchHit| {
            b.score.total_cmp(&a.score).then_with(|| a.record.path.cmp(&b.record.path))
        };
        let strict_hits = strict_hits.min(hits.len());
        hits[..strict_hits].sort_by(order);
        hits[strict_hits..].sort_by(order);
        Ok(SearchOutcome { total, hits, terms, relaxed, fuzzy })
    }

    /// Each query term's boost from its informativeness in the note bodies.
    fn rarity_boosts(
        &self,
        searcher: &Searcher,
        plan: &query::QueryPlan,
    ) -> std::collections::BTreeMap<String, f32> {
        let units = plan.units();
        if units.len() < 2 {
            return std::collections::BTreeMap::new();
        }
        let documents = searcher.num_docs();
        let body = self.schema.fields.body;
        let informativeness = units
            .into_iter()
            .map(|unit| {
                let frequency = searcher.doc_freq(&Term::from_field_text(body, &unit)).unwrap_or(0);
                let info = query::informativeness(frequency, documents);
                (unit, info)
            })
            .collect();
        query::rarity_boosts(&informativeness)
    }

    /// Which fields and terms scored for one hit, each with its weighted BM25 share.
    /// (tantivy's own explanation of the whole boolean query trips an assertion in
    /// 0.27 with minimum-match clauses, and a flat list is easier to read anyway.)
    fn explain(
        &self,
        searcher: &Searcher,
        address: DocAddress,
        plan: &query::QueryPlan,
        weights: &[(Field, f32)],
        relaxed: bool,
    ) -> serde_json::Value {
        let schema = &self.schema.schema;
        let mut scored = Vec::new();
        for term_text in plan.positive_terms() {
            for &(field, weight) in weights.iter().filter(|(f, _)| *f != self.schema.fields.name_key) {
                let term_query = tantivy::query::TermQuery::new(
                    Term::from_field_text(field, &term_text),
                    tantivy::schema::IndexRecordOption::WithFreqs,
                );
                if let Ok(explanation) = term_query.explain(searcher, address) {
                    let score = explanation.value() * weight;
                    if score > 0.0 {
                        scored.push(serde_json::json!({
                            "field": schema.get_field_name(field),
                            "term": term_text,
                            "score": (score * 1000.0).round() / 1000.0,
                        }));
                    }
                }
            }
        }
        scored.sort_by(|a, b| {
            b["score"].as_f64().unwrap_or(0.0).total_cmp(&a["score"].as_f64().unwrap_or(0.0))
        });
        let exact = tantivy::query::TermQuery::new(
            Term::from_field_text(self.schema.fields.name_key, &plan.name_key),
            tantivy::schema::IndexRecordOption::Basic,
        )
        .explain(searcher, address)
        .is_ok();
        serde_json::json!({
            "terms": scored,
            "exact_name_match": exact,
            "any_term_mode": relaxed,
        })
    }

    fn run(
        &self,
        searcher: &Searcher,
        query: &dyn Query,
        limit: usize,
        executor: &Executor,
    ) -> Result<(Vec<(f32, DocAddress)>, usize)> {
        let collector = (TopDocs::with_limit(limit).order_by_score(), Count);
        let scoring = EnableScoring::enabled_from_searcher(searcher);
        searcher
            .search_with_executor(query, &collector, executor, scoring)
            .map_err(|e| tantivy_error("searching", e))
    }

    /// Where a content search runs: on several threads when its terms' postings
    /// in the note bodies (what it mostly walks) reach [`PARALLEL_POSTINGS`] and
    /// the index has several segments; on the calling thread otherwise.
    fn executor_for(&self, searcher: &Searcher, terms: &BTreeSet<String>) -> &Executor {
        const HERE: &Executor = &Executor::SingleThread;
        let Some(parallel) = &self.parallel else { return HERE };
        if searcher.segment_readers().len() < 2 {
            return HERE;
        }
        let body = self.schema.fields.body;
        let mut postings = 0;
        for term in terms {
            postings += searcher.doc_freq(&Term::from_field_text(body, term)).unwrap_or(0);
            if postings >= PARALLEL_POSTINGS {
                return parallel;
            }
        }
        HERE
    }
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

/// Which of a record's searchable fields contain any of the terms.
fn matched_fields(record: &NoteRecord, terms: &BTreeSet<String>) -> Vec<String> {
    let mut analyzer = tokenizer::index_analyzer();
    let mut hits =
        |text: &str| tokenizer::analyse(&mut analyzer, text).iter().any(|t| terms.contains(&t.text));
    let mut matched = Vec::new();
    if hits(&record.title) || hits(record.stem()) {
        matched.push("title".to_owned());
    }
    if record.aliases.iter().any(|a| hits(a)) {
        matched.push("aliases".to_owned());
    }
    if hits(&record.description) {
        matched.push("description".to_owned());
    }
    if record.tags.iter().any(|t| hits(&t.replace('/', " "))) {
        matched.push("tags".to_owned());
    }
    if record.headings.iter().any(|h| hits(h.text)) {
        matched.push("headings".to_owned());
    }
    matched
}

/// Adds documents to an update in progress; usable from many threads.
pub struct DocumentSink<'a> {
    writer: &'a IndexWriter,
    fields: &'a schema::Fields,
    added: std::sync::atomic::AtomicUsize,
}

impl DocumentSink<'_> {
    /// Replaces the document of `document.record.path` (deleting any older version).
    pub fn replace(&self, document: &IndexDocument) -> Result<()> {
        self.writer.delete_term(Term::from_field_text(self.fields.path, &document.record.path));
        self.add(document)
    }

    /// Adds a document (the caller knows the path is not indexed yet).
    pub fn add(&self, document: &IndexDocument) -> Result<()> {
        let doc = to_document(self.fields, document)?;
        self.writer.add_document(doc).map_err(|e| tantivy_error("adding a document", e))?;
        self.added.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        Ok(())
    }
}

fn to_document(fields: &schema::Fields, document: &IndexDocument) -> Result<TantivyDocument> {
    let record = &document.record;
    let mut doc = TantivyDocument::new();
    let text = |doc: &mut TantivyDocument, field: Field, value: &str| doc.add_text(field, value);
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
    let json =
        serde_json::to_string(record).map_err(|e| Error::internal(format!("serialising a record: {e}")))?;
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
pub fn check_schema() -> std::result::Result<(), String> {
    schema::build().map(|_| ())
}

/// Bytes used by the files of a folder (the index size on disk).
pub fn folder_size(dir: &Path) -> u64 {
    sandbox::folder_size(dir)
}
