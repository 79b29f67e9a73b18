//! The candidate pass scored one candidate at a time.
//!
//! `search_knowledge`'s candidate pass (see [`Candidates`]) scores a few
//! hundred notes with the whole query. Through the query's own scorers each
//! leaf walks the candidate list by itself, and every union and coordinated
//! part above the leaves finds, at each step, the least note its clauses stand
//! on: on the Obsidian Help vault that bookkeeping cost more than reading the
//! postings. Here the candidates are taken in order, each leaf is asked about
//! each one (`seek_danger`, as the leaf wrapper asks), and the query's tree is
//! evaluated on the answers: the same clauses match, their scores are added in
//! the same order, so every note scores the same to the last bit.
//!
//! Only the shapes the candidate pass builds for words are evaluated here: one
//! required part (the words' clauses, coordinated, or one alone), at most two
//! optional ones (whose sum cannot depend on their order), nothing excluded,
//! every part made of this crate's unions and coordinated clauses over at most
//! 128 leaves restricted to candidates (a question of many words can have
//! more). Any other query is left to its scorers: [`collect`] answers `None`.

use tantivy::collector::{Collector, SegmentCollector};
use tantivy::query::{BooleanQuery, EmptyQuery, EmptyScorer, EnableScoring, Occur, Query, Scorer, Weight};
use tantivy::{DocId, Score, Searcher, SeekDangerResult, TERMINATED};

use super::candidates::{Candidates, leaf_within};
use super::coordinated::CoordinatedQuery;
use super::union::{Combine, UnionQuery};

/// Collects every candidate `query` matches, with the score its own scorers
/// would give it, into `collector`; `None` when the query's shape is not one
/// evaluated here (see the module's doc), so its scorers must run.
pub(crate) fn collect<C: Collector>(
    query: &dyn Query,
    candidates: &Candidates,
    searcher: &Searcher,
    scoring: EnableScoring<'_>,
    collector: &C,
) -> Option<tantivy::Result<C::Fruit>> {
    let shape = Shape::of(query)?;
    Some(shape.collect(candidates, searcher, scoring, collector))
}

/// Which of a shape's leaves match a candidate, one bit each.
type Matched = u128;

/// The most leaves a shape evaluated here has (one bit each in [`Matched`]).
const MAX_LEAVES: usize = Matched::BITS as usize;

/// A part of the query's tree, its leaves numbered in order.
#[derive(Debug)]
enum Node {
    /// A leaf restricted to candidates (see `candidates::only`).
    Leaf(usize),
    /// A part matching no note.
    Never,
    /// A [`UnionQuery`]; `span`: the leaves under it, which it matches when
    /// one of them does.
    Union { clauses: Vec<Node>, combine: Combine, span: Matched },
    /// A [`UnionQuery`] summing leaves that follow one another (a term across
    /// fields, the commonest part): the leaves of `span`, added in their order.
    Leaves { span: Matched },
    /// A [`CoordinatedQuery`]: `all` is how many clauses match when all do
    /// (`usize::MAX` without coordination).
    Coordinated { clauses: Vec<Node>, required: usize, all: usize },
}

/// The query as a tree over its leaves.
struct Shape<'q> {
    required: Node,
    optional: Vec<Node>,
    leaves: Vec<&'q dyn Query>,
}

impl<'q> Shape<'q> {
    fn of(query: &'q dyn Query) -> Option<Self> {
        let top = query.downcast_ref::<BooleanQuery>()?;
        if top.get_minimum_number_should_match() != 0 {
            return None;
        }
        let mut shape = Shape { required: Node::Never, optional: Vec::new(), leaves: Vec::new() };
        let mut required = None;
        for (occur, clause) in top.clauses() {
            match occur {
                Occur::Must if required.is_none() => required = Some(shape.node(clause.as_ref())?),
                Occur::Should if shape.optional.len() < 2 => {
                    let node = shape.node(clause.as_ref())?;
                    shape.optional.push(node);
                }
                _ => return None,
            }
        }
        shape.required = required?;
        Some(shape)
    }

