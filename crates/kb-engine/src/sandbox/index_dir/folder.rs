//! An index folder once claimed: its path, how it may be used, the files in it
//! that are the index's own, and clearing only those.

use std::fs;
use std::path::{Path, PathBuf};

use super::claim::{check_entries, foreign, index_entries, write_marker};
use super::errors::io_error;
use crate::error::{Error, ErrorCode, Result};
use crate::sandbox::fs::is_missing;

/// The ownership marker's file name.
pub const INDEX_MARKER: &str = "kb-mcp-index.json";

/// What the marker says (a person who finds the folder learns what it is).
pub(super) const MARKER_TEXT: &str = "{\"kb_mcp_index\": 1, \"note\": \"This folder holds kb-mcp's search index: derived data, rebuilt from the notes. kb-mcp deletes only its own files here.\"}\n";

/// The file beside the index where the engine keeps what it derived from every
/// note's text for the audit (see `IndexFolder::read_cache`): derived data,
/// checked note by note when read, deleted with the index.
pub const MENTIONS_CACHE: &str = "mentions.cache";

/// The folder beside the index where running servers publish their metrics
/// (for `kb-index status`): allowed in the index folder, never cleared by a
/// rebuild (its files are the running servers').
pub const SERVERS_DIR: &str = "servers";

/// The index folder's name inside the vault.
pub const DEFAULT_INDEX_DIR: &str = ".kb";

/// tantivy's segment file extensions (after `<32 hex>.`).
const SEGMENT_EXTENSIONS: [&str; 7] = ["idx", "pos", "term", "store", "store.temp", "fast", "fieldnorm"];

/// tantivy's own files besides the segments; the lock files are never deleted
/// (another process may hold them).
const TANTIVY_FILES: [&str; 2] = ["meta.json", ".managed.json"];

const TANTIVY_LOCKS: [&str; 2] = [".tantivy-meta.lock", ".tantivy-writer.lock"];

/// Bytes used by the files below a folder (symlinks not followed).
pub fn folder_size(dir: &Path) -> u64 {
    walkdir::WalkDir::new(dir)
        .follow_links(false)
        .into_iter()
        .filter_map(Result::ok)
        .filter_map(|entry| entry.metadata().ok())
        .filter(|meta| meta.is_file())
        .map(|meta| meta.len())
        .sum()
}

/// The real path of a folder, or the path as given when it cannot be resolved.
pub fn canonical_or_same(dir: &Path) -> PathBuf {
    std::fs::canonicalize(dir).unwrap_or_else(|_| dir.to_owned())
}

/// Whether a file name is one the index writes: tantivy's files, its segments,
/// its temporary files, and the marker.
pub fn is_index_file_name(name: &str) -> bool {
    if TANTIVY_FILES.contains(&name)
        || TANTIVY_LOCKS.contains(&name)
        || name == INDEX_MARKER
        || name == MENTIONS_CACHE
    {
        return true;
    }
    // tantivy's atomic writes: `tempfile`'s `.tmp` plus six letters or digits.
    if let Some(rest) = name.strip_prefix(".tmp") {
        return rest.len() == 6 && rest.bytes().all(|b| b.is_ascii_alphanumeric());
    }
    let Some((id, extension)) = name.split_once('.') else { return false };
    if id.len() != 32 || !id.bytes().all(|b| b.is_ascii_hexdigit() && !b.is_ascii_uppercase()) {
        return false;
    }
    if SEGMENT_EXTENSIONS.contains(&extension) {
        return true;
    }
    // Deletes: `<id>.<opstamp>.del`.
    extension
        .strip_suffix(".del")
        .is_some_and(|opstamp| !opstamp.is_empty() && opstamp.bytes().all(|b| b.is_ascii_digit()))
}

/// How an index folder is opened.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum IndexAccess {
    /// Create the folder (and the marker) when missing.
    Create,
    /// Create nothing: a missing folder is reported as absent (`kb-index status`).
    Existing,
}

/// An index folder that passed the checks of this module.
#[derive(Debug, Clone)]
pub struct IndexFolder {
    pub(super) path: PathBuf,
    pub(super) exists: bool,
    pub(super) owned: bool,
    pub(super) access: IndexAccess,
    /// Why the folder is not the one asked for (the per-user cache folder).
    pub(super) moved: Option<String>,
}

impl IndexFolder {
    /// Its path (real, free of symlinks, when it exists).
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Whether the folder exists (only [`IndexAccess::Existing`] leaves it absent).
    pub fn exists(&self) -> bool {
        self.exists
    }

