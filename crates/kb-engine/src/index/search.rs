//! Searches: the request and its hits, the scope's fields and weights, the
//! query run on one or several threads, rarity boosts, and the explanation.

use std::cell::Cell;
use std::collections::BTreeSet;
use std::sync::Arc;
use std::thread::LocalKey;

use tantivy::collector::{Collector, Count, SegmentCollector, TopDocs};
use tantivy::query::{Bm25Weight, Query};
use tantivy::schema::Field;
use tantivy::{DocAddress, DocId, Executor, Score, Searcher, SegmentReader, TantivyDocument, Term};

use super::SearchIndex;
use super::errors::tantivy_error;
use super::fusion;
use super::language_column::LanguageColumns;
use super::query;
use super::standing;
use super::tokenizer;
use crate::error::{Error, Result};
use crate::sandbox::NotePath;
use crate::vault::NoteRecord;

/// The most threads one search uses (one per core up to this).
pub(super) const SEARCH_THREADS: usize = 4;

/// Postings (notes whose body holds a query's terms, summed over its terms)
/// from which a content search visits the segments on several threads. Below
/// it the hand-off costs more than it saves (a no-hit search takes 0.15 ms
/// alone, 0.3 ms spread); above it a one-word search at 10k notes already
/// gains a sixth, three common words at 100k notes a third.
const PARALLEL_POSTINGS: u64 = 2_000;

/// See [`SearchScope::min_share`]; chosen with `kb-index eval` (BENCHMARKS.md, "Search quality").
const KNOWLEDGE_MIN_SHARE: f32 = 0.0;

const CONTENT_MIN_SHARE: f32 = 0.6;

/// Most title-side matches `search_knowledge` scores alone before it walks the
/// text of every note instead (each costs a few skip-list seeks per text term).
const TITLE_CANDIDATES_MAX: usize = 4_000;

/// Fewest words (after question and stop words are dropped) that make a
/// `search_knowledge` query put as a sentence (some were dropped: `how do I`,
/// `怎么`, `的`) a question rather than a name: see [`QUESTION_TEXT_FACTOR`]. A
/// name or keywords (`同步不等于备份`, four words to jieba) rank as ever.
const QUESTION_WORDS_MIN: usize = 4;

/// How much more the note text counts in `search_knowledge` for a query of
/// [`QUESTION_WORDS_MIN`] words or more. A title holds one or two of such a
/// query's words at most, often a common one ("edit" of "how do I edit several
/// lines at the same time" in *Editing shortcuts*), while the note that answers
/// it says most of them in its text; at the text's usual weight the title
/// match wins. Chosen with `kb-index eval` on every suite (BENCHMARKS.md,
/// "Questions in other words"): 3 lifts the questions without moving a case of
/// the keyword suites; from three words it loses `how do I publish my notes as
/// a website` (whose answers say publish in their titles).
const QUESTION_TEXT_FACTOR: f32 = 3.0;

/// The best hits, best first, and how many notes matched.
type Page = (Vec<(f32, DocAddress)>, usize);

/// What a note in a rival language (another language written in the query's
/// script) keeps of its score: enough to lose a tie or a near tie to a note in
/// the query's language, not a strong match to a weak one.
const RIVAL_LANGUAGE_SHARE: f32 = 0.7;

/// Fewest notes a language must hold, and share of the vault, to count as one
/// the vault is written in: a few quoted passages do not make a vault bilingual.
const LANGUAGE_MIN_NOTES: u64 = 5;
const LANGUAGE_MIN_SHARE: f64 = 0.02;

/// The languages whose notes rank lower for one query (see `language`), one bit per code.
type Rivals = u64;

thread_local! {
    /// Set by [`full_query_only`]: this thread's searches skip the title-side shortcut.
    static FULL_QUERY_ONLY: Cell<bool> = const { Cell::new(false) };
    /// Set by [`without_feedback`]: this thread's questions get no feedback.
    static WITHOUT_FEEDBACK: Cell<bool> = const { Cell::new(false) };
    /// Set by [`without_fusion`]: this thread's questions are ranked by their tool alone.
    static WITHOUT_FUSION: Cell<bool> = const { Cell::new(false) };
}

