//! The OAuth state file: registered clients, the grants the owner made, the
//! hashes of the tokens issued under them, and the owner's passphrase hash.
//!
//! It lives beside the token file (`tokens.json` → `tokens.oauth.json`), is
//! private (owner-only, written atomically through `sandbox`) and never holds
//! a token: access and refresh tokens are 32 random bytes, stored as the
//! SHA-256 of their text (a random 256-bit secret needs no salt or slow hash);
//! the passphrase is an Argon2id hash. A running server re-reads the file
//! whenever it changed on disk before using it, so `kb-mcp clients revoke`
//! takes effect at the next request. A refresh token is used once: it is kept,
//! marked rotated, until it expires, and presenting it again revokes its whole
//! grant (the token was stolen, or the client is confused; either way the
//! family ends). Expired tokens, and grants with nothing left, are dropped at
//! each write.

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};
use subtle::ConstantTimeEq;

use crate::engine::types::Access;
use crate::error::{Error, ErrorCode, Result};
use crate::sandbox::{self, FileStamp, hex};

/// The format version this code reads and writes.
const VERSION: u32 = 1;
/// The largest state file read.
const MAX_FILE_BYTES: u64 = 4 << 20;
/// The most registered clients kept; beyond it the oldest client without a
/// grant makes room (anyone who reaches the server may register one).
const MAX_CLIENTS: usize = 200;
/// What access tokens start with (static tokens start with `kb_`).
pub(super) const ACCESS_PREFIX: &str = "kbo_";
/// What refresh tokens start with.
const REFRESH_PREFIX: &str = "kbr_";
/// How long a refresh token lives (30 days).
const REFRESH_LIFETIME_S: u64 = 30 * 24 * 3600;

/// The OAuth state file.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct OAuthFile {
    version: u32,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    owner: Option<Owner>,
    #[serde(default)]
    clients: Vec<Client>,
    #[serde(default)]
    grants: Vec<GrantRecord>,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
struct Owner {
    /// The Argon2id hash of the passphrase (PHC string).
    passphrase: String,
    set: String,
}

/// A registered client.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub(super) struct Client {
    pub(super) client_id: String,
    pub(super) client_name: String,
    pub(super) redirect_uris: Vec<String>,
    pub(super) registered: String,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
