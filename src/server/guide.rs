//! What the agent is told: the `initialize` instructions and the prompts
//! (guided workflows through the safe order of work: overview, search for
//! duplicates, read the standards, propose, stop for the person's approval).
//!
//! Both depend on the connection's access level, so that an agent is never told
//! to call a tool it is not given: at `read` the writing steps become "show the
//! person the text", at `propose` the agent stages and stops, and only at `apply`
//! is `apply_proposal` mentioned.

use rmcp::ErrorData as McpError;
use rmcp::model::{GetPromptResult, JsonObject, Prompt, PromptArgument, PromptMessage, Role};

use crate::engine::types::Access;

const FIND: &str = "kb-mcp gives you controlled access to the person's Markdown knowledge vault (Obsidian-style notes, often in Chinese and English).
Start: recall_context {topic} (a topic or a question) gathers the notes that bear on it within a token budget; get_vault_overview shows the vault, its standards and whether the index is fresh.
Find: search_knowledge (what notes are about: titles, aliases, tags, descriptions) and search_note_content (text inside notes); write queries in the language of the notes you look for (Chinese and English both work as typed); then read_note. Explore: get_related_notes, list_tags, list_recent_notes, list_notes (a folder's notes and subfolders), list_standards, list_history (a note's versions); audit_vault finds broken links, orphans and other problems.
Use only paths that tools returned; all paths are vault-relative with forward slashes.";

const READ_ONLY: &str = "This connection can only read (access level `read`). When the person wants a note added or changed, write the text in your answer and say which note it belongs to: they make the change themselves, or connect kb-mcp with `propose` access so that you can stage it for their approval.";

const PROPOSE: &str = "Writing is by proposal only, and only the person applies it. Safe order: 1) get_vault_overview; 2) search for existing notes on the topic so you do not duplicate one; 3) list_standards and read the relevant standards (a client with skills can load `skill://vault-conventions/SKILL.md`: standards, lint rules, tags and folders in one file); 4) propose_new_note, or propose_note_patch with the base_hash from read_note; propose_move and propose_delete reorganise (links are rewritten), propose_batch stages many changes applied all or nothing, revert_proposal undoes an applied proposal (keeping later edits elsewhere in its notes), propose_restore brings a note back to a version of list_history; 5) stop and ask the person to review the proposal: where your host shows the review card they approve or reject it there; elsewhere `kb-index review` opens it in their browser (`kb-index inbox show ID` prints it whole). A fact you learn about the person or the vault (a preference, a deadline, where things are) is not a note: keep it with remember, which needs no approval; recall_context and the searches bring it back first.";

const PROPOSE_ONLY: &str =
    "This connection cannot apply proposals (access level `propose`): the person applies them.";

const APPLY: &str = "Call apply_proposal only for a proposal the person has approved in this conversation (their client may also ask them to confirm); never apply one they have not seen.";

/// The instructions sent in the `initialize` (and discovery) result for a
/// connection with `access`.
pub fn instructions(access: Access) -> String {
    match access {
        Access::Read => format!("{FIND}\n{READ_ONLY}"),
        Access::Propose => format!("{FIND}\n{PROPOSE}\n{PROPOSE_ONLY}"),
        Access::Apply => format!("{FIND}\n{PROPOSE}\n{APPLY}"),
    }
}

/// [`instructions`] for a connection that may use the vaults `names` (the
/// default first): with more than one, how to name them.
pub(super) fn instructions_for(access: Access, names: &[String]) -> String {
    let mut text = instructions(access);
    if let [first, others @ ..] = names
        && !others.is_empty()
    {
        let others: Vec<String> = others.iter().map(|name| format!("`{name}`")).collect();
        text.push_str(&format!(
            "\nVaults: this connection may use several vaults: `{first}` (the default) and {}. Every tool takes \
             `vault` (a name; the default when left out) and every answer names its vault; search_knowledge and \
             search_note_content take `vault: \"*\"` to search them all, each hit naming its vault; list_vaults \
             lists them with their counts. A proposal belongs to the vault it was made in: its id finds it there.",
            others.join(", ")
        ));
    }
    text
}

struct PromptDef {
    name: &'static str,
    title: &'static str,
    description: &'static str,
    argument: &'static str,
    argument_description: &'static str,
    /// The steps; `{}` is the argument, `{write}` the closing steps.
    template: &'static str,
    /// The closing steps where proposals can be staged.
    propose: &'static str,
    /// The closing steps at `read` access.
    read: &'static str,
}

