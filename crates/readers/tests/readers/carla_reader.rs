//! The CARLA recorder reader on the shared fixtures (`../shared/fixtures/carla/`).
//!
//! Expected numbers were computed independently with a small python script
//! that walks the packet headers (`u8 id`, `u32 size`) with `struct`, sums the
//! `u16` record counts of counted packets, counts wheels and bones by walking
//! their nested records, and takes `zlib.crc32` over every packet body in file
//! order. Actor counts agree with `MANIFEST.md`. The info texts are compared
//! byte for byte with `expected/*.info.txt` / `*.info_all.txt`.

use std::collections::BTreeMap;

use logsql_readers::Error;
use logsql_readers::formats::FormatReader;
use logsql_readers::formats::carla::{CarlaFormat, CarlaIndex, TailIds};
use logsql_readers::io::{BytesReader, FileReader, ReadAt};
use logsql_readers::model::{ExtraValue, Flow, Message, Selection, Summary};
use logsql_readers::table::Value;

use crate::carla_facts::FIXTURES;

/// The release each fixture's layout is detected as (MANIFEST.md).
fn expected_version(name: &str) -> &'static str {
    match name {
        n if n.starts_with("srunner_0913") || n == "synth_0913_additional" => "0.9.12/0.9.13",
        n if n.starts_with("srunner_2020") || n == "synth_0910_additional" => "0.9.10/0.9.11",
        "synth_0914_additional" => "0.9.14",
        "synth_0915_basic" => "0.9.15",
        "synth_ue4dev2024_door21" => "ue4-dev (Nov 2023 - Mar 2025)",
        _ => "0.9.16",
    }
}

fn open(name: &str) -> Option<FileReader> {
    let path = crate::fixtures::file("carla", &format!("{name}.log"))?;
    Some(FileReader::open(path).unwrap())
}

fn expected_text(name: &str) -> String {
    let path = crate::fixtures::file("carla", &format!("expected/{name}")).unwrap();
    std::fs::read_to_string(path).unwrap()
}

fn property<'s>(s: &'s Summary, key: &str) -> &'s str {
    s.properties
        .iter()
        .find(|(k, _)| k == key)
        .map(|(_, v)| v.as_str())
        .unwrap_or_else(|| panic!("no property {key}"))
}

/// One delivered message: (topic, frame, elapsed, log_time, body).
type Msg = (String, u64, f64, u64, Vec<u8>);

fn read_messages(file: &dyn ReadAt, s: &Summary, sel: &Selection) -> (Vec<Msg>, Vec<Error>) {
    let mut out = Vec::new();
    let mut errors = Vec::new();
    for chunk in &s.chunks {
        let mut receiver = |m: Message<'_>| {
            let (ExtraValue::UInt64(frame), ExtraValue::Float64(elapsed)) =
                (m.extra[0], m.extra[1])
            else {
                panic!("extra columns {:?}", m.extra);
            };
            out.push((
                m.channel.topic.clone(),
                frame,
                elapsed,
                m.log_time,
                m.data.to_vec(),
            ));
            Flow::Continue
        };
        if let Err(e) = CarlaFormat.read_chunk(file, s, chunk, sel, &mut receiver) {
            errors.push(e);
        }
    }
    (out, errors)
}

/// Rows of a typed table as owned debug strings per cell, over all chunks.
fn table_rows(file: &dyn ReadAt, s: &Summary, table: &str, sel: &Selection) -> Vec<Vec<String>> {
    let def = CarlaFormat
        .table(table)
        .and_then(|t| t.def(s, None))
        .unwrap();
    let mut rows = Vec::new();
    let mut receiver = |cells: &[Value<'_>]| {
        assert_eq!(cells.len(), def.columns.len(), "{table}: row width");
        rows.push(cells.iter().map(|c| format!("{c:?}")).collect());
        Flow::Continue
    };
    if def.per_chunk {
        for chunk in &s.chunks {
            CarlaFormat
                .table(table)
                .and_then(|t| t.read_chunk(file, s, chunk, None, sel, &mut receiver))
                .unwrap();
        }
    } else {
        CarlaFormat
            .table(table)
            .and_then(|t| t.read_file(file, s, None, &mut receiver))
            .unwrap();
    }
    rows
}

fn count_rows(file: &dyn ReadAt, s: &Summary, table: &str) -> u64 {
    let mut n = 0u64;
    let def = CarlaFormat
        .table(table)
        .and_then(|t| t.def(s, None))
        .unwrap();
    let mut receiver = |_: &[Value<'_>]| {
        n += 1;
        Flow::Continue
    };
    if def.per_chunk {
        for chunk in &s.chunks {
            CarlaFormat
                .table(table)
                .and_then(|t| t.read_chunk(file, s, chunk, None, &Selection::all(), &mut receiver))
                .unwrap();
        }
    } else {
        CarlaFormat
            .table(table)
            .and_then(|t| t.read_file(file, s, None, &mut receiver))
            .unwrap();
    }
    n
}

