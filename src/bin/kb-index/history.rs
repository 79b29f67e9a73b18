//! `kb-index log PATH`, `kb-index show PATH --at REV` and `kb-index restore
//! PATH --at REV`: a note's history for a person (what `list_history`
//! returns, every page), the note as it was at one of its versions, and that
//! version staged as a proposal (`--yes` applies it). Each brings the index
//! and the history up to date first, so an edit made a moment ago is listed.
//! `kb-index replica` syncs a replica with its remote now and says how it stands.

use std::io::Write;

use kb_mcp::engine::Engine;
use kb_mcp::engine::types::RestoreArgs as Restore;
use kb_mcp::engine::types::{HISTORY_LIMIT, HistoryArgs, ProposalKind, VersionBy};

use crate::Failure;
use crate::output::{Paint, count, local_time};

/// The arguments of `kb-index log`.
#[derive(Debug, clap::Args)]
pub(crate) struct LogArgs {
    /// The note, vault-relative (a deleted or moved note's old path works too).
    path: String,
    /// Show at most this many versions, newest first.
    #[arg(short = 'n', long, default_value_t = 50)]
    limit: usize,
    /// Print JSON (the tool's structured result, the versions shown in one).
    #[arg(short, long)]
    json: bool,
}

/// The arguments of `kb-index show`.
#[derive(Debug, clap::Args)]
pub(crate) struct ShowArgs {
    /// The note, vault-relative (a deleted or moved note's old path works too).
    path: String,
    /// The version: a commit `kb-index log` printed (7 digits or more), or a time
    /// (RFC 3339, such as 2026-12-07T09:30:00Z: the version in force then).
    #[arg(long, value_name = "REV")]
    at: String,
}

/// The arguments of `kb-index restore`.
#[derive(Debug, clap::Args)]
pub(crate) struct RestoreArgs {
    /// The note, vault-relative (a deleted note's old path brings it back there).
    path: String,
    /// The version: a commit `kb-index log` printed (7 digits or more), or a time
    /// (RFC 3339: the version in force then).
    #[arg(long, value_name = "REV")]
    at: String,
    /// Why (kept with the proposal and in the audit line).
    #[arg(long, value_name = "TEXT")]
    reason: Option<String>,
    /// Also apply the restore now.
    #[arg(long)]
    yes: bool,
}

/// The arguments of `kb-index replica`.
#[derive(Debug, clap::Args)]
pub(crate) struct ReplicaArgs {
    /// Print JSON (the overview's `replica` object, and what the sync did).
    #[arg(short, long)]
    json: bool,
}

pub(crate) fn run_replica(
    engine: &Engine,
    args: &ReplicaArgs,
    paint: &Paint,
    out: &mut dyn Write,
) -> Result<u8, Failure> {
    if let Err(error) = engine.sync(false, None) {
        eprintln!("kb-index: warning: the index may be stale: {error}");
    }
    let Some(report) = engine.sync_replica(kb_mcp::engine::types::Actor::Cli)? else {
        return Err(kb_mcp::error::Error::new(
            kb_mcp::error::ErrorCode::NotFound,
            "this vault is not a replica: kb.toml has no [replica] section",
        )
        .with_hint("see the README's \"Several machines\" to make it one")
        .into());
    };
    let status = &report.status;
    if args.json {
        let json = serde_json::json!({
            "replica": status, "written": report.written, "merged": report.merged,
            "completed": report.completed, "pushed": report.pushed,
        });
        writeln!(out, "{}", serde_json::to_string_pretty(&json).unwrap_or_default())?;
        return Ok(if status.held.is_empty() && status.error.is_none() { 0 } else { 1 });
    }
    let state = match status.state.as_str() {
        "in_sync" => paint.good("in sync"),
        "held" | "failing" | "unreachable" | "diverged" => paint.bad(&status.state),
        other => other.to_owned(),
    };
    writeln!(
        out,
        "{} {} ({}): {state}, {} ahead, {} behind",
        status.remote,
        status.branch,
        engine.root().display(),
        status.ahead,
        status.behind
    )?;
    if !report.written.is_empty() {
        writeln!(
            out,
            "took {} from the remote{}",
            count(report.written.len() as u64, "file"),
            if report.merged.is_empty() {
                String::new()
            } else {
                format!(" (merged with your change: {})", report.merged.join(", "))
            }
        )?;
    }
    if !report.completed.is_empty() {
        writeln!(out, "completed {}", report.completed.join(", "))?;
    }
    if report.pushed {
        writeln!(out, "pushed this clone's commits")?;
    }
    if !status.held.is_empty() {
        writeln!(out, "{}: {}", paint.bad("held"), status.held.join(", "))?;
        writeln!(
            out,
            "  you changed these here and the remote changed them too, on the same lines; commit or undo your change, then run kb-index replica again"
        )?;
    }
    if let Some(error) = &status.error {
        writeln!(out, "{}: {error}", paint.bad("error"))?;
    }
    Ok(if status.held.is_empty() && status.error.is_none() { 0 } else { 1 })
}

