//! Splitting SQL text into statements at `;`, aware of quotes and comments.
//!
//! DataFusion's `ctx.sql` takes one statement at a time; the CLI accepts
//! scripts. A `;` inside `'...'`, `"..."`, `-- ...` or `/* ... */` does not end
//! a statement. The shell uses [`Split::rest`] to know whether the input so far
//! ends inside an unfinished statement.

/// The result of splitting SQL text.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct Split {
    /// Complete statements (each ended by `;`), trimmed, without the `;`.
    /// Statements that are only comments or blanks are left out.
    pub statements: Vec<String>,
    /// Text after the last `;`, trimmed; empty when it holds no code (only
    /// blanks or comments).
    pub rest: String,
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum State {
    Code,
    Single,
    Double,
    LineComment,
    BlockComment(u32),
}

/// Splits `sql` at each `;` that is not inside a string, a quoted identifier or a comment.
pub fn split(sql: &str) -> Split {
    let mut out = Split::default();
    let mut state = State::Code;
    let mut start = 0;
    let mut has_code = false;
    let bytes = sql.as_bytes();
    let mut i = 0;
    while i < bytes.len() {
        let b = bytes[i];
        let next = bytes.get(i + 1).copied();
        match state {
            State::Code => match b {
                b';' => {
                    if has_code {
                        out.statements.push(sql[start..i].trim().to_string());
                    }
                    start = i + 1;
                    has_code = false;
                }
                b'\'' => (state, has_code) = (State::Single, true),
                b'"' => (state, has_code) = (State::Double, true),
                b'-' if next == Some(b'-') => {
                    state = State::LineComment;
                    i += 1;
                }
                b'/' if next == Some(b'*') => {
                    state = State::BlockComment(1);
                    i += 1;
                }
                b if b.is_ascii_whitespace() => {}
                _ => has_code = true,
            },
            // A doubled quote inside a quoted text is an escaped quote: leaving and
            // re-entering the state handles it.
            State::Single if b == b'\'' => state = State::Code,
            State::Double if b == b'"' => state = State::Code,
            State::Single | State::Double => {}
            State::LineComment if b == b'\n' => state = State::Code,
            State::LineComment => {}
            State::BlockComment(depth) => {
                if b == b'*' && next == Some(b'/') {
                    state = if depth == 1 {
                        State::Code
                    } else {
                        State::BlockComment(depth - 1)
                    };
                    i += 1;
                } else if b == b'/' && next == Some(b'*') {
                    state = State::BlockComment(depth + 1);
                    i += 1;
                }
            }
        }
        i += 1;
    }
    if has_code {
        out.rest = sql[start..].trim().to_string();
    }
    out
}

/// All statements of a script: the complete ones and a final one without `;`.
pub fn script(sql: &str) -> Vec<String> {
    let Split {
        mut statements,
        rest,
    } = split(sql);
    if !rest.is_empty() {
        statements.push(rest);
    }
    statements
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn splits_on_semicolons_outside_quotes_and_comments() {
        let s = split(
            "SELECT ';' AS a; -- c;\nSELECT \"x;y\" FROM t /* ; /* ; */ */ ; SELECT 'it''s;'",
        );
        assert_eq!(
            s.statements,
            [
                "SELECT ';' AS a",
                "-- c;\nSELECT \"x;y\" FROM t /* ; /* ; */ */"
            ]
        );
        assert_eq!(s.rest, "SELECT 'it''s;'");
    }

    #[test]
    fn blank_and_comment_only_pieces_are_dropped() {
        let s = split(" ; -- only a comment\n; /* x */ ;\n-- trailing");
        assert_eq!(s, Split::default());
        assert_eq!(script("SELECT 1;\nSELECT 2\n"), ["SELECT 1", "SELECT 2"]);
    }

    #[test]
    fn unfinished_input_is_rest() {
        assert_eq!(split("SELECT 'a;").rest, "SELECT 'a;");
        assert_eq!(split("SELECT 1 /* ;").rest, "SELECT 1 /* ;");
        assert!(split("SELECT 1;").rest.is_empty());
    }
}
