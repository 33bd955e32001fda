//! Real-file tests that need nothing outside the repository: one small
//! recording per format in `tests/data/`, written by the repository's own
//! generators (`tests/data/regenerate.sh`), so a fresh clone without
//! `../shared` still tests every format and every decoder.
//!
//! Per file: the exact per-topic counts and first/last log times, a SHA-1 over
//! every payload in log-time order (the figures pinned below; the bag's and the
//! MCAP's were read with the official Python readers `rosbags` and `mcap`),
//! the rows of a SQL scan equal to what the byte-level reader (the
//! [`FormatReader`] trait, no DataFusion) reads, time-window pushdown read from
//! the scan's metrics through the plan's metrics API, and a truncated copy
//! (every complete message and a warning by default; the rows then an error
//! naming the file and byte offset under `on_error = 'error'`). Then one
//! `read_topic` decode per decoder the files carry (ros1, protobuf, json),
//! BDDF's POD series and CARLA's typed tables.

use std::sync::{Mutex, OnceLock};

use datafusion::arrow::array::{Array, AsArray};
use datafusion::arrow::datatypes::{DataType, Float64Type, Int64Type};
use datafusion::prelude::SessionContext;
use logsql_readers::formats;
use logsql_readers::io::BytesReader;
use sha1::{Digest, Sha1};

use crate::engine_damage::{Row, message_rows, reader_prefix, rows_then_error};
use crate::sql::{analyze, metric, query};

/// A committed recording and the figures it must give.
struct Demo {
    /// Path relative to the crate root.
    path: &'static str,
    /// Size in bytes (what `regenerate.sh` writes).
    size: u64,
    /// Per topic, sorted by name: message count, first and last log time (ns).
    topics: &'static [(&'static str, i64, i64, i64)],
    /// SHA-1 (hex) of every payload concatenated in (log_time, topic, payload) order.
    payload_sha1: &'static str,
    /// Chunks in the file as the scan counts them, and at most how many a
    /// window of the middle tenth of its time span reads. A BDDF or CARLA file
    /// is one chunk: their windows skip by the file's index (BDDF blocks) or
    /// frame walk (CARLA), which shows in `bytes_read`.
    chunks: (u64, u64),
}

/// The BDDF's gRPC series: series type, then the spec.
const GRPC_REQUESTS: &str = "bosdyn:grpc:requests:bosdyn:grpc:service=robot-state,\
                             bosdyn:message-type=bosdyn.api.RobotStateRequest";
const GRPC_RESPONSES: &str = "bosdyn:grpc:responses:bosdyn:grpc:service=robot-state,\
                              bosdyn:message-type=bosdyn.api.RobotStateResponse";

/// CARLA: one packet of each kind per frame (empty ones too), 100 frames of
/// 50 ms (f32 deltas summed, so the last is 74 ns late) from the header's date.
const CARLA_TOPICS: [(&str, i64, i64, i64); 15] = {
    const KINDS: [&str; 15] = [
        "biker",
        "collision",
        "door",
        "event_add",
        "event_del",
        "event_parent",
        "frame_end",
        "frame_start",
        "position",
        "traffic_light",
        "vehicle_animation",
        "vehicle_light",
        "visual_time",
        "walker_animation",
        "wheels",
    ];
    let mut out = [("", 0, 0, 0); 15];
    let mut i = 0;
    while i < 15 {
        out[i] = (
            KINDS[i],
            100,
            1_700_000_000_000_000_000,
            1_700_000_004_950_000_074,
        );
        i += 1;
    }
    out
};

