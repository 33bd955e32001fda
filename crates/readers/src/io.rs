//! Random-access reading of log files, independent of where the bytes live.
//!
//! Format readers only ever see a [`ReadAt`]: a file of known size from which
//! byte ranges are read. Local files, in-memory buffers and (in the engine)
//! object stores implement it, so the readers stay free of any I/O policy.

use std::fs::File;
use std::io;
use std::path::Path;
use std::sync::Arc;

use crate::error::{Error, ErrorContext, Result};
use crate::shared_chunks::ChunkMemo;

/// A file of known size that can be read at any offset.
pub trait ReadAt: Send + Sync {
    /// Display name for error messages (a path or URL).
    fn name(&self) -> &str;
    /// Size of the file in bytes.
    fn size(&self) -> u64;
    /// Fills `buf` with the bytes at `offset..offset + buf.len()`.
    ///
    /// Fails with [`io::ErrorKind::UnexpectedEof`] if the range passes the end.
    fn read_exact_at(&self, offset: u64, buf: &mut [u8]) -> io::Result<()>;

    /// The file's path on the local file system, when it is a local file.
    ///
    /// For readers that must hand a path to a library doing its own I/O
    /// (SQLite for ROS 2 `.db3` bags); others never need it.
    fn local_path(&self) -> Option<&Path> {
        None
    }

    /// Records `bytes` read from this file by someone else than
    /// [`ReadAt::read_exact_at`] (SQLite reading a `.db3` by path), so that a
    /// wrapper counting bytes for the scan metrics counts them too.
    fn note_external_read(&self, bytes: u64) {
        let _ = bytes;
    }

    /// The decompressed chunks this scan shares with the other scans of the
    /// same file ([`crate::shared_chunks`]), if any; readers look there
    /// before decompressing a chunk.
    fn shared_chunks(&self) -> Option<&dyn ChunkMemo> {
        None
    }
}

impl dyn ReadAt + '_ {
    /// Reads `len` bytes at `offset` into a new vector.
    ///
    /// The range is checked against the file size *before* allocating, so a
    /// corrupt length field can never make the reader allocate more than the
    /// file holds; such a request is a [`Error::Truncated`] naming `offset`.
    pub(crate) fn read_vec(
        &self,
        ctx: &ErrorContext,
        offset: u64,
        len: u64,
        what: &str,
    ) -> Result<Vec<u8>> {
        let end = offset.checked_add(len);
        match end {
            Some(end) if end <= self.size() => {}
            _ => {
                return Err(ctx.truncated(
                    offset,
                    format!("{what} of {len} bytes extends past the end of the file"),
                ));
            }
        }
        let mut buf = vec![0u8; len as usize];
        self.read_exact_at(offset, &mut buf)
            .map_err(|e| ctx.io(e))?;
        Ok(buf)
    }

    /// Reads up to `len` bytes at `offset`, fewer if the file ends first.
    pub fn read_upto(&self, offset: u64, len: usize) -> io::Result<Vec<u8>> {
        let avail = self.size().saturating_sub(offset).min(len as u64) as usize;
        let mut buf = vec![0u8; avail];
        self.read_exact_at(offset, &mut buf)?;
        Ok(buf)
    }
}

/// A local file read with positioned reads (`pread`), shareable across threads.
#[derive(Debug)]
pub struct FileReader {
    name: String,
    path: std::path::PathBuf,
    file: File,
    size: u64,
}

impl FileReader {
    /// Opens `path` for reading.
    ///
    /// A path that is not a regular file (a pipe such as `<(cat f.mcap)`, a
    /// device, a socket) is refused with [`Error::NotRegularFile`] before it is
    /// opened: opening a pipe with no writer would block forever.
    pub fn open(path: impl AsRef<Path>) -> Result<Self> {
        let path = path.as_ref();
        let name = path.display().to_string();
        check_regular_file(path)?;
        let file = File::open(path).map_err(|e| Error::io(&name, e))?;
        let size = file.metadata().map_err(|e| Error::io(&name, e))?.len();
        Ok(Self {
            name,
            path: path.to_path_buf(),
            file,
            size,
        })
    }
}

