//! Reading data blocks: the `messages` of a chunk, POD samples, the `series` table.
//!
//! A chunk's blocks are selected from the summary's per-block index first
//! (series by topic; time by binary search where the series' times are
//! sorted, else by filtering), and only the selected blocks' byte ranges are
//! read, adjacent ones in one read. Every block is checked against the index
//! (type 0x00, sizes inside its range, descriptor of the right series).

use prost::Message as _;

use super::index::{
    BddfIndex, Block, ChunkDetail, DATA_BLOCK, DATA_HEAD, PodType, Series, SeriesKind,
    split_header, u32_at, u64_at,
};
use super::proto;
use crate::error::{Error, ErrorContext, Result};
use crate::formats::chunk_io::with_buffers;
use crate::io::ReadAt;
use crate::model::{
    ChunkMeta, ChunkRead, ExtraValue, Flow, Message, MessageReceiver, Nanos, Selection, Summary,
};
use crate::table::{ColumnDef, ColumnType, RowReceiver, ScalarType, TableDef, Value};
use arrow_buffer::Buffer;

/// The reader-private index of `summary`, or an error naming the file.
pub(crate) fn index_of<'s>(summary: &'s Summary, ctx: &ErrorContext) -> Result<&'s BddfIndex> {
    summary.private::<BddfIndex>().ok_or_else(|| {
        Error::Invalid(format!(
            "{}: the summary was not made by the bddf reader",
            ctx.file
        ))
    })
}

/// The chunk's detail, or an error when the chunk is not one of the summary's.
fn detail_of<'s>(
    index: &'s BddfIndex,
    summary: &Summary,
    chunk: &ChunkMeta,
    ctx: &ErrorContext,
) -> Result<&'s ChunkDetail> {
    summary
        .chunk_position(chunk)
        .and_then(|p| index.chunks.get(p))
        .ok_or_else(|| {
            ctx.corrupt(
                chunk.offset,
                "no chunk of the summary starts at this offset",
            )
        })
}

/// Blocks of one series in a chunk that may lie in `time` (inclusive).
fn select_series(
    index: &BddfIndex,
    series: &Series,
    ids: &[usize],
    time: Option<(Nanos, Nanos)>,
    out: &mut Vec<usize>,
) {
    let Some((lo, hi)) = time else {
        out.extend_from_slice(ids);
        return;
    };
    let t = |i: &usize| index.blocks.get(*i).map_or(0, |b| b.time);
    if series.monotonic {
        let a = ids.partition_point(|i| t(i) < lo);
        let b = ids.partition_point(|i| t(i) <= hi);
        if a < b {
            out.extend_from_slice(&ids[a..b]);
        }
    } else {
        out.extend(ids.iter().copied().filter(|i| (lo..=hi).contains(&t(i))));
    }
}

/// The blocks of a chunk that `sel` (and `only` series, if given) may want, in file order.
fn select(
    index: &BddfIndex,
    detail: &ChunkDetail,
    time: Option<(Nanos, Nanos)>,
    mut wants: impl FnMut(&Series) -> bool,
) -> Vec<usize> {
    let mut out = Vec::new();
    for (pos, ids) in &detail.series {
        let Some(series) = index.series.get(*pos as usize) else {
            continue;
        };
        if wants(series) {
            select_series(index, series, ids, time, &mut out);
        }
    }
    out.sort_unstable();
    out
}

/// One data block, parsed.
struct Parsed<'b> {
    payload: &'b [u8],
}