/// Runs `f` with this thread's `flag` set, and puts it back as it was after
/// (a panic included).
fn with_flag<T>(flag: &'static LocalKey<Cell<bool>>, f: impl FnOnce() -> T) -> T {
    struct Restore(&'static LocalKey<Cell<bool>>, bool);
    impl Drop for Restore {
        fn drop(&mut self) {
            self.0.with(|set| set.set(self.1));
        }
    }
    let _restore = Restore(flag, flag.with(|set| set.replace(true)));
    f()
}

/// Runs `f` with a question's feedback off on this thread, so tests can show
/// what the feedback changes.
#[doc(hidden)]
pub fn without_feedback<T>(f: impl FnOnce() -> T) -> T {
    with_flag(&WITHOUT_FEEDBACK, f)
}

/// Runs `f` with a question's two rankings unfused on this thread (see
/// `fusion`), so tests can show what the fusion changes.
#[doc(hidden)]
pub fn without_fusion<T>(f: impl FnOnce() -> T) -> T {
    with_flag(&WITHOUT_FUSION, f)
}

/// Runs `f` with `search_knowledge`'s title-side shortcut off on this thread, so
/// tests can hold the shortcut's answers to the full query's.
#[doc(hidden)]
pub fn full_query_only<T>(f: impl FnOnce() -> T) -> T {
    with_flag(&FULL_QUERY_ONLY, f)
}

/// Which tool's fields and weights a search uses.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SearchScope {
    /// Titles (and file names), aliases, descriptions and tags, with headings
    /// and text weighted low (`search_knowledge`).
    Knowledge,
    /// Headings and bodies (`search_note_content`).
    Content,
}

impl SearchScope {
    /// The share of query terms a note must match to rank first; when fewer notes
    /// than asked for match that many, notes holding any one term follow them.
    /// Titles and tags are short, so one matching word already says much; bodies are
    /// long, so a note should hold most of the query's words.
    fn min_share(self) -> f32 {
        match self {
            SearchScope::Knowledge => KNOWLEDGE_MIN_SHARE,
            SearchScope::Content => CONTENT_MIN_SHARE,
        }
    }

    fn weights_key(self) -> &'static str {
        match self {
            SearchScope::Knowledge => "search_knowledge",
            SearchScope::Content => "search_note_content",
        }
    }
}

/// A search request.
#[derive(Debug, Clone)]
pub struct SearchRequest<'a> {
    /// The query text (words, `"phrases"`, `-exclusions`).
    pub query: &'a str,
    /// Which tool's fields.
    pub scope: SearchScope,
    /// Tags the note must carry (a parent tag matches its children).
    pub tags: &'a [String],
    /// A folder the note must lie under, checked by the sandbox.
    pub folder: Option<&'a NotePath>,
    /// How many hits to return.
    pub limit: usize,
    /// Whether to explain each hit's score.
    pub explain: bool,
    /// Reads a hit's note text, for the feedback a question gets from its
    /// first pass (see `query::feedback_terms`); `None`: no feedback.
    pub texts: Option<NoteTexts<'a>>,
}

/// Reads a note's text (the index holds none): the caller's way to the files.
#[derive(Clone, Copy)]
pub struct NoteTexts<'a>(pub &'a (dyn Fn(&NoteRecord) -> Option<String> + Sync));

impl std::fmt::Debug for NoteTexts<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("NoteTexts")
    }
}

/// One search hit.
#[derive(Debug, Clone)]
pub struct SearchHit {
    /// The note's record as far as a hit needs it: its links, block ids, body
    /// line and diagnostics are not read (they are empty).
    pub record: NoteRecord,
    /// Its BM25-based score, levelled to its place on the page (`standing`).
    pub score: f32,
    /// The fields in which query terms occur, for `search_knowledge` (its
    /// title-side fields from the record, its headings from the index); empty
    /// for `search_note_content`, whose hits show snippets instead.
    pub matched: Vec<String>,
    /// tantivy's score explanation, when asked for.
    pub explanation: Option<serde_json::Value>,
    /// Whether it matched on lone CJK characters only while the query has longer
    /// words (`记` of `随手记`): ranked after every real match.
    pub weak: bool,
}

/// A page of search hits.
#[derive(Debug, Clone)]
pub struct SearchOutcome {
    /// All matching notes, not only those returned.
    pub total: usize,
    /// The best hits, best first; their scores never rise down the page.
    pub hits: Vec<SearchHit>,
    /// The analysed terms, for snippets.
    pub terms: BTreeSet<String>,
    /// Whether the search needed any one term only, because requiring more found nothing.
    pub relaxed: bool,
    /// Whether only typo-tolerant matching found anything (snippets may then be empty).
    pub fuzzy: bool,
    /// How many of the hits (the first) hold the share of the query's words
    /// the tool asks for; those after hold fewer, or lone characters only.
    strict: usize,
}

