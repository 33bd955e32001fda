//! Command-line arguments (clap derive).
//!
//! `logsql [OPTIONS] [SQL]` runs statements (or opens the shell when there are
//! none); subcommands cover what is not a query: `info`, `export`, and shortcuts
//! for the summary table functions.

use std::path::PathBuf;

use clap::{Parser, Subcommand, ValueEnum};

const AFTER_HELP: &str = "\
Tables:
  SELECT ... FROM 'run.mcap'              a file, directory or glob ('logs/*.mcap'); format from content
  CREATE EXTERNAL TABLE t STORED AS MCAP LOCATION 'logs/'
  topics('p'), chunks('p'), attachments('p'), metadata('p'), channels('p')   summary table functions
  series('spot.bddf'), pod('spot.bddf', 'imu/accel'), positions('town.log'), actors('town.log'), ...
  read_topic('p', '/imu' [, 'flatten'])   one topic decoded: every message field a typed column
  read_points('p', '/lidar')              a point-cloud topic: log_time, frame_id, point_count, points
  transforms('p')                         every /tf transform; tf_lookup(file, 'map', 'base_link', time) a pose
  Columns: topic, log_time, publish_time, sequence, message_type, message_encoding, data, file
           (+ frame, elapsed for CARLA; additional_indexes for BDDF)

Examples:
  logsql \"SELECT topic, count(*) AS n FROM 'run.mcap' GROUP BY topic ORDER BY topic\"
  logsql --format csv \"SELECT topic, log_time FROM 'logs/' WHERE topic = '/tf' LIMIT 10\"
  logsql -f queries/04_rates.sql
  logsql info run.mcap
  logsql check runs/ --expect EXPECT.toml --format junit
  logsql export run.mcap tf.parquet --topic /tf --start 2022-11-08T04:07:03Z
  logsql \"COPY (SELECT * FROM 'run.mcap' WHERE topic = '/tf') TO 'tf.parquet'\"
  logsql \"SELECT avg(linear_acceleration.x) FROM read_topic('run.mcap', '/imu')\"
  logsql export run.mcap imu.parquet --topic /imu --decode
  logsql export run.bag clouds/ --topic /lidar --as pcd
  logsql plot \"SELECT log_time, linear_acceleration FROM read_topic('run.mcap', '/imu')\" -o imu.png
  logsql                                    (interactive shell; \\q to quit)

Timestamps print as RFC 3339 UTC. Every readable message of a damaged file is returned first;
then an unfinished recording (a file that ends early) is a warning and corruption an error
(--on-error error makes both errors, --on-error warn both warnings).";

/// `logsql`: SQL over robot log files.
#[derive(Debug, Parser)]
#[command(
    name = "logsql",
    version,
    about = "SQL over robot and simulator log files (MCAP, ROS1 bag, ROS 2 bag, Apollo record, BDDF, CARLA) with Apache DataFusion"
)]
#[command(after_help = AFTER_HELP)]
pub struct Args {
    /// SQL to run: one or more statements separated by `;`. Without SQL, -c
    /// and -f, opens an interactive shell (or reads statements from stdin
    /// when it is not a terminal).
    #[arg(value_name = "SQL")]
    pub sql: Option<String>,

    /// Runs the statements in FILE (repeatable; files run before SQL).
    #[arg(short = 'f', long = "file", value_name = "FILE")]
    pub files: Vec<PathBuf>,

    /// Runs SQL (repeatable, in order; after -f files, before the positional SQL).
    #[arg(short = 'c', long = "command", value_name = "SQL")]
    pub commands: Vec<String>,

    /// Writes query results to FILE (replaced if it exists) instead of stdout.
    #[arg(short = 'o', long = "output", value_name = "FILE")]
    pub output: Option<PathBuf>,

    /// No banner and no row-count / timing lines.
    #[arg(short = 'q', long)]
    pub quiet: bool,

    /// Logs more on stderr: `-v` what a command does (the SQL an export
    /// runs, images left out, ...), `-vv` debugging detail, `-vvv` tracing.
    /// Without it the level is `warn`, or what `LOGSQL_LOG` names.
    #[arg(short = 'v', long, action = clap::ArgAction::Count, global = true)]
    pub verbose: u8,

    /// In `table` output, show at most N rows of a result and count the rest
    /// (`0` or `inf`: every row).
    #[arg(long, value_name = "N", default_value = "40", value_parser = parse_max_rows, global = true)]
    pub max_rows: MaxRows,

    /// Output format of query results.
    #[arg(long, value_enum, default_value_t = Format::Table, global = true)]
    pub format: Format,

    /// What a damaged file does to a query (after every readable row was
    /// delivered): `auto` (default) warns of an unfinished recording and fails on
    /// corruption, `error` fails on any damage, `warn` only warns.
    #[arg(long, value_enum, value_name = "POLICY", global = true)]
    pub on_error: Option<OnErrorPolicy>,

    /// Number of partitions DataFusion scans and executes in parallel
    /// (default: the number of CPU cores).
    #[arg(long, value_name = "N", global = true, value_parser = clap::value_parser!(u64).range(1..))]
    pub target_partitions: Option<u64>,

    /// Protobuf `FileDescriptorSet` file giving the schemas of payloads a log names
    /// only by type (BDDF); repeatable. Sets `logsql.descriptor_set`.
    #[arg(long = "descriptors", value_name = "FILE", global = true)]
    pub descriptors: Vec<PathBuf>,

