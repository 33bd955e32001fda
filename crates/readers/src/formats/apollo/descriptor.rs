//! Channel schemas: `Channel.proto_desc` to a `prost_reflect::DescriptorPool`.
//!
//! The C++ recorder stores a `ProtoDesc` tree (a serialized
//! `FileDescriptorProto` plus one subtree per import, shared files repeated);
//! Apollo's Python writer examples store a bare `FileDescriptorProto`; demo
//! programs store arbitrary bytes; some channels have none. The first two
//! become a pool (one per channel: producers disagree on file names), the
//! others `None`. Nothing here ever prevents reading the raw messages.

use std::collections::{HashMap, HashSet};

use prost::Message as _;
use prost_reflect::DescriptorPool;
use prost_reflect::prost_types::{
    DescriptorProto, EnumDescriptorProto, FieldDescriptorProto, FileDescriptorProto,
    field_descriptor_proto::Type,
};

use crate::model::Channel;

use super::proto::ProtoDesc;

/// What a channel's `proto_desc` holds (channel metadata key `descriptor`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DescriptorKind {
    /// A `ProtoDesc` tree whose root file defines the message type (C++ writers).
    ProtoDesc,
    /// A bare `FileDescriptorProto` defining the message type (Python writers); its imports are absent.
    FileDescriptor,
    /// Empty, or no Channel section at all.
    Missing,
    /// Bytes that are neither (e.g. the demo writers' `"test ...."`).
    Unusable,
}

impl DescriptorKind {
    /// The metadata value: `proto_desc`, `file_descriptor`, `missing` or `unusable`.
    pub fn as_str(self) -> &'static str {
        match self {
            DescriptorKind::ProtoDesc => "proto_desc",
            DescriptorKind::FileDescriptor => "file_descriptor",
            DescriptorKind::Missing => "missing",
            DescriptorKind::Unusable => "unusable",
        }
    }
}

/// Why a descriptor pool could not be built.
#[derive(Debug, Clone, thiserror::Error)]
#[error("channel {channel}: cannot build a descriptor pool for {message_type}: {message}")]
pub struct DescriptorError {
    /// Channel name.
    pub channel: String,
    /// The channel's message type.
    pub message_type: String,
    /// The cause.
    pub message: String,
}

impl From<DescriptorError> for crate::error::Error {
    fn from(e: DescriptorError) -> Self {
        crate::error::Error::Invalid(e.to_string())
    }
}

/// Whether `file` defines the message `full_name` (e.g. `apollo.canbus.Chassis`, nested types too).
pub fn defines(file: &FileDescriptorProto, full_name: &str) -> bool {
    let full_name = full_name.strip_prefix('.').unwrap_or(full_name);
    let rest = match file.package() {
        "" => full_name,
        pkg => match full_name
            .strip_prefix(pkg)
            .and_then(|r| r.strip_prefix('.'))
        {
            Some(r) => r,
            None => return false,
        },
    };
    let mut parts = rest.split('.');
    let Some(first) = parts.next() else {
        return false;
    };
    let Some(mut msg) = file.message_type.iter().find(|m| m.name() == first) else {
        return false;
    };
    for part in parts {
        match msg.nested_type.iter().find(|m| m.name() == part) {
            Some(m) => msg = m,
            None => return false,
        }
    }
    true
}

fn decode_file(bytes: &[u8]) -> Option<FileDescriptorProto> {
    FileDescriptorProto::decode(bytes)
        .ok()
        .filter(|f| !f.name().is_empty())
}

/// Classifies `proto_desc` for a channel of `message_type`.
pub fn classify(proto_desc: &[u8], message_type: &str) -> DescriptorKind {
    if proto_desc.is_empty() {
        return DescriptorKind::Missing;
    }
    let fits = |f: &FileDescriptorProto| message_type.is_empty() || defines(f, message_type);
    if let Ok(tree) = ProtoDesc::decode(proto_desc)
        && let Some(root) = decode_file(tree.desc())
        && fits(&root)
    {
        return DescriptorKind::ProtoDesc;
    }
    match decode_file(proto_desc) {
        Some(f) if fits(&f) => DescriptorKind::FileDescriptor,
        _ => DescriptorKind::Unusable,
    }
}

/// The files of a `proto_desc` (post-order, de-duplicated by name, empty
/// entries skipped) and what it holds; `None` when missing or unusable.
pub(crate) fn descriptor_files(
    proto_desc: &[u8],
    message_type: &str,
) -> Option<(DescriptorKind, Vec<FileDescriptorProto>)> {
    match classify(proto_desc, message_type) {
        DescriptorKind::ProtoDesc => {
            let tree = ProtoDesc::decode(proto_desc).ok()?;
            let mut files = Vec::new();
            let mut seen = HashSet::new();
            collect(&tree, &mut files, &mut seen);
            Some((DescriptorKind::ProtoDesc, files))
        }
        DescriptorKind::FileDescriptor => Some((
            DescriptorKind::FileDescriptor,
            vec![decode_file(proto_desc)?],
        )),
        DescriptorKind::Missing | DescriptorKind::Unusable => None,
    }
}

