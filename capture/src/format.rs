//! The capture file (docs/ptx.md, "Launch capture"): JSON Lines. The first line is a header
//! (`{"phasecheck_capture": 1, ...}`), every further line one kernel launch ([`Launch`]) in the
//! order the program made them. Lines are written as the launches happen, so a program that
//! crashes or hangs still leaves the launches before.

use crate::tensor_map::TensorMap;
use serde::{Deserialize, Serialize};

/// The format's version, in the header line.
pub const VERSION: u32 = 1;

/// The first line of a capture file.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Header {
    /// [`VERSION`].
    pub phasecheck_capture: u32,
    /// The program and its arguments.
    pub command: Vec<String>,
}

/// One kernel launch.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Launch {
    /// The launch's number in the file, from 0 (`FILE#N`).
    pub index: u32,
    /// The kernel's mangled name (as in the PTX `.entry`).
    pub kernel: String,
    /// The driver function that launched it (`cuLaunchKernel`, `cuLaunchKernelEx`, ...; the
    /// runtime API's launches go through them).
    pub api: String,
    pub grid: [u32; 3],
    pub block: [u32; 3],
    /// Blocks per cluster in x, y, z: the launch's cluster attribute, else the kernel's
    /// compile-time `__cluster_dims__`; absent when neither sets one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cluster: Option<[u32; 3]>,
    /// Dynamic shared memory per block, in bytes.
    pub dynamic_shared: u32,
    /// The parameters in order, with the bytes the launch passed.
    pub params: Vec<Param>,
}

/// One kernel parameter of a launch.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Param {
    /// Byte offset in the parameter buffer (`cuFuncGetParamInfo`).
    pub offset: u64,
    /// Size in bytes (`cuFuncGetParamInfo`).
    pub size: u64,
    /// The bytes, in lower-case hex (two digits a byte, in memory order).
    pub bytes: String,
    /// The tensor maps (`CUtensorMap`) found in this parameter, at their offsets in it.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub tensor_maps: Vec<TensorMap>,
}

impl Param {
    /// The bytes, decoded from hex.
    pub fn data(&self) -> Result<Vec<u8>, String> {
        from_hex(&self.bytes)
    }
}

/// Bytes as lower-case hex.
pub fn to_hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// Hex (two digits a byte) as bytes.
pub fn from_hex(s: &str) -> Result<Vec<u8>, String> {
    if !s.len().is_multiple_of(2) || !s.is_ascii() {
        return Err(format!("`{}` is not hex bytes", abbreviate(s)));
    }
    (0..s.len())
        .step_by(2)
        .map(|i| {
            u8::from_str_radix(&s[i..i + 2], 16)
                .map_err(|_| format!("`{}` is not hex bytes", abbreviate(s)))
        })
        .collect()
}

fn abbreviate(s: &str) -> String {
    if s.chars().count() > 24 {
        format!("{}...", s.chars().take(24).collect::<String>())
    } else {
        s.to_string()
    }
}

/// A parsed capture file.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Capture {
    pub header: Header,
    pub launches: Vec<Launch>,
}

/// Parse a capture file's text; `name` is for messages.
pub fn parse(text: &str, name: &str) -> Result<Capture, String> {
    let mut lines = text
        .lines()
        .enumerate()
        .filter(|(_, l)| !l.trim().is_empty());
    let (_, first) = lines
        .next()
        .ok_or_else(|| format!("{name} is empty (not a `phasecheck capture` file)"))?;
    let header: Header = serde_json::from_str(first).map_err(|e| {
        format!("{name}: line 1 is not the header of a `phasecheck capture` file: {e}")
    })?;
    if header.phasecheck_capture != VERSION {
        return Err(format!(
            "{name} is a capture file of version {}; this phasecheck reads version {VERSION}",
            header.phasecheck_capture
        ));
    }
    let mut launches = Vec::new();
    for (i, line) in lines {
        let l: Launch = serde_json::from_str(line)
            .map_err(|e| format!("{name}: line {} is not a launch: {e}", i + 1))?;
        for p in &l.params {
            p.data()
                .map_err(|e| format!("{name}: line {}: a parameter's bytes: {e}", i + 1))?;
        }
        launches.push(l);
    }
    Ok(Capture { header, launches })
}

/// One line of the file (no newline).
pub fn line<T: Serialize>(v: &T) -> String {
    // Serializing these plain structs cannot fail.
    serde_json::to_string(v).unwrap_or_default()
}