struct GrantRecord {
    id: String,
    client_id: String,
    scope: Access,
    resource: String,
    created: String,
    access: Vec<Issued>,
    refresh: Vec<Issued>,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
struct Issued {
    /// SHA-256 of the token's text, hex.
    hash: String,
    /// Unix seconds.
    expires: u64,
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    rotated: bool,
}

/// One line of `kb-mcp clients list`.
#[derive(Debug, Clone)]
pub struct ClientSummary {
    /// The name the client registered with.
    pub name: String,
    /// Its client id.
    pub client_id: String,
    /// When it registered (RFC 3339).
    pub registered: String,
    /// The access levels of its live grants, highest first (empty: registered, nothing granted).
    pub scopes: Vec<Access>,
}

/// Tokens handed to a client.
#[derive(Debug)]
pub(super) struct TokenPair {
    pub(super) access: String,
    pub(super) refresh: String,
    pub(super) scope: Access,
}

/// Why a refresh was refused.
#[derive(Debug, PartialEq, Eq)]
pub(super) enum RefreshRefused {
    /// Unknown, expired, or of another client.
    Invalid,
    /// A rotated token presented again: its grant is revoked.
    Reused,
}

/// What a live access token grants.
#[derive(Debug, Clone)]
pub(super) struct Granted {
    pub(super) client_name: String,
    pub(super) scope: Access,
    pub(super) key: [u8; 32],
}

pub(super) fn now_s() -> u64 {
    jiff::Timestamp::now().as_second().max(0).cast_unsigned()
}

fn now_text() -> String {
    jiff::Zoned::now().strftime("%Y-%m-%dT%H:%M:%S%:z").to_string()
}

/// `n` random bytes, base64url without padding.
pub(super) fn random_text<const N: usize>() -> Result<String> {
    use base64::Engine as _;
    let mut bytes = [0u8; N];
    getrandom::fill(&mut bytes).map_err(|err| Error::internal(format!("no randomness available: {err}")))?;
    Ok(base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(bytes))
}

/// SHA-256 of a token's text, hex: how tokens are stored and found.
pub(super) fn token_hash(token: &str) -> String {
    hex(&Sha256::digest(token.as_bytes()))
}

/// The key sessions of a grant are bound to (stable across refreshes).
fn grant_key(id: &str) -> [u8; 32] {
    let mut hasher = Sha256::new();
    hasher.update(b"kb-mcp oauth grant ");
    hasher.update(id.as_bytes());
    hasher.finalize().into()
}

fn same(a: &str, b: &str) -> bool {
    a.as_bytes().ct_eq(b.as_bytes()).into()
}

/// Where the OAuth state of a token file lives: beside it, `NAME.oauth.json`.
pub fn oauth_state_path(tokens: &Path) -> PathBuf {
    let stem =
        tokens.file_stem().map(|s| s.to_string_lossy().into_owned()).unwrap_or_else(|| "tokens".into());
    tokens.with_file_name(format!("{stem}.oauth.json"))
}

impl OAuthFile {
    /// Reads the state at `path`; an empty state when there is none yet.
    pub fn load(path: &Path) -> Result<OAuthFile> {
        let Some(file) = sandbox::read_private_file(path, MAX_FILE_BYTES)? else {
            return Ok(OAuthFile { version: VERSION, ..OAuthFile::default() });
        };
        let state: OAuthFile = serde_json::from_slice(&file.bytes).map_err(|err| {
            Error::invalid(format!("{} is not a kb-mcp OAuth state file: {err}", path.display()))
        })?;
        if state.version != VERSION {
            return Err(Error::invalid(format!(
                "{} has OAuth state version {}; this kb-mcp reads version {VERSION}",
                path.display(),
                state.version
            )));
        }
        Ok(state)
    }

    /// Loads the state at `path`, changes it with `f` and writes it back, all
    /// under the state's lock, so a running server's writes and this one never
    /// overwrite each other. `f` says whether it changed anything.
    pub fn update<T>(path: &Path, f: impl FnOnce(&mut OAuthFile) -> Result<(T, bool)>) -> Result<T> {
        let _lock = sandbox::lock_private_file(path)?;
        let mut file = OAuthFile::load(path)?;
        let (out, changed) = f(&mut file)?;
        if changed {
            file.save(path)?;
        }
        Ok(out)
    }

    /// Writes the state atomically with owner-only permissions, dropping what expired.
    pub fn save(&mut self, path: &Path) -> Result<()> {
        self.prune(now_s());
        let mut bytes = serde_json::to_vec_pretty(self)
            .map_err(|err| Error::internal(format!("serialising the OAuth state: {err}")))?;
        bytes.push(b'\n');
        sandbox::write_private_file(path, &bytes)
    }

    fn prune(&mut self, now: u64) {
        for grant in &mut self.grants {
            grant.access.retain(|t| t.expires > now);
            grant.refresh.retain(|t| t.expires > now);
        }
        self.grants.retain(|g| g.refresh.iter().any(|t| !t.rotated) || !g.access.is_empty());
    }

    /// Sets the owner's passphrase (stored as an Argon2id hash); it proves
    /// ownership on the consent page.
    pub fn set_owner_passphrase(&mut self, passphrase: &str) -> Result<()> {
        if passphrase.chars().count() < 12 {
            return Err(Error::invalid("the passphrase is shorter than 12 characters")
                .with_hint("use a few unrelated words; it guards every grant of access to the vault"));
        }
        self.owner = Some(Owner { passphrase: super::passphrase::hash(passphrase)?, set: now_text() });
        Ok(())
    }

    /// Whether an owner passphrase is set.
    pub fn has_owner(&self) -> bool {
        self.owner.is_some()
    }

