//! The agent's own memory (issue 39): what `remember` checks before the
//! write layer adds an entry, which memory folders a principal may read, and
//! those folders searched beside the notes.
//!
//! The memory folder (`[memory] folder`, `Agent memory` by default) is an area
//! of its own: never indexed or served as notes, written only by `remember`.
//! It holds `vault/` (what agents learned about the vault, read by every
//! principal) and `person/<principal>/` (what one principal's agent learned
//! about the person; principals that `[memory] share_person` names keep
//! `person/@shared/` together). Nothing else reads `person/`: a principal's
//! memory of the person reaches another principal in no tool.
//!
//! Each readable folder is indexed in memory ([`MemoryIndex`]) and kept while
//! its listing (paths, sizes, times) is unchanged, so the person's edits and
//! deletions in their editor count at the next call.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant, SystemTime};

use sha2::{Digest, Sha256};

use super::Engine;
use super::types::{
    ContentHit, ContentResults, KnowledgeHit, KnowledgeResults, MemoryAbout, MemoryCounts, Principal,
    RecallItem, RememberArgs, Remembered, SEARCH_LIMIT, SearchArgs, SnippetOut,
};
use crate::error::{Error, ErrorCode, Result};
use crate::index::MemoryIndex;
use crate::sandbox::{MemoryFile, NotePath, Policy};
use crate::vault::{LinkKind, decode_note, parse_note};
use crate::write::{Actor, MemoryEntry};

/// The most bytes an entry's text may hold.
pub const ENTRY_MAX_BYTES: usize = 4096;
/// The most entries one memory (the vault's, or one principal's of the person) holds.
pub const MEMORY_MAX_ENTRIES: usize = 1000;
/// The most bytes one memory holds.
pub const MEMORY_MAX_BYTES: u64 = 2 << 20;
/// The longest category, in characters.
const CATEGORY_MAX_CHARS: usize = 40;
/// Memory entries a search or recall brings at most.
const MEMORY_HITS: usize = 3;
/// An entry file larger than this (a person's edit) is not read.
const ENTRY_FILE_MAX: u64 = 64 << 10;
/// How long a listing stands while the folder's own time is unchanged: an
/// entry added, removed or renamed changes the folder's time at once; one
/// edited in place (not through a rename), or changed in a folder the person
/// made inside it, is seen within this.
const RELIST_AFTER: Duration = Duration::from_secs(2);
/// The shared memory of the person's folder: a name no token can have.
const SHARED: &str = "@shared";

/// A listing of a memory folder: each entry's path, size and time.
type Listing = Vec<(String, u64, SystemTime)>;

/// One readable memory folder, indexed, with the listing it was built from
/// and when that listing was last found current.
struct Shelf {
    /// The folder's own modification time when last listed.
    stamp: SystemTime,
    /// When the listing was last taken.
    listed: Instant,
    listing: Arc<Listing>,
    books: Arc<Books>,
}

/// A memory folder's entries and their index.
struct Books {
    entries: HashMap<String, Entry>,
    index: MemoryIndex,
}

/// An entry as read back.
#[derive(Clone)]
struct Entry {
    title: String,
    text: String,
}

/// The indexed memory folders, by folder.
#[derive(Default)]
pub(super) struct MemoryShelves(Mutex<HashMap<String, Shelf>>);

/// A memory entry found for a query.
struct Found {
    path: String,
    about: MemoryAbout,
    score: f32,
    entry: Entry,
}

