//! Fuzz target: the input is a whole rosbag2 SQLite database; every message
//! read from it is written into a new `.db3` by the ROS 2 bag writer and read
//! back (see `logsql_fuzz::exercise_db3_write`).

#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    logsql_fuzz::exercise_db3_write(data);
});
