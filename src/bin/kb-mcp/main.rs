//! `kb-mcp`: the MCP server binary, and the keeper of its HTTP tokens.
//!
//! Parses the command line, checks the vault exists (a clear message and exit
//! code 2 otherwise, before any client is kept waiting), and serves MCP on
//! stdio, or over Streamable HTTP with `--http ADDR --tokens FILE`. HTTP is safe
//! by default: it refuses to start without a token file, and refuses an address
//! other machines can reach unless `--allow-remote` says so. `kb-mcp token`,
//! `owner` and `clients` manage its credentials (`credentials.rs`), `kb-mcp
//! install` a host's entry (`install.rs`). Started on a terminal in stdio
//! mode, it says how to connect a client instead of waiting silently. On stdio,
//! stdout belongs to JSON-RPC: everything else goes to stderr.

#![allow(
    clippy::disallowed_methods,
    clippy::disallowed_types,
    reason = "the binaries read their own files (token file, suites, reports) and check the folders they are given"
)]

use std::io::IsTerminal;
use std::net::{IpAddr, Ipv4Addr, SocketAddr};
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::Duration;

mod credentials;
#[path = "../kb-index/extract_pdf.rs"]
mod extract_pdf;
mod install;

use clap::{Parser, Subcommand};
use credentials::{ClientsAction, OwnerAction, TokenAction, clients_command, owner_set, token_command};
use kb_mcp::engine::types::Access;
use kb_mcp::server::{
    DEFAULT_ACCESS_TOKEN_LIFETIME_SECS, DEFAULT_RATE, DEFAULT_REQUEST_TIMEOUT_SECS,
    DEFAULT_SESSION_IDLE_SECS, DEFAULT_SESSIONS_PER_TOKEN, HttpOptions, ServerOptions, TokenFile, VaultSpec,
    is_loopback, is_valid_origin_pattern, serve_http, serve_stdio, set_debug_log,
};

/// The longest --session-idle: a week.
const MAX_SESSION_IDLE_S: u64 = 7 * 24 * 3600;
/// The longest --request-timeout: a day.
const MAX_REQUEST_TIMEOUT_S: u64 = 24 * 3600;

/// `--rate`: 0 (no limit) or a finite rate from 0.01 to 100000 requests a second. Smaller
/// rates would make a refused client wait for years; the range keeps every wait computable.
fn parse_rate(text: &str) -> Result<f64, String> {
    let rate: f64 = text.trim().parse().map_err(|_| format!("`{text}` is not a number"))?;
    if rate == 0.0 || (0.01..=100_000.0).contains(&rate) {
        Ok(rate)
    } else {
        Err(format!("{text} is out of range: use 0 (no limit) or 0.01 to 100000 requests per second"))
    }
}

/// `--version`: the version and the index schema it reads and writes.
static VERSION: std::sync::LazyLock<String> = std::sync::LazyLock::new(|| {
    format!("{} (index schema {})", env!("CARGO_PKG_VERSION"), kb_mcp::index::schema_version())
});

