//! `kb-mcp`: the MCP server binary.
//!
//! Parses the command line, checks the vault exists (a clear message and exit
//! code 2 otherwise, before any client is kept waiting), and serves MCP on
//! stdio. Started on a terminal, it says how to connect a client instead of
//! waiting silently. Stdout belongs to JSON-RPC: everything else goes to stderr.

use std::io::IsTerminal;
use std::path::PathBuf;
use std::process::ExitCode;

use clap::Parser;
use kb_mcp::server::{ServerOptions, serve_stdio};
use kb_mcp::tools::Access;

/// Serve a Markdown vault to AI agents over MCP (stdio).
#[derive(Debug, Parser)]
#[command(name = "kb-mcp", version, about)]
struct Cli {
    /// The vault folder (default: $KB_VAULT, else the current folder).
    #[arg(long, env = "KB_VAULT")]
    vault: Option<PathBuf>,
    /// What agents may do: read (default), propose (stage proposals in the inbox), apply (also apply them).
    #[arg(long, default_value = "read", value_parser = ["read", "propose", "apply"])]
    access: String,
    /// Where the index lives (default: <vault>/.kb).
    #[arg(long)]
    index_dir: Option<PathBuf>,
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    let vault = match cli.vault.clone().map(Ok).unwrap_or_else(std::env::current_dir) {
        Ok(vault) => vault,
        Err(error) => {
            eprintln!("kb-mcp: cannot determine the current folder: {error}");
            return ExitCode::from(2);
        }
    };
    if !vault.is_dir() {
        eprintln!(
            "kb-mcp: the vault folder {} does not exist or is not a folder\nhint: pass --vault DIR or set KB_VAULT to your notes folder",
            vault.display()
        );
        return ExitCode::from(2);
    }
    let access = Access::parse(&cli.access).unwrap_or(Access::Read);
    if std::io::stdin().is_terminal() {
        eprintln!(
            "kb-mcp {} serves {} over MCP on stdin/stdout (access: {}).\n\
             It is meant to be started by an MCP client, not typed at. For example, in Claude Desktop's\n\
             claude_desktop_config.json:\n  {{\"mcpServers\": {{\"kb\": {{\"command\": \"kb-mcp\", \"args\": [\"--vault\", \"{}\"]}}}}}}\n\
             See README.md for Cursor, Codex and others. Waiting for JSON-RPC on stdin (Ctrl-D to quit).",
            env!("CARGO_PKG_VERSION"),
            vault.display(),
            access.as_str(),
            vault.display()
        );
    }
    let options = ServerOptions { vault, index_dir: cli.index_dir, access };
    let runtime = match tokio::runtime::Builder::new_multi_thread().enable_all().build() {
        Ok(runtime) => runtime,
        Err(error) => {
            eprintln!("kb-mcp: cannot start the async runtime: {error}");
            return ExitCode::from(1);
        }
    };
    match runtime.block_on(serve_stdio(options)) {
        Ok(()) => ExitCode::SUCCESS,
        Err(error) => {
            eprintln!("kb-mcp: {error:#}");
            ExitCode::from(1)
        }
    }
}
