//! One search's term lookups, made once however many of its queries use them.
//!
//! A `search_knowledge` search builds its query up to three times (the title
//! side, the candidates, the full query) and bounds the text from the same
//! terms; each tantivy `TermQuery` looks its term up in every segment's
//! dictionary twice (its statistics, then its postings) and computes its BM25
//! weight anew each time it is built, a 256-entry table of length norms with
//! it. [`SearchTerms`] looks each term up once per search: its dictionary entry
//! in every segment, its document frequency and its BM25 weight, and makes each
//! field's table of length norms once (it depends on the field, not the term);
//! [`SharedTermQuery`] is the term leaf that reads them. The numbers are the
//! ones tantivy computes (the same statistics and the same arithmetic as its
//! `Bm25Weight`, which keeps the table private, in a scorer computing what
//! tantivy's `TermScorer` computes, which tantivy does not export), so every
//! score is unchanged to the last bit.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, PoisonError};

use rustc_hash::FxBuildHasher;
use tantivy::fieldnorm::FieldNormReader;
use tantivy::index::SegmentId;
use tantivy::postings::{Postings, SegmentPostings, TermInfo};
use tantivy::query::{
    Bm25StatisticsProvider, Bm25Weight, EmptyScorer, EnableScoring, Explanation, Query, Scorer, TermQuery,
    Weight,
};
use tantivy::schema::{Field, IndexRecordOption};
use tantivy::{DocId, DocSet, Score, Searcher, SegmentReader, TantivyError, Term};

/// BM25's term-frequency saturation and length normalisation, as tantivy sets them.
const K1: Score = 1.2;
const B: Score = 0.75;

/// A field's length norms by fieldnorm id: `K1 * (1 - B + B * length / average)`.
type Norms = Arc<[Score; 256]>;

/// A term as every segment's dictionary holds it, with its statistics.
#[derive(Clone)]
struct TermEntry {
    /// Its dictionary entry in each segment (in the searcher's order).
    infos: Arc<[Option<TermInfo>]>,
    /// Notes holding it, over all segments (deleted ones included, as tantivy counts).
    doc_freq: u64,
    /// Its BM25 weight (`idf * (1 + K1)`), made on first use.
    weight: Option<Score>,
}

/// A field's statistics: its tokens over all notes and its length norms.
struct FieldStats {
    field: Field,
    tokens: u64,
    norms: Option<Norms>,
}

/// Each field's statistics, shared by the searches over one set of segments.
type SharedFieldStats = Arc<Mutex<Vec<FieldStats>>>;

/// The field statistics of the last set of segments searched, kept from one
/// search to the next: they depend on the segments alone (a delete changes
/// neither a segment's tokens nor its documents as BM25 counts them), so a
/// search over the same segments reads them instead of making them again.
#[derive(Default)]
pub(crate) struct FieldStatsCache(Mutex<Option<(Vec<SegmentId>, SharedFieldStats)>>);

impl std::fmt::Debug for FieldStatsCache {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("FieldStatsCache")
    }
}

impl FieldStatsCache {
    /// The statistics kept for `segments`, or a fresh set kept from now on.
    fn for_segments(&self, segments: &[SegmentId]) -> SharedFieldStats {
        let mut kept = self.0.lock().unwrap_or_else(PoisonError::into_inner);
        match &*kept {
            Some((ids, stats)) if ids == segments => Arc::clone(stats),
            _ => {
                let stats = SharedFieldStats::default();
                *kept = Some((segments.to_vec(), Arc::clone(&stats)));
                stats
            }
        }
    }
}

/// The term lookups of one search over one searcher (see the module's doc).
pub(crate) struct SearchTerms {
    searcher: Searcher,
    segments: Vec<SegmentId>,
    total_docs: u64,
    entries: Mutex<HashMap<Term, TermEntry, FxBuildHasher>>,
    fields: SharedFieldStats,
}

impl std::fmt::Debug for SearchTerms {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SearchTerms").field("segments", &self.segments).finish_non_exhaustive()
    }
}

