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
