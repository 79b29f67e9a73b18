//! Writing systems by character: which characters are Han, kana or Hangul.
//!
//! One table for every rule that depends on the script: the tokenizer bigrams
//! runs of these scripts (they are written without spaces between words), the
//! query analyser sends only Chinese through the word segmenter, recall counts
//! one token per such character, and the evaluation names a query's language
//! from them.

/// Han ideographs: the unified block, extensions A to G (and the supplement of
/// compatibility ideographs among them), compatibility ideographs.
pub fn is_han(c: char) -> bool {
    matches!(c,
        '\u{3400}'..='\u{4DBF}'     // Extension A
        | '\u{4E00}'..='\u{9FFF}'   // Unified Ideographs
        | '\u{F900}'..='\u{FAFF}'   // Compatibility Ideographs
        | '\u{20000}'..='\u{3134F}') // Extensions B to G, Compatibility Supplement
}

/// Hiragana, katakana and their phonetic extensions, half-width katakana.
pub fn is_kana(c: char) -> bool {
    matches!(c,
        '\u{3040}'..='\u{30FF}'     // Hiragana, Katakana
        | '\u{31F0}'..='\u{31FF}'   // Katakana phonetic extensions
        | '\u{FF66}'..='\u{FF9F}') // Half-width katakana
}

/// Hangul syllables and jamo.
pub fn is_hangul(c: char) -> bool {
    matches!(c,
        '\u{AC00}'..='\u{D7FF}'     // Syllables, Jamo Extended-B
        | '\u{1100}'..='\u{11FF}'   // Jamo
        | '\u{3130}'..='\u{318F}'   // Compatibility jamo
        | '\u{A960}'..='\u{A97F}') // Jamo Extended-A
}

/// Whether a character belongs to a script written without spaces between
/// words (Han, kana, Hangul).
pub fn is_cjk(c: char) -> bool {
    is_han(c) || is_kana(c) || is_hangul(c)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn scripts() {
        assert!("备份𠀀𰀀".chars().all(is_han));
        assert!("ひらがなカタカナｶﾞ".chars().all(is_kana));
        assert!("백업ᄀꥠ".chars().all(is_hangul));
        assert!(!"aé1〜。".chars().any(is_cjk));
    }
}
