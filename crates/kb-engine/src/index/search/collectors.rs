//! The collectors the title-side shortcut runs: every note a query matches
//! with its score, and the best page of candidates, raising the bar the
//! candidates' pass skips below. Both apply a rival language's share.

use std::cmp::Reverse;
use std::collections::BinaryHeap;
use std::sync::Arc;

use tantivy::collector::{Collector, SegmentCollector};
use tantivy::{DocAddress, DocId, Score, SegmentReader};

use super::rivals::{RivalShare, Rivals, ShareOf, share_in};
use crate::index::{SearchIndex, query};

impl SearchIndex {
    /// Every note a query matches, with its score (a rival language's share of it).
    pub(super) fn every_match(&self, rivals: Option<&Rivals>) -> EveryMatch {
        EveryMatch { share: rivals.map(|rivals| self.rival_share(rivals)) }
    }
}

/// Collects every note a query matches with its score (after a rival
/// language's share), in document order segment by segment.
pub(super) struct EveryMatch {
    share: Option<RivalShare>,
}

impl Collector for EveryMatch {
    type Fruit = Vec<(Score, DocAddress)>;
    type Child = EveryMatchInSegment;

    fn for_segment(&self, segment_ord: u32, segment: &SegmentReader) -> tantivy::Result<Self::Child> {
        let share = share_in(self.share.as_ref(), segment);
        Ok(EveryMatchInSegment { segment_ord, share, found: Vec::new() })
    }

    fn requires_scoring(&self) -> bool {
        true
    }

    fn merge_fruits(&self, found: Vec<Self::Fruit>) -> tantivy::Result<Self::Fruit> {
        Ok(found.concat())
    }
}

pub(super) struct EveryMatchInSegment {
    segment_ord: u32,
    share: ShareOf,
    found: Vec<(Score, DocAddress)>,
}

impl SegmentCollector for EveryMatchInSegment {
    type Fruit = Vec<(Score, DocAddress)>;

    fn collect(&mut self, doc: DocId, score: Score) {
        self.found.push(((self.share)(doc, score), DocAddress::new(self.segment_ord, doc)));
    }

    fn harvest(self) -> Self::Fruit {
        self.found
    }
}

/// The best `limit` notes in tantivy's page order (score, then address), as
/// `TopDocs` keeps them, raising `bar` to the page's last score once it is
/// full (see `query::Bar`).
pub(super) struct BarredTop {
    limit: usize,
    bar: Arc<query::Bar>,
    share: Option<RivalShare>,
}

impl BarredTop {
    /// The best `limit` notes, each keeping `share` of its score.
    pub(super) fn new(limit: usize, bar: Arc<query::Bar>, share: Option<RivalShare>) -> Self {
        BarredTop { limit, bar, share }
    }
}

/// A note on a page being collected: better is a higher score, then a lower address.
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
struct Standing {
    /// The score's bits (scores are never negative, so the bits order as they do).
    score: u32,
    address: Reverse<DocAddress>,
}

impl Collector for BarredTop {
    type Fruit = Vec<(Score, DocAddress)>;
    type Child = BarredTopInSegment;

    fn for_segment(&self, segment_ord: u32, segment: &SegmentReader) -> tantivy::Result<Self::Child> {
        let share = share_in(self.share.as_ref(), segment);
        Ok(BarredTopInSegment {
            segment_ord,
            limit: self.limit,
            bar: Arc::clone(&self.bar),
            share,
            page: BinaryHeap::with_capacity(self.limit + 1),
        })
    }

    fn requires_scoring(&self) -> bool {
        true
    }

    fn merge_fruits(&self, found: Vec<Self::Fruit>) -> tantivy::Result<Self::Fruit> {
        let mut page = found.concat();
        page.sort_by(|a, b| b.0.total_cmp(&a.0).then_with(|| a.1.cmp(&b.1)));
        page.truncate(self.limit);
        Ok(page)
    }
}

pub(super) struct BarredTopInSegment {
    segment_ord: u32,
    limit: usize,
    bar: Arc<query::Bar>,
    share: ShareOf,
    /// The page so far, its worst note on top.
    page: BinaryHeap<Reverse<Standing>>,
}

impl SegmentCollector for BarredTopInSegment {
    type Fruit = Vec<(Score, DocAddress)>;

    fn collect(&mut self, doc: DocId, score: Score) {
        let score = (self.share)(doc, score).max(0.0);
        let standing =
            Standing { score: score.to_bits(), address: Reverse(DocAddress::new(self.segment_ord, doc)) };
        if self.page.len() < self.limit {
            self.page.push(Reverse(standing));
        } else if self.page.peek().is_some_and(|worst| standing > worst.0) {
            self.page.pop();
            self.page.push(Reverse(standing));
        } else {
            return;
        }
        if self.page.len() == self.limit
            && let Some(worst) = self.page.peek()
        {
            self.bar.raise(Score::from_bits(worst.0.score));
        }
    }

    fn harvest(self) -> Self::Fruit {
        self.page
            .into_iter()
            .map(|Reverse(standing)| (Score::from_bits(standing.score), standing.address.0))
            .collect()
    }
}