    fn node(&mut self, query: &'q dyn Query) -> Option<Node> {
        if let Some(leaf) = leaf_within(query) {
            // A leaf past the set's bits: the shape is left to its scorers.
            if self.leaves.len() == MAX_LEAVES {
                return None;
            }
            self.leaves.push(leaf);
            return Some(Node::Leaf(self.leaves.len() - 1));
        }
        if query.is::<EmptyQuery>() {
            return Some(Node::Never);
        }
        if let Some(union) = query.downcast_ref::<UnionQuery>() {
            let clauses: Vec<Node> =
                union.clauses.iter().map(|clause| self.node(clause.as_ref())).collect::<Option<_>>()?;
            let span = clauses.iter().fold(0, |span, clause| span | clause.span());
            let in_a_row = clauses.iter().enumerate().all(|(offset, clause)| {
                matches!((clause, &clauses[0]), (Node::Leaf(at), Node::Leaf(first)) if *at == first + offset)
            });
            if union.combine == Combine::Sum && in_a_row {
                return Some(Node::Leaves { span });
            }
            return Some(Node::Union { clauses, combine: union.combine, span });
        }
        if let Some(coordinated) = query.downcast_ref::<CoordinatedQuery>() {
            let clauses =
                coordinated.clauses.iter().map(|clause| self.node(clause.as_ref())).collect::<Option<_>>()?;
            let all = if coordinated.coordinate { coordinated.clauses.len() } else { usize::MAX };
            return Some(Node::Coordinated { clauses, required: coordinated.required, all });
        }
        None
    }

    fn collect<C: Collector>(
        &self,
        candidates: &Candidates,
        searcher: &Searcher,
        scoring: EnableScoring<'_>,
        collector: &C,
    ) -> tantivy::Result<C::Fruit> {
        let weights: Vec<Box<dyn Weight>> =
            self.leaves.iter().map(|leaf| leaf.weight(scoring)).collect::<tantivy::Result<_>>()?;
        let bar = candidates.bar();
        let mut fruits = Vec::with_capacity(searcher.segment_readers().len());
        for (ord, reader) in searcher.segment_readers().iter().enumerate() {
            let mut found = collector.for_segment(ord as u32, reader)?;
            if let Some((docs, most)) = candidates.in_segment(reader)
                && let Some(&first) = docs.first()
            {
                let mut leaves = SegmentLeaves::new(&weights, reader, first)?;
                let alive = reader.alive_bitset();
                for (&doc, &most) in docs.iter().zip(most) {
                    // A candidate that can no longer reach the page is not scored.
                    if bar.is_some_and(|bar| most < bar.get())
                        || alive.is_some_and(|alive| !alive.is_alive(doc))
                    {
                        continue;
                    }
                    let matched = leaves.matching(doc);
                    if let Some(score) = self.score(matched, &mut leaves) {
                        found.collect(doc, score);
                    }
                }
            }
            fruits.push(found.harvest());
        }
        collector.merge_fruits(fruits)
    }

    /// The query's score for the candidate the leaves were last asked about,
    /// `None` when it does not match: the required part, plus the optional
    /// parts matching (as tantivy's boolean query adds them).
    fn score(&self, matched: Matched, leaves: &mut SegmentLeaves) -> Option<Score> {
        let required = score(&self.required, matched, leaves)?;
        let mut optional: Option<Score> = None;
        for node in &self.optional {
            if let Some(score) = score(node, matched, leaves) {
                optional = Some(optional.map_or(score, |sum| sum + score));
            }
        }
        Some(optional.map_or(required, |optional| required + optional))
    }
}

impl Node {
    /// The leaves under this part.
    fn span(&self) -> Matched {
        match self {
            Node::Leaf(at) => 1 << at,
            Node::Never => 0,
            Node::Union { span, .. } | Node::Leaves { span } => *span,
            Node::Coordinated { clauses, .. } => clauses.iter().fold(0, |span, clause| span | clause.span()),
        }
    }
}

