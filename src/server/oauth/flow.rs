//! The short-lived parts of the authorization code flow, kept in memory only:
//! consent attempts (an authorization request waiting for the owner's answer,
//! with its CSRF secret) and authorization codes (PKCE challenge, redirect
//! URI, scope and resource they were issued for). Both are single-use: an
//! answered attempt is forgotten, so a replayed form finds nothing; a code is
//! marked spent before it is checked, so a second use (or a use after a wrong
//! verifier) fails, and a second use also revokes the grant the first one
//! made, as RFC 6749 §4.1.2 advises. A restart forgets them all, which costs
//! a person at most one retry. At most [`MAX_ATTEMPTS`] wait at once; a new
//! one past that pushes the oldest out rather than being refused, so that
//! strangers opening consent pages cannot lock the owner out: the owner's
//! own page lives until that many newer ones arrive, and a retry makes a
//! new one. Wrong passphrases are counted: three end an attempt, ten within
//! ten minutes close the consent page for everyone until the oldest falls
//! out of the window.

use std::collections::{HashMap, VecDeque};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use base64::Engine as _;
use sha2::{Digest, Sha256};
use subtle::ConstantTimeEq;

use super::state::{random_text, token_hash};
use crate::engine::types::Access;
use crate::error::Result;

/// How long the owner has to answer a consent page.
const ATTEMPT_LIFETIME: Duration = Duration::from_secs(10 * 60);
/// How long an authorization code may wait for its exchange.
const CODE_LIFETIME: Duration = Duration::from_secs(60);
/// Attempts kept at once (anyone may open the consent page).
const MAX_ATTEMPTS: usize = 1000;
/// Wrong passphrases one attempt may take.
pub(super) const WRONG_PER_ATTEMPT: u32 = 3;
/// Wrong passphrases allowed across all attempts per [`FAILURE_WINDOW`].
const WRONG_PER_WINDOW: usize = 10;
const FAILURE_WINDOW: Duration = Duration::from_secs(10 * 60);

/// An authorization request waiting for the owner's answer.
#[derive(Debug, Clone)]
pub(super) struct Attempt {
    pub(super) client_id: String,
    pub(super) redirect_uri: String,
    /// Whether the request named its redirect URI (then the exchange must name it too).
    pub(super) redirect_given: bool,
    pub(super) challenge: String,
    pub(super) state: Option<String>,
    /// The most the client asked for.
    pub(super) scope: Access,
    pub(super) resource: String,
    pub(super) csrf: String,
    pub(super) wrong: u32,
    expires: Instant,
}

/// What a code was issued for.
#[derive(Debug, Clone)]
pub(super) struct Code {
    pub(super) client_id: String,
    pub(super) redirect_uri: String,
    pub(super) redirect_given: bool,
    pub(super) challenge: String,
    pub(super) scope: Access,
    pub(super) resource: String,
    expires: Instant,
}

enum CodeState {
    Fresh(Code),
    /// Spent; the grant its exchange made, if any.
    Spent {
        grant: Option<String>,
        expires: Instant,
    },
}

/// What presenting a code found.
pub(super) enum Presented {
    /// First use of a live code.
    Fresh(Code),
    /// A spent code: the grant to revoke, if its first use made one.
    Reused(Option<String>),
    /// Unknown or expired.
    Unknown,
}

#[derive(Default)]
pub(super) struct Flow {
    attempts: Mutex<HashMap<String, Attempt>>,
    codes: Mutex<HashMap<String, CodeState>>,
    wrong: Mutex<VecDeque<Instant>>,
}