/// Serve a Markdown vault to AI agents over MCP (stdio, or Streamable HTTP with --http).
#[derive(Debug, Parser)]
#[command(name = "kb-mcp", version = &**VERSION, about, args_conflicts_with_subcommands = true)]
struct Cli {
    /// The vault folder (default: $KB_VAULT, else every vault of --vaults, else the current folder when it looks like a vault: it holds .obsidian/, kb.toml or Markdown files, and is neither / nor your home folder). Repeat as --vault NAME=DIR to serve several vaults (the first is the default), or give a NAME the --vaults file lists.
    #[arg(long, env = "KB_VAULT", value_name = "[NAME=]DIR")]
    vault: Vec<String>,
    /// A vaults file: TOML, one `[[vault]]` table per vault with name, path and optionally index_dir; served all unless --vault names some.
    #[arg(long, env = "KB_VAULTS", value_name = "FILE")]
    vaults: Option<PathBuf>,
    /// What stdio agents may do: read (default), propose (stage proposals in the inbox), apply (also apply them). Over HTTP each token's scope decides instead.
    #[arg(long, value_parser = ["read", "propose", "apply"])]
    access: Option<String>,
    /// Where the index lives (default: <vault>/.kb); one vault only (several: index_dir in the --vaults file).
    #[arg(long)]
    index_dir: Option<PathBuf>,
    /// What the JSON log on stderr holds: info (default), or debug (also one `timing` line per request: where its time went; and a search's query in its `tool` line).
    #[arg(long, env = "KB_LOG", value_name = "LEVEL", value_parser = ["info", "debug"], default_value = "info")]
    log_level: String,
    /// Serve MCP over Streamable HTTP at http://ADDR/mcp instead of stdio (e.g. 127.0.0.1:8765; port 0 picks a free one).
    #[arg(long, value_name = "ADDR")]
    http: Option<String>,
    /// The token file (required with --http; create tokens with `kb-mcp token add`). Keep it outside the vault.
    #[arg(long, env = "KB_TOKENS", value_name = "FILE")]
    tokens: Option<PathBuf>,
    /// Allow an --http address that other machines can reach (every request still needs a token).
    #[arg(long)]
    allow_remote: bool,
    /// A browser origin allowed besides http://localhost and http://127.0.0.1 (e.g. https://chatgpt.com); repeatable.
    #[arg(long = "allow-origin", value_name = "ORIGIN")]
    allow_origin: Vec<String>,
    /// A Host header value allowed besides the loopback names: a tunnel's or reverse proxy's host name; repeatable.
    #[arg(long = "allowed-host", value_name = "HOST")]
    allowed_host: Vec<String>,
    /// Requests per second allowed per token over HTTP, in bursts of up to twice that (0: no limit; else 0.01 to 100000).
    #[arg(long, default_value_t = DEFAULT_RATE, value_name = "N", value_parser = parse_rate, allow_negative_numbers = true)]
    rate: f64,
    /// Seconds an idle HTTP session lives (1 to 604800, a week).
    #[arg(long, default_value_t = DEFAULT_SESSION_IDLE_SECS, value_name = "SECONDS", value_parser = clap::value_parser!(u64).range(1..=MAX_SESSION_IDLE_S))]
    session_idle: u64,
    /// Seconds one HTTP request may run before it is cut off (1 to 86400, a day).
    #[arg(long, default_value_t = DEFAULT_REQUEST_TIMEOUT_SECS, value_name = "SECONDS", value_parser = clap::value_parser!(u64).range(1..=MAX_REQUEST_TIMEOUT_S))]
    request_timeout: u64,
    /// Open HTTP sessions allowed per token (1 to 10000); a client over the cap is told to end one (DELETE /mcp).
    #[arg(long, default_value_t = DEFAULT_SESSIONS_PER_TOKEN as u64, value_name = "N", value_parser = clap::value_parser!(u64).range(1..=10_000))]
    sessions_per_token: u64,
    /// The URL clients reach this server at, without /mcp (e.g. https://kb.example.com, a tunnel's or proxy's address): OAuth's issuer and resource are built from it, and its host is allowed as --allowed-host is (default: http:// and the bound address).
    #[arg(long, env = "KB_PUBLIC_URL", value_name = "URL")]
    public_url: Option<String>,
    /// Seconds an OAuth access token lives (1 to 86400; default an hour); clients refresh it with their refresh token (30 days, rotated at each use).
    #[arg(long, default_value_t = DEFAULT_ACCESS_TOKEN_LIFETIME_SECS, value_name = "SECONDS", value_parser = clap::value_parser!(u64).range(1..=86_400))]
    access_token_lifetime: u64,
    /// FOR TESTS ONLY: fetch Client ID Metadata Documents trusting this PEM certificate instead of the public roots, from loopback addresses too (no real client's document can then be fetched).
    #[arg(long, value_name = "CERT.pem", hide_short_help = true)]
    testing_cimd_trust: Option<PathBuf>,
    #[command(subcommand)]
    command: Option<Command>,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Manage the bearer tokens of the HTTP transport.
    Token {
        #[command(subcommand)]
        action: TokenAction,
    },
    /// Add this kb-mcp to a host's MCP configuration (merged into the file, a backup kept), or print the steps for hosts that keep none.
    Install {
        /// The host.
        #[arg(value_enum)]
        host: install::Host,
        /// The vault to serve (default: $KB_VAULT).
        #[arg(long, env = "KB_VAULT")]
        vault: PathBuf,
        /// The server's name in the host's list.
        #[arg(long, default_value = "kb")]
        name: String,
        /// What the host's agents may do: read (default), propose or apply.
        #[arg(long, value_parser = ["read", "propose", "apply"])]
        access: Option<String>,
        /// The configuration file to edit instead of the host's usual one (for Claude Code: a project's .mcp.json).
        #[arg(long, value_name = "FILE")]
        config: Option<PathBuf>,
        /// Print the change as a diff; write nothing.
        #[arg(long)]
        dry_run: bool,
    },
    /// The owner's passphrase, which the OAuth consent page asks for before granting a client access.
    Owner {
        #[command(subcommand)]
        action: OwnerAction,
    },
    /// The clients granted access by OAuth (ChatGPT, claude.ai, …): list them, revoke them.
    Clients {
        #[command(subcommand)]
        action: ClientsAction,
    },
}

