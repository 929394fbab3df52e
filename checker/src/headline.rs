//! Every headline names a statement: a finding whose message quotes no statement (a
//! back-quoted fragment that starts with a statement word, like `` `init bar, 2` `` or
//! `` `arrive_drop` ``) gets the statement it points at put in front, as written in the file:
//! `` `init bar, 2`: t0 initializes `bar` again while it is valid ``. The statement to change
//! is then on the first line of every report, in every format.

use crate::report::Finding;
use protocols::SourceFile;

/// The words that start a statement or declaration (the language's words, less the builtins
/// and functions, which are values).
fn is_statement_word(w: &str) -> bool {
    protocols::KEYWORDS.contains(&w) && !protocols::BUILTIN_NAMES.contains(&w)
}

/// Does `headline` quote a statement?
pub fn names_statement(headline: &str) -> bool {
    headline.split('`').skip(1).step_by(2).any(|quoted| {
        quoted
            .split_whitespace()
            .next()
            .is_some_and(is_statement_word)
    })
}

fn without_comment(line: &str) -> &str {
    line.split('#')
        .next()
        .unwrap_or("")
        .split("//")
        .next()
        .unwrap_or("")
        .trim()
}

fn starts_with_statement_word(text: &str) -> bool {
    text.split_whitespace()
        .next()
        .is_some_and(is_statement_word)
}

/// The statement at `f.span` as written (its first line, without its comment); where the span
/// is part of a statement (a count, a parity, an index), the line it is on.
pub fn statement_text(file: &SourceFile, f: &Finding) -> Option<String> {
    let start = f.span.start as usize;
    let text = file.text.get(start..f.span.end as usize)?;
    let own = without_comment(text.lines().next().unwrap_or(""));
    if starts_with_statement_word(own) {
        return Some(own.to_string());
    }
    let line_start = file.text.get(..start)?.rfind('\n').map_or(0, |i| i + 1);
    let line = file.text.get(line_start..)?.lines().next()?;
    let code = without_comment(line);
    starts_with_statement_word(code).then(|| code.to_string())
}

/// Put the statement in front of a headline that names none.
pub fn name_statement(file: &SourceFile, f: &mut Finding) {
    let headline = f.message.lines().next().unwrap_or("");
    if names_statement(headline) {
        return;
    }
    if let Some(stmt) = statement_text(file, f) {
        f.message = format!("`{stmt}`: {}", f.message);
    }
}

#[cfg(test)]
mod tests {
    use super::names_statement;

    #[test]
    fn quoted_statements_count_and_quoted_names_do_not() {
        assert!(names_statement("`init bar, 2` makes ..."));
        assert!(names_statement("t2 exited without `arrive_drop` on `bar`"));
        assert!(names_statement("t1 `read data` and t0 `write data` race"));
        assert!(!names_statement(
            "t0 initializes `bar` again while it is valid"
        ));
        assert!(!names_statement("index 2 is out of range for `full[2]`"));
        // A builtin is a value, not a statement.
        assert!(!names_statement("`tid` is 3"));
    }
}
