//! How an apply or a reject ends: its audit line appended to the log, and the
//! result returned, naming who approved it.

use jiff::Timestamp;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::error::Result;
use crate::sandbox::{Sandbox, Zone, rfc3339};
use crate::write::inbox::{AuditLog, Located, ProposalKind};
use crate::write::plan::read_plan_file;

/// Who applied or rejected a proposal, for the audit line (the engine's
/// callers name it `engine::types::Actor`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Actor {
    /// An MCP client through `apply_proposal`.
    Mcp,
    /// A person through `kb-index inbox`.
    Cli,
    /// A person clicking Apply or Reject in the review card an MCP host shows.
    ReviewCard,
    /// A person clicking Apply or Reject on the `kb-index review` page.
    ReviewPage,
}

impl Actor {
    /// The audit line's `by`, one of the contract's two: the card is reached
    /// through MCP, the page is `kb-index`.
    pub fn by(self) -> &'static str {
        match self {
            Actor::Mcp | Actor::ReviewCard => "mcp",
            Actor::Cli | Actor::ReviewPage => "cli",
        }
    }

    /// The audit line's `via`, an extension naming the view the person
    /// approved in (`review_card`, `review_page`); `None` otherwise.
    pub fn via(self) -> Option<&'static str> {
        match self {
            Actor::ReviewCard => Some("review_card"),
            Actor::ReviewPage => Some("review_page"),
            Actor::Mcp | Actor::Cli => None,
        }
    }
}

/// How an apply ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ApplyStatus {
    /// Written, archived, indexed, audited.
    Applied,
    /// Written, archived and audited, but the index update failed: never apply it
    /// again, rebuild the index.
    AppliedIndexFailed,
}

impl ApplyStatus {
    /// Its name in results: `applied`, `applied_index_failed`.
    pub fn name(self) -> &'static str {
        match self {
            ApplyStatus::Applied => "applied",
            ApplyStatus::AppliedIndexFailed => "applied_index_failed",
        }
    }
}

impl std::fmt::Display for ApplyStatus {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.pad(self.name())
    }
}

/// The result of an apply.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Applied {
    /// The proposal's id.
    pub proposal_id: String,
    /// Applied, or applied with a failed index update.
    pub status: ApplyStatus,
    /// The note written.
    pub target: String,
    /// `sha256:<hex>` of the note as written.
    pub new_hash: String,
    /// The archive folder the proposal's files moved to, e.g. `inbox/applied/2026-01-20`.
    pub archive: String,
    /// The audit line appended, as JSON.
    pub audit: serde_json::Value,
    /// The proposal's reason, as staged.
    #[serde(skip)]
    pub reason: String,
    /// Why the index update failed, when it did.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub index_error: Option<String>,
}

/// The result of a reject.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Rejected {
    /// The proposal's id.
    pub proposal_id: String,
    /// The folder its files moved to, e.g. `inbox/rejected/2026-01-20`.
    pub archive: String,
    /// The audit line appended, as JSON.
    pub audit: serde_json::Value,
}

/// One line of the audit log, in the contract's field order.
#[derive(Debug, Serialize)]
struct AuditLine<'a> {
    at: String,
    proposal_id: &'a str,
    kind: ProposalKind,
    target: &'a str,
    archive: &'a str,
    content_sha256: &'a str,
    #[serde(skip_serializing_if = "Option::is_none")]
    base_sha256: Option<&'a str>,
    /// The contract's `mcp` or `cli`.
    by: &'static str,
    /// Where the person approved, beyond the contract's `by`: `review_card`
    /// or `review_page`; absent otherwise.
    #[serde(skip_serializing_if = "Option::is_none")]
    via: Option<&'static str>,
    /// `ok` or `failed`; absent for a rejection.
    #[serde(skip_serializing_if = "Option::is_none")]
    index: Option<&'static str>,
    /// `rejected` for a rejection.
    #[serde(skip_serializing_if = "Option::is_none")]
    status: Option<&'static str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    reason: Option<&'a str>,
    /// Written by recovery, completing an interrupted apply or reject.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    recovered: bool,
    /// For a multi-file proposal: every file with its before and after hash.
    #[serde(skip_serializing_if = "Option::is_none")]
    files: Option<Vec<Value>>,
}

impl<'a> AuditLine<'a> {
    /// The fields every line of an archived proposal shares; an apply adds
    /// `index`, a rejection `status` and `reason`.
    fn of(archived: &'a Located, actor: Actor, recovered: bool) -> Self {
        let meta = &archived.meta;
        AuditLine {
            at: rfc3339(Timestamp::now(), Zone::Local),
            proposal_id: &meta.proposal_id,
            kind: meta.kind,
            target: &meta.target,
            archive: &archived.dir,
            content_sha256: &meta.content_sha256,
            base_sha256: meta.base_sha256.as_deref(),
            by: actor.by(),
            via: actor.via(),
            index: None,
            status: None,
            reason: None,
            recovered,
            files: None,
        }
    }
}

/// The record beside a rejected proposal.
#[derive(Debug, Serialize, Deserialize)]
pub(crate) struct Rejection {
    pub(crate) proposal_id: String,
    pub(crate) reason: String,
    pub(crate) at: String,
    pub(crate) by: Actor,
}

/// The audit line of an archived apply, and the result to return. A
/// multi-file proposal's line lists every file of its plan: `files`, when the
/// caller has them from the plan it applied, else read from the archive.
pub(super) fn finish_apply(
    sandbox: &Sandbox,
    log: &mut AuditLog,
    archived: &Located,
    index_result: Result<()>,
    actor: Actor,
    recovered: bool,
    files: Option<Vec<Value>>,
) -> Result<Applied> {
    let meta = &archived.meta;
    let files = match (meta.kind.is_multi(), files) {
        (true, Some(files)) => Some(files),
        (true, None) => Some(read_plan_file(sandbox, archived)?.audit_entries()),
        (false, _) => None,
    };
    let line = AuditLine {
        index: Some(if index_result.is_ok() { "ok" } else { "failed" }),
        files,
        ..AuditLine::of(archived, actor, recovered)
    };
    let audit = log.append(sandbox, &meta.proposal_id, &line)?;
    Ok(Applied {
        proposal_id: meta.proposal_id.clone(),
        status: if index_result.is_ok() { ApplyStatus::Applied } else { ApplyStatus::AppliedIndexFailed },
        target: meta.target.clone(),
        new_hash: meta.content_sha256.clone(),
        archive: archived.dir.clone(),
        audit,
        reason: meta.reason.clone(),
        index_error: index_result.err().map(|err| err.to_string()),
    })
}

/// The audit line of an archived rejection, and the result to return.
pub(crate) fn finish_reject(
    sandbox: &Sandbox,
    log: &mut AuditLog,
    archived: &Located,
    reason: &str,
    actor: Actor,
    recovered: bool,
) -> Result<Rejected> {
    let meta = &archived.meta;
    let line = AuditLine {
        status: Some("rejected"),
        reason: Some(reason),
        ..AuditLine::of(archived, actor, recovered)
    };
    let audit = log.append(sandbox, &meta.proposal_id, &line)?;
    Ok(Rejected { proposal_id: meta.proposal_id.clone(), archive: archived.dir.clone(), audit })
}