fn main() -> ExitCode {
    if extract_pdf::asked() {
        return extract_pdf::run();
    }
    let cli = Cli::parse();
    match cli.command {
        Some(Command::Token { action }) => return token_command(action),
        Some(Command::Install { host, vault, name, access, config, dry_run }) => {
            let asked = install::Install { host, name, vault, access, config, dry_run };
            return match install::run(&asked, &mut std::io::stdout().lock()) {
                Ok(()) => ExitCode::SUCCESS,
                Err(message) => {
                    eprintln!("kb-mcp: {message}");
                    ExitCode::from(2)
                }
            };
        }
        Some(Command::Owner { action: OwnerAction::Set { tokens } }) => return owner_set(&tokens),
        Some(Command::Clients { action }) => return clients_command(action),
        None => {}
    }
    let vaults = match served_vaults(&cli) {
        Ok(vaults) => vaults,
        Err(message) => {
            eprintln!("kb-mcp: {message}");
            return ExitCode::from(2);
        }
    };
    let access = cli.access.as_deref().and_then(Access::parse).unwrap_or(Access::Read);
    let http = match &cli.http {
        Some(addr) => match http_options(&cli, addr, &vaults) {
            Ok(http) => Some(http),
            Err(message) => {
                eprintln!("kb-mcp: {message}");
                return ExitCode::from(2);
            }
        },
        None => None,
    };
    if http.is_none() && std::io::stdin().is_terminal() {
        eprintln!("{}", terminal_hint(&vaults[0].path, access));
    }
    set_debug_log(cli.log_level == "debug");
    let options = ServerOptions { vaults, access, pdf_extractor: extract_pdf::extractor() };
    let runtime = match tokio::runtime::Builder::new_multi_thread().enable_all().build() {
        Ok(runtime) => runtime,
        Err(error) => {
            eprintln!("kb-mcp: cannot start the async runtime: {error}");
            return ExitCode::from(1);
        }
    };
    let served = match http {
        Some(http) => runtime.block_on(serve_http(options, http)),
        None => runtime.block_on(serve_stdio(options)),
    };
    match served {
        Ok(()) => ExitCode::SUCCESS,
        Err(error) => {
            let hint = error.hint.map(|hint| format!("\nhint: {hint}")).unwrap_or_default();
            eprintln!("kb-mcp: {}{hint}", error.message);
            ExitCode::from(1)
        }
    }
}

