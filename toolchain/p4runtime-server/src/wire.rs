//! Write requests as they come off the wire. The generated `p4.v1.WriteRequest` decodes every
//! update into its own tree of messages and copies each byte string, which cost more than the
//! rest of a write together. Here the request is decoded with its updates left encoded (slices
//! of the received buffer, not copies), and [`PlainEntry::read`] reads the updates bulk writes are
//! made of (a table entry's key, direct action and priority) straight from those bytes: no
//! message is built and nothing is copied or allocated, so the key and action data the engine
//! gets are made in one step from the wire. Any other update, and any update this reader does
//! not take exactly as prost would (a field given twice where prost merges, a wire type it
//! would refuse), is decoded in full instead (`p4runtime_proto`'s `Update`), so errors and
//! semantics do not depend on the path.

use std::ops::Range;

use bytes::{Buf, Bytes};
use p4runtime_proto::p4runtime::Uint128;
use prost::Message;
use smallvec::SmallVec;

/// `p4.v1.WriteRequest` with its updates encoded: the received body and where each update lies
/// in it. prost's repeated `bytes` field made a `Bytes` handle per update and grew a `Vec` of
/// them (about 270 instructions an update); the top level read here costs a few varints and one
/// range an update.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct WriteRequest {
    pub device_id: u64,
    pub role: String,
    pub election_id: Option<Uint128>,
    pub atomicity: i32,
    body: Bytes,
    /// Each a `p4.v1.Update`'s bytes in `body`, in the order given.
    updates: Vec<Range<usize>>,
}

/// The same message as prost decodes it, for requests the top level reader leaves to prost.
#[derive(Clone, PartialEq, prost::Message)]
struct Generic {
    #[prost(uint64, tag = "1")]
    device_id: u64,
    /// Deprecated for `role` and ignored, as the server ignores it; a wrong wire type is still
    /// an error.
    #[prost(uint64, tag = "2")]
    role_id: u64,
    #[prost(string, tag = "6")]
    role: String,
    #[prost(message, optional, tag = "3")]
    election_id: Option<Uint128>,
    #[prost(bytes = "bytes", repeated, tag = "4")]
    updates: Vec<Bytes>,
    #[prost(int32, tag = "5")]
    atomicity: i32,
}

impl WriteRequest {
    /// Decodes `body` as prost decodes a `p4.v1.WriteRequest`, but leaves the updates encoded
    /// where they are. What the reader does not take exactly as prost would (a top-level group,
    /// an `election_id` given twice, which prost merges, a wire type prost refuses, a role that
    /// is not UTF-8) is decoded by prost, so the result and the errors are prost's.
    pub fn decode(body: Bytes) -> Result<WriteRequest, prost::DecodeError> {
        if let Some(r) = Self::read(&body) {
            return Ok(r);
        }
        let g = Generic::decode(body)?;
        Ok(Self::of_updates(
            WriteRequest {
                device_id: g.device_id,
                role: g.role,
                election_id: g.election_id,
                atomicity: g.atomicity,
                ..Default::default()
            },
            g.updates.iter().map(|u| &u[..]),
        ))
    }

    /// The top level of `body` in one pass, or `None` for what [`WriteRequest::decode`] leaves
    /// to prost.
    fn read(body: &Bytes) -> Option<WriteRequest> {
        let mut r = WriteRequest {
            body: body.clone(),
            ..Default::default()
        };
        let mut election = None;
        for f in Fields(body) {
            match f? {
                (1, Val::Varint(v)) => r.device_id = v,
                // The deprecated role_id, which the server ignores.
                (2, Val::Varint(_)) => {}
                (4, Val::Len(u)) => {
                    let start = u.as_ptr() as usize - body.as_ptr() as usize;
                    r.updates.push(start..start + u.len());
                }
                (5, Val::Varint(v)) => r.atomicity = v as i32,
                (6, Val::Len(s)) => r.role = std::str::from_utf8(s).ok()?.to_owned(),
                (3, Val::Len(e)) => once(&mut election, e)?,
                (1..=6, _) => return None,
                _ => {}
            }
        }
        if let Some(e) = election {
            r.election_id = Some(Uint128::decode(e).ok()?);
        }
        Some(r)
    }

