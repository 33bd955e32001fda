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

/// A metric of an `EXPLAIN ANALYZE` line: the largest `name=N` on lines
/// naming `node`.
fn largest_metric(plan: &str, node: &str, name: &str) -> u64 {
    plan.lines()
        .filter(|l| l.contains(node))
        .filter_map(|l| {
            let at = l.find(&format!("{name}="))? + name.len() + 1;
            let digits: String = l[at..].chars().take_while(char::is_ascii_digit).collect();
            digits.parse().ok()
        })
        .max()
        .unwrap_or_else(|| panic!("no {name} on {node}:\n{plan}"))
}

/// Where the scans declare no order (`logsql.time_order = false`, as for
/// recordings whose chunks overlap in time), the images are sorted by file
/// and time for the join, on the right columns (`read_images` puts `file`
/// elsewhere than its scan does), in one partition and in several: the same
/// rows as in order.
#[test]
fn images_joined_from_unordered_scans_are_sorted_on_the_right_columns() {
    let dir = tempfile::tempdir().unwrap();
    let runs = recordings(dir.path());
    let runs = runs.to_str().unwrap();
    let query = format!(
        "SELECT g.episode_index, g.frame_index, i.log_time, i.width FROM time_grid('{runs}/', 30) g \
         ASOF JOIN read_images('{runs}/', '/camera/front') i MATCH_CONDITION (g.log_time >= i.log_time) ON g.file = i.file \
         ORDER BY g.episode_index, g.frame_index"
    );
    let want = rows(&query);
    assert!(want.len() > 100, "{want:?}");
    for partitions in [1, 2] {
        let got = rows(&format!(
            "SET logsql.time_order = false; SET datafusion.execution.target_partitions = {partitions}; {query}"
        ));
        assert_eq!(got, want, "{partitions} partitions");
    }
}

