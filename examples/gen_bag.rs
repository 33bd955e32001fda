//! Writes a deterministic ROS1 bag (format 2.0) like a small robot recording,
//! for benchmarks and manual testing.
//!
//! ```text
//! cargo run --release --example gen_bag -- OUT.bag [--compression none|bz2|lz4] [--seconds 367] [--chunk-size 786432] [--image-bytes 50000]
//! ```
//!
//! Content (the layout of the benchmark described in the ROS bag notes):
//! `/imu` sensor_msgs/Imu at 200 Hz, `/odom` nav_msgs/Odometry at 50 Hz, `/tf`
//! tf2_msgs/TFMessage at 50 Hz (two transforms), `/camera/image/compressed`
//! sensor_msgs/CompressedImage at 10 Hz with ~50 kB of incompressible "JPEG"
//! bytes, `/chatter` std_msgs/String at 2 Hz from two publishers (two
//! connections, one topic), and one latched `/tf_static`. With the default 367 s
//! that is 114,572 messages and about 200 MB.
//!
//! The writer behaves like ROS's C++ `rosbag record`: the bag header record is
//! padded so that header + data = 4096 bytes; a connection record goes into the
//! chunk of the connection's first message; a chunk closes once its
//! uncompressed size reaches the threshold (ROS default 768 KiB); index-data
//! records (ordered by connection id) follow each chunk; the index section
//! (connections, then chunk infos) ends the file. `lz4` chunks are LZ4 frames
//! like `roslz4` writes them (independent 1 MiB blocks, content checksum);
//! `bz2` chunks are level-9 bzip2 streams.
//!
//! `--image-bytes` sets the camera images' mean size (default 50,000). The
//! small test file `tests/data/demo.bag` (103,573 bytes, 17 lz4 chunks, 625
//! messages over 2 s) is written by `tests/data/regenerate.sh` with
//! `--compression lz4 --seconds 2 --chunk-size 16384 --image-bytes 1000`.

use std::collections::BTreeMap;
use std::fs::File;
use std::io::{BufWriter, Seek, SeekFrom, Write};
use std::process::ExitCode;

const HEADER_DEF: &str = "uint32 seq\ntime stamp\nstring frame_id\n";
const SEP: &str =
    "================================================================================\n";

struct Conn {
    id: u32,
    topic: &'static str,
    msg_type: &'static str,
    md5sum: &'static str,
    definition: String,
    callerid: &'static str,
    latching: bool,
}

fn deps(top: &str, sections: &[(&str, &str)]) -> String {
    let mut s = top.to_string();
    for (name, text) in sections {
        s.push_str(SEP);
        s.push_str(&format!("MSG: {name}\n{text}"));
    }
    s
}