impl SearchIndex {
    /// Runs a search. A question put as a sentence (see `QUESTION_WORDS_MIN`)
    /// asked through a tool (with `texts`) is also ranked by the other tool, and
    /// its page ordered by both rankings (`fusion`).
    pub fn search(&self, request: &SearchRequest<'_>) -> Result<SearchOutcome> {
        let plan = query::parse(request.query);
        if plan.is_empty() {
            return Err(Error::invalid("the query has no words to search for")
                .with_hint("give one or more words, a \"quoted phrase\", or -words to exclude"));
        }
        let mut outcome = self.search_scope(request, &plan)?;
        let question = plan.sentence && plan.words.len() >= QUESTION_WORDS_MIN;
        if question && request.texts.is_some() && outcome.strict > 1 && !WITHOUT_FUSION.with(Cell::get) {
            let scope = match request.scope {
                SearchScope::Knowledge => SearchScope::Content,
                SearchScope::Content => SearchScope::Knowledge,
            };
            let other = SearchRequest {
                scope,
                limit: fusion::OTHER_DEPTH,
                explain: false,
                texts: None,
                ..request.clone()
            };
            let other = self.search_scope(&other, &plan)?;
            let ranked: Vec<&str> = other.hits.iter().map(|hit| hit.record.path.as_str()).collect();
            fusion::fuse(&mut outcome.hits, outcome.strict, &ranked, |hit| hit.record.path.as_str());
        }
        standing::level(&mut outcome.hits, outcome.strict);
        Ok(outcome)
    }

    /// A search in its own tool's fields alone.
    fn search_scope(&self, request: &SearchRequest<'_>, plan: &query::QueryPlan) -> Result<SearchOutcome> {
        let searcher = self.reader.searcher();
        let lookups = Arc::new(query::SearchTerms::new(&searcher, &self.field_stats));
        let limit = request.limit.max(1);
        let rivals = self.rival_languages(&lookups, request.query);
        let tier = |plan: &query::QueryPlan, strength: query::Strength| {
            self.search_plan(&lookups, request, plan, strength, limit, rivals.as_ref())
        };
        if !plan.has_weak_units() {
            return tier(plan, query::Strength::Any);
        }
        // Real matches first (a note holding a word or bigram of the query), then,
        // when they do not fill the page, the notes holding lone characters only.
        let strong = plan.strong_units();
        let mut outcome = tier(plan, query::Strength::Real(strong.clone()))?;
        if outcome.hits.len() < limit {
            let weak = tier(&plan.lone_characters(), query::Strength::WeakOnly(strong))?;
            let seen: BTreeSet<String> = outcome.hits.iter().map(|hit| hit.record.path.clone()).collect();
            let more = weak.hits.into_iter().filter(|hit| !seen.contains(&hit.record.path));
            outcome
                .hits
                .extend(more.map(|hit| SearchHit { weak: true, ..hit }).take(limit - outcome.hits.len()));
            outcome.total += weak.total;
        }
        Ok(outcome)
    }

