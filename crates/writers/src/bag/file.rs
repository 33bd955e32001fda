//! [`BagWriter`]: ROS bag 2.0 files, written record by record and laid out as `rosbag` writes them: the magic
//! line, the bag header record padded to 4096 bytes, then chunks (each
//! followed by one index-data record per connection in it), then, at
//! `index_pos`, every connection record and one chunk-info record per chunk.
//! A connection's record is also written inside the first chunk that holds
//! one of its messages, as `rosbag` does, so a walk of the file without its
//! index finds it.
//!
//! [`BagWriter`] holds one chunk (up to [`BagWriter::with_chunk_size`] bytes,
//! plus the message that crosses it) and, per chunk written, its position,
//! time range and per-connection counts: its memory does not grow with the
//! messages. Chunks are stored uncompressed (`compression=none`, what
//! `rosbag record` writes by default and every bag reader accepts). The bag
//! header is rewritten in place when the writer finishes (its size does not
//! change), so the output needs [`Seek`].

use std::collections::BTreeMap;
use std::io::{self, Seek, SeekFrom, Write};

use logsql_readers::formats::bag::records::{MAGIC, encode_field, op};
use logsql_readers::model::Channel;

use crate::error::{Error, Result};

/// Bytes of the bag header record's header and data together, as `rosbag`
/// pads it.
const BAG_HEADER_LEN: usize = 4096;

/// Default uncompressed chunk size (`rosbag record`'s default chunk threshold).
pub const DEFAULT_CHUNK_SIZE: usize = 768 * 1024;

/// A failure of the output (the caller names it).
fn io(e: io::Error) -> Error {
    Error::Write(format!("writing the bag: {e}"))
}

/// A chunk or record too large for the u32 lengths and offsets of a bag.
fn too_large(what: &str, bytes: u64) -> Error {
    Error::Write(format!(
        "{what} of {bytes} bytes is over the 4 GiB a bag record holds"
    ))
}

/// The `md5sum` of a `ros1` channel: the one its metadata states (a bag's
/// connection header), else the one ROS computes from its type and
/// definition (ros1 MCAP files often state none). `None` without a type or a
/// definition, or when the definition does not parse.
pub fn md5sum_of(channel: &Channel) -> Option<String> {
    if let Some(stated) = channel.metadata.get("md5sum") {
        return Some(stated.clone());
    }
    let ty = channel.message_type.as_deref()?;
    let schema = channel.schema.as_deref().filter(|s| !s.is_empty())?;
    logsql_decode::ros1msg::md5sum(ty, &String::from_utf8_lossy(schema)).ok()
}

/// One connection of the bag: the topic its messages are stored under and
/// the connection header `rosbag` records for it.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct BagConnection {
    /// The topic (the connection record header's `topic`).
    pub topic: String,
    /// `type`: the ROS1 message type (`pkg/Name`).
    pub msg_type: String,
    /// `md5sum` of the message definition.
    pub md5sum: String,
    /// `message_definition`, verbatim.
    pub message_definition: Vec<u8>,
    /// Any other connection header field (`callerid`, `latching`, ...). A
    /// `topic` here overrides the data's `topic` field only.
    pub others: BTreeMap<String, String>,
}

impl BagConnection {
    /// The connection of a `ros1` channel as a reader describes it (the bag
    /// reader's channels: type, definition, `md5sum`, `callerid`,
    /// `latching` and any other connection field in the metadata; an
    /// `md5sum` the metadata does not state is computed from the
    /// definition). Refused, with the reason, for a channel of another
    /// encoding or without a type or `md5sum`: a bag connection needs them.
    pub fn from_channel(channel: &Channel) -> std::result::Result<Self, String> {
        if channel.message_encoding != "ros1" {
            return Err(format!(
                "topic {:?} holds {:?} messages: a ROS1 bag stores only ros1 messages",
                channel.topic, channel.message_encoding
            ));
        }
        let Some(msg_type) = channel.message_type.clone() else {
            return Err(format!("topic {:?} has no message type", channel.topic));
        };
        let Some(md5sum) = md5sum_of(channel) else {
            return Err(format!(
                "topic {:?} has no md5sum for its connection header",
                channel.topic
            ));
        };
        Ok(Self::with_header(channel, msg_type, md5sum))
    }