/// Post-order walk (prost's decoder bounds the nesting depth at 100).
fn collect(node: &ProtoDesc, out: &mut Vec<FileDescriptorProto>, seen: &mut HashSet<String>) {
    for dep in &node.dependencies {
        collect(dep, out, seen);
    }
    if let Some(file) = decode_file(node.desc())
        && seen.insert(file.name().to_string())
    {
        out.push(file);
    }
}

/// Imports of `files` that none of them provides.
pub(crate) fn missing_imports(files: &[FileDescriptorProto]) -> Vec<String> {
    let names: HashSet<&str> = files.iter().map(|f| f.name()).collect();
    let mut out: Vec<String> = files
        .iter()
        .flat_map(|f| f.dependency.iter())
        .filter(|d| !names.contains(d.as_str()))
        .cloned()
        .collect();
    out.sort();
    out.dedup();
    out
}

/// The descriptor pool of `channel` (a channel of this format: its schema is
/// the raw `proto_desc`), in which `channel.message_type` resolves.
///
/// `Ok(None)` when the channel has no usable descriptor (missing, empty or
/// garbage `proto_desc`). A bare `FileDescriptorProto` whose imports are
/// absent is made self-contained: imports that are not provided are dropped,
/// and fields of types they would have defined become `bytes` (messages) or
/// `int32` (enums), which are wire-compatible; the other fields decode normally.
pub fn descriptor_pool(channel: &Channel) -> Result<Option<DescriptorPool>, DescriptorError> {
    let message_type = channel.message_type.as_deref().unwrap_or("");
    let Some(schema) = channel.schema.as_deref() else {
        return Ok(None);
    };
    let err = |message: String| DescriptorError {
        channel: channel.topic.clone(),
        message_type: message_type.to_string(),
        message,
    };
    let Some((_, mut files)) = descriptor_files(schema, message_type) else {
        return Ok(None);
    };
    crate::proto_syntax::check_syntax(&mut files).map_err(err)?;
    let pool = match DescriptorPool::from_file_descriptor_set(
        prost_reflect::prost_types::FileDescriptorSet {
            file: files.clone(),
        },
    ) {
        Ok(pool) => pool,
        Err(strict) => {
            let files = self_contained(files);
            DescriptorPool::from_file_descriptor_set(
                prost_reflect::prost_types::FileDescriptorSet { file: files },
            )
            .map_err(|e| err(format!("{strict}; without the missing imports: {e}")))?
        }
    };
    if !message_type.is_empty() && pool.get_message_by_name(message_type).is_none() {
        return Err(err(format!(
            "{message_type} is not defined by the descriptor"
        )));
    }
    Ok(Some(pool))
}

/// Fully qualified (`.pkg.Name`) message and enum names defined by `files`.
fn defined_names(files: &[FileDescriptorProto]) -> HashMap<String, bool> {
    fn message(prefix: &str, m: &DescriptorProto, out: &mut HashMap<String, bool>) {
        let name = format!("{prefix}.{}", m.name());
        for e in &m.enum_type {
            out.insert(format!("{name}.{}", e.name()), false);
        }
        for n in &m.nested_type {
            message(&name, n, out);
        }
        out.insert(name, true);
    }
    let mut out = HashMap::new();
    for f in files {
        let prefix = match f.package() {
            "" => String::new(),
            p => format!(".{p}"),
        };
        for m in &f.message_type {
            message(&prefix, m, &mut out);
        }
        for e in &f.enum_type {
            let e: &EnumDescriptorProto = e;
            out.insert(format!("{prefix}.{}", e.name()), false);
        }
    }
    out
}

/// Drops imports the batch does not provide and rewrites fields whose types
/// are undefined into wire-compatible scalars (see [`descriptor_pool`]).
fn self_contained(mut files: Vec<FileDescriptorProto>) -> Vec<FileDescriptorProto> {
    let defined = defined_names(&files);
    let names: HashSet<String> = files.iter().map(|f| f.name().to_string()).collect();
    // Keeps a field if its type resolves (or can be made a scalar); false drops it.
    let fix = |field: &mut FieldDescriptorProto| -> bool {
        if let Some(extendee) = field.extendee.as_deref()
            && extendee.starts_with('.')
            && !defined.contains_key(extendee)
        {
            return false;
        }
        let Some(type_name) = field.type_name.as_deref() else {
            return true;
        };
        if !type_name.starts_with('.') || defined.contains_key(type_name) {
            return true;
        }
        match field.r#type() {
            Type::Group => false,
            Type::Enum => {
                field.set_type(Type::Int32);
                field.type_name = None;
                field.default_value = None;
                true
            }
            _ => {
                field.set_type(Type::Bytes);
                field.type_name = None;
                field.default_value = None;
                true
            }
        }
    };
    fn walk(m: &mut DescriptorProto, fix: &dyn Fn(&mut FieldDescriptorProto) -> bool) {
        m.field.retain_mut(|f| fix(f));
        m.extension.retain_mut(|f| fix(f));
        for n in &mut m.nested_type {
            walk(n, fix);
        }
    }
    for f in &mut files {
        f.dependency.retain(|d| names.contains(d));
        f.public_dependency.clear();
        f.weak_dependency.clear();
        f.service.clear();
        f.extension.retain_mut(|x| fix(x));
        for m in &mut f.message_type {
            walk(m, &fix);
        }
    }
    files
}
