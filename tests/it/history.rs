//! The vault's history (issue 38) as a person and an agent meet it: every
//! applied proposal and every edit on disk of a scripted session is listed in
//! order, by whom, each version reading back byte for byte; a moved or deleted
//! note's history stays under its old path; a vault that is a git repository
//! keeps its `HEAD`, branches, staging area and status, its history on a ref
//! of its own; a restore brings back a version, a revert keeps later edits
//! on other lines; and a real server records the person's edit by itself.

use std::path::Path;

use kb_mcp::engine::types::*;
use kb_mcp::engine::{Engine, EngineOptions};
use kb_mcp::sandbox::{HISTORY_REF, StoreKind};
use kb_mcp::vault::content_hash;

use crate::common;

fn open(vault: &Path) -> Engine {
    let engine = Engine::open(&EngineOptions { vault: vault.to_owned(), index_dir: None }).unwrap();
    engine.sync(false, None).unwrap();
    engine
}

fn history(engine: &Engine, path: &str, limit: Option<u32>, cursor: Option<String>) -> HistoryResults {
    engine.list_history(&HistoryArgs { path: Some(path.into()), reference: None, limit, cursor }).unwrap()
}

/// A person's edit on disk, then the engine's sync and history pass (what
/// the server's watcher and history thread do).
fn edit_on_disk(engine: &Engine, vault: &Path, path: &str, text: &str) {
    common::put(vault, path, text);
    engine.sync(false, None).unwrap();
    assert!(engine.history_due());
    let report = engine.record_history_pending().unwrap();
    assert!(report.commit.is_some(), "{report:?}");
}

fn apply(engine: &Engine, id: &str) {
    engine.apply_proposal(&ApplyArgs { proposal_id: id.into() }, Actor::Cli).unwrap();
}

