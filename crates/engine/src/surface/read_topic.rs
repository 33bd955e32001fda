//! `read_topic('path', '/imu' [, 'flatten'])`: one topic's messages decoded
//! into typed columns.
//!
//! Planning reads the summaries of the files the path names, compiles one
//! decoder per distinct schema of the topic (from the file's own schema: MCAP
//! schema records, bag connection definitions, Apollo `proto_desc`, a user
//! descriptor set for BDDF; for a ROS 2 channel whose file stores no
//! definition, the one [`logsql_readers::ros2_interfaces`] finds, which the spec keeps
//! for distributed workers), and merges their types into one table schema
//! ([`logsql_decode::merge`]); a conflict is an error naming both definitions.
//! The scan is the shared engine's: a listing table over the files, time
//! pruning over the chunk index, the topic selection handed to the readers,
//! metrics and `on_error` as for `messages`.

use std::collections::{HashMap, HashSet};
use std::sync::Arc;

use datafusion::arrow::datatypes::{DataType, Field, Fields, Schema, SchemaRef};
use datafusion::catalog::{TableFunctionArgs, TableFunctionImpl, TableProvider};
use datafusion::error::{DataFusionError, Result};
use datafusion::execution::SessionState;
use datafusion::prelude::SessionContext;

use super::table_functions::{literal_text, plan_on_thread};
use super::url_table::{listing_table, resolve};
use crate::file_format::LogFileFormat;
use crate::scanner::error::df_err;
use crate::scanner::options::LogsqlOptions;
use crate::scanner::schema::{col, timestamp_type};
use crate::scanner::target::{
    DecodedSpec, ERROR_COLUMN, PlannedDefinition, RAW_COLUMN, with_pool_schema,
};
use crate::storage::object_io::FileLocation;
use logsql_decode::{MessageDecoder, merge};
use logsql_readers::formats::FormatReader;
use logsql_readers::io::ReadAt;
use logsql_readers::model::{Channel, Flow, Message, Selection, Summary};

/// Payloads sampled to infer the type of a JSON topic without a schema.
const JSON_SAMPLES: usize = 1000;

/// Registers `read_topic`.
pub fn register(ctx: &SessionContext) {
    ctx.register_udtf("read_topic", Arc::new(ReadTopicFunction));
}

#[derive(Debug)]
struct ReadTopicFunction;

impl TableFunctionImpl for ReadTopicFunction {
    fn call_with_args(&self, args: TableFunctionArgs) -> Result<Arc<dyn TableProvider>> {
        let texts: Vec<Option<String>> = args.exprs().iter().map(literal_text).collect();
        let (path, topic, flatten) = match texts.as_slice() {
            [Some(p), Some(t)] => (p.clone(), t.clone(), false),
            [Some(p), Some(t), Some(o)] if o.eq_ignore_ascii_case("flatten") => {
                (p.clone(), t.clone(), true)
            }
            _ => {
                return Err(DataFusionError::Plan(
                    "read_topic() takes a path (file, directory or glob), a topic and optionally 'flatten', e.g. read_topic('run.mcap', '/imu') or read_topic('run.mcap', '/imu', 'flatten')".into(),
                ));
            }
        };
        plan_on_thread(
            &args,
            &format!("read_topic('{path}', '{topic}')"),
            |state| async move { plan(&state, &path, &topic, flatten).await },
        )
    }
}

/// One distinct schema of the topic, with the first channel that has it.
struct Variant {
    decoder: Arc<dyn MessageDecoder>,
    where_: String,
}

