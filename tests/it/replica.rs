//! Replicas (issue 38): two clones of one vault and a bare remote on one
//! machine, each clone served by its own engine or its own real `kb-mcp`.
//! An apply on one clone reaches the other; two clones patching one note at
//! once land exactly one apply and lose no byte; a real server killed
//! between its commit, its push and its write agrees with the remote after a
//! restart and applies nothing twice; a person's uncommitted edit survives the other
//! clone's change (merged when it lies elsewhere, held when it collides); a
//! remote out of reach lets applies go on and takes them when it is back; a
//! proposal staged on one clone is applied on the other.

use std::path::{Path, PathBuf};

use git2::{Repository, RepositoryInitOptions, Signature, StatusOptions, build::RepoBuilder};
use kb_mcp::engine::types::*;
use kb_mcp::engine::{Engine, EngineOptions};
use kb_mcp::error::ErrorCode;

use crate::common;

/// A bare remote and two clones of the fixture vault, each with `[replica]`.
struct Replicas {
    _tmp: tempfile::TempDir,
    remote: PathBuf,
    a: PathBuf,
    b: PathBuf,
}

const NOTE: &str = "z/Restore drills.md";

fn replicas() -> Replicas {
    let tmp = tempfile::tempdir().unwrap();
    let seed = tmp.path().join("seed");
    common::copy_fixture(&common::fixture_vault(), &seed);
    common::without_semantic(&seed);
    let config = seed.join("kb.toml");
    let mut text = std::fs::read_to_string(&config).unwrap();
    text.push_str("\n[replica]\nremote = \"origin\"\ninterval = 1\n");
    std::fs::write(&config, text).unwrap();
    std::fs::write(seed.join(".gitignore"), ".kb/\n").unwrap();
    let repo = Repository::init_opts(&seed, RepositoryInitOptions::new().initial_head("main")).unwrap();
    let mut index = repo.index().unwrap();
    index.add_all(["*"], git2::IndexAddOption::DEFAULT, None).unwrap();
    index.write().unwrap();
    let tree = repo.find_tree(index.write_tree().unwrap()).unwrap();
    let me = Signature::now("Person", "person@example.com").unwrap();
    repo.commit(Some("HEAD"), &me, &me, "my vault", &tree, &[]).unwrap();
    let remote = tmp.path().join("remote.git");
    Repository::init_bare(&remote).unwrap();
    repo.remote("origin", remote.to_str().unwrap())
        .unwrap()
        .push(&["refs/heads/main:refs/heads/main"], None)
        .unwrap();
    let clone = |name: &str| {
        let path = tmp.path().join(name);
        RepoBuilder::new().branch("main").clone(remote.to_str().unwrap(), &path).unwrap();
        path
    };
    let (a, b) = (clone("a"), clone("b"));
    Replicas { _tmp: tmp, remote, a, b }
}

fn open(vault: &Path) -> Engine {
    let engine = Engine::open(&EngineOptions { vault: vault.to_owned(), index_dir: None }).unwrap();
    engine.sync(false, None).unwrap();
    engine
}

fn apply(engine: &Engine, id: &str) -> kb_mcp::error::Result<ApplyResult> {
    engine.apply_proposal(&ApplyArgs { proposal_id: id.into() }, Actor::Cli)
}

fn sync(engine: &Engine) -> kb_mcp::engine::ReplicaReport {
    engine.sync_replica(Actor::Cli).unwrap().expect("a replica")
}

/// The remote's `main`, and the bytes of `path` there.
fn remote_file(remote: &Path, path: &str) -> (String, Option<Vec<u8>>) {
    let repo = Repository::open_bare(remote).unwrap();
    let head = repo.refname_to_id("refs/heads/main").unwrap();
    let tree = repo.find_commit(head).unwrap().tree().unwrap();
    let bytes =
        tree.get_path(Path::new(path)).ok().map(|e| repo.find_blob(e.id()).unwrap().content().to_vec());
    (head.to_string(), bytes)
}

/// The commits on the remote's `main` naming proposal `id`.
fn remote_commits_of(remote: &Path, id: &str) -> usize {
    let repo = Repository::open_bare(remote).unwrap();
    let mut walk = repo.revwalk().unwrap();
    walk.push_ref("refs/heads/main").unwrap();
    walk.filter(|c| {
        let commit = repo.find_commit(*c.as_ref().unwrap()).unwrap();
        commit.message().unwrap_or_default().contains(&format!("Kb-Proposal: {id}"))
    })
    .count()
}

