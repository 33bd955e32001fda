//! A read-ahead SQLite VFS for scanning a `.db3` front to back.
//!
//! SQLite reads a database one page per system call: every b-tree page, and
//! every overflow page of a large `data` blob (4 KiB each, read past its page
//! cache straight into the blob's buffer). A full scan of a 200 MB bag is then
//! some 90,000 `pread`s, and the kernel's cost per call, more than the
//! copying, dominates. This VFS wraps the default one (`unix` on Linux) and, for the
//! main database file only, serves a read that continues where the previous
//! one ended from a buffer filled by one larger read (a window of
//! [`MIN_WINDOW`] to [`WINDOW`] bytes: it grows while the windows' bytes are
//! all used, as by a full scan, and shrinks while they are not, as when a
//! scan without `data` skips each blob's overflow pages); later reads inside
//! the window are served from it too. Reads that jump (an index lookup, a
//! time window's first page) go to the file as before.
//!
//! Only for read-only databases that nothing writes while logsql reads them
//! (`immutable=1` opens): only a write through the same file drops the
//! buffer, a change by another process is not noticed. The wrapper's
//! `sqlite3_io_methods` are version 1, so SQLite uses neither memory mapping
//! nor shared memory (WAL) through it. Select it with the URI parameter
//! `vfs=` and [`name`].

use std::ffi::{CStr, c_int, c_void};
use std::sync::OnceLock;
use std::sync::atomic::{AtomicPtr, Ordering};

use rusqlite::ffi;

/// Most bytes read at once when a read continues the previous one.
pub const WINDOW: usize = 256 << 10;

/// Fewest bytes read at once when a read continues the previous one.
pub const MIN_WINDOW: usize = 16 << 10;

/// The window a file starts with.
const FIRST_WINDOW: usize = 64 << 10;

/// Consecutive reads, each continuing the previous one, after which windows
/// start again once they were given up.
const RESTART_RUN: u32 = 4;

/// The name the VFS is registered under.
const NAME: &CStr = c"logsql-readahead";

/// The file object SQLite allocates (`szOsFile` bytes) for each open file.
#[repr(C)]
struct RaFile {
    /// SQLite's part: the methods below (null when the open failed).
    base: ffi::sqlite3_file,
    /// The wrapped VFS's file, allocated with `sqlite3_malloc`.
    real: *mut ffi::sqlite3_file,
    /// The read-ahead state (a `Box`), null for files other than the main database.
    state: *mut State,
}

/// The read-ahead buffer of one open main database file.
struct State {
    /// The file's size, taken at open (the file is immutable).
    size: i64,
    /// The window's buffer (its first `filled` bytes are the file's from `start`).
    buf: Vec<u8>,
    /// Bytes of `buf` that hold the file's.
    filled: usize,
    /// The file offset of `buf[0]`.
    start: i64,
    /// The end of the previous read.
    next: i64,
    /// Bytes the next window reads: doubled (up to [`WINDOW`]) after a
    /// window whose bytes were nearly all read, halved after one of which
    /// less than half was; 0 (no windows) below [`MIN_WINDOW`], until a run
    /// of [`RESTART_RUN`] reads continues one another.
    window: usize,
    /// Reads in a row that continued the previous one.
    run: u32,
    /// Bytes served from the current window.
    served: usize,
}

/// The wrapped (default) VFS, set once before the wrapper is registered.
static INNER: AtomicPtr<ffi::sqlite3_vfs> = AtomicPtr::new(std::ptr::null_mut());

