//! A running server's metrics, published in its index folder for
//! `kb-index status`, which cannot ask a server on stdio.
//!
//! Each server process, once its engine serves, takes its slot in the index
//! folder's `servers/` (a lock it holds while it runs, see
//! `sandbox::ServerSlot`) and publishes a [`PublishedServer`] there (its
//! transport, address and a [`ServerMetrics`] snapshot), rewritten at most
//! once a second while calls come in. [`running_servers`] reads those of the
//! servers still running. The index folder is kb-mcp's own, outside what
//! agents can read; where it cannot be written, nothing is published (and
//! the log says so once).

use std::sync::Arc;
use std::time::Duration;

use serde::{Deserialize, Serialize};
use serde_json::json;

use super::log;
use super::shared::Shared;
use super::vaults::Vaults;
use crate::engine::types::ServerMetrics;
use crate::sandbox::{self, ServerSlot};

/// How often a changed snapshot is written at most.
const EVERY: Duration = Duration::from_secs(1);

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

/// Publishes the metrics of this process's server until the runtime stops,
/// in the index folder of every vault it serves.
pub(super) fn spawn(vaults: &Vaults, transport: &'static str, addr: Option<String>) {
    for served in vaults.all() {
        publish(served.shared.clone(), transport, addr.clone());
    }
}

/// Publishes the metrics in one vault's index folder.
fn publish(shared: Arc<Shared>, transport: &'static str, addr: Option<String>) {
    tokio::spawn(async move {
        let engine = loop {
            if let Some(engine) = shared.engine_now() {
                break engine;
            }
            tokio::time::sleep(Duration::from_millis(200)).await;
        };
        let index_dir = engine.index_location().dir;
        let pid = std::process::id();
        let mut slot = match ServerSlot::take(&index_dir, pid) {
            Ok(slot) => slot,
            Err(error) => {
                log(json!({ "event": "metrics_unpublished", "dir": index_dir, "error": error.to_string() }));
                return;
            }
        };
        let mut written = None;
        loop {
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
                if let Err(error) = slot.publish(&bytes) {
                    log(
                        json!({ "event": "metrics_unpublished", "dir": index_dir, "error": error.to_string() }),
                    );
                    return;
                }
                written = Some(generation);
            }
            tokio::time::sleep(EVERY).await;
        }
    });
}

/// The servers running on the vault whose index folder is `index_dir`, by
/// pid (see `sandbox::running_servers`).
pub fn running_servers(index_dir: &std::path::Path) -> Vec<PublishedServer> {
    sandbox::running_servers(index_dir)
        .into_iter()
        .filter_map(|(_, bytes)| serde_json::from_slice(&bytes).ok())
        .collect()
}
