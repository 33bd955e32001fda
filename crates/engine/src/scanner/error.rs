//! logsql's errors inside DataFusion: `From<logsql::Error> for DataFusionError`
//! (so `?` converts them) and [`df_err`] for `map_err`.

use datafusion::error::DataFusionError;

impl From<crate::Error> for DataFusionError {
    fn from(e: crate::Error) -> Self {
        DataFusionError::External(Box::new(e))
    }
}

/// Turns a logsql error into DataFusion's (for `map_err`).
pub fn df_err(e: crate::Error) -> DataFusionError {
    e.into()
}
