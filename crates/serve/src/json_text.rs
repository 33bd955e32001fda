//! Nested columns (structs, lists, maps: `read_topic`'s messages) as JSON
//! text over Postgres wire, where clients expect text they can parse
//! (`json.loads`, Grafana's JSON fields) rather than Postgres composite and
//! array literals. A query whose result has a nested column gets a last
//! projection turning each into its JSON text ([`JsonText`]), at parse time,
//! so the row description (`text`) and the rows agree. Flight SQL keeps them
//! nested (Arrow carries them as they are).

use std::sync::Arc;

use async_trait::async_trait;
use datafusion::arrow::array::{ArrayRef, StringBuilder};
use datafusion::arrow::datatypes::{DataType, Field};
use datafusion::arrow::json::writer::{EncoderOptions, make_encoder};
use datafusion::common::{Column, ParamValues};
use datafusion::error::{DataFusionError, Result};
use datafusion::logical_expr::{
    ColumnarValue, Expr, LogicalPlan, LogicalPlanBuilder, ScalarFunctionArgs, ScalarUDF,
    ScalarUDFImpl, Signature, Volatility,
};
use datafusion::prelude::SessionContext;
use datafusion::sql::parser::Statement as DFStatement;
use datafusion::sql::sqlparser::ast::Statement;
use datafusion_postgres::QueryHook;
use datafusion_postgres::arrow_pg::datatypes::df::encode_dataframe;
use datafusion_postgres::hooks::HookClient;
use datafusion_postgres::pgwire::api::ClientInfo;
use datafusion_postgres::pgwire::api::portal::Format;
use datafusion_postgres::pgwire::api::results::Response;
use datafusion_postgres::pgwire::error::{PgWireError, PgWireResult};
use datafusion_postgres::pgwire::types::format::FormatOptions;

/// `logsql_json_text(value)`: a nested value as its JSON text (Arrow's JSON
/// encoding: struct fields as object members, lists as arrays, binary as hex,
/// NaN and infinities as `null`); NULL stays NULL.
#[derive(Debug, PartialEq, Eq, Hash)]
pub struct JsonText {
    signature: Signature,
}

impl JsonText {
    /// The function as a UDF.
    pub fn udf() -> ScalarUDF {
        ScalarUDF::new_from_impl(Self {
            signature: Signature::any(1, Volatility::Immutable),
        })
    }
}

impl ScalarUDFImpl for JsonText {
    fn name(&self) -> &str {
        "logsql_json_text"
    }

    fn signature(&self) -> &Signature {
        &self.signature
    }

    fn return_type(&self, _args: &[DataType]) -> Result<DataType> {
        Ok(DataType::Utf8)
    }

    fn invoke_with_args(&self, args: ScalarFunctionArgs) -> Result<ColumnarValue> {
        let [value] = args.args.as_slice() else {
            return Err(DataFusionError::Plan(
                "logsql_json_text takes one value".to_string(),
            ));
        };
        let array = value.to_array(args.number_rows)?;
        Ok(ColumnarValue::Array(to_json_text(&array)?))
    }
}

/// Each value of `array` as JSON text.
fn to_json_text(array: &ArrayRef) -> Result<ArrayRef> {
    let field = Arc::new(Field::new("value", array.data_type().clone(), true));
    let options = EncoderOptions::default();
    let mut encoder = make_encoder(&field, array.as_ref(), &options)?;
    let mut out = StringBuilder::with_capacity(array.len(), array.len() * 32);
    let mut buffer = Vec::new();
    for i in 0..array.len() {
        if encoder.is_null(i) {
            out.append_null();
            continue;
        }
        buffer.clear();
        encoder.encode(i, &mut buffer);
        out.append_value(String::from_utf8_lossy(&buffer));
    }
    Ok(Arc::new(out.finish()))
}

/// `plan` with its nested output columns as JSON text (same names), or
/// `None` when it has none.
pub fn nested_as_json(plan: LogicalPlan) -> Result<Option<LogicalPlan>> {
    let schema = Arc::clone(plan.schema());
    if !schema.fields().iter().any(|f| f.data_type().is_nested()) {
        return Ok(None);
    }
    let udf = Arc::new(JsonText::udf());
    let exprs: Vec<Expr> = schema
        .iter()
        .map(|(qualifier, field)| {
            let column = Expr::Column(Column::new(qualifier.cloned(), field.name()));
            match field.data_type().is_nested() {
                true => udf.call(vec![column]).alias(field.name()),
                false => column,
            }
        })
        .collect();
    Ok(Some(
        LogicalPlanBuilder::from(plan).project(exprs)?.build()?,
    ))
}

