//! The files `logsql doctor` (and `logsql recover`) check, and each file's
//! check: a directory stands for the log files under it, walked as queries
//! list directories ([`crate::storage::local_walk::walk_files`]: a link is
//! followed once, a loop named, not walked); the checks are the readers'
//! ([`logsql_readers::doctor`]).

use std::fmt;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use logsql_readers::doctor::Report;
use logsql_readers::formats::{self, FormatReader};
use logsql_readers::io::FileReader;
use logsql_readers::limits::Limits;

use crate::storage::local_walk::{WalkError, walk_files};

/// One file's outcome.
pub struct Checked {
    /// The file's path.
    pub path: PathBuf,
    /// The report, or why the file cannot be read at all.
    pub report: Result<Report, logsql_readers::Error>,
}

/// Checks one local file.
pub fn check_path(path: &Path, limits: &Limits) -> Checked {
    let report = FileReader::open(path).and_then(|file| {
        let format = formats::detect(&file)?;
        logsql_readers::doctor::check(format.as_ref(), &file, limits)
    });
    Checked {
        path: path.to_path_buf(),
        report,
    }
}

/// Why the files paths name could not be found.
#[derive(Debug)]
pub enum ExpandError {
    /// A directory with no log file under it.
    NoLogFiles(logsql_readers::Error),
    /// A directory that could not be read.
    Walk(WalkError),
}

impl fmt::Display for ExpandError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ExpandError::NoLogFiles(e) => write!(f, "{e}"),
            ExpandError::Walk(e) => write!(f, "{e}"),
        }
    }
}

impl std::error::Error for ExpandError {}

/// The files paths name, and what the walk of their directories has to say.
#[derive(Debug, Default)]
pub struct Expanded {
    /// The files, in the order named (a directory's in name order).
    pub files: Vec<PathBuf>,
    /// Links not followed (loops) and directories left out, for the user.
    pub warnings: Vec<String>,
}

/// The files `paths` name: a file as it is, a directory as the log files
/// under it at any depth (in name order), leaving out the companions of a
/// format (`-wal`, `-shm`) and files no format recognises unless they are
/// named like a log file.
pub fn expand(paths: &[String]) -> Result<Expanded, ExpandError> {
    let mut out = Expanded::default();
    for path in paths {
        let p = Path::new(path);
        if p.is_dir() {
            let walk = walk_files(p).map_err(ExpandError::Walk)?;
            let mut files: Vec<PathBuf> =
                walk.files.into_iter().filter(|f| is_log_file(f)).collect();
            if files.is_empty() {
                return Err(ExpandError::NoLogFiles(logsql_readers::Error::NoLogFiles {
                    path: path.clone(),
                }));
            }
            // Name order at every depth (the walk lists a directory's files
            // before its subdirectories, and links after real directories).
            files.sort();
            out.files.extend(files);
            out.warnings.extend(walk.warnings);
        } else {
            out.files.push(p.to_path_buf());
        }
    }
    Ok(out)
}

/// Whether `path` is a log file of some format (by content, or by a log
/// file's name), and not a companion file.
fn is_log_file(path: &Path) -> bool {
    let name = path.display().to_string();
    let all = formats::all();
    if all.iter().any(|f| formats::is_companion(f.as_ref(), &name)) {
        return false;
    }
    let by_content = FileReader::open(path)
        .ok()
        .and_then(|f| formats::detect(&f).ok())
        .is_some();
    by_content || has_log_extension(&all, path)
}

/// Whether `path`'s extension is one a format claims.
fn has_log_extension(all: &[Arc<dyn FormatReader>], path: &Path) -> bool {
    let ext = path.extension().and_then(|e| e.to_str()).unwrap_or("");
    let ext = ext.to_ascii_lowercase();
    all.iter().any(|f| f.extensions().contains(&ext.as_str())) || ext == "active"
}
