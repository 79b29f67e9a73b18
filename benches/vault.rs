//! Criterion benchmarks of kb-mcp's engine over generated vaults and the real
//! obsidian-help corpus.
//!
//! For every vault of `KB_BENCH_SIZES` (default `1000,10000,100000,obsidian-help`):
//! the note parser alone and a full index build (both as throughput of
//! Markdown bytes), an incremental update after changing 1 and 100 notes
//! (until a search finds the change; through the watcher's targeted sync and
//! through a walk), `apply_proposal` end to end (until a search finds the
//! applied note), both searches with snippets for five
//! kinds of query on a warm searcher, `read_note`, `get_related_notes` (a
//! typical note and the most linked-to one), `list_tags`,
//! the link graph's build (whole, and updated after a one-note edit), `get_vault_overview` (walking, and as a watching server answers it),
//! `audit_vault` (every check) and `list_notes` (the
//! largest folder's first page and a page from its middle). Setup (generating vaults, changing files, emptying
//! index folders) is never timed.
//!
//! Criterion reports means and medians; tail latency is not its business, so
//! every warm-engine benchmark also times each call on its own and writes
//! p50/p90/p99 to `target/kb-bench/latency/*.json` (read by
//! `benches/scripts/plot.py --table`).
//!
//! Vaults, indexes and scratch copies live under `$KB_BENCH_DIR` (default
//! `/tmp/kb-bench`); the corpus is only read (its incremental benchmark runs
//! on a copy).
//!
//! ```text
//! cargo bench -p kb-bench --bench vault                         # everything (~30 min)
//! KB_BENCH_SIZES=1000 cargo bench -p kb-bench --bench vault     # a quick check
//! cargo bench -p kb-bench --bench vault -- search_note_content  # one family
//! ```

#![allow(
    clippy::disallowed_methods,
    clippy::disallowed_types,
    reason = "the benchmarks build vaults on disk"
)]

use std::cell::RefCell;
use std::fs;
use std::hint::black_box;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use criterion::measurement::WallTime;
use criterion::{BatchSize, BenchmarkGroup, BenchmarkId, Criterion, SamplingMode, Throughput};
use kb_bench::{Stats, VaultSpec, bench_dir, copy_tree, copy_vault, markdown_files, replace_file};
use kb_mcp::engine::types::{
    Access, Actor, ApplyArgs, ApplyStatus, AuditArgs, Caller, LIST_NOTES_LIMIT, ListNotesArgs, ListTagsArgs,
    NoteRefArgs, ProposeNewArgs, ReadNoteArgs, SearchArgs,
};
use kb_mcp::engine::{Engine, EngineOptions};
use kb_mcp::sandbox::NotePath;
use kb_mcp::vault::graph::{Graph, Resolver};
use kb_mcp::vault::{NoteKind, parse_note};

/// A vault of this run.
struct Bench {
    spec: VaultSpec,
    label: String,
    vault: PathBuf,
    stats: Stats,
}

impl Bench {
    /// Large vaults get fewer, flat samples so a full run fits in half an hour.
    fn configure(&self, group: &mut BenchmarkGroup<'_, WallTime>, slow: bool) {
        if slow {
            group.sampling_mode(SamplingMode::Flat).sample_size(10);
            group.warm_up_time(Duration::from_millis(500));
            group.measurement_time(Duration::from_secs(if self.stats.files >= 50_000 { 20 } else { 5 }));
        } else {
            group.sample_size(if self.stats.files >= 50_000 { 30 } else { 50 });
            group.warm_up_time(Duration::from_secs(1));
            group.measurement_time(Duration::from_secs(3));
        }
    }

    fn id(&self) -> BenchmarkId {
        BenchmarkId::from_parameter(&self.label)
    }
}

fn main() {
    let mut criterion = Criterion::default().configure_from_args();
    for spec in kb_bench::sizes_from_env() {
        let (vault, stats) = match spec.vault() {
            Ok(found) => found,
            Err(error) => {
                eprintln!("kb-bench: cannot prepare the {} vault: {error}", spec.label());
                continue;
            }
        };
        eprintln!(
            "kb-bench: vault {}: {} notes, {:.1} MB at {}",
            spec.label(),
            stats.files,
            stats.bytes as f64 / 1e6,
            vault.display()
        );
        let bench = Bench { label: spec.label(), spec, vault, stats };
        bench_parser(&mut criterion, &bench);
        bench_full_build(&mut criterion, &bench);
        let warm = warm_engine(&bench);
        bench_incremental(&mut criterion, &bench);
        bench_apply(&mut criterion, &bench);
        bench_searches(&mut criterion, &bench, &warm);
        bench_read_tools(&mut criterion, &bench, &warm);
    }
    criterion.final_summary();
}

