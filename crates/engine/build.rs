//! Compiles the repository's `proto/logsql` (the messages of the distributed
//! plan codec, `src/distributed/codec.rs`): `$OUT_DIR/logsql.scan.rs`.

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
    compile::compile(&root, &["logsql"]);
}
