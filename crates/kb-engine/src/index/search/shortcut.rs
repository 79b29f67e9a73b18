//! `search_knowledge`'s title-side shortcut: its page from the notes matching
//! in their titles, aliases, descriptions and tags alone, taken only when that
//! is provably the page the full query gives.

use std::sync::Arc;

use tantivy::query::Bm25Weight;
use tantivy::schema::Field;
use tantivy::{DocAddress, Executor, Term};

use super::Page;
use super::collectors::BarredTop;
use super::rivals::Rivals;
use crate::error::Result;
use crate::index::errors::tantivy_error;
use crate::index::{SearchIndex, query};

/// Most title-side matches `search_knowledge` scores alone before it walks the
/// text of every note instead (each costs a few skip-list seeks per text term).
const TITLE_CANDIDATES_MAX: usize = 4_000;

impl SearchIndex {
    /// `search_knowledge`'s page from its title-side matches alone, when that is
    /// provably the page the full query gives; `None` when the full query must run.
    ///
    /// The title-side fields (title and file name, aliases, description, tags,
    /// exact name) find candidates cheaply; the full query then scores only those,
    /// text evidence included, each exactly as it would score among all notes.
    /// A note matching only in its headings or text can score at most
    /// [`query::Outside::unreached`]: when the page is full and its last note
    /// scores above that, no such note belongs on it. The title side is scored
    /// first, and a candidate whose title-side score plus the most its text can
    /// add ([`query::Outside::with_reached`]) cannot reach the page is left out
    /// before the full query scores any. Otherwise (few title matches, or
    /// text evidence that could win) the full query runs, so a note found only by
    /// its text still comes back. `total` then counts the title-side matches: the
    /// notes matching only in their text were not counted (nor needed).
    pub(super) fn titles_first(
        &self,
        parts: &query::QueryParts<'_>,
        limit: usize,
        rivals: Option<&Rivals>,
    ) -> Result<Option<Page>> {
        let lookups = parts.terms;
        let searcher = lookups.searcher();
        let (plan, weights) = (parts.plan, parts.weights);
        if plan.units().is_empty() && plan.phrases.is_empty() {
            return Ok(None);
        }
        let fields = &self.schema.fields;
        let title_side: Vec<Field> = weights
            .iter()
            .map(|&(field, _)| field)
            .filter(|field| *field != fields.headings && *field != fields.body)
            .collect();
        let titles = query::build_reaching(parts, false, &query::Reach::Fields(title_side.clone()));
        let found = searcher
            .search_with_executor(
                titles.as_ref(),
                &self.every_match(rivals),
                &Executor::SingleThread,
                lookups.scoring(),
            )
            .map_err(|e| tantivy_error("searching titles", e))?;
        if found.len() < limit || found.len() > TITLE_CANDIDATES_MAX {
            return Ok(None);
        }
        let max_score = |field: Field, texts: &[&str]| -> f32 {
            let terms: Vec<Term> = texts.iter().map(|text| Term::from_field_text(field, text)).collect();
            // A statistic that cannot be read leaves no bound: the full query runs.
            let absent = terms
                .iter()
                .map(|term| lookups.doc_freq(term))
                .try_fold(false, |absent, df| df.map(|df| absent || df == 0));
            match (absent, &terms[..]) {
                // No note holds the term (a stem that is no word, say): it scores nothing.
                (Ok(true), _) => 0.0,
                (Ok(false), [term]) => lookups.max_score(term).unwrap_or(f32::INFINITY),
                (Ok(false), _) => Bm25Weight::for_terms(&**lookups, &terms)
                    .map_or(f32::INFINITY, |weight| weight.max_score()),
                (Err(_), _) => f32::INFINITY,
            }
        };
        let outside = query::bound_outside(parts, &title_side, &max_score);
        let bound = outside.unreached();
        // A candidate's full score is at least its title-side score (the text only
        // adds), so the page's last note scores at least the limit-th best of
        // these; and it must score above `bound`. A candidate whose title-side
        // score plus the most its text can add reaches neither is never scored.
        let mut title_scores: Vec<f32> = found.iter().map(|&(score, _)| score).collect();
        let (_, &mut floor, _) = title_scores.select_nth_unstable_by(limit - 1, |a, b| b.total_cmp(a));
        let kept: Vec<(DocAddress, f32)> = found
            .iter()
            .map(|&(score, address)| (address, outside.with_reached(score)))
            .filter(|&(_, most)| most >= floor && most > bound)
            .collect();
        if kept.len() < limit {
            return Ok(None);
        }
        let matched = found.len();
        // As the page fills, a candidate whose most falls below its last score
        // is passed over (see `query::Bar`).
        let bar = Arc::new(query::Bar::default());
        let candidates = Arc::new(query::Candidates::bounded(searcher, kept, Some(Arc::clone(&bar))));
        let scored = query::build_reaching(parts, false, &query::Reach::Candidates(Arc::clone(&candidates)));
        // Rivals only lose score, so the bound on the other notes still holds.
        let collector = BarredTop::new(limit, bar, rivals.map(|rivals| self.rival_share(rivals)));
        // One candidate at a time where the query's shape allows (the same
        // scores, without each leaf walking the candidates by itself).
        let top = match query::collect_candidates(
            scored.as_ref(),
            &candidates,
            searcher,
            lookups.scoring(),
            &collector,
        ) {
            Some(top) => top,
            None => searcher.search_with_executor(
                scored.as_ref(),
                &collector,
                &Executor::SingleThread,
                lookups.scoring(),
            ),
        }
        .map_err(|e| tantivy_error("scoring candidates", e))?;
        Ok(match top.last() {
            Some(&(last, _)) if top.len() == limit && last > bound => Some((top, matched)),
            _ => None,
        })
    }
}
