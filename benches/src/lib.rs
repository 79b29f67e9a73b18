//! kb-bench: what kb-mcp's benchmarks share.
//!
//! The vault generator ([`generate`]), the cache of generated vaults and their
//! indexes under `$KB_BENCH_DIR` (default `/tmp/kb-bench`), the real
//! `obsidian-help` corpus beside the checkout, the vault sizes a run covers
//! (`KB_BENCH_SIZES`), and the queries every size is searched with. Nothing
//! here ever writes inside the repository (but its ignored `vaults/`) or the shared corpus: every path it
//! writes is checked against both first ([`check_writable`]).

#![allow(
    clippy::disallowed_methods,
    clippy::disallowed_types,
    reason = "the benchmarks build vaults on disk"
)]

mod generate;
pub mod rng;
pub mod words;

pub use generate::{Stats, generate, note_text};

use std::fs;
use std::io;
use std::path::{Path, PathBuf};

/// The one folder of the checkout benchmarks may write in (ignored by git):
/// `KB_BENCH_DIR=<checkout>/vaults` keeps a worktree's generated vaults beside it.
pub const VAULTS_FOLDER: &str = "vaults";

/// The seed every benchmark uses unless told otherwise.
pub const DEFAULT_SEED: u64 = 42;

/// Bumped whenever the generator's output changes, so cached vaults of an
/// older generator are not mistaken for the new ones.
pub const GENERATOR_VERSION: u32 = 1;

/// The label of the real corpus in `KB_BENCH_SIZES` and in benchmark ids.
pub const CORPUS_LABEL: &str = "obsidian-help";

/// The folder for generated vaults, indexes and scratch copies.
pub fn bench_dir() -> PathBuf {
    std::env::var_os("KB_BENCH_DIR").map(PathBuf::from).unwrap_or_else(|| PathBuf::from("/tmp/kb-bench"))
}

/// The repository checkout this crate lives in.
pub fn repo_root() -> PathBuf {
    let manifest = Path::new(env!("CARGO_MANIFEST_DIR"));
    manifest.parent().unwrap_or(manifest).to_path_buf()
}

/// The real Obsidian Help vault at `../shared/corpora/obsidian-help` beside the
/// checkout, when it is there. Read only: never write into it.
pub fn corpus_dir() -> Option<PathBuf> {
    let dir = repo_root().parent()?.join("shared/corpora/obsidian-help");
    dir.is_dir().then_some(dir)
}

/// Refuses a path inside the repository (but under its git-ignored `vaults/`) or the shared corpora: generated
/// vaults, indexes and copies go under [`bench_dir`] only.
pub fn check_writable(path: &Path) -> io::Result<()> {
    let absolute = absolute(path)?;
    let allowed = absolute_or(repo_root().join(VAULTS_FOLDER));
    let plain = !absolute.components().any(|part| part == std::path::Component::ParentDir);
    if plain && absolute.starts_with(&allowed) && absolute != allowed {
        return Ok(());
    }
    let mut forbidden = vec![absolute_or(repo_root())];
    if let Some(parent) = repo_root().parent() {
        forbidden.push(absolute_or(parent.join("shared")));
    }
    for root in forbidden {
        if absolute.starts_with(&root) {
            return Err(io::Error::new(
                io::ErrorKind::PermissionDenied,
                format!(
                    "refusing to write {} inside {}; use a folder under /tmp",
                    path.display(),
                    root.display()
                ),
            ));
        }
    }
    Ok(())
}

/// The path made absolute, with symlinks in its existing part resolved.
fn absolute(path: &Path) -> io::Result<PathBuf> {
    let path = std::path::absolute(path)?;
    let mut existing = path.as_path();
    let mut rest = Vec::new();
    while !existing.exists() {
        match (existing.parent(), existing.file_name()) {
            (Some(parent), Some(name)) => {
                rest.push(name.to_owned());
                existing = parent;
            }
            _ => return Ok(path),
        }
    }
    let mut resolved = existing.canonicalize()?;
    resolved.extend(rest.iter().rev());
    Ok(resolved)
}

fn absolute_or(path: PathBuf) -> PathBuf {
    absolute(&path).unwrap_or(path)
}

