//! `kb-index`: the command line for people.
//!
//! Searches the vault, shows its state, builds the index, and reviews, applies
//! or rejects the proposals agents staged in the inbox. Every command calls the
//! same engine methods as the MCP tools, so the two cannot disagree. This file
//! holds the arguments, opening the vault and turning failures into exit codes
//! (0 success, 1 a check failed or nothing matched, 2 bad usage or input); each
//! family of subcommands lives in its own file.

#![allow(
    rustdoc::invalid_html_tags,
    reason = "doc comments here are clap's help text, where `<vault>` and `<date>` are what a person reads"
)]
#![allow(
    clippy::disallowed_methods,
    clippy::disallowed_types,
    reason = "the binaries read their own files (token file, suites, reports) and check the folders they are given"
)]

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use clap::{Parser, Subcommand};

mod audit;
mod build;
mod eval_cmd;
mod extract_pdf;
mod history;
mod inbox;
mod ls;
mod output;
mod review;
mod search;
mod status;
mod structure;

use kb_mcp::engine::{Engine, EngineOptions};
use kb_mcp::error::{Error, ErrorCode};
use kb_mcp::eval::Tool;
use kb_mcp::server::VaultSpec;
use output::{ColorChoice, Paint};

const EXAMPLES: &str = "\
Examples:
  kb-index search 锚定效应                  titles and text of every note
  kb-index search sync remote -c -n 20     only note text, 20 results
  kb-index search backup --titles -l       only titles, aliases and tags; paths only
  kb-index status                          the vault and whether the index is fresh
  kb-index inbox list --diff               the changes agents proposed, with their diffs
  kb-index inbox show 2319                 one proposal whole (id, 4+ digits of it, or slug)
  kb-index inbox apply --yes --only 2319   apply it
  kb-index mv z/A.md z/B.md                stage a rename that rewrites every link to it
  kb-index revert 2319                     stage the inverse of an applied proposal
  kb-index log z/设计.md                   a note's versions: when, by whom, lines +/-
  kb-index show z/设计.md --at 3f2a9c1     the note as it was at one of them

Exit codes: 0 success, 1 a check failed or nothing matched, 2 bad usage or input.";

/// `--version`: the version and the index schema it reads and writes.
static VERSION: std::sync::LazyLock<String> = std::sync::LazyLock::new(|| {
    format!("{} (index schema {})", env!("CARGO_PKG_VERSION"), kb_mcp::index::schema_version())
});

