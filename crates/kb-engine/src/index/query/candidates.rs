//! A query's leaves restricted to known candidate notes, so the whole query can
//! score a few hundred notes without walking the postings of every note.
//!
//! `search_knowledge` first finds the notes its title-side fields match (a few
//! hundred at most, cheap), then scores only those with the full query, text
//! evidence included. Wrapping the whole query in a filter would not do:
//! tantivy's union scorers score a 4,096-document window per jump, so a union
//! over a common word's text postings would still score nearly every note. Here
//! each leaf (a term or a phrase in one field) sees only the candidates, leaping
//! from one to the next with the postings' skip lists, and the query tree above
//! the leaves is unchanged, so a candidate scores exactly what the full query
//! gives it. Each candidate carries the most the query can score it; once the
//! page being collected is full, a leaf passes over the candidates that can no
//! longer reach it ([`Bar`]). Where the query is words alone, the candidates
//! are scored one at a time instead (`each_candidate`), from the same leaves and
//! to the same bits.

use std::sync::Arc;
use std::sync::atomic::{AtomicU32, Ordering};

use tantivy::index::SegmentId;
use tantivy::query::{EmptyScorer, EnableScoring, Explanation, Query, Scorer, Weight};
use tantivy::{
    DocAddress, DocId, DocSet, Score, Searcher, SeekDangerResult, SegmentReader, TERMINATED, Term,
};

/// Candidate notes, as sorted document ids per segment, each with the most
/// the query can score it (`f32::INFINITY` when unknown).
#[derive(Debug, Default)]
pub(crate) struct Candidates {
    /// Each segment's candidates (an index has a few segments: a list will do).
    by_segment: Vec<InSegment>,
    /// The score a candidate must be able to reach to be scored at all, raised
    /// as the page fills (see [`Bar`]); none: every candidate is scored.
    bar: Option<Arc<Bar>>,
}

impl Candidates {
    /// Groups found documents by the segment they belong to.
    pub(crate) fn new(searcher: &Searcher, found: impl IntoIterator<Item = DocAddress>) -> Self {
        Candidates::bounded(searcher, found.into_iter().map(|address| (address, Score::INFINITY)), None)
    }

    /// Groups found documents, each with the most the query can score it, by
    /// segment; a candidate whose most is below `bar` when a leaf reaches it is
    /// passed over (see [`Bar`]).
    pub(crate) fn bounded(
        searcher: &Searcher,
        found: impl IntoIterator<Item = (DocAddress, Score)>,
        bar: Option<Arc<Bar>>,
    ) -> Self {
        let readers = searcher.segment_readers();
        let mut grouped: Vec<Vec<(DocId, Score)>> = vec![Vec::new(); readers.len()];
        for (address, most) in found {
            if let Some(docs) = grouped.get_mut(address.segment_ord as usize) {
                docs.push((address.doc_id, most));
            }
        }
        let by_segment = grouped
            .into_iter()
            .zip(readers)
            .filter(|(docs, _)| !docs.is_empty())
            .map(|(mut docs, reader)| {
                docs.sort_unstable_by_key(|(doc, _)| *doc);
                docs.dedup_by_key(|(doc, _)| *doc);
                InSegment {
                    segment: reader.segment_id(),
                    docs: docs.iter().map(|(doc, _)| *doc).collect(),
                    most: docs.iter().map(|(_, most)| *most).collect(),
                }
            })
            .collect();
        Candidates { by_segment, bar }
    }

    fn of(&self, reader: &SegmentReader) -> Option<&InSegment> {
        let id = reader.segment_id();
        self.by_segment.iter().find(|candidates| candidates.segment == id)
    }

    /// `reader`'s candidates, sorted, and the most the query can score each.
    pub(super) fn in_segment(&self, reader: &SegmentReader) -> Option<(&[DocId], &[Score])> {
        self.of(reader).map(|candidates| (&*candidates.docs, &*candidates.most))
    }

    /// The score a candidate must be able to reach to be scored, when there is one.
    pub(super) fn bar(&self) -> Option<&Bar> {
        self.bar.as_deref()
    }
}

