//! Cameras as recordings from the wild hold them, through the `logsql`
//! binary with default settings: frames of sensor noise (which OpenH264
//! cannot fit at the default quality) in MP4 videos and LeRobot datasets,
//! images that do not decode (named by file, topic and log time, and
//! skipped with their episode under `skip_bad_episodes`), images too small
//! for a video, and QOI-compressed frames of a real Spot recording
//! (`tests/public/qoi_image_transport/`, the codec's own test data) against
//! the same frame recorded raw. The noise and broken-frame cases run on
//! generated robot recordings and on the real Spot bags (the raw frame's
//! pixels replaced by noise; the QOI body destroyed).

use std::collections::BTreeMap;
use std::fs::File;
use std::io::BufWriter;
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

/// Runs logsql and asserts success: (stdout, stderr).
fn ok(args: &[&str]) -> (String, String) {
    let out = logsql(args);
    let stderr = String::from_utf8(out.stderr).unwrap();
    assert!(out.status.success(), "logsql {args:?} failed:\n{stderr}");
    (String::from_utf8(out.stdout).unwrap(), stderr)
}

fn err(args: &[&str]) -> String {
    let out = logsql(args);
    assert!(!out.status.success(), "logsql {args:?} succeeded");
    String::from_utf8(out.stderr).unwrap()
}

/// The CSV rows (without the header) of `sql`.
fn rows(sql: &str) -> Vec<Vec<String>> {
    ok(&["--format", "csv", sql])
        .0
        .lines()
        .skip(1)
        .map(|l| l.split(',').map(str::to_string).collect())
        .collect()
}

const START: u64 = 1_700_000_000_000_000_000;

/// The samples (start in 90 kHz ticks, key frame) of an MP4's video track.
fn mp4_samples(path: &Path) -> Vec<(u64, bool)> {
    let bytes = std::fs::read(path).unwrap();
    let size = bytes.len() as u64;
    let mut r = mp4::Mp4Reader::read_header(std::io::Cursor::new(bytes), size).unwrap();
    let n = r.tracks().get(&1).unwrap().sample_count();
    (1..=n)
        .map(|i| {
            let s = r.read_sample(1, i).unwrap().unwrap();
            (s.start_time, s.is_sync)
        })
        .collect()
}

/// A robot recording whose front camera (640x480, 30 Hz) sees noise.
fn noise_recording(dir: &Path) -> PathBuf {
    let path = dir.join("noise.mcap");
    let o = RobotOptions {
        seconds: 0.3,
        width: 640,
        height: 480,
        noise: true,
        ..RobotOptions::default()
    };
    write_robot(&path, &o).unwrap();
    path
}

#[test]
fn noise_frames_make_a_video_at_a_lower_quality_with_a_warning() {
    let dir = tempfile::tempdir().unwrap();
    let rec = noise_recording(dir.path());
    let rec_s = rec.to_str().unwrap();
    let clip = dir.path().join("clip.mp4");
    let (said, warned) = ok(&[
        "export",
        rec_s,
        clip.to_str().unwrap(),
        "--topic",
        "/camera/front",
    ]);
    assert!(said.contains("exported 8 frames"), "{said}");
    // Frames at start + 50 ms + i/30 s, i = 0..7, each at its own time.
    let samples = mp4_samples(&clip);
    assert_eq!(samples.len(), 8);
    assert_eq!(samples[0], (0, true));
    assert_eq!(samples[7].0, 7 * 3000);
    assert!(
        warned.contains(&format!(
            "warning: writing MP4 {}: the rgb8 image of {rec_s} at log_time {}: the H.264 encoder could not fit the frame at quality 75; the video goes on at quality ",
            clip.display(),
            START + 50_000_000
        )),
        "{warned}"
    );
    assert_eq!(warned.matches("could not fit").count(), 1, "{warned}");

    // The same frames as a LeRobot dataset's camera.
    let spec = dir.path().join("spec.toml");
    std::fs::write(
        &spec,
        format!(
            "input = \"{rec_s}\"\nfps = 30\n[features]\n\"observation.state\" = {{ topic = \"/joint_states\", field = \"position\" }}\n\
             [cameras]\n\"observation.images.front\" = \"/camera/front\"\n"
        ),
    )
    .unwrap();
    let out = dir.path().join("ds");
    let (said, warned) = ok(&[
        "dataset",
        spec.to_str().unwrap(),
        "-o",
        out.to_str().unwrap(),
    ]);
    assert!(said.contains("(1 episode)"), "{said}");
    assert!(
        warned.contains(&format!(
            "warning: LeRobot dataset: episode 0 ({rec_s}): camera \"observation.images.front\": frame 0 of the episode: the H.264 encoder could not fit the frame at quality 75"
        )),
        "{warned}"
    );
    let video = out.join("videos/observation.images.front/chunk-000/file-000.mp4");
    assert!(mp4_samples(&video).len() >= 7);
}

