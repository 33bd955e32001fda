//! ROS bag 2.0 records: op codes, the `len | name=value` header encoding, and
//! tolerant parsers over byte slices.
//!
//! Every record, at top level and inside chunks, is `header_len u32 | header |
//! data_len u32 | data` (little-endian). A header is a sequence of fields, each
//! `field_len u32 | name '=' value`, split at the *first* `=` (values are binary
//! and may contain `=`). Fields come in any order; unknown ones are ignored.
//! Nothing here assumes padding: records are always skipped by their lengths.

use std::collections::BTreeMap;

/// The magic line every 2.0 bag starts with.
pub const MAGIC: &[u8] = b"#ROSBAG V2.0\n";

/// Largest record header accepted (real headers are well under 1 KiB); a larger
/// `header_len` is treated as corruption instead of being allocated.
pub(crate) const MAX_HEADER_LEN: u32 = 16 << 20;

/// Largest connection-record data accepted (it holds the message definition).
pub(crate) const MAX_CONNECTION_DATA_LEN: u32 = 64 << 20;

/// Bytes of one index-data entry (`sec u32, nsec u32, offset u32`).
pub(crate) const INDEX_ENTRY_LEN: u64 = 12;

/// Bytes of one chunk-info entry (`conn u32, count u32`).
pub(crate) const CHUNK_INFO_ENTRY_LEN: u64 = 8;

/// Record op codes.
pub mod op {
    /// v1.2 message definition (never in 2.0).
    pub const MESSAGE_DEFINITION: u8 = 0x01;
    /// Message data (inside chunks).
    pub const MESSAGE_DATA: u8 = 0x02;
    /// Bag header (right after the magic).
    pub const BAG_HEADER: u8 = 0x03;
    /// Index data (after each chunk, one per connection in it).
    pub const INDEX_DATA: u8 = 0x04;
    /// Chunk.
    pub const CHUNK: u8 = 0x05;
    /// Chunk info (index section).
    pub const CHUNK_INFO: u8 = 0x06;
    /// Connection (inside chunks and in the index section).
    pub const CONNECTION: u8 = 0x07;

    /// A readable name for `op`.
    pub fn name(op: u8) -> &'static str {
        match op {
            MESSAGE_DEFINITION => "message definition (v1.2)",
            MESSAGE_DATA => "message data",
            BAG_HEADER => "bag header",
            INDEX_DATA => "index data",
            CHUNK => "chunk",
            CHUNK_INFO => "chunk info",
            CONNECTION => "connection",
            _ => "unknown",
        }
    }
}

/// A parse failure at byte `pos` of the parsed slice.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FieldError {
    /// Offset inside the slice that was parsed.
    pub pos: usize,
    /// What was wrong.
    pub message: String,
}

impl FieldError {
    fn new(pos: usize, message: impl Into<String>) -> Self {
        Self {
            pos,
            message: message.into(),
        }
    }
}

/// Reads a little-endian u32 at `pos` of `buf`, if there are 4 bytes.
pub fn u32_at(buf: &[u8], pos: usize) -> Option<u32> {
    let b = buf.get(pos..pos.checked_add(4)?)?;
    Some(u32::from_le_bytes([b[0], b[1], b[2], b[3]]))
}

/// A ROS time (`sec u32, nsec u32`) in nanoseconds. Never overflows: at most
/// `u32::MAX * 1e9 + u32::MAX`.
pub fn time_ns(sec: u32, nsec: u32) -> u64 {
    u64::from(sec) * 1_000_000_000 + u64::from(nsec)
}

/// Iterates the `(name, value)` fields of a header (or of a connection record's data).
#[derive(Debug, Clone)]
pub struct Fields<'a> {
    buf: &'a [u8],
    pos: usize,
    failed: bool,
}

/// The fields of `buf`.
pub fn fields(buf: &[u8]) -> Fields<'_> {
    Fields {
        buf,
        pos: 0,
        failed: false,
    }
}

impl<'a> Iterator for Fields<'a> {
    /// `(position of the field, name, value)` or the error that ends the iteration.
    type Item = Result<(usize, &'a [u8], &'a [u8]), FieldError>;

