//! Camera images through the `logsql` binary: `read_images` over
//! `tests/data/images.mcap` (written by `examples/gen_images.rs`), the image
//! functions, `export --as png|jpeg`, `export clip.mp4`, `frames` and the cameras of `logsql info`.
//! Pixel values are checked against the generator's own formulas.

use std::path::Path;
use std::process::{Command, Output, Stdio};

const FILE: &str = "tests/data/images.mcap";

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

/// The CSV rows (without the header) of `sql`.
fn rows(sql: &str) -> Vec<Vec<String>> {
    ok(&["--format", "csv", sql])
        .lines()
        .skip(1)
        .map(|l| l.split(',').map(str::to_string).collect())
        .collect()
}

fn hex(s: &str) -> Vec<u8> {
    (0..s.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(&s[i..i + 2], 16).unwrap())
        .collect()
}

/// `examples/gen_images.rs`'s sample byte.
fn sample(n: u32, x: u32, y: u32, c: u32) -> u8 {
    ((x * 37 + y * 71 + c * 53 + n * 29) % 256) as u8
}

/// The pixels of raw topic `encoding` as `format`, from `image_pixels`.
fn pixels(topic: &str, format: &str) -> Vec<u8> {
    let r = rows(&format!(
        "SELECT encode(image_pixels(image, '{format}'), 'hex') FROM read_images('{FILE}', '{topic}')"
    ));
    hex(&r[0][0])
}

/// Width and height from a PNG's IHDR.
fn png_size(png: &[u8]) -> (u32, u32) {
    assert_eq!(&png[..8], b"\x89PNG\r\n\x1a\n");
    let be = |i: usize| u32::from_be_bytes(png[i..i + 4].try_into().unwrap());
    (be(16), be(20))
}

#[test]
fn read_images_gives_encoding_size_and_frame() {
    let r = rows(&format!(
        "SELECT CAST(log_time AS BIGINT), frame_id, encoding, width, height, image['step'], length(image['data']) > 0 \
         FROM read_images('{FILE}', '/cam/jpeg')"
    ));
    let firsts: Vec<&[String]> = r.iter().map(|r| &r[..6]).collect();
    assert_eq!(
        firsts,
        [
            ["1000000000", "camera", "jpeg", "32", "24", "0"],
            ["1100000000", "camera", "jpeg", "32", "24", "0"],
            ["1200000000", "camera", "jpeg", "32", "24", "0"],
        ]
    );
    for (topic, encoding, step) in [
        ("/cam/raw/rgb8", "rgb8", 20),
        ("/cam/raw/bgra8", "bgra8", 26),
        ("/cam/raw/16UC1", "16UC1", 14),
        ("/cam/raw/32FC1", "32FC1", 26),
        ("/cam/raw/bayer_gbrg8", "bayer_gbrg8", 8),
        ("/cam/raw/yuyv", "yuyv", 14),
    ] {
        let r = rows(&format!(
            "SELECT encoding, width, height, image['step'], image['is_bigendian'] FROM read_images('{FILE}', '{topic}')"
        ));
        assert_eq!(
            r,
            [[encoding, "6", "4", &step.to_string(), "false"]],
            "{topic}"
        );
    }
    let be = rows(&format!(
        "SELECT image['is_bigendian'] FROM read_images('{FILE}', '/cam/raw/mono16')"
    ));
    assert_eq!(be, [["true"]]);
}

