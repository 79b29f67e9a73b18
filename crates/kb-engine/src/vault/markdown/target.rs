//! Where a Markdown link's destination points: percent-decoding, backslash
//! escapes, URL schemes (external links are not the vault's) and relative paths
//! resolved against the note's folder.

use super::link_syntax::make_anchor;
use crate::vault::note::Anchor;

/// Removes backslash escapes before ASCII punctuation.
pub(super) fn unescape(s: &str) -> String {
    if !s.contains('\\') {
        return s.to_owned();
    }
    let mut out = String::with_capacity(s.len());
    let mut chars = s.chars().peekable();
    while let Some(c) = chars.next() {
        if c == '\\'
            && let Some(&next) = chars.peek()
            && next.is_ascii_punctuation()
        {
            out.push(next);
            chars.next();
        } else {
            out.push(c);
        }
    }
    out
}

/// The vault-relative target and anchor of a local Markdown link, `None` for external
/// links (a URL scheme or `//host`) and empty destinations.
pub(super) fn markdown_target(destination: &str, folder: &str) -> Option<(String, Option<Anchor>)> {
    if destination.is_empty() || destination.starts_with("//") || has_scheme(destination) {
        return None;
    }
    let (path, fragment) = match destination.split_once('#') {
        Some((path, fragment)) => (path, Some(fragment)),
        None => (destination, None),
    };
    let anchor = fragment.and_then(|f| make_anchor(percent_decode(f).trim()));
    let path = percent_decode(path);
    if path.is_empty() {
        return anchor.map(|anchor| (String::new(), Some(anchor)));
    }
    Some((resolve_relative(&path, folder).unwrap_or(path), anchor))
}

/// `scheme:` as in RFC 3986, at least two characters (so `C:` is not one).
pub(super) fn has_scheme(s: &str) -> bool {
    let b = s.as_bytes();
    let len = b.iter().take_while(|c| c.is_ascii_alphanumeric() || matches!(c, b'+' | b'.' | b'-')).count();
    len >= 2 && b[0].is_ascii_alphabetic() && b.get(len) == Some(&b':')
}

/// Decodes `%XX` escapes; invalid UTF-8 after decoding leaves the text as written.
pub(super) fn percent_decode(s: &str) -> String {
    if !s.contains('%') {
        return s.to_owned();
    }
    String::from_utf8(crate::sandbox::percent_decode(s.as_bytes())).unwrap_or_else(|_| s.to_owned())
}

/// Resolves a link path against the note's folder (`/` starts at the vault root);
/// `None` when `..` would leave the vault.
pub(super) fn resolve_relative(path: &str, folder: &str) -> Option<String> {
    let mut segments: Vec<&str> = Vec::new();
    let rest = match path.strip_prefix('/') {
        Some(rest) => rest,
        None => {
            segments.extend(folder.split('/').filter(|s| !s.is_empty()));
            path
        }
    };
    for segment in rest.split('/') {
        match segment {
            "" | "." => {}
            ".." => {
                segments.pop()?;
            }
            other => segments.push(other),
        }
    }
    Some(segments.join("/"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn relative_paths() {
        assert_eq!(resolve_relative("a.md", "z").as_deref(), Some("z/a.md"));
        assert_eq!(resolve_relative("../b.md", "z/x").as_deref(), Some("z/b.md"));
        assert_eq!(resolve_relative("/b.md", "z/x").as_deref(), Some("b.md"));
        assert_eq!(resolve_relative("../../b.md", "z"), None);
        assert_eq!(percent_decode("a%20b%E5%A4%87"), "a b备");
        assert_eq!(percent_decode("100%"), "100%");
        assert_eq!(percent_decode("%FF"), "%FF");
    }

    #[test]
    fn schemes() {
        assert!(has_scheme("https://x"));
        assert!(has_scheme("mailto:a@b"));
        assert!(has_scheme("obsidian://open"));
        assert!(!has_scheme("C:/x"));
        assert!(!has_scheme("a.md"));
    }
}