/// Brings the index and the history up to date (a warning, not a failure,
/// when they cannot be: what is recorded is still shown).
fn catch_up(engine: &Engine) {
    if let Err(error) = engine.sync(false, None) {
        eprintln!("kb-index: warning: the index may be stale: {error}");
    }
    if let Err(error) = engine.record_history_pending() {
        eprintln!("kb-index: warning: the latest changes on disk are not in the history yet: {error}");
    }
}

pub(crate) fn run_log(
    engine: &Engine,
    args: &LogArgs,
    paint: &Paint,
    out: &mut dyn Write,
) -> Result<u8, Failure> {
    catch_up(engine);
    let mut request = HistoryArgs {
        path: Some(args.path.clone()),
        reference: None,
        limit: Some(HISTORY_LIMIT.max.min(u32::try_from(args.limit.max(1)).unwrap_or(u32::MAX))),
        cursor: None,
    };
    let mut listed = engine.list_history(&request)?;
    while listed.versions.len() < args.limit
        && let Some(cursor) = listed.next_cursor.take()
    {
        request.cursor = Some(cursor);
        let page = engine.list_history(&request)?;
        listed.versions.extend(page.versions);
        listed.next_cursor = page.next_cursor;
    }
    listed.versions.truncate(args.limit);
    if args.json {
        writeln!(out, "{}", serde_json::to_string_pretty(&listed).unwrap_or_default())?;
        return Ok(if listed.versions.is_empty() { 1 } else { 0 });
    }
    for v in &listed.versions {
        let who = match v.by {
            VersionBy::Proposal => format!(
                "{} {} (approved by {})",
                v.kind.as_deref().unwrap_or("proposal"),
                v.proposal_id.as_deref().unwrap_or("?"),
                v.approved_by.as_deref().unwrap_or("?")
            ),
            VersionBy::OnDisk => "on disk".to_owned(),
            VersionBy::Unknown => "another commit".to_owned(),
        };
        let lines = match &v.hash {
            Some(_) => {
                format!("{} {}", paint.good(&format!("+{}", v.added)), paint.bad(&format!("-{}", v.removed)))
            }
            None => paint.bad("removed"),
        };
        let mut line = format!("{}  {}  {who}  {lines}", paint.strong(&v.commit[..12]), local_time(&v.at));
        if v.path != listed.path {
            line.push_str(&format!("  {}", paint.dim(&format!("(as {})", v.path))));
        }
        writeln!(out, "{line}")?;
        if let Some(reason) = &v.reason {
            writeln!(out, "    {}", reason.lines().next().unwrap_or_default())?;
        }
    }
    let more = if listed.next_cursor.is_some() { " (older ones: -n)" } else { "" };
    writeln!(out, "{}: {}{more}", paint.path(&listed.path), count(listed.versions.len() as u64, "version"))?;
    Ok(if listed.versions.is_empty() { 1 } else { 0 })
}

pub(crate) fn run_show(engine: &Engine, args: &ShowArgs, out: &mut dyn Write) -> Result<u8, Failure> {
    catch_up(engine);
    let (_, past) = engine.note_at(&args.path, &args.at)?;
    out.write_all(past.bytes.as_deref().unwrap_or_default())?;
    Ok(0)
}

pub(crate) fn run_restore(
    engine: &Engine,
    args: &RestoreArgs,
    paint: &Paint,
    out: &mut dyn Write,
) -> Result<u8, Failure> {
    catch_up(engine);
    let reason =
        args.reason.clone().unwrap_or_else(|| format!("kb-index restore {} --at {}", args.path, args.at));
    let request = Restore { path: args.path.clone(), at: args.at.clone(), reason };
    let staged = engine.propose_restore(&request).map_err(crate::structure::staging)?;
    let what = match staged.kind {
        ProposalKind::New => format!("{} made again", staged.target),
        _ => format!("patch of {} (+{} -{})", staged.target, staged.added, staged.removed),
    };
    writeln!(
        out,
        "staged {}: {what}, back to the version {} of {}",
        paint.strong(&staged.proposal_id),
        &staged.commit[..12],
        local_time(&staged.at)
    )?;
    crate::structure::finish(engine, &staged.proposal_id, args.yes, paint, out)
}
