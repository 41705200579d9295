//! The server over gRPC on 127.0.0.1 against the real engine (tests/common).

mod common;

use common::*;
use p4runtime_proto::google::rpc::{self, Code};
use p4runtime_proto::p4runtime::{
    action, entity, field_match, stream_message_request, stream_message_response, table_action,
    update, write_request::Atomicity, Action, Entity, FieldMatch,
    GetForwardingPipelineConfigRequest, PacketOut, ReadRequest, SetForwardingPipelineConfigRequest,
    StreamMessageRequest, TableAction, TableEntry, Update, WriteRequest,
};
use p4runtime_server::Dataplane;
use prost::Message;

fn lpm(field: u32, value: Vec<u8>, len: i32) -> FieldMatch {
    FieldMatch {
        field_id: field,
        field_match_type: Some(field_match::FieldMatchType::Lpm(field_match::Lpm {
            value,
            prefix_len: len,
        })),
    }
}

fn act(id: u32, params: Vec<Vec<u8>>) -> Option<TableAction> {
    Some(TableAction {
        r#type: Some(table_action::Type::Action(Action {
            action_id: id,
            params: params
                .into_iter()
                .enumerate()
                .map(|(i, value)| action::Param {
                    param_id: i as u32 + 1,
                    value,
                })
                .collect(),
        })),
    })
}

fn upd(ty: update::Type, te: TableEntry) -> Update {
    Update {
        r#type: ty as i32,
        entity: Some(Entity {
            entity: Some(entity::Entity::TableEntry(te)),
        }),
    }
}

struct L3 {
    info: p4runtime_proto::p4info::P4Info,
    table: u32,
    set_nhop: u32,
    drop: u32,
}

impl L3 {
    fn new() -> L3 {
        let info = p4info_for(&stf_json("l3.json"));
        L3 {
            table: table_id(&info, "ingress.ipv4_lpm"),
            set_nhop: action_id(&info, "ingress.set_nhop"),
            drop: action_id(&info, "ingress.drop"),
            info,
        }
    }
    fn route(&self, prefix: [u8; 4], len: i32, port: u8, dmac: u8) -> TableEntry {
        TableEntry {
            table_id: self.table,
            r#match: vec![lpm(1, trim(&prefix), len)],
            action: act(self.set_nhop, vec![vec![port], vec![dmac]]),
            ..Default::default()
        }
    }
}

fn trim(v: &[u8]) -> Vec<u8> {
    let skip = v.iter().take_while(|b| **b == 0).count().min(v.len() - 1);
    v[skip..].to_vec()
}

async fn write(
    c: &mut Controller,
    updates: Vec<Update>,
    atomicity: Atomicity,
) -> Result<(), tonic::Status> {
    c.client
        .write(WriteRequest {
            device_id: DEVICE,
            election_id: eid(c.election_id),
            updates,
            atomicity: atomicity as i32,
            ..Default::default()
        })
        .await
        .map(|_| ())
}

/// The canonical code of each update, from the batch status details (spec 12.4).
fn update_codes(s: &tonic::Status) -> Vec<i32> {
    assert_eq!(s.code(), tonic::Code::Unknown, "{s:?}");
    let body = rpc::Status::decode(s.details()).unwrap();
    body.details
        .iter()
        .map(|a| {
            assert_eq!(a.type_url, "type.googleapis.com/p4.v1.Error");
            p4runtime_proto::p4runtime::Error::decode(a.value.as_slice())
                .unwrap()
                .canonical_code
        })
        .collect()
}

