//! The fuzzers' findings as ordinary tests: every file kept under
//! `tests/fuzz/corpus/<target>/` (the minimised corpus) and
//! `tests/fuzz/artifacts/<target>/` (inputs that once crashed) is replayed
//! through the very function its fuzz target runs (`tests/fuzz/harness.rs`), so
//! `cargo test` guards what the fuzzers found without cargo-fuzz, a nightly
//! feature or a sanitizer. `.ci/fuzz` runs the fuzzers themselves.

#![allow(
    clippy::disallowed_methods,
    clippy::disallowed_types,
    reason = "the tests build and inspect vaults on disk"
)]

#[path = "../fuzz/harness.rs"]
mod harness;

use std::path::{Path, PathBuf};

/// The kept inputs of one target, sorted: corpus first, then crash artifacts.
fn inputs(target: &str) -> Vec<PathBuf> {
    let fuzz = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fuzz");
    let mut files = Vec::new();
    for folder in [fuzz.join("corpus").join(target), fuzz.join("artifacts").join(target)] {
        let Ok(entries) = std::fs::read_dir(&folder) else { continue };
        let mut found: Vec<PathBuf> =
            entries.flatten().map(|entry| entry.path()).filter(|path| path.is_file()).collect();
        found.sort();
        files.extend(found);
    }
    files
}

/// Replays every kept input of `target` through `body`; panics naming each
/// input that fails, with its bytes.
fn replay(target: &str, body: fn(&[u8])) {
    let files = inputs(target);
    assert!(!files.is_empty(), "no corpus for {target}: run .ci/fuzz");
    let mut failed = Vec::new();
    for file in &files {
        let data = std::fs::read(file).unwrap();
        if std::panic::catch_unwind(|| body(&data)).is_err() {
            failed.push(format!("{} ({:?})", file.display(), String::from_utf8_lossy(&data)));
        }
    }
    assert!(
        failed.is_empty(),
        "{target}: {} of {} inputs fail:\n{}",
        failed.len(),
        files.len(),
        failed.join("\n")
    );
}

#[test]
fn path_resolver_corpus_and_crashes() {
    replay("path_resolver", harness::path_resolver);
}

#[test]
fn note_parser_corpus_and_crashes() {
    replay("note_parser", harness::note_parser);
}

#[test]
fn patch_edits_corpus_and_crashes() {
    replay("patch_edits", harness::patch_edits);
}

/// Inputs no fuzzer needs to find: the edges of each decoder.
#[test]
fn edge_inputs() {
    let edges: [&[u8]; 8] = [
        b"",
        b"\0",
        b"\xff\xfe\0\0",
        b"\xef\xbb\xbf---\n---\n",
        b"---\r\n",
        &[0xff; 64],
        b"\xc0\xae\xc0\xae/\xc0\xae\xc0\xae/etc/passwd",
        b"z/note.md",
    ];
    for data in edges {
        harness::path_resolver(data);
        harness::note_parser(data);
        harness::patch_edits(data);
    }
}
