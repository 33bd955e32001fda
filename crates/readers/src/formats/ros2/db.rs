//! A rosbag2 SQLite database opened with the bundled SQLite (`rusqlite`).
//!
//! SQLite does its own I/O, so it is given a path: the file's own when it is a
//! local file, else a temporary copy (a remote `.db3`, an in-memory buffer);
//! a file compressed whole (`compression_mode: file`, `NAME_0.db3.zstd`) is
//! decompressed to a temporary file. Both copies are bounded by
//! `MAX_COPY_BYTES`.
//!
//! The database is opened read-only. When a non-empty `-wal` or `-journal`
//! file lies beside it (a recording cut by a crash) it is opened with
//! `mode=ro` so that SQLite itself applies the write-ahead log; otherwise (and
//! when that fails, e.g. in a read-only directory) with `immutable=1`, which
//! takes no locks and creates no side files.
//!
//! An `immutable=1` connection has a small page cache (`CACHE_KIB`), and is
//! kept for reuse when done ([`connect`]): a scan's chunks are many short
//! range queries, and opening a connection for each (a new page cache to
//! allocate and fault in, the schema parsed again) cost more than their reads.

use std::collections::{BTreeMap, HashSet, VecDeque};
use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use rusqlite::{Connection, OpenFlags, OptionalExtension};

use crate::error::{Error, Result};
use crate::io::ReadAt;

/// The format name in errors.
pub(super) const FORMAT: &str = "ros2";

/// The first bytes of every SQLite 3 database.
pub(crate) const SQLITE_MAGIC: &[u8; 16] = b"SQLite format 3\0";

/// The first bytes of a zstd frame (a `.db3.zstd` file of a `compression_mode: file` bag).
pub(crate) const ZSTD_MAGIC: &[u8; 4] = &[0x28, 0xb5, 0x2f, 0xfd];

/// Largest temporary copy logsql makes of a remote or whole-file-compressed
/// `.db3` (16 GiB); larger ones are refused with an error saying so.
#[cfg(not(fuzzing))]
pub(crate) const MAX_COPY_BYTES: u64 = 16 << 30;
/// Largest temporary copy (64 MiB under the fuzzer: a zstd bomb stays cheap).
#[cfg(fuzzing)]
pub(crate) const MAX_COPY_BYTES: u64 = 64 << 20;

/// Bytes read from the file per request while copying it.
const COPY_PIECE: usize = 8 << 20;

/// Page cache of an `immutable=1` connection, in KiB (SQLite's default is
/// 2,000): a scan reads each page once, so a large cache only costs memory
/// to allocate and fault in; the b-trees' upper pages fit.
pub(crate) const CACHE_KIB: i64 = 256;

/// Most idle connections kept for reuse, over all databases of the process.
pub(crate) const POOL_MAX: usize = 8;

/// Where SQLite finds the database: the file itself or a temporary copy
/// (deleted when the last clone is dropped).
#[derive(Debug, Clone)]
pub struct DbPath {
    path: PathBuf,
    _temp: Option<Arc<super::temp::TempCopy>>,
    /// Whether the database is a copy (decompressed or downloaded).
    pub copied: bool,
    /// Unique per [`db_path`] call: the key of its idle connections.
    id: u64,
}

/// The next [`DbPath::id`].
static NEXT_ID: AtomicU64 = AtomicU64::new(0);

impl DbPath {
    /// The path SQLite opens.
    pub fn path(&self) -> &Path {
        &self.path
    }
}

/// Maps a SQLite error on `file` to the crate's error.
pub(super) fn sql_err(file: &str, e: rusqlite::Error) -> Error {
    Error::Corrupt {
        file: file.to_string(),
        format: FORMAT,
        offset: 0,
        message: format!("SQLite: {e}"),
    }
}