/// One segment's candidates, sorted, and the most the query can score each.
#[derive(Debug)]
struct InSegment {
    segment: SegmentId,
    docs: Arc<[DocId]>,
    most: Arc<[Score]>,
}

/// The lowest score that can still enter a page being collected: the page's
/// last score once it is full (see `search::collectors::BarredTop`), only
/// ever raised. A candidate whose most possible score is below it cannot enter the page, so
/// its leaves need not score it; a leaf that passes it over while another has
/// already scored it leaves it a partial score, lower still, which the page
/// refuses all the same. Scores are never negative, so their bits order as
/// they do.
#[derive(Debug)]
pub(crate) struct Bar(AtomicU32);

impl Default for Bar {
    fn default() -> Self {
        Bar(AtomicU32::new(0))
    }
}

impl Bar {
    /// Raises the bar to `score` if it is higher.
    pub(crate) fn raise(&self, score: Score) {
        if score > 0.0 {
            self.0.fetch_max(score.to_bits(), Ordering::Relaxed);
        }
    }

    pub(super) fn get(&self) -> Score {
        Score::from_bits(self.0.load(Ordering::Relaxed))
    }
}

/// Wraps a leaf query so that it matches candidates only.
pub(crate) fn only(candidates: &Arc<Candidates>, leaf: Box<dyn Query>) -> Box<dyn Query> {
    Box::new(OnlyCandidates { inner: leaf, candidates: Arc::clone(candidates) })
}

/// The leaf that [`only`] restricted to candidates, when `query` is one.
pub(super) fn leaf_within(query: &dyn Query) -> Option<&dyn Query> {
    query.downcast_ref::<OnlyCandidates>().map(|only| only.inner.as_ref())
}

/// A leaf query matching only the candidates among its own matches.
#[derive(Debug)]
struct OnlyCandidates {
    inner: Box<dyn Query>,
    candidates: Arc<Candidates>,
}

impl Clone for OnlyCandidates {
    fn clone(&self) -> Self {
        OnlyCandidates { inner: self.inner.box_clone(), candidates: Arc::clone(&self.candidates) }
    }
}

impl Query for OnlyCandidates {
    fn weight(&self, scoring: EnableScoring<'_>) -> tantivy::Result<Box<dyn Weight>> {
        let inner = self.inner.weight(scoring)?;
        Ok(Box::new(OnlyWeight { inner, candidates: Arc::clone(&self.candidates) }))
    }

    fn query_terms<'a>(&'a self, visitor: &mut dyn FnMut(&'a Term, bool)) {
        self.inner.query_terms(visitor);
    }
}

struct OnlyWeight {
    inner: Box<dyn Weight>,
    candidates: Arc<Candidates>,
}

impl Weight for OnlyWeight {
    fn scorer(&self, reader: &SegmentReader, boost: Score) -> tantivy::Result<Box<dyn Scorer>> {
        // No candidate here: the same empty scorer the boolean query leaves out.
        let Some(InSegment { docs, most, .. }) = self.candidates.of(reader) else {
            return Ok(Box::new(EmptyScorer));
        };
        let (docs, most) = (Arc::clone(docs), Arc::clone(most));
        let Some(&first) = docs.first() else { return Ok(Box::new(EmptyScorer)) };
        // Made near the first candidate: a phrase does not look for its first
        // match among the notes before it.
        let (found, inner) = self.inner.scorer_danger(reader, first, boost)?;
        if inner.is::<EmptyScorer>() {
            return Ok(inner);
        }
        let bar = self.candidates.bar.clone();
        let mut scorer = OnlyScorer { inner, docs, most, bar, next: 0, doc: 0 };
        scorer.settle_from(found);
        Ok(Box::new(scorer))
    }

    fn explain(&self, reader: &SegmentReader, doc: DocId) -> tantivy::Result<Explanation> {
        self.inner.explain(reader, doc)
    }
}

struct OnlyScorer {
    inner: Box<dyn Scorer>,
    /// The segment's candidates, sorted.
    docs: Arc<[DocId]>,
    /// The most the query can score each.
    most: Arc<[Score]>,
    bar: Option<Arc<Bar>>,
    /// The first candidate not yet passed.
    next: usize,
    doc: DocId,
}

