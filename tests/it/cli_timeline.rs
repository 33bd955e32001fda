//! `logsql info` timelines, run as a process on a recording with known gaps:
//! a topic paused for 2 s and a topic that starts late.

use std::collections::BTreeMap;
use std::path::Path;
use std::process::{Command, Stdio};

const S: u64 = 1_000_000_000;
const T0: u64 = 1_700_000_000 * S;

/// `/a` at 10 Hz over 10 s, silent from 4 s to 6 s; `/b` at 5 Hz from 5 s.
fn recording(path: &Path) {
    recording_part(path, |_| true);
}

/// The messages of [`recording`] at the times (ns after T0) `keep` accepts.
fn recording_part(path: &Path, keep: impl Fn(u64) -> bool) {
    let mut w = mcap::Writer::new(std::io::BufWriter::new(
        std::fs::File::create(path).unwrap(),
    ))
    .unwrap();
    let a = w.add_channel(0, "/a", "json", &BTreeMap::new()).unwrap();
    let b = w.add_channel(0, "/b", "json", &BTreeMap::new()).unwrap();
    let mut messages: Vec<(u64, u16)> = (0..100u64)
        .map(|i| i * S / 10)
        .filter(|t| !(4 * S..6 * S).contains(t))
        .map(|t| (t, a))
        .chain((25..50u64).map(|i| (i * S / 5, b)))
        .filter(|(t, _)| keep(*t))
        .collect();
    messages.sort();
    for (i, (t, channel_id)) in messages.into_iter().enumerate() {
        w.write_to_known_channel(
            &mcap::records::MessageHeader {
                channel_id,
                sequence: i as u32,
                log_time: T0 + t,
                publish_time: T0 + t,
            },
            b"{}",
        )
        .unwrap();
    }
    w.finish().unwrap();
}

fn logsql(args: &[&str]) -> String {
    let out = Command::new(env!("CARGO_BIN_EXE_logsql"))
        .args(args)
        .stdin(Stdio::null())
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap()
}

#[test]
fn timelines_show_and_list_the_gaps_and_match_sql_counts() {
    let tmp = tempfile::tempdir().unwrap();
    let f = tmp.path().join("gaps.mcap");
    recording(&f);
    let name = f.display().to_string();

    let text = logsql(&["info", "--ascii", &name]);
    assert!(
        text.contains("timeline:\n  60 buckets of 165.0 ms"),
        "{text}"
    );
    assert!(
        text.contains("    /a  2.100 s from +3.900 s (2023-11-14T22:13:23.900Z)"),
        "{text}"
    );
    assert!(text.contains("    /b  5.000 s from +0.000 s"), "{text}");
    // /a's bar is blank over its pause (buckets 24..36), /b's over its first half.
    let bar = |topic: &str| -> Vec<char> {
        let line = text
            .lines()
            .find(|l| l.starts_with(&format!("  {topic}  |")))
            .unwrap_or_else(|| panic!("no bar for {topic}:\n{text}"));
        line.split('|').nth(1).unwrap().chars().collect()
    };
    let a = bar("/a");
    assert_eq!(a.len(), 60);
    assert!(
        a[25..36].iter().all(|c| *c == ' ') && a[..23].iter().all(|c| *c != ' '),
        "{a:?}"
    );
    let b = bar("/b");
    assert!(b[..30].iter().all(|c| *c == ' '), "{b:?}");

    // The JSON numbers equal counts computed with SQL (date_bin per bucket).
    let json: serde_json::Value =
        serde_json::from_str(&logsql(&["info", "--format", "json", &name])).unwrap();
    let t = &json[0]["timeline"];
    let bucket_ns = t["bucket_ns"].as_u64().unwrap();
    let start = t["start_ns"].as_u64().unwrap();
    // The span over 60 buckets, rounded up so that the last message is in the last.
    assert_eq!((start, bucket_ns), (T0, 165_000_001));
    assert_eq!(t["topics"]["/a"]["gaps"][0]["start_ns"], T0 + 39 * S / 10);
    assert_eq!(t["topics"]["/a"]["gaps"][0]["length_ns"], 21 * S / 10);
    assert_eq!(t["topics"]["/b"]["gaps"][0]["length_ns"], 5 * S);
    let sql = format!(
        "SELECT topic, CAST((CAST(date_bin(INTERVAL '{bucket_ns} nanoseconds', log_time, \
         to_timestamp_nanos({start})) AS BIGINT) - {start}) / {bucket_ns} AS INT) AS bucket, \
         count(*) AS n FROM '{name}' GROUP BY topic, bucket ORDER BY topic, bucket"
    );
    let mut expected: BTreeMap<String, Vec<u64>> = BTreeMap::new();
    for line in logsql(&["--format", "ndjson", &sql]).lines() {
        let row: serde_json::Value = serde_json::from_str(line).unwrap();
        let counts = expected
            .entry(row["topic"].as_str().unwrap().to_string())
            .or_insert_with(|| vec![0; 60]);
        counts[row["bucket"].as_u64().unwrap() as usize] = row["n"].as_u64().unwrap();
    }
    for (topic, counts) in &expected {
        let got: Vec<u64> = t["topics"][topic]["counts"]
            .as_array()
            .unwrap()
            .iter()
            .map(|v| v.as_u64().unwrap())
            .collect();
        assert_eq!(&got, counts, "{topic}");
    }
    assert_eq!(expected.len(), 2);
    // The message indexes held every time: nothing was decompressed.
    assert_eq!(t["bytes_decompressed"], 0);
    // --no-timeline leaves it out.
    assert!(!logsql(&["info", "--no-timeline", &name]).contains("timeline:"));
}

