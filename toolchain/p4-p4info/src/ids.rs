//! p4c's P4Runtime id scheme and aliases (`control-plane/p4RuntimeSymbolTable.cpp`).
//!
//! An id is `prefix << 24 | low24`: the prefix names the entity kind (`P4Ids::Prefix`), the
//! low 24 bits are an `@id` annotation's or the Jenkins one-at-a-time hash of the fully
//! qualified name. Annotated ids are placed first; the other names of a kind are then hashed in
//! byte order of their names, and a taken id moves on to hash + 1, + 2, ... (within the same
//! prefix), which is why the order of hashing matters and is fixed.

use std::collections::{BTreeMap, BTreeSet, HashMap, HashSet};

use crate::P4InfoError;

/// The entity kinds that get ids, with their `P4Ids::Prefix` values.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Kind {
    Action = 0x01,
    Table = 0x02,
    ValueSet = 0x03,
    ControllerHeader = 0x04,
    ActionProfile = 0x11,
    Counter = 0x12,
    DirectCounter = 0x13,
    Meter = 0x14,
    DirectMeter = 0x15,
    Register = 0x16,
    Digest = 0x17,
}

impl Kind {
    pub fn prefix(self) -> u32 {
        self as u32
    }

    /// How p4c's messages name the kind.
    pub fn describe(self) -> &'static str {
        match self {
            Kind::Action => "action",
            Kind::Table => "table",
            Kind::ValueSet => "value set",
            Kind::ControllerHeader => "controller packet metadata",
            Kind::ActionProfile => "action profile",
            Kind::Counter => "counter",
            Kind::DirectCounter => "direct counter",
            Kind::Meter => "meter",
            Kind::DirectMeter => "direct meter",
            Kind::Register => "register",
            Kind::Digest => "digest",
        }
    }
}

/// Jenkins one-at-a-time hash over the name's bytes, as p4c computes it.
pub fn jenkins_one_at_a_time(bytes: &[u8]) -> u32 {
    let mut hash: u32 = 0;
    for &byte in bytes {
        hash = hash.wrapping_add(u32::from(byte));
        hash = hash.wrapping_add(hash << 10);
        hash ^= hash >> 6;
    }
    hash = hash.wrapping_add(hash << 3);
    hash ^= hash >> 11;
    hash.wrapping_add(hash << 15)
}

/// Symbols collected before ids are assigned: per kind, names with their optional `@id`.
#[derive(Debug, Default)]
pub struct SymbolCollector {
    symbols: BTreeMap<Kind, Vec<(String, Option<u64>)>>,
    seen: HashSet<(Kind, String)>,
}

impl SymbolCollector {
    /// Registers `name`; a second registration of the same name and kind is ignored, as p4c
    /// does for actions copied into several controls.
    pub fn add(&mut self, kind: Kind, name: &str, id: Option<u64>) {
        if self.seen.insert((kind, name.to_string())) {
            self.symbols
                .entry(kind)
                .or_default()
                .push((name.to_string(), id));
        }
    }

    /// Assigns every id, checking `@id`s as p4c does; all problems are reported.
    pub fn assign(self) -> Result<SymbolTable, Vec<P4InfoError>> {
        let mut errors = Vec::new();
        let mut taken: BTreeSet<u32> = BTreeSet::new();
        let mut ids: HashMap<Kind, HashMap<String, u32>> = HashMap::new();
        let mut suffixes = SuffixSet::default();

        // Pass 1, in collection order: the user's ids.
        for (&kind, entries) in &self.symbols {
            for (name, id) in entries {
                suffixes.add(name);
                let Some(id) = *id else { continue };
                match annotated_id(kind, name, id) {
                    Ok(id) if taken.insert(id) => {
                        ids.entry(kind).or_default().insert(name.clone(), id);
                    }
                    Ok(id) => errors.push(P4InfoError::DuplicateId {
                        name: name.clone(),
                        id,
                    }),
                    Err(err) => errors.push(err),
                }
            }
        }
        // Pass 2, per kind and in name order: hashes with linear probing.
        for (&kind, entries) in &self.symbols {
            let assigned = ids.entry(kind).or_default();
            let mut unassigned: Vec<&String> = entries
                .iter()
                .map(|(name, _)| name)
                .filter(|name| !assigned.contains_key(*name))
                .collect();
            unassigned.sort_by(|a, b| a.as_bytes().cmp(b.as_bytes()));
            for name in unassigned {
                let start = jenkins_one_at_a_time(name.as_bytes());
                let probe = (0..=0x00ff_ffffu32)
                    .map(|step| kind.prefix() << 24 | (start.wrapping_add(step) & 0x00ff_ffff))
                    .find(|id| !taken.contains(id));
                match probe {
                    Some(id) => {
                        taken.insert(id);
                        assigned.insert(name.clone(), id);
                    }
                    None => errors.push(P4InfoError::NoIdLeft {
                        kind: kind.describe(),
                        name: name.clone(),
                    }),
                }
            }
        }
        if errors.is_empty() {
            Ok(SymbolTable { ids, suffixes })
        } else {
            Err(errors)
        }
    }
}

