//! [`NotePath`]: a vault-relative path that passed every lexical check.
//!
//! Every string that names a place in the vault (a tool argument, a link target,
//! a path in proposal metadata, a file name met during a walk) becomes a
//! `NotePath` here or is refused. The checks are purely textual and deliberately
//! strict: nothing is normalised or rewritten, so the path that is checked is the
//! path that is used. Forms that some platform, decoder or file system would
//! reinterpret (absolute and drive paths, `..`, backslashes, Windows streams and
//! device names, trailing dots, 8.3 short names, percent-encoding, Unicode
//! look-alikes of separators, invisible characters) are refused on every
//! platform, because the vault may be served from one and written on another.
//! Where a valid path really leads is checked later, on the real path, by `fs`.

use std::fmt;

use serde::Serialize;

use super::percent_decode;
use crate::error::{Error, Result};

/// Longest accepted path, in bytes.
const MAX_PATH_BYTES: usize = 1024;
/// Longest accepted segment (file or folder name), in bytes.
const MAX_SEGMENT_BYTES: usize = 255;
/// How many rounds of percent-decoding are tried (`%252e` is `.` after two).
const PERCENT_ROUNDS: usize = 3;

/// A vault-relative path with forward slashes, validated once at the edge.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize)]
#[serde(transparent)]
pub struct NotePath(String);

impl NotePath {
    /// Validates an outside string. `path_denied` for every hostile form of the
    /// contract, `invalid_argument` for an empty string.
    pub fn parse(input: &str) -> Result<NotePath> {
        if input.is_empty() {
            return Err(Error::invalid("the path is empty; name a vault-relative file such as z/note.md"));
        }
        if let Some(why) = refusal(input) {
            return Err(Error::denied(format!("path {} is refused: {why}", quote(input))));
        }
        Ok(NotePath(input.to_owned()))
    }

    /// Validates a `folder` argument: `None` for an empty one, which means the
    /// whole vault; one trailing slash is allowed (`z/tech/`). Every
    /// other form goes through [`NotePath::parse`], so `/` is refused as absolute
    /// rather than read as "no folder".
    pub(crate) fn parse_folder(input: &str) -> Result<Option<NotePath>> {
        if input.is_empty() {
            return Ok(None);
        }
        let text = match input.strip_suffix('/') {
            Some(rest) if !rest.is_empty() => rest,
            _ => input,
        };
        NotePath::parse(text).map(Some)
    }

    /// The path as text, e.g. `z/备份仓库.md`.
    pub fn as_str(&self) -> &str {
        &self.0
    }

    /// The last segment, e.g. `备份仓库.md`.
    pub fn file_name(&self) -> &str {
        self.0.rsplit('/').next().unwrap_or(&self.0)
    }

    /// The file name without its `.md` extension (any case), e.g. `备份仓库`.
    pub fn stem(&self) -> &str {
        strip_md(self.file_name())
    }

    /// The parent folder, `""` at the top level.
    pub fn parent(&self) -> &str {
        self.0.rsplit_once('/').map_or("", |(parent, _)| parent)
    }

    /// Whether the file name ends in `.md` (any case).
    pub fn is_markdown(&self) -> bool {
        ends_in_md(self.file_name())
    }

    /// Whether the file name ends in `.canvas` (any case): a JSON Canvas,
    /// read and indexed as a note, written only by moves.
    pub fn is_canvas(&self) -> bool {
        let name = self.file_name();
        name.len() > 7 && name.get(name.len() - 7..).is_some_and(|ext| ext.eq_ignore_ascii_case(".canvas"))
    }

    /// Whether the file name ends in `.pdf` (any case): a PDF, indexed and
    /// read by its extracted text, never written.
    pub fn is_pdf(&self) -> bool {
        let name = self.file_name();
        name.len() > 4 && name.get(name.len() - 4..).is_some_and(|ext| ext.eq_ignore_ascii_case(".pdf"))
    }

    /// Whether the file is read as a note: Markdown, a canvas, or a PDF (its text).
    pub fn is_note(&self) -> bool {
        self.is_markdown() || self.is_canvas() || self.is_pdf()
    }
}

/// `text` without a final `.md` in any case (`Alpha.Md` → `Alpha`), else `text`:
/// the one rule for a note's stem, used by paths, records, link resolution and slugs.
pub fn strip_md(text: &str) -> &str {
    match text.len().checked_sub(3) {
        Some(cut) if text.is_char_boundary(cut) && text[cut..].eq_ignore_ascii_case(".md") => &text[..cut],
        _ => text,
    }
}