    /// The connection of `channel` under the header's `type` and `md5sum`
    /// (its other fields from the channel's metadata).
    pub(super) fn with_header(channel: &Channel, msg_type: String, md5sum: String) -> Self {
        let mut others = channel.metadata.clone();
        others.remove("md5sum");
        Self {
            topic: channel.topic.clone(),
            msg_type,
            md5sum,
            message_definition: channel.schema.as_deref().unwrap_or_default().to_vec(),
            others,
        }
    }

    /// The connection record's data: its fields in name order, as the ROS
    /// C++ writer stores them.
    fn data(&self) -> Vec<u8> {
        let mut fields: BTreeMap<&str, &[u8]> = self
            .others
            .iter()
            .map(|(k, v)| (k.as_str(), v.as_bytes()))
            .collect();
        fields.entry("topic").or_insert(self.topic.as_bytes());
        fields.insert("type", self.msg_type.as_bytes());
        fields.insert("md5sum", self.md5sum.as_bytes());
        fields.insert("message_definition", &self.message_definition);
        let mut out = Vec::new();
        for (name, value) in fields {
            encode_field(&mut out, name.as_bytes(), value);
        }
        out
    }
}

/// What the index section says of one chunk.
#[derive(Debug)]
struct ChunkInfo {
    pos: u64,
    start: u64,
    end: u64,
    /// Messages per connection id.
    counts: BTreeMap<u32, u32>,
}

/// Writes a ROS bag 2.0 file: [`BagWriter::add_connection`], then
/// [`BagWriter::write`] per message in the order they should be stored (log
/// time order for an ordered bag), then [`BagWriter::finish`]. Dropped
/// without `finish`, the output has no index (readers walk it).
#[derive(Debug)]
pub struct BagWriter<W: Write + Seek> {
    out: W,
    /// Where the bag starts in `out`.
    start: u64,
    /// The position of the next record in `out`.
    pos: u64,
    chunk_size: usize,
    connections: Vec<BagConnection>,
    /// Whether a connection's record was already written inside a chunk.
    in_chunk: Vec<bool>,
    /// The open chunk's records.
    chunk: Vec<u8>,
    /// The open chunk's index entries (`sec, nsec, offset`) per connection.
    chunk_index: BTreeMap<u32, Vec<u8>>,
    chunk_times: Option<(u64, u64)>,
    chunks: Vec<ChunkInfo>,
    messages: u64,
}

impl<W: Write + Seek> BagWriter<W> {
    /// Starts a bag at the current position of `out` (normally an empty
    /// file): writes the magic line and a bag header to be completed by
    /// [`BagWriter::finish`].
    pub fn new(mut out: W) -> Result<Self> {
        let start = out.stream_position().map_err(io)?;
        out.write_all(MAGIC).map_err(io)?;
        let header = bag_header(0, 0, 0)?;
        out.write_all(&header).map_err(io)?;
        Ok(Self {
            out,
            start,
            pos: start + (MAGIC.len() + header.len()) as u64,
            chunk_size: DEFAULT_CHUNK_SIZE,
            connections: Vec::new(),
            in_chunk: Vec::new(),
            chunk: Vec::new(),
            chunk_index: BTreeMap::new(),
            chunk_times: None,
            chunks: Vec::new(),
            messages: 0,
        })
    }

    /// Sets the size at which a chunk is closed (its records' bytes).
    pub fn with_chunk_size(mut self, bytes: usize) -> Self {
        self.chunk_size = bytes.max(1);
        self
    }

    /// Adds a connection and returns its id.
    pub fn add_connection(&mut self, connection: BagConnection) -> u32 {
        self.connections.push(connection);
        self.in_chunk.push(false);
        (self.connections.len() - 1) as u32
    }

