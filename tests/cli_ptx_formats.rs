//! The machine formats on `.ptx` files (docs/ptx.md, docs/ci.md): a finding is located at the
//! user's CUDA line (the innermost user frame of the `.loc` inline stack), with the stack and
//! the PTX lines beside it; without debug info, at the `.ptx` file and its line. Never at a
//! line of the extracted protocol, which is no file on disk.

use std::path::Path;
use std::process::Command;

const BUG: &str = "ptx/tests/fixtures/double_buffer_parity_bug.ptx";
const CU: &str = "ptx/tests/fixtures/double_buffer.cu";
const OPTIONS: [&str; 4] = ["--block", "64", "--arg", "2=4"];

fn phasecheck_in(dir: &Path, args: &[&str]) -> (i32, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_phasecheck"))
        .args(args)
        .current_dir(dir)
        .env("NO_COLOR", "1")
        .output()
        .expect("runs");
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
    )
}

fn phasecheck(args: &[&str]) -> (i32, String) {
    phasecheck_in(Path::new(env!("CARGO_MANIFEST_DIR")), args)
}

/// The annotations without the `::notice` of a search stopped after its hazard: its state
/// counts depend on how the search ran, not on where the findings are.
fn without_notice(out: &str) -> String {
    assert!(out.contains("::notice "), "{out}");
    out.lines()
        .filter(|l| !l.starts_with("::notice "))
        .map(|l| format!("{l}\n"))
        .collect()
}

fn with_options<'a>(args: &[&'a str]) -> Vec<&'a str> {
    args.iter().copied().chain(OPTIONS).collect()
}

/// The 1-based line of `cu` that contains `marker`.
fn line_of(cu: &str, marker: &str) -> u64 {
    let text = std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join(cu)).unwrap();
    text.lines()
        .position(|l| l.contains(marker))
        .unwrap_or_else(|| panic!("no `{marker}` in {cu}")) as u64
        + 1
}

/// The log must follow the OASIS SARIF 2.1.0 schema (as `tests/cli_lint.rs` checks for
/// `.phase` files): the stacks, regions without an end, the PTX related locations.
fn validate_sarif(stdout: &str) {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let schema: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(root.join("tests/fixtures/sarif-2.1.0/sarif-schema-2.1.0.json"))
            .unwrap(),
    )
    .unwrap();
    let v: serde_json::Value = serde_json::from_str(stdout).expect("SARIF is JSON");
    let validator = jsonschema::validator_for(&schema).expect("the OASIS schema compiles");
    let errors: Vec<String> = validator
        .iter_errors(&v)
        .map(|e| format!("{} at {}", e, e.instance_path()))
        .collect();
    assert!(errors.is_empty(), "SARIF schema errors: {errors:#?}");
}

/// SARIF results without the code flows (they repeat the traces, pinned in other tests).
fn sarif_results(stdout: &str) -> Vec<serde_json::Value> {
    let v: serde_json::Value = serde_json::from_str(stdout).expect("SARIF is JSON");
    v["runs"][0]["results"]
        .as_array()
        .expect("results")
        .iter()
        .cloned()
        .map(|mut r| {
            r.as_object_mut().expect("a result").remove("codeFlows");
            r
        })
        .collect()
}