/// A generated vault of `notes` notes from `seed`, made once and kept under
/// [`bench_dir`]: `vault-v<generator>-n<notes>-s<seed>/`, with its [`Stats`]
/// in a `.stats` file beside it, written last (a vault without it is
/// incomplete and made again).
pub fn cached_vault(notes: usize, seed: u64) -> io::Result<(PathBuf, Stats)> {
    let name = format!("vault-v{GENERATOR_VERSION}-n{notes}-s{seed}");
    let dir = bench_dir().join(&name);
    let stats_file = bench_dir().join(format!("{name}.stats"));
    check_writable(&dir)?;
    if let Ok(text) = fs::read_to_string(&stats_file)
        && let Some((files, bytes)) = text.trim().split_once(' ')
        && let (Ok(files), Ok(bytes)) = (files.parse(), bytes.parse())
        && dir.is_dir()
    {
        return Ok((dir, Stats { files, bytes }));
    }
    let partial = bench_dir().join(format!("{name}.partial"));
    for stale in [&partial, &dir] {
        if stale.exists() {
            fs::remove_dir_all(stale)?;
        }
    }
    let stats = generate(&partial, notes, seed)?;
    fs::rename(&partial, &dir)?;
    fs::write(&stats_file, format!("{} {}\n", stats.files, stats.bytes))?;
    Ok((dir, stats))
}

/// Every Markdown file under `dir`, sorted, skipping dot-folders (`.kb`,
/// `.obsidian`, `.git`) as the vault scan does.
pub fn markdown_files(dir: &Path) -> io::Result<Vec<PathBuf>> {
    let mut out = Vec::new();
    let mut pending = vec![dir.to_path_buf()];
    while let Some(folder) = pending.pop() {
        for entry in fs::read_dir(&folder)? {
            let entry = entry?;
            let name = entry.file_name();
            if name.to_string_lossy().starts_with('.') {
                continue;
            }
            let kind = entry.file_type()?;
            if kind.is_dir() {
                pending.push(entry.path());
            } else if kind.is_file() && entry.path().extension().is_some_and(|e| e == "md") {
                out.push(entry.path());
            }
        }
    }
    out.sort();
    Ok(out)
}

/// How many Markdown files are under `dir` and their total size.
pub fn markdown_stats(dir: &Path) -> io::Result<Stats> {
    let mut stats = Stats::default();
    for file in markdown_files(dir)? {
        stats.files += 1;
        stats.bytes += fs::metadata(&file)?.len();
    }
    Ok(stats)
}

/// Total size of the files under `dir`.
pub fn dir_size(dir: &Path) -> io::Result<u64> {
    let mut total = 0;
    let mut pending = vec![dir.to_path_buf()];
    while let Some(folder) = pending.pop() {
        for entry in fs::read_dir(&folder)? {
            let entry = entry?;
            let kind = entry.file_type()?;
            if kind.is_dir() {
                pending.push(entry.path());
            } else if kind.is_file() {
                total += entry.metadata()?.len();
            }
        }
    }
    Ok(total)
}

/// Copies the Markdown files of `src` into a new `dst` (removed first if it
/// exists). With `hard_link`, files are hard links (fast; the caller must
/// replace files, never write into them, see [`replace_file`]); never use it
/// on files we do not own, such as the shared corpus: a link count is
/// metadata too.
pub fn copy_vault(src: &Path, dst: &Path, hard_link: bool) -> io::Result<()> {
    check_writable(dst)?;
    if dst.exists() {
        fs::remove_dir_all(dst)?;
    }
    for file in markdown_files(src)? {
        let relative = file.strip_prefix(src).map_err(io::Error::other)?;
        let target = dst.join(relative);
        if let Some(parent) = target.parent() {
            fs::create_dir_all(parent)?;
        }
        if !(hard_link && fs::hard_link(&file, &target).is_ok()) {
            fs::copy(&file, &target)?;
        }
    }
    Ok(())
}

/// Copies every file of a folder tree (an index folder) into a new `dst`.
pub fn copy_tree(src: &Path, dst: &Path) -> io::Result<()> {
    check_writable(dst)?;
    if dst.exists() {
        fs::remove_dir_all(dst)?;
    }
    fs::create_dir_all(dst)?;
    for entry in fs::read_dir(src)? {
        let entry = entry?;
        let target = dst.join(entry.file_name());
        if entry.file_type()?.is_dir() {
            copy_tree(&entry.path(), &target)?;
        } else {
            fs::copy(entry.path(), &target)?;
        }
    }
    Ok(())
}

