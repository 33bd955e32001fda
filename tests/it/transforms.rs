//! Coordinate frames: `transforms()`, `tf_lookup()`, `quat_to_euler()` and
//! `transform_point()` on real recordings (rosbag.js' turtlesim bag with
//! `/tf` and `/tf_static`, the ros2-adapter TurtleBot3 ROS 2 bag in
//! tests/public, the demo bag), through the engine, the CLI and the server.
//! The comparison with an independent implementation on generated trees is
//! tests/interop/transforms_interop.py.

use std::path::Path;
use std::process::{Command, Stdio};

use datafusion::arrow::array::{Array, AsArray, StructArray};
use datafusion::arrow::datatypes::{Float64Type, Int64Type};

use crate::serve::{Server, psql_available};
use crate::sql::{error, query};

fn turtles() -> Option<String> {
    logsql_fixtures::file("rosbag", "rosbagjs-example.bag").map(|p| p.display().to_string())
}

fn public(dir: &str) -> String {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/public")
        .join(dir)
        .display()
        .to_string()
}

fn f64s(s: &StructArray, name: &str) -> Vec<f64> {
    s.column_by_name(name)
        .unwrap_or_else(|| panic!("no field {name}"))
        .as_primitive::<Float64Type>()
        .values()
        .to_vec()
}

/// `(topic, parent, child, is_static, count)` of `transforms(path)`.
async fn links(path: &str) -> Vec<(String, String, String, bool, i64)> {
    let ctx = logsql::session_context();
    let sql = format!(
        "SELECT topic, parent_frame, child_frame, is_static, count(*) FROM transforms('{path}') \
         GROUP BY ALL ORDER BY 1, 2, 3"
    );
    let mut out = Vec::new();
    for b in query(&ctx, &sql).await {
        let text = |i: usize| {
            datafusion::arrow::compute::cast(
                b.column(i),
                &datafusion::arrow::datatypes::DataType::Utf8,
            )
            .unwrap()
        };
        let (t, p, c) = (text(0), text(1), text(2));
        let (t, p, c) = (
            t.as_string::<i32>(),
            p.as_string::<i32>(),
            c.as_string::<i32>(),
        );
        let (s, n) = (
            b.column(3).as_boolean(),
            b.column(4).as_primitive::<Int64Type>(),
        );
        for i in 0..b.num_rows() {
            out.push((
                t.value(i).to_string(),
                p.value(i).to_string(),
                c.value(i).to_string(),
                s.value(i),
                n.value(i),
            ));
        }
    }
    out
}

fn link(
    topic: &str,
    parent: &str,
    child: &str,
    is_static: bool,
    n: i64,
) -> (String, String, String, bool, i64) {
    (topic.into(), parent.into(), child.into(), is_static, n)
}

#[tokio::test]
async fn transforms_of_real_ros1_and_ros2_bags() {
    // ROS 2 (CDR), from a TurtleBot3 simulation: dynamic links only.
    assert_eq!(
        links(&public("ros2-adapter-turtlebot3-tf")).await,
        vec![
            link("/tf", "base_link", "wheel_left_link", false, 431),
            link("/tf", "base_link", "wheel_right_link", false, 431),
            link("/tf", "odom", "base_footprint", false, 652),
        ]
    );
    let demo = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/data/demo.bag");
    assert_eq!(
        links(demo).await,
        vec![
            link("/tf", "map", "odom", false, 100),
            link("/tf", "odom", "base_link", false, 100),
            link("/tf_static", "base_link", "camera_link", true, 1),
        ]
    );
    // A recording without transforms: no rows, the same columns.
    let ctx = logsql::session_context();
    let robot = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/data/robot.mcap");
    let b = query(&ctx, &format!("SELECT * FROM transforms('{robot}')")).await;
    assert_eq!(b.iter().map(|b| b.num_rows()).sum::<usize>(), 0);
    let Some(bag) = turtles() else { return };
    // ROS1: tf/tfMessage on /tf, tf2_msgs/TFMessage on /tf_static (latched).
    assert_eq!(
        links(&bag).await,
        vec![
            link("/tf", "world", "turtle1", false, 1344),
            link("/tf", "world", "turtle2", false, 1344),
            link("/tf_static", "turtle1", "carrot", true, 1),
        ]
    );
    let b = query(
        &ctx,
        &format!(
            "SELECT translation, rotation, CAST(stamp AS BIGINT) FROM transforms('{bag}') WHERE is_static"
        ),
    )
    .await;
    let (t, r) = (b[0].column(0).as_struct(), b[0].column(1).as_struct());
    assert_eq!(
        (f64s(t, "x"), f64s(t, "y"), f64s(r, "w")),
        (vec![1.0], vec![0.0], vec![1.0])
    );
    assert_eq!(
        b[0].column(2).as_primitive::<Int64Type>().value(0),
        1_396_293_887_807_552_910
    );
}

