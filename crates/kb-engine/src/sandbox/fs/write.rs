//! Atomic writes: a temporary file in the same folder, fsync, then rename (or
//! link, for a file that must not exist yet), so a note is never seen half
//! written; and the folders they need.
//!
//! A file written from notes (a staged copy, a plan, a trash copy, a note a
//! revert brings back) holds their text, so it is never more readable than
//! the most private of them: [`NotePermissions`] is what they all allow.

use std::fs::{self, File, Metadata, OpenOptions};
use std::io::{self, Write};
use std::path::{Path, PathBuf};

use super::errors::{not_writable, target_exists};
use super::resolve::{check_note_target, check_whole_note_target, walk_write_chain};
use crate::error::{Error, Result};
use crate::sandbox::{Area, NotePath, Sandbox, hex};

/// How [`Sandbox::write_atomic`] treats an existing target.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum WriteMode {
    /// Fail with `target_exists` if the target exists, never overwrite.
    CreateNew,
    /// Replace the target atomically.
    Replace,
}

/// Creates a folder (and its parents) outside the vault's note areas, e.g. the index folder.
pub fn ensure_dir(dir: &Path) -> Result<()> {
    fs::create_dir_all(dir).map_err(|err| Error::io(dir.display(), &err))
}

/// The permissions a file holding the text of some notes may have: only
/// what every one of them allows (`Sandbox::permissions_of`). With no note
/// behind it, a file gets the default mode.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct NotePermissions {
    /// The permission bits all the notes have.
    #[cfg(unix)]
    mode: u32,
    /// Whether one of the notes is read-only.
    #[cfg(not(unix))]
    read_only: bool,
}

impl NotePermissions {
    /// What a file of no note may have: anything the default mode gives.
    const ANY: NotePermissions = NotePermissions {
        #[cfg(unix)]
        mode: 0o777,
        #[cfg(not(unix))]
        read_only: false,
    };

    /// What both allow.
    fn and(self, other: NotePermissions) -> NotePermissions {
        NotePermissions {
            #[cfg(unix)]
            mode: self.mode & other.mode,
            #[cfg(not(unix))]
            read_only: self.read_only || other.read_only,
        }
    }

    fn of(meta: &Metadata) -> NotePermissions {
        NotePermissions {
            #[cfg(unix)]
            mode: std::os::unix::fs::PermissionsExt::mode(&meta.permissions()) & 0o777,
            #[cfg(not(unix))]
            read_only: meta.permissions().readonly(),
        }
    }
}

/// The permissions every file in `files` allows (notes, or copies of notes in
/// the inbox), each reached like a write target: through real folders of the
/// vault. Read in parallel: a hub's move holds the text of thousands of notes.
pub(in crate::sandbox) fn permissions_of(sandbox: &Sandbox, files: &[NotePath]) -> Result<NotePermissions> {
    use rayon::prelude::*;
    files
        .par_iter()
        .map(|file| {
            let disk = walk_write_chain(sandbox, file, false)?;
            let meta = fs::metadata(&disk).map_err(|err| Error::io(file, &err))?;
            Ok(NotePermissions::of(&meta))
        })
        .try_reduce(|| NotePermissions::ANY, |all, one| Ok(all.and(one)))
}

pub(in crate::sandbox) fn write_atomic(
    sandbox: &Sandbox,
    path: &NotePath,
    bytes: &[u8],
    mode: WriteMode,
    notes: Option<&NotePermissions>,
) -> Result<()> {
    match sandbox.policy.area_of(path) {
        Some(Area::Inbox) => {}
        // The memory only grows: an entry is written once, never replaced.
        Some(Area::Memory) if mode == WriteMode::CreateNew && notes.is_none() && path.is_markdown() => {}
        // A file made from notes (a plan's create) may be a canvas brought back.
        Some(Area::Note) if notes.is_some() => check_whole_note_target(sandbox, path)?,
        Some(Area::Note) => check_note_target(sandbox, path)?,
        _ => return Err(not_writable(sandbox, path)),
    }
    let target = walk_write_chain(sandbox, path, true)?;
    let parent = target.parent().unwrap_or(&sandbox.root);
    if mode == WriteMode::CreateNew && fs::symlink_metadata(&target).is_ok() {
        return Err(target_exists(path));
    }
    let access = notes.map_or(Access::Default, |notes| Access::AtMost(*notes));
    let temp = TempFile::create(parent, path.file_name()).map_err(|err| Error::io(path, &err))?;
    temp.fill(bytes, access).map_err(|err| Error::io(path, &err))?;
    match mode {
        WriteMode::Replace => fs::rename(&temp.path, &target).map_err(|err| Error::io(path, &err))?,
        WriteMode::CreateNew => match fs::hard_link(&temp.path, &target) {
            Ok(()) => {}
            Err(err) if err.kind() == io::ErrorKind::AlreadyExists => return Err(target_exists(path)),
            // No hard links here (some network and FAT file systems): create the
            // target itself exclusively; it is briefly visible while written.
            Err(_) => create_new_direct(path, &target, bytes)?,
        },
    }
    drop(temp);
    sync_dir(parent);
    Ok(())
}

