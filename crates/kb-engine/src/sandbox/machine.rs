//! What the machine is doing: how many cores a helper thread could have now.
//!
//! A search shares its snippets with spare cores (`engine::helped`). On a busy
//! machine, waking a helper costs the caller more than the helper saves:
//! measured under a load of four busy threads on two cores, the costliest
//! content search took 1.3–2.3× as long with a helper as without. Linux counts
//! the threads running or ready to run in `/proc/loadavg` (the fourth field,
//! before the slash). The count includes the calling thread and, usually, the
//! thread that has just handed it the request (a client still returning from
//! its write, the server's reader): a core is spare for each core beyond the
//! threads other than those two. Elsewhere the count is unknown, and a search
//! cuts its snippets on the calling thread alone.

/// Cores a helper thread could have now (see the module comment); `None`
/// where the system does not say.
pub fn spare_cores() -> Option<usize> {
    let cores = std::thread::available_parallelism().ok()?.get();
    let text = std::fs::read_to_string("/proc/loadavg").ok()?;
    let others = runnable_threads(&text)?.saturating_sub(2);
    Some(cores.saturating_sub(1).saturating_sub(others))
}

/// The runnable threads in `/proc/loadavg`'s text: `0.52 0.58 0.59 3/412 8121`.
fn runnable_threads(loadavg: &str) -> Option<usize> {
    loadavg.split_whitespace().nth(3)?.split_once('/')?.0.parse().ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_runnable_count_is_the_fourth_fields_numerator() {
        assert_eq!(runnable_threads("0.52 0.58 0.59 3/412 8121\n"), Some(3));
        assert_eq!(runnable_threads("0.52 0.58 0.59"), None);
        assert_eq!(runnable_threads("0.52 0.58 0.59 x/412 8121"), None);
    }

    #[test]
    fn on_linux_the_calling_thread_keeps_a_core() {
        if cfg!(target_os = "linux") {
            let cores = std::thread::available_parallelism().unwrap().get();
            let spare = spare_cores().expect("Linux says");
            assert!(spare < cores, "{spare} spare of {cores}: this thread runs on one");
        }
    }
}