#[tokio::test]
async fn lookups_on_the_turtles_give_each_transform_at_its_stamp() {
    let Some(bag) = turtles() else { return };
    let ctx = logsql::session_context();
    // At each stamp of world -> turtle1: the transform itself, the carrot
    // one metre ahead of the turtle, and the turtle's heading.
    let sql = format!(
        "SELECT translation, rotation, tf_lookup(file, 'world', 'turtle1', stamp) AS pose, \
         tf_lookup(file, '/world', 'carrot', stamp) AS carrot, \
         transform_point(tf_lookup(file, 'world', 'turtle1', stamp), 1.0, 0.0, 0.0) AS ahead, \
         quat_to_euler(rotation) AS rpy \
         FROM transforms('{bag}') WHERE child_frame = 'turtle1'"
    );
    let mut rows = 0;
    for b in query(&ctx, &sql).await {
        let (t, r) = (b.column(0).as_struct(), b.column(1).as_struct());
        let (pose, carrot) = (b.column(2).as_struct(), b.column(3).as_struct());
        let (ahead, rpy) = (b.column(4).as_struct(), b.column(5).as_struct());
        assert_eq!(pose.null_count(), 0);
        let (tx, ty, rz, rw) = (f64s(t, "x"), f64s(t, "y"), f64s(r, "z"), f64s(r, "w"));
        let (px, py, qz, qw) = (
            f64s(pose, "x"),
            f64s(pose, "y"),
            f64s(pose, "qz"),
            f64s(pose, "qw"),
        );
        let (cx, cy, ax, ay) = (
            f64s(carrot, "x"),
            f64s(carrot, "y"),
            f64s(ahead, "x"),
            f64s(ahead, "y"),
        );
        let yaw = f64s(rpy, "yaw");
        for i in 0..b.num_rows() {
            // Some stamps repeat in this bag; the first transform of a stamp holds.
            let norm = (rz[i] * rz[i] + rw[i] * rw[i]).sqrt();
            if (px[i] - tx[i]).abs() > 1e-12 {
                continue;
            }
            assert!((py[i] - ty[i]).abs() < 1e-12);
            assert!((qz[i] - rz[i] / norm).abs() < 1e-12 && (qw[i] - rw[i] / norm).abs() < 1e-12);
            let heading = 2.0 * rz[i].atan2(rw[i]);
            let (ex, ey) = (tx[i] + heading.cos(), ty[i] + heading.sin());
            assert!(
                (cx[i] - ex).abs() < 1e-9 && (cy[i] - ey).abs() < 1e-9,
                "carrot {i}"
            );
            assert!(
                (ax[i] - ex).abs() < 1e-9 && (ay[i] - ey).abs() < 1e-9,
                "ahead {i}"
            );
            let d = (yaw[i] - heading).rem_euclid(std::f64::consts::TAU);
            assert!(
                d < 1e-9 || (std::f64::consts::TAU - d) < 1e-9,
                "yaw {i}: {} vs {heading}",
                yaw[i]
            );
            rows += 1;
        }
    }
    assert!(rows > 1300, "{rows}");
    // turtle2 seen from the carrot: through world, both turtles interpolated.
    let sql = format!(
        "SELECT count(*), count(tf_lookup(file, 'carrot', 'turtle2', log_time)) \
         FROM read_topic('{bag}', '/turtle2/pose')"
    );
    let b = query(&ctx, &sql).await;
    let (all, found) = (
        b[0].column(0).as_primitive::<Int64Type>().value(0),
        b[0].column(1).as_primitive::<Int64Type>().value(0),
    );
    assert_eq!(all, 1344);
    // The first and last poses come before / after the transforms' stamps.
    assert!(found >= 1340 && found < all, "{found}");
}

