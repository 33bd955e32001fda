//! Escaping control characters in what is written to a terminal.
//!
//! Topic names, types, metadata and payload strings come from the files read,
//! and a terminal obeys the control characters in them: ESC sequences can
//! set the window title, clear the screen, move the cursor over earlier lines
//! or write the clipboard (OSC 52). On a terminal, the human formats (the
//! table, `info`, `topics` and the other listings, the shell, error messages
//! and warnings) therefore show every C0 control character but newline and
//! tab, DEL and every C1 control character as visible escapes (`\x1b`,
//! `\x7f`, `\u{9b}`); bytes that are not UTF-8 show as `\xNN`. CSV, JSON,
//! NDJSON and output to a file or a pipe are written unchanged.

use std::borrow::Cow;
use std::fmt::Write as _;
use std::io::{self, IsTerminal, Write};

/// Whether `c` is shown escaped: C0 controls but `\n` and `\t`, DEL and the C1 controls.
fn is_escaped(c: char) -> bool {
    (c.is_control() && c != '\n' && c != '\t') || c == '\u{7f}'
}

/// `s` with control characters made visible (see the module documentation).
pub fn escape(s: &str) -> Cow<'_, str> {
    if !s.chars().any(is_escaped) {
        return Cow::Borrowed(s);
    }
    let mut out = String::with_capacity(s.len() + 8);
    for c in s.chars() {
        push_char(&mut out, c);
    }
    Cow::Owned(out)
}

fn push_char(out: &mut String, c: char) {
    if !is_escaped(c) {
        out.push(c);
    } else if (c as u32) < 0x80 {
        let _ = write!(out, "\\x{:02x}", c as u32);
    } else {
        let _ = write!(out, "\\u{{{:x}}}", c as u32);
    }
}

/// `s` escaped when stderr is a terminal (error messages and warnings quote
/// names from the files read), else unchanged.
pub fn for_stderr(s: &str) -> Cow<'_, str> {
    if io::stderr().is_terminal() {
        escape(s)
    } else {
        Cow::Borrowed(s)
    }
}

/// A writer that escapes control characters in the text passing through it
/// (see [`escape`]), for a terminal. A UTF-8 sequence split between writes is
/// held back until it is complete; invalid bytes are written as `\xNN`.
#[derive(Debug)]
pub struct EscapeWriter<W: Write> {
    inner: W,
    /// The start of a UTF-8 sequence the last write ended in.
    pending: Vec<u8>,
}

impl<W: Write> EscapeWriter<W> {
    /// Escapes what is written to `inner`.
    pub fn new(inner: W) -> Self {
        Self {
            inner,
            pending: Vec::new(),
        }
    }

    /// Escapes `bytes` (complete UTF-8 sequences, except possibly at the end
    /// when `last` is false) and writes them.
    fn emit(&mut self, bytes: &[u8], last: bool) -> io::Result<usize> {
        let mut text = String::with_capacity(bytes.len());
        let mut rest = bytes;
        loop {
            match std::str::from_utf8(rest) {
                Ok(s) => {
                    s.chars().for_each(|c| push_char(&mut text, c));
                    rest = &[];
                    break;
                }
                Err(e) => {
                    let (good, bad) = rest.split_at(e.valid_up_to());
                    // Valid up to here by construction.
                    std::str::from_utf8(good)
                        .unwrap_or_default()
                        .chars()
                        .for_each(|c| push_char(&mut text, c));
                    match e.error_len() {
                        Some(n) => {
                            for b in &bad[..n] {
                                let _ = write!(text, "\\x{b:02x}");
                            }
                            rest = &bad[n..];
                        }
                        // An incomplete sequence at the end.
                        None if !last => {
                            rest = bad;
                            break;
                        }
                        None => {
                            for b in bad {
                                let _ = write!(text, "\\x{b:02x}");
                            }
                            rest = &[];
                            break;
                        }
                    }
                }
            }
        }
        self.inner.write_all(text.as_bytes())?;
        self.pending = rest.to_vec();
        Ok(bytes.len())
    }
}

impl<W: Write> Write for EscapeWriter<W> {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        if self.pending.is_empty() {
            return self.emit(buf, false);
        }
        let mut joined = std::mem::take(&mut self.pending);
        joined.extend_from_slice(buf);
        self.emit(&joined, false)?;
        Ok(buf.len())
    }

    fn flush(&mut self) -> io::Result<()> {
        self.inner.flush()
    }
}

impl<W: Write> Drop for EscapeWriter<W> {
    fn drop(&mut self) {
        if !self.pending.is_empty() {
            let pending = std::mem::take(&mut self.pending);
            let _ = self.emit(&pending, true);
            let _ = self.inner.flush();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn control_characters_are_shown_and_text_is_kept() {
        assert_eq!(escape("/tf\tx\ny é ✓"), "/tf\tx\ny é ✓");
        assert!(matches!(escape("/plain"), Cow::Borrowed(_)));
        assert_eq!(
            escape("\u{1b}]52;c;aGk=\u{7}\u{1b}[2J\r\u{7f}\u{9b}31m\u{85}"),
            "\\x1b]52;c;aGk=\\x07\\x1b[2J\\x0d\\x7f\\u{9b}31m\\u{85}"
        );
    }

    #[test]
    fn the_writer_escapes_across_split_writes_and_invalid_bytes() {
        let mut out = Vec::new();
        {
            let mut w = EscapeWriter::new(&mut out);
            let text = "a\u{1b}[0m é\u{9b}\n".as_bytes();
            // Splits inside the two-byte é and the two-byte C1 CSI.
            for chunk in [&text[..6], &text[6..9], &text[9..]] {
                w.write_all(chunk).unwrap();
            }
            w.write_all(b"\xff|\xc3").unwrap();
        }
        assert_eq!(
            String::from_utf8(out).unwrap(),
            "a\\x1b[0m é\\u{9b}\n\\xff|\\xc3"
        );
    }
}
