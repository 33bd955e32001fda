//! Point clouds: `read_points` over the real lidar bag of the fixtures and
//! over generated `sensor_msgs/PointCloud2` recordings (row padding,
//! big-endian, every datatype, count > 1, NaN, clouds that do not match their
//! header), through SQL and the `logsql` binary, and `export --as pcd|ply`.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

use crate::fixtures;

/// The ROS1 definition of `sensor_msgs/PointCloud2` with its dependencies,
/// as an MCAP `ros1msg` schema holds it.
const POINTCLOUD2: &str = "std_msgs/Header header
uint32 height
uint32 width
sensor_msgs/PointField[] fields
bool is_bigendian
uint32 point_step
uint32 row_step
uint8[] data
bool is_dense
================================================================================
MSG: std_msgs/Header
uint32 seq
time stamp
string frame_id
================================================================================
MSG: sensor_msgs/PointField
uint8 INT8    = 1
uint8 UINT8   = 2
uint8 INT16   = 3
uint8 UINT16  = 4
uint8 INT32   = 5
uint8 UINT32  = 6
uint8 FLOAT32 = 7
uint8 FLOAT64 = 8
string name
uint32 offset
uint8  datatype
uint32 count
";

/// One generated cloud: its fields (name, offset, datatype, count) and
/// geometry; `data` as the message carries it.
pub struct Cloud {
    pub fields: Vec<(&'static str, u32, u8, u32)>,
    pub width: u32,
    pub height: u32,
    pub point_step: u32,
    pub row_step: u32,
    pub big_endian: bool,
    pub data: Vec<u8>,
}

impl Cloud {
    /// The ROS1 serialization of the cloud as a `sensor_msgs/PointCloud2`.
    fn ros1(&self, seq: u32) -> Vec<u8> {
        let mut b = Vec::new();
        let string = |b: &mut Vec<u8>, s: &str| {
            b.extend((s.len() as u32).to_le_bytes());
            b.extend(s.as_bytes());
        };
        b.extend(seq.to_le_bytes());
        b.extend(7u32.to_le_bytes());
        b.extend(0u32.to_le_bytes());
        string(&mut b, "lidar");
        b.extend(self.height.to_le_bytes());
        b.extend(self.width.to_le_bytes());
        b.extend((self.fields.len() as u32).to_le_bytes());
        for (name, offset, datatype, count) in &self.fields {
            string(&mut b, name);
            b.extend(offset.to_le_bytes());
            b.push(*datatype);
            b.extend(count.to_le_bytes());
        }
        b.push(u8::from(self.big_endian));
        b.extend(self.point_step.to_le_bytes());
        b.extend(self.row_step.to_le_bytes());
        b.extend((self.data.len() as u32).to_le_bytes());
        b.extend(&self.data);
        b.push(1);
        b
    }
}

/// Log time of the `i`-th generated cloud.
fn time(i: usize) -> u64 {
    1_700_000_000_000_000_000 + i as u64 * 100_000_000
}

/// An MCAP file at `path` holding `clouds` on `/points` (ros1msg).
fn write_clouds(path: &Path, clouds: &[Cloud]) -> PathBuf {
    let mut w = mcap::Writer::new(std::io::BufWriter::new(
        std::fs::File::create(path).unwrap(),
    ))
    .unwrap();
    let s = w
        .add_schema("sensor_msgs/PointCloud2", "ros1msg", POINTCLOUD2.as_bytes())
        .unwrap();
    let c = w
        .add_channel(s, "/points", "ros1", &BTreeMap::new())
        .unwrap();
    for (i, cloud) in clouds.iter().enumerate() {
        let t = time(i);
        w.write_to_known_channel(
            &mcap::records::MessageHeader {
                channel_id: c,
                sequence: i as u32,
                log_time: t,
                publish_time: t,
            },
            &cloud.ros1(i as u32),
        )
        .unwrap();
    }
    w.finish().unwrap();
    path.to_path_buf()
}

/// Two rows of two 12-byte points in 26-byte rows (two bytes of row
/// padding), two padding bytes inside each point: `i8` INT8, `u16` UINT16,
/// `rgb` UINT8 x3, `f` FLOAT32 (NaN in the last point); big- or
/// little-endian.
fn mixed(big: bool) -> Cloud {
    let mut data = Vec::new();
    for p in 0..4i32 {
        data.push((-p - 1) as i8 as u8);
        data.push(0xAA); // padding
        let u = 65_000u16 + p as u16;
        let f = if p == 3 { f32::NAN } else { p as f32 * 1.25 };
        if big {
            data.extend(u.to_be_bytes());
        } else {
            data.extend(u.to_le_bytes());
        }
        data.extend([p as u8, 100 + p as u8, 200 + p as u8]);
        data.push(0xBB); // padding
        if big {
            data.extend(f.to_be_bytes());
        } else {
            data.extend(f.to_le_bytes());
        }
        if p % 2 == 1 {
            data.extend([0xCC, 0xCC]); // row padding
        }
    }
    Cloud {
        fields: vec![
            ("i8", 0, 1, 1),
            ("u16", 2, 4, 1),
            ("rgb", 4, 2, 3),
            ("f", 8, 7, 1),
        ],
        width: 2,
        height: 2,
        point_step: 12,
        row_step: 26,
        big_endian: big,
        data,
    }
}

fn logsql(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_logsql"))
        .args(args)
        .stdin(Stdio::null())
        .output()
        .expect("run logsql")
}

/// Runs `sql` with the `logsql` binary as CSV, returning its lines.
fn csv(sql: &str, extra: &[&str]) -> Vec<String> {
    let mut args = vec!["-q", "--format", "csv"];
    args.extend(extra);
    args.push(sql);
    let out = logsql(&args);
    assert!(
        out.status.success(),
        "{sql}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout)
        .unwrap()
        .lines()
        .map(str::to_string)
        .collect()
}

fn tmp() -> tempfile::TempDir {
    tempfile::Builder::new()
        .prefix("logsql-points-")
        .tempdir()
        .unwrap()
}

#[test]
fn the_lidar_bag_reads_as_clouds_and_points() {
    let Some(bag) = fixtures::file("rosbag", "embag-test.bag") else {
        return;
    };
    let f = bag.display().to_string();
    let rows = csv(
        &format!(
            "SELECT CAST(log_time AS BIGINT) AS t, frame_id, point_count, cardinality(points) AS n \
             FROM read_points('{f}', '/luminar_pointcloud') ORDER BY log_time"
        ),
        &[],
    );
    assert_eq!(
        rows,
        [
            "t,frame_id,point_count,n",
            "1604515190231374463,luminar_lidar,35707,35707",
            "1604515190293286498,luminar_lidar,36055,36055",
            "1604515190394020747,luminar_lidar,36267,36267",
            "1604515190494734118,luminar_lidar,36457,36457",
            "1604515190592366241,luminar_lidar,36336,36336",
        ]
    );
    // The first point of the first cloud: x, y, z are the first 12 of the
    // data bytes the fixture's manifest records (rosbags), little-endian
    // FLOAT32; bytes 12..16 are padding, intensity is at offset 16.
    let rows = csv(
        &format!(
            "SELECT p.x, p.y, p.z FROM (SELECT unnest(points) AS p \
             FROM read_points('{f}', '/luminar_pointcloud') \
             WHERE log_time < '2020-11-04T18:39:50.25Z') LIMIT 1"
        ),
        &[],
    );
    let expected = [
        f32::from_le_bytes([77, 79, 25, 66]),
        f32::from_le_bytes([85, 72, 37, 66]),
        f32::from_le_bytes([26, 141, 42, 64]),
    ];
    let got: Vec<f32> = rows[1].split(',').map(|v| v.parse().unwrap()).collect();
    assert_eq!(got, expected);
    // UNNEST: one row per point, and the time filter reaches the scan.
    let rows = csv(
        &format!(
            "SELECT count(*) AS n FROM (SELECT unnest(points) FROM read_points('{f}', '/luminar_pointcloud') \
             WHERE log_time >= '2020-11-04T18:39:50.3Z')"
        ),
        &[],
    );
    assert_eq!(rows[1], (36267 + 36457 + 36336).to_string());
    // The time filter is pushed into read_topic's scan (chunk pruning).
    let plan = csv(
        &format!(
            "EXPLAIN SELECT count(*) FROM read_points('{f}', '/luminar_pointcloud') \
             WHERE log_time >= '2020-11-04T18:39:50.3Z'"
        ),
        &[],
    )
    .join("\n");
    assert!(
        plan.contains("file_type=read_topic, predicate=log_time@0 >= 1604515190300000000"),
        "{plan}"
    );
}

#[test]
fn every_layout_detail_reads_exactly() {
    let dir = tmp();
    let f = write_clouds(&dir.path().join("mixed.mcap"), &[mixed(false), mixed(true)]);
    let f = f.display().to_string();
    // unnest(unnest(points)): one row per point, one column per field.
    let rows = csv(
        &format!(
            "SELECT CAST(t AS BIGINT) AS t, p.i8, p.u16, p.rgb[1] AS r, p.rgb[2] AS g, p.rgb[3] AS b, p.f FROM \
             (SELECT log_time AS t, unnest(points) AS p FROM read_points('{f}', '/points')) \
             ORDER BY t"
        ),
        &[],
    );
    let one = |t: u64| {
        vec![
            format!("{t},-1,65000,0,100,200,0.0"),
            format!("{t},-2,65001,1,101,201,1.25"),
            format!("{t},-3,65002,2,102,202,2.5"),
            format!("{t},-4,65003,3,103,203,NaN"),
        ]
    };
    let mut expected = vec!["t,p[i8],p[u16],r,g,b,p[f]".to_string()];
    expected.extend(one(time(0)));
    expected.extend(one(time(1)));
    assert_eq!(rows, expected);
    let rows = csv(
        &format!("SELECT arrow_typeof(points) AS t FROM read_points('{f}', '/points') LIMIT 1"),
        &[],
    );
    let t = rows[1].replace("\"\"", "\"");
    assert!(
        t.contains("\"i8\": non-null Int8")
            && t.contains("\"u16\": non-null UInt16")
            && t.contains("\"rgb\": non-null FixedSizeList(3 x non-null UInt8)")
            && t.contains("\"f\": non-null Float32"),
        "{t}"
    );
}

#[test]
fn every_datatype_reads_at_its_offset() {
    let dir = tmp();
    let mut data = Vec::new();
    for p in 0..3i64 {
        data.push((-(p as i8) - 100) as u8);
        data.push(250 + p as u8);
        data.extend((-30_000 + p as i16).to_le_bytes());
        data.extend((65_500 + p as u16).to_le_bytes());
        data.extend((-2_000_000_000 - p as i32).to_le_bytes());
        data.extend((4_000_000_000 + p as u32).to_le_bytes());
        data.extend((-1.5e-3 * (p + 1) as f32).to_le_bytes());
        data.extend((1e300 * (p + 1) as f64).to_le_bytes());
    }
    let cloud = Cloud {
        fields: vec![
            ("a", 0, 1, 1),
            ("b", 1, 2, 1),
            ("c", 2, 3, 1),
            ("d", 4, 4, 1),
            ("e", 6, 5, 1),
            ("g", 10, 6, 1),
            ("h", 14, 7, 1),
            ("k", 18, 8, 1),
        ],
        width: 3,
        height: 1,
        point_step: 26,
        row_step: 78,
        big_endian: false,
        data,
    };
    let f = write_clouds(&dir.path().join("types.mcap"), &[cloud]);
    let rows = csv(
        &format!(
            "SELECT p.a, p.b, p.c, p.d, p.e, p.g, p.h, p.k FROM \
             (SELECT unnest(points) AS p FROM read_points('{}', '/points'))",
            f.display()
        ),
        &[],
    );
    assert_eq!(
        rows[1..],
        [
            "-100,250,-30000,65500,-2000000000,4000000000,-0.0015,1e300",
            "-101,251,-29999,65501,-2000000001,4000000001,-0.003,2e300",
            "-102,252,-29998,65502,-2000000002,4000000002,-0.0045,3e300",
        ]
    );
}

#[test]
fn bad_clouds_name_file_topic_and_time_or_become_null_under_warn() {
    let dir = tmp();
    let mut past = mixed(false);
    past.fields[3].1 = 10; // f at 10..14, past point_step 12
    let mut short = mixed(false);
    short.data.truncate(40);
    let mut other = mixed(false);
    other.fields[0].2 = 2; // i8 becomes UINT8
    let f = write_clouds(
        &dir.path().join("bad.mcap"),
        &[mixed(false), past, short, other],
    );
    let f = f.display().to_string();
    let sql = format!(
        "SELECT cardinality(points) AS n FROM read_points('{f}', '/points') ORDER BY log_time"
    );
    let out = logsql(&["-q", &sql]);
    assert_eq!(out.status.code(), Some(1));
    let e = String::from_utf8_lossy(&out.stderr);
    assert!(
        e.contains(&format!(
            "{f}: topic \"/points\": the point cloud logged at {} ns: point field \"f\" (FLOAT32 at offset 10) ends at byte 14, past point_step 12",
            time(1)
        )),
        "{e}"
    );
    let out = logsql(&["-q", "--on-error", "warn", "--format", "csv", &sql]);
    assert!(out.status.success());
    assert_eq!(
        String::from_utf8_lossy(&out.stdout),
        "n\n4\n\"\"\n\"\"\n\"\"\n"
    );
    let e = String::from_utf8_lossy(&out.stderr);
    for (i, cause) in [
        (1, "past point_step 12"),
        (2, "data holds 40 bytes but row_step 26 x height 2 needs 52"),
        (
            3,
            "the cloud's fields (i8 UINT8, u16 UINT16, rgb UINT8 x3, f FLOAT32) differ from the column's (i8 INT8, u16 UINT16, rgb UINT8 x3, f FLOAT32)",
        ),
    ] {
        assert!(
            e.contains(&format!("the point cloud logged at {} ns: ", time(i))) && e.contains(cause),
            "{cause}: {e}"
        );
    }
}

#[test]
fn a_topic_that_is_not_a_point_cloud_is_refused() {
    let Some(bag) = fixtures::file("rosbag", "embag-test.bag") else {
        return;
    };
    let out = logsql(&[
        "-q",
        &format!(
            "SELECT * FROM read_points('{}', '/base_scan')",
            bag.display()
        ),
    ]);
    assert_eq!(out.status.code(), Some(1));
    let e = String::from_utf8_lossy(&out.stderr);
    assert!(
        e.contains("topic \"/base_scan\" does not hold point clouds"),
        "{e}"
    );
}

/// Splits a written file at the end of its header line `last`.
fn split_header<'a>(bytes: &'a [u8], last: &str) -> (String, &'a [u8]) {
    let text = String::from_utf8_lossy(bytes);
    let end = text.find(last).expect("header end") + last.len();
    (text[..end].to_string(), &bytes[end..])
}

#[test]
fn export_writes_one_pcd_or_ply_file_per_cloud() {
    let dir = tmp();
    let f = write_clouds(&dir.path().join("mixed.mcap"), &[mixed(false), mixed(true)]);
    let f = f.display().to_string();
    // The packed little-endian values of the four points, as both formats
    // hold them (PLY with a count byte before the rgb list).
    let packed = |ply: bool| {
        let mut b = Vec::new();
        for p in 0..4u8 {
            b.push((-(p as i8) - 1) as u8);
            b.extend((65_000u16 + u16::from(p)).to_le_bytes());
            if ply {
                b.push(3);
            }
            b.extend([p, 100 + p, 200 + p]);
            let v = if p == 3 {
                f32::NAN
            } else {
                f32::from(p) * 1.25
            };
            b.extend(v.to_le_bytes());
        }
        b
    };
    for (format, last) in [("pcd", "DATA binary\n"), ("ply", "end_header\n")] {
        let out_dir = dir.path().join(format);
        let out = logsql(&[
            "export",
            &f,
            out_dir.to_str().unwrap(),
            "--topic",
            "/points",
            "--as",
            format,
        ]);
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        assert!(
            String::from_utf8_lossy(&out.stdout).starts_with(&format!(
                "exported 2 clouds (8 points) to {}",
                out_dir.display()
            )),
            "{}",
            String::from_utf8_lossy(&out.stdout)
        );
        let mut names: Vec<String> = std::fs::read_dir(&out_dir)
            .unwrap()
            .map(|e| e.unwrap().file_name().into_string().unwrap())
            .collect();
        names.sort();
        assert_eq!(
            names,
            [
                format!("{}.{format}", time(0)),
                format!("{}.{format}", time(1))
            ]
        );
        for name in &names {
            let bytes = std::fs::read(out_dir.join(name)).unwrap();
            let (header, body) = split_header(&bytes, last);
            if format == "pcd" {
                assert!(
                    header.contains(
                        "VERSION .7\nFIELDS i8 u16 rgb f\nSIZE 1 2 1 4\nTYPE I U U F\nCOUNT 1 1 3 1\nWIDTH 4\nHEIGHT 1\n"
                    ) && header.contains("\nPOINTS 4"),
                    "{header}"
                );
            } else {
                assert_eq!(
                    header,
                    "ply\nformat binary_little_endian 1.0\nelement vertex 4\nproperty char i8\n\
                     property ushort u16\nproperty list uchar uchar rgb\nproperty float f\nend_header\n"
                );
            }
            // NaN compares by bits: the same bits are written back.
            assert_eq!(body, packed(format == "ply").as_slice(), "{name}");
        }
    }
    let out = logsql(&[
        "export",
        &f,
        dir.path().join("x").to_str().unwrap(),
        "--as",
        "pcd",
    ]);
    assert_eq!(out.status.code(), Some(1));
    assert_eq!(
        String::from_utf8_lossy(&out.stderr),
        "error: --as pcd writes one topic's messages: give exactly one --topic\n"
    );
}

#[test]
fn the_lidar_bag_exports_to_pcd_with_its_values() {
    let Some(bag) = fixtures::file("rosbag", "embag-test.bag") else {
        return;
    };
    let dir = tmp();
    let out = logsql(&[
        "export",
        bag.to_str().unwrap(),
        dir.path().to_str().unwrap(),
        "--topic",
        "/luminar_pointcloud",
        "--as",
        "pcd",
        "--end",
        "1604515190.25",
    ]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let bytes = std::fs::read(dir.path().join("1604515190231374463.pcd")).unwrap();
    let (header, body) = split_header(&bytes, "DATA binary\n");
    assert!(
        header.contains("FIELDS x y z intensity time_sec time_nsec laser_id\nSIZE 4 4 4 4 4 4 2\nTYPE F F F F U U U\n")
            && header.contains("WIDTH 35707\n"),
        "{header}"
    );
    // 26 bytes a point (the 32-byte point_step less its padding); the first
    // point's x, y, z are the fixture's first data bytes.
    assert_eq!(body.len(), 35707 * 26);
    assert_eq!(
        &body[..12],
        &[77, 79, 25, 66, 85, 72, 37, 66, 26, 141, 42, 64]
    );
    assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 1);
}

#[test]
fn points_past_the_value_cap_name_the_cloud_and_the_setting() {
    let Some(bag) = fixtures::file("rosbag", "embag-test.bag") else {
        return;
    };
    let sql = format!(
        "SELECT cardinality(points) AS n FROM read_points('{}', '/luminar_pointcloud')",
        bag.display()
    );
    let out = logsql(&["-c", "SET logsql.max_value_bytes = 100000", &sql]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(
        err.contains("/luminar_pointcloud")
            && err.contains("read_points' points")
            && err.contains("logsql.max_value_bytes"),
        "{err}"
    );
    // Under logsql.on_error = 'warn' such a cloud is a NULL points value.
    let missing = format!(
        "SELECT points IS NULL AS missing FROM read_points('{}', '/luminar_pointcloud')",
        bag.display()
    );
    let warn = [
        "-c",
        "SET logsql.max_value_bytes = 100000",
        "--on-error",
        "warn",
    ];
    let rows = csv(&missing, &warn);
    assert!(
        rows.len() > 1 && rows[0] == "missing" && rows[1..].iter().all(|r| r == "true"),
        "{rows:?}"
    );
}
