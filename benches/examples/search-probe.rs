//! `search-probe`: runs the vault benchmark's searches a set number of times on
//! an existing, synced index, for instruction counts under callgrind.
//!
//! ```text
//! search-probe VAULT INDEX_DIR TOOL KIND TIMES
//! ```

#![allow(clippy::disallowed_methods, clippy::disallowed_types, reason = "a probe")]

use std::path::PathBuf;

use kb_bench::{CORPUS_QUERIES, GENERATED_QUERIES};
use kb_mcp::engine::types::SearchArgs;
use kb_mcp::engine::{Engine, EngineOptions};

/// Prints every page (path, score bits, total; a content hit's snippets) of both searches for each
/// line `query<TAB>folder<TAB>tags` of a file, at limits 1 and 10.
fn dump(engine: &Engine, file: &str) {
    let text = std::fs::read_to_string(file).expect("queries");
    let mut out = String::new();
    for line in text.lines() {
        let mut cols = line.split('\t');
        let query = cols.next().unwrap_or_default().to_owned();
        let folder = cols.next().filter(|f| !f.is_empty()).map(str::to_owned);
        let tags: Vec<String> =
            cols.next().unwrap_or_default().split(',').filter(|t| !t.is_empty()).map(str::to_owned).collect();
        for limit in [1, 10] {
            let args = SearchArgs {
                query: query.clone(),
                folder: folder.clone(),
                tags: (!tags.is_empty()).then(|| tags.clone()),
                limit: Some(limit),
                ..SearchArgs::default()
            };
            match engine.search_knowledge(&args) {
                Ok(found) => {
                    out += &format!("k {line:?} {limit} total {}\n", found.total);
                    for hit in found.results {
                        out += &format!("  {} {:08x} {:?}\n", hit.path, hit.score.to_bits(), hit.matched);
                    }
                }
                Err(e) => out += &format!("k {line:?} error {e}\n"),
            }
            match engine.search_note_content(&args) {
                Ok(found) => {
                    out += &format!("c {line:?} {limit} total {}\n", found.total);
                    for hit in found.results {
                        out +=
                            &format!("  {} {:08x} {}\n", hit.path, hit.score.to_bits(), hit.snippets.len());
                        for snippet in hit.snippets {
                            out +=
                                &format!("    {} {:?} {:?}\n", snippet.line, snippet.heading, snippet.text);
                        }
                    }
                }
                Err(e) => out += &format!("c {line:?} error {e}\n"),
            }
        }
    }
    std::io::Write::write_all(&mut std::io::stdout(), out.as_bytes()).expect("write");
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    if let [vault, index_dir, mode, file] = &args[..]
        && mode == "dump"
    {
        let options =
            EngineOptions { vault: PathBuf::from(vault), index_dir: Some(PathBuf::from(index_dir)) };
        let engine = Engine::open(&options).expect("open");
        dump(&engine, file);
        return;
    }
    let [vault, index_dir, tool, kind, times] = &args[..] else {
        panic!("usage: search-probe VAULT INDEX_DIR TOOL KIND TIMES");
    };
    let queries = if vault.contains("obsidian-help") { CORPUS_QUERIES } else { GENERATED_QUERIES };
    let query = queries.all().into_iter().find(|(k, _)| k == kind).expect("kind").1;
    let options = EngineOptions { vault: PathBuf::from(vault), index_dir: Some(PathBuf::from(index_dir)) };
    let engine = Engine::open(&options).expect("open");
    if std::env::var_os("PROBE_SYNC").is_some() {
        engine.sync(false, None).expect("sync");
    }
    let times: usize = times.parse().expect("times");
    let args = SearchArgs { query: query.to_owned(), ..SearchArgs::default() };
    // One search first (jieba's dictionary, caches), then the measured ones:
    // `valgrind --collect-atstart=no --toggle-collect='*measured*'`.
    let first = search_once(&engine, tool, &args);
    let total = measured(&engine, tool, &args, times);
    eprintln!("{tool} {kind} {query:?}: first {first}, total {total}");
}

fn search_once(engine: &Engine, tool: &str, args: &SearchArgs) -> u64 {
    if tool == "k" {
        engine.search_knowledge(args).expect("search").total
    } else {
        engine.search_note_content(args).expect("search").total
    }
}

#[inline(never)]
fn measured(engine: &Engine, tool: &str, args: &SearchArgs, times: usize) -> u64 {
    let mut total = 0;
    for _ in 0..times {
        total += std::hint::black_box(search_once(engine, tool, args));
    }
    total
}