/// The vault's engine on its cached index, brought up to date and warmed.
fn warm_engine(bench: &Bench) -> Engine {
    let options = EngineOptions { vault: bench.vault.clone(), index_dir: Some(bench.spec.index_dir()) };
    kb_bench::check_writable(&bench.spec.index_dir()).expect("index folder outside the repository");
    let started = Instant::now();
    let engine = Engine::open(&options).expect("open the engine");
    let report = engine.sync(false, None).expect("sync the cached index");
    eprintln!(
        "kb-bench: index of {} ready ({} files, {} re-indexed) in {:.1} s",
        bench.label,
        report.files,
        report.added + report.changed,
        started.elapsed().as_secs_f64()
    );
    engine
}

fn bench_parser(c: &mut Criterion, bench: &Bench) {
    let notes: Vec<(NotePath, String)> = markdown_files(&bench.vault)
        .expect("list the vault")
        .into_iter()
        .filter_map(|file| {
            let relative = file.strip_prefix(&bench.vault).ok()?.to_str()?.to_owned();
            Some((NotePath::parse(&relative).ok()?, fs::read_to_string(&file).ok()?))
        })
        .collect();
    let bytes: u64 = notes.iter().map(|(_, text)| text.len() as u64).sum();
    let mut group = c.benchmark_group("parse_note");
    bench.configure(&mut group, bench.stats.files >= 10_000);
    group.throughput(Throughput::Bytes(bytes));
    group.bench_function(bench.id(), |b| {
        b.iter(|| {
            for (path, text) in &notes {
                black_box(parse_note(path, text));
            }
        })
    });
    group.finish();
}

fn bench_full_build(c: &mut Criterion, bench: &Bench) {
    let scratch = bench_dir().join(format!("build-{}", bench.label));
    kb_bench::check_writable(&scratch).expect("scratch outside the repository");
    let mut group = c.benchmark_group("full_build");
    bench.configure(&mut group, true);
    group.throughput(Throughput::Bytes(bench.stats.bytes));
    group.bench_function(bench.id(), |b| {
        b.iter_batched(
            || {
                empty_dir(&scratch);
                EngineOptions { vault: bench.vault.clone(), index_dir: Some(scratch.clone()) }
            },
            |options| {
                let engine = Engine::open(&options).expect("open");
                let report = engine.sync(true, None).expect("full build");
                // The corpus has a few files the sandbox refuses by name (reported as skipped).
                assert_eq!((report.files + report.skipped.len()) as u64, bench.stats.files);
                engine
            },
            BatchSize::PerIteration,
        )
    });
    group.finish();
    let _ = fs::remove_dir_all(&scratch);
}

fn empty_dir(dir: &Path) {
    if dir.exists() {
        fs::remove_dir_all(dir).expect("empty the scratch folder");
    }
    fs::create_dir_all(dir).expect("create the scratch folder");
}

/// A token no generated or real note contains: `kbmark` and letters.
fn marker(mut n: u64) -> String {
    let mut out = String::from("kbmark");
    loop {
        out.push(char::from(b'a' + (n % 26) as u8));
        n /= 26;
        if n == 0 {
            return out;
        }
    }
}

