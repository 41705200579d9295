//! Control-plane API, action selectors, digests, value sets and the ingress/egress split,
//! on the hand-written programs under tests/.

use switch_v1model::*;

fn load(rel: &str) -> Switch {
    let path = format!("{}/tests/{rel}", env!("CARGO_MANIFEST_DIR"));
    let text = std::fs::read_to_string(&path).unwrap();
    Switch::from_json(&text, SwitchConfig::default()).unwrap()
}

fn ipv4(src: u32, dst: u32, proto: u8) -> Vec<u8> {
    let mut p = vec![0, 0, 0, 0, 0xaa, 0xaa, 0, 0, 0, 0, 0x0b, 0xbb, 0x08, 0x00];
    p.extend_from_slice(&[0x45, 0, 0, 20, 0, 0, 0, 0, 64, proto, 0, 0]);
    p.extend_from_slice(&src.to_be_bytes());
    p.extend_from_slice(&dst.to_be_bytes());
    p
}

fn run(sw: &mut Switch, port: u32, data: &[u8]) -> Vec<Output> {
    let mut out = Vec::new();
    sw.process(port, data, 10, &mut out);
    out
}

#[test]
fn selector_spreads_flows_over_group_members_by_hash() {
    let mut sw = load("programs/ecmp.json");
    let mut members = Vec::new();
    for port in 1u8..=4 {
        let m = sw
            .profile_add_member(
                "ingress.ecmp_ap",
                "ingress.set_nhop",
                &[vec![0, port], vec![0, 0, 0, 0, 0, port]],
            )
            .unwrap();
        members.push(m);
    }
    let group: Vec<(u32, u32)> = members.iter().map(|&m| (m, 1)).collect();
    sw.profile_set_group("ingress.ecmp_ap", 7, &group).unwrap();
    sw.table_add_group_entry(
        "ingress.ipv4_lpm",
        &[FieldMatch::Lpm {
            value: vec![10, 0, 0, 0],
            prefix_len: 8,
        }],
        None,
        7,
    )
    .unwrap();
    let crc16 = switch_hash::Algorithm::from_bmv2_name("crc16").unwrap();
    let mut used = [0u32; 5];
    for i in 0..200u32 {
        let src = 0xc0a8_0000 + i;
        let dst = 0x0a00_0001;
        let out = run(&mut sw, 0, &ipv4(src, dst, 6));
        assert_eq!(out.len(), 1);
        // bmv2 hashes the selector fields packed back to back: src, dst, protocol.
        let mut input = src.to_be_bytes().to_vec();
        input.extend_from_slice(&dst.to_be_bytes());
        input.push(6);
        let expected = 1 + (crc16.compute(&input) % 4) as u32;
        assert_eq!(out[0].port, expected, "flow {i}");
        assert_eq!(
            out[0].data[5], expected as u8,
            "dmac rewritten from the member's data"
        );
        used[out[0].port as usize] += 1;
        // Same flow, same member.
        assert_eq!(run(&mut sw, 0, &ipv4(src, dst, 6))[0].port, expected);
    }
    assert!(used[1..].iter().all(|&n| n > 20), "uneven spread {used:?}");
    // Deleting a member still in a group is refused.
    let e = sw
        .profile_delete_member("ingress.ecmp_ap", members[0])
        .unwrap_err();
    assert_eq!(e.code, ErrorCode::MemberStillUsed);
}

