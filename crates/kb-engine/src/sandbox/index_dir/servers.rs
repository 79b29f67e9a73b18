//! The index folder's `servers/`: where each running server publishes what it
//! measured, for `kb-index status`, which cannot ask a server on stdio.
//!
//! A server takes a lock on `servers/<pid>.lock` ([`ServerSlot::take`]) and
//! holds it while it runs; then it writes `servers/<pid>.json`
//! ([`ServerSlot::publish`]), atomically and readable by its owner only.
//! [`running_servers`] reads the files of the servers whose lock is held; a
//! file whose lock is free was left by a server that is gone (killed, say)
//! and is removed. The lock is the operating system's (`flock` on Unix,
//! `LockFileEx` on Windows), released by the system however the process ends.
//! Nothing here knows what the published bytes mean.

use std::fs::{self, File, TryLockError};
use std::io;
use std::path::{Path, PathBuf};

use super::folder::SERVERS_DIR;
use crate::error::Result;
use crate::sandbox::{read_private_file, write_private_file};

/// The largest published file read.
const MAX_FILE_BYTES: u64 = 1 << 20;

/// One running server's place in `servers/`, its lock held.
#[derive(Debug)]
pub struct ServerSlot {
    dir: PathBuf,
    pid: u32,
    _lock: File,
}

fn lock_file(dir: &Path, pid: u32) -> PathBuf {
    dir.join(format!("{pid}.lock"))
}

fn lock(dir: &Path, pid: u32) -> io::Result<File> {
    fs::create_dir_all(dir)?;
    let file = File::options().create(true).truncate(false).write(true).open(lock_file(dir, pid))?;
    file.lock()?;
    Ok(file)
}

impl ServerSlot {
    /// Takes the slot of server `pid` in the index folder `index_dir`.
    pub fn take(index_dir: &Path, pid: u32) -> io::Result<ServerSlot> {
        let dir = index_dir.join(SERVERS_DIR);
        let lock = lock(&dir, pid)?;
        Ok(ServerSlot { dir, pid, _lock: lock })
    }

    /// Writes what the server publishes. The index folder may have been
    /// deleted meanwhile: the slot is taken again first.
    pub fn publish(&mut self, bytes: &[u8]) -> Result<()> {
        if fs::symlink_metadata(lock_file(&self.dir, self.pid)).is_err() {
            self._lock =
                lock(&self.dir, self.pid).map_err(|err| crate::error::Error::io(self.dir.display(), &err))?;
        }
        write_private_file(&self.dir.join(format!("{}.json", self.pid)), bytes)
    }
}

/// What each server running on the index folder `index_dir` published last,
/// by pid; the files of servers that are gone are removed on the way.
pub fn running_servers(index_dir: &Path) -> Vec<(u32, Vec<u8>)> {
    let dir = index_dir.join(SERVERS_DIR);
    let Ok(entries) = fs::read_dir(&dir) else { return Vec::new() };
    let mut servers = Vec::new();
    for entry in entries.flatten() {
        let name = entry.file_name();
        let Some(pid) =
            name.to_str().and_then(|n| n.strip_suffix(".json")).and_then(|n| n.parse::<u32>().ok())
        else {
            continue;
        };
        let lock = lock_file(&dir, pid);
        let held = File::open(&lock)
            .is_ok_and(|file| matches!(file.try_lock_shared(), Err(TryLockError::WouldBlock)));
        if !held {
            let _ = fs::remove_file(entry.path());
            let _ = fs::remove_file(&lock);
            continue;
        }
        if let Ok(Some(file)) = read_private_file(&entry.path(), MAX_FILE_BYTES) {
            servers.push((pid, file.bytes));
        }
    }
    servers.sort_by_key(|(pid, _)| *pid);
    servers
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_server_is_listed_while_it_holds_its_lock_and_its_files_go_after() {
        let index = tempfile::tempdir().unwrap();
        let mut slot = ServerSlot::take(index.path(), 4242).unwrap();
        slot.publish(b"{\"pid\": 4242}").unwrap();
        assert_eq!(running_servers(index.path()), [(4242, b"{\"pid\": 4242}".to_vec())]);
        // The index folder deleted under a running server: the next publish takes the slot again.
        fs::remove_dir_all(index.path().join(SERVERS_DIR)).unwrap();
        slot.publish(b"{}").unwrap();
        assert_eq!(running_servers(index.path()).len(), 1);
        drop(slot);
        assert!(running_servers(index.path()).is_empty(), "a server whose lock is free is gone");
        let left = fs::read_dir(index.path().join(SERVERS_DIR)).unwrap().count();
        assert_eq!(left, 0, "its files are removed");
    }
}
