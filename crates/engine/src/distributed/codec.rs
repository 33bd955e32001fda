//! The physical-plan codec of logsql's scans: what a distributed worker
//! receives instead of the coordinator's in-memory `DataSourceExec`.
//!
//! DataFusion serializes the format-agnostic part of a file scan itself (files
//! and byte ranges, partition values, schema, projection, limit); this codec
//! wraps it with everything [`LogSource`] needs at execution time (format,
//! pushed-down predicate, every `logsql.*` option, skipped files, the typed
//! table or decoded topic as planned), in the `logsql.scan.LogScanNode`
//! message of `proto/logsql/scan.proto`. Table functions answered from
//! summaries (`topics()`, ...) are memory scans that DataFusion serializes on
//! its own.

use std::collections::{BTreeMap, HashMap, HashSet};
use std::sync::Arc;

use bytes::Bytes;
use datafusion::arrow::datatypes::{DataType, Field, Schema, SchemaRef};
use datafusion::config::ExtensionOptions;
use datafusion::datasource::source::DataSourceExec;
use datafusion::error::{DataFusionError, Result};
use datafusion::execution::TaskContext;
use datafusion::object_store::path::Path as ObjectPath;
use datafusion::physical_plan::ExecutionPlan;
use datafusion_proto::physical_plan::from_proto::{
    parse_physical_expr_with_converter, parse_protobuf_file_scan_config,
    parse_table_schema_from_proto,
};
use datafusion_proto::physical_plan::to_proto::{
    serialize_file_scan_config, serialize_physical_expr_with_converter,
};
use datafusion_proto::physical_plan::{
    PhysicalExtensionCodec, PhysicalPlanDecodeContext, PhysicalProtoConverterExtension,
};
use datafusion_proto::protobuf;
use prost::Message;

use crate::datasource::source::LogSource;
use crate::scanner::damage::DamageReportExec;
use crate::scanner::options::LogsqlOptions;
use crate::scanner::shared_chunks::SharedChunkRegistry;
use crate::scanner::target::{DecodedSpec, PlannedDefinition, ScanTarget, TableSpec};
use logsql_decode::{MessageDecoder, json};
use logsql_readers::formats::{self, FormatReader};
use logsql_readers::table::{ColumnDef, ColumnType, ScalarType, TableDef};

/// The generated `logsql.scan` messages.
mod wire {
    #![allow(missing_docs, clippy::all)]
    include!(concat!(env!("OUT_DIR"), "/logsql.scan.rs"));
}

/// Encodes and decodes logsql's scans (a `DataSourceExec` over a
/// [`LogSource`]) for datafusion-distributed. Register it on the coordinator
/// and on every worker (`with_distributed_user_codec`); [`super`] does both.
#[derive(Debug, Default, Clone, Copy)]
pub struct LogsqlCodec;

fn codec_err(what: impl std::fmt::Display) -> DataFusionError {
    DataFusionError::Internal(format!("logsql plan codec: {what}"))
}

