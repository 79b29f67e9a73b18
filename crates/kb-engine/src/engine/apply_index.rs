//! The index side of an apply ([`write::ApplyIndex`]): the notes a
//! multi-file apply rewrites are parsed and added to an index update while
//! its files are written, and committed only once the apply has passed its
//! commit point.
//!
//! The write layer tells the new texts as soon as the plan is loaded
//! ([`ApplyIndexer::ahead`]): a thread parses them. Once the texts are
//! written beside their notes it tells the files' sizes and times
//! ([`ApplyIndexer::prepared`], known then: each swap moves that very file to
//! its note's name), and the thread takes the index writer and adds the
//! documents (tantivy tokenises them on its own threads) while the swaps run.
//! Nothing is committed there. [`ApplyIndexer::update`], called after the
//! commit point with every path the apply touched, keeps a document made
//! ahead only when the note's file is still the one written (same size and
//! times, looked at now), reads every other path from disk as
//! [`Engine::refresh_notes`] does (a save a person made since, a note moved
//! without a change, a removed one), and commits all of it in one commit. When
//! the apply fails, is rolled back or stops at a failpoint before that, the
//! update is dropped uncommitted (a real crash leaves tantivy's uncommitted
//! files, which its next commit collects): searches never see texts the vault
//! does not hold. When the index cannot be taken ahead (another update of
//! this process is under way, the folder is read-only, the thread failed),
//! `update` does what it did before: [`Engine::refresh_notes`].

use std::collections::{HashMap, HashSet};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, MutexGuard, mpsc};
use std::thread::{Scope, ScopedJoinHandle};

use rayon::prelude::*;

use super::Engine;
use super::sync::{INDEX_MAX_BYTES, document_of, kind_of, nanos};
use crate::error::{Error, Result};
use crate::index::{IndexDocument, PendingUpdate};
use crate::sandbox::{Area, FileStat, NotePath};
use crate::write::{self, NewText};

/// An apply's index update for [`write::apply_with_index`]; threads it starts
/// run in `scope` and never outlive it.
pub(super) struct ApplyIndexer<'scope, 'env> {
    engine: &'env Engine,
    scope: &'scope Scope<'scope, 'env>,
    ahead: Option<Ahead<'scope>>,
    /// This process's other index updates wait from [`ApplyIndexer::prepared`]
    /// to the commit or roll-back (see `SearchIndex::serialise`).
    serial: Option<MutexGuard<'env, ()>>,
}

/// The work started by [`ApplyIndexer::ahead`].
struct Ahead<'scope> {
    /// Where the prepared files' sizes and times go; dropped unsent, the
    /// thread stops without taking the writer.
    files: Option<mpsc::Sender<Vec<Option<FileStat>>>>,
    /// Set when the apply failed: the thread stops at the next note.
    cancel: Arc<AtomicBool>,
    work: ScopedJoinHandle<'scope, Result<Option<Indexed>>>,
}

/// An update filled ahead and not committed: the documents added, each with
/// the file it was made for.
struct Indexed {
    pending: PendingUpdate,
    documents: Vec<(IndexDocument, FileStat)>,
}

impl<'scope, 'env> ApplyIndexer<'scope, 'env> {
    pub(super) fn new(engine: &'env Engine, scope: &'scope Scope<'scope, 'env>) -> Self {
        ApplyIndexer { engine, scope, ahead: None, serial: None }
    }

    /// Stops the work started ahead, if any, and drops what it added.
    fn abandon(&mut self) {
        if let Some(mut ahead) = self.ahead.take() {
            ahead.cancel.store(true, Ordering::Relaxed);
            ahead.files.take();
            if let Ok(Ok(Some(indexed))) = ahead.work.join() {
                indexed.pending.rollback();
            }
        }
        self.serial = None;
    }
}

impl Drop for ApplyIndexer<'_, '_> {
    fn drop(&mut self) {
        self.abandon();
    }
}

impl write::ApplyIndex for ApplyIndexer<'_, '_> {
    fn ahead(&mut self, notes: Vec<NewText>) {
        self.abandon();
        if notes.is_empty() || self.engine.index().read_only().is_some() {
            return;
        }
        let (files, stats) = mpsc::channel();
        let cancel = Arc::new(AtomicBool::new(false));
        let (engine, stop) = (self.engine, Arc::clone(&cancel));
        let work = self.scope.spawn(move || fill_ahead(engine, &notes, &stats, &stop));
        self.ahead = Some(Ahead { files: Some(files), cancel, work });
    }

    fn prepared(&mut self, files: Vec<Option<FileStat>>) {
        let Some(ahead) = self.ahead.as_mut() else { return };
        // Only when no other update of this process is under way: the apply
        // never waits for one here (without it, `update` reads the notes).
        match self.engine.index().try_serialise() {
            Some(serial) => {
                self.serial = Some(serial);
                if let Some(sender) = ahead.files.take() {
                    let _ = sender.send(files);
                }
            }
            None => self.abandon(),
        }
    }

    fn linkers(&mut self, targets: &[String]) -> Result<Option<Vec<write::Linker>>> {
        self.engine.linkers_now(targets).map(Some)
    }

    fn update(&mut self, paths: &[NotePath]) -> Result<()> {
        let indexed = match self.ahead.take() {
            Some(mut ahead) => {
                ahead.files.take();
                ahead.work.join().unwrap_or_else(|_| Err(Error::internal("indexing ahead panicked")))
            }
            None => Ok(None),
        };
        match indexed {
            Ok(Some(indexed)) if self.serial.is_some() => {
                let outcome = self.engine.commit_ahead(indexed, paths);
                self.serial = None;
                outcome
            }
            other => {
                if let Ok(Some(indexed)) = other {
                    indexed.pending.rollback();
                }
                self.serial = None;
                self.engine.refresh_notes(paths)
            }
        }
    }
}

