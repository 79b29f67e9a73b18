//! What a query does with the vectors: which path it runs (`hybrid`, or
//! `lexical` and why), the notes nearest its meaning, and their fusion with
//! the lexical ranking.
//!
//! A question's page (a sentence of four words or more, as the lexical
//! ranking tells it) is ordered by reciprocal rank fusion: a note at rank `r`
//! of a ranking scores `weight / (RANK_CONSTANT + r)`, the lexical ranking
//! with weight 1, the semantic one with [`TITLE_WEIGHT`] or [`TEXT_WEIGHT`],
//! and a note only the meaning finds can enter the page. Any other query
//! (names, keywords) is one the lexical ranking answers with confidence: its
//! page keeps the lexical order, and is only filled, when short, by notes
//! near its meaning. A note less similar than [`MIN_SIMILARITY`] does not
//! count. Chosen with `kb-index eval` on every suite (BENCHMARKS.md, "Hybrid
//! ranking"): fusing keyword queries too moved 18 names and aliases of the
//! keyword suites from first place.

use std::collections::HashMap;
use std::sync::Arc;

use super::super::Engine;
use crate::engine::types::{Ranking, RankingPath};
use crate::index::semantic::{Model, SemanticHit, Vectors, language_name, query_language};

/// The usual rank constant of reciprocal rank fusion.
const RANK_CONSTANT: f32 = 60.0;

/// The semantic ranking's weight beside the lexical one's (1) in
/// `search_knowledge` (and the title side of `recall_context`).
const TITLE_WEIGHT: f32 = 1.0;

/// The semantic ranking's weight in `search_note_content`, whose lexical
/// ranking reads the whole text already: at 1 it lost three of its questions'
/// answers from the top 5 for the two it gained; at 0.5 it loses two and gains
/// four (BENCHMARKS.md, "Hybrid ranking").
const TEXT_WEIGHT: f32 = 0.5;

/// A note whose nearest section is less similar than this does not count.
const MIN_SIMILARITY: f32 = 0.3;

/// A keyword query's short page is filled only by notes at least this near.
const FILL_SIMILARITY: f32 = 0.45;

/// How deep `search_knowledge`'s lexical ranking of a question is read for
/// the fusion: from 30 to 10 it gained a question of each suite (notes deep in
/// the title ranking are there by a common word) and its p99 at 10,000 notes
/// fell (BENCHMARKS.md, "Hybrid ranking").
const TITLE_DEPTH: usize = 10;

/// How deep `search_note_content`'s lexical ranking of a question is read:
/// at 10 it lost a question's answer from the top 5 that 30 keeps.
const TEXT_DEPTH: usize = 30;

/// How deep the semantic ranking is read for the fusion.
pub(crate) const FUSION_DEPTH: usize = 30;

/// What a query will do: the path and, for `hybrid`, the notes nearest its
/// meaning and the store they came from.
pub(crate) struct RankingPlan {
    pub(crate) ranking: Ranking,
    pub(crate) near: Vec<SemanticHit>,
    store: Option<Arc<Vectors>>,
    model: Option<Arc<Model>>,
    query: String,
    /// Whether the query is a question (see `index::is_question_query`).
    question: bool,
}

/// One note of a fused page: its path, fused score, the lexical hit's index
/// (when the lexical ranking found it) and its semantic hit (when the meaning did).
pub(crate) struct Fused {
    pub(crate) path: Arc<str>,
    pub(crate) score: f32,
    pub(crate) lexical: Option<usize>,
    pub(crate) near: Option<SemanticHit>,
}

impl RankingPlan {
    fn lexical(why: String) -> RankingPlan {
        RankingPlan {
            ranking: Ranking::lexical(why),
            near: Vec::new(),
            store: None,
            model: None,
            query: String::new(),
            question: false,
        }
    }

    /// The same plan saying `why` when it is lexical.
    pub(crate) fn with_why(mut self, why: &str) -> RankingPlan {
        if self.ranking.path == RankingPath::Lexical && !self.ranking.why.starts_with("off: [semantic]") {
            self.ranking.why = why.to_owned();
        }
        self
    }

