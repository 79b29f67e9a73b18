//! The engine: the library's boundary, plain data in and out.
//!
//! An [`Engine`] owns one vault: its sandbox, its configuration, its index and a
//! catalog snapshot of every note's record (`catalog.rs`), none of which it
//! hands out. It keeps the index in step with the files ([`Engine::sync`]) and
//! answers every tool of the contract as a plain method. There is no MCP, no JSON Schema validation and no async here:
//! the tools layer and the CLI both call these methods, so their behaviour and
//! their checks cannot drift apart. Methods block (tantivy, rayon, disk I/O);
//! async callers run them on a blocking thread.

mod apply_index;
mod audit;
mod batch;
mod bounded;
mod catalog;
mod changes;
mod conventions;
mod cursor;
mod helped;
mod history;
mod linkers;
mod list;
mod memory;
mod pdf;
mod person;
mod read;
mod recall;
mod replica;
mod restore;
mod review;
mod semantic;
mod sync;
pub mod timing;
pub mod types;
mod write;

pub use conventions::{
    CONVENTIONS_SKILL_DESCRIPTION, CONVENTIONS_SKILL_MAX_BYTES, CONVENTIONS_SKILL_NAME, skill_frontmatter,
};
pub use history::HistoryReport;
pub use memory::{ENTRY_MAX_BYTES, MEMORY_MAX_BYTES, MEMORY_MAX_ENTRIES};
pub use pdf::{
    CHILD_CPU_SECONDS, CHILD_MEMORY_MAX, EXTRACT_TIMEOUT, PDF_MAX_BYTES, PdfExtractor, extract_pdf_child,
};
pub use person::{NoteHit, NoteResults, PERSON_LIMIT};
pub use recall::estimate_tokens;
pub use replica::{ApplyFailpoint, ApplyPoint, ReplicaReport, ReplicaStep};
pub use review::{
    CONFIRMATION_DIFF_LINES, FileDiff, PendingOverlap, ProposalReview, REVIEW_PAGE_DIFF_LINES,
    REVIEW_PAGE_FILES, REVIEW_PAGE_MAX_FILES, ReviewPage,
};
pub use semantic::{EmbedPace, EmbedReport};
pub use sync::{RECHECK_EVERY, SyncReport};

pub(crate) use catalog::Catalog;
use catalog::catalog_records;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::atomic::AtomicBool;
use std::sync::{Arc, Mutex, OnceLock, RwLock};
use std::time::{Duration, Instant};

use crate::error::{Error, Result};
use crate::index::SearchIndex;
use crate::sandbox::{IndexAccess, Policy, Sandbox, read_template_settings, read_vault_config};
use crate::vault::VaultConfig;
use types::IndexLocation;

/// How a vault is opened.
#[derive(Debug, Clone)]
pub struct EngineOptions {
    /// The vault folder.
    pub vault: PathBuf,
    /// Where the index lives; `<vault>/.kb` when `None`.
    pub index_dir: Option<PathBuf>,
}

/// The configuration in force and the sandbox built from its policy, swapped
/// together when `kb.toml` changes (see [`Engine::refresh_config`]).
#[derive(Debug, Clone)]
struct Settings {
    sandbox: Arc<Sandbox>,
    config: Arc<VaultConfig>,
}

/// What `kb.toml` held when it was last looked at.
#[derive(Debug)]
struct ConfigSeen {
    /// The text last read (`None`: no file); `Err(())` when it must be read and
    /// applied again (a change could not be completed).
    text: std::result::Result<Option<String>, ()>,
    /// Why calls must fail now (an invalid `kb.toml`), if they must.
    error: Option<Error>,
    /// The texts of Obsidian's templates settings last read (see
    /// [`read_template_settings`]): they name the folder left out as templates.
    templates: [Option<String>; 2],
}

