//! The committed baseline of each public retrieval suite, and the gate that holds
//! search to it.
//!
//! `fixtures/eval/baselines/<suite>.json` keeps what was measured: the rank of
//! every case, the scores of kb-mcp and of the plain-BM25 yardstick
//! (`kb-index eval --baseline`) overall, per language, per tool, per query kind
//! (questions or keywords), per language and tool and per language and kind, and
//! two lists a person edits by hand: the
//! cases known to fail (`knownFailures`) and the groups where kb-mcp is known to
//! score below BM25 (`belowBm25`), each with the reason. The gate fails on any
//! difference from the file, better or worse, so a regression cannot hide
//! behind an average and an improvement is written down where the next change
//! is measured from. `KB_UPDATE_EVAL_BASELINE=1` rewrites the measured parts
//! after a change meant to improve ranking; it refuses to record a newly
//! failing case or a new loss to BM25 until a person lists it with a reason.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt::Write as _;
use std::path::Path;

use kb_mcp::eval::{CaseReport, Report, Score};

/// The environment variable that rewrites the measured parts of the baselines.
pub(crate) const UPDATE_VAR: &str = "KB_UPDATE_EVAL_BASELINE";

/// The command that refreshes every baseline after an intended ranking change.
pub(crate) const UPDATE_COMMAND: &str = "KB_UPDATE_EVAL_BASELINE=1 cargo test --locked --test it eval::";

/// Tolerance when comparing two means of the same cases (sums in the same order
/// are exact; this only absorbs the last bit of a division).
const EPSILON: f64 = 1e-9;

/// What `fixtures/eval/baselines/<suite>.json` holds.
#[derive(Debug, Default)]
pub(crate) struct Baseline {
    /// Case id → why it fails today (hand-edited).
    pub known_failures: BTreeMap<String, String>,
    /// Group (`overall`, `en`, `search_knowledge`, `en search_knowledge`, …) → why
    /// kb-mcp scores below BM25 there (hand-edited).
    pub below_bm25: BTreeMap<String, String>,
    /// Case id → best rank of an acceptable note (None: none in the top K, or negative).
    pub ranks: BTreeMap<String, Option<u32>>,
    /// Group → the measured scores, as written in the file.
    pub scores: BTreeMap<String, GroupScores>,
}

/// The scores of one group, rounded as the file writes them.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct GroupScores {
    pub scored: u32,
    pub kb: [Option<f64>; 4],
    pub bm25: [Option<f64>; 2],
}

impl GroupScores {
    /// "kb R@1 0.951 → 0.961, …": what moved between two measurements.
    fn differences(&self, now: &GroupScores) -> String {
        let mut moved = Vec::new();
        if self.scored != now.scored {
            moved.push(format!("scored {} → {}", self.scored, now.scored));
        }
        let labels = ["kb R@1", "kb R@5", "kb R@10", "kb MRR@10", "BM25 R@5", "BM25 MRR@10"];
        let before = self.kb.iter().chain(&self.bm25);
        let after = now.kb.iter().chain(&now.bm25);
        for ((label, before), after) in labels.iter().zip(before).zip(after) {
            if before != after {
                moved.push(format!("{label} {} → {}", ratio(*before), ratio(*after)));
            }
        }
        moved.join(", ")
    }
}

/// kb-mcp and BM25 side by side in one group of cases.
#[derive(Debug, Clone)]
pub(crate) struct Group {
    pub name: String,
    pub kb: Score,
    pub bm25: Score,
}

impl Group {
    fn scores(&self) -> GroupScores {
        let r = |v: Option<f64>| v.map(|v| (v * 1000.0).round() / 1000.0);
        GroupScores {
            scored: self.kb.scored,
            kb: [r(self.kb.recall_at1), r(self.kb.recall_at5), r(self.kb.recall_at10), r(self.kb.mrr_at10)],
            bm25: [r(self.bm25.recall_at5), r(self.bm25.mrr_at10)],
        }
    }

