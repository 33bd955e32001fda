//! Writes that cannot destroy, where DataFusion writes: every output file
//! logsql writes (`COPY ... TO` in any format, `logsql export`, `logsql -o`,
//! `logsql plot`) is published atomically ([`logsql_writers::publish`]: a
//! temporary sibling, synced, renamed over the target when complete). This
//! module gives DataFusion's own writers the same guarantee:
//!
//! - [`staging`]: an object store over the local file system that stages every
//!   file DataFusion's own writers (Parquet, CSV, JSON, Arrow) put;
//! - [`sink`]: the sink wrapper and physical optimizer rule that give every
//!   `COPY` / `INSERT` such a store and publish its files only on success;
//! - [`upload`]: a complete local file streamed to an object store (for
//!   targets in a store: the object appears only when complete).

pub(crate) mod sink;
pub(crate) mod staging;

use std::io;
use std::path::Path;
use std::sync::Arc;

use object_store::path::Path as ObjectPath;
use object_store::{ObjectStore, ObjectStoreExt};

pub use logsql_writers::publish::{AtomicDir, AtomicFile};
pub(crate) use logsql_writers::publish::{publish, temp_file_beside};
pub(crate) use sink::AtomicCopy;

/// Streams the local file `from` to `path` in `store` (multipart; the object
/// appears only when complete).
pub(crate) async fn upload(
    from: &Path,
    store: &Arc<dyn ObjectStore>,
    path: &ObjectPath,
) -> object_store::Result<()> {
    use tokio::io::AsyncReadExt;
    let read_error = |e: io::Error| object_store::Error::Generic {
        store: "upload",
        source: format!("reading {}: {e}", from.display()).into(),
    };
    let upload = store.put_multipart(path).await?;
    let mut w = object_store::WriteMultipart::new_with_chunk_size(upload, 8 << 20);
    let mut f = tokio::fs::File::open(from).await.map_err(read_error)?;
    let mut buf = vec![0u8; 8 << 20];
    loop {
        let n = f.read(&mut buf).await.map_err(read_error)?;
        if n == 0 {
            break;
        }
        w.wait_for_capacity(4).await?;
        w.write(&buf[..n]);
    }
    w.finish().await?;
    Ok(())
}
