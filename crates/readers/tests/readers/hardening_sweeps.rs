//! Truncation and corruption sweeps over every fixture of every format, through
//! the [`FormatReader`] trait only (docs/security.md).
//!
//! Every log file under the fixture folders (`mcap/` with `conformance/`,
//! `samples/`, `decode/`; `rosbag/`; `apollo/`; `bddf/`; `carla/`) is read in full
//! (the *reference read*), then damaged copies are read the same way:
//! `summary`, `read_chunk` over every chunk with [`Selection::all`] (going on
//! after a failing chunk), the header-only selection, every typed table, and
//! `verify`.
//!
//! **Truncation** (file cut to `bytes[..cut]`), checked at every cut:
//! - no panic (a panic is reported with the file and the cut);
//! - *nothing invented*: the messages of the cut read, in delivery order, are
//!   exactly a prefix of the reference read's messages, compared as
//!   `(topic, log_time, payload hash, payload length)`;
//! - *monotonic*: a later cut never returns fewer messages than an earlier one
//!   (so a message returned at some cut stays returned at every later cut);
//! - *nothing readable lost*: every message of every reference chunk whose byte
//!   range `[offset, offset + length)` ends at or before the cut is returned (the
//!   prefix is at least that long), unless the format cannot recover it (see
//!   [`readable_before`] for the per-format rule and its exceptions);
//! - the header-only selection returns the same number of messages;
//! - every error (summary error, `Summary::damage`, chunk and table errors)
//!   names the file, has an [`Error::offset`] that appears in its text, and that
//!   offset lies within the original file.
//!
//! **Corruption** (seeded, deterministic): random byte flips anywhere, and
//! random / huge u32 and u64 values written over the first bytes of records
//! (the file start, every chunk start, the bytes after every chunk, the tail),
//! where the formats keep their length fields. Checked: no panic, no hang (a
//! watchdog aborts with the mutation's description), errors name file and
//! offset; a flip inside one chunk leaves every other chunk that the summary
//! still lists identically readable; a flip inside a CRC-protected MCAP chunk's
//! records makes that chunk an error unless its messages came out unchanged
//! (a byte the decompressor ignores); a flip anywhere before a BDDF file's digest is a
//! SHA1 mismatch (or the trailer is unreadable: damage).
//!
//! The default tests use a reduced deterministic plan (every offset of the tiny
//! files, chunk-boundary cuts plus evenly spaced cuts of the others, a few
//! seeded mutations per file). The `#[ignore]`d `full_*` tests run the issue's
//! plan (every offset below 1 MB, 2,000 evenly spaced cuts above; at every cut
//! the messages, all and header-only, are read and checked; the typed tables
//! and `verify` at every 16th cut and next to every chunk boundary): run them
//! with `cargo test --release -p logsql-readers --test readers hardening_sweeps
//! -- --ignored --nocapture`. `LOGSQL_SWEEP_SECONDS` bounds a full run's time
//! (files are swept smallest first; the files left out are printed);
//! `LOGSQL_SWEEP_MIN_BYTES` resumes with the files of at least that size, and
//! `LOGSQL_SWEEP_ONLY` keeps the files whose name contains its text,
//! `LOGSQL_SWEEP_SKIP` drops those whose name contains one of its
//! comma-separated texts; `LOGSQL_SWEEP_EVERY_BELOW` moves the every-offset
//! limit (default 1 MiB; 0 gives every file the spaced cuts, a quick estimate
//! of the cost), `LOGSQL_SWEEP_SPACED` sets the number of spaced cuts
//! (default 2,000) and `LOGSQL_SWEEP_CUTS=<from>..<to>` keeps the cuts in
//! that byte range (to split one file's sweep across runs).

use std::collections::HashMap;
use std::hash::{Hash, Hasher};
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use logsql_readers::Error;
use logsql_readers::formats::{self, FormatReader};
use logsql_readers::io::{BytesReader, ReadAt};
use logsql_readers::model::{Flow, Message, Selection, Summary};
use logsql_readers::table::Value;

/// One message, reduced to what the sweeps compare.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
struct Key {
    topic: u64,
    log_time: u64,
    payload: u64,
    len: usize,
}

fn hash_bytes(bytes: &[u8]) -> u64 {
    let mut h = std::collections::hash_map::DefaultHasher::new();
    bytes.hash(&mut h);
    h.finish()
}

/// A fixture log file and the format it is read with.
struct Fixture {
    /// Path relative to the fixture root, used as the file name in errors.
    name: String,
    format: Arc<dyn FormatReader>,
    bytes: Arc<[u8]>,
}