/// The vaults to serve (see [`VaultSpec::resolve`]), each an existing folder,
/// named uniquely; the error is the message for a usage error (exit 2).
fn served_vaults(cli: &Cli) -> Result<Vec<VaultSpec>, String> {
    let home = std::env::var_os("HOME").filter(|home| !home.is_empty()).map(PathBuf::from);
    let file = match &cli.vaults {
        Some(path) => {
            let text = std::fs::read_to_string(path)
                .map_err(|error| format!("cannot read the vaults file {}: {error}", path.display()))?;
            let base = path.parent().map(Path::to_path_buf).unwrap_or_default();
            Some((text, base))
        }
        None => None,
    };
    let resolved = VaultSpec::resolve(
        &cli.vault,
        file.as_ref().map(|(text, base)| (text.as_str(), base.as_path())),
        home.as_deref(),
    )
    .map_err(|error| format!("{error}\nhint: see `kb-mcp --help` for --vault and --vaults"))?;
    let mut vaults = match resolved {
        Some(vaults) => vaults,
        None => {
            let current = std::env::current_dir().map_err(|error| {
                format!(
                    "cannot determine the current folder: {error}\nhint: pass --vault DIR or set KB_VAULT"
                )
            })?;
            let vault = kb_mcp::sandbox::current_folder_vault(&current, home.as_deref())
                .map_err(|error| format!("{}\nhint: {}", error.message, error.hint.unwrap_or_default()))?;
            vec![VaultSpec::named_after(vault)]
        }
    };
    if let Some(index_dir) = &cli.index_dir {
        match vaults.as_mut_slice() {
            [one] => one.index_dir = Some(index_dir.clone()),
            _ => {
                return Err(
                    "--index-dir names the index of one vault; with several, give each its index_dir \
                     in a --vaults file (or leave each at <vault>/.kb)"
                        .to_owned(),
                );
            }
        }
    }
    for vault in &vaults {
        if !vault.path.is_dir() {
            return Err(format!(
                "the vault folder {} does not exist or is not a folder\nhint: pass --vault DIR (or NAME=DIR) or set KB_VAULT to your notes folder",
                vault.path.display()
            ));
        }
    }
    // Compared as the real folders they are (a symlink or `..` can name one twice).
    let real: Vec<VaultSpec> = vaults
        .iter()
        .map(|vault| VaultSpec {
            path: kb_mcp::sandbox::canonical_or_same(&vault.path),
            index_dir: vault.index_dir.as_deref().map(kb_mcp::sandbox::canonical_or_same),
            ..vault.clone()
        })
        .collect();
    VaultSpec::check_all(&real)?;
    Ok(vaults)
}

