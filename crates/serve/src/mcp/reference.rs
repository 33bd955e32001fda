//! The SQL reference an agent reads as MCP resources, so it needs no other
//! documentation: the user guide's pages on the `messages` table, the table
//! functions, decoded messages, camera images, ASOF JOIN and moments
//! (`intervals`), as written in
//! `docs/` (compiled in, so they match the server that serves them).

use rmcp::model::{ListResourcesResult, ReadResourceResult, Resource, ResourceContents};

/// Each page: its URI, name, what it covers, and its text.
const PAGES: [(&str, &str, &str, &str); 8] = [
    (
        "logsql://docs/messages-table",
        "The messages table",
        "FROM 'file.mcap': the columns every format gives, naming files, directories and globs",
        include_str!("../../../../docs/messages-table.md"),
    ),
    (
        "logsql://docs/table-functions",
        "Table functions",
        "topics(), chunks(), channels(), metadata(), attachments() and the typed tables",
        include_str!("../../../../docs/table-functions.md"),
    ),
    (
        "logsql://docs/decoded-messages",
        "Decoded messages",
        "read_topic(path, topic): payload fields as typed columns",
        include_str!("../../../../docs/decoded-messages.md"),
    ),
    (
        "logsql://docs/images",
        "Camera images",
        "read_images, image functions, thumbnails",
        include_str!("../../../../docs/images.md"),
    ),
    (
        "logsql://docs/asof",
        "ASOF JOIN",
        "aligning topics in time, resampling on a time grid",
        include_str!("../../../../docs/asof.md"),
    ),
    (
        "logsql://docs/moments",
        "Moments",
        "intervals(path, topic, condition): the stretches where a condition over a topic holds",
        include_str!("../../../../docs/moments.md"),
    ),
    (
        "logsql://docs/transforms",
        "Coordinate frames",
        "transforms(path), tf_lookup(file, target, source, time): frames and poses as tf2 resolves them",
        include_str!("../../../../docs/transforms.md"),
    ),
    (
        "logsql://docs/check",
        "A data-quality gate",
        "check_recordings(path, expectations): recordings against expected topics, rates, gaps, stamps",
        include_str!("../../../../docs/check.md"),
    ),
];

/// The pages, listed.
pub(crate) fn list() -> ListResourcesResult {
    ListResourcesResult::with_all_items(
        PAGES
            .iter()
            .map(|(uri, name, about, text)| {
                let mut r = Resource::new(*uri, *name)
                    .with_description(*about)
                    .with_mime_type("text/markdown");
                r.size = Some(text.len() as u64);
                r
            })
            .collect(),
    )
}

/// The page at `uri`, if there is one.
pub(crate) fn read(uri: &str) -> Option<ReadResourceResult> {
    let (_, _, _, text) = PAGES.iter().find(|(u, ..)| *u == uri)?;
    let contents = ResourceContents::TextResourceContents {
        uri: uri.to_string(),
        mime_type: Some("text/markdown".to_string()),
        text: text.to_string(),
        meta: None,
    };
    Some(ReadResourceResult::new(vec![contents]))
}
