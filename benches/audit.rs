//! Criterion benchmarks of the vault-health tools (issue 15's scale targets:
//! at 100,000 notes the full audit in under 3 s, any `list_notes` page in
//! under 20 ms), over the vaults of `KB_BENCH_SIZES` (default
//! `10000,100000,obsidian-help`).
//!
//! `audit_vault` (every check, the whole vault), three ways:
//! - `first`: the first audit of a process (an engine just opened on the
//!   synced index; the opening is not timed): it starts from the mentions an
//!   earlier audit saved beside the index, and reads no note (the audit before
//!   any was saved, which reads every note's prose, runs once and is printed,
//!   `cold`);
//! - `after_change`: the audit a running server makes after one note changed
//!   (the change and its targeted sync are not timed): every check runs again,
//!   the mentions of the changed note are read again;
//! - `next_page`: a later page of the same audit (the findings are kept).
//!
//! `all_pages` is what `kb-index audit` does: every page of 500, through the
//! cursor, after one note changed. `list_notes`: the first page of the largest
//! folder, its last page reached by cursor (`deep`), the first page of the
//! notes carrying the vault's most common tag, whole vault (`tag`), and the
//! first page of the vault's top level (`root`).
//!
//! Everything runs on a scratch copy of the cached vault and index (the
//! changed note is replaced, never written into; the corpus is copied).
//!
//! ```text
//! cargo bench -p kb-bench --bench audit
//! KB_BENCH_SIZES=10000 cargo bench -p kb-bench --bench audit -- list_notes
//! ```

#![allow(
    clippy::disallowed_methods,
    clippy::disallowed_types,
    reason = "the benchmarks build vaults on disk"
)]

use std::collections::BTreeMap;
use std::fs;
use std::path::Path;
use std::time::{Duration, Instant};

use criterion::{BatchSize, BenchmarkGroup, BenchmarkId, Criterion, SamplingMode, measurement::WallTime};
use kb_bench::{VaultSpec, replace_file};
use kb_mcp::engine::types::{AUDIT_LIMIT, AuditArgs, LIST_NOTES_LIMIT, ListNotesArgs};
use kb_mcp::engine::{Engine, EngineOptions, timing};
use kb_mcp::vault::NoteKind;

fn main() {
    let mut criterion = Criterion::default().configure_from_args();
    let sizes = kb_bench::sizes_from_env_or(&format!("10000,100000,{}", kb_bench::CORPUS_LABEL));
    for spec in sizes {
        match spec.vault() {
            Ok((vault, stats)) => {
                eprintln!("kb-bench: vault {}: {} notes at {}", spec.label(), stats.files, vault.display());
                bench_vault(&mut criterion, &spec, &vault, stats.files as usize);
            }
            Err(error) => eprintln!("kb-bench: cannot prepare the {} vault: {error}", spec.label()),
        }
    }
    criterion.final_summary();
}

/// Few flat samples: an audit of a large vault takes seconds.
fn slow(group: &mut BenchmarkGroup<'_, WallTime>, notes: usize) {
    group.sampling_mode(SamplingMode::Flat).sample_size(10);
    group.warm_up_time(Duration::from_millis(500));
    group.measurement_time(Duration::from_secs(if notes >= 50_000 { 30 } else { 10 }));
}

