//! The models that turn text into vectors, and which languages each covers.
//!
//! The bundled model is `pocket-encoder`'s: paraphrase-MiniLM-L3-v2 (Apache
//! 2.0), quantized to 4 bits and compiled into the binary, so nothing is
//! downloaded, ever; it reads English. A person who wants other languages
//! points `[semantic] model` of `kb.toml` at a model2vec model of their own (a
//! folder with `tokenizer.json`, `model.safetensors`, `config.json`, such as a
//! multilingual potion model), read with `model2vec-rs` and covering the
//! languages `[semantic] languages` lists (every language when it lists none).
//! A model's id names its weights (the bundled model's revision, a hash of the
//! person's files), so vectors of another model are never compared with them.

use std::collections::VecDeque;
use std::sync::{Arc, Mutex, PoisonError};

use sha2::{Digest, Sha256};

use crate::error::{Error, ErrorCode, Result};
use crate::index::language::{self, LanguageCode};

/// Where a model comes from.
enum Encoder {
    /// The model compiled into kb-mcp.
    Bundled(pocket_encoder::Encoder),
    /// A model2vec model the person keeps.
    Own(Box<model2vec_rs::model::StaticModel>),
}

/// Which notes' languages a model reads.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Coverage {
    /// These languages.
    Languages(Vec<LanguageCode>),
    /// Every language (a multilingual model whose languages were not listed).
    All,
}

/// The files of a model2vec model folder, as read by the sandbox.
#[derive(Debug, Clone)]
pub struct ModelFiles {
    /// `tokenizer.json`.
    pub tokenizer: Vec<u8>,
    /// `model.safetensors`.
    pub weights: Vec<u8>,
    /// `config.json`.
    pub config: Vec<u8>,
}

/// A model in force.
pub struct Model {
    id: String,
    key: String,
    coverage: Coverage,
    encoder: Encoder,
    /// The vectors of the last queries, newest last: `recall_context` ranks
    /// one question twice, and an agent repeats and pages its searches.
    recent: Mutex<VecDeque<(String, Arc<[f32]>)>>,
}

impl std::fmt::Debug for Model {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Model")
            .field("id", &self.id)
            .field("coverage", &self.coverage)
            .finish_non_exhaustive()
    }
}

/// Inputs embedded per call of the bundled model (it takes at most 4096).
const BATCH: usize = 256;

/// Query vectors a model keeps (a few KiB each).
const RECENT_QUERIES: usize = 32;

impl Model {
    /// The bundled English model.
    pub fn bundled() -> Result<Model> {
        let encoder = pocket_encoder::Encoder::new()
            .map_err(|e| Error::internal(format!("the bundled embedding model did not load: {e}")))?;
        let info = pocket_encoder::model_info();
        let id = format!("{}@{}", info.id, info.revision);
        Ok(Model {
            key: key_of(&id),
            id,
            coverage: Coverage::Languages(vec![language::code_of("en")]),
            encoder: Encoder::Bundled(encoder),
            recent: Mutex::default(),
        })
    }

    /// A person's model2vec model, covering `languages` (codes such as `zh`;
    /// every language when empty). `invalid_argument` naming `[semantic] model`
    /// when the files are not a model.
    pub fn own(files: &ModelFiles, languages: &[String]) -> Result<Model> {
        let mut hasher = Sha256::new();
        for part in [&files.tokenizer, &files.weights, &files.config] {
            hasher.update((part.len() as u64).to_le_bytes());
            hasher.update(part);
        }
        let id = format!("model2vec@sha256:{}", crate::sandbox::hex(&hasher.finalize()[..16]));
        let model =
            model2vec_rs::model::StaticModel::from_bytes(&files.tokenizer, &files.weights, &files.config, Some(true))
                .map_err(|e| {
                    Error::invalid(format!("`[semantic] model` in kb.toml is not a model2vec model: {e:#}"))
                        .with_hint("point it at a folder holding a model2vec model's tokenizer.json, model.safetensors and config.json")
                })?;
        let coverage = if languages.is_empty() {
            Coverage::All
        } else {
            Coverage::Languages(languages.iter().map(|code| language::code_of(code)).collect())
        };
        Ok(Model {
            key: key_of(&id),
            id,
            coverage,
            encoder: Encoder::Own(Box::new(model)),
            recent: Mutex::default(),
        })
    }

    /// What names its vector space: its weights.
    pub fn id(&self) -> &str {
        &self.id
    }

    /// A short file-name-safe form of the id (16 hex digits).
    pub fn key(&self) -> &str {
        &self.key
    }

    /// Whether it reads text of `language`.
    pub fn covers(&self, language: LanguageCode) -> bool {
        match &self.coverage {
            Coverage::All => true,
            Coverage::Languages(codes) => codes.contains(&language),
        }
    }

    /// The vector of a search's query: embedded once, then kept among the
    /// last few (two threads asking at once may both embed it).
    pub fn embed_query(&self, query: &str) -> Result<Arc<[f32]>> {
        let recent = || self.recent.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some((_, vector)) = recent().iter().find(|(q, _)| q == query) {
            return Ok(vector.clone());
        }
        let vector: Arc<[f32]> = match self.embed(&[query.to_owned()])?.pop() {
            Some(vector) => vector.into(),
            None => return Err(Error::internal("the embedding model gave no vector")),
        };
        let mut list = recent();
        if list.len() == RECENT_QUERIES {
            list.pop_front();
        }
        list.push_back((query.to_owned(), vector.clone()));
        Ok(vector)
    }

    /// One unit-length vector per text, in order.
    pub fn embed(&self, texts: &[String]) -> Result<Vec<Vec<f32>>> {
        let mut out = Vec::with_capacity(texts.len());
        for batch in texts.chunks(BATCH) {
            match &self.encoder {
                Encoder::Bundled(encoder) => {
                    // The bundled encoder refuses blank inputs; a blank chunk never reaches it.
                    let vectors = encoder.embed(batch).map_err(|e| {
                        Error::new(ErrorCode::Internal, format!("the embedding model failed: {e}"))
                    })?;
                    out.extend(vectors);
                }
                Encoder::Own(model) => out.extend(model.encode(batch)),
            }
        }
        Ok(out)
    }
}

/// The first 16 hex digits of the SHA-256 of `id`.
fn key_of(id: &str) -> String {
    crate::sandbox::hex(&Sha256::digest(id.as_bytes())[..8])
}

/// The language a text counts as for the models: the detected one, else
/// English when its letters are Latin (a short English note says too little
/// for the detector; a short note in another Latin language read as English
/// costs only a weaker vector).
pub(crate) fn language_of(text: &str) -> LanguageCode {
    match language::detect(text) {
        0 if language::script_of_query(text) == Some(language::Script::Latin) => language::code_of("en"),
        code => code,
    }
}

/// The language a query counts as for the models (see [`language_of`]).
pub(crate) fn query_language(query: &str) -> LanguageCode {
    match language::of_query(query) {
        Some(code) => code,
        None if language::script_of_query(query) == Some(language::Script::Latin) => language::code_of("en"),
        None => language::script_of_query(query)
            .and_then(|script| language::languages_of(script).next())
            .unwrap_or(0),
    }
}

/// A language code's name (`en`, `zh`), or `?` for none.
pub(crate) fn language_name(code: LanguageCode) -> &'static str {
    language::language(code).map_or("?", |(name, _)| name)
}

/// Whether `code` names a language the detector knows (for `kb.toml`).
pub fn is_language(code: &str) -> bool {
    language::code_of(code) != 0
}
