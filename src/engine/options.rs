//! Session options under the `logsql.` prefix (`SET logsql.on_error = 'warn'`).

use datafusion::common::config::ConfigExtension;
use datafusion::common::extensions_options;

extensions_options! {
    /// logsql's options, settable with SQL `SET logsql.<name> = <value>`.
    pub struct LogsqlOptions {
        /// What a scan does when a file is damaged (truncated, corrupt, bad checksum):
        /// `error` returns every readable message and then fails the query with an
        /// error naming the file, the byte offset and the cause; `warn` returns every
        /// readable message, logs the error as a warning and lets the query succeed.
        pub on_error: String, default = "error".to_string()
        /// Upper bound on the payload bytes of one record batch (the row bound is
        /// DataFusion's `datafusion.execution.batch_size`).
        pub batch_bytes: usize, default = 2 * 1024 * 1024
        /// Verify whole-file checksums that cannot be checked chunk by chunk (BDDF's
        /// SHA1 over the file): once per file and process, by reading the whole file.
        /// A mismatch is reported like other damage (see `on_error`: `warn` reads anyway).
        pub verify_checksums: bool, default = true
        /// Comma-separated paths of protobuf `FileDescriptorSet` files (`protoc
        /// --descriptor_set_out`, `buf build -o`) giving the schemas of protobuf
        /// payloads that a file names only by type (BDDF). Matching channels get
        /// `schema_encoding = 'protobuf'` and a schema in `channels()`.
        pub descriptor_set: String, default = String::new()
        /// What `read_topic` does with a message that does not decode with its
        /// schema: `error` fails the query with an error naming the file, topic,
        /// time and schema; `null` returns a row whose message columns are null,
        /// with the error text in `_error` and the payload in `_raw` (both columns
        /// exist only under `null`).
        pub decode_errors: String, default = "error".to_string()
    }
}

impl ConfigExtension for LogsqlOptions {
    const PREFIX: &'static str = "logsql";
}

/// What to do with a damaged file.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum OnError {
    /// Return what is readable, then fail the query.
    #[default]
    Error,
    /// Return what is readable and log a warning.
    Warn,
}

impl LogsqlOptions {
    /// The session's logsql options (the defaults when none are registered).
    pub fn from_config(config: &datafusion::common::config::ConfigOptions) -> Self {
        config.extensions.get::<Self>().cloned().unwrap_or_default()
    }

    /// The pool of the `descriptor_set` files, or `None` when none are set.
    pub fn descriptor_pool(
        &self,
    ) -> datafusion::error::Result<Option<std::sync::Arc<prost_reflect::DescriptorPool>>> {
        if self.descriptor_set.trim().is_empty() {
            return Ok(None);
        }
        crate::descriptors::load(&self.descriptor_set)
            .map(Some)
            .map_err(super::scan::df_err)
    }

    /// Whether `read_topic` turns undecodable messages into null rows.
    pub fn null_on_decode_error(&self) -> datafusion::error::Result<bool> {
        match self.decode_errors.to_ascii_lowercase().as_str() {
            "error" | "fail" => Ok(false),
            "null" => Ok(true),
            other => Err(datafusion::error::DataFusionError::Configuration(format!(
                "logsql.decode_errors must be 'error' or 'null', not '{other}'"
            ))),
        }
    }

    /// The parsed `on_error` policy.
    pub fn on_error(&self) -> datafusion::error::Result<OnError> {
        match self.on_error.to_ascii_lowercase().as_str() {
            "error" | "fail" => Ok(OnError::Error),
            "warn" | "skip" => Ok(OnError::Warn),
            other => Err(datafusion::error::DataFusionError::Configuration(format!(
                "logsql.on_error must be 'error' or 'warn', not '{other}'"
            ))),
        }
    }
}
