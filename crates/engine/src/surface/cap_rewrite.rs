//! The value cap (`logsql.max_value_bytes`, [`super::value_caps`]) on the
//! expressions the session's wrapped functions do not see, applied by a
//! [`FunctionRewrite`] as the analyzer runs (before anything is folded or
//! evaluated):
//!
//! - the string concatenation operator, `a || b`: DataFusion evaluates it as
//!   a binary expression, so a chain of them (`s || s || s || ...` over a
//!   large `s`) made values of any size. On strings it becomes a call of
//!   `logsql_string_concat` (the same kernel, NULL if either side is, under
//!   the cap, shown as `a || b`);
//! - calls of a capped function that DataFusion's own planners build from
//!   the built-in rather than through the session (`array || array` is
//!   planned as the built-in `array_concat`): they are wrapped as the
//!   session's are.
//!
//! Output names do not change (the analyzer keeps them).

use std::sync::Arc;

use datafusion::arrow::compute::kernels::concat_elements::concat_elements_dyn;
use datafusion::arrow::datatypes::DataType;
use datafusion::common::config::ConfigOptions;
use datafusion::common::tree_node::Transformed;
use datafusion::common::{DFSchema, ScalarValue};
use datafusion::error::Result;
use datafusion::execution::FunctionRegistry;
use datafusion::logical_expr::expr::ScalarFunction;
use datafusion::logical_expr::expr_rewriter::FunctionRewrite;
use datafusion::logical_expr::{
    BinaryExpr, ColumnarValue, Expr, ExprSchemable, Operator, ScalarFunctionArgs, ScalarUDF,
    ScalarUDFImpl, Signature, Volatility,
};
use datafusion::prelude::SessionContext;

use super::value_caps::{Bound, Capped};

/// The name of the capped `||` on strings.
pub(crate) const STRING_CONCAT: &str = "logsql_string_concat";

/// Registers the rewrite, and the capped `||` by name (so that a plan
/// holding it decodes on a distributed worker).
pub(crate) fn register(ctx: &SessionContext) -> Result<()> {
    ctx.register_udf(string_concat());
    ctx.state_ref()
        .write()
        .register_function_rewrite(Arc::new(CapRewrite))
}

/// The capped `||` on strings.
fn string_concat() -> ScalarUDF {
    let inner = Arc::new(ScalarUDF::new_from_impl(StringConcat::new()));
    ScalarUDF::new_from_impl(Capped::new(inner, Bound::Concat))
}

/// The rewrite (see the module documentation).
#[derive(Debug)]
struct CapRewrite;

fn is_string(t: &DataType) -> bool {
    matches!(t, DataType::Utf8 | DataType::LargeUtf8 | DataType::Utf8View)
}

impl FunctionRewrite for CapRewrite {
    fn name(&self) -> &str {
        "logsql_value_caps"
    }

    fn rewrite(
        &self,
        expr: Expr,
        schema: &DFSchema,
        _config: &ConfigOptions,
    ) -> Result<Transformed<Expr>> {
        match expr {
            Expr::BinaryExpr(BinaryExpr {
                left,
                op: Operator::StringConcat,
                right,
            }) => {
                // Types that cannot be told (yet) leave the operator as it is.
                let strings = match (left.get_type(schema), right.get_type(schema)) {
                    (Ok(l), Ok(r)) => {
                        (is_string(&l) || is_string(&r))
                            && [&l, &r].iter().all(|t| !t.is_nested() && !is_binary(t))
                    }
                    _ => false,
                };
                match strings {
                    true => Ok(Transformed::yes(string_concat().call(vec![*left, *right]))),
                    false => Ok(Transformed::no(Expr::BinaryExpr(BinaryExpr {
                        left,
                        op: Operator::StringConcat,
                        right,
                    }))),
                }
            }
            Expr::ScalarFunction(ScalarFunction { func, args }) => {
                match Bound::of(func.name()).filter(|_| !Capped::wraps(&func)) {
                    Some(bound) => Ok(Transformed::yes(Expr::ScalarFunction(
                        ScalarFunction::new_udf(
                            Arc::new(ScalarUDF::new_from_impl(Capped::new(func, bound))),
                            args,
                        ),
                    ))),
                    None => Ok(Transformed::no(Expr::ScalarFunction(ScalarFunction {
                        func,
                        args,
                    }))),
                }
            }
            other => Ok(Transformed::no(other)),
        }
    }
}

fn is_binary(t: &DataType) -> bool {
    matches!(
        t,
        DataType::Binary
            | DataType::LargeBinary
            | DataType::BinaryView
            | DataType::FixedSizeBinary(_)
    )
}

/// `a || b` on strings as a function: arrow's `concat_elements` (NULL where
/// either side is NULL), both sides cast to one string type first.
#[derive(Debug, PartialEq, Eq, Hash)]
struct StringConcat {
    signature: Signature,
}

impl StringConcat {
    fn new() -> Self {
        Self {
            signature: Signature::user_defined(Volatility::Immutable),
        }
    }
}

impl ScalarUDFImpl for StringConcat {
    fn name(&self) -> &str {
        STRING_CONCAT
    }

    fn display_name(&self, args: &[Expr]) -> Result<String> {
        Ok(match args {
            [a, b] => format!("{a} || {b}"),
            _ => format!("{STRING_CONCAT}(...)"),
        })
    }

    fn schema_name(&self, args: &[Expr]) -> Result<String> {
        Ok(match args {
            [a, b] => format!("{} || {}", a.schema_name(), b.schema_name()),
            _ => STRING_CONCAT.to_string(),
        })
    }

    fn signature(&self) -> &Signature {
        &self.signature
    }

    fn coerce_types(&self, arg_types: &[DataType]) -> Result<Vec<DataType>> {
        let to = if arg_types.contains(&DataType::LargeUtf8) {
            DataType::LargeUtf8
        } else if arg_types.contains(&DataType::Utf8View) {
            DataType::Utf8View
        } else {
            DataType::Utf8
        };
        Ok(vec![to; arg_types.len()])
    }

    fn return_type(&self, arg_types: &[DataType]) -> Result<DataType> {
        Ok(arg_types.first().cloned().unwrap_or(DataType::Utf8))
    }

    fn invoke_with_args(&self, args: ScalarFunctionArgs) -> Result<ColumnarValue> {
        let scalars = args
            .args
            .iter()
            .all(|a| matches!(a, ColumnarValue::Scalar(_)));
        let arrays = ColumnarValue::values_to_arrays(&args.args)?;
        let [left, right] = arrays.as_slice() else {
            return datafusion::common::exec_err!("{STRING_CONCAT} takes two strings");
        };
        let joined = concat_elements_dyn(left.as_ref(), right.as_ref())?;
        match scalars {
            true => Ok(ColumnarValue::Scalar(ScalarValue::try_from_array(
                &joined, 0,
            )?)),
            false => Ok(ColumnarValue::Array(joined)),
        }
    }
}
