//! Which folder is the vault when the command line names none.
//!
//! A server started by a desktop client runs in whatever folder the client
//! chose (`/` on macOS), and a person may type `kb-index build` anywhere. The
//! current folder is taken as the vault only when it looks like one: it holds
//! `.obsidian/`, `kb.toml` or Markdown files, and it is neither the root
//! folder nor the home folder. Otherwise the error says what to pass.

use std::fs;
use std::path::{Path, PathBuf};

use crate::error::{Error, Result};

/// Entries looked at per folder when searching for Markdown files.
const LOOK_AT: usize = 2_000;

/// The current folder as the vault, when it looks like one (see the module doc).
/// `home` is the person's home folder, if known.
pub fn current_folder_vault(current: &Path, home: Option<&Path>) -> Result<PathBuf> {
    let real = fs::canonicalize(current).unwrap_or_else(|_| current.to_owned());
    let hint = "pass --vault DIR (the folder of your notes) or set KB_VAULT, e.g. --vault ~/Notes";
    if real.parent().is_none() {
        return Err(Error::invalid(format!(
            "no vault given, and the current folder {} is the root of the file system, which is never used as a vault",
            current.display()
        ))
        .with_hint(hint));
    }
    if let Some(home) = home.map(|home| fs::canonicalize(home).unwrap_or_else(|_| home.to_owned()))
        && home == real
    {
        return Err(Error::invalid(format!(
            "no vault given, and the current folder {} is your home folder, which is never used as a vault",
            current.display()
        ))
        .with_hint(hint));
    }
    if looks_like_vault(&real) {
        return Ok(current.to_owned());
    }
    Err(Error::invalid(format!(
        "no vault given, and the current folder {} does not look like a vault: it holds no .obsidian/ folder, \
         no kb.toml and no Markdown (.md) files",
        current.display()
    ))
    .with_hint(hint))
}

/// Whether a folder holds `.obsidian/`, `kb.toml` or Markdown files (at its top
/// level or in a folder just below, as vaults made only of folders do).
fn looks_like_vault(dir: &Path) -> bool {
    if dir.join(".obsidian").is_dir() || dir.join("kb.toml").is_file() {
        return true;
    }
    let is_markdown = |path: &Path| path.extension().is_some_and(|e| e.eq_ignore_ascii_case("md"));
    let Ok(entries) = fs::read_dir(dir) else { return false };
    let mut folders = Vec::new();
    for entry in entries.flatten().take(LOOK_AT) {
        let Ok(kind) = entry.file_type() else { continue };
        let path = entry.path();
        if kind.is_file() && is_markdown(&path) {
            return true;
        }
        if kind.is_dir() && !entry.file_name().to_string_lossy().starts_with('.') {
            folders.push(path);
        }
    }
    folders.iter().any(|folder| {
        fs::read_dir(folder).is_ok_and(|entries| {
            entries
                .flatten()
                .take(LOOK_AT)
                .any(|entry| entry.file_type().is_ok_and(|kind| kind.is_file()) && is_markdown(&entry.path()))
        })
    })
}
