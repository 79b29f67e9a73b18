//! What a search is asked and what it answers: the scope (which tool's fields),
//! the request with its filters and the passes it may make, the hits and the page.

use std::collections::BTreeSet;

use crate::sandbox::NotePath;
use crate::vault::NoteRecord;

/// See [`SearchScope::min_share`]; chosen with `kb-index eval` (BENCHMARKS.md, "Search quality").
const KNOWLEDGE_MIN_SHARE: f32 = 0.0;

const CONTENT_MIN_SHARE: f32 = 0.6;

/// Which tool's fields and weights a search uses.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SearchScope {
    /// Titles (and file names), aliases, descriptions and tags, with headings
    /// and text weighted low (`search_knowledge`).
    Knowledge,
    /// Headings and bodies (`search_note_content`).
    Content,
}

impl SearchScope {
    /// The share of query terms a note must match to rank first; when fewer notes
    /// than asked for match that many, notes holding any one term follow them.
    /// Titles and tags are short, so one matching word already says much; bodies are
    /// long, so a note should hold most of the query's words.
    pub(super) fn min_share(self) -> f32 {
        match self {
            SearchScope::Knowledge => KNOWLEDGE_MIN_SHARE,
            SearchScope::Content => CONTENT_MIN_SHARE,
        }
    }

    pub(super) fn weights_key(self) -> &'static str {
        match self {
            SearchScope::Knowledge => "search_knowledge",
            SearchScope::Content => "search_note_content",
        }
    }

    /// The other tool's scope: a question is ranked by both (see `fusion`).
    pub(super) fn other(self) -> SearchScope {
        match self {
            SearchScope::Knowledge => SearchScope::Content,
            SearchScope::Content => SearchScope::Knowledge,
        }
    }
}

/// The passes a search may make beyond its one query, each on unless turned
/// off. Every tool's search makes all of them; tests turn one off to show what
/// it changes, or to hold a shortcut's answers to the full query's.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SearchPasses {
    /// `search_knowledge` scores its title-side matches first and skips the
    /// full query when they provably give its page.
    pub title_shortcut: bool,
    /// A question's first pass lends its best notes' words to a second (see
    /// `query::feedback_terms`).
    pub feedback: bool,
    /// A question's page is ordered by its tool's ranking and the other tool's
    /// together (see `fusion`).
    pub fusion: bool,
    /// The page is ordered by the notes' meaning too, when the semantic layer
    /// is ready (see `engine::semantic`); off: lexical.
    pub semantic: bool,
}

impl Default for SearchPasses {
    fn default() -> Self {
        SearchPasses { title_shortcut: true, feedback: true, fusion: true, semantic: true }
    }
}

/// A search request.
#[derive(Debug, Clone)]
pub struct SearchRequest<'a> {
    /// The query text (words, `"phrases"`, `-exclusions`).
    pub query: &'a str,
    /// Which tool's fields.
    pub scope: SearchScope,
    /// Tags the note must carry (a parent tag matches its children).
    pub tags: &'a [String],
    /// A folder the note must lie under, checked by the sandbox.
    pub folder: Option<&'a NotePath>,
    /// How many hits to return.
    pub limit: usize,
    /// Whether to explain each hit's score.
    pub explain: bool,
    /// Reads a hit's note text, for the feedback a question gets from its
    /// first pass (see `query::feedback_terms`); `None`: no feedback.
    pub texts: Option<NoteTexts<'a>>,
    /// Which of the search's optional passes it makes.
    pub passes: SearchPasses,
}

/// Reads a note's text (the index holds none): the caller's way to the files.
#[derive(Clone, Copy)]
pub struct NoteTexts<'a>(pub &'a (dyn Fn(&NoteRecord) -> Option<String> + Sync));

impl std::fmt::Debug for NoteTexts<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("NoteTexts")
    }
}

/// One search hit.
#[derive(Debug, Clone)]
pub struct SearchHit {
    /// The note's record as far as a hit needs it: its links, block ids, body
    /// line and diagnostics are not read (they are empty).
    pub record: NoteRecord,
    /// Its BM25-based score, levelled to its place on the page (`standing`).
    pub score: f32,
    /// The fields in which query terms occur, for `search_knowledge` (its
    /// title-side fields from the record, its headings from the index); empty
    /// for `search_note_content`, whose hits show snippets instead.
    pub matched: Vec<String>,
    /// tantivy's score explanation, when asked for.
    pub explanation: Option<serde_json::Value>,
    /// Whether it matched on lone CJK characters only while the query has longer
    /// words (`记` of `随手记`): ranked after every real match.
    pub weak: bool,
}

/// A page of search hits.
#[derive(Debug, Clone)]
pub struct SearchOutcome {
    /// All matching notes, not only those returned.
    pub total: usize,
    /// The best hits, best first; their scores never rise down the page.
    pub hits: Vec<SearchHit>,
    /// The analysed terms, for snippets.
    pub terms: BTreeSet<String>,
    /// Whether the search needed any one term only, because requiring more found nothing.
    pub relaxed: bool,
    /// Whether only typo-tolerant matching found anything (snippets may then be empty).
    pub fuzzy: bool,
    /// How many of the hits (the first) hold the share of the query's words
    /// the tool asks for; those after hold fewer, or lone characters only.
    pub(super) strict: usize,
}
