//! Word forms: an English word whose Snowball stem differs from it is indexed a
//! second time, as its stem behind [`STEM_MARK`], at the same position and
//! offsets (`running` gives `running` and `~run`). The exact form stays its own
//! term, so a query scores exact matches above stemmed ones, and phrases still
//! match exact forms only. Only words of ASCII letters are stemmed (after
//! folding), so CJK n-grams, numbers and codes are left as they are.

use std::cell::RefCell;
use std::collections::HashMap;

use tantivy::tokenizer::{Token, TokenFilter, TokenStream, Tokenizer};

/// Marks a stemmed term; the tokenizer never emits it inside a word, so a typed
/// query cannot produce it.
pub(super) const STEM_MARK: char = '~';

/// Shortest word that is stemmed (shorter ones are mostly their own stem).
const MIN_STEMMED_LETTERS: usize = 3;

/// The English Snowball stem of a lowercased word of ASCII letters, else `None`
/// (CJK, digits, other scripts, short words are not stemmed).
pub(crate) fn stem_of(word: &str) -> Option<String> {
    if word.len() < MIN_STEMMED_LETTERS || !word.bytes().all(|b| b.is_ascii_lowercase()) {
        return None;
    }
    static STEMMER: std::sync::OnceLock<frostem::Stemmer> = std::sync::OnceLock::new();
    let stemmer = STEMMER.get_or_init(|| frostem::Stemmer::new(frostem::Algorithm::English));
    Some(stemmer.stem(word).into_owned())
}

/// The term under which a stem is indexed: `~run`.
pub(crate) fn stem_term(stem: &str) -> String {
    let mut term = String::with_capacity(stem.len() + 1);
    term.push(STEM_MARK);
    term.push_str(stem);
    term
}

/// Most words a thread remembers the marked stem of (about 100 bytes each);
/// when full, it starts again empty.
const STEM_MEMORY_WORDS: usize = 16_384;

thread_local! {
    /// Each word's marked stem as indexed beside it (`None`: the word is its own
    /// stem, or is not stemmed). Snowball costs more than the rest of a word's
    /// analysis, and a vault's words repeat: re-indexing the 9,000 notes a
    /// hub's move rewrites stems mostly words stemmed before.
    static MARKED_STEMS: RefCell<HashMap<Box<str>, Option<Box<str>>>> = RefCell::new(HashMap::new());
}

/// Puts in `out` the marked stem indexed beside `word` (see the module
/// comment), returning whether there is one: `stem_term(stem_of(word))` when
/// that stem differs from the word, remembered per thread.
fn marked_stem_into(word: &str, out: &mut String) -> bool {
    if word.len() < MIN_STEMMED_LETTERS || !word.bytes().all(|b| b.is_ascii_lowercase()) {
        return false;
    }
    MARKED_STEMS.with(|memory| {
        let mut memory = memory.borrow_mut();
        let marked = match memory.get(word) {
            Some(marked) => marked.as_deref(),
            None => {
                if memory.len() >= STEM_MEMORY_WORDS {
                    memory.clear();
                }
                let marked = stem_of(word).filter(|stem| stem != word).map(|stem| stem_term(&stem).into());
                memory.entry(word.into()).or_insert(marked).as_deref()
            }
        };
        out.clear();
        out.push_str(marked.unwrap_or_default());
        marked.is_some()
    })
}

/// The word a term stands for: a marked stem and every form with that stem
/// share one (`running`, `~run` and `run` give `run`); other terms stand for
/// themselves. Snippets count a line's matches by it, so one word in two forms
/// counts once.
pub(crate) fn term_group(term: &str) -> std::borrow::Cow<'_, str> {
    match term.strip_prefix(STEM_MARK) {
        Some(stem) => std::borrow::Cow::Borrowed(stem),
        None => stem_of(term).map_or(std::borrow::Cow::Borrowed(term), std::borrow::Cow::Owned),
    }
}

/// The text a line must contain (ASCII-lowercased) to hold a term: for a
/// stem, what every word with that stem starts with (see [`stem_probe`]), else
/// the term itself.
pub(crate) fn term_probe(term: &str) -> &str {
    match term.strip_prefix(STEM_MARK) {
        Some(stem) => stem_probe(stem),
        None => term,
    }
}

