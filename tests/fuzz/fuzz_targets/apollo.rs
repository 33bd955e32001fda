//! Fuzz target: the input is a whole Apollo Cyber RT record file, read through every path of
//! `logsql_readers::formats::apollo::ApolloFormat` (see `logsql_fuzz::exercise_format`).

#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    logsql_fuzz::exercise_format(&logsql_readers::formats::apollo::ApolloFormat, data);
});
