//! The engine's requests and results: the contract's parameters and result
//! fields, as plain data.
//!
//! These types are the public API of `TOOLS.md`; their field names are the
//! contract's. They derive `JsonSchema` so the tools layer can publish input and
//! output schemas without a mirror type; the engine itself never builds or
//! checks a schema.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::error::{Error, Result};

/// A numeric argument's default and accepted range, declared once: the JSON
/// Schema's `minimum` and `maximum`, the argument's description and the engine's
/// check all read it, so they cannot disagree.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Bound {
    /// Used when the argument is left out.
    pub default: u32,
    /// Smallest accepted value.
    pub min: u32,
    /// Largest accepted value.
    pub max: u32,
}

impl Bound {
    /// The value given, or the default; `invalid_argument` naming `name` and the
    /// range when it is outside.
    pub fn check(&self, name: &str, value: Option<u32>) -> Result<u32> {
        let value = value.unwrap_or(self.default);
        if (self.min..=self.max).contains(&value) {
            Ok(value)
        } else {
            Err(Error::invalid(format!(
                "`{name}` is {value}; it must be between {} and {}",
                self.min, self.max
            )))
        }
    }

    /// `"{what}, {min} to {max} (default {default})."`, a count's description.
    fn how_many(&self, what: &str) -> String {
        format!("{what}, {} to {} (default {}).", self.min, self.max, self.default)
    }
}

/// `limit` of the two searches.
pub const SEARCH_LIMIT: Bound = Bound { default: 10, min: 1, max: 50 };
/// `limit` of `list_tags`.
pub const TAGS_LIMIT: Bound = Bound { default: 100, min: 1, max: 1000 };
/// `days` of `list_recent_notes`.
pub const RECENT_DAYS: Bound = Bound { default: 7, min: 1, max: 36500 };
/// `limit` of `list_recent_notes`.
pub const RECENT_LIMIT: Bound = Bound { default: 20, min: 1, max: 200 };
/// `limit` of `list_proposals`.
pub const PROPOSALS_LIMIT: Bound = Bound { default: 50, min: 1, max: 500 };
/// `budget_tokens` of `recall_context`.
pub const RECALL_BUDGET: Bound = Bound { default: 4000, min: 200, max: 32000 };

/// `search_knowledge` and `search_note_content` arguments.
#[derive(Debug, Clone, Default, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct SearchArgs {
    /// Words, `"exact phrase"`, `-excluded`. Chinese, Japanese and Korean need no spaces.
    pub query: String,
    /// Only notes carrying all of these tags (a parent tag such as `type` matches `type/synthesis`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tags: Option<Vec<String>>,
    /// Only notes under this vault-relative folder, e.g. `z/tech`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub folder: Option<String>,
    /// How many results ([`SEARCH_LIMIT`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = SEARCH_LIMIT.min, max = SEARCH_LIMIT.max), description = SEARCH_LIMIT.how_many("How many results"))]
    pub limit: Option<u32>,
    /// Also return, per hit, which fields and terms scored and how.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub explain: Option<bool>,
}

/// One `search_knowledge` hit.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema, PartialEq)]
pub struct KnowledgeHit {
    /// Vault-relative path.
    pub path: String,
    /// Title.
    pub title: String,
    /// Aliases (the first 20).
    pub aliases: Vec<String>,
    /// Description (cut to 300 characters).
    pub description: String,
    /// Tags (the first 20).
    pub tags: Vec<String>,
    /// Relevance score (higher is better; comparable within one result list only).
    pub score: f32,
    /// Fields in which query terms occur: `title`, `aliases`, `description`, `tags`.
    pub matched: Vec<String>,
    /// Aliases left out of `aliases` (read the note for all).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub aliases_omitted: u64,
    /// Tags left out of `tags` (read the note for all).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub tags_omitted: u64,
    /// Why it scored, when `explain` was true.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub explain: Option<serde_json::Value>,
}

/// `search_knowledge` result.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema, PartialEq)]
pub struct KnowledgeResults {
    /// The query as given.
    pub query: String,
    /// All matching notes, not only those returned.
    pub total: u64,
    /// Best first.
    pub results: Vec<KnowledgeHit>,
    /// Present when the answer may miss recent changes: the index had not yet
    /// caught up with the files (a server answering during its start-up sync).
    /// Ask again in a moment for a complete answer.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stale: Option<String>,
}

