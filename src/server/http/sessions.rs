//! Sessions: who owns each open session, the cap per token, the idle sweep
//! and revocation (a token removed from the file ends its sessions).

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use rmcp::transport::streamable_http_server::session::SessionManager as _;
use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;
use serde_json::json;
use tokio_util::sync::CancellationToken;

use super::gate::Gate;
use crate::error::Result;
use crate::server::log;
use crate::server::tokens::Grant;

/// How often open sessions are checked against the token file and their idle time.
const SWEEP_EVERY: Duration = Duration::from_millis(250);

/// Whether a request body is a JSON-RPC `initialize` request (the one that opens a session).
pub(super) fn is_initialize(body: &[u8]) -> bool {
    serde_json::from_slice::<serde_json::Value>(body)
        .is_ok_and(|message| message.get("method").and_then(|m| m.as_str()) == Some("initialize"))
}

/// The sessions opened through the gate: which token opened each, and when it
/// was last used. A session answers only to the token that opened it; a token
/// holds at most `cap` sessions; a revoked token's sessions (and with them their
/// open event streams) are closed by [`sweep_sessions`] within a sweep of the
/// token file noticing, and idle ones are closed after `idle`.
pub(super) struct Sessions {
    manager: Arc<LocalSessionManager>,
    pub(super) cap: usize,
    pub(super) idle: Duration,
    state: Mutex<SessionTable>,
}

#[derive(Default)]
struct SessionTable {
    pub(super) open: HashMap<String, SessionEntry>,
    /// Initialize requests under way, per token key: they count against the cap.
    pub(super) opening: HashMap<[u8; 32], usize>,
}

struct SessionEntry {
    owner: [u8; 32],
    pub(super) name: Arc<str>,
    last_used: Instant,
}

/// A slot reserved for a session being opened; released unless [`Opening::opened`] fills it.
pub(super) struct Opening<'a> {
    pub(super) sessions: &'a Sessions,
    owner: [u8; 32],
    pub(super) name: Arc<str>,
}

impl Opening<'_> {
    pub(super) fn opened(self, id: &str) {
        let mut table = self.sessions.table();
        table.open.insert(
            id.to_owned(),
            SessionEntry { owner: self.owner, name: self.name.clone(), last_used: Instant::now() },
        );
        // Dropping `self` then releases the reservation (counting it twice for a moment is
        // on the safe side of the cap).
    }
}

impl Drop for Opening<'_> {
    fn drop(&mut self) {
        drop_opening(&mut self.sessions.table(), &self.owner);
    }
}

fn drop_opening(table: &mut SessionTable, owner: &[u8; 32]) {
    if let Some(count) = table.opening.get_mut(owner) {
        *count -= 1;
        if *count == 0 {
            table.opening.remove(owner);
        }
    }
}

impl Sessions {
    pub(super) fn new(manager: Arc<LocalSessionManager>, cap: usize, idle: Duration) -> Sessions {
        Sessions { manager, cap: cap.max(1), idle, state: Mutex::new(SessionTable::default()) }
    }

    fn table(&self) -> std::sync::MutexGuard<'_, SessionTable> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Whether `grant` may use session `id`: any session it opened, and sessions the
    /// gate does not know (rmcp answers those with 404).
    pub(super) fn admit(&self, id: &str, grant: &Grant) -> bool {
        match self.table().open.get_mut(id) {
            Some(entry) if entry.owner == grant.key => {
                entry.last_used = Instant::now();
                true
            }
            Some(_) => false,
            None => true,
        }
    }

    /// Reserves a session for `grant`, or says how many it already has open.
    pub(super) async fn reserve(&self, grant: &Grant) -> Result<Opening<'_>, usize> {
        // Sessions rmcp has already ended no longer count.
        let mine: Vec<String> = self
            .table()
            .open
            .iter()
            .filter(|(_, e)| e.owner == grant.key)
            .map(|(id, _)| id.clone())
            .collect();
        if mine.len() >= self.cap {
            for id in mine {
                if !self.manager.has_session(&Arc::from(id.as_str())).await.unwrap_or(false) {
                    self.table().open.remove(&id);
                }
            }
        }
        let mut table = self.table();
        let open = table.open.values().filter(|e| e.owner == grant.key).count()
            + table.opening.get(&grant.key).copied().unwrap_or(0);
        if open >= self.cap {
            return Err(open);
        }
        *table.opening.entry(grant.key).or_default() += 1;
        Ok(Opening { sessions: self, owner: grant.key, name: grant.name.clone() })
    }

    /// Drops a session the client ended.
    pub(super) fn forget(&self, id: &str) {
        self.table().open.remove(id);
    }

    /// Closes the sessions of tokens no longer admitted and the ones idle too long.
    async fn sweep(&self, live: &[[u8; 32]]) {
        let mut closing: Vec<(String, Arc<str>, &'static str)> = Vec::new();
        self.table().open.retain(|id, entry| {
            let why = if !live.contains(&entry.owner) {
                "token revoked"
            } else if entry.last_used.elapsed() > self.idle {
                "idle"
            } else {
                return true;
            };
            closing.push((id.clone(), entry.name.clone(), why));
            false
        });
        for (id, name, why) in closing {
            // Logged first, so the line is there by the time the client sees its stream end.
            if why != "idle" {
                log(json!({ "event": "session_closed", "token": &*name, "why": why }));
            }
            let _ = self.manager.close_session(&Arc::from(id.as_str())).await;
        }
    }
}

/// Every [`SWEEP_EVERY`], ends the open streams of revoked tokens (see
/// [`super::revocation`]) and closes their sessions and idle ones.
pub(super) async fn sweep_sessions(gate: Arc<Gate>, stop: CancellationToken) {
    let mut ticks = tokio::time::interval(SWEEP_EVERY);
    ticks.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        tokio::select! {
            _ = ticks.tick() => {
                let live = gate.live_keys();
                gate.revocations.end_revoked(&live);
                gate.sessions.sweep(&live).await;
            }
            () = stop.cancelled() => return,
        }
    }
}