/// Parses the data block `b` from `bytes` (which start at its header).
/// `Ok(Err(total))`: the block is longer than `bytes` (it needs `total` bytes).
fn parse_block<'b>(
    ctx: &ErrorContext,
    series: &Series,
    b: &Block,
    bytes: &'b [u8],
) -> Result<std::result::Result<Parsed<'b>, u64>> {
    let Some(hdr) = u64_at(bytes, 0) else {
        return Ok(Err(DATA_HEAD));
    };
    let (ty, size) = split_header(hdr);
    if ty != DATA_BLOCK {
        return Err(ctx.corrupt(
            b.offset,
            format!(
                "the index points at a block of type {ty:#04x} here, not at a data block (0x00)"
            ),
        ));
    }
    let total = DATA_HEAD + size;
    let Some(block) = usize::try_from(total).ok().and_then(|n| bytes.get(..n)) else {
        return Ok(Err(total));
    };
    let ds = u64::from(u32_at(block, 8).unwrap_or_default());
    if ds > size {
        return Err(ctx.corrupt(
            b.offset,
            format!("data block of {size} bytes declares a data descriptor of {ds} bytes"),
        ));
    }
    let split = (DATA_HEAD + ds) as usize;
    let desc = &block[DATA_HEAD as usize..split];
    let d = proto::DataDescriptor::decode(desc).map_err(|e| {
        ctx.corrupt(
            b.offset + DATA_HEAD,
            format!("data descriptor does not decode: {e}"),
        )
    })?;
    if d.series_index != series.index {
        return Err(ctx.corrupt(
            b.offset,
            format!(
                "data block of series {} where the index expects series {}",
                d.series_index, series.index
            ),
        ));
    }
    Ok(Ok(Parsed {
        payload: &block[split..],
    }))
}

/// Reads the blocks `ids` (file order) and hands each payload to `f`, reading
/// only their byte ranges (adjacent blocks in one read). Returns the number of
/// blocks parsed and whether `f` asked to stop; on damage, the blocks before it
/// have been handed over.
fn for_each_block(
    file: &dyn ReadAt,
    ctx: &ErrorContext,
    index: &BddfIndex,
    ids: &[usize],
    mut f: impl FnMut(&Block, &Series, &[u8], Option<&Buffer>) -> Result<Flow>,
) -> Result<(u64, bool)> {
    with_buffers(|raw, extra| {
        let mut parsed = 0u64;
        let mut k = 0;
        while k < ids.len() {
            // A run of blocks that follow each other in the file.
            let first = k;
            let mut end = index
                .blocks
                .get(ids[k])
                .map_or(0, |b| b.offset.saturating_add(b.extent));
            k += 1;
            while let Some(b) = ids.get(k).and_then(|i| index.blocks.get(*i)) {
                if b.offset != end {
                    break;
                }
                end = b.offset.saturating_add(b.extent);
                k += 1;
            }
            let start = index.blocks.get(ids[first]).map_or(0, |b| b.offset);
            let run: &Buffer = raw.read(file, ctx, start, end - start, "data blocks")?;
            for &id in &ids[first..k] {
                let Some(b) = index.blocks.get(id) else {
                    continue;
                };
                let Some(series) = index.series.get(b.series as usize) else {
                    continue;
                };
                let rel = (b.offset - start) as usize;
                let bytes = run.get(rel..).unwrap_or(&[]);
                let (p, buffer) = match parse_block(ctx, series, b, bytes)? {
                    Ok(p) => (p, run),
                    Err(total) => {
                        // Longer than the index suggested: read it alone.
                        let alone: &Buffer =
                            extra.read(file, ctx, b.offset, total, "data block")?;
                        match parse_block(ctx, series, b, alone)? {
                            Ok(p) => (p, alone),
                            Err(_) => {
                                return Err(ctx.truncated(b.offset, "data block"));
                            }
                        }
                    }
                };
                parsed += 1;
                if f(b, series, p.payload, Some(buffer))? == Flow::Stop {
                    return Ok((parsed, true));
                }
            }
        }
        Ok((parsed, false))
    })
}

