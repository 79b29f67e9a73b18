//! The steps of an apply, after each of which a failpoint fires: tests crash
//! the apply there (or kill the process) to prove recovery.

/// The steps of an apply; a failpoint fires after each.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Step {
    /// The lock is held and every check passed; nothing has changed yet.
    Claimed,
    /// A multi-file proposal's new bytes are written beside their notes and
    /// flushed to disk; no note has changed yet.
    Prepared,
    /// A patch's note was re-checked right before its swap (patches only): a
    /// person's save landing now is what the swap must never lose.
    Swapping,
    /// The target note is written (for a multi-file proposal: all of them).
    Written,
    /// A multi-file proposal's operation number N (from 0) is done.
    File(usize),
    /// The metadata file has moved to the archive; the other files not yet.
    Archiving,
    /// All the proposal's files are in the archive.
    Archived,
    /// The index callback has run.
    Indexed,
    /// The audit line is appended.
    Audited,
}
