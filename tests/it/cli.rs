//! The `kb-index` command line through the real binary (issue 13, "The person
//! who approves must see what they approve" and "A command line as direct as
//! ripgrep"): `inbox show`, `inbox list --diff` and the dry run print the full
//! diff, coloured only when asked or on a terminal; proposal ids by prefix;
//! messages addressed to the person; searching with several words, titles and
//! text together; short flags, `--limit` up to 1000, `--color`; no "Broken pipe"
//! when the reader leaves; times in the local time zone; exit codes.

#![allow(
    clippy::disallowed_methods,
    clippy::disallowed_types,
    reason = "the tests build and inspect vaults on disk"
)]

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use crate::common;
use kb_mcp::engine::types::{ProposeNewArgs, ProposePatchArgs};
use kb_mcp::engine::{Engine, EngineOptions};
use kb_mcp::vault::content_hash;
use kb_mcp::write::Edit;

/// A small vault: two notes under `z/`, the inbox at `inbox/`.
fn vault() -> (tempfile::TempDir, PathBuf) {
    let tmp = tempfile::tempdir().unwrap();
    let vault = tmp.path().join("vault");
    std::fs::create_dir_all(vault.join("z")).unwrap();
    std::fs::write(vault.join("kb.toml"), "[vault]\nnotes = [\"z\"]\ninbox = \"inbox\"\n").unwrap();
    std::fs::write(vault.join("z/alpha.md"), "# Alpha\n\nThe lighthouse keeper.\n").unwrap();
    std::fs::write(
        vault.join("z/lighthouse.md"),
        "# Lighthouse\n\nA tower by the sea.\n\nIts lamp turns all night.\n",
    )
    .unwrap();
    (tmp, vault)
}

fn engine(vault: &Path) -> Engine {
    Engine::open(&EngineOptions { vault: vault.to_owned(), index_dir: None }).unwrap()
}

/// Stages a patch of `z/alpha.md` that adds one line; returns its id.
fn propose_patch(vault: &Path) -> String {
    let base = content_hash(&std::fs::read(vault.join("z/alpha.md")).unwrap());
    let staged = engine(vault)
        .propose_note_patch(&ProposePatchArgs {
            path: "z/alpha.md".to_owned(),
            base_hash: base,
            reason: "say more".to_owned(),
            edits: vec![Edit::ReplaceAll {
                content: "# Alpha\n\nThe lighthouse keeper.\nA new line.\n".to_owned(),
            }],
        })
        .unwrap();
    staged.proposal_id
}

/// Stages a new note; returns its id.
fn propose_new(vault: &Path, title: &str) -> String {
    engine(vault)
        .propose_new_note(&ProposeNewArgs {
            title: title.to_owned(),
            body: "First line.\nSecond line.\n".to_owned(),
            reason: "worth keeping".to_owned(),
            ..ProposeNewArgs::default()
        })
        .unwrap()
        .proposal_id
}

fn kb_index(vault: &Path, args: &[&str]) -> (i32, String, String) {
    kb_index_env(vault, args, &[])
}

fn kb_index_env(vault: &Path, args: &[&str], env: &[(&str, &str)]) -> (i32, String, String) {
    let output = Command::new(env!("CARGO_BIN_EXE_kb-index"))
        .args(args)
        .arg("--vault")
        .arg(vault)
        .env_remove("NO_COLOR")
        .envs(env.iter().copied())
        .output()
        .unwrap();
    crate::common::outcome(output)
}

const PATCH_DIFF: [&str; 7] = [
    "--- a/z/alpha.md",
    "+++ b/z/alpha.md",
    "@@ -1,3 +1,4 @@",
    " # Alpha",
    " ",
    " The lighthouse keeper.",
    "+A new line.",
];

#[test]
fn issue_13_inbox_show_prints_the_whole_diff_plain_when_piped_and_coloured_when_asked() {
    let (_tmp, vault) = vault();
    let id = propose_patch(&vault);
    let (code, out, err) = kb_index(&vault, &["inbox", "show", &id[2..10]]);
    assert_eq!(code, 0, "{err}");
    let lines: Vec<&str> = out.lines().collect();
    assert_eq!(lines[0], format!("proposal  {id} (patch, pending)"));
    assert_eq!(lines[1], "target    z/alpha.md");
    assert_eq!(lines[3], "reason    say more");
    assert_eq!(lines[4], "checks    pass");
    assert_eq!(lines[5], "");
    assert_eq!(lines[6..], PATCH_DIFF, "{out}");
    assert!(!out.contains('\x1b'), "no colour when piped: {out:?}");

    let (_, out, _) = kb_index(&vault, &["inbox", "show", &id, "--color", "always"]);
    assert!(out.lines().any(|l| l == "\x1b[32m+A new line.\x1b[0m"), "{out:?}");
    assert!(out.lines().any(|l| l == "\x1b[36m@@ -1,3 +1,4 @@\x1b[0m"), "{out:?}");
    let (_, out, _) = kb_index_env(&vault, &["inbox", "show", &id, "--color", "auto"], &[]);
    assert!(!out.contains('\x1b'), "auto is plain when piped");

    // A new note is shown whole, every line added.
    let new = propose_new(&vault, "Keeper");
    let (code, out, _) = kb_index(&vault, &["inbox", "show", &new]);
    assert_eq!(code, 0);
    let at = out.lines().position(|l| l == "--- /dev/null").expect(&out);
    let diff: Vec<&str> = out.lines().skip(at).collect();
    assert_eq!(diff[1], "+++ b/z/Keeper.md");
    assert!(diff[2].starts_with("@@ -0,0 +1,"), "{out}");
    assert!(diff.contains(&"+First line.") && diff.contains(&"+Second line."), "{out}");
    assert!(diff[3..].iter().all(|l| l.starts_with('+')), "{out}");
}

/// A new note named like another note's alias takes that alias's links: the
/// linking notes do not change, so no diff shows it; `inbox show` says it
/// before the diff, and `inbox list --diff` too.
#[test]
fn inbox_show_lists_the_links_in_other_notes_a_new_note_takes() {
    let (_tmp, vault) = vault();
    std::fs::write(vault.join("z/keeper.md"), "---\naliases: [Warden]\n---\n# Keeper\n").unwrap();
    std::fs::write(vault.join("z/tower.md"), "# Tower\n\nThe [[Warden]] lives here.\n").unwrap();
    let id = propose_new(&vault, "Warden");
    let (code, out, err) = kb_index(&vault, &["inbox", "show", &id]);
    assert_eq!(code, 0, "{err}");
    let lines: Vec<&str> = out.lines().collect();
    assert_eq!(lines[5], "1 link in other notes will lead to another note:", "{out}");
    assert_eq!(lines[6], "    z/tower.md:3: [[Warden]] → z/Warden.md", "{out}");
    assert_eq!(lines[7], "", "{out}");
    assert_eq!(lines[8], "--- /dev/null", "{out}");
    let (_, out, _) = kb_index(&vault, &["inbox", "list", "--diff"]);
    assert!(out.contains("\n    z/tower.md:3: [[Warden]] → z/Warden.md\n--- /dev/null"), "{out}");
}

