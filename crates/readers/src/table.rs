//! Typed side tables that a format derives from its records, without Arrow.
//!
//! Besides the common `messages` table, some formats have records worth their
//! own typed table (CARLA's positions, actors, collisions; BDDF's series and
//! POD samples). A reader describes each such table as a [`TableDef`] and, per
//! chunk, hands its rows as slices of [`Value`]s to a [`RowReceiver`]; the engine
//! turns them into Arrow batches with the same pruning, partitioning and
//! metrics as `messages`. Nothing here depends on Arrow or DataFusion.

use crate::model::Flow;

/// Scalar element type of a column (also the element type of list columns).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ScalarType {
    /// `true` / `false`.
    Boolean,
    /// Signed 8-bit integer.
    Int8,
    /// Signed 16-bit integer.
    Int16,
    /// Signed 32-bit integer.
    Int32,
    /// Signed 64-bit integer.
    Int64,
    /// Unsigned 8-bit integer.
    UInt8,
    /// Unsigned 16-bit integer.
    UInt16,
    /// Unsigned 32-bit integer.
    UInt32,
    /// Unsigned 64-bit integer.
    UInt64,
    /// 32-bit float.
    Float32,
    /// 64-bit float.
    Float64,
    /// UTF-8 text.
    Utf8,
    /// Raw bytes.
    Binary,
    /// Nanoseconds since the Unix epoch (Arrow `Timestamp(ns, "UTC")`).
    Timestamp,
}

impl ScalarType {
    /// Every scalar type.
    pub const ALL: [ScalarType; 14] = [
        ScalarType::Boolean,
        ScalarType::Int8,
        ScalarType::Int16,
        ScalarType::Int32,
        ScalarType::Int64,
        ScalarType::UInt8,
        ScalarType::UInt16,
        ScalarType::UInt32,
        ScalarType::UInt64,
        ScalarType::Float32,
        ScalarType::Float64,
        ScalarType::Utf8,
        ScalarType::Binary,
        ScalarType::Timestamp,
    ];

    /// The type's name (`Float64`), as [`ScalarType::from_name`] takes it.
    pub fn name(self) -> String {
        format!("{self:?}")
    }

    /// The type named `name` (see [`ScalarType::name`]).
    pub fn from_name(name: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|t| t.name() == name)
    }
}

/// Type of a column of a [`TableDef`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ColumnType {
    /// A single value.
    Scalar(ScalarType),
    /// A list of exactly `n` values (vectors, matrices in row-major order).
    FixedList(ScalarType, usize),
    /// A list of any length.
    List(ScalarType),
    /// Map from text to text (Arrow `Map<Utf8, Utf8>`).
    StringMap,
}

/// One column of a [`TableDef`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ColumnDef {
    /// Column name.
    pub name: String,
    /// Column type.
    pub ty: ColumnType,
    /// What the column holds, with its unit (e.g. "location x, metres").
    pub doc: String,
}

impl ColumnDef {
    /// A column with a static name and doc.
    pub fn new(name: &str, ty: ColumnType, doc: &str) -> Self {
        Self {
            name: name.to_string(),
            ty,
            doc: doc.to_string(),
        }
    }
}

/// A typed table a format can produce (e.g. CARLA `positions`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TableDef {
    /// Table name, as used by the table function (`carla_positions`, `pod`, ...).
    pub name: String,
    /// One line describing the table.
    pub doc: String,
    /// Columns in order. A column named `log_time` of type
    /// `Scalar(Timestamp)` lets the engine prune chunks by time.
    pub columns: Vec<ColumnDef>,
    /// `true`: rows come chunk by chunk from
    /// [`TypedTable::read_chunk`](crate::formats::TypedTable::read_chunk)
    /// (pruned and partitioned like `messages`). `false`: the whole table comes
    /// from one call of
    /// [`TypedTable::read_file`](crate::formats::TypedTable::read_file)
    /// (per-file facts such as BDDF series or CARLA actors, which need the
    /// summary or a cheap walk of the whole file).
    pub per_chunk: bool,
}

/// One cell, borrowed from the reader's buffers. The engine converts numbers
/// to the column's declared type (e.g. `F64` into a `Float32` column), so a
/// reader may use the widest variant of a kind.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Value<'a> {
    /// Null.
    Null,
    /// Boolean.
    Bool(bool),
    /// Any signed integer.
    I64(i64),
    /// Any unsigned integer.
    U64(u64),
    /// Any float.
    F64(f64),
    /// Text.
    Str(&'a str),
    /// Bytes.
    Bytes(&'a [u8]),
    /// Nanoseconds since the Unix epoch.
    Time(u64),
    /// List of signed integers (for list / fixed-list columns).
    I64s(&'a [i64]),
    /// List of unsigned integers.
    U64s(&'a [u64]),
    /// List of floats.
    F64s(&'a [f64]),
    /// List of 32-bit floats (avoids widening vectors stored as f32).
    F32s(&'a [f32]),
    /// Map entries, for [`ColumnType::StringMap`].
    Pairs(&'a [(String, String)]),
}

/// Receives the rows of a typed table, one slice of cells per row, in the
/// order of [`TableDef::columns`].
pub trait RowReceiver {
    /// Takes one row.
    fn row(&mut self, cells: &[Value<'_>]) -> Flow;
}

impl<F: FnMut(&[Value<'_>]) -> Flow> RowReceiver for F {
    fn row(&mut self, cells: &[Value<'_>]) -> Flow {
        self(cells)
    }
}
