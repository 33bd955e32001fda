//! Fuzz target: one camera image, compressed or raw, in the layout of
//! `logsql_fuzz::split_image_input` (see `logsql_fuzz::exercise_image`).

#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    logsql_fuzz::exercise_image(data);
});
