//! Publishing outputs atomically: every file or directory a writer makes goes
//! to a uniquely named temporary sibling of its target, created exclusively
//! (`O_EXCL`, so never through a link planted under a guessable name), is
//! synced, and is renamed over the target only when complete. A failed or
//! abandoned write leaves the old target byte-identical and no stray file.
//!
//! - [`AtomicFile`]: one file (MCAP, ROS1 bag and MP4 output, exports, `-o`,
//!   plots);
//! - [`AtomicDir`]: a whole directory (a ROS 2 bag directory, a LeRobot
//!   dataset), every file in it synced before the rename.

mod dir;

use std::fs::File;
use std::io;
use std::path::{Path, PathBuf};

use tempfile::NamedTempFile;

pub use dir::AtomicDir;

/// A file being written under a temporary name beside its target; see
/// [`AtomicFile::commit`]. Dropped without a commit, the temporary file is
/// removed and the target is untouched.
#[derive(Debug)]
pub struct AtomicFile {
    temp: NamedTempFile,
    target: PathBuf,
}

impl AtomicFile {
    /// Creates the temporary file for `target` in `target`'s directory (which
    /// must exist), named `.<target name>.<random>.tmp`.
    pub fn create(target: &Path) -> io::Result<Self> {
        let temp = temp_file_beside(target)?;
        Ok(Self {
            temp,
            target: target.to_path_buf(),
        })
    }

    /// The file to write.
    pub fn file(&mut self) -> &mut File {
        self.temp.as_file_mut()
    }

    /// The temporary file's path (for error messages).
    pub fn temp_path(&self) -> &Path {
        self.temp.path()
    }

    /// The target.
    pub fn target(&self) -> &Path {
        &self.target
    }

    /// Syncs the file to disk and renames it over the target (replacing a
    /// file or a link there, never writing through a link).
    pub fn commit(self) -> io::Result<()> {
        publish(self.temp, &self.target)
    }
}

/// Syncs `temp` and renames it to `target`.
pub fn publish(temp: NamedTempFile, target: &Path) -> io::Result<()> {
    temp.as_file().sync_all()?;
    temp.persist(target).map_err(|e| e.error)?;
    Ok(())
}

/// Where a temporary sibling of `target` goes: its directory, and the name
/// prefix `.<target name>.` (the name ends in a random part and `.tmp`).
pub fn beside(target: &Path) -> (&Path, std::ffi::OsString) {
    let dir = match target.parent() {
        Some(d) if !d.as_os_str().is_empty() => d,
        _ => Path::new("."),
    };
    let mut prefix = std::ffi::OsString::from(".");
    prefix.push(target.file_name().unwrap_or_else(|| "output".as_ref()));
    prefix.push(".");
    (dir, prefix)
}

/// A new, exclusively created temporary file in the directory of `target`.
pub fn temp_file_beside(target: &Path) -> io::Result<NamedTempFile> {
    let (dir, prefix) = beside(target);
    let mut builder = tempfile::Builder::new();
    builder.prefix(&prefix).suffix(".tmp");
    // Readable as a file created by `File::create` would be (tempfile's own
    // default, 0600, would make every output private to its owner).
    #[cfg(unix)]
    builder.permissions(std::os::unix::fs::PermissionsExt::from_mode(0o666));
    builder.tempfile_in(dir)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn entries(dir: &Path) -> Vec<String> {
        let mut v: Vec<String> = std::fs::read_dir(dir)
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        v.sort();
        v
    }

    #[test]
    fn a_committed_file_replaces_the_target_and_a_dropped_one_leaves_nothing() {
        use std::io::Write;
        let dir = tempfile::tempdir().unwrap();
        let target = dir.path().join("out.csv");
        std::fs::write(&target, b"old").unwrap();
        let mut f = AtomicFile::create(&target).unwrap();
        f.file().write_all(b"new").unwrap();
        let temp = f.temp_path().to_path_buf();
        assert!(
            temp.file_name()
                .unwrap()
                .to_string_lossy()
                .starts_with(".out.csv.")
        );
        drop(f);
        assert_eq!(std::fs::read(&target).unwrap(), b"old");
        assert_eq!(entries(dir.path()), ["out.csv"]);
        let mut f = AtomicFile::create(&target).unwrap();
        f.file().write_all(b"new").unwrap();
        f.commit().unwrap();
        assert_eq!(std::fs::read(&target).unwrap(), b"new");
        assert_eq!(entries(dir.path()), ["out.csv"]);
    }

    #[cfg(unix)]
    #[test]
    fn a_link_at_the_target_is_replaced_not_followed() {
        use std::io::Write;
        let dir = tempfile::tempdir().unwrap();
        let victim = dir.path().join("victim");
        std::fs::write(&victim, b"precious").unwrap();
        let target = dir.path().join("out.parquet");
        std::os::unix::fs::symlink(&victim, &target).unwrap();
        let mut f = AtomicFile::create(&target).unwrap();
        f.file().write_all(b"new").unwrap();
        f.commit().unwrap();
        assert_eq!(std::fs::read(&victim).unwrap(), b"precious");
        assert!(!std::fs::symlink_metadata(&target).unwrap().is_symlink());
        assert_eq!(std::fs::read(&target).unwrap(), b"new");
    }
}
