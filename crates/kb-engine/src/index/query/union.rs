//! A term's or phrase's clauses across fields (and its exact and stemmed
//! forms) as one scorer that walks its clauses side by side.
//!
//! tantivy's boolean union buffers a 4,096-document window: each union a
//! search builds allocates and clears a score for every document of the window
//! (16 to 32 KB) and scores every match in it, even when the query above it
//! then skips to a few candidates. A search builds one union per term and form,
//! per segment and per query (the title side, the candidates, the full query),
//! which made building them the largest cost of a short search. This union
//! holds no window: it moves its clauses one match at a time.
//!
//! It gives each note the score tantivy's union gives it (the same clauses
//! summed, or their best taken, in the same order from the same start), and
//! reports the same size and cost estimates, which decide the order in which an
//! intersection above it adds its parts' scores. For that it keeps the
//! clauses tantivy's union would keep: the ones not exhausted when it was
//! built, less those exhausted by a jump past the window tantivy would have
//! buffered.

use tantivy::query::{EmptyScorer, EnableScoring, Explanation, Query, Scorer, Weight};
use tantivy::{DocId, DocSet, Score, SegmentReader, TERMINATED, TantivyError, Term};

/// The window tantivy's buffered union looks ahead (documents).
const WINDOW: DocId = 4_096;

/// How a union's matching clauses make its score.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(super) enum Combine {
    /// Their sum (a boolean query's should-clauses).
    Sum,
    /// The best of them, the rest counted at `tie_breaker` (a disjunction max).
    Best { tie_breaker: Score },
}

impl Combine {
    /// The scores of the clauses matching a note, in the clauses' order, made
    /// one as tantivy's union makes them (its sum from zero, or the best plus
    /// the rest at the tie-breaker); `None` when no clause matches. The
    /// candidate pass (`each_candidate`) combines with this too, so the two
    /// ways of scoring a union cannot differ.
    pub(super) fn scores(self, matching: impl Iterator<Item = Score>) -> Option<Score> {
        let (mut any, mut best, mut sum): (bool, Score, Score) = (false, 0.0, 0.0);
        for score in matching {
            any = true;
            best = Score::max(score, best);
            sum += score;
        }
        any.then_some(match self {
            Combine::Sum => sum,
            Combine::Best { tie_breaker } => best + (sum - best) * tie_breaker,
        })
    }
}

/// Clauses of which a note must match one, scored by [`Combine`].
#[derive(Debug)]
pub(super) struct UnionQuery {
    pub(super) clauses: Vec<Box<dyn Query>>,
    pub(super) combine: Combine,
}

impl Clone for UnionQuery {
    fn clone(&self) -> Self {
        UnionQuery {
            clauses: self.clauses.iter().map(|clause| clause.box_clone()).collect(),
            combine: self.combine,
        }
    }
}

impl Query for UnionQuery {
    fn weight(&self, scoring: EnableScoring<'_>) -> tantivy::Result<Box<dyn Weight>> {
        let clauses =
            self.clauses.iter().map(|clause| clause.weight(scoring)).collect::<tantivy::Result<_>>()?;
        Ok(Box::new(UnionWeight { clauses, combine: self.combine }))
    }

    fn query_terms<'a>(&'a self, visitor: &mut dyn FnMut(&'a Term, bool)) {
        for clause in &self.clauses {
            clause.query_terms(visitor);
        }
    }
}

struct UnionWeight {
    clauses: Vec<Box<dyn Weight>>,
    combine: Combine,
}

