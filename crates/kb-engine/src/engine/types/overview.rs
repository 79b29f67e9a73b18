//! `get_vault_overview`: the vault's roots, counts, the index's state
//! (stale, skipped files) and the server's identity.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// The vault's configured folders.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema, PartialEq)]
pub struct Roots {
    /// Notes roots (`""` is the whole vault).
    pub notes: Vec<String>,
    /// Standards folders.
    pub standards: Vec<String>,
    /// The inbox folder.
    pub inbox: String,
}

/// Counts for the overview.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema, PartialEq)]
pub struct Counts {
    /// Notes.
    pub notes: u64,
    /// Standards.
    pub standards: u64,
    /// Distinct tags on notes.
    pub tags: u64,
    /// Links in notes and standards.
    pub links: u64,
    /// Broken links.
    pub broken_links: u64,
    /// Notes with no link in or out.
    pub orphans: u64,
    /// Proposals waiting for approval.
    pub proposals_pending: u64,
}

/// Files on disk the index does not reflect yet.
#[derive(Debug, Clone, Default, Serialize, Deserialize, JsonSchema, PartialEq)]
pub struct Stale {
    /// On disk, not in the index.
    pub added: u64,
    /// In the index with other content.
    pub changed: u64,
    /// In the index, gone from disk.
    pub removed: u64,
}

/// The index's state.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema, PartialEq)]
pub struct IndexState {
    /// Schema version of `index-schema/`.
    pub schema_version: u32,
    /// Documents in the index.
    pub documents: u64,
    /// Last full build (RFC 3339), or null.
    pub built_at: Option<String>,
    /// Last update (RFC 3339), or null.
    pub updated_at: Option<String>,
    /// True only when every note on disk is in the index at its current content.
    pub fresh: bool,
    /// Start of the walk `fresh` rests on (RFC 3339).
    pub verified_at: String,
    /// What the index does not reflect yet.
    pub stale: Stale,
    /// Markdown files (and symlinked folders) found in the readable folders but
    /// not served as notes: a refused name, a symlink leading out of the vault,
    /// not UTF-8, unreadable, or a template (see `skipped`).
    pub skipped_files: u64,
    /// The first skipped files (by path) with the reason each is left out.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub skipped: Vec<SkippedOut>,
}

/// A file found in the vault but not served as a note, and why.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema, PartialEq)]
pub struct SkippedOut {
    /// Its vault-relative path.
    pub path: String,
    /// Why it is left out (and, where there is a way, how to bring it in).
    pub reason: String,
}

/// The server's name and version.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema, PartialEq)]
pub struct ServerIdentity {
    /// `kb-mcp`.
    pub name: String,
    /// The crate version.
    pub version: String,
}

/// `get_vault_overview` result.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema, PartialEq)]
pub struct Overview {
    /// The vault folder's name.
    pub vault: String,
    /// The caller's access level: `read`, `propose` or `apply` (`cli` from `kb-index status`).
    #[schemars(with = "String")]
    pub access: super::Caller,
    /// Configured folders.
    pub roots: Roots,
    /// Counts.
    pub counts: Counts,
    /// Index state and freshness.
    pub index: IndexState,
    /// Server identity.
    pub server: ServerIdentity,
    /// What changed since `since` (only `cursor` without it).
    pub changes: Changes,
    /// What the person should fix for kb-mcp to work fully, each saying how
    /// (an `Inbox/` of their own where proposals would go). Absent when none.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub warnings: Vec<String>,
    /// Files in the inbox that may hold a person's save (absent when none).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(with = "super::ConflictCopies")]
    pub conflict_copies: Option<super::ConflictCopies>,
    /// What the running server measured since it started; only when asked
    /// for with `metrics: true`. Published as a plain object in the output
    /// schema (its fields are [`ServerMetrics`]'s), which `tools/list` keeps small.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(with = "serde_json::Map<String, serde_json::Value>")]
    pub metrics: Option<ServerMetrics>,
    /// The agent's memory this connection may read, counted: published as
    /// a plain object (its fields are [`super::MemoryCounts`]'s).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(with = "serde_json::Map<String, serde_json::Value>")]
    pub memory: Option<super::MemoryCounts>,
    /// The clone's agreement with its remote (`[replica]` only): published
    /// as a plain object (its fields are [`ReplicaStatus`]'s).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(with = "serde_json::Map<String, serde_json::Value>")]
    pub replica: Option<ReplicaStatus>,
}

