//! Fuzz target: the input is the text of a rosbag2 `metadata.yaml`, parsed as
//! a bag directory's side file is (`BagMetadata::parse`, then the rows
//! `metadata()` shows). YAML anchors and aliases, deep nesting and odd types
//! must end in a value or an error, never a panic, a hang or a blow-up.

#![no_main]

use libfuzzer_sys::fuzz_target;
use logsql_readers::formats::ros2::bag_meta::BagMetadata;

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    if let Ok(meta) = BagMetadata::parse(text) {
        let _ = meta.to_map();
        let _ = meta.message_compressed();
    }
});