#[test]
fn a_dataset_skips_an_episode_whose_images_do_not_decode_and_names_why() {
    let dir = tempfile::tempdir().unwrap();
    let runs = dir.path().join("runs");
    std::fs::create_dir_all(&runs).unwrap();
    write_robot(&runs.join("a.mcap"), &RobotOptions::default()).unwrap();
    // b: front frames of 30 bytes from 1 s on (64x48 rgb8 needs 9,216).
    let b = RobotOptions {
        seed: 1,
        start_ns: START + 100_000_000_000,
        broken_after: Some(1.0),
        ..RobotOptions::default()
    };
    write_robot(&runs.join("b.mcap"), &b).unwrap();
    let spec = dir.path().join("spec.toml");
    std::fs::write(
        &spec,
        format!(
            "input = \"{}/\"\nfps = 30\n[features]\n\"observation.state\" = {{ topic = \"/joint_states\", field = \"position\" }}\n\
             [cameras]\n\"observation.images.front\" = \"/camera/front\"\n",
            runs.display()
        ),
    )
    .unwrap();
    let spec = spec.to_str().unwrap();
    let out = dir.path().join("ds");
    let out_s = out.to_str().unwrap();
    let rb = format!("{}/b.mcap", runs.display());
    // The first broken frame: the front camera's first message at or after
    // 1 s (start + 50 ms + 29 periods of 1/30 s), seen by the grid's frame
    // at 31/30 s.
    let broken_at = START + 100_000_000_000 + 50_000_000 + 29 * (1_000_000_000 / 30);
    let why = format!(
        "episode 1 ({rb}): camera \"observation.images.front\" (topic /camera/front) at log_time {} ns: 30 bytes of data for 64x48 Rgb8 pixels with step 192 (needs 9216)",
        START + 100_000_000_000 + 1_033_333_333
    );
    // Without the flag: the export's error names the episode, the file,
    // the camera, the time and the cause; nothing is left.
    let e = err(&["dataset", spec, "-o", out_s]);
    assert!(e.contains(&why), "{e}\n(expected {why})");
    assert!(!out.exists());
    // With it: a is kept, b skipped for what its images are.
    let (said, warned) = ok(&["dataset", spec, "-o", out_s, "--skip-bad-episodes"]);
    assert!(said.contains("1 episode skipped:"), "{said}");
    assert!(said.contains(&format!("  {why}")), "{said}");
    assert!(!said.contains("missing"), "{said}");
    assert!(
        warned.contains(&format!("skipping episode 1 ({rb})")),
        "{warned}"
    );
    let info: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(out.join("meta/info.json")).unwrap())
            .unwrap();
    assert_eq!(info["total_episodes"], 1);
    assert_eq!(info["total_frames"], 59);
    // read_images itself still refuses the broken frame, naming it.
    let e = err(&[&format!(
        "SELECT count(*) FROM read_images('{rb}', '/camera/front') WHERE image IS NOT NULL"
    )]);
    assert!(
        e.contains(&format!(
            "{rb}: topic \"/camera/front\": the image logged at {broken_at} ns: "
        )),
        "{e}"
    );
    // Unchecked, it hands the frame on as the message states it.
    assert_eq!(
        rows(&format!(
            "SELECT width, height, length(image['data']) FROM read_images('{rb}', '/camera/front', 'unchecked') \
             WHERE log_time = arrow_cast({broken_at}, 'Timestamp(Nanosecond, Some(\"UTC\"))')"
        )),
        [["64", "48", "30"]]
    );
}

