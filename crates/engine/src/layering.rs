//! The test that keeps the engine's layers one-way: storage <- scanner <-
//! datasource <- surface (see the README's Layout section). It reads the
//! sources of `src/engine/<layer>/**.rs` and fails when a file names a module
//! of a higher layer (`crate::engine::<module>` or a `super::` chain that
//! leaves its layer). A second test keeps the byte-level readers under
//! `src/formats/` free of the engine and of the Arrow decode layer: a format
//! describes each channel's schema (`FormatReader::schema_of`) and the one
//! dispatcher in `decode/` (`decode::decoder_of`) compiles it.

use std::path::Path;

/// The layers, lowest first.
const LAYERS: [&str; 4] = ["storage", "scanner", "datasource", "surface"];

/// The rank of what `crate::engine::<name>` names: a layer, a module a layer
/// holds (re-exported at the engine's root), or the engine's root (registration,
/// `distributed`): above every layer.
fn rank_of(name: &str, modules: &[(String, usize)]) -> usize {
    if let Some(r) = LAYERS.iter().position(|l| *l == name) {
        return r;
    }
    modules
        .iter()
        .find(|(m, _)| m == name)
        .map_or(LAYERS.len(), |(_, r)| *r)
}

/// The identifiers that follow each occurrence of `prefix` in `text`.
fn names_after<'a>(text: &'a str, prefix: &str) -> Vec<&'a str> {
    text.match_indices(prefix)
        .map(|(i, _)| {
            let rest = &text[i + prefix.len()..];
            let end = rest
                .find(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
                .unwrap_or(rest.len());
            &rest[..end]
        })
        .filter(|n| !n.is_empty())
        .collect()
}

fn rust_files(dir: &Path, out: &mut Vec<std::path::PathBuf>) {
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            rust_files(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}

#[test]
fn no_layer_imports_a_higher_one() {
    let engine = Path::new(env!("CARGO_MANIFEST_DIR")).join("src/engine");
    let mut modules = Vec::new();
    for (rank, layer) in LAYERS.iter().enumerate() {
        for entry in std::fs::read_dir(engine.join(layer)).unwrap() {
            let path = entry.unwrap().path();
            let stem = path.file_stem().unwrap().to_string_lossy().to_string();
            if stem != "mod" {
                modules.push((stem, rank));
            }
        }
    }
    let mut violations = Vec::new();
    let mut checked = 0;
    for (rank, layer) in LAYERS.iter().enumerate() {
        let mut files = Vec::new();
        rust_files(&engine.join(layer), &mut files);
        for file in files {
            let text = std::fs::read_to_string(&file).unwrap();
            let rel = file.strip_prefix(&engine).unwrap();
            // `super::` repeated once per folder below `src/engine` reaches its root.
            let depth = rel.components().count() - usize::from(rel.ends_with("mod.rs"));
            let to_root = "super::".repeat(depth);
            let mut names = names_after(&text, "crate::engine::");
            names.extend(names_after(&text, &to_root));
            for name in names {
                checked += 1;
                let target = rank_of(name, &modules);
                if target > rank {
                    violations.push(format!(
                        "{} ({layer}) uses engine::{name} ({})",
                        rel.display(),
                        LAYERS.get(target).copied().unwrap_or("the engine's root")
                    ));
                }
            }
        }
    }
    assert!(
        checked > 20,
        "found only {checked} engine paths: the scan is broken"
    );
    assert!(violations.is_empty(), "{}", violations.join("\n"));
}

#[test]
fn names_after_reads_identifiers() {
    let text = "use crate::engine::scanner::scan; x(crate::engine::register)";
    assert_eq!(
        names_after(text, "crate::engine::"),
        ["scanner", "register"]
    );
}

#[test]
fn formats_import_neither_engine_nor_decode() {
    // The readers, and the ROS 2 message definitions they and `read_topic` share.
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut files = Vec::new();
    rust_files(&src.join("formats"), &mut files);
    rust_files(&src.join("ros2_interfaces"), &mut files);
    assert!(files.len() > 20, "found only {} files", files.len());
    let mut violations = Vec::new();
    for file in files {
        let text = std::fs::read_to_string(&file).unwrap();
        // Test modules sit at the end of their files.
        let code = text.split("#[cfg(test)]").next().unwrap_or("");
        let rel = file.strip_prefix(&src).unwrap().display().to_string();
        for layer in ["crate::engine", "crate::decode"] {
            if code.contains(layer) {
                violations.push(format!("{rel} uses {layer}"));
            }
        }
    }
    assert!(violations.is_empty(), "{}", violations.join("\n"));
}