/// The database of `file`: its own path when local and uncompressed, else a
/// temporary copy (decompressed when the file is one zstd stream).
pub(crate) fn db_path(file: &dyn ReadAt, limits: &crate::limits::Limits) -> Result<DbPath> {
    let head = file
        .read_upto(0, 16)
        .map_err(|e| Error::io(file.name(), e))?;
    let compressed = head.starts_with(ZSTD_MAGIC);
    if !compressed && let Some(p) = file.local_path() {
        return Ok(DbPath {
            path: p.to_path_buf(),
            _temp: None,
            copied: false,
            id: NEXT_ID.fetch_add(1, Ordering::Relaxed),
        });
    }
    if !compressed && file.size() > MAX_COPY_BYTES {
        return Err(Error::Unsupported {
            file: file.name().to_string(),
            format: FORMAT,
            offset: 0,
            message: format!(
                "a non-local database of {} bytes exceeds the {MAX_COPY_BYTES}-byte limit of the temporary copy SQLite reads",
                file.size()
            ),
        });
    }
    let io = |e: std::io::Error| Error::io(file.name(), e);
    // Removed when dropped: on every error below, and with the last clone.
    let (tmp_file, tmp) = super::temp::new_copy().map_err(io)?;
    {
        let mut out = std::io::BufWriter::new(tmp_file);
        // Large reads: one range request per 8 MiB from an object store.
        let src = std::io::BufReader::with_capacity(COPY_PIECE, ReadAtStream { file, pos: 0 });
        if compressed {
            let cap = limits.max_chunk_bytes.min(MAX_COPY_BYTES);
            let dec = zstd::stream::read::Decoder::new(src).map_err(io)?;
            let n =
                std::io::copy(&mut dec.take(cap + 1), &mut out).map_err(|e| Error::Corrupt {
                    file: file.name().to_string(),
                    format: FORMAT,
                    offset: 0,
                    message: format!("zstd-compressed database: {e}"),
                })?;
            if n > cap {
                return Err(Error::Limit {
                    file: file.name().to_string(),
                    format: FORMAT,
                    offset: 0,
                    message: format!(
                        "the database compressed whole decompresses to more than {cap} bytes (logsql.max_chunk_bytes), the limit of its temporary copy"
                    ),
                });
            }
        } else {
            std::io::copy(&mut { src }, &mut out).map_err(io)?;
        }
        out.flush().map_err(io)?;
    }
    Ok(DbPath {
        path: tmp.path.to_path_buf(),
        _temp: Some(Arc::new(tmp)),
        copied: true,
        id: NEXT_ID.fetch_add(1, Ordering::Relaxed),
    })
}

/// A [`ReadAt`] read front to back.
struct ReadAtStream<'a> {
    file: &'a dyn ReadAt,
    pos: u64,
}

impl Read for ReadAtStream<'_> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        let n = (self.file.size().saturating_sub(self.pos)).min(buf.len() as u64) as usize;
        self.file.read_exact_at(self.pos, &mut buf[..n])?;
        self.pos += n as u64;
        Ok(n)
    }
}

/// `path` as an SQLite URI path (`%`, `?` and `#` escaped).
fn uri_path(path: &Path) -> String {
    let mut out = String::new();
    for c in path.to_string_lossy().chars() {
        match c {
            '%' => out.push_str("%25"),
            '?' => out.push_str("%3f"),
            '#' => out.push_str("%23"),
            c => out.push(c),
        }
    }
    out
}

/// Whether a non-empty `<db>-wal` or `<db>-journal` lies beside `path`.
fn has_side_log(path: &Path) -> bool {
    ["-wal", "-journal"].iter().any(|suffix| {
        let mut p = path.as_os_str().to_owned();
        p.push(suffix);
        std::fs::metadata(PathBuf::from(p)).is_ok_and(|m| m.len() > 0)
    })
}

/// Idle `immutable=1` connections, oldest first.
static IDLE: Mutex<VecDeque<(u64, Connection)>> = Mutex::new(VecDeque::new());

/// A connection to a database; one to a local, unlogged database goes back
/// to the process's idle connections when dropped (at most `POOL_MAX`,
/// the oldest closed first).
#[derive(Debug)]
pub struct Pooled {
    conn: Option<Connection>,
    /// The [`DbPath::id`] it is kept under when idle, if it is kept.
    key: Option<u64>,
}

