//! Canvases (issue 40, part 2): a `.canvas` (JSON Canvas) is a note of the
//! vault as a person uses one: its text nodes are found by search (Chinese
//! too) and read by `read_note` (its web link nodes as `<url>`), it is
//! listed by `list_notes`, its file nodes and the Markdown links of its text
//! nodes are links (backlinks of the notes it shows, broken links and audit
//! findings when they name nothing), and moves and deletes treat it as a
//! note: a move of a note it shows keeps it resolving (its JSON byte for byte
//! but for the paths and link targets, rewritten inside their JSON strings),
//! a move of the canvas itself takes the links to it along, a delete names
//! the nodes and links it breaks, and the canvas itself is deleted and
//! reverted like a note. In Obsidian's templates folder it is a template.

#![allow(
    clippy::disallowed_methods,
    clippy::disallowed_types,
    reason = "the tests build and inspect vaults on disk"
)]

use std::fs;

use kb_mcp::engine::types::*;
use kb_mcp::engine::{Engine, EngineOptions};
use kb_mcp::write::Actor;

use crate::common::{self, put, read};

/// A board as Obsidian writes it (tabs, one node a line): two Chinese text
/// nodes written bottom first, a file node showing a fixture note at a
/// heading, one naming a note that does not exist, and a web link.
const BOARD: &str = "{\n\t\"nodes\":[\n\
\t\t{\"id\":\"t2\",\"type\":\"text\",\"text\":\"第二步：每周检查一次恢复演练 #备份\",\"x\":0,\"y\":300,\"width\":250,\"height\":60},\n\
\t\t{\"id\":\"t1\",\"type\":\"text\",\"text\":\"第一步：把笔记推送到远程仓库\",\"x\":0,\"y\":0,\"width\":250,\"height\":60},\n\
\t\t{\"id\":\"f1\",\"type\":\"file\",\"file\":\"z/备份仓库.md\",\"subpath\":\"#同步不等于备份\",\"x\":400,\"y\":0,\"width\":400,\"height\":400},\n\
\t\t{\"id\":\"f2\",\"type\":\"file\",\"file\":\"z/不存在的笔记.md\",\"x\":400,\"y\":500,\"width\":400,\"height\":400},\n\
\t\t{\"id\":\"u\",\"type\":\"link\",\"url\":\"https://obsidian.md\",\"x\":900,\"y\":0,\"width\":400,\"height\":400}\n\
\t],\n\t\"edges\":[{\"id\":\"e\",\"fromNode\":\"t1\",\"toNode\":\"f1\"}]\n}\n";

const BOARD_PATH: &str = "z/备份计划.canvas";

/// The fixture vault with the board, indexed.
fn board_vault() -> (tempfile::TempDir, std::path::PathBuf, Engine) {
    let (tmp, vault) = common::temp_vault();
    put(&vault, BOARD_PATH, BOARD);
    let engine = Engine::open(&EngineOptions { vault: vault.clone(), index_dir: None }).unwrap();
    engine.sync(false, None).unwrap();
    (tmp, vault, engine)
}

fn apply(engine: &Engine, id: &str) -> ApplyResult {
    engine.apply_proposal(&ApplyArgs { proposal_id: id.to_owned() }, Actor::Cli).unwrap()
}

fn search(engine: &Engine, query: &str) -> Vec<ContentHit> {
    engine.search_note_content(&SearchArgs { query: query.into(), ..Default::default() }).unwrap().results
}

fn broken(engine: &Engine) -> u64 {
    engine.overview(Caller::Cli).unwrap().counts.broken_links
}

fn backlinks(engine: &Engine, path: &str) -> Vec<(String, u32)> {
    let related =
        engine.get_related_notes(&NoteRefArgs { path: Some(path.into()), reference: None }).unwrap();
    related.backlinks.into_iter().map(|b| (b.path, b.line)).collect()
}