    /// Where kb-mcp scores below BM25 (recall@5 or MRR@10), as text, or None.
    pub(crate) fn loss_to_bm25(&self) -> Option<String> {
        let below = |kb: Option<f64>, bm25: Option<f64>| match (kb, bm25) {
            (Some(kb), Some(bm25)) => kb + EPSILON < bm25,
            _ => false,
        };
        let mut lost = Vec::new();
        if below(self.kb.recall_at5, self.bm25.recall_at5) {
            lost.push(format!("R@5 {} < {}", ratio(self.kb.recall_at5), ratio(self.bm25.recall_at5)));
        }
        if below(self.kb.mrr_at10, self.bm25.mrr_at10) {
            lost.push(format!("MRR@10 {} < {}", ratio(self.kb.mrr_at10), ratio(self.bm25.mrr_at10)));
        }
        (!lost.is_empty()).then(|| lost.join(", "))
    }
}

fn ratio(value: Option<f64>) -> String {
    value.map_or_else(|| "-".to_owned(), |v| format!("{v:.3}"))
}

/// A case's query kind: `questions` when its id says so (the suites name every
/// natural-language question `…-question-…`), else `keywords`.
pub(crate) fn kind_of(case: &CaseReport) -> &'static str {
    if case.id.contains("question") { "questions" } else { "keywords" }
}

/// Overall; per language, per tool, per query kind; per language and tool; per
/// language and query kind; in that order.
pub(crate) fn groups(kb: &Report, bm25: &Report) -> Vec<Group> {
    assert_eq!(kb.cases.len(), bm25.cases.len(), "both rankings ran the same suite");
    let languages: BTreeSet<&str> = kb.cases.iter().map(|c| c.language.as_str()).collect();
    let tools: BTreeSet<&str> = kb.cases.iter().map(|c| c.tool.as_str()).collect();
    let kinds: BTreeSet<&str> = kb.cases.iter().map(kind_of).collect();
    // (language, tool, kind): None matches any.
    type Key<'a> = (Option<&'a str>, Option<&'a str>, Option<&'a str>);
    let mut keys: Vec<Key<'_>> = vec![(None, None, None)];
    keys.extend(languages.iter().map(|&l| (Some(l), None, None)));
    keys.extend(tools.iter().map(|&t| (None, Some(t), None)));
    keys.extend(kinds.iter().map(|&k| (None, None, Some(k))));
    keys.extend(languages.iter().flat_map(|&l| tools.iter().map(move |&t| (Some(l), Some(t), None))));
    keys.extend(languages.iter().flat_map(|&l| kinds.iter().map(move |&k| (Some(l), None, Some(k)))));
    let member = |(language, tool, kind): Key<'_>, case: &CaseReport| {
        language.is_none_or(|l| case.language == l)
            && tool.is_none_or(|t| case.tool.as_str() == t)
            && kind.is_none_or(|k| kind_of(case) == k)
    };
    keys.into_iter()
        .filter(|&key| kb.cases.iter().any(|c| member(key, c)))
        .map(|key| Group {
            name: match key {
                (None, None, None) => "overall".to_owned(),
                (l, t, k) => [l, t, k].into_iter().flatten().collect::<Vec<_>>().join(" "),
            },
            kb: Score::of(kb.cases.iter().filter(|c| member(key, c))),
            bm25: Score::of(bm25.cases.iter().filter(|c| member(key, c))),
        })
        .collect()
}

