//! Control characters from the data never reach a terminal raw: `logsql`
//! run in a pseudo-terminal shows a topic name holding OSC 52, title,
//! clear-screen, C1 and DEL characters as visible escapes in the table,
//! `topics`, `info` and error messages, while CSV on a terminal and the table
//! into a pipe keep the bytes unchanged.

use std::path::Path;
use std::process::{Command, Stdio};

use crate::cli_safe_writes::{hostile_topic, write_hostile_mcap};

/// Everything `logsql ARGS` (run in `dir`) writes to its pseudo-terminal.
fn in_pty(dir: &Path, args: &[&str]) -> String {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_logsql"));
    cmd.args(args).current_dir(dir).env("TERM", "xterm");
    let mut session =
        rexpect::session::spawn_command(cmd, Some(60_000)).expect("spawn logsql in a pty");
    session.exp_eof().expect("logsql ends")
}

/// The raw control characters of the hostile topic.
const RAW: [char; 4] = ['\u{1b}', '\u{7}', '\u{9b}', '\u{7f}'];

fn assert_escaped(what: &str, out: &str) {
    assert!(
        !out.contains(RAW),
        "{what}: a control character reached the terminal: {out:?}"
    );
    assert!(out.contains("/x\\x1b]52;c;aGk=\\x07"), "{what}: {out:?}");
}

#[test]
fn data_control_characters_are_escaped_on_a_terminal() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    write_hostile_mcap(dir);
    let table = in_pty(dir, &["SELECT DISTINCT topic FROM 'hostile.mcap'"]);
    assert_escaped("table", &table);
    let topics = in_pty(dir, &["topics", "hostile.mcap"]);
    assert_escaped("topics", &topics);
    let info = in_pty(dir, &["info", "hostile.mcap"]);
    assert_escaped("info", &info);
    // The whole name, escaped, where it fits.
    assert!(
        info.contains("/x\\x1b]52;c;aGk=\\x07\\x1b]0;pwned\\x07\\x1b[2J\\u{9b}31m\\x7f"),
        "{info:?}"
    );
    // An error message quoting the data (the topics of the file) on stderr.
    let err = in_pty(
        dir,
        &["export", "hostile.mcap", "o.parquet", "--topic", "/nope"],
    );
    assert!(err.contains("error: --topic /nope"), "{err:?}");
    assert_escaped("error", &err);
}

#[test]
fn machine_formats_and_pipes_keep_the_bytes() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    write_hostile_mcap(dir);
    let csv = in_pty(
        dir,
        &[
            "--format",
            "csv",
            "SELECT DISTINCT topic FROM 'hostile.mcap'",
        ],
    );
    // (The pty session reads bytes as Latin-1: the ASCII part is compared.)
    let ascii: String = hostile_topic().chars().take_while(char::is_ascii).collect();
    assert!(csv.contains(&ascii), "{csv:?}");
    let piped = Command::new(env!("CARGO_BIN_EXE_logsql"))
        .args(["SELECT DISTINCT topic FROM 'hostile.mcap'"])
        .current_dir(dir)
        .stdin(Stdio::null())
        .output()
        .unwrap();
    assert!(piped.status.success());
    let text = String::from_utf8(piped.stdout).unwrap();
    assert!(text.contains(hostile_topic()), "{text:?}");
}

/// The interactive shell escapes whatever format `\format` switches to: a
/// shell started with `--format csv` shows the table of `\format table`
/// escaped as the table of a plain run is.
#[test]
fn the_shell_escapes_after_a_format_switch() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    write_hostile_mcap(dir);
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_logsql"));
    cmd.args(["--format", "csv"])
        .current_dir(dir)
        .env("TERM", "dumb");
    let mut shell =
        rexpect::session::spawn_command(cmd, Some(60_000)).expect("spawn the shell in a pty");
    shell.send_line("\\format table").unwrap();
    shell
        .send_line("SELECT DISTINCT topic FROM 'hostile.mcap';")
        .unwrap();
    let table = shell.exp_string("1 row").expect("the table's row count");
    assert_escaped("the shell's table after \\format", &table);
    shell.send_line("\\q").unwrap();
    shell.exp_eof().expect("the shell ends");
}