/// The thread of [`ApplyIndexer::ahead`]: parses the notes, waits for their
/// files, then takes the writer and adds them. `Ok(None)`: stopped (the apply
/// failed, or nothing was left to add).
fn fill_ahead(
    engine: &Engine,
    notes: &[NewText],
    files: &mpsc::Receiver<Vec<Option<FileStat>>>,
    cancel: &AtomicBool,
) -> Result<Option<Indexed>> {
    let sandbox = engine.sandbox();
    let parsed: Vec<Option<IndexDocument>> = notes
        .par_iter()
        .map(|note| {
            if cancel.load(Ordering::Relaxed) || note.text.len() as u64 > INDEX_MAX_BYTES {
                return None;
            }
            // What a sync would make of the file (indexed areas, Markdown, no templates).
            let area = sandbox.area_of(&note.path)?;
            let indexed = matches!(area, Area::Note | Area::Standard | Area::ReadAlso)
                && note.path.is_note()
                && sandbox.templates_folder_of(&note.path).is_none();
            // The times are the file's, known once it is written (below).
            indexed.then(|| document_of(&note.path, kind_of(area), note.text.as_bytes(), 0, None).ok())?
        })
        .collect();
    let Ok(stats) = files.recv() else { return Ok(None) };
    if stats.len() != parsed.len() || cancel.load(Ordering::Relaxed) {
        return Ok(None);
    }
    let documents: Vec<(IndexDocument, FileStat)> = parsed
        .into_iter()
        .zip(stats)
        .filter_map(|(document, stat)| {
            let (mut document, stat) = (document?, stat?);
            if stat.size != document.record.size {
                return None;
            }
            document.record.modified_ns = nanos(stat.modified);
            document.record.born_ns = stat.created.map(nanos);
            Some((document, stat))
        })
        .collect();
    if documents.is_empty() {
        return Ok(None);
    }
    // Not waiting for another process's writer: a failed apply would wait for
    // this thread (`update` waits for it as every update does).
    let pending = engine.index().begin_at_once(documents.len())?;
    let added = documents.par_iter().try_for_each(|(document, _)| {
        if cancel.load(Ordering::Relaxed) {
            return Err(Error::internal("the apply stopped"));
        }
        pending.sink().replace(document)
    });
    match added {
        Ok(()) => Ok(Some(Indexed { pending, documents })),
        Err(err) => {
            pending.rollback();
            Err(err)
        }
    }
}

/// How [`Engine::commit_ahead`] judged one path.
enum Judged {
    /// The document made ahead (its number) stands: the file is the one written.
    Kept(usize),
    /// Read again from disk: its document (`None`: no note there now).
    Read(Option<Box<IndexDocument>>),
}

impl Engine {
    /// Commits an update filled ahead, for `paths` (every path the apply
    /// touched): see the module docs. Then swaps the records into the catalog.
    fn commit_ahead(&self, indexed: Indexed, paths: &[NotePath]) -> Result<()> {
        let Indexed { pending, documents } = indexed;
        // Every path touched, and any made ahead that is not among them (then
        // read again like the others: nothing is committed unchecked).
        let mut all: Vec<NotePath> = paths.to_vec();
        let touched: HashSet<&str> = paths.iter().map(NotePath::as_str).collect();
        let extra: Vec<NotePath> = documents
            .iter()
            .filter(|(document, _)| !touched.contains(document.record.path.as_str()))
            .filter_map(|(document, _)| NotePath::parse(&document.record.path).ok())
            .collect();
        all.extend(extra);
        let ahead: HashMap<&str, usize> = documents
            .iter()
            .enumerate()
            .map(|(number, (document, _))| (document.record.path.as_str(), number))
            .collect();
        let sandbox = self.sandbox();
        let judged: Result<Vec<Judged>> = all
            .par_iter()
            .map(|path| {
                if let Some(&number) = ahead.get(path.as_str())
                    && sandbox.stat(path)? == Some(documents[number].1)
                {
                    return Ok(Judged::Kept(number));
                }
                self.load_fresh(path).map(|read| Judged::Read(read.map(Box::new)))
            })
            .collect();
        let judged = match judged {
            Ok(judged) => judged,
            Err(err) => {
                pending.rollback();
                return Err(err);
            }
        };
        let mut records = Vec::with_capacity(all.len());
        let mut added: Result<()> = Ok(());
        for (path, judged) in all.iter().zip(judged) {
            match judged {
                Judged::Kept(number) => records.push(documents[number].0.record.clone()),
                Judged::Read(Some(document)) => {
                    added = added.and_then(|()| pending.sink().replace(&document));
                    records.push(document.record);
                }
                Judged::Read(None) => pending.remove(path.as_str()),
            }
        }
        if let Err(err) = added {
            pending.rollback();
            return Err(err);
        }
        let gone: HashSet<String> = all.iter().map(|path| path.as_str().to_owned()).collect();
        let catalog = self.catalog();
        let before = |path: &str| catalog.get(path).map(|record| record.hash.clone());
        self.index().commit(pending, &before)?;
        self.apply_delta(&gone, records, self.attachments_after(paths));
        self.catalog_matches_index();
        Ok(())
    }
}