const PROMPTS: &[PromptDef] = &[
    PromptDef {
        name: "new_knowledge_note",
        title: "Write a new note",
        description: "Draft a new note on a topic and stage it as a proposal for the person to approve",
        argument: "topic",
        argument_description: "What the note is about",
        template: "I want a new note in my vault about: {}.\n\nWork in this order:\n1. Call get_vault_overview to see the vault and your access level.\n2. Search for existing notes on this topic with search_knowledge and search_note_content (in the languages the vault uses). If a note already covers it, stop and tell me; suggest a patch to that note instead.\n3. Call list_standards and read the standards that apply (writing rules, frontmatter, tag registry) with read_note. Use list_tags to pick registered tags.\n4. Write the note following the standards, linking related notes with [[wikilinks]] to paths that exist.\n{write}",
        propose: "5. Stage it with propose_new_note, giving a clear reason.\n6. Stop. Show me the proposal (target, preview, similar notes) and wait for my approval. Do not apply it yourself.",
        read: "5. This connection cannot stage proposals: show me the whole note (the path it should have, its frontmatter and text) in your answer, and I will add it myself.",
    },
    PromptDef {
        name: "expand_note",
        title: "Expand a note",
        description: "Propose additions to an existing note, following the vault's standards",
        argument: "path",
        argument_description: "Vault-relative path of the note to expand",
        template: "Please expand my note {}.\n\nWork in this order:\n1. Read it with read_note (keep its `hash`), and look at its links with get_related_notes.\n2. Search the vault for material on the same topic (search_knowledge, search_note_content) so you add what is missing rather than repeat other notes; link to them instead.\n3. Read the standards that apply (list_standards, read_note).\n{write}",
        propose: "4. Stage your additions with propose_note_patch, base_hash set to the hash you read, using the smallest edits (append, replace_section, find_replace) rather than replace_all.\n5. Stop. Show me the diff and wait for my approval. Do not apply it yourself.",
        read: "4. This connection cannot stage proposals: show me each addition as the exact text to insert and the heading it belongs under, and I will make the change myself.",
    },
    PromptDef {
        name: "review_note",
        title: "Review a note",
        description: "Review a note against the vault's standards and its links, and suggest fixes",
        argument: "path",
        argument_description: "Vault-relative path of the note to review",
        template: "Please review my note {}.\n\n1. Read it with read_note and its links with get_related_notes (note broken links).\n2. Read the standards (list_standards, read_note) and check the note against them: frontmatter keys, title, tags (list_tags shows the registered ones), one idea per note, links.\n3. Report what is good and what to fix, most important first, citing line numbers.\n{write}",
        propose: "4. Only if I ask for it, stage the fixes with propose_note_patch (base_hash from read_note) and stop for my approval.",
        read: "4. Only if I ask for it, write out the corrected passages in your answer (this connection cannot change notes).",
    },
    PromptDef {
        name: "learning_path",
        title: "Learning path",
        description: "Build a reading order through the vault's notes on a topic",
        argument: "topic",
        argument_description: "The topic to learn",
        template: "Build me a learning path through my own notes on: {}.\n\n1. Find the notes with search_knowledge and search_note_content; look for maps of content (MOC) among the results and with get_related_notes.\n2. Read the key notes (read_note) and follow their links to order them from foundations to advanced.\n3. Answer with a numbered reading list: each note's path, one line on what it teaches, and gaps where my notes are thin.\n{write}",
        propose: "4. If a new note or a MOC would help, offer to stage it with propose_new_note, and wait for my approval before doing so.",
        read: "4. If a new note or a MOC would help, say so and draft it in your answer.",
    },
];

/// The prompts, listed the same at every access level (their steps differ).
pub(super) fn list() -> Vec<Prompt> {
    PROMPTS
        .iter()
        .map(|p| {
            let argument =
                PromptArgument::new(p.argument).with_description(p.argument_description).with_required(true);
            Prompt::new(p.name, Some(p.description), Some(vec![argument])).with_title(p.title)
        })
        .collect()
}

