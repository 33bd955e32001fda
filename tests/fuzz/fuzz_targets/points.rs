//! Fuzz target: a point-cloud layout and its bytes, laid out as
//! `logsql_fuzz::split_points_input` describes, read into Arrow and written
//! as PCD and PLY (see `logsql_fuzz::exercise_points`).

#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    logsql_fuzz::exercise_points(data);
});
