//! One search's term lookups, made once however many of its queries use them.
//!
//! A `search_knowledge` search builds its query up to three times (the title
//! side, the candidates, the full query) and bounds the text from the same
//! terms; each tantivy `TermQuery` looks its term up in every segment's
//! dictionary twice (its statistics, then its postings) and computes its BM25
//! weight anew each time it is built. [`SearchTerms`] looks each term up once
//! per search: its dictionary entry in every segment, its document frequency
//! and its BM25 weight; [`SharedTermQuery`] is the term leaf that reads them.
//! The numbers are the ones tantivy computes (the same statistics, the same
//! `Bm25Weight`, a scorer computing what tantivy's `TermScorer` computes, which
//! tantivy does not export), so every score is unchanged.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, PoisonError};

use tantivy::fieldnorm::FieldNormReader;
use tantivy::index::SegmentId;
use tantivy::postings::{Postings, SegmentPostings, TermInfo};
use tantivy::query::{
    Bm25StatisticsProvider, Bm25Weight, EmptyScorer, EnableScoring, Explanation, Query, Scorer, TermQuery,
    Weight,
};
use tantivy::schema::{Field, IndexRecordOption};
use tantivy::{DocId, DocSet, Score, Searcher, SegmentReader, TantivyError, Term};

/// A term as every segment's dictionary holds it, with its statistics.
#[derive(Clone)]
struct TermEntry {
    /// Its dictionary entry in each segment (in the searcher's order).
    infos: Arc<[Option<TermInfo>]>,
    /// Notes holding it, over all segments (deleted ones included, as tantivy counts).
    doc_freq: u64,
    /// Its BM25 weight, made on first use.
    weight: Option<Bm25Weight>,
}

/// The term lookups of one search over one searcher (see the module's doc).
pub(crate) struct SearchTerms {
    searcher: Searcher,
    segments: Vec<SegmentId>,
    total_docs: u64,
    entries: Mutex<HashMap<Term, TermEntry>>,
    tokens: Mutex<HashMap<Field, u64>>,
}

impl std::fmt::Debug for SearchTerms {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SearchTerms").field("segments", &self.segments).finish_non_exhaustive()
    }
}

impl SearchTerms {
    /// An empty set of lookups over `searcher`.
    pub(crate) fn new(searcher: &Searcher) -> Self {
        let readers = searcher.segment_readers();
        SearchTerms {
            searcher: searcher.clone(),
            segments: readers.iter().map(SegmentReader::segment_id).collect(),
            total_docs: readers.iter().map(|reader| u64::from(reader.max_doc())).sum(),
            entries: Mutex::new(HashMap::new()),
            tokens: Mutex::new(HashMap::new()),
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

    /// `term`'s BM25 weight as tantivy's `TermQuery` makes it (without its
    /// explanation, which no score reads), made once.
    fn weight(&self, term: &Term) -> tantivy::Result<(Bm25Weight, Arc<[Option<TermInfo>]>)> {
        let entry = self.entry(term)?;
        if let Some(weight) = entry.weight {
            return Ok((weight, entry.infos));
        }
        let tokens = self.total_num_tokens(term.field())?;
        let average_fieldnorm = tokens as Score / self.total_docs as Score;
        let weight =
            Bm25Weight::for_one_term_without_explain(entry.doc_freq, self.total_docs, average_fieldnorm);
        if let Some(stored) = self.entries.lock().unwrap_or_else(PoisonError::into_inner).get_mut(term) {
            stored.weight = Some(weight.clone());
        }
        Ok((weight, entry.infos))
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
        if let Some(&tokens) = self.tokens.lock().unwrap_or_else(PoisonError::into_inner).get(&field) {
            return Ok(tokens);
        }
        let tokens = Bm25StatisticsProvider::total_num_tokens(&self.searcher, field)?;
        self.tokens.lock().unwrap_or_else(PoisonError::into_inner).insert(field, tokens);
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
        Ok(Box::new(SharedTermWeight {
            term: self.term.clone(),
            option: self.option,
            weight,
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
    weight: Bm25Weight,
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
        Ok(Some(SharedTermScorer { postings, fieldnorms, weight: self.weight.boost_by(boost) }))
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
        Ok(scorer.weight.explain(scorer.fieldnorm_id(), scorer.postings.term_freq()))
    }
}

/// A term's postings in one segment, scored by BM25 as tantivy's `TermScorer` scores them.
struct SharedTermScorer {
    postings: SegmentPostings,
    fieldnorms: FieldNormReader,
    weight: Bm25Weight,
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
        self.weight.score(self.fieldnorm_id(), self.postings.term_freq())
    }
}