#[test]
fn issue_13_inbox_list_diff_and_the_dry_run_show_the_changes() {
    let (_tmp, vault) = vault();
    let id = propose_patch(&vault);
    let (code, out, _) = kb_index(&vault, &["inbox", "list"]);
    assert_eq!(code, 0);
    assert!(!out.contains("+A new line."), "no diff without --diff: {out}");
    let (code, out, _) = kb_index(&vault, &["inbox", "list", "--diff"]);
    assert_eq!(code, 0);
    let lines: Vec<&str> = out.lines().collect();
    assert_eq!(lines[0], format!("{id}  patch z/alpha.md  checks pass"));
    assert_eq!(lines[lines.len() - 7..], PATCH_DIFF, "{out}");

    let (code, out, _) = kb_index(&vault, &["inbox", "apply"]);
    assert_eq!(code, 0);
    let lines: Vec<&str> = out.lines().collect();
    assert_eq!(
        lines[0],
        format!("would apply {id}: change z/alpha.md (+1 -0 lines). Reason given: say more")
    );
    assert_eq!(lines[1..8], PATCH_DIFF, "{out}");
    assert_eq!(lines[8], "");
    assert_eq!(lines[9], "dry run: 1 proposal; apply one with `kb-index inbox apply --yes --only ID`");
}

#[test]
fn issue_13_proposal_ids_by_a_prefix_of_4_digits_with_or_without_p() {
    let (_tmp, vault) = vault();
    let id = propose_patch(&vault);
    for name in [&id[..6], &id[2..6], &id[2..10]] {
        let (code, out, err) = kb_index(&vault, &["inbox", "apply", "--only", name]);
        assert_eq!(code, 0, "{name}: {err}");
        assert!(out.starts_with(&format!("would apply {id}:")), "{name}: {out}");
    }
    let (code, _, err) = kb_index(&vault, &["inbox", "show", &id[..5]]);
    assert_eq!(code, 2);
    assert!(err.contains("at least 4 hex digits"), "{err}");

    // An id naming nothing pending: exit 2 and a message, not an empty dry run.
    let (code, out, err) = kb_index(&vault, &["inbox", "apply", "--only", "p_ffff0000"]);
    assert_eq!((code, out.as_str()), (2, ""), "{err}");
    assert!(err.contains("no pending proposal has the id, id prefix or slug \"p_ffff0000\""), "{err}");
    assert!(err.contains("hint: `kb-index inbox list`"), "{err}");

    // Two proposals the name fits: both are listed, with their targets.
    let one = propose_new(&vault, "Twin");
    let two = propose_new(&vault, "Twin");
    let (code, _, err) = kb_index(&vault, &["inbox", "show", "Twin"]);
    assert_eq!(code, 2);
    let (first, second) = if one < two { (&one, &two) } else { (&two, &one) };
    assert!(
        err.contains(&format!("names 2 pending proposals: {first} (z/Twin.md), {second} (z/Twin.md)")),
        "{err}"
    );
}

#[test]
fn issue_13_a_stale_patch_tells_the_person_what_to_do() {
    let (_tmp, vault) = vault();
    let id = propose_patch(&vault);
    std::fs::write(vault.join("z/alpha.md"), "# Alpha\n\nEdited by hand.\n").unwrap();
    let (code, out, _) = kb_index(&vault, &["inbox", "apply", "--only", &id]);
    assert_eq!(code, 1);
    assert!(
        out.contains("    because the note changed, moved or was deleted after the proposal was made"),
        "{out}"
    );
    assert!(out.contains("note: z/alpha.md changed after this proposal was made"), "{out}");
    let (code, _, err) = kb_index(&vault, &["inbox", "apply", "--yes", "--only", &id]);
    assert_eq!(code, 1, "{err}");
    assert!(!err.contains("read_note"), "no hint meant for an agent: {err}");
    assert!(err.contains(&format!("`kb-index inbox reject {} --reason", &id[2..10])), "{err}");
}

#[test]
fn issue_13_search_takes_every_word_and_finds_titles_and_text_together() {
    let (_tmp, vault) = vault();
    // Every word is the query; the default shows text snippets beside title matches;
    // --titles narrows to the title ranking (no snippets), --content to the text.
    let (code, out, err) = kb_index(&vault, &["search", "lighthouse", "keeper"]);
    assert_eq!(code, 0, "{err}");
    let lines: Vec<&str> = out.lines().collect();
    assert_eq!(lines[0], " 1. z/alpha.md  Alpha");
    assert_eq!(lines[1], "      3: The lighthouse keeper.", "piped: plain text");
    assert_eq!(
        *lines.last().unwrap(),
        "2 notes shown; 2 by title, 2 by text; ranked by words only (building)"
    );
    let (code, out, _) = kb_index(&vault, &["search", "keeper", "-c", "-n", "1000"]);
    assert_eq!(code, 0);
    assert_eq!(
        out.lines().last(),
        Some("1 of 1 matching note by text; ranked by words only (building)"),
        "{out}"
    );
    let (code, out, _) = kb_index(&vault, &["search", "lamp", "--titles"]);
    assert_eq!(
        (code, out.as_str()),
        (
            0,
            " 1. z/lighthouse.md  Lighthouse\n1 of 1 matching note by title; ranked by words only (building)\n"
        )
    );
    let (code, out, _) = kb_index(&vault, &["search", "qwertyzzz"]);
    assert_eq!(
        (code, out.as_str()),
        (1, "0 notes shown; 0 by title, 0 by text; ranked by words only (building)\n"),
        "nothing matched"
    );
    let (code, out, _) = kb_index(&vault, &["search", "lighthouse", "-l"]);
    assert_eq!((code, out.as_str()), (0, "z/lighthouse.md\nz/alpha.md\n"));
    let (code, out, _) = kb_index(&vault, &["search", "lighthouse", "-j"]);
    assert_eq!(code, 0);
    let json: serde_json::Value = serde_json::from_str(&out).unwrap();
    assert_eq!(json["results"][0]["path"], "z/lighthouse.md");
    let (code, out, _) = kb_index(&vault, &["search", "lighthouse", "--color", "always"]);
    assert_eq!(code, 0);
    assert!(out.contains("\x1b[35mz/lighthouse.md\x1b[0m"), "{out:?}");
    assert!(out.contains("\x1b[32m1\x1b[0m: # \x1b[1;31mLighthouse\x1b[0m"), "{out:?}");
    assert_eq!(kb_index(&vault, &["search", "x", "-n", "1001"]).0, 2, "bad input");
    assert_eq!(kb_index(&vault, &["search", "x", "--titles", "--content"]).0, 2, "one or the other");
}

