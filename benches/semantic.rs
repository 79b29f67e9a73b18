//! Criterion benchmarks of the semantic layer's parts a search pays for
//! (issue 37): embedding a query with the bundled model, embedding one
//! section (what a pass pays per changed section), and the exact search of a
//! vector store of 100,000 sections over 20,000 notes and of 500,000 over
//! 100,000 (about what the generated 100k vault gives: 4.8 sections a note),
//! best 30 notes.
//! A hybrid search's cost over the lexical one is the query's embedding plus
//! the store's search (the fusion is a few dozen additions).
//!
//! ```text
//! cargo bench -p kb-bench --bench semantic
//! ```

use std::sync::Arc;

use criterion::Criterion;
use kb_bench::rng::Rng;
use kb_mcp::index::semantic::{Model, Vectors};

/// A store of `sections` random unit vectors of `dimensions`, spread evenly
/// over `notes` notes.
fn store(sections: usize, notes: usize, dimensions: usize) -> Vectors {
    let mut rng = Rng::new(37);
    let mut store = Vectors::new("bench");
    let per_note = sections.div_ceil(notes);
    for note in 0..notes {
        store.begin_note(Arc::from(format!("notes/{note}.md")), format!("sha256:{note}"));
        for section in 0..per_note {
            let vector = unit((0..dimensions).map(|_| rng.unit() as f32 - 0.5).collect());
            store.push(section as u32 + 1, (note * per_note + section) as u128, &vector);
        }
    }
    store
}

fn unit(v: Vec<f32>) -> Vec<f32> {
    let norm = v.iter().map(|x| x * x).sum::<f32>().sqrt();
    v.into_iter().map(|x| x / norm).collect()
}

fn main() {
    let mut criterion = Criterion::default().configure_from_args();
    let model = Model::bundled().expect("the bundled model loads");
    let question = vec!["why do I keep believing a job will be finished sooner than it really is".to_owned()];
    criterion.bench_function("semantic/embed_query", |b| b.iter(|| model.embed(&question).unwrap()));
    let section = vec![format!(
        "Estimating projects\n{}",
        "Break the work into pieces of a day or less, estimate each, add them up, then add half again. "
            .repeat(12)
    )];
    criterion.bench_function("semantic/embed_section", |b| b.iter(|| model.embed(&section).unwrap()));
    let query = model.embed(&question).unwrap().remove(0);
    for (sections, notes) in [(100_000, 20_000), (500_000, 100_000)] {
        let store = store(sections, notes, query.len());
        criterion.bench_function(&format!("semantic/search_{}k_sections", sections / 1000), |b| {
            b.iter(|| store.search(&query, 30, &|_| true))
        });
    }
    criterion.final_summary();
}