    fn next(&mut self) -> Option<Self::Item> {
        if self.failed || self.pos >= self.buf.len() {
            return None;
        }
        let start = self.pos;
        let fail = |this: &mut Self, msg: String| {
            this.failed = true;
            Some(Err(FieldError::new(start, msg)))
        };
        let Some(len) = u32_at(self.buf, start) else {
            return fail(
                self,
                format!(
                    "field length cut short ({} bytes left in the header)",
                    self.buf.len() - start
                ),
            );
        };
        let body_start = start + 4;
        let Some(body) = usize::try_from(len)
            .ok()
            .and_then(|l| body_start.checked_add(l))
            .and_then(|end| self.buf.get(body_start..end))
        else {
            return fail(
                self,
                format!(
                    "field of {len} bytes overruns the header ({} bytes left)",
                    self.buf.len() - body_start
                ),
            );
        };
        let Some(eq) = body.iter().position(|&b| b == b'=') else {
            return fail(
                self,
                format!(
                    "field without '=' ({:?})",
                    String::from_utf8_lossy(&body[..body.len().min(32)])
                ),
            );
        };
        self.pos = body_start + body.len();
        Some(Ok((start, &body[..eq], &body[eq + 1..])))
    }
}

/// The fields of a record header that bag 2.0 defines, as far as present.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct Header<'a> {
    /// Record type.
    pub op: Option<u8>,
    /// Connection id (message data, index data, connection).
    pub conn: Option<u32>,
    /// Message time in ns (message data).
    pub time: Option<u64>,
    /// Record version (index data, chunk info).
    pub ver: Option<u32>,
    /// Entry count (index data, chunk info).
    pub count: Option<u32>,
    /// Uncompressed chunk size.
    pub size: Option<u32>,
    /// Chunk compression name.
    pub compression: Option<&'a [u8]>,
    /// Topic (connection).
    pub topic: Option<&'a [u8]>,
    /// Offset of the index section (bag header).
    pub index_pos: Option<u64>,
    /// Number of connections (bag header).
    pub conn_count: Option<u32>,
    /// Number of chunks (bag header).
    pub chunk_count: Option<u32>,
    /// Chunk record offset (chunk info).
    pub chunk_pos: Option<u64>,
    /// Earliest message time in ns (chunk info).
    pub start_time: Option<u64>,
    /// Latest message time in ns (chunk info).
    pub end_time: Option<u64>,
    /// Encryption plugin (bag header of encrypted bags).
    pub(crate) encryptor: Option<&'a [u8]>,
}

/// Parses a record header. Fields of a known name but the wrong size are errors;
/// unknown fields are ignored.
pub(crate) fn parse_header(buf: &[u8]) -> Result<Header<'_>, FieldError> {
    let mut h = Header::default();
    for field in fields(buf) {
        let (pos, name, value) = field?;
        let bad = |want: usize| {
            FieldError::new(
                pos,
                format!(
                    "field {:?} has {} bytes, expected {want}",
                    String::from_utf8_lossy(name),
                    value.len()
                ),
            )
        };
        let u32v = || {
            <[u8; 4]>::try_from(value)
                .map(u32::from_le_bytes)
                .map_err(|_| bad(4))
        };
        let u64v = || {
            <[u8; 8]>::try_from(value)
                .map(u64::from_le_bytes)
                .map_err(|_| bad(8))
        };
        let timev = || {
            <[u8; 8]>::try_from(value)
                .map(|b| {
                    time_ns(
                        u32::from_le_bytes([b[0], b[1], b[2], b[3]]),
                        u32::from_le_bytes([b[4], b[5], b[6], b[7]]),
                    )
                })
                .map_err(|_| bad(8))
        };
        match name {
            b"op" => match value {
                [b] => h.op = Some(*b),
                _ => return Err(bad(1)),
            },
            b"conn" => h.conn = Some(u32v()?),
            b"time" => h.time = Some(timev()?),
            b"ver" => h.ver = Some(u32v()?),
            b"count" => h.count = Some(u32v()?),
            b"size" => h.size = Some(u32v()?),
            b"compression" => h.compression = Some(value),
            b"topic" => h.topic = Some(value),
            b"index_pos" => h.index_pos = Some(u64v()?),
            b"conn_count" => h.conn_count = Some(u32v()?),
            b"chunk_count" => h.chunk_count = Some(u32v()?),
            b"chunk_pos" => h.chunk_pos = Some(u64v()?),
            b"start_time" => h.start_time = Some(timev()?),
            b"end_time" => h.end_time = Some(timev()?),
            b"encryptor" => h.encryptor = Some(value),
            _ => {}
        }
    }
    Ok(h)
}

