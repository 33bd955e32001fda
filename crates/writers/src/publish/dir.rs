//! [`AtomicDir`]: an output directory (a ROS 2 bag directory, a LeRobot
//! dataset) written under a temporary name beside its target, every file and
//! directory in it synced, and renamed to it only when complete.

use std::io;
use std::path::{Path, PathBuf};

use tempfile::TempDir;

/// A directory being filled under a temporary name beside its target; see
/// [`AtomicDir::commit`]. Dropped without a commit, the temporary directory
/// and everything in it are removed and the target is untouched.
#[derive(Debug)]
pub struct AtomicDir {
    temp: TempDir,
    target: PathBuf,
}

impl AtomicDir {
    /// Creates the temporary directory for `target` in `target`'s parent
    /// (which must exist), named `.<target name>.<random>.tmp`. A `target`
    /// that exists and is not an empty directory is refused: a directory is
    /// never replaced with what it held.
    pub fn create(target: &Path) -> io::Result<Self> {
        check_target(target)?;
        let (dir, prefix) = super::beside(target);
        let mut builder = tempfile::Builder::new();
        builder.prefix(&prefix).suffix(".tmp");
        // As `create_dir` would make it (tempfile's own default is 0700).
        #[cfg(unix)]
        builder.permissions(std::os::unix::fs::PermissionsExt::from_mode(0o777));
        Ok(Self {
            temp: builder.tempdir_in(dir)?,
            target: target.to_path_buf(),
        })
    }

    /// The directory to write into.
    pub fn path(&self) -> &Path {
        self.temp.path()
    }

    /// The target.
    pub fn target(&self) -> &Path {
        &self.target
    }

    /// Syncs every file and directory below the directory and the directory
    /// itself, and renames it to the target (over an empty directory there).
    pub fn commit(self) -> io::Result<()> {
        check_target(&self.target)?;
        sync_tree(self.temp.path())?;
        std::fs::rename(self.temp.path(), &self.target)?;
        // Renamed: nothing is left under the temporary name to remove.
        let _ = self.temp.keep();
        // The rename itself is durable once the parent directory is synced.
        #[cfg(unix)]
        if let Some(parent) = self.target.parent().filter(|p| !p.as_os_str().is_empty()) {
            std::fs::File::open(parent)?.sync_all()?;
        }
        Ok(())
    }
}

/// Syncs every regular file below `dir`, then each directory after its
/// contents (links are not followed: a writer makes none).
fn sync_tree(dir: &Path) -> io::Result<()> {
    for entry in std::fs::read_dir(dir)? {
        let entry = entry?;
        let kind = entry.file_type()?;
        if kind.is_dir() {
            sync_tree(&entry.path())?;
        } else if kind.is_file() {
            std::fs::File::open(entry.path())?.sync_all()?;
        }
    }
    #[cfg(unix)]
    std::fs::File::open(dir)?.sync_all()?;
    Ok(())
}

/// Refuses a target that exists as anything but an empty directory.
fn check_target(target: &Path) -> io::Result<()> {
    match std::fs::symlink_metadata(target) {
        Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(()),
        Err(e) => Err(e),
        Ok(m) if m.is_dir() && std::fs::read_dir(target)?.next().is_none() => Ok(()),
        Ok(_) => Err(io::Error::new(
            io::ErrorKind::AlreadyExists,
            format!(
                "{} exists and is not an empty directory: name a new one",
                target.display()
            ),
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_committed_dir_appears_whole_and_a_dropped_one_leaves_nothing() {
        let parent = tempfile::tempdir().unwrap();
        let target = parent.path().join("bag");
        let d = AtomicDir::create(&target).unwrap();
        std::fs::write(d.path().join("a.db3"), b"x").unwrap();
        drop(d);
        assert_eq!(std::fs::read_dir(parent.path()).unwrap().count(), 0);
        let d = AtomicDir::create(&target).unwrap();
        std::fs::write(d.path().join("a.db3"), b"x").unwrap();
        d.commit().unwrap();
        assert_eq!(std::fs::read(target.join("a.db3")).unwrap(), b"x");
        assert_eq!(std::fs::read_dir(parent.path()).unwrap().count(), 1);
        // Now it holds a file: refused.
        let e = AtomicDir::create(&target).unwrap_err();
        assert!(e.to_string().contains("not an empty directory"), "{e}");
        // An empty directory is replaced.
        let empty = parent.path().join("empty");
        std::fs::create_dir(&empty).unwrap();
        let d = AtomicDir::create(&empty).unwrap();
        std::fs::write(d.path().join("m.yaml"), b"y").unwrap();
        d.commit().unwrap();
        assert!(empty.join("m.yaml").is_file());
        // Nested directories (a dataset's data/chunk-000/) are published whole.
        let nested = parent.path().join("dataset");
        let d = AtomicDir::create(&nested).unwrap();
        std::fs::create_dir_all(d.path().join("data/chunk-000")).unwrap();
        std::fs::write(d.path().join("data/chunk-000/file-000.parquet"), b"p").unwrap();
        d.commit().unwrap();
        assert_eq!(
            std::fs::read(nested.join("data/chunk-000/file-000.parquet")).unwrap(),
            b"p"
        );
    }
}
