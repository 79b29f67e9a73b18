//! `kb-index status [--json]`: what `get_vault_overview` returns, for a person
//! (times in the local time zone); exit 1 when the index is stale.

use std::io::Write;

use kb_mcp::engine::Engine;

use crate::Failure;
use crate::output::{count, local_time};

pub(crate) fn run(engine: &Engine, json: bool, out: &mut dyn Write) -> Result<u8, Failure> {
    let overview = engine.overview("cli", engine.pending_proposals())?;
    if json {
        writeln!(out, "{}", serde_json::to_string_pretty(&overview).unwrap_or_default())?;
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
    if i.fresh {
        writeln!(out, "fresh      yes")?;
    } else {
        writeln!(
            out,
            "fresh      no: {} added, {} changed, {} removed since the last build (run `kb-index build`)",
            i.stale.added, i.stale.changed, i.stale.removed
        )?;
    }
    Ok(if overview.index.fresh { 0 } else { 1 })
}