impl Engine {
    /// `remember`: one entry in the memory, for `principal`.
    pub fn remember(&self, args: &RememberArgs, principal: &Principal) -> Result<Remembered> {
        let config = self.config();
        if !config.memory.enabled {
            return Err(Error::denied(
                "the person turned the agent's memory off (`[memory] enabled = false` in kb.toml); nothing was remembered"
                    .to_owned(),
            )
            .with_hint("do not retry; tell the person what you would have remembered, if it matters"));
        }
        let text = checked_text(&args.text)?;
        let category = args.category.as_deref().map(checked_category).transpose()?;
        let policy = self.policy();
        self.check_links(&text, &policy)?;
        let folder = memory_folder(&policy, &config.memory.share_person, args.about, principal)?;
        // An apply another process left half done is completed (and recorded in
        // the history as its proposal's) before the entry's line joins the log.
        self.recover_proposals(Actor::Mcp)?;
        let written = crate::write::remember(
            &self.sandbox(),
            &MemoryEntry {
                folder: &folder,
                text: &text,
                about: args.about.as_str(),
                category: category.as_deref(),
                principal: principal.name(),
                max_entries: MEMORY_MAX_ENTRIES,
                max_bytes: MEMORY_MAX_BYTES,
                actor: Actor::Mcp,
            },
            &mut |paths| self.refresh_notes(paths),
        )?;
        Ok(Remembered {
            path: written.path.as_str().to_owned(),
            about: args.about,
            at: written.at,
            entries: written.entries as u64,
            entries_max: MEMORY_MAX_ENTRIES as u64,
        })
    }

    /// The memory `principal` may read, counted; `None` with no memory folder.
    pub fn memory_counts(&self, principal: &Principal) -> Option<MemoryCounts> {
        let config = self.config();
        let policy = self.policy();
        let root = policy.memory.clone()?;
        let count = |about| {
            memory_folder(&policy, &config.memory.share_person, about, principal)
                .ok()
                .and_then(|folder| self.shelf(&folder))
                .map_or(0, |books| books.entries.len() as u64)
        };
        Some(MemoryCounts {
            folder: root,
            enabled: config.memory.enabled,
            person: count(MemoryAbout::Person),
            vault: count(MemoryAbout::Vault),
        })
    }

    /// A warning when the memory folder holds notes outside its `vault/` and
    /// `person/` folders: a folder of the person's own by that name (kept
    /// from before the memory existed), whose notes are no longer served.
    pub(super) fn memory_strays(&self) -> Option<String> {
        let root = self.policy().memory?;
        let folder = NotePath::parse(&root).ok()?;
        let kept = [format!("{root}/vault/"), format!("{root}/person/")];
        let strays: Vec<MemoryFile> = self
            .sandbox()
            .list_memory(&folder)
            .ok()?
            .into_iter()
            .filter(|file| !kept.iter().any(|prefix| file.path.as_str().starts_with(prefix.as_str())))
            .collect();
        let first = strays.first()?;
        Some(format!(
            "{root}/ is the agents' memory folder, which is never served as notes, yet it holds {} note(s) \
             that remember did not write (first: {}): they are not searchable. Move them to a notes \
             folder, or name another folder in kb.toml's `[memory] folder`",
            strays.len(),
            first.path
        ))
    }

    /// The entries `principal` may read that answer `query`, best first (at
    /// most three; none when the memory is off).
    fn memory_found(&self, query: &str, principal: &Principal) -> Vec<Found> {
        let config = self.config();
        if !config.memory.enabled || query.trim().is_empty() {
            return Vec::new();
        }
        let policy = self.policy();
        let mut found = Vec::new();
        for about in [MemoryAbout::Person, MemoryAbout::Vault] {
            let Ok(folder) = memory_folder(&policy, &config.memory.share_person, about, principal) else {
                continue;
            };
            let Some(shelf) = self.shelf(&folder) else { continue };
            for (path, score) in shelf.index.search(query, MEMORY_HITS).unwrap_or_default() {
                if let Some(entry) = shelf.entries.get(&path) {
                    found.push(Found { path, about, score, entry: entry.clone() });
                }
            }
        }
        found.sort_by(|a, b| b.score.total_cmp(&a.score).then_with(|| a.path.cmp(&b.path)));
        found.truncate(MEMORY_HITS);
        found
    }

