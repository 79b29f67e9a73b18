//! What a move moves (`propose_move`): one note, or everything under a
//! folder: its notes, every other file (attachments, PDFs, images, canvases,
//! hidden files no rule denies) and its folders, empty ones included.
//!
//! A folder move is refused whole, naming them, when the folder holds anything
//! that cannot be carried (`sandbox::FolderContents::refused`: a file or folder
//! a built-in or `deny` rule names, a symbolic link, a file of a read-only
//! area): moving the rest would leave the folder behind, half moved. Every
//! destination must be free, and free of a twin: a name its folder holds in
//! another case, normalisation or with zero-width characters.

use std::collections::HashMap;
use std::collections::hash_map::Entry;

use serde_json::json;

use super::canvases::{CanvasRewrite, canvas_text};
use crate::error::{Error, ErrorCode, Result};
use crate::sandbox::{Area, NotePath, Sandbox, name_key, twin_among};
use crate::vault::{NoteKind, is_canvas, is_pdf};
use crate::write::plan::{FileOp, FileOpKind, file_hash};
use crate::write::propose::view::VaultView;

/// Most refused files a refusal names (the rest are counted).
const REFUSED_NAMED: usize = 10;

/// What a move moves, each as `(from, to)`.
#[derive(Debug, Clone, Default)]
pub(crate) struct Moving {
    /// Every note, in path order.
    pub(crate) notes: Vec<(String, String)>,
    /// Every other file a folder move carries, in path order.
    pub(crate) files: Vec<(String, String)>,
    /// A folder move's folders, the folder itself first.
    pub(crate) folders: Vec<(String, String)>,
}

/// A path a move may take from or to: well-formed, not denied, in a notes
/// root (not a standard, the inbox or a read-only folder), and, for a note,
/// an approved note target (no symlink on the way). `path_denied` otherwise.
fn writable(sandbox: &Sandbox, input: &str) -> Result<NotePath> {
    let path = NotePath::parse(input)?;
    if path.is_pdf() {
        return Err(Error::invalid(format!(
            "{path} is a PDF: attachments are read-only, no proposal moves, changes or deletes one"
        ))
        .with_hint("move the folder that holds it (the PDF goes with it and links to it follow), or move it yourself"));
    }
    if path.is_markdown() {
        return sandbox.resolve_note_target(path.as_str());
    }
    if path.is_canvas() {
        return sandbox.resolve_plan_target(path.as_str());
    }
    if sandbox.area_of(&path) != Some(Area::Note) {
        return Err(Error::denied(format!(
            "{path} is not inside a notes root; notes move only within notes roots"
        )));
    }
    sandbox.resolve_folder(path.as_str())?;
    Ok(path)
}

/// A folder path without its trailing slash (`/` stays, to be refused).
fn without_slash(path: &str) -> &str {
    match path.strip_suffix('/') {
        Some(rest) if !rest.is_empty() => rest,
        _ => path,
    }
}

/// What `from` names, moving to `to` (see the module docs), every
/// destination checked.
pub(super) fn what_moves(sandbox: &Sandbox, view: &VaultView<'_>, from: &str, to: &str) -> Result<Moving> {
    if from.is_empty() || to.is_empty() {
        return Err(Error::invalid("`from` and `to` must both be given: a note path or a folder path"));
    }
    let (from, to) = (without_slash(from), without_slash(to));
    if from == to {
        return Err(Error::invalid(format!("`to` is `from` ({from}): nothing would move")));
    }
    let from_path = writable(sandbox, from)?;
    let to_path = writable(sandbox, to)?;
    sandbox.check_new_names(&to_path)?;
    let is_note = |path: &str| view.records.iter().any(|r| r.path == path && r.kind == NoteKind::Note);
    let moving = if from_path.is_markdown() {
        if !to_path.is_markdown() {
            return Err(Error::invalid(format!("`to` ({to}) must end in .md when `from` is a note")));
        }
        if !is_note(from_path.as_str()) {
            return Err(Error::not_found(format!("{from} is not a note of a notes root"))
                .with_hint("give the note's exact path (search_knowledge or list_notes shows it)"));
        }
        Moving { notes: vec![(from.to_owned(), to.to_owned())], ..Moving::default() }
    } else if from_path.is_canvas() {
        // A canvas moves as a file (its JSON kept, `carried_ops`); links to
        // it follow it like links to a note.
        if !to_path.is_canvas() {
            return Err(Error::invalid(format!("`to` ({to}) must end in .canvas when `from` is a canvas")));
        }
        if !is_note(from_path.as_str()) {
            return Err(Error::not_found(format!("{from} is not a canvas of a notes root"))
                .with_hint("give the canvas's exact path (list_notes shows it)"));
        }
        Moving { files: vec![(from.to_owned(), to.to_owned())], ..Moving::default() }
    } else {
        folder_moving(sandbox, view, &from_path, &to_path)?
    };
    Destinations::new(sandbox, view).check(&moving)?;
    Ok(moving)
}

