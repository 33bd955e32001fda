//! Health checks of one log file (`logsql doctor`), for every format.
//!
//! [`check`] reads a file the way a full scan does (its summary, then every
//! chunk with payloads, checksums verified) and lists each [`Problem`] with
//! where it is: damage the summary or a chunk reports, a missing index,
//! messages outside their chunk's stated times, chunks out of time order,
//! counts the index states that the chunks do not hold, a whole-file
//! checksum that does not match. Each format adds what only it can see
//! through [`crate::formats::FormatReader::doctor`] (unknown records, chunk
//! headers that disagree with the chunk index, an unclosed recording). The
//! same pass says what a recovery would lose ([`Report::lost`]).
//!
//! Memory stays bounded: chunks are read one at a time, and per chunk only
//! counts and time bounds are kept.

use std::fmt;

use crate::error::Error;
use crate::limits::Limits;
use crate::model::{Flow, Message, MessageReceiver, Selection};

mod check;

pub use check::check;

/// How serious a [`Problem`] is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Severity {
    /// Worth knowing, not damage: the format allows it (overlapping chunks in
    /// MCAP, an unindexed file a writer may legitimately leave).
    Info,
    /// Something is wrong: data is lost or a reader without recovery fails.
    Problem,
}

impl Severity {
    /// `info` or `problem`.
    pub fn name(self) -> &'static str {
        match self {
            Severity::Info => "info",
            Severity::Problem => "problem",
        }
    }
}

/// What kind of problem was found.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum ProblemKind {
    /// No summary, index or statistics where the format keeps them.
    MissingIndex,
    /// A summary or index that is present but cannot be used.
    InvalidIndex,
    /// A stored CRC or SHA1 that does not match the bytes.
    Checksum,
    /// A chunk and the index records describing it disagree.
    IndexMismatch,
    /// A message whose time is outside its chunk's stated time range.
    TimeOutsideChunk,
    /// Chunks whose time ranges overlap.
    OverlappingChunks,
    /// A chunk that starts before the chunk before it.
    OutOfOrderChunks,
    /// The file ends inside a record: the recording was cut.
    TruncatedTail,
    /// The recording was never closed by its writer.
    UnclosedRecording,
    /// A record the format does not define.
    UnknownRecord,
    /// Bytes that do not follow the format.
    Corrupt,
    /// A chunk or payload over a size limit.
    OverLimit,
}

impl ProblemKind {
    /// The kind's name in reports (`checksum`, `truncated-tail`, ...).
    pub fn name(self) -> &'static str {
        match self {
            ProblemKind::MissingIndex => "missing-index",
            ProblemKind::InvalidIndex => "invalid-index",
            ProblemKind::Checksum => "checksum",
            ProblemKind::IndexMismatch => "index-mismatch",
            ProblemKind::TimeOutsideChunk => "time-outside-chunk",
            ProblemKind::OverlappingChunks => "overlapping-chunks",
            ProblemKind::OutOfOrderChunks => "out-of-order-chunks",
            ProblemKind::TruncatedTail => "truncated-tail",
            ProblemKind::UnclosedRecording => "unclosed-recording",
            ProblemKind::UnknownRecord => "unknown-record",
            ProblemKind::Corrupt => "corrupt",
            ProblemKind::OverLimit => "over-limit",
        }
    }
}

/// One thing `doctor` found, with where it is.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Problem {
    /// What kind of problem.
    pub kind: ProblemKind,
    /// Damage, or only worth knowing.
    pub severity: Severity,
    /// Byte offset in the file, where there is one.
    pub offset: Option<u64>,
    /// Log time (ns) of the message or chunk concerned, where there is one.
    pub time: Option<u64>,
    /// What is wrong, for people.
    pub message: String,
}

impl Problem {
    /// A problem of `kind` (severity [`Severity::Problem`]).
    pub fn new(kind: ProblemKind, offset: Option<u64>, message: impl Into<String>) -> Self {
        Problem {
            kind,
            severity: Severity::Problem,
            offset,
            time: None,
            message: message.into(),
        }
    }

