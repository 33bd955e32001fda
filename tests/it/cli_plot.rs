//! `logsql plot`, run as a process on the repo's demo recording: PNG and SVG
//! files decoded back (size, drawn pixels, legend, axis titles), text charts,
//! spikes kept through the reduction of long results, and the errors.

use std::path::Path;
use std::process::{Command, Output, Stdio};

const IMU: &str =
    "SELECT log_time, linear_acceleration FROM read_topic('tests/data/demo.mcap', '/imu')";

fn logsql(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_logsql"))
        .args(args)
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .stdin(Stdio::null())
        .output()
        .expect("run logsql")
}

fn ok(args: &[&str]) -> Output {
    let out = logsql(args);
    assert!(
        out.status.success(),
        "logsql {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    out
}

fn fails(args: &[&str]) -> String {
    let out = logsql(args);
    assert_eq!(out.status.code(), Some(1), "logsql {args:?} should fail");
    String::from_utf8_lossy(&out.stderr).into_owned()
}

/// The decoded RGB pixels of a PNG, with its size.
fn png_pixels(path: &Path) -> (u32, u32, Vec<[u8; 3]>) {
    let decoder = png::Decoder::new(std::io::BufReader::new(std::fs::File::open(path).unwrap()));
    let mut reader = decoder.read_info().unwrap();
    let mut buf = vec![0; reader.output_buffer_size()];
    let info = reader.next_frame(&mut buf).unwrap();
    assert_eq!(info.color_type, png::ColorType::Rgb);
    let pixels = buf[..info.buffer_size()]
        .chunks_exact(3)
        .map(|p| [p[0], p[1], p[2]])
        .collect();
    (info.width, info.height, pixels)
}

#[test]
fn png_has_the_size_the_lines_and_nothing_else_on_stdout() {
    let dir = tempfile::tempdir().unwrap();
    let png = dir.path().join("imu.png");
    let out = ok(&[
        "plot",
        IMU,
        "-o",
        png.to_str().unwrap(),
        "--title",
        "demo /imu",
    ]);
    assert!(out.stdout.is_empty());
    assert_eq!(
        String::from_utf8_lossy(&out.stderr).trim(),
        format!(
            "plotted 3 series from 2000 rows (6000 values; each series at most 4 points per \
             pixel column of 1200: first, last, lowest, highest) to {}",
            png.display()
        )
    );
    let (w, h, pixels) = png_pixels(&png);
    assert_eq!((w, h), (1200, 600));
    let count = |rgb: [u8; 3]| pixels.iter().filter(|p| **p == rgb).count();
    // The three series' colours (blue, orange, green), each a line across the chart.
    for color in [[31, 119, 180], [255, 127, 14], [44, 160, 44]] {
        assert!(count(color) > 1000, "{color:?}: {}", count(color));
    }
    assert!(
        count([255, 255, 255]) > pixels.len() / 2,
        "a white background"
    );

    let small = dir.path().join("small.PNG");
    ok(&[
        "plot",
        IMU,
        "-o",
        small.to_str().unwrap(),
        "--width",
        "640",
        "--height",
        "320",
        "-q",
    ]);
    assert_eq!(png_pixels(&small).0, 640);
    assert_eq!(png_pixels(&small).1, 320);
}

#[test]
fn svg_names_its_series_axes_and_title() {
    let dir = tempfile::tempdir().unwrap();
    let svg = dir.path().join("imu.svg");
    ok(&[
        "plot",
        IMU,
        "-o",
        svg.to_str().unwrap(),
        "--title",
        "demo /imu",
        "-q",
    ]);
    let text = std::fs::read_to_string(&svg).unwrap();
    let doc = roxmltree::Document::parse(&text).unwrap();
    let root = doc.root_element();
    assert_eq!(root.tag_name().name(), "svg");
    assert_eq!(root.attribute("width"), Some("1200"));
    assert_eq!(root.attribute("height"), Some("600"));
    let texts: Vec<&str> = doc
        .descendants()
        .filter(|n| n.has_tag_name("text"))
        .filter_map(|n| n.text())
        .map(str::trim)
        .collect();
    for want in [
        "demo /imu",
        "linear_acceleration.x",
        "linear_acceleration.y",
        "linear_acceleration.z",
        "log_time (UTC, 2023-11-14)",
        "22:13:20.000",
    ] {
        assert!(texts.contains(&want), "{want} not among {texts:?}");
    }
    let lines = doc
        .descendants()
        .filter(|n| n.has_tag_name("polyline"))
        .filter(|n| n.attribute("stroke") == Some("#1F77B4"))
        .count();
    assert!(lines >= 1, "the first series' line");
}

/// The smallest y of the points of the polylines drawn in `stroke`.
fn top_of_lines(svg: &str, stroke: &str) -> f64 {
    let doc = roxmltree::Document::parse(svg).unwrap();
    doc.descendants()
        .filter(|n| n.has_tag_name("polyline") && n.attribute("stroke") == Some(stroke))
        .flat_map(|n| {
            n.attribute("points")
                .unwrap()
                .split_whitespace()
                .map(|p| p.split(',').nth(1).unwrap().parse::<f64>().unwrap())
                .collect::<Vec<_>>()
        })
        .fold(f64::INFINITY, f64::min)
}

#[test]
fn a_one_row_spike_in_a_million_stays_visible() {
    let dir = tempfile::tempdir().unwrap();
    let svg = dir.path().join("spike.svg");
    let sql = "SELECT value AS i, CASE WHEN value = 654321 THEN 100.0 ELSE 0.0 END AS y \
               FROM generate_series(1, 1000000)";
    let out = ok(&["plot", sql, "-o", svg.to_str().unwrap()]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("from 1000000 rows (1000000 values;"),
        "{stderr}"
    );
    let text = std::fs::read_to_string(&svg).unwrap();
    // y = 100 is the top of the value range: near the top of a 600 px image.
    let top = top_of_lines(&text, "#1F77B4");
    assert!(top < 60.0, "the spike's top is at y = {top}");
}

#[test]
fn text_charts_have_a_panel_per_series() {
    let sql = "SELECT log_time, linear_acceleration.x AS ax, angular_velocity.z AS wz \
               FROM read_topic('tests/data/demo.mcap', '/imu')";
    let out = ok(&["plot", sql, "--width", "90", "--height", "8"]);
    let text = String::from_utf8(out.stdout).unwrap();
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(lines[0], "ax  (2000 values, -0.324 .. 0.324)");
    // Per panel: a header, 9 lines of braille (8 rows of 4 dots, both ends
    // included) with the y range at the right, the x labels, a blank line.
    assert_eq!(lines[12], "wz  (2000 values, 0.0901 .. 0.1099)");
    assert!(
        lines[1].ends_with(" 0.324") && lines[9].ends_with(" -0.324"),
        "{text}"
    );
    assert!(
        lines[10].starts_with("22:13:20.000") && lines[10].ends_with("22:13:29.995"),
        "{text}"
    );
    assert_eq!(lines.last(), Some(&"x: log_time (UTC, 2023-11-14)"));
    let braille = text
        .chars()
        .filter(|c| ('\u{2801}'..='\u{28FF}').contains(c))
        .count();
    assert!(braille > 200, "{braille} braille cells drawn");
    assert_eq!(lines.len(), 25);
}

#[test]
fn what_cannot_be_drawn_is_named() {
    let dir = tempfile::tempdir().unwrap();
    let stderr = fails(&["plot", "SELECT topic FROM 'tests/data/demo.mcap'"]);
    assert_eq!(
        stderr.trim(),
        "error: nothing to plot: the first column is the x axis and must be a timestamp, a \
         date or a number, but topic is Utf8"
    );
    let stderr = fails(&[
        "plot",
        "SELECT log_time, topic, data FROM 'tests/data/demo.mcap'",
    ]);
    assert_eq!(
        stderr.trim(),
        "error: nothing to plot: after the x column (log_time) no column is numeric: topic \
         (Utf8), data (BinaryView)"
    );
    let pdf = dir.path().join("x.pdf");
    let stderr = fails(&["plot", IMU, "-o", pdf.to_str().unwrap()]);
    assert_eq!(
        stderr.trim(),
        format!(
            "error: plot writes .png or .svg images, not '{}' (without -o it draws a text chart)",
            pdf.display()
        )
    );
    assert!(!pdf.exists());
    let stderr = fails(&["plot", "SELECT 1 AS a, 2 AS b; SELECT 3 AS a, 4 AS b"]);
    assert_eq!(
        stderr.trim(),
        "error: plot draws the result of one query; got 2 statements"
    );
    // A usage error, as clap's: exit code 2.
    let out = logsql(&["plot", "SELECT 1 AS a, 2 AS b", "--format", "csv"]);
    assert_eq!(out.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("--format does not apply to `logsql plot`"),
        "{stderr}"
    );
}

#[test]
fn a_failed_query_leaves_the_old_image() {
    let dir = tempfile::tempdir().unwrap();
    let png = dir.path().join("old.png");
    std::fs::write(&png, b"old").unwrap();
    let stderr = fails(&[
        "plot",
        "SELECT log_time, x FROM read_topic('tests/data/demo.mcap', '/no_such_topic')",
        "-o",
        png.to_str().unwrap(),
    ]);
    assert!(stderr.starts_with("error: "), "{stderr}");
    assert_eq!(std::fs::read(&png).unwrap(), b"old");
    let names: Vec<_> = std::fs::read_dir(dir.path())
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .collect();
    assert_eq!(names, ["old.png"]);
}