/// A highlighted excerpt.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema, PartialEq)]
pub struct SnippetOut {
    /// The line with matched terms in `**…**`.
    pub text: String,
    /// The heading the line sits under, or null.
    pub heading: Option<String>,
    /// 1-based line in the file.
    pub line: u32,
}

/// One `search_note_content` hit.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema, PartialEq)]
pub struct ContentHit {
    /// Vault-relative path.
    pub path: String,
    /// Title.
    pub title: String,
    /// Relevance score.
    pub score: f32,
    /// Up to three excerpts, best first.
    pub snippets: Vec<SnippetOut>,
    /// Why it scored, when `explain` was true.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub explain: Option<serde_json::Value>,
}

/// `search_note_content` result.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema, PartialEq)]
pub struct ContentResults {
    /// The query as given.
    pub query: String,
    /// All matching notes, not only those returned.
    pub total: u64,
    /// Best first.
    pub results: Vec<ContentHit>,
    /// Present when the answer may miss recent changes: the index had not yet
    /// caught up with the files (a server answering during its start-up sync).
    /// Ask again in a moment for a complete answer.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stale: Option<String>,
}

/// `read_note` arguments.
#[derive(Debug, Clone, Default, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ReadNoteArgs {
    /// Exact vault-relative path, e.g. `z/备份仓库.md`. Give this or `ref`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub path: Option<String>,
    /// A wikilink target: `备份仓库`, `z/备份仓库` or `备份仓库#同步不等于备份`. Give this or `path`.
    #[serde(default, rename = "ref", skip_serializing_if = "Option::is_none")]
    pub reference: Option<String>,
    /// Return only this heading and everything under it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub section: Option<String>,
    /// Byte offset to continue from (the `next_offset` of a truncated read).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 0))]
    pub offset: Option<u64>,
    /// Most bytes of content to return (capped by the server's `read_max_bytes`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 1))]
    pub max_bytes: Option<u64>,
}

/// A heading in a note's outline.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema, PartialEq)]
pub struct OutlineEntry {
    /// 1 to 6.
    pub level: u8,
    /// Heading text.
    pub text: String,
    /// 1-based line.
    pub line: u32,
}

/// `read_note` result.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema, PartialEq)]
pub struct NoteContent {
    /// Vault-relative path.
    pub path: String,
    /// Title.
    pub title: String,
    /// Parsed frontmatter (an empty object when there is none).
    pub frontmatter: serde_json::Map<String, serde_json::Value>,
    /// The file's text exactly as on disk (or the requested section), this page of it.
    pub content: String,
    /// `sha256:<hex>` of the whole file: the `base_hash` a patch needs.
    pub hash: String,
    /// File size in bytes.
    pub size: u64,
    /// Last modification time (RFC 3339).
    pub modified: String,
    /// Headings with 1-based lines.
    pub outline: Vec<OutlineEntry>,
    /// Whether more content follows.
    pub truncated: bool,
    /// Where to continue (`offset`) when truncated.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub next_offset: Option<u64>,
    /// Whether `frontmatter` was cut to fit the page (long values, long lists, keys
    /// past its share); the whole frontmatter is the start of `content` at offset 0.
    #[serde(default, skip_serializing_if = "is_false")]
    pub frontmatter_truncated: bool,
    /// Values, list items and keys cut or left out of `frontmatter`.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub frontmatter_omitted: u64,
    /// Whether `outline` is cut: headings past its share of the page, or a note so
    /// large that only its start is parsed.
    #[serde(default, skip_serializing_if = "is_false")]
    pub outline_truncated: bool,
    /// Headings left out of `outline` (of those parsed).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub outline_omitted: u64,
    /// What this answer left out and how to read the rest.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub hint: Option<String>,
}

fn is_false(value: &bool) -> bool {
    !*value
}

fn is_zero(value: &u64) -> bool {
    *value == 0
}

/// A standard.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema, PartialEq)]
pub struct StandardEntry {
    /// Vault-relative path.
    pub path: String,
    /// Title.
    pub title: String,
    /// Description.
    pub description: String,
    /// Last modification time (RFC 3339).
    pub updated: String,
}

/// `list_standards` result.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema, PartialEq)]
pub struct Standards {
    /// By path.
    pub standards: Vec<StandardEntry>,
}

