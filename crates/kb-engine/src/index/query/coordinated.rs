//! A query's term clauses as one scorer: a note must match `required` of them
//! and scores the sum of those it matches, twice over when it matches every one
//! (coordination: a note holding all the words ranks above one holding some).
//! Built from tantivy's boolean queries this needed the clauses twice, a union
//! and an intersection of copies, and every matching note walked and scored
//! both; here each clause's postings are walked once.

use tantivy::query::{EnableScoring, Explanation, Query, Scorer, Weight};
use tantivy::{DocId, DocSet, Score, SegmentReader, TERMINATED, TantivyError, Term};

/// Term clauses of which a note must match `required`, scored twice when it
/// matches all of them and `coordinate` is set.
#[derive(Debug)]
pub(super) struct CoordinatedQuery {
    pub(super) clauses: Vec<Box<dyn Query>>,
    pub(super) required: usize,
    pub(super) coordinate: bool,
}

impl Clone for CoordinatedQuery {
    fn clone(&self) -> Self {
        CoordinatedQuery {
            clauses: self.clauses.iter().map(|clause| clause.box_clone()).collect(),
            required: self.required,
            coordinate: self.coordinate,
        }
    }
}

impl Query for CoordinatedQuery {
    fn weight(&self, scoring: EnableScoring<'_>) -> tantivy::Result<Box<dyn Weight>> {
        let clauses =
            self.clauses.iter().map(|clause| clause.weight(scoring)).collect::<tantivy::Result<_>>()?;
        Ok(Box::new(CoordinatedWeight { clauses, required: self.required, coordinate: self.coordinate }))
    }

    fn query_terms<'a>(&'a self, visitor: &mut dyn FnMut(&'a Term, bool)) {
        for clause in &self.clauses {
            clause.query_terms(visitor);
        }
    }
}

struct CoordinatedWeight {
    clauses: Vec<Box<dyn Weight>>,
    required: usize,
    coordinate: bool,
}

impl Weight for CoordinatedWeight {
    fn scorer(&self, reader: &SegmentReader, boost: Score) -> tantivy::Result<Box<dyn Scorer>> {
        let mut clauses = Vec::with_capacity(self.clauses.len());
        for weight in &self.clauses {
            let scorer = weight.scorer(reader, boost)?;
            // A clause without postings in this segment never matches: leave it out of
            // the walk (it still counts against matching every clause).
            if scorer.doc() != TERMINATED {
                clauses.push(scorer);
            }
        }
        let all = if self.coordinate { self.clauses.len() } else { usize::MAX };
        let docs = clauses.iter().map(|clause| clause.doc()).collect();
        let mut scorer =
            CoordinatedScorer { clauses, docs, required: self.required, all, doc: 0, score: 0.0 };
        scorer.settle();
        Ok(Box::new(scorer))
    }

    fn explain(&self, reader: &SegmentReader, doc: DocId) -> tantivy::Result<Explanation> {
        let mut scorer = self.scorer(reader, 1.0)?;
        if scorer.seek(doc) != doc {
            return Err(TantivyError::InvalidArgument(format!("document {doc} does not match")));
        }
        Ok(Explanation::new("sum of the matching term clauses, twice when all match", scorer.score()))
    }
}

struct CoordinatedScorer {
    /// The clauses with postings, each on its current document.
    clauses: Vec<Box<dyn Scorer>>,
    /// Each clause's current document (read once per move, not once per look).
    docs: Vec<DocId>,
    required: usize,
    /// How many clauses match when all do (`usize::MAX` without coordination).
    all: usize,
    doc: DocId,
    score: Score,
}

impl CoordinatedScorer {
    /// From the clauses' current documents, the first one enough clauses match.
    fn settle(&mut self) -> DocId {
        loop {
            let doc = self.docs.iter().copied().min().unwrap_or(TERMINATED);
            if doc == TERMINATED {
                self.doc = TERMINATED;
                return TERMINATED;
            }
            let matched = self.docs.iter().filter(|&&at| at == doc).count();
            if matched >= self.required {
                let mut sum: Score = 0.0;
                for (clause, _) in self.clauses.iter_mut().zip(&self.docs).filter(|(_, at)| **at == doc) {
                    sum += clause.score();
                }
                self.doc = doc;
                self.score = if matched == self.all { sum + sum } else { sum };
                return doc;
            }
            self.advance_on(doc);
        }
    }

