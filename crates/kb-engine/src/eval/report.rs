//! Running a suite against an engine, scoring it, and writing the result for people.
//!
//! Each case calls the very engine method its tool names, with the suite's
//! `topK` as the limit, so what is measured is what an agent gets. A case passes
//! when an acceptable note ranks at `maxRank` or better and no forbidden note is
//! anywhere in the top K; negative cases (nothing acceptable) only check the
//! latter. Recall@k and MRR@10 are computed over the cases that name an
//! acceptable note, overall, per tool and per query language, because an
//! average over English and Chinese together would hide a regression in one.
//! Everything comes out in suite order and sorted maps, so two runs over the
//! same index give byte-identical reports.

use std::collections::BTreeMap;
use std::fmt;

use serde::Serialize;

use super::language::language_of;
use super::suite::{Case, Suite, Tool};
use crate::engine::Engine;
use crate::engine::types::{RECALL_BUDGET, RecallArgs, SearchArgs};
use crate::error::{Error, Result};

/// A forbidden note that came back, and where.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ForbiddenMatch {
    /// Vault-relative path.
    pub path: String,
    /// 1-based rank.
    pub rank: u32,
}

/// How one case went.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct CaseReport {
    /// The case's id.
    pub id: String,
    /// The query as written in the suite.
    pub query: String,
    /// The search that answered.
    pub tool: Tool,
    /// The query's language (see [`language_of`]).
    pub language: String,
    /// The folder filter, if any.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub folder: Option<String>,
    /// The tag filter, if any.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tags: Option<Vec<String>>,
    /// Whether every expectation held.
    pub passed: bool,
    /// Best rank of an acceptable note in the top K, or null when none came back.
    pub matched_rank: Option<u32>,
    /// The worst rank that still passes.
    pub max_rank: u32,
    /// The notes that answer the query (empty for a negative case).
    pub acceptable: Vec<String>,
    /// Forbidden notes that came back within the top K.
    pub forbidden_matches: Vec<ForbiddenMatch>,
    /// How many notes matched at all.
    pub total: u64,
    /// The top K paths, best first.
    pub returned: Vec<String>,
}

impl CaseReport {
    /// Whether the case counts towards recall and MRR (it names an acceptable note).
    pub(crate) fn is_scored(&self) -> bool {
        !self.acceptable.is_empty()
    }
}

/// Recall and MRR over a group of cases.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Score {
    /// Cases in the group, negative ones included.
    pub cases: u32,
    /// Cases that passed.
    pub passed: u32,
    /// Cases that name an acceptable note: the denominator of recall and MRR.
    pub scored: u32,
    /// Share of scored cases with an acceptable note at rank 1 (null when none is scored).
    pub recall_at1: Option<f64>,
    /// … within the top 5.
    pub recall_at5: Option<f64>,
    /// … within the top 10.
    pub recall_at10: Option<f64>,
    /// Mean of 1/rank of the best acceptable note, counting 0 beyond rank 10.
    pub mrr_at10: Option<f64>,
}

impl Score {
    /// Scores a group of cases.
    pub fn of<'a>(cases: impl IntoIterator<Item = &'a CaseReport>) -> Score {
        let (mut total, mut passed, mut scored) = (0u32, 0u32, 0u32);
        let (mut at1, mut at5, mut at10, mut reciprocal) = (0u32, 0u32, 0u32, 0f64);
        for case in cases {
            total += 1;
            passed += u32::from(case.passed);
            if !case.is_scored() {
                continue;
            }
            scored += 1;
            if let Some(rank) = case.matched_rank {
                at1 += u32::from(rank <= 1);
                at5 += u32::from(rank <= 5);
                at10 += u32::from(rank <= 10);
                if rank <= 10 {
                    reciprocal += 1.0 / f64::from(rank);
                }
            }
        }
        let share = |hits: f64| (scored > 0).then(|| hits / f64::from(scored));
        Score {
            cases: total,
            passed,
            scored,
            recall_at1: share(f64::from(at1)),
            recall_at5: share(f64::from(at5)),
            recall_at10: share(f64::from(at10)),
            mrr_at10: share(reciprocal),
        }
    }
}

/// Scores overall, per tool and per query language.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Metrics {
    /// Every case.
    pub overall: Score,
    /// By tool name.
    pub by_tool: BTreeMap<String, Score>,
    /// By query language.
    pub by_language: BTreeMap<String, Score>,
}

impl Metrics {
    /// Computes every score of a list of case reports.
    pub fn of(cases: &[CaseReport]) -> Metrics {
        let group = |key: &dyn Fn(&CaseReport) -> String| {
            let mut groups: BTreeMap<String, Vec<&CaseReport>> = BTreeMap::new();
            for case in cases {
                groups.entry(key(case)).or_default().push(case);
            }
            groups.into_iter().map(|(name, members)| (name, Score::of(members))).collect()
        };
        Metrics {
            overall: Score::of(cases),
            by_tool: group(&|case| case.tool.as_str().to_owned()),
            by_language: group(&|case| case.language.clone()),
        }
    }
}