/// Registers the VFS (once per process) and returns its name for the URI
/// parameter `vfs=`; `None` when SQLite has no default VFS to wrap.
pub fn name() -> Option<&'static str> {
    static VFS: OnceLock<bool> = OnceLock::new();
    VFS.get_or_init(|| {
        // SAFETY: SQLite is initialised first; the default VFS lives for
        // the process. The copy is leaked, so SQLite may keep its address;
        // registering is done once, under the `OnceLock`.
        unsafe {
            if ffi::sqlite3_initialize() != ffi::SQLITE_OK {
                return false;
            }
            let dflt = ffi::sqlite3_vfs_find(std::ptr::null());
            if dflt.is_null() {
                return false;
            }
            INNER.store(dflt, Ordering::Release);
            let mut vfs: ffi::sqlite3_vfs = *dflt;
            vfs.iVersion = vfs.iVersion.min(3);
            vfs.szOsFile = std::mem::size_of::<RaFile>() as c_int;
            vfs.pNext = std::ptr::null_mut();
            vfs.zName = NAME.as_ptr();
            vfs.xOpen = Some(x_open);
            let vfs = Box::into_raw(Box::new(vfs));
            if ffi::sqlite3_vfs_register(vfs, 0) != ffi::SQLITE_OK {
                drop(Box::from_raw(vfs));
                return false;
            }
            true
        }
    })
    .then_some("logsql-readahead")
}

/// The wrapper's methods (version 1: no shared memory, no memory mapping).
static METHODS: ffi::sqlite3_io_methods = ffi::sqlite3_io_methods {
    iVersion: 1,
    xClose: Some(x_close),
    xRead: Some(x_read),
    xWrite: Some(x_write),
    xTruncate: Some(x_truncate),
    xSync: Some(x_sync),
    xFileSize: Some(x_file_size),
    xLock: Some(x_lock),
    xUnlock: Some(x_unlock),
    xCheckReservedLock: Some(x_check_reserved_lock),
    xFileControl: Some(x_file_control),
    xSectorSize: Some(x_sector_size),
    xDeviceCharacteristics: Some(x_device_characteristics),
    xShmMap: None,
    xShmLock: None,
    xShmBarrier: None,
    xShmUnmap: None,
    xFetch: None,
    xUnfetch: None,
};

/// The wrapped file's methods.
///
/// # Safety
/// `f` is a file this VFS opened (its `real` file is open).
unsafe fn real(
    f: *mut ffi::sqlite3_file,
) -> (*mut ffi::sqlite3_file, &'static ffi::sqlite3_io_methods) {
    // SAFETY: per the contract, `f` is an `RaFile` whose `real` is open, and
    // open files' methods are static tables of the wrapped VFS.
    unsafe {
        let real = (*f.cast::<RaFile>()).real;
        (real, &*(*real).pMethods)
    }
}

unsafe extern "C" fn x_open(
    vfs: *mut ffi::sqlite3_vfs,
    name: ffi::sqlite3_filename,
    file: *mut ffi::sqlite3_file,
    flags: c_int,
    out_flags: *mut c_int,
) -> c_int {
    let _ = vfs;
    // SAFETY: SQLite passes `file` with `szOsFile` bytes for an `RaFile`;
    // the wrapped file gets the wrapped VFS's `szOsFile` bytes, zeroed as
    // SQLite does for its own files.
    unsafe {
        let f = file.cast::<RaFile>();
        (*f).base.pMethods = std::ptr::null();
        (*f).real = std::ptr::null_mut();
        (*f).state = std::ptr::null_mut();
        let inner = INNER.load(Ordering::Acquire);
        let size = (*inner).szOsFile;
        let real = ffi::sqlite3_malloc(size).cast::<ffi::sqlite3_file>();
        if real.is_null() {
            return ffi::SQLITE_NOMEM;
        }
        std::ptr::write_bytes(real.cast::<u8>(), 0, size as usize);
        let Some(open) = (*inner).xOpen else {
            ffi::sqlite3_free(real.cast());
            return ffi::SQLITE_ERROR;
        };
        let rc = open(inner, name, real, flags, out_flags);
        if rc != ffi::SQLITE_OK || (*real).pMethods.is_null() {
            if !(*real).pMethods.is_null()
                && let Some(close) = (*(*real).pMethods).xClose
            {
                close(real);
            }
            ffi::sqlite3_free(real.cast());
            return if rc == ffi::SQLITE_OK {
                ffi::SQLITE_CANTOPEN
            } else {
                rc
            };
        }
        (*f).real = real;
        if flags & ffi::SQLITE_OPEN_MAIN_DB != 0 {
            let mut n: ffi::sqlite3_int64 = 0;
            let size_rc = match (*(*real).pMethods).xFileSize {
                Some(fs) => fs(real, &mut n),
                None => ffi::SQLITE_ERROR,
            };
            if size_rc == ffi::SQLITE_OK {
                (*f).state = Box::into_raw(Box::new(State {
                    size: n,
                    buf: Vec::new(),
                    filled: 0,
                    start: 0,
                    next: -1,
                    window: FIRST_WINDOW,
                    run: 0,
                    served: 0,
                }));
            }
        }
        (*f).base.pMethods = &METHODS;
        ffi::SQLITE_OK
    }
}