/// How a replica (`[replica]` in `kb.toml`) stands with its remote.
#[derive(Debug, Clone, Default, Serialize, Deserialize, JsonSchema, PartialEq, Eq)]
pub struct ReplicaStatus {
    /// The remote, as configured.
    pub remote: String,
    /// The branch kept.
    pub branch: String,
    /// `in_sync`, `ahead` (commits not pushed yet), `behind`, `diverged`
    /// (both moved; being replayed), `held` (a change here overlaps one
    /// there: the work tree is left alone), `unreachable` or `failing`.
    pub state: String,
    /// Commits here the remote has not.
    pub ahead: u64,
    /// Commits on the remote not here (as last fetched).
    pub behind: u64,
    /// Files changed here, not committed, that the remote's commits change
    /// on the same lines: the clone waits until the person commits or undoes them.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub held: Vec<String>,
    /// The last fetch that reached the remote (RFC 3339).
    pub last_fetch: Option<String>,
    /// Why the last fetch or push failed, when it did.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
}

/// What a running server measured since it started: every tool's calls,
/// errors and latency, and how the index keeps up with the vault.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema, PartialEq)]
pub struct ServerMetrics {
    /// When the server started (RFC 3339).
    pub since: String,
    /// Seconds since it started.
    pub uptime_s: u64,
    /// Each tool called at least once, by name.
    pub tools: Vec<ToolMetrics>,
    /// The index and the watcher keeping it fresh.
    pub index: IndexActivity,
}

/// One tool's calls since the server started. Latencies are the server's
/// (from the call's arrival at the handler to its answer), in milliseconds.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema, PartialEq)]
pub struct ToolMetrics {
    /// The tool's name.
    pub tool: String,
    /// Calls answered.
    pub calls: u64,
    /// Calls answered with an error, by its code (`not_found`, …).
    pub errors: std::collections::BTreeMap<String, u64>,
    /// Median latency.
    pub p50_ms: f64,
    /// 95th percentile.
    pub p95_ms: f64,
    /// 99th percentile.
    pub p99_ms: f64,
    /// The slowest call.
    pub max_ms: f64,
}

/// The index's size and how the watcher kept it up to date.
#[derive(Debug, Clone, Default, Serialize, Deserialize, JsonSchema, PartialEq)]
pub struct IndexActivity {
    /// Documents in the index (null while the server is still starting).
    pub documents: Option<u64>,
    /// The index's last update (RFC 3339), or null.
    pub updated_at: Option<String>,
    /// Whether a watcher follows the vault's changes.
    pub watching: bool,
    /// File events the watcher passed on (after its 300 ms debounce).
    pub watcher_events: u64,
    /// Index updates the watcher made.
    pub syncs: u64,
    /// The last update's lag: from the change on disk the watcher saw first
    /// to the index holding it, in milliseconds (null before any).
    pub last_sync_lag_ms: Option<f64>,
}

/// `get_vault_overview` arguments.
#[derive(Debug, Clone, Default, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct OverviewArgs {
    /// An earlier overview's `changes.cursor`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub since: Option<String>,
    /// Add server metrics.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub metrics: Option<bool>,
}

/// A note added, changed or removed, and by whom.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema, PartialEq, Eq, PartialOrd, Ord)]
pub struct ChangedNote {
    /// Vault-relative path.
    pub path: String,
    /// `mcp` or `cli` (an applied proposal), else `outside` (edited outside kb-mcp).
    pub by: String,
}

/// A proposal applied or rejected.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema, PartialEq)]
pub struct ProposalEvent {
    /// Its id.
    pub proposal_id: String,
    /// Its kind.
    pub kind: String,
    /// The note it targets.
    pub target: String,
    /// When (RFC 3339).
    pub at: String,
    /// `mcp` or `cli`.
    pub by: String,
}

/// What changed since an earlier overview.
#[derive(Debug, Clone, Default, Serialize, Deserialize, JsonSchema, PartialEq)]
pub struct Changes {
    /// Pass as `since` next time.
    pub cursor: String,
    /// Notes new to the index.
    pub added: Vec<ChangedNote>,
    /// Notes whose content changed.
    pub changed: Vec<ChangedNote>,
    /// Notes gone from the index.
    pub removed: Vec<ChangedNote>,
    /// Proposals applied.
    pub applied: Vec<ProposalEvent>,
    /// Proposals rejected.
    pub rejected: Vec<ProposalEvent>,
    /// True when some changes are missing (too many, the index rebuilt, or the
    /// audit log truncated or replaced since the cursor).
    #[serde(default, skip_serializing_if = "super::is_false")]
    pub incomplete: bool,
}

/// No arguments.
#[derive(Debug, Clone, Default, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct NoArgs {}

/// Where the index lives and what state its folder is in: what logs, the
/// command line and `kb-index status` say about it (not a tool result).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct IndexLocation {
    /// The folder the index lives in.
    pub dir: std::path::PathBuf,
    /// Whether the folder holds an index yet.
    pub exists: bool,
    /// Why it lives in the per-user cache folder rather than the vault's `.kb/`, when it does.
    pub moved: Option<String>,
    /// Why it cannot be updated (its folder cannot be written), when so: searches
    /// use it as it is.
    pub read_only: Option<String>,
    /// Why it was rebuilt from scratch while the vault was opened (damaged, or from
    /// another schema version), when it was.
    pub repaired: Option<String>,
}
