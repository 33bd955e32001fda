//! Decoding errors that name the JSON path of the value that failed
//! (`$.status[2].level: expected integer, got string`), and the text helpers
//! they share with the parser.

use std::fmt::Write as _;

use crate::DecodeError;

/// One step of a JSON path.
#[derive(Debug)]
pub(super) enum Seg {
    Key(String),
    Index(usize),
}

/// A decoding failure; the path is collected innermost first while the
/// error travels up.
#[derive(Debug)]
pub(super) struct FailInner {
    message: String,
    pub(super) path: Vec<Seg>,
}

/// Boxed so `Result<(), Fail>` stays one pointer wide on the hot path.
#[derive(Debug)]
pub(super) struct Fail(Box<FailInner>);

impl std::ops::Deref for Fail {
    type Target = FailInner;
    fn deref(&self) -> &FailInner {
        &self.0
    }
}

impl std::ops::DerefMut for Fail {
    fn deref_mut(&mut self) -> &mut FailInner {
        &mut self.0
    }
}

impl Fail {
    pub(super) fn new(message: impl Into<String>) -> Self {
        Fail(Box::new(FailInner {
            message: message.into(),
            path: Vec::new(),
        }))
    }

    pub(super) fn builder(e: DecodeError) -> Self {
        Self::new(e.message.into_string())
    }

    pub(super) fn at(mut self, seg: Seg) -> Self {
        self.path.push(seg);
        self
    }

    pub(super) fn into_error(self) -> DecodeError {
        let mut s = String::from("$");
        for seg in self.path.iter().rev() {
            match seg {
                Seg::Index(i) => {
                    let _ = write!(s, "[{i}]");
                }
                Seg::Key(k) if is_identifier(k) => {
                    s.push('.');
                    s.push_str(k);
                }
                Seg::Key(k) => {
                    s.push('[');
                    write_json_string(&mut s, k);
                    s.push(']');
                }
            }
        }
        DecodeError::new(format!("{s}: {}", self.message))
    }
}

fn is_identifier(k: &str) -> bool {
    let mut chars = k.chars();
    matches!(chars.next(), Some(c) if c.is_ascii_alphabetic() || c == '_')
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_')
}

/// Appends `s` as a JSON string literal.
pub(super) fn write_json_string(out: &mut String, s: &str) {
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            c if (c as u32) < 0x20 => {
                let _ = write!(out, "\\u{:04x}", c as u32);
            }
            c => out.push(c),
        }
    }
    out.push('"');
}

/// The JSON kind starting with byte `b`, for "got ..." messages.
pub(super) fn kind_of(b: u8) -> &'static str {
    match b {
        b'"' => "string",
        b'{' => "object",
        b'[' => "array",
        b't' | b'f' => "boolean",
        b'n' => "null",
        b'-' | b'0'..=b'9' => "number",
        _ => "invalid JSON",
    }
}