    /// One tier of a search: the notes `strength` admits, ranked.
    fn search_plan(
        &self,
        lookups: &Arc<query::SearchTerms>,
        request: &SearchRequest<'_>,
        plan: &query::QueryPlan,
        strength: query::Strength,
        limit: usize,
        rivals: Option<&Rivals>,
    ) -> Result<SearchOutcome> {
        let searcher = lookups.searcher();
        let fields = &self.schema.fields;
        let weights = &self.schema.weights[request.scope.weights_key()];
        let question_weights: Vec<(Field, f32)>;
        let question = plan.sentence && plan.words.len() >= QUESTION_WORDS_MIN;
        let weights: &[(Field, f32)] = if request.scope == SearchScope::Knowledge && question {
            question_weights = weights
                .iter()
                .map(|&(field, weight)| {
                    (field, if field == fields.body { weight * QUESTION_TEXT_FACTOR } else { weight })
                })
                .collect();
            &question_weights
        } else {
            weights
        };
        let filters = query::Filters {
            tags: request.tags.iter().map(|t| t.trim().trim_start_matches('#').to_lowercase()).collect(),
            folder: request.folder.map(|folder| folder.as_str().to_owned()),
            strength,
        };
        let mut relaxed = false;
        let min_share = request.scope.min_share();
        let boosts = match request.scope {
            // Title fields weigh a word by its rarity among titles, where any word is
            // rare; the whole vault's text says how much a word tells.
            SearchScope::Knowledge => self.rarity_boosts(lookups, plan),
            // Body BM25 already weighs words by their rarity in the text.
            SearchScope::Content => std::collections::BTreeMap::new(),
        };
        let mut terms = plan.positive_terms();
        let executor = match request.scope {
            SearchScope::Content => self.executor_for(lookups, &terms),
            // Spreading a search over threads pays when its postings are long; a
            // `search_knowledge` search is slower spread (a third at 10k notes with
            // three words, measured on two busy cores), as it was before it read the text.
            SearchScope::Knowledge => &Executor::SingleThread,
        };
        let parts = query::QueryParts {
            plan,
            fields,
            weights,
            filters: &filters,
            min_share,
            boosts: &boosts,
            terms: lookups,
        };
        // A question's feedback reads the first pass's best notes, however few
        // the page holds, and ranks them again.
        let texts = request.texts.filter(|_| question && !WITHOUT_FEEDBACK.with(Cell::get));
        let first_limit = if texts.is_some() { limit.max(query::FEEDBACK_NOTES) } else { limit };
        let shortcut = match request.scope {
            SearchScope::Knowledge => self.titles_first(&parts, first_limit, rivals)?,
            SearchScope::Content => None,
        };
        let (mut top, mut total) = match shortcut {
            Some(found) => found,
            None => {
                let built = query::build(&parts, false);
                self.run(lookups, built.as_ref(), first_limit, executor, rivals)?
            }
        };
        if let Some(texts) = texts
            && let Some(expanded) = self.with_feedback(searcher, &parts, &top, texts)
        {
            // The first pass counted the notes matching; the second scores some of them.
            (top, _) = self.run(lookups, expanded.as_ref(), limit, executor, rivals)?;
        }
        top.truncate(limit);
        // Notes holding fewer of the words, ranked after those holding enough.
        let mut fill = Vec::new();
        if total < limit && !plan.words.is_empty() && min_share > 0.0 && plan.units().len() > 1 {
            let any = query::build(&parts, true);
            let (more, any_total) = self.run(lookups, any.as_ref(), limit, executor, rivals)?;
            if total == 0 {
                relaxed = true;
                (top, total) = (more, any_total);
            } else {
                let strict: BTreeSet<DocAddress> = top.iter().map(|(_, address)| *address).collect();
                fill = more.into_iter().filter(|(_, address)| !strict.contains(address)).collect();
                fill.truncate(limit - top.len());
                total = any_total;
            }
        } else if total == 0 && !plan.words.is_empty() {
            relaxed = true;
            // Needing any one term is the query just run when it needed one already.
            if query::required_clauses(plan.units().len(), min_share, false) > 1 {
                let any = query::build(&parts, true);
                (top, total) = self.run(lookups, any.as_ref(), limit, executor, rivals)?;
            }
        }
        let mut fuzzy = false;
        if total == 0
            && let Some(typo_tolerant) = query::build_fuzzy(&parts)
        {
            fuzzy = true;
            (top, total) = self.run(lookups, typo_tolerant.as_ref(), limit, executor, rivals)?;
            // What the mistyped words matched, so hits show where and snippets highlight it.
            let searched: Vec<Field> =
                weights.iter().map(|&(field, _)| field).filter(|&field| field != fields.name_key).collect();
            terms.extend(super::fuzzy::expansions(
                searcher,
                &searched,
                plan.units().iter().map(String::as_str),
            ));
        }
        let strict_hits = top.len();
        let page: Vec<(f32, DocAddress)> = top.into_iter().chain(fill).collect();
        // Only `search_knowledge` shows where a hit matched; its hits show no
        // headings, so which hold a term there is read from the index rather
        // than by decoding and analysing every heading.
        let knowledge = request.scope == SearchScope::Knowledge;
        let in_headings = if knowledge {
            self.holding(lookups, fields.headings, &terms, &page)
                .map_err(|e| tantivy_error("reading which hits' headings match", e))?
        } else {
            BTreeSet::new()
        };
        let mut hits = Vec::with_capacity(page.len());
        let mut finder = tokenizer::TermFinder::new(&terms);
        for (score, address) in page {
            let read = if knowledge {
                self.lean_hit_record(searcher, address)
            } else {
                searcher.doc(address).map(|doc: TantivyDocument| self.hit_record_of(&doc, true))
            };
            let read = read.map_err(|e| tantivy_error("reading a hit's stored record", e))?;
            let Some(record) = read else { continue };
            let matched = if knowledge {
                matched_fields(&record, &mut finder, in_headings.contains(&address))
            } else {
                Vec::new()
            };
            let explanation =
                request.explain.then(|| self.explain(searcher, address, plan, weights, relaxed));
            hits.push(SearchHit { record, score, matched, explanation, weak: false });
        }
        // Equal scores come out in path order, so results are identical run to run.
        let order = |a: &SearchHit, b: &SearchHit| {
            b.score.total_cmp(&a.score).then_with(|| a.record.path.cmp(&b.record.path))
        };
        let strict_hits = strict_hits.min(hits.len());
        hits[..strict_hits].sort_by(order);
        hits[strict_hits..].sort_by(order);
        Ok(SearchOutcome { total, hits, terms, relaxed, fuzzy, strict: strict_hits })
    }

