//! User-supplied protobuf schemas (`FileDescriptorSet` files).
//!
//! Some formats name a payload's protobuf type without storing its schema
//! (BDDF stores only the type name). A user can supply the schemas as
//! descriptor sets (`protoc --include_imports --descriptor_set_out`, `buf build
//! -o`); this module loads them into one prost-reflect pool and gives, per
//! message type, a self-contained `FileDescriptorSet` (the type's file and its
//! dependencies), the same form MCAP stores for `protobuf` channels.

use std::collections::{BTreeSet, HashMap};
use std::sync::{Arc, LazyLock, Mutex};

use prost::Message as _;
use prost_reflect::DescriptorPool;
use prost_reflect::prost_types::FileDescriptorSet;

use logsql_readers::error::{Error, Result};
use logsql_readers::model::Channel;

static POOLS: LazyLock<Mutex<HashMap<String, Arc<DescriptorPool>>>> =
    LazyLock::new(Default::default);

/// Loads the descriptor sets at `paths` (comma-separated) into one pool, cached
/// per path list. Duplicate files across sets are accepted when identical.
pub fn load(paths: &str) -> Result<Arc<DescriptorPool>> {
    if let Some(hit) = POOLS.lock().unwrap_or_else(|e| e.into_inner()).get(paths) {
        return Ok(Arc::clone(hit));
    }
    let mut pool = DescriptorPool::new();
    for path in paths.split(',').map(str::trim).filter(|p| !p.is_empty()) {
        let bytes = std::fs::read(path).map_err(|e| Error::io(path, e))?;
        let set = FileDescriptorSet::decode(bytes.as_slice()).map_err(|e| {
            Error::Invalid(format!(
                "{path}: not a protobuf FileDescriptorSet ({e}); make one with \
                 `protoc --include_imports --descriptor_set_out=FILE` or `buf build -o FILE`"
            ))
        })?;
        let known: BTreeSet<String> = pool.files().map(|f| f.name().to_string()).collect();
        let mut new_files: Vec<_> = set
            .file
            .into_iter()
            .filter(|f| !known.contains(f.name()))
            .collect();
        // prost-reflect panics on syntaxes it does not know (editions).
        crate::protobuf::check_syntax(&mut new_files)
            .map_err(|e| Error::Invalid(format!("{path}: {e}")))?;
        pool.add_file_descriptor_protos(new_files)
            .map_err(|e| Error::Invalid(format!("{path}: descriptor set does not resolve: {e}")))?;
    }
    let pool = Arc::new(pool);
    POOLS
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .insert(paths.to_string(), Arc::clone(&pool));
    Ok(pool)
}

/// A `FileDescriptorSet` (encoded) holding `type_name`'s file and every file it
/// depends on, or `None` when the pool lacks the type.
pub fn schema_for(pool: &DescriptorPool, type_name: &str) -> Option<Vec<u8>> {
    let message = pool.get_message_by_name(type_name.trim_start_matches('.'))?;
    let mut seen = BTreeSet::new();
    let mut ordered = Vec::new();
    let mut stack = vec![message.parent_file()];
    // Dependencies first, so the set resolves in order.
    while let Some(file) = stack.pop() {
        if seen.contains(file.name()) {
            continue;
        }
        let pending: Vec<_> = file
            .dependencies()
            .filter(|d| !seen.contains(d.name()))
            .collect();
        if pending.is_empty() {
            seen.insert(file.name().to_string());
            ordered.push(file.file_descriptor_proto().clone());
        } else {
            stack.push(file);
            stack.extend(pending);
        }
    }
    Some(FileDescriptorSet { file: ordered }.encode_to_vec())
}

/// Fills in the schema of `protobuf` channels that have none, from `pool`.
/// Returns how many channels got one.
pub fn attach(pool: &DescriptorPool, channels: &mut [Channel]) -> usize {
    let mut n = 0;
    for ch in channels.iter_mut() {
        if ch.schema.is_some() || ch.message_encoding != "protobuf" {
            continue;
        }
        let Some(ty) = ch.message_type.as_deref() else {
            continue;
        };
        if let Some(schema) = schema_for(pool, ty) {
            ch.schema = Some(schema.into());
            ch.schema_encoding = Some("protobuf".into());
            ch.metadata
                .insert("schema_source".into(), "logsql.descriptor_set".into());
            n += 1;
        }
    }
    n
}

#[cfg(test)]
mod tests {
    use super::*;
    use prost_reflect::prost_types::{DescriptorProto, FileDescriptorProto};

    fn file(name: &str, pkg: &str, msg: &str, deps: &[&str]) -> FileDescriptorProto {
        FileDescriptorProto {
            name: Some(name.into()),
            package: Some(pkg.into()),
            dependency: deps.iter().map(|d| d.to_string()).collect(),
            message_type: vec![DescriptorProto {
                name: Some(msg.into()),
                ..Default::default()
            }],
            syntax: Some("proto3".into()),
            ..Default::default()
        }
    }

    #[test]
    fn unknown_syntaxes_are_errors_not_panics() {
        let mut f = file("e.proto", "p", "E", &[]);
        f.syntax = Some("editions".into());
        let set = FileDescriptorSet { file: vec![f] };
        let path = std::env::temp_dir().join(format!("logsql-fds-ed-{}", std::process::id()));
        std::fs::write(&path, set.encode_to_vec()).unwrap();
        let e = load(path.to_str().unwrap()).unwrap_err().to_string();
        let _ = std::fs::remove_file(&path);
        assert!(e.contains("\"e.proto\" has syntax \"editions\""), "{e}");
    }

    #[test]
    fn schema_holds_the_type_and_its_dependencies_in_order() {
        let set = FileDescriptorSet {
            file: vec![
                file("a.proto", "p", "A", &[]),
                file("b.proto", "p", "B", &["a.proto"]),
                file("c.proto", "p", "C", &[]),
            ],
        };
        let dir = std::env::temp_dir().join(format!("logsql-fds-{}", std::process::id()));
        std::fs::write(&dir, set.encode_to_vec()).unwrap();
        let pool = load(dir.to_str().unwrap()).unwrap();
        let schema = schema_for(&pool, "p.B").unwrap();
        let got = FileDescriptorSet::decode(schema.as_slice()).unwrap();
        let names: Vec<_> = got.file.iter().map(|f| f.name()).collect();
        assert_eq!(names, ["a.proto", "b.proto"]);
        assert!(schema_for(&pool, "p.Missing").is_none());
        let mut chans = vec![Channel {
            id: 0,
            topic: "t".into(),
            message_type: Some("p.C".into()),
            message_encoding: "protobuf".into(),
            schema_encoding: None,
            schema: None,
            metadata: Default::default(),
        }];
        assert_eq!(attach(&pool, &mut chans), 1);
        assert_eq!(chans[0].schema_encoding.as_deref(), Some("protobuf"));
        std::fs::remove_file(dir).unwrap();
        assert!(load("/nonexistent/set.binpb").is_err());
    }
}
