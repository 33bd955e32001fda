//! The cap on one value a function makes (`logsql.max_value_bytes`).
//!
//! A few built-in functions make values far larger than their arguments:
//! `repeat('x', 1000000000000)` asks for a terabyte, and a failed allocation
//! aborts the process, during planning if the arguments are constants (the
//! simplifier folds them) and before any memory pool is asked. PostgreSQL
//! caps a value at 1 GB; logsql caps what one call of such a function makes
//! (the column it returns for a batch) at `logsql.max_value_bytes`. Each is
//! wrapped ([`Capped`]): before it runs, the size its arguments ask for is
//! bounded from their lengths and counts ([`Bound`]) and a call past the cap
//! is refused with an error naming the function, the size and the setting;
//! after it runs, the column it made is measured too. Everything else about
//! a wrapped function (name, aliases, types, simplification, ordering) is
//! the built-in's.

use std::sync::Arc;

use datafusion::arrow::array::{Array, ArrayRef, AsArray};
use datafusion::arrow::compute::kernels::length::length;
use datafusion::arrow::compute::{CastOptions, cast_with_options};
use datafusion::arrow::datatypes::{DataType, FieldRef, Int64Type};
use datafusion::common::config::ConfigOptions;
use datafusion::common::{ExprSchema, ScalarValue};
use datafusion::error::{DataFusionError, Result};
use datafusion::execution::FunctionRegistry;
use datafusion::logical_expr::interval_arithmetic::Interval;
use datafusion::logical_expr::preimage::PreimageResult;
use datafusion::logical_expr::simplify::{ExprSimplifyResult, SimplifyContext};
use datafusion::logical_expr::sort_properties::{ExprProperties, SortProperties};
use datafusion::logical_expr::{
    ColumnarValue, Documentation, Expr, ExpressionPlacement, ReturnFieldArgs, ScalarFunctionArgs,
    ScalarUDF, ScalarUDFImpl, Signature,
};
use datafusion::prelude::SessionContext;

use crate::scanner::options::LogsqlOptions;

/// How the size a call asks for is bounded before it runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub(crate) enum Bound {
    /// `repeat(s, n)`: `len(s) × n` per row.
    Repeat,
    /// `lpad(s, n [, fill])`, `rpad`: `n` characters of up to 4 bytes.
    Pad,
    /// `replace(s, from, to)`: every occurrence of `from` becomes `to`.
    Replace,
    /// `regexp_replace(s, pattern, replacement [, flags])`: every match
    /// (empty ones too) becomes the replacement, its group references
    /// expanded.
    RegexpReplace,
    /// `array_repeat(x, n)`: `n` copies of `x`.
    ArrayRepeat,
    /// `array_resize(a, n [, x])`: `n` elements.
    ArrayResize,
    /// `range(start, stop [, step])`, `generate_series`: the values between.
    Range,
    /// `a || b` on strings ([`super::cap_rewrite`]): both lengths together.
    Concat,
    /// Measured after the call only (the concatenations, `overlay`, ...:
    /// at most their arguments' sizes together, which were measured).
    After,
}

/// The functions wrapped, with how each call's size is bounded.
const CAPPED: &[(&str, Bound)] = &[
    ("repeat", Bound::Repeat),
    ("lpad", Bound::Pad),
    ("rpad", Bound::Pad),
    ("replace", Bound::Replace),
    ("regexp_replace", Bound::RegexpReplace),
    ("array_repeat", Bound::ArrayRepeat),
    ("array_resize", Bound::ArrayResize),
    ("range", Bound::Range),
    ("generate_series", Bound::Range),
    ("concat", Bound::After),
    ("concat_ws", Bound::After),
    ("overlay", Bound::After),
    ("translate", Bound::After),
    ("string_to_array", Bound::After),
    ("encode", Bound::After),
    ("array_concat", Bound::After),
    ("array_append", Bound::After),
    ("array_prepend", Bound::After),
];

