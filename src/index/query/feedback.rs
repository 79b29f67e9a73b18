//! Pseudo-relevance feedback (RM3-style) for a question put in other words
//! (issue 13): the notes a first pass ranks highest say what the question is
//! about in the vault's own words, so their most informative words join the
//! question as low-weight optional clauses and the first pass's page is ranked
//! again. It runs only when the first pass is unsure (its best note does not
//! clearly outscore the second): feedback from a sure first pass mostly adds
//! the words of that note's neighbours and pushes it down. Every constant was
//! chosen with `kb-index eval` on every suite (BENCHMARKS.md, "Questions in
//! other words"); the window where nothing drops is narrow.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

use tantivy::Term;
use tantivy::query::{BooleanQuery, BoostQuery, Occur, Query, TermQuery};
use tantivy::schema::{Field, IndexRecordOption};
use tantivy::tokenizer::TextAnalyzer;

use super::build::{QueryParts, Reach, build_reaching};
use super::candidates::Candidates;
use super::words::{QueryPlan, content_words, informativeness, is_stop_word, word_forms};
use crate::index::script::is_cjk;
use crate::index::tokenizer::{analyse, query_analyzer, term_group};

/// How many of the first pass's best notes give feedback.
pub(crate) const FEEDBACK_NOTES: usize = 5;

/// The first pass is sure of its best note when it scores this many times the
/// second's: no feedback then (at 1.5 and above, `how do I capture a voice
/// memo with the microphone` loses *Audio recorder* from first place to notes
/// about web clips; at 1.2, English `search_knowledge` loses MRR).
pub(crate) const FEEDBACK_GAP: f32 = 1.3;

/// How many feedback words join the question (15 and 30 both lose a case).
const FEEDBACK_WORDS: usize = 20;

/// Fewest feedback notes that must use a word: a word of one note alone
/// mostly names that note's own topic.
const FEEDBACK_MIN_NOTES: usize = 2;

/// How much a feedback word counts beside a word of the question (its field
/// weights times this, times its share of the best feedback word's weight).
const FEEDBACK_WEIGHT: f32 = 0.2;

/// How strongly a word's rarity in the vault decides (the power of its
/// informativeness): common words (`note`, `use`, `open`) say nothing of a topic.
const RARITY_POWER: f32 = 3.0;

/// The feedback words of a question from `notes` (each note's first-pass score
/// and text): the [`FEEDBACK_WORDS`] words with the highest
/// Σ (score share × frequency in the note) × informativeness³ in the vault,
/// leaving out the question's own words and their forms, stop words, lone CJK
/// characters, numbers, short Latin fragments, words fewer than
/// [`FEEDBACK_MIN_NOTES`] of the notes use and words no other note holds.
/// Each comes with its weight over the first's (the first is 1).
pub(crate) fn feedback_terms(
    plan: &QueryPlan,
    notes: &[(f32, String)],
    doc_freq: &dyn Fn(&str) -> u64,
    documents: u64,
) -> Vec<(String, f32)> {
    let asked: BTreeSet<String> = plan
        .units()
        .iter()
        .flat_map(|unit| std::iter::once(unit.clone()).chain(word_forms(unit)))
        .map(|term| term_group(&term).into_owned())
        .collect();
    let total_score: f32 = notes.iter().map(|(score, _)| score.max(0.0)).sum();
    let mut analyzer = query_analyzer();
    let mut weight: BTreeMap<String, f32> = BTreeMap::new();
    let mut used_by: BTreeMap<String, usize> = BTreeMap::new();
    for (score, text) in notes {
        let words = words_of(&mut analyzer, text);
        if words.is_empty() {
            continue;
        }
        let mut counts: BTreeMap<&str, u32> = BTreeMap::new();
        for word in &words {
            *counts.entry(word.as_str()).or_default() += 1;
        }
        let share = if total_score > 0.0 { score.max(0.0) / total_score } else { 1.0 / notes.len() as f32 };
        let length = words.len() as f32;
        for (word, count) in counts {
            if !useful(word) || asked.contains(term_group(word).as_ref()) {
                continue;
            }
            *weight.entry(word.to_owned()).or_default() += share * count as f32 / length;
            *used_by.entry(word.to_owned()).or_default() += 1;
        }
    }
    let min_notes = FEEDBACK_MIN_NOTES.min(notes.len());
    let mut scored: Vec<(String, f32)> = weight
        .into_iter()
        .filter(|(word, _)| used_by[word] >= min_notes)
        .filter_map(|(word, w)| {
            let df = doc_freq(&word);
            (df >= 2).then(|| {
                let info = informativeness(df, documents).powf(RARITY_POWER);
                (word, w * info)
            })
        })
        .collect();
    scored.sort_by(|a, b| b.1.total_cmp(&a.1).then_with(|| a.0.cmp(&b.0)));
    scored.truncate(FEEDBACK_WORDS);
    let top = scored.first().map_or(1.0, |(_, w)| *w);
    scored.into_iter().map(|(word, w)| (word, if top > 0.0 { w / top } else { 1.0 })).collect()
}

