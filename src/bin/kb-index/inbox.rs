//! `kb-index inbox`: the person's side of proposals. `list` shows what agents
//! staged (with `--diff`, the changes) and the conflict copies an apply kept
//! apart (files that may hold the person's save), `show ID` one proposal whole with the
//! full diff of every file it touches, `apply` a dry run with the diffs or,
//! with `--yes --only ID`, the apply itself, and `reject` moves one aside.
//! Proposals are named by their id, a unique prefix of it (4 or more hex
//! digits, with or without `p_`), or their slug. Messages here speak to the
//! person (what to run), not to an agent (which tool to call).

use std::io::Write;

use clap::Subcommand;
use kb_mcp::engine::types::{ApplyArgs, ListProposalsArgs, ProposalEntry};
use kb_mcp::engine::{Engine, ProposalReview};

use crate::Failure;
use crate::output::{Paint, count, local_time, write_conflict_copies, write_links, write_overlaps};

pub(crate) const EXAMPLES: &str = "\
Examples:
  kb-index inbox list --diff               what agents proposed, with the changes
  kb-index inbox show 2319                 one proposal: checks and full diff
  kb-index inbox apply                     dry run: what would be applied, with diffs
  kb-index inbox apply --yes --only 2319   apply that one proposal
  kb-index inbox reject 2319 --reason \"duplicate of 备份仓库\"

A proposal is named by its id (p_ and 32 hex digits), any unique prefix of 4 or more
of its hex digits (with or without p_), or its slug (the file name without the id).";

#[derive(Debug, Subcommand)]
pub(crate) enum InboxCommand {
    /// Pending proposals, a one-line summary of each and whether it passes its checks.
    List {
        /// Also print the diff of every proposal.
        #[arg(short, long)]
        diff: bool,
        /// Print JSON.
        #[arg(short, long, conflicts_with = "diff")]
        json: bool,
    },
    /// One pending proposal: its reason, checks and the full diff of every file it touches.
    Show {
        /// The proposal: its id, 4+ hex digits of it, or its slug.
        id: String,
        /// Print JSON (the proposal, its checks and its diffs).
        #[arg(short, long)]
        json: bool,
    },
    /// Without --yes: a dry run showing what would be applied, with the diffs. With --yes --only ID: apply that one proposal.
    Apply {
        /// Really apply (requires --only).
        #[arg(long)]
        yes: bool,
        /// The proposal to apply (or, without --yes, to show): its id, 4+ hex digits of it, or its slug.
        #[arg(long, value_name = "ID")]
        only: Option<String>,
    },
    /// Move a pending proposal to inbox/rejected/<date>/ with a reason (and an audit line).
    Reject {
        /// The proposal: its id, 4+ hex digits of it, or its slug.
        id: String,
        /// Why it is rejected.
        #[arg(long)]
        reason: String,
    },
}

/// The failing checks of a proposal, said as what happened.
fn failing_checks(p: &ProposalEntry) -> Vec<&'static str> {
    let mut failing = Vec::new();
    if !p.checks.intact {
        failing.push("it cannot be applied as staged (its files changed or went missing, or a path it writes is refused)");
    }
    if !p.checks.base_current {
        failing.push("the note changed, moved or was deleted after the proposal was made");
    }
    if !p.checks.target_free {
        failing.push("a note already exists at its target");
    }
    failing
}

/// Writes the diff of every file a proposal touches (and why it may not be
/// what an apply writes now).
fn write_diff(engine: &Engine, id: &str, paint: &Paint, out: &mut dyn Write) -> Result<(), Failure> {
    let review = engine.review_proposal(id)?;
    if let Some(caveat) = &review.caveat {
        writeln!(out, "note: {caveat}")?;
    }
    write_beyond_the_diff(&review, paint, out)?;
    for file in &review.files {
        write!(out, "{}", paint.diff(&file.diff))?;
    }
    Ok(())
}

/// What no diff shows: the links in other notes a new note or a patch will
/// break or lead to another note (those notes do not change), and the other
/// pending proposals touching the same notes.
fn write_beyond_the_diff(review: &ProposalReview, paint: &Paint, out: &mut dyn Write) -> Result<(), Failure> {
    write_links(out, paint, "in other notes will break", &review.breaks)?;
    write_links(out, paint, "in other notes will lead to another note", &review.redirected)?;
    write_overlaps(out, paint, &review.overlaps)?;
    Ok(())
}