    /// `search_knowledge`'s page from its title-side matches alone, when that is
    /// provably the page the full query gives; `None` when the full query must run.
    ///
    /// The title-side fields (title and file name, aliases, description, tags,
    /// exact name) find candidates cheaply; the full query then scores only those,
    /// text evidence included, each exactly as it would score among all notes.
    /// A note matching only in its headings or text can score at most
    /// [`query::Outside::unreached`]: when the page is full and its last note
    /// scores above that, no such note belongs on it. The title side is scored
    /// first, and a candidate whose title-side score plus the most its text can
    /// add ([`query::Outside::with_reached`]) cannot reach the page is left out
    /// before the full query scores any. Otherwise (few title matches, or
    /// text evidence that could win) the full query runs, so a note found only by
    /// its text still comes back. `total` then counts the title-side matches: the
    /// notes matching only in their text were not counted (nor needed).
    fn titles_first(
        &self,
        parts: &query::QueryParts<'_>,
        limit: usize,
        rivals: Option<&Rivals>,
    ) -> Result<Option<Page>> {
        let lookups = parts.terms;
        let searcher = lookups.searcher();
        let (plan, weights) = (parts.plan, parts.weights);
        if FULL_QUERY_ONLY.with(Cell::get) || (plan.units().is_empty() && plan.phrases.is_empty()) {
            return Ok(None);
        }
        let fields = &self.schema.fields;
        let title_side: Vec<Field> = weights
            .iter()
            .map(|&(field, _)| field)
            .filter(|field| *field != fields.headings && *field != fields.body)
            .collect();
        let titles = query::build_reaching(parts, false, &query::Reach::Fields(title_side.clone()));
        let found = searcher
            .search_with_executor(
                titles.as_ref(),
                &self.every_match(rivals),
                &Executor::SingleThread,
                lookups.scoring(),
            )
            .map_err(|e| tantivy_error("searching titles", e))?;
        if found.len() < limit || found.len() > TITLE_CANDIDATES_MAX {
            return Ok(None);
        }
        let max_score = |field: Field, texts: &[&str]| -> f32 {
            let terms: Vec<Term> = texts.iter().map(|text| Term::from_field_text(field, text)).collect();
            // A statistic that cannot be read leaves no bound: the full query runs.
            let absent = terms
                .iter()
                .map(|term| lookups.doc_freq(term))
                .try_fold(false, |absent, df| df.map(|df| absent || df == 0));
            match (absent, &terms[..]) {
                // No note holds the term (a stem that is no word, say): it scores nothing.
                (Ok(true), _) => 0.0,
                (Ok(false), [term]) => lookups.max_score(term).unwrap_or(f32::INFINITY),
                (Ok(false), _) => Bm25Weight::for_terms(&**lookups, &terms)
                    .map_or(f32::INFINITY, |weight| weight.max_score()),
                (Err(_), _) => f32::INFINITY,
            }
        };
        let outside = query::bound_outside(parts, &title_side, &max_score);
        let bound = outside.unreached();
        // A candidate's full score is at least its title-side score (the text only
        // adds), so the page's last note scores at least the limit-th best of
        // these; and it must score above `bound`. A candidate whose title-side
        // score plus the most its text can add reaches neither is never scored.
        let mut title_scores: Vec<f32> = found.iter().map(|&(score, _)| score).collect();
        let (_, &mut floor, _) = title_scores.select_nth_unstable_by(limit - 1, |a, b| b.total_cmp(a));
        let kept: Vec<(DocAddress, f32)> = found
            .iter()
            .map(|&(score, address)| (address, outside.with_reached(score)))
            .filter(|&(_, most)| most >= floor && most > bound)
            .collect();
        if kept.len() < limit {
            return Ok(None);
        }
        let matched = found.len();
        // As the page fills, a candidate whose most falls below its last score
        // is passed over (see `query::Bar`).
        let bar = Arc::new(query::Bar::default());
        let candidates = Arc::new(query::Candidates::bounded(searcher, kept, Some(Arc::clone(&bar))));
        let scored = query::build_reaching(parts, false, &query::Reach::Candidates(Arc::clone(&candidates)));
        // Rivals only lose score, so the bound on the other notes still holds.
        let collector = BarredTop { limit, bar, share: rivals.map(|rivals| self.rival_share(rivals)) };
        // One candidate at a time where the query's shape allows (the same
        // scores, without each leaf walking the candidates by itself).
        let top = match query::collect_candidates(
            scored.as_ref(),
            &candidates,
            searcher,
            lookups.scoring(),
            &collector,
        ) {
            Some(top) => top,
            None => searcher.search_with_executor(
                scored.as_ref(),
                &collector,
                &Executor::SingleThread,
                lookups.scoring(),
            ),
        }
        .map_err(|e| tantivy_error("scoring candidates", e))?;
        Ok(match top.last() {
            Some(&(last, _)) if top.len() == limit && last > bound => Some((top, matched)),
            _ => None,
        })
    }

    /// The notes among `page` holding one of `terms` in `field`, read from the
    /// field's postings: a few seeks per term, however long the notes.
    fn holding(
        &self,
        lookups: &query::SearchTerms,
        field: Field,
        terms: &BTreeSet<String>,
        page: &[(f32, DocAddress)],
    ) -> tantivy::Result<BTreeSet<DocAddress>> {
        let mut found = BTreeSet::new();
        let segments: BTreeSet<u32> = page.iter().map(|(_, address)| address.segment_ord).collect();
        for segment in segments {
            let mut docs: Vec<DocId> = page
                .iter()
                .filter(|(_, address)| address.segment_ord == segment)
                .map(|(_, address)| address.doc_id)
                .collect();
            docs.sort_unstable();
            for term in terms {
                let term = Term::from_field_text(field, term);
                for doc in lookups.holders(&term, segment as usize, &docs)? {
                    found.insert(DocAddress::new(segment, doc));
                }
            }
        }
        Ok(found)
    }

