//! The text extracted from the vault's PDFs, kept beside the index in
//! `pdf-text/`, one file per PDF content (`<sha256 hex>.json`): a rebuild, a
//! restart or a sync reads a PDF's text here instead of extracting it again,
//! and `read_note` and snippets read it too. Derived data like the index: a
//! missing or damaged file is extracted again; a rebuild keeps the folder.

use std::collections::HashSet;
use std::fs;
use std::io::Write;

use super::claim::temp_suffix;
use super::errors::io_error;
use super::folder::{IndexAccess, IndexFolder};
use crate::error::{Error, ErrorCode, Result};

/// The folder of extracted PDF texts inside the index folder.
pub const PDF_TEXTS_DIR: &str = "pdf-text";

/// Largest cache file read (a PDF's text is at most 4 MiB, as JSON more).
const ENTRY_MAX_BYTES: u64 = 32 * 1024 * 1024;

/// Whether `key` is a cache key: 64 lowercase hex digits.
fn is_key(key: &str) -> bool {
    key.len() == 64 && key.bytes().all(|b| b.is_ascii_hexdigit() && !b.is_ascii_uppercase())
}

impl IndexFolder {
    /// The cached text of the PDF whose content hash is `key` (64 hex), `None`
    /// when there is none or it cannot be read (a cache is only a cache).
    pub(crate) fn read_pdf_text(&self, key: &str) -> Option<Vec<u8>> {
        if !is_key(key) {
            return None;
        }
        self.read_kept(PDF_TEXTS_DIR, &format!("{key}.json"), ENTRY_MAX_BYTES)
    }

    /// The bytes of `name` in the index folder's sub-folder `dir`, when it is
    /// a regular file of at most `max` bytes (derived data: anything else is
    /// derived again).
    pub(super) fn read_kept(&self, dir: &str, name: &str, max: u64) -> Option<Vec<u8>> {
        let file = self.path.join(dir).join(name);
        let meta = fs::symlink_metadata(&file).ok()?;
        if !meta.is_file() || meta.len() > max {
            return None;
        }
        fs::read(&file).ok()
    }

    /// Keeps `bytes` as the text of the PDF whose content hash is `key`:
    /// written to a temporary file in the folder, then renamed into place.
    /// Not synced: a text lost in a crash is extracted again.
    pub(crate) fn write_pdf_text(&self, key: &str, bytes: &[u8]) -> Result<()> {
        if !is_key(key) {
            return Err(Error::internal(format!("not a PDF text key: {key}")));
        }
        self.write_kept(PDF_TEXTS_DIR, &format!("{key}.json"), bytes)
    }

    /// Writes `bytes` as `name` in the index folder's sub-folder `dir` (made
    /// when missing): to a temporary file there, then renamed into place. Not
    /// synced: derived data lost in a crash is derived again.
    pub(super) fn write_kept(&self, dir: &str, name: &str, bytes: &[u8]) -> Result<()> {
        if self.access != IndexAccess::Create || !self.exists {
            return Err(Error::new(
                ErrorCode::IndexUnavailable,
                format!("the index folder {} is open read-only", self.path.display()),
            ));
        }
        let dir = self.path.join(dir);
        match fs::symlink_metadata(&dir) {
            Ok(meta) if meta.is_dir() => {}
            Ok(_) => return Err(Error::internal(format!("{} is not a folder", dir.display()))),
            Err(_) => match fs::create_dir(&dir) {
                Ok(()) => {}
                Err(err) if err.kind() == std::io::ErrorKind::AlreadyExists => {}
                Err(err) => return Err(io_error(&dir, &err)),
            },
        }
        let temp = dir.join(format!(".tmp{}", temp_suffix()));
        let result = (|| {
            let mut file = fs::OpenOptions::new().write(true).create_new(true).open(&temp)?;
            file.write_all(bytes)?;
            drop(file);
            fs::rename(&temp, dir.join(name))
        })();
        if let Err(err) = result {
            let _ = fs::remove_file(&temp);
            return Err(io_error(&temp, &err));
        }
        Ok(())
    }

    /// Removes the kept texts whose key is not in `keep` (PDFs no longer in
    /// the vault), and temporary files left by a crash. Best effort; only
    /// regular files of the folder's own names are removed.
    pub(crate) fn prune_pdf_texts(&self, keep: &HashSet<String>) {
        if self.access != IndexAccess::Create {
            return;
        }
        let dir = self.path.join(PDF_TEXTS_DIR);
        if !fs::symlink_metadata(&dir).is_ok_and(|meta| meta.is_dir()) {
            return;
        }
        let Ok(entries) = fs::read_dir(&dir) else { return };
        for entry in entries.filter_map(std::result::Result::ok) {
            let Some(name) = entry.file_name().to_str().map(str::to_owned) else { continue };
            let own = match name.strip_suffix(".json") {
                Some(key) if is_key(key) => !keep.contains(key),
                _ => name.starts_with(".tmp") && name.len() == 10,
            };
            if own && entry.file_type().is_ok_and(|kind| kind.is_file()) {
                let _ = fs::remove_file(entry.path());
            }
        }
    }
}
