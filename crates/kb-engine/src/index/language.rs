//! Which language a note is written in, and a query asked in, told lexically:
//! the script of its letters, then, where one script serves several languages
//! (Latin, Cyrillic, Arabic, Han), the language whose commonest words it uses
//! most (`the`, `und`, `yang`), or kana for Japanese. No model, no dictionary
//! beyond these short lists; a text that says too little is of no language.
//!
//! A search ranks notes in the query's language above notes in other languages
//! when the vault holds several languages of the query's script in strength (a
//! help vault translated into 30 languages): an English question must not put an
//! Indonesian or a Thai note first on a shared word. A vault with one language
//! per script never does this, so a Chinese note that uses English terms stays a
//! full match for an English query in a Chinese–English vault, and a vault in
//! one language ranks exactly as it would without any of this.

use super::script::{is_han, is_hangul, is_kana};

/// A detected language: its position in [`LANGUAGES`] plus one; 0 is none.
pub(crate) type LanguageCode = u64;

/// Scripts that serve several languages of the table (a note's rivals share one).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Script {
    Latin,
    Cyrillic,
    Greek,
    Arabic,
    Hebrew,
    Han,
    Hangul,
    Thai,
    Khmer,
    Bengali,
}

/// Each language: its code, script and commonest words (lowercase, as written).
/// Japanese is told from Chinese by kana, not by words.
const LANGUAGES: &[(&str, Script, &[&str])] = &[
    (
        "en",
        Script::Latin,
        &[
            "the", "and", "of", "to", "is", "in", "you", "that", "it", "for", "with", "this", "are", "can",
            "your", "on", "be", "how", "what", "do", "i", "an", "or", "from", "if", "which", "when", "my",
        ],
    ),
    (
        "de",
        Script::Latin,
        &[
            "der", "die", "das", "und", "ist", "nicht", "ein", "eine", "mit", "den", "zu", "sie", "auf",
            "für", "von", "wie", "ich", "werden", "wird", "kann", "oder", "dem", "des", "im", "sich", "auch",
            "wenn",
        ],
    ),
    (
        "fr",
        Script::Latin,
        &[
            "le", "la", "les", "et", "est", "des", "une", "du", "pour", "dans", "que", "vous", "pas", "sur",
            "avec", "ce", "qui", "comment", "je", "au", "aux", "votre", "peut", "sont", "une", "ou", "cette",
        ],
    ),
    (
        "es",
        Script::Latin,
        &[
            "el", "los", "las", "y", "es", "que", "en", "una", "para", "con", "por", "se", "del", "como",
            "puede", "su", "al", "lo", "puedes", "tu", "sus", "este", "esta", "cómo", "más",
        ],
    ),
    (
        "it",
        Script::Latin,
        &[
            "il", "di", "che", "è", "per", "un", "una", "con", "della", "non", "sono", "gli", "come", "puoi",
            "nel", "si", "delle", "dei", "alla", "questo", "anche", "nella", "ad", "le", "ed",
        ],
    ),
    (
        "pt",
        Script::Latin,
        &[
            "o", "os", "de", "que", "e", "é", "do", "da", "para", "com", "um", "uma", "não", "em", "no",
            "na", "você", "se", "como", "ao", "dos", "das", "pode", "seu", "sua", "ou", "mais",
        ],
    ),
    (
        "nl",
        Script::Latin,
        &[
            "de", "het", "een", "en", "van", "is", "dat", "je", "niet", "op", "te", "met", "voor", "zijn",
            "kun", "u", "om", "hoe", "wordt", "deze", "kunt", "als", "naar", "ook", "bij", "jouw",
        ],
    ),
    (
        "id",
        Script::Latin,
        &[
            "yang", "dan", "di", "untuk", "ini", "dengan", "dari", "dalam", "anda", "tidak", "akan", "ke",
            "dapat", "atau", "itu", "bisa", "pada", "adalah", "juga", "jika",
        ],
    ),
    (
        "pl",
        Script::Latin,
        &[
            "i", "w", "nie", "się", "na", "jest", "z", "do", "że", "to", "jak", "można", "oraz", "lub",
            "aby", "przez", "ze", "dla", "jeśli", "są", "możesz",
        ],
    ),
    (
        "cs",
        Script::Latin,
        &[
            "a", "je", "se", "na", "v", "že", "pro", "s", "které", "nebo", "z", "do", "lze", "můžete", "jak",
            "jsou", "také", "když", "této",
        ],
    ),
    (
        "sk",
        Script::Latin,
        &[
            "a", "je", "sa", "na", "v", "že", "pre", "s", "ktoré", "alebo", "z", "do", "môžete", "ako", "sú",
            "aj", "keď", "tejto",
        ],
    ),
    (
        "sv",
        Script::Latin,
        &[
            "och", "att", "det", "är", "en", "som", "på", "för", "med", "du", "inte", "av", "kan", "till",
            "den", "om", "eller", "har", "din", "ett",
        ],
    ),
    (
        "da",
        Script::Latin,
        &[
            "og", "at", "det", "er", "en", "som", "på", "for", "med", "du", "ikke", "af", "kan", "til",
            "den", "eller", "har", "din", "et",
        ],
    ),
    (
        "no",
        Script::Latin,
        &[
            "og", "at", "det", "er", "en", "som", "på", "for", "med", "du", "ikke", "av", "kan", "til",
            "den", "eller", "har", "din", "et",
        ],
    ),
    (
        "fi",
        Script::Latin,
        &[
            "ja", "on", "ei", "voit", "että", "se", "tai", "kun", "jos", "mutta", "ovat", "tämä", "myös",
            "kuin", "voi", "sinun",
        ],
    ),
    (
        "hu",
        Script::Latin,
        &[
            "a", "az", "és", "hogy", "nem", "is", "egy", "meg", "van", "vagy", "ha", "csak", "be", "ki",
            "el", "lehet",
        ],
    ),
    (
        "ro",
        Script::Latin,
        &[
            "și", "în", "de", "la", "cu", "pe", "este", "un", "o", "nu", "care", "să", "din", "pentru",
            "sau", "poți", "dacă",
        ],
    ),
    (
        "tr",
        Script::Latin,
        &[
            "ve", "bir", "bu", "için", "ile", "da", "de", "olarak", "veya", "daha", "gibi", "ne", "nasıl",
            "olan", "sonra",
        ],
    ),
    (
        "ca",
        Script::Latin,
        &[
            "el", "la", "i", "de", "que", "és", "els", "les", "per", "amb", "un", "una", "no", "del", "com",
            "pots", "si",
        ],
    ),
    (
        "vi",
        Script::Latin,
        &[
            "và", "của", "là", "các", "có", "được", "trong", "cho", "để", "một", "không", "bạn", "này",
            "với", "những",
        ],
    ),
    (
        "ru",
        Script::Cyrillic,
        &[
            "и",
            "в",
            "не",
            "на",
            "что",
            "это",
            "с",
            "как",
            "для",
            "по",
            "вы",
            "или",
            "можно",
            "если",
            "чтобы",
            "из",
        ],
    ),
    (
        "uk",
        Script::Cyrillic,
        &["і", "в", "не", "на", "що", "це", "з", "як", "для", "або", "ви", "можна", "та", "у", "якщо", "щоб"],
    ),
    ("ar", Script::Arabic, &["في", "من", "على", "أن", "إلى", "هذا", "التي", "عن", "ما", "هذه", "يمكنك"]),
    ("fa", Script::Arabic, &["و", "در", "به", "از", "که", "این", "را", "با", "است", "می", "یک", "های"]),
    ("zh", Script::Han, &[]),
    ("ja", Script::Han, &[]),
    ("ko", Script::Hangul, &[]),
    ("el", Script::Greek, &[]),
    ("he", Script::Hebrew, &[]),
    ("th", Script::Thai, &[]),
    ("km", Script::Khmer, &[]),
    ("bn", Script::Bengali, &[]),
];

