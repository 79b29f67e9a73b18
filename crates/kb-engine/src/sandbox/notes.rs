//! Moving and removing notes, for multi-file proposals (a move, a delete to the
//! trash): the only changes besides [`Sandbox::write_atomic`] and
//! [`Sandbox::replace_note`] the library makes to a notes root, with the removal
//! of an empty folder a rolled-back apply created.
//!
//! Both take approved note targets only (a `.md` path in a notes root, reached
//! through real folders; a rename also a canvas a move rewrites, a removal
//! a canvas a delete trashed or a revert brought back), never
//! replace a file, and act only on a note that still holds the bytes the
//! caller checked, so a person's save is never lost.

use std::fs;
use std::io;

use super::fs::{
    is_missing, missing, resolve_whole_note_target, same_file, sync_dir, target_exists, walk_write_chain,
};
use super::{Area, NotePath, Sandbox};
use crate::error::{Error, ErrorCode, Result};

/// Largest note a move or removal checks.
const NOTE_MAX_BYTES: u64 = 1 << 30;

impl Sandbox {
    /// Renames a note to another note path (or a text file a plan rewrites, a
    /// canvas, to another path: [`Sandbox::resolve_plan_target`]), creating
    /// folders as needed and never replacing: `target_exists` when `to` exists (unless it is the very same
    /// file, as a case-only rename on a case-insensitive file system finds it),
    /// `not_found` when `from` is gone, `stale_base` when `from` no longer holds
    /// exactly `expected`.
    pub(crate) fn rename_note(&self, from: &NotePath, to: &NotePath, expected: &[u8]) -> Result<()> {
        self.rename_note_flushed(from, to, expected, true)
    }

    /// [`Sandbox::rename_note`] leaving the flush of the folders to
    /// [`Sandbox::flush_files`] (one for a whole multi-file apply).
    pub(crate) fn rename_note_unflushed(
        &self,
        from: &NotePath,
        to: &NotePath,
        expected: &[u8],
    ) -> Result<()> {
        self.rename_note_flushed(from, to, expected, !cfg!(target_os = "linux"))
    }

    fn rename_note_flushed(
        &self,
        from: &NotePath,
        to: &NotePath,
        expected: &[u8],
        flush: bool,
    ) -> Result<()> {
        let from = self.resolve_plan_target(from.as_str())?;
        let to = self.resolve_plan_target(to.as_str())?;
        self.check_note_hash(&from, expected)?;
        let source = walk_write_chain(self, &from, false)?;
        let target = walk_write_chain(self, &to, true)?;
        let source_meta = fs::symlink_metadata(&source).map_err(|err| Error::io(&from, &err))?;
        match fs::symlink_metadata(&target) {
            Ok(meta) if same_file(&meta, &source_meta) && from.as_str() != to.as_str() => {
                // The same file under another case: a plain rename changes the name.
                fs::rename(&source, &target).map_err(|err| Error::io(&from, &err))?;
            }
            Ok(_) => return Err(target_exists(&to)),
            Err(err) if is_missing(&err) => match fs::hard_link(&source, &target) {
                Ok(()) => {
                    if let Err(err) = fs::remove_file(&source) {
                        let _ = fs::remove_file(&target);
                        return Err(if is_missing(&err) { missing(&from) } else { Error::io(&from, &err) });
                    }
                }
                Err(err) if err.kind() == io::ErrorKind::AlreadyExists => return Err(target_exists(&to)),
                Err(err) if is_missing(&err) => return Err(missing(&from)),
                Err(_) => fs::rename(&source, &target).map_err(|err| Error::io(&from, &err))?,
            },
            Err(err) => return Err(Error::io(&to, &err)),
        }
        if flush {
            sync_dir(target.parent().unwrap_or(self.root()));
            sync_dir(source.parent().unwrap_or(self.root()));
        }
        Ok(())
    }

    /// Whether `a` and `b` name one and the same file: a rename (a link under
    /// the new name, then the old name's removal) that a crash stopped in
    /// between leaves the note under both. `false` when either is missing.
    pub(crate) fn same_note_file(&self, a: &NotePath, b: &NotePath) -> Result<bool> {
        let meta = |path: &NotePath| -> Result<Option<fs::Metadata>> {
            let path = self.resolve_plan_target(path.as_str())?;
            let disk = walk_write_chain(self, &path, false)?;
            match fs::symlink_metadata(&disk) {
                Ok(meta) => Ok(Some(meta)),
                Err(err) if is_missing(&err) => Ok(None),
                Err(err) => Err(Error::io(&path, &err)),
            }
        };
        Ok(match (meta(a)?, meta(b)?) {
            (Some(a), Some(b)) => a.is_file() && same_file(&a, &b),
            _ => false,
        })
    }

