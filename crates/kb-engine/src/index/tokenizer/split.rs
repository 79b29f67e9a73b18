//! How text is cut into tokens: runs of letters and digits, and for Chinese,
//! Japanese and Korean, which put no spaces between words, overlapping bigrams
//! with (when indexing) their unigrams. Positions advance by two per character
//! and per word, so the query form's bigrams keep the index's positions.

use tantivy::tokenizer::{Token, TokenStream, Tokenizer};

use crate::index::script::is_cjk;

/// Letters and digits of scripts that put spaces between words (not CJK).
pub(in crate::index) fn is_word_char(c: char) -> bool {
    if c.is_ascii() {
        return c.is_ascii_alphanumeric();
    }
    c.is_alphanumeric() && !is_cjk(c)
}

/// Splits text into words and CJK n-grams. `unigrams: false` is the query form.
#[derive(Clone, Debug)]
pub(super) struct KbTokenizer {
    pub(super) unigrams: bool,
}

impl KbTokenizer {
    pub(super) fn index() -> Self {
        KbTokenizer { unigrams: true }
    }

    pub(super) fn query() -> Self {
        KbTokenizer { unigrams: false }
    }
}

/// The token stream of [`KbTokenizer`].
pub(super) struct KbTokenStream<'a> {
    text: &'a str,
    /// Byte offset of the next character to look at.
    cursor: usize,
    /// Next position to hand out.
    position: usize,
    unigrams: bool,
    /// A bigram to emit before moving on: (from, to, position).
    pending_bigram: Option<(usize, usize, usize)>,
    token: Token,
}

impl Tokenizer for KbTokenizer {
    type TokenStream<'a> = KbTokenStream<'a>;

    fn token_stream<'a>(&'a mut self, text: &'a str) -> KbTokenStream<'a> {
        KbTokenStream {
            text,
            cursor: 0,
            position: 0,
            unigrams: self.unigrams,
            pending_bigram: None,
            token: Token::default(),
        }
    }
}

impl KbTokenStream<'_> {
    fn emit(&mut self, from: usize, to: usize, position: usize) {
        self.token.offset_from = from;
        self.token.offset_to = to;
        self.token.position = position;
        self.token.position_length = 1;
        self.token.text.clear();
        self.token.text.push_str(&self.text[from..to]);
    }

    /// The character starting at `at`, if any.
    fn char_at(&self, at: usize) -> Option<char> {
        self.text[at..].chars().next()
    }
}

impl TokenStream for KbTokenStream<'_> {
    fn advance(&mut self) -> bool {
        if let Some((from, to, position)) = self.pending_bigram.take() {
            self.emit(from, to, position);
            return true;
        }
        let bytes = self.text.as_bytes();
        loop {
            // Most text is ASCII: a byte that is neither letter nor digit is
            // skipped without decoding a character (it is no CJK character either).
            match bytes.get(self.cursor) {
                None => return false,
                Some(byte) if byte.is_ascii() && !byte.is_ascii_alphanumeric() => {
                    self.cursor += 1;
                    continue;
                }
                Some(_) => {}
            }
            let Some(c) = self.char_at(self.cursor) else { return false };
            let start = self.cursor;
            let end = start + c.len_utf8();
            if is_cjk(c) {
                let position = self.position;
                self.position += 2;
                self.cursor = end;
                let next = self.char_at(end).filter(|&n| is_cjk(n));
                let bigram = next.map(|n| (start, end + n.len_utf8(), position + 1));
                // The run's first character, in query mode, is only emitted alone
                // when the run has a single character.
                let run_start = !self.text[..start].chars().next_back().is_some_and(is_cjk);
                if self.unigrams || (bigram.is_none() && run_start) {
                    self.emit(start, end, position);
                    self.pending_bigram = bigram;
                    return true;
                }
                if let Some((from, to, position)) = bigram {
                    self.emit(from, to, position);
                    return true;
                }
                continue;
            }
            if is_word_char(c) {
                let mut to = end;
                loop {
                    match bytes.get(to) {
                        Some(byte) if byte.is_ascii_alphanumeric() => to += 1,
                        Some(byte) if !byte.is_ascii() => match self.char_at(to).filter(|&n| is_word_char(n))
                        {
                            Some(n) => to += n.len_utf8(),
                            None => break,
                        },
                        _ => break,
                    }
                }
                self.cursor = to;
                let position = self.position;
                self.position += 2;
                self.emit(start, to, position);
                return true;
            }
            self.cursor = end;
        }
    }

    fn token(&self) -> &Token {
        &self.token
    }

    fn token_mut(&mut self) -> &mut Token {
        &mut self.token
    }
}

#[cfg(test)]
mod tests {
    use crate::index::tokenizer::{analyse, word_analyzer};

    proptest::proptest! {
        /// Outside CJK, the words are the runs of letters and digits, however
        /// ASCII and other scripts mix (the tokenizer reads ASCII bytewise).
        #[test]
        fn words_are_the_runs_of_letters_and_digits(text in "[a-zA-Z0-9 .,_'éßΩж٣\\-]{0,28}") {
            let words: Vec<(usize, usize)> = analyse(&mut word_analyzer(), &text)
                .into_iter()
                .map(|t| (t.from, t.to))
                .collect();
            let mut runs = Vec::new();
            let mut start = None;
            for (at, c) in text.char_indices().chain(std::iter::once((text.len(), ' '))) {
                match (start, c.is_alphanumeric()) {
                    (None, true) => start = Some(at),
                    (Some(from), false) => {
                        runs.push((from, at));
                        start = None;
                    }
                    _ => {}
                }
            }
            proptest::prop_assert_eq!(words, runs);
        }
    }
}
