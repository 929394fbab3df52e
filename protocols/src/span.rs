//! Source files and byte spans.
//!
//! Every IR node carries a [`Span`] (byte offsets into its [`SourceFile`]); reports turn spans
//! into 1-based line/column pairs with [`SourceFile::line_col`].

use crate::diagnostics::{LoadError, LoadErrors};
use serde::Serialize;
use std::sync::Arc;

/// A half-open byte range `start..end` in one source file.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize)]
pub struct Span {
    pub start: u32,
    pub end: u32,
}

impl Span {
    pub const fn new(start: u32, end: u32) -> Self {
        Span { start, end }
    }

    /// The smallest span covering both.
    pub fn to(self, other: Span) -> Span {
        Span {
            start: self.start.min(other.start),
            end: self.end.max(other.end),
        }
    }

    pub fn len(self) -> u32 {
        self.end.saturating_sub(self.start)
    }

    pub fn is_empty(self) -> bool {
        self.len() == 0
    }
}

impl From<Span> for miette::SourceSpan {
    fn from(span: Span) -> Self {
        (span.start as usize, span.len() as usize).into()
    }
}

/// A 1-based line/column position (columns count characters, not bytes).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize)]
pub struct LineCol {
    pub line: u32,
    pub column: u32,
}

/// The text of one `.phase` file and the name it is reported under.
#[derive(Clone, Debug)]
pub struct SourceFile {
    /// The path as the user gave it (reports print it unchanged).
    pub name: String,
    /// The text, with a leading byte-order mark removed.
    pub text: Arc<str>,
    line_starts: Arc<[u32]>,
}

impl SourceFile {
    pub fn new(name: impl Into<String>, text: impl AsRef<str>) -> Self {
        let text = text.as_ref();
        let text = text.strip_prefix('\u{feff}').unwrap_or(text);
        let mut line_starts = vec![0u32];
        for (i, b) in text.bytes().enumerate() {
            if b == b'\n' {
                line_starts.push(i as u32 + 1);
            }
        }
        SourceFile {
            name: name.into(),
            text: Arc::from(text),
            line_starts: line_starts.into(),
        }
    }

    /// A file read as bytes. Bytes that are not UTF-8 are a load error (E0004) at the first
    /// bad byte, reported against the text with every bad sequence shown as U+FFFD (so that
    /// the place can be rendered like any other load error's).
    pub fn from_bytes(name: impl Into<String>, bytes: Vec<u8>) -> Result<SourceFile, LoadErrors> {
        let e = match String::from_utf8(bytes) {
            Ok(text) => return Ok(SourceFile::new(name, text)),
            Err(e) => e,
        };
        let at = e.utf8_error().valid_up_to();
        let error_len = e.utf8_error().error_len();
        let truncated = error_len.is_none();
        let bytes = e.into_bytes();
        let bad_len = error_len.unwrap_or(bytes.len() - at);
        let shown: Vec<String> = bytes[at..at + bad_len]
            .iter()
            .map(|b| format!("0x{b:02X}"))
            .collect();
        let utf16 = bytes.starts_with(&[0xff, 0xfe]) || bytes.starts_with(&[0xfe, 0xff]);
        let file = SourceFile::new(name, String::from_utf8_lossy(&bytes));
        // The text lost a leading byte-order mark (3 valid bytes, all before `at`).
        let bom = if bytes.starts_with("\u{feff}".as_bytes()) {
            3
        } else {
            0
        };
        let start = at.saturating_sub(bom);
        let span = Span::new(start as u32, (start + '\u{fffd}'.len_utf8()) as u32);
        let lc = file.line_col(span.start);
        let what = if truncated {
            format!(
                "an incomplete UTF-8 sequence ({}) ends the file",
                shown.join(" ")
            )
        } else if shown.len() == 1 {
            format!("byte {} is not UTF-8", shown[0])
        } else {
            format!("bytes {} are not UTF-8", shown.join(" "))
        };
        let help = if utf16 {
            "this looks like UTF-16 text (it starts with a UTF-16 byte-order mark); save the file \
             as UTF-8"
        } else {
            "`.phase` files are UTF-8 text; save the file as UTF-8 (e.g. `iconv -f latin1 -t \
             utf-8`)"
        };
        Err(LoadErrors {
            errors: vec![LoadError {
                code: "E0004",
                message: format!(
                    "the file is not UTF-8 text: {what} (line {}, column {})",
                    lc.line, lc.column
                ),
                span: Some(span),
                label: "not UTF-8".into(),
                help: Some(help.into()),
            }],
            file,
        })
    }