/// The clone's branch commit.
fn head(vault: &Path) -> String {
    Repository::open(vault).unwrap().refname_to_id("refs/heads/main").unwrap().to_string()
}

/// Files git sees changed in the clone (tracked ones; untracked ones too when asked).
fn git_changes(vault: &Path, untracked: bool) -> Vec<String> {
    let repo = Repository::open(vault).unwrap();
    let mut options = StatusOptions::new();
    options.include_untracked(untracked).recurse_untracked_dirs(untracked);
    let statuses = repo.statuses(Some(&mut options)).unwrap();
    statuses.iter().map(|s| format!("{:?} {}", s.status(), s.path().unwrap())).collect()
}

/// Every file of the vault's notes (the inbox, the index and `.git` aside).
fn notes_of(vault: &Path) -> Vec<(String, Vec<u8>)> {
    common::snapshot(vault)
        .into_iter()
        .filter(|(path, _)| {
            !path.starts_with(".git") && !path.starts_with(".kb") && !path.starts_with("inbox")
        })
        .collect()
}

fn audit_lines_for(vault: &Path, id: &str) -> usize {
    std::fs::read_to_string(vault.join("inbox/_applied.jsonl"))
        .unwrap_or_default()
        .lines()
        .filter(|line| line.contains(id))
        .count()
}

#[test]
fn an_apply_on_one_clone_lands_on_the_remote_and_reaches_the_other() {
    let r = replicas();
    let (a, b) = (open(&r.a), open(&r.b));
    let id = common::propose_patch(
        &a,
        NOTE,
        "Backups fail silently.",
        "Backups fail without a sound (zephyrine).",
    );
    let applied = apply(&a, &id).unwrap();
    assert_eq!(applied.status, ApplyStatus::Applied);
    let written = std::fs::read(r.a.join(NOTE)).unwrap();
    let (tip, there) = remote_file(&r.remote, NOTE);
    assert_eq!(there.as_deref(), Some(written.as_slice()), "the remote holds the apply");
    assert_eq!(head(&r.a), tip, "the clone's branch is the remote's");
    assert_eq!(remote_commits_of(&r.remote, &id), 1);
    // The apply and its inbox bookkeeping are committed: git sees nothing changed.
    assert_eq!(git_changes(&r.a, false), Vec::<String>::new());
    let overview = a.overview(Caller::Cli).unwrap();
    assert_eq!(overview.replica.as_ref().unwrap().state, "in_sync", "{:?}", overview.replica);

    let report = sync(&b);
    assert!(report.written.contains(&NOTE.to_owned()), "{report:?}");
    assert_eq!(std::fs::read(r.b.join(NOTE)).unwrap(), written);
    assert_eq!(head(&r.b), tip);
    assert_eq!(git_changes(&r.b, false), Vec::<String>::new());
    let found = b.search_notes(&SearchArgs { query: "zephyrine".into(), ..Default::default() }).unwrap();
    assert_eq!(found.results.first().map(|hit| hit.path.as_str()), Some(NOTE), "{found:?}");
    // The proposal's archive and its audit line came along.
    assert_eq!(audit_lines_for(&r.b, &id), 1);
    let listed = b
        .list_proposals(&ListProposalsArgs { status: Some(ProposalStatusFilter::Applied), limit: None })
        .unwrap();
    assert!(listed.proposals.iter().any(|p| p.proposal_id == id), "{listed:?}");
    assert_eq!(b.overview(Caller::Cli).unwrap().replica.unwrap().state, "in_sync");

    // A clone never moves backwards: asked to go to a commit it holds, it stays.
    let replica = kb_mcp::sandbox::Replica::open(&r.b, "origin", None).unwrap();
    let before = (head(&r.b), common::snapshot(&r.b));
    let parent = replica.parent(&before.0).unwrap().unwrap();
    let moved =
        replica.move_to(&parent, &|_| false, &|_, _, _| Ok(kb_mcp::sandbox::Written::NotMine)).unwrap();
    assert_eq!(moved.to, moved.from);
    assert_eq!((head(&r.b), common::snapshot(&r.b)), before);
}

