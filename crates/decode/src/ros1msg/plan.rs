//! Compiling a parsed ROS1 definition into a decode plan: type names resolved
//! once, every message type compiled once into an arena of [`StructPlan`]s
//! (a flat list indexed by number, shared where a type is used twice), wire
//! sizes and Arrow types computed up front, and the limits that keep hostile
//! definitions from recursing, nesting deeply or asking for absurd work.

use std::collections::HashMap;
use std::sync::Arc;

use arrow_schema::{DataType, Fields};

use super::defs::{self, Definitions};
use super::parse::{self, ArrayDecl, FieldDecl};
use crate::{DecodeError, duration_type, field, fixed_list_of, list_of, timestamp_type};

/// Deepest nesting of message types accepted (the main type is depth 1).
pub const MAX_DEPTH: usize = 32;

/// Most Arrow columns (at every nesting level) one message type may expand to.
pub(crate) const MAX_COLUMNS: usize = 100_000;

/// Most values the fixed part of one message type may produce (fixed arrays
/// multiply); also the per-message allowance of the decoder's work budget.
pub(crate) const MAX_WORK: usize = 1 << 24;

/// A builtin (non-message) ROS1 type.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Prim {
    Bool,
    I8,
    U8,
    I16,
    U16,
    I32,
    U32,
    I64,
    U64,
    F32,
    F64,
    Str,
    Time,
    Duration,
}

impl Prim {
    /// The builtin called `name` (`byte` is int8 and `char` uint8 in ROS1).
    pub(super) fn from_name(name: &str) -> Option<Prim> {
        Some(match name {
            "bool" => Prim::Bool,
            "int8" | "byte" => Prim::I8,
            "uint8" | "char" => Prim::U8,
            "int16" => Prim::I16,
            "uint16" => Prim::U16,
            "int32" => Prim::I32,
            "uint32" => Prim::U32,
            "int64" => Prim::I64,
            "uint64" => Prim::U64,
            "float32" => Prim::F32,
            "float64" => Prim::F64,
            "string" => Prim::Str,
            "time" => Prim::Time,
            "duration" => Prim::Duration,
            _ => return None,
        })
    }

    /// Bytes on the wire; `None` for strings (length-prefixed).
    pub(super) fn wire_size(self) -> Option<usize> {
        Some(match self {
            Prim::Bool | Prim::I8 | Prim::U8 => 1,
            Prim::I16 | Prim::U16 => 2,
            Prim::I32 | Prim::U32 | Prim::F32 => 4,
            Prim::I64 | Prim::U64 | Prim::F64 | Prim::Time | Prim::Duration => 8,
            Prim::Str => return None,
        })
    }

    /// Fewest bytes on the wire (a string's length prefix).
    fn min_size(self) -> usize {
        self.wire_size().unwrap_or(4)
    }

    /// The Arrow type of one value.
    fn data_type(self) -> DataType {
        match self {
            Prim::Bool => DataType::Boolean,
            Prim::I8 => DataType::Int8,
            Prim::U8 => DataType::UInt8,
            Prim::I16 => DataType::Int16,
            Prim::U16 => DataType::UInt16,
            Prim::I32 => DataType::Int32,
            Prim::U32 => DataType::UInt32,
            Prim::I64 => DataType::Int64,
            Prim::U64 => DataType::UInt64,
            Prim::F32 => DataType::Float32,
            Prim::F64 => DataType::Float64,
            Prim::Str => DataType::Utf8,
            Prim::Time => timestamp_type(),
            Prim::Duration => duration_type(),
        }
    }
}

/// What one field is on the wire and in Arrow.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Node {
    /// One builtin value.
    Prim(Prim),
    /// `uint8[]` / `char[]`: count + bytes, a Binary value.
    Bytes,
    /// `uint8[N]` / `char[N]`: N bytes, a Binary value.
    FixedBytes(usize),
    /// `T[]` of a builtin: count + values, a List.
    PrimList(Prim),
    /// `T[N]` of a builtin: N values, a FixedSizeList.
    PrimArray(Prim, usize),
    /// A nested message (index into [`Plan::structs`]), a Struct.
    Struct(usize),
    /// `T[]` of a message: count + messages, a List of Struct.
    StructList(usize),
    /// `T[N]` of a message: N messages, a FixedSizeList of Struct.
    StructArray(usize, usize),
}

