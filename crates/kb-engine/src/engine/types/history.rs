//! `list_history`: a note's versions, newest first (issue 38).

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::bounds::HISTORY_LIMIT;

/// `list_history` arguments.
#[derive(Debug, Clone, Default, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct HistoryArgs {
    /// Vault-relative path (a deleted or moved note's old path works too).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(description = "Vault-relative path.")]
    pub path: Option<String>,
    /// A wikilink target. Or give `path`.
    #[serde(default, rename = "ref", skip_serializing_if = "Option::is_none")]
    #[schemars(description = "Or a wikilink target.")]
    pub reference: Option<String>,
    /// Versions per page ([`HISTORY_LIMIT`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(
        range(min = HISTORY_LIMIT.min, max = HISTORY_LIMIT.max),
        description = HISTORY_LIMIT.how_many("Versions per page")
    )]
    pub limit: Option<u32>,
    /// The last page's `next_cursor`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(description = "The last page's `next_cursor`.")]
    pub cursor: Option<String>,
}

/// Who made a version.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum VersionBy {
    /// Changed on disk.
    OnDisk,
    /// An applied proposal.
    Proposal,
    /// Not kb-mcp's commit.
    Unknown,
}

/// One version of a note.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct HistoryVersion {
    /// The commit that made it.
    pub commit: String,
    /// When (RFC 3339).
    pub at: String,
    /// Who made it.
    #[schemars(with = "String", description = "on_disk, proposal or unknown.")]
    pub by: VersionBy,
    /// By a proposal: its id.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(with = "String")]
    pub proposal_id: Option<String>,
    /// The proposal's kind.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(with = "String")]
    pub kind: Option<String>,
    /// Who approved it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(with = "String")]
    pub approved_by: Option<String>,
    /// Its reason.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(with = "String")]
    pub reason: Option<String>,
    /// The note's path then.
    pub path: String,
    /// `sha256:<hex>`; absent: removed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(with = "String")]
    pub hash: Option<String>,
    /// Lines added.
    pub added: u32,
    /// Lines removed.
    pub removed: u32,
}

/// `list_history` result.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct HistoryResults {
    /// The note.
    pub path: String,
    /// Newest first.
    pub versions: Vec<HistoryVersion>,
    /// `cursor` for older versions.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(with = "String")]
    pub next_cursor: Option<String>,
}

/// `propose_restore` arguments.
#[derive(Debug, Clone, Default, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RestoreArgs {
    /// The note's path now, or where it was (a deleted note comes back there).
    #[schemars(description = "The note's path (a deleted note's old path brings it back).")]
    pub path: String,
    /// The version: a `commit` of `list_history` or an RFC 3339 time.
    #[schemars(description = "A `commit` from list_history, or a time (RFC 3339).")]
    pub at: String,
    /// Why, for the person who approves it.
    pub reason: String,
}

/// `propose_restore` result: a patch back to the version, or the note created again.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct RestoreResult {
    /// The proposal's id.
    pub proposal_id: String,
    /// `patch`, or `new` for a note that is gone.
    #[schemars(with = "String")]
    pub kind: super::ProposalKind,
    /// The note it writes.
    pub target: String,
    /// The version restored: its commit.
    pub commit: String,
    /// The version's time (RFC 3339).
    pub at: String,
    /// A patch's base: the note's hash now.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(with = "String")]
    pub base_hash: Option<String>,
    /// `sha256:<hex>` of the note restored.
    pub content_hash: String,
    /// A patch's unified diff (cut at 64 KiB), or the start of a note created again.
    pub diff: String,
    /// Lines added.
    pub added: u32,
    /// Lines removed.
    pub removed: u32,
    /// Links in other notes that will break.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub breaks: Vec<super::BrokenBy>,
    /// Links in other notes that will lead elsewhere (`to`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub redirected: Vec<super::BrokenBy>,
    /// Links of the two lists not named.
    #[serde(default, skip_serializing_if = "super::proposals::is_zero")]
    pub unlisted: u32,
    /// The inbox files written.
    pub files: Vec<String>,
    /// Always false.
    pub vault_changed: bool,
}
