//! The semantic layer (issue 37) as a person and an agent meet it: searches
//! are lexical and say why until the notes are embedded, then a question in
//! other words is ranked by meaning too (`hybrid`); a pass embeds only what
//! changed and survives a restart; `[semantic]` turns it off or adds a model
//! of the person's own (a model2vec folder, here a small one the test writes)
//! for the languages the bundled English model does not read.

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use kb_mcp::engine::types::{RankingPath, RecallArgs, SearchArgs};
use kb_mcp::engine::{EmbedPace, Engine, EngineOptions};
use safetensors::tensor::{Dtype, TensorView};

use crate::common;

fn open(vault: &Path, index: &Path) -> Engine {
    let engine =
        Engine::open(&EngineOptions { vault: vault.to_owned(), index_dir: Some(index.to_owned()) }).unwrap();
    engine.sync(false, None).unwrap();
    engine
}

fn english_vault() -> (tempfile::TempDir, PathBuf, PathBuf) {
    let tmp = tempfile::tempdir().unwrap();
    let vault = tmp.path().join("vault");
    common::copy_dir(&Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures/english-vault"), &vault);
    let index = tmp.path().join("index");
    (tmp, vault, index)
}

fn search(query: &str) -> SearchArgs {
    SearchArgs { query: query.to_owned(), ..SearchArgs::default() }
}

/// A question of `fixtures/eval/english-vault-questions.json` that shares no
/// word with its notes' titles: lexical ranks its first answer 9th.
const SOONER: &str = "why do I keep believing a job will be finished sooner than it really is";
const SOONER_NOTES: [&str; 2] = ["reading/Thinking, Fast and Slow.md", "work/Estimating projects.md"];

fn rank_of(paths: &[String], wanted: &[&str]) -> Option<usize> {
    paths.iter().position(|p| wanted.contains(&p.as_str())).map(|i| i + 1)
}

#[test]
fn searches_say_lexical_until_embedded_then_rank_a_question_by_meaning() {
    let (_tmp, vault, index) = english_vault();
    let engine = open(&vault, &index);
    let before = engine.search_knowledge(&search(SOONER)).unwrap();
    assert_eq!(before.ranking.path, RankingPath::Lexical);
    assert!(before.ranking.why.starts_with("building:"), "{:?}", before.ranking);
    let lexical: Vec<String> = before.results.iter().map(|h| h.path.clone()).collect();

    let report = engine.embed_pending(&|_, _| {}).unwrap();
    assert!(report.skipped.is_none(), "{report:?}");
    assert_eq!(report.notes, 32, "{report:?}");
    assert_eq!(report.embedded, report.sections);
    assert_eq!(report.unread, 0);

    let after = engine.search_knowledge(&search(SOONER)).unwrap();
    assert_eq!(after.ranking.path, RankingPath::Hybrid, "{:?}", after.ranking);
    assert!(after.ranking.why.starts_with("pocket-encoder/"), "{:?}", after.ranking);
    let hybrid: Vec<String> = after.results.iter().map(|h| h.path.clone()).collect();
    let (was, now) = (rank_of(&lexical, &SOONER_NOTES), rank_of(&hybrid, &SOONER_NOTES));
    assert!(
        now.is_some_and(|now| now <= 5 && was.is_none_or(|was| now < was)),
        "lexical {was:?}, hybrid {now:?}"
    );
    assert!(after.results.windows(2).all(|w| w[0].score >= w[1].score));
    assert!(after.results.iter().all(|h| !h.lexical_only));

    // The text tool and the context pack run the same path.
    let content = engine.search_note_content(&search(SOONER)).unwrap();
    assert_eq!(content.ranking.path, RankingPath::Hybrid);
    assert!(content.results.iter().all(|h| !h.snippets.is_empty()), "{:#?}", content.results);
    let pack = engine
        .recall_context(&RecallArgs { topic: SOONER.to_owned(), budget_tokens: None, folder: None })
        .unwrap();
    assert_eq!(pack.ranking.path, RankingPath::Hybrid);

    // A name keeps its lexical page exactly; phrases and exclusions stay lexical.
    let name = engine.search_knowledge(&search("Estimating projects")).unwrap();
    assert_eq!(name.ranking.path, RankingPath::Hybrid);
    assert_eq!(name.results[0].path, "work/Estimating projects.md");
    let lexical_name = engine
        .search_knowledge(&SearchArgs {
            passes: kb_mcp::index::SearchPasses { semantic: false, ..Default::default() },
            ..search("Estimating projects")
        })
        .unwrap();
    let paths = |r: &kb_mcp::engine::types::KnowledgeResults| -> Vec<String> {
        r.results.iter().map(|h| h.path.clone()).collect()
    };
    assert_eq!(paths(&name)[..lexical_name.results.len()], paths(&lexical_name)[..]);
    let phrase = engine.search_knowledge(&search("\"estimating projects\"")).unwrap();
    assert_eq!(phrase.ranking.path, RankingPath::Lexical);
    assert!(phrase.ranking.why.contains("phrases"), "{:?}", phrase.ranking);

    // Filters hold for the notes only the meaning found.
    let folder =
        engine.search_knowledge(&SearchArgs { folder: Some("reading".into()), ..search(SOONER) }).unwrap();
    assert!(folder.results.iter().all(|h| h.path.starts_with("reading/")), "{:#?}", folder.results);
}

#[test]
fn a_pass_embeds_only_what_changed_and_survives_a_restart() {
    let (_tmp, vault, index) = english_vault();
    let engine = open(&vault, &index);
    let first = engine.embed_pending(&|_, _| {}).unwrap();
    assert!(first.embedded > 30);
    assert!(!engine.embedding_due());
    assert_eq!(engine.embed_pending(&|_, _| {}).unwrap().embedded, 0);

    // One section of one note changes: that section alone is embedded again.
    let note = "work/Estimating projects.md";
    let text = common::read(&vault, note);
    common::put(
        &vault,
        note,
        &format!(
            "{text}\n## Afterthought\n\nPadding every estimate by half has worked better than any formula.\n"
        ),
    );
    common::put(
        &vault,
        "work/Brand new note.md",
        "# Brand new\n\nA note about sourdough starters and rye flour.\n",
    );
    std::fs::remove_file(vault.join("reading/Atomic Habits.md")).unwrap();
    engine.sync(false, None).unwrap();
    assert!(engine.embedding_due());
    let second = engine.embed_pending(&|_, _| {}).unwrap();
    assert!((1..=3).contains(&second.embedded), "{second:?}");
    assert_eq!(second.notes, 32, "{second:?}");

    // A new process reads the kept vectors: nothing is embedded again.
    drop(engine);
    let again = open(&vault, &index);
    assert!(again.has_kept_embeddings());
    let third = again.embed_pending(&|_, _| {}).unwrap();
    assert_eq!((third.embedded, third.sections), (0, second.sections));
    let hits = again.search_knowledge(&search("how long should rye bread dough rest")).unwrap();
    assert_eq!(hits.ranking.path, RankingPath::Hybrid);
    assert!(hits.results.iter().all(|h| h.path != "reading/Atomic Habits.md"));

    // A damaged store is only a cache: the next pass embeds everything again,
    // and what a write killed an hour ago left is removed.
    for file in common::files_in(&index.join("embeddings")) {
        std::fs::write(&file, b"not a store").unwrap();
    }
    let left = index.join("embeddings/.tmpabcdef");
    let file = std::fs::File::create(&left).unwrap();
    file.set_modified(std::time::SystemTime::now() - std::time::Duration::from_secs(7200)).unwrap();
    drop(file);
    let recent = index.join("embeddings/.tmpuvwxyz");
    std::fs::write(&recent, b"another process writing").unwrap();
    drop(again);
    let fresh = open(&vault, &index);
    assert_eq!(fresh.embed_pending(&|_, _| {}).unwrap().embedded, second.sections);
    assert!(!left.exists(), "a killed write's file is removed");
    assert!(recent.exists(), "a write under way is left alone");
}

#[test]
fn a_first_pass_cut_short_resumes_from_what_it_kept() {
    let (_tmp, vault, index) = english_vault();
    let engine = open(&vault, &index);
    // Four notes a step, kept after each; the pass dies (as a kill would
    // stop it) once 24 sections are embedded.
    let pace = EmbedPace { notes_per_step: 4, keep_every: std::time::Duration::ZERO };
    let died = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        engine.embed_pending_at(&|done, _| assert!(done < 24, "killed"), pace)
    }));
    assert!(died.is_err());
    let files = || -> Vec<String> {
        let mut names: Vec<String> = common::files_in(&index.join("embeddings"))
            .iter()
            .map(|f| f.file_name().unwrap().to_string_lossy().into_owned())
            .collect();
        names.sort();
        names
    };
    let kept = files();
    assert!(kept.len() == 1 && kept[0].ends_with(".partial.safetensors"), "{kept:?}");
    assert!(!engine.has_kept_embeddings(), "a partial store is no completed pass");
    let still = engine.search_knowledge(&search(SOONER)).unwrap();
    assert!(still.ranking.why.starts_with("building:"), "{:?}", still.ranking);
    drop(engine);

    // A new process starts from it: only what it lacks is embedded.
    let again = open(&vault, &index);
    let resumed = again.embed_pending_at(&|_, _| {}, pace).unwrap();
    assert!(resumed.embedded > 0 && resumed.embedded + 16 <= resumed.sections, "{resumed:?}");
    assert_eq!(resumed.notes, 32);
    assert_eq!(files(), [kept[0].replace(".partial", "")], "the complete store replaced it");
    assert!(again.has_kept_embeddings());
    assert_eq!(again.search_knowledge(&search(SOONER)).unwrap().ranking.path, RankingPath::Hybrid);

    // The same rows as a pass never cut short, and the same ranking (a
    // vector may differ in its last bits: batches were made up otherwise).
    let (_other, fresh_vault, fresh_index) = english_vault();
    let fresh = open(&fresh_vault, &fresh_index);
    let whole = fresh.embed_pending(&|_, _| {}).unwrap();
    assert_eq!(whole.sections, resumed.sections);
    let model = again.search_knowledge(&search(SOONER)).unwrap().ranking.why;
    let rows = |index: &Path| {
        let bytes = std::fs::read(index.join("embeddings").join(&files()[0])).unwrap();
        kb_mcp::index::semantic::Vectors::from_bytes(&bytes, &model)
            .expect("a store of the model")
            .rows()
            .to_vec()
    };
    assert!(rows(&index) == rows(&fresh_index), "the resumed store holds the same rows");
    for question in [SOONER, "how long should rye bread dough rest", "what to do when the network is down"] {
        let paths = |engine: &Engine| -> Vec<String> {
            engine.search_knowledge(&search(question)).unwrap().results.into_iter().map(|h| h.path).collect()
        };
        assert_eq!(paths(&again), paths(&fresh), "{question}");
    }
}