/// One vault, opened.
pub struct Engine {
    /// The canonical vault root (it never changes).
    root: PathBuf,
    settings: RwLock<Settings>,
    /// Serialises configuration changes; held while one is brought into force.
    config_seen: Mutex<ConfigSeen>,
    index: SearchIndex,
    catalog: RwLock<Arc<Catalog>>,
    /// Serialises syncs within this process.
    syncing: Mutex<()>,
    /// When the reader last looked for other processes' commits.
    last_reload: Mutex<Instant>,
    /// The index commit the catalog reflects; another value means another process
    /// committed and the catalog must be re-read from the index.
    catalog_opstamp: Mutex<u64>,
    /// Whether the last walk met notes reached through symlinks (then a changed
    /// path alone cannot say which notes changed).
    linked_notes: AtomicBool,
    /// Markdown files that cannot be served as notes (not UTF-8, unreadable),
    /// by path, as they were when last read (see [`sync::Unreadable`]).
    unreadable: Mutex<BTreeMap<String, sync::Unreadable>>,
    /// Why the index was rebuilt while opening (or, opened without creating,
    /// why it could not be opened).
    index_repaired: Option<String>,
    /// Whether a walk has compared the files with the index since this engine
    /// was opened; until then searches say their answer may be stale.
    caught_up: AtomicBool,
    /// Set once the catalog holds the stored records: at once, or (opened
    /// with [`Engine::open_to_serve`]) when first needed; the error when they
    /// could not be read.
    catalog_loaded: OnceLock<Result<()>>,
    /// What each note's prose mentions, kept between audits (see `audit/mentions/`).
    mentions: audit::MentionCache,
    /// The findings of the last audit, for its next pages (see `audit/mod.rs`).
    last_audit: audit::LastAudit,
    /// How PDFs' text is extracted and kept (see `pdf.rs`).
    pdf: pdf::PdfTexts,
    /// The notes' embeddings and the models in force (see `semantic/`).
    semantic: semantic::SemanticLayer,
    /// The vault's history (see `history.rs`).
    history: history::HistoryLayer,
    /// The clone's agreement with its remote (see `replica.rs`).
    replica: replica::ReplicaLayer,
    /// The memory folders read so far, indexed (see `memory.rs`).
    memory: memory::MemoryShelves,
    /// The last walk that found the index fresh, kept true by the watcher
    /// (see `sync/verified.rs`).
    verification: sync::Verification,
}

impl std::fmt::Debug for Engine {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Engine").field("vault", &self.root()).finish_non_exhaustive()
    }
}

/// How often searches look for commits made by other processes.
const RELOAD_EVERY: Duration = Duration::from_millis(250);

impl Engine {
    /// Opens a vault: reads `kb.toml`, opens the sandbox and the index, and loads
    /// the records the index holds. Does not read the notes (see [`Engine::sync`]).
    ///
    /// The index folder is checked first (see `Sandbox::claim_index_folder`);
    /// an index that cannot be opened is rebuilt from scratch, and
    /// [`Engine::index_location`]'s `repaired` says why.
    pub fn open(options: &EngineOptions) -> Result<Engine> {
        Self::open_with(options, IndexAccess::Create, true)
    }

    /// [`Engine::open`] for a server that searches at once: an existing index
    /// is opened without decoding its stored records (searches read only their
    /// hits'); the catalog is filled when first needed, or by
    /// [`Engine::load_catalog`], which says when the records cannot be read
    /// (then [`Engine::open`] checks the index again and rebuilds it).
    pub fn open_to_serve(options: &EngineOptions) -> Result<Engine> {
        Self::open_with(options, IndexAccess::Create, false)
    }

    /// Opens a vault without creating or repairing anything (`kb-index status`):
    /// when there is no index, or it cannot be opened, the engine starts from an
    /// empty index in memory and [`Engine::index_location`]'s `repaired` says what is wrong.
    pub fn open_existing(options: &EngineOptions) -> Result<Engine> {
        Self::open_with(options, IndexAccess::Existing, true)
    }

    fn open_with(options: &EngineOptions, access: IndexAccess, decode_records: bool) -> Result<Engine> {
        let text = read_vault_config(&options.vault)?;
        let config = VaultConfig::parse(text.as_deref())?;
        let templates = read_template_settings(&options.vault);
        let sandbox = open_sandbox(&options.vault, config.policy.clone(), &templates)?;
        let folder = sandbox.claim_index_folder(options.index_dir.as_deref(), access)?;
        let opened =
            if decode_records { SearchIndex::open(folder)? } else { SearchIndex::open_to_serve(folder)? };
        let index = opened.index;
        // Read before the records: a commit in between makes the catalog read them again.
        let opstamp = index.committed_opstamp();
        let records = catalog_records(opened.records);
        let catalog = Catalog::new(records, Vec::new());
        let catalog_loaded = OnceLock::new();
        if !opened.records_deferred {
            let _ = catalog_loaded.set(Ok(()));
        }
        Ok(Engine {
            root: sandbox.root().to_owned(),
            settings: RwLock::new(Settings { sandbox: Arc::new(sandbox), config: Arc::new(config) }),
            config_seen: Mutex::new(ConfigSeen { text: Ok(text), error: None, templates }),
            index_repaired: opened.repaired,
            index,
            catalog: RwLock::new(Arc::new(catalog)),
            syncing: Mutex::new(()),
            last_reload: Mutex::new(Instant::now()),
            catalog_opstamp: Mutex::new(opstamp),
            linked_notes: AtomicBool::new(false),
            unreadable: Mutex::new(BTreeMap::new()),
            caught_up: AtomicBool::new(false),
            catalog_loaded,
            mentions: audit::MentionCache::default(),
            last_audit: audit::LastAudit::default(),
            pdf: pdf::PdfTexts::default(),
            semantic: semantic::SemanticLayer::default(),
            history: history::HistoryLayer::default(),
            replica: replica::ReplicaLayer::default(),
            memory: memory::MemoryShelves::default(),
            verification: sync::Verification::default(),
        })
    }