unsafe extern "C" fn x_close(file: *mut ffi::sqlite3_file) -> c_int {
    // SAFETY: SQLite closes each opened file once; `real` and `state` were
    // made by `x_open` and are released here only.
    unsafe {
        let f = file.cast::<RaFile>();
        let (real, m) = real(file);
        let rc = m.xClose.map_or(ffi::SQLITE_OK, |close| close(real));
        ffi::sqlite3_free(real.cast());
        (*f).real = std::ptr::null_mut();
        if !(*f).state.is_null() {
            drop(Box::from_raw((*f).state));
            (*f).state = std::ptr::null_mut();
        }
        rc
    }
}

unsafe extern "C" fn x_read(
    file: *mut ffi::sqlite3_file,
    out: *mut c_void,
    amt: c_int,
    off: ffi::sqlite3_int64,
) -> c_int {
    // SAFETY: `out` has `amt` bytes (SQLite's contract); `state` is this
    // open file's, used by one connection (one thread) at a time.
    unsafe {
        let (real, m) = real(file);
        let Some(read) = m.xRead else {
            return ffi::SQLITE_IOERR_READ;
        };
        let state = (*file.cast::<RaFile>()).state;
        if state.is_null() || amt <= 0 || off < 0 || amt as usize > WINDOW / 2 {
            return read(real, out, amt, off);
        }
        let st = &mut *state;
        let end = off + amt as i64;
        let sequential = off == st.next;
        st.next = end;
        st.run = if sequential {
            st.run.saturating_add(1)
        } else {
            0
        };
        if off < st.start || end > st.start + st.filled as i64 {
            if !sequential || end > st.size {
                return read(real, out, amt, off);
            }
            if st.filled > 0 {
                if st.served * 2 < st.filled {
                    st.window /= 2;
                    if st.window < MIN_WINDOW {
                        st.window = 0;
                    }
                } else if st.served * 8 >= st.filled * 7 {
                    st.window = (st.window * 2).min(WINDOW);
                }
                st.filled = 0;
            }
            if st.window == 0 {
                if st.run < RESTART_RUN {
                    return read(real, out, amt, off);
                }
                st.window = MIN_WINDOW;
            }
            // At least this read (a page of a database with large pages
            // may exceed the window), at most the rest of the file.
            let n = (st.size - off).min(st.window.max(amt as usize) as i64) as usize;
            if st.buf.len() < n {
                st.buf.resize(n, 0);
            }
            st.served = 0;
            if read(real, st.buf.as_mut_ptr().cast(), n as c_int, off) != ffi::SQLITE_OK {
                return read(real, out, amt, off);
            }
            st.start = off;
            st.filled = n;
        }
        st.served += amt as usize;
        let at = (off - st.start) as usize;
        std::ptr::copy_nonoverlapping(st.buf.as_ptr().add(at), out.cast::<u8>(), amt as usize);
        ffi::SQLITE_OK
    }
}