    /// `search_knowledge` for a principal: the memory entries it may read
    /// that answer the query come first (at most three, flagged), then the
    /// notes, within `limit`. A search narrowed by `folder` or `tags` is of
    /// notes alone.
    pub fn search_knowledge_for(&self, args: &SearchArgs, principal: &Principal) -> Result<KnowledgeResults> {
        let mut results = self.search_knowledge(args)?;
        if narrowed(args) {
            return Ok(results);
        }
        let memory = self.memory_knowledge(&args.query, principal);
        first(&mut results.results, &mut results.total, memory, args)?;
        Ok(results)
    }

    /// `search_note_content` for a principal, as [`Engine::search_knowledge_for`].
    pub fn search_note_content_for(
        &self,
        args: &SearchArgs,
        principal: &Principal,
    ) -> Result<ContentResults> {
        let mut results = self.search_note_content(args)?;
        if narrowed(args) {
            return Ok(results);
        }
        let memory = self.memory_content(&args.query, principal);
        first(&mut results.results, &mut results.total, memory, args)?;
        Ok(results)
    }

    /// `search_knowledge`'s hits of the memory (flagged).
    fn memory_knowledge(&self, query: &str, principal: &Principal) -> Vec<KnowledgeHit> {
        self.memory_found(query, principal)
            .into_iter()
            .map(|found| KnowledgeHit {
                path: found.path,
                title: found.entry.title,
                aliases: Vec::new(),
                description: cut(&found.entry.text, 300),
                tags: Vec::new(),
                score: found.score,
                matched: vec!["text".to_owned()],
                aliases_omitted: 0,
                tags_omitted: 0,
                weak: false,
                lexical_only: true,
                explain: None,
                memory: Some(found.about),
                vault: None,
            })
            .collect()
    }

    /// `search_note_content`'s hits of the memory (flagged), the entry as the snippet.
    fn memory_content(&self, query: &str, principal: &Principal) -> Vec<ContentHit> {
        self.memory_found(query, principal)
            .into_iter()
            .map(|found| ContentHit {
                path: found.path,
                title: found.entry.title,
                score: found.score,
                snippets: vec![SnippetOut {
                    text: cut(&found.entry.text, 600),
                    heading: None,
                    line: 1,
                    marks: Vec::new(),
                }],
                weak: false,
                lexical_only: true,
                explain: None,
                memory: Some(found.about),
                vault: None,
            })
            .collect()
    }

    /// `recall_context`'s memory items, first in the pack.
    pub(super) fn memory_recall(&self, topic: &str, principal: &Principal) -> Vec<RecallItem> {
        self.memory_found(topic, principal)
            .into_iter()
            .map(|found| RecallItem {
                path: found.path,
                title: found.entry.title,
                section: None,
                text: found.entry.text,
                reason: format!("memory about the {}", found.about.as_str()),
                score: found.score,
                memory: Some(found.about),
            })
            .collect()
    }

    /// A memory folder's entries and index, rebuilt when its listing
    /// changed; `None` when it holds nothing readable. The folder is listed
    /// again when its own time changed or [`RELIST_AFTER`] passed, so a
    /// search pays one look at the folder, not a walk of it.
    fn shelf(&self, folder: &NotePath) -> Option<Arc<Books>> {
        let sandbox = self.sandbox();
        let stamp = sandbox.memory_folder_time(folder)?;
        let key = folder.as_str();
        {
            let shelves = self.memory.0.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
            if let Some(shelf) = shelves.get(key)
                && shelf.stamp == stamp
                && shelf.listed.elapsed() < RELIST_AFTER
            {
                return Some(shelf.books.clone());
            }
        }
        let files = sandbox.list_memory(folder).ok()?;
        let listing: Listing =
            files.iter().map(|f| (f.path.as_str().to_owned(), f.stat.size, f.stat.modified)).collect();
        let kept = {
            let shelves = self.memory.0.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
            shelves.get(key).filter(|shelf| *shelf.listing == listing).map(|shelf| shelf.books.clone())
        };
        let books = match kept {
            Some(books) => books,
            None => {
                let mut entries = HashMap::new();
                for file in files.iter().filter(|file| file.stat.size <= ENTRY_FILE_MAX) {
                    let Ok(bytes) = sandbox.read(&file.path, ENTRY_FILE_MAX) else { continue };
                    let Ok(text) = decode_note(&bytes) else { continue };
                    let note = parse_note(&file.path, text);
                    let body = note.body(text).trim().to_owned();
                    entries.insert(file.path.as_str().to_owned(), Entry { title: note.title, text: body });
                }
                let index = MemoryIndex::build(
                    entries.iter().map(|(path, entry)| (path.as_str(), entry.text.as_str())),
                )
                .ok()?;
                Arc::new(Books { entries, index })
            }
        };
        let mut shelves = self.memory.0.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        // A handful of principals at most; a server serving hundreds keeps the last few.
        if shelves.len() >= 64 {
            shelves.clear();
        }
        let shelf = Shelf { stamp, listed: Instant::now(), listing: Arc::new(listing), books: books.clone() };
        shelves.insert(key.to_owned(), shelf);
        (!books.entries.is_empty()).then_some(books)
    }

