//! Structural proposals (issue 14): moves of notes and folders with every link
//! rewritten in its own form, deletes to the trash, and the multi-file apply
//! that makes them all or nothing (checked before writing, journaled, a crash
//! at any step rolled back or completed, one audit line, one index update);
//! none of their files more readable than the notes whose text they hold
//! (issue 34).

#![allow(
    clippy::disallowed_methods,
    clippy::disallowed_types,
    reason = "the tests build and inspect vaults on disk"
)]

use crate::common::{self, audit_lines, put, read};

use std::fs;
use std::path::Path;

use kb_mcp::engine::types::*;
use kb_mcp::engine::{Engine, EngineOptions};
use kb_mcp::error::{Error, ErrorCode};
use kb_mcp::sandbox::{NotePath, Sandbox, read_vault_config};
use kb_mcp::vault::VaultConfig;
use kb_mcp::write::{self, Actor, Step};
use serde_json::Value;

fn open(vault: &Path) -> Engine {
    let engine = Engine::open(&EngineOptions { vault: vault.to_owned(), index_dir: None }).unwrap();
    engine.sync(false, None).unwrap();
    engine
}

/// The vault's own sandbox, as the write layer's tests open it.
fn sandbox(vault: &Path) -> Sandbox {
    let config = VaultConfig::parse(read_vault_config(vault).unwrap().as_deref()).unwrap();
    Sandbox::open(vault, config.policy).unwrap()
}

/// Applies proposal `id` as the CLI does and crashes it at `step`: the
/// apply stops on the spot, as a killed process would, leaving its journal.
fn crash_apply_at(sandbox: &Sandbox, id: &str, step: Step) {
    let mut crash = |at: Step| if at == step { Err(Error::internal("crash")) } else { Ok(()) };
    let err = write::apply_with_failpoint(sandbox, id, Actor::Cli, &mut |_| Ok(()), &mut crash).unwrap_err();
    assert_eq!(err.message, "crash", "{step:?}");
}

fn broken(engine: &Engine) -> usize {
    engine.overview(Caller::Cli).unwrap().counts.broken_links as usize
}

fn mv(engine: &Engine, from: &str, to: &str) -> kb_mcp::error::Result<ProposeMoveResult> {
    engine.propose_move(&ProposeMoveArgs {
        from: from.to_owned(),
        to: to.to_owned(),
        reason: "tidy up".to_owned(),
        keep_alias: None,
    })
}

fn apply(engine: &Engine, id: &str) -> ApplyResult {
    engine.apply_proposal(&ApplyArgs { proposal_id: id.to_owned() }, Actor::Cli).unwrap()
}

/// The vault's notes and their bytes, the inbox left out.
fn notes_snapshot(vault: &Path) -> Vec<(String, Vec<u8>)> {
    common::snapshot(vault)
        .into_iter()
        .filter(|(path, _)| !path.starts_with("inbox/") && !path.starts_with(".kb"))
        .collect()
}

/// The vault's folders, the inbox and the index left out.
fn folders(vault: &Path) -> Vec<String> {
    walkdir::WalkDir::new(vault)
        .sort_by_file_name()
        .into_iter()
        .map(Result::unwrap)
        .filter(|entry| entry.file_type().is_dir())
        .map(|entry| entry.path().strip_prefix(vault).unwrap().to_string_lossy().replace('\\', "/"))
        .filter(|path| !path.starts_with("inbox") && !path.starts_with(".kb"))
        .collect()
}

const LINKER: &str = "---\ntitle: Linker\n---\n# Links\n\
[[target]] and [[target.md]] and [[target|shown]] and [[target#Head]] and [[target#^blk]]\n\
![[target]] and [t](target.md) and [t](./target.md) and [t](<target.md>) and [t](target.md#Head)\n\
`[[target]]` stays, <!-- [[target]] --> stays, [[other]] stays\n";

fn link_vault() -> (tempfile::TempDir, std::path::PathBuf) {
    let (tmp, vault) = common::temp_vault();
    put(
        &vault,
        "z/m/target.md",
        "# Head\n\nText ^blk\n\n[up](../other.md) and [[other]] and ![pic](../attachments/x.png)\n",
    );
    put(&vault, "z/m/linker.md", LINKER);
    put(&vault, "z/other.md", "[t](m/target.md) and [[m/target]]\n");
    put(&vault, "z/attachments/x.png", "png");
    (tmp, vault)
}

#[test]
fn a_move_rewrites_every_link_form_and_nothing_else() {
    let (_tmp, vault) = link_vault();
    let engine = open(&vault);
    let before = broken(&engine);
    let staged = mv(&engine, "z/m/target.md", "z/n/目标 新.md").unwrap();
    assert_eq!(staged.kind, ProposalKind::Move);
    assert_eq!(staged.moves, vec![MovedNote { from: "z/m/target.md".into(), to: "z/n/目标 新.md".into() }]);
    assert!(!staged.vault_changed);
    assert!(staged.diff.starts_with("# move z/m/target.md → z/n/目标 新.md, rewrite "), "{}", staged.diff);
    assert!(staged.diff.contains("rename from z/m/target.md\nrename to z/n/目标 新.md\n"));
    // Nothing changed yet.
    assert!(vault.join("z/m/target.md").exists());
    assert_eq!(read(&vault, "z/m/linker.md"), LINKER);

    let applied = apply(&engine, &staged.proposal_id);
    assert_eq!(applied.status, ApplyStatus::Applied);
    assert!(!vault.join("z/m/target.md").exists());
    let linker = read(&vault, "z/m/linker.md");
    assert_eq!(
        linker,
        "---\ntitle: Linker\n---\n# Links\n\
[[目标 新]] and [[目标 新.md]] and [[目标 新|shown]] and [[目标 新#Head]] and [[目标 新#^blk]]\n\
![[目标 新]] and [t](../n/%E7%9B%AE%E6%A0%87%20%E6%96%B0.md) and [t](../n/%E7%9B%AE%E6%A0%87%20%E6%96%B0.md) and [t](<../n/目标 新.md>) and [t](../n/%E7%9B%AE%E6%A0%87%20%E6%96%B0.md#Head)\n\
`[[target]]` stays, <!-- [[target]] --> stays, [[other]] stays\n"
    );
    assert_eq!(read(&vault, "z/other.md"), "[t](n/%E7%9B%AE%E6%A0%87%20%E6%96%B0.md) and [[n/目标 新]]\n");
    // Inside the moved note: relative links fixed, the old name an alias.
    assert_eq!(
        read(&vault, "z/n/目标 新.md"),
        "---\naliases: [target]\n---\n# Head\n\nText ^blk\n\n[up](../other.md) and [[other]] and ![pic](../attachments/x.png)\n"
    );
    assert_eq!(broken(&engine), before, "no link broke");
    // One audit line listing every file with its hashes.
    let lines = audit_lines(&vault);
    assert_eq!(lines.len(), 1);
    let files = lines[0]["files"].as_array().unwrap();
    assert_eq!(files.len(), 3, "{files:?}");
    assert!(files.iter().all(|f| f["before_sha256"].is_string() && f["after_sha256"].is_string()));
    assert_eq!(files[0]["op"], "move");
    // The index knows the new path at once.
    assert!(engine.record("z/n/目标 新.md").is_some());
    assert!(engine.record("z/m/target.md").is_none());
}

#[test]
fn a_bare_name_stays_bare_only_while_unique() {
    let (_tmp, vault) = common::temp_vault();
    put(&vault, "z/a/dup.md", "one");
    put(&vault, "z/b/solo.md", "two");
    put(&vault, "z/c/l.md", "[[solo]] [[dup]]\n");
    let engine = open(&vault);
    let before = broken(&engine);
    // `solo` becomes a second `dup`, deeper than z/a/dup.md: a bare [[dup]] would still mean z/a/dup.md.
    let staged = mv(&engine, "z/b/solo.md", "z/b/x/dup.md").unwrap();
    apply(&engine, &staged.proposal_id);
    assert_eq!(read(&vault, "z/c/l.md"), "[[x/dup]] [[dup]]\n");
    assert_eq!(broken(&engine), before);
}

#[test]
fn a_case_only_rename_and_no_alias_when_asked() {
    let (_tmp, vault) = common::temp_vault();
    put(&vault, "z/note.md", "body\n");
    put(&vault, "z/l.md", "[[note]] [t](note.md)\n");
    let engine = open(&vault);
    let staged = engine
        .propose_move(&ProposeMoveArgs {
            from: "z/note.md".into(),
            to: "z/Note.md".into(),
            reason: "capitalise".into(),
            keep_alias: Some(false),
        })
        .unwrap();
    apply(&engine, &staged.proposal_id);
    assert_eq!(read(&vault, "z/Note.md"), "body\n");
    assert_eq!(read(&vault, "z/l.md"), "[[Note]] [t](Note.md)\n");
}

#[test]
fn a_folder_moves_with_its_links_and_the_broken_count_stays() {
    let (_tmp, vault) = common::temp_vault();
    put(&vault, "z/资料/备份（新）.md", "# 标题\n[同级](另一篇.md) [[另一篇]] [外](../设计.md)\n");
    put(&vault, "z/资料/另一篇.md", "[[备份（新）#标题]] ![[备份（新）]] [缺](不存在.md)\n");
    put(&vault, "z/资料/深/第三.md", "[上](../另一篇.md)\n");
    put(&vault, "z/外面.md", "[[资料/另一篇]] [x](资料/深/第三.md) [[备份（新）|显示]]\n");
    let engine = open(&vault);
    let before = broken(&engine);
    let staged = mv(&engine, "z/资料", "z/归档/资料 2024").unwrap();
    assert_eq!(staged.moves.len(), 3);
    assert!(staged.diff.starts_with("# move folder z/资料 → z/归档/资料 2024 (3 notes)"), "{}", staged.diff);
    apply(&engine, &staged.proposal_id);
    assert!(!vault.join("z/资料/另一篇.md").exists());
    assert_eq!(
        read(&vault, "z/外面.md"),
        "[[资料 2024/另一篇]] [x](%E5%BD%92%E6%A1%A3/%E8%B5%84%E6%96%99%202024/%E6%B7%B1/%E7%AC%AC%E4%B8%89.md) [[备份（新）|显示]]\n"
    );
    let moved = read(&vault, "z/归档/资料 2024/备份（新）.md");
    assert!(moved.contains("[外](../../设计.md)"), "{moved}");
    assert!(moved.contains("[同级](另一篇.md)"), "{moved}");
    assert_eq!(broken(&engine), before);
    // Moving a folder into itself, onto a taken path, outside the notes roots.
    assert_eq!(mv(&engine, "z/归档", "z/归档/x").unwrap_err().code, ErrorCode::InvalidArgument);
    assert_eq!(mv(&engine, "z/外面.md", "z/设计.md").unwrap_err().code, ErrorCode::TargetExists);
    assert_eq!(mv(&engine, "z/外面.md", "docs/外面.md").unwrap_err().code, ErrorCode::PathDenied);
    assert_eq!(mv(&engine, "z/外面.md", "inbox/外面.md").unwrap_err().code, ErrorCode::PathDenied);
    assert_eq!(mv(&engine, "z/外面.md", "../外面.md").unwrap_err().code, ErrorCode::PathDenied);
    assert_eq!(mv(&engine, "z/外面.md", "z/外面.md").unwrap_err().code, ErrorCode::InvalidArgument);
}

/// Every resolved link of the vault as (linking note, linked note), once per
/// link, sorted, each path passed through `follow`.
fn link_edges(engine: &Engine, follow: &dyn Fn(&str) -> String) -> Vec<(String, String)> {
    let mut edges: Vec<(String, String)> = engine
        .records()
        .iter()
        .flat_map(|record| {
            let to = follow(&record.path);
            engine
                .backlinks(&record.path)
                .unwrap_or_default()
                .into_iter()
                .map(move |from| (follow(&from), to.clone()))
        })
        .collect();
    edges.sort();
    edges
}

/// Moves `from` to `to` (a note) and checks that every link of the vault still
/// leads where it led, the moved note followed to its new path, and that as
/// many links are broken as before.
fn move_keeping_every_link(engine: &Engine, from: &str, to: &str) {
    let follow = |path: &str| if path == from { to.to_owned() } else { path.to_owned() };
    let (edges, broken_before) = (link_edges(engine, &follow), broken(engine));
    let staged = mv(engine, from, to).unwrap_or_else(|err| panic!("{from} → {to}: {err}"));
    assert_eq!(apply(engine, &staged.proposal_id).status, ApplyStatus::Applied, "{from} → {to}");
    assert_eq!(broken(engine), broken_before, "after moving {from} → {to}");
    assert_eq!(link_edges(engine, &|path| path.to_owned()), edges, "a link changed its note: {from} → {to}");
}

/// The invariant on the fixture vault: every note moved in turn (to a new
/// folder and name), the count of broken links never changes.
#[test]
fn moving_any_fixture_note_keeps_the_broken_link_count() {
    let (_tmp, vault) = common::temp_vault();
    let engine = open(&vault);
    let before = broken(&engine);
    let notes: Vec<String> = engine
        .records()
        .iter()
        .filter(|r| r.kind == kb_mcp::vault::NoteKind::Note)
        .map(|r| r.path.clone())
        .collect();
    assert!(notes.len() > 10);
    for (number, path) in notes.iter().enumerate() {
        let stem = NotePath::parse(path).unwrap().stem().to_owned();
        let to = format!("z/moved/{number}/{stem} moved.md");
        let staged = mv(&engine, path, &to).unwrap_or_else(|err| panic!("{path}: {err}"));
        apply(&engine, &staged.proposal_id);
        assert_eq!(broken(&engine), before, "after moving {path}");
        // The index agrees with a fresh build.
        let fresh = open(&vault);
        assert_eq!(broken(&fresh), before, "after moving {path}, rebuilt");
    }
}

/// A note moved onto a name another note has as an alias (`[[alias]]` then
/// names the moved note's file, which wins over an alias) takes none of that
/// note's links: on the fixture vault, for every alias, some other note is
/// moved to that name and every link of the vault still leads where it led.
#[test]
fn a_note_moved_onto_an_alias_takes_no_link_of_the_aliased_note() {
    let (_tmp, vault) = common::temp_vault();
    let engine = open(&vault);
    let mut aliases: Vec<(String, String)> = engine
        .records()
        .iter()
        .filter(|r| r.kind == kb_mcp::vault::NoteKind::Note)
        .flat_map(|r| r.aliases.iter().map(|alias| (alias.clone(), r.path.clone())).collect::<Vec<_>>())
        .filter(|(alias, _)| NotePath::parse(&format!("z/{alias}.md")).is_ok())
        .collect();
    aliases.sort();
    assert!(aliases.len() >= 3, "the fixture vault has aliases: {aliases:?}");
    let linked_by_alias = aliases.iter().filter(|(alias, owner)| {
        engine.backlinks(owner).unwrap_or_default().iter().any(|from| {
            engine.record(from).is_some_and(|r| r.links.iter().any(|l| l.target.eq_ignore_ascii_case(alias)))
        })
    });
    assert!(linked_by_alias.count() >= 1, "some fixture link names its note by an alias");
    for (number, (alias, owner)) in aliases.iter().enumerate() {
        let mover = engine
            .records()
            .iter()
            .filter(|r| r.kind == kb_mcp::vault::NoteKind::Note && r.path != *owner)
            .map(|r| r.path.clone())
            .nth(number)
            .unwrap();
        move_keeping_every_link(&engine, &mover, &format!("z/aliased/{number}/{alias}.md"));
    }
}

#[test]
fn a_link_by_alias_keeps_its_note_and_its_shown_text() {
    let (_tmp, vault) = common::temp_vault();
    put(&vault, "z/b.md", "---\naliases: [Ex, Wide Name]\n---\n# Head\n\nb ^blk\n");
    put(&vault, "z/c.md", "c\n");
    let linker = "[[Ex]] and [[ex#Head]] and [[Ex|shown]] and [[Ex#^blk]]\n\n| col | [[Ex]] |\n|---|---|\n| a | [[Wide Name]] |\n";
    put(&vault, "z/a.md", linker);
    let engine = open(&vault);
    move_keeping_every_link(&engine, "z/c.md", "z/d/Ex.md");
    assert_eq!(
        read(&vault, "z/a.md"),
        "[[b|Ex]] and [[b#Head|ex]] and [[b|shown]] and [[b#^blk|Ex]]\n\n| col | [[b\\|Ex]] |\n|---|---|\n| a | [[Wide Name]] |\n"
    );
    // A link the move did not reach is not touched.
    move_keeping_every_link(&engine, "z/d/Ex.md", "z/d/Other.md");
    assert!(read(&vault, "z/a.md").contains("[[Wide Name]]"));
}

#[test]
fn a_racing_edit_between_propose_and_apply_writes_nothing() {
    let (_tmp, vault) = link_vault();
    let engine = open(&vault);
    let staged = mv(&engine, "z/m/target.md", "z/n/t2.md").unwrap();
    put(&vault, "z/other.md", "someone saved this\n");
    let snapshot = notes_snapshot(&vault);
    let err = engine
        .apply_proposal(&ApplyArgs { proposal_id: staged.proposal_id.clone() }, Actor::Cli)
        .unwrap_err();
    assert_eq!(err.code, ErrorCode::StaleBase);
    assert!(err.message.contains("z/other.md"), "{}", err.message);
    assert_eq!(notes_snapshot(&vault), snapshot, "nothing written");
    assert!(audit_lines(&vault).is_empty());
    // A target taken meanwhile: target_exists, nothing written.
    let (_tmp2, vault2) = link_vault();
    let engine2 = open(&vault2);
    let staged2 = mv(&engine2, "z/m/target.md", "z/n/t2.md").unwrap();
    put(&vault2, "z/n/t2.md", "mine\n");
    let snapshot2 = notes_snapshot(&vault2);
    let err =
        engine2.apply_proposal(&ApplyArgs { proposal_id: staged2.proposal_id }, Actor::Cli).unwrap_err();
    assert_eq!(err.code, ErrorCode::TargetExists);
    assert_eq!(notes_snapshot(&vault2), snapshot2);
}

#[test]
fn a_delete_goes_to_the_trash_and_lists_what_breaks() {
    let (_tmp, vault) = link_vault();
    let engine = open(&vault);
    let before = broken(&engine);
    let staged = engine
        .propose_delete(&ProposeDeleteArgs { path: "z/m/target.md".into(), reason: "obsolete".into() })
        .unwrap();
    assert_eq!(staged.kind, ProposalKind::Delete);
    assert_eq!(staged.target, "z/m/target.md");
    assert_eq!(staged.breaks.len(), 12, "{:?}", staged.breaks);
    assert!(staged.breaks.iter().any(|b| b.path == "z/other.md" && b.line == 1));
    let bytes = read(&vault, "z/m/target.md");
    apply(&engine, &staged.proposal_id);
    assert!(!vault.join("z/m/target.md").exists());
    let trash: Vec<_> = common::snapshot(&vault.join("inbox/trash"));
    assert_eq!(trash.len(), 1, "{trash:?}");
    assert!(trash[0].0.ends_with("/z/m/target.md"), "{:?}", trash[0].0);
    assert_eq!(trash[0].1, bytes.as_bytes());
    assert_eq!(broken(&engine), before + 12);
    assert_eq!(
        engine
            .propose_delete(&ProposeDeleteArgs { path: "docs/tags.md".into(), reason: "x".into() })
            .unwrap_err()
            .code,
        ErrorCode::PathDenied
    );
}