/// A ROS1 `sensor_msgs/CompressedImage` MCAP of `/cam` with one message
/// per (format, data), 100 ms apart from `START`.
fn compressed_mcap(path: &Path, images: &[(&str, Vec<u8>)]) {
    const DEF: &str = "Header header\nstring format\nuint8[] data\n\
        ================================================================================\n\
        MSG: std_msgs/Header\nuint32 seq\ntime stamp\nstring frame_id\n";
    let mut w = mcap::WriteOptions::new()
        .profile("ros1")
        .create(BufWriter::new(File::create(path).unwrap()))
        .unwrap();
    let schema = w
        .add_schema("sensor_msgs/CompressedImage", "ros1msg", DEF.as_bytes())
        .unwrap();
    let ch = w
        .add_channel(schema, "/cam", "ros1", &BTreeMap::new())
        .unwrap();
    for (i, (format, data)) in images.iter().enumerate() {
        let t = START + i as u64 * 100_000_000;
        // header (seq, stamp secs and nsecs, frame_id), format, data
        let mut payload = Vec::new();
        payload.extend((i as u32).to_le_bytes());
        payload.extend(((t / 1_000_000_000) as u32).to_le_bytes());
        payload.extend(((t % 1_000_000_000) as u32).to_le_bytes());
        for field in [&b"cam"[..], format.as_bytes(), data] {
            payload.extend((field.len() as u32).to_le_bytes());
            payload.extend(field);
        }
        let header = mcap::records::MessageHeader {
            channel_id: ch,
            sequence: i as u32,
            log_time: t,
            publish_time: t,
        };
        w.write_to_known_channel(&header, &payload).unwrap();
    }
    w.finish().unwrap();
}

fn png(width: u32, height: u32) -> Vec<u8> {
    let data = (0..width * height * 3)
        .map(|i| (i * 7 % 256) as u8)
        .collect();
    let pixels = logsql_media::images::Pixels::new(
        logsql_media::images::PixelFormat::Rgb8,
        width,
        height,
        data,
    );
    logsql_media::images::codec::encode_png(&pixels).unwrap()
}

#[test]
fn an_image_whose_body_does_not_decode_is_named_by_file_topic_and_time() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("bad_crc.mcap");
    // A PNG whose IHDR is intact and whose IDAT is not (its CRC fails).
    let mut bad = png(64, 48);
    bad[33 + 8 + 5] ^= 0x55;
    compressed_mcap(&path, &[("png", png(64, 48)), ("png", bad)]);
    let f = path.to_str().unwrap();
    let at = START + 100_000_000;
    // The header reads: read_images gives its size.
    assert_eq!(
        rows(&format!(
            "SELECT width, height FROM read_images('{f}', '/cam')"
        )),
        [["64", "48"], ["64", "48"]]
    );
    for function in ["image_pixels(image, 'rgb8')", "image_thumbnail(image, 16)"] {
        let e = err(&[&format!(
            "SELECT length({function}) FROM read_images('{f}', '/cam')"
        )]);
        assert!(
            e.contains(&format!(
                "{f}: topic \"/cam\": the image logged at {at} ns: the png image of 64x48 pixels: corrupt png image"
            )),
            "{function}: {e}"
        );
    }
    // Under warn: null, and a warning naming it.
    let out = logsql(&[
        "--on-error",
        "warn",
        "--format",
        "csv",
        &format!("SELECT length(image_pixels(image, 'rgb8')) AS n FROM read_images('{f}', '/cam')"),
    ]);
    assert!(out.status.success());
    // (CSV writes a row of one null as "".)
    assert_eq!(String::from_utf8(out.stdout).unwrap(), "n\n9216\n\"\"\n");
    let warned = String::from_utf8(out.stderr).unwrap();
    assert!(
        warned.contains(&format!(
            "warning: image_pixels: {f}: topic \"/cam\": the image logged at {at} ns: the png image"
        )),
        "{warned}"
    );
    // The image value says where it was logged.
    let (json, _) = ok(&[
        "--format",
        "json",
        &format!(
            "SELECT image['source'] AS s FROM read_images('{f}', '/cam') ORDER BY log_time LIMIT 1"
        ),
    ]);
    let v: serde_json::Value = serde_json::from_str(&json).unwrap();
    assert_eq!(
        v[0]["s"],
        format!("{f}: topic \"/cam\": the image logged at {START} ns")
    );
}