impl Weight for UnionWeight {
    fn scorer(&self, reader: &SegmentReader, boost: Score) -> tantivy::Result<Box<dyn Scorer>> {
        // As tantivy's boolean query: one clause is its own scorer; clauses with no
        // postings here are left out, and a lone clause left is its own scorer too.
        if let [one] = &self.clauses[..] {
            return one.scorer(reader, boost);
        }
        let mut clauses = Vec::with_capacity(self.clauses.len());
        for weight in &self.clauses {
            let scorer = weight.scorer(reader, boost)?;
            if !scorer.is::<EmptyScorer>() {
                clauses.push(scorer);
            }
        }
        if clauses.len() <= 1 {
            return Ok(clauses.pop().unwrap_or_else(|| Box::new(EmptyScorer)));
        }
        // Exhausted clauses are dropped when the union is built, as tantivy's are.
        clauses.retain(|clause| clause.doc() != TERMINATED);
        let docs = clauses.iter().map(|clause| clause.doc()).collect();
        let mut union = UnionScorer {
            clauses,
            docs,
            combine: self.combine,
            notes: reader.num_docs(),
            doc: 0,
            window: 0,
            score: None,
        };
        union.settle(true);
        Ok(Box::new(union))
    }

    fn explain(&self, reader: &SegmentReader, doc: DocId) -> tantivy::Result<Explanation> {
        let mut scorer = self.scorer(reader, 1.0)?;
        if scorer.seek(doc) != doc {
            return Err(TantivyError::InvalidArgument(format!("document {doc} does not match")));
        }
        Ok(Explanation::new("union of the clauses that match", scorer.score()))
    }
}

struct UnionScorer {
    /// The clauses tantivy's union would hold, each on its current document.
    clauses: Vec<Box<dyn Scorer>>,
    /// Each clause's current document (read once per move, not once per look).
    docs: Vec<DocId>,
    combine: Combine,
    /// Notes in the segment (for the size estimate).
    notes: u32,
    doc: DocId,
    /// Where tantivy's union would have started its current window.
    window: DocId,
    /// The current note's score, once asked for.
    score: Option<Score>,
}

impl UnionScorer {
    /// Stands on the clauses' first document; `fresh`: a new window starts
    /// there (as after tantivy's union refills). The note is scored only when
    /// asked: a query above may pass it over unscored (a coordinated query
    /// whose other words it lacks, say).
    fn settle(&mut self, fresh: bool) -> DocId {
        let doc = self.docs.iter().copied().min().unwrap_or(TERMINATED);
        self.doc = doc;
        self.score = None;
        if doc == TERMINATED {
            return TERMINATED;
        }
        if fresh || doc - self.window >= WINDOW {
            self.window = doc;
        }
        doc
    }

    /// The current note's score: its matching clauses' scores combined, each
    /// clause asked in order (the order tantivy's union adds them).
    fn combined(&mut self) -> Score {
        let doc = self.doc;
        let on = self.clauses.iter_mut().zip(&self.docs).filter(|(_, at)| **at == doc);
        self.combine.scores(on.map(|(clause, _)| clause.score())).unwrap_or(0.0)
    }
}

impl DocSet for UnionScorer {
    fn advance(&mut self) -> DocId {
        if self.doc == TERMINATED {
            return TERMINATED;
        }
        let doc = self.doc;
        for (clause, at) in self.clauses.iter_mut().zip(&mut self.docs) {
            if *at == doc {
                *at = clause.advance();
            }
        }
        self.settle(false)
    }

    fn seek(&mut self, target: DocId) -> DocId {
        if self.doc >= target {
            return self.doc;
        }
        for (clause, at) in self.clauses.iter_mut().zip(&mut self.docs) {
            if *at < target {
                *at = clause.seek(target);
            }
        }
        // A jump past the window: tantivy's union drops its exhausted clauses
        // and starts a new window.
        let past = target - self.window >= WINDOW;
        if past {
            // Kept in their order: the order in which their scores are summed.
            let mut kept = 0;
            for at in 0..self.clauses.len() {
                if self.docs[at] != TERMINATED {
                    self.clauses.swap(kept, at);
                    self.docs[kept] = self.docs[at];
                    kept += 1;
                }
            }
            self.clauses.truncate(kept);
            self.docs.truncate(kept);
        }
        self.settle(past)
    }

    fn doc(&self) -> DocId {
        self.doc
    }