impl std::ops::Deref for Pooled {
    type Target = Connection;

    fn deref(&self) -> &Connection {
        self.conn
            .as_ref()
            .expect("a Pooled holds its connection until dropped")
    }
}

impl Drop for Pooled {
    fn drop(&mut self) {
        let (Some(key), Some(conn)) = (self.key.take(), self.conn.take()) else {
            return;
        };
        let evicted: Vec<_> = {
            let mut idle = IDLE.lock().unwrap_or_else(|e| e.into_inner());
            idle.push_back((key, conn));
            let excess = idle.len().saturating_sub(POOL_MAX);
            idle.drain(..excess).collect()
        };
        drop(evicted);
    }
}

/// A connection to the database at `db`: an idle one made for the same
/// [`DbPath`] (the same summary of the file: a file read again gets a new
/// one) when there is one, else a new one ([`open`]). Only a local file
/// without a `-wal` or `-journal` beside it (opened `immutable=1`) is
/// reused; a temporary copy's or a logged database's connection is closed
/// when dropped.
pub fn connect(db: &DbPath, name: &str) -> Result<Pooled> {
    if db.copied || has_side_log(db.path()) {
        return Ok(Pooled {
            conn: Some(open(db, name)?),
            key: None,
        });
    };
    let key = db.id;
    let reused = {
        let mut idle = IDLE.lock().unwrap_or_else(|e| e.into_inner());
        idle.iter()
            .rposition(|(k, _)| *k == key)
            .and_then(|i| idle.remove(i))
            .map(|(_, c)| c)
    };
    let conn = match reused {
        Some(c) => c,
        None => open_immutable(db, name)?,
    };
    Ok(Pooled {
        conn: Some(conn),
        key: Some(key),
    })
}

/// Opens the database at `db` read-only (see the module docs); `name` is the
/// file's display name for errors.
pub fn open(db: &DbPath, name: &str) -> Result<Connection> {
    if !db.copied && has_side_log(db.path()) {
        match Connection::open_with_flags(uri(db, "mode=ro"), FLAGS)
            .and_then(|c| harden(&c).map(|()| c))
        {
            Ok(c) => match c.query_row("SELECT count(*) FROM sqlite_master", [], |_| Ok(())) {
                Ok(()) => return Ok(c),
                Err(e) => log::warn!(
                    "{name}: SQLite could not apply the log beside it ({e}); reading the database as it is"
                ),
            },
            Err(e) => log::warn!(
                "{name}: SQLite could not apply the log beside it ({e}); reading the database as it is"
            ),
        }
    }
    open_immutable(db, name)
}

/// Flags of every connection: read-only, URI names, no SQLite mutex (a
/// connection is used by one thread at a time).
const FLAGS: OpenFlags = OpenFlags::SQLITE_OPEN_READ_ONLY
    .union(OpenFlags::SQLITE_OPEN_URI)
    .union(OpenFlags::SQLITE_OPEN_NO_MUTEX);

/// The URI of `db` with the query `q`.
/// Most bytes SQLite may hold in one string or blob (a message payload).
const SQLITE_MAX_LENGTH: i32 = 1 << 30;

/// Most heap SQLite may use in the whole process (`PRAGMA hard_heap_limit`):
/// a crafted database cannot make it allocate more.
const SQLITE_HEAP_LIMIT: i64 = 1 << 30;