    /// A question's query with the feedback words of its first pass's best
    /// notes (`top`; see `query::feedback_terms`), or `None` when the first
    /// pass is sure of its best note (it outscores the second by
    /// `query::FEEDBACK_GAP`) or the notes give no word.
    fn with_feedback(
        &self,
        searcher: &Searcher,
        parts: &query::QueryParts<'_>,
        top: &[(f32, DocAddress)],
        texts: NoteTexts<'_>,
    ) -> Option<Box<dyn Query>> {
        match top {
            [] => return None,
            [(best, _), (second, _), ..] if *best >= query::FEEDBACK_GAP * second => return None,
            _ => {}
        }
        let notes: Vec<(f32, String)> = top
            .iter()
            .take(query::FEEDBACK_NOTES)
            .filter_map(|&(score, address)| {
                Some((score, (texts.0)(&self.lean_hit_record(searcher, address).ok()??)?))
            })
            .collect();
        let fields = &self.schema.fields;
        let doc_freq = |word: &str| searcher.doc_freq(&Term::from_field_text(fields.body, word)).unwrap_or(0);
        let words = query::feedback_terms(parts.plan, &notes, &doc_freq, searcher.num_docs());
        if words.is_empty() {
            return None;
        }
        let searched: Vec<(Field, f32)> =
            parts.weights.iter().copied().filter(|&(field, _)| field != fields.name_key).collect();
        let candidates = Arc::new(query::Candidates::new(searcher, top.iter().map(|&(_, address)| address)));
        Some(query::with_feedback(parts, candidates, &words, &searched))
    }

    /// Each query term's boost from its informativeness in the note bodies.
    fn rarity_boosts(
        &self,
        lookups: &query::SearchTerms,
        plan: &query::QueryPlan,
    ) -> std::collections::BTreeMap<String, f32> {
        let units = plan.units();
        if units.len() < 2 {
            return std::collections::BTreeMap::new();
        }
        let documents = lookups.searcher().num_docs();
        let body = self.schema.fields.body;
        let informativeness = units
            .into_iter()
            .map(|unit| {
                let frequency = lookups.doc_freq(&Term::from_field_text(body, &unit)).unwrap_or(0);
                let info = query::informativeness(frequency, documents);
                (unit, info)
            })
            .collect();
        query::rarity_boosts(&informativeness)
    }

    /// Which fields and terms scored for one hit, each with its weighted BM25 share.
    /// (tantivy's own explanation of the whole boolean query trips an assertion in
    /// 0.27 with minimum-match clauses, and a flat list is easier to read anyway.)
    fn explain(
        &self,
        searcher: &Searcher,
        address: DocAddress,
        plan: &query::QueryPlan,
        weights: &[(Field, f32)],
        relaxed: bool,
    ) -> serde_json::Value {
        let schema = &self.schema.schema;
        let mut scored = Vec::new();
        for term_text in plan.positive_terms() {
            for &(field, weight) in weights.iter().filter(|(f, _)| *f != self.schema.fields.name_key) {
                let term_query = tantivy::query::TermQuery::new(
                    Term::from_field_text(field, &term_text),
                    tantivy::schema::IndexRecordOption::WithFreqs,
                );
                if let Ok(explanation) = term_query.explain(searcher, address) {
                    let score = explanation.value() * weight;
                    if score > 0.0 {
                        scored.push(serde_json::json!({
                            "field": schema.get_field_name(field),
                            "term": term_text,
                            "score": (score * 1000.0).round() / 1000.0,
                        }));
                    }
                }
            }
        }
        scored.sort_by(|a, b| {
            b["score"].as_f64().unwrap_or(0.0).total_cmp(&a["score"].as_f64().unwrap_or(0.0))
        });
        let exact = tantivy::query::TermQuery::new(
            Term::from_field_text(self.schema.fields.name_key, &plan.name_key),
            tantivy::schema::IndexRecordOption::Basic,
        )
        .explain(searcher, address)
        .is_ok();
        serde_json::json!({
            "terms": scored,
            "exact_name_match": exact,
            "any_term_mode": relaxed,
        })
    }

    fn run(
        &self,
        lookups: &query::SearchTerms,
        query: &dyn Query,
        limit: usize,
        executor: &Executor,
        rivals: Option<&Rivals>,
    ) -> Result<Page> {
        let (searcher, scoring) = (lookups.searcher(), lookups.scoring());
        let Some(rivals) = rivals else {
            let collector = (TopDocs::with_limit(limit).order_by_score(), Count);
            return searcher
                .search_with_executor(query, &collector, executor, scoring)
                .map_err(|e| tantivy_error("searching", e));
        };
        let share = self.rival_share(rivals);
        let tweaked =
            TopDocs::with_limit(limit).tweak_score(move |segment: &SegmentReader| share.of(segment));
        searcher
            .search_with_executor(query, &(tweaked, Count), executor, scoring)
            .map_err(|e| tantivy_error("searching", e))
    }

