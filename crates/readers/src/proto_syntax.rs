//! A guard for every builder of prost-reflect descriptor pools: the Apollo
//! reader (`proto_desc`), the protobuf decoder and user descriptor sets.
//!
//! It is knowledge about the protobuf library, not about decoding or about a
//! format, so it sits in this leaf module that both the byte-level readers
//! (`formats/`) and the decode layer (`decode/`) may use.

use prost_reflect::prost_types::FileDescriptorProto;

/// Checks the `syntax` of `files` before they go to prost-reflect, which
/// panics (prost-reflect 0.16: an index out of bounds while labelling the
/// error) on any value but `proto2` and `proto3`: an unknown syntax (e.g.
/// `editions`) is an error naming the file, and an empty one is taken as
/// absent (proto2), as `descriptor.proto` defines it.
pub fn check_syntax(files: &mut [FileDescriptorProto]) -> Result<(), String> {
    for file in files {
        match file.syntax.as_deref() {
            None | Some("proto2" | "proto3") => {}
            Some("") => file.syntax = None,
            Some(other) => {
                return Err(format!(
                    "file {:?} has syntax {other:?}; only proto2 and proto3 are supported",
                    file.name()
                ));
            }
        }
    }
    Ok(())
}
