//! One tier of a search: the query for the notes it admits, in the scope's
//! fields and weights, run on one thread or several; relaxed to any one word,
//! then made typo-tolerant, when stricter matching finds too little; its hits
//! read from the index and put in a deterministic order.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

use tantivy::collector::{Count, TopDocs};
use tantivy::query::Query;
use tantivy::schema::Field;
use tantivy::{DocAddress, Executor, SegmentReader, TantivyDocument, Term};

use super::explain::matched_fields;
use super::question::{is_question, question_weights};
use super::rivals::Rivals;
use super::{Page, SearchHit, SearchOutcome, SearchRequest, SearchScope};
use crate::error::Result;
use crate::index::errors::tantivy_error;
use crate::index::{SearchIndex, fuzzy, query, tokenizer};

/// Postings (notes whose body holds a query's terms, summed over its terms)
/// from which a content search visits the segments on several threads. Below
/// it the hand-off costs more than it saves (a no-hit search takes 0.15 ms
/// alone, 0.3 ms spread); above it a one-word search at 10k notes already
/// gains a sixth, three common words at 100k notes a third.
const PARALLEL_POSTINGS: u64 = 2_000;

impl SearchIndex {
    /// One tier of a search: the notes `strength` admits, ranked.
    pub(super) fn search_plan(
        &self,
        lookups: &Arc<query::SearchTerms>,
        request: &SearchRequest<'_>,
        plan: &query::QueryPlan,
        strength: query::Strength,
        limit: usize,
        rivals: Option<&Rivals>,
    ) -> Result<SearchOutcome> {
        let searcher = lookups.searcher();
        let fields = &self.schema.fields;
        let weights = &self.schema.weights[request.scope.weights_key()];
        let question_weights_kept: Vec<(Field, f32)>;
        let question = is_question(plan);
        let weights: &[(Field, f32)] = if request.scope == SearchScope::Knowledge && question {
            question_weights_kept = question_weights(weights, fields.body);
            &question_weights_kept
        } else {
            weights
        };
        let filters = query::Filters {
            tags: request.tags.iter().map(|t| t.trim().trim_start_matches('#').to_lowercase()).collect(),
            folder: request.folder.map(|folder| folder.as_str().to_owned()),
            strength,
        };
        let mut relaxed = false;
        let min_share = request.scope.min_share();
        let boosts = match request.scope {
            // Title fields weigh a word by its rarity among titles, where any word is
            // rare; the whole vault's text says how much a word tells.
            SearchScope::Knowledge => self.rarity_boosts(lookups, plan),
            // Body BM25 already weighs words by their rarity in the text.
            SearchScope::Content => BTreeMap::new(),
        };
        let mut terms = plan.positive_terms();
        let executor = match request.scope {
            SearchScope::Content => self.executor_for(lookups, &terms),
            // Spreading a search over threads pays when its postings are long; a
            // `search_knowledge` search is slower spread (a third at 10k notes with
            // three words, measured on two busy cores), as it was before it read the text.
            SearchScope::Knowledge => &Executor::SingleThread,
        };
        let parts = query::QueryParts {
            plan,
            fields,
            weights,
            filters: &filters,
            min_share,
            boosts: &boosts,
            terms: lookups,
        };
        // A question's feedback reads the first pass's best notes, however few
        // the page holds, and ranks them again.
        let texts = request.texts.filter(|_| question && request.passes.feedback);
        let first_limit = if texts.is_some() { limit.max(query::FEEDBACK_NOTES) } else { limit };
        let shortcut = match request.scope {
            SearchScope::Knowledge if request.passes.title_shortcut => {
                self.titles_first(&parts, first_limit, rivals)?
            }
            SearchScope::Knowledge | SearchScope::Content => None,
        };
        let (mut top, mut total) = match shortcut {
            Some(found) => found,
            None => {
                let built = query::build(&parts, false);
                self.run(lookups, built.as_ref(), first_limit, executor, rivals)?
            }
        };
        if let Some(texts) = texts
            && let Some(expanded) = self.with_feedback(searcher, &parts, &top, texts)
        {
            // The first pass counted the notes matching; the second scores some of them.
            (top, _) = self.run(lookups, expanded.as_ref(), limit, executor, rivals)?;
        }
        top.truncate(limit);
        // Notes holding fewer of the words, ranked after those holding enough.
        let mut fill = Vec::new();
        if total < limit && !plan.words.is_empty() && min_share > 0.0 && plan.units().len() > 1 {
            let any = query::build(&parts, true);
            let (more, any_total) = self.run(lookups, any.as_ref(), limit, executor, rivals)?;
            if total == 0 {
                relaxed = true;
                (top, total) = (more, any_total);
            } else {
                let strict: BTreeSet<DocAddress> = top.iter().map(|(_, address)| *address).collect();
                fill = more.into_iter().filter(|(_, address)| !strict.contains(address)).collect();
                fill.truncate(limit - top.len());
                total = any_total;
            }
        } else if total == 0 && !plan.words.is_empty() {
            relaxed = true;
            // Needing any one term is the query just run when it needed one already.
            if query::required_clauses(plan.units().len(), min_share, false) > 1 {
                let any = query::build(&parts, true);
                (top, total) = self.run(lookups, any.as_ref(), limit, executor, rivals)?;
            }
        }
        let mut fuzzy = false;
        if total == 0
            && let Some(typo_tolerant) = query::build_fuzzy(&parts)
        {
            fuzzy = true;
            (top, total) = self.run(lookups, typo_tolerant.as_ref(), limit, executor, rivals)?;
            // What the mistyped words matched, so hits show where and snippets highlight it.
            let searched: Vec<Field> =
                weights.iter().map(|&(field, _)| field).filter(|&field| field != fields.name_key).collect();
            terms.extend(fuzzy::expansions(searcher, &searched, plan.units().iter().map(String::as_str)));
        }
        let strict_hits = top.len();
        let page: Vec<(f32, DocAddress)> = top.into_iter().chain(fill).collect();
        // Only `search_knowledge` shows where a hit matched; its hits show no
        // headings, so which hold a term there is read from the index rather
        // than by decoding and analysing every heading.
        let knowledge = request.scope == SearchScope::Knowledge;
        let in_headings = if knowledge {
            self.holding(lookups, fields.headings, &terms, &page)
                .map_err(|e| tantivy_error("reading which hits' headings match", e))?
        } else {
            BTreeSet::new()
        };
        let mut hits = Vec::with_capacity(page.len());
        let mut finder = tokenizer::TermFinder::new(&terms);
        for (score, address) in page {
            let read = if knowledge {
                self.lean_hit_record(searcher, address)
            } else {
                searcher.doc(address).map(|doc: TantivyDocument| self.hit_record_of(&doc, true))
            };
            let read = read.map_err(|e| tantivy_error("reading a hit's stored record", e))?;
            let Some(record) = read else { continue };
            let matched = if knowledge {
                matched_fields(&record, &mut finder, in_headings.contains(&address))
            } else {
                Vec::new()
            };
            let explanation =
                request.explain.then(|| self.explain(searcher, address, plan, weights, relaxed));
            hits.push(SearchHit { record, score, matched, explanation, weak: false });
        }
        // Equal scores come out in path order, so results are identical run to run.
        let order = |a: &SearchHit, b: &SearchHit| {
            b.score.total_cmp(&a.score).then_with(|| a.record.path.cmp(&b.record.path))
        };
        let strict_hits = strict_hits.min(hits.len());
        hits[..strict_hits].sort_by(order);
        hits[strict_hits..].sort_by(order);
        Ok(SearchOutcome { total, hits, terms, relaxed, fuzzy, strict: strict_hits })
    }

