//! The rule by which an audit fix is mechanical: the name a link, an anchor or
//! a tag wrote and the name the fix writes are the same name written
//! differently, so `audit_vault {fix: true}` may stage the fix without anyone
//! judging its meaning. Anything else the audit can only guess (`Chapter 3` for
//! a missing `Chapter 2`, `#work/health` for `#personal/health`, the nearest of
//! several headings) and leaves as a suggestion for a person.
//!
//! Two names are the same name written differently when their folded forms are
//! equal and hold a letter or a digit. Folding lowercases, decomposes
//! compatibility forms (full-width `Ａ`, ligatures, `①`), drops the accents of
//! the combining block U+0300–U+036F (`é` is `e`; the kana voicing marks, the
//! vowel signs of other scripts stay), and drops whitespace and common
//! punctuation (`- _ . , : ; ! ? ' " ( )`, dashes, quotes, the CJK comma, stop
//! and brackets), except around digits: a run of them between two digits stays
//! as written (`1.2` is not `12`, `2024-03` is not `2024 03`), and before a
//! digit its non-space characters stay (`-3` is not `3`). Digits themselves
//! always stay, so names that differ in a number, a date or a version never
//! fold together. Other symbols (`+ & # @ % /`) stay too: `C++` is not `C`, and
//! a folder is not part of a name. A link target's `.md` is dropped before.

use unicode_normalization::UnicodeNormalization;

/// Punctuation that only spells a name differently (whitespace is too).
const SEPARATORS: &[char] = &[
    '-', '_', '.', ',', ':', ';', '!', '?', '\'', '"', '(', ')', '‐', '‑', '‒', '–', '—', '―', '‘', '’', '‚',
    '‛', '“', '”', '„', '‟', '…', '·', '・', '、', '。', '「', '」', '『', '』', '《', '》', '〈', '〉',
    '【', '】', '«', '»', '‹', '›',
];

fn is_separator(c: char) -> bool {
    c.is_whitespace() || SEPARATORS.contains(&c)
}

/// Whether `c` is an accent of the combining block U+0300–U+036F.
fn is_accent(c: char) -> bool {
    ('\u{300}'..='\u{36f}').contains(&c)
}

/// `name` folded as the module docs say; `None` when nothing but separators
/// and symbols is left.
pub(super) fn folded(name: &str) -> Option<String> {
    // ASCII is its own decomposition: most names skip the tables.
    let chars: Vec<char> = if name.is_ascii() {
        name.chars().map(|c| c.to_ascii_lowercase()).collect()
    } else {
        name.to_lowercase().nfkd().filter(|&c| !is_accent(c)).collect()
    };
    let digit = |at: Option<&char>| at.is_some_and(|c| c.is_numeric());
    let mut out = String::with_capacity(name.len());
    let mut at = 0;
    while at < chars.len() {
        if !is_separator(chars[at]) {
            out.push(chars[at]);
            at += 1;
            continue;
        }
        let start = at;
        while at < chars.len() && is_separator(chars[at]) {
            at += 1;
        }
        let run = &chars[start..at];
        let after = digit(chars.get(at));
        if after && start > 0 && digit(chars.get(start - 1)) {
            out.extend(run);
        } else if after {
            out.extend(run.iter().filter(|c| !c.is_whitespace()));
        }
    }
    out.chars().any(char::is_alphanumeric).then_some(out)
}

/// Whether `text` can be written as a wikilink's target or anchor and read
/// back as the same: no `#`, `|`, `^` or brackets, which would cut the link
/// into other parts, and no line break.
pub(super) fn fits_in_link(text: &str) -> bool {
    !text.trim().is_empty() && !text.contains(['#', '|', '^', '[', ']', '\n', '\r'])
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Whether `a` and `b` are the same name written differently (or alike).
    fn same_name(a: &str, b: &str) -> bool {
        folded(a).is_some_and(|a| Some(a) == folded(b))
    }

    /// Names that are one name written differently, and names that differ in
    /// what they mean (the issue 34 examples among them).
    #[test]
    fn same_name_only_when_written_differently() {
        for (a, b) in [
            ("Restore drills", "restore-drills"),
            ("Restore drills", "Restore_Drills"),
            ("Git 远程仓库", "Git远程仓库"),
            ("Café crème", "Cafe creme"),
            ("Ｃｈａｐｔｅｒ ３", "chapter 3"),
            ("Chapter 3", "Chapter3"),
            ("It's done!", "its done"),
            ("备份，仓库", "备份仓库"),
            ("Setup: step 1", "setup step 1"),
        ] {
            assert!(same_name(a, b), "{a:?} and {b:?} are one name");
        }
        for (a, b) in [
            ("Chapter 3", "Chapter 2"),
            ("2024-03-16", "2024-03-15"),
            ("Project Alpha v2", "Project Alpha v1"),
            ("Chapter 1.2", "Chapter 12"),
            ("2024-03-15", "20240315"),
            ("Temperature -3", "Temperature 3"),
            ("Version .5", "Version 5"),
            ("C++", "C"),
            ("C#", "C"),
            ("personal/health", "work/health"),
            ("synthesis", "type/synthesis"),
            ("ハート", "ハード"),
            ("备份仓", "备份仓库"),
            ("Setup", "Set-ups"),
            ("...", "!!!"),
        ] {
            assert!(!same_name(a, b), "{a:?} and {b:?} are different names");
        }
    }

    #[test]
    fn fits_in_link_refuses_what_would_cut_a_link() {
        assert!(fits_in_link("z/Restore drills"));
        assert!(fits_in_link("同步不等于备份"));
        for bad in ["C# basics", "a|b", "x^y", "[[x]]", "two\nlines", " "] {
            assert!(!fits_in_link(bad), "{bad:?}");
        }
    }
}