/// `read_chunk` for the `messages` table.
pub(crate) fn read_messages(
    file: &dyn ReadAt,
    ctx: &ErrorContext,
    summary: &Summary,
    chunk: &ChunkMeta,
    sel: &Selection,
    receiver: &mut dyn MessageReceiver,
) -> Result<ChunkRead> {
    let index = index_of(summary, ctx)?;
    let detail = detail_of(index, summary, chunk, ctx)?;
    let ids = select(index, detail, sel.time, |s| sel.wants_topic(&s.topic));
    let mut read = ChunkRead {
        skipped: ids.is_empty(),
        ..ChunkRead::default()
    };
    if ids.is_empty() {
        return Ok(read);
    }
    let deliver = |b: &Block,
                   data: &[u8],
                   data_buffer: Option<&Buffer>,
                   receiver: &mut dyn MessageReceiver|
     -> Option<Flow> {
        let series = index.series.get(b.series as usize)?;
        let channel = summary.channels.get(&u64::from(series.index))?;
        let (keys, values) = index.additional_indexes(b);
        let extra = [if series.additional_index_names.is_empty() {
            ExtraValue::Null
        } else {
            ExtraValue::Int64Map { keys, values }
        }];
        Some(receiver.message(Message {
            channel,
            log_time: b.time,
            publish_time: None,
            sequence: None,
            data,
            data_buffer,
            extra: &extra,
        }))
    };
    if !sel.payload {
        // Everything but the payload is in the index (BDDF has no publish
        // time or sequence, so full headers need nothing more): no block is read.
        for &id in &ids {
            let Some(b) = index.blocks.get(id) else {
                continue;
            };
            read.messages += 1;
            if deliver(b, &[], None, receiver) == Some(Flow::Stop) {
                read.stopped = true;
                break;
            }
        }
        return Ok(read);
    }
    let (parsed, stopped) = for_each_block(file, ctx, index, &ids, |b, _, payload, buffer| {
        Ok(deliver(b, payload, buffer, receiver).unwrap_or(Flow::Continue))
    })?;
    read.messages = parsed;
    read.stopped = stopped;
    Ok(read)
}

/// The `series` table definition.
pub(crate) fn series_table() -> TableDef {
    use ColumnType::{List, Scalar, StringMap};
    use ScalarType as S;
    let c = ColumnDef::new;
    TableDef {
        name: "series".into(),
        doc: "one row per BDDF series: identifier, data type, annotations, block statistics".into(),
        columns: vec![
            c(
                "series_index",
                Scalar(S::UInt32),
                "series index in the file (the channel id)",
            ),
            c(
                "topic",
                Scalar(S::Utf8),
                "channel name: the bosdyn:channel spec value, else <series_type>:<k=v,...>",
            ),
            c(
                "series_type",
                Scalar(S::Utf8),
                "series identifier type (bosdyn:channel, bosdyn:grpc:requests, ...)",
            ),
            c("spec", StringMap, "series identifier spec"),
            c(
                "identifier_hash",
                Scalar(S::UInt64),
                "identifier hash stored in the series descriptor",
            ),
            c(
                "hash_ok",
                Scalar(S::Boolean),
                "whether the stored hash(es) equal SHA1(series_type, sorted spec) computed by logsql",
            ),
            c(
                "message_type",
                Scalar(S::Utf8),
                "protobuf type name, or the POD type with dimensions (TYPE_FLOAT64[3])",
            ),
            c(
                "content_type",
                Scalar(S::Utf8),
                "MIME type of message series (application/protobuf, ...); null for POD series",
            ),
            c(
                "type_name",
                Scalar(S::Utf8),
                "type name of message series; null for POD series",
            ),
            c(
                "is_metadata",
                Scalar(S::Boolean),
                "whether a message series holds metadata; null for POD series",
            ),
            c(
                "pod_type",
                Scalar(S::Utf8),
                "POD element type (TYPE_INT8 ... TYPE_FLOAT64); null for message series",
            ),
            c(
                "dimensions",
                List(S::UInt32),
                "POD sample dimensions (empty: scalar); null for message series",
            ),
            c(
                "additional_index_names",
                Scalar(S::Utf8),
                "names of the additional index values, comma-separated",
            ),
            c("annotations", StringMap, "series annotations"),
            c("description", Scalar(S::Utf8), "series description"),
            c("block_count", Scalar(S::UInt64), "data blocks"),
            c(
                "total_bytes",
                Scalar(S::UInt64),
                "payload bytes (from the series block index)",
            ),
            c(
                "monotonic",
                Scalar(S::Boolean),
                "whether block times never decrease in file order",
            ),
            c("start_time", Scalar(S::Timestamp), "earliest block time"),
            c("end_time", Scalar(S::Timestamp), "latest block time"),
        ],
        per_chunk: false,
    }
}

