//! Fuzz target: the input is a whole Boston Dynamics BDDF file, read through every path of
//! `logsql_readers::formats::bddf::BddfFormat` (see `logsql_fuzz::exercise_format`).

#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    logsql_fuzz::exercise_format(&logsql_readers::formats::bddf::BddfFormat, data);
});
