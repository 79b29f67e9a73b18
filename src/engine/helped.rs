//! Work a request shares with idle cores without ever waiting for one.
//!
//! A page of search hits needs its snippets cut, one file each. Handing them to
//! rayon and waiting was fast on idle cores, but on busy ones a request waited
//! for workers to wake or to finish other requests' work (up to 40 ms, the
//! slowest calls' largest part); cutting them all on the calling thread made
//! every call pay for all of them in turn. Here the calling thread and a few
//! helpers on rayon's pool take the items one at a time from a shared counter.
//! The caller never waits for a helper to start: items no helper has taken, the
//! caller cuts itself, and it waits at most for the items a helper is cutting
//! at that moment. A helper that wakes after the last item was taken finds
//! nothing to do and returns. Items are taken heaviest first, so that the one
//! long file of a page is not left for last, when nobody can share it.

use std::any::Any;
use std::panic::{AssertUnwindSafe, catch_unwind, resume_unwind};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Condvar, Mutex, PoisonError};

/// Most helpers one call asks for (the calling thread works too).
const HELPERS_MAX: usize = 3;

/// `work` applied to each item, in the items' order, the items shared between
/// the calling thread and up to [`HELPERS_MAX`] idle workers of rayon's pool
/// (see the module comment) and taken in decreasing `weight`. A panic in
/// `work` is raised on the calling thread.
pub(crate) fn map_helped<T, R, F>(items: Vec<T>, weight: impl Fn(&T) -> u64, work: F) -> Vec<R>
where
    T: Send + Sync + 'static,
    R: Send + 'static,
    F: Fn(&T) -> R + Send + Sync + 'static,
{
    let helpers =
        rayon::current_num_threads().saturating_sub(1).min(HELPERS_MAX).min(items.len().saturating_sub(1));
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
        rayon::spawn(move || helper.take_until_none());
    }
    shared.take_until_none();
    let mut done = shared.done.lock().unwrap_or_else(PoisonError::into_inner);
    while done.left > 0 {
        done = shared.finished.wait(done).unwrap_or_else(PoisonError::into_inner);
    }
    let results = std::mem::take(&mut done.results);
    drop(done);
    results
        .into_iter()
        .map(|result| match result {
            Some(Ok(value)) => value,
            Some(Err(panic)) => resume_unwind(panic),
            None => unreachable!("every item is done once none is left"),
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
    /// Takes items and does them until none is left to take.
    fn take_until_none(&self) {
        loop {
            let Some(&at) = self.order.get(self.next.fetch_add(1, Ordering::Relaxed)) else { return };
            let item = &self.items[at];
            let result = catch_unwind(AssertUnwindSafe(|| (self.work)(item)));
            let mut done = self.done.lock().unwrap_or_else(PoisonError::into_inner);
            done.results[at] = Some(result);
            done.left -= 1;
            if done.left == 0 {
                self.finished.notify_all();
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_item_is_done_once_and_in_order() {
        let items: Vec<u64> = (0..200).collect();
        let calls = Arc::new(AtomicUsize::new(0));
        let counted = Arc::clone(&calls);
        let squares = map_helped(
            items,
            |&n| n % 7,
            move |&n| {
                counted.fetch_add(1, Ordering::Relaxed);
                n * n
            },
        );
        assert_eq!(squares, (0..200).map(|n| n * n).collect::<Vec<u64>>());
        assert_eq!(calls.load(Ordering::Relaxed), 200);
    }

    #[test]
    fn no_items_and_one_item_need_no_helper() {
        assert_eq!(map_helped(Vec::<u8>::new(), |_| 0, |&n| n), Vec::<u8>::new());
        assert_eq!(map_helped(vec![7u8], |_| 0, |&n| n + 1), vec![8]);
    }

    #[test]
    fn a_panic_in_the_work_reaches_the_caller() {
        let caught = catch_unwind(|| {
            map_helped((0..50).collect::<Vec<u32>>(), |_| 0, |&n| if n == 37 { panic!("item 37") } else { n })
        });
        let panic = caught.expect_err("the panic is raised on the caller");
        assert_eq!(panic.downcast_ref::<&str>(), Some(&"item 37"));
    }
}
