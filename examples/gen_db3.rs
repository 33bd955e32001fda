//! Writes a deterministic ROS 2 bag in rosbag2's SQLite storage (one `.db3`
//! database, the layout rosbag2 writes since Iron: `schema`, `metadata`,
//! `topics` with QoS and type hashes, `message_definitions`, `messages` and
//! its timestamp index), for tests and demos.
//!
//! ```text
//! cargo run --example gen_db3 -- OUT.db3 [--seconds 3] [--bench] [--image-bytes 50000] [--yaml]
//! ```
//!
//! Topics, from 2023-11-14T22:13:20Z (the other demo recordings' start):
//! - `/imu` (`sensor_msgs/msg/Imu`), 100 Hz: a slow sine on `linear_acceleration.x`,
//!   gravity on `.z`, a yaw rate on `angular_velocity.z`; its definition is in
//!   `message_definitions` (the concatenated `ros2msg` text);
//! - `/chatter` (`std_msgs/msg/String`), 10 Hz, `hello N`; no definition in the
//!   bag (as in a Humble bag), so `read_topic` decodes it with the bundled
//!   interfaces;
//! - `/odom_rate` (`std_msgs/msg/Float64`), 10 Hz, every other message 2 ms late,
//!   so rows are stored out of time order across topics as recorders do.
//!
//! `tests/data/demo.db3` is written by `tests/data/regenerate.sh` with
//! `--seconds 2` (200 + 20 + 20 messages, 106,496 bytes).
//!
//! `--bench` makes the ROS 2 benchmark recording (`benches/ros2_compare.sh`):
//! the benchmark's topics as in `gen_bag` and `gen_mcap`, `/imu` at 200 Hz,
//! `/camera/image/compressed` (`sensor_msgs/msg/CompressedImage`, 10 Hz,
//! `--image-bytes` on average, ±20%, pseudo-random bytes) and `/tf`
//! (`tf2_msgs/msg/TFMessage`, 50 Hz, one transform) besides `/chatter` and
//! `/odom_rate`; the database is not vacuumed (rosbag2 does not either).
//! 350 s make about 200 MB. `--yaml` also writes the bag directory's
//! `metadata.yaml` beside OUT (version 5, with the per-topic message counts),
//! so that OUT's directory is a bag other readers (`rosbags`) open.

use std::path::PathBuf;

/// The demo recordings' first time, ns since the epoch.
const T0: i64 = 1_700_000_000_000_000_000;

/// `ros2msg` text of a type: its `.msg`, then each dependency after a
/// separator line, as rosbag2 stores it.
fn definition(main: &str, deps: &[(&str, &str)]) -> String {
    let mut text = main.to_string();
    for (name, msg) in deps {
        text.push_str(&format!("\n{}\nMSG: {name}\n{msg}", "=".repeat(80)));
    }
    text
}

/// A CDR (little-endian) payload being written: alignment is relative to the
/// end of the 4-byte encapsulation header.
struct Cdr(Vec<u8>);

impl Cdr {
    fn new() -> Self {
        Cdr(vec![0x00, 0x01, 0x00, 0x00])
    }
    fn align(&mut self, n: usize) {
        while !(self.0.len() - 4).is_multiple_of(n) {
            self.0.push(0);
        }
    }
    fn u32(&mut self, v: u32) {
        self.align(4);
        self.0.extend_from_slice(&v.to_le_bytes());
    }
    fn i32(&mut self, v: i32) {
        self.align(4);
        self.0.extend_from_slice(&v.to_le_bytes());
    }
    fn f64(&mut self, v: f64) {
        self.align(8);
        self.0.extend_from_slice(&v.to_le_bytes());
    }
    fn string(&mut self, s: &str) {
        self.u32(s.len() as u32 + 1);
        self.0.extend_from_slice(s.as_bytes());
        self.0.push(0);
    }
    fn header(&mut self, t: i64, frame: &str) {
        self.i32((t / 1_000_000_000) as i32);
        self.u32((t % 1_000_000_000) as u32);
        self.string(frame);
    }
}

