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
    /// `CUtensorMapDataType` (0 = UINT8 ... 12 = TFLOAT32_FTZ, 13.. sub-byte types); not
    /// decoded from bytes alone.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub data_type: Option<u32>,
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
            data_type: Some(self.data_type),
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
///
/// Field positions, read off the seven maps of `capture/tests/fixtures/tma_launch.cu` encoded
/// by the driver 580.159.04 (CUDA 13.0) on an H100 (ranks 1 to 5, element sizes 1 to 8, every
/// swizzle; docs/gpu.md), little-endian:
///
/// | bytes | field |
/// |---|---|
/// | 0..8 | global address |
/// | 8..12, bits 4..6 | rank - 1 |
/// | 8..12, bits 13..14 | swizzle (`CUtensorMapSwizzle`) |
/// | 12..28, u32 each | global strides of dimensions 1..4, in units of 16 bytes |
/// | 32..52, u32 each | global dimensions - 1 |
/// | 55..60, a byte each | box dimensions - 1 |
/// | 64..68 | bytes one copy moves (the box) |
///
/// The element size is the box's bytes over its elements; the element type's code and the
/// element strides are not decoded. Bytes that do not fit (a rank over 5, a box over 256, a box
/// size that is not elements times 1, 2, 4 or 8 bytes, the last 48 bytes not zero) are not a map.
pub fn decode_bytes(bytes: &[u8], offset: u64) -> Option<TensorMap> {
    let b: &[u8; 128] = bytes.get(..128)?.try_into().ok()?;
    let u32_at = |o: usize| u32::from_le_bytes([b[o], b[o + 1], b[o + 2], b[o + 3]]);
    if b[80..].iter().any(|&x| x != 0) || u32_at(0) == 0 && u32_at(4) == 0 {
        return None;
    }
    let word = u32_at(8);
    let rank = ((word >> 4) & 7) + 1;
    if rank > 5 {
        return None;
    }
    let r = rank as usize;
    let swizzle = (word >> 13) & 3;
    let global_dims: Vec<u64> = (0..r).map(|k| u32_at(32 + 4 * k) as u64 + 1).collect();
    let global_strides: Vec<u64> = (1..r).map(|k| u32_at(8 + 4 * k) as u64 * 16).collect();
    let box_dims: Vec<u32> = (0..r).map(|k| b[55 + k] as u32 + 1).collect();
    if b[55 + r..64].iter().any(|&x| x != 0)
        || (r..5).any(|k| u32_at(32 + 4 * k) != 0)
        || box_dims
            .iter()
            .zip(&global_dims)
            .any(|(&x, &g)| x as u64 > g)
    {
        return None;
    }
    let total = u32_at(64) as u64;
    let elements: u64 = box_dims.iter().map(|&d| d as u64).product();
    let size = [1u32, 2, 4, 8]
        .into_iter()
        .find(|&e| elements * e as u64 == total)?;
    Some(TensorMap {
        offset,
        source: Source::Heuristic,
        data_type: None,
        element_size: Some(size),
        rank,
        global_dims,
        global_strides,
        box_dims,
        element_strides: Vec::new(),
        interleave: 0,
        swizzle,
        box_bytes: Some(total),
        heuristic: [
            "rank",
            "global_dims",
            "global_strides",
            "box_dims",
            "element_size",
            "swizzle",
            "box_bytes",
        ]
        .map(String::from)
        .to_vec(),
        raw: crate::format::to_hex(b),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::format;

    /// The maps of the committed capture (recorded on an H100), each with the arguments the
    /// program encoded it with.
    fn recorded() -> Vec<TensorMap> {
        let text = include_str!("../tests/fixtures/tma_launch.capture.json");
        let cap = format::parse(text, "tma_launch.capture.json").expect("parses");
        cap.launches
            .iter()
            .flat_map(|l| l.params.iter().flat_map(|p| p.tensor_maps.clone()))
            .collect()
    }

    #[test]
    fn the_bytes_decode_to_the_arguments_of_every_recorded_map() {
        let maps = recorded();
        assert_eq!(maps.len(), 7);
        let mut ranks = std::collections::BTreeSet::new();
        for m in &maps {
            assert_eq!(m.source, Source::Encode);
            let raw = format::from_hex(&m.raw).expect("hex");
            let d = decode_bytes(&raw, 0).unwrap_or_else(|| panic!("not decoded: {m:?}"));
            assert_eq!(d.rank, m.rank, "{m:?}");
            assert_eq!(d.global_dims, m.global_dims, "{m:?}");
            assert_eq!(d.global_strides, m.global_strides, "{m:?}");
            assert_eq!(d.box_dims, m.box_dims, "{m:?}");
            assert_eq!(d.element_size, m.element_size, "{m:?}");
            assert_eq!(d.swizzle, m.swizzle, "{m:?}");
            assert_eq!(d.box_bytes, m.box_bytes, "{m:?}");
            ranks.insert(d.rank);
        }
        assert_eq!(ranks.len(), 5, "ranks 1 to 5 are all covered");
    }

    #[test]
    fn bytes_that_are_not_a_map_are_not_decoded() {
        assert_eq!(decode_bytes(&[0u8; 128], 0), None);
        assert_eq!(decode_bytes(&[0u8; 64], 0), None);
        let maps = recorded();
        let good = format::from_hex(&maps[0].raw).unwrap();
        assert!(decode_bytes(&good, 0).is_some());
        let mut bad = good.clone();
        bad[64] ^= 1; // box bytes no longer elements times a size
        assert_eq!(decode_bytes(&bad, 0), None);
        let mut bad = good.clone();
        bad[100] = 1; // the tail is zero in every map
        assert_eq!(decode_bytes(&bad, 0), None);
        let mut bad = good;
        bad[8] |= 0x70; // rank 8
        assert_eq!(decode_bytes(&bad, 0), None);
    }

    #[test]
    fn find_looks_at_every_64_byte_offset() {
        let maps = recorded();
        let raw = format::from_hex(&maps[2].raw).unwrap();
        let mut param = vec![0u8; 64];
        param.extend(&raw);
        param.extend([0u8; 16]);
        let found = find(&param, &[], true);
        assert_eq!(found.len(), 1);
        assert_eq!(
            (found[0].offset, found[0].box_bytes),
            (64, maps[2].box_bytes)
        );
        assert!(find(&param, &[], false).is_empty());
    }
}