#[test]
fn issue_13_no_broken_pipe_message_when_the_reader_leaves() {
    let (_tmp, vault) = vault();
    for n in 0..400 {
        let text = format!("# Note {n}\n\nneedle {}\n", "filler words ".repeat(20));
        std::fs::write(vault.join(format!("z/note {n}.md")), text).unwrap();
    }
    let mut child = Command::new(env!("CARGO_BIN_EXE_kb-index"))
        .args(["search", "needle", "--json", "-n", "1000", "--vault"])
        .arg(&vault)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut first = String::new();
    BufReader::new(child.stdout.take().unwrap()).read_line(&mut first).unwrap();
    // The reader is dropped here while the output (well over a pipe's 64 KiB) is unwritten.
    let output = child.wait_with_output().unwrap();
    assert_eq!(first, "{\n");
    let err = String::from_utf8_lossy(&output.stderr);
    assert!(!err.contains("Broken pipe") && !err.contains("cannot write"), "{err}");
    assert_eq!(output.status.code(), Some(0));
}

#[test]
fn issue_13_times_for_people_are_local() {
    let (_tmp, vault) = vault();
    propose_patch(&vault);
    assert_eq!(kb_index(&vault, &["build"]).0, 0);
    let (_, out, _) = kb_index_env(&vault, &["inbox", "list"], &[("TZ", "Asia/Shanghai")]);
    let line = out.lines().find(|l| l.starts_with("    proposed ")).expect(&out);
    assert!(line.ends_with(" +08:00"), "{line}");
    let (_, out, _) = kb_index_env(&vault, &["status"], &[("TZ", "Asia/Shanghai")]);
    let line = out.lines().find(|l| l.starts_with("built ")).expect(&out);
    assert!(line.ends_with(" +08:00"), "{line}");
}

#[test]
fn issue_13_help_describes_the_command_line_with_examples_in_order() {
    let output = Command::new(env!("CARGO_BIN_EXE_kb-index")).arg("--help").output().unwrap();
    let help = String::from_utf8_lossy(&output.stdout);
    assert!(
        help.starts_with(
            "Search a Markdown vault, see its state, and review the changes AI agents propose to it."
        ),
        "{help}"
    );
    assert!(help.contains("Examples:\n  kb-index search"), "{help}");
    let order: Vec<usize> = ["  search ", "  status ", "  build ", "  inbox ", "  eval "]
        .iter()
        .map(|name| help.find(name).expect(name))
        .collect();
    assert!(order.windows(2).all(|w| w[0] < w[1]), "{help}");
    for sub in [&["search", "--help"][..], &["inbox", "--help"]] {
        let output = Command::new(env!("CARGO_BIN_EXE_kb-index")).args(sub).output().unwrap();
        assert!(String::from_utf8_lossy(&output.stdout).contains("Examples:"), "{sub:?}");
    }
}

/// [`vault`] plus a note linking to `z/lighthouse.md` in three forms.
fn linked_vault() -> (tempfile::TempDir, PathBuf) {
    let (tmp, vault) = vault();
    std::fs::write(
        vault.join("z/gamma.md"),
        "# Gamma\n\nSee [[lighthouse]], [[lighthouse|the tower]] and [the lamp](lighthouse.md).\n",
    )
    .unwrap();
    (tmp, vault)
}

/// The ids of the pending proposals, as `inbox list --json` gives them.
fn pending_ids(vault: &Path) -> Vec<String> {
    let (code, out, err) = kb_index(vault, &["inbox", "list", "--json"]);
    assert_eq!(code, 0, "{err}");
    let listed: serde_json::Value = serde_json::from_str(&out).unwrap();
    listed["proposals"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p["proposal_id"].as_str().unwrap().to_owned())
        .collect()
}

#[test]
fn issue_14_mv_stages_a_move_and_with_yes_applies_it_rewriting_links() {
    let (_tmp, vault) = linked_vault();
    let before = std::fs::read_to_string(vault.join("z/gamma.md")).unwrap();
    let (code, out, err) =
        kb_index(&vault, &["mv", "z/lighthouse.md", "z/tower.md", "--reason", "a better name"]);
    assert_eq!(code, 0, "{err}");
    let ids = pending_ids(&vault);
    assert_eq!(ids.len(), 1, "{out}");
    let lines: Vec<&str> = out.lines().collect();
    assert_eq!(
        lines[0],
        format!("staged {}: move z/lighthouse.md → z/tower.md, rewrite 3 links in 1 note", ids[0]),
        "{out}"
    );
    assert_eq!(lines[1], "    z/lighthouse.md -> z/tower.md");
    assert_eq!(lines[2], "3 links rewritten in 1 note");
    assert!(lines[3].starts_with("nothing changed yet"), "{out}");
    // Staging changed nothing in the vault.
    assert!(vault.join("z/lighthouse.md").exists());
    assert_eq!(std::fs::read_to_string(vault.join("z/gamma.md")).unwrap(), before);

    // The person reviews it: what it does, then every file's diff.
    let (code, show, err) = kb_index(&vault, &["inbox", "show", &ids[0][2..10]]);
    assert_eq!(code, 0, "{err}");
    assert!(show.starts_with(&format!("proposal  {} (move, pending)\n", ids[0])), "{show}");
    assert!(show.contains("reason    a better name\n"), "{show}");
    assert!(
        show.contains("change    move z/lighthouse.md → z/tower.md, rewrite 3 links in 1 note\n"),
        "{show}"
    );
    assert!(show.contains("rename from z/lighthouse.md\nrename to z/tower.md\n"), "{show}");
    assert!(show.contains("+See [[tower]], [[tower|the tower]] and [the lamp](tower.md).\n"), "{show}");

    // Reject it, then move with --yes: staged and applied in one go.
    let (code, _, err) = kb_index(&vault, &["inbox", "reject", &ids[0], "--reason", "again with --yes"]);
    assert_eq!(code, 0, "{err}");
    let (code, out, err) = kb_index(&vault, &["mv", "z/lighthouse.md", "z/tower.md", "--yes"]);
    assert_eq!(code, 0, "{out}{err}");
    // The person reads what moved and what was rewritten, not the plan's hash.
    let applied = out.lines().find(|l| l.starts_with("applied p_")).unwrap_or_else(|| panic!("{out}"));
    assert!(applied.contains("(moved z/lighthouse.md -> z/tower.md, rewrote 1 other note)"), "{applied}");
    assert!(!applied.contains("sha256:"), "{applied}");
    assert!(!vault.join("z/lighthouse.md").exists());
    assert!(std::fs::read_to_string(vault.join("z/tower.md")).unwrap().contains("aliases: [lighthouse]"));
    assert_eq!(
        std::fs::read_to_string(vault.join("z/gamma.md")).unwrap(),
        "# Gamma\n\nSee [[tower]], [[tower|the tower]] and [the lamp](tower.md).\n"
    );
    assert!(pending_ids(&vault).is_empty());

    // --no-alias leaves the renamed note's text alone.
    let (code, _, err) = kb_index(&vault, &["mv", "z/alpha.md", "z/beta.md", "--no-alias", "--yes"]);
    assert_eq!(code, 0, "{err}");
    assert_eq!(
        std::fs::read_to_string(vault.join("z/beta.md")).unwrap(),
        "# Alpha\n\nThe lighthouse keeper.\n"
    );
}

