//! Deleting a note (or a canvas): it moves into the inbox's trash, whole,
//! and can come back from there.
//!
//! The note itself is renamed (its file, mode and all), never copied, where
//! the trash is on the same file system; its bytes are compared where they
//! landed, and the trashed file is watched for a late save like any file an
//! apply displaced (`displaced.rs`).

use std::fs;
use std::io;
use std::path::Path;

use super::displaced::{Discards, LateSave, read_stamped};
use super::fs::{
    WriteMode, check_whole_note_target, is_missing, sync_dir, target_exists, walk_write_chain, write_atomic,
};
use super::inbox::require_inbox;
use super::{NotePath, Sandbox};
use crate::error::{Error, ErrorCode, Result};

impl Sandbox {
    /// Moves a note into the trash (`trash`, an inbox path) when it holds
    /// exactly `expected`. The note itself is moved, in one rename, and its
    /// bytes are compared where they landed: a save made right before is put
    /// back (`stale_base`), and one made right after lands in the trashed file,
    /// which `discards` watches ([`Discards::late_saves`]). The trashed note
    /// keeps its file, mode included. Where the trash is on another file
    /// system, the bytes are copied to it and the note removed after a check.
    pub(crate) fn trash_note(
        &self,
        path: &NotePath,
        trash: &NotePath,
        expected: &[u8],
        conflict_copy: &NotePath,
        discards: &mut Discards,
    ) -> Result<()> {
        check_whole_note_target(self, path)?;
        require_inbox(self, trash)?;
        let note_disk = walk_write_chain(self, path, false)?;
        let trash_disk = walk_write_chain(self, trash, true)?;
        match fs::read(&trash_disk) {
            // An earlier try copied it there: the note is what moves now.
            Ok(bytes) if bytes == expected => {
                fs::remove_file(&trash_disk).map_err(|err| Error::io(trash, &err))?
            }
            Ok(_) => return Err(target_exists(trash)),
            Err(err) if is_missing(&err) => {}
            Err(err) => return Err(Error::io(trash, &err)),
        }
        match rename_no_replace(&note_disk, &trash_disk) {
            Ok(()) => {}
            Err(err) if is_missing(&err) => return Err(changed(path)),
            Err(err) if err.kind() == io::ErrorKind::CrossesDevices => {
                write_atomic(self, trash, expected, WriteMode::CreateNew, None)?;
                return match self.remove_note(path, expected) {
                    Ok(_) => Ok(()),
                    Err(err) => {
                        let _ = fs::remove_file(&trash_disk);
                        Err(err)
                    }
                };
            }
            Err(err) => return Err(Error::io(path, &err)),
        }
        match read_stamped(&trash_disk) {
            Ok((bytes, meta)) if bytes == expected => {
                discards.watch_trashed(&trash_disk, &note_disk, path, (&meta, &bytes));
                Ok(())
            }
            _ => {
                let late = LateSave::trashed(trash_disk, note_disk, path);
                self.put_back_late_save(late, &[], conflict_copy)?;
                Err(changed(path))
            }
        }
    }

    /// Puts a trashed note (`trash`, an inbox path) back at `path`, keeping
    /// its file and mode: what a rolled-back delete does. `target_exists` when
    /// a file took the name meanwhile.
    pub(crate) fn untrash_note(&self, trash: &NotePath, path: &NotePath) -> Result<()> {
        check_whole_note_target(self, path)?;
        require_inbox(self, trash)?;
        let trash_disk = walk_write_chain(self, trash, false)?;
        let note_disk = walk_write_chain(self, path, true)?;
        match rename_no_replace(&trash_disk, &note_disk) {
            Ok(()) => {
                sync_dir(note_disk.parent().unwrap_or(self.root()));
                Ok(())
            }
            Err(err) if err.kind() == io::ErrorKind::AlreadyExists => Err(target_exists(path)),
            Err(err) if err.kind() == io::ErrorKind::CrossesDevices => {
                let bytes = fs::read(&trash_disk).map_err(|err| Error::io(trash, &err))?;
                write_atomic(self, path, &bytes, WriteMode::CreateNew, None)?;
                let _ = fs::remove_file(&trash_disk);
                Ok(())
            }
            Err(err) => Err(Error::io(path, &err)),
        }
    }
}

/// Renames `from` to `to` unless `to` exists, in one step where the system can.
pub(super) fn rename_no_replace(from: &Path, to: &Path) -> io::Result<()> {
    #[cfg(target_os = "linux")]
    {
        use rustix::fs::{CWD, RenameFlags, renameat_with};
        match renameat_with(CWD, from, CWD, to, RenameFlags::NOREPLACE) {
            Ok(()) => return Ok(()),
            Err(err) if err == rustix::io::Errno::INVAL || err == rustix::io::Errno::NOSYS => {}
            Err(err) => return Err(err.into()),
        }
    }
    if fs::symlink_metadata(to).is_ok() {
        return Err(io::Error::from(io::ErrorKind::AlreadyExists));
    }
    fs::rename(from, to)
}

/// The note no longer holds the bytes the proposal was checked against.
fn changed(path: &NotePath) -> Error {
    Error::new(ErrorCode::StaleBase, format!("{path} has changed since the proposal was checked"))
        .with_hint("nothing was moved; read the note again and propose the change again")
}
