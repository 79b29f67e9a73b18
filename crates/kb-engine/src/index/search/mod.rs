//! Searches: a request in, a page of explained hits out. This file runs the
//! tiers of a search (real matches, then lone CJK characters) and levels the
//! page; its neighbours hold the request and its hits (`request`), one tier's
//! query, relaxation and typo tolerance (`tier`), what a question gets beyond
//! keywords (`question`), `search_knowledge`'s title-side shortcut
//! (`shortcut`) and the collectors it runs (`collectors`), notes in a rival
//! language ranked lower (`rivals`), and why a hit matched (`explain`).

mod collectors;
mod explain;
mod question;
mod request;
mod rivals;
mod shortcut;
mod tier;

pub use request::{NoteTexts, SearchHit, SearchOutcome, SearchPasses, SearchRequest, SearchScope};

use std::collections::BTreeSet;
use std::sync::Arc;

use tantivy::DocAddress;

use super::SearchIndex;
use super::query;
use super::standing;
use crate::error::{Error, Result};

/// The most threads one search uses (one per core up to this).
pub(super) const SEARCH_THREADS: usize = 4;

/// Whether `query` is a question put as a sentence (see `question::is_question`):
/// the semantic layer reorders the pages of questions only.
pub fn is_question_query(query: &str) -> bool {
    question::is_question(&query::parse(query))
}

/// The best hits, best first, and how many notes matched.
type Page = (Vec<(f32, DocAddress)>, usize);

impl SearchIndex {
    /// Runs a search. A question put as a sentence (see `QUESTION_WORDS_MIN`)
    /// asked through a tool (with `texts`) is also ranked by the other tool, and
    /// its page ordered by both rankings (`fusion`).
    pub fn search(&self, request: &SearchRequest<'_>) -> Result<SearchOutcome> {
        let plan = query::parse(request.query);
        if plan.is_empty() {
            return Err(Error::invalid("the query has no words to search for")
                .with_hint("give one or more words, a \"quoted phrase\", or -words to exclude"));
        }
        let mut outcome = self.search_scope(request, &plan)?;
        if question::is_question(&plan)
            && request.texts.is_some()
            && outcome.strict > 1
            && request.passes.fusion
        {
            self.fuse_with_other_tool(request, &plan, &mut outcome)?;
        }
        standing::level(&mut outcome.hits, outcome.strict);
        Ok(outcome)
    }

    /// A search in its own tool's fields alone.
    fn search_scope(&self, request: &SearchRequest<'_>, plan: &query::QueryPlan) -> Result<SearchOutcome> {
        let searcher = self.reader.searcher();
        let lookups = Arc::new(query::SearchTerms::new(&searcher, &self.field_stats));
        let limit = request.limit.max(1);
        let rivals = self.rival_languages(&lookups, request.query);
        let tier = |plan: &query::QueryPlan, strength: query::Strength| {
            self.search_plan(&lookups, request, plan, strength, limit, rivals.as_ref())
        };
        if !plan.has_weak_units() {
            return tier(plan, query::Strength::Any);
        }
        // Real matches first (a note holding a word or bigram of the query), then,
        // when they do not fill the page, the notes holding lone characters only.
        let strong = plan.strong_units();
        let mut outcome = tier(plan, query::Strength::Real(strong.clone()))?;
        if outcome.hits.len() < limit {
            let weak = tier(&plan.lone_characters(), query::Strength::WeakOnly(strong))?;
            let seen: BTreeSet<String> = outcome.hits.iter().map(|hit| hit.record.path.clone()).collect();
            let more = weak.hits.into_iter().filter(|hit| !seen.contains(&hit.record.path));
            outcome
                .hits
                .extend(more.map(|hit| SearchHit { weak: true, ..hit }).take(limit - outcome.hits.len()));
            outcome.total += weak.total;
        }
        Ok(outcome)
    }
}
