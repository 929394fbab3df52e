//! Human-readable report of one checked program.

use checker::Report;
use protocols::SourceFile;
use protocols::ir::Program;

pub fn render(file: &SourceFile, program: &Program, report: &Report) -> String {
    let mut out = format!(
        "{}: protocol {}: {:?}\n",
        file.name, program.name, report.verdict
    );
    for f in &report.findings {
        let pos = file.line_col(f.span.start);
        out.push_str(&format!(
            "{}:{}:{}: {}[{}] {}\n",
            file.name,
            pos.line,
            pos.column,
            f.severity.as_str(),
            f.rule.name,
            f.message
        ));
    }
    out
}
