//! `list_notes`: the vault's `ls`, a folder's direct notes and subfolders.
//!
//! Everything comes from the catalog (sorted by path), so a folder is one range
//! of it and nothing is read from disk but the folder check: what the catalog
//! leaves out (denied notes, templates, skipped files) is never listed. Pages are
//! cut by a cursor that names the last note returned (its sort key and path), not
//! a position, so notes added or removed between two calls never shift a page:
//! a note is never listed twice, and one that stays is never missed.
//!
//! By time (`updated`, `created`) an edit moves a note, and an edit between two
//! pages would move a note not listed yet in front of the cursor, where no later
//! page looks. So the first page fixes a bound: the newest modification time the
//! catalog holds then (or the present, if that is later). The notes modified up
//! to the bound are listed first, newest first; the notes modified after it
//! (edited or added while paging) follow, oldest change first, so a note edited
//! again moves further on, never behind the cursor. No note present throughout is
//! missed; a note edited after its page is listed again with its new time.

use super::Engine;
use super::bounded::{HIT_LIST_MAX, TEXT_MAX_CHARS, cap_list, cut_chars};
use super::read::{created_nanos, created_rfc3339};
use super::types::{FolderCount, LIST_NOTES_LIMIT, ListNotesArgs, ListSort, ListedNote, NoteList};
use crate::error::{Error, ErrorCode, Result};
use crate::sandbox::{Zone, file_time, rfc3339};
use crate::vault::NoteRecord;

/// Most subfolders one answer lists (the rest are counted in `folders_omitted`).
const FOLDERS_MAX: usize = 500;

/// Where a note stands in a listing by time: modified up to the bound of the
/// first page (listed first), or after it (listed after those).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
enum Phase {
    /// Unchanged since the first page: by the sort key, newest first.
    Before,
    /// Modified since: by modification time, oldest first.
    Since,
}

/// Where a page starts: after the note at this phase, sort key and path.
#[derive(Debug, PartialEq, Eq)]
struct Cursor {
    /// The first page's bound (nanoseconds; 0 when sorted by path).
    bound: i64,
    phase: Phase,
    /// The sort key in `Before`, the modification time in `Since`.
    key: i128,
    path: String,
}

/// What a cursor is bound to, so that one is never used with other arguments.
fn scope(folder: &str, tag: &str, sort: ListSort) -> String {
    let sort = match sort {
        ListSort::Path => "path",
        ListSort::Updated => "updated",
        ListSort::Created => "created",
    };
    format!("{sort}\n{folder}\n{tag}")
}

impl Cursor {
    /// `l2` and the hex of `scope\nbound\nphase\nkey\npath`: opaque to the agent, checked on return.
    fn encode(&self, scope: &str) -> String {
        let phase = match self.phase {
            Phase::Before => 0,
            Phase::Since => 1,
        };
        super::cursor::encode("l2", &format!("{scope}\n{}\n{phase}\n{}\n{}", self.bound, self.key, self.path))
    }

    fn decode(text: &str, scope: &str) -> Result<Cursor> {
        let bad = || {
            Error::invalid(format!("`cursor` {:?} is not a cursor list_notes returned", cut(text)))
                .with_hint("pass the `next_cursor` of the previous answer unchanged, or leave `cursor` out to start again")
        };
        let text = super::cursor::decode("l2", text).ok_or_else(bad)?;
        // The path is last and holds no newline; the scope (a tag may hold one) is first.
        let mut fields = text.rsplitn(5, '\n');
        let (Some(path), Some(key), Some(phase), Some(bound), Some(given)) =
            (fields.next(), fields.next(), fields.next(), fields.next(), fields.next())
        else {
            return Err(bad());
        };
        if given != scope {
            return Err(Error::invalid("`cursor` belongs to a listing with another folder, tag or sort")
                .with_hint("pass the same folder, tag and sort as the call that returned the cursor"));
        }
        let phase = match phase {
            "0" => Phase::Before,
            "1" => Phase::Since,
            _ => return Err(bad()),
        };
        Ok(Cursor {
            bound: bound.parse().map_err(|_| bad())?,
            phase,
            key: key.parse().map_err(|_| bad())?,
            path: path.to_owned(),
        })
    }
}

