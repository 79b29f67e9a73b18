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
//!
//! An English word also matches its other forms (issue 19): each term's clause
//! is the better of its exact match and, at [`STEM_WEIGHT`], its stemmed one
//! (see the tokenizer), so `depressed` finds `depression` while a note holding
//! `depressed` itself ranks as before. `search_knowledge` weighs each term of a
//! multi-word query by how informative it is in the note bodies of the whole
//! vault ([`rarity_boosts`]): rarity among short titles says little, and a
//! common word that sits in some title must not outrank a question's rare words.

use std::collections::{BTreeMap, BTreeSet};

use tantivy::Term;
use tantivy::query::{
    AllQuery, BooleanQuery, BoostQuery, DisjunctionMaxQuery, Occur, PhraseQuery, Query, TermQuery,
};
use tantivy::schema::{Field, IndexRecordOption};
use tantivy::tokenizer::TextAnalyzer;

use super::fuzzy::PrefixedFuzzyQuery;
use super::schema::Fields;
use super::script::{is_cjk, is_hangul, is_kana};
use super::tokenizer::{Analysed, analyse, query_analyzer, stem_of, stem_term};

/// English words that carry no topic in a question: articles, pronouns,
/// auxiliaries, prepositions and the pieces of contractions (`don't` gives
/// `don`, `t`). Words that carry a little topic (`never`, `good`, `split`) are
/// not listed; [`informativeness`] weighs them down by how common they are.
const ENGLISH_STOP_WORDS: &[&str] = &[
    "a", "about", "above", "after", "again", "against", "all", "also", "am", "an", "and", "any", "are",
    "aren", "as", "at", "be", "because", "been", "before", "being", "below", "between", "both", "but", "by",
    "can", "could", "d", "did", "didn", "do", "does", "doesn", "doing", "don", "down", "during", "each",
    "few", "for", "from", "further", "get", "got", "had", "has", "have", "having", "he", "her", "here",
    "hers", "him", "his", "how", "i", "if", "in", "into", "is", "isn", "it", "its", "itself", "just", "ll",
    "m", "me", "more", "most", "much", "my", "myself", "no", "nor", "not", "now", "of", "off", "on", "once",
    "only", "or", "other", "our", "ours", "out", "over", "own", "re", "s", "same", "she", "should", "so",
    "some", "such", "t", "than", "that", "the", "their", "them", "then", "there", "these", "they", "this",
    "those", "through", "to", "too", "under", "until", "up", "us", "ve", "very", "was", "wasn", "we", "were",
    "what", "when", "where", "which", "while", "who", "whom", "why", "will", "with", "won", "would", "you",
    "your", "yours",
];

/// How much a stemmed match (`runs` for `running`) counts against an exact one.
const STEM_WEIGHT: f32 = 0.6;

/// How strongly a question's rarer words lead (the power of the informativeness ratio).
const RARITY_POWER: f32 = 2.0;

/// How informative a term is in a vault of `documents` notes of which
/// `frequency` hold it in their text: its BM25 inverse document frequency over
/// that of a term no note holds, from near 0 (in every note) to 1.
pub(crate) fn informativeness(frequency: u64, documents: u64) -> f32 {
    let idf = |df: u64| {
        let (n, df) = (documents as f32, df.min(documents) as f32);
        (1.0 + (n - df + 0.5) / (df + 0.5)).ln()
    };
    let top = idf(0);
    if top <= 0.0 { 1.0 } else { (idf(frequency) / top).clamp(0.0, 1.0) }
}

