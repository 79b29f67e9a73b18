//! `replica-probe`: what a replica (issue 38) adds to an apply, and what a
//! sync costs, on a generated vault made a git repository with two clones
//! and a bare remote; each figure printed on stderr as a line for
//! BENCHMARKS.md:
//!
//! 1. setting up: the remote's first commit of every file, and a clone;
//! 2. `--applies` one-line patches applied on clone A (each timed alone:
//!    commit, push, write, index, audit, the inbox's commit and its push),
//!    then as many with `[replica]` taken out of A's `kb.toml` (the same
//!    apply without git);
//! 3. a sync of clone B after each of A's applies (fetch, the inbox's
//!    commit, the clone moved, the note indexed), and a sync with nothing new.
//!
//! ```text
//! KB_BENCH_DIR=DIR cargo run --release -p kb-bench --example replica-probe -- --notes 10000
//! ```
//!
//! Works under `$KB_BENCH_DIR/replica-<notes>/`, made anew each run; the
//! cached generated vault is only read.

#![allow(
    clippy::disallowed_methods,
    clippy::disallowed_types,
    reason = "the benchmarks build vaults on disk"
)]

use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::{Duration, Instant};

use kb_bench::VaultSpec;
use kb_bench::rng::Rng;
use kb_mcp::engine::types::{Actor, ApplyArgs, ProposePatchArgs, ReadNoteArgs};
use kb_mcp::engine::{Engine, EngineOptions};

const USAGE: &str = "usage: replica-probe --notes N [--applies N]";

const REPLICA: &str = "\n[replica]\nremote = \"origin\"\ninterval = 60\n";

fn main() -> ExitCode {
    match run() {
        Ok(()) => ExitCode::SUCCESS,
        Err(message) => {
            eprintln!("replica-probe: {message}\n{USAGE}");
            ExitCode::from(2)
        }
    }
}

fn run() -> Result<(), String> {
    let (mut notes, mut applies) = (None, 20usize);
    let mut args = std::env::args().skip(1);
    let number = |value: Option<String>| value.and_then(|n| n.parse::<usize>().ok());
    while let Some(arg) = args.next() {
        match arg.as_str() {
            "--notes" => notes = number(args.next()),
            "--applies" => applies = number(args.next()).ok_or("--applies takes a number")?.max(1),
            other => return Err(format!("unknown argument {other:?}")),
        }
    }
    let notes = notes.ok_or("--notes N is required")?;
    let (vault, _) = VaultSpec::Generated(notes).vault().map_err(|e| e.to_string())?;
    let work = kb_bench::bench_dir().join(format!("replica-{notes}"));
    let _ = std::fs::remove_dir_all(&work);
    std::fs::create_dir_all(&work).map_err(|e| e.to_string())?;

    // 1. The remote's first commit, then two clones.
    let started = Instant::now();
    let remote = work.join("remote.git");
    let files = seed_remote(&vault, &remote).map_err(|e| e.to_string())?;
    let seeded = started.elapsed();
    let started = Instant::now();
    let a = clone(&remote, &work.join("a"))?;
    let cloned = started.elapsed();
    let b = clone(&remote, &work.join("b"))?;
    eprintln!(
        "setup: the remote's first commit of {files} files {:.1} s; a clone {:.1} s",
        seeded.as_secs_f64(),
        cloned.as_secs_f64()
    );
    let error = |e: kb_mcp::error::Error| e.to_string();
    let open = |clone: &Path, index: &str| -> Result<Engine, String> {
        let engine =
            Engine::open(&EngineOptions { vault: clone.to_owned(), index_dir: Some(work.join(index)) })
                .map_err(error)?;
        engine.sync(false, None).map_err(error)?;
        Ok(engine)
    };
    let (engine_a, engine_b) = (open(&a, "a-index")?, open(&b, "b-index")?);
    let mut paths: Vec<String> = kb_bench::markdown_files(&a)
        .map_err(|e| e.to_string())?
        .into_iter()
        .filter_map(|p| p.strip_prefix(&a).ok().map(|p| p.to_string_lossy().replace('\\', "/")))
        .filter(|p| !p.starts_with(".kb") && !p.starts_with("inbox/"))
        .collect();
    paths.sort();
    let mut rng = Rng::new(38);

    // 2 and 3. Applies on A, each followed by a sync of B.
    let (mut with, mut synced) = (Vec::new(), Vec::new());
    let mut stages: Vec<(&str, Duration)> = Vec::new();
    for i in 0..applies {
        let id = propose(&engine_a, &paths[rng.below(paths.len())], i)?;
        let _ = kb_mcp::engine::timing::take();
        with.push(
            time(|| engine_a.apply_proposal(&ApplyArgs { proposal_id: id }, Actor::Cli)).map_err(error)?,
        );
        for (stage, took) in kb_mcp::engine::timing::take() {
            match stages.iter_mut().find(|(name, _)| *name == stage) {
                Some((_, total)) => *total += took,
                None => stages.push((stage, took)),
            }
        }
        synced.push(time(|| engine_b.sync_replica(Actor::Cli)).map_err(error)?);
    }
    let stages: Vec<String> =
        stages.iter().map(|(stage, took)| format!("{stage} {:.1} ms", ms(*took) / applies as f64)).collect();
    eprintln!("where an apply's time goes (mean per apply): {}", stages.join(", "));
    let mut idle = Vec::new();
    for _ in 0..applies {
        idle.push(time(|| engine_b.sync_replica(Actor::Cli)).map_err(error)?);
    }
    let config = a.join("kb.toml");
    let text = std::fs::read_to_string(&config).map_err(|e| e.to_string())?;
    std::fs::write(&config, text.replace(REPLICA, "")).map_err(|e| e.to_string())?;
    engine_a.refresh_config().map_err(error)?;
    let mut without = Vec::new();
    for i in 0..applies {
        let id = propose(&engine_a, &paths[rng.below(paths.len())], applies + i)?;
        without.push(
            time(|| engine_a.apply_proposal(&ApplyArgs { proposal_id: id }, Actor::Cli)).map_err(error)?,
        );
    }
    eprintln!(
        "{applies} applies of a one-line patch: with [replica] median {:.1} ms p99 {:.1} ms; without median {:.1} ms p99 {:.1} ms",
        ms(percentile(&mut with, 0.5)),
        ms(percentile(&mut with, 0.99)),
        ms(percentile(&mut without, 0.5)),
        ms(percentile(&mut without, 0.99)),
    );
    eprintln!(
        "sync of the other clone: taking one apply median {:.1} ms p99 {:.1} ms; nothing new median {:.1} ms",
        ms(percentile(&mut synced, 0.5)),
        ms(percentile(&mut synced, 0.99)),
        ms(percentile(&mut idle, 0.5)),
    );
    Ok(())
}

