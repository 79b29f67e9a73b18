//! Filesystem helpers for the index folder, which lies outside the vault's
//! readable areas (`.kb/` or `--index-dir`) and holds derived data only.

use std::path::{Path, PathBuf};

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
