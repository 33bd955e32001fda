//! The text layer of ROS1 message definitions: splitting the genmsg full text
//! into sections (`MSG: pkg/Type` after a line of `=`), and one section into
//! its field declarations (comments, blank lines and constants skipped).
//!
//! Nothing here resolves type names or knows about Arrow; see `plan.rs`.

use crate::DecodeError;

/// Largest fixed array length accepted (`T[N]`): far above any real message,
/// small enough that a definition can never ask for absurd work up front.
pub const MAX_FIXED_LEN: usize = 1 << 24;

/// One section of a full definition: the main type's text or one dependency.
#[derive(Debug)]
pub(super) struct Section<'a> {
    /// Normalized type name from the `MSG:` line (`None` for the main text).
    pub name: Option<String>,
    /// The section's lines with their 1-based line numbers in the whole text.
    pub lines: Vec<(usize, &'a str)>,
}

/// How a field's type is an array.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum ArrayDecl {
    /// Not an array.
    None,
    /// `T[]`: a u32 count, then the elements.
    Var,
    /// `T[N]`: exactly `N` elements, no count.
    Fixed(usize),
}

/// One field declaration, as written (type not yet resolved).
#[derive(Debug)]
pub(super) struct FieldDecl<'a> {
    /// Field name.
    pub name: &'a str,
    /// Element type as written (`float64`, `Header`, `geometry_msgs/Point`).
    pub base: &'a str,
    /// Array suffix.
    pub array: ArrayDecl,
}

/// One constant declaration (`TYPE NAME=VALUE`), its value as genmsg keeps
/// its text: a string constant's is the rest of the line (`#` included),
/// another's ends at a comment; both trimmed.
#[derive(Debug)]
pub(super) struct ConstDecl<'a> {
    /// Builtin type name.
    pub ty: &'a str,
    /// Constant name.
    pub name: &'a str,
    /// Value text.
    pub value: &'a str,
}

/// A section's declarations, each kind in order.
#[derive(Debug, Default)]
pub(super) struct Decls<'a> {
    /// Constants.
    pub constants: Vec<ConstDecl<'a>>,
    /// Fields.
    pub fields: Vec<FieldDecl<'a>>,
}

/// Is `line` a section separator (a line of `=`; genmsg writes 80, rosbag.js
/// only checks for a leading `==`)?
fn is_separator(line: &str) -> bool {
    let t = line.trim();
    t.len() >= 2 && t.bytes().all(|b| b == b'=')
}

/// `pkg/msg/Type` (ROS 2 spelling in converted bags) as `pkg/Type`; other
/// names unchanged.
pub(super) fn normalize_type_name(name: &str) -> String {
    let name = name.trim();
    match name.split('/').collect::<Vec<_>>().as_slice() {
        [pkg, "msg", ty] => format!("{pkg}/{ty}"),
        _ => name.to_string(),
    }
}

/// Splits a full definition into its main section and dependency sections.
///
/// A dependency section whose first non-blank line is not `MSG: name` is
/// skipped (lenient: an error only comes if a type it should define is used).
pub(super) fn split_sections(text: &str) -> Vec<Section<'_>> {
    let mut sections = vec![Section {
        name: None,
        lines: Vec::new(),
    }];
    let mut expect_name = false;
    let mut skipping = false;
    let mut main_started = false;
    for (i, raw) in text.split('\n').enumerate() {
        let line = raw.strip_suffix('\r').unwrap_or(raw);
        let number = i + 1;
        if is_separator(line) {
            expect_name = true;
            skipping = false;
            continue;
        }
        if expect_name {
            let t = line.trim();
            if t.is_empty() {
                continue;
            }
            expect_name = false;
            match t.strip_prefix("MSG:") {
                Some(name) => sections.push(Section {
                    name: Some(normalize_type_name(name)),
                    lines: Vec::new(),
                }),
                None => skipping = true,
            }
            continue;
        }
        if skipping {
            continue;
        }
        if let Some(current) = sections.last_mut() {
            // A main text that starts with its own `MSG:` line: drop that line.
            if current.name.is_none() && !main_started {
                let t = line.trim();
                if t.starts_with("MSG:") {
                    main_started = true;
                    continue;
                }
                main_started = !t.is_empty();
            }
            current.lines.push((number, line));
        }
    }
    sections
}

/// `[A-Za-z][A-Za-z0-9_]*`, the ROS1 rule for field and constant names.
fn valid_name(name: &str) -> bool {
    let mut chars = name.chars();
    matches!(chars.next(), Some(c) if c.is_ascii_alphabetic())
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_')
}

