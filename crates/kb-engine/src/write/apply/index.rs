//! The index side of an apply: the engine's index update, called once the
//! proposal is consumed, and told ahead what a multi-file apply will write.
//! The write layer knows no index, hence this trait.

use crate::error::Result;
use crate::sandbox::{FileStat, NotePath};
use crate::write::propose::Linker;

/// The index side of an apply (the engine's index update), called with the
/// paths the apply touched once the proposal is consumed ([`ApplyIndex::update`]).
///
/// A multi-file apply also says ahead what it will write, so that the
/// index's work (parsing, tokenising) can run while the files are written:
/// the new texts once the plan is loaded ([`ApplyIndex::ahead`]), then the
/// files holding them once those are written beside their notes
/// ([`ApplyIndex::prepared`]). Neither may change what searches see: the
/// apply may still fail, be rolled back or crash, and only `update`, called
/// after the commit point, may commit. What was prepared ahead is dropped
/// unless `update` uses it.
pub trait ApplyIndex {
    /// The text each listed note will hold after the apply (at its path
    /// after it), for the notes whose new text is written beside them ahead
    /// of their swaps. The proposal's checks may still fail.
    fn ahead(&mut self, notes: Vec<NewText>) {
        let _ = notes;
    }

    /// The files holding the texts of [`ApplyIndex::ahead`], in its order:
    /// each note's size and times once its swap puts the file at its name
    /// (`None`: none was written for it).
    fn prepared(&mut self, files: Vec<Option<FileStat>>) {
        let _ = files;
    }

    /// Updates the index for `paths` (each as it is on disk now), in one commit.
    fn update(&mut self, paths: &[NotePath]) -> Result<()>;

    /// The notes (standards and `read_also` files included) that link to any
    /// of the notes at `targets` as the files are now, each with its links to
    /// them ([`Linker`]): a multi-file apply refuses, before writing anything,
    /// when one its plan was not judged on has appeared since it was staged
    /// (see `propose/linkers.rs`). `None`: not known here (the write layer keeps no
    /// index, and [`apply`](super::apply) alone does not look); the check is then left out.
    fn linkers(&mut self, targets: &[String]) -> Result<Option<Vec<Linker>>> {
        let _ = targets;
        Ok(None)
    }
}

/// A note's text after an apply, told ahead ([`ApplyIndex::ahead`]).
#[derive(Debug, Clone)]
pub struct NewText {
    /// Where the note is after the apply.
    pub path: NotePath,
    /// Its text then.
    pub text: String,
}

/// An [`ApplyIndex`] that only updates, given the paths.
pub(crate) struct PathsOnly<'a>(pub(crate) &'a mut dyn FnMut(&[NotePath]) -> Result<()>);

impl ApplyIndex for PathsOnly<'_> {
    fn update(&mut self, paths: &[NotePath]) -> Result<()> {
        (self.0)(paths)
    }
}
