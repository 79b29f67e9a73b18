//! Opening an index folder: probing what it holds (empty, working, damaged,
//! read-only), rebuilding a damaged one that is provably kb-mcp's own, and
//! serving a folder that does not exist as an empty index in memory.

use std::path::Path;
use std::sync::{Arc, Mutex};

use tantivy::{Executor, Index, IndexReader, ReloadPolicy, TantivyError};

use super::errors::{folder_error, tantivy_error, tantivy_read_only};
use super::language_column::LanguageColumns;
use super::read_only;
use super::schema;
use super::schema::IndexSchema;
use super::search::SEARCH_THREADS;
use super::tokenizer;
use super::{Payload, SearchIndex, read_records};
use crate::error::Result;
use crate::sandbox;
use crate::vault::NoteRecord;

/// Decompressed blocks of stored records the searcher keeps, per segment.
/// tantivy keeps 100 (each about 16 KiB): up to 25 MiB for a 16-segment
/// index that a search (ten hits) hardly ever reads twice.
const DOC_STORE_CACHE_BLOCKS: usize = 8;

/// The index of a vault, opened, with the records it holds.
pub struct OpenedIndex {
    /// The index.
    pub index: SearchIndex,
    /// Every stored record (the manifest), sorted by path.
    pub records: Vec<NoteRecord>,
    /// Why the index was rebuilt from scratch while opening (it was damaged or
    /// made by another schema), when it was: one line for the log.
    pub repaired: Option<String>,
    /// Whether the stored records were left undecoded ([`SearchIndex::open_to_serve`]):
    /// `records` is then empty and [`SearchIndex::records`] reads them.
    pub records_deferred: bool,
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
        Self::open_reading(folder, true)
    }

    /// [`SearchIndex::open`] for a server that answers searches at once: an
    /// index that opens is served without decoding its stored records (about
    /// 100 ms per 10k notes), which the caller reads afterwards
    /// ([`SearchIndex::records`]); damage among them shows then, not now.
    pub fn open_to_serve(folder: sandbox::IndexFolder) -> Result<OpenedIndex> {
        Self::open_reading(folder, false)
    }

    fn open_reading(folder: sandbox::IndexFolder, decode_records: bool) -> Result<OpenedIndex> {
        let schema = schema::build()?;
        let dir = folder.path().to_owned();
        if !folder.exists() {
            let index = Index::create_in_ram(schema.schema.clone());
            let index = Self::finish(index, schema, folder)?;
            return Ok(OpenedIndex { index, records: Vec::new(), repaired: None, records_deferred: false });
        }
        let mut folder = folder;
        let guarded = |read_only: bool| {
            std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                Self::probe(&folder, &schema, read_only, decode_records)
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
                let records_deferred = !decode_records;
                return Ok(OpenedIndex { index: this, records, repaired: None, records_deferred });
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
                return Ok(OpenedIndex {
                    index,
                    records: Vec::new(),
                    repaired: damage,
                    records_deferred: false,
                });
            }
            Probe::Empty => (Self::create(&dir, &schema)?, Vec::new(), None),
            Probe::Unusable(reason) => {
                folder.clear()?;
                (Self::create(&dir, &schema)?, Vec::new(), Some(reason))
            }
        };
        let index = Self::finish(index, schema, folder)?;
        Ok(OpenedIndex { index, records, repaired, records_deferred: false })
    }

    /// Opens what the folder holds and (with `decode_records`) reads every stored
    /// record, so that any damage shows now rather than in the middle of a call.
    fn probe(
        folder: &sandbox::IndexFolder,
        schema: &IndexSchema,
        read_only: bool,
        decode_records: bool,
    ) -> Probe {
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
        if !decode_records {
            return Probe::Working(index, reader, Vec::new());
        }
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
        let languages = Arc::new(LanguageColumns::new(schema.schema.get_field_name(schema.fields.language)));
        Ok(SearchIndex {
            index,
            reader,
            schema,
            dir,
            folder,
            read_only: None,
            writing: Mutex::new(()),
            parallel,
            field_stats: super::query::FieldStatsCache::default(),
            languages,
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
}
