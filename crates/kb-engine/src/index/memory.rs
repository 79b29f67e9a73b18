//! A small in-memory index of the agent's memory entries, searched beside
//! the notes (issue 39).
//!
//! The memory is kept apart from the notes' index so that one principal's
//! memory of the person is never served to another: the engine builds one of
//! these per memory folder a caller may read, from that folder's entries (a
//! few thousand short texts at most), and drops it when the folder changes.
//! The text is analysed like the notes' (CJK n-grams, folded words, stems)
//! and ranked by BM25; a query's words are OR-ed, each word matched in its
//! own form or its stem, and at least a third of them must occur, so that an
//! entry is not brought up by one common word of a long question.

use tantivy::collector::TopDocs;
use tantivy::query::{BooleanQuery, Occur, Query, TermQuery};
use tantivy::schema::{
    Field, IndexRecordOption, STORED, STRING, Schema, TextFieldIndexing, TextOptions, Value,
};
use tantivy::{Index, IndexReader, TantivyDocument, Term};

use super::tokenizer::{self, ANALYZER, analyse, stem_of, stem_term};
use crate::error::{Error, Result};

/// The entries of one memory folder, indexed.
pub struct MemoryIndex {
    reader: IndexReader,
    key: Field,
    text: Field,
}

fn failed(context: &str, err: impl std::fmt::Display) -> Error {
    Error::index(format!("memory index: {context}: {err}"))
}

impl MemoryIndex {
    /// Indexes `(key, text)` pairs (the key is the entry's path).
    pub fn build<'a>(entries: impl Iterator<Item = (&'a str, &'a str)>) -> Result<MemoryIndex> {
        let mut builder = Schema::builder();
        let key = builder.add_text_field("key", STRING | STORED);
        let indexing = TextFieldIndexing::default()
            .set_tokenizer(ANALYZER)
            .set_index_option(IndexRecordOption::WithFreqs);
        let text = builder.add_text_field("text", TextOptions::default().set_indexing_options(indexing));
        let index = Index::create_in_ram(builder.build());
        index.tokenizers().register(ANALYZER, tokenizer::index_analyzer());
        let mut writer = index.writer_with_num_threads(1, 15_000_000).map_err(|e| failed("writer", e))?;
        for (path, body) in entries {
            let mut doc = TantivyDocument::new();
            doc.add_text(key, path);
            doc.add_text(text, body);
            writer.add_document(doc).map_err(|e| failed("adding", e))?;
        }
        writer.commit().map_err(|e| failed("commit", e))?;
        let reader = index.reader().map_err(|e| failed("reader", e))?;
        Ok(MemoryIndex { reader, key, text })
    }

    /// The entries matching `query`, best first, at most `limit`: `(key, score)`.
    pub fn search(&self, query: &str, limit: usize) -> Result<Vec<(String, f32)>> {
        let mut words: Vec<String> =
            analyse(&mut tokenizer::query_analyzer(), query).into_iter().map(|token| token.text).collect();
        words.sort();
        words.dedup();
        if words.is_empty() || limit == 0 {
            return Ok(Vec::new());
        }
        let term = |text: &str| -> Box<dyn Query> {
            Box::new(TermQuery::new(Term::from_field_text(self.text, text), IndexRecordOption::WithFreqs))
        };
        let clauses: Vec<(Occur, Box<dyn Query>)> = words
            .iter()
            .map(|word| {
                let mut forms = vec![(Occur::Should, term(word))];
                // The index keeps each word's stem beside it, marked (`writes` is also
                // `write`); a short word is kept as it is (`note` for `notes`).
                if let Some(stem) = stem_of(word) {
                    forms.push((Occur::Should, term(&stem_term(&stem))));
                    if stem != *word {
                        forms.push((Occur::Should, term(&stem)));
                    }
                }
                (Occur::Should, Box::new(BooleanQuery::new(forms)) as Box<dyn Query>)
            })
            .collect();
        let required = words.len().div_ceil(3);
        let query = BooleanQuery::with_minimum_required_clauses(clauses, required);
        let searcher = self.reader.searcher();
        let top = searcher
            .search(&query, &TopDocs::with_limit(limit).order_by_score())
            .map_err(|e| failed("search", e))?;
        let mut found = Vec::with_capacity(top.len());
        for (score, address) in top {
            let doc: TantivyDocument = searcher.doc(address).map_err(|e| failed("reading", e))?;
            if let Some(key) = doc.get_first(self.key).and_then(|v| v.as_str()) {
                found.push((key.to_owned(), score));
            }
        }
        Ok(found)
    }

    /// How many entries it holds.
    pub fn len(&self) -> u64 {
        self.reader.searcher().num_docs()
    }

    /// Whether it holds no entry.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn finds_by_stem_and_cjk_words_and_needs_half_the_words() {
        let index = MemoryIndex::build(
            [
                ("a.md", "Prefers notes written in Chinese. Writes every note in Chinese first."),
                ("b.md", "论文三月截止，需要提前准备答辩。"),
                ("c.md", "The cat sat on the mat."),
            ]
            .into_iter(),
        )
        .unwrap();
        assert_eq!(index.len(), 3);
        let keys =
            |query: &str| index.search(query, 5).unwrap().into_iter().map(|(k, _)| k).collect::<Vec<_>>();
        assert_eq!(keys("preferring chinese"), ["a.md"]);
        assert_eq!(keys("论文截止"), ["b.md"]);
        assert_eq!(keys("which language does the person write notes in"), ["a.md"]);
        // One common word of four is not enough.
        assert!(keys("the thesis deadline date").is_empty());
        assert!(keys("").is_empty());
    }
}