/// Every log file under the fixture folders, smallest first, or `None`
/// (skipped, with the reason printed) when the fixtures are absent.
fn fixtures() -> Option<Vec<Fixture>> {
    let mut out = Vec::new();
    for (folder, format, is_log) in [
        (
            "mcap",
            "mcap",
            (|n: &str| n.ends_with(".mcap")) as fn(&str) -> bool,
        ),
        ("rosbag", "bag", |n| n.ends_with(".bag")),
        ("apollo", "record", |n| n.contains(".record")),
        ("bddf", "bddf", |n| n.ends_with(".bddf")),
        ("carla", "carla", |n| n.ends_with(".log")),
    ] {
        let dir = crate::fixtures::dir(folder)?;
        let root = dir.parent().unwrap().to_path_buf();
        let mut stack = vec![dir];
        while let Some(d) = stack.pop() {
            for entry in std::fs::read_dir(&d).unwrap() {
                let path = entry.unwrap().path();
                if path.is_dir() {
                    stack.push(path);
                    continue;
                }
                let file_name = path.file_name().unwrap().to_string_lossy().to_string();
                if !is_log(&file_name) {
                    continue;
                }
                let bytes: Arc<[u8]> = std::fs::read(&path).unwrap().into();
                let name = path.strip_prefix(&root).unwrap().display().to_string();
                out.push(Fixture {
                    name,
                    format: formats::by_name(format).unwrap(),
                    bytes,
                });
            }
        }
    }
    out.sort_by(|a, b| (a.bytes.len(), &a.name).cmp(&(b.bytes.len(), &b.name)));
    // `LOGSQL_SWEEP_ONLY=<text>`: only the files whose name contains it;
    // `LOGSQL_SWEEP_MIN_BYTES=<n>`: only the files of at least n bytes (to
    // resume a full sweep where a time budget stopped it).
    // `LOGSQL_SWEEP_SKIP=<text>[,<text>...]`: not the files whose name
    // contains one of them.
    let only = std::env::var("LOGSQL_SWEEP_ONLY").ok();
    let skip = std::env::var("LOGSQL_SWEEP_SKIP").ok();
    let min_bytes = env_usize("LOGSQL_SWEEP_MIN_BYTES");
    if only.is_some() || skip.is_some() || min_bytes.is_some() {
        out.retain(|f| {
            f.bytes.len() >= min_bytes.unwrap_or(0)
                && only.as_ref().is_none_or(|o| f.name.contains(o.as_str()))
                && skip
                    .as_ref()
                    .is_none_or(|s| !s.split(',').any(|s| f.name.contains(s)))
        });
        return Some(out);
    }
    assert!(
        out.len() > 400,
        "expected the whole fixture set, found {}",
        out.len()
    );
    Some(out)
}

/// The first `len` bytes of a shared buffer, as a file (no copy per cut).
struct Prefix {
    name: String,
    bytes: Arc<[u8]>,
    len: usize,
}

impl ReadAt for Prefix {
    fn name(&self) -> &str {
        &self.name
    }
    fn size(&self) -> u64 {
        self.len as u64
    }
    fn read_exact_at(&self, offset: u64, buf: &mut [u8]) -> std::io::Result<()> {
        let eof = || std::io::Error::from(std::io::ErrorKind::UnexpectedEof);
        let start = usize::try_from(offset).map_err(|_| eof())?;
        let end = start.checked_add(buf.len()).ok_or_else(eof)?;
        if end > self.len {
            return Err(eof());
        }
        buf.copy_from_slice(&self.bytes[start..end]);
        Ok(())
    }
}

/// Everything one read of a file gives.
#[derive(Default)]
struct Read {
    /// The summary's chunk list as `(offset, length)`; empty when `summary` failed.
    chunks: Vec<(u64, u64)>,
    /// Messages in delivery order (every chunk, going on after errors).
    messages: Vec<Key>,
    /// `messages[per_chunk[i]]` came from chunk `i`.
    per_chunk: Vec<std::ops::Range<usize>>,
    /// The error of chunk `i`, if any.
    chunk_errors: Vec<Option<Error>>,
    /// Messages of the header-only selection (`None`: not read at this cut).
    header_only: Option<usize>,
    /// Whether the header-only read failed somewhere.
    header_only_failed: bool,
    /// `summary`'s error.
    summary_error: Option<Error>,
    /// `Summary::damage`.
    damage: Option<Error>,
    /// Errors of the typed-table reads.
    table_errors: Vec<Error>,
    /// Rows of the typed tables.
    table_rows: u64,
    /// Topic names by their hash in [`Key::topic`].
    topic_names: HashMap<u64, String>,
    /// `verify`'s answer (`None`: not asked, or the format has no file checksum).
    verify: Option<Result<(), Error>>,
}

impl Read {
    /// Every error this read produced.
    fn errors(&self) -> impl Iterator<Item = &Error> {
        self.summary_error
            .iter()
            .chain(self.damage.iter())
            .chain(self.chunk_errors.iter().flatten())
            .chain(self.table_errors.iter())
            .chain(self.verify.iter().filter_map(|v| v.as_ref().err()))
    }
}

