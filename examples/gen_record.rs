//! Writes a deterministic Apollo Cyber RT `.record` file for benchmarks, laid
//! out like `cyber_recorder`'s output: the header slot rewritten at close,
//! CHANNEL sections (one declared late, between chunks), CHUNK_HEADER +
//! CHUNK_BODY pairs flushed when a message is more than the chunk interval
//! after the chunk's begin time, and the INDEX (with ChannelCache copies of
//! the ProtoDesc trees) at the end. Payloads are real protobuf messages whose
//! schemas are in the ProtoDesc trees (shared files repeated, as Apollo does),
//! so they decode with `logsql_readers::formats::apollo::descriptor_pool`.
//!
//! ```text
//! cargo run --example gen_record -- OUT.record [--size-mb 200] [--size-kb N] [--chunk-interval-ms 500] [--seed 1]
//!     [--image-bytes 60000] [--lidar-points 4000]
//! ```
//!
//! Channels (per second of recording, about 2 MB/s):
//! - `/apollo/localization/pose` (`apollo.localization.LocalizationEstimate`), 100 Hz, ~130 B;
//! - `/apollo/canbus/chassis` (`apollo.canbus.Chassis`), 100 Hz, ~50 B;
//! - `/apollo/perception/obstacles` (`apollo.perception.PerceptionObstacles`), 10 Hz, 1-4 KB, declared 2.5 s in;
//! - `/apollo/sensor/camera/front_6mm/image/compressed` (`apollo.drivers.CompressedImage`), 15 Hz, 60 KB;
//! - `/apollo/sensor/lidar128/compensator/PointCloud2` (`apollo.drivers.PointCloud`), 10 Hz, 4000 points (~110 KB).
//!
//! The default 200 MB at a 500 ms chunk interval gives about 100 s of
//! recording and 200 chunks. About 1% of messages are written slightly out of
//! time order, as the recorder's callback threads do.
//!
//! `--size-kb` (KiB, instead of `--size-mb`), `--image-bytes` and
//! `--lidar-points` make small files: `tests/data/demo.record` (174,109 bytes,
//! 8 chunks, 694 messages over 3.1 s, the obstacles channel declared late) is
//! written by `tests/data/regenerate.sh` with `--size-kb 150 --image-bytes 500
//! --lidar-points 40 --chunk-interval-ms 500`.

use std::fs::File;
use std::io::{BufWriter, Seek, SeekFrom, Write};

use logsql_readers::formats::apollo::proto;
use prost::Message;
use prost_reflect::prost_types::{
    DescriptorProto, FieldDescriptorProto, FileDescriptorProto, field_descriptor_proto::Label,
    field_descriptor_proto::Type,
};

// ---- payload messages (mirroring Apollo's definitions, a subset of fields) ----

#[derive(Clone, PartialEq, Message)]
struct Header {
    #[prost(double, optional, tag = "1")]
    timestamp_sec: Option<f64>,
    #[prost(string, optional, tag = "2")]
    module_name: Option<String>,
    #[prost(uint32, optional, tag = "3")]
    sequence_num: Option<u32>,
}

#[derive(Clone, PartialEq, Message)]
struct Point3D {
    #[prost(double, optional, tag = "1")]
    x: Option<f64>,
    #[prost(double, optional, tag = "2")]
    y: Option<f64>,
    #[prost(double, optional, tag = "3")]
    z: Option<f64>,
}

#[derive(Clone, PartialEq, Message)]
struct Quaternion {
    #[prost(double, optional, tag = "1")]
    qx: Option<f64>,
    #[prost(double, optional, tag = "2")]
    qy: Option<f64>,
    #[prost(double, optional, tag = "3")]
    qz: Option<f64>,
    #[prost(double, optional, tag = "4")]
    qw: Option<f64>,
}

#[derive(Clone, PartialEq, Message)]
struct Pose {
    #[prost(message, optional, tag = "1")]
    position: Option<Point3D>,
    #[prost(message, optional, tag = "2")]
    orientation: Option<Quaternion>,
    #[prost(message, optional, tag = "3")]
    linear_velocity: Option<Point3D>,
    #[prost(double, optional, tag = "6")]
    heading: Option<f64>,
}

