//! The DataFusion datasource of the read side: the `FileSource` of every log
//! format ([`source`]). It imports the scan core and storage, never the write
//! wing or the SQL surface.

pub mod source;