/// Reads everything `format` offers from `file`.
fn read(format: &dyn FormatReader, file: &dyn ReadAt, tables: bool) -> Read {
    let mut out = Read::default();
    let summary = match format.summary(file) {
        Ok(s) => s,
        Err(e) => {
            out.summary_error = Some(e);
            return out;
        }
    };
    out.damage = summary.damage.clone();
    out.chunks = summary
        .chunks
        .iter()
        .map(|c| (c.offset, c.length))
        .collect();
    let mut topics: HashMap<u64, u64> = HashMap::new();
    let sel = Selection::all();
    for chunk in &summary.chunks {
        let start = out.messages.len();
        let messages = &mut out.messages;
        let topic_names = &mut out.topic_names;
        let mut receiver = |m: Message<'_>| {
            let topic = *topics.entry(m.channel.id).or_insert_with(|| {
                let h = hash_bytes(m.channel.topic.as_bytes());
                topic_names.insert(h, m.channel.topic.clone());
                h
            });
            messages.push(Key {
                topic,
                log_time: m.log_time,
                payload: hash_bytes(m.data),
                len: m.data.len(),
            });
            Flow::Continue
        };
        let result = format.read_chunk(file, &summary, chunk, &sel, &mut receiver);
        out.per_chunk.push(start..out.messages.len());
        out.chunk_errors.push(result.err());
    }
    if tables {
        read_header_only(format, file, &summary, &mut out);
        read_tables(format, file, &summary, &mut out);
        out.verify = format.verify(file, &summary);
    }
    out
}

/// The header-only selection over every chunk: counts its messages.
fn read_header_only(
    format: &dyn FormatReader,
    file: &dyn ReadAt,
    summary: &Summary,
    out: &mut Read,
) {
    let header_only = Selection {
        payload: false,
        full_header: false,
        ..Selection::all()
    };
    let mut total = 0;
    for chunk in &summary.chunks {
        let mut n = 0usize;
        let mut receiver = |_: Message<'_>| {
            n += 1;
            Flow::Continue
        };
        if format
            .read_chunk(file, summary, chunk, &header_only, &mut receiver)
            .is_err()
        {
            out.header_only_failed = true;
        }
        total += n;
    }
    out.header_only = Some(total);
}

/// Every typed table of the format, for the whole file (per chunk where the
/// table is per chunk). BDDF's `pod` needs a series: every channel is tried.
fn read_tables(format: &dyn FormatReader, file: &dyn ReadAt, summary: &Summary, out: &mut Read) {
    let sel = Selection::all();
    let topics: Vec<&str> = summary
        .channels
        .values()
        .map(|c| c.topic.as_str())
        .collect();
    for &table in format.tables() {
        let args = std::iter::once(None).chain(topics.iter().take(4).map(|t| Some(*t)));
        for arg in args {
            // Definition errors are about the user's arguments, not the file.
            let Ok(def) = table.def(summary, arg) else {
                continue;
            };
            let mut rows = 0u64;
            let mut receiver = |cells: &[Value<'_>]| {
                assert_eq!(
                    cells.len(),
                    def.columns.len(),
                    "{}: row width",
                    table.name()
                );
                rows += 1;
                Flow::Continue
            };
            if def.per_chunk {
                for chunk in &summary.chunks {
                    if let Err(e) = table.read_chunk(file, summary, chunk, arg, &sel, &mut receiver)
                    {
                        out.table_errors.push(e);
                    }
                }
            } else if let Err(e) = table.read_file(file, summary, arg, &mut receiver) {
                out.table_errors.push(e);
            }
            out.table_rows += rows;
        }
    }
}

/// Checks that `e` names the file and an offset within the original file.
fn check_error(e: &Error, name: &str, original_size: u64, what: &str) {
    let text = e.to_string();
    assert!(
        text.contains(name),
        "{what}: error does not name the file: {text}"
    );
    let offset = e
        .offset()
        .unwrap_or_else(|| panic!("{what}: error names no offset: {text}"));
    assert!(
        text.contains(&offset.to_string()),
        "{what}: offset {offset} not in the text: {text}"
    );
    assert!(
        original_size == u64::MAX || offset <= original_size,
        "{what}: offset {offset} past the original file ({original_size} bytes): {text}"
    );
}

/// How many leading messages of the reference read a file cut at `cut` must
/// still return: those of every reference chunk that ends at or before the cut
/// (chunks are in file order, so this is a prefix of the reference read).
///
/// Per format:
/// - mcap, bag, apollo, bddf, carla: a chunk (MCAP chunk or pseudo-chunk of
///   loose messages, bag chunk, Cyber chunk section, BDDF block group, CARLA
///   frame group) whose bytes lie wholly before the cut is found again by the
///   recovery walk and read in full.
/// - Fixtures damaged on purpose (truncated recordings) count too: their
///   summary reports damage, but every chunk they list must read.
/// - Exception (`None`: no lower bound is asserted, only the prefix rule): a
///   reference read in which a chunk itself fails.
fn readable_before(reference: &Read, cut: u64) -> Option<usize> {
    if reference.chunk_errors.iter().any(Option::is_some) {
        return None;
    }
    let mut n = 0;
    for (i, &(offset, length)) in reference.chunks.iter().enumerate() {
        if offset + length <= cut {
            n = reference.per_chunk[i].end;
        } else {
            break;
        }
    }
    Some(n)
}