/// Whether `node` matches, from which leaves do.
fn matches(node: &Node, matched: Matched) -> bool {
    match node {
        Node::Leaf(at) => matched >> at & 1 == 1,
        Node::Never => false,
        Node::Union { span, .. } | Node::Leaves { span } => matched & span != 0,
        Node::Coordinated { clauses, required, .. } => {
            clauses.iter().filter(|clause| matches(clause, matched)).count() >= *required
        }
    }
}

/// `node`'s score, `None` when it does not match: its matching clauses'
/// scores added in their order from zero, as the scorers add them
/// (`union::UnionScorer`, `coordinated::CoordinatedScorer`).
fn score(node: &Node, matched: Matched, leaves: &mut SegmentLeaves) -> Option<Score> {
    match node {
        Node::Leaf(at) => (matched >> at & 1 == 1).then(|| leaves.score(*at)),
        Node::Leaves { span } => {
            let mut on = matched & span;
            if on == 0 {
                return None;
            }
            let mut sum: Score = 0.0;
            while on != 0 {
                sum += leaves.score(on.trailing_zeros() as usize);
                on &= on - 1;
            }
            Some(sum)
        }
        Node::Never => None,
        // No leaf under it matches: nothing to look at.
        Node::Union { span, .. } if matched & span == 0 => None,
        Node::Union { clauses, combine, .. } => {
            combine.scores(clauses.iter().filter_map(|clause| score(clause, matched, leaves)))
        }
        Node::Coordinated { clauses, required, all } => {
            let count = clauses.iter().filter(|clause| matches(clause, matched)).count();
            if count < *required {
                return None;
            }
            let mut sum: Score = 0.0;
            for clause in clauses {
                if let Some(score) = score(clause, matched, leaves) {
                    sum += score;
                }
            }
            Some(if count == *all { sum + sum } else { sum })
        }
    }
}

/// The leaves' scorers in one segment, asked about candidates in order.
struct SegmentLeaves {
    scorers: Vec<Box<dyn Scorer>>,
    /// Each leaf's first note it can match: the candidate it stands on when
    /// its bit of `on` is set.
    next: Vec<DocId>,
    on: Matched,
}

impl SegmentLeaves {
    /// The leaves made near the segment's first candidate (a phrase does not
    /// look for its first match among the notes before it).
    fn new(
        weights: &[Box<dyn Weight>],
        reader: &tantivy::SegmentReader,
        first: DocId,
    ) -> tantivy::Result<Self> {
        let mut leaves = SegmentLeaves {
            scorers: Vec::with_capacity(weights.len()),
            next: vec![TERMINATED; weights.len()],
            on: 0,
        };
        for (at, weight) in weights.iter().enumerate() {
            let (found, scorer) = weight.scorer_danger(reader, first, 1.0)?;
            let empty = scorer.is::<EmptyScorer>();
            leaves.scorers.push(scorer);
            if !empty {
                leaves.settle(at, first, found);
            }
        }
        Ok(leaves)
    }

    /// Which leaves match `doc`, a candidate past the last one asked about.
    /// A miss tells where a leaf can match next; until a candidate reaches
    /// that, the leaf is not asked again (tantivy's `seek_danger` contract:
    /// after a miss, only asked again further on).
    fn matching(&mut self, doc: DocId) -> Matched {
        // The leaves that may match `doc`, found without a branch per leaf (in
        // 64-bit words: a shift of the 128-bit set costs several instructions).
        let mut due: Matched = 0;
        for (word, nexts) in self.next.chunks(64).enumerate() {
            let mut bits: u64 = 0;
            for (at, &next) in nexts.iter().enumerate() {
                bits |= u64::from(next <= doc) << at;
            }
            due |= Matched::from(bits) << (64 * word);
        }
        let mut matched: Matched = 0;
        while due != 0 {
            let at = due.trailing_zeros() as usize;
            due &= due - 1;
            let standing = self.next[at] == doc && self.on >> at & 1 == 1;
            if standing || {
                let found = self.scorers[at].seek_danger(doc);
                self.settle(at, doc, found)
            } {
                matched |= 1 << at;
            }
        }
        matched
    }