    /// How many lexical hits the fusion reads for a page of `limit`: a
    /// question's page is reordered from the first [`TITLE_DEPTH`] of
    /// `search_knowledge` or [`TEXT_DEPTH`] of `search_note_content`; another
    /// query's page is kept.
    pub(crate) fn lexical_depth(&self, limit: usize, text_tool: bool) -> usize {
        match self.ranking.path == RankingPath::Hybrid && self.question {
            true if text_tool => limit.max(TEXT_DEPTH),
            true => limit.max(TITLE_DEPTH),
            false => limit,
        }
    }

    /// Whether the page will need the query's vector whatever the lexical
    /// ranking finds (a question's does), so it can be embedded meanwhile.
    pub(crate) fn needs_vector(&self) -> bool {
        self.question && self.model.is_some() && self.store.is_some()
    }

    /// Embeds the query into the model's recent vectors (see
    /// [`Model::embed_query`]), for [`RankingPlan::find_near`] to find there;
    /// a failure is left for `find_near` to meet and report.
    pub(crate) fn embed_ahead(&self) {
        if let Some(model) = &self.model {
            let _ = model.embed_query(&self.query);
        }
    }

    /// Finds the notes nearest the query's meaning among those `keep` allows,
    /// when the page needs them: a question's always, another query's when
    /// its `found` lexical hits do not fill the page of `limit`. Embedding the
    /// query is most of a hybrid search's cost, so a full keyword page skips it.
    pub(crate) fn find_near(&mut self, found: usize, limit: usize, keep: &(dyn Fn(&str) -> bool + Sync)) {
        let (Some(model), Some(store)) = (&self.model, &self.store) else { return };
        if !self.question && found >= limit {
            return;
        }
        let vector = match model.embed_query(&self.query) {
            Ok(vector) => vector,
            Err(error) => return *self = RankingPlan::lexical(format!("failed: {}", error.message)),
        };
        self.near = store.search(&vector, FUSION_DEPTH, keep);
        self.near.retain(|hit| hit.similarity >= MIN_SIMILARITY);
    }

    /// A hit's score: the lexical one on a lexical page, the fused one (times
    /// 1,000) on a hybrid page.
    pub(crate) fn score(&self, fused: &Fused, lexical: f32) -> f32 {
        if self.ranking.path == RankingPath::Hybrid { fused.score * 1000.0 } else { lexical }
    }

    /// A hit's explanation with, on a hybrid page, what each ranking gave it.
    pub(crate) fn explain(
        &self,
        fused: &Fused,
        lexical: Option<serde_json::Value>,
        asked: bool,
    ) -> Option<serde_json::Value> {
        if self.ranking.path != RankingPath::Hybrid || !asked {
            return lexical;
        }
        Some(serde_json::json!({
            "lexical": lexical,
            "lexical_rank": fused.lexical.map(|r| r + 1),
            "semantic_similarity": fused.near.as_ref().map(|n| n.similarity),
            "semantic_rank": fused.near.as_ref().and_then(|n| self.near.iter().position(|h| h.path == n.path)).map(|r| r + 1),
            "fused": fused.score,
        }))
    }

    /// At least how many notes matched: those of both rankings.
    pub(crate) fn total_floor(&self, lexical: &[&str]) -> u64 {
        let extra = self.near.iter().filter(|hit| !lexical.contains(&&*hit.path)).count();
        (lexical.len() + extra) as u64
    }

    /// Whether the note at `path` has no vector in the store the query used
    /// (no model reads its language, or it is not embedded yet).
    pub(crate) fn lexical_only(&self, path: &str) -> bool {
        self.store.as_ref().is_some_and(|store| store.note(path).is_none_or(|n| n.rows.is_empty()))
    }

