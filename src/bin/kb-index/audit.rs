//! `kb-index audit [FOLDER] [-v] [--json] [--fix [--yes]]`: what `audit_vault`
//! finds, for a person: the errors and warnings (all pages) by path, then the
//! counts per check, each finding's fix marked mechanical or a suggestion. Info
//! findings (orphans, unlinked mentions: often thousands in a large vault) are
//! counted, not listed, unless `-v` asks for them; `--json` holds every one. `--fix` stages
//! the mechanical fixes as proposals (one batch per kind of fix) for review
//! with `kb-index inbox`, and says which fixes it left unstaged and why;
//! `--yes` also applies them. The index is brought up to date first. Exit 1
//! when any finding is an error.

use std::io::Write;

use kb_mcp::engine::Engine;
use kb_mcp::engine::types::{AUDIT_LIMIT, ApplyArgs, AuditArgs, AuditCheck, Severity};

use crate::Failure;
use crate::output::{Paint, count};

/// The arguments of `kb-index audit`.
#[derive(Debug, clap::Args)]
pub(crate) struct AuditCmdArgs {
    /// Only notes under this folder (vault-relative).
    folder: Option<String>,
    /// Only these checks (comma-separated, e.g. broken_link,orphan; default: all).
    #[arg(long, value_delimiter = ',')]
    checks: Vec<String>,
    /// Print JSON (the tool's structured result, every page in one, info findings included).
    #[arg(short, long)]
    json: bool,
    /// Also list the info findings (orphans, unlinked mentions); by default they are only counted.
    #[arg(short, long)]
    verbose: bool,
    /// Stage the mechanical fixes as proposals, one per kind of fix (see `kb-index inbox list`).
    #[arg(long)]
    pub(crate) fix: bool,
    /// With --fix: apply the staged fixes too.
    #[arg(long, requires = "fix")]
    yes: bool,
}

pub(crate) fn run(
    engine: &Engine,
    args: &AuditCmdArgs,
    paint: &Paint,
    out: &mut dyn Write,
) -> Result<u8, Failure> {
    let mut checks = Vec::new();
    for name in args.checks.iter().map(|n| n.trim()).filter(|n| !n.is_empty()) {
        match AuditCheck::ALL.into_iter().find(|c| c.name() == name) {
            Some(check) => checks.push(check),
            None => {
                let known: Vec<&str> = AuditCheck::ALL.iter().map(|c| c.name()).collect();
                return Err(Failure::usage(format!(
                    "unknown check `{name}`\nhint: the checks are {}",
                    known.join(", ")
                )));
            }
        }
    }
    if let Err(error) = engine.sync(false, None) {
        if engine.record_count() == 0 {
            return Err(error.into());
        }
        eprintln!("kb-index: warning: auditing the index as it is, which may be stale: {error}");
    }
    let mut request = AuditArgs {
        checks: (!checks.is_empty()).then_some(checks),
        folder: args.folder.clone(),
        limit: Some(AUDIT_LIMIT.max),
        cursor: None,
        fix: args.fix,
    };
    let mut audit = engine.audit_vault(&request)?;
    request.fix = false;
    while let Some(cursor) = audit.next_cursor.take() {
        request.cursor = Some(cursor);
        let page = engine.audit_vault(&request)?;
        audit.findings.extend(page.findings);
        audit.next_cursor = page.next_cursor;
    }
    let mut applied = 0u64;
    if args.yes {
        for id in &audit.proposals {
            engine
                .apply_proposal(&ApplyArgs { proposal_id: id.clone() }, kb_mcp::engine::types::Actor::Cli)?;
            applied += 1;
        }
    }
    if args.json {
        writeln!(out, "{}", serde_json::to_string_pretty(&audit).unwrap_or_default())?;
    } else {
        let mut info_hidden = 0u64;
        for f in &audit.findings {
            if f.severity == Severity::Info && !args.verbose {
                info_hidden += 1;
                continue;
            }
            let severity = match f.severity {
                Severity::Error => paint.bad("error"),
                Severity::Warning => paint.strong("warning"),
                Severity::Info => "info".to_owned(),
            };
            let line = f.line.map_or(String::new(), |l| format!(":{}", paint.line(&l.to_string())));
            writeln!(out, "{}{line}: {severity} [{}] {}", paint.path(&f.path), f.check.name(), f.message)?;
            if let Some(fix) = &f.fix {
                let what = if fix.mechanical { "fix" } else { "suggestion" };
                writeln!(out, "    {what}: {}", fix.summary)?;
            }
        }
        if info_hidden > 0 {
            writeln!(
                out,
                "{} not listed (orphans, unlinked mentions); `kb-index audit -v` lists them",
                count(info_hidden, "info finding")
            )?;
        }
        let counts: Vec<String> =
            audit.counts.iter().filter(|(_, n)| **n > 0).map(|(check, n)| format!("{check} {n}")).collect();
        let summary = format!(
            "{}, {} ({})",
            count(audit.total, "finding"),
            count(audit.errors, "error"),
            if counts.is_empty() { "all checks pass".to_owned() } else { counts.join(", ") }
        );
        writeln!(out, "{}", if audit.errors > 0 { paint.bad(&summary) } else { paint.good(&summary) })?;
        if !audit.proposals.is_empty() {
            if args.yes {
                writeln!(out, "applied {}: {}", count(applied, "fix proposal"), audit.proposals.join(", "))?;
            } else {
                writeln!(
                    out,
                    "staged {}: {}; review them with `kb-index inbox list --diff`",
                    count(audit.proposals.len() as u64, "fix proposal"),
                    audit.proposals.join(", ")
                )?;
            }
        } else if args.fix {
            writeln!(out, "no mechanical fix staged")?;
        }
        for message in audit.unstaged_messages() {
            writeln!(out, "{message}")?;
        }
    }
    // After applying, what is left decides.
    let errors = if applied > 0 {
        request.cursor = None;
        request.limit = Some(1);
        let after = engine.audit_vault(&request)?;
        writeln!(out, "after the fixes: {}", count(after.errors, "error"))?;
        after.errors
    } else {
        audit.errors
    };
    Ok(if errors > 0 { 1 } else { 0 })
}