#[test]
fn a_directory_gets_one_timeline_across_its_files() {
    let tmp = tempfile::tempdir().unwrap();
    let whole = tmp.path().join("whole.mcap");
    recording(&whole);
    let dir = tmp.path().join("split");
    std::fs::create_dir(&dir).unwrap();
    // The same recording split at 4.5 s into two files (inside /a's pause).
    recording_part(&dir.join("part1.mcap"), |t| t < 9 * S / 2);
    recording_part(&dir.join("part2.mcap"), |t| t >= 9 * S / 2);
    let (whole, dir) = (whole.display().to_string(), dir.display().to_string());

    let single = logsql(&["info", "--ascii", &whole]);
    let split = logsql(&["info", "--ascii", &dir]);
    // After the two files' own summaries: the timeline across both, equal to
    // the unsplit recording's (its bars and its gaps).
    let (_, across) = split
        .split_once("\nall 2 files:\ntimeline:\n")
        .expect(&split);
    let timeline = single.split_once("timeline:\n").unwrap().1;
    let timeline = timeline.split_once("attachments:").unwrap().0;
    assert_eq!(across, timeline);
    assert!(across.contains("    /a  2.100 s from +3.900 s"), "{across}");
    assert_eq!(split.matches("timeline:").count(), 3, "{split}");

    let json = |path: &str| -> serde_json::Value {
        serde_json::from_str(&logsql(&["info", "--format", "json", path])).unwrap()
    };
    let (single, split) = (json(&whole), json(&dir));
    let objects = split.as_array().unwrap();
    assert_eq!(objects.len(), 3);
    let all = &objects[2];
    assert_eq!(all["messages"], 80 + 25);
    assert_eq!(all["files"].as_array().unwrap().len(), 2);
    assert_eq!(all["timeline"], single[0]["timeline"]);
    // ndjson: the same object on the last line.
    let ndjson = logsql(&["info", "--format", "ndjson", &dir]);
    let last: serde_json::Value = serde_json::from_str(ndjson.lines().last().unwrap()).unwrap();
    assert_eq!(&last, all);
    // One file: no timeline across files.
    assert_eq!(json(&whole).as_array().unwrap().len(), 1);
}
