//! Printing query results as a table, CSV, JSON or NDJSON.
//!
//! CSV, JSON and NDJSON are written batch by batch as the query streams, so
//! memory stays flat however large the result. The table needs its rows to
//! size its columns: it keeps the first `--max-rows` rows (as cut strings: a
//! large payload column costs at most `--max-width` characters a row) and only
//! counts the rest. EXPLAIN results (`plan_type`, `plan`) print whole.
//!
//! Values print as [`logsql::ops::text`] writes them: timestamps as RFC 3339
//! with the fixed fractional digits of their unit (so the text sorts in time
//! order), and in JSON and NDJSON the non-finite floats as the tokens `NaN`,
//! `Infinity` and `-Infinity`, never as `null`, which stays SQL NULL.
//!
//! When the stream fails after some batches, every format first prints the
//! rows it received (the table so far; JSON closes its array), then returns
//! the error.

use std::io::Write;
use std::sync::Arc;

use datafusion::arrow::array::{Array, ArrayRef, AsArray, RecordBatch, StringBuilder};
use datafusion::arrow::datatypes::{DataType, Field, Schema, SchemaRef};
use datafusion::arrow::util::pretty::pretty_format_batches_with_schema;
use datafusion::arrow::{csv, json};
use datafusion::physical_plan::SendableRecordBatchStream;
use futures::StreamExt;
use tokio::runtime::Runtime;

use super::args::Format;
use super::error::{CliError, CliResult};
use logsql::ops::text::{NonFiniteFloats, column_strings, cut, fixed_times};

/// Writes result streams to an output in one [`Format`].
#[derive(Debug, Clone, Copy)]
pub struct Printer {
    /// The output format.
    pub format: Format,
    /// Table cells longer than this many characters are cut (0: never).
    pub max_width: usize,
    /// Table output shows at most this many rows (`None`: all) and counts the rest.
    pub max_rows: Option<usize>,
    /// Table cells and headers show control characters escaped (stdout is a
    /// terminal; see [`super::terminal`]), escaped before the columns are sized.
    pub escape: bool,
}

/// The batches of a stream, polled on a runtime; a stream error ends them and
/// is kept for after the rows received so far are printed.
struct Batches<'a> {
    rt: &'a Runtime,
    stream: SendableRecordBatchStream,
    error: Option<CliError>,
}

impl Batches<'_> {
    /// The next batch, or `None` at the end of the stream or at its first error.
    fn next(&mut self) -> Option<RecordBatch> {
        if self.error.is_some() {
            return None;
        }
        match self.rt.block_on(self.stream.next())? {
            Ok(b) => Some(b),
            Err(e) => {
                self.error = Some(CliError::from(e));
                None
            }
        }
    }

    /// `rows` when the stream ended normally, else its error.
    fn finish(self, rows: u64) -> CliResult<u64> {
        match self.error {
            Some(e) => Err(e),
            None => Ok(rows),
        }
    }
}

impl Printer {
    /// Prints every batch of `stream` to `out` and returns the number of rows.
    ///
    /// Results without columns (`SET`, `CREATE ...`) print nothing. The stream is
    /// polled on `rt` from the calling thread, so writing never blocks the
    /// runtime's workers. A stream error is returned after the rows received
    /// before it are printed.
    pub fn print(
        &self,
        rt: &Runtime,
        stream: SendableRecordBatchStream,
        out: &mut dyn Write,
    ) -> CliResult<u64> {
        let mut watched = Watch {
            inner: out,
            broken: false,
        };
        let result = self.print_to(rt, stream, &mut watched);
        // Writers that turn I/O errors into strings (CSV) lose the kind: recover it.
        match result {
            Err(_) if watched.broken => Err(CliError::BrokenPipe),
            r => r,
        }
    }

