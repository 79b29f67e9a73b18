//! `audit_vault`: the vault's health checks, their findings one page at a
//! time, and the fixes that can be staged as proposals.

use std::collections::BTreeMap;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::bounds::AUDIT_LIMIT;
use super::is_false;

/// One of `audit_vault`'s checks (the variants' comments are not doc comments:
/// they would each become a description in every schema that names a check).
#[expect(missing_docs, reason = "variant comments kept out of the published schemas")]
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Deserialize, Serialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum AuditCheck {
    // A link to no note or file.
    BrokenLink,
    // A `#heading` or `#^block` its note lacks.
    BrokenAnchor,
    // A link by a name several notes share.
    AmbiguousLink,
    // A note with no link in or out.
    Orphan,
    // A tag the tag registry does not list.
    UnregisteredTag,
    // Frontmatter breaking `[lint]` in kb.toml.
    Frontmatter,
    // A title or alias other notes share.
    DuplicateTitle,
    // A note's title or alias written in another note without a link.
    UnlinkedMention,
    // A note carrying a tag whose map of content does not link it.
    MocMissing,
    // A Markdown file not served as a note.
    SkippedFile,
    // A note with nothing but frontmatter and a title.
    EmptyNote,
    // A note larger than read_note returns at once.
    OversizeNote,
}

impl AuditCheck {
    /// Every check, in the order they are reported.
    pub const ALL: [AuditCheck; 12] = [
        AuditCheck::BrokenLink,
        AuditCheck::BrokenAnchor,
        AuditCheck::AmbiguousLink,
        AuditCheck::Orphan,
        AuditCheck::UnregisteredTag,
        AuditCheck::Frontmatter,
        AuditCheck::DuplicateTitle,
        AuditCheck::UnlinkedMention,
        AuditCheck::MocMissing,
        AuditCheck::SkippedFile,
        AuditCheck::EmptyNote,
        AuditCheck::OversizeNote,
    ];

    /// The check's name in the contract.
    pub fn name(self) -> &'static str {
        match self {
            AuditCheck::BrokenLink => "broken_link",
            AuditCheck::BrokenAnchor => "broken_anchor",
            AuditCheck::AmbiguousLink => "ambiguous_link",
            AuditCheck::Orphan => "orphan",
            AuditCheck::UnregisteredTag => "unregistered_tag",
            AuditCheck::Frontmatter => "frontmatter",
            AuditCheck::DuplicateTitle => "duplicate_title",
            AuditCheck::UnlinkedMention => "unlinked_mention",
            AuditCheck::MocMissing => "moc_missing",
            AuditCheck::SkippedFile => "skipped_file",
            AuditCheck::EmptyNote => "empty_note",
            AuditCheck::OversizeNote => "oversize_note",
        }
    }

    /// How serious its findings are.
    pub fn severity(self) -> Severity {
        match self {
            AuditCheck::BrokenLink | AuditCheck::BrokenAnchor | AuditCheck::Frontmatter => Severity::Error,
            AuditCheck::Orphan | AuditCheck::UnlinkedMention => Severity::Info,
            _ => Severity::Warning,
        }
    }
}

/// How serious a finding is: error, warning or info.
#[expect(missing_docs, reason = "variant comments kept out of the published schemas")]
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Deserialize, Serialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Severity {
    // Something is wrong (a link leads nowhere, a rule is broken).
    Error,
    // Worth fixing.
    Warning,
    // For information.
    Info,
}

/// `audit_vault` arguments.
#[derive(Debug, Clone, Default, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct AuditArgs {
    /// Checks to run (default: all).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub checks: Option<Vec<AuditCheck>>,
    /// Only notes under this folder.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub folder: Option<String>,
    /// Findings per page.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = AUDIT_LIMIT.min, max = AUDIT_LIMIT.max), description = AUDIT_LIMIT.how_many("Findings per page"))]
    pub limit: Option<u32>,
    /// The last page's `next_cursor`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cursor: Option<String>,
    /// Also stage the mechanical fixes (access propose).
    #[serde(default, skip_serializing_if = "is_false")]
    pub fix: bool,
}

/// A fix: what to change in which note; mechanical, or a suggestion for a
/// person to judge.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema, PartialEq, Eq, PartialOrd, Ord)]
pub struct Fix {
    /// The note the fix changes.
    pub path: String,
    /// The change, for a person.
    pub summary: String,
    /// The text replaced (absent: `new` is appended).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(with = "String")]
    pub old: Option<String>,
    /// The text written instead.
    pub new: String,
    /// Whether `fix: true` stages it: the one note name, heading or registered
    /// tag the text wrote differently (case, spacing, punctuation, accents), or
    /// a map of content's missing line. Absent: a suggestion only.
    #[serde(default, skip_serializing_if = "is_false")]
    pub mechanical: bool,
}