#[derive(Clone, PartialEq, Message)]
struct LocalizationEstimate {
    #[prost(message, optional, tag = "1")]
    header: Option<Header>,
    #[prost(message, optional, tag = "2")]
    pose: Option<Pose>,
    #[prost(double, optional, tag = "4")]
    measurement_time: Option<f64>,
}

#[derive(Clone, PartialEq, Message)]
struct Chassis {
    #[prost(bool, optional, tag = "3")]
    engine_started: Option<bool>,
    #[prost(float, optional, tag = "5")]
    speed_mps: Option<f32>,
    #[prost(float, optional, tag = "8")]
    throttle_percentage: Option<f32>,
    #[prost(message, optional, tag = "25")]
    header: Option<Header>,
}

#[derive(Clone, PartialEq, Message)]
struct PerceptionObstacle {
    #[prost(int32, optional, tag = "1")]
    id: Option<i32>,
    #[prost(message, optional, tag = "2")]
    position: Option<Point3D>,
    #[prost(double, optional, tag = "3")]
    theta: Option<f64>,
    #[prost(double, optional, tag = "5")]
    length: Option<f64>,
    #[prost(double, optional, tag = "6")]
    width: Option<f64>,
    #[prost(double, optional, tag = "7")]
    height: Option<f64>,
    #[prost(message, repeated, tag = "8")]
    polygon_point: Vec<Point3D>,
}

#[derive(Clone, PartialEq, Message)]
struct PerceptionObstacles {
    #[prost(message, repeated, tag = "1")]
    perception_obstacle: Vec<PerceptionObstacle>,
    #[prost(message, optional, tag = "2")]
    header: Option<Header>,
}

#[derive(Clone, PartialEq, Message)]
struct CompressedImage {
    #[prost(message, optional, tag = "1")]
    header: Option<Header>,
    #[prost(string, optional, tag = "2")]
    frame_id: Option<String>,
    #[prost(string, optional, tag = "3")]
    format: Option<String>,
    #[prost(bytes = "vec", optional, tag = "4")]
    data: Option<Vec<u8>>,
    #[prost(double, optional, tag = "5")]
    measurement_time: Option<f64>,
}

#[derive(Clone, PartialEq, Message)]
struct PointXyzit {
    #[prost(float, optional, tag = "1")]
    x: Option<f32>,
    #[prost(float, optional, tag = "2")]
    y: Option<f32>,
    #[prost(float, optional, tag = "3")]
    z: Option<f32>,
    #[prost(uint32, optional, tag = "4")]
    intensity: Option<u32>,
    #[prost(uint64, optional, tag = "5")]
    timestamp: Option<u64>,
}

#[derive(Clone, PartialEq, Message)]
struct PointCloud {
    #[prost(message, optional, tag = "1")]
    header: Option<Header>,
    #[prost(string, optional, tag = "2")]
    frame_id: Option<String>,
    #[prost(bool, optional, tag = "3")]
    is_dense: Option<bool>,
    #[prost(message, repeated, tag = "4")]
    point: Vec<PointXyzit>,
    #[prost(double, optional, tag = "5")]
    measurement_time: Option<f64>,
    #[prost(uint32, optional, tag = "6")]
    width: Option<u32>,
    #[prost(uint32, optional, tag = "7")]
    height: Option<u32>,
}

// ---- their schemas, as FileDescriptorProtos ----

fn field(name: &str, number: i32, ty: Type, type_name: Option<&str>) -> FieldDescriptorProto {
    FieldDescriptorProto {
        name: Some(name.into()),
        number: Some(number),
        label: Some(Label::Optional as i32),
        r#type: Some(ty as i32),
        type_name: type_name.map(str::to_string),
        json_name: Some(name.into()),
        ..Default::default()
    }
}

fn repeated(mut f: FieldDescriptorProto) -> FieldDescriptorProto {
    f.label = Some(Label::Repeated as i32);
    f
}

fn message(name: &str, fields: Vec<FieldDescriptorProto>) -> DescriptorProto {
    DescriptorProto {
        name: Some(name.into()),
        field: fields,
        ..Default::default()
    }
}

fn file(name: &str, package: &str, deps: &[&str], messages: Vec<DescriptorProto>) -> Vec<u8> {
    FileDescriptorProto {
        name: Some(name.into()),
        package: Some(package.into()),
        dependency: deps.iter().map(|d| d.to_string()).collect(),
        message_type: messages,
        syntax: Some("proto2".into()),
        ..Default::default()
    }
    .encode_to_vec()
}

