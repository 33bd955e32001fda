//! ROS 2 message definitions by type name, for `read_topic` on files that
//! do not store them: schema data and its lookup, neither a format reader nor
//! a decoder (the sibling of `logsql_decode::descriptors`, which supplies
//! protobuf schemas from the user's descriptor sets).
//!
//! A bag with a `message_definitions` table (rosbag2 on Iron and later)
//! carries the concatenated `ros2msg` text of each type; older bags (Humble)
//! do not. For a `cdr` channel without a schema, [`with_definition`] builds
//! the same concatenated text (the type's `.msg`, then per dependency a line
//! of `=`, `MSG: pkg/Type` and its text) from the directories of
//! `logsql.msg_path` (a ROS install's `share` directory: `<dir>/<pkg>/msg/<Type>.msg`)
//! and, failing those, the common interfaces logsql carries (`PACKAGES`,
//! the `.msg` files under this module's directory, see its `SOURCE.md`).
//! `read_topic` applies it to every channel of the topic when it is planned,
//! so the session's `logsql.msg_path` decides; a type found nowhere leaves
//! the reason in the channel's metadata (`MISSING_KEY`) for the format's
//! schema description to report.

use std::collections::HashSet;
use std::path::Path;
use std::sync::Arc;

use crate::model::Channel;

mod bundled;

/// The packages whose Humble definitions logsql carries.
pub(crate) const PACKAGES: &[&str] = &[
    "builtin_interfaces",
    "diagnostic_msgs",
    "geometry_msgs",
    "nav_msgs",
    "sensor_msgs",
    "std_msgs",
    "tf2_msgs",
];

/// Channel metadata key naming where a definition came from.
pub(crate) const SOURCE_KEY: &str = "schema_source";

/// Channel metadata key holding why no definition was found.
pub(crate) const MISSING_KEY: &str = "schema_error";

/// The field types that are not messages.
const PRIMITIVES: &[&str] = &[
    "bool", "byte", "char", "float32", "float64", "int8", "uint8", "int16", "uint16", "int32",
    "uint32", "int64", "uint64", "string", "wstring",
];

/// `channel` with a `ros2msg` definition from `msg_path` (comma-separated
/// directories) or the bundled interfaces, when it is a `cdr` channel without
/// one. When the type (or a type it uses) is found nowhere, the channel is
/// returned unchanged but for a note the decoder reports.
///
/// A stored `ros2msg` definition that is empty is a message without fields
/// (`std_msgs/msg/Empty`) and is kept, unless `msg_path` or the bundled
/// interfaces define the type with fields (a writer that found no definition
/// may have stored an empty one).
pub fn with_definition(channel: Channel, msg_path: &str) -> Channel {
    let stored_empty = channel.schema.as_deref().is_some_and(<[u8]>::is_empty)
        && channel.schema_encoding.as_deref() == Some("ros2msg");
    let no_schema = channel.schema.as_deref().is_none_or(<[u8]>::is_empty);
    let Some(type_name) = channel.message_type.clone() else {
        return channel;
    };
    if channel.message_encoding != "cdr" || !no_schema {
        return channel;
    }
    let found = definition(&type_name, msg_path);
    if stored_empty
        && found
            .as_ref()
            .map_or(true, |(text, _)| text.trim().is_empty())
    {
        return channel;
    }
    let mut ch = channel;
    match found {
        Ok((text, source)) => {
            ch.schema = Some(Arc::from(text.into_bytes()));
            ch.schema_encoding = Some("ros2msg".into());
            ch.metadata.insert(SOURCE_KEY.into(), source);
        }
        Err(e) => {
            ch.metadata.insert(MISSING_KEY.into(), e);
        }
    }
    ch
}

/// `pkg/msg/Type`, `pkg/Type` → (`pkg`, `Type`).
fn split_name(name: &str) -> Option<(&str, &str)> {
    let mut parts = name.split('/');
    let pkg = parts.next().filter(|p| !p.is_empty())?;
    let last = parts.next_back().filter(|t| !t.is_empty())?;
    Some((pkg, last))
}

/// The `.msg` text of `pkg/Type` and where it came from.
fn lookup(pkg: &str, ty: &str, msg_path: &str) -> Option<(String, String)> {
    for dir in msg_path.split(',').map(str::trim).filter(|d| !d.is_empty()) {
        let dir = Path::new(dir);
        for candidate in [
            dir.join(pkg).join("msg").join(format!("{ty}.msg")),
            dir.join("share")
                .join(pkg)
                .join("msg")
                .join(format!("{ty}.msg")),
        ] {
            let cap = crate::limits::DEFAULT_MAX_SIDE_FILE_BYTES;
            if let Ok(Some(text)) = crate::limits::read_side_file(&candidate, cap) {
                return Some((text, format!("logsql.msg_path ({})", candidate.display())));
            }
        }
    }
    bundled::BUNDLED
        .iter()
        .find(|(p, t, _)| *p == pkg && *t == ty)
        .map(|(_, _, text)| (text.to_string(), "bundled".to_string()))
}

