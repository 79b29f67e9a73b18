//! `propose_batch` and `revert_proposal`: many changes as one proposal, and
//! the inverse of an applied one.
//!
//! A batch item is published as a `kind` tag alone, its fields described once
//! as "the arguments of" the single tool, whose schema gives them:
//! `tools/list` has a size budget. Each item is parsed on its own against the
//! tagged enum below (unknown or missing fields refused), so an error names it
//! (`items[2]`).

use schemars::{JsonSchema, Schema, SchemaGenerator, json_schema};
use serde::{Deserialize, Serialize};

use crate::write::BATCH_MAX_ITEMS;

/// One item of a batch: the arguments of `propose_new_note`, `propose_note_patch`,
/// `propose_move` or `propose_delete`, tagged with `kind`. An item may carry
/// `reason` as the single tool takes it, so an agent can pass the same
/// arguments; the batch's `reason` is the one kept with the proposal and read
/// by the person.
#[derive(Debug, Clone, Deserialize, Serialize, PartialEq)]
#[serde(tag = "kind", rename_all = "snake_case", deny_unknown_fields)]
pub enum BatchItem {
    /// A new note.
    New {
        /// Title; gives the file name.
        title: String,
        /// Markdown body, no frontmatter.
        body: String,
        /// Folder in a notes root.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        folder: Option<String>,
        /// Tags.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        tags: Option<Vec<String>>,
        /// Other names.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        aliases: Option<Vec<String>>,
        /// One sentence.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        description: Option<String>,
        /// Accepted as the single tool's argument; the batch's reason is kept.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        reason: Option<String>,
    },
    /// A patch.
    Patch {
        /// The note.
        path: String,
        /// read_note's `hash`.
        base_hash: String,
        /// Applied in order.
        edits: Vec<crate::write::Edit>,
        /// Accepted as the single tool's argument; the batch's reason is kept.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        reason: Option<String>,
    },
    /// A move of a note or folder.
    Move {
        /// Note or folder.
        from: String,
        /// A free path.
        to: String,
        /// Default true.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        keep_alias: Option<bool>,
        /// Accepted as the single tool's argument; the batch's reason is kept.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        reason: Option<String>,
    },
    /// A delete (to the inbox's trash).
    Delete {
        /// The note.
        path: String,
        /// Accepted as the single tool's argument; the batch's reason is kept.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        reason: Option<String>,
    },
}

/// The published schema of `items`.
fn items_schema(_: &mut SchemaGenerator) -> Schema {
    json_schema!({
        "type": "array",
        "minItems": 1,
        "maxItems": BATCH_MAX_ITEMS,
        "items": {
            "type": "object",
            "required": ["kind"],
            "properties": { "kind": { "enum": ["new", "patch", "move", "delete"] } },
        },
    })
}

/// `propose_batch` arguments.
#[derive(Debug, Clone, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ProposeBatchArgs {
    /// Why (published without a description: the name says it).
    #[schemars(transform = super::said_by_its_name)]
    pub reason: String,
    /// The changes.
    #[schemars(
        schema_with = "items_schema",
        description = "In order, one per note: `kind` and the arguments of that propose_* tool (new_note, note_patch, move, delete)."
    )]
    pub items: Vec<BatchItem>,
}

/// `propose_batch` result.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema, PartialEq)]
pub struct ProposeBatchResult {
    /// The proposal's id.
    pub proposal_id: String,
    /// `batch`.
    #[schemars(with = "String")]
    pub kind: super::ProposalKind,
    /// The inbox files written.
    pub files: Vec<String>,
    /// A summary line (how many links deletes break), then every file's diff.
    pub diff: String,
    /// Always false.
    pub vault_changed: bool,
}

/// `revert_proposal` arguments.
#[derive(Debug, Clone, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RevertArgs {
    /// An applied proposal.
    pub proposal_id: String,
    /// Why (published without a description: the name says it).
    #[schemars(transform = super::said_by_its_name)]
    pub reason: String,
}

/// `revert_proposal` result.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema, PartialEq)]
pub struct RevertResult {
    /// The revert's own proposal id (applied like any other).
    pub proposal_id: String,
    /// `revert`.
    #[schemars(with = "String")]
    pub kind: super::ProposalKind,
    /// The inbox files written.
    pub files: Vec<String>,
    /// A summary line naming the proposal undone, then every file's diff.
    pub diff: String,
    /// Notes changed since the apply whose later edits the revert keeps
    /// (merged three-way; their diff is from the note as it is now).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub merged: Vec<String>,
    /// Always false.
    pub vault_changed: bool,
}