#[test]
fn a_scripted_session_lists_every_apply_and_edit_in_order_and_reads_each_back() {
    let (_tmp, vault) = common::temp_vault();
    let engine = open(&vault);
    let note = "z/Restore drills.md";
    let moved = "z/tech/Restore drills.md";
    // The first pass records the vault as it is.
    let first = engine.record_history_pending().unwrap();
    assert!(first.files > 10 && first.commit.is_some(), "{first:?}");
    assert!(!engine.history_due());
    assert_eq!(engine.record_history_pending().unwrap().commit, None, "nothing changed, nothing recorded");
    let mut texts = vec![common::read(&vault, note)];

    edit_on_disk(&engine, &vault, note, &format!("{}\nA line the person added.\n", texts[0]));
    texts.push(common::read(&vault, note));

    let read = engine.read_note(&ReadNoteArgs { path: Some(note.into()), ..Default::default() }).unwrap();
    let patch = engine
        .propose_note_patch(&ProposePatchArgs {
            path: note.into(),
            base_hash: read.hash,
            reason: "Add the quarterly drill".into(),
            edits: serde_json::from_value(
                serde_json::json!([{"op": "append", "content": "\nDrill every quarter.\n"}]),
            )
            .unwrap(),
        })
        .unwrap();
    apply(&engine, &patch.proposal_id);
    texts.push(common::read(&vault, note));

    edit_on_disk(&engine, &vault, note, &texts[2].replace("quarter", "month"));
    texts.push(common::read(&vault, note));

    let moving = engine
        .propose_move(&ProposeMoveArgs {
            from: note.into(),
            to: moved.into(),
            reason: "File it under tech".into(),
            keep_alias: None,
        })
        .unwrap();
    apply(&engine, &moving.proposal_id);
    assert!(!vault.join(note).exists());
    // The apply recorded itself: a pass finds nothing of it left to record.
    engine.sync(false, None).unwrap();
    assert_eq!(engine.record_history_pending().unwrap().commit, None);

    let listed = history(&engine, moved, None, None);
    let kinds: Vec<(VersionBy, Option<&str>, &str)> =
        listed.versions.iter().map(|v| (v.by, v.kind.as_deref(), v.path.as_str())).collect();
    assert_eq!(
        kinds,
        [
            (VersionBy::Proposal, Some("move"), moved),
            (VersionBy::OnDisk, None, note),
            (VersionBy::Proposal, Some("patch"), note),
            (VersionBy::OnDisk, None, note),
            (VersionBy::OnDisk, None, note),
        ],
        "{listed:#?}"
    );
    let patched = &listed.versions[2];
    assert_eq!(patched.proposal_id.as_deref(), Some(patch.proposal_id.as_str()));
    assert_eq!(patched.approved_by.as_deref(), Some("cli"));
    assert_eq!(patched.reason.as_deref(), Some("Add the quarterly drill"));
    assert_eq!((patched.added, patched.removed), (2, 0));
    let reworded = &listed.versions[1];
    assert!(reworded.removed >= 1 && reworded.added == reworded.removed, "{reworded:?}");
    assert_eq!(listed.versions[0].reason.as_deref(), Some("File it under tech"));
    assert_eq!((listed.versions[0].added, listed.versions[0].removed), (0, 0), "a move changes no line");
    // Each version reads back byte for byte (newest first; the move kept the text).
    let expected = [&texts[3], &texts[3], &texts[2], &texts[1], &texts[0]];
    for (version, text) in listed.versions.iter().zip(expected) {
        assert_eq!(
            version.hash.as_deref(),
            Some(content_hash(text.as_bytes()).as_str()),
            "{}",
            version.commit
        );
        let store = engine.history_store().unwrap();
        let past = store.read_at(&version.path, &version.commit).unwrap();
        assert_eq!(past.bytes.as_deref(), Some(text.as_bytes()));
    }
    assert!(listed.versions.windows(2).all(|w| w[0].at >= w[1].at));

    // read_note reads a past version as it reads a note now, by commit or time.
    let past = engine
        .read_note(&ReadNoteArgs {
            path: Some(moved.into()),
            at: Some(listed.versions[4].commit[..8].to_owned()),
            ..Default::default()
        })
        .unwrap();
    assert_eq!((past.path.as_str(), past.content.as_str()), (note, texts[0].as_str()), "the old path, then");
    assert_eq!(past.hash, content_hash(texts[0].as_bytes()));
    assert!(past.hint.as_deref().is_some_and(|h| h.contains("read without `at`")), "{past:?}");
    // By time (git keeps seconds: this session's versions share one or two).
    let then = engine
        .read_note(&ReadNoteArgs {
            path: Some(moved.into()),
            at: Some(listed.versions[0].at.clone()),
            ..Default::default()
        })
        .unwrap();
    assert_eq!(then.content, texts[3], "the version in force at that time");
    let before = engine
        .read_note(&ReadNoteArgs {
            path: Some(moved.into()),
            at: Some("2000-01-01T00:00:00Z".into()),
            ..Default::default()
        })
        .unwrap_err();
    assert_eq!(before.code, kb_mcp::error::ErrorCode::NotFound, "{before:?}");
    let gone = engine
        .read_note(&ReadNoteArgs {
            path: Some(note.into()),
            at: Some(listed.versions[0].commit.clone()),
            ..Default::default()
        })
        .unwrap_err();
    assert_eq!(gone.code, kb_mcp::error::ErrorCode::NotFound, "the move took it away from there: {gone:?}");
    let nonsense = engine
        .read_note(&ReadNoteArgs {
            path: Some(moved.into()),
            at: Some("last week".into()),
            ..Default::default()
        })
        .unwrap_err();
    assert_eq!(nonsense.code, kb_mcp::error::ErrorCode::InvalidArgument, "{nonsense:?}");

    // The old path keeps its history: the move removed it.
    let old = history(&engine, note, None, None);
    assert_eq!(old.versions.len(), 5);
    assert_eq!((old.versions[0].by, old.versions[0].hash.as_deref()), (VersionBy::Proposal, None));

    // Pages of two, by cursor, give the same versions.
    let mut paged = Vec::new();
    let mut cursor = None;
    loop {
        let page = history(&engine, moved, Some(2), cursor);
        paged.extend(page.versions);
        match page.next_cursor {
            Some(next) => cursor = Some(next),
            None => break,
        }
    }
    assert_eq!(paged, listed.versions);

    // Bad input: a cursor of another tool, a denied path, no such note at all.
    let bad = engine
        .list_history(&HistoryArgs {
            path: Some(moved.into()),
            cursor: Some("l1zz".into()),
            ..Default::default()
        })
        .unwrap_err();
    assert!(bad.message.contains("cursor"), "{}", bad.message);
    let denied = engine
        .list_history(&HistoryArgs { path: Some("z/private/secret.md".into()), ..Default::default() })
        .unwrap_err();
    assert_ne!(denied.code, kb_mcp::error::ErrorCode::Internal, "{denied:?}");
    let never = engine
        .list_history(&HistoryArgs { path: Some("z/never there.md".into()), ..Default::default() })
        .unwrap_err();
    assert_eq!(never.code, kb_mcp::error::ErrorCode::NotFound, "{never:?}");
    // Nothing of the history is in the vault's notes, and agents cannot read it.
    assert!(vault.join(".kb-history").is_dir());
    assert_eq!(engine.history_store().unwrap().kind(), StoreKind::Own);
    let hidden =
        engine.read_note(&ReadNoteArgs { path: Some(".kb-history/HEAD".into()), ..Default::default() });
    assert!(hidden.is_err());
}