/// Fails with [`Error::NotRegularFile`] when `path` (symbolic links followed) is
/// a pipe, a device or a socket; a missing path is an [`Error::Io`]. Only
/// `stat`s the path, so it never blocks on a pipe.
pub fn check_regular_file(path: &Path) -> Result<()> {
    let name = || path.display().to_string();
    let meta = std::fs::metadata(path).map_err(|e| Error::io(name(), e))?;
    let ty = meta.file_type();
    if ty.is_file() || ty.is_dir() {
        return Ok(());
    }
    #[cfg(unix)]
    let kind = {
        use std::os::unix::fs::FileTypeExt;
        if ty.is_fifo() {
            "a pipe"
        } else if ty.is_char_device() {
            "a character device"
        } else if ty.is_block_device() {
            "a block device"
        } else if ty.is_socket() {
            "a socket"
        } else {
            "a special file"
        }
    };
    #[cfg(not(unix))]
    let kind = "a special file";
    Err(Error::NotRegularFile { file: name(), kind })
}

impl ReadAt for FileReader {
    fn name(&self) -> &str {
        &self.name
    }
    fn local_path(&self) -> Option<&Path> {
        Some(&self.path)
    }
    fn size(&self) -> u64 {
        self.size
    }
    #[cfg(unix)]
    fn read_exact_at(&self, offset: u64, buf: &mut [u8]) -> io::Result<()> {
        std::os::unix::fs::FileExt::read_exact_at(&self.file, buf, offset)
    }
    #[cfg(not(unix))]
    fn read_exact_at(&self, offset: u64, buf: &mut [u8]) -> io::Result<()> {
        let mut done = 0;
        while done < buf.len() {
            let n = std::os::windows::fs::FileExt::seek_read(
                &self.file,
                &mut buf[done..],
                offset + done as u64,
            )?;
            if n == 0 {
                return Err(io::ErrorKind::UnexpectedEof.into());
            }
            done += n;
        }
        Ok(())
    }
}

/// A file held in memory (tests, fuzzing, small downloads).
#[derive(Debug, Clone)]
pub struct BytesReader {
    name: String,
    bytes: Arc<[u8]>,
}

impl BytesReader {
    /// Wraps `bytes` under the display name `name`.
    pub fn new(name: impl Into<String>, bytes: impl Into<Arc<[u8]>>) -> Self {
        Self {
            name: name.into(),
            bytes: bytes.into(),
        }
    }
}

impl ReadAt for BytesReader {
    fn name(&self) -> &str {
        &self.name
    }
    fn size(&self) -> u64 {
        self.bytes.len() as u64
    }
    fn read_exact_at(&self, offset: u64, buf: &mut [u8]) -> io::Result<()> {
        let start =
            usize::try_from(offset).map_err(|_| io::Error::from(io::ErrorKind::UnexpectedEof))?;
        let src = start
            .checked_add(buf.len())
            .and_then(|end| self.bytes.get(start..end))
            .ok_or_else(|| io::Error::from(io::ErrorKind::UnexpectedEof))?;
        buf.copy_from_slice(src);
        Ok(())
    }
}

/// A forward reader over a [`ReadAt`] with a bounded buffer, for linear scans.
///
/// Memory stays at one buffer (plus the largest single record asked for), however
/// large the file. `pos` is always the absolute file offset of the next unread byte.
///
/// Read-ahead adapts to the access pattern: it starts small and doubles (up to
/// [`Self::DEFAULT_BLOCK`]) while reads are contiguous, and falls back to
/// [`Self::MIN_BLOCK`] after a skip, so walking record headers and skipping
/// large record bodies reads little more than the headers.
pub(crate) struct SequentialReader<'a> {
    file: &'a dyn ReadAt,
    buf: Vec<u8>,
    /// File offset of `buf[0]`.
    buf_start: u64,
    /// Offset of the next unread byte.
    pos: u64,
    /// Bytes to read ahead at the next refill: grows while reading contiguously,
    /// shrinks back after a skip (like an OS read-ahead window).
    block: usize,
    /// Largest read-ahead.
    max_block: usize,
}

impl<'a> SequentialReader<'a> {
    /// Largest read-ahead: 1 MiB.
    pub(crate) const DEFAULT_BLOCK: usize = 1 << 20;
    /// Read-ahead after a skip: 4 KiB.
    pub(crate) const MIN_BLOCK: usize = 4 << 10;

    /// Starts reading `file` at `pos`.
    pub(crate) fn new(file: &'a dyn ReadAt, pos: u64) -> Self {
        Self {
            file,
            buf: Vec::new(),
            buf_start: pos,
            pos,
            block: Self::MIN_BLOCK,
            max_block: Self::DEFAULT_BLOCK,
        }
    }

    /// Absolute offset of the next unread byte.
    pub(crate) fn position(&self) -> u64 {
        self.pos
    }

    /// Bytes left in the file after the current position.
    pub(crate) fn remaining(&self) -> u64 {
        self.file.size().saturating_sub(self.pos)
    }

    /// Moves to `pos` (forward or backward).
    pub(crate) fn seek(&mut self, pos: u64) {
        self.pos = pos;
    }