#[test]
fn summaries_match_the_header_walk() {
    for fx in FIXTURES {
        let Some(f) = open(fx.name) else { return };
        let s = CarlaFormat.summary(&f).unwrap();
        assert_eq!(
            property(&s, "carla.frames"),
            fx.frames.to_string(),
            "{}",
            fx.name
        );
        assert_eq!(
            property(&s, "carla.version"),
            expected_version(fx.name),
            "{}",
            fx.name
        );
        let idx = s.private::<CarlaIndex>().unwrap();
        assert_eq!(idx.frames.len() as u64, fx.frames, "{}", fx.name);
        assert_eq!(
            idx.frames.last().unwrap().elapsed,
            fx.last_elapsed,
            "{}",
            fx.name
        );
        assert_eq!(
            idx.header.date,
            if fx.name.starts_with("synth") {
                1_700_000_000
            } else {
                idx.header.date
            }
        );
        let counts: BTreeMap<&str, u64> = s.topic_message_counts().unwrap();
        let want: BTreeMap<&str, u64> = fx.packets.iter().copied().collect();
        assert_eq!(counts, want, "{}", fx.name);
        assert_eq!(s.message_count, Some(want.values().sum()), "{}", fx.name);
        // Chunks cover the frames in order, without gaps.
        let mut next = idx.header.end;
        for c in &s.chunks {
            assert_eq!(c.offset, next, "{}", fx.name);
            next = c.offset + c.length;
            assert!(c.start_time <= c.end_time);
        }
        assert_eq!(next, idx.data_end);
        assert_eq!(
            s.chunks
                .iter()
                .map(|c| c.message_count.unwrap())
                .sum::<u64>(),
            s.message_count.unwrap()
        );
        let date_ns = idx.header.date as u64 * 1_000_000_000;
        assert_eq!(s.start_time, Some(date_ns), "{}", fx.name);
        assert_eq!(
            s.end_time,
            Some(date_ns + (fx.last_elapsed * 1e9).round() as u64),
            "{}",
            fx.name
        );
        if fx.name == "synth_0916_truncated" {
            assert!(
                matches!(
                    s.damage,
                    Some(Error::Truncated {
                        offset: 333_751,
                        ..
                    })
                ),
                "{:?}",
                s.damage
            );
        } else {
            assert!(s.damage.is_none(), "{}: {:?}", fx.name, s.damage);
        }
    }
}

#[test]
fn messages_are_every_packet_body_in_file_order() {
    for fx in FIXTURES {
        let Some(f) = open(fx.name) else { return };
        let s = CarlaFormat.summary(&f).unwrap();
        let (msgs, errors) = read_messages(&f, &s, &Selection::all());
        assert!(errors.is_empty(), "{}: {errors:?}", fx.name);
        let mut crc = crc32fast::Hasher::new();
        let mut per_topic: BTreeMap<&str, u64> = BTreeMap::new();
        let mut last_frame = 0;
        let date_ns = s.private::<CarlaIndex>().unwrap().header.date as u64 * 1_000_000_000;
        for (topic, frame, elapsed, log_time, body) in &msgs {
            crc.update(body);
            *per_topic.entry(topic.as_str()).or_default() += 1;
            assert!(*frame >= last_frame, "{}: frames go backwards", fx.name);
            last_frame = *frame;
            assert_eq!(*log_time, date_ns + (elapsed * 1e9).round() as u64);
        }
        assert_eq!(crc.finalize(), fx.crc32, "{}", fx.name);
        assert_eq!(last_frame, fx.frames, "{}", fx.name);
        let want: BTreeMap<&str, u64> = fx.packets.iter().copied().collect();
        assert_eq!(per_topic, want, "{}", fx.name);
    }
}