/// Delivers the rows of the `series` table (from the summary alone).
pub(crate) fn read_series_table(index: &BddfIndex, receiver: &mut dyn RowReceiver) {
    for s in &index.series {
        let names = s.additional_index_names.join(",");
        let dims: Vec<u64>;
        let pod_name: String;
        let (content_type, type_name, is_metadata, pod_type, dims_v) = match &s.kind {
            SeriesKind::Message {
                content_type,
                type_name,
                is_metadata,
            } => (
                Value::Str(content_type),
                Value::Str(type_name),
                Value::Bool(*is_metadata),
                Value::Null,
                Value::Null,
            ),
            SeriesKind::Pod { pod_type, dims: d } => {
                dims = d.iter().map(|x| u64::from(*x)).collect();
                pod_name = super::index::pod_type_name(*pod_type);
                (
                    Value::Null,
                    Value::Null,
                    Value::Null,
                    Value::Str(&pod_name),
                    Value::U64s(&dims),
                )
            }
            _ => (
                Value::Null,
                Value::Null,
                Value::Null,
                Value::Null,
                Value::Null,
            ),
        };
        let row = [
            Value::U64(u64::from(s.index)),
            Value::Str(&s.topic),
            Value::Str(&s.series_type),
            Value::Pairs(&s.spec),
            Value::U64(s.identifier_hash),
            Value::Bool(s.hash_ok),
            s.message_type.as_deref().map_or(Value::Null, Value::Str),
            content_type,
            type_name,
            is_metadata,
            pod_type,
            dims_v,
            Value::Str(&names),
            Value::Pairs(&s.annotations),
            Value::Str(&s.description),
            Value::U64(s.block_count),
            Value::U64(s.total_bytes),
            Value::Bool(s.monotonic),
            s.start_time.map_or(Value::Null, Value::Time),
            s.end_time.map_or(Value::Null, Value::Time),
        ];
        if receiver.row(&row) == Flow::Stop {
            return;
        }
    }
}

/// The POD series named by the `pod` table's argument: its position, element
/// type and the number of elements per sample. Errors name the series.
fn pod_series<'i>(
    index: &'i BddfIndex,
    ctx: &ErrorContext,
    arg: Option<&str>,
) -> Result<(usize, &'i Series, PodType, usize)> {
    let pods: Vec<&str> = index
        .series
        .iter()
        .filter(|s| matches!(s.kind, SeriesKind::Pod { .. }))
        .map(|s| s.topic.as_str())
        .collect();
    let listing = if pods.is_empty() {
        "none".to_string()
    } else {
        pods.join(", ")
    };
    let who = if ctx.file.is_empty() {
        String::new()
    } else {
        format!("{}: ", ctx.file)
    };
    let Some(arg) = arg else {
        return Err(Error::Invalid(format!(
            "{who}pod() needs the series as its second argument, e.g. pod('file.bddf', 'imu/accel') or pod('file.bddf', '2'); POD series in this file: {listing}"
        )));
    };
    let Some(pos) = index.find_series(arg) else {
        return Err(Error::Invalid(format!(
            "{who}no series {arg:?} (by topic or series index); POD series in this file: {listing}"
        )));
    };
    let s = &index.series[pos];
    let SeriesKind::Pod { pod_type, dims } = &s.kind else {
        return Err(Error::Invalid(format!(
            "{who}series {arg:?} (series index {}, type {}) is not a POD series; POD series in this file: {listing}",
            s.index,
            s.message_type.as_deref().unwrap_or("unknown")
        )));
    };
    let Some(t) = PodType::from_enum(*pod_type) else {
        return Err(ctx.unsupported(
            s.descriptor_offset,
            format!(
                "series {arg:?} (series index {}) has POD type {pod_type}, not one of the ten known types",
                s.index
            ),
        ));
    };
    let n = dims
        .iter()
        .try_fold(1usize, |acc, d| acc.checked_mul(*d as usize))
        .filter(|n| *n > 0 && n.checked_mul(t.width()).is_some());
    let Some(n) = n else {
        return Err(ctx.corrupt(
            s.descriptor_offset,
            format!(
                "series {arg:?} (series index {}) has unusable POD dimensions {dims:?}",
                s.index
            ),
        ));
    };
    Ok((pos, s, t, n))
}

