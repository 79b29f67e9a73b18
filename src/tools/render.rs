//! Short human-readable renderings of tool results, sent as the text content
//! beside `structuredContent` for clients that show text only.

use std::fmt::Write;

use crate::engine::types::*;

/// `1 note`, `2 notes`: `noun` is the singular; the plural adds `s`.
fn count(n: impl Into<u64>, noun: &str) -> String {
    let n = n.into();
    if n == 1 { format!("1 {noun}") } else { format!("{n} {noun}s") }
}

/// `1 of 3 notes match`, `1 of 1 note matches`.
fn matching(shown: usize, total: u64) -> String {
    let verb = if total == 1 { "matches" } else { "match" };
    format!("{shown} of {} {verb}", count(total, "note"))
}

/// The server's metrics: one line per tool, most called first.
fn metric_lines(m: &ServerMetrics) -> String {
    let mut out = format!("\nserver metrics since {} ({} s):", m.since, m.uptime_s);
    let mut tools: Vec<&ToolMetrics> = m.tools.iter().collect();
    tools.sort_by(|a, b| b.calls.cmp(&a.calls).then_with(|| a.tool.cmp(&b.tool)));
    for t in tools {
        let errors: u64 = t.errors.values().sum();
        let _ = write!(
            out,
            "\n  {}: {}, {} errors; p50 {:.1} ms, p95 {:.1} ms, p99 {:.1} ms",
            t.tool,
            count(t.calls, "call"),
            errors,
            t.p50_ms,
            t.p95_ms,
            t.p99_ms
        );
    }
    let i = &m.index;
    let lag = i.last_sync_lag_ms.map(|lag| format!(", last lag {lag:.0} ms")).unwrap_or_default();
    let _ = write!(
        out,
        "\n  watcher: {}, {} events, {}{lag}",
        if i.watching { "on" } else { "off" },
        i.watcher_events,
        count(i.syncs, "update")
    );
    out
}

pub(super) fn overview(o: &Overview) -> String {
    let mut out = format!(
        "vault {}: {}, {}, {}, {} ({} broken), {}, {} pending; index {}, {}; access {}",
        o.vault,
        count(o.counts.notes, "note"),
        count(o.counts.standards, "standard"),
        count(o.counts.tags, "tag"),
        count(o.counts.links, "link"),
        o.counts.broken_links,
        count(o.counts.orphans, "orphan"),
        count(o.counts.proposals_pending, "proposal"),
        count(o.index.documents, "note"),
        if o.index.fresh {
            "fresh".to_owned()
        } else {
            format!(
                "catching up ({} added, {} changed, {} removed)",
                o.index.stale.added, o.index.stale.changed, o.index.stale.removed
            )
        },
        o.access
    );
    out.push_str(&skipped_lines(o.index.skipped_files, &o.index.skipped));
    for warning in &o.warnings {
        let _ = write!(out, "\nwarning: {warning}");
    }
    out.push_str(&conflict_lines(o.conflict_copies.as_ref()));
    if let Some(metrics) = &o.metrics {
        out.push_str(&metric_lines(metrics));
    }
    let c = &o.changes;
    let notes = c.added.len() + c.changed.len() + c.removed.len();
    if notes + c.applied.len() + c.rejected.len() > 0 {
        let _ = write!(
            out,
            "\nsince the cursor: {} added, {} changed, {} removed; {} applied, {} rejected{}",
            c.added.len(),
            c.changed.len(),
            c.removed.len(),
            c.applied.len(),
            c.rejected.len(),
            if c.incomplete { " (incomplete)" } else { "" }
        );
        for (what, list) in [("added", &c.added), ("changed", &c.changed), ("removed", &c.removed)] {
            for note in list {
                let _ = write!(out, "\n{what} {} (by {})", note.path, note.by);
            }
        }
    }
    let _ = write!(out, "\nchanges cursor: {}", c.cursor);
    out
}

/// The files left out of the notes, one line each with its reason, after a
/// line with their count (empty when none is).
fn skipped_lines(skipped: u64, first: &[SkippedOut]) -> String {
    if skipped == 0 {
        return String::new();
    }
    let mut out = format!("\n{} skipped (not served as notes):", count(skipped, "file"));
    for file in first {
        let _ = write!(out, "\n- {}: {}", file.path, file.reason);
    }
    if skipped > first.len() as u64 {
        let _ = write!(out, "\n- … and {} more", skipped - first.len() as u64);
    }
    out
}

