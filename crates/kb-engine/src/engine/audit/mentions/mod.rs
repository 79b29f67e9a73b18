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
//! can be affected).
//!
//! What is kept depends on every note's names, not only on the note's own text,
//! so it is not part of a note's record (a new title would re-index every note
//! that may mention it); it is saved beside the index instead
//! ([`MENTIONS_CACHE`](crate::sandbox::MENTIONS_CACHE)): the names the hits were
//! found for, then per note its content hash, filter and hits. A new process
//! starts from that file, and the same rules as between two audits decide which
//! notes it reads (those whose hash differs, those that may hold a name that
//! came or went): the file can be old, or from another process, and the
//! findings are still the ones a reading of every note gives. It is written
//! again once many notes were read since it was last written or read.
//!
//! The files: `finder` (the names looked for, and where a note's prose
//! mentions them), `words` (the Bloom filter of a note's prose words),
//! `cache_file` (the file the cache is saved in). This file keeps the
//! mentions between audits and tells which are unlinked.

mod cache_file;
mod finder;
mod words;

use std::collections::{HashMap, HashSet};
use std::sync::{Arc, Mutex};

use aho_corasick::{AhoCorasick, AhoCorasickBuilder, MatchKind};
use rayon::prelude::*;

use super::findings::Mention;
use crate::sandbox::{IndexFolder, Sandbox};
use crate::vault::graph::{Broken, Graph, Resolution};
use crate::vault::{NoteKind, NoteRecord, is_canvas, is_pdf};
use cache_file::{CACHE_MAX, decode, encode};
use finder::{read_note, unique_names};
use words::{Bloom, words};

/// Past this many names gained or lost at once, every note is read again
/// rather than checked against each name's words.
const CHANGED_NAMES_MAX: usize = 20_000;
/// The cache file is written again once this many notes, or one in a hundred,
/// were read since it was last written or read (a few changed notes cost a new
/// process a few readings; writing a large vault's file costs more).
const UNSAVED_MIN: usize = 256;

/// The first place a note's prose mentions one name.
#[derive(Debug)]
struct Hit {
    /// The name, by its place in [`MentionIndex::names`].
    name: u32,
    /// Byte offset in the note.
    at: u32,
    /// 1-based line.
    line: u32,
    /// The name as written there (shared with the findings that quote it, and
    /// with [`MentionIndex::names`] when written as named).
    written: Arc<str>,
}

/// What one note's prose mentions, for the content it was read for.
#[derive(Debug)]
struct NoteMentions {
    /// The content hash and size of the note when read.
    hash: Box<str>,
    size: u64,
    words: Bloom,
    hits: Vec<Hit>,
}

/// The mentions of every note, for the names of one catalog.
#[derive(Debug, Default)]
struct MentionIndex {
    names: Vec<Arc<str>>,
    /// The automaton of `names`, made when a note is to be read.
    automaton: Option<Option<AhoCorasick>>,
    notes: HashMap<String, NoteMentions>,
    /// Whether the cache file was looked for.
    loaded: bool,
    /// Whether no usable cache file was found (or written since).
    missing: bool,
    /// Notes read since the cache file was last written or read.
    unsaved: usize,
}

/// What the engine keeps between audits.
#[derive(Debug, Default)]
pub(crate) struct MentionCache(Mutex<MentionIndex>);

impl MentionCache {
    /// Brings the cache up to date with `records` (reading only what it must)
    /// and returns the unlinked mentions of the notes `in_scope` (ascending
    /// positions), in the order of findings.
    ///
    /// `folder` is the index folder its file is read from (once) and written
    /// to (`None`: no file); `graph` gives the link graph, asked for only at
    /// the last step (it may be being built meanwhile).
    pub(super) fn find<'g>(
        &self,
        sandbox: &Sandbox,
        folder: Option<&IndexFolder>,
        records: &[Arc<NoteRecord>],
        graph: impl FnOnce() -> &'g Graph,
        in_scope: &[usize],
    ) -> Vec<Mention> {
        use crate::engine::timing::time;
        let mut index = self.0.lock().unwrap_or_else(|p| p.into_inner());
        if !index.loaded {
            let bytes = folder.and_then(|f| time("audit_mention_load", || f.read_cache(CACHE_MAX)));
            let kept = bytes.and_then(|bytes| time("audit_mention_decode", || decode(&bytes)));
            let missing = kept.is_none() && index.notes.is_empty();
            *index = MentionIndex { loaded: true, missing, ..kept.unwrap_or(std::mem::take(&mut *index)) };
        }
        let (names, targets) = time("audit_mention_names", || unique_names(records));
        time("audit_mention_reads", || index.update(sandbox, records, names));
        if let Some(folder) = folder
            && (index.missing || index.unsaved >= UNSAVED_MIN.max(index.notes.len() / 100))
        {
            // Best effort: an index folder that cannot be written keeps no file.
            let _ = time("audit_mention_save", || folder.write_cache(&encode(&index)));
            (index.unsaved, index.missing) = (0, false);
        }
        let index = &*index;
        let graph = graph();
        time("audit_mention_unlinked", || {
            in_scope
                .par_iter()
                .flat_map_iter(|&i| match index.notes.get(&records[i].path) {
                    Some(note) => unlinked(graph, records, i, note, &targets),
                    None => Vec::new(),
                })
                .collect()
        })
    }
}

