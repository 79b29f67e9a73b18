//! `kb.toml`: the optional vault configuration.
//!
//! The file is small and security-relevant (it decides which folders an agent may
//! read and where proposals may land), so it is read strictly: an unknown key, a
//! wrong type or an unsafe folder is an `invalid_argument` error that names the key
//! and says what was expected, never a silently ignored line. Folders are checked
//! with the same lexical rules as every other path ([`NotePath::parse`]) and against
//! the built-in hard-deny list, which no configuration can open.

use toml::{Table, Value};

use crate::error::{Error, Result};
use crate::sandbox::{NotePath, Policy};

/// Size limits from `[limits]`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limits {
    /// Largest page `read_note` returns in one call, in bytes (default 262144): the
    /// most an agent may ask for with `max_bytes`.
    pub read_max_bytes: u64,
    /// The page `read_note` returns when the agent does not say (`max_bytes`), in
    /// bytes (default 65536); never more than `read_max_bytes`.
    pub read_page_bytes: u64,
    /// Largest proposal, in bytes (default 2097152).
    pub proposal_max_bytes: u64,
    /// Most proposals pending at once (default 100).
    pub pending_max_count: u64,
    /// Most bytes pending proposals may hold in the inbox (default 128 MiB).
    pub pending_max_bytes: u64,
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            read_max_bytes: 262_144,
            read_page_bytes: 65_536,
            proposal_max_bytes: 2_097_152,
            pending_max_count: 100,
            pending_max_bytes: 128 << 20,
        }
    }
}

/// The parsed configuration.
#[derive(Debug, Clone, PartialEq)]
pub struct VaultConfig {
    /// Folders and deny rules.
    pub policy: Policy,
    /// The tag registry note (`[tags] registry`), if any.
    pub tag_registry: Option<String>,
    /// Size limits.
    pub limits: Limits,
    /// Frontmatter rules (`[lint]`), checked by `audit_vault`.
    pub lint: super::lint::LintRules,
    /// The semantic layer (`[semantic]`).
    pub semantic: SemanticConfig,
    /// `[history] enabled` (default true): false records no history (what
    /// was recorded stays readable).
    pub history: bool,
    /// `[replica]`: the vault is a git clone kept in agreement with a remote
    /// (issue 38); `None` when the section is absent.
    pub replica: Option<ReplicaConfig>,
    /// `[memory]`: the agent's own memory (its folder is the policy's `memory`).
    pub memory: MemoryConfig,
}

/// `[memory]`: whether agents may keep entries in the memory folder, and
/// which principals share what they remember about the person.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MemoryConfig {
    /// `enabled` (default true): false refuses `remember` and leaves the
    /// memory out of searches and recall (the folder stays apart from the notes).
    pub enabled: bool,
    /// `share_person`: principals (HTTP token names, `local` for stdio and the
    /// CLI) that keep one memory of the person together; every other keeps its own.
    pub share_person: Vec<String>,
}

impl Default for MemoryConfig {
    fn default() -> Self {
        MemoryConfig { enabled: true, share_person: Vec::new() }
    }
}

/// `[replica]`: which remote and branch a clone agrees with, and how often
/// it fetches.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ReplicaConfig {
    /// `remote`: a remote of the clone (`origin`) or a repository's path.
    pub remote: String,
    /// `branch` (default: the branch checked out).
    pub branch: Option<String>,
    /// `interval`: seconds between fetches (default 60; a number, or a
    /// string such as `"30s"`, `"5m"`).
    pub interval_secs: u64,
}

/// `[semantic]`: whether searches also rank by meaning, and with which model
/// beside the bundled English one.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SemanticConfig {
    /// `enabled` (default true): false keeps every search lexical and embeds nothing.
    pub enabled: bool,
    /// `model`: a model2vec model folder of the person's own (absolute, `~/…`,
    /// or relative to the vault folder).
    pub model: Option<String>,
    /// `languages`: the languages that model reads (codes such as `zh`);
    /// empty: every language.
    pub languages: Vec<String>,
}

impl Default for SemanticConfig {
    fn default() -> Self {
        SemanticConfig { enabled: true, model: None, languages: Vec::new() }
    }
}

impl Default for VaultConfig {
    fn default() -> Self {
        VaultConfig {
            policy: Policy::default(),
            tag_registry: None,
            limits: Limits::default(),
            lint: super::lint::LintRules::default(),
            semantic: SemanticConfig::default(),
            history: true,
            replica: None,
            memory: MemoryConfig::default(),
        }
    }
}

