//! Fuzz the whole front end: any bytes -> `protocols::load` -> IR dump or rendered errors.
//! Nothing may panic, hang or overflow the stack; errors must be well-formed.
#![no_main]

use libfuzzer_sys::fuzz_target;
use protocols::{SourceFile, ir_display, load, render};

fuzz_target!(|data: &[u8]| {
    // The first byte picks an optional `--param` override, so that path is fuzzed too.
    let (overrides, body) = match data.split_first() {
        Some((&b, rest)) if b & 0x80 != 0 => {
            let name = ["STAGES", "K", "N", "X"][(b & 3) as usize];
            (vec![(name.to_string(), i64::from(b as i8) * 1_000_003)], rest)
        }
        _ => (Vec::new(), data),
    };
    let text = String::from_utf8_lossy(body);
    let file = SourceFile::new("fuzz.phase", text.as_ref());
    match load(&file, &overrides) {
        Ok(program) => {
            let _ = ir_display::dump(&program, Some(&file));
        }
        Err(errors) => {
            assert!(!errors.errors.is_empty());
            for e in &errors.errors {
                if let Some(s) = e.span {
                    assert!(s.start <= s.end && s.end as usize <= file.text.len());
                }
            }
            // Rendering (miette) costs more than loading; render one input in eight (chosen
            // by its length) so that the fuzzer keeps its speed and still covers the renderer.
            if data.len() % 8 == 0 {
                let mut few = errors.clone();
                few.errors.truncate(4);
                let _ = render::render(&few, false, 80);
            }
        }
    }
});
