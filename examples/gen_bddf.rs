//! Writes a deterministic BDDF file shaped like a Spot data-buffer download, for
//! benchmarks and interop checks.
//!
//! ```text
//! cargo run --example gen_bddf -- OUT.bddf [--mb 200] [--kb N] [--seed 1] [--image-bytes 60000]
//! ```
//!
//! Series (all written the way the official `bosdyn.bddf.DataWriter` does:
//! file descriptor, series descriptors when a series is added, data blocks,
//! then one SeriesBlockIndex per series, the FileIndex, and the trailer with
//! the SHA1 of everything before the digest):
//!
//! | idx | topic | data | rate |
//! |---|---|---|---|
//! | 0 | `bosdyn.api.RobotState` | protobuf-shaped bytes, ~1.4 kB | 50 Hz |
//! | 1 | `camera/frontleft_fisheye_image` (ImageResponse) | 40–80 kB | 5 Hz |
//! | 2 | `imu/accel` | POD float64[3], 10 samples per block | 100 Hz samples |
//! | 3 | `battery/cell_mv` | POD int32 scalar, 256 samples per block | 20 Hz samples |
//! | 4 | `bosdyn:grpc:requests` robot-state | ~40 bytes, additional indexes `sequence`, `receive_time_nsec` | 10 Hz |
//! | 5 | `bosdyn:grpc:responses` robot-state | ~1.5 kB, same additional indexes | 10 Hz |
//! | 6 | `bosdyn.api.OperatorComment` | text, registered after 30 s (mid-file) | every 30 s |
//!
//! Times start at 1700000000 s (Unix) and advance in 10 ms ticks until the
//! file holds `--mb` megabytes (10^6 bytes) of blocks; the default 200 MB
//! covers about 14 minutes.
//!
//! `--kb` (10^3 bytes, instead of `--mb`) and `--image-bytes` (the images'
//! mean size, default 60,000) make small files: `tests/data/demo.bddf`
//! (102,980 bytes, 1.0 s of data) is written by `tests/data/regenerate.sh`
//! with `--kb 100 --image-bytes 1000`.

use std::collections::HashMap;
use std::fs::File;
use std::io::{BufWriter, Write};

use logsql_readers::formats::bddf::identifier_hash;
use logsql_readers::formats::bddf::proto;
use prost::Message;
use sha1::{Digest, Sha1};

const START_NS: u64 = 1_700_000_000_000_000_000;
const TICK_NS: u64 = 10_000_000;

/// Deterministic xorshift64* generator.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }
    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
    fn unit(&mut self) -> f64 {
        (self.next() >> 11) as f64 / (1u64 << 53) as f64
    }
    fn fill(&mut self, buf: &mut Vec<u8>, n: usize) {
        buf.clear();
        while buf.len() < n {
            buf.extend_from_slice(&self.next().to_le_bytes());
        }
        buf.truncate(n);
    }
}

/// A writer that hashes everything it writes and knows its position.
struct Out {
    w: BufWriter<File>,
    sha: Sha1,
    pos: u64,
}

impl Out {
    fn put(&mut self, b: &[u8]) -> std::io::Result<()> {
        self.sha.update(b);
        self.pos += b.len() as u64;
        self.w.write_all(b)
    }
}

struct SeriesState {
    descriptor_offset: u64,
    entries: Vec<proto::series_block_index::BlockEntry>,
    total_bytes: u64,
    /// The serialized SeriesIdentifier.
    identifier: Vec<u8>,
    hash: u64,
}

struct Writer {
    out: Out,
    series: Vec<SeriesState>,
}

fn timestamp(ns: u64) -> proto::Timestamp {
    proto::Timestamp {
        seconds: (ns / 1_000_000_000) as i64,
        nanos: (ns % 1_000_000_000) as i32,
    }
}

/// Appends field `field` as a length-delimited value.
fn ld(field: u32, body: &[u8], out: &mut Vec<u8>) {
    prost::encoding::encode_key(field, prost::encoding::WireType::LengthDelimited, out);
    prost::encoding::encode_varint(body.len() as u64, out);
    out.extend_from_slice(body);
}

/// Map entries of field `field`, in sorted key order (prost's generated maps
/// are HashMaps, whose order changes per process: this keeps files byte-identical).
fn map_entries(field: u32, pairs: &[(&str, &str)], out: &mut Vec<u8>) {
    let mut sorted = pairs.to_vec();
    sorted.sort();
    for (k, v) in sorted {
        let mut entry = Vec::new();
        ld(1, k.as_bytes(), &mut entry);
        ld(2, v.as_bytes(), &mut entry);
        ld(field, &entry, out);
    }
}