/// A link to a deleted note that another note of its name (or with it as an
/// alias) will answer does not break: the delete says where it will lead, and
/// `breaks` holds only the links that will stop resolving; the counts after
/// the apply agree.
#[test]
fn a_delete_says_which_links_will_lead_to_another_note() {
    let (_tmp, vault) = common::temp_vault();
    put(&vault, "z/a/dup.md", "# One\n");
    put(&vault, "z/b/x/dup.md", "# Two\n\n## Deep\n");
    put(&vault, "z/X.md", "x\n");
    put(&vault, "z/B.md", "---\naliases: [X]\n---\nb\n");
    put(&vault, "z/l.md", "[[dup]] and [[a/dup]]\n[[dup#Deep]] and [[X]]\n[[dup#Nowhere]]\n");
    let engine = open(&vault);
    let before = broken(&engine);
    let staged = engine
        .propose_delete(&ProposeDeleteArgs { path: "z/a/dup.md".into(), reason: "merged".into() })
        .unwrap();
    let breaks: Vec<(&str, u32, &str)> =
        staged.breaks.iter().map(|b| (b.path.as_str(), b.line, b.link.as_str())).collect();
    assert_eq!(breaks, vec![("z/l.md", 1, "[[a/dup]]")]);
    let redirected: Vec<(&str, u32, &str, &str)> = staged
        .redirected
        .iter()
        .map(|b| (b.path.as_str(), b.line, b.link.as_str(), b.to.as_deref().unwrap()))
        .collect();
    assert_eq!(
        redirected,
        vec![("z/l.md", 1, "[[dup]]", "z/b/x/dup.md"), ("z/l.md", 2, "[[dup#Deep]]", "z/b/x/dup.md")],
        "[[dup#Deep]] was broken (z/a/dup.md has no such heading) and will resolve; [[dup#Nowhere]] stays broken"
    );
    let summary = &engine.list_proposals(&ListProposalsArgs::default()).unwrap().proposals[0].summary;
    assert_eq!(
        summary,
        "delete z/a/dup.md (to the inbox's trash), 1 link will break, 2 links will lead to another note"
    );
    apply(&engine, &staged.proposal_id);
    // [[a/dup]] broke, [[dup#Deep]] was broken and resolves now.
    assert_eq!(broken(&engine), before);
    assert_eq!(backlinks_of(&engine, "z/b/x/dup.md"), vec!["z/l.md", "z/l.md"]);
    // Undoing it takes [[dup]] back to the note it brings back, and [[dup#Deep]]
    // breaks again (that note has no such heading), and it says so.
    let undo = revert(&engine, &staged.proposal_id).unwrap();
    assert_eq!(
        undo.diff.lines().next().unwrap(),
        format!(
            "# revert {} (delete z/a/dup.md (to the inbox's trash), 1 link will break, 2 links will lead to another note); once reverted, 1 link will break, 1 link will lead to another note",
            staged.proposal_id
        )
    );
    engine.reject_proposal(&undo.proposal_id, "keep it deleted", Actor::Cli).unwrap();

    // A note whose name another note has as an alias.
    let staged =
        engine.propose_delete(&ProposeDeleteArgs { path: "z/X.md".into(), reason: "gone".into() }).unwrap();
    assert!(staged.breaks.is_empty(), "{:?}", staged.breaks);
    assert_eq!(staged.redirected.len(), 1);
    assert_eq!(
        (staged.redirected[0].link.as_str(), staged.redirected[0].to.as_deref()),
        ("[[X]]", Some("z/B.md"))
    );
}

/// A new note or a patch changes no other note, yet can make links written
/// in other notes lead elsewhere (a new note named like another's alias takes
/// its links) or nowhere (a renamed heading): the proposal lists them, and the
/// review and the confirmation before `apply_proposal` show them to the person.
#[test]
fn a_new_note_or_a_patch_says_which_links_in_other_notes_it_moves_or_breaks() {
    let (_tmp, vault) = common::temp_vault();
    put(&vault, "z/B.md", "---\naliases: [Ex]\n---\n# B\n\n## Old\n\ntext\n");
    put(&vault, "z/l.md", "# L\n[[Ex]] and [[B#Old]]\n[[Missing]]\n");
    let engine = open(&vault);
    let link = |b: &BrokenBy| (b.path.clone(), b.line, b.link.clone(), b.to.clone());

    let staged = engine
        .propose_new_note(&ProposeNewArgs {
            title: "Ex".into(),
            body: "a note of its own".into(),
            reason: "split".into(),
            folder: Some("z".into()),
            ..Default::default()
        })
        .unwrap();
    assert!(staged.breaks.is_empty(), "{:?}", staged.breaks);
    assert_eq!(
        staged.redirected.iter().map(link).collect::<Vec<_>>(),
        vec![("z/l.md".into(), 2, "[[Ex]]".into(), Some("z/Ex.md".into()))]
    );
    let review = engine.review_proposal(&staged.proposal_id).unwrap();
    assert_eq!(review.redirected, staged.redirected);
    // Once its target is taken the apply would refuse it: it changes no link.
    put(&vault, "z/Ex.md", "someone else's\n");
    assert!(engine.review_proposal(&staged.proposal_id).unwrap().redirected.is_empty());
    fs::remove_file(vault.join("z/Ex.md")).unwrap();
    let confirmation = engine.proposal_confirmation(&staged.proposal_id).unwrap();
    assert!(
        confirmation
            .contains("Links in other notes that will lead to another note: 1\n- z/l.md:2 [[Ex]] → z/Ex.md"),
        "{confirmation}"
    );
    engine.reject_proposal(&staged.proposal_id, "kept as an alias", Actor::Cli).unwrap();

    // A note answering a broken link, or named like nothing, is said to change nothing.
    for title in ["Missing", "Fresh"] {
        let staged = engine
            .propose_new_note(&ProposeNewArgs {
                title: title.into(),
                body: "b".into(),
                reason: "r".into(),
                folder: Some("z".into()),
                ..Default::default()
            })
            .unwrap();
        assert!(staged.breaks.is_empty() && staged.redirected.is_empty(), "{title}: {staged:?}");
        let json = serde_json::to_value(&staged).unwrap();
        assert!(["breaks", "redirected", "unlisted"].iter().all(|key| json.get(key).is_none()), "{json}");
    }

    // A patch renaming the heading and dropping the alias breaks both links.
    let staged = engine
        .propose_note_patch(&ProposePatchArgs {
            path: "z/B.md".into(),
            base_hash: hash_of(&vault, "z/B.md"),
            reason: "rename".into(),
            edits: vec![
                serde_json::from_value(serde_json::json!(
                    {"op": "replace_all", "content": "# B\n\n## New\n\ntext\n"}
                ))
                .unwrap(),
            ],
        })
        .unwrap();
    assert_eq!(
        staged.breaks.iter().map(link).collect::<Vec<_>>(),
        vec![("z/l.md".into(), 2, "[[Ex]]".into(), None), ("z/l.md".into(), 2, "[[B#Old]]".into(), None)]
    );
    assert!(staged.redirected.is_empty());
    assert_eq!(engine.review_proposal(&staged.proposal_id).unwrap().breaks, staged.breaks);
    let before = broken(&engine);
    apply(&engine, &staged.proposal_id);
    assert_eq!(broken(&engine), before + staged.breaks.len(), "what it said would break did");

    // In a batch, the summary counts them.
    put(&vault, "z/C.md", "---\naliases: [Cee]\n---\n# C\n");
    put(&vault, "z/m.md", "[[Cee]] [[Cee]]\n");
    engine.sync(false, None).unwrap();
    let staged =
        batch(&engine, serde_json::json!([{"kind": "new", "title": "Cee", "body": "b", "folder": "z"}]))
            .unwrap();
    assert_eq!(staged.diff.lines().next().unwrap(), "# batch: 1 new, 2 links will lead to another note");
}

/// A new note named like a much-linked note's alias can take thousands of
/// links: the answer names the first 100 of each list and counts the rest;
/// the person's review names every one.
#[test]
fn a_new_note_taking_many_links_names_the_first_hundred_and_counts_the_rest() {
    let (_tmp, vault) = common::temp_vault();
    put(&vault, "z/C.md", "---\naliases: [Cee]\n---\n# C\n");
    for n in 0..120 {
        put(&vault, &format!("z/many/n{n:03}.md"), "[[Cee]]\n");
    }
    let engine = open(&vault);
    let staged = engine
        .propose_new_note(&ProposeNewArgs {
            title: "Cee".into(),
            body: "b".into(),
            reason: "r".into(),
            folder: Some("z".into()),
            ..Default::default()
        })
        .unwrap();
    assert_eq!((staged.redirected.len(), staged.unlisted), (100, 20));
    assert_eq!(staged.redirected[0].path, "z/many/n000.md");
    assert_eq!(engine.review_proposal(&staged.proposal_id).unwrap().redirected.len(), 120);
    let json = serde_json::to_value(&staged).unwrap();
    assert_eq!(json["unlisted"], 20);
}

/// A standard is read-only, so a move never rewrites it: a move that would
/// change where one of its links leads is refused before anything is staged,
/// naming the link; one it leaves leading where it led (a link by the moved
/// note's old name, kept as an alias) goes ahead without touching it.
#[test]
fn a_move_never_rewrites_a_standard_and_never_changes_where_its_links_lead() {
    let (_tmp, vault) = common::temp_vault();
    put(&vault, "z/B.md", "---\naliases: [Ex]\n---\n# B\n");
    put(&vault, "z/C.md", "# C\n");
    put(&vault, "docs/links.md", "# Links\nSee [[Ex]] and [[C]].\n");
    let engine = open(&vault);
    let before = notes_snapshot(&vault);

    let err = mv(&engine, "z/C.md", "z/Ex.md").unwrap_err();
    assert_eq!(err.code, ErrorCode::Conflict, "{err:?}");
    assert!(
        err.message
            .contains("[[Ex]] in docs/links.md (read-only: it is not rewritten), line 2, lead to z/Ex.md"),
        "{}",
        err.message
    );
    let refused = engine.propose_move(&ProposeMoveArgs {
        from: "z/C.md".into(),
        to: "z/D.md".into(),
        reason: "r".into(),
        keep_alias: Some(false),
    });
    let err = refused.unwrap_err();
    assert!(
        err.message.contains("[[C]] in docs/links.md (read-only: it is not rewritten), line 2, break"),
        "{}",
        err.message
    );
    assert!(engine.list_proposals(&ListProposalsArgs::default()).unwrap().proposals.is_empty());
    assert_eq!(notes_snapshot(&vault), before, "nothing staged, nothing written");

    // Keeping the old name as an alias, [[C]] still leads to the moved note.
    let staged = mv(&engine, "z/C.md", "z/D.md").unwrap();
    assert!(
        staged.files.iter().all(|f| !f.contains("docs/")) && !staged.diff.contains("docs/links.md"),
        "{}",
        staged.diff
    );
    apply(&engine, &staged.proposal_id);
    assert_eq!(read(&vault, "docs/links.md"), "# Links\nSee [[Ex]] and [[C]].\n");
    assert_eq!(backlinks_of(&engine, "z/D.md"), vec!["docs/links.md"]);
}

/// A multi-file proposal's live checks name what stops its apply: a file
/// changed since (`base_current`), a destination taken (`target_free`).
#[test]
fn a_moves_checks_say_which_check_fails() {
    let (_tmp, vault) = common::temp_vault();
    put(&vault, "z/C.md", "# C\n");
    put(&vault, "z/linker.md", "[[C]]\n");
    let engine = open(&vault);
    let staged = mv(&engine, "z/C.md", "z/D.md").unwrap();
    let checks = |engine: &Engine| {
        let listed = engine.list_proposals(&ListProposalsArgs::default()).unwrap();
        let entry = listed.proposals.iter().find(|p| p.proposal_id == staged.proposal_id).unwrap().clone();
        (entry.checks.intact, entry.checks.base_current, entry.checks.target_free)
    };
    assert_eq!(checks(&engine), (true, true, true));
    put(&vault, "z/linker.md", "[[C]] edited\n");
    assert_eq!(checks(&engine), (true, false, true), "a note it rewrites changed");
    put(&vault, "z/linker.md", "[[C]]\n");
    put(&vault, "z/D.md", "# D\n");
    assert_eq!(checks(&engine), (true, true, false), "its destination is taken");
}

/// A crash after each step of a multi-file apply (a failpoint that stops the
/// apply on the spot): the next start leaves every file as it was (before the
/// commit point) or as proposed (after it), never some moved and others not;
/// exactly one audit line once applied.
#[test]
fn a_crash_at_any_step_of_a_move_is_rolled_back_or_completed() {
    let steps = [
        Step::Claimed,
        Step::Prepared,
        Step::File(0),
        Step::File(1),
        Step::Written,
        Step::Archiving,
        Step::Archived,
        Step::Indexed,
        Step::Audited,
    ];
    for step in steps {
        let (_tmp, vault) = link_vault();
        let engine = open(&vault);
        let original = notes_snapshot(&vault);
        let original_folders = folders(&vault);
        let staged = mv(&engine, "z/m/target.md", "z/n/t2.md").unwrap();
        let sandbox = sandbox(&vault);
        crash_apply_at(&sandbox, &staged.proposal_id, step);
        let recovery = write::recover(&sandbox, Actor::Cli, &mut |_| Ok(())).unwrap();
        assert!(recovery.failed.is_empty(), "{step:?}: {recovery:?}");
        assert!(!vault.join("inbox/_applying.json").exists());
        // The new texts written beside the notes ahead of their swaps are gone.
        let temps: Vec<String> = common::snapshot(&vault)
            .into_iter()
            .map(|(path, _)| path)
            .filter(|path| path.contains(".kb-tmp-"))
            .collect();
        assert!(temps.is_empty(), "{step:?}: {temps:?}");
        let committed = matches!(step, Step::Archiving | Step::Archived | Step::Indexed | Step::Audited);
        if committed {
            assert!(!vault.join("z/m/target.md").exists(), "{step:?}");
            assert!(read(&vault, "z/m/linker.md").contains("[[t2]]"), "{step:?}");
            assert!(read(&vault, "z/other.md").contains("[[n/t2]]"), "{step:?}");
            assert_eq!(audit_lines(&vault).len(), 1, "{step:?}");
        } else {
            assert_eq!(notes_snapshot(&vault), original, "{step:?}: rolled back");
            assert_eq!(folders(&vault), original_folders, "{step:?}: the new folder z/n is gone");
            assert!(audit_lines(&vault).is_empty(), "{step:?}");
            // Still pending: applying it now works.
            apply(&engine, &staged.proposal_id);
            assert!(read(&vault, "z/m/linker.md").contains("[[t2]]"), "{step:?}");
            assert_eq!(audit_lines(&vault).len(), 1, "{step:?}");
        }
    }
}

const KILL_CHILD_ENV: &str = "KB_STRUCTURE_KILL_CHILD";

/// In the child process of a kill test: says through `marker` that the apply
/// reached the step it was sent to, then waits for its SIGKILL.
fn wait_to_be_killed(marker: &Path) -> ! {
    fs::write(marker, "here").unwrap();
    loop {
        std::thread::sleep(std::time::Duration::from_secs(1));
    }
}

/// Runs this binary's test `name` again as a child process with `env` set to
/// `job`, and returns it once it has written `marker` (it reached its step and
/// waits there). `what` names the case in failures.
fn child_at_marker(name: &str, env: &str, job: String, marker: &Path, what: &str) -> std::process::Child {
    let mut child = std::process::Command::new(std::env::current_exe().unwrap())
        .args(["--exact", &format!("structure::{name}"), "--test-threads=1"])
        .env(env, job)
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    while !marker.exists() {
        assert!(child.try_wait().unwrap().is_none(), "{what}: the child ended before its step");
        std::thread::sleep(std::time::Duration::from_millis(2));
    }
    child
}

/// [`child_at_marker`], then a SIGKILL of the child where it waits (see
/// [`wait_to_be_killed`]).
fn kill_child_at_marker(name: &str, env: &str, job: String, marker: &Path, what: &str) {
    let mut child = child_at_marker(name, env, job, marker, what);
    child.kill().unwrap();
    child.wait().unwrap();
}

/// In the child process of a kill test (`job` is `<vault>|<proposal id>|<marker>`):
/// applies the proposal and waits to be killed after the plan's first file
/// operation, before its second (see [`wait_to_be_killed`]).
fn apply_until_killed_at_second_file(job: &str) -> ! {
    let parts: Vec<&str> = job.split('|').collect();
    let (root, id, marker) = (Path::new(parts[0]), parts[1], Path::new(parts[2]));
    let sandbox = sandbox(root);
    let _ = write::apply_with_failpoint(&sandbox, id, Actor::Cli, &mut |_| Ok(()), &mut |at| {
        if at == Step::File(1) {
            wait_to_be_killed(marker);
        }
        Ok(())
    });
    panic!("the apply went past its second file without stopping");
}

/// Applies the staged move in a child process running test `name` (which
/// calls [`apply_until_killed_at_second_file`]) and kills it with SIGKILL
/// mid-apply: the note moved, not every link rewritten, the journal left.
fn kill_move_mid_apply(name: &str, scratch: &Path, vault: &Path, staged: &ProposeMoveResult) {
    let marker = scratch.join("marker");
    let job = format!("{}|{}|{}", vault.display(), staged.proposal_id, marker.display());
    kill_child_at_marker(name, KILL_CHILD_ENV, job, &marker, "the move");
    assert!(vault.join("z/n/t2.md").exists() && !vault.join("z/m/target.md").exists(), "half moved");
    assert!(vault.join("inbox/_applying.json").exists(), "the journal is left");
}

/// A real SIGKILL in the middle of a multi-file apply (after the first file
/// moved, before the links are rewritten), then a fresh start: all or nothing.
#[test]
fn a_move_killed_mid_apply_is_rolled_back_on_the_next_start() {
    if let Ok(job) = std::env::var(KILL_CHILD_ENV) {
        apply_until_killed_at_second_file(&job);
    }
    if !cfg!(unix) {
        eprintln!("skipped: SIGKILL at a chosen step needs a Unix system");
        return;
    }
    let (tmp, vault) = link_vault();
    let engine = open(&vault);
    let original = notes_snapshot(&vault);
    let original_folders = folders(&vault);
    let staged = mv(&engine, "z/m/target.md", "z/n/t2.md").unwrap();
    drop(engine);
    kill_move_mid_apply(
        "a_move_killed_mid_apply_is_rolled_back_on_the_next_start",
        tmp.path(),
        &vault,
        &staged,
    );
    // The next start rolls it back.
    let engine = open(&vault);
    engine.recover_proposals(Actor::Mcp).unwrap();
    let now = notes_snapshot(&vault);
    let differ: Vec<&String> =
        now.iter().filter(|file| !original.contains(file)).map(|(path, _)| path).collect();
    assert!(differ.is_empty() && now.len() == original.len(), "{differ:?}");
    assert_eq!(folders(&vault), original_folders, "the new folder z/n is gone");
    assert!(!vault.join("inbox/_applying.json").exists());
    apply(&engine, &staged.proposal_id);
    assert!(read(&vault, "z/m/linker.md").contains("[[t2]]"));
    assert_eq!(audit_lines(&vault).len(), 1);
}

/// Issue 34, item 9: after a crash mid-apply, no call is answered from the
/// half-applied vault. The server recovers before it serves the vault: a call
/// arriving meanwhile waits for the recovery, then reads the vault as it was
/// put back; one that would wait past the bound (10 s) is told the vault is
/// being recovered. The test holds the inbox lock, as another process's apply
/// would, so recovery (which takes that lock) lasts as long as the test wants.
/// Before, recovery ran in the background after the start-up sync, and calls
/// read the half-moved files meanwhile (for up to 2.7 s after a restart).
#[test]
fn issue34_no_call_is_answered_from_a_vault_half_applied_by_a_crash() {
    const NAME: &str = "issue34_no_call_is_answered_from_a_vault_half_applied_by_a_crash";
    if let Ok(job) = std::env::var(KILL_CHILD_ENV) {
        apply_until_killed_at_second_file(&job);
    }
    if !cfg!(unix) {
        eprintln!("skipped: SIGKILL at a chosen step needs a Unix system");
        return;
    }
    let (tmp, vault) = link_vault();
    let engine = open(&vault);
    let original = notes_snapshot(&vault);
    let staged = mv(&engine, "z/m/target.md", "z/n/t2.md").unwrap();
    drop(engine);
    kill_move_mid_apply(NAME, tmp.path(), &vault, &staged);
    let lock = fs::OpenOptions::new()
        .read(true)
        .write(true)
        .create(true)
        .truncate(false)
        .open(vault.join("inbox/_apply.lock"))
        .unwrap();
    lock.lock().unwrap();
    let mut server = common::RawStdio::start(&vault, "read", serde_json::json!({}));
    let read = |id: &str| {
        serde_json::json!({"jsonrpc": "2.0", "id": id, "method": "tools/call",
            "params": {"name": "read_note", "arguments": {"path": "z/m/target.md"}}})
        .to_string()
    };
    // Recovery held past the bound: the call is told why it cannot be answered.
    server.send(&read("held"));
    let held = server.next();
    assert_eq!(held["id"], "held", "{held}");
    let error = common::tool_error(&held["result"]);
    assert_eq!(error["code"], "index_unavailable", "{held}");
    let message = error["message"].as_str().unwrap();
    assert!(message.contains("being recovered") && message.contains("interrupted"), "{message}");
    assert!(error["hint"].as_str().unwrap().contains("again"), "{error}");
    // A call arriving during recovery waits for it, then finds the note where it was.
    server.send(&read("waits"));
    server.send(
        &serde_json::json!({"jsonrpc": "2.0", "id": "search", "method": "tools/call",
            "params": {"name": "search_note_content", "arguments": {"query": "Text"}}})
        .to_string(),
    );
    std::thread::sleep(std::time::Duration::from_secs(1));
    lock.unlock().unwrap();
    let mut answers = std::collections::BTreeMap::new();
    for _ in 0..2 {
        let answer = server.next();
        answers.insert(answer["id"].as_str().unwrap().to_owned(), answer);
    }
    let waited = &answers["waits"]["result"];
    assert_ne!(waited["isError"], true, "{waited}");
    assert!(waited["structuredContent"]["content"].as_str().unwrap().starts_with("# Head"), "{waited}");
    let hits = answers["search"]["result"]["structuredContent"]["results"].as_array().unwrap().clone();
    let paths: Vec<&str> = hits.iter().map(|hit| hit["path"].as_str().unwrap()).collect();
    assert!(paths.contains(&"z/m/target.md") && !paths.contains(&"z/n/t2.md"), "{paths:?}");
    let (rest, log) = server.finish();
    assert!(rest.is_empty(), "one answer per request: {rest:?}");
    assert!(log.lines().any(|line| line.contains("\"recovered\"")), "{log}");
    assert_eq!(notes_snapshot(&vault), original, "rolled back");
}