impl SearchTerms {
    /// An empty set of lookups over `searcher`, with the field statistics
    /// `fields` keeps for its segments.
    pub(crate) fn new(searcher: &Searcher, fields: &FieldStatsCache) -> Self {
        let readers = searcher.segment_readers();
        let segments: Vec<SegmentId> = readers.iter().map(SegmentReader::segment_id).collect();
        SearchTerms {
            searcher: searcher.clone(),
            fields: fields.for_segments(&segments),
            segments,
            total_docs: readers.iter().map(|reader| u64::from(reader.max_doc())).sum(),
            // A search looks up a few dozen terms: room for them from the start.
            entries: Mutex::new(HashMap::with_capacity_and_hasher(64, FxBuildHasher)),
        }
    }

    /// `term`'s entry, looked up in every segment the first time.
    fn entry(&self, term: &Term) -> tantivy::Result<TermEntry> {
        if let Some(entry) = self.entries.lock().unwrap_or_else(PoisonError::into_inner).get(term) {
            return Ok(entry.clone());
        }
        let mut doc_freq = 0;
        let mut infos = Vec::with_capacity(self.segments.len());
        for reader in self.searcher.segment_readers() {
            let info = reader.inverted_index(term.field())?.get_term_info(term)?;
            doc_freq += info.as_ref().map_or(0, |info| u64::from(info.doc_freq));
            infos.push(info);
        }
        let entry = TermEntry { infos: Arc::from(infos), doc_freq, weight: None };
        self.entries.lock().unwrap_or_else(PoisonError::into_inner).insert(term.clone(), entry.clone());
        Ok(entry)
    }

    /// `term`'s BM25 weight as tantivy's `TermQuery` makes it, made once.
    fn weight(&self, term: &Term) -> tantivy::Result<(Score, Arc<[Option<TermInfo>]>)> {
        let entry = self.entry(term)?;
        if let Some(weight) = entry.weight {
            return Ok((weight, entry.infos));
        }
        let weight = idf(entry.doc_freq, self.total_docs) * (1.0 + K1);
        if let Some(stored) = self.entries.lock().unwrap_or_else(PoisonError::into_inner).get_mut(term) {
            stored.weight = Some(weight);
        }
        Ok((weight, entry.infos))
    }

    /// `field`'s length norms, made once per search.
    fn norms(&self, field: Field) -> tantivy::Result<Norms> {
        let tokens = self.total_num_tokens(field)?;
        let mut fields = self.fields.lock().unwrap_or_else(PoisonError::into_inner);
        let Some(stats) = fields.iter_mut().find(|stats| stats.field == field) else {
            return Err(TantivyError::InternalError(format!("no statistics for field {field:?}")));
        };
        if let Some(norms) = &stats.norms {
            return Ok(Arc::clone(norms));
        }
        let average = tokens as Score / self.total_docs as Score;
        let mut norms = [0.0; 256];
        for (id, norm) in norms.iter_mut().enumerate() {
            let length = FieldNormReader::id_to_fieldnorm(id as u8) as Score;
            *norm = K1 * (1.0 - B + B * length / average);
        }
        let norms: Norms = Arc::new(norms);
        stats.norms = Some(Arc::clone(&norms));
        Ok(norms)
    }

    /// The most one term in `field` can score (tantivy's `Bm25Weight::max_score`),
    /// 0 when no note holds it.
    pub(crate) fn max_score(&self, term: &Term) -> tantivy::Result<Score> {
        if self.doc_freq(term)? == 0 {
            return Ok(0.0);
        }
        let (weight, _) = self.weight(term)?;
        let norms = self.norms(term.field())?;
        Ok(bm25(weight, &norms, u8::MAX, 2_013_265_944))
    }