    /// Directory of ROS 2 `.msg` files (`<dir>/<pkg>/msg/<Type>.msg`, e.g.
    /// `/opt/ros/humble/share`) for decoding `.db3` bags that store no message
    /// definitions; repeatable. Sets `logsql.msg_path`.
    #[arg(long = "msg-path", value_name = "DIR", global = true)]
    pub msg_path: Vec<PathBuf>,

    /// Skip whole-file checksums (BDDF SHA1), which a full scan verifies in
    /// its pass and `logsql info` by reading the file. Sets
    /// `logsql.verify_checksums = 'never'`.
    #[arg(long, global = true)]
    pub no_verify: bool,

    /// In `table` output, cut cells longer than N characters (0: never).
    #[arg(long, value_name = "N", default_value_t = 64, global = true)]
    pub max_width: usize,

    /// Runs queries on these datafusion-distributed workers (`logsql worker`):
    /// comma-separated `host:port` or URLs. This process plans and coordinates;
    /// the workers scan. Needs the `distributed` feature.
    #[cfg(feature = "distributed")]
    #[arg(long, value_name = "ADDR", value_delimiter = ',', global = true)]
    pub workers: Vec<String>,

    /// The workers' shared token, in a file (its first line); without it,
    /// `LOGSQL_WORKER_TOKEN` if set.
    #[cfg(feature = "distributed")]
    #[arg(long, value_name = "FILE", global = true)]
    pub worker_token_file: Option<std::path::PathBuf>,

    /// The CA that signs the workers' certificates (PEM), for `https://`
    /// worker URLs; without it the system's roots.
    #[cfg(feature = "distributed")]
    #[arg(long, value_name = "FILE", global = true)]
    pub worker_tls_ca: Option<std::path::PathBuf>,

    /// This coordinator's certificate (PEM), for workers that require client
    /// certificates (mutual TLS); with `--worker-tls-key`.
    #[cfg(feature = "distributed")]
    #[arg(long, value_name = "FILE", global = true, requires = "worker_tls_key")]
    pub worker_tls_cert: Option<std::path::PathBuf>,

    /// The key of `--worker-tls-cert` (PEM).
    #[cfg(feature = "distributed")]
    #[arg(long, value_name = "FILE", global = true, requires = "worker_tls_cert")]
    pub worker_tls_key: Option<std::path::PathBuf>,

    /// A catalog `logsql index` wrote (a directory or object-store prefix):
    /// queries see its tables as `recordings` and `topics`. Sets
    /// `logsql.catalog`. `logsql index` writes to it.
    #[arg(long, value_name = "CAT", global = true)]
    pub catalog: Option<String>,

    /// A directory of events (local or an object-store prefix), for a team
    /// without a catalog: queries see them as `events`, `logsql events`
    /// appends to them. Sets `logsql.events`. Without it, `--catalog CAT`
    /// keeps them in `CAT/events/`.
    #[arg(long, value_name = "DIR", global = true)]
    pub events: Option<String>,

    /// What to do instead of running SQL.
    #[command(subcommand)]
    pub command: Option<Command>,
}

/// `logsql check`'s arguments.
#[derive(Debug, clap::Args)]
pub struct CheckArgs {
    /// Recordings: files, directories, globs or object-store URLs (none with
    /// --catalog: every recording of the catalog).
    #[arg(value_name = "SOURCE")]
    pub sources: Vec<String>,
    /// The expectations (TOML; see docs/check.md).
    #[arg(long, value_name = "EXPECT.toml")]
    pub expect: PathBuf,
}

/// `logsql events`'s actions.
#[derive(Debug, Subcommand)]
pub enum EventsCommand {
    /// Appends one event.
    Add(EventAddArgs),
    /// Prints the events, oldest first, as any query's result (--format).
    List,
    /// Writes the events as JSON lines in the shape Foxglove's events API
    /// uses (deviceName, start, end, metadata, with logsql's id, type,
    /// recording and createdAt).
    Export {
        /// The file to write (replaced when complete); without it, stdout.
        #[arg(short = 'o', long = "output", value_name = "FILE")]
        output: Option<PathBuf>,
        /// Exactly Foxglove's create-an-event bodies: type and recording go
        /// into metadata, id and createdAt are left out.
        #[arg(long)]
        foxglove: bool,
    },
    /// Appends the events of JSON-lines files (as `export` writes them, or
    /// Foxglove's own: `device.name`, `deviceId`, a JSON array), each file
    /// whole or, on an error naming its line, not at all.
    Import {
        /// JSON-lines files (`-`: stdin).
        #[arg(required = true, value_name = "FILE")]
        files: Vec<PathBuf>,
    },
}

/// `logsql events add`'s arguments.
#[derive(Debug, clap::Args)]
pub struct EventAddArgs {
    /// What kind of event it is (`hard_brake`).
    #[arg(long = "type", value_name = "TYPE")]
    pub kind: Option<String>,
    /// When it started: RFC 3339 (`2024-05-01T12:00:03.5Z`) or a number with
    /// its unit (`1714564803s`, `...ms`, `...ns`).
    #[arg(long, value_name = "TIME")]
    pub start: String,
    /// When it ended (default: the start).
    #[arg(long, value_name = "TIME")]
    pub end: Option<String>,
    /// The device it belongs to.
    #[arg(long, value_name = "NAME")]
    pub device: Option<String>,
    /// The recording it belongs to (its location as `recordings` names it).
    #[arg(long, value_name = "LOCATION")]
    pub recording: Option<String>,
    /// A property, `KEY=VALUE`; repeatable.
    #[arg(long = "property", short = 'p', value_name = "KEY=VALUE", value_parser = parse_property)]
    pub properties: Vec<(String, String)>,
    /// Its id (default: a new UUID).
    #[arg(long, value_name = "ID")]
    pub id: Option<String>,
}