#[test]
fn issue_14_rm_stages_a_delete_listing_the_links_that_break() {
    let (_tmp, vault) = linked_vault();
    let (code, out, err) = kb_index(&vault, &["rm", "z/lighthouse.md", "--reason", "obsolete"]);
    assert_eq!(code, 0, "{err}");
    let ids = pending_ids(&vault);
    assert_eq!(ids.len(), 1, "{out}");
    let lines: Vec<&str> = out.lines().collect();
    assert_eq!(
        lines[0],
        format!("staged {}: delete z/lighthouse.md (to the inbox's trash), 3 links will break", ids[0])
    );
    assert_eq!(lines[1], "3 links will break:");
    assert!(lines[2].starts_with("    z/gamma.md:3: [[lighthouse]]"), "{out}");
    assert!(vault.join("z/lighthouse.md").exists(), "staging deletes nothing");

    let (code, show, err) = kb_index(&vault, &["inbox", "show", &ids[0]]);
    assert_eq!(code, 0, "{err}");
    assert!(show.starts_with(&format!("proposal  {} (delete, pending)\n", ids[0])), "{show}");
    assert!(
        show.contains("change    delete z/lighthouse.md (to the inbox's trash), 3 links will break\n"),
        "{show}"
    );
    assert!(show.contains("delete z/lighthouse.md"), "{show}");

    let (code, out, err) = kb_index(&vault, &["inbox", "apply", "--yes", "--only", &ids[0]]);
    assert_eq!(code, 0, "{out}{err}");
    assert!(out.contains("(moved z/lighthouse.md to the inbox's trash)"), "{out}");
    assert!(!vault.join("z/lighthouse.md").exists());

    // rm --yes applies at once; the note goes to the trash, not away.
    let (code, out, err) = kb_index(&vault, &["rm", "z/alpha.md", "--yes"]);
    assert_eq!(code, 0, "{out}{err}");
    assert!(out.contains("no link will break"), "{out}");
    assert!(!vault.join("z/alpha.md").exists());
    let trashed: Vec<String> = walk(&vault.join("inbox/trash"));
    assert!(trashed.iter().any(|p| p.ends_with("alpha.md")), "{trashed:?}");

    // A link another note of the same name will answer is not said to break.
    for (path, text) in [("z/one/dup.md", "one\n"), ("z/two/x/dup.md", "two\n"), ("z/dl.md", "see [[dup]]\n")]
    {
        std::fs::create_dir_all(vault.join(path).parent().unwrap()).unwrap();
        std::fs::write(vault.join(path), text).unwrap();
    }
    let (code, out, err) = kb_index(&vault, &["rm", "z/one/dup.md"]);
    assert_eq!(code, 0, "{out}{err}");
    assert!(
        out.contains(", 0 links will break, 1 link will lead to another note\nno link will break\n"),
        "{out}"
    );
    assert!(
        out.contains("1 link will lead to another note instead:\n    z/dl.md:1: [[dup]] → z/two/x/dup.md\n"),
        "{out}"
    );
}

/// Every file under `dir`, as paths.
fn walk(dir: &Path) -> Vec<String> {
    let mut found = Vec::new();
    for entry in std::fs::read_dir(dir).into_iter().flatten().flatten() {
        let path = entry.path();
        if path.is_dir() {
            found.extend(walk(&path));
        } else {
            found.push(path.display().to_string());
        }
    }
    found
}

#[test]
fn issue_14_mv_and_rm_refuse_bad_input_with_exit_2_and_stage_nothing() {
    let (_tmp, vault) = linked_vault();
    let (code, _, err) = kb_index(&vault, &["mv", "z/alpha.md"]);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("<TO>"), "{err}");
    let (code, _, err) = kb_index(&vault, &["mv"]);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("<FROM>"), "{err}");

    let (code, _, err) = kb_index(&vault, &["mv", "z/alpha.md", "z/lighthouse.md"]);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("target_exists: z/lighthouse.md already exists"), "{err}");
    assert!(err.contains("hint: choose a free path"), "{err}");

    let (code, _, err) = kb_index(&vault, &["mv", "z/nope.md", "z/new.md"]);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("z/nope.md"), "{err}");
    assert!(err.contains("kb-index ls"), "a hint for the person, not an agent: {err}");

    let (code, _, err) = kb_index(&vault, &["rm", "z/nope.md"]);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("z/nope.md"), "{err}");

    let (code, _, err) = kb_index(&vault, &["mv", "z/alpha.md", "z/alpha.txt"]);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains(".md"), "{err}");

    assert!(pending_ids(&vault).is_empty());
}