    /// Line and column (both 1-based) of a byte offset; offsets past the end clamp to the end.
    pub fn line_col(&self, offset: u32) -> LineCol {
        let offset = offset.min(self.text.len() as u32);
        let line = match self.line_starts.binary_search(&offset) {
            Ok(i) => i,
            Err(i) => i - 1,
        };
        let start = self.line_starts[line] as usize;
        let mut end = offset as usize;
        while !self.text.is_char_boundary(end) {
            end -= 1;
        }
        let column = self.text[start..end].chars().count() as u32 + 1;
        LineCol {
            line: line as u32 + 1,
            column,
        }
    }

    /// The text a span covers (empty when the span is out of range).
    pub fn slice(&self, span: Span) -> &str {
        self.text
            .get(span.start as usize..span.end as usize)
            .unwrap_or("")
    }

    /// The bytes of 1-based line `line`, without its line break (`None` past the last line).
    pub fn line_span(&self, line: u32) -> Option<Span> {
        let i = usize::try_from(line).ok()?.checked_sub(1)?;
        let start = *self.line_starts.get(i)?;
        let end = self
            .line_starts
            .get(i + 1)
            .map_or(self.text.len() as u32, |&next| next - 1);
        Some(Span::new(start, end))
    }

    /// The 1-based line of a span's start (a binary search; no column counting).
    pub fn line_of(&self, span: Span) -> u32 {
        let offset = span.start.min(self.text.len() as u32);
        match self.line_starts.binary_search(&offset) {
            Ok(i) => i as u32 + 1,
            Err(i) => i as u32,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn line_col_is_one_based_and_counts_chars() {
        let f = SourceFile::new("t.phase", "\u{feff}ab\ncé d\n");
        assert_eq!(f.line_col(0), LineCol { line: 1, column: 1 });
        assert_eq!(f.line_col(3), LineCol { line: 2, column: 1 });
        // 'é' is two bytes; 'd' is at byte 7 and column 4.
        assert_eq!(f.line_col(7), LineCol { line: 2, column: 4 });
        assert_eq!(f.line_col(1000).line, 3);
        for off in 0..12 {
            assert_eq!(f.line_of(Span::new(off, off)), f.line_col(off).line);
        }
    }

    #[test]
    fn line_span_covers_the_line_without_its_break() {
        let f = SourceFile::new("t.phase", "ab\ncd e\n\nlast");
        assert_eq!(f.slice(f.line_span(1).unwrap()), "ab");
        assert_eq!(f.slice(f.line_span(2).unwrap()), "cd e");
        assert_eq!(f.slice(f.line_span(3).unwrap()), "");
        assert_eq!(f.slice(f.line_span(4).unwrap()), "last");
        assert_eq!(f.line_span(0), None);
        assert_eq!(f.line_span(5), None);
        for line in 1..=4 {
            assert_eq!(f.line_of(f.line_span(line).unwrap()), line);
        }
    }

    fn not_utf8(bytes: &[u8]) -> LoadError {
        let e = SourceFile::from_bytes("t.phase", bytes.to_vec()).expect_err("not UTF-8");
        assert_eq!(e.errors.len(), 1);
        let err = e.errors[0].clone();
        assert_eq!(err.code, "E0004");
        // The span covers the U+FFFD that stands for the bad bytes in the shown text.
        assert_eq!(e.file.slice(err.span.expect("a place")), "\u{fffd}");
        err
    }

    #[test]
    fn bytes_that_are_not_utf8_are_located() {
        let e = not_utf8(b"protocol p\nblock 32\n# caf\xe9 au lait\n");
        assert!(
            e.message
                .contains("byte 0xE9 is not UTF-8 (line 3, column 6)"),
            "{}",
            e.message
        );
        // Columns count characters; a byte-order mark is not one.
        let e = not_utf8(
            "\u{feff}# \u{e9}\n#"
                .as_bytes()
                .iter()
                .chain(b"\xff")
                .copied()
                .collect::<Vec<_>>()
                .as_slice(),
        );
        assert!(e.message.contains("(line 2, column 2)"), "{}", e.message);
        let e = not_utf8(b"# \xe2\x82");
        assert!(
            e.message.contains("incomplete UTF-8 sequence (0xE2 0x82)"),
            "{}",
            e.message
        );
        let e = not_utf8(&[0xff, 0xfe, b'p', 0]);
        assert!(e.help.as_deref().is_some_and(|h| h.contains("UTF-16")));
        assert!(SourceFile::from_bytes("t", b"ok\n".to_vec()).is_ok());
    }
}
