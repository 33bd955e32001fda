//! The DataFusion datasource: the `FileFormat` (`file_format`), its
//! `FileSource` ([`source`]), the MCAP writer sink ([`mcap_sink`]) and where it
//! takes channels from ([`mcap_sources`]), the MP4 video sink ([`video_sink`]),
//! the LeRobot dataset writer ([`lerobot`]), where single-file outputs go
//! ([`output`]), and the checks of plans from
//! others ([`plan_guard`]). It imports
//! the scan core and storage, never the SQL surface.

pub(crate) mod file_format;
pub mod frame_batches;
pub mod lerobot;
pub mod mcap_sink;
pub mod mcap_sources;
pub mod output;
pub mod plan_guard;
pub mod source;
pub mod video_sink;
