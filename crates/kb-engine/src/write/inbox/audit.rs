//! The audit log `inbox/_applied.jsonl`: one JSON line per applied or rejected
//! proposal, append-only, never rewritten.
//!
//! Appending must not cost more as the log grows, so the log is never read
//! whole: opening it reads only its tail, enough to know whether it ends
//! cleanly (a crash mid-append may leave a partial line, which the next line
//! must not continue) and which proposal its last complete line is for. That is
//! all recovery needs: under the inbox lock, the only line an interrupted apply
//! can have appended is the last one (see the journal in `journal.rs`).

use serde::Serialize;
use serde_json::Value;

use super::layout::Inbox;
use crate::error::{Error, ErrorCode, Result};
use crate::sandbox::{NotePath, Sandbox};

/// How much of the log's end is read at first; the window doubles until it
/// holds the start of the last line.
const TAIL_BYTES: u64 = 16 << 10;
/// A last line longer than this is not one kb-mcp wrote: its proposal is not looked for.
const LINE_MAX_BYTES: u64 = 1 << 20;

/// The audit log's end: whether it is clean, and whose line is last.
pub(crate) struct AuditLog {
    pub(crate) path: NotePath,
    /// Whether the file is empty or ends with a newline.
    clean_end: bool,
    /// The `proposal_id` of the last complete line, when it has one.
    last_id: Option<String>,
}

impl AuditLog {
    /// Reads the log's tail (never the whole log); an absent log is empty.
    pub(crate) fn open(sandbox: &Sandbox, inbox: &Inbox) -> Result<AuditLog> {
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
    pub(crate) fn last_id(&self) -> Option<&str> {
        self.last_id.as_deref()
    }

    /// Appends one line, the proposal `proposal_id`'s (`""` for a line of no
    /// proposal: a memory entry's), and returns it as JSON.
    pub(crate) fn append(
        &mut self,
        sandbox: &Sandbox,
        proposal_id: &str,
        line: &impl Serialize,
    ) -> Result<Value> {
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
        self.last_id = (!proposal_id.is_empty()).then(|| proposal_id.to_owned());
        serde_json::from_str(&text)
            .map_err(|err| Error::internal(format!("cannot read back the audit line: {err}")))
    }
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
