//! The buffers chunks are read and decompressed into, and payloads copied
//! into: memory the scan maps itself, on transparent huge pages where the
//! system allows it, and shares with Arrow arrays without a copy.
//!
//! A scan keeps a few chunk buffers per partition in flight (the one being
//! filled, the ones held by batches in the channel and at the consumer). On
//! 4 KiB pages each is faulted in and zeroed page by page on first use: for a
//! 1 MiB chunk that is 256 page faults, and on the 200 MB benchmark file those
//! faults cost as much CPU as the CRC checks. Backed by one 2 MiB huge page,
//! the same buffer costs one fault (README, "Huge pages for the chunk
//! buffers").
//!
//! A [`PageBuf`] of [`MIN_HUGE`] bytes or more lives in a [`Region`] mapped
//! here with `mmap`, a whole number of huge pages on a 2 MiB boundary, and
//! advised `MADV_HUGEPAGE` before anything touches it, so each 2 MiB window
//! gets a huge page on its first fault. Leaving this to `malloc` did not hold
//! up: glibc raises its `mmap` threshold once a large block is freed, after
//! which such buffers come from the heap, unaligned, on small pages (the BDDF
//! reader frees its index block before the first chunk is read), and a block
//! glibc does map carries its header in the first window, which then has to
//! be collapsed into a huge page under the process's memory-map lock.
//! Smaller buffers, and every buffer on systems other than Linux, are
//! ordinary zeroed heap allocations. Either way every byte of a region is
//! initialized (zeroed when allocated, then whatever was written), so a
//! buffer reused for the next chunk is overwritten, never zero-filled again.
//!
//! A region is shared with Arrow by reference counting
//! ([`PageBuf::share`]): batches read it while the [`PageBuf`] that filled it
//! writes to it only once it holds the only reference again.

use std::alloc::Layout;
use std::fmt;
use std::ops::Deref;
use std::ptr::NonNull;
use std::sync::Arc;

use arrow_buffer::Buffer;

/// The size of a transparent huge page on x86-64 and (with 4 KiB base pages) AArch64.
pub const HUGE_PAGE: usize = 2 << 20;

/// Buffers from this size on are mapped in whole huge pages. A 512 KiB
/// buffer then takes a whole 2 MiB page once touched: ROS1 bags and many MCAP
/// writers use chunks of 768 KiB to 1 MiB, and for them the page is worth it
/// (README, "Huge pages for the chunk buffers").
pub const MIN_HUGE: usize = HUGE_PAGE / 4;

/// Alignment of the heap regions (Arrow's own buffer alignment).
const HEAP_ALIGN: usize = 64;

/// Memory a [`PageBuf`] fills and Arrow buffers share. Every byte of it is
/// initialized.
pub struct Region {
    ptr: NonNull<u8>,
    capacity: usize,
    /// Mapped here (`munmap` on drop), or allocated on the heap.
    mapped: bool,
}

// SAFETY: a region is plain memory. It is written only through a `PageBuf`
// holding the only reference to it (`Arc::get_mut`), and only read otherwise.
unsafe impl Send for Region {}
// SAFETY: as above; shared references only read.
unsafe impl Sync for Region {}

impl fmt::Debug for Region {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Region")
            .field("capacity", &self.capacity)
            .field("mapped", &self.mapped)
            .finish()
    }
}

impl Region {
    /// A zeroed region of at least `n` bytes: mapped on huge pages from
    /// [`MIN_HUGE`] on where the system allows it, else on the heap.
    fn new(n: usize) -> Self {
        if n >= MIN_HUGE
            && let Some(region) = Self::map(n)
        {
            return region;
        }
        Self::heap(n)
    }

    fn heap(n: usize) -> Self {
        if n == 0 {
            return Self {
                ptr: NonNull::dangling(),
                capacity: 0,
                mapped: false,
            };
        }
        let layout = Self::heap_layout(n);
        // SAFETY: the layout has a non-zero size.
        let ptr = unsafe { std::alloc::alloc_zeroed(layout) };
        let Some(ptr) = NonNull::new(ptr) else {
            std::alloc::handle_alloc_error(layout)
        };
        Self {
            ptr,
            capacity: n,
            mapped: false,
        }
    }