/// A serialized SeriesIdentifier with its spec in sorted order.
fn identifier_bytes(series_type: &str, spec: &[(&str, &str)]) -> Vec<u8> {
    let mut out = proto::SeriesIdentifier {
        series_type: series_type.to_string(),
        spec: Default::default(),
    }
    .encode_to_vec();
    map_entries(2, spec, &mut out);
    out
}

impl Writer {
    fn create(path: &str, annotations: &[(&str, &str)]) -> std::io::Result<Self> {
        let mut out = Out {
            w: BufWriter::with_capacity(1 << 20, File::create(path)?),
            sha: Sha1::new(),
            pos: 0,
        };
        out.put(b"BDDF")?;
        let mut w = Self {
            out,
            series: Vec::new(),
        };
        let fd = proto::FileFormatDescriptor {
            version: Some(proto::FileFormatVersion {
                major_version: 1,
                minor_version: 0,
                patch_level: 0,
            }),
            annotations: Default::default(),
            checksum_type: proto::file_format_descriptor::CheckSumType::ChecksumTypeSha1 as i32,
            checksum_num_bytes: 20,
        };
        let mut body = fd.encode_to_vec();
        map_entries(2, annotations, &mut body);
        w.descriptor(1, &body)?;
        Ok(w)
    }

    /// Writes a descriptor block whose DescriptorBlock oneof field `field` holds `inner`.
    fn descriptor(&mut self, field: u32, inner: &[u8]) -> std::io::Result<u64> {
        let at = self.out.pos;
        let mut body = Vec::with_capacity(inner.len() + 10);
        ld(field, inner, &mut body);
        self.out
            .put(&((1u64 << 56) | body.len() as u64).to_le_bytes())?;
        self.out.put(&body)?;
        Ok(at)
    }

    fn add_series(
        &mut self,
        series_type: &str,
        spec: &[(&str, &str)],
        data_type: proto::series_descriptor::DataType,
        annotations: &[(&str, &str)],
        additional_index_names: &[&str],
    ) -> std::io::Result<u32> {
        let index = self.series.len() as u32;
        let spec_pairs: Vec<(String, String)> = spec
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        let hash = identifier_hash(series_type, &spec_pairs);
        let identifier = identifier_bytes(series_type, spec);
        let d = proto::SeriesDescriptor {
            series_index: index,
            series_identifier: None,
            identifier_hash: hash,
            data_type: Some(data_type),
            annotations: Default::default(),
            additional_index_names: additional_index_names
                .iter()
                .map(|s| s.to_string())
                .collect(),
            description: String::new(),
        };
        let mut body = d.encode_to_vec();
        ld(2, &identifier, &mut body);
        map_entries(7, annotations, &mut body);
        let at = self.descriptor(2, &body)?;
        self.series.push(SeriesState {
            descriptor_offset: at,
            entries: Vec::new(),
            total_bytes: 0,
            identifier,
            hash,
        });
        Ok(index)
    }

    fn write_data(
        &mut self,
        series: u32,
        ns: u64,
        payload: &[u8],
        additional_indexes: &[i64],
    ) -> std::io::Result<()> {
        let at = self.out.pos;
        let desc = proto::DataDescriptor {
            series_index: series,
            timestamp: Some(timestamp(ns)),
            additional_indexes: additional_indexes.to_vec(),
        }
        .encode_to_vec();
        let size = (desc.len() + payload.len()) as u64;
        self.out.put(&size.to_le_bytes())?;
        self.out.put(&(desc.len() as u32).to_le_bytes())?;
        self.out.put(&desc)?;
        self.out.put(payload)?;
        let s = &mut self.series[series as usize];
        s.entries.push(proto::series_block_index::BlockEntry {
            timestamp: Some(timestamp(ns)),
            file_offset: at,
            additional_indexes: additional_indexes.to_vec(),
        });
        s.total_bytes += payload.len() as u64;
        Ok(())
    }

    fn close(mut self) -> std::io::Result<u64> {
        let series = std::mem::take(&mut self.series);
        let mut offsets = Vec::new();
        for (i, s) in series.iter().enumerate() {
            let sbi = proto::SeriesBlockIndex {
                series_index: i as u32,
                descriptor_file_offset: s.descriptor_offset,
                block_entries: s.entries.clone(),
                total_bytes: s.total_bytes,
            };
            offsets.push(self.descriptor(3, &sbi.encode_to_vec())?);
        }
        let fi = proto::FileIndex {
            series_identifiers: Vec::new(),
            series_block_index_offsets: offsets,
            series_identifier_hashes: series.iter().map(|s| s.hash).collect(),
        };
        let mut body = Vec::new();
        for s in &series {
            ld(1, &s.identifier, &mut body);
        }
        body.extend_from_slice(&fi.encode_to_vec());
        let index_offset = self.descriptor(4, &body)?;
        self.out.put(&((2u64 << 56) | 24).to_le_bytes())?;
        self.out.put(&index_offset.to_le_bytes())?;
        let digest: [u8; 20] = self.out.sha.clone().finalize().into();
        self.out.w.write_all(&digest)?;
        self.out.w.write_all(b"FDDB")?;
        self.out.w.flush()?;
        Ok(self.out.pos + 24)
    }
}