#[test]
fn typed_table_row_counts() {
    for fx in FIXTURES {
        let Some(f) = open(fx.name) else { return };
        let s = CarlaFormat.summary(&f).unwrap();
        for (table, n) in fx.tables {
            assert_eq!(count_rows(&f, &s, table), *n, "{}: {table}", fx.name);
        }
        let actors = table_rows(&f, &s, "actors", &Selection::all());
        assert_eq!(actors.len() as u64, fx.adds, "{}", fx.name);
        let events = table_rows(&f, &s, "events", &Selection::all());
        let count = |e: &str| {
            events
                .iter()
                .filter(|r| r[3] == format!("Str({e:?})"))
                .count() as u64
        };
        assert_eq!(
            (count("add"), count("del"), count("parent")),
            (fx.adds, fx.dels, fx.parents),
            "{}",
            fx.name
        );
        // destroy_frame (column 16) and parent_id (column 19) are set from EventDel / EventParent.
        let destroyed = actors.iter().filter(|r| r[16] != "Null").count() as u64;
        assert_eq!(destroyed, fx.dels, "{}", fx.name);
        let parented = actors.iter().filter(|r| r[19] != "Null").count() as u64;
        assert!(parented <= fx.parents, "{}", fx.name);
        if fx.parents > 0 {
            assert!(parented > 0, "{}", fx.name);
        }
        // Every table the format lists has a definition starting with frame/elapsed/log_time.
        for t in CarlaFormat.tables().iter().map(|t| t.name()) {
            let d = CarlaFormat.table(t).and_then(|t| t.def(&s, None)).unwrap();
            let names: Vec<&str> = d.columns.iter().take(3).map(|c| c.name.as_str()).collect();
            assert_eq!(names, ["frame", "elapsed", "log_time"], "{t}");
            assert!(d.columns.iter().all(|c| !c.doc.is_empty()), "{t}");
        }
    }
}

#[test]
fn info_text_matches_carla_query_output() {
    let Some(dir) = crate::fixtures::dir("carla") else {
        return;
    };
    let mut compared = 0;
    for entry in std::fs::read_dir(dir.join("expected")).unwrap() {
        let file_name = entry.unwrap().file_name().into_string().unwrap();
        let (name, all) = if let Some(n) = file_name.strip_suffix(".info_all.txt") {
            (n.to_string(), true)
        } else if let Some(n) = file_name.strip_suffix(".info.txt") {
            (n.to_string(), false)
        } else {
            continue;
        };
        let f = open(&name).unwrap();
        let s = CarlaFormat.summary(&f).unwrap_or_default();
        let text = CarlaFormat.info_text(&f, &s, all).unwrap().unwrap();
        let want = expected_text(&file_name);
        if text != want {
            let line = text
                .lines()
                .zip(want.lines())
                .position(|(a, b)| a != b)
                .unwrap_or(0);
            panic!(
                "{file_name}: first difference at line {}: got {:?}, want {:?}",
                line + 1,
                text.lines().nth(line),
                want.lines().nth(line)
            );
        }
        compared += 1;
    }
    assert_eq!(compared, 18);
}

#[test]
fn layout_detection_per_version() {
    let cases = [
        ("synth_0916_basic", TailIds::V0916, 48, false),
        ("synth_0915_basic", TailIds::V0915, 48, false),
        ("synth_ue4dev2024_door21", TailIds::Ue4Dev2024, 48, false),
        ("synth_0914_additional", TailIds::None, 48, true),
        ("synth_0913_additional", TailIds::None, 48, true),
        ("synth_0910_additional", TailIds::None, 36, true),
        (
            "srunner_2020_DistanceBetweenVehicles",
            TailIds::None,
            36,
            true,
        ),
        (
            "srunner_0913_DistanceBetweenVehicles",
            TailIds::None,
            48,
            true,
        ),
    ];
    for (name, tail, wheel, known) in cases {
        let Some(f) = open(name) else { return };
        let s = CarlaFormat.summary(&f).unwrap();
        let l = s.private::<CarlaIndex>().unwrap().layout;
        assert_eq!(l.tail, tail, "{name}");
        assert!(!l.f64_vectors, "{name}");
        assert_eq!(l.wheel_physics_known, known, "{name}");
        if known {
            assert_eq!(l.wheel_physics_bytes, wheel, "{name}");
        }
    }
    // The ue4-dev file: id 21 is the door packet, 22 the wheels, 23 the biker.
    let Some(f) = open("synth_ue4dev2024_door21") else {
        return;
    };
    let s = CarlaFormat.summary(&f).unwrap();
    let door = s.channels.values().find(|c| c.topic == "door").unwrap();
    assert_eq!(door.metadata["packet_id"], "21");
    assert_eq!(
        property(&s, "carla.packet_ids"),
        "21=door 22=wheels 23=biker"
    );
    let doors = table_rows(&f, &s, "doors", &Selection::all());
    assert_eq!(doors.len(), 15);
    // Same actor data as the 0.9.16 file: same wheel rows and biker rows.
    let g = open("synth_0916_basic").unwrap();
    let t = CarlaFormat.summary(&g).unwrap();
    assert_eq!(
        table_rows(&f, &s, "wheels", &Selection::all()),
        table_rows(&g, &t, "wheels", &Selection::all())
    );
    assert_eq!(
        table_rows(&f, &s, "bikers", &Selection::all()),
        table_rows(&g, &t, "bikers", &Selection::all())
    );
}