    fn print_to(
        &self,
        rt: &Runtime,
        stream: SendableRecordBatchStream,
        out: &mut dyn Write,
    ) -> CliResult<u64> {
        let schema = stream.schema();
        let mut batches = Batches {
            rt,
            stream,
            error: None,
        };
        let mut rows = 0u64;
        if schema.fields().is_empty() {
            while let Some(b) = batches.next() {
                rows += b.num_rows() as u64;
            }
            return batches.finish(rows);
        }
        let flush =
            |out: &mut dyn Write| out.flush().map_err(|e| CliError::io("writing output", e));
        match self.format {
            Format::Junit => {
                return Err(CliError::msg(
                    "--format junit is for logsql check; query results print as table, csv, json or ndjson",
                ));
            }
            Format::Table => {
                let printer = if is_explain(&schema) {
                    // Plans print whole: every line, every metric.
                    Self {
                        max_width: 0,
                        max_rows: None,
                        ..*self
                    }
                } else {
                    *self
                };
                let text_schema = text_schema(&schema, printer.escape);
                let mut cells = Vec::new();
                let mut shown = 0usize;
                while let Some(b) = batches.next() {
                    rows += b.num_rows() as u64;
                    let room = printer.max_rows.map_or(b.num_rows(), |m| m - shown);
                    let keep = b.num_rows().min(room);
                    if keep > 0 {
                        cells.push(printer.text_batch(&b.slice(0, keep), &text_schema)?);
                        shown += keep;
                    }
                }
                if rows == 0 && batches.error.is_some() {
                    // An error before any row (or Ctrl-C): no empty table above it.
                    return batches.finish(rows);
                }
                let table = pretty_format_batches_with_schema(text_schema, &cells)?;
                writeln!(out, "{table}").map_err(|e| CliError::io("writing output", e))?;
                if (shown as u64) < rows {
                    writeln!(out, "{rows} rows ({shown} shown)")
                        .map_err(|e| CliError::io("writing output", e))?;
                }
                flush(out)?;
            }
            Format::Csv => {
                check_flat(&schema)?;
                let mut w = csv::WriterBuilder::new().with_header(true).build(&mut *out);
                let mut wrote = false;
                while let Some(b) = batches.next() {
                    if b.num_rows() > 0 || !wrote {
                        rows += b.num_rows() as u64;
                        // Each write flushes through to `out`.
                        w.write(&fixed_times(&b)?)?;
                        wrote = true;
                    }
                }
                if !wrote {
                    w.write(&RecordBatch::new_empty(Arc::clone(&schema)))?;
                }
                flush(w.into_inner())?;
            }
            Format::Json => {
                let mut w = json::WriterBuilder::new()
                    .with_explicit_nulls(true)
                    .with_encoder_factory(Arc::new(NonFiniteFloats))
                    .build::<_, json::writer::JsonArray>(&mut *out);
                while let Some(b) = batches.next() {
                    rows += b.num_rows() as u64;
                    w.write(&fixed_times(&b)?)?;
                    flush(w.get_mut())?;
                }
                // Closes the array, also after a stream error: stdout stays valid JSON.
                w.finish()?;
                let out = w.into_inner();
                writeln!(out).map_err(|e| CliError::io("writing output", e))?;
                flush(out)?;
            }
            Format::Ndjson => {
                let mut w = json::WriterBuilder::new()
                    .with_explicit_nulls(true)
                    .with_encoder_factory(Arc::new(NonFiniteFloats))
                    .build::<_, json::writer::LineDelimited>(&mut *out);
                while let Some(b) = batches.next() {
                    rows += b.num_rows() as u64;
                    w.write(&fixed_times(&b)?)?;
                    flush(w.get_mut())?;
                }
                w.finish()?;
                flush(w.get_mut())?;
            }
        }
        batches.finish(rows)
    }

    /// Renders a batch's cells as (cut) strings.
    fn text_batch(&self, batch: &RecordBatch, text_schema: &SchemaRef) -> CliResult<RecordBatch> {
        let columns = batch
            .columns()
            .iter()
            .map(|col| self.column_text(col))
            .collect::<CliResult<Vec<ArrayRef>>>()?;
        Ok(RecordBatch::try_new(Arc::clone(text_schema), columns)?)
    }

    fn column_text(&self, col: &ArrayRef) -> CliResult<ArrayRef> {
        let binary = |i: usize| -> Option<&[u8]> {
            match col.data_type() {
                DataType::Binary => Some(col.as_binary::<i32>().value(i)),
                DataType::LargeBinary => Some(col.as_binary::<i64>().value(i)),
                DataType::BinaryView => Some(col.as_binary_view().value(i)),
                _ => None,
            }
        };
        if matches!(
            col.data_type(),
            DataType::Binary | DataType::LargeBinary | DataType::BinaryView
        ) {
            let mut b = StringBuilder::with_capacity(col.len(), col.len() * 16);
            for i in 0..col.len() {
                if col.is_null(i) {
                    b.append_null();
                } else {
                    b.append_value(self.cut_hex(binary(i).unwrap_or_default()));
                }
            }
            return Ok(Arc::new(b.finish()));
        }
        Ok(column_strings(col, |s| match self.escape {
            true => self.cut(super::terminal::escape(&s).into_owned()),
            false => self.cut(s),
        })?)
    }

