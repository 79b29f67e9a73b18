//! `audit_vault` and `kb-index audit`: the vault's health in one call.
//!
//! Most checks read nothing but the catalog and its link graph (broken links and
//! anchors, ambiguous links, orphans, tags, duplicate titles, maps of content,
//! sizes). Only three need a note's text: `frontmatter` (when `[lint]` has rules),
//! `unlinked_mention` and `empty_note` (only for notes small and bare enough to
//! be empty); those files are read once, in parallel. Findings are computed
//! whole and kept in order by path, line, check and message (`findings.rs`:
//! millions of unlinked mentions kept small, written out a page at a time), so
//! `total` and `counts` cover every page; a page's cursor names the last finding returned, not a position, so a
//! finding that stays is never skipped or repeated while notes change.
//!
//! A file per family of checks: `links.rs` (broken links and anchors,
//! ambiguous links, the note a broken link meant), `tags.rs` (unregistered tags,
//! frontmatter diagnostics), `notes.rs` (orphans, duplicate titles, maps of
//! content, sizes, skipped files), `text.rs` (the checks that read notes' text),
//! `findings.rs` (the findings of one audit, their counts and pages),
//! `mentions/` (unlinked mentions), `cursor.rs` (order and paging), `fix.rs`
//! (mechanical fixes staged as proposals) and `spelling.rs` (when a fix is
//! mechanical).

mod cursor;
mod findings;
mod fix;
mod links;
mod mentions;
mod notes;
mod spelling;
mod tags;
mod text;

pub(super) use mentions::MentionCache;

use std::collections::{BTreeMap, BTreeSet};
use std::sync::{Arc, Mutex, Weak};

use self::findings::{AuditFindings, Findings};
use super::types::{AUDIT_LIMIT, Audit, AuditArgs, AuditCheck};
use super::{Catalog, Engine};
use crate::error::{Error, Result};
use crate::vault::graph::Graph;
use crate::vault::{NoteKind, NoteRecord, VaultConfig};

/// Most other notes a finding names.
const NAMED_MAX: usize = 5;

/// A check that reads only the catalog and its graph, adding its findings.
type NoteCheck = fn(&Scope<'_>, &mut Findings);

/// The checks of notes as a whole that read only the catalog and its graph.
const NOTE_CHECKS: [(AuditCheck, NoteCheck); 6] = [
    (AuditCheck::Orphan, notes::orphans),
    (AuditCheck::UnregisteredTag, tags::unregistered),
    (AuditCheck::Frontmatter, tags::frontmatter_diagnostics),
    (AuditCheck::DuplicateTitle, notes::duplicate_titles),
    (AuditCheck::MocMissing, notes::moc_missing),
    (AuditCheck::OversizeNote, notes::oversize),
];

/// What every check reads: the catalog snapshot, the configuration and the
/// notes under the folder asked for.
struct Scope<'a> {
    catalog: &'a Catalog,
    records: &'a [Arc<NoteRecord>],
    attachments: &'a [String],
    config: &'a VaultConfig,
    /// `folder/`, or empty for the whole vault.
    prefix: String,
    /// The notes (not standards or other kinds) under the folder, by position.
    in_scope: Vec<usize>,
}

impl<'a> Scope<'a> {
    /// The link graph (built on first use, once per catalog snapshot).
    fn graph(&self) -> &'a Graph {
        self.catalog.graph()
    }

    fn new(catalog: &'a Catalog, config: &'a VaultConfig, folder: &str) -> Scope<'a> {
        let records = catalog.records();
        let prefix = if folder.is_empty() { String::new() } else { format!("{folder}/") };
        let start = records.partition_point(|r| r.path.as_str() < prefix.as_str());
        let in_scope = (start..records.len())
            .take_while(|&i| records[i].path.starts_with(&prefix))
            // A PDF is no note to check: its problems are its skip reasons.
            .filter(|&i| records[i].kind == NoteKind::Note && !crate::vault::is_pdf(&records[i].path))
            .collect();
        Scope { catalog, records, attachments: catalog.attachments(), config, prefix, in_scope }
    }
}