fn bench_incremental(c: &mut Criterion, bench: &Bench) {
    let (engine, copy, copy_index) = scratch_engine(bench, "incremental");
    let files = markdown_files(&copy).expect("list the copy");
    let mut counter = 0u64;
    let mut group = c.benchmark_group("incremental");
    bench.configure(&mut group, true);
    // `watched`: what the server does when its file watcher reports the changed
    // files (`sync_changed`); `walk`: what `kb-index build` and a server without a
    // watcher do (`sync`, a walk of every file).
    for (mode, changed) in [("watched", 1usize), ("watched", 100), ("walk", 1), ("walk", 100)] {
        // Evenly spread notes, their original bytes kept to rewrite from.
        let originals: Vec<(PathBuf, Vec<u8>)> = (0..changed)
            .map(|i| files[i * files.len() / changed].clone())
            .map(|path| {
                let bytes = fs::read(&path).expect("read a note");
                (path, bytes)
            })
            .collect();
        let reported: Vec<PathBuf> = originals.iter().map(|(path, _)| path.clone()).collect();
        let name = if changed == 1 { format!("{mode}_1_note") } else { format!("{mode}_100_notes") };
        group.bench_function(BenchmarkId::new(name, &bench.label), |b| {
            b.iter_batched(
                || {
                    counter += 1;
                    let token = marker(counter);
                    for (path, original) in &originals {
                        let mut bytes = original.clone();
                        bytes.extend_from_slice(format!("\n\n{token}\n").as_bytes());
                        replace_file(path, &bytes).expect("change a note");
                    }
                    SearchArgs { query: token, ..SearchArgs::default() }
                },
                |args| {
                    let report = if mode == "watched" {
                        engine.sync_changed(&reported).expect("targeted sync")
                    } else {
                        engine.sync(false, None).expect("incremental sync")
                    };
                    let found = engine.search_note_content(&args).expect("search");
                    assert_eq!(report.changed, changed);
                    assert_eq!(found.total as usize, changed, "the change is visible to search");
                    found
                },
                BatchSize::PerIteration,
            )
        });
    }
    group.finish();
    remove_scratch(engine, &copy, &copy_index);
}

/// A scratch copy of the vault and its cached index, for benchmarks that write:
/// the cached vault stays as generated and the corpus untouched. Generated
/// files are hard-linked (benchmarks replace files or create new ones, never
/// write into them); the corpus, which is not ours, is copied.
/// Returns an engine on the copy, synced, with the copy's vault and index folders.
fn scratch_engine(bench: &Bench, purpose: &str) -> (Engine, PathBuf, PathBuf) {
    let copy = bench_dir().join(format!("{purpose}-{}", bench.label));
    let copy_index = bench_dir().join(format!("{purpose}-{}-index", bench.label));
    let hard_link = matches!(bench.spec, VaultSpec::Generated(_));
    copy_vault(&bench.vault, &copy, hard_link).expect("copy the vault");
    copy_tree(&bench.spec.index_dir(), &copy_index).expect("copy the index");
    let engine = Engine::open(&EngineOptions { vault: copy.clone(), index_dir: Some(copy_index.clone()) })
        .expect("open the copy");
    engine.sync(false, None).expect("sync the copy");
    (engine, copy, copy_index)
}

/// Closes a scratch engine and removes its copy.
fn remove_scratch(engine: Engine, copy: &Path, copy_index: &Path) {
    drop(engine);
    let _ = fs::remove_dir_all(copy);
    let _ = fs::remove_dir_all(copy_index);
}

/// `apply_proposal` end to end: the checks, the atomic write, the archive, the
/// audit line and the index update, until a search finds the new note. Staging
/// the proposal (`propose_new_note`) is setup.
fn bench_apply(c: &mut Criterion, bench: &Bench) {
    let (engine, copy, copy_index) = scratch_engine(bench, "apply");
    let mut counter = 0u64;
    let mut group = c.benchmark_group("apply_proposal");
    bench.configure(&mut group, true);
    group.bench_function(bench.id(), |b| {
        b.iter_batched(
            || {
                counter += 1;
                let token = marker(counter);
                let staged = engine
                    .propose_new_note(&ProposeNewArgs {
                        title: format!("Bench apply {token}"),
                        body: format!("A note about {token}.\n"),
                        reason: "benchmark".to_owned(),
                        folder: None,
                        tags: None,
                        aliases: None,
                        description: None,
                    })
                    .expect("stage a new note");
                (
                    ApplyArgs { proposal_id: staged.proposal_id },
                    SearchArgs { query: token, ..SearchArgs::default() },
                )
            },
            |(apply, search)| {
                let applied = engine.apply_proposal(&apply, Actor::Cli).expect("apply");
                assert_eq!(applied.status, ApplyStatus::Applied);
                let found = engine.search_note_content(&search).expect("search");
                assert_eq!(found.total, 1, "the applied note is visible to search");
                found
            },
            BatchSize::PerIteration,
        )
    });
    group.finish();
    remove_scratch(engine, &copy, &copy_index);
}

/// Per-call times of one benchmark, for percentiles.
type Samples = RefCell<Vec<Duration>>;

