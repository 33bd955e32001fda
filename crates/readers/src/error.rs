//! The crate's one error type.
//!
//! Byte-level readers report *where* (file and byte offset) and *what* went wrong,
//! so a user can tell a truncated recording from an unsupported feature. The
//! engine converts [`Error`] to `DataFusionError` at the DataFusion boundary.

/// Result alias used throughout logsql.
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// Everything that can go wrong while reading a log file.
///
/// Cloneable (I/O errors are shared behind an `Arc`) so that a damage report found
/// while reading a file's summary can be raised again after the readable
/// messages have been returned.
#[derive(Debug, Clone, thiserror::Error)]
pub enum Error {
    /// An operating-system I/O error while reading `file`.
    #[error("{file}: I/O error: {source}")]
    Io {
        /// The file being read.
        file: String,
        /// The underlying error.
        #[source]
        source: std::sync::Arc<std::io::Error>,
    },
    /// The file is damaged or does not follow its format at `offset`.
    #[error("{file}: corrupt {format} data at byte {offset}: {message}")]
    Corrupt {
        /// The file being read.
        file: String,
        /// Format name (`mcap`, `bag`, ...).
        format: &'static str,
        /// Byte offset in the file where the problem was found.
        offset: u64,
        /// What was wrong.
        message: String,
    },
    /// The file ends before a record that starts at `offset` is complete.
    #[error(
        "{file}: truncated {format} file: {message} at byte {offset} (file is {file_size} bytes)"
    )]
    Truncated {
        /// The file being read.
        file: String,
        /// Format name.
        format: &'static str,
        /// Byte offset of the incomplete record.
        offset: u64,
        /// Size of the file.
        file_size: u64,
        /// What was being read.
        message: String,
    },
    /// A checksum stored in the file does not match its content.
    #[error(
        "{file}: {format} checksum mismatch at byte {offset}: {what} (stored {stored}, computed {computed})"
    )]
    Checksum {
        /// The file being read.
        file: String,
        /// Format name.
        format: &'static str,
        /// Byte offset of the checksummed record.
        offset: u64,
        /// Which checksum.
        what: Box<str>,
        /// The value stored in the file, as hex (`0x1234abcd`, or a SHA1 digest).
        stored: Box<str>,
        /// The value computed from the bytes, in the same notation.
        computed: Box<str>,
    },
    /// The file uses a feature logsql does not implement (e.g. an unknown compression).
    #[error("{file}: unsupported {format} feature at byte {offset}: {message}")]
    Unsupported {
        /// The file being read.
        file: String,
        /// Format name.
        format: &'static str,
        /// Byte offset where it was found.
        offset: u64,
        /// What is unsupported.
        message: String,
    },
    /// A chunk, payload or copy larger than a configured limit: the reader
    /// stopped at the limit rather than allocate past it.
    #[error("{file}: {format} data at byte {offset} is over a limit: {message}")]
    Limit {
        /// The file being read.
        file: String,
        /// Format name.
        format: &'static str,
        /// Byte offset of the chunk or record.
        offset: u64,
        /// What was too large, and the limit (with the option that sets it).
        message: String,
    },
    /// No known format recognises the file's first bytes.
    #[error("{file}: not a recognised log file (known formats: {known}); first bytes: {head}")]
    UnknownFormat {
        /// The file being read.
        file: String,
        /// Comma-separated list of the formats that were tried.
        known: String,
        /// Hex dump of the first bytes.
        head: String,
    },
    /// A problem with what the user asked for (bad argument, bad option).
    #[error("{0}")]
    Invalid(String),
    /// A typed table asked of a format that does not derive it.
    #[error("{format} files have no table {table:?}")]
    UnsupportedTable {
        /// Format name.
        format: &'static str,
        /// Table name asked for.
        table: String,
    },
    /// A request to an object store or web server failed; `message` says why
    /// (connection refused, unresolvable host, HTTP 403 or 404, timeout, no credentials).
    #[error("{url}: {message}")]
    Remote {
        /// The URL asked for.
        url: String,
        /// The cause, phrased for users.
        message: String,
    },
    /// A path that is not a regular file (a pipe, a device, a socket): readers
    /// need random access, and opening a pipe with no writer would block.
    #[error(
        "{file} is {kind}, not a regular file: logsql needs random access; save it to a file first"
    )]
    NotRegularFile {
        /// The path.
        file: String,
        /// What it is instead (`a pipe`, `a character device`, `a socket`, ...).
        kind: &'static str,
    },
    /// A directory that holds no log file.
    #[error("{path}: no log files in this directory")]
    NoLogFiles {
        /// The directory as the user named it.
        path: String,
    },
}