/// Parses `KEY=VALUE`.
fn parse_property(s: &str) -> Result<(String, String), String> {
    match s.split_once('=') {
        Some((k, v)) if !k.is_empty() => Ok((k.to_string(), v.to_string())),
        _ => Err(format!("'{s}' is not KEY=VALUE")),
    }
}

/// Result output formats.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum Format {
    /// An aligned text table.
    Table,
    /// CSV with a header line.
    Csv,
    /// One JSON array of objects per result.
    Json,
    /// One JSON object per line.
    Ndjson,
    /// JUnit XML (`logsql check` only).
    Junit,
}

/// The value of `--max-rows`: a row limit, or `None` for every row.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct MaxRows(pub Option<usize>);

/// Parses `--max-rows`: a count, with `0` and `inf` meaning no limit.
fn parse_max_rows(s: &str) -> Result<MaxRows, String> {
    if s.eq_ignore_ascii_case("inf") {
        return Ok(MaxRows(None));
    }
    match s.parse::<usize>() {
        Ok(0) => Ok(MaxRows(None)),
        Ok(n) => Ok(MaxRows(Some(n))),
        Err(_) => Err(format!(
            "'{s}' is not a row count (a number, 0 or inf for all)"
        )),
    }
}

/// Values of `--on-error`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum OnErrorPolicy {
    /// An unfinished recording (a file that ends early) warns; corruption fails
    /// the query after every readable row (the default).
    Auto,
    /// Any damage fails the query, after every readable row.
    Error,
    /// Log a warning and let the query succeed.
    Warn,
}

impl OnErrorPolicy {
    /// The value of the `logsql.on_error` session option.
    pub fn as_option(self) -> &'static str {
        match self {
            Self::Auto => "auto",
            Self::Error => "error",
            Self::Warn => "warn",
        }
    }
}

/// Subcommands.
#[derive(Debug, Subcommand)]
pub enum Command {
    /// Indexes recordings into a catalog (--catalog CAT, a directory or an
    /// object-store prefix): one row per recording, topic and chunk, read
    /// from summaries and indexes, kept as Parquet tables that `recordings`,
    /// `topics` (with --catalog), DuckDB and pyarrow read. A later run reads
    /// only new and changed recordings and drops deleted ones; each run's
    /// result appears at once, whole, or not at all.
    Index(IndexArgs),
    /// Summarises log files: format, size, time range, chunks and compression, topics.
    Info {
        /// Log files (a directory stands for the log files under it), or
        /// object-store URLs (`s3://bucket/run.mcap`, `https://host/run.bag`, a prefix ending in `/`).
        #[arg(required = true, value_name = "FILE")]
        files: Vec<String>,
        /// Also print the detailed listing where the format has one (CARLA:
        /// every frame's events, like `show_recorder_file_info(name, True)`).
        #[arg(long)]
        all: bool,
        /// Leave out the per-topic timelines (message rate over the recording,
        /// and gaps), which read every message's time from the index.
        #[arg(long)]
        no_timeline: bool,
        /// Draw timelines with ASCII characters instead of Unicode blocks.
        #[arg(long)]
        ascii: bool,
    },
    /// Writes the messages of a log (optionally filtered) to a Parquet file
    /// (zstd), or to an MCAP file when OUTPUT ends in `.mcap`.
    ///
    /// Runs `SELECT * FROM '<INPUT>' WHERE ...` through the engine, so topic and
    /// time filters skip whole chunks. SQL can do the same with
    /// `COPY (SELECT ...) TO 'out.parquet'` (or `'out.mcap'`). MCAP output is
    /// written in log_time order, with each channel's schema from its source file.
    Export(ExportArgs),
    /// Draws a query's result as a chart: the first column is the x axis
    /// (timestamps as UTC times), every other numeric column a series (struct
    /// columns: one per numeric field). With -o, a PNG or SVG image; without,
    /// a text chart. Long results are reduced to each pixel column's first,
    /// last, lowest and highest point, so spikes stay visible.
    Plot(PlotArgs),
    /// Lists the topics of a log: `SELECT * FROM topics('PATH')`.
    Topics {
        /// A log file, directory or glob.
        path: String,
    },
    /// Lists the chunks of a log: `SELECT * FROM chunks('PATH')`.
    Chunks {
        /// A log file, directory or glob.
        path: String,
    },
    /// Lists the attachments of a log: `SELECT * FROM attachments('PATH')`.
    Attachments {
        /// A log file, directory or glob.
        path: String,
    },
    /// Lists the metadata records of a log: `SELECT * FROM metadata('PATH')`.
    Metadata {
        /// A log file, directory or glob.
        path: String,
    },
    /// Serves SQL over the Postgres wire protocol until stopped, for psql,
    /// Grafana, DBeaver, pandas and other Postgres clients: every table
    /// function, `read_topic` and ASOF JOIN as in the CLI, reading only below
    /// the --root directories, writing nothing unless --allow-write.
    Serve(ServeArgs),
    /// Serves the Model Context Protocol over stdin and stdout for one
    /// language-model agent (Claude Desktop, an IDE, the MCP Inspector):
    /// tools that list, describe and query the recordings below the --root
    /// directories and show camera frames, read-only and within the limits.
    Mcp(McpArgs),
    /// Serves a datafusion-distributed worker until stopped: a coordinator
    /// (`logsql --workers ADDR,... "SQL"`) sends it the scans of its queries.
    /// It reads files and object stores with its own paths and environment,
    /// only below its data roots, and answers only peers with the token or a
    /// certificate its CA signed.
    #[cfg(feature = "distributed")]
    Worker(WorkerArgs),
    /// Checks log files and lists each problem with where it is (byte offset,
    /// log time): damaged or missing indexes, checksum mismatches, chunks and
    /// index records that disagree, messages outside their chunk's times,
    /// overlapping chunks (information), a cut tail, an unclosed recording,
    /// unknown records. Exit status 0 healthy, 1 problems, 2 unreadable.
    Doctor {
        /// Log files; a directory stands for the log files under it.
        #[arg(required = true, value_name = "FILE|DIR")]
        paths: Vec<String>,
    },
    /// Adds, lists, exports and imports events (moments kept beside the
    /// recordings: a device or recording, start, end, type, properties), in
    /// --events DIR or the --catalog's `events/`. SQL reads them as `events`
    /// and appends with `INSERT INTO events SELECT ...`.
    #[command(subcommand)]
    Events(EventsCommand),
    /// Checks recordings against expectations (EXPECT.toml: required topics,
    /// durations, per-topic rates, gaps, counts, header stamps, and doctor's
    /// health): a report per recording as text, --format json / ndjson or
    /// --format junit (JUnit XML for CI). Exit status 0 every recording
    /// passes, 1 one fails, 2 one cannot be read.
    Check(CheckArgs),
    /// Writes every readable message of a (damaged) log into a valid,
    /// indexed, time-sorted MCAP file with its channels, schemas, metadata
    /// and attachments, and reports what was lost. Never writes INPUT; OUTPUT
    /// appears only when complete.
    Recover(RecoverArgs),
    /// Draws a contact sheet of a camera topic: frames spread evenly over its
    /// time span, each labelled with its log time, as one PNG.
    Frames(FramesArgs),
    /// Writes a LeRobot v3 dataset from recordings, as a TOML spec describes
    /// it (input, fps, features as topic + field, cameras, task): the spec
    /// becomes `COPY (...) TO 'OUT_DIR' STORED AS LEROBOT`, which
    /// --print-sql prints.
    Dataset(DatasetArgs),
    /// Writes one complete recording per moment: the intervals where a
    /// condition over a topic holds (`intervals()`), padded by --before and
    /// --after (padded windows that overlap merge), every message of the
    /// window as an MCAP file, a ROS1 bag or a ROS 2 bag directory in DIR.
    Clips(ClipsArgs),
    /// Writes one window of a recording (every message from --start to
    /// --end, both included) as OUT.mcap, OUT.bag or a ROS 2 bag directory,
    /// with its channels, schemas, metadata and attachments.
    Clip(ClipArgs),
}

