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

/// The query of the example over `runs`: state and action from
/// joint states and commands, the front camera, a constant task.
fn dataset_sql(runs: &str, out: &str, options: &str) -> String {
    format!(
        "COPY (SELECT g.episode_index, g.log_time, g.file, \
           j.position AS \"observation.state\", c.position AS action, \
           i.image AS \"observation.images.front\", 'pick the cube' AS task \
         FROM time_grid('{runs}/', 30) g \
         ASOF JOIN read_topic('{runs}/', '/joint_states') j MATCH_CONDITION (g.log_time >= j.log_time) ON g.file = j.file \
         ASOF JOIN read_topic('{runs}/', '/cmd') c MATCH_CONDITION (g.log_time >= c.log_time) ON g.file = c.file \
         ASOF JOIN read_images('{runs}/', '/camera/front') i MATCH_CONDITION (g.log_time >= i.log_time) ON g.file = i.file \
        ) TO '{out}' STORED AS LEROBOT OPTIONS (fps '30', robot_type 'demo_arm'{options})"
    )
}

fn json_rows(sql: &str) -> Vec<serde_json::Value> {
    let text = ok(&["--format", "json", sql]);
    match serde_json::from_str::<serde_json::Value>(&text).unwrap() {
        serde_json::Value::Array(rows) => rows,
        other => panic!("not an array: {other}"),
    }
}

fn floats(v: &serde_json::Value) -> Vec<f64> {
    v.as_array()
        .unwrap_or_else(|| panic!("not a list: {v}"))
        .iter()
        .map(|x| x.as_f64().unwrap())
        .collect()
}

/// A float32 list of the JSON output (printed shortest, so read back as f32).
fn f32s(v: &serde_json::Value) -> Vec<f32> {
    floats(v).into_iter().map(|x| x as f32).collect()
}

/// The generator's value at the latest message at or before `t` (a topic of
/// period `period` starting at `offset`), as float32.
fn latest(f: impl Fn(usize, f64) -> f64, t: f64, offset: f64, period: f64) -> Vec<f32> {
    let i = ((t - offset) / period + 1e-9).floor();
    let at = offset + i * period;
    (0..crate::robot::JOINTS).map(|j| f(j, at) as f32).collect()
}

