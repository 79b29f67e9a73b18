//! The vault generator: a realistic, bilingual Obsidian-style vault of any size,
//! the same bytes for the same `(notes, seed)`.
//!
//! What makes it realistic, and why each part matters to a benchmark:
//! - about a third of the notes are Chinese, made of real words (bigram
//!   tokenization and snippets see real pairs), with English loanwords;
//! - words follow Zipf laws, function and content words apart (posting lists
//!   as long as in real text), and a few two-word phrases recur (phrase
//!   queries have matches);
//! - note lengths have a long tail: a quarter are short, the rest Pareto
//!   (mean about 4 KB), plus a handful of notes of 100–400 KB;
//! - YAML frontmatter with titles, aliases (some), nested tags (`type/…`,
//!   `area/…/…`) and created dates; some notes have none;
//! - wikilinks (plain, with display text, with a heading, embeds, broken ones
//!   and Markdown links) whose targets follow a power law, so a few hubs
//!   collect thousands of backlinks; about 1 % of notes are maps of content;
//! - headings, lists, tasks, callouts, inline tags, and code blocks in about
//!   2 % of notes;
//! - folders one to four levels deep.

use std::collections::HashSet;
use std::fmt::Write as _;
use std::fs;
use std::io;
use std::path::Path;

use crate::rng::{Rng, Zipf};
use crate::words::{CHINESE, ENGLISH, ENGLISH_PHRASES, LOANWORDS, STATUS_TAGS, TOP_FOLDERS, TYPE_TAGS};

