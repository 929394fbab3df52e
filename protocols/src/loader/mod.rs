//! AST -> IR: name resolution, parameter evaluation, object sizing, checks with spans.
//!
//! The loader walks the file once in order (declarations, then statements), resolving every
//! name to an index and recording every problem as a [`LoadError`]; a problem in one statement
//! does not stop the others from being checked. A program is returned only when there is no
//! error at all.

mod decls;
mod exprs;
mod stmts;
mod suppress;

use crate::ast::{self, Item};
use crate::diagnostics::{LoadError, LoadErrors};
use crate::ir::*;
use crate::lexer::lex;
use crate::parser::parse;
use crate::span::{SourceFile, Span};
use crate::suggest::did_you_mean;
use std::collections::HashMap;

/// Load one file into the IR, with `overrides` replacing declared `param` values.
pub fn load(file: &SourceFile, overrides: &[(String, i64)]) -> Result<Program, LoadErrors> {
    let lexed = lex(&file.text);
    let (ast, parse_errors) = parse(&file.text, lexed.tokens.clone());
    let mut loader = Loader::new(file, overrides);
    loader.errors.extend(lexed.errors);
    loader.errors.extend(parse_errors);
    let program = loader.file(&ast);
    let suppressions =
        suppress::suppressions(file, &lexed.comments, &lexed.tokens, &mut loader.errors);
    let mut errors = loader.errors;
    if errors.is_empty() {
        let mut program = program;
        program.suppressions = suppressions;
        return Ok(program);
    }
    // Report in source order (errors without a place first), stable among equals.
    errors.sort_by_key(|e| e.span.map(|s| (1, s.start)).unwrap_or((0, 0)));
    errors.dedup();
    Err(LoadErrors {
        file: file.clone(),
        errors,
    })
}

/// What a name in scope stands for.
#[derive(Clone, Copy, Debug)]
enum Named {
    Param(ParamId),
    Object(ObjectId),
}

/// Where a token local came from: the barrier object and, when constant, its index.
#[derive(Clone, Copy, Debug)]
struct TokenSource {
    object: ObjectId,
    index: Option<i64>,
}

pub(crate) struct Loader<'f> {
    file: &'f SourceFile,
    overrides: &'f [(String, i64)],
    errors: Vec<LoadError>,
    params: Vec<Param>,
    objects: Vec<Object>,
    roles: Vec<Role>,
    locals: Vec<Local>,
    /// Top-level names (params and objects), for lookup.
    names: HashMap<String, Named>,
    /// Lexical scopes of locals, innermost last.
    scopes: Vec<Vec<(String, LocalId)>>,
    tokens: HashMap<LocalId, TokenSource>,
    /// Cluster size of the kernel whose body is being resolved.
    cluster: u32,
    block: Option<(u32, Span)>,
    cluster_decl: Option<(u32, Span)>,
}

impl<'f> Loader<'f> {
    fn new(file: &'f SourceFile, overrides: &'f [(String, i64)]) -> Self {
        Loader {
            file,
            overrides,
            errors: Vec::new(),
            params: Vec::new(),
            objects: Vec::new(),
            roles: Vec::new(),
            locals: Vec::new(),
            names: HashMap::new(),
            scopes: Vec::new(),
            tokens: HashMap::new(),
            cluster: 1,
            block: None,
            cluster_decl: None,
        }
    }

    fn error(
        &mut self,
        code: &'static str,
        message: impl Into<String>,
        span: Span,
        label: impl Into<String>,
        help: Option<String>,
    ) {
        self.errors.push(LoadError {
            code,
            message: message.into(),
            span: Some(span),
            label: label.into(),
            help,
        });
    }