/// Each topic joined onto the grid streams: the scans of recordings in time
/// order are merged by (file, log_time), never sorted, also when one
/// partition reads recordings whose times overlap (their names order them),
/// and each join holds only the topic's rows around one batch of frames.
#[test]
fn a_dataset_query_merges_its_topics_in_order_and_holds_one_batch_of_frames() {
    let dir = tempfile::tempdir().unwrap();
    let runs = dir.path().join("runs");
    std::fs::create_dir_all(&runs).unwrap();
    for (name, seed) in [("a.mcap", 0), ("b.mcap", 1), ("c.mcap", 2)] {
        // Overlapping in time: only the file names order them.
        let options = RobotOptions {
            seed,
            start_ns: START + u64::from(seed) * 500_000_000,
            ..RobotOptions::default()
        };
        write_robot(&runs.join(name), &options).unwrap();
    }
    let runs = runs.to_str().unwrap();
    let select = |partitions: usize| {
        format!(
            "SET datafusion.execution.target_partitions = {partitions}; \
             SET datafusion.execution.batch_size = 8; \
             EXPLAIN ANALYZE SELECT count(i.image), count(j.position) \
             FROM time_grid('{runs}/', 30) g \
             ASOF JOIN read_topic('{runs}/', '/joint_states') j MATCH_CONDITION (g.log_time >= j.log_time) ON g.file = j.file \
             ASOF JOIN read_images('{runs}/', '/camera/front') i MATCH_CONDITION (g.log_time >= i.log_time) ON g.file = i.file"
        )
    };
    for partitions in [1, 2] {
        let plan = ok(&["--format", "csv", &select(partitions)]);
        assert!(!plan.contains("SortExec"), "{partitions}: {plan}");
        assert!(
            plan.matches("SortPreservingMergeExec: [file@").count() == 2 || partitions == 1,
            "{partitions}: {plan}"
        );
        // 8 frames a batch: a 30 Hz camera has at most 8 images in them
        // (and the one before), 100 Hz joints at most 28.
        let held = largest_metric(&plan, "AsofJoinExec", "max_buffered_rows");
        assert!(held <= 40, "{partitions}: {held} rows held\n{plan}");
    }
    // The rows are right: every frame of the three recordings, and each
    // image the latest of some frame (camera and grid at 30 Hz).
    let got = rows(&format!(
        "SELECT count(*), count(DISTINCT i.log_time) FROM time_grid('{runs}/', 30) g \
         ASOF JOIN read_images('{runs}/', '/camera/front') i MATCH_CONDITION (g.log_time >= i.log_time) ON g.file = i.file"
    ));
    let frames = rows(&format!("SELECT count(*) FROM time_grid('{runs}/', 30)"));
    assert_eq!(got[0][0], frames[0][0]);
    let images = rows(&format!(
        "SELECT count(*) FROM read_images('{runs}/', '/camera/front')"
    ));
    assert_eq!(
        got[0][1], images[0][0],
        "every image is some frame's latest"
    );
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

/// `presorted` takes the rows as they come and checks them: rows going back
/// in time within an episode, or an episode coming back, fail the export
/// (without it, DataFusion sorts them).
#[test]
fn presorted_rows_out_of_order_fail_clearly_and_leave_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let runs = recordings(dir.path());
    let runs = runs.to_str().unwrap();
    let out = dir.path().join("ds");
    let copy = |order: &str, presorted: bool| {
        format!(
            "COPY (SELECT CASE WHEN g.frame_index < 30 THEN 0 ELSE 1 END AS episode_index, g.log_time, [1.0, 2.0] AS \"observation.state\" \
             FROM time_grid('{runs}/a.mcap', 30) g ORDER BY {order}) TO '{}' \
             STORED AS LEROBOT OPTIONS (fps '30', presorted '{presorted}')",
            out.display()
        )
    };
    let e = err(&[&copy("episode_index, log_time DESC", true)]);
    assert!(
        e.contains("the row at log_time ") && e.contains("rows must come in time order"),
        "{e}"
    );
    assert!(!out.exists());
    let e = err(&[&copy("episode_index DESC, log_time", true)]);
    assert!(e.contains("episode 0 comes after episode 1"), "{e}");
    assert!(!out.exists());
    // Without `presorted` the writer asks for (episode_index, log_time).
    ok(&[&copy("log_time DESC", false)]);
    assert_eq!(info(&out)["total_episodes"], 2);
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

/// Writes a spec of `body` (after `input = ...` and `fps = 30`) and returns
/// its path.
fn spec(dir: &Path, inputs: &[&Path], body: &str) -> PathBuf {
    let inputs: Vec<String> = inputs
        .iter()
        .map(|p| format!("\"{}\"", p.display()))
        .collect();
    let input = match inputs.as_slice() {
        [one] => one.clone(),
        many => format!("[{}]", many.join(", ")),
    };
    let path = dir.join("spec.toml");
    std::fs::write(&path, format!("input = {input}\nfps = 30\n{body}")).unwrap();
    path
}

/// The state feature and the front camera.
const STATE_AND_FRONT: &str = "[features]\n\"observation.state\" = { topic = \"/joint_states\", field = \"position\" }\n\
    [cameras]\n\"observation.images.front\" = \"/camera/front\"\n";

fn info(out: &Path) -> serde_json::Value {
    serde_json::from_str(&std::fs::read_to_string(out.join("meta/info.json")).unwrap()).unwrap()
}

/// (episode_index, length, dataset_from_index, dataset_to_index, tasks) of
/// each episode.
fn episode_rows(out: &Path) -> Vec<(i64, i64, i64, i64, serde_json::Value)> {
    json_rows(&format!(
        "SELECT episode_index, length, dataset_from_index f, dataset_to_index t, tasks \
         FROM '{}' ORDER BY episode_index",
        out.join("meta/episodes/chunk-000/file-000.parquet")
            .display()
    ))
    .iter()
    .map(|r| {
        (
            r["episode_index"].as_i64().unwrap(),
            r["length"].as_i64().unwrap(),
            r["f"].as_i64().unwrap(),
            r["t"].as_i64().unwrap(),
            r["tasks"].clone(),
        )
    })
    .collect()
}

/// (episode_index, frame_index, index, task_index) of the data rows, and
/// the first row's state of each episode.
fn data_rows(out: &Path) -> Vec<serde_json::Value> {
    json_rows(&format!(
        "SELECT episode_index e, frame_index k, \"index\" i, task_index ti, \"observation.state\" s \
         FROM '{}' ORDER BY \"index\"",
        out.join("data/chunk-000/file-000.parquet").display()
    ))
}

fn state(seed: u32, t: f64) -> Vec<f32> {
    latest(
        |j, at| crate::robot::joint_position(seed, j, at),
        t,
        0.0,
        0.01,
    )
}

fn video_samples(out: &Path) -> (u32, Vec<(u64, bool)>) {
    let mp4 =
        std::fs::read(out.join("videos/observation.images.front/chunk-000/file-000.mp4")).unwrap();
    let size = mp4.len() as u64;
    let mut r = mp4::Mp4Reader::read_header(std::io::Cursor::new(mp4), size).unwrap();
    let n = r.tracks().get(&1).unwrap().sample_count();
    let samples = (1..=n)
        .map(|i| {
            let s = r.read_sample(1, i).unwrap().unwrap();
            (s.start_time, s.is_sync)
        })
        .collect();
    (n, samples)
}

#[test]
fn skip_bad_episodes_leaves_them_out_renumbers_the_rest_and_lists_them() {
    let dir = tempfile::tempdir().unwrap();
    let runs = dir.path().join("runs");
    std::fs::create_dir_all(&runs).unwrap();
    write_robot(&runs.join("a.mcap"), &RobotOptions::default()).unwrap();
    // b: /joint_states has 4 joints from 1 s on; c: front frames half as
    // wide from 1 s on; d: good, 3 s.
    let b = RobotOptions {
        seed: 1,
        joints_after: Some((1.0, 4)),
        ..RobotOptions::default()
    };
    write_robot(&runs.join("b.mcap"), &b).unwrap();
    let c = RobotOptions {
        seed: 2,
        resize_after: Some(1.0),
        ..RobotOptions::default()
    };
    write_robot(&runs.join("c.mcap"), &c).unwrap();
    let d = RobotOptions {
        seconds: 3.0,
        seed: 3,
        ..RobotOptions::default()
    };
    write_robot(&runs.join("d.mcap"), &d).unwrap();
    let spec = spec(dir.path(), &[&runs], STATE_AND_FRONT);
    let spec = spec.to_str().unwrap();
    let out = dir.path().join("ds");
    let out_s = out.to_str().unwrap();
    let rb = format!("{}/b.mcap", runs.display());
    let rc = format!("{}/c.mcap", runs.display());

    // Without the flag: the first bad episode fails the export, naming the
    // file, the feature's topic and the time, and nothing is left.
    let e = err(&["dataset", spec, "-o", out_s]);
    assert!(
        e.contains(&format!(
            "episode 1 ({rb}): feature \"observation.state\" (topic /joint_states, field position) has 4 values at log_time {} ns, but 6 before",
            START + 1_000_000_000
        )),
        "{e}"
    );
    assert!(!out.exists());
    assert_eq!(
        std::fs::read_dir(dir.path()).unwrap().count(),
        2,
        "runs and spec.toml only"
    );

    let sql = ok(&[
        "dataset",
        spec,
        "-o",
        out_s,
        "--print-sql",
        "--skip-bad-episodes",
    ]);
    assert!(
        sql.trim_end()
            .ends_with("OPTIONS (fps '30', skip_bad_episodes 'true');"),
        "{sql}"
    );
    let out_run = logsql(&["dataset", spec, "-o", out_s, "--skip-bad-episodes"]);
    assert!(out_run.status.success());
    let said = String::from_utf8(out_run.stdout).unwrap();
    let stderr = String::from_utf8(out_run.stderr).unwrap();
    assert!(said.contains("148 frames written (2 episodes)"), "{said}");
    assert!(said.contains("2 episodes skipped:"), "{said}");
    assert!(
        said.contains(&format!(
            "  episode 1 ({rb}): feature \"observation.state\" (topic /joint_states, field position) has 4 values"
        )),
        "{said}"
    );
    assert!(
        said.contains(&format!(
            "  episode 2 ({rc}): camera \"observation.images.front\" (topic /camera/front) has a 32x48 frame at log_time {} ns, but 64x48 before",
            START + 1_033_333_333
        )),
        "{said}"
    );
    assert!(
        stderr.contains(&format!(
            "warning: LeRobot dataset: skipping episode 1 ({rb})"
        )),
        "{stderr}"
    );
    // Episodes a and d, renumbered 0 and 1, their indices consecutive.
    let info = info(&out);
    assert_eq!(info["total_episodes"], 2);
    assert_eq!(info["total_frames"], 148);
    assert_eq!(
        info["features"]["observation.state"]["shape"],
        serde_json::json!([6])
    );
    let eps = episode_rows(&out);
    assert_eq!(
        eps.iter().map(|e| (e.0, e.1, e.2, e.3)).collect::<Vec<_>>(),
        [(0, 59, 0, 59), (1, 89, 59, 148)]
    );
    let rows = data_rows(&out);
    assert_eq!(rows.len(), 148);
    for (i, r) in rows.iter().enumerate() {
        assert_eq!(r["i"], i as i64);
        let (e, k) = if i < 59 { (0, i) } else { (1, i - 59) };
        assert_eq!(
            (r["e"].as_i64(), r["k"].as_i64()),
            (Some(e), Some(k as i64))
        );
    }
    let t0 = 2.0 / 30.0;
    assert_eq!(f32s(&rows[0]["s"]), state(0, t0));
    assert_eq!(
        f32s(&rows[59]["s"]),
        state(3, t0),
        "episode 1 is recording d"
    );
    // The video holds the kept episodes' frames only, each episode from a
    // key frame, 1/30 s apart.
    let (n, samples) = video_samples(&out);
    assert_eq!(n, 148);
    assert_eq!(samples[59], (59 * 3000, true));
    assert_eq!(samples[147].0, 147 * 3000);
    let stats: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(out.join("meta/stats.json")).unwrap())
            .unwrap();
    assert_eq!(
        stats["observation.state"]["count"],
        serde_json::json!([148])
    );
    assert_eq!(floats(&stats["episode_index"]["max"]), [1.0]);
    assert_eq!(
        stats["observation.images.front"]["count"],
        serde_json::json!([148])
    );
    let left: Vec<_> = std::fs::read_dir(&out)
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .filter(|n| n.starts_with('.'))
        .collect();
    assert!(left.is_empty(), "staging files left: {left:?}");
}