/// A note's place in a listing: its phase, then its key in that phase (larger
/// first in `Before`, smaller first in `Since`), then its path.
fn place(phase: Phase, key: i128, path: &str) -> (Phase, i128, &str) {
    match phase {
        Phase::Before => (phase, -key, path),
        Phase::Since => (phase, key, path),
    }
}

/// At most 40 characters of a bad argument, for an error message.
fn cut(text: &str) -> String {
    text.chars().take(40).collect()
}

impl Engine {
    /// A `folder` argument as a vault-relative folder that exists (`""`: the
    /// whole vault); a folder that is not there is `not_found` with `hint`.
    pub(super) fn existing_folder(&self, folder: Option<&str>, hint: &str) -> Result<String> {
        let sandbox = self.sandbox();
        match sandbox.resolve_folder(folder.unwrap_or(""))? {
            Some(folder) if !sandbox.is_folder(&folder) => {
                Err(Error::new(ErrorCode::NotFound, format!("there is no folder {folder} in the vault"))
                    .with_hint(hint))
            }
            Some(folder) => Ok(folder.as_str().to_owned()),
            None => Ok(String::new()),
        }
    }

    /// `list_notes`.
    pub fn list_notes(&self, args: &ListNotesArgs) -> Result<NoteList> {
        let limit = LIST_NOTES_LIMIT.check("limit", args.limit)? as usize;
        let sort = args.sort.unwrap_or_default();
        let folder = self.existing_folder(
            args.folder.as_deref(),
            "list_notes without `folder` (`kb-index ls`) shows the top-level folders",
        )?;
        let tag = args.tag.as_deref().map(|t| t.trim().trim_start_matches('#').to_lowercase());
        if tag.as_deref().is_some_and(str::is_empty) {
            return Err(
                Error::invalid("`tag` is empty").with_hint("give a tag such as daily, or leave `tag` out")
            );
        }
        let scope = scope(&folder, tag.as_deref().unwrap_or(""), sort);
        let cursor = args.cursor.as_deref().map(|text| Cursor::decode(text, &scope)).transpose()?;

        let catalog = self.catalog();
        let records = catalog.records();
        let prefix = if folder.is_empty() { String::new() } else { format!("{folder}/") };
        // The folder's records are one run of the path-sorted records.
        let start = records.partition_point(|r| r.path.as_str() < prefix.as_str());
        let end = start + records[start..].partition_point(|r| r.path.starts_with(&prefix));
        let mut folders: Vec<FolderCount> = Vec::new();
        let mut notes: Vec<&NoteRecord> = Vec::new();
        match tag.as_deref() {
            // Only the tagged records of the folder's run are looked at.
            Some(tag) => {
                let tagged = catalog.tagged(tag);
                let from = tagged.partition_point(|&at| (at as usize) < start);
                for &at in tagged[from..].iter().take_while(|&&at| (at as usize) < end) {
                    let record = &records[at as usize];
                    match record.path[prefix.len()..].split_once('/') {
                        // Records come by path, so one subfolder's notes are adjacent.
                        Some((sub, _)) => match folders.last_mut() {
                            Some(last) if last.path[prefix.len()..] == *sub => last.notes += 1,
                            _ => folders.push(FolderCount { path: format!("{prefix}{sub}"), notes: 1 }),
                        },
                        None => notes.push(record),
                    }
                }
            }
            // A subfolder's records are a run too: counted by two binary searches,
            // not one by one (the vault's top level holds every note).
            None => {
                let mut at = start;
                while at < end {
                    let record = &records[at];
                    match record.path[prefix.len()..].split_once('/') {
                        Some((sub, _)) => {
                            let below = format!("{prefix}{sub}/");
                            let count = records[at..end].partition_point(|r| r.path.starts_with(&below));
                            folders.push(FolderCount { path: format!("{prefix}{sub}"), notes: count as u64 });
                            at += count;
                        }
                        None => {
                            notes.push(record);
                            at += 1;
                        }
                    }
                }
            }
        }
        // By time, the bound of the first page decides each note's phase (see the module docs).
        let bound = match (&cursor, sort) {
            (_, ListSort::Path) => 0,
            (Some(cursor), _) => cursor.bound,
            (None, _) => {
                let newest = records.iter().map(|r| r.modified_ns).max().unwrap_or(0);
                newest.min(jiff::Timestamp::now().as_nanosecond().try_into().unwrap_or(i64::MAX))
            }
        };
        let placed = |record: &NoteRecord| -> (Phase, i128) {
            match sort {
                ListSort::Path => (Phase::Before, 0),
                _ if record.modified_ns > bound => (Phase::Since, i128::from(record.modified_ns)),
                ListSort::Updated => (Phase::Before, i128::from(record.modified_ns)),
                ListSort::Created => (Phase::Before, created_nanos(record)),
            }
        };
        let mut notes: Vec<(Phase, i128, &NoteRecord)> = notes
            .into_iter()
            .map(|record| {
                let (phase, key) = placed(record);
                (phase, key, record)
            })
            .collect();
        // Newest first for times (oldest change first after the bound); by path within one key.
        notes.sort_by(|a, b| place(a.0, a.1, &a.2.path).cmp(&place(b.0, b.1, &b.2.path)));
        let total = notes.len() as u64;
        let from = match &cursor {
            None => 0,
            Some(after) => {
                let after = place(after.phase, after.key, &after.path);
                notes.partition_point(|(phase, key, record)| place(*phase, *key, &record.path) <= after)
            }
        };
        let page = &notes[from..(from + limit).min(notes.len())];
        let next_cursor =
            (from + page.len() < notes.len()).then(|| page.last()).flatten().map(|(phase, key, record)| {
                Cursor { bound, phase: *phase, key: *key, path: record.path.clone() }.encode(&scope)
            });
        let notes = page
            .iter()
            .map(|(_, _, record)| {
                let (tags, tags_omitted) = cap_list(&record.tags, HIT_LIST_MAX);
                ListedNote {
                    path: record.path.clone(),
                    title: cut_chars(&record.title, TEXT_MAX_CHARS),
                    updated: rfc3339(file_time(record.modified_ns), Zone::Utc),
                    created: created_rfc3339(record),
                    tags,
                    tags_omitted,
                }
            })
            .collect();
        if cursor.is_some() {
            folders.clear();
        }
        let folders_omitted = folders.len().saturating_sub(FOLDERS_MAX) as u64;
        folders.truncate(FOLDERS_MAX);
        Ok(NoteList { folder, folders, folders_omitted, notes, total, next_cursor })
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use super::*;
    use crate::engine::catalog::Catalog;
    use crate::sandbox::NotePath;
    use crate::vault::{NoteKind, parse_note};

    /// The catalog's tag lists answer as lowercasing each record's tags would,
    /// ASCII or not, a tag or one below it (what the filter looked at, record by
    /// record, before the lists).
    #[test]
    fn tagged_records_are_those_carrying_the_tag_or_one_below_it() {
        let notes = [
            vec!["Daily", "project/KB-mcp"],
            vec!["İstanbul", "STRAẞE/x"],
            vec!["ΣΟΦΙΑ", "ΟΔΟΣ", "dailyish"],
            vec!["a", "a//b", "project"],
            vec![],
            vec!["DAILY", "daily/X"],
        ];
        let records: Vec<Arc<NoteRecord>> = notes
            .iter()
            .enumerate()
            .map(|(at, tags)| {
                let text = format!("---\ntags: [{}]\n---\n", tags.join(", "));
                let note = parse_note(&NotePath::parse(&format!("n{at}.md")).unwrap(), &text);
                let record = NoteRecord::from_note(note, NoteKind::Note, 0, 0, None, String::new());
                assert_eq!(record.tags.len(), tags.len(), "{:?}", record.tags);
                Arc::new(record)
            })
            .collect();
        let catalog = Catalog::new(records, Vec::new());
        let carries = |record: &NoteRecord, tag: &str| {
            record.tags.iter().any(|own| {
                let own = own.to_lowercase();
                own == tag || own.strip_prefix(tag).is_some_and(|rest| rest.starts_with('/'))
            })
        };
        for tag in [
            "daily",
            "dail",
            "project",
            "project/kb-mcp",
            "project/kb",
            "i̇stanbul",
            "istanbul",
            "straße",
            "straße/x",
            "σοφια",
            "οδος",
            "οδοσ",
            "dailyish",
            "a",
            "a/",
            "a//b",
            "b",
            "",
            "projec",
            "project/kb-mcp/deeper",
        ] {
            let expected: Vec<u32> = (0..catalog.records().len())
                .filter(|&at| carries(&catalog.records()[at], tag))
                .map(|at| at as u32)
                .collect();
            assert_eq!(catalog.tagged(tag), expected.as_slice(), "{tag}");
        }
    }
}