#[test]
fn copy_writes_a_lerobot_dataset_from_recordings() {
    let dir = tempfile::tempdir().unwrap();
    let runs = recordings(dir.path());
    let runs = runs.to_str().unwrap();
    let out = dir.path().join("ds");
    let out_s = out.to_str().unwrap();
    ok(&[&dataset_sql(runs, out_s, "")]);
    for f in [
        "data/chunk-000/file-000.parquet",
        "videos/observation.images.front/chunk-000/file-000.mp4",
        "meta/info.json",
        "meta/stats.json",
        "meta/tasks.parquet",
        "meta/episodes/chunk-000/file-000.parquet",
    ] {
        assert!(out.join(f).is_file(), "{f} missing");
    }
    // The camera's first frame is 50 ms in: grid frames 0 and 1 (0, 33 ms)
    // of each recording are dropped, so episodes hold 59 and 89 frames.
    let info: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(out.join("meta/info.json")).unwrap())
            .unwrap();
    assert_eq!(info["codebase_version"], "v3.0");
    assert_eq!(info["fps"], 30);
    assert_eq!(info["robot_type"], "demo_arm");
    assert_eq!(info["total_episodes"], 2);
    assert_eq!(info["total_frames"], 148);
    assert_eq!(info["total_tasks"], 1);
    assert_eq!(info["splits"]["train"], "0:2");
    let features = &info["features"];
    assert_eq!(
        features["observation.state"]["shape"],
        serde_json::json!([6])
    );
    assert_eq!(features["observation.state"]["dtype"], "float32");
    assert_eq!(features["action"]["shape"], serde_json::json!([6]));
    let front = &features["observation.images.front"];
    assert_eq!(front["dtype"], "video");
    assert_eq!(front["shape"], serde_json::json!([48, 64, 3]));
    assert_eq!(front["info"]["video.codec"], "h264");
    assert_eq!(features["timestamp"]["dtype"], "float32");
    assert_eq!(features["task_index"]["dtype"], "int64");

    // Data: frame 0 of episode 0 is grid frame 2 (66.667 ms): the joint state
    // of 60 ms and the command of 20 ms.
    let data = out.join("data/chunk-000/file-000.parquet");
    let data = data.to_str().unwrap();
    let rows = json_rows(&format!(
        "SELECT \"observation.state\" s, action a, timestamp, frame_index, episode_index, \"index\", task_index \
         FROM '{data}' WHERE \"index\" IN (0, 58, 59, 147) ORDER BY \"index\""
    ));
    assert_eq!(rows.len(), 4);
    let t0 = 2.0 / 30.0;
    let state = |seed: u32, t: f64| {
        latest(
            |j, at| crate::robot::joint_position(seed, j, at),
            t,
            0.0,
            0.01,
        )
    };
    let action =
        |seed: u32, t: f64| latest(|j, at| crate::robot::command(seed, j, at), t, 0.02, 0.1);
    assert_eq!(f32s(&rows[0]["s"]), state(0, t0));
    assert_eq!(f32s(&rows[0]["a"]), action(0, t0));
    assert_eq!(rows[0]["timestamp"].as_f64().unwrap(), 0.0);
    assert_eq!(rows[0]["frame_index"], 0);
    // The last frame of episode 0: grid frame 60 (2 s).
    assert_eq!(f32s(&rows[1]["s"]), state(0, 2.0));
    assert_eq!(rows[1]["frame_index"], 58);
    assert_eq!(rows[1]["timestamp"].as_f64().unwrap() as f32, 58f32 / 30f32);
    // Episode 1 starts at index 59 with its own recording's values.
    assert_eq!(f32s(&rows[2]["s"]), state(1, t0));
    assert_eq!(f32s(&rows[2]["a"]), action(1, t0));
    assert_eq!(
        (
            rows[2]["episode_index"].as_i64(),
            rows[2]["frame_index"].as_i64()
        ),
        (Some(1), Some(0))
    );
    assert_eq!(f32s(&rows[3]["s"]), state(1, 3.0));
    assert_eq!(rows[3]["task_index"], 0);

    // Episodes: lengths, index ranges and video spans (both episodes in one
    // video file, the second from 59/30 s).
    let episodes = out.join("meta/episodes/chunk-000/file-000.parquet");
    let rows = json_rows(&format!(
        "SELECT episode_index, length, dataset_from_index, dataset_to_index, tasks, \
           \"videos/observation.images.front/file_index\" vf, \
           \"videos/observation.images.front/from_timestamp\" vfrom, \
           \"videos/observation.images.front/to_timestamp\" vto, \
           \"stats/observation.state/min\" smin, \"stats/observation.state/count\" scount, \
           \"stats/frame_index/max\" fmax \
         FROM '{}' ORDER BY episode_index",
        episodes.display()
    ));
    assert_eq!(rows.len(), 2);
    assert_eq!(
        (rows[0]["length"].as_i64(), rows[1]["length"].as_i64()),
        (Some(59), Some(89))
    );
    assert_eq!(rows[1]["dataset_from_index"], 59);
    assert_eq!(rows[1]["dataset_to_index"], 148);
    assert_eq!(rows[0]["tasks"], serde_json::json!(["pick the cube"]));
    assert_eq!(rows[1]["vf"], 0);
    assert_eq!(rows[0]["vfrom"].as_f64().unwrap(), 0.0);
    assert_eq!(rows[1]["vfrom"].as_f64().unwrap(), 59.0 / 30.0);
    assert_eq!(rows[1]["vto"].as_f64().unwrap(), 148.0 / 30.0);
    assert_eq!(rows[0]["scount"], serde_json::json!([59]));
    assert_eq!(floats(&rows[1]["fmax"]), [88.0]);
    // The episode minimum of joint 0 is the least of its 59 stored values.
    let min0 = (2..=60)
        .map(|k| f64::from(state(0, f64::from(k) / 30.0)[0]))
        .fold(f64::INFINITY, f64::min);
    assert_eq!(floats(&rows[0]["smin"])[0], min0);

    // stats.json: counts and the timestamp range over both episodes.
    let stats: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(out.join("meta/stats.json")).unwrap())
            .unwrap();
    assert_eq!(stats["action"]["count"], serde_json::json!([148]));
    assert_eq!(
        floats(&stats["timestamp"]["max"]),
        [f64::from(88f32 / 30f32)]
    );
    assert_eq!(floats(&stats["index"]["mean"]), [73.5]);
    let mean = &stats["observation.images.front"]["mean"];
    assert_eq!(mean.as_array().unwrap().len(), 3, "{mean}");

    // The video: one frame per data row, 1/30 s apart.
    let mp4 =
        std::fs::read(out.join("videos/observation.images.front/chunk-000/file-000.mp4")).unwrap();
    let size = mp4.len() as u64;
    let mut r = mp4::Mp4Reader::read_header(std::io::Cursor::new(mp4), size).unwrap();
    let track = r.tracks().get(&1).unwrap();
    assert_eq!(track.sample_count(), 148);
    assert_eq!((track.width(), track.height()), (64, 48));
    let s = r.read_sample(1, 60).unwrap().unwrap();
    assert_eq!(
        s.start_time,
        59 * 3000,
        "frame 59 at 59/30 s of 90 kHz ticks"
    );
}

