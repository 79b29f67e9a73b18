//! Prompts: guided workflows that walk an agent through the safe order of work:
//! overview, search for duplicates, read the standards, propose, and stop for
//! the person's approval.

use rmcp::ErrorData as McpError;
use rmcp::model::{GetPromptResult, JsonObject, Prompt, PromptArgument, PromptMessage, Role};

struct PromptDef {
    name: &'static str,
    title: &'static str,
    description: &'static str,
    argument: &'static str,
    argument_description: &'static str,
    template: &'static str,
}

const PROMPTS: &[PromptDef] = &[
    PromptDef {
        name: "new_knowledge_note",
        title: "Write a new note",
        description: "Draft a new note on a topic and stage it as a proposal for the person to approve",
        argument: "topic",
        argument_description: "What the note is about",
        template: "I want a new note in my vault about: {}.\n\nWork in this order:\n1. Call get_vault_overview to see the vault and your access level.\n2. Search for existing notes on this topic with search_knowledge and search_note_content (in the languages the vault uses). If a note already covers it, stop and tell me; suggest a patch to that note instead.\n3. Call list_standards and read the standards that apply (writing rules, frontmatter, tag registry) with read_note. Use list_tags to pick registered tags.\n4. Write the note following the standards, linking related notes with [[wikilinks]] to paths that exist.\n5. Stage it with propose_new_note, giving a clear reason.\n6. Stop. Show me the proposal (target, preview, similar notes) and wait for my approval. Do not apply it yourself.",
    },
    PromptDef {
        name: "expand_note",
        title: "Expand a note",
        description: "Propose additions to an existing note, following the vault's standards",
        argument: "path",
        argument_description: "Vault-relative path of the note to expand",
        template: "Please expand my note {}.\n\nWork in this order:\n1. Read it with read_note (keep its `hash`), and look at its links with get_related_notes.\n2. Search the vault for material on the same topic (search_knowledge, search_note_content) so you add what is missing rather than repeat other notes; link to them instead.\n3. Read the standards that apply (list_standards, read_note).\n4. Stage your additions with propose_note_patch, base_hash set to the hash you read, using the smallest edits (append, replace_section, find_replace) rather than replace_all.\n5. Stop. Show me the diff and wait for my approval. Do not apply it yourself.",
    },
    PromptDef {
        name: "review_note",
        title: "Review a note",
        description: "Review a note against the vault's standards and its links, and suggest fixes",
        argument: "path",
        argument_description: "Vault-relative path of the note to review",
        template: "Please review my note {}.\n\n1. Read it with read_note and its links with get_related_notes (note broken links).\n2. Read the standards (list_standards, read_note) and check the note against them: frontmatter keys, title, tags (list_tags shows the registered ones), one idea per note, links.\n3. Report what is good and what to fix, most important first, citing line numbers.\n4. Only if I ask for it, stage the fixes with propose_note_patch (base_hash from read_note) and stop for my approval.",
    },
    PromptDef {
        name: "learning_path",
        title: "Learning path",
        description: "Build a reading order through the vault's notes on a topic",
        argument: "topic",
        argument_description: "The topic to learn",
        template: "Build me a learning path through my own notes on: {}.\n\n1. Find the notes with search_knowledge and search_note_content; look for maps of content (MOC) among the results and with get_related_notes.\n2. Read the key notes (read_note) and follow their links to order them from foundations to advanced.\n3. Answer with a numbered reading list: each note's path, one line on what it teaches, and gaps where my notes are thin.\n4. If a new note or a MOC would help, offer to stage it with propose_new_note, and wait for my approval before doing so.",
    },
];

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

pub(super) fn get(name: &str, arguments: Option<&JsonObject>) -> Result<GetPromptResult, McpError> {
    let prompt = PROMPTS.iter().find(|p| p.name == name).ok_or_else(|| {
        McpError::invalid_params(
            format!("unknown prompt `{name}`; prompts/list has the available ones"),
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
    let text = prompt.template.replacen("{}", value, 1);
    Ok(GetPromptResult::new(vec![PromptMessage::new_text(Role::User, text)])
        .with_description(prompt.description))
}