/// `sensor_msgs/msg/Imu` at time `t`, the `i`-th message.
fn imu(t: i64, i: usize) -> Vec<u8> {
    let s = (t - T0) as f64 / 1e9;
    let mut c = Cdr::new();
    c.header(t, "imu_link");
    let yaw = 0.05 * s;
    for v in [0.0, 0.0, (yaw / 2.0).sin(), (yaw / 2.0).cos()] {
        c.f64(v);
    }
    for k in 0..9 {
        c.f64(if k % 4 == 0 { 1e-4 } else { 0.0 });
    }
    for v in [0.0, 0.0, 0.05 + 0.01 * ((i % 7) as f64 - 3.0) / 3.0] {
        c.f64(v);
    }
    for k in 0..9 {
        c.f64(if k % 4 == 0 { 2.5e-5 } else { 0.0 });
    }
    for v in [0.3 * (s * 0.6).sin(), 0.0, 9.81] {
        c.f64(v);
    }
    for k in 0..9 {
        c.f64(if k % 4 == 0 { 4e-4 } else { 0.0 });
    }
    c.0
}

fn main() -> rusqlite::Result<()> {
    let usage = "usage: gen_db3 OUT.db3 [--seconds N] [--bench] [--image-bytes N] [--yaml]";
    let mut args = std::env::args().skip(1);
    let out = PathBuf::from(args.next().expect(usage));
    let mut seconds: i64 = 3;
    let mut bench = false;
    let mut image_bytes: usize = 50_000;
    let mut yaml = false;
    while let Some(a) = args.next() {
        match a.as_str() {
            "--seconds" => {
                seconds = args
                    .next()
                    .and_then(|v| v.parse().ok())
                    .expect("--seconds N")
            }
            "--image-bytes" => {
                image_bytes = args
                    .next()
                    .and_then(|v| v.parse().ok())
                    .expect("--image-bytes N")
            }
            "--bench" => bench = true,
            "--yaml" => yaml = true,
            other => panic!("unknown argument {other}; {usage}"),
        }
    }
    let _ = std::fs::remove_file(&out);
    let mut conn = rusqlite::Connection::open(&out)?;
    conn.execute_batch(
        "PRAGMA page_size = 4096;
         PRAGMA journal_mode = DELETE;
         CREATE TABLE schema(schema_version INTEGER PRIMARY KEY, ros_distro TEXT NOT NULL);
         CREATE TABLE metadata(id INTEGER PRIMARY KEY, metadata_version INTEGER NOT NULL,
                               metadata TEXT NOT NULL);
         CREATE TABLE topics(id INTEGER PRIMARY KEY, name TEXT NOT NULL, type TEXT NOT NULL,
                             serialization_format TEXT NOT NULL,
                             offered_qos_profiles TEXT NOT NULL,
                             type_description_hash TEXT NOT NULL);
         CREATE TABLE message_definitions(id INTEGER PRIMARY KEY, topic_type TEXT NOT NULL,
                                          encoding TEXT NOT NULL,
                                          encoded_message_definition TEXT NOT NULL,
                                          type_description_hash TEXT NOT NULL);
         CREATE TABLE messages(id INTEGER PRIMARY KEY, topic_id INTEGER NOT NULL,
                               timestamp INTEGER NOT NULL, data BLOB NOT NULL);
         CREATE INDEX timestamp_idx ON messages (timestamp ASC);
         INSERT INTO schema VALUES (4, 'jazzy');",
    )?;
    let qos = "- history: 3\n  depth: 0\n  reliability: 1\n  durability: 2\n  deadline:\n    sec: 9223372036\n    nsec: 854775807\n  lifespan:\n    sec: 9223372036\n    nsec: 854775807\n  liveliness: 1\n  liveliness_lease_duration:\n    sec: 9223372036\n    nsec: 854775807\n  avoid_ros_namespace_conventions: false";
    let mut topics = vec![
        (1, "/imu", "sensor_msgs/msg/Imu"),
        (2, "/chatter", "std_msgs/msg/String"),
        (3, "/odom_rate", "std_msgs/msg/Float64"),
    ];
    if bench {
        topics.push((
            4,
            "/camera/image/compressed",
            "sensor_msgs/msg/CompressedImage",
        ));
        topics.push((5, "/tf", "tf2_msgs/msg/TFMessage"));
    }
    let tx = conn.transaction()?;
    for &(id, name, ty) in &topics {
        tx.execute(
            "INSERT INTO topics VALUES (?1, ?2, ?3, 'cdr', ?4, '')",
            rusqlite::params![id, name, ty, qos],
        )?;
    }
    let imu_definition = definition(
        include_str!("../crates/readers/src/ros2_interfaces/sensor_msgs/Imu.msg"),
        &[
            (
                "std_msgs/Header",
                include_str!("../crates/readers/src/ros2_interfaces/std_msgs/Header.msg"),
            ),
            (
                "builtin_interfaces/Time",
                include_str!("../crates/readers/src/ros2_interfaces/builtin_interfaces/Time.msg"),
            ),
            (
                "geometry_msgs/Quaternion",
                include_str!("../crates/readers/src/ros2_interfaces/geometry_msgs/Quaternion.msg"),
            ),
            (
                "geometry_msgs/Vector3",
                include_str!("../crates/readers/src/ros2_interfaces/geometry_msgs/Vector3.msg"),
            ),
        ],
    );
    tx.execute(
        "INSERT INTO message_definitions VALUES (1, 'sensor_msgs/msg/Imu', 'ros2msg', ?1, '')",
        [imu_definition],
    )?;
    tx.execute(
        "INSERT INTO message_definitions VALUES (2, 'std_msgs/msg/Float64', 'ros2msg', ?1, '')",
        [include_str!(
            "../crates/readers/src/ros2_interfaces/std_msgs/Float64.msg"
        )],
    )?;

    // Messages in arrival order: every 10 ms an /imu, every 100 ms a /chatter
    // (at +3 ms) and an /odom_rate (at +7 ms, every other one 2 ms late).
    // `--bench`: another /imu at +5 ms, every 20 ms a /tf (+1 ms) and every
    // 100 ms a camera image (+4 ms).
    let mut rows: Vec<(i64, i64, Vec<u8>)> = Vec::new();
    let ms = 1_000_000;
    let mut rng = 0x9e37_79b9_7f4a_7c15_u64;
    for i in 0..(seconds * 100) as usize {
        let t = T0 + i as i64 * 10 * ms;
        rows.push((t, 1, imu(t, i)));
        if bench {
            rows.push((t + 5 * ms, 1, imu(t + 5 * ms, i)));
            if i % 2 == 0 {
                rows.push((t + ms, 5, tf(t + ms, i)));
            }
            if i % 10 == 0 {
                rows.push((t + 4 * ms, 4, image(t + 4 * ms, image_bytes, &mut rng)));
            }
        }
        if i % 10 == 0 {
            let n = i / 10;
            let mut c = Cdr::new();
            c.string(&format!("hello {n}"));
            rows.push((t + 3 * ms, 2, c.0));
            let late = if n % 2 == 1 { 2 * ms } else { 0 };
            let mut c = Cdr::new();
            c.f64(10.0 + n as f64 / 4.0);
            rows.push((t + 7 * ms + late, 3, c.0));
        }
    }
    // Stored in arrival order, as a recorder does: a late message arrives
    // after the next /imu.
    rows.sort_by_key(|(t, topic, _)| {
        let arrival = if *topic == 3 && (t - T0) / ms % 100 == 9 {
            t + 5 * ms
        } else {
            *t
        };
        (arrival, *topic)
    });
    {
        let mut insert =
            tx.prepare("INSERT INTO messages (topic_id, timestamp, data) VALUES (?1, ?2, ?3)")?;
        for (t, topic, data) in &rows {
            insert.execute(rusqlite::params![topic, t, data])?;
        }
    }
    let metadata = format!(
        "rosbag2_bagfile_information:\n  version: 9\n  storage_identifier: sqlite3\n  \
         duration:\n    nanoseconds: {}\n  starting_time:\n    nanoseconds_since_epoch: {T0}\n  \
         message_count: {}\n  compression_format: \"\"\n  compression_mode: \"\"\n  ros_distro: jazzy\n",
        rows.iter().map(|r| r.0).max().unwrap_or(T0) - T0,
        rows.len()
    );
    tx.execute("INSERT INTO metadata VALUES (1, 9, ?1)", [metadata])?;
    tx.commit()?;
    if !bench {
        conn.execute_batch("VACUUM;")?;
    }
    if yaml {
        let yaml_path = out.with_file_name("metadata.yaml");
        std::fs::write(&yaml_path, metadata_yaml(&out, &topics, qos, &rows))
            .unwrap_or_else(|e| panic!("{}: {e}", yaml_path.display()));
    }
    eprintln!("{}: {} messages", out.display(), rows.len());
    Ok(())
}

