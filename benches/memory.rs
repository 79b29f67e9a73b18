//! Criterion benchmarks of what the agent's memory (issue 39) adds to a
//! search and to a recall, on a generated vault of 10,000 notes whose memory
//! holds 1,000 entries about the person and 1,000 about the vault (each
//! memory's cap): the same query through `search_knowledge` (the notes
//! alone) and `search_knowledge_for` (the memory first), `recall_context`
//! beside `recall_context_for`, and indexing one memory folder of 1,000
//! entries (what the first call after an entry was added or edited pays).
//!
//! ```text
//! cargo bench -p kb-bench --bench memory
//! ```

#![allow(
    clippy::disallowed_methods,
    clippy::disallowed_types,
    reason = "the benchmark builds a vault on disk"
)]

use criterion::Criterion;
use kb_bench::bench_dir;
use kb_mcp::engine::types::{MemoryAbout, Principal, RecallArgs, RememberArgs, SearchArgs};
use kb_mcp::engine::{Engine, EngineOptions, MEMORY_MAX_ENTRIES};
use kb_mcp::index::MemoryIndex;

const NOTES: usize = 10_000;

fn main() {
    let mut criterion = Criterion::default().configure_from_args();
    let dir = bench_dir().join("memory-10000");
    let _ = std::fs::remove_dir_all(&dir);
    kb_bench::generate(&dir, NOTES, 42).expect("the vault is generated");
    let engine =
        Engine::open(&EngineOptions { vault: dir.clone(), index_dir: None }).expect("the engine opens");
    engine.sync(false, None).expect("the vault is indexed");
    let local = Principal::local();
    let topics = ["deadline", "preference", "project", "folder", "meeting", "language", "review", "draft"];
    let mut texts = Vec::new();
    for n in 0..MEMORY_MAX_ENTRIES {
        let topic = topics[n % topics.len()];
        let text = format!(
            "Fact {n} about the {topic}: the person keeps the {topic} notes of week {} together.",
            n % 52
        );
        for about in [MemoryAbout::Person, MemoryAbout::Vault] {
            let args = RememberArgs { about, text: text.clone(), category: Some(topic.to_owned()) };
            engine.remember(&args, &local).expect("an entry is remembered");
        }
        texts.push((format!("entry-{n}.md"), text));
    }
    let query = SearchArgs { query: "meeting notes of week 12".to_owned(), ..SearchArgs::default() };
    // Warm: the memory folders indexed once.
    engine.search_knowledge_for(&query, &local).unwrap();
    criterion.bench_function("memory/search_knowledge_notes_alone", |b| {
        b.iter(|| engine.search_knowledge(&query).unwrap())
    });
    criterion.bench_function("memory/search_knowledge_with_2000_entries", |b| {
        b.iter(|| engine.search_knowledge_for(&query, &local).unwrap())
    });
    let recall =
        RecallArgs { topic: "when are the meeting notes of week 12".to_owned(), ..RecallArgs::default() };
    criterion
        .bench_function("memory/recall_notes_alone", |b| b.iter(|| engine.recall_context(&recall).unwrap()));
    criterion.bench_function("memory/recall_with_2000_entries", |b| {
        b.iter(|| engine.recall_context_for(&recall, &local).unwrap())
    });
    criterion.bench_function("memory/index_1000_entries", |b| {
        b.iter(|| MemoryIndex::build(texts.iter().map(|(key, text)| (key.as_str(), text.as_str()))).unwrap())
    });
    criterion.final_summary();
}
