//! From a person's query to a tantivy query.
//!
//! The contract's syntax is words, `"exact phrase"` and `-excluded`. Words are
//! analysed like the index (CJK into bigrams), question and stop words in both
//! languages are dropped unless nothing else is left, and each remaining term is
//! one clause searched across the tool's fields with the weights from
//! `index-schema/`. A share of the clauses must match, so notes with more of the
//! query rank first; when that finds nothing the search runs again needing any
//! one term, so a natural question never comes back empty merely because one of
//! its words is in no note. Adjacent terms of one word (a Chinese run, `graph-view`)
//! add a phrase boost; an exact title, alias or file-name match adds a large one.

use std::collections::BTreeSet;

use tantivy::Term;
use tantivy::query::{AllQuery, BooleanQuery, BoostQuery, Occur, PhraseQuery, Query, TermQuery};
use tantivy::schema::{Field, IndexRecordOption};
use tantivy::tokenizer::TextAnalyzer;

use super::fuzzy::PrefixedFuzzyQuery;
use super::schema::Fields;
use super::tokenizer::{Analysed, analyse, is_cjk, query_analyzer};

/// English words that carry no topic in a question.
const ENGLISH_STOP_WORDS: &[&str] = &[
    "a", "about", "an", "and", "are", "as", "at", "be", "by", "can", "could", "do", "does", "for", "from",
    "how", "i", "in", "into", "is", "it", "its", "me", "my", "of", "on", "or", "should", "so", "that", "the",
    "there", "this", "to", "was", "we", "what", "when", "where", "which", "who", "why", "will", "with",
    "would", "you", "your",
];

/// Chinese question and function words, longest first; a query run is split at them.
const CHINESE_STOP_WORDS: &[&str] = &[
    "为什么",
    "怎么样",
    "有没有",
    "能不能",
    "是不是",
    "怎么",
    "怎样",
    "如何",
    "什么",
    "哪里",
    "哪些",
    "哪个",
    "是否",
    "能否",
    "请问",
    "一下",
    "可以",
    "我们",
    "你们",
    "我的",
    "的",
    "吗",
    "呢",
    "吧",
    "啊",
    "呀",
];

/// One word of the query after analysis.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct QueryWord {
    /// The word as typed.
    pub(crate) raw: String,
    /// Its terms with positions (for phrase queries).
    pub(crate) terms: Vec<Analysed>,
}

/// A parsed query.
#[derive(Debug, Clone, Default, PartialEq)]
pub(crate) struct QueryPlan {
    /// Words that should match (stop words removed).
    pub(crate) words: Vec<QueryWord>,
    /// Quoted phrases that must match.
    pub(crate) phrases: Vec<QueryWord>,
    /// Words and phrases that must not match.
    pub(crate) excluded: Vec<QueryWord>,
    /// The whole query, lowercased, for exact name matches.
    pub(crate) name_key: String,
    /// Unspaced runs that segmentation split into several words: a phrase boost.
    pub(crate) runs: Vec<QueryWord>,
}

impl QueryPlan {
    /// Every distinct term that should be highlighted or counted (words and phrases).
    pub(crate) fn positive_terms(&self) -> BTreeSet<String> {
        self.words.iter().chain(&self.phrases).flat_map(|w| w.terms.iter().map(|t| t.text.clone())).collect()
    }

    /// Whether the query has nothing to search for.
    pub(crate) fn is_empty(&self) -> bool {
        self.words.is_empty() && self.phrases.is_empty() && self.excluded.is_empty()
    }

    /// The distinct terms of the should-match words: one clause each.
    fn units(&self) -> Vec<String> {
        let mut seen = BTreeSet::new();
        let mut out = Vec::new();
        for term in self.words.iter().flat_map(|w| &w.terms) {
            if seen.insert(term.text.clone()) {
                out.push(term.text.clone());
            }
        }
        out
    }
}