impl PhysicalExtensionCodec for LogsqlCodec {
    fn try_decode(
        &self,
        buf: &[u8],
        inputs: &[Arc<dyn ExecutionPlan>],
        ctx: &TaskContext,
        proto_converter: &dyn PhysicalProtoConverterExtension,
    ) -> Result<Arc<dyn ExecutionPlan>> {
        let node = match wire::LogsqlNode::decode(buf).map_err(codec_err)?.node {
            Some(wire::logsql_node::Node::Scan(scan)) => scan,
            Some(wire::logsql_node::Node::DamageReport(_)) => {
                let [input] = inputs else {
                    return Err(codec_err("a damage report node has one input"));
                };
                return Ok(Arc::new(DamageReportExec::new(
                    Arc::clone(input),
                    Arc::default(),
                )));
            }
            None => return Err(codec_err("empty node")),
        };
        let conf =
            protobuf::FileScanExecConf::decode(node.file_scan_conf.as_ref()).map_err(codec_err)?;
        let table_schema = parse_table_schema_from_proto(&conf)?;
        let format = match node.format.as_str() {
            "" => None,
            name => Some(
                formats::by_name(name)
                    .ok_or_else(|| codec_err(format!("unknown log format {name:?}")))?,
            ),
        };
        let decode_ctx = PhysicalPlanDecodeContext::new(ctx, self);
        let predicate = match node.predicate.is_empty() {
            true => None,
            false => Some(parse_physical_expr_with_converter(
                &protobuf::PhysicalExprNode::decode(node.predicate.as_ref()).map_err(codec_err)?,
                table_schema.table_schema(),
                &decode_ctx,
                proto_converter,
            )?),
        };
        let mut options = LogsqlOptions::default();
        for o in &node.options {
            // Keys travel as `entries()` names them (`logsql.on_error`).
            let key = o.key.strip_prefix("logsql.").unwrap_or(&o.key);
            options.set(key, &o.value)?;
        }
        // `parse` takes the encoded form `Display` gave (`from` would encode again).
        let skip = node
            .skip
            .iter()
            .map(|p| ObjectPath::parse(p).map_err(codec_err))
            .collect::<Result<HashSet<ObjectPath>>>()?;
        let target = target_from_wire(node.target.as_ref(), format.as_deref())?;
        let mut source = LogSource::new(format, table_schema)
            .with_skip(Arc::new(skip))
            .with_target(target)
            .with_options(options)
            .with_summary_cache(crate::storage::summary_cache::of(
                ctx.runtime_env().as_ref(),
            ))
            .with_memory_pool(Arc::clone(&ctx.runtime_env().memory_pool))
            .with_shared_chunks(SharedChunkRegistry::of(ctx.session_config()));
        source.predicate = predicate;
        source.batch_size = usize::try_from(node.batch_size).map_err(codec_err)?;
        let conf =
            parse_protobuf_file_scan_config(&conf, &decode_ctx, proto_converter, Arc::new(source))?;
        Ok(DataSourceExec::from_data_source(conf))
    }

    fn try_encode(
        &self,
        node: Arc<dyn ExecutionPlan>,
        buf: &mut Vec<u8>,
        proto_converter: &dyn PhysicalProtoConverterExtension,
    ) -> Result<()> {
        if node.downcast_ref::<DamageReportExec>().is_some() {
            let wire = wire::LogsqlNode {
                node: Some(wire::logsql_node::Node::DamageReport(wire::DamageReport {})),
            };
            return wire.encode(buf).map_err(codec_err);
        }
        let Some((conf, source)) = node
            .downcast_ref::<DataSourceExec>()
            .and_then(|exec| exec.downcast_to_file_source::<LogSource>())
        else {
            return Err(DataFusionError::NotImplemented(format!(
                "logsql plan codec: {} is not a logsql scan",
                node.name()
            )));
        };
        let predicate = match &source.predicate {
            Some(p) => {
                serialize_physical_expr_with_converter(p, self, proto_converter)?.encode_to_vec()
            }
            None => Vec::new(),
        };
        let options = source
            .options
            .entries()
            .into_iter()
            .filter_map(|e| {
                e.value.map(|value| wire::SessionOption {
                    key: e.key.trim_start_matches('.').to_string(),
                    value,
                })
            })
            .collect();
        let mut skip: Vec<String> = source.skip.iter().map(|p| p.to_string()).collect();
        skip.sort();
        let wire = wire::LogScanNode {
            file_scan_conf: serialize_file_scan_config(conf, self, proto_converter)?
                .encode_to_vec()
                .into(),
            format: source
                .format
                .as_ref()
                .map(|f| f.name().to_string())
                .unwrap_or_default(),
            predicate: predicate.into(),
            batch_size: source.batch_size as u64,
            options,
            skip,
            target: target_to_wire(&source.target)?,
        };
        let wire = wire::LogsqlNode {
            node: Some(wire::logsql_node::Node::Scan(wire)),
        };
        wire.encode(buf).map_err(codec_err)
    }
}

fn target_to_wire(target: &ScanTarget) -> Result<Option<wire::log_scan_node::Target>> {
    use wire::log_scan_node::Target;
    Ok(match target {
        ScanTarget::Messages => None,
        ScanTarget::Table(t) => Some(Target::Table(table_to_wire(t))),
        ScanTarget::Decoded(d) => Some(Target::Decoded(decoded_to_wire(d)?)),
    })
}

