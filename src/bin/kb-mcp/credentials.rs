//! `kb-mcp token`, `kb-mcp owner` and `kb-mcp clients`: the keeper of the
//! HTTP server's credentials. Tokens are stored as salted hashes in the token
//! file (a new one is printed once, as the last line of stdout); the owner's
//! passphrase, which consent to OAuth clients needs, as an Argon2id hash in the
//! OAuth state file beside it, where the registered clients are listed and
//! revoked. A running server picks up every change without a restart.

use std::io::{IsTerminal, Write};
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use clap::Subcommand;
use kb_mcp::engine::types::Access;
use kb_mcp::server::{OAuthFile, Scope, TokenFile, TokenLimits, oauth_state_path};

#[derive(Debug, Subcommand)]
pub(crate) enum OwnerAction {
    /// Set (or change) the passphrase: read from stdin (typed twice, unechoed, on a terminal); at least 12 characters; stored as an Argon2id hash in the OAuth state file beside the token file.
    Set {
        /// The token file the server is started with (the OAuth state lives beside it, NAME.oauth.json).
        #[arg(long, env = "KB_TOKENS", value_name = "FILE")]
        tokens: PathBuf,
    },
}

#[derive(Debug, Subcommand)]
pub(crate) enum ClientsAction {
    /// List registered clients: name, client id, registration time and the access granted.
    List {
        /// The token file (the OAuth state lives beside it).
        #[arg(long, env = "KB_TOKENS", value_name = "FILE")]
        tokens: PathBuf,
    },
    /// Revoke a client by name or client id: its tokens stop working at its next request and its sessions close.
    Revoke {
        /// The client's name (every client of that name) or client id.
        name: String,
        /// The token file (the OAuth state lives beside it).
        #[arg(long, env = "KB_TOKENS", value_name = "FILE")]
        tokens: PathBuf,
    },
}

#[derive(Debug, Subcommand)]
pub(crate) enum TokenAction {
    /// Create a token; prints it once, as the last line of stdout, and stores only its salted hash.
    Add {
        /// A name for the token (letters, digits, `.`, `_`, `-`), e.g. the client or device using it.
        name: String,
        /// What the token may do: read, propose (stage proposals) or apply (also apply them); metrics reads GET /metrics only.
        #[arg(long, value_parser = ["read", "propose", "apply", "metrics"])]
        scope: String,
        /// This token's own requests per second (bursts of twice that), in place of the server's --rate; 0: no limit.
        #[arg(long, value_name = "N")]
        rate: Option<f64>,
        /// Seconds one of this token's requests may run, in place of the server's --request-timeout (1 to 86400).
        #[arg(long, value_name = "SECS")]
        request_timeout: Option<u64>,
        /// A vault this token may use, by the name the server gives it (--vault NAME=DIR); repeatable. Without it, every vault the server serves.
        #[arg(long = "vault", value_name = "NAME")]
        vaults: Vec<String>,
        /// The token file (created with owner-only permissions when missing).
        #[arg(long, env = "KB_TOKENS", value_name = "FILE")]
        tokens: PathBuf,
    },
    /// List the tokens: name, scope and creation time (never the tokens or their hashes).
    List {
        /// The token file.
        #[arg(long, env = "KB_TOKENS", value_name = "FILE")]
        tokens: PathBuf,
    },
    /// Revoke a token by name; a running server stops admitting it, and closes its sessions, within a second.
    Revoke {
        /// The token's name.
        name: String,
        /// The token file.
        #[arg(long, env = "KB_TOKENS", value_name = "FILE")]
        tokens: PathBuf,
    },
}

