//! From a query's text to its words: the syntax (words, phrases, exclusions),
//! Chinese runs segmented by jieba, question and stop words dropped, each word's
//! terms and forms, and how informative a term is in the vault.

use std::collections::{BTreeMap, BTreeSet};

use tantivy::tokenizer::TextAnalyzer;

use crate::index::script::{is_cjk, is_hangul, is_kana};
use crate::index::tokenizer::{Analysed, analyse, query_analyzer, stem_of, stem_term};

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
    /// Characters in the word as the person typed it, before segmentation cut it
    /// (`随手记` gives `随手` and `记`, both of 3).
    pub(crate) typed_chars: usize,
}

/// Fewest words (after question and stop words are dropped) that make a query
/// put as a sentence (some were dropped: `how do I`, `怎么`, `的`) a question
/// rather than a name. A name or keywords (`同步不等于备份`, four words to
/// jieba) rank as ever; a question gets what `search::question` describes, and
/// its words are not coordinated (see `build`).
pub(crate) const QUESTION_WORDS_MIN: usize = 4;

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
    /// Whether question or stop words were dropped from the words (`how do I`,
    /// `怎么`, `的`): the query is put as a sentence, not as a name or keywords.
    pub(crate) sentence: bool,
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

    /// Whether the query is a question: put as a sentence, of
    /// [`QUESTION_WORDS_MIN`] words or more.
    pub(crate) fn is_question(&self) -> bool {
        self.sentence && self.words.len() >= QUESTION_WORDS_MIN
    }

    /// The lone CJK characters that segmentation cut from a short typed term
    /// (`记` of `随手记`): a note holding only these matched weakly. In a longer
    /// run (a sentence, a question) a lone character may be what it is about
    /// (`钱` of `付了钱不想用了能把钱要回来吗`), so it is never weak there.
    fn weak_units(&self) -> BTreeSet<String> {
        let lone = |word: &QueryWord| {
            word.terms.iter().filter(|t| is_lone_cjk(&t.text)).map(|t| t.text.clone()).collect::<Vec<_>>()
        };
        let in_long: BTreeSet<String> =
            self.words.iter().filter(|w| w.typed_chars > WEAK_TERM_CHARS_MAX).flat_map(lone).collect();
        self.words
            .iter()
            .filter(|w| w.typed_chars <= WEAK_TERM_CHARS_MAX)
            .flat_map(lone)
            .filter(|unit| !in_long.contains(unit))
            .collect()
    }

    /// The units that are not weak (words, bigrams, Latin words, the lone
    /// characters of long runs): a note matching none of them matched on single
    /// characters of a short term only, a weak match.
    pub(crate) fn strong_units(&self) -> Vec<String> {
        let weak = self.weak_units();
        self.units().into_iter().filter(|unit| !weak.contains(unit)).collect()
    }

    /// Whether a match may be weak: the query has weak units besides stronger
    /// ones, and no phrase (a note must hold each phrase anyway).
    pub(crate) fn has_weak_units(&self) -> bool {
        self.phrases.is_empty() && !self.weak_units().is_empty() && !self.strong_units().is_empty()
    }

    /// The plan searching for its weak units only (exclusions kept): what finds
    /// the weak matches.
    pub(crate) fn lone_characters(&self) -> QueryPlan {
        let weak = self.weak_units();
        let words = self
            .words
            .iter()
            .filter_map(|word| {
                let terms: Vec<Analysed> =
                    word.terms.iter().filter(|t| weak.contains(&t.text)).cloned().collect();
                (!terms.is_empty()).then(|| QueryWord { terms, ..word.clone() })
            })
            .collect();
        QueryPlan { words, runs: Vec::new(), ..self.clone() }
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

/// Longest typed word, in characters, whose lone CJK characters can make a weak match.
const WEAK_TERM_CHARS_MAX: usize = 4;

/// Whether a term is one CJK character (a query's lone character, not a bigram).
fn is_lone_cjk(term: &str) -> bool {
    let mut chars = term.chars();
    matches!((chars.next(), chars.next()), (Some(c), None) if is_cjk(c))
}

/// The other terms a query term matches with a lower weight: its marked stem
/// (other forms of the word: `~run` for `running`, `runs`) and, when it is not
/// its own stem, the stem as a word (`run`). Empty for CJK and codes.
pub(super) fn word_forms(unit: &str) -> Vec<String> {
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

/// Whether a term is an English or Chinese stop word (no topic of its own).
pub(crate) fn is_stop_word(term: &str) -> bool {
    ENGLISH_STOP_WORDS.contains(&term) || is_chinese_stop(term)
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
pub(super) fn content_words(word: &str) -> (Vec<String>, bool) {
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
    QueryWord { raw: raw.to_owned(), terms: analyse(analyzer, raw), typed_chars: raw.chars().count() }
}

/// Parses a query into a plan.
pub(crate) fn parse(query: &str) -> QueryPlan {
    let mut analyzer = query_analyzer();
    let (raw_words, raw_phrases, raw_excluded) = split_syntax(query);
    let mut words = Vec::new();
    let mut stop_only = Vec::new();
    let mut runs = Vec::new();
    let mut sentence = false;
    for raw in &raw_words {
        let (parts, dropped) = content_words(raw);
        sentence |= dropped;
        if parts.len() > 1 && !dropped {
            // The whole unspaced run, as written, earns a phrase boost.
            runs.push(analyse_word(&mut analyzer, raw));
        }
        for part in parts {
            let mut word = analyse_word(&mut analyzer, &part);
            word.typed_chars = raw.chars().count();
            let before = word.terms.len();
            word.terms.retain(|t| !ENGLISH_STOP_WORDS.contains(&t.text.as_str()));
            sentence |= word.terms.len() < before;
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
    QueryPlan { words, phrases, excluded, name_key, runs, sentence }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn terms(plan: &[QueryWord]) -> Vec<Vec<String>> {
        plan.iter().map(|w| w.terms.iter().map(|t| t.text.clone()).collect()).collect()
    }

    #[test]
    fn a_query_put_as_a_sentence_is_told_from_keywords() {
        assert!(parse("how do I edit several lines at the same time").sentence);
        assert!(parse("怎么同时修改好几行").sentence);
        assert!(!parse("同步不等于备份").sentence);
        assert!(!parse("edit several lines time").sentence);
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
    fn only_the_lone_characters_of_a_short_term_are_weak() {
        let strong = |query: &str| (parse(query).has_weak_units(), parse(query).strong_units());
        assert_eq!(strong("随手记"), (true, vec!["随手".to_owned()]));
        assert_eq!(strong("随手记 笔记"), (true, vec!["随手".to_owned(), "笔记".to_owned()]));
        // In a question a lone character may carry the topic.
        assert!(!parse("付了钱不想用了能把钱要回来吗").has_weak_units());
        assert!(!parse("记").has_weak_units() && !parse("\"随手记\"").has_weak_units());
    }

    #[test]
    fn a_query_of_stop_words_only_still_searches() {
        assert_eq!(terms(&parse("how to").words), [vec!["how"], vec!["to"]]);
    }
}
