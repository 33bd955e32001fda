//! Parser of ROS 2 `.msg` definitions as stored in `ros2msg` schemas.
//!
//! A schema is the main type's `.msg` text followed, per dependency, by a
//! line of `=` (80 of them as rosbag2 writes it), a line `MSG: pkg/Type` and
//! that type's text. [`Schema::split`] indexes the sections; [`parse_msg`]
//! turns one section into its fields. Only the syntax is handled here; name
//! resolution is [`Schema::resolve`], type mapping is up to the compiler.
//!
//! Grammar per line (after stripping a `#` comment):
//! - `TYPE NAME` a field, `TYPE NAME DEFAULT` a field with a default value
//!   (ignored);
//! - `TYPE NAME=VALUE` a constant (not a field);
//! - `TYPE` is a primitive (`bool byte char int8..uint64 float32 float64
//!   string wstring`, plus ROS 1's `time`/`duration`), `string<=N`,
//!   `wstring<=N`, or a message name (`Type`, `pkg/Type`, `pkg/msg/Type`),
//!   optionally followed by `[]`, `[N]` or `[<=N]`.

use std::collections::HashMap;

use crate::DecodeError;

/// The builtin package whose `Time` and `Duration` map to Arrow time types.
pub(super) const BUILTIN_TIME: &str = "builtin_interfaces/Time";
/// See [`BUILTIN_TIME`].
pub(super) const BUILTIN_DURATION: &str = "builtin_interfaces/Duration";

/// Largest fixed array length or bound accepted (an Arrow `FixedSizeList`
/// size is an `i32`).
const MAX_LEN: usize = i32::MAX as usize;

/// A primitive ROS 2 type.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Prim {
    Bool,
    /// IDL `octet`: unsigned.
    Byte,
    /// `uint8` in current rosidl.
    Char,
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
}

impl Prim {
    /// Bytes on the wire (and alignment, capped by the encoding).
    pub(super) fn size(self) -> usize {
        match self {
            Prim::Bool | Prim::Byte | Prim::Char | Prim::I8 | Prim::U8 => 1,
            Prim::I16 | Prim::U16 => 2,
            Prim::I32 | Prim::U32 | Prim::F32 => 4,
            Prim::I64 | Prim::U64 | Prim::F64 => 8,
        }
    }

    fn from_name(name: &str) -> Option<Prim> {
        Some(match name {
            "bool" => Prim::Bool,
            "byte" => Prim::Byte,
            "char" => Prim::Char,
            "int8" => Prim::I8,
            "uint8" => Prim::U8,
            "int16" => Prim::I16,
            "uint16" => Prim::U16,
            "int32" => Prim::I32,
            "uint32" => Prim::U32,
            "int64" => Prim::I64,
            "uint64" => Prim::U64,
            "float32" => Prim::F32,
            "float64" => Prim::F64,
            _ => return None,
        })
    }
}

/// The element type of a field, before arrays.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) enum BaseType {
    Prim(Prim),
    /// `string` or `string<=N` (the bound is not enforced when decoding).
    String,
    /// `wstring` or `wstring<=N`.
    WString,
    /// A message type as written (`Point`, `geometry_msgs/Point`,
    /// `geometry_msgs/msg/Point`, `Header`, or ROS 1's `time`/`duration`
    /// spelled as the builtin message).
    Named(String),
}

/// The array shape of a field.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Array {
    /// Not an array.
    Single,
    /// `T[N]`: exactly `N` elements, no length on the wire.
    Fixed(usize),
    /// `T[]` or `T[<=N]`: a `u32` count, then the elements.
    Seq,
}

/// One field of a message.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct FieldDef {
    pub(super) name: String,
    pub(super) base: BaseType,
    pub(super) array: Array,
}

