//! Session options under the `logsql.` prefix (`SET logsql.on_error = 'warn'`).
//!
//! The options are typed: a value that does not parse is refused by `SET`
//! itself, and `SHOW logsql.on_error` / `information_schema.df_settings` list
//! them under their full `logsql.` names.

use std::fmt;
use std::str::FromStr;

use datafusion::common::config::{
    ConfigEntry, ConfigExtension, ConfigField, ExtensionOptions, Visit,
};
use datafusion::common::config_namespace;
use datafusion::error::{DataFusionError, Result};

config_namespace! {
    /// logsql's options, settable with SQL `SET logsql.<name> = <value>`.
    pub struct LogsqlOptions {
        /// What a scan does with a damaged file. `auto` (the default): an unfinished
        /// recording (a file that simply ends early: no footer or index, the last record
        /// cut) gives every complete message and one warning; corruption (a checksum
        /// mismatch, an invalid record with data after it) fails the query after every
        /// readable row was delivered. `error`: both fail the query (after every readable
        /// row). `warn`: both only log a warning.
        pub on_error: OnError, default = OnError::Auto
        /// Upper bound on the payload bytes of one record batch (the row bound is
        /// DataFusion's `datafusion.execution.batch_size`).
        pub batch_bytes: usize, default = 2 * 1024 * 1024
        /// Whole-file checksums that cannot be checked chunk by chunk (BDDF's SHA1
        /// over the file). `auto` (the default): verified by a scan that reads the
        /// whole file anyway, in the same pass; a scan of part of a file reads only
        /// the bytes its chunks need. `always`: also verified before a partial
        /// read, by reading the whole file once per file and process. `never`.
        /// A mismatch is reported like other damage (see `on_error`). Per-chunk
        /// checksums (MCAP chunk CRCs) are verified on every chunk read.
        pub verify_checksums: VerifyChecksums, default = VerifyChecksums::Auto
        /// Comma-separated paths of protobuf `FileDescriptorSet` files (`protoc
        /// --descriptor_set_out`, `buf build -o`) giving the schemas of protobuf
        /// payloads that a file names only by type (BDDF). Matching channels get
        /// `schema_encoding = 'protobuf'` and a schema in `channels()`.
        pub descriptor_set: String, default = String::new()
        /// Comma-separated directories of ROS 2 `.msg` files laid out as
        /// `<dir>/<pkg>/msg/<Type>.msg` (a ROS install's `share` directory, e.g.
        /// `/opt/ros/humble/share`), giving `read_topic` the definitions of `cdr`
        /// topics whose bag stores none (rosbag2 `.db3` bags before Iron). Types
        /// not found there come from the common interfaces logsql carries.
        pub msg_path: String, default = String::new()
        /// What `read_topic` does with a message that does not decode with its
        /// schema: `error` fails the query with an error naming the file, topic,
        /// time and schema; `null` returns a row whose message columns are null,
        /// with the error text in `_error` and the payload in `_raw` (both columns
        /// exist only under `null`).
        pub decode_errors: DecodeErrors, default = DecodeErrors::Error
        /// Whether scans of files whose index proves them in `log_time` order
        /// declare that order to the planner (so `ORDER BY log_time` needs no
        /// sort; see docs/pushdown.md). `false`: scans never declare
        /// an order and plans sort as before. A distributed coordinator sets it
        /// to `false`: datafusion-distributed splits a scan's file groups
        /// into tasks itself, which a declared order does not allow.
        pub time_order: bool, default = true
        /// Most bytes one chunk may decompress to (a zstd, lz4 or bz2 chunk of
        /// an MCAP file or ROS1 bag), and the largest temporary file a ROS 2
        /// `.db3.zstd` is decompressed to. Decompression stops at the cap: the
        /// chunk fails with an error naming the file, its offset and this
        /// limit, handled like damage (see `on_error`); other chunks' rows are
        /// still delivered.
        pub max_chunk_bytes: u64, default = logsql_readers::limits::DEFAULT_MAX_CHUNK_BYTES
        /// Most bytes one message payload may hold (after per-message
        /// decompression, e.g. a ROS 2 bag's `compression_mode: message`);
        /// never more than 2^31 - 1, the most an Arrow view addresses. A longer
        /// payload fails its chunk like damage (see `on_error`).
        pub max_message_bytes: u64, default = logsql_readers::limits::DEFAULT_MAX_MESSAGE_BYTES
        /// Most bytes of decompressed chunks the session's scans hand each other.
        /// Several scans of one file in one query (an ASOF JOIN of its topics, a
        /// LeRobot export) read the same chunks, since recorders put every topic
        /// in each chunk: a chunk one scan decompressed is kept for the others
        /// until the last has read it. Past this many bytes a scan decompresses
        /// the chunk itself. A file scanned once keeps nothing. 0: no sharing.
        pub shared_chunk_bytes: usize, default = 256 * 1024 * 1024
        /// Most bytes one value a function or decoder makes may hold: what one call of
        /// `repeat`, `lpad`, `replace`, `array_repeat`, `range`, ... returns for a batch,
        /// an image `image_pixels` decodes, a cloud `read_points` unpacks. A value past
        /// it fails the query with an error naming the function and the sizes, before
        /// the memory is asked for (PostgreSQL caps a value at 1 GB). `logsql serve`
        /// sets it to its `--memory-limit` when that is smaller.
        pub max_value_bytes: u64, default = 1 << 30
        /// A catalog `logsql index` wrote (a directory or object-store prefix): the
        /// names `recordings` and `topics` are then its tables, as
        /// `recordings('CAT')` and `catalog_topics('CAT')` are. Empty (the
        /// default): no catalog.
        pub catalog: String, default = String::new()
        /// A directory of events (local or an object-store prefix): the name
        /// `events` is then its table, as `events('DIR')` is. Empty (the default):
        /// the catalog's `events/` directory, with `logsql.catalog` set.
        pub events: String, default = String::new()
    }
}