fn connections() -> Vec<Conn> {
    let vector3 = "float64 x\nfloat64 y\nfloat64 z\n";
    let quaternion = "float64 x\nfloat64 y\nfloat64 z\nfloat64 w\n";
    let transform_stamped = deps(
        "Header header\nstring child_frame_id\nTransform transform\n",
        &[
            ("std_msgs/Header", HEADER_DEF),
            (
                "geometry_msgs/Transform",
                "Vector3 translation\nQuaternion rotation\n",
            ),
            ("geometry_msgs/Vector3", vector3),
            ("geometry_msgs/Quaternion", quaternion),
        ],
    );
    let tf = format!(
        "geometry_msgs/TransformStamped[] transforms\n{SEP}MSG: geometry_msgs/TransformStamped\n{transform_stamped}"
    );
    vec![
        Conn {
            id: 0,
            topic: "/tf_static",
            msg_type: "tf2_msgs/TFMessage",
            md5sum: "94810edda583a504dfda3829e70d7eec",
            definition: tf.clone(),
            callerid: "/static_transform_publisher",
            latching: true,
        },
        Conn {
            id: 1,
            topic: "/imu",
            msg_type: "sensor_msgs/Imu",
            md5sum: "6a62c6daae103f4ff57a132d6f95cec2",
            definition: deps(
                "Header header\n\ngeometry_msgs/Quaternion orientation\nfloat64[9] orientation_covariance\n\n\
                 geometry_msgs/Vector3 angular_velocity\nfloat64[9] angular_velocity_covariance\n\n\
                 geometry_msgs/Vector3 linear_acceleration\nfloat64[9] linear_acceleration_covariance\n",
                &[
                    ("std_msgs/Header", HEADER_DEF),
                    ("geometry_msgs/Quaternion", quaternion),
                    ("geometry_msgs/Vector3", vector3),
                ],
            ),
            callerid: "/imu_driver",
            latching: false,
        },
        Conn {
            id: 2,
            topic: "/odom",
            msg_type: "nav_msgs/Odometry",
            md5sum: "cd5e73d190d741a2f92e81eda573aca7",
            definition: deps(
                "Header header\nstring child_frame_id\ngeometry_msgs/PoseWithCovariance pose\n\
                 geometry_msgs/TwistWithCovariance twist\n",
                &[
                    ("std_msgs/Header", HEADER_DEF),
                    (
                        "geometry_msgs/PoseWithCovariance",
                        "Pose pose\nfloat64[36] covariance\n",
                    ),
                    (
                        "geometry_msgs/Pose",
                        "Point position\nQuaternion orientation\n",
                    ),
                    ("geometry_msgs/Point", vector3),
                    ("geometry_msgs/Quaternion", quaternion),
                    (
                        "geometry_msgs/TwistWithCovariance",
                        "Twist twist\nfloat64[36] covariance\n",
                    ),
                    ("geometry_msgs/Twist", "Vector3  linear\nVector3  angular\n"),
                    ("geometry_msgs/Vector3", vector3),
                ],
            ),
            callerid: "/odometry",
            latching: false,
        },
        Conn {
            id: 3,
            topic: "/tf",
            msg_type: "tf2_msgs/TFMessage",
            md5sum: "94810edda583a504dfda3829e70d7eec",
            definition: tf,
            callerid: "/robot_state_publisher",
            latching: false,
        },
        Conn {
            id: 4,
            topic: "/camera/image/compressed",
            msg_type: "sensor_msgs/CompressedImage",
            md5sum: "8f7a12909da2c9d3332d540a0977563f",
            definition: deps(
                "Header header\nstring format\nuint8[] data\n",
                &[("std_msgs/Header", HEADER_DEF)],
            ),
            callerid: "/camera",
            latching: false,
        },
        Conn {
            id: 5,
            topic: "/chatter",
            msg_type: "std_msgs/String",
            md5sum: "992ce8a1687cec8c8bd883ec73ca41d1",
            definition: "string data\n".into(),
            callerid: "/talker_1",
            latching: false,
        },
        Conn {
            id: 6,
            topic: "/chatter",
            msg_type: "std_msgs/String",
            md5sum: "992ce8a1687cec8c8bd883ec73ca41d1",
            definition: "string data\n".into(),
            callerid: "/talker_2",
            latching: false,
        },
    ]
}

/// A small deterministic PRNG (xorshift64*).
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }
    fn unit(&mut self) -> f64 {
        (self.next() >> 11) as f64 / (1u64 << 53) as f64
    }
}

/// ROS1 serialization helpers.
#[derive(Default)]
struct Ser(Vec<u8>);

impl Ser {
    fn u32(&mut self, v: u32) -> &mut Self {
        self.0.extend_from_slice(&v.to_le_bytes());
        self
    }
    fn f64(&mut self, v: f64) -> &mut Self {
        self.0.extend_from_slice(&v.to_le_bytes());
        self
    }
    fn string(&mut self, s: &str) -> &mut Self {
        self.u32(s.len() as u32);
        self.0.extend_from_slice(s.as_bytes());
        self
    }
    fn header(&mut self, seq: u32, t: u64, frame: &str) -> &mut Self {
        self.u32(seq)
            .u32((t / 1_000_000_000) as u32)
            .u32((t % 1_000_000_000) as u32)
            .string(frame)
    }
    fn transform(&mut self, seq: u32, t: u64, parent: &str, child: &str, x: f64) -> &mut Self {
        self.header(seq, t, parent).string(child);
        self.f64(x).f64(0.5 * x).f64(0.0);
        self.f64(0.0)
            .f64(0.0)
            .f64((x * 0.1).sin())
            .f64((x * 0.1).cos())
    }
}

