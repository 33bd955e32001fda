//! Small rosbag2 SQLite databases written for tests: `n` CDR string messages
//! on two topics, with or without the timestamp index, payloads plain or as
//! zstd frames. The reader's tests use them, and so do the engine's
//! (`tests/it/engine_ros2.rs`, `hostile_inputs.rs`, which include this file).

use std::path::Path;

/// A rosbag2 database written here: `n` messages of `payload` bytes on two
/// topics, 1 ms apart, with or without the timestamp index; `compress`
/// stores each payload as a zstd frame.
pub fn write_bag(path: &Path, n: i64, payload: usize, index: bool, compress: bool) {
    let conn = rusqlite::Connection::open(path).unwrap();
    fill_bag(&conn, n, payload, index, compress);
}

/// [`write_bag`] into an open database.
pub fn fill_bag(conn: &rusqlite::Connection, n: i64, payload: usize, index: bool, compress: bool) {
    conn.execute_batch(
        "CREATE TABLE topics(id INTEGER PRIMARY KEY, name TEXT NOT NULL, type TEXT NOT NULL,
           serialization_format TEXT NOT NULL, offered_qos_profiles TEXT NOT NULL);
         CREATE TABLE messages(id INTEGER PRIMARY KEY, topic_id INTEGER NOT NULL,
           timestamp INTEGER NOT NULL, data BLOB NOT NULL);
         INSERT INTO topics VALUES (1, '/imu', 'std_msgs/msg/String', 'cdr', ''),
                                   (2, '/gps', 'std_msgs/msg/String', 'cdr', '');",
    )
    .unwrap();
    if index {
        conn.execute_batch("CREATE INDEX timestamp_idx ON messages (timestamp ASC);")
            .unwrap();
    }
    let tx = conn.unchecked_transaction().unwrap();
    {
        let mut stmt = tx
            .prepare("INSERT INTO messages(topic_id, timestamp, data) VALUES (?1, ?2, ?3)")
            .unwrap();
        for i in 0..n {
            let data = payload_of(i, payload);
            let data = if compress {
                zstd::bulk::compress(&data, 3).unwrap()
            } else {
                data
            };
            stmt.execute(rusqlite::params![
                1 + i % 2,
                1_000_000_000 + i * 1_000_000,
                data
            ])
            .unwrap();
        }
    }
    tx.commit().unwrap();
}

/// The payload of message `i`: a CDR string `msg <i>` padded to `len` bytes.
pub fn payload_of(i: i64, len: usize) -> Vec<u8> {
    let text = format!("msg {i}");
    let mut v = vec![0, 1, 0, 0];
    v.extend_from_slice(&(text.len() as u32 + 1).to_le_bytes());
    v.extend_from_slice(text.as_bytes());
    v.push(0);
    v.resize(len.max(v.len()), 0);
    v
}