#[tokio::test]
async fn missing_links_are_null_or_a_strict_error() {
    let demo = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/data/demo.bag");
    let ctx = logsql::session_context();
    let one = |target: &str, source: &str, time: &str, extra: &str| {
        format!("SELECT tf_lookup('{demo}', '{target}', '{source}', {time}{extra}) IS NULL")
    };
    let null = |sql: String| {
        let ctx = ctx.clone();
        async move { query(&ctx, &sql).await[0].column(0).as_boolean().value(0) }
    };
    let inside = "TIMESTAMP '2023-11-14T22:13:21Z'";
    assert!(!null(one("map", "camera_link", inside, "")).await);
    assert!(!null(one("camera_link", "map", inside, "")).await);
    assert!(
        null(one(
            "map",
            "camera_link",
            "TIMESTAMP '2023-11-14T22:13:25Z'",
            ""
        ))
        .await
    );
    assert!(null(one("map", "no_frame", inside, "")).await);
    assert!(null(one("no_frame", "no_frame", inside, "")).await);
    // Static links hold at every time; a frame in itself is the identity.
    assert!(!null(one("base_link", "camera_link", "0", "")).await);
    assert!(!null(one("map", "map", "0", "")).await);
    let err = error(
        &ctx,
        &one(
            "map",
            "camera_link",
            "TIMESTAMP '2023-11-14T22:13:25Z'",
            ", 'strict'",
        ),
    )
    .await;
    assert!(
        err.contains("\"camera_link\" in \"map\" at 2023-11-14T22:13:25")
            && err.contains("the link \"odom\" -> \"base_link\" has transforms from")
            && err.contains("is outside them"),
        "{err}"
    );
    let err = error(&ctx, &one("map", "nowhere", inside, ", 'strict'")).await;
    assert!(
        err.contains("frame \"nowhere\" does not appear in any transform"),
        "{err}"
    );
    let err = error(&ctx, &one("map", "odom", inside, ", 'loose'")).await;
    assert!(err.contains("'strict' or 'null'"), "{err}");
    let err = error(&ctx, &format!("SELECT tf_lookup('{demo}', 'map', 'odom')")).await;
    assert!(
        err.contains("tf_lookup(file, target_frame, source_frame, time"),
        "{err}"
    );
    let err = error(&ctx, "SELECT tf_lookup('x.bag', 'map', 'odom', 1.5)").await;
    assert!(err.contains("a timestamp or nanoseconds"), "{err}");
    let err = error(&ctx, "SELECT tf_lookup('/no/such.bag', 'map', 'odom', 0)").await;
    assert!(
        err.contains("tf_lookup: reading the transforms of /no/such.bag"),
        "{err}"
    );
    let err = error(&ctx, "SELECT quat_to_euler(1.0)").await;
    assert!(
        err.contains("quat_to_euler(rotation) or quat_to_euler(x, y, z, w)"),
        "{err}"
    );
    let err = error(
        &ctx,
        "SELECT transform_point(named_struct('a', 1), 1, 2, 3)",
    )
    .await;
    assert!(err.contains("is not a pose"), "{err}");
}

#[tokio::test]
async fn pose_functions_take_every_pose_shape() {
    let ctx = logsql::session_context();
    let half = std::f64::consts::FRAC_1_SQRT_2;
    // A quarter turn about z and a shift of (1, 2, 3), in the three shapes.
    let shapes = [
        format!(
            "named_struct('x', 1.0, 'y', 2.0, 'z', 3.0, 'qx', 0.0, 'qy', 0.0, 'qz', {half}, 'qw', {half})"
        ),
        format!(
            "named_struct('position', named_struct('x', 1.0, 'y', 2.0, 'z', 3.0), \
             'orientation', named_struct('x', 0.0, 'y', 0.0, 'z', {half}, 'w', {half}))"
        ),
        "named_struct('translation', named_struct('x', 1, 'y', 2, 'z', 3), \
         'rotation', named_struct('x', 0, 'y', 0, 'z', 1, 'w', 1))"
            .to_string(),
    ];
    for pose in &shapes {
        let sql = format!(
            "SELECT transform_point({pose}, 1.0, 0.0, 0.0) AS p, \
             transform_point({pose}, named_struct('x', 0, 'y', 1, 'z', 0)) AS q, quat_to_euler({pose}) AS e"
        );
        let b = query(&ctx, &sql).await;
        let (p, q, e) = (
            b[0].column(0).as_struct(),
            b[0].column(1).as_struct(),
            b[0].column(2).as_struct(),
        );
        let close = |a: f64, b: f64| (a - b).abs() < 1e-12;
        assert!(
            close(f64s(p, "x")[0], 1.0)
                && close(f64s(p, "y")[0], 3.0)
                && close(f64s(p, "z")[0], 3.0),
            "{pose}"
        );
        assert!(
            close(f64s(q, "x")[0], 0.0) && close(f64s(q, "y")[0], 2.0),
            "{pose}"
        );
        assert!(
            close(f64s(e, "yaw")[0], std::f64::consts::FRAC_PI_2) && close(f64s(e, "roll")[0], 0.0)
        );
    }
    let b = query(&ctx, "SELECT quat_to_euler(0, 0, 0, 0) IS NULL, quat_to_euler(NULL, 0, 0, 1) IS NULL, quat_to_euler(1, 0, 0, 0)").await;
    assert!(b[0].column(0).as_boolean().value(0) && b[0].column(1).as_boolean().value(0));
    let roll = f64s(b[0].column(2).as_struct(), "roll")[0];
    assert!((roll - std::f64::consts::PI).abs() < 1e-12, "{roll}");
}

