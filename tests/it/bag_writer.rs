//! A small ROS bag 2.0 writer for tests: chunks with none/bz2/lz4 compression
//! (ROS-style independent LZ4 blocks or the python `rosbags` flavour with
//! linked blocks and a content size), index data after each chunk, and an
//! index section (or none, like a recording that was killed).

use std::collections::BTreeMap;
use std::io::Write;

/// A connection to write.
#[derive(Debug, Clone)]
pub struct Conn {
    pub id: u32,
    pub topic: String,
    pub msg_type: String,
    pub md5sum: String,
    pub definition: String,
    pub callerid: Option<String>,
    pub latching: Option<String>,
}

impl Conn {
    pub fn new(id: u32, topic: &str, msg_type: &str) -> Self {
        Self {
            id,
            topic: topic.into(),
            msg_type: msg_type.into(),
            md5sum: format!("{:032x}", u128::from(id) * 0x1234_5678_9abc),
            definition: format!("# {msg_type}\nstring data\n"),
            callerid: Some(format!("/node_{id}")),
            latching: Some("0".into()),
        }
    }
}

/// How to compress chunks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Compression {
    None,
    Bz2,
    /// ROS `roslz4`: independent blocks, content checksum.
    Lz4Ros,
    /// python-lz4 defaults as used by `rosbags`: linked blocks, content size, 64 KiB blocks.
    Lz4Linked,
}

/// What to write.
#[derive(Debug, Clone)]
pub struct Spec {
    pub conns: Vec<Conn>,
    /// (connection id, time ns, payload) in write order.
    pub messages: Vec<(u32, u64, Vec<u8>)>,
    pub compression: Compression,
    /// A chunk closes once its uncompressed size reaches this.
    pub chunk_threshold: usize,
    /// Pad the bag header record like python `rosbags` (record = 4096 bytes)
    /// instead of like ROS (header + data = 4096).
    pub rosbags_padding: bool,
    /// Leave `index_pos` 0 and write no index section (a killed recording).
    pub unindexed: bool,
    /// `(message index, connection)`: write that connection's record just
    /// before that message, ahead of its own first message (python `rosbags`
    /// writes a connection record when the connection is added), so the record
    /// may sit in an earlier chunk than the connection's first message.
    pub announce: Vec<(usize, u32)>,
}

impl Spec {
    pub fn new(conns: Vec<Conn>, messages: Vec<(u32, u64, Vec<u8>)>) -> Self {
        Self {
            conns,
            messages,
            compression: Compression::None,
            chunk_threshold: 4096,
            rosbags_padding: false,
            unindexed: false,
            announce: Vec::new(),
        }
    }
}

fn field(out: &mut Vec<u8>, name: &str, value: &[u8]) {
    out.extend_from_slice(&((name.len() + 1 + value.len()) as u32).to_le_bytes());
    out.extend_from_slice(name.as_bytes());
    out.push(b'=');
    out.extend_from_slice(value);
}

fn record(out: &mut Vec<u8>, header: &[u8], data: &[u8]) {
    out.extend_from_slice(&(header.len() as u32).to_le_bytes());
    out.extend_from_slice(header);
    out.extend_from_slice(&(data.len() as u32).to_le_bytes());
    out.extend_from_slice(data);
}

fn time_bytes(t: u64) -> Vec<u8> {
    let mut v = ((t / 1_000_000_000) as u32).to_le_bytes().to_vec();
    v.extend_from_slice(&((t % 1_000_000_000) as u32).to_le_bytes());
    v
}

fn connection_record(out: &mut Vec<u8>, c: &Conn) {
    let mut h = Vec::new();
    field(&mut h, "op", &[7]);
    field(&mut h, "conn", &c.id.to_le_bytes());
    field(&mut h, "topic", c.topic.as_bytes());
    let mut d = Vec::new();
    field(&mut d, "topic", c.topic.as_bytes());
    field(&mut d, "type", c.msg_type.as_bytes());
    field(&mut d, "md5sum", c.md5sum.as_bytes());
    field(&mut d, "message_definition", c.definition.as_bytes());
    if let Some(v) = &c.callerid {
        field(&mut d, "callerid", v.as_bytes());
    }
    if let Some(v) = &c.latching {
        field(&mut d, "latching", v.as_bytes());
    }
    record(out, &h, &d);
}

