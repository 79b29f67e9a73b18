//! Typo tolerance with a fixed first letter.
//!
//! A Levenshtein automaton run over a term dictionary visits every prefix that
//! is still within the allowed distance; with no fixed prefix that is a large
//! part of the body field's dictionary (every word and CJK bigram of the vault),
//! and a search that finds nothing spends most of its time there. Like most
//! search engines' fuzzy queries, ours requires the first letter to be typed
//! right and tolerates the edits in the rest of the word: the automaton then
//! only walks the dictionary under that letter.

use std::fmt;
use std::sync::Arc;

use std::collections::BTreeSet;

use tantivy::query::{AutomatonWeight, DfaWrapper, EnableScoring, FuzzyTermQuery, Query, Weight};
use tantivy::schema::Field;
use tantivy::{Searcher, Term};
use tantivy_fst::Automaton;

/// The most terms one mistyped word stands for in snippets and `matched`.
const MAX_EXPANSIONS: usize = 16;

/// How many edits a word may be from what it matches: `None` for words too
/// short to guess at (under four letters) and for words that are not ASCII
/// letters and digits (CJK is matched by n-grams, not by edits).
pub(crate) fn typo_distance(word: &str) -> Option<u8> {
    let letters = word.chars().count();
    if letters < 4 || !word.chars().all(|c| c.is_ascii_alphanumeric()) {
        return None;
    }
    Some(if letters >= 8 { 2 } else { 1 })
}

/// The terms of `fields` that the typo-tolerant forms of `words` matched (at
/// most [`MAX_EXPANSIONS`] per word, fewest edits first is not promised:
/// dictionary order), so that a search found only by typo tolerance can still
/// highlight what it found and say in which fields.
pub(crate) fn expansions<'w>(
    searcher: &Searcher,
    fields: &[Field],
    words: impl IntoIterator<Item = &'w str>,
) -> BTreeSet<String> {
    let mut out = BTreeSet::new();
    for word in words {
        let Some(distance) = typo_distance(word) else { continue };
        let Some(query) = PrefixedFuzzyQuery::across(word, distance) else { continue };
        let mut found = BTreeSet::new();
        'fields: for &field in fields {
            let automaton = query(field).automaton;
            for segment in searcher.segment_readers() {
                let Ok(inverted) = segment.inverted_index(field) else { continue };
                let Ok(mut stream) = inverted.terms().search(automaton.as_ref()).into_stream() else {
                    continue;
                };
                while stream.advance() {
                    if let Ok(term) = std::str::from_utf8(stream.key()) {
                        found.insert(term.to_owned());
                    }
                    if found.len() >= MAX_EXPANSIONS {
                        break 'fields;
                    }
                }
            }
        }
        out.extend(found);
    }
    out
}

/// Terms of `field` that start with `prefix` and whose remainder is within the
/// distance of the word's remainder (a transposition counts as one edit).
#[derive(Clone)]
pub(crate) struct PrefixedFuzzyQuery {
    field: Field,
    automaton: Arc<PrefixedLevenshtein>,
    shown: String,
}

impl PrefixedFuzzyQuery {
    /// `None` when the word is empty or the distance is not 1 or 2.
    #[cfg(test)]
    pub(crate) fn new(field: Field, word: &str, distance: u8) -> Option<PrefixedFuzzyQuery> {
        Some(PrefixedFuzzyQuery::across(word, distance)?(field))
    }

    /// The query of `word` for any field, its automaton built once: building a
    /// Levenshtein automaton of distance 2 costs more than walking a field's
    /// dictionary with it. `None` when the word is empty or the distance is not 1 or 2.
    pub(crate) fn across(word: &str, distance: u8) -> Option<impl Fn(Field) -> PrefixedFuzzyQuery> {
        let first = word.chars().next()?;
        let (prefix, rest) = word.split_at(first.len_utf8());
        // The field of the term does not matter to the automaton: only its text does.
        let rest = FuzzyTermQuery::new(Term::from_field_text(Field::from_field_id(0), rest), distance, true)
            .automaton()
            .ok()?;
        let automaton = Arc::new(PrefixedLevenshtein { prefix: prefix.as_bytes().to_vec(), rest });
        let shown = format!("{word}~{distance}");
        Some(move |field| PrefixedFuzzyQuery {
            field,
            automaton: Arc::clone(&automaton),
            shown: shown.clone(),
        })
    }
}

impl fmt::Debug for PrefixedFuzzyQuery {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "PrefixedFuzzy({})", self.shown)
    }
}

impl Query for PrefixedFuzzyQuery {
    fn weight(&self, _scoring: EnableScoring<'_>) -> tantivy::Result<Box<dyn Weight>> {
        Ok(Box::new(AutomatonWeight::<PrefixedLevenshtein>::new(self.field, Arc::clone(&self.automaton))))
    }
}

/// The prefix byte for byte, then a Levenshtein automaton over the rest.
struct PrefixedLevenshtein {
    prefix: Vec<u8>,
    rest: DfaWrapper,
}

/// Where the automaton is: inside the prefix (bytes matched so far), in the
/// rest's automaton, or off every matching term.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum State {
    Prefix(usize),
    Rest(u32),
    Dead,
}

impl Automaton for PrefixedLevenshtein {
    type State = State;

    fn start(&self) -> State {
        if self.prefix.is_empty() { State::Rest(self.rest.start()) } else { State::Prefix(0) }
    }

    fn is_match(&self, state: &State) -> bool {
        matches!(state, State::Rest(inner) if self.rest.is_match(inner))
    }

    fn can_match(&self, state: &State) -> bool {
        match state {
            State::Prefix(_) => true,
            State::Rest(inner) => self.rest.can_match(inner),
            State::Dead => false,
        }
    }

    fn accept(&self, state: &State, byte: u8) -> State {
        match *state {
            State::Prefix(matched) if self.prefix.get(matched) == Some(&byte) => {
                if matched + 1 == self.prefix.len() {
                    State::Rest(self.rest.start())
                } else {
                    State::Prefix(matched + 1)
                }
            }
            State::Rest(inner) => State::Rest(self.rest.accept(&inner, byte)),
            _ => State::Dead,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tantivy::schema::Schema;

    fn matches(word: &str, distance: u8, term: &str) -> bool {
        let field = Schema::builder().add_text_field("body", tantivy::schema::TEXT);
        let query = PrefixedFuzzyQuery::new(field, word, distance).unwrap();
        let automaton = &query.automaton;
        let mut state = automaton.start();
        for &byte in term.as_bytes() {
            state = automaton.accept(&state, byte);
        }
        automaton.is_match(&state)
    }

    #[test]
    fn the_first_letter_is_fixed_and_the_rest_tolerates_edits() {
        assert!(matches("obsidian", 1, "obsidian"));
        assert!(matches("obsidain", 1, "obsidian"), "a transposition is one edit");
        assert!(matches("obsdian", 1, "obsidian"), "a missing letter");
        assert!(matches("zettelkasten", 2, "zetelkastn"), "two edits");
        assert!(!matches("zettelkasten", 1, "zetelkastn"), "two edits at distance 1");
        assert!(!matches("obsidian", 1, "bsidian"), "the first letter must be right");
        assert!(!matches("obsidian", 2, "absidian"), "even when the rest is exact");
        assert!(matches("éclair", 1, "éclar"), "a multi-byte first letter");
        assert!(!matches("éclair", 1, "eclair"));
    }
}
