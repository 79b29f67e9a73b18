//! "What changed since I was last here": the `changes` block of
//! `get_vault_overview {since}`.
//!
//! Nothing is diffed: every index commit carries a journal of the notes it
//! added, changed and removed (the index's own records, kept in the commit's
//! metadata), and the audit log says which proposals were applied or rejected
//! and by whom. A cursor is where both were at the last look: the commit count
//! and the audit log's length, so the next look reads only the log's new end.
//! A change whose note an applied proposal wrote is credited to that proposal's
//! `by` (`mcp` or `cli`); any other was made outside kb-mcp (`outside`).

use std::collections::HashMap;

use serde_json::Value;

use super::Engine;
use super::types::{ChangedNote, Changes, ProposalEvent};
use crate::error::{Error, Result};
use crate::index::ChangeOp;
use crate::write::audit_since;

/// Most notes each list holds; past that, `incomplete` is set.
const LIST_MAX: usize = 500;

/// `c1` and the hex of `commit\naudit log offset`.
fn encode(seq: u64, log_end: u64) -> String {
    super::cursor::encode("c1", &format!("{seq}\n{log_end}"))
}

fn decode(text: &str) -> Result<(u64, u64)> {
    let cut: String = text.chars().take(40).collect();
    let bad = || {
        Error::invalid(format!("`since` {cut:?} is not a cursor get_vault_overview returned"))
            .with_hint("pass the `changes.cursor` of an earlier overview unchanged, or leave `since` out")
    };
    let text = super::cursor::decode("c1", text).ok_or_else(bad)?;
    let (seq, end) = text.split_once('\n').ok_or_else(bad)?;
    Ok((seq.parse().map_err(|_| bad())?, end.parse().map_err(|_| bad())?))
}

fn text(line: &Value, key: &str) -> String {
    line.get(key).and_then(Value::as_str).unwrap_or_default().to_owned()
}

impl Engine {
    /// The changes the index journal still holds (the last 1,000, none before
    /// the last full build) and the audit log's recent end, with a cursor for
    /// next time: what `kb-index status` shows without `--since`.
    pub fn recent_changes(&self) -> Result<Changes> {
        self.changes_since(Some(&encode(0, 0)))
    }

    /// The `changes` block: since the cursor `since`, or empty with a fresh cursor.
    pub(crate) fn changes_since(&self, since: Option<&str>) -> Result<Changes> {
        let cursor = since.map(decode).transpose()?;
        let journal = self.index().changes_since(cursor.map(|(seq, _)| seq));
        let log = audit_since(&self.sandbox(), cursor.map(|(_, end)| end))?;
        let mut changes = Changes {
            cursor: encode(journal.seq, log.end),
            incomplete: !journal.complete || log.missed,
            ..Changes::default()
        };
        // Who wrote each note an applied proposal touched (the latest line wins).
        let mut writer: HashMap<String, String> = HashMap::new();
        for line in &log.lines {
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
