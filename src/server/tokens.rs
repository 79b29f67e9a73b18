//! Bearer tokens for the HTTP transport: the token file and checking a token.
//!
//! A token is 32 random bytes written `kb_` + 64 lowercase hex digits. It is
//! shown once, when created; the token file keeps only a salted hash of it
//! (`sha256:<hex>` of a random 16-byte salt followed by the token's text), with
//! the token's name and scope (`read`, `propose` or `apply`, the access level an
//! HTTP request carrying it gets; or `metrics`, which reads `GET /metrics` and
//! nothing else), and optionally its own rate limit and request timeout in
//! place of the server's. The file is JSON, `{"version": 1, "tokens": [{name,
//! scope, salt, hash, created, rate?, request_timeout_s?}]}`, kept outside
//! the vault with owner-only permissions. A running server re-reads it when it
//! changes (checked at most four times a second), so `kb-mcp token revoke` takes
//! effect without a restart, and the HTTP gate closes the revoked token's sessions; a file that becomes unreadable or invalid admits nobody
//! until it is fixed. Hashes are compared in constant time. Only token names
//! ever reach a log.

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};
use subtle::ConstantTimeEq;

use super::log;
use crate::engine::types::Access;
use crate::error::{Error, Result};
use crate::sandbox::{self, FileStamp, Zone, hex, rfc3339, unhex};

/// The token file format this code reads and writes.
const TOKEN_FILE_VERSION: u32 = 1;
/// What every token starts with, so that a leaked one is recognisable.
const TOKEN_PREFIX: &str = "kb_";
/// The largest token file read.
const MAX_FILE_BYTES: u64 = 1 << 20;
/// How often a running server looks for a changed token file.
const RELOAD_EVERY: Duration = Duration::from_millis(250);

/// The token file.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct TokenFile {
    /// The format version: always 1.
    pub version: u32,
    /// The tokens, in the order they were added.
    pub tokens: Vec<TokenRecord>,
}

/// One token as stored: never the token itself.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct TokenRecord {
    /// A name for people and logs (`[A-Za-z0-9._-]`, at most 64 characters).
    pub name: String,
    /// `read`, `propose` or `apply`.
    pub scope: String,
    /// 16 random bytes, hex.
    pub salt: String,
    /// `sha256:<hex>` of the salt's bytes followed by the token's text.
    pub hash: String,
    /// When the token was created (RFC 3339).
    pub created: String,
    /// Requests per second this token may make (bursts of twice that), in
    /// place of the server's `--rate`; 0 turns its limit off.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rate: Option<f64>,
    /// Seconds one of its requests may run, in place of the server's
    /// `--request-timeout`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub request_timeout_s: Option<u64>,
    /// The vaults it may use, by name, on a server serving several (every
    /// vault when absent): the others do not exist for it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub vaults: Option<Vec<String>>,
}

/// What a token may do.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Scope {
    /// Call tools at this access level.
    Tools(Access),
    /// Read `GET /metrics`, and nothing else.
    Metrics,
}

impl Scope {
    /// `read`, `propose`, `apply` or `metrics`.
    pub fn parse(text: &str) -> Option<Scope> {
        match text {
            "metrics" => Some(Scope::Metrics),
            text => Access::parse(text).map(Scope::Tools),
        }
    }

    /// The scope's name, as stored.
    pub fn as_str(self) -> &'static str {
        match self {
            Scope::Tools(access) => access.as_str(),
            Scope::Metrics => "metrics",
        }
    }
}

impl From<Access> for Scope {
    fn from(access: Access) -> Scope {
        Scope::Tools(access)
    }
}

/// A token's own limits, in place of the server's (see [`TokenRecord`]).
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct TokenLimits {
    /// Requests per second (0: no limit).
    pub rate: Option<f64>,
    /// Seconds a request may run.
    pub request_timeout_s: Option<u64>,
}

/// The largest per-token request timeout (a day), as for `--request-timeout`.
const MAX_TIMEOUT_S: u64 = 86_400;

impl Default for TokenFile {
    fn default() -> Self {
        TokenFile { version: TOKEN_FILE_VERSION, tokens: Vec::new() }
    }
}

/// Checks a token's own limits: a rate of 0 (no limit) or 0.01 to 100000
/// a second, a timeout of 1 s to a day; says what is wrong.
fn check_limits(limits: &TokenLimits) -> std::result::Result<(), String> {
    if let Some(rate) = limits.rate
        && !(rate == 0.0 || (0.01..=100_000.0).contains(&rate))
    {
        return Err(format!("a rate of {rate} (use 0 for no limit, or 0.01 to 100000 a second)"));
    }
    if let Some(timeout) = limits.request_timeout_s
        && !(1..=MAX_TIMEOUT_S).contains(&timeout)
    {
        return Err(format!("a request timeout of {timeout} s (use 1 to {MAX_TIMEOUT_S})"));
    }
    Ok(())
}

