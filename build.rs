//! Compiles the format definitions in `proto/` (Apollo Cyber RT record
//! sections, BDDF index blocks) into Rust with prost, using protox so that no
//! system `protoc` is needed. Each package becomes `$OUT_DIR/<package>.rs`.

use std::path::{Path, PathBuf};

fn main() {
    link_binaries_at_a_fixed_address();
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

/// Links the `logsql` binary as a position-dependent executable on Linux
/// (`-no-pie`). The binary holds DataFusion's ~250,000 pointers in read-only
/// data (vtables, function tables); as a position-independent executable the
/// dynamic loader rewrites every one of them at each start, copying about
/// 1,000 pages, which was half of what `logsql "SELECT 1"` cost (13 ms against
/// 6.6 ms, and `--version` 6.5 ms against 1.4 ms). Shared libraries stay
/// randomised; only the executable's own base address is fixed.
/// `LOGSQL_PIE=1` at build time keeps the default.
fn link_binaries_at_a_fixed_address() {
    println!("cargo:rerun-if-env-changed=LOGSQL_PIE");
    let linux = std::env::var("CARGO_CFG_TARGET_OS").is_ok_and(|os| os == "linux");
    let gnu_like = std::env::var("CARGO_CFG_TARGET_ENV").is_ok_and(|env| env == "gnu");
    if linux && gnu_like && std::env::var_os("LOGSQL_PIE").is_none_or(|v| v != "1") {
        println!("cargo:rustc-link-arg-bins=-no-pie");
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