#[test]
fn sample_values() {
    let Some(f) = open("srunner_0913_DistanceBetweenVehicles") else {
        return;
    };
    let s = CarlaFormat.summary(&f).unwrap();
    assert_eq!(property(&s, "carla.map"), "Town01");
    assert_eq!(property(&s, "carla.date"), "1637676528");
    // First Position record: spectator 1 at (542.481, 4236.74, 490.868) cm, yaw -131.802 deg.
    let pos = table_rows(&f, &s, "positions", &Selection::all());
    assert_eq!(pos[0][0], "U64(1)");
    assert_eq!(pos[0][3], "U64(1)");
    assert_eq!(
        pos[0][4],
        format!("{:?}", Value::F64(542.48095703125_f64 * 0.01))
    );
    assert_eq!(
        pos[0][9],
        format!("{:?}", Value::F64(-131.8023681640625_f64))
    );
    // Actors: MANIFEST lists 1 spectator, 115 other, 36 lights, 21 signs, 2 vehicles, 6 sensors.
    let actors = table_rows(&f, &s, "actors", &Selection::all());
    let mut by_type: BTreeMap<String, usize> = BTreeMap::new();
    for a in &actors {
        *by_type.entry(a[5].clone()).or_default() += 1;
    }
    let want: BTreeMap<String, usize> = [
        ("Str(\"other\")", 116),
        ("Str(\"traffic_light\")", 36),
        ("Str(\"traffic_sign\")", 21),
        ("Str(\"vehicle\")", 2),
        ("Str(\"sensor\")", 6),
    ]
    .into_iter()
    .map(|(k, v)| (k.to_string(), v))
    .collect();
    assert_eq!(by_type, want);
    assert_eq!(actors[0][6], "Str(\"spectator\")");
    // Frames: the first frame's duration is the second frame's start.
    let frames = table_rows(&f, &s, "frames", &Selection::all());
    assert_eq!(frames.len(), 847);
    assert_eq!(frames[846][3], "Null", "last frame keeps duration -1");
    // Physics control and traffic-light times of the additional-data file.
    let Some(g) = open("synth_0916_additional") else {
        return;
    };
    let t = CarlaFormat.summary(&g).unwrap();
    let pc = table_rows(&g, &t, "physics_controls", &Selection::all());
    assert_eq!(pc[0][3], "U64(24)");
    assert_eq!(pc[0][12], "F64(1800.0)"); // mass, kg
    let tl = table_rows(&g, &t, "traffic_light_times", &Selection::all());
    assert_eq!(tl[0][3..], ["U64(2)", "F64(10.0)", "F64(3.0)", "F64(2.0)"]);
    let frames = table_rows(&g, &t, "frames", &Selection::all());
    // First PlatformTime packet (python: struct.unpack("<d")).
    assert_eq!(frames[0][5], "F64(0.05570374942676695)");
    // 0.9.10 development build: 36-byte wheel physics, so no stiffness values;
    // first wheel radius 35.8 cm, first physics record of vehicle 269.
    let Some(h) = open("srunner_2020_DistanceBetweenVehicles") else {
        return;
    };
    let u = CarlaFormat.summary(&h).unwrap();
    let pc = table_rows(&h, &u, "physics_controls", &Selection::all());
    assert_eq!(pc.len(), 2);
    assert_eq!(pc[0][3], "U64(269)");
    assert_eq!(pc[0][24], "Null");
    assert!(
        pc[0][21].starts_with(&format!("F64s([{:?}", f64::from(35.8f32) * 0.01)),
        "{}",
        pc[0][21]
    );
    // Sensors are actor type 0 in 0.9.10 files; no actor is typed "sensor".
    let actors = table_rows(&h, &u, "actors", &Selection::all());
    assert!(actors.iter().all(|a| a[5] != "Str(\"sensor\")"));
}

#[test]
fn time_window_and_topic_selection() {
    let Some(f) = open("synth_0916_basic") else {
        return;
    };
    let s = CarlaFormat.summary(&f).unwrap();
    let date = 1_700_000_000u64 * 1_000_000_000;
    // Frames 21..=40 (elapsed 1.0 .. 1.95 s).
    let sel = Selection {
        // Frame 40 sits at 1.9500000290 s (f32 deltas summed in f64).
        time: Some((date + 1_000_000_000, date + 1_960_000_000)),
        topics: Some(["position".to_string()].into()),
        ..Selection::all()
    };
    let (msgs, errors) = read_messages(&f, &s, &sel);
    assert!(errors.is_empty());
    let frames: Vec<u64> = msgs.iter().map(|m| m.1).collect();
    assert_eq!(frames, (21..=40).collect::<Vec<_>>());
    assert!(msgs.iter().all(|m| m.0 == "position"));
    let rows = table_rows(&f, &s, "positions", &sel);
    assert!(!rows.is_empty());
    assert!(rows.iter().all(|r| {
        let fr: u64 = r[0]
            .trim_start_matches("U64(")
            .trim_end_matches(')')
            .parse()
            .unwrap();
        (21..=40).contains(&fr)
    }));
}

