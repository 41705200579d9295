//! Idle timeout (spec 9.1.8): the engine's hit bits of tables that support idle timeout are
//! polled between packets; an entry with an `idle_timeout_ns` that has not been hit for that
//! long is reported once, in an IdleTimeoutNotification to the primary, until a hit starts a
//! new idle period. Entries are not removed: that is the controller's decision.

use std::sync::{Arc, Mutex, Weak};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use p4runtime_proto::p4runtime::{
    stream_message_response, IdleTimeoutNotification, StreamMessageResponse, TableEntry,
};

use crate::read::{matches_of, note_hits};
use crate::write::Index;
use crate::{exec_on, lock, Arbitration, Dataplane, State};

/// How often hit bits are read: the resolution of idle times.
pub const POLL: Duration = Duration::from_millis(20);

pub struct Poller {
    pub dp: Arc<dyn Dataplane>,
    pub state: Weak<Mutex<State>>,
    pub index: Weak<Mutex<Index>>,
    pub arb: Weak<Mutex<Arbitration>>,
}

impl Poller {
    pub async fn run(self) {
        loop {
            tokio::time::sleep(POLL).await;
            let (Some(state), Some(index), Some(arb)) = (
                self.state.upgrade(),
                self.index.upgrade(),
                self.arb.upgrade(),
            ) else {
                return;
            };
            let Some(pipeline) = lock(&state).pipeline.clone() else {
                continue;
            };
            let tables: Vec<String> = lock(&index)
                .idle
                .iter()
                .filter(|(_, entries)| !entries.is_empty())
                .map(|(t, _)| t.to_string())
                .collect();
            if tables.is_empty() {
                continue;
            }
            let dp = self.dp.clone();
            let dp_index = Arc::clone(&index);
            // Hits leave the engine and enter the store in one step on the dataplane thread: a
            // read between the two steps would see the hit in neither place.
            let now = tokio::task::spawn_blocking(move || {
                exec_on(&*dp, move |sw| {
                    let hits = match sw {
                        Some(sw) => tables
                            .into_iter()
                            .map(|t| {
                                let h = sw.take_hits(&t).unwrap_or_default();
                                (t, h)
                            })
                            .collect(),
                        None => Vec::new(),
                    };
                    note_hits(&mut lock(&dp_index), hits)
                })
            })
            .await
            .ok()
            .flatten()
            .unwrap_or_else(std::time::Instant::now);
            let expired = {
                let mut store = lock(&index);
                let Index { idle, last_hit, .. } = &mut *store;
                let mut expired = Vec::new();
                for (table, entries) in idle.iter_mut() {
                    let (Some(&table_id), Some(last)) =
                        (pipeline.table_ids.get(&**table), last_hit.get(table))
                    else {
                        continue;
                    };
                    let Some(info) = pipeline.tables.get(&table_id) else {
                        continue;
                    };
                    for (key, i) in entries.iter_mut() {
                        let Some(at) = last.get(&i.handle) else {
                            continue;
                        };
                        let idle_ns = now.duration_since(*at).as_nanos();
                        if idle_ns < i.timeout_ns as u128 || i.notified_for == Some(*at) {
                            continue;
                        }
                        i.notified_for = Some(*at);
                        expired.push(TableEntry {
                            table_id,
                            r#match: matches_of(info, &key.0),
                            priority: key.1,
                            idle_timeout_ns: i.timeout_ns,
                            ..Default::default()
                        });
                    }
                }
                expired
            };
            if expired.is_empty() {
                continue;
            }
            let timestamp = SystemTime::now()
                .duration_since(UNIX_EPOCH)
                .map_or(0, |d| i64::try_from(d.as_nanos()).unwrap_or(i64::MAX));
            for (tx, config) in lock(&arb).primaries() {
                // A role with a config hears of its own tables' entries only.
                let table_entry: Vec<TableEntry> = expired
                    .iter()
                    .filter(|e| config.map_or(true, |c| c.allows_id(e.table_id)))
                    .cloned()
                    .collect();
                if table_entry.is_empty() {
                    continue;
                }
                let msg = StreamMessageResponse {
                    update: Some(stream_message_response::Update::IdleTimeoutNotification(
                        IdleTimeoutNotification {
                            table_entry,
                            timestamp,
                        },
                    )),
                };
                let _ = tx.try_send(Ok(msg));
            }
        }
    }
}
