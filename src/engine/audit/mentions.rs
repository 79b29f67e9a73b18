//! Unlinked mentions: another note's title or alias written in a note's prose
//! without a link to it.
//!
//! A name is looked for when it has a letter, at least two characters in
//! Chinese, Japanese or Korean or three in other scripts, and names exactly one
//! note. Only prose is searched (no frontmatter, code, comments, links or tags),
//! with one Aho-Corasick automaton over every such name: a Chinese, Japanese or
//! Korean name counts inside a sentence, a Latin one only between word
//! boundaries. Where names overlap, the leftmost of the occurrences that keep
//! those boundaries wins, the longest among equals.
//!
//! Reading every note at each audit would cost seconds in a large vault, so the
//! engine keeps, per note, what its prose mentions (the first place of each
//! name) and a Bloom filter of its prose words; [`MentionCache::update`] reads
//! again only the notes whose record changed, and, when names come or go, the
//! notes whose filter holds every word of such a name (an occurrence that keeps
//! the word boundaries consists of whole words of the prose, so no other note
//! can be affected). The first audit of a process reads every note once.

use std::collections::{BTreeMap, BTreeSet, HashMap, HashSet};
use std::sync::{Arc, Mutex};

use aho_corasick::{AhoCorasick, AhoCorasickBuilder, MatchKind};
use rayon::prelude::*;

use crate::index::is_cjk;
use crate::sandbox::{NotePath, Sandbox};
use crate::vault::graph::{Broken, Graph, Resolution};
use crate::vault::{NoteKind, NoteRecord, decode_note, prose_spans};

/// Largest file read for mentions.
const TEXT_MAX: u64 = 16 << 20;
/// Past this many names gained or lost at once, every note is read again
/// rather than checked against each name's words.
const CHANGED_NAMES_MAX: usize = 20_000;

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

/// The names to look for, as written in their note (sorted), and the note
/// each names.
fn unique_names(records: &[Arc<NoteRecord>]) -> (Vec<String>, Vec<usize>) {
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
    let mut unique: Vec<(String, usize)> = by_name
        .into_values()
        .filter(|(_, notes)| notes.len() == 1)
        .filter_map(|(name, notes)| notes.first().map(|&n| (name, n)))
        .collect();
    unique.sort();
    unique.into_iter().unzip()
}

/// The words of a text for the Bloom filter: each run of word characters
/// (ASCII letters lowercased, as the automaton matches them) and each Chinese,
/// Japanese or Korean character, hashed.
fn words(text: &str, out: &mut Vec<u64>) {
    let mut run: Option<usize> = None;
    for (at, c) in text.char_indices() {
        if is_word_char(c) {
            run.get_or_insert(at);
            continue;
        }
        if let Some(start) = run.take() {
            out.push(word_hash(&text[start..at]));
        }
        if is_cjk(c) {
            out.push(word_hash(&text[at..at + c.len_utf8()]));
        }
    }
    if let Some(start) = run {
        out.push(word_hash(&text[start..]));
    }
}

/// FNV-1a over the ASCII-lowercased bytes, then mixed (splitmix64's finaliser).
fn word_hash(word: &str) -> u64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for b in word.bytes() {
        h = (h ^ u64::from(b.to_ascii_lowercase())).wrapping_mul(0x0100_0000_01b3);
    }
    h ^= h >> 30;
    h = h.wrapping_mul(0xbf58_476d_1ce4_e5b9);
    h ^= h >> 27;
    h = h.wrapping_mul(0x94d0_49bb_1331_11eb);
    h ^ (h >> 31)
}

/// A Bloom filter of a note's prose words: eight bits and three probes per
/// word (about 3 % false positives, which only cost a needless reading).
#[derive(Debug)]
struct Bloom {
    bits: Box<[u64]>,
}

impl Bloom {
    fn new(words: &[u64]) -> Bloom {
        let len = (words.len() * 8).div_ceil(64).next_power_of_two().max(1);
        let mut bloom = Bloom { bits: vec![0; len].into_boxed_slice() };
        for &word in words {
            for bit in probes(word, len * 64) {
                bloom.bits[bit / 64] |= 1 << (bit % 64);
            }
        }
        bloom
    }

    fn contains(&self, word: u64) -> bool {
        probes(word, self.bits.len() * 64).all(|bit| self.bits[bit / 64] & (1 << (bit % 64)) != 0)
    }
}

/// The three bits of a word in a filter of `bits` bits (a power of two).
fn probes(word: u64, bits: usize) -> impl Iterator<Item = usize> {
    let mask = bits - 1;
    let (a, b) = (word as usize, ((word >> 32) as usize) | 1);
    (0..3).map(move |k| a.wrapping_add(k * b) & mask)
}