#[test]
fn skip_bad_episodes_is_a_copy_option_and_a_topic_missing_from_a_recording_is_skipped() {
    let dir = tempfile::tempdir().unwrap();
    let runs = dir.path().join("runs");
    std::fs::create_dir_all(&runs).unwrap();
    let with_wrist = RobotOptions {
        wrist: true,
        ..RobotOptions::default()
    };
    write_robot(&runs.join("a.mcap"), &RobotOptions::default()).unwrap();
    write_robot(&runs.join("b.mcap"), &with_wrist).unwrap();
    let runs = runs.to_str().unwrap();
    let out = dir.path().join("ds");
    let sql = format!(
        "COPY (SELECT g.episode_index, g.log_time, g.file, j.position AS \"observation.state\", \
           w.image AS \"observation.images.wrist\" \
         FROM time_grid('{runs}/', 30) g \
         ASOF JOIN read_topic('{runs}/', '/joint_states') j MATCH_CONDITION (g.log_time >= j.log_time) ON g.file = j.file \
         ASOF JOIN read_images('{runs}/', '/camera/wrist') w MATCH_CONDITION (g.log_time >= w.log_time) ON g.file = w.file \
        ) TO '{}' STORED AS LEROBOT OPTIONS (fps '30', skip_bad_episodes 'true')",
        out.display()
    );
    let o = logsql(&[&sql]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let stderr = String::from_utf8(o.stderr).unwrap();
    assert!(
        stderr.contains(&format!(
            "skipping episode 0 ({runs}/a.mcap): no row has every feature: camera \"observation.images.wrist\" never has a value from log_time {START} ns to log_time {} ns: is a topic missing from the recording?",
            START + 2_000_000_000
        )),
        "{stderr}"
    );
    // b's wrist camera starts at 70 ms: grid frames 3.. (100 ms on).
    assert_eq!(info(&out)["total_episodes"], 1);
    let eps = episode_rows(&out);
    assert_eq!(eps[0].0, 0);
    assert_eq!(eps[0].1, 58);
    let e = err(&[&sql.replace("'true'", "'maybe'")]);
    assert!(
        e.contains("skip_bad_episodes 'maybe' is not 'true' or 'false'"),
        "{e}"
    );
    // Through a spec, the error names the camera's topic.
    let spec = spec(
        dir.path(),
        &[Path::new(runs)],
        "[features]\n\"observation.state\" = { topic = \"/joint_states\", field = \"position\" }\n\
         [cameras]\n\"observation.images.wrist\" = \"/camera/wrist\"\n",
    );
    let out2 = dir.path().join("ds2");
    let e = err(&[
        "dataset",
        spec.to_str().unwrap(),
        "-o",
        out2.to_str().unwrap(),
    ]);
    assert!(
        e.contains(&format!(
            "episode 0 ({runs}/a.mcap): no row has every feature: camera \"observation.images.wrist\" (topic /camera/wrist) never has a value from log_time {START} ns"
        )),
        "{e}"
    );
    assert!(!out2.exists());
}

#[test]
fn dataset_takes_several_inputs_one_episode_per_recording() {
    let dir = tempfile::tempdir().unwrap();
    let runs = recordings(dir.path());
    let more = dir.path().join("more");
    std::fs::create_dir_all(&more).unwrap();
    let c = RobotOptions {
        seed: 2,
        start_ns: START + 200_000_000_000,
        ..RobotOptions::default()
    };
    write_robot(&more.join("c.mcap"), &c).unwrap();
    // A glob and a directory: a.mcap and b.mcap, then c.mcap.
    let glob = runs.join("*.mcap");
    let spec = spec(dir.path(), &[&glob, &more], STATE_AND_FRONT);
    let spec = spec.to_str().unwrap();
    let out = dir.path().join("ds");
    let sql = ok(&["dataset", spec, "-o", out.to_str().unwrap(), "--print-sql"]);
    assert!(sql.contains("UNION ALL\nSELECT 1 AS input"), "{sql}");
    assert!(
        sql.contains(
            "CAST(sum(CAST(starts AS BIGINT UNSIGNED)) OVER (ORDER BY input, recording, log_time ROWS UNBOUNDED PRECEDING) AS BIGINT) - 1 AS episode_index"
        ),
        "{sql}"
    );
    // The statement streams: every window and the writer take the frames
    // in the order they come (the writer told so by `presorted`), so
    // nothing sorts the frames and their images.
    assert!(sql.contains("presorted 'true'"), "{sql}");
    // Nor does a repartition stand between the windows and the writer: it
    // would queue frames while the writer encodes, and interleave them.
    let plan = ok(&["--format", "csv", &format!("EXPLAIN {sql}")]);
    assert!(!plan.contains("SortExec"), "{plan}");
    assert!(!plan.contains("RoundRobinBatch"), "{plan}");
    let said = ok(&["dataset", spec, "-o", out.to_str().unwrap()]);
    assert!(said.contains("207 frames written (3 episodes)"), "{said}");
    // The printed statement, run as SQL with default settings, writes the
    // same rows.
    let out_sql = dir.path().join("ds-sql");
    let copy = sql.replace(out.to_str().unwrap(), out_sql.to_str().unwrap());
    ok(&[&copy]);
    assert_eq!(data_rows(&out_sql), data_rows(&out));
    let eps = episode_rows(&out);
    assert_eq!(
        eps.iter().map(|e| (e.0, e.1, e.2, e.3)).collect::<Vec<_>>(),
        [(0, 59, 0, 59), (1, 89, 59, 148), (2, 59, 148, 207)]
    );
    let rows = data_rows(&out);
    let t0 = 2.0 / 30.0;
    assert_eq!(f32s(&rows[0]["s"]), state(0, t0));
    assert_eq!(f32s(&rows[59]["s"]), state(1, t0));
    assert_eq!(f32s(&rows[148]["s"]), state(2, t0));
    assert_eq!(rows[206]["k"], 58);
    assert_eq!(video_samples(&out).0, 207);
}

#[test]
fn dataset_cuts_episodes_at_gaps() {
    let dir = tempfile::tempdir().unwrap();
    let runs = dir.path().join("runs");
    std::fs::create_dir_all(&runs).unwrap();
    // 4 s with no message from 1.5 s to 2.5 s.
    let o = RobotOptions {
        seconds: 4.0,
        gap: Some((1.5, 2.5)),
        ..RobotOptions::default()
    };
    write_robot(&runs.join("a.mcap"), &o).unwrap();
    let spec = spec(
        dir.path(),
        &[&runs.join("a.mcap")],
        &format!("[episodes]\nsplit_on_gap = \"500ms\"\n{STATE_AND_FRONT}"),
    );
    let spec = spec.to_str().unwrap();
    let out = dir.path().join("ds");
    let sql = ok(&["dataset", spec, "-o", out.to_str().unwrap(), "--print-sql"]);
    assert!(
        sql.contains(
            "least(CAST(t0.log_time AS BIGINT), CAST(t1.log_time AS BIGINT)) AS last_message"
        ),
        "{sql}"
    );
    assert!(
        sql.contains(
            "WHERE last_message IS NULL OR CAST(log_time AS BIGINT) - last_message <= 500000000"
        ),
        "{sql}"
    );
    ok(&["dataset", spec, "-o", out.to_str().unwrap()]);
    // The last front frame before the gap is at 1.4833 s: grid frames up to
    // 59 (1.9667 s) are within 500 ms of every topic's latest message. After
    // it, the front camera's first frame is at 2.5167 s: frame 76 (2.5333 s)
    // starts episode 1, up to frame 120 (4 s).
    let eps = episode_rows(&out);
    assert_eq!(
        eps.iter().map(|e| (e.0, e.1, e.2, e.3)).collect::<Vec<_>>(),
        [(0, 58, 0, 58), (1, 45, 58, 103)]
    );
    let rows = data_rows(&out);
    // Frame 59 shows the joint state of 1.5 s, the last before the gap.
    assert_eq!(f32s(&rows[57]["s"]), state(0, 1.5));
    assert_eq!(f32s(&rows[58]["s"]), state(0, 76.0 / 30.0));
    assert_eq!(
        (rows[58]["e"].as_i64(), rows[58]["k"].as_i64()),
        (Some(1), Some(0))
    );
}

#[test]
fn dataset_cuts_episodes_where_a_condition_becomes_true_with_the_task_from_a_topic() {
    let dir = tempfile::tempdir().unwrap();
    let runs = dir.path().join("runs");
    std::fs::create_dir_all(&runs).unwrap();
    let o = RobotOptions {
        seconds: 4.0,
        tasks: vec![(0.0, "reach".into()), (1.0, "grasp".into())],
        ..RobotOptions::default()
    };
    write_robot(&runs.join("a.mcap"), &o).unwrap();
    // Joint 1 (sin(1.4 t + 1) * 1.1) is positive until 1.53 s and again from
    // 3.774 s: the joint state of 3.78 s, first seen by frame 114 (3.8 s).
    let spec = spec(
        dir.path(),
        &[&runs.join("a.mcap")],
        &format!(
            "task = {{ topic = \"/task\", field = \"data\" }}\n\
             [episodes]\nsplit_when = '\"observation.state\"[2] > 0'\n{STATE_AND_FRONT}"
        ),
    );
    let spec = spec.to_str().unwrap();
    let out = dir.path().join("ds");
    let sql = ok(&["dataset", spec, "-o", out.to_str().unwrap(), "--print-sql"]);
    assert!(sql.contains("t2.\"data\" AS task"), "{sql}");
    assert!(sql.contains("ASOF JOIN read_topic("), "{sql}");
    assert!(
        sql.contains("AND ((\"observation.state\"[2] > 0) AND NOT coalesce(lag(\"observation.state\"[2] > 0) OVER w, false)), false) AS cut"),
        "{sql}"
    );
    ok(&["dataset", spec, "-o", out.to_str().unwrap()]);
    let eps = episode_rows(&out);
    assert_eq!(
        eps.iter().map(|e| (e.0, e.1, e.2, e.3)).collect::<Vec<_>>(),
        [(0, 112, 0, 112), (1, 7, 112, 119)]
    );
    assert_eq!(eps[0].4, serde_json::json!(["reach", "grasp"]));
    assert_eq!(eps[1].4, serde_json::json!(["grasp"]));
    let rows = data_rows(&out);
    assert_eq!(f32s(&rows[112]["s"]), state(0, 114.0 / 30.0));
    // Frames before 1 s (grid frame 30) have "reach", from it "grasp".
    assert_eq!(rows[27]["ti"], 0);
    assert_eq!(rows[28]["ti"], 1);
    let tasks = json_rows(&format!(
        "SELECT task_index, __index_level_0__ t FROM '{}' ORDER BY task_index",
        out.join("meta/tasks.parquet").display()
    ));
    assert_eq!(tasks[0]["t"], "reach");
    assert_eq!(tasks[1]["t"], "grasp");
}

#[test]
fn dataset_takes_the_task_from_each_recordings_metadata() {
    let dir = tempfile::tempdir().unwrap();
    let runs = dir.path().join("runs");
    std::fs::create_dir_all(&runs).unwrap();
    for (name, task) in [("a", "stack the blocks"), ("b", "open the door")] {
        let o = RobotOptions {
            metadata: vec![(
                "episode".into(),
                vec![
                    ("task".into(), task.into()),
                    ("operator".into(), "x".into()),
                ],
            )],
            ..RobotOptions::default()
        };
        write_robot(&runs.join(format!("{name}.mcap")), &o).unwrap();
    }
    let spec = spec(
        dir.path(),
        &[&runs],
        &format!("task = {{ metadata = \"episode\", key = \"task\" }}\n{STATE_AND_FRONT}"),
    );
    let spec = spec.to_str().unwrap();
    let out = dir.path().join("ds");
    let sql = ok(&["dataset", spec, "-o", out.to_str().unwrap(), "--print-sql"]);
    assert!(
        sql.contains(&format!(
            "LEFT JOIN (SELECT file, max(metadata['task']) AS task FROM metadata('{}') WHERE name = 'episode' GROUP BY file) m ON g.file = m.file",
            runs.display()
        )),
        "{sql}"
    );
    ok(&["dataset", spec, "-o", out.to_str().unwrap()]);
    let eps = episode_rows(&out);
    assert_eq!(eps[0].4, serde_json::json!(["stack the blocks"]));
    assert_eq!(eps[1].4, serde_json::json!(["open the door"]));
    let rows = data_rows(&out);
    assert_eq!(
        (rows[0]["ti"].as_i64(), rows[59]["ti"].as_i64()),
        (Some(0), Some(1))
    );
    assert_eq!(info(&out)["total_tasks"], 2);
}

#[cfg(unix)]
#[test]
fn an_interrupted_dataset_export_leaves_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let runs = dir.path().join("runs");
    std::fs::create_dir_all(&runs).unwrap();
    let long = RobotOptions {
        seconds: 60.0,
        ..RobotOptions::default()
    };
    write_robot(&runs.join("a.mcap"), &long).unwrap();
    let spec = spec(dir.path(), &[&runs], STATE_AND_FRONT);
    let out = dir.path().join("ds");
    let mut child = Command::new(env!("CARGO_BIN_EXE_logsql"))
        .args([
            "dataset",
            spec.to_str().unwrap(),
            "-o",
            out.to_str().unwrap(),
        ])
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // Once a camera frame is staged, the export is under way (and listening
    // for signals): stop it.
    let staged = || {
        std::fs::read_dir(dir.path()).unwrap().any(|e| {
            let p = e.unwrap().path();
            p.is_dir()
                && std::fs::read_dir(&p).unwrap().any(|f| {
                    f.unwrap()
                        .file_name()
                        .to_string_lossy()
                        .starts_with(".episode-camera")
                })
        })
    };
    let started = std::time::Instant::now();
    while !staged() {
        assert!(
            child.try_wait().unwrap().is_none(),
            "the export ended before it could be interrupted"
        );
        assert!(started.elapsed().as_secs() < 120, "no frame staged");
        std::thread::sleep(std::time::Duration::from_millis(5));
    }
    let killed = Command::new("kill")
        .args(["-TERM", &child.id().to_string()])
        .status()
        .unwrap();
    assert!(killed.success());
    let o = child.wait_with_output().unwrap();
    assert!(!o.status.success());
    let stderr = String::from_utf8(o.stderr).unwrap();
    assert!(
        stderr.contains(&format!(
            "LeRobot dataset: interrupted: nothing was written to {}",
            out.display()
        )),
        "{stderr}"
    );
    let mut left: Vec<_> = std::fs::read_dir(dir.path())
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .collect();
    left.sort();
    assert_eq!(
        left,
        ["runs", "spec.toml"],
        "no dataset, no temporary directory"
    );
}