/// A required field, or an error naming it.
pub fn required<T>(v: Option<T>, name: &str, record: &str) -> Result<T, FieldError> {
    v.ok_or_else(|| FieldError::new(0, format!("{record} record without a {name:?} field")))
}

/// The data of a connection record: another field list.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct ConnectionData {
    /// `type`: the ROS1 message type (`pkg/Name`).
    pub msg_type: Option<String>,
    /// `md5sum`.
    pub md5sum: Option<String>,
    /// `message_definition`, verbatim.
    pub message_definition: Vec<u8>,
    /// Every other field (`callerid`, `latching`, `topic`, ...), as text.
    pub others: BTreeMap<String, String>,
}

/// Parses a connection record's data.
pub(crate) fn parse_connection_data(buf: &[u8]) -> Result<ConnectionData, FieldError> {
    let mut c = ConnectionData::default();
    let text = |v: &[u8]| String::from_utf8_lossy(v).into_owned();
    for field in fields(buf) {
        let (_, name, value) = field?;
        match name {
            b"type" => c.msg_type = Some(text(value)),
            b"md5sum" => c.md5sum = Some(text(value)),
            b"message_definition" => c.message_definition = value.to_vec(),
            _ => {
                c.others.entry(text(name)).or_insert_with(|| text(value));
            }
        }
    }
    Ok(c)
}

/// One record inside a slice (a decompressed chunk).
#[derive(Debug, Clone, Copy)]
pub(crate) struct SliceRecord<'a> {
    /// The header bytes.
    pub header: &'a [u8],
    /// The data bytes.
    pub data: &'a [u8],
    /// Offset just past the record.
    pub end: usize,
}

/// Splits the record at `pos` of `buf`; the error says what is cut short.
pub(crate) fn slice_record(buf: &[u8], pos: usize) -> Result<SliceRecord<'_>, FieldError> {
    let left = buf.len().saturating_sub(pos);
    let hl = u32_at(buf, pos).ok_or_else(|| {
        FieldError::new(
            pos,
            format!("record header length cut short ({left} bytes left)"),
        )
    })?;
    let h_start = pos + 4;
    let header = usize::try_from(hl)
        .ok()
        .and_then(|l| h_start.checked_add(l))
        .and_then(|end| buf.get(h_start..end))
        .ok_or_else(|| {
            FieldError::new(
                pos,
                format!("record header of {hl} bytes overruns the data ({left} bytes left)"),
            )
        })?;
    let dl_pos = h_start + header.len();
    let dl =
        u32_at(buf, dl_pos).ok_or_else(|| FieldError::new(pos, "record data length cut short"))?;
    let d_start = dl_pos + 4;
    let data = usize::try_from(dl)
        .ok()
        .and_then(|l| d_start.checked_add(l))
        .and_then(|end| buf.get(d_start..end))
        .ok_or_else(|| {
            FieldError::new(
                pos,
                format!(
                    "record data of {dl} bytes overruns the data ({} bytes left)",
                    buf.len() - d_start
                ),
            )
        })?;
    Ok(SliceRecord {
        header,
        data,
        end: d_start + data.len(),
    })
}

/// The `(time ns, offset)` entries of an index-data record's data.
pub(crate) fn index_entries(data: &[u8]) -> impl Iterator<Item = (u64, u32)> + '_ {
    data.chunks_exact(INDEX_ENTRY_LEN as usize).map(|e| {
        let w = |i: usize| u32::from_le_bytes([e[i], e[i + 1], e[i + 2], e[i + 3]]);
        (time_ns(w(0), w(4)), w(8))
    })
}