    /// `head` with `updates` (each an encoded `p4.v1.Update`) copied into one body.
    fn of_updates<'a>(head: WriteRequest, updates: impl Iterator<Item = &'a [u8]>) -> WriteRequest {
        let mut body = Vec::new();
        let mut ranges = Vec::new();
        for u in updates {
            ranges.push(body.len()..body.len() + u.len());
            body.extend_from_slice(u);
        }
        WriteRequest {
            body: body.into(),
            updates: ranges,
            ..head
        }
    }

    /// The updates, each an encoded `p4.v1.Update`, in the order given.
    pub fn updates(&self) -> impl ExactSizeIterator<Item = &[u8]> {
        self.updates.iter().map(|r| &self.body[r.clone()])
    }
}

impl From<p4runtime_proto::p4runtime::WriteRequest> for WriteRequest {
    /// For a request that arrived decoded (the `P4Runtime` trait's `write`).
    fn from(r: p4runtime_proto::p4runtime::WriteRequest) -> WriteRequest {
        let encoded: Vec<Vec<u8>> = r.updates.iter().map(Message::encode_to_vec).collect();
        Self::of_updates(
            WriteRequest {
                device_id: r.device_id,
                role: r.role,
                election_id: r.election_id,
                atomicity: r.atomicity,
                ..Default::default()
            },
            encoded.iter().map(|u| &u[..]),
        )
    }
}

/// tonic's codec for Write: the request read by [`WriteRequest::decode`] from the received
/// body, taken whole (a handle on tonic's buffer, not a copy); the response as prost encodes it.
#[derive(Default)]
pub struct WriteCodec;

pub struct WriteDecoder;

impl tonic::codec::Codec for WriteCodec {
    type Encode = p4runtime_proto::p4runtime::WriteResponse;
    type Decode = WriteRequest;
    type Encoder = tonic_prost::ProstEncoder<Self::Encode>;
    type Decoder = WriteDecoder;

    fn encoder(&mut self) -> Self::Encoder {
        tonic_prost::ProstEncoder::default()
    }

    fn decoder(&mut self) -> WriteDecoder {
        WriteDecoder
    }
}

impl tonic::codec::Decoder for WriteDecoder {
    type Item = WriteRequest;
    type Error = tonic::Status;

    fn decode(
        &mut self,
        buf: &mut tonic::codec::DecodeBuf<'_>,
    ) -> Result<Option<WriteRequest>, tonic::Status> {
        let body = buf.copy_to_bytes(buf.remaining());
        // As tonic's prost decoder reports a message that does not decode.
        WriteRequest::decode(body)
            .map(Some)
            .map_err(|e| tonic::Status::internal(e.to_string()))
    }
}