/// A `split_when` that is not a condition on the frame's columns is named
/// as the spec's fault, not left as an error inside the generated SQL.
#[test]
fn a_bad_split_when_is_named_in_the_error() {
    let dir = tempfile::tempdir().unwrap();
    let runs = recordings(dir.path());
    let out = dir.path().join("ds");
    for (condition, cause) in [
        ("nonsense > 3", "No field named nonsense"),
        ("(((", "sql parser error"),
    ] {
        let spec = spec(
            dir.path(),
            &[&runs.join("a.mcap")],
            &format!("[episodes]\nsplit_when = '{condition}'\n{STATE_AND_FRONT}"),
        );
        let e = err(&[
            "dataset",
            spec.to_str().unwrap(),
            "-o",
            out.to_str().unwrap(),
        ]);
        assert!(
            e.contains(&format!(
                "spec.toml: [episodes] split_when = \"{condition}\" is not a condition on a frame's columns"
            )) && e.contains(cause),
            "{e}"
        );
        assert!(!out.exists());
    }
}

#[test]
fn a_camera_named_out_of_the_dataset_or_an_empty_feature_name_is_refused_before_writing() {
    let dir = tempfile::tempdir().unwrap();
    let runs = recordings(dir.path());
    let out = dir.path().join("sub/ds");
    // A spec's camera key with `..` (it would be videos/../../victim/).
    let spec = spec(
        dir.path(),
        &[&runs],
        "[features]\n\"observation.state\" = { topic = \"/joint_states\", field = \"position\" }\n\
         [cameras]\n\"../../victim\" = \"/camera/front\"\n",
    );
    let e = err(&[
        "dataset",
        spec.to_str().unwrap(),
        "-o",
        out.to_str().unwrap(),
    ]);
    assert!(
        e.contains("column \"../../victim\" cannot name a feature: a camera's name is a directory of the dataset"),
        "{e}"
    );
    // The same as a column alias in COPY, with a slash or a backslash.
    let runs = runs.to_str().unwrap();
    for key in ["../victim", "a/b", "a\\b", "."] {
        let sql = format!(
            "COPY (SELECT g.episode_index, g.log_time, j.position AS \"observation.state\", \
               f.image AS \"{key}\" \
             FROM time_grid('{runs}/', 30) g \
             ASOF JOIN read_topic('{runs}/', '/joint_states') j MATCH_CONDITION (g.log_time >= j.log_time) ON g.file = j.file \
             ASOF JOIN read_images('{runs}/', '/camera/front') f MATCH_CONDITION (g.log_time >= f.log_time) ON g.file = f.file \
            ) TO '{}' STORED AS LEROBOT OPTIONS (fps '30')",
            out.display()
        );
        let e = err(&[&sql]);
        assert!(e.contains("cannot name a feature"), "{key}: {e}");
    }
    // A feature needs a name; no control characters in one.
    for (alias, why) in [
        ("", "a feature needs a name"),
        ("a\tb", "no control characters"),
    ] {
        let e = err(&[&format!(
            "COPY (SELECT 0 AS episode_index, 0.0 AS timestamp, 1.0 AS \"{alias}\") TO '{}' \
             STORED AS LEROBOT OPTIONS (fps '30')",
            out.display()
        )]);
        assert!(e.contains(why), "{alias:?}: {e}");
    }
    // Nothing was written, inside or beside the target.
    assert!(!out.exists());
    assert!(!dir.path().join("victim").exists());
    let beside: Vec<_> = std::fs::read_dir(dir.path())
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .collect();
    assert!(!beside.iter().any(|n| n.contains("victim")), "{beside:?}");
}