/// The side-by-side table printed with every run.
pub(crate) fn side_by_side(groups: &[Group]) -> String {
    let mut text = format!(
        "{:<28} {:>6}  {:>6} {:>6} {:>6}  {:>8} {:>8}\n",
        "kb-mcp vs BM25", "scored", "R@1", "R@5", "MRR@10", "BM25 R@5", "BM25 MRR"
    );
    for g in groups {
        let _ = writeln!(
            text,
            "{:<28} {:>6}  {:>6} {:>6} {:>6}  {:>8} {:>8}{}",
            g.name,
            g.kb.scored,
            ratio(g.kb.recall_at1),
            ratio(g.kb.recall_at5),
            ratio(g.kb.mrr_at10),
            ratio(g.bm25.recall_at5),
            ratio(g.bm25.mrr_at10),
            g.loss_to_bm25().map_or_else(String::new, |loss| format!("  BELOW BM25: {loss}"))
        );
    }
    text
}

fn parse(path: &Path, text: &str) -> Baseline {
    let fail = |what: &str| -> ! { panic!("{}: {what}", path.display()) };
    let json: serde_json::Value =
        serde_json::from_str(text).unwrap_or_else(|err| fail(&format!("not valid JSON: {err}")));
    let object = |key: &str| -> serde_json::Map<String, serde_json::Value> {
        match json.get(key) {
            Some(serde_json::Value::Object(map)) => map.clone(),
            _ => fail(&format!("`{key}` must be an object")),
        }
    };
    let reasons = |key: &str| -> BTreeMap<String, String> {
        object(key)
            .into_iter()
            .map(|(k, v)| match v.as_str() {
                Some(reason) if !reason.trim().is_empty() => (k, reason.to_owned()),
                _ => fail(&format!("`{key}.{k}` must give the reason as a non-empty string")),
            })
            .collect()
    };
    let ranks = object("ranks")
        .into_iter()
        .map(|(k, v)| {
            let rank = match v {
                serde_json::Value::Null => None,
                v => {
                    Some(v.as_u64().unwrap_or_else(|| fail(&format!("`ranks.{k}` must be a rank or null")))
                        as u32)
                }
            };
            (k, rank)
        })
        .collect();
    let number = |v: &serde_json::Value| v.as_f64();
    let scores = object("scores")
        .into_iter()
        .map(|(k, v)| {
            let kb = &v["kb"];
            let bm25 = &v["bm25"];
            let scores = GroupScores {
                scored: v["scored"].as_u64().unwrap_or_else(|| fail(&format!("`scores.{k}.scored`"))) as u32,
                kb: [number(&kb["R@1"]), number(&kb["R@5"]), number(&kb["R@10"]), number(&kb["MRR@10"])],
                bm25: [number(&bm25["R@5"]), number(&bm25["MRR@10"])],
            };
            (k, scores)
        })
        .collect();
    Baseline { known_failures: reasons("knownFailures"), below_bm25: reasons("belowBm25"), ranks, scores }
}

fn quote(text: &str) -> String {
    serde_json::to_string(text).unwrap()
}

fn number(value: Option<f64>) -> String {
    value.map_or_else(|| "null".to_owned(), |v| format!("{v}"))
}