/// Parses one `.msg` text into its fields (constants and comments skipped).
/// Errors name the line (1-based within the section).
pub(super) fn parse_msg(text: &str) -> Result<Vec<FieldDef>, DecodeError> {
    let mut fields: Vec<FieldDef> = Vec::new();
    for (i, raw) in text.lines().enumerate() {
        let line = raw.trim();
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        let bad = |why: String| DecodeError::new(format!("line {}: {why}: {line:?}", i + 1));
        let Some((type_token, rest)) = line.split_once(|c: char| c.is_whitespace()) else {
            return Err(bad("expected `TYPE NAME`".into()));
        };
        let rest = rest.trim_start();
        let name_len = rest
            .find(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
            .unwrap_or(rest.len());
        let name = &rest[..name_len];
        if name.is_empty() || !name.starts_with(|c: char| c.is_ascii_alphabetic()) {
            return Err(bad("expected a field name after the type".into()));
        }
        let tail = &rest[name_len..];
        if !(tail.is_empty()
            || tail.starts_with(|c: char| c.is_whitespace() || c == '=' || c == '#'))
        {
            return Err(bad(format!("bad field name {rest:?}")));
        }
        if tail.trim_start().starts_with('=') {
            // A constant: not part of the payload. Its type must still parse.
            parse_type(type_token).map_err(bad)?;
            continue;
        }
        let (base, array) = parse_type(type_token).map_err(bad)?;
        if fields.iter().any(|f| f.name == name) {
            return Err(bad(format!("duplicate field name {name:?}")));
        }
        fields.push(FieldDef {
            name: name.to_string(),
            base,
            array,
        });
    }
    Ok(fields)
}

/// Parses a type token: base type and array shape.
fn parse_type(token: &str) -> Result<(BaseType, Array), String> {
    let (base, array) = match token.find('[') {
        None => (token, Array::Single),
        Some(i) => {
            let spec = &token[i..];
            let inner = spec
                .strip_prefix('[')
                .and_then(|s| s.strip_suffix(']'))
                .filter(|s| !s.contains(['[', ']']))
                .ok_or_else(|| format!("bad array type {token:?}"))?;
            let array = if inner.is_empty() {
                Array::Seq
            } else if let Some(bound) = inner.strip_prefix("<=") {
                parse_len(bound, token)?;
                Array::Seq
            } else {
                let n = parse_len(inner, token)?;
                if n == 0 {
                    return Err(format!("fixed array of 0 elements in {token:?}"));
                }
                Array::Fixed(n)
            };
            (&token[..i], array)
        }
    };
    let base = if let Some((name, bound)) = base.split_once("<=") {
        parse_len(bound, token)?;
        match name {
            "string" => BaseType::String,
            "wstring" => BaseType::WString,
            _ => return Err(format!("only strings can be bounded, not {name:?}")),
        }
    } else if let Some(p) = Prim::from_name(base) {
        BaseType::Prim(p)
    } else {
        match base {
            "string" => BaseType::String,
            "wstring" => BaseType::WString,
            "time" => BaseType::Named(BUILTIN_TIME.into()),
            "duration" => BaseType::Named(BUILTIN_DURATION.into()),
            _ => {
                let ok = !base.is_empty()
                    && base.split('/').count() <= 3
                    && base.split('/').all(|part| {
                        part.starts_with(|c: char| c.is_ascii_alphabetic())
                            && part.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
                    });
                if !ok {
                    return Err(format!("bad type name {base:?}"));
                }
                BaseType::Named(base.to_string())
            }
        }
    };
    Ok((base, array))
}

/// A length or bound: a decimal number up to [`MAX_LEN`].
fn parse_len(text: &str, token: &str) -> Result<usize, String> {
    if text.is_empty() || !text.bytes().all(|b| b.is_ascii_digit()) {
        return Err(format!("bad length {text:?} in {token:?}"));
    }
    match text.parse::<usize>() {
        Ok(n) if n <= MAX_LEN => Ok(n),
        _ => Err(format!("length {text} in {token:?} is too large")),
    }
}

/// `pkg/Type` for `pkg/Type` or `pkg/<anything>/Type`; `None` for a bare
/// name or a malformed one.
pub(super) fn normalize(name: &str) -> Option<String> {
    let parts: Vec<&str> = name.split('/').collect();
    match parts.as_slice() {
        [pkg, ty] | [pkg, _, ty] if !pkg.is_empty() && !ty.is_empty() => {
            Some(format!("{pkg}/{ty}"))
        }
        _ => None,
    }
}

/// The package of a normalized `pkg/Type` name.
pub(super) fn package(name: &str) -> &str {
    name.split_once('/').map_or("", |(p, _)| p)
}

/// The sections of one concatenated definition, by normalized type name.
#[derive(Debug)]
pub(super) struct Schema<'a> {
    /// The main type, normalized (`sensor_msgs/Imu`).
    pub(super) main: String,
    sections: HashMap<String, &'a str>,
}

