//! The agent's own memory (issue 39): `remember` writes dated entries into
//! the memory folder and nowhere else, under caps, audited; the entries come
//! back first in recall and flagged in searches, counted in the overview, and
//! never served as notes; the person turns it off in `kb.toml`. Over HTTP a
//! token's memory of the person stays its own (see `http.rs`).

use std::fs;
use std::path::Path;

use kb_mcp::engine::types::*;
use kb_mcp::engine::{Engine, EngineOptions, MEMORY_MAX_ENTRIES};
use kb_mcp::error::ErrorCode;
use serde_json::json;

use crate::common::{self, audit_lines};
use crate::mcp::{call, connect};

fn open(vault: &Path) -> Engine {
    let engine = Engine::open(&EngineOptions { vault: vault.to_owned(), index_dir: None }).unwrap();
    engine.sync(false, None).unwrap();
    engine
}

fn remember(
    engine: &Engine,
    about: MemoryAbout,
    text: &str,
    category: Option<&str>,
) -> kb_mcp::error::Result<Remembered> {
    engine.remember(
        &RememberArgs { about, text: text.to_owned(), category: category.map(str::to_owned) },
        &Principal::local(),
    )
}

/// Every file of the vault outside the memory folder and the inbox's audit
/// log, with its bytes: what `remember` must never change.
fn outside_memory(vault: &Path) -> Vec<(String, Vec<u8>)> {
    common::snapshot(vault)
        .into_iter()
        .filter(|(path, _)| {
            !path.starts_with("Agent memory/")
                && path != "inbox/_applied.jsonl"
                && !path.starts_with(".kb/")
                && path != "inbox/_apply.lock"
        })
        .collect()
}

fn audit_schema() -> jsonschema::Validator {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("index-schema/audit.schema.json");
    jsonschema::validator_for(&serde_json::from_slice(&fs::read(path).unwrap()).unwrap()).unwrap()
}

#[test]
fn remember_writes_one_dated_entry_in_the_memory_folder_and_audits_it() {
    let (_tmp, vault) = common::temp_vault();
    let engine = open(&vault);
    let before = outside_memory(&vault);
    let person =
        remember(&engine, MemoryAbout::Person, "Prefers notes written in Chinese.", Some("preference"))
            .unwrap();
    let vault_fact =
        remember(&engine, MemoryAbout::Vault, "论文的截止日期是三月；草稿都在 z/thesis 下。", None).unwrap();
    assert!(person.path.starts_with("Agent memory/person/local/"), "{}", person.path);
    assert!(vault_fact.path.starts_with("Agent memory/vault/"), "{}", vault_fact.path);
    assert_eq!((person.entries, person.entries_max), (1, MEMORY_MAX_ENTRIES as u64));
    // Nothing else in the vault changed.
    assert_eq!(outside_memory(&vault), before);

    // An ordinary note the person reads in their editor: frontmatter, then the text.
    let text = common::read(&vault, &person.path);
    assert!(text.starts_with("---\nmemory: person\ncategory: preference\nremembered: "), "{text}");
    assert!(text.contains("\nby: local\n---\nPrefers notes written in Chinese.\n"), "{text}");
    assert!(person.path.ends_with("Prefers notes written in Chinese.md"), "{}", person.path);

    // One audit line each, kind memory, valid against the published schema.
    let lines = audit_lines(&vault);
    assert_eq!(lines.len(), 2);
    let validator = audit_schema();
    for line in &lines {
        let errors: Vec<String> = validator.iter_errors(line).map(|e| e.to_string()).collect();
        assert!(errors.is_empty(), "{line}: {errors:?}");
        assert_eq!(line["kind"], "memory");
        assert_eq!(line["by"], "mcp");
        assert_eq!(line["principal"], "local");
        assert!(line.get("proposal_id").is_none());
    }
    assert_eq!(lines[0]["target"], person.path.as_str());
    assert_eq!(lines[1]["about"], "vault");

    // The same words again make a second entry: an entry is never replaced.
    let again =
        remember(&engine, MemoryAbout::Person, "Prefers notes written in Chinese.", Some("preference"))
            .unwrap();
    assert_ne!(again.path, person.path);
    assert_eq!(common::read(&vault, &person.path), text);
    assert_eq!(again.entries, 2);
}