#[test]
fn images_can_be_stored_as_png_in_the_data_files() {
    let dir = tempfile::tempdir().unwrap();
    let runs = recordings(dir.path());
    let runs = runs.to_str().unwrap();
    let out = dir.path().join("ds");
    ok(&[&dataset_sql(
        runs,
        out.to_str().unwrap(),
        ", images 'parquet'",
    )]);
    assert!(!out.join("videos").exists());
    let info = std::fs::read_to_string(out.join("meta/info.json")).unwrap();
    let info: serde_json::Value = serde_json::from_str(&info).unwrap();
    assert_eq!(
        info["features"]["observation.images.front"]["dtype"],
        "image"
    );
    assert_eq!(info["video_path"], serde_json::Value::Null);
    // Frame 0 (66.667 ms) shows camera message 0 (50 ms), losslessly.
    let data = out.join("data/chunk-000/file-000.parquet");
    let hex = rows(&format!(
        "SELECT encode(\"observation.images.front\"['bytes'], 'hex') FROM '{}' WHERE \"index\" = 0",
        data.display()
    ));
    let bytes: Vec<u8> = (0..hex[0][0].len())
        .step_by(2)
        .map(|i| u8::from_str_radix(&hex[0][0][i..i + 2], 16).unwrap())
        .collect();
    let px = logsql_media::images::codec::decode("png", &bytes).unwrap();
    assert_eq!((px.width, px.height), (64, 48));
    assert_eq!(
        px.data,
        crate::robot::frame(crate::robot::front_pixel, 0, 64, 48)
    );
}

#[test]
fn a_changing_vector_length_fails_naming_episode_file_and_time_and_leaves_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let runs = recordings(dir.path());
    let runs = runs.to_str().unwrap();
    let out = dir.path().join("ds");
    let sql = format!(
        "COPY (SELECT g.episode_index, g.log_time, g.file, \
           CASE WHEN g.frame_index < 10 THEN [1.0, 2.0, 3.0] ELSE [1.0, 2.0] END AS \"observation.state\" \
         FROM time_grid('{runs}/a.mcap', 30) g) TO '{}' STORED AS LEROBOT OPTIONS (fps '30')",
        out.display()
    );
    let e = err(&[&sql]);
    assert!(
        e.contains(&format!(
            "episode 0 ({runs}/a.mcap): feature \"observation.state\" has 2 values at log_time {} ns, but 3 before",
            START + 333_333_333
        )),
        "{e}"
    );
    assert!(!out.exists());
    let left: Vec<_> = std::fs::read_dir(dir.path())
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .collect();
    assert_eq!(
        left,
        [std::ffi::OsString::from("runs")],
        "a temporary directory was left"
    );
}

