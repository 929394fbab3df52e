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
        let (directives, misplaced) = directives(text);
        for at in misplaced {
            let start = c.text_start + at as u32;
            errors.push(LoadError {
                code: "E0504",
                message: "`phasecheck: allow` in the middle of a comment suppresses nothing".into(),
                span: Some(Span::new(start, start + MARKER.len() as u32)),
                label: "not at the start of a comment".into(),
                help: Some(
                    "start it with its own `#`: `... # phasecheck: allow(rule) reason`".into(),
                ),
            });
        }
        for Directive {
            open,
            at: from,
            end: to,
        } in directives
        {
            let rest = &text[from + MARKER.len()..to];
            let rest_start = c.text_start + (from + MARKER.len()) as u32;
            match parse_directive(rest) {
                Ok((rules, reason)) => {
                    let line = file.line_of(c.span);
                    let target = if code_lines.binary_search(&line).is_ok() {
                        Some(line)
                    } else {
                        code_lines.iter().copied().find(|&l| l > line)
                    };
                    // From its comment marker: the comment's own, or the `#` or `//` inside.
                    let start = match open {
                        Some(o) => c.text_start + o as u32,
                        None => c.span.start,
                    };
                    let span = Span::new(start, c.text_start + to as u32);
                    match target {
                        Some(target_line) => out.push(Suppression {
                            rules,
                            reason,
                            span,
                            target_line,
                        }),
                        None => errors.push(LoadError {
                            code: "E0505",
                            message: "this `phasecheck: allow` comment applies to no statement"
                                .into(),
                            span: Some(span),
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
    }
    out
}

/// One `phasecheck:` directive in the text of a comment (offsets into that text).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Directive {
    /// Where its own comment marker (`#`, `//`) starts; `None`: the comment's own.
    open: Option<usize>,
    /// Where `phasecheck:` starts.
    at: usize,
    /// Where the directive ends.
    end: usize,
}

/// The `phasecheck:` directives in the text of one comment (what follows its `#` or `//`),
/// and the places of markers that start no directive.
///
/// A directive starts the comment (`# phasecheck: allow(...)`) or follows another comment
/// marker inside it: an extracted protocol's statements carry the extractor's own comment
/// (`write x  # k.cu:12  PTX 40`), and a suppression added after it
/// (`write x  # k.cu:12  PTX 40  # phasecheck: allow(data-race) why`) means what it says. A
/// directive ends where the next one's comment marker begins. A `phasecheck: allow` anywhere
/// else in a comment is misplaced: it would look like a suppression and do nothing, so it is
/// an error (a mention of `phasecheck:` followed by anything but `allow` is prose).
fn directives(text: &str) -> (Vec<Directive>, Vec<usize>) {
    // (where the directive's comment marker starts, `phasecheck:`'s position)
    let mut starts: Vec<(Option<usize>, usize)> = Vec::new();
    let mut misplaced = Vec::new();
    for (at, _) in text.match_indices(MARKER) {
        let before = text[..at].trim_end();
        // Inside `backticks` it is quoted prose (`a \`# phasecheck: allow(...)\` comment`).
        if before.matches('`').count() % 2 == 1 {
            continue;
        }
        // A comment marker inside the comment starts a new comment only after a blank.
        let after_blank = |b: &str| b.is_empty() || b.ends_with(char::is_whitespace);
        let opener = if before.is_empty() {
            Some(None)
        } else if let Some(b) = before.strip_suffix('#').filter(|b| after_blank(b)) {
            Some(Some(b.len()))
        } else {
            before
                .strip_suffix("//")
                .filter(|b| after_blank(b))
                .map(|b| Some(b.len()))
        };
        match opener {
            Some(open) => starts.push((open, at)),
            None if text[at + MARKER.len()..].trim_start().starts_with("allow") => {
                misplaced.push(at)
            }
            None => {}
        }
    }
    let mut out = Vec::with_capacity(starts.len());
    for (i, &(open, at)) in starts.iter().enumerate() {
        let end = starts
            .get(i + 1)
            .map_or(text.len(), |&(next, _)| next.unwrap_or(text.len()));
        out.push(Directive {
            open,
            at,
            end: end.max(at + MARKER.len()),
        });
    }
    (out, misplaced)
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
    fn directives_after_another_comment() {
        // Plain.
        assert_eq!(
            directives(" phasecheck: allow(a) why"),
            (
                vec![Directive {
                    open: None,
                    at: 1,
                    end: 25
                }],
                vec![]
            )
        );
        // After the extractor's comment: `# k.cu:12  PTX 40  # phasecheck: allow(a) why`.
        let t = " k.cu:12  PTX 40  # phasecheck: allow(a) why";
        let (d, bad) = directives(t);
        assert_eq!(bad, Vec::<usize>::new());
        assert_eq!(&t[d[0].at..d[0].end], "phasecheck: allow(a) why");
        assert_eq!(&t[d[0].open.unwrap()..d[0].at], "# ");
        // `//` too, and two directives in one comment: the first ends at the second's `#`.
        let t = " phasecheck: allow(a) one // phasecheck: allow(b) two";
        let (d, _) = directives(t);
        let parts: Vec<&str> = d.iter().map(|d| &t[d.at..d.end]).collect();
        assert_eq!(
            parts,
            ["phasecheck: allow(a) one ", "phasecheck: allow(b) two"]
        );
        // In the middle of prose: misplaced, never silently nothing.
        let t = " from k.cu:12 phasecheck: allow(a)";
        assert_eq!(directives(t), (vec![], vec![14]));
        // A mention that is not a directive is prose, and so is a quoted one.
        assert_eq!(directives(" run phasecheck: it is fast"), (vec![], vec![]));
        let t = " a `# phasecheck: allow(...)` comment that silences nothing";
        assert_eq!(directives(t), (vec![], vec![]));
        // A `#` glued to a word does not start a comment: misplaced.
        assert_eq!(directives(" see x#phasecheck: allow(a)"), (vec![], vec![7]));
    }

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