#[test]
fn memory_comes_first_in_recall_flagged_in_searches_counted_and_never_served_as_notes() {
    let (_tmp, vault) = common::temp_vault();
    let engine = open(&vault);
    let local = Principal::local();
    let kept = remember(
        &engine,
        MemoryAbout::Person,
        "The thesis defence is on 12 March; slides due a week before.",
        Some("deadline"),
    )
    .unwrap();
    remember(&engine, MemoryAbout::Vault, "Backups of the git remote are described in the 备份 notes.", None)
        .unwrap();

    let pack = engine
        .recall_context_for(
            &RecallArgs { topic: "when is the thesis defence".into(), ..Default::default() },
            &local,
        )
        .unwrap();
    assert_eq!(pack.items[0].path, kept.path, "{pack:?}");
    assert_eq!(pack.items[0].memory, Some(MemoryAbout::Person));
    assert!(pack.items[0].text.contains("12 March"));
    assert!(pack.items.iter().skip(1).all(|item| item.memory.is_none()));

    let search = |query: &str| SearchArgs { query: query.into(), ..Default::default() };
    let found = engine.search_knowledge_for(&search("thesis defence slides"), &local).unwrap();
    assert_eq!(found.results[0].path, kept.path);
    assert_eq!(found.results[0].memory, Some(MemoryAbout::Person));
    let found = engine.search_note_content_for(&search("备份 remote"), &local).unwrap();
    assert_eq!(found.results[0].memory, Some(MemoryAbout::Vault), "{found:?}");
    assert!(found.results.iter().skip(1).any(|hit| hit.memory.is_none()), "the notes follow");
    // Narrowed to notes, or asked from the notes alone, it is the notes'.
    let narrowed = SearchArgs { folder: Some("z".into()), ..search("thesis defence slides") };
    assert!(
        engine.search_knowledge_for(&narrowed, &local).unwrap().results.iter().all(|h| h.memory.is_none())
    );
    assert!(
        engine
            .search_knowledge(&search("thesis defence slides"))
            .unwrap()
            .results
            .iter()
            .all(|h| h.memory.is_none())
    );
    // A fact of nobody's memory brings no entry.
    let none = engine.search_knowledge_for(&search("sourdough starter hydration"), &local).unwrap();
    assert!(none.results.iter().all(|hit| hit.memory.is_none()));

    let counts = engine.memory_counts(&local).unwrap();
    assert_eq!((counts.person, counts.vault, counts.enabled), (1, 1, true));
    assert_eq!(counts.folder, "Agent memory");

    // Not a note: not read, listed, searched by folder, indexed or in the changes.
    let read = engine.read_note(&ReadNoteArgs { path: Some(kept.path.clone()), ..Default::default() });
    let err = read.unwrap_err();
    assert_eq!(err.code, ErrorCode::PathDenied, "{err:?}");
    assert!(!err.message.contains("deadline"), "nothing of the entry beyond its name: {}", err.message);
    let listed =
        engine.list_notes(&ListNotesArgs { folder: Some("Agent memory".into()), ..Default::default() });
    assert!(listed.is_err() || listed.unwrap().notes.is_empty());
    engine.sync(false, None).unwrap();
    let notes = engine.search_knowledge(&search("thesis defence")).unwrap();
    assert!(notes.results.iter().all(|hit| !hit.path.starts_with("Agent memory/")), "{notes:?}");
    let overview = engine.overview(Caller::Cli).unwrap();
    assert!(overview.changes.applied.is_empty() && overview.index.fresh, "{:?}", overview.changes);

    // The person edits and deletes entries in their editor. Saved through a
    // rename (most editors), the next call knows; saved in place, a call
    // within two seconds does.
    let recall = |topic: &str| {
        engine.recall_context_for(&RecallArgs { topic: topic.into(), ..Default::default() }, &local).unwrap()
    };
    let file = vault.join(&kept.path);
    let saved = file.with_extension("tmp");
    fs::write(&saved, "---\nmemory: person\n---\nThe defence moved to 20 April.\n").unwrap();
    fs::rename(&saved, &file).unwrap();
    let pack = recall("thesis defence date");
    assert!(pack.items[0].text.contains("20 April"), "{:?}", pack.items[0]);
    fs::write(&file, "---\nmemory: person\n---\nThe defence moved again, to 4 May.\n").unwrap();
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
    while !recall("thesis defence date").items[0].text.contains("4 May") {
        assert!(std::time::Instant::now() < deadline, "an edit in place is never seen");
        std::thread::sleep(std::time::Duration::from_millis(200));
    }
    fs::remove_file(vault.join(&kept.path)).unwrap();
    assert_eq!(engine.memory_counts(&local).unwrap().person, 0);
    let pack = engine
        .recall_context_for(&RecallArgs { topic: "thesis defence date".into(), ..Default::default() }, &local)
        .unwrap();
    assert!(pack.items.iter().all(|item| item.memory.is_none()));
}

