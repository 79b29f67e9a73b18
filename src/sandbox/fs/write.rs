//! Atomic writes: a temporary file in the same folder, fsync, then rename (or
//! link, for a file that must not exist yet), so a note is never seen half
//! written; and the folders they need.

use std::fs::{self, File, Metadata, OpenOptions};
use std::io::{self, Write};
use std::path::{Path, PathBuf};

use super::errors::{not_writable, target_exists};
use super::resolve::{check_note_target, walk_write_chain};
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

pub(in crate::sandbox) fn write_atomic(
    sandbox: &Sandbox,
    path: &NotePath,
    bytes: &[u8],
    mode: WriteMode,
    like: Option<&NotePath>,
) -> Result<()> {
    match sandbox.policy.area_of(path) {
        Some(Area::Inbox) => {}
        Some(Area::Note) => check_note_target(sandbox, path)?,
        _ => return Err(not_writable(sandbox, path)),
    }
    let target = walk_write_chain(sandbox, path, true)?;
    let parent = target.parent().unwrap_or(&sandbox.root);
    if mode == WriteMode::CreateNew && fs::symlink_metadata(&target).is_ok() {
        return Err(target_exists(path));
    }
    let source = match like {
        Some(like) => {
            let disk = walk_write_chain(sandbox, like, false)?;
            Some(fs::metadata(&disk).map_err(|err| Error::io(like, &err))?)
        }
        None => None,
    };
    let access = source.as_ref().map_or(Access::Default, Access::AtMost);
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
    /// No more than those of the file it comes from (a staged copy of a note):
    /// the default mode with the source's missing permission bits taken away.
    AtMost(&'a Metadata),
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
        Access::AtMost(like) => own.mode() & like.mode() & 0o777,
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
    if let Access::Same(like) | Access::AtMost(like) = access
        && like.permissions().readonly()
    {
        file.set_permissions(like.permissions())?;
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