/// One match field as a client gave it, from either decoder (`p4runtime_proto`'s or
/// [`PlainEntry::read`]).
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum MatchRef<'a> {
    Exact(&'a [u8]),
    Lpm(&'a [u8], i32),
    /// Value, mask.
    Ternary(&'a [u8], &'a [u8]),
    /// Low, high.
    Range(&'a [u8], &'a [u8]),
    Optional(&'a [u8]),
    /// An architecture-specific match (`other`).
    Other,
}

/// A `p4.v1.Update` of a plain table entry, read in place: its type, a `TableEntry` that sets
/// its table, match fields, priority and a direct `Action`, and nothing else. Match fields and
/// parameters are collected in one pass (inline up to 8 each: no allocation); a batch reads all
/// its updates into one, so nothing is moved either.
#[derive(Default)]
pub struct PlainEntry<'a> {
    pub r#type: i32,
    pub table_id: u32,
    pub priority: i32,
    /// The `Action`'s id; `None` when the entry has no action (as a DELETE needs none).
    pub action_id: Option<u32>,
    /// (field id, match) of each `FieldMatch`, in the order given.
    pub matches: SmallVec<[(u32, Option<MatchRef<'a>>); 8]>,
    /// (param id, value) of each `Action.Param`, in the order given.
    pub params: SmallVec<[(u32, &'a [u8]); 8]>,
}

/// A field's value by wire type; fixed-width values are skipped (no field read here has one).
#[derive(Clone, Copy)]
enum Val<'a> {
    Varint(u64),
    Len(&'a [u8]),
    Fixed,
}

/// A varint as prost's `decode_varint` takes one (at most ten bytes, the tenth holding bit 63
/// only), or `None` where prost refuses it. Most are one byte: tags, ids under 128, lengths.
#[inline(always)]
fn varint(buf: &mut &[u8]) -> Option<u64> {
    let (&b, rest) = buf.split_first()?;
    if b < 0x80 {
        *buf = rest;
        return Some(u64::from(b));
    }
    let mut v = u64::from(b & 0x7f);
    for (i, &b) in rest.iter().take(9).enumerate() {
        v |= u64::from(b & 0x7f) << (7 * (i + 1));
        if b < 0x80 {
            if i == 8 && b > 1 {
                return None;
            }
            *buf = &rest[i + 1..];
            return Some(v);
        }
    }
    None
}

/// The fields of an encoded message: `Some((tag, value))` each, then one `None` if the rest
/// does not decode (groups included: prost would skip them, this reader leaves them to it).
#[derive(Clone)]
struct Fields<'a>(&'a [u8]);

impl<'a> Iterator for Fields<'a> {
    type Item = Option<(u32, Val<'a>)>;

    #[inline(always)]
    fn next(&mut self) -> Option<Self::Item> {
        if self.0.is_empty() {
            return None;
        }
        let field = self.field();
        if field.is_none() {
            self.0 = &[];
        }
        Some(field)
    }
}

impl<'a> Fields<'a> {
    /// One field, with its key checked as prost's `decode_key` checks it (at most 32 bits, tag
    /// above 0, a wire type it knows).
    #[inline(always)]
    fn field(&mut self) -> Option<(u32, Val<'a>)> {
        let key = u32::try_from(varint(&mut self.0)?).ok()?;
        let tag = key >> 3;
        if tag == 0 {
            return None;
        }
        let val = match key & 7 {
            0 => Val::Varint(varint(&mut self.0)?),
            2 => {
                let len = usize::try_from(varint(&mut self.0)?).ok()?;
                let (bytes, rest) = self.0.split_at_checked(len)?;
                self.0 = rest;
                Val::Len(bytes)
            }
            1 => {
                self.0 = self.0.get(8..)?;
                Val::Fixed
            }
            5 => {
                self.0 = self.0.get(4..)?;
                Val::Fixed
            }
            // Groups (3, 4), and 6 and 7, which are no wire type.
            _ => return None,
        };
        Some((tag, val))
    }
}

/// `Some` once per message field `tag` may hold: a second occurrence, which prost would merge
/// into the first, leaves the update to prost.
fn once<T>(slot: &mut Option<T>, v: T) -> Option<()> {
    match slot {
        Some(_) => None,
        None => {
            *slot = Some(v);
            Some(())
        }
    }
}

impl<'a> PlainEntry<'a> {
    /// Reads `update` into `self`, or `None` for anything else (another entity, a table entry
    /// that sets more, an action given by member, group or action set, bytes that do not
    /// decode), which leaves `self` partly written.
    pub fn read(&mut self, update: &'a [u8]) -> Option<()> {
        self.matches.clear();
        self.params.clear();
        let (mut ty, mut entity) = (0, None);
        for f in Fields(update) {
            match f? {
                (1, Val::Varint(v)) => ty = v as i32,
                (2, Val::Len(e)) => once(&mut entity, e)?,
                // Known tags of another wire type: prost refuses them.
                (1 | 2, _) => return None,
                _ => {}
            }
        }
        let mut entry = None;
        for f in Fields(entity?) {
            match f? {
                (2, Val::Len(te)) => once(&mut entry, te)?,
                (1..=12, _) => return None,
                _ => {}
            }
        }
        let (mut table_id, mut priority, mut action) = (0, 0, None);
        for f in Fields(entry?) {
            match f? {
                (1, Val::Varint(v)) => table_id = v as u32,
                (2, Val::Len(m)) => self.matches.push(field_match(m)?),
                (3, Val::Len(a)) => once(&mut action, a)?,
                (4, Val::Varint(v)) => priority = v as i32,
                (1..=13, _) => return None,
                _ => {}
            }
        }
        let mut inner = None;
        for f in Fields(action.unwrap_or_default()) {
            match f? {
                (1, Val::Len(a)) => once(&mut inner, a)?,
                (1..=4, _) => return None,
                _ => {}
            }
        }
        self.action_id = match inner {
            None => None,
            Some(a) => {
                let mut id = 0;
                for f in Fields(a) {
                    match f? {
                        (1, Val::Varint(v)) => id = v as u32,
                        (4, Val::Len(p)) => self.params.push(param(p)?),
                        (1 | 4, _) => return None,
                        _ => {}
                    }
                }
                Some(id)
            }
        };
        (self.r#type, self.table_id, self.priority) = (ty, table_id, priority);
        Some(())
    }
}

/// A `FieldMatch`: its field id and match (`None` when no match type is set).
fn field_match(m: &[u8]) -> Option<(u32, Option<MatchRef<'_>>)> {
    let (mut id, mut kind) = (0, None);
    for f in Fields(m) {
        match f? {
            (1, Val::Varint(v)) => id = v as u32,
            (tag @ (2 | 3 | 4 | 6 | 7), Val::Len(b)) => once(&mut kind, (tag, b))?,
            // `other` (an Any, which prost decodes and may refuse) and wrong wire types.
            (1..=7 | 100, _) => return None,
            _ => {}
        }
    }
    let Some((tag, b)) = kind else {
        return Some((id, None));
    };
    // Exact, LPM and optional carry (1: value); ternary (1: value, 2: mask), range (1: low,
    // 2: high); LPM (2: prefix_len) as a varint.
    let (mut first, mut second, mut plen): (&[u8], &[u8], i32) = (&[], &[], 0);
    for f in Fields(b) {
        match (tag, f?) {
            (_, (1, Val::Len(v))) => first = v,
            (3 | 6, (2, Val::Len(v))) => second = v,
            (4, (2, Val::Varint(v))) => plen = v as i32,
            (_, (1, _)) | (3 | 4 | 6, (2, _)) => return None,
            _ => {}
        }
    }
    let m = match tag {
        2 => MatchRef::Exact(first),
        3 => MatchRef::Ternary(first, second),
        4 => MatchRef::Lpm(first, plen),
        6 => MatchRef::Range(first, second),
        _ => MatchRef::Optional(first),
    };
    Some((id, Some(m)))
}

/// An `Action.Param`: (param id, value).
fn param(p: &[u8]) -> Option<(u32, &[u8])> {
    let (mut id, mut value): (u32, &[u8]) = (0, &[]);
    for f in Fields(p) {
        match f? {
            (2, Val::Varint(v)) => id = v as u32,
            (3, Val::Len(v)) => value = v,
            (2 | 3, _) => return None,
            _ => {}
        }
    }
    Some((id, value))
}

#[cfg(test)]
mod tests {
    use super::*;
    use p4runtime_proto::p4runtime::{
        action, entity, field_match as fm, table_action, update, Action, CounterEntry, Entity,
        FieldMatch, TableAction, TableEntry, Update,
    };

    fn plain_entry(update: &[u8]) -> Option<PlainEntry<'_>> {
        let mut e = PlainEntry::default();
        e.read(update).map(|()| e)
    }

    /// Varints as prost reads them: one to ten bytes, the tenth at most 1; truncated or longer
    /// ones refused.
    #[test]
    fn varints_as_prost_reads_them() {
        let mut cases: Vec<Vec<u8>> = vec![
            vec![],
            vec![0],
            vec![0x7f],
            vec![0x80],
            vec![0x80, 0],
            vec![0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 1],
            vec![0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 1],
            vec![0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 2],
            vec![0xff; 10],
            vec![0xff; 11],
        ];
        for v in [
            1u64,
            127,
            128,
            300,
            16_777_217,
            33_554_433,
            u32::MAX.into(),
            u64::MAX,
        ] {
            let mut b = Vec::new();
            prost::encoding::encode_varint(v, &mut b);
            cases.push(b);
        }
        for case in cases {
            for tail in [&[][..], &[5, 6][..]] {
                let bytes = [&case[..], tail].concat();
                let (mut ours, mut theirs) = (&bytes[..], &bytes[..]);
                let got = varint(&mut ours);
                let want = prost::encoding::decode_varint(&mut theirs).ok();
                assert_eq!(got, want, "{bytes:?}");
                if want.is_some() {
                    assert_eq!(ours, theirs, "{bytes:?}");
                }
            }
        }
    }

    fn field(id: u32, m: fm::FieldMatchType) -> FieldMatch {
        FieldMatch {
            field_id: id,
            field_match_type: Some(m),
        }
    }

    fn entry(ty: update::Type, te: TableEntry) -> Vec<u8> {
        Update {
            r#type: ty as i32,
            entity: Some(Entity {
                entity: Some(entity::Entity::TableEntry(te)),
            }),
        }
        .encode_to_vec()
    }

    fn action(id: u32, params: &[(u32, &[u8])]) -> Option<TableAction> {
        Some(TableAction {
            r#type: Some(table_action::Type::Action(Action {
                action_id: id,
                params: params
                    .iter()
                    .map(|(param_id, v)| action::Param {
                        param_id: *param_id,
                        value: v.to_vec(),
                    })
                    .collect(),
            })),
        })
    }

    /// Every match kind, several params and a priority, read back as prost encoded them.
    #[test]
    fn reads_what_prost_encodes() {
        let te = TableEntry {
            table_id: 33_554_433,
            r#match: vec![
                field(
                    4,
                    fm::FieldMatchType::Lpm(fm::Lpm {
                        value: vec![10, 1, 0],
                        prefix_len: 24,
                    }),
                ),
                field(1, fm::FieldMatchType::Exact(fm::Exact { value: vec![7] })),
                field(
                    2,
                    fm::FieldMatchType::Ternary(fm::Ternary {
                        value: vec![1],
                        mask: vec![3],
                    }),
                ),
                field(
                    3,
                    fm::FieldMatchType::Range(fm::Range {
                        low: vec![2],
                        high: vec![9],
                    }),
                ),
                field(
                    5,
                    fm::FieldMatchType::Optional(fm::Optional { value: vec![0] }),
                ),
            ],
            action: action(16_777_217, &[(2, &[0xaa, 0xbb]), (1, &[5])]),
            priority: 10,
            ..Default::default()
        };
        let bytes = entry(update::Type::Modify, te);
        let e = plain_entry(&bytes).expect("a plain entry");
        assert_eq!(e.r#type, update::Type::Modify as i32);
        assert_eq!(
            (e.table_id, e.priority, e.action_id),
            (33_554_433, 10, Some(16_777_217))
        );
        assert_eq!(
            e.matches[..],
            [
                (4, Some(MatchRef::Lpm(&[10, 1, 0], 24))),
                (1, Some(MatchRef::Exact(&[7]))),
                (2, Some(MatchRef::Ternary(&[1], &[3]))),
                (3, Some(MatchRef::Range(&[2], &[9]))),
                (5, Some(MatchRef::Optional(&[0]))),
            ]
        );
        assert_eq!(e.params[..], [(2, &[0xaa, 0xbb][..]), (1, &[5][..])]);
    }

    #[test]
    fn delete_without_action_and_field_without_match() {
        let te = TableEntry {
            table_id: 1,
            r#match: vec![FieldMatch {
                field_id: 9,
                field_match_type: None,
            }],
            ..Default::default()
        };
        let bytes = entry(update::Type::Delete, te);
        let e = plain_entry(&bytes).expect("a plain entry");
        assert_eq!(e.action_id, None);
        assert_eq!(e.matches[..], [(9, None)]);
        assert!(e.params.is_empty());
    }

    /// Anything that is not a plain entry, or that prost would merge or refuse, is left to the
    /// full decode.
    #[test]
    fn leaves_the_rest_to_prost() {
        let plain = TableEntry {
            table_id: 1,
            action: action(2, &[]),
            ..Default::default()
        };
        let with = |f: fn(&mut TableEntry)| {
            let mut te = plain.clone();
            f(&mut te);
            entry(update::Type::Insert, te)
        };
        assert!(plain_entry(&with(|_| {})).is_some());
        for bytes in [
            with(|te| te.is_default_action = true),
            with(|te| te.idle_timeout_ns = 5),
            // Deprecated (1.4) for `metadata`, still sent by older controllers.
            #[allow(deprecated)]
            with(|te| te.controller_metadata = 1),
            with(|te| te.metadata = vec![1]),
            with(|te| {
                te.action = Some(TableAction {
                    r#type: Some(table_action::Type::ActionProfileMemberId(3)),
                })
            }),
            with(|te| te.r#match = vec![field(1, fm::FieldMatchType::Other(Default::default()))]),
        ] {
            assert!(plain_entry(&bytes).is_none());
        }
        let counter = Update {
            r#type: update::Type::Modify as i32,
            entity: Some(Entity {
                entity: Some(entity::Entity::CounterEntry(CounterEntry::default())),
            }),
        }
        .encode_to_vec();
        assert!(plain_entry(&counter).is_none());
        // Truncated, and an entity given twice (prost merges the two).
        let whole = with(|_| {});
        assert!(plain_entry(&whole[..whole.len() - 1]).is_none());
        let entity = &whole[2..];
        let twice = [&whole[..], entity].concat();
        assert!(Update::decode(&twice[..]).is_ok());
        assert!(plain_entry(&twice).is_none());
    }

    /// Device id, role, election id, atomicity and the updates, each encoded.
    type Decoded = (u64, String, Option<Uint128>, i32, Vec<Vec<u8>>);

    /// A request as prost's generated `p4.v1.WriteRequest` decodes it, with its updates
    /// re-encoded: what [`WriteRequest::decode`] must give, or prost's error.
    fn as_prost(body: &[u8]) -> Result<Decoded, String> {
        let r =
            p4runtime_proto::p4runtime::WriteRequest::decode(body).map_err(|e| e.to_string())?;
        let updates = r.updates.iter().map(Message::encode_to_vec).collect();
        Ok((r.device_id, r.role, r.election_id, r.atomicity, updates))
    }

    fn ours(body: &[u8]) -> Result<Decoded, String> {
        let r = WriteRequest::decode(Bytes::copy_from_slice(body)).map_err(|e| e.to_string())?;
        let updates = r
            .updates()
            .map(|u| Update::decode(u).map(|u| u.encode_to_vec()))
            .collect::<Result<_, _>>()
            .map_err(|e| e.to_string())?;
        Ok((r.device_id, r.role, r.election_id, r.atomicity, updates))
    }

    /// The top level read in one pass gives what prost's decode gives, with the updates where
    /// they lie in the body; requests it leaves to prost (a field given twice where prost
    /// merges, a group, a bad wire type, a role that is not UTF-8, truncation) give prost's
    /// result or error too.
    #[test]
    fn requests_as_prost_decodes_them() {
        let insert = entry(
            update::Type::Insert,
            TableEntry {
                table_id: 7,
                action: action(2, &[(1, &[4])]),
                ..Default::default()
            },
        );
        let delete = entry(
            update::Type::Delete,
            TableEntry {
                table_id: 8,
                ..Default::default()
            },
        );
        let request = p4runtime_proto::p4runtime::WriteRequest {
            device_id: 300,
            role: "sdn".into(),
            election_id: Some(Uint128 { high: 1, low: 2 }),
            updates: vec![
                Update::decode(&insert[..]).expect("an update"),
                Update::decode(&delete[..]).expect("an update"),
            ],
            atomicity: 1,
            ..Default::default()
        }
        .encode_to_vec();
        let body = Bytes::from(request.clone());
        let read = WriteRequest::read(&body).expect("read in one pass");
        assert_eq!(
            read.updates().collect::<Vec<_>>(),
            [&insert[..], &delete[..]]
        );
        assert_eq!(
            (
                read.device_id,
                &read.role[..],
                read.election_id,
                read.atomicity
            ),
            (300, "sdn", Some(Uint128 { high: 1, low: 2 }), 1)
        );
        // Tags 1 to 6 as varint, fixed64, length-delimited, start group and fixed32.
        let field = |tag: u8, wire: u8| -> Vec<u8> {
            let key = tag << 3 | wire;
            match wire {
                0 => vec![key, 5],
                1 => [&[key][..], &[0; 8]].concat(),
                2 => vec![key, 1, 0x61],
                3 => vec![key, (tag << 3) | 4],
                _ => [&[key][..], &[0; 4]].concat(),
            }
        };
        let mut cases: Vec<(Vec<u8>, bool)> = vec![
            (request.clone(), true),
            (Vec::new(), true),
            // Unknown fields of each wire type but groups are skipped in the one pass.
            (
                [
                    &request[..],
                    &field(9, 0),
                    &field(10, 1),
                    &field(11, 2),
                    &field(12, 5),
                ]
                .concat(),
                true,
            ),
            ([&request[..], &field(9, 3)].concat(), false),
            // The election id again (prost merges it), the role and device id again (the last
            // wins).
            ([&request[..], &[0x1a, 2, 0x10, 9]].concat(), false),
            ([&request[..], &[0x32, 1, 0x62, 0x08, 0x07]].concat(), true),
            // A role that is not UTF-8, and truncated requests.
            ([&request[..], &[0x32, 1, 0xff]].concat(), false),
            (request[..request.len() - 1].to_vec(), false),
            (request[..4].to_vec(), false),
            // An update that does not decode is the update's failure, not the request's.
            ([&request[..], &[0x22, 2, 0x12, 9]].concat(), true),
        ];
        for tag in [1, 2, 3, 4, 5, 6] {
            for wire in [0, 1, 2, 5] {
                let valid = matches!((tag, wire), (1 | 2 | 5, 0) | (4 | 6, 2));
                cases.push(([&request[..], &field(tag, wire)].concat(), valid));
            }
        }
        for (body, in_one_pass) in cases {
            assert_eq!(
                WriteRequest::read(&Bytes::from(body.clone())).is_some(),
                in_one_pass,
                "{body:?}"
            );
            let generic = Generic::decode(&body[..]).map_err(|e| e.to_string());
            let got = WriteRequest::decode(Bytes::from(body.clone())).map_err(|e| e.to_string());
            assert_eq!(got.is_ok(), generic.is_ok(), "{body:?}");
            match (&got, &generic) {
                (Ok(got), Ok(g)) => {
                    let want: Vec<&[u8]> = g.updates.iter().map(|u| &u[..]).collect();
                    assert_eq!(got.updates().collect::<Vec<_>>(), want, "{body:?}");
                    assert_eq!(
                        (got.device_id, &got.role, got.election_id, got.atomicity),
                        (g.device_id, &g.role, g.election_id, g.atomicity),
                        "{body:?}"
                    );
                }
                (Err(a), Err(b)) => assert_eq!(a, b, "{body:?}"),
                _ => {}
            }
            if as_prost(&body).is_ok() {
                assert_eq!(ours(&body), as_prost(&body), "{body:?}");
            }
        }
    }

    /// Unknown fields are skipped, as prost skips them.
    #[test]
    fn skips_unknown_fields() {
        let mut bytes = entry(
            update::Type::Insert,
            TableEntry {
                table_id: 1,
                action: action(2, &[(1, &[4])]),
                ..Default::default()
            },
        );
        // Field 99 (varint 1) and field 98 (fixed32) after the entity.
        bytes.extend_from_slice(&[0x98, 0x06, 0x01, 0x95, 0x06, 0, 0, 0, 0]);
        assert!(Update::decode(&bytes[..]).is_ok());
        let e = plain_entry(&bytes).expect("a plain entry");
        assert_eq!((e.table_id, e.action_id), (1, Some(2)));
        assert_eq!(e.params[..], [(1, &[4][..])]);
    }
}
