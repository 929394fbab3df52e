//! `phasecheck lint`, `rules` and `explain` end to end: exit codes, formats, configuration,
//! suppressions, .gitignore, SARIF schema validity, and docs/rules.md freshness.

use serde_json::Value;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

fn bin() -> Command {
    let mut c = Command::new(env!("CARGO_BIN_EXE_phasecheck"));
    c.env_remove("NO_COLOR");
    c
}

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// A fresh scratch folder for one test.
fn scratch(name: &str) -> PathBuf {
    let dir =
        std::env::temp_dir().join(format!("phasecheck-cli-lint-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

fn write(dir: &Path, rel: &str, text: &str) {
    let p = dir.join(rel);
    std::fs::create_dir_all(p.parent().unwrap()).unwrap();
    std::fs::write(p, text).unwrap();
}

fn run(dir: &Path, args: &[&str]) -> Output {
    bin().current_dir(dir).args(args).output().unwrap()
}

fn code(o: &Output) -> i32 {
    o.status.code().expect("exit code")
}

fn stdout(o: &Output) -> String {
    String::from_utf8(o.stdout.clone()).unwrap()
}

fn stderr(o: &Output) -> String {
    String::from_utf8(o.stderr.clone()).unwrap()
}

/// A correct protocol whose only finding is a static perf lint (a parity that is not a bit,
/// on line 10).
const PARITY: &str = "protocol parity\nparam K = 4\nblock 2\nmbarrier b\n\
if tid == 0 { init b, 2 }\nsyncthreads\nfor k in 0..K {\n  arrive b\n  compute\n  \
wait b parity k\n}\n";

/// `consumer_wait_prior` with N from a param (default 4: fine; 12: over 8, line 7).
const PRIOR: &str = "protocol prior\nparam N = 4\nblock 1\npipeline p thread\nbuffer x\n\
memcpy_async x -> p; producer_commit p\nconsumer_wait_prior p, N\n";

fn sarif_rule_ids(v: &Value) -> Vec<String> {
    v["runs"][0]["results"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["ruleId"].as_str().unwrap().to_string())
        .collect()
}

fn validate_sarif(v: &Value) {
    let schema: Value = serde_json::from_str(
        &std::fs::read_to_string(root().join("tests/fixtures/sarif-2.1.0/sarif-schema-2.1.0.json"))
            .unwrap(),
    )
    .unwrap();
    let validator = jsonschema::validator_for(&schema).expect("the OASIS schema compiles");
    let errors: Vec<String> = validator
        .iter_errors(v)
        .map(|e| format!("{} at {}", e, e.instance_path()))
        .collect();
    assert!(errors.is_empty(), "SARIF schema errors: {errors:#?}");
}

#[test]
fn sarif_output_validates_against_the_oasis_schema() {
    let dir = scratch("sarif");
    write(&dir, "a/parity.phase", PARITY);
    write(&dir, "a/bad.phase", "protocol bad\nblock 0\n");
    write(
        &dir,
        "b/with space.phase",
        &PARITY.replace("protocol parity", "protocol spaced"),
    );
    let o = run(&dir, &["lint", "--format", "sarif", "."]);
    assert_eq!(code(&o), 2, "a load error is bad input: {}", stderr(&o));
    let v: Value = serde_json::from_str(&stdout(&o)).unwrap();
    validate_sarif(&v);
    assert_eq!(v["version"], "2.1.0");
    let rules = v["runs"][0]["tool"]["driver"]["rules"].as_array().unwrap();
    assert_eq!(rules.len(), checker::rules::ALL.len());
    for (r, reg) in rules.iter().zip(checker::rules::ALL) {
        assert_eq!(r["id"], reg.code);
        assert!(r["shortDescription"]["text"].as_str().unwrap().len() > 10);
        assert!(r["fullDescription"]["text"].as_str().unwrap().len() > 10);
        assert!(r["help"]["markdown"].as_str().unwrap().contains("# What"));
    }
    assert_eq!(sarif_rule_ids(&v), ["PC404", "PC404"]);
    let uris: Vec<&str> = v["runs"][0]["results"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| {
            r["locations"][0]["physicalLocation"]["artifactLocation"]["uri"]
                .as_str()
                .unwrap()
        })
        .collect();
    assert_eq!(uris, ["a/parity.phase", "b/with%20space.phase"]);
    let region = &v["runs"][0]["results"][0]["locations"][0]["physicalLocation"]["region"];
    assert_eq!(region["startLine"], 10);
    assert_eq!(region["startColumn"], 17);
    let notes = v["runs"][0]["invocations"][0]["toolExecutionNotifications"]
        .as_array()
        .unwrap();
    assert!(
        notes
            .iter()
            .any(|n| n["level"] == "error"
                && n["descriptor"]["id"].as_str().unwrap().starts_with('E')),
        "load errors are notifications: {notes:#?}"
    );
}

/// The whole corpus, linted as CI does (`phasecheck lint corpus`, with `corpus/phasecheck.toml`
/// giving the production-size files the parameters of one of their `expect` lines): every
/// search completes, the SARIF log validates against the OASIS schema, and every hazard pair's
/// fail file reports its rule.
#[test]
fn whole_corpus_sarif_validates() {
    let o = run(&root(), &["lint", "--format", "sarif", "corpus"]);
    assert_eq!(
        code(&o),
        1,
        "the hazard files have findings: {}",
        stderr(&o)
    );
    let v: Value = serde_json::from_str(&stdout(&o)).unwrap();
    validate_sarif(&v);
    // Notes (a search that stopped after its first errors) are fine; warnings and errors are
    // not.
    let notes: Vec<String> = v["runs"][0]["invocations"][0]["toolExecutionNotifications"]
        .as_array()
        .map(|n| {
            n.iter()
                .filter(|n| n["level"] != "note")
                .map(|n| n.to_string())
                .collect()
        })
        .unwrap_or_default();
    assert!(
        notes.is_empty(),
        "no load error and no inconclusive search: {notes:#?}"
    );
    let results = v["runs"][0]["results"].as_array().unwrap();
    assert!(
        results.iter().any(|r| r["codeFlows"].is_array()),
        "counterexamples are code flows"
    );
    for rule in checker::rules::ALL {
        let fail = format!("corpus/hazards/{}/fail.phase", rule.name);
        if !root().join(&fail).exists() {
            continue;
        }
        assert!(
            results.iter().any(|r| r["ruleId"] == rule.code
                && r["locations"][0]["physicalLocation"]["artifactLocation"]["uri"] == fail),
            "{fail} reports {} ({}) in the SARIF log",
            rule.name,
            rule.code
        );
    }
}

/// Every hazard of the corpus (`corpus/hazards/RULE/{fail,pass}.phase`, small protocols that
/// are checked completely) in all four formats: the SARIF validates, and every finding shows
/// up in SARIF, JSON, GitHub and human output with the same rule at the same line. (The whole
/// corpus, with bounded searches, is linted by `documented_ci_commands_run_on_the_corpus`.)
#[test]
fn corpus_hazards_in_all_formats() {
    let corpus = root().join("corpus/hazards");
    if !corpus.is_dir() {
        eprintln!("skipped: no corpus/hazards in this checkout (it lands with the corpus branch)");
        return;
    }
    let lint = |format: &str| run(&root(), &["lint", "--format", format, "corpus/hazards"]);
    let sarif = lint("sarif");
    assert!(matches!(code(&sarif), 0 | 1 | 3), "{}", stderr(&sarif));
    let v: Value = serde_json::from_str(&stdout(&sarif)).unwrap();
    validate_sarif(&v);
    let json: Value = serde_json::from_str(&stdout(&lint("json"))).unwrap();
    let github = stdout(&lint("github"));
    let human = stdout(&lint("human"));
    let mut sarif_keys: Vec<(String, u64, String)> = v["runs"][0]["results"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| {
            let loc = &r["locations"][0]["physicalLocation"];
            let rule = checker::rules::find(r["ruleId"].as_str().unwrap()).unwrap();
            (
                loc["artifactLocation"]["uri"].as_str().unwrap().to_string(),
                loc["region"]["startLine"].as_u64().unwrap(),
                rule.name.to_string(),
            )
        })
        .collect();
    sarif_keys.sort();
    assert!(
        sarif_keys.len() >= 20,
        "the hazard pairs produce findings: {sarif_keys:?}"
    );
    let mut json_keys = Vec::new();
    for f in json["files"].as_array().unwrap() {
        for finding in f["findings"].as_array().into_iter().flatten() {
            json_keys.push((
                f["file"].as_str().unwrap().replace(' ', "%20"),
                finding["span"]["line"].as_u64().unwrap(),
                finding["rule"].as_str().unwrap().to_string(),
            ));
        }
    }
    json_keys.sort();
    assert_eq!(
        sarif_keys, json_keys,
        "SARIF and JSON report the same findings"
    );
    for (file, line, rule) in &sarif_keys {
        let r = checker::rules::find(rule).unwrap();
        let file = file.replace("%20", " ");
        assert!(
            github.contains(&format!("file={file},line={line},"))
                && github.contains(&format!("title={} {}", r.code, r.name)),
            "github lacks {file}:{line} {rule}"
        );
        assert!(
            human.contains(&format!("{file}:{line}:")) && human.contains(rule.as_str()),
            "human lacks {file}:{line} {rule}"
        );
    }
}

#[test]
fn levels_from_the_command_line() {
    let dir = scratch("levels");
    write(&dir, "p.phase", PARITY);
    // A warning alone does not fail the build (the search may still be inconclusive: 3).
    let o = run(&dir, &["lint", "--format", "json"]);
    let v: Value = serde_json::from_str(&stdout(&o)).unwrap();
    assert_eq!(v["summary"]["warnings"], 1);
    assert_ne!(code(&o), 1);
    assert_eq!(code(&run(&dir, &["lint", "-D", "warnings"])), 1);
    assert_eq!(code(&run(&dir, &["lint", "--deny", "parity-not-bit"])), 1);
    assert_eq!(code(&run(&dir, &["lint", "-D", "PC404"])), 1);
    assert_eq!(code(&run(&dir, &["lint", "-D", "perf"])), 1);
    // Later groups win: -D over -W over -A.
    assert_eq!(
        code(&run(&dir, &["lint", "-A", "perf", "-D", "parity-not-bit"])),
        1
    );
    let o = run(
        &dir,
        &[
            "lint",
            "-A",
            "parity-not-bit",
            "-D",
            "warnings",
            "--format",
            "json",
        ],
    );
    let v: Value = serde_json::from_str(&stdout(&o)).unwrap();
    assert_eq!(v["summary"]["warnings"], 0);
    assert_ne!(code(&o), 1);
    // Unknown names are bad input, with a hint.
    let o = run(&dir, &["lint", "-D", "parity-not-bt"]);
    assert_eq!(code(&o), 2);
    assert!(
        stderr(&o).contains("did you mean `parity-not-bit`"),
        "{}",
        stderr(&o)
    );
}

#[test]
fn configuration_is_found_per_file_and_validated() {
    let dir = scratch("config");
    write(&dir, "loose/p.phase", PARITY);
    write(&dir, "strict/p.phase", PARITY);
    write(
        &dir,
        "strict/phasecheck.toml",
        "[rules]\nparity-not-bit = \"deny\"\n",
    );
    write(&dir, "strict/big/prior.phase", PRIOR);
    write(&dir, "strict/small/prior.phase", PRIOR);
    write(
        &dir,
        "phasecheck.toml",
        "# root config: must not apply below strict/\n[rules]\nperf = \"allow\"\n",
    );
    let o = run(&dir, &["lint", "--format", "github"]);
    let out = stdout(&o);
    assert!(
        !out.contains("file=loose/p.phase,line="),
        "root config allows perf: {out}"
    );
    assert!(
        out.contains("::error file=strict/p.phase,line=10,")
            && out.contains("PC404 parity-not-bit"),
        "strict/ denies it: {out}"
    );
    assert_eq!(code(&o), 1, "denied in strict/: {}", stderr(&o));

    // [[params]] by glob, relative to the config's folder.
    write(
        &dir,
        "strict/phasecheck.toml",
        "[rules]\nparity-not-bit = \"deny\"\n[[params]]\nglob = \"big/*.phase\"\nvalues = { N = 12 }\n",
    );
    let o = run(&dir, &["lint", "--format", "github", "strict"]);
    let out = stdout(&o);
    assert!(
        out.contains("file=strict/big/prior.phase,line=7") && out.contains("PC402"),
        "{out}"
    );
    assert!(
        !out.contains("file=strict/small/prior.phase,line="),
        "{out}"
    );

    // Invalid configuration: exit 2, naming the file and the key.
    write(
        &dir,
        "strict/phasecheck.toml",
        "[rules]\nparity-not-bit = \"forbid\"\n",
    );
    let o = run(&dir, &["lint", "strict"]);
    assert_eq!(code(&o), 2);
    let err = stderr(&o);
    assert!(
        err.contains("strict/phasecheck.toml") && err.contains("forbid"),
        "{err}"
    );
    write(&dir, "strict/phasecheck.toml", "[limits]\nmax-sates = 10\n");
    let o = run(&dir, &["lint", "strict"]);
    assert_eq!(code(&o), 2);
    assert!(stderr(&o).contains("max-sates"), "{}", stderr(&o));
    write(
        &dir,
        "strict/phasecheck.toml",
        "[rules]\nstale-tokn = \"deny\"\n",
    );
    let o = run(&dir, &["lint", "strict"]);
    assert_eq!(code(&o), 2);
    assert!(stderr(&o).contains("rules.stale-tokn") && stderr(&o).contains("stale-token"));
}

#[test]
fn gitignore_is_honoured_and_explicit_files_are_not_filtered() {
    let dir = scratch("gitignore");
    write(&dir, ".gitignore", "generated/\n");
    write(&dir, "generated/p.phase", PARITY);
    write(&dir, "src/p.phase", PARITY);
    write(&dir, "src/notes.txt", "not a protocol");
    let o = run(&dir, &["lint", "--format", "json"]);
    let v: Value = serde_json::from_str(&stdout(&o)).unwrap();
    let files: Vec<&str> = v["files"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| f["file"].as_str().unwrap())
        .collect();
    assert_eq!(files, ["src/p.phase"]);
    let o = run(&dir, &["lint", "--format", "json", "generated/p.phase"]);
    let v: Value = serde_json::from_str(&stdout(&o)).unwrap();
    assert_eq!(v["summary"]["files"], 1);
    // No files at all, or a missing path: bad input.
    let empty = scratch("gitignore-empty");
    assert_eq!(code(&run(&empty, &["lint"])), 2);
    assert_eq!(code(&run(&dir, &["lint", "nowhere"])), 2);
}

/// Thread 0 arrives on a barrier nobody initialised (UB at the first step); the others store a
/// release flag a different number of times each and then all write one buffer: a data race
/// that only a search well past the UB reaches.
const LATE_RACE: &str = include_str!("fixtures/search/late_race.phase");

/// `-A RULE` (and a configuration level `allow`) does not stop the search at an allowed
/// finding: the race behind the allowed UB is reported. Before, the search stopped 5 000
/// states after the UB, `-A` dropped it, and the file was inconclusive (exit 3).
#[test]
fn an_allowed_rule_does_not_stop_the_search() {
    let dir = scratch("allowed-stop");
    write(&dir, "late.phase", LATE_RACE);
    let o = run(
        &dir,
        &["lint", "--no-config", "-A", "use-before-init", "late.phase"],
    );
    let out = stdout(&o);
    assert_eq!(code(&o), 1, "{out}{}", stderr(&o));
    assert!(out.contains("data-race"), "{out}");
    assert!(!out.contains("use-before-init"), "{out}");
    write(
        &dir,
        "phasecheck.toml",
        "[rules]\nuse-before-init = \"allow\"\n",
    );
    let o = run(&dir, &["lint", "late.phase"]);
    let out = stdout(&o);
    assert_eq!(code(&o), 1, "{out}{}", stderr(&o));
    assert!(out.contains("data-race"), "{out}");
    // `-W` lowers it to a warning: it does not decide the verdict, so it does not stop the
    // search either.
    let o = run(
        &dir,
        &["lint", "--no-config", "-W", "use-before-init", "late.phase"],
    );
    let out = stdout(&o);
    assert_eq!(code(&o), 1, "{out}{}", stderr(&o));
    assert!(out.contains("data-race"), "{out}");
}

#[test]
fn suppressions_in_every_format() {
    let dir = scratch("suppress");
    let src = PARITY.replace(
        "  wait b parity k\n",
        "  wait b parity k  # phasecheck: allow(parity-not-bit) measured: k < 2 on real shapes\n  \
         compute  # phasecheck: allow(stale-token)\n",
    );
    write(&dir, "s.phase", &src);
    let o = run(&dir, &["lint", "--format", "github"]);
    let out = stdout(&o);
    assert!(!out.contains("PC404"), "{out}");
    assert!(
        out.contains("::warning file=s.phase,line=11,") && out.contains("PC490 unused-suppression"),
        "{out}"
    );
    let o = run(&dir, &["lint", "--format", "sarif"]);
    let v: Value = serde_json::from_str(&stdout(&o)).unwrap();
    validate_sarif(&v);
    assert_eq!(sarif_rule_ids(&v), ["PC490"]);
}

#[test]
fn params_on_the_command_line_apply_where_declared() {
    let dir = scratch("params");
    write(&dir, "prior.phase", PRIOR);
    write(&dir, "parity.phase", PARITY);
    let o = run(&dir, &["lint", "--format", "github", "--param", "N=12"]);
    assert!(stdout(&o).contains("PC402"), "{}", stdout(&o));
    let o = run(&dir, &["lint", "--param", "NOPE=1"]);
    assert_eq!(code(&o), 2);
    assert!(stderr(&o).contains("NOPE"));
}

#[test]
fn human_output_has_no_colour_when_piped() {
    let dir = scratch("human");
    write(&dir, "p.phase", PARITY);
    let o = run(&dir, &["lint"]);
    let out = stdout(&o);
    assert!(
        out.contains("p.phase:10:") && out.contains("parity-not-bit"),
        "{out}"
    );
    assert!(out.contains("checked 1 file:"), "{out}");
    assert!(!out.contains('\x1b'), "{out:?}");
}

#[test]
fn rules_lists_every_rule_and_docs_rules_md_is_current() {
    let o = bin().args(["rules"]).output().unwrap();
    assert_eq!(code(&o), 0);
    let table = stdout(&o);
    for r in checker::rules::ALL {
        assert!(
            table.contains(r.code) && table.contains(r.name),
            "{} missing",
            r.code
        );
    }
    let o = bin().args(["rules", "--format", "json"]).output().unwrap();
    let v: Value = serde_json::from_str(&stdout(&o)).unwrap();
    assert_eq!(v.as_array().unwrap().len(), checker::rules::ALL.len());
    assert_eq!(v[0]["code"], checker::rules::ALL[0].code);

    let o = bin()
        .args(["rules", "--format", "markdown"])
        .output()
        .unwrap();
    let generated = stdout(&o);
    let path = root().join("docs/rules.md");
    if std::env::var_os("UPDATE_DOCS").is_some() {
        std::fs::write(&path, &generated).unwrap();
    }
    let committed = std::fs::read_to_string(&path).unwrap_or_default();
    assert!(
        committed == generated,
        "docs/rules.md is stale: run `cargo run -- rules --format markdown > docs/rules.md` \
         (or this test with UPDATE_DOCS=1)"
    );
}

#[test]
fn explain_by_name_or_code_and_did_you_mean() {
    let by_name = bin().args(["explain", "parity-not-bit"]).output().unwrap();
    let by_code = bin().args(["explain", "pc404"]).output().unwrap();
    assert_eq!(code(&by_name), 0);
    assert_eq!(stdout(&by_name), stdout(&by_code));
    assert!(stdout(&by_name).starts_with("PC404 parity-not-bit (perf, warning)"));
    assert!(stdout(&by_name).contains("# What"));
    let o = bin().args(["explain", "stale-tokne"]).output().unwrap();
    assert_eq!(code(&o), 2);
    assert!(
        stderr(&o).contains("did you mean `stale-token`"),
        "{}",
        stderr(&o)
    );
}

/// Every `phasecheck lint` command in a code block of docs/ci.md, as arguments after `lint`.
/// Shell tails (`|| ...`, comments) are cut; `$files` (the git hook) and the pre-commit `entry`
/// get the files as arguments.
fn documented_commands(files: &[String]) -> Vec<Vec<String>> {
    let doc = std::fs::read_to_string(root().join("docs/ci.md")).unwrap();
    let mut in_code = false;
    let mut out: Vec<Vec<String>> = Vec::new();
    for line in doc.lines() {
        if line.trim_start().starts_with("```") {
            in_code = !in_code;
            continue;
        }
        // A command, not a status line (`phasecheck lint: FILE: ...`).
        let Some(at) = line
            .find("phasecheck lint")
            .filter(|&at| in_code && !line[at..].starts_with("phasecheck lint:"))
        else {
            continue;
        };
        let cmd = &line[at + "phasecheck lint".len()..];
        let cmd = cmd.split("||").next().unwrap().split(" #").next().unwrap();
        let mut args: Vec<String> = Vec::new();
        for word in cmd.split_whitespace() {
            if word == "$files" {
                args.extend(files.iter().cloned());
            } else {
                args.push(word.to_string());
            }
        }
        if line.trim_start().starts_with("entry:") {
            args.extend(files.iter().cloned());
        }
        if !out.contains(&args) {
            out.push(args);
        }
    }
    out
}

#[test]
fn documented_ci_commands_run_on_the_corpus() {
    let corpus = root().join("corpus");
    if !corpus.is_dir() {
        eprintln!("skipped: no corpus/ in this checkout (it lands with the corpus branch)");
        return;
    }
    // A copy of the corpus is the project root the documented commands run in.
    let dir = scratch("ci-doc");
    let mut files = Vec::new();
    let mut stack = vec![corpus.clone()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).unwrap() {
            let p = e.unwrap().path();
            if p.is_dir() {
                stack.push(p);
            } else {
                let rel = p
                    .strip_prefix(&corpus)
                    .unwrap()
                    .to_string_lossy()
                    .to_string();
                write(&dir, &rel, &std::fs::read_to_string(&p).unwrap());
                if rel.ends_with(".phase") {
                    files.push(rel);
                }
            }
        }
    }
    files.sort();
    // The commands are run as documented, on every corpus file. A project config stops each
    // search at its first state: this test is about the commands (arguments, formats, files
    // written, exit codes), and a debug-build search of the large corpus protocols takes
    // minutes. Complete searches in all formats: `corpus_hazards_in_all_formats`.
    write(&dir, "phasecheck.toml", "[limits]\nmax-states = 1\n");
    let commands = documented_commands(&files);
    assert!(
        commands.len() >= 6,
        "docs/ci.md documents the lint commands: {commands:?}"
    );
    for args in &commands {
        let _ = std::fs::remove_file(dir.join("phasecheck.sarif"));
        let mut full = vec!["lint"];
        full.extend(args.iter().map(String::as_str));
        let o = run(&dir, &full);
        assert!(
            matches!(code(&o), 0 | 1 | 3),
            "`phasecheck {}` exited {}: {}",
            full.join(" "),
            code(&o),
            stderr(&o)
        );
        let out = stdout(&o);
        if args.iter().any(|a| a == "github") {
            assert!(
                out.lines()
                    .all(|l| l.starts_with("::") || l.starts_with("phasecheck: ")),
                "{out}"
            );
        }
        if args.iter().any(|a| a == "sarif") {
            let text = if args.iter().any(|a| a == "-o" || a == "--output") {
                std::fs::read_to_string(dir.join("phasecheck.sarif")).unwrap()
            } else {
                out
            };
            validate_sarif(&serde_json::from_str(&text).unwrap());
        }
    }
}

#[test]
fn documented_commands_are_found() {
    let cmds = documented_commands(&["a.phase".to_string()]);
    let has = |s: &str| cmds.iter().any(|c| c.join(" ") == s);
    assert!(has("--format github"), "{cmds:?}");
    assert!(has("--format sarif --output phasecheck.sarif"), "{cmds:?}");
    assert!(has("a.phase"), "pre-commit entry and git hook: {cmds:?}");
    assert!(has("-D warnings"), "{cmds:?}");
}

#[test]
fn exit_codes_clean_findings_bad_input_inconclusive() {
    let dir = scratch("exit");
    // Clean: the parity written as a bit.
    write(
        &dir,
        "clean/p.phase",
        &PARITY.replace("parity k\n", "parity k % 2\n"),
    );
    assert_eq!(code(&run(&dir, &["lint", "clean"])), 0);
    // Warnings only: still 0; denied: 1.
    write(&dir, "warn/p.phase", PARITY);
    assert_eq!(code(&run(&dir, &["lint", "warn"])), 0);
    assert_eq!(code(&run(&dir, &["lint", "warn", "-D", "warnings"])), 1);
    // A search cut short: 3.
    assert_eq!(code(&run(&dir, &["lint", "clean", "--max-states", "1"])), 3);
    // An error-level finding: 1, also when another search is inconclusive.
    write(
        &dir,
        "err/p.phase",
        "protocol err\nblock 2\nmbarrier b\nif tid == 0 { init b, 2 }\nsyncthreads\n\
         if tid == 0 { arrive b }\nwait b parity 0\n",
    );
    assert_eq!(code(&run(&dir, &["lint", "err"])), 1);
    write(
        &dir,
        "err/phasecheck.toml",
        "[rules]\ndeadlock = \"warn\"\n",
    );
    assert_eq!(
        code(&run(&dir, &["lint", "err"])),
        0,
        "deadlock demoted to a warning"
    );
    std::fs::remove_file(dir.join("err/phasecheck.toml")).unwrap();
    // Bad input wins over everything.
    write(&dir, "err/bad.phase", "protocol bad\nblock 0\n");
    assert_eq!(code(&run(&dir, &["lint", "err", "clean"])), 2);
}

/// The summary line counts in words: `checked 1 file: 0 errors, 1 warning`.
#[test]
fn summary_counts_are_plural_only_when_they_should_be() {
    let dir = scratch("plural");
    write(&dir, "one/p.phase", PARITY);
    let out = run(&dir, &["lint", "one"]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    let text = stdout(&out);
    assert!(
        text.ends_with("checked 1 file: 0 errors, 1 warning (exit 0)\n"),
        "{text}"
    );
}