    fn heap_layout(n: usize) -> Layout {
        match Layout::from_size_align(n, HEAP_ALIGN) {
            Ok(layout) => layout,
            Err(_) => panic!("a buffer of {n} bytes exceeds the address space"),
        }
    }

    /// `n` bytes rounded up to whole huge pages, mapped on a 2 MiB boundary
    /// and advised `MADV_HUGEPAGE`; `None` when the system refuses the map.
    #[cfg(target_os = "linux")]
    fn map(n: usize) -> Option<Self> {
        let capacity = n.checked_next_multiple_of(HUGE_PAGE)?;
        let anonymous = |len: usize| {
            // SAFETY: a new private anonymous mapping; it aliases nothing.
            let p = unsafe {
                libc::mmap(
                    std::ptr::null_mut(),
                    len,
                    libc::PROT_READ | libc::PROT_WRITE,
                    libc::MAP_PRIVATE | libc::MAP_ANONYMOUS,
                    -1,
                    0,
                )
            };
            (p != libc::MAP_FAILED).then_some(p as usize)
        };
        // SAFETY (both unmaps): the ranges lie inside a mapping made here and
        // not handed out.
        let unmap = |at: usize, len: usize| unsafe {
            if len > 0 {
                libc::munmap(at as *mut libc::c_void, len);
            }
        };
        // Linux (6.7 on) places a mapping of whole huge pages on a 2 MiB
        // boundary by itself; elsewhere one more page is mapped and the
        // unaligned ends are given back.
        let mut start = anonymous(capacity)?;
        if !start.is_multiple_of(HUGE_PAGE) {
            unmap(start, capacity);
            let len = capacity.checked_add(HUGE_PAGE)?;
            let base = anonymous(len)?;
            start = base.next_multiple_of(HUGE_PAGE);
            unmap(base, start - base);
            unmap(start + capacity, base + len - (start + capacity));
        }
        // SAFETY: advice over the mapping just made; it changes how the
        // memory is backed, not what it holds. A refusal (huge pages off) is
        // ignored: the region is then on small pages.
        unsafe {
            libc::madvise(start as *mut libc::c_void, capacity, libc::MADV_HUGEPAGE);
        }
        Some(Self {
            ptr: NonNull::new(start as *mut u8)?,
            capacity,
            mapped: true,
        })
    }

    /// Elsewhere, regions are heap allocations.
    #[cfg(not(target_os = "linux"))]
    fn map(_n: usize) -> Option<Self> {
        None
    }

    /// The region's size in bytes.
    pub fn capacity(&self) -> usize {
        self.capacity
    }

    /// Whether the region was mapped here (on huge pages where the system allows it).
    pub fn is_mapped(&self) -> bool {
        self.mapped
    }
}

impl Drop for Region {
    fn drop(&mut self) {
        if self.capacity == 0 {
            return;
        }
        if self.mapped {
            #[cfg(target_os = "linux")]
            // SAFETY: the mapping was made by `Region::map` with this size and
            // nothing refers to it any more (this is the last reference).
            unsafe {
                libc::munmap(self.ptr.as_ptr().cast(), self.capacity);
            }
        } else {
            // SAFETY: allocated by `Region::heap` with this layout.
            unsafe { std::alloc::dealloc(self.ptr.as_ptr(), Self::heap_layout(self.capacity)) }
        }
    }
}

/// A growable byte buffer in a [`Region`], filled like a `Vec<u8>` and shared
/// with Arrow arrays without a copy ([`PageBuf::share`]).
///
/// While arrays hold its region, a write first moves the content to a new
/// region (the arrays keep the bytes they were given).
#[derive(Debug, Default)]
pub struct PageBuf {
    region: Option<Arc<Region>>,
    len: usize,
}

impl PageBuf {
    /// Bytes in the buffer.
    pub fn len(&self) -> usize {
        self.len
    }

    /// Whether the buffer holds no byte.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Bytes the buffer's region holds.
    pub fn capacity(&self) -> usize {
        self.region.as_ref().map_or(0, |r| r.capacity)
    }