async fn read_all(c: &mut Controller, te: TableEntry) -> Vec<TableEntry> {
    let mut stream = c
        .client
        .read(ReadRequest {
            device_id: DEVICE,
            entities: vec![Entity {
                entity: Some(entity::Entity::TableEntry(te)),
            }],
            ..Default::default()
        })
        .await
        .unwrap()
        .into_inner();
    let mut out = Vec::new();
    while let Some(r) = stream.message().await.unwrap() {
        for e in r.entities {
            if let Some(entity::Entity::TableEntry(te)) = e.entity {
                out.push(te);
            }
        }
    }
    out
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pipeline_set_and_get() {
    let (addr, _dp) = start().await;
    let (mut c, code) = Controller::connect(addr, 1).await;
    assert_eq!(code, Code::Ok as i32);
    let get = |ty: i32| GetForwardingPipelineConfigRequest {
        device_id: DEVICE,
        response_type: ty,
    };
    // No pipeline yet: the config is unset (spec 7.3), for every response type.
    for ty in 0..4 {
        let none = c.client.get_forwarding_pipeline_config(get(ty)).await;
        assert_eq!(none.unwrap().into_inner().config, None);
    }

    let l3 = L3::new();
    let json = stf_json("l3.json");
    // A P4Info whose widths disagree with the JSON is refused.
    let mut bad = l3.info.clone();
    bad.tables[0].match_fields[0].bitwidth = 31;
    let err = c.set_pipeline(&bad, &json).await.unwrap_err();
    assert_eq!(err.code(), tonic::Code::InvalidArgument);
    assert!(err.message().contains("bit<31>"), "{}", err.message());

    // VERIFY_AND_SAVE then COMMIT (which refuses a config of its own).
    let commit_with_config = c
        .client
        .set_forwarding_pipeline_config(SetForwardingPipelineConfigRequest {
            device_id: DEVICE,
            election_id: eid(1),
            action: 4,
            config: Some(p4runtime_proto::p4runtime::ForwardingPipelineConfig::default()),
            ..Default::default()
        })
        .await
        .unwrap_err();
    assert_eq!(commit_with_config.code(), tonic::Code::InvalidArgument);
    for action in [2, 4] {
        c.client
            .set_forwarding_pipeline_config(SetForwardingPipelineConfigRequest {
                device_id: DEVICE,
                election_id: eid(1),
                action,
                config: (action == 2).then(|| {
                    p4runtime_proto::p4runtime::ForwardingPipelineConfig {
                        p4info: Some(l3.info.clone()),
                        p4_device_config: json.as_bytes().to_vec(),
                        cookie: Some(
                            p4runtime_proto::p4runtime::forwarding_pipeline_config::Cookie {
                                cookie: 7,
                            },
                        ),
                    }
                }),
                ..Default::default()
            })
            .await
            .unwrap();
    }
    let all = c
        .client
        .get_forwarding_pipeline_config(get(0))
        .await
        .unwrap()
        .into_inner()
        .config
        .unwrap();
    assert_eq!(all.p4info.as_ref(), Some(&l3.info));
    assert_eq!(all.p4_device_config, json.as_bytes());
    assert_eq!(all.cookie.unwrap().cookie, 7);
    let cookie = c
        .client
        .get_forwarding_pipeline_config(get(1))
        .await
        .unwrap()
        .into_inner()
        .config
        .unwrap();
    assert!(cookie.p4info.is_none() && cookie.p4_device_config.is_empty());
    assert_eq!(cookie.cookie.unwrap().cookie, 7);
    let info = c
        .client
        .get_forwarding_pipeline_config(get(2))
        .await
        .unwrap()
        .into_inner()
        .config
        .unwrap();
    assert!(info.p4info.is_some() && info.p4_device_config.is_empty());
    let dev = c
        .client
        .get_forwarding_pipeline_config(get(3))
        .await
        .unwrap()
        .into_inner()
        .config
        .unwrap();
    assert!(dev.p4info.is_none() && !dev.p4_device_config.is_empty());

    // VERIFY_AND_COMMIT replaces it (cookie 42).
    c.set_pipeline(&l3.info, &json).await.unwrap();
    let cookie = c
        .client
        .get_forwarding_pipeline_config(get(1))
        .await
        .unwrap()
        .into_inner()
        .config
        .unwrap();
    assert_eq!(cookie.cookie.unwrap().cookie, 42);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pipeline_runs_with_the_switch_engine_settings() {
    let (addr, dp) = start().await;
    let (mut c, _) = Controller::connect(addr, 1).await;
    let l3 = L3::new();
    c.set_pipeline(&l3.info, &stf_json("l3.json"))
        .await
        .unwrap();
    let want = dp.engine_config();
    let guard = dp.sw.lock().unwrap();
    let got = guard.as_ref().expect("a pipeline is installed").config();
    assert_eq!(
        (got.cpu_port, got.priority_queues, got.drop_port),
        (want.cpu_port, want.priority_queues, want.drop_port)
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn table_insert_modify_delete_read() {
    let (addr, _dp) = start().await;
    let (mut c, _) = Controller::connect(addr, 1).await;
    let l3 = L3::new();
    c.set_pipeline(&l3.info, &stf_json("l3.json"))
        .await
        .unwrap();
    let r1 = l3.route([10, 0, 0, 0], 8, 1, 1);
    let r2 = l3.route([10, 1, 0, 0], 16, 2, 2);
    write(
        &mut c,
        vec![
            upd(update::Type::Insert, r1.clone()),
            upd(update::Type::Insert, r2.clone()),
        ],
        Atomicity::ContinueOnError,
    )
    .await
    .unwrap();
    // Wildcard read (table id 0) returns both, as written.
    let mut got = read_all(&mut c, TableEntry::default()).await;
    got.sort_by_key(|t| t.r#match[0].encode_to_vec());
    assert_eq!(got, vec![r1.clone(), r2.clone()]);
    // Read by key.
    let mut key = r2.clone();
    key.action = None;
    assert_eq!(read_all(&mut c, key.clone()).await, vec![r2.clone()]);
    // Modify, then delete.
    let mut m2 = r2.clone();
    m2.action = act(l3.drop, vec![]);
    write(
        &mut c,
        vec![upd(update::Type::Modify, m2.clone())],
        Atomicity::ContinueOnError,
    )
    .await
    .unwrap();
    assert_eq!(read_all(&mut c, key.clone()).await, vec![m2]);
    write(
        &mut c,
        vec![upd(update::Type::Delete, key.clone())],
        Atomicity::ContinueOnError,
    )
    .await
    .unwrap();
    assert!(read_all(&mut c, key).await.is_empty());
    // idle_timeout_ns needs a table with idle timeout support (P4Info NOTIFY_CONTROL).
    let mut timed = l3.route([10, 9, 0, 0], 16, 1, 1);
    timed.idle_timeout_ns = 5_000_000_000;
    let e = write(
        &mut c,
        vec![upd(update::Type::Insert, timed.clone())],
        Atomicity::ContinueOnError,
    )
    .await
    .unwrap_err();
    assert_eq!(update_codes(&e), vec![Code::InvalidArgument as i32]);
    // Default entry: MODIFY with is_default_action, read back with is_default_action.
    let def = TableEntry {
        table_id: l3.table,
        action: act(l3.set_nhop, vec![vec![3], vec![9]]),
        is_default_action: true,
        ..Default::default()
    };
    write(
        &mut c,
        vec![upd(update::Type::Modify, def.clone())],
        Atomicity::ContinueOnError,
    )
    .await
    .unwrap();
    let d = read_all(
        &mut c,
        TableEntry {
            table_id: l3.table,
            is_default_action: true,
            ..Default::default()
        },
    )
    .await;
    assert_eq!(d, vec![def]);
    // With NOTIFY_CONTROL (and support_timeout in the JSON) the timeout is accepted, stored
    // and read back.
    let mut info = l3.info.clone();
    info.tables[0].idle_timeout_behavior = 1;
    c.set_pipeline(&info, &l3_with_timeout()).await.unwrap();
    write(
        &mut c,
        vec![upd(update::Type::Insert, timed.clone())],
        Atomicity::ContinueOnError,
    )
    .await
    .unwrap();
    assert_eq!(read_all(&mut c, TableEntry::default()).await, vec![timed]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn write_errors() {
    let (addr, _dp) = start().await;
    let (mut c, _) = Controller::connect(addr, 1).await;
    let l3 = L3::new();
    let r1 = l3.route([10, 0, 0, 0], 8, 1, 1);
    // Before a pipeline.
    let e = write(
        &mut c,
        vec![upd(update::Type::Insert, r1.clone())],
        Atomicity::ContinueOnError,
    )
    .await
    .unwrap_err();
    assert_eq!(e.code(), tonic::Code::FailedPrecondition);
    c.set_pipeline(&l3.info, &stf_json("l3.json"))
        .await
        .unwrap();

    // One batch, CONTINUE_ON_ERROR: every error class gets its own p4.v1.Error.
    let mut wide = l3.route([10, 2, 0, 0], 16, 1, 1);
    wide.action = act(l3.set_nhop, vec![vec![2, 0], vec![1]]); // 0x200 does not fit bit<9>
    let mut overlong = l3.route([10, 3, 0, 0], 16, 1, 1);
    overlong.action = act(l3.set_nhop, vec![vec![0, 0, 1], vec![1]]); // 3 bytes for bit<9>
    let mut badprefix = l3.route([10, 4, 0, 0], 8, 1, 1); // bits beyond /8
    badprefix.r#match = vec![lpm(1, vec![10, 4, 0, 0], 8)];
    let mut missing = l3.route([10, 5, 0, 0], 16, 1, 1);
    missing.action = None;
    let batch = vec![
        upd(update::Type::Insert, r1.clone()),
        upd(update::Type::Insert, r1.clone()),
        upd(update::Type::Delete, l3.route([11, 0, 0, 0], 8, 1, 1)),
        upd(update::Type::Insert, wide),
        upd(update::Type::Insert, overlong),
        upd(update::Type::Insert, badprefix),
        upd(update::Type::Insert, missing),
    ];
    let e = write(&mut c, batch, Atomicity::ContinueOnError)
        .await
        .unwrap_err();
    let codes = update_codes(&e);
    use Code::*;
    let want: Vec<i32> = [
        Ok,
        AlreadyExists,
        NotFound,
        InvalidArgument,
        InvalidArgument,
        InvalidArgument,
        InvalidArgument,
    ]
    .iter()
    .map(|c| *c as i32)
    .collect();
    assert_eq!(codes, want);
    assert_eq!(
        read_all(&mut c, TableEntry::default()).await,
        vec![r1.clone()]
    );

    // Values padded to the field's bytes are accepted (spec 8.4) and read back canonical.
    let mut padded = l3.route([10, 6, 0, 0], 16, 1, 1);
    padded.action = act(l3.set_nhop, vec![vec![0, 1], vec![0, 0, 0, 1]]);
    write(
        &mut c,
        vec![upd(update::Type::Insert, padded)],
        Atomicity::ContinueOnError,
    )
    .await
    .unwrap();
    let canonical = l3.route([10, 6, 0, 0], 16, 1, 1);
    let read = read_all(&mut c, TableEntry::default()).await;
    assert!(read.contains(&canonical), "{read:?}");
    write(
        &mut c,
        vec![upd(update::Type::Delete, canonical)],
        Atomicity::ContinueOnError,
    )
    .await
    .unwrap();

    // ROLLBACK_ON_ERROR: the good insert is undone.
    let r2 = l3.route([10, 1, 0, 0], 16, 2, 2);
    let e = write(
        &mut c,
        vec![
            upd(update::Type::Insert, r2),
            upd(update::Type::Insert, r1.clone()),
        ],
        Atomicity::RollbackOnError,
    )
    .await
    .unwrap_err();
    assert_eq!(update_codes(&e), vec![Aborted as i32, AlreadyExists as i32]);
    assert_eq!(
        read_all(&mut c, TableEntry::default()).await,
        vec![r1.clone()]
    );

    // Priorities and masks on a table with ternary keys (tables.json t_tern: ternary h.b, exact h.e).
    let json = stf_json("tables.json");
    let info = p4info_for(&json);
    c.set_pipeline(&info, &json).await.unwrap();
    let t = table_id(&info, "ingress.t_tern");
    let widths: Vec<i32> = info
        .tables
        .iter()
        .find(|x| x.preamble.as_ref().unwrap().id == t)
        .unwrap()
        .match_fields
        .iter()
        .map(|m| m.bitwidth)
        .collect();
    let set = info
        .actions
        .iter()
        .find(|a| a.preamble.as_ref().unwrap().name == "ingress.set_tern")
        .unwrap();
    let args: Vec<Vec<u8>> = set.params.iter().map(|_| vec![1]).collect();
    let tern = |value: Vec<u8>, mask: Vec<u8>, priority: i32| TableEntry {
        table_id: t,
        r#match: vec![
            FieldMatch {
                field_id: 1,
                field_match_type: Some(field_match::FieldMatchType::Ternary(
                    field_match::Ternary { value, mask },
                )),
            },
            FieldMatch {
                field_id: 2,
                field_match_type: Some(field_match::FieldMatchType::Exact(field_match::Exact {
                    value: vec![1],
                })),
            },
        ],
        action: act(set.preamble.as_ref().unwrap().id, args.clone()),
        priority,
        ..Default::default()
    };
    assert!(widths[0] >= 8);
    let e = write(
        &mut c,
        vec![
            upd(update::Type::Insert, tern(vec![0x0f], vec![0xf0], 10)), // value outside mask
            upd(update::Type::Insert, tern(vec![0x10], vec![0xf0], 0)),  // no priority
            upd(update::Type::Insert, tern(vec![0x10], vec![0xf0], 10)),
        ],
        Atomicity::ContinueOnError,
    )
    .await
    .unwrap_err();
    assert_eq!(
        update_codes(&e),
        vec![InvalidArgument as i32, InvalidArgument as i32, Ok as i32]
    );
    let back = read_all(
        &mut c,
        TableEntry {
            table_id: t,
            ..Default::default()
        },
    )
    .await;
    assert_eq!(back, vec![tern(vec![0x10], vec![0xf0], 10)]);
    // Const table.
    let tc = table_id(&info, "ingress.t_const");
    let e = write(
        &mut c,
        vec![upd(
            update::Type::Insert,
            TableEntry {
                table_id: tc,
                ..Default::default()
            },
        )],
        Atomicity::ContinueOnError,
    )
    .await
    .unwrap_err();
    assert_eq!(update_codes(&e), vec![PermissionDenied as i32]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn arbitration() {
    let (addr, _dp) = start().await;
    let (mut c1, code) = Controller::connect(addr, 1).await;
    assert_eq!(code, Code::Ok as i32);
    let (mut c2, code) = Controller::connect(addr, 5).await;
    assert_eq!(code, Code::Ok as i32);
    // c1 is told it lost primary.
    assert_eq!(c1.next_arbitration().await, Code::AlreadyExists as i32);
    let l3 = L3::new();
    let e = c1
        .set_pipeline(&l3.info, &stf_json("l3.json"))
        .await
        .unwrap_err();
    assert_eq!(e.code(), tonic::Code::PermissionDenied);
    c2.set_pipeline(&l3.info, &stf_json("l3.json"))
        .await
        .unwrap();
    let e = write(
        &mut c1,
        vec![upd(update::Type::Insert, l3.route([10, 0, 0, 0], 8, 1, 1))],
        Atomicity::ContinueOnError,
    )
    .await
    .unwrap_err();
    assert_eq!(e.code(), tonic::Code::PermissionDenied);
    // A backup connecting with a lower id is a backup.
    let (_c3, code) = Controller::connect(addr, 2).await;
    assert_eq!(code, Code::AlreadyExists as i32);
    // The primary leaves: c3 (2) is promoted, c1 stays backup.
    drop(c2);
    assert_eq!(c1.next_arbitration().await, Code::AlreadyExists as i32);
    write(
        &mut Controller {
            election_id: 2,
            ..c1
        },
        vec![upd(update::Type::Insert, l3.route([10, 0, 0, 0], 8, 1, 1))],
        Atomicity::ContinueOnError,
    )
    .await
    .unwrap();
}

/// P4Runtime spec 5.3: an election id already held by a controller of the role is refused with
/// INVALID_ARGUMENT, and the stream that sent it is closed; the holder stays primary. The same
/// id in another role is not a clash.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn arbitration_refuses_an_election_id_held_in_the_role() {
    let (addr, _dp) = start().await;
    let (mut c1, code) = Controller::connect(addr, 5).await;
    assert_eq!(code, Code::Ok as i32);
    let refused = arbitration_refused(addr, 5, "", None).await;
    assert_eq!(refused.code(), tonic::Code::InvalidArgument);
    // The holder is still primary: it may set the pipeline.
    let l3 = L3::new();
    c1.set_pipeline(&l3.info, &stf_json("l3.json"))
        .await
        .unwrap();
    let (_other_role, code) = Controller::connect_role(addr, 5, "other").await;
    assert_eq!(code, Code::Ok as i32);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn packet_out_through_engine_to_packet_in() {
    let (addr, dp) = start().await;
    let (mut c, _) = Controller::connect(addr, 1).await;
    let l3 = L3::new();
    c.set_pipeline(&l3.info, &stf_json("l3.json"))
        .await
        .unwrap();
    write(
        &mut c,
        vec![
            upd(
                update::Type::Insert,
                l3.route([10, 0, 0, 0], 8, CPU_PORT as u8, 1),
            ),
            upd(update::Type::Insert, l3.route([10, 1, 0, 0], 16, 2, 2)),
        ],
        Atomicity::ContinueOnError,
    )
    .await
    .unwrap();
    let packet = |dst: [u8; 4]| {
        let mut p = vec![0, 0, 0, 0, 0xaa, 0xaa, 0, 0, 0, 0, 0x0b, 0xbb, 0x08, 0x00];
        p.extend([
            0x45, 0, 0, 0x14, 0, 0, 0, 0, 0x40, 0x06, 0, 0, 0xc0, 0xa8, 0, 1,
        ]);
        p.extend(dst);
        p
    };
    let send = |p: Vec<u8>| StreamMessageRequest {
        update: Some(stream_message_request::Update::Packet(PacketOut {
            payload: p,
            metadata: vec![],
        })),
    };
    c.tx.send(send(packet([10, 1, 2, 3]))).await.unwrap();
    c.tx.send(send(packet([10, 2, 3, 4]))).await.unwrap();
    let pin = loop {
        let m = c.rx.message().await.unwrap().unwrap();
        if let Some(stream_message_response::Update::Packet(p)) = m.update {
            break p;
        }
    };
    // Routed by the /8 to the CPU port: TTL 0x40 -> 0x3f, dmac rewritten to 1.
    assert_eq!(&pin.payload[..6], &[0, 0, 0, 0, 0, 1]);
    assert_eq!(pin.payload[22], 0x3f);
    assert_eq!(&pin.payload[30..34], &[10, 2, 3, 4]);
    let sent = dp.sent.lock().unwrap();
    assert_eq!(sent.len(), 1);
    assert_eq!(sent[0].port, 2);
}

async fn read_entities(c: &mut Controller, e: entity::Entity) -> Vec<entity::Entity> {
    let mut stream = c
        .client
        .read(ReadRequest {
            device_id: DEVICE,
            entities: vec![Entity { entity: Some(e) }],
            ..Default::default()
        })
        .await
        .unwrap()
        .into_inner();
    let mut out = Vec::new();
    while let Some(r) = stream.message().await.unwrap() {
        out.extend(r.entities.into_iter().filter_map(|e| e.entity));
    }
    out
}

fn modify(e: entity::Entity) -> Update {
    Update {
        r#type: update::Type::Modify as i32,
        entity: Some(Entity { entity: Some(e) }),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn counters_and_registers() {
    use p4runtime_proto::p4runtime::{
        p4_data, CounterData, CounterEntry, Index, P4Data, RegisterEntry,
    };
    let (addr, _dp) = start().await;
    let (mut c, _) = Controller::connect(addr, 1).await;
    let json = stf_json("externs.json");
    let info = p4info_for(&json);
    c.set_pipeline(&info, &json).await.unwrap();
    let cid = info.counters[0].preamble.as_ref().unwrap().id;
    let rid = info.registers[0].preamble.as_ref().unwrap().id;
    let counter = |i: i64, p: i64, b: i64| {
        entity::Entity::CounterEntry(CounterEntry {
            counter_id: cid,
            index: Some(Index { index: i }),
            data: Some(CounterData {
                packet_count: p,
                byte_count: b,
            }),
        })
    };
    let register = |i: i64, v: Vec<u8>| {
        entity::Entity::RegisterEntry(RegisterEntry {
            register_id: rid,
            index: Some(Index { index: i }),
            data: Some(P4Data {
                data: Some(p4_data::Data::Bitstring(v)),
            }),
        })
    };
    write(
        &mut c,
        vec![
            modify(counter(2, 5, 300)),
            modify(register(1, vec![0xde, 0xad])),
        ],
        Atomicity::ContinueOnError,
    )
    .await
    .unwrap();
    // Index wildcard: every cell, in index order.
    let all = read_entities(
        &mut c,
        entity::Entity::CounterEntry(CounterEntry {
            counter_id: cid,
            ..Default::default()
        }),
    )
    .await;
    assert_eq!(
        all,
        vec![
            counter(0, 0, 0),
            counter(1, 0, 0),
            counter(2, 5, 300),
            counter(3, 0, 0)
        ]
    );
    let one = read_entities(
        &mut c,
        entity::Entity::RegisterEntry(RegisterEntry {
            register_id: rid,
            index: Some(Index { index: 1 }),
            ..Default::default()
        }),
    )
    .await;
    assert_eq!(one, vec![register(1, vec![0xde, 0xad])]);
    // Out of range and too wide.
    let e = write(
        &mut c,
        vec![
            modify(counter(4, 1, 1)),
            modify(register(0, vec![1, 0, 0, 0, 0])),
        ],
        Atomicity::ContinueOnError,
    )
    .await
    .unwrap_err();
    assert_eq!(
        update_codes(&e),
        vec![Code::OutOfRange as i32, Code::InvalidArgument as i32]
    );
    // Meters: rates per second and bursts round-trip through the engine's per-microsecond rates.
    use p4runtime_proto::p4runtime::{MeterConfig, MeterEntry};
    let mid = info.meters[0].preamble.as_ref().unwrap().id;
    let meter = |i: i64, cir: i64, pir: i64| {
        entity::Entity::MeterEntry(MeterEntry {
            meter_id: mid,
            index: Some(Index { index: i }),
            config: Some(MeterConfig {
                cir,
                cburst: 10,
                pir,
                pburst: 20,
                eburst: 0,
            }),
            counter_data: None,
        })
    };
    write(
        &mut c,
        vec![modify(meter(1, 1000, 2000))],
        Atomicity::ContinueOnError,
    )
    .await
    .unwrap();
    let read_meter = entity::Entity::MeterEntry(MeterEntry {
        meter_id: mid,
        index: Some(Index { index: 1 }),
        ..Default::default()
    });
    assert_eq!(
        read_entities(&mut c, read_meter).await,
        vec![meter(1, 1000, 2000)]
    );
    let e = write(
        &mut c,
        vec![modify(meter(1, 3000, 2000))],
        Atomicity::ContinueOnError,
    )
    .await
    .unwrap_err();
    assert_eq!(update_codes(&e), vec![Code::InvalidArgument as i32]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn multicast_groups_and_clone_sessions() {
    use p4runtime_proto::p4runtime::{
        packet_replication_engine_entry as pre, replica, CloneSessionEntry, MulticastGroupEntry,
        PacketReplicationEngineEntry, Replica,
    };
    let (addr, _dp) = start().await;
    let (mut c, _) = Controller::connect(addr, 1).await;
    let json = stf_json("v1model.json");
    c.set_pipeline(&p4info_for(&json), &json).await.unwrap();
    let rep = |port: u8, instance: u32| Replica {
        instance,
        port_kind: Some(replica::PortKind::Port(vec![port])),
        ..Default::default()
    };
    let pre_e = |t| {
        entity::Entity::PacketReplicationEngineEntry(PacketReplicationEngineEntry {
            r#type: Some(t),
        })
    };
    let mg = |id: u32, reps: Vec<Replica>| {
        pre_e(pre::Type::MulticastGroupEntry(MulticastGroupEntry {
            multicast_group_id: id,
            replicas: reps,
            ..Default::default()
        }))
    };
    let cs = |id: u32, port: u8| {
        pre_e(pre::Type::CloneSessionEntry(CloneSessionEntry {
            session_id: id,
            replicas: vec![rep(port, 1)],
            class_of_service: 2,
            packet_length_bytes: 0,
        }))
    };
    let ins = |e| Update {
        r#type: update::Type::Insert as i32,
        entity: Some(Entity { entity: Some(e) }),
    };
    let del = |e| Update {
        r#type: update::Type::Delete as i32,
        entity: Some(Entity { entity: Some(e) }),
    };
    write(
        &mut c,
        vec![
            ins(mg(1, vec![rep(1, 1), rep(2, 1), rep(3, 2)])),
            ins(cs(5, 4)),
        ],
        Atomicity::ContinueOnError,
    )
    .await
    .unwrap();
    let e = write(
        &mut c,
        vec![ins(mg(1, vec![])), del(cs(6, 4))],
        Atomicity::ContinueOnError,
    )
    .await
    .unwrap_err();
    assert_eq!(
        update_codes(&e),
        vec![Code::AlreadyExists as i32, Code::NotFound as i32]
    );
    // class_of_service is the clones' queue: one of the 8.
    let mut bad = cs(8, 4);
    if let entity::Entity::PacketReplicationEngineEntry(PacketReplicationEngineEntry {
        r#type: Some(pre::Type::CloneSessionEntry(entry)),
    }) = &mut bad
    {
        entry.class_of_service = 8;
    }
    let e = write(&mut c, vec![ins(bad)], Atomicity::ContinueOnError)
        .await
        .unwrap_err();
    assert_eq!(update_codes(&e), vec![Code::InvalidArgument as i32]);
    write(
        &mut c,
        vec![modify(mg(1, vec![rep(7, 0)]))],
        Atomicity::ContinueOnError,
    )
    .await
    .unwrap();
    let groups = read_entities(&mut c, mg(0, vec![])).await;
    assert_eq!(groups, vec![mg(1, vec![rep(7, 0)])]);
    let sessions = read_entities(&mut c, cs(0, 0)).await;
    assert_eq!(sessions, vec![cs(5, 4)]);
    write(
        &mut c,
        vec![del(mg(1, vec![])), del(cs(5, 4))],
        Atomicity::ContinueOnError,
    )
    .await
    .unwrap();
    assert!(read_entities(&mut c, mg(0, vec![])).await.is_empty());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn action_profile_members_and_groups() {
    use p4runtime_proto::p4info::ActionProfile;
    use p4runtime_proto::p4runtime::{
        action_profile_group, ActionProfileGroup, ActionProfileMember,
    };
    let (addr, dp) = start().await;
    let (mut c, _) = Controller::connect(addr, 1).await;
    let json = std::fs::read_to_string(format!(
        "{}/../switch-v1model/tests/programs/ecmp.json",
        env!("CARGO_MANIFEST_DIR")
    ))
    .unwrap();
    let mut info = p4info_for(&json);
    let table = table_id(&info, "ingress.ipv4_lpm");
    let set_nhop = action_id(&info, "ingress.set_nhop");
    let ap = 0x1100_0001;
    info.action_profiles.push(ActionProfile {
        preamble: Some(p4runtime_proto::p4info::Preamble {
            id: ap,
            name: "ingress.ecmp_ap".into(),
            ..Default::default()
        }),
        table_ids: vec![table],
        with_selector: true,
        size: 64,
        max_group_size: 4,
        ..Default::default()
    });
    info.tables[0].implementation_id = ap;
    c.set_pipeline(&info, &json).await.unwrap();

    let member = |id: u32, port: u8| {
        entity::Entity::ActionProfileMember(ActionProfileMember {
            action_profile_id: ap,
            member_id: id,
            action: Some(Action {
                action_id: set_nhop,
                params: vec![
                    action::Param {
                        param_id: 1,
                        value: vec![port],
                    },
                    action::Param {
                        param_id: 2,
                        value: vec![port],
                    },
                ],
            }),
        })
    };
    let group = |id: u32, members: &[(u32, i32)]| {
        entity::Entity::ActionProfileGroup(ActionProfileGroup {
            action_profile_id: ap,
            group_id: id,
            members: members
                .iter()
                .map(|&(member_id, weight)| action_profile_group::Member {
                    member_id,
                    weight,
                    ..Default::default()
                })
                .collect(),
            max_size: 0,
        })
    };
    let u = |ty: update::Type, e| Update {
        r#type: ty as i32,
        entity: Some(Entity { entity: Some(e) }),
    };
    use update::Type::*;
    write(
        &mut c,
        vec![
            u(Insert, member(100, 1)),
            u(Insert, member(200, 2)),
            u(Insert, member(300, 3)),
            u(Insert, group(7, &[(100, 1), (200, 2)])),
        ],
        Atomicity::ContinueOnError,
    )
    .await
    .unwrap();
    // Errors: duplicate member, unknown member in a group, zero weight, over max_group_size.
    let e = write(
        &mut c,
        vec![
            u(Insert, member(100, 1)),
            u(Insert, group(8, &[(999, 1)])),
            u(Insert, group(9, &[(100, 0)])),
            u(Insert, group(10, &[(100, 3), (200, 2)])),
        ],
        Atomicity::ContinueOnError,
    )
    .await
    .unwrap_err();
    assert_eq!(
        update_codes(&e),
        vec![
            Code::AlreadyExists as i32,
            Code::NotFound as i32,
            Code::InvalidArgument as i32,
            Code::ResourceExhausted as i32
        ]
    );
    // Table entries pointing at the group and at a member; the member id reads back as written.
    let by_group = TableEntry {
        table_id: table,
        r#match: vec![lpm(1, vec![10, 0, 0, 0], 8)],
        action: Some(TableAction {
            r#type: Some(table_action::Type::ActionProfileGroupId(7)),
        }),
        ..Default::default()
    };
    let by_member = TableEntry {
        table_id: table,
        r#match: vec![lpm(1, vec![11, 0, 0, 0], 8)],
        action: Some(TableAction {
            r#type: Some(table_action::Type::ActionProfileMemberId(300)),
        }),
        ..Default::default()
    };
    write(
        &mut c,
        vec![
            upd(Insert, by_group.clone()),
            upd(Insert, by_member.clone()),
        ],
        Atomicity::ContinueOnError,
    )
    .await
    .unwrap();
    let mut got = read_all(&mut c, TableEntry::default()).await;
    got.sort_by_key(|t| t.r#match[0].encode_to_vec());
    let mut want = vec![by_group, by_member];
    want.sort_by_key(|t| t.r#match[0].encode_to_vec());
    assert_eq!(got, want);
    let members = read_entities(
        &mut c,
        entity::Entity::ActionProfileMember(ActionProfileMember {
            action_profile_id: ap,
            ..Default::default()
        }),
    )
    .await;
    assert_eq!(
        members,
        vec![member(100, 1), member(200, 2), member(300, 3)]
    );
    let groups = read_entities(
        &mut c,
        entity::Entity::ActionProfileGroup(ActionProfileGroup::default()),
    )
    .await;
    assert_eq!(groups, vec![group(7, &[(100, 1), (200, 2)])]);
    // A packet to 11.0.0.1 takes member 300 (port 3); one to 10.0.0.1 a group member (1 or 2).
    for dst in [[11u8, 0, 0, 1], [10, 0, 0, 1]] {
        let mut p = vec![0, 0, 0, 0, 0xaa, 0xaa, 0, 0, 0, 0, 0x0b, 0xbb, 0x08, 0x00];
        p.extend([
            0x45, 0, 0, 0x14, 0, 0, 0, 0, 0x40, 0x06, 0, 0, 0xc0, 0xa8, 0, 1,
        ]);
        p.extend(dst);
        c.tx.send(StreamMessageRequest {
            update: Some(stream_message_request::Update::Packet(PacketOut {
                payload: p,
                metadata: vec![],
            })),
        })
        .await
        .unwrap();
    }
    let mut ports = Vec::new();
    for _ in 0..100 {
        ports = dp.sent.lock().unwrap().iter().map(|o| o.port).collect();
        if ports.len() == 2 {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(10)).await;
    }
    assert_eq!(ports.len(), 2);
    assert_eq!(ports[0], 3);
    assert!(ports[1] == 1 || ports[1] == 2, "{ports:?}");
    // MODIFY moves an entry from the group to a member (and reads back so); its packets follow.
    let moved = TableEntry {
        table_id: table,
        r#match: vec![lpm(1, vec![10, 0, 0, 0], 8)],
        action: Some(TableAction {
            r#type: Some(table_action::Type::ActionProfileMemberId(300)),
        }),
        ..Default::default()
    };
    write(
        &mut c,
        vec![upd(update::Type::Modify, moved.clone())],
        Atomicity::ContinueOnError,
    )
    .await
    .unwrap();
    let got = read_all(&mut c, TableEntry::default()).await;
    assert!(got.contains(&moved), "{got:?}");
    let mut p = vec![0, 0, 0, 0, 0xaa, 0xaa, 0, 0, 0, 0, 0x0b, 0xbb, 0x08, 0x00];
    p.extend([
        0x45, 0, 0, 0x14, 0, 0, 0, 0, 0x40, 0x06, 0, 0, 0xc0, 0xa8, 0, 1, 10, 0, 0, 1,
    ]);
    c.tx.send(StreamMessageRequest {
        update: Some(stream_message_request::Update::Packet(PacketOut {
            payload: p,
            metadata: vec![],
        })),
    })
    .await
    .unwrap();
    for _ in 0..100 {
        ports = dp.sent.lock().unwrap().iter().map(|o| o.port).collect();
        if ports.len() == 3 {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(10)).await;
    }
    assert_eq!(ports.get(2), Some(&3), "{ports:?}");
    // A member in a group cannot be deleted; the group, then the member, can.
    let e = write(
        &mut c,
        vec![u(Delete, member(100, 1))],
        Atomicity::ContinueOnError,
    )
    .await
    .unwrap_err();
    assert_eq!(update_codes(&e), vec![Code::FailedPrecondition as i32]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn digests_with_acks() {
    use p4runtime_proto::p4runtime::{
        digest_entry, p4_data, DigestEntry, DigestListAck, P4Data, P4StructLike,
    };
    let (addr, _dp) = start().await;
    let (mut c, _) = Controller::connect(addr, 1).await;
    let json = stf_json("v1model.json");
    let mut info = p4info_for(&json);
    let did = 0x1700_0001;
    info.digests.push(p4runtime_proto::p4info::Digest {
        preamble: Some(p4runtime_proto::p4info::Preamble {
            id: did,
            name: "digest_t".into(),
            ..Default::default()
        }),
        type_spec: None,
    });
    c.set_pipeline(&info, &json).await.unwrap();
    let config = digest_entry::Config {
        max_timeout_ns: 0,
        max_list_size: 1,
        ack_timeout_ns: 60_000_000_000,
    };
    let de = entity::Entity::DigestEntry(DigestEntry {
        digest_id: did,
        config: Some(config),
    });
    let u = |ty: update::Type, e| Update {
        r#type: ty as i32,
        entity: Some(Entity { entity: Some(e) }),
    };
    let entry = TableEntry {
        table_id: table_id(&info, "ingress.t_op"),
        r#match: vec![FieldMatch {
            field_id: 1,
            field_match_type: Some(field_match::FieldMatchType::Exact(field_match::Exact {
                value: vec![6],
            })),
        }],
        action: act(action_id(&info, "ingress.do_digest"), vec![]),
        ..Default::default()
    };
    write(
        &mut c,
        vec![
            u(update::Type::Insert, de.clone()),
            upd(update::Type::Insert, entry),
        ],
        Atomicity::ContinueOnError,
    )
    .await
    .unwrap();
    let e = write(
        &mut c,
        vec![u(update::Type::Insert, de.clone())],
        Atomicity::ContinueOnError,
    )
    .await
    .unwrap_err();
    assert_eq!(update_codes(&e), vec![Code::AlreadyExists as i32]);
    assert_eq!(
        read_entities(&mut c, entity::Entity::DigestEntry(DigestEntry::default())).await,
        vec![de]
    );

    let packet = |mark: u8| StreamMessageRequest {
        update: Some(stream_message_request::Update::Packet(PacketOut {
            payload: vec![6, 0, 0, 0, 0, mark],
            metadata: vec![],
        })),
    };
    let want = |mark: u8| {
        vec![P4Data {
            data: Some(p4_data::Data::Struct(P4StructLike {
                members: vec![
                    P4Data {
                        data: Some(p4_data::Data::Bitstring(vec![6])),
                    },
                    P4Data {
                        data: Some(p4_data::Data::Bitstring(vec![mark])),
                    },
                ],
            })),
        }]
    };
    c.tx.send(packet(0x42)).await.unwrap();
    let first = next_digest(&mut c.rx).await;
    assert_eq!(first.digest_id, did);
    assert_eq!(first.data, want(0x42));
    // The same data is suppressed while its list is unacked; other data is not.
    c.tx.send(packet(0x42)).await.unwrap();
    c.tx.send(packet(0x43)).await.unwrap();
    let second = next_digest(&mut c.rx).await;
    assert_eq!(second.data, want(0x43));
    assert!(second.list_id > first.list_id);
    // After the ack the first data is reported again.
    c.tx.send(StreamMessageRequest {
        update: Some(stream_message_request::Update::DigestAck(DigestListAck {
            digest_id: did,
            list_id: first.list_id,
        })),
    })
    .await
    .unwrap();
    tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    c.tx.send(packet(0x42)).await.unwrap();
    let third = next_digest(&mut c.rx).await;
    assert_eq!(third.data, want(0x42));
}

async fn next_digest(
    rx: &mut tonic::Streaming<p4runtime_proto::p4runtime::StreamMessageResponse>,
) -> p4runtime_proto::p4runtime::DigestList {
    loop {
        let m = rx.message().await.unwrap().unwrap();
        if let Some(stream_message_response::Update::Digest(d)) = m.update {
            return d;
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn direct_counters_count_hits() {
    use p4runtime_proto::p4runtime::{CounterData, DirectCounterEntry};
    let (addr, _dp) = start().await;
    let (mut c, _) = Controller::connect(addr, 1).await;
    let json = stf_json("externs.json");
    let info = p4info_for(&json);
    c.set_pipeline(&info, &json).await.unwrap();
    let t = table_id(&info, "ingress.t_op");
    let key = vec![FieldMatch {
        field_id: 1,
        field_match_type: Some(field_match::FieldMatchType::Exact(field_match::Exact {
            value: vec![1],
        })),
    }];
    let entry = TableEntry {
        table_id: t,
        r#match: key.clone(),
        action: act(action_id(&info, "ingress.do_count"), vec![]),
        ..Default::default()
    };
    write(
        &mut c,
        vec![upd(update::Type::Insert, entry)],
        Atomicity::ContinueOnError,
    )
    .await
    .unwrap();
    // Two 13-byte packets (header h) hit the entry.
    for _ in 0..2 {
        let mut p = vec![1u8, 2];
        p.extend([0u8; 11]);
        c.tx.send(StreamMessageRequest {
            update: Some(stream_message_request::Update::Packet(PacketOut {
                payload: p,
                metadata: vec![],
            })),
        })
        .await
        .unwrap();
    }
    let want = entity::Entity::DirectCounterEntry(DirectCounterEntry {
        table_entry: Some(TableEntry {
            table_id: t,
            r#match: key,
            ..Default::default()
        }),
        data: Some(CounterData {
            byte_count: 26,
            packet_count: 2,
        }),
    });
    let query = entity::Entity::DirectCounterEntry(DirectCounterEntry {
        table_entry: Some(TableEntry {
            table_id: t,
            ..Default::default()
        }),
        data: None,
    });
    let mut got = Vec::new();
    for _ in 0..100 {
        got = read_entities(&mut c, query.clone()).await;
        if got == vec![want.clone()] {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(10)).await;
    }
    assert_eq!(got, vec![want]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn direct_counter_writes_and_table_counter_data() {
    use p4runtime_proto::p4runtime::{
        CounterData, DirectCounterEntry, Index, MeterConfig, MeterCounterData, MeterEntry,
    };
    use update::Type::*;
    let (addr, _dp) = start().await;
    let (mut c, _) = Controller::connect(addr, 1).await;
    let json = stf_json("externs.json");
    let info = p4info_for(&json);
    let t_op = table_id(&info, "ingress.t_op");
    let t_dm = table_id(&info, "ingress.t_dm");
    let do_count = action_id(&info, "ingress.do_count");
    // A P4Info that attaches the direct counter to another table than the JSON does.
    let mut wrong = info.clone();
    wrong.direct_counters[0].direct_table_id = t_dm;
    let e = c.set_pipeline(&wrong, &json).await.unwrap_err();
    assert_eq!(e.code(), tonic::Code::InvalidArgument);
    assert!(e.message().contains("\"ingress.t_op_counter\""), "{e:?}");
    c.set_pipeline(&info, &json).await.unwrap();
    let data = |packets: i64, bytes: i64| CounterData {
        byte_count: bytes,
        packet_count: packets,
    };
    let entry = |k: u8, counter: Option<CounterData>| TableEntry {
        table_id: t_op,
        r#match: vec![exact(1, vec![k])],
        action: act(do_count, vec![]),
        counter_data: counter,
        ..Default::default()
    };
    let key = |k: u8| TableEntry {
        table_id: t_op,
        r#match: vec![exact(1, vec![k])],
        ..Default::default()
    };
    let dce = |te: TableEntry, d: Option<CounterData>| {
        entity::Entity::DirectCounterEntry(DirectCounterEntry {
            table_entry: Some(te),
            data: d,
        })
    };
    // INSERT with counter_data starts the counter there; controller_metadata and metadata
    // are the controller's and read back unchanged.
    let mut first = entry(1, Some(data(5, 100)));
    #[allow(deprecated)]
    {
        first.controller_metadata = 0xfeed;
    }
    first.metadata = b"route 1".to_vec();
    write(
        &mut c,
        vec![upd(Insert, first.clone()), upd(Insert, entry(2, None))],
        Atomicity::ContinueOnError,
    )
    .await
    .unwrap();
    let asked = TableEntry {
        table_id: t_op,
        counter_data: Some(CounterData::default()),
        ..Default::default()
    };
    let mut second = entry(2, Some(data(0, 0)));
    assert_eq!(
        read_all(&mut c, asked.clone()).await,
        vec![first.clone(), second.clone()]
    );
    // Not asked for: no counter data.
    let mut plain = first.clone();
    plain.counter_data = None;
    assert_eq!(read_all(&mut c, key(1)).await, vec![plain]);
    // Two 13-byte packets hit entry 1; a wildcard DirectCounterEntry read (every table with a
    // direct counter) sees them on top of the initial value.
    for _ in 0..2 {
        let mut p = vec![1u8, 2];
        p.extend([0u8; 11]);
        packet_out(&mut c, p).await;
    }
    let all = dce(TableEntry::default(), None);
    let want = vec![
        dce(key(1), Some(data(7, 126))),
        dce(key(2), Some(data(0, 0))),
    ];
    let mut got = Vec::new();
    for _ in 0..100 {
        got = read_entities(&mut c, all.clone()).await;
        if got == want {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(10)).await;
    }
    assert_eq!(got, want);
    // DirectCounterEntry MODIFY sets (or with no data resets) an entry's counter.
    write(
        &mut c,
        vec![
            modify(dce(key(1), None)),
            modify(dce(key(2), Some(data(3, 30)))),
        ],
        Atomicity::ContinueOnError,
    )
    .await
    .unwrap();
    assert_eq!(
        read_entities(&mut c, dce(key(2), None)).await,
        vec![dce(key(2), Some(data(3, 30)))]
    );
    assert_eq!(
        read_entities(&mut c, all.clone()).await,
        vec![
            dce(key(1), Some(data(0, 0))),
            dce(key(2), Some(data(3, 30)))
        ]
    );
    // A TableEntry MODIFY with counter_data sets it; one without leaves it as it is.
    second.counter_data = Some(data(1, 1));
    write(
        &mut c,
        vec![upd(Modify, second.clone())],
        Atomicity::ContinueOnError,
    )
    .await
    .unwrap();
    write(
        &mut c,
        vec![upd(Modify, entry(2, None))],
        Atomicity::ContinueOnError,
    )
    .await
    .unwrap();
    let mut second_read = read_all(
        &mut c,
        TableEntry {
            counter_data: Some(CounterData::default()),
            ..key(2)
        },
    )
    .await;
    assert_eq!(second_read.len(), 1);
    assert_eq!(second_read.remove(0).counter_data, Some(data(1, 1)));
    // A ROLLBACK_ON_ERROR batch restores the counters its DirectCounterEntry and TableEntry
    // MODIFYs set, and undoes its INSERT with counter data.
    let e = write(
        &mut c,
        vec![
            modify(dce(key(2), Some(data(50, 50)))),
            upd(Modify, entry(2, Some(data(60, 60)))),
            upd(Insert, entry(3, Some(data(9, 9)))),
            upd(Insert, entry(1, None)),
        ],
        Atomicity::RollbackOnError,
    )
    .await
    .unwrap_err();
    let aborted = Code::Aborted as i32;
    assert_eq!(
        update_codes(&e),
        vec![aborted, aborted, aborted, Code::AlreadyExists as i32]
    );
    assert_eq!(
        read_entities(&mut c, dce(key(2), None)).await,
        vec![dce(key(2), Some(data(1, 1)))]
    );
    assert_eq!(read_all(&mut c, key(3)).await, vec![]);
    // Errors, per update: DirectCounterEntry INSERT, no such entry, a table without a direct
    // counter, counter_data on such a table, a negative count, meter_counter_data, a meter
    // config with an excess burst (bmv2 meters are two-rate), and the default entry.
    let mtr = info.meters[0].preamble.as_ref().unwrap().id;
    let e = write(
        &mut c,
        vec![
            ent(dce(key(1), Some(data(1, 1))), Insert),
            modify(dce(key(9), Some(data(1, 1)))),
            modify(dce(
                TableEntry {
                    table_id: t_dm,
                    r#match: vec![exact(1, vec![0])],
                    ..Default::default()
                },
                Some(data(1, 1)),
            )),
            upd(
                Insert,
                TableEntry {
                    table_id: t_dm,
                    r#match: vec![exact(1, vec![0])],
                    action: act(action_id(&info, "NoAction"), vec![]),
                    counter_data: Some(data(1, 1)),
                    ..Default::default()
                },
            ),
            modify(dce(key(1), Some(data(-1, 0)))),
            upd(
                Modify,
                TableEntry {
                    meter_counter_data: Some(MeterCounterData::default()),
                    ..entry(1, None)
                },
            ),
            modify(entity::Entity::MeterEntry(MeterEntry {
                meter_id: mtr,
                index: Some(Index { index: 0 }),
                config: Some(MeterConfig {
                    cir: 1,
                    cburst: 1,
                    pir: 1,
                    pburst: 1,
                    eburst: 1,
                }),
                counter_data: None,
            })),
            modify(dce(
                TableEntry {
                    table_id: t_op,
                    is_default_action: true,
                    ..Default::default()
                },
                Some(data(1, 1)),
            )),
        ],
        Atomicity::ContinueOnError,
    )
    .await
    .unwrap_err();
    assert_eq!(
        update_codes(&e),
        vec![
            Code::InvalidArgument as i32,
            Code::NotFound as i32,
            Code::InvalidArgument as i32,
            Code::InvalidArgument as i32,
            Code::InvalidArgument as i32,
            Code::Unimplemented as i32,
            Code::InvalidArgument as i32,
            Code::Unimplemented as i32,
        ]
    );
    // A DirectCounterEntry read of a table without a direct counter.
    let e = c
        .client
        .read(ReadRequest {
            device_id: DEVICE,
            entities: vec![Entity {
                entity: Some(dce(
                    TableEntry {
                        table_id: t_dm,
                        ..Default::default()
                    },
                    None,
                )),
            }],
            ..Default::default()
        })
        .await
        .unwrap_err();
    assert_eq!(e.code(), tonic::Code::InvalidArgument);
    // Deleting an entry forgets its controller data: the same key inserted again has none.
    write(
        &mut c,
        vec![upd(Delete, key(1)), upd(Insert, entry(1, None))],
        Atomicity::ContinueOnError,
    )
    .await
    .unwrap();
    assert_eq!(read_all(&mut c, key(1)).await, vec![entry(1, None)]);
}

fn exact(field: u32, value: Vec<u8>) -> FieldMatch {
    FieldMatch {
        field_id: field,
        field_match_type: Some(field_match::FieldMatchType::Exact(field_match::Exact {
            value,
        })),
    }
}

fn ent(e: entity::Entity, ty: update::Type) -> Update {
    Update {
        r#type: ty as i32,
        entity: Some(Entity { entity: Some(e) }),
    }
}

/// Waits until the data plane has sent `n` frames to front-panel ports; returns them.
async fn sent_frames(dp: &TestDp, n: usize) -> Vec<switch_v1model::Output> {
    for _ in 0..200 {
        if dp.sent.lock().unwrap().len() >= n {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(10)).await;
    }
    let sent = dp.sent.lock().unwrap().clone();
    assert_eq!(sent.len(), n, "frames sent");
    sent
}

async fn packet_out(c: &mut Controller, payload: Vec<u8>) {
    c.tx.send(StreamMessageRequest {
        update: Some(stream_message_request::Update::Packet(PacketOut {
            payload,
            metadata: vec![],
        })),
    })
    .await
    .unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn direct_meters_and_meter_resets() {
    use p4runtime_proto::p4info::DirectMeter;
    use p4runtime_proto::p4runtime::{DirectMeterEntry, Index, MeterConfig, MeterEntry};
    use update::Type::*;
    let (addr, dp) = start().await;
    let (mut c, _) = Controller::connect(addr, 1).await;
    let json = stf_json("externs.json");
    let mut info = p4info_for(&json);
    let t_op = table_id(&info, "ingress.t_op");
    let t_dm = table_id(&info, "ingress.t_dm");
    let dm_id = 0x1500_0001;
    info.direct_meters.push(DirectMeter {
        preamble: Some(p4runtime_proto::p4info::Preamble {
            id: dm_id,
            name: "ingress.dm".into(),
            ..Default::default()
        }),
        direct_table_id: t_dm,
        ..Default::default()
    });
    for t in info.tables.iter_mut() {
        if t.preamble.as_ref().unwrap().id == t_dm {
            t.direct_resource_ids.push(dm_id);
        }
    }
    c.set_pipeline(&info, &json).await.unwrap();
    // Committed burst 13 bytes, peak burst 26 bytes, rates of 1 byte/s: with 13-byte packets
    // green, yellow, red (the test data plane's clock stands still).
    let config = MeterConfig {
        cir: 1,
        cburst: 13,
        pir: 1,
        pburst: 26,
        eburst: 0,
    };
    let dm_entry = TableEntry {
        table_id: t_dm,
        r#match: vec![exact(1, vec![0])],
        action: act(action_id(&info, "NoAction"), vec![]),
        meter_config: Some(config),
        ..Default::default()
    };
    write(
        &mut c,
        vec![
            upd(
                Insert,
                TableEntry {
                    table_id: t_op,
                    r#match: vec![exact(1, vec![8])],
                    action: act(action_id(&info, "ingress.to_dm"), vec![]),
                    ..Default::default()
                },
            ),
            upd(Insert, dm_entry.clone()),
        ],
        Atomicity::ContinueOnError,
    )
    .await
    .unwrap();
    // h = op idx val(32) out(32) color hash(16): the colour is byte 10.
    let frame = |op: u8| {
        let mut p = vec![op, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0, 0];
        p.truncate(13);
        p
    };
    for _ in 0..3 {
        packet_out(&mut c, frame(8)).await;
    }
    let colours: Vec<u8> = sent_frames(&dp, 3)
        .await
        .iter()
        .map(|o| o.data[10])
        .collect();
    assert_eq!(colours, vec![0, 1, 2], "green, yellow, red");
    // The entry reads back with its meter config when the read asks for it (PI's rule), and
    // without when it does not.
    let got = read_all(
        &mut c,
        TableEntry {
            table_id: t_dm,
            meter_config: Some(MeterConfig::default()),
            ..Default::default()
        },
    )
    .await;
    assert_eq!(got, vec![dm_entry.clone()]);
    let got = read_all(
        &mut c,
        TableEntry {
            table_id: t_dm,
            ..Default::default()
        },
    )
    .await;
    assert_eq!(
        got,
        vec![TableEntry {
            meter_config: None,
            ..dm_entry.clone()
        }]
    );
    let key_only = TableEntry {
        table_id: t_dm,
        r#match: vec![exact(1, vec![0])],
        ..Default::default()
    };
    let direct = |config: Option<MeterConfig>| {
        entity::Entity::DirectMeterEntry(DirectMeterEntry {
            table_entry: Some(key_only.clone()),
            config,
            counter_data: None,
        })
    };
    let query = entity::Entity::DirectMeterEntry(DirectMeterEntry {
        table_entry: Some(TableEntry {
            table_id: t_dm,
            ..Default::default()
        }),
        ..Default::default()
    });
    assert_eq!(
        read_entities(&mut c, query.clone()).await,
        vec![direct(Some(config))]
    );
    // A DirectMeterEntry without a config resets the meter: every packet green again.
    write(
        &mut c,
        vec![ent(direct(None), Modify)],
        Atomicity::ContinueOnError,
    )
    .await
    .unwrap();
    assert_eq!(
        read_entities(&mut c, query.clone()).await,
        vec![direct(None)]
    );
    packet_out(&mut c, frame(8)).await;
    assert_eq!(sent_frames(&dp, 4).await[3].data[10], 0);
    // And one with a config sets it again.
    write(
        &mut c,
        vec![ent(direct(Some(config)), Modify)],
        Atomicity::ContinueOnError,
    )
    .await
    .unwrap();
    assert_eq!(
        read_entities(&mut c, query).await,
        vec![direct(Some(config))]
    );
    // Errors, per update: INSERT of a DirectMeterEntry, a missing entry, a table without a
    // direct meter, meter_config on such a table, cir > pir.
    let missing = entity::Entity::DirectMeterEntry(DirectMeterEntry {
        table_entry: Some(TableEntry {
            table_id: t_dm,
            r#match: vec![exact(1, vec![9])],
            ..Default::default()
        }),
        config: Some(config),
        counter_data: None,
    });
    let no_meter = entity::Entity::DirectMeterEntry(DirectMeterEntry {
        table_entry: Some(TableEntry {
            table_id: t_op,
            r#match: vec![exact(1, vec![8])],
            ..Default::default()
        }),
        config: Some(config),
        counter_data: None,
    });
    let bad_rates = entity::Entity::DirectMeterEntry(DirectMeterEntry {
        table_entry: Some(key_only.clone()),
        config: Some(MeterConfig {
            cir: 10,
            pir: 5,
            ..config
        }),
        counter_data: None,
    });
    let e = write(
        &mut c,
        vec![
            ent(direct(Some(config)), Insert),
            ent(missing, Modify),
            ent(no_meter, Modify),
            upd(
                Insert,
                TableEntry {
                    table_id: t_op,
                    r#match: vec![exact(1, vec![5])],
                    action: act(action_id(&info, "ingress.do_meter"), vec![]),
                    meter_config: Some(config),
                    ..Default::default()
                },
            ),
            ent(bad_rates, Modify),
        ],
        Atomicity::ContinueOnError,
    )
    .await
    .unwrap_err();
    assert_eq!(
        update_codes(&e),
        vec![
            Code::InvalidArgument as i32,
            Code::NotFound as i32,
            Code::InvalidArgument as i32,
            Code::InvalidArgument as i32,
            Code::InvalidArgument as i32,
        ]
    );
    // An indexed meter cell written without a config is unconfigured again (spec 9.5): it
    // reads back without a config and marks packets green.
    let mtr = info.meters[0].preamble.as_ref().unwrap().id;
    let cell = |config: Option<MeterConfig>| {
        entity::Entity::MeterEntry(MeterEntry {
            meter_id: mtr,
            index: Some(Index { index: 0 }),
            config,
            counter_data: None,
        })
    };
    write(
        &mut c,
        vec![
            upd(
                Insert,
                TableEntry {
                    table_id: t_op,
                    r#match: vec![exact(1, vec![5])],
                    action: act(action_id(&info, "ingress.do_meter"), vec![]),
                    ..Default::default()
                },
            ),
            ent(
                cell(Some(MeterConfig {
                    cir: 1,
                    cburst: 1,
                    pir: 1,
                    pburst: 1,
                    eburst: 0,
                })),
                Modify,
            ),
        ],
        Atomicity::ContinueOnError,
    )
    .await
    .unwrap();
    for _ in 0..2 {
        packet_out(&mut c, frame(5)).await;
    }
    let sent = sent_frames(&dp, 6).await;
    assert_eq!(
        (sent[4].data[10], sent[5].data[10]),
        (0, 2),
        "burst of 1, then red"
    );
    write(
        &mut c,
        vec![ent(cell(None), Modify)],
        Atomicity::ContinueOnError,
    )
    .await
    .unwrap();
    assert_eq!(read_entities(&mut c, cell(None)).await, vec![cell(None)]);
    packet_out(&mut c, frame(5)).await;
    assert_eq!(
        sent_frames(&dp, 7).await[6].data[10],
        0,
        "unconfigured: green"
    );
}

fn ipv4_frame(dst: [u8; 4]) -> Vec<u8> {
    let mut p = vec![0, 0, 0, 0, 0xaa, 0xaa, 0, 0, 0, 0, 0x0b, 0xbb, 0x08, 0x00];
    p.extend([
        0x45, 0, 0, 0x14, 0, 0, 0, 0, 0x40, 0x06, 0, 0, 0xc0, 0xa8, 0, 1,
    ]);
    p.extend(dst);
    p
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn one_shot_action_sets() {
    use p4runtime_proto::p4info::ActionProfile;
    use p4runtime_proto::p4runtime::{
        ActionProfileAction, ActionProfileActionSet, ActionProfileGroup, ActionProfileMember,
    };
    use update::Type::*;
    let (addr, dp) = start().await;
    let (mut c, _) = Controller::connect(addr, 1).await;
    let json = std::fs::read_to_string(format!(
        "{}/../switch-v1model/tests/programs/ecmp.json",
        env!("CARGO_MANIFEST_DIR")
    ))
    .unwrap();
    let mut info = p4info_for(&json);
    let table = table_id(&info, "ingress.ipv4_lpm");
    let set_nhop = action_id(&info, "ingress.set_nhop");
    let ap = 0x1100_0001;
    info.action_profiles.push(ActionProfile {
        preamble: Some(p4runtime_proto::p4info::Preamble {
            id: ap,
            name: "ingress.ecmp_ap".into(),
            ..Default::default()
        }),
        table_ids: vec![table],
        with_selector: true,
        size: 64,
        max_group_size: 4,
        ..Default::default()
    });
    info.tables[0].implementation_id = ap;
    c.set_pipeline(&info, &json).await.unwrap();
    let set = |ports: &[(u8, i32)]| {
        Some(TableAction {
            r#type: Some(table_action::Type::ActionProfileActionSet(
                ActionProfileActionSet {
                    action_profile_actions: ports
                        .iter()
                        .map(|&(port, weight)| ActionProfileAction {
                            action: act(set_nhop, vec![vec![port], vec![port]]).and_then(
                                |a| match a.r#type {
                                    Some(table_action::Type::Action(a)) => Some(a),
                                    _ => None,
                                },
                            ),
                            weight,
                            watch_kind: None,
                        })
                        .collect(),
                    ..Default::default()
                },
            )),
        })
    };
    let entry = |prefix: u8, action| TableEntry {
        table_id: table,
        r#match: vec![lpm(1, vec![prefix, 0, 0, 0], 8)],
        action,
        ..Default::default()
    };
    let spread = entry(10, set(&[(1, 1), (2, 1)]));
    write(
        &mut c,
        vec![upd(Insert, spread.clone())],
        Atomicity::ContinueOnError,
    )
    .await
    .unwrap();
    // The entry reads back with its action set; the hidden members and group are not visible.
    assert_eq!(read_all(&mut c, TableEntry::default()).await, vec![spread]);
    let members = entity::Entity::ActionProfileMember(ActionProfileMember {
        action_profile_id: ap,
        ..Default::default()
    });
    let groups = entity::Entity::ActionProfileGroup(ActionProfileGroup {
        action_profile_id: ap,
        ..Default::default()
    });
    assert_eq!(read_entities(&mut c, members.clone()).await, vec![]);
    assert_eq!(read_entities(&mut c, groups).await, vec![]);
    // Flows spread over both actions of the set.
    for i in 0..32u8 {
        packet_out(&mut c, ipv4_frame([10, 0, i, 1])).await;
    }
    let mut ports: Vec<u32> = sent_frames(&dp, 32).await.iter().map(|o| o.port).collect();
    ports.sort_unstable();
    ports.dedup();
    assert_eq!(ports, vec![1, 2]);
    // MODIFY replaces the set: everything now goes to port 3.
    let moved = entry(10, set(&[(3, 2)]));
    write(
        &mut c,
        vec![upd(Modify, moved.clone())],
        Atomicity::ContinueOnError,
    )
    .await
    .unwrap();
    assert_eq!(read_all(&mut c, TableEntry::default()).await, vec![moved]);
    for i in 0..8u8 {
        packet_out(&mut c, ipv4_frame([10, 0, i, 1])).await;
    }
    assert!(sent_frames(&dp, 40).await[32..].iter().all(|o| o.port == 3));
    // Errors per update: zero weight, an empty set, a weight over max_group_size, an action
    // not of the table, and a member while the profile is programmed by action sets.
    let member = entity::Entity::ActionProfileMember(ActionProfileMember {
        action_profile_id: ap,
        member_id: 1,
        action: act(set_nhop, vec![vec![1], vec![1]]).and_then(|a| match a.r#type {
            Some(table_action::Type::Action(a)) => Some(a),
            _ => None,
        }),
    });
    let e = write(
        &mut c,
        vec![
            upd(Insert, entry(11, set(&[(1, 0)]))),
            upd(Insert, entry(12, set(&[]))),
            upd(Insert, entry(13, set(&[(1, 3), (2, 2)]))),
            upd(
                Insert,
                TableEntry {
                    action: Some(TableAction {
                        r#type: Some(table_action::Type::ActionProfileActionSet(
                            ActionProfileActionSet {
                                action_profile_actions: vec![ActionProfileAction {
                                    action: Some(Action {
                                        action_id: 0x0100_0999,
                                        params: vec![],
                                    }),
                                    weight: 1,
                                    watch_kind: None,
                                }],
                                ..Default::default()
                            },
                        )),
                    }),
                    ..entry(14, None)
                },
            ),
            ent(member.clone(), Insert),
        ],
        Atomicity::ContinueOnError,
    )
    .await
    .unwrap_err();
    assert_eq!(
        update_codes(&e),
        vec![
            Code::InvalidArgument as i32,
            Code::InvalidArgument as i32,
            Code::ResourceExhausted as i32,
            Code::InvalidArgument as i32,
            Code::InvalidArgument as i32,
        ]
    );
    // DELETE removes the entry and its hidden objects: the profile takes members again.
    write(
        &mut c,
        vec![upd(Delete, entry(10, None))],
        Atomicity::ContinueOnError,
    )
    .await
    .unwrap();
    write(
        &mut c,
        vec![ent(member.clone(), Insert)],
        Atomicity::ContinueOnError,
    )
    .await
    .unwrap();
    assert_eq!(read_entities(&mut c, members).await, vec![member]);
    // ... and then refuses action sets.
    let e = write(
        &mut c,
        vec![upd(Insert, entry(10, set(&[(1, 1)])))],
        Atomicity::ContinueOnError,
    )
    .await
    .unwrap_err();
    assert_eq!(update_codes(&e), vec![Code::InvalidArgument as i32]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn value_sets() {
    use p4runtime_proto::p4info::{self, match_field, ValueSet};
    use p4runtime_proto::p4runtime::{ValueSetEntry, ValueSetMember};
    use update::Type::*;
    let (addr, dp) = start().await;
    let (mut c, _) = Controller::connect(addr, 1).await;
    let json = stf_json("parser.json");
    let mut info = p4info_for(&json);
    let vs = 0x0300_0001;
    info.value_sets.push(ValueSet {
        preamble: Some(p4runtime_proto::p4info::Preamble {
            id: vs,
            name: "pvs".into(),
            ..Default::default()
        }),
        r#match: vec![p4info::MatchField {
            id: 1,
            name: "v".into(),
            bitwidth: 8,
            r#match: Some(match_field::Match::MatchType(2)),
            ..Default::default()
        }],
        size: 4,
    });
    c.set_pipeline(&info, &json).await.unwrap();
    let entry = |values: &[u8]| {
        entity::Entity::ValueSetEntry(ValueSetEntry {
            value_set_id: vs,
            members: values
                .iter()
                .map(|v| ValueSetMember {
                    r#match: vec![exact(1, vec![*v])],
                })
                .collect(),
        })
    };
    // parser.stf: after EtherType 0x88b7, a first byte in the value set selects parse_set,
    // which records a 16-bit lookahead in out.la (bytes 18..20 of the output).
    let frame = vec![0, 0, 0, 0, 0, 1, 0, 0, 0, 0, 0, 2, 0x88, 0xb7, 0x30, 0x99];
    packet_out(&mut c, frame.clone()).await;
    assert_eq!(
        &sent_frames(&dp, 1).await[0].data[18..20],
        &[0, 0],
        "empty set"
    );
    write(
        &mut c,
        vec![ent(entry(&[0x30, 0x40]), Modify)],
        Atomicity::ContinueOnError,
    )
    .await
    .unwrap();
    let query = entity::Entity::ValueSetEntry(ValueSetEntry {
        value_set_id: 0,
        members: vec![],
    });
    assert_eq!(
        read_entities(&mut c, query.clone()).await,
        vec![entry(&[0x30, 0x40])]
    );
    packet_out(&mut c, frame.clone()).await;
    assert_eq!(
        &sent_frames(&dp, 2).await[1].data[18..20],
        &[0x30, 0x99],
        "0x30 in the set"
    );
    // A MODIFY replaces the whole set.
    write(
        &mut c,
        vec![ent(entry(&[0x40]), Modify)],
        Atomicity::ContinueOnError,
    )
    .await
    .unwrap();
    packet_out(&mut c, frame).await;
    assert_eq!(
        &sent_frames(&dp, 3).await[2].data[18..20],
        &[0, 0],
        "0x30 removed"
    );
    // Errors: INSERT, too many members, a too-wide value, a non-exact match, unknown id.
    let ternary = entity::Entity::ValueSetEntry(ValueSetEntry {
        value_set_id: vs,
        members: vec![ValueSetMember {
            r#match: vec![FieldMatch {
                field_id: 1,
                field_match_type: Some(field_match::FieldMatchType::Ternary(
                    field_match::Ternary {
                        value: vec![1],
                        mask: vec![1],
                    },
                )),
            }],
        }],
    });
    let unknown = entity::Entity::ValueSetEntry(ValueSetEntry {
        value_set_id: 0x0300_0099,
        members: vec![],
    });
    let e = write(
        &mut c,
        vec![
            ent(entry(&[1]), Insert),
            ent(entry(&[1, 2, 3, 4, 5]), Modify),
            ent(
                entity::Entity::ValueSetEntry(ValueSetEntry {
                    value_set_id: vs,
                    members: vec![ValueSetMember {
                        r#match: vec![exact(1, vec![1, 0])],
                    }],
                }),
                Modify,
            ),
            ent(ternary, Modify),
            ent(unknown, Modify),
        ],
        Atomicity::ContinueOnError,
    )
    .await
    .unwrap_err();
    assert_eq!(
        update_codes(&e),
        vec![
            Code::InvalidArgument as i32,
            Code::ResourceExhausted as i32,
            Code::InvalidArgument as i32,
            Code::InvalidArgument as i32,
            Code::NotFound as i32,
        ]
    );
    assert_eq!(read_entities(&mut c, query).await, vec![entry(&[0x40])]);
}

/// l3.json with `support_timeout` on ingress.ipv4_lpm, as p4c emits for `support_timeout = true`.
fn l3_with_timeout() -> String {
    let mut doc: serde_json::Value = serde_json::from_str(&stf_json("l3.json")).unwrap();
    for t in doc["pipelines"][0]["tables"].as_array_mut().unwrap() {
        if t["name"] == "ingress.ipv4_lpm" {
            t["support_timeout"] = serde_json::Value::Bool(true);
        }
    }
    doc.to_string()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn idle_timeout_notifications() {
    use p4runtime_proto::p4runtime::table_entry::IdleTimeout;
    use std::time::Duration;
    use update::Type::*;
    let (addr, dp) = start().await;
    let (mut c, _) = Controller::connect(addr, 1).await;
    let json = l3_with_timeout();
    let mut l3 = L3::new();
    for t in l3.info.tables.iter_mut() {
        if t.preamble.as_ref().unwrap().id == l3.table {
            t.idle_timeout_behavior = 1; // NOTIFY_CONTROL
        }
    }
    // The engine keeps hit bits only for support_timeout tables: a P4Info asking for
    // notifications on a table without it is refused.
    let e = c
        .set_pipeline(&l3.info, &stf_json("l3.json"))
        .await
        .unwrap_err();
    assert_eq!(e.code(), tonic::Code::InvalidArgument, "{e:?}");
    c.set_pipeline(&l3.info, &json).await.unwrap();
    let timeout_ns = 300_000_000;
    let ageing = TableEntry {
        idle_timeout_ns: timeout_ns,
        ..l3.route([10, 1, 0, 0], 16, 2, 2)
    };
    // Another entry without a timeout is never reported.
    let lasting = l3.route([10, 2, 0, 0], 16, 3, 3);
    let start = std::time::Instant::now();
    write(
        &mut c,
        vec![upd(Insert, ageing.clone()), upd(Insert, lasting)],
        Atomicity::ContinueOnError,
    )
    .await
    .unwrap();
    async fn next_notification(
        c: &mut Controller,
        within: Duration,
    ) -> Option<p4runtime_proto::p4runtime::IdleTimeoutNotification> {
        tokio::time::timeout(within, async {
            loop {
                let m = c.rx.message().await.unwrap().unwrap();
                if let Some(stream_message_response::Update::IdleTimeoutNotification(n)) = m.update
                {
                    return n;
                }
            }
        })
        .await
        .ok()
    }
    let n = next_notification(&mut c, Duration::from_secs(3))
        .await
        .expect("a notification for the idle entry");
    let idle_for = start.elapsed();
    assert!(
        idle_for >= Duration::from_nanos(timeout_ns as u64),
        "{idle_for:?}"
    );
    let key = TableEntry {
        action: None,
        ..ageing.clone()
    };
    assert_eq!(n.table_entry, vec![key.clone()]);
    assert!(n.timestamp > 0);
    // Once per idle period: nothing more while the entry stays idle.
    assert!(next_notification(&mut c, Duration::from_millis(600))
        .await
        .is_none());
    // Reads report the time since the last hit when asked: at least the timeout by now.
    let since = |te: &TableEntry| te.time_since_last_hit.map(|t| t.elapsed_ns);
    let asking = TableEntry {
        table_id: l3.table,
        time_since_last_hit: Some(IdleTimeout { elapsed_ns: 0 }),
        ..Default::default()
    };
    let got = read_all(&mut c, asking.clone()).await;
    assert_eq!(got.len(), 2);
    let aged = got
        .iter()
        .find(|t| t.idle_timeout_ns == timeout_ns)
        .unwrap();
    assert!(since(aged).unwrap() >= timeout_ns, "{aged:?}");
    // Without asking, no time_since_last_hit.
    assert!(read_all(&mut c, TableEntry::default())
        .await
        .iter()
        .all(|t| t.time_since_last_hit.is_none()));
    // A hit starts a new idle period: the elapsed time restarts, and a new notification follows.
    let hit_at = std::time::Instant::now();
    packet_out(&mut c, ipv4_frame([10, 1, 2, 3])).await;
    sent_frames(&dp, 1).await;
    let got = read_all(&mut c, asking).await;
    let aged = got
        .iter()
        .find(|t| t.idle_timeout_ns == timeout_ns)
        .unwrap();
    assert!(since(aged).unwrap() < timeout_ns, "{aged:?}");
    let n = next_notification(&mut c, Duration::from_secs(3))
        .await
        .expect("a second notification after the hit");
    assert!(hit_at.elapsed() >= Duration::from_nanos(timeout_ns as u64));
    assert_eq!(n.table_entry, vec![key]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn named_roles_elect_their_own_primary() {
    use update::Type::*;
    let (addr, _dp) = start().await;
    let l3 = L3::new();
    // The default role's primary sets the pipeline.
    let (mut d, code) = Controller::connect(addr, 1).await;
    assert_eq!(code, Code::Ok as i32);
    d.set_pipeline(&l3.info, &stf_json("l3.json"))
        .await
        .unwrap();
    // Each role elects its own primary, whatever the election ids of other roles.
    let (mut a, code) = Controller::connect_role(addr, 7, "routes").await;
    assert_eq!(code, Code::Ok as i32, "first of role routes");
    let (mut b, code) = Controller::connect_role(addr, 3, "acl").await;
    assert_eq!(code, Code::Ok as i32, "first of role acl, with a lower id");
    let (a_backup, code) = Controller::connect_role(addr, 5, "routes").await;
    assert_eq!(code, Code::AlreadyExists as i32, "a backup of role routes");
    let write_as = |role: &str, election: u64, prefix: u8| WriteRequest {
        device_id: DEVICE,
        role: role.into(),
        election_id: eid(election),
        updates: vec![upd(Insert, l3.route([prefix, 0, 0, 0], 8, 1, 1))],
        atomicity: Atomicity::ContinueOnError as i32,
        ..Default::default()
    };
    a.client.write(write_as("routes", 7, 10)).await.unwrap();
    b.client.write(write_as("acl", 3, 11)).await.unwrap();
    d.client.write(write_as("", 1, 12)).await.unwrap();
    // A backup of the role, or another role's election id: PERMISSION_DENIED.
    let e = a.client.write(write_as("routes", 5, 13)).await.unwrap_err();
    assert_eq!(e.code(), tonic::Code::PermissionDenied);
    let e = a.client.write(write_as("routes", 3, 13)).await.unwrap_err();
    assert_eq!(e.code(), tonic::Code::PermissionDenied);
    // The role's primary leaves: its backup is promoted, and told so.
    let mut a_backup = a_backup;
    drop(a);
    assert_eq!(a_backup.next_arbitration().await, Code::Ok as i32);
    a_backup
        .client
        .write(write_as("routes", 5, 13))
        .await
        .unwrap();
    assert_eq!(read_all(&mut d, TableEntry::default()).await.len(), 4);
}

/// A `stratum.P4RoleConfig` as a role config.
fn role_config(exclusive: Vec<u32>, receives_packet_ins: bool) -> prost_types::Any {
    prost_types::Any {
        type_url: p4runtime_server::ROLE_CONFIG_TYPE_URL.into(),
        value: p4runtime_server::P4RoleConfig {
            exclusive_p4_ids: exclusive,
            receives_packet_ins,
            ..Default::default()
        }
        .encode_to_vec(),
    }
}

/// The status a refused MasterArbitrationUpdate closes the stream with.
async fn arbitration_refused(
    addr: std::net::SocketAddr,
    election_id: u64,
    role: &str,
    config: Option<prost_types::Any>,
) -> tonic::Status {
    let mut client = p4runtime_proto::P4RuntimeClient::connect(format!("http://{addr}"))
        .await
        .unwrap();
    let (tx, rx) = tokio::sync::mpsc::channel(4);
    let mut stream = client
        .stream_channel(tokio_stream::wrappers::ReceiverStream::new(rx))
        .await
        .unwrap()
        .into_inner();
    tx.send(StreamMessageRequest {
        update: Some(stream_message_request::Update::Arbitration(
            p4runtime_proto::p4runtime::MasterArbitrationUpdate {
                device_id: DEVICE,
                election_id: eid(election_id),
                role: Some(p4runtime_proto::p4runtime::Role {
                    name: role.into(),
                    config,
                    ..Default::default()
                }),
                ..Default::default()
            },
        )),
    })
    .await
    .unwrap();
    stream.message().await.unwrap_err()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn role_configs_confine_roles() {
    use p4runtime_proto::p4runtime::{
        packet_replication_engine_entry as pre, MulticastGroupEntry, PacketReplicationEngineEntry,
    };
    use update::Type::*;
    let (addr, _dp) = start().await;
    let l3 = L3::new();
    let (mut d, _) = Controller::connect(addr, 1).await;
    d.set_pipeline(&l3.info, &stf_json("l3.json"))
        .await
        .unwrap();
    // "routes" holds the LPM table and takes PacketIns; "viewer" holds nothing.
    let (mut r, code) =
        Controller::connect_config(addr, 2, "routes", Some(role_config(vec![l3.table], true)))
            .await;
    assert_eq!(code, Code::Ok as i32);
    let viewer = || Some(role_config(vec![], false));
    let (mut v, code) = Controller::connect_config(addr, 3, "viewer", viewer()).await;
    assert_eq!(code, Code::Ok as i32);
    let write_as = |c: &Controller, role: &str, updates: Vec<Update>| WriteRequest {
        device_id: DEVICE,
        role: role.into(),
        election_id: eid(c.election_id),
        updates,
        atomicity: Atomicity::ContinueOnError as i32,
        ..Default::default()
    };
    let mcast = entity::Entity::PacketReplicationEngineEntry(PacketReplicationEngineEntry {
        r#type: Some(pre::Type::MulticastGroupEntry(MulticastGroupEntry {
            multicast_group_id: 1,
            ..Default::default()
        })),
    });
    // Its own table: written; the packet replication engine (no P4 id): PERMISSION_DENIED.
    let req = write_as(
        &r,
        "routes",
        vec![
            upd(Insert, l3.route([10, 0, 0, 0], 8, CPU_PORT as u8, 1)),
            ent(mcast.clone(), Insert),
        ],
    );
    let e = r.client.write(req).await.unwrap_err();
    assert_eq!(
        update_codes(&e),
        vec![Code::Ok as i32, Code::PermissionDenied as i32]
    );
    let req = write_as(
        &v,
        "viewer",
        vec![upd(Insert, l3.route([11, 0, 0, 0], 8, 1, 1))],
    );
    let e = v.client.write(req).await.unwrap_err();
    assert_eq!(update_codes(&e), vec![Code::PermissionDenied as i32]);
    // The default role keeps the whole pipeline.
    let req = write_as(
        &d,
        "",
        vec![
            upd(Insert, l3.route([12, 0, 0, 0], 8, 1, 1)),
            ent(mcast.clone(), Insert),
        ],
    );
    d.client.write(req).await.unwrap();
    // Without can_push_pipeline, no pipeline.
    let e = r
        .client
        .set_forwarding_pipeline_config(SetForwardingPipelineConfigRequest {
            device_id: DEVICE,
            role: "routes".into(),
            election_id: eid(2),
            action: 3,
            ..Default::default()
        })
        .await
        .unwrap_err();
    assert_eq!(e.code(), tonic::Code::PermissionDenied);
    // Reads in a role see that role's objects only.
    let read_as = |role: &str, e: entity::Entity| ReadRequest {
        device_id: DEVICE,
        role: role.into(),
        entities: vec![Entity { entity: Some(e) }],
    };
    let count = |c: &mut Controller, req: ReadRequest| {
        let mut client = c.client.clone();
        async move {
            let mut s = client.read(req).await.unwrap().into_inner();
            let mut n = 0;
            while let Some(r) = s.message().await.unwrap() {
                n += r.entities.len();
            }
            n
        }
    };
    let all_entries = entity::Entity::TableEntry(TableEntry::default());
    assert_eq!(
        count(&mut d, read_as("routes", all_entries.clone())).await,
        2
    );
    assert_eq!(
        count(&mut d, read_as("viewer", all_entries.clone())).await,
        0
    );
    assert_eq!(count(&mut d, read_as("", all_entries)).await, 2);
    assert_eq!(count(&mut d, read_as("routes", mcast.clone())).await, 0);
    assert_eq!(count(&mut d, read_as("", mcast)).await, 1);
    // A PacketIn reaches the primaries whose config takes PacketIns: the default role's and
    // "routes", not "viewer". Streams are ordered, so once "routes" has the PacketIn, the
    // next message "viewer" gets after re-arbitrating is the arbitration reply.
    let mut frame = vec![0, 0, 0, 0, 0xaa, 0xaa, 0, 0, 0, 0, 0x0b, 0xbb, 0x08, 0x00];
    frame.extend([
        0x45, 0, 0, 0x14, 0, 0, 0, 0, 0x40, 0x06, 0, 0, 0xc0, 0xa8, 0, 1, 10, 1, 2, 3,
    ]);
    packet_out(&mut d, frame).await;
    loop {
        let m = r.rx.message().await.unwrap().unwrap();
        if let Some(stream_message_response::Update::Packet(_)) = m.update {
            break;
        }
    }
    v.arbitrate("viewer", viewer()).await;
    let m = v.rx.message().await.unwrap().unwrap();
    assert!(
        matches!(
            m.update,
            Some(stream_message_response::Update::Arbitration(_))
        ),
        "{m:?}"
    );
    // Refused: a config listing what another role holds exclusively, a config for the default
    // role, and a config type this switch does not know.
    let e = arbitration_refused(addr, 9, "acl", Some(role_config(vec![l3.table], false))).await;
    assert_eq!(e.code(), tonic::Code::InvalidArgument);
    assert!(e.message().contains("\"routes\""), "{e:?}");
    let e = arbitration_refused(addr, 9, "", Some(role_config(vec![], false))).await;
    assert_eq!(e.code(), tonic::Code::InvalidArgument);
    let e = arbitration_refused(
        addr,
        9,
        "acl",
        Some(prost_types::Any {
            type_url: "type.googleapis.com/example.OtherRoleConfig".into(),
            value: vec![],
        }),
    )
    .await;
    assert_eq!(e.code(), tonic::Code::Unimplemented);
    assert!(e.message().contains("stratum.P4RoleConfig"), "{e:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn reads_of_unknown_ids_are_not_found() {
    use p4runtime_proto::p4runtime::{
        ActionProfileGroup, ActionProfileMember, CounterEntry, DigestEntry, ValueSetEntry,
    };
    let (addr, _dp) = start().await;
    let l3 = L3::new();
    let (mut c, _) = Controller::connect(addr, 1).await;
    c.set_pipeline(&l3.info, &stf_json("l3.json"))
        .await
        .unwrap();
    let of_id = |id: u32| {
        vec![
            entity::Entity::DigestEntry(DigestEntry {
                digest_id: id,
                config: None,
            }),
            entity::Entity::ActionProfileMember(ActionProfileMember {
                action_profile_id: id,
                ..Default::default()
            }),
            entity::Entity::ActionProfileGroup(ActionProfileGroup {
                action_profile_id: id,
                ..Default::default()
            }),
            entity::Entity::ValueSetEntry(ValueSetEntry {
                value_set_id: id,
                members: vec![],
            }),
            entity::Entity::CounterEntry(CounterEntry {
                counter_id: id,
                ..Default::default()
            }),
            entity::Entity::TableEntry(TableEntry {
                table_id: id,
                ..Default::default()
            }),
        ]
    };
    // Id 0 is every object of the kind (l3.json has none of the first five, no entries yet).
    for e in of_id(0) {
        assert_eq!(read_entities(&mut c, e).await, vec![]);
    }
    for e in of_id(99) {
        let err = c
            .client
            .read(ReadRequest {
                device_id: DEVICE,
                entities: vec![Entity {
                    entity: Some(e.clone()),
                }],
                ..Default::default()
            })
            .await
            .unwrap_err();
        assert_eq!(err.code(), tonic::Code::NotFound, "{e:?}");
    }
}

/// The canonical code and message of each update, from the batch status details (spec 12.4).
fn update_errors(s: &tonic::Status) -> Vec<(i32, String)> {
    assert_eq!(s.code(), tonic::Code::Unknown, "{s:?}");
    rpc::Status::decode(s.details())
        .unwrap()
        .details
        .iter()
        .map(|a| {
            let e = p4runtime_proto::p4runtime::Error::decode(a.value.as_slice()).unwrap();
            (e.canonical_code, e.message)
        })
        .collect()
}

/// Writes `updates` as `d` (default role: read in place) and as `r` (a role with a config:
/// decoded), and checks both fail each update alike, with the `want` codes.
async fn both_ways(d: &mut Controller, r: &mut Controller, updates: Vec<Update>, want: Vec<Code>) {
    let req = |c: &Controller, role: &str| WriteRequest {
        device_id: DEVICE,
        role: role.into(),
        election_id: eid(c.election_id),
        updates: updates.clone(),
        atomicity: Atomicity::ContinueOnError as i32,
        ..Default::default()
    };
    let in_place = update_errors(&d.client.write(req(d, "")).await.unwrap_err());
    let decoded = update_errors(&r.client.write(req(r, "r")).await.unwrap_err());
    assert_eq!(in_place, decoded);
    let codes: Vec<i32> = in_place.iter().map(|e| e.0).collect();
    let want: Vec<i32> = want.iter().map(|c| *c as i32).collect();
    assert_eq!(codes, want, "{in_place:#?}");
}

/// Table entries are read in place from the wire unless the writer's role has a config (its
/// filter needs the decoded entity): the same bad updates written both ways fail with the
/// same code and message, each as the spec's rule for it says.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn both_decoders_report_the_same_errors() {
    use update::Type::*;
    use Code::*;
    let (addr, _dp) = start().await;
    let (mut d, _) = Controller::connect(addr, 1).await;
    let l3 = L3::new();
    let json = stf_json("tables.json");
    let info = p4info_for(&json);
    let ids: Vec<u32> = l3
        .info
        .tables
        .iter()
        .chain(&info.tables)
        .map(|t| t.preamble.as_ref().unwrap().id)
        .collect();
    let (mut r, code) =
        Controller::connect_config(addr, 2, "r", Some(role_config(ids, false))).await;
    assert_eq!(code, Code::Ok as i32);
    d.set_pipeline(&l3.info, &stf_json("l3.json"))
        .await
        .unwrap();
    let route = |f: &dyn Fn(&mut TableEntry)| {
        let mut te = l3.route([10, 1, 0, 0], 16, 1, 1);
        f(&mut te);
        upd(Insert, te)
    };
    let mut unspecified = route(&|_| {});
    unspecified.r#type = Unspecified as i32;
    let (other_action, no_such_action) = (l3.drop, 0x01ff_ffff);
    let updates = vec![
        unspecified,
        route(&|te| te.r#match = vec![lpm(1, vec![10, 1, 0, 0], 33)]),
        route(&|te| te.r#match = vec![lpm(1, vec![10, 1, 0, 0], -1)]),
        route(&|te| te.r#match = vec![lpm(1, vec![10, 1, 0, 0], 0)]),
        route(&|te| te.r#match = vec![lpm(1, vec![10, 1, 0, 1], 16)]),
        route(&|te| te.r#match = vec![lpm(1, vec![1, 10, 1, 0, 0], 16)]),
        route(&|te| te.r#match = vec![lpm(1, vec![0, 10, 1, 0, 0], 16)]),
        route(&|te| te.r#match = vec![lpm(1, vec![], 16)]),
        route(&|te| te.r#match.push(lpm(2, vec![10, 1, 0, 0], 16))),
        route(&|te| te.r#match.push(lpm(1, vec![10, 1, 0, 0], 16))),
        route(&|te| te.r#match = vec![exact(1, vec![10, 1, 0, 0])]),
        route(&|te| te.priority = 5),
        route(&|te| te.action = act(no_such_action, vec![])),
        route(&|te| te.action = act(other_action, vec![vec![1]])),
        route(&|te| te.action = act(l3.set_nhop, vec![vec![1]])),
        route(&|te| {
            if let Some(table_action::Type::Action(a)) =
                te.action.as_mut().and_then(|a| a.r#type.as_mut())
            {
                a.params[1].param_id = 3;
            }
        }),
        route(&|te| te.action = act(l3.set_nhop, vec![vec![2, 0], vec![1]])),
        route(&|te| te.action = act(l3.set_nhop, vec![vec![1], vec![]])),
        route(&|te| te.action = None),
        upd(Modify, l3.route([10, 9, 0, 0], 16, 1, 1)),
        upd(Delete, l3.route([10, 9, 0, 0], 16, 1, 1)),
    ];
    let mut want = vec![InvalidArgument; updates.len() - 2];
    want.extend([NotFound, NotFound]);
    both_ways(&mut d, &mut r, updates, want).await;

    // Ternary, exact, range and optional keys (tables.json).
    d.set_pipeline(&info, &json).await.unwrap();
    let tern = table_id(&info, "ingress.t_tern");
    let range = table_id(&info, "ingress.t_range");
    let opt = table_id(&info, "ingress.t_opt");
    let set = |name: &str| act(action_id(&info, name), vec![vec![1]]);
    let fm = |id: u32, m: field_match::FieldMatchType| FieldMatch {
        field_id: id,
        field_match_type: Some(m),
    };
    let ternary = |value: Vec<u8>, mask: Vec<u8>| {
        fm(
            1,
            field_match::FieldMatchType::Ternary(field_match::Ternary { value, mask }),
        )
    };
    let entry = |table: u32, r#match: Vec<FieldMatch>, action: &str, priority: i32| {
        upd(
            Insert,
            TableEntry {
                table_id: table,
                r#match,
                action: set(action),
                priority,
                ..Default::default()
            },
        )
    };
    let range_of = |low: Vec<u8>, high: Vec<u8>| {
        vec![fm(
            1,
            field_match::FieldMatchType::Range(field_match::Range { low, high }),
        )]
    };
    let updates = vec![
        entry(
            tern,
            vec![ternary(vec![0x0f], vec![0xf0]), exact(2, vec![1])],
            "ingress.set_tern",
            10,
        ),
        entry(
            tern,
            vec![ternary(vec![0x10], vec![0xf0]), exact(2, vec![1])],
            "ingress.set_tern",
            0,
        ),
        entry(
            tern,
            vec![ternary(vec![0], vec![0]), exact(2, vec![1])],
            "ingress.set_tern",
            10,
        ),
        entry(
            tern,
            vec![ternary(vec![0x10], vec![0xf0])],
            "ingress.set_tern",
            10,
        ),
        entry(
            tern,
            vec![ternary(vec![0x10], vec![1, 0xf0]), exact(2, vec![1])],
            "ingress.set_tern",
            10,
        ),
        entry(range, range_of(vec![9], vec![2]), "ingress.set_range", 10),
        entry(
            range,
            range_of(vec![0], vec![0xff, 0xff]),
            "ingress.set_range",
            10,
        ),
        entry(
            range,
            range_of(vec![1], vec![1, 0, 0]),
            "ingress.set_range",
            10,
        ),
        entry(
            opt,
            vec![exact(1, vec![1]), exact(2, vec![1])],
            "ingress.set_opt",
            10,
        ),
        entry(opt, vec![exact(2, vec![1])], "ingress.set_opt", 0),
        entry(opt, vec![exact(2, vec![1])], "ingress.set_tern", 10),
    ];
    both_ways(&mut d, &mut r, updates, vec![InvalidArgument; 11]).await;
}