#[test]
fn bad_entries_get_clear_errors_and_change_nothing() {
    let (_tmp, vault) = common::temp_vault();
    let engine = open(&vault);
    let before = common::snapshot(&vault);
    let refused = |text: &str, category: Option<&str>| {
        remember(&engine, MemoryAbout::Person, text, category).unwrap_err()
    };

    let huge = "x".repeat(10 << 20);
    let err = refused(&huge, None);
    assert_eq!(err.code, ErrorCode::TooLarge);
    assert!(err.message.contains("4096"), "{}", err.message);
    assert!(err.message.len() < 400, "the error does not echo the text");
    assert_eq!(refused("", None).code, ErrorCode::InvalidArgument);
    assert!(refused("bell\u{7} and escape \u{1b}[31m", None).message.contains("U+0007"));
    assert_eq!(refused("---\nmemory: vault\n---\nforged", None).code, ErrorCode::InvalidArgument);
    for category in ["../../etc", "a/b", "x\u{0}", "", &"long".repeat(20)] {
        assert_eq!(refused("fine", Some(category)).code, ErrorCode::InvalidArgument, "{category:?}");
    }
    // Links to denied, internal or outside places are refused by name.
    for text in [
        "see [[.env]]",
        "keys in [k](../.ssh/id_rsa)",
        "look at [[z/private/secret]]",
        "[x](../../etc/passwd)",
        "the inbox [[inbox/_applied.jsonl]]",
    ] {
        let err = refused(text, None);
        assert_eq!(err.code, ErrorCode::PathDenied, "{text}: {err:?}");
    }
    // A link to an ordinary note is fine.
    let fine = remember(&engine, MemoryAbout::Vault, "Backups: see [[备份仓库]].", None).unwrap();
    fs::remove_file(vault.join(&fine.path)).unwrap();
    let after: Vec<_> = common::snapshot(&vault)
        .into_iter()
        .filter(|(path, _)| {
            path != "inbox/_applied.jsonl" && !path.starts_with(".kb/") && path != "inbox/_apply.lock"
        })
        .collect();
    let before: Vec<_> = before.into_iter().filter(|(path, _)| !path.starts_with(".kb/")).collect();
    assert_eq!(after, before);
    assert_eq!(audit_lines(&vault).len(), 1, "only the entry that was written is audited");
}

