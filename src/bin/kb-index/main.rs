//! `kb-index`: the command line for people.
//!
//! Builds and inspects the index, searches, and (with the proposals issue)
//! reviews and applies the inbox. Every command calls the same engine methods
//! as the MCP tools, so the two cannot disagree. Exit codes: 0 success, 1 a
//! check failed or nothing matched, 2 bad usage or input.

use std::io::{IsTerminal, Write};
use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Parser, Subcommand};

mod eval_cmd;
use kb_mcp::engine::types::SearchArgs;
use kb_mcp::engine::{Engine, EngineOptions};
use kb_mcp::error::Error;

/// Build, inspect and search the index of a Markdown vault.
#[derive(Debug, Parser)]
#[command(name = "kb-index", version, about)]
struct Cli {
    /// The vault folder (default: $KB_VAULT, else the current folder when it looks like a vault: it holds .obsidian/, kb.toml or Markdown files, and is neither / nor your home folder).
    #[arg(long, global = true, env = "KB_VAULT")]
    vault: Option<PathBuf>,
    /// Where the index lives (default: <vault>/.kb).
    #[arg(long, global = true)]
    index_dir: Option<PathBuf>,
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum InboxCommand {
    /// Pending proposals and whether each passes its checks.
    List {
        /// Print JSON.
        #[arg(long)]
        json: bool,
    },
    /// Without --yes: a dry run showing what would be applied. With --yes --only ID: apply that one proposal.
    Apply {
        /// Really apply (requires --only).
        #[arg(long)]
        yes: bool,
        /// The proposal to apply: its id, id prefix, or slug.
        #[arg(long)]
        only: Option<String>,
    },
    /// Move a pending proposal to inbox/rejected/<date>/ with a reason (and an audit line).
    Reject {
        /// The proposal: its id, id prefix, or slug.
        id: String,
        /// Why it is rejected.
        #[arg(long)]
        reason: String,
    },
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Measure search quality: run a retrieval suite (recall@k, MRR) against the vault.
    Eval {
        /// The suite file (JSON, see index-schema/eval-suite.schema.json).
        suite: PathBuf,
        /// Also write the JSON report here (`-` prints it instead of the text report).
        #[arg(long)]
        json: Option<PathBuf>,
        /// Score the yardstick instead: plain BM25 over one body field, default tokenizer.
        #[arg(long)]
        baseline: bool,
    },
    /// Review, apply or reject the proposals agents staged in the inbox.
    Inbox {
        #[command(subcommand)]
        command: InboxCommand,
    },
    /// Build or update the index (only changed notes are re-read).
    Build {
        /// Rebuild from scratch.
        #[arg(long)]
        full: bool,
    },
    /// Show the vault and index state (what get_vault_overview returns).
    Status {
        /// Print JSON instead of text.
        #[arg(long)]
        json: bool,
    },
    /// Search notes: titles, aliases, descriptions and tags, or with --content the text.
    Search {
        /// The query: words, "exact phrase", -excluded.
        query: String,
        /// Search note text (search_note_content) instead of titles and tags.
        #[arg(long)]
        content: bool,
        /// How many results (1 to 50).
        #[arg(long, default_value_t = 10)]
        limit: u32,
        /// Only notes carrying this tag (repeatable).
        #[arg(long = "tag")]
        tags: Vec<String>,
        /// Only notes under this folder.
        #[arg(long)]
        folder: Option<String>,
        /// Print JSON (the tool's structured result).
        #[arg(long)]
        json: bool,
    },
}

/// A failure with the exit code it maps to.
struct Failure {
    code: u8,
    message: String,
}

impl From<Error> for Failure {
    fn from(error: Error) -> Self {
        let code = if error.code.is_user_fault() || error.code == kb_mcp::error::ErrorCode::NotFound {
            2
        } else {
            1
        };
        let mut message = error.message;
        if let Some(hint) = error.hint {
            message.push_str(&format!("\nhint: {hint}"));
        }
        Failure { code, message: format!("{}: {message}", error.code) }
    }
}

impl From<std::io::Error> for Failure {
    fn from(error: std::io::Error) -> Self {
        Failure { code: 1, message: format!("cannot write output: {error}") }
    }
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    match run(cli) {
        Ok(code) => ExitCode::from(code),
        Err(failure) => {
            eprintln!("kb-index: {}", failure.message);
            ExitCode::from(failure.code)
        }
    }
}

/// Opens the vault; `status` creates nothing (no index folder when there is no index).
fn open(cli: &Cli) -> Result<Engine, Failure> {
    let vault = match &cli.vault {
        Some(vault) => vault.clone(),
        None => {
            let current = std::env::current_dir()?;
            let home = std::env::var_os("HOME").filter(|home| !home.is_empty()).map(PathBuf::from);
            kb_mcp::sandbox::current_folder_vault(&current, home.as_deref())?
        }
    };
    if !vault.is_dir() {
        return Err(Failure {
            code: 2,
            message: format!(
                "the vault folder {} does not exist or is not a folder\nhint: pass --vault DIR or set KB_VAULT",
                vault.display()
            ),
        });
    }
    let options = EngineOptions { vault, index_dir: cli.index_dir.clone() };
    let engine = if matches!(cli.command, Command::Status { .. }) {
        Engine::open_existing(&options)?
    } else {
        Engine::open(&options)?
    };
    let dir = engine.index().dir().display();
    if let Some(reason) = engine.index_repaired() {
        if matches!(cli.command, Command::Status { .. }) {
            eprintln!("kb-index: {reason}");
        } else {
            eprintln!("kb-index: rebuilding the index in {dir} from scratch: {reason}");
        }
    }
    if let Some(reason) = engine.index_moved() {
        eprintln!("kb-index: {reason} {dir}");
    }
    if let Some(reason) = engine.index().read_only() {
        eprintln!("kb-index: {reason}; the index is used as it is (it may be stale)");
    }
    Ok(engine)
}

fn human_bytes(bytes: u64) -> String {
    if bytes >= 1 << 20 {
        format!("{:.1} MiB", bytes as f64 / f64::from(1 << 20))
    } else {
        format!("{:.1} KiB", bytes as f64 / 1024.0)
    }
}

fn run(cli: Cli) -> Result<u8, Failure> {
    let engine = open(&cli)?;
    let mut out = std::io::stdout().lock();
    match &cli.command {
        Command::Build { full } => {
            let bar = std::io::stderr().is_terminal().then(|| {
                let bar = indicatif::ProgressBar::new(0);
                bar.set_style(
                    indicatif::ProgressStyle::with_template(
                        "{spinner} indexing {pos}/{len} notes {wide_bar} {eta}",
                    )
                    .unwrap_or_else(|_| indicatif::ProgressStyle::default_bar()),
                );
                bar
            });
            let progress = |done: usize, total: usize| {
                if let Some(bar) = &bar {
                    bar.set_length(total as u64);
                    bar.set_position(done as u64);
                }
            };
            let report = engine.sync(*full, Some(&progress))?;
            if let Some(bar) = bar {
                bar.finish_and_clear();
            }
            let size = kb_mcp::index::folder_size(engine.index().dir());
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
                "{} {} files in {:.2} s ({} added, {} changed, {} removed, {} unchanged; {} read); index {} at {}",
                if report.full { "built" } else { "updated" },
                report.files,
                report.seconds,
                report.added,
                report.changed,
                report.removed,
                report.unchanged,
                human_bytes(report.bytes_indexed),
                human_bytes(size),
                engine.index().dir().display()
            )?;
            Ok(0)
        }
        Command::Inbox { command } => inbox(&engine, command, &mut out),
        Command::Eval { suite, json, baseline } => {
            eval_cmd::run_eval(&engine, suite, json.as_deref(), *baseline, &mut out)
                .map_err(|message| Failure { code: 2, message })
        }
        Command::Status { json } => {
            let overview = engine.overview("cli", engine.pending_proposals())?;
            if *json {
                writeln!(out, "{}", serde_json::to_string_pretty(&overview).unwrap_or_default())?;
            } else {
                let c = &overview.counts;
                let i = &overview.index;
                writeln!(out, "vault      {}", engine.root().display())?;
                writeln!(out, "notes      {} ({} standards, {} tags)", c.notes, c.standards, c.tags)?;
                writeln!(out, "links      {} ({} broken), {} orphans", c.links, c.broken_links, c.orphans)?;
                writeln!(out, "proposals  {} pending", c.proposals_pending)?;
                writeln!(
                    out,
                    "index      {} documents, schema v{}, at {}",
                    i.documents,
                    i.schema_version,
                    engine.index().dir().display()
                )?;
                if !engine.index().folder().exists() {
                    writeln!(out, "           no index yet (run `kb-index build` to create it)")?;
                }
                if let Some(reason) = engine.index_moved() {
                    writeln!(out, "           ({reason})")?;
                }
                if let Some(reason) = engine.index().read_only() {
                    writeln!(out, "           ({reason}: served as it is)")?;
                }
                writeln!(out, "built      {}", i.built_at.as_deref().unwrap_or("never"))?;
                writeln!(out, "updated    {}", i.updated_at.as_deref().unwrap_or("never"))?;
                if i.skipped_files > 0 {
                    writeln!(out, "skipped    {} files, not served as notes:", i.skipped_files)?;
                    for skipped in &i.skipped {
                        writeln!(out, "           {}: {}", skipped.path, skipped.reason)?;
                    }
                    if i.skipped_files > i.skipped.len() as u64 {
                        writeln!(out, "           … and {} more", i.skipped_files - i.skipped.len() as u64)?;
                    }
                }
                if i.fresh {
                    writeln!(out, "fresh      yes")?;
                } else {
                    writeln!(
                        out,
                        "fresh      no: {} added, {} changed, {} removed since the last build (run `kb-index build`)",
                        i.stale.added, i.stale.changed, i.stale.removed
                    )?;
                }
            }
            Ok(if overview.index.fresh { 0 } else { 1 })
        }
        Command::Search { query, content, limit, tags, folder, json } => {
            let args = SearchArgs {
                query: query.clone(),
                tags: (!tags.is_empty()).then(|| tags.clone()),
                folder: folder.clone(),
                limit: Some(*limit),
                explain: None,
            };
            // The index is brought up to date first (incremental: about 0.1 s on
            // 6,280 notes); when it cannot be, the answer says it may be stale.
            if let Err(error) = engine.sync(false, None) {
                if engine.catalog().records().is_empty() {
                    return Err(error.into());
                }
                eprintln!("warning: searching the index as it is, which may be stale: {error}");
            }
            let found = if *content {
                let results = engine.search_note_content(&args)?;
                if *json {
                    writeln!(out, "{}", serde_json::to_string_pretty(&results).unwrap_or_default())?;
                } else {
                    for (rank, hit) in results.results.iter().enumerate() {
                        writeln!(out, "{:>2}. {}  ({:.2})  {}", rank + 1, hit.path, hit.score, hit.title)?;
                        for snippet in &hit.snippets {
                            writeln!(out, "      L{}: {}", snippet.line, snippet.text)?;
                        }
                    }
                    writeln!(out, "{} of {} matching notes", results.results.len(), results.total)?;
                }
                results.total
            } else {
                let results = engine.search_knowledge(&args)?;
                if *json {
                    writeln!(out, "{}", serde_json::to_string_pretty(&results).unwrap_or_default())?;
                } else {
                    for (rank, hit) in results.results.iter().enumerate() {
                        writeln!(out, "{:>2}. {}  ({:.2})  {}", rank + 1, hit.path, hit.score, hit.title)?;
                    }
                    writeln!(out, "{} of {} matching notes", results.results.len(), results.total)?;
                }
                results.total
            };
            Ok(if found == 0 { 1 } else { 0 })
        }
    }
}