/// What a folder move moves: every file and folder under `from`.
fn folder_moving(sandbox: &Sandbox, view: &VaultView<'_>, from: &NotePath, to: &NotePath) -> Result<Moving> {
    if to.is_markdown() {
        return Err(Error::invalid(format!("`from` ({from}) is a folder, so `to` must be a folder too")));
    }
    if name_key(to.as_str()).starts_with(&format!("{}/", name_key(from.as_str()))) {
        return Err(Error::invalid(format!("cannot move the folder {from} into itself ({to})")));
    }
    // A folder beside `to` named as `to` in another spelling would be its twin.
    if let Some(twin) = sandbox.twin_of(to)?.filter(|twin| twin != to && twin != from) {
        return Err(taken(to.as_str(), &twin));
    }
    let contents = sandbox.folder_contents(from)?;
    if !contents.refused.is_empty() {
        let named: Vec<String> = contents
            .refused
            .iter()
            .take(REFUSED_NAMED)
            .map(|file| format!("{} ({})", file.path, file.reason))
            .collect();
        let more = contents.refused.len().saturating_sub(REFUSED_NAMED);
        let listed: Vec<serde_json::Value> =
            contents.refused.iter().map(|file| json!({ "path": file.path, "reason": file.reason })).collect();
        return Err(Error::denied(format!(
            "the folder {from} holds {} a move cannot carry: {}{}; nothing was staged",
            if contents.refused.len() == 1 { "a file" } else { "files" },
            named.join(", "),
            if more > 0 { format!(" and {more} more") } else { String::new() }
        ))
        .with_hint(
            "move or remove those files yourself first (kb-mcp never moves them), then move the folder",
        )
        .with_details(json!({ "refused": listed })));
    }
    let under = |path: &str| format!("{to}/{}", &path[from.as_str().len() + 1..]);
    let prefix = format!("{from}/");
    let mut notes = Vec::new();
    // A canvas is a record but moves as a file (its JSON kept, see `carried_ops`).
    // A PDF is a record too, but an attachment to moves: carried as a file.
    for record in
        view.records.iter().filter(|r| r.path.starts_with(&prefix) && !is_canvas(&r.path) && !is_pdf(&r.path))
    {
        if record.kind != NoteKind::Note {
            return Err(Error::denied(format!("{} is not in a notes root; it cannot be moved", record.path)));
        }
        notes.push((record.path.clone(), under(&record.path)));
    }
    let is_record = |path: &str| view.records.binary_search_by(|r| r.path.as_str().cmp(path)).is_ok();
    let files: Vec<(String, String)> = contents
        .files
        .iter()
        .filter(|path| !is_record(path.as_str()) || path.is_canvas() || path.is_pdf())
        .map(|path| (path.as_str().to_owned(), under(path.as_str())))
        .collect();
    if notes.is_empty() && files.is_empty() {
        let exists = !contents.folders.is_empty();
        return Err(Error::not_found(if exists {
            format!("the folder {from} holds no file to move")
        } else {
            format!("no note or folder is at {from}")
        }));
    }
    let folders = contents
        .folders
        .iter()
        .map(|folder| {
            let to_folder = if folder == from { to.as_str().to_owned() } else { under(folder.as_str()) };
            (folder.as_str().to_owned(), to_folder)
        })
        .collect();
    Ok(Moving { notes, files, folders })
}

