//! A plan as its file holds it, and loading it back.
//!
//! **Stored compactly.** A rewrite of a note (`write`: a move's link edits in
//! the notes linking to it) is stored as the spans it replaces and the hashes
//! of the whole text before and after, not as both texts: a move of a note
//! with 10,000 backlinks would otherwise stage hundreds of megabytes. Loading a
//! plan ([`PlanFile::hydrate`]) rebuilds both texts from the note as it is,
//! holding either one (its hash says which); a note holding neither gets a text
//! no file holds ([`unknown_text`]), so every check finds it changed.

use serde::{Deserialize, Serialize};
use serde_json::json;

use super::change::{FileChange, op_change};
use super::operations::{FileOp, FileOpKind, FolderMove, Linkers, PLAN_SCHEMA, Plan, unknown_text};
use crate::error::{Error, ErrorCode, Result};
use crate::sandbox::{NotePath, Sandbox, ends_in_md};
use crate::vault::{ContentHasher, Span, content_hash, is_canvas, replace_spans};
use crate::write::inbox::{FILE_MAX_BYTES, Located, flaw};
use crate::write::text::LineDiff;

impl Plan {
    /// The plan as staged (rewrites of notes as their spans, see the module
    /// docs) and the change of every file as a person reviews it. Each rewrite
    /// is diffed once for both, in parallel: a hub's move rewrites thousands of notes.
    pub(crate) fn staged(&self) -> Result<(Vec<u8>, Vec<FileChange>)> {
        use rayon::prelude::*;
        let (files, changes): (Vec<StoredOp>, Vec<FileChange>) = self
            .files
            .par_iter()
            .map(|op| match (op.op, &op.before, &op.after) {
                (FileOpKind::Write, Some(before), Some(after)) => {
                    let diff = LineDiff::new(before, after);
                    (StoredOp::of(op, &diff), op_change(op, Some(&diff)))
                }
                _ => (StoredOp::verbatim(op), op_change(op, None)),
            })
            .unzip();
        let stored = StoredPlan {
            schema: self.schema,
            summary: self.summary.clone(),
            files,
            folders: self.folders.clone(),
            remarks: self.remarks.clone(),
            linkers: self.linkers.clone(),
        };
        let mut bytes = serde_json::to_vec_pretty(&stored)
            .map_err(|err| Error::internal(format!("cannot serialise a proposal plan: {err}")))?;
        bytes.push(b'\n');
        Ok((bytes, changes))
    }
}

/// One replaced span of a note's text: `old` at byte `at` of the text before,
/// `new` in its place after.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct Splice {
    at: usize,
    old: String,
    new: String,
}

/// A plan as its file holds it.
#[derive(Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct StoredPlan {
    schema: u32,
    summary: String,
    files: Vec<StoredOp>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    folders: Vec<FolderMove>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    remarks: Vec<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    linkers: Option<Linkers>,
}

/// An operation as the plan file holds it: a [`FileOp`], or a `write` as its
/// spans and the hashes of the whole text before and after.
#[derive(Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct StoredOp {
    op: FileOpKind,
    path: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    to: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    before: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    after: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    before_sha256: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    after_sha256: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    splices: Option<Vec<Splice>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    kept: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    sha256: Option<String>,
}

impl StoredOp {
    fn verbatim(op: &FileOp) -> StoredOp {
        StoredOp {
            op: op.op,
            path: op.path.clone(),
            to: op.to.clone(),
            before: op.before.clone(),
            after: op.after.clone(),
            before_sha256: None,
            after_sha256: None,
            splices: None,
            kept: op.kept.clone(),
            sha256: op.sha256.clone(),
        }
    }

    /// A rewrite (`diff`: between its texts) as its spans when they rebuild
    /// its text exactly and are smaller; anything else verbatim.
    fn of(op: &FileOp, diff: &LineDiff<'_>) -> StoredOp {
        let (FileOpKind::Write, Some(before), Some(after)) = (op.op, &op.before, &op.after) else {
            return StoredOp::verbatim(op);
        };
        let splices = splices_between(diff, before, after);
        let size: usize = splices.iter().map(|splice| splice.old.len() + splice.new.len() + 32).sum();
        let exact = splice_forward(before, &splices).as_deref() == Some(after.as_str())
            && splice_backward(after, &splices).as_deref() == Some(before.as_str());
        if !exact || size + 160 >= before.len() + after.len() {
            return StoredOp::verbatim(op);
        }
        StoredOp {
            op: op.op,
            path: op.path.clone(),
            to: None,
            before: None,
            after: None,
            before_sha256: Some(content_hash(before.as_bytes())),
            after_sha256: Some(content_hash(after.as_bytes())),
            splices: Some(splices),
            kept: None,
            sha256: None,
        }
    }