/// Its text nodes are searched through the same tokenizer as notes, its
/// snippets cut from them (not from the JSON); it is listed and read as its
/// text nodes top to bottom, its JSON with `raw`.
#[test]
fn issue_40_a_canvas_is_searched_listed_and_read_as_its_text_nodes() {
    let (_tmp, _vault, engine) = board_vault();
    let hits = search(&engine, "恢复演练");
    let hit = hits.iter().find(|hit| hit.path == BOARD_PATH).unwrap_or_else(|| panic!("{hits:?}"));
    assert_eq!(hit.title, "备份计划");
    let snippet = &hit.snippets[0].text;
    assert!(snippet.contains("恢复演练") && !snippet.contains("\"type\""), "{snippet}");
    assert!(search(&engine, "远程仓库").iter().any(|hit| hit.path == BOARD_PATH));
    // The JSON's own words are not the canvas's.
    assert!(!search(&engine, "fromNode").iter().any(|hit| hit.path == BOARD_PATH));

    let listed =
        engine.list_notes(&ListNotesArgs { folder: Some("z".into()), ..Default::default() }).unwrap();
    let entry = listed.notes.iter().find(|note| note.path == BOARD_PATH).expect("the canvas is listed");
    assert_eq!(entry.title, "备份计划");
    assert_eq!(entry.tags, ["备份"]);

    let page =
        engine.read_note(&ReadNoteArgs { path: Some(BOARD_PATH.into()), ..Default::default() }).unwrap();
    // The web link node is written among the text nodes, as a note's text holds its URLs.
    assert_eq!(
        page.content,
        "第一步：把笔记推送到远程仓库\n\n<https://obsidian.md>\n\n第二步：每周检查一次恢复演练 #备份"
    );
    assert_eq!(page.hash, kb_mcp::vault::content_hash(BOARD.as_bytes()));
    assert!(page.hint.as_deref().is_some_and(|hint| hint.contains("raw")), "{:?}", page.hint);
    let by_ref = engine
        .read_note(&ReadNoteArgs { reference: Some("备份计划.canvas".into()), ..Default::default() });
    assert_eq!(by_ref.unwrap().path, BOARD_PATH);
    let raw = engine
        .read_note(&ReadNoteArgs { path: Some(BOARD_PATH.into()), raw: Some(true), ..Default::default() })
        .unwrap();
    assert!(raw.hint.is_none(), "{:?}", raw.hint);
    assert_eq!(raw.content, BOARD);
}

/// Its file nodes are links: a backlink of the note it shows (on the line
/// of the node), a broken link for the node naming nothing, which
/// `audit_vault` reports; the web link is no link of the vault.
#[test]
fn issue_40_a_canvas_file_node_is_a_backlink_and_one_to_nothing_is_broken() {
    let (_tmp, vault, engine) = board_vault();
    assert!(backlinks(&engine, "z/备份仓库.md").contains(&(BOARD_PATH.to_owned(), 5)));
    let related =
        engine.get_related_notes(&NoteRefArgs { path: Some(BOARD_PATH.into()), reference: None }).unwrap();
    let outlinks: Vec<(&str, Option<&str>, &str)> =
        related.outlinks.iter().map(|l| (l.target.as_str(), l.resolved.as_deref(), l.kind.name())).collect();
    assert_eq!(
        outlinks,
        [
            ("z/备份仓库.md#同步不等于备份", Some("z/备份仓库.md"), "canvas"),
            ("z/不存在的笔记.md", None, "canvas")
        ]
    );
    let broken_targets: Vec<(&str, u32)> =
        related.broken.iter().map(|b| (b.target.as_str(), b.line)).collect();
    assert_eq!(broken_targets, [("z/不存在的笔记.md", 6)]);

    let audit = engine
        .audit_vault(&AuditArgs { checks: Some(vec![AuditCheck::BrokenLink]), ..Default::default() })
        .unwrap();
    let finding = audit.findings.iter().find(|f| f.path == BOARD_PATH).expect("the broken node is a finding");
    assert_eq!(finding.line, Some(6));
    assert!(finding.message.contains("z/不存在的笔记.md"), "{}", finding.message);
    assert!(finding.fix.is_none(), "no Markdown fix is offered inside a canvas");

    // Without the board, one broken link less.
    let with = broken(&engine);
    fs::remove_file(vault.join(BOARD_PATH)).unwrap();
    engine.sync(false, None).unwrap();
    assert_eq!(broken(&engine), with - 1);
}