/// Issue 15, "what changed since I was last here", for a person: `kb-index
/// status` lists the changes the index remembers, who made them, and the cursor
/// to pass as `--since` next time; with it, only what changed after.
#[test]
fn issue_15_status_shows_what_changed_and_since_a_cursor() {
    let (_tmp, vault) = vault();
    assert_eq!(kb_index(&vault, &["build"]).0, 0);
    std::fs::write(vault.join("z/beta.md"), "# Beta\n\nA new note.\n").unwrap();
    std::fs::write(vault.join("z/alpha.md"), "# Alpha\n\nThe keeper, changed.\n").unwrap();
    assert_eq!(kb_index(&vault, &["build"]).0, 0);

    let (code, out, err) = kb_index(&vault, &["status"]);
    assert_eq!(code, 0, "{out}{err}");
    assert!(
        out.contains(
            "changes    recently (as far back as the index remembers): 1 added, 1 changed, 0 removed"
        ),
        "{out}"
    );
    assert!(out.contains("           added    z/beta.md (outside)\n"), "{out}");
    assert!(out.contains("           changed  z/alpha.md (outside)\n"), "{out}");
    let cursor = out
        .lines()
        .find_map(|line| line.split("kb-index status --since ").nth(1))
        .unwrap_or_else(|| panic!("no cursor in {out}"))
        .trim()
        .to_owned();

    std::fs::remove_file(vault.join("z/beta.md")).unwrap();
    assert_eq!(kb_index(&vault, &["build"]).0, 0);
    let (code, out, err) = kb_index(&vault, &["status", "--since", &cursor]);
    assert_eq!(code, 0, "{out}{err}");
    assert!(out.contains("changes    since the cursor given: 0 added, 0 changed, 1 removed"), "{out}");
    assert!(out.contains("           removed  z/beta.md (outside)\n"), "{out}");
    assert!(!out.contains("z/alpha.md"), "alpha changed before the cursor: {out}");

    let (code, _, err) = kb_index(&vault, &["status", "--since", "nonsense"]);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("not a cursor"), "{err}");
}

/// Issue 13: a hit found only by lone Chinese characters of a short word is
/// weak. The CLI marks it, counts it, and ranks it after every real match in
/// the fused search as well as in `--titles` and `--content`.
#[test]
fn issue_13_weak_hits_are_marked_and_ranked_last_at_the_command_line() {
    let tmp = tempfile::tempdir().unwrap();
    let vault = tmp.path().join("vault");
    std::fs::create_dir_all(&vault).unwrap();
    for (name, text) in [
        ("灵感.md", "# 灵感\n\n想到什么就随手写在卡片上。\n"),
        ("日记.md", "# 日记\n\n每天晚上写日记，记下发生的事。\n"),
        ("记账.md", "# 记账\n\n记账记账记账，每一笔都记。\n"),
        ("其他.md", "# 其他\n\n无关的内容。\n"),
    ] {
        std::fs::write(vault.join(name), text).unwrap();
    }
    let (code, out, err) = kb_index(&vault, &["search", "随手记"]);
    assert_eq!(code, 0, "{err}");
    let ranked: Vec<&str> = out.lines().filter(|line| line.starts_with(' ') && line.contains(". ")).collect();
    assert!(ranked[0].starts_with(" 1. 灵感.md  灵感") && !ranked[0].contains("weak"), "{out}");
    assert_eq!(ranked.len(), 3, "{out}");
    for line in &ranked[1..] {
        assert!(line.ends_with("  (weak: single characters only)"), "{out}");
    }
    assert!(out.trim_end().ends_with("; 2 weak (single characters only)"), "{out}");
    assert!(!out.contains("其他"), "{out}");
    for narrow in ["--titles", "--content"] {
        let (_, out, _) = kb_index(&vault, &["search", "随手记", narrow]);
        let marks: Vec<bool> = out
            .lines()
            .filter(|line| line.starts_with(' ') && line.contains(". "))
            .map(|line| line.contains("(weak"))
            .collect();
        assert!(marks.windows(2).all(|pair| pair[0] <= pair[1]), "{narrow}: weak hits last: {out}");
        assert!(marks.contains(&true), "{narrow}: {out}");
    }
    // The JSON says it too, and a note both searches found weakly stays weak.
    let (_, out, _) = kb_index(&vault, &["search", "随手记", "--json"]);
    let json: serde_json::Value = serde_json::from_str(&out).unwrap();
    let weak: Vec<(&str, bool)> = json["results"]
        .as_array()
        .unwrap()
        .iter()
        .map(|hit| (hit["path"].as_str().unwrap(), hit["weak"].as_bool().unwrap_or(false)))
        .collect();
    assert_eq!(weak[0], ("灵感.md", false), "{out}");
    assert!(weak[1..].iter().all(|(_, weak)| *weak), "{out}");
}

/// `kb-index mv` of a note a pending patch changes says so before anything is
/// applied, and `inbox show` of the patch names the move: whichever is applied
/// first makes the other fail its checks.
#[test]
fn a_move_and_a_patch_of_one_note_each_name_the_other() {
    let (_tmp, vault) = vault();
    let patch = propose_patch(&vault);
    let (code, out, err) = kb_index(&vault, &["--color", "never", "mv", "z/alpha.md", "z/beta.md"]);
    assert_eq!(code, 0, "{err}");
    assert!(
        out.contains("1 other pending proposal touches the same notes; once either is applied, the other fails its checks:")
            && out.contains(&format!("    {patch} change z/alpha.md (+1 -0 lines) (z/alpha.md)")),
        "{out}"
    );
    let (code, out, err) = kb_index(&vault, &["--color", "never", "inbox", "show", &patch]);
    assert_eq!(code, 0, "{err}");
    assert!(
        out.contains("1 other pending proposal touches") && out.contains("move z/alpha.md → z/beta.md"),
        "{out}"
    );
    // A proposal touching other notes names nothing.
    let new = propose_new(&vault, "Harbour");
    let (_, out, _) = kb_index(&vault, &["--color", "never", "inbox", "show", &new]);
    assert!(!out.contains("other pending proposal"), "{out}");
}

/// Issue 34, "first hour": `kb-index search --folder Nope` printed nothing but
/// "0 notes shown", as if the folder held no match; the tools did the same
/// with `folder`. A folder that does not exist is `not_found` naming it, for
/// the searches as for `ls` and `audit`.
#[test]
fn issue_34_a_folder_that_does_not_exist_is_an_error_naming_it() {
    let (_tmp, vault) = vault();
    for args in [
        &["search", "lighthouse", "--folder", "z/Nope"][..],
        &["search", "lighthouse", "--titles", "--folder", "z/Nope"],
        &["search", "lighthouse", "--content", "--folder", "z/Nope"],
        &["ls", "z/Nope"],
        &["audit", "z/Nope"],
    ] {
        let (code, out, err) = kb_index(&vault, args);
        assert_eq!(code, 2, "{args:?}: {out}{err}");
        assert!(err.contains("not_found") && err.contains("Nope"), "{args:?}: {err}");
        assert!(err.contains("kb-index ls"), "{args:?} says how to see the folders: {err}");
    }
    let (code, out, err) = kb_index(&vault, &["search", "lighthouse", "--folder", "z"]);
    assert_eq!(code, 0, "{err}");
    assert!(out.contains("z/lighthouse.md"), "{out}");
}