#[test]
fn truncated_header_only_and_bad_magic() {
    let Some(f) = open("synth_0916_truncated") else {
        return;
    };
    let s = CarlaFormat.summary(&f).unwrap();
    let idx = s.private::<CarlaIndex>().unwrap();
    assert_eq!(idx.frames.len(), 199);
    let err = s.damage.as_ref().unwrap();
    assert!(err.to_string().contains("333751"), "{err}");
    let (msgs, errors) = read_messages(&f, &s, &Selection::all());
    assert!(errors.is_empty());
    assert_eq!(msgs.len(), 2980);
    assert_eq!(msgs.last().unwrap().1, 199);

    let Some(h) = open("synth_header_only") else {
        return;
    };
    let s = CarlaFormat.summary(&h).unwrap();
    assert!(s.chunks.is_empty() && s.damage.is_none());
    assert_eq!(s.message_count, Some(0));
    assert_eq!(property(&s, "carla.frames"), "0");

    let Some(b) = open("synth_bad_magic") else {
        return;
    };
    let err = CarlaFormat.summary(&b).unwrap_err();
    assert!(err.to_string().contains("CARLA_RECORDER"), "{err}");
    assert_eq!(err.offset(), Some(2));
    let mut head = vec![0u8; 64];
    b.read_exact_at(0, &mut head[..34]).unwrap();
    assert!(!CarlaFormat.sniff(&head));
    let mut head = vec![0u8; 40];
    h.read_exact_at(0, &mut head).unwrap();
    assert!(CarlaFormat.sniff(&head));
    assert!(logsql_readers::formats::sniff(&head).is_some_and(|f| f.name() == "carla"));
}