/// Arguments of `logsql clip`.
#[derive(Debug, clap::Args)]
pub struct ClipArgs {
    /// A recording, directory, glob or object-store URL.
    #[arg(value_name = "SOURCE")]
    pub source: String,
    /// The window's first log time (RFC 3339, or a number with ns, us, ms or s).
    #[arg(long, value_name = "TIME")]
    pub start: String,
    /// The window's last log time (included).
    #[arg(long, value_name = "TIME")]
    pub end: String,
    /// Only these topics (repeatable; default: every topic).
    #[arg(long = "topics", value_name = "TOPIC")]
    pub topics: Vec<String>,
    /// OUT.mcap, OUT.bag, or a ROS 2 bag directory.
    #[arg(short = 'o', long = "output", value_name = "OUT")]
    pub output: PathBuf,
}

/// Arguments of `logsql clips`.
#[derive(Debug, clap::Args)]
pub struct ClipsArgs {
    /// A recording, directory, glob or object-store URL.
    #[arg(value_name = "SOURCE")]
    pub source: String,
    /// The topic the condition judges.
    #[arg(long, value_name = "TOPIC")]
    pub topic: String,
    /// A SQL condition over the topic's decoded fields, as `read_topic`
    /// names them (`twist.twist.linear.x > 2.0`).
    #[arg(long, value_name = "CONDITION")]
    pub when: String,
    /// Moments this close (`200 ms`) merge into one.
    #[arg(long, value_name = "DURATION")]
    pub max_gap: Option<String>,
    /// Moments shorter than this are left out.
    #[arg(long, value_name = "DURATION")]
    pub min_duration: Option<String>,
    /// Each clip starts this long before its moment (`5 s`).
    #[arg(long, value_name = "DURATION")]
    pub before: Option<String>,
    /// Each clip ends this long after its moment.
    #[arg(long, value_name = "DURATION")]
    pub after: Option<String>,
    /// Only these topics in the clips (repeatable; default: every topic).
    #[arg(long = "topics", value_name = "TOPIC")]
    pub topics: Vec<String>,
    /// The directory the clips are written to (created if missing).
    #[arg(short = 'o', long = "output", value_name = "DIR")]
    pub output: PathBuf,
    /// `mcap` (default), `bag` or `db3`.
    #[arg(long = "as", value_name = "FORMAT")]
    pub as_format: Option<String>,
}