/// Search a Markdown vault, see its state, and review the changes AI agents propose to it.
///
/// kb-index is the command line for people; kb-mcp is the server agents talk to.
/// Both use the same index (in <vault>/.kb unless --index-dir says otherwise).
#[derive(Debug, Parser)]
#[command(name = "kb-index", version = &**VERSION, after_help = EXAMPLES)]
struct Cli {
    /// The vault folder, or a vault's name in the --vaults file (default: $KB_VAULT, else the first vault of --vaults, else the current folder when it looks like a vault: it holds .obsidian/, kb.toml or Markdown files, and is neither / nor your home folder).
    #[arg(long, global = true, env = "KB_VAULT", value_name = "DIR|NAME")]
    vault: Option<String>,
    /// The vaults file kb-mcp serves from (TOML, one `[[vault]]` table per vault with name, path and optionally index_dir): --vault NAME picks one.
    #[arg(long, global = true, env = "KB_VAULTS", value_name = "FILE")]
    vaults: Option<PathBuf>,
    /// Where the index lives (default: <vault>/.kb).
    #[arg(long, global = true)]
    index_dir: Option<PathBuf>,
    /// When to colour the output: auto (on a terminal, unless NO_COLOR is set), always or never.
    #[arg(long, global = true, value_enum, default_value_t = ColorChoice::Auto, value_name = "WHEN", hide_possible_values = true)]
    color: ColorChoice,
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Search notes: titles and text together (or --titles, --content); the index is updated first.
    #[command(after_help = search::EXAMPLES)]
    Search(search::SearchArgs),
    /// Check the vault's health (what audit_vault finds); exit 1 when there are errors. --fix stages the mechanical fixes.
    Audit(audit::AuditCmdArgs),
    /// List a folder: its subfolders with their note counts, then its notes (what list_notes returns).
    Ls(ls::LsArgs),
    /// Show the vault and index state (what get_vault_overview returns); exit 1 when the index is stale.
    Status {
        /// Print JSON instead of text.
        #[arg(short, long)]
        json: bool,
        /// List only what changed since this cursor (printed by an earlier `kb-index status`,
        /// or an overview's `changes.cursor`); without it, the recent changes.
        #[arg(long, value_name = "CURSOR")]
        since: Option<String>,
    },
    /// Build or update the index (only changed notes are read again).
    Build {
        /// Rebuild from scratch.
        #[arg(long)]
        full: bool,
        /// Build the word index only; leave the notes' embeddings (the semantic layer) as they are.
        #[arg(long)]
        lexical_only: bool,
    },
    /// Review, apply or reject the changes agents proposed (the inbox).
    #[command(after_help = inbox::EXAMPLES)]
    Inbox {
        #[command(subcommand)]
        command: inbox::InboxCommand,
    },
    /// Review the proposals in the browser: a page on 127.0.0.1 with each diff, Apply and Reject.
    #[command(after_help = review::EXAMPLES)]
    Review(review::ReviewArgs),
    /// Move or rename a note or folder, rewriting every link to it: staged as a proposal (--yes also applies it).
    #[command(after_help = structure::MV_EXAMPLES)]
    Mv(structure::MvArgs),
    /// Delete a note (to inbox/trash/<date>/, never erased): staged as a proposal listing the links that break (--yes also applies it).
    #[command(after_help = structure::RM_EXAMPLES)]
    Rm(structure::RmArgs),
    /// Undo an applied proposal: its exact inverse, staged as a proposal (--yes also applies it); later edits to its notes are kept when they lie on other lines, else it is refused.
    #[command(after_help = structure::REVERT_EXAMPLES)]
    Revert(structure::RevertCmdArgs),
    /// A note's history, newest first: each version's commit, time, who made it (on disk, or a proposal and who approved it), lines added and removed.
    Log(history::LogArgs),
    /// A note as it was at one of its versions (a commit `kb-index log` printed, or a time), printed as it was.
    Show(history::ShowArgs),
    /// Bring a note back to one of its versions (a commit `kb-index log` printed, or a time): staged as a proposal (--yes also applies it); a deleted note is made again.
    Restore(history::RestoreArgs),
    /// Bring a replica (`[replica]` in kb.toml) in agreement with its remote now: fetch, take the remote's commits, push this clone's; then say how it stands.
    Replica(history::ReplicaArgs),
    /// Measure search quality: run a retrieval suite (recall@k, MRR) against the vault.
    Eval {
        /// The suite file (JSON, see index-schema/eval-suite.schema.json).
        suite: PathBuf,
        /// Also write the JSON report here (`-` prints it instead of the text report).
        #[arg(long)]
        json: Option<PathBuf>,
        /// Score the yardstick instead: plain BM25 over one body field, default tokenizer.
        #[arg(long, conflicts_with = "tool")]
        baseline: bool,
        /// Rank by words only (the semantic layer off); by default the notes are
        /// embedded first and ranked by words and meaning.
        #[arg(long)]
        lexical: bool,
        /// Put every case through this tool instead of its own: search_knowledge,
        /// search_note_content or recall_context (a note's rank is its place among
        /// the pack's `match` items, at most five).
        #[arg(long, value_parser = ["search_knowledge", "search_note_content", "recall_context"])]
        tool: Option<String>,
    },
}

/// A failure with the exit code it maps to. An empty message prints nothing
/// (the reader went away: `kb-index search x | head`).
pub(crate) struct Failure {
    pub(crate) code: u8,
    pub(crate) message: String,
}