#[test]
fn a_video_of_images_too_small_or_broken_says_why() {
    let dir = tempfile::tempdir().unwrap();
    let tiny = dir.path().join("tiny.mcap");
    compressed_mcap(&tiny, &[("png", png(1, 1)), ("png", png(1, 1))]);
    let clip = dir.path().join("clip.mp4");
    let c = clip.to_str().unwrap();
    let t = tiny.to_str().unwrap();
    let e = err(&["export", t, c, "--topic", "/cam"]);
    assert!(
        e.contains(&format!(
            "the image at {START} ns is 1x1: OpenH264 encodes frames of at least 16x16 pixels"
        )),
        "{e}"
    );
    assert!(!e.contains("0x0"), "{e}");
    assert!(!clip.exists());
    // Broken images under warn: the video that never started says why the
    // first image was left out.
    let broken = dir.path().join("broken.mcap");
    compressed_mcap(&broken, &[("jpeg", b"\xff\xd8\xff not a jpeg".to_vec())]);
    let e = err(&[
        "export",
        broken.to_str().unwrap(),
        c,
        "--topic",
        "/cam",
        "--on-error",
        "warn",
    ]);
    assert!(
        e.contains(&format!(
            "a video needs at least one image, and all 1 were left out; the first: the null image at log_time {START}"
        )),
        "{e}"
    );
    assert!(e.contains("corrupt jpeg image"), "{e}");
}

/// The codec's own test data: one Spot hand-camera frame, raw and QOI.
fn qoi_bags() -> (String, String) {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/public/qoi_image_transport");
    (
        dir.join("compressed.bag").display().to_string(),
        dir.join("raw.bag").display().to_string(),
    )
}

#[test]
fn qoi_frames_of_a_real_recording_equal_the_raw_frame() {
    let (qoi, raw) = qoi_bags();
    let q = "/spot/camera/hand_color/image/qoi";
    let r = "/spot/camera/hand_color/image";
    let of = |file: &str, topic: &str, what: &str| {
        rows(&format!(
            "SELECT {what} FROM read_images('{file}', '{topic}')"
        ))
    };
    assert_eq!(
        of(&qoi, q, "encoding, width, height"),
        [["qoi", "640", "480"]]
    );
    for format in ["rgb8", "mono8"] {
        let pixels = format!("md5(image_pixels(image, '{format}'))");
        assert_eq!(of(&qoi, q, &pixels), of(&raw, r, &pixels), "{format}");
    }
    // `export --as png` writes a PNG of the raw frame's pixels.
    let dir = tempfile::tempdir().unwrap();
    let frames = dir.path().join("frames");
    ok(&[
        "export",
        &qoi,
        frames.to_str().unwrap(),
        "--topic",
        q,
        "--as",
        "png",
    ]);
    let file = frames.join("1672826398618465547.png");
    let decoded =
        logsql_media::images::codec::decode("png", &std::fs::read(&file).unwrap()).unwrap();
    let raw_pixels = rows(&format!(
        "SELECT encode(image_pixels(image, 'rgb8'), 'hex') FROM read_images('{raw}', '{r}')"
    ));
    let hex: String = decoded.data.iter().map(|b| format!("{b:02x}")).collect();
    assert_eq!(hex, raw_pixels[0][0]);
    // logsql info lists the camera.
    let (info, _) = ok(&["info", &qoi]);
    assert!(info.contains(&format!("{q}  640x480  qoi")), "{info}");
    // One message, one instant: no rate to show.
    assert!(info.contains("|  peak -\n"), "{info}");
}

