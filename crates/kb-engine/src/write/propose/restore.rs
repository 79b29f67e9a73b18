//! Staging a restore (`propose_restore`): a note back to a version its history
//! holds, as a proposal of a kind the person already reviews. A note that
//! exists is patched to the old text (its base: the note as it is now); a note
//! that is gone is created again with it, where it was. The engine reads the
//! history and hands over the old text; nothing here knows git.

use jiff::Timestamp;

use super::note::{check_free, check_size};
use super::stage::{Staged, stage_new, stage_patch};
use crate::error::{Error, ErrorCode, Result};
use crate::sandbox::Sandbox;
use crate::vault::{Limits, decode_note};
use crate::write::text::slug;

/// Stages `past` (the old text) as the note at `path`: a patch when the note
/// exists, a new note when it does not. `invalid_argument` when the note
/// already reads so; the new-note and patch checks otherwise (a path that is no
/// note target, a twin name, a size above the cap).
pub fn propose_restore(
    sandbox: &Sandbox,
    limits: &Limits,
    path: &str,
    past: &str,
    reason: String,
    now: Timestamp,
) -> Result<Staged> {
    let target = sandbox.resolve_note_target(path)?;
    check_size(past, limits)?;
    let cap = limits.proposal_max_bytes.max(limits.read_max_bytes);
    match sandbox.read(&target, cap) {
        Ok(bytes) => {
            if bytes == past.as_bytes() {
                return Err(Error::invalid(format!("{target} already reads exactly like that version"))
                    .with_hint("list_history shows its versions; pick another `at`"));
            }
            let current = decode_note(&bytes).map_err(|diagnostic| {
                Error::invalid(format!("{target} cannot be patched: {}", diagnostic.message))
            })?;
            stage_patch(sandbox, limits, target.clone(), current, past.to_owned(), reason, now)
        }
        Err(err) if err.code == ErrorCode::NotFound => {
            check_free(sandbox, &target)?;
            stage_new(
                sandbox,
                limits,
                target.clone(),
                past.to_owned(),
                &slug::slug(target.stem()),
                reason,
                now,
            )
        }
        Err(err) => Err(err),
    }
}
