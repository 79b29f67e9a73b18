//! From a query's words to a tantivy query: one clause per term across the
//! tool's weighted fields (exact and stemmed), the share that must match,
//! phrase and exact-title boosts, filters, and the typo-tolerant pass.

use std::collections::BTreeMap;
use std::sync::Arc;

use tantivy::Term;
use tantivy::query::{
    AllQuery, BooleanQuery, BoostQuery, ConstScoreQuery, DisjunctionMaxQuery, EmptyQuery, Occur, PhraseQuery,
    Query, TermQuery,
};
use tantivy::schema::{Field, IndexRecordOption};

use super::candidates::{Candidates, only};
use super::coordinated::CoordinatedQuery;
use super::terms::{SearchTerms, SharedTermQuery};
use super::union::{Combine, UnionQuery};
use super::words::{QueryPlan, word_forms};
use crate::index::fuzzy::{PrefixedFuzzyQuery, typo_distance};
use crate::index::schema::Fields;
use crate::index::tokenizer::Analysed;

/// How much a stemmed match (`runs` for `running`) counts against an exact one.
const STEM_WEIGHT: f32 = 0.6;

/// Which notes and fields a built query reaches.
#[derive(Debug, Clone, Default)]
pub(crate) enum Reach {
    /// Every note through every field of the tool: the query itself.
    #[default]
    Everything,
    /// Words and phrases searched in these fields only; exclusions and filters
    /// as in the query itself, so what this finds the query finds too.
    Fields(Vec<Field>),
    /// Every field, but these notes only, each scored as the query scores it.
    Candidates(Arc<Candidates>),
}

impl Reach {
    /// The leaf as this reach sees it. A leaf is whole, its boost within: the
    /// candidate pass tells leaves by their wrapper (see `each_candidate`).
    pub(super) fn leaf(&self, query: Box<dyn Query>) -> Box<dyn Query> {
        match self {
            Reach::Candidates(candidates) => only(candidates, query),
            _ => query,
        }
    }
}

/// How one query's leaves and unions are made: which notes and fields it
/// reaches, the search's term lookups, and which union its clauses use.
struct Leaves<'a> {
    reach: &'a Reach,
    terms: &'a Arc<SearchTerms>,
    /// Whether unions are [`UnionQuery`] (no window to allocate) rather than
    /// tantivy's. An intersection of three or more scoring parts adds their
    /// scores in the order of the parts' cost estimates, and this union cannot
    /// know the estimate tantivy's would give at every step (tantivy's drops a
    /// clause once its window passes the clause's last match), so such a query
    /// keeps tantivy's unions and its scores to the last bit; with two parts the
    /// order cannot change a sum.
    windowless: bool,
}

impl Leaves<'_> {
    /// The should-clauses' sum.
    fn sum(&self, clauses: Vec<Box<dyn Query>>) -> Box<dyn Query> {
        if self.windowless {
            Box::new(UnionQuery { clauses, combine: Combine::Sum })
        } else {
            Box::new(BooleanQuery::new(clauses.into_iter().map(|clause| (Occur::Should, clause)).collect()))
        }
    }

    /// The best of the clauses.
    fn best(&self, clauses: Vec<Box<dyn Query>>) -> Box<dyn Query> {
        if self.windowless {
            Box::new(UnionQuery { clauses, combine: Combine::Best { tie_breaker: 0.0 } })
        } else {
            Box::new(DisjunctionMaxQuery::with_tie_breaker(clauses, 0.0))
        }
    }
}