/// Reads everything a (possibly damaged) file yields, never panicking:
/// messages, every typed table and (when `info`) the detailed info text.
fn read_everything(bytes: Vec<u8>, info: bool) -> Option<(Summary, Vec<Msg>)> {
    let r = BytesReader::new("mem.log", bytes);
    let s = CarlaFormat.summary(&r).ok()?;
    let (msgs, errors) = read_messages(&r, &s, &Selection::all());
    for e in &errors {
        assert!(
            e.to_string().contains("mem.log") && e.offset().is_some(),
            "{e}"
        );
    }
    for t in CarlaFormat.tables().iter().map(|t| t.name()) {
        let def = CarlaFormat.table(t).and_then(|t| t.def(&s, None)).unwrap();
        let mut receiver = |_: &[Value<'_>]| Flow::Continue;
        if def.per_chunk {
            for c in &s.chunks {
                let _ = CarlaFormat
                    .table(t)
                    .and_then(|t| t.read_chunk(&r, &s, c, None, &Selection::all(), &mut receiver));
            }
        } else {
            let _ = CarlaFormat
                .table(t)
                .and_then(|t| t.read_file(&r, &s, None, &mut receiver));
        }
    }
    let _ = CarlaFormat.info_text(&r, &s, info);
    Some((s, msgs))
}

/// Found by the `carla` fuzz target (overflow checks on): a FrameStart with a
/// huge elapsed time overflowed the i128 sum `date` ns + elapsed ns in
/// `log_time`; times now saturate (then clamp to the `u64` range).
#[test]
fn huge_frame_times_do_not_overflow() {
    let mut f = vec![1, 0, 14, 0];
    f.extend(b"CARLA_RECORDER");
    f.extend(1_600_000_000i64.to_le_bytes()); // date
    f.extend([0, 0]); // empty map name
    for (id, t) in [(1u64, f64::MAX), (2, -f64::MAX), (3, f64::INFINITY)] {
        f.push(0); // FrameStart: id, elapsed, duration
        f.extend(24u32.to_le_bytes());
        f.extend(id.to_le_bytes());
        f.extend(t.to_le_bytes());
        f.extend(t.to_le_bytes());
    }
    let (s, msgs) = read_everything(f, true).unwrap();
    let idx = s.private::<CarlaIndex>().unwrap();
    assert_eq!(idx.frames.len(), 3);
    assert_eq!(idx.log_time(f64::MAX), u64::MAX);
    assert_eq!(idx.log_time(-f64::MAX), 0);
    assert_eq!(idx.log_time(f64::INFINITY), 1_600_000_000_000_000_000);
    assert!(msgs.len() <= 3, "{msgs:?}");
}

#[test]
fn truncation_sweep_returns_prefixes() {
    let Some(path) = crate::fixtures::file("carla", "synth_0916_additional.log") else {
        return;
    };
    let bytes = std::fs::read(path).unwrap();
    let (_, full) = read_everything(bytes.clone(), false).unwrap();
    let step = bytes.len() / 97;
    for cut in (0..bytes.len())
        .step_by(step)
        .chain([39, 40, 41, 45, 68, 69, 70])
    {
        let Some((s, msgs)) = read_everything(bytes[..cut].to_vec(), false) else {
            assert!(cut < 40, "summary failed at cut {cut}");
            continue;
        };
        // Everything up to the last whole packet, as a prefix of the full file's messages.
        assert!(msgs.len() <= full.len());
        assert!(msgs.iter().zip(&full).all(|(a, b)| a == b), "cut {cut}");
        let idx = s.private::<CarlaIndex>().unwrap();
        assert_eq!(idx.data_end == cut as u64, s.damage.is_none(), "cut {cut}");
        assert_eq!(msgs.len() as u64, s.message_count.unwrap(), "cut {cut}");
    }
}

#[test]
fn byte_flip_sweep_never_panics() {
    let Some(path) = crate::fixtures::file("carla", "synth_0916_one_frame.log") else {
        return;
    };
    let bytes = std::fs::read(path).unwrap();
    for i in 0..bytes.len() {
        for x in [0xffu8, 0x80, 0x01] {
            let mut b = bytes.clone();
            b[i] ^= x;
            let _ = read_everything(b, true);
        }
    }
    let Some(path) = crate::fixtures::file("carla", "synth_0916_additional.log") else {
        return;
    };
    let bytes = std::fs::read(path).unwrap();
    let mut state = 12345u64;
    for _ in 0..40 {
        state = state
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        let i = (state >> 33) as usize % bytes.len();
        let mut b = bytes.clone();
        b[i] ^= (state >> 8) as u8 | 1;
        let _ = read_everything(b, false);
    }
}

#[test]
fn positions_decoder_throughput() {
    let Some(f) = open("srunner_0913_DistanceBetweenVehicles") else {
        return;
    };
    let s = CarlaFormat.summary(&f).unwrap();
    let start = std::time::Instant::now();
    let mut n = 0u64;
    let mut sum = 0.0;
    for _ in 0..3 {
        for chunk in &s.chunks {
            let mut receiver = |cells: &[Value<'_>]| {
                n += 1;
                if let Value::F64(x) = cells[4] {
                    sum += x;
                }
                Flow::Continue
            };
            CarlaFormat
                .table("positions")
                .and_then(|t| t.read_chunk(&f, &s, chunk, None, &Selection::all(), &mut receiver))
                .unwrap();
        }
    }
    assert_eq!(n, 3 * 99_939);
    assert!(sum.is_finite());
    let mb_s = 3.0 * f.size() as f64 / 1e6 / start.elapsed().as_secs_f64();
    eprintln!("positions: {mb_s:.0} MB/s of file (this build)");
}

#[test]
fn unknown_packet_ids_are_skipped_by_size_and_delivered() {
    let Some(path) = crate::fixtures::file("carla", "synth_0916_one_frame.log") else {
        return;
    };
    let mut bytes = std::fs::read(path).unwrap();
    // Header 40 bytes, FrameStart packet 29 bytes: insert a user packet (id 100) after it.
    let user = [100u8, 3, 0, 0, 0, 7, 8, 9];
    bytes.splice(69..69, user);
    let r = BytesReader::new("user.log", bytes);
    let s = CarlaFormat.summary(&r).unwrap();
    let ch = &s.channels[&356];
    assert_eq!(ch.topic, "unknown_100");
    assert_eq!(ch.metadata["packet_id"], "100");
    assert_eq!(s.message_count, Some(16));
    assert_eq!(
        s.private::<CarlaIndex>().unwrap().layout.tail,
        TailIds::V0916
    );
    let (msgs, errors) = read_messages(&r, &s, &Selection::all());
    assert!(errors.is_empty());
    assert_eq!(msgs[1].0, "unknown_100");
    assert_eq!(msgs[1].4, [7, 8, 9]);
    // CARLA's query skips it too.
    let text = CarlaFormat.info_text(&r, &s, true).unwrap().unwrap();
    assert_eq!(text, expected_text("synth_0916_one_frame.info_all.txt"));
}

#[test]
fn time_window_reads_only_the_chunks_and_frames_inside() {
    let Some(f) = open("srunner_0913_DistanceBetweenVehicles") else {
        return;
    };
    let s = CarlaFormat.summary(&f).unwrap();
    assert!(s.chunks.len() >= 3, "{} chunks", s.chunks.len());
    let idx = s.private::<CarlaIndex>().unwrap();
    let date = idx.header.date as u64 * 1_000_000_000;
    let (lo, hi) = (date + 20_000_000_000, date + 21_000_000_000);
    let want: Vec<u64> = idx
        .frames
        .iter()
        .filter(|fr| (lo..=hi).contains(&idx.log_time(fr.elapsed)))
        .map(|fr| fr.id)
        .collect();
    assert!(want.len() > 30);
    let sel = Selection {
        time: Some((lo, hi)),
        topics: Some(["frame_start".to_string()].into()),
        ..Selection::all()
    };
    let mut got = Vec::new();
    let mut skipped = 0;
    for chunk in &s.chunks {
        let mut receiver = |m: Message<'_>| {
            let ExtraValue::UInt64(fr) = m.extra[0] else {
                panic!()
            };
            got.push(fr);
            Flow::Continue
        };
        let r = CarlaFormat
            .read_chunk(&f, &s, chunk, &sel, &mut receiver)
            .unwrap();
        skipped += usize::from(r.skipped);
        // The engine's pruning by chunk time agrees with the reader's skipping.
        let overlaps = chunk.start_time.unwrap() <= hi && chunk.end_time.unwrap() >= lo;
        assert_eq!(r.skipped, !overlaps);
    }
    assert_eq!(got, want);
    assert!(skipped >= 2);
}