#[test]
fn control_plane_errors_have_closed_codes() {
    let mut sw = load("stf/tables.json");
    let e = |r: Result<EntryHandle, ApiError>| r.unwrap_err().code;
    let ex = |v: u8| vec![FieldMatch::Exact(vec![v])];
    assert_eq!(
        e(sw.table_add("nope", ex(1), None, "NoAction", &[])),
        ErrorCode::InvalidTableName
    );
    assert_eq!(
        e(sw.table_add("ingress.t_exact", ex(1), None, "nope", &[])),
        ErrorCode::InvalidActionName
    );
    assert_eq!(
        e(sw.table_add(
            "ingress.t_exact",
            ex(1),
            None,
            "ingress.set_tern",
            &[vec![1]]
        )),
        ErrorCode::ActionNotInTable
    );
    assert_eq!(
        e(sw.table_add(
            "ingress.t_exact",
            ex(1),
            None,
            "ingress.set_exact",
            &[vec![1, 0]]
        )),
        ErrorCode::BadActionData
    );
    assert_eq!(
        e(sw.table_add(
            "ingress.t_exact",
            vec![],
            None,
            "ingress.set_exact",
            &[vec![1]]
        )),
        ErrorCode::BadMatchKey
    );
    let h = sw
        .table_add(
            "ingress.t_exact",
            ex(1),
            None,
            "ingress.set_exact",
            &[vec![1]],
        )
        .unwrap();
    assert_eq!(
        e(sw.table_add(
            "ingress.t_exact",
            ex(1),
            None,
            "ingress.set_exact",
            &[vec![2]]
        )),
        ErrorCode::DuplicateEntry
    );
    assert_eq!(
        e(sw.table_add(
            "ingress.t_const",
            ex(9),
            None,
            "ingress.set_const",
            &[vec![1]]
        )),
        ErrorCode::ImmutableTableEntries
    );
    let err = sw
        .table_set_default("ingress.t_const", "ingress.set_const", &[vec![1]])
        .unwrap_err();
    assert_eq!(err.code, ErrorCode::DefaultEntryIsConst);
    // Reading back what was installed.
    let entries = sw.table_entries("ingress.t_exact").unwrap();
    assert_eq!(entries.len(), 1);
    assert_eq!(
        entries[0].action,
        EntryAction::Action {
            name: "ingress.set_exact".into(),
            args: vec![vec![1]]
        }
    );
    assert_eq!(sw.table_entries("ingress.t_const").unwrap().len(), 2);
    sw.table_modify("ingress.t_exact", h, "ingress.set_exact", &[vec![5]])
        .unwrap();
    sw.table_delete("ingress.t_exact", h).unwrap();
    assert_eq!(
        sw.table_delete("ingress.t_exact", h).unwrap_err().code,
        ErrorCode::InvalidHandle
    );
    for i in 0..64u8 {
        sw.table_add(
            "ingress.t_exact",
            ex(i),
            None,
            "ingress.set_exact",
            &[vec![i]],
        )
        .unwrap();
    }
    assert_eq!(
        e(sw.table_add(
            "ingress.t_exact",
            ex(200),
            None,
            "ingress.set_exact",
            &[vec![0]]
        )),
        ErrorCode::TableFull
    );
    assert_eq!(
        sw.register_read("nope", 0).unwrap_err().code,
        ErrorCode::InvalidRegisterName
    );
    assert_eq!(
        sw.mc_node_associate(9, 0).unwrap_err().code,
        ErrorCode::InvalidMulticastGroup
    );
}

/// A table and action resolved once add entries as `table_add` does, and resolving fails with
/// `table_add`'s codes.
#[test]
fn resolved_table_and_action_add_entries_like_table_add() {
    let mut sw = load("stf/tables.json");
    let code = |r: Result<TableAction, ApiError>| r.unwrap_err().code;
    assert_eq!(
        code(sw.table_action_of("nope", "NoAction")),
        ErrorCode::InvalidTableName
    );
    assert_eq!(
        code(sw.table_action_of("ingress.t_exact", "nope")),
        ErrorCode::InvalidActionName
    );
    assert_eq!(
        code(sw.table_action_of("ingress.t_exact", "ingress.set_tern")),
        ErrorCode::ActionNotInTable
    );
    let ta = sw
        .table_action_of("ingress.t_exact", "ingress.set_exact")
        .unwrap();
    for v in 1..=3u8 {
        sw.table_add_resolved(ta, &[FieldMatch::Exact(vec![v])], None, &[vec![v + 10]])
            .unwrap();
    }
    let dup = sw.table_add_resolved(ta, &[FieldMatch::Exact(vec![2])], None, &[vec![0]]);
    assert_eq!(dup.unwrap_err().code, ErrorCode::DuplicateEntry);
    let bad = sw.table_add_resolved(ta, &[FieldMatch::Exact(vec![4])], None, &[vec![1, 0]]);
    assert_eq!(bad.unwrap_err().code, ErrorCode::BadActionData);
    let got: Vec<(Vec<FieldMatch>, EntryAction)> = sw
        .table_entries("ingress.t_exact")
        .unwrap()
        .into_iter()
        .map(|e| (e.matches, e.action))
        .collect();
    let want: Vec<(Vec<FieldMatch>, EntryAction)> = (1..=3u8)
        .map(|v| {
            (
                vec![FieldMatch::Exact(vec![v])],
                EntryAction::Action {
                    name: "ingress.set_exact".into(),
                    args: vec![vec![v + 10]],
                },
            )
        })
        .collect();
    assert_eq!(got, want);
    let ecmp = load("programs/ecmp.json");
    assert_eq!(
        code(ecmp.table_action_of("ingress.ipv4_lpm", "ingress.set_nhop")),
        ErrorCode::WrongTableType
    );
}