/// Errors travel inside `Result`s on hot paths: keep them small.
const _: () = assert!(std::mem::size_of::<Error>() <= 96);

impl Error {
    /// Wraps an I/O error with the file name.
    pub fn io(file: impl Into<String>, source: std::io::Error) -> Self {
        Error::Io {
            file: file.into(),
            source: std::sync::Arc::new(source),
        }
    }

    /// The byte offset this error points at, where it names one.
    pub fn offset(&self) -> Option<u64> {
        match self {
            Error::Corrupt { offset, .. }
            | Error::Truncated { offset, .. }
            | Error::Checksum { offset, .. }
            | Error::Unsupported { offset, .. }
            | Error::Limit { offset, .. } => Some(*offset),
            _ => None,
        }
    }

    /// The file this error names, where it names one.
    pub fn file(&self) -> Option<&str> {
        match self {
            Error::Io { file, .. }
            | Error::Corrupt { file, .. }
            | Error::Truncated { file, .. }
            | Error::Checksum { file, .. }
            | Error::Unsupported { file, .. }
            | Error::Limit { file, .. }
            | Error::UnknownFormat { file, .. }
            | Error::NotRegularFile { file, .. } => Some(file),
            Error::Remote { url, .. } => Some(url),
            Error::NoLogFiles { path } => Some(path),
            Error::Invalid(_) | Error::UnsupportedTable { .. } => None,
        }
    }

    /// Whether this is damage in the file's bytes (truncated, corrupt, a
    /// checksum mismatch, or a chunk or payload over a size limit), which
    /// `logsql.on_error` decides about; other errors
    /// (I/O, an unknown or unsupported format, bad arguments) always fail.
    pub fn is_damage(&self) -> bool {
        matches!(
            self,
            Error::Truncated { .. }
                | Error::Corrupt { .. }
                | Error::Checksum { .. }
                | Error::Limit { .. }
        )
    }

    /// Whether the file cannot be read as a log file: damage
    /// ([`Error::is_damage`]), or content no format recognises (a log file's
    /// name, in a directory, over bytes that follow no format).
    pub fn is_unreadable(&self) -> bool {
        self.is_damage() || matches!(self, Error::UnknownFormat { .. })
    }

    /// Whether this is the damage of an unfinished recording: the file simply
    /// ends early (the writer died or is still writing), so a record or the
    /// index at the end is missing or cut. Everything before [`Error::offset`]
    /// is readable. (A length field corrupted to point past the end of the file
    /// looks the same and is treated the same.)
    pub fn is_unfinished_recording(&self) -> bool {
        matches!(self, Error::Truncated { .. })
    }

    /// The one-line warning for an unfinished recording: the file, where its
    /// readable data ends and how many bytes after that were dropped; `None` for
    /// other errors.
    pub fn unfinished_warning(&self) -> Option<String> {
        match self {
            Error::Truncated {
                file,
                format,
                offset,
                file_size,
                message,
            } => Some(format!(
                "{file}: unfinished {format} file: every complete message was read; readable data ends at byte {offset} of {file_size} ({} bytes dropped: {message})",
                file_size.saturating_sub(*offset)
            )),
            _ => None,
        }
    }
}

