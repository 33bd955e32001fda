//! [`McapWriteOptions`]: how an MCAP file is written (chunk compression and
//! size, whether it has a summary), parsed from `COPY ... OPTIONS (...)`.

use std::collections::HashMap;

use crate::error::{Error, Result};

/// The `COPY ... OPTIONS (...)` keys of MCAP output (without DataFusion's
/// `format.` prefix).
pub const OPTION_KEYS: &[&str] = &["compression", "chunk_size", "summary"];

/// How the MCAP file is written.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct McapWriteOptions {
    /// Chunk compression: `zstd` (default), `lz4` or `none`.
    pub compression: Compression,
    /// Target uncompressed chunk size in bytes (default 1 MiB, the `mcap` crate's).
    pub chunk_size: u64,
    /// Whether to write the summary section and indexes (message indexes,
    /// chunk indexes, statistics, summary offsets). Default `true`.
    pub summary: bool,
}

/// Chunk compression of MCAP output.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Compression {
    /// zstd (the default).
    Zstd,
    /// LZ4 frames.
    Lz4,
    /// No compression.
    None,
}

impl Compression {
    /// Parses `zstd`, `lz4` or `none` (also `uncompressed`), any case.
    pub fn parse(s: &str) -> Result<Self> {
        match s.trim().to_ascii_lowercase().as_str() {
            "zstd" => Ok(Self::Zstd),
            "lz4" => Ok(Self::Lz4),
            "none" | "uncompressed" | "" => Ok(Self::None),
            other => Err(Error::Options(format!(
                "MCAP compression '{other}' is not one of zstd, lz4, none"
            ))),
        }
    }
}

impl Default for McapWriteOptions {
    fn default() -> Self {
        Self {
            compression: Compression::Zstd,
            chunk_size: mcap::WriteOptions::DEFAULT_CHUNK_SIZE,
            summary: true,
        }
    }
}

impl McapWriteOptions {
    /// The options of `COPY ... OPTIONS (...)` / `CREATE EXTERNAL TABLE ...
    /// OPTIONS (...)` (keys with or without the `format.` prefix); unknown keys
    /// are refused with the known ones listed.
    pub fn from_map(options: &HashMap<String, String>) -> Result<Self> {
        let mut out = Self::default();
        for (key, value) in options {
            let bare = key.strip_prefix("format.").unwrap_or(key);
            match bare {
                "compression" => out.compression = Compression::parse(value)?,
                "chunk_size" => out.chunk_size = parse_bytes("MCAP", "chunk_size", value)?,
                "summary" => {
                    out.summary = match value.trim().to_ascii_lowercase().as_str() {
                        "true" | "yes" | "on" | "1" => true,
                        "false" | "no" | "off" | "0" => false,
                        _ => {
                            return Err(Error::Options(format!(
                                "MCAP summary '{value}' is not true or false"
                            )));
                        }
                    }
                }
                _ => {
                    return Err(Error::Options(format!(
                        "unknown option '{key}' for MCAP output (known: {})",
                        OPTION_KEYS.join(", ")
                    )));
                }
            }
        }
        Ok(out)
    }

    /// The `mcap` crate's options for a file of `profile`.
    pub(crate) fn writer_options(&self, profile: &str) -> mcap::WriteOptions {
        let compression = match self.compression {
            Compression::Zstd => Some(mcap::Compression::Zstd),
            Compression::Lz4 => Some(mcap::Compression::Lz4),
            Compression::None => None,
        };
        let mut o = mcap::WriteOptions::new()
            .compression(compression)
            .chunk_size(Some(self.chunk_size.max(1)))
            // zstd on the writing thread itself. The crate's default (one
            // worker per physical core) hands each chunk to a worker, copying it first, but a
            // worker only splits jobs of 8 MiB and more at level 3: a 1 MiB chunk is
            // compressed by one worker while the writer waits. Without the handoff,
            // a 188 MB bag converts in 0.41 s instead of 0.50 s (docs/performance.md).
            .compression_threads(0)
            .profile(profile)
            .library(format!("logsql {}", env!("CARGO_PKG_VERSION")));
        if !self.summary {
            o = o
                .emit_summary_records(false)
                .emit_summary_offsets(false)
                .emit_message_indexes(false);
        }
        o
    }
}

/// The size one option names, in bytes, for messages (`chunk_size`).
pub(crate) fn parse_bytes(format: &str, key: &str, value: &str) -> Result<u64> {
    value
        .trim()
        .parse()
        .map_err(|_| Error::Options(format!("{format} {key} '{value}' is not a number of bytes")))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn map(kv: &[(&str, &str)]) -> HashMap<String, String> {
        kv.iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    }

    #[test]
    fn options_parse_with_or_without_the_format_prefix() {
        assert_eq!(
            McapWriteOptions::from_map(&HashMap::new()).unwrap(),
            McapWriteOptions::default()
        );
        let o = McapWriteOptions::from_map(&map(&[
            ("format.compression", "LZ4"),
            ("chunk_size", "65536"),
            ("format.summary", "false"),
        ]))
        .unwrap();
        assert_eq!(
            o,
            McapWriteOptions {
                compression: Compression::Lz4,
                chunk_size: 65536,
                summary: false
            }
        );
        let err = |kv: &[(&str, &str)]| {
            McapWriteOptions::from_map(&map(kv))
                .unwrap_err()
                .to_string()
        };
        assert!(
            err(&[("format.chunk_size", "1MB")])
                .contains("chunk_size '1MB' is not a number of bytes")
        );
        assert!(
            err(&[("format.summary", "maybe")]).contains("summary 'maybe' is not true or false")
        );
        assert!(err(&[("format.codec", "zstd")]).contains(
            "unknown option 'format.codec' for MCAP output (known: compression, chunk_size, summary)"
        ));
    }
}