/// The conflict copies, for an agent to pass on: what they are and what the
/// person does with each (nothing when there are none).
fn conflict_lines(copies: Option<&ConflictCopies>) -> String {
    let Some(copies) = copies else { return String::new() };
    let mut out = format!(
        "\n{} in the inbox may hold the person's own saves (met while applying): ask them to compare each \
         with its note, keep what they want in the note, and delete the copy:",
        if copies.total == 1 {
            "1 conflict copy".to_owned()
        } else {
            format!("{} conflict copies", copies.total)
        }
    );
    for copy in &copies.copies {
        let _ = write!(out, "\n- {} (of {})", copy.path, copy.note);
    }
    if copies.total > copies.copies.len() as u64 {
        let _ = write!(out, "\n- … and {} more", copies.total - copies.copies.len() as u64);
    }
    out
}

/// The line a search answer opens with while the index is catching up, so an
/// agent reading only the text never takes a partial answer for a complete one.
fn stale_line(stale: Option<&String>) -> String {
    stale.map(|notice| format!("STALE: {notice}\n")).unwrap_or_default()
}

pub(super) fn knowledge(r: &KnowledgeResults) -> String {
    let mut out = stale_line(r.stale.as_ref());
    let _ = write!(out, "{} `{}`", matching(r.results.len(), r.total), r.query);
    for (rank, hit) in r.results.iter().enumerate() {
        let place = vault_mark(hit.vault.as_deref());
        let _ = write!(out, "\n{}. {place}{}{} — {}", rank + 1, memory_mark(hit.memory), hit.path, hit.title);
        if !hit.description.is_empty() {
            let _ = write!(out, ": {}", hit.description);
        }
    }
    out
}

pub(super) fn content(r: &ContentResults) -> String {
    let mut out = stale_line(r.stale.as_ref());
    let _ = write!(out, "{} `{}`", matching(r.results.len(), r.total), r.query);
    for (rank, hit) in r.results.iter().enumerate() {
        let place = vault_mark(hit.vault.as_deref());
        let _ = write!(out, "\n{}. {place}{}{} — {}", rank + 1, memory_mark(hit.memory), hit.path, hit.title);
        for snippet in &hit.snippets {
            let _ = write!(out, "\n   L{}: {}", snippet.line, snippet.text);
        }
    }
    out
}

/// `work: ` before a hit of a search of every vault.
fn vault_mark(vault: Option<&str>) -> String {
    vault.map(|vault| format!("{vault}: ")).unwrap_or_default()
}

/// `[memory about the person] ` before a memory entry's line.
fn memory_mark(about: Option<MemoryAbout>) -> String {
    about.map(|about| format!("[memory about the {}] ", about.as_str())).unwrap_or_default()
}

pub(super) fn remembered(r: &Remembered) -> String {
    format!(
        "remembered (about the {}) in {}; this memory holds {} of {} entries. The person sees it as a note and may edit or delete it.",
        r.about.as_str(),
        r.path,
        r.entries,
        r.entries_max
    )
}

pub(super) fn note(n: &NoteContent) -> String {
    let mut out = format!("{} ({} bytes, {})\n\n{}", n.path, n.size, n.hash, n.content);
    if let Some(next) = n.next_offset {
        let _ = write!(out, "\n\n[truncated: continue with offset {next}]");
    }
    out
}

pub(super) fn standards(s: &Standards) -> String {
    let mut out = count(s.standards.len() as u64, "standard");
    for entry in &s.standards {
        let _ = write!(out, "\n- {} — {}", entry.path, entry.title);
    }
    out
}

pub(super) fn tags(t: &Tags) -> String {
    let mut out = count(t.tags.len() as u64, "tag");
    for tag in &t.tags {
        let _ =
            write!(out, "\n#{} ({}{})", tag.tag, tag.count, if tag.registered { ", registered" } else { "" });
    }
    out
}

pub(super) fn related(r: &Related) -> String {
    let mut out = format!(
        "{}: {} outlinks, {} backlinks, {} broken",
        r.path,
        r.outlinks.len(),
        r.backlinks.len(),
        r.broken.len()
    );
    for link in &r.outlinks {
        let _ = write!(
            out,
            "\n-> {} (L{}): {}",
            link.target,
            link.line,
            link.resolved.as_deref().unwrap_or("BROKEN")
        );
    }
    for link in &r.backlinks {
        let _ = write!(out, "\n<- {} (L{})", link.path, link.line);
    }
    out
}

pub(super) fn recent(r: &Recent) -> String {
    let mut out = format!("{} recent notes", r.notes.len());
    for note in &r.notes {
        let _ = write!(out, "\n- {} {} — {}", note.updated, note.path, note.title);
    }
    out
}

pub(super) fn proposed_new(r: &ProposeNewResult) -> String {
    let mut out = format!(
        "staged proposal {} (new note {}); nothing in the vault changed. Ask the person to review and approve it (in the review card if your host shows it, else with `kb-index review`).",
        r.proposal_id, r.target
    );
    if !r.similar.is_empty() {
        out.push_str("\nsimilar existing notes:");
        for note in &r.similar {
            let _ = write!(out, "\n- {} — {}", note.path, note.title);
        }
    }
    out.push_str(&links_elsewhere(&r.breaks, &r.redirected, r.unlisted, &r.proposal_id));
    let _ = write!(out, "\n\n{}", r.preview);
    out
}

