//! logsql's errors inside DataFusion: `df_err` for `map_err` (the readers'
//! error type lives in `logsql-readers`, which knows nothing of DataFusion, so
//! no `From` conversion can be written for `?`).

use datafusion::error::DataFusionError;

/// Turns a logsql error into DataFusion's (for `map_err`).
pub(crate) fn df_err(e: logsql_readers::Error) -> DataFusionError {
    DataFusionError::External(Box::new(e))
}
