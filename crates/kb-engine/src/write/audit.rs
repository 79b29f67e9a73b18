//! The audit log `inbox/_applied.jsonl`: one JSON line per applied or rejected
//! proposal, append-only, never rewritten.
//!
//! Appending must not cost more as the log grows, so the log is never read
//! whole: opening it reads only its tail, enough to know whether it ends
//! cleanly (a crash mid-append may leave a partial line, which the next line
//! must not continue) and which proposal its last complete line is for. That is
//! all recovery needs: under the inbox lock, the only line an interrupted apply
//! can have appended is the last one (see the journal in `journal.rs`).

use jiff::Timestamp;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::proposal::{self, Inbox, Located};
use super::{Actor, Applied, ApplyStatus, ProposalKind, Rejected};
use crate::error::{Error, ErrorCode, Result};
use crate::sandbox::{NotePath, Sandbox};

/// How much of the log's end is read at first; the window doubles until it
/// holds the start of the last line.
const TAIL_BYTES: u64 = 16 << 10;
/// A last line longer than this is not one kb-mcp wrote: its proposal is not looked for.
const LINE_MAX_BYTES: u64 = 1 << 20;

/// The audit log's end: whether it is clean, and whose line is last.
pub(super) struct AuditLog {
    pub(super) path: NotePath,
    /// Whether the file is empty or ends with a newline.
    clean_end: bool,
    /// The `proposal_id` of the last complete line, when it has one.
    last_id: Option<String>,
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
    by: Actor,
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
            at: proposal::rfc3339(Timestamp::now()),
            proposal_id: &meta.proposal_id,
            kind: meta.kind,
            target: &meta.target,
            archive: &archived.dir,
            content_sha256: &meta.content_sha256,
            base_sha256: meta.base_sha256.as_deref(),
            by: actor,
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
pub(super) struct Rejection {
    pub(super) proposal_id: String,
    pub(super) reason: String,
    pub(super) at: String,
    pub(super) by: Actor,
}

impl AuditLog {
    /// Reads the log's tail (never the whole log); an absent log is empty.
    pub(super) fn open(sandbox: &Sandbox, inbox: &Inbox) -> Result<AuditLog> {
        let path = inbox.audit_log()?;
        let file = match sandbox.open_read(&path) {
            Ok(file) => file,
            Err(err) if err.code == ErrorCode::NotFound => {
                return Ok(AuditLog { path, clean_end: true, last_id: None });
            }
            Err(err) => return Err(err),
        };
        let len = file.len();
        if len == 0 {
            return Ok(AuditLog { path, clean_end: true, last_id: None });
        }
        let mut window = TAIL_BYTES.min(len);
        loop {
            let start = len - window;
            let tail = file.read_at(start, usize::try_from(window).unwrap_or(usize::MAX))?;
            let clean_end = tail.ends_with(b"\n");
            // Drop a partial last line, then the newline ending the last complete one.
            let complete = match tail.iter().rposition(|&byte| byte == b'\n') {
                Some(end) => &tail[..end],
                None => &tail[..0],
            };
            let line_start = complete.iter().rposition(|&byte| byte == b'\n').map(|at| at + 1);
            if line_start.is_none() && start > 0 && window < LINE_MAX_BYTES.min(len) {
                window = (window * 2).min(LINE_MAX_BYTES).min(len);
                continue;
            }
            let line = match line_start {
                Some(at) => &complete[at..],
                None if start == 0 => complete,
                None => &complete[..0],
            };
            let last_id = serde_json::from_slice::<Value>(line)
                .ok()
                .and_then(|entry| entry.get("proposal_id").and_then(Value::as_str).map(str::to_owned));
            return Ok(AuditLog { path, clean_end, last_id });
        }
    }

    /// The proposal the last complete line is for.
    pub(super) fn last_id(&self) -> Option<&str> {
        self.last_id.as_deref()
    }

