//! Writes seed inputs of the `images` fuzz target into a directory: a PNG
//! and a JPEG of each pixel format, a `compressedDepth` PNG, and a small raw
//! image of every encoding (padded rows, both byte orders).
//!
//! `cargo run --release --manifest-path tests/fuzz/Cargo.toml --example seed_images -- DIR`

use logsql_fuzz::{IMAGE_ENCODINGS, ImageInput, image_input};
use logsql_media::images::codec::{encode_jpeg, encode_png};
use logsql_media::images::{PixelFormat, Pixels, RawEncoding};

fn main() {
    let dir = std::path::PathBuf::from(std::env::args().nth(1).expect("usage: seed_images DIR"));
    std::fs::create_dir_all(&dir).expect("create the corpus directory");
    let mut n = 0;
    let mut write = |name: String, bytes: Vec<u8>| {
        std::fs::write(dir.join(format!("seed_{name}")), bytes).expect("write a seed");
        n += 1;
    };
    for format in [PixelFormat::Rgb8, PixelFormat::Mono8, PixelFormat::Mono16] {
        let (w, h) = (9, 5);
        let data = (0..w * h * format.bytes_per_pixel()).map(|i| (i * 13) as u8).collect();
        let p = Pixels::new(format, w as u32, h as u32, data);
        let png = encode_png(&p).expect("png");
        write(format!("png_{}", format.name()), image_input(&ImageInput::Compressed("png", &png)));
        let jpeg = encode_jpeg(&p, 80).expect("jpeg");
        write(format!("jpeg_{}", format.name()), image_input(&ImageInput::Compressed("jpeg", &jpeg)));
        if format == PixelFormat::Mono16 {
            let mut depth = vec![0u8; 12];
            depth.extend_from_slice(&png);
            let f = "16UC1; compressedDepth png";
            write("depth".into(), image_input(&ImageInput::Compressed(f, &depth)));
        }
    }
    for (i, encoding) in IMAGE_ENCODINGS.iter().enumerate() {
        let (w, h) = (6u32, 4u32);
        let row = RawEncoding::parse(encoding)
            .ok()
            .and_then(|e| e.row_bytes(w))
            .unwrap_or(u64::from(w)) as u32;
        let step = row + 2;
        let data: Vec<u8> = (0..step * h).map(|k| (k * 29 + i as u32) as u8).collect();
        let input = ImageInput::Raw(encoding, w, h, step, i % 2 == 1, &data);
        write(format!("raw_{encoding}"), image_input(&input));
    }
    println!("images: {n} seeds");
}