const DEMOS: [Demo; 6] = [
    // gen_mcap --seconds 10 --jpeg 64x48 --chunk-size 65536: the
    // generator's table (examples/gen_mcap.rs); SHA-1 as the `mcap` package reads it.
    Demo {
        path: "tests/data/demo.mcap",
        size: 188_393,
        topics: &[
            (
                "/camera/compressed",
                100,
                1_700_000_000_001_000_000,
                1_700_000_009_901_000_000,
            ),
            (
                "/diagnostics",
                10,
                1_700_000_000_003_000_000,
                1_700_000_009_003_000_000,
            ),
            (
                "/imu",
                2000,
                1_700_000_000_000_000_000,
                1_700_000_009_995_000_000,
            ),
            (
                "/tf",
                500,
                1_700_000_000_002_000_000,
                1_700_000_009_982_000_000,
            ),
        ],
        payload_sha1: "d21086ddf7eb83cdc7760496af2e46f92b6060e5",
        chunks: (15, 3),
    },
    // gen_bag --compression lz4 --seconds 2 --chunk-size 16384 --image-bytes 1000:
    // 200 Hz /imu, 50 Hz /odom and /tf, 10 Hz camera, 2 Hz /chatter, one
    // latched /tf_static; counts, times and SHA-1 as `rosbags` reads them.
    Demo {
        path: "tests/data/demo.bag",
        size: 103_573,
        topics: &[
            (
                "/camera/image/compressed",
                20,
                1_700_000_000_007_015_741,
                1_700_000_001_907_074_488,
            ),
            (
                "/chatter",
                4,
                1_700_000_000_011_000_000,
                1_700_000_001_511_000_000,
            ),
            (
                "/imu",
                400,
                1_700_000_000_000_012_410,
                1_700_000_001_995_006_904,
            ),
            (
                "/odom",
                100,
                1_700_000_000_003_183_144,
                1_700_000_001_983_002_013,
            ),
            (
                "/tf",
                100,
                1_700_000_000_003_088_754,
                1_700_000_001_983_058_868,
            ),
            (
                "/tf_static",
                1,
                1_700_000_000_000_000_000,
                1_700_000_000_000_000_000,
            ),
        ],
        payload_sha1: "5aec6fbd4d124becd263876398c1e867e06be4c8",
        chunks: (17, 3),
    },
    // gen_record --size-kb 150 --image-bytes 500 --lidar-points 40
    // --chunk-interval-ms 500: the counts the generator prints; the obstacles
    // channel is declared 2.5 s in.
    Demo {
        path: "tests/data/demo.record",
        size: 174_109,
        topics: &[
            (
                "/apollo/canbus/chassis",
                306,
                1_700_000_000_000_017_477,
                1_700_000_003_051_573_218,
            ),
            (
                "/apollo/localization/pose",
                306,
                1_700_000_000_001_012_410,
                1_700_000_003_051_000_875,
            ),
            (
                "/apollo/perception/obstacles",
                6,
                1_700_000_002_581_964_595,
                1_700_000_003_082_082_514,
            ),
            (
                "/apollo/sensor/camera/front_6mm/image/compressed",
                45,
                1_700_000_000_067_458_410,
                1_700_000_002_997_366_688,
            ),
            (
                "/apollo/sensor/lidar128/compensator/PointCloud2",
                31,
                1_700_000_000_008_607_760,
                1_700_000_003_010_991_933,
            ),
        ],
        payload_sha1: "8f24e9df20da1e260a17263ad61f72b965d05e4b",
        chunks: (8, 2),
    },
    // gen_bddf --kb 100 --image-bytes 1000: 90 data blocks (the official
    // `bosdyn.bddf.DataReader` lists 51 + 5 + 11 + 1 + 11 + 11); the POD
    // series are one row per block.
    Demo {
        path: "tests/data/demo.bddf",
        size: 102_980,
        topics: &[
            (
                "battery/cell_mv",
                1,
                1_700_000_000_002_100_000,
                1_700_000_000_002_100_000,
            ),
            (
                "bosdyn.api.RobotState",
                51,
                1_700_000_000_000_000_000,
                1_700_000_001_000_000_000,
            ),
            (
                GRPC_REQUESTS,
                11,
                1_700_000_000_011_000_000,
                1_700_000_001_011_000_000,
            ),
            (
                GRPC_RESPONSES,
                11,
                1_700_000_000_011_900_000,
                1_700_000_001_011_900_000,
            ),
            (
                "camera/frontleft_fisheye_image",
                5,
                1_700_000_000_031_000_000,
                1_700_000_000_831_000_000,
            ),
            (
                "imu/accel",
                11,
                1_700_000_000_001_300_000,
                1_700_000_001_001_300_000,
            ),
        ],
        payload_sha1: "cc8085bd0b9c8d4b3c6aaccad5d2d326aacc1f0a",
        chunks: (1, 1),
    },
    // gen_carla --frames 100 --vehicles 6 --walkers 3 --traffic-lights 2.
    Demo {
        path: "tests/data/demo.log",
        size: 98_411,
        topics: &CARLA_TOPICS,
        payload_sha1: "c8a9064253e5d6b226c1bef8990a602ca0647fca",
        chunks: (1, 1),
    },
    // gen_db3 --seconds 2: a rosbag2 SQLite database. The SHA-1 was computed
    // from the database with Python's sqlite3 module (the rows joined to their
    // topic names, in (timestamp, topic, data) order).
    Demo {
        path: "tests/data/demo.db3",
        size: 106_496,
        topics: &[
            (
                "/chatter",
                20,
                1_700_000_000_003_000_000,
                1_700_000_001_903_000_000,
            ),
            (
                "/imu",
                200,
                1_700_000_000_000_000_000,
                1_700_000_001_990_000_000,
            ),
            (
                "/odom_rate",
                20,
                1_700_000_000_007_000_000,
                1_700_000_001_909_000_000,
            ),
        ],
        payload_sha1: "8fc36b71c22e5211b5aca437d6c8a6f57fc1c78f",
        chunks: (1, 1),
    },
];

