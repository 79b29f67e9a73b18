//! How `kb-index` writes for people: colour on a terminal (paths, line
//! numbers, matches, diffs; `--color never|auto|always`, and `NO_COLOR`), local
//! times, sizes, and counted nouns ("1 note", "2 notes").

use std::io::IsTerminal;

/// `--color`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub(crate) enum ColorChoice {
    /// Colour when stdout is a terminal and NO_COLOR is not set.
    Auto,
    /// Always colour.
    Always,
    /// Never colour.
    Never,
}

/// Colours for a terminal; plain text otherwise.
pub(crate) struct Paint {
    on: bool,
    /// Whether stdout is a terminal (a person reads it, not a program).
    terminal: bool,
}

impl Paint {
    pub(crate) fn new(choice: ColorChoice) -> Paint {
        let terminal = std::io::stdout().is_terminal();
        let on = match choice {
            ColorChoice::Always => true,
            ColorChoice::Never => false,
            ColorChoice::Auto => terminal && std::env::var_os("NO_COLOR").is_none_or(|v| v.is_empty()),
        };
        Paint { on, terminal }
    }

    fn wrap(&self, code: &str, text: &str) -> String {
        if self.on { format!("\x1b[{code}m{text}\x1b[0m") } else { text.to_owned() }
    }
    pub(crate) fn good(&self, text: &str) -> String {
        self.wrap("32", text)
    }
    pub(crate) fn bad(&self, text: &str) -> String {
        self.wrap("31", text)
    }
    pub(crate) fn strong(&self, text: &str) -> String {
        self.wrap("1", text)
    }
    /// Text that matters less (a weak hit's mark).
    pub(crate) fn dim(&self, text: &str) -> String {
        self.wrap("2", text)
    }
    /// A note's path (magenta, as ripgrep prints file names).
    pub(crate) fn path(&self, text: &str) -> String {
        self.wrap("35", text)
    }
    /// A line number.
    pub(crate) fn line(&self, text: &str) -> String {
        self.wrap("32", text)
    }
    /// A snippet whose matches the search marked `**…**` at `marks` (the
    /// note's own `**bold**` is its text and stays): with colour, a match is
    /// coloured; on a terminal without colour, or when `keep_marks` asks, it
    /// keeps its `**`; piped, it is plain text, so a program reading it sees
    /// the note's words as written.
    pub(crate) fn snippet(&self, text: &str, marks: &[(usize, usize)], keep_marks: bool) -> String {
        let keep = keep_marks || (self.terminal && !self.on);
        let mut out = String::with_capacity(text.len());
        let mut cursor = 0;
        for &(start, end) in marks {
            let Some(inner) = text.get(start + 2..end.saturating_sub(2)).filter(|_| start >= cursor) else {
                continue;
            };
            out.push_str(&text[cursor..start]);
            let shown = if keep { format!("**{inner}**") } else { inner.to_owned() };
            out.push_str(&self.wrap("1;31", &shown));
            cursor = end;
        }
        out.push_str(&text[cursor..]);
        out
    }
    /// A unified diff: headers bold, hunk lines cyan, additions green, removals red.
    pub(crate) fn diff(&self, diff: &str) -> String {
        let mut out = String::new();
        for line in diff.lines() {
            let painted = if line.starts_with("+++ ") || line.starts_with("--- ") {
                self.wrap("1", line)
            } else if line.starts_with("@@") {
                self.wrap("36", line)
            } else if line.starts_with('+') {
                self.wrap("32", line)
            } else if line.starts_with('-') {
                self.wrap("31", line)
            } else {
                line.to_owned()
            };
            out.push_str(&painted);
            out.push('\n');
        }
        out
    }
}

/// A stored time (RFC 3339) in the local time zone, for people:
/// `2026-12-01 21:05:03 +08:00`. Anything that does not parse is shown as it is.
pub(crate) fn local_time(text: &str) -> String {
    match text.parse::<jiff::Timestamp>() {
        Ok(at) => at.to_zoned(jiff::tz::TimeZone::system()).strftime("%Y-%m-%d %H:%M:%S %:z").to_string(),
        Err(_) => text.to_owned(),
    }
}

/// `1 note`, `2 notes`: `noun` is the singular; the plural adds `s`.
pub(crate) fn count(n: impl Into<u64>, noun: &str) -> String {
    let n = n.into();
    if n == 1 { format!("1 {noun}") } else { format!("{n} {noun}s") }
}

/// `3 links will break:` (`{count} {what}:`) then one link a line, its note
/// and line painted, and for a link that will lead elsewhere, where to.
/// Nothing when `links` is empty.
pub(crate) fn write_links(
    out: &mut dyn std::io::Write,
    paint: &Paint,
    what: &str,
    links: &[kb_mcp::engine::types::BrokenBy],
) -> std::io::Result<()> {
    if links.is_empty() {
        return Ok(());
    }
    writeln!(out, "{} {what}:", count(links.len() as u64, "link"))?;
    for link in links {
        let to = link.to.as_deref().map(|to| format!(" → {}", paint.path(to))).unwrap_or_default();
        writeln!(
            out,
            "    {}:{}: {}{to}",
            paint.path(&link.path),
            paint.line(&link.line.to_string()),
            link.link
        )?;
    }
    Ok(())
}

/// The other pending proposals touching the same notes as the one shown, one a
/// line with the notes both touch; nothing when there are none.
pub(crate) fn write_overlaps(
    out: &mut dyn std::io::Write,
    paint: &Paint,
    overlaps: &[kb_mcp::engine::PendingOverlap],
) -> std::io::Result<()> {
    if overlaps.is_empty() {
        return Ok(());
    }
    let others = if overlaps.len() == 1 {
        "1 other pending proposal touches".to_owned()
    } else {
        format!("{} other pending proposals touch", overlaps.len())
    };
    writeln!(out, "{others} the same notes; once either is applied, the other fails its checks:")?;
    for overlap in overlaps {
        let paths: Vec<String> = overlap.paths.iter().map(|path| paint.path(path)).collect();
        writeln!(
            out,
            "    {} {} ({})",
            paint.strong(&overlap.proposal_id),
            overlap.summary,
            paths.join(", ")
        )?;
    }
    Ok(())
}

/// The conflict copies in the inbox, a line each: the copy, the note it
/// belongs to, and what to do with it; nothing when there are none.
pub(crate) fn write_conflict_copies(
    out: &mut dyn std::io::Write,
    paint: &Paint,
    copies: Option<&kb_mcp::engine::types::ConflictCopies>,
) -> std::io::Result<()> {
    let Some(copies) = copies else { return Ok(()) };
    let what = if copies.total == 1 {
        "1 conflict copy".to_owned()
    } else {
        format!("{} conflict copies", copies.total)
    };
    writeln!(out, "{}: files an apply kept apart because they may hold a save of yours", paint.bad(&what))?;
    for copy in &copies.copies {
        writeln!(
            out,
            "    {} (of {}): compare it with the note, keep what you want in the note, then delete the copy",
            paint.path(&copy.path),
            paint.path(&copy.note)
        )?;
    }
    let listed = copies.copies.len() as u64;
    if copies.total > listed {
        writeln!(out, "    … and {} more in the inbox's conflicts/ folder", copies.total - listed)?;
    }
    Ok(())
}

pub(crate) fn human_bytes(bytes: u64) -> String {
    if bytes >= 1 << 20 {
        format!("{:.1} MiB", bytes as f64 / f64::from(1 << 20))
    } else {
        format!("{:.1} KiB", bytes as f64 / 1024.0)
    }
}