pub(crate) fn run(
    engine: &Engine,
    command: &InboxCommand,
    paint: &Paint,
    out: &mut dyn Write,
) -> Result<u8, Failure> {
    let pending = || engine.list_proposals(&ListProposalsArgs { status: None, limit: Some(500) });
    if matches!(
        command,
        InboxCommand::Show { .. }
            | InboxCommand::List { diff: true, .. }
            | InboxCommand::Apply { yes: false, .. }
    ) {
        // A review names the links in other notes a new note or a patch will
        // change, judged on the vault as it is now: the index is brought up to it first.
        engine.sync(false, None)?;
    }
    match command {
        InboxCommand::List { diff, json } => {
            let proposals = pending()?;
            if *json {
                writeln!(out, "{}", serde_json::to_string_pretty(&proposals).unwrap_or_default())?;
                return Ok(0);
            }
            if proposals.proposals.is_empty() {
                writeln!(out, "no pending proposals")?;
            }
            let summaries = engine.proposal_summaries();
            for (n, p) in proposals.proposals.iter().enumerate() {
                if *diff && n > 0 {
                    writeln!(out)?;
                }
                let passes = failing_checks(p).is_empty();
                writeln!(
                    out,
                    "{}  {:<5} {}  {}\n    proposed {}\n    reason: {}\n    {}",
                    paint.strong(&p.proposal_id),
                    p.kind,
                    paint.path(&p.target),
                    if passes { paint.good("checks pass") } else { paint.bad("a check fails") },
                    local_time(&p.created),
                    p.reason,
                    summaries.get(&p.proposal_id).and_then(|s| s.lines().next()).unwrap_or_default()
                )?;
                if *diff {
                    write_diff(engine, &p.proposal_id, paint, out)?;
                }
            }
            if proposals.conflict_copies.is_some() {
                writeln!(out)?;
                write_conflict_copies(out, paint, proposals.conflict_copies.as_ref())?;
            }
            Ok(0)
        }
        InboxCommand::Show { id, json } => {
            let id = engine.resolve_proposal(id)?;
            let review = engine.review_proposal(&id)?;
            if *json {
                writeln!(out, "{}", serde_json::to_string_pretty(&review).unwrap_or_default())?;
                return Ok(if failing_checks(&review.proposal).is_empty() { 0 } else { 1 });
            }
            let p = &review.proposal;
            let failing = failing_checks(p);
            writeln!(out, "proposal  {} ({}, {})", paint.strong(&p.proposal_id), p.kind, p.status)?;
            writeln!(out, "target    {}", paint.path(&p.target))?;
            writeln!(out, "proposed  {}", local_time(&p.created))?;
            writeln!(out, "reason    {}", p.reason)?;
            if p.kind.is_multi()
                && let Some(summary) = engine.proposal_summary(&p.proposal_id)
            {
                // What a structural change does to the vault, before the file diffs.
                let change = summary.lines().next().unwrap_or_default().trim_end_matches('.');
                writeln!(out, "change    {change}")?;
            }
            for remark in &review.remarks {
                writeln!(out, "remark    {remark}")?;
            }
            if failing.is_empty() {
                writeln!(out, "checks    {}", paint.good("pass"))?;
            } else {
                writeln!(out, "checks    {}: {}", paint.bad("fail"), failing.join("; "))?;
            }
            if let Some(caveat) = &review.caveat {
                writeln!(out, "note      {caveat}")?;
            }
            write_beyond_the_diff(&review, paint, out)?;
            writeln!(out)?;
            for file in &review.files {
                write!(out, "{}", paint.diff(&file.diff))?;
            }
            Ok(if failing.is_empty() { 0 } else { 1 })
        }
        InboxCommand::Apply { yes: false, only } => {
            // An id that names nothing pending is bad input (exit 2), not an empty dry run.
            let only = only.as_deref().map(|only| engine.resolve_proposal(only)).transpose()?;
            let proposals = pending()?;
            // One listing of the inbox for every summary: looking each proposal
            // up on its own would list the inbox once per proposal.
            let summaries = engine.proposal_summaries();
            let mut all_pass = true;
            let mut shown = 0u64;
            for p in &proposals.proposals {
                if only.as_ref().is_some_and(|only| *only != p.proposal_id) {
                    continue;
                }
                if shown > 0 {
                    writeln!(out)?;
                }
                shown += 1;
                let failing = failing_checks(p);
                all_pass &= failing.is_empty();
                writeln!(
                    out,
                    "{} {}: {}",
                    if failing.is_empty() { paint.good("would apply") } else { paint.bad("would refuse") },
                    p.proposal_id,
                    summaries.get(&p.proposal_id).unwrap_or(&p.target).replace('\n', " ")
                )?;
                if !failing.is_empty() {
                    writeln!(out, "    because {}", failing.join("; "))?;
                }
                write_diff(engine, &p.proposal_id, paint, out)?;
            }
            if shown > 0 {
                writeln!(out)?;
            }
            writeln!(
                out,
                "dry run: {}; apply one with `kb-index inbox apply --yes --only ID`",
                count(shown, "proposal")
            )?;
            Ok(if all_pass { 0 } else { 1 })
        }
        InboxCommand::Apply { yes: true, only } => {
            let Some(only) = only else {
                return Err(Failure::usage(
                    "--yes applies exactly one proposal: add --only ID (see `kb-index inbox list`)",
                ));
            };
            let id = engine.resolve_proposal(only)?;
            apply_one(engine, &id, paint, out)
        }
        InboxCommand::Reject { id, reason } => {
            let id = engine.resolve_proposal(id)?;
            let rejected = engine.reject_proposal(&id, reason, kb_mcp::engine::types::Actor::Cli)?;
            writeln!(out, "rejected {}; moved to {}", rejected.proposal_id, rejected.archive)?;
            Ok(0)
        }
    }
}