    fn settle(&mut self, at: usize, doc: DocId, found: SeekDangerResult) -> bool {
        match found {
            SeekDangerResult::Found => {
                self.next[at] = doc;
                self.on |= 1 << at;
                true
            }
            SeekDangerResult::SeekLowerBound(bound) => {
                self.next[at] = bound.max(doc + 1);
                self.on &= !(1 << at);
                false
            }
        }
    }

    /// Leaf `at`'s score on the candidate it matched.
    fn score(&mut self, at: usize) -> Score {
        self.scorers[at].score()
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use tantivy::collector::TopDocs;
    use tantivy::query::{BoostQuery, EmptyQuery};
    use tantivy::schema::{IndexRecordOption, Schema};
    use tantivy::{DocAddress, Index, Term};

    use super::*;
    use crate::index::query::candidates::only;
    use crate::index::query::terms::{SearchTerms, SharedTermQuery};
    use crate::index::query::test_index::titles_and_bodies;

    /// Every candidate's score's bits, through the query's scorers and here.
    fn both_ways(index: &Index, query: &dyn Query, candidates: &Candidates) -> [Vec<(DocAddress, u32)>; 2] {
        let searcher = index.reader().unwrap().searcher();
        let terms = SearchTerms::new(&searcher, &Default::default());
        let collector = TopDocs::with_limit(1_000).order_by_score();
        let sorted = |mut found: Vec<(Score, DocAddress)>| {
            let mut found: Vec<(DocAddress, u32)> =
                found.drain(..).map(|(score, address)| (address, score.to_bits())).collect();
            found.sort();
            found
        };
        let scorers = searcher.search_with_statistics_provider(query, &collector, &terms).unwrap();
        let here = collect(query, candidates, &searcher, terms.scoring(), &collector)
            .expect("a shape evaluated here");
        [sorted(scorers), sorted(here.unwrap())]
    }

    #[test]
    fn scores_every_candidate_as_the_querys_scorers_do_to_the_last_bit() {
        let (index, title, body) = titles_and_bodies(&[
            ("sync", "sync conflict"),
            ("conflicts", "sync sync resolution conflict"),
            ("other", "resolution resolution"),
            ("sync conflict", "nothing here"),
            ("", "conflict conflict conflict sync"),
            ("resolution", "sync"),
            ("x", "y conflict"),
            ("sync resolution conflict", "sync conflict resolution sync"),
            ("sync conflicts", "conflict syncs resolutions"),
        ]);
        let searcher = index.reader().unwrap().searcher();
        let terms = Arc::new(SearchTerms::new(&searcher, &Default::default()));
        // Every note but one a candidate: a note left out is never scored.
        let all: Vec<DocAddress> = searcher
            .segment_readers()
            .iter()
            .enumerate()
            .flat_map(|(ord, reader)| (0..reader.max_doc()).map(move |doc| DocAddress::new(ord as u32, doc)))
            .filter(|address| *address != DocAddress::new(0, 1))
            .collect();
        let candidates = Arc::new(Candidates::new(&searcher, all));
        let leaf = |field, word: &str, weight: f32| -> Box<dyn Query> {
            let term = SharedTermQuery::new(
                Term::from_field_text(field, word),
                IndexRecordOption::WithFreqs,
                &terms,
            );
            only(&candidates, Box::new(BoostQuery::new(Box::new(term), weight)))
        };
        let across = |word: &str, factor: f32| -> Box<dyn Query> {
            Box::new(UnionQuery {
                clauses: vec![leaf(title, word, 4.0 * factor), leaf(body, word, 0.3 * factor)],
                combine: Combine::Sum,
            })
        };
        let unit = |word: &str, other: &str, tie_breaker: f32| -> Box<dyn Query> {
            Box::new(UnionQuery {
                clauses: vec![across(word, 1.0), across(other, 0.7)],
                combine: Combine::Best { tie_breaker },
            })
        };
        let three = ["sync", "conflict", "resolution"];
        let four = ["sync", "conflict", "resolution", "absent"];
        for (words, tie_breaker) in [(&three[..], 0.0), (&three[..], 0.1), (&four[..], 0.0)] {
            for (required, coordinate) in (1..=words.len()).flat_map(|n| [(n, false), (n, true)]) {
                let coordinated: Box<dyn Query> = Box::new(CoordinatedQuery {
                    clauses: words.iter().map(|word| unit(word, &format!("{word}s"), tie_breaker)).collect(),
                    required,
                    coordinate,
                });
                for optional in 0..=2 {
                    let mut clauses = vec![(Occur::Must, coordinated.box_clone())];
                    clauses.extend(
                        [leaf(title, "conflicts", 12.0), Box::new(EmptyQuery) as Box<dyn Query>]
                            .into_iter()
                            .take(optional)
                            .map(|query| (Occur::Should, query)),
                    );
                    let query = BooleanQuery::new(clauses);
                    let [scorers, here] = both_ways(&index, &query, &candidates);
                    assert_eq!(
                        here, scorers,
                        "{words:?} {tie_breaker}: required {required}, coordinate {coordinate}, optional {optional}"
                    );
                    assert!(required == 4 || !here.is_empty());
                }
            }
        }
        // One word alone, without coordination.
        let query = BooleanQuery::new(vec![(Occur::Must, unit("conflict", "conflicts", 0.0))]);
        let [scorers, here] = both_ways(&index, &query, &candidates);
        assert_eq!(here, scorers);
        assert!(!here.is_empty());
    }

    #[test]
    fn leaves_to_the_scorers_a_shape_it_does_not_evaluate() {
        let searcher = Index::create_in_ram(Schema::builder().build()).reader().unwrap().searcher();
        let candidates = Candidates::new(&searcher, []);
        let terms = SearchTerms::new(&searcher, &Default::default());
        let collector = TopDocs::with_limit(1).order_by_score();
        let excluded = BooleanQuery::new(vec![
            (Occur::Must, Box::new(EmptyQuery) as Box<dyn Query>),
            (Occur::MustNot, Box::new(EmptyQuery)),
        ]);
        let two_required = BooleanQuery::new(vec![
            (Occur::Must, Box::new(EmptyQuery) as Box<dyn Query>),
            (Occur::Must, Box::new(EmptyQuery)),
        ]);
        let three_optional = BooleanQuery::new(vec![
            (Occur::Must, Box::new(EmptyQuery) as Box<dyn Query>),
            (Occur::Should, Box::new(EmptyQuery)),
            (Occur::Should, Box::new(EmptyQuery)),
            (Occur::Should, Box::new(EmptyQuery)),
        ]);
        // More leaves than a set of matches holds bits for.
        let shared = Arc::new(candidates);
        let leaf = || only(&shared, Box::new(EmptyQuery));
        let leaves = |n: usize| -> Box<dyn Query> {
            Box::new(UnionQuery { clauses: (0..n).map(|_| leaf()).collect(), combine: Combine::Sum })
        };
        let many_leaves = BooleanQuery::new(vec![(Occur::Must, leaves(MAX_LEAVES + 1))]);
        let most_leaves = BooleanQuery::new(vec![(Occur::Must, leaves(MAX_LEAVES))]);
        for query in [&excluded as &dyn Query, &two_required, &three_optional, &many_leaves, &EmptyQuery] {
            assert!(collect(query, &shared, &searcher, terms.scoring(), &collector).is_none());
        }
        let none =
            collect(&most_leaves, &shared, &searcher, terms.scoring(), &collector).expect("evaluated here");
        assert!(none.unwrap().is_empty());
    }
}