/// Splits the query text into raw words, phrases and exclusions.
fn split_syntax(query: &str) -> (Vec<String>, Vec<String>, Vec<String>) {
    let (mut words, mut phrases, mut excluded) = (Vec::new(), Vec::new(), Vec::new());
    let mut chars = query.chars().peekable();
    while let Some(&c) = chars.peek() {
        if c.is_whitespace() {
            chars.next();
            continue;
        }
        let negative = c == '-';
        if negative {
            chars.next();
        }
        let quoted = chars.peek() == Some(&'"');
        let mut text = String::new();
        if quoted {
            chars.next();
            for c in chars.by_ref() {
                if c == '"' {
                    break;
                }
                text.push(c);
            }
        } else {
            while let Some(&c) = chars.peek() {
                if c.is_whitespace() {
                    break;
                }
                text.push(c);
                chars.next();
            }
        }
        if text.trim().is_empty() {
            continue;
        }
        match (negative, quoted) {
            (true, _) => excluded.push(text),
            (false, true) => phrases.push(text),
            (false, false) => words.push(text),
        }
    }
    (words, phrases, excluded)
}

/// Single characters that, standing alone after segmentation, carry no topic.
const CHINESE_STOP_CHARS: &[&str] = &[
    "的", "了", "吗", "呢", "吧", "啊", "呀", "在", "从", "把", "被", "和", "与", "及", "或", "对", "给",
    "向", "里", "是", "我", "你", "他", "她", "它", "也", "都", "就", "还", "又", "要", "会", "能", "用",
    "去", "来", "到", "让", "这", "那", "个", "得", "地", "着", "过", "为", "以", "之",
];

/// The Chinese word segmenter (jieba's dictionary, about 100 ms to load once).
fn segmenter() -> &'static jieba_rs::Jieba {
    static JIEBA: std::sync::OnceLock<jieba_rs::Jieba> = std::sync::OnceLock::new();
    JIEBA.get_or_init(jieba_rs::Jieba::new)
}

/// Loads the segmenter ahead of the first Chinese query.
pub(crate) fn warm_up() {
    let _ = segmenter();
}

fn is_chinese_stop(word: &str) -> bool {
    CHINESE_STOP_WORDS.contains(&word) || CHINESE_STOP_CHARS.contains(&word)
}

fn has_kana_or_hangul(word: &str) -> bool {
    word.chars().any(|c| matches!(c as u32, 0x3040..=0x30FF | 0x31F0..=0x31FF | 0xFF66..=0xFF9F | 0xAC00..=0xD7AF | 0x1100..=0x11FF | 0x3130..=0x318F))
}

/// Splits a query word into content words. Chinese is segmented into dictionary
/// words so that bigrams never straddle two words (`导入笔记` gives `导入`, `笔记`,
/// not the junk `入笔`), and question and function words are dropped. Latin words,
/// Japanese and Korean pass through whole. Returns the words and whether any
/// stop word was dropped from inside the word.
fn content_words(word: &str) -> (Vec<String>, bool) {
    if !word.chars().any(is_cjk) || has_kana_or_hangul(word) {
        return (vec![word.to_owned()], false);
    }
    let mut words = Vec::new();
    let mut dropped = false;
    for token in segmenter().cut(word, false) {
        let piece = token.word.trim();
        if piece.is_empty() {
            continue;
        }
        if is_chinese_stop(piece) {
            dropped = true;
        } else {
            words.push(piece.to_owned());
        }
    }
    (words, dropped)
}

fn analyse_word(analyzer: &mut TextAnalyzer, raw: &str) -> QueryWord {
    QueryWord { raw: raw.to_owned(), terms: analyse(analyzer, raw) }
}

/// Parses a query into a plan.
pub(crate) fn parse(query: &str) -> QueryPlan {
    let mut analyzer = query_analyzer();
    let (raw_words, raw_phrases, raw_excluded) = split_syntax(query);
    let mut words = Vec::new();
    let mut stop_only = Vec::new();
    let mut runs = Vec::new();
    for raw in &raw_words {
        let (parts, dropped) = content_words(raw);
        if parts.len() > 1 && !dropped {
            // The whole unspaced run, as written, earns a phrase boost.
            runs.push(analyse_word(&mut analyzer, raw));
        }
        for part in parts {
            let mut word = analyse_word(&mut analyzer, &part);
            let before = word.terms.len();
            word.terms.retain(|t| !ENGLISH_STOP_WORDS.contains(&t.text.as_str()));
            if word.terms.is_empty() && before > 0 {
                stop_only.push(analyse_word(&mut analyzer, &part));
            } else if !word.terms.is_empty() {
                words.push(word);
            }
        }
    }
    let phrases: Vec<QueryWord> = raw_phrases
        .iter()
        .map(|raw| analyse_word(&mut analyzer, raw))
        .filter(|w| !w.terms.is_empty())
        .collect();
    if words.is_empty() && phrases.is_empty() {
        // A query of stop words only ("how to") still searches for them.
        words = stop_only;
        if words.is_empty() {
            words = raw_words
                .iter()
                .map(|raw| analyse_word(&mut analyzer, raw))
                .filter(|w| !w.terms.is_empty())
                .collect();
        }
    }
    let excluded = raw_excluded
        .iter()
        .map(|raw| analyse_word(&mut analyzer, raw))
        .filter(|w| !w.terms.is_empty())
        .collect();
    let name_key = query.trim().trim_matches('"').trim().to_lowercase();
    QueryPlan { words, phrases, excluded, name_key, runs }
}

