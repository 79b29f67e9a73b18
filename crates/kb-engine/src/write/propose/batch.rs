//! Planning a batch (`propose_batch`): up to [`BATCH_MAX_ITEMS`] new notes,
//! patches, moves and deletes composed into one plan, applied all or nothing
//! by the multi-file apply (`apply/multi.rs`).
//!
//! Items are planned in order, each against the vault as the items before it
//! leave it (a virtual vault: the records re-parsed from the changed texts, the
//! link graph rebuilt before a move or delete needs it), so a move after a new
//! note rewrites the new note's links too, and a patch after a move edits the
//! note with its links already rewritten. A patch's `base_hash` is still the
//! note's hash on disk, the one the agent read. Each item is checked exactly as
//! the single tool would check it, and its error names it (`items[2]`). Two
//! items may not claim one path (a new note's target, a patched or deleted
//! note, a moved note's old or new path, case ignored): what the person
//! reviews is then one change per path, whatever the order. Link rewrites a
//! move makes in other notes are not claims; they compose with the other items.
//!
//! The plan has one operation per note: a note's bytes on disk before, its
//! bytes after all items, and where it ends up (moved, trashed, created).

use std::collections::{HashMap, HashSet};
use std::sync::Arc;

use jiff::Timestamp;
use serde_json::json;

use super::delete::plan_delete;
use super::effects::link_effects;
use super::moves::plan_move;
use super::note::{NewNote, PatchRequest, build_new, build_patch};
use super::view::{Break, VaultView};
use crate::error::{Error, Result};
use crate::sandbox::{NotePath, Sandbox, ends_in_md};
use crate::vault::graph::Graph;
use crate::vault::{Limits, NoteKind, NoteRecord, content_hash, is_canvas, parse_note};
use crate::write::plan::{FileOp, FileOpKind, FolderMove, PLAN_SCHEMA, Plan};

/// Most items one batch takes.
pub const BATCH_MAX_ITEMS: usize = 100;

/// One item of a batch.
#[derive(Debug, Clone, PartialEq)]
pub enum BatchItem {
    /// A new note, as `propose_new_note` takes it (its `reason` is the batch's).
    New(NewNote),
    /// A patch, as `propose_note_patch` takes it (its `reason` is the batch's).
    Patch(PatchRequest),
    /// A move of a note or folder, as `propose_move` takes it.
    Move {
        /// The note or folder.
        from: String,
        /// Where it goes.
        to: String,
        /// Whether a renamed note keeps its old name as an alias.
        keep_alias: bool,
    },
    /// A delete (to the inbox's trash), as `propose_delete` takes it.
    Delete {
        /// The note.
        path: String,
    },
}

impl BatchItem {
    /// `new`, `patch`, `move` or `delete`.
    pub fn kind(&self) -> &'static str {
        match self {
            BatchItem::New(_) => "new",
            BatchItem::Patch(_) => "patch",
            BatchItem::Move { .. } => "move",
            BatchItem::Delete { .. } => "delete",
        }
    }
}

/// What one item does, as planned.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ItemPlanned {
    /// `new`, `patch`, `move` or `delete`.
    pub kind: &'static str,
    /// The note it creates, patches or deletes, or what a move moves.
    pub path: String,
    /// Where a move moves it.
    pub to: Option<String>,
}

/// A planned batch.
#[derive(Debug, Clone)]
pub struct BatchPlan {
    /// Each item, in order.
    pub items: Vec<ItemPlanned>,
    /// The links to the notes it deletes: those that will break, and those
    /// that will lead to another note (`leads_to`).
    pub breaks: Vec<Break>,
    /// The file operations.
    pub plan: Plan,
}

/// One note the batch touches: where it was, where it is after the items so far.
#[derive(Debug, Clone)]
struct Touched {
    /// Its path and text on disk (`None`: a note the batch creates).
    origin: Option<(String, String)>,
    /// Its path now (`None`: trashed).
    now: Option<String>,
    /// Its text now.
    text: String,
}

/// The vault as the items so far leave it.
struct Virtual<'a> {
    base: &'a VaultView<'a>,
    records: Vec<Arc<NoteRecord>>,
    /// The attachments, where the items so far leave them (sorted).
    attachments: Vec<String>,
    /// The files the items move as bytes (`move_file`), in order.
    carried: Vec<FileOp>,
    /// The folders the items' folder moves move.
    folders: Vec<FolderMove>,
    /// Text of every touched note (or canvas) still in the vault, by its path now.
    texts: HashMap<String, String>,
    graph: Option<Graph>,
    touched: Vec<Touched>,
    /// Index into `touched` by path now.
    by_path: HashMap<String, usize>,
    changed: bool,
}

