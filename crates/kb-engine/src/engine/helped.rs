//! Work a request shares with spare cores without ever waiting on a busy one.
//!
//! A page of search hits needs its snippets cut, one file each. Handing them to
//! rayon and waiting was fast on idle cores, but on busy ones a request waited
//! for workers to wake or to finish other requests' work (up to 40 ms, the
//! slowest calls' largest part); cutting them all on the calling thread made
//! every call pay for all of them in turn. Here, when cores are spare, the
//! calling thread and a few helpers on rayon's pool (one per spare core, see
//! `sandbox::spare_cores`) take the items one at a time from a shared counter,
//! heaviest first (so the one long file of a page is not left for last, when
//! nobody can share it). The caller never waits for a helper to start: what no
//! helper has taken, the caller does. For an item a helper is still doing when
//! the caller runs out, the caller waits about as long as its own longest item
//! took, then does the item itself and keeps whichever result comes first: a
//! helper the scheduler set aside on a loaded machine costs that wait, never
//! its time slice. The work must therefore be safe to do twice (cutting
//! snippets reads files and writes nothing).

use std::any::Any;
use std::panic::{AssertUnwindSafe, catch_unwind, resume_unwind};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Condvar, Mutex, MutexGuard, PoisonError};
use std::time::{Duration, Instant};

/// Most helpers one call asks for (the calling thread works too).
const HELPERS_MAX: usize = 3;

/// The least the caller waits for a helper's item before doing it itself.
const PATIENCE_MIN: Duration = Duration::from_micros(200);

/// `work` applied to each item, in the items' order, the items shared between
/// the calling thread and up to [`HELPERS_MAX`] workers of rayon's pool, one
/// per spare core (see the module comment), and taken in decreasing `weight`. A panic in
/// `work` is raised on the calling thread.
pub(crate) fn map_helped<T, R, F>(items: Vec<T>, weight: impl Fn(&T) -> u64, work: F) -> Vec<R>
where
    T: Send + Sync + 'static,
    R: Send + 'static,
    F: Fn(&T) -> R + Send + Sync + 'static,
{
    // A helper is only worth waking on a spare core (see `sandbox::spare_cores`);
    // where the system does not say, the caller cuts alone, as it did before
    // helpers, rather than risk the loaded machine's tail.
    let spare = crate::sandbox::spare_cores().unwrap_or(0);
    let helpers = rayon::current_num_threads().saturating_sub(1).min(spare).min(HELPERS_MAX);
    map_with_helpers(items, weight, work, helpers)
}

/// [`map_helped`] with up to `helpers` helpers (fewer for fewer items).
fn map_with_helpers<T, R, F>(items: Vec<T>, weight: impl Fn(&T) -> u64, work: F, helpers: usize) -> Vec<R>
where
    T: Send + Sync + 'static,
    R: Send + 'static,
    F: Fn(&T) -> R + Send + Sync + 'static,
{
    let helpers = helpers.min(items.len().saturating_sub(1));
    if helpers == 0 {
        return items.iter().map(work).collect();
    }
    let count = items.len();
    let mut order: Vec<usize> = (0..count).collect();
    order.sort_by_key(|&at| std::cmp::Reverse(weight(&items[at])));
    let shared = Arc::new(Shared {
        items,
        order,
        work,
        next: AtomicUsize::new(0),
        done: Mutex::new(Done { results: (0..count).map(|_| None).collect(), left: count }),
        finished: Condvar::new(),
    });
    for _ in 0..helpers {
        let helper = Arc::clone(&shared);
        rayon::spawn(move || {
            helper.take_until_none();
        });
    }
    let longest = shared.take_until_none();
    // Items helpers are still doing: wait about as long as the caller's own
    // longest item took, then do what is left here.
    let deadline = Instant::now() + longest.max(PATIENCE_MIN);
    let mut done = shared.done();
    while done.left > 0 {
        let Some(wait) = deadline.checked_duration_since(Instant::now()) else { break };
        done = shared.finished.wait_timeout(done, wait).unwrap_or_else(PoisonError::into_inner).0;
    }
    let pending: Vec<usize> = (0..done.results.len()).filter(|&at| done.results[at].is_none()).collect();
    drop(done);
    for at in pending {
        shared.do_item(at);
    }
    let mut done = shared.done();
    let results = std::mem::take(&mut done.results);
    drop(done);
    results
        .into_iter()
        .map(|result| match result {
            Some(Ok(value)) => value,
            Some(Err(panic)) => resume_unwind(panic),
            None => unreachable!("the caller did every item no helper had done"),
        })
        .collect()
}

