//! Searching for a person at the command line: titles and text together by
//! default, fused by reciprocal rank as `recall_context` fuses them, or one of
//! the two; up to [`PERSON_LIMIT`] results (a terminal pages, an agent's
//! context does not, hence the tools' smaller cap).

use serde::Serialize;

use super::Engine;
use super::types::{ContentResults, KnowledgeResults, Ranking, SearchArgs, SnippetOut};
use crate::error::Result;

/// The largest `limit` of a person's search.
pub const PERSON_LIMIT: u32 = 1000;

/// One note found by titles or text (or both).
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct NoteHit {
    /// Vault-relative path.
    pub path: String,
    /// Title.
    pub title: String,
    /// The fused score: the sum of 1/(rank + 2) over both rankings.
    pub score: f32,
    /// Where the words matched: `title`, `aliases`, `description`, `tags`, `text`.
    pub matched: Vec<String>,
    /// Up to three excerpts of the text, best first (none for a title-only match).
    pub snippets: Vec<SnippetOut>,
    /// Every search that found the note found it only by lone CJK characters
    /// (see `KnowledgeHit::weak`): shown after every real match.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub weak: bool,
}

/// Both searches, fused.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct NoteResults {
    /// The query as given.
    pub query: String,
    /// Notes whose title, aliases, description or tags match.
    pub titles_total: u64,
    /// Notes whose text matches.
    pub text_total: u64,
    /// Best first.
    pub results: Vec<NoteHit>,
    /// How it was ranked (both searches run the same path).
    pub ranking: Ranking,
}

impl Engine {
    /// `search_knowledge` for a person: `limit` up to [`PERSON_LIMIT`].
    pub fn search_titles_for_person(&self, args: &SearchArgs) -> Result<KnowledgeResults> {
        self.search_knowledge_up_to(args, PERSON_LIMIT)
    }

    /// `search_note_content` for a person: `limit` up to [`PERSON_LIMIT`].
    pub fn search_text_for_person(&self, args: &SearchArgs) -> Result<ContentResults> {
        self.search_note_content_up_to(args, PERSON_LIMIT)
    }

    /// Titles and text together: each ranking contributes 1/(rank + 2) to a
    /// note's score, so a note both find rises; ties go by path. A note only
    /// weak matches found comes after every real match.
    pub fn search_notes(&self, args: &SearchArgs) -> Result<NoteResults> {
        let titles = self.search_titles_for_person(args)?;
        let text = self.search_text_for_person(args)?;
        let mut hits: Vec<NoteHit> = Vec::new();
        for (rank, hit) in titles.results.into_iter().enumerate() {
            hits.push(NoteHit {
                path: hit.path,
                title: hit.title,
                score: 1.0 / (rank as f32 + 2.0),
                matched: hit.matched,
                snippets: Vec::new(),
                weak: hit.weak,
            });
        }
        for (rank, hit) in text.results.into_iter().enumerate() {
            let score = 1.0 / (rank as f32 + 2.0);
            match hits.iter_mut().find(|known| known.path == hit.path) {
                Some(known) => {
                    known.score += score;
                    if !known.matched.iter().any(|field| field == "text") {
                        known.matched.push("text".to_owned());
                    }
                    known.snippets = hit.snippets;
                    // A real match on either side makes the note a real match.
                    known.weak &= hit.weak;
                }
                None => hits.push(NoteHit {
                    path: hit.path,
                    title: hit.title,
                    score,
                    matched: vec!["text".to_owned()],
                    snippets: hit.snippets,
                    weak: hit.weak,
                }),
            }
        }
        // Weak notes after every real one, as each search ranks them.
        hits.sort_by(|a, b| {
            a.weak.cmp(&b.weak).then_with(|| b.score.total_cmp(&a.score)).then_with(|| a.path.cmp(&b.path))
        });
        hits.truncate(args.limit.unwrap_or(10) as usize);
        Ok(NoteResults {
            query: args.query.clone(),
            titles_total: titles.total,
            text_total: text.total,
            results: hits,
            ranking: text.ranking,
        })
    }
}
