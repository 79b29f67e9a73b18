//! `recall`: a budgeted pack of the notes and sections that answer a question.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::bounds::RECALL_BUDGET;

/// `recall_context` arguments.
#[derive(Debug, Clone, Default, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RecallArgs {
    /// A topic or a question, in any language.
    pub topic: String,
    /// The most tokens the pack may use ([`RECALL_BUDGET`]). Estimated
    /// conservatively: one token per Chinese, Japanese or Korean character.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(
        range(min = RECALL_BUDGET.min, max = RECALL_BUDGET.max),
        description = format!(
            "Most tokens the pack may use (default {}); a CJK character is one.",
            RECALL_BUDGET.default
        )
    )]
    pub budget_tokens: Option<u32>,
    /// Only notes under this folder.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub folder: Option<String>,
}

/// One piece of a context pack.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema, PartialEq)]
pub struct RecallItem {
    /// The note.
    pub path: String,
    /// Its title.
    pub title: String,
    /// The heading of the section, or null for the note's opening.
    pub section: Option<String>,
    /// The section's text (cut at a line to fit the budget when needed).
    pub text: String,
    /// Why it is here: `match`, `outlink of <path>` or `backlink of <path>`.
    pub reason: String,
    /// Relevance (matches: the search score; neighbours: their match's score, halved).
    pub score: f32,
    /// An entry of the agent's memory (`person`/`vault`), not a note.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(with = "String")]
    pub memory: Option<super::MemoryAbout>,
}

/// `recall_context` result.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema, PartialEq)]
pub struct RecallPack {
    /// The topic as given.
    pub topic: String,
    /// The budget in force.
    pub budget_tokens: u32,
    /// Tokens the items use (same estimate).
    pub used_tokens: u32,
    /// Matches first (best first), then their link neighbours.
    pub items: Vec<RecallItem>,
    /// Present when the answer may miss recent changes: the index had not yet
    /// caught up with the files (a server answering during its start-up sync).
    /// Ask again in a moment for a complete answer.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(with = "String")]
    pub stale: Option<String>,
    /// How its matches were ranked.
    pub ranking: super::search::Ranking,
}