impl Flow {
    /// Keeps a new attempt (the oldest pending one is forgotten when
    /// [`MAX_ATTEMPTS`] wait already); its id.
    pub(super) fn begin(
        &self,
        client_id: String,
        (redirect_uri, redirect_given): (String, bool),
        challenge: String,
        state: Option<String>,
        scope: Access,
        resource: String,
    ) -> Result<(String, Attempt)> {
        let mut attempts = self.attempts.lock().unwrap_or_else(|p| p.into_inner());
        let now = Instant::now();
        attempts.retain(|_, a| a.expires > now);
        if attempts.len() >= MAX_ATTEMPTS
            && let Some(oldest) = attempts.iter().min_by_key(|(_, a)| a.expires).map(|(id, _)| id.clone())
        {
            attempts.remove(&oldest);
        }
        let id = random_text::<24>()?;
        let attempt = Attempt {
            client_id,
            redirect_uri,
            redirect_given,
            challenge,
            state,
            scope,
            resource,
            csrf: random_text::<24>()?,
            wrong: 0,
            expires: now + ATTEMPT_LIFETIME,
        };
        attempts.insert(id.clone(), attempt.clone());
        Ok((id, attempt))
    }

    /// The live attempt `id`.
    pub(super) fn attempt(&self, id: &str) -> Option<Attempt> {
        let attempts = self.attempts.lock().unwrap_or_else(|p| p.into_inner());
        attempts.get(id).filter(|a| a.expires > Instant::now()).cloned()
    }

    /// Forgets the attempt `id` (answered, or void).
    pub(super) fn end(&self, id: &str) {
        self.attempts.lock().unwrap_or_else(|p| p.into_inner()).remove(id);
    }

    /// Counts a wrong passphrase for attempt `id`; whether the attempt may go on.
    pub(super) fn wrong_passphrase(&self, id: &str) -> bool {
        self.wrong.lock().unwrap_or_else(|p| p.into_inner()).push_back(Instant::now());
        let mut attempts = self.attempts.lock().unwrap_or_else(|p| p.into_inner());
        let Some(attempt) = attempts.get_mut(id) else { return false };
        attempt.wrong += 1;
        if attempt.wrong >= WRONG_PER_ATTEMPT {
            attempts.remove(id);
            return false;
        }
        true
    }

    /// When wrong passphrases are over the window's limit, how long until one falls out.
    pub(super) fn locked_for(&self) -> Option<Duration> {
        let mut wrong = self.wrong.lock().unwrap_or_else(|p| p.into_inner());
        let now = Instant::now();
        while wrong.front().is_some_and(|t| now.duration_since(*t) > FAILURE_WINDOW) {
            wrong.pop_front();
        }
        (wrong.len() >= WRONG_PER_WINDOW).then(|| {
            wrong.front().map_or(FAILURE_WINDOW, |t| FAILURE_WINDOW.saturating_sub(now.duration_since(*t)))
        })
    }

    /// Issues a code for an attempt the owner allowed.
    pub(super) fn issue_code(&self, attempt: &Attempt, scope: Access) -> Result<String> {
        let code = random_text::<32>()?;
        let mut codes = self.codes.lock().unwrap_or_else(|p| p.into_inner());
        let now = Instant::now();
        codes.retain(|_, c| match c {
            CodeState::Fresh(code) => code.expires > now,
            CodeState::Spent { expires, .. } => *expires > now,
        });
        codes.insert(
            token_hash(&code),
            CodeState::Fresh(Code {
                client_id: attempt.client_id.clone(),
                redirect_uri: attempt.redirect_uri.clone(),
                redirect_given: attempt.redirect_given,
                challenge: attempt.challenge.clone(),
                scope,
                resource: attempt.resource.clone(),
                expires: now + CODE_LIFETIME,
            }),
        );
        Ok(code)
    }

    /// Presents a code: it is spent from now on, whatever follows.
    pub(super) fn present(&self, code: &str) -> Presented {
        let mut codes = self.codes.lock().unwrap_or_else(|p| p.into_inner());
        let key = token_hash(code);
        let now = Instant::now();
        match codes.get_mut(&key) {
            None => Presented::Unknown,
            Some(CodeState::Spent { grant, .. }) => Presented::Reused(grant.take()),
            Some(state @ CodeState::Fresh(_)) => {
                // Kept spent for a while after its expiry, so a late reuse is still noticed.
                let spent = CodeState::Spent { grant: None, expires: now + ATTEMPT_LIFETIME };
                match std::mem::replace(state, spent) {
                    CodeState::Fresh(code) if code.expires > now => Presented::Fresh(code),
                    _ => Presented::Unknown,
                }
            }
        }
    }