    /// Messages written so far.
    pub fn messages(&self) -> u64 {
        self.messages
    }

    /// Writes one message of connection `conn` at `time` (ns).
    pub fn write(&mut self, conn: u32, time: u64, data: &[u8]) -> Result<()> {
        let (sec, nsec) = ros_time(time)?;
        let Some(connection) = self.connections.get(conn as usize) else {
            return Err(Error::Write(format!("connection {conn} was never added")));
        };
        if !self.in_chunk[conn as usize] {
            let (header, data) = connection_record(conn, connection);
            push_record(&mut self.chunk, &header, &data)?;
            self.in_chunk[conn as usize] = true;
        }
        let offset = u32::try_from(self.chunk.len())
            .map_err(|_| too_large("a chunk", self.chunk.len() as u64))?;
        let mut header = Vec::with_capacity(40);
        encode_field(&mut header, b"op", &[op::MESSAGE_DATA]);
        encode_field(&mut header, b"conn", &conn.to_le_bytes());
        encode_field(&mut header, b"time", &time_bytes(sec, nsec));
        push_record(&mut self.chunk, &header, data)?;
        let entries = self.chunk_index.entry(conn).or_default();
        entries.extend_from_slice(&time_bytes(sec, nsec));
        entries.extend_from_slice(&offset.to_le_bytes());
        self.chunk_times = Some(match self.chunk_times {
            Some((s, e)) => (s.min(time), e.max(time)),
            None => (time, time),
        });
        self.messages += 1;
        if self.chunk.len() >= self.chunk_size {
            self.close_chunk()?;
        }
        Ok(())
    }

    /// Writes the open chunk and its index-data records.
    fn close_chunk(&mut self) -> Result<()> {
        let Some((start, end)) = self.chunk_times.take() else {
            return Ok(());
        };
        let size = u32::try_from(self.chunk.len())
            .map_err(|_| too_large("a chunk", self.chunk.len() as u64))?;
        let pos = self.pos;
        let mut header = Vec::with_capacity(48);
        encode_field(&mut header, b"op", &[op::CHUNK]);
        encode_field(&mut header, b"compression", b"none");
        encode_field(&mut header, b"size", &size.to_le_bytes());
        let chunk = std::mem::take(&mut self.chunk);
        self.put_record(&header, &chunk)?;
        self.chunk = chunk;
        self.chunk.clear();
        let mut counts = BTreeMap::new();
        for (conn, entries) in std::mem::take(&mut self.chunk_index) {
            let count = (entries.len() / 12) as u32;
            let mut header = Vec::with_capacity(48);
            encode_field(&mut header, b"op", &[op::INDEX_DATA]);
            encode_field(&mut header, b"ver", &1u32.to_le_bytes());
            encode_field(&mut header, b"conn", &conn.to_le_bytes());
            encode_field(&mut header, b"count", &count.to_le_bytes());
            self.put_record(&header, &entries)?;
            counts.insert(conn, count);
        }
        self.chunks.push(ChunkInfo {
            pos,
            start,
            end,
            counts,
        });
        Ok(())
    }

    /// Writes one top-level record.
    fn put_record(&mut self, header: &[u8], data: &[u8]) -> Result<()> {
        let (h, d) = (record_len(header.len())?, record_len(data.len())?);
        self.out.write_all(&h.to_le_bytes()).map_err(io)?;
        self.out.write_all(header).map_err(io)?;
        self.out.write_all(&d.to_le_bytes()).map_err(io)?;
        self.out.write_all(data).map_err(io)?;
        self.pos += 8 + header.len() as u64 + data.len() as u64;
        Ok(())
    }