/// Arguments of `logsql index`.
#[derive(Debug, clap::Args)]
pub struct IndexArgs {
    /// Directories, globs or object-store URLs of recordings (any format).
    #[arg(required = true, value_name = "SOURCE")]
    pub sources: Vec<String>,
    /// List what would be added, changed and removed; write nothing.
    #[arg(long)]
    pub dry_run: bool,
    /// The metadata key (or hive directory key, `robot=r7/`) naming each
    /// recording's device. Without it: Foxglove's device metadata, else a
    /// hive key `device` or `robot`.
    #[arg(long, value_name = "KEY")]
    pub device_key: Option<String>,
}

/// Arguments of `logsql dataset`.
#[derive(Debug, clap::Args)]
pub struct DatasetArgs {
    /// The dataset spec (TOML; see docs/datasets.md).
    pub spec: PathBuf,
    /// The dataset directory to write (must not exist, or be empty).
    #[arg(short = 'o', long = "output", value_name = "OUT_DIR")]
    pub output: PathBuf,
    /// Prints the SQL statement the spec becomes instead of running it.
    #[arg(long)]
    pub print_sql: bool,
    /// Leaves out an episode with a problem (a vector whose length changes,
    /// a frame whose size changes, a topic missing from its recording, ...)
    /// and lists it, instead of failing.
    #[arg(long)]
    pub skip_bad_episodes: bool,
}

/// Arguments of `logsql worker`.
#[cfg(feature = "distributed")]
#[derive(Debug, clap::Args)]
pub struct WorkerArgs {
    /// Address to listen on (gRPC).
    #[arg(long, value_name = "ADDR", default_value = "127.0.0.1:50051")]
    pub listen: std::net::SocketAddr,
    /// The shared token peers must send, in a file (its first line, at least
    /// 16 characters); without it, `LOGSQL_WORKER_TOKEN` if set.
    #[arg(long, value_name = "FILE")]
    pub token_file: Option<std::path::PathBuf>,
    /// This worker's certificate (PEM): it serves TLS (`https://` URLs).
    #[arg(long, value_name = "FILE", requires = "tls_key")]
    pub tls_cert: Option<std::path::PathBuf>,
    /// The key of `--tls-cert` (PEM).
    #[arg(long, value_name = "FILE", requires = "tls_cert")]
    pub tls_key: Option<std::path::PathBuf>,
    /// The cluster CA (PEM): peers must present a certificate it signed
    /// (mutual TLS), and other workers' certificates are checked against it.
    #[arg(long, value_name = "FILE", requires = "tls_cert")]
    pub tls_ca: Option<std::path::PathBuf>,
    /// A directory or object-store prefix (`s3://bucket/runs`) plans may read
    /// (repeatable, at least one); files elsewhere are refused.
    #[arg(long, value_name = "DIR|URL", required = true)]
    pub data_root: Vec<String>,
    /// Memory one query's part on this worker may hold at once (`512MiB`,
    /// `2GB`); a query needing more fails with a resources-exhausted error.
    #[arg(long, value_name = "SIZE", value_parser = logsql::ops::units::parse_size)]
    pub memory_limit: Option<usize>,
    /// Serves without a token or mutual TLS: anyone who reaches the port can
    /// run queries over the data roots. For a trusted network only.
    #[arg(long)]
    pub insecure: bool,
}

/// What `logsql recover` writes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum RecoverTo {
    /// An indexed, chunked MCAP file.
    Mcap,
    /// A reindexed ROS1 bag (format 2.0).
    Bag,
    /// A ROS 2 bag directory: one `.db3` and its `metadata.yaml`.
    Db3,
}

/// Arguments of `logsql recover`.
#[derive(Debug, clap::Args)]
pub struct RecoverArgs {
    /// The damaged log: a file, or a ROS 2 bag directory.
    #[arg(value_name = "INPUT")]
    pub input: String,
    /// The file to write (replaced if it exists), or with `--to db3` the
    /// ROS 2 bag directory (new, or empty).
    #[arg(value_name = "OUTPUT")]
    pub output: PathBuf,
    /// What to write: an MCAP file (the default), a ROS1 bag 2.0 (the
    /// default for an OUTPUT named `.bag`; ROS1 input only) or a ROS 2 bag
    /// directory with SQLite storage (CDR input only).
    #[arg(long, value_name = "FORMAT")]
    pub to: Option<RecoverTo>,
    /// Memory the time sort of an input out of time order may hold before
    /// it spills to temporary files (`64MiB`, `1GiB`).
    #[arg(long, value_name = "SIZE", value_parser = logsql::ops::units::parse_size, default_value = "64MiB")]
    pub memory_limit: usize,
}

