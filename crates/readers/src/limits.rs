//! Caps on what one hostile file can make a reader allocate or write.
//!
//! The readers take these as plain values; the engine fills them from its
//! session options (`logsql.max_chunk_bytes`, `logsql.max_message_bytes`).

/// Default [`Limits::max_chunk_bytes`]: 256 MiB.
pub const DEFAULT_MAX_CHUNK_BYTES: u64 = 256 << 20;

/// Default [`Limits::max_message_bytes`]: 256 MiB.
pub const DEFAULT_MAX_MESSAGE_BYTES: u64 = 256 << 20;

/// Default [`Limits::max_side_file_bytes`]: 16 MiB.
pub const DEFAULT_MAX_SIDE_FILE_BYTES: u64 = 16 << 20;

/// Largest payload a record batch can hold: Arrow views address at most
/// `i32::MAX` bytes per value, so longer payloads are errors, never lengths
/// that wrap.
pub const VIEW_MAX_BYTES: u64 = i32::MAX as u64;

/// Size caps a reader applies while decompressing and copying.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limits {
    /// Most bytes one chunk may decompress to, and the largest temporary copy
    /// of a database compressed whole (`.db3.zstd`). Decompression stops at
    /// the cap: a chunk over it is an error naming the file, the chunk's
    /// offset and the limit.
    pub max_chunk_bytes: u64,
    /// Most bytes one message payload may hold (after per-message
    /// decompression); at most [`VIEW_MAX_BYTES`] whatever is set.
    pub max_message_bytes: u64,
    /// Most bytes of a side file read whole (a rosbag2 `metadata.yaml`).
    pub max_side_file_bytes: u64,
}

impl Default for Limits {
    fn default() -> Self {
        Self {
            max_chunk_bytes: DEFAULT_MAX_CHUNK_BYTES,
            max_message_bytes: DEFAULT_MAX_MESSAGE_BYTES,
            max_side_file_bytes: DEFAULT_MAX_SIDE_FILE_BYTES,
        }
    }
}

impl Limits {
    /// The payload cap in force: [`Limits::max_message_bytes`], at most
    /// [`VIEW_MAX_BYTES`].
    pub fn message_cap(&self) -> u64 {
        self.max_message_bytes.min(VIEW_MAX_BYTES)
    }
}

/// Reads the side file `path` (a `metadata.yaml`, a `.msg` definition) as
/// text, only when it is a regular file of at most `cap` bytes: a FIFO would
/// block the read, a device (`/dev/zero`) or a huge file would fill memory.
/// `Ok(None)` when there is no such file.
pub fn read_side_file(path: &std::path::Path, cap: u64) -> Result<Option<String>, String> {
    use std::io::Read;
    let meta = match std::fs::metadata(path) {
        Ok(m) => m,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(format!("{}: {e}", path.display())),
    };
    let regular = |m: &std::fs::Metadata| -> Result<(), String> {
        if !m.is_file() {
            return Err(format!(
                "{} is not a regular file; not read",
                path.display()
            ));
        }
        if m.len() > cap {
            return Err(format!(
                "{} holds {} bytes, over the {cap}-byte limit of a side file; not read",
                path.display(),
                m.len()
            ));
        }
        Ok(())
    };
    regular(&meta)?;
    let file = std::fs::File::open(path).map_err(|e| format!("{}: {e}", path.display()))?;
    // The file opened may not be the one checked (replaced in between).
    regular(
        &file
            .metadata()
            .map_err(|e| format!("{}: {e}", path.display()))?,
    )?;
    let mut bytes = Vec::new();
    file.take(cap + 1)
        .read_to_end(&mut bytes)
        .map_err(|e| format!("{}: {e}", path.display()))?;
    if bytes.len() as u64 > cap {
        return Err(format!(
            "{} grew past the {cap}-byte limit of a side file; not read",
            path.display()
        ));
    }
    String::from_utf8(bytes)
        .map(Some)
        .map_err(|_| format!("{}: not UTF-8 text", path.display()))
}
