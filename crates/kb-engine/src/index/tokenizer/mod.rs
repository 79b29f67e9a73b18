//! The text analyzer shared by indexing, querying and snippets: `split` cuts
//! text into words and CJK n-grams, `normalise` lowercases and folds them,
//! `stems` puts an English word's stem beside it, and `finder` tells which of
//! a set of terms a text's tokens are.
//!
//! Chinese, Japanese and Korean have no spaces between words, so a run of such
//! characters is indexed as overlapping bigrams plus unigrams: `远程仓库` gives
//! `远`, `远程`, `程`, `程仓`, `仓`, `仓库`, `库`. A query is analysed into bigrams
//! only (a lone character stays a unigram), so `仓库` matches inside
//! `同步远程仓库的设置` and `库` still matches on its own. STACK-NOTES measured this
//! at 100 % of literal matches where a dictionary segmenter alone found 85–88 %.
//! Everything else is split into runs of letters and digits, then lowercased and
//! ASCII-folded, so `Graph` matches `graph` and `Café` matches `cafe`.
//!
//! Positions advance by two per character (a CJK unigram at `p`, the bigram
//! starting there at `p + 1`) and by two per word, so that the query analyzer's
//! bigram-only stream keeps the same relative positions as the index and phrase
//! queries work across both scripts.

mod finder;
mod normalise;
mod split;
mod stems;

pub(crate) use finder::TermFinder;
pub(super) use split::is_word_char;
pub(crate) use stems::{stem_of, stem_term, term_group, term_probe};

use tantivy::tokenizer::{RemoveLongFilter, TextAnalyzer};

use normalise::Normalise;
use split::KbTokenizer;
use stems::StemAlongside;

/// The name under which the index analyzer is registered with tantivy.
pub(crate) const ANALYZER: &str = "kb_text";

/// Longest token kept, in bytes (longer runs are hashes, base64, URLs).
const MAX_TOKEN_BYTES: usize = 60;

/// The analyzer used to index text fields.
pub(crate) fn index_analyzer() -> TextAnalyzer {
    TextAnalyzer::builder(KbTokenizer::index())
        .filter(RemoveLongFilter::limit(MAX_TOKEN_BYTES))
        .filter(Normalise)
        .filter(StemAlongside)
        .build()
}

/// The index analyzer without the stems: the words and n-grams as indexed.
fn word_analyzer() -> TextAnalyzer {
    TextAnalyzer::builder(KbTokenizer::index())
        .filter(RemoveLongFilter::limit(MAX_TOKEN_BYTES))
        .filter(Normalise)
        .build()
}

/// The analyzer used to turn query words into terms (bigrams only for CJK).
pub(crate) fn query_analyzer() -> TextAnalyzer {
    TextAnalyzer::builder(KbTokenizer::query())
        .filter(RemoveLongFilter::limit(MAX_TOKEN_BYTES))
        .filter(Normalise)
        .build()
}

/// One analysed token: its normalised text, byte range in the source and position.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Analysed {
    pub(crate) text: String,
    pub(crate) from: usize,
    pub(crate) to: usize,
    pub(crate) position: usize,
}

/// Runs an analyzer over a text and collects its tokens.
pub(crate) fn analyse(analyzer: &mut TextAnalyzer, text: &str) -> Vec<Analysed> {
    let mut out = Vec::new();
    let mut stream = analyzer.token_stream(text);
    while let Some(token) = stream.next() {
        out.push(Analysed {
            text: token.text.clone(),
            from: token.offset_from,
            to: token.offset_to,
            position: token.position,
        });
    }
    out
}

#[cfg(test)]
mod tests {
    use tantivy::tokenizer::{AsciiFoldingFilter, LowerCaser};

    use super::*;

    pub(super) fn texts(analyzer: &mut TextAnalyzer, text: &str) -> Vec<String> {
        analyse(analyzer, text).into_iter().map(|t| t.text).collect()
    }