/// Builds a recorder file packet by packet (tests only).
struct Builder(Vec<u8>);

impl Builder {
    fn new(date: i64, map: &str) -> Self {
        let mut b = Builder(Vec::new());
        b.0.extend_from_slice(&1u16.to_le_bytes());
        b.str(b"CARLA_RECORDER");
        b.0.extend_from_slice(&date.to_le_bytes());
        b.str(map.as_bytes());
        b
    }
    fn str(&mut self, s: &[u8]) {
        self.0.extend_from_slice(&(s.len() as u16).to_le_bytes());
        self.0.extend_from_slice(s);
    }
    fn packet(&mut self, id: u8, body: &[u8]) {
        self.0.push(id);
        self.0.extend_from_slice(&(body.len() as u32).to_le_bytes());
        self.0.extend_from_slice(body);
    }
}

#[test]
fn ue5_files_with_f64_vectors() {
    let mut b = Builder::new(1_700_000_000, "Town10HD_Opt");
    let mut fs = Vec::new();
    fs.extend_from_slice(&1u64.to_le_bytes());
    fs.extend_from_slice(&(-1f64).to_le_bytes());
    fs.extend_from_slice(&0f64.to_le_bytes());
    b.packet(0, &fs);
    let mut add = Builder(Vec::new());
    add.0.extend_from_slice(&1u16.to_le_bytes());
    add.0.extend_from_slice(&5u32.to_le_bytes());
    add.0.push(1);
    for v in [100.0f64, 200.0, 300.0, 0.0, 0.0, 90.0] {
        add.0.extend_from_slice(&v.to_le_bytes());
    }
    add.0.extend_from_slice(&7u32.to_le_bytes());
    add.str(b"vehicle.x");
    add.0.extend_from_slice(&1u16.to_le_bytes());
    add.0.push(3);
    add.str(b"role_name");
    add.str(b"hero");
    b.packet(2, &add.0);
    let mut pos = Vec::new();
    pos.extend_from_slice(&1u16.to_le_bytes());
    pos.extend_from_slice(&5u32.to_le_bytes());
    for v in [150.0f64, 250.0, 350.0, 1.0, 2.0, 3.0] {
        pos.extend_from_slice(&v.to_le_bytes());
    }
    b.packet(6, &pos);
    b.packet(1, &[]);
    let r = BytesReader::new("ue5.log", b.0);
    let s = CarlaFormat.summary(&r).unwrap();
    assert_eq!(property(&s, "carla.vectors"), "f64");
    assert_eq!(property(&s, "carla.version"), "0.10.x (UE5)");
    let rows = table_rows(&r, &s, "positions", &Selection::all());
    assert_eq!(rows.len(), 1);
    assert_eq!(
        rows[0][3..],
        [
            "U64(5)", "F64(1.5)", "F64(2.5)", "F64(3.5)", "F64(1.0)", "F64(2.0)", "F64(3.0)"
        ]
    );
    let actors = table_rows(&r, &s, "actors", &Selection::all());
    assert_eq!(actors[0][6], "Str(\"vehicle.x\")");
    assert_eq!(actors[0][8], "Str(\"hero\")");
    assert_eq!(actors[0][10], "F64(1.0)");
    let text = CarlaFormat.info_text(&r, &s, false).unwrap().unwrap();
    assert_eq!(
        text,
        "Version: 1\nMap: Town10HD_Opt\nDate: 11/14/23 22:13:20\n\nFrame 1 at 0 seconds\n Create 5: vehicle.x (1) at (100, 200, 300)\n  role_name = hero\n\nFrames: 1\nDuration: 0 seconds\n"
    );
}