const _: () = assert!(LANGUAGES.len() < 64);

/// Most characters of a note looked at: its opening tells its language.
const SAMPLE_CHARS: usize = 4_000;

/// Fewest common words a Latin, Cyrillic or Arabic text must use to be of a language.
const MIN_COMMON_WORDS: usize = 2;

/// The code of a language in the table (`"en"`), else 0.
pub(crate) fn code_of(language: &str) -> LanguageCode {
    LANGUAGES.iter().position(|(code, ..)| *code == language).map_or(0, |i| i as LanguageCode + 1)
}

/// The language of a code: its name and script.
pub(crate) fn language(code: LanguageCode) -> Option<(&'static str, Script)> {
    let (name, script, _) = LANGUAGES.get(usize::try_from(code).ok()?.checked_sub(1)?)?;
    Some((name, *script))
}

/// Every language's code (at most 63: a query's rivals are a bit mask).
pub(crate) fn all() -> impl Iterator<Item = LanguageCode> {
    1..=LANGUAGES.len() as LanguageCode
}

/// The codes of every language written in `script`.
pub(crate) fn languages_of(script: Script) -> impl Iterator<Item = LanguageCode> {
    LANGUAGES
        .iter()
        .enumerate()
        .filter(move |(_, (_, s, _))| *s == script)
        .map(|(i, _)| i as LanguageCode + 1)
}

