//! `kb-index mv FROM TO`, `kb-index rm PATH` and `kb-index revert ID`: a
//! person's moves, deletes and undos, staged as the same proposals
//! `propose_move`, `propose_delete` and `revert_proposal` stage (the same
//! engine methods), then printed for review: the notes that move and how many
//! links are rewritten, the links a delete will break, or what a revert puts
//! back. `--yes` also applies the proposal, as `kb-index inbox apply --yes
//! --only ID` would. Nothing in the vault changes without `--yes`.

use std::io::Write;

use kb_mcp::engine::Engine;
use kb_mcp::engine::types::{ProposeDeleteArgs, ProposeMoveArgs, RevertArgs};
use kb_mcp::error::{Error, ErrorCode};

use crate::Failure;
use crate::output::{Paint, count, write_links, write_overlaps};

pub(crate) const MV_EXAMPLES: &str = "\
Examples:
  kb-index mv z/旧名.md z/新名.md          stage a rename; every link to it is rewritten
  kb-index mv z/drafts z/archive --yes     move a folder and apply at once
  kb-index mv a.md b.md --no-alias         do not keep the old name as an alias";

pub(crate) const RM_EXAMPLES: &str = "\
Examples:
  kb-index rm z/old.md --reason \"merged into z/new.md\"
  kb-index rm z/old.md --yes               move it to inbox/trash/<date>/ now";

pub(crate) const REVERT_EXAMPLES: &str = "\
Examples:
  kb-index revert 2319                     stage the inverse of applied proposal p_2319…
  kb-index revert 2319 --yes               and apply it at once

The proposal is named by its id or 4+ hex digits of it (the audit log inbox/_applied.jsonl
lists applied proposals). A revert refuses when a file changed since the apply.";

/// The arguments of `kb-index mv`.
#[derive(Debug, clap::Args)]
pub(crate) struct MvArgs {
    /// The note (ending in .md) or folder to move, vault-relative.
    from: String,
    /// Where it goes: a free note path (for a note) or folder path (for a folder).
    to: String,
    /// Do not add a renamed note's old name to its aliases.
    #[arg(long)]
    no_alias: bool,
    /// Why (kept with the proposal and in the audit line).
    #[arg(long, value_name = "TEXT")]
    reason: Option<String>,
    /// Also apply the proposal now.
    #[arg(long)]
    yes: bool,
}

/// The arguments of `kb-index rm`.
#[derive(Debug, clap::Args)]
pub(crate) struct RmArgs {
    /// The note to delete (it goes to the inbox's trash, never erased).
    path: String,
    /// Why (kept with the proposal and in the audit line).
    #[arg(long, value_name = "TEXT")]
    reason: Option<String>,
    /// Also apply the proposal now.
    #[arg(long)]
    yes: bool,
}

/// The arguments of `kb-index revert`.
#[derive(Debug, clap::Args)]
pub(crate) struct RevertCmdArgs {
    /// The applied proposal to undo: its id, or 4+ hex digits of it.
    id: String,
    /// Why (kept with the proposal and in the audit line).
    #[arg(long, value_name = "TEXT")]
    reason: Option<String>,
    /// Also apply the revert now.
    #[arg(long)]
    yes: bool,
}

/// A failure to stage is the person's input: a missing note or a taken
/// target is exit 2 (at apply time a taken target is a failed check, exit 1).
pub(crate) fn staging(error: Error) -> Failure {
    let code = error.code;
    let mut failure = Failure::from(error);
    if matches!(
        code,
        ErrorCode::TargetExists
            | ErrorCode::NotFound
            | ErrorCode::Conflict
            | ErrorCode::ProposalNotFound
            | ErrorCode::ProposalNotPending
    ) {
        failure.code = 2;
    }
    // The engine's hints name agents' tools; say what a person can run.
    let hint = match code {
        ErrorCode::TargetExists => Some("choose a free path, or move the note that is there away first"),
        ErrorCode::NotFound => {
            Some("`kb-index ls FOLDER` or `kb-index search -t NAME -l` shows the notes' exact paths")
        }
        ErrorCode::ProposalNotPending => Some(
            "only an applied proposal can be reverted; a pending one is withdrawn with `kb-index inbox reject ID`",
        ),
        _ => None,
    };
    if let Some(hint) = hint {
        if let Some(at) = failure.message.find("\nhint: ") {
            failure.message.truncate(at);
        }
        failure.message.push_str(&format!("\nhint: {hint}"));
    }
    failure
}

