//! A bag directory's `metadata.yaml` (`rosbag2_bagfile_information`), parsed
//! leniently: every field is optional, as the versions (4 to 9) differ.

use std::collections::BTreeMap;
use std::path::Path;

use serde_yaml_ng::{Mapping, Value};

/// What `metadata.yaml` says about the bag.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct BagMetadata {
    /// `version`.
    pub version: Option<u64>,
    /// `storage_identifier` (`sqlite3`, `mcap`).
    pub storage_identifier: String,
    /// `relative_file_paths`, in order.
    pub relative_file_paths: Vec<String>,
    /// `duration.nanoseconds`.
    pub duration_ns: Option<u64>,
    /// `starting_time.nanoseconds_since_epoch`.
    pub starting_time_ns: Option<u64>,
    /// `message_count`.
    pub message_count: Option<u64>,
    /// `topics_with_message_count`.
    pub topics: Vec<TopicInfo>,
    /// `compression_format` (`""`, `zstd`).
    pub compression_format: String,
    /// `compression_mode` (`""`, `FILE`, `MESSAGE`).
    pub compression_mode: String,
    /// `files` (version 5 and later): path, start, duration, count.
    pub files: Vec<FileInfo>,
    /// `ros_distro` (newer versions).
    pub ros_distro: Option<String>,
    /// `custom_data` (newer versions), values as text.
    pub custom_data: BTreeMap<String, String>,
}

/// One entry of `topics_with_message_count`.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct TopicInfo {
    /// `topic_metadata.name`.
    pub name: String,
    /// `topic_metadata.type`.
    pub type_name: String,
    /// `topic_metadata.serialization_format`.
    pub serialization_format: String,
    /// `topic_metadata.offered_qos_profiles`, as YAML text.
    pub offered_qos_profiles: String,
    /// `topic_metadata.type_description_hash`.
    pub type_description_hash: String,
    /// `message_count`.
    pub message_count: Option<u64>,
}

/// One entry of `files`.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct FileInfo {
    /// `path`, relative to the bag directory.
    pub path: String,
    /// `starting_time.nanoseconds_since_epoch`.
    pub starting_time_ns: Option<u64>,
    /// `duration.nanoseconds`.
    pub duration_ns: Option<u64>,
    /// `message_count`.
    pub message_count: Option<u64>,
}

impl BagMetadata {
    /// Whether each message's data is a zstd frame (`compression_mode: MESSAGE`).
    pub fn message_compressed(&self) -> bool {
        self.compression_mode.eq_ignore_ascii_case("message")
    }

    /// Parses the text of a `metadata.yaml`.
    pub fn parse(text: &str) -> Result<Self, String> {
        let doc: Value = serde_yaml_ng::from_str(text).map_err(|e| e.to_string())?;
        let info = doc
            .get("rosbag2_bagfile_information")
            .ok_or("no rosbag2_bagfile_information mapping")?;
        let s = |v: Option<&Value>| v.map(as_text).unwrap_or_default();
        let topics = info
            .get("topics_with_message_count")
            .and_then(Value::as_sequence)
            .map(|seq| {
                seq.iter()
                    .map(|t| {
                        let m = t.get("topic_metadata");
                        let f = |k: &str| s(m.and_then(|m| m.get(k)));
                        TopicInfo {
                            name: f("name"),
                            type_name: f("type"),
                            serialization_format: f("serialization_format"),
                            offered_qos_profiles: f("offered_qos_profiles"),
                            type_description_hash: f("type_description_hash"),
                            message_count: t.get("message_count").and_then(Value::as_u64),
                        }
                    })
                    .collect()
            })
            .unwrap_or_default();
        let files = info
            .get("files")
            .and_then(Value::as_sequence)
            .map(|seq| {
                seq.iter()
                    .map(|f| FileInfo {
                        path: s(f.get("path")),
                        starting_time_ns: nested(f, "starting_time", "nanoseconds_since_epoch"),
                        duration_ns: nested(f, "duration", "nanoseconds"),
                        message_count: f.get("message_count").and_then(Value::as_u64),
                    })
                    .collect()
            })
            .unwrap_or_default();
        Ok(Self {
            version: info.get("version").and_then(Value::as_u64),
            storage_identifier: s(info.get("storage_identifier")),
            relative_file_paths: info
                .get("relative_file_paths")
                .and_then(Value::as_sequence)
                .map(|seq| seq.iter().map(as_text).collect())
                .unwrap_or_default(),
            duration_ns: nested(info, "duration", "nanoseconds"),
            starting_time_ns: nested(info, "starting_time", "nanoseconds_since_epoch"),
            message_count: info.get("message_count").and_then(Value::as_u64),
            topics,
            compression_format: s(info.get("compression_format")),
            compression_mode: s(info.get("compression_mode")),
            files,
            ros_distro: info.get("ros_distro").map(as_text),
            custom_data: info
                .get("custom_data")
                .and_then(Value::as_mapping)
                .map(|m| m.iter().map(|(k, v)| (as_text(k), as_text(v))).collect())
                .unwrap_or_default(),
        })
    }

