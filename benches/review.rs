//! Criterion benchmark of the review card's and review page's worst case: one
//! page of the review of a move that renames a note linked from 10,000 notes,
//! so that every link is rewritten (`review_page`,
//! what `review_proposal` and `GET /api/proposals/{id}` answer), with every
//! check re-run, on a vault made here: a hub note and 10,000 notes linking to
//! it, each a few lines. It also prints the size of that page as JSON, the
//! bytes the card receives. Target: under 1 s at 10,000 rewritten links.
//!
//! ```text
//! cargo bench -p kb-bench --bench review
//! ```

#![allow(
    clippy::disallowed_methods,
    clippy::disallowed_types,
    reason = "the benchmark builds its vault on disk"
)]

use std::time::Duration;

use criterion::Criterion;
use kb_mcp::engine::types::ProposeMoveArgs;
use kb_mcp::engine::{Engine, EngineOptions, REVIEW_PAGE_FILES};

/// Notes linking to the hub.
const LINKERS: usize = 10_000;

fn main() {
    let mut criterion = Criterion::default().configure_from_args();
    let tmp = std::env::temp_dir().join(format!("kb-bench-review-{}", std::process::id()));
    let vault = tmp.join("vault");
    std::fs::create_dir_all(vault.join("z/linkers")).expect("make the vault");
    std::fs::write(vault.join("kb.toml"), "[vault]\nnotes = [\"z\"]\ninbox = \"inbox\"\n").expect("kb.toml");
    std::fs::write(vault.join("z/hub.md"), "# Hub\n\nThe note everything links to.\n").expect("hub");
    for n in 0..LINKERS {
        let text = format!("# Note {n}\n\nSee [[hub]] for the overview.\n\nMore text {n}.\n");
        std::fs::write(vault.join(format!("z/linkers/n{n:05}.md")), text).expect("a linker");
    }
    let engine = Engine::open(&EngineOptions { vault: vault.clone(), index_dir: None }).expect("open");
    engine.sync(false, None).expect("build the index");
    let staged = engine
        .propose_move(&ProposeMoveArgs {
            from: "z/hub.md".to_owned(),
            to: "z/moved/centre.md".to_owned(),
            reason: "bench".to_owned(),
            keep_alias: None,
        })
        .expect("stage the move");
    let id = staged.proposal_id;
    let page = engine.review_page(&id, 0, None).expect("review");
    let bytes = serde_json::to_vec(&page).expect("json").len();
    assert_eq!(page.files_total, LINKERS + 1, "the hub and every linker");
    eprintln!(
        "kb-bench: review of a move rewriting {} links: {} files, first page {} files, {bytes} bytes as JSON",
        LINKERS, page.files_total, REVIEW_PAGE_FILES
    );
    let mut group = criterion.benchmark_group("review");
    group.sample_size(10).measurement_time(Duration::from_secs(20));
    group.bench_function("review_page/move_10000_links", |b| {
        b.iter(|| engine.review_page(&id, 0, None).expect("review"));
    });
    group.bench_function("review_page/move_10000_links_last_page", |b| {
        b.iter(|| engine.review_page(&id, LINKERS - 1, None).expect("review"));
    });
    group.finish();
    criterion.final_summary();
    let _ = std::fs::remove_dir_all(&tmp);
}