    fn file(&mut self, file: &ast::File) -> Program {
        let mut name = String::new();
        let mut name_span = Span::new(0, 0);
        let mut saw_protocol = false;
        let mut first_stmt: Option<Span> = None;
        let mut top_stmts: Vec<&ast::Stmt> = Vec::new();
        let mut kernels: Vec<&ast::KernelDecl> = Vec::new();
        let mut expects: Vec<&ast::ExpectDecl> = Vec::new();

        for (i, item) in file.items.iter().enumerate() {
            if let Item::Protocol(n, span) = item {
                if saw_protocol {
                    self.error(
                        "E0105",
                        "`protocol` given twice",
                        *span,
                        "second `protocol`",
                        Some("a file describes exactly one protocol".into()),
                    );
                } else {
                    saw_protocol = true;
                    name = n.text.clone();
                    name_span = n.span;
                    if i != 0 {
                        self.error(
                            "E0104",
                            "`protocol NAME` must come first",
                            *span,
                            "not the first line",
                            Some("move it to the top of the file".into()),
                        );
                    }
                }
                continue;
            }
            if let (true, Some(stmt_span)) = (item.is_declaration(), first_stmt) {
                let span = item_span(item);
                let l = self.file.line_of(stmt_span);
                self.error(
                    "E0106",
                    "declaration after the first statement",
                    span,
                    format!("the statements start on line {l}"),
                    Some("move all declarations above the first statement".into()),
                );
            }
            match item {
                Item::Protocol(..) => {}
                Item::Param { name, value, span } => self.param(name, value, *span),
                Item::Block(e, span) => self.block_decl(e, *span),
                Item::Cluster(e, span) => self.cluster_decl(e, *span),
                Item::Object {
                    name,
                    kind,
                    len,
                    span,
                } => self.object(name, kind, len.as_ref(), *span),
                Item::Kernel(k) => kernels.push(k),
                Item::Expect(e) => expects.push(e),
                Item::Stmt(s) => {
                    first_stmt.get_or_insert(s.span);
                    top_stmts.push(s);
                }
            }
        }
        if !saw_protocol {
            let span = file.items.first().map_or(Span::new(0, 0), item_span);
            self.error(
                "E0104",
                "missing `protocol NAME`",
                Span::new(span.start, span.start),
                "expected `protocol NAME` here",
                Some("every file starts with `protocol NAME`".into()),
            );
        }
        self.check_overrides();

        let mut ir_kernels = Vec::new();
        if kernels.is_empty() {
            let block = self.block.map(|(b, _)| b).unwrap_or_else(|| {
                self.error(
                    "E0307",
                    "missing `block` declaration",
                    name_span,
                    "this protocol has no block size",
                    Some("add `block N` (threads per block, 1..1024) below `protocol`".into()),
                );
                1
            });
            let cluster = self.cluster_decl.map_or(1, |(c, _)| c);
            let body = self.kernel_body(&top_stmts, cluster);
            ir_kernels.push(Kernel {
                name: name.clone(),
                domain: "default".into(),
                block,
                cluster,
                body,
                span: Span::new(0, self.file.text.len() as u32),
                implicit: true,
            });
        } else {
            if let Some(s) = top_stmts.first() {
                self.error(
                    "E0401",
                    "statement outside a kernel in a file with `kernel` blocks",
                    s.span,
                    "not in any kernel",
                    Some("move it into a `kernel NAME { ... }` block".into()),
                );
            }
            let mut seen: Vec<(String, Span)> = Vec::new();
            for k in kernels {
                if let Some((_, first)) = seen.iter().find(|(n, _)| *n == k.name.text) {
                    let l = self.file.line_of(*first);
                    self.error(
                        "E0402",
                        format!("kernel `{}` defined twice", k.name.text),
                        k.name.span,
                        format!("first defined on line {l}"),
                        None,
                    );
                }
                seen.push((k.name.text.clone(), k.name.span));
                ir_kernels.push(self.kernel(k));
            }
        }
        let expects = expects.into_iter().filter_map(|e| self.expect(e)).collect();
        Program {
            name,
            name_span,
            params: std::mem::take(&mut self.params),
            objects: std::mem::take(&mut self.objects),
            roles: std::mem::take(&mut self.roles),
            locals: std::mem::take(&mut self.locals),
            kernels: ir_kernels,
            expects,
            suppressions: Vec::new(),
        }
    }

    fn kernel(&mut self, k: &ast::KernelDecl) -> Kernel {
        let block = match &k.block {
            Some(e) => self.block_size(e),
            None => match self.block {
                Some((b, _)) => b,
                None => {
                    self.error(
                        "E0307",
                        format!("kernel `{}` has no block size", k.name.text),
                        k.name.span,
                        "no `block` clause and no top-level `block`",
                        Some(format!("write `kernel {} block N {{ ... }}`", k.name.text)),
                    );
                    1
                }
            },
        };
        let cluster = match &k.cluster {
            Some(e) => self.cluster_size(e),
            None => self.cluster_decl.map_or(1, |(c, _)| c),
        };
        let stmts: Vec<&ast::Stmt> = k.body.iter().collect();
        let body = self.kernel_body(&stmts, cluster);
        Kernel {
            name: k.name.text.clone(),
            domain: k
                .domain
                .as_ref()
                .map_or_else(|| "default".to_string(), |d| d.text.clone()),
            block,
            cluster,
            body,
            span: k.span,
            implicit: false,
        }
    }