impl<'a> Virtual<'a> {
    fn new(base: &'a VaultView<'a>) -> Self {
        Virtual {
            base,
            records: Vec::new(),
            attachments: Vec::new(),
            carried: Vec::new(),
            folders: Vec::new(),
            texts: HashMap::new(),
            graph: None,
            touched: Vec::new(),
            by_path: HashMap::new(),
            changed: false,
        }
    }

    /// The view a move or delete is planned on (the base one while nothing changed).
    fn view(&mut self) -> VaultView<'_> {
        if !self.changed {
            return VaultView { texts: None, ..*self.base };
        }
        if self.graph.is_none() {
            self.graph = Some(Graph::build(&self.records, &self.attachments));
        }
        VaultView {
            records: &self.records,
            attachments: &self.attachments,
            graph: self.graph.as_ref().unwrap_or(self.base.graph),
            texts: Some(&self.texts),
        }
    }

    /// Takes one item's operations (planned on [`Virtual::view`]) and folder
    /// moves into the virtual vault.
    fn take(&mut self, ops: &[FileOp], folders: &[FolderMove]) -> Result<()> {
        if !self.changed {
            self.records = self.base.records.to_vec();
            self.attachments = self.base.attachments.to_vec();
            self.changed = true;
        }
        self.graph = None;
        self.folders.extend_from_slice(folders);
        for op in ops {
            // An attachment that moves is found at its new path from now on.
            if let (Some(to), Ok(at)) = (op.to.as_ref(), self.attachments.binary_search(&op.path)) {
                self.attachments.remove(at);
                let at = self.attachments.partition_point(|path| path < to);
                self.attachments.insert(at, to.clone());
            }
            // A canvas deleted is no file to link to either.
            if op.op == FileOpKind::Trash
                && let Ok(at) = self.attachments.binary_search(&op.path)
            {
                self.attachments.remove(at);
            }
            if op.op == FileOpKind::MoveFile {
                self.carried.push(op.clone());
                continue;
            }
            let at = match self.by_path.get(&op.path) {
                Some(&at) => at,
                None => {
                    let origin = op.before.clone().map(|before| (op.path.clone(), before));
                    self.touched.push(Touched {
                        origin,
                        now: Some(op.path.clone()),
                        text: op.before.clone().unwrap_or_default(),
                    });
                    self.touched.len() - 1
                }
            };
            let old = self.records.binary_search_by(|r| r.path.as_str().cmp(&op.path)).ok();
            let kept = old.map(|i| self.records.remove(i));
            self.by_path.remove(&op.path);
            self.texts.remove(&op.path);
            let touched = &mut self.touched[at];
            touched.now = op.destination().map(str::to_owned);
            if let Some(after) = &op.after {
                touched.text = after.clone();
            }
            // Another file keeps its text for the items after it, and is no
            // note; a canvas is a note (its record parsed again below).
            if let Some(now) = touched.now.clone().filter(|now| !ends_in_md(now) && !is_canvas(now)) {
                self.by_path.insert(now.clone(), at);
                self.texts.insert(now, touched.text.clone());
                continue;
            }
            if let Some(now) = touched.now.clone() {
                let path = NotePath::parse(&now)?;
                let text = touched.text.clone();
                let note = parse_note(&path, &text);
                let (modified, born) = kept.as_ref().map_or((0, None), |r| (r.modified_ns, r.born_ns));
                let record = Arc::new(NoteRecord::from_note(
                    note,
                    NoteKind::Note,
                    text.len() as u64,
                    modified,
                    born,
                    content_hash(text.as_bytes()),
                ));
                let at_path = self.records.partition_point(|r| r.path < now);
                self.records.insert(at_path, record);
                self.by_path.insert(now.clone(), at);
                self.texts.insert(now, text);
            }
        }
        Ok(())
    }

    /// One operation per touched note (or canvas): from its bytes on disk to
    /// where and what the items leave it; then the files moved as bytes, and
    /// the folders the folder moves move.
    fn into_ops(self) -> (Vec<FileOp>, Vec<FolderMove>) {
        let mut ops = Vec::new();
        for touched in self.touched {
            let op = match (touched.origin, touched.now) {
                (None, Some(path)) => FileOp {
                    op: FileOpKind::Create,
                    path,
                    to: None,
                    before: None,
                    after: Some(touched.text),
                    kept: None,
                    sha256: None,
                },
                (None, None) => continue,
                (Some((path, before)), None) => FileOp {
                    op: FileOpKind::Trash,
                    path,
                    to: None,
                    before: Some(before),
                    after: None,
                    kept: None,
                    sha256: None,
                },
                (Some((path, before)), Some(now)) if now == path => {
                    if before == touched.text {
                        continue;
                    }
                    FileOp {
                        op: FileOpKind::Write,
                        path,
                        to: None,
                        before: Some(before),
                        after: Some(touched.text),
                        kept: None,
                        sha256: None,
                    }
                }
                (Some((path, before)), Some(now)) => FileOp {
                    op: FileOpKind::Move,
                    path,
                    to: Some(now),
                    before: Some(before),
                    after: Some(touched.text),
                    kept: None,
                    sha256: None,
                },
            };
            ops.push(op);
        }
        ops.extend(self.carried);
        (ops, self.folders)
    }
}