    /// What a note in a rival language keeps of its score.
    fn rival_share(&self, rivals: &Rivals) -> RivalShare {
        RivalShare { rivals: *rivals, columns: Arc::clone(&self.languages) }
    }

    /// Every note a query matches, with its score (a rival language's share of it).
    fn every_match(&self, rivals: Option<&Rivals>) -> EveryMatch {
        EveryMatch { share: rivals.map(|rivals| self.rival_share(rivals)) }
    }

    /// The languages that rank lower for `query` (see `language`): when the vault
    /// holds the query's language and another of its script each in strength (a
    /// translated vault), every other language. The query's language is told by
    /// its words, else it is the vault's commonest of its script. `None` (rank as
    /// ever) in a vault of one language per script.
    fn rival_languages(&self, lookups: &query::SearchTerms, query: &str) -> Option<Rivals> {
        use super::language;
        let script = language::script_of_query(query)?;
        let field = self.schema.fields.language;
        let notes = lookups.searcher().num_docs();
        // Counted once per segment from the language column, else looked up.
        let kept = self.languages.counts(lookups.searcher());
        let count = |code: language::LanguageCode| match &kept {
            Some(counts) => counts.get(code as usize).copied().unwrap_or(0),
            None => lookups.doc_freq(&Term::from_field_u64(field, code)).unwrap_or(0),
        };
        let counts: Vec<(language::LanguageCode, u64)> =
            language::languages_of(script).map(|code| (code, count(code))).collect();
        let strong =
            |count: u64| count >= LANGUAGE_MIN_NOTES && count as f64 >= notes as f64 * LANGUAGE_MIN_SHARE;
        if counts.iter().filter(|(_, count)| strong(*count)).count() < 2 {
            return None;
        }
        let asked = language::of_query(query)
            .filter(|code| language::language(*code).is_some_and(|(_, s)| s == script))
            .or_else(|| {
                counts
                    .iter()
                    .max_by_key(|(code, count)| (*count, std::cmp::Reverse(*code)))
                    .map(|(code, _)| *code)
            })?;
        let held = counts.iter().find(|(code, _)| *code == asked).is_some_and(|(_, count)| strong(*count));
        // Notes in another script are rivals too: in a translated vault a Thai note
        // holds `AES-256` as the English one does. (A vault of one language per
        // script, Chinese notes with English terms, never gets here.)
        held.then(|| language::all().filter(|code| *code != asked).fold(0, |mask, code| mask | 1 << code))
    }

    /// Where a content search runs: on several threads when its terms' postings
    /// in the note bodies (what it mostly walks) reach [`PARALLEL_POSTINGS`] and
    /// the index has several segments; on the calling thread otherwise.
    fn executor_for(&self, lookups: &query::SearchTerms, terms: &BTreeSet<String>) -> &Executor {
        const HERE: &Executor = &Executor::SingleThread;
        let Some(parallel) = &self.parallel else { return HERE };
        if lookups.searcher().segment_readers().len() < 2 {
            return HERE;
        }
        let body = self.schema.fields.body;
        let mut postings = 0;
        for term in terms {
            postings += lookups.doc_freq(&Term::from_field_text(body, term)).unwrap_or(0);
            if postings >= PARALLEL_POSTINGS {
                return parallel;
            }
        }
        HERE
    }
}

/// A note in a rival language keeps [`RIVAL_LANGUAGE_SHARE`] of its score (its
/// language read from the language column, kept per segment).
#[derive(Debug, Clone)]
struct RivalShare {
    rivals: Rivals,
    columns: Arc<LanguageColumns>,
}

impl RivalShare {
    /// The score a note of `segment` keeps.
    fn of(&self, segment: &SegmentReader) -> impl Fn(DocId, Score) -> Score + use<> {
        let rivals = self.rivals;
        let languages = self.columns.of(segment);
        move |doc: DocId, score: Score| match &languages {
            Some(languages) if (rivals >> languages.of(doc)) & 1 == 1 => score * RIVAL_LANGUAGE_SHARE,
            _ => score,
        }
    }
}

/// What a score of `segment` keeps: a rival language's share of it, or all
/// of it when no language is a rival (see [`RivalShare`]).
fn share_in(share: Option<&RivalShare>, segment: &SegmentReader) -> ShareOf {
    match share {
        Some(share) => Box::new(share.of(segment)),
        None => Box::new(|_, score| score),
    }
}

/// A segment's note and score to the score it keeps.
type ShareOf = Box<dyn Fn(DocId, Score) -> Score>;

