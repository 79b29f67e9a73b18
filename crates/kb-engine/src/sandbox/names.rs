//! How names compare, and which invisible characters a new name may hold.
//!
//! Two spellings of one name are one name: `café` typed precomposed (NFC, as
//! most keyboards do) and decomposed (NFD, as macOS often stores file names)
//! must find each other, and a proposal must not create one beside the other.
//! So names are compared by their [`name_key`]: NFC-normalised, then
//! lowercased (lookups were already case-insensitive, as Obsidian's are).
//! A proposal's new name is also compared by its [`twin_key`], which leaves
//! out zero-width characters, so `ca\u{200b}fe` is a twin of `cafe`.
//!
//! **Zero-width characters.** An existing file keeps whatever name
//! [`NotePath::parse`](super::NotePath::parse) accepts, zero-width space,
//! non-joiner and joiner included: Khmer and Thai file names hold U+200B,
//! Persian, Indic and emoji ones U+200C and U+200D (obsidian-help has 122),
//! and such notes stay readable and linkable. A name a proposal *creates* (a
//! move's destination, a new note's folder or file name) holds one only
//! between two characters of a script or symbol set that uses them: non-ASCII
//! letters, marks and symbols (a Khmer word break, a Persian word, an Indic
//! conjunct, an emoji sequence); see [`stray_zero_width`]. One at a name's
//! edge, beside ASCII, a space or punctuation only makes a name read as
//! another (`ca\u{200b}fe`); for a new note the server drops it from the title.

use std::fs;

use unicode_normalization::{IsNormalized, UnicodeNormalization, is_nfc_quick};

use super::fs::is_missing;
use super::notes::walk_to_folder;
use super::{NotePath, Sandbox};
use crate::error::{Error, Result};

/// The form two names are compared in: NFC-normalised, then lowercased.
pub fn name_key(name: &str) -> String {
    if name.is_ascii() {
        return name.to_ascii_lowercase();
    }
    if is_nfc_quick(name.chars()) == IsNormalized::Yes {
        return name.to_lowercase();
    }
    name.nfc().collect::<String>().to_lowercase()
}

/// [`name_key`] without zero-width characters: what a new name may not share
/// with a file already in its folder.
pub fn twin_key(name: &str) -> String {
    let key = name_key(name);
    if key.chars().any(is_zero_width) { key.chars().filter(|&c| !is_zero_width(c)).collect() } else { key }
}

/// The characters that take no width and join or separate nothing visibly:
/// zero-width space, non-joiner and joiner (the others, U+2060 and U+FEFF,
/// are refused in every path).
pub fn is_zero_width(c: char) -> bool {
    matches!(c, '\u{200B}'..='\u{200D}')
}

/// The first zero-width character a name a proposal creates may not hold
/// (see the module docs), with its byte offset; `None` when there is none.
pub fn stray_zero_width(name: &str) -> Option<(usize, char)> {
    let chars: Vec<(usize, char)> = name.char_indices().collect();
    chars.iter().enumerate().find_map(|(at, &(offset, c))| {
        if !is_zero_width(c) {
            return None;
        }
        let joins = |neighbour: Option<&(usize, char)>| neighbour.is_some_and(|&(_, n)| joining(n));
        let joined = at > 0 && joins(chars.get(at - 1)) && joins(chars.get(at + 1));
        (!joined).then_some((offset, c))
    })
}

/// Why a name a proposal creates is refused (its zero-width characters), or `None`.
pub fn new_name_refusal(name: &str) -> Option<String> {
    let (_, c) = stray_zero_width(name)?;
    let what = match c {
        '\u{200B}' => "a zero-width space",
        '\u{200C}' => "a zero-width non-joiner",
        _ => "a zero-width joiner",
    };
    Some(format!(
        "the new name {name:?} holds {what} (U+{:04X}) where no script needs one, so it would read as \
         another name; leave it out",
        u32::from(c)
    ))
}

/// A character a joiner may stand beside: not ASCII, not a space, control,
/// zero-width or general punctuation (U+2000..U+206F), not CJK punctuation.
fn joining(c: char) -> bool {
    !c.is_ascii()
        && !c.is_whitespace()
        && !c.is_control()
        && !is_zero_width(c)
        && !matches!(c, '\u{2000}'..='\u{206F}' | '\u{3000}'..='\u{303F}' | '\u{FE10}'..='\u{FE1F}')
}

