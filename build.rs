//! Compiles the format definitions in `proto/` (Apollo Cyber RT record
//! sections, BDDF index blocks) into Rust with prost, using protox so that no
//! system `protoc` is needed. Each package becomes `$OUT_DIR/<package>.rs`.

use std::path::{Path, PathBuf};

fn main() {
    let root = Path::new("proto");
    println!("cargo:rerun-if-changed=proto");
    let mut files = Vec::new();
    collect(root, &mut files);
    files.sort();
    if files.is_empty() {
        return;
    }
    let fds = match protox::compile(&files, [root]) {
        Ok(fds) => fds,
        Err(e) => panic!("compiling proto/: {e:?}"),
    };
    let mut config = prost_build::Config::new();
    config.bytes(["."]);
    if let Err(e) = config.compile_fds(fds) {
        panic!("generating Rust from proto/: {e}");
    }
}

/// Every `.proto` file under `dir`, recursively.
fn collect(dir: &Path, out: &mut Vec<PathBuf>) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for entry in entries.flatten() {
        let path = entry.path();
        if path.is_dir() {
            collect(&path, out);
        } else if path.extension().is_some_and(|e| e == "proto") {
            println!("cargo:rerun-if-changed={}", path.display());
            out.push(path);
        }
    }
}
