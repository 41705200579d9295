//! Runtime CLI commands on the engine, and the TCP protocol between client and switch.

mod common;
use common::*;
use p4_switch::cli::execute;
use p4_switch::cli_server::{CliClient, CliServer};
use p4_switch::clock::{ClockKind, SystemClock};
use p4_switch::core::Core;
use p4_switch::runtime::Runtime;
use std::time::Duration;
use switch_v1model::SwitchConfig;

fn core(
    prog: &str,
    ports_: &[u32],
) -> (
    Core,
    std::collections::BTreeMap<u32, switch_ports::ChannelPort>,
) {
    let (ports, host) = ports(ports_);
    (
        Core::new(Some(switch(prog)), None, ports, SwitchConfig::default(), 0).unwrap(),
        host,
    )
}

#[test]
fn table_add_routes_packets_and_reports_the_handle() {
    let (mut c, host) = core("l3", &[0, 1, 2]);
    let out = execute(
        &mut c,
        0,
        "table_add ipv4_lpm set_nhop 10.0.0.0/8 => 2 00:00:00:00:00:02",
    )
    .unwrap();
    assert!(
        out.ends_with("Entry has been added with handle 0\n"),
        "{out}"
    );
    let out = execute(
        &mut c,
        0,
        "table_add ingress.ipv4_lpm ingress.set_nhop 0x0a010000/16 => 1 0x1",
    )
    .unwrap();
    assert!(
        out.ends_with("Entry has been added with handle 1\n"),
        "{out}"
    );
    c.receive(0, 0, &ipv4_frame([10, 2, 3, 4]));
    c.receive(0, 0, &ipv4_frame([10, 1, 3, 4]));
    let on2 = drain(&host[&2]);
    let on1 = drain(&host[&1]);
    assert_eq!((on1.len(), on2.len()), (1, 1));
    assert_eq!(&on2[0][..6], &[0, 0, 0, 0, 0, 2]);
    assert_eq!(&on1[0][..6], &[0, 0, 0, 0, 0, 1]);
    let dump = execute(&mut c, 0, "table_dump ipv4_lpm").unwrap();
    assert!(dump.contains("LPM       0a000000/8"), "{dump}");
    assert!(dump.contains("ingress.set_nhop - 02, 02"), "{dump}");
    execute(&mut c, 0, "table_delete ipv4_lpm 0").unwrap();
    execute(&mut c, 0, "table_modify ipv4_lpm set_nhop 1 2 0x2").unwrap();
    c.receive(0, 0, &ipv4_frame([10, 1, 3, 4]));
    assert_eq!(drain(&host[&2]).len(), 1);
    execute(&mut c, 0, "table_clear ipv4_lpm").unwrap();
    execute(&mut c, 0, "table_set_default ipv4_lpm set_nhop 1 0x3").unwrap();
    c.receive(0, 0, &ipv4_frame([11, 1, 3, 4]));
    assert_eq!(drain(&host[&1]).len(), 1);
}

#[test]
fn bad_input_gets_clear_errors() {
    let (mut c, _host) = core("l3", &[0]);
    for (line, wanted) in [
        (
            "table_add nosuch set_nhop 1/8 => 1 1",
            "Error: Invalid table name (nosuch)",
        ),
        (
            "table_add ipv4_lpm set_nhop 10.0.0.0 => 1 1",
            "value/prefix_length",
        ),
        (
            "table_add ipv4_lpm set_nhop 10.0.0.0/33 => 1 1",
            "prefix length above",
        ),
        (
            "table_add ipv4_lpm set_nhop 10.0.0.0/8 => 1",
            "Error: Action ingress.set_nhop needs 2 parameters",
        ),
        (
            "table_add ipv4_lpm set_nhop 10.0.0.0/8 => 1024 1",
            "too large for the 9-bit field",
        ),
        (
            "table_add ipv4_lpm set_nhop 10.0.0.0/8 => 1 zz:00",
            "not a MAC address",
        ),
        (
            "table_add ipv4_lpm set_nhop 10.0.0.0/8 => x 1",
            "could not cast to integer",
        ),
        (
            "table_add ipv4_lpm nosuch 10.0.0.0/8 =>",
            "Error: Table ipv4_lpm has no action nosuch",
        ),
        (
            "table_delete ipv4_lpm 7",
            "Deleting entry 7 from ipv4_lpm\nInvalid table operation (INVALID_HANDLE)\n",
        ),
        (
            "table_delete ipv4_lpm",
            "Error: Wrong number of args, expected 2 but got 1",
        ),
        (
            "register_read nosuch 0",
            "Error: Invalid register name (nosuch)",
        ),
        ("frobnicate 1 2", "*** Unknown syntax: frobnicate 1 2\n"),
        ("set_queue_depth 64", "no traffic manager"),
        ("set_queue_rate 1000", "no traffic manager"),
        (
            "set_queue_rate",
            "usage: set_queue_rate <rate_pps> [<egress_port> [<priority>]]",
        ),
    ] {
        let err = execute(&mut c, 0, line).expect_err(line).to_string();
        assert!(err.contains(wanted), "{line}: {err}");
    }
}