/// A watchdog that aborts the process when one read takes longer than `limit`
/// (a hang), printing what was being read.
struct Watchdog {
    started_ms: Vec<AtomicU64>,
    what: Vec<Mutex<String>>,
    done: AtomicBool,
    epoch: Instant,
}

impl Watchdog {
    fn new(workers: usize) -> Arc<Self> {
        Arc::new(Self {
            started_ms: (0..workers).map(|_| AtomicU64::new(0)).collect(),
            what: (0..workers).map(|_| Mutex::new(String::new())).collect(),
            done: AtomicBool::new(false),
            epoch: Instant::now(),
        })
    }

    fn begin(&self, worker: usize, what: impl FnOnce() -> String) {
        *self.what[worker].lock().unwrap() = what();
        self.started_ms[worker].store(
            self.epoch.elapsed().as_millis() as u64 + 1,
            Ordering::SeqCst,
        );
    }

    fn end(&self, worker: usize) {
        self.started_ms[worker].store(0, Ordering::SeqCst);
    }

    fn spawn(self: &Arc<Self>, limit: Duration) -> std::thread::JoinHandle<()> {
        let dog = Arc::clone(self);
        std::thread::spawn(move || {
            while !dog.done.load(Ordering::SeqCst) {
                std::thread::sleep(Duration::from_millis(200));
                let now = dog.epoch.elapsed().as_millis() as u64;
                for (i, s) in dog.started_ms.iter().enumerate() {
                    let s = s.load(Ordering::SeqCst);
                    if s != 0 && now.saturating_sub(s) > limit.as_millis() as u64 {
                        eprintln!(
                            "HANG: {} has been reading for more than {limit:?}",
                            dog.what[i].lock().unwrap()
                        );
                        std::process::abort();
                    }
                }
            }
        })
    }
}

/// Runs `f` on every fixture with `workers` threads; a panic is re-raised with
/// the fixture's name. Returns the per-fixture results of the swept files and
/// the names of the files left out when `deadline` passed.
fn run_parallel<T: Send>(
    fixtures: &[Fixture],
    deadline: Option<Instant>,
    f: impl Fn(&Fixture, usize, &Watchdog) -> T + Sync,
) -> (Vec<T>, Vec<String>) {
    let workers = std::thread::available_parallelism()
        .map_or(2, |n| n.get())
        .min(4);
    let dog = Watchdog::new(workers);
    let hang_limit = Duration::from_secs(if cfg!(debug_assertions) { 120 } else { 30 });
    let guard = dog.spawn(hang_limit);
    let next = AtomicUsize::new(0);
    let results: Mutex<Vec<(usize, T)>> = Mutex::new(Vec::new());
    let skipped: Mutex<Vec<String>> = Mutex::new(Vec::new());
    let panicked: Mutex<Option<String>> = Mutex::new(None);
    std::thread::scope(|s| {
        for w in 0..workers {
            let (next, results, skipped, panicked, dog, f) =
                (&next, &results, &skipped, &panicked, &dog, &f);
            s.spawn(move || {
                loop {
                    let i = next.fetch_add(1, Ordering::SeqCst);
                    let Some(fx) = fixtures.get(i) else { break };
                    if panicked.lock().unwrap().is_some()
                        || deadline.is_some_and(|d| Instant::now() > d)
                    {
                        skipped.lock().unwrap().push(fx.name.clone());
                        continue;
                    }
                    match catch_unwind(AssertUnwindSafe(|| f(fx, w, dog))) {
                        Ok(t) => results.lock().unwrap().push((i, t)),
                        Err(p) => {
                            let msg = p
                                .downcast_ref::<String>()
                                .cloned()
                                .or_else(|| p.downcast_ref::<&str>().map(|s| s.to_string()))
                                .unwrap_or_default();
                            dog.end(w);
                            *panicked.lock().unwrap() = Some(format!("{}: {msg}", fx.name));
                        }
                    }
                }
            });
        }
    });
    dog.done.store(true, Ordering::SeqCst);
    guard.join().unwrap();
    if let Some(p) = panicked.into_inner().unwrap() {
        panic!("{p}");
    }
    let mut results = results.into_inner().unwrap();
    results.sort_by_key(|(i, _)| *i);
    (
        results.into_iter().map(|(_, t)| t).collect(),
        skipped.into_inner().unwrap(),
    )
}

/// Reads `file` catching panics, re-raised with `what`; the typed tables and
/// `verify` only when `tables`.
fn read_guarded(
    format: &dyn FormatReader,
    file: &dyn ReadAt,
    tables: bool,
    what: &dyn Fn() -> String,
) -> Read {
    match catch_unwind(AssertUnwindSafe(|| read(format, file, tables))) {
        Ok(r) => r,
        Err(p) => {
            let msg = p
                .downcast_ref::<String>()
                .cloned()
                .or_else(|| p.downcast_ref::<&str>().map(|s| s.to_string()))
                .unwrap_or_default();
            panic!("PANIC reading {}: {msg}", what())
        }
    }
}