    /// Reads `metadata.yaml` in the directory holding `db_file`, if there is
    /// one: only a regular file of at most
    /// [`crate::limits::DEFAULT_MAX_SIDE_FILE_BYTES`] (anything else is an
    /// error saying why).
    pub(crate) fn beside(db_file: &Path) -> Option<Result<Self, String>> {
        let path = db_file.parent()?.join("metadata.yaml");
        let cap = crate::limits::DEFAULT_MAX_SIDE_FILE_BYTES;
        let text = match crate::limits::read_side_file(&path, cap) {
            Ok(text) => text?,
            Err(e) => return Some(Err(e)),
        };
        Some(Self::parse(&text).map_err(|e| format!("{}: {e}", path.display())))
    }

    /// The bag's facts as `metadata()` rows show them.
    pub fn to_map(&self) -> BTreeMap<String, String> {
        let mut m = BTreeMap::new();
        let mut put = |k: &str, v: Option<String>| {
            if let Some(v) = v {
                m.insert(k.to_string(), v);
            }
        };
        put("version", self.version.map(|v| v.to_string()));
        put("storage_identifier", Some(self.storage_identifier.clone()));
        put(
            "relative_file_paths",
            Some(self.relative_file_paths.join(",")),
        );
        put("duration_ns", self.duration_ns.map(|v| v.to_string()));
        put(
            "starting_time_ns",
            self.starting_time_ns.map(|v| v.to_string()),
        );
        put("message_count", self.message_count.map(|v| v.to_string()));
        put("compression_format", Some(self.compression_format.clone()));
        put("compression_mode", Some(self.compression_mode.clone()));
        put("ros_distro", self.ros_distro.clone());
        for (k, v) in &self.custom_data {
            put(&format!("custom_data.{k}"), Some(v.clone()));
        }
        m
    }
}

impl BagMetadata {
    /// The `rosbag2_bagfile_information` mapping as YAML text (what rosbag2
    /// stores in a database's `metadata` table).
    pub fn info_yaml(&self) -> String {
        serde_yaml_ng::to_string(&self.info_value()).unwrap_or_default()
    }

    /// The whole `metadata.yaml` text.
    pub fn to_yaml(&self) -> String {
        let mut doc = Mapping::new();
        doc.insert("rosbag2_bagfile_information".into(), self.info_value());
        serde_yaml_ng::to_string(&doc).unwrap_or_default()
    }