#[tokio::test]
async fn a_changed_recording_is_read_again() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("run.bag");
    let data = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/data");
    std::fs::copy(format!("{data}/demo.bag"), &path).unwrap();
    let ctx = logsql::session_context();
    let sql = format!(
        "SELECT tf_lookup('{}', 'odom', 'base_link', 1700000001000000000) IS NULL",
        path.display()
    );
    assert!(!query(&ctx, &sql).await[0].column(0).as_boolean().value(0));
    // Another recording at that path (another size): its transforms.
    std::fs::copy(format!("{data}/demo.mcap"), &path).unwrap();
    let sql = format!(
        "SELECT tf_lookup('{}', 'map', 'odom', 1700000001000000000) IS NULL",
        path.display()
    );
    assert!(query(&ctx, &sql).await[0].column(0).as_boolean().value(0));
}

#[test]
fn lookups_through_the_cli_in_json() {
    let out = Command::new(env!("CARGO_BIN_EXE_logsql"))
        .args([
            "--format",
            "json",
            "SELECT CAST(log_time AS BIGINT) AS t, tf_lookup(file, 'odom', 'base_link', log_time) AS pose \
             FROM read_images('tests/data/demo.mcap', '/camera/compressed') ORDER BY t LIMIT 2",
        ])
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .stdin(Stdio::null())
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let text = String::from_utf8(out.stdout).unwrap();
    assert!(text.starts_with("[{\"t\":"), "{text}");
    for field in ["\"x\":", "\"qx\":", "\"qw\":"] {
        assert!(text.contains(field), "{text}");
    }
    // CSV holds no struct: the error says to select fields.
    let out = Command::new(env!("CARGO_BIN_EXE_logsql"))
        .args([
            "--format",
            "csv",
            "SELECT tf_lookup(file, 'odom', 'base_link', log_time)['x'] AS x \
             FROM read_images('tests/data/demo.mcap', '/camera/compressed') ORDER BY log_time LIMIT 1 OFFSET 1",
        ])
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .stdin(Stdio::null())
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let text = String::from_utf8(out.stdout).unwrap();
    let x: f64 = text.lines().nth(1).unwrap().parse().unwrap();
    assert!((x - 2.0).abs() < 0.1, "{text}");
    // Where there is no pose, its fields are NULL too (an empty CSV field).
    let out = Command::new(env!("CARGO_BIN_EXE_logsql"))
        .args([
            "--format",
            "csv",
            "SELECT tf_lookup(file, 'odom', 'base_link', 0)['x'] AS x FROM read_images('tests/data/demo.mcap', '/camera/compressed') LIMIT 1",
        ])
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .stdin(Stdio::null())
        .output()
        .unwrap();
    assert_eq!(String::from_utf8(out.stdout).unwrap(), "x\n\"\"\n");
}

#[test]
fn the_server_looks_up_inside_its_roots_only() {
    if !psql_available() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let data = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/data");
    std::fs::copy(format!("{data}/demo.bag"), dir.path().join("demo.bag")).unwrap();
    let server = Server::start(&["--root", dir.path().to_str().unwrap()]);
    let inside = dir.path().join("demo.bag").display().to_string();
    let got = server.ok(&format!(
        "SELECT count(*), count(tf_lookup(file, 'map', 'camera_link', log_time)) FROM read_topic('{inside}', '/imu')"
    ));
    let counts: Vec<i64> = got.trim().split(',').map(|v| v.parse().unwrap()).collect();
    assert!(counts[0] == 400 && counts[1] > 390, "{got}");
    let err = server.err(&format!(
        "SELECT tf_lookup('{data}/demo.bag', 'map', 'camera_link', 0)"
    ));
    assert!(err.contains("outside the data roots"), "{err}");
    let err = server.err(&format!("SELECT * FROM transforms('{data}/demo.bag')"));
    assert!(err.contains("outside the data roots"), "{err}");
    // And it goes on answering.
    assert_eq!(server.ok("SELECT 1"), "1\n");
}

#[tokio::test]
async fn a_query_outliving_its_context_still_looks_up() {
    let demo = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/data/demo.bag");
    let ctx = logsql::session_context();
    let df = ctx
        .sql(&format!(
            "SELECT count(tf_lookup(file, 'map', 'camera_link', log_time)) FROM read_topic('{demo}', '/imu')"
        ))
        .await
        .unwrap();
    drop(ctx);
    let b = df.collect().await.unwrap();
    assert!(b[0].column(0).as_primitive::<Int64Type>().value(0) > 390);
}