/// Benchmarks `call` and records each call's time.
fn timed<T>(
    group: &mut BenchmarkGroup<'_, WallTime>,
    id: BenchmarkId,
    key: &str,
    mut call: impl FnMut() -> T,
) {
    // A warm searcher: the first calls load segments and fill caches.
    for _ in 0..3 {
        black_box(call());
    }
    let samples: Samples = RefCell::new(Vec::new());
    group.bench_function(id, |b| {
        b.iter_custom(|iters| {
            let mut samples = samples.borrow_mut();
            let mut total = Duration::ZERO;
            for _ in 0..iters {
                let started = Instant::now();
                black_box(call());
                let took = started.elapsed();
                total += took;
                samples.push(took);
            }
            total
        })
    });
    write_latency(key, samples.into_inner());
}

/// Writes p50/p90/p99 of a benchmark's calls (with enough of them: not in
/// `--test` mode, nor when a filter skipped it; never under `--profile-time`,
/// whose calls run under a profiler).
fn write_latency(key: &str, mut samples: Vec<Duration>) {
    if samples.len() < 20 || std::env::args().any(|a| a.starts_with("--profile-time")) {
        return;
    }
    samples.sort_unstable();
    let at = |q: f64| samples[((samples.len() - 1) as f64 * q).round() as usize].as_nanos();
    let (p50, p90, p99) = (at(0.50), at(0.90), at(0.99));
    let max = samples[samples.len() - 1].as_nanos();
    let mean = samples.iter().map(Duration::as_nanos).sum::<u128>() / samples.len() as u128;
    eprintln!(
        "latency {key}: p50 {:.3} ms, p90 {:.3} ms, p99 {:.3} ms, max {:.3} ms ({} calls)",
        p50 as f64 / 1e6,
        p90 as f64 / 1e6,
        p99 as f64 / 1e6,
        max as f64 / 1e6,
        samples.len()
    );
    let dir = target_dir().join("kb-bench/latency");
    let json = format!(
        "{{\"id\": \"{key}\", \"calls\": {}, \"mean_ns\": {mean}, \"p50_ns\": {p50}, \"p90_ns\": {p90}, \"p99_ns\": {p99}, \"max_ns\": {max}}}\n",
        samples.len()
    );
    let file = dir.join(format!("{}.json", key.replace('/', "__")));
    if let Err(error) = fs::create_dir_all(&dir).and_then(|()| fs::write(&file, json)) {
        eprintln!("kb-bench: cannot write {}: {error}", file.display());
    }
}