/// A note the canvas shows moves: the canvas is rewritten byte for byte but
/// for the path, and still resolves (a backlink again, no new broken link).
#[test]
fn issue_40_moving_a_note_a_canvas_shows_keeps_the_canvas_resolving() {
    let (_tmp, vault, engine) = board_vault();
    let before = broken(&engine);
    let staged = move_backup_note(&engine);
    assert!(staged.diff.contains("and 1 canvas"), "{}", staged.diff);
    assert_eq!(apply(&engine, &staged.proposal_id).status, ApplyStatus::Applied);
    assert_eq!(read(&vault, BOARD_PATH), BOARD.replace("\"z/备份仓库.md\"", "\"z/archive/远程备份.md\""));
    assert!(backlinks(&engine, "z/archive/远程备份.md").contains(&(BOARD_PATH.to_owned(), 5)));
    assert_eq!(broken(&engine), before);
}

/// The canvas itself moves like a note: its JSON as it was, the links to it
/// following it, its file nodes still resolving, and it is found at its new
/// path.
#[test]
fn issue_40_a_canvas_moves_like_a_note_and_links_to_it_follow() {
    let (_tmp, vault, engine) = board_vault();
    put(&vault, "z/看板索引.md", "# 看板\n![[备份计划.canvas]] and [board](备份计划.canvas)\n");
    engine.sync(false, None).unwrap();
    let before = broken(&engine);
    let staged = engine
        .propose_move(&ProposeMoveArgs {
            from: BOARD_PATH.into(),
            to: "z/boards/备份看板.canvas".into(),
            reason: "tidy up".into(),
            keep_alias: None,
        })
        .unwrap();
    assert!(
        staged.diff.starts_with("# move z/备份计划.canvas → z/boards/备份看板.canvas"),
        "{}",
        staged.diff
    );
    assert_eq!(apply(&engine, &staged.proposal_id).status, ApplyStatus::Applied);
    assert!(!vault.join(BOARD_PATH).exists());
    assert_eq!(read(&vault, "z/boards/备份看板.canvas"), BOARD);
    assert_eq!(
        read(&vault, "z/看板索引.md"),
        "# 看板\n![[备份看板.canvas]] and [board](boards/备份看板.canvas)\n"
    );
    assert_eq!(broken(&engine), before);
    assert!(search(&engine, "恢复演练").iter().any(|hit| hit.path == "z/boards/备份看板.canvas"));
    assert!(!search(&engine, "恢复演练").iter().any(|hit| hit.path == BOARD_PATH));
}

/// Deleting a note a canvas shows names the canvas's node among the links
/// that break, on the node's line.
#[test]
fn issue_40_a_delete_names_the_canvas_nodes_it_breaks() {
    let (_tmp, _vault, engine) = board_vault();
    let staged = engine
        .propose_delete(&ProposeDeleteArgs { path: "z/备份仓库.md".into(), reason: "obsolete".into() })
        .unwrap();
    let from_board: Vec<(&str, u32)> =
        staged.breaks.iter().filter(|b| b.path == BOARD_PATH).map(|b| (b.link.as_str(), b.line)).collect();
    assert_eq!(from_board, [("file node z/备份仓库.md#同步不等于备份", 5)], "{:?}", staged.breaks);
}

/// The canvas itself is deleted like a note: staged with the links to it
/// that break, applied into the trash, and a revert brings it back byte for
/// byte, searchable and linked again.
#[test]
fn issue_40_a_canvas_is_deleted_and_reverted_like_a_note() {
    let (_tmp, vault, engine) = board_vault();
    put(&vault, "z/看板索引.md", "# 看板\n![[备份计划.canvas]]\n");
    engine.sync(false, None).unwrap();
    let before = broken(&engine);
    let staged = engine
        .propose_delete(&ProposeDeleteArgs { path: BOARD_PATH.into(), reason: "obsolete".into() })
        .unwrap();
    let breaks: Vec<(&str, &str, u32)> =
        staged.breaks.iter().map(|b| (b.path.as_str(), b.link.as_str(), b.line)).collect();
    assert_eq!(breaks, [("z/看板索引.md", "![[备份计划.canvas]]", 2)], "{:?}", staged.breaks);
    assert!(vault.join(BOARD_PATH).exists(), "staging changes nothing");
    assert_eq!(apply(&engine, &staged.proposal_id).status, ApplyStatus::Applied);
    assert!(!vault.join(BOARD_PATH).exists());
    assert!(!search(&engine, "恢复演练").iter().any(|hit| hit.path == BOARD_PATH));
    // The canvas's own broken node went with it; the embed now breaks.
    assert_eq!(broken(&engine), before);

    let revert = engine
        .revert_proposal(&RevertArgs { proposal_id: staged.proposal_id.clone(), reason: "undo".into() })
        .unwrap();
    assert_eq!(apply(&engine, &revert.proposal_id).status, ApplyStatus::Applied);
    assert_eq!(fs::read(vault.join(BOARD_PATH)).unwrap(), BOARD.as_bytes());
    assert!(search(&engine, "恢复演练").iter().any(|hit| hit.path == BOARD_PATH));
    assert!(backlinks(&engine, BOARD_PATH).contains(&("z/看板索引.md".to_owned(), 2)));
    assert_eq!(broken(&engine), before);
}

