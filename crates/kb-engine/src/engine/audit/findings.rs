//! The findings of one audit, whole and in order, kept small enough to hold
//! millions: a generated vault of 100,000 notes has about 4.4 million unlinked
//! mentions, so a mention is kept as four numbers and the name as written
//! (shared with the mention cache), and becomes a [`Finding`] with its message
//! only when a page returns it. Every other check's findings are few and kept
//! whole.
//!
//! Both lists are in the order of [`cursor::order_key`] (path, line, check,
//! message): mentions are made note by note in path order, each note's sorted
//! by line and message, so no sort of millions is needed; a page merges the
//! two lists from the cursor's place, found by binary search in each. A
//! mention's message is compared byte by byte as it would be written, never
//! formatted for a comparison.

use std::cmp::Ordering;
use std::sync::Arc;

use super::cursor;
use crate::engine::types::{AuditCheck, Finding, Fix, Severity};
use crate::vault::NoteRecord;

/// Findings as the checks add them (every check but unlinked mentions).
#[derive(Default)]
pub(super) struct Findings(pub(super) Vec<Finding>);

impl Findings {
    pub(super) fn push(
        &mut self,
        check: AuditCheck,
        path: &str,
        line: Option<u32>,
        message: String,
        fix: Option<Fix>,
    ) {
        self.0.push(Finding { check, severity: check.severity(), path: path.to_owned(), line, message, fix });
    }
}

/// One unlinked mention: the note at `note` mentions the note at `target` on
/// `line`, written `written`, without linking it.
#[derive(Debug, Clone)]
pub(super) struct Mention {
    pub(super) note: u32,
    pub(super) line: u32,
    pub(super) target: u32,
    pub(super) written: Arc<str>,
}

/// The fixed parts of a mention's message, around the name and the path.
const MENTION_HEAD: &str = "mentions `";
const MENTION_MIDDLE: &str = "` (";
const MENTION_TAIL: &str = ") without linking it";

impl Mention {
    /// The message, as a finding carries it.
    fn message(&self, records: &[Arc<NoteRecord>]) -> String {
        let target = &records[self.target as usize].path;
        format!("{MENTION_HEAD}{}{MENTION_MIDDLE}{target}{MENTION_TAIL}", self.written)
    }

    /// The message's bytes, without writing it out.
    fn message_bytes<'a>(&'a self, records: &'a [Arc<NoteRecord>]) -> impl Iterator<Item = u8> + 'a {
        let target = records[self.target as usize].path.as_bytes();
        MENTION_HEAD
            .bytes()
            .chain(self.written.bytes())
            .chain(MENTION_MIDDLE.bytes())
            .chain(target.iter().copied())
            .chain(MENTION_TAIL.bytes())
    }

    /// The order of two mentions of one note: by line, then message. The
    /// message's variable parts decide it directly where they differ inside
    /// both; only where one is a prefix of the other are the messages'
    /// bytes compared through.
    pub(super) fn cmp_in_note(&self, other: &Mention, records: &[Arc<NoteRecord>]) -> Ordering {
        /// The order of `x` and `y` when a byte inside both tells it.
        fn inside(x: &[u8], y: &[u8]) -> Option<Ordering> {
            let n = x.len().min(y.len());
            Some(x[..n].cmp(&y[..n])).filter(|o| o.is_ne())
        }
        self.line.cmp(&other.line).then_with(|| {
            let (a, b) = (self.written.as_bytes(), other.written.as_bytes());
            let by_path = || {
                let target = |m: &Mention| records[m.target as usize].path.as_bytes();
                (a == b).then(|| inside(target(self), target(other))).flatten()
            };
            inside(a, b)
                .or_else(by_path)
                .unwrap_or_else(|| self.message_bytes(records).cmp(other.message_bytes(records)))
        })
    }

    /// This mention's place against a finding's order key.
    fn cmp_key(&self, records: &[Arc<NoteRecord>], key: (&str, u32, AuditCheck, &str)) -> Ordering {
        let (path, line, check, message) = key;
        records[self.note as usize]
            .path
            .as_str()
            .cmp(path)
            .then(self.line.cmp(&line))
            .then(AuditCheck::UnlinkedMention.cmp(&check))
            .then_with(|| self.message_bytes(records).cmp(message.bytes()))
    }

    fn finding(&self, records: &[Arc<NoteRecord>]) -> Finding {
        let check = AuditCheck::UnlinkedMention;
        Finding {
            check,
            severity: check.severity(),
            path: records[self.note as usize].path.clone(),
            line: Some(self.line),
            message: self.message(records),
            fix: None,
        }
    }
}

/// Findings per check of `listed` and `mentions` unlinked mentions, and how
/// many are errors.
fn count(listed: &[Finding], mentions: usize) -> (Vec<(AuditCheck, u64)>, u64) {
    let mut by_check: Vec<(AuditCheck, u64)> = Vec::new();
    let mut errors = 0;
    let mut add = |check: AuditCheck, n: u64| {
        match by_check.iter_mut().find(|(c, _)| *c == check) {
            Some((_, count)) => *count += n,
            None => by_check.push((check, n)),
        }
        if check.severity() == Severity::Error {
            errors += n;
        }
    };
    for finding in listed {
        add(finding.check, 1);
    }
    if mentions > 0 {
        add(AuditCheck::UnlinkedMention, mentions as u64);
    }
    (by_check, errors)
}

/// Every finding of one audit, in order: the listed ones and the mentions.
#[derive(Debug, Default)]
pub(super) struct AuditFindings {
    /// Every finding but unlinked mentions, sorted, without repeats.
    listed: Vec<Finding>,
    /// Unlinked mentions, in order.
    mentions: Vec<Mention>,
    /// Findings per check (those with any), and how many are errors.
    counts: (Vec<(AuditCheck, u64)>, u64),
}

