//! LeRobot datasets through the `logsql` binary: `time_grid` and `COPY ... TO
//! 'dir' STORED AS LEROBOT` over recordings of `benches/support/robot.rs`
//! (joint states at 100 Hz, commands at 10 Hz, a camera at 30 Hz), checked
//! against the generator's own formulas.

use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

use crate::robot::{RobotOptions, write_robot};

fn logsql(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_logsql"))
        .args(args)
        .stdin(Stdio::null())
        .output()
        .expect("run logsql")
}

fn ok(args: &[&str]) -> String {
    let out = logsql(args);
    assert!(
        out.status.success(),
        "logsql {args:?} failed:\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap()
}

fn err(args: &[&str]) -> String {
    let out = logsql(args);
    assert!(!out.status.success(), "logsql {args:?} succeeded");
    String::from_utf8(out.stderr).unwrap()
}

/// The CSV rows (without the header) of `sql`.
fn rows(sql: &str) -> Vec<Vec<String>> {
    ok(&["--format", "csv", sql])
        .lines()
        .skip(1)
        .map(|l| l.split(',').map(str::to_string).collect())
        .collect()
}

/// Two recordings in `dir/runs/`: `a.mcap` (2 s, from `START`) and `b.mcap`
/// (3 s, seed 1, 100 s later).
const START: u64 = 1_700_000_000_000_000_000;

fn recordings(dir: &Path) -> PathBuf {
    let runs = dir.join("runs");
    std::fs::create_dir_all(&runs).unwrap();
    let a = RobotOptions::default();
    write_robot(&runs.join("a.mcap"), &a).unwrap();
    let b = RobotOptions {
        seconds: 3.0,
        seed: 1,
        start_ns: START + 100_000_000_000,
        ..RobotOptions::default()
    };
    write_robot(&runs.join("b.mcap"), &b).unwrap();
    runs
}

#[test]
fn time_grid_gives_one_episode_per_recording_at_the_frame_rate() {
    let dir = tempfile::tempdir().unwrap();
    let runs = recordings(dir.path());
    let runs = runs.to_str().unwrap();
    let per_episode = rows(&format!(
        "SELECT episode_index, count(*), min(frame_index), max(frame_index), \
         CAST(min(log_time) AS BIGINT), CAST(max(log_time) AS BIGINT), min(file) \
         FROM time_grid('{runs}/', 30) GROUP BY episode_index ORDER BY episode_index"
    ));
    let a = format!("{runs}/a.mcap");
    let b = format!("{runs}/b.mcap");
    // 2 s at 30 fps: frames 0..=60 (the last message is at exactly 2 s).
    assert_eq!(
        per_episode,
        [
            vec![
                "0",
                "61",
                "0",
                "60",
                &START.to_string(),
                &(START + 2_000_000_000).to_string(),
                &a
            ],
            vec![
                "1",
                "91",
                "0",
                "90",
                &(START + 100_000_000_000).to_string(),
                &(START + 103_000_000_000).to_string(),
                &b
            ],
        ]
    );
    // Frame times are the start plus frame_index / fps, rounded to the nanosecond.
    let third = rows(&format!(
        "SELECT CAST(log_time AS BIGINT) FROM time_grid('{runs}/a.mcap', 30) WHERE frame_index = 1"
    ));
    assert_eq!(third, [vec![(START + 33_333_333).to_string()]]);
    // The file column pairs with read_topic's: every grid row finds its joint state.
    let joined = rows(&format!(
        "SELECT count(*), count(j.position) FROM time_grid('{runs}/', 30) g \
         ASOF JOIN read_topic('{runs}/', '/joint_states') j \
         MATCH_CONDITION (g.log_time >= j.log_time) ON g.file = j.file"
    ));
    assert_eq!(joined, [vec!["152", "152"]]);
}

#[test]
fn time_grid_refuses_a_bad_frame_rate_and_an_empty_path() {
    let dir = tempfile::tempdir().unwrap();
    let runs = recordings(dir.path());
    let runs = runs.to_str().unwrap();
    let e = err(&[&format!("SELECT * FROM time_grid('{runs}/', 0)")]);
    assert!(
        e.contains("frame rate '0' is not a number of frames per second"),
        "{e}"
    );
    let e = err(&[&format!("SELECT * FROM time_grid('{runs}/')")]);
    assert!(e.contains("time_grid() takes a path"), "{e}");
}