/// Wraps each function of [`CAPPED`] that `ctx` has in a [`Capped`] of its own.
pub(crate) fn register(ctx: &SessionContext) {
    for (name, bound) in CAPPED {
        let Ok(inner) = ctx.udf(name) else { continue };
        if Capped::wraps(&inner) {
            continue;
        }
        ctx.register_udf(ScalarUDF::new_from_impl(Capped {
            inner,
            bound: *bound,
        }));
    }
}

impl Bound {
    /// How a call of the built-in `name` is bounded, if it is capped.
    pub(crate) fn of(name: &str) -> Option<Bound> {
        CAPPED.iter().find(|(n, _)| *n == name).map(|(_, b)| *b)
    }
}

/// The most bytes one value may hold under `config` (`logsql.max_value_bytes`).
pub fn max_value_bytes(config: &ConfigOptions) -> u64 {
    config.extensions.get::<LogsqlOptions>().map_or_else(
        || LogsqlOptions::default().max_value_bytes,
        |o| o.max_value_bytes,
    )
}

/// The error of a value past the cap: `what` made (or would make) `bytes`.
pub fn too_large(what: &str, bytes: u128, cap: u64) -> DataFusionError {
    DataFusionError::ResourcesExhausted(format!(
        "{what}: the value would hold {}, more than the {} one value may hold \
         (logsql.max_value_bytes)",
        human(bytes),
        human(u128::from(cap))
    ))
}

/// A byte count as people read it (`1.5 GiB`).
fn human(bytes: u128) -> String {
    const UNITS: [&str; 6] = ["bytes", "KiB", "MiB", "GiB", "TiB", "PiB"];
    let mut value = bytes as f64;
    let mut unit = 0;
    while value >= 1024.0 && unit + 1 < UNITS.len() {
        value /= 1024.0;
        unit += 1;
    }
    match unit {
        0 => format!("{bytes} bytes"),
        _ => format!("{value:.1} {}", UNITS[unit]),
    }
}

/// A built-in function under the value cap (see the module documentation).
#[derive(Debug, PartialEq, Eq, Hash)]
pub(crate) struct Capped {
    inner: Arc<ScalarUDF>,
    bound: Bound,
}

impl Capped {
    /// `inner` under the cap, its calls bounded by `bound`.
    pub(crate) fn new(inner: Arc<ScalarUDF>, bound: Bound) -> Self {
        Self { inner, bound }
    }

    /// Whether `udf` is already under the cap.
    pub(crate) fn wraps(udf: &ScalarUDF) -> bool {
        (udf.inner().as_ref() as &dyn std::any::Any).is::<Capped>()
    }

    /// Refuses a call whose arguments ask for more than `cap` bytes.
    fn check_before(&self, args: &ScalarFunctionArgs, cap: u64) -> Result<()> {
        let bytes = self.bound.bytes(&args.args, args.number_rows)?;
        match bytes > u128::from(cap) {
            true => Err(too_large(self.what(), bytes, cap)),
            false => Ok(()),
        }
    }

    /// The function as messages name it (`||` for the operator).
    fn what(&self) -> &str {
        match self.bound {
            Bound::Concat => "||",
            _ => self.inner.name(),
        }
    }
}

impl Bound {
    /// An upper bound of the bytes a call with `args` over `rows` rows makes
    /// (0 where only the result is measured).
    fn bytes(self, args: &[ColumnarValue], rows: usize) -> Result<u128> {
        let lens = |i: usize| lengths(args.get(i), rows);
        let ints = |i: usize| integers(args.get(i), rows);
        let sum = |per_row: &dyn Fn(usize) -> u128| (0..rows).map(per_row).sum::<u128>();
        Ok(match self {
            Bound::After => 0,
            Bound::Repeat => {
                let (s, n) = (lens(0)?, ints(1)?);
                sum(&|r| u128::from(s[r]) * positive(n[r]))
            }
            Bound::Pad => {
                let n = ints(1)?;
                sum(&|r| 4 * positive(n[r]))
            }
            Bound::Replace => {
                let (s, from, to) = (lens(0)?, lens(1)?, lens(2)?);
                sum(&|r| {
                    let s = u128::from(s[r]);
                    s + (s / u128::from(from[r].max(1)) + 1) * u128::from(to[r])
                })
            }
            Bound::RegexpReplace => {
                let (s, replacement) = (lens(0)?, lens(2)?);
                let references = references(args.get(2), rows)?;
                sum(&|r| {
                    let s = u128::from(s[r]);
                    s + (s + 1) * u128::from(replacement[r]) + u128::from(references[r]) * s
                })
            }
            Bound::ArrayRepeat => {
                let element = element_bytes(args.first(), rows);
                let n = ints(1)?;
                sum(&|r| element * positive(n[r]))
            }
            Bound::ArrayResize => {
                let element = element_bytes(args.get(2), rows).max(16);
                let n = ints(1)?;
                sum(&|r| element * positive(n[r]))
            }
            Bound::Range => range_bytes(args, rows)?,
            Bound::Concat => {
                let (a, b) = (lens(0)?, lens(1)?);
                sum(&|r| u128::from(a[r]) + u128::from(b[r]))
            }
        })
    }
}