/// Checks the HTTP flags; the error is the message for a usage error (exit 2).
fn http_options(cli: &Cli, addr: &str, vaults: &[VaultSpec]) -> Result<HttpOptions, String> {
    let addr = parse_addr(addr).ok_or_else(|| {
        format!("`{addr}` is not an address to listen on\nhint: use IP:PORT, e.g. --http 127.0.0.1:8765")
    })?;
    if !is_loopback(addr.ip()) && !cli.allow_remote {
        return Err(format!(
            "{addr} can be reached from other machines, so kb-mcp will not listen there by default\n\
             hint: listen on 127.0.0.1 (and reach it through a tunnel or a reverse proxy), or pass --allow-remote \
             to accept connections from the network (every request still needs a token)"
        ));
    }
    let Some(tokens) = cli.tokens.clone() else {
        return Err("--http needs --tokens FILE: every HTTP request needs a token; create one with \
                    `kb-mcp token add NAME --scope read --tokens FILE`"
            .to_owned());
    };
    match TokenFile::load(&tokens) {
        Ok(Some(file)) if file.tokens.is_empty() => eprintln!(
            "kb-mcp: warning: {} holds no tokens, so every request will be refused until you add one with `kb-mcp token add`",
            tokens.display()
        ),
        Ok(Some(_)) => {}
        Ok(None) => {
            return Err(format!(
                "there is no token file at {}: every HTTP request needs a token; create one with \
                 `kb-mcp token add NAME --scope read --tokens {}`",
                tokens.display(),
                tokens.display()
            ));
        }
        Err(error) => return Err(error.message),
    }
    if vaults.iter().any(|vault| inside(&tokens, &vault.path)) {
        eprintln!(
            "kb-mcp: warning: the token file {} is inside the vault; keep it outside (e.g. ~/.config/kb-mcp/tokens.json) \
             so that it is never synced, shared or indexed with your notes",
            tokens.display()
        );
    }
    if let Some(bad) = cli.allow_origin.iter().find(|o| !is_valid_origin_pattern(o)) {
        return Err(format!(
            "`{bad}` is not an origin\nhint: write scheme://host, scheme://host:port or scheme://host:* (any port), e.g. https://chatgpt.com"
        ));
    }
    if cli.access.is_some() {
        eprintln!("kb-mcp: warning: --access applies to stdio only; over HTTP each token's scope decides");
    }
    if addr.ip().is_unspecified() && cli.allowed_host.is_empty() {
        eprintln!(
            "kb-mcp: warning: listening on every interface, but only requests addressed to localhost or 127.0.0.1 \
             pass the Host check; add --allowed-host NAME for each name clients use to reach this machine"
        );
    }
    let public_url = match &cli.public_url {
        Some(text) => Some(check_public_url(text)?),
        None => None,
    };
    if public_url.is_none()
        && let Some(host) = cli.allowed_host.first()
    {
        eprintln!(
            "kb-mcp: warning: OAuth clients (ChatGPT, claude.ai) that reach this server as {host} need \
             --public-url https://{host}; without it the OAuth metadata names http://{addr}, which they cannot reach"
        );
    }
    let mut http = HttpOptions::new(addr, tokens);
    http.public_url = public_url;
    http.access_token_lifetime = Duration::from_secs(cli.access_token_lifetime);
    if let Some(path) = &cli.testing_cimd_trust {
        let pem =
            std::fs::read(path).map_err(|err| format!("--testing-cimd-trust {}: {err}", path.display()))?;
        eprintln!(
            "kb-mcp: warning: --testing-cimd-trust is for tests: client metadata documents are fetched trusting {} \
             alone, loopback addresses allowed, so no real client's document can be fetched",
            path.display()
        );
        http.testing_cimd_root = Some(pem);
    }
    http.allowed_origins = cli.allow_origin.clone();
    http.allowed_hosts = cli.allowed_host.clone();
    http.rate = cli.rate;
    http.session_idle = Duration::from_secs(cli.session_idle);
    http.request_timeout = Duration::from_secs(cli.request_timeout);
    http.sessions_per_token = usize::try_from(cli.sessions_per_token).unwrap_or(usize::MAX);
    Ok(http)
}

/// `--public-url`: an http(s) URL with a host and nothing after it but `/`; returned without the slash.
fn check_public_url(text: &str) -> Result<String, String> {
    let bad = |why: &str| {
        format!(
            "--public-url `{text}` {why}\nhint: write the address clients use, e.g. https://kb.example.com"
        )
    };
    let url = url::Url::parse(text).map_err(|err| bad(&format!("is not a URL ({err})")))?;
    if !matches!(url.scheme(), "http" | "https") || url.host_str().is_none() {
        return Err(bad("must start with https:// (or http://) and name a host"));
    }
    if url.path() != "/" || url.query().is_some() || url.fragment().is_some() || !url.username().is_empty() {
        return Err(bad("must be the server's base address alone (kb-mcp serves /mcp and /oauth under it)"));
    }
    if url.scheme() == "http" && !matches!(url.host_str(), Some("localhost" | "127.0.0.1" | "[::1]")) {
        eprintln!(
            "kb-mcp: warning: --public-url {text} is plain http: OAuth tokens would cross the network unencrypted"
        );
    }
    Ok(url.as_str().trim_end_matches('/').to_owned())
}

/// `IP:PORT`, `[IPv6]:PORT`, or `localhost:PORT`.
fn parse_addr(text: &str) -> Option<SocketAddr> {
    if let Ok(addr) = text.parse::<SocketAddr>() {
        return Some(addr);
    }
    let port = text.strip_prefix("localhost:")?.parse::<u16>().ok()?;
    Some(SocketAddr::new(IpAddr::V4(Ipv4Addr::LOCALHOST), port))
}

