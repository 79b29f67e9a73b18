//! Each segment's note languages, read from the `language` column once and kept
//! while the segment serves.
//!
//! In a vault of several languages of one script, a search ranks the notes of
//! the query's rival languages lower (see `search::rivals::RivalShare`): it reads the
//! language of every note it scores, the title side's matches and the scored
//! candidates alike, a few hundred per search. Through the column's codec that
//! was about 3 % of a `search_knowledge` call on the Obsidian Help vault. A
//! segment never changes once written, so its languages, one byte per note, are
//! read once and kept for the segments searched last, with how many notes hold
//! each language (what a search asks first: whether the vault holds several
//! languages of the query's script in strength), counted as the index counts a
//! term's notes, deleted ones included.

use std::sync::{Arc, Mutex, PoisonError};

use tantivy::index::SegmentId;
use tantivy::{DocId, Searcher, SegmentReader};

/// How many segments' languages are kept: an index has a few segments at a
/// time, and a merge retires the old ones, which then fall out first.
const KEPT_SEGMENTS: usize = 32;

/// How many notes hold each language code.
pub(crate) type LanguageCounts = [u64; 64];

/// One segment's note languages by document id (a language code, at most 63).
#[derive(Clone)]
pub(crate) struct SegmentLanguages {
    codes: Arc<[u8]>,
    counts: Arc<LanguageCounts>,
}

impl SegmentLanguages {
    /// The language code of note `doc` (0, told nothing, past the segment's end).
    pub(crate) fn of(&self, doc: DocId) -> u8 {
        self.codes.get(doc as usize).copied().unwrap_or(0)
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
        let mut counts = [0; 64];
        for &code in codes.iter() {
            counts[usize::from(code)] += 1;
        }
        let languages = SegmentLanguages { codes, counts: Arc::new(counts) };
        let mut kept = self.kept.lock().unwrap_or_else(PoisonError::into_inner);
        if !kept.iter().any(|(kept, _)| *kept == id) {
            if kept.len() >= KEPT_SEGMENTS {
                kept.remove(0);
            }
            kept.push((id, languages.clone()));
        }
        Some(languages)
    }

    /// How many notes of `searcher` hold each language, over its segments
    /// (code 0, told nothing, counts the notes without the field too); `None`
    /// when a segment has no language column.
    pub(crate) fn counts(&self, searcher: &Searcher) -> Option<LanguageCounts> {
        let mut total = [0; 64];
        for segment in searcher.segment_readers() {
            let languages = self.of(segment)?;
            for (sum, count) in total.iter_mut().zip(languages.counts.iter()) {
                *sum += count;
            }
        }
        Some(total)
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
        assert!(Arc::ptr_eq(&read.codes, &again.codes));
        // Each language's notes, as the index counts the notes holding its term.
        let counts = columns.counts(&searcher).unwrap();
        // (No language has a code past 62: the 63 kept for 200 is no term's.)
        for code in [3, 17, 5] {
            let term = tantivy::Term::from_field_u64(language, code);
            assert_eq!(counts[code as usize], searcher.doc_freq(&term).unwrap(), "code {code}");
        }
        assert!(LanguageColumns::new("absent").of(segment).is_none());
    }
}
