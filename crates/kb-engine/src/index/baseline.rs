//! The simplest ranking, kept as a yardstick: plain BM25 over one field holding
//! a note's title, aliases and body, with tantivy's default tokenizer and query
//! parser (its words OR-ed), in memory.
//!
//! `kb-index eval --baseline` runs a suite against it, so BENCHMARKS.md can show
//! what the real index (CJK n-grams, weighted fields, question handling,
//! coordination, exact-name boosts) adds over it, measured the same way.

use tantivy::collector::{Count, TopDocs};
use tantivy::query::{BooleanQuery, Occur, Query, QueryParser, TermQuery};
use tantivy::schema::{Field, IndexRecordOption, STORED, STRING, Schema, TEXT, Value};
use tantivy::{Index, IndexReader, TantivyDocument, Term};

use crate::error::{Error, Result};

/// An in-memory single-field index.
pub struct BaselineIndex {
    index: Index,
    reader: IndexReader,
    path: Field,
    body: Field,
    folder: Field,
}

fn failed(context: &str, err: impl std::fmt::Display) -> Error {
    Error::index(format!("baseline index: {context}: {err}"))
}

impl BaselineIndex {
    /// Indexes `(path, text)` pairs: the text is title, aliases and body.
    pub fn build(documents: impl Iterator<Item = (String, String)>) -> Result<BaselineIndex> {
        let mut builder = Schema::builder();
        let path = builder.add_text_field("path", STRING | STORED);
        let body = builder.add_text_field("body", TEXT);
        let folder = builder.add_text_field("folder", STRING);
        let index = Index::create_in_ram(builder.build());
        let mut writer =
            index.writer_with_num_threads(1, 64 * 1024 * 1024).map_err(|e| failed("writer", e))?;
        for (file, text) in documents {
            let mut doc = TantivyDocument::new();
            doc.add_text(path, &file);
            doc.add_text(body, &text);
            let mut prefix = String::new();
            for part in file.rsplit_once('/').map_or("", |(dir, _)| dir).split('/').filter(|p| !p.is_empty())
            {
                if !prefix.is_empty() {
                    prefix.push('/');
                }
                prefix.push_str(part);
                doc.add_text(folder, &prefix);
            }
            writer.add_document(doc).map_err(|e| failed("adding", e))?;
        }
        writer.commit().map_err(|e| failed("commit", e))?;
        let reader = index.reader().map_err(|e| failed("reader", e))?;
        Ok(BaselineIndex { index, reader, path, body, folder })
    }

    /// Searches with tantivy's query parser (lenient), optionally under a folder.
    pub fn search(&self, query: &str, folder: Option<&str>, limit: usize) -> Result<(u64, Vec<String>)> {
        let parser = QueryParser::for_index(&self.index, vec![self.body]);
        let (parsed, _errors) = parser.parse_query_lenient(query);
        let query: Box<dyn Query> = match folder {
            Some(folder) => Box::new(BooleanQuery::new(vec![
                (Occur::Must, parsed),
                (
                    Occur::Must,
                    Box::new(TermQuery::new(
                        Term::from_field_text(self.folder, folder),
                        IndexRecordOption::Basic,
                    )),
                ),
            ])),
            None => parsed,
        };
        let searcher = self.reader.searcher();
        let (top, total) = searcher
            .search(&query, &(TopDocs::with_limit(limit.max(1)).order_by_score(), Count))
            .map_err(|e| failed("search", e))?;
        let mut paths = Vec::with_capacity(top.len());
        for (_, address) in top {
            let doc: TantivyDocument = searcher.doc(address).map_err(|e| failed("reading", e))?;
            if let Some(path) = doc.get_first(self.path).and_then(|v| v.as_str()) {
                paths.push(path.to_owned());
            }
        }
        Ok((total as u64, paths))
    }
}