#[test]
fn kb_toml_turns_the_layer_off_and_refuses_bad_keys() {
    let (_tmp, vault, index) = english_vault();
    common::put(&vault, "kb.toml", "[semantic]\nenabled = false\n");
    let engine = open(&vault, &index);
    assert_eq!(engine.embed_pending(&|_, _| {}).unwrap().skipped.as_deref(), Some("off"));
    let hits = engine.search_knowledge(&search(SOONER)).unwrap();
    assert_eq!(hits.ranking.path, RankingPath::Lexical);
    assert!(hits.ranking.why.starts_with("off: [semantic] enabled = false"), "{:?}", hits.ranking);
    assert!(!index.join("embeddings").exists(), "nothing is embedded while off");

    for (toml, named) in [
        ("[semantic]\nenabled = \"yes\"\n", "semantic.enabled"),
        ("[semantic]\nlanguages = [\"Chinese!\"]\n", "semantic.languages"),
        ("[semantic]\nmodel = \"\"\n", "semantic.model"),
        ("[semantic]\nmodle = \"x\"\n", "semantic.modle"),
    ] {
        common::put(&vault, "kb.toml", toml);
        let error = engine.refresh_config().unwrap_err();
        assert_eq!(error.code.as_str(), "invalid_argument");
        assert!(error.message.contains(named), "{toml}: {}", error.message);
    }
}

