//! `phasecheck explain RULE`: a rule's full doc, by name or code.

use crate::args::{Exit, ExplainArgs};
use checker::Rule;

/// A rule's doc as Markdown: the doc comment with rustdoc's one leading space removed.
pub fn doc(r: &Rule) -> String {
    let mut out = String::new();
    for line in r.doc.lines() {
        out.push_str(line.strip_prefix(' ').unwrap_or(line));
        out.push('\n');
    }
    out
}

pub fn text(r: &Rule) -> String {
    format!(
        "{} {} ({}, {})\n\n{}\n\n{}\n",
        r.code,
        r.name,
        r.class.as_str(),
        r.default_severity.as_str(),
        r.summary,
        doc(r).trim_end()
    )
}

pub fn run(args: &ExplainArgs) -> Exit {
    match checker::rules::find(args.rule.trim()) {
        Some(r) => {
            print!("{}", text(r));
            Exit::Clean
        }
        None => {
            let hint = match checker::lints::suppress::did_you_mean(&args.rule) {
                Some(r) => format!("did you mean `{}` ({})?", r.name, r.code),
                None => "`phasecheck rules` lists every rule".to_string(),
            };
            eprintln!("error: unknown rule `{}`: {hint}", args.rule);
            Exit::BadInput
        }
    }
}
