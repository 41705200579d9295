//! Byte-for-byte comparison with P4Info files p4c wrote for its own test programs.
//!
//! Each expected file in `tests/p4c/` is a copy of p4c's
//! `testdata/p4_16_samples_outputs/<program>.p4info.txtpb` (github.com/p4lang/p4c); each test
//! builds the [`ControlPlane`] from facts read off `testdata/p4_16_samples/<program>` (names,
//! widths, annotations, the front end's additions such as `NoAction` defaults) and nothing
//! from the expected output.

use p4_p4info::*;

fn bit(width: u32) -> P4Type {
    P4Type::Bit(width)
}

fn key(name: &str, ty: P4Type, kind: MatchKind) -> MatchField {
    MatchField {
        name: name.into(),
        ty,
        kind,
        annotations: vec![],
    }
}

fn action_ref(action: &str) -> ActionRef {
    ActionRef {
        action: action.into(),
        annotations: vec![],
    }
}

fn default_only(action: &str) -> ActionRef {
    ActionRef {
        action: action.into(),
        annotations: vec![Annotation::rendered("@defaultonly")],
    }
}

fn default_action(action: &str, is_const: bool) -> Option<DefaultAction> {
    Some(DefaultAction {
        action: action.into(),
        arguments: vec![],
        is_const,
    })
}

fn table(name: &str, keys: Vec<MatchField>, actions: Vec<ActionRef>) -> Table {
    Table {
        name: name.into(),
        annotations: vec![],
        match_fields: keys,
        actions,
        default_action: None,
        implementation: None,
        direct_counter: None,
        direct_meter: None,
        size: None,
        supports_timeout: false,
        is_const_table: false,
        has_initial_entries: false,
    }
}

fn action(name: &str, params: &[(&str, P4Type)]) -> Action {
    Action {
        name: name.into(),
        annotations: vec![],
        params: params
            .iter()
            .map(|(name, ty)| Param {
                name: (*name).into(),
                ty: ty.clone(),
                annotations: vec![],
            })
            .collect(),
    }
}

/// `NoAction` from p4c's core.p4; newer versions of it carry `@corelib`.
fn no_action(corelib: bool) -> Action {
    let mut annotations = vec![];
    if corelib {
        annotations.push(Annotation::rendered("@corelib"));
    }
    annotations.push(Annotation::rendered("@noWarn(\"unused\")"));
    Action {
        name: "NoAction".into(),
        annotations,
        params: vec![],
    }
}

fn v1model() -> ControlPlane {
    ControlPlane {
        arch: "v1model".into(),
        ..Default::default()
    }
}

fn assert_p4c_output(program: &ControlPlane, expected: &str) {
    let info = generate(program).unwrap_or_else(|errors| panic!("{errors:#?}"));
    let ours = to_txtpb(&info);
    if ours != expected {
        let first = ours
            .lines()
            .zip(expected.lines())
            .position(|(a, b)| a != b)
            .unwrap_or(ours.lines().count().min(expected.lines().count()));
        panic!(
            "differs from p4c at line {}:\n--- ours\n{ours}\n--- p4c\n{expected}",
            first + 1
        );
    }
}

/// p4c testdata/p4_16_samples/action_profile-bmv2.p4: an action profile and an action selector
/// constructed in the tables' `implementation` properties (named by `@name`), const defaults.
#[test]
fn action_profile_bmv2() {
    let mut program = v1model();
    program.actions = vec![no_action(true), action("IngressI.drop", &[])];
    let mut indirect = table(
        "IngressI.indirect",
        vec![],
        vec![action_ref("IngressI.drop"), action_ref("NoAction")],
    );
    indirect.default_action = default_action("NoAction", true);
    indirect.implementation = Some("ap".into());
    let mut indirect_ws = table(
        "IngressI.indirect_ws",
        vec![key("meta.hash1", bit(32), MatchKind::Selector)],
        vec![action_ref("IngressI.drop"), action_ref("NoAction")],
    );
    indirect_ws.default_action = default_action("NoAction", true);
    indirect_ws.implementation = Some("ap_ws".into());
    program.tables = vec![indirect, indirect_ws];
    program.action_profiles = vec![
        ActionProfile {
            name: "ap".into(),
            annotations: vec![Annotation::Name("ap".into())],
            with_selector: false,
            size: 128,
            max_group_size: None,
            selector_size_semantics: None,
        },
        ActionProfile {
            name: "ap_ws".into(),
            annotations: vec![Annotation::Name("ap_ws".into())],
            with_selector: true,
            size: 1024,
            max_group_size: None,
            selector_size_semantics: None,
        },
    ];
    assert_p4c_output(
        &program,
        include_str!("p4c/action_profile-bmv2.p4.p4info.txtpb"),
    );
}

/// p4c testdata/p4_16_samples/issue1049-bmv2.p4: an explicit non-const default action, and the
/// `NoAction` default the front end gives a table without one.
#[test]
fn issue1049_bmv2() {
    let mut program = v1model();
    program.actions = vec![no_action(false), action("cIngress.hash_drop_decision", &[])];
    let mut guh = table(
        "cIngress.guh",
        vec![key("hdr.ipv4.dstAddr", bit(32), MatchKind::Exact)],
        vec![action_ref("cIngress.hash_drop_decision")],
    );
    guh.default_action = default_action("cIngress.hash_drop_decision", false);
    let mut debug = table(
        "cIngress.debug_table",
        vec![
            key("meta.mystruct1.hash1", bit(16), MatchKind::Exact),
            key("meta.mystruct1.hash_drop", P4Type::Bool, MatchKind::Exact),
        ],
        vec![action_ref("NoAction")],
    );
    debug.default_action = default_action("NoAction", false);
    program.tables = vec![guh, debug];
    assert_p4c_output(&program, include_str!("p4c/issue1049-bmv2.p4.p4info.txtpb"));
}

