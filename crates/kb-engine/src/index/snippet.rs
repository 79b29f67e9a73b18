//! Snippets: the lines of a note where the query's terms occur.
//!
//! Markdown lines are the natural unit of a note (a list item, a table row, a
//! paragraph), so a snippet is the best-matching line, cut to a window around
//! its first match when long, with every matched term wrapped in `**`. Lines are
//! ranked by how many distinct query terms they hold, then by file order. Each
//! snippet carries its 1-based line in the file and the heading it sits under.
//! The note's current text is analysed with the same analyzer as the index, so
//! highlighting agrees with what matched.

use std::collections::{BTreeMap, BTreeSet};

use super::script::is_cjk;
use super::tokenizer::{Analysed, TermFinder, is_word_char, term_group, term_probe};
use crate::vault::Heading;

/// Characters kept before the first match of a long line.
const BEFORE: usize = 60;
/// Characters kept in all, for a long line.
const WINDOW: usize = 220;

/// A highlighted excerpt of a note.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Snippet {
    /// The excerpt with matched terms in `**…**`.
    pub text: String,
    /// Where each `**…**` this module added lies in `text` (byte ranges, the
    /// marks included): a note's own `**bold**` is text, not a match, and a
    /// reader that shows matches otherwise (colour, or nothing) must tell them apart.
    pub marks: Vec<(usize, usize)>,
    /// The heading the line sits under, if any.
    pub heading: Option<String>,
    /// 1-based line in the file.
    pub line: u32,
}

/// Cuts up to `max` snippets from a note's text. `body_offset` is where the body
/// starts (matches in the frontmatter are not shown); `terms` are the analysed
/// query terms; `headings` the note's headings.
pub(crate) fn snippets(
    text: &str,
    body_offset: usize,
    terms: &BTreeSet<String>,
    headings: &[Heading],
    max: usize,
) -> Vec<Snippet> {
    if terms.is_empty() || max == 0 {
        return Vec::new();
    }
    let body_offset = body_offset.min(text.len());
    let body = &text[body_offset..];
    // Where each body line starts, to place a match on its line by binary search.
    let line_starts: Vec<usize> =
        std::iter::once(0).chain(body.match_indices('\n').map(|(at, _)| at + 1)).collect();
    // Each term's word, made once (a term's word may need its stem).
    let groups: BTreeMap<&str, String> =
        terms.iter().map(|term| (term.as_str(), term_group(term).into_owned())).collect();
    let tokens = candidate_tokens(body, &line_starts, terms, &groups, max);
    let line_of = |offset: usize| line_starts.partition_point(|&start| start <= offset) - 1;
    let mut lines: BTreeMap<usize, LineMatches> = BTreeMap::new();
    for token in &tokens {
        let Some(group) = groups.get(token.text.as_str()) else { continue };
        let line = lines.entry(line_of(token.from)).or_default();
        line.terms.insert(group.clone());
        // Overlapping matches (CJK bigrams) merge into one highlighted span.
        match line.spans.last_mut() {
            Some(last) if token.from <= last.1 => last.1 = last.1.max(token.to),
            _ => line.spans.push((token.from, token.to)),
        }
    }
    let mut ranked: Vec<(usize, LineMatches)> = lines.into_iter().collect();
    ranked.sort_by(|a, b| b.1.terms.len().cmp(&a.1.terms.len()).then(a.0.cmp(&b.0)));
    let first_body_line = 1 + text[..body_offset].matches('\n').count();
    ranked
        .into_iter()
        .take(max)
        .map(|(index, matches)| {
            let start = line_starts[index];
            let end = line_starts.get(index + 1).map_or(body.len(), |next| next - 1);
            let line = (first_body_line + index) as u32;
            let heading = headings.iter().rev().find(|h| h.line <= line).map(|h| h.text.clone());
            let (text, marks) = render(body, start, end, &matches.spans);
            Snippet { text, marks, heading, line }
        })
        .collect()
}