/// Plans `read_topic(path, topic [, 'flatten'])`'s table (also the base of
/// `read_images`).
pub(crate) async fn plan(
    state: &SessionState,
    path: &str,
    topic: &str,
    flatten: bool,
) -> Result<Arc<dyn TableProvider>> {
    let options = LogsqlOptions::from_config(state.config_options());
    let null_on_error = options.null_on_decode_error();
    let pool = options.descriptor_pool()?;
    let resolved = resolve(state, path).await?;
    let mut decoders: HashMap<(String, u64), Arc<dyn MessageDecoder>> = HashMap::new();
    let mut definitions: HashMap<(String, u64), PlannedDefinition> = HashMap::new();
    let mut by_schema: HashMap<SchemaKey, Arc<dyn MessageDecoder>> = HashMap::new();
    let mut variants: Vec<Variant> = Vec::new();
    let mut files = Vec::new();
    let mut topics_seen: HashSet<String> = HashSet::new();
    // Files of a directory or glob too damaged to read: scanned all the same,
    // so that the scan reports them by the `on_error` policy.
    let mut damaged: Vec<logsql_readers::Error> = resolved.unrecognised_errors().await?;
    files.extend(resolved.unrecognised_logs());
    for (entry, summary) in resolved.summaries(state).await? {
        let (loc, _) = entry;
        let cached = match summary {
            Ok(cached) => cached,
            Err(e) => {
                damaged.push(e);
                files.push(entry);
                continue;
            }
        };
        let all = cached.summary.channels.values();
        topics_seen.extend(all.clone().map(|c| c.topic.clone()));
        let channels: Vec<(Channel, Option<PlannedDefinition>)> = all
            .filter(|c| c.topic == topic)
            .map(|c| {
                let pooled = with_pool_schema(c, pool.as_deref());
                let defined = logsql_readers::ros2_interfaces::with_definition(
                    pooled.clone(),
                    &options.msg_path,
                );
                let attached = PlannedDefinition::attached(&pooled, &defined);
                (defined, attached)
            })
            .collect();
        if channels.is_empty() {
            continue;
        }
        files.push(entry);
        let key = loc.cache_key();
        for (ch, attached) in channels {
            if let Some(def) = attached {
                definitions.insert((key.clone(), ch.id), def);
            }
            let schema_key = schema_key(&ch);
            let decoder = match by_schema.get(&schema_key) {
                Some(d) => Arc::clone(d),
                None => {
                    let d = compile(&cached.format, loc, &cached.summary, &ch).await?;
                    by_schema.insert(schema_key, Arc::clone(&d));
                    variants.push(Variant {
                        decoder: Arc::clone(&d),
                        where_: format!("{} in {}", d.describe(), loc.display_name()),
                    });
                    d
                }
            };
            decoders.insert((key.clone(), ch.id), decoder);
        }
    }
    let Some(first) = variants.first() else {
        if let Some(e) = damaged.into_iter().next() {
            crate::scanner::damage::report(options.on_error, e, None)?;
        }
        let mut known: Vec<String> = topics_seen.into_iter().collect();
        known.sort();
        known.truncate(20);
        return Err(DataFusionError::Plan(format!(
            "read_topic('{path}', '{topic}'): no file there has topic {topic:?} (topics: {})",
            if known.is_empty() {
                "none".to_string()
            } else {
                known.join(", ")
            }
        )));
    };
    let mut message_type = first.decoder.data_type().clone();
    for v in &variants[1..] {
        message_type = merge::merge_types(&message_type, v.decoder.data_type()).map_err(|e| {
            DataFusionError::Plan(format!(
                "read_topic('{path}', '{topic}'): the topic's schemas cannot be merged ({e}): {} vs {}",
                first.where_, v.where_
            ))
        })?;
    }
    let schema = table_schema(&message_type, flatten, null_on_error);
    let renamed = renamed_fields(&schema);
    if !renamed.is_empty() {
        log::warn!(
            "read_topic('{path}', '{topic}'): {} (log_time, publish_time, file, _error and _raw are logsql's columns)",
            renamed.join(", ")
        );
    }
    let spec = DecodedSpec {
        topic: topic.to_string(),
        message_type,
        decoders,
        definitions,
        pool,
        flatten,
        null_on_error,
        schema: Arc::clone(&schema),
    };
    let formats: HashSet<&str> = files
        .iter()
        .filter_map(|(_, f)| f.as_ref().map(|f| f.name()))
        .collect();
    let unrecognised = files.iter().any(|(_, f)| f.is_none());
    let format = match formats.len() {
        1 if !unrecognised => files.iter().find_map(|(_, f)| f.clone()),
        _ => None,
    };
    let file_format = LogFileFormat::decoded(format, Arc::new(spec));
    listing_table(&resolved, &files, file_format, schema)
}

/// What makes two channels decode alike: encodings, type and schema bytes.
type SchemaKey = (String, Option<String>, Option<String>, Option<Arc<[u8]>>);

/// The [`SchemaKey`] of `ch`.
fn schema_key(ch: &Channel) -> SchemaKey {
    (
        ch.message_encoding.clone(),
        ch.schema_encoding.clone(),
        ch.message_type.clone(),
        ch.schema.clone(),
    )
}

