//! Output files written under a temporary name beside their target and
//! renamed when complete, so a failed write never leaves a half-written file
//! under the name asked for (`COPY ... TO 'x.mcap'`, `logsql export`,
//! `logsql plot`).

use std::path::{Path, PathBuf};

/// `<output>.partial`, next to `output`.
pub fn partial_path(output: &Path) -> PathBuf {
    let mut name = output
        .file_name()
        .map(|n| n.to_os_string())
        .unwrap_or_else(|| "output".into());
    name.push(".partial");
    output.with_file_name(name)
}

/// Removes the file it holds when dropped: set it to `None` once the file
/// was renamed into place (or is to be kept).
#[derive(Debug)]
pub struct RemoveOnDrop(pub Option<PathBuf>);

impl Drop for RemoveOnDrop {
    fn drop(&mut self) {
        if let Some(p) = self.0.take() {
            let _ = std::fs::remove_file(p);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_partial_file_sits_next_to_the_output() {
        assert_eq!(
            partial_path(Path::new("/x/out.mcap")),
            PathBuf::from("/x/out.mcap.partial")
        );
    }

    #[test]
    fn an_unfinished_file_is_removed_and_a_kept_one_is_not() {
        let dir = std::env::temp_dir().join(format!("logsql-partial-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let (a, b) = (dir.join("a.partial"), dir.join("b.partial"));
        std::fs::write(&a, b"x").unwrap();
        std::fs::write(&b, b"x").unwrap();
        drop(RemoveOnDrop(Some(a.clone())));
        let mut kept = RemoveOnDrop(Some(b.clone()));
        kept.0 = None;
        drop(kept);
        assert!(!a.exists() && b.exists());
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
