//! Which of a set of terms a text's index tokens are: what snippets mark and
//! what a hit's matched fields name, found without stemming every word.

use std::collections::{BTreeSet, HashMap};

use tantivy::tokenizer::TextAnalyzer;

use super::stems::{STEM_MARK, stem_of, stem_probe, stem_term};
use super::word_analyzer;

/// Finds which of a set of terms a text's index tokens are, for snippets and
/// matched fields. Stemming every word of a text costs more than the rest of
/// the analysis, so only a word that starts like one of the wanted stems is
/// stemmed (see [`stem_probe`]).
pub(crate) struct TermFinder<'t> {
    terms: &'t BTreeSet<String>,
    /// What a word with a wanted stem starts with (see [`stem_probe`]).
    probes: Vec<&'t str>,
    /// The wanted stem term of each word stemmed so far, if any: a text says
    /// its words many times, and stemming one costs a few thousand instructions.
    stemmed: HashMap<String, Option<&'t String>, rustc_hash::FxBuildHasher>,
    analyzer: TextAnalyzer,
}

impl<'t> TermFinder<'t> {
    pub(crate) fn new(terms: &'t BTreeSet<String>) -> Self {
        let probes = terms.iter().filter_map(|term| term.strip_prefix(STEM_MARK)).map(stem_probe).collect();
        TermFinder { terms, probes, stemmed: Default::default(), analyzer: word_analyzer() }
    }

    /// Calls `found(term, from, to)` for each token the index analyzer makes of
    /// `text` that is one of the terms, in the analyzer's order.
    pub(crate) fn each(&mut self, text: &str, mut found: impl FnMut(&'t String, usize, usize)) {
        self.until(text, |term, from, to| {
            found(term, from, to);
            false
        });
    }

    /// Whether any token of `text` is one of the terms (it stops at the first).
    pub(crate) fn any(&mut self, text: &str) -> bool {
        self.until(text, |_, _, _| true)
    }

    /// [`TermFinder::each`] until `found` returns true; whether it did.
    fn until(&mut self, text: &str, mut found: impl FnMut(&'t String, usize, usize) -> bool) -> bool {
        let mut stream = self.analyzer.token_stream(text);
        while let Some(token) = stream.next() {
            if let Some(term) = self.terms.get(&token.text)
                && found(term, token.offset_from, token.offset_to)
            {
                return true;
            }
            if !self.probes.iter().any(|probe| token.text.starts_with(probe)) {
                continue;
            }
            let stem = match self.stemmed.get(token.text.as_str()) {
                Some(&stem) => stem,
                None => {
                    let terms = self.terms;
                    let stem = stem_of(&token.text)
                        .filter(|stem| *stem != token.text)
                        .and_then(|stem| terms.get(&stem_term(&stem)));
                    self.stemmed.insert(token.text.clone(), stem);
                    stem
                }
            };
            if let Some(term) = stem
                && found(term, token.offset_from, token.offset_to)
            {
                return true;
            }
        }
        false
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::index::tokenizer::{analyse, index_analyzer};

    #[test]
    fn the_term_finder_finds_what_the_index_analyzer_makes() {
        let text = "Running happy skies; the runner ran, happiness dying 备份仓库 Café runs lying gently";
        let everything = analyse(&mut index_analyzer(), text);
        for list in [
            &["~run", "running"][..],
            &["~happi", "happy"],
            &["~sky"],
            &["~die", "备份", "cafe"],
            &["runs", "~runner", "absent"],
            &["~lie", "~gentl"],
        ] {
            let terms: BTreeSet<String> = list.iter().map(|t| (*t).to_owned()).collect();
            let expected: Vec<(String, usize, usize)> = everything
                .iter()
                .filter(|t| terms.contains(&t.text))
                .map(|t| (t.text.clone(), t.from, t.to))
                .collect();
            let mut got = Vec::new();
            TermFinder::new(&terms).each(text, |term, from, to| got.push((term.clone(), from, to)));
            assert_eq!(got, expected, "{list:?}");
        }
    }
}
