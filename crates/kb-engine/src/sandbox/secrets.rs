//! Private files outside the vault: the HTTP token file, the OAuth state,
//! and a host's configuration file the person asked `kb-mcp install` to edit.
//!
//! The token file holds salted hashes of bearer tokens, so it must not be
//! readable by other users and must never be seen half written (a server
//! re-reads it while running, so a revocation takes effect at once). It lives
//! outside the vault, which is why it does not go through the vault writer:
//! this module writes it atomically (a temporary file created with mode 0600
//! in the same folder, fsync, rename, fsync of the folder) and reads it with a
//! size cap. A file that two processes change (the OAuth state: the server
//! issuing tokens, `kb-mcp clients revoke`) is changed under an advisory lock
//! on a sibling `NAME.lock`, so neither write is lost. Nothing here knows what
//! the file means.

use std::fs::{self, OpenOptions, TryLockError};
use std::io::{self, Read, Write};
use std::path::Path;
use std::time::{Duration, Instant, SystemTime};

use crate::error::{Error, Result};

/// What identifies one version of a file, to notice that it changed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FileStamp {
    modified: Option<SystemTime>,
    len: u64,
    /// The inode on unix (a rename replaces it), else 0.
    inode: u64,
}

/// A private file's bytes and what was noticed about it.
#[derive(Debug, Clone)]
pub struct PrivateFile {
    /// The file's content.
    pub bytes: Vec<u8>,
    /// Its version, for [`private_file_stamp`] comparisons.
    pub stamp: FileStamp,
    /// Whether users other than the owner may read it (unix permission bits).
    pub readable_by_others: bool,
}

fn stamp_of(meta: &fs::Metadata) -> FileStamp {
    #[cfg(unix)]
    let inode = std::os::unix::fs::MetadataExt::ino(meta);
    #[cfg(not(unix))]
    let inode = 0;
    FileStamp { modified: meta.modified().ok(), len: meta.len(), inode }
}

/// The current version of a file; `None` when it does not exist or cannot be read.
pub fn private_file_stamp(path: &Path) -> Option<FileStamp> {
    fs::metadata(path).ok().map(|meta| stamp_of(&meta))
}

/// Reads a private file; `None` when it does not exist, `too_large`-like
/// `invalid_argument` above `max_bytes`.
pub fn read_private_file(path: &Path, max_bytes: u64) -> Result<Option<PrivateFile>> {
    let shown = path.display();
    let mut file = match fs::File::open(path) {
        Ok(file) => file,
        Err(err) if err.kind() == io::ErrorKind::NotFound => return Ok(None),
        Err(err) => return Err(Error::io(&shown, &err)),
    };
    let meta = file.metadata().map_err(|err| Error::io(&shown, &err))?;
    if !meta.is_file() {
        return Err(Error::invalid(format!("{shown} is not a file")));
    }
    if meta.len() > max_bytes {
        return Err(Error::invalid(format!("{shown} is larger than {max_bytes} bytes")));
    }
    let mut bytes = Vec::with_capacity(usize::try_from(meta.len()).unwrap_or(0));
    Read::by_ref(&mut file)
        .take(max_bytes + 1)
        .read_to_end(&mut bytes)
        .map_err(|err| Error::io(&shown, &err))?;
    #[cfg(unix)]
    let readable_by_others = std::os::unix::fs::PermissionsExt::mode(&meta.permissions()) & 0o077 != 0;
    #[cfg(not(unix))]
    let readable_by_others = false;
    Ok(Some(PrivateFile { bytes, stamp: stamp_of(&meta), readable_by_others }))
}

/// Writes a private file atomically with owner-only permissions (0600 on unix),
/// creating its folder (0700) when missing.
pub fn write_private_file(path: &Path, bytes: &[u8]) -> Result<()> {
    let shown = path.display();
    let name = path
        .file_name()
        .and_then(|name| name.to_str())
        .ok_or_else(|| Error::invalid(format!("{shown} does not name a file")))?;
    let parent = match path.parent() {
        Some(parent) if !parent.as_os_str().is_empty() => parent,
        _ => Path::new("."),
    };
    if !parent.is_dir() {
        let mut builder = fs::DirBuilder::new();
        builder.recursive(true);
        #[cfg(unix)]
        std::os::unix::fs::DirBuilderExt::mode(&mut builder, 0o700);
        builder.create(parent).map_err(|err| Error::io(parent.display(), &err))?;
    }
    let mut random = [0u8; 8];
    getrandom::fill(&mut random).map_err(|err| Error::internal(format!("no randomness: {err}")))?;
    let suffix = super::hex(&random);
    let temp = parent.join(format!(".{name}.kb-tmp-{suffix}"));
    let written = (|| -> io::Result<()> {
        let mut options = OpenOptions::new();
        options.write(true).create_new(true);
        #[cfg(unix)]
        std::os::unix::fs::OpenOptionsExt::mode(&mut options, 0o600);
        let mut file = options.open(&temp)?;
        file.write_all(bytes)?;
        file.sync_all()?;
        drop(file);
        fs::rename(&temp, path)
    })();
    if let Err(err) = written {
        let _ = fs::remove_file(&temp);
        return Err(Error::io(&shown, &err));
    }
    super::fs::sync_dir(parent);
    Ok(())
}

