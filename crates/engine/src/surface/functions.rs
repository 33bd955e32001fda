//! Scalar functions logsql adds or adjusts for log data.
//!
//! `length(x)`: DataFusion's `length` is `character_length`, which casts binary
//! to text and fails on payload bytes that are not UTF-8. logsql's `length`
//! returns the byte length of binary values (as PostgreSQL does for `bytea`) and
//! the character length of strings, so `sum(length(data))` works on payloads.
//! DataFusion's `character_length` is registered again without its `length`
//! alias: a session state rebuilt from its functions (`SET
//! datafusion.runtime.*` does that) registers them in no set order, and the
//! built-in would otherwise take `length` back.

use std::sync::Arc;

use datafusion::arrow::datatypes::DataType;
use datafusion::arrow::datatypes::FieldRef;
use datafusion::error::Result;
use datafusion::functions::string::octet_length;
use datafusion::functions::unicode::character_length;
use datafusion::logical_expr::{
    ColumnarValue, ReturnFieldArgs, ScalarFunctionArgs, ScalarUDF, ScalarUDFImpl, Signature,
    Volatility,
};
use datafusion::prelude::SessionContext;

/// `length(x)`: bytes of a binary value, characters of a string.
#[derive(Debug, PartialEq, Eq, Hash)]
pub struct Length {
    signature: Signature,
    chars: Arc<ScalarUDF>,
    bytes: Arc<ScalarUDF>,
}

impl Default for Length {
    fn default() -> Self {
        Self {
            signature: Signature::any(1, Volatility::Immutable),
            chars: character_length(),
            bytes: octet_length(),
        }
    }
}

impl Length {
    fn pick(&self, t: &DataType) -> &ScalarUDF {
        match t {
            DataType::Binary
            | DataType::LargeBinary
            | DataType::BinaryView
            | DataType::FixedSizeBinary(_) => &self.bytes,
            _ => &self.chars,
        }
    }
}

impl ScalarUDFImpl for Length {
    fn name(&self) -> &str {
        "length"
    }

    fn signature(&self) -> &Signature {
        &self.signature
    }

    fn coerce_types(&self, arg_types: &[DataType]) -> Result<Vec<DataType>> {
        let t = arg_types.first().cloned().unwrap_or(DataType::Utf8);
        Ok(vec![match t {
            DataType::Binary | DataType::LargeBinary | DataType::BinaryView => t,
            DataType::Utf8 | DataType::LargeUtf8 | DataType::Utf8View => t,
            DataType::FixedSizeBinary(_) => DataType::Binary,
            _ => DataType::Utf8,
        }])
    }

    fn return_type(&self, arg_types: &[DataType]) -> Result<DataType> {
        let t = arg_types.first().cloned().unwrap_or(DataType::Utf8);
        self.pick(&t).return_type(&[t])
    }

    fn return_field_from_args(&self, args: ReturnFieldArgs) -> Result<FieldRef> {
        let t = args
            .arg_fields
            .first()
            .map(|f| f.data_type().clone())
            .unwrap_or(DataType::Utf8);
        self.pick(&t).return_field_from_args(args)
    }

    fn invoke_with_args(&self, args: ScalarFunctionArgs) -> Result<ColumnarValue> {
        let t = args
            .arg_fields
            .first()
            .map(|f| f.data_type().clone())
            .unwrap_or(DataType::Utf8);
        self.pick(&t).invoke_with_args(args)
    }

    fn aliases(&self) -> &[String] {
        &[]
    }
}

/// DataFusion's `character_length` with the aliases `aliases` (its own minus `length`).
#[derive(Debug, PartialEq, Eq, Hash)]
struct CharacterLength {
    inner: Arc<ScalarUDF>,
    aliases: Vec<String>,
}

impl Default for CharacterLength {
    fn default() -> Self {
        let inner = character_length();
        let aliases = inner
            .aliases()
            .iter()
            .filter(|a| a.as_str() != "length")
            .cloned()
            .collect();
        Self { inner, aliases }
    }
}

impl ScalarUDFImpl for CharacterLength {
    fn name(&self) -> &str {
        self.inner.name()
    }

    fn signature(&self) -> &Signature {
        self.inner.signature()
    }

    fn coerce_types(&self, arg_types: &[DataType]) -> Result<Vec<DataType>> {
        self.inner.coerce_types(arg_types)
    }

    fn return_type(&self, arg_types: &[DataType]) -> Result<DataType> {
        self.inner.return_type(arg_types)
    }

    fn return_field_from_args(&self, args: ReturnFieldArgs) -> Result<FieldRef> {
        self.inner.return_field_from_args(args)
    }

    fn invoke_with_args(&self, args: ScalarFunctionArgs) -> Result<ColumnarValue> {
        self.inner.invoke_with_args(args)
    }

    fn aliases(&self) -> &[String] {
        &self.aliases
    }
}

/// Registers logsql's scalar functions on `ctx` (replacing DataFusion's `length`).
pub fn register(ctx: &SessionContext) {
    ctx.register_udf(ScalarUDF::new_from_impl(CharacterLength::default()));
    ctx.register_udf(ScalarUDF::new_from_impl(Length::default()));
}
