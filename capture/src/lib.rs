//! Kernel launches recorded by `phasecheck capture` (docs/ptx.md, "Launch capture").
//!
//! [`format`]: the capture file (JSON Lines: a header, then one launch a line).
//! [`tensor_map`]: what is known of each `CUtensorMap` parameter (box, element size, ...).
//! [`select`] and [`resolve`]: `--launch FILE[#N]` for the PTX front end: the launch of the
//! kernel, and the values it answers the front end's questions with (block, cluster, the bytes
//! of every parameter, the bytes one copy through each tensor map moves).
//!
//! [`fuzz`]: what `phasecheck fuzz --app` shares with the injection library (the instrumented
//! kernel's globals and stuck records, the report file).
//!
//! The injection library that writes the file is the `capture-inject` crate.

pub mod format;
pub mod fuzz;
pub mod record;
pub mod tensor_map;

use format::{Capture, Launch};
use std::collections::BTreeMap;
use std::path::PathBuf;

/// `FILE#N` -> (`FILE`, `Some(N)`); `FILE` -> (`FILE`, `None`).
pub fn parse_spec(spec: &str) -> Result<(PathBuf, Option<u32>), String> {
    match spec.rsplit_once('#') {
        Some((file, n)) if !file.is_empty() => {
            let n = n.trim().parse::<u32>().map_err(|_| {
                format!("--launch {spec}: `#{n}` is not a launch number (`FILE#0` is the first)")
            })?;
            Ok((PathBuf::from(file), Some(n)))
        }
        _ => Ok((PathBuf::from(spec), None)),
    }
}

fn describe(l: &Launch) -> String {
    format!(
        "#{} {} (grid {}, block {})",
        l.index,
        l.kernel,
        dims(l.grid),
        dims(l.block)
    )
}

fn dims(d: [u32; 3]) -> String {
    match d {
        [x, 1, 1] => x.to_string(),
        [x, y, 1] => format!("{x}x{y}"),
        [x, y, z] => format!("{x}x{y}x{z}"),
    }
}

/// The launch `--launch` means: launch `n` if given (it must be of a kernel the PTX defines),
/// else the one launch of a kernel in `kernels` (the PTX's `.entry` names; `kernel` narrows
/// them, as `--kernel` does). Launches with the same kernel, sizes and bytes count as one.
pub fn select<'a>(
    cap: &'a Capture,
    name: &str,
    n: Option<u32>,
    kernels: &[String],
    kernel: Option<&str>,
) -> Result<&'a Launch, String> {
    let wanted = |k: &str| kernels.iter().any(|p| p == k) && kernel.is_none_or(|w| w == k);
    let listing = || {
        let mut seen = BTreeMap::new();
        for l in &cap.launches {
            seen.entry(l.kernel.as_str()).or_insert(l.index);
        }
        seen.iter()
            .map(|(k, i)| format!("#{i} {k}"))
            .collect::<Vec<_>>()
            .join(", ")
    };
    if let Some(n) = n {
        let l = cap.launches.iter().find(|l| l.index == n).ok_or_else(|| {
            format!(
                "{name} has no launch #{n} (it has {} launches, #0 to #{})",
                cap.launches.len(),
                cap.launches.len().saturating_sub(1)
            )
        })?;
        if !wanted(&l.kernel) {
            return Err(format!(
                "launch #{n} of {name} is of kernel `{}`, which {} (the PTX's kernels: {})",
                l.kernel,
                if kernels.contains(&l.kernel) {
                    "is not the --kernel given"
                } else {
                    "the PTX does not define"
                },
                kernels.join(", ")
            ));
        }
        return Ok(l);
    }
    let matching: Vec<&Launch> = cap.launches.iter().filter(|l| wanted(&l.kernel)).collect();
    let Some(first) = matching.first() else {
        return Err(if cap.launches.is_empty() {
            format!("{name} records no launch")
        } else {
            format!(
                "{name} has no launch of {} (its launches: {})",
                match kernel {
                    Some(k) => format!("kernel `{k}`"),
                    None => format!("the PTX's kernels ({})", kernels.join(", ")),
                },
                listing()
            )
        });
    };
    let same = |a: &Launch, b: &Launch| {
        (
            &a.kernel,
            a.grid,
            a.block,
            a.cluster,
            a.dynamic_shared,
            &a.params,
        ) == (
            &b.kernel,
            b.grid,
            b.block,
            b.cluster,
            b.dynamic_shared,
            &b.params,
        )
    };
    let different: Vec<&&Launch> = matching.iter().filter(|l| !same(l, first)).collect();
    if !different.is_empty() {
        let list: Vec<String> = matching.iter().take(8).map(|l| describe(l)).collect();
        return Err(format!(
            "{name} has {} different launches of the PTX's kernels: choose one with \
             `--launch {name}#N` ({}{})",
            matching.len(),
            list.join(", "),
            if matching.len() > 8 { ", ..." } else { "" }
        ));
    }
    Ok(first)
}