    /// Remembers the grant a code's exchange made, to revoke it if the code comes back.
    pub(super) fn spent_into(&self, code: &str, grant: String) {
        let mut codes = self.codes.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(CodeState::Spent { grant: slot, .. }) = codes.get_mut(&token_hash(code)) {
            *slot = Some(grant);
        }
    }
}

/// Whether a PKCE verifier (RFC 7636: 43 to 128 unreserved characters) matches an S256 challenge.
pub(super) fn pkce_matches(verifier: &str, challenge: &str) -> bool {
    let well_formed = (43..=128).contains(&verifier.len())
        && verifier.bytes().all(|b| b.is_ascii_alphanumeric() || matches!(b, b'-' | b'.' | b'_' | b'~'));
    if !well_formed {
        return false;
    }
    let computed =
        base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(Sha256::digest(verifier.as_bytes()));
    computed.as_bytes().ct_eq(challenge.as_bytes()).into()
}

/// Whether a text is a well-formed S256 challenge (43 base64url characters).
pub(super) fn is_challenge(text: &str) -> bool {
    text.len() == 43 && text.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_')
}

/// The highest level among space-separated scopes; `None` for an unknown
/// scope. No scope at all means `read`.
pub(super) fn parse_scope(text: Option<&str>) -> Option<Access> {
    let mut highest = Access::Read;
    for word in text.unwrap_or("").split_ascii_whitespace() {
        highest = highest.max(Access::parse(word)?);
    }
    Some(highest)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pkce_s256_matches_rfc_7636_appendix_b() {
        let verifier = "dBjftJeZ4CVP-mB92K27uhbUJU1p1r_wW1gFWFOEjXk";
        let challenge = "E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM";
        assert!(is_challenge(challenge));
        assert!(pkce_matches(verifier, challenge));
        assert!(!pkce_matches("dBjftJeZ4CVP-mB92K27uhbUJU1p1r_wW1gFWFOEjXK", challenge));
        assert!(!pkce_matches("short", challenge));
    }

    #[test]
    fn scopes_name_the_highest_level_asked_for() {
        assert_eq!(parse_scope(None), Some(Access::Read));
        assert_eq!(parse_scope(Some("read propose")), Some(Access::Propose));
        assert_eq!(parse_scope(Some("apply read")), Some(Access::Apply));
        assert_eq!(parse_scope(Some("read admin")), None);
    }

    #[test]
    fn a_flood_of_attempts_pushes_out_the_oldest_and_never_refuses() {
        let flow = Flow::default();
        let begin = |client: &str| {
            flow.begin(
                client.into(),
                ("https://a/cb".into(), true),
                "x".repeat(43),
                None,
                Access::Read,
                "r".into(),
            )
            .unwrap()
            .0
        };
        let first = begin("first");
        std::thread::sleep(Duration::from_millis(2));
        let owner = begin("owner");
        for n in 0..MAX_ATTEMPTS - 2 {
            begin(&format!("stranger-{n}"));
        }
        assert!(flow.attempt(&first).is_some() && flow.attempt(&owner).is_some(), "room for all");
        let newest = begin("one more");
        assert!(flow.attempt(&first).is_none(), "the oldest made room");
        assert!(flow.attempt(&owner).is_some() && flow.attempt(&newest).is_some());
        assert_eq!(flow.attempts.lock().unwrap().len(), MAX_ATTEMPTS);
    }

    #[test]
    fn a_code_is_spent_by_its_first_use() {
        let flow = Flow::default();
        let (id, attempt) = flow
            .begin("c".into(), ("https://a/cb".into(), true), "x".repeat(43), None, Access::Read, "r".into())
            .unwrap();
        assert!(flow.attempt(&id).is_some());
        let code = flow.issue_code(&attempt, Access::Read).unwrap();
        assert!(matches!(flow.present(&code), Presented::Fresh(_)));
        flow.spent_into(&code, "g".into());
        assert!(matches!(flow.present(&code), Presented::Reused(Some(g)) if g == "g"));
        assert!(matches!(flow.present("nope"), Presented::Unknown));
    }
}