impl<'a> Schema<'a> {
    /// Splits `text` (the schema of `type_name`) into its sections. The
    /// first section of a name wins when a dependency repeats.
    pub(super) fn split(type_name: &str, text: &'a str) -> Result<Self, DecodeError> {
        let main = normalize(type_name).unwrap_or_else(|| type_name.to_string());
        let mut sections = HashMap::new();
        let mut current = main.clone();
        let mut start = 0;
        let mut expect_name = false;
        let mut offset = 0;
        for line in text.split_inclusive('\n') {
            let line_start = offset;
            offset += line.len();
            let trimmed = line.trim();
            if expect_name {
                if trimmed.is_empty() {
                    continue;
                }
                let Some(name) = trimmed.strip_prefix("MSG:") else {
                    return Err(DecodeError::new(format!(
                        "definition of {type_name}: a separator line must be followed by `MSG: pkg/Type`, got {trimmed:?}"
                    )));
                };
                let name = name.trim();
                current = normalize(name).ok_or_else(|| {
                    DecodeError::new(format!(
                        "definition of {type_name}: bad dependency name {name:?}"
                    ))
                })?;
                start = offset;
                expect_name = false;
            } else if trimmed.len() >= 3 && trimmed.bytes().all(|b| b == b'=') {
                sections
                    .entry(std::mem::take(&mut current))
                    .or_insert(&text[start..line_start]);
                expect_name = true;
            }
        }
        if expect_name {
            return Err(DecodeError::new(format!(
                "definition of {type_name}: ends with a separator line and no `MSG:` line"
            )));
        }
        sections.entry(current).or_insert(&text[start..]);
        Ok(Self { main, sections })
    }

    /// The text of section `name` (normalized).
    pub(super) fn text(&self, name: &str) -> Option<&'a str> {
        self.sections.get(name).copied()
    }

    /// The normalized name a field type `written` in package `pkg` refers
    /// to: a bare name is looked up in `pkg` first, then `Header` is
    /// `std_msgs/Header`, then the one section of that name in any package; a
    /// qualified name (`pkg/Type`, `pkg/msg/Type`) is itself.
    pub(super) fn resolve(&self, written: &str, pkg: &str) -> Result<String, DecodeError> {
        if written.contains('/') {
            let name = normalize(written)
                .ok_or_else(|| DecodeError::new(format!("bad type name {written:?}")))?;
            if self.sections.contains_key(&name) || name == BUILTIN_TIME || name == BUILTIN_DURATION
            {
                return Ok(name);
            }
            return Err(DecodeError::new(format!(
                "type {written:?} has no definition in the schema (no `MSG: {name}` section)"
            )));
        }
        let local = format!("{pkg}/{written}");
        if self.sections.contains_key(&local) || local == BUILTIN_TIME || local == BUILTIN_DURATION
        {
            return Ok(local);
        }
        if written == "Header" && self.sections.contains_key("std_msgs/Header") {
            return Ok("std_msgs/Header".to_string());
        }
        let suffix = format!("/{written}");
        let mut candidates = self.sections.keys().filter(|k| k.ends_with(&suffix));
        match (candidates.next(), candidates.next()) {
            (Some(one), None) => Ok(one.clone()),
            (Some(_), Some(_)) => Err(DecodeError::new(format!(
                "type {written:?} is ambiguous: no {local:?} and several packages define it"
            ))),
            (None, _) => Err(DecodeError::new(format!(
                "type {written:?} has no definition in the schema (no `MSG: {local}` section)"
            ))),
        }
    }
}