/// A term or phrase across weighted fields, as one should-clause.
fn across_fields(
    word_terms: &[Analysed],
    fields: &[(Field, f32)],
    phrase_only: bool,
) -> Option<Box<dyn Query>> {
    let mut clauses: Vec<(Occur, Box<dyn Query>)> = Vec::new();
    for &(field, weight) in fields {
        let query: Box<dyn Query> = match word_terms {
            [] => continue,
            [one] if !phrase_only => Box::new(TermQuery::new(
                Term::from_field_text(field, &one.text),
                IndexRecordOption::WithFreqs,
            )),
            [one] => Box::new(TermQuery::new(
                Term::from_field_text(field, &one.text),
                IndexRecordOption::WithFreqs,
            )),
            many => {
                let first = many[0].position;
                let terms = many
                    .iter()
                    .map(|t| (t.position - first, Term::from_field_text(field, &t.text)))
                    .collect::<Vec<_>>();
                Box::new(PhraseQuery::new_with_offset(terms))
            }
        };
        clauses.push((Occur::Should, Box::new(BoostQuery::new(query, weight))));
    }
    if clauses.is_empty() { None } else { Some(Box::new(BooleanQuery::new(clauses))) }
}

/// Filters shared by both search tools.
#[derive(Debug, Clone, Default)]
pub(crate) struct Filters {
    /// Lowercased tags the note must carry (a parent matches its children).
    pub(crate) tags: Vec<String>,
    /// A folder the note must lie under.
    pub(crate) folder: Option<String>,
}

/// Builds the tantivy query. `min_share` is the share of term clauses that must match.
pub(crate) fn build(
    plan: &QueryPlan,
    fields: &Fields,
    weights: &[(Field, f32)],
    filters: &Filters,
    min_share: f32,
    relaxed: bool,
) -> Box<dyn Query> {
    let text_weights: Vec<(Field, f32)> =
        weights.iter().copied().filter(|(f, _)| *f != fields.name_key).collect();
    let name_weight = weights.iter().find(|(f, _)| *f == fields.name_key).map(|(_, w)| *w);
    let mut top: Vec<(Occur, Box<dyn Query>)> = Vec::new();

    let units = plan.units();
    if !units.is_empty() {
        let mut clauses: Vec<(Occur, Box<dyn Query>)> = Vec::new();
        for unit in &units {
            let term = Analysed { text: unit.clone(), from: 0, to: 0, position: 0 };
            if let Some(q) = across_fields(std::slice::from_ref(&term), &text_weights, false) {
                clauses.push((Occur::Should, q));
            }
        }
        let n = clauses.len();
        let required = if relaxed { 1 } else { ((n as f32 * min_share).ceil() as usize).clamp(1, n.max(1)) };
        if n > 1 && required < n {
            // Coordination: a note holding every term scores its terms twice.
            let all: Vec<(Occur, Box<dyn Query>)> =
                clauses.iter().map(|(_, q)| (Occur::Must, q.box_clone())).collect();
            top.push((Occur::Should, Box::new(BooleanQuery::new(all))));
        }
        top.push((Occur::Must, Box::new(BooleanQuery::with_minimum_required_clauses(clauses, required))));
        for word in plan.words.iter().chain(&plan.runs).filter(|w| w.terms.len() > 1) {
            let boosted: Vec<(Field, f32)> = text_weights.iter().map(|&(f, w)| (f, w * 1.5)).collect();
            if let Some(q) = across_fields(&word.terms, &boosted, true) {
                top.push((Occur::Should, q));
            }
        }
    }
    for phrase in &plan.phrases {
        if let Some(q) = across_fields(&phrase.terms, &text_weights, true) {
            top.push((Occur::Must, q));
        }
    }
    if let (Some(weight), false) = (name_weight, plan.name_key.is_empty()) {
        let exact =
            TermQuery::new(Term::from_field_text(fields.name_key, &plan.name_key), IndexRecordOption::Basic);
        top.push((Occur::Should, Box::new(BoostQuery::new(Box::new(exact), weight))));
    }
    for word in &plan.excluded {
        if let Some(q) = across_fields(&word.terms, &text_weights, true) {
            top.push((Occur::MustNot, q));
        }
    }
    push_filters(&mut top, fields, filters);
    if !top.iter().any(|(occur, _)| *occur == Occur::Must) {
        top.push((Occur::Must, Box::new(AllQuery)));
    }
    Box::new(BooleanQuery::new(top))
}