#[test]
fn two_clones_patching_one_note_at_once_land_exactly_one_and_lose_no_byte() {
    let r = replicas();
    let (a, b) = (open(&r.a), open(&r.b));
    let on_a = common::propose_patch(&a, NOTE, "Backups fail silently.", "Backups fail, said A.");
    let on_b = common::propose_patch(&b, NOTE, "Backups fail silently.", "Backups fail, said B.");
    let (notes_a, notes_b) = (notes_of(&r.a), notes_of(&r.b));
    let (result_a, result_b) = std::thread::scope(|scope| {
        let first = scope.spawn(|| apply(&a, &on_a));
        let second = scope.spawn(|| apply(&b, &on_b));
        (first.join().unwrap(), second.join().unwrap())
    });
    assert!(result_a.is_ok() != result_b.is_ok(), "exactly one lands: {result_a:?} {result_b:?}");
    let (winner, loser, winner_id, loser_id, loser_notes, error) = match (&result_a, &result_b) {
        (Ok(_), Err(error)) => (&r.a, &r.b, &on_a, &on_b, &notes_b, error.clone()),
        (Err(error), Ok(_)) => (&r.b, &r.a, &on_b, &on_a, &notes_a, error.clone()),
        _ => unreachable!(),
    };
    assert_eq!(error.code, ErrorCode::StaleBase, "{error:?}");
    // The refusal names the remote's commit that changed the note: the winner's.
    let named = error.details.as_ref().and_then(|d| d["remote_commit"].as_str()).unwrap().to_owned();
    assert!(error.message.contains(&named[..12]), "{error:?}");
    let remote_repo = Repository::open_bare(&r.remote).unwrap();
    let commit = remote_repo.find_commit(git2::Oid::from_str(&named).unwrap()).unwrap();
    assert!(commit.message().unwrap().contains(&format!("Kb-Proposal: {winner_id}")), "{named}");
    let (_, there) = remote_file(&r.remote, NOTE);
    assert_eq!(there, Some(std::fs::read(winner.join(NOTE)).unwrap()));
    assert_eq!(remote_commits_of(&r.remote, winner_id), 1);
    assert_eq!(remote_commits_of(&r.remote, loser_id), 0);
    // The refused clone changed nothing, and its proposal waits, pending.
    assert_eq!(&notes_of(loser), loser_notes, "not a byte changed on the refused clone");
    assert!(!loser.join("inbox/_applying.json").exists(), "no journal is left behind");
    let loser_engine = if loser == &r.a { &a } else { &b };
    let pending = loser_engine.list_proposals(&ListProposalsArgs::default()).unwrap();
    assert!(pending.proposals.iter().any(|p| &p.proposal_id == loser_id), "{pending:?}");
    // Its next sync takes the winner's change; both clones agree.
    sync(loser_engine);
    assert_eq!(std::fs::read(loser.join(NOTE)).unwrap(), std::fs::read(winner.join(NOTE)).unwrap());
    assert_eq!(notes_of(loser), notes_of(winner));
    assert_eq!(head(loser), remote_file(&r.remote, NOTE).0);
}

#[test]
fn a_persons_uncommitted_edit_survives_the_other_clones_change() {
    let r = replicas();
    let (a, b) = (open(&r.a), open(&r.b));
    // B's person edits the end of the note (not committed); A changes its start.
    let mine = std::fs::read_to_string(r.b.join(NOTE)).unwrap() + "\nMy own line, written on B.\n";
    std::fs::write(r.b.join(NOTE), &mine).unwrap();
    let id = common::propose_patch(&a, NOTE, "# Restore drills", "# Restore drills, quarterly");
    apply(&a, &id).unwrap();
    let report = sync(&b);
    assert_eq!(report.merged, vec![NOTE.to_owned()], "{report:?}");
    let merged = std::fs::read_to_string(r.b.join(NOTE)).unwrap();
    assert!(
        merged.contains("# Restore drills, quarterly") && merged.contains("My own line, written on B."),
        "{merged}"
    );
    assert_eq!(head(&r.b), head(&r.a), "B took A's commit");
    assert!(
        git_changes(&r.b, false).iter().any(|line| line.ends_with(NOTE)),
        "B's edit is still B's, uncommitted"
    );

    // The same line changed on both sides: B's work tree is left alone, and said so.
    let theirs = common::propose_patch(&a, NOTE, "Backups fail silently.", "Backups fail, from A.");
    apply(&a, &theirs).unwrap();
    let mine = merged.replace("Backups fail silently.", "Backups fail, from B.");
    std::fs::write(r.b.join(NOTE), &mine).unwrap();
    let before = head(&r.b);
    let report = sync(&b);
    assert_eq!(report.status.held, vec![NOTE.to_owned()], "{report:?}");
    assert_eq!(report.status.state, "held");
    assert_eq!(std::fs::read_to_string(r.b.join(NOTE)).unwrap(), mine, "B's bytes are untouched");
    assert_eq!(head(&r.b), before, "B did not move");
    let overview = b.overview(Caller::Cli).unwrap().replica.unwrap();
    // Behind by A's apply and by the inbox commit that follows it.
    assert_eq!((overview.state.as_str(), overview.behind), ("held", 2), "{overview:?}");
}

