//! 128-bit FNV-1a hashing: bone-name hashes and asset content hashes.

use glam::{Mat4, Quat, Vec3};

const FNV128_OFFSET: u128 = 0x6c62_272e_07bb_0142_62b8_2175_6295_c58d;
const FNV128_PRIME: u128 = 0x0000_0000_0100_0000_0000_0000_0000_013b;

/// The 128-bit hash of a bone name, used to match rig bones with mesh bones.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct BoneHash(pub u128);

/// Hashes a bone name (FNV-1a, 128 bits, over the UTF-8 bytes).
pub fn bone_hash(name: &str) -> BoneHash {
    let mut h = ContentHasher::new();
    h.bytes(name.as_bytes());
    BoneHash(h.state)
}

/// The 128-bit content hash of a baked asset: equal content gives equal hashes, so the same
/// model imported twice is recognised.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct ContentHash(pub u128);

/// Incremental FNV-1a (128 bits) over the bytes of an asset's content.
#[derive(Clone, Debug)]
pub struct ContentHasher {
    state: u128,
}

impl Default for ContentHasher {
    fn default() -> Self {
        Self::new()
    }
}

impl ContentHasher {
    /// A fresh hasher.
    pub fn new() -> Self {
        Self {
            state: FNV128_OFFSET,
        }
    }

    /// Feeds bytes.
    pub fn bytes(&mut self, bytes: &[u8]) -> &mut Self {
        for &b in bytes {
            self.state ^= u128::from(b);
            self.state = self.state.wrapping_mul(FNV128_PRIME);
        }
        self
    }

    /// Feeds a string with its length (so that concatenations differ).
    pub fn str(&mut self, s: &str) -> &mut Self {
        self.u64(s.len() as u64).bytes(s.as_bytes())
    }

    /// Feeds an integer.
    pub fn u64(&mut self, v: u64) -> &mut Self {
        self.bytes(&v.to_le_bytes())
    }

    /// Feeds a float by its bit pattern.
    pub fn f32(&mut self, v: f32) -> &mut Self {
        self.bytes(&v.to_bits().to_le_bytes())
    }

    /// Feeds floats by their bit patterns.
    pub fn f32s(&mut self, v: &[f32]) -> &mut Self {
        self.u64(v.len() as u64);
        for &x in v {
            self.f32(x);
        }
        self
    }

    /// Feeds a vector.
    pub fn vec3(&mut self, v: Vec3) -> &mut Self {
        self.f32(v.x).f32(v.y).f32(v.z)
    }

    /// Feeds a quaternion.
    pub fn quat(&mut self, q: Quat) -> &mut Self {
        self.f32(q.x).f32(q.y).f32(q.z).f32(q.w)
    }

    /// Feeds a matrix.
    pub fn mat4(&mut self, m: &Mat4) -> &mut Self {
        for v in m.to_cols_array() {
            self.f32(v);
        }
        self
    }

    /// The hash of everything fed so far.
    pub fn finish(&self) -> ContentHash {
        ContentHash(self.state)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fnv1a_128_matches_the_published_test_vectors() {
        // FNV-1a 128 of "" is the offset basis; of "a" it is d228cb696f1a8caf78912b704e4a8964.
        assert_eq!(bone_hash("").0, FNV128_OFFSET);
        assert_eq!(bone_hash("a").0, 0xd228_cb69_6f1a_8caf_7891_2b70_4e4a_8964);
        assert_ne!(bone_hash("spine"), bone_hash("Spine"));
    }
}
