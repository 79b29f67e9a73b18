//! A running server's metrics, published in its index folder for
//! `kb-index status`, which cannot ask a server on stdio.
//!
//! Each server process, once its engine serves, takes a lock on
//! `<index folder>/servers/<pid>.lock` and holds it while it runs; then it
//! writes `<pid>.json` (transport, address, start, a [`ServerMetrics`]
//! snapshot) and rewrites it at most once a second while calls come in,
//! atomically and readable by its owner only. [`running_servers`] lists the
//! servers whose lock is held; a file whose lock is free was left by a server
//! that is gone (killed, say) and is removed. The index folder is kb-mcp's
//! own, outside what agents can read; where it is read-only, nothing is
//! published (and the log says so once).

use std::fs::{self, File, TryLockError};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use serde::{Deserialize, Serialize};
use serde_json::json;

use super::log;
use super::shared::Shared;
use crate::engine::types::ServerMetrics;
use crate::sandbox::{self, SERVERS_DIR};

/// How often a changed snapshot is written at most.
const EVERY: Duration = Duration::from_secs(1);

/// The largest snapshot file read.
const MAX_FILE_BYTES: u64 = 1 << 20;

/// What one running server publishes.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct PublishedServer {
    /// Its process id.
    pub pid: u32,
    /// `stdio` or `http`.
    pub transport: String,
    /// Where it listens (HTTP only).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub addr: Option<String>,
    /// When this snapshot was written (RFC 3339).
    pub written_at: String,
    /// Its metrics then.
    pub metrics: ServerMetrics,
}

/// Publishes the metrics of this process's server until the runtime stops.
pub(super) fn spawn(shared: Arc<Shared>, transport: &'static str, addr: Option<String>) {
    tokio::spawn(async move {
        let engine = loop {
            if let Some(engine) = shared.engine_now() {
                break engine;
            }
            tokio::time::sleep(Duration::from_millis(200)).await;
        };
        let dir = engine.index_location().dir.join(SERVERS_DIR);
        let pid = std::process::id();
        let Some(mut lock) = take_lock(&dir, pid) else { return };
        let json_file = dir.join(format!("{pid}.json"));
        let mut written = None;
        loop {
            // The index folder may be deleted while the server runs: take the lock again.
            if !lock_file(&dir, pid).exists() {
                let Some(again) = take_lock(&dir, pid) else { break };
                lock = again;
                written = None;
            }
            let generation = shared.metrics().generation();
            if written != Some(generation) {
                let published = PublishedServer {
                    pid,
                    transport: transport.to_owned(),
                    addr: addr.clone(),
                    written_at: jiff::Timestamp::now().to_string(),
                    metrics: shared.metrics_snapshot(),
                };
                let bytes = serde_json::to_vec_pretty(&published).unwrap_or_default();
                if let Err(error) = sandbox::write_private_file(&json_file, &bytes) {
                    log(
                        json!({ "event": "metrics_unpublished", "file": json_file, "error": error.to_string() }),
                    );
                    break;
                }
                written = Some(generation);
            }
            tokio::time::sleep(EVERY).await;
        }
        drop(lock);
    });
}

/// Creates `dir` and takes the lock of server `pid` there; `None` (logged)
/// when the folder cannot be written.
fn take_lock(dir: &Path, pid: u32) -> Option<File> {
    let taken = fs::create_dir_all(dir).and_then(|()| {
        let file = File::options().create(true).truncate(false).write(true).open(lock_file(dir, pid))?;
        file.lock()?;
        Ok(file)
    });
    match taken {
        Ok(file) => Some(file),
        Err(error) => {
            log(json!({ "event": "metrics_unpublished", "dir": dir, "error": error.to_string() }));
            None
        }
    }
}

fn lock_file(dir: &Path, pid: u32) -> PathBuf {
    dir.join(format!("{pid}.lock"))
}

/// The servers running on the vault whose index folder is `index_dir`, by
/// pid; the files of servers that are gone are removed on the way.
pub fn running_servers(index_dir: &Path) -> Vec<PublishedServer> {
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
        let held = match File::open(&lock) {
            Ok(file) => matches!(file.try_lock_shared(), Err(TryLockError::WouldBlock)),
            Err(_) => false,
        };
        if !held {
            let _ = fs::remove_file(entry.path());
            let _ = fs::remove_file(&lock);
            continue;
        }
        let read = sandbox::read_private_file(&entry.path(), MAX_FILE_BYTES);
        if let Ok(Some(file)) = read
            && let Ok(server) = serde_json::from_slice::<PublishedServer>(&file.bytes)
        {
            servers.push(server);
        }
    }
    servers.sort_by_key(|server| server.pid);
    servers
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_server_is_listed_while_it_holds_its_lock_and_its_files_go_after() {
        let index = tempfile::tempdir().unwrap();
        let dir = index.path().join(SERVERS_DIR);
        let lock = take_lock(&dir, 4242).unwrap();
        let metrics = super::super::metrics::Metrics::new().snapshot(None, false);
        let server = PublishedServer {
            pid: 4242,
            transport: "stdio".to_owned(),
            addr: None,
            written_at: "2026-12-06T10:00:00Z".to_owned(),
            metrics,
        };
        sandbox::write_private_file(&dir.join("4242.json"), &serde_json::to_vec(&server).unwrap()).unwrap();
        let listed = running_servers(index.path());
        assert_eq!(listed.len(), 1);
        assert_eq!((listed[0].pid, listed[0].transport.as_str()), (4242, "stdio"));
        drop(lock);
        assert!(running_servers(index.path()).is_empty(), "a server whose lock is free is gone");
        assert!(!dir.join("4242.json").exists() && !dir.join("4242.lock").exists());
    }
}