impl VaultConfig {
    /// Parses `kb.toml` text. `invalid_argument` naming the bad key for unknown keys,
    /// wrong types or unsafe folder names; `None` text gives the defaults.
    pub fn parse(text: Option<&str>) -> Result<VaultConfig> {
        let mut config = VaultConfig::default();
        let Some(text) = text else { return Ok(config) };
        let table: Table = toml::from_str(text).map_err(|err| syntax_error(text, &err))?;
        for (section, value) in &table {
            if section == "lint" {
                config.lint = super::lint::LintRules::parse(value)?;
                continue;
            }
            let Some(&(_, keys)) = SECTIONS.iter().find(|(name, _)| name == section) else {
                let names = SECTIONS.iter().map(|(name, _)| *name).chain(["lint"]);
                return Err(unknown(&format!("section `[{section}]`"), suggest(section, names)));
            };
            let Value::Table(entries) = value else {
                return Err(invalid(format!(
                    "`{section}` must be a table (a `[{section}]` section), found {}",
                    article(value)
                )));
            };
            for (key, value) in entries {
                let name = format!("{section}.{key}");
                if !keys.contains(&key.as_str()) {
                    return Err(unknown(&format!("key `{name}`"), suggest_key(section, key)));
                }
                match name.as_str() {
                    "vault.notes" => config.policy.notes = folders(&name, value, true)?,
                    "vault.standards" => config.policy.standards = folders(&name, value, false)?,
                    "vault.read_also" => config.policy.read_also = folders(&name, value, false)?,
                    "vault.inbox" => config.policy.inbox = folder(&name, string(&name, value)?, false)?,
                    "vault.deny" => config.policy.deny = deny_rules(&name, value)?,
                    "tags.registry" => config.tag_registry = Some(registry(&name, value)?),
                    "limits.read_max_bytes" => config.limits.read_max_bytes = limit(&name, value)?,
                    "limits.read_page_bytes" => config.limits.read_page_bytes = limit(&name, value)?,
                    "limits.pending_max_count" => config.limits.pending_max_count = limit(&name, value)?,
                    "limits.pending_max_bytes" => config.limits.pending_max_bytes = limit(&name, value)?,
                    "semantic.enabled" => config.semantic.enabled = boolean(&name, value)?,
                    "history.enabled" => config.history = boolean(&name, value)?,
                    "replica.remote" => replica(&mut config).remote = remote(&name, value)?,
                    "replica.branch" => replica(&mut config).branch = Some(branch(&name, value)?),
                    "replica.interval" => replica(&mut config).interval_secs = interval(&name, value)?,
                    "semantic.model" => config.semantic.model = Some(model_folder(&name, value)?),
                    "semantic.languages" => config.semantic.languages = language_codes(&name, value)?,
                    "memory.enabled" => config.memory.enabled = boolean(&name, value)?,
                    "memory.folder" => {
                        config.policy.memory = Some(folder(&name, string(&name, value)?, false)?)
                    }
                    "memory.share_person" => config.memory.share_person = principals(&name, value)?,
                    _ => config.limits.proposal_max_bytes = limit(&name, value)?,
                }
            }
        }
        if config.replica.as_ref().is_some_and(|r| r.remote.is_empty()) {
            return Err(invalid(
                "`[replica]` needs `remote`: a remote of the clone (\"origin\") or a repository's path"
                    .to_owned(),
            ));
        }
        check_memory_folder(&config.policy)?;
        Ok(config)
    }
}

/// The memory folder stands apart: not inside or around the inbox, a
/// standards or a `read_also` folder.
fn check_memory_folder(policy: &Policy) -> Result<()> {
    let Some(memory) = policy.memory.as_deref() else { return Ok(()) };
    let nests = |other: &str| {
        let other = other.trim_matches('/');
        !other.is_empty()
            && (memory == other
                || memory.strip_prefix(other).is_some_and(|rest| rest.starts_with('/'))
                || other.strip_prefix(memory).is_some_and(|rest| rest.starts_with('/')))
    };
    let named = std::iter::once(("inbox", policy.inbox.as_str()))
        .chain(policy.standards.iter().map(|f| ("standards", f.as_str())))
        .chain(policy.read_also.iter().map(|f| ("read_also", f.as_str())));
    for (key, other) in named {
        if nests(other) {
            return Err(invalid(format!(
                "`memory.folder` {memory:?} overlaps `vault.{key}` {other:?}: the agent's memory must be a folder of its own"
            )));
        }
    }
    Ok(())
}