#[test]
fn a_topic_missing_from_a_recording_and_a_used_target_are_refused() {
    let dir = tempfile::tempdir().unwrap();
    let runs = dir.path().join("runs");
    std::fs::create_dir_all(&runs).unwrap();
    let with_wrist = RobotOptions {
        wrist: true,
        ..RobotOptions::default()
    };
    write_robot(&runs.join("a.mcap"), &with_wrist).unwrap();
    write_robot(&runs.join("b.mcap"), &RobotOptions::default()).unwrap();
    let runs = runs.to_str().unwrap();
    let out = dir.path().join("ds");
    let sql = format!(
        "COPY (SELECT g.episode_index, g.log_time, g.file, j.position AS \"observation.state\", \
           w.image AS \"observation.images.wrist\" \
         FROM time_grid('{runs}/', 30) g \
         ASOF JOIN read_topic('{runs}/', '/joint_states') j MATCH_CONDITION (g.log_time >= j.log_time) ON g.file = j.file \
         ASOF JOIN read_images('{runs}/', '/camera/wrist') w MATCH_CONDITION (g.log_time >= w.log_time) ON g.file = w.file \
        ) TO '{}' STORED AS LEROBOT OPTIONS (fps '30')",
        out.display()
    );
    let e = err(&[&sql]);
    assert!(
        e.contains(&format!(
            "episode 1 ({runs}/b.mcap): no row has every feature"
        )),
        "{e}"
    );
    assert!(!out.exists());
    // A directory with files in it is never written over.
    std::fs::create_dir_all(&out).unwrap();
    std::fs::write(out.join("keep.txt"), "mine").unwrap();
    let e = err(&[&dataset_sql(runs, out.to_str().unwrap(), "")]);
    assert!(e.contains("exists and is not empty"), "{e}");
    assert_eq!(
        std::fs::read_to_string(out.join("keep.txt")).unwrap(),
        "mine"
    );
    // Without fps: the error says how to give it.
    let e = err(&[&format!(
        "COPY (SELECT 0 AS episode_index, 0.0 AS timestamp, 1.0 AS x) TO '{}/x' STORED AS LEROBOT",
        dir.path().display()
    )]);
    assert!(e.contains("OPTIONS (fps '30')"), "{e}");
}

#[test]
fn dataset_writes_what_its_spec_describes_and_prints_its_sql() {
    let dir = tempfile::tempdir().unwrap();
    let runs = recordings(dir.path());
    let spec = dir.path().join("spec.toml");
    std::fs::write(
        &spec,
        format!(
            "input = \"{}/\"\nfps = 30\nrobot_type = \"demo_arm\"\ntask = \"pick the cube\"\n\
             [features]\n\"observation.state\" = {{ topic = \"/joint_states\", field = \"position\" }}\n\
             \"observation.effort\" = {{ topic = \"/joint_states\", fields = [\"header.seq\"] }}\n\
             \"action\" = {{ topic = \"/cmd\", field = \"position\" }}\n\
             [cameras]\n\"observation.images.front\" = \"/camera/front\"\n",
            runs.display()
        ),
    )
    .unwrap();
    let out = dir.path().join("ds");
    let sql = ok(&[
        "dataset",
        spec.to_str().unwrap(),
        "-o",
        out.to_str().unwrap(),
        "--print-sql",
    ]);
    assert!(sql.starts_with("COPY (\nSELECT g.episode_index"), "{sql}");
    assert!(
        sql.contains("STORED AS LEROBOT OPTIONS (fps '30', robot_type 'demo_arm')"),
        "{sql}"
    );
    assert!(!out.exists(), "--print-sql writes nothing");
    let said = ok(&[
        "dataset",
        spec.to_str().unwrap(),
        "-o",
        out.to_str().unwrap(),
    ]);
    assert!(said.contains("148 frames written"), "{said}");
    let info: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(out.join("meta/info.json")).unwrap())
            .unwrap();
    assert_eq!(info["total_frames"], 148);
    let effort = &info["features"]["observation.effort"];
    assert_eq!(effort["names"], serde_json::json!(["header.seq"]));
    assert_eq!(effort["shape"], serde_json::json!([1]));
    // The values of the example query.
    let data = out.join("data/chunk-000/file-000.parquet");
    let rows = json_rows(&format!(
        "SELECT \"observation.state\" s, \"observation.effort\" e FROM '{}' WHERE \"index\" = 0",
        data.display()
    ));
    let t0 = 2.0 / 30.0;
    let want = latest(
        |j, at| crate::robot::joint_position(0, j, at),
        t0,
        0.0,
        0.01,
    );
    assert_eq!(f32s(&rows[0]["s"]), want);
    // Joint state 6 (60 ms).
    assert_eq!(f32s(&rows[0]["e"]), [6.0]);
}