const HEADER_PROTO: &str = "modules/common_msgs/basic_msgs/header.proto";
const GEOMETRY_PROTO: &str = "modules/common_msgs/basic_msgs/geometry.proto";

fn header_file() -> proto::ProtoDesc {
    leaf(file(
        HEADER_PROTO,
        "apollo.common",
        &[],
        vec![message(
            "Header",
            vec![
                field("timestamp_sec", 1, Type::Double, None),
                field("module_name", 2, Type::String, None),
                field("sequence_num", 3, Type::Uint32, None),
            ],
        )],
    ))
}

fn geometry_file() -> proto::ProtoDesc {
    let xyz = |name: &str| {
        message(
            name,
            vec![
                field("x", 1, Type::Double, None),
                field("y", 2, Type::Double, None),
                field("z", 3, Type::Double, None),
            ],
        )
    };
    leaf(file(
        GEOMETRY_PROTO,
        "apollo.common",
        &[],
        vec![
            xyz("PointENU"),
            xyz("Point3D"),
            message(
                "Quaternion",
                vec![
                    field("qx", 1, Type::Double, None),
                    field("qy", 2, Type::Double, None),
                    field("qz", 3, Type::Double, None),
                    field("qw", 4, Type::Double, None),
                ],
            ),
        ],
    ))
}

fn leaf(desc: Vec<u8>) -> proto::ProtoDesc {
    proto::ProtoDesc {
        desc: Some(desc.into()),
        dependencies: Vec::new(),
    }
}

fn tree(desc: Vec<u8>, deps: Vec<proto::ProtoDesc>) -> Vec<u8> {
    proto::ProtoDesc {
        desc: Some(desc.into()),
        dependencies: deps,
    }
    .encode_to_vec()
}

const M: Type = Type::Message;