/// `[memory] share_person`: principals' names, as tokens are named (`local`
/// for stdio and the CLI, `oauth:<client>` for an OAuth client).
fn principals(name: &str, value: &Value) -> Result<Vec<String>> {
    let names = strings(name, value)?;
    let mut found = Vec::new();
    for raw in names {
        let raw = raw.trim();
        if raw.is_empty() || raw.len() > 200 || raw.chars().any(char::is_control) {
            return Err(invalid(format!("`{name}` entry {raw:?} is not a principal's name")));
        }
        found.push(raw.to_owned());
    }
    Ok(found)
}

/// The `[replica]` being read, made on its first key.
fn replica(config: &mut VaultConfig) -> &mut ReplicaConfig {
    config.replica.get_or_insert_with(|| ReplicaConfig {
        remote: String::new(),
        branch: None,
        interval_secs: 60,
    })
}

/// `[replica] remote`: a non-empty name or path without control characters.
fn remote(name: &str, value: &Value) -> Result<String> {
    let raw = string(name, value)?.trim();
    if raw.is_empty() || raw.chars().any(char::is_control) {
        return Err(invalid(format!(
            "`{name}` must name a remote of the clone (\"origin\") or a repository's path"
        )));
    }
    Ok(raw.to_owned())
}

/// `[replica] branch`: a plausible branch name (git checks it further).
fn branch(name: &str, value: &Value) -> Result<String> {
    let raw = string(name, value)?.trim();
    let bad = raw.is_empty()
        || raw.starts_with('-')
        || raw.contains("..")
        || raw.chars().any(|c| c.is_control() || c.is_whitespace() || "~^:?*[\\".contains(c));
    if bad {
        return Err(invalid(format!("`{name}`: `{raw}` is not a branch name")));
    }
    Ok(raw.to_owned())
}

/// `[replica] interval`: seconds (1 to 86400), as a number or `"30s"`, `"5m"`, `"1h"`.
fn interval(name: &str, value: &Value) -> Result<u64> {
    let seconds = match value {
        Value::Integer(n) => u64::try_from(*n).ok(),
        Value::String(text) => {
            let text = text.trim();
            let (number, unit) =
                text.split_at(text.find(|c: char| !c.is_ascii_digit()).unwrap_or(text.len()));
            let unit = match unit.trim() {
                "" | "s" => Some(1),
                "m" => Some(60),
                "h" => Some(3600),
                _ => None,
            };
            number.parse::<u64>().ok().zip(unit).map(|(n, unit)| n.saturating_mul(unit))
        }
        _ => None,
    };
    match seconds {
        Some(seconds) if (1..=86_400).contains(&seconds) => Ok(seconds),
        _ => Err(invalid(format!(
            "`{name}` must be a number of seconds from 1 to 86400, or a string such as \"30s\" or \"5m\""
        ))),
    }
}

/// The sections and keys `kb.toml` may hold.
const SECTIONS: [(&str, &[&str]); 7] = [
    ("vault", &["notes", "standards", "inbox", "read_also", "deny"]),
    ("tags", &["registry"]),
    (
        "limits",
        &[
            "read_max_bytes",
            "read_page_bytes",
            "proposal_max_bytes",
            "pending_max_count",
            "pending_max_bytes",
        ],
    ),
    ("semantic", &["enabled", "model", "languages"]),
    ("history", &["enabled"]),
    ("replica", &["remote", "branch", "interval"]),
    ("memory", &["enabled", "folder", "share_person"]),
];

/// The largest limit accepted: 1 GiB.
const MAX_LIMIT: u64 = 1 << 30;

const KEYS_HINT: &str = "kb.toml may hold [vault] notes, standards, inbox, read_also, deny; \
                         [tags] registry; [limits] read_max_bytes, read_page_bytes, proposal_max_bytes, pending_max_count, pending_max_bytes; \
                         [semantic] enabled, model, languages; [history] enabled; [replica] remote, branch, interval; [memory] enabled, folder, share_person; [lint] required, types, folders";

/// A `true` or `false` value.
fn boolean(name: &str, value: &Value) -> Result<bool> {
    value
        .as_bool()
        .ok_or_else(|| invalid(format!("`{name}` must be true or false, found {}", article(value))))
}

