//! A parsed JSON value, for schemas and inference samples.

/// A JSON value with object keys in document order.
#[derive(Debug, Clone, PartialEq)]
pub(super) enum Value {
    Null,
    Bool(bool),
    Int(i64),
    UInt(u64),
    Float(f64),
    Str(String),
    Array(Vec<Value>),
    /// Keys in document order; a repeated key appears twice (the last wins).
    Object(Vec<(String, Value)>),
}

/// The last value of `key` in an object's pairs.
pub(super) fn get<'v>(pairs: &'v [(String, Value)], key: &str) -> Option<&'v Value> {
    pairs.iter().rev().find(|(k, _)| k == key).map(|(_, v)| v)
}