/// A patch staged with one `find_replace` edit, then applied.
fn patch_and_apply(engine: &Engine, path: &str, find: &str, replace: &str) -> String {
    let id = common::propose_patch(engine, path, find, replace);
    apply(engine, &id);
    id
}

fn restore(engine: &Engine, path: &str, at: &str) -> kb_mcp::error::Result<RestoreResult> {
    engine.propose_restore(&RestoreArgs { path: path.into(), at: at.into(), reason: "Back as it was".into() })
}

#[test]
fn a_restore_patches_a_note_back_or_makes_a_deleted_one_again() {
    let (_tmp, vault) = common::temp_vault();
    let engine = open(&vault);
    let note = "z/Restore drills.md";
    engine.record_history_pending().unwrap();
    let original = common::read(&vault, note);
    let first = history(&engine, note, None, None).versions[0].commit.clone();
    edit_on_disk(&engine, &vault, note, &original.replacen("restore", "RESTORE", 1));
    patch_and_apply(&engine, note, "RESTORE", "recover");

    // Back to the first version: a patch against the note as it is now.
    let staged = restore(&engine, note, &first[..10]).unwrap();
    assert_eq!(
        (staged.kind, staged.target.as_str(), staged.commit.as_str()),
        (ProposalKind::Patch, note, first.as_str())
    );
    assert_eq!(
        staged.base_hash.as_deref(),
        Some(content_hash(common::read(&vault, note).as_bytes()).as_str())
    );
    assert!(staged.diff.contains("+") && staged.removed > 0, "{staged:#?}");
    assert_ne!(common::read(&vault, note), original, "staging changes nothing");
    apply(&engine, &staged.proposal_id);
    assert_eq!(common::read(&vault, note), original, "byte for byte");
    let newest = &history(&engine, note, Some(1), None).versions[0];
    assert_eq!((newest.by, newest.kind.as_deref()), (VersionBy::Proposal, Some("patch")));
    assert!(
        newest.reason.as_deref().is_some_and(|r| r.starts_with("Back as it was (restores the version")),
        "{newest:?}"
    );
    // The same version again changes nothing: refused.
    let same = restore(&engine, note, &first).unwrap_err();
    assert_eq!(same.code, kb_mcp::error::ErrorCode::InvalidArgument, "{same:?}");

    // A deleted note comes back where it was, as a new note of its old bytes.
    let deleting =
        engine.propose_delete(&ProposeDeleteArgs { path: note.into(), reason: "Not needed".into() }).unwrap();
    apply(&engine, &deleting.proposal_id);
    assert!(!vault.join(note).exists());
    let back = restore(&engine, note, &first).unwrap();
    assert_eq!((back.kind, back.base_hash.as_deref()), (ProposalKind::New, None));
    apply(&engine, &back.proposal_id);
    assert_eq!(common::read(&vault, note), original);

    // A note moved away is restored under its new name, not copied back beside itself.
    let moved = "z/tech/Restore drills.md";
    let moving = engine
        .propose_move(&ProposeMoveArgs {
            from: note.into(),
            to: moved.into(),
            reason: "File it".into(),
            keep_alias: None,
        })
        .unwrap();
    apply(&engine, &moving.proposal_id);
    let copy = restore(&engine, note, &first).unwrap_err();
    assert_eq!(copy.code, kb_mcp::error::ErrorCode::InvalidArgument, "{copy:?}");
    assert!(copy.hint.as_deref().is_some_and(|h| h.contains(moved)), "{copy:?}");
    let under_new_name = restore(&engine, moved, &first);
    assert_eq!(
        under_new_name.unwrap_err().code,
        kb_mcp::error::ErrorCode::InvalidArgument,
        "it reads so already"
    );

    // Bad input: no such version, nonsense, no reason, a denied path; nothing staged.
    let pending = engine.list_proposals(&ListProposalsArgs::default()).unwrap().proposals.len();
    for (path, at) in [
        (moved, "deadbeefdeadbeef"),
        (moved, "yesterday"),
        ("z/private/secret.md", first.as_str()),
        ("../outside.md", first.as_str()),
    ] {
        let error = restore(&engine, path, at).unwrap_err();
        assert_ne!(error.code, kb_mcp::error::ErrorCode::Internal, "{path} {at}: {error:?}");
    }
    let unreasoned =
        engine.propose_restore(&RestoreArgs { path: moved.into(), at: first.clone(), reason: " ".into() });
    assert_eq!(unreasoned.unwrap_err().code, kb_mcp::error::ErrorCode::InvalidArgument);
    assert_eq!(engine.list_proposals(&ListProposalsArgs::default()).unwrap().proposals.len(), pending);
}