    /// Cuts `s` to `max_width` characters, marking the cut with `…`.
    fn cut(&self, s: String) -> String {
        cut(s, self.max_width)
    }

    /// Hex of `data` (as Arrow prints binary), formatting only what fits.
    fn cut_hex(&self, data: &[u8]) -> String {
        let fits = if self.max_width == 0 || data.len() * 2 <= self.max_width {
            data.len()
        } else {
            self.max_width.saturating_sub(1) / 2
        };
        let mut s: String = data[..fits].iter().map(|b| format!("{b:02x}")).collect();
        if fits < data.len() {
            s.push('…');
        }
        s
    }
}

/// Whether a result is a query plan (`EXPLAIN`, `EXPLAIN ANALYZE`): columns
/// `plan_type` and `plan`, both text.
fn is_explain(schema: &Schema) -> bool {
    let f = schema.fields();
    f.len() == 2
        && f[0].name() == "plan_type"
        && f[1].name() == "plan"
        && f.iter().all(|f| f.data_type() == &DataType::Utf8)
}

/// Fails when a column is nested (struct, list, map, ...): CSV cannot hold it.
fn check_flat(schema: &Schema) -> CliResult {
    match schema.fields().iter().find(|f| f.data_type().is_nested()) {
        None => Ok(()),
        Some(f) => {
            let kind = match f.data_type() {
                DataType::Struct(_) => "a struct",
                DataType::Map(..) => "a map",
                DataType::Union(..) => "a union",
                DataType::Dictionary(..) | DataType::RunEndEncoded(..) => "nested",
                _ => "a list",
            };
            Err(CliError::msg(format!(
                "column '{}' is {kind}, which CSV cannot hold: select its fields \
                 (read_topic(..., 'flatten') gives flat dotted columns) or use --format json / ndjson",
                f.name(),
            )))
        }
    }
}

/// A writer that remembers whether the reader of the output went away.
struct Watch<'a> {
    inner: &'a mut dyn Write,
    broken: bool,
}

impl Watch<'_> {
    fn note<T>(&mut self, r: std::io::Result<T>) -> std::io::Result<T> {
        if let Err(e) = &r
            && e.kind() == std::io::ErrorKind::BrokenPipe
        {
            self.broken = true;
        }
        r
    }
}

impl Write for Watch<'_> {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        let r = self.inner.write(buf);
        self.note(r)
    }

    fn flush(&mut self) -> std::io::Result<()> {
        let r = self.inner.flush();
        self.note(r)
    }
}

/// The schema of a result rendered as text: same names, every column Utf8.
fn text_schema(schema: &Schema, escape: bool) -> SchemaRef {
    Arc::new(Schema::new(
        schema
            .fields()
            .iter()
            .map(|f| {
                let name = if escape {
                    super::terminal::escape(f.name()).into_owned()
                } else {
                    f.name().clone()
                };
                Field::new(name, DataType::Utf8, true)
            })
            .collect::<Vec<_>>(),
    ))
}

#[cfg(test)]
mod tests {
    use super::*;
    use datafusion::arrow::array::{
        BinaryArray, Int64Array, StringArray, TimestampNanosecondArray,
    };
    use datafusion::physical_plan::stream::RecordBatchStreamAdapter;

    fn sample() -> RecordBatch {
        let ts = TimestampNanosecondArray::from(vec![Some(1_667_880_423_461_434_034), None])
            .with_timezone("UTC");
        RecordBatch::try_from_iter([
            (
                "topic",
                Arc::new(StringArray::from(vec!["/tf", "/diagnostics"])) as ArrayRef,
            ),
            ("n", Arc::new(Int64Array::from(vec![774, 52])) as ArrayRef),
            ("log_time", Arc::new(ts) as ArrayRef),
            (
                "data",
                Arc::new(BinaryArray::from(vec![&[0xabu8; 40][..], &[1u8, 2][..]])) as ArrayRef,
            ),
        ])
        .unwrap()
    }

    /// Prints `items` (batches, or an error) with `printer`: its output and result.
    fn print_with(
        printer: Printer,
        items: Vec<datafusion::error::Result<RecordBatch>>,
        schema: SchemaRef,
    ) -> (String, CliResult<u64>) {
        let rt = tokio::runtime::Builder::new_current_thread()
            .build()
            .unwrap();
        let stream = Box::pin(RecordBatchStreamAdapter::new(
            schema,
            futures::stream::iter(items),
        ));
        let mut out = Vec::new();
        let result = printer.print(&rt, stream, &mut out);
        (String::from_utf8(out).unwrap(), result)
    }

