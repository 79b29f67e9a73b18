//! The engine over the fixture vault: both searches in English and Chinese,
//! reading, the link graph, tags, standards, recent notes, the overview and
//! incremental indexing. Expected facts come from `fixtures/VAULT.md`.

#![allow(
    clippy::disallowed_methods,
    clippy::disallowed_types,
    reason = "the tests build and inspect vaults on disk"
)]

use crate::common;

use kb_mcp::engine::types::*;
use kb_mcp::engine::{Engine, EngineOptions};
use kb_mcp::error::ErrorCode;

fn open(vault: &std::path::Path) -> Engine {
    let engine = Engine::open(&EngineOptions { vault: vault.to_owned(), index_dir: None }).unwrap();
    engine.sync(false, None).unwrap();
    engine
}

/// Writes each `(file name, text)` into `vault`.
fn write_notes(vault: &std::path::Path, notes: &[(&str, &str)]) {
    for (name, text) in notes {
        std::fs::write(vault.join(name), text).unwrap();
    }
}

fn search(query: &str) -> SearchArgs {
    SearchArgs { query: query.to_owned(), ..SearchArgs::default() }
}

fn knowledge_paths(engine: &Engine, query: &str) -> Vec<String> {
    engine.search_knowledge(&search(query)).unwrap().results.into_iter().map(|h| h.path).collect()
}

fn content_paths(engine: &Engine, query: &str) -> Vec<String> {
    engine.search_note_content(&search(query)).unwrap().results.into_iter().map(|h| h.path).collect()
}

/// `knowledge_paths` making only `passes` of the search's optional passes.
fn knowledge_paths_with(engine: &Engine, query: &str, passes: SearchPasses) -> Vec<String> {
    let args = SearchArgs { passes, ..search(query) };
    engine.search_knowledge(&args).unwrap().results.into_iter().map(|h| h.path).collect()
}

/// `content_paths` making only `passes` of the search's optional passes.
fn content_paths_with(engine: &Engine, query: &str, passes: SearchPasses) -> Vec<String> {
    let args = SearchArgs { passes, ..search(query) };
    engine.search_note_content(&args).unwrap().results.into_iter().map(|h| h.path).collect()
}

const WITHOUT_FEEDBACK: SearchPasses =
    SearchPasses { feedback: false, title_shortcut: true, fusion: true, semantic: true };
const WITHOUT_FUSION: SearchPasses =
    SearchPasses { fusion: false, title_shortcut: true, feedback: true, semantic: true };
const FULL_QUERY_ONLY: SearchPasses =
    SearchPasses { title_shortcut: false, feedback: true, fusion: true, semantic: true };

#[test]
fn knowledge_search_finds_titles_aliases_and_descriptions_in_both_languages() {
    let (_tmp, vault) = common::temp_vault();
    let engine = open(&vault);
    // (query, expected first hit)
    let cases = [
        ("备份仓库", "z/备份仓库.md"),
        ("backup repo", "z/备份仓库.md"),
        ("Zettelkasten", "z/卡片笔记法.md"),
        ("zettelkasten", "z/卡片笔记法.md"),
        ("lighthouse", "z/tech/Tech index.md"),
        ("rhythmic", "z/reading/《深度工作》.md"),
        ("仓库", "z/备份仓库.md"),
        ("inverted index", "z/tech/search engines/倒排索引.md"),
        ("Rust ownership", "z/tech/rust/Rust 所有权.md"),
    ];
    for (query, expected) in cases {
        let paths = knowledge_paths(&engine, query);
        assert_eq!(paths.first().map(String::as_str), Some(expected), "query {query:?} gave {paths:?}");
    }
}

#[test]
fn content_search_finds_chinese_words_inside_unspaced_sentences_with_snippets() {
    let (_tmp, vault) = common::temp_vault();
    let engine = open(&vault);
    let results = engine.search_note_content(&search("远程仓库")).unwrap();
    assert_eq!(results.results[0].path, "z/备份仓库.md");
    let snippet = &results.results[0].snippets[0];
    assert!(snippet.text.contains("**远程仓库**"), "{snippet:?}");
    assert!(snippet.line > 1);
    // The snippet's line number points at the line that holds the text.
    let text = std::fs::read_to_string(vault.join("z/备份仓库.md")).unwrap();
    let line = text.lines().nth(snippet.line as usize - 1).unwrap();
    assert!(line.contains("远程仓库"), "line {} is {line:?}", snippet.line);
    assert!(results.total >= results.results.len() as u64);
    // A word only found inside a long run of Chinese characters.
    assert!(content_paths(&engine, "备份过电脑").contains(&"z/备份仓库.md".to_owned()));
    // English body-only word.
    assert_eq!(content_paths(&engine, "fetch")[0], "z/tech/git/git remote basics.md");
}

#[test]
fn a_question_with_a_missing_word_still_answers_and_stop_words_do_not_drown_it() {
    let (_tmp, vault) = common::temp_vault();
    let engine = open(&vault);
    let paths = content_paths(&engine, "如何同步远程仓库");
    assert_eq!(paths[0], "z/备份仓库.md", "{paths:?}");
    let paths = content_paths(&engine, "how do I fetch from a git remote xylophone");
    assert_eq!(paths[0], "z/tech/git/git remote basics.md", "{paths:?}");
}

#[test]
fn phrases_exclusions_and_filters() {
    let (_tmp, vault) = common::temp_vault();
    let engine = open(&vault);
    let all = content_paths(&engine, "git");
    let excluded = content_paths(&engine, "git -同步");
    assert!(!excluded.is_empty() && excluded.len() < all.len(), "{all:?} vs {excluded:?}");
    for path in &excluded {
        let text = std::fs::read_to_string(vault.join(path)).unwrap();
        assert!(!text.contains("同步"), "{path} contains the excluded word");
    }
    let tagged = engine
        .search_note_content(&SearchArgs { tags: Some(vec!["type".into()]), ..search("笔记") })
        .unwrap();
    assert!(!tagged.results.is_empty());
    for hit in &tagged.results {
        let record = engine.record(&hit.path).unwrap();
        assert!(record.tags.iter().any(|t| t.starts_with("type/")), "{} lacks a type/ tag", hit.path);
    }
    let folder =
        engine.search_note_content(&SearchArgs { folder: Some("z/tech".into()), ..search("git") }).unwrap();
    assert!(folder.results.iter().all(|h| h.path.starts_with("z/tech/")));
    let phrase = content_paths(&engine, "\"graph view\"");
    assert!(!phrase.is_empty());
    for folder in ["../x", ".git", "z/private", ".OBSIDIAN", "/etc"] {
        let denied = engine.search_note_content(&SearchArgs { folder: Some(folder.into()), ..search("git") });
        assert_eq!(denied.unwrap_err().code, ErrorCode::PathDenied, "{folder}");
    }
    assert_eq!(engine.search_knowledge(&search("   ")).unwrap_err().code, ErrorCode::InvalidArgument);
}

#[test]
fn denied_and_outside_files_never_appear_in_search() {
    let (_tmp, vault) = common::temp_vault();
    let engine = open(&vault);
    // `kumquat` lives only in z/private (denied by kb.toml).
    assert!(content_paths(&engine, "kumquat").is_empty());
    assert!(knowledge_paths(&engine, "secret plan").iter().all(|p| !p.starts_with("z/private")));
}

#[test]
fn read_note_by_path_ref_section_and_pages() {
    let (_tmp, vault) = common::temp_vault();
    let engine = open(&vault);
    let bytes = std::fs::read(vault.join("z/备份仓库.md")).unwrap();
    let note =
        engine.read_note(&ReadNoteArgs { path: Some("z/备份仓库.md".into()), ..Default::default() }).unwrap();
    assert_eq!(note.content.as_bytes(), &bytes[..]);
    assert_eq!(note.hash, kb_mcp::vault::content_hash(&bytes));
    assert_eq!(note.title, "备份仓库");
    assert!(note.frontmatter.contains_key("aliases"));
    assert!(note.outline.iter().any(|h| h.text == "同步不等于备份"));
    assert!(!note.truncated);

    let by_ref = engine
        .read_note(&ReadNoteArgs {
            reference: Some("备份仓库#同步不等于备份".into()), ..Default::default()
        })
        .unwrap();
    assert!(by_ref.content.starts_with("## 同步不等于备份"), "{}", by_ref.content);
    assert!(by_ref.content.len() < note.content.len());

    // Paging never splits a character and reassembles to the whole file.
    let mut offset = 0;
    let mut whole = String::new();
    loop {
        let page = engine
            .read_note(&ReadNoteArgs {
                path: Some("z/备份仓库.md".into()),
                offset: Some(offset),
                max_bytes: Some(100),
                ..Default::default()
            })
            .unwrap();
        assert!(page.content.len() <= 100);
        whole.push_str(&page.content);
        match page.next_offset {
            Some(next) => offset = next,
            None => break,
        }
    }
    assert_eq!(whole.as_bytes(), &bytes[..]);

    let cases: [(ReadNoteArgs, ErrorCode); 7] = [
        (ReadNoteArgs { path: Some("z/nope.md".into()), ..Default::default() }, ErrorCode::NotFound),
        (ReadNoteArgs { path: Some("../secret.md".into()), ..Default::default() }, ErrorCode::PathDenied),
        (
            ReadNoteArgs { path: Some("z/private/secret-plan.md".into()), ..Default::default() },
            ErrorCode::PathDenied,
        ),
        (
            ReadNoteArgs { path: Some(".obsidian/app.json".into()), ..Default::default() },
            ErrorCode::PathDenied,
        ),
        (ReadNoteArgs { reference: Some("同步".into()), ..Default::default() }, ErrorCode::AmbiguousRef),
        (ReadNoteArgs { ..Default::default() }, ErrorCode::InvalidArgument),
        (
            ReadNoteArgs {
                path: Some("z/备份仓库.md".into()),
                section: Some("不存在".into()),
                ..Default::default()
            },
            ErrorCode::NotFound,
        ),
    ];
    for (args, code) in cases {
        assert_eq!(engine.read_note(&args).unwrap_err().code, code, "{args:?}");
    }
    // Standards and read_also files are readable.
    assert!(
        engine
            .read_note(&ReadNoteArgs { path: Some("docs/写作规范.md".into()), ..Default::default() })
            .is_ok()
    );
    assert!(
        engine
            .read_note(&ReadNoteArgs { path: Some("refs/git-cheatsheet.md".into()), ..Default::default() })
            .is_ok()
    );
}

#[test]
fn the_link_graph_matches_the_inventory() {
    let (_tmp, vault) = common::temp_vault();
    let engine = open(&vault);
    let related = engine
        .get_related_notes(&NoteRefArgs {
            path: Some("z/projects/kb/kb-mcp 路线图.md".into()),
            ..Default::default()
        })
        .unwrap();
    let by_line = |line: u32, target: &str| {
        related.outlinks.iter().find(|l| l.line == line && l.target == target).cloned()
    };
    assert_eq!(by_line(14, "daily/2026-01-20").unwrap().resolved.as_deref(), Some("z/daily/2026-01-20.md"));
    assert_eq!(by_line(24, "不存在的笔记").unwrap().resolved, None);
    assert_eq!(by_line(31, "设计").unwrap().resolved.as_deref(), Some("z/设计.md"), "shortest path wins");
    assert_eq!(by_line(30, "projects/kb/设计").unwrap().resolved.as_deref(), Some("z/projects/kb/设计.md"));
    let markdown = related.outlinks.iter().find(|l| l.kind == LinkKind::Markdown).unwrap();
    assert_eq!(markdown.resolved.as_deref(), Some("z/projects/kb/设计.md"));
    assert_eq!(
        related.broken.iter().map(|b| b.target.as_str()).collect::<Vec<_>>(),
        ["不存在的笔记", "Vector Search Plan"]
    );

    let design = engine
        .get_related_notes(&NoteRefArgs {
            path: Some("z/projects/kb/设计.md".into()), ..Default::default()
        })
        .unwrap();
    let missing_heading = design.broken.iter().find(|b| b.target == "备份仓库#不存在的标题").unwrap();
    assert_eq!((missing_heading.line, missing_heading.reason), (46, BrokenReason::MissingHeading));
    let percent = design.outlinks.iter().find(|l| l.line == 27).unwrap();
    assert_eq!(percent.resolved.as_deref(), Some("z/tech/search engines/中文分词/中文分词入门.md"));

    // Backlinks carry line and context; MOCs that link here are listed.
    let backup = engine
        .get_related_notes(&NoteRefArgs { reference: Some("备份仓库".into()), ..Default::default() })
        .unwrap();
    // Written out from the fixture files: the link's line, trimmed. Not listed: the
    // private note's link, the one inside an unclosed fence (async 笔记), the one in
    // inline code (链接与反向链接) and the broken heading link of 设计 line 46.
    let backlinks: Vec<(&str, u32, &str)> =
        backup.backlinks.iter().map(|b| (b.path.as_str(), b.line, b.context.as_str())).collect();
    assert_eq!(
        backlinks,
        [
            ("z/3-2-1 备份原则.md", 24, "| 备份二 | [[备份仓库]]的远程端 | 云端 |"),
            ("z/3-2-1 备份原则.md", 31, "2. 把同步盘当备份，原因见 [[备份仓库#同步不等于备份]]。"),
            (
                "z/Restore drills.md",
                17,
                "2. Clone the [[备份仓库|backup repository]] and install whatever it needs (LFS included)."
            ),
            ("z/Zettelkasten in practice.md", 45, "[[backup repo]]."),
            (
                "z/daily/2024-03-15.md",
                10,
                "- 第一次做备份恢复演练。在旧笔记本上克隆了 [[备份仓库]]，笔记都在，但所有图片都只有一百多字节。"
            ),
            (
                "z/tech/git/Git LFS 与大文件.md",
                10,
                "笔记本身很小，一千多条笔记加起来不到十兆。真正让 [[备份仓库]] 膨胀的是截图和 PDF。"
            ),
            ("z/tech/git/git remote basics.md", 42, "[[备份仓库]] always has an off-site copy."),
            (
                "z/tech/git/git 同步脚本.md",
                11,
                "这个脚本由系统的定时任务每天 22:00 运行一次。它既是同步（把手机上的改动合进来），也是 [[备份仓库]] 的入口。"
            ),
            ("z/同步工具对比.md", 38, "同步选最省心的那个，备份单独用 git 做。原因详见 [[备份仓库]]。"),
            (
                "z/日本語メモ.md",
                18,
                "同期サービスはバックアップではない。誤って削除したファイルは、数秒ですべての端末から消えてしまう。だから毎日、別の場所にあるリポジトリへ自動でコミットしている。詳しくは [[备份仓库]] を参照。"
            ),
            ("z/知识管理 MOC.md", 28, "- [[备份仓库]]：笔记再好，丢了就什么都没有。"),
        ]
    );
    // Every backlink's context is its link's line in the linking file, trimmed and
    // cut to 160 characters (the catalog keeps only the line number); the cut
    // itself is written out in tests/it/vault_parse.rs (`link_contexts`).
    let mut checked = 0;
    for record in engine.records() {
        let related =
            engine.get_related_notes(&NoteRefArgs { path: Some(record.path.clone()), ..Default::default() });
        for backlink in related.map(|r| r.backlinks).unwrap_or_default() {
            let text = std::fs::read_to_string(vault.join(&backlink.path)).unwrap();
            let source = kb_mcp::sandbox::NotePath::parse(&backlink.path).unwrap();
            let parsed = kb_mcp::vault::parse_note(&source, &text);
            assert!(parsed.links.iter().any(|l| l.line == backlink.line));
            let line = text.split('\n').nth(backlink.line as usize - 1).unwrap().trim();
            let shown = backlink.context.strip_suffix('…').unwrap_or(&backlink.context);
            assert!(
                line.starts_with(shown),
                "{} line {}: {:?}",
                backlink.path,
                backlink.line,
                backlink.context
            );
            assert!(
                backlink.context == line || backlink.context.chars().count() == 160,
                "cut only when long"
            );
            assert!(backlink.context.chars().count() <= 160);
            checked += 1;
        }
    }
    assert!(checked > 50, "only {checked} backlinks checked");
    let zettel = engine
        .get_related_notes(&NoteRefArgs { path: Some("z/卡片笔记法.md".into()), ..Default::default() })
        .unwrap();
    assert!(zettel.mocs.iter().any(|m| m.path == "z/知识管理 MOC.md"), "{:?}", zettel.mocs);
    let remote = engine
        .get_related_notes(&NoteRefArgs {
            path: Some("z/tech/git/git remote basics.md".into()),
            ..Default::default()
        })
        .unwrap();
    assert!(remote.mocs.iter().any(|m| m.path == "z/tech/Tech index.md"), "MOC by tag: {:?}", remote.mocs);
    // Links in code blocks and inline code are not links.
    let all_targets: Vec<String> =
        engine.records().iter().flat_map(|r| r.links.iter().map(|l| l.target.to_owned())).collect();
    assert!(!all_targets.iter().any(|t| t == "inside code" || t == "nope"), "{all_targets:?}");

    let overview = engine.overview(Caller::Agent(Access::Read)).unwrap();
    assert_eq!(overview.counts.notes, 40);
    assert_eq!(overview.counts.standards, 3);
    assert_eq!(overview.counts.orphans, 1);
    assert_eq!(overview.counts.broken_links, 4, "the inventory's four broken links");
}