/// A term or phrase across weighted fields, as one should-clause; `None` when
/// there is no term or no field to search.
///
/// A field in which no note holds the term (or one of the phrase's terms) gets
/// no leaf: it could match nothing, yet each pass of a search would make its
/// weight and ask every segment for it. When no field holds it the clause
/// still stands, matching nothing, so the query counts its words as before.
fn across_fields(
    word_terms: &[Analysed],
    fields: &[(Field, f32)],
    leaves: &Leaves<'_>,
) -> Option<Box<dyn Query>> {
    let Leaves { reach, terms, .. } = *leaves;
    if word_terms.is_empty() || fields.is_empty() {
        return None;
    }
    let mut clauses: Vec<Box<dyn Query>> = Vec::new();
    for &(field, weight) in fields {
        // A statistic that cannot be read keeps the leaf, which then reports it.
        let held = |text: &str| terms.doc_freq(&Term::from_field_text(field, text)).map_or(true, |n| n > 0);
        if !word_terms.iter().all(|term| held(&term.text)) {
            continue;
        }
        let query: Box<dyn Query> = match word_terms {
            [one] => Box::new(SharedTermQuery::new(
                Term::from_field_text(field, &one.text),
                IndexRecordOption::WithFreqs,
                terms,
            )),
            many => {
                let first = many[0].position;
                let positioned = many
                    .iter()
                    .map(|t| (t.position - first, Term::from_field_text(field, &t.text)))
                    .collect::<Vec<_>>();
                Box::new(PhraseQuery::new_with_offset(positioned))
            }
        };
        clauses.push(reach.leaf(Box::new(BoostQuery::new(query, weight))));
    }
    Some(if clauses.is_empty() { Box::new(EmptyQuery) } else { leaves.sum(clauses) })
}

/// [`across_fields`] for a clause that only adds score or excludes: `None`
/// as well when no field holds the term, since such a clause changes nothing.
fn across_fields_held(
    word_terms: &[Analysed],
    fields: &[(Field, f32)],
    leaves: &Leaves<'_>,
) -> Option<Box<dyn Query>> {
    across_fields(word_terms, fields, leaves).filter(|query| !query.is::<EmptyQuery>())
}

/// Filters shared by both search tools.
#[derive(Debug, Clone, Default)]
pub(crate) struct Filters {
    /// Lowercased tags the note must carry (a parent matches its children).
    pub(crate) tags: Vec<String>,
    /// A folder the note must lie under.
    pub(crate) folder: Option<String>,
    /// Whether the note must, or must not, hold one of the query's strong units.
    pub(crate) strength: Strength,
}

/// Notes kept by whether they hold one of a query's strong units (more than a
/// lone CJK character; see `QueryPlan::strong_units`), in any field, any form.
#[derive(Debug, Clone, Default)]
pub(crate) enum Strength {
    /// Every note.
    #[default]
    Any,
    /// Notes holding one of these units: the real matches. The condition adds
    /// nothing to a note's score.
    Real(Vec<String>),
    /// Notes holding none of these units: the weak matches.
    WeakOnly(Vec<String>),
}

/// What every query of one search is built from: its plan, the tool's fields
/// and weights, the filters, the share of term clauses that must match, and
/// each term's boost (see [`rarity_boosts`]; absent is 1).
#[derive(Clone, Copy)]
pub(crate) struct QueryParts<'a> {
    pub(crate) plan: &'a QueryPlan,
    pub(crate) fields: &'a Fields,
    pub(crate) weights: &'a [(Field, f32)],
    pub(crate) filters: &'a Filters,
    pub(crate) min_share: f32,
    pub(crate) boosts: &'a BTreeMap<String, f32>,
    /// The search's term lookups, shared by every query built from these parts.
    pub(crate) terms: &'a Arc<SearchTerms>,
}

/// Builds the tantivy query: `min_share` of the term clauses must match, or
/// any one when `relaxed`.
pub(crate) fn build(parts: &QueryParts<'_>, relaxed: bool) -> Box<dyn Query> {
    build_reaching(parts, relaxed, &Reach::Everything)
}