pub(super) fn proposed_patch(r: &ProposePatchResult) -> String {
    format!(
        "staged proposal {} (patch of {}: +{} -{}); nothing in the vault changed. Ask the person to review and approve it (in the review card if your host shows it, else with `kb-index review`).{}\n\n{}",
        r.proposal_id,
        r.target,
        r.added,
        r.removed,
        links_elsewhere(&r.breaks, &r.redirected, r.unlisted, &r.proposal_id),
        r.diff
    )
}

/// The links in other notes a new note or a patch will break or lead
/// elsewhere (no line when there are none): no diff shows them.
fn links_elsewhere(breaks: &[BrokenBy], redirected: &[BrokenBy], unlisted: u32, id: &str) -> String {
    let mut out = String::new();
    if !breaks.is_empty() {
        let _ = write!(out, "\n{} link(s) in other notes will break:", breaks.len());
        for b in breaks {
            let _ = write!(out, "\n- {}:{} {}", b.path, b.line, b.link);
        }
    }
    if !redirected.is_empty() {
        let _ = write!(out, "\n{} link(s) in other notes will lead elsewhere:", redirected.len());
        for b in redirected {
            let _ = write!(out, "\n- {}:{} {} → {}", b.path, b.line, b.link, b.to.as_deref().unwrap_or("?"));
        }
    }
    if unlisted > 0 {
        let _ = write!(out, "\n… and {unlisted} more (`kb-index inbox show {id}` names every one)");
    }
    out
}

pub(super) fn proposed_move(r: &ProposeMoveResult) -> String {
    format!(
        "staged proposal {} ({} notes move, {} links rewritten in {} notes); nothing in the vault changed. Ask the person to review and approve it (in the review card if your host shows it, else with `kb-index review`).\n\n{}",
        r.proposal_id,
        r.moves.len() as u64 + r.moves_omitted,
        r.rewrites.links,
        r.rewrites.notes,
        r.diff
    )
}

pub(super) fn proposed_delete(r: &ProposeDeleteResult) -> String {
    let mut out = format!(
        "staged proposal {} (delete {} to the inbox's trash); nothing in the vault changed. {} link(s) will break:",
        r.proposal_id,
        r.target,
        r.breaks.len()
    );
    if r.unlisted > 0 {
        let _ = write!(
            out,
            " (and {} more not listed: `kb-index inbox show {}` lists all)",
            r.unlisted, r.proposal_id
        );
    }
    for b in &r.breaks {
        let _ = write!(out, "\n- {}:{} {}", b.path, b.line, b.link);
    }
    if !r.redirected.is_empty() {
        let _ = write!(out, "\n{} link(s) will lead to another note instead:", r.redirected.len());
        for b in &r.redirected {
            let _ = write!(out, "\n- {}:{} {} → {}", b.path, b.line, b.link, b.to.as_deref().unwrap_or("?"));
        }
    }
    out
}

pub(super) fn proposed_batch(r: &ProposeBatchResult) -> String {
    format!(
        "staged proposal {} (a batch); nothing in the vault changed. Ask the person to review and approve it (in the review card if your host shows it, else with `kb-index review`).\n\n{}",
        r.proposal_id, r.diff
    )
}

pub(super) fn proposed_revert(r: &RevertResult) -> String {
    let kept = if r.merged.is_empty() {
        String::new()
    } else {
        format!(" It keeps the edits made since to {}.", r.merged.join(", "))
    };
    format!(
        "staged proposal {} (a revert); nothing in the vault changed.{kept} Ask the person to review and approve it (in the review card if your host shows it, else with `kb-index review`).\n\n{}",
        r.proposal_id, r.diff
    )
}

pub(super) fn proposed_restore(r: &RestoreResult) -> String {
    let what = match r.kind {
        ProposalKind::New => format!("{} made again", r.target),
        _ => format!("patch of {}: +{} -{}", r.target, r.added, r.removed),
    };
    format!(
        "staged proposal {} ({what}, back to the version {} of {}); nothing in the vault changed. Ask the person to review and approve it (in the review card if your host shows it, else with `kb-index review`).{}\n\n{}",
        r.proposal_id,
        &r.commit[..12.min(r.commit.len())],
        r.at,
        links_elsewhere(&r.breaks, &r.redirected, r.unlisted, &r.proposal_id),
        r.diff
    )
}

