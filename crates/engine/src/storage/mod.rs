//! Storage, the lowest layer of the engine: files on disk and in object stores
//! ([`object_io`], [`stores`], [`counting`]; local directories listed by
//! [`local_walk`]), the data roots a serving process may read ([`roots`]),
//! the summary cache ([`summary_cache`]) and
//! whole-file checksum digests ([`digest`]). It imports no other engine layer.

pub mod counting;
pub mod digest;
pub mod local_walk;
pub mod object_io;
pub mod roots;
pub mod stores;
pub mod summary_cache;