    /// The fields rosbag2 writes for version 8: `ros_distro` and
    /// `custom_data` (empty mapping) too, each topic's
    /// `type_description_hash`, the `files` list.
    fn info_value(&self) -> Value {
        fn map<const N: usize>(pairs: [(&str, Value); N]) -> Value {
            Value::Mapping(
                pairs
                    .into_iter()
                    .map(|(k, v)| (Value::from(k), v))
                    .collect(),
            )
        }
        let ns = |v: Option<u64>| Value::from(v.unwrap_or(0));
        let topics = self
            .topics
            .iter()
            .map(|t| {
                map([
                    (
                        "topic_metadata",
                        map([
                            ("name", t.name.as_str().into()),
                            ("type", t.type_name.as_str().into()),
                            (
                                "serialization_format",
                                t.serialization_format.as_str().into(),
                            ),
                            (
                                "offered_qos_profiles",
                                t.offered_qos_profiles.as_str().into(),
                            ),
                            (
                                "type_description_hash",
                                t.type_description_hash.as_str().into(),
                            ),
                        ]),
                    ),
                    ("message_count", ns(t.message_count)),
                ])
            })
            .collect();
        let files = self
            .files
            .iter()
            .map(|f| {
                map([
                    ("path", f.path.as_str().into()),
                    (
                        "starting_time",
                        map([("nanoseconds_since_epoch", ns(f.starting_time_ns))]),
                    ),
                    ("duration", map([("nanoseconds", ns(f.duration_ns))])),
                    ("message_count", ns(f.message_count)),
                ])
            })
            .collect();
        map([
            ("version", ns(self.version)),
            (
                "storage_identifier",
                self.storage_identifier.as_str().into(),
            ),
            (
                "relative_file_paths",
                Value::Sequence(
                    self.relative_file_paths
                        .iter()
                        .map(|p| p.as_str().into())
                        .collect(),
                ),
            ),
            ("duration", map([("nanoseconds", ns(self.duration_ns))])),
            (
                "starting_time",
                map([("nanoseconds_since_epoch", ns(self.starting_time_ns))]),
            ),
            ("message_count", ns(self.message_count)),
            ("topics_with_message_count", Value::Sequence(topics)),
            (
                "compression_format",
                self.compression_format.as_str().into(),
            ),
            ("compression_mode", self.compression_mode.as_str().into()),
            ("files", Value::Sequence(files)),
            (
                "custom_data",
                Value::Mapping(
                    self.custom_data
                        .iter()
                        .map(|(k, v)| (k.as_str().into(), v.as_str().into()))
                        .collect(),
                ),
            ),
            (
                "ros_distro",
                self.ros_distro.as_deref().unwrap_or_default().into(),
            ),
        ])
    }
}

/// `v[a][b]` as an unsigned integer.
fn nested(v: &Value, a: &str, b: &str) -> Option<u64> {
    v.get(a)?.get(b)?.as_u64()
}

/// A scalar as text; a structure as YAML text.
fn as_text(v: &Value) -> String {
    match v {
        Value::String(s) => s.clone(),
        Value::Null => String::new(),
        Value::Bool(b) => b.to_string(),
        Value::Number(n) => n.to_string(),
        other => serde_yaml_ng::to_string(other)
            .unwrap_or_default()
            .trim_end()
            .to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_a_version_5_file() {
        let text = "rosbag2_bagfile_information:\n  version: 5\n  storage_identifier: sqlite3\n  duration:\n    nanoseconds: 100\n  starting_time:\n    nanoseconds_since_epoch: 7\n  message_count: 3\n  topics_with_message_count:\n    - topic_metadata:\n        name: /a\n        type: std_msgs/msg/String\n        serialization_format: cdr\n        offered_qos_profiles: \"- depth: 1\"\n      message_count: 3\n  compression_format: zstd\n  compression_mode: MESSAGE\n  relative_file_paths:\n    - a_0.db3\n  files:\n    - path: a_0.db3\n      starting_time:\n        nanoseconds_since_epoch: 7\n      duration:\n        nanoseconds: 100\n      message_count: 3\n";
        let m = BagMetadata::parse(text).unwrap();
        assert_eq!(m.version, Some(5));
        assert_eq!(m.relative_file_paths, vec!["a_0.db3"]);
        assert_eq!(m.topics[0].name, "/a");
        assert_eq!(m.topics[0].offered_qos_profiles, "- depth: 1");
        assert_eq!(m.topics[0].message_count, Some(3));
        assert!(m.message_compressed());
        assert_eq!(m.files[0].message_count, Some(3));
        assert_eq!(m.to_map()["duration_ns"], "100");
        assert!(
            BagMetadata::parse("a: 1")
                .unwrap_err()
                .contains("rosbag2_bagfile_information")
        );
    }
}