    /// The buffer's region, when it has one.
    pub fn region(&self) -> Option<&Region> {
        self.region.as_deref()
    }

    /// Whether no array holds the buffer's region (a write needs no new region).
    pub fn is_unique(&mut self) -> bool {
        self.region
            .as_mut()
            .is_some_and(|r| Arc::get_mut(r).is_some())
    }

    /// Empties the buffer, keeping its region.
    pub fn clear(&mut self) {
        self.len = 0;
    }

    /// Keeps the first `n` bytes.
    pub fn truncate(&mut self, n: usize) {
        self.len = self.len.min(n);
    }

    /// Empties the buffer and makes room for `n` bytes: the region is kept
    /// when it is large enough and no array holds it, else replaced.
    pub fn room_for(&mut self, n: usize) {
        self.len = 0;
        if !(self.is_unique() && self.capacity() >= n) {
            // Dropping the old region first lets its memory be reused.
            self.region = None;
            self.region = Some(Arc::new(Region::new(n)));
        }
    }

    /// Makes the region writable and `capacity` bytes or more, keeping the
    /// content: a new region (at least double the old one when growing) when
    /// it is too small or arrays hold it.
    fn make_writable(&mut self, capacity: usize) {
        if self.is_unique() && self.capacity() >= capacity {
            return;
        }
        let old = self.capacity();
        let size = match capacity > old {
            true => capacity.max(old.saturating_mul(2)),
            false => capacity.max(self.len),
        };
        let region = Region::new(size);
        // SAFETY: the new region holds `size >= len` bytes and is not shared
        // yet; the old one holds `len` initialized bytes.
        unsafe {
            if let Some(src) = &self.region {
                std::ptr::copy_nonoverlapping(src.ptr.as_ptr(), region.ptr.as_ptr(), self.len);
            }
        }
        self.region = Some(Arc::new(region));
    }

    /// The whole region, writable.
    fn writable(&mut self) -> &mut [u8] {
        match self.region.as_mut().and_then(Arc::get_mut) {
            // SAFETY: `get_mut` proves this is the only reference to the
            // region, so nobody else reads it while the slice lives, and every
            // byte of a region is initialized.
            Some(r) => unsafe { std::slice::from_raw_parts_mut(r.ptr.as_ptr(), r.capacity) },
            None => &mut [],
        }
    }

    /// [`PageBuf::room_for`] `n` bytes, then the length set to `n` for the
    /// caller to overwrite every byte: nothing is zero-filled or copied, and
    /// the bytes hold whatever the region held (the old content, where the
    /// region is kept).
    pub fn resize_for_overwrite(&mut self, n: usize) -> &mut [u8] {
        self.room_for(n);
        self.len = n;
        &mut self.writable()[..n]
    }

    /// Room for `additional` more bytes, the content kept.
    pub fn reserve(&mut self, additional: usize) {
        self.make_writable(self.len.saturating_add(additional));
    }

    /// The writable bytes past the length (all of them initialized): fill a
    /// prefix, then [`PageBuf::set_len`].
    pub fn spare_mut(&mut self) -> &mut [u8] {
        self.make_writable(self.len);
        let len = self.len;
        &mut self.writable()[len..]
    }

    /// Sets the length (at most the capacity) after writing into [`PageBuf::spare_mut`].
    pub fn set_len(&mut self, n: usize) {
        assert!(n <= self.capacity(), "length {n} past the capacity");
        self.len = n;
    }

    /// Appends `bytes`.
    pub fn extend_from_slice(&mut self, bytes: &[u8]) {
        self.reserve(bytes.len());
        let len = self.len;
        self.writable()[len..len + bytes.len()].copy_from_slice(bytes);
        self.len += bytes.len();
    }

    /// Appends one byte.
    pub fn push(&mut self, byte: u8) {
        self.extend_from_slice(&[byte]);
    }