/// Cargo's target folder (criterion writes beside it in `criterion/`).
fn target_dir() -> PathBuf {
    std::env::var_os("CARGO_TARGET_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| kb_bench::repo_root().join("target"))
}

fn bench_searches(c: &mut Criterion, bench: &Bench, engine: &Engine) {
    let queries = bench.spec.queries();
    for tool in ["search_knowledge", "search_note_content"] {
        let mut group = c.benchmark_group(tool);
        bench.configure(&mut group, false);
        for (kind, query) in queries.all() {
            let args = SearchArgs { query: query.to_owned(), ..SearchArgs::default() };
            let key = format!("{tool}/{kind}/{}", bench.label);
            let id = BenchmarkId::new(kind, &bench.label);
            if tool == "search_knowledge" {
                timed(&mut group, id, &key, || engine.search_knowledge(&args).expect("search").total);
            } else {
                timed(&mut group, id, &key, || engine.search_note_content(&args).expect("search").total);
            }
        }
        group.finish();
    }
}

fn bench_read_tools(c: &mut Criterion, bench: &Bench, engine: &Engine) {
    let records = engine.records();
    let backlinks = |i: usize| engine.backlinks(&records[i].path).map_or(0, |b| b.len());
    // A typical note (median size) and the most linked-to one.
    let mut notes: Vec<usize> = (0..records.len()).filter(|&i| records[i].kind == NoteKind::Note).collect();
    notes.sort_by_key(|&i| (records[i].size, records[i].path.clone()));
    let typical = records[notes[notes.len() / 2]].path.clone();
    let hub = notes.iter().copied().max_by_key(|&i| backlinks(i)).map(|i| records[i].path.clone());
    let hub = hub.unwrap_or_else(|| typical.clone());
    eprintln!(
        "kb-bench: typical note {typical:?} ({} bytes), hub {hub:?} ({} backlinks)",
        engine.record(&typical).map_or(0, |r| r.size),
        engine.backlinks(&hub).map_or(0, |b| b.len())
    );
    let label = &bench.label;

    let mut group = c.benchmark_group("read_note");
    bench.configure(&mut group, false);
    let args = ReadNoteArgs { path: Some(typical.clone()), ..ReadNoteArgs::default() };
    timed(&mut group, bench.id(), &format!("read_note/{label}"), || {
        engine.read_note(&args).expect("read_note").size
    });
    group.finish();

    let mut group = c.benchmark_group("get_related_notes");
    bench.configure(&mut group, false);
    for (which, path) in [("typical", &typical), ("hub", &hub)] {
        let args = NoteRefArgs { path: Some(path.clone()), reference: None };
        timed(
            &mut group,
            BenchmarkId::new(which, label),
            &format!("get_related_notes/{which}/{label}"),
            || engine.get_related_notes(&args).expect("get_related_notes").backlinks.len(),
        );
    }
    group.finish();

    let mut group = c.benchmark_group("list_tags");
    bench.configure(&mut group, false);
    let args = ListTagsArgs::default();
    timed(&mut group, bench.id(), &format!("list_tags/{label}"), || {
        engine.list_tags(&args).expect("list_tags").tags.len()
    });
    group.finish();

    // The link graph from the records, as the first graph tool builds it (the
    // attachments left out: links to them resolve as broken instead).
    let mut group = c.benchmark_group("graph_build");
    bench.configure(&mut group, true);
    let records = engine.records();
    timed(&mut group, bench.id(), &format!("graph_build/{label}"), || Graph::build(&records, &[]).link_count);
    // Its first part: the name tables links are looked up in.
    let id = BenchmarkId::new("resolver", &bench.label);
    timed(&mut group, id, &format!("graph_build/resolver/{label}"), || Resolver::new(&records, &[]));
    // After a one-note edit (its record written anew), from the graph before
    // it, as the next graph tool call makes it (issue 42).
    let graph = Graph::build(&records, &[]);
    let mut edited = records.clone();
    let at = records.len() / 2;
    edited[at] = std::sync::Arc::new((*records[at]).clone());
    let id = BenchmarkId::new("updated", &bench.label);
    timed(&mut group, id, &format!("graph_build/updated/{label}"), || {
        graph.updated(&records, &edited, &[]).expect("one note changed").link_count
    });
    group.finish();

    let mut group = c.benchmark_group("get_vault_overview");
    bench.configure(&mut group, bench.stats.files >= 50_000);
    timed(&mut group, bench.id(), &format!("get_vault_overview/{label}"), || {
        engine.overview(Caller::Agent(Access::Read)).expect("overview").counts.notes
    });
    group.finish();
    // As a server with a file watcher answers it: from the last walk (issue 42).
    let mut group = c.benchmark_group("get_vault_overview_watched");
    bench.configure(&mut group, false);
    engine.set_watched(true);
    timed(&mut group, bench.id(), &format!("get_vault_overview_watched/{label}"), || {
        engine.overview(Caller::Agent(Access::Read)).expect("overview").counts.notes
    });
    engine.set_watched(false);
    group.finish();

    // Every check over the whole vault, the text checks (mentions, empty notes) included.
    let mut group = c.benchmark_group("audit_vault");
    bench.configure(&mut group, true);
    let args = AuditArgs::default();
    timed(&mut group, bench.id(), &format!("audit_vault/{label}"), || {
        engine.audit_vault(&args).expect("audit_vault").total
    });
    group.finish();

    // The folder with the most notes: its first page and a page from its middle.
    let mut by_folder: std::collections::BTreeMap<&str, usize> = std::collections::BTreeMap::new();
    for &i in &notes {
        *by_folder.entry(records[i].folder()).or_default() += 1;
    }
    let folder = by_folder.iter().max_by_key(|(_, n)| **n).map(|(f, _)| (*f).to_owned()).unwrap_or_default();
    let first = ListNotesArgs {
        folder: Some(folder.clone()),
        limit: Some(LIST_NOTES_LIMIT.default),
        ..ListNotesArgs::default()
    };
    let mut middle = first.clone();
    let pages = by_folder.get(folder.as_str()).copied().unwrap_or(0) / LIST_NOTES_LIMIT.default as usize;
    for _ in 0..pages / 2 {
        match engine.list_notes(&middle).expect("list_notes").next_cursor {
            Some(cursor) => middle.cursor = Some(cursor),
            None => break,
        }
    }
    let mut group = c.benchmark_group("list_notes");
    bench.configure(&mut group, false);
    for (which, args) in [("first", &first), ("middle", &middle)] {
        timed(&mut group, BenchmarkId::new(which, label), &format!("list_notes/{which}/{label}"), || {
            engine.list_notes(args).expect("list_notes").notes.len()
        });
    }
    group.finish();
}
