//! The words of a note's prose, kept as a Bloom filter: when a name comes or
//! goes, only the notes whose filter holds every word of it are read again.

use crate::index::is_cjk;

/// A character of a word for the boundary rule: a letter or digit of a script
/// written with spaces (Chinese, Japanese and Korean are not).
pub(super) fn is_word_char(c: char) -> bool {
    (c.is_alphanumeric() || c == '_') && !is_cjk(c)
}

/// The words of a text for the Bloom filter: each run of word characters
/// (ASCII letters lowercased, as the automaton matches them) and each Chinese,
/// Japanese or Korean character, hashed.
pub(super) fn words(text: &str, out: &mut Vec<u64>) {
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
pub(super) fn word_hash(word: &str) -> u64 {
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
pub(super) struct Bloom {
    pub(super) bits: Box<[u64]>,
}

impl Bloom {
    pub(super) fn new(words: &[u64]) -> Bloom {
        let len = (words.len() * 8).div_ceil(64).next_power_of_two().max(1);
        let mut bloom = Bloom { bits: vec![0; len].into_boxed_slice() };
        for &word in words {
            for bit in probes(word, len * 64) {
                bloom.bits[bit / 64] |= 1 << (bit % 64);
            }
        }
        bloom
    }

    pub(super) fn contains(&self, word: u64) -> bool {
        probes(word, self.bits.len() * 64).all(|bit| self.bits[bit / 64] & (1 << (bit % 64)) != 0)
    }
}

/// The three bits of a word in a filter of `bits` bits (a power of two).
fn probes(word: u64, bits: usize) -> impl Iterator<Item = usize> {
    let mask = bits - 1;
    let (a, b) = (word as usize, ((word >> 32) as usize) | 1);
    (0..3).map(move |k| a.wrapping_add(k * b) & mask)
}
