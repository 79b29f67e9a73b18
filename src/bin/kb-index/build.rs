//! `kb-index build [--full] [--lexical-only]`: build or update the index, then
//! the notes' embeddings (unless `--lexical-only`), with a progress bar
//! on a terminal. The bar counts notes as they are read; once all are read it
//! says the index is being written (the commit takes seconds on a large vault,
//! and a bar frozen near its end with an ETA of 0 s looks hung).

use std::io::{IsTerminal, Write};
use std::time::Duration;

use indicatif::{ProgressBar, ProgressStyle};
use kb_mcp::engine::Engine;

use crate::Failure;
use crate::output::{count, human_bytes};

pub(crate) fn run(engine: &Engine, full: bool, embed: bool, out: &mut dyn Write) -> Result<u8, Failure> {
    // The spinner turns while a slow note or the commit holds the count still.
    let bar = terminal_bar("{spinner} reading notes {pos}/{len} {wide_bar} {eta}");
    let progress = |done: usize, total: usize| {
        if let Some(bar) = &bar {
            bar.set_length(total as u64);
            bar.set_position(done as u64);
            if done == total {
                bar.set_style(
                    ProgressStyle::with_template("{spinner} writing the index ({len} notes read)…")
                        .unwrap_or_else(|_| ProgressStyle::default_spinner()),
                );
            }
        }
    };
    let report = engine.sync(full, Some(&progress))?;
    if let Some(bar) = bar {
        bar.finish_and_clear();
    }
    let size = engine.index_size();
    if report.files == 0 {
        eprintln!("kb-index: warning: no notes were indexed: {}", engine.why_no_notes());
    }
    for (path, reason) in report.skipped.iter().take(10) {
        eprintln!("kb-index: skipped {path}: {reason}");
    }
    if report.skipped.len() > 10 {
        eprintln!("kb-index: ... and {} more files skipped", report.skipped.len() - 10);
    }
    writeln!(
        out,
        "{} {} in {:.2} s ({} added, {} changed, {} removed, {} unchanged; {} read); index {} at {}",
        if report.full { "built" } else { "updated" },
        count(report.files as u64, "note"),
        report.seconds,
        report.added,
        report.changed,
        report.removed,
        report.unchanged,
        human_bytes(report.bytes_indexed),
        human_bytes(size),
        engine.index_location().dir.display()
    )?;
    if !embed {
        return Ok(0);
    }
    embed_notes(engine, out)?;
    Ok(0)
}

/// A progress bar drawn with `template` on stderr when it is a terminal; its
/// spinner turns while the count stands still.
fn terminal_bar(template: &str) -> Option<ProgressBar> {
    std::io::stderr().is_terminal().then(|| {
        let bar = ProgressBar::new(0);
        bar.set_style(
            ProgressStyle::with_template(template).unwrap_or_else(|_| ProgressStyle::default_bar()),
        );
        bar.enable_steady_tick(Duration::from_millis(120));
        bar
    })
}

/// Brings the notes' embeddings up to date (the semantic layer), with a bar
/// on a terminal, and says what it did.
pub(crate) fn embed_notes(engine: &Engine, out: &mut dyn Write) -> Result<(), Failure> {
    let bar = terminal_bar("{spinner} embedding sections {pos}/{len} {wide_bar} {eta}");
    let started = std::time::Instant::now();
    let report = engine.embed_pending(&|done, total| {
        if let Some(bar) = &bar {
            bar.set_length(total as u64);
            bar.set_position(done as u64);
        }
    })?;
    if let Some(bar) = bar {
        bar.finish_and_clear();
    }
    match &report.skipped {
        Some(why) if why == "off" => {
            writeln!(out, "embeddings: off ([semantic] enabled = false in kb.toml)")?
        }
        Some(why) => writeln!(out, "embeddings: not built: {why}")?,
        None => writeln!(
            out,
            "embeddings: {} of {} in {:.2} s ({} embedded now, the rest kept); {} in languages no model reads",
            count(report.sections as u64, "section"),
            count(report.notes as u64, "note"),
            started.elapsed().as_secs_f64(),
            report.embedded,
            count(report.unread as u64, "note"),
        )?,
    }
    Ok(())
}