fn bench_vault(c: &mut Criterion, spec: &VaultSpec, vault: &Path, notes: usize) {
    let label = spec.label();
    let (copy, copy_index) =
        kb_bench::scratch_copy(spec, vault, "audit").expect("a scratch copy of the vault");
    let options = EngineOptions { vault: copy.clone(), index_dir: Some(copy_index.clone()) };
    let open = || {
        let engine = Engine::open(&options).expect("open the copy");
        engine.sync(false, None).expect("sync the copy");
        engine
    };
    let everything = AuditArgs { limit: Some(AUDIT_LIMIT.max), ..AuditArgs::default() };

    // Without saved mentions: every note is read (and the mentions saved).
    match fs::remove_file(copy_index.join(kb_mcp::sandbox::MENTIONS_CACHE)) {
        Err(error) if error.kind() != std::io::ErrorKind::NotFound => {
            panic!("remove the saved mentions: {error}")
        }
        _ => {}
    }
    let engine = open();
    timing::take();
    let started = Instant::now();
    let cold = engine.audit_vault(&everything).expect("audit");
    eprintln!(
        "kb-bench: {label}: cold audit (no saved mentions) {:.2} s, {} findings: {}",
        started.elapsed().as_secs_f64(),
        cold.total,
        stages()
    );
    drop(engine);

    let mut group = c.benchmark_group("audit_vault");
    slow(&mut group, notes);
    // By reference: dropping the engine (its findings and mentions) is no part
    // of an audit.
    group.bench_function(BenchmarkId::new("first", &label), |b| {
        b.iter_batched_ref(
            open,
            |engine| engine.audit_vault(&everything).expect("audit").total,
            BatchSize::PerIteration,
        )
    });

    let engine = open();
    timing::take();
    let started = Instant::now();
    let first = engine.audit_vault(&everything).expect("audit");
    eprintln!(
        "kb-bench: {label}: {} findings ({:?}), first audit {:.2} s: {}",
        first.total,
        first.counts,
        started.elapsed().as_secs_f64(),
        stages()
    );
    // A note in the middle, rewritten with a growing marker at each iteration.
    let changed = {
        let records = engine.records();
        let notes: Vec<&str> =
            records.iter().filter(|r| r.kind == NoteKind::Note).map(|r| r.path.as_str()).collect();
        copy.join(notes[notes.len() / 2])
    };
    let original = fs::read(&changed).expect("read the note to change");
    let mut counter = 0u64;
    let mut change = || {
        counter += 1;
        let mut bytes = original.clone();
        bytes.extend_from_slice(format!("\n\nrevision {counter}\n").as_bytes());
        replace_file(&changed, &bytes).expect("change a note");
        let report = engine.sync_changed(std::slice::from_ref(&changed)).expect("targeted sync");
        assert_eq!(report.changed, 1, "the change was indexed");
    };
    change();
    timing::take();
    let started = Instant::now();
    engine.audit_vault(&everything).expect("audit");
    eprintln!(
        "kb-bench: {label}: audit after one change {:.2} s: {}",
        started.elapsed().as_secs_f64(),
        stages()
    );
    group.bench_function(BenchmarkId::new("after_change", &label), |b| {
        b.iter_batched(
            &mut change,
            |()| engine.audit_vault(&everything).expect("audit").total,
            BatchSize::PerIteration,
        )
    });
    let first = engine.audit_vault(&everything).expect("audit");
    let next = AuditArgs { cursor: first.next_cursor.clone(), ..everything.clone() };
    group.bench_function(BenchmarkId::new("next_page", &label), |b| {
        b.iter(|| engine.audit_vault(&next).expect("audit").findings.len())
    });
    group.bench_function(BenchmarkId::new("all_pages", &label), |b| {
        b.iter_batched(
            &mut change,
            |()| {
                let mut page = engine.audit_vault(&everything).expect("audit");
                let mut seen = page.findings.len();
                while let Some(cursor) = page.next_cursor.take() {
                    let args = AuditArgs { cursor: Some(cursor), ..everything.clone() };
                    page = engine.audit_vault(&args).expect("audit page");
                    seen += page.findings.len();
                }
                assert_eq!(seen as u64, page.total, "every finding paged through");
                seen
            },
            BatchSize::PerIteration,
        )
    });
    group.finish();

    bench_list_notes(c, &engine, &label);
    drop(engine);
    for dir in [&copy, &copy_index] {
        fs::remove_dir_all(dir).expect("remove the scratch copy");
    }
}

/// The engine's timing stages since the last call, for the log.
fn stages() -> String {
    let stages: Vec<String> = timing::take()
        .into_iter()
        .map(|(stage, took)| format!("{stage} {:.0} ms", took.as_secs_f64() * 1e3))
        .collect();
    stages.join(", ")
}

fn bench_list_notes(c: &mut Criterion, engine: &Engine, label: &str) {
    let records = engine.records();
    let mut by_folder: BTreeMap<&str, usize> = BTreeMap::new();
    let mut by_tag: BTreeMap<&str, usize> = BTreeMap::new();
    for record in records.iter().filter(|r| r.kind == NoteKind::Note) {
        *by_folder.entry(record.folder()).or_default() += 1;
        for tag in &record.tags {
            *by_tag.entry(tag.as_str()).or_default() += 1;
        }
    }
    let (folder, in_folder) =
        by_folder.iter().max_by_key(|(_, n)| **n).map(|(f, n)| ((*f).to_owned(), *n)).unwrap_or_default();
    let (tag, tagged) =
        by_tag.iter().max_by_key(|(_, n)| **n).map(|(t, n)| ((*t).to_owned(), *n)).unwrap_or_default();
    let limit = LIST_NOTES_LIMIT.default;
    let first =
        ListNotesArgs { folder: Some(folder.clone()), limit: Some(limit), ..ListNotesArgs::default() };
    // The last page, reached through every cursor before it.
    let mut deep = first.clone();
    let mut pages = 1;
    while let Some(cursor) = engine.list_notes(&deep).expect("list_notes").next_cursor {
        deep.cursor = Some(cursor);
        pages += 1;
    }
    let by_tag_args =
        ListNotesArgs { tag: Some(tag.clone()), limit: Some(limit), ..ListNotesArgs::default() };
    eprintln!(
        "kb-bench: {label}: list_notes of {folder:?} ({in_folder} notes, page {pages} is the deepest), tag {tag:?} ({tagged} notes)"
    );
    let mut group = c.benchmark_group("list_notes");
    group.sample_size(50).warm_up_time(Duration::from_secs(1)).measurement_time(Duration::from_secs(3));
    // The vault's top level: every note is walked to count its subfolders.
    let root = ListNotesArgs { limit: Some(limit), ..ListNotesArgs::default() };
    for (which, args) in [("first", &first), ("deep", &deep), ("tag", &by_tag_args), ("root", &root)] {
        group.bench_function(BenchmarkId::new(which, label), |b| {
            b.iter(|| engine.list_notes(args).expect("list_notes").notes.len())
        });
    }
    group.finish();
}