/// The index as committed, without a sync: each record's path and content hash.
fn committed_index(vault: &Path) -> Vec<(String, String)> {
    let engine = Engine::open(&EngineOptions { vault: vault.to_owned(), index_dir: None }).unwrap();
    records_of(&engine)
}

/// What an index of the vault as it is holds: a full build into another folder.
fn index_of_files(vault: &Path, scratch: &Path) -> Vec<(String, String)> {
    let dir = scratch.join(format!("fresh-index-{}", std::process::id()));
    let _ = fs::remove_dir_all(&dir);
    let engine =
        Engine::open(&EngineOptions { vault: vault.to_owned(), index_dir: Some(dir.clone()) }).unwrap();
    engine.sync(true, None).unwrap();
    let records = records_of(&engine);
    drop(engine);
    fs::remove_dir_all(&dir).unwrap();
    records
}

fn records_of(engine: &Engine) -> Vec<(String, String)> {
    engine.records().iter().map(|record| (record.path.clone(), record.hash.clone())).collect()
}

/// The engine's apply indexes a move's notes while their files are written
/// (a thread fills an index update ahead) and commits only after the commit
/// point. A crash at any step (a failpoint that stops the apply on the spot)
/// leaves the committed index as it was before the commit point: nothing
/// filled ahead shows, neither in this engine nor in a fresh one. Once the
/// next start has recovered (and, when rolled back, the apply is run again),
/// the index is exactly what a full build of the vault makes.
#[test]
fn a_crash_at_any_step_of_an_engine_apply_commits_nothing_ahead() {
    let steps = [
        Step::Claimed,
        Step::Prepared,
        Step::File(0),
        Step::File(2),
        Step::Written,
        Step::Archiving,
        Step::Archived,
        Step::Indexed,
        Step::Audited,
    ];
    for step in steps {
        let (tmp, vault) = link_vault();
        let engine = open(&vault);
        let original = committed_index(&vault);
        assert_eq!(original, index_of_files(&vault, tmp.path()));
        let staged = mv(&engine, "z/m/target.md", "z/n/t2.md").unwrap();
        let args = ApplyArgs { proposal_id: staged.proposal_id.clone() };
        let err = engine
            .apply_proposal_with_failpoint(&args, Actor::Cli, &mut |at| {
                if at == step { Err(Error::internal("crash")) } else { Ok(()) }
            })
            .unwrap_err();
        assert_eq!(err.message, "crash", "{step:?}");
        if !matches!(step, Step::Indexed | Step::Audited) {
            assert_eq!(committed_index(&vault), original, "{step:?}: nothing committed ahead");
            assert_eq!(records_of(&engine), original, "{step:?}: the catalog too");
        }
        drop(engine);
        let engine = open(&vault);
        engine.recover_proposals(Actor::Mcp).unwrap();
        if !committed(step) {
            apply(&engine, &staged.proposal_id);
        }
        assert!(read(&vault, "z/m/linker.md").contains("[[t2]]"), "{step:?}");
        assert_eq!(audit_lines(&vault).len(), 1, "{step:?}");
        let files = index_of_files(&vault, tmp.path());
        assert!(files.iter().any(|(path, _)| path == "z/n/t2.md"), "{step:?}: {files:?}");
        assert_eq!(committed_index(&vault), files, "{step:?}");
        assert_eq!(records_of(&engine), files, "{step:?}");
    }
}

/// A person's save of a rewritten note after its swap, before the index
/// commits, is what the index holds: a document filled ahead counts only
/// while the note's file is still the one the apply wrote.
#[test]
fn a_save_after_its_swap_is_indexed_not_the_text_filled_ahead() {
    let (tmp, vault) = link_vault();
    let engine = open(&vault);
    let staged = mv(&engine, "z/m/target.md", "z/n/t2.md").unwrap();
    let saved = "[[n/t2]], then a person saved this note again right after the apply wrote it\n";
    let args = ApplyArgs { proposal_id: staged.proposal_id.clone() };
    engine
        .apply_proposal_with_failpoint(&args, Actor::Cli, &mut |at| {
            if at == Step::Written {
                fs::write(vault.join("z/other.md"), saved).unwrap();
            }
            Ok(())
        })
        .unwrap();
    assert_eq!(read(&vault, "z/other.md"), saved);
    let hash = kb_mcp::vault::content_hash(saved.as_bytes());
    assert_eq!(engine.record("z/other.md").unwrap().hash, hash);
    assert_eq!(committed_index(&vault), index_of_files(&vault, tmp.path()));
    assert!(engine.record("z/m/target.md").is_none());
}

/// A save racing the engine's apply (it lands on a linking note right before
/// its swap) ends it with `conflict`, the save kept, and the update filled
/// ahead dropped: the index is as before and takes the next apply.
#[test]
fn a_conflicting_save_drops_the_update_filled_ahead() {
    let (tmp, vault) = link_vault();
    let engine = open(&vault);
    let original = committed_index(&vault);
    let staged = mv(&engine, "z/m/target.md", "z/n/t2.md").unwrap();
    let save = "a save\n";
    let args = ApplyArgs { proposal_id: staged.proposal_id.clone() };
    let err = engine
        .apply_proposal_with_failpoint(&args, Actor::Cli, &mut |at| {
            if at == Step::Swapping {
                fs::write(vault.join("z/other.md"), save).unwrap();
            }
            Ok(())
        })
        .unwrap_err();
    assert!(matches!(err.code, ErrorCode::Conflict | ErrorCode::StaleBase), "{err}");
    assert_eq!(read(&vault, "z/other.md"), save, "no save lost");
    assert_eq!(committed_index(&vault), original);
    assert_eq!(records_of(&engine), original);
    engine.sync(false, None).unwrap();
    put(&vault, "z/other.md", "[t](m/target.md) and [[m/target]]\n");
    engine.sync(false, None).unwrap();
    apply(&engine, &staged.proposal_id);
    assert_eq!(committed_index(&vault), index_of_files(&vault, tmp.path()));
}

const ENGINE_KILL_CHILD_ENV: &str = "KB_STRUCTURE_ENGINE_KILL_CHILD";

/// A real SIGKILL of the engine's apply while its index update is filled
/// ahead and uncommitted (after every file is swapped, before the commit
/// point; and after it, before the index update): the next start opens the
/// index as last committed, recovers, and indexes exactly the vault.
#[test]
fn an_engine_apply_killed_with_its_index_filled_ahead_recovers() {
    if let Ok(job) = std::env::var(ENGINE_KILL_CHILD_ENV) {
        let parts: Vec<&str> = job.split('|').collect();
        let (root, id, marker, step) = (Path::new(parts[0]), parts[1], Path::new(parts[2]), parts[3]);
        let engine = Engine::open(&EngineOptions { vault: root.to_owned(), index_dir: None }).unwrap();
        let args = ApplyArgs { proposal_id: id.to_owned() };
        let _ = engine.apply_proposal_with_failpoint(&args, Actor::Cli, &mut |at| {
            if format!("{at:?}") == step {
                wait_to_be_killed(marker);
            }
            Ok(())
        });
        panic!("the apply went past {step} without stopping");
    }
    if !cfg!(unix) {
        eprintln!("skipped: SIGKILL at a chosen step needs a Unix system");
        return;
    }
    for step in [Step::Written, Step::Archived] {
        let (tmp, vault) = link_vault();
        let engine = open(&vault);
        let original = committed_index(&vault);
        let staged = mv(&engine, "z/m/target.md", "z/n/t2.md").unwrap();
        drop(engine);
        let marker = tmp.path().join("marker");
        let job = format!("{}|{}|{}|{step:?}", vault.display(), staged.proposal_id, marker.display());
        kill_child_at_marker(
            "an_engine_apply_killed_with_its_index_filled_ahead_recovers",
            ENGINE_KILL_CHILD_ENV,
            job,
            &marker,
            &format!("{step:?}"),
        );
        assert!(vault.join("z/n/t2.md").exists(), "{step:?}");
        assert_eq!(committed_index(&vault), original, "{step:?}: nothing filled ahead was committed");
        let engine = open(&vault);
        engine.recover_proposals(Actor::Mcp).unwrap();
        if !committed(step) {
            apply(&engine, &staged.proposal_id);
        }
        assert!(read(&vault, "z/m/linker.md").contains("[[t2]]"), "{step:?}");
        assert_eq!(audit_lines(&vault).len(), 1, "{step:?}");
        let files = index_of_files(&vault, tmp.path());
        assert_eq!(committed_index(&vault), files, "{step:?}");
        assert_eq!(records_of(&engine), files, "{step:?}");
    }
}

/// A move into new folders that fails while applying (a person's save lands
/// on a linking note right before its swap) is rolled back whole: the notes as
/// they were and none of the folders the apply created, while a folder that
/// existed, or one the person put a file in meanwhile, stays.
#[test]
fn a_rolled_back_move_leaves_no_folder_it_created() {
    let (_tmp, vault) = link_vault();
    fs::create_dir_all(vault.join("z/kept")).unwrap();
    let engine = open(&vault);
    let original_folders = folders(&vault);
    let staged = mv(&engine, "z/m/target.md", "z/new/deeper/t2.md").unwrap();
    let sandbox = sandbox(&vault);
    let save = "a save\n";
    let err =
        write::apply_with_failpoint(&sandbox, &staged.proposal_id, Actor::Cli, &mut |_| Ok(()), &mut |at| {
            if at == Step::Swapping {
                fs::write(vault.join("z/other.md"), save).unwrap();
            }
            Ok(())
        })
        .unwrap_err();
    assert!(matches!(err.code, ErrorCode::Conflict | ErrorCode::StaleBase), "{err}");
    assert_eq!(read(&vault, "z/other.md"), save, "no save lost");
    assert!(vault.join("z/m/target.md").exists());
    assert_eq!(folders(&vault), original_folders, "z/new and z/new/deeper are gone, z/kept stays");
    assert!(!vault.join("inbox/_applying.json").exists());

    // The same after a crash, when a person put a file in one of the new folders meanwhile.
    put(&vault, "z/other.md", "[t](m/target.md) and [[m/target]]\n");
    let err =
        write::apply_with_failpoint(&sandbox, &staged.proposal_id, Actor::Cli, &mut |_| Ok(()), &mut |at| {
            if at == Step::File(0) {
                fs::write(vault.join("z/new/theirs.md"), "theirs\n").unwrap();
                return Err(Error::internal("crash"));
            }
            Ok(())
        })
        .unwrap_err();
    assert_eq!(err.message, "crash");
    assert!(vault.join("z/new/deeper").is_dir(), "the crash left the new folders");
    let recovery = write::recover(&sandbox, Actor::Cli, &mut |_| Ok(())).unwrap();
    assert!(recovery.failed.is_empty(), "{recovery:?}");
    assert!(vault.join("z/m/target.md").exists());
    assert!(!vault.join("z/new/deeper").exists(), "the empty one created is removed");
    assert_eq!(read(&vault, "z/new/theirs.md"), "theirs\n", "the person's file and its folder stay");
}

/// The reported case: a move into a new folder applied on a full disk (a small
/// tmpfs with room for the journal and little else, mounted in a private
/// namespace) fails while its new texts are written beside the notes, after
/// the destination folder was made: every note as it was and no new folder.
#[test]
fn a_move_failing_on_a_full_disk_leaves_no_new_folder() {
    if !cfg!(target_os = "linux") {
        eprintln!("skipped: a tmpfs in a private namespace needs Linux");
        return;
    }
    let (tmp, vault) = link_vault();
    let (disk, index, after) = (tmp.path().join("disk"), tmp.path().join("index"), tmp.path().join("after"));
    for dir in [&disk, &index, &after] {
        fs::create_dir(dir).unwrap();
    }
    let script = r#"D="$1"; K="$3"; I="$4"
        mount -t tmpfs -o size=1m tmpfs "$D" || exit 99
        cp -a "$2/." "$D/" || exit 98
        ID=$("$K" mv z/m/target.md z/new/deeper/t2.md --vault "$D" --index-dir "$I" 2>/dev/null \
            | sed -n '1s/^staged \([^:]*\):.*/\1/p') && [ -n "$ID" ] || exit 97
        dd if=/dev/zero of="$D/spare" bs=4k count=2 2>/dev/null
        dd if=/dev/zero of="$D/filler" bs=4k 2>/dev/null
        rm "$D/spare"
        "$K" inbox apply --yes --only "$ID" --vault "$D" --index-dir "$I" >&2
        echo "apply exit $?" >&2
        rm "$D/filler"
        cp -a "$D/." "$5/""#;
    let kb_index = env!("CARGO_BIN_EXE_kb-index");
    let args = [&disk, &vault, Path::new(kb_index), &index, &after].map(|p| p.to_str().unwrap().to_owned());
    let probe = std::process::Command::new("unshare").args(["-rm", "true"]).output();
    if !probe.is_ok_and(|out| out.status.success()) {
        eprintln!("skipped: no private mount namespace (unshare -rm) on this system");
        return;
    }
    let out = std::process::Command::new("unshare")
        .args(["-rm", "sh", "-c", script, "sh"])
        .args(&args)
        .env_remove("KB_VAULT")
        .output()
        .unwrap();
    let said = String::from_utf8_lossy(&out.stderr).into_owned();
    if out.status.code() == Some(99) {
        eprintln!("skipped: tmpfs cannot be mounted in a private namespace here");
        return;
    }
    assert!(out.status.success(), "{:?}: {said}", out.status.code());
    assert!(said.contains("apply exit 1") && said.contains("is full"), "{said}");
    assert_eq!(notes_snapshot(&after), notes_snapshot(&vault), "{said}");
    assert_eq!(folders(&after), folders(&vault), "no new folder: {said}");
    assert!(!after.join("inbox/_applying.json").exists());
}

/// A note linked to by large notes (a hub): the staged plan keeps each
/// rewrite as the lines it changes and two hashes, not the linking notes' whole
/// texts twice (at 100,000 notes a hub's 10,000 backlinks passed the inbox's
/// 128 MiB cap); the review still shows every change, the apply and the revert
/// are exact, and a linking note changed after staging makes the apply stale.
#[test]
fn a_hub_move_stages_its_rewrites_as_spans() {
    let (_tmp, vault) = common::temp_vault();
    put(&vault, "z/hub.md", "# Hub\n");
    let filler = "a line of prose that says nothing about the hub at all\n".repeat(2_000);
    for n in 0..20 {
        put(
            &vault,
            &format!("z/l/linker {n}.md"),
            &format!("# L{n}\n{filler}see [[hub]] and [h](../hub.md)\n{filler}"),
        );
    }
    let engine = open(&vault);
    let original = notes_snapshot(&vault);
    let broken_before = broken(&engine);
    let staged = mv(&engine, "z/hub.md", "z/hubs/the hub.md").unwrap();
    assert_eq!(staged.moves.len(), 1);
    let plan_file = fs::read_dir(vault.join("inbox/move"))
        .unwrap()
        .map(|entry| entry.unwrap().path())
        .find(|path| path.to_string_lossy().ends_with(".plan.json"))
        .unwrap();
    let size = fs::metadata(&plan_file).unwrap().len();
    // 20 notes of 220 KB: their texts twice would be 8.8 MB.
    assert!(size < 64 << 10, "the plan holds {size} bytes");
    let plan = staged_plan(&vault, "move");
    let writes: Vec<&Value> =
        plan["files"].as_array().unwrap().iter().filter(|op| op["op"] == "write").collect();
    assert_eq!(writes.len(), 20);
    assert!(
        writes.iter().all(|op| op.get("after").is_none() && op["splices"].as_array().unwrap().len() == 1)
    );
    // The person's review shows each rewritten line.
    let (code, out, err) = kb_index(&vault, &["inbox", "show", &staged.proposal_id]);
    assert_eq!(code, 0, "{err}");
    assert_eq!(out.matches("\n+see [[the hub]] and [h](").count(), 20, "{out}");
    assert_eq!(out.matches("\n-see [[hub]] and [h](../hub.md)").count(), 20, "{out}");
    apply(&engine, &staged.proposal_id);
    assert_plan_done(&vault, &plan, "applied");
    assert_eq!(broken(&engine), broken_before);
    let audit = audit_lines(&vault);
    let files = audit[0]["files"].as_array().unwrap();
    assert_eq!(files.len(), 21);
    assert!(files.iter().all(|file| file["before_sha256"].is_string() && file["after_sha256"].is_string()));
    // Reverted from the archive: the exact bytes come back.
    let reverted = revert(&engine, &staged.proposal_id).unwrap();
    apply(&engine, &reverted.proposal_id);
    assert_eq!(notes_snapshot(&vault), original);

    // A linking note saved after staging: nothing is written, the note is named.
    let staged = mv(&engine, "z/hub.md", "z/hubs/the hub.md").unwrap();
    put(&vault, "z/l/linker 7.md", "someone's save\n");
    let (code, out, err) = kb_index(&vault, &["inbox", "show", &staged.proposal_id]);
    assert_eq!(code, 1, "its checks fail: {err}");
    assert!(out.contains("z/l/linker 7.md changed since the proposal was made"), "{out}");
    let before = notes_snapshot(&vault);
    let err = engine
        .apply_proposal(&ApplyArgs { proposal_id: staged.proposal_id.clone() }, Actor::Cli)
        .unwrap_err();
    assert_eq!(err.code, ErrorCode::StaleBase, "{err}");
    assert!(err.message.contains("z/l/linker 7.md"), "{}", err.message);
    assert_eq!(notes_snapshot(&vault), before);
}

// ------------------------------------------------------------ batches and reverts

fn batch(engine: &Engine, items: Value) -> kb_mcp::error::Result<ProposeBatchResult> {
    let items: Vec<BatchItem> = serde_json::from_value(items).unwrap();
    engine.propose_batch(&ProposeBatchArgs { reason: "reorganise".to_owned(), items })
}

fn revert(engine: &Engine, id: &str) -> kb_mcp::error::Result<RevertResult> {
    engine.revert_proposal(&RevertArgs { proposal_id: id.to_owned(), reason: "undo".to_owned() })
}

fn hash_of(vault: &Path, rel: &str) -> String {
    kb_mcp::vault::content_hash(&fs::read(vault.join(rel)).unwrap())
}

/// A batch on [`link_vault`]: a new note linking to the note item 2 moves, a
/// patch of a note that links to it too, the move, and the delete of a note
/// the move rewrites.
fn four_kinds(vault: &Path) -> Value {
    serde_json::json!([
        // The contract's item is "the arguments of propose_new_note", `reason` included.
        {"kind": "new", "title": "Fresh", "folder": "z", "body": "See [[target]] and [t](m/target.md).\n",
         "reason": "a note the move should not break"},
        {"kind": "patch", "path": "z/other.md", "base_hash": hash_of(vault, "z/other.md"),
         "edits": [{"op": "append", "content": "More.\n"}]},
        {"kind": "move", "from": "z/m/target.md", "to": "z/n/t2.md"},
        {"kind": "delete", "path": "z/m/linker.md"},
    ])
}

const MOVED_TARGET: &str = "---\naliases: [target]\n---\n# Head\n\nText ^blk\n\n[up](../other.md) and [[other]] and ![pic](../attachments/x.png)\n";

/// The staged plan of the one pending proposal of `kind`.
fn staged_plan(vault: &Path, kind: &str) -> Value {
    let dir = vault.join("inbox").join(kind);
    let plan = fs::read_dir(&dir)
        .unwrap()
        .map(|entry| entry.unwrap().path())
        .find(|path| path.to_string_lossy().ends_with(".plan.json"))
        .unwrap();
    serde_json::from_slice(&fs::read(plan).unwrap()).unwrap()
}

/// Every operation of a plan is done: the vault holds what it proposed.
fn assert_plan_done(vault: &Path, plan: &Value, context: &str) {
    for op in plan["files"].as_array().unwrap() {
        let path = op["path"].as_str().unwrap();
        match op["op"].as_str().unwrap() {
            // A rewrite is staged as its spans and the hash of the text it leaves.
            "write" if op.get("after_sha256").is_some() => {
                assert_eq!(hash_of(vault, path), op["after_sha256"], "{context}: {path}")
            }
            "create" | "write" => assert_eq!(read(vault, path), op["after"], "{context}: {path}"),
            "move" => {
                assert!(!vault.join(path).exists(), "{context}: {path}");
                assert_eq!(read(vault, op["to"].as_str().unwrap()), op["after"], "{context}: {path}");
            }
            _ => assert!(!vault.join(path).exists(), "{context}: {path}"),
        }
    }
}