#[test]
fn a_revert_keeps_later_edits_on_other_lines_and_names_the_lines_that_collide() {
    let (_tmp, vault) = common::temp_vault();
    let words = ["alpha", "bravo", "charlie", "delta", "echo", "foxtrot", "golf", "hotel", "india", "juliet"];
    let note = "z/Merge drill.md";
    let original = format!("# Merge drill\n\n{}\n", words.map(|w| format!("{w} line")).join("\n"));
    common::put(&vault, note, &original);
    let engine = open(&vault);
    engine.record_history_pending().unwrap();

    // The agent's patch changes `charlie`; the person then edits `india`.
    let patch = patch_and_apply(&engine, note, "charlie line", "charlie, as the agent wrote");
    let person = common::read(&vault, note).replace("india line", "india, as the person wrote");
    edit_on_disk(&engine, &vault, note, &person);
    let revert =
        engine.revert_proposal(&RevertArgs { proposal_id: patch.clone(), reason: "Undo it".into() }).unwrap();
    assert_eq!(revert.merged, [note]);
    assert_eq!(common::read(&vault, note), person, "staging changes nothing");
    apply(&engine, &revert.proposal_id);
    assert_eq!(common::read(&vault, note), original.replace("india line", "india, as the person wrote"));

    // Edits to the very line the apply wrote collide: refused, the line named.
    let patch = patch_and_apply(&engine, note, "echo line", "echo, as the agent wrote");
    edit_on_disk(
        &engine,
        &vault,
        note,
        &common::read(&vault, note).replace("echo, as the agent wrote", "echo, as the person rewrote it"),
    );
    let before = common::read(&vault, note);
    let refused =
        engine.revert_proposal(&RevertArgs { proposal_id: patch, reason: "Undo it".into() }).unwrap_err();
    assert_eq!(refused.code, kb_mcp::error::ErrorCode::StaleBase, "{refused:?}");
    let details = refused.details.clone().unwrap();
    assert_eq!(details["conflicts"][0]["path"], note, "{details}");
    assert_eq!(details["conflicts"][0]["lines"], serde_json::json!([[7, 7]]), "{details}");
    assert!(refused.message.contains("lines 7"), "{}", refused.message);
    assert_eq!(common::read(&vault, note), before);

    // A move's link rewrites merge too: the note linking to the moved one was
    // edited elsewhere since; the revert moves back, restores the link, keeps the edit.
    let linking = "z/3-2-1 备份原则.md";
    let linking_before = common::read(&vault, linking);
    let moving = engine
        .propose_move(&ProposeMoveArgs {
            from: "z/Restore drills.md".into(),
            to: "z/tech/Recovery drills.md".into(),
            reason: "Rename".into(),
            keep_alias: Some(false),
        })
        .unwrap();
    apply(&engine, &moving.proposal_id);
    assert!(common::read(&vault, linking).contains("[[Recovery drills]]"));
    let edited =
        common::read(&vault, linking).replace("# 3-2-1 备份原则\n", "# 3-2-1 备份原则\n\n（个人补充）\n");
    edit_on_disk(&engine, &vault, linking, &edited);
    let revert = engine
        .revert_proposal(&RevertArgs { proposal_id: moving.proposal_id, reason: "Undo".into() })
        .unwrap();
    assert_eq!(revert.merged, [linking]);
    apply(&engine, &revert.proposal_id);
    assert!(vault.join("z/Restore drills.md").is_file());
    assert_eq!(
        common::read(&vault, linking),
        linking_before.replace("# 3-2-1 备份原则\n", "# 3-2-1 备份原则\n\n（个人补充）\n")
    );
}

