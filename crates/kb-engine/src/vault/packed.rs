//! A record's links and headings, packed for a catalog held in memory.
//!
//! A 100,000-note vault has about 730,000 links and 840,000 headings. As
//! parsed ([`Link`], [`Heading`]) each is a struct of owned strings: 88 and 32
//! bytes plus one to three small allocations. A record keeps them read-only,
//! so [`Links`] and [`Headings`] hold all of a note's text in one string and a
//! fixed-size entry per item (20 and 12 bytes), and lend views ([`LinkRef`],
//! [`HeadingRef`]). They serialise exactly as the lists of structs they
//! replace, so the records stored in the index keep their format.

use std::borrow::Cow;
use std::fmt;

use serde::de::{SeqAccess, Visitor};
use serde::{Deserialize, Deserializer, Serialize, Serializer};

use super::{Anchor, Heading, Link, LinkKind};

/// A length or offset as an entry stores it; the text of one note's links or
/// headings is far below 4 GiB (files are read up to a few MiB).
fn offset(length: usize) -> u32 {
    u32::try_from(length).unwrap_or(u32::MAX)
}

/// The part of a link after `#`, borrowed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum AnchorRef<'a> {
    /// `#Heading text`.
    Heading(&'a str),
    /// `#^block-id`.
    Block(&'a str),
}

/// A link of a record, borrowed; serialises as [`Link`] does.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct LinkRef<'a> {
    /// The target without anchor or display text (see [`Link::target`]).
    pub target: &'a str,
    /// The heading or block the link points at.
    pub anchor: Option<AnchorRef<'a>>,
    /// The display text.
    pub display: Option<&'a str>,
    /// How it was written.
    pub kind: LinkKind,
    /// 1-based line in the file as on disk.
    pub line: u32,
}

/// How an entry's anchor was written.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum AnchorKind {
    None,
    Heading,
    Block,
}

/// One link: its text is `target`, then `anchor`, then `display`, ending at `end`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct PackedLink {
    end: u32,
    target_len: u32,
    anchor_len: u32,
    line: u32,
    kind: LinkKind,
    anchor: AnchorKind,
    has_display: bool,
}

/// A record's links, in the order they are written.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Links {
    text: Box<str>,
    entries: Box<[PackedLink]>,
}

impl Links {
    /// Number of links.
    pub fn len(&self) -> usize {
        self.entries.len()
    }

    /// Whether there are none.
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// The link at `index`.
    pub fn get(&self, index: usize) -> Option<LinkRef<'_>> {
        (index < self.len()).then(|| self.at(index))
    }

    /// The links in order.
    pub fn iter(&self) -> impl ExactSizeIterator<Item = LinkRef<'_>> + '_ {
        (0..self.len()).map(|index| self.at(index))
    }

    fn at(&self, index: usize) -> LinkRef<'_> {
        let entry = &self.entries[index];
        let start = index.checked_sub(1).map_or(0, |before| self.entries[before].end as usize);
        let anchor_at = start + entry.target_len as usize;
        let display_at = anchor_at + entry.anchor_len as usize;
        let anchor_text = &self.text[anchor_at..display_at];
        LinkRef {
            target: &self.text[start..anchor_at],
            anchor: match entry.anchor {
                AnchorKind::None => None,
                AnchorKind::Heading => Some(AnchorRef::Heading(anchor_text)),
                AnchorKind::Block => Some(AnchorRef::Block(anchor_text)),
            },
            display: entry.has_display.then(|| &self.text[display_at..entry.end as usize]),
            kind: entry.kind,
            line: entry.line,
        }
    }
}

/// Appends one link to a list being packed.
fn push_link(
    text: &mut String,
    entries: &mut Vec<PackedLink>,
    target: &str,
    anchor: Option<AnchorRef<'_>>,
    display: Option<&str>,
    (kind, line): (LinkKind, u32),
) {
    let (anchor, anchor_text) = match anchor {
        None => (AnchorKind::None, ""),
        Some(AnchorRef::Heading(heading)) => (AnchorKind::Heading, heading),
        Some(AnchorRef::Block(block)) => (AnchorKind::Block, block),
    };
    text.push_str(target);
    text.push_str(anchor_text);
    text.push_str(display.unwrap_or(""));
    entries.push(PackedLink {
        end: offset(text.len()),
        target_len: offset(target.len()),
        anchor_len: offset(anchor_text.len()),
        line,
        kind,
        anchor,
        has_display: display.is_some(),
    });
}

