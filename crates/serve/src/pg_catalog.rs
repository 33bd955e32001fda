//! What Postgres clients look for in a server's catalog: datafusion-postgres's
//! `pg_catalog`, `version()` as they parse it, and `to_regtype()`. Added to
//! the one session, so Flight SQL clients see the same catalog.

use std::sync::Arc;

use datafusion::arrow::datatypes::DataType;
use datafusion::common::ScalarValue;
use datafusion::logical_expr::{ColumnarValue, ScalarUDF, Volatility, create_udf};
use datafusion::prelude::SessionContext;
use datafusion_postgres::auth::AuthManager;
use datafusion_postgres::datafusion_pg_catalog::pg_catalog::setup_pg_catalog;

use crate::error::ServeResult;

/// Adds `pg_catalog`, `version()` and `to_regtype()` to `ctx`.
pub(crate) fn install(ctx: &SessionContext) -> ServeResult {
    let catalog = ctx.state().config_options().catalog.default_catalog.clone();
    setup_pg_catalog(ctx, &catalog, Arc::new(AuthManager::new())).map_err(|e| *e)?;
    ctx.register_udf(version_udf());
    ctx.register_udf(to_regtype_udf());
    Ok(())
}

/// `version()` as Postgres clients parse it (SQLAlchemy reads the server's
/// version from `PostgreSQL X.Y`), naming logsql and DataFusion after it.
fn version_udf() -> ScalarUDF {
    let text = format!(
        "PostgreSQL 16.6 (logsql {}, Apache DataFusion {})",
        env!("CARGO_PKG_VERSION"),
        datafusion::DATAFUSION_VERSION
    );
    create_udf(
        "version",
        vec![],
        DataType::Utf8,
        Volatility::Immutable,
        Arc::new(move |_| Ok(ColumnarValue::Scalar(ScalarValue::Utf8(Some(text.clone()))))),
    )
}

/// `to_regtype(name)`: the oid of a type by name, NULL for every name (the
/// server has no extension types; psycopg and SQLAlchemy look for `hstore`).
fn to_regtype_udf() -> ScalarUDF {
    create_udf(
        "to_regtype",
        vec![DataType::Utf8],
        DataType::Int32,
        Volatility::Immutable,
        Arc::new(|_| Ok(ColumnarValue::Scalar(ScalarValue::Int32(None)))),
    )
}