/// Arguments of `logsql serve`.
#[derive(Debug, clap::Args)]
pub struct ServeArgs {
    /// A directory (or object-store prefix, `s3://bucket/runs/`) queries may
    /// read below; repeatable, at least one. Paths outside every root, `..`
    /// and links out of a root are refused.
    #[arg(long = "root", value_name = "DIR|URL", required = true)]
    pub roots: Vec<String>,
    /// Names a log file, directory or glob (below a root) as a table:
    /// `--table runs=/data/runs/`; repeatable. Listed by `SHOW TABLES`,
    /// `information_schema` and `pg_catalog` (psql's `\dt`).
    #[arg(long = "table", value_name = "NAME=PATH")]
    pub tables: Vec<String>,
    /// Address of the Postgres-wire listener (port 0: any free port, printed
    /// at start).
    #[arg(long, value_name = "ADDR", default_value = "127.0.0.1:5432")]
    pub pg: std::net::SocketAddr,
    /// Also serves Arrow Flight SQL (ADBC, `pyarrow.flight`, JDBC) on ADDR
    /// (`127.0.0.1:50051`; port 0: any free port, printed at start).
    #[arg(long, value_name = "ADDR")]
    pub flight: Option<std::net::SocketAddr>,
    /// Also serves language-model agents over MCP (streamable HTTP at
    /// `http://ADDR/mcp`, the tools of `logsql mcp`) on ADDR
    /// (`127.0.0.1:8765`; port 0: any free port, printed at start). Beyond
    /// loopback it needs --password-file: agents send the password as a
    /// bearer token.
    #[arg(long, value_name = "ADDR")]
    pub mcp: Option<std::net::SocketAddr>,
    /// File holding the password clients must give (SCRAM-SHA-256 over
    /// Postgres wire, basic auth then a bearer token over Flight SQL; the
    /// first line, without its line break). Without it, any client that
    /// reaches the address may query.
    #[arg(long, value_name = "FILE")]
    pub password_file: Option<PathBuf>,
    /// The user name clients log in as when --password-file is given.
    #[arg(long, value_name = "NAME", default_value = "logsql")]
    pub user: String,
    /// TLS certificate chain (PEM); with --tls-key, Postgres clients may
    /// (and with --tls-only must) connect over TLS; Flight SQL is TLS only.
    #[arg(long, value_name = "FILE", requires = "tls_key")]
    pub tls_cert: Option<PathBuf>,
    /// TLS private key (PEM, PKCS#8 or PKCS#1 or SEC1).
    #[arg(long, value_name = "FILE", requires = "tls_cert")]
    pub tls_key: Option<PathBuf>,
    /// Refuses clients that do not connect over TLS.
    #[arg(long, requires = "tls_cert")]
    pub tls_only: bool,
    /// Allows `COPY ... TO` (and `INSERT`) writing files below DIR only.
    #[arg(long, value_name = "DIR")]
    pub allow_write: Option<String>,
    /// Memory a query may hold at once (`512MiB`, `2GB`); a query needing
    /// more fails with a resources-exhausted error.
    #[arg(long, value_name = "SIZE", value_parser = logsql::ops::units::parse_size)]
    pub memory_limit: Option<usize>,
    /// Time a query may take, waiting for a slot included (`30s`, `5min`;
    /// `0` for none). A client's shorter `statement_timeout` ends its own
    /// queries sooner.
    #[arg(long, value_name = "DURATION", default_value = "10min",
          value_parser = logsql::ops::units::parse_duration)]
    pub query_timeout: std::time::Duration,
    /// Queries that run at once; others wait for a slot (within
    /// --query-timeout).
    #[arg(long, value_name = "N", default_value_t = 8, value_parser = clap::value_parser!(u32).range(1..))]
    pub max_queries: u32,
    /// Client connections open at once; more are refused.
    #[arg(long, value_name = "N", default_value_t = 64, value_parser = clap::value_parser!(u32).range(1..))]
    pub max_connections: u32,
    /// Time a Postgres client has to log in before its connection is
    /// closed (`10s`), so that sockets that never log in cannot hold the
    /// connection slots.
    #[arg(long, value_name = "DURATION", default_value = "10s",
          value_parser = logsql::ops::units::parse_duration)]
    pub login_timeout: std::time::Duration,
    /// Time a logged-in Postgres connection may run no statement before it
    /// is closed (`30s`, `1h`; `0` for none).
    #[arg(long, value_name = "DURATION", default_value = "10min",
          value_parser = logsql::ops::units::parse_duration)]
    pub idle_timeout: std::time::Duration,
}

/// Arguments of `logsql mcp`.
#[derive(Debug, clap::Args)]
pub struct McpArgs {
    /// A directory (or object-store prefix) the agent's queries may read
    /// below; repeatable, at least one. Relative paths an agent names are
    /// taken from the first.
    #[arg(long = "root", value_name = "DIR|URL", required = true)]
    pub roots: Vec<String>,
    /// Memory a query may hold at once (`512MiB`, `2GB`).
    #[arg(long, value_name = "SIZE", value_parser = logsql::ops::units::parse_size)]
    pub memory_limit: Option<usize>,
    /// Time a query may take (`30s`, `5min`; default 60s).
    #[arg(long, value_name = "DURATION", default_value = "60s",
          value_parser = logsql::ops::units::parse_duration)]
    pub query_timeout: std::time::Duration,
    /// Queries that run at once; others wait for a slot.
    #[arg(long, value_name = "N", default_value_t = 4, value_parser = clap::value_parser!(u32).range(1..))]
    pub max_queries: u32,
    /// Adds the tools that write (`export_clip`, `export_dataset`), writing
    /// below DIR only (a local directory).
    #[arg(long, value_name = "DIR")]
    pub allow_write: Option<String>,
}

/// Arguments of `logsql frames`.
#[derive(Debug, clap::Args)]
pub struct FramesArgs {
    /// The log: a file, directory or glob.
    pub input: String,
    /// The camera topic.
    #[arg(long, short = 't', value_name = "TOPIC")]
    pub topic: String,
    /// The contact sheet to write (PNG).
    #[arg(short = 'o', long = "output", value_name = "FILE")]
    pub output: PathBuf,
    /// How many frames, spread evenly over the topic's time span.
    #[arg(long, value_name = "N", default_value_t = 16,
          value_parser = clap::value_parser!(u32).range(1..=100))]
    pub count: u32,
    /// The longer side of each frame on the sheet, in pixels.
    #[arg(long, value_name = "PIXELS", default_value_t = 320,
          value_parser = clap::value_parser!(u32).range(16..=1024))]
    pub size: u32,
}