    /// The same, only worth knowing ([`Severity::Info`]).
    pub fn info(mut self) -> Self {
        self.severity = Severity::Info;
        self
    }

    /// The same, at log time `time`.
    pub fn at_time(mut self, time: Option<u64>) -> Self {
        self.time = time;
        self
    }

    /// The problem a reader error describes. The file name is left out of
    /// the message (the report names the file once).
    pub fn from_error(e: &Error) -> Self {
        let kind = match e {
            Error::Truncated { .. } => ProblemKind::TruncatedTail,
            Error::Checksum { .. } => ProblemKind::Checksum,
            Error::Limit { .. } => ProblemKind::OverLimit,
            _ => ProblemKind::Corrupt,
        };
        let text = e.to_string();
        let message = match e.file() {
            Some(file) => text
                .strip_prefix(file)
                .and_then(|t| t.strip_prefix(": "))
                .unwrap_or(&text)
                .to_string(),
            None => text,
        };
        Problem::new(kind, e.offset(), message)
    }
}

impl fmt::Display for Problem {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} {}", self.severity.name(), self.kind.name())?;
        if let Some(offset) = self.offset {
            write!(f, " at byte {offset}")?;
        }
        if let Some(time) = self.time {
            write!(f, " (log time {time})")?;
        }
        write!(f, ": {}", self.message)
    }
}

/// Bytes a recovery cannot read, and the messages lost with them where a
/// count is known.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Lost {
    /// The unreadable byte range.
    pub range: std::ops::Range<u64>,
    /// What the range was (`chunk 3`, `the end of the file`, ...).
    pub what: String,
    /// Messages the file's index says were there and could not be read.
    pub messages: Option<u64>,
}

/// What [`check`] found in one file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Report {
    /// The format's name.
    pub format: &'static str,
    /// The file's size in bytes.
    pub file_size: u64,
    /// Chunks in the file's chunk list.
    pub chunks: usize,
    /// Messages read.
    pub messages: u64,
    /// Messages the file's index or statistics state, when they state a count.
    pub indexed_messages: Option<u64>,
    /// Every problem, in file order (those without an offset first).
    pub problems: Vec<Problem>,
    /// What a recovery loses.
    pub lost: Vec<Lost>,
}

impl Report {
    /// Whether no [`Severity::Problem`] was found.
    pub fn healthy(&self) -> bool {
        self.problems.iter().all(|p| p.severity == Severity::Info)
    }

    /// Adds `problem` unless one of the same kind at the same offset is there.
    pub fn add(&mut self, problem: Problem) {
        let same = |p: &Problem| {
            p.kind == problem.kind && p.offset.is_some() && p.offset == problem.offset
        };
        if !self.problems.iter().any(same) {
            self.problems.push(problem);
        }
    }
}

/// Per-chunk tally of the messages read.
#[derive(Debug, Default)]
pub(crate) struct Tally {
    pub(crate) messages: u64,
    pub(crate) first: Option<u64>,
    pub(crate) last: Option<u64>,
    pub(crate) min: Option<u64>,
    pub(crate) max: Option<u64>,
    /// The first message outside `bounds`, and how many were.
    pub(crate) outside: Option<(u64, u64)>,
    pub(crate) bounds: Option<(u64, u64)>,
}

impl MessageReceiver for Tally {
    fn message(&mut self, msg: Message<'_>) -> Flow {
        let t = msg.log_time;
        self.messages += 1;
        self.first.get_or_insert(t);
        self.last = Some(t);
        self.min = Some(self.min.map_or(t, |m| m.min(t)));
        self.max = Some(self.max.map_or(t, |m| m.max(t)));
        if let Some((lo, hi)) = self.bounds
            && !(lo..=hi).contains(&t)
        {
            self.outside.get_or_insert((t, 0)).1 += 1;
        }
        Flow::Continue
    }
}

/// A selection of everything, payloads and full headers included (checksums
/// are verified only when chunks are read whole).
pub(crate) fn everything(limits: &Limits) -> Selection {
    Selection {
        limits: *limits,
        ..Selection::all()
    }
}