#[test]
fn a_batch_is_one_proposal_applied_whole_and_its_items_compose() {
    let (_tmp, vault) = link_vault();
    let engine = open(&vault);
    let staged = batch(&engine, four_kinds(&vault)).unwrap();
    assert_eq!(staged.kind, ProposalKind::Batch);
    assert!(!staged.vault_changed);
    let summary = staged.diff.lines().next().unwrap().strip_prefix("# ").unwrap().to_owned();
    assert!(summary.starts_with("batch: 1 new, 1 patch, 1 move, 1 delete, rewrite "), "{summary}");
    assert!(staged.diff.contains("\n+++ b/z/Fresh.md\n"), "{}", staged.diff);
    // One operation per note, nothing written yet.
    let plan = staged_plan(&vault, "batch");
    let ops: Vec<(&str, &str)> = plan["files"]
        .as_array()
        .unwrap()
        .iter()
        .map(|op| (op["op"].as_str().unwrap(), op["path"].as_str().unwrap()))
        .collect();
    assert_eq!(
        ops,
        [
            ("create", "z/Fresh.md"),
            ("write", "z/other.md"),
            ("move", "z/m/target.md"),
            ("trash", "z/m/linker.md")
        ]
    );
    assert_eq!(read(&vault, "z/m/linker.md"), LINKER);
    let listed = engine.list_proposals(&ListProposalsArgs::default()).unwrap();
    assert_eq!(listed.proposals.len(), 1);
    assert_eq!(listed.proposals[0].summary, summary);
    assert_eq!(listed.proposals[0].kind, ProposalKind::Batch);

    apply(&engine, &staged.proposal_id);
    // The new note's links follow the move staged after it; the patch and the
    // move's rewrite of one note compose; the moved note is exact.
    let fresh = read(&vault, "z/Fresh.md");
    assert!(fresh.ends_with("\nSee [[t2]] and [t](n/t2.md).\n"), "{fresh}");
    assert_eq!(read(&vault, "z/other.md"), "[t](n/t2.md) and [[n/t2]]\nMore.\n");
    assert_eq!(read(&vault, "z/n/t2.md"), MOVED_TARGET);
    assert!(!vault.join("z/m/target.md").exists());
    assert!(!vault.join("z/m/linker.md").exists());
    let trash = common::snapshot(&vault.join("inbox/trash"));
    assert_eq!(trash.len(), 1, "{trash:?}");
    assert_eq!(trash[0].1, LINKER.as_bytes(), "the trash keeps the bytes on disk");
    let lines = audit_lines(&vault);
    assert_eq!(lines.len(), 1);
    assert_eq!(lines[0]["kind"], "batch");
    assert_eq!(lines[0]["files"].as_array().unwrap().len(), 4);
    assert!(engine.record("z/Fresh.md").is_some());
    assert!(engine.record("z/n/t2.md").is_some());
}

#[test]
fn a_bad_batch_stages_nothing_and_names_the_item() {
    let (_tmp, vault) = link_vault();
    let engine = open(&vault);
    let original = common::snapshot(&vault);
    let base = hash_of(&vault, "z/other.md");
    let expect = |items: Value, code: ErrorCode, says: &[&str]| {
        let err = batch(&engine, items.clone()).unwrap_err();
        assert_eq!(err.code, code, "{items}: {err}");
        for part in says {
            assert!(err.message.contains(part), "{items}: {}", err.message);
        }
        assert_eq!(common::snapshot(&vault), original, "{items}: nothing staged or written");
    };
    // Two items on one path.
    expect(
        serde_json::json!([
            {"kind": "patch", "path": "z/other.md", "base_hash": base, "edits": [{"op": "append", "content": "x\n"}]},
            {"kind": "delete", "path": "z/other.md"},
        ]),
        ErrorCode::InvalidArgument,
        &["items[1] (delete z/other.md)", "z/other.md is also the path of items[0]"],
    );
    // A move onto the path of an earlier new note, and a new note onto the path a move takes.
    expect(
        serde_json::json!([
            {"kind": "new", "title": "t2", "folder": "z/n", "body": "x"},
            {"kind": "move", "from": "z/m/target.md", "to": "z/n/t2.md"},
        ]),
        ErrorCode::TargetExists,
        &["items[1] (move z/m/target.md → z/n/t2.md)", "z/n/t2.md"],
    );
    expect(
        serde_json::json!([
            {"kind": "move", "from": "z/m/target.md", "to": "z/n/t2.md"},
            {"kind": "new", "title": "t2", "folder": "z/n", "body": "x"},
        ]),
        ErrorCode::InvalidArgument,
        &["items[1] (new note \"t2\")", "z/n/t2.md is also the path of items[0]"],
    );
    // A folder move claims every note in it.
    let linker = hash_of(&vault, "z/m/linker.md");
    expect(
        serde_json::json!([
            {"kind": "move", "from": "z/m", "to": "z/k"},
            {"kind": "patch", "path": "z/m/linker.md", "base_hash": linker, "edits": [{"op": "append", "content": "x\n"}]},
        ]),
        ErrorCode::InvalidArgument,
        &["items[1] (patch z/m/linker.md)", "z/m/linker.md is also the path of items[0]"],
    );
    // An item that would fail alone fails with its own error and its index.
    let err = batch(
        &engine,
        serde_json::json!([
            {"kind": "new", "title": "Fine", "body": "x"},
            {"kind": "delete", "path": "z/m/linker.md"},
            {"kind": "patch", "path": "z/other.md", "base_hash": ZERO, "edits": [{"op": "append", "content": "x\n"}]},
        ]),
    )
    .unwrap_err();
    assert_eq!(err.code, ErrorCode::StaleBase);
    assert!(
        err.message.starts_with("items[2] (patch z/other.md): z/other.md has changed"),
        "{}",
        err.message
    );
    assert_eq!(err.details.as_ref().unwrap()["item"], 2);
    assert_eq!(err.details.as_ref().unwrap()["current_hash"], base);
    expect(
        serde_json::json!([{"kind": "move", "from": "z/m/target.md", "to": "docs/x.md"}]),
        ErrorCode::PathDenied,
        &["items[0]"],
    );
    expect(
        serde_json::json!([{"kind": "delete", "path": "z/nothing.md"}]),
        ErrorCode::NotFound,
        &["items[0] (delete z/nothing.md)"],
    );
    // Too many items, or none.
    let many: Vec<Value> =
        (0..101).map(|n| serde_json::json!({"kind": "new", "title": format!("n{n}"), "body": "x"})).collect();
    expect(Value::Array(many), ErrorCode::InvalidArgument, &["101 items", "at most 100"]);
    expect(serde_json::json!([]), ErrorCode::InvalidArgument, &["`items` is empty"]);
    assert!(engine.list_proposals(&ListProposalsArgs::default()).unwrap().proposals.is_empty());
}

const ZERO: &str = "sha256:0000000000000000000000000000000000000000000000000000000000000000";

/// The steps a crash can interrupt a four-operation plan at.
const PLAN_STEPS: [Step; 11] = [
    Step::Claimed,
    Step::Swapping,
    Step::File(0),
    Step::File(1),
    Step::File(2),
    Step::File(3),
    Step::Written,
    Step::Archiving,
    Step::Archived,
    Step::Indexed,
    Step::Audited,
];

fn committed(step: Step) -> bool {
    matches!(step, Step::Archiving | Step::Archived | Step::Indexed | Step::Audited)
}

/// After a crash and the recovery: every operation done and one audit line
/// (past the commit point), or the vault exactly as before and the proposal
/// still pending, then applicable.
fn assert_all_or_nothing(
    engine: &Engine,
    vault: &Path,
    step: Step,
    original: &[(String, Vec<u8>)],
    plan: &Value,
    id: &str,
) {
    assert!(!vault.join("inbox/_applying.json").exists(), "{step:?}");
    if committed(step) {
        assert_plan_done(vault, plan, &format!("{step:?}"));
        assert_eq!(audit_lines(vault).len(), 1, "{step:?}");
    } else {
        assert_eq!(notes_snapshot(vault), original, "{step:?}: rolled back");
        assert!(audit_lines(vault).is_empty(), "{step:?}");
        apply(engine, id);
        assert_plan_done(vault, plan, &format!("{step:?}, applied after"));
        assert_eq!(audit_lines(vault).len(), 1, "{step:?}");
    }
}

#[test]
fn a_crash_at_any_step_of_a_batch_is_rolled_back_or_completed() {
    for step in PLAN_STEPS {
        let (_tmp, vault) = link_vault();
        let engine = open(&vault);
        let original = notes_snapshot(&vault);
        let staged = batch(&engine, four_kinds(&vault)).unwrap();
        let plan = staged_plan(&vault, "batch");
        let sandbox = sandbox(&vault);
        crash_apply_at(&sandbox, &staged.proposal_id, step);
        let recovery = write::recover(&sandbox, Actor::Cli, &mut |_| Ok(())).unwrap();
        assert!(recovery.failed.is_empty(), "{step:?}: {recovery:?}");
        assert_all_or_nothing(&engine, &vault, step, &original, &plan, &staged.proposal_id);
    }
}

const BATCH_KILL_ENV: &str = "KB_STRUCTURE_BATCH_KILL";

/// A real SIGKILL at every step of a batch's apply, then a fresh start: all or nothing.
#[test]
fn a_batch_killed_at_any_step_is_all_or_nothing_on_the_next_start() {
    if let Ok(job) = std::env::var(BATCH_KILL_ENV) {
        let parts: Vec<&str> = job.split('|').collect();
        let (root, id, marker, step) = (Path::new(parts[0]), parts[1], Path::new(parts[2]), parts[3]);
        let sandbox = sandbox(root);
        let _ = write::apply_with_failpoint(&sandbox, id, Actor::Cli, &mut |_| Ok(()), &mut |at| {
            if format!("{at:?}") == step {
                wait_to_be_killed(marker);
            }
            Ok(())
        });
        panic!("the apply went past step {step} without stopping");
    }
    if !cfg!(unix) {
        eprintln!("skipped: SIGKILL at a chosen step needs a Unix system");
        return;
    }
    for step in PLAN_STEPS {
        let (tmp, vault) = link_vault();
        let engine = open(&vault);
        let original = notes_snapshot(&vault);
        let staged = batch(&engine, four_kinds(&vault)).unwrap();
        let plan = staged_plan(&vault, "batch");
        drop(engine);
        let marker = tmp.path().join("marker");
        let job = format!("{}|{}|{}|{step:?}", vault.display(), staged.proposal_id, marker.display());
        kill_child_at_marker(
            "a_batch_killed_at_any_step_is_all_or_nothing_on_the_next_start",
            BATCH_KILL_ENV,
            job,
            &marker,
            &format!("{step:?}"),
        );
        let engine = open(&vault);
        engine.recover_proposals(Actor::Mcp).unwrap();
        assert_all_or_nothing(&engine, &vault, step, &original, &plan, &staged.proposal_id);
    }
}

/// A person saving one of the batch's notes while it is applied: the save is
/// kept, the apply answers `conflict`, every other file is as before and the
/// batch stays pending.
#[test]
fn a_save_racing_a_batch_apply_is_kept_and_the_batch_stays_pending() {
    let (_tmp, vault) = link_vault();
    let engine = open(&vault);
    let original = notes_snapshot(&vault);
    let staged = batch(&engine, four_kinds(&vault)).unwrap();
    let sandbox = sandbox(&vault);
    let mut swaps = 0;
    let save = "the person's own save\n";
    let err =
        write::apply_with_failpoint(&sandbox, &staged.proposal_id, Actor::Cli, &mut |_| Ok(()), &mut |at| {
            if at == Step::Swapping {
                swaps += 1;
                // Operation 1 writes z/other.md: its save lands right before the swap.
                if swaps == 2 {
                    fs::write(vault.join("z/other.md"), save).unwrap();
                }
            }
            Ok(())
        })
        .unwrap_err();
    assert_eq!(err.code, ErrorCode::Conflict, "{err}");
    assert!(err.message.contains("z/other.md"), "{}", err.message);
    assert_eq!(read(&vault, "z/other.md"), save, "no save lost");
    let mut expected = original.clone();
    for (path, bytes) in &mut expected {
        if path == "z/other.md" {
            *bytes = save.as_bytes().to_vec();
        }
    }
    let now: Vec<_> = notes_snapshot(&vault).into_iter().filter(|(p, _)| !p.contains(".conflict-")).collect();
    assert_eq!(now, expected, "every other file as before");
    assert!(audit_lines(&vault).is_empty());
    assert!(!vault.join("inbox/_applying.json").exists());
    let pending = engine.list_proposals(&ListProposalsArgs::default()).unwrap();
    assert_eq!(pending.proposals[0].proposal_id, staged.proposal_id);
    assert_eq!(pending.proposals[0].status, ProposalStatus::Pending);
}

/// Reverting each kind puts back the exact bytes before its apply.
#[test]
fn a_revert_of_each_kind_restores_the_exact_bytes() {
    const OTHER: &str = "[t](m/target.md) and [[m/target]]\n";
    const TARGET: &str =
        "# Head\n\nText ^blk\n\n[up](../other.md) and [[other]] and ![pic](../attachments/x.png)\n";
    let (_tmp, vault) = link_vault();
    let engine = open(&vault);
    let original = notes_snapshot(&vault);
    let undo = |id: &str| {
        let staged = revert(&engine, id).unwrap();
        assert_eq!(staged.kind, ProposalKind::Revert);
        assert!(staged.diff.starts_with(&format!("# revert {id} (")), "{}", staged.diff);
        apply(&engine, &staged.proposal_id);
        staged
    };

    // A new note goes to the trash.
    let new = engine
        .propose_new_note(&ProposeNewArgs {
            title: "Fresh idea".into(),
            body: "One line.\n".into(),
            reason: "keep".into(),
            ..ProposeNewArgs::default()
        })
        .unwrap();
    apply(&engine, &new.proposal_id);
    let written = read(&vault, "z/Fresh idea.md");
    let staged = undo(&new.proposal_id);
    assert!(staged.diff.starts_with(&format!("# revert {} (new z/Fresh idea.md)\n", new.proposal_id)));
    assert!(!vault.join("z/Fresh idea.md").exists());
    assert!(
        common::snapshot(&vault.join("inbox/trash")).iter().any(|(_, bytes)| bytes == written.as_bytes())
    );
    assert_eq!(notes_snapshot(&vault), original);

    // A patch, from its archived diff read backwards.
    let patch = engine
        .propose_note_patch(&ProposePatchArgs {
            path: "z/other.md".into(),
            base_hash: hash_of(&vault, "z/other.md"),
            reason: "say more".into(),
            edits: vec![write::Edit::FindReplace { find: " and ".into(), replace: "\nand also\n".into() }],
        })
        .unwrap();
    apply(&engine, &patch.proposal_id);
    assert_eq!(read(&vault, "z/other.md"), "[t](m/target.md)\nand also\n[[m/target]]\n");
    undo(&patch.proposal_id);
    assert_eq!(read(&vault, "z/other.md"), OTHER);

    // A move: the note moves back, every rewritten link is as it was.
    let moved = mv(&engine, "z/m/target.md", "z/n/t2.md").unwrap();
    apply(&engine, &moved.proposal_id);
    undo(&moved.proposal_id);
    assert_eq!(read(&vault, "z/m/target.md"), TARGET);
    assert_eq!(read(&vault, "z/m/linker.md"), LINKER);
    assert_eq!(read(&vault, "z/other.md"), OTHER);
    assert!(!vault.join("z/n/t2.md").exists());

    // A delete: the note comes back from the trash.
    let deleted = engine
        .propose_delete(&ProposeDeleteArgs { path: "z/m/linker.md".into(), reason: "gone".into() })
        .unwrap();
    apply(&engine, &deleted.proposal_id);
    undo(&deleted.proposal_id);
    assert_eq!(read(&vault, "z/m/linker.md"), LINKER);

    // A batch of all four kinds.
    let staged = batch(&engine, four_kinds(&vault)).unwrap();
    apply(&engine, &staged.proposal_id);
    let reverted = undo(&staged.proposal_id);
    assert_eq!(read(&vault, "z/other.md"), OTHER);
    assert_eq!(read(&vault, "z/m/target.md"), TARGET);
    assert_eq!(read(&vault, "z/m/linker.md"), LINKER);
    assert!(!vault.join("z/Fresh.md").exists());
    assert_eq!(notes_snapshot(&vault), original);

    // And a revert of that revert is the batch again.
    undo(&reverted.proposal_id);
    assert_eq!(read(&vault, "z/other.md"), "[t](n/t2.md) and [[n/t2]]\nMore.\n");
    assert_eq!(read(&vault, "z/n/t2.md"), MOVED_TARGET);
    assert!(engine.record("z/n/t2.md").is_some());
    assert_eq!(audit_lines(&vault).len(), 11);
}

#[test]
fn a_revert_refuses_what_it_cannot_undo_exactly() {
    let (_tmp, vault) = link_vault();
    let engine = open(&vault);
    let moved = mv(&engine, "z/m/target.md", "z/n/t2.md").unwrap();
    // Pending: nothing to revert.
    let err = revert(&engine, &moved.proposal_id).unwrap_err();
    assert_eq!(err.code, ErrorCode::ProposalNotPending, "{err}");
    assert!(err.message.contains("is pending, not applied"), "{}", err.message);
    apply(&engine, &moved.proposal_id);
    // Files changed since the apply, and a note would return to a taken path.
    put(&vault, "z/other.md", "edited since\n");
    put(&vault, "z/m/target.md", "a new note here\n");
    let before = common::snapshot(&vault);
    let err = revert(&engine, &moved.proposal_id).unwrap_err();
    assert_eq!(err.code, ErrorCode::StaleBase, "{err}");
    let mut files: Vec<String> = serde_json::from_value(err.details.unwrap()["files"].clone()).unwrap();
    files.sort();
    assert_eq!(files, ["z/m/target.md", "z/other.md"]);
    assert!(err.message.contains("z/other.md") && err.message.contains("z/m/target.md"), "{}", err.message);
    assert_eq!(common::snapshot(&vault), before, "nothing staged");
    // Rejected, unknown, and no reason.
    let rejected = mv(&engine, "z/m/linker.md", "z/m/l2.md").unwrap();
    engine.reject_proposal(&rejected.proposal_id, "no", Actor::Cli).unwrap();
    let err = revert(&engine, &rejected.proposal_id).unwrap_err();
    assert_eq!(err.code, ErrorCode::ProposalNotPending);
    assert!(err.message.contains("was rejected"), "{}", err.message);
    let unknown = format!("p_{}", "ab".repeat(16));
    assert_eq!(revert(&engine, &unknown).unwrap_err().code, ErrorCode::ProposalNotFound);
    assert_eq!(revert(&engine, "../../etc/passwd").unwrap_err().code, ErrorCode::ProposalNotFound);
    let err = engine
        .revert_proposal(&RevertArgs { proposal_id: moved.proposal_id.clone(), reason: " ".into() })
        .unwrap_err();
    assert_eq!(err.code, ErrorCode::InvalidArgument);
}

fn kb_index(vault: &Path, args: &[&str]) -> (i32, String, String) {
    let output = std::process::Command::new(env!("CARGO_BIN_EXE_kb-index"))
        .args(args)
        .arg("--vault")
        .arg(vault)
        .env("NO_COLOR", "1")
        .output()
        .unwrap();
    crate::common::outcome(output)
}

/// `kb-index inbox list` and `show` for a batch and a revert; `kb-index revert ID --yes`.
#[test]
fn kb_index_lists_shows_and_reverts_batches() {
    let (_tmp, vault) = link_vault();
    let engine = open(&vault);
    let staged = batch(&engine, four_kinds(&vault)).unwrap();
    let summary = staged.diff.lines().next().unwrap().strip_prefix("# ").unwrap().to_owned();
    drop(engine);
    let (code, out, err) = kb_index(&vault, &["inbox", "list"]);
    assert_eq!(code, 0, "{err}");
    assert!(out.contains(&format!("\n    {summary}")), "{out}");
    let short = &staged.proposal_id[2..10];
    let (code, out, err) = kb_index(&vault, &["inbox", "show", short]);
    assert_eq!(code, 0, "{err}");
    assert!(out.contains(&format!("change    {summary}\n")), "{out}");
    for shown in [
        "+++ b/z/Fresh.md",
        "+++ b/z/other.md",
        "rename from z/m/target.md\nrename to z/n/t2.md",
        "delete z/m/linker.md",
    ] {
        assert!(out.contains(shown), "{shown}: {out}");
    }
    let (code, out, err) = kb_index(&vault, &["inbox", "apply", "--yes", "--only", short]);
    assert_eq!(code, 0, "{out}{err}");

    // Without --yes a revert is staged only, and listed as one.
    let (code, out, err) = kb_index(&vault, &["revert", short]);
    assert_eq!(code, 0, "{err}");
    assert!(out.starts_with("staged p_"), "{out}");
    assert!(out.contains(&format!("revert {} (batch: ", staged.proposal_id)), "{out}");
    assert!(out.contains("nothing changed yet"), "{out}");
    assert!(vault.join("z/n/t2.md").exists());
    let (_, listed, _) = kb_index(&vault, &["inbox", "list"]);
    assert!(listed.contains(&format!("    revert {} (batch: ", staged.proposal_id)), "{listed}");
    let pending = listed.split_whitespace().find(|w| w.starts_with("p_")).unwrap().to_owned();
    kb_index(&vault, &["inbox", "reject", &pending, "--reason", "later"]);

    // With --yes it is applied.
    let (code, out, err) = kb_index(&vault, &["revert", &staged.proposal_id, "--yes"]);
    assert_eq!(code, 0, "{out}{err}");
    assert!(out.contains("applied p_"), "{out}");
    assert_eq!(read(&vault, "z/m/linker.md"), LINKER);
    assert!(!vault.join("z/n/t2.md").exists());
    // A revert of a pending or unknown proposal is bad input.
    let (code, _, err) = kb_index(&vault, &["revert", "ffffffff"]);
    assert_eq!(code, 2, "{err}");
}

