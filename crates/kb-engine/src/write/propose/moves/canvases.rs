//! The canvases a move touches (`.canvas`, JSON Canvas): a file node names
//! a file by its vault path, so when that file moves the node must name its
//! new path, or the board shows a missing file.
//!
//! Only those strings change ([`canvas_moved`]), and the targets of the
//! links written in its text nodes that the relinking rewrites (`rewrite.rs`,
//! inside their JSON strings): the JSON keeps its key order, spacing and
//! every other byte. A canvas under a moved folder moves
//! with it, its text rewritten the same way; any other canvas of a notes root
//! naming a moved file is rewritten in place. A canvas that is not UTF-8 JSON
//! is carried as bytes and rewritten nowhere (there is nothing it can be
//! read to name).

use std::collections::HashMap;

use crate::error::Result;
use crate::sandbox::{Area, NotePath, Sandbox};
use crate::vault::{canvas_moved, is_canvas};
use crate::write::plan::{FileOp, FileOpKind};
use crate::write::propose::view::VaultView;

/// Largest canvas read.
const CANVAS_MAX_BYTES: u64 = 64 << 20;

/// A canvas's text: from a batch's earlier items when they changed it, else
/// its file; `None` when it is not UTF-8 (or too large to be a board).
pub(super) fn canvas_text(sandbox: &Sandbox, view: &VaultView<'_>, path: &str) -> Result<Option<String>> {
    if let Some(text) = view.texts.and_then(|texts| texts.get(path)) {
        return Ok(Some(text.clone()));
    }
    let path = NotePath::parse(path)?;
    match sandbox.read_plan_file(&path, CANVAS_MAX_BYTES) {
        Ok(bytes) => Ok(String::from_utf8(bytes).ok()),
        Err(err) if err.code == crate::error::ErrorCode::TooLarge => Ok(None),
        Err(err) => Err(err),
    }
}

/// The canvases' texts before and after the rewrite of their links, by
/// path: those the move's relinking read (`rewrite.rs`).
pub(super) type Relinked<'a> = HashMap<&'a str, (&'a String, &'a String)>;

/// How a move rewrites a canvas: as relinked (its text nodes' links and its
/// file nodes), or, for one the relinking did not read, its file nodes
/// pointed where their files go (`moved` gives a moved file's new path).
pub(super) struct CanvasRewrite<'a> {
    pub(super) moved: &'a (dyn Fn(&str) -> Option<String> + Sync),
    pub(super) relinked: &'a Relinked<'a>,
}

impl CanvasRewrite<'_> {
    /// The canvas `path`'s text `text` rewritten; `None` when nothing changes.
    pub(super) fn after(&self, path: &str, text: &str) -> Option<String> {
        match self.relinked.get(path) {
            Some((before, after)) if before.as_str() == text => {
                (after.as_str() != text).then(|| (*after).clone())
            }
            _ => canvas_moved(text, self.moved),
        }
    }
}

/// The canvases of the notes roots that stay where they are (`moving`: what
/// the move carries aside) and name a file that moves or link to a note
/// that does, each rewritten in place.
pub(super) fn staying_canvases(
    sandbox: &Sandbox,
    view: &VaultView<'_>,
    moving: &dyn Fn(&str) -> bool,
    rewrite: &CanvasRewrite<'_>,
) -> Result<Vec<FileOp>> {
    use rayon::prelude::*;
    let canvases: Vec<&String> = view
        .attachments
        .iter()
        .filter(|path| is_canvas(path) && !moving(path))
        .filter(|path| {
            NotePath::parse(path).is_ok_and(|path| sandbox.policy().carried_area(&path) == Some(Area::Note))
        })
        .collect();
    let ops: Vec<Option<FileOp>> = canvases
        .par_iter()
        .map(|path| {
            let Some(text) = canvas_text(sandbox, view, path)? else { return Ok(None) };
            Ok(rewrite.after(path, &text).map(|after| FileOp {
                op: FileOpKind::Write,
                path: (*path).clone(),
                to: None,
                before: Some(text),
                after: Some(after),
                kept: None,
                sha256: None,
            }))
        })
        .collect::<Result<_>>()?;
    Ok(ops.into_iter().flatten().collect())
}