    /// The lexical ranking (`paths`, best first) fused with the semantic one;
    /// the lexical order alone when the path is lexical. A question's page is
    /// ordered by both rankings; any other query's lexical page is kept as it
    /// is, and only filled (when short) by the notes nearest its meaning.
    pub(crate) fn fuse(&self, paths: &[&str], limit: usize, text_tool: bool) -> Vec<Fused> {
        let weight = if text_tool { TEXT_WEIGHT } else { TITLE_WEIGHT };
        let mut fused: Vec<Fused> = paths
            .iter()
            .enumerate()
            .map(|(rank, path)| Fused {
                path: Arc::from(*path),
                score: 1.0 / (RANK_CONSTANT + rank as f32 + 1.0),
                lexical: Some(rank),
                near: None,
            })
            .collect();
        if self.ranking.path == RankingPath::Hybrid {
            let at: HashMap<Arc<str>, usize> =
                fused.iter().enumerate().map(|(i, f)| (f.path.clone(), i)).collect();
            let lexical_len = fused.len();
            for (rank, hit) in self.near.iter().enumerate() {
                let add = weight / (RANK_CONSTANT + rank as f32 + 1.0);
                match at.get(&hit.path) {
                    Some(&i) => {
                        fused[i].near = Some(hit.clone());
                        if self.question {
                            fused[i].score += add;
                        }
                    }
                    None if self.question || hit.similarity >= FILL_SIMILARITY => fused.push(Fused {
                        path: hit.path.clone(),
                        // A keyword query's page gains notes only after its own.
                        score: if self.question { add } else { -(rank as f32) - 1.0 },
                        lexical: None,
                        near: Some(hit.clone()),
                    }),
                    None => {}
                }
            }
            if self.question {
                fused.sort_by(|a, b| {
                    b.score
                        .total_cmp(&a.score)
                        .then_with(|| a.lexical.unwrap_or(usize::MAX).cmp(&b.lexical.unwrap_or(usize::MAX)))
                });
            } else {
                fused[lexical_len..].sort_by(|a, b| b.score.total_cmp(&a.score));
            }
        }
        fused.truncate(limit);
        fused
    }
}

impl Engine {
    /// Which path `query` runs: `hybrid` when the layer is on, a complete
    /// pass exists and a model reads the query's language, else `lexical` and
    /// why. `wanted` false (a search asked to stay lexical) gives `lexical`.
    /// The query is embedded later, and only when the page needs it
    /// ([`RankingPlan::find_near`]).
    pub(crate) fn ranking_plan(&self, query: &str, wanted: bool) -> RankingPlan {
        let config = self.config().semantic.clone();
        if !config.enabled {
            return RankingPlan::lexical("off: [semantic] enabled = false in kb.toml".into());
        }
        if !wanted || self.semantic.unwanted.load(std::sync::atomic::Ordering::Relaxed) {
            return RankingPlan::lexical("off: this search was asked to stay lexical".into());
        }
        if let Some(error) = self.semantic.load_error(&config) {
            return RankingPlan::lexical(format!("failed: {error}"));
        }
        let Some(stores) = self.semantic.stores() else {
            let progress = self.semantic.progress();
            let so_far = if progress.total > 0 {
                format!(" ({} of {} sections so far)", progress.done, progress.total)
            } else {
                String::new()
            };
            return RankingPlan::lexical(format!(
                "building: the notes are not embedded yet{so_far} (a running server embeds them in the background; \
                 so does kb-index build)"
            ));
        };
        let language = query_language(query);
        let Some(m) = stores.models.iter().position(|model| model.covers(language)) else {
            return RankingPlan::lexical(format!(
                "no_model: no model reads this query's language ({}); name one in kb.toml [semantic] model",
                language_name(language)
            ));
        };
        if stores.vectors[m].is_empty() {
            return RankingPlan::lexical(format!(
                "no_model: no note here is in a language the model for {} reads",
                language_name(language)
            ));
        }
        RankingPlan {
            ranking: Ranking::hybrid(stores.models[m].id()),
            near: Vec::new(),
            store: Some(stores.vectors[m].clone()),
            model: Some(stores.models[m].clone()),
            query: query.to_owned(),
            question: crate::index::is_question_query(query),
        }
    }
}