/// The findings of the last audit, kept so the pages after the first (and
/// `kb-index audit`, which pages through them all) do not run every check
/// again: valid while the catalog snapshot, the configuration, the checks, the
/// folder and (for a first page, which walks the vault for them) the skipped
/// files are the same. Beside them, the index of every
/// note's names that finds the note a broken link meant, for the same catalog.
#[derive(Debug, Default)]
pub(crate) struct LastAudit {
    findings: Mutex<Option<KeptAudit>>,
    names: Mutex<Option<(Weak<Catalog>, Arc<links::NameIndex>)>>,
}

/// Whether `kept` was made from `current` (a weak reference keeps the
/// allocation, so its address is not reused, without keeping an old snapshot's
/// records and graph alive).
fn same<T>(kept: &Weak<T>, current: &Arc<T>) -> bool {
    std::ptr::eq(kept.as_ptr(), Arc::as_ptr(current))
}

impl LastAudit {
    /// The name index of `catalog`, made on first use.
    fn names(&self, catalog: &Arc<Catalog>) -> Arc<links::NameIndex> {
        let mut kept = self.names.lock().unwrap_or_else(|p| p.into_inner());
        match kept.as_ref() {
            Some((of, names)) if same(of, catalog) => Arc::clone(names),
            _ => {
                let names = Arc::new(links::NameIndex::new(catalog.records()));
                *kept = Some((Arc::downgrade(catalog), Arc::clone(&names)));
                names
            }
        }
    }
}

/// The files skipped as notes, path and reason (`None`: not asked for).
type Skipped = Option<Vec<(String, String)>>;

#[derive(Debug)]
struct KeptAudit {
    catalog: Weak<Catalog>,
    config: Weak<VaultConfig>,
    checks: BTreeSet<AuditCheck>,
    folder: String,
    skipped: Skipped,
    findings: Arc<AuditFindings>,
}

impl KeptAudit {
    fn answers(
        &self,
        catalog: &Arc<Catalog>,
        config: &Arc<VaultConfig>,
        checks: &BTreeSet<AuditCheck>,
        folder: &str,
    ) -> bool {
        same(&self.catalog, catalog)
            && same(&self.config, config)
            && self.checks == *checks
            && self.folder == folder
    }
}

impl Engine {
    /// `audit_vault` (and `kb-index audit`): the findings of the checks asked
    /// for, one page of them; with `fix`, the mechanical fixes staged as
    /// proposals, one batch per kind of fix, and the fixes left unstaged by
    /// reason (the caller checks the access level).
    pub fn audit_vault(&self, args: &AuditArgs) -> Result<Audit> {
        let limit = AUDIT_LIMIT.check("limit", args.limit)? as usize;
        let checks: BTreeSet<AuditCheck> = match &args.checks {
            Some(list) if list.is_empty() => {
                return Err(Error::invalid("`checks` is empty")
                    .with_hint("name at least one check, or leave `checks` out to run them all"));
            }
            Some(list) => list.iter().copied().collect(),
            None => AuditCheck::ALL.into_iter().collect(),
        };
        let folder = self.existing_folder(
            args.folder.as_deref(),
            "list_notes (`kb-index ls`) shows the vault's folders; or leave `folder` out",
        )?;
        let scope = cursor::scope(&checks, &folder);
        let after = args.cursor.as_deref().map(|text| cursor::decode(text, &scope)).transpose()?;

        let (catalog, findings) = self.audit_findings(&checks, &folder, after.is_some())?;
        let (by_check, errors) = findings.counts();
        let mut counts: BTreeMap<String, u64> = checks.iter().map(|c| (c.name().to_owned(), 0)).collect();
        for (check, n) in by_check {
            *counts.entry(check.name().to_owned()).or_default() += n;
        }
        let errors = *errors;
        let (proposals, unstaged) = if args.fix {
            let mut all = findings.listed().to_vec();
            self.suggest_notes(&mut all);
            self.stage_fixes(&all)?
        } else {
            (Vec::new(), BTreeMap::new())
        };
        let total = findings.len() as u64;
        let key = after
            .as_ref()
            .map(|(path, line, check, message)| (path.as_str(), *line, *check, message.as_str()));
        let (mut page, more) = findings.page(catalog.records(), key, limit);
        let next_cursor = more.then(|| page.last().map(|last| cursor::encode(&scope, last))).flatten();
        super::timing::time("audit_suggest", || self.suggest_notes(&mut page));
        Ok(Audit {
            checks_run: checks.into_iter().collect(),
            counts,
            errors,
            total,
            findings: page,
            next_cursor,
            proposals,
            unstaged,
        })
    }