/// A board whose text nodes link in Markdown (Obsidian renders them so),
/// written as JSON escapes them: an alias, a heading, an embed, a Markdown
/// link, a name written with a `\u` escape, a node with escaped quotes, and
/// a link to nothing. The file node and the link node are the only others.
const LINKS_BOARD: &str = "{\n\t\"nodes\":[\n\
\t\t{\"id\":\"a\",\"type\":\"text\",\"text\":\"见 [[备份仓库|备份]] 与 [[备份仓库#同步不等于备份]]\\n![[备份仓库]]\",\"x\":0,\"y\":0},\n\
\t\t{\"id\":\"b\", \"type\" : \"text\",\"text\":\"say \\\"hi\\\" [[\\u5907份仓库]] and [md](备份仓库.md) \\u2014 [[不存在的笔记]]\",\"x\":0,\"y\":200},\n\
\t\t{\"id\":\"f\",\"type\":\"file\",\"file\":\"z/备份仓库.md\",\"x\":400,\"y\":0},\n\
\t\t{\"id\":\"u\",\"type\":\"link\",\"url\":\"https://obsidian.md/canvas\",\"x\":800,\"y\":0}\n\
\t],\n\t\"edges\":[]\n}\n";

const LINKS_PATH: &str = "z/链接板.canvas";

fn links_vault() -> (tempfile::TempDir, std::path::PathBuf, Engine) {
    let (tmp, vault) = common::temp_vault();
    put(&vault, LINKS_PATH, LINKS_BOARD);
    let engine = Engine::open(&EngineOptions { vault: vault.clone(), index_dir: None }).unwrap();
    engine.sync(false, None).unwrap();
    (tmp, vault, engine)
}

/// Links written in text nodes are links of the canvas, of their own kinds,
/// on the line of their node: backlinks of the note they name, a broken link
/// (and an audit finding) for the one naming nothing. A web link node is
/// written in the canvas's text as `<url>`, as a note's text holds its web
/// links, and is no link of the graph (a note's is none either).
#[test]
fn issue_40_links_in_text_nodes_are_links_of_the_graph() {
    let (_tmp, _vault, engine) = links_vault();
    let related =
        engine.get_related_notes(&NoteRefArgs { path: Some(LINKS_PATH.into()), reference: None }).unwrap();
    let outlinks: Vec<(&str, Option<&str>, &str)> =
        related.outlinks.iter().map(|l| (l.target.as_str(), l.resolved.as_deref(), l.kind.name())).collect();
    let note = Some("z/备份仓库.md");
    assert_eq!(
        outlinks,
        [
            ("备份仓库", note, "wikilink"),
            ("备份仓库#同步不等于备份", note, "wikilink"),
            ("备份仓库", note, "embed"),
            ("备份仓库", note, "wikilink"),
            ("z/备份仓库.md", note, "markdown"),
            ("不存在的笔记", None, "wikilink"),
            ("z/备份仓库.md", note, "canvas"),
        ]
    );
    let lines: Vec<(String, u32)> =
        backlinks(&engine, "z/备份仓库.md").into_iter().filter(|(path, _)| path == LINKS_PATH).collect();
    let expected: Vec<(String, u32)> = [3, 3, 3, 4, 4, 5].map(|line| (LINKS_PATH.to_owned(), line)).into();
    assert_eq!(lines, expected);
    let broken_targets: Vec<(&str, u32)> =
        related.broken.iter().map(|b| (b.target.as_str(), b.line)).collect();
    assert_eq!(broken_targets, [("不存在的笔记", 4)]);
    let audit = engine
        .audit_vault(&AuditArgs { checks: Some(vec![AuditCheck::BrokenLink]), ..Default::default() })
        .unwrap();
    let finding = audit.findings.iter().find(|f| f.path == LINKS_PATH).expect("a finding");
    assert_eq!(finding.line, Some(4));
    assert!(finding.fix.is_none(), "no Markdown fix is offered inside a canvas");

    let page =
        engine.read_note(&ReadNoteArgs { path: Some(LINKS_PATH.into()), ..Default::default() }).unwrap();
    assert_eq!(
        page.content,
        "见 [[备份仓库|备份]] 与 [[备份仓库#同步不等于备份]]\n![[备份仓库]]\n\n<https://obsidian.md/canvas>\n\n\
         say \"hi\" [[备份仓库]] and [md](备份仓库.md) — [[不存在的笔记]]"
    );
    assert!(search(&engine, "obsidian.md").iter().any(|hit| hit.path == LINKS_PATH));
}