/// The file's text: hand-edited lists first, then one line per case and per group
/// (in suite and group order), so a change reads as a short diff.
fn render(suite_file: &str, baseline: &Baseline, kb: &Report, groups: &[Group]) -> String {
    let mut out = String::from("{\n");
    let _ = writeln!(
        out,
        "  \"about\": {},",
        quote(&format!(
            "Measured results of {suite_file}, checked case by case by tests/it/eval.rs: any difference fails. \
             knownFailures (case id: why it fails) and belowBm25 (group: why kb-mcp scores below plain BM25 there) \
             are edited by hand; ranks and scores are measured. After a change meant to improve ranking, run \
             `{UPDATE_COMMAND}` and commit the diff."
        ))
    );
    let list = |out: &mut String, key: &str, map: &BTreeMap<String, String>, last: bool| {
        let _ = write!(out, "  \"{key}\": {{");
        for (i, (k, v)) in map.iter().enumerate() {
            let _ = write!(out, "{}\n    {}: {}", if i == 0 { "" } else { "," }, quote(k), quote(v));
        }
        let _ =
            writeln!(out, "{}}}{}", if map.is_empty() { "" } else { "\n  " }, if last { "" } else { "," });
    };
    list(&mut out, "knownFailures", &baseline.known_failures, false);
    list(&mut out, "belowBm25", &baseline.below_bm25, false);
    out.push_str("  \"ranks\": {\n");
    for (i, case) in kb.cases.iter().enumerate() {
        let comma = if i + 1 == kb.cases.len() { "" } else { "," };
        let rank = case.matched_rank.map_or_else(|| "null".to_owned(), |r| r.to_string());
        let _ = writeln!(out, "    {}: {rank}{comma}", quote(&case.id));
    }
    out.push_str("  },\n  \"scores\": {\n");
    for (i, group) in groups.iter().enumerate() {
        let comma = if i + 1 == groups.len() { "" } else { "," };
        let s = group.scores();
        let _ = writeln!(
            out,
            "    {}: {{\"scored\": {}, \"kb\": {{\"R@1\": {}, \"R@5\": {}, \"R@10\": {}, \"MRR@10\": {}}}, \"bm25\": {{\"R@5\": {}, \"MRR@10\": {}}}}}{comma}",
            quote(&group.name),
            s.scored,
            number(s.kb[0]),
            number(s.kb[1]),
            number(s.kb[2]),
            number(s.kb[3]),
            number(s.bm25[0]),
            number(s.bm25[1]),
        );
    }
    out.push_str("  }\n}\n");
    out
}