impl Failure {
    /// Bad usage or input: exit 2.
    pub(crate) fn usage(message: impl Into<String>) -> Failure {
        Failure { code: 2, message: message.into() }
    }
}

impl From<Error> for Failure {
    fn from(error: Error) -> Self {
        // Bad input (including a proposal id that names nothing pending) is 2;
        // a check that failed (stale base, tampered, target taken) is 1.
        let code = if error.code.is_user_fault()
            || matches!(
                error.code,
                ErrorCode::NotFound | ErrorCode::ProposalNotFound | ErrorCode::ProposalNotPending
            ) {
            2
        } else {
            1
        };
        let mut message = error.message;
        if let Some(hint) = person_hint(error.code).map(str::to_owned).or(error.hint) {
            message.push_str(&format!("\nhint: {hint}"));
        }
        Failure { code, message: format!("{}: {message}", error.code) }
    }
}

/// The engine's hints for proposals are written for agents (they name tools
/// such as read_note); a person at the command line is told what they can do.
fn person_hint(code: ErrorCode) -> Option<&'static str> {
    match code {
        ErrorCode::StaleBase => Some(
            "the note changed (or was moved or deleted) after the agent proposed this; nothing was written. Reject the proposal \
             (`kb-index inbox reject ID --reason \"the note changed\"`) and ask the agent to propose the change \
             again against the note as it is now",
        ),
        ErrorCode::ProposalTampered => Some(
            "the proposal's files were changed after it was made; nothing was written. Reject it \
             (`kb-index inbox reject ID --reason ...`) and ask the agent to propose the change again",
        ),
        ErrorCode::TargetExists => Some(
            "a note already exists where this one would go; nothing was written. Reject the proposal, or move \
             the existing note away and apply again",
        ),
        ErrorCode::ProposalNotFound | ErrorCode::ProposalNotPending => {
            Some("`kb-index inbox list` shows the pending proposals with their ids")
        }
        _ => None,
    }
}

impl From<std::io::Error> for Failure {
    fn from(error: std::io::Error) -> Self {
        if error.kind() == std::io::ErrorKind::BrokenPipe {
            return Failure { code: 0, message: String::new() };
        }
        Failure { code: 1, message: format!("cannot write output: {error}") }
    }
}

fn main() -> ExitCode {
    if extract_pdf::asked() {
        return extract_pdf::run();
    }
    let cli = Cli::parse();
    match run(cli) {
        Ok(code) => ExitCode::from(code),
        Err(failure) => {
            if !failure.message.is_empty() {
                eprintln!("kb-index: {}", failure.message);
            }
            ExitCode::from(failure.code)
        }
    }
}

/// Opens the vault; `status` creates nothing (no index folder when there is no index).
fn open(cli: &Cli) -> Result<Engine, Failure> {
    let home = std::env::var_os("HOME").filter(|home| !home.is_empty()).map(PathBuf::from);
    let file = match &cli.vaults {
        Some(path) => {
            let text = std::fs::read_to_string(path).map_err(|error| {
                Failure::usage(format!("cannot read the vaults file {}: {error}", path.display()))
            })?;
            Some((text, path.parent().map(Path::to_path_buf).unwrap_or_default()))
        }
        None => None,
    };
    let asked: Vec<String> = cli.vault.iter().cloned().collect();
    let listed = file.as_ref().map(|(text, base)| (text.as_str(), base.as_path()));
    let resolved = VaultSpec::resolve(&asked, listed, home.as_deref()).map_err(Failure::usage)?;
    let spec = match resolved.and_then(|specs| specs.into_iter().next()) {
        Some(spec) => spec,
        None => {
            let current = std::env::current_dir()?;
            VaultSpec::named_after(kb_mcp::sandbox::current_folder_vault(&current, home.as_deref())?)
        }
    };
    if !spec.path.is_dir() {
        return Err(Failure::usage(format!(
            "the vault folder {} does not exist or is not a folder\nhint: pass --vault DIR (or a NAME the --vaults file lists) or set KB_VAULT",
            spec.path.display()
        )));
    }
    let options = EngineOptions { vault: spec.path, index_dir: cli.index_dir.clone().or(spec.index_dir) };
    let status = matches!(cli.command, Command::Status { .. });
    let engine = if status { Engine::open_existing(&options)? } else { Engine::open(&options)? };
    engine.set_pdf_extractor(extract_pdf::extractor());
    let index = engine.index_location();
    let dir = index.dir.display();
    if let Some(reason) = &index.repaired {
        if status {
            eprintln!("kb-index: {reason}");
        } else {
            eprintln!("kb-index: rebuilding the index in {dir} from scratch: {reason}");
        }
    }
    if let Some(reason) = &index.moved {
        eprintln!("kb-index: {reason} {dir}");
    }
    if let Some(reason) = &index.read_only {
        eprintln!("kb-index: {reason}; the index is used as it is (it may be stale)");
    }
    Ok(engine)
}

