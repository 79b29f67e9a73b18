//! Unlinked mentions: another note's title or alias written in a note's prose
//! without a link to it.
//!
//! Mentions are found with one Aho-Corasick automaton over every unique title
//! and alias, run over each note's prose only (no frontmatter, code, comments,
//! links or tags): a Chinese, Japanese or Korean name counts inside a sentence,
//! a Latin one only between word boundaries.

use std::collections::{BTreeMap, BTreeSet, HashSet};
use std::sync::Arc;

use aho_corasick::{AhoCorasick, AhoCorasickBuilder, MatchKind};

use crate::index::is_cjk;
use crate::sandbox::NotePath;
use crate::vault::graph::{Broken, Graph, Resolution};
use crate::vault::{NoteKind, NoteRecord, prose_spans};

/// A character of a word for the boundary rule: a letter or digit of a script
/// written with spaces (Chinese, Japanese and Korean are not).
fn is_word_char(c: char) -> bool {
    (c.is_alphanumeric() || c == '_') && !is_cjk(c)
}

/// Whether a title or alias is worth looking for in other notes' text: it has
/// a letter, and two characters at least in Chinese, Japanese or Korean, three
/// in other scripts.
fn mentionable(name: &str) -> bool {
    let chars = name.chars().count();
    let cjk = name.chars().any(is_cjk);
    name.chars().any(char::is_alphabetic) && chars >= if cjk { 2 } else { 3 }
}

/// Titles and aliases that name exactly one note, as one automaton.
pub(super) struct Mentions {
    automaton: Option<AhoCorasick>,
    /// Per pattern: the name as written in its note, and the note.
    targets: Vec<(String, usize)>,
}

impl Mentions {
    pub(super) fn new(records: &[Arc<NoteRecord>]) -> Mentions {
        let mut by_name: BTreeMap<String, (String, BTreeSet<usize>)> = BTreeMap::new();
        for (i, record) in records.iter().enumerate().filter(|(_, r)| r.kind == NoteKind::Note) {
            for name in std::iter::once(&record.title).chain(record.aliases.iter()) {
                let name = name.trim();
                if mentionable(name) {
                    by_name
                        .entry(name.to_lowercase())
                        .or_insert_with(|| (name.to_owned(), BTreeSet::new()))
                        .1
                        .insert(i);
                }
            }
        }
        let targets: Vec<(String, usize)> = by_name
            .into_values()
            .filter(|(_, notes)| notes.len() == 1)
            .filter_map(|(name, notes)| notes.first().map(|&n| (name, n)))
            .collect();
        let automaton = AhoCorasickBuilder::new()
            .match_kind(MatchKind::LeftmostLongest)
            .ascii_case_insensitive(true)
            .build(targets.iter().map(|(name, _)| name.as_str()))
            .ok();
        Mentions { automaton, targets }
    }

    /// The other notes a note's prose names without linking them: the first
    /// line of each, the name as found, the note.
    pub(super) fn find(
        &self,
        graph: &Graph,
        note: usize,
        path: &NotePath,
        text: &str,
    ) -> Vec<(u32, String, usize)> {
        let Some(automaton) = &self.automaton else { return Vec::new() };
        let linked: HashSet<u32> = graph
            .outlinks(note)
            .iter()
            .filter_map(|r| match r {
                Resolution::Note(to) => Some(*to),
                Resolution::Broken(Broken::MissingHeading(to) | Broken::MissingBlock(to)) => Some(*to),
                _ => None,
            })
            .collect();
        let mut found: BTreeMap<usize, (usize, String)> = BTreeMap::new();
        for span in prose_spans(path, text) {
            let prose = &text[span.range()];
            for hit in automaton.find_iter(prose) {
                let (_, target) = &self.targets[hit.pattern().as_usize()];
                if *target == note || linked.contains(&(*target as u32)) || found.contains_key(target) {
                    continue;
                }
                let before = prose[..hit.start()].chars().next_back();
                let after = prose[hit.end()..].chars().next();
                let written = &prose[hit.start()..hit.end()];
                let first = written.chars().next();
                let last = written.chars().next_back();
                let joined = |edge: Option<char>, next: Option<char>| {
                    edge.is_some_and(is_word_char) && next.is_some_and(is_word_char)
                };
                if joined(first, before) || joined(last, after) {
                    continue;
                }
                found.insert(*target, (span.start + hit.start(), written.to_owned()));
            }
        }
        let mut out: Vec<(u32, String, usize)> = found
            .into_iter()
            .map(|(target, (at, written))| {
                let line = text[..at].matches('\n').count() as u32 + 1;
                (line, written, target)
            })
            .collect();
        out.sort();
        out
    }
}
