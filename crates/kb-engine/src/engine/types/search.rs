//! `search_knowledge` and `search_note_content`: the request and the hits.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::bounds::SEARCH_LIMIT;
use super::is_zero;
use crate::index::SearchPasses;

/// `search_knowledge` and `search_note_content` arguments.
#[derive(Debug, Clone, Default, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct SearchArgs {
    /// Words, `"exact phrase"`, `-excluded`.
    pub query: String,
    /// Only notes with all these tags (`type` takes `type/x`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tags: Option<Vec<String>>,
    /// Only notes under this folder.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub folder: Option<String>,
    /// How many results ([`SEARCH_LIMIT`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = SEARCH_LIMIT.min, max = SEARCH_LIMIT.max), description = SEARCH_LIMIT.how_many("How many results"))]
    pub limit: Option<u32>,
    /// Explain each hit's score.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub explain: Option<bool>,
    /// Which of the search's optional passes it makes: all of them, unless a
    /// test turns one off. Not an argument of the tools: never read from JSON.
    #[serde(skip)]
    #[schemars(skip)]
    pub passes: SearchPasses,
}

/// Which ranking ran: `lexical` (words) or `hybrid` (words and meaning).
#[derive(Debug, Clone, Copy, Serialize, Deserialize, JsonSchema, PartialEq, Eq)]
#[serde(rename_all = "lowercase")]
pub enum RankingPath {
    /// The lexical ranking alone.
    Lexical,
    /// The lexical ranking fused with the notes nearest the query's meaning.
    Hybrid,
}

/// How a result was ranked.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema, PartialEq, Eq)]
pub struct Ranking {
    /// `lexical` or `hybrid`.
    pub path: RankingPath,
    /// `lexical`: why not hybrid, starting with `off`, `building`, `no_model`
    /// or `failed`; `hybrid`: the model's id.
    pub why: String,
}

impl Ranking {
    /// The lexical path, and why.
    pub fn lexical(why: String) -> Ranking {
        Ranking { path: RankingPath::Lexical, why }
    }

    /// The hybrid path, with the model's id.
    pub fn hybrid(model: &str) -> Ranking {
        Ranking { path: RankingPath::Hybrid, why: model.to_owned() }
    }
}

/// One `search_knowledge` hit.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema, PartialEq)]
pub struct KnowledgeHit {
    /// Vault-relative path.
    pub path: String,
    /// Title.
    pub title: String,
    /// Aliases (the first 20).
    pub aliases: Vec<String>,
    /// Description (cut to 300 characters).
    pub description: String,
    /// Tags (the first 20).
    pub tags: Vec<String>,
    /// Relevance score (higher is better; comparable within one result list only).
    pub score: f32,
    /// Fields in which query terms occur: `title`, `aliases`, `description`,
    /// `tags`, `headings`; `text` when only the note's text holds them.
    pub matched: Vec<String>,
    /// Aliases left out of `aliases` (read the note for all).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub aliases_omitted: u64,
    /// Tags left out of `tags` (read the note for all).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub tags_omitted: u64,
    /// True when it matched only on single CJK characters of a query that has
    /// longer words (`记` of `随手记`); such hits come after every other.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub weak: bool,
    /// True on a `hybrid` page for a note ranked by its words alone (no model
    /// reads its language, or it is not embedded yet).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub lexical_only: bool,
    /// Why it scored, when `explain` was true.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub explain: Option<serde_json::Value>,
    /// An entry of the agent's memory (`person`/`vault`), not a note.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(with = "String")]
    pub memory: Option<super::MemoryAbout>,
    /// The vault it is in: set on a search of every vault (`vault: "*"`) of
    /// a server serving several.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(skip)]
    pub vault: Option<String>,
}

/// `search_knowledge` result.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema, PartialEq)]
pub struct KnowledgeResults {
    /// The query as given.
    pub query: String,
    /// Matching notes, not only those returned. When the title side alone
    /// fills the page (and no note matching only in headings or text could
    /// outrank its last hit), it counts the notes matching by title, file name,
    /// aliases, description or tags; otherwise every matching note.
    pub total: u64,
    /// Best first.
    pub results: Vec<KnowledgeHit>,
    /// Present when the answer may miss recent changes: the index had not yet
    /// caught up with the files (a server answering during its start-up sync).
    /// Ask again in a moment for a complete answer.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(with = "String")]
    pub stale: Option<String>,
    /// How it was ranked.
    pub ranking: Ranking,
}

/// A highlighted excerpt.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema, PartialEq)]
pub struct SnippetOut {
    /// The line with matched terms in `**…**`.
    pub text: String,
    /// The heading the line sits under, or null.
    pub heading: Option<String>,
    /// 1-based line in the file.
    pub line: u32,
    /// Where each match's `**…**` lies in `text` (byte ranges, marks
    /// included), apart from the note's own `**bold**`: not published (the
    /// command line colours matches, or shows plain text, by it).
    #[serde(skip)]
    #[schemars(skip)]
    pub marks: Vec<(usize, usize)>,
}

/// One `search_note_content` hit.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema, PartialEq)]
pub struct ContentHit {
    /// Vault-relative path.
    pub path: String,
    /// Title.
    pub title: String,
    /// Relevance score.
    pub score: f32,
    /// Up to three excerpts, best first.
    pub snippets: Vec<SnippetOut>,
    /// True when it matched only on single CJK characters of a query that has
    /// longer words (`记` of `随手记`); such hits come after every other.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub weak: bool,
    /// True on a `hybrid` page for a note ranked by its words alone (no model
    /// reads its language, or it is not embedded yet).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub lexical_only: bool,
    /// Why it scored, when `explain` was true.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub explain: Option<serde_json::Value>,
    /// An entry of the agent's memory (`person`/`vault`), not a note.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(with = "String")]
    pub memory: Option<super::MemoryAbout>,
    /// The vault it is in: set on a search of every vault (`vault: "*"`) of
    /// a server serving several.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(skip)]
    pub vault: Option<String>,
}

/// `search_note_content` result.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema, PartialEq)]
pub struct ContentResults {
    /// The query as given.
    pub query: String,
    /// All matching notes, not only those returned.
    pub total: u64,
    /// Best first.
    pub results: Vec<ContentHit>,
    /// Present when the answer may miss recent changes: the index had not yet
    /// caught up with the files (a server answering during its start-up sync).
    /// Ask again in a moment for a complete answer.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(with = "String")]
    pub stale: Option<String>,
    /// How it was ranked.
    pub ranking: Ranking,
}