fn bag_header(index_pos: u64, conn_count: u32, chunk_count: u32, rosbags: bool) -> Vec<u8> {
    let mut h = Vec::new();
    field(&mut h, "op", &[3]);
    field(&mut h, "index_pos", &index_pos.to_le_bytes());
    field(&mut h, "conn_count", &conn_count.to_le_bytes());
    field(&mut h, "chunk_count", &chunk_count.to_le_bytes());
    let pad = if rosbags {
        4096 - 8 - h.len()
    } else {
        4096 - h.len()
    };
    let mut out = Vec::new();
    record(&mut out, &h, &vec![b' '; pad]);
    out
}

fn compress(c: Compression, data: &[u8]) -> (&'static str, Vec<u8>) {
    match c {
        Compression::None => ("none", data.to_vec()),
        Compression::Bz2 => {
            let mut e = bzip2::write::BzEncoder::new(Vec::new(), bzip2::Compression::fast());
            e.write_all(data).unwrap();
            ("bz2", e.finish().unwrap())
        }
        Compression::Lz4Ros | Compression::Lz4Linked => {
            use lz4_flex::frame::{BlockMode, BlockSize, FrameEncoder, FrameInfo};
            let info = if c == Compression::Lz4Ros {
                FrameInfo::new()
                    .block_mode(BlockMode::Independent)
                    .block_size(BlockSize::Max1MB)
                    .content_checksum(true)
            } else {
                FrameInfo::new()
                    .block_mode(BlockMode::Linked)
                    .block_size(BlockSize::Max64KB)
                    .content_size(Some(data.len() as u64))
            };
            let mut e = FrameEncoder::with_frame_info(info, Vec::new());
            e.write_all(data).unwrap();
            ("lz4", e.finish().unwrap())
        }
    }
}