fn script_of(c: char) -> Option<Script> {
    if c.is_ascii() {
        // Most characters of most notes: of the ranges below, only Latin letters.
        return c.is_ascii_alphabetic().then_some(Script::Latin);
    }
    script_by_range(c)
}

fn script_by_range(c: char) -> Option<Script> {
    Some(match c {
        _ if is_han(c) || is_kana(c) => Script::Han,
        _ if is_hangul(c) => Script::Hangul,
        'a'..='z' | 'A'..='Z' | '\u{C0}'..='\u{24F}' | '\u{1E00}'..='\u{1EFF}' if c.is_alphabetic() => {
            Script::Latin
        }
        '\u{400}'..='\u{4FF}' => Script::Cyrillic,
        '\u{370}'..='\u{3FF}' => Script::Greek,
        '\u{600}'..='\u{6FF}' | '\u{750}'..='\u{77F}' => Script::Arabic,
        '\u{590}'..='\u{5FF}' => Script::Hebrew,
        '\u{E00}'..='\u{E7F}' => Script::Thai,
        '\u{1780}'..='\u{17FF}' => Script::Khmer,
        '\u{980}'..='\u{9FF}' => Script::Bengali,
        _ => return None,
    })
}

/// The language `text` is written in, or 0 when it says too little. The script
/// with the most letters decides (a Han, kana or Hangul character counts as three
/// letters: it is about a word), then common words or kana the language.
pub(crate) fn detect(text: &str) -> LanguageCode {
    let mut letters: Vec<(Script, usize)> = Vec::new();
    let mut kana = 0;
    for c in text.chars().take(SAMPLE_CHARS) {
        let Some(script) = script_of(c) else { continue };
        kana += usize::from(is_kana(c));
        let weight = if matches!(script, Script::Han | Script::Hangul) { 3 } else { 1 };
        match letters.iter_mut().find(|(s, _)| *s == script) {
            Some((_, count)) => *count += weight,
            None => letters.push((script, weight)),
        }
    }
    // Ties go to the script seen first.
    let Some(&(script, _)) = letters.iter().rev().max_by_key(|(_, count)| *count) else { return 0 };
    match script {
        Script::Han if kana > 0 => code_of("ja"),
        Script::Han => code_of("zh"),
        Script::Latin | Script::Cyrillic | Script::Arabic => by_common_words(text, script),
        _ => languages_of(script).next().unwrap_or(0),
    }
}

/// Each common word and the languages (positions in [`LANGUAGES`]) that list it.
fn common_words() -> &'static std::collections::HashMap<&'static str, Vec<usize>> {
    static WORDS: std::sync::OnceLock<std::collections::HashMap<&'static str, Vec<usize>>> =
        std::sync::OnceLock::new();
    WORDS.get_or_init(|| {
        let mut words: std::collections::HashMap<&'static str, Vec<usize>> = std::collections::HashMap::new();
        for (i, (_, _, common)) in LANGUAGES.iter().enumerate() {
            for word in *common {
                let languages = words.entry(word).or_default();
                if !languages.contains(&i) {
                    languages.push(i);
                }
            }
        }
        words
    })
}

/// The length in bytes of the longest common word of any language.
fn longest_common_word() -> usize {
    static LONGEST: std::sync::OnceLock<usize> = std::sync::OnceLock::new();
    *LONGEST.get_or_init(|| common_words().keys().map(|word| word.len()).max().unwrap_or(0))
}

/// The language of `script` whose common words `text` uses most (ties to the
/// first listed): one look-up per word of the sample.
fn by_common_words(text: &str, script: Script) -> LanguageCode {
    let table = common_words();
    let mut uses = [0usize; LANGUAGES.len()];
    let end = text.char_indices().nth(SAMPLE_CHARS).map_or(text.len(), |(i, _)| i);
    let mut lower = String::new();
    for word in text[..end].split(|c: char| !c.is_alphabetic() && c != '\'').filter(|w| !w.is_empty()) {
        lower.clear();
        if word.is_ascii() {
            // Lowercasing keeps an ASCII word's length: a longer one is no common word.
            if word.len() > longest_common_word() {
                continue;
            }
            lower.push_str(word);
            lower.make_ascii_lowercase();
        } else {
            lower.extend(word.chars().flat_map(char::to_lowercase));
        }
        for &i in table.get(lower.as_str()).into_iter().flatten() {
            uses[i] += 1;
        }
    }
    commonest(&uses, script)
}