/// Checks a token name: 1 to 64 of `A-Z a-z 0-9 . _ -`.
/// Whether `name` is a plain name: 1 to 64 letters, digits, `.`, `_` or `-`
/// (a token's, and a host entry's that `kb-mcp install` writes).
pub fn is_plain_name(name: &str) -> bool {
    !name.is_empty()
        && name.len() <= 64
        && name.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'.' || b == b'_' || b == b'-')
}

fn check_name(name: &str) -> Result<()> {
    if is_plain_name(name) {
        Ok(())
    } else {
        Err(Error::invalid(format!(
            "`{name}` is not a valid token name: use 1 to 64 letters, digits, `.`, `_` or `-`"
        )))
    }
}

fn random<const N: usize>() -> Result<[u8; N]> {
    let mut bytes = [0u8; N];
    getrandom::fill(&mut bytes).map_err(|err| Error::internal(format!("no randomness available: {err}")))?;
    Ok(bytes)
}

fn digest(salt: &[u8], token: &str) -> [u8; 32] {
    let mut hasher = Sha256::new();
    hasher.update(salt);
    hasher.update(token.as_bytes());
    hasher.finalize().into()
}

impl TokenFile {
    /// Parses and checks a token file's bytes; `path` names it in errors.
    pub fn parse(bytes: &[u8], path: &Path) -> Result<TokenFile> {
        let shown = path.display();
        let file: TokenFile = serde_json::from_slice(bytes)
            .map_err(|err| Error::invalid(format!("{shown} is not a kb-mcp token file: {err}")))?;
        if file.version != TOKEN_FILE_VERSION {
            return Err(Error::invalid(format!(
                "{shown} has token file version {}; this kb-mcp reads version {TOKEN_FILE_VERSION}",
                file.version
            )));
        }
        file.verifiers(path)?;
        Ok(file)
    }

    /// Reads the file at `path`; `None` when it does not exist.
    pub fn load(path: &Path) -> Result<Option<TokenFile>> {
        match sandbox::read_private_file(path, MAX_FILE_BYTES)? {
            Some(file) => TokenFile::parse(&file.bytes, path).map(Some),
            None => Ok(None),
        }
    }

    /// Writes the file atomically with owner-only permissions.
    pub fn save(&self, path: &Path) -> Result<()> {
        let mut bytes = serde_json::to_vec_pretty(self)
            .map_err(|err| Error::internal(format!("serialising the token file: {err}")))?;
        bytes.push(b'\n');
        sandbox::write_private_file(path, &bytes)
    }

    /// Creates a token called `name` with `scope` and returns it: the only time
    /// it exists outside the caller's memory. Refuses a name already in use.
    pub fn add(&mut self, name: &str, scope: impl Into<Scope>) -> Result<String> {
        self.add_limited(name, scope.into(), TokenLimits::default())
    }

    /// [`TokenFile::add`] with the token's own `limits`.
    pub fn add_limited(&mut self, name: &str, scope: Scope, limits: TokenLimits) -> Result<String> {
        self.add_for_vaults(name, scope, limits, &[])
    }

    /// [`TokenFile::add_limited`] for a token that may use only the vaults
    /// named in `vaults` (every vault when it is empty).
    pub fn add_for_vaults(
        &mut self,
        name: &str,
        scope: Scope,
        limits: TokenLimits,
        vaults: &[String],
    ) -> Result<String> {
        check_name(name)?;
        if let Some(bad) = vaults.iter().find(|vault| !super::is_vault_name(vault)) {
            return Err(Error::invalid(format!(
                "{bad:?} cannot name a vault: use the names the server is given (--vault NAME=DIR)"
            )));
        }
        check_limits(&limits).map_err(|what| Error::invalid(format!("token `{name}`: {what}")))?;
        if self.tokens.iter().any(|record| record.name == name) {
            return Err(Error::new(
                crate::error::ErrorCode::TargetExists,
                format!("a token named `{name}` already exists"),
            )
            .with_hint("pick another name, or revoke the old token first"));
        }
        let token = format!("{TOKEN_PREFIX}{}", hex(&random::<32>()?));
        let salt = random::<16>()?;
        self.tokens.push(TokenRecord {
            name: name.to_owned(),
            scope: scope.as_str().to_owned(),
            salt: hex(&salt),
            hash: format!("sha256:{}", hex(&digest(&salt, &token))),
            created: rfc3339(jiff::Timestamp::now(), Zone::Local),
            rate: limits.rate,
            request_timeout_s: limits.request_timeout_s,
            vaults: (!vaults.is_empty()).then(|| vaults.to_vec()),
        });
        Ok(token)
    }