/// Writes a model2vec model whose 4 coordinates are 4 meanings, so that
/// characters of one meaning are near: quiet (安 静 扰 勿), phone (手 机),
/// bread (面 包), others (the rest).
fn write_model(dir: &Path) {
    std::fs::create_dir_all(dir).unwrap();
    let groups: [(&str, usize); 4] =
        [("安静扰勿免", 0), ("手机", 1), ("面包烤", 2), ("模式让它一会儿怎么的笔记", 3)];
    let mut vocab: Vec<(String, usize)> =
        vec![("[PAD]".into(), 3), ("[UNK]".into(), 3), ("[CLS]".into(), 3), ("[SEP]".into(), 3)];
    for (chars, meaning) in groups {
        vocab.extend(chars.chars().map(|c| (c.to_string(), meaning)));
    }
    let ids: HashMap<&str, usize> = vocab.iter().enumerate().map(|(i, (t, _))| (t.as_str(), i)).collect();
    let special: Vec<serde_json::Value> = ["[PAD]", "[UNK]", "[CLS]", "[SEP]"]
        .iter()
        .map(|t| {
            serde_json::json!({"id": ids[t], "content": t, "single_word": false, "lstrip": false,
                               "rstrip": false, "normalized": false, "special": true})
        })
        .collect();
    let tokenizer = serde_json::json!({
        "version": "1.0", "truncation": null, "padding": null,
        "added_tokens": special,
        "normalizer": {"type": "BertNormalizer", "clean_text": true, "handle_chinese_chars": true,
                       "strip_accents": null, "lowercase": true},
        "pre_tokenizer": {"type": "BertPreTokenizer"},
        "post_processor": null, "decoder": null,
        "model": {"type": "WordPiece", "unk_token": "[UNK]", "continuing_subword_prefix": "##",
                  "max_input_chars_per_word": 100, "vocab": ids},
    });
    std::fs::write(dir.join("tokenizer.json"), tokenizer.to_string()).unwrap();
    let mut values: Vec<u8> = Vec::new();
    for (_, meaning) in &vocab {
        for axis in 0..4 {
            let v: f32 = if axis == *meaning { 1.0 } else { 0.05 };
            values.extend(v.to_le_bytes());
        }
    }
    let view = TensorView::new(Dtype::F32, vec![vocab.len(), 4], &values).unwrap();
    let bytes = safetensors::serialize([("embeddings", view)], None).unwrap();
    std::fs::write(dir.join("model.safetensors"), bytes).unwrap();
    std::fs::write(dir.join("config.json"), "{\"normalize\": true}").unwrap();
}

