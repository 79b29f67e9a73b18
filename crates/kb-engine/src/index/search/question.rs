//! What a query put as a question gets beyond keywords: the note text weighted
//! up in `search_knowledge`, feedback from its first pass's best notes, and a
//! page ordered by both tools' rankings. A name or keywords rank as ever.

use std::sync::Arc;

use tantivy::query::Query;
use tantivy::schema::Field;
use tantivy::{DocAddress, Searcher, Term};

use super::{NoteTexts, SearchOutcome, SearchRequest};
use crate::error::Result;
use crate::index::{SearchIndex, fusion, query};

/// How much more the note text counts in `search_knowledge` for a question
/// (`QueryPlan::is_question`). A title holds one or two of such a query's
/// words at most, often a common one ("edit" of "how do I edit several lines
/// at the same time" in *Editing shortcuts*), while the note that answers it
/// says most of them in its text, and by the rule of the questions-in-other-
/// words suites can match by its text alone; at the text's usual weight the
/// title match wins. Chosen with `kb-index eval` on every suite (BENCHMARKS.md,
/// "Questions in other words"): with the words not coordinated, 6 lifts
/// English `search_knowledge` to plain BM25 and above (MRR@10 0.530 → 0.567)
/// and Chinese with it (0.401 → 0.479) without a case of any suite newly
/// failing; 5 is below BM25 (0.550), and 7 or 8 (0.588) lose a Chinese
/// question over the whole help vault (`退款` of the refund question drowned
/// by translations' text). From three words it loses `how do I publish my
/// notes as a website` (whose answers say publish in their titles).
const QUESTION_TEXT_FACTOR: f32 = 6.0;

/// Whether `plan` is a question (see `QueryPlan::is_question`).
pub(super) fn is_question(plan: &query::QueryPlan) -> bool {
    plan.is_question()
}

/// `search_knowledge`'s weights for a question: the note text (`body`) counts
/// [`QUESTION_TEXT_FACTOR`] times as much.
pub(super) fn question_weights(weights: &[(Field, f32)], body: Field) -> Vec<(Field, f32)> {
    weights
        .iter()
        .map(|&(field, weight)| (field, if field == body { weight * QUESTION_TEXT_FACTOR } else { weight }))
        .collect()
}

impl SearchIndex {
    /// Orders a question's page (`outcome`) by its tool's ranking and the other
    /// tool's together (`fusion`).
    pub(super) fn fuse_with_other_tool(
        &self,
        request: &SearchRequest<'_>,
        plan: &query::QueryPlan,
        outcome: &mut SearchOutcome,
    ) -> Result<()> {
        let other = SearchRequest {
            scope: request.scope.other(),
            limit: fusion::OTHER_DEPTH,
            explain: false,
            texts: None,
            ..request.clone()
        };
        let other = self.search_scope(&other, plan)?;
        let ranked: Vec<&str> = other.hits.iter().map(|hit| hit.record.path.as_str()).collect();
        fusion::fuse(&mut outcome.hits, outcome.strict, &ranked, |hit| hit.record.path.as_str());
        Ok(())
    }

    /// A question's query with the feedback words of its first pass's best
    /// notes (`top`; see `query::feedback_terms`), or `None` when the first
    /// pass is sure of its best note (it outscores the second by
    /// `query::FEEDBACK_GAP`) or the notes give no word.
    pub(super) fn with_feedback(
        &self,
        searcher: &Searcher,
        parts: &query::QueryParts<'_>,
        top: &[(f32, DocAddress)],
        texts: NoteTexts<'_>,
    ) -> Option<Box<dyn Query>> {
        match top {
            [] => return None,
            [(best, _), (second, _), ..] if *best >= query::FEEDBACK_GAP * second => return None,
            _ => {}
        }
        let notes: Vec<(f32, String)> = top
            .iter()
            .take(query::FEEDBACK_NOTES)
            .filter_map(|&(score, address)| {
                Some((score, (texts.0)(&self.lean_hit_record(searcher, address).ok()??)?))
            })
            .collect();
        let fields = &self.schema.fields;
        let doc_freq = |word: &str| searcher.doc_freq(&Term::from_field_text(fields.body, word)).unwrap_or(0);
        let words = query::feedback_terms(parts.plan, &notes, &doc_freq, searcher.num_docs());
        if words.is_empty() {
            return None;
        }
        let searched: Vec<(Field, f32)> =
            parts.weights.iter().copied().filter(|&(field, _)| field != fields.name_key).collect();
        let candidates = Arc::new(query::Candidates::new(searcher, top.iter().map(|&(_, address)| address)));
        Some(query::with_feedback(parts, candidates, &words, &searched))
    }
}