/// The reference read of a whole fixture. Fixtures that are damaged on
/// purpose (truncated, bad magic, ...) have errors here; those are checked
/// like any other error.
fn reference(fx: &Fixture) -> Read {
    let file = BytesReader::new(fx.name.clone(), Arc::clone(&fx.bytes));
    let r = read_guarded(fx.format.as_ref(), &file, true, &|| fx.name.clone());
    for e in r.errors() {
        check_error(e, &fx.name, fx.bytes.len() as u64, &fx.name);
    }
    r
}

// ---------------------------------------------------------------- truncation

/// Which cuts to make in a file.
#[derive(Clone, Copy)]
enum CutPlan {
    /// Every offset below `every_below` bytes, else `spaced` evenly spaced cuts.
    Full { every_below: usize, spaced: usize },
    /// Every offset when `size * (size + 1)` is within `budget` bytes read,
    /// else evenly spaced cuts for `budget` (at least `min`), plus cuts around
    /// the ends of up to `boundaries` chunks.
    Reduced {
        budget: usize,
        min: usize,
        boundaries: usize,
    },
}

impl CutPlan {
    /// Every how many cuts the typed tables and `verify` are read as well (a
    /// format's dozen table passes cost more than its messages; the full
    /// plan's every-offset part would take days with them at every cut).
    fn table_stride(self) -> usize {
        match self {
            CutPlan::Full { .. } => 16,
            CutPlan::Reduced { .. } => 1,
        }
    }
}

fn cuts(plan: CutPlan, size: usize, reference: &Read) -> Vec<usize> {
    let spaced = |n: usize| -> Vec<usize> {
        if n > size {
            (0..size).collect()
        } else {
            (0..n).map(|i| i * size / n).collect()
        }
    };
    let mut out = match plan {
        CutPlan::Full {
            every_below,
            spaced: n,
        } => {
            if size < every_below {
                (0..size).collect()
            } else {
                spaced(n)
            }
        }
        CutPlan::Reduced {
            budget,
            min,
            boundaries,
        } => {
            let mut v = spaced((budget / size.max(1)).max(min));
            let chunks = &reference.chunks;
            let step = chunks.len().div_ceil(boundaries.max(1)).max(1);
            for &(offset, length) in chunks.iter().step_by(step) {
                let end = (offset + length) as usize;
                for c in [offset as usize, end.saturating_sub(1), end, end + 1] {
                    if c < size {
                        v.push(c);
                    }
                }
            }
            v
        }
    };
    out.sort_unstable();
    out.dedup();
    if let CutPlan::Full { .. } = plan
        && let Some((from, to)) = cut_range()
    {
        out.retain(|&c| (from..to).contains(&c));
    }
    out
}

/// `LOGSQL_SWEEP_CUTS=<from>..<to>`: only the cuts in that byte range (the
/// full plan only; to split a long every-offset sweep of one file).
fn cut_range() -> Option<(usize, usize)> {
    let v = std::env::var("LOGSQL_SWEEP_CUTS").ok()?;
    let range = v
        .split_once("..")
        .and_then(|(from, to)| Some((from.parse().ok()?, to.parse().ok()?)));
    Some(range.unwrap_or_else(|| panic!("LOGSQL_SWEEP_CUTS={v:?} is not <from>..<to>")))
}

/// What the truncation sweep of one file found.
#[derive(Default)]
struct CutStats {
    cuts: u64,
    bytes_read: u64,
    /// Cuts at which the typed tables and `verify` were read too.
    table_cuts: u64,
    /// Cuts that returned at least one message.
    with_messages: u64,
    /// Cuts whose read reported an error (summary error, damage or chunk error).
    with_errors: u64,
}

