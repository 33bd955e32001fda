//! The `logsql` binary's link settings (the proto definitions are compiled
//! by the crates that use them: crates/readers, crates/engine).

fn main() {
    link_binaries_at_a_fixed_address();
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