/// SHA-1 (hex) of the payloads of `rows` in (log_time, topic, payload) order.
fn payload_sha1(rows: &[Row]) -> String {
    let mut sorted: Vec<&Row> = rows.iter().collect();
    sorted.sort_by(|a, b| (a.1, &a.0, &a.2).cmp(&(b.1, &b.0, &b.2)));
    let mut h = Sha1::new();
    for r in sorted {
        h.update(&r.2);
    }
    format!("{:x}", h.finalize())
}

/// Per topic: count, first and last log time, sorted by topic.
fn topic_figures(rows: &[Row]) -> Vec<(String, i64, i64, i64)> {
    let mut out: Vec<(String, i64, i64, i64)> = Vec::new();
    let mut sorted: Vec<&Row> = rows.iter().collect();
    sorted.sort();
    for r in sorted {
        match out.last_mut() {
            Some(last) if last.0 == r.0 => {
                last.1 += 1;
                last.2 = last.2.min(r.1);
                last.3 = last.3.max(r.1);
            }
            _ => out.push((r.0.clone(), 1, r.1, r.1)),
        }
    }
    out
}

/// Per topic: count, first and last log time, by `GROUP BY topic`.
async fn sql_topic_figures(ctx: &SessionContext, path: &str) -> Vec<(String, i64, i64, i64)> {
    let sql = format!(
        "SELECT topic, count(*), CAST(min(log_time) AS BIGINT), \
         CAST(max(log_time) AS BIGINT) FROM '{path}' GROUP BY topic ORDER BY topic"
    );
    let mut out = Vec::new();
    for b in query(ctx, &sql).await {
        let topic = datafusion::arrow::compute::cast(b.column(0), &DataType::Utf8).unwrap();
        let topic = topic.as_string::<i32>();
        let int = |i: usize| b.column(i).as_primitive::<Int64Type>();
        for r in 0..b.num_rows() {
            out.push((
                topic.value(r).to_string(),
                int(1).value(r),
                int(2).value(r),
                int(3).value(r),
            ));
        }
    }
    out
}

/// What the byte-level reader reads from `bytes` (named `name`), and whether it
/// met damage (`Some(unfinished)`).
fn reader_rows(name: &str, bytes: &[u8]) -> (Vec<Row>, Option<bool>) {
    let format = formats::detect(&BytesReader::new("probe", bytes.to_vec()))
        .unwrap_or_else(|e| panic!("{name}: {e}"));
    reader_prefix(format.as_ref(), name, bytes)
}

const ROWS_SQL: &str = "SELECT topic, CAST(log_time AS BIGINT) AS t, data FROM";

#[test]
fn committed_files_have_the_sizes_regenerate_sh_writes() {
    let mut total = 0;
    for demo in &DEMOS {
        let size = std::fs::metadata(demo.path).unwrap().len();
        assert_eq!(size, demo.size, "{}", demo.path);
        total += size;
    }
    assert!(total < 900_000, "tests/data/ holds {total} bytes");
}

#[tokio::test]
async fn every_format_gives_its_counts_times_and_payloads() {
    let ctx = logsql::session_context();
    for demo in &DEMOS {
        let bytes = std::fs::read(demo.path).unwrap();
        let (mut expected, damage) = reader_rows(demo.path, &bytes);
        assert_eq!(damage, None, "{}: the reader met damage", demo.path);
        let batches = query(&ctx, &format!("{ROWS_SQL} '{}'", demo.path)).await;
        let mut got = message_rows(&batches);
        got.sort();
        expected.sort();
        assert_eq!(got.len(), expected.len(), "{}", demo.path);
        assert!(
            got == expected,
            "{}: SQL rows differ from the reader's",
            demo.path
        );
        let figures = topic_figures(&got);
        let want: Vec<(String, i64, i64, i64)> = demo
            .topics
            .iter()
            .map(|&(t, n, first, last)| (t.to_string(), n, first, last))
            .collect();
        assert_eq!(figures, want, "{}", demo.path);
        // The same figures from SQL aggregates (answered from the summary
        // where the format's index allows).
        assert_eq!(
            sql_topic_figures(&ctx, demo.path).await,
            want,
            "{}",
            demo.path
        );
        assert_eq!(payload_sha1(&got), demo.payload_sha1, "{}", demo.path);
    }
}