fn target_from_wire(
    target: Option<&wire::log_scan_node::Target>,
    format: Option<&dyn FormatReader>,
) -> Result<ScanTarget> {
    use wire::log_scan_node::Target;
    Ok(match target {
        None => ScanTarget::Messages,
        Some(Target::Table(t)) => {
            let format = format
                .ok_or_else(|| codec_err(format!("typed table {:?} without a format", t.name)))?;
            ScanTarget::Table(table_from_wire(t, format)?)
        }
        Some(Target::Decoded(d)) => ScanTarget::Decoded(decoded_from_wire(d)?),
    })
}

fn table_to_wire(spec: &TableSpec) -> wire::TypedTable {
    let columns = spec
        .def
        .columns
        .iter()
        .map(|c| {
            let (kind, scalar, len) = match c.ty {
                ColumnType::Scalar(t) => (wire::ColumnKind::Scalar, Some(t), 0),
                ColumnType::FixedList(t, n) => (wire::ColumnKind::FixedList, Some(t), n as u64),
                ColumnType::List(t) => (wire::ColumnKind::List, Some(t), 0),
                ColumnType::StringMap => (wire::ColumnKind::StringMap, None, 0),
            };
            wire::Column {
                name: c.name.clone(),
                doc: c.doc.clone(),
                kind: kind as i32,
                scalar: scalar.map(ScalarType::name).unwrap_or_default(),
                len,
            }
        })
        .collect();
    wire::TypedTable {
        name: spec.name().to_string(),
        arg: spec.arg.clone(),
        def_name: spec.def.name.clone(),
        def_doc: spec.def.doc.clone(),
        columns,
        per_chunk: spec.def.per_chunk,
    }
}

/// The table travels by name and is looked up in `format`'s tables.
fn table_from_wire(t: &wire::TypedTable, format: &dyn FormatReader) -> Result<Arc<TableSpec>> {
    let table = format.table(&t.name).map_err(codec_err)?;
    let columns = t
        .columns
        .iter()
        .map(|c| {
            let scalar = || {
                ScalarType::from_name(&c.scalar).ok_or_else(|| {
                    codec_err(format!("column {:?}: unknown type {:?}", c.name, c.scalar))
                })
            };
            let ty = match wire::ColumnKind::try_from(c.kind).map_err(codec_err)? {
                wire::ColumnKind::Scalar => ColumnType::Scalar(scalar()?),
                wire::ColumnKind::FixedList => {
                    ColumnType::FixedList(scalar()?, usize::try_from(c.len).map_err(codec_err)?)
                }
                wire::ColumnKind::List => ColumnType::List(scalar()?),
                wire::ColumnKind::StringMap => ColumnType::StringMap,
            };
            Ok(ColumnDef {
                name: c.name.clone(),
                ty,
                doc: c.doc.clone(),
            })
        })
        .collect::<Result<Vec<_>>>()?;
    Ok(Arc::new(TableSpec {
        table,
        arg: t.arg.clone(),
        def: TableDef {
            name: t.def_name.clone(),
            doc: t.def_doc.clone(),
            columns,
            per_chunk: t.per_chunk,
        },
    }))
}

/// The message type as a one-field schema (the wire form of Arrow types).
const MESSAGE_FIELD: &str = "message";

fn schema_to_wire(schema: &Schema) -> Result<Vec<u8>> {
    Ok(protobuf::Schema::try_from(schema)?.encode_to_vec())
}

fn schema_from_wire(bytes: &[u8]) -> Result<SchemaRef> {
    let proto = protobuf::Schema::decode(bytes).map_err(codec_err)?;
    Ok(Arc::new(Schema::try_from(&proto)?))
}