impl OnlyScorer {
    /// From candidate `next` on, the first one the inner scorer matches.
    ///
    /// The inner scorer is asked about each candidate with `seek_danger`: a
    /// phrase then checks its positions in that note only, not in every note
    /// after it that holds its words, and a miss says where the inner scorer
    /// can match next. After a miss the inner scorer may stand nowhere valid;
    /// it is only asked with `seek_danger` again, at a later candidate, until
    /// one is found (tantivy's contract), and scored only on a found one.
    fn settle(&mut self) -> DocId {
        self.pass_below_bar();
        let Some(&candidate) = self.docs.get(self.next) else { return self.terminate() };
        let found = self.inner.seek_danger(candidate);
        self.settle_from(found)
    }

    /// [`Self::settle`] once the inner scorer has answered for candidate `next`.
    fn settle_from(&mut self, mut found: SeekDangerResult) -> DocId {
        loop {
            match found {
                SeekDangerResult::Found => {
                    self.doc = self.docs[self.next];
                    return self.doc;
                }
                SeekDangerResult::SeekLowerBound(bound) => {
                    if bound == TERMINATED {
                        return self.terminate();
                    }
                    self.next = first_from(&self.docs, self.next, bound);
                }
            }
            self.pass_below_bar();
            let Some(&candidate) = self.docs.get(self.next) else { return self.terminate() };
            found = self.inner.seek_danger(candidate);
        }
    }

    /// Moves past the candidates that can no longer reach the page.
    fn pass_below_bar(&mut self) {
        if let Some(bar) = &self.bar {
            let bar = bar.get();
            while self.most.get(self.next).is_some_and(|&most| most < bar) {
                self.next += 1;
            }
        }
    }

    fn terminate(&mut self) -> DocId {
        self.next = self.docs.len();
        self.doc = TERMINATED;
        TERMINATED
    }
}

/// The first of `docs` (sorted) from `from` on that is at least `target`.
///
/// Galloping: doubling steps from `from`, then a binary search within the last
/// step. A leaf mostly lands a few candidates ahead (a common word's next
/// note), where this looks at one or two, and sometimes far ahead (a rare
/// word's), where it costs twice a binary search's few looks.
fn first_from(docs: &[DocId], from: usize, target: DocId) -> usize {
    let rest = &docs[from.min(docs.len())..];
    let mut step = 1;
    let mut below = 0;
    while step <= rest.len() && rest[step - 1] < target {
        below = step;
        step *= 2;
    }
    let end = step.min(rest.len());
    from + below + rest[below..end].partition_point(|&doc| doc < target)
}

impl DocSet for OnlyScorer {
    fn advance(&mut self) -> DocId {
        if self.doc == TERMINATED {
            return TERMINATED;
        }
        self.next += 1;
        self.settle()
    }

    fn seek(&mut self, target: DocId) -> DocId {
        if self.doc >= target {
            return self.doc;
        }
        self.next = first_from(&self.docs, self.next, target);
        self.settle()
    }

    fn doc(&self) -> DocId {
        self.doc
    }

    /// The inner scorer's own estimate: an intersection orders its parts by it,
    /// and the parts' scores must add up in the order the full query adds them.
    fn size_hint(&self) -> u32 {
        self.inner.size_hint()
    }

    fn cost(&self) -> u64 {
        self.inner.cost()
    }
}

impl Scorer for OnlyScorer {
    fn score(&mut self) -> Score {
        self.inner.score()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn galloping_finds_what_a_binary_search_finds() {
        let docs: Vec<DocId> = (0..300).map(|at| at * 3 + at % 3).collect();
        assert!(docs.is_sorted());
        for from in [0, 1, 2, 5, 64, 150, 298, 299, 300] {
            for target in (0..905).chain([DocId::MAX]) {
                let expected = from + docs[from..].partition_point(|&doc| doc < target);
                assert_eq!(first_from(&docs, from, target), expected, "from {from}, target {target}");
            }
        }
        assert_eq!(first_from(&[], 0, 5), 0);
    }
}
