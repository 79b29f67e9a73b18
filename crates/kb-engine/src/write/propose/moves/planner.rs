//! The move being planned ([`MovePlanner`]): what moves where, the notes the
//! move affects and their texts, the vault as the move leaves it, and the
//! plan's file operations and summary. Rewriting the links and checking the
//! vault after them is `rewrite.rs`'s.

use std::collections::{BTreeSet, HashMap, HashSet};
use std::sync::Arc;

use rayon::prelude::*;

use super::alias::add_alias;
use super::canvases::{CanvasRewrite, Relinked, staying_canvases};
use super::carry::{Moving, carried_ops, what_moves};
use crate::error::Result;
use crate::sandbox::{NotePath, Sandbox, name_key, strip_md};
use crate::vault::graph::{Broken, Resolution, Resolver};
use crate::vault::{LinkRef, NoteKind, NoteRecord, content_hash, is_canvas, parse_note};
use crate::write::plan::{FileOp, FileOpKind};
use crate::write::propose::view::{VaultView, read_text};

/// A move being planned: what moves where (`carry.rs`), and the vault's
/// notes and attachments before and after it. Each phase of [`plan_move`]
/// is a method: the notes the move affects, their texts, the vault after
/// the move, their links rewritten, the check that no link breaks or leads
/// elsewhere, the file operations and the summary.
pub(crate) struct MovePlanner<'v> {
    pub(crate) sandbox: &'v Sandbox,
    pub(crate) view: &'v VaultView<'v>,
    /// `from` and `to` as given (a folder's with its slash).
    pub(crate) from: &'v str,
    pub(crate) to: &'v str,
    /// Whether a renamed note keeps its old name as an alias.
    pub(crate) keep_alias: bool,
    /// What moves.
    pub(crate) moving: Moving,
    /// Where each moved note goes, by its path now.
    pub(crate) moved: HashMap<String, String>,
    /// Where each file a folder move carries goes, by its path now.
    pub(crate) carried: HashMap<String, String>,
    /// The attachments after the move, sorted.
    pub(crate) attachments_after: Vec<String>,
    /// Each attachment's index in `attachments_after`, by its index now.
    pub(crate) attachment_position: Vec<usize>,
    /// Each note's index in `view.records`, by path.
    pub(crate) index_of: HashMap<&'v str, usize>,
}

/// The vault after the move (its notes' records, in path order) and where
/// a link leads in it.
pub(crate) struct After {
    pub(crate) records: Vec<Arc<NoteRecord>>,
    pub(crate) resolver: Resolver,
}

/// Where a resolution leads: a note's path (a link missing only its heading
/// or block leads to its note), an attachment's, or nowhere.
pub(crate) fn path_of(
    resolution: Resolution,
    records: &[Arc<NoteRecord>],
    attachments: &[String],
) -> Option<String> {
    match resolution {
        Resolution::Note(i) | Resolution::Broken(Broken::MissingHeading(i) | Broken::MissingBlock(i)) => {
            Some(records[i as usize].path.clone())
        }
        Resolution::Attachment(a) => attachments.get(a as usize).cloned(),
        Resolution::Broken(_) => None,
    }
}

impl<'v> MovePlanner<'v> {
    /// What moves where, every destination checked, and where the
    /// attachments are after the move.
    pub(crate) fn new(
        sandbox: &'v Sandbox,
        view: &'v VaultView<'v>,
        from: &'v str,
        to: &'v str,
        keep_alias: bool,
    ) -> Result<Self> {
        let moving = what_moves(sandbox, view, from, to)?;
        let moved = moving.notes.iter().cloned().collect();
        let carried = moving.files.iter().cloned().collect();
        let index_of = view.records.iter().enumerate().map(|(i, r)| (r.path.as_str(), i)).collect();
        let mut planner = MovePlanner {
            sandbox,
            view,
            from,
            to,
            keep_alias,
            moving,
            moved,
            carried,
            attachments_after: Vec::new(),
            attachment_position: Vec::new(),
            index_of,
        };
        let mut attachments_after: Vec<String> =
            view.attachments.iter().map(|path| planner.new_path(path)).collect();
        attachments_after.sort();
        planner.attachment_position = view
            .attachments
            .iter()
            .map(|path| attachments_after.binary_search(&planner.new_path(path)).unwrap_or(usize::MAX))
            .collect();
        planner.attachments_after = attachments_after;
        Ok(planner)
    }

    /// Where a file that moves goes (notes and carried files alike).
    pub(crate) fn moved_to(&self, path: &str) -> Option<String> {
        self.moved.get(path).or_else(|| self.carried.get(path)).cloned()
    }

    /// Where a path is after the move.
    pub(crate) fn new_path(&self, path: &str) -> String {
        self.moved_to(path).unwrap_or_else(|| path.to_owned())
    }