/// The element type of a POD type as a table scalar type.
fn scalar_of(t: PodType) -> ScalarType {
    match t {
        PodType::Int8 => ScalarType::Int8,
        PodType::Int16 => ScalarType::Int16,
        PodType::Int32 => ScalarType::Int32,
        PodType::Int64 => ScalarType::Int64,
        PodType::UInt8 => ScalarType::UInt8,
        PodType::UInt16 => ScalarType::UInt16,
        PodType::UInt32 => ScalarType::UInt32,
        PodType::UInt64 => ScalarType::UInt64,
        PodType::Float32 => ScalarType::Float32,
        PodType::Float64 => ScalarType::Float64,
    }
}

/// Whether samples of these dimensions are scalars (`[]` or `[1]`).
fn is_scalar(dims: &[u32]) -> bool {
    dims.is_empty() || dims == [1]
}

/// The `pod` table definition for the series named by `arg`.
pub(crate) fn pod_table(
    index: &BddfIndex,
    ctx: &ErrorContext,
    arg: Option<&str>,
) -> Result<TableDef> {
    let (_, s, t, n) = pod_series(index, ctx, arg)?;
    let dims = match &s.kind {
        SeriesKind::Pod { dims, .. } => dims.as_slice(),
        _ => &[],
    };
    let value = if is_scalar(dims) {
        ColumnType::Scalar(scalar_of(t))
    } else {
        ColumnType::FixedList(scalar_of(t), n)
    };
    Ok(TableDef {
        name: "pod".into(),
        doc: format!(
            "POD samples of series {:?} ({}), one row per sample",
            s.topic,
            s.message_type.as_deref().unwrap_or("")
        ),
        columns: vec![
            ColumnDef::new(
                "log_time",
                ColumnType::Scalar(ScalarType::Timestamp),
                "time of the sample's block (BDDF stores only the first sample's time per block)",
            ),
            ColumnDef::new(
                "block",
                ColumnType::Scalar(ScalarType::UInt64),
                "position of the block in its series (0, 1, ...)",
            ),
            ColumnDef::new(
                "sample",
                ColumnType::Scalar(ScalarType::UInt64),
                "position of the sample in its block (0, 1, ...)",
            ),
            ColumnDef::new(
                "value",
                value,
                "the sample: a scalar, or the elements of a vector / matrix in row-major order",
            ),
        ],
        per_chunk: true,
    })
}

/// Reusable element buffers for vector samples.
#[derive(Default)]
struct Elements {
    i: Vec<i64>,
    u: Vec<u64>,
    f: Vec<f64>,
    f32: Vec<f32>,
}

/// Little-endian fixed-width element `k` of `b` (caller checks the bounds).
fn le<const N: usize>(b: &[u8], k: usize) -> [u8; N] {
    let mut a = [0u8; N];
    if let Some(s) = b.get(k * N..k * N + N) {
        a.copy_from_slice(s);
    }
    a
}