/// Convenience for building errors that name a file, a format and an offset.
///
/// Readers keep one `ErrorContext` per file and call its constructors, so every
/// error carries the same file name and format without repeating them.
#[derive(Debug, Clone)]
pub struct ErrorContext {
    /// Display name of the file (path or URL).
    pub file: String,
    /// Format name.
    pub format: &'static str,
    /// File size in bytes.
    pub file_size: u64,
    /// The size caps of this read.
    pub limits: crate::limits::Limits,
}

impl ErrorContext {
    /// A context for `file` of `format` with `file_size` bytes.
    pub fn new(file: impl Into<String>, format: &'static str, file_size: u64) -> Self {
        Self {
            file: file.into(),
            format,
            file_size,
            limits: crate::limits::Limits::default(),
        }
    }

    /// This context with the size caps `limits` (the defaults otherwise).
    pub fn with_limits(mut self, limits: crate::limits::Limits) -> Self {
        self.limits = limits;
        self
    }

    /// The error for a chunk at `offset` declaring `size` uncompressed bytes,
    /// when that is over [`crate::limits::Limits::max_chunk_bytes`].
    pub fn check_chunk_size(&self, offset: u64, size: u64) -> Result<()> {
        let cap = self.limits.max_chunk_bytes;
        if size > cap {
            return Err(self.limit(
                offset,
                format!(
                    "the chunk at byte {offset} decompresses to {size} bytes, over the {cap}-byte limit (logsql.max_chunk_bytes)"
                ),
            ));
        }
        Ok(())
    }

    /// A [`Error::Corrupt`] at `offset`.
    pub fn corrupt(&self, offset: u64, message: impl Into<String>) -> Error {
        Error::Corrupt {
            file: self.file.clone(),
            format: self.format,
            offset,
            message: message.into(),
        }
    }

    /// A [`Error::Truncated`] at `offset`.
    pub fn truncated(&self, offset: u64, message: impl Into<String>) -> Error {
        Error::Truncated {
            file: self.file.clone(),
            format: self.format,
            offset,
            file_size: self.file_size,
            message: message.into(),
        }
    }

    /// A [`Error::Checksum`] at `offset` for a 32-bit checksum (CRC32).
    pub fn checksum(
        &self,
        offset: u64,
        what: impl Into<String>,
        stored: u64,
        computed: u64,
    ) -> Error {
        self.digest_mismatch(
            offset,
            what,
            format!("{stored:#010x}"),
            format!("{computed:#010x}"),
        )
    }

    /// A [`Error::Checksum`] at `offset` for a digest given as text (e.g. SHA1 hex).
    pub(crate) fn digest_mismatch(
        &self,
        offset: u64,
        what: impl Into<String>,
        stored: String,
        computed: String,
    ) -> Error {
        Error::Checksum {
            file: self.file.clone(),
            format: self.format,
            offset,
            what: what.into().into_boxed_str(),
            stored: stored.into_boxed_str(),
            computed: computed.into_boxed_str(),
        }
    }

    /// A [`Error::Limit`] at `offset`.
    pub fn limit(&self, offset: u64, message: impl Into<String>) -> Error {
        Error::Limit {
            file: self.file.clone(),
            format: self.format,
            offset,
            message: message.into(),
        }
    }

    /// A [`Error::Unsupported`] at `offset`.
    pub fn unsupported(&self, offset: u64, message: impl Into<String>) -> Error {
        Error::Unsupported {
            file: self.file.clone(),
            format: self.format,
            offset,
            message: message.into(),
        }
    }

    /// A [`Error::Io`] for this file.
    pub fn io(&self, source: std::io::Error) -> Error {
        Error::io(self.file.clone(), source)
    }
}

/// Display helper used by `UnknownFormat`: a short hex dump.
pub fn hex_head(bytes: &[u8]) -> String {
    bytes
        .iter()
        .take(16)
        .map(|b| format!("{b:02x}"))
        .collect::<Vec<_>>()
        .join(" ")
}