/// Decodes every position of a big recording named by `CARLA_BIG_LOG` (e.g.
/// one written by `cargo run --release --example gen_carla -- big.log`) and
/// prints the throughput; run with `--ignored --nocapture` in a release build.
#[test]
#[ignore]
fn big_file_positions_throughput() {
    let Some(path) = std::env::var_os("CARLA_BIG_LOG") else {
        return;
    };
    let f = FileReader::open(path).unwrap();
    let start = std::time::Instant::now();
    let s = CarlaFormat.summary(&f).unwrap();
    let walk = start.elapsed();
    let mut n = 0u64;
    for chunk in &s.chunks {
        let mut receiver = |_: &[Value<'_>]| {
            n += 1;
            Flow::Continue
        };
        CarlaFormat
            .table("positions")
            .and_then(|t| t.read_chunk(&f, &s, chunk, None, &Selection::all(), &mut receiver))
            .unwrap();
    }
    let all = start.elapsed();
    eprintln!(
        "{} bytes, {} frames, {n} positions: header walk {walk:?}, total {all:?}, {:.0} MB/s",
        f.size(),
        property(&s, "carla.frames"),
        f.size() as f64 / 1e6 / (all - walk).as_secs_f64()
    );
}

#[test]
fn collisions_and_blocked_queries_match_carla() {
    use logsql_readers::formats::carla::queries::{blocked_text, collisions_text};
    let mut compared = 0;
    for name in ["synth_0916_basic", "srunner_0913_DistanceBetweenVehicles"] {
        let Some(f) = open(name) else { return };
        let s = CarlaFormat.summary(&f).unwrap();
        let layout = s.private::<CarlaIndex>().map(|i| i.layout);
        let text = collisions_text(&f, layout, 'a', 'a').unwrap();
        assert_eq!(
            text,
            expected_text(&format!("{name}.collisions.txt")),
            "{name}"
        );
        let text = blocked_text(&f, None, 30.0, 10.0).unwrap();
        assert_eq!(
            text,
            expected_text(&format!("{name}.blocked.txt")),
            "{name}"
        );
        compared += 2;
    }
    assert_eq!(compared, 4);
    // Category filters: hero vs vehicle keeps the first row only; walkers none.
    let f = open("synth_0916_basic").unwrap();
    let text = collisions_text(&f, None, 'h', 'v').unwrap();
    assert_eq!(text.lines().filter(|l| l.contains("model3")).count(), 1);
    let text = collisions_text(&f, None, 'w', 'a').unwrap();
    assert!(!text.contains("model3"));
    let b = open("synth_bad_magic").unwrap();
    assert_eq!(
        collisions_text(&b, None, 'a', 'a').unwrap(),
        "File is not a CARLA recorder\n"
    );
}

#[test]
fn blocked_query_reports_a_long_stop() {
    use logsql_readers::formats::carla::queries::blocked_text;
    let mut b = Builder::new(0, "Town01");
    for frame in 1..=43u64 {
        let mut fs = Vec::new();
        fs.extend_from_slice(&frame.to_le_bytes());
        fs.extend_from_slice(&(if frame == 43 { -1f64 } else { 1.0 }).to_le_bytes());
        fs.extend_from_slice(&((frame - 1) as f64).to_le_bytes());
        b.packet(0, &fs);
        if frame == 1 {
            let mut add = Builder(Vec::new());
            add.0.extend_from_slice(&1u16.to_le_bytes());
            add.0.extend_from_slice(&5u32.to_le_bytes());
            add.0.push(1);
            add.0.extend_from_slice(&[0u8; 24]);
            add.0.extend_from_slice(&7u32.to_le_bytes());
            add.str(b"vehicle.x");
            add.0.extend_from_slice(&0u16.to_le_bytes());
            b.packet(2, &add.0);
        }
        let x: f32 = if frame >= 42 { 1000.0 } else { 100.0 };
        let mut pos = Vec::new();
        pos.extend_from_slice(&1u16.to_le_bytes());
        pos.extend_from_slice(&5u32.to_le_bytes());
        for v in [x, 0.0, 0.0, 0.0, 0.0, 0.0] {
            pos.extend_from_slice(&v.to_le_bytes());
        }
        b.packet(6, &pos);
        b.packet(1, &[]);
    }
    let r = BytesReader::new("stop.log", b.0);
    let text = blocked_text(&r, None, 30.0, 10.0).unwrap();
    // Stopped from frame 2 (t = 1 s) for 40 frames of 1 s.
    let want = format!(
        "Version: 1\nMap: Town01\nDate: 01/01/70 00:00:00\n\n    Time     Id Actor                                 Duration\n       1      5 {:<35}         40\n\nFrames: 43\nDuration: 42 seconds\n",
        "vehicle.x"
    );
    assert_eq!(text, want);
}
