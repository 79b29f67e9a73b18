//! Structural proposals (issue 14): moves of notes and folders with every link
//! rewritten in its own form, deletes to the trash, and the multi-file apply
//! that makes them all or nothing (checked before writing, journaled, a crash
//! at any step rolled back or completed, one audit line, one index update).

#![allow(
    clippy::disallowed_methods,
    clippy::disallowed_types,
    reason = "the tests build and inspect vaults on disk"
)]

mod common;

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

fn put(vault: &Path, rel: &str, text: &str) {
    let path = vault.join(rel);
    fs::create_dir_all(path.parent().unwrap()).unwrap();
    fs::write(path, text).unwrap();
}

fn read(vault: &Path, rel: &str) -> String {
    fs::read_to_string(vault.join(rel)).unwrap()
}

fn broken(engine: &Engine) -> usize {
    engine.catalog().graph().broken_count
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

fn audit_lines(vault: &Path) -> Vec<Value> {
    fs::read_to_string(vault.join("inbox/_applied.jsonl"))
        .unwrap_or_default()
        .lines()
        .map(|line| serde_json::from_str(line).unwrap())
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
    assert_eq!(staged.kind, "move");
    assert_eq!(staged.moves, vec![MovedNote { from: "z/m/target.md".into(), to: "z/n/目标 新.md".into() }]);
    assert!(!staged.vault_changed);
    assert!(staged.diff.starts_with("# move z/m/target.md → z/n/目标 新.md, rewrite "), "{}", staged.diff);
    assert!(staged.diff.contains("rename from z/m/target.md\nrename to z/n/目标 新.md\n"));
    // Nothing changed yet.
    assert!(vault.join("z/m/target.md").exists());
    assert_eq!(read(&vault, "z/m/linker.md"), LINKER);

    let applied = apply(&engine, &staged.proposal_id);
    assert_eq!(applied.status, "applied");
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
    assert!(engine.catalog().get("z/n/目标 新.md").is_some());
    assert!(engine.catalog().get("z/m/target.md").is_none());
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

/// The invariant on the fixture vault: every note moved in turn (to a new
/// folder and name), the count of broken links never changes.
#[test]
fn moving_any_fixture_note_keeps_the_broken_link_count() {
    let (_tmp, vault) = common::temp_vault();
    let engine = open(&vault);
    let before = broken(&engine);
    let notes: Vec<String> = engine
        .catalog()
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
    assert_eq!(staged.kind, "delete");
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

/// A crash after each step of a multi-file apply (a failpoint that stops the
/// apply on the spot): the next start leaves every file as it was (before the
/// commit point) or as proposed (after it), never some moved and others not;
/// exactly one audit line once applied.
#[test]
fn a_crash_at_any_step_of_a_move_is_rolled_back_or_completed() {
    let steps = [
        Step::Claimed,
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
        let staged = mv(&engine, "z/m/target.md", "z/n/t2.md").unwrap();
        let sandbox = sandbox(&vault);
        let err = write::apply_with_failpoint(
            &sandbox,
            &staged.proposal_id,
            Actor::Cli,
            &mut |_| Ok(()),
            &mut |at| {
                if at == step { Err(Error::internal("crash")) } else { Ok(()) }
            },
        )
        .unwrap_err();
        assert_eq!(err.message, "crash", "{step:?}");
        let recovery = write::recover(&sandbox, Actor::Cli, &mut |_| Ok(())).unwrap();
        assert!(recovery.failed.is_empty(), "{step:?}: {recovery:?}");
        assert!(!vault.join("inbox/_applying.json").exists());
        let committed = matches!(step, Step::Archiving | Step::Archived | Step::Indexed | Step::Audited);
        if committed {
            assert!(!vault.join("z/m/target.md").exists(), "{step:?}");
            assert!(read(&vault, "z/m/linker.md").contains("[[t2]]"), "{step:?}");
            assert!(read(&vault, "z/other.md").contains("[[n/t2]]"), "{step:?}");
            assert_eq!(audit_lines(&vault).len(), 1, "{step:?}");
        } else {
            assert_eq!(notes_snapshot(&vault), original, "{step:?}: rolled back");
            assert!(audit_lines(&vault).is_empty(), "{step:?}");
            // Still pending: applying it now works.
            apply(&engine, &staged.proposal_id);
            assert!(read(&vault, "z/m/linker.md").contains("[[t2]]"), "{step:?}");
            assert_eq!(audit_lines(&vault).len(), 1, "{step:?}");
        }
    }
}

const KILL_CHILD_ENV: &str = "KB_STRUCTURE_KILL_CHILD";

/// A real SIGKILL in the middle of a multi-file apply (after the first file
/// moved, before the links are rewritten), then a fresh start: all or nothing.
#[test]
fn a_move_killed_mid_apply_is_rolled_back_on_the_next_start() {
    if let Ok(job) = std::env::var(KILL_CHILD_ENV) {
        let parts: Vec<&str> = job.split('|').collect();
        let (root, id, marker) = (Path::new(parts[0]), parts[1], Path::new(parts[2]));
        let sandbox = sandbox(root);
        let _ = write::apply_with_failpoint(&sandbox, id, Actor::Cli, &mut |_| Ok(()), &mut |at| {
            if at == Step::File(1) {
                fs::write(marker, "here").unwrap();
                loop {
                    std::thread::sleep(std::time::Duration::from_secs(1));
                }
            }
            Ok(())
        });
        panic!("the apply went past its second file without stopping");
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
    let marker = tmp.path().join("marker");
    let job = format!("{}|{}|{}", vault.display(), staged.proposal_id, marker.display());
    let mut child = std::process::Command::new(std::env::current_exe().unwrap())
        .args(["--exact", "a_move_killed_mid_apply_is_rolled_back_on_the_next_start", "--test-threads=1"])
        .env(KILL_CHILD_ENV, job)
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    while !marker.exists() {
        assert!(child.try_wait().unwrap().is_none(), "the child ended before the step");
        std::thread::sleep(std::time::Duration::from_millis(5));
    }
    child.kill().unwrap();
    child.wait().unwrap();
    // Half done on disk: the note moved, not every link rewritten yet.
    assert!(vault.join("z/n/t2.md").exists());
    // The next start rolls it back.
    let engine = open(&vault);
    engine.recover_proposals(Actor::Mcp).unwrap();
    let now = notes_snapshot(&vault);
    let differ: Vec<&String> =
        now.iter().filter(|file| !original.contains(file)).map(|(path, _)| path).collect();
    assert!(differ.is_empty() && now.len() == original.len(), "{differ:?}");
    assert!(!vault.join("inbox/_applying.json").exists());
    apply(&engine, &staged.proposal_id);
    assert!(read(&vault, "z/m/linker.md").contains("[[t2]]"));
    assert_eq!(audit_lines(&vault).len(), 1);
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

    // Once applied, a proposal keeps a line saying what it was.
    apply(&engine, &deleted.proposal_id);
    let applied = engine
        .list_proposals(&ListProposalsArgs { status: Some(ProposalStatusFilter::Applied), limit: None })
        .unwrap();
    assert_eq!(applied.proposals[0].summary, "delete z/m/linker.md");
}