pub(super) fn proposals(r: &Proposals) -> String {
    let mut out = count(r.proposals.len() as u64, "proposal");
    for p in &r.proposals {
        // The checks tell whether a pending proposal can still be applied; an
        // applied or rejected one has no such question (its note has moved on).
        let ok = p.status != ProposalStatus::Pending
            || (p.checks.intact && p.checks.base_current && p.checks.target_free);
        let _ = write!(
            out,
            "\n- {} [{}] {} — {}{}",
            p.proposal_id,
            p.status,
            p.summary,
            p.reason,
            if ok { "" } else { " (a check fails)" }
        );
    }
    out.push_str(&conflict_lines(r.conflict_copies.as_ref()));
    out
}

pub(super) fn applied(r: &ApplyResult) -> String {
    format!("{} {}: {} is now {} (archived in {})", r.status, r.proposal_id, r.target, r.new_hash, r.archive)
}

pub(super) fn recall(r: &RecallPack) -> String {
    let mut out = stale_line(r.stale.as_ref());
    let _ = write!(
        out,
        "context for `{}`: {}, about {} of {} tokens",
        r.topic,
        count(r.items.len() as u64, "item"),
        r.used_tokens,
        r.budget_tokens
    );
    for item in &r.items {
        let _ = write!(
            out,
            "\n\n## {} — {}{} ({})\n{}",
            item.path,
            item.title,
            item.section.as_deref().map(|s| format!(" § {s}")).unwrap_or_default(),
            item.reason,
            item.text
        );
    }
    out
}

pub(super) fn audit(a: &Audit) -> String {
    let mut out = format!("{}, {} of them errors", count(a.total, "finding"), a.errors);
    for (check, n) in a.counts.iter().filter(|(_, n)| **n > 0) {
        let _ = write!(out, "\n{check}: {n}");
    }
    for f in &a.findings {
        let line = f.line.map_or(String::new(), |l| format!(":{l}"));
        let severity = match f.severity {
            Severity::Error => "error",
            Severity::Warning => "warning",
            Severity::Info => "info",
        };
        let _ = write!(out, "\n- {severity} {} {}{line}: {}", f.check.name(), f.path, f.message);
        if let Some(fix) = &f.fix {
            let what = if fix.mechanical { "fix" } else { "suggestion" };
            let _ = write!(out, " [{what}: {}]", fix.summary);
        }
    }
    if !a.proposals.is_empty() {
        let _ = write!(
            out,
            "\nstaged {}: {}",
            count(a.proposals.len() as u64, "proposal"),
            a.proposals.join(", ")
        );
    }
    for message in a.unstaged_messages() {
        let _ = write!(out, "\n{message}");
    }
    if let Some(cursor) = &a.next_cursor {
        let _ = write!(out, "\n[more: call again with cursor {cursor}]");
    }
    out
}

pub(super) fn history(h: &HistoryResults) -> String {
    let mut out = match h.versions.len() {
        0 => format!("{}: no version recorded", h.path),
        n => format!("{}: {}", h.path, count(n as u64, "version")),
    };
    for v in &h.versions {
        let by = match (&v.by, &v.proposal_id) {
            (VersionBy::Proposal, Some(id)) => format!(
                "proposal {id} ({}, approved by {})",
                v.kind.as_deref().unwrap_or("?"),
                v.approved_by.as_deref().unwrap_or("?")
            ),
            (VersionBy::OnDisk, _) => "on disk".to_owned(),
            _ => "another commit".to_owned(),
        };
        let what = match &v.hash {
            Some(_) => format!("+{} -{}", v.added, v.removed),
            None => "removed".to_owned(),
        };
        let _ = write!(out, "\n- {} {} — {by}, {what}", &v.commit[..v.commit.len().min(12)], v.at);
        if v.path != h.path {
            let _ = write!(out, " (as {})", v.path);
        }
    }
    if let Some(cursor) = &h.next_cursor {
        let _ = write!(out, "\n[more: call again with cursor {cursor}]");
    }
    out
}

pub(super) fn notes(l: &NoteList) -> String {
    let shown = if l.folder.is_empty() { "the vault's top level" } else { l.folder.as_str() };
    let mut out = format!("{shown}: {} of {}", l.notes.len(), count(l.total, "note"));
    if !l.folders.is_empty() {
        let _ = write!(out, ", {}", count(l.folders.len() as u64 + l.folders_omitted, "folder"));
    }
    for folder in &l.folders {
        let _ = write!(out, "\n{}/ ({})", folder.path, count(folder.notes, "note"));
    }
    if l.folders_omitted > 0 {
        let _ = write!(out, "\n… and {}", count(l.folders_omitted, "more folder"));
    }
    for note in &l.notes {
        let _ = write!(out, "\n- {} — {} (updated {})", note.path, note.title, note.updated);
    }
    if let Some(cursor) = &l.next_cursor {
        let _ = write!(out, "\n[more: call again with cursor {cursor}]");
    }
    out
}