    /// Which of `docs` (sorted ids in the searcher's segment `segment`) hold
    /// `term`, read from its postings with the entry this search looked up.
    pub(crate) fn holders(&self, term: &Term, segment: usize, docs: &[DocId]) -> tantivy::Result<Vec<DocId>> {
        let entry = self.entry(term)?;
        let (Some(Some(info)), Some(reader)) =
            (entry.infos.get(segment), self.searcher.segment_readers().get(segment))
        else {
            return Ok(Vec::new());
        };
        let mut postings = reader
            .inverted_index(term.field())?
            .read_postings_from_terminfo(info, IndexRecordOption::Basic)?;
        Ok(docs.iter().copied().filter(|&doc| postings.doc() <= doc && postings.seek(doc) == doc).collect())
    }

    /// Where `reader` stands among the searcher's segments.
    fn segment_of(&self, reader: &SegmentReader) -> Option<usize> {
        let id = reader.segment_id();
        self.segments.iter().position(|segment| *segment == id)
    }

    /// The scoring of queries over these lookups: every term statistic comes
    /// from here.
    pub(crate) fn scoring(&self) -> EnableScoring<'_> {
        EnableScoring::enabled_from_statistics_provider(self, &self.searcher)
    }

    /// Notes holding `term` (see [`Bm25StatisticsProvider::doc_freq`]).
    pub(crate) fn doc_freq(&self, term: &Term) -> tantivy::Result<u64> {
        Ok(self.entry(term)?.doc_freq)
    }

    /// The searcher these lookups are made in.
    pub(crate) fn searcher(&self) -> &Searcher {
        &self.searcher
    }
}

impl Bm25StatisticsProvider for SearchTerms {
    fn total_num_tokens(&self, field: Field) -> tantivy::Result<u64> {
        let mut fields = self.fields.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some(stats) = fields.iter().find(|stats| stats.field == field) {
            return Ok(stats.tokens);
        }
        let tokens = Bm25StatisticsProvider::total_num_tokens(&self.searcher, field)?;
        fields.push(FieldStats { field, tokens, norms: None });
        Ok(tokens)
    }

    fn total_num_docs(&self) -> tantivy::Result<u64> {
        Ok(self.total_docs)
    }

    fn doc_freq(&self, term: &Term) -> tantivy::Result<u64> {
        SearchTerms::doc_freq(self, term)
    }
}

/// A term leaf reading its statistics and dictionary entries from a search's
/// [`SearchTerms`]: scores exactly as `TermQuery` does.
#[derive(Clone)]
pub(crate) struct SharedTermQuery {
    term: Term,
    option: IndexRecordOption,
    terms: Arc<SearchTerms>,
}

impl std::fmt::Debug for SharedTermQuery {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "SharedTermQuery({:?})", self.term)
    }
}

impl SharedTermQuery {
    pub(crate) fn new(term: Term, option: IndexRecordOption, terms: &Arc<SearchTerms>) -> Self {
        SharedTermQuery { term, option, terms: Arc::clone(terms) }
    }
}

impl Query for SharedTermQuery {
    fn weight(&self, scoring: EnableScoring<'_>) -> tantivy::Result<Box<dyn Weight>> {
        // Without scores (a condition) or over another searcher, tantivy's own leaf.
        let ours = match scoring {
            EnableScoring::Enabled { searcher, .. } => {
                searcher.segment_readers().len() == self.terms.segments.len()
                    && searcher
                        .segment_readers()
                        .iter()
                        .zip(&self.terms.segments)
                        .all(|(r, s)| r.segment_id() == *s)
            }
            EnableScoring::Disabled { .. } => false,
        };
        if !ours {
            return TermQuery::new(self.term.clone(), self.option).weight(scoring);
        }
        let (weight, infos) = self.terms.weight(&self.term)?;
        let norms = self.terms.norms(self.term.field())?;
        Ok(Box::new(SharedTermWeight {
            term: self.term.clone(),
            option: self.option,
            weight,
            norms,
            infos,
            terms: Arc::clone(&self.terms),
        }))
    }

    fn query_terms<'a>(&'a self, visitor: &mut dyn FnMut(&'a Term, bool)) {
        visitor(&self.term, false);
    }
}

