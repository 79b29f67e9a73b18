//! The catalog: an immutable snapshot of every indexed file's record, and the
//! link graph and tag counts over them, swapped whole after each sync. It stays inside the
//! engine; callers get records, the `kb://tree` listing and answers, never the
//! snapshot itself.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::sync::{Arc, Mutex, OnceLock};

use super::types::{Tree, TreeNote};
use super::{Engine, timing};
use crate::error::Result;
use crate::vault::graph::Graph;
use crate::vault::{NoteKind, NoteRecord};

/// An immutable snapshot of every indexed file's record, sorted by path (a
/// path is found by binary search: no second copy of every path), with the
/// link graph and the tag counts computed on first use.
#[derive(Debug, Default)]
pub(crate) struct Catalog {
    pub(super) records: Vec<Arc<NoteRecord>>,
    pub(super) attachments: Vec<String>,
    graph: OnceLock<Graph>,
    /// The last snapshot whose graph was built, until this one's is: its
    /// graph is updated to this one's instead of building it whole.
    base: Mutex<Option<Arc<Catalog>>>,
    tags: OnceLock<Vec<TagTally>>,
    tagged: OnceLock<HashMap<String, Vec<u32>>>,
}

/// One tag of the notes (kind `Note`), case-insensitively: how many notes carry
/// it, and the spelling of the first (in path order).
#[derive(Debug)]
pub(crate) struct TagTally {
    /// The tag lowercased.
    pub(crate) key: String,
    /// The first spelling seen.
    pub(crate) shown: String,
    /// Notes carrying it (a note counts once, however it spells it).
    pub(crate) notes: u64,
}

impl Catalog {
    /// The records, attachments and link graph as the write layer plans over them.
    pub(crate) fn view(&self) -> crate::write::VaultView<'_> {
        crate::write::VaultView {
            records: self.records(),
            attachments: self.attachments(),
            graph: self.graph(),
            texts: None,
        }
    }

    pub(super) fn new(mut records: Vec<Arc<NoteRecord>>, mut attachments: Vec<String>) -> Catalog {
        // Already sorted after a delta or a stored read: then this is one pass.
        records.sort_by(|a, b| a.path.cmp(&b.path));
        records.dedup_by(|a, b| a.path == b.path);
        attachments.sort();
        attachments.dedup();
        Catalog {
            records,
            attachments,
            graph: OnceLock::new(),
            base: Mutex::new(None),
            tags: OnceLock::new(),
            tagged: OnceLock::new(),
        }
    }

    /// The snapshot after a change to `previous`: its graph, when first
    /// needed, is updated from the last one built (`previous`'s or the one
    /// it would have been updated from).
    pub(super) fn after(
        previous: &Arc<Catalog>,
        records: Vec<Arc<NoteRecord>>,
        attachments: Vec<String>,
    ) -> Catalog {
        let catalog = Catalog::new(records, attachments);
        let base = if previous.graph.get().is_some() {
            Some(Arc::clone(previous))
        } else {
            previous.base.lock().unwrap_or_else(|p| p.into_inner()).clone()
        };
        *catalog.base.lock().unwrap_or_else(|p| p.into_inner()) = base;
        catalog
    }

    /// Every record, sorted by path.
    pub(crate) fn records(&self) -> &[Arc<NoteRecord>] {
        &self.records
    }

    /// The record of a path.
    pub(crate) fn get(&self, path: &str) -> Option<&Arc<NoteRecord>> {
        self.position(path).map(|i| &self.records[i])
    }

    /// Every non-Markdown file of the readable areas, sorted by path.
    pub(crate) fn attachments(&self) -> &[String] {
        &self.attachments
    }

    /// The index of a path in [`Catalog::records`].
    pub(crate) fn position(&self, path: &str) -> Option<usize> {
        self.records.binary_search_by(|record| record.path.as_str().cmp(path)).ok()
    }

    /// The link graph, computed once per snapshot: updated from the last one
    /// built when little changed since (the `graph_update` timing stage), else
    /// built whole (`graph_build`).
    pub(crate) fn graph(&self) -> &Graph {
        self.graph.get_or_init(|| {
            let base = self.base.lock().unwrap_or_else(|p| p.into_inner()).take();
            let updated = base.filter(|base| base.attachments == self.attachments).and_then(|base| {
                let graph = base.graph.get()?;
                timing::time("graph_update", || {
                    graph.updated(&base.records, &self.records, &self.attachments)
                })
            });
            updated.unwrap_or_else(|| {
                timing::time("graph_build", || Graph::build(&self.records, &self.attachments))
            })
        })
    }

    /// The records (any kind) carrying `tag` (lowercased, no `#`) or a tag below
    /// it, as positions in [`Catalog::records`], ascending: `list_notes {tag}`
    /// reads this list instead of every record's tags (the map of every tag and
    /// its parents to its records is made once per snapshot).
    pub(crate) fn tagged(&self, tag: &str) -> &[u32] {
        let tagged = self.tagged.get_or_init(|| {
            timing::time("tag_index", || {
                let mut tagged: HashMap<String, Vec<u32>> = HashMap::new();
                for (at, record) in self.records.iter().enumerate() {
                    let mut keys: Vec<String> = Vec::new();
                    for tag in &record.tags {
                        let lower = tag.to_lowercase();
                        keys.extend(lower.match_indices('/').map(|(cut, _)| lower[..cut].to_owned()));
                        keys.push(lower);
                    }
                    keys.sort_unstable();
                    keys.dedup();
                    for key in keys {
                        tagged.entry(key).or_default().push(u32::try_from(at).unwrap_or(u32::MAX));
                    }
                }
                tagged
            })
        });
        tagged.get(tag).map_or(&[], Vec::as_slice)
    }

    /// The notes' tags with their counts, sorted by lowercased tag (counted once
    /// per snapshot: `list_tags` and the overview read it on every call).
    pub(crate) fn tags(&self) -> &[TagTally] {
        self.tags.get_or_init(|| {
            timing::time("tag_count", || {
                let mut tally: BTreeMap<String, TagTally> = BTreeMap::new();
                for record in self.records.iter().filter(|r| r.kind == NoteKind::Note) {
                    let mut seen = BTreeSet::new();
                    for tag in &record.tags {
                        let key = tag.to_lowercase();
                        if seen.insert(key.clone()) {
                            tally
                                .entry(key)
                                .or_insert_with_key(|key| TagTally {
                                    key: key.clone(),
                                    shown: tag.clone(),
                                    notes: 0,
                                })
                                .notes += 1;
                        }
                    }
                }
                tally.into_values().collect()
            })
        })
    }
}

