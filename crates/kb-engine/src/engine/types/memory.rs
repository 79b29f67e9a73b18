//! `remember` and the agent's memory as the other tools show it (issue 39):
//! who is remembering ([`Principal`]), what about, and what came of it.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// What an entry is about.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum MemoryAbout {
    /// The person: their preferences, plans, circumstances.
    Person,
    /// The vault: its conventions, where things are.
    Vault,
}

impl MemoryAbout {
    /// `person` or `vault`: also the entry's folder inside the memory.
    pub fn as_str(self) -> &'static str {
        match self {
            MemoryAbout::Person => "person",
            MemoryAbout::Vault => "vault",
        }
    }
}

/// `remember` arguments.
#[derive(Debug, Clone, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RememberArgs {
    /// `person` (kept for this connection's principal) or `vault`.
    pub about: MemoryAbout,
    /// One fact, in a sentence or a few (at most 4,096 bytes).
    pub text: String,
    /// A word or two to file it under (`preference`, `deadline`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub category: Option<String>,
}

/// `remember` result.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema, PartialEq)]
pub struct Remembered {
    /// The entry's note (the person reads, edits and deletes it like any note).
    pub path: String,
    /// `person` or `vault`.
    pub about: MemoryAbout,
    /// When (RFC 3339).
    pub at: String,
    /// Entries in this memory now, and its cap.
    pub entries: u64,
    /// The cap on entries.
    pub entries_max: u64,
}

/// The memory a caller may read, counted, in the overview.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema, PartialEq)]
pub struct MemoryCounts {
    /// The memory folder.
    pub folder: String,
    /// False when the person turned it off (`[memory] enabled = false`).
    pub enabled: bool,
    /// Entries about the person this connection may read.
    pub person: u64,
    /// Entries about the vault.
    pub vault: u64,
}

/// Who is remembering or reading the memory: an HTTP token's name
/// (`oauth:<client>` for an OAuth client), or `local` (stdio and the CLI).
/// What one principal remembers about the person, another does not read
/// unless `[memory] share_person` names both.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Principal(String);

impl Principal {
    /// The principal of stdio connections and of the person's CLI.
    pub fn local() -> Principal {
        Principal("local".to_owned())
    }

    /// An HTTP token's (or OAuth client's) principal.
    pub fn named(name: &str) -> Principal {
        Principal(name.to_owned())
    }

    /// The name.
    pub fn name(&self) -> &str {
        &self.0
    }
}
