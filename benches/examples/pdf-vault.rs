//! `pdf-vault`: adds generated PDFs to a vault, for the figures on PDFs in
//! `BENCHMARKS.md` (build time and index size with and without them).
//!
//! ```text
//! cargo run --release -p kb-bench --example pdf-vault -- --vault DIR [--share 0.08] [--seed 42]
//! ```
//!
//! Adds PDFs until they are `share` of the vault's files (Markdown and PDFs):
//! each holds the text of 3 to 12 of the vault's notes (in a generated vault
//! about 35 % are Chinese), one note a page cut to 45 lines of at most 90
//! characters, written by the tests' PDF writer (`tests/it/pdf_make.rs`:
//! Helvetica for ASCII lines, a CID font with a `ToUnicode` map for the rest).
//! The PDFs go into `pdf/` folders beside the notes of 1 in 10 folders.
//! Deterministic from `(files in the vault, share, seed)`. Prints one JSON
//! line: `{"pdfs": …, "pages": …, "bytes": …}`.

#![allow(
    clippy::disallowed_methods,
    clippy::disallowed_types,
    reason = "the benchmarks build vaults on disk"
)]

#[path = "../../tests/it/pdf_make.rs"]
mod pdf_make;

use std::path::PathBuf;
use std::process::ExitCode;

use kb_bench::{DEFAULT_SEED, markdown_files};

const USAGE: &str = "usage: pdf-vault --vault DIR [--share 0.08] [--seed S]";

fn main() -> ExitCode {
    match run() {
        Ok(()) => ExitCode::SUCCESS,
        Err(message) => {
            eprintln!("pdf-vault: {message}\n{USAGE}");
            ExitCode::from(2)
        }
    }
}

/// SplitMix64: the few draws this tool makes, deterministic everywhere.
fn next(state: &mut u64) -> u64 {
    *state = state.wrapping_add(0x9E37_79B9_7F4A_7C15);
    let mut z = *state;
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

/// A note's text as a page: its lines, cut to 90 characters, at most 45.
fn page_lines(text: &str) -> Vec<String> {
    text.lines()
        .map(str::trim)
        .filter(|line| !line.is_empty() && !line.starts_with("---"))
        .flat_map(|line| {
            let chars: Vec<char> = line.chars().collect();
            chars.chunks(90).map(|chunk| chunk.iter().collect::<String>()).collect::<Vec<_>>()
        })
        .take(45)
        .collect()
}

fn run() -> Result<(), String> {
    let mut vault: Option<PathBuf> = None;
    let mut share = 0.08f64;
    let mut seed = DEFAULT_SEED;
    let mut args = std::env::args().skip(1);
    while let Some(arg) = args.next() {
        let mut value = |name: &str| args.next().ok_or_else(|| format!("{name} needs a value"));
        match arg.as_str() {
            "--vault" => vault = Some(PathBuf::from(value("--vault")?)),
            "--share" => {
                let raw = value("--share")?;
                share = raw.parse().map_err(|_| format!("--share {raw:?} is not a number"))?;
            }
            "--seed" => {
                let raw = value("--seed")?;
                seed = raw.parse().map_err(|_| format!("--seed {raw:?} is not a number"))?;
            }
            other => return Err(format!("unknown argument {other:?}")),
        }
    }
    let vault = vault.ok_or("give --vault DIR")?;
    if !(0.0..0.9).contains(&share) {
        return Err(format!("--share {share} must be in [0, 0.9)"));
    }
    let notes = markdown_files(&vault).map_err(|e| format!("{}: {e}", vault.display()))?;
    if notes.is_empty() {
        return Err(format!("{} holds no notes", vault.display()));
    }
    let mut folders: Vec<PathBuf> = notes.iter().filter_map(|n| n.parent().map(PathBuf::from)).collect();
    folders.sort();
    folders.dedup();
    let pdfs = ((notes.len() as f64) * share / (1.0 - share)).round() as usize;
    let mut state = seed ^ 0x5044_4600;
    let (mut pages_total, mut bytes_total) = (0usize, 0u64);
    for i in 0..pdfs {
        let pages = 3 + (next(&mut state) % 10) as usize;
        let texts: Vec<Vec<String>> = (0..pages)
            .map(|_| {
                let index = (next(&mut state) % notes.len() as u64) as usize;
                page_lines(&std::fs::read_to_string(&notes[index]).unwrap_or_default())
            })
            .collect();
        let borrowed: Vec<Vec<&str>> = texts.iter().map(|p| p.iter().map(String::as_str).collect()).collect();
        let slices: Vec<&[&str]> = borrowed.iter().map(Vec::as_slice).collect();
        let bytes = pdf_make::text_pdf(&slices);
        let folder = folders[(i * 10) % folders.len()].join("pdf");
        std::fs::create_dir_all(&folder).map_err(|e| format!("{}: {e}", folder.display()))?;
        let path = folder.join(format!("document-{i:05}.pdf"));
        std::fs::write(&path, &bytes).map_err(|e| format!("{}: {e}", path.display()))?;
        pages_total += pages;
        bytes_total += bytes.len() as u64;
    }
    eprintln!("pdf-vault: {pdfs} PDFs, {pages_total} pages, {:.1} MB", bytes_total as f64 / 1e6);
    #[expect(clippy::print_stdout, reason = "the JSON line on stdout is this tool's output")]
    {
        println!("{{\"pdfs\": {pdfs}, \"pages\": {pages_total}, \"bytes\": {bytes_total}}}");
    }
    Ok(())
}
