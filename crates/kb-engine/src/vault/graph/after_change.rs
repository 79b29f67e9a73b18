//! What a change does to the vault's links without building a new graph: the
//! broken-link count the new graph would have, and the links of untouched
//! notes that will lead elsewhere, resolving again only the links whose
//! resolution can change. Tested against a whole new graph.

use std::collections::HashMap;
use std::sync::Arc;

use rayon::prelude::*;
use unicode_normalization::{IsNormalized, UnicodeNormalization, is_nfc_quick};

use super::links::Graph;
use super::resolver::{Broken, Files, Resolution, Resolver, Target, anchored, id};
use crate::sandbox::strip_md;
use crate::vault::{LinkRef, NoteKind, NoteRecord};

impl Graph {
    /// What a change does to the vault's links, without a new graph: the
    /// count of broken links [`Graph::build`] would find in `after`, and the
    /// links of the notes the change leaves alone that will lead somewhere
    /// else. `before` holds the records this graph was built from; the notes
    /// `changed` (indexes into `before`) have new text, a new path or both, or
    /// are gone (`position` of `usize::MAX`); the notes `added` (indexes into
    /// `after`) are new; `position` maps every other index of `before` to that
    /// note's index in `after` (sorted by path); `resolver` is `after`'s.
    /// The attachments are this graph's, the same after the change unless
    /// `moved_attachments` says where they go (a folder move carries them).
    ///
    /// Only the links whose resolution can change are resolved again (see
    /// `Recheck`).
    #[allow(clippy::too_many_arguments)]
    pub fn after_change<'t>(
        &self,
        before: &'t [Arc<NoteRecord>],
        after: &'t [Arc<NoteRecord>],
        resolver: &Resolver,
        attachments: &[String],
        moved_attachments: Option<MovedAttachments<'_>>,
        changed: &[usize],
        added: &[usize],
        position: &[usize],
    ) -> AfterChange {
        let mut recheck = Recheck::new(before, after, changed, added, position);
        let attachments_after = moved_attachments.map_or(attachments, |moved| moved.after);
        if let Some(moved) = moved_attachments {
            recheck.attachments_moved(attachments, moved);
        }
        let is_broken = |resolution: &Resolution| matches!(resolution, Resolution::Broken(_));
        let files = Files { records: after, attachments: attachments_after };
        let moved = |index: u32| position.get(index as usize).map_or(u32::MAX, |&p| id(p));
        let attachment_moved = |index: u32| match moved_attachments {
            Some(moved) => moved.position.get(index as usize).map_or(u32::MAX, |&p| id(p)),
            None => index,
        };
        // Where a link led before, in `after`'s indexes.
        let mapped = |resolution: Resolution| resolution.renumbered(moved, attachment_moved);
        let tally = (0..before.len())
            .into_par_iter()
            .with_min_len(1024)
            .fold(Tally::default, |mut tally, from| {
                let old = &before[from];
                let new = after.get(position[from]);
                let old_counted = old.kind == NoteKind::Note;
                let outlinks = self.outlinks(from);
                if recheck.is_changed[from] {
                    if old_counted {
                        tally.gone += outlinks.iter().filter(|r| is_broken(r)).count();
                    }
                    if let Some(new) = new.filter(|new| new.kind == NoteKind::Note) {
                        for link in new.links.iter() {
                            let lead = tally.lead(resolver, files, position[from], link);
                            tally.found += usize::from(is_broken(&lead));
                        }
                    }
                    return tally;
                }
                let new_counted = new.is_some_and(|new| new.kind == NoteKind::Note);
                for (number, &resolution) in outlinks.iter().enumerate() {
                    // A link is decoded only when it may have to be resolved again.
                    let link = recheck.may_recheck(&resolution).then(|| old.links.get(number)).flatten();
                    let Some(link) = link.filter(|&link| recheck.again(link, &resolution)) else {
                        continue;
                    };
                    tally.gone += usize::from(old_counted && is_broken(&resolution));
                    let lead = tally.lead(resolver, files, position[from], link);
                    tally.found += usize::from(new_counted && is_broken(&lead));
                    // A broken link some note now answers is not a change to tell.
                    let answered = resolution == Resolution::Broken(Broken::MissingNote);
                    if lead != mapped(resolution) {
                        let list = if answered { &mut tally.answered } else { &mut tally.relinked };
                        list.push((from, number, lead));
                    }
                }
                tally
            })
            .map(|tally| (tally.gone, tally.found, tally.relinked, tally.answered))
            .reduce(
                || (0, 0, Vec::new(), Vec::new()),
                |mut a, b| {
                    a.2.extend(b.2);
                    a.3.extend(b.3);
                    (a.0 + b.0, a.1 + b.1, a.2, a.3)
                },
            );
        let (gone, found, mut relinked, mut answered) = tally;
        relinked.sort_unstable_by_key(|&(from, link, _)| (from, link));
        answered.sort_unstable_by_key(|&(from, link, _)| (from, link));
        AfterChange { broken_count: self.broken_count - gone + found, relinked, answered }
    }
}

