//! The official `mcap` crate's indexed reader iterating every message of an
//! in-memory file: the raw baseline of the MCAP full scan, shared by the
//! criterion bench (`benches/scan.rs`) and the whole-process baseline
//! (`benches/baselines/mcap.rs`, example `mcap_baseline`).

use mcap::sans_io::indexed_reader::{IndexedReadEvent, IndexedReader, IndexedReaderOptions};

/// (messages, payload bytes) with the sans-io `IndexedReader` (summary read included).
pub fn mcap_indexed(buf: &[u8], options: IndexedReaderOptions) -> (u64, u64) {
    let summary = mcap::Summary::read(buf)
        .expect("summary")
        .expect("file has a summary");
    let mut reader = IndexedReader::new_with_options(&summary, options).expect("IndexedReader");
    let (mut n, mut bytes) = (0u64, 0u64);
    while let Some(event) = reader.next_event() {
        match event.expect("event") {
            IndexedReadEvent::ReadChunkRequest { offset, length } => {
                let start = offset as usize;
                reader
                    .insert_chunk_record_data(offset, &buf[start..start + length])
                    .expect("chunk");
            }
            IndexedReadEvent::Message { data, .. } => {
                n += 1;
                bytes += data.len() as u64;
            }
        }
    }
    (n, bytes)
}