    /// Writes the last chunk and the index section, completes the bag
    /// header and returns the output (flushed, positioned at the end).
    pub fn finish(mut self) -> Result<W> {
        self.close_chunk()?;
        let index_pos = self.pos;
        for conn in 0..self.connections.len() {
            let (header, data) = connection_record(conn as u32, &self.connections[conn]);
            self.put_record(&header, &data)?;
        }
        for i in 0..self.chunks.len() {
            let c = &self.chunks[i];
            let mut header = Vec::with_capacity(96);
            encode_field(&mut header, b"op", &[op::CHUNK_INFO]);
            encode_field(&mut header, b"ver", &1u32.to_le_bytes());
            encode_field(&mut header, b"chunk_pos", &c.pos.to_le_bytes());
            let (s, e) = (ros_time(c.start)?, ros_time(c.end)?);
            encode_field(&mut header, b"start_time", &time_bytes(s.0, s.1));
            encode_field(&mut header, b"end_time", &time_bytes(e.0, e.1));
            encode_field(
                &mut header,
                b"count",
                &(c.counts.len() as u32).to_le_bytes(),
            );
            let mut data = Vec::with_capacity(c.counts.len() * 8);
            for (conn, count) in &c.counts {
                data.extend_from_slice(&conn.to_le_bytes());
                data.extend_from_slice(&count.to_le_bytes());
            }
            self.put_record(&header, &data)?;
        }
        let end = self.pos;
        let header = bag_header(
            index_pos,
            self.connections.len() as u32,
            self.chunks.len() as u32,
        )?;
        self.out
            .seek(SeekFrom::Start(self.start + MAGIC.len() as u64))
            .map_err(io)?;
        self.out.write_all(&header).map_err(io)?;
        self.out.seek(SeekFrom::Start(end)).map_err(io)?;
        self.out.flush().map_err(io)?;
        Ok(self.out)
    }
}

/// The bag header record: `index_pos`, `conn_count`, `chunk_count`, padded
/// with spaces to [`BAG_HEADER_LEN`] bytes of header and data.
fn bag_header(index_pos: u64, conns: u32, chunks: u32) -> Result<Vec<u8>> {
    let mut header = Vec::with_capacity(80);
    encode_field(&mut header, b"op", &[op::BAG_HEADER]);
    encode_field(&mut header, b"index_pos", &index_pos.to_le_bytes());
    encode_field(&mut header, b"conn_count", &conns.to_le_bytes());
    encode_field(&mut header, b"chunk_count", &chunks.to_le_bytes());
    let padding = vec![b' '; BAG_HEADER_LEN - header.len()];
    let mut out = Vec::with_capacity(BAG_HEADER_LEN + 8);
    push_record(&mut out, &header, &padding)?;
    Ok(out)
}

/// A connection record's header and data.
fn connection_record(conn: u32, c: &BagConnection) -> (Vec<u8>, Vec<u8>) {
    let mut header = Vec::with_capacity(32 + c.topic.len());
    encode_field(&mut header, b"op", &[op::CONNECTION]);
    encode_field(&mut header, b"conn", &conn.to_le_bytes());
    encode_field(&mut header, b"topic", c.topic.as_bytes());
    (header, c.data())
}

/// Appends `header_len | header | data_len | data` to `out`.
fn push_record(out: &mut Vec<u8>, header: &[u8], data: &[u8]) -> Result<()> {
    out.extend_from_slice(&record_len(header.len())?.to_le_bytes());
    out.extend_from_slice(header);
    out.extend_from_slice(&record_len(data.len())?.to_le_bytes());
    out.extend_from_slice(data);
    Ok(())
}

fn record_len(len: usize) -> Result<u32> {
    u32::try_from(len).map_err(|_| too_large("a record", len as u64))
}

/// `time` (ns) as ROS `(sec, nsec)`.
fn ros_time(time: u64) -> Result<(u32, u32)> {
    let sec = u32::try_from(time / 1_000_000_000).map_err(|_| {
        Error::Write(format!(
            "log time {time} ns is past what a bag stores (u32 seconds)"
        ))
    })?;
    Ok((sec, (time % 1_000_000_000) as u32))
}

fn time_bytes(sec: u32, nsec: u32) -> [u8; 8] {
    let mut b = [0u8; 8];
    b[..4].copy_from_slice(&sec.to_le_bytes());
    b[4..].copy_from_slice(&nsec.to_le_bytes());
    b
}

