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

use std::collections::{HashMap, HashSet};
use std::sync::{Arc, Mutex};

use aho_corasick::{AhoCorasick, AhoCorasickBuilder, MatchKind};
use rayon::prelude::*;

use super::findings::Mention;
use crate::index::is_cjk;
use crate::sandbox::{IndexFolder, NotePath, Sandbox};
use crate::vault::graph::{Broken, Graph, Resolution};
use crate::vault::{NoteKind, NoteRecord, decode_note, prose_spans};

/// Largest file read for mentions.
const TEXT_MAX: u64 = 16 << 20;
/// Past this many names gained or lost at once, every note is read again
/// rather than checked against each name's words.
const CHANGED_NAMES_MAX: usize = 20_000;
/// The cache file is written again once this many notes, or one in a hundred,
/// were read since it was last written or read (a few changed notes cost a new
/// process a few readings; writing a large vault's file costs more).
const UNSAVED_MIN: usize = 256;
/// In the cache file, a hit's spelling that is its name's own.
const AS_NAMED: u32 = u32::MAX;
/// Largest cache file read.
const CACHE_MAX: u64 = 1 << 30;
/// The first bytes of the cache file: its format, and the rules of this file
/// that decide what a note mentions (change it when they change).
const CACHE_MAGIC: &[u8] = b"kb-mcp mentions 2\n";

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
fn unique_names(records: &[Arc<NoteRecord>]) -> (Vec<Arc<str>>, Vec<usize>) {
    // Every name, lowercased, with its note and its place there (the title
    // first), so that a name's first spelling is the one kept.
    let mut all: Vec<(String, usize, usize, &str)> = records
        .par_iter()
        .enumerate()
        .filter(|(_, r)| r.kind == NoteKind::Note)
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
        let notes: Vec<&Arc<NoteRecord>> = records.iter().filter(|r| r.kind == NoteKind::Note).collect();
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

/// A name as written: the name's own string when written as named (most
/// are), so millions of hits share a few hundred thousand strings.
fn spelled(names: &[Arc<str>], name: u32, written: &str) -> Arc<str> {
    match names.get(name as usize) {
        Some(named) if **named == *written => Arc::clone(named),
        _ => Arc::from(written),
    }
}

/// Reads a note and finds the names its prose mentions (an unreadable note
/// mentions nothing).
fn read_note(
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

/// The cache file: [`CACHE_MAGIC`], the names, then per note its path, hash,
/// size, filter and hits (a hit's spelling is [`AS_NAMED`] when it is its
/// name's), every number little-endian, every string its length then its bytes.
fn encode(index: &MentionIndex) -> Vec<u8> {
    fn text(out: &mut Vec<u8>, text: &str) {
        out.extend_from_slice(&(text.len() as u32).to_le_bytes());
        out.extend_from_slice(text.as_bytes());
    }
    let mut out = CACHE_MAGIC.to_vec();
    out.extend_from_slice(&(index.names.len() as u32).to_le_bytes());
    for name in &index.names {
        text(&mut out, name);
    }
    let mut paths: Vec<&String> = index.notes.keys().collect();
    paths.sort();
    out.extend_from_slice(&(paths.len() as u32).to_le_bytes());
    for path in paths {
        let note = &index.notes[path];
        text(&mut out, path);
        text(&mut out, &note.hash);
        out.extend_from_slice(&note.size.to_le_bytes());
        out.extend_from_slice(&(note.words.bits.len() as u32).to_le_bytes());
        for word in &note.words.bits {
            out.extend_from_slice(&word.to_le_bytes());
        }
        out.extend_from_slice(&(note.hits.len() as u32).to_le_bytes());
        for hit in &note.hits {
            for number in [hit.name, hit.at, hit.line] {
                out.extend_from_slice(&number.to_le_bytes());
            }
            if *hit.written == *index.names[hit.name as usize] {
                out.extend_from_slice(&AS_NAMED.to_le_bytes());
            } else {
                text(&mut out, &hit.written);
            }
        }
    }
    out
}

/// Reads a cache file [`encode`] wrote; `None` for any other bytes (another
/// format, a truncated file, a hit naming no name).
fn decode(bytes: &[u8]) -> Option<MentionIndex> {
    struct Reader<'a>(&'a [u8]);
    impl<'a> Reader<'a> {
        fn take(&mut self, n: usize) -> Option<&'a [u8]> {
            let (head, rest) = self.0.split_at_checked(n)?;
            self.0 = rest;
            Some(head)
        }
        fn u32(&mut self) -> Option<u32> {
            Some(u32::from_le_bytes(self.take(4)?.try_into().ok()?))
        }
        fn peek_u32(&self) -> Option<u32> {
            Some(u32::from_le_bytes(self.0.get(..4)?.try_into().ok()?))
        }
        fn u64(&mut self) -> Option<u64> {
            Some(u64::from_le_bytes(self.take(8)?.try_into().ok()?))
        }
        fn text(&mut self) -> Option<&'a str> {
            let len = self.u32()? as usize;
            std::str::from_utf8(self.take(len)?).ok()
        }
        /// A count of items at least `each` bytes long, checked against what is left.
        fn count(&mut self, each: usize) -> Option<usize> {
            let n = self.u32()? as usize;
            (n.checked_mul(each)? <= self.0.len()).then_some(n)
        }
    }
    let mut reader = Reader(bytes.strip_prefix(CACHE_MAGIC)?);
    let names_len = reader.count(4)?;
    let mut names: Vec<Arc<str>> = Vec::with_capacity(names_len);
    for _ in 0..names_len {
        names.push(reader.text()?.into());
    }
    if !names.is_sorted() {
        return None;
    }
    let notes_len = reader.count(24)?;
    let mut notes = HashMap::with_capacity(notes_len);
    for _ in 0..notes_len {
        let path = reader.text()?.to_owned();
        let hash: Box<str> = reader.text()?.into();
        let size = reader.u64()?;
        let bits_len = reader.count(8)?;
        if !bits_len.is_power_of_two() {
            return None;
        }
        let bits: Box<[u64]> = (0..bits_len).map(|_| reader.u64()).collect::<Option<_>>()?;
        let hits_len = reader.count(16)?;
        let mut hits = Vec::with_capacity(hits_len);
        for _ in 0..hits_len {
            let (name, at, line) = (reader.u32()?, reader.u32()?, reader.u32()?);
            if name as usize >= names.len() {
                return None;
            }
            let written = match reader.peek_u32()? {
                AS_NAMED => {
                    reader.u32()?;
                    Arc::clone(&names[name as usize])
                }
                _ => reader.text()?.into(),
            };
            hits.push(Hit { name, at, line, written });
        }
        notes.insert(path, NoteMentions { hash, size, words: Bloom { bits }, hits });
    }
    reader.0.is_empty().then_some(MentionIndex { names, notes, ..MentionIndex::default() })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// One note's mentions: a name written as named, the same name in other
    /// case, and a Chinese name.
    fn index() -> MentionIndex {
        let names: Vec<Arc<str>> = vec!["Alpha".into(), "备份仓库".into()];
        let hit = |name: u32, at: u32, written: &str| Hit {
            name,
            at,
            line: at / 10 + 1,
            written: spelled(&names, name, written),
        };
        let note = NoteMentions {
            hash: "hash".into(),
            size: 42,
            words: Bloom::new(&[word_hash("alpha"), word_hash("备")]),
            hits: vec![hit(0, 3, "Alpha"), hit(0, 17, "alpha"), hit(1, 25, "备份仓库")],
        };
        MentionIndex { names, notes: HashMap::from([("z/a.md".to_owned(), note)]), ..MentionIndex::default() }
    }

    /// The cache file gives back what was saved, a spelling as named shared
    /// with its name again; a file cut anywhere (a crash mid-write of another
    /// writer's temporary file renamed in, a full disk) or with a byte too many
    /// is no cache at all, so the notes are read instead.
    #[test]
    fn the_cache_file_round_trips_and_a_cut_or_longer_file_is_refused() {
        let saved = index();
        let bytes = encode(&saved);
        let back = decode(&bytes).expect("the file just written");
        assert_eq!(back.names, saved.names);
        let (note, kept) = (&back.notes["z/a.md"], &saved.notes["z/a.md"]);
        assert_eq!((&note.hash, note.size, &note.words.bits), (&kept.hash, kept.size, &kept.words.bits));
        let hits = |n: &NoteMentions| -> Vec<(u32, u32, u32, String)> {
            n.hits.iter().map(|h| (h.name, h.at, h.line, h.written.to_string())).collect()
        };
        assert_eq!(hits(note), hits(kept));
        assert!(Arc::ptr_eq(&note.hits[0].written, &back.names[0]), "a spelling as named is the name's");
        assert!(!Arc::ptr_eq(&note.hits[1].written, &back.names[0]), "another spelling is its own");
        for cut in 0..bytes.len() {
            assert!(decode(&bytes[..cut]).is_none(), "a file cut at {cut} bytes decoded");
        }
        let mut longer = bytes.clone();
        longer.push(0);
        assert!(decode(&longer).is_none());
        let mut older = bytes;
        older[CACHE_MAGIC.len() - 2] = b'1';
        assert!(decode(&older).is_none(), "a file of format 1 decoded as format 2");
    }
}
