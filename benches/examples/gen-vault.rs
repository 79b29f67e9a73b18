//! `gen-vault`: makes a test vault with the benchmarks' generator.
//!
//! ```text
//! cargo run --release -p kb-bench --example gen-vault -- --notes 10000 [--seed 42] [--out DIR]
//! ```
//!
//! Without `--out` the vault goes to the benchmarks' cache under
//! `$KB_BENCH_DIR` (default `/tmp/kb-bench`) and is reused when already there;
//! with `--out` it is written to DIR, which must be new or empty and outside
//! the repository. Prints one JSON line: `{"path": …, "files": …, "bytes": …}`.

#![allow(
    clippy::disallowed_methods,
    clippy::disallowed_types,
    reason = "the benchmarks build vaults on disk"
)]

use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Instant;

use kb_bench::{DEFAULT_SEED, cached_vault, check_writable, generate};

const USAGE: &str = "usage: gen-vault --notes N [--seed S] [--out DIR]";

fn main() -> ExitCode {
    match run() {
        Ok(()) => ExitCode::SUCCESS,
        Err(message) => {
            eprintln!("gen-vault: {message}\n{USAGE}");
            ExitCode::from(2)
        }
    }
}

fn run() -> Result<(), String> {
    let mut notes: Option<usize> = None;
    let mut seed = DEFAULT_SEED;
    let mut out: Option<PathBuf> = None;
    let mut args = std::env::args().skip(1);
    while let Some(arg) = args.next() {
        let mut value = |name: &str| args.next().ok_or_else(|| format!("{name} needs a value"));
        match arg.as_str() {
            "--notes" => {
                let raw = value("--notes")?;
                notes = Some(raw.parse().map_err(|_| format!("--notes {raw:?} is not a number"))?);
            }
            "--seed" => {
                let raw = value("--seed")?;
                seed = raw.parse().map_err(|_| format!("--seed {raw:?} is not a number"))?;
            }
            "--out" => out = Some(PathBuf::from(value("--out")?)),
            "-h" | "--help" => {
                eprintln!("{USAGE}");
                return Ok(());
            }
            other => return Err(format!("unknown argument {other:?}")),
        }
    }
    let notes = notes.filter(|n| *n > 0).ok_or("give --notes N (more than 0)")?;
    let started = Instant::now();
    let (path, stats) = match out {
        Some(dir) => {
            check_writable(&dir).map_err(|e| e.to_string())?;
            if dir.read_dir().is_ok_and(|mut d| d.next().is_some()) {
                return Err(format!("{} is not empty", dir.display()));
            }
            let stats = generate(&dir, notes, seed).map_err(|e| format!("{}: {e}", dir.display()))?;
            (dir, stats)
        }
        None => cached_vault(notes, seed).map_err(|e| e.to_string())?,
    };
    eprintln!(
        "gen-vault: {} notes, {:.1} MB in {} ({:.1} s)",
        stats.files,
        stats.bytes as f64 / 1e6,
        path.display(),
        started.elapsed().as_secs_f64()
    );
    #[expect(clippy::print_stdout, reason = "the JSON line on stdout is this tool's output")]
    {
        println!(
            "{{\"path\": \"{}\", \"files\": {}, \"bytes\": {}}}",
            path.display().to_string().replace('\\', "\\\\").replace('"', "\\\""),
            stats.files,
            stats.bytes
        );
    }
    Ok(())
}
