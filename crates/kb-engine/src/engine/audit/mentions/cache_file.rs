//! The file the mention cache is saved in beside the index: a format of its
//! own, read back only when every byte of it is as written.

use std::collections::HashMap;
use std::sync::Arc;

use super::words::Bloom;
use super::{Hit, MentionIndex, NoteMentions};

/// In the cache file, a hit's spelling that is its name's own.
const AS_NAMED: u32 = u32::MAX;
/// Largest cache file read.
pub(super) const CACHE_MAX: u64 = 1 << 30;
/// The first bytes of the cache file: its format, and the rules that decide
/// what a note mentions (`finder`, `words`: change it when they change).
const CACHE_MAGIC: &[u8] = b"kb-mcp mentions 2\n";

/// The cache file: [`CACHE_MAGIC`], the names, then per note its path, hash,
/// size, filter and hits (a hit's spelling is [`AS_NAMED`] when it is its
/// name's), every number little-endian, every string its length then its bytes.
pub(super) fn encode(index: &MentionIndex) -> Vec<u8> {
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
pub(super) fn decode(bytes: &[u8]) -> Option<MentionIndex> {
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
    use crate::engine::audit::mentions::finder::spelled;
    use crate::engine::audit::mentions::words::word_hash;

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
