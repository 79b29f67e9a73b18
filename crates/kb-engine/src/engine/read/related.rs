//! `get_related_notes`: a note's outlinks, backlinks (with their context cut
//! from the linking notes' current text), broken links and the MOCs linking it.

use rayon::prelude::*;

use crate::engine::bounded::{WHOLE_MAX, window_text};
use crate::engine::types::*;
use crate::engine::{Engine, one_of, timing};
use crate::error::{Error, ErrorCode, Result};
use crate::sandbox::NotePath;
use crate::vault::graph::{Broken, Resolution};
use crate::vault::{AnchorRef, link_context};

/// Longest list in `get_related_notes`.
const RELATED_CAP: usize = 500;

impl Engine {
    /// Fills each backlink's context from its note's current text (the catalog
    /// keeps only each link's line).
    /// Each linking note is read once, the notes in parallel.
    fn cut_backlink_contexts(&self, backlinks: &mut [BacklinkOut]) {
        backlinks.par_chunk_by_mut(|a, b| a.path == b.path).for_each(|group| {
            let Ok(path) = NotePath::parse(&group[0].path) else { return };
            // The first WHOLE_MAX bytes: a link further into a larger note shows no context.
            let Ok(file) = self.sandbox().open_read(&path) else { return };
            let Ok(bytes) = file.read_at(0, WHOLE_MAX as usize) else { return };
            let Some(text) = window_text(&bytes) else { return };
            let mut lines = text.split('\n').enumerate().peekable();
            for backlink in group {
                let wanted = (backlink.line as usize).saturating_sub(1);
                // Backlinks come by line: one pass over the lines serves the group.
                while lines.next_if(|(at, _)| *at < wanted).is_some() {}
                if let Some((at, line)) = lines.peek()
                    && *at == wanted
                {
                    backlink.context = link_context(line);
                }
            }
        });
    }

    /// `get_related_notes`.
    pub fn get_related_notes(&self, args: &NoteRefArgs) -> Result<Related> {
        let name = one_of(args.path.as_deref(), args.reference.as_deref())?;
        let (path, _) = self.locate(&name)?;
        let catalog = self.catalog();
        let index = catalog.position(path.as_str()).ok_or_else(|| {
            Error::new(ErrorCode::NotFound, format!("{path} is not indexed yet"))
                .with_hint("retry in a moment; the index is catching up")
        })?;
        let graph = catalog.graph();
        let records = catalog.records();
        let record = &records[index];
        let mut truncated = false;
        let mut outlinks = Vec::new();
        let mut broken = Vec::new();
        for (link, resolution) in record.links.iter().zip(graph.outlinks(index)) {
            let written = match link.anchor {
                None => link.target.to_owned(),
                Some(AnchorRef::Heading(h)) => format!("{}#{h}", link.target),
                Some(AnchorRef::Block(b)) => format!("{}#^{b}", link.target),
            };
            let target_path = match *resolution {
                Resolution::Note(i) => Some(records[i as usize].path.clone()),
                Resolution::Attachment(i) => Some(catalog.attachments()[i as usize].clone()),
                Resolution::Broken(_) => None,
            };
            if let Resolution::Broken(why) = resolution {
                let reason = match why {
                    Broken::MissingNote => BrokenReason::MissingNote,
                    Broken::MissingHeading(_) => BrokenReason::MissingHeading,
                    Broken::MissingBlock(_) => BrokenReason::MissingBlock,
                };
                if broken.len() < RELATED_CAP {
                    broken.push(BrokenLink { target: written.clone(), line: link.line, reason });
                } else {
                    truncated = true;
                }
            }
            if outlinks.len() < RELATED_CAP {
                outlinks.push(Outlink {
                    target: written,
                    resolved: target_path,
                    kind: link.kind,
                    line: link.line,
                });
            } else {
                truncated = true;
            }
        }
        // The graph lists backlinks by linking path, then in link (line) order: the
        // first RELATED_CAP are the ones to show, and only they are built.
        let all_backlinks = graph.backlinks(index);
        truncated |= all_backlinks.len() > RELATED_CAP;
        let mut backlinks: Vec<BacklinkOut> = all_backlinks
            .iter()
            .take(RELATED_CAP)
            .map(|b| {
                let source = &records[b.from as usize];
                let line = source.links.get(b.link as usize).map_or(0, |link| link.line);
                BacklinkOut {
                    path: source.path.clone(),
                    title: source.title.clone(),
                    line,
                    context: String::new(),
                }
            })
            .collect();
        debug_assert!(
            backlinks.is_sorted_by(|a, b| (a.path.as_str(), a.line) <= (b.path.as_str(), b.line)),
            "the graph lists backlinks by path, then line"
        );
        timing::time("contexts", || self.cut_backlink_contexts(&mut backlinks));
        let mocs = graph
            .mocs_linking(index)
            .into_iter()
            .map(|i| NoteTitle { path: records[i].path.clone(), title: records[i].title.clone() })
            .collect();
        Ok(Related { path: record.path.clone(), outlinks, backlinks, broken, mocs, truncated })
    }
}