/// `list_proposals` items carry `summary`, one line for a person, for every kind.
#[test]
fn list_proposals_items_carry_a_one_line_summary() {
    let (_tmp, vault) = link_vault();
    let engine = open(&vault);
    let new = engine
        .propose_new_note(&ProposeNewArgs {
            title: "Fresh idea".to_owned(),
            body: "One line.\n".to_owned(),
            reason: "worth keeping".to_owned(),
            ..ProposeNewArgs::default()
        })
        .unwrap();
    let base = kb_mcp::vault::content_hash(read(&vault, "z/other.md").as_bytes());
    let patch = engine
        .propose_note_patch(&ProposePatchArgs {
            path: "z/other.md".to_owned(),
            base_hash: base,
            reason: "say more".to_owned(),
            edits: vec![write::Edit::ReplaceAll {
                content: "[t](m/target.md)\nMore.\nAnd more.\n".to_owned(),
            }],
        })
        .unwrap();
    let moved = mv(&engine, "z/m/target.md", "z/m/goal.md").unwrap();
    let deleted = engine
        .propose_delete(&ProposeDeleteArgs { path: "z/m/linker.md".to_owned(), reason: "gone".to_owned() })
        .unwrap();
    let listed = engine.list_proposals(&ListProposalsArgs::default()).unwrap();
    let summary =
        |id: &str| listed.proposals.iter().find(|p| p.proposal_id == id).map(|p| p.summary.clone()).unwrap();
    assert_eq!(summary(&new.proposal_id), format!("new {}", new.target));
    assert_eq!(summary(&patch.proposal_id), "patch z/other.md (+3 -1 lines)");
    assert_eq!(
        summary(&moved.proposal_id),
        format!(
            "move z/m/target.md → z/m/goal.md, rewrite {} links in {} notes",
            moved.rewrites.links, moved.rewrites.notes
        )
    );
    assert!(moved.rewrites.notes > 1, "{moved:?}");
    assert!(summary(&deleted.proposal_id).starts_with("delete z/m/linker.md (to the inbox's trash), "));

    // Once applied, a proposal keeps the line saying what it did (it was
    // "delete z/m/linker.md", the kind and target only).
    let before = summary(&deleted.proposal_id);
    let patch_line = summary(&patch.proposal_id);
    apply(&engine, &deleted.proposal_id);
    apply(&engine, &patch.proposal_id);
    let applied = engine
        .list_proposals(&ListProposalsArgs { status: Some(ProposalStatusFilter::Applied), limit: None })
        .unwrap();
    // Both were staged within the same second: their order is not the point.
    let mut lines: Vec<&str> = applied.proposals.iter().map(|p| p.summary.as_str()).collect();
    lines.sort_unstable();
    let mut expected = [before.as_str(), patch_line.as_str()];
    expected.sort_unstable();
    assert_eq!(lines, expected);
}

/// Found by the invariant on obsidian-help (`[[更新 Obsidian#安裝程式更新]]` in
/// zh-TW leads to zh's shorter-pathed note, which lacks that heading): a link
/// to a moved note naming a heading it lacks is broken, so not a backlink, yet
/// it must follow the note; left alone it fell to the other `dup`, and the
/// broken-link count shrank.
#[test]
fn a_link_to_a_missing_heading_of_the_moved_note_follows_it() {
    let (_tmp, vault) = common::temp_vault();
    put(&vault, "z/a/dup.md", "# One\n\nText.\n");
    put(&vault, "z/bb/dup.md", "# Two\n\nText.\n");
    put(&vault, "z/dup-linker.md", "# Linker\n\nSee [[dup#Two]] and [[dup#^nothing]].\n");
    let engine = open(&vault);
    let before = broken(&engine);
    let staged = mv(&engine, "z/a/dup.md", "z/a/renamed.md").unwrap();
    apply(&engine, &staged.proposal_id);
    assert_eq!(
        read(&vault, "z/dup-linker.md"),
        "# Linker\n\nSee [[renamed#Two]] and [[renamed#^nothing]].\n"
    );
    assert_eq!(broken(&engine), before);
}

// ------------------------------------------------------- two processes, one proposal

/// [`link_vault`] with twenty more notes linking to `z/m/target.md`, so a move
/// of it rewrites many files.
fn crowded_vault() -> (tempfile::TempDir, std::path::PathBuf) {
    let (tmp, vault) = link_vault();
    for n in 0..20 {
        put(&vault, &format!("z/l/n{n}.md"), &format!("# N{n}\n\n[[target]] and [t](../m/target.md#Head)\n"));
    }
    (tmp, vault)
}

/// The notes of a [`crowded_vault`] after the move below was applied once, in
/// this process: what every two-process run must end with.
fn moved_once() -> Vec<(String, Vec<u8>)> {
    let (_tmp, vault) = crowded_vault();
    let engine = open(&vault);
    let staged = mv(&engine, "z/m/target.md", "z/n/t2.md").unwrap();
    assert!(staged.rewrites.notes > 20, "{:?}", staged.rewrites);
    apply(&engine, &staged.proposal_id);
    notes_snapshot(&vault)
}

/// Whether process `pid` has `file` open (Linux's `/proc/<pid>/fd`): an apply
/// that opened the inbox lock file is waiting for the lock or holds it.
fn has_open(pid: u32, file: &Path) -> bool {
    let Ok(entries) = fs::read_dir(format!("/proc/{pid}/fd")) else { return false };
    entries.flatten().any(|entry| fs::read_link(entry.path()).is_ok_and(|target| target == file))
}

/// `kb-index inbox apply --yes --only ID`, started.
fn spawn_apply(vault: &Path, id: &str) -> std::process::Child {
    std::process::Command::new(env!("CARGO_BIN_EXE_kb-index"))
        .args(["inbox", "apply", "--yes", "--only", id, "--vault"])
        .arg(vault)
        .env("NO_COLOR", "1")
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap()
}

/// Polls (never sleeps as a guess) until `child` has the inbox lock file open.
fn wait_for_lock(child: &mut std::process::Child, lock: &Path) {
    while !has_open(child.id(), lock) {
        assert!(child.try_wait().unwrap().is_none(), "kb-index ended before it reached the inbox lock");
        std::thread::sleep(std::time::Duration::from_millis(2));
    }
}

fn finished(child: std::process::Child) -> (i32, String, String) {
    let output = child.wait_with_output().unwrap();
    crate::common::outcome(output)
}

/// Two `kb-index inbox apply --yes` processes on one move touching 23 files,
/// both started and waiting at the inbox lock (held by this test) before
/// either may go: exactly one applies it, the other is told the proposal is no
/// longer pending, the vault is the move applied once, with one audit line.
#[test]
fn two_processes_applying_one_move_exactly_one_wins() {
    if !cfg!(target_os = "linux") {
        eprintln!("skipped: seeing that a process waits at the lock needs Linux's /proc");
        return;
    }
    let expected = moved_once();
    let (_tmp, vault) = crowded_vault();
    let engine = open(&vault);
    let original = notes_snapshot(&vault);
    let staged = mv(&engine, "z/m/target.md", "z/n/t2.md").unwrap();
    drop(engine);
    let lock_path = vault.join("inbox/_apply.lock");
    let lock =
        fs::OpenOptions::new().read(true).write(true).create(true).truncate(false).open(&lock_path).unwrap();
    lock.lock().unwrap();
    let lock_path = lock_path.canonicalize().unwrap();
    let mut first = spawn_apply(&vault, &staged.proposal_id);
    let mut second = spawn_apply(&vault, &staged.proposal_id);
    wait_for_lock(&mut first, &lock_path);
    wait_for_lock(&mut second, &lock_path);
    assert_eq!(notes_snapshot(&vault), original, "nothing is written while the lock is held");
    lock.unlock().unwrap();
    drop(lock);
    let mut ends = [finished(first), finished(second)];
    ends.sort_by_key(|(code, _, _)| *code);
    let [(won, won_out, won_err), (lost, lost_out, lost_err)] = ends;
    assert_eq!(won, 0, "{won_out}{won_err}");
    assert!(won_out.starts_with("applied "), "{won_out}");
    assert_eq!(lost, 2, "{lost_out}{lost_err}");
    assert!(lost_err.contains("proposal_not_pending") && lost_err.contains("already applied"), "{lost_err}");
    assert_eq!(notes_snapshot(&vault), expected, "the move applied exactly once");
    let lines = audit_lines(&vault);
    assert_eq!(lines.len(), 1, "{lines:?}");
    assert_eq!(lines[0]["proposal_id"], staged.proposal_id.as_str());
    assert!(!vault.join("inbox/_applying.json").exists());
}

const HOLD_CHILD_ENV: &str = "KB_STRUCTURE_HOLD_CHILD";

/// One apply held in the middle of a move (this test binary, stopped by a
/// failpoint after its second file until a barrier file appears) while
/// `kb-index inbox apply --yes` of the same proposal waits at the lock: the
/// held one completes and wins; kb-index never sees the vault half moved and
/// is told the proposal was already applied; one audit line.
#[test]
fn an_apply_held_mid_move_wins_and_the_other_process_is_refused() {
    if let Ok(job) = std::env::var(HOLD_CHILD_ENV) {
        let parts: Vec<&str> = job.split('|').collect();
        let (root, id, marker, go) =
            (Path::new(parts[0]), parts[1], Path::new(parts[2]), Path::new(parts[3]));
        let sandbox = sandbox(root);
        write::apply_with_failpoint(&sandbox, id, Actor::Cli, &mut |_| Ok(()), &mut |at| {
            if at == Step::File(1) {
                fs::write(marker, "here").unwrap();
                while !go.exists() {
                    std::thread::sleep(std::time::Duration::from_millis(2));
                }
            }
            Ok(())
        })
        .unwrap();
        return;
    }
    if !cfg!(target_os = "linux") {
        eprintln!("skipped: seeing that a process waits at the lock needs Linux's /proc");
        return;
    }
    let expected = moved_once();
    let (tmp, vault) = crowded_vault();
    let engine = open(&vault);
    let staged = mv(&engine, "z/m/target.md", "z/n/t2.md").unwrap();
    drop(engine);
    let (marker, go) = (tmp.path().join("marker"), tmp.path().join("go"));
    let job = format!("{}|{}|{}|{}", vault.display(), staged.proposal_id, marker.display(), go.display());
    let mut held = child_at_marker(
        "an_apply_held_mid_move_wins_and_the_other_process_is_refused",
        HOLD_CHILD_ENV,
        job,
        &marker,
        "the held apply (its second file)",
    );
    // Half moved on disk, under the lock.
    assert!(vault.join("z/n/t2.md").exists() && !vault.join("z/m/target.md").exists());
    let mut other = spawn_apply(&vault, &staged.proposal_id);
    wait_for_lock(&mut other, &vault.join("inbox/_apply.lock").canonicalize().unwrap());
    fs::write(&go, "go").unwrap();
    assert!(held.wait().unwrap().success(), "the held apply completes");
    let (code, out, err) = finished(other);
    assert_eq!(code, 2, "{out}{err}");
    assert!(err.contains("proposal_not_pending") && err.contains("already applied"), "{err}");
    assert_eq!(notes_snapshot(&vault), expected, "the move applied exactly once");
    assert_eq!(audit_lines(&vault).len(), 1);
    assert!(!vault.join("inbox/_applying.json").exists());
}

// ------------------------------------------------- the invariant on obsidian-help

/// The notes of one folder (at any depth) of the catalog.
fn notes_under(engine: &Engine, folder: &str) -> Vec<String> {
    let prefix = format!("{folder}/");
    engine
        .records()
        .iter()
        .filter(|r| r.kind == kb_mcp::vault::NoteKind::Note && r.path.starts_with(&prefix))
        .map(|r| r.path.clone())
        .collect()
}

/// The notes linking to a note, once per link, sorted.
fn backlinks_of(engine: &Engine, path: &str) -> Vec<String> {
    let mut out = engine.backlinks(path).unwrap_or_else(|| panic!("{path} is not in the catalog"));
    out.sort();
    out
}

/// Moves a note or folder (no alias kept: every link must be rewritten, none may
/// lean on the old name) and checks the invariant: as many broken links as
/// before, every backlink of every moved note still resolving to it (from
/// the same notes, moved ones followed to their new paths), and every other
/// link of the vault leading where it led.
fn move_and_check(
    engine: &Engine,
    from: &str,
    to: &str,
    moved_notes: &[(String, String)],
    broken_before: usize,
) {
    let follow = |path: String| -> String {
        moved_notes.iter().find(|(old, _)| *old == path).map_or(path, |(_, new)| new.clone())
    };
    let before: Vec<(String, Vec<String>)> = moved_notes
        .iter()
        .map(|(old, new)| {
            let mut links: Vec<String> = backlinks_of(engine, old).into_iter().map(follow).collect();
            links.sort();
            (new.clone(), links)
        })
        .collect();
    let edges = link_edges(engine, &|path| follow(path.to_owned()));
    let staged = engine
        .propose_move(&ProposeMoveArgs {
            from: from.to_owned(),
            to: to.to_owned(),
            reason: "invariant".to_owned(),
            keep_alias: Some(false),
        })
        .unwrap_or_else(|err| panic!("move {from} → {to}: {err}"));
    let applied = apply(engine, &staged.proposal_id);
    assert_eq!(applied.status, ApplyStatus::Applied, "move {from} → {to}");
    assert_eq!(broken(engine), broken_before, "move {from} → {to}: the broken-link count changed");
    for (new, links) in before {
        assert_eq!(backlinks_of(engine, &new), links, "move {from} → {to}: the backlinks of {new}");
    }
    assert_eq!(
        link_edges(engine, &|path| path.to_owned()),
        edges,
        "move {from} → {to}: a link changed its note"
    );
}

/// Issue 14's invariant on a copy of the real Obsidian Help vault: 30 notes of
/// `en/` and `zh/` (every n-th by path, alternately to a new folder and to a new
/// name) and 3 folders moved one after another, each staged and applied; the
/// vault's broken-link count never changes and every moved note keeps all its
/// backlinks.
#[test]
fn moves_on_obsidian_help_keep_every_link() {
    let Some(corpus) = common::obsidian_help("the move invariant on obsidian-help") else { return };
    let tmp = tempfile::tempdir().unwrap();
    let vault = tmp.path().join("vault");
    common::copy_dir(&corpus, &vault);
    let engine =
        Engine::open(&EngineOptions { vault: vault.clone(), index_dir: Some(tmp.path().join("index")) })
            .unwrap();
    engine.sync(false, None).unwrap();
    let broken_before = broken(&engine);

    let mut sample: Vec<String> = Vec::new();
    for language in ["en", "zh"] {
        let notes = notes_under(&engine, language);
        assert!(notes.len() >= 15, "{language}: {} notes", notes.len());
        sample.extend((0..15).map(|n| notes[n * notes.len() / 15].clone()));
    }
    for (number, from) in sample.iter().enumerate() {
        let path = NotePath::parse(from).unwrap();
        let language = &from[..2];
        let to = if number % 2 == 0 {
            format!("{language}/Moved by kb/{}", path.file_name())
        } else {
            let folder = from.rsplit_once('/').map_or("", |(folder, _)| folder);
            format!("{folder}/{} (renamed).md", path.stem())
        };
        move_and_check(&engine, from, &to, &[(from.clone(), to.clone())], broken_before);
    }

    // Three folders: the first, middle and last (by path) of en/ and zh/'s
    // folders holding 2 to 40 notes.
    let mut folders: Vec<String> = Vec::new();
    for record in engine.records() {
        if let Some((folder, _)) = record.path.rsplit_once('/')
            && (folder.starts_with("en/") || folder.starts_with("zh/"))
            && !folders.iter().any(|f| f == folder)
        {
            folders.push(folder.to_owned());
        }
    }
    folders.sort();
    folders.retain(|folder| (2..=40).contains(&notes_under(&engine, folder).len()));
    assert!(folders.len() >= 3, "{folders:?}");
    for folder in [&folders[0], &folders[folders.len() / 2], &folders[folders.len() - 1]] {
        let to = format!("{folder} moved");
        let moved: Vec<(String, String)> = notes_under(&engine, folder)
            .into_iter()
            .map(|old| {
                let new = format!("{to}/{}", &old[folder.len() + 1..]);
                (old, new)
            })
            .collect();
        move_and_check(&engine, folder, &to, &moved, broken_before);
    }

    // The index agrees with the files.
    engine.sync(false, None).unwrap();
    assert_eq!(broken(&engine), broken_before, "after a sync");
}

/// A patch of a note and a move of it, both pending: each one's review names
/// the other (the notes both touch), as do the confirmation before an apply and
/// the listing `kb-index mv` prints; an unrelated proposal is named by neither.
/// Once the move is applied, the patch fails its check, as its review said.
#[test]
fn a_review_names_the_other_pending_proposals_touching_the_same_notes() {
    let (_tmp, vault) = link_vault();
    let engine = open(&vault);
    let patch = engine
        .propose_note_patch(&ProposePatchArgs {
            path: "z/m/target.md".into(),
            base_hash: hash_of(&vault, "z/m/target.md"),
            reason: "fix the heading".into(),
            edits: vec![
                serde_json::from_value(serde_json::json!(
                    {"op": "find_replace", "find": "# Head", "replace": "# Heading"}
                ))
                .unwrap(),
            ],
        })
        .unwrap();
    let unrelated = engine
        .propose_new_note(&ProposeNewArgs {
            title: "Unrelated".into(),
            body: "x".into(),
            reason: "r".into(),
            ..Default::default()
        })
        .unwrap();
    // The move renames the patched note and rewrites z/m/linker.md and z/other.md.
    let moved = mv(&engine, "z/m/target.md", "z/n/t2.md").unwrap();

    let of_move = engine.review_proposal(&moved.proposal_id).unwrap();
    let named: Vec<(&str, &[String])> =
        of_move.overlaps.iter().map(|o| (o.proposal_id.as_str(), o.paths.as_slice())).collect();
    assert_eq!(named, vec![(patch.proposal_id.as_str(), &["z/m/target.md".to_owned()][..])]);
    assert_eq!(of_move.overlaps[0].summary, "change z/m/target.md (+1 -1 lines)");
    assert_eq!(engine.proposal_overlaps(&moved.proposal_id).unwrap(), of_move.overlaps, "without the diffs");
    let of_patch = engine.review_proposal(&patch.proposal_id).unwrap();
    assert_eq!(of_patch.overlaps.len(), 1, "{:?}", of_patch.overlaps);
    assert_eq!(of_patch.overlaps[0].proposal_id, moved.proposal_id);
    assert!(of_patch.overlaps[0].summary.starts_with("move z/m/target.md → z/n/t2.md"));
    let of_new = engine.review_proposal(&unrelated.proposal_id).unwrap();
    assert!(of_new.overlaps.is_empty(), "{:?}", of_new.overlaps);
    let json = serde_json::to_value(&of_new).unwrap();
    assert!(json.get("overlaps").is_none(), "left out when empty: {json}");

    let confirmation = engine.proposal_confirmation(&moved.proposal_id).unwrap();
    assert!(
        confirmation.contains("Other pending proposals touch the same notes")
            && confirmation.contains(&patch.proposal_id),
        "{confirmation}"
    );

    apply(&engine, &moved.proposal_id);
    let listed = engine.list_proposals(&ListProposalsArgs { status: None, limit: None }).unwrap();
    let patch_now = listed.proposals.iter().find(|p| p.proposal_id == patch.proposal_id).unwrap();
    assert!(!patch_now.checks.base_current, "the patch fails its check once the move is applied");
    // Applied, the move is no longer pending: the patch's review names nothing.
    assert!(engine.review_proposal(&patch.proposal_id).unwrap().overlaps.is_empty());
}

// ------------------------------------------------- issue 34, item 3: deletes racing an editor

/// What a delete race saw.
#[derive(Debug, Default)]
struct DeleteRace {
    saves: u64,
    applied: u64,
    refused: u64,
    lost: Vec<String>,
}

/// The whole-note text of the racing editor's save `i`.
fn race_save(i: u64) -> String {
    format!("# Race\n\nsave {i}\n")
}

