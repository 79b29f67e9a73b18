//! The catalog's lists: `list_standards`, `list_tags` (with the tag registry)
//! and `list_recent_notes`, and the creation time every list that sorts by it uses.

use std::collections::BTreeMap;
use std::sync::Arc;

use crate::engine::Engine;
use crate::engine::types::*;
use crate::error::Result;
use crate::sandbox::{Zone, file_time, rfc3339};
use crate::vault::{NoteKind, NoteRecord};

impl Engine {
    /// `list_standards`.
    pub fn list_standards(&self) -> Result<Standards> {
        let catalog = self.catalog();
        let standards = catalog
            .records()
            .iter()
            .filter(|r| r.kind == NoteKind::Standard)
            .map(|r| StandardEntry {
                path: r.path.clone(),
                title: r.title.clone(),
                description: r.description.clone(),
                updated: rfc3339(file_time(r.modified_ns), Zone::Utc),
            })
            .collect();
        Ok(Standards { standards })
    }

    /// The tags listed by the tag registry note, lowercased.
    fn registered_tags(&self) -> (Option<String>, BTreeMap<String, String>) {
        let Some(registry) = self.config().tag_registry.clone() else { return (None, BTreeMap::new()) };
        let catalog = self.catalog();
        let tags = catalog
            .get(&registry)
            .map(|r| r.tags.iter().map(|t| (t.to_lowercase(), t.clone())).collect())
            .unwrap_or_default();
        (Some(registry), tags)
    }

    /// `list_tags`.
    pub fn list_tags(&self, args: &ListTagsArgs) -> Result<Tags> {
        let limit = TAGS_LIMIT.check("limit", args.limit)?;
        let catalog = self.catalog();
        // Tags are case-insensitive; the first spelling seen (in path order) is shown.
        let mut counts: BTreeMap<&str, (&str, u64)> =
            catalog.tags().iter().map(|t| (t.key.as_str(), (t.shown.as_str(), t.notes))).collect();
        let (registry, registered) = self.registered_tags();
        for (key, shown) in &registered {
            counts.entry(key.as_str()).or_insert((shown.as_str(), 0));
        }
        let prefix =
            args.prefix.as_deref().map(|p| p.trim_start_matches('#').to_lowercase()).unwrap_or_default();
        let mut tags: Vec<TagCount> = counts
            .into_iter()
            .filter(|(key, _)| key.starts_with(&prefix))
            .map(|(key, (tag, count))| TagCount {
                registered: registered.contains_key(key),
                tag: tag.to_owned(),
                count,
            })
            .collect();
        tags.sort_by(|a, b| b.count.cmp(&a.count).then_with(|| a.tag.cmp(&b.tag)));
        tags.truncate(limit as usize);
        Ok(Tags { tags, registry })
    }

    /// `list_recent_notes`.
    pub fn list_recent_notes(&self, args: &RecentArgs) -> Result<Recent> {
        let days = RECENT_DAYS.check("days", args.days)?;
        let limit = RECENT_LIMIT.check("limit", args.limit)?;
        let sort = args.sort.unwrap_or_default();
        let now = jiff::Timestamp::now();
        let cutoff = now.as_nanosecond() - i128::from(days) * 86_400 * 1_000_000_000;
        let catalog = self.catalog();
        let mut notes: Vec<(i128, &Arc<NoteRecord>)> = catalog
            .records()
            .iter()
            .filter(|r| r.kind == NoteKind::Note)
            .map(|r| {
                let key = match sort {
                    RecentSort::Updated => i128::from(r.modified_ns),
                    RecentSort::Created => created_nanos(r),
                };
                (key, r)
            })
            .filter(|(key, _)| *key >= cutoff)
            .collect();
        notes.sort_by(|a, b| b.0.cmp(&a.0).then_with(|| a.1.path.cmp(&b.1.path)));
        let notes = notes
            .into_iter()
            .take(limit as usize)
            .map(|(_, r)| RecentNote {
                path: r.path.clone(),
                title: r.title.clone(),
                created: created_rfc3339(r),
                updated: rfc3339(file_time(r.modified_ns), Zone::Utc),
            })
            .collect();
        Ok(Recent { notes })
    }
}

pub(in crate::engine) fn created_nanos(record: &NoteRecord) -> i128 {
    record
        .created
        .as_deref()
        .and_then(|c| c.parse::<jiff::Timestamp>().ok())
        .map(|t| t.as_nanosecond())
        .or(record.born_ns.map(i128::from))
        .unwrap_or(i128::from(record.modified_ns))
}

pub(in crate::engine) fn created_rfc3339(record: &NoteRecord) -> String {
    match &record.created {
        Some(created) => created.clone(),
        None => rfc3339(file_time(record.born_ns.unwrap_or(record.modified_ns)), Zone::Utc),
    }
}