/// The PTX without its debug info, as nvcc writes it without `-lineinfo`, in a fresh folder.
fn without_lineinfo(name: &str) -> std::path::PathBuf {
    let dir = std::env::temp_dir().join(format!("pc-ptx-formats-{name}-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let text = std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join(BUG)).unwrap();
    let stripped: String = text
        .lines()
        .filter(|l| {
            let t = l.trim_start();
            !t.starts_with(".loc") && !t.starts_with(".file")
        })
        .map(|l| format!("{l}\n"))
        .collect();
    std::fs::write(dir.join("nolines.ptx"), stripped).unwrap();
    dir
}

#[test]
fn sarif_locates_a_ptx_finding_at_the_user_s_cuda_line() {
    let (code, out) = phasecheck(&with_options(&["verify", BUG, "--format", "sarif"]));
    assert_eq!(code, 1, "{out}");
    validate_sarif(&out);
    let results = sarif_results(&out);
    let deadlock = &results[0];
    let at = &deadlock["locations"][0]["physicalLocation"];
    // The source file beside the PTX, relative to the working directory.
    assert_eq!(at["artifactLocation"]["uri"], CU);
    // The producer's wait, inlined from the helper `wait` (the `.loc` position).
    let wait_call = line_of(CU, "mb_wait(&empty[s], ph ^ 1);");
    assert_eq!(at["region"]["startLine"], wait_call);
    let frames = deadlock["stacks"][0]["frames"].as_array().expect("a stack");
    assert_eq!(frames.len(), 2, "{frames:?}");
    // The helper `mb_wait`'s `asm volatile(` (the line after its header).
    let helper = line_of(CU, "void mb_wait(") + 1;
    assert_eq!(
        frames[0]["location"]["physicalLocation"]["region"]["startLine"],
        helper
    );
    assert_eq!(
        frames[1]["location"]["physicalLocation"]["region"]["startLine"],
        wait_call
    );
    // The PTX line is a related location, never the primary one.
    let related = deadlock["relatedLocations"].as_array().expect("related");
    assert!(
        related
            .iter()
            .any(|r| r["physicalLocation"]["artifactLocation"]["uri"] == BUG),
        "{related:?}"
    );
    insta::assert_json_snapshot!("ptx_sarif_lineinfo", results);
}

#[test]
fn sarif_without_lineinfo_locates_at_the_ptx_line() {
    let dir = without_lineinfo("sarif");
    let (code, out) = phasecheck_in(
        &dir,
        &with_options(&["verify", "nolines.ptx", "--format", "sarif"]),
    );
    assert_eq!(code, 1, "{out}");
    validate_sarif(&out);
    let results = sarif_results(&out);
    for r in &results {
        let at = &r["locations"][0]["physicalLocation"];
        assert_eq!(at["artifactLocation"]["uri"], "nolines.ptx", "{r}");
        let line = at["region"]["startLine"].as_u64().expect("a line");
        let text = std::fs::read_to_string(dir.join("nolines.ptx")).unwrap();
        let ptx_line = text.lines().nth(line as usize - 1).unwrap();
        assert!(
            ptx_line.contains("mbarrier") || ptx_line.contains("ld.shared"),
            "line {line} is `{ptx_line}`"
        );
    }
    insta::assert_json_snapshot!("ptx_sarif_no_lineinfo", results);
    std::fs::remove_dir_all(&dir).ok();
}

#[test]
fn github_annotations_of_a_ptx_file_name_the_source_line() {
    let (code, out) = phasecheck(&with_options(&["verify", BUG, "--format", "github"]));
    assert_eq!(code, 1, "{out}");
    let wait_call = line_of(CU, "mb_wait(&empty[s], ph ^ 1);");
    assert!(
        out.contains(&format!("::error file={CU},line={wait_call},")),
        "{out}"
    );
    // The replay command runs as printed: it carries the .ptx options.
    assert!(out.contains("--block 64,1,1 --arg 2=4"), "{out}");
    insta::assert_snapshot!("ptx_github_lineinfo", without_notice(&out));

    let dir = without_lineinfo("github");
    let (code, out) = phasecheck_in(
        &dir,
        &with_options(&["lint", "nolines.ptx", "--format", "github"]),
    );
    assert_eq!(code, 1, "{out}");
    assert!(out.contains("::error file=nolines.ptx,line="), "{out}");
    insta::assert_snapshot!("ptx_github_no_lineinfo", without_notice(&out));
    std::fs::remove_dir_all(&dir).ok();
}

#[test]
fn json_adds_the_source_place_of_a_ptx_finding() {
    let (code, out) = phasecheck(&with_options(&["verify", BUG, "--format", "json"]));
    assert_eq!(code, 1, "{out}");
    let v: serde_json::Value = serde_json::from_str(&out).expect("JSON");
    let f = &v["files"][0]["findings"][0];
    let wait_call = line_of(CU, "mb_wait(&empty[s], ph ^ 1);");
    assert_eq!(f["source"]["file"], CU, "{f}");
    assert_eq!(f["source"]["line"], wait_call, "{f}");
    assert_eq!(
        f["source"]["stack"].as_array().map(Vec::len),
        Some(2),
        "{f}"
    );
    assert!(!f["source"]["ptx_lines"].as_array().unwrap().is_empty());
    // The span stays the protocol's (schema 1 is unchanged).
    assert_eq!(f["span"]["line"], f["source"]["protocol_line"], "{f}");
}

/// A `.ptx` file that cannot be extracted is in the log (exit 2), as `lint` reports it, not
/// only on stderr: a CI job that reads the SARIF or the annotations sees why.
#[test]
fn a_ptx_file_that_does_not_extract_is_in_the_log() {
    let (code, out) = phasecheck(&["verify", BUG, "--format", "github"]);
    assert_eq!(code, 2, "{out}");
    assert!(
        out.starts_with(&format!(
            "::error file={BUG},title=unreadable::cannot extract its protocol: the block size"
        )),
        "{out}"
    );
    let (code, out) = phasecheck(&["verify", BUG, "--format", "sarif"]);
    assert_eq!(code, 2, "{out}");
    validate_sarif(&out);
    let v: serde_json::Value = serde_json::from_str(&out).unwrap();
    let n = &v["runs"][0]["invocations"][0]["toolExecutionNotifications"][0];
    assert_eq!(n["descriptor"]["id"], "unreadable", "{n}");
}

/// `lint`'s human output on a `.ptx` file says where the findings are in the source, and its
/// replay commands run as printed, as `verify`'s do.
#[test]
fn lint_human_output_of_a_ptx_file_names_the_source_lines() {
    let (code, out) = phasecheck(&with_options(&["lint", BUG]));
    assert_eq!(code, 1, "{out}");
    assert!(out.contains("findings in the source"), "{out}");
    assert!(
        out.contains("is at double_buffer.cu:71 (via line 29)"),
        "{out}"
    );
    assert!(
        out.contains(&format!(
            "replay: phasecheck verify {BUG} --replay a10Cm2 --block 64,1,1 --arg 2=4"
        )),
        "{out}"
    );
}