/// Replaces a file of the person's own outside the vault (a host's
/// configuration) with `bytes`, atomically, keeping its permissions; the
/// file it replaces is first copied beside it as `<name>.kb-mcp-backup`
/// (replacing an older backup). Returns the backup's path, `None` when there
/// was no file. A missing folder is created (0700).
pub fn replace_user_file(path: &Path, bytes: &[u8]) -> Result<Option<std::path::PathBuf>> {
    let shown = path.display();
    let name = path
        .file_name()
        .and_then(|name| name.to_str())
        .ok_or_else(|| Error::invalid(format!("{shown} does not name a file")))?;
    let backup = match fs::symlink_metadata(path) {
        Ok(meta) if meta.is_file() => {
            let backup = path.with_file_name(format!("{name}.kb-mcp-backup"));
            fs::copy(path, &backup).map_err(|err| Error::io(backup.display(), &err))?;
            Some((backup, meta.permissions()))
        }
        Ok(_) => {
            return Err(Error::invalid(format!("{shown} is not a regular file; kb-mcp leaves it alone")));
        }
        Err(err) if err.kind() == io::ErrorKind::NotFound => None,
        Err(err) => return Err(Error::io(&shown, &err)),
    };
    write_private_file(path, bytes)?;
    if let Some((_, permissions)) = &backup {
        fs::set_permissions(path, permissions.clone()).map_err(|err| Error::io(&shown, &err))?;
    }
    Ok(backup.map(|(backup, _)| backup))
}

/// The text of a file of the person's own outside the vault (at most 4 MiB),
/// `None` when there is none.
pub fn read_user_file(path: &Path) -> Result<Option<String>> {
    let Some(file) = read_private_file(path, 4 << 20)? else { return Ok(None) };
    String::from_utf8(file.bytes)
        .map(Some)
        .map_err(|_| Error::invalid(format!("{} is not UTF-8 text", path.display())))
}

/// A held lock on a private file; dropping it releases the lock.
#[derive(Debug)]
pub struct PrivateLock {
    /// The lock file; `None` where the file system cannot lock.
    _file: Option<fs::File>,
}

/// Takes the exclusive lock that serialises changes to the private file
/// `path` across processes (on `NAME.lock` beside it, created owner-only),
/// waiting up to 5 s. The operating system drops it when its holder dies.
/// Where the file system cannot lock, it is granted without exclusion.
pub fn lock_private_file(path: &Path) -> Result<PrivateLock> {
    let mut name = path.file_name().map(|n| n.to_os_string()).unwrap_or_default();
    name.push(".lock");
    let lock_path = path.with_file_name(name);
    let shown = lock_path.display();
    let mut options = OpenOptions::new();
    options.read(true).write(true).create(true).truncate(false);
    #[cfg(unix)]
    std::os::unix::fs::OpenOptionsExt::mode(&mut options, 0o600);
    let file = options.open(&lock_path).map_err(|err| Error::io(&shown, &err))?;
    let deadline = Instant::now() + Duration::from_secs(5);
    loop {
        match file.try_lock() {
            Ok(()) => return Ok(PrivateLock { _file: Some(file) }),
            Err(TryLockError::Error(err)) if err.kind() == io::ErrorKind::Unsupported => {
                return Ok(PrivateLock { _file: None });
            }
            Err(TryLockError::Error(err)) => return Err(Error::io(&shown, &err)),
            Err(TryLockError::WouldBlock) if Instant::now() < deadline => {
                std::thread::sleep(Duration::from_millis(10));
            }
            Err(TryLockError::WouldBlock) => {
                return Err(Error::new(
                    crate::error::ErrorCode::Conflict,
                    format!("{shown} stayed locked by another process for 5 s"),
                ));
            }
        }
    }
}