/// What the caller and its helpers share.
struct Shared<T, R, F> {
    items: Vec<T>,
    /// The items' indices in the order they are taken.
    order: Vec<usize>,
    work: F,
    /// The next place in `order` nobody has taken.
    next: AtomicUsize,
    done: Mutex<Done<R>>,
    /// Signalled when the last item is done.
    finished: Condvar,
}

/// The items' results so far, and how many are still to come.
struct Done<R> {
    results: Vec<Option<Result<R, Box<dyn Any + Send>>>>,
    left: usize,
}

impl<T, R, F: Fn(&T) -> R> Shared<T, R, F> {
    /// Takes items and does them until none is left to take; the longest one
    /// took this long.
    fn take_until_none(&self) -> Duration {
        let mut longest = Duration::ZERO;
        while let Some(&at) = self.order.get(self.next.fetch_add(1, Ordering::Relaxed)) {
            let started = Instant::now();
            self.do_item(at);
            longest = longest.max(started.elapsed());
        }
        longest
    }

    /// Does item `at` and keeps the result, unless another thread's came first
    /// or the call has returned.
    fn do_item(&self, at: usize) {
        let result = catch_unwind(AssertUnwindSafe(|| (self.work)(&self.items[at])));
        let mut done = self.done();
        // Once the caller has taken the results, a late helper finds none.
        if let Some(slot @ None) = done.results.get_mut(at) {
            *slot = Some(result);
            done.left -= 1;
            if done.left == 0 {
                self.finished.notify_all();
            }
        }
    }

    fn done(&self) -> MutexGuard<'_, Done<R>> {
        self.done.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::AtomicBool;

    use super::*;

    #[test]
    fn every_item_is_done_and_its_result_kept_in_order() {
        let items: Vec<u64> = (0..200).collect();
        let calls = Arc::new(AtomicUsize::new(0));
        let counted = Arc::clone(&calls);
        let squares = map_with_helpers(
            items,
            |&n| n % 7,
            move |&n| {
                counted.fetch_add(1, Ordering::Relaxed);
                n * n
            },
            HELPERS_MAX,
        );
        assert_eq!(squares, (0..200).map(|n| n * n).collect::<Vec<u64>>());
        // An item may be done twice (a helper too slow), never skipped.
        assert!(calls.load(Ordering::Relaxed) >= 200);
    }

    #[test]
    fn a_helper_held_up_mid_item_does_not_hold_the_caller() {
        // A helper's item blocks until the call has returned: were the caller
        // to wait for it, this test would never end.
        let returned = Arc::new(AtomicBool::new(false));
        let helper_took = Arc::new(AtomicBool::new(false));
        let (blocked, took) = (Arc::clone(&returned), Arc::clone(&helper_took));
        let doubled = map_with_helpers(
            (0..4u32).collect(),
            |&n| u64::from(10 - n),
            move |&n| {
                if rayon::current_thread_index().is_some() {
                    took.store(true, Ordering::SeqCst);
                    while !blocked.load(Ordering::SeqCst) {
                        std::thread::sleep(Duration::from_millis(1));
                    }
                } else {
                    // The caller gives a helper time to wake and take an item.
                    let started = Instant::now();
                    while !took.load(Ordering::SeqCst) && started.elapsed() < Duration::from_secs(5) {
                        std::thread::sleep(Duration::from_millis(1));
                    }
                }
                n * 2
            },
            1,
        );
        returned.store(true, Ordering::SeqCst);
        assert_eq!(doubled, vec![0, 2, 4, 6]);
        assert!(helper_took.load(Ordering::SeqCst), "a helper took an item");
    }

    #[test]
    fn no_items_and_one_item_need_no_helper() {
        assert_eq!(map_helped(Vec::<u8>::new(), |_| 0, |&n| n), Vec::<u8>::new());
        assert_eq!(map_with_helpers(vec![7u8], |_| 0, |&n| n + 1, HELPERS_MAX), vec![8]);
    }

    #[test]
    fn a_panic_in_the_work_reaches_the_caller() {
        let caught = catch_unwind(|| {
            map_with_helpers(
                (0..50).collect::<Vec<u32>>(),
                |_| 0,
                |&n| if n == 37 { panic!("item 37") } else { n },
                1,
            )
        });
        let panic = caught.expect_err("the panic is raised on the caller");
        assert_eq!(panic.downcast_ref::<&str>(), Some(&"item 37"));
    }
}
