//! `history-probe`: what the history (issue 38) costs on a generated vault,
//! each phase timed once and printed on stderr as a line of figures for
//! BENCHMARKS.md:
//!
//! 1. the first history of an existing vault: the pass that records every
//!    note of a vault whose history is empty (a server runs it on a thread of
//!    its own after start-up, so it never holds the start);
//! 2. `--edits` edits (default 10,000), one commit each, of notes drawn at
//!    random: the time per commit (median, p99) and the repository's growth;
//! 3. `--versions` versions (default 1,000) of one note, then reading its
//!    history back: the newest page of `list_history` (20 versions, lines
//!    added and removed included), and every version.
//!
//! ```text
//! KB_BENCH_DIR=DIR cargo run --release -p kb-bench --example history-probe -- --notes 100000
//! ```
//!
//! Works on a scratch copy of the cached vault and index (`history-<label>`,
//! hard links; the vault's files are only read). The edits are recorded as
//! the server records what it finds on disk (a blob, then a commit of it), on
//! the engine's own repository beside the copy's index, which the probe
//! deletes first.

#![allow(
    clippy::disallowed_methods,
    clippy::disallowed_types,
    reason = "the benchmarks build vaults on disk"
)]

use std::process::ExitCode;
use std::time::{Duration, Instant};

use kb_bench::VaultSpec;
use kb_bench::rng::Rng;
use kb_mcp::engine::types::HistoryArgs;
use kb_mcp::engine::{Engine, EngineOptions};
use kb_mcp::sandbox::Change;

const USAGE: &str = "usage: history-probe --notes N [--edits N] [--versions N]";

fn main() -> ExitCode {
    match run() {
        Ok(()) => ExitCode::SUCCESS,
        Err(message) => {
            eprintln!("history-probe: {message}\n{USAGE}");
            ExitCode::from(2)
        }
    }
}

fn run() -> Result<(), String> {
    let (mut notes, mut edits, mut versions) = (None, 10_000usize, 1_000usize);
    let mut args = std::env::args().skip(1);
    let number = |value: Option<String>| value.and_then(|n| n.parse::<usize>().ok());
    while let Some(arg) = args.next() {
        match arg.as_str() {
            "--notes" => notes = number(args.next()),
            "--edits" => edits = number(args.next()).ok_or("--edits takes a number")?,
            "--versions" => versions = number(args.next()).ok_or("--versions takes a number")?,
            other => return Err(format!("unknown argument {other:?}")),
        }
    }
    let spec = VaultSpec::Generated(notes.ok_or("--notes N is required")?);
    let error = |e: kb_mcp::error::Error| e.to_string();
    let (vault, _) = spec.vault().map_err(|e| e.to_string())?;
    let (copy, copy_index) = kb_bench::scratch_copy(&spec, &vault, "history").map_err(|e| e.to_string())?;
    let engine =
        Engine::open(&EngineOptions { vault: copy.clone(), index_dir: Some(copy_index) }).map_err(error)?;
    engine.sync(false, None).map_err(error)?;
    let repository = engine.own_history_folder();
    let _ = std::fs::remove_dir_all(&repository);

    // 1. The first history.
    let started = Instant::now();
    let first = engine.record_history_pending().map_err(error)?;
    let took = started.elapsed();
    let size = kb_bench::dir_size(&repository).map_err(|e| e.to_string())?;
    eprintln!(
        "first history: {} files in {:.2} s, repository {:.1} MiB",
        first.files,
        took.as_secs_f64(),
        mib(size)
    );

    // 2. Edits, one commit each, of notes drawn at random.
    let store = engine.history_store().map_err(error)?;
    let mut paths: Vec<String> =
        store.files().map_err(error)?.into_keys().filter(|p| p.ends_with(".md")).collect();
    paths.sort();
    let mut rng = Rng::new(38);
    let mut times = Vec::with_capacity(edits);
    let clock = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |since| since.as_secs() as i64);
    let started = Instant::now();
    for i in 0..edits {
        let path = &paths[rng.below(paths.len())];
        let mut bytes = std::fs::read(copy.join(path)).map_err(|e| e.to_string())?;
        bytes.extend_from_slice(format!("\nEdit {i} of the history probe.\n").as_bytes());
        let one = Instant::now();
        let blob = store.write_file(&bytes).map_err(error)?;
        store.record(&[(path.clone(), Some(blob))], &Change::on_disk(), clock + i as i64).map_err(error)?;
        times.push(one.elapsed());
    }
    let total = started.elapsed();
    let grown = kb_bench::dir_size(&repository).map_err(|e| e.to_string())?;
    eprintln!(
        "{edits} edits: {:.1} s, per commit median {:.2} ms p99 {:.2} ms; repository {:.1} MiB (+{:.1} KiB per edit, loose objects)",
        total.as_secs_f64(),
        ms(percentile(&mut times, 0.5)),
        ms(percentile(&mut times, 0.99)),
        mib(grown),
        (grown.saturating_sub(size)) as f64 / 1024.0 / edits.max(1) as f64
    );

    // 3. One note's many versions, read back.
    let note = &paths[0];
    let mut bytes = std::fs::read(copy.join(note)).map_err(|e| e.to_string())?;
    for i in 0..versions {
        bytes.extend_from_slice(format!("Version {i}.\n").as_bytes());
        let blob = store.write_file(&bytes).map_err(error)?;
        store
            .record(&[(note.clone(), Some(blob))], &Change::on_disk(), clock + (edits + i) as i64)
            .map_err(error)?;
    }
    let page = |limit| HistoryArgs { path: Some(note.clone()), limit: Some(limit), ..Default::default() };
    let started = Instant::now();
    let listed = engine.list_history(&page(20)).map_err(error)?;
    let newest = started.elapsed();
    let started = Instant::now();
    let (all, _) = store.versions(note, None, usize::MAX).map_err(error)?;
    let every = started.elapsed();
    eprintln!(
        "a note of {} versions: list_history's newest page ({} versions) {:.1} ms; every version {:.0} ms ({} commits in the history)",
        all.len(),
        listed.versions.len(),
        ms(newest),
        ms(every),
        1 + edits + versions
    );
    Ok(())
}

fn percentile(times: &mut [Duration], at: f64) -> Duration {
    times.sort();
    times.get(((times.len() as f64 - 1.0) * at).round() as usize).copied().unwrap_or_default()
}

fn ms(duration: Duration) -> f64 {
    duration.as_secs_f64() * 1000.0
}

fn mib(bytes: u64) -> f64 {
    bytes as f64 / (1024.0 * 1024.0)
}