#[test]
fn raw_pixels_are_exact() {
    let rgb: Vec<u8> = (0..4)
        .flat_map(|y| (0..6).flat_map(move |x| (0..3).map(move |c| sample(0, x, y, c))))
        .collect();
    assert_eq!(pixels("/cam/raw/rgb8", "rgb8"), rgb);
    let bgr: Vec<u8> = rgb.chunks(3).flat_map(|p| [p[2], p[1], p[0]]).collect();
    assert_eq!(pixels("/cam/raw/bgr8", "rgb8"), bgr);
    let rgba: Vec<u8> = (0..4)
        .flat_map(|y| (0..6).flat_map(move |x| (0..3).map(move |c| sample(0, x, y, c))))
        .collect();
    assert_eq!(pixels("/cam/raw/rgba8", "rgb8"), rgba);
    let mono: Vec<u8> = (0..4)
        .flat_map(|y| (0..6).map(move |x| sample(0, x, y, 0)))
        .collect();
    assert_eq!(pixels("/cam/raw/mono8", "mono8"), mono);
    // 8 to 16 bits: times 257.
    let mono16: Vec<u8> = mono
        .iter()
        .flat_map(|&v| (u16::from(v) * 257).to_le_bytes())
        .collect();
    assert_eq!(pixels("/cam/raw/mono8", "mono16"), mono16);
    // Big-endian 16-bit samples come out little-endian.
    let be16: Vec<u8> = (0..4)
        .flat_map(|y| (0..6).flat_map(move |x| [sample(0, x, y, 1), sample(0, x, y, 0)]))
        .collect();
    assert_eq!(pixels("/cam/raw/mono16", "mono16"), be16);
    let le16: Vec<u8> = (0..4)
        .flat_map(|y| (0..6).flat_map(move |x| [sample(0, x, y, 0), sample(0, x, y, 1)]))
        .collect();
    assert_eq!(pixels("/cam/raw/16UC1", "mono16"), le16);
    // 16 to 8 bits keeps the high byte.
    let high: Vec<u8> = le16.chunks(2).map(|p| p[1]).collect();
    assert_eq!(pixels("/cam/raw/16UC1", "mono8"), high);
    // 32FC1 holds sample / 204: clamped to [0, 1], times 65535, rounded.
    let float: Vec<u8> = (0..4)
        .flat_map(|y| {
            (0..6).flat_map(move |x| {
                let f = f32::from(sample(0, x, y, 0)) / 204.0;
                ((f.clamp(0.0, 1.0) * 65535.0).round() as u16).to_le_bytes()
            })
        })
        .collect();
    assert_eq!(pixels("/cam/raw/32FC1", "mono16"), float);
    // Colour to grey: (19595 R + 38470 G + 7471 B + 2^15) >> 16.
    let luma: Vec<u8> = rgb
        .chunks(3)
        .map(|p| {
            let [r, g, b] = [p[0], p[1], p[2]].map(u32::from);
            ((19595 * r + 38470 * g + 7471 * b + 32768) >> 16) as u8
        })
        .collect();
    assert_eq!(pixels("/cam/raw/rgb8", "mono8"), luma);
}

#[test]
fn bayer_and_yuv_pixels() {
    // bayer_rggb8 pixel (1, 1) is blue: green from its four edge
    // neighbours, red from its four corners, rounded half up.
    let s = |x: u32, y: u32| u32::from(sample(0, x, y, 0));
    let rgb = pixels("/cam/raw/bayer_rggb8", "rgb8");
    let at = |x: usize, y: usize| &rgb[(y * 6 + x) * 3..(y * 6 + x) * 3 + 3];
    let mean4 = |a: u32, b: u32, c: u32, d: u32| ((a + b + c + d + 2) / 4) as u8;
    assert_eq!(
        at(1, 1),
        [
            mean4(s(0, 0), s(2, 0), s(0, 2), s(2, 2)),
            mean4(s(0, 1), s(2, 1), s(1, 0), s(1, 2)),
            s(1, 1) as u8
        ]
    );
    // Pixel (2, 1) is green in a blue row: red from above and below, blue
    // from left and right.
    let mean2 = |a: u32, b: u32| (a + b).div_ceil(2) as u8;
    assert_eq!(
        at(2, 1),
        [
            mean2(s(2, 0), s(2, 2)),
            s(2, 1) as u8,
            mean2(s(1, 1), s(3, 1))
        ]
    );
    // YUV: the bytes of pixel pair 0 of row 0, UYVY order, BT.601 limited range.
    let yuv = pixels("/cam/raw/yuv422", "rgb8");
    let (u, y0, v) = (
        i32::from(sample(0, 0, 0, 0)),
        i32::from(sample(0, 0, 0, 1)),
        i32::from(sample(0, 1, 0, 0)),
    );
    let c = |x: i32| (x >> 20).clamp(0, 255) as u8;
    let yy = (y0 - 16).max(0) * 1_220_945 + (1 << 19);
    assert_eq!(
        &yuv[..3],
        [
            c(yy + 1_673_555 * (v - 128)),
            c(yy - 410_793 * (u - 128) - 852_458 * (v - 128)),
            c(yy + 2_115_221 * (u - 128))
        ]
    );
    assert_eq!(yuv.len(), 6 * 4 * 3);
}