/// Compiles the decoder of `channel`; JSON without a schema is typed from
/// the topic's first payloads.
async fn compile(
    format: &Arc<dyn FormatReader>,
    loc: &FileLocation,
    summary: &Arc<Summary>,
    channel: &Channel,
) -> Result<Arc<dyn MessageDecoder>> {
    let name = loc.display_name();
    let plan_err = |e: logsql_decode::DecodeError| {
        DataFusionError::Plan(format!(
            "{name}: cannot decode topic {:?} (type {:?}, encoding {:?}): {e}",
            channel.topic,
            channel.message_type.as_deref().unwrap_or(""),
            channel.message_encoding
        ))
    };
    let schemaless_json = channel.message_encoding == "json"
        && channel.schema.as_deref().is_none_or(<[u8]>::is_empty);
    if !schemaless_json {
        return logsql_decode::decoder_of(channel, &format.schema_of(channel)).map_err(plan_err);
    }
    let (format, loc, summary, id) = (
        Arc::clone(format),
        loc.clone(),
        Arc::clone(summary),
        channel.id,
    );
    let samples = tokio::task::spawn_blocking(move || -> logsql_readers::Result<Vec<Vec<u8>>> {
        let file = loc.open()?;
        sample_payloads(format.as_ref(), file.as_ref(), &summary, id, JSON_SAMPLES)
    })
    .await
    .map_err(|e| DataFusionError::External(Box::new(e)))?
    .map_err(df_err)?;
    if samples.is_empty() {
        // A topic without messages: nothing to infer from, any JSON (`value`).
        return logsql_decode::json::from_portable_schema(
            br#"{"type":"object","properties":{}}"#,
            "json (no messages to infer from)",
        )
        .map_err(plan_err);
    }
    let mut it = samples.iter().map(Vec::as_slice);
    logsql_decode::json::infer(&mut it).map_err(plan_err)
}

/// Up to `n` payloads of channel `id`, from the first chunks that hold it.
fn sample_payloads(
    format: &dyn FormatReader,
    file: &dyn ReadAt,
    summary: &Summary,
    id: u64,
    n: usize,
) -> logsql_readers::Result<Vec<Vec<u8>>> {
    let Some(topic) = summary.channels.get(&id).map(|c| c.topic.clone()) else {
        return Ok(Vec::new());
    };
    let mut sel = Selection::all();
    sel.topics = Some(HashSet::from([topic]));
    let mut out = Vec::new();
    for chunk in &summary.chunks {
        if chunk.channels.as_ref().is_some_and(|c| !c.contains(&id)) {
            continue;
        }
        let mut receiver = |m: Message<'_>| {
            if m.channel.id == id {
                out.push(m.data.to_vec());
            }
            if out.len() >= n {
                Flow::Stop
            } else {
                Flow::Continue
            }
        };
        // A damaged chunk just gives fewer samples.
        let _ = format.read_chunk(file, summary, chunk, &sel, &mut receiver);
        if out.len() >= n {
            break;
        }
    }
    Ok(out)
}

/// Field metadata key holding the message's own name of a renamed field.
pub const MESSAGE_FIELD_KEY: &str = "logsql.message_field";

/// The renamed fields of a [`table_schema`], as `field 'file' is column "data.file"`.
fn renamed_fields(schema: &Schema) -> Vec<String> {
    schema
        .fields()
        .iter()
        .filter_map(|f| {
            let original = f.metadata().get(MESSAGE_FIELD_KEY)?;
            Some(format!(
                "message field '{original}' is column \"{}\"",
                f.name()
            ))
        })
        .collect()
}

/// The table schema: `log_time`, `publish_time`, the message's fields (or
/// their flattened columns), `_error` and `_raw` when failed messages become
/// null rows, and `file`. A message field whose name is one of these five
/// (whether or not `_error` and `_raw` are present) is renamed
/// `data.<name>` (`data.data.<name>` when a flattened field has that name,
/// and so on), in every format alike; its field metadata keeps the message's
/// name under [`MESSAGE_FIELD_KEY`].
pub fn table_schema(message_type: &DataType, flatten: bool, null_on_error: bool) -> SchemaRef {
    let fields = match message_type {
        DataType::Struct(f) => f.clone(),
        _ => Fields::empty(),
    };
    let fields = if flatten {
        merge::flatten_fields(&fields)
    } else {
        fields
    };
    let reserved = [
        col::LOG_TIME,
        col::PUBLISH_TIME,
        col::FILE,
        ERROR_COLUMN,
        RAW_COLUMN,
    ];
    let mut out = vec![
        Field::new(col::LOG_TIME, timestamp_type(), false),
        Field::new(col::PUBLISH_TIME, timestamp_type(), true),
    ];
    let taken: HashSet<&str> = fields.iter().map(|f| f.name().as_str()).collect();
    out.extend(fields.iter().map(|f| {
        let f = f.as_ref().clone();
        if reserved.contains(&f.name().as_str()) {
            let mut name = format!("data.{}", f.name());
            while taken.contains(name.as_str()) {
                name = format!("data.{name}");
            }
            let mut metadata = f.metadata().clone();
            metadata.insert(MESSAGE_FIELD_KEY.to_string(), f.name().clone());
            f.with_name(name).with_metadata(metadata)
        } else {
            f
        }
    }));
    if null_on_error {
        out.push(Field::new(ERROR_COLUMN, DataType::Utf8, true));
        out.push(Field::new(RAW_COLUMN, DataType::Binary, true));
    }
    out.push(Field::new(col::FILE, DataType::Utf8, false));
    Arc::new(Schema::new(out))
}
