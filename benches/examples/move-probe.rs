//! `move-probe`: one move of a generated vault's most linked-to note (or of
//! its folder nearest 1,000 notes), staged and applied once, each timed: a
//! driver to run under `perf record -g` (the benches run each case many times
//! and time setup apart, which a profile cannot tell from the case).
//!
//! ```text
//! KB_BENCH_DIR=DIR cargo run -p kb-bench --example move-probe -- --notes 10000 [--folder] [--back]
//! ```
//!
//! Works on the scratch copy the moves bench uses (`kb_bench::scratch_copy`:
//! the cached vault and index under `$KB_BENCH_DIR`, built first if missing).
//! With `--back` the note or folder is moved back afterwards (timed too), so
//! the copy can be probed again. Prints one line per phase on stderr.

#![allow(
    clippy::disallowed_methods,
    clippy::disallowed_types,
    reason = "the benchmarks build vaults on disk"
)]

use std::process::ExitCode;
use std::time::Instant;

use kb_bench::VaultSpec;
use kb_mcp::engine::types::{Actor, ApplyArgs, ProposeMoveArgs};
use kb_mcp::engine::{Engine, EngineOptions};

const USAGE: &str = "usage: move-probe --notes N [--folder] [--back]";

fn main() -> ExitCode {
    match run() {
        Ok(()) => ExitCode::SUCCESS,
        Err(message) => {
            eprintln!("move-probe: {message}\n{USAGE}");
            ExitCode::from(2)
        }
    }
}

fn run() -> Result<(), String> {
    let (mut notes, mut folder, mut back) = (None, false, false);
    let mut args = std::env::args().skip(1);
    while let Some(arg) = args.next() {
        match arg.as_str() {
            "--notes" => notes = args.next().and_then(|n| n.parse::<usize>().ok()),
            "--folder" => folder = true,
            "--back" => back = true,
            other => return Err(format!("unknown argument {other:?}")),
        }
    }
    let spec = VaultSpec::Generated(notes.ok_or("--notes N is required")?);
    let (vault, _) = spec.vault().map_err(|e| e.to_string())?;
    let copy = kb_bench::bench_dir().join(format!("moves-{}", spec.label()));
    let copy_index = kb_bench::bench_dir().join(format!("moves-{}-index", spec.label()));
    if !copy.is_dir() || !copy_index.is_dir() {
        kb_bench::scratch_copy(&spec, &vault, "moves").map_err(|e| e.to_string())?;
    }
    let started = Instant::now();
    let engine = Engine::open(&EngineOptions { vault: copy.clone(), index_dir: Some(copy_index) })
        .map_err(|e| e.to_string())?;
    engine.sync(false, None).map_err(|e| e.to_string())?;
    eprintln!("move-probe: open and sync {:.3} s", started.elapsed().as_secs_f64());
    let started = Instant::now();
    let (hub, near) = kb_bench::move_subjects(&engine);
    eprintln!("move-probe: subjects {:.3} s", started.elapsed().as_secs_f64());
    let (from, count) = if folder { near } else { hub };
    let to =
        if folder { format!("{from} moved") } else { format!("{} moved.md", from.trim_end_matches(".md")) };
    eprintln!("move-probe: moving {from:?} ({count} {})", if folder { "notes" } else { "backlinks" });
    let _ = std::fs::remove_dir_all(copy.join("inbox"));
    let one = |from: &str, to: &str, what: &str| -> Result<(), String> {
        let args = ProposeMoveArgs {
            from: from.to_owned(),
            to: to.to_owned(),
            reason: "probe".to_owned(),
            keep_alias: Some(false),
        };
        let started = Instant::now();
        let staged = engine.propose_move(&args).map_err(|e| e.to_string())?;
        eprintln!(
            "move-probe: {what} stage {:.3} s ({} links in {} notes)",
            started.elapsed().as_secs_f64(),
            staged.rewrites.links,
            staged.rewrites.notes
        );
        let started = Instant::now();
        engine
            .apply_proposal(&ApplyArgs { proposal_id: staged.proposal_id }, Actor::Cli)
            .map_err(|e| e.to_string())?;
        eprintln!("move-probe: {what} apply {:.3} s", started.elapsed().as_secs_f64());
        Ok(())
    };
    one(&from, &to, "there")?;
    if back {
        one(&to, &from, "back")?;
    }
    Ok(())
}
