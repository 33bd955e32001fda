//! `logsql recover --to bag|db3`: the recovered messages written as the
//! format the input's own tools read, instead of MCAP.
//!
//! - `--to bag` (also chosen by an OUTPUT named `.bag`): a ROS1 bag 2.0,
//!   indexed, with one connection per (topic, type) of the input carrying
//!   its connection header (type, md5sum, message definition, callerid,
//!   latching, ...), written by [`logsql_readers::formats::bag::write`]
//!   into a temporary file renamed over OUTPUT when complete.
//! - `--to db3`: a ROS 2 bag directory, one `.db3` (rosbag2's SQLite
//!   storage) and its `metadata.yaml`, one topic per (topic, type) of the
//!   input with its QoS profiles and definition, written by
//!   [`logsql_readers::formats::ros2::write`] into a temporary directory
//!   renamed to OUTPUT when complete ([`logsql::atomic_write::AtomicDir`]).
//!
//! The messages are the rows of the same windowed, time-sorted queries
//! `recover` writes as MCAP ([`super::recover`]), taken batch by batch: the
//! writers hold one chunk (bag) or SQLite's page cache (db3), whatever the
//! input's size. Which connection or topic a row belongs to comes from its
//! topic and message type, matched against the channels the input's
//! summaries list; a channel a format cannot carry (not `ros1` for a bag,
//! not `cdr` for a ROS 2 bag) is refused before anything is written, and the
//! messages of a channel without a type (a bag connection whose record was
//! lost) are left out and counted.

use std::collections::HashMap;
use std::io::{BufWriter, Write};
use std::path::Path;

use datafusion::arrow::array::{Array, AsArray, RecordBatch};
use datafusion::arrow::compute::cast;
use datafusion::arrow::datatypes::{DataType, Int64Type};
use datafusion::error::DataFusionError;
use datafusion::physical_plan::SendableRecordBatchStream;
use futures::StreamExt;
use logsql::atomic_write::{AtomicDir, AtomicFile};
use logsql_readers::formats::bag::write::{BagConnection, BagWriter};
use logsql_readers::formats::ros2::write::{Db3Topic, Db3Writer};
use logsql_readers::model::{Channel, Summary};

use super::App;
use super::args::RecoverTo;
use super::error::{CliError, CliResult};

/// What a `--to bag|db3` recover writes, checked against the input before
/// anything is written.
#[derive(Debug)]
pub enum Plan {
    /// A ROS1 bag with these connections.
    Bag(Keyed<BagConnection>),
    /// A ROS 2 bag with these topics.
    Db3(Keyed<Db3Topic>),
}

/// The output's connections (topics), in the order first listed, and the
/// index of each by (topic, message type).
#[derive(Debug)]
pub struct Keyed<T> {
    items: Vec<T>,
    index: HashMap<(String, Option<String>), usize>,
}

impl<T> Keyed<T> {
    /// One item per (topic, message type) of the channels of `summaries`
    /// (the lowest channel id of a file, the first file, wins), made by
    /// `make`: `Ok(None)` for a channel whose messages cannot be written
    /// (they are left out and counted), an error for one that makes the
    /// input unfit for the format.
    fn new(
        summaries: &[Summary],
        make: impl Fn(&Channel) -> Result<Option<T>, String>,
    ) -> Result<Self, String> {
        let mut keyed = Self {
            items: Vec::new(),
            index: HashMap::new(),
        };
        for channel in summaries.iter().flat_map(|s| s.channels.values()) {
            let key = (channel.topic.clone(), channel.message_type.clone());
            if keyed.index.contains_key(&key) {
                continue;
            }
            if let Some(item) = make(channel)? {
                keyed.items.push(item);
                keyed.index.insert(key, keyed.items.len() - 1);
            }
        }
        Ok(keyed)
    }

    /// The item of a row, `None` for a row of a channel left out.
    fn of(&self, topic: &str, message_type: Option<&str>) -> Option<usize> {
        self.index
            .get(&(topic.to_string(), message_type.map(str::to_string)))
            .copied()
    }
}

/// The name of `to` as `--to` spells it.
fn spelled(to: RecoverTo) -> &'static str {
    match to {
        RecoverTo::Mcap => "mcap",
        RecoverTo::Bag => "bag",
        RecoverTo::Db3 => "db3",
    }
}