/// An editor saves `z/race.md` every 10 to 200 ms in `editing` (creating it again
/// when it is gone) while `deletes` deletes of it are proposed and applied.
/// A save survives in the note, in the trash (the delete took it) or in a
/// conflict copy: a whole-note save is lost when the editor's next look finds
/// neither it in the note nor, the note gone, it in the trash or a copy; an
/// appended line (`save <i>`) when no file of the three holds it at the end.
fn race_deletes(deletes: u64, editing: common::Editing) -> DeleteRace {
    use std::sync::Mutex;
    use std::sync::atomic::{AtomicBool, Ordering};
    use std::time::{Duration, Instant};
    let (_tmp, vault) = common::temp_vault();
    let rel = "z/race.md";
    let path = vault.join(rel);
    editing.save(&path, &race_save(0));
    let engine = open(&vault);
    let stop = AtomicBool::new(false);
    // (save i, what the editor found at the note right before save i + 1).
    let found: Mutex<Vec<(u64, Option<String>)>> = Mutex::new(Vec::new());
    let mut race = DeleteRace::default();
    let last = std::thread::scope(|scope| {
        let editor = scope.spawn(|| {
            let mut i = 0;
            let mut seed = u64::from(std::process::id()) | 1;
            while !stop.load(Ordering::Relaxed) {
                seed ^= seed << 13;
                seed ^= seed >> 7;
                seed ^= seed << 17;
                let every = Duration::from_millis(10 + seed % 190);
                let started = Instant::now();
                found.lock().unwrap().push((i, fs::read_to_string(&path).ok()));
                i += 1;
                match editing {
                    common::Editing::Append => editing.save(&path, &format!("save {i}\n")),
                    _ => editing.save(&path, &race_save(i)),
                }
                std::thread::sleep(every.saturating_sub(started.elapsed()));
            }
            i
        });
        // A panic below must still stop the editor, or the scope waits for it forever.
        let _stop = common::StopOnDrop(&stop);
        let mut done = 0;
        while done < deletes {
            if !path.exists() || engine.sync(false, None).is_err() {
                std::thread::sleep(Duration::from_millis(1));
                continue;
            }
            done += 1;
            let args = ProposeDeleteArgs { path: rel.to_owned(), reason: "race".to_owned() };
            let Ok(staged) = engine.propose_delete(&args) else {
                race.refused += 1;
                continue;
            };
            let applied =
                engine.apply_proposal(&ApplyArgs { proposal_id: staged.proposal_id.clone() }, Actor::Cli);
            match applied {
                Ok(_) => race.applied += 1,
                Err(err) if matches!(err.code, ErrorCode::StaleBase | ErrorCode::Conflict) => {
                    race.refused += 1;
                    let _ = engine.reject_proposal(&staged.proposal_id, "the race moved on", Actor::Cli);
                }
                Err(err) => panic!("delete {done}: {err}"),
            }
        }
        stop.store(true, Ordering::Relaxed);
        editor.join().unwrap()
    });
    race.saves = last;
    let mut kept: Vec<String> = common::texts_under(&vault.join("inbox/trash"), "race.md")
        .into_iter()
        .chain(common::texts_under(&vault.join("inbox/conflicts"), "race.conflict-"))
        .map(|(_, text)| text)
        .collect();
    let now = fs::read_to_string(&path).ok();
    if editing == common::Editing::Append {
        kept.extend(now);
        for i in 0..=last {
            let line = format!("save {i}");
            if !kept.iter().any(|text| text.lines().any(|l| l == line)) {
                race.lost.push(format!("save {i}: its line is in no note, trashed note or copy"));
            }
        }
        return race;
    }
    let mut found = found.into_inner().unwrap();
    found.push((last, now));
    for (i, seen) in found {
        let save = race_save(i);
        if seen.as_ref() != Some(&save) && !kept.contains(&save) {
            race.lost.push(format!("save {i}: the editor next found {seen:?}"));
        }
    }
    race
}

/// Issue 34, item 3: 1,000 deletes (`KB_RACE_DELETES` to change it) per
/// editing style, each racing an editor saving every 10 to 200 ms in that style, and
/// not one save lost: a delete moves the note itself into the trash and
/// compares what landed there, and a save landing after is put back.
#[test]
fn no_save_is_lost_to_a_delete_in_any_editing_style() {
    let deletes = std::env::var("KB_RACE_DELETES").ok().and_then(|n| n.parse().ok()).unwrap_or(1000);
    let runs: Vec<(common::Editing, DeleteRace)> = std::thread::scope(|scope| {
        let handles: Vec<_> = common::Editing::ALL
            .map(|editing| scope.spawn(move || (editing, race_deletes(deletes, editing))))
            .into_iter()
            .collect();
        handles.into_iter().map(|handle| handle.join().unwrap()).collect()
    });
    for (editing, race) in &runs {
        eprintln!(
            "racing deletes ({editing:?}): {deletes} deletes: {} applied, {} refused; {} saves, {} lost",
            race.applied,
            race.refused,
            race.saves,
            race.lost.len()
        );
    }
    for (editing, race) in runs {
        assert!(race.lost.is_empty(), "{editing:?}: {} saves lost: {:#?}", race.lost.len(), race.lost);
        assert!(race.applied > 0 && race.saves > 0, "{editing:?}: {race:?}");
    }
}

/// The deterministic window of a delete: an editor opens the note right
/// before the delete takes it (`Step::Swapping`) and appends right after it
/// (`Step::File(0)`). The save must end up in the note again, the delete
/// answer `conflict` and stay pending, and the trash hold nothing.
#[test]
fn an_append_opened_before_a_delete_and_written_after_it_is_kept() {
    use std::io::Write as _;
    let (_tmp, vault) = link_vault();
    let engine = open(&vault);
    let rel = "z/other.md";
    let before = read(&vault, rel);
    let staged =
        engine.propose_delete(&ProposeDeleteArgs { path: rel.into(), reason: "gone".into() }).unwrap();
    let sandbox = sandbox(&vault);
    let mut editor: Option<fs::File> = None;
    let err =
        write::apply_with_failpoint(&sandbox, &staged.proposal_id, Actor::Cli, &mut |_| Ok(()), &mut |at| {
            match at {
                Step::Swapping => {
                    editor = Some(fs::OpenOptions::new().append(true).open(vault.join(rel)).unwrap())
                }
                Step::File(0) => editor.take().unwrap().write_all(b"the person's line\n").unwrap(),
                _ => {}
            }
            Ok(())
        })
        .unwrap_err();
    assert_eq!(err.code, ErrorCode::Conflict, "{err}");
    assert_eq!(read(&vault, rel), format!("{before}the person's line\n"), "the late save is in the note");
    assert!(common::texts_under(&vault.join("inbox/trash"), "").is_empty(), "the trash holds nothing");
    assert!(audit_lines(&vault).is_empty());
    let pending = engine.list_proposals(&ListProposalsArgs::default()).unwrap();
    assert_eq!(pending.proposals[0].proposal_id, staged.proposal_id);
}

// ------------------------------------------------- issue 34, item 1: kills of a multi-file apply

/// Every file of the vault outside the inbox and the index, with its bytes:
/// what a person sees among their notes.
fn person_files(vault: &Path) -> Vec<(String, Vec<u8>)> {
    common::snapshot(vault)
        .into_iter()
        .filter(|(path, _)| !path.starts_with("inbox/") && !path.starts_with(".kb/"))
        .collect()
}

/// Issue 34, item 1: 100 real SIGKILLs of `kb-index inbox apply` at random
/// moments of a 100-item batch (patches, moves and deletes), each followed by
/// a fresh start's recovery. Every time the files among the notes are
/// byte-identical to the vault before the batch or after it, with no file
/// added: a temporary file a kill cut short is kb-mcp's own and is removed,
/// never kept beside a note as a conflict copy.
#[test]
fn a_hundred_kills_of_a_batch_leave_the_notes_before_or_after_and_nothing_added() {
    use std::time::Instant;
    if !cfg!(unix) {
        eprintln!("skipped: SIGKILL needs a Unix system");
        return;
    }
    let kills: u32 = std::env::var("KB_KILLS").ok().and_then(|n| n.parse().ok()).unwrap_or(100);
    let (tmp, pristine) = common::temp_vault();
    let body = |i: usize, what: &str| {
        format!("# Note {i}\n\n{}\n", format!("{what} line of note {i}.\n").repeat(400))
    };
    for i in 0..100 {
        put(&pristine, &format!("z/k/n{i}.md"), &body(i, "before"));
    }
    let engine = open(&pristine);
    let items: Vec<Value> = (0..100)
        .map(|i| {
            let path = format!("z/k/n{i}.md");
            match i % 10 {
                0 => serde_json::json!({"kind": "delete", "path": path}),
                1 => serde_json::json!({"kind": "move", "from": path, "to": format!("z/k2/n{i}.md")}),
                _ => {
                    serde_json::json!({"kind": "patch", "path": path, "base_hash": hash_of(&pristine, &path),
                     "edits": [{"op": "replace_all", "content": body(i, "after")}]})
                }
            }
        })
        .collect();
    let staged = batch(&engine, Value::Array(items)).unwrap();
    drop(engine);
    let before = person_files(&pristine);
    // The vault after: the batch applied to a copy, unkilled, timed.
    let copy = |name: &str| {
        let dir = tmp.path().join(name);
        let _ = fs::remove_dir_all(&dir);
        common::copy_dir(&pristine, &dir);
        dir
    };
    let apply_in = |vault: &Path| {
        std::process::Command::new(env!("CARGO_BIN_EXE_kb-index"))
            .args(["inbox", "apply", "--yes", "--only", &staged.proposal_id, "--vault"])
            .arg(vault)
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .spawn()
            .unwrap()
    };
    let done = copy("done");
    let started = Instant::now();
    assert!(apply_in(&done).wait().unwrap().success(), "the batch applies unkilled");
    let whole = started.elapsed();
    let after = person_files(&done);
    assert_ne!(before, after);
    let mut seed = u64::from(std::process::id()) | 1;
    let (mut mid_apply, mut outcomes) = (0, [0u32; 2]);
    for kill in 0..kills {
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        let vault = copy("killed");
        let mut child = apply_in(&vault);
        std::thread::sleep(whole.mul_f64((seed % 1000) as f64 / 1000.0));
        let _ = child.kill();
        child.wait().unwrap();
        if vault.join("inbox/_applying.json").exists() {
            mid_apply += 1;
        }
        // A fresh start's recovery (the index is left to the next sync).
        let recovery = write::recover(&sandbox(&vault), Actor::Mcp, &mut |_| Ok(())).unwrap();
        assert!(recovery.failed.is_empty(), "kill {kill}: {recovery:?}");
        let now = person_files(&vault);
        let which = if now == before {
            0
        } else if now == after {
            1
        } else {
            let names =
                |files: &[(String, Vec<u8>)]| files.iter().map(|(p, _)| p.clone()).collect::<Vec<_>>();
            let added: Vec<String> = names(&now)
                .into_iter()
                .filter(|p| !names(&before).contains(p) && !names(&after).contains(p))
                .collect();
            let differing: Vec<String> = now
                .iter()
                .filter(|file| !before.contains(file) && !after.contains(file))
                .map(|(path, bytes)| {
                    format!(
                        "{path} ({} bytes, {:?})",
                        bytes.len(),
                        String::from_utf8_lossy(&bytes[..bytes.len().min(40)])
                    )
                })
                .chain(
                    names(&before)
                        .into_iter()
                        .chain(names(&after))
                        .filter(|p| !names(&now).contains(p))
                        .map(|p| format!("{p} missing")),
                )
                .collect();
            panic!(
                "kill {kill} ({:?} in): neither before nor after; files added: {added:?}; differing: {differing:?}; recovery: {recovery:?}",
                whole
            );
        };
        outcomes[which] += 1;
        assert!(
            common::texts_under(&vault.join("inbox/conflicts"), "").is_empty(),
            "kill {kill}: a conflict copy was made of kb-mcp's own file"
        );
    }
    eprintln!(
        "{kills} kills of a 100-item batch ({whole:?} unkilled): {mid_apply} mid-apply; {} before, {} after",
        outcomes[0], outcomes[1]
    );
    assert!(
        mid_apply >= kills / 5,
        "only {mid_apply} of {kills} kills landed in the apply: it measured little"
    );
}
// --------------------------------------- a private note's text stays private (issue 34, item 2)

/// The notes of [`private_vault`]: each holds a word no other file holds, and has its own mode.
#[cfg(unix)]
const PRIVATE_NOTES: [(&str, &str, u32); 3] = [
    ("z/p/secret.md", "kestrel", 0o600),
    ("z/p/shared.md", "heron", 0o640),
    ("z/p/open.md", "plover", 0o644),
];

/// A vault with the [`PRIVATE_NOTES`], each with its mode, and `z/hub.md` linking them all.
#[cfg(unix)]
fn private_vault() -> (tempfile::TempDir, std::path::PathBuf) {
    use std::os::unix::fs::PermissionsExt;
    let (tmp, vault) = common::temp_vault();
    for (path, word, mode) in PRIVATE_NOTES {
        put(&vault, path, &format!("# {word}\n\nOnly this note says {word}.\n"));
        fs::set_permissions(vault.join(path), fs::Permissions::from_mode(mode)).unwrap();
    }
    put(&vault, "z/hub.md", "[[secret]] [[shared]] [[open]]\n");
    (tmp, vault)
}

#[cfg(unix)]
fn mode_of(vault: &Path, rel: &str) -> u32 {
    use std::os::unix::fs::PermissionsExt;
    fs::metadata(vault.join(rel)).unwrap().permissions().mode() & 0o777
}

/// The mode this process gives a new file (its umask decides).
#[cfg(unix)]
fn default_mode(vault: &Path) -> u32 {
    put(vault, "z/probe.md", "probe");
    let mode = mode_of(vault, "z/probe.md");
    fs::remove_file(vault.join("z/probe.md")).unwrap();
    mode
}

/// Checks every file of the vault (its index folder left out) holding the
/// word of one of the [`PRIVATE_NOTES`]: it is no more readable than the
/// strictest of the notes whose words it holds. Returns those files.
#[cfg(unix)]
fn check_private_text(vault: &Path) -> Vec<String> {
    let mut holding = Vec::new();
    let walk = walkdir::WalkDir::new(vault).sort_by_file_name().into_iter();
    for entry in walk.filter_entry(|entry| entry.file_name() != ".kb" && entry.file_name() != ".kb-history") {
        let entry = entry.unwrap();
        if !entry.file_type().is_file() {
            continue;
        }
        let rel = entry.path().strip_prefix(vault).unwrap().to_string_lossy().replace('\\', "/");
        let text = String::from_utf8_lossy(&fs::read(entry.path()).unwrap()).into_owned();
        let strictest = PRIVATE_NOTES
            .iter()
            .filter(|(_, word, _)| text.contains(word))
            .map(|(_, _, mode)| *mode)
            .reduce(|all, mode| all & mode);
        let Some(strictest) = strictest else { continue };
        let mode = mode_of(vault, &rel);
        assert_eq!(
            mode & !strictest,
            0,
            "{rel} is {mode:o}, holding the text of a note that is {strictest:o}"
        );
        holding.push(rel);
    }
    holding
}

/// Asserts that one of `files` lies under `folder` and ends in `suffix`.
#[cfg(unix)]
fn assert_among(files: &[String], folder: &str, suffix: &str) {
    assert!(
        files.iter().any(|file| file.starts_with(folder) && file.ends_with(suffix)),
        "no {folder}…{suffix} among {files:#?}"
    );
}

/// Reverts an applied proposal and applies the revert, checking its staged
/// plan on the way (its diff holds text only where a note's text changes).
#[cfg(unix)]
fn revert_and_apply(engine: &Engine, vault: &Path, id: &str) -> String {
    let reverted = revert(engine, id).unwrap();
    let holding = check_private_text(vault);
    assert_among(&holding, "inbox/revert/", ".plan.json");
    apply(engine, &reverted.proposal_id);
    reverted.proposal_id
}

#[cfg(unix)]
#[test]
fn issue_34_a_moves_files_are_no_more_readable_than_the_note_and_a_revert_keeps_its_mode() {
    let (_tmp, vault) = private_vault();
    let engine = open(&vault);
    let moved = mv(&engine, "z/p/secret.md", "z/q/hidden.md").unwrap();
    let holding = check_private_text(&vault);
    assert_among(&holding, "inbox/move/", ".plan.json");
    assert_among(&holding, "inbox/move/", ".diff");

    apply(&engine, &moved.proposal_id);
    assert_eq!(mode_of(&vault, "z/q/hidden.md"), 0o600);
    let holding = check_private_text(&vault);
    assert_among(&holding, "inbox/applied/", ".plan.json");
    assert_among(&holding, "inbox/applied/", ".diff");

    revert_and_apply(&engine, &vault, &moved.proposal_id);
    assert_eq!(mode_of(&vault, "z/p/secret.md"), 0o600);
    check_private_text(&vault);
}

#[cfg(unix)]
#[test]
fn issue_34_a_folder_moves_files_take_the_strictest_mode_of_its_notes() {
    let (_tmp, vault) = private_vault();
    let engine = open(&vault);
    let moved = mv(&engine, "z/p", "z/archive/p").unwrap();
    assert_eq!(moved.moves.len(), 3);
    let holding = check_private_text(&vault);
    assert_among(&holding, "inbox/move/", ".plan.json");
    let plan = holding.iter().find(|file| file.ends_with(".plan.json")).unwrap();
    assert_eq!(mode_of(&vault, plan) & !0o600, 0, "the plan holds all three notes");

    apply(&engine, &moved.proposal_id);
    for (path, _, mode) in PRIVATE_NOTES {
        let moved_to = path.replace("z/p/", "z/archive/p/");
        assert_eq!(mode_of(&vault, &moved_to), mode, "{moved_to}");
    }
    assert_among(&check_private_text(&vault), "inbox/applied/", ".plan.json");

    revert_and_apply(&engine, &vault, &moved.proposal_id);
    for (path, _, mode) in PRIVATE_NOTES {
        assert_eq!(mode_of(&vault, path), mode, "{path} is back with its own mode");
    }
    check_private_text(&vault);
}

#[cfg(unix)]
#[test]
fn issue_34_a_deleted_note_keeps_its_mode_in_the_trash_and_when_a_revert_brings_it_back() {
    let (_tmp, vault) = private_vault();
    let engine = open(&vault);
    let deleted = engine
        .propose_delete(&ProposeDeleteArgs { path: "z/p/secret.md".into(), reason: "private".into() })
        .unwrap();
    let holding = check_private_text(&vault);
    assert_among(&holding, "inbox/delete/", ".plan.json");

    apply(&engine, &deleted.proposal_id);
    let holding = check_private_text(&vault);
    assert_among(&holding, "inbox/applied/", ".plan.json");
    assert_among(&holding, "inbox/trash/", "/z/p/secret.md");

    // Back from the trash, to the trash again (the revert's own), and back again.
    let back = revert_and_apply(&engine, &vault, &deleted.proposal_id);
    assert_eq!(mode_of(&vault, "z/p/secret.md"), 0o600);
    let gone = revert_and_apply(&engine, &vault, &back);
    assert!(!vault.join("z/p/secret.md").exists());
    let trashed = check_private_text(&vault).into_iter().filter(|file| file.starts_with("inbox/trash/"));
    assert_eq!(trashed.count(), 2, "the delete's copy and the revert's");
    revert_and_apply(&engine, &vault, &gone);
    assert_eq!(mode_of(&vault, "z/p/secret.md"), 0o600);
    check_private_text(&vault);
}

#[cfg(unix)]
#[test]
fn issue_34_a_batchs_files_take_the_strictest_mode_and_its_revert_gives_each_note_its_own() {
    let (_tmp, vault) = private_vault();
    let engine = open(&vault);
    let staged = batch(
        &engine,
        serde_json::json!([
            {"kind": "new", "title": "Fresh", "folder": "z", "body": "Nothing private.\n", "reason": "r"},
            {"kind": "patch", "path": "z/p/secret.md", "base_hash": hash_of(&vault, "z/p/secret.md"),
             "edits": [{"op": "append", "content": "More.\n"}]},
            {"kind": "move", "from": "z/p/open.md", "to": "z/q/open2.md"},
            {"kind": "delete", "path": "z/p/shared.md"},
        ]),
    )
    .unwrap();
    let holding = check_private_text(&vault);
    assert_among(&holding, "inbox/batch/", ".plan.json");
    assert_among(&holding, "inbox/batch/", ".diff");

    apply(&engine, &staged.proposal_id);
    let holding = check_private_text(&vault);
    assert_among(&holding, "inbox/applied/", ".plan.json");
    assert_among(&holding, "inbox/trash/", "/z/p/shared.md");
    assert_eq!(mode_of(&vault, "z/p/secret.md"), 0o600);
    assert_eq!(mode_of(&vault, "z/q/open2.md"), 0o644);
    assert_eq!(mode_of(&vault, "z/Fresh.md"), default_mode(&vault), "a new note has no note behind it");

    revert_and_apply(&engine, &vault, &staged.proposal_id);
    for (path, _, mode) in PRIVATE_NOTES {
        assert_eq!(
            mode_of(&vault, path),
            mode,
            "{path} is back with its own mode, not the batch's strictest"
        );
    }
    check_private_text(&vault);
}