/// Element `k` of `b` as a table value.
fn element(t: PodType, b: &[u8], k: usize) -> Value<'static> {
    match t {
        PodType::Int8 => Value::I64(i8::from_le_bytes(le(b, k)).into()),
        PodType::Int16 => Value::I64(i16::from_le_bytes(le(b, k)).into()),
        PodType::Int32 => Value::I64(i32::from_le_bytes(le(b, k)).into()),
        PodType::Int64 => Value::I64(i64::from_le_bytes(le(b, k))),
        PodType::UInt8 => Value::U64(u8::from_le_bytes(le(b, k)).into()),
        PodType::UInt16 => Value::U64(u16::from_le_bytes(le(b, k)).into()),
        PodType::UInt32 => Value::U64(u32::from_le_bytes(le(b, k)).into()),
        PodType::UInt64 => Value::U64(u64::from_le_bytes(le(b, k))),
        PodType::Float32 => Value::F64(f32::from_le_bytes(le(b, k)).into()),
        PodType::Float64 => Value::F64(f64::from_le_bytes(le(b, k))),
    }
}

impl Elements {
    /// The `n` elements of `sample` as one list value.
    fn list(&mut self, t: PodType, sample: &[u8], n: usize) -> Value<'_> {
        self.i.clear();
        self.u.clear();
        self.f.clear();
        self.f32.clear();
        for k in 0..n {
            match (t, element(t, sample, k)) {
                (PodType::Float32, _) => self.f32.push(f32::from_le_bytes(le(sample, k))),
                (_, Value::I64(x)) => self.i.push(x),
                (_, Value::U64(x)) => self.u.push(x),
                (_, Value::F64(x)) => self.f.push(x),
                _ => {}
            }
        }
        match t {
            PodType::Float32 => Value::F32s(&self.f32),
            PodType::Float64 => Value::F64s(&self.f),
            PodType::UInt8 | PodType::UInt16 | PodType::UInt32 | PodType::UInt64 => {
                Value::U64s(&self.u)
            }
            _ => Value::I64s(&self.i),
        }
    }
}

/// `read_table_chunk` for the `pod` table: the samples of the chosen series in one chunk.
#[allow(clippy::too_many_arguments)]
pub(crate) fn read_pod_chunk(
    file: &dyn ReadAt,
    ctx: &ErrorContext,
    summary: &Summary,
    chunk: &ChunkMeta,
    arg: Option<&str>,
    sel: &Selection,
    receiver: &mut dyn RowReceiver,
) -> Result<ChunkRead> {
    let index = index_of(summary, ctx)?;
    let (pos, target, t, n) = pod_series(index, ctx, arg)?;
    let scalar = match &target.kind {
        SeriesKind::Pod { dims, .. } => is_scalar(dims),
        _ => true,
    };
    let detail = detail_of(index, summary, chunk, ctx)?;
    let ids = select(index, detail, sel.time, |s| {
        std::ptr::eq(s, &index.series[pos])
    });
    let mut read = ChunkRead {
        skipped: ids.is_empty(),
        ..ChunkRead::default()
    };
    if ids.is_empty() {
        return Ok(read);
    }
    let sample_len = n * t.width();
    let mut elements = Elements::default();
    let (parsed, stopped) = for_each_block(file, ctx, index, &ids, |b, _, payload, _| {
        let whole = payload.len() / sample_len;
        for j in 0..whole {
            let sample = &payload[j * sample_len..(j + 1) * sample_len];
            let value = if scalar {
                element(t, sample, 0)
            } else {
                elements.list(t, sample, n)
            };
            let row = [
                Value::Time(b.time),
                Value::U64(b.seq),
                Value::U64(j as u64),
                value,
            ];
            if receiver.row(&row) == Flow::Stop {
                return Ok(Flow::Stop);
            }
        }
        if payload.len() % sample_len != 0 {
            return Err(ctx.corrupt(
                b.offset,
                format!(
                    "POD block of {} payload bytes is not a whole number of {sample_len}-byte samples",
                    payload.len()
                ),
            ));
        }
        Ok(Flow::Continue)
    })?;
    read.messages = parsed;
    read.stopped = stopped;
    Ok(read)
}