/// Writes a bag.
pub fn write(spec: &Spec) -> Vec<u8> {
    let mut out = b"#ROSBAG V2.0\n".to_vec();
    out.extend(bag_header(0, 0, 0, spec.rosbags_padding));
    let conns: BTreeMap<u32, &Conn> = spec.conns.iter().map(|c| (c.id, c)).collect();
    let mut written: std::collections::HashSet<u32> = Default::default();
    // (chunk_pos, start, end, counts)
    let mut infos: Vec<(u64, u64, u64, BTreeMap<u32, u32>)> = Vec::new();
    let mut chunk = Vec::new();
    let mut index: BTreeMap<u32, Vec<(u64, u32)>> = BTreeMap::new();
    let flush = |out: &mut Vec<u8>,
                 chunk: &mut Vec<u8>,
                 index: &mut BTreeMap<u32, Vec<(u64, u32)>>,
                 infos: &mut Vec<(u64, u64, u64, BTreeMap<u32, u32>)>| {
        if chunk.is_empty() {
            return;
        }
        if index.is_empty() && !infos.is_empty() {
            // Only connection records: keep them for the next chunk.
            return;
        }
        let pos = out.len() as u64;
        let (name, data) = compress(spec.compression, chunk);
        let mut h = Vec::new();
        field(&mut h, "op", &[5]);
        field(&mut h, "compression", name.as_bytes());
        field(&mut h, "size", &(chunk.len() as u32).to_le_bytes());
        record(out, &h, &data);
        let mut counts = BTreeMap::new();
        let (mut lo, mut hi) = (u64::MAX, 0);
        for (conn, entries) in index.iter_mut() {
            entries.sort_by_key(|e| e.0);
            let mut h = Vec::new();
            field(&mut h, "op", &[4]);
            field(&mut h, "ver", &1u32.to_le_bytes());
            field(&mut h, "conn", &conn.to_le_bytes());
            field(&mut h, "count", &(entries.len() as u32).to_le_bytes());
            let mut d = Vec::new();
            for (t, off) in entries.iter() {
                d.extend(time_bytes(*t));
                d.extend_from_slice(&off.to_le_bytes());
                lo = lo.min(*t);
                hi = hi.max(*t);
            }
            record(out, &h, &d);
            counts.insert(*conn, entries.len() as u32);
        }
        infos.push((pos, lo, hi, counts));
        chunk.clear();
        index.clear();
    };
    for (i, (conn, t, data)) in spec.messages.iter().enumerate() {
        for &(_, early) in spec.announce.iter().filter(|a| a.0 == i) {
            if written.insert(early) {
                connection_record(&mut chunk, conns[&early]);
            }
        }
        if written.insert(*conn) {
            connection_record(&mut chunk, conns[conn]);
        }
        let offset = chunk.len() as u32;
        let mut h = Vec::new();
        field(&mut h, "op", &[2]);
        field(&mut h, "conn", &conn.to_le_bytes());
        field(&mut h, "time", &time_bytes(*t));
        record(&mut chunk, &h, data);
        index.entry(*conn).or_default().push((*t, offset));
        if chunk.len() >= spec.chunk_threshold {
            flush(&mut out, &mut chunk, &mut index, &mut infos);
        }
    }
    flush(&mut out, &mut chunk, &mut index, &mut infos);
    if spec.unindexed {
        return out;
    }
    let index_pos = out.len() as u64;
    for c in &spec.conns {
        connection_record(&mut out, c);
    }
    for (pos, lo, hi, counts) in &infos {
        let mut h = Vec::new();
        field(&mut h, "op", &[6]);
        field(&mut h, "ver", &1u32.to_le_bytes());
        field(&mut h, "chunk_pos", &pos.to_le_bytes());
        field(&mut h, "start_time", &time_bytes(*lo));
        field(&mut h, "end_time", &time_bytes(*hi));
        field(&mut h, "count", &(counts.len() as u32).to_le_bytes());
        let mut d = Vec::new();
        for (c, n) in counts {
            d.extend_from_slice(&c.to_le_bytes());
            d.extend_from_slice(&n.to_le_bytes());
        }
        record(&mut out, &h, &d);
    }
    let header = bag_header(
        index_pos,
        spec.conns.len() as u32,
        infos.len() as u32,
        spec.rosbags_padding,
    );
    out[13..13 + header.len()].copy_from_slice(&header);
    out
}

/// A deterministic demo: `n` messages on a few connections (two sharing a
/// topic), some at time 0 and some out of order, payloads of varied sizes.
pub fn demo(n: usize, compression: Compression) -> Spec {
    let conns = vec![
        Conn::new(0, "/imu", "sensor_msgs/Imu"),
        Conn::new(1, "/chatter", "std_msgs/String"),
        Conn::new(2, "/chatter", "std_msgs/String"),
        Conn::new(5, "/camera", "sensor_msgs/CompressedImage"),
    ];
    let mut seed = 0x2545_f491_4f6c_dd1du64;
    let mut rnd = move || {
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        seed
    };
    let mut messages = Vec::new();
    let mut t = 1_700_000_000_000_000_000u64;
    for i in 0..n {
        t += rnd() % 20_000_000;
        let conn = [0, 0, 0, 1, 2, 5][(rnd() % 6) as usize];
        let time = match i {
            0 => 0,
            _ if rnd() % 10 == 0 => t - rnd() % 50_000_000,
            _ => t,
        };
        let len = match conn {
            5 => 1000 + (rnd() % 6000) as usize,
            1 | 2 => (rnd() % 40) as usize,
            _ => 300,
        };
        let data: Vec<u8> = (0..len).map(|_| (rnd() % 7) as u8).collect();
        messages.push((conn, time, data));
    }
    let mut spec = Spec::new(conns, messages);
    spec.compression = compression;
    spec.chunk_threshold = 32 << 10;
    spec
}