/// One compiled field.
#[derive(Debug)]
pub(super) struct FieldPlan {
    /// Field name (used in error paths).
    pub name: Box<str>,
    /// Wire layout and Arrow shape.
    pub node: Node,
    /// Exact bytes on the wire when they do not depend on the payload.
    pub fixed: Option<usize>,
}

/// One compiled message type.
#[derive(Debug)]
pub(super) struct StructPlan {
    /// Resolved type name (`geometry_msgs/Point`).
    pub type_name: String,
    /// Fields in declaration order (constants left out).
    pub fields: Vec<FieldPlan>,
    /// Exact wire size when no field is variable-length.
    pub fixed: Option<usize>,
    /// Fewest bytes one instance takes on the wire (saturating).
    pub min: usize,
    /// Values one instance appends for its fixed part (saturating; variable
    /// arrays count 1 and are budgeted per message by their count).
    pub work: usize,
    /// Nesting depth of message types (1 = no nested messages).
    depth: usize,
    /// Arrow columns at every level below this struct.
    columns: usize,
    /// The Arrow `Struct` of [`Self::fields`].
    pub data_type: DataType,
}

/// A compiled message type: every struct it uses, the main one at [`Plan::root`].
#[derive(Debug)]
pub(super) struct Plan {
    /// Arena of message types, dependencies before their users.
    pub structs: Vec<StructPlan>,
    /// Index of the main type.
    pub root: usize,
}

/// Compiles `definition` (genmsg full text) whose main type is `type_name`.
pub(super) fn compile(type_name: &str, definition: &str) -> Result<Plan, DecodeError> {
    let (root_name, defs) = Definitions::new(type_name, definition);
    let mut c = Compiler {
        defs,
        structs: Vec::new(),
        done: HashMap::new(),
        stack: Vec::new(),
    };
    let root = c.compile_struct(&root_name)?;
    Ok(Plan {
        structs: c.structs,
        root,
    })
}

/// State of one compilation.
struct Compiler<'a> {
    /// The definition's sections and how its type names resolve.
    defs: Definitions<'a>,
    /// The arena being built.
    structs: Vec<StructPlan>,
    /// Index of every type compiled so far.
    done: HashMap<String, usize>,
    /// Types being compiled, outermost first (recursion and depth checks).
    stack: Vec<String>,
}

