//! The write tools: proposing a new note or a patch, listing proposals,
//! applying or rejecting one.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::bounds::PROPOSALS_LIMIT;
use super::{ApplyStatus, ProposalKind, ProposalStatus, ProposalStatusFilter};

/// `propose_new_note` arguments.
#[derive(Debug, Clone, Default, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ProposeNewArgs {
    /// Title; gives the file name.
    pub title: String,
    /// Markdown body, no frontmatter.
    pub body: String,
    /// Why (published without a description: the name says it).
    #[schemars(transform = super::said_by_its_name)]
    pub reason: String,
    /// Folder in a notes root.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub folder: Option<String>,
    /// Tags (prefer registered ones).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tags: Option<Vec<String>>,
    /// Other names.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub aliases: Option<Vec<String>>,
    /// One sentence.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
}

/// An existing note a new one may duplicate.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema, PartialEq)]
pub struct SimilarNote {
    /// Vault-relative path.
    pub path: String,
    /// Title.
    pub title: String,
    /// Search score against the proposal's title.
    pub score: f32,
}

/// `propose_new_note` result.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema, PartialEq)]
pub struct ProposeNewResult {
    /// The proposal's id (give it to the person; apply_proposal takes it).
    pub proposal_id: String,
    /// `new`.
    #[schemars(with = "String")]
    pub kind: ProposalKind,
    /// Where the note will be written when applied.
    pub target: String,
    /// The inbox files written.
    pub files: Vec<String>,
    /// `sha256:<hex>` of the staged note.
    pub content_hash: String,
    /// The start of the staged note.
    pub preview: String,
    /// Existing notes this one may duplicate, best first.
    pub similar: Vec<SimilarNote>,
    /// Links in other notes that will break.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub breaks: Vec<BrokenBy>,
    /// Links in other notes that will lead elsewhere (`to`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub redirected: Vec<BrokenBy>,
    /// Links of the two lists not named (each names 100 at most).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub unlisted: u32,
    /// Always false: proposing never changes a note.
    pub vault_changed: bool,
}

/// `propose_note_patch` arguments.
#[derive(Debug, Clone, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ProposePatchArgs {
    /// The note's vault-relative path.
    pub path: String,
    /// read_note's `hash`.
    pub base_hash: String,
    /// Why (published without a description: the name says it).
    #[schemars(transform = super::said_by_its_name)]
    pub reason: String,
    /// Edits.
    #[schemars(
        schema_with = "edits_schema",
        description = "Applied in order. `op` and its fields: replace_all {content}; replace_section {heading (`## X`: level 2), content}; append, prepend (after frontmatter) {content}; find_replace {find (once), replace}; set_frontmatter {fields} (merge; null removes)."
    )]
    pub edits: Vec<crate::write::Edit>,
}

/// The published schema of a patch's `edits`: one object whose `op` names the
/// edit, its fields described once in the argument's description (a schema per
/// operation would cost `tools/list` a kilobyte). Each edit is still parsed on
/// its own and an error names it (`edits[1]`).
pub(super) fn edits_schema(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
    let string = schemars::json_schema!({ "type": "string" });
    schemars::json_schema!({
        "type": "array",
        "items": {
            "type": "object",
            "additionalProperties": false,
            "required": ["op"],
            "properties": {
                "op": { "enum": ["replace_all", "replace_section", "append", "prepend", "find_replace", "set_frontmatter"] },
                "content": string, "heading": string, "find": string, "replace": string,
                "fields": { "type": "object" },
            },
        },
    })
}