/// A scratch copy of a benchmark vault and of its cached index, in
/// `<name>-<label>` and `<name>-<label>-index` under [`bench_dir`]: the cached
/// index is built first (or brought up to date), then copied; a generated
/// vault's notes are hard links (replace them, never write into them), the
/// corpus's are copies.
pub fn scratch_copy(spec: &VaultSpec, vault: &Path, name: &str) -> io::Result<(PathBuf, PathBuf)> {
    let index = spec.index_dir();
    check_writable(&index)?;
    let started = std::time::Instant::now();
    let options = kb_mcp::engine::EngineOptions { vault: vault.to_owned(), index_dir: Some(index.clone()) };
    let engine = kb_mcp::engine::Engine::open(&options).map_err(|e| io::Error::other(e.to_string()))?;
    engine.sync(false, None).map_err(|e| io::Error::other(e.to_string()))?;
    drop(engine);
    eprintln!("kb-bench: index of {} ready in {:.1} s", spec.label(), started.elapsed().as_secs_f64());
    let copy = bench_dir().join(format!("{name}-{}", spec.label()));
    let copy_index = bench_dir().join(format!("{name}-{}-index", spec.label()));
    copy_vault(vault, &copy, matches!(spec, VaultSpec::Generated(_)))?;
    copy_tree(&index, &copy_index)?;
    Ok((copy, copy_index))
}

/// Replaces a file's content by writing a temporary file beside it and
/// renaming it over the old one, as editors do (and so a hard-linked original
/// stays untouched).
pub fn replace_file(path: &Path, bytes: &[u8]) -> io::Result<()> {
    check_writable(path)?;
    let mut temporary = path.as_os_str().to_owned();
    temporary.push(".kb-bench-tmp");
    fs::write(&temporary, bytes)?;
    fs::rename(&temporary, path)
}

/// One vault a benchmark run covers.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum VaultSpec {
    /// A generated vault of this many notes.
    Generated(usize),
    /// The real obsidian-help corpus.
    Corpus,
}

impl VaultSpec {
    /// The label in benchmark ids: the number of notes, or `obsidian-help`.
    pub fn label(&self) -> String {
        match self {
            VaultSpec::Generated(notes) => notes.to_string(),
            VaultSpec::Corpus => CORPUS_LABEL.to_owned(),
        }
    }
}

/// The vaults named by `KB_BENCH_SIZES` (comma-separated note counts such as
/// `1000` or `10k`, and `obsidian-help`); by default 1k, 10k, 100k and the
/// corpus. The corpus is left out, with a message, when it is not there.
pub fn sizes_from_env() -> Vec<VaultSpec> {
    sizes_from_env_or(&format!("1000,10000,100000,{CORPUS_LABEL}"))
}

/// [`sizes_from_env`] with a bench's own sizes when `KB_BENCH_SIZES` is not set.
pub fn sizes_from_env_or(default: &str) -> Vec<VaultSpec> {
    let raw = std::env::var("KB_BENCH_SIZES").unwrap_or_else(|_| default.to_owned());
    parse_sizes(&raw)
        .into_iter()
        .filter(|spec| {
            if *spec == VaultSpec::Corpus && corpus_dir().is_none() {
                eprintln!("kb-bench: no {CORPUS_LABEL} corpus beside the checkout; skipping it");
                return false;
            }
            true
        })
        .collect()
}

/// Parses a `KB_BENCH_SIZES` value; unknown items are reported and skipped.
pub fn parse_sizes(raw: &str) -> Vec<VaultSpec> {
    raw.split(',')
        .map(str::trim)
        .filter(|s| !s.is_empty())
        .filter_map(|item| {
            if item == CORPUS_LABEL {
                return Some(VaultSpec::Corpus);
            }
            let (digits, factor) = match item.strip_suffix(['k', 'K']) {
                Some(digits) => (digits, 1000),
                None => (item, 1),
            };
            match digits.parse::<usize>() {
                Ok(n) if n > 0 => Some(VaultSpec::Generated(n * factor)),
                _ => {
                    eprintln!(
                        "kb-bench: KB_BENCH_SIZES item {item:?} is neither a note count nor {CORPUS_LABEL}"
                    );
                    None
                }
            }
        })
        .collect()
}