/// A count that asks for nothing when it is negative or NULL.
fn positive(n: Option<i64>) -> u128 {
    n.map_or(0, |n| u128::try_from(n).unwrap_or(0))
}

/// The byte length of a string or binary argument at each row (0 for NULL
/// or a missing argument).
fn lengths(arg: Option<&ColumnarValue>, rows: usize) -> Result<Vec<u64>> {
    let Some(arg) = arg else {
        return Ok(vec![0; rows]);
    };
    let array = one_or_all(arg, rows)?;
    let Ok(lengths) = length(&array) else {
        return Ok(vec![0; rows]);
    };
    let lengths = cast_with_options(&lengths, &DataType::Int64, &CastOptions::default())?;
    let lengths = lengths.as_primitive::<Int64Type>();
    Ok(spread(rows, lengths.len(), |i| {
        u64::try_from(lengths.value(i)).unwrap_or(0)
    }))
}

/// An integer argument at each row (None for NULL or a missing argument).
fn integers(arg: Option<&ColumnarValue>, rows: usize) -> Result<Vec<Option<i64>>> {
    let Some(arg) = arg else {
        return Ok(vec![None; rows]);
    };
    let array = one_or_all(arg, rows)?;
    let Ok(ints) = cast_with_options(&array, &DataType::Int64, &CastOptions::default()) else {
        return Ok(vec![None; rows]);
    };
    let ints = ints.as_primitive::<Int64Type>();
    Ok(spread(rows, ints.len(), |i| {
        ints.is_valid(i).then(|| ints.value(i))
    }))
}

/// The group references (`\1`, `$1`, `${name}`) of a replacement at each row:
/// each may repeat up to the whole matched text.
fn references(arg: Option<&ColumnarValue>, rows: usize) -> Result<Vec<u32>> {
    let Some(arg) = arg else {
        return Ok(vec![0; rows]);
    };
    let array = one_or_all(arg, rows)?;
    let Ok(strings) = cast_with_options(&array, &DataType::Utf8, &CastOptions::default()) else {
        return Ok(vec![0; rows]);
    };
    let strings = strings.as_string::<i32>();
    Ok(spread(rows, strings.len(), |i| {
        let text = strings.value(i);
        let count = text.matches(['\\', '$']).count();
        u32::try_from(count).unwrap_or(u32::MAX)
    }))
}

/// The bytes one copy of an element argument takes (its average over the
/// rows of an array).
fn element_bytes(arg: Option<&ColumnarValue>, rows: usize) -> u128 {
    match arg {
        None => 0,
        Some(ColumnarValue::Scalar(value)) => value.size() as u128,
        Some(ColumnarValue::Array(array)) => {
            (array.get_array_memory_size() / array.len().max(rows).max(1)) as u128
        }
    }
}

