//! Compiles the repository's `proto/logsql` (the messages of the distributed
//! plan codec, `src/distributed/codec.rs`) into Rust with prost, using protox
//! so that no system `protoc` is needed: `$OUT_DIR/logsql.scan.rs`.

use std::path::{Path, PathBuf};

fn main() {
    let manifest = std::env::var_os("CARGO_MANIFEST_DIR").expect("cargo sets CARGO_MANIFEST_DIR");
    let root = Path::new(&manifest).join("../../proto");
    compile(&root, &["logsql"]);
}

/// Compiles every `.proto` file under the folders `dirs` of `root` (imports
/// resolve from `root`).
fn compile(root: &Path, dirs: &[&str]) {
    let mut files = Vec::new();
    for dir in dirs {
        let dir = root.join(dir);
        println!("cargo:rerun-if-changed={}", dir.display());
        collect(&dir, &mut files);
    }
    files.sort();
    assert!(
        !files.is_empty(),
        "no .proto files under {}",
        root.display()
    );
    let fds = match protox::compile(&files, [root]) {
        Ok(fds) => fds,
        Err(e) => panic!("compiling {}: {e:?}", root.display()),
    };
    let mut config = prost_build::Config::new();
    config.bytes(["."]);
    if let Err(e) = config.compile_fds(fds) {
        panic!("generating Rust from {}: {e}", root.display());
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
