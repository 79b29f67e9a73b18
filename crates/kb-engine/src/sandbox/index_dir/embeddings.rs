//! The semantic layer's vectors kept beside the index in `embeddings/`, one
//! file per model (`<model key>.safetensors`, the key 16 hex digits naming
//! the model's weights): a restart, a rebuild or a sync reuses them, and a
//! model change starts a file of its own. A first pass that is cut short (a
//! kill, a shutdown) leaves what it had embedded in `<model key>.partial
//! .safetensors`, which the next pass starts from and a complete store
//! replaces. Derived data like the index: a missing or damaged file means
//! embedding again, never an error. Also the
//! person's own model folder (`[semantic] model`), read whole and bounded.

use std::fs;
use std::path::Path;

use super::folder::{IndexAccess, IndexFolder};
use crate::error::{Error, Result};

/// The folder of kept vectors inside the index folder.
pub const EMBEDDINGS_DIR: &str = "embeddings";

/// Largest vectors file read (100,000 notes of 32 sections take about 1.3 GB;
/// a vault past that is embedded again rather than read).
const STORE_MAX_BYTES: u64 = 2 << 30;

/// Largest model weights file read (a 128M-parameter model2vec model in 32-bit
/// floats is 512 MB).
const WEIGHTS_MAX_BYTES: u64 = 1 << 30;

/// Largest `tokenizer.json` or `config.json` read.
const MODEL_TEXT_MAX_BYTES: u64 = 64 << 20;

/// How old a temporary file must be to count as left by a killed write.
const LEFT_OVER_AGE: std::time::Duration = std::time::Duration::from_secs(3600);

/// Whether `key` is a model key: 16 lowercase hex digits.
fn is_key(key: &str) -> bool {
    key.len() == 16 && key.bytes().all(|b| b.is_ascii_hexdigit() && !b.is_ascii_uppercase())
}

/// The file name of the model `key`'s vectors, complete or partial.
fn file_name(key: &str, partial: bool) -> String {
    if partial { format!("{key}.partial.safetensors") } else { format!("{key}.safetensors") }
}

impl IndexFolder {
    /// The kept vectors of the model `key`, `None` when there are none or
    /// they cannot be read. `partial`: those of a pass cut short instead.
    pub(crate) fn read_embeddings(&self, key: &str, partial: bool) -> Option<Vec<u8>> {
        if !is_key(key) {
            return None;
        }
        self.read_kept(EMBEDDINGS_DIR, &file_name(key, partial), STORE_MAX_BYTES)
    }

    /// Keeps `bytes` as what a pass under way has embedded for the model
    /// `key` so far (written aside, then renamed into place).
    pub(crate) fn write_partial_embeddings(&self, key: &str, bytes: &[u8]) -> Result<()> {
        if !is_key(key) {
            return Err(Error::internal(format!("not a model key: {key}")));
        }
        self.write_kept(EMBEDDINGS_DIR, &file_name(key, true), bytes)
    }

    /// Keeps `bytes` as the vectors of the model `key` (written aside, then
    /// renamed into place), and removes its partial file, the files of other
    /// models and what a write killed half-way left.
    pub(crate) fn write_embeddings(&self, key: &str, bytes: &[u8], models: &[&str]) -> Result<()> {
        if !is_key(key) {
            return Err(Error::internal(format!("not a model key: {key}")));
        }
        self.write_kept(EMBEDDINGS_DIR, &file_name(key, false), bytes)?;
        if self.access != IndexAccess::Create {
            return Ok(());
        }
        let Ok(entries) = fs::read_dir(self.path.join(EMBEDDINGS_DIR)) else { return Ok(()) };
        for entry in entries.filter_map(std::result::Result::ok) {
            let Some(name) = entry.file_name().to_str().map(str::to_owned) else { continue };
            // Another model's vectors, or a write a crash cut short (an hour
            // old: another process's write under way is left alone).
            let stale = match name.strip_suffix(".safetensors") {
                Some(other) => match other.strip_suffix(".partial") {
                    Some(partial) => is_key(partial) && (partial == key || !models.contains(&partial)),
                    None => is_key(other) && !models.contains(&other),
                },
                None => {
                    name.starts_with(".tmp")
                        && name.len() == 10
                        && entry
                            .metadata()
                            .and_then(|meta| meta.modified())
                            .is_ok_and(|at| at.elapsed().is_ok_and(|age| age >= LEFT_OVER_AGE))
                }
            };
            if stale && entry.file_type().is_ok_and(|kind| kind.is_file()) {
                let _ = fs::remove_file(entry.path());
            }
        }
        Ok(())
    }
}

/// The three files of a model2vec model folder: `tokenizer.json`,
/// `model.safetensors`, `config.json` (regular files, bounded in size).
/// `invalid_argument` naming `[semantic] model` when one is missing or too large.
pub fn read_model_folder(dir: &Path) -> Result<[Vec<u8>; 3]> {
    let read = |name: &str, max: u64| -> Result<Vec<u8>> {
        let file = dir.join(name);
        let problem = |what: String| {
            Error::invalid(format!("`[semantic] model` in kb.toml: {} {what}", file.display())).with_hint(
                "point it at a model2vec model folder (tokenizer.json, model.safetensors, config.json), or remove the key",
            )
        };
        let meta = fs::metadata(&file).map_err(|e| problem(format!("cannot be read ({e})")))?;
        if !meta.is_file() {
            return Err(problem("is not a file".to_owned()));
        }
        if meta.len() > max {
            return Err(problem(format!("is larger than {} MiB", max >> 20)));
        }
        fs::read(&file).map_err(|e| problem(format!("cannot be read ({e})")))
    };
    Ok([
        read("tokenizer.json", MODEL_TEXT_MAX_BYTES)?,
        read("model.safetensors", WEIGHTS_MAX_BYTES)?,
        read("config.json", MODEL_TEXT_MAX_BYTES)?,
    ])
}
