//! A GLB writer for the hand-written test files: accessors appended to one BIN chunk.
#![allow(dead_code)] // each test file uses the accessor kinds it needs

use serde_json::{Value, json};

/// Builds a GLB: accessors over one BIN buffer.
#[derive(Default)]
pub(crate) struct Builder {
    pub(crate) bin: Vec<u8>,
    pub(crate) views: Vec<Value>,
    pub(crate) accessors: Vec<Value>,
}

impl Builder {
    pub(crate) fn raw(
        &mut self,
        bytes: &[u8],
        component_type: u32,
        ty: &str,
        count: usize,
        extra: Value,
    ) -> usize {
        while !self.bin.len().is_multiple_of(4) {
            self.bin.push(0);
        }
        self.views
            .push(json!({"buffer": 0, "byteOffset": self.bin.len(), "byteLength": bytes.len()}));
        self.bin.extend_from_slice(bytes);
        let mut acc = json!({"bufferView": self.views.len() - 1, "componentType": component_type, "type": ty, "count": count});
        if let (Value::Object(a), Value::Object(e)) = (&mut acc, extra) {
            a.extend(e);
        }
        self.accessors.push(acc);
        self.accessors.len() - 1
    }
    pub(crate) fn f32s(&mut self, v: &[f32], ty: &str, dims: usize) -> usize {
        let bytes: Vec<u8> = v.iter().flat_map(|x| x.to_le_bytes()).collect();
        self.raw(&bytes, 5126, ty, v.len() / dims, json!({}))
    }
    /// POSITION accessors need min and max.
    pub(crate) fn positions(&mut self, v: &[f32]) -> usize {
        let bytes: Vec<u8> = v.iter().flat_map(|x| x.to_le_bytes()).collect();
        let (mut lo, mut hi) = ([f32::MAX; 3], [f32::MIN; 3]);
        for (i, x) in v.iter().enumerate() {
            lo[i % 3] = lo[i % 3].min(*x);
            hi[i % 3] = hi[i % 3].max(*x);
        }
        self.raw(
            &bytes,
            5126,
            "VEC3",
            v.len() / 3,
            json!({"min": lo, "max": hi}),
        )
    }
    pub(crate) fn u8s(&mut self, v: &[u8], ty: &str, dims: usize, normalized: bool) -> usize {
        self.raw(
            v,
            5121,
            ty,
            v.len() / dims,
            json!({"normalized": normalized}),
        )
    }
    pub(crate) fn i16s(&mut self, v: &[i16], ty: &str, dims: usize, normalized: bool) -> usize {
        let bytes: Vec<u8> = v.iter().flat_map(|x| x.to_le_bytes()).collect();
        self.raw(
            &bytes,
            5122,
            ty,
            v.len() / dims,
            json!({"normalized": normalized}),
        )
    }
    pub(crate) fn glb(&self, mut doc: Value) -> Vec<u8> {
        doc["asset"] = json!({"version": "2.0"});
        doc["buffers"] = json!([{"byteLength": self.bin.len()}]);
        doc["bufferViews"] = Value::Array(self.views.clone());
        doc["accessors"] = Value::Array(self.accessors.clone());
        let mut j = serde_json::to_vec(&doc).unwrap();
        while !j.len().is_multiple_of(4) {
            j.push(b' ');
        }
        let mut bin = self.bin.clone();
        while !bin.len().is_multiple_of(4) {
            bin.push(0);
        }
        let mut out = b"glTF".to_vec();
        out.extend_from_slice(&2u32.to_le_bytes());
        out.extend_from_slice(&((28 + j.len() + bin.len()) as u32).to_le_bytes());
        out.extend_from_slice(&(j.len() as u32).to_le_bytes());
        out.extend_from_slice(b"JSON");
        out.extend_from_slice(&j);
        out.extend_from_slice(&(bin.len() as u32).to_le_bytes());
        out.extend_from_slice(b"BIN\0");
        out.extend_from_slice(&bin);
        out
    }
}
