//! DigestList delivery (spec 16.4): the engine's learn-list digests are polled between packets,
//! batched per configured digest up to `max_list_size` or `max_timeout_ns`, sent to the primary
//! with a list id, and held as outstanding until acked or `ack_timeout_ns` passes; data already
//! in an outstanding list is not sent again meanwhile.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, Weak};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use p4runtime_proto::p4runtime::{
    p4_data, stream_message_response, DigestList, P4Data, P4StructLike, StreamMessageResponse,
};

use crate::bytes::canonical;
use crate::write::Index;
use crate::{exec_on, lock, Arbitration, Dataplane, State};

/// Learn-list entries (each a list of field values) since an instant.
type Batch = (Instant, Vec<Vec<Vec<u8>>>);

#[derive(Default)]
pub struct Digests {
    next_list: u64,
    pending: HashMap<u32, Batch>,
    /// (digest id, list id) → (sent at, data).
    outstanding: HashMap<(u32, u64), Batch>,
}

impl Digests {
    pub fn ack(&mut self, digest_id: u32, list_id: u64) {
        self.outstanding.remove(&(digest_id, list_id));
    }
}

pub struct Poller {
    pub dp: Arc<dyn Dataplane>,
    pub state: Weak<Mutex<State>>,
    pub index: Weak<Mutex<Index>>,
    pub arb: Weak<Mutex<Arbitration>>,
    pub digests: Weak<Mutex<Digests>>,
}

impl Poller {
    pub async fn run(self) {
        loop {
            tokio::time::sleep(Duration::from_millis(1)).await;
            let (Some(state), Some(index), Some(arb), Some(digests)) = (
                self.state.upgrade(),
                self.index.upgrade(),
                self.arb.upgrade(),
                self.digests.upgrade(),
            ) else {
                return;
            };
            let configs = lock(&index).digests.clone();
            let Some(pipeline) = lock(&state).pipeline.clone() else {
                continue;
            };
            if configs.is_empty() {
                continue;
            }
            let dp = self.dp.clone();
            let got = tokio::task::spawn_blocking(move || {
                exec_on(&*dp, |sw| {
                    sw.as_mut().map(|s| s.take_digests()).unwrap_or_default()
                })
            })
            .await
            .ok()
            .flatten()
            .unwrap_or_default();
            let now = Instant::now();
            let mut d = lock(&digests);
            for g in got {
                let Some(id) = pipeline
                    .digests
                    .iter()
                    .find(|(id, name)| **name == g.list_name && configs.contains_key(id))
                    .map(|(id, _)| *id)
                else {
                    continue;
                };
                let dup = d
                    .outstanding
                    .iter()
                    .any(|((i, _), (_, data))| *i == id && data.contains(&g.values));
                if dup {
                    continue;
                }
                let p = d.pending.entry(id).or_insert_with(|| (now, Vec::new()));
                if !p.1.contains(&g.values) {
                    p.1.push(g.values);
                }
            }
            // Unacked lists expire after ack_timeout_ns; their data may be sent again.
            d.outstanding.retain(|(id, _), (sent, _)| {
                configs.get(id).is_some_and(|c| {
                    c.ack_timeout_ns == 0
                        || now.duration_since(*sent) < Duration::from_nanos(c.ack_timeout_ns as u64)
                })
            });
            let ready: Vec<u32> = d
                .pending
                .iter()
                .filter(|(id, (since, data))| {
                    configs.get(id).is_some_and(|c| {
                        (c.max_list_size > 0 && data.len() >= c.max_list_size as usize)
                            || now.duration_since(*since)
                                >= Duration::from_nanos(c.max_timeout_ns as u64)
                    })
                })
                .map(|(id, _)| *id)
                .collect();
            for id in ready {
                let Some((_, mut data)) = d.pending.remove(&id) else {
                    continue;
                };
                let limit = configs.get(&id).map_or(0, |c| c.max_list_size as usize);
                if limit > 0 && data.len() > limit {
                    let rest = data.split_off(limit);
                    d.pending.insert(id, (now, rest));
                }
                d.next_list += 1;
                let list_id = d.next_list;
                let msg = StreamMessageResponse {
                    update: Some(stream_message_response::Update::Digest(DigestList {
                        digest_id: id,
                        list_id,
                        data: data.iter().map(|v| to_p4data(v)).collect(),
                        timestamp: SystemTime::now()
                            .duration_since(UNIX_EPOCH)
                            .map_or(0, |t| t.as_nanos() as i64),
                    })),
                };
                d.outstanding.insert((id, list_id), (now, data));
                for (tx, config) in lock(&arb).primaries() {
                    if config.map_or(true, |c| c.allows_id(id)) {
                        let _ = tx.try_send(Ok(msg.clone()));
                    }
                }
            }
        }
    }
}

/// One learn-list entry: a struct of its fields (bitstrings), or the bare field for one-field lists.
fn to_p4data(values: &[Vec<u8>]) -> P4Data {
    let bits = |v: &Vec<u8>| P4Data {
        data: Some(p4_data::Data::Bitstring(canonical(v))),
    };
    match values {
        [one] => bits(one),
        many => P4Data {
            data: Some(p4_data::Data::Struct(P4StructLike {
                members: many.iter().map(bits).collect(),
            })),
        },
    }
}
