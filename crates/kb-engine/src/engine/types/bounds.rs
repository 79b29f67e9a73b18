//! Numeric arguments' defaults and ranges, declared once: the JSON Schema,
//! the argument's description and the engine's check all read them.

use crate::error::{Error, Result};

/// A numeric argument's default and accepted range, declared once: the JSON
/// Schema's `minimum` and `maximum`, the argument's description and the engine's
/// check all read it, so they cannot disagree.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Bound {
    /// Used when the argument is left out.
    pub default: u32,
    /// Smallest accepted value.
    pub min: u32,
    /// Largest accepted value.
    pub max: u32,
}

impl Bound {
    /// The value given, or the default; `invalid_argument` naming `name` and the
    /// range when it is outside.
    pub fn check(&self, name: &str, value: Option<u32>) -> Result<u32> {
        let value = value.unwrap_or(self.default);
        if (self.min..=self.max).contains(&value) {
            Ok(value)
        } else {
            Err(Error::invalid(format!(
                "`{name}` is {value}; it must be between {} and {}",
                self.min, self.max
            )))
        }
    }

    /// `"{what} (default {default})."`, a count's description: the range is
    /// the schema's `minimum` and `maximum`, which clients show beside it.
    pub(super) fn how_many(&self, what: &str) -> String {
        format!("{what} (default {}).", self.default)
    }
}

/// `limit` of the two searches.
pub const SEARCH_LIMIT: Bound = Bound { default: 10, min: 1, max: 50 };

/// `limit` of `list_tags`.
pub const TAGS_LIMIT: Bound = Bound { default: 100, min: 1, max: 1000 };

/// `days` of `list_recent_notes`.
pub const RECENT_DAYS: Bound = Bound { default: 7, min: 1, max: 36500 };

/// `limit` of `list_recent_notes`.
pub const RECENT_LIMIT: Bound = Bound { default: 20, min: 1, max: 200 };

/// `limit` of `list_proposals`.
pub const PROPOSALS_LIMIT: Bound = Bound { default: 50, min: 1, max: 500 };
/// `limit` of `list_notes`.
pub const LIST_NOTES_LIMIT: Bound = Bound { default: 50, min: 1, max: 200 };

/// `budget_tokens` of `recall_context`.
pub const RECALL_BUDGET: Bound = Bound { default: 4000, min: 200, max: 32000 };

/// `limit` of `audit_vault`.
pub const AUDIT_LIMIT: Bound = Bound { default: 100, min: 1, max: 500 };

/// `limit` of `list_history`.
pub const HISTORY_LIMIT: Bound = Bound { default: 20, min: 1, max: 100 };
