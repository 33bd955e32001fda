//! Compiles the format definitions in the repository's `proto/apollo` (Apollo
//! Cyber RT record sections) and `proto/bddf` (BDDF index blocks): each
//! package becomes `$OUT_DIR/<package>.rs`.

#[path = "../../proto/compile.rs"]
mod compile;

use std::path::Path;

fn main() {
    let manifest = std::env::var_os("CARGO_MANIFEST_DIR").expect("cargo sets CARGO_MANIFEST_DIR");
    let root = Path::new(&manifest).join("../../proto");
    println!(
        "cargo:rerun-if-changed={}",
        root.join("compile.rs").display()
    );
    compile::compile(&root, &["apollo", "bddf"]);
}