/// Each topic's payloads through SQL equal the reader's, whether the scan
/// references them in the chunk buffers (`data` is a `BinaryView`) or copies
/// them out (a topic that uses a small share of its chunks), at 1 and 3
/// partitions, and with batches far smaller than a chunk (one chunk's buffer
/// referenced from many batches).
#[tokio::test]
async fn each_topic_gives_the_readers_payloads_referenced_in_place_or_copied() {
    for (partitions, batch_bytes) in [(1, 2 << 20), (3, 2 << 20), (2, 4096)] {
        let ctx = logsql::session_context_with_config(
            datafusion::prelude::SessionConfig::new().with_target_partitions(partitions),
        );
        query(&ctx, &format!("SET logsql.batch_bytes = {batch_bytes}")).await;
        for demo in &DEMOS {
            let bytes = std::fs::read(demo.path).unwrap();
            let (rows, _) = reader_rows(demo.path, &bytes);
            for &(topic, n, _, _) in demo.topics {
                let case = format!(
                    "{} {topic}, {partitions} partitions, batch_bytes {batch_bytes}",
                    demo.path
                );
                let batches = query(
                    &ctx,
                    &format!("{ROWS_SQL} '{}' WHERE topic = '{topic}'", demo.path),
                )
                .await;
                assert_eq!(
                    batches[0].schema().field(2).data_type(),
                    &DataType::BinaryView,
                    "{case}"
                );
                let mut got = message_rows(&batches);
                let mut want: Vec<Row> = rows.iter().filter(|r| r.0 == topic).cloned().collect();
                got.sort();
                want.sort();
                assert_eq!(got.len() as i64, n, "{case}");
                assert!(got == want, "{case}: SQL payloads differ from the reader's");
            }
        }
    }
}

#[tokio::test]
async fn a_time_window_reads_a_few_chunks_by_the_scan_metrics() {
    let ctx = logsql::session_context();
    for demo in &DEMOS {
        let first = demo.topics.iter().map(|t| t.2).min().unwrap();
        let last = demo.topics.iter().map(|t| t.3).max().unwrap();
        let (lo, hi) = (
            first + (last - first) * 9 / 20,
            first + (last - first) * 11 / 20,
        );
        let expected: i64 = {
            let bytes = std::fs::read(demo.path).unwrap();
            let (rows, _) = reader_rows(demo.path, &bytes);
            rows.iter().filter(|r| r.1 >= lo && r.1 < hi).count() as i64
        };
        let sql = format!(
            "SELECT count(*), sum(length(data)) FROM '{}' WHERE log_time >= to_timestamp_nanos({lo}) \
             AND log_time < to_timestamp_nanos({hi})",
            demo.path
        );
        let plan = analyze(&ctx, &sql).await;
        let (read, total, bytes) = (
            metric(&plan, "chunks_read"),
            metric(&plan, "chunks_total"),
            metric(&plan, "bytes_read"),
        );
        let count = plan.batches[0]
            .column(0)
            .as_primitive::<Int64Type>()
            .value(0);
        println!(
            "{}: {count} rows, {read} of {total} chunks, {bytes} bytes",
            demo.path
        );
        assert_eq!(count, expected, "{sql}");
        assert_eq!(total, demo.chunks.0, "{}", demo.path);
        assert!(
            read >= 1 && read <= demo.chunks.1,
            "{}: read {read} of {total} chunks",
            demo.path
        );
        assert!(bytes * 3 < demo.size, "{}: {bytes} bytes read", demo.path);
    }
}

/// Warnings logged through the `log` crate, kept for the tests to read.
struct Captured;

static WARNINGS: Mutex<Vec<String>> = Mutex::new(Vec::new());

impl log::Log for Captured {
    fn enabled(&self, metadata: &log::Metadata<'_>) -> bool {
        metadata.level() <= log::Level::Warn
    }
    fn log(&self, record: &log::Record<'_>) {
        if self.enabled(record.metadata()) {
            WARNINGS.lock().unwrap().push(record.args().to_string());
        }
    }
    fn flush(&self) {}
}