#[test]
fn png_is_lossless_and_jpeg_close() {
    let r = rows(&format!(
        "SELECT encode(image_pixels(image, 'rgb8'), 'hex') FROM read_images('{FILE}', '/cam/png') ORDER BY log_time"
    ));
    for (n, row) in r.iter().enumerate() {
        let want: Vec<u8> = (0..24)
            .flat_map(|y| (0..32).flat_map(move |x| (0..3).map(move |c| sample(n as u32, x, y, c))))
            .collect();
        assert_eq!(hex(&row[0]), want, "png {n}");
    }
    let r = rows(&format!(
        "SELECT encode(image_pixels(image, 'rgb8'), 'hex') FROM read_images('{FILE}', '/cam/jpeg') ORDER BY log_time"
    ));
    assert_eq!(r.len(), 3);
    for (n, row) in r.iter().enumerate() {
        let got = hex(&row[0]);
        let n = n as u32;
        let want: Vec<u8> = (0..24)
            .flat_map(|y| (0..32).flat_map(move |x| [x * 8, y * 10, (x + y) * 4 + n * 20]))
            .map(|v| v.min(255) as u8)
            .collect();
        let mse = got
            .iter()
            .zip(&want)
            .map(|(a, b)| (f64::from(*a) - f64::from(*b)).powi(2))
            .sum::<f64>()
            / want.len() as f64;
        let psnr = 10.0 * (255.0f64 * 255.0 / mse).log10();
        assert!(psnr >= 40.0, "jpeg {n}: PSNR {psnr:.1} dB");
    }
}

#[test]
fn thumbnails_and_encodings() {
    let r = rows(&format!(
        "SELECT encode(image_thumbnail(image, 10), 'hex'), encode(image_encode(image, 'png'), 'hex'), \
         encode(image['data'], 'hex'), encode(image_encode(image, 'jpeg', 50), 'hex') \
         FROM read_images('{FILE}', '/cam/jpeg') LIMIT 1"
    ));
    // 32x24 into 10: 10 x round(7.5).
    assert_eq!(png_size(&hex(&r[0][0])), (10, 8));
    assert_eq!(png_size(&hex(&r[0][1])), (32, 24));
    let recoded = hex(&r[0][3]);
    assert_eq!(&recoded[..3], [0xff, 0xd8, 0xff]);
    assert_ne!(recoded, hex(&r[0][2]), "quality 50 re-encodes");
    let r = rows(&format!(
        "SELECT encode(image_encode(image, 'jpeg'), 'hex') = encode(image['data'], 'hex'), \
         encode(image_thumbnail(image, 100), 'hex') \
         FROM read_images('{FILE}', '/cam/raw/mono16')"
    ));
    // Not a JPEG: encoded; no thumbnail larger than the image.
    assert_eq!(r[0][0], "false");
    let thumb = hex(&r[0][1]);
    assert_eq!(png_size(&thumb), (6, 4));
    assert_eq!(thumb[24], 16, "a 16-bit grey PNG");
}

#[test]
fn time_filters_reach_the_scan() {
    let r = rows(&format!(
        "SELECT count(*) FROM read_images('{FILE}', '/cam/jpeg') WHERE log_time >= '1970-01-01T00:00:01.05Z'"
    ));
    assert_eq!(r, [["2"]]);
    let plan = ok(&[
        "--format",
        "csv",
        &format!(
            "EXPLAIN SELECT width FROM read_images('{FILE}', '/cam/jpeg') WHERE log_time >= '1970-01-01T00:00:01.05Z'"
        ),
    ]);
    let scan = plan
        .lines()
        .find(|l| l.contains("DataSourceExec"))
        .unwrap_or_else(|| panic!("no scan in:\n{plan}"));
    assert!(
        scan.contains("predicate=log_time@0 >= 1050000000"),
        "{scan}"
    );
}

