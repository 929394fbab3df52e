//! Load errors: values with a stable code, a labelled span and a help line.

use crate::span::{SourceFile, Span};

/// One problem found while loading a file.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LoadError {
    /// Stable code, e.g. `E0101`; documented in docs/errors.md.
    pub code: &'static str,
    pub message: String,
    /// Where; `None` for problems with no place in the file (a bad `--param` name, say).
    pub span: Option<Span>,
    /// The text of the label on the span.
    pub label: String,
    pub help: Option<String>,
}

/// All load errors of one file (loading recovers at statement level and reports them all).
#[derive(Clone, Debug)]
pub struct LoadErrors {
    pub file: SourceFile,
    pub errors: Vec<LoadError>,
}
