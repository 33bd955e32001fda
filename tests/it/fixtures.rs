//! Locating the shared fixtures (`../shared/fixtures/<format>/`).
//!
//! Tests that need them call [`dir`]: when `../shared` is absent the test prints
//! `SKIPPED: <test name>: ...` and returns early, unless
//! `LOGSQL_REQUIRE_FIXTURES=1` (set by CI), in which case a missing fixture
//! fails the test. (`self_contained` tests the repository's own files in
//! `tests/data/` and never skips.)

use std::path::PathBuf;

/// The fixture folder for `format` (e.g. `"mcap"`), or `None` (test skipped).
pub fn dir(format: &str) -> Option<PathBuf> {
    let root = std::env::var_os("LOGSQL_FIXTURES")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../shared/fixtures"));
    let dir = root.join(format);
    if dir.is_dir() {
        return Some(dir);
    }
    if std::env::var("LOGSQL_REQUIRE_FIXTURES").as_deref() == Ok("1") {
        panic!(
            "fixtures required (LOGSQL_REQUIRE_FIXTURES=1) but {} is missing",
            dir.display()
        );
    }
    // libtest names each test's thread after the test: the line says which
    // test skipped (docs/testing.md counts them).
    let thread = std::thread::current();
    eprintln!(
        "SKIPPED: {}: fixture folder {} not found (set LOGSQL_FIXTURES or check out ../shared)",
        thread.name().unwrap_or("(unnamed thread)"),
        dir.display()
    );
    None
}

/// Path of one fixture file, or `None` (test skipped) when the folder is absent.
pub fn file(format: &str, relative: &str) -> Option<PathBuf> {
    let path = dir(format)?.join(relative);
    assert!(
        path.is_file(),
        "fixture {} is missing from the fixture folder",
        path.display()
    );
    Some(path)
}