fn schemas() -> Vec<(&'static str, &'static str, Vec<u8>)> {
    let pose_file = file(
        "modules/common_msgs/localization_msgs/pose.proto",
        "apollo.localization",
        &[GEOMETRY_PROTO],
        vec![message(
            "Pose",
            vec![
                field("position", 1, M, Some(".apollo.common.PointENU")),
                field("orientation", 2, M, Some(".apollo.common.Quaternion")),
                field("linear_velocity", 3, M, Some(".apollo.common.Point3D")),
                field("heading", 6, Type::Double, None),
            ],
        )],
    );
    let localization = tree(
        file(
            "modules/common_msgs/localization_msgs/localization.proto",
            "apollo.localization",
            &[
                HEADER_PROTO,
                "modules/common_msgs/localization_msgs/pose.proto",
            ],
            vec![message(
                "LocalizationEstimate",
                vec![
                    field("header", 1, M, Some(".apollo.common.Header")),
                    field("pose", 2, M, Some(".apollo.localization.Pose")),
                    field("measurement_time", 4, Type::Double, None),
                ],
            )],
        ),
        vec![
            header_file(),
            proto::ProtoDesc {
                desc: Some(pose_file.into()),
                dependencies: vec![geometry_file()],
            },
        ],
    );
    let chassis = tree(
        file(
            "modules/common_msgs/chassis_msgs/chassis.proto",
            "apollo.canbus",
            &[HEADER_PROTO],
            vec![message(
                "Chassis",
                vec![
                    field("engine_started", 3, Type::Bool, None),
                    field("speed_mps", 5, Type::Float, None),
                    field("throttle_percentage", 8, Type::Float, None),
                    field("header", 25, M, Some(".apollo.common.Header")),
                ],
            )],
        ),
        vec![header_file()],
    );
    let obstacles = tree(
        file(
            "modules/common_msgs/perception_msgs/perception_obstacle.proto",
            "apollo.perception",
            &[GEOMETRY_PROTO, HEADER_PROTO],
            vec![
                message(
                    "PerceptionObstacle",
                    vec![
                        field("id", 1, Type::Int32, None),
                        field("position", 2, M, Some(".apollo.common.Point3D")),
                        field("theta", 3, Type::Double, None),
                        field("length", 5, Type::Double, None),
                        field("width", 6, Type::Double, None),
                        field("height", 7, Type::Double, None),
                        repeated(field("polygon_point", 8, M, Some(".apollo.common.Point3D"))),
                    ],
                ),
                message(
                    "PerceptionObstacles",
                    vec![
                        repeated(field(
                            "perception_obstacle",
                            1,
                            M,
                            Some(".apollo.perception.PerceptionObstacle"),
                        )),
                        field("header", 2, M, Some(".apollo.common.Header")),
                    ],
                ),
            ],
        ),
        vec![geometry_file(), header_file()],
    );
    let image = tree(
        file(
            "modules/common_msgs/sensor_msgs/sensor_image.proto",
            "apollo.drivers",
            &[HEADER_PROTO],
            vec![message(
                "CompressedImage",
                vec![
                    field("header", 1, M, Some(".apollo.common.Header")),
                    field("frame_id", 2, Type::String, None),
                    field("format", 3, Type::String, None),
                    field("data", 4, Type::Bytes, None),
                    field("measurement_time", 5, Type::Double, None),
                ],
            )],
        ),
        vec![header_file()],
    );
    let cloud = tree(
        file(
            "modules/common_msgs/sensor_msgs/pointcloud.proto",
            "apollo.drivers",
            &[HEADER_PROTO],
            vec![
                message(
                    "PointXYZIT",
                    vec![
                        field("x", 1, Type::Float, None),
                        field("y", 2, Type::Float, None),
                        field("z", 3, Type::Float, None),
                        field("intensity", 4, Type::Uint32, None),
                        field("timestamp", 5, Type::Uint64, None),
                    ],
                ),
                message(
                    "PointCloud",
                    vec![
                        field("header", 1, M, Some(".apollo.common.Header")),
                        field("frame_id", 2, Type::String, None),
                        field("is_dense", 3, Type::Bool, None),
                        repeated(field("point", 4, M, Some(".apollo.drivers.PointXYZIT"))),
                        field("measurement_time", 5, Type::Double, None),
                        field("width", 6, Type::Uint32, None),
                        field("height", 7, Type::Uint32, None),
                    ],
                ),
            ],
        ),
        vec![header_file()],
    );
    vec![
        (
            "/apollo/localization/pose",
            "apollo.localization.LocalizationEstimate",
            localization,
        ),
        ("/apollo/canbus/chassis", "apollo.canbus.Chassis", chassis),
        (
            "/apollo/perception/obstacles",
            "apollo.perception.PerceptionObstacles",
            obstacles,
        ),
        (
            "/apollo/sensor/camera/front_6mm/image/compressed",
            "apollo.drivers.CompressedImage",
            image,
        ),
        (
            "/apollo/sensor/lidar128/compensator/PointCloud2",
            "apollo.drivers.PointCloud",
            cloud,
        ),
    ]
}

// ---- the writer ----

/// xorshift64*: deterministic, no dependency.
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

struct Writer {
    out: BufWriter<File>,
    pos: u64,
    index: Vec<proto::SingleIndex>,
    chunk: Vec<proto::SingleMessage>,
    chunk_begin: u64,
    chunk_end: u64,
    chunk_raw: u64,
    header: proto::Header,
    counts: Vec<u64>,
}

impl Writer {
    fn section(&mut self, kind: u32, body: &[u8]) -> std::io::Result<u64> {
        let at = self.pos;
        let mut head = [0u8; 16];
        head[..4].copy_from_slice(&kind.to_le_bytes());
        head[8..].copy_from_slice(&(body.len() as i64).to_le_bytes());
        self.out.write_all(&head)?;
        self.out.write_all(body)?;
        self.pos += 16 + body.len() as u64;
        Ok(at)
    }

    fn write_header(&mut self) -> std::io::Result<()> {
        let bytes = self.header.encode_to_vec();
        let mut slot = vec![0u8; 2048];
        slot[..bytes.len()].copy_from_slice(&bytes);
        slot[bytes.len()] = b'0';
        let mut head = [0u8; 16];
        head[8..].copy_from_slice(&(bytes.len() as i64).to_le_bytes());
        self.out.write_all(&head)?;
        self.out.write_all(&slot)
    }