#[test]
fn applies_go_on_while_the_remote_is_away_and_are_pushed_when_it_is_back() {
    let r = replicas();
    let a = open(&r.a);
    let away = r.remote.with_extension("away");
    std::fs::rename(&r.remote, &away).unwrap();
    let id =
        common::propose_patch(&a, NOTE, "Backups fail silently.", "Backups fail while the drive is away.");
    assert_eq!(apply(&a, &id).unwrap().status, ApplyStatus::Applied);
    let report = sync(&a);
    assert_eq!(report.status.state, "unreachable", "{report:?}");
    assert!(report.status.ahead >= 1, "{report:?}");
    std::fs::rename(&away, &r.remote).unwrap();
    let report = sync(&a);
    assert!(report.pushed, "{report:?}");
    assert_eq!(report.status.state, "in_sync", "{report:?}");
    assert_eq!(remote_file(&r.remote, NOTE).1, Some(std::fs::read(r.a.join(NOTE)).unwrap()));
    assert_eq!(remote_commits_of(&r.remote, &id), 1);
}

/// A clone whose vault holds the person's own `inbox/` where kb-mcp's inbox
/// would be: a sync takes the remote's commits and writes nothing there
/// (no lock, no commit of the person's files).
#[test]
fn a_sync_never_writes_into_the_persons_own_inbox() {
    let r = replicas();
    let b = open(&r.b);
    common::put(&r.b, "inbox/todo.md", "# To do\n\n- call the bank\n");
    let before = common::snapshot(&r.b.join("inbox"));
    let report = sync(&b);
    assert_eq!(report.status.state, "in_sync", "{report:?}");
    assert_eq!(common::snapshot(&r.b.join("inbox")), before, "nothing written in the person's inbox/");
    assert_eq!(remote_file(&r.remote, "inbox/todo.md").1, None, "the person's file is not committed");
}

/// A clone that applied while the remote was away, to a note another clone
/// changed meanwhile: when the remote is back, nothing is overwritten on
/// either side; the clone is held, naming the note, until a person merges.
#[test]
fn an_apply_made_away_that_collides_is_held_and_loses_nothing() {
    let r = replicas();
    let (a, b) = (open(&r.a), open(&r.b));
    let on_b = common::propose_patch(&b, NOTE, "Backups fail silently.", "Backups fail, said B.");
    apply(&b, &on_b).unwrap();
    let away = r.remote.with_extension("away");
    std::fs::rename(&r.remote, &away).unwrap();
    let on_a = common::propose_patch(&a, NOTE, "Backups fail silently.", "Backups fail, said A while away.");
    apply(&a, &on_a).unwrap();
    let mine = std::fs::read(r.a.join(NOTE)).unwrap();
    std::fs::rename(&away, &r.remote).unwrap();
    let report = sync(&a);
    assert_eq!(report.status.held, vec![NOTE.to_owned()], "{report:?}");
    assert_eq!(report.status.state, "held");
    assert_eq!(std::fs::read(r.a.join(NOTE)).unwrap(), mine, "A's apply stays");
    let (_, there) = remote_file(&r.remote, NOTE);
    assert_eq!(there, Some(std::fs::read(r.b.join(NOTE)).unwrap()), "B's apply stays on the remote");
    assert_eq!(remote_commits_of(&r.remote, &on_a), 0);
    let status = a.overview(Caller::Cli).unwrap().replica.unwrap();
    assert_eq!(
        (status.state.as_str(), status.ahead >= 1, status.behind >= 1),
        ("held", true, true),
        "{status:?}"
    );
}