/// The warnings logged so far that mention `needle`.
fn warnings_about(needle: &str) -> Vec<String> {
    static INSTALLED: OnceLock<bool> = OnceLock::new();
    INSTALLED.get_or_init(|| {
        static LOGGER: Captured = Captured;
        let ok = log::set_logger(&LOGGER).is_ok();
        log::set_max_level(log::LevelFilter::Warn);
        ok
    });
    WARNINGS
        .lock()
        .unwrap()
        .iter()
        .filter(|w| w.contains(needle))
        .cloned()
        .collect()
}

#[tokio::test]
async fn a_truncated_copy_gives_every_complete_message_then_warns_or_fails() {
    warnings_about("");
    let tmp = tempfile::tempdir().unwrap();
    // A cut SQLite database is SQLite's to judge (it reads what its b-trees
    // still reach, or calls the file malformed): tests/it/ros2_reader.rs
    // sweeps truncations of generated bags instead.
    for demo in DEMOS.iter().filter(|d| !d.path.ends_with(".db3")) {
        let bytes = std::fs::read(demo.path).unwrap();
        let cut = bytes.len() * 3 / 5;
        let file = tmp
            .path()
            .join(format!("cut-{}", demo.path.rsplit('/').next().unwrap()));
        std::fs::write(&file, &bytes[..cut]).unwrap();
        let name = file.display().to_string();
        let (mut expected, damage) = reader_rows(&name, &bytes[..cut]);
        assert_eq!(damage, Some(true), "{name}: an unfinished recording");
        expected.sort();
        let total: i64 = demo.topics.iter().map(|t| t.1).sum();
        assert!(
            !expected.is_empty() && (expected.len() as i64) < total,
            "{name}: {} of {total} messages before the cut",
            expected.len()
        );
        let sql = format!("{ROWS_SQL} '{name}'");

        // Default (`auto`): every complete message, and a warning.
        let ctx = logsql::session_context();
        let (batches, error) = rows_then_error(&ctx, &sql).await;
        assert_eq!(error, None, "{name}");
        let mut got = message_rows(&batches);
        got.sort();
        assert!(got == expected, "{name}: other rows than the reader's");
        let warned = warnings_about(&name);
        assert_eq!(warned.len(), 1, "{name}: {warned:?}");
        assert!(
            warned[0].contains("every complete message was read")
                && warned[0].contains(&format!("of {cut} (")),
            "{}",
            warned[0]
        );

        // `error`: the same rows, then an error naming the file and the offset.
        let ctx = logsql::session_context();
        ctx.sql("SET logsql.on_error = 'error'").await.unwrap();
        let (batches, error) = rows_then_error(&ctx, &sql).await;
        let mut got = message_rows(&batches);
        got.sort();
        assert!(got == expected, "{name}: other rows than the reader's");
        let error = error.unwrap_or_else(|| panic!("{name}: no error under on_error 'error'"));
        println!("{name}: {} rows; {error}", got.len());
        assert!(
            error.contains(&name) && error.contains("byte"),
            "{name}: {error}"
        );
    }
}

/// The first row of `sql`, every column cast to f64.
async fn first_row_f64(ctx: &SessionContext, sql: &str) -> Vec<f64> {
    let batches = query(ctx, sql).await;
    let b = &batches[0];
    (0..b.num_columns())
        .map(|i| {
            let c = datafusion::arrow::compute::cast(b.column(i), &DataType::Float64).unwrap();
            let c = c.as_primitive::<Float64Type>();
            assert!(!c.is_null(0), "{sql}: column {i} is null");
            c.value(0)
        })
        .collect()
}