/// The fallback of [`WriteMode::CreateNew`] where hard links are unsupported.
fn create_new_direct(path: &NotePath, target: &Path, bytes: &[u8]) -> Result<()> {
    let mut file = match OpenOptions::new().write(true).create_new(true).open(target) {
        Ok(file) => file,
        Err(err) if err.kind() == io::ErrorKind::AlreadyExists => return Err(target_exists(path)),
        Err(err) => return Err(Error::io(path, &err)),
    };
    if let Err(err) = file.write_all(bytes).and_then(|()| file.sync_all()) {
        drop(file);
        let _ = fs::remove_file(target);
        return Err(Error::io(path, &err));
    }
    Ok(())
}

/// A temporary file beside the target, removed when dropped unless renamed away.
pub(in crate::sandbox) struct TempFile {
    pub(in crate::sandbox) path: PathBuf,
    pub(super) file: File,
    /// Set by [`TempFile::keep`]: dropping then closes the file and leaves it on disk.
    kept: bool,
}

/// Whose permissions a file written by [`TempFile::fill`] takes.
#[derive(Clone, Copy)]
pub(in crate::sandbox) enum Access<'a> {
    /// The default for a new file (the process's umask decides).
    Default,
    /// Exactly those of the file it replaces: mode, and owner where the process may.
    Same(&'a Metadata),
    /// No more than the notes whose text it holds allow (a staged copy of a
    /// note, a plan of several): the default mode with every permission bit
    /// one of them lacks taken away.
    AtMost(NotePermissions),
}

impl TempFile {
    /// What every temporary file name holds: `.<name>.kb-tmp-<16 hex digits>`.
    pub(in crate::sandbox) const MARK: &'static str = ".kb-tmp-";

    /// Creates `.<name>.kb-tmp-<random>` in `dir`, exclusively. The leading dot
    /// keeps it out of every walk.
    pub(in crate::sandbox) fn create(dir: &Path, name: &str) -> io::Result<TempFile> {
        let mut cut = name.len().min(200);
        while !name.is_char_boundary(cut) {
            cut -= 1;
        }
        let mut random = [0u8; 8];
        getrandom::fill(&mut random).map_err(|err| io::Error::other(err.to_string()))?;
        let suffix = hex(&random);
        let path = dir.join(format!(".{}{}{suffix}", &name[..cut], TempFile::MARK));
        let file = OpenOptions::new().write(true).create_new(true).open(&path)?;
        Ok(TempFile { path, file, kept: false })
    }

    /// Writes the bytes, gives the file its permissions (after writing, so a
    /// read-only mode does not stop the write) and flushes it to disk.
    pub(in crate::sandbox) fn fill(&self, bytes: &[u8], access: Access<'_>) -> io::Result<()> {
        self.fill_unflushed(bytes, access)?;
        self.file.sync_all()
    }

    /// [`TempFile::fill`] without the flush, for files flushed together later
    /// (one `syncfs` for a whole multi-file apply, not one fsync per note).
    pub(in crate::sandbox) fn fill_unflushed(&self, bytes: &[u8], access: Access<'_>) -> io::Result<()> {
        (&self.file).write_all(bytes)?;
        set_access(&self.file, access)
    }