#[test]
fn bad_images_name_file_topic_and_time() {
    let sql = format!("SELECT width FROM read_images('{FILE}', '/cam/bad') ORDER BY log_time");
    let out = logsql(&[&sql]);
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("images.mcap: topic \"/cam/bad\": the image logged at 1100000000 ns: unsupported: compressed image (format \"jpeg\") is neither JPEG, PNG nor QOI"),
        "{err}"
    );
    let out = logsql(&["--on-error", "warn", "--format", "csv", &sql]);
    assert!(out.status.success());
    // The CSV writer quotes the empty field of a one-column row (a null).
    assert_eq!(String::from_utf8_lossy(&out.stdout), "width\n4\n\"\"\n");
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(err.matches("warning:").count(), 1, "{err}");
    let out = logsql(&[&format!("SELECT * FROM read_images('{FILE}', '/nope')")]);
    assert!(String::from_utf8_lossy(&out.stderr).contains("no file there has topic \"/nope\""));
    let out = logsql(&[&format!(
        "SELECT image_pixels(image, 'bgr8') FROM read_images('{FILE}', '/cam/png')"
    )]);
    assert!(
        String::from_utf8_lossy(&out.stderr).contains(
            "image_pixels: unsupported: pixel format \"bgr8\" (one of rgb8, mono8, mono16)"
        )
    );
}