impl From<Vec<Link>> for Links {
    fn from(links: Vec<Link>) -> Links {
        let mut text = String::with_capacity(
            links.iter().map(|l| l.target.len() + l.display.as_ref().map_or(0, String::len) + 8).sum(),
        );
        let mut entries = Vec::with_capacity(links.len());
        for link in &links {
            let anchor = match &link.anchor {
                None => None,
                Some(Anchor::Heading(heading)) => Some(AnchorRef::Heading(heading)),
                Some(Anchor::Block(block)) => Some(AnchorRef::Block(block)),
            };
            let display = link.display.as_deref();
            push_link(&mut text, &mut entries, &link.target, anchor, display, (link.kind, link.line));
        }
        Links { text: text.into_boxed_str(), entries: entries.into_boxed_slice() }
    }
}

impl Serialize for Links {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_seq(self.iter())
    }
}

/// A stored link as read: its text borrowed from the JSON where it can be.
#[derive(Deserialize)]
struct StoredLink<'a> {
    #[serde(borrow)]
    target: Cow<'a, str>,
    #[serde(borrow)]
    anchor: Option<StoredAnchor<'a>>,
    #[serde(borrow)]
    display: Option<Cow<'a, str>>,
    kind: LinkKind,
    line: u32,
}

#[derive(Deserialize)]
#[serde(rename_all = "snake_case")]
enum StoredAnchor<'a> {
    Heading(#[serde(borrow)] Cow<'a, str>),
    Block(#[serde(borrow)] Cow<'a, str>),
}

/// A stored heading as read.
#[derive(Deserialize)]
struct StoredHeading<'a> {
    level: u8,
    #[serde(borrow)]
    text: Cow<'a, str>,
    line: u32,
}

/// Reads a stored list straight into its packed form: decoding a catalog of
/// 100,000 records makes no short-lived string per link or heading (their
/// freed holes were left scattered among the records kept).
struct PackingVisitor<T>(std::marker::PhantomData<T>);

impl<'de> Visitor<'de> for PackingVisitor<Links> {
    type Value = Links;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a list of links")
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Links, A::Error> {
        let (mut text, mut entries) = (String::new(), Vec::with_capacity(seq.size_hint().unwrap_or(0)));
        while let Some(link) = seq.next_element::<StoredLink<'_>>()? {
            let anchor = match &link.anchor {
                None => None,
                Some(StoredAnchor::Heading(heading)) => Some(AnchorRef::Heading(heading)),
                Some(StoredAnchor::Block(block)) => Some(AnchorRef::Block(block)),
            };
            let display = link.display.as_deref();
            push_link(&mut text, &mut entries, &link.target, anchor, display, (link.kind, link.line));
        }
        Ok(Links { text: text.into_boxed_str(), entries: entries.into_boxed_slice() })
    }
}

impl<'de> Visitor<'de> for PackingVisitor<Headings> {
    type Value = Headings;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a list of headings")
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Headings, A::Error> {
        let (mut text, mut entries) = (String::new(), Vec::with_capacity(seq.size_hint().unwrap_or(0)));
        while let Some(heading) = seq.next_element::<StoredHeading<'_>>()? {
            text.push_str(&heading.text);
            entries.push(PackedHeading { end: offset(text.len()), line: heading.line, level: heading.level });
        }
        Ok(Headings { text: text.into_boxed_str(), entries: entries.into_boxed_slice() })
    }
}

impl<'de> Deserialize<'de> for Links {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Links, D::Error> {
        deserializer.deserialize_seq(PackingVisitor::<Links>(std::marker::PhantomData))
    }
}

/// A heading of a record, borrowed; serialises as [`Heading`] does.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct HeadingRef<'a> {
    /// 1 to 6.
    pub level: u8,
    /// The heading text without the `#` marks, trimmed.
    pub text: &'a str,
    /// 1-based line in the file as on disk.
    pub line: u32,
}

impl HeadingRef<'_> {
    /// The heading as the parser gives it.
    pub fn to_heading(&self) -> Heading {
        Heading { level: self.level, text: self.text.to_owned(), line: self.line }
    }
}

/// One heading: its text ends at `end`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct PackedHeading {
    end: u32,
    line: u32,
    level: u8,
}

/// A record's headings, in document order.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Headings {
    text: Box<str>,
    entries: Box<[PackedHeading]>,
}

