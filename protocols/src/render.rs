//! Load errors as miette diagnostics and as rendered text.
//!
//! [`LoadDiagnostic`] turns one [`LoadError`] into a `miette::Diagnostic` (code, labelled span,
//! help) over the file's text; [`render`] prints all errors of a file with miette's graphical
//! handler. Colour is the caller's decision (a terminal and no `NO_COLOR`), so tests and
//! pipes get plain text.

use crate::diagnostics::{LoadError, LoadErrors};
use crate::span::SourceFile;
use miette::{
    Diagnostic, GraphicalReportHandler, GraphicalTheme, LabeledSpan, NamedSource, SourceCode,
};
use std::fmt;
use std::sync::Arc;

/// One load error with the source it points into.
#[derive(Debug)]
pub struct LoadDiagnostic {
    pub error: LoadError,
    source: NamedSource<Arc<str>>,
}

impl LoadDiagnostic {
    pub fn new(file: &SourceFile, error: LoadError) -> Self {
        LoadDiagnostic {
            error,
            source: NamedSource::new(file.name.clone(), file.text.clone()),
        }
    }
}

impl fmt::Display for LoadDiagnostic {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.error.message)
    }
}

impl std::error::Error for LoadDiagnostic {}

impl Diagnostic for LoadDiagnostic {
    fn code<'a>(&'a self) -> Option<Box<dyn fmt::Display + 'a>> {
        Some(Box::new(self.error.code))
    }

    fn help<'a>(&'a self) -> Option<Box<dyn fmt::Display + 'a>> {
        self.error
            .help
            .as_ref()
            .map(|h| Box::new(h) as Box<dyn fmt::Display>)
    }

    fn source_code(&self) -> Option<&dyn SourceCode> {
        self.error.span.map(|_| &self.source as &dyn SourceCode)
    }

    fn labels(&self) -> Option<Box<dyn Iterator<Item = LabeledSpan> + '_>> {
        let span = self.error.span?;
        let label = (!self.error.label.is_empty()).then(|| self.error.label.clone());
        Some(Box::new(std::iter::once(
            LabeledSpan::new_primary_with_span(label, miette::SourceSpan::from(span)),
        )))
    }
}

/// All errors of one file, rendered by miette's graphical handler, then a summary line.
/// `color` selects ANSI colours; `width` is the wrap width.
pub fn render(errors: &LoadErrors, color: bool, width: usize) -> String {
    let theme = if color {
        GraphicalTheme::unicode()
    } else {
        GraphicalTheme::unicode_nocolor()
    };
    let handler = GraphicalReportHandler::new_themed(theme)
        .with_width(width)
        .with_links(false);
    let mut out = String::new();
    for e in &errors.errors {
        if !out.is_empty() {
            out.push('\n');
        }
        let d = LoadDiagnostic::new(&errors.file, e.clone());
        if handler.render_report(&mut out, &d).is_err() {
            // Rendering into a String cannot fail; keep a plain line just in case.
            out.push_str(&format!("error[{}]: {}\n", e.code, e.message));
        }
    }
    let n = errors.errors.len();
    out.push_str(&format!(
        "{}: {n} load error{} (see docs/errors.md)\n",
        errors.file.name,
        if n == 1 { "" } else { "s" }
    ));
    out
}