/// One message of connection `conn`; camera images are about `image_bytes` long
/// (uniform in ±10%).
fn payload(conn: u32, seq: u32, t: u64, rng: &mut Rng, image_bytes: usize) -> Vec<u8> {
    let s = t as f64 * 1e-9;
    let mut m = Ser::default();
    match conn {
        0 => {
            m.u32(1).transform(seq, t, "base_link", "camera_link", 0.2);
        }
        1 => {
            m.header(seq, t, "imu_link");
            m.f64(0.0)
                .f64(0.0)
                .f64((s * 0.05).sin())
                .f64((s * 0.05).cos());
            for i in 0..9 {
                m.f64(if i % 4 == 0 { 1e-3 } else { 0.0 });
            }
            for _ in 0..3 {
                m.f64(rng.unit() * 0.02 - 0.01);
            }
            for i in 0..9 {
                m.f64(if i % 4 == 0 { 1e-4 } else { 0.0 });
            }
            m.f64(rng.unit() * 0.2)
                .f64(rng.unit() * 0.2)
                .f64(9.81 + rng.unit() * 0.05);
            for i in 0..9 {
                m.f64(if i % 4 == 0 { 1e-2 } else { 0.0 });
            }
        }
        2 => {
            m.header(seq, t, "odom").string("base_link");
            m.f64(s * 0.5).f64((s * 0.1).sin()).f64(0.0);
            m.f64(0.0)
                .f64(0.0)
                .f64((s * 0.05).sin())
                .f64((s * 0.05).cos());
            for i in 0..36 {
                m.f64(if i % 7 == 0 { 0.01 } else { 0.0 });
            }
            m.f64(0.5 + rng.unit() * 0.01).f64(0.0).f64(0.0);
            m.f64(0.0).f64(0.0).f64(rng.unit() * 0.1);
            for i in 0..36 {
                m.f64(if i % 7 == 0 { 0.02 } else { 0.0 });
            }
        }
        3 => {
            m.u32(2);
            m.transform(seq, t, "odom", "base_link", s * 0.5);
            m.transform(seq, t, "map", "odom", 0.01 * (s * 0.01).sin());
        }
        4 => {
            m.header(seq, t, "camera_link").string("jpeg");
            let spread = (image_bytes / 5).max(1);
            let n = image_bytes - image_bytes / 10 + (rng.next() % spread as u64) as usize;
            m.u32(n as u32);
            // Incompressible bytes, like JPEG data.
            let end = m.0.len() + n;
            while m.0.len() + 8 <= end {
                m.0.extend_from_slice(&rng.next().to_le_bytes());
            }
            while m.0.len() < end {
                m.0.push(rng.next() as u8);
            }
        }
        _ => {
            m.string(&format!("hello world {seq}"));
        }
    }
    m.0
}

fn field(out: &mut Vec<u8>, name: &str, value: &[u8]) {
    out.extend_from_slice(&((name.len() + 1 + value.len()) as u32).to_le_bytes());
    out.extend_from_slice(name.as_bytes());
    out.push(b'=');
    out.extend_from_slice(value);
}

fn record(out: &mut impl Write, header: &[u8], data: &[u8]) -> std::io::Result<()> {
    out.write_all(&(header.len() as u32).to_le_bytes())?;
    out.write_all(header)?;
    out.write_all(&(data.len() as u32).to_le_bytes())?;
    out.write_all(data)
}

fn time_bytes(t: u64) -> [u8; 8] {
    let mut b = [0u8; 8];
    b[..4].copy_from_slice(&((t / 1_000_000_000) as u32).to_le_bytes());
    b[4..].copy_from_slice(&((t % 1_000_000_000) as u32).to_le_bytes());
    b
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
    field(&mut d, "callerid", c.callerid.as_bytes());
    field(&mut d, "latching", if c.latching { b"1" } else { b"0" });
    record(out, &h, &d).expect("writing to memory");
}