    /// Takes charge of a temporary file written earlier (see
    /// [`TempFile::fill_unflushed`]), reopening it; removed when dropped, as any.
    pub(in crate::sandbox) fn adopt(path: PathBuf) -> io::Result<TempFile> {
        match File::open(&path) {
            Ok(file) => Ok(TempFile { path, file, kept: false }),
            Err(err) => {
                let _ = fs::remove_file(&path);
                Err(err)
            }
        }
    }

    /// Leaves the file on disk (its bytes may be a person's) and returns its
    /// path; the open file is closed. (It was `mem::forget`, which leaked the
    /// descriptor: one per note of every multi-file apply, so a long-running
    /// server ran out, and a move of a note with 2,000 backlinks failed with
    /// "too many open files".)
    pub(in crate::sandbox) fn keep(mut self) -> PathBuf {
        self.kept = true;
        self.path.clone()
    }
}

impl Drop for TempFile {
    fn drop(&mut self) {
        if self.kept {
            return;
        }
        // After a successful rename the name is gone and this fails harmlessly.
        let _ = fs::remove_file(&self.path);
    }
}

/// Gives an open file the permissions [`Access`] asks for. Changing the owner
/// needs privileges most processes lack: then the file stays ours, with the mode.
#[cfg(unix)]
fn set_access(file: &File, access: Access<'_>) -> io::Result<()> {
    use std::os::unix::fs::{MetadataExt, PermissionsExt};
    let own = file.metadata()?;
    let mode = match access {
        Access::Default => return Ok(()),
        Access::Same(like) => like.mode() & 0o7777,
        Access::AtMost(notes) => own.mode() & notes.mode & 0o777,
    };
    if own.mode() & 0o7777 != mode {
        file.set_permissions(fs::Permissions::from_mode(mode))?;
    }
    if let Access::Same(like) = access
        && (like.uid() != own.uid() || like.gid() != own.gid())
    {
        // Without the privilege to give the file away, at least keep its group.
        if std::os::unix::fs::fchown(file, Some(like.uid()), Some(like.gid())).is_err() {
            let _ = std::os::unix::fs::fchown(file, None, Some(like.gid()));
        }
    }
    Ok(())
}

#[cfg(not(unix))]
fn set_access(file: &File, access: Access<'_>) -> io::Result<()> {
    let read_only = match access {
        Access::Default => false,
        Access::Same(like) => like.permissions().readonly(),
        Access::AtMost(notes) => notes.read_only,
    };
    if read_only {
        let mut permissions = file.metadata()?.permissions();
        permissions.set_readonly(true);
        file.set_permissions(permissions)?;
    }
    Ok(())
}

/// Flushes a folder's entries (the rename or link) to disk, where the platform can.
pub(in crate::sandbox) fn sync_dir(dir: &Path) {
    #[cfg(unix)]
    {
        let _ = File::open(dir).and_then(|folder| folder.sync_all());
    }
    #[cfg(not(unix))]
    let _ = dir;
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The descriptors of this process open on `path` (Linux's `/proc/self/fd`).
    #[cfg(target_os = "linux")]
    fn open_on(path: &Path) -> usize {
        fs::read_dir("/proc/self/fd")
            .unwrap()
            .filter_map(|entry| fs::read_link(entry.ok()?.path()).ok())
            .filter(|target| target == path)
            .count()
    }

    #[test]
    fn a_kept_temporary_file_stays_on_disk_and_is_closed() {
        let dir = tempfile::tempdir().unwrap();
        let temp = TempFile::create(dir.path(), "note.md").unwrap();
        temp.fill_unflushed(b"kept bytes", Access::Default).unwrap();
        let path = temp.path.clone();
        #[cfg(target_os = "linux")]
        assert_eq!(open_on(&path), 1, "open while written");
        assert_eq!(temp.keep(), path);
        assert_eq!(fs::read(&path).unwrap(), b"kept bytes");
        #[cfg(target_os = "linux")]
        assert_eq!(open_on(&path), 0, "keep closes the file: a descriptor per kept file ran a server out");
        #[cfg(not(target_os = "linux"))]
        eprintln!("SKIPPED off Linux: whether keep closes the file (needs /proc/self/fd)");

        let dropped = TempFile::create(dir.path(), "other.md").unwrap();
        let gone = dropped.path.clone();
        drop(dropped);
        assert!(!gone.exists(), "a temporary file not kept is removed");
    }
}
