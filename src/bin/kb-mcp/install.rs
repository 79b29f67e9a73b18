//! `kb-mcp install HOST`: the host's configuration entry for this kb-mcp.
//!
//! Hosts that keep their MCP servers in a file (Claude Desktop, Cursor and VS
//! Code in JSON, Codex in TOML) get one entry, under the name given (`kb` by
//! default), merged into what is there: every other server, setting and
//! comment stays as written (the file is edited as a syntax tree, not
//! re-serialised), an entry of the same name is replaced, and the file it
//! replaces is kept beside it as `<name>.kb-mcp-backup`. `--dry-run` prints
//! the change as a diff and writes nothing. Hosts that keep no file of ours
//! (Claude Code's own command, ChatGPT, claude.ai and the phone apps) get
//! the steps to take instead.

use std::io::Write;
use std::path::PathBuf;

use clap::ValueEnum;
use jsonc_parser::ParseOptions;
use jsonc_parser::cst::{CstInputValue, CstRootNode};
use kb_mcp::sandbox::{read_user_file, replace_user_file};
use kb_mcp::write::unified_diff;

/// A host kb-mcp can be installed in.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub(crate) enum Host {
    /// Claude Desktop (claude_desktop_config.json).
    ClaudeDesktop,
    /// Claude Code (prints its `claude mcp add` command; with --config, writes a project .mcp.json).
    ClaudeCode,
    /// Cursor (~/.cursor/mcp.json).
    Cursor,
    /// VS Code (the user mcp.json).
    Vscode,
    /// OpenAI Codex (~/.codex/config.toml).
    Codex,
    /// ChatGPT (a remote server: prints the steps).
    Chatgpt,
    /// Claude on the web and the phone apps (a remote server: prints the steps).
    ClaudeAi,
}

/// How a host's file lists its servers.
enum Format {
    /// JSON (comments allowed), servers under this key, each `{command, args}`
    /// plus `"type": "stdio"` when `typed`.
    Json { key: &'static str, typed: bool },
    /// Codex's TOML: `[mcp_servers.<name>]` with `command` and `args`.
    Toml,
}

/// What `kb-mcp install` was asked.
pub(crate) struct Install {
    pub(crate) host: Host,
    pub(crate) name: String,
    pub(crate) vault: PathBuf,
    pub(crate) access: Option<String>,
    pub(crate) config: Option<PathBuf>,
    pub(crate) dry_run: bool,
}

/// An environment variable as a path, when set and not empty.
fn env_path(name: &str) -> Option<PathBuf> {
    std::env::var_os(name).filter(|value| !value.is_empty()).map(PathBuf::from)
}

fn home() -> Option<PathBuf> {
    env_path("HOME").or_else(|| env_path("USERPROFILE"))
}

/// Where per-user application settings live: `%APPDATA%` on Windows,
/// `~/Library/Application Support` on macOS, `$XDG_CONFIG_HOME` or `~/.config` elsewhere.
fn app_settings() -> Option<PathBuf> {
    if cfg!(windows) {
        env_path("APPDATA")
    } else if cfg!(target_os = "macos") {
        home().map(|home| home.join("Library").join("Application Support"))
    } else {
        env_path("XDG_CONFIG_HOME").or_else(|| home().map(|home| home.join(".config")))
    }
}

impl Host {
    /// The host's configuration file and its format; `None` for hosts without one.
    fn file(self) -> Option<(Option<PathBuf>, Format)> {
        let mcp_servers = Format::Json { key: "mcpServers", typed: false };
        match self {
            Host::ClaudeDesktop => Some((
                app_settings().map(|dir| dir.join("Claude").join("claude_desktop_config.json")),
                mcp_servers,
            )),
            Host::Cursor => Some((home().map(|home| home.join(".cursor").join("mcp.json")), mcp_servers)),
            Host::Vscode => Some((
                app_settings().map(|dir| dir.join("Code").join("User").join("mcp.json")),
                Format::Json { key: "servers", typed: true },
            )),
            Host::Codex => Some((
                env_path("CODEX_HOME")
                    .or_else(|| home().map(|home| home.join(".codex")))
                    .map(|dir| dir.join("config.toml")),
                Format::Toml,
            )),
            // Only with --config: a project's .mcp.json.
            Host::ClaudeCode => Some((None, mcp_servers)),
            Host::Chatgpt | Host::ClaudeAi => None,
        }
    }