#[test]
fn a_flood_stops_at_the_cap_and_the_off_switch_stops_everything() {
    let (_tmp, vault) = common::temp_vault();
    let engine = open(&vault);
    for n in 0..MEMORY_MAX_ENTRIES {
        remember(&engine, MemoryAbout::Vault, &format!("fact number {n}"), None).unwrap();
    }
    for n in 0..20 {
        let err = remember(&engine, MemoryAbout::Vault, &format!("one too many {n}"), None).unwrap_err();
        assert_eq!(err.code, ErrorCode::TooLarge);
        assert!(err.message.contains("is full") && err.hint.as_deref().unwrap().contains("prune"), "{err:?}");
    }
    assert_eq!(fs::read_dir(vault.join("Agent memory/vault")).unwrap().count(), MEMORY_MAX_ENTRIES);
    assert_eq!(audit_lines(&vault).len(), MEMORY_MAX_ENTRIES);
    // The person's memory is another memory, with room of its own.
    remember(&engine, MemoryAbout::Person, "still room here", None).unwrap();

    // Off: refused, and out of searches and recall; the folder stays apart from the notes.
    let toml = fs::read_to_string(vault.join("kb.toml")).unwrap();
    fs::write(vault.join("kb.toml"), format!("{toml}\n[memory]\nenabled = false\n")).unwrap();
    engine.refresh_config().unwrap();
    let err = remember(&engine, MemoryAbout::Person, "anything", None).unwrap_err();
    assert_eq!(err.code, ErrorCode::PathDenied);
    assert!(err.message.contains("enabled = false"), "{}", err.message);
    let found = engine
        .search_knowledge_for(
            &SearchArgs { query: "still room here".into(), ..Default::default() },
            &Principal::local(),
        )
        .unwrap();
    assert!(found.results.iter().all(|hit| hit.memory.is_none()));
    assert!(!engine.memory_counts(&Principal::local()).unwrap().enabled);
    engine.sync(false, None).unwrap();
    let notes =
        engine.search_knowledge(&SearchArgs { query: "fact number".into(), ..Default::default() }).unwrap();
    assert!(notes.results.iter().all(|hit| !hit.path.starts_with("Agent memory/")), "{notes:?}");
}

/// An apply a crash stopped after its archive, before its audit line, is
/// completed before a memory line joins the log: the log then reads the
/// proposal's line, then the entry's, and nothing is completed twice.
#[test]
fn an_interrupted_apply_is_completed_before_a_memory_line_is_appended() {
    use kb_mcp::engine::ApplyPoint;
    use kb_mcp::write::Step;
    let (_tmp, vault) = common::temp_vault();
    let engine = open(&vault);
    let id = common::propose_patch(&engine, "z/备份仓库.md", "created: 2024-03-15", "created: 2024-03-16");
    engine.set_apply_failpoint(Some(Box::new(|point| match point {
        ApplyPoint::Write(Step::Indexed) => Err(kb_mcp::error::Error::internal("crash")),
        _ => Ok(()),
    })));
    let crashed = engine.apply_proposal(&ApplyArgs { proposal_id: id.clone() }, Actor::Cli);
    assert!(crashed.is_err(), "{crashed:?}");
    engine.set_apply_failpoint(None);
    assert!(vault.join("inbox/_applying.json").exists(), "the crash left its journal");
    assert!(audit_lines(&vault).is_empty());

    remember(&engine, MemoryAbout::Vault, "Backups are checked monthly.", None).unwrap();
    let lines = audit_lines(&vault);
    assert_eq!(lines.len(), 2, "{lines:?}");
    assert_eq!(lines[0]["proposal_id"], id.as_str());
    assert_eq!(lines[0]["recovered"], true);
    assert_eq!(lines[1]["kind"], "memory");
    assert!(!vault.join("inbox/_applying.json").exists());
    // Nothing is left to complete: another remember and an apply attempt add no proposal line.
    remember(&engine, MemoryAbout::Vault, "Restores are drilled yearly.", None).unwrap();
    let again = engine.apply_proposal(&ApplyArgs { proposal_id: id.clone() }, Actor::Cli);
    assert!(again.is_err_and(|err| err.code == ErrorCode::ProposalNotPending));
    let lines = audit_lines(&vault);
    assert_eq!(lines.iter().filter(|line| line["proposal_id"] == id.as_str()).count(), 1, "{lines:?}");
}

