//! Chunk-sized buffers backed by transparent huge pages where the system
//! allows it.
//!
//! A scan keeps a few chunk buffers per partition in flight (the one being
//! filled, the ones held by batches in the channel and at the consumer). Each
//! is faulted in and zeroed page by page on first use: for a 1 MiB chunk that
//! is 256 page faults, and on the 200 MB benchmark file those faults cost as
//! much CPU as the CRC checks. Backed by one 2 MiB huge page, the same buffer
//! costs one fault (README, "Huge pages for the chunk buffers").
//!
//! [`room_for`] gives a `Vec` room for `n` bytes. From [`MIN_HUGE`] bytes on,
//! it allocates the capacity as a whole number of huge pages (less the
//! allocator's header, so that glibc's `mmap` of it is a 2 MiB multiple, which
//! Linux places on a 2 MiB boundary) and asks the kernel for huge pages there
//! (`MADV_HUGEPAGE`). The allocator has already written its header into the
//! first huge-page window, which would keep that window on small pages, so
//! that one window is collapsed at once (`MADV_COLLAPSE`, Linux 6.1); the
//! others get huge pages when first touched. Every step is advice: on other
//! systems, with huge pages turned off, or with an allocator that places the
//! buffer elsewhere, the buffer is an ordinary allocation and nothing else
//! changes.

/// The size of a transparent huge page on x86-64 and (with 4 KiB base pages) AArch64.
pub const HUGE_PAGE: usize = 2 << 20;

/// Buffers from this size on are allocated in whole huge pages. A 512 KiB
/// buffer then takes a whole 2 MiB page once touched: ROS1 bags and many MCAP
/// writers use chunks of 768 KiB to 1 MiB, and for them the page is worth it
/// (README, "Huge pages for the chunk buffers").
pub const MIN_HUGE: usize = HUGE_PAGE / 4;

/// What glibc's `malloc` adds in front of an `mmap`ed block (its chunk header)
/// and the alignment slack of the request: asking for a multiple of
/// [`HUGE_PAGE`] less this makes the mapping itself a multiple.
const ALLOCATOR_HEADER: usize = 32;

/// Makes room in `buf` for `n` bytes, discarding its content: `buf` is left
/// empty with a capacity of at least `n`. A buffer that already has the room
/// keeps its allocation; a larger one is allocated as described in the
/// module documentation.
pub fn room_for(buf: &mut Vec<u8>, n: usize) {
    buf.clear();
    if buf.capacity() >= n {
        return;
    }
    if n < MIN_HUGE {
        buf.reserve_exact(n);
        return;
    }
    let capacity = n
        .saturating_add(ALLOCATOR_HEADER)
        .div_ceil(HUGE_PAGE)
        .saturating_mul(HUGE_PAGE)
        - ALLOCATOR_HEADER;
    // Dropping the old buffer first lets the allocator reuse its memory.
    *buf = Vec::new();
    *buf = Vec::with_capacity(capacity);
    advise(buf.as_ptr() as usize, buf.capacity());
}

/// Gives `buf` exactly `n` bytes, for the caller to overwrite: a buffer with
/// the room keeps its old content and is zero-filled only where it grows (no
/// memset of every chunk when a buffer is reused); one without it gets a new
/// allocation from [`room_for`].
pub fn resize_for_overwrite(buf: &mut Vec<u8>, n: usize) {
    if buf.capacity() < n {
        room_for(buf, n);
    }
    buf.resize(n, 0);
}

/// Asks for huge pages over the allocation of `capacity` bytes at `addr` (see
/// the module documentation).
#[cfg(target_os = "linux")]
fn advise(addr: usize, capacity: usize) {
    /// `MADV_COLLAPSE` (Linux 6.1), which the `libc` crate does not name on every target.
    const MADV_COLLAPSE: libc::c_int = 25;
    // SAFETY: the advice concerns only the pages that hold the buffer's own allocation
    // (its first and last page may also hold the allocator's neighbouring bytes);
    // neither MADV_HUGEPAGE nor MADV_COLLAPSE changes the contents of memory, only
    // how it is backed. Failures (old kernels, huge pages off) are ignored.
    unsafe {
        let page = page_size();
        let start = addr & !(page - 1);
        let end = (addr + capacity).next_multiple_of(page);
        libc::madvise(start as *mut libc::c_void, end - start, libc::MADV_HUGEPAGE);
        let window = start & !(HUGE_PAGE - 1);
        if window == start && end - start >= HUGE_PAGE {
            libc::madvise(window as *mut libc::c_void, HUGE_PAGE, MADV_COLLAPSE);
        }
    }
}

/// Elsewhere, buffers are ordinary allocations.
#[cfg(not(target_os = "linux"))]
fn advise(_addr: usize, _capacity: usize) {}

/// The system's base page size.
#[cfg(target_os = "linux")]
fn page_size() -> usize {
    // SAFETY: sysconf has no preconditions.
    match unsafe { libc::sysconf(libc::_SC_PAGESIZE) } {
        n if n > 0 && (n as usize).is_power_of_two() => n as usize,
        _ => 4096,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn room_is_made_and_content_discarded() {
        let mut v = vec![7u8; 10];
        room_for(&mut v, 5);
        assert!(v.is_empty());
        assert!(v.capacity() >= 10, "kept its allocation");
        room_for(&mut v, 100);
        assert!(v.is_empty() && v.capacity() >= 100);
        assert!(v.capacity() < MIN_HUGE, "small buffers are not rounded up");
    }

    #[test]
    fn large_buffers_take_whole_huge_pages_and_work_as_usual() {
        let mut v = Vec::new();
        room_for(&mut v, MIN_HUGE + 1);
        assert_eq!(v.capacity(), HUGE_PAGE - ALLOCATOR_HEADER);
        v.resize(MIN_HUGE + 1, 3);
        assert!(v.iter().all(|&b| b == 3));
        room_for(&mut v, HUGE_PAGE);
        assert_eq!(v.capacity(), 2 * HUGE_PAGE - ALLOCATOR_HEADER);
        assert!(v.is_empty());
        v.extend_from_slice(&[1, 2, 3]);
        assert_eq!(v, [1, 2, 3]);
    }
}
