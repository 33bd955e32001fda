//! [`SourceInfo`]: what the MCAP writer takes from one source file: its
//! channels and schemas mapped to MCAP's, its metadata and attachments.

use std::collections::HashMap;

use logsql_readers::formats::mcap::mapping::{McapChannel, McapSchema, mcap_channel};
use logsql_readers::model::MetadataInfo;

use crate::source::SourceFile;

/// The MCAP side of one source file.
#[derive(Debug, Default)]
pub struct SourceInfo {
    /// The MCAP profile it suggests (`ros1` for bags, an MCAP file's own).
    pub profile: String,
    /// Its channels by (topic, message type, message encoding); the lowest id wins.
    pub channels: HashMap<(String, Option<String>, String), McapChannel>,
    /// Schemas by (message type, message encoding), for rows whose topic a query renamed.
    pub schemas: HashMap<(String, String), McapSchema>,
    /// Its metadata records.
    pub metadata: Vec<MetadataInfo>,
    /// Its attachments.
    pub attachments: Vec<mcap::Attachment<'static>>,
}

impl SourceInfo {
    /// The MCAP side of `file`.
    pub fn of(file: &SourceFile) -> Self {
        let mut info = SourceInfo {
            profile: file.profile.clone(),
            metadata: file.metadata.clone(),
            ..Default::default()
        };
        for ch in &file.channels {
            let key = (
                ch.topic.clone(),
                ch.message_type.clone(),
                ch.message_encoding.clone(),
            );
            let mapped = mcap_channel(&file.format, ch);
            if let (Some(ty), Some(s)) = (&ch.message_type, &mapped.schema) {
                info.schemas
                    .entry((ty.clone(), ch.message_encoding.clone()))
                    .or_insert_with(|| s.clone());
            }
            info.channels.entry(key).or_insert(mapped);
        }
        info.attachments = file
            .attachments
            .iter()
            .map(|a| mcap::Attachment {
                log_time: a.log_time,
                create_time: a.create_time,
                name: a.name.clone(),
                media_type: a.media_type.clone(),
                data: a.data.clone().into(),
            })
            .collect();
        info
    }
}
