//! Decoding benchmarks: payloads to typed Arrow columns, messages per second
//! on one core, for IMU-sized messages of each encoding.
//!
//! ```text
//! cargo bench --bench decode
//! ```
//!
//! Inputs: `/imu` of `tests/data/demo.mcap` (the repo's demo file: ROS1
//! `sensor_msgs/Imu`, 320 bytes), and, when `../shared/fixtures` is present, the
//! MCAP decode fixtures: `/imu` of `ros2.mcap` (CDR `sensor_msgs/msg/Imu`),
//! `/fixture/pose` of `protobuf.mcap` (`foxglove.PoseInFrame`) and `/state` of
//! `json.mcap`. Each case decodes the topic's messages (repeated to 10,000)
//! into one column builder and finishes the Arrow arrays, as the scan does per
//! batch. Criterion reports the time per batch; throughput is set in messages,
//! so `thrpt` is messages per second.

use std::hint::black_box;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use logsql::decode::{ColumnBuilder, MessageDecoder, decoder_for};
use logsql::formats::{self, LogFormat};
use logsql::io::FileReader;
use logsql::model::{Channel, Flow, Message, Selection};

/// Messages per measured batch.
const BATCH: usize = 10_000;

/// The channel of `topic` in `path` and its payloads, repeated to `BATCH`.
fn topic_payloads(path: &Path, topic: &str) -> Option<(Channel, Vec<Vec<u8>>)> {
    let file = FileReader::open(path).ok()?;
    let format: Arc<dyn LogFormat> = formats::detect(&file).ok()?;
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

fn bench_decode(c: &mut Criterion) {
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    let cases = [
        ("ros1_imu", root.join("tests/data/demo.mcap"), "/imu"),
        ("cdr_imu", fixtures().join("ros2.mcap"), "/imu"),
        ("protobuf_pose", fixtures().join("protobuf.mcap"), "/fixture/pose"),
        ("json_state", fixtures().join("json.mcap"), "/state"),
    ];
    let mut group = c.benchmark_group("decode");
    group.throughput(Throughput::Elements(BATCH as u64));
    for (name, path, topic) in cases {
        let Some((channel, payloads)) = topic_payloads(&path, topic) else {
            eprintln!("decode/{name}: SKIPPED ({} not readable)", path.display());
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
        group.bench_function(name, |b| {
            b.iter(|| {
                let mut out = ColumnBuilder::new(decoder.data_type()).expect("builder");
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