impl ConfigExtension for LogsqlOptions {
    const PREFIX: &'static str = "logsql";
}

impl ExtensionOptions for LogsqlOptions {
    fn as_any(&self) -> &dyn std::any::Any {
        self
    }

    fn as_any_mut(&mut self) -> &mut dyn std::any::Any {
        self
    }

    fn cloned(&self) -> Box<dyn ExtensionOptions> {
        Box::new(self.clone())
    }

    fn set(&mut self, key: &str, value: &str) -> Result<()> {
        ConfigField::set(self, key, value)
    }

    /// Entries under their full names (`logsql.on_error`), so that `SHOW` finds them.
    fn entries(&self) -> Vec<ConfigEntry> {
        struct Entries(Vec<ConfigEntry>);
        impl Visit for Entries {
            fn some<V: fmt::Display>(&mut self, key: &str, value: V, description: &'static str) {
                self.0.push(ConfigEntry {
                    key: key.to_string(),
                    value: Some(value.to_string()),
                    description,
                });
            }
            fn none(&mut self, key: &str, description: &'static str) {
                self.0.push(ConfigEntry {
                    key: key.to_string(),
                    value: None,
                    description,
                });
            }
        }
        let mut v = Entries(Vec::new());
        ConfigField::visit(self, &mut v, Self::PREFIX, "");
        v.0
    }
}

/// Implements [`ConfigField`] for an option type with `FromStr` and `Display`:
/// `SET` parses (and so validates) the value, `SHOW` prints it.
macro_rules! typed_option {
    ($t:ty) => {
        impl ConfigField for $t {
            fn visit<V: Visit>(&self, v: &mut V, key: &str, description: &'static str) {
                v.some(key, self, description)
            }

            fn set(&mut self, key: &str, value: &str) -> Result<()> {
                if !key.is_empty() {
                    return Err(DataFusionError::Configuration(format!(
                        "option {key:?} has no nested fields"
                    )));
                }
                *self = value.parse()?;
                Ok(())
            }

            fn reset(&mut self, _key: &str) -> Result<()> {
                *self = <$t>::default();
                Ok(())
            }
        }
    };
}

/// What to do with a damaged file (`logsql.on_error`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum OnError {
    /// An unfinished recording warns; corruption fails the query (after every
    /// readable row).
    #[default]
    Auto,
    /// Any damage fails the query, after every readable row was delivered.
    Error,
    /// Any damage is logged as a warning; the query succeeds.
    Warn,
}

impl OnError {
    /// The value as written in `SET` (`auto`, `error`, `warn`).
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Auto => "auto",
            Self::Error => "error",
            Self::Warn => "warn",
        }
    }

    /// Whether `e` fails the query under this policy (else it is a warning).
    pub fn fails(self, e: &logsql_readers::Error) -> bool {
        match self {
            Self::Auto => !e.is_unfinished_recording(),
            Self::Error => true,
            Self::Warn => false,
        }
    }
}

impl fmt::Display for OnError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl FromStr for OnError {
    type Err = DataFusionError;

    fn from_str(s: &str) -> Result<Self> {
        match s.trim().to_ascii_lowercase().as_str() {
            "auto" | "default" => Ok(Self::Auto),
            "error" | "fail" | "strict" => Ok(Self::Error),
            "warn" | "skip" => Ok(Self::Warn),
            other => Err(DataFusionError::Configuration(format!(
                "logsql.on_error must be 'auto', 'error' or 'warn', not '{other}'"
            ))),
        }
    }
}

typed_option!(OnError);