/// [`build`], reaching only some fields or some notes (see [`Reach`]).
pub(crate) fn build_reaching(parts: &QueryParts<'_>, relaxed: bool, reach: &Reach) -> Box<dyn Query> {
    let QueryParts { plan, fields, weights, filters, min_share, boosts, terms } = *parts;
    let excluding: Vec<(Field, f32)> =
        weights.iter().copied().filter(|(f, _)| *f != fields.name_key).collect();
    let text_weights: Vec<(Field, f32)> = match reach {
        Reach::Fields(searched) => excluding.iter().copied().filter(|(f, _)| searched.contains(f)).collect(),
        _ => excluding.clone(),
    };
    let name_weight = weights.iter().find(|(f, _)| *f == fields.name_key).map(|(_, w)| *w);
    let mut top: Vec<(Occur, Box<dyn Query>)> = Vec::new();

    let units = plan.units();
    let scoring_parts = usize::from(!units.is_empty())
        + plan.phrases.len()
        + filters.tags.len()
        + usize::from(filters.folder.is_some());
    let leaves = Leaves { reach, terms, windowless: scoring_parts <= 2 };
    if !units.is_empty() {
        let mut clauses: Vec<(Occur, Box<dyn Query>)> = Vec::new();
        for unit in &units {
            let boost = boosts.get(unit).copied().unwrap_or(1.0);
            let scaled = |factor: f32| -> Vec<(Field, f32)> {
                text_weights.iter().map(|&(f, w)| (f, w * boost * factor)).collect()
            };
            let term = Analysed { text: unit.clone(), from: 0, to: 0, position: 0 };
            let Some(exact) = across_fields(std::slice::from_ref(&term), &scaled(1.0), &leaves) else {
                continue;
            };
            let stemmed = scaled(STEM_WEIGHT);
            let other_forms: Vec<Box<dyn Query>> = word_forms(unit)
                .into_iter()
                .filter_map(|form| {
                    let term = Analysed { text: form, from: 0, to: 0, position: 0 };
                    across_fields_held(std::slice::from_ref(&term), &stemmed, &leaves)
                })
                .collect();
            if other_forms.is_empty() {
                clauses.push((Occur::Should, exact));
            } else {
                // The better of the exact and the stemmed match, not both: a note
                // holding the word as typed scores as it did without stemming.
                let stemmed = leaves.sum(other_forms);
                clauses.push((Occur::Should, leaves.best(vec![exact, stemmed])));
            }
        }
        let n = clauses.len();
        let required = required_clauses(n, min_share, relaxed);
        if let [(_, one)] = &mut clauses[..] {
            top.push((Occur::Must, std::mem::replace(one, Box::new(AllQuery))));
        } else {
            // Coordination: a note holding every term scores its terms twice.
            let coordinate = coordinated(plan, n, required);
            let clauses = clauses.into_iter().map(|(_, q)| q).collect();
            top.push((Occur::Must, Box::new(CoordinatedQuery { clauses, required, coordinate })));
        }
        for word in plan.words.iter().chain(&plan.runs).filter(|w| w.terms.len() > 1) {
            let boosted: Vec<(Field, f32)> = text_weights.iter().map(|&(f, w)| (f, w * 1.5)).collect();
            if let Some(q) = across_fields_held(&word.terms, &boosted, &leaves) {
                top.push((Occur::Should, q));
            }
        }
    }
    for phrase in &plan.phrases {
        if let Some(q) = across_fields(&phrase.terms, &text_weights, &leaves) {
            top.push((Occur::Must, q));
        }
    }
    if let (Some(weight), false) = (name_weight, plan.name_key.is_empty()) {
        let exact = SharedTermQuery::new(
            Term::from_field_text(fields.name_key, &plan.name_key),
            IndexRecordOption::Basic,
            terms,
        );
        top.push((Occur::Should, reach.leaf(Box::new(BoostQuery::new(Box::new(exact), weight)))));
    }
    for word in &plan.excluded {
        if let Some(q) = across_fields_held(&word.terms, &excluding, &leaves) {
            top.push((Occur::MustNot, q));
        }
    }
    push_filters(&mut top, fields, weights, filters, reach);
    if !top.iter().any(|(occur, _)| *occur == Occur::Must) {
        top.push((Occur::Must, reach.leaf(Box::new(AllQuery))));
    }
    Box::new(BooleanQuery::new(top))
}