    /// Appends one line and returns it as JSON.
    fn append(&mut self, sandbox: &Sandbox, line: &AuditLine<'_>) -> Result<Value> {
        let text = serde_json::to_string(line)
            .map_err(|err| Error::internal(format!("cannot serialise the audit line: {err}")))?;
        let mut bytes = Vec::with_capacity(text.len() + 2);
        if !self.clean_end {
            bytes.push(b'\n');
        }
        bytes.extend_from_slice(text.as_bytes());
        bytes.push(b'\n');
        sandbox.append_inbox(&self.path, &bytes)?;
        self.clean_end = true;
        self.last_id = Some(line.proposal_id.to_owned());
        serde_json::from_str(&text)
            .map_err(|err| Error::internal(format!("cannot read back the audit line: {err}")))
    }
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
        (true, None) => Some(proposal::read_plan_file(sandbox, archived)?.audit_entries()),
        (false, _) => None,
    };
    let line = AuditLine {
        index: Some(if index_result.is_ok() { "ok" } else { "failed" }),
        files,
        ..AuditLine::of(archived, actor, recovered)
    };
    let audit = log.append(sandbox, &line)?;
    Ok(Applied {
        proposal_id: meta.proposal_id.clone(),
        status: if index_result.is_ok() { ApplyStatus::Applied } else { ApplyStatus::AppliedIndexFailed },
        target: meta.target.clone(),
        new_hash: meta.content_sha256.clone(),
        archive: archived.dir.clone(),
        audit,
        index_error: index_result.err().map(|err| err.to_string()),
    })
}

/// The audit line of an archived rejection, and the result to return.
pub(super) fn finish_reject(
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
    let audit = log.append(sandbox, &line)?;
    Ok(Rejected { proposal_id: meta.proposal_id.clone(), archive: archived.dir.clone(), audit })
}

/// Most of the audit log one look reads: older lines are reported as missed.
const SINCE_MAX_BYTES: u64 = 4 << 20;

/// The audit log's lines after an offset, and where the next look starts.
#[derive(Debug, Clone, Default)]
pub struct AuditSince {
    /// The complete lines after the offset, oldest first (lines that are not
    /// JSON objects are left out).
    pub lines: Vec<Value>,
    /// The offset just after the last complete line.
    pub end: u64,
    /// Whether lines were skipped: more than 4 MiB were written since, or the
    /// log is shorter than the offset (not the log it was taken from).
    pub missed: bool,
}

/// The lines appended to the audit log after byte `from` (`None`: none, only
/// the offset to look from next time). Reads from the offset to the end, never
/// the whole log.
pub fn audit_since(sandbox: &Sandbox, from: Option<u64>) -> Result<AuditSince> {
    let path = Inbox::of(sandbox).audit_log()?;
    let file = match sandbox.open_read(&path) {
        Ok(file) => file,
        Err(err) if err.code == ErrorCode::NotFound => {
            return Ok(AuditSince { lines: Vec::new(), end: 0, missed: from.is_some_and(|f| f > 0) });
        }
        Err(err) => return Err(err),
    };
    let len = file.len();
    let (start, missed) = match from {
        // Only the end is wanted: the last line's end is within its last 1 MiB.
        None => (len.saturating_sub(LINE_MAX_BYTES), false),
        Some(from) if from > len => (len.saturating_sub(SINCE_MAX_BYTES), true),
        Some(from) if len - from > SINCE_MAX_BYTES => (len - SINCE_MAX_BYTES, true),
        Some(from) => (from, false),
    };
    let bytes = file.read_at(start, usize::try_from(len - start).unwrap_or(usize::MAX))?;
    let Some(last) = bytes.iter().rposition(|&b| b == b'\n') else {
        return Ok(AuditSince { lines: Vec::new(), end: start, missed });
    };
    let end = start + last as u64 + 1;
    if from.is_none() {
        return Ok(AuditSince { lines: Vec::new(), end, missed });
    }
    // Started inside a line (lines were skipped): drop its rest.
    let first = if missed { bytes.iter().position(|&b| b == b'\n').map_or(0, |at| at + 1) } else { 0 };
    let lines = bytes[first.min(last)..last]
        .split(|&b| b == b'\n')
        .filter_map(|line| serde_json::from_slice::<Value>(line).ok())
        .filter(Value::is_object)
        .collect();
    Ok(AuditSince { lines, end, missed })
}
