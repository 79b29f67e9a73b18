//! The unified diff a person reviews before applying a patch: `diff -u`'s format,
//! which `patch` and `git apply` accept.
//!
//! imara-diff finds the changed lines; the hunks are grouped and printed here
//! because its own printer (0.2.0) names the wrong first line when the first change
//! lies within twice the context of the top of the file (`@@ -2,9 …` over context
//! that starts at line 1). Each header is computed from the same ranges as the
//! lines printed under it.

use std::fmt::Write as _;
use std::ops::Range;

use imara_diff::{Algorithm, Diff, Hunk, InternedInput, Interner, Token};

/// Unchanged lines shown around each change, as `diff -u`.
const CONTEXT: u32 = 3;

/// A unified diff with `--- a/<path>` / `+++ b/<path>` headers, and the numbers of
/// lines added and removed.
pub fn unified_diff(path: &str, before: &str, after: &str) -> (String, u32, u32) {
    LineDiff::new(before, after).unified(path)
}

/// The numbers of lines added and removed from `before` to `after`.
pub fn line_changes(before: &str, after: &str) -> (u32, u32) {
    let diff = LineDiff::new(before, after);
    (diff.diff.count_additions(), diff.diff.count_removals())
}

/// The changed lines between two texts, computed once for everything made of
/// them: the unified diff a person reviews and the splices a plan stores.
pub(crate) struct LineDiff<'a> {
    input: InternedInput<&'a str>,
    diff: Diff,
}

impl<'a> LineDiff<'a> {
    pub(crate) fn new(before: &'a str, after: &'a str) -> Self {
        let input = InternedInput::new(before, after);
        let mut diff = Diff::compute(Algorithm::Histogram, &input);
        diff.postprocess_lines(&input);
        LineDiff { input, diff }
    }

    /// The changed runs of lines, in order.
    pub(crate) fn hunks(&self) -> impl Iterator<Item = Hunk> + '_ {
        self.diff.hunks()
    }

    /// [`unified_diff`] of the two texts.
    pub(crate) fn unified(&self, path: &str) -> (String, u32, u32) {
        let mut text = format!("--- a/{path}\n+++ b/{path}\n");
        let hunks: Vec<Hunk> = self.diff.hunks().collect();
        let input = &self.input;
        let lines = Lines { interner: &input.interner, before: &input.before, after: &input.after };
        for group in groups(&hunks) {
            lines.write_group(&mut text, group);
        }
        (text, self.diff.count_additions(), self.diff.count_removals())
    }
}

/// Splits the changes into runs whose gaps are at most twice the context: each
/// run is printed as one hunk.
fn groups(hunks: &[Hunk]) -> impl Iterator<Item = &[Hunk]> {
    hunks.chunk_by(|a, b| b.before.start - a.before.end <= 2 * CONTEXT)
}

struct Lines<'a> {
    interner: &'a Interner<&'a str>,
    before: &'a [Token],
    after: &'a [Token],
}

impl Lines<'_> {
    fn write_group(&self, out: &mut String, group: &[Hunk]) {
        let (Some(first), Some(last)) = (group.first(), group.last()) else { return };
        // Unchanged lines pair one to one between changes, so the context before
        // and after a run has the same length on both sides.
        let lead = first.before.start.min(CONTEXT);
        let trail = (u32_len(self.before) - last.before.end).min(CONTEXT);
        let old = first.before.start - lead..last.before.end + trail;
        let new = first.after.start - lead..last.after.end + trail;
        let _ = writeln!(out, "@@ -{} +{} @@", range(&old), range(&new));
        let mut at = old.start;
        for hunk in group {
            self.write(out, ' ', &self.before[span(at..hunk.before.start)]);
            self.write(out, '-', &self.before[span(hunk.before.clone())]);
            self.write(out, '+', &self.after[span(hunk.after.clone())]);
            at = hunk.before.end;
        }
        self.write(out, ' ', &self.before[span(at..old.end)]);
    }

    /// Prints lines with a prefix, marking a last line without a line ending with
    /// `\ No newline at end of file`.
    fn write(&self, out: &mut String, prefix: char, tokens: &[Token]) {
        for &token in tokens {
            let line = self.interner[token];
            out.push(prefix);
            out.push_str(line);
            if !line.ends_with('\n') {
                out.push_str("\n\\ No newline at end of file\n");
            }
        }
    }
}