/// The language of `script` whose common words a text used most, if it used
/// at least [`MIN_COMMON_WORDS`] of them; else 0.
fn commonest(uses: &[usize; LANGUAGES.len()], script: Script) -> LanguageCode {
    let mut best = (0, 0);
    for (i, (_, s, _)) in LANGUAGES.iter().enumerate() {
        if *s == script && uses[i] > best.1 {
            best = (i as LanguageCode + 1, uses[i]);
        }
    }
    if best.1 >= MIN_COMMON_WORDS { best.0 } else { 0 }
}

/// The language of a query when its words tell it: its script, where one
/// language writes it, else its common words (one is enough in a query).
pub(crate) fn of_query(query: &str) -> Option<LanguageCode> {
    let code = detect(query);
    if code != 0 {
        return Some(code);
    }
    let script = query.chars().find_map(script_of)?;
    let words = query.split(|c: char| !c.is_alphabetic() && c != '\'').map(str::to_lowercase);
    for word in words {
        if let Some(i) =
            LANGUAGES.iter().position(|(_, s, common)| *s == script && common.contains(&word.as_str()))
        {
            return Some(i as LanguageCode + 1);
        }
    }
    None
}

/// The script a query is written in (its first letter's), for the vault's commonest language of it.
pub(crate) fn script_of_query(query: &str) -> Option<Script> {
    query.chars().find_map(script_of)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn name(code: LanguageCode) -> &'static str {
        language(code).map_or("-", |(name, _)| name)
    }

    #[test]
    fn notes_are_told_by_script_and_common_words() {
        let cases = [
            ("Use the graph view to see how your notes link to each other.", "en"),
            (
                "Die Graphansicht zeigt, wie deine Notizen mit der Zeit verbunden sind und wie sie wachsen.",
                "de",
            ),
            (
                "Gunakan tampilan grafik untuk melihat bagaimana catatan Anda saling terhubung dengan yang lain.",
                "id",
            ),
            ("Gebruik de grafiekweergave om te zien hoe je notities met elkaar verbonden zijn.", "nl"),
            ("使用关系图谱查看笔记之间的链接。在 Obsidian 里打开 Graph view 插件。", "zh"),
            ("グラフビューでノートのつながりを確認します。", "ja"),
            ("그래프 보기로 노트 사이의 연결을 확인하세요.", "ko"),
            ("Используйте граф, чтобы увидеть, как связаны ваши заметки и что в них.", "ru"),
            ("Graph view", "-"),
            ("", "-"),
        ];
        for (text, expected) in cases {
            assert_eq!(name(detect(text)), expected, "{text}");
        }
    }

    /// `by_common_words` as it was before its ASCII shortcuts.
    fn by_common_words_plain(text: &str, script: Script) -> LanguageCode {
        let mut uses = [0usize; LANGUAGES.len()];
        let end = text.char_indices().nth(SAMPLE_CHARS).map_or(text.len(), |(i, _)| i);
        for word in text[..end].split(|c: char| !c.is_alphabetic() && c != '\'').filter(|w| !w.is_empty()) {
            let lower: String = word.chars().flat_map(char::to_lowercase).collect();
            for &i in common_words().get(lower.as_str()).into_iter().flatten() {
                uses[i] += 1;
            }
        }
        commonest(&uses, script)
    }

    #[test]
    fn ascii_characters_have_the_script_of_their_range() {
        for c in '\0'..='\x7f' {
            assert_eq!(script_of(c), script_by_range(c), "{c:?}");
        }
    }

    proptest::proptest! {
        /// The shortcuts for ASCII words count the same common words.
        #[test]
        fn common_words_are_counted_as_lowercased(
            words in proptest::collection::vec(
                "(the|The|THE|und|Und|de|het|yang|и|ЧТО|İst|ist|to|To|of|qu'il|l'on|Straße|[a-zA-Zé']{1,14})",
                0..40,
            )
        ) {
            let text = words.join(" ");
            for script in [Script::Latin, Script::Cyrillic] {
                proptest::prop_assert_eq!(by_common_words(&text, script), by_common_words_plain(&text, script));
            }
        }
    }

    #[test]
    fn a_query_needs_one_common_word_and_a_keyword_query_has_none() {
        assert_eq!(of_query("how do I link notes").map(name), Some("en"));
        assert_eq!(of_query("wie verlinke ich Notizen").map(name), Some("de"));
        assert_eq!(of_query("关系图谱").map(name), Some("zh"));
        assert_eq!(of_query("graph view"), None);
        assert_eq!(script_of_query("graph view"), Some(Script::Latin));
        assert_eq!(script_of_query("123"), None);
    }
}