/// The time `f` took, its error passed on.
fn time<T>(f: impl FnOnce() -> kb_mcp::error::Result<T>) -> kb_mcp::error::Result<Duration> {
    let started = Instant::now();
    f()?;
    Ok(started.elapsed())
}

/// Stages a patch appending one line to `path`.
fn propose(engine: &Engine, path: &str, n: usize) -> Result<String, String> {
    let read = engine
        .read_note(&ReadNoteArgs { path: Some(path.to_owned()), ..Default::default() })
        .map_err(|e| e.to_string())?;
    let edits = serde_json::from_value(
        serde_json::json!([{ "op": "append", "content": format!("Line {n} of the replica probe.") }]),
    )
    .map_err(|e| e.to_string())?;
    let staged = engine
        .propose_note_patch(&ProposePatchArgs {
            path: path.to_owned(),
            base_hash: read.hash,
            reason: "the replica probe".to_owned(),
            edits,
        })
        .map_err(|e| e.to_string())?;
    Ok(staged.proposal_id)
}

/// A bare repository at `remote` whose `main` holds every file of `vault`
/// (and a `kb.toml` naming the replica), made without a work tree.
fn seed_remote(vault: &Path, remote: &Path) -> Result<usize, git2::Error> {
    let repo = git2::Repository::init_bare(remote)?;
    let mut index = git2::Index::new()?;
    let mut files = 0;
    let mut add = |path: &str, bytes: &[u8]| -> Result<(), git2::Error> {
        let id = repo.blob(bytes)?;
        let entry = git2::IndexEntry {
            ctime: git2::IndexTime::new(0, 0),
            mtime: git2::IndexTime::new(0, 0),
            dev: 0,
            ino: 0,
            mode: 0o100644,
            uid: 0,
            gid: 0,
            file_size: bytes.len() as u32,
            id,
            flags: 0,
            flags_extended: 0,
            path: path.as_bytes().to_vec(),
        };
        files += 1;
        index.add(&entry)
    };
    let found = kb_bench::markdown_files(vault).map_err(|e| git2::Error::from_str(&e.to_string()))?;
    for file in found {
        let Ok(relative) = file.strip_prefix(vault) else { continue };
        let bytes = std::fs::read(&file).map_err(|e| git2::Error::from_str(&e.to_string()))?;
        add(&relative.to_string_lossy().replace('\\', "/"), &bytes)?;
    }
    let config = std::fs::read_to_string(vault.join("kb.toml")).unwrap_or_default() + REPLICA;
    add("kb.toml", config.as_bytes())?;
    add(".gitignore", b".kb/\n")?;
    let tree = repo.find_tree(index.write_tree_to(&repo)?)?;
    let me = git2::Signature::now("Person", "person@example.com")?;
    let commit = repo.commit(None, &me, &me, "the vault", &tree, &[])?;
    repo.reference("refs/heads/main", commit, true, "seed")?;
    repo.set_head("refs/heads/main")?;
    Ok(files)
}

fn clone(remote: &Path, to: &Path) -> Result<PathBuf, String> {
    git2::build::RepoBuilder::new()
        .branch("main")
        .clone(&remote.to_string_lossy(), to)
        .map_err(|e| format!("cloning: {}", e.message()))?;
    Ok(to.to_owned())
}

fn percentile(times: &mut [Duration], at: f64) -> Duration {
    times.sort();
    times.get(((times.len() as f64 - 1.0) * at).round() as usize).copied().unwrap_or_default()
}

fn ms(duration: Duration) -> f64 {
    duration.as_secs_f64() * 1000.0
}