/// How many Markdown files a vault has and how many bytes they hold.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Stats {
    /// Markdown files.
    pub files: u64,
    /// Their total size in bytes.
    pub bytes: u64,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Lang {
    English,
    Chinese,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Shape {
    Normal,
    /// A map of content: mostly a list of links.
    Moc,
    /// One of the 100 KB+ notes.
    Huge,
}

/// What is decided about a note before any text is written: other notes link
/// to it by title and heading, so these must be known up front.
#[derive(Debug, Clone)]
struct Plan {
    title: String,
    folder: usize,
    lang: Lang,
    shape: Shape,
    bytes: usize,
}

/// Streams of [`Rng::derive`], one per purpose.
const STREAM_PLAN: u64 = 1;
const STREAM_TEXT: u64 = 2;

/// Everything a note's text is drawn from.
struct Context {
    seed: u64,
    folders: Vec<String>,
    plans: Vec<Plan>,
    /// Link target by popularity rank.
    by_rank: Vec<usize>,
    links: Zipf,
    /// Function words and content words of each language, each by a Zipf law.
    english: (Zipf, Zipf),
    chinese: (Zipf, Zipf),
    /// Where the content words start in each list (before: function words).
    english_content: usize,
    chinese_content: usize,
}

/// Writes a vault of `notes` notes into `dir` (created if missing; it should be
/// empty) and returns what it wrote. The same `(notes, seed)` always gives the
/// same files with the same bytes.
pub fn generate(dir: &Path, notes: usize, seed: u64) -> io::Result<Stats> {
    let context = plan(notes, seed);
    fs::create_dir_all(dir)?;
    for folder in &context.folders {
        fs::create_dir_all(dir.join(folder))?;
    }
    let mut stats = Stats::default();
    for index in 0..notes {
        let text = context.render(index);
        let plan = &context.plans[index];
        let path = dir.join(&context.folders[plan.folder]).join(format!("{}.md", plan.title));
        fs::write(&path, text.as_bytes())?;
        stats.files += 1;
        stats.bytes += text.len() as u64;
    }
    Ok(stats)
}

/// The note at `index` of the vault `(notes, seed)`: its vault-relative path
/// and text, without writing anything (for tests and the parser benchmark).
pub fn note_text(notes: usize, seed: u64, index: usize) -> (String, String) {
    let context = plan(notes, seed);
    let plan = &context.plans[index];
    (format!("{}/{}.md", context.folders[plan.folder], plan.title), context.render(index))
}

fn plan(notes: usize, seed: u64) -> Context {
    let mut rng = Rng::derive(seed, 0, 0);
    let folders = folders(&mut rng, (notes / 30).clamp(6, 4000));
    let english_content = ENGLISH.iter().position(|w| *w == "note").unwrap_or(0);
    let chinese_content = CHINESE.iter().position(|w| *w == "笔记").unwrap_or(0);
    let mut taken: HashSet<String> = HashSet::with_capacity(notes);
    let mut plans: Vec<Plan> = (0..notes)
        .map(|index| {
            let mut r = Rng::derive(seed, STREAM_PLAN, index as u64);
            let lang = if r.chance(0.35) { Lang::Chinese } else { Lang::English };
            let mut title = match lang {
                Lang::English => {
                    let n = r.range(2, 5);
                    (0..n)
                        .map(|_| capitalised(ENGLISH[r.range(english_content, ENGLISH.len())]))
                        .collect::<Vec<_>>()
                        .join(" ")
                }
                Lang::Chinese => {
                    let n = r.range(2, 4);
                    (0..n).map(|_| CHINESE[r.range(chinese_content, CHINESE.len())]).collect()
                }
            };
            // Titles are file names: unique in the vault, case-insensitively, as
            // in a vault where every wikilink by name resolves to one note.
            if !taken.insert(title.to_lowercase()) {
                let base = title.clone();
                let mut k = 2;
                loop {
                    title = format!("{base} {k}");
                    if taken.insert(title.to_lowercase()) {
                        break;
                    }
                    k += 1;
                }
            }
            let shape = if r.chance(0.01) { Shape::Moc } else { Shape::Normal };
            let bytes = if r.chance(0.25) {
                r.range(150, 1500)
            } else {
                // Pareto with exponent 2 (x_m / sqrt(u)): mean 2 x_m, long tail.
                ((2400.0 / r.unit().sqrt()) as usize).min(60_000)
            };
            Plan { title, folder: r.below(folders.len()), lang, shape, bytes }
        })
        .collect();
    // A handful of very long notes (logs, clipped books, exported chats).
    let huge = (notes / 5000).max(3).min(notes);
    for _ in 0..huge {
        let index = rng.below(notes);
        plans[index].shape = Shape::Huge;
        plans[index].bytes = rng.range(100_000, 400_000);
    }
    // Popularity is independent of file order: shuffle who gets which rank.
    let mut by_rank: Vec<usize> = (0..notes).collect();
    for i in (1..notes).rev() {
        by_rank.swap(i, rng.below(i + 1));
    }
    Context {
        seed,
        folders,
        plans,
        by_rank,
        links: Zipf::three_quarters(notes.max(1)),
        english: (Zipf::harmonic(english_content), Zipf::three_quarters(ENGLISH.len() - english_content)),
        chinese: (Zipf::harmonic(chinese_content), Zipf::three_quarters(CHINESE.len() - chinese_content)),
        english_content,
        chinese_content,
    }
}

/// Folder paths one to four levels deep under a few top-level folders.
fn folders(rng: &mut Rng, count: usize) -> Vec<String> {
    let mut seen = HashSet::new();
    let mut out = Vec::with_capacity(count);
    while out.len() < count {
        let depth = match rng.below(20) {
            0..=3 => 1,
            4..=10 => 2,
            11..=16 => 3,
            _ => 4,
        };
        let mut path = (*rng.pick(TOP_FOLDERS)).to_owned();
        for _ in 1..depth {
            path.push('/');
            if rng.chance(0.5) {
                path.push_str(CHINESE[rng.range(50, CHINESE.len())]);
            } else {
                path.push_str(&capitalised(ENGLISH[rng.range(54, ENGLISH.len())]));
            }
        }
        if seen.insert(path.to_lowercase()) {
            out.push(path);
        }
        if seen.len() > count * 4 {
            break;
        }
    }
    out.sort();
    out
}

fn capitalised(word: &str) -> String {
    let mut chars = word.chars();
    match chars.next() {
        Some(first) => first.to_uppercase().chain(chars).collect(),
        None => String::new(),
    }
}

/// `YYYY-MM-DD` of a day counted from 1970-01-01 (Hinnant's `civil_from_days`).
fn date(days: i64) -> String {
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + i64::from(month <= 2);
    format!("{year:04}-{month:02}-{day:02}")
}

impl Context {
    /// The full text of one note.
    fn render(&self, index: usize) -> String {
        let plan = &self.plans[index];
        let mut r = Rng::derive(self.seed, STREAM_TEXT, index as u64);
        let mut out = String::with_capacity(plan.bytes + 1024);
        if r.chance(0.95) {
            self.frontmatter(&mut r, plan, &mut out);
        }
        if r.chance(0.6) {
            let _ = writeln!(out, "# {}\n", plan.title);
        }
        out.push_str(match plan.lang {
            Lang::English => "## Overview\n\n",
            Lang::Chinese => "## 概述\n\n",
        });
        self.paragraph(&mut r, plan.lang, index, &mut out);
        if plan.shape == Shape::Moc {
            out.push_str(match plan.lang {
                Lang::English => "## Index\n\n",
                Lang::Chinese => "## 索引\n\n",
            });
            for _ in 0..r.range(20, 120) {
                out.push_str("- ");
                self.link(&mut r, index, &mut out);
                out.push_str(" — ");
                self.words(&mut r, plan.lang, 3, &mut out);
                out.push('\n');
            }
            out.push('\n');
        }
        let code_blocks = if r.chance(0.02) { r.range(1, 4) } else { 0 };
        let mut code_written = 0;
        while out.len() < plan.bytes {
            self.section(&mut r, plan.lang, index, &mut out);
            if code_written < code_blocks {
                code_block(&mut r, &mut out);
                code_written += 1;
            }
        }
        while code_written < code_blocks {
            code_block(&mut r, &mut out);
            code_written += 1;
        }
        out
    }

    fn frontmatter(&self, r: &mut Rng, plan: &Plan, out: &mut String) {
        out.push_str("---\n");
        if r.chance(0.5) {
            let _ = writeln!(out, "title: {}", plan.title);
        }
        if r.chance(0.25) {
            let aliases: Vec<String> = (0..r.range(1, 3))
                .map(|_| {
                    // Bilingual vaults name a note in the other language too.
                    if r.chance(0.5) {
                        let mut s = String::new();
                        self.words(r, Lang::Chinese, 2, &mut s);
                        s.retain(|c| c != ' ');
                        s
                    } else {
                        (0..2)
                            .map(|_| ENGLISH[r.range(self.english_content, ENGLISH.len())])
                            .collect::<Vec<_>>()
                            .join(" ")
                    }
                })
                .collect();
            let _ = writeln!(out, "aliases: [{}]", aliases.join(", "));
        }
        out.push_str("tags:\n");
        let kind = if plan.shape == Shape::Moc { "moc" } else { *r.pick(&TYPE_TAGS[..TYPE_TAGS.len() - 1]) };
        let _ = writeln!(out, "  - type/{kind}");
        for _ in 0..r.range(0, 3) {
            let topic = match plan.lang {
                Lang::English => ENGLISH[r.range(self.english_content, ENGLISH.len())],
                Lang::Chinese => CHINESE[r.range(self.chinese_content, CHINESE.len())],
            };
            let _ = writeln!(out, "  - topic/{topic}");
        }
        if r.chance(0.3) {
            let _ = writeln!(out, "  - status/{}", r.pick(STATUS_TAGS));
        }
        if r.chance(0.15) {
            let area = ENGLISH[r.range(self.english_content, ENGLISH.len())];
            let project = ENGLISH[r.range(self.english_content, ENGLISH.len())];
            let _ = writeln!(out, "  - area/{area}/{project}");
        }
        // 2018-01-01 is day 17532.
        let _ = writeln!(out, "created: {}", date(17_532 + r.below(3000) as i64));
        if r.chance(0.3) {
            out.push_str("description: ");
            self.sentence(r, plan.lang, usize::MAX, out);
            out.push('\n');
        }
        out.push_str("---\n\n");
    }

    fn section(&self, r: &mut Rng, lang: Lang, index: usize, out: &mut String) {
        let level = if r.chance(0.25) { "###" } else { "##" };
        out.push_str(level);
        out.push(' ');
        self.heading_words(r, lang, out);
        out.push_str("\n\n");
        for _ in 0..r.range(1, 4) {
            match r.below(20) {
                0..=13 => self.paragraph(r, lang, index, out),
                14..=16 => {
                    for _ in 0..r.range(2, 7) {
                        out.push_str("- ");
                        self.sentence(r, lang, index, out);
                        out.push('\n');
                    }
                    out.push('\n');
                }
                17 => {
                    for n in 1..r.range(3, 7) {
                        let _ = write!(out, "{n}. ");
                        self.sentence(r, lang, index, out);
                        out.push('\n');
                    }
                    out.push('\n');
                }
                18 => {
                    for _ in 0..r.range(2, 6) {
                        out.push_str(if r.chance(0.4) { "- [x] " } else { "- [ ] " });
                        self.sentence(r, lang, index, out);
                        out.push('\n');
                    }
                    out.push('\n');
                }
                _ => {
                    out.push_str(r.pick::<&str>(&[
                        "> [!note]\n> ",
                        "> [!tip]\n> ",
                        "> [!warning]\n> ",
                        "> ",
                    ]));
                    self.sentence(r, lang, index, out);
                    out.push_str("\n\n");
                }
            }
        }
    }

    fn heading_words(&self, r: &mut Rng, lang: Lang, out: &mut String) {
        match lang {
            Lang::English => {
                let words: Vec<String> = (0..r.range(1, 4))
                    .map(|_| capitalised(ENGLISH[r.range(self.english_content, ENGLISH.len())]))
                    .collect();
                out.push_str(&words.join(" "));
            }
            Lang::Chinese => {
                for _ in 0..r.range(1, 3) {
                    out.push_str(CHINESE[r.range(self.chinese_content, CHINESE.len())]);
                }
            }
        }
    }

    fn paragraph(&self, r: &mut Rng, lang: Lang, index: usize, out: &mut String) {
        for i in 0..r.range(2, 7) {
            if i > 0 && lang == Lang::English {
                out.push(' ');
            }
            self.sentence(r, lang, index, out);
        }
        out.push_str("\n\n");
    }

    /// One sentence. `index` is the note being written (`usize::MAX`: no links,
    /// as in frontmatter).
    fn sentence(&self, r: &mut Rng, lang: Lang, index: usize, out: &mut String) {
        let links = index != usize::MAX;
        match lang {
            Lang::English => {
                let n = r.range(6, 19);
                let phrase_at = if r.chance(0.15) { Some(r.below(n)) } else { None };
                let link_at = if links && r.chance(0.12) { Some(r.below(n)) } else { None };
                for i in 0..n {
                    if i > 0 {
                        out.push(' ');
                    }
                    if phrase_at == Some(i) {
                        out.push_str(r.pick::<&str>(ENGLISH_PHRASES));
                    } else if link_at == Some(i) {
                        self.link(r, index, out);
                    } else {
                        let word = self.english_word(r);
                        if i == 0 {
                            out.push_str(&capitalised(word));
                        } else {
                            out.push_str(word);
                        }
                    }
                }
                out.push(if r.chance(0.05) { '?' } else { '.' });
                if links && r.chance(0.02) {
                    let _ = write!(out, " #{}", ENGLISH[r.range(self.english_content, ENGLISH.len())]);
                }
            }
            Lang::Chinese => {
                let n = r.range(5, 15);
                let link_at = if links && r.chance(0.12) { Some(r.below(n)) } else { None };
                let mut since_comma = 0;
                for i in 0..n {
                    if link_at == Some(i) {
                        self.link(r, index, out);
                    } else if r.chance(0.05) {
                        let _ = write!(out, " {} ", r.pick(LOANWORDS));
                    } else {
                        out.push_str(self.chinese_word(r));
                    }
                    since_comma += 1;
                    if since_comma >= 3 && i + 1 < n && r.chance(0.35) {
                        out.push('，');
                        since_comma = 0;
                    }
                }
                out.push(if r.chance(0.05) { '？' } else { '。' });
                if links && r.chance(0.02) {
                    let _ = write!(out, " #{} ", CHINESE[r.range(self.chinese_content, CHINESE.len())]);
                }
            }
        }
    }

    /// A word of running English text: about half are function words, as in
    /// real prose. Function words follow Zipf's law; content words a flatter
    /// one (exponent 3/4), since a real vault draws them from a vocabulary far
    /// larger than this list.
    fn english_word(&self, r: &mut Rng) -> &'static str {
        if r.chance(0.45) {
            ENGLISH[self.english.0.sample(r)]
        } else {
            ENGLISH[self.english_content + self.english.1.sample(r)]
        }
    }

    /// A word of running Chinese text (fewer function words than English).
    fn chinese_word(&self, r: &mut Rng) -> &'static str {
        if r.chance(0.3) {
            CHINESE[self.chinese.0.sample(r)]
        } else {
            CHINESE[self.chinese_content + self.chinese.1.sample(r)]
        }
    }

    /// `n` words separated by spaces (Chinese: joined), no punctuation.
    fn words(&self, r: &mut Rng, lang: Lang, n: usize, out: &mut String) {
        for i in 0..n {
            match lang {
                Lang::English => {
                    if i > 0 {
                        out.push(' ');
                    }
                    out.push_str(ENGLISH[r.range(self.english_content, ENGLISH.len())]);
                }
                Lang::Chinese => out.push_str(CHINESE[r.range(self.chinese_content, CHINESE.len())]),
            }
        }
    }

    /// A link from note `from` to a popular-by-power-law target.
    fn link(&self, r: &mut Rng, from: usize, out: &mut String) {
        let mut target = self.by_rank[self.links.sample(r)];
        if target == from {
            target = self.by_rank[(self.links.sample(r) + 1) % self.by_rank.len()];
        }
        let plan = &self.plans[target];
        let title = &plan.title;
        match r.below(100) {
            0..=69 => {
                let _ = write!(out, "[[{title}]]");
            }
            70..=84 => {
                let mut display = String::new();
                self.words(r, plan.lang, 2, &mut display);
                let _ = write!(out, "[[{title}|{display}]]");
            }
            85..=92 => {
                let heading = if plan.lang == Lang::English { "Overview" } else { "概述" };
                let _ = write!(out, "[[{title}#{heading}]]");
            }
            93..=94 => {
                // A link to a note nobody wrote yet.
                let mut missing = String::new();
                self.words(r, Lang::English, 3, &mut missing);
                let _ = write!(out, "[[{}]]", capitalised(&missing));
            }
            95..=97 => {
                let _ = write!(out, "![[{title}]]");
            }
            _ => {
                let path = format!("{}/{}.md", self.folders[plan.folder], title).replace(' ', "%20");
                let _ = write!(out, "[{title}]({path})");
            }
        }
    }
}

