//! The DataFusion datasource: the `FileFormat` (`file_format`), its
//! `FileSource` ([`source`]), the MCAP writer sink ([`mcap_sink`]) and where it
//! takes channels from ([`mcap_sources`]). It imports
//! the scan core and storage, never the SQL surface.

pub(crate) mod file_format;
pub mod mcap_sink;
pub mod mcap_sources;
pub mod source;
