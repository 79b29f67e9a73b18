//! Where a call's time goes inside the engine, stage by stage, for the
//! server's debug log (`timing` lines).
//!
//! A stage (reloading the index reader, running the query, cutting snippets,
//! rendering the answer) adds its wall time to a list kept per thread; the
//! server clears the list before it runs a call on its blocking thread and
//! takes it afterwards. Recording costs a clock read and a push, so it is
//! always on; nothing is logged unless the debug log is.

use std::cell::RefCell;
use std::time::{Duration, Instant};

thread_local! {
    static STAGES: RefCell<Vec<(&'static str, Duration)>> = const { RefCell::new(Vec::new()) };
}

/// Adds `took` to `stage` on this thread.
pub fn record(stage: &'static str, took: Duration) {
    STAGES.with(|stages| {
        let mut stages = stages.borrow_mut();
        match stages.iter_mut().find(|(name, _)| *name == stage) {
            Some((_, total)) => *total += took,
            None => stages.push((stage, took)),
        }
    });
}

/// Runs `f`, adding its wall time to `stage` on this thread.
pub fn time<R>(stage: &'static str, f: impl FnOnce() -> R) -> R {
    let started = Instant::now();
    let result = f();
    record(stage, started.elapsed());
    result
}

/// The stages recorded on this thread since the last call, in the order first
/// met; the list starts empty again.
pub fn take() -> Vec<(&'static str, Duration)> {
    STAGES.with(|stages| std::mem::take(&mut *stages.borrow_mut()))
}

/// `rayon::join` of `a` and `b`, the stages each records (on whichever
/// thread the pool runs it) added to this thread's list.
pub fn join<A: Send, B: Send>(a: impl FnOnce() -> A + Send, b: impl FnOnce() -> B + Send) -> (A, B) {
    let ((a, a_stages), (b, b_stages)) = rayon::join(|| carry(a), || carry(b));
    for (stage, took) in a_stages.into_iter().chain(b_stages) {
        record(stage, took);
    }
    (a, b)
}

/// Runs `f` and returns its result with the stages recorded on this thread
/// meanwhile (all of them, when it runs on the calling thread: `join` adds
/// them back).
fn carry<R>(f: impl FnOnce() -> R) -> (R, Vec<(&'static str, Duration)>) {
    let result = f();
    (result, take())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stages_add_up_per_name_and_take_empties_the_list() {
        let _ = take();
        record("query", Duration::from_millis(2));
        record("snippets", Duration::from_millis(1));
        record("query", Duration::from_millis(3));
        let stages = take();
        assert_eq!(stages, vec![("query", Duration::from_millis(5)), ("snippets", Duration::from_millis(1))]);
        assert!(take().is_empty());
        assert_eq!(time("render", || 7), 7);
        assert_eq!(take().iter().map(|(name, _)| *name).collect::<Vec<_>>(), vec!["render"]);
    }

    #[test]
    fn stages_of_both_sides_of_a_join_come_back_to_the_calling_thread() {
        // A thread outside the pool: both sides of each join run on the pool's.
        let stages = std::thread::spawn(|| {
            record("query", Duration::from_millis(2));
            let joined = join(|| time("walk", || 3), || join(|| time("graph", || 4), || 5));
            assert_eq!(joined, (3, (4, 5)));
            take()
        })
        .join()
        .unwrap();
        let mut names: Vec<&str> = stages.iter().map(|(name, _)| *name).collect();
        names.sort_unstable();
        assert_eq!(names, vec!["graph", "query", "walk"]);
    }
}