/// A move of the note its text nodes link to rewrites each link's target
/// inside its JSON string (an escaped name replaced whole; escaped quotes
/// before it in the node kept), the file node's path too, and nothing else:
/// every other byte of the canvas is as it was. The links still resolve.
#[test]
fn issue_40_a_move_rewrites_links_in_text_nodes_inside_their_json() {
    let (_tmp, vault, engine) = links_vault();
    let before = broken(&engine);
    let staged = move_backup_note(&engine);
    assert!(staged.diff.contains("canvas"), "{}", staged.diff);
    assert_eq!(apply(&engine, &staged.proposal_id).status, ApplyStatus::Applied);
    let expected = LINKS_BOARD
        .replace("[[备份仓库", "[[远程备份")
        .replace("[[\\u5907份仓库]]", "[[远程备份]]")
        .replace("[md](备份仓库.md)", "[md](archive/远程备份.md)")
        .replace("\"z/备份仓库.md\"", "\"z/archive/远程备份.md\"");
    assert_eq!(read(&vault, LINKS_PATH), expected);
    let lines: Vec<(String, u32)> = backlinks(&engine, "z/archive/远程备份.md")
        .into_iter()
        .filter(|(path, _)| path == LINKS_PATH)
        .collect();
    assert_eq!(lines.len(), 6, "{lines:?}");
    assert_eq!(broken(&engine), before);
}

/// A delete of the note its text nodes link to lists those links among the
/// links it breaks, on their lines.
#[test]
fn issue_40_a_delete_lists_the_text_node_links_it_breaks() {
    let (_tmp, _vault, engine) = links_vault();
    let staged = engine
        .propose_delete(&ProposeDeleteArgs { path: "z/备份仓库.md".into(), reason: "obsolete".into() })
        .unwrap();
    let from_board: Vec<(&str, u32)> =
        staged.breaks.iter().filter(|b| b.path == LINKS_PATH).map(|b| (b.link.as_str(), b.line)).collect();
    assert_eq!(
        from_board,
        [
            ("[[备份仓库]]", 3),
            ("[[备份仓库#同步不等于备份]]", 3),
            ("![[备份仓库]]", 3),
            ("[[备份仓库]]", 4),
            ("[md](z/备份仓库.md)", 4),
            ("file node z/备份仓库.md", 5),
        ],
        "{:?}",
        staged.breaks
    );
}

/// The canvas itself moves to another folder: its text nodes' Markdown
/// links are relative to its folder, so they are rewritten to lead where
/// they led; its wikilinks by name and its file node still resolve as they are.
#[test]
fn issue_40_a_canvas_moved_to_another_folder_keeps_its_relative_links() {
    let (_tmp, vault, engine) = links_vault();
    let before = broken(&engine);
    let staged = engine
        .propose_move(&ProposeMoveArgs {
            from: LINKS_PATH.into(),
            to: "z/boards/链接板.canvas".into(),
            reason: "tidy up".into(),
            keep_alias: None,
        })
        .unwrap();
    assert_eq!(apply(&engine, &staged.proposal_id).status, ApplyStatus::Applied);
    assert_eq!(
        read(&vault, "z/boards/链接板.canvas"),
        LINKS_BOARD.replace("[md](备份仓库.md)", "[md](../备份仓库.md)")
    );
    assert_eq!(broken(&engine), before);
}