impl AuditFindings {
    /// The findings of an audit: `listed` in any order, `mentions` in order.
    pub(super) fn new(listed: Findings, mentions: Vec<Mention>) -> AuditFindings {
        let mut listed = listed.0;
        listed.sort_by(|a, b| cursor::order_key(a).cmp(&cursor::order_key(b)));
        listed.dedup_by(|a, b| cursor::order_key(a) == cursor::order_key(b));
        let counts = count(&listed, mentions.len());
        AuditFindings { listed, mentions, counts }
    }

    pub(super) fn len(&self) -> usize {
        self.listed.len() + self.mentions.len()
    }

    /// Findings per check (those with any), and how many are errors: counted
    /// once, every page reports them.
    pub(super) fn counts(&self) -> &(Vec<(AuditCheck, u64)>, u64) {
        &self.counts
    }

    /// Every finding but unlinked mentions (the only ones with fixes).
    pub(super) fn listed(&self) -> &[Finding] {
        &self.listed
    }

    /// The place of the first finding after `key` (`None`: the start), in
    /// each list.
    fn start(
        &self,
        records: &[Arc<NoteRecord>],
        key: Option<(&str, u32, AuditCheck, &str)>,
    ) -> (usize, usize) {
        let Some(key) = key else { return (0, 0) };
        (
            self.listed.partition_point(|f| cursor::order_key(f) <= key),
            self.mentions.partition_point(|m| m.cmp_key(records, key) != Ordering::Greater),
        )
    }

    /// Up to `limit` findings after `key` (`None`: from the first), and
    /// whether more follow. `records` are those of the catalog the findings
    /// were made from.
    pub(super) fn page(
        &self,
        records: &[Arc<NoteRecord>],
        key: Option<(&str, u32, AuditCheck, &str)>,
        limit: usize,
    ) -> (Vec<Finding>, bool) {
        let (mut a, mut b) = self.start(records, key);
        let mut page = Vec::with_capacity(limit.min(self.len()));
        while page.len() < limit {
            let listed_first = match (self.listed.get(a), self.mentions.get(b)) {
                (None, None) => break,
                (Some(_), None) => true,
                (None, Some(_)) => false,
                (Some(f), Some(m)) => m.cmp_key(records, cursor::order_key(f)) == Ordering::Greater,
            };
            if listed_first {
                page.push(self.listed[a].clone());
                a += 1;
            } else {
                page.push(self.mentions[b].finding(records));
                b += 1;
            }
        }
        (page, a + b < self.len())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sandbox::NotePath;
    use crate::vault::{NoteKind, NoteRecord, parse_note};

    fn record(path: &str) -> Arc<NoteRecord> {
        let note = parse_note(&NotePath::parse(path).unwrap(), "");
        Arc::new(NoteRecord::from_note(note, NoteKind::Note, 0, 0, None, String::new()))
    }

    /// The merged pages equal every finding written out and sorted the way a
    /// finding's order key sorts, whatever the names, paths and lines, and a
    /// page after any finding starts right after it.
    #[test]
    fn pages_follow_the_order_of_findings_written_out() {
        // A catalog's records are sorted by path (`a b.md` before `a.md`); seven
        // of them, so that no two mentions of a note are the same finding.
        let records: Vec<Arc<NoteRecord>> =
            ["a b.md", "a b.md x.md", "a.md", "a/b.md", "b.md", "c.md", "z`.md"]
                .into_iter()
                .map(record)
                .collect();
        let names = ["A", "AB", "a`", "b", "x y", "a", "A", "A (", "A`"];
        let mut mentions = Vec::new();
        for note in 0..records.len() as u32 {
            let mut own = Vec::new();
            for (k, name) in names.iter().enumerate() {
                let (line, target) = (k as u32 % 3 + 1, (note + k as u32 + 1) % records.len() as u32);
                own.push(Mention { note, line, target, written: Arc::from(*name) });
            }
            own.sort_by(|x, y| x.cmp_in_note(y, &records));
            mentions.extend(own);
        }
        let mut listed = Findings::default();
        for (k, path) in ["a.md", "a/b.md", "b.md", "c.md", "z`.md"].into_iter().enumerate() {
            let line = (k % 3) as u32;
            listed.push(AuditCheck::BrokenLink, path, Some(line + 1), "x".into(), None);
            listed.push(AuditCheck::Orphan, path, None, "no note links here".into(), None);
            listed.push(AuditCheck::UnlinkedMention, path, Some(2), "mentions `AB` (zzz)".into(), None);
            listed.push(AuditCheck::MocMissing, path, Some(2), "y".into(), None);
        }
        let findings = AuditFindings::new(listed, mentions.clone());
        let mut expected: Vec<Finding> = findings.listed.clone();
        expected.extend(mentions.iter().map(|m| m.finding(&records)));
        expected.sort_by(|a, b| cursor::order_key(a).cmp(&cursor::order_key(b)));

        let (all, more) = findings.page(&records, None, usize::MAX);
        assert!(!more);
        assert_eq!(all, expected);
        assert_eq!(findings.len(), expected.len());
        for (k, after) in expected.iter().enumerate() {
            let (page, more) = findings.page(&records, Some(cursor::order_key(after)), 3);
            assert_eq!(page, expected[k + 1..expected.len().min(k + 4)], "after {after:?}");
            assert_eq!(more, k + 4 < expected.len());
        }
        let (counts, errors) = findings.counts();
        let mentions_counted =
            counts.iter().find(|(c, _)| *c == AuditCheck::UnlinkedMention).map(|(_, n)| *n);
        assert_eq!(mentions_counted, Some(records.len() as u64 * names.len() as u64 + 5));
        assert_eq!(*errors, 5);
    }
}