/// An apply a crash cut short after its write is completed by recovery, and
/// recorded as the proposal's, not as an edit on disk.
#[test]
fn an_apply_completed_by_recovery_is_recorded_as_the_proposals() {
    let (_tmp, vault) = common::temp_vault();
    let engine = open(&vault);
    let path = "z/永久笔记.md";
    let read = engine.read_note(&ReadNoteArgs { path: Some(path.into()), ..Default::default() }).unwrap();
    let patch = engine
        .propose_note_patch(&ProposePatchArgs {
            path: path.into(),
            base_hash: read.hash,
            reason: "cut short".into(),
            edits: serde_json::from_value(serde_json::json!([{"op": "append", "content": "Cut short."}]))
                .unwrap(),
        })
        .unwrap();
    let crashed = engine.apply_proposal_with_failpoint(
        &ApplyArgs { proposal_id: patch.proposal_id.clone() },
        Actor::Cli,
        &mut |at| match at {
            kb_mcp::write::Step::Written => Err(kb_mcp::error::Error::internal("a crash")),
            _ => Ok(()),
        },
    );
    assert!(crashed.is_err());
    assert_eq!(engine.recover_proposals(Actor::Cli).unwrap(), vec![patch.proposal_id.clone()]);
    engine.sync(false, None).unwrap();
    engine.record_history_pending().unwrap();
    let listed = history(&engine, path, None, None);
    assert_eq!(listed.versions[0].by, VersionBy::Proposal, "{listed:?}");
    assert_eq!(listed.versions[0].proposal_id.as_deref(), Some(patch.proposal_id.as_str()));
    assert!(listed.versions.iter().all(|v| v.by != VersionBy::OnDisk), "{listed:?}");
}

#[test]
fn a_vault_without_history_makes_no_repository_and_says_so() {
    let (_tmp, vault) = common::temp_vault();
    common::put(
        &vault,
        "kb.toml",
        &format!("{}\n[history]\nenabled = false\n", common::read(&vault, "kb.toml")),
    );
    let engine = open(&vault);
    assert_eq!(engine.record_history_pending().unwrap().commit, None);
    let patched = patch_and_apply(&engine, "z/设计.md", "# 设计", "# 設計");
    let listed = engine
        .list_history(&HistoryArgs { path: Some("z/设计.md".into()), ..Default::default() })
        .unwrap_err();
    assert_eq!(listed.code, kb_mcp::error::ErrorCode::NotFound, "{listed:?}");
    assert!(listed.message.contains("keeps no history"), "{listed:?}");
    let restored = restore(&engine, "z/设计.md", "2026-01-01T00:00:00Z").unwrap_err();
    assert!(restored.message.contains("keeps no history"), "{restored:?}");
    // A revert works as before without one.
    engine.revert_proposal(&RevertArgs { proposal_id: patched, reason: "undo".into() }).unwrap();
    assert!(!vault.join(".kb-history").exists(), "no repository was made");
}