fn decoded_to_wire(spec: &DecodedSpec) -> Result<wire::DecodedTopic> {
    let message_type = Schema::new(vec![Field::new(
        MESSAGE_FIELD,
        spec.message_type.clone(),
        true,
    )]);
    // read_topic shares one decoder among the files whose channels have the
    // same schema: each distinct decoder is made portable (and checked) once.
    let mut portable: HashMap<*const (), Option<(Bytes, String)>> = HashMap::new();
    let mut decoders = Vec::new();
    for ((file_key, channel_id), decoder) in &spec.decoders {
        let shared = Arc::as_ptr(decoder) as *const ();
        let entry = match portable.get(&shared) {
            Some(entry) => entry.clone(),
            None => {
                let entry = portable_decoder(&spec.topic, decoder.as_ref())?;
                portable.insert(shared, entry.clone());
                entry
            }
        };
        let Some((schema, description)) = entry else {
            continue;
        };
        decoders.push(wire::PortableDecoder {
            file_key: file_key.clone(),
            channel_id: *channel_id,
            schema,
            description,
        });
    }
    decoders.sort_by(|a, b| (&a.file_key, a.channel_id).cmp(&(&b.file_key, b.channel_id)));
    // Each distinct definition once, with the channels it was attached to.
    let mut definitions: BTreeMap<(&str, &[u8]), Vec<wire::ChannelRef>> = BTreeMap::new();
    for ((file_key, channel_id), def) in &spec.definitions {
        definitions
            .entry((def.encoding.as_str(), def.schema.as_ref()))
            .or_default()
            .push(wire::ChannelRef {
                file_key: file_key.clone(),
                channel_id: *channel_id,
            });
    }
    let definitions = definitions
        .into_iter()
        .map(|((encoding, schema), mut channels)| {
            channels.sort_by(|a, b| (&a.file_key, a.channel_id).cmp(&(&b.file_key, b.channel_id)));
            wire::PlannedDefinition {
                encoding: encoding.to_string(),
                schema: Bytes::copy_from_slice(schema),
                channels,
            }
        })
        .collect();
    Ok(wire::DecodedTopic {
        topic: spec.topic.clone(),
        message_type: schema_to_wire(&message_type)?.into(),
        schema: schema_to_wire(&spec.schema)?.into(),
        descriptor_pool: spec
            .pool
            .as_ref()
            .map(|p| p.encode_to_vec())
            .unwrap_or_default()
            .into(),
        flatten: spec.flatten,
        null_on_error: spec.null_on_error,
        decoders,
        definitions,
    })
}

/// `decoder`'s portable schema and description, checked to rebuild exactly
/// this decoder; `None` when the worker compiles it from the channel.
fn portable_decoder(topic: &str, decoder: &dyn MessageDecoder) -> Result<Option<(Bytes, String)>> {
    let Some(schema) = decoder.portable_schema() else {
        return Ok(None);
    };
    let description = decoder.describe();
    // The worker must get exactly this decoder back, or none.
    let rebuilt = json::from_portable_schema(&schema, &description)
        .map_err(|e| codec_err(format!("{description}: {e}")))?;
    if rebuilt.data_type() != decoder.data_type() {
        return Err(DataFusionError::NotImplemented(format!(
            "read_topic('{topic}'): the decoder {description} cannot be sent to a worker (its type has no portable schema)"
        )));
    }
    Ok(Some((schema.into(), description)))
}

fn decoded_from_wire(d: &wire::DecodedTopic) -> Result<Arc<DecodedSpec>> {
    let message_type: DataType = schema_from_wire(&d.message_type)?
        .field_with_name(MESSAGE_FIELD)?
        .data_type()
        .clone();
    let pool = match d.descriptor_pool.is_empty() {
        true => None,
        false => Some(Arc::new(
            prost_reflect::DescriptorPool::decode(d.descriptor_pool.as_ref()).map_err(codec_err)?,
        )),
    };
    let mut decoders: HashMap<(String, u64), Arc<dyn MessageDecoder>> = HashMap::new();
    // Entries that shared a decoder on the coordinator share one here.
    let mut shared: HashMap<(&[u8], &str), Arc<dyn MessageDecoder>> = HashMap::new();
    for p in &d.decoders {
        let key = (p.schema.as_ref(), p.description.as_str());
        let decoder = match shared.get(&key) {
            Some(d) => Arc::clone(d),
            None => {
                let d = json::from_portable_schema(&p.schema, &p.description).map_err(codec_err)?;
                shared.insert(key, Arc::clone(&d));
                d
            }
        };
        decoders.insert((p.file_key.clone(), p.channel_id), decoder);
    }
    let mut definitions = HashMap::new();
    for def in &d.definitions {
        let planned = PlannedDefinition {
            encoding: def.encoding.clone(),
            schema: Arc::from(def.schema.as_ref()),
        };
        for c in &def.channels {
            definitions.insert((c.file_key.clone(), c.channel_id), planned.clone());
        }
    }
    Ok(Arc::new(DecodedSpec {
        topic: d.topic.clone(),
        message_type,
        decoders,
        definitions,
        pool,
        flatten: d.flatten,
        null_on_error: d.null_on_error,
        schema: schema_from_wire(&d.schema)?,
    }))
}