/// Treats the database as untrusted: defensive mode (no writes to the schema
/// or shadow tables), `trusted_schema` off (no functions or virtual tables
/// reached from the schema), small `sqlite3_limit`s on what logsql's own
/// statements and the file's rows may hold, and a process-wide heap limit.
fn harden(conn: &Connection) -> rusqlite::Result<()> {
    use rusqlite::config::DbConfig;
    use rusqlite::limits::Limit;
    conn.set_db_config(DbConfig::SQLITE_DBCONFIG_DEFENSIVE, true)?;
    conn.set_db_config(DbConfig::SQLITE_DBCONFIG_TRUSTED_SCHEMA, false)?;
    conn.set_db_config(DbConfig::SQLITE_DBCONFIG_ENABLE_TRIGGER, false)?;
    conn.set_db_config(DbConfig::SQLITE_DBCONFIG_ENABLE_VIEW, false)?;
    for (limit, value) in [
        (Limit::SQLITE_LIMIT_LENGTH, SQLITE_MAX_LENGTH),
        (Limit::SQLITE_LIMIT_SQL_LENGTH, 1 << 20),
        (Limit::SQLITE_LIMIT_COLUMN, 1000),
        (Limit::SQLITE_LIMIT_EXPR_DEPTH, 100),
        (Limit::SQLITE_LIMIT_COMPOUND_SELECT, 8),
        (Limit::SQLITE_LIMIT_FUNCTION_ARG, 8),
        (Limit::SQLITE_LIMIT_ATTACHED, 0),
        (Limit::SQLITE_LIMIT_LIKE_PATTERN_LENGTH, 1000),
        (Limit::SQLITE_LIMIT_TRIGGER_DEPTH, 1),
    ] {
        conn.set_limit(limit, value)?;
    }
    conn.pragma_update(None, "trusted_schema", false)?;
    conn.query_row(
        &format!("PRAGMA hard_heap_limit = {SQLITE_HEAP_LIMIT}"),
        [],
        |_| Ok(()),
    )?;
    Ok(())
}

fn uri(db: &DbPath, q: &str) -> String {
    format!("file:{}?{q}", uri_path(db.path()))
}

/// Opens `db` with `immutable=1` and a page cache of [`CACHE_KIB`].
fn open_immutable(db: &DbPath, name: &str) -> Result<Connection> {
    let conn =
        Connection::open_with_flags(uri(db, "immutable=1"), FLAGS).map_err(|e| sql_err(name, e))?;
    harden(&conn).map_err(|e| sql_err(name, e))?;
    conn.pragma_update(None, "cache_size", -CACHE_KIB)
        .map_err(|e| sql_err(name, e))?;
    Ok(conn)
}

/// Pages SQLite read from the file through `conn` so far (its page-cache
/// misses, `SQLITE_DBSTATUS_CACHE_MISS`).
pub(crate) fn pages_read(conn: &Connection) -> u64 {
    let (mut cur, mut hi) = (0i32, 0i32);
    // SAFETY: `conn.handle()` is the live connection's handle, used only for
    // this call on this thread; the out-pointers are valid locals.
    let rc = unsafe {
        rusqlite::ffi::sqlite3_db_status(
            conn.handle(),
            rusqlite::ffi::SQLITE_DBSTATUS_CACHE_MISS,
            &mut cur,
            &mut hi,
            0,
        )
    };
    if rc == rusqlite::ffi::SQLITE_OK {
        cur.max(0) as u64
    } else {
        0
    }
}

/// Runs `f` and counts the pages SQLite read through `conn` meanwhile
/// ([`pages_read`] is the connection's running total, and a pooled
/// connection carries the reads of its earlier uses).
pub(crate) fn pages_read_during<T>(conn: &Connection, f: impl FnOnce() -> T) -> (T, u64) {
    let before = pages_read(conn);
    let out = f();
    (out, pages_read(conn).saturating_sub(before))
}