#[test]
fn a_persons_own_model_reads_the_languages_it_lists() {
    let (tmp, vault, index) = english_vault();
    common::put(
        &vault,
        "设置/勿扰模式.md",
        "# 勿扰模式\n\n开启以后，通知不会响，屏幕也不会亮，直到你关掉它。\n\n免打扰的时候闹钟照常。\n",
    );
    common::put(&vault, "设置/烤面包.md", "# 烤面包\n\n面团发酵太久会塌。\n");
    let engine = open(&vault, &index);

    // The bundled model reads English only: a Chinese question is lexical, and says why.
    engine.embed_pending(&|_, _| {}).unwrap();
    let question = "手机一直响，怎么让它安静一会儿";
    let hits = engine.search_note_content(&search(question)).unwrap();
    assert_eq!(hits.ranking.path, RankingPath::Lexical);
    assert!(
        hits.ranking.why.starts_with("no_model:") && hits.ranking.why.contains("zh"),
        "{:?}",
        hits.ranking
    );
    // On an English hybrid page, a Chinese note says it was ranked by words alone.
    let mixed =
        engine.search_note_content(&search("notes about bread 面包 and how long it should rest")).unwrap();
    assert_eq!(mixed.ranking.path, RankingPath::Hybrid);
    let chinese = mixed.results.iter().find(|h| h.path == "设置/烤面包.md").expect("found by its words");
    assert!(chinese.lexical_only);

    // A vault with no note the model reads ranks by words, and says why.
    let (_tmp_zh, zh_vault, zh_index) = english_vault();
    for file in common::files_in(&zh_vault) {
        if file.extension().is_some_and(|e| e == "md") {
            std::fs::remove_file(file).unwrap();
        }
    }
    common::put(&zh_vault, "笔记/面包.md", "# 面包\n\n面团发酵太久会塌。\n");
    let zh_engine = open(&zh_vault, &zh_index);
    assert_eq!(zh_engine.embed_pending(&|_, _| {}).unwrap().notes, 0);
    let english_question = zh_engine.search_knowledge(&search(SOONER)).unwrap();
    assert_eq!(english_question.ranking.path, RankingPath::Lexical);
    assert!(
        english_question.ranking.why.starts_with("no_model: no note here"),
        "{:?}",
        english_question.ranking
    );

    // The person's model, for Chinese.
    let model = tmp.path().join("models/zh-small");
    write_model(&model);
    common::put(
        &vault,
        "kb.toml",
        &format!(
            "[semantic]\nmodel = \"{}\"\nlanguages = [\"zh\"]\n",
            model.display().to_string().replace('\\', "/")
        ),
    );
    engine.refresh_config().unwrap();
    assert!(engine.embedding_due());
    let report = engine.embed_pending(&|_, _| {}).unwrap();
    assert!(report.skipped.is_none(), "{report:?}");
    assert_eq!(report.unread, 0, "{report:?}");
    // English notes keep their vectors; the two Chinese notes are embedded by the new model.
    assert!(report.embedded >= 2 && report.embedded < 10, "{report:?}");
    let hits = engine.search_note_content(&search(question)).unwrap();
    assert_eq!(hits.ranking.path, RankingPath::Hybrid, "{:?}", hits.ranking);
    assert!(hits.ranking.why.starts_with("model2vec@sha256:"), "{:?}", hits.ranking);
    assert_eq!(
        hits.results.first().map(|h| h.path.as_str()),
        Some("设置/勿扰模式.md"),
        "{:#?}",
        hits.results
    );
    assert!(!hits.results[0].snippets.is_empty());

    // A folder that is not a model: searches say the layer failed, and stay lexical.
    common::put(&vault, "kb.toml", "[semantic]\nmodel = \"/nonexistent/model\"\n");
    engine.refresh_config().unwrap();
    let report = engine.embed_pending(&|_, _| {}).unwrap();
    assert!(report.skipped.as_deref().is_some_and(|s| s.contains("tokenizer.json")), "{report:?}");
    let hits = engine.search_knowledge(&search(SOONER)).unwrap();
    assert_eq!(hits.ranking.path, RankingPath::Lexical);
    assert!(hits.ranking.why.starts_with("failed:"), "{:?}", hits.ranking);
}

