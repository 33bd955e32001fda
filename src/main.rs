//! The `logsql` command-line tool: SQL over robot log files.
//!
//! Everything lives in the [`cli`] module; this file only removes the
//! temporary directories of `logsql` processes that no longer run, then hands
//! over to it.

#![forbid(unsafe_code)]

mod cli;

fn main() -> std::process::ExitCode {
    // Temporary copies a killed `logsql` left behind in `$TMPDIR`.
    logsql_readers::formats::ros2::temp::remove_stale_now();
    cli::main()
}