    /// Moves the clauses standing on `doc` past it.
    fn advance_on(&mut self, doc: DocId) {
        for (clause, at) in self.clauses.iter_mut().zip(&mut self.docs) {
            if *at == doc {
                *at = clause.advance();
            }
        }
    }
}

impl DocSet for CoordinatedScorer {
    fn advance(&mut self) -> DocId {
        if self.doc == TERMINATED {
            return TERMINATED;
        }
        self.advance_on(self.doc);
        self.settle()
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
        self.settle()
    }

    fn doc(&self) -> DocId {
        self.doc
    }

    fn size_hint(&self) -> u32 {
        self.clauses.iter().map(|clause| clause.size_hint()).max().unwrap_or(0)
    }
}

impl Scorer for CoordinatedScorer {
    fn score(&mut self) -> Score {
        self.score
    }
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use tantivy::collector::TopDocs;
    use tantivy::query::{BooleanQuery, Occur, TermQuery};
    use tantivy::schema::{IndexRecordOption, Schema, TEXT};
    use tantivy::{DocAddress, Index, TantivyDocument};

    use super::*;

    /// Every matching note and its score.
    fn scores(index: &Index, query: &dyn Query) -> BTreeMap<DocAddress, Score> {
        let searcher = index.reader().unwrap().searcher();
        let top = searcher.search(query, &TopDocs::with_limit(100).order_by_score()).unwrap();
        top.into_iter().map(|(score, address)| (address, score)).collect()
    }

    #[test]
    fn scores_as_the_boolean_union_plus_the_intersection_of_copies() {
        let mut builder = Schema::builder();
        let body = builder.add_text_field("body", TEXT);
        let index = Index::create_in_ram(builder.build());
        let mut writer: tantivy::IndexWriter = index.writer_with_num_threads(1, 15_000_000).unwrap();
        let texts =
            ["sync conflict", "sync sync resolution", "conflict resolution sync", "other", "resolution"];
        // Two segments, so clauses without postings in one of them are covered.
        for (at, text) in texts.iter().chain(&["conflict words", "sync"]).enumerate() {
            let mut doc = TantivyDocument::default();
            doc.add_text(body, text);
            writer.add_document(doc).unwrap();
            if at == 4 {
                writer.commit().unwrap();
            }
        }
        writer.commit().unwrap();
        let clause = |word: &str| -> Box<dyn Query> {
            Box::new(TermQuery::new(Term::from_field_text(body, word), IndexRecordOption::WithFreqs))
        };
        let words = ["sync", "conflict", "resolution"];
        for required in 1..=3 {
            let coordinate = required < words.len();
            let clauses: Vec<(Occur, Box<dyn Query>)> =
                words.iter().map(|w| (Occur::Should, clause(w))).collect();
            let mut top: Vec<(Occur, Box<dyn Query>)> = Vec::new();
            if coordinate {
                let all = words.iter().map(|w| (Occur::Must, clause(w))).collect();
                top.push((Occur::Should, Box::new(BooleanQuery::new(all))));
            }
            top.push((Occur::Must, Box::new(BooleanQuery::with_minimum_required_clauses(clauses, required))));
            let expected = scores(&index, &BooleanQuery::new(top));
            let coordinated =
                CoordinatedQuery { clauses: words.iter().map(|w| clause(w)).collect(), required, coordinate };
            let got = scores(&index, &coordinated);
            assert_eq!(
                got.keys().collect::<Vec<_>>(),
                expected.keys().collect::<Vec<_>>(),
                "required {required}"
            );
            for (address, score) in &got {
                assert!(
                    (score - expected[address]).abs() < 1e-5,
                    "required {required}: {score} vs {expected:?}"
                );
            }
            assert!(!got.is_empty());
        }
    }
}