#[test]
fn digests_carry_the_learn_list_fields() {
    let mut sw = load("stf/v1model.json");
    sw.table_add(
        "ingress.t_op",
        vec![FieldMatch::Exact(vec![6])],
        None,
        "ingress.do_digest",
        &[],
    )
    .unwrap();
    let out = run(&mut sw, 0, &[6, 0, 0, 0, 0, 0x42]);
    assert_eq!(out.len(), 1);
    let d = sw.take_digests();
    assert_eq!(d.len(), 1);
    assert_eq!(d[0].list_name, "digest_t");
    assert_eq!(d[0].values, vec![vec![6], vec![0x42]]);
    assert!(sw.take_digests().is_empty());
}

#[test]
fn parse_value_set_selects_a_state() {
    let mut sw = load("stf/parser.json");
    let pkt = |b: u8| {
        let mut p = vec![0, 0, 0, 0, 0, 1, 0, 0, 0, 0, 0, 2, 0x88, 0xb7];
        p.extend_from_slice(&[b, 0x99, 0x55]);
        p
    };
    // Before the value is added, 0x30 takes the default transition: nothing extracted.
    let out = run(&mut sw, 0, &pkt(0x30));
    assert_eq!(&out[0].data[14..], &[0, 0, 0, 0, 0, 0, 0, 0x30, 0x99, 0x55]);
    sw.parse_vset_add("pvs", &[0x30]).unwrap();
    // Now parse_set runs: la = lookahead 16 bits (0x3099), then `single` is extracted.
    let out = run(&mut sw, 0, &pkt(0x30));
    assert_eq!(
        &out[0].data[14..],
        &[0, 0, 0, 0, 0x30, 0x99, 0, 0x30, 0x99, 0x55]
    );
}

#[test]
fn ingress_and_egress_can_be_split_around_a_traffic_manager() {
    let mut sw = load("stf/v1model.json");
    sw.mc_mgrp_create(1).unwrap();
    let n = sw.mc_node_create(3, &[4, 2]);
    sw.mc_node_associate(1, n).unwrap();
    sw.table_add(
        "ingress.t_op",
        vec![FieldMatch::Exact(vec![5])],
        None,
        "ingress.do_mcast",
        &[],
    )
    .unwrap();
    let mut jobs = Vec::new();
    sw.ingress(7, &[5, 0, 0, 0, 0, 0], 100, &mut jobs);
    let ports: Vec<u32> = jobs.iter().map(|j| j.port).collect();
    assert_eq!(ports, vec![2, 4], "PRE replicates in ascending port order");
    assert_eq!(jobs[0].len(), 6);
    let mut more = Vec::new();
    let outs: Vec<Output> = jobs
        .into_iter()
        .filter_map(|j| sw.egress(j, QueueMeta::default(), 150, &mut more))
        .collect();
    assert!(more.is_empty());
    assert_eq!(outs.len(), 2);
    assert_eq!(outs[1].port, 4);
    assert_eq!(
        outs[1].data,
        vec![5, 5, 0, 0, 3, 0],
        "instance type 5, rid 3"
    );
    let st = sw.stats();
    assert_eq!((st.received, st.transmitted, st.replicated), (1, 2, 2));
}