/// The analysed tokens of the lines that may hold a query term, with offsets
/// into `body`. Analysing is most of a snippet's cost (a 400 KB Chinese note
/// takes milliseconds), so a line is skipped when no term occurs in it as a
/// substring, ASCII-lowercased, provided that test is exact for it: every
/// letter or digit in it is ASCII (the analyzer only lowercases those) or CJK
/// (its n-grams are substrings of the text as written). Lines with other
/// letters (accents the analyzer folds, Cyrillic it lowercases) are always
/// analysed. The scan stops once `stop_after` lines hold every term.
fn candidate_tokens(
    body: &str,
    line_starts: &[usize],
    terms: &BTreeSet<String>,
    groups: &BTreeMap<&str, String>,
    stop_after: usize,
) -> Vec<Analysed> {
    let mut finder = TermFinder::new(terms);
    let mut tokens = Vec::new();
    let mut complete = 0;
    let words: BTreeSet<&str> = groups.values().map(String::as_str).collect();
    for (index, &start) in line_starts.iter().enumerate() {
        let end = line_starts.get(index + 1).copied().unwrap_or(body.len());
        let line = &body[start..end];
        let exact = line.chars().all(|c| c.is_ascii() || is_cjk(c) || !c.is_alphanumeric());
        let candidate = !exact || {
            let lower = line.to_ascii_lowercase();
            terms.iter().any(|term| lower.contains(term_probe(term)))
        };
        if !candidate {
            continue;
        }
        let mut found: BTreeSet<&str> = BTreeSet::new();
        finder.each(line, |term, from, to| {
            if let Some(group) = groups.get(term.as_str()) {
                found.insert(group);
            }
            tokens.push(Analysed { text: term.clone(), from: from + start, to: to + start, position: 0 });
        });
        // Lines rank by distinct terms, then by file order: once `stop_after`
        // lines hold every term, no later line can take their place.
        if found.len() == words.len() {
            complete += 1;
            if complete >= stop_after {
                break;
            }
        }
    }
    tokens
}

/// A byte range of the body.
type Span = (usize, usize);

/// The matches on one line: which query terms, and where.
#[derive(Default)]
struct LineMatches {
    /// The query words found (a word's forms count once, see `term_group`).
    terms: BTreeSet<String>,
    spans: Vec<Span>,
}

