//! Criterion benchmarks of structural proposals (issue 14's scale targets):
//! staging (`propose_move`) and applying (`apply_proposal`) a move of the most
//! linked-to note and of a folder of about 1,000 notes, over the generated
//! vaults of `KB_BENCH_SIZES` (default `10000,100000`; the corpus is skipped);
//! and staging a new note named like the hub and a patch of the hub
//! (`propose_stage`), each of which judges every link of the vault its name or
//! headings could change before it answers.
//!
//! The folder is `kb_bench::folder_to_move`'s: at 10,000 notes a top folder
//! of about 1,000 notes (`工作`, 984); at 100,000, where folders hold about
//! 10,000 notes or at most about 150, one made before timing starts by moving
//! the largest subfolders of the largest folder into `<it>/kb-bench-folder/`
//! until it holds 750 to 1,250 notes. The run prints which, and its count.
//!
//! Everything runs on a scratch copy of the cached vault (hard links; an apply
//! replaces files, never writes into them) and of its index. Staging is timed
//! alone, its proposal removed again untimed. An apply needs a pending move of
//! the vault as it is, so each iteration's setup stages the move back and forth
//! (from where the note or folder is now to the other place) and removes the
//! archives of earlier iterations; only `apply_proposal` is timed: the checks,
//! every file written, the archive, the index update of every touched note in
//! one commit, the audit line. Targets at 100,000 notes: the note (about
//! 10,000 backlinks) stages in under 2 s and applies in under 5 s, the folder
//! applies in under 10 s.
//!
//! ```text
//! cargo bench -p kb-bench --bench moves
//! KB_BENCH_SIZES=10000 cargo bench -p kb-bench --bench moves -- move_apply
//! ```

#![allow(
    clippy::disallowed_methods,
    clippy::disallowed_types,
    reason = "the benchmarks build vaults on disk"
)]

use std::cell::Cell;
use std::fs;
use std::path::{Path, PathBuf};
use std::time::Duration;

use criterion::{BatchSize, BenchmarkId, Criterion, SamplingMode};
use kb_bench::VaultSpec;
use kb_mcp::engine::types::{
    Actor, ApplyArgs, ApplyStatus, ProposeMoveArgs, ProposeNewArgs, ProposePatchArgs,
};
use kb_mcp::engine::{Engine, EngineOptions};

fn main() {
    let mut criterion = Criterion::default().configure_from_args();
    let sizes = kb_bench::sizes_from_env_or("10000,100000");
    for spec in sizes {
        if !matches!(spec, VaultSpec::Generated(_)) {
            eprintln!("kb-bench: moves run on generated vaults only; skipping {}", spec.label());
            continue;
        }
        match spec.vault() {
            Ok((vault, stats)) => {
                eprintln!("kb-bench: vault {}: {} notes at {}", spec.label(), stats.files, vault.display());
                bench_moves(&mut criterion, &spec, &vault);
            }
            Err(error) => eprintln!("kb-bench: cannot prepare the {} vault: {error}", spec.label()),
        }
    }
    criterion.final_summary();
}

/// A scratch copy of the vault and its cached index (built first if missing),
/// and an engine on the copy.
fn scratch(spec: &VaultSpec, vault: &Path) -> (Engine, PathBuf, PathBuf) {
    let (copy, copy_index) =
        kb_bench::scratch_copy(spec, vault, "moves").expect("a scratch copy of the vault");
    let engine = Engine::open(&EngineOptions { vault: copy.clone(), index_dir: Some(copy_index.clone()) })
        .expect("open the copy");
    engine.sync(false, None).expect("sync the copy");
    (engine, copy, copy_index)
}

/// Removes a folder of the scratch copy's inbox (staged or archived
/// proposals of earlier iterations), so the pending caps and the disk hold.
fn clear(copy: &Path, folder: &str) {
    let dir = copy.join("inbox").join(folder);
    if dir.exists() {
        fs::remove_dir_all(&dir).expect("clear the inbox folder");
    }
}

fn move_args(from: &str, to: &str) -> ProposeMoveArgs {
    ProposeMoveArgs {
        from: from.to_owned(),
        to: to.to_owned(),
        reason: "benchmark".to_owned(),
        keep_alias: Some(false),
    }
}

