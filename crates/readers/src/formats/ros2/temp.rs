//! Where temporary copies of `.db3` databases live: one directory per
//! process, `$TMPDIR/logsql-<pid>`, made when the first copy is and removed
//! with the last one (a copy is removed when dropped, also on errors). A
//! process killed before it could clean up leaves its directory behind; the
//! next process to make a copy removes the directories of processes that no
//! longer run (where `/proc` tells), and so does [`remove_stale_now`], which
//! the `logsql` command calls once when it starts.

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, Weak};

/// Prefix of the per-process directories.
const PREFIX: &str = "logsql-";

/// The per-process directory; removed when the last copy in it is dropped.
#[derive(Debug)]
pub(crate) struct ProcessDir {
    path: PathBuf,
}

impl Drop for ProcessDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.path);
    }
}

/// A temporary copy: its file, then (dropped after it) its directory.
#[derive(Debug)]
pub(crate) struct TempCopy {
    pub(crate) path: tempfile::TempPath,
    _dir: Arc<ProcessDir>,
}

/// The directory in use, while copies exist.
static CURRENT: Mutex<Weak<ProcessDir>> = Mutex::new(Weak::new());

/// A new empty temporary file for a copy of a database.
pub(crate) fn new_copy() -> std::io::Result<(std::fs::File, TempCopy)> {
    let dir = process_dir()?;
    let tmp = tempfile::Builder::new()
        .prefix("ros2-")
        .suffix(".db3")
        .tempfile_in(&dir.path)?;
    let (file, path) = tmp.into_parts();
    Ok((file, TempCopy { path, _dir: dir }))
}

/// The process's directory, made (after removing stale ones) if need be.
fn process_dir() -> std::io::Result<Arc<ProcessDir>> {
    let mut current = CURRENT.lock().unwrap_or_else(|e| e.into_inner());
    if let Some(dir) = current.upgrade() {
        return Ok(dir);
    }
    let root = std::env::temp_dir();
    remove_stale(&root);
    let path = root.join(format!("{PREFIX}{}", std::process::id()));
    std::fs::create_dir_all(&path)?;
    let dir = Arc::new(ProcessDir { path });
    *current = Arc::downgrade(&dir);
    Ok(dir)
}

/// Removes the `logsql-<pid>` directories under the temporary directory
/// (`$TMPDIR`) of processes that no longer run (see [`remove_stale`]).
pub fn remove_stale_now() {
    remove_stale(&std::env::temp_dir());
}

/// Removes the `logsql-<pid>` directories under `root` of processes that no
/// longer run. Does nothing where `/proc` does not list processes.
pub fn remove_stale(root: &Path) {
    if !Path::new("/proc/self").exists() {
        return;
    }
    let Ok(entries) = std::fs::read_dir(root) else {
        return;
    };
    for entry in entries.flatten() {
        let name = entry.file_name();
        let Some(pid) = name
            .to_str()
            .and_then(|n| n.strip_prefix(PREFIX))
            .and_then(|p| p.parse::<u32>().ok())
        else {
            continue;
        };
        let is_dir = entry.file_type().is_ok_and(|t| t.is_dir());
        if is_dir && pid != std::process::id() && !Path::new(&format!("/proc/{pid}")).exists() {
            log::debug!("removing the temporary files of process {pid}, which ended");
            let _ = std::fs::remove_dir_all(entry.path());
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn copies_share_the_process_directory_and_stale_ones_are_removed() {
        let root = std::env::temp_dir();
        // A pid above the kernel's maximum (2^22) never runs.
        let stale = root.join(format!("{PREFIX}{}", (1u32 << 22) + 17));
        std::fs::create_dir_all(stale.join("sub")).unwrap();
        // The first copy of a process removes stale directories; other tests
        // of this process may hold a copy already, so the removal is called
        // here too (it is what that first copy calls).
        let (_, a) = new_copy().unwrap();
        remove_stale(&root);
        assert!(!stale.exists(), "a stale directory is removed");
        let dir = a.path.parent().unwrap().to_path_buf();
        let (_, b) = new_copy().unwrap();
        assert_eq!(b.path.parent().unwrap(), dir);
        let file = b.path.to_path_buf();
        drop(a);
        assert!(dir.exists(), "a copy still uses it");
        drop(b);
        assert!(!file.exists(), "a dropped copy is removed");
        // (The directory goes with the last copy of the process: other tests
        // of this process may hold copies now; the CLI tests check it.)
    }
}