/// The error of item `number`, naming it and what it is.
fn item_error(number: usize, item: &BatchItem, mut err: Error) -> Error {
    let what = match item {
        BatchItem::New(note) => format!("new note {:?}", note.title.trim()),
        BatchItem::Patch(patch) => format!("patch {}", patch.path),
        BatchItem::Move { from, to, .. } => format!("move {from} → {to}"),
        BatchItem::Delete { path } => format!("delete {path}"),
    };
    err.message = format!("items[{number}] ({what}): {}; nothing was staged", err.message);
    let mut details = match err.details.take() {
        Some(serde_json::Value::Object(map)) => map,
        _ => serde_json::Map::new(),
    };
    details.insert("item".to_owned(), json!(number));
    err.details = Some(serde_json::Value::Object(details));
    err
}

/// Plans a batch (see the module docs): `invalid_argument` for no items, more
/// than [`BATCH_MAX_ITEMS`], or two items on one path; otherwise the first
/// item's own error, naming it.
pub fn plan_batch(
    sandbox: &Sandbox,
    limits: &Limits,
    view: &VaultView<'_>,
    items: &[BatchItem],
    now: Timestamp,
) -> Result<BatchPlan> {
    if items.is_empty() {
        return Err(Error::invalid("`items` is empty; give at least one new note, patch, move or delete"));
    }
    if items.len() > BATCH_MAX_ITEMS {
        return Err(Error::invalid(format!(
            "`items` holds {} items; a batch takes at most {BATCH_MAX_ITEMS}: split it into several batches",
            items.len()
        )));
    }
    let mut state = Virtual::new(view);
    // Every path an item claims (lowercased: one file on a case-insensitive disk), and by which item.
    let mut claims: HashMap<String, usize> = HashMap::new();
    // The folders a folder move carries files out of or into (`<folder>/`,
    // lowercased), by item: what another item does under one would not be
    // seen by the listing of the folder on disk.
    let mut folder_claims: Vec<(String, usize)> = Vec::new();
    let mut planned = Vec::with_capacity(items.len());
    let mut breaks = Vec::new();
    let mut links = 0u32;
    for (number, item) in items.iter().enumerate() {
        let fail = |err: Error| item_error(number, item, err);
        let (ops, claimed, folders, outcome) = match item {
            BatchItem::New(note) => {
                let (target, text) = build_new(sandbox, limits, note, now).map_err(fail)?;
                let path = target.as_str().to_owned();
                let op = FileOp {
                    op: FileOpKind::Create,
                    path: path.clone(),
                    to: None,
                    before: None,
                    after: Some(text),
                    kept: None,
                    sha256: None,
                };
                (vec![op], vec![path.clone()], Vec::new(), ItemPlanned { kind: "new", path, to: None })
            }
            BatchItem::Patch(request) => {
                let (target, on_disk, patched) =
                    build_patch(sandbox, limits, request, Some(&state.texts)).map_err(fail)?;
                let path = target.as_str().to_owned();
                let before = state.texts.get(&path).cloned().unwrap_or(on_disk);
                let op = FileOp {
                    op: FileOpKind::Write,
                    path: path.clone(),
                    to: None,
                    before: Some(before),
                    after: Some(patched),
                    kept: None,
                    sha256: None,
                };
                (vec![op], vec![path.clone()], Vec::new(), ItemPlanned { kind: "patch", path, to: None })
            }
            BatchItem::Move { from, to, keep_alias } => {
                let moved = plan_move(sandbox, &state.view(), from, to, *keep_alias).map_err(fail)?;
                links += moved.links;
                let claimed = moved
                    .moves
                    .iter()
                    .chain(&moved.carried)
                    .flat_map(|(from, to)| [from.clone(), to.clone()])
                    .collect();
                let outcome = ItemPlanned {
                    kind: "move",
                    path: from.trim_end_matches('/').to_owned(),
                    to: Some(to.trim_end_matches('/').to_owned()),
                };
                (moved.plan.files, claimed, moved.plan.folders, outcome)
            }
            BatchItem::Delete { path } => {
                let (plan, broken) = plan_delete(sandbox, &state.view(), path).map_err(fail)?;
                let path = plan.files[0].path.clone();
                breaks.extend(broken);
                (plan.files, vec![path.clone()], Vec::new(), ItemPlanned { kind: "delete", path, to: None })
            }
        };
        for path in claimed {
            if let Some(&earlier) = claims.get(&path.to_lowercase())
                && earlier != number
            {
                return Err(fail(
                    Error::invalid(format!("{path} is also the path of items[{earlier}]"))
                        .with_hint("give each note at most one item: merge the two, or split the batch")
                        .with_details(json!({ "path": path, "other_item": earlier })),
                ));
            }
            claims.insert(path.to_lowercase(), number);
        }
        if let Some(first) = folders.first() {
            let new = [format!("{}/", first.from.to_lowercase()), format!("{}/", first.to.to_lowercase())];
            let under = |path: &str, folder: &str| path.starts_with(folder) || folder.starts_with(path);
            let clash = claims
                .iter()
                .filter(|&(_, &item)| item != number)
                .map(|(path, &item)| (path.as_str(), item))
                .chain(folder_claims.iter().map(|(folder, item)| (folder.as_str(), *item)))
                .find(|(path, _)| new.iter().any(|folder| under(path, folder)));
            if let Some((path, earlier)) = clash {
                return Err(fail(
                    Error::invalid(format!(
                        "the folder move {} → {} and items[{earlier}] both touch {path}",
                        first.from, first.to
                    ))
                    .with_hint(
                        "move a folder in a batch of its own, or in a batch whose other items stay out of it",
                    )
                    .with_details(json!({ "path": path, "other_item": earlier })),
                ));
            }
            folder_claims.extend(new.into_iter().map(|folder| (folder, number)));
        }
        state.take(&ops, &folders).map_err(fail)?;
        planned.push(outcome);
    }
    let (files, folders) = state.into_ops();
    if files.is_empty() {
        return Err(Error::invalid("the items change nothing: the vault would stay as it is"));
    }
    // What the whole batch does to the links of the notes it leaves alone (a
    // new note named like an alias, a renamed heading), beside what each
    // delete said of the links to its note.
    let said: HashSet<(String, u32, String)> =
        breaks.iter().map(|b| (b.path.clone(), b.line, b.link.clone())).collect();
    breaks.extend(
        link_effects(view, &files)?
            .into_iter()
            .filter(|b| !said.contains(&(b.path.clone(), b.line, b.link.clone()))),
    );
    let redirected = breaks.iter().filter(|b| b.leads_to.is_some()).count();
    let summary = summary(&planned, links, breaks.len() - redirected, redirected);
    Ok(BatchPlan {
        items: planned,
        breaks,
        plan: Plan { schema: PLAN_SCHEMA, summary, files, folders, remarks: Vec::new(), linkers: None },
    })
}