struct SharedTermWeight {
    term: Term,
    option: IndexRecordOption,
    weight: Score,
    norms: Norms,
    infos: Arc<[Option<TermInfo>]>,
    terms: Arc<SearchTerms>,
}

impl SharedTermWeight {
    fn term_scorer(&self, reader: &SegmentReader, boost: Score) -> tantivy::Result<Option<SharedTermScorer>> {
        let info = match self.terms.segment_of(reader) {
            Some(at) => self.infos[at].clone(),
            // Not a segment of the search's searcher: look it up here.
            None => reader.inverted_index(self.term.field())?.get_term_info(&self.term)?,
        };
        let Some(info) = info else { return Ok(None) };
        let postings =
            reader.inverted_index(self.term.field())?.read_postings_from_terminfo(&info, self.option)?;
        let fieldnorms = match reader.fieldnorms_readers().get_field(self.term.field())? {
            Some(fieldnorms) => fieldnorms,
            None => FieldNormReader::constant(reader.max_doc(), 1),
        };
        // As tantivy's `Bm25Weight::boost_by`.
        let weight = if boost == 1.0 { self.weight } else { self.weight * boost };
        Ok(Some(SharedTermScorer { postings, fieldnorms, weight, norms: Arc::clone(&self.norms) }))
    }
}

impl Weight for SharedTermWeight {
    fn scorer(&self, reader: &SegmentReader, boost: Score) -> tantivy::Result<Box<dyn Scorer>> {
        Ok(match self.term_scorer(reader, boost)? {
            Some(scorer) => Box::new(scorer),
            None => Box::new(EmptyScorer),
        })
    }

    fn explain(&self, reader: &SegmentReader, doc: DocId) -> tantivy::Result<Explanation> {
        let does_not_match = || TantivyError::InvalidArgument(format!("document {doc} does not match"));
        let Some(mut scorer) = self.term_scorer(reader, 1.0)? else { return Err(does_not_match()) };
        if scorer.doc() > doc || scorer.seek(doc) != doc {
            return Err(does_not_match());
        }
        let average =
            self.terms.total_num_tokens(self.term.field())? as Score / self.terms.total_docs as Score;
        let doc_freq = self.terms.doc_freq(&self.term)?;
        let weight = Bm25Weight::for_one_term_without_explain(doc_freq, self.terms.total_docs, average);
        Ok(weight.explain(scorer.fieldnorm_id(), scorer.postings.term_freq()))
    }
}

/// A term's postings in one segment, scored by BM25 as tantivy's `TermScorer` scores them.
struct SharedTermScorer {
    postings: SegmentPostings,
    fieldnorms: FieldNormReader,
    /// The term's weight, boosted.
    weight: Score,
    norms: Norms,
}

impl SharedTermScorer {
    fn fieldnorm_id(&self) -> u8 {
        self.fieldnorms.fieldnorm_id(self.postings.doc())
    }
}

impl DocSet for SharedTermScorer {
    fn advance(&mut self) -> DocId {
        self.postings.advance()
    }

    fn seek(&mut self, target: DocId) -> DocId {
        self.postings.seek(target)
    }

    fn doc(&self) -> DocId {
        self.postings.doc()
    }

    fn size_hint(&self) -> u32 {
        self.postings.size_hint()
    }
}

impl Scorer for SharedTermScorer {
    fn score(&mut self) -> Score {
        bm25(self.weight, &self.norms, self.fieldnorm_id(), self.postings.term_freq())
    }
}

/// A term's inverse document frequency, as tantivy computes it.
fn idf(doc_freq: u64, notes: u64) -> Score {
    let x = (notes.saturating_sub(doc_freq) as Score + 0.5) / (doc_freq as Score + 0.5);
    (1.0 + x).ln()
}

/// A note's BM25 score for a term of `weight`, as tantivy's `Bm25Weight::score`.
#[inline]
fn bm25(weight: Score, norms: &[Score; 256], fieldnorm_id: u8, term_freq: u32) -> Score {
    let term_freq = term_freq as Score;
    weight * (term_freq / (term_freq + norms[usize::from(fieldnorm_id)]))
}