    fn printer(format: Format) -> Printer {
        Printer {
            format,
            max_width: 32,
            max_rows: None,
            escape: false,
        }
    }

    fn print(format: Format, batches: Vec<RecordBatch>, schema: SchemaRef) -> String {
        let (out, result) = print_with(
            printer(format),
            batches.into_iter().map(Ok).collect(),
            schema,
        );
        result.unwrap();
        out
    }

    #[test]
    fn every_format_prints_rfc3339_and_values() {
        let b = sample();
        let table = print(Format::Table, vec![b.clone()], b.schema());
        assert!(
            table.contains(
                "| /tf          | 774 | 2022-11-08T04:07:03.461434034Z | ababababababababababababababab… |"
            ),
            "{table}"
        );
        let csv = print(Format::Csv, vec![b.clone(), b.clone()], b.schema());
        assert_eq!(csv.lines().count(), 5, "{csv}");
        assert!(
            csv.starts_with("topic,n,log_time,data\n/tf,774,2022-11-08T04:07:03.461434034Z,abab"),
            "{csv}"
        );
        let json = print(Format::Json, vec![b.clone(), b.clone()], b.schema());
        let v: serde_json::Value = serde_json::from_str(&json).unwrap();
        assert_eq!(v.as_array().unwrap().len(), 4);
        assert_eq!(v[0]["log_time"], "2022-11-08T04:07:03.461434034Z");
        assert_eq!(v[1]["log_time"], serde_json::Value::Null);
        let nd = print(Format::Ndjson, vec![b.clone()], b.schema());
        assert_eq!(nd.lines().count(), 2);
    }

    #[test]
    fn empty_results_keep_their_header() {
        let b = sample();
        assert_eq!(print(Format::Json, vec![], b.schema()), "[]\n");
        assert_eq!(
            print(Format::Csv, vec![], b.schema()),
            "topic,n,log_time,data\n"
        );
        assert!(
            print(Format::Table, vec![], b.schema()).contains("| topic | n | log_time | data |")
        );
        assert_eq!(print(Format::Table, vec![], Arc::new(Schema::empty())), "");
    }

    /// Batches, then a stream error (as a damaged file ends its stream).
    fn failing(b: &RecordBatch) -> Vec<datafusion::error::Result<RecordBatch>> {
        vec![
            Ok(b.clone()),
            Ok(b.clone()),
            Err(datafusion::error::DataFusionError::Execution(
                "run.mcap: truncated".into(),
            )),
        ]
    }

    #[test]
    fn every_format_prints_the_rows_before_a_stream_error() {
        let b = sample();
        for format in [Format::Table, Format::Csv, Format::Json, Format::Ndjson] {
            let (out, result) = print_with(printer(format), failing(&b), b.schema());
            let err = result.expect_err("the stream error is returned");
            assert!(err.to_string().contains("run.mcap: truncated"), "{err}");
            match format {
                Format::Table => {
                    assert_eq!(out.matches("| /tf ").count(), 2, "{out}");
                    assert!(out.ends_with("+\n"), "{out}");
                }
                Format::Csv => assert_eq!(out.lines().count(), 5, "{out}"),
                Format::Json => {
                    let v: serde_json::Value = serde_json::from_str(&out).expect("valid JSON");
                    assert_eq!(v.as_array().unwrap().len(), 4);
                }
                Format::Ndjson => assert_eq!(out.lines().count(), 4, "{out}"),
                Format::Junit => unreachable!("not a query format"),
            }
        }
        // An error before any row prints no (empty) table; JSON stays valid.
        let (out, result) =
            print_with(printer(Format::Table), failing(&b).split_off(2), b.schema());
        assert!(result.is_err());
        assert_eq!(out, "");
        let (out, _) = print_with(printer(Format::Json), failing(&b).split_off(2), b.schema());
        assert_eq!(out, "[]\n");
    }

    #[test]
    fn explain_plans_print_whole() {
        let line = format!(
            "DataSourceExec: file_groups={{1 group: [[{}]]}}, metrics=[chunks_read=3, chunks_total=413]",
            "x".repeat(80)
        );
        let plan = RecordBatch::try_from_iter([
            (
                "plan_type",
                Arc::new(StringArray::from(vec!["Plan with Metrics"])) as ArrayRef,
            ),
            (
                "plan",
                Arc::new(StringArray::from(vec![format!(
                    "ProjectionExec: expr=[a]\n  {line}"
                )])) as ArrayRef,
            ),
        ])
        .unwrap();
        let out = print(Format::Table, vec![plan.clone()], plan.schema());
        assert!(
            out.contains(&format!("|                   |   {line} |")),
            "{out}"
        );
        assert!(out.contains("chunks_read=3, chunks_total=413]"), "{out}");
        assert!(!out.contains('…'), "{out}");
    }