/// The overflow pages a `messages` row with `data` of `len` bytes has, by
/// SQLite's rule for table b-tree leaves (file format, section 1.6): the part
/// of the record beyond what fits on the leaf page goes to a chain of overflow
/// pages. SQLite reads those straight from the file, past its page cache, so
/// [`pages_read`] does not count them; a scan reading `data` adds these. The
/// record's size is computed from the row's columns (`id` is the rowid, stored
/// as a NULL; `topic_id` and `timestamp` integers, `timestamp` taken as 8
/// bytes), so a page size without reserved bytes is assumed.
pub(crate) fn overflow_pages(page_size: u64, topic_id: i64, len: u64) -> u64 {
    let u = page_size;
    if u < 512 {
        return 0;
    }
    let varint = |v: u64| (1..=9u64).find(|n| v < 1u64 << (7 * n)).unwrap_or(9);
    let topic = match topic_id {
        0 | 1 => 0,
        -128..=127 => 1,
        -32768..=32767 => 2,
        -8388608..=8388607 => 3,
        -2147483648..=2147483647 => 4,
        _ => 8,
    };
    // Serial types: id (NULL), topic_id, timestamp, data (a blob of len).
    let types = 3 + varint(2 * len + 12);
    let header = types + varint(types + 1);
    let p = header + topic + 8 + len;
    let x = u - 35;
    if p <= x {
        return 0;
    }
    let m = (u - 12) * 32 / 255 - 23;
    let k = m + (p - m) % (u - 4);
    let local = if k <= x { k } else { m };
    (p - local).div_ceil(u - 4)
}

/// What a rosbag2 database holds beyond `topics` and `messages` (the
/// schema version decides).
#[derive(Debug, Clone, Default)]
pub struct Layout {
    /// Columns of `topics`.
    pub(crate) topic_columns: HashSet<String>,
    /// Whether `message_definitions` exists (rosbag2 on Iron and later).
    pub definitions: bool,
    /// `schema.schema_version` and `schema.ros_distro`, when the table exists.
    pub schema: Option<(i64, String)>,
    /// Whether the `metadata` table exists.
    pub(crate) metadata_table: bool,
    /// The name of an index that leads with `messages.timestamp`, if any.
    pub(crate) time_index: Option<String>,
    /// The database's page size.
    pub page_size: u64,
}

/// Reads the layout of the database, refusing one without the rosbag2 tables.
pub fn layout(conn: &Connection, name: &str) -> Result<Layout> {
    let err = |e| sql_err(name, e);
    let mut tables: HashSet<String> = HashSet::new();
    let mut indexes: Vec<String> = Vec::new();
    {
        let mut stmt = conn
            .prepare("SELECT type, name, tbl_name, sql FROM sqlite_master")
            .map_err(err)?;
        let mut rows = stmt.query([]).map_err(err)?;
        while let Some(r) = rows.next().map_err(err)? {
            let kind: String = r.get(0).map_err(err)?;
            let n: String = r.get(1).map_err(err)?;
            let tbl: String = r.get(2).map_err(err)?;
            let sql: Option<String> = r.get(3).unwrap_or(None);
            match kind.as_str() {
                "table" if is_virtual(sql.as_deref()) && (n == "messages" || n == "topics") => {
                    return Err(Error::Unsupported {
                        file: name.to_string(),
                        format: FORMAT,
                        offset: 0,
                        message: format!(
                            "the {n} table is a virtual table ({}): logsql reads only ordinary tables of an SQLite file",
                            sql.as_deref()
                                .unwrap_or("")
                                .chars()
                                .take(80)
                                .collect::<String>()
                        ),
                    });
                }
                // Other virtual tables are not the bag's: left out.
                "table" if is_virtual(sql.as_deref()) => {}
                "table" => {
                    tables.insert(n);
                }
                "index" if tbl == "messages" => indexes.push(n),
                _ => {}
            }
        }
    }
    let missing: Vec<&str> = ["topics", "messages"]
        .into_iter()
        .filter(|t| !tables.contains(*t))
        .collect();
    if !missing.is_empty() {
        let mut have: Vec<&str> = tables.iter().map(String::as_str).collect();
        have.sort_unstable();
        return Err(Error::Corrupt {
            file: name.to_string(),
            format: FORMAT,
            offset: 0,
            message: format!(
                "an SQLite database but not a rosbag2 bag: no table {} (tables: {})",
                missing.join(", "),
                if have.is_empty() {
                    "none".to_string()
                } else {
                    have.join(", ")
                }
            ),
        });
    }
    let mut layout = Layout {
        topic_columns: columns(conn, "topics").map_err(err)?,
        definitions: tables.contains("message_definitions"),
        metadata_table: tables.contains("metadata"),
        ..Layout::default()
    };
    let messages = columns(conn, "messages").map_err(err)?;
    for col in ["id", "topic_id", "timestamp", "data"] {
        if !messages.contains(col) {
            return Err(Error::Unsupported {
                file: name.to_string(),
                format: FORMAT,
                offset: 0,
                message: format!(
                    "a rosbag2 layout logsql does not know: the messages table has no column {col}"
                ),
            });
        }
    }
    // The first layout (2018-2019) has no `serialization_format`: CDR was its
    // only format ([`topics`] reads it as `cdr`).
    for col in ["id", "name", "type"] {
        if !layout.topic_columns.contains(col) {
            return Err(Error::Unsupported {
                file: name.to_string(),
                format: FORMAT,
                offset: 0,
                message: format!(
                    "a rosbag2 layout logsql does not know: the topics table has no column {col}"
                ),
            });
        }
    }
    if tables.contains("schema") {
        layout.schema = conn
            .query_row(
                "SELECT schema_version, ros_distro FROM schema ORDER BY schema_version DESC LIMIT 1",
                [],
                |r| Ok((r.get::<_, i64>(0)?, r.get::<_, String>(1).unwrap_or_default())),
            )
            .optional()
            .unwrap_or(None);
    }
    for index in indexes {
        let first: Option<String> = conn
            .query_row(
                &format!(
                    "SELECT name FROM pragma_index_info({}) ORDER BY seqno LIMIT 1",
                    quote(&index)
                ),
                [],
                |r| r.get(0),
            )
            .optional()
            .map_err(err)?;
        if first.as_deref() == Some("timestamp") {
            layout.time_index = Some(index);
        }
    }
    layout.page_size = conn
        .query_row("PRAGMA page_size", [], |r| r.get::<_, i64>(0))
        .map_err(err)?
        .max(0) as u64;
    Ok(layout)
}