/// The hook turning nested result columns into JSON text (see the module
/// documentation); it comes after the statement guard.
#[derive(Debug)]
pub struct NestedAsJson;

/// `statement`'s plan with nested columns as JSON text, if it is a query
/// with nested columns.
async fn json_plan(statement: &Statement, ctx: &SessionContext) -> Option<Result<LogicalPlan>> {
    if !matches!(statement, Statement::Query(_)) {
        return None;
    }
    let plan = ctx
        .state()
        .statement_to_plan(DFStatement::Statement(Box::new(statement.clone())))
        .await;
    match plan {
        // The usual path plans it again and reports the error.
        Err(_) => None,
        Ok(plan) => nested_as_json(plan).transpose(),
    }
}

fn api_error(e: DataFusionError) -> PgWireError {
    PgWireError::ApiError(Box::new(e))
}

#[async_trait]
impl QueryHook for NestedAsJson {
    async fn handle_simple_query(
        &self,
        statement: &Statement,
        ctx: &SessionContext,
        client: &mut dyn HookClient,
    ) -> Option<PgWireResult<Response>> {
        let plan = match json_plan(statement, ctx).await? {
            Ok(plan) => plan,
            Err(e) => return Some(Err(api_error(e))),
        };
        let options = Arc::new(FormatOptions::from_client_metadata(client.metadata()));
        let answer = async {
            let df = ctx.execute_logical_plan(plan).await.map_err(api_error)?;
            let rows = encode_dataframe(df, &Format::UnifiedText, Some(options)).await?;
            Ok(Response::Query(rows))
        };
        Some(answer.await)
    }

    async fn handle_extended_parse_query(
        &self,
        statement: &Statement,
        ctx: &SessionContext,
        _client: &(dyn ClientInfo + Send + Sync),
    ) -> Option<PgWireResult<LogicalPlan>> {
        json_plan(statement, ctx)
            .await
            .map(|plan| plan.map_err(api_error))
    }

    async fn handle_extended_query(
        &self,
        _statement: &Statement,
        _logical_plan: &LogicalPlan,
        _params: &ParamValues,
        _ctx: &SessionContext,
        _client: &mut dyn HookClient,
    ) -> Option<PgWireResult<Response>> {
        None
    }
}

#[cfg(test)]
mod tests {
    use datafusion::arrow::array::{Float64Array, Int32Array, ListArray, StringArray, StructArray};
    use datafusion::arrow::datatypes::Int32Type;

    use super::*;

    fn texts(array: ArrayRef) -> Vec<Option<String>> {
        let out = to_json_text(&array).expect("JSON text");
        let out = out.as_any().downcast_ref::<StringArray>().expect("text");
        out.iter().map(|v| v.map(str::to_string)).collect()
    }

    #[test]
    fn nested_values_become_json_text_and_null_stays_null() {
        let x: ArrayRef = Arc::new(Float64Array::from(vec![Some(1.5), Some(f64::NAN), None]));
        let id: ArrayRef = Arc::new(Int32Array::from(vec![1, 2, 3]));
        let point = StructArray::try_new(
            vec![
                Arc::new(Field::new("x", DataType::Float64, true)),
                Arc::new(Field::new("id", DataType::Int32, false)),
            ]
            .into(),
            vec![x, id],
            Some(vec![true, true, false].into()),
        )
        .expect("a struct array");
        assert_eq!(
            texts(Arc::new(point)),
            vec![
                Some(r#"{"x":1.5,"id":1}"#.to_string()),
                Some(r#"{"x":null,"id":2}"#.to_string()),
                None,
            ]
        );
        let lists = ListArray::from_iter_primitive::<Int32Type, _, _>(vec![
            Some(vec![Some(1), None, Some(3)]),
            Some(vec![]),
            None,
        ]);
        assert_eq!(
            texts(Arc::new(lists)),
            vec![Some("[1,null,3]".to_string()), Some("[]".to_string()), None]
        );
    }
}