fn bench_moves(c: &mut Criterion, spec: &VaultSpec, vault: &Path) {
    let (engine, copy, copy_index) = scratch(spec, vault);
    let ((hub, backlinks), (folder, notes)) = kb_bench::move_subjects(&engine);
    eprintln!("kb-bench: hub {hub:?} ({backlinks} backlinks), folder {folder:?} ({notes} notes)");
    let hub_to = format!("{} moved.md", hub.trim_end_matches(".md"));
    let folder_to = format!("{folder} moved");
    let cases = [("note", hub.as_str(), hub_to.as_str()), ("folder", folder.as_str(), folder_to.as_str())];
    let label = spec.label();

    // A new note named like the hub, in another folder (its name's links are
    // judged again), and a patch renaming the hub's headings.
    let mut group = c.benchmark_group("propose_stage");
    group.sampling_mode(SamplingMode::Flat).sample_size(10);
    group.warm_up_time(Duration::from_millis(500));
    group.measurement_time(Duration::from_secs(5));
    let hub_name = Path::new(&hub).file_stem().map(|s| s.to_string_lossy().into_owned()).unwrap_or_default();
    group.bench_function(BenchmarkId::new("new_note", &label), |b| {
        b.iter_batched(
            || clear(&copy, "new"),
            |()| {
                let args = ProposeNewArgs {
                    title: hub_name.clone(),
                    body: "A note of the same name.\n".to_owned(),
                    reason: "benchmark".to_owned(),
                    folder: Some("kb-bench-new".to_owned()),
                    ..ProposeNewArgs::default()
                };
                engine.propose_new_note(&args).expect("stage the new note")
            },
            BatchSize::PerIteration,
        )
    });
    let hub_text = fs::read_to_string(copy.join(&hub)).expect("read the hub");
    let patch = ProposePatchArgs {
        path: hub.clone(),
        base_hash: kb_mcp::vault::content_hash(hub_text.as_bytes()),
        reason: "benchmark".to_owned(),
        edits: vec![kb_mcp::write::Edit::ReplaceAll {
            content: format!("{}\nOne more line.\n", hub_text.replace("\n## ", "\n## Renamed ")),
        }],
    };
    group.bench_function(BenchmarkId::new("patch", &label), |b| {
        b.iter_batched(
            || clear(&copy, "patch"),
            |()| engine.propose_note_patch(&patch).expect("stage the patch"),
            BatchSize::PerIteration,
        )
    });
    clear(&copy, "new");
    clear(&copy, "patch");
    group.finish();

    let mut group = c.benchmark_group("move_stage");
    group.sampling_mode(SamplingMode::Flat).sample_size(10);
    group.warm_up_time(Duration::from_millis(500));
    group.measurement_time(Duration::from_secs(10));
    for (what, from, to) in cases {
        group.bench_function(BenchmarkId::new(what, &label), |b| {
            b.iter_batched(
                || clear(&copy, "move"),
                |()| {
                    let staged = engine.propose_move(&move_args(from, to)).expect("stage the move");
                    assert!(!staged.moves.is_empty());
                    staged
                },
                BatchSize::PerIteration,
            )
        });
    }
    clear(&copy, "move");
    group.finish();

    let mut group = c.benchmark_group("move_apply");
    group.sampling_mode(SamplingMode::Flat).sample_size(10);
    group.warm_up_time(Duration::from_millis(500));
    group.measurement_time(Duration::from_secs(20));
    for (what, from, to) in cases {
        // Where the note or folder is now: the setup stages the move away from there.
        let moved = Cell::new(false);
        group.bench_function(BenchmarkId::new(what, &label), |b| {
            b.iter_batched(
                || {
                    clear(&copy, "applied");
                    let (from, to) = if moved.get() { (to, from) } else { (from, to) };
                    let staged = engine.propose_move(&move_args(from, to)).expect("stage the move");
                    moved.set(!moved.get());
                    ApplyArgs { proposal_id: staged.proposal_id }
                },
                |args| {
                    let applied = engine.apply_proposal(&args, Actor::Cli).expect("apply the move");
                    assert_eq!(applied.status, ApplyStatus::Applied);
                    applied
                },
                BatchSize::PerIteration,
            )
        });
        if moved.get() {
            let staged = engine.propose_move(&move_args(to, from)).expect("stage the move back");
            engine
                .apply_proposal(&ApplyArgs { proposal_id: staged.proposal_id }, Actor::Cli)
                .expect("move back");
        }
    }
    group.finish();
    drop(engine);
    let _ = fs::remove_dir_all(&copy);
    let _ = fs::remove_dir_all(&copy_index);
}
