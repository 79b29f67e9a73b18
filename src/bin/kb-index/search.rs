//! `kb-index search WORDS…`: search for a person, as directly as ripgrep. The
//! query is every positional word; titles and text are searched together by
//! default (fused as `recall_context` fuses them), `--titles` or `--content`
//! narrows to one. The index is brought up to date first (incremental: about
//! 0.1 s on 6,280 notes); when it cannot be, a warning says the answer may be
//! stale. Matches are coloured on a terminal; piped, snippets are the notes'
//! plain text (`--marks` keeps the tools' `**…**`). Exit 1 when nothing matched.

use std::io::Write;

use kb_mcp::engine::types::{Ranking, RankingPath, SearchArgs as EngineArgs, SnippetOut};
use kb_mcp::engine::{Engine, PERSON_LIMIT};

use crate::Failure;
use crate::output::{Paint, count};

pub(crate) const EXAMPLES: &str = "\
Examples:
  kb-index search 锚定效应                   titles and text together
  kb-index search git sync -n 20            20 results (up to 1000)
  kb-index search '\"cold storage\"' -- -tape  a phrase, without notes that say tape
  kb-index search rust --content --tag lang  only the text of notes tagged #lang
  kb-index search rust -l | xargs …          paths only, one a line";

/// `kb-index search`.
#[derive(Debug, clap::Args)]
pub(crate) struct SearchArgs {
    /// The query: words, "exact phrase", and after `--` also -excluded words.
    #[arg(required = true, num_args = 1.., value_name = "WORDS")]
    words: Vec<String>,
    /// Only titles, aliases, descriptions and tags (search_knowledge).
    #[arg(short, long, conflicts_with = "content")]
    titles: bool,
    /// Only the text of notes (search_note_content).
    #[arg(short, long)]
    content: bool,
    /// How many notes (1 to 1000).
    #[arg(short = 'n', long, default_value_t = 10, value_parser = clap::value_parser!(u32).range(1..=i64::from(PERSON_LIMIT)))]
    limit: u32,
    /// Only notes carrying this tag (repeatable).
    #[arg(long = "tag")]
    tags: Vec<String>,
    /// Only notes under this folder.
    #[arg(long)]
    folder: Option<String>,
    /// Print JSON.
    #[arg(short, long, conflicts_with = "paths")]
    json: bool,
    /// Print only the paths of the notes found, one a line (as `rg -l`).
    #[arg(short = 'l', long = "files-with-matches")]
    paths: bool,
    /// Mark matches in snippets with **…** even when the output is not a terminal
    /// (piped, snippets are plain text; on a terminal matches are coloured, or
    /// marked when colour is off).
    #[arg(long)]
    marks: bool,
}

pub(crate) fn run(
    engine: &Engine,
    args: &SearchArgs,
    paint: &Paint,
    out: &mut dyn Write,
) -> Result<u8, Failure> {
    let request = EngineArgs {
        query: args.words.join(" "),
        tags: (!args.tags.is_empty()).then(|| args.tags.clone()),
        folder: args.folder.clone(),
        limit: Some(args.limit),
        ..EngineArgs::default()
    };
    if let Err(error) = engine.sync(false, None) {
        if engine.record_count() == 0 {
            return Err(error.into());
        }
        eprintln!("kb-index: warning: searching the index as it is, which may be stale: {error}");
    }
    // Embeddings kept by an earlier build are brought up to date (the notes
    // changed since); a vault never embedded is searched by words, and says so.
    if engine.has_kept_embeddings()
        && let Err(error) = engine.embed_pending(&|_, _| {})
    {
        eprintln!("kb-index: warning: searching by words only: {error}");
    }
    let shown = Shown { args, paint };
    let found = if args.titles {
        let results = engine.search_titles_for_person(&request)?;
        let hits = results
            .results
            .iter()
            .map(|found| (found.path.as_str(), found.title.as_str(), &[][..], found.weak));
        let summary = format!(
            "{} of {} by title; {}",
            results.results.len(),
            count(results.total, "matching note"),
            ranked(&results.ranking)
        );
        shown.print(out, &results, hits, &summary)?
    } else if args.content {
        let results = engine.search_text_for_person(&request)?;
        let hits = results
            .results
            .iter()
            .map(|found| (found.path.as_str(), found.title.as_str(), &found.snippets[..], found.weak));
        let summary = format!(
            "{} of {} by text; {}",
            results.results.len(),
            count(results.total, "matching note"),
            ranked(&results.ranking)
        );
        shown.print(out, &results, hits, &summary)?
    } else {
        let results = engine.search_notes(&request)?;
        let hits = results
            .results
            .iter()
            .map(|found| (found.path.as_str(), found.title.as_str(), &found.snippets[..], found.weak));
        let summary = format!(
            "{} shown; {} by title, {} by text; {}",
            count(results.results.len() as u64, "note"),
            results.titles_total,
            results.text_total,
            ranked(&results.ranking)
        );
        shown.print(out, &results, hits, &summary)?
    };
    Ok(if found == 0 { 1 } else { 0 })
}

/// Which ranking ran, for a person: `ranked by words and meaning`, or
/// `ranked by words only (WHY)` with why's first word (`building`, `off`,
/// `no_model`, `failed`); `--json` has the whole reason and the model.
fn ranked(ranking: &Ranking) -> String {
    match ranking.path {
        RankingPath::Hybrid => "ranked by words and meaning".to_owned(),
        RankingPath::Lexical => {
            let code = ranking.why.split(':').next().unwrap_or_default();
            format!("ranked by words only ({code})")
        }
    }
}

/// How the notes found are printed, whichever way they were searched: JSON,
/// paths only (as `rg -l`), or ranked lines with their snippets and a summary.
struct Shown<'a> {
    args: &'a SearchArgs,
    paint: &'a Paint,
}

impl Shown<'_> {
    /// Prints `results` (their JSON) or `hits` (path, title, snippets, weak); returns how many notes were found.
    fn print<'h>(
        &self,
        out: &mut dyn Write,
        results: &impl serde::Serialize,
        hits: impl Iterator<Item = (&'h str, &'h str, &'h [SnippetOut], bool)>,
        summary: &str,
    ) -> Result<usize, Failure> {
        let (mut found, mut weak_hits) = (0, 0);
        if self.args.json {
            writeln!(out, "{}", serde_json::to_string_pretty(results).unwrap_or_default())?;
        }
        for (rank, (path, title, snippets, weak)) in hits.enumerate() {
            found += 1;
            weak_hits += usize::from(weak);
            if self.args.json {
                continue;
            }
            if self.args.paths {
                writeln!(out, "{path}")?;
                continue;
            }
            // A weak hit says so: it holds only single characters of a short word.
            let weak = if weak { self.paint.dim("  (weak: single characters only)") } else { String::new() };
            writeln!(out, "{:>2}. {}  {}{weak}", rank + 1, self.paint.path(path), title)?;
            for snippet in snippets {
                writeln!(
                    out,
                    "      {}: {}",
                    self.paint.line(&snippet.line.to_string()),
                    self.paint.snippet(&snippet.text, &snippet.marks, self.args.marks)
                )?;
            }
        }
        if !self.args.json && !self.args.paths {
            match weak_hits {
                0 => writeln!(out, "{summary}")?,
                weak => writeln!(out, "{summary}; {weak} weak (single characters only)")?,
            }
        }
        Ok(found)
    }
}