unsafe extern "C" fn x_write(
    file: *mut ffi::sqlite3_file,
    data: *const c_void,
    amt: c_int,
    off: ffi::sqlite3_int64,
) -> c_int {
    // SAFETY: forwarded to the wrapped file; a write also drops the buffer.
    unsafe {
        let state = (*file.cast::<RaFile>()).state;
        if !state.is_null() {
            (*state).filled = 0;
        }
        let (real, m) = real(file);
        m.xWrite
            .map_or(ffi::SQLITE_READONLY, |w| w(real, data, amt, off))
    }
}

unsafe extern "C" fn x_truncate(file: *mut ffi::sqlite3_file, size: ffi::sqlite3_int64) -> c_int {
    // SAFETY: forwarded to the wrapped file.
    unsafe {
        let (real, m) = real(file);
        m.xTruncate.map_or(ffi::SQLITE_READONLY, |t| t(real, size))
    }
}

unsafe extern "C" fn x_sync(file: *mut ffi::sqlite3_file, flags: c_int) -> c_int {
    // SAFETY: forwarded to the wrapped file.
    unsafe {
        let (real, m) = real(file);
        m.xSync.map_or(ffi::SQLITE_OK, |s| s(real, flags))
    }
}

unsafe extern "C" fn x_file_size(
    file: *mut ffi::sqlite3_file,
    size: *mut ffi::sqlite3_int64,
) -> c_int {
    // SAFETY: forwarded to the wrapped file.
    unsafe {
        let (real, m) = real(file);
        m.xFileSize
            .map_or(ffi::SQLITE_IOERR_FSTAT, |s| s(real, size))
    }
}

unsafe extern "C" fn x_lock(file: *mut ffi::sqlite3_file, level: c_int) -> c_int {
    // SAFETY: forwarded to the wrapped file.
    unsafe {
        let (real, m) = real(file);
        m.xLock.map_or(ffi::SQLITE_OK, |l| l(real, level))
    }
}

unsafe extern "C" fn x_unlock(file: *mut ffi::sqlite3_file, level: c_int) -> c_int {
    // SAFETY: forwarded to the wrapped file.
    unsafe {
        let (real, m) = real(file);
        m.xUnlock.map_or(ffi::SQLITE_OK, |u| u(real, level))
    }
}

unsafe extern "C" fn x_check_reserved_lock(file: *mut ffi::sqlite3_file, out: *mut c_int) -> c_int {
    // SAFETY: forwarded to the wrapped file.
    unsafe {
        let (real, m) = real(file);
        match m.xCheckReservedLock {
            Some(c) => c(real, out),
            None => {
                *out = 0;
                ffi::SQLITE_OK
            }
        }
    }
}

unsafe extern "C" fn x_file_control(
    file: *mut ffi::sqlite3_file,
    op: c_int,
    arg: *mut c_void,
) -> c_int {
    // SAFETY: forwarded to the wrapped file.
    unsafe {
        let (real, m) = real(file);
        m.xFileControl
            .map_or(ffi::SQLITE_NOTFOUND, |c| c(real, op, arg))
    }
}

unsafe extern "C" fn x_sector_size(file: *mut ffi::sqlite3_file) -> c_int {
    // SAFETY: forwarded to the wrapped file.
    unsafe {
        let (real, m) = real(file);
        m.xSectorSize.map_or(4096, |s| s(real))
    }
}