#[test]
fn a_proposal_staged_on_one_clone_is_applied_on_the_other() {
    let r = replicas();
    let (a, b) = (open(&r.a), open(&r.b));
    let id = common::propose_patch(&a, NOTE, "Backups fail silently.", "Backups fail, staged on A.");
    // A proposal being staged (its metadata, written last, not there yet) stays here.
    common::put(&r.a, "inbox/patch/half-made-0123abcd.new.md", "# Half made\n");
    sync(&a);
    assert_eq!(
        git_changes(&r.a, true).into_iter().filter(|line| line.contains("inbox/patch")).collect::<Vec<_>>(),
        vec!["Status(WT_NEW) inbox/patch/half-made-0123abcd.new.md".to_owned()]
    );
    std::fs::remove_file(r.a.join("inbox/patch/half-made-0123abcd.new.md")).unwrap();
    sync(&b);
    let pending = b.list_proposals(&ListProposalsArgs::default()).unwrap();
    assert!(pending.proposals.iter().any(|p| p.proposal_id == id), "B sees A's proposal: {pending:?}");
    apply(&b, &id).unwrap();
    // A gets the note, the archived proposal and B's audit line; its own log merges.
    sync(&a);
    assert_eq!(std::fs::read(r.a.join(NOTE)).unwrap(), std::fs::read(r.b.join(NOTE)).unwrap());
    let listed = a.list_proposals(&ListProposalsArgs::default()).unwrap();
    assert!(!listed.proposals.iter().any(|p| p.proposal_id == id), "no longer pending on A: {listed:?}");
    assert_eq!(audit_lines_for(&r.a, &id), 1);
    let second = common::propose_patch(&a, NOTE, "# Restore drills", "# Restore drills (A)");
    apply(&a, &second).unwrap();
    sync(&b);
    for vault in [&r.a, &r.b] {
        assert_eq!(audit_lines_for(vault, &id), 1);
        assert_eq!(audit_lines_for(vault, &second), 1);
    }
    assert_eq!(git_changes(&r.a, false), Vec::<String>::new());
    assert_eq!(git_changes(&r.b, false), Vec::<String>::new());
}

#[test]
fn a_move_and_a_delete_travel_whole() {
    let r = replicas();
    let (a, b) = (open(&r.a), open(&r.b));
    let moved = a
        .propose_move(&ProposeMoveArgs {
            from: NOTE.into(),
            to: "z/tech/Restore drills.md".into(),
            reason: "drills belong with the tech notes".into(),
            keep_alias: None,
        })
        .unwrap();
    apply(&a, &moved.proposal_id).unwrap();
    let deleted = a
        .propose_delete(&ProposeDeleteArgs {
            path: "z/同步工具对比.md".into(), reason: "outdated".into()
        })
        .unwrap();
    apply(&a, &deleted.proposal_id).unwrap();
    assert_eq!(git_changes(&r.a, false), Vec::<String>::new());
    sync(&b);
    assert!(!r.b.join(NOTE).exists() && r.b.join("z/tech/Restore drills.md").exists());
    assert!(!r.b.join("z/同步工具对比.md").exists());
    assert_eq!(notes_of(&r.b), notes_of(&r.a), "B's notes are A's, links rewritten alike");
    assert_eq!(git_changes(&r.b, false), Vec::<String>::new());
    assert_eq!(head(&r.b), remote_file(&r.remote, NOTE).0);
}

/// The remote is the compare-and-swap: of four clones pushing a commit
/// made on the same commit at the same moment, exactly one lands.
#[test]
fn of_four_clones_pushing_at_once_exactly_one_lands() {
    let r = replicas();
    let clones: Vec<PathBuf> = (0..4)
        .map(|n| {
            let path = r.a.parent().unwrap().join(format!("c{n}"));
            RepoBuilder::new().branch("main").clone(r.remote.to_str().unwrap(), &path).unwrap();
            path
        })
        .collect();
    let base = remote_file(&r.remote, NOTE).0;
    let commits: Vec<(kb_mcp::sandbox::Replica, String)> = clones
        .iter()
        .enumerate()
        .map(|(n, path)| {
            let replica = kb_mcp::sandbox::Replica::open(path, "origin", None).unwrap();
            let files = vec![(NOTE.to_owned(), Some(format!("clone {n}\n").into_bytes()))];
            let commit = replica.commit_files(Some(&base), &files, "a test's commit").unwrap();
            (replica, commit)
        })
        .collect();
    let barrier = std::sync::Barrier::new(commits.len());
    let pushed: Vec<(String, kb_mcp::sandbox::Pushed)> = std::thread::scope(|scope| {
        let handles: Vec<_> = commits
            .iter()
            .map(|(replica, commit)| {
                let barrier = &barrier;
                scope.spawn(move || {
                    barrier.wait();
                    (commit.clone(), replica.push(commit).unwrap())
                })
            })
            .collect();
        handles.into_iter().map(|h| h.join().unwrap()).collect()
    });
    let landed: Vec<&String> =
        pushed.iter().filter(|(_, p)| *p == kb_mcp::sandbox::Pushed::Accepted).map(|(c, _)| c).collect();
    assert_eq!(landed.len(), 1, "{pushed:?}");
    assert!(
        pushed
            .iter()
            .all(|(_, p)| matches!(p, kb_mcp::sandbox::Pushed::Accepted | kb_mcp::sandbox::Pushed::Rejected)),
        "{pushed:?}"
    );
    assert_eq!(&remote_file(&r.remote, NOTE).0, landed[0]);
}