#[test]
fn externs_registers_counters_meters() {
    let (mut c, _host) = core("externs", &[0]);
    execute(&mut c, 0, "register_write reg 3 0x2a").unwrap();
    assert_eq!(
        execute(&mut c, 0, "register_read reg 3").unwrap(),
        "reg[3]= 42\n"
    );
    execute(&mut c, 0, "register_reset ingress.reg").unwrap();
    assert_eq!(
        execute(&mut c, 0, "register_read reg 3").unwrap(),
        "reg[3]= 0\n"
    );
    execute(&mut c, 0, "table_add t_op do_count 1 =>").unwrap();
    // op 1 counts into cell `idx`.
    let pkt = [1u8, 2, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0];
    c.receive(0, 0, &pkt);
    assert_eq!(
        execute(&mut c, 0, "counter_read cnt 2").unwrap(),
        "cnt[2]=  BmCounterValue(bytes=13, packets=1)\n"
    );
    execute(&mut c, 0, "counter_reset cnt").unwrap();
    assert!(execute(&mut c, 0, "counter_read cnt 2")
        .unwrap()
        .contains("packets=0"));
    execute(&mut c, 0, "meter_set_rates mtr 0 0.5:10 1:20").unwrap();
    let e = execute(&mut c, 0, "meter_set_rates mtr 0 0.5")
        .unwrap_err()
        .to_string();
    assert_eq!(e, "Error: Invalid number of rates, expected 2 but got 1\n");
}

#[test]
fn multicast_and_mirroring_commands() {
    let (mut c, _host) = core("v1model", &[0]);
    assert_eq!(
        execute(&mut c, 0, "mc_mgrp_create 1").unwrap(),
        "Creating multicast group 1\n"
    );
    let out = execute(&mut c, 0, "mc_node_create 0 1 2").unwrap();
    assert!(out.ends_with("node was created with handle 0\n"), "{out}");
    execute(&mut c, 0, "mc_node_associate 1 0").unwrap();
    execute(&mut c, 0, "mirroring_add 5 3").unwrap();
    assert!(execute(&mut c, 0, "mc_node_associate 9 0").is_err());
}

#[test]
fn set_queue_depth_limits_tm_queues() {
    let (ports, _host) = ports(&[0, 1]);
    let cfg = switch_tm::TmConfig::parse(
        "buffer: {total_bytes: 1048576}\nports:\n  - {port: 0, rate_bps: 1000000000}\n",
        switch_tm::ConfigFormat::Yaml,
    )
    .unwrap();
    let mut c = Core::new(
        Some(switch("l3")),
        Some(cfg),
        ports,
        SwitchConfig::default(),
        0,
    )
    .unwrap();
    execute(&mut c, 0, "set_queue_depth 5 0").unwrap();
    for i in 0..8u8 {
        c.receive(0, 1, &frame(100, i));
    }
    assert_eq!(c.counters().tm_drops, 3);
    // One queue (no --priority-queues): a priority other than 0 has no queue.
    let e = execute(&mut c, 0, "set_queue_depth 5 0 3")
        .unwrap_err()
        .to_string();
    assert!(e.contains("priority 3 out of range"), "{e}");
    let e = execute(&mut c, 0, "set_queue_rate 0 0")
        .unwrap_err()
        .to_string();
    assert!(e.contains("rate_pps: must be at least 1"), "{e}");
    let e = execute(&mut c, 0, "set_queue_rate 10 7")
        .unwrap_err()
        .to_string();
    assert!(e.contains("port 7 is not configured"), "{e}");
}

