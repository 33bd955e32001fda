//! Fuzz target: the input is a whole rosbag2 SQLite database (`.db3`, or a
//! zstd-compressed one), read through every path of
//! `logsql_readers::formats::ros2::Ros2Format` (see `logsql_fuzz::exercise_format`).
//! Each input is written to a temporary file that the bundled SQLite opens.

#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    logsql_fuzz::exercise_format(&logsql_readers::formats::ros2::Ros2Format, data);
});