/// Records as the catalog keeps them: shared and compact (see
/// [`NoteRecord::compact`]), in a list of their own. (Collecting in place would
/// keep the decoded records' whole allocation, 40 times the list's size.)
pub(super) fn catalog_records(records: Vec<NoteRecord>) -> Vec<Arc<NoteRecord>> {
    let mut shared = Vec::with_capacity(records.len());
    shared.extend(records.into_iter().map(|record| Arc::new(record.compact())));
    shared
}

impl Engine {
    /// The current catalog snapshot (its records read first, if they were not yet:
    /// see [`Engine::open_to_serve`]).
    pub(crate) fn catalog(&self) -> Arc<Catalog> {
        if self.catalog_loaded.get().is_none() {
            let _ = self.load_catalog();
        }
        self.catalog.read().unwrap_or_else(|p| p.into_inner()).clone()
    }

    /// Fills the catalog with the stored records if it was opened without them
    /// ([`Engine::open_to_serve`]); an error says they cannot be read (a damaged
    /// index, which [`Engine::open`] rebuilds). Calls meanwhile wait for it.
    pub fn load_catalog(&self) -> Result<()> {
        self.catalog_loaded
            .get_or_init(|| {
                let records = crate::engine::timing::time("load_records", || self.index.records())?;
                self.set_catalog(Catalog::new(catalog_records(records), Vec::new()));
                Ok(())
            })
            .clone()
    }

    /// Records that the catalog now reflects the index as committed.
    pub(super) fn catalog_matches_index(&self) {
        *self.catalog_opstamp.lock().unwrap_or_else(|p| p.into_inner()) = self.index.committed_opstamp();
    }

    pub(super) fn set_catalog(&self, catalog: Catalog) {
        *self.catalog.write().unwrap_or_else(|p| p.into_inner()) = Arc::new(catalog);
    }

    /// The record of an indexed file (a note, standard or `read_also` file), by
    /// its vault-relative path.
    pub fn record(&self, path: &str) -> Option<Arc<NoteRecord>> {
        self.catalog().get(path).cloned()
    }

    /// Every indexed file's record, sorted by path.
    pub fn records(&self) -> Vec<Arc<NoteRecord>> {
        self.catalog().records().to_vec()
    }

    /// The files linking to `path`, once per link, by linking path then line
    /// (all of them, without context: `get_related_notes` gives the first 500
    /// with their lines); `None` when `path` is not indexed.
    pub fn backlinks(&self, path: &str) -> Option<Vec<String>> {
        let catalog = self.catalog();
        let index = catalog.position(path)?;
        let records = catalog.records();
        Some(catalog.graph().backlinks(index).iter().map(|b| records[b.from as usize].path.clone()).collect())
    }

    /// How many files are indexed (notes, standards and `read_also` files).
    pub fn record_count(&self) -> usize {
        self.catalog().records().len()
    }

    /// The `kb://tree` listing within about `budget` bytes of JSON: every
    /// folder holding a file (up to half the budget), then files in path order
    /// while the whole stays within it.
    pub fn tree(&self, budget: usize) -> Tree {
        let catalog = self.catalog();
        let records = catalog.records();
        let mut folders = std::collections::BTreeSet::new();
        for record in records {
            let mut folder = String::new();
            for part in record.folder().split('/').filter(|p| !p.is_empty()) {
                if !folder.is_empty() {
                    folder.push('/');
                }
                folder.push_str(part);
                folders.insert(folder.clone());
            }
        }
        let mut used = 0usize;
        let folders: Vec<String> = folders
            .into_iter()
            .take_while(|f| {
                used += f.len() + 3;
                used <= budget / 2
            })
            .collect();
        let mut notes = Vec::new();
        for record in records {
            used += record.path.len() + record.title.len() + 40;
            if used > budget {
                break;
            }
            notes.push(TreeNote {
                path: record.path.clone(),
                title: record.title.clone(),
                kind: record.kind,
            });
        }
        Tree { folders, notes, notes_total: records.len() }
    }
}