/// Brings the index up to date (the links to rewrite come from it).
fn sync(engine: &Engine) -> Result<(), Failure> {
    engine.sync(false, None).map(|_| ()).map_err(Failure::from)
}

/// The first line of the proposal's summary, without its full stop.
fn headline(engine: &Engine, id: &str, fallback: &str) -> String {
    engine
        .proposal_summary(id)
        .and_then(|s| s.lines().next().map(|l| l.trim_end_matches('.').to_owned()))
        .unwrap_or_else(|| fallback.to_owned())
}

/// Applies a staged proposal (with `--yes`) or says how to review and apply it.
pub(crate) fn finish(
    engine: &Engine,
    id: &str,
    yes: bool,
    paint: &Paint,
    out: &mut dyn Write,
) -> Result<u8, Failure> {
    let short = id.get(2..10).unwrap_or(id);
    write_overlaps(out, paint, &engine.proposal_overlaps(id)?)?;
    if !yes {
        writeln!(
            out,
            "nothing changed yet: review it with `kb-index inbox show {short}`, apply it with \
             `kb-index inbox apply --yes --only {short}`"
        )?;
        return Ok(0);
    }
    crate::inbox::apply_one(engine, id, paint, out)
}

pub(crate) fn run_mv(
    engine: &Engine,
    args: &MvArgs,
    paint: &Paint,
    out: &mut dyn Write,
) -> Result<u8, Failure> {
    sync(engine)?;
    let reason = args.reason.clone().unwrap_or_else(|| format!("kb-index mv {} {}", args.from, args.to));
    let staged = engine
        .propose_move(&ProposeMoveArgs {
            from: args.from.clone(),
            to: args.to.clone(),
            reason,
            keep_alias: Some(!args.no_alias),
        })
        .map_err(staging)?;
    let fallback = format!(
        "move {} → {}, rewrite {} in {}",
        args.from,
        args.to,
        count(staged.rewrites.links, "link"),
        count(staged.rewrites.notes, "note")
    );
    writeln!(
        out,
        "staged {}: {}",
        paint.strong(&staged.proposal_id),
        headline(engine, &staged.proposal_id, &fallback)
    )?;
    for moved in &staged.moves {
        writeln!(out, "    {} -> {}", paint.path(&moved.from), paint.path(&moved.to))?;
    }
    writeln!(
        out,
        "{} rewritten in {}",
        count(staged.rewrites.links, "link"),
        count(staged.rewrites.notes, "note")
    )?;
    finish(engine, &staged.proposal_id, args.yes, paint, out)
}

pub(crate) fn run_rm(
    engine: &Engine,
    args: &RmArgs,
    paint: &Paint,
    out: &mut dyn Write,
) -> Result<u8, Failure> {
    sync(engine)?;
    let reason = args.reason.clone().unwrap_or_else(|| format!("kb-index rm {}", args.path));
    let staged =
        engine.propose_delete(&ProposeDeleteArgs { path: args.path.clone(), reason }).map_err(staging)?;
    let fallback = format!("delete {}", staged.target);
    writeln!(
        out,
        "staged {}: {}",
        paint.strong(&staged.proposal_id),
        headline(engine, &staged.proposal_id, &fallback)
    )?;
    if staged.breaks.is_empty() {
        writeln!(out, "no link will break")?;
    }
    write_links(out, paint, "will break", &staged.breaks)?;
    write_links(out, paint, "will lead to another note instead", &staged.redirected)?;
    finish(engine, &staged.proposal_id, args.yes, paint, out)
}

pub(crate) fn run_revert(
    engine: &Engine,
    args: &RevertCmdArgs,
    paint: &Paint,
    out: &mut dyn Write,
) -> Result<u8, Failure> {
    let id = engine.resolve_applied_proposal(&args.id).map_err(staging)?;
    let reason = args.reason.clone().unwrap_or_else(|| format!("kb-index revert {id}"));
    let staged = engine.revert_proposal(&RevertArgs { proposal_id: id, reason }).map_err(staging)?;
    let summary = staged.diff.lines().next().and_then(|line| line.strip_prefix("# ")).unwrap_or_default();
    writeln!(out, "staged {}: {summary}", paint.strong(&staged.proposal_id))?;
    let review = engine.review_proposal(&staged.proposal_id)?;
    for file in &review.files {
        writeln!(out, "    {} {}", file.op, paint.path(&file.path))?;
    }
    finish(engine, &staged.proposal_id, args.yes, paint, out)
}
