//! Planning a move (`propose_move`): which notes move where, which links must
//! be rewritten so that they still lead where they led, and what the vault
//! looks like afterwards (a delete's plan, `delete.rs`, shares the vault view).
//! What moves is `carry.rs`'s to say: one note, or a folder's notes, other
//! files (attachments, canvases, hidden files) and folders. Links to a moved
//! attachment (`![[x.png]]`, `![](x.png)`) are rewritten like links to a
//! note, and canvases naming a moved file are rewritten (`canvases.rs`).
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

use std::collections::{BTreeSet, HashMap, HashSet};
use std::sync::Arc;

use rayon::prelude::*;

use serde_json::json;

use super::alias::add_alias;
use super::ambiguous::{newly_ambiguous, remarks};
use super::canvases::staying_canvases;
use super::carry::{Moving, carried_ops, what_moves};
use super::delete::Break;
use super::plan::{FileOp, FileOpKind, FolderMove, PLAN_SCHEMA, Plan};
use super::relink::{
    LinkEdit, apply_link_edits, by_another_name, encoded, keep_shown_text, shortest_suffix, target_edit,
};
use crate::error::{Error, ErrorCode, Result};
use crate::sandbox::{NotePath, Sandbox, name_key, strip_md};
use crate::vault::graph::{Broken, Graph, MovedAttachments, Resolution, Resolver};
use crate::vault::{
    LinkKind, LinkRef, Links, NoteKind, NoteRecord, content_hash, decode_note, is_canvas, note_spans,
    parse_note,
};

/// Largest note a move reads.
const NOTE_MAX_BYTES: u64 = 1 << 30;

/// The vault as the planner sees it: the records (sorted by path), the
/// attachments (sorted) and their graph.
pub struct VaultView<'a> {
    /// Every note's record, sorted by path.
    pub records: &'a [Arc<NoteRecord>],
    /// Every attachment path, sorted.
    pub attachments: &'a [String],
    /// The graph of both.
    pub graph: &'a Graph,
    /// Notes whose text is not the file's (a batch's earlier items changed
    /// them), by path; `None` outside a batch.
    pub texts: Option<&'a HashMap<String, String>>,
}

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

pub(super) fn read_text(sandbox: &Sandbox, view: &VaultView<'_>, path: &str) -> Result<String> {
    if let Some(text) = view.texts.and_then(|texts| texts.get(path)) {
        return Ok(text.clone());
    }
    let note = NotePath::parse(path)?;
    let bytes = sandbox.read(&note, NOTE_MAX_BYTES)?;
    decode_note(&bytes)
        .map(str::to_owned)
        .map_err(|why| Error::invalid(format!("{path} cannot be rewritten: {}", why.message)))
}

/// Plans moving a note or a folder (see the module docs), one phase of
/// [`MovePlanner`] after the other.
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
    let summary = planner.summary(&relinked, canvases, ambiguous.len());
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

/// A move being planned: what moves where (`carry.rs`), and the vault's
/// notes and attachments before and after it. Each phase of [`plan_move`]
/// is a method: the notes the move affects, their texts, the vault after
/// the move, their links rewritten, the check that no link breaks or leads
/// elsewhere, the file operations and the summary.
struct MovePlanner<'v> {
    sandbox: &'v Sandbox,
    view: &'v VaultView<'v>,
    /// `from` and `to` as given (a folder's with its slash).
    from: &'v str,
    to: &'v str,
    /// Whether a renamed note keeps its old name as an alias.
    keep_alias: bool,
    /// What moves.
    moving: Moving,
    /// Where each moved note goes, by its path now.
    moved: HashMap<String, String>,
    /// Where each file a folder move carries goes, by its path now.
    carried: HashMap<String, String>,
    /// The attachments after the move, sorted.
    attachments_after: Vec<String>,
    /// Each attachment's index in `attachments_after`, by its index now.
    attachment_position: Vec<usize>,
    /// Each note's index in `view.records`, by path.
    index_of: HashMap<&'v str, usize>,
}

/// The vault after the move (its notes' records, in path order) and where
/// a link leads in it.
struct After {
    records: Vec<Arc<NoteRecord>>,
    resolver: Resolver,
}