/// `range`'s and `generate_series`' values: `(stop - start) / step + 1` per
/// row, 8 bytes each, for integers, dates and timestamps.
fn range_bytes(args: &[ColumnarValue], rows: usize) -> Result<u128> {
    let mut total = 0u128;
    for row in 0..rows {
        let value = |i: usize| -> Result<Option<ScalarValue>> {
            args.get(i)
                .map(|arg| match arg {
                    ColumnarValue::Scalar(v) => Ok(v.clone()),
                    ColumnarValue::Array(a) => ScalarValue::try_from_array(a, row.min(a.len() - 1)),
                })
                .transpose()
        };
        let (start, stop, step) = match args.len() {
            1 => (Some(ScalarValue::Int64(Some(0))), value(0)?, None),
            _ => (value(0)?, value(1)?, value(2)?),
        };
        let (Some(start), Some(stop)) =
            (start.and_then(|v| point(&v)), stop.and_then(|v| point(&v)))
        else {
            continue;
        };
        let step = match step {
            None => match start.1 {
                Unit::Count => 1,
                // Dates step a day by default.
                Unit::Nanos => 86_400_000_000_000,
            },
            Some(step) => match step_nanos(&step, start.1) {
                Some(step) => step,
                None => continue,
            },
        };
        let span = (i128::from(stop.0) - i128::from(start.0)).unsigned_abs();
        total += (span / u128::from(step.unsigned_abs().max(1)) + 1) * 8;
        if args.iter().all(|a| matches!(a, ColumnarValue::Scalar(_))) {
            return Ok(total * rows as u128);
        }
    }
    Ok(total)
}

/// What a range's ends count in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Unit {
    /// Integers.
    Count,
    /// Dates and timestamps, in nanoseconds.
    Nanos,
}

/// A range's end as a number in its unit.
fn point(value: &ScalarValue) -> Option<(i64, Unit)> {
    const DAY: i64 = 86_400_000_000_000;
    let nanos = |v: Option<i64>, per: i64| v.map(|v| (v.saturating_mul(per), Unit::Nanos));
    match value {
        ScalarValue::Date32(v) => nanos(v.map(i64::from), DAY),
        ScalarValue::Date64(v) => nanos(*v, 1_000_000),
        ScalarValue::TimestampSecond(v, _) => nanos(*v, 1_000_000_000),
        ScalarValue::TimestampMillisecond(v, _) => nanos(*v, 1_000_000),
        ScalarValue::TimestampMicrosecond(v, _) => nanos(*v, 1_000),
        ScalarValue::TimestampNanosecond(v, _) => nanos(*v, 1),
        other => match other.cast_to(&DataType::Int64).ok()? {
            ScalarValue::Int64(Some(v)) => Some((v, Unit::Count)),
            _ => None,
        },
    }
}

/// A range's step in its ends' unit (a month counted as 28 days, the
/// shortest, so the bound stays an upper bound).
fn step_nanos(step: &ScalarValue, unit: Unit) -> Option<i64> {
    const DAY: i64 = 86_400_000_000_000;
    match (step, unit) {
        (ScalarValue::IntervalMonthDayNano(Some(v)), Unit::Nanos) => Some(
            i64::from(v.months)
                .saturating_mul(28 * DAY)
                .saturating_add(i64::from(v.days).saturating_mul(DAY))
                .saturating_add(v.nanoseconds),
        ),
        (ScalarValue::IntervalDayTime(Some(v)), Unit::Nanos) => Some(
            i64::from(v.days)
                .saturating_mul(DAY)
                .saturating_add(i64::from(v.milliseconds).saturating_mul(1_000_000)),
        ),
        (ScalarValue::IntervalYearMonth(Some(months)), Unit::Nanos) => {
            Some(i64::from(*months).saturating_mul(28 * DAY))
        }
        (other, Unit::Count) => match other.cast_to(&DataType::Int64).ok()? {
            ScalarValue::Int64(Some(v)) => Some(v),
            _ => None,
        },
        _ => None,
    }
}

/// An argument as an array: a scalar as one row, an array as it is.
fn one_or_all(arg: &ColumnarValue, _rows: usize) -> Result<ArrayRef> {
    match arg {
        ColumnarValue::Scalar(value) => value.to_array_of_size(1),
        ColumnarValue::Array(array) => Ok(Arc::clone(array)),
    }
}