    fn channel(&mut self, name: &str, ty: &str, desc: &[u8]) -> std::io::Result<()> {
        let body = proto::Channel {
            name: Some(name.into()),
            message_type: Some(ty.into()),
            proto_desc: Some(desc.to_vec().into()),
        }
        .encode_to_vec();
        let at = self.section(4, &body)?;
        self.index.push(proto::SingleIndex {
            r#type: Some(4),
            position: Some(at),
            cache: Some(proto::single_index::Cache::ChannelCache(
                proto::ChannelCache {
                    message_number: Some(0),
                    name: Some(name.into()),
                    message_type: Some(ty.into()),
                    proto_desc: Some(desc.to_vec().into()),
                },
            )),
        });
        self.header.channel_number = Some(self.header.channel_number() + 1);
        Ok(())
    }

    fn add(&mut self, name: &str, time: u64, content: Vec<u8>) -> std::io::Result<()> {
        if self.chunk_begin == 0 || time < self.chunk_begin {
            self.chunk_begin = time;
        }
        self.chunk_end = self.chunk_end.max(time);
        self.chunk_raw += content.len() as u64;
        self.chunk.push(proto::SingleMessage {
            channel_name: Some(name.into()),
            time: Some(time),
            content: Some(content.into()),
        });
        if time.wrapping_sub(self.chunk_begin) > self.header.chunk_interval() {
            self.flush()?;
        }
        Ok(())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        if self.chunk.is_empty() {
            return Ok(());
        }
        let n = self.chunk.len() as u64;
        let head = proto::ChunkHeader {
            begin_time: Some(self.chunk_begin),
            end_time: Some(self.chunk_end),
            message_number: Some(n),
            raw_size: Some(self.chunk_raw),
        };
        let at = self.section(1, &head.encode_to_vec())?;
        self.index.push(proto::SingleIndex {
            r#type: Some(1),
            position: Some(at),
            cache: Some(proto::single_index::Cache::ChunkHeaderCache(
                proto::ChunkHeaderCache {
                    message_number: Some(n),
                    begin_time: Some(self.chunk_begin),
                    end_time: Some(self.chunk_end),
                    raw_size: Some(self.chunk_raw),
                },
            )),
        });
        let body = proto::ChunkBody {
            messages: std::mem::take(&mut self.chunk),
        }
        .encode_to_vec();
        let at = self.section(2, &body)?;
        self.index.push(proto::SingleIndex {
            r#type: Some(2),
            position: Some(at),
            cache: Some(proto::single_index::Cache::ChunkBodyCache(
                proto::ChunkBodyCache {
                    message_number: Some(n),
                },
            )),
        });
        if self.header.begin_time() == 0 {
            self.header.begin_time = Some(self.chunk_begin);
        }
        self.header.end_time = Some(self.chunk_end);
        self.header.chunk_number = Some(self.header.chunk_number() + 1);
        self.header.message_number = Some(self.header.message_number() + n);
        self.chunk_begin = 0;
        self.chunk_end = 0;
        self.chunk_raw = 0;
        Ok(())
    }

    fn close(mut self) -> std::io::Result<proto::Header> {
        self.flush()?;
        for e in &mut self.index {
            if let Some(proto::single_index::Cache::ChannelCache(c)) = &mut e.cache
                && let Some(i) = CHANNEL_NAMES
                    .iter()
                    .position(|n| Some(*n) == c.name.as_deref())
            {
                c.message_number = Some(self.counts[i]);
            }
        }
        let index = proto::Index {
            indexes: std::mem::take(&mut self.index),
        }
        .encode_to_vec();
        let at = self.section(3, &index)?;
        self.header.index_position = Some(at);
        self.header.size = Some(self.pos);
        self.header.is_complete = Some(true);
        self.out.seek(SeekFrom::Start(0))?;
        self.write_header()?;
        self.out.flush()?;
        Ok(self.header)
    }
}

const CHANNEL_NAMES: [&str; 5] = [
    "/apollo/localization/pose",
    "/apollo/canbus/chassis",
    "/apollo/perception/obstacles",
    "/apollo/sensor/camera/front_6mm/image/compressed",
    "/apollo/sensor/lidar128/compensator/PointCloud2",
];

fn header(t: u64, module: &str, seq: u32) -> Option<Header> {
    Some(Header {
        timestamp_sec: Some(t as f64 / 1e9),
        module_name: Some(module.into()),
        sequence_num: Some(seq),
    })
}

fn p3(x: f64, y: f64, z: f64) -> Option<Point3D> {
    Some(Point3D {
        x: Some(x),
        y: Some(y),
        z: Some(z),
    })
}