impl Headings {
    /// Number of headings.
    pub fn len(&self) -> usize {
        self.entries.len()
    }

    /// Whether there are none.
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// The heading at `index`.
    pub fn get(&self, index: usize) -> Option<HeadingRef<'_>> {
        (index < self.len()).then(|| self.at(index))
    }

    /// The headings in order.
    pub fn iter(&self) -> impl ExactSizeIterator<Item = HeadingRef<'_>> + '_ {
        (0..self.len()).map(|index| self.at(index))
    }

    fn at(&self, index: usize) -> HeadingRef<'_> {
        let entry = &self.entries[index];
        let start = index.checked_sub(1).map_or(0, |before| self.entries[before].end as usize);
        HeadingRef { level: entry.level, text: &self.text[start..entry.end as usize], line: entry.line }
    }

    /// The headings as the parser gives them.
    pub fn to_vec(&self) -> Vec<Heading> {
        self.iter().map(|h| h.to_heading()).collect()
    }
}

impl From<Vec<Heading>> for Headings {
    fn from(headings: Vec<Heading>) -> Headings {
        let mut text = String::with_capacity(headings.iter().map(|h| h.text.len()).sum());
        let mut entries = Vec::with_capacity(headings.len());
        for heading in headings {
            text.push_str(&heading.text);
            entries.push(PackedHeading { end: offset(text.len()), line: heading.line, level: heading.level });
        }
        Headings { text: text.into_boxed_str(), entries: entries.into_boxed_slice() }
    }
}

impl Serialize for Headings {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_seq(self.iter())
    }
}

impl<'de> Deserialize<'de> for Headings {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Headings, D::Error> {
        deserializer.deserialize_seq(PackingVisitor::<Headings>(std::marker::PhantomData))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn link(target: &str, anchor: Option<Anchor>, display: Option<&str>, line: u32) -> Link {
        Link {
            target: target.to_owned(),
            anchor,
            display: display.map(str::to_owned),
            kind: LinkKind::Wikilink,
            line,
        }
    }

    #[test]
    fn links_read_back_as_written_and_serialise_unchanged() {
        let written = vec![
            link("备份仓库", Some(Anchor::Heading("同步不等于备份".into())), Some("备份"), 3),
            link("", Some(Anchor::Block("abc".into())), None, 4),
            link("a/b", None, Some(""), 9),
            link("x", None, None, 10),
            link("a \"quoted\" \\ name", Some(Anchor::Heading("tab\there".into())), Some("é\u{1F600}"), 11),
        ];
        let packed = Links::from(written.clone());
        assert_eq!(packed.len(), 5);
        assert_eq!(packed.get(0).unwrap().anchor, Some(AnchorRef::Heading("同步不等于备份")));
        assert_eq!(packed.get(0).unwrap().display, Some("备份"));
        assert_eq!(packed.get(1).unwrap().target, "");
        assert_eq!(packed.get(1).unwrap().anchor, Some(AnchorRef::Block("abc")));
        assert_eq!(packed.get(2).unwrap().display, Some(""), "an empty display is not no display");
        assert_eq!((packed.get(3).unwrap().target, packed.get(3).unwrap().line), ("x", 10));
        assert_eq!(packed.get(4).unwrap().target, "a \"quoted\" \\ name", "escaped JSON reads back");
        assert!(packed.get(5).is_none());
        let as_structs = serde_json::to_string(&written).unwrap();
        assert_eq!(serde_json::to_string(&packed).unwrap(), as_structs);
        assert_eq!(serde_json::from_str::<Links>(&as_structs).unwrap(), packed);
    }

    #[test]
    fn headings_read_back_as_written_and_serialise_unchanged() {
        let written = vec![
            Heading { level: 1, text: "标题".into(), line: 1 },
            Heading { level: 2, text: String::new(), line: 5 },
            Heading { level: 3, text: "Sync".into(), line: 9 },
        ];
        let packed = Headings::from(written.clone());
        assert_eq!(packed.to_vec(), written);
        assert_eq!(packed.get(1).unwrap().text, "");
        let as_structs = serde_json::to_string(&written).unwrap();
        assert_eq!(serde_json::to_string(&packed).unwrap(), as_structs);
        assert_eq!(serde_json::from_str::<Headings>(&as_structs).unwrap(), packed);
        assert!(Headings::default().is_empty());
    }
}