    /// How the folder was claimed: with [`IndexAccess::Existing`] nothing may be written.
    pub fn access(&self) -> IndexAccess {
        self.access
    }

    /// Whether kb-mcp can prove the folder is its own (the marker, or the
    /// vault's own `.kb/`), and so may delete the index's files in it.
    pub fn owned(&self) -> bool {
        self.owned
    }

    /// Why the index lives somewhere other than the vault's `.kb/` (the vault
    /// cannot hold it), when it does.
    pub fn moved(&self) -> Option<&str> {
        self.moved.as_deref()
    }

    /// Whether the folder holds any of the index's files besides the marker and
    /// the lock files (a `meta.json` or segments).
    pub(crate) fn holds_index_files(&self) -> Result<bool> {
        Ok(index_entries(&self.path)?.iter().any(|name| {
            name != INDEX_MARKER
                && name != MENTIONS_CACHE
                && !TANTIVY_LOCKS.contains(&name.as_str())
                && is_index_file_name(name)
        }))
    }

    /// The bytes of [`MENTIONS_CACHE`], `None` when it is absent, not a regular
    /// file, larger than `max_bytes` or unreadable (a cache is only a cache).
    pub(crate) fn read_cache(&self, max_bytes: u64) -> Option<Vec<u8>> {
        let file = self.path.join(MENTIONS_CACHE);
        let meta = fs::symlink_metadata(&file).ok()?;
        if !meta.is_file() || meta.len() > max_bytes {
            return None;
        }
        fs::read(&file).ok()
    }

    /// Replaces [`MENTIONS_CACHE`] with `bytes`: written to a temporary file of
    /// the index's own pattern, then renamed over it (a reader sees the old
    /// file or the new one, never part of one). Not synced to disk: a cache
    /// lost in a crash is made again. Refused in a folder claimed read-only.
    pub(crate) fn write_cache(&self, bytes: &[u8]) -> Result<()> {
        if self.access != IndexAccess::Create {
            return Err(Error::new(
                ErrorCode::IndexUnavailable,
                format!("the index folder {} is open read-only", self.path.display()),
            ));
        }
        let temp = self.path.join(format!(".tmp{}", super::claim::temp_suffix()));
        let result = (|| {
            let mut file = fs::OpenOptions::new().write(true).create_new(true).open(&temp)?;
            std::io::Write::write_all(&mut file, bytes)?;
            drop(file);
            fs::rename(&temp, self.path.join(MENTIONS_CACHE))
        })();
        if let Err(err) = result {
            let _ = fs::remove_file(&temp);
            return Err(io_error(&temp, &err));
        }
        Ok(())
    }

    /// Writes the marker into a folder that holds a working index kb-mcp did not
    /// mark (one built before markers existed). Best effort: a folder that
    /// cannot be written is served as it is.
    pub(crate) fn adopt(&mut self) {
        if !self.owned && self.access == IndexAccess::Create && write_marker(&self.path).is_ok() {
            self.owned = true;
        }
    }

    /// Deletes the index's files (not the marker, not the lock files) before a
    /// rebuild. Refused unless the folder is proven the index's own and still
    /// holds nothing else; only regular files are removed, never through a link.
    pub fn clear(&self) -> Result<()> {
        let shown = self.path.display();
        if !self.owned {
            return Err(Error::new(
                ErrorCode::IndexUnavailable,
                format!(
                    "the index in {shown} cannot be opened, and kb-mcp will not delete it: the folder has no \
                     {INDEX_MARKER} marker, so kb-mcp cannot prove it wrote those files"
                ),
            )
            .with_hint(format!(
                "if {shown} holds only an old kb-mcp index, delete the folder yourself; otherwise pass \
                 --index-dir with a new or empty folder"
            )));
        }
        check_entries(&self.path)?;
        let names = index_entries(&self.path)?;
        for name in names {
            if name == INDEX_MARKER || TANTIVY_LOCKS.contains(&name.as_str()) {
                continue;
            }
            let file = self.path.join(&name);
            let meta = match fs::symlink_metadata(&file) {
                Ok(meta) => meta,
                Err(err) if is_missing(&err) => continue,
                Err(err) => return Err(io_error(&file, &err)),
            };
            if !meta.is_file() {
                return Err(foreign(&self.path, &[name]));
            }
            match fs::remove_file(&file) {
                Ok(()) => {}
                Err(err) if is_missing(&err) => {}
                Err(err) => return Err(io_error(&file, &err)),
            }
        }
        crate::sandbox::fs::sync_dir(&self.path);
        Ok(())
    }
}