/// The first place a note's prose mentions one name.
#[derive(Debug)]
struct Hit {
    /// The name, by its place in [`MentionIndex::names`].
    name: u32,
    /// Byte offset in the note.
    at: u32,
    /// 1-based line.
    line: u32,
    /// The name as written there.
    written: Box<str>,
}

/// What one note's prose mentions, for the record it was read for.
#[derive(Debug)]
struct NoteMentions {
    record: Arc<NoteRecord>,
    words: Bloom,
    hits: Vec<Hit>,
}

/// The mentions of every note, for the names of one catalog.
#[derive(Debug, Default)]
struct MentionIndex {
    names: Vec<String>,
    automaton: Option<AhoCorasick>,
    notes: HashMap<String, NoteMentions>,
}

/// What the engine keeps between audits.
#[derive(Debug, Default)]
pub(crate) struct MentionCache(Mutex<MentionIndex>);

/// The mentions of the notes of one audit: per note in scope, the line, the
/// name as written and the note named, for names it does not link.
pub(super) type Found = Vec<(usize, Vec<(u32, String, usize)>)>;

impl MentionCache {
    /// Brings the cache up to date with `records` (reading only what it must)
    /// and returns the unlinked mentions of the notes `in_scope`.
    pub(super) fn find(
        &self,
        sandbox: &Sandbox,
        records: &[Arc<NoteRecord>],
        graph: &Graph,
        in_scope: &[usize],
    ) -> Found {
        let mut index = self.0.lock().unwrap_or_else(|p| p.into_inner());
        let (names, targets) = crate::engine::timing::time("audit_mention_names", || unique_names(records));
        crate::engine::timing::time("audit_mention_reads", || index.update(sandbox, records, names));
        in_scope
            .iter()
            .filter_map(|&i| {
                let note = index.notes.get(&records[i].path)?;
                let found = unlinked(graph, i, note, &targets);
                (!found.is_empty()).then_some((i, found))
            })
            .collect()
    }
}

/// The mentions of `note` (at position `i`) of other notes it does not link:
/// the first place of each, by line.
fn unlinked(graph: &Graph, i: usize, note: &NoteMentions, targets: &[usize]) -> Vec<(u32, String, usize)> {
    let linked: HashSet<u32> = graph
        .outlinks(i)
        .iter()
        .filter_map(|r| match r {
            Resolution::Note(to) => Some(*to),
            Resolution::Broken(Broken::MissingHeading(to) | Broken::MissingBlock(to)) => Some(*to),
            _ => None,
        })
        .collect();
    let mut first: BTreeMap<usize, &Hit> = BTreeMap::new();
    for hit in &note.hits {
        let target = targets[hit.name as usize];
        if target == i || linked.contains(&(target as u32)) {
            continue;
        }
        first.entry(target).and_modify(|h| *h = if hit.at < h.at { hit } else { h }).or_insert(hit);
    }
    let mut out: Vec<(u32, String, usize)> =
        first.into_iter().map(|(target, hit)| (hit.line, hit.written.to_string(), target)).collect();
    out.sort();
    out
}

impl MentionIndex {
    /// Reads again the notes whose record changed or that may hold a name
    /// gained or lost, drops the notes gone.
    fn update(&mut self, sandbox: &Sandbox, records: &[Arc<NoteRecord>], names: Vec<String>) {
        let mut reread: HashSet<&str> = HashSet::new();
        if names != self.names {
            let gained_or_lost: Vec<String> =
                changed(&self.names, &names).into_iter().map(str::to_owned).collect();
            self.renumber(&names);
            if gained_or_lost.len() > CHANGED_NAMES_MAX {
                self.notes.clear();
            } else {
                let patterns: Vec<Vec<u64>> = gained_or_lost
                    .iter()
                    .map(|name| {
                        let mut w = Vec::new();
                        words(name, &mut w);
                        w
                    })
                    .collect();
                let stale: Vec<String> = self
                    .notes
                    .par_iter()
                    .filter(|(_, note)| patterns.iter().any(|w| w.iter().all(|&h| note.words.contains(h))))
                    .map(|(path, _)| path.clone())
                    .collect();
                for path in stale {
                    self.notes.remove(&path);
                }
            }
            self.automaton = AhoCorasickBuilder::new()
                .match_kind(MatchKind::Standard)
                .ascii_case_insensitive(true)
                .build(names.iter().map(String::as_str))
                .ok();
            self.names = names;
        }
        let notes: Vec<&Arc<NoteRecord>> = records.iter().filter(|r| r.kind == NoteKind::Note).collect();
        let present: HashSet<&str> = notes.iter().map(|r| r.path.as_str()).collect();
        self.notes.retain(|path, _| present.contains(path.as_str()));
        for record in &notes {
            let current = self.notes.get(&record.path).is_some_and(|n| {
                Arc::ptr_eq(&n.record, record)
                    || (n.record.hash == record.hash && n.record.size == record.size)
            });
            if !current {
                reread.insert(record.path.as_str());
            }
        }
        let automaton = self.automaton.as_ref();
        let read: Vec<(String, NoteMentions)> = notes
            .par_iter()
            .filter(|r| reread.contains(r.path.as_str()))
            .map(|record| (record.path.clone(), read_note(sandbox, automaton, record)))
            .collect();
        self.notes.extend(read);
    }