/// Whether `text` ends in `.md` in any case: [`strip_md`]'s rule, for names that
/// are not (or not yet) a [`NotePath`], such as one the walk refuses.
pub fn ends_in_md(text: &str) -> bool {
    strip_md(text).len() != text.len()
}

impl fmt::Display for NotePath {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

/// Why `input` is not an acceptable vault path, or `None` when it is.
fn refusal(input: &str) -> Option<String> {
    if input.len() > MAX_PATH_BYTES {
        return Some(format!("it is {} bytes long, more than {MAX_PATH_BYTES}", input.len()));
    }
    if let Some(why) = absolute(input) {
        return Some(why.to_owned());
    }
    if let Some(c) = input.chars().find(|&c| forbidden_char(c).is_some()) {
        let why = forbidden_char(c).unwrap_or_default();
        return Some(format!("it contains {why} ({})", describe_char(c)));
    }
    if input.ends_with('/') {
        return Some("it ends with a slash; name a file, not a folder".to_owned());
    }
    for segment in input.split('/') {
        if let Some(why) = bad_segment(segment) {
            return Some(format!("segment {} {why}", quote(segment)));
        }
    }
    percent_refusal(input).map(|why| format!("it is percent-encoded and decodes to {why}"))
}

/// Absolute, rooted, UNC and drive-relative forms.
fn absolute(input: &str) -> Option<&'static str> {
    let bytes = input.as_bytes();
    if input.starts_with("//") || input.starts_with("\\\\") {
        return Some("it is a network (UNC) path; use a vault-relative path");
    }
    if input.starts_with('/') || input.starts_with('\\') {
        return Some("it is absolute; use a vault-relative path");
    }
    if bytes.len() >= 2 && bytes[0].is_ascii_alphabetic() && bytes[1] == b':' {
        return Some("it starts with a drive letter; use a vault-relative path");
    }
    if input == "~" || input.starts_with("~/") {
        return Some("it names a home folder; use a vault-relative path");
    }
    None
}

/// Characters never accepted anywhere in a path, with the reason: the one table
/// of forbidden characters (new notes' file names are made from it too).
pub fn forbidden_char(c: char) -> Option<&'static str> {
    Some(match c {
        '\0' => "a NUL byte",
        '\\' => "a backslash; use forward slashes",
        ':' => "a colon (a Windows drive letter or alternate data stream)",
        '<' | '>' | '"' | '|' | '?' | '*' => "a character Windows and Obsidian do not allow in file names",
        c if c.is_control() => "a control character",
        // Look-alikes of `/`, `\`, `.` and `:` that best-fit code-page conversions
        // or careless normalisation can turn into the real thing.
        '\u{2215}' | '\u{2044}' | '\u{FF0F}' | '\u{29F8}' | '\u{2571}' => "a look-alike of '/'",
        '\u{FF3C}' | '\u{29F9}' | '\u{2216}' | '\u{FE68}' | '\u{29F5}' | '\u{2572}' => "a look-alike of '\\'",
        '\u{FF0E}' | '\u{2024}' | '\u{2025}' | '\u{FE52}' => "a look-alike of '.'",
        // The fullwidth colon U+FF1A is allowed: Chinese titles use it all the time
        // (`读书笔记：深度工作`), and nothing here maps it to ':' (no NFKC, wide APIs).
        '\u{2236}' | '\u{FE55}' | '\u{FE13}' | '\u{A789}' => "a look-alike of ':'",
        c if is_invisible(c) => INVISIBLE,
        _ => return None,
    })
}

/// Why an invisible character is refused.
const INVISIBLE: &str = "an invisible or text-direction character";

/// Invisible and text-direction characters: they make a path read differently
/// from what it is. Zero-width space, non-joiner and joiner (U+200B..U+200D) are
/// not among them: Khmer and Thai separate words with U+200B, Persian, Indic
/// scripts and emoji join with U+200C/U+200D (obsidian-help has 91 such file
/// names), and none of them can act as a separator. A name a proposal creates
/// holds them only where a script needs them (`names.rs`).
pub fn is_invisible(c: char) -> bool {
    matches!(
        c,
        '\u{00AD}'
            | '\u{061C}'
            | '\u{180E}'
            | '\u{200E}'..='\u{200F}'
            | '\u{2028}'..='\u{202E}'
            | '\u{2060}'..='\u{2064}'
            | '\u{2066}'..='\u{206F}'
            | '\u{FEFF}'
            | '\u{FFF9}'..='\u{FFFB}'
    )
}

