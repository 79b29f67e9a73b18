//! Pseudo-relevance feedback (RM3-style) for a question put in other words
//! (issue 13): the notes a first pass ranks highest say what the question is
//! about in the vault's own words, so their most informative words join the
//! question as low-weight optional clauses and the first pass's page is ranked
//! again. It runs only when the first pass is unsure (its best note does not
//! clearly outscore the second): feedback from a sure first pass mostly adds
//! the words of that note's neighbours and pushes it down. Every constant was
//! chosen with `kb-index eval` on every suite (BENCHMARKS.md, "Questions in
//! other words"); the window where nothing drops is narrow.

use std::collections::{BTreeSet, HashMap};
use std::hash::{BuildHasherDefault, Hasher};
use std::sync::Arc;

use tantivy::Term;
use tantivy::query::{BooleanQuery, BoostQuery, Occur, Query};
use tantivy::schema::{Field, IndexRecordOption};
use tantivy::tokenizer::TextAnalyzer;

use super::build::{QueryParts, Reach, build_reaching};
use super::candidates::Candidates;
use super::terms::SharedTermQuery;
use super::words::{QueryPlan, content_words, informativeness, is_stop_word, word_forms};
use crate::index::script::{is_cjk, is_hangul, is_kana};
use crate::index::tokenizer::{query_analyzer, term_group};

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

/// The question's own words and their forms, as the index groups terms:
/// never feedback words.
fn asked_words(plan: &QueryPlan) -> BTreeSet<String> {
    plan.units()
        .iter()
        .flat_map(|unit| std::iter::once(unit.clone()).chain(word_forms(unit)))
        .map(|term| term_group(&term).into_owned())
        .collect()
}

/// The feedback words of a question from `notes` (each note's first-pass score
/// and text): the [`FEEDBACK_WORDS`] words with the highest
/// Σ (score share × frequency in the note) × informativeness³ in the vault,
/// leaving out the question's own words and their forms, stop words, lone CJK
/// characters, numbers, short Latin fragments, words fewer than
/// [`FEEDBACK_MIN_NOTES`] of the notes use and words no other note holds.
/// Each comes with its weight over the first's (the first is 1).
///
/// Cheap enough to run on every unsure question: each note is read in one
/// pass that counts its words in place (no list of its words, no sorted map);
/// the candidates (words enough notes use) are taken from the highest Σ down,
/// each checked against the question and the stop words and looked up in the
/// vault only when reached, stopping once the next Σ is below the last kept
/// word's score (informativeness is at most 1, so no later word can score more).
pub(crate) fn feedback_terms(
    plan: &QueryPlan,
    notes: &[(f32, String)],
    doc_freq: &dyn Fn(&str) -> u64,
    documents: u64,
) -> Vec<(String, f32)> {
    let total_score: f32 = notes.iter().map(|(score, _)| score.max(0.0)).sum();
    let mut analyzer = query_analyzer();
    let mut slots: HashMap<String, usize, BuildHasherDefault<WordHasher>> = HashMap::default();
    let mut tallies: Vec<Tally> = Vec::new();
    let mut in_note: Vec<usize> = Vec::new();
    for (score, text) in notes {
        let mut length = 0usize;
        each_word(&mut analyzer, text, &mut |word| {
            length += 1;
            let slot = match slots.get(word) {
                Some(&slot) => slot,
                None => {
                    slots.insert(word.to_owned(), tallies.len());
                    tallies.push(Tally::default());
                    tallies.len() - 1
                }
            };
            let tally = &mut tallies[slot];
            if tally.count == 0 {
                in_note.push(slot);
            }
            tally.count += 1;
        });
        if length == 0 {
            continue;
        }
        let share = if total_score > 0.0 { score.max(0.0) / total_score } else { 1.0 / notes.len() as f32 };
        let length = length as f32;
        for slot in in_note.drain(..) {
            let tally = &mut tallies[slot];
            tally.weight += share * tally.count as f32 / length;
            tally.notes += 1;
            tally.count = 0;
        }
    }
    let min_notes = FEEDBACK_MIN_NOTES.min(notes.len());
    let asked = asked_words(plan);
    let mut candidates: Vec<(&str, f32)> = slots
        .iter()
        .map(|(word, &slot)| (word.as_str(), &tallies[slot]))
        .filter(|(_, tally)| tally.notes >= min_notes)
        .map(|(word, tally)| (word, tally.weight))
        .collect();
    let order = |a: &(&str, f32), b: &(&str, f32)| b.1.total_cmp(&a.1).then_with(|| a.0.cmp(b.0));
    candidates.sort_unstable_by(order);
    // The best words so far, in `order`, at most FEEDBACK_WORDS of them.
    let mut scored: Vec<(&str, f32)> = Vec::with_capacity(FEEDBACK_WORDS + 1);
    for (word, weight) in candidates {
        if scored.len() == FEEDBACK_WORDS && scored.last().is_some_and(|&(_, last)| weight < last) {
            break;
        }
        // Checked here, not before sorting: most candidates are never reached,
        // and a word's stem costs more than its count.
        if !useful(word) || asked.contains(term_group(word).as_ref()) {
            continue;
        }
        let df = doc_freq(word);
        if df < 2 {
            continue;
        }
        let info = informativeness(df, documents).powf(RARITY_POWER);
        let entry = (word, weight * info);
        let at = scored.partition_point(|kept| order(kept, &entry).is_lt());
        scored.insert(at, entry);
        scored.truncate(FEEDBACK_WORDS);
    }
    let top = scored.first().map_or(1.0, |(_, w)| *w);
    scored.into_iter().map(|(word, w)| (word.to_owned(), if top > 0.0 { w / top } else { 1.0 })).collect()
}