/// A folder of the person's own that happens to bear the memory's name is
/// not silently lost: the overview says its notes are not served.
#[test]
fn notes_of_the_persons_own_in_the_memory_folder_are_named_in_the_overview() {
    let (_tmp, vault) = common::temp_vault();
    let engine = open(&vault);
    remember(&engine, MemoryAbout::Vault, "An entry of remember's own.", None).unwrap();
    assert!(engine.overview(Caller::Cli).unwrap().warnings.is_empty());
    common::put(&vault, "Agent memory/Reading list.md", "# Reading list\n");
    let warnings = engine.overview(Caller::Cli).unwrap().warnings;
    assert_eq!(warnings.len(), 1, "{warnings:?}");
    assert!(
        warnings[0].contains("1 note(s)") && warnings[0].contains("Agent memory/Reading list.md"),
        "{warnings:?}"
    );
    assert!(warnings[0].contains("[memory] folder"), "{warnings:?}");
}

#[test]
fn kb_toml_memory_keys_are_checked() {
    use kb_mcp::vault::VaultConfig;
    let config =
        VaultConfig::parse(Some("[memory]\nfolder = \"Notes/AI\"\nshare_person = [\"laptop\", \"phone\"]\n"))
            .unwrap();
    assert_eq!(config.policy.memory.as_deref(), Some("Notes/AI"));
    assert_eq!(config.memory.share_person, ["laptop", "phone"]);
    for bad in [
        "[memory]\nfolder = \"../x\"\n",
        "[memory]\nfolder = \"inbox/mem\"\n",
        "[vault]\nstandards = [\"docs\"]\n[memory]\nfolder = \"docs\"\n",
        "[memory]\nenabled = \"yes\"\n",
        "[memory]\nfolders = \"x\"\n",
        "[memory]\nfolder = \".git\"\n",
    ] {
        let err = VaultConfig::parse(Some(bad)).unwrap_err();
        assert_eq!(err.code, ErrorCode::InvalidArgument, "{bad}");
        assert!(err.message.contains("memory"), "{bad}: {}", err.message);
    }
}

/// Through the real binary over stdio: listed from `propose` up, never at
/// `read`; written, found, recalled and counted.
#[tokio::test(flavor = "multi_thread")]
async fn remember_over_stdio_from_the_propose_level_up() {
    let (_tmp, vault) = common::temp_vault();
    let reader = connect(&vault, "read").await;
    let names: Vec<String> =
        reader.list_tools(None).await.unwrap().tools.iter().map(|t| t.name.to_string()).collect();
    assert!(!names.contains(&"remember".to_owned()));
    let refused = call(&reader, "remember", json!({"about": "person", "text": "x"})).await.unwrap();
    assert_eq!(common::tool_error(&serde_json::to_value(&refused).unwrap())["code"], "permission_denied");
    reader.cancel().await.unwrap();

    let client = connect(&vault, "propose").await;
    let names: Vec<String> =
        client.list_tools(None).await.unwrap().tools.iter().map(|t| t.name.to_string()).collect();
    assert!(names.contains(&"remember".to_owned()));
    let done = call(
        &client,
        "remember",
        json!({"about": "person", "text": "Writes every note in Chinese first.", "category": "preference"}),
    )
    .await
    .unwrap();
    assert_ne!(done.is_error, Some(true), "{done:?}");
    let result = done.structured_content.unwrap();
    assert!(result["path"].as_str().unwrap().starts_with("Agent memory/person/local/"));
    let bad = call(&client, "remember", json!({"about": "../etc", "text": "x"})).await.unwrap();
    assert_eq!(common::tool_error(&serde_json::to_value(&bad).unwrap())["code"], "invalid_argument");
    assert!(bad.structured_content.is_none());

    let recalled =
        call(&client, "recall_context", json!({"topic": "which language does the person write notes in"}))
            .await
            .unwrap();
    let items = &recalled.structured_content.unwrap()["items"];
    assert_eq!(items[0]["memory"], "person", "{items}");
    let found = call(&client, "search_knowledge", json!({"query": "notes in Chinese"})).await.unwrap();
    let text = found.content[0].as_text().unwrap().text.clone();
    assert!(text.contains("[memory about the person]"), "{text}");
    let overview = call(&client, "get_vault_overview", json!({})).await.unwrap().structured_content.unwrap();
    assert_eq!(
        overview["memory"],
        json!({"folder": "Agent memory", "enabled": true, "person": 1, "vault": 0})
    );
    client.cancel().await.unwrap();
}
