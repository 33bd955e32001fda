//! Printing query results as a table, CSV, JSON or NDJSON.
//!
//! CSV, JSON and NDJSON are written batch by batch as the query streams, so
//! memory stays flat however large the result. The table needs every row to
//! size its columns; its cells are rendered to (cut) strings as batches
//! arrive, so a large payload column costs at most `--max-width` characters a
//! row. Timestamps print as RFC 3339 UTC (`2022-11-08T04:07:03.461434034Z`).

use std::io::Write;
use std::sync::Arc;

use datafusion::arrow::array::{Array, ArrayRef, AsArray, RecordBatch, StringBuilder};
use datafusion::arrow::datatypes::{DataType, Field, Schema, SchemaRef};
use datafusion::arrow::util::display::{ArrayFormatter, FormatOptions};
use datafusion::arrow::util::pretty::pretty_format_batches_with_schema;
use datafusion::arrow::{csv, json};
use datafusion::physical_plan::SendableRecordBatchStream;
use futures::StreamExt;
use tokio::runtime::Runtime;

use super::args::Format;
use super::error::{CliError, CliResult};

/// Writes result streams to an output in one [`Format`].
#[derive(Debug, Clone, Copy)]
pub struct Printer {
    /// The output format.
    pub format: Format,
    /// Table cells longer than this many characters are cut (0: never).
    pub max_width: usize,
}

impl Printer {
    /// Prints every batch of `stream` to `out` and returns the number of rows.
    ///
    /// Results without columns (`SET`, `CREATE ...`) print nothing. The stream is
    /// polled on `rt` from the calling thread, so writing never blocks the
    /// runtime's workers.
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
        mut stream: SendableRecordBatchStream,
        out: &mut dyn Write,
    ) -> CliResult<u64> {
        let schema = stream.schema();
        let mut next = || {
            rt.block_on(stream.next())
                .transpose()
                .map_err(CliError::from)
        };
        let mut rows = 0u64;
        if schema.fields().is_empty() {
            while let Some(b) = next()? {
                rows += b.num_rows() as u64;
            }
            return Ok(rows);
        }
        let flush =
            |out: &mut dyn Write| out.flush().map_err(|e| CliError::io("writing output", e));
        match self.format {
            Format::Table => {
                let text_schema = text_schema(&schema);
                let mut cells = Vec::new();
                while let Some(b) = next()? {
                    rows += b.num_rows() as u64;
                    if b.num_rows() > 0 {
                        cells.push(self.text_batch(&b, &text_schema)?);
                    }
                }
                let table = pretty_format_batches_with_schema(text_schema, &cells)?;
                writeln!(out, "{table}").map_err(|e| CliError::io("writing output", e))?;
                flush(out)?;
            }
            Format::Csv => {
                let mut w = csv::WriterBuilder::new().with_header(true).build(&mut *out);
                let mut wrote = false;
                while let Some(b) = next()? {
                    if b.num_rows() > 0 || !wrote {
                        rows += b.num_rows() as u64;
                        // Each write flushes through to `out`.
                        w.write(&b)?;
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
                    .build::<_, json::writer::JsonArray>(&mut *out);
                while let Some(b) = next()? {
                    rows += b.num_rows() as u64;
                    w.write(&b)?;
                    flush(w.get_mut())?;
                }
                w.finish()?;
                let out = w.into_inner();
                writeln!(out).map_err(|e| CliError::io("writing output", e))?;
                flush(out)?;
            }
            Format::Ndjson => {
                let mut w = json::WriterBuilder::new()
                    .with_explicit_nulls(true)
                    .build::<_, json::writer::LineDelimited>(&mut *out);
                while let Some(b) = next()? {
                    rows += b.num_rows() as u64;
                    w.write(&b)?;
                    flush(w.get_mut())?;
                }
                w.finish()?;
                flush(w.get_mut())?;
            }
        }
        Ok(rows)
    }

    /// Renders a batch's cells as (cut) strings.
    fn text_batch(&self, batch: &RecordBatch, text_schema: &SchemaRef) -> CliResult<RecordBatch> {
        let options = FormatOptions::default();
        let columns = batch
            .columns()
            .iter()
            .map(|col| self.column_text(col, &options))
            .collect::<CliResult<Vec<ArrayRef>>>()?;
        Ok(RecordBatch::try_new(Arc::clone(text_schema), columns)?)
    }

    fn column_text(&self, col: &ArrayRef, options: &FormatOptions) -> CliResult<ArrayRef> {
        let mut b = StringBuilder::with_capacity(col.len(), col.len() * 16);
        let binary = |i: usize| -> Option<&[u8]> {
            match col.data_type() {
                DataType::Binary => Some(col.as_binary::<i32>().value(i)),
                DataType::LargeBinary => Some(col.as_binary::<i64>().value(i)),
                DataType::BinaryView => Some(col.as_binary_view().value(i)),
                _ => None,
            }
        };
        let is_binary = matches!(
            col.data_type(),
            DataType::Binary | DataType::LargeBinary | DataType::BinaryView
        );
        let formatter = ArrayFormatter::try_new(col.as_ref(), options)?;
        for i in 0..col.len() {
            if col.is_null(i) {
                b.append_null();
            } else if is_binary {
                b.append_value(self.cut_hex(binary(i).unwrap_or_default()));
            } else {
                b.append_value(self.cut(formatter.value(i).to_string()));
            }
        }
        Ok(Arc::new(b.finish()))
    }

    /// Cuts `s` to `max_width` characters, marking the cut with `…`.
    fn cut(&self, s: String) -> String {
        if self.max_width == 0 || s.chars().count() <= self.max_width {
            return s;
        }
        let mut t: String = s.chars().take(self.max_width.saturating_sub(1)).collect();
        t.push('…');
        t
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
fn text_schema(schema: &Schema) -> SchemaRef {
    Arc::new(Schema::new(
        schema
            .fields()
            .iter()
            .map(|f| Field::new(f.name(), DataType::Utf8, true))
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

    fn print(format: Format, batches: Vec<RecordBatch>, schema: SchemaRef) -> String {
        let rt = tokio::runtime::Builder::new_current_thread()
            .build()
            .unwrap();
        let stream = Box::pin(RecordBatchStreamAdapter::new(
            schema,
            futures::stream::iter(batches.into_iter().map(Ok)),
        ));
        let mut out = Vec::new();
        Printer {
            format,
            max_width: 32,
        }
        .print(&rt, stream, &mut out)
        .unwrap();
        String::from_utf8(out).unwrap()
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
}
