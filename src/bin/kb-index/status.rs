//! `kb-index status [--json] [--since CURSOR]`: what `get_vault_overview`
//! returns, for a person (times in the local time zone), with what changed: the
//! recent changes the index remembers, or those since a cursor an earlier status
//! or overview printed, and the servers running on the vault with their calls
//! per tool (what each publishes in the index folder); exit 1 when the index
//! is stale.

use std::io::Write;

use kb_mcp::engine::Engine;
use kb_mcp::engine::types::{Caller, Changes};
use kb_mcp::server::{PublishedServer, running_servers};

use crate::Failure;
use crate::output::{Paint, count, local_time, write_conflict_copies};

pub(crate) fn run(
    engine: &Engine,
    json: bool,
    since: Option<&str>,
    paint: &Paint,
    out: &mut dyn Write,
) -> Result<u8, Failure> {
    let mut overview = engine.overview_since(Caller::Cli, since)?;
    if since.is_none() {
        overview.changes = engine.recent_changes()?;
    }
    let servers = running_servers(&engine.index_location().dir);
    if json {
        let mut value = serde_json::to_value(&overview).unwrap_or_default();
        if let serde_json::Value::Object(fields) = &mut value {
            fields.insert("servers".to_owned(), serde_json::to_value(&servers).unwrap_or_default());
        }
        writeln!(out, "{}", serde_json::to_string_pretty(&value).unwrap_or_default())?;
        return Ok(if overview.index.fresh { 0 } else { 1 });
    }
    let c = &overview.counts;
    let i = &overview.index;
    let index = engine.index_location();
    writeln!(out, "vault      {}", engine.root().display())?;
    writeln!(out, "notes      {} ({} standards, {} tags)", c.notes, c.standards, c.tags)?;
    writeln!(out, "links      {} ({} broken), {} orphans", c.links, c.broken_links, c.orphans)?;
    writeln!(out, "proposals  {} pending", c.proposals_pending)?;
    writeln!(
        out,
        "index      {} notes, schema v{}, at {}",
        i.documents,
        i.schema_version,
        index.dir.display()
    )?;
    if !index.exists {
        writeln!(out, "           no index yet (run `kb-index build` to create it)")?;
    }
    if let Some(reason) = &index.moved {
        writeln!(out, "           ({reason})")?;
    }
    if let Some(reason) = &index.read_only {
        writeln!(out, "           ({reason}: served as it is)")?;
    }
    let time = |at: Option<&String>| at.map_or_else(|| "never".to_owned(), |at| local_time(at));
    writeln!(out, "built      {}", time(i.built_at.as_ref()))?;
    writeln!(out, "updated    {}", time(i.updated_at.as_ref()))?;
    if i.skipped_files > 0 {
        writeln!(out, "skipped    {}, not served as notes:", count(i.skipped_files, "file"))?;
        for skipped in &i.skipped {
            writeln!(out, "           {}: {}", skipped.path, skipped.reason)?;
        }
        if i.skipped_files > i.skipped.len() as u64 {
            writeln!(out, "           … and {} more", i.skipped_files - i.skipped.len() as u64)?;
        }
    }
    if let Some(replica) = &overview.replica {
        writeln!(
            out,
            "replica    {} {}: {}, {} ahead, {} behind (as last fetched: {}; `kb-index replica` syncs now)",
            replica.remote,
            replica.branch,
            replica.state,
            replica.ahead,
            replica.behind,
            time(replica.last_fetch.as_ref())
        )?;
        if !replica.held.is_empty() {
            writeln!(out, "           held by your uncommitted change to: {}", replica.held.join(", "))?;
        }
    }
    if i.fresh {
        writeln!(out, "fresh      yes")?;
    } else {
        writeln!(
            out,
            "fresh      no: {} added, {} changed, {} removed since the last build (run `kb-index build`)",
            i.stale.added, i.stale.changed, i.stale.removed
        )?;
    }
    for warning in &overview.warnings {
        writeln!(out, "warning    {warning}")?;
    }
    if let Some(copies) = &overview.conflict_copies {
        write!(out, "conflicts  ")?;
        write_conflict_copies(out, paint, Some(copies))?;
    }
    write_servers(out, &servers)?;
    write_changes(out, &overview.changes, since.is_some())?;
    Ok(if overview.index.fresh { 0 } else { 1 })
}