/// FNV-1a, for the words a note is counted by: they are short and come from
/// the vault's own notes, where the default hasher's guard against chosen
/// collisions buys nothing and cost half of the counting.
struct WordHasher(u64);

impl Default for WordHasher {
    fn default() -> Self {
        WordHasher(0xcbf2_9ce4_8422_2325)
    }
}

impl Hasher for WordHasher {
    fn finish(&self) -> u64 {
        self.0
    }

    fn write(&mut self, bytes: &[u8]) {
        for &byte in bytes {
            self.0 = (self.0 ^ u64::from(byte)).wrapping_mul(0x0100_0000_01b3);
        }
    }
}

/// A word of the feedback notes while they are read.
#[derive(Debug, Default)]
struct Tally {
    /// Σ score share × frequency in the note, over the notes read so far.
    weight: f32,
    /// How many of the notes read so far use it.
    notes: usize,
    /// How often the note being read uses it.
    count: u32,
}

/// Calls `found` with each of a note's words as a query would see them:
/// Chinese segmented into words first (so no bigram straddles two words), then
/// analysed. A stretch of chunks (between whitespace) that need no segmenting
/// is analysed at once: the analyser splits at whitespace too and looks at
/// nothing beyond a word's own characters, so it gives the words it would give
/// chunk by chunk.
fn each_word(analyzer: &mut TextAnalyzer, text: &str, found: &mut dyn FnMut(&str)) {
    let mut analyse_run = |run: &str| {
        if run.is_empty() {
            return;
        }
        let mut stream = analyzer.token_stream(run);
        while stream.advance() {
            found(&stream.token().text);
        }
    };
    let mut run_from = 0;
    for chunk in text.split_whitespace() {
        if chunk.is_ascii() || !chunk.chars().any(is_cjk) || chunk.chars().any(|c| is_kana(c) || is_hangul(c))
        {
            continue;
        }
        let at = chunk.as_ptr() as usize - text.as_ptr() as usize;
        analyse_run(&text[run_from..at]);
        for part in content_words(chunk).0 {
            analyse_run(&part);
        }
        run_from = at + chunk.len();
    }
    analyse_run(&text[run_from..]);
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
            let term = Term::from_field_text(field, word);
            // A field no note holds the word in scores nothing: no leaf (most
            // words are in no title, alias or tag). Each leaf reads the
            // search's shared lookups, as the question's own do.
            if parts.terms.doc_freq(&term).is_ok_and(|notes| notes == 0) {
                continue;
            }
            let leaf = SharedTermQuery::new(term, IndexRecordOption::WithFreqs, parts.terms);
            let weight = field_weight * FEEDBACK_WEIGHT * share;
            clauses.push((Occur::Should, reach.leaf(Box::new(BoostQuery::new(Box::new(leaf), weight)))));
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

    /// The feedback words as defined, computed the plain way: every note's
    /// words listed chunk by chunk, every candidate looked up and sorted.
    fn defined_terms(
        plan: &QueryPlan,
        notes: &[(f32, String)],
        doc_freq: &dyn Fn(&str) -> u64,
        documents: u64,
    ) -> Vec<(String, f32)> {
        let asked = asked_words(plan);
        let total: f32 = notes.iter().map(|(score, _)| score.max(0.0)).sum();
        let mut analyzer = query_analyzer();
        let mut weight: std::collections::BTreeMap<String, (f32, usize)> = Default::default();
        for (score, text) in notes {
            let mut words = Vec::new();
            for chunk in text.split_whitespace() {
                for part in content_words(chunk).0 {
                    let analysed = crate::index::tokenizer::analyse(&mut analyzer, &part);
                    words.extend(analysed.into_iter().map(|t| t.text));
                }
            }
            let share = if total > 0.0 { score.max(0.0) / total } else { 1.0 / notes.len() as f32 };
            let mut counts: std::collections::BTreeMap<&str, u32> = Default::default();
            for word in &words {
                *counts.entry(word).or_default() += 1;
            }
            for (word, count) in counts {
                if useful(word) && !asked.contains(term_group(word).as_ref()) {
                    let entry = weight.entry(word.to_owned()).or_default();
                    entry.0 += share * count as f32 / words.len() as f32;
                    entry.1 += 1;
                }
            }
        }
        let mut scored: Vec<(String, f32)> = weight
            .into_iter()
            .filter(|(_, (_, used))| *used >= FEEDBACK_MIN_NOTES.min(notes.len()))
            .filter_map(|(word, (w, _))| {
                let df = doc_freq(&word);
                (df >= 2).then(|| (word, w * informativeness(df, documents).powf(RARITY_POWER)))
            })
            .collect();
        scored.sort_by(|a, b| b.1.total_cmp(&a.1).then_with(|| a.0.cmp(&b.0)));
        scored.truncate(FEEDBACK_WORDS);
        let top = scored.first().map_or(1.0, |(_, w)| *w);
        scored.into_iter().map(|(word, w)| (word, if top > 0.0 { w / top } else { 1.0 })).collect()
    }

    #[test]
    fn feedback_words_are_those_defined_however_they_are_counted() {
        // Mixed scripts, kana and Hangul beside Han, ideographic spaces,
        // punctuation glued to words, accents, a token over the length limit.
        let texts = [
            "Sync keeps your vault in sync across devices. Resolve a sync conflict: open the \
             conflicted file, compare versions, keep one. 同步冲突会在文件历史里保留两个版本。",
            "备份仓库：用 Git 同步笔记，冲突时比较版本。Café résumé naïve — sync, backup; backups! \
             ひらがなの文章 と 한국어 문장 mixed日本語テキスト　全角空格之后的同步设置",
            "Version history shows every version of a file. Restore a version to resolve a conflict. \
             aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa sync",
            "Backup plugins copy the vault on a schedule; the file recovery core plugin keeps \
             snapshots. 文件恢复插件会定期保存快照，版本历史可以恢复。",
            "Conflicts happen when two devices edit one note. 两台设备同时编辑同一篇笔记就会冲突。",
        ];
        // Many shared words at many frequencies, so most candidates are never reached.
        let notes: Vec<(f32, String)> = texts
            .iter()
            .enumerate()
            .map(|(k, text)| {
                let mut text = (*text).to_owned();
                for i in (0..300).filter(|i| (i + k) % 3 != 0) {
                    for _ in 0..(i * 7 + k * 3) % 5 {
                        text.push_str(&format!(" topic{i}"));
                    }
                }
                (5.0 - k as f32 * 0.7, text)
            })
            .collect();
        // A made-up but fixed vault frequency, spread over rare and common.
        let doc_freq = |word: &str| {
            let spread = word.bytes().fold(7u64, |h, b| h.wrapping_mul(31).wrapping_add(u64::from(b)));
            spread % 400
        };
        for question in ["how do I resolve a sync conflict in my backup", "怎么解决同步冲突并恢复旧版本"]
        {
            let plan = parse(question);
            for count in 1..=notes.len() {
                let notes = &notes[..count];
                assert_eq!(
                    feedback_terms(&plan, notes, &doc_freq, 1000),
                    defined_terms(&plan, notes, &doc_freq, 1000),
                    "{question} with {count} notes"
                );
            }
        }
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
