//! `list_recent_notes`: the request and the notes, newest first.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::bounds::{RECENT_DAYS, RECENT_LIMIT};

/// `list_recent_notes` arguments.
#[derive(Debug, Clone, Default, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RecentArgs {
    /// How far back, in days ([`RECENT_DAYS`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(
        range(min = RECENT_DAYS.min, max = RECENT_DAYS.max),
        description = format!("How far back, in days (default {}).", RECENT_DAYS.default)
    )]
    pub days: Option<u32>,
    /// How many notes ([`RECENT_LIMIT`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = RECENT_LIMIT.min, max = RECENT_LIMIT.max), description = RECENT_LIMIT.how_many("How many notes"))]
    pub limit: Option<u32>,
    /// `updated` (default) or `created`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sort: Option<RecentSort>,
}

/// How `list_recent_notes` orders.
#[derive(Debug, Clone, Copy, Default, Deserialize, Serialize, JsonSchema, PartialEq, Eq)]
#[serde(rename_all = "snake_case")]
pub enum RecentSort {
    /// By last modification.
    #[default]
    Updated,
    /// By creation (frontmatter `created`/`date`, else the file's birth time).
    Created,
}

/// A recent note.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema, PartialEq)]
pub struct RecentNote {
    /// Vault-relative path.
    pub path: String,
    /// Title.
    pub title: String,
    /// RFC 3339.
    pub created: String,
    /// RFC 3339.
    pub updated: String,
}

/// `list_recent_notes` result.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema, PartialEq)]
pub struct Recent {
    /// Newest first.
    pub notes: Vec<RecentNote>,
}