/// Where a change moves the graph's attachments (a folder move carries
/// them): every path after it, sorted, and for each attachment of the graph
/// its index there (`usize::MAX`: gone).
#[derive(Debug, Clone, Copy)]
pub struct MovedAttachments<'a> {
    /// The attachment paths after the change, sorted.
    pub after: &'a [String],
    /// Each attachment's index in `after`, by its index in the graph.
    pub position: &'a [usize],
}

/// What [`Graph::after_change`] finds.
#[derive(Debug, Default)]
pub struct AfterChange {
    /// The broken links the vault will have.
    pub broken_count: usize,
    /// The links of notes the change leaves alone that will lead elsewhere or
    /// nowhere: `(note, link, where it will lead)`, the note an index into
    /// `before`, the link one into its links, the resolution in `after`'s
    /// indexes; by note, then link.
    pub relinked: Vec<(usize, usize, Resolution)>,
    /// The links of those notes that named no note and now lead somewhere
    /// (a note of the change answers them): not a change to tell the person,
    /// but one the graph after it takes in ([`Graph::updated`]). As `relinked`.
    pub answered: Vec<(usize, usize, Resolution)>,
}

/// What one thread of [`Graph::after_change`] keeps: where each target leads
/// after the change (the same for every link written alike), the broken links
/// it counted before and after, and the links it found leading elsewhere.
#[derive(Default)]
struct Tally<'t> {
    targets: HashMap<(bool, &'t str), Target>,
    gone: usize,
    found: usize,
    relinked: Vec<(usize, usize, Resolution)>,
    answered: Vec<(usize, usize, Resolution)>,
}

impl<'t> Tally<'t> {
    /// Where `link` (of the note at `from` in `after`) leads after the change;
    /// each target written alike is looked up once.
    fn lead(&mut self, resolver: &Resolver, files: Files<'t>, from: usize, link: LinkRef<'t>) -> Resolution {
        let target = if link.target.trim().is_empty() {
            Ok(from)
        } else {
            *self
                .targets
                .entry((link.kind.is_path(), link.target))
                .or_insert_with(|| resolver.target(files, link))
        };
        anchored(files.records, target, link)
    }
}

/// Which links a change may make lead elsewhere: every link of a changed note;
/// a link of another note leading to a changed note whose headings or block
/// ids differ now (or that is gone); and one whose target names a note whose
/// path or aliases changed, or a new note, by the name before or after (a
/// lookup only ever finds notes whose file name is the target's last segment
/// or whose alias is the target, and judges them by nothing else but their
/// path: with no such note changed, it finds what it found).
struct Recheck {
    is_changed: Vec<bool>,
    anchors_changed: Vec<bool>,
    /// The names a lookup compares with a changed note's (its file name, its
    /// path's last segment, its aliases), as folded hashes, sorted: a link
    /// whose target may name one has a key hashing alike (and a collision
    /// only costs resolving one more link again).
    names: Vec<u64>,
}

