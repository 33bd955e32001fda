//! The strict RFC 8259 parser: writes payloads straight into a
//! `ColumnBuilder` following a type tree, or builds a [`Value`] tree of a
//! whole document (schemas, inference samples).

use std::borrow::Cow;

use super::MAX_DEPTH;
use super::path_error::{Fail, Seg, kind_of};
use super::types::{Node, StructNode};
use super::value::Value;
use crate::{ColumnBuilder, DecodeError};

/// A JSON number, integers exact.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Num {
    /// An integer that fits `i64`.
    I(i64),
    /// An integer above `i64::MAX` that fits `u64`.
    U(u64),
    /// Any other number (fraction, exponent, or an integer beyond `u64`).
    F(f64),
}

/// A strict RFC 8259 parser over text already checked to be UTF-8.
pub(super) struct Parser<'a> {
    text: &'a str,
    bytes: &'a [u8],
    pos: usize,
    /// Reused buffer for JSON-text columns.
    scratch: String,
    /// Deepest nesting accepted.
    max_depth: usize,
}

impl<'a> Parser<'a> {
    pub(super) fn new(text: &'a str) -> Self {
        Self {
            text,
            bytes: text.as_bytes(),
            pos: 0,
            scratch: String::new(),
            max_depth: MAX_DEPTH,
        }
    }

    fn syntax(&self, what: &str) -> Fail {
        match self.bytes.get(self.pos) {
            None => Fail::new(format!(
                "invalid JSON: {what} at byte {}, the end of the payload",
                self.pos
            )),
            Some(_) => Fail::new(format!("invalid JSON: {what} at byte {}", self.pos)),
        }
    }

    #[inline]
    fn skip_ws(&mut self) {
        while let Some(b' ' | b'\n' | b'\r' | b'\t') = self.bytes.get(self.pos) {
            self.pos += 1;
        }
    }

    /// The next byte after whitespace (not consumed).
    #[inline]
    fn peek(&mut self) -> Result<u8, Fail> {
        self.skip_ws();
        self.bytes
            .get(self.pos)
            .copied()
            .ok_or_else(|| self.syntax("expected a value"))
    }

    /// Only whitespace may follow the document.
    pub(super) fn finish(&mut self) -> Result<(), Fail> {
        self.skip_ws();
        if self.pos < self.bytes.len() {
            return Err(self.syntax("unexpected text after the value"));
        }
        Ok(())
    }

    /// Consumes `word` (`true`, `false`, `null`).
    fn literal(&mut self, word: &str) -> Result<(), Fail> {
        if self.bytes[self.pos.min(self.bytes.len())..].starts_with(word.as_bytes()) {
            self.pos += word.len();
            Ok(())
        } else {
            Err(self.syntax("expected a value"))
        }
    }

    /// Consumes `b` after whitespace, or fails with `what`.
    #[inline]
    fn expect(&mut self, b: u8, what: &str) -> Result<(), Fail> {
        if self.peek().ok() == Some(b) {
            self.pos += 1;
            Ok(())
        } else {
            Err(self.syntax(what))
        }
    }

    /// After an element: `true` when another follows (a `,` was consumed),
    /// `false` at the `close` byte (consumed).
    #[inline]
    fn next_element(&mut self, close: u8) -> Result<bool, Fail> {
        match self.peek().ok() {
            Some(b',') => {
                self.pos += 1;
                Ok(true)
            }
            Some(b) if b == close => {
                self.pos += 1;
                Ok(false)
            }
            _ => Err(self.syntax(if close == b']' {
                "expected ',' or ']'"
            } else {
                "expected ',' or '}'"
            })),
        }
    }

    /// Scans the string starting at the opening quote at `self.pos`; returns
    /// whether it holds escapes and leaves `pos` after the closing quote.
    #[inline]
    fn scan_string(&mut self) -> Result<bool, Fail> {
        self.pos += 1;
        let mut escaped = false;
        loop {
            let rest = self.bytes.get(self.pos..).unwrap_or_default();
            let Some(i) = rest
                .iter()
                .position(|&b| b == b'"' || b == b'\\' || b < 0x20)
            else {
                self.pos = self.bytes.len();
                return Err(self.syntax("unterminated string"));
            };
            self.pos += i;
            match self.bytes[self.pos] {
                b'"' => {
                    self.pos += 1;
                    return Ok(escaped);
                }
                b'\\' => {
                    escaped = true;
                    self.pos += 1;
                    match self.bytes.get(self.pos) {
                        Some(b'"' | b'\\' | b'/' | b'b' | b'f' | b'n' | b'r' | b't') => {
                            self.pos += 1;
                        }
                        Some(b'u') => {
                            self.pos += 1;
                            self.unicode_escape()?;
                        }
                        _ => return Err(self.syntax("invalid escape in string")),
                    }
                }
                _ => return Err(self.syntax("control character in string")),
            }
        }
    }