/// Why one `/`-separated segment is refused.
fn bad_segment(segment: &str) -> Option<String> {
    match segment {
        "" => return Some("is empty (a doubled slash)".to_owned()),
        "." => return Some("is '.'; paths are not normalised, name the file directly".to_owned()),
        ".." => return Some("is '..', which would climb out of its folder".to_owned()),
        _ => {}
    }
    if segment.len() > MAX_SEGMENT_BYTES {
        return Some(format!("is {} bytes long, more than {MAX_SEGMENT_BYTES}", segment.len()));
    }
    if segment.ends_with('.') || segment.ends_with(' ') {
        return Some("ends with a dot or a space, which Windows silently strips".to_owned());
    }
    if is_device_name(segment) {
        return Some("is a reserved Windows device name".to_owned());
    }
    let bytes = segment.as_bytes();
    if bytes.windows(2).any(|pair| pair[0] == b'~' && pair[1].is_ascii_digit()) {
        return Some("looks like a Windows 8.3 short name (~ followed by a digit)".to_owned());
    }
    None
}

/// `CON`, `nul.md`, `COM1 .txt`, `conout$`: Windows opens the device whatever the
/// extension, ignoring case and trailing spaces before the first dot.
pub fn is_device_name(segment: &str) -> bool {
    const DEVICES: [&str; 5] = ["CON", "PRN", "AUX", "NUL", "CLOCK$"];
    const CONSOLES: [&str; 2] = ["CONIN$", "CONOUT$"];
    let stem = segment.split('.').next().unwrap_or(segment).trim_end_matches(' ');
    let upper = stem.to_ascii_uppercase();
    if DEVICES.contains(&upper.as_str()) || CONSOLES.contains(&upper.as_str()) {
        return true;
    }
    let Some(number) = upper.strip_prefix("COM").or_else(|| upper.strip_prefix("LPT")) else {
        return false;
    };
    let mut chars = number.chars();
    matches!((chars.next(), chars.next()), (Some('0'..='9' | '¹' | '²' | '³'), None))
}

/// Percent-decodes up to [`PERCENT_ROUNDS`] times and reports a separator, a NUL,
/// a `..` or a forbidden character that decoding produced and the raw text did
/// not have. A literal `%` (`100% done.md`) is fine.
fn percent_refusal(input: &str) -> Option<&'static str> {
    if !input.contains('%') {
        return None;
    }
    let raw = input.as_bytes();
    let mut current = raw.to_vec();
    for _ in 0..PERCENT_ROUNDS {
        let decoded = percent_decode(&current);
        if decoded == current {
            break;
        }
        if let Some(why) = introduced(raw, &decoded) {
            return Some(why);
        }
        current = decoded;
    }
    None
}

/// What dangerous text `decoded` has that `raw` has not.
fn introduced(raw: &[u8], decoded: &[u8]) -> Option<&'static str> {
    let count = |text: &[u8], byte: u8| text.iter().filter(|&&b| b == byte).count();
    for (byte, what) in [(b'/', "a slash"), (b'\\', "a backslash"), (0, "a NUL byte"), (b':', "a colon")] {
        if count(decoded, byte) > count(raw, byte) {
            return Some(what);
        }
    }
    if decoded.iter().any(|b| b.is_ascii_control()) {
        return Some("a control character");
    }
    let dots = |text: &[u8]| text.windows(2).filter(|pair| pair == b"..").count();
    if dots(decoded) > dots(raw) {
        return Some("'..'");
    }
    if decoded.split(|&b| b == b'/').any(|segment| segment == b".") {
        return Some("a '.' segment");
    }
    if String::from_utf8_lossy(decoded).chars().any(|c| forbidden_char(c).is_some()) {
        return Some("a forbidden character");
    }
    None
}

/// The input as a quoted, escaped string for messages, cut short when long.
fn quote(text: &str) -> String {
    const SHOWN: usize = 120;
    match text.char_indices().nth(SHOWN) {
        Some((cut, _)) => format!("{:?}...", &text[..cut]),
        None => format!("{text:?}"),
    }
}

/// `U+2215 '∕'` for a message.
fn describe_char(c: char) -> String {
    if c.is_control() || is_invisible(c) {
        format!("U+{:04X}", u32::from(c))
    } else {
        format!("U+{:04X} {c:?}", u32::from(c))
    }
}
