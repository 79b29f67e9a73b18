//! Planning a move (`propose_move`): which notes move where, which links must
//! be rewritten so that they still lead where they led, and what the vault
//! looks like afterwards. What moves is `carry.rs`'s to say: one note, or a
//! folder's notes, other files (attachments, canvases, hidden files) and
//! folders. Links to a moved attachment (`![[x.png]]`, `![](x.png)`) are
//! rewritten like links to a note, and canvases naming a moved file are
//! rewritten (`canvases.rs`).
//!
//! [`plan_move`] runs the phases of a `MovePlanner` (`planner.rs`) in order:
//! what moves, the notes it affects and their texts, the vault after the move;
//! then `rewrite.rs` rewrites their links (each link's new bytes written in
//! its own form by `relink.rs`, a renamed note's old name kept as an alias by
//! `alias.rs`) and checks the vault they leave; `ambiguous.rs` names the links
//! the move leaves leading where they led but makes ambiguous.
//!
//! A link is rewritten only when, after the move, it would no longer lead to
//! the same note or file it leads to now: `[[a]]` stays `[[a]]` when `a` is
//! still the shortest unique name of the moved note, and a link by alias is
//! left alone; a link by another note's alias that a moved note's new name
//! would take is rewritten to that note, showing the same text (`[[x]]` →
//! `[[b|x]]`). Links inside moved notes are judged from their new folder, so
//! relative Markdown links are fixed. The plan is then checked against the
//! vault as it would be: the count of broken links must not grow. That count
//! is exact but resolves again only the links whose resolution can change
//! ([`Graph::after_change`]), and no link of a note it does not rewrite may come to
//! lead elsewhere; debug builds check the count against a whole new graph.

mod alias;
mod ambiguous;
mod canvases;
mod carry;
mod planner;
mod relink;
mod rewrite;

pub use relink::{LinkEdit, apply_link_edits, relink};

use ambiguous::{newly_ambiguous, remarks};
use planner::MovePlanner;

use crate::error::Result;
use crate::sandbox::Sandbox;
use crate::write::plan::{FolderMove, PLAN_SCHEMA, Plan};
use crate::write::propose::view::{Break, VaultView};

/// A planned move.
#[derive(Debug, Clone)]
pub struct MovePlan {
    /// Every note that moves, `(from, to)`.
    pub moves: Vec<(String, String)>,
    /// Every other file a folder move carries, `(from, to)`.
    pub carried: Vec<(String, String)>,
    /// Notes whose links are rewritten (moved ones included).
    pub notes: u32,
    /// Links rewritten.
    pub links: u32,
    /// Links of other notes left leading where they led whose bare name the
    /// move gives a second note (`leads_to`: the note they still lead to).
    pub ambiguous: Vec<Break>,
    /// The file operations.
    pub plan: Plan,
}

/// Plans moving a note or a folder (see the module docs), one phase of
/// `MovePlanner` after the other.
pub fn plan_move(
    sandbox: &Sandbox,
    view: &VaultView<'_>,
    from: &str,
    to: &str,
    keep_alias: bool,
) -> Result<MovePlan> {
    let planner = MovePlanner::new(sandbox, view, from, to, keep_alias)?;
    let affected = planner.affected();
    let texts = planner.read(&affected)?;
    // Judged without the old names as aliases: a link by the old name is
    // rewritten, not left to resolve through the alias.
    let moved = planner.after(&texts)?;
    let relinked = planner.relink(&affected, &texts, &moved)?;
    let after = planner.check(&affected, &relinked.texts, moved)?;
    let ambiguous = newly_ambiguous(
        view,
        &planner.moving.notes,
        &after.records,
        &after.resolver,
        &planner.attachments_after,
    );
    let (files, canvases) = planner.file_ops(&affected, &texts, &relinked.texts)?;
    let summary = planner.summary(relinked.notes, relinked.links, canvases, ambiguous.len());
    let folders = planner
        .moving
        .folders
        .iter()
        .map(|(from, to)| FolderMove { from: from.clone(), to: to.clone() })
        .collect();
    let remarks = remarks(&ambiguous);
    Ok(MovePlan {
        moves: planner.moving.notes.clone(),
        carried: planner.moving.files.clone(),
        notes: relinked.notes,
        links: relinked.links,
        ambiguous,
        plan: Plan { schema: PLAN_SCHEMA, summary, files, folders, remarks, linkers: None },
    })
}