    /// Sets how PDFs' text is extracted (see [`PdfExtractor`]); until then
    /// PDFs are skipped, each with a reason saying so.
    pub fn set_pdf_extractor(&self, extractor: PdfExtractor) {
        self.pdf.set(extractor);
    }

    /// The vault root.
    pub fn root(&self) -> &Path {
        &self.root
    }

    fn settings(&self) -> Settings {
        self.settings.read().unwrap_or_else(|p| p.into_inner()).clone()
    }

    /// The sandbox in force (for the write layer). A configuration change swaps
    /// in a new one; callers keep the one they got for one operation.
    pub(crate) fn sandbox(&self) -> Arc<Sandbox> {
        self.settings().sandbox
    }

    /// The configuration in force.
    pub(crate) fn config(&self) -> Arc<VaultConfig> {
        self.settings().config
    }

    /// The policy in force.
    pub fn policy(&self) -> Policy {
        self.sandbox().policy().clone()
    }

    /// Puts the `kb.toml` on disk in force before a call is answered, so that a
    /// call is never served with a weaker configuration than the one on disk.
    /// Reading the file (a few hundred bytes) is cheap; when its text is what was
    /// last applied, nothing else happens. When it changed: an invalid file makes
    /// this and every later call fail with its error (naming the line and column)
    /// until it is fixed; a valid one is swapped in and, when it changed what may
    /// be read, the index is brought in line (notes now denied are dropped, notes
    /// now allowed are added) before any call goes on. Calls arriving meanwhile
    /// wait. Returns whether a new configuration came into force.
    ///
    /// Obsidian's templates settings (`.obsidian/templates.json`, Templater's
    /// `data.json`), which name the folder left out as templates, are looked at
    /// the same way: a change to them is put in force before the call goes on.
    pub fn refresh_config(&self) -> Result<bool> {
        let mut seen = self.config_seen.lock().unwrap_or_else(|p| p.into_inner());
        let text = match read_vault_config(&self.root) {
            Ok(text) => text,
            Err(error) => {
                // Unreadable now: refuse rather than serve what may be outdated, and
                // read it again next time.
                seen.text = Err(());
                return Err(error.with_hint("fix kb.toml; calls are refused until it can be read"));
            }
        };
        let templates = read_template_settings(&self.root);
        let templates_changed = seen.templates != templates;
        if seen.text.as_ref() == Ok(&text) && (!templates_changed || seen.error.is_some()) {
            // An invalid kb.toml is reported first; once it is fixed, the
            // templates settings are read again with it.
            return seen.error.clone().map_or(Ok(false), Err);
        }
        // After a change that could not be completed, everything is built again.
        let rebuild = templates_changed || seen.text.is_err();
        let current = self.settings();
        let config = if seen.text.as_ref() == Ok(&text) {
            current.config.clone()
        } else {
            seen.text = Ok(text.clone());
            match VaultConfig::parse(text.as_deref()) {
                Ok(config) => Arc::new(config),
                Err(error) => {
                    seen.error = Some(error.clone());
                    return Err(error);
                }
            }
        };
        seen.error = None;
        seen.templates = templates.clone();
        if current.config.policy == config.policy && !rebuild {
            let mut settings = self.settings.write().unwrap_or_else(|p| p.into_inner());
            settings.config = config;
            return Ok(true);
        }
        let sandbox = open_sandbox(&self.root, config.policy.clone(), &templates);
        let sandbox = match sandbox {
            Ok(sandbox) => sandbox,
            Err(error) => {
                seen.text = Err(());
                return Err(error);
            }
        };
        // The last walk looked at other folders.
        self.verification.forget();
        *self.settings.write().unwrap_or_else(|p| p.into_inner()) =
            Settings { sandbox: Arc::new(sandbox), config };
        if let Err(error) = self.sync(false, None) {
            // The index may still list notes the new rules deny: refuse until a
            // later call completes the change.
            seen.text = Err(());
            return Err(Error::new(
                error.code,
                format!(
                    "kb.toml changed, and the index could not be brought in line with it: {}",
                    error.message
                ),
            )
            .with_hint("retry; calls are refused until the new configuration is fully in force"));
        }
        Ok(true)
    }

    /// The index (the engine's own; callers outside ask the methods below).
    pub(crate) fn index(&self) -> &SearchIndex {
        &self.index
    }