impl Recheck {
    fn new(
        before: &[Arc<NoteRecord>],
        after: &[Arc<NoteRecord>],
        changed: &[usize],
        added: &[usize],
        position: &[usize],
    ) -> Recheck {
        let mut is_changed = vec![false; before.len()];
        let mut anchors_changed = vec![false; before.len()];
        let mut names: Vec<u64> = Vec::new();
        let mut name = |record: &NoteRecord| {
            names.push(folded_hash(record.stem()));
            names.push(folded_hash(last_segment(strip_md(&record.path))));
            names.extend(record.aliases.iter().map(|alias| folded_hash(alias.trim())));
        };
        for &note in changed {
            let old = &before[note];
            is_changed[note] = true;
            match after.get(position[note]) {
                Some(new) => {
                    anchors_changed[note] =
                        old.headings.iter().map(|h| h.text).ne(new.headings.iter().map(|h| h.text))
                            || old.block_ids != new.block_ids;
                    if old.path != new.path || old.aliases != new.aliases {
                        name(old);
                        name(new);
                    }
                }
                None => {
                    anchors_changed[note] = true;
                    name(old);
                }
            }
        }
        for &note in added {
            name(&after[note]);
        }
        names.sort_unstable();
        names.dedup();
        Recheck { is_changed, anchors_changed, names }
    }

    /// Adds the names of the attachments that move (before and after): a link
    /// naming one may find another file, or this one no more.
    fn attachments_moved(&mut self, before: &[String], moved: MovedAttachments<'_>) {
        for (index, path) in before.iter().enumerate() {
            let now = moved.position.get(index).and_then(|&at| moved.after.get(at));
            if now != Some(path) {
                self.names.push(folded_hash(last_segment(path)));
                self.names.extend(now.map(|now| folded_hash(last_segment(now))));
            }
        }
        self.names.sort_unstable();
        self.names.dedup();
    }

    /// Whether a link of an unchanged note that led to `resolution` may have
    /// to be resolved again ([`Recheck::again`] tells): only one leading to a
    /// note whose anchors changed, unless names changed.
    fn may_recheck(&self, resolution: &Resolution) -> bool {
        !self.names.is_empty() || self.leads_to_new_anchors(resolution)
    }

    fn leads_to_new_anchors(&self, resolution: &Resolution) -> bool {
        match *resolution {
            Resolution::Note(to)
            | Resolution::Broken(Broken::MissingHeading(to) | Broken::MissingBlock(to)) => {
                self.anchors_changed[to as usize]
            }
            _ => false,
        }
    }

    /// Whether `link` of an unchanged note, which led to `resolution`, must be
    /// resolved again.
    fn again(&self, link: LinkRef<'_>, resolution: &Resolution) -> bool {
        self.leads_to_new_anchors(resolution)
            || (!self.names.is_empty() && self.may_name_a_changed_note(link.target))
    }

    /// Every key a lookup of the target may use: the target as written and
    /// trimmed, with and without `.md`, by its last segment; and the whole
    /// trimmed target (an alias). Each distinct form is hashed once.
    fn may_name_a_changed_note(&self, target: &str) -> bool {
        let named = |form: &str| self.names.binary_search(&folded_hash(form)).is_ok();
        let trimmed = target.trim();
        if named(trimmed) {
            return true;
        }
        let mut seen: [&str; 4] = [trimmed; 4];
        let mut count = 1;
        for whole in [target, trimmed] {
            for form in [whole, strip_md(whole)] {
                let segment = last_segment(form);
                if !seen[..count].contains(&segment) {
                    if named(segment) {
                        return true;
                    }
                    seen[count] = segment;
                    count += 1;
                }
            }
        }
        false
    }
}

