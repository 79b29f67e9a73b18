//! The inbox primitives the write layer needs beyond `inbox.rs`: the apply lock
//! and the listing of archive folders (`inbox/applied/<date>/`).
//!
//! Applying proposals is serialised across processes by an advisory lock on one
//! inbox file, taken with std's `File::try_lock` (`flock` on Unix, `LockFileEx`
//! on Windows). The lock belongs to the open file, not to the process, so two
//! handles in one process exclude each other exactly like two processes do, and
//! the operating system drops it when its holder dies: a crash, even `kill -9`,
//! never leaves the inbox locked. Where the file system cannot lock at all (some
//! network shares) the lock is granted without exclusion; the write layer's
//! create-new writes and never-replacing moves still let only one apply win.

use std::fs::{self, OpenOptions, TryLockError};
use std::io;
use std::thread;
use std::time::{Duration, Instant};

use super::{NotePath, Sandbox};
use crate::error::{Error, ErrorCode, Result};

/// A held inbox lock; dropping it releases the lock.
#[derive(Debug)]
pub struct InboxLock {
    /// The locked file; `None` when the file system does not support locking.
    _file: Option<fs::File>,
}

impl Sandbox {
    /// Takes the exclusive lock on an inbox file (created when missing), waiting at
    /// most `wait` for another holder to let go: `conflict` after that.
    pub(crate) fn lock_inbox_file(&self, path: &NotePath, wait: Duration) -> Result<InboxLock> {
        let mut options = OpenOptions::new();
        options.read(true).write(true).create(true).truncate(false);
        let file = super::inbox::open_verified(self, path, &options, "it was not locked")?;
        let deadline = Instant::now() + wait;
        let mut pause = Duration::from_millis(2);
        loop {
            match file.try_lock() {
                Ok(()) => return Ok(InboxLock { _file: Some(file) }),
                Err(TryLockError::WouldBlock) if Instant::now() < deadline => {
                    thread::sleep(pause);
                    pause = (pause * 2).min(Duration::from_millis(50));
                }
                Err(TryLockError::WouldBlock) => {
                    return Err(Error::new(
                        ErrorCode::Conflict,
                        format!("{path} is locked by another apply that did not finish within {wait:?}"),
                    )
                    .with_hint("another process is applying a proposal; try again in a moment"));
                }
                Err(TryLockError::Error(err)) if err.kind() == io::ErrorKind::Unsupported => {
                    return Ok(InboxLock { _file: None });
                }
                Err(TryLockError::Error(err)) => return Err(Error::io(path, &err)),
            }
        }
    }
}
