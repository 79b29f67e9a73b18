//! `kb-index build [--full]`: build or update the index, with a progress bar
//! on a terminal. The bar counts notes as they are read; once all are read it
//! says the index is being written (the commit takes seconds on a large vault,
//! and a bar frozen near its end with an ETA of 0 s looks hung).

use std::io::{IsTerminal, Write};
use std::time::Duration;

use indicatif::{ProgressBar, ProgressStyle};
use kb_mcp::engine::Engine;

use crate::Failure;
use crate::output::{count, human_bytes};

pub(crate) fn run(engine: &Engine, full: bool, out: &mut dyn Write) -> Result<u8, Failure> {
    let bar = std::io::stderr().is_terminal().then(|| {
        let bar = ProgressBar::new(0);
        bar.set_style(
            ProgressStyle::with_template("{spinner} reading notes {pos}/{len} {wide_bar} {eta}")
                .unwrap_or_else(|_| ProgressStyle::default_bar()),
        );
        // The spinner turns while a slow note or the commit holds the count still.
        bar.enable_steady_tick(Duration::from_millis(120));
        bar
    });
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
    Ok(0)
}