fn truncation_sweep(fx: &Fixture, plan: CutPlan, w: usize, dog: &Watchdog) -> CutStats {
    let full = reference(fx);
    let size = fx.bytes.len();
    let mut stats = CutStats::default();
    let mut previous = (0, 0);
    // The messages at every cut; the header-only read, typed tables and
    // `verify` at every `stride`-th cut and around every chunk boundary.
    let stride = plan.table_stride();
    // The cuts within one byte of a chunk's start or end, computed once.
    let near_boundary: std::collections::HashSet<usize> = full
        .chunks
        .iter()
        .flat_map(|&(offset, length)| [offset as usize, (offset + length) as usize])
        .flat_map(|b| [b.saturating_sub(1), b, b + 1])
        .collect();
    for (i, cut) in cuts(plan, size, &full).into_iter().enumerate() {
        let tables = i % stride == 0 || near_boundary.contains(&cut);
        stats.table_cuts += u64::from(tables);
        let file = Prefix {
            name: fx.name.clone(),
            bytes: Arc::clone(&fx.bytes),
            len: cut,
        };
        let what = || format!("{} cut at {cut} of {size}", fx.name);
        dog.begin(w, what);
        let got = read_guarded(fx.format.as_ref(), &file, tables, &what);
        dog.end(w);
        stats.cuts += 1;
        stats.bytes_read += cut as u64;
        let n = got.messages.len();
        if n > full.messages.len() || got.messages[..] != full.messages[..n] {
            let at = (0..n)
                .find(|&i| full.messages.get(i) != Some(&got.messages[i]))
                .unwrap_or(n);
            let chunk_of = |r: &Read| r.per_chunk.iter().position(|c| c.contains(&at));
            let topic_of = |r: &Read| {
                r.messages
                    .get(at)
                    .and_then(|k| r.topic_names.get(&k.topic).cloned())
            };
            panic!(
                "{}: the messages are not a prefix of the full read ({n} returned, {} in the \
                 file); first difference at message {at}: {:?} (topic {:?}) in chunk {:?}, \
                 full read {:?} (topic {:?}) in chunk {:?}; chunks {:?}, in the full read {:?}",
                what(),
                full.messages.len(),
                got.messages.get(at),
                topic_of(&got),
                chunk_of(&got),
                full.messages.get(at),
                topic_of(&full),
                chunk_of(&full),
                got.chunks,
                full.chunks,
            );
        }
        assert!(
            n >= previous.1,
            "{}: {n} messages returned, but {} when cut earlier at {}",
            what(),
            previous.1,
            previous.0
        );
        previous = (cut, n);
        if let Some(min) = readable_before(&full, cut as u64) {
            assert!(
                n >= min,
                "{}: {n} messages returned but the {min} messages of the chunks \
                 ending before the cut are readable; errors: {:?}",
                what(),
                got.errors().map(|e| e.to_string()).collect::<Vec<_>>()
            );
        }
        if let Some(header_only) = got.header_only
            && !got.header_only_failed
            && got.chunk_errors.iter().all(Option::is_none)
        {
            assert_eq!(header_only, n, "{}: header-only read disagrees", what());
        }
        let mut errors = 0;
        for e in got.errors() {
            check_error(e, &fx.name, size as u64, &what());
            errors += 1;
        }
        if n > 0 {
            stats.with_messages += 1;
        }
        if errors > 0 {
            stats.with_errors += 1;
        }
    }
    stats
}

fn truncation(plan: CutPlan, deadline: Option<Instant>) {
    let Some(fixtures) = fixtures() else {
        return;
    };
    let started = Instant::now();
    let (stats, skipped) = run_parallel(&fixtures, deadline, |fx, w, dog| {
        truncation_sweep(fx, plan, w, dog)
    });
    let sum = |f: fn(&CutStats) -> u64| stats.iter().map(f).sum::<u64>();
    eprintln!(
        "truncation sweep: {} files, {} cuts ({} with header-only reads, typed tables and verify, {} with messages, {} with errors), {:.1} MB read, {:.1} s",
        stats.len(),
        sum(|s| s.cuts),
        sum(|s| s.table_cuts),
        sum(|s| s.with_messages),
        sum(|s| s.with_errors),
        sum(|s| s.bytes_read) as f64 / 1e6,
        started.elapsed().as_secs_f64()
    );
    if !skipped.is_empty() {
        eprintln!(
            "truncation sweep: time budget spent, {} files not swept: {skipped:?}",
            skipped.len()
        );
    }
    // (A `LOGSQL_SWEEP_CUTS` range may lie before the first message.)
    assert!(sum(|s| s.with_messages) > 0 || cut_range().is_some());
}

#[test]
fn truncated_fixtures_keep_a_readable_prefix() {
    truncation(
        CutPlan::Reduced {
            budget: 192 << 10,
            min: 6,
            boundaries: 4,
        },
        None,
    );
}

/// The plan: every offset of every fixture under 1 MB, 2,000 cuts of
/// the larger ones. Hours in a debug build; run with `--release`.
#[test]
#[ignore]
fn full_truncation_sweep() {
    truncation(
        CutPlan::Full {
            every_below: env_usize("LOGSQL_SWEEP_EVERY_BELOW").unwrap_or(1 << 20),
            spaced: env_usize("LOGSQL_SWEEP_SPACED").unwrap_or(2000),
        },
        deadline(),
    );
}

/// A whole number from the environment variable `name`, if set.
fn env_usize(name: &str) -> Option<usize> {
    let v = std::env::var(name).ok()?;
    Some(
        v.parse()
            .unwrap_or_else(|_| panic!("{name}={v:?} is not a number")),
    )
}

/// `LOGSQL_SWEEP_SECONDS`: a time budget for the full sweeps.
fn deadline() -> Option<Instant> {
    let secs: u64 = std::env::var("LOGSQL_SWEEP_SECONDS").ok()?.parse().ok()?;
    Some(Instant::now() + Duration::from_secs(secs))
}