/// Type names: letters, digits, `_` and `/` separators (`pkg/Type`).
fn valid_type_name(name: &str) -> bool {
    !name.is_empty()
        && !name.starts_with('/')
        && !name.ends_with('/')
        && !name.contains("//")
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '/')
}

/// Splits `float64[9]` into `("float64", Fixed(9))`.
fn parse_type(token: &str) -> Result<(&str, ArrayDecl), String> {
    let (base, array) = match token.find('[') {
        None => (token, ArrayDecl::None),
        Some(open) => {
            let base = &token[..open];
            let suffix = &token[open + 1..];
            let inner = suffix
                .strip_suffix(']')
                .ok_or_else(|| format!("type {token:?}: array suffix does not end with ']'"))?;
            if inner.contains('[') || inner.contains(']') {
                return Err(format!(
                    "type {token:?}: arrays of arrays are not ROS1 message types"
                ));
            }
            let array = if inner.is_empty() {
                ArrayDecl::Var
            } else {
                let n: u64 = inner
                    .parse()
                    .map_err(|_| format!("type {token:?}: bad array length {inner:?}"))?;
                if n > MAX_FIXED_LEN as u64 {
                    return Err(format!(
                        "type {token:?}: fixed array length {n} is larger than {MAX_FIXED_LEN}"
                    ));
                }
                ArrayDecl::Fixed(n as usize)
            };
            (base, array)
        }
    };
    if !valid_type_name(base) {
        return Err(format!("bad type name {base:?}"));
    }
    Ok((base, array))
}

/// The field declarations of one section, in order. `is_builtin` tells
/// which type names may have constants.
pub(super) fn parse_fields<'a>(
    section: &Section<'a>,
    is_builtin: impl Fn(&str) -> bool,
) -> Result<Vec<FieldDecl<'a>>, DecodeError> {
    parse_section(section, is_builtin).map(|d| d.fields)
}

/// The constant and field declarations of one section. `is_builtin` tells
/// which type names may have constants.
pub(super) fn parse_section<'a>(
    section: &Section<'a>,
    is_builtin: impl Fn(&str) -> bool,
) -> Result<Decls<'a>, DecodeError> {
    let mut constants: Vec<ConstDecl<'a>> = Vec::new();
    let mut fields: Vec<FieldDecl<'a>> = Vec::new();
    for &(number, line) in &section.lines {
        // genmsg: strip the comment, skip blank lines, a `=` left means a
        // constant (whose string value may itself hold `#`; never serialized).
        let clean = match line.find('#') {
            Some(i) => &line[..i],
            None => line,
        }
        .trim();
        if clean.is_empty() {
            continue;
        }
        let bad = |why: String| DecodeError::new(format!("line {number} {:?}: {why}", line.trim()));
        if clean
            .split_whitespace()
            .next()
            .is_some_and(|t| t.contains("<="))
        {
            return Err(bad(
                "bounded strings and arrays are ROS 2 syntax, not ROS1".into()
            ));
        }
        if let Some(eq) = clean.find('=') {
            let decl = clean[..eq].trim();
            let mut tokens = decl.split_whitespace();
            let (Some(ty), Some(name), None) = (tokens.next(), tokens.next(), tokens.next()) else {
                return Err(bad("a constant is `TYPE NAME=VALUE`".into()));
            };
            if !is_builtin(ty) {
                return Err(bad(format!(
                    "constant {name:?} has type {ty:?}; constants must have a builtin non-array type"
                )));
            }
            if !valid_name(name) {
                return Err(bad(format!("bad constant name {name:?}")));
            }
            let value = if ty == "string" {
                line.split_once('=').map_or("", |(_, v)| v)
            } else {
                &clean[eq + 1..]
            };
            constants.push(ConstDecl {
                ty,
                name,
                value: value.trim(),
            });
            continue;
        }
        let mut tokens = clean.split_whitespace();
        let (Some(ty), Some(name), None) = (tokens.next(), tokens.next(), tokens.next()) else {
            return Err(bad("a field is `TYPE NAME`".into()));
        };
        if !valid_name(name) {
            return Err(bad(format!("bad field name {name:?}")));
        }
        let (base, array) = parse_type(ty).map_err(bad)?;
        if fields.iter().any(|f| f.name == name) {
            return Err(bad(format!("field {name:?} is declared twice")));
        }
        fields.push(FieldDecl { name, base, array });
    }
    Ok(Decls { constants, fields })
}