/// Collects every note a query matches with its score (after a rival
/// language's share), in document order segment by segment.
struct EveryMatch {
    share: Option<RivalShare>,
}

impl Collector for EveryMatch {
    type Fruit = Vec<(Score, DocAddress)>;
    type Child = EveryMatchInSegment;

    fn for_segment(&self, segment_ord: u32, segment: &SegmentReader) -> tantivy::Result<Self::Child> {
        let share = share_in(self.share.as_ref(), segment);
        Ok(EveryMatchInSegment { segment_ord, share, found: Vec::new() })
    }

    fn requires_scoring(&self) -> bool {
        true
    }

    fn merge_fruits(&self, found: Vec<Self::Fruit>) -> tantivy::Result<Self::Fruit> {
        Ok(found.concat())
    }
}

struct EveryMatchInSegment {
    segment_ord: u32,
    share: ShareOf,
    found: Vec<(Score, DocAddress)>,
}

impl SegmentCollector for EveryMatchInSegment {
    type Fruit = Vec<(Score, DocAddress)>;

    fn collect(&mut self, doc: DocId, score: Score) {
        self.found.push(((self.share)(doc, score), DocAddress::new(self.segment_ord, doc)));
    }

    fn harvest(self) -> Self::Fruit {
        self.found
    }
}

/// The best `limit` notes in tantivy's page order (score, then address), as
/// `TopDocs` keeps them, raising `bar` to the page's last score once it is
/// full (see `query::Bar`).
struct BarredTop {
    limit: usize,
    bar: Arc<query::Bar>,
    share: Option<RivalShare>,
}

/// A note on a page being collected: better is a higher score, then a lower address.
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
struct Standing {
    /// The score's bits (scores are never negative, so the bits order as they do).
    score: u32,
    address: std::cmp::Reverse<DocAddress>,
}

impl Collector for BarredTop {
    type Fruit = Vec<(Score, DocAddress)>;
    type Child = BarredTopInSegment;

    fn for_segment(&self, segment_ord: u32, segment: &SegmentReader) -> tantivy::Result<Self::Child> {
        let share = share_in(self.share.as_ref(), segment);
        Ok(BarredTopInSegment {
            segment_ord,
            limit: self.limit,
            bar: Arc::clone(&self.bar),
            share,
            page: std::collections::BinaryHeap::with_capacity(self.limit + 1),
        })
    }

    fn requires_scoring(&self) -> bool {
        true
    }

    fn merge_fruits(&self, found: Vec<Self::Fruit>) -> tantivy::Result<Self::Fruit> {
        let mut page = found.concat();
        page.sort_by(|a, b| b.0.total_cmp(&a.0).then_with(|| a.1.cmp(&b.1)));
        page.truncate(self.limit);
        Ok(page)
    }
}

struct BarredTopInSegment {
    segment_ord: u32,
    limit: usize,
    bar: Arc<query::Bar>,
    share: ShareOf,
    /// The page so far, its worst note on top.
    page: std::collections::BinaryHeap<std::cmp::Reverse<Standing>>,
}

impl SegmentCollector for BarredTopInSegment {
    type Fruit = Vec<(Score, DocAddress)>;

    fn collect(&mut self, doc: DocId, score: Score) {
        let score = (self.share)(doc, score).max(0.0);
        let standing = Standing {
            score: score.to_bits(),
            address: std::cmp::Reverse(DocAddress::new(self.segment_ord, doc)),
        };
        if self.page.len() < self.limit {
            self.page.push(std::cmp::Reverse(standing));
        } else if self.page.peek().is_some_and(|worst| standing > worst.0) {
            self.page.pop();
            self.page.push(std::cmp::Reverse(standing));
        } else {
            return;
        }
        if self.page.len() == self.limit
            && let Some(worst) = self.page.peek()
        {
            self.bar.raise(Score::from_bits(worst.0.score));
        }
    }

    fn harvest(self) -> Self::Fruit {
        self.page
            .into_iter()
            .map(|std::cmp::Reverse(standing)| (Score::from_bits(standing.score), standing.address.0))
            .collect()
    }
}

/// Which of a record's searchable fields contain any of the terms (its
/// headings do when `in_headings`: see `SearchIndex::holding`).
fn matched_fields(
    record: &NoteRecord,
    finder: &mut tokenizer::TermFinder<'_>,
    in_headings: bool,
) -> Vec<String> {
    let mut hits = |text: &str| finder.any(text);
    let mut matched = Vec::new();
    if hits(&record.title) || hits(record.stem()) {
        matched.push("title".to_owned());
    }
    if record.aliases.iter().any(|a| hits(a)) {
        matched.push("aliases".to_owned());
    }
    if hits(&record.description) {
        matched.push("description".to_owned());
    }
    if record.tags.iter().any(|t| hits(&t.replace('/', " "))) {
        matched.push("tags".to_owned());
    }
    if in_headings {
        matched.push("headings".to_owned());
    }
    matched
}