    /// Four hex digits at `pos` (consumed).
    fn hex4(&mut self) -> Result<u32, Fail> {
        let digits = self
            .bytes
            .get(self.pos..self.pos + 4)
            .ok_or_else(|| self.syntax("invalid \\u escape"))?;
        let mut v = 0u32;
        for &d in digits {
            let x = (d as char)
                .to_digit(16)
                .ok_or_else(|| self.syntax("invalid \\u escape"))?;
            v = v * 16 + x;
        }
        self.pos += 4;
        Ok(v)
    }

    /// The character of a `\u` escape whose `\u` was consumed (a surrogate
    /// pair takes the following `\uXXXX` too).
    fn unicode_escape(&mut self) -> Result<char, Fail> {
        let hi = self.hex4()?;
        let code = match hi {
            0xD800..=0xDBFF => {
                if self.bytes.get(self.pos..self.pos + 2) != Some(b"\\u") {
                    return Err(self.syntax("lone surrogate in \\u escape"));
                }
                self.pos += 2;
                let lo = self.hex4()?;
                if !(0xDC00..=0xDFFF).contains(&lo) {
                    return Err(self.syntax("lone surrogate in \\u escape"));
                }
                0x10000 + ((hi - 0xD800) << 10) + (lo - 0xDC00)
            }
            0xDC00..=0xDFFF => return Err(self.syntax("lone surrogate in \\u escape")),
            v => v,
        };
        char::from_u32(code).ok_or_else(|| self.syntax("invalid \\u escape"))
    }