/// `[moments]`: each padded moment of each recording is one episode of the
/// grid frames in its window (overlapping windows merged), the rest of the
/// recording left out.
#[test]
fn dataset_of_moments_makes_each_padded_moment_one_episode() {
    let dir = tempfile::tempdir().unwrap();
    let runs = recordings(dir.path());
    let r = runs.to_str().unwrap();
    let when = "position[6] > 1.2";
    let spec = spec(
        dir.path(),
        &[&runs],
        &format!(
            "task = \"moment\"\n[features]\n\"observation.state\" = {{ topic = \"/joint_states\", field = \"position\" }}\n\
             [moments]\ntopic = \"/joint_states\"\nwhen = \"{when}\"\nmax_gap = \"50 ms\"\n\
             before = \"100 ms\"\nafter = \"100 ms\"\n"
        ),
    );
    let out = dir.path().join("ds");
    ok(&[
        "dataset",
        spec.to_str().unwrap(),
        "-o",
        out.to_str().unwrap(),
    ]);
    // The windows, padded and merged here from intervals()' rows.
    let moments = rows(&format!(
        "SELECT file, CAST(start_time AS BIGINT), CAST(end_time AS BIGINT) \
         FROM intervals('{r}/', '/joint_states', '{when}', '50 ms') ORDER BY 1, 2"
    ));
    let mut windows: Vec<(String, i64, i64)> = Vec::new();
    for m in &moments {
        let (lo, hi) = (
            m[1].parse::<i64>().unwrap() - 100_000_000,
            m[2].parse::<i64>().unwrap() + 100_000_000,
        );
        match windows.last_mut() {
            Some(w) if w.0 == m[0] && lo <= w.2 => w.2 = w.2.max(hi),
            _ => windows.push((m[0].clone(), lo, hi)),
        }
    }
    assert!(windows.len() >= 3, "{moments:?}");
    // Each episode: the grid frames in its window, in recording and time order.
    let grid = rows(&format!(
        "SELECT file, CAST(log_time AS BIGINT) FROM time_grid('{r}/', 30) ORDER BY 1, 2"
    ));
    let lengths: Vec<i64> = windows
        .iter()
        .map(|(f, lo, hi)| {
            grid.iter()
                .filter(|g| &g[0] == f && (*lo..=*hi).contains(&g[1].parse::<i64>().unwrap()))
                .count() as i64
        })
        .collect();
    let eps = episode_rows(&out);
    assert_eq!(
        eps.iter().map(|e| e.1).collect::<Vec<_>>(),
        lengths,
        "{windows:?}"
    );
    assert_eq!(info(&out)["total_episodes"], windows.len());
    // An episode's first frame shows the joint state at its window's first
    // grid frame.
    let data = data_rows(&out);
    let (file, lo, _) = &windows[0];
    let first = grid
        .iter()
        .find(|g| &g[0] == file && g[1].parse::<i64>().unwrap() >= *lo)
        .unwrap();
    let seed = if file.ends_with("a.mcap") { 0 } else { 1 };
    let start = if seed == 0 {
        START
    } else {
        START + 100_000_000_000
    };
    let t = (first[1].parse::<i64>().unwrap() - start as i64) as f64 / 1e9;
    assert_eq!(f32s(&data[0]["s"]), state(seed, t));
}
