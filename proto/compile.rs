//! Compiling the repository's `.proto` files with prost and protox (no
//! system `protoc` needed), shared by the build scripts of the crates that use
//! them (`crates/readers/build.rs`, `crates/engine/build.rs`), which include
//! this file as a module. Each package becomes `$OUT_DIR/<package>.rs`.

use std::path::{Path, PathBuf};

/// Compiles every `.proto` file under the folders `dirs` of `root` (imports
/// resolve from `root`).
pub fn compile(root: &Path, dirs: &[&str]) {
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