/// `tf2_msgs/msg/TFMessage` with one `base_link` -> `odom` transform.
fn tf(t: i64, i: usize) -> Vec<u8> {
    let mut c = Cdr::new();
    c.u32(1);
    c.header(t, "odom");
    c.string("base_link");
    let s = i as f64 * 0.01;
    for v in [
        s.cos(),
        s.sin(),
        0.0,
        0.0,
        0.0,
        (s / 2.0).sin(),
        (s / 2.0).cos(),
    ] {
        c.f64(v);
    }
    c.0
}

/// `sensor_msgs/msg/CompressedImage` of about `mean` bytes (±20%), `jpeg`,
/// pseudo-random bytes (xorshift64 from `state`).
fn image(t: i64, mean: usize, state: &mut u64) -> Vec<u8> {
    let mut next = || {
        *state ^= *state << 13;
        *state ^= *state >> 7;
        *state ^= *state << 17;
        *state
    };
    let n = mean * 8 / 10 + (next() % (mean as u64 * 4 / 10 + 1)) as usize;
    let mut c = Cdr::new();
    c.header(t, "camera");
    c.string("jpeg");
    c.u32(n as u32);
    c.0.reserve(n);
    let mut left = n;
    while left > 0 {
        let word = next().to_le_bytes();
        let k = left.min(8);
        c.0.extend_from_slice(&word[..k]);
        left -= k;
    }
    c.0
}