    fn kernel_body(&mut self, stmts: &[&ast::Stmt], cluster: u32) -> Vec<Stmt> {
        self.cluster = cluster;
        self.scopes.push(Vec::new());
        let body = stmts.iter().filter_map(|s| self.stmt(s)).collect();
        self.scopes.pop();
        body
    }

    /// `--param` names must name a declared parameter.
    fn check_overrides(&mut self) {
        for (name, _) in self.overrides {
            if !self.params.iter().any(|p| &p.name == name) {
                let help =
                    did_you_mean(name, self.params.iter().map(|p| p.name.as_str())).or_else(|| {
                        if self.params.is_empty() {
                            Some("this file declares no parameters".into())
                        } else {
                            let list: Vec<_> =
                                self.params.iter().map(|p| p.name.as_str()).collect();
                            Some(format!("the parameters are: {}", list.join(", ")))
                        }
                    });
                self.errors.push(LoadError {
                    code: "E0301",
                    message: format!("`--param {name}=...` names no parameter of this file"),
                    span: None,
                    label: String::new(),
                    help,
                });
            }
        }
    }

    fn expect(&mut self, e: &ast::ExpectDecl) -> Option<Expect> {
        const VERDICTS: [&str; 5] = ["ok", "deadlock", "ub", "race", "warning"];
        let verdict = match e.verdict.text.as_str() {
            "ok" => ExpectVerdict::Ok,
            "deadlock" => ExpectVerdict::Deadlock,
            "ub" => ExpectVerdict::Ub,
            "race" => ExpectVerdict::Race,
            "warning" => ExpectVerdict::Warning,
            other => {
                let help = did_you_mean(other, VERDICTS).or_else(|| {
                    Some("the verdicts are `ok`, `deadlock`, `ub`, `race` and `warning`".into())
                });
                self.error(
                    "E0501",
                    format!("unknown verdict `{other}`"),
                    e.verdict.span,
                    "not a verdict",
                    help,
                );
                return None;
            }
        };
        if verdict == ExpectVerdict::Warning && e.rule.is_none() {
            self.error(
                "E0502",
                "`expect warning` needs a rule name",
                e.span,
                "which warning?",
                Some("write `expect warning RULE`, e.g. `expect warning parity-not-bit`".into()),
            );
        }
        if let (ExpectVerdict::Ok, Some(rule)) = (verdict, &e.rule) {
            self.error(
                "E0502",
                "`expect ok` takes no rule name",
                rule.span,
                "rule given here",
                Some("`expect ok` means no error-level finding at all".into()),
            );
        }
        if let Some(rule) = e.rule.as_ref().filter(|r| !is_rule_name(&r.text)) {
            self.error(
                "E0502",
                format!("`{}` is not a rule name", rule.text),
                rule.span,
                "rule names are kebab-case",
                Some("rule names look like `stale-token` (lowercase words joined by `-`)".into()),
            );
        }
        let mut overrides = Vec::new();
        for (name, value) in &e.overrides {
            if !self.params.iter().any(|p| p.name == name.text) {
                let help = did_you_mean(&name.text, self.params.iter().map(|p| p.name.as_str()));
                self.error(
                    "E0503",
                    format!("`expect ... with` names unknown parameter `{}`", name.text),
                    name.span,
                    "not a parameter",
                    help,
                );
            }
            overrides.push((name.text.clone(), *value));
        }
        Some(Expect {
            verdict,
            rule: e.rule.as_ref().map(|r| r.text.clone()),
            overrides,
            span: e.span,
        })
    }
}

/// Kebab-case: lowercase letters and digits in `-`-separated non-empty words.
pub(crate) fn is_rule_name(s: &str) -> bool {
    !s.is_empty()
        && s.split('-').all(|w| {
            !w.is_empty()
                && w.chars()
                    .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit())
        })
}

fn item_span(item: &Item) -> Span {
    match item {
        Item::Protocol(_, s)
        | Item::Param { span: s, .. }
        | Item::Block(_, s)
        | Item::Cluster(_, s)
        | Item::Object { span: s, .. } => *s,
        Item::Kernel(k) => k.span,
        Item::Expect(e) => e.span,
        Item::Stmt(s) => s.span,
    }
}
