//! Shared helpers for the integration tests: temp copies of the fixture vault.

#![allow(dead_code, unreachable_pub)]

use std::path::{Path, PathBuf};

/// The repository's fixture vault.
pub fn fixture_vault() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures/vault")
}

/// Copies a folder recursively (files and folders only).
pub fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for entry in std::fs::read_dir(from).unwrap() {
        let entry = entry.unwrap();
        let target = to.join(entry.file_name());
        let kind = entry.file_type().unwrap();
        if kind.is_dir() {
            copy_dir(&entry.path(), &target);
        } else if kind.is_file() {
            std::fs::copy(entry.path(), &target).unwrap();
        }
    }
}

/// A temp folder holding a fresh copy of the fixture vault at `<tmp>/vault`.
pub fn temp_vault() -> (tempfile::TempDir, PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    let vault = dir.path().join("vault");
    copy_dir(&fixture_vault(), &vault);
    (dir, vault)
}

/// Every file under a folder with its bytes, for "nothing changed" checks.
pub fn snapshot(dir: &Path) -> Vec<(String, Vec<u8>)> {
    let mut out = Vec::new();
    for entry in walkdir::WalkDir::new(dir).sort_by_file_name() {
        let entry = entry.unwrap();
        if entry.file_type().is_file() {
            let rel = entry.path().strip_prefix(dir).unwrap().to_string_lossy().replace('\\', "/");
            if !rel.starts_with(".kb/") {
                out.push((rel, std::fs::read(entry.path()).unwrap()));
            }
        }
    }
    out
}