/// Applies one pending proposal for a person (`inbox apply --yes`, `mv`/`rm
/// --yes`) and says what it did; exit 1 when the index could not be updated.
pub(crate) fn apply_one(
    engine: &Engine,
    id: &str,
    paint: &Paint,
    out: &mut dyn Write,
) -> Result<u8, Failure> {
    let applied = engine
        .apply_proposal(&ApplyArgs { proposal_id: id.to_owned() }, kb_mcp::engine::types::Actor::Cli)
        .map_err(|error| {
            // The hint names the command to run next; fill in this proposal.
            let mut failure = Failure::from(error);
            let short = id.get(2..10).unwrap_or(id);
            failure.message = failure.message.replace("inbox reject ID", &format!("inbox reject {short}"));
            failure
        })?;
    writeln!(
        out,
        "{} {} {}; archived in {}{}",
        paint.good(applied.status.name()),
        applied.proposal_id,
        what_changed(&applied),
        applied.archive,
        applied
            .index
            .error
            .as_deref()
            .map(|e| format!("; index not updated: {e} (run `kb-index build`)"))
            .unwrap_or_default()
    )?;
    Ok(if applied.index.updated { 0 } else { 1 })
}

/// What an apply did, for a person: the note written and its new hash, or for
/// a multi-file proposal (from its audit line) the notes moved and trashed and
/// how many others were rewritten.
fn what_changed(applied: &kb_mcp::engine::types::ApplyResult) -> String {
    let Some(files) = applied.audit["files"].as_array() else {
        return format!("-> {} ({})", applied.target, applied.new_hash);
    };
    let mut parts = Vec::new();
    let mut rewritten = 0u64;
    for file in files {
        let path = file["path"].as_str().unwrap_or_default();
        match file["op"].as_str().unwrap_or_default() {
            "move" => parts.push(format!("moved {path} -> {}", file["to"].as_str().unwrap_or_default())),
            "trash" => parts.push(format!("moved {path} to the inbox's trash")),
            "create" => parts.push(format!("created {path}")),
            _ => rewritten += 1,
        }
    }
    // A move's or delete's other writes are link rewrites; a batch's or revert's are its own changes.
    let other =
        if matches!(applied.audit["kind"].as_str(), Some("move" | "delete")) { "other note" } else { "note" };
    if rewritten > 0 {
        parts.push(format!("rewrote {}", count(rewritten, other)));
    }
    format!("({})", parts.join(", "))
}