    fn shown(self) -> &'static str {
        match self {
            Host::ClaudeDesktop => "Claude Desktop",
            Host::ClaudeCode => "Claude Code",
            Host::Cursor => "Cursor",
            Host::Vscode => "VS Code",
            Host::Codex => "Codex",
            Host::Chatgpt => "ChatGPT",
            Host::ClaudeAi => "claude.ai",
        }
    }
}

/// Runs `kb-mcp install`; the error is the message to print (exit 2 for bad
/// input, as every other command).
pub(crate) fn run(install: &Install, out: &mut dyn Write) -> Result<(), String> {
    check_name(&install.name)?;
    let vault = std::fs::canonicalize(&install.vault)
        .map_err(|err| format!("the vault {} cannot be used: {err}", install.vault.display()))?;
    let binary = std::env::current_exe()
        .and_then(std::fs::canonicalize)
        .map_err(|err| format!("cannot tell where this kb-mcp is: {err}"))?;
    let mut args = vec!["--vault".to_owned(), vault.to_string_lossy().into_owned()];
    if let Some(access) = install.access.as_deref().filter(|access| *access != "read") {
        args.extend(["--access".to_owned(), access.to_owned()]);
    }
    let command = binary.to_string_lossy().into_owned();
    let host = install.host;
    let Some((default_file, format)) = host.file() else {
        return remote_steps(host, out).map_err(|err| err.to_string());
    };
    let file = match (install.config.clone(), default_file, host) {
        (Some(file), _, _) => file,
        (None, _, Host::ClaudeCode) => return claude_code_command(&install.name, &command, &args, out),
        (None, Some(file), _) => file,
        (None, None, _) => {
            return Err(format!(
                "cannot tell where {}'s configuration is (no HOME or APPDATA); pass --config FILE",
                host.shown()
            ));
        }
    };
    let before = read_user_file(&file).map_err(|err| err.message)?;
    let text = before.clone().unwrap_or_default();
    let after = match format {
        Format::Json { key, typed } => merge_json(&text, key, &install.name, typed, &command, &args),
        Format::Toml => merge_toml(&text, &install.name, &command, &args),
    }
    .map_err(|why| {
        format!("{} cannot be edited: {why}; fix it or pass --config with another file", file.display())
    })?;
    let shown = file.display();
    if before.as_deref() == Some(after.as_str()) {
        writeln!(out, "{shown} already has the server `{}` exactly so; nothing to do.", install.name)
            .map_err(|err| err.to_string())?;
        return Ok(());
    }
    if install.dry_run {
        let (diff, _, _) = unified_diff(shown.to_string().trim_start_matches('/'), &text, &after);
        write!(out, "{diff}").map_err(|err| err.to_string())?;
        writeln!(out, "dry run: {shown} was not changed").map_err(|err| err.to_string())?;
        return Ok(());
    }
    let backup = replace_user_file(&file, after.as_bytes()).map_err(|err| err.message)?;
    let kept = backup
        .map(|backup| format!(" (the file before is kept as {})", backup.display()))
        .unwrap_or_default();
    writeln!(
        out,
        "Added the server `{}` to {shown}{kept}.\nRestart {} (or reload its MCP servers) to start using your vault {}.",
        install.name,
        host.shown(),
        vault.display()
    )
    .map_err(|err| err.to_string())
}

/// A server name: 1 to 64 of `A-Z a-z 0-9 . _ -`.
fn check_name(name: &str) -> Result<(), String> {
    if kb_mcp::server::is_plain_name(name) {
        Ok(())
    } else {
        Err(format!("`{name}` is not a valid server name: use 1 to 64 letters, digits, `.`, `_` or `-`"))
    }
}