/// Checks a suite's kb-mcp and BM25 reports against its committed baseline, or
/// with `KB_UPDATE_EVAL_BASELINE=1` rewrites the baseline's measured parts.
/// `suite_file` and `baseline_file` are relative to the repository root.
pub(crate) fn gate(root: &Path, suite_file: &str, baseline_file: &str, kb: &Report, bm25: &Report) {
    let groups = groups(kb, bm25);
    eprintln!("{kb}\n{}", side_by_side(&groups));
    let path = root.join(baseline_file);
    let updating = std::env::var(UPDATE_VAR).as_deref() == Ok("1");
    let baseline = match std::fs::read_to_string(&path) {
        Ok(text) => parse(&path, &text),
        Err(_) if updating => Baseline::default(),
        Err(err) => panic!(
            "{baseline_file}: {err}\nTo record the current results, run `{UPDATE_COMMAND}` and commit the file."
        ),
    };

    // Regressions a person must list by hand (the update refuses them) …
    let mut unrecordable = Vec::new();
    // … and the others.
    let mut regressions = Vec::new();
    let mut improvements = Vec::new();
    let mut changes = Vec::new();
    for case in &kb.cases {
        let listed = baseline.known_failures.contains_key(&case.id);
        if !case.passed && !listed {
            unrecordable.push(format!(
                "case {:?} fails and is not in knownFailures: {}",
                case.id,
                verdict(case)
            ));
        }
        if case.passed && listed {
            improvements.push(format!("case {:?} passes now but is listed in knownFailures", case.id));
        }
        match baseline.ranks.get(&case.id) {
            None => changes.push(format!("case {:?} is new (not in the baseline's ranks)", case.id)),
            Some(&recorded) if recorded != case.matched_rank => {
                let line =
                    format!("case {:?}: rank {} → {}", case.id, show(recorded), show(case.matched_rank));
                if better(case.matched_rank, recorded) {
                    improvements.push(line)
                } else {
                    regressions.push(line)
                }
            }
            Some(_) => {}
        }
    }
    for id in baseline.ranks.keys().chain(baseline.known_failures.keys()) {
        if !kb.cases.iter().any(|case| &case.id == id) {
            changes.push(format!("case {id:?} is in the baseline but not in the suite"));
        }
    }
    for group in &groups {
        let listed = baseline.below_bm25.contains_key(&group.name);
        match group.loss_to_bm25() {
            Some(loss) if !listed => unrecordable
                .push(format!("group {:?} is below BM25 and not in belowBm25: {loss}", group.name)),
            None if listed => improvements
                .push(format!("group {:?} is no longer below BM25 but is listed in belowBm25", group.name)),
            _ => {}
        }
        let measured = group.scores();
        match baseline.scores.get(&group.name) {
            None => changes.push(format!("group {:?} is new (not in the baseline's scores)", group.name)),
            Some(recorded) if recorded != &measured => {
                changes.push(format!("group {:?}: {}", group.name, recorded.differences(&measured)))
            }
            Some(_) => {}
        }
    }
    for name in baseline.below_bm25.keys() {
        if !groups.iter().any(|g| &g.name == name) {
            changes.push(format!("belowBm25 names group {name:?}, which this suite does not have"));
        }
    }
    if updating {
        assert!(
            unrecordable.is_empty(),
            "{baseline_file}: not updated. A case that fails or a group below BM25 is recorded only by hand, \
             with the reason: add it to knownFailures or belowBm25 in {baseline_file}, then run the update again.\n{}",
            unrecordable.join("\n")
        );
        let mut updated = Baseline { ranks: BTreeMap::new(), scores: BTreeMap::new(), ..baseline };
        updated.known_failures.retain(|id, _| kb.cases.iter().any(|c| &c.id == id && !c.passed));
        updated
            .below_bm25
            .retain(|name, _| groups.iter().any(|g| &g.name == name && g.loss_to_bm25().is_some()));
        std::fs::write(&path, render(suite_file, &updated, kb, &groups)).unwrap();
        eprintln!(
            "updated {baseline_file}; review `git diff {baseline_file}` before committing.\n{}",
            regressions.iter().chain(&improvements).chain(&changes).cloned().collect::<Vec<_>>().join("\n")
        );
        return;
    }

    regressions.splice(0..0, unrecordable);
    if regressions.is_empty() && improvements.is_empty() && changes.is_empty() {
        return;
    }
    let mut message = format!("{suite_file} differs from {baseline_file}:\n");
    for (title, lines) in
        [("REGRESSIONS", &regressions), ("IMPROVEMENTS", &improvements), ("OTHER CHANGES", &changes)]
    {
        if !lines.is_empty() {
            let _ = writeln!(message, "{title}:\n  {}", lines.join("\n  "));
        }
    }
    let _ = write!(
        message,
        "\nIf the change is an improvement you mean to keep (no regression above), record it with\n    {UPDATE_COMMAND}\n\
         and commit the diff of {baseline_file}. A newly failing case or a new loss to BM25 is never recorded by \
         that command: fix it, or list it by hand with the reason in knownFailures or belowBm25."
    );
    panic!("{message}");
}

fn verdict(case: &CaseReport) -> String {
    let forbidden: Vec<String> =
        case.forbidden_matches.iter().map(|f| format!("{} at {}", f.path, f.rank)).collect();
    format!(
        "query {:?}, rank {} (max {}){}, top: {:?}",
        case.query,
        show(case.matched_rank),
        case.max_rank,
        if forbidden.is_empty() { String::new() } else { format!(", forbidden {}", forbidden.join(", ")) },
        case.returned.iter().take(3).collect::<Vec<_>>()
    )
}

fn show(rank: Option<u32>) -> String {
    rank.map_or_else(|| "none".to_owned(), |r| r.to_string())
}

/// Whether `now` is a better rank than `before` (None is worse than any rank).
fn better(now: Option<u32>, before: Option<u32>) -> bool {
    match (now, before) {
        (Some(now), Some(before)) => now < before,
        (Some(_), None) => true,
        _ => false,
    }
}

/// The known failures recorded for a suite (for tests that expect a verdict).
pub(crate) fn known_failures(root: &Path, baseline_file: &str) -> BTreeMap<String, String> {
    let path = root.join(baseline_file);
    let text = std::fs::read_to_string(&path).unwrap_or_else(|err| panic!("{baseline_file}: {err}"));
    parse(&path, &text).known_failures
}