/// Two real servers, each on its own clone, syncing every second: an apply
/// on A is found on B; then both patch one note at once, and exactly one lands.
#[tokio::test(flavor = "multi_thread")]
async fn two_real_servers_keep_their_clones_agreed() {
    use crate::mcp::call;
    use serde_json::json;
    let r = replicas();
    let (a, b) = (crate::mcp::connect(&r.a, "apply").await, crate::mcp::connect(&r.b, "apply").await);
    let patch = |client, replace: &'static str| async move {
        let client: &crate::mcp::Client = client;
        let read =
            call(client, "read_note", json!({ "path": NOTE })).await.unwrap().structured_content.unwrap();
        let staged = call(
            client,
            "propose_note_patch",
            json!({ "path": NOTE, "base_hash": read["hash"], "reason": "a test's change",
                    "edits": [{ "op": "find_replace", "find": "Backups fail silently.", "replace": replace }] }),
        )
        .await
        .unwrap()
        .structured_content
        .unwrap();
        staged["proposal_id"].as_str().unwrap().to_owned()
    };
    let apply = |client, id: String| async move {
        let client: &crate::mcp::Client = client;
        let result = call(client, "apply_proposal", json!({ "proposal_id": id })).await.unwrap();
        match result.structured_content {
            Some(applied) if result.is_error != Some(true) => Ok(applied),
            _ => Err(common::tool_error(&serde_json::to_value(&result).unwrap())),
        }
    };
    let id = patch(&a, "Backups fail silently. quokkamark").await;
    assert_eq!(apply(&a, id).await.unwrap()["status"], "applied");
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
    loop {
        let found = call(&b, "search_note_content", json!({ "query": "quokkamark" })).await.unwrap();
        let found = found.structured_content.unwrap();
        if found["results"][0]["path"] == NOTE {
            break;
        }
        assert!(std::time::Instant::now() < deadline, "A's apply never reached B: {found}");
        tokio::time::sleep(std::time::Duration::from_millis(200)).await;
    }

    let (on_a, on_b) = tokio::join!(patch(&a, "Backups fail, said A."), patch(&b, "Backups fail, said B."));
    let (landed_a, landed_b) = tokio::join!(apply(&a, on_a), apply(&b, on_b));
    assert!(landed_a.is_ok() != landed_b.is_ok(), "exactly one lands: {landed_a:?} {landed_b:?}");
    let refused = landed_a.err().or(landed_b.err()).unwrap();
    assert_eq!(refused["code"], "stale_base", "{refused}");
    loop {
        let (note_a, note_b) =
            (std::fs::read(r.a.join(NOTE)).unwrap(), std::fs::read(r.b.join(NOTE)).unwrap());
        let overview = call(&b, "get_vault_overview", json!({})).await.unwrap().structured_content.unwrap();
        if note_a == note_b && head(&r.a) == head(&r.b) && overview["replica"]["state"] == "in_sync" {
            break;
        }
        assert!(std::time::Instant::now() < deadline, "the clones never agreed: {}", overview["replica"]);
        tokio::time::sleep(std::time::Duration::from_millis(200)).await;
    }
}

