//! Who is calling: the access level a connection (or a token) grants, and the
//! actor an apply or reject is logged under. Both cross the engine boundary:
//! the tools layer admits calls by [`Access`], the overview reports it, the CLI
//! and the tools name the [`Actor`] of an apply.

use serde::{Deserialize, Serialize};

pub use crate::write::Actor;

/// What a caller may do: each level includes the ones before it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Access {
    /// The read tools only.
    Read,
    /// Read, plus staging proposals in the inbox.
    Propose,
    /// Propose, plus applying approved proposals.
    Apply,
}

impl Access {
    /// Every level, lowest first.
    pub const ALL: [Access; 3] = [Access::Read, Access::Propose, Access::Apply];

    /// Parses `read`, `propose` or `apply`.
    pub fn parse(text: &str) -> Option<Access> {
        Access::ALL.into_iter().find(|access| access.as_str() == text)
    }

    /// The level's name.
    pub fn as_str(self) -> &'static str {
        match self {
            Access::Read => "read",
            Access::Propose => "propose",
            Access::Apply => "apply",
        }
    }
}

impl std::fmt::Display for Access {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.pad(self.as_str())
    }
}

/// Who asks for the overview: an MCP connection (or a token) at its access
/// level, or a person at the command line (`kb-index status`), who may do
/// everything. Written as the level's name, or `cli`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Caller {
    /// An agent over MCP, at this access level.
    Agent(Access),
    /// A person through `kb-index`.
    Cli,
}

impl Caller {
    /// `read`, `propose`, `apply` or `cli`.
    pub fn as_str(self) -> &'static str {
        match self {
            Caller::Agent(access) => access.as_str(),
            Caller::Cli => "cli",
        }
    }
}

impl std::fmt::Display for Caller {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.pad(self.as_str())
    }
}

impl Serialize for Caller {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(self.as_str())
    }
}

impl<'de> Deserialize<'de> for Caller {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Caller, D::Error> {
        let text = String::deserialize(deserializer)?;
        match text.as_str() {
            "cli" => Ok(Caller::Cli),
            other => Access::parse(other).map(Caller::Agent).ok_or_else(|| {
                serde::de::Error::custom(format!("unknown caller `{other}`: read, propose, apply or cli"))
            }),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::types::{ApplyStatus, BrokenReason, LinkKind, ProposalKind, ProposalStatus};

    /// Each enum's `name()` (what the text answers print) is its wire string
    /// (what serde writes), and the wire string reads back as the same value.
    #[test]
    fn names_are_wire_strings() {
        fn check<T: Serialize + serde::de::DeserializeOwned + PartialEq + std::fmt::Debug>(
            value: T,
            name: &str,
        ) {
            assert_eq!(serde_json::to_value(&value).unwrap(), name, "{value:?}");
            assert_eq!(serde_json::from_value::<T>(serde_json::json!(name)).unwrap(), value);
        }
        for access in Access::ALL {
            check(access, access.as_str());
            check(Caller::Agent(access), access.as_str());
        }
        check(Caller::Cli, "cli");
        for kind in ProposalKind::ALL {
            check(kind, kind.name());
        }
        for status in [
            ProposalStatus::Pending,
            ProposalStatus::Applied,
            ProposalStatus::Rejected,
            ProposalStatus::Interrupted,
        ] {
            check(status, status.name());
        }
        for status in [ApplyStatus::Applied, ApplyStatus::AppliedIndexFailed] {
            check(status, status.name());
        }
        for kind in
            [LinkKind::Wikilink, LinkKind::Embed, LinkKind::Markdown, LinkKind::Property, LinkKind::Canvas]
        {
            check(kind, kind.name());
        }
        for reason in [BrokenReason::MissingNote, BrokenReason::MissingHeading, BrokenReason::MissingBlock] {
            check(reason, reason.name());
        }
        check(Actor::Mcp, "mcp");
        check(Actor::Cli, "cli");
        check(Actor::ReviewCard, "review_card");
        check(Actor::ReviewPage, "review_page");
        assert_eq!(Access::parse("admin"), None);
    }
}