    /// Removes the name `drop` of a file `keep` names too (see
    /// [`Sandbox::same_note_file`]): the file itself stays, under `keep`.
    /// Refuses when the two are not one file.
    pub(crate) fn drop_second_name(&self, keep: &NotePath, drop: &NotePath) -> Result<()> {
        if !self.same_note_file(keep, drop)? {
            return Err(Error::internal(format!("{drop} is not a second name of {keep}")));
        }
        let drop = self.resolve_plan_target(drop.as_str())?;
        let disk = walk_write_chain(self, &drop, false)?;
        fs::remove_file(&disk).map_err(|err| Error::io(&drop, &err))?;
        sync_dir(disk.parent().unwrap_or(self.root()));
        Ok(())
    }

    /// Removes a note that still holds exactly `expected` (its bytes are kept
    /// elsewhere first: the trash, or the note it was moved to); `false` when it
    /// was already gone, `stale_base` when it changed.
    pub(crate) fn remove_note(&self, path: &NotePath, expected: &[u8]) -> Result<bool> {
        let path = resolve_whole_note_target(self, path.as_str())?;
        match self.check_note_hash(&path, expected) {
            Ok(()) => {}
            Err(err) if err.code == ErrorCode::NotFound => return Ok(false),
            Err(err) => return Err(err),
        }
        let disk = walk_write_chain(self, &path, false)?;
        match fs::remove_file(&disk) {
            Ok(()) => {
                sync_dir(disk.parent().unwrap_or(self.root()));
                Ok(true)
            }
            Err(err) if is_missing(&err) => Ok(false),
            Err(err) => Err(Error::io(&path, &err)),
        }
    }

    fn check_note_hash(&self, path: &NotePath, expected: &[u8]) -> Result<()> {
        let bytes = self.read_plan_file(path, NOTE_MAX_BYTES)?;
        if bytes == expected {
            Ok(())
        } else {
            Err(Error::new(
                ErrorCode::StaleBase,
                format!("{path} has changed since the proposal was checked"),
            )
            .with_hint("nothing was moved; read the note again and propose the change again"))
        }
    }
}

impl Sandbox {
    /// Whether `folder` (vault-relative) exists as a real folder, reached through
    /// real folders of the vault (never a symlink).
    pub(crate) fn folder_exists(&self, folder: &NotePath) -> Result<bool> {
        let disk = walk_to_folder(self, folder)?;
        match fs::symlink_metadata(&disk) {
            Ok(meta) => Ok(meta.is_dir()),
            Err(err) if is_missing(&err) => Ok(false),
            Err(err) => Err(Error::io(folder, &err)),
        }
    }

    /// Removes `folder` (in a notes root or the inbox) when it is empty: what an
    /// apply rolled back does with the folders it created. `false` when it is gone
    /// or holds anything (removing only an empty folder is one step of the file
    /// system, so nothing put in it meanwhile is ever lost).
    pub(crate) fn remove_empty_folder(&self, folder: &NotePath) -> Result<bool> {
        if !matches!(self.policy.area_of(folder), Some(Area::Note | Area::Inbox)) {
            return Err(Error::denied(format!(
                "{folder}: only folders of the notes and the inbox are removed"
            )));
        }
        let disk = walk_to_folder(self, folder)?;
        match fs::remove_dir(&disk) {
            Ok(()) => {
                sync_dir(disk.parent().unwrap_or(self.root()));
                Ok(true)
            }
            Err(err) if is_missing(&err) || err.kind() == io::ErrorKind::DirectoryNotEmpty => Ok(false),
            Err(err) => Err(Error::io(folder, &err)),
        }
    }

    /// Whether the folder of `path` lists exactly its file name (not merely a
    /// name a case-insensitive file system takes for it).
    pub(crate) fn has_exact_name(&self, path: &NotePath) -> bool {
        let Ok(disk) = walk_write_chain(self, path, false) else { return false };
        let Some(parent) = disk.parent() else { return false };
        fs::read_dir(parent).is_ok_and(|entries| {
            entries.flatten().any(|entry| entry.file_name().to_str() == Some(path.file_name()))
        })
    }
}

/// The disk path of a vault folder, every existing component on the way checked
/// to be a real folder (see [`walk_write_chain`]); nothing is created.
pub(super) fn walk_to_folder(sandbox: &Sandbox, folder: &NotePath) -> Result<std::path::PathBuf> {
    let inside = NotePath::parse(&format!("{folder}/_"))?;
    let probe = walk_write_chain(sandbox, &inside, false)?;
    Ok(probe.parent().unwrap_or(sandbox.root()).to_path_buf())
}
