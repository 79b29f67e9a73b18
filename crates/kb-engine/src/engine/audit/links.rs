//! The link checks: broken links, broken heading and block anchors, ambiguous
//! links; and, for the broken-link findings an answer returns, the note each
//! link most likely meant (by name similarity, then closeness in the link graph).
//!
//! A fix is mechanical (`fix: true` stages it) only when the link wrote the
//! one note's name, or the one heading, differently (`spelling.rs`): then there
//! is nothing to guess. The nearest name or heading otherwise found is a
//! suggestion: `Chapter 2` for a missing `Chapter 3` may be the note meant, or
//! the link may wait for a chapter not yet written.

use std::collections::{HashMap, HashSet};
use std::sync::Arc;

use super::findings::Findings;
use super::spelling::{fits_in_link, folded};
use super::{NAMED_MAX, Scope};
use crate::engine::Engine;
use crate::engine::types::{AuditCheck, Finding, Fix};
use crate::sandbox::strip_md;
use crate::vault::graph::{Broken, Graph, Resolution};
use crate::vault::{AnchorRef, LinkKind, LinkRef, NoteKind, NoteRecord, edit_distance};

/// Broken links, broken anchors and ambiguous links of the notes in scope, as
/// far as `run` asks for them.
pub(super) fn check(scope: &Scope<'_>, run: &(dyn Fn(AuditCheck) -> bool + Sync), findings: &mut Findings) {
    let (records, graph) = (scope.records, scope.graph());
    let mut shared: HashMap<&str, Vec<usize>> = HashMap::new();
    for &i in &scope.in_scope {
        let record = &records[i];
        for (link, resolution) in record.links.iter().zip(graph.outlinks(i)) {
            match *resolution {
                // The note it most likely meant is looked for only for the
                // findings an answer returns (see `suggest_notes`).
                Resolution::Broken(Broken::MissingNote) if run(AuditCheck::BrokenLink) => findings.push(
                    AuditCheck::BrokenLink,
                    &record.path,
                    Some(link.line),
                    broken_message(&link),
                    None,
                ),
                Resolution::Broken(Broken::MissingHeading(to)) if run(AuditCheck::BrokenAnchor) => {
                    missing_heading(record, &link, &records[to as usize], findings);
                }
                Resolution::Broken(Broken::MissingBlock(to)) if run(AuditCheck::BrokenAnchor) => {
                    let block = match link.anchor {
                        Some(AnchorRef::Block(b)) => b,
                        _ => "",
                    };
                    findings.push(
                        AuditCheck::BrokenAnchor,
                        &record.path,
                        Some(link.line),
                        format!("{}: {} has no block ^{block}", shown(&link), records[to as usize].path),
                        None,
                    );
                }
                Resolution::Note(_)
                    if run(AuditCheck::AmbiguousLink)
                        && !link.kind.is_path()
                        && !link.target.trim().is_empty() =>
                {
                    let candidates = shared
                        .entry(link.target)
                        .or_insert_with(|| graph.candidates(records, scope.attachments, link.target));
                    ambiguous(scope, record, &link, candidates, findings);
                }
                _ => {}
            }
        }
    }
}

/// A link to a heading `target` does not have; fixed by the one heading it
/// wrote differently (mechanical), else suggested the heading nearest by name,
/// when there is one (not for Markdown links: their anchors are slugs).
fn missing_heading(record: &NoteRecord, link: &LinkRef<'_>, target: &NoteRecord, findings: &mut Findings) {
    let wanted = match link.anchor {
        Some(AnchorRef::Heading(h)) => h.rsplit('#').next().unwrap_or(h),
        _ => "",
    };
    let key = folded(wanted);
    let same: Vec<&str> =
        target.headings.iter().filter(|h| key.is_some() && folded(h.text) == key).map(|h| h.text).collect();
    let (near, mechanical) = match same.as_slice() {
        [only] => (Some((*only).to_owned()), fits_in_link(only)),
        _ => {
            let near = target
                .headings
                .iter()
                .map(|h| (edit_distance(&wanted.to_lowercase(), &h.text.to_lowercase()), h.text))
                .filter(|(d, _)| *d <= (wanted.chars().count() / 3).max(1))
                .min_by_key(|(d, _)| *d)
                .map(|(_, text)| text.to_owned());
            (near, false)
        }
    };
    let fix = near.as_ref().filter(|_| !link.kind.is_path()).map(|heading| Fix {
        path: record.path.clone(),
        summary: format!("point the link at the heading `{heading}`"),
        old: Some(wanted.to_owned()),
        new: heading.clone(),
        mechanical,
    });
    let hint = near.map_or(String::new(), |h| format!("; did you mean `{h}`?"));
    findings.push(
        AuditCheck::BrokenAnchor,
        &record.path,
        Some(link.line),
        format!("{}: {} has no heading `{wanted}`{hint}", shown(link), target.path),
        fix,
    );
}