/// Reads the passphrase (twice, without echo, on a terminal) and stores its hash.
pub(crate) fn owner_set(tokens: &Path) -> ExitCode {
    let path = oauth_state_path(tokens);
    if let Err(error) = OAuthFile::load(&path) {
        eprintln!("kb-mcp: {}", error.message);
        return ExitCode::from(2);
    }
    let terminal = std::io::stdin().is_terminal();
    let read = |prompt: &str| -> Option<String> {
        if terminal {
            eprint!("{prompt}");
            let _ = std::io::stderr().flush();
            let _ = std::process::Command::new("stty").arg("-echo").status();
        }
        let mut line = String::new();
        let got = std::io::stdin().read_line(&mut line);
        if terminal {
            let _ = std::process::Command::new("stty").arg("echo").status();
            eprintln!();
        }
        got.ok().filter(|n| *n > 0).map(|_| line.trim_end_matches(['\r', '\n']).to_owned())
    };
    let Some(passphrase) = read("Owner passphrase (at least 12 characters): ") else {
        eprintln!("kb-mcp: no passphrase given on stdin");
        return ExitCode::from(2);
    };
    if terminal && read("Again: ").as_deref() != Some(passphrase.as_str()) {
        eprintln!("kb-mcp: the two passphrases differ; nothing was changed");
        return ExitCode::from(2);
    }
    let set = OAuthFile::update(&path, |file| file.set_owner_passphrase(&passphrase).map(|()| ((), true)));
    if let Err(error) = set {
        let hint = error.hint.map(|h| format!("\nhint: {h}")).unwrap_or_default();
        eprintln!("kb-mcp: {}{hint}", error.message);
        return ExitCode::from(if error.code == kb_mcp::error::ErrorCode::InvalidArgument { 2 } else { 1 });
    }
    let _ = writeln!(
        std::io::stdout(),
        "Set the owner passphrase in {}; the consent page asks for it before granting any client access.",
        path.display()
    );
    ExitCode::SUCCESS
}

pub(crate) fn clients_command(action: ClientsAction) -> ExitCode {
    let tokens = match &action {
        ClientsAction::List { tokens } | ClientsAction::Revoke { tokens, .. } => tokens,
    };
    let path = oauth_state_path(tokens);
    let file = match OAuthFile::load(&path) {
        Ok(file) => file,
        Err(error) => {
            eprintln!("kb-mcp: {}", error.message);
            return ExitCode::from(2);
        }
    };
    let mut out = std::io::stdout().lock();
    match action {
        ClientsAction::List { .. } => {
            let clients = file.clients();
            if clients.is_empty() {
                eprintln!("kb-mcp: no OAuth client has registered in {}", path.display());
                return ExitCode::from(1);
            }
            let width = clients.iter().map(|c| c.name.chars().count()).max().unwrap_or(4).max(4);
            let _ = writeln!(out, "{:<width$}  {:<28}  {:<25}  GRANTED", "NAME", "CLIENT ID", "REGISTERED");
            for client in clients {
                let granted = if client.scopes.is_empty() {
                    "nothing".to_owned()
                } else {
                    client.scopes.iter().map(|s| s.as_str()).collect::<Vec<_>>().join(", ")
                };
                let _ = writeln!(
                    out,
                    "{:<width$}  {:<28}  {:<25}  {granted}",
                    client.name, client.client_id, client.registered
                );
            }
            ExitCode::SUCCESS
        }
        ClientsAction::Revoke { name, .. } => {
            let removed = match OAuthFile::update(&path, |file| {
                let removed = file.revoke_client(&name);
                Ok((removed, removed > 0))
            }) {
                Ok(removed) => removed,
                Err(error) => {
                    eprintln!("kb-mcp: cannot change {}: {}", path.display(), error.message);
                    return ExitCode::from(1);
                }
            };
            if removed == 0 {
                eprintln!(
                    "kb-mcp: no OAuth client is named `{name}` in {}\nhint: `kb-mcp clients list` shows them",
                    path.display()
                );
                return ExitCode::from(1);
            }
            let _ = writeln!(
                out,
                "Revoked {removed} client(s) named `{name}`; a running server refuses their tokens from the next request."
            );
            ExitCode::SUCCESS
        }
    }
}