/// `list_tags` arguments.
#[derive(Debug, Clone, Default, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ListTagsArgs {
    /// Only tags starting with this (case-insensitive), e.g. `type/`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub prefix: Option<String>,
    /// How many tags ([`TAGS_LIMIT`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = TAGS_LIMIT.min, max = TAGS_LIMIT.max), description = TAGS_LIMIT.how_many("How many tags"))]
    pub limit: Option<u32>,
}

/// A tag and how many notes carry it.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema, PartialEq)]
pub struct TagCount {
    /// The tag without `#`, nested tags in full (`type/synthesis`).
    pub tag: String,
    /// Notes carrying it.
    pub count: u64,
    /// Whether the tag registry lists it.
    pub registered: bool,
}

/// `list_tags` result.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema, PartialEq)]
pub struct Tags {
    /// By count, then by tag.
    pub tags: Vec<TagCount>,
    /// The tag registry note, or null.
    pub registry: Option<String>,
}

/// Arguments naming one note.
#[derive(Debug, Clone, Default, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct NoteRefArgs {
    /// Exact vault-relative path. Give this or `ref`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub path: Option<String>,
    /// A wikilink target (`备份仓库`, `z/备份仓库`). Give this or `path`.
    #[serde(default, rename = "ref", skip_serializing_if = "Option::is_none")]
    pub reference: Option<String>,
}

/// An outgoing link.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema, PartialEq)]
pub struct Outlink {
    /// The target as written, anchor included (`备份仓库#同步不等于备份`).
    pub target: String,
    /// The vault path it resolves to, or null when broken.
    pub resolved: Option<String>,
    /// `wikilink`, `embed` or `markdown`.
    pub kind: String,
    /// 1-based line.
    pub line: u32,
}

/// An incoming link.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema, PartialEq)]
pub struct BacklinkOut {
    /// The linking note.
    pub path: String,
    /// Its title.
    pub title: String,
    /// 1-based line of the link in the linking note.
    pub line: u32,
    /// The line around the link.
    pub context: String,
}

/// A broken link.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema, PartialEq)]
pub struct BrokenLink {
    /// The target as written.
    pub target: String,
    /// 1-based line.
    pub line: u32,
    /// `missing_note`, `missing_heading` or `missing_block`.
    pub reason: String,
}

/// A note by path and title.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema, PartialEq)]
pub struct NoteTitle {
    /// Vault-relative path.
    pub path: String,
    /// Title.
    pub title: String,
}

/// `get_related_notes` result.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema, PartialEq)]
pub struct Related {
    /// The note.
    pub path: String,
    /// Its links, in file order.
    pub outlinks: Vec<Outlink>,
    /// Links to it, by linking path then line.
    pub backlinks: Vec<BacklinkOut>,
    /// Its links that lead nowhere.
    pub broken: Vec<BrokenLink>,
    /// Maps of content that link to it.
    pub mocs: Vec<NoteTitle>,
    /// Whether a list was cut at 500 entries.
    pub truncated: bool,
}

/// `list_recent_notes` arguments.
#[derive(Debug, Clone, Default, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RecentArgs {
    /// How far back, in days ([`RECENT_DAYS`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(
        range(min = RECENT_DAYS.min, max = RECENT_DAYS.max),
        description = format!("How far back, in days (default {}, at most {}).", RECENT_DAYS.default, RECENT_DAYS.max)
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
    /// The caller's access level: `read`, `propose` or `apply`.
    pub access: String,
    /// Configured folders.
    pub roots: Roots,
    /// Counts.
    pub counts: Counts,
    /// Index state and freshness.
    pub index: IndexState,
    /// Server identity.
    pub server: ServerIdentity,
}

/// No arguments.
#[derive(Debug, Clone, Default, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct NoArgs {}

/// `propose_new_note` arguments.
#[derive(Debug, Clone, Default, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ProposeNewArgs {
    /// The note's title; the file name is derived from it (Chinese kept).
    pub title: String,
    /// The note's Markdown body (without frontmatter; the server writes it).
    pub body: String,
    /// Why this note should exist, for the person who approves it.
    pub reason: String,
    /// A folder inside a notes root (default: the first notes root).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub folder: Option<String>,
    /// Tags (prefer registered ones: see list_tags).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tags: Option<Vec<String>>,
    /// Other names of the note.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub aliases: Option<Vec<String>>,
    /// One sentence on what the note is about.
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
    pub kind: String,
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
    /// Always false: proposing never changes a note.
    pub vault_changed: bool,
}

