//! Write and read-back rate of 200,000 IPv4 /24 routes over gRPC on 127.0.0.1, against the real
//! engine (the l3.json STF program with its LPM table enlarged), in batches of 64, 1000 and
//! 10000. Usage: `bench OUT.json [ROUTES]`; prints the JSON too.

#[path = "../tests/common/mod.rs"]
mod common;

use std::time::Instant;

use common::*;
use p4runtime_proto::p4runtime::{
    action, entity, field_match, table_action, update, Action, Entity, FieldMatch, ReadRequest,
    TableAction, TableEntry, Update, WriteRequest,
};

fn canonical(v: &[u8]) -> Vec<u8> {
    let skip = v.iter().take_while(|b| **b == 0).count().min(v.len() - 1);
    v[skip..].to_vec()
}

#[tokio::main(flavor = "multi_thread", worker_threads = 2)]
async fn main() {
    let mut args = std::env::args().skip(1);
    let Some(out) = args.next() else {
        eprintln!("usage: bench OUT.json [ROUTES]");
        std::process::exit(2);
    };
    let routes: u32 = args.next().and_then(|a| a.parse().ok()).unwrap_or(200_000);
    let mut json: serde_json::Value = serde_json::from_str(&stf_json("l3.json")).unwrap();
    json["pipelines"][0]["tables"][0]["max_size"] = serde_json::json!(routes + 1024);
    let json = json.to_string();
    let info = p4info_for(&json);
    let table = table_id(&info, "ingress.ipv4_lpm");
    let set_nhop = action_id(&info, "ingress.set_nhop");

    let (addr, _dp) = start().await;
    let (mut c, _) = Controller::connect(addr, 1).await;
    let mut results = Vec::new();
    for batch in [64usize, 1000, 10_000] {
        // A fresh commit empties the table.
        c.set_pipeline(&info, &json).await.unwrap();
        let entries: Vec<Update> = (0..routes)
            .map(|i| {
                let prefix = (0x0100_0000u32 + (i << 8)).to_be_bytes();
                Update {
                    r#type: update::Type::Insert as i32,
                    entity: Some(Entity {
                        entity: Some(entity::Entity::TableEntry(TableEntry {
                            table_id: table,
                            r#match: vec![FieldMatch {
                                field_id: 1,
                                field_match_type: Some(field_match::FieldMatchType::Lpm(
                                    field_match::Lpm {
                                        value: canonical(&prefix),
                                        prefix_len: 24,
                                    },
                                )),
                            }],
                            action: Some(TableAction {
                                r#type: Some(table_action::Type::Action(Action {
                                    action_id: set_nhop,
                                    params: vec![
                                        action::Param {
                                            param_id: 1,
                                            value: vec![(i % 4 + 1) as u8],
                                        },
                                        action::Param {
                                            param_id: 2,
                                            value: canonical(&(i as u64).to_be_bytes()[2..]),
                                        },
                                    ],
                                })),
                            }),
                            ..Default::default()
                        })),
                    }),
                }
            })
            .collect();
        let start = Instant::now();
        for chunk in entries.chunks(batch) {
            c.client
                .write(WriteRequest {
                    device_id: DEVICE,
                    election_id: eid(1),
                    updates: chunk.to_vec(),
                    ..Default::default()
                })
                .await
                .unwrap();
        }
        let write_s = start.elapsed().as_secs_f64();
        let start = Instant::now();
        let mut stream = c
            .client
            .read(ReadRequest {
                device_id: DEVICE,
                entities: vec![Entity {
                    entity: Some(entity::Entity::TableEntry(TableEntry::default())),
                }],
                ..Default::default()
            })
            .await
            .unwrap()
            .into_inner();
        let mut read = 0usize;
        while let Some(r) = stream.message().await.unwrap() {
            read += r.entities.len();
        }
        let read_s = start.elapsed().as_secs_f64();
        assert_eq!(read, routes as usize, "read back every route");
        let r = serde_json::json!({
            "batch": batch,
            "routes": routes,
            "write_seconds": write_s,
            "write_entries_per_second": routes as f64 / write_s,
            "read_seconds": read_s,
            "read_entries_per_second": routes as f64 / read_s,
        });
        eprintln!("{r}");
        results.push(r);
    }
    let doc = serde_json::json!({
        "bench": "p4runtime-server IPv4 LPM write/read over gRPC on 127.0.0.1 (l3.json, real engine)",
        "results": results,
    });
    let text = serde_json::to_string_pretty(&doc).unwrap();
    std::fs::write(&out, &text).unwrap_or_else(|e| panic!("{out}: {e}"));
    println!("{text}");
}
