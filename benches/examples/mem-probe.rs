//! `mem-probe`: where a serving process's memory goes, stage by stage.
//!
//! ```text
//! cargo run --release -p kb-bench --example mem-probe -- --vault V --index-dir I
//! ```
//!
//! Opens the engine on an existing index (no sync, as a server with a fresh
//! index starts), then prints the process's resident memory (anonymous and
//! file-backed, from `/proc/self/status`, Linux only) after each stage a
//! serving process goes through: the catalog loaded, 100 content searches answered, the
//! link graph built by `get_related_notes`, `list_tags`, and
//! `get_vault_overview`'s walk. It also prints the catalog's shape (notes,
//! links, headings, tags) so a change in memory can be put against what is
//! held. One JSON line per stage on stdout.

#![allow(
    clippy::disallowed_methods,
    clippy::disallowed_types,
    reason = "the benchmarks build vaults on disk"
)]

use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Instant;

use kb_bench::GENERATED_QUERIES;
use kb_mcp::engine::types::{Access, Caller, ListTagsArgs, NoteRefArgs, SearchArgs};
use kb_mcp::engine::{Engine, EngineOptions};

const USAGE: &str = "usage: mem-probe --vault V --index-dir I";

fn main() -> ExitCode {
    match run() {
        Ok(()) => ExitCode::SUCCESS,
        Err(message) => {
            eprintln!("mem-probe: {message}\n{USAGE}");
            ExitCode::from(2)
        }
    }
}

/// Resident memory in KiB: (total, anonymous, file-backed, peak).
fn resident() -> (u64, u64, u64, u64) {
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    let field = |name: &str| {
        status
            .lines()
            .find_map(|line| line.strip_prefix(name))
            .and_then(|rest| rest.split_whitespace().next())
            .and_then(|kib| kib.parse().ok())
            .unwrap_or(0)
    };
    (field("VmRSS:"), field("RssAnon:"), field("RssFile:"), field("VmHWM:"))
}

fn report(stage: &str, started: Instant) {
    let (rss, anon, file, peak) = resident();
    #[allow(clippy::print_stdout)]
    {
        println!(
            "{{\"stage\": \"{stage}\", \"ms\": {}, \"rss_mib\": {}, \"anon_mib\": {}, \"file_mib\": {}, \"peak_mib\": {}}}",
            started.elapsed().as_millis(),
            rss / 1024,
            anon / 1024,
            file / 1024,
            peak / 1024
        );
    }
}

fn run() -> Result<(), String> {
    let (mut vault, mut index_dir) = (None, None);
    let mut args = std::env::args().skip(1);
    while let Some(arg) = args.next() {
        let mut value =
            |name: &str| args.next().map(PathBuf::from).ok_or_else(|| format!("{name} needs a value"));
        match arg.as_str() {
            "--vault" => vault = Some(value("--vault")?),
            "--index-dir" => index_dir = Some(value("--index-dir")?),
            other => return Err(format!("unknown argument {other:?}")),
        }
    }
    let vault = vault.ok_or("give --vault")?;
    let started = Instant::now();
    report("start", started);
    let engine = Engine::open(&EngineOptions { vault, index_dir }).map_err(|e| e.to_string())?;
    let records = engine.records();
    let links: usize = records.iter().map(|r| r.links.len()).sum();
    let headings: usize = records.iter().map(|r| r.headings.len()).sum();
    let tags: usize = records.iter().map(|r| r.tags.len()).sum();
    let aliases: usize = records.iter().map(|r| r.aliases.len()).sum();
    #[allow(clippy::print_stdout)]
    {
        println!(
            "{{\"notes\": {}, \"links\": {links}, \"headings\": {headings}, \"tags\": {tags}, \"aliases\": {aliases}}}",
            records.len()
        );
    }
    report("catalog", started);
    let first = records.first().map(|r| r.path.clone()).ok_or("the index holds no notes")?;
    drop(records);
    // The criterion benchmarks' five content queries, twenty times each.
    for round in 0..100 {
        let (_, query) = GENERATED_QUERIES.all()[round % 5];
        let search = SearchArgs { query: query.into(), ..SearchArgs::default() };
        engine.search_note_content(&search).map_err(|e| e.to_string())?;
    }
    report("searches", started);
    engine
        .get_related_notes(&NoteRefArgs { path: Some(first), reference: None })
        .map_err(|e| e.to_string())?;
    report("graph", started);
    engine.list_tags(&ListTagsArgs { prefix: None, limit: None }).map_err(|e| e.to_string())?;
    report("tags", started);
    engine.overview(Caller::Agent(Access::Read)).map_err(|e| e.to_string())?;
    report("overview", started);
    Ok(())
}