/// A wikilink whose target names more than one note.
fn ambiguous(
    scope: &Scope<'_>,
    record: &NoteRecord,
    link: &LinkRef<'_>,
    candidates: &[usize],
    findings: &mut Findings,
) {
    if candidates.len() <= 1 {
        return;
    }
    let paths: Vec<&str> =
        candidates.iter().take(NAMED_MAX).map(|&c| scope.records[c].path.as_str()).collect();
    findings.push(
        AuditCheck::AmbiguousLink,
        &record.path,
        Some(link.line),
        format!(
            "{} could mean {} notes: {}; it opens the first",
            shown(link),
            candidates.len(),
            paths.join(", ")
        ),
        None,
    );
}

/// A link as a person wrote it, for messages.
fn shown(link: &LinkRef<'_>) -> String {
    let anchor = match link.anchor {
        Some(AnchorRef::Heading(h)) => format!("#{h}"),
        Some(AnchorRef::Block(b)) => format!("#^{b}"),
        None => String::new(),
    };
    match link.kind {
        LinkKind::Markdown => format!("({}{anchor})", link.target),
        LinkKind::Embed => format!("![[{}{anchor}]]", link.target),
        LinkKind::Canvas => format!("file node {}{anchor}", link.target),
        _ => format!("[[{}{anchor}]]", link.target),
    }
}

/// A broken link's message (the key its finding is found again by).
fn broken_message(link: &LinkRef<'_>) -> String {
    format!("{} leads to no note or file", shown(link))
}

/// The shortest wikilink target naming a note uniquely: its file name when no
/// other note shares it, else its path without `.md`.
pub(super) fn link_name(
    graph: &Graph,
    records: &[Arc<NoteRecord>],
    attachments: &[String],
    note: usize,
) -> String {
    let stem = records[note].stem();
    if graph.candidates(records, attachments, stem) == [note] {
        stem.to_owned()
    } else {
        strip_md(&records[note].path).to_owned()
    }
}

impl Engine {
    /// Gives the broken-link findings among `findings` the fix of the note each
    /// link most likely meant, when there is one: mechanical when the link
    /// wrote its name differently and no other note's. Looked for only here, for the
    /// findings an answer returns: comparing a misspelt name with every note's
    /// names costs a few milliseconds in a large vault.
    pub(super) fn suggest_notes(&self, findings: &mut [Finding]) {
        if !findings.iter().any(|f| f.check == AuditCheck::BrokenLink) {
            return;
        }
        let catalog = self.catalog();
        let records = catalog.records();
        let attachments = catalog.attachments();
        let graph = catalog.graph();
        let names = self.last_audit.names(&catalog);
        let mut nearest: HashMap<String, Vec<(usize, usize)>> = HashMap::new();
        let mut counts: Vec<u32> = Vec::new();
        for finding in findings.iter_mut().filter(|f| f.check == AuditCheck::BrokenLink) {
            let Some(from) = catalog.position(&finding.path) else { continue };
            let link = records[from].links.iter().zip(graph.outlinks(from)).find(|(link, resolution)| {
                Some(link.line) == finding.line
                    && **resolution == Resolution::Broken(Broken::MissingNote)
                    && broken_message(link) == finding.message
            });
            let Some((link, _)) = link.filter(|(link, _)| !link.kind.is_path()) else { continue };
            let same: Vec<usize> =
                names.written_as(link.target).iter().copied().filter(|&n| n != from).collect();
            let (to, mechanical) = match same.as_slice() {
                [only] => (Some(*only), true),
                _ => {
                    let candidates = nearest
                        .entry(link.target.trim().to_lowercase())
                        .or_insert_with(|| names.nearest(link.target, &mut counts));
                    (meant_note(graph, from, candidates), false)
                }
            };
            if let Some(to) = to {
                let new = link_name(graph, records, attachments, to);
                finding.fix = Some(Fix {
                    path: finding.path.clone(),
                    summary: format!("link to {} instead of `{}`", records[to].path, link.target),
                    old: Some(link.target.to_owned()),
                    mechanical: mechanical && fits_in_link(&new),
                    new,
                });
            }
        }
    }
}