/// What [`build`]'s query can give a note through fields outside `reached`
/// (see [`Outside`]): a bound from each leaf's best possible BM25 score
/// (`max_score` of a field and its terms), summed as the query sums them.
pub(crate) fn bound_outside(
    parts: &QueryParts<'_>,
    reached: &[Field],
    max_score: &dyn Fn(Field, &[&str]) -> f32,
) -> Outside {
    let QueryParts { plan, fields, weights, filters, min_share, boosts, .. } = *parts;
    let outside: Vec<(Field, f32)> =
        weights.iter().copied().filter(|(f, _)| *f != fields.name_key && !reached.contains(f)).collect();
    let across = |terms: &[&str], factor: f32| -> f32 {
        outside.iter().map(|&(field, weight)| weight * factor * max_score(field, terms)).sum()
    };
    let units = plan.units();
    let mut words = 0.0;
    for unit in &units {
        let boost = boosts.get(unit).copied().unwrap_or(1.0);
        let exact = across(&[unit.as_str()], boost);
        let stemmed: f32 =
            word_forms(unit).iter().map(|form| across(&[form.as_str()], boost * STEM_WEIGHT)).sum();
        words += exact.max(stemmed);
    }
    let n = units.len();
    let coordinated = coordinated(plan, n, required_clauses(n, min_share, false));
    let mut phrases = 0.0;
    for word in plan.words.iter().chain(&plan.runs).filter(|w| w.terms.len() > 1) {
        let terms: Vec<&str> = word.terms.iter().map(|t| t.text.as_str()).collect();
        phrases += across(&terms, 1.5);
    }
    for phrase in &plan.phrases {
        let terms: Vec<&str> = phrase.terms.iter().map(|t| t.text.as_str()).collect();
        phrases += across(&terms, 1.0);
    }
    let mut filtered = 0.0;
    for tag in &filters.tags {
        filtered += max_score(fields.tag_filter, &[tag.as_str()]);
    }
    if let Some(folder) = &filters.folder {
        filtered += max_score(fields.folder, &[folder.as_str()]);
    }
    if units.is_empty() && plan.phrases.is_empty() {
        filtered += 1.0;
    }
    Outside { words, coordinated, phrases, filtered }
}

/// The most the fields outside some reached ones (a note's headings and text,
/// past its title side) can add to a note's score under [`build`]'s query.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Outside {
    /// The term clauses' share, each clause's better form, not yet doubled.
    words: f32,
    /// Whether a note matching every term clause scores them twice.
    coordinated: bool,
    /// The phrase boosts' and required phrases' share.
    phrases: f32,
    /// The tag and folder filters' share (and the match-all of a query without words).
    filtered: f32,
}

impl Outside {
    /// The most a note that none of the query's clauses match in the reached
    /// fields (nor by its exact name) can score: a page whose last note scores
    /// above it cannot miss such a note.
    pub(crate) fn unreached(&self) -> f32 {
        let words = if self.coordinated { self.words * 2.0 } else { self.words };
        slack(words + self.phrases + self.filtered)
    }

    /// The most a note can score whose clauses in the reached fields scored
    /// `reached` (filters and exact name included). Each term clause is the
    /// better of its forms, which is at most the better reached form plus the
    /// better outside one; coordination doubles the term clauses at most, and
    /// the rest of `reached` is doubled with them, which only loosens the bound.
    pub(crate) fn with_reached(&self, reached: f32) -> f32 {
        let most = if self.coordinated {
            2.0 * (reached + self.words) + self.phrases
        } else {
            reached + self.words + self.phrases
        };
        slack(most)
    }
}

/// A bound widened past the last bits in which sums taken in another order differ.
fn slack(bound: f32) -> f32 {
    bound * 1.001 + 1e-4
}

/// Whether a note holding every one of the `n` term clauses (of which it must
/// hold `required`) scores them twice. Not for a question: the longer the
/// question, the likelier a long note holds all its words by chance (a
/// reference page of 1,500 words holds `edit`, `several`, `lines`, `same` and
/// `time`), while the short note that answers it in other words holds some;
/// BM25's weighing of rare words and short notes says more there. Measured
/// with `kb-index eval` (BENCHMARKS.md, "Questions in other words").
fn coordinated(plan: &QueryPlan, n: usize, required: usize) -> bool {
    n > 1 && required < n && !plan.is_question()
}