unsafe extern "C" fn x_device_characteristics(file: *mut ffi::sqlite3_file) -> c_int {
    // SAFETY: forwarded to the wrapped file.
    unsafe {
        let (real, m) = real(file);
        m.xDeviceCharacteristics.map_or(0, |d| d(real))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rusqlite::{Connection, OpenFlags};

    /// Reads through the VFS's file of `conn`'s main database.
    struct Raw(*mut ffi::sqlite3_file);

    impl Raw {
        fn of(conn: &Connection) -> Raw {
            let mut f: *mut ffi::sqlite3_file = std::ptr::null_mut();
            // SAFETY: the live connection's handle; the out-pointer is a local.
            let rc = unsafe {
                ffi::sqlite3_file_control(
                    conn.handle(),
                    c"main".as_ptr(),
                    ffi::SQLITE_FCNTL_FILE_POINTER,
                    (&mut f as *mut *mut ffi::sqlite3_file).cast(),
                )
            };
            assert_eq!(rc, ffi::SQLITE_OK);
            assert!(!f.is_null());
            // SAFETY: `f` is the connection's open main file.
            assert!(std::ptr::eq(unsafe { (*f).pMethods }, &METHODS));
            Raw(f)
        }

        fn read(&self, off: usize, len: usize) -> Vec<u8> {
            let mut out = vec![0u8; len];
            // SAFETY: `self.0` is open (its connection outlives `self`); `out` has `len` bytes.
            let rc = unsafe { x_read(self.0, out.as_mut_ptr().cast(), len as c_int, off as i64) };
            assert_eq!(rc, ffi::SQLITE_OK, "read {len} at {off}");
            out
        }

        fn state(&self) -> &State {
            // SAFETY: the main database file has its state while open.
            unsafe { &*(*self.0.cast::<RaFile>()).state }
        }
    }

    #[test]
    fn windows_shrink_when_unused_and_never_serve_less_than_asked() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("w_0.db3");
        {
            let c = Connection::open(&path).unwrap();
            c.execute_batch("CREATE TABLE t(x BLOB); INSERT INTO t VALUES (zeroblob(3000000));")
                .unwrap();
        }
        // Bytes that differ at every offset, written past SQLite's pages.
        let mut bytes = std::fs::read(&path).unwrap();
        for (i, b) in bytes.iter_mut().enumerate().skip(8192) {
            *b = (i % 251) as u8;
        }
        std::fs::write(&path, &bytes).unwrap();
        let conn = Connection::open_with_flags(
            format!(
                "file:{}?immutable=1&vfs={}",
                path.display(),
                name().unwrap()
            ),
            OpenFlags::SQLITE_OPEN_READ_ONLY | OpenFlags::SQLITE_OPEN_URI,
        )
        .unwrap();
        let f = Raw::of(&conn);
        let page = 4096;
        let small = 1024;
        let mut at = 100 * page;
        // A jump, then a continuing read: a first window of FIRST_WINDOW.
        assert!(
            f.read(at, small) == bytes[at..at + small],
            "bytes at {}",
            at
        );
        at += small;
        assert!(
            f.read(at, small) == bytes[at..at + small],
            "bytes at {}",
            at
        );
        assert_eq!(
            (f.state().start, f.state().filled),
            (at as i64, FIRST_WINDOW)
        );
        // Windows of which only their first and last KiB are read halve,
        // down to none.
        for window in [FIRST_WINDOW / 2, FIRST_WINDOW / 4, 0] {
            let end = f.state().start as usize + f.state().filled;
            assert!(
                f.read(end - small, small) == bytes[end - small..end],
                "bytes at {}",
                end - small
            );
            assert!(
                f.read(end, small) == bytes[end..end + small],
                "bytes at {}",
                end
            );
            assert_eq!(f.state().window, window);
            at = end + small;
        }
        assert_eq!(f.state().filled, 0);
        // Windows start again after RESTART_RUN continuing reads, and a read
        // larger than the window is still served whole.
        for _ in 0..RESTART_RUN {
            assert!(f.read(at, page) == bytes[at..at + page], "bytes at {}", at);
            at += page;
        }
        let big = 16 * page;
        assert!(big > MIN_WINDOW);
        assert!(f.read(at, big) == bytes[at..at + big], "bytes at {}", at);
        assert_eq!(f.state().filled, big);
        at += big;
        // Used whole: the next window doubles; every byte is the file's.
        while at + page <= bytes.len() {
            assert!(f.read(at, page) == bytes[at..at + page], "bytes at {}", at);
            at += page;
        }
        assert_eq!(f.state().window, WINDOW);
    }
}
