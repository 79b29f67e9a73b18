//! Reads: open a resolved file, verify the handle is still the checked file,
//! read it whole (capped) or in chunks, and its size and times.

use std::fs::{File, Metadata};
use std::io::{self, Read, Seek, SeekFrom};
use std::time::SystemTime;

use super::errors::{is_missing, missing, too_large};
use super::resolve::{Use, logical_area, real_file, verify_opened};
use crate::error::{Error, Result};
use crate::sandbox::{NotePath, Sandbox};

/// Size and times of a file.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FileStat {
    /// Size in bytes.
    pub size: u64,
    /// Last modification time.
    pub modified: SystemTime,
    /// Birth time, where the platform knows it.
    pub created: Option<SystemTime>,
}

/// A readable file, opened and checked like [`Sandbox::read`], to be read in
/// parts: a note too large to hold in memory is served a window at a time.
#[derive(Debug)]
pub struct OpenedFile {
    pub(super) file: File,
    pub(super) len: u64,
    /// Its modification time when it was opened, where the platform gives one.
    pub(super) modified: Option<SystemTime>,
    pub(super) path: NotePath,
}

/// Bytes read from the file per step of [`OpenedFile::for_each_chunk`].
const CHUNK_BYTES: usize = 64 * 1024;

impl OpenedFile {
    /// An opened file, its metadata taken when it was opened.
    pub(in crate::sandbox) fn new(file: File, opened: &Metadata, path: &NotePath) -> OpenedFile {
        OpenedFile { file, len: opened.len(), modified: opened.modified().ok(), path: path.clone() }
    }

    /// The file's size when it was opened.
    pub fn len(&self) -> u64 {
        self.len
    }

    /// The file's modification time when it was opened (`None` where the
    /// platform keeps none).
    pub fn modified(&self) -> Option<SystemTime> {
        self.modified
    }

    /// Whether the file was empty when it was opened.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Up to `max` bytes from `offset` (fewer at the end of the file).
    pub(crate) fn read_at(&self, offset: u64, max: usize) -> Result<Vec<u8>> {
        let mut file = &self.file;
        let mut bytes = Vec::with_capacity(max.min(usize::try_from(self.len).unwrap_or(usize::MAX)));
        file.seek(SeekFrom::Start(offset))
            .and_then(|_| file.take(max as u64).read_to_end(&mut bytes))
            .map_err(|err| Error::io(&self.path, &err))?;
        Ok(bytes)
    }

    /// Streams the file from its start, `CHUNK_BYTES` at a time, calling
    /// `visit(offset, chunk)`; stops early when `visit` returns false. Returns the
    /// bytes visited.
    pub(crate) fn for_each_chunk(&self, mut visit: impl FnMut(u64, &[u8]) -> bool) -> Result<u64> {
        let mut file = &self.file;
        file.seek(SeekFrom::Start(0)).map_err(|err| Error::io(&self.path, &err))?;
        let mut buffer = vec![0u8; CHUNK_BYTES];
        let mut offset = 0u64;
        loop {
            let read = match file.read(&mut buffer) {
                Ok(0) => return Ok(offset),
                Ok(read) => read,
                Err(err) if err.kind() == io::ErrorKind::Interrupted => continue,
                Err(err) => return Err(Error::io(&self.path, &err)),
            };
            if !visit(offset, &buffer[..read]) {
                return Ok(offset + read as u64);
            }
            offset += read as u64;
        }
    }
}

/// How often a read resolves, opens and verifies a file again when the file
/// changed between the check and the open: an editor saving by rename replaces
/// the note under the same name (for a moment, no file has it), which is no
/// attack. Every try runs every check, so a symlink swapped in is refused
/// whatever the count.
const OPEN_TRIES: usize = 8;

pub(in crate::sandbox) fn open_read(sandbox: &Sandbox, path: &NotePath) -> Result<OpenedFile> {
    let area = logical_area(sandbox, path, Use::Internal)?;
    let mut tries = 0;
    loop {
        let real = real_file(sandbox, path, area)?.ok_or_else(|| missing(path))?;
        let file = match File::open(&real.canonical) {
            Ok(file) => file,
            Err(err) if is_missing(&err) && tries + 1 < OPEN_TRIES => {
                tries += 1;
                continue;
            }
            Err(err) if is_missing(&err) => return Err(missing(path)),
            Err(err) => return Err(Error::io(path, &err)),
        };
        let opened = file.metadata().map_err(|err| Error::io(path, &err))?;
        if !opened.is_file() {
            return Err(Error::denied(format!("{path} is not a regular file")));
        }
        match verify_opened(sandbox, path, area, &real, &file, &opened) {
            Ok(()) => return Ok(OpenedFile::new(file, &opened, path)),
            Err(_) if tries + 1 < OPEN_TRIES => tries += 1,
            Err(err) => return Err(err),
        }
    }
}

pub(in crate::sandbox) fn read(sandbox: &Sandbox, path: &NotePath, max_bytes: u64) -> Result<Vec<u8>> {
    let opened = open_read(sandbox, path)?;
    if opened.len() > max_bytes {
        return Err(too_large(path, opened.len(), max_bytes));
    }
    let file = &opened.file;
    let bytes = read_capped(file, max_bytes).map_err(|err| Error::io(path, &err))?;
    if bytes.len() as u64 > max_bytes {
        // The file grew after it was opened.
        return Err(too_large(path, bytes.len() as u64, max_bytes));
    }
    Ok(bytes)
}

pub(in crate::sandbox) fn stat(sandbox: &Sandbox, path: &NotePath) -> Result<Option<FileStat>> {
    let area = logical_area(sandbox, path, Use::Internal)?;
    Ok(real_file(sandbox, path, area)?.map(|real| file_stat(&real.meta)))
}

/// Reads at most `limit + 1` bytes, so growth past the limit shows.
pub(super) fn read_capped(file: &File, limit: u64) -> io::Result<Vec<u8>> {
    let mut bytes = Vec::new();
    file.take(limit.saturating_add(1)).read_to_end(&mut bytes)?;
    Ok(bytes)
}

pub(in crate::sandbox) fn file_stat(meta: &Metadata) -> FileStat {
    FileStat {
        size: meta.len(),
        modified: meta.modified().unwrap_or(SystemTime::UNIX_EPOCH),
        created: meta.created().ok(),
    }
}