/// `propose_note_patch` result.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema, PartialEq)]
pub struct ProposePatchResult {
    /// The proposal's id.
    pub proposal_id: String,
    /// `patch`.
    #[schemars(with = "String")]
    pub kind: ProposalKind,
    /// The note the patch changes.
    pub target: String,
    /// The hash the patch was made against.
    pub base_hash: String,
    /// `sha256:<hex>` of the patched note.
    pub content_hash: String,
    /// Unified diff, cut at 64 KiB (a last line says how much is left out).
    pub diff: String,
    /// Lines added.
    pub added: u32,
    /// Lines removed.
    pub removed: u32,
    /// Links in other notes that will break.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub breaks: Vec<BrokenBy>,
    /// Links in other notes that will lead elsewhere (`to`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub redirected: Vec<BrokenBy>,
    /// Links of the two lists not named (each names 100 at most).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub unlisted: u32,
    /// The inbox files written.
    pub files: Vec<String>,
    /// Always false: proposing never changes a note.
    pub vault_changed: bool,
}

/// `propose_move` arguments.
#[derive(Debug, Clone, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ProposeMoveArgs {
    /// Note or folder.
    pub from: String,
    /// A free path.
    pub to: String,
    /// Why (published without a description: the name says it).
    #[schemars(transform = super::said_by_its_name)]
    pub reason: String,
    /// Keep the old name as an alias (default true).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub keep_alias: Option<bool>,
}

/// One note a move moves.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema, PartialEq)]
pub struct MovedNote {
    /// Its path now.
    pub from: String,
    /// Its path after the move.
    pub to: String,
}

/// How many links a move rewrites.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema, PartialEq)]
pub struct Rewrites {
    /// Notes whose links change.
    pub notes: u32,
    /// Links rewritten.
    pub links: u32,
}

/// `propose_move` result.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema, PartialEq)]
pub struct ProposeMoveResult {
    /// The proposal's id.
    pub proposal_id: String,
    /// `move`.
    #[schemars(with = "String")]
    pub kind: ProposalKind,
    /// The notes that move (the first 100).
    pub moves: Vec<MovedNote>,
    /// Notes that move but are not listed in `moves`.
    #[serde(default, skip_serializing_if = "is_zero_u64")]
    pub moves_omitted: u64,
    /// The links rewritten so they still resolve.
    pub rewrites: Rewrites,
    /// The inbox files written.
    pub files: Vec<String>,
    /// A summary line, then every file's diff (a move as a rename), cut at
    /// 64 KiB (a last line says how much is left out).
    pub diff: String,
    /// Always false.
    pub vault_changed: bool,
}

pub(super) fn is_zero(n: &u32) -> bool {
    *n == 0
}

fn is_zero_u64(n: &u64) -> bool {
    *n == 0
}

/// `propose_delete` arguments.
#[derive(Debug, Clone, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ProposeDeleteArgs {
    /// The note.
    pub path: String,
    /// Why (published without a description: the name says it).
    #[schemars(transform = super::said_by_its_name)]
    pub reason: String,
}

/// A link written in a note that a proposal will break, or make lead to another note.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema, PartialEq)]
#[schemars(rename = "Link")]
pub struct BrokenBy {
    /// The note holding the link.
    pub path: String,
    /// Its line.
    pub line: u32,
    /// The link.
    pub link: String,
    /// In `redirected`: the note the link will lead to instead (a note of the
    /// same name, or one with it as an alias).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(with = "String")]
    pub to: Option<String>,
}

/// `propose_delete` result.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema, PartialEq)]
pub struct ProposeDeleteResult {
    /// The proposal's id.
    pub proposal_id: String,
    /// `delete`.
    #[schemars(with = "String")]
    pub kind: ProposalKind,
    /// The note moved to the inbox's trash on apply.
    pub target: String,
    /// Links that will stop resolving.
    pub breaks: Vec<BrokenBy>,
    /// Links that will lead to another note instead, with `to` (absent when none).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub redirected: Vec<BrokenBy>,
    /// Links of the two lists not named (each names 100 at most).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub unlisted: u32,
    /// The inbox files written.
    pub files: Vec<String>,
    /// Always false.
    pub vault_changed: bool,
}