/// The affected notes' texts with their links rewritten (and a moved note's
/// old name as an alias), by index; how many notes and links changed.
struct Relinked {
    texts: HashMap<usize, String>,
    notes: u32,
    links: u32,
}

/// Where a resolution leads: a note's path (a link missing only its heading
/// or block leads to its note), an attachment's, or nowhere.
fn path_of(resolution: Resolution, records: &[Arc<NoteRecord>], attachments: &[String]) -> Option<String> {
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
    fn new(
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
    fn moved_to(&self, path: &str) -> Option<String> {
        self.moved.get(path).or_else(|| self.carried.get(path)).cloned()
    }

    /// Where a path is after the move.
    fn new_path(&self, path: &str) -> String {
        self.moved_to(path).unwrap_or_else(|| path.to_owned())
    }

    /// The notes whose links may need rewriting: the moved ones, the ones
    /// linking to them, and the ones linking by a bare name a moved note
    /// takes on: to a note of that name, or to a note that has it as an
    /// alias (a file name wins over an alias, so `[[x]]` meaning the note
    /// aliased `x` would lead to a note moved to `x.md`).
    fn affected(&self) -> BTreeSet<usize> {
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
    fn read(&self, affected: &BTreeSet<usize>) -> Result<HashMap<usize, String>> {
        affected
            .par_iter()
            .map(|&index| Ok((index, read_text(self.sandbox, self.view, &self.view.records[index].path)?)))
            .collect()
    }

    /// A moved note's text with its old name as an alias (when asked to keep it).
    fn with_alias(&self, index: usize, text: &str) -> Result<String> {
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
        if !self.moved.contains_key(old.path.as_str()) && content_hash(text.as_bytes()) == old.hash {
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
    fn after(&self, staged: &HashMap<usize, String>) -> Result<After> {
        let (records, _) = self.records_after(staged)?;
        let resolver = Resolver::new(&records, &self.attachments_after);
        Ok(After { records, resolver })
    }

    /// [`MovePlanner::after`] without its resolver: the records in path
    /// order, and each one's place among them by its index in the view.
    fn records_after(&self, staged: &HashMap<usize, String>) -> Result<(Vec<Arc<NoteRecord>>, Vec<usize>)> {
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
    fn lead(&self, after: &After, link: LinkRef<'_>) -> Option<String> {
        let resolution = after.resolver.lead(&after.records, &self.attachments_after, link);
        path_of(resolution, &after.records, &self.attachments_after)
    }

    /// Each affected note's links judged on its own (in parallel) in the
    /// vault as the move leaves it (`moved`): its new text and how many of
    /// its links changed.
    fn relink(
        &self,
        affected: &BTreeSet<usize>,
        texts: &HashMap<usize, String>,
        moved: &After,
    ) -> Result<Relinked> {
        let relinked: Vec<(usize, String, usize)> = affected
            .par_iter()
            .map(|&index| {
                let (text, edits) = self.relink_note(index, &texts[&index], moved)?;
                Ok((index, text, edits))
            })
            .collect::<Result<_>>()?;
        let mut done = Relinked { texts: HashMap::with_capacity(relinked.len()), notes: 0, links: 0 };
        for (index, text, edits) in relinked {
            if edits > 0 {
                done.notes += 1;
                done.links = done.links.saturating_add(u32::try_from(edits).unwrap_or(u32::MAX));
            }
            done.texts.insert(index, text);
        }
        Ok(done)
    }

    /// Note `index`'s text (`text`) with every link rewritten that would no
    /// longer lead where it led, each written as the link was (see the module
    /// docs), and a moved note's old name as an alias; and how many links changed.
    fn relink_note(&self, index: usize, text: &str, moved: &After) -> Result<(String, usize)> {
        let view = self.view;
        let old_path = NotePath::parse(&view.records[index].path)?;
        let source = NotePath::parse(&self.new_path(old_path.as_str()))?;
        let old_spans = note_spans(&old_path, text);
        // Spans depend on the note's folder alone: parsed again only when it changes.
        let moved_spans = (old_path.parent() != source.parent()).then(|| note_spans(&source, text));
        let new_spans = moved_spans.as_ref().unwrap_or(&old_spans);
        let outlinks = view.graph.outlinks(index);
        let mut edits: Vec<LinkEdit> = Vec::new();
        for (number, (old, new)) in old_spans.links.iter().zip(&new_spans.links).enumerate() {
            if old.link.target.trim().is_empty() {
                continue;
            }
            let Some(resolution) = outlinks.get(number) else { continue };
            let Some(was) = path_of(*resolution, view.records, view.attachments) else { continue };
            let expected = self.new_path(&was);
            let packed: Links = vec![new.link.clone()].into();
            let Some(link) = packed.get(0) else { continue };
            let now = self.lead(moved, link);
            // A Markdown link names a path: it must name it exactly (case included).
            let exact = new.link.kind != LinkKind::Markdown
                || new.link.target == expected
                || new.link.target == strip_md(&expected);
            // A name written as the note's file name follows a rename (a case-only one too).
            let written = strip_md(old.link.target.rsplit('/').next().unwrap_or(&old.link.target));
            let renamed = old.link.kind != LinkKind::Markdown
                && written == strip_md(was.rsplit('/').next().unwrap_or(&was))
                && written != strip_md(expected.rsplit('/').next().unwrap_or(&expected));
            if now.as_deref() == Some(expected.as_str()) && exact && !renamed {
                continue;
            }
            let expected_path = NotePath::parse(&expected)?;
            let bare = strip_md(expected_path.file_name());
            let bare_link =
                LinkRef { target: bare, anchor: None, display: None, kind: LinkKind::Wikilink, line: 0 };
            let bare_is_unique = self.lead(moved, bare_link).as_deref() == Some(expected.as_str());
            if let Some(mut edit) = target_edit(text, old, &source, &expected_path, bare_is_unique) {
                let wiki = old.span.of(text).trim_start_matches('!').starts_with("[[");
                if wiki && edit.text.contains('/') {
                    edit.text = shortest_suffix(&edit.text, |candidate| {
                        let link = LinkRef {
                            target: candidate,
                            anchor: None,
                            display: None,
                            kind: LinkKind::Wikilink,
                            line: 0,
                        };
                        self.lead(moved, link).as_deref() == Some(expected.as_str())
                    });
                }
                // Written as the link's quotes need (a property's); one that
                // cannot be is left, and the check refuses the move.
                if let Some(mut edit) = encoded(text, old, edit) {
                    if matches!(old.link.kind, LinkKind::Wikilink | LinkKind::Property)
                        && old.display.is_none()
                        && by_another_name(old, &was)
                    {
                        keep_shown_text(text, old, old_spans.in_table(old.span.start), &mut edit);
                    }
                    edits.push(edit);
                }
            }
        }
        let rewritten = apply_link_edits(text, &edits);
        Ok((self.with_alias(index, &rewritten)?, edits.len()))
    }

    /// The vault as the move leaves it, the links rewritten (`staged`): no
    /// link may break, counted over the links whose resolution can change,
    /// not by resolving the whole vault again; and every link of a note that
    /// led to a moved note is rewritten, so no other link may come to lead
    /// elsewhere (a name taken from another note, an alias; a link in a
    /// read-only standard, which is not rewritten). `moved`: the vault after
    /// the move before the rewrites, whose resolver serves when no name changed.
    fn check(
        &self,
        affected: &BTreeSet<usize>,
        staged: &HashMap<usize, String>,
        moved: After,
    ) -> Result<After> {
        let view = self.view;
        let (final_records, position) = self.records_after(staged)?;
        let same_names = affected.iter().all(|&index| {
            let (was, is) = (&moved.records[position[index]], &final_records[position[index]]);
            was.path == is.path && was.aliases == is.aliases
        });
        let final_resolver =
            if same_names { moved.resolver } else { Resolver::new(&final_records, &self.attachments_after) };
        // The notes whose record differs (one made from unchanged bytes is shared).
        let changed: Vec<usize> = affected
            .iter()
            .copied()
            .filter(|&index| !Arc::ptr_eq(&view.records[index], &final_records[position[index]]))
            .collect();
        let attachments_moved = (!self.carried.is_empty()).then_some(MovedAttachments {
            after: &self.attachments_after,
            position: &self.attachment_position,
        });
        let after_move = view.graph.after_change(
            view.records,
            &final_records,
            &final_resolver,
            view.attachments,
            attachments_moved,
            &changed,
            &[],
            &position,
        );
        let broken_after = after_move.broken_count;
        debug_assert_eq!(
            broken_after,
            Graph::build(&final_records, &self.attachments_after).broken_count,
            "the broken links counted over the changed links are the whole graph's"
        );
        if let Some(&(from, number, lead)) = after_move.relinked.first() {
            let holder = &view.records[from];
            let link = holder.links.get(number);
            let written = link.map(super::delete::written).unwrap_or_default();
            let line = link.map_or(0, |l| l.line);
            let now = match lead {
                Resolution::Note(to) => format!("lead to {}", final_records[to as usize].path),
                Resolution::Attachment(to) => format!("lead to {}", self.attachments_after[to as usize]),
                Resolution::Broken(_) => "break".to_owned(),
            };
            let (what, hint) = if holder.kind == NoteKind::Note {
                ("", "move the note to another name, or move the notes one at a time")
            } else {
                (
                    " (read-only: it is not rewritten)",
                    "change that link yourself, or move the note to another name (with keep_alias, links by its old name still lead to it)",
                )
            };
            return Err(Error::new(
                ErrorCode::Conflict,
                format!(
                    "this move would make {written} in {}{what}, line {line}, {now}{}; nothing was staged",
                    holder.path,
                    match after_move.relinked.len() {
                        1 => String::new(),
                        n => format!(" (and {} more link(s) like it)", n - 1),
                    }
                ),
            )
            .with_hint(hint)
            .with_details(json!({ "path": holder.path, "line": line, "link": written })));
        }
        if broken_after > view.graph.broken_count {
            return Err(Error::new(
                ErrorCode::Conflict,
                format!(
                    "this move would leave {} broken links where there are {} now; nothing was staged",
                    broken_after, view.graph.broken_count
                ),
            )
            .with_hint("move the notes one at a time, or rename them so their names stay unique"));
        }
        Ok(After { records: final_records, resolver: final_resolver })
    }

    /// The plan's file operations: every moved note (its text before and
    /// after), every other note rewritten, the files a folder move carries,
    /// then the canvases that stay and name a moved file; and how many
    /// canvases are rewritten.
    fn file_ops(
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
            if self.moved.contains_key(path.as_str()) || staged[&index] == texts[&index] {
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
        files.extend(carried_ops(self.sandbox, self.view, &self.moving.files, &moved_to)?);
        let canvases =
            staying_canvases(self.sandbox, self.view, &|path| self.carried.contains_key(path), &moved_to)?;
        let canvases_rewritten = canvases.len()
            + files
                .iter()
                .filter(|op| op.op == FileOpKind::Move && is_canvas(&op.path) && op.before != op.after)
                .count();
        files.extend(canvases);
        Ok((files, canvases_rewritten))
    }

    /// The plan's summary line: what moves where, and what it rewrites.
    fn summary(&self, relinked: &Relinked, canvases_rewritten: usize, ambiguous: usize) -> String {
        let moves = &self.moving.notes;
        let plural = |n: usize, noun: &str| format!("{n} {noun}{}", if n == 1 { "" } else { "s" });
        let mut rewrite = format!(
            "rewrite {} in {}",
            plural(relinked.links as usize, "link"),
            plural(relinked.notes as usize, "note")
        );
        if canvases_rewritten > 0 {
            let canvases = if canvases_rewritten == 1 { "canvas" } else { "canvases" };
            rewrite.push_str(&format!(" and {canvases_rewritten} {canvases}"));
        }
        if ambiguous > 0 {
            rewrite.push_str(&format!(", {} will become ambiguous", plural(ambiguous, "link")));
        }
        match moves.as_slice() {
            [(old, new)] if old.ends_with(".md") && self.from.ends_with(".md") => {
                format!("move {old} → {new}, {rewrite}")
            }
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
