//! Which language a query is in, from its script alone.
//!
//! The evaluation reports recall per language because the product promises
//! Chinese search as good as English search, and an average over both would
//! hide a regression in one. A query is short, so no statistical detector is
//! needed or trustworthy: the script decides. Kana goes first because Japanese
//! mixes kana with Han characters, and a Han-only query is taken as Chinese.
//! The scripts are the index's (`index::is_han`, …), the tokenizer's table.

use crate::index::{is_han, is_hangul, is_kana};

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