    /// Returns the next `n` bytes without consuming them, or fewer at the end of the file.
    pub(crate) fn peek(&mut self, n: usize) -> io::Result<&[u8]> {
        let in_buf = self.pos >= self.buf_start
            && self.pos + n as u64 <= self.buf_start + self.buf.len() as u64;
        if !in_buf {
            let buf_end = self.buf_start + self.buf.len() as u64;
            let contiguous =
                !self.buf.is_empty() && self.pos >= self.buf_start && self.pos <= buf_end;
            self.block = if contiguous {
                (self.block * 2).min(self.max_block)
            } else {
                Self::MIN_BLOCK.min(self.max_block)
            };
            let want = n.max(self.block) as u64;
            let len = want.min(self.file.size().saturating_sub(self.pos)) as usize;
            self.buf.resize(len, 0);
            self.file.read_exact_at(self.pos, &mut self.buf)?;
            self.buf_start = self.pos;
        }
        let start = (self.pos - self.buf_start) as usize;
        let end = (start + n).min(self.buf.len());
        Ok(&self.buf[start..end])
    }

    /// Consumes `n` bytes.
    pub(crate) fn advance(&mut self, n: u64) {
        self.pos += n;
    }

    /// Reads exactly `n` bytes, or `None` when the file ends first (position unchanged).
    pub(crate) fn take(&mut self, n: usize) -> io::Result<Option<&[u8]>> {
        let have = self.peek(n)?.len();
        if have < n {
            return Ok(None);
        }
        let start = (self.pos - self.buf_start) as usize;
        self.pos += n as u64;
        Ok(Some(&self.buf[start..start + n]))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn read_vec_rejects_ranges_past_the_end_before_allocating() {
        let r = BytesReader::new("mem", vec![1u8, 2, 3]);
        let ctx = ErrorContext::new("mem", "test", 3);
        let f: &dyn ReadAt = &r;
        assert_eq!(f.read_vec(&ctx, 1, 2, "x").unwrap(), vec![2, 3]);
        let err = f.read_vec(&ctx, 1, u64::MAX, "record").unwrap_err();
        assert_eq!(err.offset(), Some(1));
        assert!(err.to_string().contains("mem"), "{err}");
    }

    #[test]
    fn sequential_reader_crosses_block_boundaries() {
        let data: Vec<u8> = (0..=255u8).cycle().take(10_000).collect();
        let r = BytesReader::new("mem", data.clone());
        let mut s = SequentialReader::new(&r, 0);
        s.max_block = 7;
        let mut out = Vec::new();
        while let Some(b) = s.take(13).unwrap() {
            out.extend_from_slice(b);
        }
        assert_eq!(&out[..], &data[..out.len()]);
        assert_eq!(out.len(), 10_000 / 13 * 13);
        assert_eq!(s.peek(100).unwrap(), &data[out.len()..]);
    }

    /// Counts the bytes read through it.
    struct Counting<'a>(&'a BytesReader, std::sync::atomic::AtomicU64);

    impl ReadAt for Counting<'_> {
        fn name(&self) -> &str {
            self.0.name()
        }
        fn size(&self) -> u64 {
            self.0.size()
        }
        fn read_exact_at(&self, offset: u64, buf: &mut [u8]) -> io::Result<()> {
            self.1
                .fetch_add(buf.len() as u64, std::sync::atomic::Ordering::Relaxed);
            self.0.read_exact_at(offset, buf)
        }
    }

    #[test]
    fn read_ahead_shrinks_after_skips_and_grows_when_contiguous() {
        let r = BytesReader::new("mem", vec![7u8; 64 << 20]);
        // Skipping 1 MiB bodies after 16-byte headers reads a few KiB per header.
        let c = Counting(&r, Default::default());
        let mut s = SequentialReader::new(&c, 0);
        for _ in 0..32 {
            s.take(16).unwrap().unwrap();
            s.advance(1 << 20);
        }
        let skipped = c.1.load(std::sync::atomic::Ordering::Relaxed);
        assert!(
            skipped <= 32 * SequentialReader::MIN_BLOCK as u64,
            "read {skipped} bytes"
        );
        // Reading contiguously grows the window: few refills for 16 MiB.
        let mut s = SequentialReader::new(&r, 0);
        let (mut refills, mut last_start) = (0, u64::MAX);
        while s.position() < 16 << 20 {
            s.take(100).unwrap().unwrap();
            if s.buf_start != last_start {
                refills += 1;
                last_start = s.buf_start;
            }
        }
        assert!(refills < 40, "{refills} refills for 16 MiB");
    }
}