    fn is_compact(&self) -> bool {
        self.before_sha256.is_some() || self.after_sha256.is_some() || self.splices.is_some()
    }
}

/// The changed lines of a rewrite (`diff`: between `before` and `after`), as
/// splices in the order of the text.
fn splices_between(diff: &LineDiff<'_>, before: &str, after: &str) -> Vec<Splice> {
    let starts = |text: &str| -> Vec<usize> {
        let mut out = vec![0];
        out.extend(text.split_inclusive('\n').scan(0, |at, line| {
            *at += line.len();
            Some(*at)
        }));
        out
    };
    let (old_lines, new_lines) = (starts(before), starts(after));
    let span = |lines: &[usize], range: std::ops::Range<u32>| {
        let at = |line: u32| lines.get(line as usize).copied().unwrap_or(usize::MAX);
        at(range.start)..at(range.end)
    };
    diff.hunks()
        .map(|hunk| {
            let (old, new) = (span(&old_lines, hunk.before), span(&new_lines, hunk.after));
            Splice {
                at: old.start,
                old: before.get(old).unwrap_or_default().to_owned(),
                new: after.get(new).unwrap_or_default().to_owned(),
            }
        })
        .collect()
}

/// The text after: each splice's `old` found at its place in `before` and replaced.
fn splice_forward(before: &str, splices: &[Splice]) -> Option<String> {
    let mut spans = Vec::with_capacity(splices.len());
    let mut cursor = 0;
    for splice in splices {
        let end = splice.at.checked_add(splice.old.len())?;
        if splice.at < cursor || before.get(splice.at..end)? != splice.old {
            return None;
        }
        spans.push((Span { start: splice.at, end }, splice.new.as_str()));
        cursor = end;
    }
    Some(replace_spans(before, spans))
}

/// The text before: each splice's `new` found at its place in `after` and put back.
fn splice_backward(after: &str, splices: &[Splice]) -> Option<String> {
    let mut spans = Vec::with_capacity(splices.len());
    let (mut cursor, mut shift) = (0usize, 0isize);
    for splice in splices {
        let at = splice.at.checked_add_signed(shift)?;
        let end = at.checked_add(splice.new.len())?;
        if at < cursor || after.get(at..end)? != splice.new {
            return None;
        }
        spans.push((Span { start: at, end }, splice.old.as_str()));
        cursor = end;
        shift += isize::try_from(splice.new.len()).ok()? - isize::try_from(splice.old.len()).ok()?;
    }
    Some(replace_spans(after, spans))
}

/// A plan file parsed and checked in form; [`PlanFile::hydrate`] makes it a [`Plan`].
#[derive(Debug)]
pub(crate) struct PlanFile {
    stored: StoredPlan,
}

impl PlanFile {
    /// The vault paths the plan's operations touch (a move's source and
    /// destination, every note written or trashed), read from the file as it is:
    /// no note is read to rebuild a rewrite's text.
    pub(crate) fn touched(&self) -> impl Iterator<Item = &str> {
        self.stored.files.iter().flat_map(|op| std::iter::once(op.path.as_str()).chain(op.to.as_deref()))
    }

    pub(crate) fn parse(bytes: &[u8]) -> Result<PlanFile> {
        let stored: StoredPlan = serde_json::from_slice(bytes).map_err(|err| {
            Error::new(ErrorCode::ProposalTampered, format!("its plan is not valid: {err}"))
        })?;
        if stored.schema != PLAN_SCHEMA {
            return Err(Error::new(
                ErrorCode::ProposalTampered,
                format!("its plan has schema {}", stored.schema),
            ));
        }
        for op in &stored.files {
            let fits = match op.op {
                FileOpKind::Write if op.is_compact() => {
                    op.to.is_none()
                        && op.before.is_none()
                        && op.after.is_none()
                        && op.before_sha256.is_some()
                        && op.after_sha256.is_some()
                        && op.splices.as_ref().is_some_and(|splices| {
                            splices
                                .windows(2)
                                .all(|pair| pair[0].at.saturating_add(pair[0].old.len()) <= pair[1].at)
                        })
                }
                _ if op.is_compact() => false,
                FileOpKind::Create => op.to.is_none() && op.before.is_none() && op.after.is_some(),
                FileOpKind::Write => op.to.is_none() && op.before.is_some() && op.after.is_some(),
                FileOpKind::Move => op.to.is_some() && op.before.is_some() && op.after.is_some(),
                FileOpKind::Trash => op.to.is_none() && op.before.is_some() && op.after.is_none(),
                FileOpKind::MoveFile => op.to.is_some() && op.before.is_none() && op.after.is_none(),
            };
            // Only a note brought back was kept somewhere; only a file moved as bytes has a hash.
            let kept_fits = op.kept.is_none() || op.op == FileOpKind::Create;
            let hash_fits = op.sha256.is_some() == (op.op == FileOpKind::MoveFile);
            // A note or a canvas is created, trashed, written or moved as
            // text (a canvas only by deletes, reverts and the rewrites of
            // moves); any file moves as bytes.
            let text_file = |path: &str| match op.op {
                FileOpKind::MoveFile => true,
                _ => ends_in_md(path) || is_canvas(path),
            };
            let kind_fits = text_file(&op.path) && op.to.as_deref().is_none_or(text_file);
            if !fits || !kept_fits || !hash_fits || !kind_fits {
                return Err(Error::new(
                    ErrorCode::ProposalTampered,
                    format!("its plan's operation on {} lacks the fields it needs", op.path),
                ));
            }
        }
        Ok(PlanFile { stored })
    }