    /// Where the index lives and what state its folder is in.
    pub fn index_location(&self) -> IndexLocation {
        IndexLocation {
            dir: self.index.dir().to_owned(),
            exists: self.index.folder().exists(),
            moved: self.index.folder().moved().map(str::to_owned),
            read_only: self.index.read_only().map(str::to_owned),
            repaired: self.index_repaired.clone(),
        }
    }

    /// Bytes the index's files take on disk.
    pub fn index_size(&self) -> u64 {
        crate::index::folder_size(self.index.dir())
    }

    /// Segments a search sees now, after taking in commits made meanwhile
    /// (background merges included): small updates add one each until merged.
    pub fn index_segments(&self) -> Result<usize> {
        self.index.reload()?;
        Ok(self.index.segment_count())
    }

    /// Why a sync found no notes, for a warning: a notes folder `kb.toml` names
    /// that does not exist, or no Markdown files where notes are looked for.
    pub fn why_no_notes(&self) -> String {
        let sandbox = self.sandbox();
        let policy = sandbox.policy();
        let missing: Vec<&str> = policy
            .notes
            .iter()
            .filter(|folder| !folder.is_empty())
            .filter(|folder| {
                crate::sandbox::NotePath::parse_folder(folder)
                    .ok()
                    .flatten()
                    .is_none_or(|path| !sandbox.is_folder(&path))
            })
            .map(String::as_str)
            .collect();
        let root = self.root().display();
        if !missing.is_empty() {
            return format!(
                "kb.toml names the notes folder{} `{}`, which {} not exist in {root}; fix `notes` in kb.toml's [vault] section",
                if missing.len() > 1 { "s" } else { "" },
                missing.join("`, `"),
                if missing.len() > 1 { "do" } else { "does" }
            );
        }
        if policy.notes.iter().any(String::is_empty) {
            format!(
                "{root} holds no Markdown (.md) notes outside its hidden and denied folders; is this the right vault?"
            )
        } else {
            format!(
                "the notes folders `{}` hold no Markdown (.md) files; is this the right vault?",
                policy.notes.join("`, `")
            )
        }
    }

    /// Whether the index holds any note (without reading the records).
    pub fn has_indexed_notes(&self) -> bool {
        self.index.meta().documents > 0
    }

    /// Whether a walk has compared the files with the index since the vault was
    /// opened (a successful [`Engine::sync`]). Until then the index is what an
    /// earlier process left: notes added or changed meanwhile may be missing.
    pub(crate) fn caught_up(&self) -> bool {
        self.caught_up.load(std::sync::atomic::Ordering::Acquire)
    }

    /// The `stale` notice a search answer carries while the index has not caught up.
    pub(crate) fn stale_notice(&self) -> Option<String> {
        (!self.caught_up()).then(|| {
            "the index has not yet caught up with the files (the server is still comparing them after its start): \
             notes added or changed since the index was last updated may be missing; ask again in a moment"
                .to_owned()
        })
    }

    /// Picks up index commits made by other processes, at most every 250 ms.
    fn reload_if_due(&self) -> Result<()> {
        let mut last = self.last_reload.lock().unwrap_or_else(|p| p.into_inner());
        if last.elapsed() >= RELOAD_EVERY {
            *last = Instant::now();
            drop(last);
            timing::time("reload", || self.index.reload())?;
        }
        Ok(())
    }
}

/// The sandbox of a vault under a policy, leaving out the templates folders that
/// Obsidian's settings (their texts: `templates`) name.
fn open_sandbox(root: &Path, policy: Policy, templates: &[Option<String>]) -> Result<Sandbox> {
    let sandbox = Sandbox::open(root, policy)?;
    Ok(sandbox.with_templates(crate::vault::templates_folders(templates)))
}

/// Requires exactly one of `path` and `ref`.
pub(crate) fn one_of(path: Option<&str>, reference: Option<&str>) -> Result<NoteName> {
    match (path.filter(|p| !p.is_empty()), reference.filter(|r| !r.is_empty())) {
        (Some(path), None) => Ok(NoteName::Path(path.to_owned())),
        (None, Some(reference)) => Ok(NoteName::Ref(reference.to_owned())),
        (Some(_), Some(_)) => Err(Error::invalid("give either `path` or `ref`, not both")),
        (None, None) => {
            Err(Error::invalid("give `path` (a vault-relative path) or `ref` (a wikilink target)")
                .with_hint("e.g. {\"path\": \"z/备份仓库.md\"} or {\"ref\": \"备份仓库\"}"))
        }
    }
}

/// How a tool named a note.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum NoteName {
    /// An exact vault-relative path.
    Path(String),
    /// A wikilink target.
    Ref(String),
}
