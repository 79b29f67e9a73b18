//! What a history commit says about its change: a subject a person reads in
//! `git log`, and trailers (`Kb-Proposal:`, `Kb-Kind:`, `Kb-Approved-By:`,
//! `Kb-Moved:`) that kb-mcp reads back, so no other file is needed to know
//! who made a version.

/// Who made a change.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ChangeBy {
    /// Found on disk: the person's edit, another program's, a sync's.
    OnDisk,
    /// An applied proposal.
    Proposal {
        /// Its id.
        id: String,
        /// Its kind (`patch`, `new_note`, `move`, …).
        kind: String,
        /// Who approved it: `mcp` or `cli`, and the view (`review_card`, …) when there was one.
        approved_by: String,
    },
}

/// One change to record: who, why, and the moves it made (old path, new path),
/// which a note's history follows back to its old name.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Change {
    /// Who made it.
    pub by: ChangeBy,
    /// The proposal's reason (empty on disk).
    pub reason: String,
    /// Notes moved: (from, to).
    pub moves: Vec<(String, String)>,
}

/// Longest reason kept in a message.
const REASON_MAX_CHARS: usize = 2_000;

impl Change {
    /// A change found on disk.
    pub fn on_disk() -> Change {
        Change { by: ChangeBy::OnDisk, reason: String::new(), moves: Vec::new() }
    }

    /// The commit message for this change to `files` files.
    pub(super) fn message(&self, files: usize) -> String {
        let one_line = |text: &str| text.split_whitespace().collect::<Vec<_>>().join(" ");
        let mut message = match &self.by {
            ChangeBy::OnDisk => format!("on disk: {files} file(s) changed\n\nKb-By: on-disk\n"),
            ChangeBy::Proposal { id, kind, approved_by } => {
                let reason: String = self.reason.chars().take(REASON_MAX_CHARS).collect();
                let reason = reason.trim();
                let mut text = format!("apply {id} ({kind}, {files} file(s))\n\n");
                if !reason.is_empty() {
                    text.push_str(reason);
                    text.push_str("\n\n");
                }
                text.push_str(&format!(
                    "Kb-By: proposal\nKb-Proposal: {}\nKb-Kind: {}\nKb-Approved-By: {}\n",
                    one_line(id),
                    one_line(kind),
                    one_line(approved_by)
                ));
                text
            }
        };
        for (from, to) in &self.moves {
            message.push_str(&format!("Kb-Moved: {} -> {}\n", one_line(from), one_line(to)));
        }
        message
    }

    /// The change a commit message describes; `None` for a message kb-mcp
    /// did not write.
    pub(super) fn parse(message: &str) -> Option<Change> {
        let (body, trailers) = message.trim_end().rsplit_once("\n\n")?;
        let field = |name: &str| {
            trailers.lines().find_map(|line| line.strip_prefix(name)?.strip_prefix(": ").map(str::to_owned))
        };
        let moves = trailers
            .lines()
            .filter_map(|line| {
                let (from, to) = line.strip_prefix("Kb-Moved: ")?.split_once(" -> ")?;
                Some((from.to_owned(), to.to_owned()))
            })
            .collect();
        match field("Kb-By")?.as_str() {
            "on-disk" => Some(Change { moves, ..Change::on_disk() }),
            "proposal" => {
                let by = ChangeBy::Proposal {
                    id: field("Kb-Proposal")?,
                    kind: field("Kb-Kind").unwrap_or_default(),
                    approved_by: field("Kb-Approved-By").unwrap_or_default(),
                };
                // The reason is the paragraphs between the subject and the trailers.
                let reason =
                    body.split_once("\n\n").map(|(_, reason)| reason.trim().to_owned()).unwrap_or_default();
                Some(Change { by, reason, moves })
            }
            _ => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_message_reads_back_as_its_change() {
        let applied = Change {
            by: ChangeBy::Proposal {
                id: "20261207-0930-fix".into(),
                kind: "move".into(),
                approved_by: "mcp via review_card".into(),
            },
            reason: "Tidy the reading folder.\n\nSecond paragraph.".into(),
            moves: vec![("reading/a.md".into(), "books/笔记 a.md".into())],
        };
        let text = applied.message(3);
        assert!(text.starts_with("apply 20261207-0930-fix (move, 3 file(s))\n\nTidy"), "{text}");
        assert_eq!(Change::parse(&text), Some(applied));
        let disk = Change::on_disk();
        assert_eq!(Change::parse(&disk.message(2)), Some(disk));
        // A reason without its own paragraph, and a foreign message.
        let bare = Change {
            by: ChangeBy::Proposal { id: "x".into(), kind: "patch".into(), approved_by: "cli".into() },
            reason: String::new(),
            moves: Vec::new(),
        };
        assert_eq!(Change::parse(&bare.message(1)), Some(bare));
        assert_eq!(Change::parse("Fix typo\n\nSigned-off-by: someone"), None);
    }
}