/// The checks of a move's destinations, with each destination folder's
/// names listed once (a folder of 1,000 notes must not list it 1,000 times).
struct Destinations<'a> {
    sandbox: &'a Sandbox,
    /// Every note's path by its name key (NFC, lowercase).
    notes: HashMap<String, Vec<&'a str>>,
    /// The names in each destination folder.
    names: HashMap<String, Vec<String>>,
}

impl<'a> Destinations<'a> {
    fn new(sandbox: &'a Sandbox, view: &VaultView<'a>) -> Self {
        let mut notes: HashMap<String, Vec<&str>> = HashMap::with_capacity(view.records.len());
        for record in view.records {
            notes.entry(name_key(&record.path)).or_default().push(&record.path);
        }
        Destinations { sandbox, notes, names: HashMap::new() }
    }

    /// Every note's and file's destination: writable, and free of the file
    /// itself and of any twin (the moving file aside: a case-only rename finds
    /// its own name).
    fn check(mut self, moving: &Moving) -> Result<()> {
        for (old, new) in &moving.notes {
            self.sandbox.resolve_note_target(old)?;
            let target = self.sandbox.resolve_note_target(new)?;
            let same_name = name_key(old) == name_key(new);
            let twin = self.notes.get(&name_key(new)).and_then(|paths| paths.iter().find(|p| *p != old));
            if let Some(&twin) = twin.filter(|_| !same_name) {
                return Err(taken(new, &NotePath::parse(twin)?));
            }
            self.free(old, &target)?;
        }
        for (old, new) in &moving.files {
            self.sandbox.resolve_plan_target(old)?;
            let target = self.sandbox.resolve_plan_target(new)?;
            self.free(old, &target)?;
        }
        Ok(())
    }

    /// `target_exists` when `target`'s folder holds its name or a twin of it
    /// (`old` aside).
    fn free(&mut self, old: &str, target: &NotePath) -> Result<()> {
        let names = match self.names.entry(target.parent().to_owned()) {
            Entry::Occupied(entry) => entry.into_mut(),
            Entry::Vacant(entry) => entry.insert(self.sandbox.names_in(target.parent())?),
        };
        match twin_among(names, target).filter(|twin| twin.as_str() != old) {
            Some(twin) => Err(taken(target.as_str(), &twin)),
            None => Ok(()),
        }
    }
}

/// `target_exists` for a destination `new` that `twin` holds already (the
/// very name, or the same name in another case or normalisation).
fn taken(new: &str, twin: &NotePath) -> Error {
    let what = if twin.as_str() == new {
        format!("{new} already exists")
    } else {
        format!(
            "{new} is taken: {twin} has the same name written another way (case, accents or invisible characters)"
        )
    };
    Error::new(ErrorCode::TargetExists, what)
        .with_hint("choose another `to`, or move that note away first")
        .with_details(json!({ "target": new, "existing": twin.as_str() }))
}

/// The operations moving the files a folder move carries (`files`): a canvas
/// as text, rewritten as `rewrite` says (see `canvases.rs`); any other file
/// as bytes, by the hash of its bytes now.
pub(super) fn carried_ops(
    sandbox: &Sandbox,
    view: &VaultView<'_>,
    files: &[(String, String)],
    rewrite: &CanvasRewrite<'_>,
) -> Result<Vec<FileOp>> {
    use rayon::prelude::*;
    files
        .par_iter()
        .map(|(from, to)| {
            if is_canvas(from)
                && let Some(text) = canvas_text(sandbox, view, from)?
            {
                let after = rewrite.after(from, &text).unwrap_or_else(|| text.clone());
                return Ok(FileOp {
                    op: FileOpKind::Move,
                    path: from.clone(),
                    to: Some(to.clone()),
                    before: Some(text),
                    after: Some(after),
                    kept: None,
                    sha256: None,
                });
            }
            let path = NotePath::parse(from)?;
            let sha256 = file_hash(sandbox, &path)?
                .ok_or_else(|| Error::not_found(format!("{from} is gone; look at the folder again")))?;
            Ok(FileOp {
                op: FileOpKind::MoveFile,
                path: from.clone(),
                to: Some(to.clone()),
                before: None,
                after: None,
                kept: None,
                sha256: Some(sha256),
            })
        })
        .collect()
}
