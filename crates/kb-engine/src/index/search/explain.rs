//! Why a hit matched: the fields of `search_knowledge`'s hits that hold a
//! query term (its headings read from the index), and a hit's score explained
//! term by term when the caller asks.

use std::collections::BTreeSet;

use tantivy::query::Query;
use tantivy::schema::Field;
use tantivy::{DocAddress, DocId, Searcher, Term};

use crate::index::{SearchIndex, query, tokenizer};
use crate::vault::NoteRecord;

impl SearchIndex {
    /// The notes among `page` holding one of `terms` in `field`, read from the
    /// field's postings: a few seeks per term, however long the notes.
    pub(super) fn holding(
        &self,
        lookups: &query::SearchTerms,
        field: Field,
        terms: &BTreeSet<String>,
        page: &[(f32, DocAddress)],
    ) -> tantivy::Result<BTreeSet<DocAddress>> {
        let mut found = BTreeSet::new();
        let segments: BTreeSet<u32> = page.iter().map(|(_, address)| address.segment_ord).collect();
        for segment in segments {
            let mut docs: Vec<DocId> = page
                .iter()
                .filter(|(_, address)| address.segment_ord == segment)
                .map(|(_, address)| address.doc_id)
                .collect();
            docs.sort_unstable();
            for term in terms {
                let term = Term::from_field_text(field, term);
                for doc in lookups.holders(&term, segment as usize, &docs)? {
                    found.insert(DocAddress::new(segment, doc));
                }
            }
        }
        Ok(found)
    }

    /// Which fields and terms scored for one hit, each with its weighted BM25 share.
    /// (tantivy's own explanation of the whole boolean query trips an assertion in
    /// 0.27 with minimum-match clauses, and a flat list is easier to read anyway.)
    pub(super) fn explain(
        &self,
        searcher: &Searcher,
        address: DocAddress,
        plan: &query::QueryPlan,
        weights: &[(Field, f32)],
        relaxed: bool,
    ) -> serde_json::Value {
        let schema = &self.schema.schema;
        let mut scored = Vec::new();
        for term_text in plan.positive_terms() {
            for &(field, weight) in weights.iter().filter(|(f, _)| *f != self.schema.fields.name_key) {
                let term_query = tantivy::query::TermQuery::new(
                    Term::from_field_text(field, &term_text),
                    tantivy::schema::IndexRecordOption::WithFreqs,
                );
                if let Ok(explanation) = term_query.explain(searcher, address) {
                    let score = explanation.value() * weight;
                    if score > 0.0 {
                        scored.push(serde_json::json!({
                            "field": schema.get_field_name(field),
                            "term": term_text,
                            "score": (score * 1000.0).round() / 1000.0,
                        }));
                    }
                }
            }
        }
        scored.sort_by(|a, b| {
            b["score"].as_f64().unwrap_or(0.0).total_cmp(&a["score"].as_f64().unwrap_or(0.0))
        });
        let exact = tantivy::query::TermQuery::new(
            Term::from_field_text(self.schema.fields.name_key, &plan.name_key),
            tantivy::schema::IndexRecordOption::Basic,
        )
        .explain(searcher, address)
        .is_ok();
        serde_json::json!({
            "terms": scored,
            "exact_name_match": exact,
            "any_term_mode": relaxed,
        })
    }
}

/// Which of a record's searchable fields contain any of the terms (its
/// headings do when `in_headings`: see `SearchIndex::holding`).
pub(super) fn matched_fields(
    record: &NoteRecord,
    finder: &mut tokenizer::TermFinder<'_>,
    in_headings: bool,
) -> Vec<String> {
    let mut hits = |text: &str| finder.any(text);
    let mut matched = Vec::new();
    if hits(&record.title) || hits(record.stem()) {
        matched.push("title".to_owned());
    }
    if record.aliases.iter().any(|a| hits(a)) {
        matched.push("aliases".to_owned());
    }
    if hits(&record.description) {
        matched.push("description".to_owned());
    }
    if record.tags.iter().any(|t| hits(&t.replace('/', " "))) {
        matched.push("tags".to_owned());
    }
    if in_headings {
        matched.push("headings".to_owned());
    }
    matched
}