    /// The audit line's `files` entries, from the hashes alone.
    pub(crate) fn audit_entries(&self) -> Vec<serde_json::Value> {
        self.stored
            .files
            .iter()
            .map(|op| {
                let hash = |text: &Option<String>, stored: &Option<String>| {
                    stored.clone().or_else(|| text.as_deref().map(|text| content_hash(text.as_bytes())))
                };
                entry(
                    op.op,
                    &op.path,
                    op.to.as_deref(),
                    hash(&op.before, &op.before_sha256).or_else(|| op.sha256.clone()),
                    hash(&op.after, &op.after_sha256).or_else(|| op.sha256.clone()),
                )
            })
            .collect()
    }

    /// The plan with both texts of every rewrite, rebuilt from its note as it
    /// is now (read in parallel: a hub's move rewrites thousands).
    pub(crate) fn hydrate(self, sandbox: &Sandbox) -> Result<Plan> {
        self.hydrate_reading(sandbox).map(|(plan, _)| plan)
    }

    /// [`PlanFile::hydrate`], also returning what each rewrite's note held
    /// when it was read, for [`check_read`] (an apply reads each note once).
    pub(crate) fn hydrate_reading(self, sandbox: &Sandbox) -> Result<(Plan, Vec<Read>)> {
        use rayon::prelude::*;
        let StoredPlan { schema, summary, files, folders, remarks, linkers } = self.stored;
        let (files, reads): (Vec<FileOp>, Vec<Read>) = files
            .into_par_iter()
            .map(|op| {
                if !op.is_compact() {
                    let op = FileOp {
                        op: op.op,
                        path: op.path,
                        to: op.to,
                        before: op.before,
                        after: op.after,
                        kept: op.kept,
                        sha256: op.sha256,
                    };
                    return Ok((op, None));
                }
                let now = current(sandbox, &NotePath::parse(&op.path)?)?;
                let (before, after) = rebuilt(now.as_deref(), &op).unwrap_or_else(|| {
                    let unknown = unknown_text(&op.path);
                    (unknown.clone(), unknown)
                });
                let op = FileOp {
                    op: op.op,
                    path: op.path,
                    to: None,
                    before: Some(before),
                    after: Some(after),
                    kept: None,
                    sha256: None,
                };
                Ok((op, Some(now)))
            })
            .collect::<Result<Vec<(FileOp, Read)>>>()?
            .into_iter()
            .unzip();
        Ok((Plan { schema, summary, files, folders, remarks, linkers }, reads))
    }
}

/// What an operation's note held when the plan was loaded: `Some(None)` when
/// it did not exist, `None` when it was not read.
pub(crate) type Read = Option<Option<Vec<u8>>>;

/// A compact rewrite's texts from the note's bytes `now` (either text).
fn rebuilt(now: Option<&[u8]>, op: &StoredOp) -> Option<(String, String)> {
    let text = std::str::from_utf8(now?).ok()?.to_owned();
    let (splices, before_hash, after_hash) =
        (op.splices.as_deref()?, op.before_sha256.as_deref()?, op.after_sha256.as_deref()?);
    let hash = content_hash(text.as_bytes());
    if hash == before_hash {
        let after = splice_forward(&text, splices)?;
        (content_hash(after.as_bytes()) == after_hash).then_some((text, after))
    } else if hash == after_hash {
        let before = splice_backward(&text, splices)?;
        (content_hash(before.as_bytes()) == before_hash).then_some((before, text))
    } else {
        None
    }
}