/// Colours for a terminal; plain text otherwise.
struct Paint {
    on: bool,
}

impl Paint {
    fn wrap(&self, code: &str, text: &str) -> String {
        if self.on { format!("\x1b[{code}m{text}\x1b[0m") } else { text.to_owned() }
    }
    fn good(&self, text: &str) -> String {
        self.wrap("32", text)
    }
    fn bad(&self, text: &str) -> String {
        self.wrap("31", text)
    }
    fn strong(&self, text: &str) -> String {
        self.wrap("1", text)
    }
}

fn inbox(engine: &Engine, command: &InboxCommand, out: &mut dyn Write) -> Result<u8, Failure> {
    use kb_mcp::engine::types::{ApplyArgs, ListProposalsArgs};
    let paint = Paint { on: std::io::stdout().is_terminal() && std::env::var_os("NO_COLOR").is_none() };
    let pending = || engine.list_proposals(&ListProposalsArgs { status: None, limit: Some(500) });
    match command {
        InboxCommand::List { json } => {
            let proposals = pending()?;
            if *json {
                writeln!(out, "{}", serde_json::to_string_pretty(&proposals).unwrap_or_default())?;
                return Ok(0);
            }
            if proposals.proposals.is_empty() {
                writeln!(out, "no pending proposals")?;
            }
            for p in &proposals.proposals {
                let passes = p.checks.intact && p.checks.base_current && p.checks.target_free;
                writeln!(
                    out,
                    "{}  {:<5} {}  {}\n    reason: {}\n    {}",
                    paint.strong(&p.proposal_id),
                    p.kind,
                    p.target,
                    if passes { paint.good("checks pass") } else { paint.bad("a check fails") },
                    p.reason,
                    engine
                        .proposal_summary(&p.proposal_id)
                        .unwrap_or_default()
                        .lines()
                        .next()
                        .unwrap_or_default()
                )?;
            }
            Ok(0)
        }
        InboxCommand::Apply { yes: false, only } => {
            let proposals = pending()?;
            let mut all_pass = true;
            let mut shown = 0;
            for p in &proposals.proposals {
                if let Some(only) = only
                    && engine.resolve_proposal(only).ok().as_deref() != Some(p.proposal_id.as_str())
                {
                    continue;
                }
                shown += 1;
                let checks = [
                    ("intact", p.checks.intact),
                    ("base current", p.checks.base_current),
                    ("target free", p.checks.target_free),
                ];
                let failing: Vec<&str> = checks.iter().filter(|(_, ok)| !ok).map(|(name, _)| *name).collect();
                all_pass &= failing.is_empty();
                writeln!(
                    out,
                    "{} {}: {}",
                    if failing.is_empty() { paint.good("would apply") } else { paint.bad("would refuse") },
                    p.proposal_id,
                    engine
                        .proposal_summary(&p.proposal_id)
                        .unwrap_or_else(|| p.target.clone())
                        .replace('\n', " ")
                )?;
                if !failing.is_empty() {
                    writeln!(out, "    failing checks: {}", failing.join(", "))?;
                }
            }
            writeln!(
                out,
                "dry run: {shown} proposals; apply one with `kb-index inbox apply --yes --only ID`"
            )?;
            Ok(if all_pass { 0 } else { 1 })
        }
        InboxCommand::Apply { yes: true, only } => {
            let Some(only) = only else {
                return Err(Failure {
                    code: 2,
                    message: "--yes applies exactly one proposal: add --only ID (see `kb-index inbox list`)"
                        .to_owned(),
                });
            };
            let id = engine.resolve_proposal(only)?;
            let applied = engine.apply_proposal(&ApplyArgs { proposal_id: id }, kb_mcp::write::Actor::Cli)?;
            writeln!(
                out,
                "{} {} -> {} ({}); archived in {}{}",
                paint.good(&applied.status),
                applied.proposal_id,
                applied.target,
                applied.new_hash,
                applied.archive,
                applied
                    .index
                    .error
                    .as_deref()
                    .map(|e| format!("; index not updated: {e} (run `kb-index build`)"))
                    .unwrap_or_default()
            )?;
            Ok(if applied.index.updated { 0 } else { 1 })
        }
        InboxCommand::Reject { id, reason } => {
            let id = engine.resolve_proposal(id)?;
            let rejected = engine.reject_proposal(&id, reason, kb_mcp::write::Actor::Cli)?;
            writeln!(out, "rejected {}; moved to {}", rejected.proposal_id, rejected.archive)?;
            Ok(0)
        }
    }
}
