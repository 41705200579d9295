//! Hash maps over fixed-length byte keys. Keys of up to 8 bytes (IPv4 addresses, MAC + VLAN)
//! are packed into a `u64`, keys of up to 16 (IPv6 addresses, an IPv4 5-tuple) into a `u128`,
//! so hashing and comparing stay in registers instead of following a pointer to the key
//! bytes, and the smaller entries keep big tables denser in cache.

use std::collections::hash_map::Entry;
use std::collections::HashMap;

pub(crate) type FastMap<K, V> = HashMap<K, V, foldhash::fast::RandomState>;

const PACKED64_MAX: usize = 8;
/// Longest key packed into an integer; also the longest key `Table::lookup_packed` takes.
pub const MAX_PACKED_KEY: usize = 16;
const PACKED_MAX: usize = MAX_PACKED_KEY;

pub(crate) fn pack(bytes: &[u8]) -> u128 {
    bytes.iter().fold(0, |acc, &b| (acc << 8) | u128::from(b))
}

/// A mask over the whole key, in both forms.
#[derive(Clone)]
pub(crate) struct Mask {
    pub(crate) bytes: Box<[u8]>,
    packed: u128,
    packed64: u64,
}

impl Mask {
    pub(crate) fn new(bytes: Box<[u8]>) -> Self {
        let packed = if bytes.len() <= PACKED_MAX {
            pack(&bytes)
        } else {
            0
        };
        Mask {
            bytes,
            packed,
            packed64: packed as u64,
        }
    }

    /// The mask as one number (0 for keys longer than `MAX_PACKED_KEY`).
    pub(crate) fn packed(&self) -> u128 {
        self.packed
    }
}

pub(crate) enum KeyMap<V> {
    Packed64(FastMap<u64, V>),
    Packed(FastMap<u128, V>),
    Bytes(FastMap<Box<[u8]>, V>),
}

impl<V> KeyMap<V> {
    pub(crate) fn new(key_len: usize) -> Self {
        if key_len <= PACKED64_MAX {
            KeyMap::Packed64(FastMap::default())
        } else if key_len <= PACKED_MAX {
            KeyMap::Packed(FastMap::default())
        } else {
            KeyMap::Bytes(FastMap::default())
        }
    }

    pub(crate) fn get(&self, key: &[u8]) -> Option<&V> {
        match self {
            KeyMap::Packed64(m) => m.get(&(pack(key) as u64)),
            KeyMap::Packed(m) => m.get(&pack(key)),
            KeyMap::Bytes(m) => m.get(key),
        }
    }

    pub(crate) fn get_mut(&mut self, key: &[u8]) -> Option<&mut V> {
        match self {
            KeyMap::Packed64(m) => m.get_mut(&(pack(key) as u64)),
            KeyMap::Packed(m) => m.get_mut(&pack(key)),
            KeyMap::Bytes(m) => m.get_mut(key),
        }
    }

    pub(crate) fn get_or_insert_with(&mut self, key: &[u8], f: impl FnOnce() -> V) -> &mut V {
        match self {
            KeyMap::Packed64(m) => m.entry(pack(key) as u64).or_insert_with(f),
            KeyMap::Packed(m) => m.entry(pack(key)).or_insert_with(f),
            KeyMap::Bytes(m) => m.entry(key.into()).or_insert_with(f),
        }
    }

    /// Inserts `v` for `key` unless the key is there, whose value is then the error: the
    /// duplicate check and the insert in one hash probe.
    pub(crate) fn insert_new(&mut self, key: &[u8], v: V) -> Result<(), V>
    where
        V: Copy,
    {
        fn put<K, V: Copy>(e: Entry<'_, K, V>, v: V) -> Result<(), V> {
            match e {
                Entry::Occupied(o) => Err(*o.get()),
                Entry::Vacant(x) => {
                    x.insert(v);
                    Ok(())
                }
            }
        }
        match self {
            KeyMap::Packed64(m) => put(m.entry(pack(key) as u64), v),
            KeyMap::Packed(m) => put(m.entry(pack(key)), v),
            KeyMap::Bytes(m) => put(m.entry(key.into()), v),
        }
    }