    /// Removes the token called `name`; false when there is none.
    pub fn revoke(&mut self, name: &str) -> bool {
        let before = self.tokens.len();
        self.tokens.retain(|record| record.name != name);
        self.tokens.len() != before
    }

    /// The decoded records, checking every field.
    fn verifiers(&self, path: &Path) -> Result<Vec<Verifier>> {
        let mut out: Vec<Verifier> = Vec::with_capacity(self.tokens.len());
        for record in &self.tokens {
            let bad = |what: &str| {
                Error::invalid(format!("{}: token `{}` has {what}", path.display(), record.name))
            };
            check_name(&record.name).map_err(|_| bad("an invalid name"))?;
            if out.iter().any(|other| *other.name == *record.name) {
                return Err(bad("a duplicate name"));
            }
            let scope = Scope::parse(&record.scope).ok_or_else(|| bad("an unknown scope"))?;
            let limits = TokenLimits { rate: record.rate, request_timeout_s: record.request_timeout_s };
            check_limits(&limits).map_err(|what| bad(&what))?;
            let vaults = match &record.vaults {
                Some(names) if names.is_empty() || !names.iter().all(|name| super::is_vault_name(name)) => {
                    return Err(bad("a vault list that is empty or holds an invalid name"));
                }
                names => names.as_deref().map(Arc::from),
            };
            let salt = unhex::<16>(&record.salt).ok_or_else(|| bad("a malformed salt"))?;
            let hash = record
                .hash
                .strip_prefix("sha256:")
                .and_then(unhex::<32>)
                .ok_or_else(|| bad("a malformed hash"))?;
            out.push(Verifier { name: Arc::from(record.name.as_str()), scope, limits, vaults, salt, hash });
        }
        Ok(out)
    }
}

/// What a valid token grants: its name (for logs and rate limits) and level.
#[derive(Debug, Clone, PartialEq)]
pub(super) struct Grant {
    /// The token's name.
    pub(super) name: Arc<str>,
    /// Its scope.
    pub(super) scope: Scope,
    /// Its own limits.
    pub(super) limits: TokenLimits,
    /// Which stored token it is (its salted hash): sessions are bound to it.
    pub(super) key: [u8; 32],
    /// Issued by OAuth (its client can ask for more scope), not a static token.
    pub(super) oauth: bool,
    /// The vaults it may use (every vault for `None`).
    pub(super) vaults: Option<Arc<[String]>>,
}

/// One stored token, decoded for checking.
struct Verifier {
    name: Arc<str>,
    scope: Scope,
    limits: TokenLimits,
    vaults: Option<Arc<[String]>>,
    salt: [u8; 16],
    hash: [u8; 32],
}

/// The tokens a server admits, re-read when the file changes.
pub(super) struct TokenStore {
    path: PathBuf,
    state: Mutex<Loaded>,
}

struct Loaded {
    verifiers: Arc<Vec<Verifier>>,
    stamp: Option<FileStamp>,
    checked: Instant,
}

impl TokenStore {
    /// Reads the token file; an error when it is missing or invalid.
    pub(super) fn open(path: &Path) -> Result<TokenStore> {
        let stamp = sandbox::private_file_stamp(path);
        let file = match sandbox::read_private_file(path, MAX_FILE_BYTES)? {
            Some(file) => file,
            None => {
                return Err(Error::not_found(format!("no token file at {}", path.display()))
                    .with_hint("create a token with `kb-mcp token add NAME --scope read --tokens FILE`"));
            }
        };
        if file.readable_by_others {
            log(serde_json::json!({
                "event": "warning",
                "message": format!("{} is readable by other users; run `chmod 600` on it", path.display()),
            }));
        }
        let verifiers = TokenFile::parse(&file.bytes, path)?.verifiers(path)?;
        Ok(TokenStore {
            path: path.to_owned(),
            state: Mutex::new(Loaded {
                verifiers: Arc::new(verifiers),
                stamp: stamp.or(Some(file.stamp)),
                checked: Instant::now(),
            }),
        })
    }

    /// How many tokens are admitted now.
    pub(super) fn len(&self) -> usize {
        self.current().len()
    }

