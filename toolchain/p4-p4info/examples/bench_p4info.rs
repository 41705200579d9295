//! Times P4Info generation for a synthetic program of N tables (each with two keys, two
//! actions with parameters and a direct counter) and prints one JSON object:
//! `cargo run --release -p p4-p4info --example bench_p4info [N]`.

use std::time::Instant;

use p4_p4info::*;

fn program(tables: usize) -> ControlPlane {
    let mut p = ControlPlane {
        arch: "v1model".into(),
        ..Default::default()
    };
    for i in 0..tables {
        let control = if i % 2 == 0 { "ingress" } else { "egress" };
        let set = format!("{control}.set_{i}");
        let drop = format!("{control}.drop_{i}");
        p.actions.push(Action {
            name: set.clone(),
            annotations: vec![],
            params: vec![
                Param {
                    name: "port".into(),
                    ty: P4Type::Bit(9),
                    annotations: vec![],
                },
                Param {
                    name: "mac".into(),
                    ty: P4Type::Bit(48),
                    annotations: vec![],
                },
            ],
        });
        p.actions.push(Action {
            name: drop.clone(),
            annotations: vec![],
            params: vec![],
        });
        let counter = format!("{control}.t{i}_counter");
        p.direct_counters.push(Direct {
            name: counter.clone(),
            annotations: vec![],
            unit: Unit::PacketsAndBytes,
            in_place: false,
        });
        p.tables.push(Table {
            name: format!("{control}.t{i}"),
            annotations: vec![],
            match_fields: vec![
                MatchField {
                    name: "hdr.ipv4.dstAddr".into(),
                    ty: P4Type::Bit(32),
                    kind: MatchKind::Lpm,
                    annotations: vec![],
                },
                MatchField {
                    name: "meta.vrf".into(),
                    ty: P4Type::Bit(12),
                    kind: MatchKind::Exact,
                    annotations: vec![],
                },
            ],
            actions: [set, drop.clone()]
                .into_iter()
                .map(|action| ActionRef {
                    action,
                    annotations: vec![],
                })
                .collect(),
            default_action: Some(DefaultAction {
                action: drop,
                arguments: vec![],
                is_const: false,
            }),
            implementation: None,
            direct_counter: Some(counter),
            direct_meter: None,
            size: Some(4096),
            supports_timeout: false,
            entries: Entries::None,
        });
    }
    p
}

fn main() {
    let tables: usize = std::env::args()
        .nth(1)
        .and_then(|n| n.parse().ok())
        .unwrap_or(2000);
    let p = program(tables);
    let start = Instant::now();
    let info = match generate(&p) {
        Ok(info) => info,
        Err(errors) => {
            eprintln!("{errors:#?}");
            std::process::exit(1);
        }
    };
    let generate_ms = start.elapsed().as_secs_f64() * 1e3;
    let start = Instant::now();
    let text = to_txtpb(&info);
    let text_ms = start.elapsed().as_secs_f64() * 1e3;
    println!(
        "{{\"tables\": {tables}, \"actions\": {}, \"generate_ms\": {generate_ms:.3}, \"to_txtpb_ms\": {text_ms:.3}, \"text_bytes\": {}}}",
        info.actions.len(),
        text.len()
    );
}
