//! Decoding benchmarks: payloads to typed Arrow columns, messages per second
//! on one core, for IMU-sized messages of each encoding.
//!
//! ```text
//! cargo bench --bench decode
//! ```
//!
//! Inputs: `/imu` of `tests/data/demo.mcap` (the repo's demo file: ROS1
//! `sensor_msgs/Imu`, 320 bytes); an IMU-shaped protobuf message (~330 bytes,
//! `benches/support/imu_pb.rs`; its descriptor set and payloads are written to
//! `target/bench-data/imu_pb.{fds,bin}` for `benches/python_decode.py`); and,
//! when `../shared/fixtures` is present, the
//! MCAP decode fixtures: `/imu` of `ros2.mcap` (CDR `sensor_msgs/msg/Imu`),
//! `/fixture/pose` of `protobuf.mcap` (`foxglove.PoseInFrame`) and `/state` of
//! `json.mcap`. Each case decodes the topic's messages (repeated to 10,000)
//! into a column builder and finishes the Arrow arrays, as the scan does per
//! batch (the builder is reused across batches, as the scan reuses it). Criterion reports the time per batch; throughput is set in messages,
//! so `thrpt` is messages per second.

#[path = "support/imu_pb.rs"]
mod imu_pb;

use std::hint::black_box;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use logsql_decode::{ColumnBuilder, MessageDecoder, decoder_for};
use logsql_readers::formats::{self, FormatReader};
use logsql_readers::io::FileReader;
use logsql_readers::model::{Channel, Flow, Message, Selection};

/// Messages per measured batch.
const BATCH: usize = 10_000;

/// The channel of `topic` in `path` and its payloads, repeated to `BATCH`.
fn topic_payloads(path: &Path, topic: &str) -> Option<(Channel, Vec<Vec<u8>>)> {
    let file = FileReader::open(path).ok()?;
    let format: Arc<dyn FormatReader> = formats::detect(&file).ok()?;
    let summary = format.summary(&file).ok()?;
    let mut channel = None;
    let mut payloads = Vec::new();
    for chunk in &summary.chunks {
        let mut sink = |m: Message<'_>| {
            if m.channel.topic == topic {
                channel.get_or_insert_with(|| m.channel.clone());
                payloads.push(m.data.to_vec());
            }
            Flow::Continue
        };
        format
            .read_chunk(&file, &summary, chunk, &Selection::all(), &mut sink)
            .ok()?;
    }
    let channel = channel?;
    let n = payloads.len();
    if n == 0 {
        return None;
    }
    let repeated = (0..BATCH).map(|i| payloads[i % n].clone()).collect();
    Some((channel, repeated))
}

fn fixtures() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../shared/fixtures/mcap/decode")
}

/// The IMU-shaped protobuf case: a channel whose schema is the message's
/// descriptor set, and 1,000 distinct payloads repeated to `BATCH`. Also
/// writes both for the Python comparison (`imu_pb.fds`; `imu_pb.bin`: u32 LE
/// length + payload, each).
fn protobuf_imu(root: &Path) -> (Channel, Vec<Vec<u8>>) {
    let pool = imu_pb::imu_pool();
    let set = logsql_decode::descriptors::schema_for(&pool, "bench.Imu").expect("bench.Imu");
    let distinct: Vec<Vec<u8>> = (0..1000).map(|i| imu_pb::imu_payload(&pool, i)).collect();
    let dir = root.join("target/bench-data");
    if std::fs::create_dir_all(&dir).is_ok() {
        let mut bin = Vec::new();
        for p in &distinct {
            bin.extend_from_slice(&(p.len() as u32).to_le_bytes());
            bin.extend_from_slice(p);
        }
        let _ = std::fs::write(dir.join("imu_pb.fds"), &set);
        let _ = std::fs::write(dir.join("imu_pb.bin"), bin);
    }
    let channel = Channel {
        id: 1,
        topic: "/imu".into(),
        message_type: Some("bench.Imu".into()),
        message_encoding: "protobuf".into(),
        schema_encoding: Some("protobuf".into()),
        schema: Some(set.into()),
        metadata: Default::default(),
    };
    let payloads = (0..BATCH)
        .map(|i| distinct[i % distinct.len()].clone())
        .collect();
    (channel, payloads)
}

fn bench_decode(c: &mut Criterion) {
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    let cases = [
        ("ros1_imu", root.join("tests/data/demo.mcap"), "/imu"),
        ("cdr_imu", fixtures().join("ros2.mcap"), "/imu"),
        (
            "protobuf_pose",
            fixtures().join("protobuf.mcap"),
            "/fixture/pose",
        ),
        ("json_state", fixtures().join("json.mcap"), "/state"),
    ];
    let mut group = c.benchmark_group("decode");
    group.throughput(Throughput::Elements(BATCH as u64));
    let mut inputs = vec![("protobuf_imu", Some(protobuf_imu(&root)))];
    for (name, path, topic) in cases {
        let input = topic_payloads(&path, topic);
        if input.is_none() {
            eprintln!("decode/{name}: SKIPPED ({} not readable)", path.display());
        }
        inputs.push((name, input));
    }
    for (name, input) in inputs {
        let Some((channel, payloads)) = input else {
            continue;
        };
        let decoder: Arc<dyn MessageDecoder> = match decoder_for(&channel) {
            Ok(d) => d,
            Err(e) => {
                eprintln!("decode/{name}: SKIPPED ({e})");
                continue;
            }
        };
        let bytes: usize = payloads.iter().map(Vec::len).sum();
        eprintln!(
            "decode/{name}: {} ({}), {} bytes per message on average",
            channel.topic,
            decoder.describe(),
            bytes / payloads.len()
        );
        // One builder for the whole run, as the scan keeps one per channel and
        // file: each `finish` leaves room for the next batch.
        let mut out = ColumnBuilder::new(decoder.data_type()).expect("builder");
        group.bench_function(name, |b| {
            b.iter(|| {
                for p in &payloads {
                    decoder.decode(p, &mut out).expect("decodes");
                }
                black_box(out.finish().expect("arrays"))
            })
        });
    }
    group.finish();
}

criterion_group!(benches, bench_decode);
criterion_main!(benches);
