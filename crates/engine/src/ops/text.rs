//! Query results as text, the same in every output that prints them (the
//! CLI's table, CSV, JSON and NDJSON; any front end that answers in text):
//!
//! - timestamps as RFC 3339 with a fixed number of fractional digits per
//!   column, so that the text sorts in time order: 9 for nanoseconds
//!   (`2022-11-08T04:07:03.461434034Z`), 6 for microseconds, 3 for
//!   milliseconds, none for seconds (a nested column takes the unit of its
//!   first timestamp): [`column_strings`], and [`fixed_times`] for Arrow's
//!   CSV and JSON writers, whose own timestamp text drops trailing zeros;
//! - JSON floats JSON has no literal for as the bare tokens `NaN`,
//!   `Infinity` and `-Infinity` (as Python's `json`, pandas and DuckDB read
//!   and write them), never as `null`, which stays SQL NULL:
//!   [`NonFiniteFloats`], an encoder factory for Arrow's JSON writer;
//! - a long cell cut to a width, the cut marked with `…` ([`cut`]).

use std::sync::Arc;

use datafusion::arrow::array::{Array, ArrayRef, AsArray, RecordBatch, StringBuilder};
use datafusion::arrow::compute::{CastOptions, cast_with_options};
use datafusion::arrow::datatypes::{
    DataType, FieldRef, Float16Type, Float32Type, Float64Type, Schema, TimeUnit,
};
use datafusion::arrow::error::ArrowError;
use datafusion::arrow::json;
use datafusion::arrow::util::display::{ArrayFormatter, FormatOptions};

/// JSON encoding of float columns (nested ones too) that writes NaN and
/// ±infinity as the tokens `NaN`, `Infinity` and `-Infinity` instead of
/// Arrow's `null`; finite values print as Arrow prints them.
#[derive(Debug)]
pub struct NonFiniteFloats;

/// Encoder options without a factory: Arrow's own float encoding.
static PLAIN_JSON: std::sync::LazyLock<json::writer::EncoderOptions> =
    std::sync::LazyLock::new(json::writer::EncoderOptions::default);

impl json::writer::EncoderFactory for NonFiniteFloats {
    fn make_default_encoder<'a>(
        &self,
        field: &'a FieldRef,
        array: &'a dyn Array,
        _options: &'a json::writer::EncoderOptions,
    ) -> Result<Option<json::writer::NullableEncoder<'a>>, ArrowError> {
        let as_f64: Box<dyn Fn(usize) -> f64 + 'a> = match array.data_type() {
            DataType::Float16 => {
                let a = array.as_primitive::<Float16Type>();
                Box::new(move |i| a.value(i).to_f64())
            }
            DataType::Float32 => {
                let a = array.as_primitive::<Float32Type>();
                Box::new(move |i| f64::from(a.value(i)))
            }
            DataType::Float64 => {
                let a = array.as_primitive::<Float64Type>();
                Box::new(move |i| a.value(i))
            }
            _ => return Ok(None),
        };
        let finite = json::writer::make_encoder(field, array, &PLAIN_JSON)?;
        Ok(Some(json::writer::NullableEncoder::new(
            Box::new(FloatEncoder { as_f64, finite }),
            array.nulls().cloned(),
        )))
    }
}

/// One float column's encoder (see [`NonFiniteFloats`]).
struct FloatEncoder<'a> {
    as_f64: Box<dyn Fn(usize) -> f64 + 'a>,
    finite: json::writer::NullableEncoder<'a>,
}

impl json::writer::Encoder for FloatEncoder<'_> {
    fn encode(&mut self, idx: usize, out: &mut Vec<u8>) {
        let v = (self.as_f64)(idx);
        if v.is_nan() {
            out.extend_from_slice(b"NaN");
        } else if v == f64::INFINITY {
            out.extend_from_slice(b"Infinity");
        } else if v == f64::NEG_INFINITY {
            out.extend_from_slice(b"-Infinity");
        } else {
            self.finite.encode(idx, out);
        }
    }
}

/// RFC 3339 formats of timestamps by unit (second, milli, micro, nano): naive,
/// UTC (`Z`) and with an offset.
const TIME_FORMATS: [[&str; 3]; 4] = [
    [
        "%Y-%m-%dT%H:%M:%S",
        "%Y-%m-%dT%H:%M:%SZ",
        "%Y-%m-%dT%H:%M:%S%:z",
    ],
    [
        "%Y-%m-%dT%H:%M:%S%.3f",
        "%Y-%m-%dT%H:%M:%S%.3fZ",
        "%Y-%m-%dT%H:%M:%S%.3f%:z",
    ],
    [
        "%Y-%m-%dT%H:%M:%S%.6f",
        "%Y-%m-%dT%H:%M:%S%.6fZ",
        "%Y-%m-%dT%H:%M:%S%.6f%:z",
    ],
    [
        "%Y-%m-%dT%H:%M:%S%.9f",
        "%Y-%m-%dT%H:%M:%S%.9fZ",
        "%Y-%m-%dT%H:%M:%S%.9f%:z",
    ],
];