/// `tests/public/qoi_image_transport/raw.bag` with its frame's pixels
/// replaced by sensor noise (the message, connection and index as the
/// recorder wrote them).
fn spot_noise(dir: &Path) -> PathBuf {
    let (_, raw) = qoi_bags();
    let mut bytes = std::fs::read(raw).unwrap();
    // The rgb8 frame: a uint8[] of 640 * 480 * 3 bytes after its length.
    let len = (640u32 * 480 * 3).to_le_bytes();
    let at = bytes
        .windows(4)
        .position(|w| w == len)
        .expect("the frame's length")
        + 4;
    let mut x = 0x9e37_79b9_7f4a_7c15u64;
    for b in &mut bytes[at..at + 640 * 480 * 3] {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        *b = (x >> 32) as u8;
    }
    let path = dir.join("spot_noise.bag");
    std::fs::write(&path, bytes).unwrap();
    path
}

#[test]
fn a_real_spot_recording_with_a_noise_frame_and_a_broken_one() {
    let dir = tempfile::tempdir().unwrap();
    let noise = spot_noise(dir.path());
    let n = noise.to_str().unwrap();
    let topic = "/spot/camera/hand_color/image";
    // The noise frame into an MP4, at a lowered quality with a warning.
    let clip = dir.path().join("noise.mp4");
    let (said, warned) = ok(&["export", n, clip.to_str().unwrap(), "--topic", topic]);
    assert!(said.contains("exported 1 frame to"), "{said}");
    assert!(
        warned.contains(&format!(
            "the rgb8 image of {n} at log_time 1672826398618465547: the H.264 encoder could not fit the frame at quality 75"
        )),
        "{warned}"
    );
    assert_eq!(mp4_samples(&clip), [(0, true)]);
    // A dataset of the real QOI recording and a copy whose QOI body is
    // destroyed: the good one is kept, the broken one skipped for its cause.
    let runs = dir.path().join("runs");
    std::fs::create_dir(&runs).unwrap();
    let (qoi, _) = qoi_bags();
    std::fs::copy(&qoi, runs.join("a.bag")).unwrap();
    let mut bytes = std::fs::read(&qoi).unwrap();
    let body = bytes.windows(4).position(|w| w == b"qoif").unwrap() + 14;
    bytes[body..body + 200_000].fill(0);
    std::fs::write(runs.join("b.bag"), bytes).unwrap();
    let spec = dir.path().join("spec.toml");
    std::fs::write(
        &spec,
        format!(
            "input = \"{}/\"\nfps = 30\n[cameras]\n\"observation.images.hand\" = \"/spot/camera/hand_color/image/qoi\"\n",
            runs.display()
        ),
    )
    .unwrap();
    let out = dir.path().join("ds");
    let (said, _) = ok(&[
        "dataset",
        spec.to_str().unwrap(),
        "-o",
        out.to_str().unwrap(),
        "--skip-bad-episodes",
    ]);
    assert!(said.contains("1 frame written (1 episode)"), "{said}");
    assert!(
        said.contains(&format!(
            "  episode 1 ({}/b.bag): camera \"observation.images.hand\" (topic /spot/camera/hand_color/image/qoi) at log_time 1672826398618465547 ns: corrupt qoi image",
            runs.display()
        )),
        "{said}"
    );
    // The noise frame into a dataset too.
    let spec = dir.path().join("noise.toml");
    std::fs::write(
        &spec,
        format!(
            "input = \"{n}\"\nfps = 30\n[cameras]\n\"observation.images.hand\" = \"{topic}\"\n"
        ),
    )
    .unwrap();
    let out = dir.path().join("noise_ds");
    let (said, warned) = ok(&[
        "dataset",
        spec.to_str().unwrap(),
        "-o",
        out.to_str().unwrap(),
    ]);
    assert!(said.contains("1 frame written (1 episode)"), "{said}");
    assert!(
        warned.contains(&format!(
            "LeRobot dataset: episode 0 ({n}): camera \"observation.images.hand\": frame 0 of the episode: the H.264 encoder could not fit"
        )),
        "{warned}"
    );
}