    /// Every finding of `checks` for the notes under `folder` (`""`: all),
    /// sorted: those of the last audit when nothing they depend on changed.
    /// A later page (`later`) takes them without walking the vault again for
    /// skipped files: they are the audit its cursor belongs to.
    fn audit_findings(
        &self,
        checks: &BTreeSet<AuditCheck>,
        folder: &str,
        later: bool,
    ) -> Result<(Arc<Catalog>, Arc<AuditFindings>)> {
        let catalog = self.catalog();
        let config = self.config();
        let mut last = self.last_audit.findings.lock().unwrap_or_else(|p| p.into_inner());
        let kept = last.as_ref().filter(|k| k.answers(&catalog, &config, checks, folder));
        if later && let Some(kept) = kept {
            return Ok((catalog, Arc::clone(&kept.findings)));
        }
        let walk = || -> Result<Skipped> {
            if !checks.contains(&AuditCheck::SkippedFile) {
                return Ok(None);
            }
            Ok(Some(super::timing::time("audit_skipped", || self.staleness())?.skipped))
        };
        let (findings, skipped) = match kept {
            // The same catalog: only the skipped files can differ, and only a
            // walk tells.
            Some(kept) => {
                let skipped = walk()?;
                if kept.skipped == skipped {
                    return Ok((catalog, Arc::clone(&kept.findings)));
                }
                self.run_checks(&catalog, &config, checks, folder, move || Ok(skipped))?
            }
            // The walk runs beside the checks.
            None => self.run_checks(&catalog, &config, checks, folder, walk)?,
        };
        let findings = Arc::new(findings);
        *last = Some(KeptAudit {
            catalog: Arc::downgrade(&catalog),
            config: Arc::downgrade(&config),
            checks: checks.clone(),
            folder: folder.to_owned(),
            skipped,
            findings: Arc::clone(&findings),
        });
        Ok((catalog, findings))
    }

    /// Runs `checks` over the notes under `folder`, with the skipped files
    /// `skipped` finds; the findings in order, and those skipped files.
    ///
    /// Three strands run side by side: the skipped files (a walk of the
    /// vault); the link graph and the checks that read it (the name index that
    /// suggests what a broken link meant is made there too, when there are
    /// broken links); the checks that read notes' text, unlinked mentions
    /// among them (which wait for the graph only at their last step).
    fn run_checks(
        &self,
        catalog: &Arc<Catalog>,
        config: &VaultConfig,
        checks: &BTreeSet<AuditCheck>,
        folder: &str,
        skipped: impl FnOnce() -> Result<Skipped> + Send,
    ) -> Result<(AuditFindings, Skipped)> {
        use super::timing::{join, time};
        let scope = Scope::new(catalog, config, folder);
        let run = |check: AuditCheck| checks.contains(&check);
        let graph_checks = || {
            let mut findings = Findings::default();
            if run(AuditCheck::BrokenLink) || run(AuditCheck::BrokenAnchor) || run(AuditCheck::AmbiguousLink)
            {
                time("audit_links", || links::check(&scope, &run, &mut findings));
            }
            time("audit_notes", || {
                for (check, find) in NOTE_CHECKS {
                    if run(check) {
                        find(&scope, &mut findings);
                    }
                }
            });
            if findings.0.iter().any(|f| f.check == AuditCheck::BrokenLink) {
                time("audit_names", || self.last_audit.names(catalog));
            }
            findings
        };
        let ((skipped, graph_findings), (text_findings, mentions)) =
            join(|| join(skipped, graph_checks), || self.text_checks(&scope, &run));
        let skipped = skipped?;
        let mut findings = graph_findings;
        findings.0.extend(text_findings.0);
        if let Some(skipped) = &skipped {
            notes::skipped(&scope, skipped, &mut findings);
        }
        Ok((time("audit_sort", || AuditFindings::new(findings, mentions)), skipped))
    }
}
