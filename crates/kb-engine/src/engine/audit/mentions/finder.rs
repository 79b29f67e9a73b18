//! The mention finder: which titles and aliases are looked for (those naming
//! exactly one note), and where a note's prose mentions them, with one
//! Aho-Corasick automaton over every name and the word-boundary rule.

use std::collections::HashSet;
use std::sync::Arc;

use aho_corasick::AhoCorasick;
use rayon::prelude::*;

use super::words::{Bloom, is_word_char, words};
use super::{Hit, NoteMentions};
use crate::index::is_cjk;
use crate::sandbox::{NotePath, Sandbox};
use crate::vault::{NoteKind, NoteRecord, decode_note, is_canvas, is_pdf, prose_spans};

/// Largest file read for mentions.
const TEXT_MAX: u64 = 16 << 20;

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
pub(super) fn unique_names(records: &[Arc<NoteRecord>]) -> (Vec<Arc<str>>, Vec<usize>) {
    // Every name, lowercased, with its note and its place there (the title
    // first), so that a name's first spelling is the one kept.
    let mut all: Vec<(String, usize, usize, &str)> = records
        .par_iter()
        .enumerate()
        .filter(|(_, r)| r.kind == NoteKind::Note && !is_canvas(&r.path) && !is_pdf(&r.path))
        .flat_map_iter(|(i, record)| {
            std::iter::once(&record.title)
                .chain(record.aliases.iter())
                .map(|name| name.trim())
                .enumerate()
                .filter(|(_, name)| mentionable(name))
                .map(move |(k, name)| (name.to_lowercase(), i, k, name))
        })
        .collect();
    all.par_sort_unstable();
    let mut unique: Vec<(Arc<str>, usize)> = all
        .chunk_by(|a, b| a.0 == b.0)
        .filter(|same| same.iter().all(|(_, i, _, _)| *i == same[0].1))
        .map(|same| (Arc::from(same[0].3), same[0].1))
        .collect();
    unique.par_sort_unstable();
    unique.into_iter().unzip()
}

/// A name as written: the name's own string when written as named (most
/// are), so millions of hits share a few hundred thousand strings.
pub(super) fn spelled(names: &[Arc<str>], name: u32, written: &str) -> Arc<str> {
    match names.get(name as usize) {
        Some(named) if **named == *written => Arc::clone(named),
        _ => Arc::from(written),
    }
}

/// Reads a note and finds the names its prose mentions (an unreadable note
/// mentions nothing).
pub(super) fn read_note(
    sandbox: &Sandbox,
    automaton: Option<&AhoCorasick>,
    names: &[Arc<str>],
    record: &Arc<NoteRecord>,
) -> NoteMentions {
    let mut note = NoteMentions {
        hash: record.hash.as_str().into(),
        size: record.size,
        words: Bloom::new(&[]),
        hits: Vec::new(),
    };
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
                let written = spelled(names, name, &prose[start..end]);
                note.hits.push(Hit { name, at, line: 0, written });
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