#[test]
fn the_cli_embeds_on_build_and_says_how_it_ranked() {
    let (_tmp, vault, index) = english_vault();
    let kb_index = |args: &[&str]| {
        common::outcome(
            std::process::Command::new(env!("CARGO_BIN_EXE_kb-index"))
                .args(args)
                .arg("--vault")
                .arg(&vault)
                .arg("--index-dir")
                .arg(&index)
                .output()
                .unwrap(),
        )
    };
    let (code, out, _) = kb_index(&["build", "--lexical-only"]);
    assert_eq!(code, 0);
    assert!(!out.contains("embeddings:"), "{out}");
    let (code, out, _) = kb_index(&["search", "why", "do", "estimates", "run", "late"]);
    assert_eq!(code, 0);
    assert!(out.contains("ranked by words only (building)"), "{out}");
    let (code, out, _) = kb_index(&["build"]);
    assert_eq!(code, 0);
    assert!(out.contains("embeddings: ") && out.contains("of 32 notes"), "{out}");
    let (code, out, _) = kb_index(&["search", "why", "do", "estimates", "run", "late"]);
    assert_eq!(code, 0);
    assert!(out.contains("ranked by words and meaning"), "{out}");
    let (code, out, _) = kb_index(&["search", "--json", "--content", SOONER]);
    assert_eq!(code, 0);
    let json: serde_json::Value = serde_json::from_str(&out).unwrap();
    assert_eq!(json["ranking"]["path"], "hybrid", "{out}");
}

#[test]
fn a_query_is_embedded_once_and_kept_among_the_last_few() {
    let model = kb_mcp::index::semantic::Model::bundled().unwrap();
    let first = model.embed_query(SOONER).unwrap();
    let again = model.embed_query(SOONER).unwrap();
    assert!(std::sync::Arc::ptr_eq(&first, &again), "the second ask is the kept vector");
    assert_eq!(&first[..], &model.embed(&[SOONER.to_owned()]).unwrap()[0][..]);
    for i in 0..32 {
        model.embed_query(&format!("another question, number {i}")).unwrap();
    }
    let later = model.embed_query(SOONER).unwrap();
    assert!(!std::sync::Arc::ptr_eq(&first, &later), "the oldest of 33 was forgotten");
    assert_eq!(first, later);
}
