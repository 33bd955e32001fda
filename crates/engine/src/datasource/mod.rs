//! The DataFusion datasource: the `FileFormat` (`file_format`), its
//! `FileSource` ([`source`]), the MCAP writer sink ([`mcap_sink`]), the LeRobot
//! dataset writer ([`lerobot`]) and where the MCAP sink
//! takes channels from ([`mcap_sources`]), and the checks of plans from
//! others ([`plan_guard`]). It imports
//! the scan core and storage, never the SQL surface.

pub(crate) mod file_format;
pub mod lerobot;
pub mod mcap_sink;
pub mod mcap_sources;
pub mod plan_guard;
pub mod source;