/// The message types a `.msg` text's fields use, as (`pkg`, `Type`); bare
/// names are in `pkg`.
fn dependencies(text: &str, pkg: &str) -> Vec<(String, String)> {
    let mut out = Vec::new();
    for line in text.lines() {
        let line = line.split('#').next().unwrap_or("").trim();
        let Some(ty) = line.split_whitespace().next() else {
            continue;
        };
        let ty = ty.split('[').next().unwrap_or(ty);
        let ty = ty.split("<=").next().unwrap_or(ty);
        if PRIMITIVES.contains(&ty) {
            continue;
        }
        match split_name(ty) {
            Some((p, t)) if ty.contains('/') => out.push((p.to_string(), t.to_string())),
            _ if ty == "Header" && pkg != "std_msgs" => {
                out.push(("std_msgs".into(), "Header".into()))
            }
            _ => out.push((pkg.to_string(), ty.to_string())),
        }
    }
    out
}

/// The concatenated definition of `type_name` and a description of its
/// sources, or an error naming the first type found nowhere.
pub fn definition(type_name: &str, msg_path: &str) -> Result<(String, String), String> {
    let (pkg, ty) = split_name(type_name)
        .ok_or_else(|| format!("{type_name:?} is not a ROS 2 type name (pkg/msg/Type)"))?;
    let missing = |name: &str| {
        format!(
            "no message definition for {name}{}: the bag stores none (rosbag2 before Iron), {} \
             and logsql's bundled interfaces ({}) lack it; SET logsql.msg_path (CLI --msg-path) \
             to the share directory of a ROS install (e.g. /opt/ros/humble/share)",
            if name == type_name {
                String::new()
            } else {
                format!(" (used by {type_name})")
            },
            if msg_path.trim().is_empty() {
                "logsql.msg_path is not set".to_string()
            } else {
                format!("logsql.msg_path ({msg_path})")
            },
            PACKAGES.join(", ")
        )
    };
    let (main, source) = lookup(pkg, ty, msg_path).ok_or_else(|| missing(type_name))?;
    let mut out = main.clone();
    let mut sources: Vec<String> = vec![source];
    let mut seen: HashSet<(String, String)> = HashSet::from([(pkg.to_string(), ty.to_string())]);
    let mut stack: Vec<(String, String)> = dependencies(&main, pkg);
    stack.reverse();
    while let Some((p, t)) = stack.pop() {
        if !seen.insert((p.clone(), t.clone())) {
            continue;
        }
        let (text, source) =
            lookup(&p, &t, msg_path).ok_or_else(|| missing(&format!("{p}/msg/{t}")))?;
        if !out.ends_with('\n') {
            out.push('\n');
        }
        out.push_str(&"=".repeat(80));
        out.push_str(&format!("\nMSG: {p}/{t}\n"));
        out.push_str(&text);
        if !sources.contains(&source) && !source.starts_with("logsql.msg_path") {
            sources.push(source);
        }
        let mut deps = dependencies(&text, &p);
        deps.reverse();
        stack.extend(deps);
    }
    sources.sort();
    sources.dedup();
    Ok((out, sources.join(", ")))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bundled_types_resolve_with_their_dependencies() {
        let (text, source) = definition("sensor_msgs/msg/Imu", "").unwrap();
        assert_eq!(source, "bundled");
        for dep in [
            "MSG: std_msgs/Header",
            "MSG: builtin_interfaces/Time",
            "MSG: geometry_msgs/Quaternion",
            "MSG: geometry_msgs/Vector3",
        ] {
            assert!(text.contains(dep), "{dep}");
        }
        // (that the CDR decoder compiles this text: logsql-decode's
        // `cdr::tests::a_bundled_ros2_definition_compiles`)
        assert_eq!(bundled::BUNDLED.len(), 99);
        let e = definition("foo_msgs/msg/Bar", "/nonexistent").unwrap_err();
        assert!(
            e.starts_with("no message definition for foo_msgs/msg/Bar: the bag stores none (rosbag2 before Iron), logsql.msg_path (/nonexistent) and logsql's bundled interfaces (builtin_interfaces, diagnostic_msgs, geometry_msgs, nav_msgs, sensor_msgs, std_msgs, tf2_msgs) lack it"),
            "{e}"
        );
    }

    #[test]
    fn a_msg_path_comes_first_and_a_missing_dependency_is_named() {
        let dir = std::env::temp_dir().join(format!("logsql-msgpath-{}", std::process::id()));
        let msg = dir.join("my_msgs/msg");
        std::fs::create_dir_all(&msg).unwrap();
        std::fs::write(
            msg.join("Pair.msg"),
            "# a pair\nstd_msgs/Header header\nint32 a\nOther b\n",
        )
        .unwrap();
        let path = dir.display().to_string();
        let e = definition("my_msgs/msg/Pair", &path).unwrap_err();
        assert!(
            e.starts_with("no message definition for my_msgs/msg/Other (used by my_msgs/msg/Pair)"),
            "{e}"
        );
        std::fs::write(msg.join("Other.msg"), "float64 x\n").unwrap();
        let (text, source) = definition("my_msgs/msg/Pair", &path).unwrap();
        assert!(text.contains("MSG: my_msgs/Other\nfloat64 x\n"), "{text}");
        assert!(source.contains("logsql.msg_path"), "{source}");
        assert!(source.contains("bundled"), "{source}");
        let _ = std::fs::remove_dir_all(&dir);
    }
}