    pub(super) fn owner_hash(&self) -> Option<String> {
        self.owner.as_ref().map(|o| o.passphrase.clone())
    }

    /// The registered clients, by name then id, with the scopes of their live grants.
    pub fn clients(&self) -> Vec<ClientSummary> {
        let mut out: Vec<ClientSummary> = self
            .clients
            .iter()
            .map(|client| {
                let mut scopes: Vec<Access> =
                    self.grants.iter().filter(|g| g.client_id == client.client_id).map(|g| g.scope).collect();
                scopes.sort_unstable_by(|a, b| b.cmp(a));
                scopes.dedup();
                ClientSummary {
                    name: client.client_name.clone(),
                    client_id: client.client_id.clone(),
                    registered: client.registered.clone(),
                    scopes,
                }
            })
            .collect();
        out.sort_by(|a, b| (&a.name, &a.client_id).cmp(&(&b.name, &b.client_id)));
        out
    }

    /// Removes every client whose name or client id is `name`, with its
    /// grants and tokens; how many clients were removed.
    pub fn revoke_client(&mut self, name: &str) -> usize {
        let gone: Vec<String> = self
            .clients
            .iter()
            .filter(|c| c.client_name == name || c.client_id == name)
            .map(|c| c.client_id.clone())
            .collect();
        self.clients.retain(|c| !gone.contains(&c.client_id));
        self.grants.retain(|g| !gone.contains(&g.client_id));
        gone.len()
    }

    pub(super) fn client(&self, id: &str) -> Option<&Client> {
        self.clients.iter().find(|c| c.client_id == id)
    }

    /// Registers a client, making room when full; an error when every kept client holds a grant.
    pub(super) fn register(&mut self, name: String, redirect_uris: Vec<String>) -> Result<Client> {
        let id = format!("kbc_{}", random_text::<18>()?);
        self.remember(id, name, redirect_uris).map(|(client, _)| client)
    }

    /// Adds or updates the client `client_id` (one described by a metadata
    /// document, or a new registration): the client, and whether anything changed.
    pub(super) fn remember(
        &mut self,
        client_id: String,
        name: String,
        redirect_uris: Vec<String>,
    ) -> Result<(Client, bool)> {
        if let Some(known) = self.clients.iter_mut().find(|c| c.client_id == client_id) {
            let changed = known.client_name != name || known.redirect_uris != redirect_uris;
            known.client_name = name;
            known.redirect_uris = redirect_uris;
            return Ok((known.clone(), changed));
        }
        if self.clients.len() >= MAX_CLIENTS {
            let idle =
                self.clients.iter().position(|c| !self.grants.iter().any(|g| g.client_id == c.client_id));
            match idle {
                Some(index) => {
                    self.clients.remove(index);
                }
                None => {
                    return Err(Error::new(
                        ErrorCode::Conflict,
                        format!(
                            "{MAX_CLIENTS} clients hold grants already; revoke some with `kb-mcp clients revoke`"
                        ),
                    ));
                }
            }
        }
        let client = Client { client_id, client_name: name, redirect_uris, registered: now_text() };
        self.clients.push(client.clone());
        Ok((client, true))
    }

    /// A new grant to `client_id` and its first tokens.
    pub(super) fn grant(
        &mut self,
        client_id: &str,
        scope: Access,
        resource: &str,
        access_lifetime_s: u64,
    ) -> Result<(String, TokenPair)> {
        let mut grant = GrantRecord {
            id: random_text::<18>()?,
            client_id: client_id.to_owned(),
            scope,
            resource: resource.to_owned(),
            created: now_text(),
            access: Vec::new(),
            refresh: Vec::new(),
        };
        let pair = issue(&mut grant, access_lifetime_s)?;
        let id = grant.id.clone();
        self.grants.push(grant);
        Ok((id, pair))
    }

