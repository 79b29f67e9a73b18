//! Inbox housekeeping for the write layer: listing a folder of proposals,
//! moving a file into the archive without ever overwriting, appending to the
//! audit log and removing a file.
//!
//! These are the only changes the library makes inside the vault besides
//! [`Sandbox::write_atomic`], and they are confined to the inbox: every path
//! must lie in [`Area::Inbox`] and reach it through real folders, never through
//! a symlink. Moves use a hard link and then remove the source, so of two
//! processes moving the same proposal exactly one succeeds.

use std::fs::{self, OpenOptions};
use std::io::{self, Write};

use super::fs::{is_missing, missing, same_file, sync_dir, target_exists, walk_write_chain};
use super::{Area, NotePath, Sandbox};
use crate::error::{Error, Result};

impl Sandbox {
    /// The files directly inside an inbox folder (e.g. `inbox/new`), sorted; empty
    /// when the folder does not exist. Symlinks, folders and names that are not
    /// valid vault paths are left out.
    pub fn list_inbox(&self, folder: &NotePath) -> Result<Vec<NotePath>> {
        list_entries(self, folder, Entries::Files)
    }

    /// The real folders directly inside an inbox folder (e.g. the date folders of
    /// `inbox/applied`), sorted; empty when the folder does not exist. Symlinks and
    /// names that are not valid vault paths are left out.
    pub(crate) fn list_inbox_folders(&self, folder: &NotePath) -> Result<Vec<NotePath>> {
        list_entries(self, folder, Entries::Folders)
    }

    /// Moves an inbox file to another inbox path (a proposal into
    /// `inbox/applied/<date>/`), creating folders as needed and never replacing:
    /// `target_exists` when `to` exists, `not_found` when `from` is gone (another
    /// process moved it first).
    pub fn move_in_inbox(&self, from: &NotePath, to: &NotePath) -> Result<()> {
        require_inbox(self, from)?;
        require_inbox(self, to)?;
        let source = walk_write_chain(self, from, false)?;
        if fs::symlink_metadata(&source).is_err() {
            return Err(missing(from));
        }
        let target = walk_write_chain(self, to, true)?;
        match fs::hard_link(&source, &target) {
            Ok(()) => {
                if let Err(err) = fs::remove_file(&source) {
                    // Someone else moved it in the meantime: theirs is the move.
                    let _ = fs::remove_file(&target);
                    return Err(if is_missing(&err) { missing(from) } else { Error::io(from, &err) });
                }
            }
            Err(err) if err.kind() == io::ErrorKind::AlreadyExists => return Err(target_exists(to)),
            Err(err) if is_missing(&err) => return Err(missing(from)),
            // No hard links on this file system: check, then rename.
            Err(_) => {
                if fs::symlink_metadata(&target).is_ok() {
                    return Err(target_exists(to));
                }
                fs::rename(&source, &target).map_err(|err| Error::io(from, &err))?;
            }
        }
        sync_dir(target.parent().unwrap_or(self.root()));
        sync_dir(source.parent().unwrap_or(self.root()));
        Ok(())
    }

    /// Appends bytes to an inbox file (the audit log), creating it and its folders,
    /// in one write, then flushes it to disk.
    pub fn append_inbox(&self, path: &NotePath, bytes: &[u8]) -> Result<()> {
        let mut options = OpenOptions::new();
        options.append(true).create(true);
        let mut file = open_verified(self, path, &options, "nothing was written")?;
        file.write_all(bytes).and_then(|()| file.sync_all()).map_err(|err| Error::io(path, &err))
    }

    /// Removes an inbox file; `false` when it was already gone.
    pub fn remove_inbox_file(&self, path: &NotePath) -> Result<bool> {
        require_inbox(self, path)?;
        let target = walk_write_chain(self, path, false)?;
        match fs::remove_file(&target) {
            Ok(()) => {
                sync_dir(target.parent().unwrap_or(self.root()));
                Ok(true)
            }
            Err(err) if is_missing(&err) => Ok(false),
            Err(err) => Err(Error::io(path, &err)),
        }
    }
}

/// Which entries [`list_entries`] returns.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Entries {
    Files,
    Folders,
}

/// The regular files or the real folders directly inside an inbox folder, sorted.
fn list_entries(sandbox: &Sandbox, folder: &NotePath, wanted: Entries) -> Result<Vec<NotePath>> {
    require_inbox(sandbox, folder)?;
    let mut disk = sandbox.root().to_path_buf();
    for segment in folder.as_str().split('/') {
        disk.push(segment);
        match fs::symlink_metadata(&disk) {
            Ok(meta) if meta.is_dir() => {}
            Ok(_) => return Err(Error::denied(format!("{folder} is not a real folder of the inbox"))),
            Err(err) if is_missing(&err) => return Ok(Vec::new()),
            Err(err) => return Err(Error::io(folder, &err)),
        }
    }
    let entries = fs::read_dir(&disk).map_err(|err| Error::io(folder, &err))?;
    let mut found = Vec::new();
    for entry in entries {
        let entry = entry.map_err(|err| Error::io(folder, &err))?;
        // `DirEntry::file_type` does not follow symlinks.
        let kind_ok = entry.file_type().is_ok_and(|kind| match wanted {
            Entries::Files => kind.is_file(),
            Entries::Folders => kind.is_dir(),
        });
        let name = entry.file_name();
        let Some(name) = name.to_str().filter(|_| kind_ok) else { continue };
        if let Ok(path) = NotePath::parse(&format!("{folder}/{name}"))
            && sandbox.area_of(&path) == Some(Area::Inbox)
        {
            found.push(path);
        }
    }
    found.sort();
    Ok(found)
}

/// Opens (creating its folders) an inbox file with `options`, then checks that the
/// handle is the regular file on the path, so a symlink swapped in meanwhile is
/// refused; `consequence` says what was not done, for the error.
pub(super) fn open_verified(
    sandbox: &Sandbox,
    path: &NotePath,
    options: &OpenOptions,
    consequence: &str,
) -> Result<fs::File> {
    require_inbox(sandbox, path)?;
    let target = walk_write_chain(sandbox, path, true)?;
    let file = options.open(&target).map_err(|err| Error::io(path, &err))?;
    let opened = file.metadata().map_err(|err| Error::io(path, &err))?;
    let on_path = fs::symlink_metadata(&target).map_err(|err| Error::io(path, &err))?;
    if !opened.is_file() || !on_path.is_file() || !same_file(&opened, &on_path) {
        return Err(Error::denied(format!("{path} changed while it was being opened; {consequence}")));
    }
    Ok(file)
}

/// Refuses anything outside the inbox.
pub(super) fn require_inbox(sandbox: &Sandbox, path: &NotePath) -> Result<()> {
    if sandbox.area_of(path) == Some(Area::Inbox) {
        return Ok(());
    }
    let inbox = &sandbox.policy().inbox;
    Err(Error::denied(format!(
        "{path} is not in the proposals inbox; only files under {inbox}/ are managed here"
    )))
}
