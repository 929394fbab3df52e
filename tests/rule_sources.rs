//! Every rule names the sentence it rests on. The `# Source` section of each rule's text
//! (`phasecheck explain`, which is also its SARIF help and its section of docs/rules.md) quotes
//! the PTX ISA, or says plainly that the rule is not an ISA rule; and docs/semantics.md quotes
//! the same sentences and lists every rule in its §0.3.
//!
//! The fixed form of a `# Source` section:
//!
//! - a quotation is a paragraph of lines starting with `>`, whose text (the lines without the
//!   `>`, joined) opens and closes with `"`; list items (`> - `) may continue it;
//! - the paragraph before a quotation (skipping other quotations) names the document it comes
//!   from and ends with `:`; a quotation is a PTX ISA quotation when that paragraph names
//!   "PTX ISA";
//! - a rule that rests on no ISA sentence has a paragraph starting with `Not an ISA rule:`.

use std::path::PathBuf;
use std::process::Command;

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// One quotation of a `# Source` section.
#[derive(Debug)]
struct Quotation {
    /// The paragraph that introduces it.
    attribution: String,
    /// The quoted words, without the quotation marks.
    text: String,
}

/// The `# Source` section of a rule text: from its heading to the next heading.
fn source_section(doc: &str) -> Option<String> {
    let start = doc.find("\n# Source\n")? + "\n# Source\n".len();
    let rest = &doc[start..];
    let end = rest.find("\n# ").unwrap_or(rest.len());
    Some(rest[..end].to_string())
}

/// Paragraphs: runs of non-blank lines.
fn paragraphs(text: &str) -> Vec<Vec<&str>> {
    let mut out = vec![Vec::new()];
    for line in text.lines() {
        if line.trim().is_empty() {
            out.push(Vec::new());
        } else {
            out.last_mut().unwrap().push(line);
        }
    }
    out.retain(|p| !p.is_empty());
    out
}

fn squash(text: &str) -> String {
    text.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// The quotations of a `# Source` section, and whether it says "Not an ISA rule:".
fn quotations(section: &str) -> Result<(Vec<Quotation>, bool), String> {
    let mut quotes = Vec::new();
    let mut not_isa = false;
    let mut attribution: Option<String> = None;
    for para in paragraphs(section) {
        if para.iter().all(|l| l.starts_with('>')) {
            let text = squash(
                &para
                    .iter()
                    .map(|l| l.trim_start_matches('>'))
                    .collect::<Vec<_>>()
                    .join(" "),
            );
            let Some(inner) = text
                .strip_prefix('"')
                .and_then(|t| t.strip_suffix('"'))
                .filter(|t| !t.trim().is_empty())
            else {
                return Err(format!("a quotation not in quotation marks: {text}"));
            };
            let Some(attribution) = attribution.clone() else {
                return Err(format!("a quotation without a source before it: {text}"));
            };
            quotes.push(Quotation {
                attribution,
                text: inner.to_string(),
            });
        } else if para.iter().any(|l| l.starts_with('>')) {
            return Err(format!("a paragraph that is partly a quotation: {para:?}"));
        } else {
            let text = squash(&para.join(" "));
            not_isa |= text.starts_with("Not an ISA rule:");
            attribution = text.ends_with(':').then_some(text);
        }
    }
    Ok((quotes, not_isa))
}

/// What is wrong with one rule text's sources, given the text of docs/semantics.md.
fn check_rule_text(doc: &str, semantics: &str) -> Result<(), String> {
    let section = source_section(doc).ok_or("no `# Source` section")?;
    let (quotes, not_isa) = quotations(&section)?;
    if !not_isa && !quotes.iter().any(|q| q.attribution.contains("PTX ISA")) {
        return Err("quotes no PTX ISA sentence and does not say \"Not an ISA rule:\"".into());
    }
    let semantics = squash(
        &semantics
            .lines()
            .map(|l| l.trim_start_matches('>'))
            .collect::<Vec<_>>()
            .join(" "),
    );
    for q in &quotes {
        if !semantics.contains(&squash(&q.text)) {
            return Err(format!("docs/semantics.md does not quote \"{}\"", q.text));
        }
    }
    Ok(())
}

fn explain(rule: &str) -> String {
    let o = Command::new(env!("CARGO_BIN_EXE_phasecheck"))
        .args(["explain", rule])
        .output()
        .unwrap();
    assert!(o.status.success(), "explain {rule}");
    String::from_utf8(o.stdout).unwrap()
}

fn semantics() -> String {
    std::fs::read_to_string(root().join("docs/semantics.md")).unwrap()
}

#[test]
fn every_rule_text_quotes_its_source_and_semantics_md_quotes_it_too() {
    let semantics = semantics();
    let mut problems = Vec::new();
    for rule in checker::rules::ALL {
        if let Err(e) = check_rule_text(&explain(rule.name), &semantics) {
            problems.push(format!("{}: {e}", rule.name));
        }
    }
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}

#[test]
fn semantics_md_lists_every_rule_with_its_basis() {
    let semantics = semantics();
    let start = semantics.find("### 0.3 ").expect("semantics.md has a §0.3");
    let end = semantics[start..].find("\n---").unwrap() + start;
    let table = &semantics[start..end];
    for rule in checker::rules::ALL {
        let row = table
            .lines()
            .find(|l| l.starts_with(&format!("| `{}` |", rule.name)));
        let Some(row) = row else {
            panic!("semantics.md §0.3 has no row for `{}`", rule.name)
        };
        assert!(row.contains(rule.code), "{row}");
        assert!(
            row.contains('§') || row.contains("not an ISA rule"),
            "the row of `{}` points to no section: {row}",
            rule.name
        );
    }
}

/// The check itself rejects what it should: no quotation, a quotation without quotation
/// marks or without its source, one that semantics.md does not have.
#[test]
fn the_source_check_rejects_bad_sources() {
    let semantics = "text\n\n> \"The sentence, as quoted.\"\n";
    let good =
        "# What\n\nx\n\n# Source\n\nPTX ISA 9.1, §1 *T*:\n\n> \"The sentence,\n> as quoted.\"\n";
    assert_eq!(check_rule_text(good, semantics), Ok(()));
    let not_isa = "# Source\n\nNot an ISA rule: a convention.\n";
    assert_eq!(check_rule_text(&format!("x\n{not_isa}"), semantics), Ok(()));

    let cases = [
        ("x\n# Source\n\nsemantics.md §1.\n", "quotes no PTX ISA"),
        (
            "x\n# Why\n\nPTX ISA:\n\n> \"The sentence, as quoted.\"\n",
            "no `# Source`",
        ),
        (
            "x\n# Source\n\nPTX ISA 9.1:\n\n> The sentence, as quoted.\n",
            "not in quotation marks",
        ),
        (
            "x\n# Source\n\nPTX ISA 9.1.\n\n> \"The sentence, as quoted.\"\n",
            "without a source",
        ),
        (
            "x\n# Source\n\nCUDA Programming Guide:\n\n> \"The sentence, as quoted.\"\n",
            "quotes no PTX ISA",
        ),
        (
            "x\n# Source\n\nPTX ISA 9.1:\n\n> \"The sentence, paraphrased.\"\n",
            "does not quote",
        ),
    ];
    for (doc, want) in cases {
        let e = check_rule_text(doc, semantics).unwrap_err();
        assert!(e.contains(want), "{doc:?}: {e}");
    }
}