fn bag_header(index_pos: u64, conn_count: u32, chunk_count: u32) -> Vec<u8> {
    let mut h = Vec::new();
    field(&mut h, "op", &[3]);
    field(&mut h, "index_pos", &index_pos.to_le_bytes());
    field(&mut h, "conn_count", &conn_count.to_le_bytes());
    field(&mut h, "chunk_count", &chunk_count.to_le_bytes());
    let mut out = Vec::new();
    record(&mut out, &h, &vec![b' '; 4096 - h.len()]).expect("writing to memory");
    out
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Codec {
    None,
    Bz2,
    Lz4,
}

fn compress(codec: Codec, data: &[u8]) -> (&'static str, Vec<u8>) {
    match codec {
        Codec::None => ("none", data.to_vec()),
        Codec::Bz2 => {
            let mut e = bzip2::write::BzEncoder::new(Vec::new(), bzip2::Compression::best());
            e.write_all(data).expect("bz2");
            ("bz2", e.finish().expect("bz2"))
        }
        Codec::Lz4 => {
            use lz4_flex::frame::{BlockMode, BlockSize, FrameEncoder, FrameInfo};
            let info = FrameInfo::new()
                .block_mode(BlockMode::Independent)
                .block_size(BlockSize::Max1MB)
                .content_checksum(true);
            let mut e = FrameEncoder::with_frame_info(info, Vec::new());
            e.write_all(data).expect("lz4");
            ("lz4", e.finish().expect("lz4"))
        }
    }
}

struct ChunkInfo {
    pos: u64,
    start: u64,
    end: u64,
    counts: BTreeMap<u32, u32>,
}

struct BagWriter {
    out: BufWriter<File>,
    pos: u64,
    codec: Codec,
    threshold: usize,
    chunk: Vec<u8>,
    index: BTreeMap<u32, Vec<(u64, u32)>>,
    infos: Vec<ChunkInfo>,
    written: Vec<bool>,
}

impl BagWriter {
    fn write_raw(&mut self, bytes: &[u8]) -> std::io::Result<()> {
        self.out.write_all(bytes)?;
        self.pos += bytes.len() as u64;
        Ok(())
    }

    fn message(&mut self, conn: &Conn, t: u64, data: &[u8]) -> std::io::Result<()> {
        let slot = conn.id as usize;
        if !self.written[slot] {
            connection_record(&mut self.chunk, conn);
            self.written[slot] = true;
        }
        let offset = self.chunk.len() as u32;
        let mut h = Vec::with_capacity(40);
        field(&mut h, "op", &[2]);
        field(&mut h, "conn", &conn.id.to_le_bytes());
        field(&mut h, "time", &time_bytes(t));
        record(&mut self.chunk, &h, data)?;
        self.index.entry(conn.id).or_default().push((t, offset));
        if self.chunk.len() >= self.threshold {
            self.flush_chunk()?;
        }
        Ok(())
    }

    fn flush_chunk(&mut self) -> std::io::Result<()> {
        if self.chunk.is_empty() {
            return Ok(());
        }
        let pos = self.pos;
        let (name, data) = compress(self.codec, &self.chunk);
        let mut h = Vec::new();
        field(&mut h, "op", &[5]);
        field(&mut h, "compression", name.as_bytes());
        field(&mut h, "size", &(self.chunk.len() as u32).to_le_bytes());
        let mut rec = Vec::with_capacity(data.len() + 64);
        record(&mut rec, &h, &data)?;
        self.write_raw(&rec)?;
        let (mut lo, mut hi) = (u64::MAX, 0);
        let mut counts = BTreeMap::new();
        let index = std::mem::take(&mut self.index);
        for (conn, mut entries) in index {
            entries.sort_by_key(|e| e.0);
            let mut h = Vec::new();
            field(&mut h, "op", &[4]);
            field(&mut h, "ver", &1u32.to_le_bytes());
            field(&mut h, "conn", &conn.to_le_bytes());
            field(&mut h, "count", &(entries.len() as u32).to_le_bytes());
            let mut d = Vec::with_capacity(entries.len() * 12);
            for (t, off) in &entries {
                d.extend_from_slice(&time_bytes(*t));
                d.extend_from_slice(&off.to_le_bytes());
                lo = lo.min(*t);
                hi = hi.max(*t);
            }
            let mut rec = Vec::new();
            record(&mut rec, &h, &d)?;
            self.write_raw(&rec)?;
            counts.insert(conn, entries.len() as u32);
        }
        self.infos.push(ChunkInfo {
            pos,
            start: lo,
            end: hi,
            counts,
        });
        self.chunk.clear();
        Ok(())
    }

    fn finish(mut self, conns: &[Conn]) -> std::io::Result<(u64, usize)> {
        self.flush_chunk()?;
        let index_pos = self.pos;
        for c in conns {
            let mut rec = Vec::new();
            connection_record(&mut rec, c);
            self.write_raw(&rec)?;
        }
        let infos = std::mem::take(&mut self.infos);
        for info in &infos {
            let mut h = Vec::new();
            field(&mut h, "op", &[6]);
            field(&mut h, "ver", &1u32.to_le_bytes());
            field(&mut h, "chunk_pos", &info.pos.to_le_bytes());
            field(&mut h, "start_time", &time_bytes(info.start));
            field(&mut h, "end_time", &time_bytes(info.end));
            field(&mut h, "count", &(info.counts.len() as u32).to_le_bytes());
            let mut d = Vec::new();
            for (c, n) in &info.counts {
                d.extend_from_slice(&c.to_le_bytes());
                d.extend_from_slice(&n.to_le_bytes());
            }
            let mut rec = Vec::new();
            record(&mut rec, &h, &d)?;
            self.write_raw(&rec)?;
        }
        let size = self.pos;
        let mut file = self.out.into_inner().map_err(|e| e.into_error())?;
        file.seek(SeekFrom::Start(13))?;
        file.write_all(&bag_header(
            index_pos,
            conns.len() as u32,
            infos.len() as u32,
        ))?;
        file.sync_all()?;
        Ok((size, infos.len()))
    }
}

fn main() -> ExitCode {
    let mut args = std::env::args().skip(1);
    let mut out = None;
    let mut codec = Codec::Lz4;
    let mut seconds = 367u64;
    let mut threshold = 768 << 10;
    let mut image_bytes = 50_000usize;
    while let Some(a) = args.next() {
        match a.as_str() {
            "--compression" => {
                codec = match args.next().as_deref() {
                    Some("none") => Codec::None,
                    Some("bz2") => Codec::Bz2,
                    Some("lz4") => Codec::Lz4,
                    other => {
                        eprintln!("unknown compression {other:?} (none, bz2, lz4)");
                        return ExitCode::FAILURE;
                    }
                }
            }
            "--seconds" => seconds = args.next().and_then(|s| s.parse().ok()).unwrap_or(seconds),
            "--chunk-size" => {
                threshold = args
                    .next()
                    .and_then(|s| s.parse().ok())
                    .unwrap_or(threshold)
            }
            "--image-bytes" => {
                image_bytes = args
                    .next()
                    .and_then(|s| s.parse().ok())
                    .unwrap_or(image_bytes)
            }
            "-h" | "--help" => {
                eprintln!(
                    "usage: gen_bag OUT.bag [--compression none|bz2|lz4] [--seconds 367] [--chunk-size 786432] [--image-bytes 50000]"
                );
                return ExitCode::SUCCESS;
            }
            _ => out = Some(a),
        }
    }
    let Some(out) = out else {
        eprintln!(
            "usage: gen_bag OUT.bag [--compression none|bz2|lz4] [--seconds 367] [--chunk-size 786432] [--image-bytes 50000]"
        );
        return ExitCode::FAILURE;
    };
    match generate(&out, codec, seconds, threshold, image_bytes) {
        Ok((size, chunks, messages)) => {
            println!("{out}: {size} bytes, {chunks} chunks, {messages} messages");
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("{out}: {e}");
            ExitCode::FAILURE
        }
    }
}

fn generate(
    out: &str,
    codec: Codec,
    seconds: u64,
    threshold: usize,
    image_bytes: usize,
) -> std::io::Result<(u64, usize, u64)> {
    let conns = connections();
    let file = File::create(out)?;
    let mut w = BagWriter {
        out: BufWriter::with_capacity(1 << 20, file),
        pos: 0,
        codec,
        threshold,
        chunk: Vec::with_capacity(threshold + (1 << 16)),
        index: BTreeMap::new(),
        infos: Vec::new(),
        written: vec![false; conns.len()],
    };
    w.write_raw(b"#ROSBAG V2.0\n")?;
    w.write_raw(&bag_header(0, 0, 0))?;
    let start = 1_700_000_000_000_000_000u64;
    let mut rng = Rng(0x9e37_79b9_7f4a_7c15);
    let mut seqs = vec![0u32; conns.len()];
    let mut messages = 0u64;
    let mut emit = |w: &mut BagWriter, conn: usize, t: u64, rng: &mut Rng| -> std::io::Result<()> {
        let data = payload(conns[conn].id, seqs[conn], t, rng, image_bytes);
        seqs[conn] += 1;
        messages += 1;
        w.message(&conns[conn], t, &data)
    };
    // Time steps of 1 ms; each topic publishes on its period (with a little jitter
    // in the record time, as a recorder receives messages).
    emit(&mut w, 0, start, &mut rng)?;
    let end_ms = seconds * 1000;
    for ms in 0..end_ms {
        let t = start + ms * 1_000_000;
        let jitter = |rng: &mut Rng| rng.next() % 200_000;
        if ms % 5 == 0 {
            let j = jitter(&mut rng);
            emit(&mut w, 1, t + j, &mut rng)?;
        }
        if ms % 20 == 3 {
            let j = jitter(&mut rng);
            emit(&mut w, 2, t + j, &mut rng)?;
            let j = jitter(&mut rng);
            emit(&mut w, 3, t + j, &mut rng)?;
        }
        if ms % 100 == 7 {
            let j = jitter(&mut rng);
            emit(&mut w, 4, t + j, &mut rng)?;
        }
        if ms % 500 == 11 {
            let conn = if (ms / 500) % 2 == 0 { 5 } else { 6 };
            emit(&mut w, conn, t, &mut rng)?;
        }
    }
    let (size, chunks) = w.finish(&conns)?;
    Ok((size, chunks, messages))
}