impl Plan {
    /// The plan for writing `to` from the channels of `summaries`, or why
    /// the input cannot be written so. A channel without a message type
    /// (a bag connection whose record was lost with its chunk: its messages
    /// have no topic either) cannot be written and is left out; a channel of
    /// another encoding refuses the input.
    pub fn new(to: RecoverTo, input: &str, summaries: &[Summary]) -> CliResult<Self> {
        let plan = match to {
            RecoverTo::Mcap => Err("MCAP needs no plan".to_string()),
            RecoverTo::Bag => Keyed::new(summaries, |c| {
                if c.message_encoding == "ros1"
                    && (c.message_type.is_none() || !c.metadata.contains_key("md5sum"))
                {
                    return Ok(None);
                }
                BagConnection::from_channel(c)
                    .map(Some)
                    .map_err(|e| format!("{e} (connection headers are ROS1's)"))
            })
            .map(Plan::Bag),
            RecoverTo::Db3 => Keyed::new(summaries, |c| {
                if c.message_encoding != "cdr" {
                    return Err(format!(
                        "topic {:?} holds {:?} messages: a ROS 2 bag holds cdr messages",
                        c.topic, c.message_encoding
                    ));
                }
                Ok(c.message_type.is_some().then(|| Db3Topic::from_channel(c)))
            })
            .map(Plan::Db3),
        };
        plan.map_err(|why| {
            CliError::msg(format!(
                "{input}: cannot recover --to {}: {why}",
                spelled(to)
            ))
        })
    }
}

/// What [`write`] wrote.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Written {
    /// Messages written.
    pub rows: u64,
    /// Messages left out: their channel has no message type (see [`Plan::new`]).
    pub left_out: u64,
}

/// What `--to` means when not given: a bag for an OUTPUT named `.bag`, MCAP
/// otherwise.
pub fn infer(to: Option<RecoverTo>, output: &Path) -> RecoverTo {
    to.unwrap_or_else(|| {
        if output
            .extension()
            .is_some_and(|e| e.eq_ignore_ascii_case("bag"))
        {
            RecoverTo::Bag
        } else {
            RecoverTo::Mcap
        }
    })
}

/// Writes `stream` to `output` as `plan` says. An error in the stream after
/// some rows (a damaged input) still completes the output, and is returned
/// with a note saying so.
pub fn write(
    app: &App,
    plan: &Plan,
    stream: SendableRecordBatchStream,
    output: &Path,
) -> CliResult<Written> {
    let (written, failed) = match plan {
        Plan::Bag(conns) => write_bag(app, conns, stream, output)?,
        Plan::Db3(topics) => write_db3(app, topics, stream, output)?,
    };
    match failed {
        None => Ok(written),
        Some(e) => Err(CliError::from(e.context(format!(
            "{} holds the {} messages read before the error (complete and indexed)",
            output.display(),
            written.rows
        )))),
    }
}

/// What a writer wrote, and the stream's error after which it completed
/// the output.
type Outcome = (Written, Option<DataFusionError>);

/// An error of writing `output`.
fn out_err(output: &Path, e: &dyn std::fmt::Display) -> CliError {
    CliError::msg(format!("{}: {e}", output.display()))
}

/// The bag: a temporary file beside `output`, renamed over it when complete.
fn write_bag(
    app: &App,
    conns: &Keyed<BagConnection>,
    stream: SendableRecordBatchStream,
    output: &Path,
) -> CliResult<Outcome> {
    let mut left_out = 0u64;
    let mut file = AtomicFile::create(output)
        .map_err(|e| CliError::io(format!("creating {}", output.display()), e))?;
    let mut w = BagWriter::new(BufWriter::new(file.file())).map_err(|e| out_err(output, &e))?;
    let ids: Vec<u32> = conns
        .items
        .iter()
        .map(|c| w.add_connection(c.clone()))
        .collect();
    let failed = app.rt.block_on(drain(stream, |topic, mtype, time, data| {
        let Some(i) = conns.of(topic, mtype) else {
            left_out += 1;
            return Ok(());
        };
        let time = u64::try_from(time)
            .map_err(|_| DataFusionError::Execution(format!("log time {time} is before 1970")))?;
        w.write(ids[i], time, data)
            .map_err(|e| DataFusionError::External(Box::new(e)))
    }))?;
    let rows = w.messages();
    w.finish()
        .map_err(|e| out_err(output, &e))?
        .flush()
        .map_err(|e| out_err(output, &e))?;
    file.commit()
        .map_err(|e| CliError::io(format!("writing {}", output.display()), e))?;
    Ok((Written { rows, left_out }, failed))
}