/// The audit line's `files` entry of an operation.
fn entry(
    op: FileOpKind,
    path: &str,
    to: Option<&str>,
    before_sha256: Option<String>,
    after_sha256: Option<String>,
) -> serde_json::Value {
    let op_name = match op {
        FileOpKind::Create => "create",
        FileOpKind::Write => "write",
        FileOpKind::Move => "move",
        FileOpKind::Trash => "trash",
        FileOpKind::MoveFile => "move_file",
    };
    let mut entry = json!({ "path": path, "op": op_name });
    if let Some(to) = to {
        entry["to"] = json!(to);
    }
    if let Some(before) = before_sha256 {
        entry["before_sha256"] = json!(before);
    }
    if let Some(after) = after_sha256 {
        entry["after_sha256"] = json!(after);
    }
    entry
}

/// The plan of a multi-file proposal, where its files are now, checked against its recorded hash.
pub(crate) fn read_plan(sandbox: &Sandbox, located: &Located) -> Result<Plan> {
    read_plan_file(sandbox, located)?.hydrate(sandbox)
}

/// [`read_plan`] without rebuilding the rewrites' texts from the notes.
pub(crate) fn read_plan_file(sandbox: &Sandbox, located: &Located) -> Result<PlanFile> {
    let bytes = sandbox.read(&located.content_path()?, FILE_MAX_BYTES)?;
    if content_hash(&bytes) != located.meta.content_sha256 {
        return Err(flaw(format!("its plan no longer hashes to {}", located.meta.content_sha256)));
    }
    PlanFile::parse(&bytes)
}

/// A note's (or a rewritten canvas's) bytes now (`None`: it does not exist).
pub(crate) fn current(sandbox: &Sandbox, path: &NotePath) -> Result<Option<Vec<u8>>> {
    match sandbox.read_plan_file(path, FILE_MAX_BYTES) {
        Ok(bytes) => Ok(Some(bytes)),
        Err(err) if err.code == ErrorCode::NotFound => Ok(None),
        Err(err) => Err(err),
    }
}

/// The hash of a plan file's bytes, read in parts; `None` when it is gone.
pub(crate) fn file_hash(sandbox: &Sandbox, path: &NotePath) -> Result<Option<String>> {
    let Some(opened) = sandbox.open_plan_file(path)? else { return Ok(None) };
    let mut hasher = ContentHasher::default();
    opened.for_each_chunk(|_, chunk| {
        hasher.update(chunk);
        true
    })?;
    Ok(Some(hasher.finish()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_a_note_brought_back_names_the_file_it_was_kept_in() {
        let plan = |op: &str, fields: &str| {
            format!(r#"{{"schema":1,"summary":"s","files":[{{"op":"{op}","path":"z/a.md",{fields}}}]}}"#)
        };
        let restore = plan("create", r#""after":"x","kept":"inbox/trash/2026-01-01/0123abcd/z/a.md""#);
        assert!(PlanFile::parse(restore.as_bytes()).is_ok());
        for other in [
            plan("trash", r#""before":"x","kept":"z/b.md""#),
            plan("write", r#""before":"x","after":"y","kept":"z/b.md""#),
        ] {
            let err = PlanFile::parse(other.as_bytes()).unwrap_err();
            assert_eq!(err.code, ErrorCode::ProposalTampered, "{other}");
        }
    }

    #[test]
    fn splices_rebuild_both_texts_exactly() {
        let cases = [
            ("a\n[[x]]\nb\n", "a\n[[y]]\nb\n"),
            ("no newline at the end [[x]]", "no newline at the end [[y/z]]"),
            ("crlf\r\n[[x]]\r\nend\r\n", "crlf\r\n[[yy]]\r\nend\r\n"),
            ("[[x]] 中文\n\n\nmiddle\n[[x]]\n", "[[新]] 中文\n\n\nmiddle\n[[新]]\n"),
            ("", "added\n"),
            ("removed\n", ""),
        ];
        for (before, after) in cases {
            let splices = splices_between(&LineDiff::new(before, after), before, after);
            assert_eq!(splice_forward(before, &splices).as_deref(), Some(after), "{before:?}");
            assert_eq!(splice_backward(after, &splices).as_deref(), Some(before), "{before:?}");
            // Another text does not take splices that replace something (the
            // hashes checked around them catch the rest).
            if !before.is_empty() {
                assert_eq!(splice_forward("other\n", &splices), None, "{before:?}");
            }
        }
    }
}