#[test]
fn registers_counters_and_meters_are_bounds_checked() {
    let mut sw = load("stf/externs.json");
    assert_eq!(
        sw.register_read("ingress.reg", 4).unwrap_err().code,
        ErrorCode::IndexOutOfRange
    );
    assert_eq!(
        sw.register_write("ingress.reg", 0, 1 << 32)
            .unwrap_err()
            .code,
        ErrorCode::BadValue
    );
    assert_eq!(
        sw.counter_read("ingress.cnt", 9).unwrap_err().code,
        ErrorCode::IndexOutOfRange
    );
    let rate = MeterRate {
        rate_per_us: 1.0,
        burst: 1,
    };
    assert_eq!(
        sw.meter_set_rates("ingress.mtr", Some(0), &[rate])
            .unwrap_err()
            .code,
        ErrorCode::BadValue
    );
    // A register index past the end in the data plane is counted, not fatal.
    sw.table_add(
        "ingress.t_op",
        vec![FieldMatch::Exact(vec![2])],
        None,
        "ingress.do_reg_write",
        &[],
    )
    .unwrap();
    let out = run(&mut sw, 0, &[2, 9, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0]);
    assert_eq!(out.len(), 1);
    assert_eq!(sw.stats().index_errors, 1);
}

#[test]
fn parse_value_set_values_are_split_into_padded_key_fields() {
    // parse_look keyed on two lookaheads of 4 and 12 bits: the set's compressed width is 16,
    // the key is 1 + 2 bytes.
    let path = format!("{}/tests/stf/parser.json", env!("CARGO_MANIFEST_DIR"));
    let mut v: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
    let state = &mut v["parsers"][0]["parse_states"][3];
    state["transition_key"] = serde_json::json!([
        {"type": "lookahead", "value": [0, 4]},
        {"type": "lookahead", "value": [4, 12]}
    ]);
    state["transitions"][0]["value"] = serde_json::json!("0xffffff");
    v["parse_vsets"][0]["compressed_bitwidth"] = serde_json::json!(16);
    let mut sw = Switch::from_json(&v.to_string(), SwitchConfig::default()).unwrap();
    sw.parse_vset_add("pvs", &[0x30, 0x99]).unwrap();
    assert_eq!(
        sw.parse_vset_add("pvs", &[1, 0x30, 0x99]).unwrap_err().code,
        ErrorCode::BadValue
    );
    let mut p = vec![0, 0, 0, 0, 0, 1, 0, 0, 0, 0, 0, 2, 0x88, 0xb7];
    p.extend_from_slice(&[0x30, 0x99, 0x55]);
    let out = run(&mut sw, 0, &p);
    // parse_set ran: `out.la` holds the 16-bit lookahead, `single` was extracted.
    assert_eq!(
        &out[0].data[14..],
        &[0, 0, 0, 0, 0x30, 0x99, 0, 0x30, 0x99, 0x55]
    );
}

#[test]
fn parser_error_values_come_from_the_program() {
    // bmv2 test programs number errors from 1 (NoError = 1); a clean parse reports NoError's
    // value, not 0.
    let path = format!("{}/tests/stf/parser.json", env!("CARGO_MANIFEST_DIR"));
    let mut v: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
    v["errors"] = serde_json::json!([["NoError", 1], ["PacketTooShort", 2]]);
    let mut sw = Switch::from_json(&v.to_string(), SwitchConfig::default()).unwrap();
    let eth = [0, 0, 0, 0, 0, 1, 0, 0, 0, 0, 0, 2, 0x88, 0xb5];
    let mut ok = eth.to_vec();
    ok.extend_from_slice(&[1, 0]);
    assert_eq!(&run(&mut sw, 0, &ok)[0].data[14..18], &[0, 0, 0, 1]);
    let mut short = eth.to_vec();
    short.push(1);
    assert_eq!(&run(&mut sw, 0, &short)[0].data[14..18], &[0, 0, 0, 2]);
    assert_eq!(sw.error_name(2), Some("PacketTooShort"));
    // Core errors the program does not declare get fresh values with their names.
    let names: Vec<&str> = (3..8).filter_map(|i| sw.error_name(i)).collect();
    assert!(
        names.contains(&"StackOutOfBounds") && names.contains(&"ParserTimeout"),
        "{names:?}"
    );
}