#[test]
fn export_writes_one_image_per_message() {
    let dir = tempfile::tempdir().unwrap();
    let out_dir = dir.path().join("jpeg");
    let said = ok(&[
        "export",
        FILE,
        out_dir.to_str().unwrap(),
        "--topic",
        "/cam/jpeg",
        "--as",
        "jpeg",
    ]);
    assert!(said.starts_with("exported 3 images to "), "{said}");
    let mut names: Vec<String> = std::fs::read_dir(&out_dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .collect();
    names.sort();
    assert_eq!(
        names,
        ["1000000000.jpg", "1100000000.jpg", "1200000000.jpg"]
    );
    // As recorded: the JPEG bytes of the message.
    let r = rows(&format!(
        "SELECT encode(image['data'], 'hex') FROM read_images('{FILE}', '/cam/jpeg') ORDER BY log_time LIMIT 1"
    ));
    assert_eq!(
        std::fs::read(out_dir.join(&names[0])).unwrap(),
        hex(&r[0][0])
    );

    let png_dir = dir.path().join("png");
    ok(&[
        "export",
        FILE,
        png_dir.to_str().unwrap(),
        "--topic",
        "/cam/raw/bayer_bggr8",
        "--as",
        "png",
    ]);
    let png = std::fs::read(png_dir.join("1000000000.png")).unwrap();
    assert_eq!(png_size(&png), (6, 4));
    assert_eq!(&png[24..26], [8, 2], "8-bit RGB");
    assert_eq!(
        std::fs::read_dir(&png_dir).unwrap().count(),
        1,
        "no temporary file left"
    );

    let out = logsql(&[
        "export",
        FILE,
        dir.path().join("x").to_str().unwrap(),
        "--as",
        "png",
    ]);
    assert!(
        String::from_utf8_lossy(&out.stderr)
            .contains("--as png exports one camera topic: give exactly one --topic")
    );
    let bad = dir.path().join("bad");
    let out = logsql(&[
        "export",
        FILE,
        bad.to_str().unwrap(),
        "--topic",
        "/cam/bad",
        "--as",
        "png",
    ]);
    assert!(!out.status.success());
    let said = ok(&[
        "--on-error",
        "warn",
        "export",
        FILE,
        bad.to_str().unwrap(),
        "--topic",
        "/cam/bad",
        "--as",
        "png",
    ]);
    assert!(
        said.contains("exported 1 images")
            && said.contains("(1 images that did not decode skipped)"),
        "{said}"
    );
    assert!(Path::new(&bad.join("1000000000.png")).is_file());
}

#[test]
fn info_lists_cameras() {
    let out = ok(&["info", FILE]);
    for line in [
        "cameras:      (first image of each topic)",
        "  /cam/bad                4x2  png",
        "  /cam/jpeg             32x24  jpeg",
        "  /cam/raw/bayer_rggb8    6x4  bayer_rggb8",
    ] {
        assert!(out.contains(line), "missing {line:?} in:\n{out}");
    }
    let json = ok(&["info", "--format", "json", FILE]);
    assert!(
        json.contains(r#""encoding": "jpeg""#) && json.contains(r#""topic": "/cam/jpeg""#),
        "{json}"
    );
    // The demo file's camera holds real JPEG frames; a camera whose bytes
    // are no image shows the cause (the ROS1 demo bag's are noise).
    let out = ok(&["info", "tests/data/demo.mcap"]);
    assert!(out.contains("  /camera/compressed  64x48  jpeg"), "{out}");
    let out = ok(&["info", "tests/data/demo.bag"]);
    assert!(
        out.contains("  /camera/image/compressed  ?  unsupported: compressed image (format \"jpeg\") is neither JPEG, PNG nor QOI"),
        "{out}"
    );
}

/// The frames of an MP4 file: the track's size and each sample's start and
/// duration in 90 kHz ticks.
fn mp4_frames(path: &Path) -> ((u16, u16), Vec<(u64, u32)>) {
    let bytes = std::fs::read(path).unwrap();
    let size = bytes.len() as u64;
    let mut reader = mp4::Mp4Reader::read_header(std::io::Cursor::new(bytes), size).unwrap();
    let track = reader.tracks().get(&1).unwrap();
    let (dims, count) = ((track.width(), track.height()), track.sample_count());
    let frames = (1..=count)
        .map(|i| {
            let s = reader.read_sample(1, i).unwrap().unwrap();
            assert!(!s.bytes.is_empty());
            (s.start_time, s.duration)
        })
        .collect();
    (dims, frames)
}

/// `export clip.mp4`: one H.264 frame per message at its own log_time
/// (three JPEGs 100 ms apart), or with `--fps` one every 1/N s; the file is
/// written whole or not at all.
#[test]
fn export_writes_a_camera_topic_as_an_mp4_video() {
    let dir = tempfile::tempdir().unwrap();
    let clip = dir.path().join("clip.mp4");
    let out = ok(&[
        "export",
        FILE,
        clip.to_str().unwrap(),
        "--topic",
        "/cam/jpeg",
    ]);
    assert!(out.starts_with("exported 3 frames to "), "{out}");
    let (dims, frames) = mp4_frames(&clip);
    assert_eq!(dims, (32, 24));
    // 90 kHz ticks since the first frame: 0, 100 ms, 200 ms.
    let starts: Vec<u64> = frames.iter().map(|f| f.0).collect();
    assert_eq!(starts, [0, 9000, 18000]);

    let out = ok(&[
        "export",
        FILE,
        clip.to_str().unwrap(),
        "--topic",
        "/cam/jpeg",
        "--fps",
        "20",
        "--quality",
        "90",
    ]);
    assert!(out.starts_with("exported 5 frames to "), "{out}");
    let (_, frames) = mp4_frames(&clip);
    let starts: Vec<u64> = frames.iter().map(|f| f.0).collect();
    assert_eq!(starts, [0, 4500, 9000, 13500, 18000]);
    assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 1);

    // A topic without decodable images leaves no file.
    let bad = dir.path().join("bad.mp4");
    let out = logsql(&["export", FILE, bad.to_str().unwrap(), "--topic", "/cam/bad"]);
    assert!(!out.status.success());
    assert!(!bad.exists());
    let out = logsql(&[
        "export",
        FILE,
        bad.to_str().unwrap(),
        "--topic",
        "/cam/jpeg",
        "--fps",
        "0",
    ]);
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("--fps 0: a number of frames per second"),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// `COPY (...) TO 'clip.mp4'`: the SQL form of the video export, with its
/// options, a count of frames, a refusal of what is no video, and the old
/// target left as it was when the query fails.
#[test]
fn copy_writes_images_as_an_mp4_video() {
    let dir = tempfile::tempdir().unwrap();
    let clip = dir.path().join("clip.mp4");
    let copy = |topic: &str, target: &Path, options: &str| {
        format!(
            "COPY (SELECT log_time, image FROM read_images('{FILE}', '{topic}')) TO '{}'{options}",
            target.display()
        )
    };
    assert_eq!(rows(&copy("/cam/jpeg", &clip, "")), [["3"]]);
    let (dims, frames) = mp4_frames(&clip);
    assert_eq!(dims, (32, 24));
    let starts: Vec<u64> = frames.iter().map(|f| f.0).collect();
    assert_eq!(starts, [0, 9000, 18000]);

    // Resampled; `STORED AS MP4` names the format whatever the extension.
    let other = dir.path().join("clip.video");
    let sql = copy(
        "/cam/jpeg",
        &other,
        " STORED AS MP4 OPTIONS (fps '20', quality '90')",
    );
    assert_eq!(rows(&sql), [["5"]]);
    let starts: Vec<u64> = mp4_frames(&other).1.iter().map(|f| f.0).collect();
    assert_eq!(starts, [0, 4500, 9000, 13500, 18000]);

    // A camera smaller than one H.264 macroblock is refused clearly.
    let raw = dir.path().join("raw.mp4");
    let out = logsql(&[&copy("/cam/raw/rgb8", &raw, "")]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("the rgb8 image at log_time 1000000000: unsupported: the image at 1000000000 ns is 6x4: OpenH264 encodes frames of at least 16x16 pixels"),
        "{err}"
    );

    // A JPEG that does not decode fails the query and leaves the old file;
    // under `warn` it is left out (none is left here, so nothing to write).
    let before = std::fs::read(&clip).unwrap();
    let out = logsql(&[&copy("/cam/bad", &clip, "")]);
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("1100000000"), "{err}");
    assert_eq!(std::fs::read(&clip).unwrap(), before);
    let out = logsql(&[
        "-c",
        "SET logsql.on_error = 'warn'",
        &copy("/cam/bad", &clip, ""),
    ]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("a video needs at least one image"), "{err}");
    assert_eq!(std::fs::read(&clip).unwrap(), before);

    // What is no video is refused before anything is written.
    let out = logsql(&[&format!(
        "COPY (SELECT log_time FROM read_images('{FILE}', '/cam/jpeg')) TO '{}'",
        clip.display()
    )]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("writing MP4 needs an image column (the image value of read_images); the query has: log_time"),
        "{err}"
    );
    let out = logsql(&[&copy("/cam/jpeg", &clip, " OPTIONS (fps '0')")]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("MP4 fps '0' is not a frame rate"), "{err}");
    let mut names: Vec<String> = std::fs::read_dir(dir.path())
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    assert_eq!(names, ["clip.mp4", "clip.video"]);
}

/// The writers of camera frames (MP4, LeRobot) read their input in batches of
/// 32 rows whatever `datafusion.execution.batch_size` says (a merge of 8192
/// image rows holds their chunks: memory would grow with the recording); a
/// smaller session batch size is kept, and other writers are left alone.
#[test]
fn frame_writers_run_their_input_in_small_batches() {
    let dir = tempfile::tempdir().unwrap();
    let explain = |copy: &str| {
        let out = ok(&["--format", "csv", &format!("EXPLAIN {copy}")]);
        // The physical plan's node names, outermost first.
        out.lines()
            .map(|l| {
                l.trim_start_matches("physical_plan,")
                    .trim_matches('"')
                    .trim()
            })
            .filter_map(|l| l.split([':', '(']).next())
            .filter(|l| l.ends_with("Exec"))
            .map(str::to_string)
            .collect::<Vec<_>>()
    };
    let mp4 = format!(
        "COPY (SELECT log_time, image FROM read_images('{FILE}', '/cam/jpeg')) TO '{}'",
        dir.path().join("clip.mp4").display()
    );
    let plan = explain(&mp4);
    assert_eq!(
        plan[..4],
        [
            "DamageReportExec",
            "DataSinkExec",
            "FrameBatchesExec",
            "SortPreservingMergeExec"
        ],
        "{plan:?}"
    );
    let shown = ok(&["--format", "csv", &format!("EXPLAIN {mp4}")]);
    assert!(shown.contains("FrameBatchesExec: rows=32"), "{shown}");
    let eight = ok(&[
        "-c",
        "SET datafusion.execution.batch_size = 8",
        "--format",
        "csv",
        &format!("EXPLAIN {mp4}"),
    ]);
    assert!(eight.contains("FrameBatchesExec: rows=8"), "{eight}");
    let lerobot = format!(
        "COPY (SELECT 0 AS episode_index, 0.0 AS timestamp, 1.0 AS x) TO '{}' STORED AS LEROBOT OPTIONS (fps '30')",
        dir.path().join("dataset").display()
    );
    assert!(explain(&lerobot).contains(&"FrameBatchesExec".to_string()));
    let parquet = format!(
        "COPY (SELECT log_time FROM read_images('{FILE}', '/cam/jpeg')) TO '{}'",
        dir.path().join("t.parquet").display()
    );
    assert!(!explain(&parquet).contains(&"FrameBatchesExec".to_string()));
    // The videos are as before.
    assert_eq!(rows(&mp4), [["3"]]);
}

/// `logsql frames`: a contact sheet of the frames spread over the topic's
/// span (the three JPEGs of `/cam/jpeg`, however many are asked for), each
/// over its time label, as a PNG written whole.
#[test]
fn frames_draws_a_contact_sheet() {
    let dir = tempfile::tempdir().unwrap();
    let sheet = dir.path().join("sheet.png");
    let out = ok(&[
        "frames",
        FILE,
        "--topic",
        "/cam/jpeg",
        "-o",
        sheet.to_str().unwrap(),
        "--size",
        "64",
    ]);
    assert!(out.starts_with("wrote 3 frames of /cam/jpeg to "), "{out}");
    let decoder = png::Decoder::new(std::io::BufReader::new(
        std::fs::File::open(&sheet).unwrap(),
    ));
    let mut reader = decoder.read_info().unwrap();
    let mut buf = vec![0; reader.output_buffer_size()];
    let info = reader.next_frame(&mut buf).unwrap();
    // Two columns and two rows of cells at least 64 pixels wide, with 8-pixel
    // gaps; the first frame's pixels are not the background.
    assert!(
        info.width >= 2 * 64 + 3 * 8,
        "{}x{}",
        info.width,
        info.height
    );
    assert!(
        info.height > 2 * 18 + 3 * 8,
        "{}x{}",
        info.width,
        info.height
    );
    let at = |x: u32, y: u32| {
        let i = ((y * info.width + x) * 3) as usize;
        [buf[i], buf[i + 1], buf[i + 2]]
    };
    assert_eq!(at(0, 0), [32, 32, 32]);
    let inside = (0..64).any(|d| at(8 + d, 8 + d / 2) != [32, 32, 32]);
    assert!(inside, "no frame drawn at the first cell");
    assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 1);

    let out = logsql(&[
        "frames",
        FILE,
        "--topic",
        "/nope",
        "-o",
        sheet.to_str().unwrap(),
    ]);
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("no messages of topic /nope"));
}

#[test]
fn pixels_past_the_value_cap_are_refused_before_decoding() {
    let sql = format!(
        "SELECT length(image_pixels(image, 'rgb8')) AS n FROM read_images('{FILE}', '/cam/png')"
    );
    let out = logsql(&["-c", "SET logsql.max_value_bytes = 100", &sql]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(
        err.contains("image_pixels of 1 images") && err.contains("logsql.max_value_bytes"),
        "{err}"
    );
    // Under the default cap the same query answers.
    assert!(!ok(&[&sql]).is_empty());
}