/// What every word with the English Snowball stem `stem` starts with: the stem
/// without its last letter (`happi` stands for `happy`, `se` for `settings`),
/// for all but the three words Snowball stems by exception to a stem they do
/// not share two letters with (`dying`, `lying`, `tying`: `die`, `lie`, `tie`),
/// whose probe is their first letter.
pub(super) fn stem_probe(stem: &str) -> &str {
    match stem {
        "die" | "lie" | "tie" => &stem[..1],
        _ if stem.len() > 1 => &stem[..stem.len() - 1],
        _ => stem,
    }
}

/// Adds each word's stem, marked, after the word (see the module comment).
#[derive(Clone, Debug)]
pub(super) struct StemAlongside;

impl TokenFilter for StemAlongside {
    type Tokenizer<T: Tokenizer> = StemAlongsideFilter<T>;

    fn transform<T: Tokenizer>(self, tokenizer: T) -> StemAlongsideFilter<T> {
        StemAlongsideFilter { inner: tokenizer }
    }
}

/// The tokenizer [`StemAlongside`] wraps around another.
#[derive(Clone, Debug)]
pub(super) struct StemAlongsideFilter<T> {
    inner: T,
}

impl<T: Tokenizer> Tokenizer for StemAlongsideFilter<T> {
    type TokenStream<'a> = StemAlongsideStream<T::TokenStream<'a>>;

    fn token_stream<'a>(&'a mut self, text: &'a str) -> Self::TokenStream<'a> {
        StemAlongsideStream { tail: self.inner.token_stream(text), stem: String::new(), pending: false }
    }
}

/// The token stream of [`StemAlongsideFilter`].
pub(super) struct StemAlongsideStream<S> {
    tail: S,
    /// The marked stem of the token just emitted, to emit next when `pending`.
    stem: String,
    pending: bool,
}

impl<S: TokenStream> TokenStream for StemAlongsideStream<S> {
    fn advance(&mut self) -> bool {
        if self.pending {
            self.pending = false;
            let token = self.tail.token_mut();
            token.text.clear();
            token.text.push_str(&self.stem);
            return true;
        }
        if !self.tail.advance() {
            return false;
        }
        self.pending = marked_stem_into(&self.tail.token().text, &mut self.stem);
        true
    }

    fn token(&self) -> &Token {
        self.tail.token()
    }

    fn token_mut(&mut self) -> &mut Token {
        self.tail.token_mut()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::index::tokenizer::tests::texts;
    use crate::index::tokenizer::{analyse, index_analyzer, query_analyzer};

    #[test]
    fn english_words_are_indexed_with_their_stem_beside_them() {
        let tokens = analyse(&mut index_analyzer(), "Running notes on depression, 备份 v2");
        let got: Vec<_> = tokens.iter().map(|t| (t.text.as_str(), t.position, t.from)).collect();
        assert_eq!(
            got,
            [
                ("running", 0, 0),
                ("~run", 0, 0),
                ("notes", 2, 8),
                ("~note", 2, 8),
                ("on", 4, 14),
                ("depression", 6, 17),
                ("~depress", 6, 17),
                ("备", 8, 29),
                ("备份", 9, 29),
                ("份", 10, 32),
                ("v2", 12, 36),
            ]
        );
        assert_eq!(stem_of("depressed").as_deref(), Some("depress"));
        assert_eq!(stem_of("backup").as_deref(), Some("backup"));
        assert_eq!(stem_of("v2"), None);
        assert_eq!(texts(&mut query_analyzer(), "Running"), ["running"], "queries stem in query.rs");
    }

    /// Snippets pick the lines to analyse, and the term finder the words to
    /// stem, by the start every word with a wanted stem shares. Checked on
    /// Snowball's exceptional forms and words whose stem changes a letter; the
    /// 90,597 distinct Latin words of the Obsidian help vault and the bench
    /// generator were checked the same way when the rule was written.
    #[test]
    fn every_word_starts_with_the_probe_of_its_stem() {
        let words = [
            "dying",
            "lying",
            "tying",
            "skies",
            "skis",
            "idly",
            "gently",
            "ugly",
            "early",
            "only",
            "singly",
            "happy",
            "happiness",
            "settings",
            "setting",
            "cries",
            "ties",
            "hoping",
            "relational",
            "possibly",
            "studies",
            "flies",
            "dyed",
            "generously",
            "organization",
            "running",
            "agreed",
        ];
        for word in words {
            let stem = stem_of(word).unwrap();
            assert!(word.starts_with(stem_probe(&stem)), "{word} → {stem} → {}", stem_probe(&stem));
        }
        assert_eq!([stem_probe("die"), stem_probe("set"), stem_probe("happi")], ["d", "se", "happ"]);
    }
}