    /// The string at `pos` (which must be `"`), unescaped.
    fn string(&mut self) -> Result<Cow<'a, str>, Fail> {
        let start = self.pos;
        let escaped = self.scan_string()?;
        let raw = self
            .text
            .get(start + 1..self.pos - 1)
            .ok_or_else(|| Fail::new("internal: string bounds"))?;
        if !escaped {
            return Ok(Cow::Borrowed(raw));
        }
        let mut out = String::with_capacity(raw.len());
        let rb = raw.as_bytes();
        let (mut i, mut plain) = (0, 0);
        while i < rb.len() {
            if rb[i] != b'\\' {
                i += 1;
                continue;
            }
            out.push_str(raw.get(plain..i).unwrap_or_default());
            match rb.get(i + 1) {
                Some(b'u') => {
                    // Already validated by `scan_string`; decode it again here.
                    let mut sub = Parser::new(raw);
                    sub.pos = i + 2;
                    out.push(sub.unicode_escape()?);
                    i = sub.pos;
                }
                Some(&c) => {
                    out.push(match c {
                        b'b' => '\u{8}',
                        b'f' => '\u{c}',
                        b'n' => '\n',
                        b'r' => '\r',
                        b't' => '\t',
                        c => c as char,
                    });
                    i += 2;
                }
                None => return Err(Fail::new("internal: dangling escape")),
            }
            plain = i;
        }
        out.push_str(raw.get(plain..).unwrap_or_default());
        Ok(Cow::Owned(out))
    }

    /// The number at `pos`.
    fn number(&mut self) -> Result<Num, Fail> {
        let start = self.pos;
        let b = self.bytes;
        let mut p = self.pos;
        if b.get(p) == Some(&b'-') {
            p += 1;
        }
        match b.get(p) {
            Some(b'0') => p += 1,
            Some(b'1'..=b'9') => {
                while let Some(b'0'..=b'9') = b.get(p) {
                    p += 1;
                }
            }
            _ => {
                self.pos = p;
                return Err(self.syntax("invalid number"));
            }
        }
        let mut integer = true;
        if b.get(p) == Some(&b'.') {
            integer = false;
            p += 1;
            if !matches!(b.get(p), Some(b'0'..=b'9')) {
                self.pos = p;
                return Err(self.syntax("invalid number"));
            }
            while let Some(b'0'..=b'9') = b.get(p) {
                p += 1;
            }
        }
        if let Some(b'e' | b'E') = b.get(p) {
            integer = false;
            p += 1;
            if let Some(b'+' | b'-') = b.get(p) {
                p += 1;
            }
            if !matches!(b.get(p), Some(b'0'..=b'9')) {
                self.pos = p;
                return Err(self.syntax("invalid number"));
            }
            while let Some(b'0'..=b'9') = b.get(p) {
                p += 1;
            }
        }
        self.pos = p;
        let text = self.text.get(start..p).unwrap_or_default();
        if integer {
            if let Ok(v) = text.parse::<i64>() {
                return Ok(Num::I(v));
            }
            if let Ok(v) = text.parse::<u64>() {
                return Ok(Num::U(v));
            }
        }
        match text.parse::<f64>() {
            Ok(v) if v.is_finite() => Ok(Num::F(v)),
            _ => {
                self.pos = start;
                Err(self.syntax("number out of range"))
            }
        }
    }

    /// Parses the value at `pos` as `node` and appends it to `out`.
    pub(super) fn decode(
        &mut self,
        node: &Node,
        out: &mut ColumnBuilder,
        depth: usize,
    ) -> Result<(), Fail> {
        let b = self.peek()?;
        if b == b'n' {
            self.literal("null")?;
            out.append_null();
            return Ok(());
        }
        let expected = match node {
            Node::Bool => match b {
                b't' => {
                    self.literal("true")?;
                    return out.append_bool(true).map_err(Fail::builder);
                }
                b'f' => {
                    self.literal("false")?;
                    return out.append_bool(false).map_err(Fail::builder);
                }
                _ => "boolean",
            },
            Node::Int => match b {
                b'-' | b'0'..=b'9' => {
                    let start = self.pos;
                    return match self.number()? {
                        Num::I(v) => out.append_i64(v).map_err(Fail::builder),
                        Num::F(f)
                            if f.fract() == 0.0
                                && (-9_223_372_036_854_775_808.0..9_223_372_036_854_775_808.0)
                                    .contains(&f) =>
                        {
                            out.append_i64(f as i64).map_err(Fail::builder)
                        }
                        Num::F(f) if f.fract() != 0.0 => Err(Fail::new(format!(
                            "expected integer, got number {}",
                            self.text.get(start..self.pos).unwrap_or_default()
                        ))),
                        Num::U(_) | Num::F(_) => Err(Fail::new(format!(
                            "integer {} is out of the Int64 range",
                            self.text.get(start..self.pos).unwrap_or_default()
                        ))),
                    };
                }
                _ => "integer",
            },
            Node::Float => match b {
                b'-' | b'0'..=b'9' => {
                    return match self.number()? {
                        Num::I(v) => out.append_f64(v as f64),
                        Num::U(v) => out.append_f64(v as f64),
                        Num::F(v) => out.append_f64(v),
                    }
                    .map_err(Fail::builder);
                }
                _ => "number",
            },
            Node::Str => match b {
                b'"' => {
                    let s = self.string()?;
                    return out.append_str(&s).map_err(Fail::builder);
                }
                _ => "string",
            },
            Node::Text => {
                let mut text = std::mem::take(&mut self.scratch);
                text.clear();
                let result = self
                    .skip(Some(&mut text), depth)
                    .and_then(|()| out.append_str(&text).map_err(Fail::builder));
                self.scratch = text;
                return result;
            }
            Node::Null => "null",
            Node::List(item) => match b {
                b'[' => return self.decode_list(item, out, depth),
                _ => "array",
            },
            Node::Struct(s) => match b {
                b'{' => return self.decode_struct(s, out, depth),
                _ => "object",
            },
        };
        match kind_of(b) {
            "invalid JSON" => Err(self.syntax("expected a value")),
            got => Err(Fail::new(format!("expected {expected}, got {got}"))),
        }
    }

    fn check_depth(&self, depth: usize) -> Result<(), Fail> {
        if depth >= self.max_depth {
            return Err(Fail::new(format!(
                "nesting deeper than {} levels at byte {}",
                self.max_depth, self.pos
            )));
        }
        Ok(())
    }

    /// Decodes the array at `pos` as one list row of `out`.
    ///
    /// On error the elements already appended are removed again, so `out` and
    /// its child hold only complete rows. (`ColumnBuilder::truncate` cannot
    /// do that for a row that was never closed, so every level rolls back its
    /// own partial row before the error travels up.)
    fn decode_list(
        &mut self,
        item: &Node,
        out: &mut ColumnBuilder,
        depth: usize,
    ) -> Result<(), Fail> {
        self.check_depth(depth)?;
        self.pos += 1; // '['
        let child = out.list_child().map_err(Fail::builder)?;
        let start = child.len();
        if let Err(e) = self.list_elements(item, child, depth) {
            child.truncate(start);
            return Err(e);
        }
        out.close_list().map_err(Fail::builder)
    }

    fn list_elements(
        &mut self,
        item: &Node,
        child: &mut ColumnBuilder,
        depth: usize,
    ) -> Result<(), Fail> {
        if self.peek()? == b']' {
            self.pos += 1;
            return Ok(());
        }
        let mut i = 0usize;
        loop {
            self.decode(item, child, depth + 1)
                .map_err(|e| e.at(Seg::Index(i)))?;
            i += 1;
            if !self.next_element(b']')? {
                return Ok(());
            }
        }
    }

    /// Decodes the object at `pos` as one struct row of `out`; on error the
    /// fields already appended are removed again (see [`Self::decode_list`]).
    fn decode_struct(
        &mut self,
        s: &StructNode,
        out: &mut ColumnBuilder,
        depth: usize,
    ) -> Result<(), Fail> {
        self.check_depth(depth)?;
        self.pos += 1; // '{'
        let row = out.len();
        let fields = out.fields_mut().map_err(Fail::builder)?;
        if let Err(e) = self.struct_members(s, fields, row, depth) {
            for f in fields.iter_mut() {
                f.truncate(row);
            }
            return Err(e);
        }
        out.close_struct().map_err(Fail::builder)
    }

    fn struct_members(
        &mut self,
        s: &StructNode,
        fields: &mut [ColumnBuilder],
        row: usize,
        depth: usize,
    ) -> Result<(), Fail> {
        if self.peek()? == b'}' {
            self.pos += 1;
            return Ok(());
        }
        let mut hint = 0usize;
        loop {
            if self.peek()? != b'"' {
                return Err(self.syntax("expected a key string"));
            }
            let key = self.string()?;
            self.expect(b':', "expected ':'")?;
            match s.find(&key, hint) {
                Some(i) => {
                    hint = i + 1;
                    let (Some(node), Some(child)) = (s.children.get(i), fields.get_mut(i)) else {
                        return Err(Fail::new("internal: struct field count"));
                    };
                    if child.len() > row {
                        // A repeated key: the last value wins.
                        child.truncate(row);
                    }
                    self.decode(node, child, depth + 1)
                        .map_err(|e| e.at(Seg::Key(key.into_owned())))?;
                }
                None => self
                    .skip(None, depth + 1)
                    .map_err(|e| e.at(Seg::Key(key.into_owned())))?,
            }
            if !self.next_element(b'}')? {
                return Ok(());
            }
        }
    }

    /// Validates the value at `pos` and moves past it; with `out`, writes it
    /// there as compact JSON text.
    fn skip(&mut self, mut out: Option<&mut String>, depth: usize) -> Result<(), Fail> {
        let b = self.peek()?;
        let start = self.pos;
        match b {
            b'"' => {
                self.scan_string()?;
            }
            b'-' | b'0'..=b'9' => {
                self.number()?;
            }
            b't' => self.literal("true")?,
            b'f' => self.literal("false")?,
            b'n' => self.literal("null")?,
            b'[' | b'{' => {
                self.check_depth(depth)?;
                let close = if b == b'[' { b']' } else { b'}' };
                self.pos += 1;
                if let Some(o) = out.as_deref_mut() {
                    o.push(b as char);
                }
                if self.peek()? != close {
                    loop {
                        if b == b'{' {
                            if self.peek()? != b'"' {
                                return Err(self.syntax("expected a key string"));
                            }
                            let key_start = self.pos;
                            self.scan_string()?;
                            if let Some(o) = out.as_deref_mut() {
                                o.push_str(self.text.get(key_start..self.pos).unwrap_or_default());
                            }
                            self.expect(b':', "expected ':'")?;
                            if let Some(o) = out.as_deref_mut() {
                                o.push(':');
                            }
                        }
                        self.skip(out.as_deref_mut(), depth + 1)?;
                        if !self.next_element(close)? {
                            break;
                        }
                        if let Some(o) = out.as_deref_mut() {
                            o.push(',');
                        }
                    }
                } else {
                    self.pos += 1;
                }
                if let Some(o) = out {
                    o.push(close as char);
                }
                return Ok(());
            }
            _ => return Err(self.syntax("expected a value")),
        }
        if let Some(o) = out {
            o.push_str(self.text.get(start..self.pos).unwrap_or_default());
        }
        Ok(())
    }

    /// Parses the value at `pos` into a [`Value`] tree.
    pub(super) fn value(&mut self, depth: usize) -> Result<Value, Fail> {
        let b = self.peek()?;
        Ok(match b {
            b'"' => Value::Str(self.string()?.into_owned()),
            b'-' | b'0'..=b'9' => match self.number()? {
                Num::I(v) => Value::Int(v),
                Num::U(v) => Value::UInt(v),
                Num::F(v) => Value::Float(v),
            },
            b't' => {
                self.literal("true")?;
                Value::Bool(true)
            }
            b'f' => {
                self.literal("false")?;
                Value::Bool(false)
            }
            b'n' => {
                self.literal("null")?;
                Value::Null
            }
            b'[' => {
                self.check_depth(depth)?;
                self.pos += 1;
                let mut items = Vec::new();
                if self.peek()? == b']' {
                    self.pos += 1;
                } else {
                    loop {
                        items.push(self.value(depth + 1)?);
                        if !self.next_element(b']')? {
                            break;
                        }
                    }
                }
                Value::Array(items)
            }
            b'{' => {
                self.check_depth(depth)?;
                self.pos += 1;
                let mut pairs = Vec::new();
                if self.peek()? == b'}' {
                    self.pos += 1;
                } else {
                    loop {
                        if self.peek()? != b'"' {
                            return Err(self.syntax("expected a key string"));
                        }
                        let key = self.string()?.into_owned();
                        self.expect(b':', "expected ':'")?;
                        pairs.push((key, self.value(depth + 1)?));
                        if !self.next_element(b'}')? {
                            break;
                        }
                    }
                }
                Value::Object(pairs)
            }
            _ => return Err(self.syntax("expected a value")),
        })
    }
}