/// `list_proposals` arguments.
#[derive(Debug, Clone, Default, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ListProposalsArgs {
    /// `pending` (default), `applied` or `all`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub status: Option<ProposalStatusFilter>,
    /// How many ([`PROPOSALS_LIMIT`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = PROPOSALS_LIMIT.min, max = PROPOSALS_LIMIT.max), description = PROPOSALS_LIMIT.how_many("How many"))]
    pub limit: Option<u32>,
}

/// A proposal's live checks.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema, PartialEq)]
pub struct ProposalChecks {
    /// Its files are in place and match their hash.
    pub intact: bool,
    /// For a patch: the note still has the hash the patch was made against.
    pub base_current: bool,
    /// For a new note: the target does not exist yet.
    pub target_free: bool,
}

/// A proposal.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema, PartialEq)]
pub struct ProposalEntry {
    /// Its id.
    pub proposal_id: String,
    /// `new`, `patch`, `move`, `delete`, `batch` or `revert`.
    #[schemars(with = "String")]
    pub kind: ProposalKind,
    /// The note it writes (a multi-file proposal: the first it touches).
    pub target: String,
    /// Why, as the agent said.
    pub reason: String,
    /// When it was staged (RFC 3339).
    pub created: String,
    /// `pending`, `applied`, `rejected` or `interrupted`.
    #[schemars(with = "String")]
    pub status: ProposalStatus,
    /// One line for a person, pending or archived: "move z/A.md → z/B.md,
    /// rewrite 37 links in 21 notes", "patch z/x.md (+4 -1 lines)".
    pub summary: String,
    /// Live checks.
    pub checks: ProposalChecks,
}

/// `list_proposals` result.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema, PartialEq)]
pub struct Proposals {
    /// Newest first.
    pub proposals: Vec<ProposalEntry>,
    /// Files in the inbox that may hold a person's save (absent when none).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(with = "ConflictCopies")]
    pub conflict_copies: Option<ConflictCopies>,
}

/// Conflict copies: files that may hold a person's save, met while applying
/// (a save racing the apply) or recovering, kept apart in
/// `inbox/conflicts/<date>/<note path>.conflict-<id>.md` instead of among the
/// notes. Each stays until the person compares it with its note, keeps what
/// they want and deletes the copy.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema, PartialEq)]
pub struct ConflictCopies {
    /// How many there are.
    pub total: u64,
    /// The first 20, by path.
    pub copies: Vec<ConflictCopy>,
}

/// A conflict copy and the note it belongs to.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema, PartialEq)]
pub struct ConflictCopy {
    /// The copy, vault-relative (in the inbox).
    pub path: String,
    /// The note whose save it may hold.
    pub note: String,
}

/// `apply_proposal` arguments.
#[derive(Debug, Clone, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ApplyArgs {
    /// From propose_* or list_proposals.
    pub proposal_id: String,
}

/// The index update after an apply.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema, PartialEq)]
pub struct IndexUpdate {
    /// Whether the note is searchable now.
    pub updated: bool,
    /// Why not, when it is not.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
}

/// `apply_proposal` result.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema, PartialEq)]
pub struct ApplyResult {
    /// The proposal.
    pub proposal_id: String,
    /// `applied`, or `applied_index_failed` (the note is written and the proposal consumed:
    /// never apply it again; rebuild the index).
    #[schemars(with = "String")]
    pub status: ApplyStatus,
    /// The note written.
    pub target: String,
    /// `sha256:<hex>` of the note now.
    pub new_hash: String,
    /// Where the proposal's files were archived.
    pub archive: String,
    /// The line appended to the audit log (a multi-file proposal's `files`
    /// cut to 100, `files_omitted` counting the rest).
    pub audit: serde_json::Value,
    /// The index update.
    pub index: IndexUpdate,
}

/// `kb-index inbox reject` result.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema, PartialEq)]
pub struct RejectResult {
    /// The proposal.
    pub proposal_id: String,
    /// Where its files went.
    pub archive: String,
    /// The line appended to the audit log.
    pub audit: serde_json::Value,
}