    /// The notes whose links may need rewriting: the moved ones, the ones
    /// linking to them, and the ones linking by a bare name a moved note
    /// takes on: to a note of that name, or to a note that has it as an
    /// alias (a file name wins over an alias, so `[[x]]` meaning the note
    /// aliased `x` would lead to a note moved to `x.md`).
    pub(crate) fn affected(&self) -> BTreeSet<usize> {
        let view = self.view;
        let mut affected: BTreeSet<usize> = BTreeSet::new();
        let mut new_stems: BTreeSet<String> = BTreeSet::new();
        let mut watched: HashSet<u32> = HashSet::new();
        for (old, new) in &self.moving.notes {
            let index = self.index_of[old.as_str()];
            affected.insert(index);
            watched.insert(u32::try_from(index).unwrap_or(u32::MAX));
            new_stems.insert(name_key(strip_md(new.rsplit('/').next().unwrap_or(new))));
        }
        // A canvas that moves is a note that moves: its record follows it,
        // and links to it follow it too.
        for (old, new) in &self.moving.files {
            if let Some(&index) = self.index_of.get(old.as_str()).filter(|_| is_canvas(old)) {
                affected.insert(index);
                watched.insert(u32::try_from(index).unwrap_or(u32::MAX));
                new_stems.insert(name_key(new.rsplit('/').next().unwrap_or(new)));
            }
        }
        for (index, record) in view.records.iter().enumerate() {
            let named = |name: &str| new_stems.contains(&name_key(name.trim()));
            if named(record.stem()) || record.aliases.iter().any(|alias| named(alias)) {
                watched.insert(u32::try_from(index).unwrap_or(u32::MAX));
            }
        }
        // Only notes are rewritten: a standard or a `read_also` file is
        // read-only, so a link of one that the move would change refuses the
        // move ([`MovePlanner::check`]).
        let writable = |index: usize| view.records[index].kind == NoteKind::Note;
        for &index in &watched {
            affected.extend(
                view.graph.backlinks(index as usize).iter().map(|b| b.from as usize).filter(|&i| writable(i)),
            );
        }
        // A link to a watched note naming a heading or block it lacks is
        // broken, so not among its backlinks, yet leads to it: it must follow
        // it all the same (left alone, `[[dup#h]]` could fall to another `dup`
        // and count as mended). A link to a carried attachment, or by the name
        // of one (another file of that name may answer it once this one
        // moves), follows it too.
        let carried_names: HashSet<String> = self
            .moving
            .files
            .iter()
            .map(|(old, _)| name_key(old.rsplit('/').next().unwrap_or(old)))
            .collect();
        let names_carried = |attachment: u32| {
            view.attachments.get(attachment as usize).is_some_and(|path| {
                self.carried.contains_key(path.as_str())
                    || carried_names.contains(&name_key(path.rsplit('/').next().unwrap_or(path)))
            })
        };
        for from in 0..view.records.len() {
            let follows = view.graph.outlinks(from).iter().any(|resolution| match *resolution {
                Resolution::Broken(Broken::MissingHeading(to) | Broken::MissingBlock(to)) => {
                    watched.contains(&to)
                }
                Resolution::Attachment(attachment) => names_carried(attachment),
                _ => false,
            });
            if follows && writable(from) {
                affected.insert(from);
            }
        }
        affected
    }

    /// Each affected note's text, read in parallel: a hub's move reads
    /// thousands of notes.
    pub(crate) fn read(&self, affected: &BTreeSet<usize>) -> Result<HashMap<usize, String>> {
        affected
            .par_iter()
            .map(|&index| Ok((index, read_text(self.sandbox, self.view, &self.view.records[index].path)?)))
            .collect()
    }

    /// A moved note's text with its old name as an alias (when asked to keep it).
    pub(crate) fn with_alias(&self, index: usize, text: &str) -> Result<String> {
        let old = &self.view.records[index].path;
        match self.moved.get(old.as_str()) {
            Some(new) if self.keep_alias => {
                add_alias(old, text, strip_md(old.rsplit('/').next().unwrap_or(old)), new)
            }
            _ => Ok(text.to_owned()),
        }
    }

    /// The record of note `index` after the move, holding `text`.
    fn record_of(&self, index: usize, text: &str) -> Result<Arc<NoteRecord>> {
        let old = &self.view.records[index];
        if self.moved_to(&old.path).is_none() && content_hash(text.as_bytes()) == old.hash {
            // The very bytes the record was made from, at the same path.
            return Ok(Arc::clone(old));
        }
        let path = NotePath::parse(&self.new_path(&old.path))?;
        let note = parse_note(&path, text);
        Ok(Arc::new(NoteRecord::from_note(
            note,
            old.kind,
            old.size,
            old.modified_ns,
            old.born_ns,
            old.hash.clone(),
        )))
    }

    /// The vault after the move with the notes in `staged` holding those
    /// texts (parsed in parallel, the others shared), and its resolver: only
    /// where links lead is asked of it, not a whole graph of every link resolved.
    pub(crate) fn after(&self, staged: &HashMap<usize, String>) -> Result<After> {
        let (records, _) = self.records_after(staged)?;
        let resolver = Resolver::new(&records, &self.attachments_after);
        Ok(After { records, resolver })
    }