#[test]
fn replica_settings_are_read_strictly_and_a_vault_that_is_no_clone_is_refused() {
    use kb_mcp::vault::VaultConfig;
    let parsed =
        VaultConfig::parse(Some("[replica]\nremote = \"origin\"\nbranch = \"notes\"\ninterval = \"5m\"\n"))
            .unwrap();
    let replica = parsed.replica.unwrap();
    assert_eq!(
        (replica.remote.as_str(), replica.branch.as_deref(), replica.interval_secs),
        ("origin", Some("notes"), 300)
    );
    for (text, named) in [
        ("[replica]\ninterval = 30\n", "remote"),
        ("[replica]\nremote = \"origin\"\ninterval = 0\n", "replica.interval"),
        ("[replica]\nremote = \"origin\"\ninterval = \"soon\"\n", "replica.interval"),
        ("[replica]\nremote = \"origin\"\nbranch = \"a b\"\n", "replica.branch"),
        ("[replica]\nremote = \"origin\"\npush = true\n", "replica.push"),
    ] {
        let error = VaultConfig::parse(Some(text)).unwrap_err();
        assert_eq!(error.code, ErrorCode::InvalidArgument, "{text}");
        assert!(error.message.contains(named), "{text}: {error:?}");
    }
    // A vault folder that is not a clone's root: applies are refused, nothing changes.
    let (_tmp, vault) = common::temp_vault();
    common::without_semantic(&vault);
    let config = vault.join("kb.toml");
    let text = std::fs::read_to_string(&config).unwrap() + "\n[replica]\nremote = \"origin\"\n";
    std::fs::write(&config, text).unwrap();
    let engine = open(&vault);
    let id = common::propose_patch(&engine, NOTE, "Backups fail silently.", "Backups fail.");
    let before = notes_of(&vault);
    let error = apply(&engine, &id).unwrap_err();
    assert!(error.message.contains("root of a git clone"), "{error:?}");
    assert_eq!(notes_of(&vault), before);
    assert!(!vault.join("inbox/_applying.json").exists());
    assert_eq!(engine.overview(Caller::Cli).unwrap().replica.unwrap().state, "failing");
}

/// `kb-index replica` as a person runs it: it takes the other clone's apply
/// and says so; `kb-index status` names the replica's state; on a vault
/// without `[replica]` it says how to make one.
#[test]
fn kb_index_replica_syncs_now_and_status_says_how_it_stands() {
    let r = replicas();
    let a = open(&r.a);
    let id = common::propose_patch(
        &a,
        NOTE,
        "Backups fail silently.",
        "Backups fail, from the command line's peer.",
    );
    apply(&a, &id).unwrap();
    let run = |vault: &Path, args: &[&str]| {
        common::outcome(
            std::process::Command::new(env!("CARGO_BIN_EXE_kb-index"))
                .args(args)
                .arg("--vault")
                .arg(vault)
                .env("NO_COLOR", "1")
                .output()
                .unwrap(),
        )
    };
    let (code, out, err) = run(&r.b, &["replica"]);
    assert_eq!(code, 0, "{out}{err}");
    assert!(
        out.contains("origin main")
            && out.contains("in sync")
            && out.contains("took 5 files from the remote"),
        "{out}"
    );
    assert_eq!(std::fs::read(r.b.join(NOTE)).unwrap(), std::fs::read(r.a.join(NOTE)).unwrap());
    let (code, out, _) = run(&r.b, &["status"]);
    assert!(out.contains("replica    origin main: in_sync, 0 ahead, 0 behind"), "{code} {out}");
    let (_tmp, plain) = common::temp_vault();
    let (code, _, err) = run(&plain, &["replica"]);
    assert_ne!(code, 0);
    assert!(err.contains("not a replica") && err.contains("Several machines"), "{err}");
}

/// The real `kb-mcp` on clone `vault`; with `applying`, stopping every apply
/// for good at its pause (a debug build's `KB_MCP_TEST_PAUSE_AT`) and asked
/// over stdio to apply the proposal (a call that never returns). Its stdin
/// stays open until the caller drops it (which ends the server).
fn real_server(
    vault: &Path,
    applying: Option<(&str, &str)>,
) -> (std::process::Child, std::process::ChildStdin) {
    use std::io::Write;
    let mut command = std::process::Command::new(env!("CARGO_BIN_EXE_kb-mcp"));
    if let Some((_, pause)) = applying {
        command.env("KB_MCP_TEST_PAUSE_AT", pause);
    }
    let mut child = command
        .args(["--access", "apply", "--vault"])
        .arg(vault)
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    let mut lines = vec![
        serde_json::json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
            "protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "kill", "version": "0"}}}),
        serde_json::json!({"jsonrpc": "2.0", "method": "notifications/initialized"}),
    ];
    if let Some((id, _)) = applying {
        lines.push(serde_json::json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {
            "name": "apply_proposal", "arguments": {"proposal_id": id}}}));
    }
    for line in lines {
        writeln!(stdin, "{line}").unwrap();
    }
    (child, stdin)
}

