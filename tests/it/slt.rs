//! Runs the per-format SQL specs in `tests/slt/*.slt` (sqllogictest files, the
//! format DataFusion's own SQL tests use) against a logsql session (`logsql::session_context_with_config`, with the
//! information schema on as in the CLI, for `SHOW`).
//! Paths in the files are relative to the crate root, the working directory of
//! cargo's tests; they read the committed recordings in `tests/data/`.
//! A failing record is reported with its file and line, the expected and the
//! actual output.

use std::path::PathBuf;

use datafusion::arrow::array::RecordBatch;
use datafusion::arrow::datatypes::DataType;
use datafusion::arrow::util::display::{ArrayFormatter, FormatOptions};
use datafusion::error::DataFusionError;
use datafusion::prelude::{SessionConfig, SessionContext};
use sqllogictest::{DBOutput, DefaultColumnType};

/// One sqllogictest connection: a fresh logsql session per file.
struct LogsqlDb {
    ctx: SessionContext,
}

/// The sqllogictest column type of an Arrow type: `I` integers, `R` floats and
/// decimals, `T` everything else (text, times, binary, lists, structs).
fn column_type(dt: &DataType) -> DefaultColumnType {
    if dt.is_integer() {
        DefaultColumnType::Integer
    } else if dt.is_floating() || matches!(dt, DataType::Decimal128(..) | DataType::Decimal256(..))
    {
        DefaultColumnType::FloatingPoint
    } else {
        DefaultColumnType::Text
    }
}

/// The rows of `batches` as text: Arrow's display of each value, `NULL` for
/// nulls, `(empty)` for an empty string (sqllogictest cannot show "").
fn rows(batches: &[RecordBatch]) -> Result<Vec<Vec<String>>, DataFusionError> {
    let options = FormatOptions::default().with_null("NULL");
    let mut out = Vec::new();
    for batch in batches {
        let formatters = batch
            .columns()
            .iter()
            .map(|c| ArrayFormatter::try_new(c.as_ref(), &options))
            .collect::<Result<Vec<_>, _>>()?;
        for row in 0..batch.num_rows() {
            out.push(
                formatters
                    .iter()
                    .map(|f| match f.value(row).to_string() {
                        s if s.is_empty() => "(empty)".to_string(),
                        s => s,
                    })
                    .collect(),
            );
        }
    }
    Ok(out)
}

#[async_trait::async_trait]
impl sqllogictest::AsyncDB for LogsqlDb {
    type Error = DataFusionError;
    type ColumnType = DefaultColumnType;

    async fn run(&mut self, sql: &str) -> Result<DBOutput<DefaultColumnType>, DataFusionError> {
        let df = self.ctx.sql(sql).await?;
        let schema = df.schema().inner().clone();
        let batches = df.collect().await?;
        if schema.fields().is_empty() {
            return Ok(DBOutput::StatementComplete(0));
        }
        Ok(DBOutput::Rows {
            types: schema
                .fields()
                .iter()
                .map(|f| column_type(f.data_type()))
                .collect(),
            rows: rows(&batches)?,
        })
    }

    async fn shutdown(&mut self) {}

    fn engine_name(&self) -> &str {
        "logsql"
    }
}

/// The column types of a `query` record must be the ones the engine gives.
fn same_types(actual: &Vec<DefaultColumnType>, expected: &Vec<DefaultColumnType>) -> bool {
    actual == expected
}

#[tokio::test]
async fn slt_specs_pass() {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/slt");
    let mut files: Vec<PathBuf> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "slt"))
        .collect();
    files.sort();
    let names: Vec<String> = files
        .iter()
        .map(|p| p.file_name().unwrap().to_string_lossy().into_owned())
        .collect();
    assert_eq!(
        names,
        [
            "bag.slt",
            "bddf.slt",
            "carla.slt",
            "errors.slt",
            "mcap.slt",
            "record.slt",
            "ros2.slt"
        ],
        "the specs in {}",
        dir.display()
    );
    let mut failed = Vec::new();
    for file in &files {
        let mut runner = sqllogictest::Runner::new(|| async {
            // As the CLI's session: `SHOW` needs the information schema.
            let config = SessionConfig::new().with_information_schema(true);
            Ok::<_, DataFusionError>(LogsqlDb {
                ctx: logsql::session_context_with_config(config),
            })
        });
        runner.with_column_validator(same_types);
        // The error names the file and line of the failing record.
        if let Err(e) = runner.run_file_async(file).await {
            failed.push(e.to_string());
        }
    }
    assert!(
        failed.is_empty(),
        "slt specs failed:\n{}",
        failed.join("\n")
    );
}