#[test]
fn tags_standards_and_recent_notes() {
    let (_tmp, vault) = common::temp_vault();
    let engine = open(&vault);
    let tags = engine.list_tags(&ListTagsArgs::default()).unwrap();
    assert_eq!(tags.registry.as_deref(), Some("docs/tags.md"));
    assert_eq!(tags.tags[0].tag, "知识管理");
    assert_eq!(tags.tags[0].count, 10);
    let nested = tags.tags.iter().find(|t| t.tag == "type/synthesis").unwrap();
    assert!(nested.registered);
    assert!(tags.tags.windows(2).all(|w| w[0].count >= w[1].count));
    let typed = engine.list_tags(&ListTagsArgs { prefix: Some("type/".into()), limit: Some(2) }).unwrap();
    assert_eq!(typed.tags.len(), 2);
    assert!(typed.tags.iter().all(|t| t.tag.starts_with("type/")));
    // Decoy tags in code, URLs and headings are not tags.
    assert!(!tags.tags.iter().any(|t| t.tag == "123" || t.tag == "section" || t.tag == "unclosed-fence-tag"));

    let standards = engine.list_standards().unwrap();
    let paths: Vec<&str> = standards.standards.iter().map(|s| s.path.as_str()).collect();
    assert_eq!(paths, ["docs/frontmatter.md", "docs/tags.md", "docs/写作规范.md"]);

    // Files were just copied, so every note is recent by modification time.
    let recent = engine.list_recent_notes(&RecentArgs { days: Some(1), limit: Some(5), sort: None }).unwrap();
    assert_eq!(recent.notes.len(), 5);
    let created = engine
        .list_recent_notes(&RecentArgs {
            days: Some(36500),
            limit: Some(200),
            sort: Some(RecentSort::Created),
        })
        .unwrap();
    // Notes without a frontmatter date fall back to the file's birth time (just now), so they come first;
    // among dated notes the newest date leads.
    let first_dated =
        created.notes.iter().find(|n| engine.record(&n.path).unwrap().created.is_some()).unwrap();
    assert_eq!(first_dated.path, "z/daily/2026-01-20.md", "newest frontmatter date first");
    assert!(created.notes.iter().any(|n| n.path == "z/写作流程草稿.md"));
    assert!(created.notes.iter().all(|n| n.created.contains('T')));
}

#[test]
fn incremental_sync_reindexes_only_what_changed() {
    let (_tmp, vault) = common::temp_vault();
    let engine = open(&vault);
    let again = engine.sync(false, None).unwrap();
    assert_eq!((again.added, again.changed, again.removed), (0, 0, 0));
    assert!(engine.overview(Caller::Agent(Access::Read)).unwrap().index.fresh);

    std::fs::write(vault.join("z/新笔记.md"), "# 新笔记\n\n关于蜂鸟的观察。\n").unwrap();
    std::fs::write(vault.join("z/设计.md"), "# 设计\n\n重写后的内容提到鹦鹉。\n").unwrap();
    std::fs::remove_file(vault.join("z/reading/孤立的想法.md")).unwrap();
    let overview = engine.overview(Caller::Agent(Access::Read)).unwrap();
    assert!(!overview.index.fresh);
    assert_eq!(
        (overview.index.stale.added, overview.index.stale.changed, overview.index.stale.removed),
        (1, 1, 1)
    );

    let report = engine.sync(false, None).unwrap();
    assert_eq!((report.added, report.changed, report.removed), (1, 1, 1));
    assert_eq!(report.unchanged, 43);
    assert_eq!(content_paths(&engine, "蜂鸟"), ["z/新笔记.md"]);
    assert_eq!(content_paths(&engine, "鹦鹉"), ["z/设计.md"]);
    assert!(!knowledge_paths(&engine, "孤立的想法").contains(&"z/reading/孤立的想法.md".to_owned()));
    assert!(engine.overview(Caller::Agent(Access::Read)).unwrap().index.fresh);

    // A second engine (another process) sees the same index.
    let other = Engine::open(&EngineOptions { vault: vault.clone(), index_dir: None }).unwrap();
    assert_eq!(other.records().len(), engine.records().len());

    // A touch without a content change is not reported as changed.
    let file = std::fs::File::options().write(true).open(vault.join("z/新笔记.md")).unwrap();
    file.set_modified(std::time::SystemTime::now() + std::time::Duration::from_secs(5)).unwrap();
    assert!(engine.overview(Caller::Agent(Access::Read)).unwrap().index.fresh);

    let full = engine.sync(true, None).unwrap();
    assert!(full.full);
    assert_eq!(full.files, 45);
}

#[test]
fn the_watchers_sync_reads_only_the_reported_paths() {
    let (_tmp, vault) = common::temp_vault();
    let engine = open(&vault);
    let disk = |rel: &str| engine.root().join(rel);
    std::fs::write(vault.join("z/新笔记.md"), "# 新笔记\n\n关于蜂鸟的观察。![[新图.png]]\n").unwrap();
    std::fs::write(vault.join("z/attachments/新图.png"), b"png").unwrap();
    std::fs::write(vault.join("z/设计.md"), "# 设计\n\n重写后的内容提到鹦鹉。\n").unwrap();
    std::fs::remove_file(vault.join("z/reading/孤立的想法.md")).unwrap();
    // Changed too, but not reported: a targeted sync must not see it.
    std::fs::write(vault.join("z/未报告.md"), "# 未报告\n\n信天翁。\n").unwrap();
    // Reported, but not the index's business.
    std::fs::create_dir_all(vault.join("inbox/new")).unwrap();
    std::fs::write(vault.join("inbox/new/x.md"), "# staged\n").unwrap();

    let reported =
        ["z/新笔记.md", "z/attachments/新图.png", "z/设计.md", "z/reading/孤立的想法.md", "inbox/new/x.md"]
            .map(disk);
    let report = engine.sync_changed(&reported).unwrap();
    assert!(!report.full);
    assert_eq!((report.added, report.changed, report.removed), (1, 1, 1), "{report:?}");
    assert_eq!(report.files, 45);
    assert_eq!(content_paths(&engine, "蜂鸟"), ["z/新笔记.md"]);
    assert_eq!(content_paths(&engine, "鹦鹉"), ["z/设计.md"]);
    assert!(content_paths(&engine, "信天翁").is_empty(), "an unreported file was indexed: the sync walked");
    assert!(!knowledge_paths(&engine, "孤立的想法").contains(&"z/reading/孤立的想法.md".to_owned()));
    let related = engine
        .get_related_notes(&NoteRefArgs { path: Some("z/新笔记.md".into()), ..Default::default() })
        .unwrap();
    assert_eq!(related.outlinks[0].resolved.as_deref(), Some("z/attachments/新图.png"), "the new attachment");

    // Reporting the same paths again changes nothing.
    let again = engine.sync_changed(&reported).unwrap();
    assert_eq!((again.added, again.changed, again.removed, again.unchanged), (0, 0, 0, 2));

    // A renamed folder cannot be judged from its two names: the sync walks
    // (and so also finds the unreported note).
    std::fs::rename(vault.join("z/daily"), vault.join("z/journal")).unwrap();
    let walked = engine.sync_changed(&["z/daily", "z/journal"].map(disk)).unwrap();
    assert_eq!((walked.added, walked.removed), (5, 4), "{walked:?}");
    assert_eq!(content_paths(&engine, "信天翁"), ["z/未报告.md"]);
    assert!(engine.record("z/journal/2026-01-20.md").is_some());
    assert!(engine.record("z/daily/2026-01-20.md").is_none());
    assert!(engine.overview(Caller::Agent(Access::Read)).unwrap().index.fresh);
}

/// Issue 42: while a watcher reports every change, the overview's `fresh`
/// rests on the last walk and the reports since, checking a slice of the
/// notes' sizes and times per call, and walks only when that slice or a
/// failed walk says it must.
#[test]
fn issue42_a_watched_overview_rests_on_the_last_walk_and_the_reports_since() {
    let (_tmp, vault) = common::temp_vault();
    let engine = open(&vault);
    let overview = || engine.overview(Caller::Agent(Access::Read)).unwrap().index;
    let stale = |index: &IndexState| (index.stale.added, index.stale.changed, index.stale.removed);
    engine.set_watched(true);
    let walked = overview();
    assert!(walked.fresh && !engine.recheck_due(), "{walked:?}");

    // A note no watcher reported yet: the overview did not walk to find it
    // (what `fresh` promises, ARCHITECTURE.md says), until the report comes.
    std::fs::write(vault.join("z/未报告.md"), "# 未报告\n\n信天翁。\n").unwrap();
    std::thread::sleep(std::time::Duration::from_millis(1100));
    let kept = overview();
    assert!(kept.fresh && kept.verified_at == walked.verified_at, "{kept:?}");
    let report = engine.sync_reported(&[vault.join("z/未报告.md")], false).unwrap();
    assert_eq!(report.added, 1);
    assert_eq!(overview().verified_at, walked.verified_at, "a reported change needs no walk");
    assert_eq!(content_paths(&engine, "信天翁"), ["z/未报告.md"]);

    // An existing note changed behind the watcher's back: the slice of
    // notes each overview checks finds it, and that call walks.
    std::fs::write(vault.join("z/设计.md"), "# 设计\n\n重写后的内容提到鹦鹉。\n").unwrap();
    let found = overview();
    assert!(!found.fresh && stale(&found) == (0, 1, 0), "{found:?}");
    assert!(found.verified_at > walked.verified_at);
    // A walk that found the index stale is not kept: the next call walks too.
    std::fs::write(vault.join("z/又一个.md"), "# 又一个\n").unwrap();
    assert_eq!(stale(&overview()), (1, 1, 0));
    assert!(engine.recheck_due(), "the server walks again");
    engine.sync(false, None).unwrap();
    let synced = overview();
    assert!(synced.fresh && !engine.recheck_due(), "{synced:?}");

    // Without a watcher, every overview walks.
    engine.set_watched(false);
    std::fs::write(vault.join("z/无人报告.md"), "# 无人报告\n").unwrap();
    assert_eq!(stale(&overview()), (1, 0, 0));
    engine.set_watched(true);
    assert_eq!(stale(&overview()), (1, 0, 0), "the last walk found it stale");
    engine.sync_reported(&[vault.join("z/无人报告.md")], false).unwrap();
    let rewalked = overview();
    assert!(rewalked.fresh, "{rewalked:?}");
    // A reported file that cannot be served is listed as a walk would list it.
    std::fs::write(vault.join("z/坏.md"), b"\xff\xfe not utf-8").unwrap();
    engine.sync_reported(&[vault.join("z/坏.md")], false).unwrap();
    let skipped = overview();
    assert!(skipped.fresh && skipped.skipped.iter().any(|s| s.path == "z/坏.md"), "{skipped:?}");
    std::fs::remove_file(vault.join("z/坏.md")).unwrap();
    engine.sync_reported(&[vault.join("z/坏.md")], false).unwrap();
    let gone = overview();
    assert!(gone.fresh && gone.skipped.iter().all(|s| s.path != "z/坏.md"), "{gone:?}");
    assert_eq!(gone.verified_at, rewalked.verified_at, "no walk since");
}

/// Issue 42: after a one-note edit the link graph is updated from the last
/// one built, not built again, and answers as a whole build would.
#[test]
fn issue42_a_one_note_edit_updates_the_link_graph_instead_of_building_it() {
    let (_tmp, vault) = common::temp_vault();
    let engine = open(&vault);
    let related = |path: &str| {
        engine.get_related_notes(&NoteRefArgs { path: Some(path.into()), ..Default::default() }).unwrap()
    };
    let stages = || kb_mcp::engine::timing::take().into_iter().map(|(stage, _)| stage).collect::<Vec<_>>();
    let _ = stages();
    let before = related("z/设计.md");
    assert!(stages().contains(&"graph_build"));
    let linkers = before.backlinks.len();

    std::fs::write(vault.join("z/reading/孤立的想法.md"), "# 孤立的想法\n\n见 [[设计]]。\n").unwrap();
    engine.sync_changed(&[vault.join("z/reading/孤立的想法.md")]).unwrap();
    let after = related("z/设计.md");
    let took = stages();
    assert!(took.contains(&"graph_update") && !took.contains(&"graph_build"), "{took:?}");
    assert_eq!(after.backlinks.len(), linkers + 1, "{:?}", after.backlinks);
    assert!(after.backlinks.iter().any(|b| b.path == "z/reading/孤立的想法.md"));
    let overview = engine.overview(Caller::Agent(Access::Read)).unwrap();
    // A whole build (a new engine on the same index) counts the same.
    let other = open(&vault);
    let whole = other.overview(Caller::Agent(Access::Read)).unwrap();
    assert_eq!(
        (overview.counts.links, overview.counts.broken_links, overview.counts.orphans),
        (whole.counts.links, whole.counts.broken_links, whole.counts.orphans)
    );
}