/// Arguments of `logsql export`.
#[derive(Debug, clap::Args)]
pub struct ExportArgs {
    /// The log to read: a file, directory or glob.
    pub input: String,
    /// The file to write (replaced if it exists): Parquet, or MCAP when the
    /// name ends in `.mcap`.
    pub output: PathBuf,
    /// Keeps only this topic (repeatable).
    #[arg(long = "topic", short = 't', value_name = "TOPIC")]
    pub topics: Vec<String>,
    /// Keeps messages with log_time >= TIME: RFC 3339 (`2022-11-08T04:07:03Z`),
    /// or a time since the epoch with its unit (`1667880423s`, `...ms`, `...us`,
    /// `1667880423000000000ns`) or seconds with a decimal point (`1667880423.0`).
    /// A bare integer is refused (seconds or nanoseconds?).
    #[arg(long, value_name = "TIME")]
    pub start: Option<String>,
    /// Keeps messages with log_time < TIME (same forms as --start).
    #[arg(long, value_name = "TIME")]
    pub end: Option<String>,
    /// Writes decoded message fields as typed (nested) columns instead of raw
    /// `data`: `SELECT * FROM read_topic(INPUT, TOPIC)`. With one --topic,
    /// OUTPUT is the Parquet file; otherwise OUTPUT is a directory that gets one
    /// `<topic>.parquet` per topic (every topic when none is given).
    #[arg(long)]
    pub decode: bool,
    /// With --decode: nested fields as flat dotted columns
    /// (`linear_acceleration.x`), for tools that read no nested Parquet.
    #[arg(long, requires = "decode")]
    pub flatten: bool,
    /// MCAP output: chunk compression, `zstd` (default), `lz4` or `none`.
    #[arg(long, value_name = "ALGO", value_parser = ["zstd", "lz4", "none"])]
    pub compression: Option<String>,
    /// MCAP output: target uncompressed chunk size in bytes (default 1048576).
    #[arg(long, value_name = "BYTES")]
    pub chunk_size: Option<u64>,
    /// MCAP output: leave out the summary section and indexes (a streamed
    /// file; readers then scan it from the start).
    #[arg(long)]
    pub no_summary: bool,
    /// Writes one file per message of the one --topic into the directory
    /// OUTPUT instead, named by its log_time in nanoseconds: `png` or `jpeg`
    /// images of a camera topic (`read_images`), `pcd` (binary PCD v0.7) or
    /// `ply` (binary little-endian PLY) for a point-cloud topic (`read_points`).
    #[arg(long = "as", value_name = "FORMAT", value_enum)]
    pub as_files: Option<FilesFormat>,
    /// For an `.mp4` OUTPUT: frames per second, each the camera's latest image
    /// at that time (default: one frame per message at its own log_time).
    #[arg(long, value_name = "N")]
    pub fps: Option<f64>,
    /// For an `.mp4` OUTPUT: picture quality, 1 (smallest file) to 100 (best).
    #[arg(long, value_name = "Q", value_parser = clap::value_parser!(u8).range(1..=100))]
    pub quality: Option<u8>,
}

/// The per-message file formats of `logsql export --as`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum FilesFormat {
    /// PNG images (lossless).
    Png,
    /// JPEG images.
    Jpeg,
    /// Binary PCD v0.7 (PCL's point-cloud format).
    Pcd,
    /// Binary little-endian PLY.
    Ply,
}

impl FilesFormat {
    /// The name as `--as` takes it.
    pub fn name(self) -> &'static str {
        match self {
            Self::Png => "png",
            Self::Jpeg => "jpeg",
            Self::Pcd => "pcd",
            Self::Ply => "ply",
        }
    }
}

/// Arguments of `logsql plot`.
#[derive(Debug, clap::Args)]
pub struct PlotArgs {
    /// The query to draw (one statement).
    #[arg(value_name = "SQL")]
    pub sql: String,
    /// The image to write, `.png` or `.svg` (replaced if it exists). Without
    /// it, a text chart is printed.
    #[arg(short = 'o', long = "output", value_name = "FILE")]
    pub output: Option<PathBuf>,
    /// How series are drawn.
    #[arg(long, value_enum, default_value_t = Kind::Line)]
    pub kind: Kind,
    /// A title above the chart.
    #[arg(long)]
    pub title: Option<String>,
    /// Image width in pixels (default 1200); for a text chart, characters
    /// (default: the terminal's width, else 100).
    #[arg(long, value_name = "N")]
    pub width: Option<u32>,
    /// Image height in pixels (default 600); for a text chart, lines per series.
    #[arg(long, value_name = "N")]
    pub height: Option<u32>,
    /// Says nothing on stderr about what was drawn.
    #[arg(short = 'q', long)]
    pub quiet: bool,
}

/// The global options a subcommand reads (by clap id); `None`: every one (the
/// summary-table shortcuts run a query and print it like any query).
fn global_options_used(subcommand: &str) -> Option<&'static [&'static str]> {
    match subcommand {
        "info" => Some(&["format", "no_verify"]),
        "doctor" => Some(&["format"]),
        "recover" => Some(&["target_partitions", "descriptors", "msg_path"]),
        "index" => Some(&["catalog", "format"]),
        "events" => Some(&["catalog", "events", "format", "max_rows", "max_width"]),
        "export" | "plot" | "serve" | "frames" | "clips" | "clip" => Some(&[
            "catalog",
            "events",
            "on_error",
            "target_partitions",
            "descriptors",
            "msg_path",
            "no_verify",
        ]),
        _ => None,
    }
}