/// Bytes shaped like a protobuf message (length-delimited fields of random bytes).
fn protobuf_like(rng: &mut Rng, buf: &mut Vec<u8>, scratch: &mut Vec<u8>, len: usize) {
    buf.clear();
    let mut field = 1u8;
    while buf.len() < len {
        let n = (len - buf.len()).min(100 + rng.below(60) as usize);
        rng.fill(scratch, n);
        buf.push((field << 3) | 2);
        buf.push(n as u8 & 0x7f);
        buf.extend_from_slice(&scratch[..(n & 0x7f)]);
        field = field % 15 + 1;
    }
}

fn main() -> std::io::Result<()> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let mut path = None;
    let mut mb = 200u64;
    let mut seed = 1u64;
    let mut kb: Option<u64> = None;
    let mut image_bytes = 60_000u64;
    let mut it = args.iter();
    while let Some(a) = it.next() {
        match a.as_str() {
            "--mb" => mb = it.next().and_then(|v| v.parse().ok()).expect("--mb N"),
            "--seed" => seed = it.next().and_then(|v| v.parse().ok()).expect("--seed N"),
            "--kb" => kb = Some(it.next().and_then(|v| v.parse().ok()).expect("--kb N")),
            "--image-bytes" => {
                image_bytes = it
                    .next()
                    .and_then(|v| v.parse().ok())
                    .expect("--image-bytes N")
            }
            p if path.is_none() && !p.starts_with("--") => path = Some(p.to_string()),
            other => {
                panic!(
                    "unknown argument {other:?}; usage: gen_bddf OUT.bddf [--mb 200] [--kb N] [--seed 1] [--image-bytes 60000]"
                )
            }
        }
    }
    let path = path
        .expect("usage: gen_bddf OUT.bddf [--mb 200] [--kb N] [--seed 1] [--image-bytes 60000]");
    // `--kb` (10^3 bytes) makes files smaller than 1 MB, like the test data.
    let target = kb.map_or(mb * 1_000_000, |kb| kb * 1_000);
    write(&path, target, seed, image_bytes)
}

