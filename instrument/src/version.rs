//! The `.version` of a PTX module, and lowering it for an older driver's JIT.
//!
//! A driver JIT-compiles PTX up to the ISA version of its CUDA release (a 13.0 driver: 9.0) and
//! refuses a newer `.version` (`CUDA_ERROR_UNSUPPORTED_PTX_VERSION`), even when the module uses
//! nothing newer. Triton stamps its PTX with the version of the `ptxas` it bundles, which can
//! be newer than the device's driver. [`cap_version`] rewrites the directive only; a module
//! that does use a newer instruction is still refused by the JIT, with the JIT's own error.

/// A PTX ISA version, `major.minor`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub struct PtxVersion {
    pub major: u32,
    pub minor: u32,
}

impl std::fmt::Display for PtxVersion {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}.{}", self.major, self.minor)
    }
}

impl std::str::FromStr for PtxVersion {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        let bad = || format!("`{s}` is not a PTX ISA version (major.minor, e.g. 9.0)");
        let (a, b) = s.trim().split_once('.').ok_or_else(bad)?;
        Ok(PtxVersion {
            major: a.parse().map_err(|_| bad())?,
            minor: b.parse().map_err(|_| bad())?,
        })
    }
}

/// The module's `.version` directive: its line index and value.
fn find(ptx: &str) -> Result<(usize, PtxVersion), String> {
    for (i, line) in ptx.lines().enumerate() {
        let t = line.trim();
        if let Some(rest) = t.strip_prefix(".version")
            && rest.starts_with(char::is_whitespace)
        {
            return Ok((i, rest.trim().parse()?));
        }
    }
    Err("the PTX has no .version directive".into())
}

/// The module's `.version`.
pub fn version(ptx: &str) -> Result<PtxVersion, String> {
    find(ptx).map(|(_, v)| v)
}

/// `ptx` with its `.version` lowered to `max` when it is newer, and the version it had when it
/// was lowered (`None`: unchanged). Every other line is kept as it is.
pub fn cap_version(ptx: &str, max: PtxVersion) -> Result<(String, Option<PtxVersion>), String> {
    let (at, v) = find(ptx)?;
    if v <= max {
        return Ok((ptx.to_string(), None));
    }
    let mut out = String::with_capacity(ptx.len());
    for (i, line) in ptx.split_inclusive('\n').enumerate() {
        if i == at {
            let indent = &line[..line.len() - line.trim_start().len()];
            let eol = &line[line.trim_end().len()..];
            out.push_str(&format!("{indent}.version {max}{eol}"));
        } else {
            out.push_str(line);
        }
    }
    Ok((out, Some(v)))
}

#[cfg(test)]
mod tests {
    use super::*;

    const V90: PtxVersion = PtxVersion { major: 9, minor: 0 };

    #[test]
    fn a_newer_version_is_lowered_and_nothing_else_changes() {
        let ptx = "//\n.version 9.4\n.target sm_90a\n.address_size 64\n";
        let (out, was) = cap_version(ptx, V90).unwrap();
        assert_eq!(was, Some(PtxVersion { major: 9, minor: 4 }));
        assert_eq!(out, "//\n.version 9.0\n.target sm_90a\n.address_size 64\n");
    }

    #[test]
    fn an_older_or_equal_version_is_kept() {
        for v in ["8.7", "9.0"] {
            let ptx = format!(".version {v}\n.target sm_90a\n");
            assert_eq!(cap_version(&ptx, V90).unwrap(), (ptx.clone(), None));
        }
        // 10.0 is newer than 9.4 (not a string comparison).
        let (_, was) = cap_version(".version 10.0\n", "9.4".parse().unwrap()).unwrap();
        assert_eq!(
            was,
            Some(PtxVersion {
                major: 10,
                minor: 0
            })
        );
    }

    #[test]
    fn a_missing_or_bad_version_is_an_error() {
        assert!(
            cap_version(".target sm_90a\n", V90)
                .unwrap_err()
                .contains("no .version")
        );
        assert!(
            version(".version nine\n")
                .unwrap_err()
                .contains("not a PTX ISA version")
        );
        assert!("9".parse::<PtxVersion>().is_err());
    }
}