/// `propose_note_patch` arguments.
#[derive(Debug, Clone, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ProposePatchArgs {
    /// The note's vault-relative path.
    pub path: String,
    /// The `hash` read_note returned; the patch is refused if the file changed since.
    pub base_hash: String,
    /// Why this change, for the person who approves it.
    pub reason: String,
    /// Edits, applied in order.
    pub edits: Vec<crate::write::Edit>,
}

/// `propose_note_patch` result.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema, PartialEq)]
pub struct ProposePatchResult {
    /// The proposal's id.
    pub proposal_id: String,
    /// `patch`.
    pub kind: String,
    /// The note the patch changes.
    pub target: String,
    /// The hash the patch was made against.
    pub base_hash: String,
    /// `sha256:<hex>` of the patched note.
    pub content_hash: String,
    /// Unified diff.
    pub diff: String,
    /// Lines added.
    pub added: u32,
    /// Lines removed.
    pub removed: u32,
    /// The inbox files written.
    pub files: Vec<String>,
    /// Always false: proposing never changes a note.
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

/// Which proposals `list_proposals` shows.
#[derive(Debug, Clone, Copy, Default, Deserialize, Serialize, JsonSchema, PartialEq, Eq)]
#[serde(rename_all = "snake_case")]
pub enum ProposalStatusFilter {
    /// Waiting for approval.
    #[default]
    Pending,
    /// Already applied.
    Applied,
    /// Everything, rejected ones included.
    All,
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
    /// `new` or `patch`.
    pub kind: String,
    /// The note it writes.
    pub target: String,
    /// Why, as the agent said.
    pub reason: String,
    /// When it was staged (RFC 3339).
    pub created: String,
    /// `pending`, `applied` or `rejected`.
    pub status: String,
    /// Live checks.
    pub checks: ProposalChecks,
}

/// `list_proposals` result.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema, PartialEq)]
pub struct Proposals {
    /// Newest first.
    pub proposals: Vec<ProposalEntry>,
}

/// `apply_proposal` arguments.
#[derive(Debug, Clone, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ApplyArgs {
    /// The proposal to apply, as propose_* or list_proposals returned it.
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
    pub status: String,
    /// The note written.
    pub target: String,
    /// `sha256:<hex>` of the note now.
    pub new_hash: String,
    /// Where the proposal's files were archived.
    pub archive: String,
    /// The line appended to the audit log.
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

/// `recall_context` arguments.
#[derive(Debug, Clone, Default, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RecallArgs {
    /// What the context is for: a topic or a question, in any language.
    pub topic: String,
    /// The most tokens the pack may use ([`RECALL_BUDGET`]). Estimated
    /// conservatively: one token per Chinese, Japanese or Korean character.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(
        range(min = RECALL_BUDGET.min, max = RECALL_BUDGET.max),
        description = format!(
            "The most tokens the pack may use (default {}; {} to {}). Estimated\nconservatively: one token per Chinese, Japanese or Korean character.",
            RECALL_BUDGET.default, RECALL_BUDGET.min, RECALL_BUDGET.max
        )
    )]
    pub budget_tokens: Option<u32>,
    /// Only notes under this vault-relative folder.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub folder: Option<String>,
}

/// One piece of a context pack.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema, PartialEq)]
pub struct RecallItem {
    /// The note.
    pub path: String,
    /// Its title.
    pub title: String,
    /// The heading of the section, or null for the note's opening.
    pub section: Option<String>,
    /// The section's text (cut at a line to fit the budget when needed).
    pub text: String,
    /// Why it is here: `match`, `outlink of <path>` or `backlink of <path>`.
    pub reason: String,
    /// Relevance (matches: the search score; neighbours: their match's score, halved).
    pub score: f32,
}

/// `recall_context` result.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema, PartialEq)]
pub struct RecallPack {
    /// The topic as given.
    pub topic: String,
    /// The budget in force.
    pub budget_tokens: u32,
    /// Tokens the items use (same estimate).
    pub used_tokens: u32,
    /// Matches first (best first), then their link neighbours.
    pub items: Vec<RecallItem>,
    /// Present when the answer may miss recent changes: the index had not yet
    /// caught up with the files (a server answering during its start-up sync).
    /// Ask again in a moment for a complete answer.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stale: Option<String>,
}