    /// [`MovePlanner::after`] without its resolver: the records in path
    /// order, and each one's place among them by its index in the view.
    pub(crate) fn records_after(
        &self,
        staged: &HashMap<usize, String>,
    ) -> Result<(Vec<Arc<NoteRecord>>, Vec<usize>)> {
        let mut parsed: HashMap<usize, Arc<NoteRecord>> = staged
            .par_iter()
            .map(|(&index, text)| Ok((index, self.record_of(index, text)?)))
            .collect::<Result<_>>()?;
        let mut records: Vec<(Arc<NoteRecord>, usize)> = Vec::with_capacity(self.view.records.len());
        for (index, record) in self.view.records.iter().enumerate() {
            let record = parsed.remove(&index).unwrap_or_else(|| Arc::clone(record));
            records.push((record, index));
        }
        records.sort_by(|a, b| a.0.path.cmp(&b.0.path));
        let mut position = vec![0usize; records.len()];
        for (at, (_, index)) in records.iter().enumerate() {
            position[*index] = at;
        }
        Ok((records.into_iter().map(|(record, _)| record).collect(), position))
    }

    /// Where `link` leads in the vault `after` the move.
    pub(crate) fn lead(&self, after: &After, link: LinkRef<'_>) -> Option<String> {
        let resolution = after.resolver.lead(&after.records, &self.attachments_after, link);
        path_of(resolution, &after.records, &self.attachments_after)
    }

    /// The plan's file operations: every moved note (its text before and
    /// after), every other note rewritten, the files a folder move carries,
    /// then the canvases that stay and name a moved file; and how many
    /// canvases are rewritten.
    pub(crate) fn file_ops(
        &self,
        affected: &BTreeSet<usize>,
        texts: &HashMap<usize, String>,
        staged: &HashMap<usize, String>,
    ) -> Result<(Vec<FileOp>, usize)> {
        let mut files = Vec::new();
        for (old, new) in &self.moving.notes {
            let index = self.index_of[old.as_str()];
            files.push(FileOp {
                op: FileOpKind::Move,
                path: old.clone(),
                to: Some(new.clone()),
                before: Some(texts[&index].clone()),
                after: Some(staged[&index].clone()),
                kept: None,
                sha256: None,
            });
        }
        for &index in affected {
            let path = &self.view.records[index].path;
            // Canvases are written by `carried_ops` and `staying_canvases`.
            if self.moved.contains_key(path.as_str()) || staged[&index] == texts[&index] || is_canvas(path) {
                continue;
            }
            files.push(FileOp {
                op: FileOpKind::Write,
                path: path.clone(),
                to: None,
                before: Some(texts[&index].clone()),
                after: Some(staged[&index].clone()),
                kept: None,
                sha256: None,
            });
        }
        let moved_to = |path: &str| self.moved_to(path);
        // The canvases whose text nodes' links were rewritten too: their texts before and after.
        let relinked: Relinked<'_> = affected
            .iter()
            .filter(|&&index| is_canvas(&self.view.records[index].path))
            .map(|&index| (self.view.records[index].path.as_str(), (&texts[&index], &staged[&index])))
            .collect();
        let rewrite = CanvasRewrite { moved: &moved_to, relinked: &relinked };
        files.extend(carried_ops(self.sandbox, self.view, &self.moving.files, &rewrite)?);
        let canvases =
            staying_canvases(self.sandbox, self.view, &|path| self.carried.contains_key(path), &rewrite)?;
        let canvases_rewritten = canvases.len()
            + files
                .iter()
                .filter(|op| op.op == FileOpKind::Move && is_canvas(&op.path) && op.before != op.after)
                .count();
        files.extend(canvases);
        Ok((files, canvases_rewritten))
    }

    /// The plan's summary line: what moves where, and what it rewrites.
    pub(crate) fn summary(
        &self,
        notes: u32,
        links: u32,
        canvases_rewritten: usize,
        ambiguous: usize,
    ) -> String {
        let moves = &self.moving.notes;
        let plural = |n: usize, noun: &str| format!("{n} {noun}{}", if n == 1 { "" } else { "s" });
        let mut rewrite =
            format!("rewrite {} in {}", plural(links as usize, "link"), plural(notes as usize, "note"));
        if canvases_rewritten > 0 {
            let canvases = if canvases_rewritten == 1 { "canvas" } else { "canvases" };
            rewrite.push_str(&format!(" and {canvases_rewritten} {canvases}"));
        }
        if ambiguous > 0 {
            rewrite.push_str(&format!(", {} will become ambiguous", plural(ambiguous, "link")));
        }
        match (moves.as_slice(), self.moving.files.as_slice()) {
            ([(old, new)], []) if old.ends_with(".md") && self.from.ends_with(".md") => {
                format!("move {old} → {new}, {rewrite}")
            }
            ([], [(old, new)]) if is_canvas(self.from) => format!("move {old} → {new}, {rewrite}"),
            _ => {
                let mut what = plural(moves.len(), "note");
                if !self.moving.files.is_empty() {
                    what.push_str(&format!(", {}", plural(self.moving.files.len(), "other file")));
                }
                format!(
                    "move folder {} → {} ({what}), {rewrite}",
                    self.from.trim_end_matches('/'),
                    self.to.trim_end_matches('/')
                )
            }
        }
    }
}
