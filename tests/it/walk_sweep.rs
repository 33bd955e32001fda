//! Directory walking on random trees of symbolic links, a deterministic
//! sweep (the walk lives with DataFusion's object stores, which the
//! libFuzzer targets leave out): each seed builds a tree of real
//! directories holding small MCAP files, then links: to ancestors (loops),
//! to siblings and cousins (fan-out), to files, to nothing (broken), and
//! links to links. The directory is then walked by `logsql info DIR` (the
//! walk SQL tables of directories share).
//!
//! Checked for every tree: the query ends (within 30 s), every real file is
//! read once, a link to a file adds that file once more under the link's
//! name, a link to a directory adds nothing (every directory is reached by
//! its real path too, and each is listed once), every listed path exists,
//! and no path is listed twice.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Duration;

/// A small MCAP recording (3 messages on one topic).
const SOURCE: &str = "tests/data/images.mcap";

struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }

    fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }
}

/// A random tree under `root`; returns the files a walk must list.
fn tree(root: &Path, rng: &mut Rng) -> BTreeSet<PathBuf> {
    let mut dirs = vec![root.to_path_buf()];
    for i in 0..(3 + rng.below(8)) {
        let parent = dirs[rng.below(dirs.len())].clone();
        if parent.components().count() - root.components().count() >= 5 {
            continue;
        }
        let dir = parent.join(format!("d{i}"));
        std::fs::create_dir(&dir).unwrap();
        dirs.push(dir);
    }
    let mut files = BTreeSet::new();
    for i in 0..(1 + rng.below(6)) {
        let file = dirs[rng.below(dirs.len())].join(format!("f{i}.mcap"));
        std::fs::copy(SOURCE, &file).unwrap();
        files.insert(file);
    }
    let real: Vec<PathBuf> = files.iter().cloned().collect();
    for i in 0..(2 + rng.below(10)) {
        let at = dirs[rng.below(dirs.len())].join(format!("l{i}"));
        let to: PathBuf = match rng.below(6) {
            // An ancestor (or the directory itself): a loop.
            0 => {
                let d = at.parent().unwrap();
                let up = rng.below(d.components().count() - root.components().count() + 1);
                (0..up).fold(d.to_path_buf(), |p, _| p.parent().unwrap().to_path_buf())
            }
            1 | 2 => dirs[rng.below(dirs.len())].clone(),
            3 => {
                let f = real[rng.below(real.len())].clone();
                files.insert(at.clone());
                f
            }
            4 => at.with_file_name("missing"),
            // A link to a link made earlier (or to nothing yet).
            _ => at.with_file_name(format!("l{}", rng.below(i + 1))),
        };
        std::os::unix::fs::symlink(&to, &at).unwrap();
    }
    // A link to a link counts as a file when it ends at a file.
    files
        .into_iter()
        .filter(|p| std::fs::metadata(p).is_ok_and(|m| m.is_file()))
        .collect()
}

/// The files `logsql info --format json ROOT/` lists, within 30 s.
fn info_files(root: &Path, seed: u64) -> Vec<PathBuf> {
    let child = Command::new(env!("CARGO_BIN_EXE_logsql"))
        .args(["info", "--format", "json"])
        .arg(format!("{}/", root.display()))
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let pid = child.id();
    // Output is read while the process runs (a full pipe would stall it).
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || tx.send(child.wait_with_output()));
    let Ok(out) = rx.recv_timeout(Duration::from_secs(30)) else {
        let _ = Command::new("kill").arg(pid.to_string()).status();
        panic!("seed {seed}: the walk did not end within 30 s");
    };
    let out = out.unwrap();
    assert!(out.status.success(), "seed {seed}: info failed");
    let facts: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    facts
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|f| f["file"].as_str().map(PathBuf::from))
        .collect()
}

#[cfg(unix)]
#[test]
fn random_trees_of_links_list_every_file_once() {
    for seed in 1..=40u64 {
        let tmp = tempfile::tempdir().unwrap();
        let root = tmp.path().join("root");
        std::fs::create_dir(&root).unwrap();
        let mut rng = Rng(seed.wrapping_mul(0x9e37_79b9_7f4a_7c15));
        let mut want = tree(&root, &mut rng);
        // Links to links of files are listed too (by the link's path).
        for entry in walk_links(&root) {
            if std::fs::metadata(&entry).is_ok_and(|m| m.is_file()) {
                want.insert(entry);
            }
        }
        let listed = info_files(&root, seed);
        let unique: BTreeSet<PathBuf> = listed.iter().cloned().collect();
        assert_eq!(
            unique.len(),
            listed.len(),
            "seed {seed}: a path listed twice"
        );
        for p in &listed {
            assert!(p.exists(), "seed {seed}: {} does not exist", p.display());
        }
        // Directory links may list a directory's files under the link's path
        // instead of the real one (the first path the walk reaches it by):
        // compare the files by what they are, and count them.
        let real = |set: &BTreeSet<PathBuf>| -> BTreeSet<PathBuf> {
            set.iter().map(|p| without_dir_links(&root, p)).collect()
        };
        assert_eq!(
            real(&unique),
            real(&want),
            "seed {seed}: listed {unique:#?}, expected {want:#?}"
        );
        assert_eq!(unique.len(), want.len(), "seed {seed}");
    }
}

/// Every symbolic link under `root`, reached through real directories only.
fn walk_links(root: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let mut stack = vec![root.to_path_buf()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).unwrap() {
            let e = e.unwrap();
            let t = e.file_type().unwrap();
            if t.is_symlink() {
                out.push(e.path());
            } else if t.is_dir() {
                stack.push(e.path());
            }
        }
    }
    out
}

/// `p` with its directory part resolved through links (the file name kept:
/// a link to a file is its own entry).
fn without_dir_links(root: &Path, p: &Path) -> PathBuf {
    let dir = p.parent().unwrap_or(root);
    let dir = std::fs::canonicalize(dir).unwrap_or_else(|_| dir.to_path_buf());
    dir.join(p.file_name().unwrap())
}