/// Issue 34, "first hour": piped `kb-index search` marked matches with `**`,
/// which mixed with the notes' own bold (`A **bold claim** about the
/// **lighthouse**`): a program could not tell them apart. Piped, snippets are
/// the note's text as written; `--marks` keeps the marks; with colour, matches
/// are coloured and the note's own `**` stays.
#[test]
fn issue_34_piped_search_prints_the_notes_text_without_match_marks() {
    let (_tmp, vault) = vault();
    std::fs::write(vault.join("z/bold.md"), "# Bold\n\nA **bold claim** about the lighthouse.\n").unwrap();
    let snippet = |args: &[&str]| {
        let (code, out, err) = kb_index(&vault, args);
        assert_eq!(code, 0, "{err}");
        out.lines().find(|line| line.contains("bold claim")).expect(&out).trim_start().to_owned()
    };
    assert_eq!(snippet(&["search", "lighthouse", "-c"]), "3: A **bold claim** about the lighthouse.");
    assert_eq!(
        snippet(&["search", "lighthouse", "-c", "--marks"]),
        "3: A **bold claim** about the **lighthouse**."
    );
    assert_eq!(
        snippet(&["search", "lighthouse", "-c", "--color", "always"]),
        "\x1b[32m3\x1b[0m: A **bold claim** about the \x1b[1;31mlighthouse\x1b[0m."
    );
    let (_, out, _) = kb_index(&vault, &["search", "lighthouse", "-c", "-j"]);
    assert!(out.contains("about the **lighthouse**."), "JSON keeps the tools' marks: {out}");
}

/// Issue 34: `kb-index inbox list` and `kb-index status` print a line per
/// conflict copy (a file an apply kept apart because it may hold the person's
/// save): the copy, its note, and what to do with it.
#[test]
fn issue_34_inbox_list_and_status_name_each_conflict_copy_and_what_to_do() {
    let (_tmp, vault) = vault();
    let (_, out, _) = kb_index(&vault, &["inbox", "list"]);
    assert!(!out.contains("conflict"), "{out}");
    let folder = vault.join("inbox/conflicts/2026-12-06/z");
    std::fs::create_dir_all(&folder).unwrap();
    std::fs::write(folder.join("alpha.conflict-1a2b3c4d.md"), "# Alpha\n\nMy own edit.\n").unwrap();
    let line = "    inbox/conflicts/2026-12-06/z/alpha.conflict-1a2b3c4d.md (of z/alpha.md): compare it with the \
                note, keep what you want in the note, then delete the copy";
    for args in [&["inbox", "list"][..], &["status"]] {
        let (_, out, err) = kb_index(&vault, args);
        assert!(out.lines().any(|l| l == line), "{args:?}: {out}{err}");
        assert!(
            out.contains("1 conflict copy: files an apply kept apart because they may hold a save of yours"),
            "{out}"
        );
    }
    let (_, out, _) = kb_index(&vault, &["inbox", "list", "--json"]);
    let json: serde_json::Value = serde_json::from_str(&out).unwrap();
    assert_eq!(json["conflict_copies"]["copies"][0]["note"], "z/alpha.md", "{json}");
}

// ---------------------------------------------------------------------------
// Issue 36: the review page (`kb-index review`)

/// A running `kb-index review`: its port and one-time secret.
struct ReviewServer {
    child: std::process::Child,
    port: u16,
    secret: String,
    /// Its stdout, kept open: the page stops when it cannot write its lines.
    _stdout: BufReader<std::process::ChildStdout>,
}

impl Drop for ReviewServer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl ReviewServer {
    fn start(vault: &Path) -> ReviewServer {
        let mut child = Command::new(env!("CARGO_BIN_EXE_kb-index"))
            .args(["review", "--vault"])
            .arg(vault)
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let mut stdout = BufReader::new(child.stdout.take().unwrap());
        let (mut line, mut second) = (String::new(), String::new());
        stdout.read_line(&mut line).unwrap();
        stdout.read_line(&mut second).unwrap();
        assert!(second.contains("Ctrl-C"), "{second}");
        let url = line.trim().strip_prefix("Review page: ").unwrap_or_else(|| panic!("{line}"));
        let rest = url.strip_prefix("http://127.0.0.1:").unwrap();
        let (port, secret) = rest.split_once("/#secret=").unwrap();
        ReviewServer { child, port: port.parse().unwrap(), secret: secret.to_owned(), _stdout: stdout }
    }

    /// One HTTP/1.1 request: its status, headers (lowercase names) and body.
    fn request(
        &self,
        method: &str,
        path: &str,
        headers: &[(&str, &str)],
        body: &str,
    ) -> (u16, String, String) {
        use std::io::{Read, Write};
        let mut stream = std::net::TcpStream::connect(("127.0.0.1", self.port)).unwrap();
        let mut head =
            format!("{method} {path} HTTP/1.1\r\nConnection: close\r\nContent-Length: {}\r\n", body.len());
        if !headers.iter().any(|(name, _)| name.eq_ignore_ascii_case("host")) {
            head.push_str(&format!("Host: 127.0.0.1:{}\r\n", self.port));
        }
        for (name, value) in headers {
            head.push_str(&format!("{name}: {value}\r\n"));
        }
        stream.write_all(format!("{head}\r\n{body}").as_bytes()).unwrap();
        // A refusal may come before the body is read, and the close after it
        // then resets the connection: what arrived before the reset is the answer.
        let mut answer = Vec::new();
        let mut chunk = [0u8; 8192];
        loop {
            match stream.read(&mut chunk) {
                Ok(0) => break,
                Ok(read) => answer.extend_from_slice(&chunk[..read]),
                Err(err) if err.kind() == std::io::ErrorKind::ConnectionReset && !answer.is_empty() => break,
                Err(err) => panic!("{method} {path}: {err}"),
            }
        }
        let answer = String::from_utf8(answer).unwrap();
        let (head, body) = answer.split_once("\r\n\r\n").unwrap();
        let status = head.split(' ').nth(1).unwrap().parse().unwrap();
        (status, head.to_ascii_lowercase(), body.to_owned())
    }