/// The host's entry for this server.
fn json_entry(typed: bool, command: &str, args: &[String]) -> CstInputValue {
    let mut fields = Vec::new();
    if typed {
        fields.push(("type".to_owned(), CstInputValue::from("stdio")));
    }
    fields.push(("command".to_owned(), CstInputValue::from(command)));
    fields.push(("args".to_owned(), CstInputValue::from(args.to_vec())));
    CstInputValue::Object(fields)
}

/// `text` (JSON with comments, or empty) with the server `name` set under `key`.
fn merge_json(
    text: &str,
    key: &str,
    name: &str,
    typed: bool,
    command: &str,
    args: &[String],
) -> Result<String, String> {
    let source = if text.trim().is_empty() { "{}\n" } else { text };
    let root = CstRootNode::parse(source, &ParseOptions::default()).map_err(|err| err.to_string())?;
    if root.value().is_some_and(|value| value.as_object().is_none()) {
        return Err("its top level is not an object".to_owned());
    }
    let top = root.object_value_or_set();
    if let Some(servers) = top.get(key)
        && servers.value().is_some_and(|value| value.as_object().is_none())
    {
        return Err(format!("its `{key}` is not an object"));
    }
    let servers = top.object_value_or_set(key);
    let entry = json_entry(typed, command, args);
    match servers.get(name) {
        Some(existing) => existing.set_value(entry),
        None => {
            servers.append(name, entry);
        }
    }
    let mut merged = root.to_string();
    if !merged.ends_with('\n') {
        merged.push('\n');
    }
    Ok(merged)
}

/// Codex's `config.toml` (or empty) with `[mcp_servers.<name>]` set.
fn merge_toml(text: &str, name: &str, command: &str, args: &[String]) -> Result<String, String> {
    use toml_edit::{Array, DocumentMut, Item, Table, value};
    let mut doc: DocumentMut = text.parse().map_err(|err: toml_edit::TomlError| err.to_string())?;
    let servers = doc.entry("mcp_servers").or_insert_with(|| {
        let mut table = Table::new();
        table.set_implicit(true);
        Item::Table(table)
    });
    let Some(servers) = servers.as_table_like_mut() else {
        return Err("its `mcp_servers` is not a table".to_owned());
    };
    let mut entry = Table::new();
    entry.insert("command", value(command));
    entry.insert("args", value(args.iter().map(String::as_str).collect::<Array>()));
    servers.insert(name, Item::Table(entry));
    Ok(doc.to_string())
}

/// Claude Code adds servers with its own command: print it.
fn claude_code_command(
    name: &str,
    command: &str,
    args: &[String],
    out: &mut dyn Write,
) -> Result<(), String> {
    let quoted: Vec<String> =
        std::iter::once(command).chain(args.iter().map(String::as_str)).map(shell_quote).collect();
    writeln!(
        out,
        "Claude Code keeps its servers itself; run:\n\n  claude mcp add --scope user {name} -- {}\n\n\
         (or pass --config .mcp.json to write a project's shared .mcp.json instead)",
        quoted.join(" ")
    )
    .map_err(|err| err.to_string())
}

/// A word as a POSIX shell reads it back.
fn shell_quote(word: &str) -> String {
    let plain =
        !word.is_empty() && word.bytes().all(|b| b.is_ascii_alphanumeric() || b"/._-=:,+@%".contains(&b));
    if plain { word.to_owned() } else { format!("'{}'", word.replace('\'', "'\\''")) }
}