/// bmv2's `set_queue_rate`/`set_queue_depth` with `[<egress_port> [<priority>]]`, on the TM.
#[test]
fn set_queue_rate_and_depth_per_port_and_priority() {
    let (ports, host) = ports(&[0, 1]);
    let cfg = switch_tm::TmConfig::parse(
        "buffer: {total_bytes: 1048576}\nports:\n  - {port: 0, rate_bps: 1000000000}\n",
        switch_tm::ConfigFormat::Yaml,
    )
    .unwrap();
    let engine = SwitchConfig {
        priority_queues: 8,
        ..SwitchConfig::default()
    };
    let mut c = Core::new(Some(switch("l3")), Some(cfg), ports, engine, 0).unwrap();
    let queue = |c: &Core, port: u32, q: u8| {
        let cfg = c.tm().unwrap().port_config(port).unwrap().clone();
        let qc = cfg.queues.into_iter().find(|x| x.queue == q);
        qc.map_or((None, None), |x| (x.limit_packets, x.rate_pps))
    };
    execute(&mut c, 0, "set_queue_depth 7 0 3").unwrap();
    assert_eq!(queue(&c, 0, 3), (Some(7), None));
    assert_eq!(queue(&c, 0, 2), (None, None));
    execute(&mut c, 0, "set_queue_rate 2000 1").unwrap();
    assert!((0..8).all(|q| queue(&c, 1, q) == (None, Some(2000))));
    assert_eq!(queue(&c, 0, 0), (None, None));
    execute(&mut c, 0, "set_queue_rate 1000 0 0").unwrap();
    assert_eq!(queue(&c, 0, 0), (None, Some(1000)));
    assert_eq!(queue(&c, 0, 3), (Some(7), None));
    // l3.json leaves non-IPv4 frames on port 0, priority 0: now one every millisecond.
    for i in 0..3u8 {
        c.receive(0, 1, &frame(100, i));
    }
    assert_eq!(c.run_due(0), Some(1_000_000));
    assert_eq!(drain(&host[&0]).len(), 1);
    assert_eq!(c.run_due(1_000_000), Some(2_000_000));
    assert_eq!(drain(&host[&0]).len(), 1);
    // Without a port: every queue of every port.
    execute(&mut c, 0, "set_queue_depth 9").unwrap();
    assert!([0, 1]
        .iter()
        .all(|&p| (0..8).all(|q| queue(&c, p, q).0 == Some(9))));
}

#[test]
fn commands_over_tcp() {
    let (ports, _host) = ports(&[0, 1]);
    let core = Core::new(
        Some(switch("l3")),
        None,
        ports.clone(),
        SwitchConfig::default(),
        0,
    )
    .unwrap();
    let rt = Runtime::start(
        core,
        ports.into_iter().collect(),
        Duration::ZERO,
        SystemClock::new(ClockKind::Real),
        0,
    )
    .unwrap();
    let server = CliServer::start("127.0.0.1:0", rt.handle()).unwrap();
    let mut client = CliClient::connect(&server.addr().to_string()).unwrap();
    let ok = client
        .run("table_add ipv4_lpm set_nhop 10.0.0.0/8 => 1 1")
        .unwrap()
        .unwrap();
    assert!(ok.contains("Entry has been added with handle 0"), "{ok}");
    let err = client.run("table_add nosuch x").unwrap().unwrap_err();
    assert!(err.starts_with("Error: "), "{err}");
    drop(client);
    rt.shutdown();
    drop(server);
}