/// A fenced code block of a few realistic lines.
fn code_block(r: &mut Rng, out: &mut String) {
    let name = ENGLISH[r.range(54, ENGLISH.len())];
    match r.below(4) {
        0 => {
            let _ = write!(
                out,
                "```rust\nfn {name}(items: &[String]) -> usize {{\n    let mut total = 0;\n    for item in items {{\n        if item.contains(\"{name}\") {{\n            total += item.len();\n        }}\n    }}\n    total\n}}\n```\n\n"
            );
        }
        1 => {
            let _ = write!(
                out,
                "```python\ndef {name}(path):\n    with open(path, encoding=\"utf-8\") as f:\n        return [line.strip() for line in f if \"{name}\" in line]\n```\n\n"
            );
        }
        2 => {
            let _ = write!(
                out,
                "```bash\n# back up the {name} folder\nrsync -av --delete ~/vault/{name}/ /mnt/backup/{name}/\ngit -C ~/vault commit -am \"{name}: sync\"\n```\n\n"
            );
        }
        _ => {
            let _ = write!(
                out,
                "```yaml\n{name}:\n  enabled: true\n  interval: {}m\n  paths: [notes, archive]\n```\n\n",
                r.range(1, 60)
            );
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dates_are_civil() {
        assert_eq!(date(0), "1970-01-01");
        assert_eq!(date(17_532), "2018-01-01");
        assert_eq!(date(17_532 + 365 + 365 + 59), "2020-02-29");
    }

    #[test]
    fn same_seed_same_note() {
        assert_eq!(note_text(200, 7, 13), note_text(200, 7, 13));
        assert_ne!(note_text(200, 7, 13), note_text(200, 8, 13));
    }

    #[test]
    fn generated_vault_has_the_promised_shape() {
        let context = plan(2000, 42);
        let texts: Vec<String> = (0..2000).map(|i| context.render(i)).collect();
        let total: usize = texts.iter().map(String::len).sum();
        let mean = total / texts.len();
        assert!((2500..6500).contains(&mean), "mean note size {mean}");
        assert!(texts.iter().filter(|t| t.len() >= 100_000).count() >= 3);
        assert!(texts.iter().any(|t| t.contains("```")));
        assert!(texts.iter().any(|t| t.contains("type/") && t.contains("aliases: [")));
        assert!(texts.iter().any(|t| t.contains("备份")));
        assert!(texts.iter().any(|t| t.contains("version control")));
        let depths: HashSet<usize> = context.folders.iter().map(|f| f.split('/').count()).collect();
        assert_eq!(depths, HashSet::from([1, 2, 3, 4]));
        // Power law: the most linked-to note collects far more than the median one.
        let by_title: std::collections::HashMap<&str, usize> =
            context.plans.iter().enumerate().map(|(i, p)| (p.title.as_str(), i)).collect();
        let mut inbound = vec![0usize; 2000];
        for text in &texts {
            for piece in text.split("[[").skip(1) {
                let target = piece.split("]]").next().unwrap_or("");
                let target = target.split(['|', '#']).next().unwrap_or("");
                if let Some(&i) = by_title.get(target) {
                    inbound[i] += 1;
                }
            }
        }
        inbound.sort_unstable();
        assert!(inbound[1999] > 20 * inbound[1000].max(1), "{} vs {}", inbound[1999], inbound[1000]);
    }
}