    proptest::proptest! {
        /// The analyzers make exactly the tokens they made with tantivy's
        /// `LowerCaser` and `AsciiFoldingFilter` in place of [`Normalise`], and
        /// the remembered stems are the stems, in every script.
        #[test]
        fn normalising_and_remembered_stems_change_no_token(
            text in "[a-zA-Z0-9 .,_'éÉßΣσςΩωЖж٣ÆæŒœĳﬁ²ｶﾞＡａ①Ⅻİ远程仓库ひらがなカタカナ한국어\\-]{0,40}"
        ) {
            for unigrams in [true, false] {
                let plain = |analyzer: TextAnalyzer| analyse(&mut { analyzer }, &text);
                let before = TextAnalyzer::builder(KbTokenizer { unigrams })
                    .filter(RemoveLongFilter::limit(MAX_TOKEN_BYTES))
                    .filter(LowerCaser)
                    .filter(AsciiFoldingFilter);
                let now = TextAnalyzer::builder(KbTokenizer { unigrams })
                    .filter(RemoveLongFilter::limit(MAX_TOKEN_BYTES))
                    .filter(Normalise);
                let unstemmed = plain(before.build());
                proptest::prop_assert_eq!(&plain(now.build()), &unstemmed);
                if unigrams {
                    let stemmed: Vec<Analysed> = unstemmed
                        .into_iter()
                        .flat_map(|word| {
                            let stem = stem_of(&word.text).filter(|stem| *stem != word.text);
                            let marked = stem.map(|stem| Analysed { text: stem_term(&stem), ..word.clone() });
                            std::iter::once(word).chain(marked)
                        })
                        .collect();
                    // Twice: the second time the stems are remembered ones.
                    proptest::prop_assert_eq!(&plain(index_analyzer()), &stemmed);
                    proptest::prop_assert_eq!(&plain(index_analyzer()), &stemmed);
                }
            }
        }
    }

    #[test]
    fn index_form_has_unigrams_and_bigrams_in_offset_order() {
        let tokens = analyse(&mut index_analyzer(), "远程仓库");
        let got: Vec<_> = tokens.iter().map(|t| (t.text.as_str(), t.position)).collect();
        assert_eq!(got, [("远", 0), ("远程", 1), ("程", 2), ("程仓", 3), ("仓", 4), ("仓库", 5), ("库", 6)]);
        let offsets: Vec<_> = tokens.iter().map(|t| (t.from, t.to)).collect();
        let mut sorted = offsets.clone();
        sorted.sort();
        assert_eq!(offsets, sorted, "snippet code needs non-decreasing offsets");
    }

    #[test]
    fn query_form_is_bigrams_only_and_keeps_index_positions() {
        let tokens = analyse(&mut query_analyzer(), "远程仓库");
        let got: Vec<_> = tokens.iter().map(|t| (t.text.as_str(), t.position)).collect();
        assert_eq!(got, [("远程", 1), ("程仓", 3), ("仓库", 5)]);
        assert_eq!(texts(&mut query_analyzer(), "库"), ["库"]);
        assert_eq!(texts(&mut query_analyzer(), "库 图"), ["库", "图"]);
    }

    #[test]
    fn latin_is_lowercased_and_folded_and_split_on_punctuation() {
        assert_eq!(
            texts(&mut index_analyzer(), "Graph-View Café, v1.2"),
            ["graph", "view", "cafe", "v1", "2"]
        );
    }

    #[test]
    fn mixed_scripts_split_at_the_boundary() {
        assert_eq!(
            texts(&mut query_analyzer(), "Rust所有权 and 日本語メモ"),
            ["rust", "所有", "有权", "and", "日本", "本語", "語メ", "メモ"]
        );
        assert_eq!(texts(&mut index_analyzer(), "한국어"), ["한", "한국", "국", "국어", "어"]);
    }

    #[test]
    fn overlong_tokens_are_dropped() {
        let long = "a".repeat(200);
        assert_eq!(texts(&mut index_analyzer(), &format!("x {long} y")), ["x", "y"]);
    }
}