/// The mentions of `note` (at position `i`) of other notes it does not link:
/// the first place of each, by line and message.
fn unlinked(
    graph: &Graph,
    records: &[Arc<NoteRecord>],
    i: usize,
    note: &NoteMentions,
    targets: &[usize],
) -> Vec<Mention> {
    let mut linked: Vec<u32> = graph
        .outlinks(i)
        .iter()
        .filter_map(|r| match r {
            Resolution::Note(to) => Some(*to),
            Resolution::Broken(Broken::MissingHeading(to) | Broken::MissingBlock(to)) => Some(*to),
            _ => None,
        })
        .collect();
    linked.sort_unstable();
    // The first place of each note named (a note may be named by its title
    // and its aliases), of the notes not linked.
    let mut first: Vec<(usize, &Hit)> = note
        .hits
        .iter()
        .map(|hit| (targets[hit.name as usize], hit))
        .filter(|&(target, _)| target != i && linked.binary_search(&(target as u32)).is_err())
        .collect();
    first.sort_unstable_by_key(|&(target, hit)| (target, hit.at));
    first.dedup_by_key(|&mut (target, _)| target);
    let mut out: Vec<Mention> = first
        .into_iter()
        .map(|(target, hit)| Mention {
            note: i as u32,
            line: hit.line,
            target: target as u32,
            written: Arc::clone(&hit.written),
        })
        .collect();
    out.sort_by(|a, b| a.cmp_in_note(b, records));
    out
}

impl MentionIndex {
    /// Reads again the notes whose record changed or that may hold a name
    /// gained or lost, drops the notes gone.
    fn update(&mut self, sandbox: &Sandbox, records: &[Arc<NoteRecord>], names: Vec<Arc<str>>) {
        let mut reread: HashSet<&str> = HashSet::new();
        if names != self.names {
            let gained_or_lost: Vec<Arc<str>> = changed(&self.names, &names).into_iter().cloned().collect();
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
            self.automaton = None;
            self.names = names;
        }
        // A canvas has no prose to mention names in (its words are JSON strings).
        let notes: Vec<&Arc<NoteRecord>> = records
            .iter()
            .filter(|r| r.kind == NoteKind::Note && !is_canvas(&r.path) && !is_pdf(&r.path))
            .collect();
        // Per note: whether it is kept at all, and kept as it is now.
        let kept: Vec<(bool, bool)> = notes
            .par_iter()
            .map(|record| match self.notes.get(&record.path) {
                Some(n) => (true, *n.hash == *record.hash && n.size == record.size),
                None => (false, false),
            })
            .collect();
        // Notes gone are dropped (when every kept note is still a note, none is).
        if kept.iter().filter(|(known, _)| *known).count() != self.notes.len() {
            let present: HashSet<&str> = notes.iter().map(|r| r.path.as_str()).collect();
            self.notes.retain(|path, _| present.contains(path.as_str()));
        }
        reread.extend(
            notes.iter().zip(&kept).filter(|(_, (_, current))| !current).map(|(r, _)| r.path.as_str()),
        );
        if reread.is_empty() {
            return;
        }
        let names = &self.names;
        let automaton = self
            .automaton
            .get_or_insert_with(|| {
                AhoCorasickBuilder::new()
                    .match_kind(MatchKind::Standard)
                    .ascii_case_insensitive(true)
                    .build(names.iter().map(|name| &**name))
                    .ok()
            })
            .as_ref();
        let read: Vec<(String, NoteMentions)> =
            crate::engine::timing::time("audit_mention_read_notes", || {
                notes
                    .par_iter()
                    .filter(|r| reread.contains(r.path.as_str()))
                    .map(|record| (record.path.clone(), read_note(sandbox, automaton, names, record)))
                    .collect()
            });
        self.unsaved += read.len();
        self.notes.extend(read);
    }

    /// Gives every hit the number of its name in `names`, dropping the hits of
    /// names no longer looked for.
    fn renumber(&mut self, names: &[Arc<str>]) {
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
fn changed<'a>(old: &'a [Arc<str>], new: &'a [Arc<str>]) -> Vec<&'a Arc<str>> {
    let (mut a, mut b) = (0, 0);
    let mut out = Vec::new();
    while a < old.len() || b < new.len() {
        match (old.get(a), new.get(b)) {
            (Some(x), Some(y)) if x == y => (a, b) = (a + 1, b + 1),
            (Some(x), Some(y)) if x < y => (out.push(x), a += 1).1,
            (Some(x), None) => (out.push(x), a += 1).1,
            (_, Some(y)) => (out.push(y), b += 1).1,
            (None, None) => break,
        }
    }
    out
}