fn run(cli: Cli) -> Result<u8, Failure> {
    let engine = open(&cli)?;
    let paint = Paint::new(cli.color);
    let mut out = std::io::stdout().lock();
    match &cli.command {
        Command::Search(args) => search::run(&engine, args, &paint, &mut out),
        Command::Ls(args) => ls::run(&engine, args, &mut out),
        Command::Audit(args) => {
            if args.fix
                && let Some(error) = engine.inbox_conflict()
            {
                return Err(error.into());
            }
            audit::run(&engine, args, &paint, &mut out)
        }
        Command::Status { json, since } => status::run(&engine, *json, since.as_deref(), &paint, &mut out),
        Command::Build { full, lexical_only } => build::run(&engine, *full, !*lexical_only, &mut out),
        Command::Inbox { command } => {
            // The rule the server obeys: never stage or apply among a person's own notes.
            if let Some(error) = engine.inbox_conflict() {
                return Err(error.into());
            }
            inbox::run(&engine, command, &paint, &mut out)
        }
        Command::Mv(args) => {
            if let Some(error) = engine.inbox_conflict() {
                return Err(error.into());
            }
            structure::run_mv(&engine, args, &paint, &mut out)
        }
        Command::Rm(args) => {
            if let Some(error) = engine.inbox_conflict() {
                return Err(error.into());
            }
            structure::run_rm(&engine, args, &paint, &mut out)
        }
        Command::Log(args) => history::run_log(&engine, args, &paint, &mut out),
        Command::Show(args) => history::run_show(&engine, args, &mut out),
        Command::Replica(args) => history::run_replica(&engine, args, &paint, &mut out),
        Command::Restore(args) => {
            if let Some(error) = engine.inbox_conflict() {
                return Err(error.into());
            }
            history::run_restore(&engine, args, &paint, &mut out)
        }
        Command::Revert(args) => {
            if let Some(error) = engine.inbox_conflict() {
                return Err(error.into());
            }
            structure::run_revert(&engine, args, &paint, &mut out)
        }
        Command::Review(args) => {
            if let Some(error) = engine.inbox_conflict() {
                return Err(error.into());
            }
            review::run(engine, args, &mut out)
        }
        Command::Eval { suite, json, baseline, lexical, tool } => {
            if !*baseline && !*lexical {
                build::embed_notes(&engine, &mut std::io::stderr())?;
            }
            engine.set_semantic_wanted(!*lexical);
            let ranking = match (baseline, tool.as_deref().and_then(Tool::from_name)) {
                (true, _) => eval_cmd::Ranking::Baseline,
                (false, Some(tool)) => eval_cmd::Ranking::Through(tool),
                (false, None) => eval_cmd::Ranking::OwnTools,
            };
            eval_cmd::run_eval(&engine, suite, json.as_deref(), ranking, &mut out).map_err(Failure::usage)
        }
    }
}