/// A hash of `text` as the resolver's tables key names (NFC-normalised, then
/// lowercased), with `ς` taken for `σ` (the one letter whose lowercase
/// depends on where it stands), so any text that keys to the same name hashes
/// alike. Made without building the key: every link of the vault is hashed.
fn folded_hash(text: &str) -> u64 {
    // FNV-1a over the lowercased characters.
    let mut hash: u64 = 0xcbf2_9ce4_8422_2325;
    let mut add = |c: char| {
        for c in c.to_lowercase() {
            let c = if c == 'ς' { 'σ' } else { c };
            hash = (hash ^ u64::from(u32::from(c))).wrapping_mul(0x0000_0100_0000_01b3);
        }
    };
    if text.is_ascii() || is_nfc_quick(text.chars()) == IsNormalized::Yes {
        text.chars().for_each(&mut add);
    } else {
        text.nfc().for_each(&mut add);
    }
    hash
}

/// The part of a path after its last `/`.
fn last_segment(path: &str) -> &str {
    path.rsplit('/').next().unwrap_or(path)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sandbox::NotePath;
    use crate::vault::parse_note;

    fn record(path: &str, text: &str) -> Arc<NoteRecord> {
        let note = parse_note(&NotePath::parse(path).unwrap(), text);
        Arc::new(NoteRecord::from_note(note, NoteKind::Note, 0, 0, None, String::new()))
    }

    /// Builds `before`, changes some notes (a new path, a new text or both),
    /// and compares [`Graph::after_change`]'s broken count with a whole new graph.
    fn check_count_after(before: &[(&str, &str)], changes: &[(&str, &str, &str)], attachments: &[&str]) {
        let attachments: Vec<String> = attachments.iter().map(|a| (*a).to_owned()).collect();
        let mut before: Vec<Arc<NoteRecord>> = before.iter().map(|(path, text)| record(path, text)).collect();
        before.sort_by(|a, b| a.path.cmp(&b.path));
        let graph = Graph::build(&before, &attachments);
        let mut after: Vec<(Arc<NoteRecord>, usize)> = before.iter().cloned().zip(0..).collect();
        let mut changed = Vec::new();
        for (old, new, text) in changes {
            let index = before.iter().position(|r| r.path == *old).unwrap();
            after[index].0 = record(new, text);
            changed.push(index);
        }
        after.sort_by(|a, b| a.0.path.cmp(&b.0.path));
        let mut position = vec![0; before.len()];
        for (at, (_, index)) in after.iter().enumerate() {
            position[*index] = at;
        }
        let after: Vec<Arc<NoteRecord>> = after.into_iter().map(|(record, _)| record).collect();
        let resolver = Resolver::new(&after, &attachments);
        let counted = graph
            .after_change(&before, &after, &resolver, &attachments, None, &changed, &[], &position)
            .broken_count;
        let whole = Graph::build(&after, &attachments).broken_count;
        assert_eq!(counted, whole, "before {before:#?}\nchanges {changes:?}");
    }

    #[test]
    fn the_broken_count_after_a_change_is_the_whole_graphs() {
        let vault = [
            ("a/x.md", "# H\n[[y]] [[b/x]] [[x#H]] [[x#Gone]] [[#H]] [[#Nope]] ^blk"),
            ("b/x.md", "---\naliases: [Old Name]\n---\n[[a/x#^blk]] [[a/x#^nope]] [m](a/x.md) [m](A/X.md)"),
            (
                "c/y.md",
                "---\nup: \"[[a/x#H]]\"\n---\n[[missing]] [[new name]] [[Old Name]] ![[pic.png]] ![[x.png]] [[Z]]",
            ),
            ("d/z.md", "# Top\n[[y#Top]] [[c/y]] [p](c/y.md) [[ y ]] [[y.md]]"),
        ];
        let attachments = ["img/pic.png", "img/x.png"];
        let cases: &[&[(&str, &str, &str)]] = &[
            // A move onto a name broken links wanted.
            &[("c/y.md", "c/missing.md", "[[missing]] [[new name]] [[Old Name]] ![[pic.png]]")],
            // A move that makes a name ambiguous, the shortest path winning.
            &[("d/z.md", "x.md", "# Top\n[[y#Top]]")],
            // A heading others link to goes; a block id comes.
            &[("a/x.md", "a/x.md", "# G\n[[y]] ^nope")],
            // An alias moves from one note to another.
            &[
                ("b/x.md", "b/x.md", "[[a/x#^blk]]"),
                ("d/z.md", "d/z.md", "---\naliases: [new name, old name]\n---\n# Top\n"),
            ],
            // A note takes an attachment's name; a case-only rename.
            &[("c/y.md", "c/pic.png.md", "x"), ("a/x.md", "a/X.md", "# H\n")],
            // Every note moves.
            &[
                ("a/x.md", "q/x.md", "# H\n[[y]]"),
                ("b/x.md", "q/r/x.md", "[[x]]"),
                ("c/y.md", "y.md", "[[Z]]"),
                ("d/z.md", "c/z.md", "[[y#Top]]"),
            ],
        ];
        for changes in cases {
            check_count_after(&vault, changes, &attachments);
        }
    }

    proptest::proptest! {
        /// Any change of any notes of a small vault whose names collide on
        /// purpose: the count over the links that may change is the whole graph's.
        #[test]
        fn the_broken_count_after_any_change_is_the_whole_graphs(
            notes in proptest::collection::vec((0..PATHS.len(), proptest::collection::vec(0..PIECES.len(), 0..8)), 1..8),
            changes in proptest::collection::vec((0..8usize, 0..PATHS.len(), proptest::collection::vec(0..PIECES.len(), 0..8)), 0..4),
        ) {
            let text = |pieces: &[usize]| pieces.iter().map(|&p| PIECES[p]).collect::<Vec<_>>().join(" ");
            let mut before: Vec<(&str, String)> = Vec::new();
            for (path, pieces) in &notes {
                if before.iter().all(|(p, _)| *p != PATHS[*path]) {
                    before.push((PATHS[*path], text(pieces)));
                }
            }
            let mut taken: Vec<&str> = before.iter().map(|(p, _)| *p).collect();
            let mut moved: Vec<(&str, &str, String)> = Vec::new();
            for (note, to, pieces) in &changes {
                let (from, _) = &before[note % before.len()];
                if moved.iter().any(|(f, _, _)| f == from) {
                    continue;
                }
                // A note keeps its path or takes a free one.
                let to = if taken.contains(&PATHS[*to]) { *from } else { PATHS[*to] };
                taken.push(to);
                moved.push((from, to, text(pieces)));
            }
            let before: Vec<(&str, &str)> = before.iter().map(|(p, t)| (*p, t.as_str())).collect();
            let moved: Vec<(&str, &str, &str)> = moved.iter().map(|(f, t, x)| (*f, *t, x.as_str())).collect();
            check_count_after(&before, &moved, &["img/x.png", "a/pic.png"]);
        }
    }

    const PATHS: &[&str] =
        &["a/x.md", "b/x.md", "a/b/x.md", "X.md", "y.md", "a/Y.md", "pic.png.md", "a/b/z.md", "Σ/ΣΑΣ.md"];
    const PIECES: &[&str] = &[
        "[[x]]",
        "[[X]]",
        "[[b/x]]",
        "[[a/b/x]]",
        "[[x#H]]",
        "[[y#H]]",
        "[[x#^k]]",
        "[[#H]]",
        "# H",
        "^k",
        "[[alias]]",
        "---\naliases: [alias, Y]\n---\n",
        "---\nup: ['[[x]]', \"[[y#H]]\"]\n---\n",
        "---\nrelated: \"[[alias]]\"\naliases: [Y]\n---\n",
        "[m](a/x.md)",
        "[m](../X.md)",
        "[m](x.md)",
        "![[pic.png]]",
        "[[z]]",
        "[[ x ]]",
        "[[x.md]]",
        "[[ςας]]",
        "[[σ/σας]]",
        "\n",
    ];
}
