//! Lowercasing and ASCII folding, as tantivy's own filters do them, without
//! their work on the tokens they would not change.

use tantivy::tokenizer::{
    AsciiFoldingFilter, LowerCaser, RawTokenizer, TextAnalyzer, Token, TokenFilter, TokenStream, Tokenizer,
};

use crate::index::script::is_cjk;

/// Lowercases and ASCII-folds each token exactly as tantivy's `LowerCaser`
/// followed by its `AsciiFoldingFilter` do, without their work where it
/// changes nothing: an ASCII token is only lowercased, and a Han, kana or
/// Hangul token (most of a Chinese note's tokens: each character gives two)
/// is left as it is, since none of those characters has a lower case or a
/// folding (a test goes through every one). Any other token goes through the
/// two filters themselves.
#[derive(Clone)]
pub(super) struct Normalise;

impl TokenFilter for Normalise {
    type Tokenizer<T: Tokenizer> = NormaliseFilter<T>;

    fn transform<T: Tokenizer>(self, tokenizer: T) -> NormaliseFilter<T> {
        NormaliseFilter { inner: tokenizer, other: lowercase_and_fold() }
    }
}

/// Tantivy's lowercasing and folding of a whole text as one token.
fn lowercase_and_fold() -> TextAnalyzer {
    TextAnalyzer::builder(RawTokenizer::default()).filter(LowerCaser).filter(AsciiFoldingFilter).build()
}

/// The tokenizer [`Normalise`] wraps around another.
#[derive(Clone)]
pub(super) struct NormaliseFilter<T> {
    inner: T,
    /// What a token of other scripts goes through.
    other: TextAnalyzer,
}

impl<T: Tokenizer> Tokenizer for NormaliseFilter<T> {
    type TokenStream<'a> = NormaliseStream<'a, T::TokenStream<'a>>;

    fn token_stream<'a>(&'a mut self, text: &'a str) -> Self::TokenStream<'a> {
        NormaliseStream { tail: self.inner.token_stream(text), other: &mut self.other }
    }
}

/// The token stream of [`NormaliseFilter`].
pub(super) struct NormaliseStream<'a, S> {
    tail: S,
    other: &'a mut TextAnalyzer,
}

impl<S: TokenStream> TokenStream for NormaliseStream<'_, S> {
    fn advance(&mut self) -> bool {
        if !self.tail.advance() {
            return false;
        }
        let text = &mut self.tail.token_mut().text;
        if text.is_ascii() {
            text.make_ascii_lowercase();
        } else if !text.chars().all(is_cjk) {
            let mut other = self.other.token_stream(text);
            if other.advance() {
                let normal = std::mem::take(&mut other.token_mut().text);
                drop(other);
                *text = normal;
            }
        }
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

    /// What lets [`Normalise`] leave Han, kana and Hangul tokens alone: no
    /// such character is changed by lowercasing or folding.
    #[test]
    fn no_cjk_character_is_lowercased_or_folded() {
        let mut tantivy = lowercase_and_fold();
        let changed: Vec<char> = (char::MIN..=char::MAX)
            .filter(|&c| is_cjk(c))
            .filter(|&c| {
                let text = c.to_string();
                texts(&mut tantivy, &text) != [text]
            })
            .collect();
        assert_eq!(changed, Vec::<char>::new(), "characters Normalise would have to lowercase or fold");
    }
}