#[test]
fn many_small_updates_are_merged_in_the_background_and_lose_nothing() {
    let (_tmp, vault) = common::temp_vault();
    let engine = open(&vault);
    let bulk = engine.index_segments().unwrap();
    let updates = 40;
    for n in 0..updates {
        let path = vault.join(format!("z/更新{n}.md"));
        std::fs::write(&path, format!("# 更新 {n}\n\nmergetoken{n} appears here.\n")).unwrap();
        engine.sync_changed(&[engine.root().join(format!("z/更新{n}.md"))]).unwrap();
    }
    // Each update committed a one-note segment; past 16, the small ones are merged
    // (in the background, so wait for the reader to see it).
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(20);
    while engine.index_segments().unwrap() > 17 && std::time::Instant::now() < deadline {
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    let segments = engine.index_segments().unwrap();
    assert!(segments <= 17, "{segments} segments after {updates} updates (bulk build: {bulk})");
    for n in 0..updates {
        assert_eq!(
            content_paths(&engine, &format!("mergetoken{n}")),
            [format!("z/更新{n}.md")],
            "update {n}"
        );
    }
    assert_eq!(engine.overview(Caller::Agent(Access::Read)).unwrap().index.documents, 45 + updates as u64);
}

#[test]
fn a_non_utf8_note_is_reported_not_indexed_as_garbage() {
    let (_tmp, vault) = common::temp_vault();
    std::fs::write(vault.join("z/latin1.md"), b"caf\xe9 cr\xe8me br\xfbl\xe9e\n").unwrap();
    let engine = open(&vault);
    // Not a note (issue 12, item 17): reported as skipped, with the reason.
    assert!(engine.record("z/latin1.md").is_none());
    let overview = engine.overview(Caller::Agent(Access::Read)).unwrap();
    let skipped = overview.index.skipped.iter().find(|s| s.path == "z/latin1.md").unwrap();
    assert!(skipped.reason.contains("invalid byte 0xE9"), "{skipped:?}");
    assert!(content_paths(&engine, "caf").is_empty());
    let err = engine
        .read_note(&ReadNoteArgs { path: Some("z/latin1.md".into()), ..Default::default() })
        .unwrap_err();
    assert_eq!(err.code, ErrorCode::InvalidArgument);
}

#[test]
fn an_index_dir_outside_the_vault_leaves_the_vault_untouched() {
    let (tmp, vault) = common::temp_vault();
    let before = common::snapshot(&vault);
    let index_dir = tmp.path().join("index");
    let engine =
        Engine::open(&EngineOptions { vault: vault.clone(), index_dir: Some(index_dir.clone()) }).unwrap();
    engine.sync(false, None).unwrap();
    assert!(index_dir.join("meta.json").exists());
    assert!(!vault.join(".kb").exists());
    assert_eq!(common::snapshot(&vault), before);
}

#[test]
fn recall_context_packs_matches_and_neighbours_within_the_budget_in_a_fixed_order() {
    let (_tmp, vault) = common::temp_vault();
    let engine = open(&vault);
    let args = RecallArgs { topic: "同步不等于备份".into(), budget_tokens: Some(1500), folder: None };
    let pack = engine.recall_context(&args).unwrap();
    // Written out: 295 + 80 + 359 + 107 tokens of matching sections, then 32 + 31 + 31
    // of neighbours' openings (one token per CJK character, one per three others),
    // then 30 + 30 for the neighbours of git 同步脚本, which ranks closer to the top
    // since English words carry their stems (issue 19: longer Latin bodies).
    assert_eq!(pack.used_tokens, 995);
    let items: Vec<(&str, Option<&str>, &str)> =
        pack.items.iter().map(|i| (i.path.as_str(), i.section.as_deref(), i.reason.as_str())).collect();
    assert_eq!(
        items,
        [
            ("z/备份仓库.md", Some("同步不等于备份"), "match"),
            ("z/3-2-1 备份原则.md", Some("常见误区"), "match"),
            ("z/tech/git/git 同步脚本.md", Some("git 同步脚本"), "match"),
            ("z/tech/search engines/倒排索引.md", Some("结构"), "match"),
            ("z/tech/git/Git LFS 与大文件.md", None, "outlink of z/备份仓库.md"),
            ("z/知识管理 MOC.md", None, "outlink of z/备份仓库.md"),
            ("z/Restore drills.md", None, "backlink of z/备份仓库.md"),
            ("z/tech/git/git remote basics.md", None, "outlink of z/tech/git/git 同步脚本.md"),
            ("z/tech/Tech index.md", None, "backlink of z/tech/git/git 同步脚本.md"),
        ]
    );
    assert_eq!(pack.items[0].path, "z/备份仓库.md");
    assert_eq!(pack.items[0].reason, "match");
    assert_eq!(pack.items[0].section.as_deref(), Some("同步不等于备份"));
    assert!(
        pack.items
            .iter()
            .any(|i| i.reason.starts_with("backlink of ") || i.reason.starts_with("outlink of ")),
        "{:#?}",
        pack.items
    );
    let mut keys: Vec<(String, Option<String>)> =
        pack.items.iter().map(|i| (i.path.clone(), i.section.clone())).collect();
    let count = keys.len();
    keys.sort();
    keys.dedup();
    assert_eq!(keys.len(), count, "no duplicates");
    assert_eq!(engine.recall_context(&args).unwrap(), pack, "deterministic");

    // A small budget is respected too, and cut at a line.
    let small = engine.recall_context(&RecallArgs { budget_tokens: Some(200), ..args.clone() }).unwrap();
    // 200 tokens (195 CJK characters and 13 others): the section from its heading
    // up to the 200th token, cut inside its one long line.
    assert_eq!(small.used_tokens, 200);
    assert_eq!(small.items.len(), 1);
    assert_eq!(
        small.items[0].text,
        "## 同步不等于备份\n\n很多人以为开了云同步就万事大吉，其实同步会忠实地把错误也传播到每一台设备上：误删一个文件夹，几秒钟后所有设备上的那个文件夹都消失了；一次失败的批量替换，会同样快地覆盖掉所有副本。\n\n我第一次意识到这个问题是在整理旧笔记时发现去年写的几十条卡片全部变成了空文件回头检查才知道是某个插件在同步远程仓库的设置被改动之后反复用旧的空白版本覆盖了新版本而我一直以为有同步就等于有备份所以从来没有去翻过历"
    );
    let invalid = engine.recall_context(&RecallArgs { budget_tokens: Some(10), ..args });
    assert_eq!(invalid.unwrap_err().code, ErrorCode::InvalidArgument);
}

#[test]
fn token_estimates_count_each_cjk_character_and_every_three_others() {
    for (text, tokens) in [
        ("", 0),
        ("abc", 1),
        ("abcd", 2),
        ("同步不等于备份", 7),
        ("カード型", 4),
        ("저장소", 3),
        ("同步 sync", 4),
        ("## 同步不等于备份\n", 9),
        ("，。：", 1),
    ] {
        assert_eq!(kb_mcp::engine::estimate_tokens(text), tokens, "{text:?}");
    }
}

#[test]
fn typos_fall_back_to_fuzzy_matching_and_explain_says_why_a_note_ranked() {
    let (_tmp, vault) = common::temp_vault();
    let engine = open(&vault);
    let typo = knowledge_paths(&engine, "zettlekasten");
    assert!(typo.contains(&"z/卡片笔记法.md".to_owned()), "{typo:?}");
    // An exact match is never replaced by fuzzy ones.
    assert_eq!(knowledge_paths(&engine, "Zettelkasten")[0], "z/卡片笔记法.md");
    assert!(knowledge_paths(&engine, "qzxv").is_empty(), "short words are not fuzzed");

    let explained =
        engine.search_knowledge(&SearchArgs { explain: Some(true), ..search("备份仓库") }).unwrap();
    let why = explained.results[0].explain.as_ref().unwrap();
    assert_eq!(why["exact_name_match"], true);
    let terms = why["terms"].as_array().unwrap();
    assert!(terms.iter().any(|t| t["field"] == "title" && t["term"] == "仓库"), "{why}");
    assert!(engine.search_knowledge(&search("备份仓库")).unwrap().results[0].explain.is_none());
}

/// Issue 34: a `since` cursor taken before the audit log was truncated or
/// replaced (a person clearing `inbox/_applied.jsonl`, a backup restored) read
/// the new log from the old offset: the proposals applied since were missed or
/// cut mid-line, and `changes` did not say it was incomplete. The cursor now
/// carries a check of the log's last bytes: a log that is not the one it was
/// taken from is read from its start and the answer is `incomplete`.
#[test]
fn issue_34_a_since_cursor_past_a_truncated_audit_log_is_incomplete() {
    let (_tmp, vault) = common::temp_vault();
    let engine = open(&vault);
    let apply_new = |title: &str| {
        let staged = engine
            .propose_new_note(&ProposeNewArgs {
                title: title.into(),
                body: "text\n".into(),
                reason: "test".into(),
                ..Default::default()
            })
            .unwrap();
        engine
            .apply_proposal(
                &ApplyArgs { proposal_id: staged.proposal_id.clone() },
                kb_mcp::engine::types::Actor::Mcp,
            )
            .unwrap();
        staged.proposal_id
    };
    let since =
        |cursor: &str| engine.overview_since(Caller::Agent(Access::Read), Some(cursor)).unwrap().changes;
    let applied =
        |changes: &Changes| changes.applied.iter().map(|e| e.proposal_id.clone()).collect::<Vec<_>>();
    let log = vault.join("inbox/_applied.jsonl");
    apply_new("First note");
    apply_new("Second note");
    let cursor = engine.overview(Caller::Agent(Access::Read)).unwrap().changes.cursor;
    assert!(applied(&since(&cursor)).is_empty() && !since(&cursor).incomplete);

    // The log cleared, then three applies: longer than the cursor's offset again.
    std::fs::write(&log, "").unwrap();
    let new: Vec<String> = ["Third note", "Fourth note", "Fifth note"].into_iter().map(apply_new).collect();
    let changes = since(&cursor);
    assert!(changes.incomplete, "a replaced log is not read from the old offset: {changes:?}");
    assert_eq!(applied(&changes), new, "every line of the new log");
    let later = since(&changes.cursor);
    assert!(!later.incomplete && later.applied.is_empty(), "the new cursor is the new log's: {later:?}");

    // Cut to its first line, shorter than the cursor's offset: that line is not dropped.
    let text = std::fs::read_to_string(&log).unwrap();
    let first = &text[..=text.find('\n').unwrap()];
    std::fs::write(&log, first).unwrap();
    let changes = since(&later.cursor);
    assert!(changes.incomplete, "{changes:?}");
    assert_eq!(applied(&changes), new[..1], "{changes:?}");
    // Grown as usual: complete, only the new line.
    let sixth = apply_new("Sixth note");
    let grown = since(&changes.cursor);
    assert!(!grown.incomplete, "{grown:?}");
    assert_eq!(applied(&grown), [sixth]);
}

/// A conflict copy kept apart by an apply (`inbox/conflicts/<date>/…`) made
/// the inbox look like a folder of the person's own (`conflicts` was not among
/// the names kb-mcp creates there): every later proposal was refused, telling
/// the person to move the inbox. The inbox stays kb-mcp's.
#[test]
fn issue_34_a_kept_conflict_copy_leaves_the_inbox_kb_mcps() {
    let (_tmp, vault) = common::temp_vault();
    let engine = open(&vault);
    let folder = vault.join("inbox/conflicts/2026-12-06/z");
    std::fs::create_dir_all(&folder).unwrap();
    std::fs::write(folder.join("备份仓库.conflict-1a2b3c4d.md"), "a save\n").unwrap();
    assert!(engine.inbox_conflict().is_none(), "{:?}", engine.inbox_conflict());
    let staged = engine.propose_new_note(&ProposeNewArgs {
        title: "After a conflict".into(),
        body: "text\n".into(),
        reason: "test".into(),
        ..Default::default()
    });
    assert!(staged.is_ok(), "{staged:?}");
}

/// Issue 13, "weak results must look weak": a hit found only by typo tolerance
/// came back with no snippets and `matched: []`, and a `search_knowledge` hit
/// found by its text alone said nothing of why it ranked.
#[test]
fn issue_13_typo_hits_have_snippets_and_every_hit_says_where_it_matched() {
    let dir = tempfile::tempdir().unwrap();
    let vault = dir.path();
    std::fs::write(
        vault.join("sync.md"),
        "# Sync your notes\n\n## Syncthing\n\nSyncthing keeps folders in step.\n",
    )
    .unwrap();
    std::fs::write(vault.join("other.md"), "# Other tools\n\nA friend uses Syncthing at home.\n").unwrap();
    let engine = open(vault);

    let content = engine.search_note_content(&search("syncthnig")).unwrap();
    let sync = content.results.iter().find(|hit| hit.path == "sync.md").unwrap();
    let lines: Vec<(u32, &str)> = sync.snippets.iter().map(|s| (s.line, s.text.as_str())).collect();
    assert_eq!(lines, [(3, "## **Syncthing**"), (5, "**Syncthing** keeps folders in step.")]);

    let titles = engine.search_knowledge(&search("syncthnig")).unwrap();
    let matched: Vec<(&str, Vec<&str>)> = titles
        .results
        .iter()
        .map(|hit| (hit.path.as_str(), hit.matched.iter().map(String::as_str).collect()))
        .collect();
    assert_eq!(matched, [("sync.md", vec!["headings"]), ("other.md", vec!["text"])]);
    // An exact word is explained the same way.
    let exact = engine.search_knowledge(&search("friend")).unwrap();
    assert_eq!(exact.results[0].matched, ["text"]);
}

/// Where a `search_knowledge` hit matched is read from the index for its
/// headings (its hits carry no headings): a heading holding a query word in
/// another form (`Running backups` for `run backup`) or a Chinese word counts,
/// a heading holding only other words does not, and the title-side fields
/// still come from the record.
#[test]
fn a_knowledge_hit_names_the_headings_holding_a_query_word_in_any_form() {
    let dir = tempfile::tempdir().unwrap();
    let vault = dir.path();
    write_notes(
        vault,
        &[
            ("alpha.md", "# Alpha\n\n## Running backups\n\nNothing else here.\n"),
            ("beta.md", "# Beta\n\n## Elsewhere\n\nShe keeps running and makes a backup.\n"),
            ("gamma.md", "---\ntitle: Backup plan\n---\n\n## Tools\n\nOne run a week.\n"),
            ("笔记.md", "# 笔记\n\n## 备份仓库\n\n每周一次。\n"),
            ("其他.md", "# 其他\n\n## 目录\n\n这里提到备份仓库。\n"),
        ],
    );
    let engine = open(vault);
    let matched = |query: &str| -> Vec<(String, Vec<String>)> {
        let mut found: Vec<(String, Vec<String>)> = engine
            .search_knowledge(&search(query))
            .unwrap()
            .results
            .into_iter()
            .map(|hit| (hit.path, hit.matched))
            .collect();
        found.sort();
        found
    };
    let strings = |list: &[&str]| list.iter().map(|s| (*s).to_owned()).collect::<Vec<_>>();
    assert_eq!(
        matched("run backup"),
        [
            ("alpha.md".to_owned(), strings(&["headings"])),
            ("beta.md".to_owned(), strings(&["text"])),
            ("gamma.md".to_owned(), strings(&["title"])),
        ]
    );
    assert_eq!(
        matched("备份仓库"),
        [("其他.md".to_owned(), strings(&["text"])), ("笔记.md".to_owned(), strings(&["headings"]))]
    );
}

/// Issue 13: `propose_new_note "锚定效应"` reported `similar: []` although one
/// note has a `## 锚定效应` section and another uses the words twice: a
/// duplicate is looked for in headings and text too, title matches first.
#[test]
fn issue_13_a_new_note_is_compared_with_headings_and_text_not_only_titles() {
    let dir = tempfile::tempdir().unwrap();
    let vault = dir.path();
    std::fs::write(vault.join("认知偏差.md"), "# 认知偏差\n\n## 锚定效应\n\n第一印象会影响判断。\n").unwrap();
    std::fs::write(vault.join("谈判.md"), "# 谈判笔记\n\n开价时要利用锚定效应。锚定效应很强。\n").unwrap();
    std::fs::write(vault.join("其他.md"), "# 其他\n\n无关的内容。\n").unwrap();
    let engine = open(vault);
    let staged = engine
        .propose_new_note(&ProposeNewArgs {
            title: "锚定效应".into(),
            body: "先给出的数字会拉住后面的判断。\n".into(),
            reason: "test".into(),
            ..Default::default()
        })
        .unwrap();
    let similar: Vec<&str> = staged.similar.iter().map(|note| note.path.as_str()).collect();
    assert_eq!(similar, ["认知偏差.md", "谈判.md"]);
}

#[test]
fn a_hub_shows_its_first_500_backlinks_in_order_and_says_it_cut_the_rest() {
    let dir = tempfile::tempdir().unwrap();
    let vault = dir.path();
    std::fs::write(vault.join("hub.md"), "# Hub\n").unwrap();
    // l000 links twice (lines 1 and 3), then 504 notes once each: 506 backlinks.
    std::fs::write(vault.join("l000.md"), "first [[hub]]\n\nagain [[hub]] here\n").unwrap();
    for i in 1..505 {
        std::fs::write(vault.join(format!("l{i:03}.md")), format!("note {i} links [[hub]]\n")).unwrap();
    }
    let engine = open(vault);
    let related =
        engine.get_related_notes(&NoteRefArgs { path: Some("hub.md".into()), ..Default::default() }).unwrap();
    assert!(related.truncated);
    let shown: Vec<(&str, u32)> = related.backlinks.iter().map(|b| (b.path.as_str(), b.line)).collect();
    assert_eq!(shown.len(), 500);
    assert_eq!(&shown[..3], &[("l000.md", 1), ("l000.md", 3), ("l001.md", 1)]);
    assert_eq!(shown[499], ("l498.md", 1), "the first 500 by path, then line");
    assert!(shown.windows(2).all(|pair| pair[0] <= pair[1]));
    assert_eq!(related.backlinks[1].context, "again [[hub]] here");
    assert_eq!(related.backlinks[499].context, "note 498 links [[hub]]");
}

#[test]
fn the_overview_counts_a_tag_once_in_any_case() {
    let dir = tempfile::tempdir().unwrap();
    let vault = dir.path();
    std::fs::write(vault.join("a.md"), "---\ntags: [Tag, ÄRGER, area/Work]\n---\nbody\n").unwrap();
    std::fs::write(vault.join("b.md"), "---\ntags: [tag, ärger, area/work, 备份]\n---\nbody\n").unwrap();
    let engine = open(vault);
    let overview = engine.overview(Caller::Agent(Access::Read)).unwrap();
    // tag, ärger, area/work, 备份
    assert_eq!(overview.counts.tags, 4);
}

/// Issue 12 item 19: `read_note` served a setext section (`Setup` underlined by
/// `=====`) that `replace_section` then called "no heading": both use the vault's
/// one heading model, so the section an agent reads is the section it replaces.
#[test]
fn issue_12_a_setext_section_read_is_a_section_replaced() {
    let (_tmp, vault) = common::temp_vault();
    let text = "---\ntitle: Setext\n---\nIntro.\n\nSetup\n=====\n\nInstall it.\n\nDetails\n-------\n\nMore.\n\nUsage\n=====\n\nRun it.\n";
    std::fs::write(vault.join("z/setext.md"), text).unwrap();
    let engine = open(&vault);
    let read = |section: &str| {
        engine
            .read_note(&ReadNoteArgs {
                path: Some("z/setext.md".into()),
                section: Some(section.into()),
                ..Default::default()
            })
            .unwrap()
    };
    let setup = read("Setup");
    assert_eq!(setup.content, "Setup\n=====\n\nInstall it.\n\nDetails\n-------\n\nMore.\n\n");
    assert_eq!(read("Details").content, "Details\n-------\n\nMore.\n\n");
    let propose = |heading: &str, content: &str| {
        engine.propose_note_patch(&ProposePatchArgs {
            path: "z/setext.md".into(),
            base_hash: setup.hash.clone(),
            reason: "test".into(),
            edits: vec![kb_mcp::write::Edit::ReplaceSection {
                heading: heading.into(),
                content: content.into(),
            }],
        })
    };
    let staged = |result: ProposePatchResult| std::fs::read_to_string(vault.join(&result.files[0])).unwrap();
    // The heading lines (text and underline) are kept; the section's lines go.
    let patched = staged(propose("Setup", "Set it up.\n").unwrap());
    assert_eq!(
        patched,
        "---\ntitle: Setext\n---\nIntro.\n\nSetup\n=====\nSet it up.\nUsage\n=====\n\nRun it.\n"
    );
    // `## Details` names the level-2 setext heading; a same-level heading in the
    // content replaces both its lines.
    let patched = staged(propose("## Details", "## Particulars\nFew.\n").unwrap());
    assert_eq!(
        patched,
        "---\ntitle: Setext\n---\nIntro.\n\nSetup\n=====\n\nInstall it.\n\n## Particulars\nFew.\nUsage\n=====\n\nRun it.\n"
    );
    // A level that does not match is still no heading, and the error lists the
    // setext headings with their levels.
    let err = propose("### Setup", "x").unwrap_err();
    assert_eq!(err.code, ErrorCode::NotFound);
    assert!(err.message.contains("# Setup, ## Details, # Usage"), "{}", err.message);
}

/// Issue 12 item 20: `[[Alpha]]` to `z/sub/Alpha.Md` was reported broken while
/// search found the note: the graph's stem kept `.Md`. One stem rule (`.md` in any
/// case) serves paths, records and links.
#[test]
fn issue_12_a_link_finds_a_note_whose_extension_is_in_mixed_case() {
    let (_tmp, vault) = common::temp_vault();
    std::fs::create_dir_all(vault.join("z/sub")).unwrap();
    std::fs::write(vault.join("z/sub/Alpha.Md"), "Alpha body, quokkaword.\n").unwrap();
    std::fs::write(vault.join("z/links-alpha.md"), "See [[Alpha]] and [[z/sub/Alpha]].\n").unwrap();
    let engine = open(&vault);
    assert_eq!(content_paths(&engine, "quokkaword"), ["z/sub/Alpha.Md"]);
    let related = engine
        .get_related_notes(&NoteRefArgs { path: Some("z/links-alpha.md".into()), reference: None })
        .unwrap();
    assert_eq!(related.broken, []);
    let resolved: Vec<Option<&str>> = related.outlinks.iter().map(|l| l.resolved.as_deref()).collect();
    assert_eq!(resolved, [Some("z/sub/Alpha.Md"), Some("z/sub/Alpha.Md")]);
    let alpha =
        engine.get_related_notes(&NoteRefArgs { path: None, reference: Some("Alpha".into()) }).unwrap();
    assert_eq!(alpha.path, "z/sub/Alpha.Md");
    assert_eq!(alpha.backlinks.len(), 2);
}

/// Issue 12 item 10: a search hit's snippets come from a bounded window at the
/// start of its file, not from the whole file (one 50 MB note cost 750–920 MiB
/// per search). The line holding both terms lies past the window, so a snippet
/// from it would show that the whole file was read.
#[test]
fn issue_12_snippets_come_from_a_bounded_window_of_a_huge_note() {
    let (_tmp, vault) = common::temp_vault();
    let filler = format!("{}\n", "x".repeat(999)).repeat(2_200);
    let text = format!("# Huge\n\nneedle near the start\n\n{filler}\nneedle gamma far away\n");
    assert!(text.len() > 2 * 1024 * 1024);
    std::fs::write(vault.join("z/huge.md"), &text).unwrap();
    let engine = open(&vault);
    let results = engine.search_note_content(&search("needle gamma")).unwrap();
    let hit = results.results.iter().find(|h| h.path == "z/huge.md").expect("the huge note is a hit");
    assert!(!hit.snippets.is_empty(), "{hit:?}");
    let far = text.lines().count() as u32;
    assert!(
        hit.snippets.iter().all(|s| s.line == 3),
        "snippets only from the window: {:?} (far line {far})",
        hit.snippets
    );
}

/// Issue 12 item 10: a note over 64 MiB could not be read at all (and both
/// remedies in the error's hint failed): any note is readable by pages, and its
/// hash is the whole file's.
#[test]
fn issue_12_a_note_over_64_mib_is_read_by_pages() {
    let (_tmp, vault) = common::temp_vault();
    let line = format!("{}\n", "同步".repeat(170));
    let body = line.repeat((65 << 20) / line.len() + 1);
    let text = format!("---\ntitle: Giant\ntags: [big]\n---\n# Start\n\n{body}# End\nlast words\n");
    assert!(text.len() > 65 << 20);
    std::fs::write(vault.join("z/giant.md"), &text).unwrap();
    let engine = Engine::open(&EngineOptions { vault: vault.clone(), index_dir: None }).unwrap();
    let read = |offset: Option<u64>| {
        engine
            .read_note(&ReadNoteArgs {
                path: Some("z/giant.md".into()),
                offset,
                max_bytes: Some(100),
                ..ReadNoteArgs::default()
            })
            .unwrap()
    };
    let first = read(None);
    let hash = kb_mcp::vault::content_hash(text.as_bytes());
    assert_eq!(
        (first.title.as_str(), first.size, first.hash.as_str()),
        ("Giant", text.len() as u64, hash.as_str())
    );
    let cut = (0..=100).rev().find(|&at| text.is_char_boundary(at)).unwrap();
    assert_eq!(first.content, text[..cut]);
    assert_eq!((first.truncated, first.next_offset), (true, Some(cut as u64)));
    assert!(first.outline_truncated && first.hint.is_some(), "{:?}", first.hint);
    // A page in the middle starts and ends on character boundaries.
    let middle = read(Some(40 << 20));
    assert!(
        middle.content.len() <= 100 && middle.content.chars().all(|c| c == '同' || c == '步' || c == '\n')
    );
    let tail = read(Some(text.len() as u64 - 17));
    assert_eq!(tail.content, "# End\nlast words\n");
    assert_eq!((tail.truncated, tail.next_offset), (false, None));
    assert_eq!(tail.hash, hash);
    // A section in the parsed start of the note.
    let start = engine
        .read_note(&ReadNoteArgs {
            path: Some("z/giant.md".into()),
            section: Some("Start".into()),
            max_bytes: Some(50),
            ..ReadNoteArgs::default()
        })
        .unwrap();
    assert!(start.content.starts_with("# Start\n") && start.truncated, "{:?}", start.content);
}

/// Issue 12 item 11: every answer respects its page size. `read_note {max_bytes:
/// 100}` returned a whole 900 KB frontmatter value and the outline of 50,000
/// headings; `search_knowledge` returned thousands of tags for one note. Both are
/// capped now, with counts of what was left out and a hint for the rest.
#[test]
fn issue_12_answers_are_capped_with_counts_of_what_was_left_out() {
    let (_tmp, vault) = common::temp_vault();
    let headings: String = (0..50_000).map(|i| format!("## Heading {i}\n")).collect();
    let aliases: String = (0..1_000).map(|i| format!("  - alias {i}\n")).collect();
    let tags: String = (0..5_000).map(|i| format!("#tag{i} ")).collect();
    let note = format!(
        "---\ntitle: Tagstorm\nabstract: {}\naliases:\n{aliases}---\n{tags}\n{headings}",
        "y".repeat(900_000)
    );
    std::fs::write(vault.join("z/storm.md"), &note).unwrap();
    let engine = open(&vault);
    let read = engine
        .read_note(&ReadNoteArgs {
            path: Some("z/storm.md".into()),
            max_bytes: Some(100),
            ..ReadNoteArgs::default()
        })
        .unwrap();
    let answer = serde_json::to_string(&read).unwrap();
    assert!(answer.len() < 16 * 1024, "read_note answered {} bytes", answer.len());
    assert_eq!(read.content, note[..100]);
    assert!(read.frontmatter_truncated && read.frontmatter_omitted > 0);
    assert_eq!(read.frontmatter["title"], "Tagstorm");
    assert!(read.outline_truncated);
    assert_eq!(read.outline_omitted as usize + read.outline.len(), 50_000);
    assert!(read.hint.as_deref().is_some_and(|h| h.contains("offset")), "{:?}", read.hint);

    let found = engine.search_knowledge(&search("Tagstorm")).unwrap();
    let hit = found.results.iter().find(|h| h.path == "z/storm.md").expect("a hit");
    assert_eq!((hit.tags.len(), hit.tags_omitted), (20, 4_980));
    assert_eq!((hit.aliases.len(), hit.aliases_omitted), (20, 980));
    let answer = serde_json::to_string(&found).unwrap();
    assert!(answer.len() < 16 * 1024, "search_knowledge answered {} bytes", answer.len());
}

/// Issue 12, item 16: Obsidian's templates folder (named in
/// `.obsidian/templates.json`) is left out of searches, tags and counts but stays
/// readable; an Excalidraw drawing is indexed by its words only and titled by its name.
#[test]
fn issue12_templates_and_drawings_are_not_counted_as_notes() {
    let (_tmp, vault) = common::temp_person_vault();
    let engine = open(&vault);
    for query in ["meeting", "Meeting attendees", "今日待办"] {
        for paths in [knowledge_paths(&engine, query), content_paths(&engine, query)] {
            assert!(
                !paths.iter().any(|p| p.starts_with("Templates/")),
                "{query:?} found a template: {paths:?}"
            );
        }
    }
    assert_eq!(
        knowledge_paths(&engine, "meeting").first().map(String::as_str),
        Some("Meetings/产品周会 2026-11-28.md")
    );
    let tags = engine.list_tags(&ListTagsArgs::default()).unwrap();
    let count = |tag: &str| tags.tags.iter().find(|t| t.tag == tag).map(|t| t.count);
    assert_eq!(count("daily"), Some(2), "{tags:?}");
    assert_eq!(count("meeting"), Some(1), "{tags:?}");
    let overview = engine.overview(Caller::Agent(Access::Read)).unwrap();
    assert_eq!(overview.counts.notes, 7, "{overview:?}");
    let template = engine
        .read_note(&ReadNoteArgs { path: Some("Templates/Meeting.md".into()), ..Default::default() })
        .unwrap();
    assert!(template.content.contains("Meeting agenda"), "{template:?}");

    // The drawing: its words are found, its compressed data is not, its title is its name.
    assert_eq!(
        content_paths(&engine, "冷备份").first().map(String::as_str),
        Some("Drawings/架构草图.excalidraw.md")
    );
    assert_eq!(content_paths(&engine, "lighthouse gateway"), ["Drawings/架构草图.excalidraw.md"]);
    for noise in ["gLgAQQDwMYEMA2", "Xk3Jd9aa", "decompress command palette"] {
        assert!(content_paths(&engine, noise).is_empty(), "{noise:?} was indexed");
        assert!(knowledge_paths(&engine, noise).is_empty(), "{noise:?} was indexed");
    }
    let drawing = engine.record("Drawings/架构草图.excalidraw.md").unwrap();
    assert_eq!(drawing.title, "架构草图");
    assert!(knowledge_paths(&engine, "Text Elements").is_empty());
}

/// Issue 12, item 17: every skipped file is reported with its reason (a symlink
/// out of the vault, a note that is not UTF-8, a template), and a file that
/// cannot be read is listed nowhere as a note.
#[cfg(unix)]
#[test]
fn issue12_skipped_files_are_reported_and_never_listed_as_notes() {
    let (_tmp, vault) = common::person_vault_with_exclusions();
    let engine = Engine::open(&EngineOptions { vault: vault.clone(), index_dir: None }).unwrap();
    let report = engine.sync(false, None).unwrap();
    let reason_of = |skipped: &[(String, String)], path: &str| {
        skipped.iter().find(|(p, _)| p == path).map(|(_, why)| why.clone())
    };
    let why = reason_of(&report.skipped, "Shared").expect("the symlink out is skipped");
    assert!(why.contains("outside the vault"), "{why}");
    let why = reason_of(&report.skipped, "Daily/旧笔记.md").expect("the GBK note is skipped");
    assert!(why.contains("UTF-8"), "{why}");
    assert!(reason_of(&report.skipped, "Templates/Daily.md").is_some(), "{report:?}");

    // Not a note anywhere: recent notes, tags, counts, searches.
    let recent = engine.list_recent_notes(&RecentArgs { days: Some(36500), ..Default::default() }).unwrap();
    assert!(!recent.notes.iter().any(|n| n.path == "Daily/旧笔记.md"), "{recent:?}");
    let tags = engine.list_tags(&ListTagsArgs::default()).unwrap();
    assert!(!tags.tags.iter().any(|t| t.tag == "legacy"), "{tags:?}");
    assert!(!knowledge_paths(&engine, "旧笔记").iter().any(|p| p == "Daily/旧笔记.md"));
    assert!(engine.record("Daily/旧笔记.md").is_none());

    // The overview counts them and lists the first ones with their reasons.
    let overview = engine.overview(Caller::Agent(Access::Read)).unwrap();
    assert_eq!(overview.counts.notes, 7, "{overview:?}");
    assert!(overview.index.fresh, "a skipped file does not make the index stale: {overview:?}");
    assert_eq!(overview.index.skipped_files, 4, "{:?}", overview.index.skipped);
    let listed: Vec<&str> = overview.index.skipped.iter().map(|s| s.path.as_str()).collect();
    assert_eq!(listed, ["Daily/旧笔记.md", "Shared", "Templates/Daily.md", "Templates/Meeting.md"]);
    assert!(overview.index.skipped.iter().all(|s| !s.reason.is_empty()));

    // A second process (a CLI beside the server) sees the same without re-indexing.
    drop(engine);
    let again = Engine::open_existing(&EngineOptions { vault: vault.clone(), index_dir: None }).unwrap();
    let overview = again.overview(Caller::Cli).unwrap();
    assert!(overview.index.fresh, "{overview:?}");
    assert_eq!(overview.index.skipped_files, 4, "{overview:?}");
    drop(again);

    // Fixed (saved as UTF-8), the note comes back; broken again, it leaves.
    let engine = open(&vault);
    std::fs::write(vault.join("Daily/旧笔记.md"), "---\ntags: [daily, legacy]\n---\n# 旧笔记\n").unwrap();
    engine.sync(false, None).unwrap();
    assert_eq!(knowledge_paths(&engine, "旧笔记").first().map(String::as_str), Some("Daily/旧笔记.md"));
    std::fs::write(vault.join("Daily/旧笔记.md"), [0xBE, 0xC9, 0xB1, 0xCA, b'\n', b'\n']).unwrap();
    engine.sync_changed(&[vault.join("Daily/旧笔记.md")]).unwrap();
    assert!(!knowledge_paths(&engine, "旧笔记").iter().any(|p| p == "Daily/旧笔记.md"));
    assert!(engine.record("Daily/旧笔记.md").is_none());
    assert_eq!(engine.overview(Caller::Agent(Access::Read)).unwrap().index.skipped_files, 4);
}

/// Issue 12, item 16 (follow-up): a change to Obsidian's templates setting takes
/// effect on the next call, without a restart, like a change to `kb.toml`.
#[test]
fn issue12_a_changed_templates_setting_takes_effect_without_a_restart() {
    let (_tmp, vault) = common::temp_person_vault();
    let engine = open(&vault);
    assert!(knowledge_paths(&engine, "Meeting").iter().all(|p| !p.starts_with("Templates/")));
    assert!(engine.record("Meetings/产品周会 2026-11-28.md").is_some());

    // The person points Obsidian's templates at another folder.
    std::fs::write(vault.join(".obsidian/templates.json"), r#"{"folder": "Meetings"}"#).unwrap();
    assert!(engine.refresh_config().unwrap(), "the new setting is put in force");
    assert!(engine.record("Meetings/产品周会 2026-11-28.md").is_none());
    assert!(engine.record("Templates/Meeting.md").is_some());
    let paths = knowledge_paths(&engine, "Meeting");
    assert!(paths.iter().all(|p| !p.starts_with("Meetings/")), "{paths:?}");
    assert!(paths.iter().any(|p| p == "Templates/Meeting.md"), "{paths:?}");
    assert!(!engine.refresh_config().unwrap(), "nothing changed since");

    // The setting removed: no templates folder any more.
    std::fs::remove_file(vault.join(".obsidian/templates.json")).unwrap();
    assert!(engine.refresh_config().unwrap());
    assert!(engine.record("Meetings/产品周会 2026-11-28.md").is_some());
    assert!(engine.record("Templates/Meeting.md").is_some());

    // Templater's setting counts as well.
    std::fs::create_dir_all(vault.join(".obsidian/plugins/templater-obsidian")).unwrap();
    std::fs::write(
        vault.join(".obsidian/plugins/templater-obsidian/data.json"),
        r#"{"templates_folder": "Templates"}"#,
    )
    .unwrap();
    assert!(engine.refresh_config().unwrap());
    assert!(engine.record("Templates/Meeting.md").is_none());
}

fn ls(engine: &Engine, folder: &str) -> NoteList {
    engine.list_notes(&ListNotesArgs { folder: Some(folder.to_owned()), ..Default::default() }).unwrap()
}

fn folder_counts(list: &NoteList) -> Vec<(&str, u64)> {
    list.folders.iter().map(|f| (f.path.as_str(), f.notes)).collect()
}

fn listed_paths(list: &NoteList) -> Vec<&str> {
    list.notes.iter().map(|n| n.path.as_str()).collect()
}

/// Issue 15: `list_notes` is the vault's `ls`: a folder's direct notes and its
/// subfolders with counts; templates, skipped files and denied folders never
/// appear; a tag filters notes and counts.
#[cfg(unix)]
#[test]
fn issue15_list_notes_lists_a_folder_like_ls() {
    let (_tmp, vault) = common::person_vault_with_exclusions();
    let engine = open(&vault);
    let top = engine.list_notes(&ListNotesArgs::default()).unwrap();
    assert_eq!(top.folder, "");
    assert_eq!(
        folder_counts(&top),
        [("Daily", 2), ("Drawings", 1), ("Inbox", 2), ("Meetings", 1), ("读书笔记", 1)],
        "no Templates (templates), no Shared (a symlink out of the vault): {top:?}"
    );
    assert_eq!((top.total, top.notes.len(), top.next_cursor.as_deref()), (0, 0, None));

    let daily = ls(&engine, "Daily/");
    assert_eq!(daily.folder, "Daily");
    assert_eq!(listed_paths(&daily), ["Daily/2026-11-30.md", "Daily/2026-12-01.md"], "not 旧笔记.md (GBK)");
    assert_eq!(daily.total, 2);
    assert!(daily.folders.is_empty());
    assert_eq!(daily.notes[0].tags, ["daily"]);
    assert!(daily.notes[0].updated.ends_with('Z') && !daily.notes[0].title.is_empty(), "{daily:?}");

    // A tag filters the notes and the folder counts.
    let tagged =
        engine.list_notes(&ListNotesArgs { tag: Some("#Daily".into()), ..Default::default() }).unwrap();
    assert_eq!(folder_counts(&tagged), [("Daily", 2)], "{tagged:?}");

    // Denied and configured folders (the fixture vault's kb.toml).
    let (_tmp2, fixture) = common::temp_vault();
    let engine = open(&fixture);
    let top = engine.list_notes(&ListNotesArgs::default()).unwrap();
    let top_folders: Vec<&str> = top.folders.iter().map(|f| f.path.as_str()).collect();
    assert_eq!(top_folders, ["docs", "refs", "z"], "{top:?}");
    let z = ls(&engine, "z");
    assert!(!z.folders.iter().any(|f| f.path == "z/private"), "{z:?}");
    let below: u64 = z.folders.iter().map(|f| f.notes).sum::<u64>() + z.total;
    let indexed = engine.records().iter().filter(|r| r.path.starts_with("z/")).count() as u64;
    assert_eq!(below, indexed, "every note under z is counted once: {z:?}");
    let nested = ls(&engine, "z/tech");
    assert!(nested.folders.iter().any(|f| f.path == "z/tech/search engines"), "{nested:?}");
}

/// Issue 15: `list_notes` errors say what was wrong: a folder outside the
/// readable ones, a missing folder, a bad or foreign cursor, a limit out of range.
#[test]
fn issue15_list_notes_refuses_bad_arguments_clearly() {
    let (_tmp, vault) = common::temp_vault();
    let engine = open(&vault);
    let fail = |args: ListNotesArgs| engine.list_notes(&args).unwrap_err();
    for folder in ["z/private", ".obsidian", "inbox", "../x", "/etc", ".git"] {
        let err = fail(ListNotesArgs { folder: Some(folder.into()), ..Default::default() });
        assert_eq!(err.code, ErrorCode::PathDenied, "{folder}: {err:?}");
    }
    let err = fail(ListNotesArgs { folder: Some("z/nothing-here".into()), ..Default::default() });
    assert_eq!(err.code, ErrorCode::NotFound, "{err:?}");
    assert!(err.message.contains("z/nothing-here"), "{err:?}");
    let err =
        fail(ListNotesArgs { folder: Some("z/tech/git/git 远程仓库.md".into()), ..Default::default() });
    assert_ne!(err.code, ErrorCode::Internal, "{err:?}");
    for limit in [0, 201] {
        let err = fail(ListNotesArgs { limit: Some(limit), ..Default::default() });
        assert!(err.code == ErrorCode::InvalidArgument && err.message.contains("`limit`"), "{err:?}");
    }
    for cursor in ["", "nonsense", "l1zz", "l1616263"] {
        let err = fail(ListNotesArgs { cursor: Some(cursor.into()), ..Default::default() });
        assert_eq!(err.code, ErrorCode::InvalidArgument, "{cursor:?}: {err:?}");
        assert!(err.message.contains("`cursor`"), "{err:?}");
    }
    let first = engine
        .list_notes(&ListNotesArgs { folder: Some("z".into()), limit: Some(2), ..Default::default() })
        .unwrap();
    let cursor = first.next_cursor.expect("z holds more than two notes");
    let err = fail(ListNotesArgs {
        folder: Some("z".into()),
        sort: Some(ListSort::Updated),
        cursor: Some(cursor),
        ..Default::default()
    });
    assert!(err.code == ErrorCode::InvalidArgument && err.message.contains("another folder"), "{err:?}");
    let err = fail(ListNotesArgs { tag: Some(" # ".into()), ..Default::default() });
    assert_eq!(err.code, ErrorCode::InvalidArgument, "{err:?}");
}

/// Issue 15: pages cut by the cursor are stable while notes change: every note
/// that stays is listed exactly once across pages, whatever is added or removed
/// between two calls; `updated` and `created` list newest first.
#[test]
fn issue15_list_notes_pages_stay_stable_while_notes_change() {
    let (_tmp, vault) = common::temp_vault();
    let folder = vault.join("z/pages");
    std::fs::create_dir_all(&folder).unwrap();
    let base = std::time::SystemTime::now() - std::time::Duration::from_secs(86_400);
    for n in 0..25u64 {
        let file = folder.join(format!("note {n:02}.md"));
        std::fs::write(&file, format!("# Note {n:02}\n\n#paged\n")).unwrap();
        let at = base + std::time::Duration::from_secs(60 * n);
        std::fs::File::options().write(true).open(&file).unwrap().set_modified(at).unwrap();
    }
    let engine = open(&vault);
    for sort in [ListSort::Path, ListSort::Updated, ListSort::Created] {
        let args = |cursor: Option<String>| ListNotesArgs {
            folder: Some("z/pages".into()),
            sort: Some(sort),
            limit: Some(10),
            cursor,
            ..Default::default()
        };
        let everything = engine.list_notes(&ListNotesArgs { limit: Some(200), ..args(None) }).unwrap();
        let first = engine.list_notes(&args(None)).unwrap();
        assert_eq!((first.total, first.notes.len()), (25, 10), "{sort:?}");
        assert_eq!(first.notes[..], everything.notes[..10], "{sort:?}");
        if sort == ListSort::Updated {
            assert_eq!(first.notes[0].path, "z/pages/note 24.md", "newest first");
        }
        let mut seen: Vec<String> = first.notes.iter().map(|n| n.path.clone()).collect();
        // Between pages: a note listed already and one not yet listed go away, a new one comes.
        let gone_seen = seen[3].clone();
        let gone_later = everything.notes[20].path.as_str();
        std::fs::remove_file(vault.join(&gone_seen)).unwrap();
        std::fs::remove_file(vault.join(gone_later)).unwrap();
        std::fs::write(folder.join("note 00a.md"), "# New\n").unwrap();
        engine.sync(false, None).unwrap();
        let mut cursor = first.next_cursor.clone();
        let mut pages = 1;
        while let Some(next) = cursor {
            let page = engine.list_notes(&args(Some(next))).unwrap();
            assert!(page.folders.is_empty(), "subfolders come on the first page only");
            seen.extend(page.notes.iter().map(|n| n.path.clone()));
            cursor = page.next_cursor;
            pages += 1;
            assert!(pages < 10, "paging does not end");
        }
        let mut unique = seen.clone();
        unique.sort();
        unique.dedup();
        assert_eq!(unique.len(), seen.len(), "{sort:?}: a note was listed twice: {seen:?}");
        for n in 0..25u64 {
            let path = format!("z/pages/note {n:02}.md");
            if path != gone_seen && path != gone_later {
                assert!(seen.contains(&path), "{sort:?}: {path} was missed: {seen:?}");
            }
        }
        assert!(!seen.iter().any(|p| p == gone_later), "{sort:?}: a removed note was listed");
        // Put the vault back for the next order.
        for n in 0..25u64 {
            let file = folder.join(format!("note {n:02}.md"));
            std::fs::write(&file, format!("# Note {n:02}\n\n#paged\n")).unwrap();
            let at = base + std::time::Duration::from_secs(60 * n);
            std::fs::File::options().write(true).open(&file).unwrap().set_modified(at).unwrap();
        }
        std::fs::remove_file(folder.join("note 00a.md")).unwrap();
        engine.sync(false, None).unwrap();
    }
}

/// Issue 34: by time, a note edited between two pages moved in front of the
/// cursor and no later page listed it. Now the notes modified since the first
/// page come after the others, oldest change first: a note not listed yet and
/// edited (even twice) is listed, one edited after its page is listed again
/// with its new time, a new note is listed, and no other note twice.
#[test]
fn issue_34_list_notes_by_time_misses_no_note_edited_between_pages() {
    let (_tmp, vault) = common::temp_vault();
    let folder = vault.join("z/timed");
    std::fs::create_dir_all(&folder).unwrap();
    let base = std::time::SystemTime::now() - std::time::Duration::from_secs(86_400);
    let put = |n: u64, at: std::time::SystemTime| {
        let file = folder.join(format!("note {n:02}.md"));
        std::fs::write(&file, format!("---\ncreated: 2020-01-{:02}\n---\n# Note {n:02}\n", n + 1)).unwrap();
        std::fs::File::options().write(true).open(&file).unwrap().set_modified(at).unwrap();
    };
    for sort in [ListSort::Updated, ListSort::Created] {
        for n in 0..12u64 {
            put(n, base + std::time::Duration::from_secs(60 * n));
        }
        let engine = open(&vault);
        let args = |cursor: Option<String>| ListNotesArgs {
            folder: Some("z/timed".into()),
            sort: Some(sort),
            limit: Some(4),
            cursor,
            ..Default::default()
        };
        let first = engine.list_notes(&args(None)).unwrap();
        let listed: Vec<&str> = first.notes.iter().map(|n| n.path.as_str()).collect();
        assert_eq!(
            listed,
            ["z/timed/note 11.md", "z/timed/note 10.md", "z/timed/note 09.md", "z/timed/note 08.md"]
        );
        let mut seen: Vec<String> = listed.iter().map(|p| (*p).to_owned()).collect();
        let mut cursor = first.next_cursor;
        let mut edits = 0;
        while let Some(next) = cursor {
            // Between pages: the oldest note not listed yet is edited, once on
            // the first turn and again on the second; a listed note too; a note comes.
            if edits < 2 {
                let now = std::time::SystemTime::now() + std::time::Duration::from_secs(edits);
                put(0, now);
                if edits == 0 {
                    put(10, now);
                    std::fs::write(folder.join("note new.md"), "# New\n").unwrap();
                }
                engine.sync(false, None).unwrap();
                edits += 1;
            }
            let page = engine.list_notes(&args(Some(next))).unwrap();
            seen.extend(page.notes.iter().map(|n| n.path.clone()));
            cursor = page.next_cursor;
            assert!(seen.len() < 40, "paging does not end: {seen:?}");
        }
        for n in 0..12u64 {
            let path = format!("z/timed/note {n:02}.md");
            assert!(seen.contains(&path), "{sort:?}: {path} was missed: {seen:?}");
        }
        assert!(seen.iter().any(|p| p == "z/timed/note new.md"), "{sort:?}: {seen:?}");
        let twice: Vec<&String> =
            seen.iter().filter(|p| seen.iter().filter(|q| q == p).count() > 1).collect();
        assert!(
            twice.iter().all(|p| *p == "z/timed/note 10.md"),
            "{sort:?}: only the note edited after its page comes twice: {seen:?}"
        );
        assert_eq!(seen.iter().filter(|p| *p == "z/timed/note 00.md").count(), 1, "{sort:?}: {seen:?}");
        drop(engine);
        std::fs::remove_file(folder.join("note new.md")).unwrap();
    }
}

/// The unlinked mentions of every note, as `audit_vault` lists them.
fn mentions(engine: &Engine) -> Vec<(String, Option<u32>, String)> {
    let args =
        AuditArgs { checks: Some(vec![AuditCheck::UnlinkedMention]), limit: Some(500), ..Default::default() };
    audit(engine, args).findings.into_iter().map(|f| (f.path, f.line, f.message)).collect()
}

/// Issue 15 at scale: the engine keeps what each note's prose mentions between
/// audits and reads again only what changed: a note whose record changed, and an
/// unchanged note holding the words of a name gained (a new note's title) or
/// lost (a title changed). The kept answer equals a fresh engine's. A name that
/// does not end on a word boundary (`Internal link` in "Internal links") no
/// longer hides a mention inside it (`links`).
#[test]
fn issue15_unlinked_mentions_kept_between_audits_follow_every_change() {
    let (_tmp, vault) = common::messy_vault();
    std::fs::write(vault.join("z/Sea.md"), "# Sea\n\nThe lighthouse keeper waves at 备份仓库的船.\n")
        .unwrap();
    std::fs::write(vault.join("z/Links.md"), "# Links\n").unwrap();
    std::fs::write(vault.join("z/Internal link.md"), "# Internal link\n").unwrap();
    std::fs::write(vault.join("z/Guide.md"), "# Guide\n\nInternal links are handy.\n").unwrap();
    let engine = open(&vault);
    let first = mentions(&engine);
    let has = |found: &[(String, Option<u32>, String)], path: &str, line: u32, message: &str| {
        found.iter().any(|(p, l, m)| p == path && *l == Some(line) && m == message)
    };
    assert!(has(&first, "z/Trusty.md", 9, "mentions `Rust` (z/Rust.md) without linking it"), "{first:#?}");
    assert!(
        has(&first, "z/Sea.md", 3, "mentions `备份仓库` (z/备份仓库.md) without linking it"),
        "{first:#?}"
    );
    assert!(has(&first, "z/Guide.md", 3, "mentions `links` (z/Links.md) without linking it"), "{first:#?}");
    assert!(!first.iter().any(|(_, _, m)| m.contains("Lighthouse")), "{first:#?}");

    // A name gained (the new note's title, written in Sea.md, which does not
    // change), a name lost (Rust.md's title), a note changed.
    std::fs::write(vault.join("z/Lighthouse keeper.md"), "# Lighthouse keeper\n").unwrap();
    std::fs::write(vault.join("z/Rust.md"), "---\ntags: [synthesis]\nstatus: wip\n---\n# Oxide\n").unwrap();
    std::fs::write(vault.join("z/Guide.md"), "# Guide\n\nSee the sea.\n\nInternal links are handy.\n")
        .unwrap();
    engine.sync(false, None).unwrap();
    let kept = mentions(&engine);
    assert!(
        has(&kept, "z/Sea.md", 3, "mentions `lighthouse keeper` (z/Lighthouse keeper.md) without linking it"),
        "{kept:#?}"
    );
    assert!(!kept.iter().any(|(p, _, m)| p == "z/Trusty.md" && m.contains("`Rust`")), "{kept:#?}");
    assert!(has(&kept, "z/Guide.md", 5, "mentions `links` (z/Links.md) without linking it"), "{kept:#?}");
    assert!(has(&kept, "z/Guide.md", 3, "mentions `sea` (z/Sea.md) without linking it"), "{kept:#?}");
    // A fresh engine without the saved mentions reads every note.
    std::fs::remove_file(vault.join(".kb").join(kb_mcp::sandbox::MENTIONS_CACHE)).unwrap();
    let fresh = Engine::open(&EngineOptions { vault: vault.clone(), index_dir: None }).unwrap();
    assert_eq!(kept, mentions(&fresh), "what the engine kept differs from a fresh audit");
    assert_eq!(mentions(&engine), kept, "a second audit answers the same");
}

/// Issue 15 at scale (the full audit of 100,000 notes in under 3 s): a new
/// process read every note again to find unlinked mentions, 90 % of a first
/// audit. The first audit now saves what each note's prose mentions beside the
/// index, and an engine opened later starts from it: it reads no note when
/// nothing changed, and only the notes it must after changes made by another
/// process (a changed note; an unchanged note holding a name gained, a new
/// note's title; one holding a name lost). Its findings equal an audit that
/// reads every note.
#[test]
fn issue15_a_new_process_finds_mentions_without_reading_every_note() {
    use kb_mcp::engine::timing;
    let (_tmp, vault) = common::messy_vault();
    std::fs::write(vault.join("z/Sea.md"), "# Sea\n\nThe lighthouse keeper waves at 备份仓库的船.\n")
        .unwrap();
    let cache = vault.join(".kb").join(kb_mcp::sandbox::MENTIONS_CACHE);
    let first = mentions(&open(&vault));
    assert!(cache.is_file(), "the first audit saved no mentions beside the index");
    let notes_read = || timing::take().iter().any(|(stage, _)| *stage == "audit_mention_read_notes");

    let again = open(&vault);
    timing::take();
    assert_eq!(mentions(&again), first, "a new process found other mentions");
    assert!(!notes_read(), "a new process read notes to find mentions though none changed");
    drop(again);

    // Another process adds a note named in Sea.md, renames Rust.md's title and
    // changes Guide.md.
    std::fs::write(vault.join("z/Lighthouse keeper.md"), "# Lighthouse keeper\n").unwrap();
    std::fs::write(vault.join("z/Rust.md"), "---\ntags: [synthesis]\nstatus: wip\n---\n# Oxide\n").unwrap();
    std::fs::write(vault.join("z/Guide.md"), "# Guide\n\nSee the sea.\n").unwrap();
    drop(open(&vault));
    let later = open(&vault);
    timing::take();
    let found = mentions(&later);
    assert!(notes_read(), "the notes that may mention a new name were not read");
    let has = |path: &str, message: &str| found.iter().any(|(p, _, m)| p == path && m == message);
    assert!(has("z/Sea.md", "mentions `lighthouse keeper` (z/Lighthouse keeper.md) without linking it"));
    assert!(has("z/Guide.md", "mentions `sea` (z/Sea.md) without linking it"), "{found:#?}");
    assert!(!found.iter().any(|(p, _, m)| p == "z/Trusty.md" && m.contains("`Rust`")), "{found:#?}");
    std::fs::remove_file(&cache).unwrap();
    let cold = Engine::open(&EngineOptions { vault: vault.clone(), index_dir: None }).unwrap();
    assert_eq!(mentions(&cold), found, "the saved mentions differ from a reading of every note");
}

/// The big note of issue 13's size report: 459 KiB, a heading every 1.5 KB.
fn issue13_big_note() -> String {
    let mut text = String::from("---\ntitle: Big note\n---\n# Big note\n");
    let mut n = 0;
    while text.len() < 459 * 1024 {
        n += 1;
        text.push_str(&format!("\n## Section {n}\n\n{}\n", "Syncing is not a backup. ".repeat(60)));
    }
    text
}

/// Issue 13 (lean answers): `read_note` on a 459 KB note answered a 256 KiB page,
/// and every page, however far in and however small, carried the whole outline.
/// The default page is 64 KiB (`[limits] read_page_bytes`), `max_bytes` still
/// reaches `read_max_bytes`, and the outline comes with the first page only.
#[test]
fn issue13_read_note_pages_64_kib_by_default_and_sends_the_outline_once() {
    let (_tmp, vault) = common::temp_vault();
    let text = issue13_big_note();
    std::fs::write(vault.join("z/big.md"), &text).unwrap();
    let engine = open(&vault);
    let read = |offset: Option<u64>, max_bytes: Option<u64>| {
        engine
            .read_note(&ReadNoteArgs {
                path: Some("z/big.md".into()),
                offset,
                max_bytes,
                ..Default::default()
            })
            .unwrap()
    };
    let first = read(None, None);
    assert_eq!(first.content.len(), 65_536);
    assert_eq!(first.next_offset, Some(65_536));
    assert!(!first.outline.is_empty() && first.outline[0].text == "Big note", "{:?}", &first.outline[..1]);
    let second = read(first.next_offset, None);
    assert_eq!(second.content, text[65_536..131_072]);
    assert!(second.outline.is_empty(), "the outline came again with a later page");
    assert!(!second.outline_truncated && second.outline_omitted == 0);
    let small = read(Some(100_000), Some(2048));
    assert!(small.outline.is_empty() && small.content.len() == 2048);
    // An agent may still ask for up to read_max_bytes.
    assert_eq!(read(None, Some(262_144)).content.len(), 262_144);
    assert_eq!(read(None, Some(10_000_000)).content.len(), 262_144);
    // The default page is configurable.
    let config = std::fs::read_to_string(vault.join("kb.toml")).unwrap();
    assert!(config.trim_end().ends_with("proposal_max_bytes = 2097152"), "[limits] comes last");
    std::fs::write(vault.join("kb.toml"), config + "read_page_bytes = 1000\n").unwrap();
    let engine = open(&vault);
    let page =
        engine.read_note(&ReadNoteArgs { path: Some("z/big.md".into()), ..Default::default() }).unwrap();
    assert_eq!((page.content.len(), page.next_offset), (1000, Some(1000)));
}

fn audit(engine: &Engine, args: AuditArgs) -> Audit {
    engine.audit_vault(&args).unwrap()
}

/// `check path:line message` lines, for comparing with what is expected.
fn finding_lines(findings: &[Finding]) -> Vec<String> {
    findings
        .iter()
        .map(|f| {
            let line = f.line.map_or(String::new(), |l| format!(":{l}"));
            format!("{} {}{line} {}", f.check.name(), f.path, f.message)
        })
        .collect()
}

/// Issue 15: every check finds exactly what the messy vault holds and nothing
/// else, by path, line and check, with the mechanical fixes it can offer.
#[cfg(unix)]
#[test]
fn issue15_audit_vault_finds_each_problem_of_a_messy_vault() {
    let (_tmp, vault) = common::messy_vault();
    let engine = open(&vault);
    let all = audit(&engine, AuditArgs { limit: Some(500), ..Default::default() });
    let expected = [
        "unregistered_tag z/Rust.md tag #synthesis is not in the tag registry docs/tags.md; did you mean #type/synthesis?",
        "frontmatter z/Rust.md frontmatter `status` must be one of draft, done, found \"wip\"",
        "frontmatter z/Trusty.md frontmatter lacks `tags`, which [lint] requires of every note",
        "unregistered_tag z/Trusty.md tag #gitt is not in the tag registry docs/tags.md; did you mean #git?",
        "unlinked_mention z/Trusty.md:9 mentions `Rust` (z/Rust.md) without linking it",
        "duplicate_title z/a/Setup.md its title `Setup` is also the title or an alias of z/b/Setup.md",
        "empty_note z/a/Setup.md nothing but frontmatter and a title",
        "duplicate_title z/b/Setup.md its title `Setup` is also the title or an alias of z/a/Setup.md",
        "skipped_file z/bad.md not served as a note: not UTF-8 (invalid byte 0xE9 at offset 3; perhaps Latin-1, GBK or another legacy encoding); convert the file to UTF-8 to index it",
        "frontmatter z/daily/2026-03-02.md frontmatter lacks `created`, which [lint] requires of notes under z/daily/",
        "unregistered_tag z/daily/2026-03-02.md tag #daily is not in the tag registry docs/tags.md",
        "unlinked_mention z/daily/2026-03-02.md:4 mentions `备份仓库` (z/备份仓库.md) without linking it",
        "broken_anchor z/Git 远程仓库.md:8 [[备份仓库#同步不等与备份]]: z/备份仓库.md has no heading `同步不等与备份`; did you mean `同步不等于备份`?",
        "ambiguous_link z/Git 远程仓库.md:10 [[Setup]] could mean 2 notes: z/a/Setup.md, z/b/Setup.md; it opens the first",
        "oversize_note z/Large note.md 1451 bytes, more than read_note returns at once (read_max_bytes = 1000): split it",
        "broken_anchor z/Large note.md:6 [[Rust#^nope]]: z/Rust.md has no block ^nope",
        "orphan z/孤立笔记.md no note links here and it links to no note",
        // Its one link names a block Rust lacks: no link leads anywhere.
        "orphan z/Large note.md no note links here and it links to no note",
        "moc_missing z/孤立笔记.md it carries #backup, but the map of content z/Backup MOC.md does not link it",
        "broken_link z/Backup MOC.md:7 [[备份仓]] leads to no note or file",
        "broken_link z/Backup MOC.md:8 [[Nonexistent thing]] leads to no note or file",
    ];
    let mut got = finding_lines(&all.findings);
    let mut want: Vec<String> = expected.iter().map(|s| (*s).to_owned()).collect();
    got.sort();
    want.sort();
    assert_eq!(got, want);
    assert_eq!(all.total, 21);
    assert_eq!(all.errors, 7, "2 broken links, 2 broken anchors, 3 frontmatter problems");
    let counts: Vec<(&str, u64)> = all.counts.iter().map(|(c, n)| (c.as_str(), *n)).collect();
    assert_eq!(
        counts,
        [
            ("ambiguous_link", 1),
            ("broken_anchor", 2),
            ("broken_link", 2),
            ("duplicate_title", 2),
            ("empty_note", 1),
            ("frontmatter", 3),
            ("moc_missing", 1),
            ("orphan", 2),
            ("oversize_note", 1),
            ("skipped_file", 1),
            ("unlinked_mention", 2),
            ("unregistered_tag", 3),
        ]
    );
    assert_eq!(all.checks_run.len(), 12);
    // Severities: errors for what leads nowhere or breaks a rule.
    for f in &all.findings {
        let want = match f.check {
            AuditCheck::BrokenLink | AuditCheck::BrokenAnchor | AuditCheck::Frontmatter => Severity::Error,
            AuditCheck::Orphan | AuditCheck::UnlinkedMention => Severity::Info,
            _ => Severity::Warning,
        };
        assert_eq!(f.severity, want, "{f:?}");
    }
    // Fixes: the note a broken link meant, the heading an anchor meant, the
    // registered tag nearest, the line a map of content lacks.
    let fixes: Vec<(String, Option<String>, String)> = all
        .findings
        .iter()
        .filter_map(|f| f.fix.as_ref().map(|x| (x.path.clone(), x.old.clone(), x.new.clone())))
        .collect();
    assert_eq!(
        fixes,
        [
            ("z/Backup MOC.md".to_owned(), Some("备份仓".to_owned()), "备份仓库".to_owned()),
            ("z/Git 远程仓库.md".to_owned(), Some("同步不等与备份".to_owned()), "同步不等于备份".to_owned()),
            ("z/Rust.md".to_owned(), Some("synthesis".to_owned()), "type/synthesis".to_owned()),
            ("z/Trusty.md".to_owned(), Some("gitt".to_owned()), "git".to_owned()),
            ("z/Backup MOC.md".to_owned(), None, "- [[孤立笔记]]".to_owned()),
        ]
    );
    // Issue 34: only the line is mechanical; the names, the heading and the
    // tags are guesses, suggestions for a person.
    let mechanical: Vec<bool> =
        all.findings.iter().filter_map(|f| f.fix.as_ref()).map(|x| x.mechanical).collect();
    assert_eq!(mechanical, [false, false, false, false, true]);
    // The order is by path, line, check; the same from run to run.
    let again = audit(&engine, AuditArgs { limit: Some(500), ..Default::default() });
    assert_eq!(again.findings, all.findings);
    let paths: Vec<&str> = all.findings.iter().map(|f| f.path.as_str()).collect();
    let mut sorted = paths.clone();
    sorted.sort();
    assert_eq!(paths, sorted);
    // A folder and a choice of checks narrow it.
    let daily = audit(&engine, AuditArgs { folder: Some("z/daily".into()), ..Default::default() });
    assert_eq!(daily.total, 3, "{:#?}", finding_lines(&daily.findings));
    let broken = audit(
        &engine,
        AuditArgs { checks: Some(vec![AuditCheck::BrokenLink, AuditCheck::Orphan]), ..Default::default() },
    );
    assert_eq!(finding_lines(&broken.findings).len(), 4, "2 broken links, 2 orphans");
    assert_eq!(broken.checks_run, [AuditCheck::BrokenLink, AuditCheck::Orphan]);
    assert_eq!(broken.counts.len(), 2);
}

/// Issue 15: pages of findings follow each other without a repeat or a gap,
/// also when notes change between two pages; bad arguments are clear errors.
#[cfg(unix)]
#[test]
fn issue15_audit_vault_pages_stay_stable_and_refuses_bad_arguments() {
    let (_tmp, vault) = common::messy_vault();
    let engine = open(&vault);
    let everything = audit(&engine, AuditArgs { limit: Some(500), ..Default::default() }).findings;
    let first = audit(&engine, AuditArgs { limit: Some(6), ..Default::default() });
    assert_eq!((first.findings.len(), first.total), (6, 21));
    assert_eq!(first.findings[..], everything[..6]);
    // A new note sorting before the cursor (an orphan) and one after it.
    std::fs::write(vault.join("z/0 first.md"), "---\ntags: [git]\n---\nalone\n").unwrap();
    std::fs::write(vault.join("z/zz last.md"), "---\ntags: [git]\n---\nalone too\n").unwrap();
    engine.sync(false, None).unwrap();
    let mut seen = first.findings.clone();
    let mut cursor = first.next_cursor.clone();
    let mut pages = 1;
    while let Some(next) = cursor {
        let page = audit(&engine, AuditArgs { limit: Some(6), cursor: Some(next), ..Default::default() });
        seen.extend(page.findings);
        cursor = page.next_cursor;
        pages += 1;
        assert!(pages < 10, "paging does not end");
    }
    let lines = finding_lines(&seen);
    let mut unique = lines.clone();
    unique.dedup();
    assert_eq!(unique.len(), lines.len(), "a finding came twice");
    for f in finding_lines(&everything) {
        assert!(lines.contains(&f), "missed {f}");
    }
    assert!(lines.contains(&"orphan z/zz last.md no note links here and it links to no note".to_owned()));
    assert!(!lines.iter().any(|l| l.contains("z/0 first.md")), "before the cursor: on no later page");

    let fail = |args: AuditArgs| engine.audit_vault(&args).unwrap_err();
    let err = fail(AuditArgs { cursor: Some("bogus".into()), ..Default::default() });
    assert_eq!(err.code, ErrorCode::InvalidArgument);
    assert!(err.message.contains("not a cursor audit_vault returned"), "{}", err.message);
    let err = fail(AuditArgs {
        checks: Some(vec![AuditCheck::Orphan]),
        cursor: first.next_cursor.clone(),
        ..Default::default()
    });
    assert!(err.message.contains("other checks or another folder"), "{}", err.message);
    let err = fail(AuditArgs { folder: Some("../etc".into()), ..Default::default() });
    assert_eq!(err.code, ErrorCode::PathDenied);
    let err = fail(AuditArgs { folder: Some("z/nothing".into()), ..Default::default() });
    assert_eq!(err.code, ErrorCode::NotFound);
    let err = fail(AuditArgs { limit: Some(501), ..Default::default() });
    assert!(err.message.contains("between 1 and 500"), "{}", err.message);
    let err = fail(AuditArgs { checks: Some(vec![]), ..Default::default() });
    assert!(err.message.contains("`checks` is empty"), "{}", err.message);
}

/// Issue 15 at scale: `kb-index audit` pages through every finding (72 pages of
/// 500 on the whole obsidian-help vault), and each page ran every check again,
/// so the whole audit cost 72 audits (41 s). The findings of the last audit are
/// kept while the catalog, configuration, checks and folder stay the same: a
/// later page runs no check and does not walk the vault for skipped files (the
/// engine's timing stages say what ran), and a
/// sync that changes a note brings the checks back, with the new finding.
#[test]
fn issue15_later_audit_pages_reuse_the_findings_until_the_vault_changes() {
    use kb_mcp::engine::timing;
    let (_tmp, vault) = common::messy_vault();
    let engine = open(&vault);
    let ran = || -> Vec<&'static str> {
        timing::take()
            .into_iter()
            .map(|(stage, _)| stage)
            .filter(|s| ["audit_skipped", "audit_links", "audit_mentions"].contains(s))
            .collect()
    };
    timing::take();
    let first = audit(&engine, AuditArgs { limit: Some(6), ..Default::default() });
    assert_eq!(ran(), ["audit_skipped", "audit_links", "audit_mentions"], "the first page runs the checks");
    let second =
        audit(&engine, AuditArgs { limit: Some(6), cursor: first.next_cursor.clone(), ..Default::default() });
    assert_eq!(ran(), Vec::<&str>::new(), "a later page ran the checks or walked the vault again");
    assert_eq!(second.total, first.total);
    // Other checks, or another folder: run again.
    let orphans = AuditArgs { checks: Some(vec![AuditCheck::Orphan]), ..Default::default() };
    audit(&engine, orphans.clone());
    assert_eq!(ran(), Vec::<&str>::new(), "orphans need neither links nor mentions");
    audit(&engine, AuditArgs { folder: Some("z".into()), ..Default::default() });
    assert_eq!(ran(), ["audit_skipped", "audit_links", "audit_mentions"], "another folder is another audit");
    // A change in the vault: the checks run again and see it.
    std::fs::write(vault.join("z/0 new.md"), "# New\n\n[[nowhere at all]]\n").unwrap();
    engine.sync(false, None).unwrap();
    let after = audit(&engine, AuditArgs { limit: Some(500), ..Default::default() });
    assert_eq!(ran(), ["audit_skipped", "audit_links", "audit_mentions"], "a changed vault is audited again");
    assert!(
        after.findings.iter().any(|f| f.path == "z/0 new.md" && f.check == AuditCheck::BrokenLink),
        "{:#?}",
        after.findings
    );
    assert!(after.total > first.total);
}

/// Issue 15: `fix: true` stages the mechanical fixes, touching no note;
/// applying them removes those findings. In the messy vault only the map of
/// content's missing line is mechanical (issue 34): `[[备份仓]]` for 备份仓库, an
/// anchor one character off, `#synthesis` for `#type/synthesis` and `#gitt`
/// for `#git` are likely but guessed, and stay suggestions.
#[cfg(unix)]
#[test]
fn issue15_audit_vault_stages_fixes_that_apply_cleanly() {
    let (_tmp, vault) = common::messy_vault();
    let engine = open(&vault);
    let before = common::snapshot(&vault.join("z"));
    let staged = audit(&engine, AuditArgs { fix: true, limit: Some(1), ..Default::default() });
    assert_eq!(staged.proposals.len(), 1, "the map of content's line");
    assert_eq!(unstaged(&staged), [("suggestion", 4)]);
    assert_eq!(common::snapshot(&vault.join("z")), before, "staging touches no note");
    let pending = engine.list_proposals(&ListProposalsArgs::default()).unwrap();
    let targets: Vec<&str> = pending.proposals.iter().map(|p| p.target.as_str()).collect();
    assert_eq!(targets, ["z/Backup MOC.md"]);
    apply_all(&engine, &staged.proposals);
    let read = |path: &str| std::fs::read_to_string(vault.join(path)).unwrap();
    assert_eq!(
        read("z/Backup MOC.md"),
        "---\ntags: [moc, backup]\n---\n# Backup MOC\n\n- [[备份仓库]]\n- [[备份仓]]\n- [[Nonexistent thing]]\n- [[孤立笔记]]\n"
    );
    let after = audit(&engine, AuditArgs { limit: Some(500), ..Default::default() });
    let left: Vec<(&str, u64)> =
        after.counts.iter().filter(|(_, n)| **n > 0).map(|(c, n)| (c.as_str(), *n)).collect();
    assert_eq!(
        left,
        [
            ("ambiguous_link", 1),
            ("broken_anchor", 2),
            ("broken_link", 2),
            ("duplicate_title", 2),
            ("empty_note", 1),
            ("frontmatter", 3),
            ("orphan", 1),
            ("oversize_note", 1),
            ("skipped_file", 1),
            ("unlinked_mention", 2),
            ("unregistered_tag", 3),
        ]
    );
    assert!(
        after.findings.iter().filter_map(|f| f.fix.as_ref()).all(|x| !x.mechanical),
        "every mechanical fix was made"
    );
    // Nothing left to stage: no proposal, the suggestions counted.
    let again = audit(&engine, AuditArgs { fix: true, ..Default::default() });
    assert!(again.proposals.is_empty());
    assert_eq!(unstaged(&again), [("suggestion", 4)]);
}

/// A small vault's notes: path and text.
type Notes<'a> = &'a [(&'a str, &'a str)];

/// A vault for the audit's fixes: notes in `z/`, the tag registry
/// `docs/tags.md` (registering `#moc`, `#backup`, `#work/health` and
/// `#to-read`), `[limits]` lines from `limits`, then `files`.
fn fix_vault(limits: &str, files: Notes<'_>) -> (tempfile::TempDir, std::path::PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    let vault = dir.path().join("vault");
    let config = format!(
        "[vault]\nnotes = [\"z\"]\nstandards = [\"docs\"]\n[tags]\nregistry = \"docs/tags.md\"\n[limits]\n{limits}"
    );
    let registry = "# Tags\n\n- #moc\n- #backup\n- #work/health\n- #to-read\n";
    for (path, text) in [("kb.toml", config.as_str()), ("docs/tags.md", registry)].iter().chain(files) {
        let file = vault.join(path);
        std::fs::create_dir_all(file.parent().unwrap()).unwrap();
        std::fs::write(file, text).unwrap();
    }
    (dir, vault)
}

/// The pending proposals, newest first.
fn pending_proposals(engine: &Engine) -> Vec<ProposalEntry> {
    engine.list_proposals(&ListProposalsArgs { status: None, limit: Some(500) }).unwrap().proposals
}

/// The fixes an audit left unstaged, by reason.
fn unstaged(audit: &Audit) -> Vec<(&str, u64)> {
    audit.unstaged.iter().map(|(reason, fixes)| (reason.as_str(), *fixes)).collect()
}

fn apply_all(engine: &Engine, ids: &[String]) {
    for id in ids {
        engine
            .apply_proposal(&ApplyArgs { proposal_id: id.clone() }, kb_mcp::engine::types::Actor::Cli)
            .unwrap();
    }
}

/// Issue 34: `audit_vault {fix: true}` staged fixes that change meaning. Each
/// of the issue's examples alone in a vault: a link to a chapter, a date or a
/// version differing in a digit, a tag sharing only its last segment and an
/// anchor to another section keep their fix as a suggestion and stage nothing;
/// a map of content ending inside an unclosed fence gets no line appended
/// inside it; a tag is fixed in the frontmatter but not in its YAML comments.
#[test]
fn issue34_audit_fix_never_stages_a_fix_that_changes_meaning() {
    // What, the vault's notes, the text that finds the finding, the fix suggested.
    let suggestions: [(&str, Notes<'_>, &str, &str); 5] = [
        (
            "a chapter's number",
            &[
                ("z/Chapter 2.md", "# Chapter 2\n"),
                ("z/Book.md", "# Book\n\n[[Chapter 2]], then [[Chapter 3]].\n"),
            ],
            "[[Chapter 3]] leads",
            "Chapter 2",
        ),
        (
            "a date",
            &[
                ("z/2024-03-15.md", "# 2024-03-15\n"),
                ("z/Journal.md", "# Journal\n\n[[2024-03-15]], [[2024-03-16]]\n"),
            ],
            "[[2024-03-16]] leads",
            "2024-03-15",
        ),
        (
            "a version",
            &[
                ("z/Project Alpha v1.md", "# Project Alpha v1\n"),
                ("z/Plan.md", "# Plan\n\n[[Project Alpha v1]], next [[Project Alpha v2]]\n"),
            ],
            "[[Project Alpha v2]] leads",
            "Project Alpha v1",
        ),
        (
            "a tag's parent",
            &[("z/Gym.md", "---\ntags: [personal/health]\n---\n# Gym\n")],
            "#personal/health",
            "work/health",
        ),
        (
            "another section",
            &[
                ("z/Guide.md", "# Guide\n\n## Step 1\n\n## Step 2\n"),
                ("z/Howto.md", "# Howto\n\n[[Guide#Step 3]]\n"),
            ],
            "has no heading `Step 3`",
            "Step 1",
        ),
    ];
    for (what, files, found_by, suggested) in suggestions {
        let (_tmp, vault) = fix_vault("", files);
        let engine = open(&vault);
        let before = common::snapshot(&vault.join("z"));
        let audited = audit(&engine, AuditArgs { fix: true, limit: Some(500), ..Default::default() });
        let fix = audited
            .findings
            .iter()
            .find(|f| f.message.contains(found_by))
            .and_then(|f| f.fix.as_ref())
            .unwrap_or_else(|| panic!("{what}: no fix for {found_by}: {:#?}", audited.findings));
        assert_eq!(fix.new, suggested, "{what}");
        assert!(!fix.mechanical, "{what}: a suggestion, not a mechanical fix");
        assert_eq!(audited.proposals, Vec::<String>::new(), "{what}: staged");
        assert!(pending_proposals(&engine).is_empty(), "{what}");
        assert_eq!(unstaged(&audited), [("suggestion", 1)], "{what}");
        assert_eq!(common::snapshot(&vault.join("z")), before, "{what}: a note changed");
    }

    // A map of content whose last code fence is never closed: its missing
    // line would be appended inside the fence, as code.
    let moc =
        "---\ntags: [moc, backup]\n---\n# Backup MOC\n\n- [[Restore drills]]\n\n```sh\nrestic snapshots\n";
    let (_tmp, vault) = fix_vault(
        "",
        &[
            ("z/Backup MOC.md", moc),
            ("z/Restore drills.md", "---\ntags: [backup]\n---\n# Restore drills\n"),
            ("z/Offsite.md", "---\ntags: [backup]\n---\n# Offsite\n"),
        ],
    );
    let engine = open(&vault);
    let audited = audit(&engine, AuditArgs { fix: true, limit: Some(500), ..Default::default() });
    let fix = audited.findings.iter().find_map(|f| f.fix.as_ref()).unwrap();
    assert_eq!(
        (fix.path.as_str(), fix.new.as_str(), fix.mechanical),
        ("z/Backup MOC.md", "- [[Offsite]]", true)
    );
    assert_eq!(audited.proposals, Vec::<String>::new(), "appended inside the unclosed fence");
    assert!(pending_proposals(&engine).is_empty());
    assert_eq!(unstaged(&audited), [("code_or_comment", 1)]);
    let messages = audited.unstaged_messages();
    assert!(
        messages[0].starts_with("1 fix not staged: their only place is inside code or a comment"),
        "{messages:?}"
    );

    // A tag written differently from the registered one is fixed where it is
    // a value, and left as it is in the YAML comments beside it.
    let (_tmp, vault) = fix_vault(
        "",
        &[
            (
                "z/Reading.md",
                "---\ntags: [to_read]  # to_read: how the old scheme spelt it\n---\n# Reading\n",
            ),
            ("z/Queue.md", "---\ntags:\n  - to_read\n  # to_read, to_watch\n---\n# Queue\n"),
        ],
    );
    let engine = open(&vault);
    let audited = audit(&engine, AuditArgs { fix: true, limit: Some(500), ..Default::default() });
    assert_eq!(audited.proposals.len(), 1, "{:#?}", audited);
    assert!(audited.unstaged.is_empty(), "{:?}", audited.unstaged);
    apply_all(&engine, &audited.proposals);
    let read = |path: &str| std::fs::read_to_string(vault.join(path)).unwrap();
    assert_eq!(
        read("z/Reading.md"),
        "---\ntags: [to-read]  # to_read: how the old scheme spelt it\n---\n# Reading\n"
    );
    assert_eq!(read("z/Queue.md"), "---\ntags:\n  - to-read\n  # to_read, to_watch\n---\n# Queue\n");
}

/// Issue 34: what is the same name written differently (case, spacing,
/// punctuation, accents) is still staged, as one batch proposal per kind of
/// fix, so the person can reject one kind and keep the others: links (also one
/// with a display text, never in code), anchors, tags, maps of content. A note
/// is in one proposal of a call: its fixes of another kind wait for the next
/// call. The rest stay suggestions.
#[test]
fn issue34_audit_fix_stages_mechanical_fixes_one_proposal_per_kind() {
    let (_tmp, vault) = fix_vault(
        "",
        &[
            (
                "z/Restore drills.md",
                "---\ntags: [backup]\n---\n# Restore drills\n\n## Set up the target\n\nText.\n",
            ),
            ("z/Git 远程仓库.md", "# Git 远程仓库\n"),
            ("z/Café.md", "# Café\n"),
            ("z/Chapter 2.md", "# Chapter 2\n"),
            (
                "z/Notes.md",
                "---\ntags: [to_read]\n---\n# Notes\n\n[[restore-drills]], [[Git远程仓库]] and [[Cafe]]; [[Chapter 3]] is not written yet.\n",
            ),
            (
                "z/Other.md",
                "# Other\n\n```\n[[Restore_Drills]] in code stays\n```\n\n[[Restore_Drills|the drills]]\n",
            ),
            (
                "z/Anchors.md",
                "# Anchors\n\n[[Restore drills#Setup the target]], [[Restore drills#Set-up: the target]]\n",
            ),
            ("z/Reading.md", "---\ntags: [to_read]\n---\n# Reading\n"),
            ("z/Backup MOC.md", "---\ntags: [moc, backup]\n---\n# Backup MOC\n\n- [[Offsite]]\n"),
            ("z/Offsite.md", "---\ntags: [backup]\n---\n# Offsite\n\n[[Backup MOC]]\n"),
        ],
    );
    let engine = open(&vault);
    let before = common::snapshot(&vault.join("z"));
    let staged = audit(&engine, AuditArgs { fix: true, limit: Some(1), ..Default::default() });
    assert_eq!(common::snapshot(&vault.join("z")), before, "staging touches no note");
    assert_eq!(unstaged(&staged), [("later", 1), ("suggestion", 1)]);
    assert_eq!(staged.proposals.len(), 4, "{:#?}", staged);
    let mut listed: Vec<(String, String)> = pending_proposals(&engine)
        .into_iter()
        .map(|p| {
            assert_eq!(p.kind, ProposalKind::Batch);
            (p.reason.split(':').next().unwrap().to_owned(), p.summary)
        })
        .collect();
    listed.sort();
    assert_eq!(
        listed,
        [
            ("audit_vault fix (broken_anchor)".to_owned(), "batch: 1 patch".to_owned()),
            ("audit_vault fix (broken_link)".to_owned(), "batch: 2 patches".to_owned()),
            ("audit_vault fix (moc_missing)".to_owned(), "batch: 1 patch".to_owned()),
            ("audit_vault fix (unregistered_tag)".to_owned(), "batch: 1 patch".to_owned()),
        ]
    );
    apply_all(&engine, &staged.proposals);
    let read = |path: &str| std::fs::read_to_string(vault.join(path)).unwrap();
    assert_eq!(
        read("z/Notes.md"),
        "---\ntags: [to_read]\n---\n# Notes\n\n[[Restore drills]], [[Git 远程仓库]] and [[Café]]; [[Chapter 3]] is not written yet.\n"
    );
    assert_eq!(
        read("z/Other.md"),
        "# Other\n\n```\n[[Restore_Drills]] in code stays\n```\n\n[[Restore drills|the drills]]\n"
    );
    assert_eq!(
        read("z/Anchors.md"),
        "# Anchors\n\n[[Restore drills#Set up the target]], [[Restore drills#Set up the target]]\n"
    );
    assert_eq!(read("z/Reading.md"), "---\ntags: [to-read]\n---\n# Reading\n");
    assert_eq!(
        read("z/Backup MOC.md"),
        "---\ntags: [moc, backup]\n---\n# Backup MOC\n\n- [[Offsite]]\n- [[Restore drills]]\n"
    );
    // The next call stages what waited; the suggestion stays one.
    let next = audit(&engine, AuditArgs { fix: true, ..Default::default() });
    assert_eq!(next.proposals.len(), 1);
    assert_eq!(unstaged(&next), [("suggestion", 1)]);
    apply_all(&engine, &next.proposals);
    assert!(read("z/Notes.md").starts_with("---\ntags: [to-read]\n---\n"));
    let after = audit(&engine, AuditArgs { limit: Some(500), ..Default::default() });
    let fixes: Vec<(&str, bool)> = after
        .findings
        .iter()
        .filter_map(|f| f.fix.as_ref())
        .map(|x| (x.new.as_str(), x.mechanical))
        .collect();
    assert_eq!(fixes, [("Chapter 2", false)]);
}

/// Issue 34: one call staged 99 proposals, one per note, and the full inbox
/// refused every agent's proposal and the person's own `kb-index rm`. Now a
/// kind's fixes are one proposal of at most 100 notes; the rest wait for the
/// next call, and a note a pending proposal changes is left alone, so calls
/// never stage a fix twice.
#[test]
fn issue34_audit_fix_stages_a_kind_in_one_proposal_and_never_twice() {
    let mut files: Vec<(String, String)> = vec![("z/Restore drills.md".into(), "# Restore drills\n".into())];
    for n in 0..120 {
        files.push((format!("z/Note {n:03}.md"), format!("# Note {n:03}\n\n[[restore-drills]]\n")));
    }
    let files: Vec<(&str, &str)> = files.iter().map(|(p, t)| (p.as_str(), t.as_str())).collect();
    let (_tmp, vault) = fix_vault("", &files);
    let engine = open(&vault);
    let first = audit(&engine, AuditArgs { fix: true, ..Default::default() });
    assert_eq!(first.proposals.len(), 1);
    assert_eq!(unstaged(&first), [("later", 20)]);
    let listed = pending_proposals(&engine);
    assert_eq!(listed.len(), 1);
    assert_eq!(listed[0].summary, "batch: 100 patches");
    let second = audit(&engine, AuditArgs { fix: true, ..Default::default() });
    assert_eq!(second.proposals.len(), 1, "the 20 notes that waited");
    assert_eq!(unstaged(&second), [("pending", 100)]);
    let third = audit(&engine, AuditArgs { fix: true, ..Default::default() });
    assert_eq!(third.proposals, Vec::<String>::new(), "nothing staged twice");
    assert_eq!(unstaged(&third), [("pending", 120)]);
    assert_eq!(pending_proposals(&engine).len(), 2);
}

/// Issue 34: the fixes stage only while the inbox stays a quarter below its
/// caps, so a deletion (what `kb-index rm` stages) still fits after them. With
/// room for 8 proposals and 5 pending, the fixes may bring the inbox to 6 (a
/// quarter, 2, stays free): one kind is staged and two wait.
#[test]
fn issue34_audit_fix_leaves_a_quarter_of_the_inbox_free() {
    let (_tmp, vault) = fix_vault(
        "pending_max_count = 8\n",
        &[
            ("z/Restore drills.md", "---\ntags: [backup]\n---\n# Restore drills\n\n## Set up\n"),
            ("z/Notes.md", "# Notes\n\n[[restore-drills]]\n"),
            ("z/Anchors.md", "# Anchors\n\n[[Restore drills#Set-up]]\n"),
            ("z/Backup MOC.md", "---\ntags: [moc, backup]\n---\n# Backup MOC\n"),
        ],
    );
    let engine = open(&vault);
    for n in 0..5 {
        engine
            .propose_new_note(&ProposeNewArgs {
                title: format!("Idea {n}"),
                body: "An idea.\n".into(),
                reason: "test".into(),
                ..Default::default()
            })
            .unwrap();
    }
    let fixed = audit(&engine, AuditArgs { fix: true, ..Default::default() });
    assert_eq!(fixed.proposals.len(), 1, "{:#?}", fixed);
    assert_eq!(unstaged(&fixed), [("inbox_headroom", 2)]);
    let messages = fixed.unstaged_messages();
    assert!(
        messages[0].starts_with("2 fixes not staged: the audit stages only while a quarter"),
        "{messages:?}"
    );
    assert_eq!(pending_proposals(&engine).len(), 6);
    // What `kb-index rm` stages still fits.
    engine
        .propose_delete(&ProposeDeleteArgs { path: "z/Notes.md".into(), reason: "not needed".into() })
        .unwrap();
    let again = audit(&engine, AuditArgs { fix: true, ..Default::default() });
    assert_eq!(again.proposals, Vec::<String>::new());
    assert_eq!(pending_proposals(&engine).len(), 7);
}

/// Issue 15: `get_vault_overview {since}` lists the notes added, changed and
/// removed since an earlier overview's cursor, who changed them (an agent's or
/// the person's applied proposal, else outside kb-mcp), and the proposals
/// applied and rejected; another process reading the same index agrees; a bad
/// cursor is an argument error, and a rebuild since makes the answer incomplete.
#[test]
fn issue15_overview_since_lists_what_changed_and_who_changed_it() {
    let (_tmp, vault) = common::temp_vault();
    let engine = open(&vault);
    let first = engine.overview_since(Caller::Agent(Access::Read), None).unwrap().changes;
    assert!(first.added.is_empty() && first.changed.is_empty() && first.applied.is_empty(), "{first:?}");
    // Outside kb-mcp: a new note, an edit, a deletion.
    std::fs::write(vault.join("z/New idea.md"), "# New idea\n").unwrap();
    let drills = vault.join("z/Restore drills.md");
    let mut text = std::fs::read_to_string(&drills).unwrap();
    text.push_str("\nOne more drill.\n");
    std::fs::write(&drills, text).unwrap();
    std::fs::remove_file(vault.join("z/reading/孤立的想法.md")).unwrap();
    engine.sync(false, None).unwrap();
    // Through kb-mcp: an agent's patch applied, a new note the person rejected.
    let path = "z/备份仓库.md";
    let note = engine.read_note(&ReadNoteArgs { path: Some(path.into()), ..Default::default() }).unwrap();
    let patch = engine
        .propose_note_patch(&ProposePatchArgs {
            path: path.into(),
            base_hash: note.hash,
            reason: "test".into(),
            edits: serde_json::from_value(serde_json::json!([{"op": "append", "content": "\nmore\n"}]))
                .unwrap(),
        })
        .unwrap();
    engine
        .apply_proposal(
            &ApplyArgs { proposal_id: patch.proposal_id.clone() },
            kb_mcp::engine::types::Actor::Mcp,
        )
        .unwrap();
    let new = engine
        .propose_new_note(&ProposeNewArgs {
            title: "Rejected idea".into(),
            body: "no\n".into(),
            reason: "test".into(),
            ..Default::default()
        })
        .unwrap();
    engine.reject_proposal(&new.proposal_id, "not needed", kb_mcp::engine::types::Actor::Cli).unwrap();

    let later = Engine::open(&EngineOptions { vault: vault.clone(), index_dir: None }).unwrap();
    let changes = later.overview_since(Caller::Agent(Access::Read), Some(&first.cursor)).unwrap().changes;
    let notes =
        |list: &[ChangedNote]| list.iter().map(|n| format!("{} {}", n.path, n.by)).collect::<Vec<_>>();
    assert_eq!(notes(&changes.added), ["z/New idea.md outside"]);
    assert_eq!(notes(&changes.changed), ["z/Restore drills.md outside", "z/备份仓库.md mcp"]);
    assert_eq!(notes(&changes.removed), ["z/reading/孤立的想法.md outside"]);
    let events = |list: &[ProposalEvent]| {
        list.iter().map(|e| format!("{} {} {}", e.proposal_id, e.target, e.by)).collect::<Vec<_>>()
    };
    assert_eq!(events(&changes.applied), [format!("{} z/备份仓库.md mcp", patch.proposal_id)]);
    assert_eq!(events(&changes.rejected), [format!("{} z/Rejected idea.md cli", new.proposal_id)]);
    assert!(!changes.incomplete);
    assert_eq!(
        engine.overview_since(Caller::Agent(Access::Read), Some(&first.cursor)).unwrap().changes,
        changes
    );

    let quiet = later.overview_since(Caller::Agent(Access::Read), Some(&changes.cursor)).unwrap().changes;
    assert!(quiet.added.is_empty() && quiet.changed.is_empty() && quiet.removed.is_empty(), "{quiet:?}");
    assert!(quiet.applied.is_empty() && quiet.rejected.is_empty() && !quiet.incomplete, "{quiet:?}");
    for bad in ["bogus", "c1zz", "c1", "c16869"] {
        let err = later.overview_since(Caller::Agent(Access::Read), Some(bad)).unwrap_err();
        assert_eq!(err.code, ErrorCode::InvalidArgument, "{bad}");
        assert!(err.message.contains("not a cursor get_vault_overview returned"), "{}", err.message);
    }
    later.sync(true, None).unwrap();
    assert!(
        later.overview_since(Caller::Agent(Access::Read), Some(&changes.cursor)).unwrap().changes.incomplete
    );
}

/// Issue 13, "weak results must look weak": `随手记` and `共享笔记` matched
/// unrelated notes on a single character (`记`). A hit holding only lone CJK
/// characters of a query that has longer words is flagged `weak` and ranked
/// after every real match, in both searches; a real match found only in the
/// text still comes before a weak one found in a title.
#[test]
fn issue_13_a_match_on_a_lone_chinese_character_is_weak_and_ranked_last() {
    let dir = tempfile::tempdir().unwrap();
    let vault = dir.path();
    let notes = [
        ("随手记.md", "# 随手记\n\n随手记下想法，之后再整理。\n"),
        ("灵感.md", "# 灵感\n\n想到什么就随手写在卡片上。\n"),
        ("日记.md", "# 日记\n\n每天晚上写日记，记下发生的事。\n"),
        ("记账.md", "# 记账\n\n记账记账记账，每一笔都记。\n"),
        ("共享.md", "# 团队共享\n\n和同事共享笔记的办法。\n"),
        ("其他.md", "# 其他\n\n无关的内容。\n"),
    ];
    write_notes(vault, &notes);
    let engine = open(vault);
    let knowledge: Vec<(String, bool)> = engine
        .search_knowledge(&search("随手记"))
        .unwrap()
        .results
        .into_iter()
        .map(|hit| (hit.path, hit.weak))
        .collect();
    assert_eq!(
        knowledge,
        [
            ("随手记.md".to_owned(), false),
            ("灵感.md".to_owned(), false),
            ("记账.md".to_owned(), true),
            ("日记.md".to_owned(), true),
            ("共享.md".to_owned(), true),
        ]
    );
    let content: Vec<(String, bool)> = engine
        .search_note_content(&search("随手记"))
        .unwrap()
        .results
        .into_iter()
        .map(|hit| (hit.path, hit.weak))
        .collect();
    assert_eq!(&content[..2], [("随手记.md".to_owned(), false), ("灵感.md".to_owned(), false)]);
    assert!(content[2..].iter().all(|(_, weak)| *weak), "{content:?}");
    // Only a query's lone characters make a hit weak; whole words never do.
    for query in ["共享笔记", "随手", "记"] {
        let found = engine.search_knowledge(&search(query)).unwrap().results;
        assert!(!found.is_empty() && found.iter().all(|hit| !hit.weak), "{query}: {found:?}");
    }
    let shared = knowledge_paths(&engine, "共享笔记");
    assert_eq!(shared[0], "共享.md", "{shared:?}");
    assert!(!shared.contains(&"日记.md".to_owned()), "{shared:?}");
    // The flag is in the JSON only when set.
    let json = serde_json::to_value(engine.search_knowledge(&search("随手记")).unwrap()).unwrap();
    assert_eq!(json["results"][0].get("weak"), None);
    assert_eq!(json["results"][3]["weak"], true);
}

/// A vault in several languages of one script: `Canvas.md` in English, German,
/// Indonesian and Dutch, with four more notes in each language.
fn issue_13_translated_vault(vault: &std::path::Path, languages: &[&str]) {
    let canvas = [
        (
            "en",
            "Canvas is a plugin that lets you lay out your notes on a board. You can add cards and connect them with arrows.",
        ),
        (
            "de",
            "Canvas ist ein Plugin, mit dem du deine Notizen auf einer Fläche anordnen kannst. Du kannst Karten hinzufügen und sie mit Pfeilen verbinden.",
        ),
        (
            "id",
            "Canvas adalah plugin yang memungkinkan Anda menata catatan di papan. Anda dapat menambahkan kartu dan menghubungkannya dengan panah.",
        ),
        (
            "nl",
            "Canvas is een plugin waarmee je je notities op een bord kunt ordenen. Je kunt kaarten toevoegen en ze met pijlen verbinden.",
        ),
    ];
    let filler = [
        ("en", "This note is about the {} thing and what you do with it in the morning."),
        ("de", "Diese Notiz ist über das {} Ding und was du damit am Morgen machst, wenn die Sonne scheint."),
        ("id", "Catatan ini adalah tentang hal {} dan apa yang Anda lakukan dengan itu di pagi hari."),
        ("nl", "Deze notitie gaat over het {} ding en wat je ermee doet in de ochtend, als het licht is."),
    ];
    for (language, text) in canvas.iter().filter(|(l, _)| languages.contains(l)) {
        std::fs::create_dir_all(vault.join(language)).unwrap();
        std::fs::write(vault.join(language).join("Canvas.md"), format!("# Canvas\n\n{text}\n")).unwrap();
    }
    for (language, text) in filler.iter().filter(|(l, _)| languages.contains(l)) {
        // English holds the most notes: the vault's commonest language of its script.
        let count = if *language == "en" { 6 } else { 4 };
        for i in 0..count {
            let body = text.replace("{}", &format!("number{i}"));
            std::fs::write(
                vault.join(language).join(format!("note {i}.md")),
                format!("# Note {i}\n\n{body}\n"),
            )
            .unwrap();
        }
    }
}

/// Issue 13, "multilingual vaults": on the Obsidian help vault (33 languages in
/// folders) English questions ranked other-language notes first on a shared
/// word. In a vault holding several languages of one script, notes in the
/// query's language (told by its words, else the vault's commonest) come first;
/// a vault in one language ranks exactly as it did.
#[test]
fn issue_13_notes_in_the_query_language_rank_first_in_a_translated_vault() {
    let dir = tempfile::tempdir().unwrap();
    issue_13_translated_vault(dir.path(), &["en", "de", "id", "nl"]);
    let engine = open(dir.path());
    for query in ["canvas", "how do I use the canvas", "canvas plugin cards"] {
        assert_eq!(knowledge_paths(&engine, query)[0], "en/Canvas.md", "{query}");
        assert_eq!(content_paths(&engine, query)[0], "en/Canvas.md", "{query}");
    }
    assert_eq!(knowledge_paths(&engine, "wie benutze ich das Canvas")[0], "de/Canvas.md");
    assert_eq!(knowledge_paths(&engine, "bagaimana cara memakai canvas dengan catatan")[0], "id/Canvas.md");
    // Every translation is still found, only later.
    assert_eq!(knowledge_paths(&engine, "canvas").len(), 4);

    // English alone with a little German: the German note is no rival, the
    // ranking is BM25's as before (the shorter German note first).
    let single = tempfile::tempdir().unwrap();
    issue_13_translated_vault(single.path(), &["en"]);
    std::fs::create_dir_all(single.path().join("de")).unwrap();
    let german = "# Canvas\n\nCanvas ist ein Plugin für die Karten und die Notizen.\n";
    std::fs::write(single.path().join("de/Canvas.md"), german).unwrap();
    let engine = open(single.path());
    assert_eq!(knowledge_paths(&engine, "how do I use the canvas"), ["de/Canvas.md", "en/Canvas.md"]);
}

/// Issue 17: a sync that finds nothing new used to swap in a fresh catalog, so
/// the next graph tool built the whole link graph again (seconds at 100,000
/// notes, on every call while the watcher kept syncing), and `list_tags`
/// counted every note's tags on every call. Both are now computed once per
/// snapshot: the `graph_build` and `tag_count` timing stages appear only when
/// they really run.
#[test]
fn issue17_the_graph_and_tag_counts_are_built_once_per_snapshot() {
    use kb_mcp::engine::timing;
    let (_tmp, vault) = common::temp_vault();
    let engine = open(&vault);
    let related = || {
        engine
            .get_related_notes(&NoteRefArgs { path: Some("z/设计.md".into()), ..Default::default() })
            .unwrap()
    };
    let stages = || timing::take().into_iter().map(|(stage, _)| stage).collect::<Vec<_>>();
    let _ = timing::take();
    let backlinks = related().backlinks.len();
    engine.list_tags(&ListTagsArgs::default()).unwrap();
    let first = stages();
    assert!(first.contains(&"graph_build") && first.contains(&"tag_count"), "{first:?}");

    let report = engine.sync(false, None).unwrap();
    assert_eq!((report.added, report.changed, report.removed), (0, 0, 0));
    related();
    engine.list_tags(&ListTagsArgs::default()).unwrap();
    engine.overview(Caller::Agent(Access::Read)).unwrap();
    let again = stages();
    assert!(!again.contains(&"graph_build") && !again.contains(&"tag_count"), "rebuilt: {again:?}");

    // A real change makes a new snapshot, whose graph (updated from the last
    // one, issue 42) and tags see it.
    std::fs::write(vault.join("z/新笔记.md"), "# 新笔记\n\n[[设计]] #新标签\n").unwrap();
    assert_eq!(engine.sync(false, None).unwrap().added, 1);
    assert_eq!(related().backlinks.len(), backlinks + 1);
    let tags =
        engine.list_tags(&ListTagsArgs { prefix: Some("新标签".into()), ..Default::default() }).unwrap();
    assert_eq!(tags.tags.iter().map(|t| (t.tag.as_str(), t.count)).collect::<Vec<_>>(), [("新标签", 1)]);
    let changed = stages();
    assert!(changed.contains(&"graph_update") && changed.contains(&"tag_count"), "{changed:?}");
    assert!(!changed.contains(&"graph_build"), "{changed:?}");
}

/// Issue 13, questions in other words (and issue 19's "never below BM25"): in a
/// question of four words or more, a title holding one common word of it
/// ("edit" in *Editing shortcuts*) must not outrank the note whose text says the
/// rest ("several lines at the same time"); a short query still ranks the title
/// match first.
#[test]
fn issue_13_a_long_questions_text_evidence_outranks_a_title_holding_one_of_its_words() {
    let dir = tempfile::tempdir().unwrap();
    let vault = dir.path();
    let notes = [
        (
            "Editing shortcuts.md",
            "Shortcuts for the keyboard: move lines up or down, duplicate lines, toggle bold.\n",
        ),
        (
            "Multiple cursors.md",
            "Put a cursor on several lines to change several lines at the same time: what you type goes to \
             all the lines at once, which saves time.\n",
        ),
        ("Daily notes.md", "Open a new note each day; the time goes in the first lines.\n"),
        ("Templates.md", "Insert the same lines every time you create a note; edit the template once.\n"),
        ("Sync.md", "Sync takes a little time; edit offline and it catches up.\n"),
        ("Canvas.md", "Draw lines between cards to show how they connect.\n"),
        ("Search.md", "Search finds notes by their words.\n"),
    ];
    write_notes(vault, &notes);
    let engine = open(vault);
    let question = knowledge_paths(&engine, "how do I edit several lines at the same time");
    assert_eq!(&question[..2], ["Multiple cursors.md", "Editing shortcuts.md"], "{question:?}");
    let keywords = knowledge_paths(&engine, "edit lines");
    assert_eq!(keywords[0], "Editing shortcuts.md", "{keywords:?}");
}

/// Issue 13, questions in other words: when a question's first pass is unsure
/// (its best notes score alike), the words its best notes share (`theme`,
/// `fonts`, `light`) join it at a low weight, so the note about what those
/// notes have in common (*Settings*) rises above a note that holds the
/// question's words by chance (*Graph view*'s node colours). A short query
/// gets no feedback.
#[test]
fn issue_13_an_unsure_questions_feedback_from_its_best_notes_reranks_them() {
    let dir = tempfile::tempdir().unwrap();
    let vault = dir.path();
    let notes = [
        (
            "Appearance.md",
            "Switch between the dark theme and the light theme. Each theme sets its fonts; pick the fonts of a theme here.\n",
        ),
        ("Themes.md", "Community themes change how the app looks: a theme may bring its own fonts.\n"),
        ("Settings.md", "Settings hold the theme, the fonts and the app's dark or light colors.\n"),
        (
            "Canvas.md",
            "Cards on a canvas have colors: switch a card's colors from its menu. Dark cards stand out.\n",
        ),
        (
            "Graph view.md",
            "Nodes get colors; switch the colors of the nodes on and off. Dark nodes are orphans.\n",
        ),
        ("Mobile.md", "The mobile app syncs your vault.\n"),
        ("Search.md", "Search finds notes by their words.\n"),
    ];
    write_notes(vault, &notes);
    // Notes on other topics, so that the vault's rare words are rare.
    for i in 1..=20 {
        let text =
            format!("Filler note {i} about gardening, cooking, travel plans and reading lists number {i}.\n");
        std::fs::write(vault.join(format!("Filler {i}.md")), text).unwrap();
    }
    let engine = open(vault);
    let question = "how do I switch the app to dark colors";
    let without = knowledge_paths_with(&engine, question, WITHOUT_FEEDBACK);
    assert_eq!(&without[..2], ["Graph view.md", "Settings.md"], "{without:?}");
    let with = knowledge_paths(&engine, question);
    assert_eq!(&with[..2], ["Settings.md", "Graph view.md"], "{with:?}");
    // Keywords are not a question: ranked as ever.
    let keywords = knowledge_paths(&engine, "dark colors");
    assert_eq!(keywords, knowledge_paths_with(&engine, "dark colors", WITHOUT_FEEDBACK));
}

/// A question's page is ordered by its tool's ranking and the other tool's
/// together: a note the text search ranks first rises above a title match the
/// text search does not rank at all.
#[test]
fn issue_13_a_questions_page_is_ordered_by_both_tools_rankings() {
    let dir = tempfile::tempdir().unwrap();
    let vault = dir.path();
    let notes = [
        ("Crash reports.md", "Send reports to the developers when the app stops.\n"),
        (
            "File recovery.md",
            "After a crash, recover lost paragraphs from snapshots: lost paragraphs come back.\n",
        ),
    ];
    write_notes(vault, &notes);
    // Notes holding most of the question's words in their text, so the text
    // search has a full page without the title match.
    for i in 1..=10 {
        let text = format!("Topic {i}: how to recover lost paragraphs, number {i}.\n");
        std::fs::write(vault.join(format!("Topic {i}.md")), text).unwrap();
    }
    let engine = open(vault);
    let question = "how can I recover lost paragraphs after a crash";
    let text_side = content_paths_with(&engine, question, WITHOUT_FUSION);
    assert_eq!(text_side[0], "File recovery.md", "{text_side:?}");
    assert!(!text_side.contains(&"Crash reports.md".to_owned()), "{text_side:?}");
    let without = knowledge_paths_with(&engine, question, WITHOUT_FUSION);
    assert_eq!(&without[..2], ["Crash reports.md", "File recovery.md"], "{without:?}");
    let with = knowledge_paths(&engine, question);
    assert_eq!(with[0], "File recovery.md", "{with:?}");
    assert!(with.contains(&"Crash reports.md".to_owned()), "reordered, not left out: {with:?}");
    // Keywords are not a question: ranked by the tool alone.
    let keywords = "crash recover lost paragraphs";
    assert_eq!(knowledge_paths(&engine, keywords), knowledge_paths_with(&engine, keywords, WITHOUT_FUSION));
}

/// Issue 19, the candidate pass: a question of many words makes more term
/// leaves than the one-candidate-at-a-time pass holds (128); it is then left
/// to the query's scorers, and the page is still the full query's.
#[test]
fn issue_19_a_question_of_many_words_is_answered_as_the_full_query_answers_it() {
    let dir = tempfile::tempdir().unwrap();
    let vault = dir.path();
    let words = [
        "gardens",
        "tomatoes",
        "pruning",
        "watering",
        "seedlings",
        "compost",
        "mulching",
        "beetles",
        "harvests",
        "greenhouses",
        "trellises",
        "fences",
        "ladders",
        "baskets",
        "buckets",
        "shovels",
        "rakes",
        "hoses",
        "sprinklers",
        "barrels",
        "weeds",
        "roots",
        "leaves",
        "branches",
    ];
    let mut notes: Vec<(String, String)> = Vec::new();
    for (at, pair) in words.chunks(2).enumerate() {
        let title = format!("{} and {}", pair[0], pair[1]);
        let body = format!(
            "# {title}\n\nNotes on {} with {}; more {} later.\n",
            pair[0],
            pair[1],
            words[(at * 5) % 24]
        );
        notes.push((format!("{title}.md"), body));
    }
    let notes: Vec<(&str, &str)> = notes.iter().map(|(n, t)| (n.as_str(), t.as_str())).collect();
    write_notes(vault, &notes);
    let engine = open(vault);
    let question = words.join(" ");
    let page = knowledge_paths(&engine, &question);
    let full = knowledge_paths_with(&engine, &question, FULL_QUERY_ONLY);
    assert!(page.len() >= 10, "{page:?}");
    assert_eq!(page, full);
}

/// Issue 34 item 4: a quoted `"[[Note]]"` in a property is a link wherever
/// links count: outlinks (kind `property`, at its line in the frontmatter),
/// backlinks with their context, broken links and anchors, orphans, the
/// overview's counts, the audit, and the links a delete says will break. An
/// unquoted `[[A]]` (a nested YAML list) and a name in `aliases` are not links.
#[test]
fn issue34_links_in_properties_count_wherever_links_count() {
    let (_tmp, vault) = common::property_vault();
    let engine = open(&vault);
    let related =
        engine.get_related_notes(&NoteRefArgs { path: Some("z/hub.md".into()), reference: None }).unwrap();
    let outlinks: Vec<(String, Option<String>, String, u32)> = related
        .outlinks
        .iter()
        .map(|o| (o.target.clone(), o.resolved.clone(), o.kind.to_string(), o.line))
        .collect();
    let note = |path: &str| Some(path.to_owned());
    let property = "property".to_owned();
    assert_eq!(
        outlinks,
        [
            ("A".to_owned(), note("z/A.md"), property.clone(), 3),
            ("B".to_owned(), note("z/B.md"), property.clone(), 4),
            ("C".to_owned(), note("z/C.md"), property.clone(), 4),
            ("D#Heading".to_owned(), note("z/D.md"), property.clone(), 6),
            ("A#^blk".to_owned(), note("z/A.md"), property.clone(), 7),
            ("Nowhere".to_owned(), None, property.clone(), 8),
            ("A#No such heading".to_owned(), None, property, 9),
        ]
    );
    let broken: Vec<(&str, u32, BrokenReason)> =
        related.broken.iter().map(|b| (b.target.as_str(), b.line, b.reason)).collect();
    assert_eq!(
        broken,
        [("Nowhere", 8, BrokenReason::MissingNote), ("A#No such heading", 9, BrokenReason::MissingHeading)]
    );
    let backlinks = engine
        .get_related_notes(&NoteRefArgs { path: Some("z/C.md".into()), reference: None })
        .unwrap()
        .backlinks;
    let backlinks: Vec<(&str, u32, &str)> =
        backlinks.iter().map(|b| (b.path.as_str(), b.line, b.context.as_str())).collect();
    assert_eq!(backlinks, [("z/hub.md", 4, "up: [\"[[B]]\", \"[[C|see C]]\"]")]);

    let counts = engine.overview(Caller::Cli).unwrap().counts;
    assert_eq!((counts.links, counts.broken_links, counts.orphans), (7, 2, 1));
    let all = audit(
        &engine,
        AuditArgs {
            checks: Some(vec![AuditCheck::BrokenLink, AuditCheck::BrokenAnchor, AuditCheck::Orphan]),
            limit: Some(500),
            ..Default::default()
        },
    );
    assert_eq!(
        finding_lines(&all.findings),
        [
            "broken_link z/hub.md:8 [[Nowhere]] leads to no note or file",
            "broken_anchor z/hub.md:9 [[A#No such heading]]: z/A.md has no heading `No such heading`",
            "orphan z/lonely.md no note links here and it links to no note",
        ]
    );

    let deleted =
        engine.propose_delete(&ProposeDeleteArgs { path: "z/B.md".into(), reason: "merged".into() }).unwrap();
    let breaks: Vec<(&str, u32, &str)> =
        deleted.breaks.iter().map(|b| (b.path.as_str(), b.line, b.link.as_str())).collect();
    assert_eq!(breaks, [("z/hub.md", 4, "[[B]]")]);
}