/// Whether `file` lies inside `folder` (comparing real paths where they exist).
fn inside(file: &Path, folder: &Path) -> bool {
    let folder = std::fs::canonicalize(folder).unwrap_or_else(|_| folder.to_owned());
    let absolute = std::path::absolute(file).unwrap_or_else(|_| file.to_owned());
    let file = std::fs::canonicalize(&absolute)
        .or_else(|_| {
            let parent = absolute.parent().unwrap_or(Path::new("."));
            std::fs::canonicalize(parent).map(|parent| parent.join(absolute.file_name().unwrap_or_default()))
        })
        .unwrap_or(absolute);
    file.starts_with(&folder)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The flags' defaults are the library's: one place to change them.
    #[test]
    fn http_flag_defaults_are_the_librarys() {
        let cli = Cli::parse_from(["kb-mcp"]);
        let defaults = HttpOptions::new("127.0.0.1:0".parse().unwrap(), PathBuf::from("tokens.json"));
        assert_eq!(cli.rate, defaults.rate);
        assert_eq!(Duration::from_secs(cli.session_idle), defaults.session_idle);
        assert_eq!(Duration::from_secs(cli.request_timeout), defaults.request_timeout);
        assert_eq!(cli.sessions_per_token as usize, defaults.sessions_per_token);
        assert_eq!(Duration::from_secs(cli.access_token_lifetime), defaults.access_token_lifetime);
        assert_eq!(
            (cli.rate, cli.session_idle, cli.request_timeout, cli.sessions_per_token),
            (20.0, 1800, 120, 32)
        );
    }
}

/// What a person who started the server in a terminal reads: it waits for an
/// MCP client, and the lines that configure one, with absolute paths (GUI apps
/// often lack `~/.cargo/bin` on their PATH, and a relative vault means nothing
/// to them).
fn terminal_hint(vault: &Path, access: Access) -> String {
    let absolute = |path: &Path| -> String {
        let path = kb_mcp::sandbox::canonical_or_same(path).display().to_string();
        // Windows' canonical form `\\?\C:\…` is not what a person writes in a config.
        path.strip_prefix(r"\\?\").map(str::to_owned).unwrap_or(path)
    };
    let command = std::env::current_exe().map_or_else(|_| "kb-mcp".to_owned(), |exe| absolute(&exe));
    let vault = absolute(vault);
    let desktop =
        serde_json::json!({ "mcpServers": { "kb": { "command": command, "args": ["--vault", vault] } } });
    format!(
        "kb-mcp {} serves {vault} over MCP on stdin/stdout (access: {}).\n\
         It is meant to be started by an MCP client, not typed at. For example, in Claude Desktop's\n\
         claude_desktop_config.json:\n  {desktop}\n\
         or for Claude Code:\n  claude mcp add --scope user kb -- \"{command}\" --vault \"{vault}\"\n\
         See README.md for Cursor, Codex and others. Waiting for JSON-RPC on stdin (Ctrl-D to quit).",
        env!("CARGO_PKG_VERSION"),
        access.as_str(),
    )
}

#[cfg(test)]
mod hint_tests {
    use super::*;

    #[test]
    fn the_terminal_hint_names_absolute_paths_a_gui_app_can_use() {
        let relative = Path::new("fixtures/vault");
        let hint = terminal_hint(relative, Access::Read);
        let config = hint.lines().find(|line| line.trim_start().starts_with('{')).expect("a config line");
        let config: serde_json::Value = serde_json::from_str(config.trim()).expect("valid JSON");
        let server = &config["mcpServers"]["kb"];
        let command = server["command"].as_str().unwrap();
        let vault = server["args"][1].as_str().unwrap();
        assert!(Path::new(command).is_absolute(), "{command}");
        assert!(Path::new(vault).is_absolute() && vault.ends_with("vault"), "{vault}");
        assert!(
            hint.contains(&format!("claude mcp add --scope user kb -- \"{command}\" --vault \"{vault}\"")),
            "{hint}"
        );
        assert!(hint.contains("(access: read)"), "{hint}");
    }
}