/// The prompt `name` with its argument filled in, worded for `access`.
pub(super) fn get(
    name: &str,
    arguments: Option<&JsonObject>,
    access: Access,
) -> Result<GetPromptResult, McpError> {
    let prompt = PROMPTS.iter().find(|p| p.name == name).ok_or_else(|| {
        McpError::invalid_params(
            format!(
                "unknown prompt `{}`; prompts/list has the available ones",
                crate::error::cut_middle(name, 200)
            ),
            None,
        )
    })?;
    let value = arguments
        .and_then(|a| a.get(prompt.argument))
        .and_then(|v| v.as_str())
        .map(str::trim)
        .filter(|v| !v.is_empty())
        .ok_or_else(|| {
            McpError::invalid_params(
                format!("prompt `{name}` needs the argument `{}`", prompt.argument),
                None,
            )
        })?;
    let closing = if access == Access::Read { prompt.read } else { prompt.propose };
    let text = prompt.template.replacen("{}", value, 1).replacen("{write}", closing, 1);
    Ok(GetPromptResult::new(vec![PromptMessage::new_text(Role::User, text)])
        .with_description(prompt.description))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn names(access: Access) -> Vec<String> {
        crate::tools::list(access, false).iter().map(|tool| tool.name.to_string()).collect()
    }

    /// The tool names a text mentions, out of every tool at any level.
    fn mentioned(text: &str) -> Vec<String> {
        let all = names(Access::Apply);
        let words: Vec<&str> = text.split(|c: char| !(c.is_ascii_alphanumeric() || c == '_')).collect();
        all.into_iter().filter(|name| words.contains(&name.as_str())).collect()
    }

    #[test]
    fn an_agent_is_told_only_of_tools_it_is_given() {
        for access in [Access::Read, Access::Propose, Access::Apply] {
            let given = names(access);
            let mut texts = vec![instructions(access)];
            for prompt in PROMPTS {
                let closing = if access == Access::Read { prompt.read } else { prompt.propose };
                texts.push(prompt.template.replacen("{write}", closing, 1));
            }
            for text in &texts {
                for name in mentioned(text) {
                    assert!(given.contains(&name), "{access:?} is told of {name}, which it is not given");
                }
            }
            let told = instructions(access);
            assert!(told.contains("recall_context") && told.contains("list_notes"), "{access:?}");
            assert_eq!(told.contains("propose_new_note"), access != Access::Read, "{access:?}");
            assert_eq!(told.contains("apply_proposal"), access == Access::Apply, "{access:?}");
            assert!(
                told.contains(&format!("`{}`", access.as_str())) || access == Access::Apply,
                "{access:?}"
            );
        }
    }

    /// The Agent Skill (`skills/kb-mcp/SKILL.md`, served as `kb://skill`) is kept
    /// consistent with the instructions: it names no tool that does not exist, it
    /// names every tool (so every one the apply-level instructions name), and it says
    /// what each access level allows.
    #[test]
    fn the_skill_names_only_real_tools_and_all_of_them() {
        let skill = super::super::resources::SKILL;
        let front = skill.strip_prefix("---\n").and_then(|rest| rest.split_once("\n---\n")).map(|(f, _)| f);
        let front = front.expect("SKILL.md starts with YAML frontmatter between --- lines");
        assert!(front.lines().any(|l| l == "name: kb-mcp"), "{front}");
        assert!(front.lines().any(|l| l.starts_with("description: ") && l.len() > 40), "{front}");

        let all = names(Access::Apply);
        const PREFIXES: &[&str] =
            &["get_", "search_", "read_", "list_", "propose_", "apply_", "recall_", "audit_", "revert_"];
        for word in skill.split(|c: char| !(c.is_ascii_alphanumeric() || c == '_')) {
            if PREFIXES.iter().any(|p| word.starts_with(p)) {
                assert!(all.iter().any(|n| n == word), "the skill names `{word}`, which is no tool");
            }
        }
        let named = mentioned(skill);
        for name in mentioned(&instructions(Access::Apply)).into_iter().chain(all.clone()) {
            assert!(named.contains(&name), "the skill does not mention {name}");
        }
        for access in [Access::Read, Access::Propose, Access::Apply] {
            assert!(skill.contains(&format!("- `{}`: ", access.as_str())), "{access:?}");
        }
    }

    /// Every `tool {arg, …}` the instructions, the prompts and the skill write
    /// names arguments the tool takes (the instructions once said
    /// `recall_context {question}`, whose argument is `topic`).
    #[test]
    fn every_argument_named_beside_a_tool_is_one_it_takes() {
        let mut texts = vec![super::super::resources::SKILL.to_owned()];
        for access in [Access::Read, Access::Propose, Access::Apply] {
            texts.push(instructions(access));
        }
        texts.extend(PROMPTS.iter().flat_map(|p| [p.template, p.propose, p.read]).map(str::to_owned));
        let tools = crate::tools::list(Access::Apply, false);
        let mut checked = 0;
        for text in &texts {
            for tool in &tools {
                let name = format!("{} {{", tool.name);
                for (at, _) in text.match_indices(&name) {
                    let rest = &text[at + name.len()..];
                    let inside = &rest[..rest.find('}').expect("a `{` closed on the same text")];
                    let properties = tool.input_schema.get("properties").and_then(|p| p.as_object());
                    for argument in inside.split([',', '|']) {
                        let argument = argument.split([':', '?', '=']).next().unwrap_or_default().trim();
                        if argument.is_empty() || argument == "…" || argument == "..." {
                            continue;
                        }
                        checked += 1;
                        assert!(
                            properties.is_some_and(|p| p.contains_key(argument)),
                            "`{} {{{inside}}}` names `{argument}`, which {} does not take",
                            tool.name,
                            tool.name
                        );
                    }
                }
            }
        }
        assert!(checked > 0, "no `tool {{arg}}` found: the test looks at nothing");
    }

    #[test]
    fn every_prompt_has_one_place_for_its_argument_and_for_its_closing_steps() {
        for prompt in PROMPTS {
            assert_eq!(prompt.template.matches("{}").count(), 1, "{}", prompt.name);
            assert_eq!(prompt.template.matches("{write}").count(), 1, "{}", prompt.name);
            assert!(!prompt.read.contains("propose_"), "{}", prompt.name);
        }
    }
}