/// Renders the line `body[start..end]` (or a window of it) with spans in `**`.
/// A long line's window neither starts nor ends inside a word or a match; a
/// match where `**` would break the line's Markdown (inside code, a link or a
/// URL, or text already in `**bold**`) is left as written. Returns the text and
/// where its marked matches are (see [`Snippet::marks`]).
fn render(body: &str, start: usize, end: usize, spans: &[Span]) -> (String, Vec<Span>) {
    let line = body[start..end].trim_end_matches('\r');
    let end = start + line.len();
    let char_count = line.chars().count();
    let (mut from, mut to) = (start, end);
    if char_count > WINDOW {
        let first = spans[0].0;
        from = first;
        for (taken, (i, _)) in body[start..first].char_indices().rev().enumerate() {
            if taken >= BEFORE {
                break;
            }
            from = start + i;
        }
        // Not from the middle of a word: from the next word on.
        if from > start && cuts_word(body, from) {
            from += body[from..first].find(|c: char| !is_word_char(c)).unwrap_or(first - from);
        }
        from += body[from..first].len() - body[from..first].trim_start().len();
        to = from;
        for (taken, (i, c)) in body[from..end].char_indices().enumerate() {
            if taken >= WINDOW {
                break;
            }
            to = from + i + c.len_utf8();
        }
        // Not in the middle of a match or a word: to its end (a long word is cut).
        if let Some(&(_, e)) = spans.iter().find(|&&(s, e)| s < to && to < e) {
            to = e;
        }
        if to < end && cuts_word(body, to) {
            let rest = &body[to..end];
            let word_end = rest.find(|c: char| !is_word_char(c)).unwrap_or(rest.len());
            if rest[..word_end].chars().count() <= MAX_WORD_TAIL {
                to += word_end;
            }
        }
    }
    // Markup is looked for near the window only: a line may be a megabyte, and
    // an unclosed `<` or `[[` searched for to the line's end from each one
    // would cost its length squared.
    let mut scan_from = from.saturating_sub(MARKUP_MARGIN).max(start);
    while !body.is_char_boundary(scan_from) {
        scan_from -= 1;
    }
    let mut scan_to = (to + MARKUP_MARGIN).min(end);
    while !body.is_char_boundary(scan_to) {
        scan_to += 1;
    }
    let protected = markup_spans(&body[scan_from..scan_to]);
    let inside_markup =
        |s: usize, e: usize| protected.iter().any(|&(ps, pe)| s - scan_from < pe && ps < e - scan_from);
    let mut out = String::with_capacity(to - from + 16);
    if from > start {
        out.push('…');
    }
    let mut cursor = from;
    let mut marks = Vec::new();
    for &(s, e) in spans {
        let (s, e) = (s.max(from), e.min(to));
        if s >= e || s < cursor || inside_markup(s, e) {
            continue;
        }
        out.push_str(&body[cursor..s]);
        let mark = out.len();
        out.push_str("**");
        out.push_str(&body[s..e]);
        out.push_str("**");
        marks.push((mark, out.len()));
        cursor = e;
    }
    out.push_str(&body[cursor..to]);
    if to < end {
        out.push('…');
    }
    // Trimming never cuts a mark (it starts and ends with `*`), only moves it.
    let lead = out.len() - out.trim_start().len();
    let marks = marks.into_iter().map(|(s, e)| (s - lead, e - lead)).collect();
    (out.trim().to_owned(), marks)
}

/// Bytes either side of a snippet's window in which markup (code, links,
/// bold) is looked for: markup opened further away is not seen.
const MARKUP_MARGIN: usize = 1024;

/// The most letters a window's end is moved on to finish a word.
const MAX_WORD_TAIL: usize = 30;

/// Whether the byte offset `at` of `text` falls between two letters of one word.
fn cuts_word(text: &str, at: usize) -> bool {
    let before = text[..at].chars().next_back();
    let after = text[at..].chars().next();
    before.is_some_and(is_word_char) && after.is_some_and(is_word_char)
}

/// Byte ranges of `line` where a `**` would change or break its Markdown: code
/// spans, wikilinks, a link's destination `](…)`, autolinks `<…>`, bare URLs,
/// and text already in strong emphasis (`**…**`, `__…__`), whose own markers
/// would pair with the inserted ones. Rendering only: what a line means to the
/// vault is the vault layer's Markdown model; this only keeps a highlight from
/// garbling what the agent reads.
fn markup_spans(line: &str) -> Vec<Span> {
    let b = line.as_bytes();
    let mut out: Vec<Span> = Vec::new();
    let mut i = 0;
    while i < b.len() {
        match b[i] {
            b'`' => {
                let run = b[i..].iter().take_while(|&&c| c == b'`').count();
                let fence = &line[i..i + run];
                match line[i + run..].find(fence) {
                    Some(close) => {
                        let end = i + run + close + run;
                        out.push((i, end));
                        i = end;
                    }
                    None => i += run,
                }
            }
            b'[' if b.get(i + 1) == Some(&b'[') => match line[i..].find("]]") {
                Some(close) => {
                    out.push((i, i + close + 2));
                    i += close + 2;
                }
                None => i += 2,
            },
            b']' if b.get(i + 1) == Some(&b'(') => {
                let end = line[i..].find(')').map_or(line.len(), |close| i + close + 1);
                out.push((i, end));
                i = end;
            }
            b'<' => match line[i..].find('>') {
                Some(close) if line[i + 1..i + close].contains(':') && !line[i..i + close].contains(' ') => {
                    out.push((i, i + close + 1));
                    i += close + 1;
                }
                _ => i += 1,
            },
            b'h' | b'w'
                if starts_url(&line[i..]) && !line[..i].chars().next_back().is_some_and(is_word_char) =>
            {
                let len = line[i..]
                    .find(|c: char| c.is_whitespace() || c == ')' || c == '>')
                    .unwrap_or(line.len() - i);
                out.push((i, i + len));
                i += len;
            }
            b'*' | b'_' if b.get(i + 1) == Some(&b[i]) => {
                let marker = &line[i..i + 2];
                match line[i + 2..].find(marker) {
                    Some(close) => {
                        let end = i + 2 + close + 2;
                        out.push((i, end));
                        i = end;
                    }
                    None => i += 2,
                }
            }
            _ => i += 1,
        }
    }
    out
}