/// Per-term boosts from each term's informativeness: the query's most
/// informative term keeps its weight, the others are scaled down by how much
/// less they say (squared), so a common word that happens to sit in a short
/// title cannot outrank the rare words of a question.
pub(crate) fn rarity_boosts(informativeness: &BTreeMap<String, f32>) -> BTreeMap<String, f32> {
    let top = informativeness.values().copied().fold(0.0f32, f32::max);
    informativeness
        .iter()
        .map(|(term, &info)| {
            let boost = if top > 0.0 { (info / top).powf(RARITY_POWER).max(0.02) } else { 1.0 };
            (term.clone(), boost)
        })
        .collect()
}

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
    /// Stemmed forms count too (`~run` for `running`): they matched as well.
    pub(crate) fn positive_terms(&self) -> BTreeSet<String> {
        let mut terms: BTreeSet<String> = self
            .words
            .iter()
            .chain(&self.phrases)
            .flat_map(|w| w.terms.iter().map(|t| t.text.clone()))
            .collect();
        for unit in self.units() {
            terms.extend(word_forms(&unit));
        }
        terms
    }

    /// Whether the query has nothing to search for.
    pub(crate) fn is_empty(&self) -> bool {
        self.words.is_empty() && self.phrases.is_empty() && self.excluded.is_empty()
    }

    /// The distinct terms of the should-match words: one clause each.
    pub(crate) fn units(&self) -> Vec<String> {
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

/// The other terms a query term matches with a lower weight: its marked stem
/// (other forms of the word: `~run` for `running`, `runs`) and, when it is not
/// its own stem, the stem as a word (`run`). Empty for CJK and codes.
fn word_forms(unit: &str) -> Vec<String> {
    match stem_of(unit) {
        Some(stem) if stem == unit => vec![stem_term(&stem)],
        Some(stem) => vec![stem_term(&stem), stem],
        None => Vec::new(),
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
    word.chars().any(|c| is_kana(c) || is_hangul(c))
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

/// Builds the tantivy query. `min_share` is the share of term clauses that must
/// match; `boosts` scales each term's clause (see [`rarity_boosts`]; absent is 1).
pub(crate) fn build(
    plan: &QueryPlan,
    fields: &Fields,
    weights: &[(Field, f32)],
    filters: &Filters,
    min_share: f32,
    relaxed: bool,
    boosts: &BTreeMap<String, f32>,
) -> Box<dyn Query> {
    let text_weights: Vec<(Field, f32)> =
        weights.iter().copied().filter(|(f, _)| *f != fields.name_key).collect();
    let name_weight = weights.iter().find(|(f, _)| *f == fields.name_key).map(|(_, w)| *w);
    let mut top: Vec<(Occur, Box<dyn Query>)> = Vec::new();

    let units = plan.units();
    if !units.is_empty() {
        let mut clauses: Vec<(Occur, Box<dyn Query>)> = Vec::new();
        for unit in &units {
            let boost = boosts.get(unit).copied().unwrap_or(1.0);
            let scaled = |factor: f32| -> Vec<(Field, f32)> {
                text_weights.iter().map(|&(f, w)| (f, w * boost * factor)).collect()
            };
            let term = Analysed { text: unit.clone(), from: 0, to: 0, position: 0 };
            let Some(exact) = across_fields(std::slice::from_ref(&term), &scaled(1.0), false) else {
                continue;
            };
            let stemmed = scaled(STEM_WEIGHT);
            let other_forms: Vec<(Occur, Box<dyn Query>)> = word_forms(unit)
                .into_iter()
                .filter_map(|form| {
                    let term = Analysed { text: form, from: 0, to: 0, position: 0 };
                    across_fields(std::slice::from_ref(&term), &stemmed, false).map(|q| (Occur::Should, q))
                })
                .collect();
            if other_forms.is_empty() {
                clauses.push((Occur::Should, exact));
            } else {
                // The better of the exact and the stemmed match, not both: a note
                // holding the word as typed scores as it did without stemming.
                let stemmed: Box<dyn Query> = Box::new(BooleanQuery::new(other_forms));
                let either = DisjunctionMaxQuery::with_tie_breaker(vec![exact, stemmed], 0.0);
                clauses.push((Occur::Should, Box::new(either)));
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
    fn word_forms_are_the_marked_stem_and_the_bare_stem() {
        assert_eq!(word_forms("running"), ["~run", "run"]);
        assert_eq!(word_forms("run"), ["~run"]);
        assert!(word_forms("备份").is_empty() && word_forms("v2").is_empty());
        let terms = parse("depressed notes").positive_terms();
        assert!(
            terms.contains("~depress") && terms.contains("depressed") && terms.contains("~note"),
            "{terms:?}"
        );
    }

    #[test]
    fn rare_terms_lead_a_question() {
        let documents = 1000;
        assert!(informativeness(0, documents) > 0.99);
        assert!(informativeness(400, documents) < 0.15, "a word in 40 % of notes says little");
        let info: BTreeMap<String, f32> = [("after", 300), ("kubernetes", 4)]
            .into_iter()
            .map(|(t, df)| (t.to_owned(), informativeness(df, documents)))
            .collect();
        let boosts = rarity_boosts(&info);
        assert_eq!(boosts["kubernetes"], 1.0);
        assert!(boosts["after"] < 0.1, "{boosts:?}");
    }

    #[test]
    fn a_query_of_stop_words_only_still_searches() {
        assert_eq!(terms(&parse("how to").words), [vec!["how"], vec!["to"]]);
    }
}