    fn origin(&self) -> String {
        format!("http://127.0.0.1:{}", self.port)
    }
}

/// The page serves the card's view byte for byte, answers only its own
/// `Host`, trades its one-time secret once for a session, lists and reviews
/// the pending proposals, and applies or rejects only on a POST from its
/// own origin carrying the page's token; the audit line says `via: review_page`.
#[test]
fn issue36_the_review_page_is_safe_to_leave_open_and_applies_on_a_click() {
    let (_tmp, vault) = vault();
    let patch = propose_patch(&vault);
    let server = ReviewServer::start(&vault);
    let origin = server.origin();

    let (status, head, body) = server.request("GET", "/", &[], "");
    assert_eq!(status, 200);
    assert_eq!(body, kb_mcp::review::VIEW_HTML, "the page is the card's view, byte for byte");
    assert!(head.contains("content-security-policy: default-src 'none'"), "{head}");
    assert_eq!(server.request("GET", "/", &[("Host", "evil.example")], "").0, 403, "a rebound name");
    assert_eq!(server.request("GET", "/api/proposals", &[], "").0, 401, "no session");
    let secret = format!("{{\"secret\":\"{}\"}}", server.secret);
    assert_eq!(server.request("POST", "/api/session", &[], &secret).0, 403, "a POST without an Origin");
    let evil = [("Origin", "http://evil.example")];
    assert_eq!(server.request("POST", "/api/session", &evil, &secret).0, 403, "a foreign Origin");
    let ours = [("Origin", origin.as_str())];
    assert_eq!(server.request("POST", "/api/session", &ours, "{\"secret\":\"00\"}").0, 401, "a wrong secret");

    let (status, head, body) = server.request("POST", "/api/session", &ours, &secret);
    assert_eq!(status, 200, "{body}");
    let token =
        serde_json::from_str::<serde_json::Value>(&body).unwrap()["token"].as_str().unwrap().to_owned();
    let cookie = head
        .lines()
        .find_map(|line| line.strip_prefix("set-cookie: "))
        .unwrap_or_else(|| panic!("{head}"))
        .split(';')
        .next()
        .unwrap()
        .to_owned();
    assert!(head.contains("httponly") && head.contains("samesite=strict"), "{head}");
    assert_eq!(server.request("POST", "/api/session", &ours, &secret).0, 401, "the secret works once");

    let session = [("Cookie", cookie.as_str())];
    let (status, _, body) = server.request("GET", "/api/proposals", &session, "");
    assert_eq!(status, 200);
    assert!(body.contains(&patch), "{body}");
    let (status, _, body) =
        server.request("GET", &format!("/api/proposals/{patch}?file_limit=5"), &session, "");
    assert_eq!(status, 200, "{body}");
    let review: serde_json::Value = serde_json::from_str(&body).unwrap();
    assert_eq!((review["applicable"].as_bool(), review["files_total"].as_u64()), (Some(true), Some(1)));
    assert!(review["files"][0]["diff"].as_str().unwrap().contains("+A new line."));

    let apply = format!("/api/proposals/{patch}/apply");
    let before = std::fs::read_to_string(vault.join("z/alpha.md")).unwrap();
    let no_token = [("Cookie", cookie.as_str()), ("Origin", origin.as_str())];
    assert_eq!(server.request("POST", &apply, &no_token, "{}").0, 403, "a forged POST without the token");
    let forged =
        [("Cookie", cookie.as_str()), ("Origin", "http://evil.example"), ("X-KB-Token", token.as_str())];
    assert_eq!(server.request("POST", &apply, &forged, "{}").0, 403, "the token from another site");
    assert_eq!(std::fs::read_to_string(vault.join("z/alpha.md")).unwrap(), before, "nothing changed");
    let clicked = [("Cookie", cookie.as_str()), ("Origin", origin.as_str()), ("X-KB-Token", token.as_str())];
    let (status, _, body) = server.request("POST", &apply, &clicked, "{}");
    assert_eq!(status, 200, "{body}");
    assert!(std::fs::read_to_string(vault.join("z/alpha.md")).unwrap().contains("A new line."));
    let audit = std::fs::read_to_string(vault.join("inbox/_applied.jsonl")).unwrap();
    let line: serde_json::Value = serde_json::from_str(audit.lines().last().unwrap()).unwrap();
    assert_eq!((line["by"].as_str(), line["via"].as_str()), (Some("cli"), Some("review_page")), "{audit}");
    let (status, _, body) = server.request("POST", &apply, &clicked, "{}");
    assert_eq!(status, 409, "applied already: {body}");

    let new = propose_new(&vault, "Not wanted");
    let (_, _, body) = server.request("GET", "/api/proposals", &session, "");
    assert!(body.contains(&new), "a proposal staged while the page is open is listed: {body}");
    let reject = format!("/api/proposals/{new}/reject");
    assert_eq!(server.request("POST", &reject, &clicked, "{\"reason\":\" \"}").0, 400, "a reason is needed");
    let (status, _, body) = server.request("POST", &reject, &clicked, "{\"reason\":\"not now\"}");
    assert_eq!(status, 200, "{body}");
    assert!(body.contains("rejected"), "{body}");
    assert_eq!(server.request("GET", "/elsewhere", &session, "").0, 404);
}

/// Issue 40: `kb-index status` shows each server running on the vault with
/// its calls per tool (what the server publishes in its index folder), and
/// forgets a server killed without a chance to clean up.
#[test]
fn status_shows_the_running_servers_calls_and_forgets_a_killed_one() {
    let (_tmp, vault) = common::temp_vault();
    let mut server = common::RawStdio::start(&vault, "read", serde_json::json!({}));
    let pid = server.pid();
    for (id, query) in [(2, "备份"), (3, "sync")] {
        server.send(
            &serde_json::json!({"jsonrpc": "2.0", "id": id, "method": "tools/call",
                "params": {"name": "search_knowledge", "arguments": {"query": query}}})
            .to_string(),
        );
        assert!(server.next()["result"]["structuredContent"]["results"].is_array());
    }
    let shown = format!("server     pid {pid} (stdio)");
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(20);
    let out = loop {
        let (_, out, err) = kb_index(&vault, &["status"]);
        let counted = out.lines().any(|l| l.contains("search_knowledge") && l.contains("calls       2"));
        if out.contains(&shown) && counted {
            break out;
        }
        assert!(std::time::Instant::now() < deadline, "no server with 2 searches in:\n{out}{err}");
        std::thread::sleep(std::time::Duration::from_millis(200));
    };
    assert!(out.contains("watcher on"), "{out}");
    let (_, json, _) = kb_index(&vault, &["status", "--json"]);
    let json: serde_json::Value = serde_json::from_str(&json).unwrap();
    let published = &json["servers"][0];
    assert_eq!(
        (published["pid"].as_u64(), published["transport"].as_str()),
        (Some(u64::from(pid)), Some("stdio"))
    );
    assert_eq!(published["metrics"]["tools"][0]["tool"], "search_knowledge");

    drop(server); // kill -9: no clean-up of its own
    let (_, out, _) = kb_index(&vault, &["status"]);
    assert!(out.contains("servers    none running on this vault"), "{out}");
    let servers = vault.join(".kb/servers");
    let left: Vec<_> =
        std::fs::read_dir(&servers).map(|d| d.flatten().map(|e| e.file_name()).collect()).unwrap_or_default();
    assert!(left.is_empty(), "a killed server's files are removed: {left:?}");
}

