//! `get_vault_overview`: counts, roots, the index's state (fresh or stale,
//! skipped files, as the last walk found them: see `sync/verified.rs`) and the
//! server's identity.

use crate::engine::types::*;
use crate::engine::{Engine, timing};
use crate::error::Result;
use crate::vault::NoteKind;

/// Skipped files the overview lists (with their reasons); the count covers all.
const SKIPPED_SHOWN: usize = 20;

impl Engine {
    /// `get_vault_overview` without `since`, for `caller` (whose access level
    /// the overview reports).
    pub fn overview(&self, caller: Caller) -> Result<Overview> {
        self.overview_since(caller, None)
    }

    /// The index's size and last update, without looking at the vault: what
    /// a server's metrics report beside its own counts.
    pub fn index_activity(&self) -> IndexActivity {
        let meta = self.index.meta();
        IndexActivity {
            documents: Some(meta.documents),
            updated_at: meta.updated_at,
            ..IndexActivity::default()
        }
    }

    /// `get_vault_overview {since}`: with `since`, the overview's `changes`
    /// list what changed after the overview that returned that cursor.
    pub fn overview_since(&self, caller: Caller, since: Option<&str>) -> Result<Overview> {
        let changes = timing::time("changes", || self.changes_since(since))?;
        let (crate::engine::sync::Staleness { added, changed, removed, skipped }, verified_at) =
            timing::time("staleness", || self.checked_staleness())?;
        let catalog = self.catalog();
        let graph = catalog.graph();
        let records = catalog.records();
        let notes = records.iter().filter(|r| r.kind == NoteKind::Note).count() as u64;
        let standards = records.iter().filter(|r| r.kind == NoteKind::Standard).count() as u64;
        let meta = self.index.meta();
        let policy = self.policy();
        Ok(Overview {
            vault: self.root().file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default(),
            access: caller,
            roots: Roots {
                notes: policy.notes.clone(),
                standards: policy.standards.clone(),
                inbox: policy.inbox.clone(),
            },
            counts: Counts {
                notes,
                standards,
                tags: catalog.tags().len() as u64,
                links: graph.link_count as u64,
                broken_links: graph.broken_count as u64,
                orphans: graph.orphans.len() as u64,
                proposals_pending: crate::write::pending_count(&self.sandbox()),
            },
            index: IndexState {
                schema_version: meta.schema_version,
                documents: meta.documents,
                built_at: meta.built_at,
                updated_at: meta.updated_at,
                fresh: added == 0 && changed == 0 && removed == 0,
                verified_at,
                stale: Stale { added, changed, removed },
                skipped_files: skipped.len() as u64,
                skipped: skipped
                    .into_iter()
                    .take(SKIPPED_SHOWN)
                    .map(|(path, reason)| SkippedOut { path, reason })
                    .collect(),
            },
            server: ServerIdentity {
                name: "kb-mcp".to_owned(),
                version: env!("CARGO_PKG_VERSION").to_owned(),
            },
            changes,
            warnings: self.warnings(),
            conflict_copies: self.conflict_copies(),
            metrics: None,
            memory: None,
            replica: self.replica_status(),
        })
    }
}