/// The `(conn, count)` entries of a chunk-info record's data.
pub(crate) fn chunk_info_entries(data: &[u8]) -> impl Iterator<Item = (u32, u32)> + '_ {
    data.chunks_exact(CHUNK_INFO_ENTRY_LEN as usize).map(|e| {
        (
            u32::from_le_bytes([e[0], e[1], e[2], e[3]]),
            u32::from_le_bytes([e[4], e[5], e[6], e[7]]),
        )
    })
}

/// Encodes one header field (for tests and writers).
pub fn encode_field(out: &mut Vec<u8>, name: &[u8], value: &[u8]) {
    let len = u32::try_from(name.len() + 1 + value.len()).expect("field under 4 GiB");
    out.extend_from_slice(&len.to_le_bytes());
    out.extend_from_slice(name);
    out.push(b'=');
    out.extend_from_slice(value);
}

#[cfg(test)]
mod tests {
    use super::*;

    fn header(fields: &[(&[u8], &[u8])]) -> Vec<u8> {
        let mut out = Vec::new();
        for (n, v) in fields {
            encode_field(&mut out, n, v);
        }
        out
    }

    #[test]
    fn values_may_contain_equals_and_fields_come_in_any_order() {
        let h = header(&[
            (b"time", &[1, 0, 0, 0, 2, 0, 0, 0]),
            (b"topic", b"a=b\0c"),
            (b"weird", b""),
            (b"op", &[2]),
            (b"conn", &7u32.to_le_bytes()),
        ]);
        let p = parse_header(&h).unwrap();
        assert_eq!(p.op, Some(2));
        assert_eq!(p.conn, Some(7));
        assert_eq!(p.time, Some(1_000_000_002));
        assert_eq!(p.topic, Some(&b"a=b\0c"[..]));
    }

    #[test]
    fn malformed_headers_are_errors_not_panics() {
        let h = header(&[(b"conn", &[1, 2])]);
        assert!(parse_header(&h).unwrap_err().message.contains("expected 4"));
        let mut h = header(&[(b"op", &[2])]);
        h.extend_from_slice(&100u32.to_le_bytes());
        assert!(parse_header(&h).unwrap_err().message.contains("overruns"));
        let mut h = header(&[(b"op", &[2])]);
        h.extend_from_slice(&[1, 0]);
        assert!(parse_header(&h).unwrap_err().message.contains("cut short"));
        let mut h = 3u32.to_le_bytes().to_vec();
        h.extend_from_slice(b"abc");
        assert!(
            parse_header(&h)
                .unwrap_err()
                .message
                .contains("without '='")
        );
        for cut in 0..40 {
            let h = header(&[(b"op", &[2]), (b"conn", &[1, 0, 0, 0])]);
            let _ = parse_header(&h[..cut.min(h.len())]);
            let _ = slice_record(&h[..cut.min(h.len())], 0);
        }
    }

    #[test]
    fn slice_records_are_bounded() {
        let mut rec = Vec::new();
        let h = header(&[(b"op", &[2])]);
        rec.extend_from_slice(&(h.len() as u32).to_le_bytes());
        rec.extend_from_slice(&h);
        rec.extend_from_slice(&3u32.to_le_bytes());
        rec.extend_from_slice(b"xyz");
        let r = slice_record(&rec, 0).unwrap();
        assert_eq!(r.data, b"xyz");
        assert_eq!(r.end, rec.len());
        assert!(slice_record(&rec[..rec.len() - 1], 0).is_err());
        let mut huge = rec.clone();
        huge[0..4].copy_from_slice(&u32::MAX.to_le_bytes());
        assert!(slice_record(&huge, 0).is_err());
    }

    #[test]
    fn connection_data_keeps_unknown_fields() {
        let d = header(&[
            (b"topic", b"/x"),
            (b"type", b"std_msgs/String"),
            (b"md5sum", b"992ce8a1687cec8c8bd883ec73ca41d1"),
            (b"message_definition", b"string data\n"),
            (b"callerid", b"/talker"),
            (b"latching", b"1"),
        ]);
        let c = parse_connection_data(&d).unwrap();
        assert_eq!(c.msg_type.as_deref(), Some("std_msgs/String"));
        assert_eq!(c.message_definition, b"string data\n");
        assert_eq!(c.others["callerid"], "/talker");
        assert_eq!(c.others["latching"], "1");
        assert_eq!(c.others["topic"], "/x");
    }
}