/// The bag directory's `metadata.yaml` (version 5) for the one database `out`.
/// The topics' QoS text is the database's, so that readers matching the two
/// (`rosbags`) find every topic.
fn metadata_yaml(
    out: &std::path::Path,
    topics: &[(i64, &str, &str)],
    qos: &str,
    rows: &[(i64, i64, Vec<u8>)],
) -> String {
    let first = rows.iter().map(|r| r.0).min().unwrap_or(T0);
    let last = rows.iter().map(|r| r.0).max().unwrap_or(T0);
    let file = out
        .file_name()
        .map(|f| f.to_string_lossy().into_owned())
        .unwrap_or_default();
    let mut y = format!(
        "rosbag2_bagfile_information:\n  version: 5\n  storage_identifier: sqlite3\n  \
         duration:\n    nanoseconds: {}\n  starting_time:\n    nanoseconds_since_epoch: {first}\n  \
         message_count: {}\n  topics_with_message_count:\n",
        last - first,
        rows.len()
    );
    for &(id, name, ty) in topics {
        let n = rows.iter().filter(|r| r.1 == id).count();
        y.push_str(&format!(
            "    - topic_metadata:\n        name: {name}\n        type: {ty}\n        \
             serialization_format: cdr\n        offered_qos_profiles: {qos:?}\n      message_count: {n}\n"
        ));
    }
    y.push_str(&format!(
        "  compression_format: \"\"\n  compression_mode: \"\"\n  relative_file_paths:\n    - {file}\n  \
         files:\n    - path: {file}\n      starting_time:\n        nanoseconds_since_epoch: {first}\n      \
         duration:\n        nanoseconds: {}\n      message_count: {}\n",
        last - first,
        rows.len()
    ));
    y
}