/// The ROS 2 bag directory: `OUTDIR_0.db3` and `metadata.yaml` in a
/// temporary directory beside `output`, renamed to it when complete.
fn write_db3(
    app: &App,
    topics: &Keyed<Db3Topic>,
    stream: SendableRecordBatchStream,
    output: &Path,
) -> CliResult<Outcome> {
    let mut left_out = 0u64;
    let dir = AtomicDir::create(output)
        .map_err(|e| CliError::io(format!("creating {}", output.display()), e))?;
    let name = output
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_else(|| "recovered".into());
    let db_name = format!("{name}_0.db3");
    let mut w =
        Db3Writer::create(&dir.path().join(&db_name), "").map_err(|e| out_err(output, &e))?;
    let mut ids = Vec::with_capacity(topics.items.len());
    for t in &topics.items {
        ids.push(w.add_topic(t.clone()).map_err(|e| out_err(output, &e))?);
    }
    let mut batch_rows: Vec<(i64, i64, Vec<u8>)> = Vec::new();
    let failed = app.rt.block_on(drain_batches(stream, |batch| {
        batch_rows.clear();
        each_row(batch, |topic, mtype, time, data| {
            match topics.of(topic, mtype) {
                Some(i) => batch_rows.push((ids[i], time, data.to_vec())),
                None => left_out += 1,
            }
            Ok(())
        })?;
        w.write_all(batch_rows.iter().map(|(t, time, d)| (*t, *time, &d[..])))
            .map_err(|e| DataFusionError::External(Box::new(e)))
    }))?;
    let rows = w.messages();
    let metadata = w.metadata(&db_name, "");
    w.finish(&metadata).map_err(|e| out_err(output, &e))?;
    std::fs::write(dir.path().join("metadata.yaml"), metadata.to_yaml())
        .map_err(|e| CliError::io(format!("writing {}/metadata.yaml", output.display()), e))?;
    dir.commit()
        .map_err(|e| CliError::io(format!("writing {}", output.display()), e))?;
    Ok((Written { rows, left_out }, failed))
}

/// Calls `row(topic, message type, log time ns, payload)` for every row of
/// `stream`; see [`drain_batches`].
async fn drain(
    stream: SendableRecordBatchStream,
    mut row: impl FnMut(&str, Option<&str>, i64, &[u8]) -> Result<(), DataFusionError>,
) -> CliResult<Option<DataFusionError>> {
    drain_batches(stream, |batch| each_row(batch, &mut row)).await
}

/// Calls `each` for every batch of `stream`. An error of the stream after
/// some rows is returned as `Ok(Some(error))` (the output is then completed
/// with what was read); before any row, and any error of `each`, is an
/// error.
async fn drain_batches(
    mut stream: SendableRecordBatchStream,
    mut each: impl FnMut(&RecordBatch) -> Result<(), DataFusionError>,
) -> CliResult<Option<DataFusionError>> {
    let mut rows = 0u64;
    while let Some(next) = stream.next().await {
        match next {
            Ok(batch) => {
                each(&batch)?;
                rows += batch.num_rows() as u64;
            }
            Err(e) if rows > 0 => return Ok(Some(e)),
            Err(e) => return Err(e.into()),
        }
    }
    Ok(None)
}

/// Calls `row(topic, message type, log time ns, payload)` for each row of
/// `batch` (the messages table's columns).
fn each_row(
    batch: &RecordBatch,
    mut row: impl FnMut(&str, Option<&str>, i64, &[u8]) -> Result<(), DataFusionError>,
) -> Result<(), DataFusionError> {
    let need = |name: &str| {
        batch
            .column_by_name(name)
            .ok_or_else(|| DataFusionError::Plan(format!("recover needs the column {name}")))
    };
    let topic = cast(need("topic")?, &DataType::Utf8)?;
    let topic = topic.as_string::<i32>();
    let mtype = cast(need("message_type")?, &DataType::Utf8)?;
    let mtype = mtype.as_string::<i32>();
    let time = cast(need("log_time")?, &DataType::Int64)?;
    let time = time.as_primitive::<Int64Type>();
    let data = cast(need("data")?, &DataType::Binary)?;
    let data = data.as_binary::<i32>();
    for i in 0..batch.num_rows() {
        if topic.is_null(i) || time.is_null(i) || data.is_null(i) {
            return Err(DataFusionError::Execution(
                "a message without a topic, log time or payload".into(),
            ));
        }
        let mt = mtype.is_valid(i).then(|| mtype.value(i));
        row(topic.value(i), mt, time.value(i), data.value(i))?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_bag_name_means_a_bag_unless_told_otherwise() {
        assert_eq!(infer(None, Path::new("out.bag")), RecoverTo::Bag);
        assert_eq!(infer(None, Path::new("dir/OUT.BAG")), RecoverTo::Bag);
        assert_eq!(infer(None, Path::new("out.mcap")), RecoverTo::Mcap);
        assert_eq!(infer(None, Path::new("bagdir")), RecoverTo::Mcap);
        assert_eq!(
            infer(Some(RecoverTo::Db3), Path::new("x.bag")),
            RecoverTo::Db3
        );
        assert_eq!(
            infer(Some(RecoverTo::Mcap), Path::new("x.bag")),
            RecoverTo::Mcap
        );
    }
}