fn invalid(message: String) -> Error {
    Error::invalid(format!("kb.toml: {message}")).with_hint(KEYS_HINT)
}

fn unknown(what: &str, suggestion: Option<String>) -> Error {
    match suggestion {
        Some(suggestion) => invalid(format!("unknown {what} (did you mean {suggestion}?)")),
        None => invalid(format!("unknown {what}")),
    }
}

/// A TOML syntax error, with the line and column it starts at.
fn syntax_error(text: &str, err: &toml::de::Error) -> Error {
    let message = err.message().trim();
    match err.span() {
        Some(span) => {
            let at = span.start.min(text.len());
            let before = text.get(..at).unwrap_or(text);
            let line = before.matches('\n').count() + 1;
            let column = before.rsplit('\n').next().unwrap_or("").chars().count() + 1;
            invalid(format!("invalid TOML at line {line}, column {column}: {message}"))
        }
        None => invalid(format!("invalid TOML: {message}")),
    }
}

/// "a string", "an integer", ... for messages.
fn article(value: &Value) -> String {
    let kind = match value {
        Value::Array(_) => "list",
        other => other.type_str(),
    };
    let an = if kind.starts_with(['a', 'e', 'i', 'o', 'u']) { "an" } else { "a" };
    format!("{an} {kind}")
}

fn string<'a>(name: &str, value: &'a Value) -> Result<&'a str> {
    value.as_str().ok_or_else(|| invalid(format!("`{name}` must be a string, found {}", article(value))))
}

/// A list of strings.
fn strings<'a>(name: &str, value: &'a Value) -> Result<Vec<&'a str>> {
    let Value::Array(items) = value else {
        return Err(invalid(format!("`{name}` must be a list of strings, found {}", article(value))));
    };
    items
        .iter()
        .enumerate()
        .map(|(index, item)| {
            item.as_str().ok_or_else(|| {
                invalid(format!(
                    "`{name}` must be a list of strings, but item {} is {}",
                    index + 1,
                    article(item)
                ))
            })
        })
        .collect()
}

/// `[semantic] model`: a folder outside the vault's notes, given as a non-empty
/// path without control characters.
fn model_folder(name: &str, value: &Value) -> Result<String> {
    let raw = string(name, value)?.trim();
    if raw.is_empty() || raw.chars().any(char::is_control) {
        return Err(invalid(format!("`{name}` must name a model2vec model folder")));
    }
    Ok(raw.to_owned())
}

/// `[semantic] languages`: language codes (two or three lowercase letters,
/// or a regional form such as `pt-br`), deduplicated in order.
fn language_codes(name: &str, value: &Value) -> Result<Vec<String>> {
    let mut out: Vec<String> = Vec::new();
    for code in strings(name, value)? {
        let shaped = (2..=6).contains(&code.len())
            && code.bytes().all(|b| b.is_ascii_lowercase() || b == b'-')
            && !code.starts_with('-');
        if !shaped {
            return Err(invalid(format!(
                "`{name}`: `{code}` is not a language code (use codes such as \"zh\", \"ja\", \"en\")"
            )));
        }
        if !out.iter().any(|c| c == code) {
            out.push(code.to_owned());
        }
    }
    Ok(out)
}

/// A list of folders, deduplicated in order.
fn folders(name: &str, value: &Value, root_ok: bool) -> Result<Vec<String>> {
    let mut out: Vec<String> = Vec::new();
    for raw in strings(name, value)? {
        let folder = folder(name, raw, root_ok)?;
        if !out.contains(&folder) {
            out.push(folder);
        }
    }
    Ok(out)
}

/// A vault-relative folder: trailing slashes dropped, `""` or `.` for the vault root
/// (allowed for notes only), lexically safe, not hard-denied.
fn folder(name: &str, raw: &str, root_ok: bool) -> Result<String> {
    let trimmed = raw.trim_end_matches('/');
    let trimmed = trimmed.strip_prefix("./").unwrap_or(trimmed);
    if trimmed.is_empty() || trimmed == "." {
        return if root_ok {
            Ok(String::new())
        } else {
            Err(invalid(format!("`{name}` = {raw:?} names the vault root; name a folder inside the vault")))
        };
    }
    check_path(name, raw, trimmed, "folder")?;
    Ok(trimmed.to_owned())
}

/// A folder named in `[lint.folders]`: lexically safe and not hard-denied.
pub(super) fn check_folder(name: &str, raw: &str, folder: &str) -> Result<()> {
    check_path(name, raw, folder, "folder").map(|_| ())
}