/// What a launch answers the PTX front end with.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Resolved {
    /// The kernel's mangled name.
    pub kernel: String,
    pub block: [u32; 3],
    /// Blocks per cluster (the product of the cluster's dimensions); `None` when the launch
    /// sets none (the front end then takes the kernel's own, else 1).
    pub cluster: Option<u32>,
    /// Every parameter's bytes, by parameter index.
    pub param_bytes: Vec<(u32, Vec<u8>)>,
    /// (parameter index, byte offset of the map in it) -> bytes one copy through it moves.
    pub map_bytes: Vec<((u32, u64), i64)>,
    /// Said in the extracted protocol's header: which launch, and which maps were decoded
    /// heuristically.
    pub notes: Vec<String>,
}

/// The values of launch `l` (of file `name`).
pub fn resolve(l: &Launch, name: &str) -> Result<Resolved, String> {
    let mut param_bytes = Vec::new();
    let mut map_bytes = Vec::new();
    let mut notes = vec![format!(
        "the launch is {name}#{}: kernel {}, grid {}, block {}{}, {} bytes of dynamic shared \
         memory",
        l.index,
        l.kernel,
        dims(l.grid),
        dims(l.block),
        l.cluster
            .map_or(String::new(), |c| format!(", cluster {}", dims(c))),
        l.dynamic_shared
    )];
    for (i, p) in l.params.iter().enumerate() {
        let data = p.data()?;
        // Maps the program encoded are recorded; others are decoded here from the bytes.
        let mut maps = p.tensor_maps.clone();
        for m in tensor_map::find(&data, &[], true) {
            if !maps.iter().any(|k| k.offset == m.offset) {
                maps.push(m);
            }
        }
        for m in maps {
            match m.box_bytes {
                Some(b) => {
                    map_bytes.push(((i as u32, m.offset), b as i64));
                    if m.source == tensor_map::Source::Heuristic {
                        notes.push(format!(
                            "the tensor map in parameter {i} at byte {} is decoded from its \
                             bytes (its layout is not documented; fields {}): a copy through it \
                             moves {b} bytes",
                            m.offset,
                            m.heuristic.join(", ")
                        ));
                    }
                }
                None => notes.push(format!(
                    "the tensor map in parameter {i} at byte {} has element type {:?}, whose \
                     size in bytes is not whole: its copies' sizes are not taken from it",
                    m.offset, m.data_type
                )),
            }
        }
        param_bytes.push((i as u32, data));
    }
    Ok(Resolved {
        kernel: l.kernel.clone(),
        block: l.block,
        cluster: l.cluster.map(|[x, y, z]| x * y * z),
        param_bytes,
        map_bytes,
        notes,
    })
}