impl Compiler<'_> {
    /// Compiles message type `name` (once) and returns its arena index.
    fn compile_struct(&mut self, name: &str) -> Result<usize, DecodeError> {
        if let Some(&i) = self.done.get(name) {
            return Ok(i);
        }
        if self.stack.iter().any(|s| s == name) {
            let mut chain = self.stack.clone();
            chain.push(name.to_string());
            return Err(DecodeError::new(format!(
                "recursive message definition: {}",
                chain.join(" -> ")
            )));
        }
        if self.stack.len() >= MAX_DEPTH {
            return Err(DecodeError::new(format!(
                "message types nest deeper than {MAX_DEPTH} levels (at {name})"
            )));
        }
        let Some(section) = self.defs.section(name) else {
            return Err(DecodeError::new(format!(
                "type {name} is not defined in the message definition"
            )));
        };
        let decls: Vec<FieldDecl<'_>> =
            parse::parse_fields(section, |t| Prim::from_name(t).is_some())
                .map_err(|e| e.context(name))?;
        // Owned copies, so `self` can be borrowed mutably below.
        let decls: Vec<(String, String, ArrayDecl)> = decls
            .into_iter()
            .map(|d| (d.name.to_string(), d.base.to_string(), d.array))
            .collect();
        self.stack.push(name.to_string());
        let result = self.build_struct(name, &decls);
        self.stack.pop();
        let plan = result?;
        let index = self.structs.len();
        self.structs.push(plan);
        self.done.insert(name.to_string(), index);
        Ok(index)
    }

    /// The plan of `name` from its field declarations (nested types compiled first).
    fn build_struct(
        &mut self,
        name: &str,
        decls: &[(String, String, ArrayDecl)],
    ) -> Result<StructPlan, DecodeError> {
        let pkg = defs::package_of(name).to_string();
        let mut fields = Vec::with_capacity(decls.len());
        let mut arrow_fields = Vec::with_capacity(decls.len());
        let mut fixed = Some(0usize);
        let mut min = 0usize;
        let mut work = 1usize;
        let mut depth = 1usize;
        let mut columns = 0usize;
        for (field_name, base, array) in decls {
            let in_field = |e: DecodeError| e.context(format!("{name}.{field_name}"));
            let (node, data_type, f_fixed, f_min, f_work) = match Prim::from_name(base) {
                Some(p) => {
                    let bytes = matches!(base.as_str(), "uint8" | "char");
                    prim_field(p, bytes, *array)
                }
                None => {
                    let full = self.defs.resolve(base, &pkg).map_err(in_field)?;
                    if !self.done.contains_key(&full) && !self.defs.has(&full) {
                        return Err(in_field(DecodeError::new(format!(
                            "type {full} is not defined in the message definition"
                        ))));
                    }
                    // Errors inside `full` carry their own context.
                    let s = self.compile_struct(&full)?;
                    let sp = &self.structs[s];
                    depth = depth.max(sp.depth + 1);
                    columns = columns.saturating_add(sp.columns);
                    let t = sp.data_type.clone();
                    match *array {
                        ArrayDecl::None => (Node::Struct(s), t, sp.fixed, sp.min, sp.work),
                        ArrayDecl::Var => (Node::StructList(s), list_of(t), None, 4, 1),
                        ArrayDecl::Fixed(n) => (
                            Node::StructArray(s, n),
                            fixed_list_of(t, n as i32),
                            sp.fixed.and_then(|k| k.checked_mul(n)),
                            sp.min.saturating_mul(n),
                            sp.work.saturating_mul(n).saturating_add(1),
                        ),
                    }
                }
            };
            fixed = match (fixed, f_fixed) {
                (Some(a), Some(b)) => a.checked_add(b),
                _ => None,
            };
            min = min.saturating_add(f_min);
            work = work.saturating_add(f_work);
            columns = columns.saturating_add(1);
            fields.push(FieldPlan {
                name: field_name.as_str().into(),
                node,
                fixed: f_fixed,
            });
            arrow_fields.push(Arc::new(field(field_name.as_str(), data_type)));
        }
        if depth > MAX_DEPTH {
            return Err(DecodeError::new(format!(
                "{name}: message types nest deeper than {MAX_DEPTH} levels"
            )));
        }
        if columns > MAX_COLUMNS {
            return Err(DecodeError::new(format!(
                "{name}: expands to more than {MAX_COLUMNS} columns"
            )));
        }
        if work > MAX_WORK {
            return Err(DecodeError::new(format!(
                "{name}: fixed-size arrays make more than {MAX_WORK} values per message"
            )));
        }
        Ok(StructPlan {
            type_name: name.to_string(),
            fields,
            fixed,
            min,
            work,
            depth,
            columns,
            data_type: DataType::Struct(Fields::from(arrow_fields)),
        })
    }
}

/// Node, Arrow type, fixed size, min size and work of a builtin field;
/// `bytes` when the type is spelled `uint8` or `char` (their arrays are Binary).
fn prim_field(
    p: Prim,
    bytes: bool,
    array: ArrayDecl,
) -> (Node, DataType, Option<usize>, usize, usize) {
    match array {
        ArrayDecl::None => (Node::Prim(p), p.data_type(), p.wire_size(), p.min_size(), 1),
        ArrayDecl::Var if bytes => (Node::Bytes, DataType::Binary, None, 4, 1),
        ArrayDecl::Var => (Node::PrimList(p), list_of(p.data_type()), None, 4, 1),
        ArrayDecl::Fixed(n) if bytes => (Node::FixedBytes(n), DataType::Binary, Some(n), n, 1),
        ArrayDecl::Fixed(n) => (
            Node::PrimArray(p, n),
            // n <= MAX_FIXED_LEN (2^24), so it fits an i32.
            fixed_list_of(p.data_type(), n as i32),
            p.wire_size().map(|k| k * n),
            p.min_size() * n,
            n.saturating_add(1),
        ),
    }
}