/// v1model.json with op 1 cloning to session 5 (tests/stf/v1model.stf).
fn cloning(cfg: SwitchConfig) -> Switch {
    let path = format!("{}/tests/stf/v1model.json", env!("CARGO_MANIFEST_DIR"));
    let mut sw = Switch::from_json(&std::fs::read_to_string(path).unwrap(), cfg).unwrap();
    sw.table_add(
        "ingress.t_op",
        vec![FieldMatch::Exact(vec![1])],
        None,
        "ingress.do_clone",
        &[],
    )
    .unwrap();
    sw
}

#[test]
fn a_mirroring_session_can_replicate_through_a_multicast_group() {
    let mut sw = cloning(SwitchConfig::default());
    sw.mc_mgrp_create(9).unwrap();
    let n = sw.mc_node_create(4, &[6, 7]);
    sw.mc_node_associate(9, n).unwrap();
    sw.mirroring_add(
        5,
        MirrorSession {
            port: None,
            mgrp: Some(9),
            ..Default::default()
        },
    )
    .unwrap();
    let mut out = run(&mut sw, 0, &[1, 0, 0, 0, 0, 0]);
    out.sort_by_key(|o| o.port);
    let got: Vec<(u32, Vec<u8>)> = out.into_iter().map(|o| (o.port, o.data)).collect();
    // The original to port 1; clone copies (instance type 1, rid 4) to the group's ports.
    assert_eq!(
        got,
        vec![
            (1, vec![1, 0, 9, 0, 0, 0x11]),
            (6, vec![1, 1, 9, 0, 4, 0]),
            (7, vec![1, 1, 9, 0, 4, 0]),
        ]
    );
    // Without a session, the clone request is ignored.
    sw.mirroring_delete(5).unwrap();
    assert_eq!(run(&mut sw, 0, &[1, 0, 0, 0, 0, 0]).len(), 1);
}

#[test]
fn a_mirroring_session_class_of_service_is_the_clones_queue() {
    let mut sw = cloning(SwitchConfig {
        priority_queues: 8,
        ..SwitchConfig::default()
    });
    for (cos, want) in [(0, 0), (6, 6)] {
        let session = MirrorSession {
            port: Some(3),
            mgrp: None,
            class_of_service: cos,
        };
        sw.mirroring_add(5, session).unwrap();
        let mut jobs = Vec::new();
        sw.ingress(0, &[1, 0, 0, 0, 0, 0], 10, &mut jobs);
        let queues: Vec<(u32, u8)> = jobs.iter().map(|j| (j.port, j.priority)).collect();
        // The original keeps its own priority (0); the clone enters the session's queue.
        assert_eq!(queues, vec![(3, want), (1, 0)], "class_of_service {cos}");
    }
    // With one queue the class is that queue, not a drop.
    let mut sw = cloning(SwitchConfig::default());
    let session = MirrorSession {
        port: Some(3),
        mgrp: None,
        class_of_service: 7,
    };
    sw.mirroring_add(5, session).unwrap();
    assert_eq!(run(&mut sw, 0, &[1, 0, 0, 0, 0, 0]).len(), 2);
    assert_eq!(sw.stats().priority_drops, 0);
}

#[test]
fn the_switch_can_move_to_a_worker_thread() {
    fn assert_send<T: Send>() {}
    assert_send::<Switch>();
    assert_send::<EgressJob>();
}