/// p4c testdata/p4_16_samples/default-action-arg-bmv2.p4: `const default_action = add(10, 0)`
/// (the second argument from the parameter's default value), in control `c` instantiated as
/// `ingress.c` by arith-inline-skeleton.p4.
#[test]
fn default_action_arg_bmv2() {
    let mut program = v1model();
    program.actions = vec![action("ingress.c.add", &[("va", bit(32)), ("vb", bit(32))])];
    let mut t = table(
        "ingress.c.t",
        vec![key("h.key", bit(16), MatchKind::Exact)],
        vec![action_ref("ingress.c.add")],
    );
    t.default_action = Some(DefaultAction {
        action: "ingress.c.add".into(),
        arguments: vec![bytestring(10, 32), bytestring(0, 32)],
        is_const: true,
    });
    program.tables = vec![t];
    assert_p4c_output(
        &program,
        include_str!("p4c/default-action-arg-bmv2.p4.p4info.txtpb"),
    );
}

fn register(name: &str, width: u32, size: i64) -> Register {
    Register {
        name: name.into(),
        annotations: vec![],
        ty: bit(width),
        size,
        index_type: None,
    }
}

/// p4c testdata/p4_16_samples/issue1097-bmv2.p4: a top-level `register<bit<8>>(2) r`.
#[test]
fn issue1097_bmv2() {
    let mut program = v1model();
    program.registers = vec![register("r", 8, 2)];
    assert_p4c_output(&program, include_str!("p4c/issue1097-bmv2.p4.p4info.txtpb"));
}

/// p4c testdata/p4_16_samples/issue1520-bmv2.p4: the same register declared in control `C`,
/// instantiated twice (`c1`, `c2`) inside `H` inside `MyIngress`: aliases need two components.
#[test]
fn issue1520_bmv2() {
    let mut program = v1model();
    program.registers = vec![
        register("MyIngress.h.c1.r", 16, 8),
        register("MyIngress.h.c2.r", 16, 8),
    ];
    assert_p4c_output(&program, include_str!("p4c/issue1520-bmv2.p4.p4info.txtpb"));
}

/// p4c testdata/p4_16_samples/issue1566-bmv2.p4: `counter(65536, CounterType.packets) stats` in
/// control `C1`, instantiated as `c1` in `E`, applied from `cIngress`.
#[test]
fn issue1566_bmv2() {
    let mut program = v1model();
    program.counters = vec![Indexed {
        name: "cIngress.E.c1.stats".into(),
        annotations: vec![],
        unit: Unit::Packets,
        size: 65536,
        index_type: None,
    }];
    assert_p4c_output(&program, include_str!("p4c/issue1566-bmv2.p4.p4info.txtpb"));
}

/// p4c testdata/p4_16_samples/issue2498-bmv2.p4: an action called directly (its only parameter
/// is `inout`, so not a control-plane one) and nothing else: no `type_info` at all.
#[test]
fn issue2498_bmv2() {
    let mut program = v1model();
    program.actions = vec![action("ingress.slice_action", &[])];
    assert_p4c_output(&program, include_str!("p4c/issue2498-bmv2.p4.p4info.txtpb"));
}

/// p4c testdata/p4_16_samples/issue1814-1-bmv2.p4: a `bool` key, the front end's
/// `@defaultonly NoAction` default, and a `register<bit<1>>(1)`.
#[test]
fn issue1814_1_bmv2() {
    let mut program = v1model();
    program.actions = vec![
        no_action(false),
        action("IngressImpl.drop", &[]),
        action("IngressImpl.forward", &[]),
    ];
    let mut debug = table(
        "IngressImpl.debug_table",
        vec![key("meta.test", P4Type::Bool, MatchKind::Exact)],
        vec![
            action_ref("IngressImpl.drop"),
            action_ref("IngressImpl.forward"),
            default_only("NoAction"),
        ],
    );
    debug.default_action = default_action("NoAction", false);
    program.tables = vec![debug];
    program.registers = vec![register("IngressImpl.testRegister", 1, 1)];
    assert_p4c_output(
        &program,
        include_str!("p4c/issue1814-1-bmv2.p4.p4info.txtpb"),
    );
}

/// p4c testdata/p4_16_samples/issue3329-bmv2.p4: a `@controller_header("packet_out")` header
/// whose only field is a struct `s { bit<32> b; }`, flattened to `b.b`. This expected file is
/// the older `.p4info.txt` form (comment lines without the blank line), so only the text after
/// the comments is compared.
#[test]
fn issue3329_bmv2() {
    let mut program = v1model();
    program.controller_headers = vec![ControllerHeader {
        type_name: "packet_out_header_t".into(),
        controller_name: "packet_out".into(),
        annotations: vec![Annotation::rendered("@controller_header(\"packet_out\")")],
        fields: vec![Param {
            name: "b.b".into(),
            ty: bit(32),
            annotations: vec![],
        }],
    }];
    let expected = include_str!("p4c/issue3329-bmv2.p4.p4info.txt");
    let body: String = expected
        .lines()
        .filter(|line| !line.starts_with('#'))
        .map(|line| format!("{line}\n"))
        .collect();
    let info = generate(&program).unwrap_or_else(|errors| panic!("{errors:#?}"));
    assert_eq!(p4runtime_proto::to_text(&info), body);
}