    /// The content as an Arrow buffer sharing the region (no copy). The
    /// buffer keeps the region alive; this `PageBuf` writes to it again only
    /// once every such buffer is dropped.
    pub fn share(&self) -> Buffer {
        match &self.region {
            Some(r) if r.capacity > 0 => {
                let owner: Arc<dyn arrow_buffer::alloc::Allocation> = Arc::clone(r) as _;
                // SAFETY: `len` bytes from `ptr` are initialized and stay valid
                // while `owner` (a reference to their region) lives; the region
                // is not written while this buffer holds a reference to it.
                unsafe { Buffer::from_custom_allocation(r.ptr, self.len, owner) }
            }
            _ => Buffer::from_vec(Vec::<u8>::new()),
        }
    }
}

impl Deref for PageBuf {
    type Target = [u8];

    fn deref(&self) -> &[u8] {
        match &self.region {
            // SAFETY: `len` bytes of the region are initialized; writes happen
            // only through `&mut self`.
            Some(r) => unsafe { std::slice::from_raw_parts(r.ptr.as_ptr(), self.len) },
            None => &[],
        }
    }
}

impl AsRef<[u8]> for PageBuf {
    fn as_ref(&self) -> &[u8] {
        self
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn room_is_made_and_content_discarded() {
        let mut b = PageBuf::default();
        b.extend_from_slice(&[7; 10]);
        let at = b.as_ptr();
        b.room_for(5);
        assert!(b.is_empty());
        assert_eq!(b.as_ptr(), at, "kept its region");
        b.room_for(100);
        assert!(b.is_empty() && b.capacity() >= 100);
        assert!(b.capacity() < MIN_HUGE, "small buffers are not rounded up");
        assert!(!b.region().unwrap().is_mapped());
    }

    #[test]
    fn large_buffers_take_whole_huge_pages_on_a_boundary_and_work_as_usual() {
        let mut b = PageBuf::default();
        b.room_for(MIN_HUGE + 1);
        let mapped = cfg!(target_os = "linux");
        assert_eq!(b.region().unwrap().is_mapped(), mapped);
        if mapped {
            assert_eq!(b.capacity(), HUGE_PAGE);
            assert_eq!(b.as_ptr() as usize % HUGE_PAGE, 0, "on a 2 MiB boundary");
        }
        b.resize_for_overwrite(MIN_HUGE + 1).fill(3);
        assert!(b.iter().all(|&x| x == 3));
        b.room_for(HUGE_PAGE + 1);
        if mapped {
            assert_eq!(b.capacity(), 2 * HUGE_PAGE);
        }
        assert!(b.is_empty());
        b.extend_from_slice(&[1, 2, 3]);
        assert_eq!(&b[..], [1, 2, 3]);
    }

    #[test]
    fn writes_never_reach_a_shared_region_and_content_survives_growth() {
        let mut b = PageBuf::default();
        b.extend_from_slice(b"chunk one");
        let shared = b.share();
        assert_eq!(shared.as_ptr(), b.as_ptr(), "shared without a copy");
        // Held by an array: a write moves the content to a new region.
        b.push(b'!');
        assert_eq!(shared.as_slice(), b"chunk one");
        assert_eq!(&b[..], b"chunk one!");
        assert_ne!(shared.as_ptr(), b.as_ptr());
        b.room_for(4);
        b.resize_for_overwrite(4).copy_from_slice(b"next");
        assert_eq!(shared.as_slice(), b"chunk one");
        // Nobody else holds the region: written in place.
        let at = b.as_ptr();
        let again = b.share();
        drop(again);
        b.truncate(2);
        b.extend_from_slice(&[0u8; 100_000]);
        assert_eq!(&b[..2], b"ne");
        assert_eq!(b.len(), 100_002);
        assert_ne!(b.as_ptr(), at, "grown into a new region");
        // The spare bytes are initialized and writable.
        let len = b.len();
        b.reserve(3);
        let spare = b.spare_mut();
        spare[..3].copy_from_slice(b"end");
        b.set_len(len + 3);
        assert_eq!(&b[len..], b"end");
        // A fresh region reads as zeros.
        let mut z = PageBuf::default();
        z.room_for(MIN_HUGE);
        assert!(z.resize_for_overwrite(MIN_HUGE).iter().all(|&x| x == 0));
    }
}
