//! The DataFusion datasource: the `FileFormat` (`file_format`), its
//! `FileSource` ([`source`]) and the MCAP writer sink ([`mcap_sink`]). It imports
//! the scan core and storage, never the SQL surface.

pub(crate) mod file_format;
pub mod mcap_sink;
pub mod source;