#[cfg(test)]
mod tests {
    use std::io::Cursor;

    use super::*;
    use logsql_readers::formats::FormatReader;
    use logsql_readers::formats::bag::BagFormat;
    use logsql_readers::io::BytesReader;
    use logsql_readers::limits::Limits;
    use logsql_readers::model::{Flow, Selection};

    fn connection(topic: &str) -> BagConnection {
        BagConnection {
            topic: topic.into(),
            msg_type: "std_msgs/String".into(),
            md5sum: "992ce8a1687cec8c8bd883ec73ca41d1".into(),
            message_definition: b"string data\n".to_vec(),
            others: [("callerid".to_string(), "/talker".to_string())].into(),
        }
    }

    /// Every message of `bytes` read back: (topic, time, payload), in file order.
    fn read_back(bytes: Vec<u8>) -> (logsql_readers::model::Summary, Vec<(String, u64, Vec<u8>)>) {
        let file = BytesReader::new("out.bag", bytes);
        let summary = BagFormat
            .summary_with_limits(&file, &Limits::default())
            .unwrap();
        let mut got = Vec::new();
        for chunk in &summary.chunks {
            let mut sink = |m: logsql_readers::model::Message<'_>| {
                got.push((m.channel.topic.clone(), m.log_time, m.data.to_vec()));
                Flow::Continue
            };
            BagFormat
                .read_chunk(&file, &summary, chunk, &Selection::all(), &mut sink)
                .unwrap();
        }
        (summary, got)
    }

    #[test]
    fn a_written_bag_is_indexed_and_reads_back_healthy() {
        let mut w = BagWriter::new(Cursor::new(Vec::new()))
            .unwrap()
            .with_chunk_size(100);
        let a = w.add_connection(connection("/a"));
        let b = w.add_connection(connection("/b"));
        let mut want = Vec::new();
        for i in 0..20u64 {
            let (conn, topic) = if i % 3 == 0 { (b, "/b") } else { (a, "/a") };
            let t = 1_700_000_000_000_000_000 + i * 1_000_000;
            let data = vec![i as u8; i as usize * 7];
            w.write(conn, t, &data).unwrap();
            want.push((topic.to_string(), t, data));
        }
        let bytes = w.finish().unwrap().into_inner();
        // The header record is padded to 4096 bytes, as rosbag pads it.
        assert_eq!(
            u32_le(&bytes, 13) + u32_le(&bytes, 17 + u32_le(&bytes, 13) as usize),
            4096
        );
        let report = logsql_readers::doctor::check(
            &BagFormat,
            &BytesReader::new("out.bag", bytes.clone()),
            &Limits::default(),
        )
        .unwrap();
        assert!(report.healthy(), "{report:?}");
        let (summary, got) = read_back(bytes);
        assert!(summary.indexed);
        assert!(summary.chunks.len() > 2);
        assert_eq!(summary.message_count, Some(20));
        assert_eq!(got, want);
        let ch = &summary.channels[&u64::from(a)];
        assert_eq!(ch.metadata["callerid"], "/talker");
        assert_eq!(BagConnection::from_channel(ch).unwrap(), connection("/a"));
    }

    #[test]
    fn an_empty_bag_and_bad_input_are_handled() {
        let w = BagWriter::new(Cursor::new(Vec::new())).unwrap();
        let (summary, got) = read_back(w.finish().unwrap().into_inner());
        assert!(got.is_empty() && summary.indexed);
        let mut w = BagWriter::new(Cursor::new(Vec::new())).unwrap();
        assert!(matches!(
            w.write(3, 0, b""),
            Err(Error::Write(m)) if m == "connection 3 was never added"
        ));
        let c = w.add_connection(connection("/a"));
        assert!(matches!(
            w.write(c, u64::MAX, b""),
            Err(Error::Write(m)) if m.ends_with("is past what a bag stores (u32 seconds)")
        ));
    }

    fn u32_le(b: &[u8], at: usize) -> u32 {
        u32::from_le_bytes(b[at..at + 4].try_into().unwrap())
    }
}