/// Whether `text` starts with a web address.
fn starts_url(text: &str) -> bool {
    ["http://", "https://", "www."]
        .iter()
        .any(|scheme| text.get(..scheme.len()).is_some_and(|head| head.eq_ignore_ascii_case(scheme)))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::index::tokenizer::{analyse, index_analyzer};

    fn terms(list: &[&str]) -> BTreeSet<String> {
        list.iter().map(|s| (*s).to_owned()).collect()
    }

    #[test]
    fn skipping_lines_without_a_term_finds_the_same_matches_as_analysing_everything() {
        let body = "Intro line\nGIT Remote and git-remote\nnothing here\r\nCafé au lait, CAFE\n\
                    同步远程仓库\n备份，不是同步。\nremote 仓库\n\nlast GIT ＧＩＴ\n\
                    the plant was dying\nSettings, and tying knots";
        let line_starts: Vec<usize> =
            std::iter::once(0).chain(body.match_indices('\n').map(|(at, _)| at + 1)).collect();
        for list in [
            &["git", "remote"][..],
            &["cafe"],
            &["远程", "程仓"],
            &["仓库", "同步"],
            &["intro", "last"],
            // Stems a word does not start with: `dying` is stemmed `die`.
            &["~die"],
            &["~set", "~tie"],
            &["absent"],
        ] {
            let terms = terms(list);
            let matched = |tokens: Vec<Analysed>| -> Vec<(String, usize, usize)> {
                tokens
                    .into_iter()
                    .filter(|t| terms.contains(&t.text))
                    .map(|t| (t.text, t.from, t.to))
                    .collect()
            };
            let everything = matched(analyse(&mut index_analyzer(), body));
            assert_eq!(everything.is_empty(), list == ["absent"], "{list:?}: {everything:?}");
            let groups = terms.iter().map(|term| (term.as_str(), term_group(term).into_owned())).collect();
            assert_eq!(
                matched(candidate_tokens(body, &line_starts, &terms, &groups, usize::MAX)),
                everything,
                "{list:?}"
            );
        }
    }

    #[test]
    fn chinese_bigrams_merge_into_one_highlight_with_line_and_heading() {
        let text = "---\ntitle: x\n---\n# 备份\n\n## 同步不等于备份\n同步远程仓库的设置很重要。\n";
        let headings = vec![
            Heading { level: 1, text: "备份".into(), line: 4 },
            Heading { level: 2, text: "同步不等于备份".into(), line: 6 },
        ];
        let got = snippets(text, 16, &terms(&["远程", "程仓", "仓库"]), &headings, 3);
        assert_eq!(
            got,
            [Snippet {
                text: "同步**远程仓库**的设置很重要。".into(),
                marks: vec![(6, 22)],
                heading: Some("同步不等于备份".into()),
                line: 7
            }]
        );
    }

    #[test]
    fn the_scan_stops_once_enough_lines_hold_every_term() {
        let text = "git\ngit remote\nremote\ngit remote again\ngit remote third\n同步\n";
        let got = snippets(text, 0, &terms(&["git", "remote"]), &[], 2);
        assert_eq!(got.iter().map(|s| s.line).collect::<Vec<_>>(), [2, 4]);
        let got = snippets(text, 0, &terms(&["git", "remote"]), &[], 4);
        assert_eq!(
            got.iter().map(|s| s.line).collect::<Vec<_>>(),
            [2, 4, 5, 1],
            "partial lines after complete ones"
        );
    }

    #[test]
    fn lines_with_more_distinct_terms_come_first_and_long_lines_are_windowed() {
        let long = format!("{} git remote {}", "word ".repeat(100), "tail ".repeat(100));
        let text = format!("intro git\n{long}\n");
        let got = snippets(&text, 0, &terms(&["git", "remote"]), &[], 2);
        assert_eq!(got.len(), 2);
        assert_eq!(got[0].line, 2);
        assert!(got[0].text.starts_with('…') && got[0].text.ends_with('…'), "{}", got[0].text);
        assert!(got[0].text.contains("**git** **remote**"));
        assert_eq!(
            got[1],
            Snippet { text: "intro **git**".into(), marks: vec![(6, 13)], heading: None, line: 1 }
        );
        for snippet in &got {
            for &(s, e) in &snippet.marks {
                let marked = &snippet.text[s..e];
                assert!(marked.starts_with("**") && marked.ends_with("**") && e - s > 4, "{marked}");
            }
        }
    }

    #[test]
    fn highlights_never_nest_in_bold_or_break_links_code_and_urls() {
        let text = "- **iOS**: Store the vault **On My iPhone** or `iphone dir`.\n\
                    See [iPhone guide](https://support.apple.com/guide/iphone/x) and <https://iphone.example>.\n\
                    Local sync: [[#Syncthing]] or [[Sync|iPhone sync]], www.iphone.com/a, an __iPhone__ too.\n\
                    Plain iPhone text.\n";
        let got = snippets(text, 0, &terms(&["iphone", "syncthing"]), &[], 4);
        let texts: Vec<&str> = got.iter().map(|s| s.text.as_str()).collect();
        assert_eq!(
            texts,
            [
                "Local sync: [[#Syncthing]] or [[Sync|iPhone sync]], www.iphone.com/a, an __iPhone__ too.",
                "- **iOS**: Store the vault **On My iPhone** or `iphone dir`.",
                "See [**iPhone** guide](https://support.apple.com/guide/iphone/x) and <https://iphone.example>.",
                "Plain **iPhone** text.",
            ]
        );
    }

    #[test]
    fn a_long_line_is_cut_between_words_and_never_inside_a_match() {
        let line = format!("{} Obsidian keeps notes {}", "lengthy ".repeat(20), "verbose ".repeat(40));
        let got = snippets(&line, 0, &terms(&["obsidian"]), &[], 1);
        let text = &got[0].text;
        assert!(text.contains("**Obsidian**"), "{text}");
        let inner = text.trim_start_matches('…').trim_end_matches('…');
        assert!(inner.starts_with("lengthy "), "starts on a whole word: {text}");
        assert!(inner.ends_with("verbose"), "ends on a whole word: {text}");
        // A match straddling the window's end is finished, not cut to `**V**…`.
        let line = format!("Obsidian {} Vaultkeeping", "x".repeat(200));
        let got = snippets(&line, 0, &terms(&["obsidian", "vaultkeeping"]), &[], 1);
        assert!(got[0].text.ends_with("**Vaultkeeping**"), "{}", got[0].text);
    }

    #[test]
    fn markup_is_looked_for_near_the_window_so_a_hostile_line_costs_linear_time() {
        // Every `<` and `[[` unclosed: searching each to the line's end was
        // quadratic in a line of a megabyte.
        for filler in ["<", "[["] {
            let line = format!("{} git {}\n", filler.repeat(400_000), filler.repeat(400_000));
            let got = snippets(&line, 0, &terms(&["git"]), &[], 1);
            assert_eq!(got.len(), 1);
            assert!(got[0].text.contains("**git**"), "{filler}: {}", &got[0].text);
        }
    }
}
