//! `phasecheck verify FILE...`: load, check, report.

use crate::cli::{Exit, Format, VerifyArgs};
use crate::report;
use protocols::SourceFile;

pub fn run(args: &VerifyArgs) -> Exit {
    let mut worst = Exit::Clean;
    let mut json_out = Vec::new();
    for path in &args.files {
        let text = match std::fs::read(path) {
            Ok(bytes) => match String::from_utf8(bytes) {
                Ok(t) => t,
                Err(_) => {
                    eprintln!("error: {} is not UTF-8 text", path.display());
                    worst = Exit::BadInput;
                    continue;
                }
            },
            Err(e) => {
                eprintln!("error: cannot read {}: {e}", path.display());
                worst = Exit::BadInput;
                continue;
            }
        };
        let file = SourceFile::new(path.display().to_string(), text);
        match protocols::load(&file, &args.params) {
            Err(errors) => {
                match args.format {
                    Format::Human => eprint!("{}", report::load_errors::human(&errors)),
                    Format::Json => json_out.push(report::load_errors::json(&errors)),
                }
                worst = Exit::BadInput;
            }
            Ok(program) => {
                let result = checker::check(&program, &checker::CheckOptions::default());
                let exit = report::exit_code(&result);
                match args.format {
                    Format::Human => print!("{}", report::human::render(&file, &program, &result)),
                    Format::Json => json_out.push(report::json::render(&file, &program, &result)),
                }
                worst = report::worse(worst, exit);
            }
        }
    }
    if args.format == Format::Json {
        let value = if json_out.len() == 1 {
            json_out.pop().expect("one element")
        } else {
            serde_json::Value::Array(json_out)
        };
        println!(
            "{}",
            serde_json::to_string_pretty(&value).expect("JSON values serialize")
        );
    }
    worst
}