/// A canvas in Obsidian's templates folder is a template, as a note there
/// is: left out of search, tags and counts, still read by its path. A
/// canvas is counted among the vault's notes, and one nothing links to that
/// links to nothing is an orphan, as such a note is.
#[test]
fn issue_40_a_template_canvas_is_a_template_and_a_lone_canvas_an_orphan() {
    let (_tmp, vault) = common::temp_person_vault();
    let template =
        "{\"nodes\":[{\"id\":\"t\",\"type\":\"text\",\"text\":\"蓝图草稿 #模板标签\",\"x\":0,\"y\":0}]}";
    put(&vault, "Templates/看板模板.canvas", template);
    put(
        &vault,
        "Boards/孤立看板.canvas",
        "{\"nodes\":[{\"id\":\"t\",\"type\":\"text\",\"text\":\"孤立的想法\",\"x\":0,\"y\":0}]}",
    );
    put(&vault, "Boards/孤立笔记.md", "# 孤立笔记\n\n没有链接\n");
    let engine = Engine::open(&EngineOptions { vault: vault.clone(), index_dir: None }).unwrap();
    engine.sync(false, None).unwrap();
    let hits = search(&engine, "蓝图草稿");
    assert!(hits.is_empty(), "{hits:?}");
    let tags = engine.list_tags(&ListTagsArgs::default()).unwrap();
    assert!(!tags.tags.iter().any(|t| t.tag == "模板标签"), "{tags:?}");
    let page = engine
        .read_note(&ReadNoteArgs { path: Some("Templates/看板模板.canvas".into()), ..Default::default() })
        .unwrap();
    assert_eq!(page.content, "蓝图草稿 #模板标签");
    // The person vault's seven notes, the lone note and the lone canvas.
    assert_eq!(engine.overview(Caller::Cli).unwrap().counts.notes, 9);

    let audit = engine
        .audit_vault(&AuditArgs { checks: Some(vec![AuditCheck::Orphan]), ..Default::default() })
        .unwrap();
    let orphans: Vec<&str> =
        audit.findings.iter().map(|f| f.path.as_str()).filter(|p| p.starts_with("Boards/")).collect();
    assert_eq!(orphans, ["Boards/孤立看板.canvas", "Boards/孤立笔记.md"]);
}

/// A batch deletes a canvas as `propose_delete` does, a later item moving the
/// note that embedded it, all applied at once and reverted byte for byte.
#[test]
fn issue_40_a_batch_deletes_a_canvas_and_its_revert_brings_it_back() {
    let (_tmp, vault, engine) = board_vault();
    put(&vault, "z/看板索引.md", "# 看板\n![[备份计划.canvas]]\n");
    engine.sync(false, None).unwrap();
    let before = broken(&engine);
    let items: Vec<BatchItem> = serde_json::from_value(serde_json::json!([
        {"kind": "delete", "path": BOARD_PATH},
        {"kind": "move", "from": "z/看板索引.md", "to": "z/old/看板索引.md"},
    ]))
    .unwrap();
    let staged = engine.propose_batch(&ProposeBatchArgs { reason: "tidy up".into(), items }).unwrap();
    assert_eq!(apply(&engine, &staged.proposal_id).status, ApplyStatus::Applied);
    assert!(!vault.join(BOARD_PATH).exists());
    assert_eq!(read(&vault, "z/old/看板索引.md"), "# 看板\n![[备份计划.canvas]]\n");
    // The board's broken node went with it; the embed of it now breaks.
    assert_eq!(broken(&engine), before);
    let revert = engine
        .revert_proposal(&RevertArgs { proposal_id: staged.proposal_id.clone(), reason: "undo".into() })
        .unwrap();
    assert_eq!(apply(&engine, &revert.proposal_id).status, ApplyStatus::Applied);
    assert_eq!(read(&vault, BOARD_PATH), BOARD);
    assert!(vault.join("z/看板索引.md").exists());
    assert_eq!(broken(&engine), before);
}

/// Stages the move both canvas tests make: `z/备份仓库.md` into `z/archive/`, renamed.
fn move_backup_note(engine: &Engine) -> ProposeMoveResult {
    engine
        .propose_move(&ProposeMoveArgs {
            from: "z/备份仓库.md".into(),
            to: "z/archive/远程备份.md".into(),
            reason: "tidy up".into(),
            keep_alias: None,
        })
        .unwrap()
}