/// The note a broken link most likely meant: the nearest by name, ties broken
/// by closeness in the link graph to the linking note; `None` when two remain equal.
fn meant_note(graph: &Graph, from: usize, candidates: &[(usize, usize)]) -> Option<usize> {
    let best = candidates.first()?.1;
    let tied: Vec<usize> =
        candidates.iter().filter(|c| c.1 == best).map(|c| c.0).filter(|&c| c != from).collect();
    match tied.as_slice() {
        [] => None,
        [only] => Some(*only),
        several => {
            let near: Vec<usize> =
                several.iter().copied().filter(|&c| near_in_graph(graph, from, c)).collect();
            match near.as_slice() {
                [only] => Some(*only),
                _ => None,
            }
        }
    }
}

/// Whether note `a` and note `b` are linked to or from a common note, or one to the other.
fn near_in_graph(graph: &Graph, a: usize, b: usize) -> bool {
    let neighbours = |n: usize| -> HashSet<usize> {
        let mut set: HashSet<usize> = graph
            .outlinks(n)
            .iter()
            .filter_map(|r| match r {
                Resolution::Note(to) => Some(*to as usize),
                _ => None,
            })
            .collect();
        set.extend(graph.backlinks(n).iter().map(|b| b.from as usize));
        set
    };
    let of_a = neighbours(a);
    of_a.contains(&b) || !neighbours(b).is_disjoint(&of_a)
}

/// Lowercased names (file names, titles, aliases) of notes, with a bigram
/// index to find the ones close to a misspelt link target quickly, and the
/// notes of each folded name (paths without `.md` too) to find the ones a
/// target only writes differently.
#[derive(Debug)]
pub(super) struct NameIndex {
    names: Vec<(String, usize)>,
    /// Each name's length in characters: a name more than `most` characters
    /// longer or shorter than the target is more than `most` edits away.
    lengths: Vec<u32>,
    bigrams: HashMap<(char, char), Vec<u32>>,
    /// Notes by folded name (`spelling::folded`), each note once, in order.
    folded: HashMap<String, Vec<usize>>,
}

fn bigrams(text: &str) -> Vec<(char, char)> {
    let chars: Vec<char> = std::iter::once('\u{2}').chain(text.chars()).chain(['\u{3}']).collect();
    let mut out: Vec<(char, char)> = chars.windows(2).map(|w| (w[0], w[1])).collect();
    out.sort_unstable();
    out.dedup();
    out
}

impl NameIndex {
    pub(super) fn new(records: &[Arc<NoteRecord>]) -> NameIndex {
        let mut names: Vec<(String, usize)> = Vec::new();
        let mut folded_names: HashMap<String, Vec<usize>> = HashMap::new();
        for (i, record) in records.iter().enumerate().filter(|(_, r)| r.kind == NoteKind::Note) {
            let mut own: Vec<String> = vec![record.stem().to_lowercase(), record.title.trim().to_lowercase()];
            own.extend(record.aliases.iter().map(|a| a.trim().to_lowercase()));
            own.sort();
            own.dedup();
            for name in own.iter().map(String::as_str).chain([strip_md(&record.path)]) {
                if let Some(key) = folded(name) {
                    let notes = folded_names.entry(key).or_default();
                    if notes.last() != Some(&i) {
                        notes.push(i);
                    }
                }
            }
            names.extend(own.into_iter().filter(|n| !n.is_empty()).map(|n| (n, i)));
        }
        let mut index = NameIndex::of(names);
        index.folded = folded_names;
        index
    }

    /// The notes one of whose names (or path) `target` writes differently
    /// (`spelling.rs`), ignoring a `.md`.
    fn written_as(&self, target: &str) -> &[usize] {
        folded(strip_md(target.trim())).and_then(|key| self.folded.get(&key)).map_or(&[], Vec::as_slice)
    }

    /// The index of lowercased names, each with its note.
    fn of(names: Vec<(String, usize)>) -> NameIndex {
        let mut bigram_map: HashMap<(char, char), Vec<u32>> = HashMap::new();
        for (k, (name, _)) in names.iter().enumerate() {
            for gram in bigrams(name) {
                bigram_map.entry(gram).or_default().push(k as u32);
            }
        }
        let lengths = names.iter().map(|(name, _)| name.chars().count() as u32).collect();
        NameIndex { names, lengths, bigrams: bigram_map, folded: HashMap::new() }
    }

