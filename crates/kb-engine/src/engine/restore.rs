//! `propose_restore`: a note back to a version its history holds, staged as a
//! patch (or, for a note that is gone, as the note created again) and applied
//! like any proposal. The version is found as `read_note {at}` finds it,
//! through moves; the write layer stages it.

use super::bounded::cap_diff;
use super::types::*;
use super::write::listed;
use super::{Engine, NoteName};
use crate::error::{Error, Result};
use crate::sandbox::{Zone, rfc3339};
use crate::write::{self, FileOpKind};

impl Engine {
    /// `propose_restore` (see the module docs). A note moved away from
    /// `path` is not created again beside itself: the error names where it went.
    pub fn propose_restore(&self, args: &RestoreArgs) -> Result<RestoreResult> {
        let reason = write::required_reason(&args.reason)?;
        let path = self.history_path(&NoteName::Path(args.path.clone()))?;
        // Only where a proposal may write: a standard's history reads, it never restores.
        let sandbox = self.sandbox();
        sandbox.resolve_note_target(path.as_str())?;
        let (_, past) = self.note_at(path.as_str(), &args.at)?;
        let short = &past.commit[..12.min(past.commit.len())];
        let text = past.bytes.and_then(|bytes| String::from_utf8(bytes).ok()).ok_or_else(|| {
            Error::invalid(format!("the version {short} of {path} is not UTF-8 text; it cannot be proposed"))
        })?;
        if sandbox.stat(&path)?.is_none() {
            let store = self.history_store()?;
            let (newest, _) = store.versions(path.as_str(), None, 1)?;
            let moved = newest
                .first()
                .filter(|version| version.bytes.is_none())
                .and_then(|version| version.change.as_ref())
                .and_then(|change| change.moves.iter().find(|(from, _)| from == path.as_str()));
            if let Some((_, to)) = moved {
                return Err(Error::invalid(format!(
                    "{path} was moved to {to}; restoring it here would make a second copy"
                ))
                .with_hint(format!("restore {to} instead: its history goes back through {path}")));
            }
        }
        let at = jiff::Timestamp::from_second(past.time).map(|t| rfc3339(t, Zone::Utc)).unwrap_or_default();
        let staged = write::propose_restore(
            &sandbox,
            &self.config().limits,
            path.as_str(),
            &text,
            format!("{reason} (restores the version {short} of {at})"),
            jiff::Timestamp::now(),
        )?;
        let op = if staged.base_hash.is_some() { FileOpKind::Write } else { FileOpKind::Create };
        let (breaks, redirected) = self.link_effects(op, &staged.target, &staged.text)?;
        let (breaks, redirected, unlisted) = listed(breaks, redirected);
        let id = staged.proposal_id;
        Ok(RestoreResult {
            diff: match staged.diff {
                Some(diff) => cap_diff(diff, &id),
                None => staged.preview,
            },
            proposal_id: id,
            kind: staged.kind,
            target: staged.target,
            commit: past.commit,
            at,
            base_hash: staged.base_hash,
            content_hash: staged.content_hash,
            added: staged.added,
            removed: staged.removed,
            breaks,
            redirected,
            unlisted,
            files: staged.files,
            vault_changed: false,
        })
    }
}