/// A new note made private after its apply: a revert's copy of it in the
/// trash, and the note a revert of that revert brings back, keep its mode.
#[cfg(unix)]
#[test]
fn issue_34_a_reverted_new_note_keeps_the_mode_given_it_since() {
    use std::os::unix::fs::PermissionsExt;
    let (_tmp, vault) = private_vault();
    let engine = open(&vault);
    let new = engine
        .propose_new_note(&ProposeNewArgs {
            title: "Diary".into(),
            body: "Made private once written.\n".into(),
            reason: "keep".into(),
            ..ProposeNewArgs::default()
        })
        .unwrap();
    apply(&engine, &new.proposal_id);
    fs::set_permissions(vault.join("z/Diary.md"), fs::Permissions::from_mode(0o600)).unwrap();
    let trashed = revert(&engine, &new.proposal_id).unwrap();
    apply(&engine, &trashed.proposal_id);
    // Every copy of its text in the inbox but the staged note, written before
    // there was a note to take a mode from.
    let staged = Path::new(&new.files[0]).file_name().unwrap().to_string_lossy().into_owned();
    let copies: Vec<String> = common::snapshot(&vault.join("inbox"))
        .into_iter()
        .filter(|(path, bytes)| {
            !path.ends_with(&format!("/{staged}")) && String::from_utf8_lossy(bytes).contains("once written")
        })
        .map(|(path, _)| format!("inbox/{path}"))
        .collect();
    assert_among(&copies, "inbox/trash/", "/z/Diary.md");
    assert_among(&copies, "inbox/applied/", ".plan.json");
    for copy in &copies {
        assert_eq!(mode_of(&vault, copy) & !0o600, 0, "{copy}");
    }
    let back = revert(&engine, &trashed.proposal_id).unwrap();
    apply(&engine, &back.proposal_id);
    assert_eq!(mode_of(&vault, "z/Diary.md"), 0o600);
}

/// A delete rolled back after its note went to the trash puts the note back with its mode.
#[cfg(unix)]
#[test]
fn issue_34_a_rolled_back_delete_puts_the_note_back_with_its_mode() {
    let (_tmp, vault) = private_vault();
    let engine = open(&vault);
    let deleted = engine
        .propose_delete(&ProposeDeleteArgs { path: "z/p/secret.md".into(), reason: "private".into() })
        .unwrap();
    let sandbox = sandbox(&vault);
    let mut crash = |at: Step| if at == Step::File(0) { Err(Error::internal("crash")) } else { Ok(()) };
    let err =
        write::apply_with_failpoint(&sandbox, &deleted.proposal_id, Actor::Cli, &mut |_| Ok(()), &mut crash)
            .unwrap_err();
    assert_eq!(err.message, "crash");
    assert!(!vault.join("z/p/secret.md").exists(), "in the trash when it crashed");
    let recovery = write::recover(&sandbox, Actor::Cli, &mut |_| Ok(())).unwrap();
    assert!(recovery.failed.is_empty(), "{recovery:?}");
    assert_eq!(mode_of(&vault, "z/p/secret.md"), 0o600);
}

/// With the trash emptied, a note a revert brings back takes the mode of the
/// plan holding its text instead (staged no more readable than the note was):
/// emptied after the revert was staged, and before.
#[cfg(unix)]
#[test]
fn issue_34_a_note_brought_back_after_the_trash_was_emptied_stays_private() {
    let (_tmp, vault) = private_vault();
    let engine = open(&vault);
    let deleted = engine
        .propose_delete(&ProposeDeleteArgs { path: "z/p/secret.md".into(), reason: "private".into() })
        .unwrap();
    apply(&engine, &deleted.proposal_id);
    let back = revert(&engine, &deleted.proposal_id).unwrap();
    fs::remove_dir_all(vault.join("inbox/trash")).unwrap();
    apply(&engine, &back.proposal_id);
    assert_eq!(mode_of(&vault, "z/p/secret.md"), 0o600, "emptied after the revert was staged");

    let gone = revert_and_apply(&engine, &vault, &back.proposal_id);
    fs::remove_dir_all(vault.join("inbox/trash")).unwrap();
    revert_and_apply(&engine, &vault, &gone);
    assert_eq!(mode_of(&vault, "z/p/secret.md"), 0o600, "emptied before");
    check_private_text(&vault);
}

// ---------------------------------------------------------------------------
// Issue 34, item 10: what a move rewrites, and how

/// A link inside an indented code block is code, not a link: a move leaves
/// it as written (it rewrote it), while the links around it follow the note.
#[test]
fn issue_34_a_move_leaves_a_link_in_indented_code_as_written() {
    let (_tmp, vault) = common::temp_vault();
    put(&vault, "z/mv/a.md", "# A\n");
    put(
        &vault,
        "z/mv/l.md",
        "[[a]]\n\n    [[a]] in code\n\n\t[t](a.md) too\n\n- item\n\n    [t](a.md) in the item\n",
    );
    let engine = open(&vault);
    let before = broken(&engine);
    let staged = mv(&engine, "z/mv/a.md", "z/mv/b.md").unwrap();
    apply(&engine, &staged.proposal_id);
    assert_eq!(
        read(&vault, "z/mv/l.md"),
        "[[b]]\n\n    [[a]] in code\n\n\t[t](a.md) too\n\n- item\n\n    [t](b.md) in the item\n"
    );
    assert_eq!(broken(&engine), before);
}

/// A link by alias sent to its note's name gains display text; its `|` is
/// escaped in a GFM table row (header row included), and only there: a line
/// that merely holds a `|` is no table.
#[test]
fn issue_34_only_a_table_row_escapes_the_display_bar() {
    let (_tmp, vault) = common::temp_vault();
    put(&vault, "z/mv/b.md", "---\naliases: [x]\n---\n# B\n");
    put(&vault, "z/mv/c.md", "# C\n");
    put(&vault, "z/mv/l.md", "a | b and [[x]]\n\n`|` [[x]]\n\n| [[x]] | h |\n| --- | --- |\n| [[x]] | z |\n");
    let engine = open(&vault);
    let staged = mv(&engine, "z/mv/c.md", "z/mv/x.md").unwrap();
    apply(&engine, &staged.proposal_id);
    assert_eq!(
        read(&vault, "z/mv/l.md"),
        "a | b and [[b|x]]\n\n`|` [[b|x]]\n\n| [[b\\|x]] | h |\n| --- | --- |\n| [[b\\|x]] | z |\n"
    );
}

/// The old name a move adds to a block list of aliases goes in as one more
/// item: the list's comments and layout stay (they were dropped).
#[test]
fn issue_34_an_alias_added_by_a_move_keeps_the_lists_comments() {
    let (_tmp, vault) = common::temp_vault();
    let cases = [
        (
            "---\naliases:\n  - first  # the old name\n  # more to come\n  - second\ntags: [t]\n---\n# A\n",
            "---\naliases:\n  - first  # the old name\n  # more to come\n  - second\n  - a\ntags: [t]\n---\n# A\n",
        ),
        (
            "---\naliases:\n- one\n\n# comment after the list\ntitle: T\n---\n",
            "---\naliases:\n- one\n- a\n\n# comment after the list\ntitle: T\n---\n",
        ),
        ("---\naliases: [one, \"two\"]  # flow\n---\n", "---\naliases: [one, \"two\", a]  # flow\n---\n"),
    ];
    for (number, (text, _)) in cases.into_iter().enumerate() {
        put(&vault, &format!("z/al{number}/a.md"), text);
    }
    let engine = open(&vault);
    for (number, (_, expected)) in cases.into_iter().enumerate() {
        let staged = mv(&engine, &format!("z/al{number}/a.md"), &format!("z/al{number}/b.md")).unwrap();
        apply(&engine, &staged.proposal_id);
        assert_eq!(read(&vault, &format!("z/al{number}/b.md")), expected, "case {number}");
    }
}

// ---------------------------------------------------------------------------
// Issue 34, item 10: names compared NFC-normalised; no stray invisible
// character in a name a proposal creates

fn new_note(engine: &Engine, title: &str, folder: &str) -> kb_mcp::error::Result<ProposeNewResult> {
    engine.propose_new_note(&ProposeNewArgs {
        title: title.to_owned(),
        body: "text\n".to_owned(),
        reason: "names".to_owned(),
        folder: Some(folder.to_owned()),
        ..ProposeNewArgs::default()
    })
}

/// `café` written precomposed (NFC, as most keyboards type it) and
/// decomposed (NFD, as macOS file names often are) is one name: a link or a
/// `ref` in either form finds the note in the other, and no proposal creates
/// the other form's twin beside it (nor a twin differing only in case).
#[test]
fn issue_34_names_compare_nfc_normalised() {
    let (nfc, nfd) = ("caf\u{e9}", "cafe\u{301}");
    let (_tmp, vault) = common::temp_vault();
    put(&vault, &format!("z/nf/{nfd}.md"), "# Decomposed\n");
    put(&vault, "z/nf/l.md", &format!("[[{nfc}]] and [t]({nfc}.md)\n"));
    put(&vault, "z/nf/other.md", "# Other\n");
    let engine = open(&vault);
    let backlinks = engine.backlinks(&format!("z/nf/{nfd}.md")).unwrap();
    assert_eq!(backlinks, ["z/nf/l.md", "z/nf/l.md"], "both links find the decomposed note");
    let read = engine
        .read_note(&ReadNoteArgs { reference: Some(nfc.to_owned()), ..ReadNoteArgs::default() })
        .unwrap();
    assert_eq!(read.path, format!("z/nf/{nfd}.md"));

    let err = new_note(&engine, nfc, "z/nf").unwrap_err();
    assert_eq!(err.code, ErrorCode::TargetExists, "{err}");
    assert!(err.message.contains(&format!("z/nf/{nfd}.md")), "{err}");
    for to in [format!("z/nf/{nfc}.md"), "z/nf/CAFE\u{301}.md".to_owned()] {
        let err = mv(&engine, "z/nf/other.md", &to).unwrap_err();
        assert_eq!(err.code, ErrorCode::TargetExists, "{to}: {err}");
        assert!(err.message.contains(&format!("z/nf/{nfd}.md")), "{to}: {err}");
    }
}

/// A name a proposal creates holds no invisible character that could make
/// it read as another (`ca\u200bfe`), while a joiner that a script or an
/// emoji sequence needs stays; for a new note the server drops a stray one
/// from the title. A note already named so stays readable.
#[test]
fn issue_34_a_new_name_holds_no_stray_zero_width_character() {
    let (_tmp, vault) = common::temp_vault();
    put(&vault, "z/zw/a.md", "# A\n");
    put(&vault, "z/zw/ex\u{200b}isting.md", "# Existing\n");
    let engine = open(&vault);
    let existing = engine
        .read_note(&ReadNoteArgs { path: Some("z/zw/ex\u{200b}isting.md".into()), ..ReadNoteArgs::default() })
        .unwrap();
    assert_eq!(existing.title, "Existing");
    for refused in
        ["z/zw/ca\u{200b}fe.md", "z/zw/a\u{200d}b.md", "z/zw/\u{200c}lead.md", "z/new\u{200b}folder/a.md"]
    {
        let err = mv(&engine, "z/zw/a.md", refused).unwrap_err();
        assert_eq!(err.code, ErrorCode::PathDenied, "{refused:?}: {err}");
        assert!(err.message.contains("U+200"), "{refused:?}: {err}");
    }
    for accepted in [
        "z/zw/家庭 \u{1f468}\u{200d}\u{1f469}\u{200d}\u{1f467}.md",
        "z/zw/\u{645}\u{6cc}\u{200c}\u{62e}\u{648}\u{627}\u{647}\u{645}.md",
    ] {
        let staged = mv(&engine, "z/zw/a.md", accepted).unwrap_or_else(|err| panic!("{accepted:?}: {err}"));
        assert_eq!(staged.moves[0].to, accepted);
    }
    let staged = new_note(&engine, "ca\u{200b}fe", "z/zw").unwrap();
    assert_eq!(staged.target, "z/zw/cafe.md");
    let err = new_note(&engine, "fine", "z/zw/new\u{200b}folder").unwrap_err();
    assert_eq!(err.code, ErrorCode::PathDenied, "{err}");
}

// ---------------------------------------------------------------------------
// Issue 34, item 10: a note just created, not yet indexed

/// A note the person has just created is on disk a moment before the watcher
/// tells the index: it can be moved or deleted at once (it answered
/// `not_found`), and so can a folder holding one, the disk being checked
/// first.
#[test]
fn issue_34_a_just_created_note_can_be_moved_or_deleted_at_once() {
    let (_tmp, vault) = common::temp_vault();
    let engine = open(&vault);
    put(&vault, "z/fresh/new.md", "# New\n");
    let staged = mv(&engine, "z/fresh/new.md", "z/fresh/renamed.md").unwrap();
    apply(&engine, &staged.proposal_id);
    assert_eq!(read(&vault, "z/fresh/renamed.md"), "---\naliases: [new]\n---\n# New\n");

    put(&vault, "z/fresh2/a.md", "# A\n");
    let staged = mv(&engine, "z/fresh2", "z/fresh3").unwrap();
    apply(&engine, &staged.proposal_id);
    assert_eq!(read(&vault, "z/fresh3/a.md"), "# A\n");

    put(&vault, "z/fresh/gone.md", "# Gone\n");
    let deleted = engine
        .propose_delete(&ProposeDeleteArgs { path: "z/fresh/gone.md".into(), reason: "not needed".into() })
        .unwrap();
    apply(&engine, &deleted.proposal_id);
    assert!(!vault.join("z/fresh/gone.md").exists());
}

// ---------------------------------------------------------------------------
// Issue 34, item 5: a folder move carries the whole folder

/// A canvas under the moved folder: a file node for a note in it and one for
/// an image in it (compact JSON, as Obsidian writes it).
const BOARD: &str = r#"{"nodes":[{"id":"1","type":"file","file":"z/proj/plan.md","x":0,"y":0,"width":400,"height":400},{"id":"2","type":"file","file":"z/proj/diagram.png","x":500,"y":0,"width":400,"height":400},{"id":"3","type":"text","text":"z/proj/plan.md","x":0,"y":500,"width":200,"height":60}],"edges":[{"id":"e","fromNode":"1","toNode":"2"}]}"#;

/// A canvas outside the folder, pretty-printed with tabs: its file nodes name
/// a note and a PDF in the folder, and a note outside it.
const WALL: &str = "{\n\t\"nodes\":[\n\t\t{\"id\":\"a\",\"type\":\"file\",\"file\":\"z/proj/deep/inner.md\",\"x\":0,\"y\":0,\"width\":400,\"height\":400},\n\t\t{\"id\":\"b\",\"type\":\"file\", \"file\" : \"z/proj/spec.pdf\",\"x\":500,\"y\":0,\"width\":400,\"height\":400},\n\t\t{\"id\":\"c\",\"type\":\"file\",\"file\":\"z/outside.md\",\"x\":0,\"y\":500,\"width\":400,\"height\":400}\n\t],\n\t\"edges\":[]\n}\n";

const PNG: &[u8] = b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR binary \xff\xfe\x00";
const PDF: &[u8] = b"%PDF-1.4\n%\xe2\xe3\xcf\xd3\n1 0 obj <<>> endobj\n";

/// A folder holding notes (one in a nested folder), an image, a PDF, a
/// canvas naming a note and the image, a hidden file, a deeper folder with a
/// photo, and an empty folder; outside it, a note linking into it in every
/// form and a canvas naming files in it.
fn folder_vault() -> (tempfile::TempDir, std::path::PathBuf) {
    let (tmp, vault) = common::temp_vault();
    put(
        &vault,
        "z/proj/plan.md",
        "# Plan\n![[diagram.png]] and ![pdf](spec.pdf) and [[inner]] and ![[board.canvas]]\n",
    );
    put(&vault, "z/proj/deep/inner.md", "# Inner\n![img](../diagram.png) and [[plan]] and ![[photo.jpg]]\n");
    put(&vault, "z/proj/board.canvas", BOARD);
    put(&vault, "z/proj/.hidden-note", "kept apart\n");
    fs::write(vault.join("z/proj/diagram.png"), PNG).unwrap();
    fs::write(vault.join("z/proj/spec.pdf"), PDF).unwrap();
    fs::create_dir_all(vault.join("z/proj/deep/deeper")).unwrap();
    fs::write(vault.join("z/proj/deep/deeper/photo.jpg"), PNG).unwrap();
    fs::create_dir_all(vault.join("z/proj/empty")).unwrap();
    put(
        &vault,
        "z/outside.md",
        "[[plan]] ![[diagram.png]] ![p](proj/deep/deeper/photo.jpg) [s](proj/spec.pdf) [[proj/deep/inner]]\n",
    );
    put(&vault, "z/wall.canvas", WALL);
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        fs::set_permissions(vault.join("z/proj/spec.pdf"), fs::Permissions::from_mode(0o600)).unwrap();
    }
    (tmp, vault)
}

/// The folder vault's files under `z/proj`, by their path under it.
const CARRIED: [&str; 8] = [
    ".hidden-note",
    "board.canvas",
    "deep/deeper/photo.jpg",
    "deep/inner.md",
    "diagram.png",
    "plan.md",
    "spec.pdf",
    "empty",
];

/// Issue 34, item 5: a folder move leaves nothing of the folder behind. Its
/// attachments, PDF, canvas, hidden file and empty folder go with its notes
/// (they stayed, and the moved notes were rewritten to point back into the
/// old folder); the links to them from outside, the canvas inside and the
/// canvas outside follow them (the canvases byte for byte but for those
/// paths); no link breaks; and no folder of the old one is left (96 emptied
/// folders stayed after a large move).
#[test]
fn issue_34_a_folder_move_carries_every_file_and_leaves_no_folder_behind() {
    let (_tmp, vault) = folder_vault();
    let engine = open(&vault);
    let before = broken(&engine);
    let staged = mv(&engine, "z/proj", "z/archive/proj 2024").unwrap();
    let new = "z/archive/proj 2024";
    assert_eq!(staged.moves.len(), 2, "{:?}", staged.moves);
    assert!(
        staged.diff.starts_with("# move folder z/proj → z/archive/proj 2024 (2 notes, 5 other files)"),
        "{}",
        staged.diff
    );
    assert!(
        staged.diff.contains("rename from z/proj/diagram.png\nrename to z/archive/proj 2024/diagram.png\n"),
        "{}",
        staged.diff
    );
    let applied = apply(&engine, &staged.proposal_id);
    assert_eq!(applied.status, ApplyStatus::Applied, "{applied:?}");
    assert!(engine.record(&format!("{new}/deep/inner.md")).is_some(), "the moved notes are indexed");
    for file in CARRIED {
        assert!(!vault.join("z/proj").join(file).exists(), "{file} stayed behind");
        assert!(vault.join(new).join(file).exists(), "{file} did not move");
    }
    assert!(!vault.join("z/proj").exists(), "the old folder is gone");
    assert!(vault.join(new).join("empty").is_dir());
    assert_eq!(fs::read(vault.join(new).join("diagram.png")).unwrap(), PNG);
    assert_eq!(fs::read(vault.join(new).join("spec.pdf")).unwrap(), PDF);
    assert_eq!(fs::read(vault.join(new).join("deep/deeper/photo.jpg")).unwrap(), PNG);
    assert_eq!(read(&vault, &format!("{new}/.hidden-note")), "kept apart\n");
    #[cfg(unix)]
    assert_eq!(mode_of(&vault, &format!("{new}/spec.pdf")), 0o600, "a moved file keeps its mode");

    // Inside the folder, relative links and bare names still lead to the files
    // that moved with them; a bare `diagram.png`, which the fixture's shallower
    // z/attachments/diagram.png would now answer, names its folder.
    assert_eq!(
        read(&vault, &format!("{new}/plan.md")),
        "# Plan\n![[proj 2024/diagram.png]] and ![pdf](spec.pdf) and [[inner]] and ![[board.canvas]]\n"
    );
    assert_eq!(
        read(&vault, &format!("{new}/deep/inner.md")),
        "# Inner\n![img](../diagram.png) and [[plan]] and ![[photo.jpg]]\n"
    );
    assert_eq!(
        read(&vault, "z/outside.md"),
        "[[plan]] ![[proj 2024/diagram.png]] ![p](archive/proj%202024/deep/deeper/photo.jpg) [s](archive/proj%202024/spec.pdf) [[deep/inner]]\n"
    );
    assert_eq!(
        read(&vault, &format!("{new}/board.canvas")),
        BOARD.replace("\"file\":\"z/proj/", &format!("\"file\":\"{new}/"))
    );
    assert_eq!(
        read(&vault, "z/wall.canvas"),
        WALL.replace("\"z/proj/deep/inner.md\"", &format!("\"{new}/deep/inner.md\""))
            .replace("\"z/proj/spec.pdf\"", &format!("\"{new}/spec.pdf\""))
    );
    assert_eq!(broken(&engine), before, "no link broke, links to attachments included");
    let related = engine
        .get_related_notes(&NoteRefArgs { path: Some("z/outside.md".into()), reference: None })
        .unwrap();
    assert!(related.broken.is_empty(), "{:?}", related.broken);
    // One audit line, every file in it: 2 notes and 5 other files moved, 2
    // notes and a canvas rewritten (the fixture's z/备份仓库.md embeds
    // `diagram.png`, which z/proj/diagram.png answered: it follows it).
    let lines = audit_lines(&vault);
    assert_eq!(lines[0]["files"].as_array().unwrap().len(), 10, "{}", lines[0]);
    let schema =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("crates/kb-engine/index-schema/audit.schema.json");
    let schema: Value = serde_json::from_slice(&fs::read(schema).unwrap()).unwrap();
    let errors: Vec<String> =
        jsonschema::validator_for(&schema).unwrap().iter_errors(&lines[0]).map(|e| e.to_string()).collect();
    assert!(errors.is_empty(), "the audit line (a `move_file` in it) matches its schema: {errors:?}");
}

