//! Whole-file checksums verified in the same pass as a full scan.
//!
//! A format's whole-file checksum (BDDF's SHA1, [`logsql_readers::formats::FileDigest`])
//! covers every byte of the file, so checking it costs a read of the whole
//! file. A scan that reads every chunk of the file in file order reads most of
//! those bytes anyway: `DigestingReader` feeds the digest with them as they
//! pass, and reads only the bytes between chunks (record headers, the index)
//! for the digest alone. A scan that reads part of a file never verifies
//! (unless `logsql.verify_checksums = 'always'`), so a time window reads only
//! its window's bytes.

use std::ops::Range;

use datafusion::physical_plan::metrics::Count;
use parking_lot::Mutex;

use logsql_readers::formats::{FileDigest, feed_digest, feed_range};
use logsql_readers::io::ReadAt;

/// A [`FileDigest`] being fed with the bytes a scan reads, in file order:
/// bytes skipped between reads are read from the file for the digest alone
/// (counted in `verified`), bytes read twice are fed once. It lives as long
/// as the scan of its file; each read goes through [`FileDigestFeed::reader`].
pub(crate) struct FileDigestFeed {
    verified: Count,
    state: Mutex<Option<Fed>>,
}

/// A digest and how far it has been fed.
struct Fed {
    digest: Box<dyn FileDigest>,
    upto: u64,
}

/// A reader that feeds a [`FileDigestFeed`] with the bytes read through
/// `inner`, filling gaps from `raw`.
pub(crate) struct DigestingReader<'a> {
    inner: &'a dyn ReadAt,
    raw: &'a dyn ReadAt,
    feed: &'a FileDigestFeed,
}

impl FileDigestFeed {
    /// Feeds `digest`, counting the bytes read for it alone in `verified`.
    pub(crate) fn new(digest: Box<dyn FileDigest>, verified: &Count) -> Self {
        Self {
            verified: verified.clone(),
            state: Mutex::new(Some(Fed { digest, upto: 0 })),
        }
    }

    /// Reads through `inner`, filling gaps for the digest from `raw`.
    pub(crate) fn reader<'a>(
        &'a self,
        inner: &'a dyn ReadAt,
        raw: &'a dyn ReadAt,
    ) -> DigestingReader<'a> {
        DigestingReader {
            inner,
            raw,
            feed: self,
        }
    }

    /// Feeds the rest of the covered bytes (from `raw`) and compares: `None`
    /// when the digest was given up (a gap could not be read).
    pub(crate) fn finish(self, raw: &dyn ReadAt) -> Option<logsql_readers::Result<()>> {
        let fed = self.state.into_inner()?;
        let end = fed.digest.end().min(raw.size());
        self.verified.add(end.saturating_sub(fed.upto) as usize);
        Some(feed_digest(raw, fed.digest, fed.upto))
    }

    /// Feeds `bytes` (the file's `at` range) past what was fed already.
    fn feed(&self, raw: &dyn ReadAt, at: Range<u64>, bytes: &[u8]) {
        let mut state = self.state.lock();
        let Some(fed) = state.as_mut() else {
            return;
        };
        let end = fed.digest.end();
        if at.start > fed.upto && fed.upto < end {
            // The bytes between the last read and this one, for the digest alone.
            let gap = fed.upto..at.start.min(end);
            if feed_range(raw, fed.digest.as_mut(), gap.clone()).is_err() {
                *state = None;
                return;
            }
            self.verified.add((gap.end - gap.start) as usize);
            fed.upto = gap.end;
        }
        if at.start <= fed.upto && fed.upto < at.end.min(end) {
            let from = (fed.upto - at.start) as usize;
            let to = (at.end.min(end) - at.start) as usize;
            fed.digest.update(&bytes[from..to]);
            fed.upto = at.start + to as u64;
        }
    }
}

impl ReadAt for DigestingReader<'_> {
    fn name(&self) -> &str {
        self.inner.name()
    }

    fn size(&self) -> u64 {
        self.inner.size()
    }

    fn read_exact_at(&self, offset: u64, buf: &mut [u8]) -> std::io::Result<()> {
        self.inner.read_exact_at(offset, buf)?;
        self.feed
            .feed(self.raw, offset..offset + buf.len() as u64, buf);
        Ok(())
    }

    fn local_path(&self) -> Option<&std::path::Path> {
        self.inner.local_path()
    }

    fn note_external_read(&self, bytes: u64) {
        self.inner.note_external_read(bytes);
    }

    fn shared_chunks(&self) -> Option<&dyn logsql_readers::shared_chunks::ChunkMemo> {
        self.inner.shared_chunks()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use logsql_readers::io::BytesReader;

    /// A digest that records what it was fed.
    struct Recorder {
        end: u64,
        fed: std::sync::Arc<Mutex<Vec<u8>>>,
    }

    impl FileDigest for Recorder {
        fn end(&self) -> u64 {
            self.end
        }
        fn update(&mut self, bytes: &[u8]) {
            self.fed.lock().extend_from_slice(bytes);
        }
        fn finish(self: Box<Self>) -> logsql_readers::Result<()> {
            Ok(())
        }
    }

    #[test]
    fn every_covered_byte_is_fed_once_in_order() {
        let bytes: Vec<u8> = (0..=255u8).cycle().take(1000).collect();
        let file = BytesReader::new("f", bytes.clone());
        let fed = std::sync::Arc::new(Mutex::new(Vec::new()));
        let verified = Count::new();
        let digest = Box::new(Recorder {
            end: 900,
            fed: std::sync::Arc::clone(&fed),
        });
        let feed = FileDigestFeed::new(digest, &verified);
        let mut buf = [0u8; 100];
        // Reads with gaps, an overlap, a re-read and one past the covered end.
        for at in [10u64, 50, 120, 120, 400, 850] {
            feed.reader(&file, &file)
                .read_exact_at(at, &mut buf)
                .unwrap();
            assert_eq!(&buf[..], &bytes[at as usize..at as usize + 100]);
        }
        assert!(feed.finish(&file).unwrap().is_ok());
        assert_eq!(*fed.lock(), bytes[..900]);
        // Gaps 0..10 and 220..400 and 500..850, nothing after 900.
        assert_eq!(verified.value(), 10 + 180 + 350);
    }
}
