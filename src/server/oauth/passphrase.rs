//! The owner's passphrase: hashed with Argon2id (the `argon2` crate's
//! defaults: 19 MiB, two passes) under a random salt, checked the same way.
//! A slow, memory-hard hash makes each guess at a stolen state file cost
//! real work; guesses at the consent page are also capped (see
//! [`super::flow`]).

use argon2::Argon2;
use argon2::password_hash::{PasswordHash, PasswordHasher, PasswordVerifier, SaltString};

use crate::error::{Error, Result};

/// The PHC string of `passphrase` under a fresh random salt.
pub(super) fn hash(passphrase: &str) -> Result<String> {
    let mut salt = [0u8; 16];
    getrandom::fill(&mut salt).map_err(|err| Error::internal(format!("no randomness available: {err}")))?;
    let salt =
        SaltString::encode_b64(&salt).map_err(|err| Error::internal(format!("encoding a salt: {err}")))?;
    Argon2::default()
        .hash_password(passphrase.as_bytes(), &salt)
        .map(|hash| hash.to_string())
        .map_err(|err| Error::internal(format!("hashing the passphrase: {err}")))
}

/// Whether `passphrase` matches the stored PHC string (false when it is malformed).
pub(super) fn verify(passphrase: &str, stored: &str) -> bool {
    PasswordHash::new(stored)
        .is_ok_and(|hash| Argon2::default().verify_password(passphrase.as_bytes(), &hash).is_ok())
}

#[cfg(test)]
mod tests {
    #[test]
    fn a_passphrase_verifies_against_its_hash_only() {
        let stored = super::hash("correct horse battery").unwrap();
        assert!(stored.starts_with("$argon2id$"));
        assert!(super::verify("correct horse battery", &stored));
        assert!(!super::verify("correct horse batterY", &stored));
        assert!(!super::verify("x", "not a hash"));
    }
}