/// The queries of the search benchmarks, one per kind.
#[derive(Debug, Clone, Copy)]
pub struct Queries {
    /// One common word.
    pub one_word: &'static str,
    /// Three words, not a phrase.
    pub multi_word: &'static str,
    /// A quoted phrase.
    pub phrase: &'static str,
    /// Chinese, unspaced.
    pub chinese: &'static str,
    /// A word no note has.
    pub no_hit: &'static str,
    /// A question of four words or more, put as a sentence (issue 13's
    /// feedback runs for these only).
    pub question: &'static str,
}

impl Queries {
    /// `(kind, query)` pairs in a fixed order; kinds name the benchmarks.
    pub fn all(&self) -> [(&'static str, &'static str); 6] {
        [
            ("one_word", self.one_word),
            ("multi_word", self.multi_word),
            ("phrase", self.phrase),
            ("chinese", self.chinese),
            ("no_hit", self.no_hit),
            ("question", self.question),
        ]
    }
}

/// Queries for generated vaults (words from [`words`]).
pub const GENERATED_QUERIES: Queries = Queries {
    one_word: "backup",
    multi_word: "sync conflict resolution",
    phrase: "\"version control\"",
    chinese: "备份仓库",
    no_hit: "xylophonist",
    question: "how do I resolve a sync conflict in my backup",
};

/// Queries for the obsidian-help corpus.
pub const CORPUS_QUERIES: Queries = Queries {
    one_word: "canvas",
    multi_word: "sync vault settings",
    phrase: "\"command palette\"",
    chinese: "核心插件",
    no_hit: "xylophonist",
    question: "how do I save my window layout and go back to it later",
};

impl VaultSpec {
    /// The queries this vault is searched with.
    pub fn queries(&self) -> Queries {
        match self {
            VaultSpec::Generated(_) => GENERATED_QUERIES,
            VaultSpec::Corpus => CORPUS_QUERIES,
        }
    }

    /// The vault folder and its size, generating it on first use.
    pub fn vault(&self) -> io::Result<(PathBuf, Stats)> {
        match self {
            VaultSpec::Generated(notes) => cached_vault(*notes, DEFAULT_SEED),
            VaultSpec::Corpus => {
                let dir = corpus_dir().ok_or_else(|| {
                    io::Error::new(
                        io::ErrorKind::NotFound,
                        format!("no {CORPUS_LABEL} corpus beside the checkout"),
                    )
                })?;
                let stats = markdown_stats(&dir)?;
                Ok((dir, stats))
            }
        }
    }

    /// The cached index folder of this vault (under [`bench_dir`]).
    pub fn index_dir(&self) -> PathBuf {
        match self {
            VaultSpec::Generated(notes) => {
                bench_dir().join(format!("index-v{GENERATOR_VERSION}-n{notes}-s{DEFAULT_SEED}"))
            }
            VaultSpec::Corpus => bench_dir().join(format!("index-{CORPUS_LABEL}")),
        }
    }
}

/// The notes a folder move of the moves benchmarks should move: about this many.
pub const FOLDER_NOTES: usize = 1_000;

/// The subjects of the moves benchmarks: the most linked-to note with its
/// backlink count, and a folder of about [`FOLDER_NOTES`] notes with its note
/// count (see [`folder_to_move`]; it may move notes to make one).
pub fn move_subjects(engine: &kb_mcp::engine::Engine) -> ((String, usize), (String, usize)) {
    let records = engine.records();
    let backlinks = |i: usize| engine.backlinks(&records[i].path).map_or(0, |b| b.len());
    let hub = (0..records.len())
        .filter(|&i| records[i].kind == kb_mcp::vault::NoteKind::Note)
        .max_by_key(|&i| (backlinks(i), std::cmp::Reverse(records[i].path.clone())))
        .expect("a vault with notes");
    let hub = (records[hub].path.clone(), backlinks(hub));
    drop(records);
    (hub, folder_to_move(engine))
}