/// `rows` values of `f` over an array of `len` rows (one row: the same for
/// every row).
fn spread<T: Clone>(rows: usize, len: usize, f: impl Fn(usize) -> T) -> Vec<T> {
    match len {
        0 => Vec::new(),
        1 => vec![f(0); rows],
        _ => (0..rows.min(len)).map(f).collect(),
    }
}

/// The bytes a function's result holds.
fn result_bytes(value: &ColumnarValue) -> u128 {
    match value {
        ColumnarValue::Scalar(value) => value.size() as u128,
        ColumnarValue::Array(array) => array.get_array_memory_size() as u128,
    }
}

impl ScalarUDFImpl for Capped {
    fn name(&self) -> &str {
        self.inner.name()
    }

    fn display_name(&self, args: &[Expr]) -> Result<String> {
        #[expect(deprecated)]
        self.inner.inner().display_name(args)
    }

    fn schema_name(&self, args: &[Expr]) -> Result<String> {
        self.inner.inner().schema_name(args)
    }

    fn signature(&self) -> &Signature {
        self.inner.signature()
    }

    fn return_type(&self, arg_types: &[DataType]) -> Result<DataType> {
        self.inner.inner().return_type(arg_types)
    }

    fn return_field_from_args(&self, args: ReturnFieldArgs) -> Result<FieldRef> {
        self.inner.return_field_from_args(args)
    }

    fn is_nullable(&self, args: &[Expr], schema: &dyn ExprSchema) -> bool {
        #[expect(deprecated)]
        self.inner.inner().is_nullable(args, schema)
    }

    fn is_strict(&self) -> bool {
        self.inner.inner().is_strict()
    }

    fn invoke_with_args(&self, args: ScalarFunctionArgs) -> Result<ColumnarValue> {
        let cap = max_value_bytes(&args.config_options);
        self.check_before(&args, cap)?;
        let value = self.inner.invoke_with_args(args)?;
        let bytes = result_bytes(&value);
        match bytes > u128::from(cap) {
            true => Err(too_large(self.what(), bytes, cap)),
            false => Ok(value),
        }
    }

    fn with_updated_config(&self, _config: &ConfigOptions) -> Option<ScalarUDF> {
        None
    }

    fn aliases(&self) -> &[String] {
        self.inner.aliases()
    }

    fn simplify(&self, args: Vec<Expr>, info: &SimplifyContext) -> Result<ExprSimplifyResult> {
        self.inner.simplify(args, info)
    }

    fn preimage(
        &self,
        args: &[Expr],
        lit_expr: &Expr,
        info: &SimplifyContext,
    ) -> Result<PreimageResult> {
        self.inner.inner().preimage(args, lit_expr, info)
    }

    fn conditional_arguments<'a>(
        &self,
        args: &'a [Expr],
    ) -> Option<(Vec<&'a Expr>, Vec<&'a Expr>)> {
        self.inner.inner().conditional_arguments(args)
    }

    fn short_circuits(&self) -> bool {
        self.inner.short_circuits()
    }

    fn evaluate_bounds(&self, input: &[&Interval]) -> Result<Interval> {
        self.inner.evaluate_bounds(input)
    }

    fn propagate_constraints(
        &self,
        interval: &Interval,
        inputs: &[&Interval],
    ) -> Result<Option<Vec<Interval>>> {
        self.inner.propagate_constraints(interval, inputs)
    }

    fn output_ordering(&self, inputs: &[ExprProperties]) -> Result<SortProperties> {
        self.inner.output_ordering(inputs)
    }

    fn preserves_lex_ordering(&self, inputs: &[ExprProperties]) -> Result<bool> {
        self.inner.preserves_lex_ordering(inputs)
    }

    fn strictly_order_preserving(&self, inputs: &[ExprProperties]) -> Result<bool> {
        self.inner.inner().strictly_order_preserving(inputs)
    }

    fn coerce_types(&self, arg_types: &[DataType]) -> Result<Vec<DataType>> {
        self.inner.coerce_types(arg_types)
    }

    fn documentation(&self) -> Option<&Documentation> {
        self.inner.documentation()
    }

    fn placement(&self, args: &[ExpressionPlacement]) -> ExpressionPlacement {
        self.inner.inner().placement(args)
    }
}