    /// The notes closest to `target` by name (within a quarter of its length in
    /// edits, at least one), with their distance, best first.
    /// `counts` is scratch space, all zero, kept by the caller between calls.
    fn nearest(&self, target: &str, counts: &mut Vec<u32>) -> Vec<(usize, usize)> {
        let Some(Wanted { target, length, most, grams, needed }) = Wanted::of(target) else {
            return Vec::new();
        };
        // Shared bigrams are counted in `counts` (one slot per name, zero
        // between calls) rather than a hash map: a bigram such as `e ` is in a
        // third of all names, so a target touches a large part of them.
        counts.resize(self.names.len(), 0);
        let mut touched: Vec<u32> = Vec::new();
        for gram in &grams {
            for &k in self.bigrams.get(gram).map_or(&[][..], Vec::as_slice) {
                let count = &mut counts[k as usize];
                if *count == 0 {
                    touched.push(k);
                }
                *count += 1;
            }
        }
        let mut found: Vec<(usize, usize)> = Vec::new();
        for k in touched {
            let count = std::mem::take(&mut counts[k as usize]) as usize;
            if count < needed || (self.lengths[k as usize] as usize).abs_diff(length) > most {
                continue;
            }
            let (name, note) = &self.names[k as usize];
            let distance = edit_distance(&target, name);
            if distance <= most {
                found.push((*note, distance));
            }
        }
        best_first(found)
    }
}

/// A broken link's target as [`NameIndex::nearest`] looks for it: the file
/// name lowercased, without `.md`, and how near a name must be.
struct Wanted {
    target: String,
    /// Its length in characters.
    length: usize,
    /// The most edits a name may be away (a quarter of the length, at least one).
    most: usize,
    /// Its bigrams, sorted.
    grams: Vec<(char, char)>,
    /// How many of them a name within `most` edits shares at least.
    needed: usize,
}

impl Wanted {
    /// `None` for a target too short to guess from (under two characters).
    fn of(target: &str) -> Option<Wanted> {
        let target = target.trim().to_lowercase();
        let target = strip_md(target.rsplit('/').next().unwrap_or(&target)).to_owned();
        let length = target.chars().count();
        if length < 2 {
            return None;
        }
        let most = (length / 4).max(1);
        let grams = bigrams(&target);
        // A name within `most` edits shares all but `2 * most` of the target's bigrams.
        let needed = grams.len().saturating_sub(2 * most).max(1);
        Some(Wanted { target, length, most, grams, needed })
    }
}

/// One entry per note, nearest first (then by note).
fn best_first(mut found: Vec<(usize, usize)>) -> Vec<(usize, usize)> {
    found.sort_by_key(|&(note, distance)| (distance, note));
    found.dedup_by_key(|pair| pair.0);
    found.sort_by_key(|&(note, distance)| (distance, note));
    found
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The nearest names as they were found before: shared bigrams counted in
    /// a hash map.
    fn nearest_by_counting_all(index: &NameIndex, target: &str) -> Vec<(usize, usize)> {
        let Some(Wanted { target, most, grams, needed, .. }) = Wanted::of(target) else { return Vec::new() };
        let mut shared: HashMap<u32, usize> = HashMap::new();
        for gram in &grams {
            for &k in index.bigrams.get(gram).map_or(&[][..], Vec::as_slice) {
                *shared.entry(k).or_default() += 1;
            }
        }
        let found: Vec<(usize, usize)> = shared
            .into_iter()
            .filter(|&(_, count)| count >= needed)
            .filter_map(|(k, _)| {
                let (name, note) = &index.names[k as usize];
                let distance = edit_distance(&target, name);
                (distance <= most).then_some((*note, distance))
            })
            .collect();
        best_first(found)
    }

    /// Counting in a slice kept between calls finds exactly the names a count
    /// per call in a hash map finds, on names built from few letters (so
    /// bigrams are shared).
    #[test]
    fn nearest_finds_what_counting_every_bigram_finds() {
        let syllables = ["ka", "ri", "no", "te", " ", "se", "a", "备份", "仓库", "e "];
        let mut names = Vec::new();
        let mut seed: u64 = 7;
        let mut next = |n: usize| {
            seed = seed.wrapping_mul(6_364_136_223_846_793_005).wrapping_add(1_442_695_040_888_963_407);
            (seed >> 33) as usize % n
        };
        for note in 0..600 {
            let parts = 1 + next(6);
            let name: String = (0..parts).map(|_| syllables[next(syllables.len())]).collect();
            names.push((name.trim().to_owned(), note));
        }
        let index = NameIndex::of(names.clone());
        let mut targets: Vec<String> = names.iter().take(200).map(|(n, _)| n.clone()).collect();
        targets.extend(names.iter().take(200).map(|(n, _)| format!("{n}x")));
        targets.extend(names.iter().take(200).map(|(n, _)| n.chars().skip(1).collect()));
        targets.extend(["kari no", "Karino.md", "folder/teseka", "备份仓", "a", "zz"].map(str::to_owned));
        let (mut found, mut counts) = (0, Vec::new());
        for target in &targets {
            let expected = nearest_by_counting_all(&index, target);
            found += expected.len();
            assert_eq!(index.nearest(target, &mut counts), expected, "{target:?}");
        }
        assert!(found > 1000, "too few names found to compare: {found}");
    }
}