/// Writes the file: `target` bytes of blocks, images of `image_bytes` on
/// average, the generator seeded with `seed` (the integration tests call it
/// for files of several chunks).
pub fn write(path: &str, target: u64, seed: u64, image_bytes: u64) -> std::io::Result<()> {
    let mut rng = Rng(0x9e37_79b9_7f4a_7c15 ^ seed.wrapping_mul(0x1000_0000_01b3));
    let serial = format!("BD-{}", 10_000_000 + seed);
    let mut w = Writer::create(
        path,
        &[
            ("bosdyn:robot-serial-number", serial.as_str()),
            ("bosdyn:robot-nickname", "spot-bench"),
            ("bosdyn:generator", "logsql examples/gen_bddf.rs"),
        ],
    )?;
    use proto::series_descriptor::DataType;
    let message = |type_name: &str| {
        DataType::MessageType(proto::MessageTypeDescriptor {
            content_type: "application/protobuf".into(),
            type_name: type_name.into(),
            is_metadata: false,
        })
    };
    let pod = |t: proto::PodTypeEnum, dims: &[u32]| {
        DataType::PodType(proto::PodTypeDescriptor {
            pod_type: t as i32,
            dimension: dims.to_vec(),
        })
    };
    let ch = "bosdyn:channel";
    let state = w.add_series(
        ch,
        &[(ch, "bosdyn.api.RobotState")],
        message("bosdyn.api.RobotState"),
        &[("bosdyn:source", "robot-state")],
        &[],
    )?;
    let image = w.add_series(
        ch,
        &[(ch, "camera/frontleft_fisheye_image")],
        message("bosdyn.api.ImageResponse"),
        &[],
        &[],
    )?;
    let imu = w.add_series(
        ch,
        &[(ch, "imu/accel")],
        pod(proto::PodTypeEnum::TypeFloat64, &[3]),
        &[("units", "m/s2")],
        &[],
    )?;
    let battery = w.add_series(
        ch,
        &[(ch, "battery/cell_mv")],
        pod(proto::PodTypeEnum::TypeInt32, &[]),
        &[("units", "mV")],
        &[],
    )?;
    let aix = ["sequence", "receive_time_nsec"];
    let grpc = |kind: &str| {
        (
            format!("bosdyn:grpc:{kind}"),
            format!(
                "bosdyn.api.RobotState{}",
                if kind == "requests" {
                    "Request"
                } else {
                    "Response"
                }
            ),
        )
    };
    let (rq_type, rq_msg) = grpc("requests");
    let (rs_type, rs_msg) = grpc("responses");
    let requests = w.add_series(
        &rq_type,
        &[
            ("bosdyn:grpc:service", "robot-state"),
            ("bosdyn:message-type", &rq_msg),
        ],
        message(&rq_msg),
        &[],
        &aix,
    )?;
    let responses = w.add_series(
        &rs_type,
        &[
            ("bosdyn:grpc:service", "robot-state"),
            ("bosdyn:message-type", &rs_msg),
        ],
        message(&rs_msg),
        &[],
        &aix,
    )?;
    let mut comments: Option<u32> = None;
    let (mut buf, mut scratch) = (Vec::new(), Vec::new());
    let mut imu_block: Vec<u8> = Vec::new();
    let mut imu_start = 0u64;
    let mut bat_block: Vec<u8> = Vec::new();
    let mut bat_start = 0u64;
    let mut seq: HashMap<u32, i64> = HashMap::new();
    let mut tick = 0u64;
    while w.out.pos < target {
        let t = START_NS + tick * TICK_NS;
        if tick.is_multiple_of(2) {
            let len = 1300 + rng.below(200) as usize;
            protobuf_like(&mut rng, &mut buf, &mut scratch, len);
            w.write_data(state, t, &buf, &[])?;
        }
        if tick % 20 == 3 {
            // Uniform in [2/3, 4/3) of --image-bytes (40-80 kB by default).
            let lo = (image_bytes * 2 / 3).max(1);
            let n = (lo + rng.below(lo)) as usize;
            rng.fill(&mut buf, n);
            w.write_data(image, t + 1_000_000, &buf, &[])?;
        }
        // IMU: one float64[3] sample per tick, 10 per block.
        if imu_block.is_empty() {
            imu_start = t + 1_300_000;
        }
        for axis in 0..3 {
            let g = if axis == 2 { 9.81 } else { 0.0 };
            imu_block.extend_from_slice(&(g + rng.unit() * 0.2 - 0.1).to_le_bytes());
        }
        if imu_block.len() == 10 * 24 {
            w.write_data(imu, imu_start, &imu_block, &[])?;
            imu_block.clear();
        }
        // Battery: int32 at 20 Hz, 256 samples per block (like PodSeriesWriter).
        if tick.is_multiple_of(5) {
            if bat_block.is_empty() {
                bat_start = t + 2_100_000;
            }
            let mv = 3900 - (tick / 1000) as i32 + rng.below(5) as i32;
            bat_block.extend_from_slice(&mv.to_le_bytes());
            if bat_block.len() == 256 * 4 {
                w.write_data(battery, bat_start, &bat_block, &[])?;
                bat_block.clear();
            }
        }
        if tick % 10 == 1 {
            for (series, len) in [(requests, 40usize), (responses, 1500)] {
                let sq = seq.entry(series).or_insert(0);
                let ts = t + if series == requests {
                    1_000_000
                } else {
                    1_900_000
                };
                rng.fill(&mut buf, len);
                let idx = [*sq, (ts + 500_000) as i64];
                *sq += 1;
                w.write_data(series, ts, &buf, &idx)?;
            }
        }
        if tick % 3000 == 2999 {
            let id = match comments {
                Some(id) => id,
                None => {
                    let id = w.add_series(
                        ch,
                        &[(ch, "bosdyn.api.OperatorComment")],
                        message("bosdyn.api.OperatorComment"),
                        &[],
                        &[],
                    )?;
                    comments = Some(id);
                    id
                }
            };
            let text = format!("operator comment at tick {tick}");
            w.write_data(id, t + 700_000, text.as_bytes(), &[])?;
        }
        tick += 1;
    }
    // Partial POD blocks are flushed at close (older times than the last blocks).
    if !imu_block.is_empty() {
        w.write_data(imu, imu_start, &imu_block, &[])?;
    }
    if !bat_block.is_empty() {
        w.write_data(battery, bat_start, &bat_block, &[])?;
    }
    let size = w.close()?;
    eprintln!(
        "{path}: {size} bytes, {:.1} s of data",
        (tick * TICK_NS) as f64 / 1e9
    );
    Ok(())
}
