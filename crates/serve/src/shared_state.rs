//! What a server's session holds for every client that a client must not
//! see: `metadata_cache()` lists the files the session read, whoever asked
//! for them, so on a server it is replaced by a function that says why it
//! is not offered.

use std::sync::Arc;

use datafusion::catalog::{TableFunctionArgs, TableFunctionImpl, TableProvider};
use datafusion::common::{DataFusionError, Result};
use datafusion::prelude::SessionContext;

/// A table function refused on a server, with the reason.
#[derive(Debug)]
struct NotOnServer {
    name: &'static str,
    why: &'static str,
}

impl TableFunctionImpl for NotOnServer {
    fn call_with_args(&self, _args: TableFunctionArgs) -> Result<Arc<dyn TableProvider>> {
        Err(DataFusionError::Plan(format!(
            "{}() is not available on a logsql server: {}",
            self.name, self.why
        )))
    }
}

/// Replaces the session's functions that would show one client what the
/// others did.
pub fn hide(ctx: &SessionContext) {
    ctx.register_udtf(
        "metadata_cache",
        Arc::new(NotOnServer {
            name: "metadata_cache",
            why: "it lists the files every client read (run it in the CLI or the library)",
        }),
    );
}