/// Adds the tag and folder filters as required clauses.
fn push_filters(top: &mut Vec<(Occur, Box<dyn Query>)>, fields: &Fields, filters: &Filters) {
    for tag in &filters.tags {
        let term = Term::from_field_text(fields.tag_filter, tag);
        top.push((Occur::Must, Box::new(TermQuery::new(term, IndexRecordOption::Basic))));
    }
    if let Some(folder) = &filters.folder {
        let term = Term::from_field_text(fields.folder, folder);
        top.push((Occur::Must, Box::new(TermQuery::new(term, IndexRecordOption::Basic))));
    }
}

/// The last resort when nothing matched: Latin words of four letters or more
/// matched within one edit (two from eight letters), transpositions included, so
/// `zettlekasten` still finds `Zettelkasten`. `None` when the query has no such word.
pub(crate) fn build_fuzzy(
    plan: &QueryPlan,
    fields: &Fields,
    weights: &[(Field, f32)],
    filters: &Filters,
) -> Option<Box<dyn Query>> {
    let mut clauses: Vec<(Occur, Box<dyn Query>)> = Vec::new();
    for unit in plan.units() {
        let letters = unit.chars().count();
        if letters < 4 || !unit.chars().all(|c| c.is_ascii_alphanumeric()) {
            continue;
        }
        let distance = if letters >= 8 { 2 } else { 1 };
        for &(field, weight) in weights.iter().filter(|(f, _)| *f != fields.name_key) {
            let Some(fuzzy) = PrefixedFuzzyQuery::new(field, &unit, distance) else { continue };
            clauses.push((Occur::Should, Box::new(BoostQuery::new(Box::new(fuzzy), weight))));
        }
    }
    if clauses.is_empty() {
        return None;
    }
    let mut top: Vec<(Occur, Box<dyn Query>)> = vec![(Occur::Must, Box::new(BooleanQuery::new(clauses)))];
    push_filters(&mut top, fields, filters);
    for word in &plan.excluded {
        if let Some(q) = across_fields(&word.terms, weights, true) {
            top.push((Occur::MustNot, q));
        }
    }
    Some(Box::new(BooleanQuery::new(top)))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn terms(plan: &[QueryWord]) -> Vec<Vec<String>> {
        plan.iter().map(|w| w.terms.iter().map(|t| t.text.clone()).collect()).collect()
    }

    #[test]
    fn syntax_splits_words_phrases_and_exclusions() {
        let plan = parse(r#"git "remote repo" -svn 备份"#);
        assert_eq!(terms(&plan.words), [vec!["git"], vec!["备份"]]);
        assert_eq!(terms(&plan.phrases), [vec!["remote", "repo"]]);
        assert_eq!(terms(&plan.excluded), [vec!["svn"]]);
    }

    #[test]
    fn question_words_are_dropped_in_both_languages() {
        assert_eq!(terms(&parse("how do I sync a remote").words), [vec!["sync"], vec!["remote"]]);
        let words = terms(&parse("如何同步远程仓库").words);
        assert!(!words.concat().contains(&"步远".to_owned()), "no bigram across words: {words:?}");
        assert!(words.concat().contains(&"远程".to_owned()) && words.concat().contains(&"仓库".to_owned()));
        let words = terms(&parse("怎么从 Evernote 导入笔记").words).concat();
        assert!(words.contains(&"evernote".to_owned()) && words.contains(&"导入".to_owned()));
        assert!(!words.contains(&"从".to_owned()) && !words.contains(&"入笔".to_owned()), "{words:?}");
    }

    #[test]
    fn a_query_of_stop_words_only_still_searches() {
        assert_eq!(terms(&parse("how to").words), [vec!["how"], vec!["to"]]);
    }
}