    /// Rotates a refresh token: the old one is spent, a new pair is issued.
    pub(super) fn refresh(
        &mut self,
        presented: &str,
        client_id: &str,
        access_lifetime_s: u64,
    ) -> std::result::Result<TokenPair, RefreshRefused> {
        if !presented.starts_with(REFRESH_PREFIX) {
            return Err(RefreshRefused::Invalid);
        }
        let hash = token_hash(presented);
        let now = now_s();
        let Some(index) = self
            .grants
            .iter()
            .position(|g| g.refresh.iter().any(|t| same(&t.hash, &hash) && t.expires > now))
        else {
            return Err(RefreshRefused::Invalid);
        };
        let grant = &mut self.grants[index];
        if grant.client_id != client_id {
            return Err(RefreshRefused::Invalid);
        }
        let token = grant.refresh.iter_mut().find(|t| same(&t.hash, &hash)).ok_or(RefreshRefused::Invalid)?;
        if token.rotated {
            self.grants.remove(index);
            return Err(RefreshRefused::Reused);
        }
        token.rotated = true;
        issue(grant, access_lifetime_s).map_err(|_| RefreshRefused::Invalid)
    }

    /// Revokes a token (RFC 7009): an access token alone; a refresh token with its whole grant.
    pub(super) fn revoke_token(&mut self, presented: &str, client_id: Option<&str>) -> bool {
        let hash = token_hash(presented);
        let owned_by = |g: &GrantRecord| client_id.is_none_or(|id| id == g.client_id);
        if let Some(index) =
            self.grants.iter().position(|g| owned_by(g) && g.refresh.iter().any(|t| same(&t.hash, &hash)))
        {
            self.grants.remove(index);
            return true;
        }
        for grant in self.grants.iter_mut().filter(|g| owned_by(g)) {
            let before = grant.access.len();
            grant.access.retain(|t| !same(&t.hash, &hash));
            if grant.access.len() != before {
                return true;
            }
        }
        false
    }

    /// Revokes the grant `id` (a code presented twice).
    pub(super) fn revoke_grant(&mut self, id: &str) {
        self.grants.retain(|g| g.id != id);
    }

    /// What a live access token for `resource` grants.
    pub(super) fn verify(&self, presented: &str, resource: &str) -> Option<Granted> {
        if !presented.starts_with(ACCESS_PREFIX) || presented.len() > 256 {
            return None;
        }
        let hash = token_hash(presented);
        let now = now_s();
        let grant =
            self.grants.iter().find(|g| g.access.iter().any(|t| same(&t.hash, &hash) && t.expires > now))?;
        if grant.resource != resource {
            return None;
        }
        let client = self.client(&grant.client_id)?;
        Some(Granted {
            client_name: client.client_name.clone(),
            scope: grant.scope,
            key: grant_key(&grant.id),
        })
    }

    /// The session keys of the grants live now.
    pub(super) fn keys(&self) -> Vec<[u8; 32]> {
        self.grants.iter().map(|g| grant_key(&g.id)).collect()
    }
}

fn issue(grant: &mut GrantRecord, access_lifetime_s: u64) -> Result<TokenPair> {
    let access = format!("{ACCESS_PREFIX}{}", random_text::<32>()?);
    let refresh = format!("{REFRESH_PREFIX}{}", random_text::<32>()?);
    let now = now_s();
    grant.access.push(Issued { hash: token_hash(&access), expires: now + access_lifetime_s, rotated: false });
    grant.refresh.push(Issued {
        hash: token_hash(&refresh),
        expires: now + REFRESH_LIFETIME_S,
        rotated: false,
    });
    Ok(TokenPair { access, refresh, scope: grant.scope })
}

/// The state a running server uses, re-read when the file changed on disk.
pub(super) struct OAuthStore {
    path: PathBuf,
    loaded: Mutex<(OAuthFile, Option<FileStamp>)>,
}

impl OAuthStore {
    pub(super) fn open(path: PathBuf) -> Result<Arc<OAuthStore>> {
        let stamp = sandbox::private_file_stamp(&path);
        let file = OAuthFile::load(&path)?;
        Ok(Arc::new(OAuthStore { path, loaded: Mutex::new((file, stamp)) }))
    }

