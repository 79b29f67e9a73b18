//! Three-way merges of a note's text, as git merges a file: a revert's
//! inverse (the change it makes from what the apply left) carried onto the
//! note as the person has it now, when their later edits lie elsewhere.
//!
//! libgit2's file merge (`git merge-file`, no repository involved) decides and
//! writes the merged text; when it finds the two sides overlapping, the lines
//! of the note as it is now that collide with the inverse are named from the
//! line diffs of both sides, for a person to look at.

use std::ops::Range;

use git2::{MergeFileInput, MergeFileOptions, merge_file};
use imara_diff::Hunk;

use super::diff::LineDiff;
use crate::error::{Error, Result};

/// What merging gave.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Merged {
    /// Both sides' changes, in one text.
    Clean(String),
    /// The sides change the same lines: the 1-based line ranges of `ours`
    /// (inclusive) that collide; a deletion names the line after it.
    Overlap(Vec<(u32, u32)>),
}

/// Merges `theirs`' change from `base` into `ours` (which changed `base` too).
pub(crate) fn merge(base: &str, ours: &str, theirs: &str) -> Result<Merged> {
    fn input(text: &str) -> MergeFileInput<'_> {
        let mut input = MergeFileInput::new();
        input.content(text.as_bytes()).path("note.md");
        input
    }
    // git2 0.21's file merge does not start libgit2 itself (its allocator and
    // error state): any call that does, once, before it.
    let _ = git2::Oid::from_str("0");
    let (base_in, ours_in, theirs_in) = (input(base), input(ours), input(theirs));
    let mut options = MergeFileOptions::new();
    options.style_standard(true);
    let result = merge_file(&base_in, &ours_in, &theirs_in, Some(&mut options))
        .map_err(|err| Error::internal(format!("merging a note's text: {}", err.message())))?;
    if result.is_automergeable() {
        let text = String::from_utf8(result.content().to_vec())
            .map_err(|_| Error::internal("merging a note's text gave bytes that are not UTF-8"))?;
        return Ok(Merged::Clean(text));
    }
    Ok(Merged::Overlap(colliding_lines(base, ours, theirs)))
}

/// The lines of `ours` whose change from `base` touches or overlaps one of
/// `theirs`'; every changed line of `ours` when none does by that measure (git
/// found an overlap nonetheless).
fn colliding_lines(base: &str, ours: &str, theirs: &str) -> Vec<(u32, u32)> {
    let our_diff = LineDiff::new(base, ours);
    let their_diff = LineDiff::new(base, theirs);
    let ours_hunks: Vec<Hunk> = our_diff.hunks().collect();
    let theirs_hunks: Vec<Hunk> = their_diff.hunks().collect();
    let meet = |a: &Range<u32>, b: &Range<u32>| a.start <= b.end && b.start <= a.end;
    let colliding: Vec<&Hunk> =
        ours_hunks.iter().filter(|o| theirs_hunks.iter().any(|t| meet(&o.before, &t.before))).collect();
    let chosen = if colliding.is_empty() { ours_hunks.iter().collect() } else { colliding };
    let last_line = u32::try_from(ours.lines().count()).unwrap_or(u32::MAX).max(1);
    chosen
        .into_iter()
        .map(|hunk| {
            let start = (hunk.after.start + 1).min(last_line);
            let end = hunk.after.end.max(start).min(last_line);
            (start, end)
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    const BASE: &str = "# Note\n\none\ntwo\nthree\nfour\nfive\nsix\nseven\n";

    #[test]
    fn changes_on_distant_lines_merge() {
        let ours = BASE.replace("six", "six, as the person wrote");
        let theirs = BASE.replace("one", "uno");
        let merged = merge(BASE, &ours, &theirs).unwrap();
        assert_eq!(
            merged,
            Merged::Clean(BASE.replace("one", "uno").replace("six", "six, as the person wrote"))
        );
    }

    #[test]
    fn changes_to_one_line_collide_and_name_it() {
        let ours = BASE.replace("three", "THREE");
        let theirs = BASE.replace("three", "drei");
        assert_eq!(merge(BASE, &ours, &theirs).unwrap(), Merged::Overlap(vec![(5, 5)]));
    }

    #[test]
    fn a_deletion_beside_a_change_collides() {
        let ours = BASE.replace("four\n", "");
        let theirs = BASE.replace("three", "drei");
        match merge(BASE, &ours, &theirs).unwrap() {
            Merged::Overlap(lines) => assert_eq!(lines, vec![(6, 6)]),
            clean => panic!("adjacent changes merged: {clean:?}"),
        }
    }
}