    /// Gives every hit the number of its name in `names`, dropping the hits of
    /// names no longer looked for.
    fn renumber(&mut self, names: &[String]) {
        let old = &self.names;
        for note in self.notes.values_mut() {
            note.hits.retain_mut(|hit| match names.binary_search(&old[hit.name as usize]) {
                Ok(k) => {
                    hit.name = k as u32;
                    true
                }
                Err(_) => false,
            });
        }
    }
}

/// The names in one sorted list and not the other.
fn changed<'a>(old: &'a [String], new: &'a [String]) -> Vec<&'a str> {
    let (mut a, mut b) = (0, 0);
    let mut out = Vec::new();
    while a < old.len() || b < new.len() {
        match (old.get(a), new.get(b)) {
            (Some(x), Some(y)) if x == y => (a, b) = (a + 1, b + 1),
            (Some(x), Some(y)) if x < y => (out.push(x.as_str()), a += 1).1,
            (Some(x), None) => (out.push(x.as_str()), a += 1).1,
            (_, Some(y)) => (out.push(y.as_str()), b += 1).1,
            (None, None) => break,
        }
    }
    out
}

/// Reads a note and finds the names its prose mentions (an unreadable note
/// mentions nothing).
fn read_note(sandbox: &Sandbox, automaton: Option<&AhoCorasick>, record: &Arc<NoteRecord>) -> NoteMentions {
    let mut note = NoteMentions { record: Arc::clone(record), words: Bloom::new(&[]), hits: Vec::new() };
    let Ok(path) = NotePath::parse(&record.path) else { return note };
    let Ok(bytes) = sandbox.read(&path, TEXT_MAX) else { return note };
    let Ok(text) = decode_note(&bytes) else { return note };
    let mut hashes = Vec::new();
    let mut seen: HashSet<u32> = HashSet::new();
    for span in prose_spans(&path, text) {
        let prose = &text[span.range()];
        words(prose, &mut hashes);
        let Some(automaton) = automaton else { continue };
        for (start, end, name) in occurrences(automaton, prose) {
            if seen.insert(name) {
                let at = (span.start + start) as u32;
                note.hits.push(Hit { name, at, line: 0, written: prose[start..end].into() });
            }
        }
    }
    hashes.sort_unstable();
    hashes.dedup();
    note.words = Bloom::new(&hashes);
    // Lines, counted in one pass over the text.
    let mut order: Vec<usize> = (0..note.hits.len()).collect();
    order.sort_by_key(|&k| note.hits[k].at);
    let (mut line, mut from) = (1u32, 0usize);
    for k in order {
        let at = note.hits[k].at as usize;
        line += text.as_bytes()[from..at].iter().filter(|&&b| b == b'\n').count() as u32;
        from = at;
        note.hits[k].line = line;
    }
    note
}

/// The names a stretch of prose mentions, in order: of the occurrences that
/// keep the word boundaries, the leftmost, the longest among equals, then the
/// next that starts after it ends.
fn occurrences(automaton: &AhoCorasick, prose: &str) -> Vec<(usize, usize, u32)> {
    let joined = |edge: Option<char>, next: Option<char>| {
        edge.is_some_and(is_word_char) && next.is_some_and(is_word_char)
    };
    let mut all: Vec<(usize, usize, u32)> = automaton
        .find_overlapping_iter(prose)
        .filter(|hit| {
            let written = &prose[hit.start()..hit.end()];
            let before = prose[..hit.start()].chars().next_back();
            let after = prose[hit.end()..].chars().next();
            !joined(written.chars().next(), before) && !joined(written.chars().next_back(), after)
        })
        .map(|hit| (hit.start(), hit.end(), hit.pattern().as_u32()))
        .collect();
    all.sort_by(|a, b| a.0.cmp(&b.0).then(b.1.cmp(&a.1)));
    let mut chosen = Vec::new();
    let mut end = 0;
    for (start, stop, name) in all {
        if start >= end {
            chosen.push((start, stop, name));
            end = stop;
        }
    }
    chosen
}