#[test]
fn priority_selects_a_queue_and_out_of_range_priorities_drop() {
    let path = format!("{}/tests/stf/l3.json", env!("CARGO_MANIFEST_DIR"));
    let mut v: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
    let prims = v["actions"][2]["primitives"].as_array_mut().unwrap();
    prims.push(serde_json::json!({"op": "assign", "parameters": [
        {"type": "field", "value": ["standard_metadata", "priority"]},
        {"type": "hexstr", "value": "0x3"}]}));
    let text = v.to_string();
    let route = |sw: &mut Switch| route_10_8(sw, 1);
    let pkt = ipv4(0xc0a8_0001, 0x0a00_0001, 6);
    // One queue per port (simple_switch's default): priority 3 is dropped at enqueue.
    let mut sw = Switch::from_json(&text, SwitchConfig::default()).unwrap();
    route(&mut sw);
    assert!(run(&mut sw, 0, &pkt).is_empty());
    assert_eq!(sw.stats().priority_drops, 1);
    // With 8 queues the job carries priority 3 for the traffic manager.
    let config = SwitchConfig {
        priority_queues: 8,
        ..SwitchConfig::default()
    };
    let mut sw = Switch::from_json(&text, config).unwrap();
    route(&mut sw);
    let mut jobs = Vec::new();
    sw.ingress(0, &pkt, 1, &mut jobs);
    assert_eq!((jobs.len(), jobs[0].priority, jobs[0].port), (1, 3, 1));
}

/// P4_14's `modify_field` (with and without mask), `add_to_field` and `subtract_from_field`, as
/// JSON from p4c-bm (bmv2's own test programs) carries them: l3's `set_nhop` rewritten with them.
#[test]
fn p4_14_field_primitives() {
    let path = format!("{}/tests/stf/l3.json", env!("CARGO_MANIFEST_DIR"));
    let mut j: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
    let f = |h: &str, n: &str| serde_json::json!({"type": "field", "value": [h, n]});
    let hex = |v: &str| serde_json::json!({"type": "hexstr", "value": v});
    let rd = |i: u32| serde_json::json!({"type": "runtime_data", "value": i});
    let prim =
        |op: &str, ps: Vec<serde_json::Value>| serde_json::json!({"op": op, "parameters": ps});
    let set_nhop = j["actions"]
        .as_array_mut()
        .unwrap()
        .iter_mut()
        .find(|a| a["name"] == "ingress.set_nhop")
        .unwrap();
    set_nhop["primitives"] = serde_json::json!([
        prim(
            "modify_field",
            vec![f("standard_metadata", "egress_spec"), rd(0)]
        ),
        prim(
            "modify_field",
            vec![f("ethernet", "srcAddr"), f("ethernet", "dstAddr")]
        ),
        prim("modify_field", vec![f("ethernet", "dstAddr"), rd(1)]),
        prim("subtract_from_field", vec![f("ipv4", "ttl"), hex("0x1")]),
        prim("add_to_field", vec![f("ipv4", "ttl"), hex("0x3")]),
        prim(
            "modify_field",
            vec![f("ipv4", "diffserv"), hex("0xff"), hex("0x0f")]
        ),
    ]);
    let mut sw = Switch::from_json(&j.to_string(), SwitchConfig::default()).unwrap();
    route_10_8(&mut sw, 2);
    let mut frame = vec![0, 0, 0, 0, 0, 0xaa, 0, 0, 0, 0, 0, 0xbb, 0x08, 0x00];
    frame.extend_from_slice(&[0x45, 0x30, 0, 20, 0, 0, 0, 0, 64, 6, 0, 0]);
    frame.extend_from_slice(&[192, 168, 0, 1, 10, 1, 2, 3]);
    let out = run(&mut sw, 0, &frame);
    assert_eq!(out.len(), 1);
    assert_eq!(out[0].port, 2);
    let d = &out[0].data;
    assert_eq!(&d[..12], &[0, 0, 0, 0, 0, 2, 0, 0, 0, 0, 0, 0xaa]);
    // ttl 64 - 1 + 3; diffserv 0x30 with its low nibble replaced by 0xf.
    assert_eq!((d[14 + 8], d[14 + 1]), (66, 0x3f));
}

/// l3.json's route for 10.0.0.0/8 to `port`, next-hop MAC 00:00:00:00:00:`port`.
fn route_10_8(sw: &mut Switch, port: u8) {
    sw.table_add(
        "ingress.ipv4_lpm",
        vec![FieldMatch::Lpm {
            value: vec![10, 0, 0, 0],
            prefix_len: 8,
        }],
        None,
        "ingress.set_nhop",
        &[vec![0, port], vec![0, 0, 0, 0, 0, port]],
    )
    .unwrap();
}
