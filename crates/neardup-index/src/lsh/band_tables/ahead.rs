//! A growing vector's next pages, mapped by another thread before the vector's owner writes them.
//!
//! [`BandTables::insert`](super::BandTables::insert) runs on the caller's thread, one entry at a time from
//! a Python loop (`MinHashLSH.insert`), and each entry appends to two vectors (the values, 512 bytes for
//! 128 `uint32`; the chain links) and now and then grows a band's table. Writing a page of memory for the
//! first time costs a page fault: 10^6 inserts take about 270,000 of them, 1–4 s of system time on a
//! virtual machine, as much as the inserts' own work. Other cores are idle meanwhile (the caller's loop is
//! Python's, on one thread), so a helper thread asks the kernel to map the next pages
//! (`madvise(MADV_POPULATE_WRITE)`, Linux 5.14) a window ahead of the writes, and the writes find them
//! mapped. A grown table, written all over at once, is mapped half by a helper and half by the inserting
//! thread before the entries move in ([`map_now`]).
//!
//! The window stays small ([`WINDOW`]) so that memory is not made resident long before it is used: a
//! vector's capacity may be twice its length, and that half is not touched. Mapping a page as a write would
//! changes no memory's contents, so a helper that is late (the vector has moved or been freed, and the range
//! is someone else's by then) does no harm; it stops at the first range the kernel refuses. Elsewhere than
//! on Linux, and on kernels without the call, nothing is mapped ahead and the writes fault as before.

/// How far ahead of a vector's writes its pages are mapped, in bytes.
const WINDOW: usize = 32 << 20;

/// The smallest range worth a thread: below it, the writes fault for themselves.
const MIN_RANGE: usize = 1 << 20;

/// What has been asked of the helpers for one vector.
#[derive(Default)]
pub(super) struct MapAhead {
    /// The vector's buffer when the last range was asked for (its pages move with it only when the
    /// allocator moves them, so a new buffer starts again from its length).
    buffer: usize,
    /// The byte offset in that buffer up to which pages have been asked for.
    until: usize,
}

impl MapAhead {
    /// Reserves room for `more` items in `vec` (as `Vec::reserve` would) and, when the writes come within
    /// half a window of what has been asked for, has a thread map the pages up to a window beyond them.
    pub(super) fn reserve<T>(&mut self, vec: &mut Vec<T>, more: usize) {
        vec.reserve(more);
        let buffer = vec.as_ptr() as usize;
        let used = (vec.len() + more) * size_of::<T>();
        if buffer != self.buffer {
            self.buffer = buffer;
            self.until = used;
        }
        if used + WINDOW / 2 <= self.until {
            return;
        }
        let capacity = vec.capacity() * size_of::<T>();
        let from = self.until.max(used);
        let to = (used + WINDOW).min(capacity);
        map_in_background(buffer + from, buffer + to);
        self.until = to.max(self.until);
    }
}

/// Whether mapping the address range `start..end` ahead is worth a thread: it is large enough, and the
/// kernel has the call.
fn worth_mapping(start: usize, end: usize) -> bool {
    cfg!(target_os = "linux") && end >= start + MIN_RANGE
}

/// Has a thread map the pages of the address range `start..end` for writing (those wholly inside it), when
/// it is worth a thread.
fn map_in_background(start: usize, end: usize) {
    if worth_mapping(start, end) {
        // No thread to be had (a process at its limit): the writes fault for themselves.
        let _ = std::thread::Builder::new()
            .name("neardup-map-ahead".into())
            .spawn(move || map_pages(start, end));
    }
}

/// Maps the pages of `memory` for writing now, half on this thread and half on another: for memory about to
/// be written all over (a grown hash table), where a helper in the background would not get ahead.
pub(super) fn map_now<T>(memory: std::ops::Range<*const T>) {
    let (start, end) = (memory.start as usize, memory.end as usize);
    if worth_mapping(start, end) {
        let middle = start + (end - start) / 2;
        std::thread::scope(|scope| {
            let _ = std::thread::Builder::new().spawn_scoped(scope, || map_pages(middle, end));
            map_pages(start, middle);
        });
    }
}

/// Maps the pages wholly inside the address range `start..end` for writing.
#[cfg(target_os = "linux")]
fn map_pages(start: usize, end: usize) {
    const PAGE: usize = 4096;
    // A step at a time: the kernel holds the process's memory map while it maps a range, and the owner's own
    // allocations (a vector growing) wait for it.
    const STEP: usize = 2 << 20;
    let (start, end) = (start.div_ceil(PAGE) * PAGE, end / PAGE * PAGE);
    for at in (start..end).step_by(STEP) {
        // SAFETY: MADV_POPULATE_WRITE maps pages as a write would without writing them: no memory's contents
        // change, whoever owns the range by now. A range not mapped writable is refused.
        let refused = unsafe {
            libc::madvise(
                at as *mut libc::c_void,
                STEP.min(end - at),
                libc::MADV_POPULATE_WRITE,
            )
        } != 0;
        if refused {
            break;
        }
    }
}

#[cfg(not(target_os = "linux"))]
fn map_pages(_start: usize, _end: usize) {}