/// The servers running on this vault, each with its calls per tool.
fn write_servers(out: &mut dyn Write, servers: &[PublishedServer]) -> std::io::Result<()> {
    if servers.is_empty() {
        return writeln!(out, "servers    none running on this vault");
    }
    for server in servers {
        let m = &server.metrics;
        let at = server.addr.as_deref().map(|addr| format!(" at {addr}")).unwrap_or_default();
        writeln!(
            out,
            "server     pid {} ({}{at}), up since {}, as of {}",
            server.pid,
            server.transport,
            local_time(&m.since),
            local_time(&server.written_at)
        )?;
        let mut tools: Vec<_> = m.tools.iter().collect();
        tools.sort_by(|a, b| b.calls.cmp(&a.calls).then_with(|| a.tool.cmp(&b.tool)));
        for t in tools {
            let errors: u64 = t.errors.values().sum();
            let codes: Vec<String> = t.errors.iter().map(|(code, n)| format!("{n} {code}")).collect();
            let codes = if codes.is_empty() { String::new() } else { format!(" ({})", codes.join(", ")) };
            writeln!(
                out,
                "           {:<22} calls {:>7}  errors {:>5}{codes}  p50 {:.1} ms  p95 {:.1} ms  p99 {:.1} ms",
                t.tool, t.calls, errors, t.p50_ms, t.p95_ms, t.p99_ms
            )?;
        }
        let i = &m.index;
        let lag = i.last_sync_lag_ms.map(|lag| format!(", last lag {lag:.0} ms")).unwrap_or_default();
        writeln!(
            out,
            "           watcher {}: {} events, {}{lag}",
            if i.watching { "on" } else { "off" },
            i.watcher_events,
            count(i.syncs, "index update")
        )?;
    }
    Ok(())
}

/// Most lines the `changes` part lists before "… and N more".
const CHANGES_SHOWN: usize = 20;

/// The `changes` part: what the index journal and the audit log say changed,
/// since `since` (a cursor an overview or an earlier status printed) or as far
/// back as the index remembers; then how to see only what changes from now on.
fn write_changes(out: &mut dyn Write, changes: &Changes, since: bool) -> std::io::Result<()> {
    let from = if since { "since the cursor given" } else { "recently (as far back as the index remembers)" };
    writeln!(
        out,
        "changes    {from}: {} added, {} changed, {} removed; {} applied, {} rejected",
        changes.added.len(),
        changes.changed.len(),
        changes.removed.len(),
        count(changes.applied.len() as u64, "proposal"),
        changes.rejected.len()
    )?;
    let mut lines: Vec<String> = Vec::new();
    for (what, list) in
        [("added", &changes.added), ("changed", &changes.changed), ("removed", &changes.removed)]
    {
        lines.extend(list.iter().map(|note| format!("{what:<8} {} ({})", note.path, note.by)));
    }
    for (what, list) in [("applied", &changes.applied), ("rejected", &changes.rejected)] {
        lines.extend(list.iter().map(|event| {
            format!(
                "{what:<8} {} {} {} ({}, {})",
                event.proposal_id,
                event.kind,
                event.target,
                event.by,
                local_time(&event.at)
            )
        }));
    }
    for line in lines.iter().take(CHANGES_SHOWN) {
        writeln!(out, "           {line}")?;
    }
    if lines.len() > CHANGES_SHOWN {
        writeln!(
            out,
            "           … and {} more (`kb-index status --json` lists them all)",
            lines.len() - CHANGES_SHOWN
        )?;
    }
    if changes.incomplete && since {
        writeln!(out, "           (some changes are missing: too many since, or the index was rebuilt)")?;
    }
    writeln!(out, "           what changes from now on: kb-index status --since {}", changes.cursor)
}