/// Lexical checks of [`NotePath::parse`] plus the built-in hard-deny list.
fn check_path(name: &str, raw: &str, path: &str, what: &str) -> Result<NotePath> {
    let parsed = NotePath::parse(path).map_err(|err| {
        invalid(format!("`{name}` entry {raw:?} is not a safe vault-relative {what}: {}", err.message))
    })?;
    // A policy that names the path itself: only the built-in list can deny it then.
    let naming = Policy {
        notes: vec![path.to_owned()],
        standards: Vec::new(),
        inbox: String::new(),
        read_also: Vec::new(),
        deny: Vec::new(),
        memory: None,
    };
    if naming.is_denied(path) {
        return Err(invalid(format!(
            "`{name}` entry {raw:?} lies in a place that is never readable (the built-in deny list: \
             .git, .obsidian, .trash, .kb, node_modules, .ssh, .env*, key files)"
        )));
    }
    Ok(parsed)
}

/// Extra deny names or globs: non-empty strings, trailing slashes dropped.
fn deny_rules(name: &str, value: &Value) -> Result<Vec<String>> {
    let mut out: Vec<String> = Vec::new();
    for raw in strings(name, value)? {
        let rule = raw.trim().trim_end_matches('/');
        if rule.is_empty() || rule.contains(['\0', '\\']) {
            return Err(invalid(format!(
                "`{name}` entry {raw:?} is not a name or glob; write e.g. \"z/private\" or \"*.secret.md\""
            )));
        }
        if !out.iter().any(|r| r == rule) {
            out.push(rule.to_owned());
        }
    }
    Ok(out)
}

/// The tag registry: a safe vault-relative `.md` path.
fn registry(name: &str, value: &Value) -> Result<String> {
    let raw = string(name, value)?;
    let path = check_path(name, raw, raw, "note path")?;
    if !path.is_markdown() {
        return Err(invalid(format!("`{name}` = {raw:?} must name a Markdown note ending in .md")));
    }
    Ok(path.as_str().to_owned())
}

/// A size limit: an integer from 1 to 1 GiB.
fn limit(name: &str, value: &Value) -> Result<u64> {
    let Value::Integer(n) = value else {
        return Err(invalid(format!(
            "`{name}` must be an integer number of bytes, found {}",
            article(value)
        )));
    };
    match u64::try_from(*n) {
        Ok(n) if (1..=MAX_LIMIT).contains(&n) => Ok(n),
        _ => Err(invalid(format!("`{name}` must be between 1 and {MAX_LIMIT} bytes (1 GiB), found {n}"))),
    }
}

/// A close known key for a misspelt one: in its own section by spelling, or the same
/// key in another section.
fn suggest_key(section: &str, key: &str) -> Option<String> {
    let own = SECTIONS.iter().find(|(name, _)| *name == section).map_or(&[][..], |(_, keys)| *keys);
    if let Some(near) = suggest(key, own.iter().copied()) {
        return Some(near);
    }
    SECTIONS.iter().find(|(_, keys)| keys.contains(&key)).map(|(other, _)| format!("`{key}` in `[{other}]`"))
}

/// The closest candidate within two edits (or sharing a prefix), in backticks.
fn suggest<'a>(word: &str, candidates: impl Iterator<Item = &'a str>) -> Option<String> {
    let word = word.to_lowercase();
    candidates
        .map(|candidate| (edit_distance(&word, candidate), candidate))
        .filter(|&(distance, candidate)| {
            distance <= 2
                || (word.len() >= 3 && (candidate.starts_with(&word) || word.starts_with(candidate)))
        })
        .min_by_key(|&(distance, _)| distance)
        .map(|(_, candidate)| format!("`{candidate}`"))
}

/// Levenshtein distance over characters.
pub fn edit_distance(a: &str, b: &str) -> usize {
    let b: Vec<char> = b.chars().collect();
    let mut row: Vec<usize> = (0..=b.len()).collect();
    for (i, ca) in a.chars().enumerate() {
        let mut diagonal = row[0];
        row[0] = i + 1;
        for (j, &cb) in b.iter().enumerate() {
            let next = (diagonal + usize::from(ca != cb)).min(row[j] + 1).min(row[j + 1] + 1);
            diagonal = row[j + 1];
            row[j + 1] = next;
        }
    }
    row[b.len()]
}
