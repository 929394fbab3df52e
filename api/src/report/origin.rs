//! Where a finding is, for the machine formats (SARIF, GitHub, JSON).
//!
//! A `.phase` file is reported at its own lines. A `.ptx` file is checked as the protocol
//! extracted from it, a text that exists on no disk, so its spans are mapped back: to the
//! CUDA source line of the user's frame of the `.loc` inline stack (the frame the human
//! report names, [`ptx::Extracted::describe_line`]), with the whole stack and the PTX line
//! beside it; without debug info, to the `.ptx` file and its line. A source path is made
//! relative to the working directory when it lies under it, else kept as in the debug info.

use protocols::{SourceFile, Span};
use std::path::{Path, PathBuf};

/// A place in a file on disk: a line (1-based) and maybe a column (1-based) and an end.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Place {
    pub path: String,
    /// `None`: the file as a whole (a line of the protocol that no PTX line produced).
    pub line: Option<u32>,
    pub column: Option<u32>,
    /// End line and column (exclusive), known only in a `.phase` file.
    pub end: Option<(u32, u32)>,
}

impl Place {
    fn at(path: &str, line: u32, column: u32) -> Place {
        Place {
            path: path.to_string(),
            line: Some(line),
            column: (column > 0).then_some(column),
            end: None,
        }
    }
}

/// One finding's place, with what the formats show beside it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Located {
    /// Where the finding is reported.
    pub primary: Place,
    /// The `.loc` inline stack, innermost frame first (empty without inlining).
    pub stack: Vec<Place>,
    /// The PTX line the statement came from, when `primary` is the CUDA source.
    pub ptx: Option<Place>,
    /// Every PTX line of the statement (a loop written once for unrolled copies has several).
    pub ptx_lines: Vec<u32>,
    /// The line of the extracted protocol (`phasecheck extract` prints it), for a `.ptx` file.
    pub protocol_line: Option<u32>,
}

/// A `.ptx` file's extraction, kept to map the protocol's lines back.
#[derive(Clone, Debug)]
pub struct PtxOrigin {
    pub extracted: ptx::Extracted,
    /// The `.ptx` path as the user gave it.
    pub ptx_path: String,
    /// The working directory, to shorten source paths under it.
    pub cwd: Option<PathBuf>,
    /// The `.ptx` options it was extracted with (`--block`, `--arg`, ...), for replay commands.
    pub options: Vec<String>,
}

impl PtxOrigin {
    pub fn new(extracted: ptx::Extracted, ptx_path: &str, options: Vec<String>) -> PtxOrigin {
        PtxOrigin {
            extracted,
            ptx_path: ptx_path.to_string(),
            cwd: std::env::current_dir().ok(),
            options,
        }
    }

    /// The path of `.file` entry `f`: relative to the working directory when under it. A
    /// relative path (nvcc writes the name as given on its command line) that names a file
    /// beside the `.ptx` file is that file: the kernel compiled where its PTX was written.
    fn source_path(&self, f: u32) -> String {
        let raw = self
            .extracted
            .files
            .get(&f)
            .cloned()
            .unwrap_or_else(|| format!("file{f}"));
        let beside = Path::new(&self.ptx_path)
            .parent()
            .filter(|d| !d.as_os_str().is_empty())
            .map(|d| d.join(&raw))
            .filter(|p| Path::new(&raw).is_relative() && p.is_file());
        match beside {
            Some(p) => relative_to(&p.display().to_string(), self.cwd.as_deref()),
            None => relative_to(&raw, self.cwd.as_deref()),
        }
    }

    /// The place of line `line` (1-based) of the extracted protocol.
    pub fn locate(&self, line: u32) -> Located {
        let ex = &self.extracted;
        let origin = line
            .checked_sub(1)
            .and_then(|i| ex.lines.get(i as usize))
            .and_then(Option::as_ref);
        let ptx_lines = origin.map(|o| o.ptx_lines.clone()).unwrap_or_default();
        let ptx = ptx_lines.first().map(|&l| Place::at(&self.ptx_path, l, 0));
        let whole_file = Place {
            path: self.ptx_path.clone(),
            line: None,
            column: None,
            end: None,
        };
        let Some(src) = origin.and_then(|o| o.src) else {
            return Located {
                primary: ptx.unwrap_or(whole_file),
                stack: Vec::new(),
                ptx: None,
                ptx_lines,
                protocol_line: Some(line),
            };
        };
        let shown = src.shown(ex.trampoline);
        let stack: Vec<Place> = ex
            .stacks
            .get(src.stack as usize)
            .filter(|frames| frames.len() > 1)
            .map(|frames| {
                frames
                    .iter()
                    .rev()
                    .map(|f| Place::at(&self.source_path(f.pos.file), f.pos.line, f.pos.col))
                    .collect()
            })
            .unwrap_or_default();
        Located {
            primary: Place::at(&self.source_path(shown.file), shown.line, shown.col),
            stack,
            ptx,
            ptx_lines,
            protocol_line: Some(line),
        }
    }
}

