//! `kb-index eval SUITE.json [--json OUT] [--baseline | --tool TOOL]`: the retrieval
//! evaluation, for people and CI.
//!
//! The binary's part is the glue the library leaves out on purpose: reading the
//! suite file, bringing the index up to date so the run measures the vault as it
//! is on disk, printing the verdicts and scores, writing the JSON report, and
//! turning the outcome into an exit code (0 every case passed, 1 some case
//! failed, 2 the suite or its input is invalid, as the caller maps an `Err`).

use std::io::Write;
use std::path::Path;

use kb_mcp::engine::Engine;
use kb_mcp::error::Error;
use kb_mcp::eval::{Suite, Tool, run, run_as, run_baseline};

/// What ranks the suite's cases.
pub(crate) enum Ranking {
    /// Each case's own tool.
    OwnTools,
    /// One tool for every case (`--tool`).
    Through(Tool),
    /// The plain-BM25 yardstick (`--baseline`).
    Baseline,
}

/// Runs the suite at `suite_path` against `engine` (ranked as `ranking` says), writes the text report to
/// `out` (or, when `json_out` is `-`, the JSON report instead) and the JSON report
/// to `json_out`. Returns the exit code, 0 or 1; an `Err` carries the message of
/// an exit-2 failure (unreadable or invalid suite, a case the engine refuses).
pub(crate) fn run_eval(
    engine: &Engine,
    suite_path: &Path,
    json_out: Option<&Path>,
    ranking: Ranking,
    out: &mut dyn Write,
) -> Result<u8, String> {
    let text = std::fs::read_to_string(suite_path)
        .map_err(|err| format!("cannot read the suite {}: {err}", suite_path.display()))?;
    let suite = Suite::parse(&text).map_err(|err| describe(suite_path, &err))?;
    engine.sync(false, None).map_err(|err| describe(suite_path, &err))?;
    let report = match ranking {
        Ranking::OwnTools => run(engine, &suite),
        Ranking::Through(tool) => run_as(engine, &suite, tool),
        Ranking::Baseline => run_baseline(engine, &suite),
    }
    .map_err(|err| describe(suite_path, &err))?;
    let json =
        serde_json::to_string_pretty(&report).map_err(|err| format!("cannot serialise the report: {err}"))?;
    let written = match json_out {
        Some(path) if path == Path::new("-") => writeln!(out, "{json}"),
        Some(path) => {
            std::fs::write(path, format!("{json}\n"))
                .map_err(|err| format!("cannot write the JSON report to {}: {err}", path.display()))?;
            write!(out, "{report}")
        }
        None => write!(out, "{report}"),
    };
    match written {
        // The reader went away (`kb-index eval … | head`): nothing to say.
        Err(err) if err.kind() == std::io::ErrorKind::BrokenPipe => {}
        other => other.map_err(|err| format!("cannot write output: {err}"))?,
    }
    Ok(if report.all_passed() { 0 } else { 1 })
}

/// An error as one message naming the suite file, with its hint on a second line.
fn describe(suite_path: &Path, error: &Error) -> String {
    let mut message = format!("{}: {}: {}", suite_path.display(), error.code, error.message);
    if let Some(hint) = &error.hint {
        message.push_str(&format!("\nhint: {hint}"));
    }
    message
}
