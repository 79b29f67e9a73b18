//! Who links to some notes now: the engine's answer to a multi-file apply's
//! check that no link to a note it moves or trashes was written since it was
//! proposed (`write/propose/linkers.rs`; the write layer knows no index).
//!
//! The catalog's graph answers for every file it holds as it is on disk. A
//! file changed or added since the catalog was made is not in it yet: the
//! watcher reports an edit about a second later, and a process without a
//! watcher only notices at its next walk, while a note written just before
//! the apply must count all the same. So a walk compares the files' sizes and
//! times with the catalog, as a sync does (a stat per file; the catalog is
//! not changed and nothing is indexed), and only the files that differ are
//! read, parsed and resolved afresh against the catalog. An apply of a move or
//! a delete so costs one walk more: less than `incremental/walk_1_note` in
//! BENCHMARKS.md (a walk, a one-note commit and a search), 65 ms at 10,000
//! notes and 0.6 s at 100,000.

use std::collections::{HashMap, HashSet};

use rayon::prelude::*;

use super::Engine;
use super::sync::INDEX_MAX_BYTES;
use crate::error::Result;
use crate::sandbox::ScannedFile;
use crate::vault::graph::{Broken, Resolution};
use crate::vault::{Links, decode_note, parse_note};
use crate::write::{self, Linker};

impl Engine {
    /// The notes (any kind) whose links lead to a note at one of `targets`
    /// (resolved, or broken only by an anchor the note lacks) as the files
    /// are now, each with its links to them.
    pub(super) fn linkers_now(&self, targets: &[String]) -> Result<Vec<Linker>> {
        let drift = self.drift()?;
        let catalog = self.catalog();
        let view = catalog.view();
        let at: Vec<usize> = targets.iter().filter_map(|target| catalog.position(target)).collect();
        if at.is_empty() {
            return Ok(Vec::new());
        }
        // The files the catalog does not hold as they are: read afresh below.
        let fresh: HashSet<&str> = drift
            .added
            .iter()
            .chain(&drift.changed)
            .map(|file| file.path.as_str())
            .chain(drift.removed.iter().map(String::as_str))
            .collect();
        let mut linkers = write::linkers_in(&view, &at, &|path| fresh.contains(path));
        let target_of: HashMap<u32, &str> = at
            .iter()
            .map(|&t| (u32::try_from(t).unwrap_or(u32::MAX), catalog.records()[t].path.as_str()))
            .collect();
        let sandbox = self.sandbox();
        let read = |file: &ScannedFile| -> Option<Linker> {
            let bytes = sandbox.read(&file.path, INDEX_MAX_BYTES).ok()?;
            let text = decode_note(&bytes).ok()?;
            let links: Links = parse_note(&file.path, text).links.into();
            let leading = links.iter().filter(|link| !link.target.trim().is_empty()).filter_map(|link| {
                let to = match view.graph.resolver.resolve(view.records, view.attachments, link) {
                    Resolution::Note(to)
                    | Resolution::Broken(Broken::MissingHeading(to) | Broken::MissingBlock(to)) => to,
                    _ => return None,
                };
                let target = *target_of.get(&to)?;
                (target != file.path.as_str()).then_some((target, link))
            });
            Linker::new(file.path.as_str(), leading)
        };
        let changed: Vec<&ScannedFile> = drift.added.iter().chain(&drift.changed).collect();
        linkers.extend(changed.par_iter().filter_map(|file| read(file)).collect::<Vec<_>>());
        Ok(linkers)
    }
}
