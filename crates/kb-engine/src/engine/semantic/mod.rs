//! The semantic layer kept by the engine: the models `kb.toml` puts in force,
//! the vectors of every note they read, and bringing those up to date.
//!
//! Embedding is slow beside indexing (milliseconds a section against
//! microseconds), so it never holds a search: the lexical index is served
//! first, a caller (the server's background thread, `kb-index build`) runs
//! [`Engine::embed_pending`], and a search ranks by meaning only once a first
//! pass over the vault is complete, saying `lexical` and why until then. A
//! pass reuses the vectors of every note whose content is unchanged, and
//! within a changed note those of its unchanged sections (`hybrid.rs` holds
//! what a query does with them). A model change (another bundled revision, the
//! person's own model or its languages) starts over in a file of its own.

mod hybrid;

pub(crate) use hybrid::RankingPlan;

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, PoisonError, RwLock, Weak};

use rayon::prelude::*;

use super::{Catalog, Engine};
use crate::error::Result;
use crate::index::semantic::{Model, ModelFiles, Vectors, chunks_of, is_language, language_of};
use crate::sandbox::{NotePath, read_model_folder};
use crate::vault::{NoteKind, SemanticConfig, decode_note};

/// How a pass goes: notes planned and embedded per step (bounds the texts
/// held at once), and how often a long pass keeps what it has embedded so far,
/// so that a kill or a shutdown costs at most that much of it.
#[derive(Debug, Clone, Copy)]
pub struct EmbedPace {
    /// Notes per step.
    pub notes_per_step: usize,
    /// Time between two keepings (at a step's end).
    pub keep_every: std::time::Duration,
}

impl Default for EmbedPace {
    /// A thousand notes a step; kept every five minutes (at 100,000 notes a
    /// keeping writes about 200 MB: less often would lose more, more often
    /// would write the store over and over).
    fn default() -> EmbedPace {
        EmbedPace { notes_per_step: 1_000, keep_every: std::time::Duration::from_secs(300) }
    }
}

/// Sections embedded per task (small enough to spread a few notes over the cores).
const EMBED_BATCH: usize = 8;

/// Largest note read for embedding (its first sections are all that count).
const FILE_MAX: u64 = 8 * 1024 * 1024;

/// What a pass did, for `kb-index build` and the tests.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct EmbedReport {
    /// Notes the models read (with vectors).
    pub notes: usize,
    /// Sections with vectors after the pass.
    pub sections: usize,
    /// Sections embedded by this pass (the rest were reused).
    pub embedded: usize,
    /// Notes no model reads (their language has none): lexical only.
    pub unread: usize,
    /// Why nothing was done, when nothing was: the layer is off, or its model
    /// did not load.
    pub skipped: Option<String>,
}

/// The models for one configuration, loaded once.
struct Loaded {
    config: SemanticConfig,
    models: std::result::Result<Vec<Arc<Model>>, String>,
}

/// The vectors searches use: one store per model in force, complete.
pub(crate) struct Stores {
    pub(crate) models: Vec<Arc<Model>>,
    pub(crate) vectors: Vec<Arc<Vectors>>,
}

/// How far the pass under way is.
#[derive(Debug, Clone, Copy, Default)]
struct Progress {
    done: usize,
    total: usize,
}

/// The engine's semantic state.
#[derive(Default)]
pub(crate) struct SemanticLayer {
    loaded: Mutex<Option<Loaded>>,
    stores: RwLock<Option<Arc<Stores>>>,
    /// Serialises passes.
    building: Mutex<()>,
    progress: Mutex<Progress>,
    /// The catalog and configuration of the last complete pass.
    embedded: Mutex<(Weak<Catalog>, Option<SemanticConfig>)>,
    /// Set when the caller asked every search to stay lexical (`kb-index eval --lexical`).
    unwanted: std::sync::atomic::AtomicBool,
}

impl SemanticLayer {
    /// The stores searches use, when a pass completed for the models in force.
    pub(crate) fn stores(&self) -> Option<Arc<Stores>> {
        self.stores.read().unwrap_or_else(PoisonError::into_inner).clone()
    }

    fn progress(&self) -> Progress {
        *self.progress.lock().unwrap_or_else(PoisonError::into_inner)
    }

    fn set_progress(&self, done: usize, total: usize) {
        *self.progress.lock().unwrap_or_else(PoisonError::into_inner) = Progress { done, total };
    }