fn main() -> std::io::Result<()> {
    let mut args = std::env::args().skip(1);
    let mut out_path = None;
    let (mut size_mb, mut interval_ms, mut seed) = (200u64, 500u64, 1u64);
    let (mut size_kb, mut image_bytes, mut lidar_points) = (None, 60_000u64, 4000u64);
    while let Some(a) = args.next() {
        let mut value = |name: &str| -> u64 {
            args.next()
                .and_then(|v| v.parse().ok())
                .unwrap_or_else(|| panic!("{name} needs a number"))
        };
        match a.as_str() {
            "--size-mb" => size_mb = value("--size-mb"),
            "--size-kb" => size_kb = Some(value("--size-kb")),
            "--image-bytes" => image_bytes = value("--image-bytes"),
            "--lidar-points" => lidar_points = value("--lidar-points"),
            "--chunk-interval-ms" => interval_ms = value("--chunk-interval-ms"),
            "--seed" => seed = value("--seed"),
            "-h" | "--help" => {
                println!(
                    "usage: gen_record OUT.record [--size-mb 200] [--size-kb N] [--chunk-interval-ms 500] [--seed 1] [--image-bytes 60000] [--lidar-points 4000]"
                );
                return Ok(());
            }
            _ => out_path = Some(a),
        }
    }
    let out_path = out_path.unwrap_or_else(|| "bench.record".to_string());
    let mut w = Writer {
        out: BufWriter::with_capacity(1 << 20, File::create(&out_path)?),
        pos: 2064,
        index: Vec::new(),
        chunk: Vec::new(),
        chunk_begin: 0,
        chunk_end: 0,
        chunk_raw: 0,
        header: proto::Header {
            major_version: Some(1),
            minor_version: Some(0),
            compress: Some(0),
            chunk_interval: Some(interval_ms * 1_000_000),
            segment_interval: Some(0),
            index_position: Some(0),
            chunk_number: Some(0),
            channel_number: Some(0),
            begin_time: Some(0),
            end_time: Some(0),
            message_number: Some(0),
            size: Some(0),
            is_complete: Some(false),
            chunk_raw_size: Some(200 << 20),
            segment_raw_size: Some(0),
        },
        counts: vec![0; 5],
    };
    w.write_header()?;
    let schemas = schemas();
    for (name, ty, desc) in schemas.iter().filter(|s| !s.0.contains("obstacles")) {
        w.channel(name, ty, desc)?;
    }
    let mut rng = Rng(seed.wrapping_mul(0x9e37_79b9_7f4a_7c15) | 1);
    let start: u64 = 1_700_000_000_000_000_000;
    // `--size-kb` (KiB) makes files smaller than 1 MiB, like the test data.
    let limit = size_kb.map_or(size_mb << 20, |kb| kb << 10);
    let mut image = vec![0u8; image_bytes as usize];
    let mut held: Option<(usize, u64, Vec<u8>)> = None;
    let mut tick: u64 = 0;
    let mut obstacles_declared = false;
    while w.pos < limit {
        let t0 = start + tick * 10_000_000;
        let secs = (t0 - start) as f64 / 1e9;
        let mut batch: Vec<(usize, u64, Vec<u8>)> = Vec::new();
        let jitter = |r: &mut Rng| r.next() % 3_000_000;
        let (x, y) = (587_000.0 + 8.0 * secs, 4_141_000.0 + 0.5 * secs);
        batch.push((
            0,
            t0 + jitter(&mut rng),
            LocalizationEstimate {
                header: header(t0, "localization", tick as u32),
                pose: Some(Pose {
                    position: p3(x, y, -31.2),
                    orientation: Some(Quaternion {
                        qx: Some(rng.unit() * 1e-4),
                        qy: Some(rng.unit() * 1e-3),
                        qz: Some(0.001),
                        qw: Some(0.999_999),
                    }),
                    linear_velocity: p3(8.0 + rng.unit() * 0.1, 0.5, 0.0),
                    heading: Some(0.0625),
                }),
                measurement_time: Some(t0 as f64 / 1e9),
            }
            .encode_to_vec(),
        ));
        batch.push((
            1,
            t0 + jitter(&mut rng),
            Chassis {
                engine_started: Some(true),
                speed_mps: Some(8.0 + rng.unit() as f32 * 0.1),
                throttle_percentage: Some(25.0 + rng.unit() as f32 * 5.0),
                header: header(t0, "chassis", tick as u32),
            }
            .encode_to_vec(),
        ));
        if tick % 10 == 5 && secs >= 2.5 {
            if !obstacles_declared {
                // Declared late, between chunks, like a writer discovered mid-recording.
                w.flush()?;
                let (name, ty, desc) = &schemas[2];
                w.channel(name, ty, desc)?;
                obstacles_declared = true;
            }
            let n = 5 + (rng.next() % 20) as i32;
            let obstacles = (0..n)
                .map(|id| {
                    let (ox, oy) = (x + 20.0 + f64::from(id) * 3.0, y + rng.unit() * 10.0);
                    PerceptionObstacle {
                        id: Some(100 + id),
                        position: p3(ox, oy, -30.4),
                        theta: Some(rng.unit() * std::f64::consts::PI),
                        length: Some(4.7),
                        width: Some(1.9),
                        height: Some(1.6),
                        polygon_point: (0..4)
                            .map(|k| p3(ox + f64::from(k), oy - f64::from(k), -31.2).unwrap())
                            .collect(),
                    }
                })
                .collect();
            batch.push((
                2,
                t0 + 31_000_000 + jitter(&mut rng),
                PerceptionObstacles {
                    perception_obstacle: obstacles,
                    header: header(t0, "perception", (tick / 10) as u32),
                }
                .encode_to_vec(),
            ));
        }
        if (tick * 15) / 100 != ((tick + 1) * 15) / 100 {
            for b in image.iter_mut().step_by(97) {
                *b = rng.next() as u8;
            }
            batch.push((
                3,
                t0 + 5_000_000 + jitter(&mut rng),
                CompressedImage {
                    header: header(t0, "camera", tick as u32),
                    frame_id: Some("front_6mm".into()),
                    format: Some("jpeg".into()),
                    data: Some(image.clone()),
                    measurement_time: Some(t0 as f64 / 1e9),
                }
                .encode_to_vec(),
            ));
        }
        if tick.is_multiple_of(10) {
            let points = (0..lidar_points as u32)
                .map(|i| {
                    let a = f64::from(i) * 0.0015708;
                    let r = 10.0 + rng.unit() * 50.0;
                    PointXyzit {
                        x: Some((r * a.cos()) as f32),
                        y: Some((r * a.sin()) as f32),
                        z: Some((rng.unit() * 3.0 - 1.5) as f32),
                        intensity: Some((rng.next() % 256) as u32),
                        timestamp: Some(t0 + u64::from(i) * 25_000),
                    }
                })
                .collect();
            batch.push((
                4,
                t0 + 8_000_000 + jitter(&mut rng),
                PointCloud {
                    header: header(t0, "lidar", (tick / 10) as u32),
                    frame_id: Some("velodyne128".into()),
                    is_dense: Some(false),
                    point: points,
                    measurement_time: Some(t0 as f64 / 1e9),
                    width: Some(lidar_points as u32),
                    height: Some(1),
                }
                .encode_to_vec(),
            ));
        }
        batch.sort_by_key(|m| m.1);
        for m in batch {
            // About 1% of messages are held back and written after the next one.
            if held.is_none() && rng.next().is_multiple_of(100) {
                held = Some(m);
                continue;
            }
            w.counts[m.0] += 1;
            w.add(CHANNEL_NAMES[m.0], m.1, m.2)?;
            if let Some(h) = held.take() {
                w.counts[h.0] += 1;
                w.add(CHANNEL_NAMES[h.0], h.1, h.2)?;
            }
        }
        tick += 1;
    }
    if let Some(h) = held.take() {
        w.counts[h.0] += 1;
        w.add(CHANNEL_NAMES[h.0], h.1, h.2)?;
    }
    let counts = w.counts.clone();
    let h = w.close()?;
    let size = std::fs::metadata(&out_path)?.len();
    println!(
        "{out_path}: {size} bytes, {} chunks, {} messages, {:.1} s",
        h.chunk_number(),
        h.message_number(),
        (h.end_time() - h.begin_time()) as f64 / 1e9
    );
    for (name, n) in CHANNEL_NAMES.iter().zip(counts) {
        println!("  {name}: {n}");
    }
    Ok(())
}