/// An `@id` value checked against the kind's prefix; a value without prefix gets it.
fn annotated_id(kind: Kind, name: &str, id: u64) -> Result<u32, P4InfoError> {
    let id = u32::try_from(id).map_err(|_| P4InfoError::IdNotUnsigned32 {
        name: name.to_string(),
        id,
    })?;
    let prefix = id >> 24;
    if prefix != 0 && prefix != kind.prefix() {
        return Err(P4InfoError::WrongIdPrefix {
            kind: kind.describe(),
            name: name.to_string(),
            id,
            expected_prefix: kind.prefix(),
        });
    }
    Ok(kind.prefix() << 24 | id)
}

/// Ids and aliases of every symbol.
#[derive(Debug)]
pub struct SymbolTable {
    ids: HashMap<Kind, HashMap<String, u32>>,
    suffixes: SuffixSet,
}

impl SymbolTable {
    pub fn id(&self, kind: Kind, name: &str) -> Option<u32> {
        self.ids.get(&kind)?.get(name).copied()
    }

    /// The shortest suffix of dot-separated components that no other symbol of any kind shares.
    pub fn alias(&self, name: &str) -> String {
        self.suffixes.shortest_unique_suffix(name)
    }
}

/// A trie over name components read right to left, counting the names through each node.
#[derive(Debug, Default)]
struct SuffixSet {
    names: BTreeSet<String>,
    root: SuffixNode,
}

#[derive(Debug, Default)]
struct SuffixNode {
    instances: usize,
    edges: BTreeMap<String, SuffixNode>,
}

impl SuffixSet {
    fn add(&mut self, name: &str) {
        if !self.names.insert(name.to_string()) {
            return;
        }
        let mut node = &mut self.root;
        for component in name.rsplit('.') {
            node = node.edges.entry(component.to_string()).or_default();
            node.instances += 1;
        }
    }

    fn shortest_unique_suffix(&self, name: &str) -> String {
        let components: Vec<&str> = name.split('.').collect();
        let mut needed = 0;
        let mut node = &self.root;
        for component in components.iter().rev() {
            let Some(next) = node.edges.get(*component) else {
                break;
            };
            node = next;
            needed += 1;
            if node.instances < 2 {
                break;
            }
        }
        let needed = needed.max(1);
        components[components.len() - needed..].join(".")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hash_matches_the_published_test_vectors() {
        // Test vectors of Bob Jenkins' one-at-a-time hash (Wikipedia, "Jenkins hash function").
        assert_eq!(jenkins_one_at_a_time(b"a"), 0xca2e_9442);
        assert_eq!(
            jenkins_one_at_a_time(b"The quick brown fox jumps over the lazy dog"),
            0x519e_91f5
        );
    }

    #[test]
    fn aliases_take_as_many_components_as_needed() {
        let mut set = SuffixSet::default();
        for name in [
            "ingress.on_miss",
            "egress.on_miss",
            "ingress.set_vrf",
            "a.b.c",
        ] {
            set.add(name);
        }
        assert_eq!(
            set.shortest_unique_suffix("ingress.on_miss"),
            "ingress.on_miss"
        );
        assert_eq!(set.shortest_unique_suffix("ingress.set_vrf"), "set_vrf");
        assert_eq!(set.shortest_unique_suffix("a.b.c"), "c");
    }

    #[test]
    fn colliding_hashes_probe_upwards_in_name_order() {
        let mut symbols = SymbolCollector::default();
        // The @id takes the slot "x"'s hash wants, so "x" moves one up.
        let hash = jenkins_one_at_a_time(b"x") & 0x00ff_ffff;
        symbols.add(Kind::Table, "x", None);
        symbols.add(Kind::Table, "y", Some(u64::from(hash)));
        let table = symbols.assign().unwrap();
        assert_eq!(table.id(Kind::Table, "y"), Some(0x0200_0000 | hash));
        assert_eq!(
            table.id(Kind::Table, "x"),
            Some(0x0200_0000 | ((hash + 1) & 0x00ff_ffff))
        );
    }

    #[test]
    fn id_errors_name_the_declaration() {
        let mut symbols = SymbolCollector::default();
        symbols.add(Kind::Table, "t1", Some(0x0100_0005));
        symbols.add(Kind::Table, "t2", Some(7));
        symbols.add(Kind::Table, "t3", Some(0x0200_0007));
        symbols.add(Kind::Table, "t4", Some(1 << 40));
        let errors = symbols.assign().unwrap_err();
        assert_eq!(
            errors,
            vec![
                P4InfoError::WrongIdPrefix {
                    kind: "table",
                    name: "t1".into(),
                    id: 0x0100_0005,
                    expected_prefix: 2
                },
                P4InfoError::DuplicateId {
                    name: "t3".into(),
                    id: 0x0200_0007
                },
                P4InfoError::IdNotUnsigned32 {
                    name: "t4".into(),
                    id: 1 << 40
                },
            ]
        );
    }
}
