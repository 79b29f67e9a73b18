//! `kb.toml`: the optional vault configuration.

use crate::error::Result;
use crate::sandbox::Policy;

/// Size limits from `[limits]`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limits {
    /// Largest file `read_note` returns in one call, in bytes (default 262144).
    pub read_max_bytes: u64,
    /// Largest proposal, in bytes (default 2097152).
    pub proposal_max_bytes: u64,
}

impl Default for Limits {
    fn default() -> Self {
        Limits { read_max_bytes: 262_144, proposal_max_bytes: 2_097_152 }
    }
}

/// The parsed configuration.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct VaultConfig {
    /// Folders and deny rules.
    pub policy: Policy,
    /// The tag registry note (`[tags] registry`), if any.
    pub tag_registry: Option<String>,
    /// Size limits.
    pub limits: Limits,
}

impl VaultConfig {
    /// Parses `kb.toml` text. `invalid_argument` naming the bad key for unknown keys,
    /// wrong types or unsafe folder names; `None` text gives the defaults.
    pub fn parse(text: Option<&str>) -> Result<VaultConfig> {
        let _ = text;
        todo!()
    }
}
