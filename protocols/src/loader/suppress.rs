//! `# phasecheck: allow(rule-a, rule-b) reason` comments -> [`Suppression`]s.
//!
//! A trailing comment applies to the statement on its own line; a comment on a line of its
//! own applies to the next line that holds code.

use super::is_rule_name;
use crate::diagnostics::LoadError;
use crate::ir::Suppression;
use crate::lexer::{Comment, Tok, Token};
use crate::span::{SourceFile, Span};

const MARKER: &str = "phasecheck:";

pub(super) fn suppressions(
    file: &SourceFile,
    comments: &[Comment],
    tokens: &[Token],
    errors: &mut Vec<LoadError>,
) -> Vec<Suppression> {
    // Lines that hold a token (code), ascending.
    let mut code_lines: Vec<u32> = tokens
        .iter()
        .filter(|t| !matches!(t.kind, Tok::Newline | Tok::Eof))
        .map(|t| file.line_of(t.span))
        .collect();
    code_lines.dedup();
    let mut out = Vec::new();
    for c in comments {
        let text = file.slice(Span::new(c.text_start, c.span.end));
        let trimmed = text.trim_start();
        let Some(rest) = trimmed.strip_prefix(MARKER) else {
            continue;
        };
        let rest_start = c.span.end - rest.len() as u32;
        match parse_directive(rest) {
            Ok((rules, reason)) => {
                let line = file.line_of(c.span);
                let target = if code_lines.binary_search(&line).is_ok() {
                    Some(line)
                } else {
                    code_lines.iter().copied().find(|&l| l > line)
                };
                match target {
                    Some(target_line) => out.push(Suppression {
                        rules,
                        reason,
                        span: c.span,
                        target_line,
                    }),
                    None => errors.push(LoadError {
                        code: "E0505",
                        message: "this `phasecheck: allow` comment applies to no statement".into(),
                        span: Some(c.span),
                        label: "nothing follows".into(),
                        help: Some(
                            "put it on the line of the statement it silences, or on the line \
                             above it"
                                .into(),
                        ),
                    }),
                }
            }
            Err((offset, len, message, help)) => {
                let start = rest_start + offset as u32;
                errors.push(LoadError {
                    code: "E0504",
                    message,
                    span: Some(Span::new(start, start + len as u32)),
                    label: "malformed".into(),
                    help: Some(help.into()),
                });
            }
        }
    }
    out
}

type DirectiveError = (usize, usize, String, &'static str);

const FORM: &str = "the form is `# phasecheck: allow(rule-a, rule-b) reason`";

/// Parse ` allow(a, b) reason` (the text after `phasecheck:`).
fn parse_directive(rest: &str) -> Result<(Vec<String>, String), DirectiveError> {
    let lead = rest.len() - rest.trim_start().len();
    let body = &rest[lead..];
    let Some(after) = body.strip_prefix("allow") else {
        let word_len = body
            .find(|c: char| !c.is_ascii_alphanumeric() && c != '_')
            .unwrap_or(body.len());
        return Err((
            lead,
            word_len,
            "unknown `phasecheck:` directive; expected `allow(...)`".into(),
            FORM,
        ));
    };
    let after_trim = after.trim_start();
    let open = lead + 5 + (after.len() - after_trim.len());
    let Some(list) = after_trim.strip_prefix('(') else {
        return Err((open, 0, "expected `(` after `allow`".into(), FORM));
    };
    let Some(close) = list.find(')') else {
        return Err((open, 1, "`allow(` is never closed".into(), FORM));
    };
    let inner = &list[..close];
    let mut rules = Vec::new();
    let mut offset = open + 1;
    for part in inner.split(',') {
        let name = part.trim();
        let at = offset + (part.len() - part.trim_start().len());
        if !is_rule_name(name) {
            return Err((
                at,
                name.len(),
                if name.is_empty() {
                    "empty rule name in `allow(...)`".into()
                } else {
                    format!("`{name}` is not a rule name")
                },
                "rule names are kebab-case, e.g. `allow(stale-token)`",
            ));
        }
        rules.push(name.to_string());
        offset += part.len() + 1;
    }
    let reason = list[close + 1..].trim().to_string();
    Ok((rules, reason))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn directive_forms() {
        let (r, why) = parse_directive(" allow(stale-token, data-race) known bug").unwrap();
        assert_eq!(r, vec!["stale-token", "data-race"]);
        assert_eq!(why, "known bug");
        assert!(parse_directive(" deny(x)").is_err());
        assert!(parse_directive(" allow(x").is_err());
        assert!(parse_directive(" allow()").is_err());
        assert!(parse_directive(" allow(Bad_Name)").is_err());
        assert_eq!(parse_directive("allow(a)").unwrap().1, "");
    }
}