/// Waits until `reached` holds (the server got to its pause), at most a minute.
fn until(what: &str, mut reached: impl FnMut() -> bool) {
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
    while !reached() {
        assert!(std::time::Instant::now() < deadline, "{what}: the server never got there");
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
}

/// A real `kb-mcp` on clone A killed with SIGKILL between its commit and
/// its push, between its push and its write, and between its write and its
/// index update: after a restart A and the remote agree, and the apply is
/// made once or not at all.
#[test]
fn a_server_killed_mid_apply_agrees_with_the_remote_after_a_restart() {
    if !cfg!(debug_assertions) {
        eprintln!("skipped: the pause this test kills a server at is in debug builds only");
        return;
    }
    for step in ["committed", "pushed", "written"] {
        let r = replicas();
        let text = format!("Backups fail (killed{step}).");
        let id = {
            let a = open(&r.a);
            common::propose_patch(&a, NOTE, "Backups fail silently.", &text)
        };
        let (mut server, _stdin) = real_server(&r.a, Some((&id, step)));
        let journal = r.a.join("inbox/_applying.json");
        match step {
            "committed" => {
                until(step, || journal.exists());
                std::thread::sleep(std::time::Duration::from_millis(500));
            }
            "pushed" => until(step, || remote_commits_of(&r.remote, &id) == 1),
            _ => until(step, || std::fs::read_to_string(r.a.join(NOTE)).unwrap().contains(&text)),
        }
        server.kill().unwrap();
        server.wait().unwrap();
        assert_eq!(remote_commits_of(&r.remote, &id), usize::from(step != "committed"), "{step}: the remote");
        let written = std::fs::read_to_string(r.a.join(NOTE)).unwrap().contains(&text);
        assert_eq!(written, step == "written", "{step}: A's note when A died");

        // The restart: a server again, which recovers and syncs by itself.
        let (mut restarted, stdin) = real_server(&r.a, None);
        until(&format!("{step}: agreeing after the restart"), || {
            let agreed = Repository::open(&r.a)
                .unwrap()
                .refname_to_id("refs/heads/main")
                .ok()
                .map(|id| id.to_string())
                == Some(remote_file(&r.remote, NOTE).0);
            let settled = !journal.exists() && (step == "committed" || audit_lines_for(&r.a, &id) == 1);
            agreed && settled && git_changes(&r.a, false).is_empty()
        });
        drop(stdin);
        restarted.wait().unwrap();
        let a = open(&r.a);
        let report = sync(&a);
        let (tip, there) = remote_file(&r.remote, NOTE);
        assert_eq!(head(&r.a), tip, "{step}: A and the remote agree ({report:?})");
        assert_eq!(there, Some(std::fs::read(r.a.join(NOTE)).unwrap()), "{step}");
        let listed = a.list_proposals(&ListProposalsArgs::default()).unwrap();
        let pending = listed.proposals.iter().any(|p| p.proposal_id == id);
        match step {
            "committed" => {
                assert!(pending, "{step}: nothing was pushed, so nothing was applied");
                apply(&a, &id).unwrap();
            }
            _ => assert!(!pending, "{step}: the pushed apply is completed here ({report:?})"),
        }
        sync(&a);
        assert_eq!(remote_commits_of(&r.remote, &id), 1, "{step}: applied once");
        assert_eq!(audit_lines_for(&r.a, &id), 1, "{step}: audited once");
        assert!(std::fs::read_to_string(r.a.join(NOTE)).unwrap().contains(&text), "{step}");
        let found =
            a.search_notes(&SearchArgs { query: format!("killed{step}"), ..Default::default() }).unwrap();
        assert!(found.results.iter().any(|hit| hit.path == NOTE), "{step}: indexed: {found:?}");
        assert_eq!(git_changes(&r.a, false), Vec::<String>::new(), "{step}");
        assert!(!journal.exists(), "{step}");
    }
}