#[tokio::test]
async fn read_topic_decodes_each_decoder_the_files_carry() {
    let ctx = logsql::session_context();
    // ros1 in the bag: /imu (sensor_msgs/Imu), 400 messages, seq 0..399,
    // linear_acceleration.z = 9.81 + [0, 0.05).
    let got = first_row_f64(
        &ctx,
        "SELECT count(*), min(header.seq), max(header.seq), \
         count(DISTINCT header.frame_id), min(linear_acceleration.z), max(linear_acceleration.z) \
         FROM read_topic('tests/data/demo.bag', '/imu')",
    )
    .await;
    assert_eq!(got[..4], [400.0, 0.0, 399.0, 1.0]);
    assert!(got[4] >= 9.81 && got[5] < 9.86, "{got:?}");
    // protobuf in the Apollo record: the chassis at 100 Hz, engine started,
    // speed 8.0 + [0, 0.1).
    let got = first_row_f64(
        &ctx,
        "SELECT count(*), count(*) FILTER (WHERE engine_started), min(speed_mps), max(speed_mps), \
         max(header.sequence_num) \
         FROM read_topic('tests/data/demo.record', '/apollo/canbus/chassis')",
    )
    .await;
    assert_eq!([got[0], got[1], got[4]], [306.0, 306.0, 305.0], "{got:?}");
    assert!(got[2] >= 8.0 && got[3] < 8.1, "{got:?}");
    // ros1 and json in the MCAP: /imu and /diagnostics (level 0, "OK", uptime 0..9).
    let got = first_row_f64(
        &ctx,
        "SELECT count(*), max(header.seq) FROM read_topic('tests/data/demo.mcap', '/imu')",
    )
    .await;
    assert_eq!(got, [2000.0, 1999.0]);
    let got = first_row_f64(
        &ctx,
        "SELECT count(*), count(*) FILTER (WHERE message = 'OK' AND level = 0), \
         min(uptime_s), max(uptime_s) FROM read_topic('tests/data/demo.mcap', '/diagnostics')",
    )
    .await;
    assert_eq!(got, [10.0, 10.0, 0.0, 9.0]);
    // BDDF stores no protobuf schemas (the payloads are typed by name only):
    // its POD series decode with `pod()`. imu/accel: 102 float64[3] samples in
    // 11 blocks of 10 (the last partial), z = 9.81 ± 0.1; the battery: 21 int32
    // samples 3900 + [0, 5).
    let got = first_row_f64(
        &ctx,
        "SELECT count(*), count(DISTINCT block), min(value[3]), max(value[3]) \
         FROM pod('tests/data/demo.bddf', 'imu/accel')",
    )
    .await;
    assert_eq!(got[..2], [102.0, 11.0]);
    assert!(got[2] >= 9.71 && got[3] < 9.91, "{got:?}");
    let got = first_row_f64(
        &ctx,
        "SELECT count(*), min(value), max(value) FROM pod('tests/data/demo.bddf', 'battery/cell_mv')",
    )
    .await;
    assert_eq!(got, [21.0, 3900.0, 3904.0]);
    // CARLA packets decode through its typed tables: 13 actors move in frames
    // 1..99 (the last frame destroys them), the collision of frame 100 is the
    // hero's (actor 4) with actor 5.
    let got = first_row_f64(
        &ctx,
        "SELECT count(*), count(DISTINCT actor_id), min(frame), max(frame) \
         FROM positions('tests/data/demo.log')",
    )
    .await;
    assert_eq!(got, [1287.0, 13.0, 1.0, 99.0]);
    let got = first_row_f64(
        &ctx,
        "SELECT count(*), min(frame), min(actor1_id), min(actor2_id), \
         count(*) FILTER (WHERE actor1_is_hero) FROM collisions('tests/data/demo.log')",
    )
    .await;
    assert_eq!(got, [1.0, 100.0, 4.0, 5.0, 1.0]);
    // ROS 2 CDR in the .db3: /imu decodes with the definition the bag stores
    // (100 Hz for 2 s, frame imu_link, gravity on z), /chatter (no definition
    // in the bag) with the bundled std_msgs/String, /odom_rate 10 + n/4.
    let got = first_row_f64(
        &ctx,
        "SELECT count(*), count(*) FILTER (WHERE header.frame_id = 'imu_link'), \
         min(linear_acceleration.z), max(linear_acceleration.z), \
         min(angular_velocity.z), max(angular_velocity.z) \
         FROM read_topic('tests/data/demo.db3', '/imu')",
    )
    .await;
    assert_eq!(got[..4], [200.0, 200.0, 9.81, 9.81], "{got:?}");
    assert!(got[4] >= 0.0399 && got[5] <= 0.0601, "{got:?}");
    let got = first_row_f64(
        &ctx,
        "SELECT count(*), count(*) FILTER (WHERE data LIKE 'hello %'), \
         max(CAST(substr(data, 7) AS INT)) FROM read_topic('tests/data/demo.db3', '/chatter')",
    )
    .await;
    assert_eq!(got, [20.0, 20.0, 19.0]);
    let got = first_row_f64(
        &ctx,
        "SELECT count(*), min(data), max(data) FROM read_topic('tests/data/demo.db3', '/odom_rate')",
    )
    .await;
    assert_eq!(got, [20.0, 10.0, 14.75]);
}
