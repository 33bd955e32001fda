//! Fuzz target: the input is a whole ROS1 bag file; every message read from
//! it is written with the bag writer and read back (see
//! `logsql_fuzz::exercise_bag_write`).

#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    logsql_fuzz::exercise_bag_write(data);
});