    fn fresh(&self) -> std::sync::MutexGuard<'_, (OAuthFile, Option<FileStamp>)> {
        let mut loaded = self.loaded.lock().unwrap_or_else(|p| p.into_inner());
        let stamp = sandbox::private_file_stamp(&self.path);
        if stamp != loaded.1 {
            match OAuthFile::load(&self.path) {
                Ok(file) => *loaded = (file, stamp),
                Err(error) => {
                    crate::server::log(serde_json::json!({
                        "event": "oauth_state_invalid", "error": error.to_string(),
                        "effect": "no OAuth token is admitted until the file is fixed",
                    }));
                    *loaded = (OAuthFile { version: VERSION, ..OAuthFile::default() }, stamp);
                }
            }
        }
        loaded
    }

    /// Reads the current state.
    pub(super) fn read<T>(&self, f: impl FnOnce(&OAuthFile) -> T) -> T {
        f(&self.fresh().0)
    }

    /// Changes the state and writes it (only when `f` says it changed something).
    pub(super) fn change<T>(&self, f: impl FnOnce(&mut OAuthFile) -> (T, bool)) -> Result<T> {
        let mut loaded = self.fresh();
        // Under the lock, what `kb-mcp clients revoke` wrote is read before this write replaces it.
        let _lock = sandbox::lock_private_file(&self.path)?;
        let stamp = sandbox::private_file_stamp(&self.path);
        if stamp != loaded.1 {
            loaded.0 = OAuthFile::load(&self.path)?;
            loaded.1 = stamp;
        }
        let (out, changed) = f(&mut loaded.0);
        if changed {
            loaded.0.save(&self.path)?;
            loaded.1 = sandbox::private_file_stamp(&self.path);
        }
        Ok(out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn refresh_rotates_and_a_reused_token_ends_the_grant() {
        let mut file = OAuthFile { version: VERSION, ..OAuthFile::default() };
        let client = file.register("app".into(), vec!["https://app.example/cb".into()]).unwrap();
        let (_, first) = file.grant(&client.client_id, Access::Propose, "http://x/mcp", 60).unwrap();
        let stored = serde_json::to_string(&file).unwrap();
        assert!(!stored.contains(&first.access) && !stored.contains(&first.refresh));
        assert!(file.verify(&first.access, "http://x/mcp").is_some());
        assert!(file.verify(&first.access, "http://other/mcp").is_none(), "another resource");
        assert_eq!(file.refresh(&first.refresh, "kbc_other", 60).unwrap_err(), RefreshRefused::Invalid);
        let second = file.refresh(&first.refresh, &client.client_id, 60).unwrap();
        assert_eq!(second.scope, Access::Propose);
        assert_eq!(file.refresh(&first.refresh, &client.client_id, 60).unwrap_err(), RefreshRefused::Reused);
        assert!(file.verify(&second.access, "http://x/mcp").is_none(), "the family is revoked");
        assert_eq!(
            file.refresh(&second.refresh, &client.client_id, 60).unwrap_err(),
            RefreshRefused::Invalid
        );
    }

    #[test]
    fn revoking_a_client_by_name_drops_its_grants() {
        let mut file = OAuthFile { version: VERSION, ..OAuthFile::default() };
        let client = file.register("ChatGPT".into(), vec!["https://chatgpt.com/cb".into()]).unwrap();
        let (_, pair) = file.grant(&client.client_id, Access::Read, "r", 60).unwrap();
        assert_eq!(file.clients()[0].scopes, vec![Access::Read]);
        assert_eq!(file.revoke_client("ChatGPT"), 1);
        assert!(file.verify(&pair.access, "r").is_none());
        assert!(file.clients().is_empty());
    }

    #[test]
    fn the_state_lives_beside_the_token_file() {
        assert_eq!(oauth_state_path(Path::new("/a/tokens.json")), Path::new("/a/tokens.oauth.json"));
    }
}