/// Whether `sql` (a `sqlite_master` row's) creates a virtual table (FTS,
/// R*Tree, ...), whose rows come from module code rather than the file.
fn is_virtual(sql: Option<&str>) -> bool {
    let words: Vec<String> = sql
        .unwrap_or("")
        .split_whitespace()
        .take(2)
        .map(str::to_ascii_uppercase)
        .collect();
    words == ["CREATE", "VIRTUAL"]
}

/// `s` as an SQL identifier.
fn quote_ident(s: &str) -> String {
    format!("\"{}\"", s.replace('"', "\"\""))
}

/// `s` as an SQL string literal.
fn quote(s: &str) -> String {
    format!("'{}'", s.replace('\'', "''"))
}

/// The column names of `table`.
fn columns(conn: &Connection, table: &str) -> rusqlite::Result<HashSet<String>> {
    let mut stmt = conn.prepare(&format!(
        "SELECT name FROM pragma_table_info({})",
        quote(table)
    ))?;
    let names = stmt.query_map([], |r| r.get::<_, String>(0))?;
    names.collect()
}

/// One row of `topics`.
#[derive(Debug, Clone)]
pub struct TopicRow {
    /// `id`.
    pub id: i64,
    /// `name`.
    pub name: String,
    /// `type` (`std_msgs/msg/String`).
    pub type_name: String,
    /// `serialization_format` (`cdr`).
    pub serialization_format: String,
    /// `offered_qos_profiles` (YAML text), where stored.
    pub qos: Option<String>,
    /// `type_description_hash`, where stored.
    pub(crate) type_hash: Option<String>,
}