    /// An entry's links may not point into a denied or internal place, out
    /// of the vault, or at the inbox.
    fn check_links(&self, text: &str, policy: &Policy) -> Result<()> {
        let probe = NotePath::parse("memory-entry.md")?;
        let note = parse_note(&probe, text);
        for link in &note.links {
            let target = link.target.trim();
            if target.is_empty() || target.contains("://") {
                continue;
            }
            let named = match link.kind {
                LinkKind::Markdown => target.to_owned(),
                _ => format!("{target}.md"),
            };
            let refused = match NotePath::parse(&named).or_else(|_| NotePath::parse(target)) {
                Err(_) => true,
                Ok(path) => {
                    policy.is_denied(path.as_str())
                        || matches!(self.sandbox().area_of(&path), Some(crate::sandbox::Area::Inbox))
                }
            };
            if refused {
                return Err(Error::denied(format!(
                    "the entry links to {target:?}, which is denied, internal or outside the vault; nothing was remembered"
                ))
                .with_hint("remember the fact in words, without that link"));
            }
        }
        Ok(())
    }
}

/// Puts a search's memory hits before its notes, within its `limit`.
fn first<H>(results: &mut Vec<H>, total: &mut u64, memory: Vec<H>, args: &SearchArgs) -> Result<()> {
    *total += memory.len() as u64;
    results.splice(0..0, memory);
    results.truncate(SEARCH_LIMIT.check("limit", args.limit)? as usize);
    Ok(())
}

/// Whether a search is narrowed to some notes (a folder, tags): the memory is none of them.
fn narrowed(args: &SearchArgs) -> bool {
    args.folder.as_deref().is_some_and(|folder| !folder.trim().is_empty())
        || args.tags.as_ref().is_some_and(|tags| !tags.is_empty())
}

/// The text as it will be kept: line endings made `\n`, trimmed; refused
/// when empty, over [`ENTRY_MAX_BYTES`], or holding control characters.
fn checked_text(raw: &str) -> Result<String> {
    let text = raw.replace("\r\n", "\n");
    let text = text.trim();
    if text.is_empty() {
        return Err(Error::invalid("`text` is empty: say the fact to remember".to_owned()));
    }
    if text.len() > ENTRY_MAX_BYTES {
        return Err(Error::new(
            ErrorCode::TooLarge,
            format!(
                "`text` is {} bytes; an entry holds at most {ENTRY_MAX_BYTES}; nothing was remembered",
                text.len()
            ),
        )
        .with_hint("remember the fact itself in a few sentences; notes belong in a proposal"));
    }
    if let Some((at, c)) = text.chars().enumerate().find(|(_, c)| c.is_control() && *c != '\n' && *c != '\t')
    {
        return Err(Error::invalid(format!(
            "`text` holds the control character U+{:04X} at character {at}; nothing was remembered",
            c as u32
        )));
    }
    if text.starts_with("---") {
        return Err(Error::invalid(
            "`text` may not start with `---` (the entry's frontmatter is kb-mcp's)".to_owned(),
        ));
    }
    Ok(text.to_owned())
}

