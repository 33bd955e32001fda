//! ROS1 messages: `ros1msg` schemas (message definitions) and `ros1` payloads.
//!
//! This module owns everything between a ROS1 message definition and the
//! Arrow row of one message: parsing the genmsg full text (the main type's
//! text, then for each dependency a line of `=`, `MSG: pkg/Type` and its text),
//! resolving type names, compiling the definition once into a plan, and
//! decoding payloads with it.
//!
//! - Definitions (`parse.rs`): comments, blank lines and constants
//!   (`TYPE NAME=VALUE`; a string constant keeps the rest of its line, `#`
//!   included) are not columns. `Header` is `std_msgs/Header`; a bare type
//!   name means the package of the type that uses it, then `std_msgs`, then
//!   the only dependency of that short name; `pkg/msg/Type` is `pkg/Type`.
//!   Missing dependencies, recursive types, nesting deeper than
//!   [`MAX_DEPTH`], more than `MAX_COLUMNS` columns and fixed arrays over
//!   [`MAX_FIXED_LEN`] elements are errors.
//! - Types (`plan.rs`): bool → Boolean; int8 and `byte` → Int8; uint8 and
//!   `char` → UInt8; the other integers and floats as themselves; string →
//!   Utf8 (invalid UTF-8 replaced by U+FFFD); `time` →
//!   [`timestamp_type`](super::timestamp_type); `duration` →
//!   [`duration_type`](super::duration_type) (sec -2, nsec 500000000 is
//!   -1.5 s); `uint8`/`char` arrays, fixed or not → Binary; other `T[N]` →
//!   FixedSizeList; `T[]` → List; nested messages → Struct. All nullable.
//! - Payloads (`wire.rs`): little-endian and packed; a bounds pass first (so a
//!   short payload never leaves a partial row and no length prefix is used
//!   before it is compared with the bytes left), then an append pass with bulk
//!   paths for arrays of builtins. Errors name the field path
//!   (`pose.covariance[3]: ...`). Bytes after the message are ignored, as ROS
//!   tools do.

mod defs;
mod md5sum;
mod parse;
mod plan;
mod wire;

use std::sync::Arc;

use arrow_schema::DataType;

pub use md5sum::md5sum;
pub use parse::MAX_FIXED_LEN;
pub use plan::MAX_DEPTH;

use super::{ColumnBuilder, DecodeError, MessageDecoder};
use logsql_readers::model::Channel;

/// The decoder for `channel` (message encoding `ros1`, schema encoding
/// `ros1msg`), compiled from its type name and definition text.
///
/// The definition is read as UTF-8 with invalid bytes replaced (they can only
/// matter in comments). An empty definition is a message with no fields.
pub fn decoder(channel: &Channel) -> Result<Arc<dyn MessageDecoder>, DecodeError> {
    let type_name = channel.message_type.as_deref().ok_or_else(|| {
        DecodeError::new(format!(
            "topic {:?}: a ros1msg schema needs a message type name",
            channel.topic
        ))
    })?;
    let text = String::from_utf8_lossy(channel.schema.as_deref().unwrap_or(&[]));
    Ok(Arc::new(compile(type_name, &text)?))
}

/// Compiles the decoder of `type_name` (`sensor_msgs/Imu`) from its genmsg
/// full definition text.
pub fn compile(type_name: &str, definition: &str) -> Result<Ros1Decoder, DecodeError> {
    let plan = plan::compile(type_name, definition)?;
    let data_type = plan
        .structs
        .get(plan.root)
        .map(|s| s.data_type.clone())
        .ok_or_else(|| DecodeError::new(format!("{type_name}: empty plan")))?;
    Ok(Ros1Decoder {
        type_name: type_name.to_string(),
        plan,
        data_type,
    })
}

/// A compiled ROS1 message decoder (see the [module docs](self)).
#[derive(Debug)]
pub struct Ros1Decoder {
    type_name: String,
    plan: plan::Plan,
    data_type: DataType,
}

impl Ros1Decoder {
    /// The message type name it was compiled for.
    pub fn type_name(&self) -> &str {
        &self.type_name
    }
}

impl MessageDecoder for Ros1Decoder {
    fn data_type(&self) -> &DataType {
        &self.data_type
    }

    fn decode(&self, payload: &[u8], out: &mut ColumnBuilder) -> Result<(), DecodeError> {
        wire::check(&self.plan, payload).map_err(wire::Fail::into_error)?;
        wire::fill(&self.plan, payload, out).map_err(wire::Fail::into_error)
    }

    fn describe(&self) -> String {
        format!("ros1msg {}", self.type_name)
    }
}