    /// The models `config` puts in force (the person's own first, then the
    /// bundled one), loaded when the configuration is new.
    fn models(&self, config: &SemanticConfig, vault: &Path) -> std::result::Result<Vec<Arc<Model>>, String> {
        let mut loaded = self.loaded.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some(loaded) = loaded.as_ref().filter(|l| &l.config == config) {
            return loaded.models.clone();
        }
        let models = load_models(config, vault).map_err(|e| e.to_string());
        *loaded = Some(Loaded { config: config.clone(), models: models.clone() });
        models
    }

    /// The load error of the configuration in force, if it failed.
    fn load_error(&self, config: &SemanticConfig) -> Option<String> {
        let loaded = self.loaded.lock().unwrap_or_else(PoisonError::into_inner);
        loaded.as_ref().filter(|l| &l.config == config).and_then(|l| l.models.as_ref().err().cloned())
    }
}

/// Loads the models of `config`.
fn load_models(config: &SemanticConfig, vault: &Path) -> Result<Vec<Arc<Model>>> {
    let mut models = Vec::new();
    if let Some(folder) = &config.model {
        if let Some(unknown) = config.languages.iter().find(|code| !is_language(code)) {
            return Err(crate::error::Error::invalid(format!(
                "`[semantic] languages` in kb.toml: kb-mcp does not tell `{unknown}` apart"
            ))
            .with_hint("list languages by their codes, such as \"zh\", \"ja\", \"ko\", \"de\""));
        }
        let [tokenizer, weights, config_file] = read_model_folder(&model_folder(folder, vault))?;
        let files = ModelFiles { tokenizer, weights, config: config_file };
        models.push(Arc::new(Model::own(&files, &config.languages)?));
    }
    models.push(Arc::new(Model::bundled()?));
    Ok(models)
}

/// `[semantic] model` as a folder: `~/` is the home folder, a relative path
/// is the vault's.
fn model_folder(raw: &str, vault: &Path) -> PathBuf {
    if let Some(rest) = raw.strip_prefix("~/")
        && let Some(home) = std::env::var_os("HOME").or_else(|| std::env::var_os("USERPROFILE"))
    {
        return PathBuf::from(home).join(rest);
    }
    let path = PathBuf::from(raw);
    if path.is_absolute() { path } else { vault.join(path) }
}

/// One note's share of a pass.
struct NotePlan {
    path: Arc<str>,
    hash: String,
    /// The model that reads it (index into the models), if any.
    model: Option<usize>,
    sections: Vec<SectionPlan>,
}

/// One section: a vector kept (which store, which row) or to embed.
enum SectionPlan {
    Kept { store: usize, row: usize, line: u32 },
    Embed { line: u32, hash: u128, text: String },
}

impl Engine {
    /// Whether searches may rank by meaning (true unless a caller, such as
    /// `kb-index eval --lexical`, asks every search to stay lexical).
    pub fn set_semantic_wanted(&self, wanted: bool) {
        self.semantic.unwanted.store(!wanted, std::sync::atomic::Ordering::Relaxed);
    }

    /// Whether vectors of the models in force are kept beside the index (an
    /// earlier pass completed here): then a pass only embeds what changed.
    pub fn has_kept_embeddings(&self) -> bool {
        let config = self.config().semantic.clone();
        if !config.enabled {
            return false;
        }
        match self.semantic.models(&config, self.root()) {
            Ok(models) => {
                models.iter().any(|m| self.index.folder().read_embeddings(m.key(), false).is_some())
            }
            Err(_) => false,
        }
    }

    /// Whether the vectors lag the notes or the configuration (a pass is due).
    pub fn embedding_due(&self) -> bool {
        let config = self.config().semantic.clone();
        if !config.enabled {
            return self.semantic.stores().is_some();
        }
        if self.semantic.load_error(&config).is_some() {
            return false;
        }
        let catalog = self.catalog();
        let embedded = self.semantic.embedded.lock().unwrap_or_else(PoisonError::into_inner);
        let same_notes = embedded.0.upgrade().is_some_and(|done| Arc::ptr_eq(&done, &catalog));
        !(same_notes && embedded.1.as_ref() == Some(&config))
    }