/// Every row of `topics`, by id.
pub fn topics(conn: &Connection, layout: &Layout, name: &str) -> Result<Vec<TopicRow>> {
    let err = |e| sql_err(name, e);
    let opt = |c: &str| {
        if layout.topic_columns.contains(c) {
            c.to_string()
        } else {
            "NULL".to_string()
        }
    };
    let format = if layout.topic_columns.contains("serialization_format") {
        "serialization_format"
    } else {
        "'cdr'"
    };
    let sql = format!(
        "SELECT id, name, type, {format}, {}, {} FROM topics ORDER BY id",
        opt("offered_qos_profiles"),
        opt("type_description_hash")
    );
    let mut stmt = conn.prepare(&sql).map_err(err)?;
    let rows = stmt
        .query_map([], |r| {
            Ok(TopicRow {
                id: r.get(0)?,
                name: text(r.get_ref(1)?),
                type_name: text(r.get_ref(2)?),
                serialization_format: text(r.get_ref(3)?),
                qos: r
                    .get_ref(4)?
                    .as_str_or_null()
                    .ok()
                    .flatten()
                    .map(str::to_string),
                type_hash: r
                    .get_ref(5)?
                    .as_str_or_null()
                    .ok()
                    .flatten()
                    .map(str::to_string),
            })
        })
        .map_err(err)?;
    rows.collect::<rusqlite::Result<Vec<_>>>().map_err(err)
}

/// A text (or blob) value as a string, lossily; anything else empty.
fn text(v: rusqlite::types::ValueRef<'_>) -> String {
    use rusqlite::types::ValueRef;
    match v {
        ValueRef::Text(b) | ValueRef::Blob(b) => String::from_utf8_lossy(b).into_owned(),
        ValueRef::Integer(i) => i.to_string(),
        _ => String::new(),
    }
}

/// `message_definitions`: per type, (encoding, definition text).
pub fn definitions(conn: &Connection, name: &str) -> Result<BTreeMap<String, (String, String)>> {
    let err = |e| sql_err(name, e);
    let mut stmt = conn
        .prepare("SELECT topic_type, encoding, encoded_message_definition FROM message_definitions")
        .map_err(err)?;
    let rows = stmt
        .query_map([], |r| {
            Ok((
                text(r.get_ref(0)?),
                (text(r.get_ref(1)?), text(r.get_ref(2)?)),
            ))
        })
        .map_err(err)?;
    rows.collect::<rusqlite::Result<_>>().map_err(err)
}

/// The newest `metadata.metadata` text (the bag's metadata.yaml as stored in
/// the database by newer rosbag2), if any.
pub(crate) fn stored_metadata(conn: &Connection) -> Option<String> {
    conn.query_row(
        "SELECT metadata FROM metadata ORDER BY id DESC LIMIT 1",
        [],
        |r| r.get::<_, String>(0),
    )
    .optional()
    .ok()
    .flatten()
}

/// One aggregate over `messages` (`min(timestamp)`, `count(*)`, ...), `None` when empty.
pub fn aggregate(conn: &Connection, expr: &str, name: &str) -> Result<Option<i64>> {
    conn.query_row(&format!("SELECT {expr} FROM messages"), [], |r| {
        r.get::<_, Option<i64>>(0)
    })
    .map_err(|e| sql_err(name, e))
}

/// `count(*)`, `min(timestamp)` and `max(timestamp)` of `messages` in one pass.
pub(crate) fn count_and_bounds(
    conn: &Connection,
    name: &str,
) -> Result<(i64, Option<i64>, Option<i64>)> {
    conn.query_row(
        "SELECT count(*), min(timestamp), max(timestamp) FROM messages",
        [],
        |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)),
    )
    .map_err(|e| sql_err(name, e))
}

/// Per `topic_id` of `messages`: (count, first timestamp, last timestamp), in
/// one pass over the table (SQLite reads each row's header, never the pages a
/// large `data` blob overflows to).
pub(crate) fn topic_stats(conn: &Connection, name: &str) -> Result<BTreeMap<i64, (i64, i64, i64)>> {
    let err = |e| sql_err(name, e);
    let mut stmt = conn
        .prepare(
            "SELECT topic_id, count(*), min(timestamp), max(timestamp) FROM messages GROUP BY topic_id",
        )
        .map_err(err)?;
    let rows = stmt
        .query_map([], |r| Ok((r.get(0)?, (r.get(1)?, r.get(2)?, r.get(3)?))))
        .map_err(err)?;
    rows.collect::<rusqlite::Result<_>>().map_err(err)
}