/// The outcome of a suite.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Report {
    /// The suite's format version.
    pub schema_version: u8,
    /// Results asked for and judged per query.
    pub top_k: u32,
    /// Cases that passed.
    pub passed: u32,
    /// Cases that failed.
    pub failed: u32,
    /// In suite order.
    pub cases: Vec<CaseReport>,
    /// Recall and MRR.
    pub metrics: Metrics,
}

impl Report {
    /// Builds a report (and its metrics) from case reports.
    pub fn new(schema_version: u8, top_k: u32, cases: Vec<CaseReport>) -> Report {
        let passed = cases.iter().filter(|case| case.passed).count() as u32;
        let failed = cases.len() as u32 - passed;
        let metrics = Metrics::of(&cases);
        Report { schema_version, top_k, passed, failed, cases, metrics }
    }

    /// Whether every case passed.
    pub fn all_passed(&self) -> bool {
        self.failed == 0
    }
}

/// Runs every case of `suite` against `engine`, in suite order.
///
/// Fails (`invalid_argument`, naming the case) when an acceptable note is not in
/// the index, since such a case could never pass and is a mistake in the suite,
/// or when the engine refuses a case's arguments. Forbidden notes need not
/// exist: "this denied file never comes back" is a fair expectation.
pub fn run(engine: &Engine, suite: &Suite) -> Result<Report> {
    run_with(engine, suite, &mut |case, top_k| search(engine, case, case.tool, top_k))
}

/// [`run`] with every case put through `tool` instead of its own (its report
/// names `tool`): how `recall_context` ranks a suite's questions, say.
pub fn run_as(engine: &Engine, suite: &Suite, tool: Tool) -> Result<Report> {
    let mut report = run_with(engine, suite, &mut |case, top_k| search(engine, case, tool, top_k))?;
    for case in &mut report.cases {
        case.tool = tool;
    }
    Ok(Report::new(report.schema_version, report.top_k, report.cases))
}

/// Runs every case against the yardstick ranking (plain BM25 over one body field,
/// default tokenizer) instead of the tools' search: the same suite, the same
/// metrics, for comparison. Both tools map to the one field; filters keep `folder`.
pub fn run_baseline(engine: &Engine, suite: &Suite) -> Result<Report> {
    let baseline = engine.baseline_index()?;
    run_with(engine, suite, &mut |case, top_k| {
        baseline.search(&case.query, case.folder.as_deref(), top_k as usize)
    })
}

/// A ranking under evaluation: (case, top K) to (match count, ranked paths).
type Ranker<'a> = dyn FnMut(&Case, u32) -> Result<(u64, Vec<String>)> + 'a;

/// Checks the suite's paths, then runs each case through `search`.
fn run_with(engine: &Engine, suite: &Suite, search: &mut Ranker<'_>) -> Result<Report> {
    for (i, case) in suite.cases.iter().enumerate() {
        for (j, path) in case.expectation.acceptable.iter().enumerate() {
            if engine.record(path).is_none() {
                let field = if suite.schema_version < 3 {
                    format!("cases[{i}].expected.path")
                } else {
                    format!("cases[{i}].acceptable[{j}]")
                };
                return Err(Error::invalid(format!(
                    "{field}: {path:?} (case {:?}) is not a note in this vault's index",
                    case.id
                ))
                .with_hint(
                    "paths are vault-relative with forward slashes; check --vault and rebuild the index",
                ));
            }
        }
    }
    let mut reports = Vec::with_capacity(suite.cases.len());
    for (i, case) in suite.cases.iter().enumerate() {
        let (total, returned) = search(case, suite.top_k).map_err(|err| Error {
            message: format!("cases[{i}] ({:?}): {}", case.id, err.message),
            ..err
        })?;
        reports.push(judge(case, total, returned));
    }
    Ok(Report::new(suite.schema_version, suite.top_k, reports))
}

/// Calls `tool` with the case's query and filters and returns the match count
/// and the ranked paths.
///
/// `recall_context` takes no limit and no tags (a case with tags is refused):
/// it runs with the largest budget, so no match is left out for want of room,
/// and its ranking is the distinct notes of its `match` items in order (at
/// most five); its count is theirs.
fn search(engine: &Engine, case: &Case, tool: Tool, top_k: u32) -> Result<(u64, Vec<String>)> {
    let args = SearchArgs {
        query: case.query.clone(),
        tags: case.tags.clone(),
        folder: case.folder.clone(),
        limit: Some(top_k),
        ..SearchArgs::default()
    };
    Ok(match tool {
        Tool::RecallContext => {
            if case.tags.is_some() {
                return Err(Error::invalid("recall_context takes no tags"));
            }
            let recall = RecallArgs {
                topic: case.query.clone(),
                budget_tokens: Some(RECALL_BUDGET.max),
                folder: case.folder.clone(),
            };
            let mut ranked: Vec<String> = Vec::new();
            for item in engine.recall_context(&recall)?.items {
                if item.reason == "match" && !ranked.contains(&item.path) {
                    ranked.push(item.path);
                }
            }
            ranked.truncate(top_k as usize);
            (ranked.len() as u64, ranked)
        }
        Tool::SearchKnowledge => {
            let found = engine.search_knowledge(&args)?;
            (found.total, found.results.into_iter().map(|hit| hit.path).collect())
        }
        Tool::SearchNoteContent => {
            let found = engine.search_note_content(&args)?;
            (found.total, found.results.into_iter().map(|hit| hit.path).collect())
        }
    })
}