    /// Each query term's boost from its informativeness in the note bodies.
    fn rarity_boosts(&self, lookups: &query::SearchTerms, plan: &query::QueryPlan) -> BTreeMap<String, f32> {
        let units = plan.units();
        if units.len() < 2 {
            return BTreeMap::new();
        }
        let documents = lookups.searcher().num_docs();
        let body = self.schema.fields.body;
        let informativeness = units
            .into_iter()
            .map(|unit| {
                let frequency = lookups.doc_freq(&Term::from_field_text(body, &unit)).unwrap_or(0);
                let info = query::informativeness(frequency, documents);
                (unit, info)
            })
            .collect();
        query::rarity_boosts(&informativeness)
    }

    /// Runs `query` for its best `limit` notes (a rival language's notes keeping
    /// their share of the score) and counts every note it matches.
    fn run(
        &self,
        lookups: &query::SearchTerms,
        query: &dyn Query,
        limit: usize,
        executor: &Executor,
        rivals: Option<&Rivals>,
    ) -> Result<Page> {
        let (searcher, scoring) = (lookups.searcher(), lookups.scoring());
        let Some(rivals) = rivals else {
            let collector = (TopDocs::with_limit(limit).order_by_score(), Count);
            return searcher
                .search_with_executor(query, &collector, executor, scoring)
                .map_err(|e| tantivy_error("searching", e));
        };
        let share = self.rival_share(rivals);
        let tweaked =
            TopDocs::with_limit(limit).tweak_score(move |segment: &SegmentReader| share.of(segment));
        searcher
            .search_with_executor(query, &(tweaked, Count), executor, scoring)
            .map_err(|e| tantivy_error("searching", e))
    }

    /// Where a content search runs: on several threads when its terms' postings
    /// in the note bodies (what it mostly walks) reach [`PARALLEL_POSTINGS`] and
    /// the index has several segments; on the calling thread otherwise.
    fn executor_for(&self, lookups: &query::SearchTerms, terms: &BTreeSet<String>) -> &Executor {
        const HERE: &Executor = &Executor::SingleThread;
        let Some(parallel) = &self.parallel else { return HERE };
        if lookups.searcher().segment_readers().len() < 2 {
            return HERE;
        }
        let body = self.schema.fields.body;
        let mut postings = 0;
        for term in terms {
            postings += lookups.doc_freq(&Term::from_field_text(body, term)).unwrap_or(0);
            if postings >= PARALLEL_POSTINGS {
                return parallel;
            }
        }
        HERE
    }
}