    pub(crate) fn remove(&mut self, key: &[u8]) -> Option<V> {
        match self {
            KeyMap::Packed64(m) => m.remove(&(pack(key) as u64)),
            KeyMap::Packed(m) => m.remove(&pack(key)),
            KeyMap::Bytes(m) => m.remove(key),
        }
    }

    pub(crate) fn is_empty(&self) -> bool {
        match self {
            KeyMap::Packed64(m) => m.is_empty(),
            KeyMap::Packed(m) => m.is_empty(),
            KeyMap::Bytes(m) => m.is_empty(),
        }
    }

    pub(crate) fn clear(&mut self) {
        match self {
            KeyMap::Packed64(m) => m.clear(),
            KeyMap::Packed(m) => m.clear(),
            KeyMap::Bytes(m) => m.clear(),
        }
    }

    /// Looks up `key & mask`.
    pub(crate) fn probe(&self, key: &mut Probe<'_>, mask: &Mask) -> Option<&V> {
        match (self, key) {
            (KeyMap::Packed64(m), Probe::Packed64(k)) => m.get(&(*k & mask.packed64)),
            (KeyMap::Packed(m), Probe::Packed(k)) => m.get(&(*k & mask.packed)),
            (KeyMap::Bytes(m), Probe::Bytes { key, buf }) => m.get(buf.masked(key, &mask.bytes)),
            _ => unreachable!("maps and probes of one table agree on the key form"),
        }
    }
}

/// A lookup key prepared once per lookup and masked per probe without allocating.
pub(crate) enum Probe<'a> {
    Packed64(u64),
    Packed(u128),
    Bytes { key: &'a [u8], buf: Scratch },
}

impl<'a> Probe<'a> {
    /// The probe of a key too long to pack.
    pub(crate) fn bytes(key: &'a [u8]) -> Self {
        Probe::Bytes {
            key,
            buf: Scratch::new(key.len()),
        }
    }

    /// The probe of a packed key of `key_len` bytes (at most `MAX_PACKED_KEY`).
    pub(crate) fn packed(key_len: usize, key: u128) -> Self {
        if key_len <= PACKED64_MAX {
            Probe::Packed64(key as u64)
        } else {
            Probe::Packed(key)
        }
    }
}

const INLINE_KEY: usize = 64;

/// A key-sized buffer on the stack for the usual keys, on the heap for long ones.
pub(crate) struct Scratch {
    inline: [u8; INLINE_KEY],
    heap: Vec<u8>,
    len: usize,
}

impl Scratch {
    fn new(len: usize) -> Self {
        Scratch {
            inline: [0; INLINE_KEY],
            heap: if len > INLINE_KEY {
                vec![0; len]
            } else {
                Vec::new()
            },
            len,
        }
    }

    fn masked(&mut self, key: &[u8], mask: &[u8]) -> &[u8] {
        let buf = if self.len > INLINE_KEY {
            &mut self.heap[..]
        } else {
            &mut self.inline[..self.len]
        };
        for ((b, k), m) in buf.iter_mut().zip(key).zip(mask) {
            *b = k & m;
        }
        buf
    }
}

/// Longest stored key kept inline: an IPv6 address with a few exact fields (a neighbour's
/// router interface and address take 18 bytes).
const INLINE_STORED: usize = 22;

/// An entry's key as the table stores it, inline when short: a stored key costs no allocation
/// for the keys bulk writes are made of, and one beyond.
pub(crate) enum KeyBytes {
    Inline { len: u8, bytes: [u8; INLINE_STORED] },
    Heap(Box<[u8]>),
}

impl KeyBytes {
    pub(crate) fn zeroed(len: usize) -> Self {
        if len <= INLINE_STORED {
            KeyBytes::Inline {
                len: len as u8,
                bytes: [0; INLINE_STORED],
            }
        } else {
            KeyBytes::Heap(vec![0; len].into())
        }
    }
}

impl std::ops::Deref for KeyBytes {
    type Target = [u8];
    fn deref(&self) -> &[u8] {
        match self {
            KeyBytes::Inline { len, bytes } => &bytes[..usize::from(*len)],
            KeyBytes::Heap(b) => b,
        }
    }
}

impl std::ops::DerefMut for KeyBytes {
    fn deref_mut(&mut self) -> &mut [u8] {
        match self {
            KeyBytes::Inline { len, bytes } => &mut bytes[..usize::from(*len)],
            KeyBytes::Heap(b) => b,
        }
    }
}