/// A note's words as a query would see them: Chinese segmented into words
/// first (so no bigram straddles two words), then analysed.
fn words_of(analyzer: &mut TextAnalyzer, text: &str) -> Vec<String> {
    let mut out = Vec::new();
    for chunk in text.split_whitespace() {
        for part in content_words(chunk).0 {
            out.extend(analyse(analyzer, &part).into_iter().map(|t| t.text));
        }
    }
    out
}

/// Whether a word of a note can be a feedback word: not a stop word, a lone
/// CJK character, a number or a Latin fragment of one or two letters.
fn useful(word: &str) -> bool {
    let chars = word.chars().count();
    if word.chars().any(is_cjk) {
        return chars >= 2 && !is_stop_word(word);
    }
    chars >= 3 && !word.chars().all(|c| c.is_ascii_digit()) && !is_stop_word(word)
}

/// The question's query (`parts`) over the first pass's page (`candidates`,
/// each scored as among all notes) with the feedback words as optional clauses
/// across `fields` (each field's weight × [`FEEDBACK_WEIGHT`] × the word's
/// weight): they rank the page again. Scoring the page only keeps the second
/// pass to a few notes (re-ranking the best 20, 50 or 200, or every matching
/// note, measured no better on any suite).
pub(crate) fn with_feedback(
    parts: &QueryParts<'_>,
    candidates: Arc<Candidates>,
    words: &[(String, f32)],
    fields: &[(Field, f32)],
) -> Box<dyn Query> {
    let reach = Reach::Candidates(candidates);
    let mut clauses: Vec<(Occur, Box<dyn Query>)> = vec![(Occur::Must, build_reaching(parts, false, &reach))];
    for (word, share) in words {
        for &(field, field_weight) in fields {
            let leaf = TermQuery::new(Term::from_field_text(field, word), IndexRecordOption::WithFreqs);
            let weight = field_weight * FEEDBACK_WEIGHT * share;
            clauses.push((Occur::Should, Box::new(BoostQuery::new(reach.leaf(Box::new(leaf)), weight))));
        }
    }
    Box::new(BooleanQuery::new(clauses))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::index::query::parse;

    #[test]
    fn feedback_words_are_the_notes_shared_rare_words_not_the_questions() {
        let plan = parse("how do I capture a voice memo with the microphone");
        let notes = vec![
            (
                3.0,
                "Record audio with the recorder. The recorder saves audio files; microphone access."
                    .to_owned(),
            ),
            (2.0, "The audio recorder plugin. Recordings are audio files in your vault.".to_owned()),
            (1.0, "Your vault holds notes. Notes link notes.".to_owned()),
        ];
        // `vault` and `notes` are in most notes, `audio` and `recorder` in few.
        let doc_freq = |word: &str| match word {
            "vault" | "notes" | "note" => 900,
            "audio" | "recorder" | "files" => 20,
            _ => 2,
        };
        let words = feedback_terms(&plan, &notes, &doc_freq, 1000);
        let names: Vec<&str> = words.iter().map(|(w, _)| w.as_str()).collect();
        assert_eq!(names.first(), Some(&"audio"), "{words:?}");
        assert!(names.contains(&"recorder"), "{words:?}");
        assert!(!names.contains(&"microphone"), "a word of the question: {words:?}");
        assert!(!names.contains(&"record"), "in one note only: {words:?}");
        assert!(!names.contains(&"the") && !names.contains(&"your"), "stop words: {words:?}");
        assert_eq!(words[0].1, 1.0);
        assert!(words.iter().all(|(_, w)| *w > 0.0 && *w <= 1.0));
    }

    #[test]
    fn chinese_feedback_words_never_straddle_two_words() {
        let plan = parse("怎么每天自动生成一篇当天的笔记");
        let notes = vec![
            (2.0, "日记插件会用模板创建当天的日记。核心插件。".to_owned()),
            (1.0, "模板插件可以在日记里插入日期。核心插件。".to_owned()),
        ];
        let words = feedback_terms(&plan, &notes, &|_| 5, 1000);
        let names: Vec<&str> = words.iter().map(|(w, _)| w.as_str()).collect();
        assert!(names.contains(&"日记") && names.contains(&"模板"), "{words:?}");
        assert!(!names.contains(&"心插") && !names.contains(&"的日"), "junk bigrams: {words:?}");
        assert!(!names.contains(&"当天"), "a word of the question: {words:?}");
    }
}