/// How a column's values print: timestamps with the fixed number of
/// fractional digits of their unit, everything else as Arrow prints it.
/// In a nested column, the first timestamp type inside decides.
fn format_options(data_type: &DataType) -> FormatOptions<'static> {
    let Some(DataType::Timestamp(unit, tz)) = first_timestamp(data_type) else {
        return FormatOptions::default();
    };
    let formats = &TIME_FORMATS[match unit {
        TimeUnit::Second => 0,
        TimeUnit::Millisecond => 1,
        TimeUnit::Microsecond => 2,
        TimeUnit::Nanosecond => 3,
    }];
    let utc = tz
        .as_deref()
        .is_some_and(|tz| matches!(tz, "UTC" | "Z" | "+00:00" | "Etc/UTC"));
    FormatOptions::default()
        .with_timestamp_format(Some(formats[0]))
        .with_timestamp_tz_format(Some(if utc { formats[1] } else { formats[2] }))
}

/// `data_type` if it is a timestamp, else the first timestamp type nested in it.
fn first_timestamp(data_type: &DataType) -> Option<&DataType> {
    match data_type {
        DataType::Timestamp(..) => Some(data_type),
        DataType::Struct(fields) => fields.iter().find_map(|f| first_timestamp(f.data_type())),
        DataType::List(f)
        | DataType::LargeList(f)
        | DataType::ListView(f)
        | DataType::LargeListView(f)
        | DataType::FixedSizeList(f, _)
        | DataType::Map(f, _) => first_timestamp(f.data_type()),
        _ => None,
    }
}

/// A column's values as strings (nulls stay null), each passed through `map`.
pub fn column_strings(
    col: &ArrayRef,
    map: impl Fn(String) -> String,
) -> Result<ArrayRef, ArrowError> {
    let options = format_options(col.data_type());
    let formatter = ArrayFormatter::try_new(col.as_ref(), &options)?;
    let mut b = StringBuilder::with_capacity(col.len(), col.len() * 16);
    for i in 0..col.len() {
        if col.is_null(i) {
            b.append_null();
        } else {
            b.append_value(map(formatter.value(i).to_string()));
        }
    }
    Ok(Arc::new(b.finish()))
}

/// `batch` with its timestamps (also those nested in structs and lists) as
/// fixed-width RFC 3339 text, for the CSV and JSON writers, whose own
/// timestamp text drops trailing zeros.
pub fn fixed_times(batch: &RecordBatch) -> Result<RecordBatch, ArrowError> {
    let schema = batch.schema();
    let mut changed = false;
    let mut fields = Vec::with_capacity(schema.fields().len());
    let mut columns = Vec::with_capacity(schema.fields().len());
    for (f, col) in schema.fields().iter().zip(batch.columns()) {
        let text = times_as_text(f.data_type());
        if &text == f.data_type() {
            fields.push(Arc::clone(f));
            columns.push(Arc::clone(col));
            continue;
        }
        let options = CastOptions {
            safe: false,
            format_options: format_options(f.data_type()),
        };
        columns.push(cast_with_options(col, &text, &options)?);
        fields.push(Arc::new(f.as_ref().clone().with_data_type(text)));
        changed = true;
    }
    if !changed {
        return Ok(batch.clone());
    }
    RecordBatch::try_new(Arc::new(Schema::new(fields)), columns)
}

/// `data_type` with every timestamp in it (nested in structs and lists too) as Utf8.
fn times_as_text(data_type: &DataType) -> DataType {
    let field = |f: &FieldRef| {
        Arc::new(
            f.as_ref()
                .clone()
                .with_data_type(times_as_text(f.data_type())),
        )
    };
    match data_type {
        DataType::Timestamp(..) => DataType::Utf8,
        DataType::Struct(fields) => DataType::Struct(fields.iter().map(field).collect()),
        DataType::List(f) => DataType::List(field(f)),
        DataType::LargeList(f) => DataType::LargeList(field(f)),
        DataType::FixedSizeList(f, n) => DataType::FixedSizeList(field(f), *n),
        other => other.clone(),
    }
}

/// `s` cut to `max` characters, its last one `…` when cut (`max` 0: never cut).
pub fn cut(s: String, max: usize) -> String {
    if max == 0 || s.chars().count() <= max {
        return s;
    }
    let mut t: String = s.chars().take(max - 1).collect();
    t.push('…');
    t
}
