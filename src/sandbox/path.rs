//! [`NotePath`]: a vault-relative path that passed every lexical check.

use std::fmt;

use serde::Serialize;

use crate::error::Result;

/// A vault-relative path with forward slashes, validated once at the edge.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize)]
#[serde(transparent)]
pub struct NotePath(String);

impl NotePath {
    /// Validates an outside string. `path_denied` for every hostile form of the
    /// contract, `invalid_argument` for an empty string.
    pub fn parse(input: &str) -> Result<NotePath> {
        let _ = input;
        todo!()
    }

    /// The path as text, e.g. `z/备份仓库.md`.
    pub fn as_str(&self) -> &str {
        &self.0
    }

    /// The last segment, e.g. `备份仓库.md`.
    pub fn file_name(&self) -> &str {
        self.0.rsplit('/').next().unwrap_or(&self.0)
    }

    /// The file name without its `.md` extension (any case), e.g. `备份仓库`.
    pub fn stem(&self) -> &str {
        let name = self.file_name();
        match name.len().checked_sub(3) {
            Some(cut) if name.is_char_boundary(cut) && name[cut..].eq_ignore_ascii_case(".md") => &name[..cut],
            _ => name,
        }
    }

    /// The parent folder, `""` at the top level.
    pub fn parent(&self) -> &str {
        self.0.rsplit_once('/').map_or("", |(parent, _)| parent)
    }

    /// Whether the file name ends in `.md` (any case).
    pub fn is_markdown(&self) -> bool {
        self.stem().len() != self.file_name().len()
    }
}

impl fmt::Display for NotePath {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}
