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
    /// The check that found it.
    pub check: AuditCheck,
    /// How serious it is.
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
    /// With `fix`: the proposals staged, one per note.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub proposals: Vec<String>,
}