/// "2 links will break", "1 link will lead to another note": what a summary
/// says of the links in other notes a proposal changes (nothing when none).
pub fn links_changed(breaks: usize, redirected: usize) -> Vec<String> {
    let plural = |n: usize| if n == 1 { "" } else { "s" };
    let mut parts = Vec::new();
    if breaks > 0 {
        parts.push(format!("{breaks} link{} will break", plural(breaks)));
    }
    if redirected > 0 {
        parts.push(format!("{redirected} link{} will lead to another note", plural(redirected)));
    }
    parts
}

/// "batch: 3 new, 1 patch, 2 moves, 1 delete, rewrite 12 links, 2 links will
/// break, 1 link will lead to another note".
fn summary(items: &[ItemPlanned], links: u32, breaks: usize, redirected: usize) -> String {
    let mut parts = Vec::new();
    for (kind, one, many) in [
        ("new", "new", "new"),
        ("patch", "patch", "patches"),
        ("move", "move", "moves"),
        ("delete", "delete", "deletes"),
    ] {
        let n = items.iter().filter(|item| item.kind == kind).count();
        if n > 0 {
            parts.push(format!("{n} {}", if n == 1 { one } else { many }));
        }
    }
    if links > 0 {
        parts.push(format!("rewrite {links} link{}", if links == 1 { "" } else { "s" }));
    }
    parts.extend(links_changed(breaks, redirected));
    format!("batch: {}", parts.join(", "))
}