/// Notes under each folder (at any depth).
fn folder_counts(engine: &kb_mcp::engine::Engine) -> std::collections::BTreeMap<String, usize> {
    let mut folders = std::collections::BTreeMap::new();
    for record in engine.records().iter().filter(|r| r.kind == kb_mcp::vault::NoteKind::Note) {
        for (at, _) in record.path.match_indices('/') {
            *folders.entry(record.path[..at].to_owned()).or_default() += 1;
        }
    }
    folders
}

/// A folder of about [`FOLDER_NOTES`] notes: the folder nearest that count
/// when one holds within a quarter of it (the generated 10,000-note vault's
/// top folders do). Otherwise one is made (the 100,000-note vault's folders
/// hold about 10,000 notes or at most about 150): the largest subfolders of the
/// largest folder are moved, with their links, into `<folder>/kb-bench-folder/`
/// until it holds at least three quarters of the count; this is done through
/// the engine's own moves, so the vault stays consistent, and is not timed.
/// When even that cannot come near (small vaults), the nearest folder is taken
/// as it is. Says on stderr what it picked.
pub fn folder_to_move(engine: &kb_mcp::engine::Engine) -> (String, usize) {
    use kb_mcp::engine::types::{Actor, ApplyArgs, ProposeMoveArgs};
    let folders = folder_counts(engine);
    let (nearest, count) = folders
        .iter()
        .min_by_key(|(_, n)| n.abs_diff(FOLDER_NOTES))
        .map(|(folder, n)| (folder.clone(), *n))
        .expect("a vault with folders");
    if count.abs_diff(FOLDER_NOTES) <= FOLDER_NOTES / 4 {
        return (nearest, count);
    }
    let (parent, _) = folders.iter().max_by_key(|(_, n)| **n).expect("a vault with folders");
    let mut children: Vec<(&String, usize)> = folders
        .iter()
        .filter(|(folder, _)| {
            folder
                .strip_prefix(parent.as_str())
                .and_then(|rest| rest.strip_prefix('/'))
                .is_some_and(|rest| !rest.contains('/'))
        })
        .map(|(folder, n)| (folder, *n))
        .collect();
    children.sort_by_key(|(folder, n)| (std::cmp::Reverse(*n), (*folder).clone()));
    let mut taken = Vec::new();
    let mut total = 0;
    for (folder, n) in children {
        if total >= FOLDER_NOTES * 3 / 4 {
            break;
        }
        if total + n <= FOLDER_NOTES * 5 / 4 {
            taken.push(folder.clone());
            total += n;
        }
    }
    if total < FOLDER_NOTES * 3 / 4 {
        eprintln!(
            "kb-bench: no folder holds about {FOLDER_NOTES} notes and none can be made; moving the nearest, {nearest} ({count} notes)"
        );
        return (nearest, count);
    }
    let made = format!("{parent}/kb-bench-folder");
    for folder in &taken {
        let name = folder.rsplit('/').next().unwrap_or(folder);
        let args = ProposeMoveArgs {
            from: folder.clone(),
            to: format!("{made}/{name}"),
            reason: "benchmark: gather a folder of about 1,000 notes".to_owned(),
            keep_alias: Some(false),
        };
        let staged = engine.propose_move(&args).expect("stage a move into the benchmark folder");
        engine
            .apply_proposal(&ApplyArgs { proposal_id: staged.proposal_id }, Actor::Cli)
            .expect("move a folder into the benchmark folder");
    }
    let count = folder_counts(engine).get(&made).copied().unwrap_or(0);
    eprintln!(
        "kb-bench: no folder holds about {FOLDER_NOTES} notes: made {made} ({count} notes) from {} subfolders of {parent}",
        taken.len()
    );
    (made, count)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_parse() {
        assert_eq!(
            parse_sizes("1000, 10k,obsidian-help,,x"),
            vec![VaultSpec::Generated(1000), VaultSpec::Generated(10_000), VaultSpec::Corpus]
        );
    }

    #[test]
    fn the_repository_is_not_writable() {
        assert!(check_writable(&repo_root().join("benches/vault-1000")).is_err());
        assert!(check_writable(Path::new("/tmp/kb-bench/vault-1000")).is_ok());
        assert!(check_writable(&repo_root().join("vaults/vault-1000")).is_ok());
        assert!(check_writable(&repo_root().join("vaults")).is_err());
        assert!(check_writable(&repo_root().join("vaults/../src")).is_err());
    }
}
