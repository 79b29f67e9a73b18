//! Safe file names from note titles.
//!
//! A proposed note's file name comes from its title, so the name must be valid
//! on every platform a vault is synced to and must pass [`NotePath::parse`]:
//! letters of every script are kept (Chinese titles stay Chinese, `：` included),
//! characters that Windows, macOS, Linux or Obsidian links forbid become `-`,
//! invisible characters are dropped (a zero-width joiner only where no script
//! or emoji sequence needs it), reserved Windows device names get a `-note`
//! suffix, and the result is at most [`MAX_SLUG_BYTES`] long. Which characters
//! and names are forbidden or invisible is the path layer's one table
//! (`sandbox::forbidden_char`, `is_invisible`, `is_device_name`), so a slug never
//! refuses what a path accepts.

use crate::sandbox::{NotePath, forbidden_char, is_device_name, is_invisible, stray_zero_width, strip_md};

/// Longest slug, in bytes (cut on a character boundary).
pub(super) const MAX_SLUG_BYTES: usize = 80;
/// The slug of a title with nothing usable in it.
const UNTITLED: &str = "untitled";

/// The file name (without `.md`) for a title.
pub(crate) fn slug(title: &str) -> String {
    let title = without_stray_zero_width(title);
    let mut out = String::with_capacity(title.len());
    let mut chars = title.chars().peekable();
    while let Some(c) = chars.next() {
        let mapped = if is_invisible(c) {
            continue;
        } else if c.is_whitespace() {
            ' '
        } else if is_forbidden(c) || (c == '~' && chars.peek().is_some_and(char::is_ascii_digit)) {
            // `~1` is refused too: it looks like a Windows 8.3 short name.
            '-'
        } else {
            c
        };
        if (mapped == '-' || mapped == ' ') && out.ends_with(mapped) {
            continue;
        }
        out.push(mapped);
    }
    let mut slug = finish(&out);
    if !is_valid(&slug) {
        slug = finish(&sanitize(&slug));
    }
    if is_valid(&slug) { slug } else { UNTITLED.to_owned() }
}

/// `title` without the zero-width characters a new name may not hold
/// (`sandbox::stray_zero_width`): a joiner an emoji or a script needs stays.
fn without_stray_zero_width(title: &str) -> String {
    let mut out = title.to_owned();
    while let Some((at, c)) = stray_zero_width(&out) {
        out.replace_range(at..at + c.len_utf8(), "");
    }
    out
}

/// Trims, bounds the length, avoids device names; `untitled` when nothing is left.
fn finish(text: &str) -> String {
    // A title like `notes.md` should not give `notes.md.md`.
    let trimmed = trim(strip_md(trim(text)));
    let mut cut = trimmed.len().min(MAX_SLUG_BYTES);
    while !trimmed.is_char_boundary(cut) {
        cut -= 1;
    }
    let bounded = trim(&trimmed[..cut]);
    if bounded.is_empty() {
        return UNTITLED.to_owned();
    }
    let stem_len = bounded.find('.').unwrap_or(bounded.len());
    if is_device_name(bounded) {
        format!("{}-note{}", &bounded[..stem_len], &bounded[stem_len..])
    } else {
        bounded.to_owned()
    }
}

/// Drops leading and trailing dots, spaces and dashes (a leading dot hides a
/// file; Windows strips trailing dots and spaces).
fn trim(text: &str) -> &str {
    text.trim_matches(|c: char| c == '.' || c == '-' || c.is_whitespace())
}

/// Whether `<slug>.md` is an acceptable vault file name.
fn is_valid(slug: &str) -> bool {
    !slug.is_empty() && NotePath::parse(&format!("{slug}.md")).is_ok()
}

/// The fallback for whatever the character rules above missed: every character
/// the path checks refuse on its own, and `%` (percent-encoded traversal), become `-`.
fn sanitize(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        let refused = c == '%' || NotePath::parse(&format!("a{c}a.md")).is_err();
        let mapped = if refused { '-' } else { c };
        if !(mapped == '-' && out.ends_with('-')) {
            out.push(mapped);
        }
    }
    out
}

/// Characters a file name may not hold: those the path checks refuse (the one
/// table, [`forbidden_char`]), the separator `/`, and those that break Obsidian
/// links.
fn is_forbidden(c: char) -> bool {
    forbidden_char(c).is_some() || matches!(c, '/' | '#' | '^' | '[' | ']')
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn slugs() {
        for (title, expected) in [
            ("备份仓库", "备份仓库"),
            ("a/b:c?*", "a-b-c"),
            ("CON", "CON-note"),
            ("nul.txt", "nul-note.txt"),
            ("notes.MD", "notes"),
            (".md", "md"),
            ("..", "untitled"),
            ("", "untitled"),
            ("  .hidden note.  ", "hidden note"),
            ("Rust~1 notes", "Rust-1 notes"),
            ("a\u{AD}b\u{202E}c", "abc"),
            ("a\u{200B}b", "ab"),
            ("家 \u{1f468}\u{200d}\u{1f469}", "家 \u{1f468}\u{200d}\u{1f469}"),
            ("x／y：z", "x-y：z"),
            ("%2e%2e", "2e-2e"),
            ("tabs\tand\nlines", "tabs and lines"),
            ("[[link]] #tag ^id", "-link- -tag -id".trim_matches('-')),
        ] {
            assert_eq!(slug(title), expected, "title {title:?}");
        }
        let long = slug(&"长".repeat(300));
        assert!(long.len() <= MAX_SLUG_BYTES && long.chars().all(|c| c == '长'));
    }
}
