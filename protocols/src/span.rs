//! Source files and byte spans.
//!
//! Every IR node carries a [`Span`] (byte offsets into its [`SourceFile`]); reports turn spans
//! into 1-based line/column pairs with [`SourceFile::line_col`].

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
}
