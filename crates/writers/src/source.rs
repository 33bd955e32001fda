//! [`SourceFile`]: what a writer may take from a file the query read (its
//! channels with their schemas and connection headers, its metadata and
//! attachments), as plain data. The engine reads it from the file's summary;
//! each writer maps it to its own format (an MCAP channel, a ROS1 bag
//! connection, a ROS 2 topic).

use logsql_readers::model::{Channel, MetadataInfo};

/// What could be read of one source file.
#[derive(Debug, Clone, Default)]
pub struct SourceFile {
    /// The format it was read as (a reader's name: `mcap`, `bag`, `ros2`, ...).
    pub format: String,
    /// The MCAP profile it states or suggests (`ros1` for a bag).
    pub profile: String,
    /// Its channels, in id order, with schemas and descriptors attached.
    pub channels: Vec<Channel>,
    /// Its metadata records.
    pub metadata: Vec<MetadataInfo>,
    /// Its attachments, read whole.
    pub attachments: Vec<Attachment>,
}

/// An attachment of a source file.
#[derive(Debug, Clone, Default)]
pub struct Attachment {
    /// Its name.
    pub name: String,
    /// Its media type.
    pub media_type: String,
    /// When it was logged (ns).
    pub log_time: u64,
    /// When it was created (ns).
    pub create_time: u64,
    /// Its bytes.
    pub data: Vec<u8>,
}