#[test]
fn a_vault_that_is_a_git_repository_keeps_head_branches_staging_area_and_status() {
    let (_tmp, vault) = common::temp_vault();
    let repo = git2::Repository::init(&vault).unwrap();
    let mut index = repo.index().unwrap();
    index.add_all(["*"], git2::IndexAddOption::DEFAULT, None).unwrap();
    index.write().unwrap();
    let tree = repo.find_tree(index.write_tree().unwrap()).unwrap();
    let me = git2::Signature::now("Person", "person@example.com").unwrap();
    repo.commit(Some("HEAD"), &me, &me, "my notes", &tree, &[]).unwrap();
    // The person has an uncommitted edit, and a staged one.
    common::put(&vault, "z/设计.md", "# 设计\n\nAn edit not committed yet.\n");
    common::put(&vault, "z/staged.md", "# Staged\n");
    index.add_path(Path::new("z/staged.md")).unwrap();
    index.write().unwrap();
    let state = |repo: &git2::Repository| {
        let head = repo.head().unwrap().target();
        let branches: Vec<String> =
            repo.branches(None).unwrap().map(|b| b.unwrap().0.name().unwrap().unwrap().to_owned()).collect();
        let mut status: Vec<(String, u32)> = repo
            .statuses(Some(git2::StatusOptions::new().include_untracked(true).recurse_untracked_dirs(true)))
            .unwrap()
            .iter()
            .map(|s| (s.path().unwrap().to_owned(), s.status().bits()))
            .collect();
        status.sort();
        let staging = std::fs::read(vault.join(".git/index")).unwrap();
        let config = std::fs::read(vault.join(".git/config")).unwrap();
        (head, branches, status, staging, config)
    };
    // `.kb/` (the index) is the only thing kb-mcp adds to the work tree.
    std::fs::write(vault.join(".gitignore"), ".kb/\n").unwrap();
    let before = state(&repo);

    let engine = open(&vault);
    assert_eq!(engine.history_store().unwrap().kind(), StoreKind::Vault);
    engine.record_history_pending().unwrap();
    let read =
        engine.read_note(&ReadNoteArgs { path: Some("z/设计.md".into()), ..Default::default() }).unwrap();
    let patch = engine
        .propose_note_patch(&ProposePatchArgs {
            path: "z/设计.md".into(),
            base_hash: read.hash,
            reason: "test".into(),
            edits: serde_json::from_value(serde_json::json!([{"op": "append", "content": "More.\n"}]))
                .unwrap(),
        })
        .unwrap();
    apply(&engine, &patch.proposal_id);
    edit_on_disk(&engine, &vault, "z/设计.md", "# 设计\n\nThe person's next edit.\n");

    let after = state(&repo);
    assert_eq!((&after.0, &after.1, &after.3, &after.4), (&before.0, &before.1, &before.3, &before.4));
    // Only the notes the session changed differ, as the person would expect.
    let changed: Vec<&String> =
        after.2.iter().filter(|s| !before.2.contains(s)).map(|(path, _)| path).collect();
    assert!(changed.iter().all(|p| p.starts_with("z/设计.md") || p.starts_with("inbox/")), "{changed:?}");
    assert!(!vault.join(".kb-history").exists());
    // The history is on its own ref, three commits deep.
    let head = repo.refname_to_id(HISTORY_REF).unwrap();
    let mut walk = repo.revwalk().unwrap();
    walk.push(head).unwrap();
    assert_eq!(walk.count(), 3);
    let listed = history(&engine, "z/设计.md", None, None);
    assert_eq!(
        listed.versions.iter().map(|v| v.by).collect::<Vec<_>>(),
        [VersionBy::OnDisk, VersionBy::Proposal, VersionBy::OnDisk]
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn a_server_records_the_persons_edit_on_disk_by_itself() {
    let (_tmp, vault) = common::temp_vault();
    common::without_semantic(&vault);
    let client = crate::mcp::connect(&vault, "read").await;
    let path = "z/永久笔记.md";
    let listed = || async {
        let result =
            crate::mcp::call(&client, "list_history", serde_json::json!({ "path": path })).await.unwrap();
        serde_json::from_value::<HistoryResults>(result.structured_content.unwrap()).unwrap()
    };
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
    while listed().await.versions.is_empty() {
        assert!(std::time::Instant::now() < deadline, "the first history never came");
        tokio::time::sleep(std::time::Duration::from_millis(200)).await;
    }
    common::put(&vault, path, "# 永久笔记\n\nRewritten in Obsidian.\n");
    loop {
        let listed = listed().await;
        if listed.versions.len() == 2 {
            assert_eq!(listed.versions[0].by, VersionBy::OnDisk);
            assert_eq!(
                listed.versions[0].hash.as_deref(),
                Some(content_hash("# 永久笔记\n\nRewritten in Obsidian.\n".as_bytes()).as_str())
            );
            break;
        }
        assert!(std::time::Instant::now() < deadline, "the edit was never recorded: {listed:?}");
        tokio::time::sleep(std::time::Duration::from_millis(200)).await;
    }
}

#[test]
fn kb_index_log_and_show_record_what_changed_then_print_it() {
    let (_tmp, vault) = common::temp_vault();
    let kb_index = |args: &[&str]| {
        std::process::Command::new(env!("CARGO_BIN_EXE_kb-index"))
            .args(args)
            .arg("--vault")
            .arg(&vault)
            .args(["--color", "never"])
            .output()
            .unwrap()
    };
    let note = "z/设计.md";
    let original = common::read(&vault, note);
    let first = kb_index(&["log", note]);
    assert!(first.status.success(), "{first:?}");
    let text = String::from_utf8_lossy(&first.stdout);
    assert!(text.contains("on disk") && text.ends_with("z/设计.md: 1 version\n"), "{text}");

    common::put(&vault, note, &format!("{original}\nOne more line.\n"));
    let json = kb_index(&["log", note, "--json"]);
    let listed: HistoryResults = serde_json::from_slice(&json.stdout).unwrap();
    assert_eq!(listed.versions.len(), 2, "the edit a moment ago is listed");
    assert_eq!((listed.versions[0].added, listed.versions[0].removed), (2, 0));
    let older = &listed.versions[1].commit;
    let shown = kb_index(&["show", note, "--at", &older[..9]]);
    assert!(shown.status.success(), "{shown:?}");
    assert_eq!(shown.stdout, original.as_bytes(), "byte for byte");
    let by_time = kb_index(&["show", note, "--at", &listed.versions[0].at]);
    assert_eq!(String::from_utf8_lossy(&by_time.stdout), common::read(&vault, note));

    // kb-index restore stages the old version; --yes applies it.
    let staged = kb_index(&["restore", note, "--at", &older[..9]]);
    assert!(staged.status.success(), "{staged:?}");
    let said = String::from_utf8_lossy(&staged.stdout);
    assert!(said.contains("patch of z/设计.md") && said.contains("nothing changed yet"), "{said}");
    assert_ne!(common::read(&vault, note), original);
    let applied = kb_index(&["restore", note, "--at", &older[..9], "--yes", "--reason", "back"]);
    assert!(applied.status.success(), "{applied:?}");
    assert_eq!(common::read(&vault, note), original, "byte for byte");

    // Bad input: exit 2 with a reason; a path that never was a note.
    let bad = kb_index(&["show", note, "--at", "yesterday"]);
    assert_eq!(bad.status.code(), Some(2), "{bad:?}");
    assert!(String::from_utf8_lossy(&bad.stderr).contains("neither a commit nor a time"), "{bad:?}");
    let never = kb_index(&["log", "z/nothing here.md"]);
    assert_ne!(never.status.code(), Some(0));
}
