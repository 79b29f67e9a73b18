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

/// Runs `f` (on whichever thread a parallel join gives it) and returns its
/// result with the stages recorded on that thread meanwhile, for [`restore`]
/// on the thread whose list they belong to.
pub fn carry<R>(f: impl FnOnce() -> R) -> (R, Vec<(&'static str, Duration)>) {
    let result = f();
    (result, take())
}

/// Adds stages [`carry`] brought back to this thread's list.
pub fn restore(stages: Vec<(&'static str, Duration)>) {
    for (stage, took) in stages {
        record(stage, took);
    }
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
    fn stages_carried_from_another_thread_add_to_this_ones() {
        let _ = take();
        record("query", Duration::from_millis(2));
        let (value, stages) =
            std::thread::scope(|s| s.spawn(|| carry(|| time("walk", || 3))).join().unwrap());
        assert_eq!(value, 3);
        restore(stages);
        let names: Vec<&str> = take().iter().map(|(name, _)| *name).collect();
        assert_eq!(names, vec!["query", "walk"]);
    }
}