/// Judges one case's ranked paths against its expectation.
pub(crate) fn judge(case: &Case, total: u64, returned: Vec<String>) -> CaseReport {
    let expectation = &case.expectation;
    let rank_of = |i: usize| i as u32 + 1;
    let matched_rank = returned.iter().position(|path| expectation.acceptable.contains(path)).map(rank_of);
    let forbidden_matches: Vec<ForbiddenMatch> = returned
        .iter()
        .enumerate()
        .filter(|(_, path)| expectation.forbidden.contains(path))
        .map(|(i, path)| ForbiddenMatch { path: path.clone(), rank: rank_of(i) })
        .collect();
    let found_acceptable =
        expectation.is_negative() || matched_rank.is_some_and(|r| r <= expectation.max_rank);
    CaseReport {
        id: case.id.clone(),
        query: case.query.clone(),
        tool: case.tool,
        language: language_of(&case.query).to_owned(),
        folder: case.folder.clone(),
        tags: case.tags.clone(),
        passed: found_acceptable && forbidden_matches.is_empty(),
        matched_rank,
        max_rank: expectation.max_rank,
        acceptable: expectation.acceptable.clone(),
        forbidden_matches,
        total,
        returned,
    }
}

/// How many returned paths a failed case shows in the text rendering.
const SHOWN_ON_FAILURE: usize = 5;

fn ratio(value: Option<f64>) -> String {
    value.map_or_else(|| "-".to_owned(), |v| format!("{v:.3}"))
}

fn score_line(f: &mut fmt::Formatter<'_>, label: &str, score: &Score) -> fmt::Result {
    writeln!(
        f,
        "{label:<28} {:>5} {:>6} {:>6}  {:>6} {:>6} {:>6} {:>6}",
        score.cases,
        score.passed,
        score.scored,
        ratio(score.recall_at1),
        ratio(score.recall_at5),
        ratio(score.recall_at10),
        ratio(score.mrr_at10)
    )
}

/// The human rendering: one line per case (failures with what came back),
/// then the score table.
impl fmt::Display for Report {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let id_width = self.cases.iter().map(|case| case.id.chars().count()).max().unwrap_or(0).min(40);
        for case in &self.cases {
            let rank = case.matched_rank.map_or_else(|| "-".to_owned(), |r| r.to_string());
            let verdict = if case.passed { "PASS" } else { "FAIL" };
            let rank = if case.is_scored() {
                format!("rank {rank:>2}/{:<2}", case.max_rank)
            } else {
                "negative  ".to_owned()
            };
            writeln!(
                f,
                "{verdict}  {rank}  {:<19} {:<5} {:<id_width$}  {}",
                case.tool.as_str(),
                case.language,
                case.id,
                case.query
            )?;
            if case.passed {
                continue;
            }
            if case.is_scored() {
                writeln!(f, "        want: {}", case.acceptable.join(" | "))?;
            }
            for forbidden in &case.forbidden_matches {
                writeln!(f, "        forbidden at {}: {}", forbidden.rank, forbidden.path)?;
            }
            if case.returned.is_empty() {
                writeln!(f, "        got:  nothing ({} matches)", case.total)?;
            }
            for (i, path) in case.returned.iter().take(SHOWN_ON_FAILURE).enumerate() {
                let lead = if i == 0 { "got: " } else { "     " };
                writeln!(f, "        {lead} {}. {path}", i + 1)?;
            }
        }
        writeln!(f)?;
        writeln!(
            f,
            "{} cases: {} passed, {} failed (top {}, schema version {})",
            self.cases.len(),
            self.passed,
            self.failed,
            self.top_k,
            self.schema_version
        )?;
        writeln!(f)?;
        writeln!(
            f,
            "{:<28} {:>5} {:>6} {:>6}  {:>6} {:>6} {:>6} {:>6}",
            "", "cases", "passed", "scored", "R@1", "R@5", "R@10", "MRR@10"
        )?;
        score_line(f, "overall", &self.metrics.overall)?;
        for (tool, score) in &self.metrics.by_tool {
            score_line(f, tool, score)?;
        }
        for (language, score) in &self.metrics.by_language {
            score_line(f, &format!("language {language}"), score)?;
        }
        Ok(())
    }
}