    fn current(&self) -> Arc<Vec<Verifier>> {
        let mut state = self.state.lock().unwrap_or_else(|p| p.into_inner());
        if state.checked.elapsed() >= RELOAD_EVERY {
            state.checked = Instant::now();
            let stamp = sandbox::private_file_stamp(&self.path);
            if stamp != state.stamp {
                state.stamp = stamp;
                let reloaded = TokenFile::load(&self.path).and_then(|file| match file {
                    Some(file) => file.verifiers(&self.path),
                    None => Ok(Vec::new()),
                });
                state.verifiers = Arc::new(match reloaded {
                    Ok(verifiers) => {
                        log(serde_json::json!({ "event": "tokens_reloaded", "tokens": verifiers.len() }));
                        verifiers
                    }
                    Err(error) => {
                        log(serde_json::json!({
                            "event": "tokens_invalid",
                            "error": error.to_string(),
                            "effect": "no token is admitted until the file is fixed",
                        }));
                        Vec::new()
                    }
                });
            }
        }
        state.verifiers.clone()
    }

    /// The keys ([`Grant::key`]) of the tokens admitted now.
    pub(super) fn keys(&self) -> Vec<[u8; 32]> {
        self.current().iter().map(|verifier| verifier.hash).collect()
    }

    /// What `presented` grants, if it is one of the stored tokens. Every stored
    /// hash is computed and compared in constant time.
    pub(super) fn verify(&self, presented: &str) -> Option<Grant> {
        if !presented.starts_with(TOKEN_PREFIX) || presented.len() > 256 {
            return None;
        }
        let verifiers = self.current();
        let mut found = None;
        for verifier in verifiers.iter() {
            let matched: bool = digest(&verifier.salt, presented).ct_eq(&verifier.hash).into();
            if matched {
                found = Some(Grant {
                    name: verifier.name.clone(),
                    scope: verifier.scope,
                    limits: verifier.limits,
                    key: verifier.hash,
                    oauth: false,
                    vaults: verifier.vaults.clone(),
                });
            }
        }
        found
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_token_verifies_against_its_hash_only() {
        let mut file = TokenFile::default();
        let token = file.add("laptop", Access::Propose).unwrap();
        assert!(token.starts_with(TOKEN_PREFIX) && token.len() == 3 + 64);
        let record = &file.tokens[0];
        assert!(!serde_json::to_string(&file).unwrap().contains(&token[3..]));
        let salt = unhex::<16>(&record.salt).unwrap();
        assert_eq!(record.hash, format!("sha256:{}", hex(&digest(&salt, &token))));
        assert!(file.add("laptop", Access::Read).is_err(), "duplicate name");
        assert!(file.add("no spaces", Access::Read).is_err(), "bad name");
        let verifiers = file.verifiers(Path::new("t.json")).unwrap();
        assert_eq!(verifiers[0].scope, Scope::Tools(Access::Propose));
        let limits = TokenLimits { rate: Some(2.5), request_timeout_s: Some(30) };
        file.add_limited("grafana", Scope::Metrics, limits).unwrap();
        let verifiers = file.verifiers(Path::new("t.json")).unwrap();
        assert_eq!((verifiers[1].scope, verifiers[1].limits), (Scope::Metrics, limits));
        for bad in [
            TokenLimits { rate: Some(-1.0), ..TokenLimits::default() },
            TokenLimits { rate: Some(f64::NAN), ..TokenLimits::default() },
            TokenLimits { request_timeout_s: Some(0), ..TokenLimits::default() },
        ] {
            assert!(file.add_limited("bad", Scope::Metrics, bad).is_err(), "{bad:?}");
        }
        file.revoke("grafana");
        assert!(file.revoke("laptop") && !file.revoke("laptop"));
    }

    #[test]
    fn malformed_files_are_refused() {
        let path = Path::new("t.json");
        for text in [
            "{}",
            r#"{"version":2,"tokens":[]}"#,
            r#"{"version":1,"tokens":[{"name":"a","scope":"root","salt":"00000000000000000000000000000000","hash":"sha256:0000000000000000000000000000000000000000000000000000000000000000","created":"x"}]}"#,
            r#"{"version":1,"tokens":[{"name":"a","scope":"read","salt":"00","hash":"sha256:00","created":"x"}]}"#,
        ] {
            assert!(TokenFile::parse(text.as_bytes(), path).is_err(), "{text}");
        }
        assert!(TokenFile::parse(br#"{"version":1,"tokens":[]}"#, path).is_ok());
    }
}