/// Runs `kb-mcp` with `args`, `home` as its home folder; (exit code, stdout, stderr).
fn kb_mcp_at_home(home: &Path, args: &[&str]) -> (i32, String, String) {
    let output = Command::new(env!("CARGO_BIN_EXE_kb-mcp"))
        .args(args)
        .env("HOME", home)
        .env_remove("XDG_CONFIG_HOME")
        .env_remove("CODEX_HOME")
        .env_remove("KB_VAULT")
        .output()
        .unwrap();
    crate::common::outcome(output)
}

/// The server a host would start from its entry answers `initialize` as kb-mcp on that vault.
fn entry_starts_kb_mcp(command: &str, args: &[String]) {
    use std::io::Write as _;
    let mut child = Command::new(command)
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let init = r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"host","version":"0"}}}"#;
    writeln!(child.stdin.as_mut().unwrap(), "{init}").unwrap();
    let mut line = String::new();
    BufReader::new(child.stdout.take().unwrap()).read_line(&mut line).unwrap();
    let _ = child.kill();
    let _ = child.wait();
    let answer: serde_json::Value = serde_json::from_str(&line).unwrap();
    assert_eq!(answer["result"]["serverInfo"]["name"], "kb-mcp", "{line}");
}

/// Issue 41: `kb-mcp install HOST` merges one entry into each host's own
/// file (comments, settings and other servers kept, a backup beside it,
/// installing twice a no-op, `--dry-run` writing nothing), and the entry it
/// writes starts kb-mcp on the vault; hosts without a file get the steps.
#[test]
fn install_merges_a_working_entry_into_each_hosts_file() {
    let home = tempfile::tempdir().unwrap();
    let home = home.path();
    let (_tmp, vault) = common::temp_vault();
    let vault_arg = vault.to_str().unwrap();
    let vscode = home.join(".config/Code/User/mcp.json");
    std::fs::create_dir_all(vscode.parent().unwrap()).unwrap();
    let mine = "{\n  // my servers\n  \"servers\": {\n    \"github\": {\"type\": \"http\", \"url\": \"https://example.com/mcp\"},\n  },\n}\n";
    std::fs::write(&vscode, mine).unwrap();

    let (code, out, err) = kb_mcp_at_home(home, &["install", "vscode", "--vault", vault_arg, "--dry-run"]);
    assert_eq!(code, 0, "{err}");
    assert!(out.contains("+    \"kb\": {") && out.contains("dry run"), "{out}");
    assert_eq!(std::fs::read_to_string(&vscode).unwrap(), mine, "a dry run writes nothing");

    let hosts: [(&str, PathBuf); 4] = [
        ("vscode", vscode.clone()),
        ("cursor", home.join(".cursor/mcp.json")),
        ("claude-desktop", home.join(".config/Claude/claude_desktop_config.json")),
        ("codex", home.join(".codex/config.toml")),
    ];
    for (host, file) in &hosts {
        let (code, out, err) = kb_mcp_at_home(home, &["install", host, "--vault", vault_arg]);
        assert_eq!(code, 0, "{host}: {err}");
        assert!(out.contains("Added the server `kb`"), "{host}: {out}");
        let (code, again, _) = kb_mcp_at_home(home, &["install", host, "--vault", vault_arg]);
        assert!(code == 0 && again.contains("nothing to do"), "{host}: installing twice: {again}");
        let text = std::fs::read_to_string(file).unwrap();
        let (command, args): (String, Vec<String>) = if *host == "codex" {
            let doc: toml_edit::DocumentMut = text.parse().unwrap();
            let entry = &doc["mcp_servers"]["kb"];
            let args =
                entry["args"].as_array().unwrap().iter().map(|a| a.as_str().unwrap().to_owned()).collect();
            (entry["command"].as_str().unwrap().to_owned(), args)
        } else {
            let key = if *host == "vscode" { "servers" } else { "mcpServers" };
            let json = jsonc_parser::parse_to_serde_value::<serde_json::Value>(&text, &Default::default())
                .unwrap_or_else(|e| panic!("{host}: {e}: {text}"));
            let entry = &json[key]["kb"];
            let args =
                entry["args"].as_array().unwrap().iter().map(|a| a.as_str().unwrap().to_owned()).collect();
            (entry["command"].as_str().unwrap().to_owned(), args)
        };
        entry_starts_kb_mcp(&command, &args);
    }
    let merged = std::fs::read_to_string(&vscode).unwrap();
    assert!(merged.contains("// my servers") && merged.contains("\"github\""), "{merged}");
    assert!(merged.contains("\"type\": \"stdio\""), "{merged}");
    assert_eq!(std::fs::read_to_string(vscode.with_file_name("mcp.json.kb-mcp-backup")).unwrap(), mine);

    let (code, out, _) = kb_mcp_at_home(home, &["install", "claude-code", "--vault", vault_arg]);
    assert!(code == 0 && out.contains("claude mcp add --scope user kb -- "), "{out}");
    for host in ["chatgpt", "claude-ai"] {
        let (code, out, _) = kb_mcp_at_home(home, &["install", host, "--vault", vault_arg]);
        assert!(
            code == 0 && out.contains("kb-mcp --http") && out.contains("Running remotely"),
            "{host}: {out}"
        );
    }
    std::fs::write(home.join(".cursor/mcp.json"), "[1, 2]").unwrap();
    let (code, _, err) = kb_mcp_at_home(home, &["install", "cursor", "--vault", vault_arg]);
    assert!(code == 2 && err.contains("top level is not an object"), "{err}");
    assert_eq!(std::fs::read_to_string(home.join(".cursor/mcp.json")).unwrap(), "[1, 2]", "left alone");
}