/// A folder holding a file a rule denies (a secret, an internal folder) or a
/// symbolic link is refused whole, naming them: kb-mcp never moves them, and
/// moving the rest would leave the folder behind.
#[test]
fn issue_34_a_folder_move_refuses_a_folder_holding_denied_files() {
    let (_tmp, vault) = folder_vault();
    put(&vault, "z/proj/.env", "TOKEN=secret\n");
    put(&vault, "z/proj/deep/.git/config", "[core]\n");
    #[cfg(unix)]
    std::os::unix::fs::symlink("../outside.md", vault.join("z/proj/link.md")).unwrap();
    let engine = open(&vault);
    let original = notes_snapshot(&vault);
    let err = mv(&engine, "z/proj", "z/archive/proj").unwrap_err();
    assert_eq!(err.code, ErrorCode::PathDenied, "{err}");
    assert!(err.message.contains("z/proj/.env") && err.message.contains("z/proj/deep/.git"), "{err}");
    #[cfg(unix)]
    assert!(err.message.contains("z/proj/link.md (a symbolic link"), "{err}");
    assert!(err.message.contains("nothing was staged"), "{err}");
    assert!(engine.list_proposals(&ListProposalsArgs::default()).unwrap().proposals.is_empty());
    assert_eq!(notes_snapshot(&vault), original);
}

/// A crash after each step of a folder move's apply, and a revert after it:
/// every file (attachments, canvases, the hidden one) and every folder is
/// where it was (before the commit point) or where the move takes it (after
/// it), never some moved and others not.
#[test]
fn issue_34_a_crash_at_any_step_of_a_folder_move_is_all_or_nothing() {
    let steps = [
        Step::Claimed,
        Step::Prepared,
        Step::File(0),
        Step::File(3),
        Step::File(5),
        Step::File(8),
        Step::Written,
        Step::Archiving,
        Step::Archived,
        Step::Indexed,
        Step::Audited,
    ];
    for step in steps {
        let (_tmp, vault) = folder_vault();
        let engine = open(&vault);
        let original = notes_snapshot(&vault);
        let original_folders = folders(&vault);
        let staged = mv(&engine, "z/proj", "z/archive/proj").unwrap();
        let sandbox = sandbox(&vault);
        crash_apply_at(&sandbox, &staged.proposal_id, step);
        let recovery = write::recover(&sandbox, Actor::Cli, &mut |_| Ok(())).unwrap();
        assert!(recovery.failed.is_empty(), "{step:?}: {recovery:?}");
        let temps: Vec<String> = common::snapshot(&vault)
            .into_iter()
            .map(|(path, _)| path)
            .filter(|p| p.contains(".kb-tmp-"))
            .collect();
        assert!(temps.is_empty(), "{step:?}: {temps:?}");
        if committed(step) {
            for file in CARRIED {
                assert!(vault.join("z/archive/proj").join(file).exists(), "{step:?}: {file}");
            }
            assert!(!vault.join("z/proj").exists(), "{step:?}: the old folder is gone");
            assert!(read(&vault, "z/wall.canvas").contains("z/archive/proj/spec.pdf"), "{step:?}");
        } else {
            assert_eq!(notes_snapshot(&vault), original, "{step:?}: rolled back");
            assert_eq!(folders(&vault), original_folders, "{step:?}: no folder made, none removed");
            apply(&engine, &staged.proposal_id);
            assert!(!vault.join("z/proj").exists(), "{step:?}");
        }
        assert_eq!(audit_lines(&vault).len(), 1, "{step:?}");
        // The revert puts every file back, byte for byte.
        let back = revert(&engine, &staged.proposal_id).unwrap();
        apply(&engine, &back.proposal_id);
        assert_eq!(notes_snapshot(&vault), original, "{step:?}: reverted");
        assert!(vault.join("z/proj/empty").is_dir(), "{step:?}: the empty folder is back");
    }
}

/// A real SIGKILL in the middle of a folder move's apply (after its first
/// file operation): the next start rolls every file back.
#[test]
fn issue_34_a_folder_move_killed_mid_apply_is_rolled_back() {
    const NAME: &str = "issue_34_a_folder_move_killed_mid_apply_is_rolled_back";
    if let Ok(job) = std::env::var(KILL_CHILD_ENV) {
        apply_until_killed_at_second_file(&job);
    }
    if !cfg!(unix) {
        eprintln!("skipped: SIGKILL at a chosen step needs a Unix system");
        return;
    }
    let (tmp, vault) = folder_vault();
    let engine = open(&vault);
    let original = notes_snapshot(&vault);
    let original_folders = folders(&vault);
    let staged = mv(&engine, "z/proj", "z/archive/proj").unwrap();
    drop(engine);
    let marker = tmp.path().join("marker");
    let job = format!("{}|{}|{}", vault.display(), staged.proposal_id, marker.display());
    kill_child_at_marker(NAME, KILL_CHILD_ENV, job, &marker, "the folder move");
    assert!(vault.join("inbox/_applying.json").exists(), "the journal is left");
    let engine = open(&vault);
    engine.recover_proposals(Actor::Mcp).unwrap();
    assert_eq!(notes_snapshot(&vault), original, "rolled back");
    assert_eq!(folders(&vault), original_folders);
    apply(&engine, &staged.proposal_id);
    assert!(!vault.join("z/proj").exists());
    assert_eq!(fs::read(vault.join("z/archive/proj/spec.pdf")).unwrap(), PDF);
}

/// A move renames a note by a link under the new name and then the removal
/// of the old one; a crash in between leaves one file under both names. The
/// recovery takes it for what it is (not for someone else's file, which it
/// would leave): rolled back, the new name goes; carried forward (the
/// proposal archived), the old one does. This is the state the hundred-kill
/// test met about once in a thousand kills.
#[test]
fn a_rename_stopped_between_its_link_and_its_removal_is_recovered() {
    for step in [Step::File(0), Step::Archived] {
        let (_tmp, vault) = common::temp_vault();
        put(&vault, "z/k/half.md", "# Half\n\nbefore\n");
        let engine = open(&vault);
        let original = notes_snapshot(&vault);
        let staged = mv(&engine, "z/k/half.md", "z/k2/half.md").unwrap();
        drop(engine);
        crash_apply_at(&sandbox(&vault), &staged.proposal_id, step);
        // The old name back as the link left it: both names, one file.
        fs::hard_link(vault.join("z/k2/half.md"), vault.join("z/k/half.md")).unwrap();
        let recovery = write::recover(&sandbox(&vault), Actor::Mcp, &mut |_| Ok(())).unwrap();
        assert!(recovery.failed.is_empty(), "{step:?}: {recovery:?}");
        let (kept, gone) = if step == Step::Archived {
            ("z/k2/half.md", "z/k/half.md")
        } else {
            ("z/k/half.md", "z/k2/half.md")
        };
        assert_eq!(fs::read_to_string(vault.join(kept)).unwrap(), "# Half\n\nbefore\n", "{step:?}");
        assert!(!vault.join(gone).exists(), "{step:?}: {gone} is left");
        if step == Step::File(0) {
            assert_eq!(notes_snapshot(&vault), original, "rolled back");
            apply(&open(&vault), &staged.proposal_id);
            assert!(vault.join("z/k2/half.md").exists() && !vault.join("z/k/half.md").exists());
        }
    }
}

/// The same for a file a folder move carries (an attachment): a crash
/// between its link and its removal leaves it under both names; rolled back
/// (pending) the new name goes, carried forward (archived) the old one.
#[test]
fn a_carried_files_rename_stopped_half_done_is_recovered() {
    for step in [Step::Written, Step::Archived] {
        let (_tmp, vault) = folder_vault();
        let engine = open(&vault);
        let original = notes_snapshot(&vault);
        let staged = mv(&engine, "z/proj", "z/archive/proj").unwrap();
        drop(engine);
        crash_apply_at(&sandbox(&vault), &staged.proposal_id, step);
        fs::create_dir_all(vault.join("z/proj")).unwrap();
        fs::hard_link(vault.join("z/archive/proj/spec.pdf"), vault.join("z/proj/spec.pdf")).unwrap();
        let recovery = write::recover(&sandbox(&vault), Actor::Mcp, &mut |_| Ok(())).unwrap();
        assert!(recovery.failed.is_empty(), "{step:?}: {recovery:?}");
        if step == Step::Written {
            assert_eq!(notes_snapshot(&vault), original, "rolled back");
            assert_eq!(fs::read(vault.join("z/proj/spec.pdf")).unwrap(), PDF);
            assert!(!vault.join("z/archive/proj/spec.pdf").exists(), "the new name is left");
        } else {
            assert_eq!(fs::read(vault.join("z/archive/proj/spec.pdf")).unwrap(), PDF);
            assert!(!vault.join("z/proj/spec.pdf").exists(), "the old name is left");
        }
    }
}

/// A move that gives a note the name another note has makes that note's
/// bare links ambiguous: each still leads where it led, but its name now
/// names two notes and which one opens is the editor's guess. The move lists
/// them under its summary (which counts them), in its answer's diff and the
/// review; it said nothing.
#[test]
fn issue_34_a_move_lists_the_links_it_makes_ambiguous() {
    let (_tmp, vault) = common::temp_vault();
    put(&vault, "z/amb/a/dup.md", "# Dup\n");
    put(&vault, "z/amb/b/solo.md", "# Solo\n");
    put(&vault, "z/amb/l.md", "[[dup]] and [[solo]]\n![[dup#Dup]]\n");
    let engine = open(&vault);
    let staged = mv(&engine, "z/amb/b/solo.md", "z/amb/c/dup.md").unwrap();
    let head: Vec<&str> = staged.diff.lines().take(3).collect();
    assert!(head[0].ends_with(", 2 links will become ambiguous"), "{}", staged.diff);
    assert_eq!(
        head[1..],
        [
            "# ambiguous after the move: z/amb/l.md:1 [[dup]] (still leads to z/amb/a/dup.md)",
            "# ambiguous after the move: z/amb/l.md:2 ![[dup#Dup]] (still leads to z/amb/a/dup.md)",
        ]
    );
    let shown = kb_index(&vault, &["inbox", "show", &staged.proposal_id]).1;
    assert!(shown.contains("z/amb/l.md:1 [[dup]] (still leads to z/amb/a/dup.md)"), "{shown}");
    apply(&engine, &staged.proposal_id);
    assert_eq!(read(&vault, "z/amb/l.md"), "[[dup]] and [[c/dup]]\n![[dup#Dup]]\n");
}

/// The findings an audit counts for broken links and anchors.
fn audit_broken(engine: &Engine) -> u64 {
    let checks = Some(vec![AuditCheck::BrokenLink, AuditCheck::BrokenAnchor]);
    engine.audit_vault(&AuditArgs { checks, limit: Some(500), ..Default::default() }).unwrap().total
}

/// Issue 34 item 4: a move rewrites the links in frontmatter properties in
/// place, in their own form (display text, heading and block anchors kept;
/// quotes, list style, comments and every other byte unchanged; a `'` inside
/// single quotes doubled), leaves alone what is no link (a name in `aliases`,
/// an unquoted `[[C]]`), and the vault's broken links stay as many, as the
/// audit and a fresh index agree.
#[test]
fn issue34_a_move_rewrites_links_in_properties_in_place() {
    let (_tmp, vault) = common::property_vault();
    let engine = open(&vault);
    let (before, audited) = (broken(&engine), audit_broken(&engine));
    assert_eq!((before, audited), (2, 2));
    let moves = [
        ("z/C.md", "z/sub/C2.md"),
        ("z/D.md", "z/sub/D new.md"),
        ("z/A.md", "z/sub/Bob's.md"),
        // The bare name stays unique: nothing to rewrite.
        ("z/B.md", "z/sub/B.md"),
    ];
    for (from, to) in moves {
        move_keeping_every_link(&engine, from, to);
        assert_eq!(audit_broken(&engine), audited, "the audit agrees after moving {from}");
        assert_eq!(broken(&open(&vault)), before, "a fresh index agrees after moving {from}");
    }
    assert_eq!(
        read(&vault, "z/hub.md"),
        common::PROPERTY_HUB
            .replace("\"[[A]]\" # the main one", "\"[[Bob's]]\" # the main one")
            .replace("\"[[C|see C]]\"", "\"[[C2|see C]]\"")
            .replace("\"[[D#Heading]]\"", "\"[[D new#Heading]]\"")
            .replace("'[[A#^blk]]'", "'[[Bob''s#^blk]]'")
            .replace("\"[[A#No such heading]]\"", "\"[[Bob's#No such heading]]\"")
    );
}

/// Issue 34 item 6: a link to the moved note written between propose and apply
/// (a new note's wikilink, Markdown link or property link, or a link added to a
/// note that had none) refuses the apply with `stale_base` naming the note,
/// whether or not the index has seen it yet; nothing changes and the proposal
/// stays pending. Taken away again, the move applies.
#[test]
fn issue34_a_link_written_between_propose_and_apply_refuses_the_move() {
    let written = [
        ("z/new.md", "See [[target]].\n"),
        ("z/new.md", "See [t](m/target.md).\n"),
        ("z/new.md", "---\nup: \"[[target]]\"\n---\nSee above.\n"),
        ("z/plain.md", "No link before.\n\nNow [[m/target#Head]].\n"),
    ];
    for (path, text) in written {
        let (_tmp, vault) = link_vault();
        put(&vault, "z/plain.md", "No link before.\n");
        let engine = open(&vault);
        let before = broken(&engine);
        let staged = mv(&engine, "z/m/target.md", "z/n/t2.md").unwrap();
        let id = ApplyArgs { proposal_id: staged.proposal_id.clone() };
        // Written just before the apply: no sync has seen it yet.
        put(&vault, path, text);
        let snapshot = notes_snapshot(&vault);
        for synced in [false, true] {
            if synced {
                engine.sync(false, None).unwrap();
            }
            let err = engine.apply_proposal(&id, Actor::Cli).unwrap_err();
            assert_eq!(err.code, ErrorCode::StaleBase, "{text:?} (synced: {synced}): {err}");
            assert!(err.message.contains(path), "{}", err.message);
            assert_eq!(err.details.as_ref().unwrap()["files"], serde_json::json!([path]), "{text:?}");
            assert_eq!(notes_snapshot(&vault), snapshot, "nothing written");
            assert!(audit_lines(&vault).is_empty());
            let pending = engine.list_proposals(&ListProposalsArgs::default()).unwrap().proposals;
            assert_eq!(pending.len(), 1, "still pending");
        }
        put(&vault, path, "No link now.\n");
        assert_eq!(apply(&engine, &staged.proposal_id).status, ApplyStatus::Applied);
        engine.sync(false, None).unwrap();
        assert_eq!(broken(&engine), before, "{text:?}");
    }
}

/// Issue 34 item 6: the same for a delete (a new link to the deleted note would
/// break without being among the `breaks` the person approved) and for a batch
/// moving a note.
#[test]
fn issue34_a_link_written_between_propose_and_apply_refuses_a_delete_and_a_batch() {
    let (_tmp, vault) = link_vault();
    let engine = open(&vault);
    let deleted = engine
        .propose_delete(&ProposeDeleteArgs { path: "z/m/target.md".into(), reason: "obsolete".into() })
        .unwrap();
    let moved =
        batch(&engine, serde_json::json!([{"kind": "move", "from": "z/m/target.md", "to": "z/n/t2.md"}]))
            .unwrap();
    put(&vault, "z/new.md", "---\nrelated: ['[[target]]']\n---\n");
    let snapshot = notes_snapshot(&vault);
    for id in [&deleted.proposal_id, &moved.proposal_id] {
        let err = engine.apply_proposal(&ApplyArgs { proposal_id: id.clone() }, Actor::Cli).unwrap_err();
        assert_eq!(err.code, ErrorCode::StaleBase, "{err}");
        assert!(err.message.contains("z/new.md ([[target]], line 2)"), "{}", err.message);
        assert_eq!(notes_snapshot(&vault), snapshot, "nothing written");
    }
    assert_eq!(engine.list_proposals(&ListProposalsArgs::default()).unwrap().proposals.len(), 2);
    assert!(audit_lines(&vault).is_empty());
}

/// Issue 34 item 6: what the plan was judged on still holds, so the move
/// applies: a note written meanwhile that links elsewhere, and a note whose
/// link the move leaves alone (a bare name still unique after a folder move)
/// edited elsewhere; the same note adding a link the move would break refuses it.
#[test]
fn issue34_no_new_link_to_the_moved_note_lets_the_move_apply() {
    for (text, applies) in [("[[target]]\n\nMore words.\n", true), ("[[target]]\n\n[[m/target]]\n", false)] {
        let (_tmp, vault) = link_vault();
        put(&vault, "z/keep.md", "[[target]]\n");
        let engine = open(&vault);
        let before = broken(&engine);
        let staged = mv(&engine, "z/m/target.md", "z/q/target.md").unwrap();
        assert!(!staged.diff.contains("z/keep.md"), "its link is left alone: {}", staged.diff);
        put(&vault, "z/unrelated.md", "[[other]]\n");
        put(&vault, "z/keep.md", text);
        let outcome =
            engine.apply_proposal(&ApplyArgs { proposal_id: staged.proposal_id.clone() }, Actor::Cli);
        match outcome {
            Ok(applied) => {
                assert!(applies, "{text:?} applied");
                assert_eq!(applied.status, ApplyStatus::Applied);
                assert_eq!(read(&vault, "z/keep.md"), text, "a link left alone stays as it is");
                assert_eq!(broken(&engine), before);
            }
            Err(err) => {
                assert!(!applies, "{text:?}: {err}");
                assert_eq!(err.code, ErrorCode::StaleBase);
                assert!(err.message.contains("z/keep.md ([[target]], line 1)"), "{}", err.message);
            }
        }
    }
}

/// Issue 40: deleting a canvas is crash-safe as a note's delete is, and so is
/// the revert bringing it back: a crash at any step of either is rolled back
/// (the vault as it was) or completed (the canvas in the trash, or back byte
/// for byte).
#[test]
fn issue_40_a_crash_at_any_step_of_a_canvas_delete_or_its_revert_is_all_or_nothing() {
    let steps = [
        Step::Claimed,
        Step::Swapping,
        Step::File(0),
        Step::Written,
        Step::Archiving,
        Step::Archived,
        Step::Indexed,
        Step::Audited,
    ];
    for step in steps {
        let (_tmp, vault) = folder_vault();
        let engine = open(&vault);
        let original = notes_snapshot(&vault);
        let staged = engine
            .propose_delete(&ProposeDeleteArgs { path: "z/wall.canvas".into(), reason: "obsolete".into() })
            .unwrap();
        crash_apply_at(&sandbox(&vault), &staged.proposal_id, step);
        let recovery = write::recover(&sandbox(&vault), Actor::Cli, &mut |_| Ok(())).unwrap();
        assert!(recovery.failed.is_empty(), "{step:?}: {recovery:?}");
        if committed(step) {
            assert!(!vault.join("z/wall.canvas").exists(), "{step:?}: trashed");
        } else {
            assert_eq!(notes_snapshot(&vault), original, "{step:?}: rolled back");
            apply(&engine, &staged.proposal_id);
        }
        let trashed: Vec<String> = common::snapshot(&vault)
            .into_iter()
            .filter(|(path, bytes)| path.ends_with("/z/wall.canvas") && bytes == WALL.as_bytes())
            .map(|(path, _)| path)
            .collect();
        assert!(trashed.len() == 1 && trashed[0].starts_with("inbox/trash/"), "{step:?}: {trashed:?}");

        let back = revert(&engine, &staged.proposal_id).unwrap();
        crash_apply_at(&sandbox(&vault), &back.proposal_id, step);
        let recovery = write::recover(&sandbox(&vault), Actor::Cli, &mut |_| Ok(())).unwrap();
        assert!(recovery.failed.is_empty(), "{step:?}: {recovery:?}");
        if !committed(step) {
            assert!(!vault.join("z/wall.canvas").exists(), "{step:?}: the revert rolled back");
            apply(&engine, &back.proposal_id);
        }
        assert_eq!(notes_snapshot(&vault), original, "{step:?}: reverted byte for byte");
        assert_eq!(audit_lines(&vault).len(), 2, "{step:?}");
    }
}
