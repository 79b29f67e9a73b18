//! "What changed since I was last here": the `changes` block of
//! `get_vault_overview {since}`.
//!
//! Nothing is diffed: every index commit carries a journal of the notes it
//! added, changed and removed (the index's own records, kept in the commit's
//! metadata), and the audit log says which proposals were applied or rejected
//! and by whom. A cursor is where both were at the last look: the commit count
//! and the audit log's length with a check of its last bytes, so the next
//! look reads only the log's new end, and knows when the log it finds is not
//! the one the cursor was taken from (truncated, rotated, replaced): then the
//! answer is `incomplete`.
//! A change whose note an applied proposal wrote is credited to that proposal's
//! `by` (`mcp` or `cli`); any other was made outside kb-mcp (`outside`).

use std::collections::HashMap;

use serde_json::Value;

use super::Engine;
use super::types::{ChangedNote, Changes, ProposalEvent};
use crate::error::{Error, Result};
use crate::index::ChangeOp;
use crate::write::{AuditMark, audit_since};

/// Most notes each list holds; past that, `incomplete` is set.
const LIST_MAX: usize = 500;

/// `c2` and the hex of `commit\naudit log offset\ncheck of the bytes before it`.
fn encode(seq: u64, log: &AuditMark) -> String {
    let check = log.check.as_deref().unwrap_or_default();
    super::cursor::encode("c2", &format!("{seq}\n{}\n{check}", log.offset))
}

/// A cursor's commit and audit log mark; a `c1` cursor (before the check) has none.
fn decode(text: &str) -> Result<(u64, AuditMark)> {
    let cut: String = text.chars().take(40).collect();
    let bad = || {
        Error::invalid(format!("`since` {cut:?} is not a cursor get_vault_overview returned"))
            .with_hint("pass the `changes.cursor` of an earlier overview unchanged, or leave `since` out")
    };
    let (text, checked) = match super::cursor::decode("c2", text) {
        Some(text) => (text, true),
        None => (super::cursor::decode("c1", text).ok_or_else(bad)?, false),
    };
    let mut fields = text.split('\n');
    let seq = fields.next().and_then(|f| f.parse().ok()).ok_or_else(bad)?;
    let offset = fields.next().and_then(|f| f.parse().ok()).ok_or_else(bad)?;
    let check = if checked {
        let check = fields.next().ok_or_else(bad)?;
        if check.len() > 16 || !check.bytes().all(|b| b.is_ascii_hexdigit()) {
            return Err(bad());
        }
        Some(check.to_owned())
    } else {
        None
    };
    if fields.next().is_some() {
        return Err(bad());
    }
    Ok((seq, AuditMark { offset, check }))
}

fn text(line: &Value, key: &str) -> String {
    line.get(key).and_then(Value::as_str).unwrap_or_default().to_owned()
}

impl Engine {
    /// The changes the index journal still holds (the last 1,000, none before
    /// the last full build) and the audit log's recent end, with a cursor for
    /// next time: what `kb-index status` shows without `--since`.
    pub fn recent_changes(&self) -> Result<Changes> {
        self.changes_since(Some(&encode(0, &AuditMark::default())))
    }

    /// The `changes` block: since the cursor `since`, or empty with a fresh cursor.
    pub(crate) fn changes_since(&self, since: Option<&str>) -> Result<Changes> {
        let cursor = since.map(decode).transpose()?;
        let journal = self.index().changes_since(cursor.as_ref().map(|(seq, _)| *seq));
        let log = audit_since(&self.sandbox(), cursor.as_ref().map(|(_, mark)| mark))?;
        let mut changes = Changes {
            cursor: encode(journal.seq, &log.end),
            incomplete: !journal.complete || log.missed,
            ..Changes::default()
        };
        // Who wrote each note an applied proposal touched (the latest line wins).
        let mut writer: HashMap<String, String> = HashMap::new();
        for line in &log.lines {
            // A memory entry is no note's change, and whose memory it is stays its own.
            if line.get("kind").and_then(Value::as_str) == Some("memory") {
                continue;
            }
            let event = ProposalEvent {
                proposal_id: text(line, "proposal_id"),
                kind: text(line, "kind"),
                target: text(line, "target"),
                at: text(line, "at"),
                by: text(line, "by"),
            };
            if line.get("status").and_then(Value::as_str) == Some("rejected") {
                changes.rejected.push(event);
                continue;
            }
            writer.insert(event.target.clone(), event.by.clone());
            for file in line.get("files").and_then(Value::as_array).into_iter().flatten() {
                if let Some(path) = file.get("path").and_then(Value::as_str) {
                    writer.insert(path.to_owned(), event.by.clone());
                }
            }
            changes.applied.push(event);
        }
        for (op, path) in journal.changes {
            let by = writer.get(&path).cloned().unwrap_or_else(|| "outside".to_owned());
            let list = match op {
                ChangeOp::Added => &mut changes.added,
                ChangeOp::Changed => &mut changes.changed,
                ChangeOp::Removed => &mut changes.removed,
            };
            list.push(ChangedNote { path, by });
        }
        for list in [&mut changes.added, &mut changes.changed, &mut changes.removed] {
            if list.len() > LIST_MAX {
                list.truncate(LIST_MAX);
                changes.incomplete = true;
            }
        }
        for list in [&mut changes.applied, &mut changes.rejected] {
            if list.len() > LIST_MAX {
                list.drain(..list.len() - LIST_MAX);
                changes.incomplete = true;
            }
        }
        Ok(changes)
    }
}