    /// tantivy's estimate for a union: the notes in none of the clauses, if
    /// they held notes at random (somewhat clustered: 0.8 of their share).
    fn size_hint(&self) -> u32 {
        let notes = f64::from(self.notes);
        let missed: f64 =
            self.clauses.iter().map(|clause| 1.0 - (f64::from(clause.size_hint()) / notes) * 0.8).product();
        (notes * (1.0 - missed)).round().min(notes) as u32
    }

    fn cost(&self) -> u64 {
        self.clauses.iter().map(|clause| clause.cost()).sum()
    }
}

impl Scorer for UnionScorer {
    fn score(&mut self) -> Score {
        match self.score {
            Some(score) => score,
            None => {
                let score = self.combined();
                self.score = Some(score);
                score
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;
    use std::sync::Arc;

    use tantivy::collector::TopDocs;
    use tantivy::query::{BooleanQuery, BoostQuery, DisjunctionMaxQuery, Occur};
    use tantivy::schema::IndexRecordOption;
    use tantivy::{DocAddress, Index};

    use super::*;
    use crate::index::query::terms::{SearchTerms, SharedTermQuery};
    use crate::index::query::test_index::titles_and_bodies;

    /// Every matching note and its score's bits.
    fn scores(index: &Index, query: &dyn Query) -> BTreeMap<DocAddress, u32> {
        let searcher = index.reader().unwrap().searcher();
        let top = searcher.search(query, &TopDocs::with_limit(100).order_by_score()).unwrap();
        top.into_iter().map(|(score, address)| (address, score.to_bits())).collect()
    }

    #[test]
    fn scores_every_note_as_tantivys_unions_to_the_last_bit() {
        let (index, title, body) = titles_and_bodies(&[
            ("sync", "sync conflict"),
            ("conflicts", "sync sync resolution conflict"),
            ("other", "resolution"),
            ("sync conflict", "nothing here"),
            ("", "conflict conflict conflict sync"),
            ("resolution", "sync"),
            ("x", "y"),
        ]);
        let searcher = index.reader().unwrap().searcher();
        let terms = Arc::new(SearchTerms::new(&searcher, &Default::default()));
        let leaf = |field, word: &str, weight: f32, shared: bool| -> Box<dyn Query> {
            let term = Term::from_field_text(field, word);
            let leaf: Box<dyn Query> = if shared {
                Box::new(SharedTermQuery::new(term, IndexRecordOption::WithFreqs, &terms))
            } else {
                Box::new(tantivy::query::TermQuery::new(term, IndexRecordOption::WithFreqs))
            };
            Box::new(BoostQuery::new(leaf, weight))
        };
        for words in [&["sync"][..], &["sync", "conflict"], &["resolution", "absent", "conflict"]] {
            let across = |word: &str, shared: bool| {
                vec![leaf(title, word, 2.0, shared), leaf(body, word, 0.3, shared)]
            };
            let tantivy_sum = |word: &str| -> Box<dyn Query> {
                Box::new(BooleanQuery::new(
                    across(word, false).into_iter().map(|q| (Occur::Should, q)).collect(),
                ))
            };
            let ours_sum = |word: &str| -> Box<dyn Query> {
                Box::new(UnionQuery { clauses: across(word, true), combine: Combine::Sum })
            };
            let expected: Vec<Box<dyn Query>> = words.iter().map(|w| tantivy_sum(w)).collect();
            let got: Vec<Box<dyn Query>> = words.iter().map(|w| ours_sum(w)).collect();
            let best_expected = DisjunctionMaxQuery::with_tie_breaker(expected, 0.0);
            let best_got = UnionQuery { clauses: got, combine: Combine::Best { tie_breaker: 0.0 } };
            let sum_expected =
                BooleanQuery::new(words.iter().map(|w| (Occur::Should, tantivy_sum(w))).collect());
            let sum_got =
                UnionQuery { clauses: words.iter().map(|w| ours_sum(w)).collect(), combine: Combine::Sum };
            for (got, expected) in [
                (scores(&index, &best_got), scores(&index, &best_expected)),
                (scores(&index, &sum_got), scores(&index, &sum_expected)),
            ] {
                assert_eq!(got, expected, "{words:?}");
                assert!(!got.is_empty());
            }
        }
    }
}
