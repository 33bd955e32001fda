//! Writes the seed corpus of the `points` fuzz target: a few clouds in the
//! layout of `logsql_fuzz::split_points_input` (every datatype, padding in the
//! point and the row, count 3, both byte orders, a foxglove cloud, a
//! lidar-like x/y/z/intensity/ring cloud).
//!
//! `seed_points <corpus dir>`. Called by `seed.sh`.

use std::path::Path;

/// `(name, offset, datatype, count)`, width, height, point_step, row_step, flags.
type Layout = (Vec<(&'static str, u32, u8, u32)>, u32, u32, u32, u32, u8);

fn input(layout: &Layout) -> Vec<u8> {
    let (fields, width, height, point_step, row_step, flags) = layout;
    let mut b = vec![fields.len() as u8];
    for (name, offset, datatype, count) in fields {
        b.push(name.len() as u8);
        b.extend(name.as_bytes());
        b.extend(offset.to_le_bytes());
        b.push(*datatype);
        b.extend(count.to_le_bytes());
    }
    for v in [width, height, point_step, row_step] {
        b.extend(v.to_le_bytes());
    }
    b.push(*flags);
    let len = if flags & 2 != 0 {
        width * point_step
    } else {
        row_step * height
    };
    b.extend((0..len).map(|i| (i.wrapping_mul(37) ^ 0x5a) as u8));
    b
}

fn main() {
    let Some(dir) = std::env::args().nth(1) else {
        eprintln!("usage: seed_points <corpus dir>");
        std::process::exit(2);
    };
    let every = vec![
        ("a", 0, 1, 1),
        ("b", 1, 2, 1),
        ("c", 2, 3, 1),
        ("d", 4, 4, 1),
        ("e", 6, 5, 1),
        ("f", 10, 6, 1),
        ("g", 14, 7, 1),
        ("h", 18, 8, 1),
        ("rgb", 26, 2, 3),
    ];
    let lidar = vec![
        ("x", 0, 7, 1),
        ("y", 4, 7, 1),
        ("z", 8, 7, 1),
        ("intensity", 16, 7, 1),
        ("ring", 20, 4, 1),
    ];
    let layouts: Vec<Layout> = vec![
        (every.clone(), 3, 2, 32, 100, 0),
        (every, 2, 2, 32, 64, 1),
        (lidar.clone(), 8, 1, 32, 256, 0),
        (
            lidar.iter().map(|&(n, o, _, c)| (n, o, 7, c)).collect(),
            4,
            1,
            32,
            128,
            2,
        ),
        (lidar, 2, 3, 24, 50, 1),
    ];
    std::fs::create_dir_all(&dir).unwrap_or_else(|e| panic!("{dir}: {e}"));
    for (i, layout) in layouts.iter().enumerate() {
        let path = Path::new(&dir).join(format!("seed-{i}"));
        std::fs::write(&path, input(layout)).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    }
    println!("points: {} seeds", layouts.len());
}