impl Sandbox {
    /// The names in a vault folder (`""`: the root), reached through real
    /// folders; empty when it does not exist.
    pub(crate) fn names_in(&self, folder: &str) -> Result<Vec<String>> {
        let disk = if folder.is_empty() {
            self.root().to_path_buf()
        } else {
            walk_to_folder(self, &NotePath::parse(folder)?)?
        };
        let entries = match fs::read_dir(&disk) {
            Ok(entries) => entries,
            Err(err) if is_missing(&err) || err.kind() == std::io::ErrorKind::NotADirectory => {
                return Ok(Vec::new());
            }
            Err(err) => return Err(Error::io(folder, &err)),
        };
        let mut names: Vec<String> =
            entries.flatten().filter_map(|entry| entry.file_name().into_string().ok()).collect();
        names.sort();
        Ok(names)
    }

    /// The file or folder beside where `path` would go whose name is `path`'s
    /// in another spelling ([`twin_key`]: another normalisation, case or
    /// zero-width characters), or `path` itself when it exists; `None` when its
    /// folder holds no such name (or does not exist).
    pub(crate) fn twin_of(&self, path: &NotePath) -> Result<Option<NotePath>> {
        let names = self.names_in(path.parent())?;
        Ok(twin_among(&names, path))
    }

    /// Refuses (`path_denied`) a path whose new names (its last segment, and
    /// the folders on the way that do not exist yet: what a proposal would
    /// create) hold a stray zero-width character; see the module docs.
    pub(crate) fn check_new_names(&self, path: &NotePath) -> Result<()> {
        let segments: Vec<&str> = path.as_str().split('/').collect();
        for (at, segment) in segments.iter().enumerate() {
            let Some(why) = new_name_refusal(segment) else { continue };
            let folder = NotePath::parse(&segments[..=at].join("/"))?;
            let exists = at + 1 < segments.len() && self.folder_exists(&folder).unwrap_or(false);
            if !exists {
                return Err(Error::denied(format!("{path} is refused: {why}")));
            }
        }
        Ok(())
    }
}

/// Among the `names` of `path`'s folder, the one that is `path`'s name itself,
/// else the first in another spelling ([`twin_key`]), as a path.
pub fn twin_among(names: &[String], path: &NotePath) -> Option<NotePath> {
    let wanted = twin_key(path.file_name());
    let exact = names.iter().find(|name| *name == path.file_name());
    let name = exact.or_else(|| names.iter().find(|name| twin_key(name) == wanted))?;
    let parent = path.parent();
    NotePath::parse(&if parent.is_empty() { name.clone() } else { format!("{parent}/{name}") }).ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys() {
        assert_eq!(name_key("Caf\u{e9}"), name_key("cafe\u{301}"));
        assert_eq!(name_key("ABC"), "abc");
        assert_ne!(name_key("ca\u{200b}fe"), name_key("cafe"));
        assert_eq!(twin_key("ca\u{200b}fe"), twin_key("CAFE"));
    }

    #[test]
    fn joiners_only_where_a_script_needs_them() {
        for fine in [
            "家庭 \u{1f468}\u{200d}\u{1f469}\u{200d}\u{1f467}",
            "\u{2764}\u{fe0f}\u{200d}\u{1f525}",
            "\u{645}\u{6cc}\u{200c}\u{62e}\u{648}\u{627}\u{647}\u{645}",
            "\u{915}\u{94d}\u{200d}\u{937}",
            "\u{179a}\u{17b6}\u{1794}\u{17cb}\u{200b}\u{1796}\u{17b6}\u{1780}\u{17d2}\u{1799}",
            "plain",
        ] {
            assert_eq!(stray_zero_width(fine), None, "{fine:?}");
        }
        for (stray, at) in [
            ("ca\u{200b}fe", 2),
            ("a\u{200d}b", 1),
            ("\u{200c}\u{645}", 0),
            ("\u{645}\u{200d}", 2),
            ("\u{645} \u{200d}\u{645}", 3),
            ("a\u{200b}\u{645}", 1),
        ] {
            assert_eq!(stray_zero_width(stray).map(|(offset, _)| offset), Some(at), "{stray:?}");
        }
    }
}
