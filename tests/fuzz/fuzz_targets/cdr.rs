//! Fuzz target: a ROS 2 message definition (`ros2msg`) and a CDR payload,
//! laid out as `[u8 name length][type name][u16 LE schema length][schema][payload]`
//! (see `logsql_fuzz::exercise_decoder`).

#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    logsql_fuzz::exercise_decoder("cdr", "ros2msg", data);
});
