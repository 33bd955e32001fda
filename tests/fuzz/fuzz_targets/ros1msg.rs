//! Fuzz target: a ROS1 message definition (`ros1msg`) and a `ros1` payload,
//! laid out as `[u8 name length][type name][u16 LE schema length][schema][payload]`
//! (see `logsql_fuzz::exercise_decoder`).

#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    logsql_fuzz::exercise_decoder("ros1", "ros1msg", data);
});