    /// Brings the vectors up to date with the notes: embeds the sections of
    /// notes added or changed since the last pass (reusing every unchanged
    /// section's vector), drops those of removed notes, keeps the result
    /// beside the index and puts it in force for searches. `progress` hears
    /// (sections done, sections to embed) as it goes. Blocks for as long as
    /// embedding takes: callers run it off the request path.
    pub fn embed_pending(&self, progress: &(dyn Fn(usize, usize) + Sync)) -> Result<EmbedReport> {
        self.embed_pending_at(progress, EmbedPace::default())
    }

    /// [`Engine::embed_pending`] at another pace (tests take small steps).
    pub fn embed_pending_at(
        &self,
        progress: &(dyn Fn(usize, usize) + Sync),
        pace: EmbedPace,
    ) -> Result<EmbedReport> {
        let _pass = self.semantic.building.lock().unwrap_or_else(PoisonError::into_inner);
        let config = self.config().semantic.clone();
        if !config.enabled {
            *self.semantic.stores.write().unwrap_or_else(PoisonError::into_inner) = None;
            return Ok(EmbedReport { skipped: Some("off".into()), ..EmbedReport::default() });
        }
        let models = match self.semantic.models(&config, self.root()) {
            Ok(models) => models,
            Err(error) => return Ok(EmbedReport { skipped: Some(error), ..EmbedReport::default() }),
        };
        let catalog = self.catalog();
        let folder = self.index.folder();
        // Each model's store so far: in force, else kept complete, else what
        // a pass cut short kept (then it must be kept complete at the end).
        let mut started_from_partial = vec![false; models.len()];
        let olds: Vec<Arc<Vectors>> = models
            .iter()
            .zip(&mut started_from_partial)
            .map(|(model, from_partial)| {
                let current = self
                    .semantic
                    .stores()
                    .and_then(|stores| stores.vectors.iter().find(|v| v.model() == model.id()).cloned());
                let kept = |partial: bool| {
                    let bytes = folder.read_embeddings(model.key(), partial)?;
                    Vectors::from_bytes(&bytes, model.id()).map(Arc::new)
                };
                current
                    .or_else(|| kept(false))
                    .or_else(|| {
                        *from_partial = true;
                        kept(true)
                    })
                    .unwrap_or_else(|| Arc::new(Vectors::new(model.id())))
            })
            .collect();
        let notes: Vec<_> = catalog
            .records()
            .iter()
            .filter(|r| {
                r.kind == NoteKind::Note
                    && !crate::vault::is_pdf(&r.path)
                    && !crate::vault::is_canvas(&r.path)
            })
            .cloned()
            .collect();
        let mut news: Vec<Vectors> = models.iter().map(|m| Vectors::new(m.id())).collect();
        let mut report = EmbedReport::default();
        let sandbox = self.sandbox();
        let mut kept_at = std::time::Instant::now();
        for step in notes.chunks(pace.notes_per_step.max(1)) {
            let plans: Vec<NotePlan> = step
                .par_iter()
                .map(|record| {
                    let path: Arc<str> = Arc::from(record.path.as_str());
                    // Unchanged since the last pass: every store saw it at this content.
                    let unchanged =
                        olds.iter().all(|old| old.note(&path).is_some_and(|n| n.hash == record.hash));
                    if unchanged {
                        let found = olds
                            .iter()
                            .enumerate()
                            .find(|(_, old)| old.note(&path).is_some_and(|n| !n.rows.is_empty()));
                        let sections = match found {
                            Some((store, old)) => {
                                let rows = old.note(&path).map(|n| n.rows.clone()).unwrap_or_default();
                                rows.map(|row| SectionPlan::Kept { store, row, line: old.rows()[row].line })
                                    .collect()
                            }
                            None => Vec::new(),
                        };
                        return NotePlan {
                            path,
                            hash: record.hash.clone(),
                            model: found.map(|(i, _)| i),
                            sections,
                        };
                    }
                    let text = NotePath::parse(&record.path)
                        .ok()
                        .and_then(|p| sandbox.read(&p, FILE_MAX).ok())
                        .and_then(|bytes| decode_note(&bytes).ok().map(str::to_owned))
                        .unwrap_or_default();
                    let language = language_of(&text[crate::vault::body_offset(&text).min(text.len())..]);
                    let model = models.iter().position(|m| m.covers(language));
                    let sections = match model {
                        None => Vec::new(),
                        Some(m) => {
                            let kept = olds[m].by_hash();
                            chunks_of(&record.title, &record.description, &text)
                                .into_iter()
                                .map(|chunk| match kept.get(&chunk.hash) {
                                    Some(&row) => SectionPlan::Kept { store: m, row, line: chunk.line },
                                    None => SectionPlan::Embed {
                                        line: chunk.line,
                                        hash: chunk.hash,
                                        text: chunk.text,
                                    },
                                })
                                .collect()
                        }
                    };
                    NotePlan { path, hash: record.hash.clone(), model, sections }
                })
                .collect();
            // Embed what is new, per model, in batches spread over the cores.
            let mut embedded: Vec<Vec<Vec<f32>>> = vec![Vec::new(); plans.len()];
            for (m, model) in models.iter().enumerate() {
                let wanted: Vec<(usize, &String)> = plans
                    .iter()
                    .enumerate()
                    .filter(|(_, plan)| plan.model == Some(m))
                    .flat_map(|(i, plan)| {
                        plan.sections.iter().filter_map(move |s| match s {
                            SectionPlan::Embed { text, .. } => Some((i, text)),
                            SectionPlan::Kept { .. } => None,
                        })
                    })
                    .collect();
                if wanted.is_empty() {
                    continue;
                }
                let total = self.semantic.progress().total.max(report.embedded + wanted.len());
                let done = std::sync::atomic::AtomicUsize::new(report.embedded);
                let vectors: Vec<Vec<f32>> = wanted
                    .par_chunks(EMBED_BATCH)
                    .map(|batch| {
                        let texts: Vec<String> = batch.iter().map(|(_, text)| (*text).clone()).collect();
                        let vectors = model.embed(&texts)?;
                        let now = done.fetch_add(vectors.len(), std::sync::atomic::Ordering::Relaxed)
                            + vectors.len();
                        self.semantic.set_progress(now, total);
                        progress(now, total);
                        Ok(vectors)
                    })
                    .collect::<Result<Vec<_>>>()?
                    .into_iter()
                    .flatten()
                    .collect();
                report.embedded += vectors.len();
                for ((i, _), vector) in wanted.iter().zip(vectors) {
                    embedded[*i].push(vector);
                }
            }
            // Assemble: every store sees every note; its model's store holds its rows.
            for (plan, vectors) in plans.into_iter().zip(embedded) {
                for store in &mut news {
                    store.begin_note(plan.path.clone(), plan.hash.clone());
                }
                let Some(m) = plan.model else {
                    report.unread += 1;
                    continue;
                };
                report.notes += 1;
                let mut fresh = vectors.into_iter();
                for section in plan.sections {
                    match section {
                        SectionPlan::Kept { store, row, line } => news[m].push_from(&olds[store], row, line),
                        SectionPlan::Embed { line, hash, .. } => {
                            if let Some(vector) = fresh.next() {
                                news[m].push(line, hash, &vector);
                            }
                        }
                    }
                }
            }
            if report.embedded > 0 && kept_at.elapsed() >= pace.keep_every && self.index.read_only().is_none()
            {
                for (model, store) in models.iter().zip(&news) {
                    // Not kept: a kill now costs more of the pass, nothing else.
                    let _ = folder.write_partial_embeddings(model.key(), &store.to_bytes());
                }
                kept_at = std::time::Instant::now();
            }
        }
        report.sections = news.iter().map(Vectors::len).sum();
        let keys: Vec<&str> = models.iter().map(|m| m.key()).collect();
        for ((model, (store, old)), from_partial) in
            models.iter().zip(news.iter().zip(&olds)).zip(&started_from_partial)
        {
            let same = !from_partial
                && store.len() == old.len()
                && store.notes() == old.notes()
                && report.embedded == 0;
            if !same && self.index.read_only().is_none() {
                // A store that cannot be kept is embedded again next time: not an error.
                let _ = folder.write_embeddings(model.key(), &store.to_bytes(), &keys);
            }
        }
        let stores = Stores { models, vectors: news.into_iter().map(Arc::new).collect() };
        *self.semantic.stores.write().unwrap_or_else(PoisonError::into_inner) = Some(Arc::new(stores));
        *self.semantic.embedded.lock().unwrap_or_else(PoisonError::into_inner) =
            (Arc::downgrade(&catalog), Some(config));
        self.semantic.set_progress(0, 0);
        Ok(report)
    }
}