/// A category: one to 40 letters, digits, spaces, `-` or `_`.
fn checked_category(raw: &str) -> Result<String> {
    let category = raw.trim();
    let fine = !category.is_empty()
        && category.chars().count() <= CATEGORY_MAX_CHARS
        && category.chars().all(|c| c.is_alphanumeric() || c == ' ' || c == '-' || c == '_');
    if !fine {
        return Err(Error::invalid(format!(
            "`category` {raw:?} must be 1 to {CATEGORY_MAX_CHARS} letters, digits, spaces, `-` or `_`"
        )));
    }
    Ok(category.to_owned())
}

/// The folder of `about`'s memory for `principal`: `<memory>/vault`, or
/// `<memory>/person/<principal>` (`@shared` for the principals that share).
fn memory_folder(
    policy: &Policy,
    share_person: &[String],
    about: MemoryAbout,
    principal: &Principal,
) -> Result<NotePath> {
    let root = policy
        .memory
        .as_deref()
        .ok_or_else(|| Error::denied("this vault has no memory folder".to_owned()))?;
    let folder = match about {
        MemoryAbout::Vault => format!("{root}/vault"),
        MemoryAbout::Person if share_person.iter().any(|name| name == principal.name()) => {
            format!("{root}/person/{SHARED}")
        }
        MemoryAbout::Person => format!("{root}/person/{}", principal_folder(principal.name())),
    };
    NotePath::parse(&folder)
}

/// A principal's folder name: its name when plain (letters, digits, `.`,
/// `_`, `-`, not starting with `.`), else its plain characters and a hash
/// of the whole name (`oauth:My App` is `oauthMyApp-1a2b3c4d`).
fn principal_folder(name: &str) -> String {
    let plain = |c: char| c.is_ascii_alphanumeric() || c == '.' || c == '_' || c == '-';
    if !name.is_empty() && name.len() <= 64 && !name.starts_with('.') && name.chars().all(plain) {
        return name.to_owned();
    }
    let kept: String = name.chars().filter(|c| c.is_ascii_alphanumeric()).take(32).collect();
    let digest = Sha256::digest(name.as_bytes());
    let hash: String = digest.iter().take(4).map(|b| format!("{b:02x}")).collect();
    format!("{kept}-{hash}")
}

/// The first `max` characters, with `…` when cut.
fn cut(text: &str, max: usize) -> String {
    match text.char_indices().nth(max) {
        Some((at, _)) => format!("{}…", &text[..at]),
        None => text.to_owned(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn principals_get_safe_distinct_folders() {
        assert_eq!(principal_folder("laptop"), "laptop");
        let oauth = principal_folder("oauth:My App/../x");
        assert!(oauth.starts_with("oauthMyAppx-"), "{oauth}");
        assert_ne!(principal_folder("oauth:a b"), principal_folder("oauth:ab"));
        assert!(!principal_folder(".hidden").starts_with('.'));
        assert!(NotePath::parse(&format!("m/person/{oauth}")).is_ok());
    }

    #[test]
    fn text_and_category_checks() {
        assert!(checked_text("  \n ").is_err());
        assert_eq!(checked_text(" a\r\nb ").unwrap(), "a\nb");
        assert_eq!(checked_text(&"x".repeat(ENTRY_MAX_BYTES + 1)).unwrap_err().code, ErrorCode::TooLarge);
        assert!(checked_text("bell \u{7}").unwrap_err().message.contains("U+0007"));
        assert!(checked_text("---\nmemory: x").is_err());
        assert_eq!(checked_category(" 偏好 ").unwrap(), "偏好");
        assert!(checked_category("../etc").is_err());
        assert!(checked_category(&"a".repeat(41)).is_err());
    }
}