// ---------------------------------------------------------------- corruption

/// Deterministic pseudo-random numbers (xorshift64).
struct Rng(u64);

impl Rng {
    fn new(seed: u64) -> Self {
        Self(seed | 1)
    }
    fn next_u64(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
    fn below(&mut self, n: usize) -> usize {
        (self.next_u64() % n.max(1) as u64) as usize
    }
}

/// A value for a length field: huge, just too large, random, zero.
fn length_value(rng: &mut Rng, size: usize, width: usize) -> u64 {
    let max = if width == 4 {
        u32::MAX as u64
    } else {
        u64::MAX
    };
    match rng.below(8) {
        0 => max,
        1 => max / 2 + 1,
        2 => 0,
        3 => size as u64,
        4 => size as u64 + 1 + rng.below(64) as u64,
        5 => (rng.next_u64() & max) | (1 << (width * 8 - 2)),
        6 => 1 << (width * 4),
        _ => rng.next_u64() & max,
    }
}

/// One damaged copy of a file.
struct Mutant {
    bytes: Vec<u8>,
    /// What was done, for messages.
    what: String,
    /// The single damaged byte range, when the mutation has one.
    range: Option<(usize, usize)>,
}

/// Starts of records in a file: the file start, every chunk start and end,
/// the last 64 bytes.
fn record_starts(size: usize, reference: &Read, limit: usize) -> Vec<usize> {
    let mut v = vec![0];
    let step = reference.chunks.len().div_ceil(limit.max(1)).max(1);
    for &(offset, length) in reference.chunks.iter().step_by(step) {
        v.push(offset as usize);
        v.push((offset + length) as usize);
    }
    v.extend((size.saturating_sub(64)..size).step_by(8));
    v.retain(|&o| o < size);
    v.sort_unstable();
    v.dedup();
    v
}

fn mutants(fx: &Fixture, reference: &Read, flips: usize, lengths: usize) -> Vec<Mutant> {
    let size = fx.bytes.len();
    let mut out = Vec::new();
    if size == 0 {
        return out;
    }
    let mut rng = Rng::new(0x5eed_u64 ^ hash_bytes(fx.name.as_bytes()));
    for i in 0..flips {
        let mut bytes = fx.bytes.to_vec();
        // Half of the mutants flip one byte (so the damage has one place), the
        // others up to 4.
        let n = if i % 2 == 0 { 1 } else { 1 + rng.below(4) };
        let mut at = Vec::new();
        for _ in 0..n {
            let p = rng.below(size);
            bytes[p] ^= 1 + rng.below(255) as u8;
            at.push(p);
        }
        out.push(Mutant {
            bytes,
            what: format!("bytes flipped at {at:?}"),
            range: (n == 1).then(|| (at[0], at[0] + 1)),
        });
    }
    let starts = record_starts(size, reference, 64);
    for _ in 0..lengths {
        let base = starts[rng.below(starts.len())];
        let p = base + rng.below(48);
        let width = if rng.below(2) == 0 { 4 } else { 8 };
        if p + width > size {
            continue;
        }
        let v = length_value(&mut rng, size, width);
        if fx.bytes[p..p + width] == v.to_le_bytes()[..width] {
            continue; // a no-op
        }
        let mut bytes = fx.bytes.to_vec();
        bytes[p..p + width].copy_from_slice(&v.to_le_bytes()[..width]);
        out.push(Mutant {
            bytes,
            what: format!("u{} {v:#x} written at {p} (record at {base})", width * 8),
            range: Some((p, p + width)),
        });
    }
    out
}

/// The file offset where an MCAP chunk's compressed records start, and
/// whether the chunk carries a CRC (`None` if the bytes are not a chunk).
fn mcap_chunk_records(bytes: &[u8], offset: usize) -> Option<(usize, bool)> {
    let u32_at = |p: usize| Some(u32::from_le_bytes(bytes.get(p..p + 4)?.try_into().ok()?));
    if *bytes.get(offset)? != 0x06 {
        return None;
    }
    let crc = u32_at(offset + 33)?;
    let compression_len = u32_at(offset + 37)? as usize;
    Some((offset + 41 + compression_len + 8, crc != 0))
}

#[derive(Default)]
struct FlipStats {
    mutants: u64,
    flips: u64,
    lengths: u64,
    errors: u64,
    crc_reported: u64,
    sha1_reported: u64,
    other_chunks_checked: u64,
}

fn corruption_sweep(
    fx: &Fixture,
    flips: usize,
    lengths: usize,
    w: usize,
    dog: &Watchdog,
) -> FlipStats {
    let full = reference(fx);
    let size = fx.bytes.len();
    let mut stats = FlipStats::default();
    let clean = full.errors().next().is_none();
    let sha1 = matches!(full.verify, Some(Ok(())));
    for m in mutants(fx, &full, flips, lengths) {
        let file = BytesReader::new(fx.name.clone(), m.bytes);
        let what = || format!("{} with {}", fx.name, m.what);
        dog.begin(w, what);
        let got = read_guarded(fx.format.as_ref(), &file, true, &what);
        dog.end(w);
        stats.mutants += 1;
        if m.what.starts_with("bytes") {
            stats.flips += 1;
        } else {
            stats.lengths += 1;
        }
        let mut any_error = false;
        for e in got.errors() {
            // A damaged pointer may be named as it reads, past the file's end.
            check_error(e, &fx.name, u64::MAX, &what());
            any_error = true;
        }
        stats.errors += u64::from(any_error);
        let Some((lo, hi)) = m.range else { continue };
        // BDDF: a byte changed before the stored digest breaks the SHA1.
        if sha1 && hi <= size - 4 && got.summary_error.is_none() {
            match &got.verify {
                Some(Ok(())) => panic!("{}: SHA1 still verifies", what()),
                Some(Err(e)) => {
                    if matches!(e, Error::Checksum { .. }) {
                        stats.sha1_reported += 1;
                    }
                }
                None => assert!(
                    got.damage.is_some(),
                    "{}: no SHA1 check and no damage reported",
                    what()
                ),
            }
        }
        if !clean || got.summary_error.is_some() {
            continue;
        }
        // The damaged chunk of the reference read, if the damage is inside one.
        let Some(victim) = full
            .chunks
            .iter()
            .position(|&(o, l)| o as usize <= lo && hi <= (o + l) as usize)
        else {
            continue;
        };
        // MCAP: damage in a CRC-protected chunk's records is an error there.
        if fx.format.name() == "mcap" {
            let (o, _) = full.chunks[victim];
            if let Some((records, true)) = mcap_chunk_records(&fx.bytes, o as usize)
                && lo >= records
                && let Some(i) = got.chunks.iter().position(|c| *c == full.chunks[victim])
            {
                // Either an error, or the damage did not change the
                // decompressed records (e.g. an ignored LZ4 frame field).
                let same = got.messages[got.per_chunk[i].clone()]
                    == full.messages[full.per_chunk[victim].clone()];
                assert!(
                    got.chunk_errors[i].is_some() || same,
                    "{}: damage inside a CRC-protected chunk's records changed its messages \
                     without an error",
                    what()
                );
                if matches!(got.chunk_errors[i], Some(Error::Checksum { .. })) {
                    stats.crc_reported += 1;
                }
            }
        }
        // Every other chunk the summary still lists reads as before.
        for (i, c) in got.chunks.iter().enumerate() {
            let Some(j) = full.chunks.iter().position(|f| f == c) else {
                continue;
            };
            if j == victim {
                continue;
            }
            assert!(
                got.chunk_errors[i].is_none()
                    && got.messages[got.per_chunk[i].clone()]
                        == full.messages[full.per_chunk[j].clone()],
                "{}: chunk {j} at {} changed though the damage is in chunk {victim}: {:?}",
                what(),
                c.0,
                got.chunk_errors[i]
            );
            stats.other_chunks_checked += 1;
        }
    }
    stats
}

fn corruption(flips: impl Fn(usize) -> usize + Sync, deadline: Option<Instant>) {
    let Some(fixtures) = fixtures() else {
        return;
    };
    let started = Instant::now();
    let (stats, skipped) = run_parallel(&fixtures, deadline, |fx, w, dog| {
        let n = flips(fx.bytes.len());
        corruption_sweep(fx, n, n, w, dog)
    });
    let sum = |f: fn(&FlipStats) -> u64| stats.iter().map(f).sum::<u64>();
    eprintln!(
        "corruption sweep: {} files, {} mutants ({} byte flips, {} length fields), {} with errors, \
         {} MCAP CRC and {} BDDF SHA1 mismatches reported, {} undamaged chunks re-read intact, {:.1} s",
        stats.len(),
        sum(|s| s.mutants),
        sum(|s| s.flips),
        sum(|s| s.lengths),
        sum(|s| s.errors),
        sum(|s| s.crc_reported),
        sum(|s| s.sha1_reported),
        sum(|s| s.other_chunks_checked),
        started.elapsed().as_secs_f64()
    );
    if !skipped.is_empty() {
        eprintln!(
            "corruption sweep: time budget spent, {} files not swept: {skipped:?}",
            skipped.len()
        );
    }
    assert!(sum(|s| s.sha1_reported) > 0, "no SHA1 mismatch seen");
}

#[test]
fn corrupted_fixtures_never_panic_and_keep_other_chunks() {
    // Mutants per kind: many for the small files, a few for the large ones.
    corruption(|size| ((256 << 10) / size.max(1)).clamp(3, 8), None);
}

/// Thousands of mutants per file. Hours in a debug build; run with `--release`.
#[test]
#[ignore]
fn full_corruption_sweep() {
    corruption(
        |size| ((256 << 20) / size.max(1)).clamp(200, 2000),
        deadline(),
    );
}