/// The first global option given on the command line that the subcommand
/// ignores, as an error message: such options are refused rather than
/// silently dropped (`logsql info --format csv` is fine, `export --max-width`
/// is not).
pub fn unused_global_option(matches: &clap::ArgMatches) -> Option<String> {
    use clap::CommandFactory;
    use clap::parser::ValueSource;
    let (name, sub) = matches.subcommand()?;
    let used = global_options_used(name)?;
    let command = Args::command();
    let unused = command.get_arguments().find(|arg| {
        let id = arg.get_id().as_str();
        // Every command logs.
        arg.is_global_set()
            && id != "verbose"
            && !used.contains(&id)
            && [matches, sub]
                .iter()
                .any(|m| m.value_source(id) == Some(ValueSource::CommandLine))
    })?;
    let flag = unused
        .get_long()
        .map_or_else(|| unused.get_id().to_string(), |l| format!("--{l}"));
    let accepted: Vec<String> = command
        .get_arguments()
        .filter(|a| used.contains(&a.get_id().as_str()))
        .filter_map(|a| a.get_long().map(|l| format!("--{l}")))
        .collect();
    Some(format!(
        "{flag} does not apply to `logsql {name}` (of the global options it reads only {})",
        accepted.join(", ")
    ))
}

/// How `logsql plot` draws series.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum Kind {
    /// Points joined by straight lines.
    Line,
    /// Points only.
    Scatter,
    /// Each value held until the next point (signals that change in steps).
    Step,
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::CommandFactory;

    #[test]
    fn clap_definition_is_consistent() {
        Args::command().debug_assert();
    }

    #[test]
    fn sql_and_subcommands_parse() {
        let a = Args::try_parse_from(["logsql", "SELECT 1", "--format", "csv"]).unwrap();
        assert_eq!(a.sql.as_deref(), Some("SELECT 1"));
        assert_eq!(a.format, Format::Csv);
        let a = Args::try_parse_from([
            "logsql",
            "export",
            "in.mcap",
            "out.parquet",
            "-t",
            "/a",
            "--topic",
            "/b",
        ])
        .unwrap();
        match a.command {
            Some(Command::Export(e)) => assert_eq!(e.topics, ["/a", "/b"]),
            other => panic!("{other:?}"),
        }
        let a = Args::try_parse_from(["logsql", "info", "a.mcap", "--on-error", "warn"]).unwrap();
        assert_eq!(a.on_error, Some(OnErrorPolicy::Warn));
    }

    #[test]
    fn shell_habits_parse() {
        let a = Args::try_parse_from([
            "logsql",
            "-c",
            "SELECT 1",
            "--command",
            "SELECT 2",
            "-o",
            "out.txt",
            "-q",
        ])
        .unwrap();
        assert_eq!(a.commands, ["SELECT 1", "SELECT 2"]);
        assert_eq!(a.output, Some(PathBuf::from("out.txt")));
        assert!(a.quiet);
        assert_eq!(a.max_rows, MaxRows(Some(40)));
        for (v, want) in [("7", Some(7)), ("0", None), ("inf", None)] {
            let a = Args::try_parse_from(["logsql", "--max-rows", v, "SELECT 1"]).unwrap();
            assert_eq!(a.max_rows, MaxRows(want), "{v}");
        }
        let e = Args::try_parse_from(["logsql", "--max-rows", "many"]).unwrap_err();
        assert!(e.to_string().contains("'many' is not a row count"), "{e}");
    }

    fn unused(argv: &[&str]) -> Option<String> {
        unused_global_option(&Args::command().try_get_matches_from(argv).unwrap())
    }

    #[test]
    fn global_options_a_subcommand_ignores_are_named() {
        assert_eq!(
            unused(&["logsql", "info", "a.mcap", "--format", "json"]),
            None
        );
        assert_eq!(unused(&["logsql", "--no-verify", "info", "a.mcap"]), None);
        assert_eq!(
            unused(&["logsql", "info", "a.mcap", "--on-error", "warn"]).as_deref(),
            Some(
                "--on-error does not apply to `logsql info` \
                 (of the global options it reads only --format, --no-verify)"
            )
        );
        assert_eq!(
            unused(&[
                "logsql",
                "--max-width",
                "9",
                "export",
                "a.mcap",
                "o.parquet"
            ])
            .as_deref(),
            Some(
                "--max-width does not apply to `logsql export` (of the global options it \
                 reads only --on-error, --target-partitions, --descriptors, --msg-path, --no-verify, \
                 --catalog, --events)"
            )
        );
        assert_eq!(
            unused(&[
                "logsql",
                "index",
                "fleet/",
                "--catalog",
                "c/",
                "--on-error",
                "warn"
            ])
            .as_deref(),
            Some(
                "--on-error does not apply to `logsql index` \
                 (of the global options it reads only --format, --catalog)"
            )
        );
        assert_eq!(
            unused(&[
                "logsql",
                "topics",
                "a.mcap",
                "--format",
                "csv",
                "--max-width",
                "9"
            ]),
            None
        );
        assert_eq!(unused(&["logsql", "--format", "csv", "SELECT 1"]), None);
    }
}
