//! Warns when the `video` feature's encoder builds slow: `openh264-sys2`
//! compiles OpenH264's x86 assembly (its motion search, transforms and
//! deblocking) only when `nasm` is on the build machine, and silently falls
//! back to plain C without it, which encodes about 2.8x slower.

fn main() {
    println!("cargo:rerun-if-changed=build.rs");
    let arch = std::env::var("CARGO_CFG_TARGET_ARCH").unwrap_or_default();
    let video = std::env::var_os("CARGO_FEATURE_VIDEO").is_some();
    if video && matches!(arch.as_str(), "x86" | "x86_64") && !nasm_found() {
        println!(
            "cargo:warning=nasm not found: OpenH264 builds without its assembly and MP4 export is about 2.8x slower (Debian: apt-get install nasm, then cargo clean -p openh264-sys2 and build again)"
        );
    }
}

/// Whether `nasm` (or the `NASM` the build of `openh264-sys2` uses) runs.
fn nasm_found() -> bool {
    let nasm = std::env::var_os("NASM").unwrap_or_else(|| "nasm".into());
    std::process::Command::new(nasm)
        .arg("-v")
        .output()
        .is_ok_and(|o| o.status.success())
}
