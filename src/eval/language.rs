//! Which language a query is in, from its script alone.
//!
//! The evaluation reports recall per language because the product promises
//! Chinese search as good as English search, and an average over both would
//! hide a regression in one. A query is short, so no statistical detector is
//! needed or trustworthy: the script decides. Kana goes first because Japanese
//! mixes kana with Han characters, and a Han-only query is taken as Chinese.

/// The language of a query: `ja` (any kana), `ko` (any Hangul), `zh` (any Han
/// character), `en` (letters in Latin script only, or no letters), else `other`.
pub fn language_of(query: &str) -> &'static str {
    if query.chars().any(is_kana) {
        "ja"
    } else if query.chars().any(is_hangul) {
        "ko"
    } else if query.chars().any(is_han) {
        "zh"
    } else if query.chars().any(|c| c.is_alphabetic() && !is_latin(c)) {
        "other"
    } else {
        "en"
    }
}

fn is_han(c: char) -> bool {
    matches!(c,
        '\u{3400}'..='\u{4DBF}'     // Extension A
        | '\u{4E00}'..='\u{9FFF}'   // Unified Ideographs
        | '\u{F900}'..='\u{FAFF}'   // Compatibility Ideographs
        | '\u{20000}'..='\u{3134F}' // Extensions B to G
        | '\u{3007}')
}

fn is_kana(c: char) -> bool {
    matches!(c,
        '\u{3041}'..='\u{309F}'     // Hiragana
        | '\u{30A0}'..='\u{30FF}'   // Katakana
        | '\u{31F0}'..='\u{31FF}'   // Katakana phonetic extensions
        | '\u{FF66}'..='\u{FF9D}') // Half-width katakana
}

fn is_hangul(c: char) -> bool {
    matches!(c,
        '\u{AC00}'..='\u{D7AF}'     // Syllables
        | '\u{1100}'..='\u{11FF}'   // Jamo
        | '\u{3130}'..='\u{318F}'   // Compatibility jamo
        | '\u{A960}'..='\u{A97F}'
        | '\u{D7B0}'..='\u{D7FF}')
}

fn is_latin(c: char) -> bool {
    c.is_ascii_alphabetic()
        || matches!(c,
            '\u{00C0}'..='\u{024F}'  // Latin-1 Supplement letters, Extended-A and -B
            | '\u{1E00}'..='\u{1EFF}' // Extended Additional
            | '\u{FF21}'..='\u{FF3A}' // Full-width A-Z
            | '\u{FF41}'..='\u{FF5A}') // Full-width a-z
}

#[cfg(test)]
mod tests {
    use super::language_of;

    #[test]
    fn scripts_decide() {
        for (query, language) in [
            ("backup repo", "en"),
            ("Café crème", "en"),
            ("2025-03-07", "en"),
            ("备份仓库", "zh"),
            ("Rust 所有权", "zh"),
            ("怎么同步 iCloud", "zh"),
            ("バックアップ", "ja"),
            ("日本語メモ", "ja"),
            ("백업 원칙", "ko"),
            ("резервная копия", "other"),
            ("Ｇｉｔ", "en"),
        ] {
            assert_eq!(language_of(query), language, "{query}");
        }
    }
}