/// How many of `n` term clauses a note must match: `min_share` of them, at least
/// one; one when `relaxed`.
pub(crate) fn required_clauses(n: usize, min_share: f32, relaxed: bool) -> usize {
    if relaxed { 1 } else { ((n as f32 * min_share).ceil() as usize).clamp(1, n.max(1)) }
}

/// Adds the tag, folder and strength filters as required (or excluding) clauses.
fn push_filters(
    top: &mut Vec<(Occur, Box<dyn Query>)>,
    fields: &Fields,
    weights: &[(Field, f32)],
    filters: &Filters,
    reach: &Reach,
) {
    let (occur, units) = match &filters.strength {
        Strength::Any => (Occur::Should, &Vec::new()),
        Strength::Real(units) => (Occur::Must, units),
        Strength::WeakOnly(units) => (Occur::MustNot, units),
    };
    if !units.is_empty() {
        // Every field and form the term clauses search (the exact name aside: it
        // holds the whole query, never one unit alone).
        let mut any: Vec<(Occur, Box<dyn Query>)> = Vec::new();
        for unit in units {
            for text in std::iter::once(unit.clone()).chain(word_forms(unit)) {
                for &(field, _) in weights.iter().filter(|(f, _)| *f != fields.name_key) {
                    let term = TermQuery::new(Term::from_field_text(field, &text), IndexRecordOption::Basic);
                    any.push((Occur::Should, reach.leaf(Box::new(term))));
                }
            }
        }
        // A condition, not evidence: it scores nothing.
        top.push((occur, Box::new(ConstScoreQuery::new(Box::new(BooleanQuery::new(any)), 0.0))));
    }
    for tag in &filters.tags {
        let term = Term::from_field_text(fields.tag_filter, tag);
        top.push((Occur::Must, reach.leaf(Box::new(TermQuery::new(term, IndexRecordOption::Basic)))));
    }
    if let Some(folder) = &filters.folder {
        let term = Term::from_field_text(fields.folder, folder);
        top.push((Occur::Must, reach.leaf(Box::new(TermQuery::new(term, IndexRecordOption::Basic)))));
    }
}

/// The last resort when nothing matched: Latin words of four letters or more
/// matched within one edit (two from eight letters), transpositions included, so
/// `zettlekasten` still finds `Zettelkasten`. `None` when the query has no such word.
pub(crate) fn build_fuzzy(parts: &QueryParts<'_>) -> Option<Box<dyn Query>> {
    let QueryParts { plan, fields, weights, filters, terms, .. } = *parts;
    let mut clauses: Vec<(Occur, Box<dyn Query>)> = Vec::new();
    for unit in plan.units() {
        let Some(distance) = typo_distance(&unit) else { continue };
        let Some(fuzzy) = PrefixedFuzzyQuery::across(&unit, distance) else { continue };
        for &(field, weight) in weights.iter().filter(|(f, _)| *f != fields.name_key) {
            clauses.push((Occur::Should, Box::new(BoostQuery::new(Box::new(fuzzy(field)), weight))));
        }
    }
    if clauses.is_empty() {
        return None;
    }
    let mut top: Vec<(Occur, Box<dyn Query>)> = vec![(Occur::Must, Box::new(BooleanQuery::new(clauses)))];
    // Typo tolerance is the last resort of the real matches: its words are not as typed.
    let any_strength = Filters { strength: Strength::Any, ..filters.clone() };
    push_filters(&mut top, fields, weights, &any_strength, &Reach::Everything);
    // Exclusions only: how their clauses are summed changes nothing.
    let leaves = Leaves { reach: &Reach::Everything, terms, windowless: true };
    for word in &plan.excluded {
        if let Some(q) = across_fields_held(&word.terms, weights, &leaves) {
            top.push((Occur::MustNot, q));
        }
    }
    Some(Box::new(BooleanQuery::new(top)))
}
