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
use crate::sandbox::{NotePath, Sandbox, Zone, rfc3339};

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
/// How many bytes before an offset its [`AuditMark::check`] covers: the end of
/// the last line, whose time and proposal id no other log repeats.
const CHECK_BYTES: u64 = 256;

/// A place in the audit log: an offset, and a check of the bytes before it, so
/// that a later look can tell the same log grown from a log truncated or
/// replaced since (whose bytes at that offset are not the ones it ended with).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct AuditMark {
    /// The offset just after a complete line (0: the log's start).
    pub offset: u64,
    /// 16 hex digits of the SHA-256 of the up to 256 bytes before `offset`
    /// (empty at offset 0); `None` when the mark carries no check (an older cursor).
    pub check: Option<String>,
}

/// The audit log's lines after a mark, and where the next look starts.
#[derive(Debug, Clone, Default)]
pub struct AuditSince {
    /// The complete lines after the mark, oldest first (lines that are not
    /// JSON objects are left out).
    pub lines: Vec<Value>,
    /// Just after the last complete line.
    pub end: AuditMark,
    /// Whether lines were skipped: more than 4 MiB were written since, or the
    /// log is not the one the mark was taken from (shorter than its offset, or
    /// other bytes before it: truncated, rotated or replaced). Then the lines
    /// are those of the log's last 4 MiB.
    pub missed: bool,
}

/// The check of the bytes before `offset` (see [`AuditMark::check`]).
fn check_before(file: &crate::sandbox::OpenedFile, offset: u64) -> Result<String> {
    if offset == 0 {
        return Ok(String::new());
    }
    let from = offset.saturating_sub(CHECK_BYTES);
    let bytes = file.read_at(from, usize::try_from(offset - from).unwrap_or(usize::MAX))?;
    let hash = crate::vault::content_hash(&bytes);
    Ok(hash.trim_start_matches("sha256:").chars().take(16).collect())
}

/// The lines appended to the audit log after the mark `from` (`None`: none,
/// only the mark to look from next time). Reads from the mark to the end, never
/// the whole log.
pub fn audit_since(sandbox: &Sandbox, from: Option<&AuditMark>) -> Result<AuditSince> {
    let path = Inbox::of(sandbox).audit_log()?;
    let file = match sandbox.open_read(&path) {
        Ok(file) => file,
        Err(err) if err.code == ErrorCode::NotFound => {
            let missed = from.is_some_and(|f| f.offset > 0);
            let end = AuditMark { offset: 0, check: Some(String::new()) };
            return Ok(AuditSince { lines: Vec::new(), end, missed });
        }
        Err(err) => return Err(err),
    };
    let len = file.len();
    // The log the mark was taken from only grows: the bytes before its offset
    // are still the ones it checked.
    let same_log = |mark: &AuditMark| -> Result<bool> {
        Ok(mark.offset <= len
            && match &mark.check {
                Some(check) => *check == check_before(&file, mark.offset)?,
                None => true,
            })
    };
    let (start, missed) = match from {
        // Only the end is wanted: the last line's end is within its last 1 MiB.
        None => (len.saturating_sub(LINE_MAX_BYTES), false),
        Some(mark) if !same_log(mark)? => (len.saturating_sub(SINCE_MAX_BYTES), true),
        Some(mark) if len - mark.offset > SINCE_MAX_BYTES => (len - SINCE_MAX_BYTES, true),
        Some(mark) => (mark.offset, false),
    };
    // One byte before the start says whether it is a line's start.
    let lead = u64::from(start > 0);
    let read = file.read_at(start - lead, usize::try_from(len - start + lead).unwrap_or(usize::MAX))?;
    let inside_a_line = lead == 1 && read.first() != Some(&b'\n');
    let bytes = &read[usize::from(lead == 1)..];
    let Some(last) = bytes.iter().rposition(|&b| b == b'\n') else {
        let end = AuditMark { offset: start, check: Some(check_before(&file, start)?) };
        return Ok(AuditSince { lines: Vec::new(), end, missed });
    };
    let end_offset = start + last as u64 + 1;
    let end = AuditMark { offset: end_offset, check: Some(check_before(&file, end_offset)?) };
    if from.is_none() {
        return Ok(AuditSince { lines: Vec::new(), end, missed });
    }
    // Started inside a line (lines were skipped): drop its rest.
    let first = if inside_a_line { bytes.iter().position(|&b| b == b'\n').map_or(0, |at| at + 1) } else { 0 };
    let lines = bytes[first.min(last)..last]
        .split(|&b| b == b'\n')
        .filter_map(|line| serde_json::from_slice::<Value>(line).ok())
        .filter(Value::is_object)
        .collect();
    Ok(AuditSince { lines, end, missed })
}