pub(crate) fn token_command(action: TokenAction) -> ExitCode {
    let path = match &action {
        TokenAction::Add { tokens, .. }
        | TokenAction::List { tokens }
        | TokenAction::Revoke { tokens, .. } => tokens.clone(),
    };
    let loaded = match TokenFile::load(&path) {
        Ok(loaded) => loaded,
        Err(error) => {
            eprintln!("kb-mcp: {}", error.message);
            return ExitCode::from(2);
        }
    };
    let mut out = std::io::stdout().lock();
    match action {
        TokenAction::Add { name, scope, rate, request_timeout, vaults, .. } => {
            let scope = Scope::parse(&scope).unwrap_or(Scope::Tools(Access::Read));
            let limits = TokenLimits { rate, request_timeout_s: request_timeout };
            let mut file = loaded.unwrap_or_default();
            let token = match file.add_for_vaults(&name, scope, limits, &vaults) {
                Ok(token) => token,
                Err(error) => {
                    let hint = error.hint.as_deref().map(|h| format!("\nhint: {h}")).unwrap_or_default();
                    eprintln!("kb-mcp: {}{hint}", error.message);
                    // A name already taken or malformed is bad input: exit 2, as the README says.
                    return ExitCode::from(2);
                }
            };
            if let Err(error) = file.save(&path) {
                eprintln!("kb-mcp: cannot write {}: {error}", path.display());
                return ExitCode::from(1);
            }
            let only =
                if vaults.is_empty() { String::new() } else { format!(", vaults: {}", vaults.join(", ")) };
            let _ = writeln!(
                out,
                "Created token `{name}` (scope: {}{only}) in {}.\n\
                 It is shown only this once: copy it now into your client's `Authorization: Bearer` setting.",
                scope.as_str(),
                path.display()
            );
            let _ = writeln!(out, "{token}");
            ExitCode::SUCCESS
        }
        TokenAction::List { .. } => {
            let Some(file) = loaded else {
                eprintln!(
                    "kb-mcp: there is no token file at {}\nhint: create a token with `kb-mcp token add NAME --scope read --tokens {}`",
                    path.display(),
                    path.display()
                );
                return ExitCode::from(1);
            };
            if file.tokens.is_empty() {
                eprintln!("kb-mcp: {} holds no tokens", path.display());
                return ExitCode::from(1);
            }
            let width = file.tokens.iter().map(|t| t.name.len()).max().unwrap_or(4).max(4);
            let _ = writeln!(out, "{:<width$}  {:<7}  {:<25}  LIMITS", "NAME", "SCOPE", "CREATED");
            for token in &file.tokens {
                let mut limits = Vec::new();
                if let Some(rate) = token.rate {
                    limits.push(if rate == 0.0 { "no rate limit".to_owned() } else { format!("{rate}/s") });
                }
                if let Some(timeout) = token.request_timeout_s {
                    limits.push(format!("{timeout} s per request"));
                }
                if let Some(vaults) = &token.vaults {
                    limits.push(format!("vaults {}", vaults.join(", ")));
                }
                let limits = if limits.is_empty() { "the server's".to_owned() } else { limits.join(", ") };
                let _ = writeln!(
                    out,
                    "{:<width$}  {:<7}  {:<25}  {limits}",
                    token.name, token.scope, token.created
                );
            }
            ExitCode::SUCCESS
        }
        TokenAction::Revoke { name, .. } => {
            let mut file = loaded.unwrap_or_default();
            if !file.revoke(&name) {
                eprintln!("kb-mcp: there is no token named `{name}` in {}", path.display());
                return ExitCode::from(1);
            }
            if let Err(error) = file.save(&path) {
                eprintln!("kb-mcp: cannot write {}: {error}", path.display());
                return ExitCode::from(1);
            }
            let _ = writeln!(out, "Revoked token `{name}`; a running server refuses it from now on.");
            ExitCode::SUCCESS
        }
    }
}