    #[test]
    fn csv_refuses_nested_columns_before_any_output() {
        let nested = datafusion::arrow::array::StructArray::from(vec![(
            Arc::new(Field::new("x", DataType::Float64, false)),
            Arc::new(datafusion::arrow::array::Float64Array::from(vec![1.5])) as ArrayRef,
        )]);
        let b = RecordBatch::try_from_iter([("linear_acceleration", Arc::new(nested) as ArrayRef)])
            .unwrap();
        let (out, result) = print_with(printer(Format::Csv), vec![Ok(b.clone())], b.schema());
        assert_eq!(out, "");
        assert_eq!(
            result.unwrap_err().to_string(),
            "column 'linear_acceleration' is a struct, which CSV cannot hold: \
             select its fields (read_topic(..., 'flatten') gives flat dotted columns) or use --format json / ndjson"
        );
    }

    #[test]
    fn timestamps_have_the_fixed_digits_of_their_unit() {
        use datafusion::arrow::array::{
            TimestampMicrosecondArray, TimestampMillisecondArray, TimestampSecondArray,
        };
        let b = RecordBatch::try_from_iter([
            (
                "ns",
                Arc::new(
                    TimestampNanosecondArray::from(vec![1_490_149_580_100_000_000])
                        .with_timezone("UTC"),
                ) as ArrayRef,
            ),
            (
                "us",
                Arc::new(TimestampMicrosecondArray::from(vec![1_490_149_580_000_000])) as ArrayRef,
            ),
            (
                "ms",
                Arc::new(
                    TimestampMillisecondArray::from(vec![1_490_149_580_120])
                        .with_timezone("+02:00"),
                ) as ArrayRef,
            ),
            (
                "s",
                Arc::new(TimestampSecondArray::from(vec![1_490_149_580]).with_timezone("UTC"))
                    as ArrayRef,
            ),
        ])
        .unwrap();
        let csv = print(Format::Csv, vec![b.clone()], b.schema());
        assert_eq!(
            csv,
            "ns,us,ms,s\n2017-03-22T02:26:20.100000000Z,2017-03-22T02:26:20.000000,\
             2017-03-22T04:26:20.120+02:00,2017-03-22T02:26:20Z\n"
        );
        let nd = print(Format::Ndjson, vec![b.clone()], b.schema());
        assert_eq!(
            nd,
            "{\"ns\":\"2017-03-22T02:26:20.100000000Z\",\"us\":\"2017-03-22T02:26:20.000000\",\
             \"ms\":\"2017-03-22T04:26:20.120+02:00\",\"s\":\"2017-03-22T02:26:20Z\"}\n"
        );
        let json = print(Format::Json, vec![b.clone()], b.schema());
        assert_eq!(format!("[{}]\n", nd.trim_end()), json);
        let table = print(Format::Table, vec![b.clone()], b.schema());
        assert!(
            table.contains(
                "| 2017-03-22T02:26:20.100000000Z | 2017-03-22T02:26:20.000000 | 2017-03-22T04:26:20.120+02:00 | 2017-03-22T02:26:20Z |"
            ),
            "{table}"
        );
    }

    #[test]
    fn max_rows_keeps_the_first_rows_and_counts_the_rest() {
        let b = sample();
        let p = Printer {
            max_rows: Some(3),
            ..printer(Format::Table)
        };
        let (out, result) = print_with(
            p,
            vec![Ok(b.clone()), Ok(b.clone()), Ok(b.clone())],
            b.schema(),
        );
        assert_eq!(result.unwrap(), 6);
        assert_eq!(out.matches("| /tf ").count(), 2, "{out}");
        assert_eq!(out.matches("| /diagnostics ").count(), 1, "{out}");
        assert!(out.ends_with("+\n6 rows (3 shown)\n"), "{out}");
        // CSV is not cut.
        let p = Printer {
            max_rows: Some(3),
            ..printer(Format::Csv)
        };
        let (out, _) = print_with(p, vec![Ok(b.clone()), Ok(b.clone())], b.schema());
        assert_eq!(out.lines().count(), 5, "{out}");
    }
}