/// Parses a whole JSON document (UTF-8 bytes, nested at most `max_depth`
/// levels) into a [`Value`].
pub(super) fn parse_document(bytes: &[u8], max_depth: usize) -> Result<Value, DecodeError> {
    let text = std::str::from_utf8(bytes)
        .map_err(|e| DecodeError::new(format!("not valid UTF-8 (at byte {})", e.valid_up_to())))?;
    let mut p = Parser::new(text);
    p.max_depth = max_depth;
    let value = p.value(0).map_err(Fail::into_error)?;
    p.finish().map_err(Fail::into_error)?;
    Ok(value)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(s: &str) -> Result<Value, DecodeError> {
        parse_document(s.as_bytes(), MAX_DEPTH)
    }

    #[test]
    fn parses_scalars_exactly() {
        assert_eq!(parse("0").unwrap(), Value::Int(0));
        assert_eq!(parse("-0").unwrap(), Value::Int(0));
        assert_eq!(parse("-9223372036854775808").unwrap(), Value::Int(i64::MIN));
        assert_eq!(
            parse("18446744073709551615").unwrap(),
            Value::UInt(u64::MAX)
        );
        assert_eq!(
            parse("18446744073709551616").unwrap(),
            Value::Float(18446744073709551616.0)
        );
        assert_eq!(parse("-3e-07").unwrap(), Value::Float(-3e-07));
        assert_eq!(
            parse(r#""a\u00e9\ud83d\ude00\n\"""#).unwrap(),
            Value::Str("aé😀\n\"".into())
        );
        for bad in [
            "",
            " ",
            "01",
            "1.",
            ".5",
            "+1",
            "1e",
            "-",
            "tru",
            "nul",
            "[1,]",
            "{\"a\"}",
            "{1:2}",
            "\"\\x\"",
            "\"\\ud800\"",
            "\"\\udc00x\"",
            "\"a\u{1}\"",
            "1e999",
            "[1] 2",
            "\"abc",
        ] {
            assert!(parse(bad).is_err(), "{bad:?} parsed");
        }
    }

    #[test]
    fn escapes_in_strings_round_trip() {
        let v = parse(r#""x\u0041\ud83d\ude00\u00e9y\t""#).unwrap();
        assert_eq!(v, Value::Str("xA😀éy\t".into()));
    }
}
