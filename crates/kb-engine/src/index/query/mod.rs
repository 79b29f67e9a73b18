//! From a person's query to a tantivy query.
//!
//! The contract's syntax is words, `"exact phrase"` and `-excluded`. Words are
//! analysed like the index (CJK into bigrams), question and stop words in both
//! languages are dropped unless nothing else is left, and each remaining term is
//! one clause searched across the tool's fields with the weights from
//! `index-schema/`. A share of the clauses must match, so notes with more of the
//! query rank first; when that finds nothing the search runs again needing any
//! one term, so a natural question never comes back empty merely because one of
//! its words is in no note. Adjacent terms of one word (a Chinese run, `graph-view`)
//! add a phrase boost; an exact title, alias or file-name match adds a large one.
//!
//! An English word also matches its other forms (issue 19): each term's clause
//! is the better of its exact match and, at [`STEM_WEIGHT`], its stemmed one
//! (see the tokenizer), so `depressed` finds `depression` while a note holding
//! `depressed` itself ranks as before. `search_knowledge` weighs each term of a
//! multi-word query by how informative it is in the note bodies of the whole
//! vault ([`rarity_boosts`]): rarity among short titles says little, and a
//! common word that sits in some title must not outrank a question's rare words.
//!
//! A question of four words or more (put as a sentence) whose first pass is
//! unsure of its best note gets pseudo-relevance feedback ([`feedback_terms`]):
//! the rare words its best notes share join it at a low weight, and its first
//! page is ranked again (issue 13, questions in other words).

mod build;
mod candidates;
mod coordinated;
mod each_candidate;
mod feedback;
mod terms;
mod union;
mod words;

pub(crate) use build::{
    Filters, QueryParts, Reach, Strength, bound_outside, build, build_fuzzy, build_reaching, required_clauses,
};
pub(crate) use candidates::{Bar, Candidates};
pub(crate) use each_candidate::collect as collect_candidates;
pub(crate) use feedback::{FEEDBACK_GAP, FEEDBACK_NOTES, feedback_terms, with_feedback};
pub(crate) use terms::{FieldStatsCache, SearchTerms};
pub(crate) use words::{QueryPlan, informativeness, parse, rarity_boosts, warm_up};

/// Indexes for the query parts' tests.
#[cfg(test)]
mod test_index {
    use tantivy::schema::{Field, Schema, TEXT};
    use tantivy::{Index, TantivyDocument};

    /// Notes of a title and a body, in memory, committed as two segments (the
    /// first five notes, then the rest), so a leaf with no postings in one of
    /// them is covered.
    pub(super) fn titles_and_bodies(notes: &[(&str, &str)]) -> (Index, Field, Field) {
        let mut builder = Schema::builder();
        let title = builder.add_text_field("title", TEXT);
        let body = builder.add_text_field("body", TEXT);
        let index = Index::create_in_ram(builder.build());
        let mut writer: tantivy::IndexWriter = index.writer_with_num_threads(1, 15_000_000).unwrap();
        for (at, (t, b)) in notes.iter().enumerate() {
            let mut doc = TantivyDocument::default();
            doc.add_text(title, t);
            doc.add_text(body, b);
            writer.add_document(doc).unwrap();
            if at == 4 {
                writer.commit().unwrap();
            }
        }
        writer.commit().unwrap();
        (index, title, body)
    }
}
