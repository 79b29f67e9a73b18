//! Where the server runs the engine's blocking work: on the thread that took the
//! request. On the multi-thread runtime the binaries use, that is
//! `block_in_place` (the worker hands its other tasks to a sibling and goes on
//! with this request), so a call never waits for another thread to wake up: on a
//! busy machine that wake-up, not the search, was most of the slowest calls
//! (`spawn_blocking` queued up to 27 ms under load). A current-thread runtime
//! (the in-process tests) cannot block in place and falls back to the blocking
//! pool. A panic in the work is caught either way and comes back as an error,
//! never as a torn-down connection.

use std::panic::{AssertUnwindSafe, catch_unwind};

use tokio::runtime::{Handle, RuntimeFlavor};

use crate::error::Error;

/// Runs `work` to completion without stalling the runtime; `Err` names a panic.
pub(super) async fn run<T: Send + 'static>(work: impl FnOnce() -> T + Send + 'static) -> Result<T, Error> {
    let in_place =
        Handle::try_current().is_ok_and(|handle| handle.runtime_flavor() == RuntimeFlavor::MultiThread);
    if in_place {
        tokio::task::block_in_place(|| catch_unwind(AssertUnwindSafe(work))).map_err(panic_message)
    } else {
        tokio::task::spawn_blocking(work).await.map_err(|error| Error::internal(error.to_string()))
    }
}

fn panic_message(payload: Box<dyn std::any::Any + Send>) -> Error {
    let what = payload
        .downcast_ref::<&str>()
        .map(|s| (*s).to_owned())
        .or_else(|| payload.downcast_ref::<String>().cloned())
        .unwrap_or_else(|| "a panic".to_owned());
    Error::internal(format!("the work panicked: {what}"))
}

#[cfg(test)]
mod tests {
    use super::run;

    #[test]
    fn runs_in_place_on_the_multi_thread_runtime_and_on_the_pool_elsewhere() {
        let multi = tokio::runtime::Builder::new_multi_thread().worker_threads(2).build().unwrap();
        let here = multi.block_on(async {
            tokio::spawn(async {
                let caller = std::thread::current().id();
                run(move || std::thread::current().id() == caller).await
            })
            .await
            .unwrap()
        });
        assert!(here.is_ok_and(|here| here), "the work ran on the worker that took the request");

        let single = tokio::runtime::Builder::new_current_thread().build().unwrap();
        let caller = std::thread::current().id();
        let elsewhere = single.block_on(run(move || std::thread::current().id() == caller));
        assert!(elsewhere.is_ok_and(|here| !here), "a current-thread runtime hands the work to the pool");
    }

    #[test]
    fn a_panic_comes_back_as_an_error_on_both_runtimes() {
        let multi = tokio::runtime::Builder::new_multi_thread().worker_threads(2).build().unwrap();
        let caught = multi.block_on(async { tokio::spawn(run(|| -> u8 { panic!("boom") })).await.unwrap() });
        assert_eq!(caught.unwrap_err().message, "the work panicked: boom");
        let single = tokio::runtime::Builder::new_current_thread().build().unwrap();
        let caught = single.block_on(run(|| -> u8 { panic!("boom") }));
        assert!(caught.is_err_and(|e| e.message.contains("panicked")));
    }
}