/// One finding.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema, PartialEq, Eq)]
pub struct Finding {
    /// The check that found it (published as a plain string, as every
    /// result's enum: `tools/list` has no room for the list twice).
    #[schemars(with = "String")]
    pub check: AuditCheck,
    /// How serious it is: `error`, `warning` or `info`.
    #[schemars(with = "String")]
    pub severity: Severity,
    /// The note (or file) concerned.
    pub path: String,
    /// 1-based line, when it has one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(with = "u32")]
    pub line: Option<u32>,
    /// What is wrong.
    pub message: String,
    /// A fix, when there is one: mechanical, or a suggestion.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(with = "Fix")]
    pub fix: Option<Fix>,
}

/// `audit_vault` result.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema, PartialEq)]
pub struct Audit {
    /// The checks run.
    #[schemars(with = "Vec<String>")]
    pub checks_run: Vec<AuditCheck>,
    /// Findings per check, on all pages.
    pub counts: BTreeMap<String, u64>,
    /// Findings of severity error, on all pages.
    pub errors: u64,
    /// Findings on all pages.
    pub total: u64,
    /// This page, by path, line and check.
    pub findings: Vec<Finding>,
    /// Pass as `cursor` for the next page; absent on the last.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(with = "String")]
    pub next_cursor: Option<String>,
    /// With `fix`: the proposals staged, one batch per kind of fix.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub proposals: Vec<String>,
    /// With `fix`: the fixes not staged, by reason (`suggestion`,
    /// `code_or_comment`, `note_changed`, `too_large`, `pending`, `later`,
    /// `inbox_headroom`: [`UnstagedReason`]).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub unstaged: BTreeMap<String, u64>,
}

impl Audit {
    /// What each count of `unstaged` means, for a person, in its order.
    pub fn unstaged_messages(&self) -> Vec<String> {
        self.unstaged
            .iter()
            .filter_map(|(name, fixes)| {
                UnstagedReason::ALL.into_iter().find(|r| r.name() == name).map(|r| r.explain(*fixes))
            })
            .collect()
    }
}

/// Why `fix: true` left a fix unstaged: the keys of [`Audit::unstaged`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum UnstagedReason {
    /// Not mechanical: a guess for a person to judge.
    Suggestion,
    /// Its only place is inside code or a comment.
    CodeOrComment,
    /// Not where the audit found it: the note changed, or cannot be read.
    NoteChanged,
    /// The note with its fixes would pass `[limits] proposal_max_bytes`.
    TooLarge,
    /// A pending proposal already changes the note.
    Pending,
    /// Its note is in another kind's proposal of this call, or its kind's
    /// proposal holds all the notes a batch may.
    Later,
    /// Staging it would leave the inbox too little room for other proposals.
    InboxHeadroom,
}

impl UnstagedReason {
    /// Every reason.
    pub const ALL: [UnstagedReason; 7] = [
        UnstagedReason::Suggestion,
        UnstagedReason::CodeOrComment,
        UnstagedReason::NoteChanged,
        UnstagedReason::TooLarge,
        UnstagedReason::Pending,
        UnstagedReason::Later,
        UnstagedReason::InboxHeadroom,
    ];

    /// Its key in `unstaged`.
    pub fn name(self) -> &'static str {
        match self {
            UnstagedReason::Suggestion => "suggestion",
            UnstagedReason::CodeOrComment => "code_or_comment",
            UnstagedReason::NoteChanged => "note_changed",
            UnstagedReason::TooLarge => "too_large",
            UnstagedReason::Pending => "pending",
            UnstagedReason::Later => "later",
            UnstagedReason::InboxHeadroom => "inbox_headroom",
        }
    }

    /// What leaving `fixes` fixes unstaged for this reason means, and what to
    /// do, for a person.
    pub fn explain(self, fixes: u64) -> String {
        let what = if fixes == 1 { "1 fix".to_owned() } else { format!("{fixes} fixes") };
        match self {
            UnstagedReason::Suggestion => format!(
                "{what} left as suggestions: not the same name, heading or tag written differently (a name \
                 differing in a digit, a tag sharing only its last segment, another heading); a person judges \
                 each finding's fix"
            ),
            UnstagedReason::CodeOrComment => format!(
                "{what} not staged: their only place is inside code or a comment (an unclosed fence, an HTML \
                 or YAML comment); make them by hand if they are right"
            ),
            UnstagedReason::NoteChanged => format!(
                "{what} not staged: their text is no longer where the audit found it, or the note cannot be \
                 read; audit again"
            ),
            UnstagedReason::TooLarge => {
                format!("{what} not staged: their note would pass [limits] proposal_max_bytes")
            }
            UnstagedReason::Pending => format!(
                "{what} not staged: a pending proposal already changes their note; once the person applies or \
                 rejects it, audit with fix again"
            ),
            UnstagedReason::Later => format!(
                "{what} wait for a later call: their note is in a proposal of another kind staged now, or \
                 their kind's proposal is full; once the person reviews these, audit with fix again"
            ),
            UnstagedReason::InboxHeadroom => format!(
                "{what} not staged: the audit stages only while a quarter of the inbox's room \
                 ([limits] pending_max_count, pending_max_bytes) stays free for other proposals; ask the \
                 person to apply or reject some"
            ),
        }
    }
}