/// A hunk header's `start,length`: 1-based, and an empty side names the line
/// before it, as `diff -u` does.
fn range(lines: &Range<u32>) -> String {
    let len = lines.end - lines.start;
    let start = if len == 0 { lines.start } else { lines.start + 1 };
    format!("{start},{len}")
}

fn span(lines: Range<u32>) -> Range<usize> {
    lines.start as usize..lines.end as usize
}

fn u32_len(tokens: &[Token]) -> u32 {
    u32::try_from(tokens.len()).unwrap_or(u32::MAX)
}

/// The text a unified diff made by [`unified_diff`] was taken from, given the
/// text it leads to: the diff read backwards. `None` when the diff does not fit
/// `after` (it was edited, or is of another text). The caller checks the
/// result against the hash it expects.
pub(crate) fn undo_diff(after: &str, diff: &str) -> Option<String> {
    let after_lines: Vec<&str> = after.split_inclusive('\n').collect();
    let mut before = String::with_capacity(after.len());
    let mut at = 0usize;
    let mut lines = diff.split('\n').skip_while(|line| !line.starts_with("@@")).peekable();
    while let Some(line) = lines.next() {
        if let Some(header) = line.strip_prefix("@@ -") {
            // `@@ -a,b +c,d @@`: the new side starts at line c (1-based), or after line c when d is 0.
            let new = header.split(" +").nth(1)?.split(' ').next()?;
            let (start, len) = new.split_once(',')?;
            let (start, len): (usize, usize) = (start.parse().ok()?, len.parse().ok()?);
            let first = if len == 0 { start } else { start.checked_sub(1)? };
            if first < at || first > after_lines.len() {
                return None;
            }
            after_lines[at..first].iter().for_each(|line| before.push_str(line));
            at = first;
            continue;
        }
        let (sign, text) = match line.chars().next() {
            Some(sign @ (' ' | '-' | '+')) => (sign, &line[1..]),
            // The last split piece after the final newline, or a stray line.
            None if lines.peek().is_none() => break,
            _ => return None,
        };
        let ends = lines.peek() != Some(&"\\ No newline at end of file");
        if !ends {
            lines.next();
        }
        let whole = if ends { format!("{text}\n") } else { text.to_owned() };
        match sign {
            ' ' | '+' => {
                if after_lines.get(at) != Some(&whole.as_str()) {
                    return None;
                }
                at += 1;
                if sign == ' ' {
                    before.push_str(&whole);
                }
            }
            _ => before.push_str(&whole),
        }
    }
    after_lines.get(at..)?.iter().for_each(|line| before.push_str(line));
    Some(before)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Reading a diff backwards gives back the text it was taken from, whatever
    /// the line endings, a missing last newline, or changes at either end.
    #[test]
    fn a_diff_read_backwards_gives_the_text_before() {
        let cases = [
            ("a\nb\nc\n", "a\nB\nc\n"),
            ("a\nb\nc", "a\nb\nc\nd"),
            ("x\r\ny\r\n", "x\r\nz\r\ny\r\n"),
            ("", "new\n"),
            ("old\n", ""),
            ("1\n2\n3\n4\n5\n6\n7\n8\n9\n10\n11\n12\n", "0\n1\n2\n3\n4\n5\n6\n7\n8\n9\n10\n11\n12\n13"),
            ("\u{feff}---\nt: 1\n---\nbody\n", "\u{feff}---\nt: 2\n---\nbody\nmore\n"),
            ("same\n", "same\n"),
        ];
        for (before, after) in cases {
            let (diff, _, _) = unified_diff("z/a.md", before, after);
            assert_eq!(undo_diff(after, &diff).as_deref(), Some(before), "{diff}");
        }
        let (diff, _, _) = unified_diff("z/a.md", "a\nb\n", "a\nc\n");
        assert_eq!(undo_diff("a\nd\n", &diff), None, "a diff of another text");
    }
}
