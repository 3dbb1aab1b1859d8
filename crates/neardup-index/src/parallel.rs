//! Parallel work that survives `fork(2)`, and the count of forks behind this process.
//!
//! Rayon's global pool is made once per process, and its threads do not survive a fork: in a child forked
//! after the parent used the pool, the first parallel call queues its work for threads that are not
//! there, and waits forever. Python forks all the time (`multiprocessing` on Linux, Hugging Face
//! `datasets.map(num_proc=…)`, PySpark's worker daemon, Gunicorn), so every parallel section of the
//! workspace runs through [`install`]: in a process that has not forked since [`watch_forks`] it is a
//! plain call (the global pool, as the `neardup` command's `--threads` configures it); in a forked child
//! it runs `f` in a pool of the child's own, made at its first parallel call (another in a grandchild).
//! The pool is found without a lock, since a lock that another thread held at the fork stays held in the
//! child.

use rayon::ThreadPool;
use std::sync::atomic::{AtomicPtr, AtomicU64, Ordering};

/// Forks seen by this process's line of descent: 0 in the process that called [`watch_forks`], 1 in its
/// children, 2 in their children…
static GENERATION: AtomicU64 = AtomicU64::new(0);

/// The pool of a forked process, with the generation that made it (a grandchild inherits its parent's
/// pointer, whose threads it does not have). Leaked: a process keeps its pool until it exits.
static CHILD_POOL: AtomicPtr<(u64, ThreadPool)> = AtomicPtr::new(std::ptr::null_mut());

#[cfg(unix)]
extern "C" fn forked() {
    // Async-signal-safe: one atomic add.
    GENERATION.fetch_add(1, Ordering::SeqCst);
}

/// Starts counting forks (a `pthread_atfork` handler; once per process, any number of calls). A library that
/// other programs may fork (the Python module) calls it when loaded; without it, [`install`] is a plain call.
pub fn watch_forks() {
    #[cfg(unix)]
    {
        static WATCHING: std::sync::Once = std::sync::Once::new();
        WATCHING.call_once(|| {
            // SAFETY: registers a handler that only adds to an atomic, as async-signal-safe code must.
            unsafe {
                libc::pthread_atfork(None, None, Some(forked));
            }
        });
    }
}

/// How many forks separate this process from the one that called [`watch_forks`] (0 there, and wherever
/// nothing watches). What must not be shared across a fork besides threads, a Redis connection's socket,
/// is made again when it changes.
pub fn generation() -> u64 {
    GENERATION.load(Ordering::Relaxed)
}

/// Runs `f`, whose parallel iterators and joins use a pool whose threads exist in this process (see the
/// module's documentation). Cheap where nothing forked: an atomic load.
pub fn install<R: Send>(f: impl FnOnce() -> R + Send) -> R {
    let generation = generation();
    if generation == 0 || rayon::current_thread_index().is_some() {
        return f();
    }
    child_pool(generation).install(f)
}

/// This generation's pool, made at its first use.
fn child_pool(generation: u64) -> &'static ThreadPool {
    loop {
        let current = CHILD_POOL.load(Ordering::Acquire);
        // SAFETY: pointers in CHILD_POOL come from Box::into_raw below and are never freed.
        if let Some((made_in, pool)) = unsafe { current.as_ref() }
            && *made_in == generation
        {
            return pool;
        }
        let made = Box::into_raw(Box::new((generation, new_pool())));
        if CHILD_POOL
            .compare_exchange(current, made, Ordering::AcqRel, Ordering::Acquire)
            .is_err()
        {
            // Another thread made this generation's pool first: drop this one (its threads end) and use
            // that one.
            // SAFETY: `made` was never shared.
            drop(unsafe { Box::from_raw(made) });
        }
    }
}

/// A pool of as many threads as the global one would have (`RAYON_NUM_THREADS`, or one per core); one
/// thread where the process may start no more.
fn new_pool() -> ThreadPool {
    let named = |threads: usize| {
        rayon::ThreadPoolBuilder::new()
            .num_threads(threads)
            .thread_name(|i| format!("neardup-{i}"))
            .build()
    };
    named(0)
        .or_else(|_| named(1))
        .expect("cannot start a thread for parallel work in this forked process")
}

#[cfg(all(test, unix))]
mod tests {
    use super::*;
    use rayon::prelude::*;
    use std::time::{Duration, Instant};

    fn sum() -> u64 {
        install(|| (0..100_000u64).into_par_iter().map(|x| x % 7).sum())
    }

    /// A child forked after the parent used the global pool runs parallel work (without `install` it would
    /// wait forever), and so does its own child.
    #[test]
    fn forked_children_run_parallel_work() {
        watch_forks();
        let expected = sum();
        // SAFETY: the child only runs rayon work through `install`, then leaves with _exit.
        let child = unsafe { libc::fork() };
        assert!(child >= 0, "fork failed");
        if child == 0 {
            let ok = sum() == expected && {
                // SAFETY: as above, one level down.
                let grandchild = unsafe { libc::fork() };
                if grandchild == 0 {
                    unsafe { libc::_exit(if sum() == expected { 0 } else { 1 }) };
                }
                wait(grandchild) == Some(0)
            };
            unsafe { libc::_exit(if ok { 0 } else { 1 }) };
        }
        assert_eq!(wait(child), Some(0), "the child hung or failed");
        assert_eq!(
            GENERATION.load(Ordering::Relaxed),
            0,
            "the parent counts no fork"
        );
    }

    /// The child's exit status, or None after 60 s (it is killed).
    fn wait(pid: libc::pid_t) -> Option<i32> {
        let start = Instant::now();
        loop {
            let mut status = 0;
            // SAFETY: waits for our own child, without blocking.
            let done = unsafe { libc::waitpid(pid, &mut status, libc::WNOHANG) };
            if done == pid {
                return libc::WIFEXITED(status).then(|| libc::WEXITSTATUS(status));
            }
            if start.elapsed() > Duration::from_secs(60) {
                unsafe { libc::kill(pid, libc::SIGKILL) };
                return None;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    }
}
