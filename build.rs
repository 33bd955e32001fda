//! Compiles the format definitions in `proto/` (Apollo Cyber RT record
//! sections, BDDF index blocks) into Rust with prost, using protox so that no
//! system `protoc` is needed. Each package becomes `$OUT_DIR/<package>.rs`.

use std::path::{Path, PathBuf};

fn main() {
    link_args();
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

/// Process start-up: a position-independent executable is relocated by the
/// dynamic loader on every start, and `logsql` has hundreds of thousands of
/// relative relocations (vtables, string tables). Packed relative relocations
/// (`DT_RELR`, GNU ld 2.38+ and glibc 2.36+) shrink the table the loader reads
/// from megabytes to kilobytes; the executable stays position-independent
/// (address-space layout randomisation is kept). Only the binaries are linked
/// this way (not the Python module or the tests).
fn link_args() {
    let var = |name: &str| std::env::var(name).unwrap_or_default();
    if var("CARGO_CFG_TARGET_OS") == "linux" && var("CARGO_CFG_TARGET_ENV") == "gnu" {
        println!("cargo:rustc-link-arg-bins=-Wl,-z,pack-relative-relocs");
    }
}