/// `path` relative to `cwd` when it is an absolute path under it; else unchanged.
pub fn relative_to(path: &str, cwd: Option<&Path>) -> String {
    let p = Path::new(path);
    match cwd.and_then(|c| p.strip_prefix(c).ok()) {
        Some(rest) if p.is_absolute() && !rest.as_os_str().is_empty() => rest.display().to_string(),
        _ => path.to_string(),
    }
}

/// What a reporter asks for a span of a checked file.
#[derive(Clone, Copy)]
pub struct Locator<'a> {
    pub file: &'a SourceFile,
    pub origin: Option<&'a PtxOrigin>,
}

impl<'a> Locator<'a> {
    pub fn new(file: &'a SourceFile, origin: Option<&'a PtxOrigin>) -> Locator<'a> {
        Locator { file, origin }
    }

    pub fn locate(&self, span: Span) -> Located {
        match self.origin {
            Some(o) => o.locate(self.file.line_of(span)),
            None => {
                let start = self.file.line_col(span.start);
                let end = self.file.line_col(span.end.max(span.start));
                Located {
                    primary: Place {
                        path: self.file.name.clone(),
                        line: Some(start.line),
                        column: Some(start.column),
                        end: Some((end.line, end.column)),
                    },
                    stack: Vec::new(),
                    ptx: None,
                    ptx_lines: Vec::new(),
                    protocol_line: None,
                }
            }
        }
    }

    /// The command that replays a finding, with the `.ptx` options it needs to run as printed.
    pub fn replay(&self, program: &protocols::ir::Program, f: &checker::Finding) -> Option<String> {
        let cmd = super::sarif::replay_command(self.file, program, f)?;
        let options = self.origin.map(|o| o.options.as_slice()).unwrap_or(&[]);
        Some(
            options
                .iter()
                .fold(cmd, |c, o| format!("{c} {}", super::sarif::shell_word(o))),
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The 1-based line of `text` that contains `marker`.
    fn line_of(text: &str, marker: &str) -> u32 {
        text.lines()
            .position(|l| l.contains(marker))
            .unwrap_or_else(|| panic!("no `{marker}`")) as u32
            + 1
    }

    /// DeepGEMM's producer issues its copies in a lambda (issue 23 point 10): a copy is
    /// located inside the lambda, with the lambda's call site (the kernel body) as the outer
    /// frame of its stack, and the PTX line beside it.
    #[test]
    fn a_statement_in_a_lambda_is_located_inside_it() {
        // Unit tests run in `api/`.
        let ptx_path = "../ptx/tests/fixtures/wgmma_lambda.ptx";
        let cu = std::fs::read_to_string("../ptx/tests/fixtures/wgmma_lambda.cu").unwrap();
        let text = std::fs::read_to_string(ptx_path).unwrap();
        let opts = ptx::Options {
            block: Some([256, 1, 1]),
            args: vec![("3".into(), 4)],
            ..ptx::Options::default()
        };
        let ex = ptx::extract(&text, ptx_path, &opts).expect("extracts");
        let copy = ex
            .text
            .lines()
            .position(|l| l.trim_start().starts_with("tma smem_a"))
            .expect("the copy") as u32
            + 1;
        let origin = PtxOrigin::new(ex, ptx_path, Vec::new());
        let at = origin.locate(copy);
        let body = line_of(&cu, "tma::load(smem_a[s]");
        let call = line_of(&cu, "load_stage(k);");
        assert_eq!(at.primary.path, "../ptx/tests/fixtures/wgmma_lambda.cu");
        assert_eq!(at.primary.line, Some(body), "{at:?}");
        let lines: Vec<Option<u32>> = at.stack.iter().map(|p| p.line).collect();
        assert!(lines.contains(&Some(body)), "{at:?}");
        assert_eq!(lines.last(), Some(&Some(call)), "{at:?}");
        let ptx_line = at.ptx.as_ref().and_then(|p| p.line).expect("a PTX line");
        let instr = text.lines().nth(ptx_line as usize - 1).unwrap();
        assert!(
            instr.contains("cp.async.bulk"),
            "PTX line {ptx_line}: {instr}"
        );
        assert_eq!(at.protocol_line, Some(copy));
    }

    #[test]
    fn absolute_paths_under_the_working_directory_become_relative() {
        let cwd = Path::new("/work/repo");
        assert_eq!(
            relative_to("/work/repo/src/k.cu", Some(cwd)),
            "src/k.cu".to_string()
        );
        assert_eq!(
            relative_to("/usr/include/x.h", Some(cwd)),
            "/usr/include/x.h"
        );
        assert_eq!(relative_to("k.cu", Some(cwd)), "k.cu");
        assert_eq!(
            relative_to("/work/repository/k.cu", Some(cwd)),
            "/work/repository/k.cu"
        );
        assert_eq!(relative_to("/work/repo/k.cu", None), "/work/repo/k.cu");
    }
}
