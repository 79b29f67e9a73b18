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

/// Splits runs of CJK text at Chinese question and function words.
fn drop_chinese_stop_words(word: &str) -> Vec<String> {
    if !word.chars().any(is_cjk) {
        return vec![word.to_owned()];
    }
    let mut parts = vec![word.to_owned()];
    for stop in CHINESE_STOP_WORDS {
        parts = parts
            .into_iter()
            .flat_map(|part| part.split(stop).map(str::to_owned).collect::<Vec<_>>())
            .filter(|part| !part.trim().is_empty())
            .collect();
    }
    parts
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
    for raw in &raw_words {
        for part in drop_chinese_stop_words(raw) {
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
    QueryPlan { words, phrases, excluded, name_key }
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
        let required = if relaxed {
            1
        } else if n <= 2 {
            n
        } else {
            (n * 3).div_ceil(5)
        };
        top.push((Occur::Must, Box::new(BooleanQuery::with_minimum_required_clauses(clauses, required))));
        for word in plan.words.iter().filter(|w| w.terms.len() > 1) {
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
    for tag in &filters.tags {
        let term = Term::from_field_text(fields.tag_filter, tag);
        top.push((Occur::Must, Box::new(TermQuery::new(term, IndexRecordOption::Basic))));
    }
    if let Some(folder) = &filters.folder {
        let term = Term::from_field_text(fields.folder, folder);
        top.push((Occur::Must, Box::new(TermQuery::new(term, IndexRecordOption::Basic))));
    }
    if !top.iter().any(|(occur, _)| *occur == Occur::Must) {
        top.push((Occur::Must, Box::new(AllQuery)));
    }
    Box::new(BooleanQuery::new(top))
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
        assert_eq!(terms(&parse("如何同步远程仓库").words), [vec!["同步", "步远", "远程", "程仓", "仓库"]]);
        assert_eq!(terms(&parse("什么是卡片笔记法").words), [vec!["是卡", "卡片", "片笔", "笔记", "记法"]]);
    }

    #[test]
    fn a_query_of_stop_words_only_still_searches() {
        assert_eq!(terms(&parse("how to").words), [vec!["how"], vec!["to"]]);
    }
}
