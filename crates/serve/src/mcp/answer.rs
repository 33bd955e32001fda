//! A query's rows as an agent reads them: a compact text table and the same
//! rows as JSON (times as RFC 3339 with the digits of their unit, NaN and the
//! infinities as tokens, as every logsql text output writes them:
//! [`logsql::ops::text`]), cut at a number of rows and of bytes with a note
//! saying so. The stream is dropped as soon as the answer is full, which
//! stops the query.

use std::sync::Arc;

use datafusion::arrow::array::{ArrayRef, RecordBatch};
use datafusion::arrow::datatypes::{DataType, Field, Schema, SchemaRef};
use datafusion::arrow::json;
use datafusion::arrow::util::pretty::pretty_format_batches_with_schema;
use datafusion::error::Result;
use datafusion::physical_plan::SendableRecordBatchStream;
use futures::StreamExt;
use logsql::ops::text::{NonFiniteFloats, column_strings, cut, fixed_times};
use serde_json::{Value, json};

/// Characters a table cell shows before it is cut (`…`).
const CELL_CHARS: usize = 80;

/// How much an answer may hold.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Caps {
    /// Rows.
    pub rows: usize,
    /// Bytes of the rows' JSON.
    pub bytes: usize,
}

/// The rows of a result, as far as the caps let them come.
#[derive(Debug)]
pub(crate) struct Answer {
    /// The result's columns: name and type.
    pub columns: Vec<(String, String)>,
    /// The rows kept.
    pub batches: Vec<RecordBatch>,
    /// Each row kept, as the text of a JSON object.
    pub json: Vec<String>,
    /// Why the result was cut, if it was.
    pub cut: Option<String>,
    schema: SchemaRef,
}

impl Answer {
    /// The rows kept.
    pub fn rows(&self) -> usize {
        self.json.len()
    }

    /// The rows as an aligned text table (cells cut at [`CELL_CHARS`]
    /// characters), and a last line saying how many rows and whether the
    /// result was cut.
    pub fn table(&self) -> Result<String> {
        let text_schema = Arc::new(Schema::new(
            self.schema
                .fields()
                .iter()
                .map(|f| Field::new(f.name(), DataType::Utf8, true))
                .collect::<Vec<_>>(),
        ));
        let mut cells = Vec::with_capacity(self.batches.len());
        for batch in &self.batches {
            let columns = batch
                .columns()
                .iter()
                .map(|c| column_strings(c, |s| cut(s, CELL_CHARS)))
                .collect::<std::result::Result<Vec<ArrayRef>, _>>()?;
            cells.push(RecordBatch::try_new(Arc::clone(&text_schema), columns)?);
        }
        let mut text = pretty_format_batches_with_schema(text_schema, &cells)?.to_string();
        let n = self.rows();
        let s = if n == 1 { "" } else { "s" };
        text.push_str(&format!("\n{n} row{s}"));
        if let Some(cut) = &self.cut {
            text.push_str(&format!(" ({cut})"));
        }
        Ok(text)
    }

    /// The columns, rows and cut as the text of one JSON object (the rows
    /// as logsql's JSON output writes them, `NaN` and the infinities as
    /// tokens).
    pub fn json_text(&self) -> String {
        let columns: Vec<Value> = self
            .columns
            .iter()
            .map(|(name, ty)| json!({"name": name, "type": ty}))
            .collect();
        format!(
            "{{\"columns\": {}, \"row_count\": {}, \"truncated\": {}, \"note\": {}, \"rows\": [{}]}}",
            Value::Array(columns),
            self.rows(),
            self.cut.is_some(),
            json!(self.cut),
            self.json.join(", ")
        )
    }
}

/// The rows of `stream` within `caps`.
pub(crate) async fn collect(mut stream: SendableRecordBatchStream, caps: Caps) -> Result<Answer> {
    let schema = stream.schema();
    let columns = schema
        .fields()
        .iter()
        .map(|f| (f.name().clone(), f.data_type().to_string()))
        .collect();
    let mut answer = Answer {
        columns,
        batches: Vec::new(),
        json: Vec::new(),
        cut: None,
        schema: Arc::clone(&schema),
    };
    let mut bytes = 0usize;
    while let Some(batch) = stream.next().await {
        let batch = batch?;
        if batch.num_rows() == 0 {
            continue;
        }
        let rows_cut = format!(
            "cut at {} rows: the result has more; add a LIMIT, a WHERE or an aggregate",
            caps.rows
        );
        if answer.rows() == caps.rows {
            answer.cut = Some(rows_cut);
            break;
        }
        let room = caps.rows - answer.rows();
        let more = batch.num_rows() > room;
        let batch = batch.slice(0, batch.num_rows().min(room));
        let lines = json_lines(&batch)?;
        let mut keep = 0;
        for line in &lines {
            if bytes + line.len() > caps.bytes {
                answer.cut = Some(format!(
                    "cut at {} bytes of JSON after {} rows: select fewer or smaller columns \
                     (payloads as length(data), not data)",
                    caps.bytes,
                    answer.rows()
                ));
                break;
            }
            bytes += line.len();
            answer.json.push(line.clone());
            keep += 1;
        }
        if keep > 0 {
            answer.batches.push(batch.slice(0, keep));
        }
        if more && answer.cut.is_none() {
            answer.cut = Some(rows_cut);
        }
        if answer.cut.is_some() {
            break;
        }
    }
    Ok(answer)
}

/// Each row of `batch` as one line of JSON.
fn json_lines(batch: &RecordBatch) -> Result<Vec<String>> {
    let mut buf = Vec::new();
    {
        let mut w = json::WriterBuilder::new()
            .with_explicit_nulls(true)
            .with_encoder_factory(Arc::new(NonFiniteFloats))
            .build::<_, json::writer::LineDelimited>(&mut buf);
        w.write(&fixed_times(batch)?)?;
        w.finish()?;
    }
    Ok(String::from_utf8_lossy(&buf)
        .lines()
        .map(str::to_string)
        .collect())
}
