//! [`ArrowStream`]: a query's result batches as an Arrow C stream (the
//! `__arrow_c_stream__` PyCapsule protocol), so pyarrow, pandas and polars
//! take the batches without copying them.

use std::sync::Mutex;

use datafusion::arrow::array::{RecordBatch, RecordBatchReader};
use datafusion::arrow::datatypes::SchemaRef;
use datafusion::arrow::error::ArrowError;
use datafusion::arrow::ffi_stream::FFI_ArrowArrayStream;
use datafusion::execution::SendableRecordBatchStream;
use futures::StreamExt;
use pyo3::exceptions::PyRuntimeError;
use pyo3::prelude::*;
use pyo3::types::PyCapsule;

use crate::RUNTIME;

/// The result of `logsql._native.sql`: consumed once, by `pyarrow.table(s)`,
/// `pyarrow.RecordBatchReader.from_stream(s)` or any other Arrow C stream consumer.
#[pyclass(name = "ArrowStream", module = "logsql._native", frozen)]
pub struct ArrowStream {
    stream: Mutex<Option<SendableRecordBatchStream>>,
}

impl ArrowStream {
    /// Wraps a DataFusion result stream.
    pub fn new(stream: SendableRecordBatchStream) -> Self {
        Self {
            stream: Mutex::new(Some(stream)),
        }
    }
}

#[pymethods]
impl ArrowStream {
    /// The stream as an `arrow_array_stream` capsule. The batches are produced
    /// as the consumer reads them (the query runs on logsql's runtime); a
    /// query error (file, byte offset, cause) ends the stream with that error.
    #[pyo3(signature = (requested_schema=None))]
    fn __arrow_c_stream__<'py>(
        &self,
        py: Python<'py>,
        requested_schema: Option<Bound<'py, PyAny>>,
    ) -> PyResult<Bound<'py, PyCapsule>> {
        // A consumer may ask for another schema; the protocol lets a producer
        // answer with its own, which the consumer then casts or rejects.
        let _ = requested_schema;
        let stream = self
            .stream
            .lock()
            .map_err(|_| PyRuntimeError::new_err("the result stream is poisoned"))?
            .take()
            .ok_or_else(|| PyRuntimeError::new_err("this result was already read"))?;
        let reader = BlockingReader {
            schema: stream.schema(),
            stream,
        };
        let ffi = FFI_ArrowArrayStream::new(Box::new(reader));
        PyCapsule::new_with_value(py, ffi, c"arrow_array_stream")
    }
}

/// A DataFusion stream read synchronously (the C stream's `get_next`).
struct BlockingReader {
    schema: SchemaRef,
    stream: SendableRecordBatchStream,
}

impl Iterator for BlockingReader {
    type Item = Result<RecordBatch, ArrowError>;

    fn next(&mut self) -> Option<Self::Item> {
        RUNTIME
            .block_on(self.stream.next())
            .map(|r| r.map_err(|e| ArrowError::ExternalError(Box::new(e))))
    }
}

impl RecordBatchReader for BlockingReader {
    fn schema(&self) -> SchemaRef {
        self.schema.clone()
    }
}