/// Read `FILE[#N]` and resolve the launch for a PTX whose kernels are `kernels`.
pub fn load(spec: &str, kernels: &[String], kernel: Option<&str>) -> Result<Resolved, String> {
    let (path, n) = parse_spec(spec)?;
    let name = path.display().to_string();
    let text = std::fs::read_to_string(&path).map_err(|e| format!("cannot read {name}: {e}"))?;
    let cap = format::parse(&text, &name)?;
    let l = select(&cap, &name, n, kernels, kernel)?;
    resolve(l, &name)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cap() -> Capture {
        let text = include_str!("../tests/fixtures/tma_launch.capture.json");
        format::parse(text, "cap.json").expect("parses")
    }

    fn names(k: &[&str]) -> Vec<String> {
        k.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn spec_takes_an_optional_launch_number() {
        assert_eq!(
            parse_spec("a.json").unwrap(),
            (PathBuf::from("a.json"), None)
        );
        assert_eq!(
            parse_spec("dir/a.json#12").unwrap(),
            (PathBuf::from("dir/a.json"), Some(12))
        );
        assert!(
            parse_spec("a.json#x")
                .unwrap_err()
                .contains("`#x` is not a launch number")
        );
    }

    #[test]
    fn a_kernel_launched_once_needs_no_number() {
        let c = cap();
        let all = names(&["tma_tiles", "tma_multicast", "probe"]);
        let l = select(&c, "cap.json", None, &all, Some("tma_multicast")).unwrap();
        assert_eq!(l.index, 1);
        let l = select(&c, "cap.json", None, &names(&["tma_tiles"]), None).unwrap();
        assert_eq!(l.index, 0);
    }

    #[test]
    fn ambiguous_and_absent_launches_are_errors_that_say_what_there_is() {
        let c = cap();
        let all = names(&["tma_tiles", "tma_multicast", "probe"]);
        let e = select(&c, "cap.json", None, &all, None).unwrap_err();
        assert!(e.contains("7 different launches"), "{e}");
        assert!(e.contains("--launch cap.json#N"), "{e}");
        let e = select(&c, "cap.json", None, &names(&["other"]), None).unwrap_err();
        assert!(
            e.contains("has no launch of the PTX's kernels (other)"),
            "{e}"
        );
        assert!(e.contains("#0 tma_tiles"), "{e}");
        let e = select(&c, "cap.json", Some(2), &names(&["tma_tiles"]), None).unwrap_err();
        assert!(
            e.contains("is of kernel `probe`, which the PTX does not define"),
            "{e}"
        );
        let e = select(&c, "cap.json", Some(9), &all, None).unwrap_err();
        assert!(
            e.contains("has no launch #9 (it has 7 launches, #0 to #6)"),
            "{e}"
        );
    }

    #[test]
    fn resolve_gives_every_parameter_and_each_maps_box() {
        let c = cap();
        let r = resolve(&c.launches[1], "cap.json").unwrap();
        assert_eq!((r.block, r.cluster), ([64, 1, 1], Some(2)));
        assert_eq!(r.param_bytes.len(), 3);
        assert_eq!(r.param_bytes[1], (1, vec![2, 0, 0, 0]));
        assert_eq!(r.map_bytes, vec![((0, 0), 4096)]);
        assert!(r.notes[0].contains("cap.json#1: kernel tma_multicast, grid 2, block 64"));
    }

    #[test]
    fn a_map_the_program_did_not_encode_is_decoded_and_said_so() {
        let mut c = cap();
        c.launches[0].params[0].tensor_maps.clear();
        let r = resolve(&c.launches[0], "cap.json").unwrap();
        assert_eq!(r.map_bytes, vec![((0, 0), 4096)]);
        assert!(
            r.notes.iter().any(|n| n.contains("decoded from its bytes")),
            "{:?}",
            r.notes
        );
    }

    #[test]
    fn a_wrong_file_is_a_clear_error() {
        let e = format::parse("", "x.json").unwrap_err();
        assert!(e.contains("x.json is empty"), "{e}");
        let e = format::parse("{\"phasecheck_capture\":7,\"command\":[]}\n", "x.json").unwrap_err();
        assert!(e.contains("version 7"), "{e}");
        let e = format::parse(
            "{\"phasecheck_capture\":1,\"command\":[]}\n{\"index\":0}\n",
            "x.json",
        )
        .unwrap_err();
        assert!(e.contains("line 2 is not a launch"), "{e}");
    }
}
