//! The `logsql` command-line tool: SQL over robot log files.
//!
//! Everything lives in the [`cli`] module; this file only hands over to it.

mod cli;

fn main() -> std::process::ExitCode {
    cli::main()
}
