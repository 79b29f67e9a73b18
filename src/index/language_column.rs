//! Each segment's note languages, read from the `language` column once and kept
//! while the segment serves.
//!
//! In a vault of several languages of one script, a search ranks the notes of
//! the query's rival languages lower (see `search::RivalShare`): it reads the
//! language of every note it scores, the title side's matches and the scored
//! candidates alike, a few hundred per search. Through the column's codec that
//! was about 3 % of a `search_knowledge` call on the Obsidian Help vault. A
//! segment never changes once written, so its languages, one byte per note, are
//! read once and kept for the segments searched last.

use std::sync::{Arc, Mutex, PoisonError};

use tantivy::index::SegmentId;
use tantivy::{DocId, SegmentReader};

/// How many segments' languages are kept: an index has a few segments at a
/// time, and a merge retires the old ones, which then fall out first.
const KEPT_SEGMENTS: usize = 32;

/// One segment's note languages by document id (a language code, at most 63).
#[derive(Clone)]
pub(crate) struct SegmentLanguages(Arc<[u8]>);

impl SegmentLanguages {
    /// The language code of note `doc` (0, told nothing, past the segment's end).
    pub(crate) fn of(&self, doc: DocId) -> u8 {
        self.0.get(doc as usize).copied().unwrap_or(0)
    }
}

/// The languages of the segments searched last (see the module's doc).
pub(crate) struct LanguageColumns {
    /// The language column's name.
    field: String,
    kept: Mutex<Vec<(SegmentId, SegmentLanguages)>>,
}

impl std::fmt::Debug for LanguageColumns {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("LanguageColumns")
    }
}

impl LanguageColumns {
    /// None kept yet, read from the column named `field`.
    pub(crate) fn new(field: &str) -> Self {
        LanguageColumns { field: field.to_owned(), kept: Mutex::default() }
    }

    /// `segment`'s languages, read the first time; `None` when the segment has
    /// no language column.
    pub(crate) fn of(&self, segment: &SegmentReader) -> Option<SegmentLanguages> {
        let id = segment.segment_id();
        {
            let kept = self.kept.lock().unwrap_or_else(PoisonError::into_inner);
            if let Some((_, languages)) = kept.iter().find(|(kept, _)| *kept == id) {
                return Some(languages.clone());
            }
        }
        // Read outside the lock: another search may read the same segment meanwhile,
        // and both keep the same bytes.
        let column = segment.fast_fields().u64(&self.field).ok()?.first_or_default_col(0);
        let codes: Arc<[u8]> = (0..segment.max_doc()).map(|doc| column.get_val(doc).min(63) as u8).collect();
        let languages = SegmentLanguages(codes);
        let mut kept = self.kept.lock().unwrap_or_else(PoisonError::into_inner);
        if !kept.iter().any(|(kept, _)| *kept == id) {
            if kept.len() >= KEPT_SEGMENTS {
                kept.remove(0);
            }
            kept.push((id, languages.clone()));
        }
        Some(languages)
    }
}

#[cfg(test)]
mod tests {
    use tantivy::schema::{FAST, INDEXED, Schema};
    use tantivy::{Index, TantivyDocument};

    use super::*;

    #[test]
    fn reads_each_notes_language_as_the_column_holds_it_and_keeps_it() {
        let mut builder = Schema::builder();
        let language = builder.add_u64_field("language", INDEXED | FAST);
        let index = Index::create_in_ram(builder.build());
        let mut writer: tantivy::IndexWriter = index.writer_with_num_threads(1, 15_000_000).unwrap();
        // A note without the field reads as 0; a code past 63 is kept at 63.
        for code in [Some(3), None, Some(17), Some(200)] {
            let mut doc = TantivyDocument::default();
            if let Some(code) = code {
                doc.add_u64(language, code);
            }
            writer.add_document(doc).unwrap();
        }
        writer.commit().unwrap();
        let searcher = index.reader().unwrap().searcher();
        let segment = &searcher.segment_readers()[0];
        let columns = LanguageColumns::new("language");
        let read = columns.of(segment).unwrap();
        assert_eq!((0..5).map(|doc| read.of(doc)).collect::<Vec<_>>(), [3, 0, 17, 63, 0]);
        // The second look is the kept bytes, not a new read.
        let again = columns.of(segment).unwrap();
        assert!(Arc::ptr_eq(&read.0, &again.0));
        assert!(LanguageColumns::new("absent").of(segment).is_none());
    }
}