/// When whole-file checksums are verified (`logsql.verify_checksums`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub(crate) enum VerifyChecksums {
    /// When a scan reads the whole file anyway, in the same pass.
    #[default]
    Auto,
    /// Always, reading the whole file when the query would not.
    Always,
    /// Never.
    Never,
}

impl fmt::Display for VerifyChecksums {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Self::Auto => "auto",
            Self::Always => "always",
            Self::Never => "never",
        })
    }
}

impl FromStr for VerifyChecksums {
    type Err = DataFusionError;

    fn from_str(s: &str) -> Result<Self> {
        match s.trim().to_ascii_lowercase().as_str() {
            "auto" => Ok(Self::Auto),
            "always" | "true" | "on" => Ok(Self::Always),
            "never" | "false" | "off" => Ok(Self::Never),
            other => Err(DataFusionError::Configuration(format!(
                "logsql.verify_checksums must be 'auto', 'always' or 'never', not '{other}'"
            ))),
        }
    }
}

typed_option!(VerifyChecksums);

/// What `read_topic` does with a payload that does not decode (`logsql.decode_errors`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub(crate) enum DecodeErrors {
    /// Fail the query.
    #[default]
    Error,
    /// A row of nulls with the error in `_error` and the payload in `_raw`.
    Null,
}

impl fmt::Display for DecodeErrors {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Self::Error => "error",
            Self::Null => "null",
        })
    }
}

impl FromStr for DecodeErrors {
    type Err = DataFusionError;

    fn from_str(s: &str) -> Result<Self> {
        match s.trim().to_ascii_lowercase().as_str() {
            "error" | "fail" => Ok(Self::Error),
            "null" => Ok(Self::Null),
            other => Err(DataFusionError::Configuration(format!(
                "logsql.decode_errors must be 'error' or 'null', not '{other}'"
            ))),
        }
    }
}

typed_option!(DecodeErrors);

impl LogsqlOptions {
    /// The session's logsql options (the defaults when none are registered).
    pub fn from_config(config: &datafusion::common::config::ConfigOptions) -> Self {
        config.extensions.get::<Self>().cloned().unwrap_or_default()
    }

    /// Lowers `logsql.max_value_bytes` in `config` to at most `limit` (a
    /// memory limit: one value may not hold more than the query may).
    pub fn cap_values_at(config: &mut datafusion::common::config::ConfigOptions, limit: u64) {
        if config.extensions.get::<Self>().is_none() {
            config.extensions.insert(Self::default());
        }
        if let Some(logsql) = config.extensions.get_mut::<Self>() {
            logsql.max_value_bytes = logsql.max_value_bytes.min(limit);
        }
    }

    /// The pool of the `descriptor_set` files, or `None` when none are set.
    pub fn descriptor_pool(&self) -> Result<Option<std::sync::Arc<prost_reflect::DescriptorPool>>> {
        if self.descriptor_set.trim().is_empty() {
            return Ok(None);
        }
        logsql_decode::descriptors::load(&self.descriptor_set)
            .map(Some)
            .map_err(super::error::df_err)
    }

    /// The size caps readers apply (`max_chunk_bytes`, `max_message_bytes`).
    pub fn limits(&self) -> logsql_readers::limits::Limits {
        logsql_readers::limits::Limits {
            max_chunk_bytes: self.max_chunk_bytes,
            max_message_bytes: self.max_message_bytes,
            ..Default::default()
        }
    }

    /// Whether `read_topic` turns undecodable messages into null rows.
    pub(crate) fn null_on_decode_error(&self) -> bool {
        self.decode_errors == DecodeErrors::Null
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn values_parse_and_print() {
        let mut o = LogsqlOptions::default();
        assert_eq!(o.on_error, OnError::Auto);
        ExtensionOptions::set(&mut o, "on_error", "WARN").unwrap();
        assert_eq!(o.on_error, OnError::Warn);
        let e = ExtensionOptions::set(&mut o, "on_error", "bogus").unwrap_err();
        assert!(
            e.to_string()
                .contains("must be 'auto', 'error' or 'warn', not 'bogus'"),
            "{e}"
        );
        assert_eq!(o.on_error, OnError::Warn, "a refused value changes nothing");
        ExtensionOptions::set(&mut o, "decode_errors", "null").unwrap();
        assert!(o.null_on_decode_error());
        let keys: Vec<(String, Option<String>)> =
            o.entries().into_iter().map(|e| (e.key, e.value)).collect();
        assert!(
            keys.contains(&("logsql.on_error".into(), Some("warn".into()))),
            "{keys:?}"
        );
        assert!(
            keys.contains(&("logsql.decode_errors".into(), Some("null".into()))),
            "{keys:?}"
        );
    }
}