/// The first and last `timestamp` of topic `id`: the first matching row from
/// either end of the timestamp index `index` (named, so that SQLite's planner,
/// which has no statistics on a rosbag2 database, does not sort the table).
pub(crate) fn topic_bounds(
    conn: &Connection,
    index: &str,
    id: i64,
    name: &str,
) -> Result<(Option<i64>, Option<i64>)> {
    let one = |order: &str| {
        conn.query_row(
            &format!(
                "SELECT timestamp FROM messages INDEXED BY {} WHERE topic_id = ?1 \
                 ORDER BY timestamp {order} LIMIT 1",
                quote_ident(index)
            ),
            [id],
            |r| r.get::<_, i64>(0),
        )
        .optional()
        .map_err(|e| sql_err(name, e))
    };
    Ok((one("ASC")?, one("DESC")?))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::io::{BytesReader, FileReader};

    /// A rosbag2-like database at `path`: `n` rows of `len`-byte blobs whose
    /// bytes depend on the row (most rows overflow to several pages).
    fn write_db(path: &Path, n: i64, len: usize) {
        let c = Connection::open(path).unwrap();
        c.execute_batch(
            "CREATE TABLE topics(id INTEGER PRIMARY KEY, name TEXT, type TEXT, serialization_format TEXT);
             CREATE TABLE messages(id INTEGER PRIMARY KEY, topic_id INTEGER, timestamp INTEGER, data BLOB);
             CREATE INDEX timestamp_idx ON messages (timestamp ASC);
             INSERT INTO topics VALUES (1, '/a', 'std_msgs/msg/String', 'cdr');",
        )
        .unwrap();
        let mut stmt = c
            .prepare("INSERT INTO messages(topic_id, timestamp, data) VALUES (1, ?1, ?2)")
            .unwrap();
        for i in 0..n {
            let blob: Vec<u8> = (0..len).map(|j| (i as usize * 7 + j * 13) as u8).collect();
            stmt.execute(rusqlite::params![i * 1000, blob]).unwrap();
        }
    }

    #[test]
    fn connections_are_reused_per_db_path_only() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("p_0.db3");
        write_db(&path, 10, 100);
        let file = FileReader::open(&path).unwrap();
        let db = db_path(&file, &Default::default()).unwrap();
        // SAFETY: only the handle's address is compared, never dereferenced.
        let handle = |c: &Pooled| unsafe { c.handle() } as usize;
        let first = connect(&db, "p_0.db3").unwrap();
        let h = handle(&first);
        // In use: a second connection is a new one.
        let second = connect(&db, "p_0.db3").unwrap();
        assert_ne!(handle(&second), h);
        drop(second);
        drop(first);
        // Returned: the same db path gets the most recent idle one back.
        let again = connect(&db, "p_0.db3").unwrap();
        assert_eq!(handle(&again), h);
        assert_eq!(
            again
                .query_row("SELECT count(*) FROM messages", [], |r| r.get::<_, i64>(0))
                .unwrap(),
            10
        );
        let cache: i64 = again
            .query_row("PRAGMA cache_size", [], |r| r.get(0))
            .unwrap();
        assert_eq!(cache, -CACHE_KIB);
        drop(again);
        // The same file summarised again (a new db path) gets a new connection.
        let db2 = db_path(&file, &Default::default()).unwrap();
        let other = connect(&db2, "p_0.db3").unwrap();
        assert_ne!(handle(&other), h);
        drop(other);
        // A temporary copy's connection is not kept.
        let bytes = std::fs::read(&path).unwrap();
        let copy = db_path(&BytesReader::new("mem.db3", bytes), &Default::default()).unwrap();
        assert!(copy.copied);
        let c = connect(&copy, "mem.db3").unwrap();
        assert!(c.key.is_none());
        assert_eq!(
            c.query_row("SELECT count(*) FROM messages", [], |r| r.get::<_, i64>(0))
                .unwrap(),
            10
        );
    }
}
