//! Notes in a rival language rank lower: in a vault that holds the query's
//! language and another of its script each in strength (a translated vault),
//! a note in another language keeps only a share of its score, so it loses a
//! tie or a near tie to a note in the query's language.

use std::sync::Arc;

use tantivy::{DocId, Score, SegmentReader, Term};

use crate::index::language_column::LanguageColumns;
use crate::index::{SearchIndex, language, query};

/// What a note in a rival language (another language written in the query's
/// script) keeps of its score: enough to lose a tie or a near tie to a note in
/// the query's language, not a strong match to a weak one.
const RIVAL_LANGUAGE_SHARE: f32 = 0.7;

/// Fewest notes a language must hold, and share of the vault, to count as one
/// the vault is written in: a few quoted passages do not make a vault bilingual.
const LANGUAGE_MIN_NOTES: u64 = 5;
const LANGUAGE_MIN_SHARE: f64 = 0.02;

/// The languages whose notes rank lower for one query (see `language`), one bit per code.
pub(super) type Rivals = u64;

impl SearchIndex {
    /// What a note in a rival language keeps of its score.
    pub(super) fn rival_share(&self, rivals: &Rivals) -> RivalShare {
        RivalShare { rivals: *rivals, columns: Arc::clone(&self.languages) }
    }

    /// The languages that rank lower for `query` (see `language`): when the vault
    /// holds the query's language and another of its script each in strength (a
    /// translated vault), every other language. The query's language is told by
    /// its words, else it is the vault's commonest of its script. `None` (rank as
    /// ever) in a vault of one language per script.
    pub(super) fn rival_languages(&self, lookups: &query::SearchTerms, query: &str) -> Option<Rivals> {
        let script = language::script_of_query(query)?;
        let field = self.schema.fields.language;
        let notes = lookups.searcher().num_docs();
        // Counted once per segment from the language column, else looked up.
        let kept = self.languages.counts(lookups.searcher());
        let count = |code: language::LanguageCode| match &kept {
            Some(counts) => counts.get(code as usize).copied().unwrap_or(0),
            None => lookups.doc_freq(&Term::from_field_u64(field, code)).unwrap_or(0),
        };
        let counts: Vec<(language::LanguageCode, u64)> =
            language::languages_of(script).map(|code| (code, count(code))).collect();
        let strong =
            |count: u64| count >= LANGUAGE_MIN_NOTES && count as f64 >= notes as f64 * LANGUAGE_MIN_SHARE;
        if counts.iter().filter(|(_, count)| strong(*count)).count() < 2 {
            return None;
        }
        let asked = language::of_query(query)
            .filter(|code| language::language(*code).is_some_and(|(_, s)| s == script))
            .or_else(|| {
                counts
                    .iter()
                    .max_by_key(|(code, count)| (*count, std::cmp::Reverse(*code)))
                    .map(|(code, _)| *code)
            })?;
        let held = counts.iter().find(|(code, _)| *code == asked).is_some_and(|(_, count)| strong(*count));
        // Notes in another script are rivals too: in a translated vault a Thai note
        // holds `AES-256` as the English one does. (A vault of one language per
        // script, Chinese notes with English terms, never gets here.)
        held.then(|| language::all().filter(|code| *code != asked).fold(0, |mask, code| mask | 1 << code))
    }
}

/// A note in a rival language keeps [`RIVAL_LANGUAGE_SHARE`] of its score (its
/// language read from the language column, kept per segment).
#[derive(Debug, Clone)]
pub(super) struct RivalShare {
    rivals: Rivals,
    columns: Arc<LanguageColumns>,
}

impl RivalShare {
    /// The score a note of `segment` keeps.
    pub(super) fn of(&self, segment: &SegmentReader) -> impl Fn(DocId, Score) -> Score + use<> {
        let rivals = self.rivals;
        let languages = self.columns.of(segment);
        move |doc: DocId, score: Score| match &languages {
            Some(languages) if (rivals >> languages.of(doc)) & 1 == 1 => score * RIVAL_LANGUAGE_SHARE,
            _ => score,
        }
    }
}

/// What a score of `segment` keeps: a rival language's share of it, or all
/// of it when no language is a rival (see [`RivalShare`]).
pub(super) fn share_in(share: Option<&RivalShare>, segment: &SegmentReader) -> ShareOf {
    match share {
        Some(share) => Box::new(share.of(segment)),
        None => Box::new(|_, score| score),
    }
}

/// A segment's note and score to the score it keeps.
pub(super) type ShareOf = Box<dyn Fn(DocId, Score) -> Score>;