/// The steps for hosts that reach kb-mcp over the network, by OAuth.
fn remote_steps(host: Host, out: &mut dyn Write) -> std::io::Result<()> {
    let add = match host {
        Host::Chatgpt => {
            "In ChatGPT: Settings → Apps & Connectors → Create, URL https://<name>.trycloudflare.com/mcp, \
                          authentication OAuth."
        }
        _ => {
            "On claude.ai: Settings → Connectors → Add custom connector, URL https://<name>.trycloudflare.com/mcp \
              (the phone apps use the connectors of your account)."
        }
    };
    writeln!(
        out,
        "{} reaches kb-mcp over the network by OAuth, not through a file on this machine:\n\n\
         1. Set the passphrase the consent page asks for:  kb-mcp owner set --tokens ~/.config/kb-mcp/tokens.json\n\
         2. Give the server a public HTTPS address, e.g. a tunnel you run:  cloudflared tunnel --url http://127.0.0.1:8765\n\
         3. Serve the vault:  kb-mcp --http 127.0.0.1:8765 --tokens ~/.config/kb-mcp/tokens.json --vault <your vault> \\\n   \
            --public-url https://<name>.trycloudflare.com\n\
         4. {add}\n\
         5. On kb-mcp's consent page, choose the access, type the passphrase and allow.\n\n\
         The README's \"Running remotely\" section has the details and what protects the vault.",
        host.shown(),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn json_keeps_comments_and_other_servers_and_replaces_its_own() {
        let before =
            "{\n  // mine\n  \"servers\": {\n    \"other\": {\"command\": \"x\"},\n  },\n  \"theme\": 1\n}\n";
        let args = vec!["--vault".to_owned(), "/v".to_owned()];
        let once = merge_json(before, "servers", "kb", true, "/bin/kb-mcp", &args).unwrap();
        assert!(
            once.contains("// mine") && once.contains("\"other\"") && once.contains("\"theme\": 1"),
            "{once}"
        );
        assert!(once.contains("\"type\": \"stdio\""), "{once}");
        let twice = merge_json(&once, "servers", "kb", true, "/bin/kb-mcp", &args).unwrap();
        assert_eq!(once, twice, "installing twice changes nothing");
        let moved =
            merge_json(&once, "servers", "kb", true, "/bin/kb-mcp", &["--vault".to_owned(), "/w".to_owned()]);
        assert_eq!(moved.unwrap().matches("\"kb\"").count(), 1, "the entry is replaced, not added again");
        assert!(merge_json("[1]", "servers", "kb", true, "c", &args).is_err());
        assert!(merge_json("{\"servers\": 3}", "servers", "kb", true, "c", &args).is_err());
        assert!(merge_json("{ broken", "servers", "kb", true, "c", &args).is_err());
    }

    #[test]
    fn toml_keeps_the_rest_and_spells_windows_paths_so_they_parse() {
        let before = "# my settings\nmodel = \"o3\"\n\n[mcp_servers.other]\ncommand = \"x\"\n";
        let command = r"C:\Users\Me\.cargo\bin\kb-mcp.exe";
        let args = vec!["--vault".to_owned(), r"D:\Notes\我的库".to_owned()];
        let after = merge_toml(before, "kb", command, &args).unwrap();
        assert!(after.starts_with("# my settings\nmodel = \"o3\""), "{after}");
        let parsed: toml_edit::DocumentMut = after.parse().unwrap();
        assert_eq!(parsed["mcp_servers"]["kb"]["command"].as_str(), Some(command));
        assert_eq!(parsed["mcp_servers"]["kb"]["args"][1].as_str(), Some(r"D:\Notes\我的库"));
        assert_eq!(parsed["mcp_servers"]["other"]["command"].as_str(), Some("x"));
        assert_eq!(merge_toml(&after, "kb", command, &args).unwrap(), after);
        assert!(merge_toml("mcp_servers = 1\n", "kb", command, &args).is_err());
    }

    #[test]
    fn names_and_shell_words_are_checked_and_quoted() {
        assert!(check_name("kb").is_ok() && check_name("bad name").is_err() && check_name("").is_err());
        assert_eq!(shell_quote("/usr/bin/kb-mcp"), "/usr/bin/kb-mcp");
        assert_eq!(shell_quote("/Users/me/My Notes"), "'/Users/me/My Notes'");
        assert_eq!(shell_quote("it's"), "'it'\\''s'");
    }
}