#[test]
fn action_profile_members_groups_and_indirect_entries() {
    let path = format!(
        "{}/../switch-v1model/tests/programs/ecmp.json",
        env!("CARGO_MANIFEST_DIR")
    );
    let text = std::fs::read_to_string(&path).unwrap();
    let sw = switch_v1model::Switch::from_json(&text, Default::default()).unwrap();
    let (ports, host) = ports(&[0, 1, 2]);
    let mut c = Core::new(Some(sw), None, ports, SwitchConfig::default(), 0).unwrap();
    let out = execute(&mut c, 0, "act_prof_create_member ecmp_ap set_nhop 1 0x1").unwrap();
    assert_eq!(out, "Member has been created with handle 0\n");
    execute(
        &mut c,
        0,
        "act_prof_create_member ingress.ecmp_ap set_nhop 2 0x2",
    )
    .unwrap();
    // Profile names by unique suffix, as bmv2's CLI resolves them.
    let out = execute(&mut c, 0, "act_prof_create_group ecmp_ap").unwrap();
    assert_eq!(out, "Group has been created with handle 0\n");
    execute(
        &mut c,
        0,
        "act_prof_add_member_to_group ingress.ecmp_ap 0 0",
    )
    .unwrap();
    execute(&mut c, 0, "act_prof_add_member_to_group ecmp_ap 1 0").unwrap();
    let out = execute(
        &mut c,
        0,
        "table_indirect_add_with_group ipv4_lpm 10.0.0.0/8 => 0",
    )
    .unwrap();
    assert!(out.contains("Entry has been added with handle 0"), "{out}");
    let out = execute(&mut c, 0, "table_indirect_add ipv4_lpm 11.0.0.0/8 => 1").unwrap();
    assert!(out.contains("Entry has been added with handle 1"), "{out}");
    c.receive(0, 0, &ipv4_frame([11, 0, 0, 1]));
    assert_eq!(drain(&host[&2]).len(), 1);
    for i in 0..20u8 {
        c.receive(0, 0, &ipv4_frame([10, 0, 0, i]));
    }
    assert_eq!(drain(&host[&1]).len() + drain(&host[&2]).len(), 20);
    let e = execute(
        &mut c,
        0,
        "act_prof_add_member_to_group ingress.ecmp_ap 0 9",
    )
    .unwrap_err()
    .to_string();
    assert_eq!(e, "Invalid table operation (INVALID_GRP_HANDLE)\n");
    let e = execute(&mut c, 0, "table_indirect_add ipv4_lpm 12.0.0.0/8 => 7")
        .unwrap_err()
        .to_string();
    assert!(
        e.ends_with("Invalid table operation (INVALID_MBR_HANDLE)\n"),
        "{e}"
    );
    let e = execute(
        &mut c,
        0,
        "set_crc16_parameters nosuch 0x1021 0 0 false false",
    )
    .unwrap_err()
    .to_string();
    assert_eq!(e, "Error: Invalid crc16_custom name (nosuch)\n");
    let e = execute(&mut c, 0, "act_prof_create_group zz")
        .unwrap_err()
        .to_string();
    assert_eq!(e, "Error: Invalid action profile name (zz)\n");
}

/// Calculation names as bmv2's CLI finds them: full name or a dot-separated suffix.
#[test]
fn crc_parameters_resolve_calculation_names() {
    let (mut c, _host) = core("hashes", &[0]);
    // `c16` ends calc_c16 but is not a dot-separated suffix of it.
    let e = execute(&mut c, 0, "set_crc16_parameters c16 0x1021 0 0 false false")
        .unwrap_err()
        .to_string();
    assert_eq!(e, "Error: Invalid crc16_custom name (c16)\n");
    // calc_c16 is a plain crc16: the engine refuses to change it (not a custom CRC).
    let e = execute(
        &mut c,
        0,
        "set_crc16_parameters calc_c16 0x1021 0 0 false false",
    )
    .unwrap_err()
    .to_string();
    assert_eq!(e, "Error: Invalid crc16_custom name (calc_c16)\n");
    let e = execute(
        &mut c,
        0,
        "set_crc16_parameters nosuch 0x1021 0 0 maybe false",
    )
    .unwrap_err()
    .to_string();
    assert_eq!(e, "Error: Invalid bool parameter (maybe)\n");
}

/// Groups and members written straight into the engine (as P4Runtime writes them) are the
/// runtime CLI's too: one handle space, one state.
#[test]
fn cli_sees_action_profile_state_written_over_p4runtime() {
    let path = format!(
        "{}/../switch-v1model/tests/programs/ecmp.json",
        env!("CARGO_MANIFEST_DIR")
    );
    let text = std::fs::read_to_string(&path).unwrap();
    let sw = switch_v1model::Switch::from_json(&text, Default::default()).unwrap();
    let (ports, _host) = ports(&[0]);
    let mut c = Core::new(Some(sw), None, ports, SwitchConfig::default(), 0).unwrap();
    let engine = c.switch.as_mut().unwrap();
    let m = engine
        .profile_add_member(
            "ingress.ecmp_ap",
            "ingress.set_nhop",
            &[vec![1], vec![0, 1]],
        )
        .unwrap();
    engine.profile_set_group("ingress.ecmp_ap", 0, &[]).unwrap();
    execute(
        &mut c,
        0,
        &format!("act_prof_add_member_to_group ecmp_ap {m} 0"),
    )
    .unwrap();
    assert_eq!(
        execute(&mut c, 0, "act_prof_dump_group ecmp_ap 0").unwrap(),
        format!("Dumping group 0\nMembers: [{m}]\n")
    );
    // The next CLI group takes the lowest handle the controller left free.
    assert_eq!(
        execute(&mut c, 0, "act_prof_create_group ecmp_ap").unwrap(),
        "Group has been created with handle 1\n"
    );
    let groups = c
        .switch
        .as_ref()
        .unwrap()
        .profile_groups("ingress.ecmp_ap")
        .unwrap();
    assert_eq!(groups, vec![(0, vec![(m, 1)]), (1, vec![])]);
}
