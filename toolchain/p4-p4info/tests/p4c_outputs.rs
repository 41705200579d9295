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
        entries: Entries::None,
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
            in_place: true,
        },
        ActionProfile {
            name: "ap_ws".into(),
            annotations: vec![Annotation::Name("ap_ws".into())],
            with_selector: true,
            size: 1024,
            max_group_size: None,
            selector_size_semantics: None,
            in_place: true,
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

/// For expected files from the p4c versions that printed a table's initial default action as
/// `initial_default_action_id: N`, before P4Runtime replaced that field with the
/// `initial_default_action { action_id: N }` message current p4c prints (the default actions in
/// these files take no arguments, so both carry the same information): the old line is
/// rewritten into the new form, then the whole file is compared byte for byte.
fn assert_p4c_output_old_default_field(program: &ControlPlane, expected: &str) {
    let rewritten: String = expected
        .lines()
        .map(
            |line| match line.strip_prefix("  initial_default_action_id: ") {
                Some(id) => format!("  initial_default_action {{\n    action_id: {id}\n  }}\n"),
                None => format!("{line}\n"),
            },
        )
        .collect();
    assert_p4c_output(program, &rewritten);
}

fn new_type(name: &str, underlying: P4Type, translation: Option<(&str, u32)>) -> TypeDecl {
    TypeDecl::NewType {
        name: name.into(),
        underlying,
        translation: translation.map(|(uri, width)| Translation {
            uri: uri.into(),
            sdn: SdnType::Bitwidth(width),
        }),
        annotations: Vec::new(),
    }
}

fn named(name: &str) -> P4Type {
    P4Type::Named(name.into())
}

/// p4c testdata/p4_16_samples/v1model-p4runtime-enumint-types1.p4: `type`s with and without
/// `@p4runtime_translation` stacked on each other and on typedefs, a serializable enum, in a
/// table key, an action's parameters, `@controller_header` packet_in/packet_out headers and a
/// struct-typed `value_set`. Typedefs are resolved here, as the compiler resolves them.
#[test]
fn v1model_p4runtime_enumint_types1() {
    let fields: Vec<(&str, P4Type)> = vec![
        ("addr0", bit(48)),
        ("addr1", named("Eth1_t")),
        ("addr2", named("Eth2_t")),
        ("e", bit(8)),
        ("e0", bit(8)),
        ("e1", named("Custom1_t")),
        ("e2", named("Custom2_t")),
        ("e00", bit(8)),
        ("e01", named("Custom01_t")),
        ("e02", named("Custom02_t")),
        ("e10", named("Custom1_t")),
        ("e11", named("Custom11_t")),
        ("e12", named("Custom12_t")),
        ("e20", named("Custom2_t")),
        ("e21", named("Custom21_t")),
        ("e22", named("Custom22_t")),
        ("e001", named("Custom001_t")),
        ("e002", named("Custom002_t")),
        ("e101", named("Custom101_t")),
        ("e102", named("Custom102_t")),
        ("e201", named("Custom201_t")),
        ("e202", named("Custom202_t")),
        ("e220", named("Custom22_t")),
        ("e0020010", named("Custom002001_t")),
        ("e0020020", named("Custom002002_t")),
    ];
    let mut with_s0 = fields.clone();
    with_s0.push(("s0", named("serenum_t")));

    let mut program = v1model();
    program.types = vec![
        new_type("Eth1_t", bit(48), None),
        new_type(
            "Eth2_t",
            bit(48),
            Some(("mycompany.com/EthernetAddress", 49)),
        ),
        new_type("Custom1_t", bit(8), None),
        new_type("Custom2_t", bit(8), Some(("mycompany.com/My_Byte2", 12))),
        new_type("Custom01_t", bit(8), None),
        new_type("Custom02_t", bit(8), Some(("mycompany.com/My_Byte3", 13))),
        new_type("Custom11_t", named("Custom1_t"), None),
        new_type(
            "Custom12_t",
            named("Custom1_t"),
            Some(("mycompany.com/My_Byte4", 14)),
        ),
        new_type("Custom21_t", named("Custom2_t"), None),
        new_type(
            "Custom22_t",
            named("Custom2_t"),
            Some(("mycompany.com/My_Byte5", 15)),
        ),
        new_type("Custom001_t", bit(8), None),
        new_type("Custom002_t", bit(8), Some(("mycompany.com/My_Byte6", 16))),
        new_type("Custom101_t", named("Custom1_t"), None),
        new_type(
            "Custom102_t",
            named("Custom1_t"),
            Some(("mycompany.com/My_Byte7", 17)),
        ),
        new_type("Custom201_t", named("Custom2_t"), None),
        new_type(
            "Custom202_t",
            named("Custom2_t"),
            Some(("mycompany.com/My_Byte8", 18)),
        ),
        new_type("Custom002001_t", named("Custom002_t"), None),
        new_type(
            "Custom002002_t",
            named("Custom002_t"),
            Some(("mycompany.com/My_Byte9", 19)),
        ),
        TypeDecl::SerializableEnum {
            name: "serenum_t".into(),
            width: 8,
            members: vec![("A".into(), 1), ("B".into(), 3)],
        },
    ];
    program.actions = vec![
        action("ingress.set_output", &[("out_port", bit(9))]),
        action("ingress.set_headers", &with_s0),
        action("ingress.my_drop", &[]),
    ];
    let mut custom = table(
        "ingress.custom_table",
        with_s0
            .iter()
            .map(|(name, ty)| key(&format!("hdr.custom.{name}"), ty.clone(), MatchKind::Exact))
            .collect(),
        vec![
            action_ref("ingress.set_output"),
            action_ref("ingress.set_headers"),
            action_ref("ingress.my_drop"),
        ],
    );
    custom.default_action = default_action("ingress.my_drop", false);
    program.tables = vec![custom];
    let param = |(name, ty): &(&str, P4Type)| Param {
        name: (*name).into(),
        ty: ty.clone(),
        annotations: vec![],
    };
    program.controller_headers = vec![
        ControllerHeader {
            type_name: "packet_in_header_t".into(),
            controller_name: "packet_in".into(),
            annotations: vec![Annotation::rendered("@controller_header(\"packet_in\")")],
            fields: vec![param(&("punt_reason", bit(8)))],
        },
        ControllerHeader {
            type_name: "packet_out_header_t".into(),
            controller_name: "packet_out".into(),
            annotations: vec![Annotation::rendered("@controller_header(\"packet_out\")")],
            fields: fields.iter().map(param).collect(),
        },
    ];
    program.value_sets = vec![ValueSet {
        name: "ParserImpl.valueset1".into(),
        annotations: vec![],
        size: 4,
        element: ValueSetElement::Struct(
            [("addr0", 48), ("e", 8), ("e0", 8), ("e00", 8)]
                .into_iter()
                .map(|(name, width)| ValueSetField {
                    name: name.into(),
                    width,
                    kind: None,
                    annotations: vec![],
                })
                .collect(),
        ),
    }];
    assert_p4c_output_old_default_field(
        &program,
        include_str!("p4c/v1model-p4runtime-enumint-types1.p4.p4info.txtpb"),
    );
}

/// p4c testdata/p4_16_samples/v1model-digest-containing-ser-enum.p4: three `digest()` calls in
/// one action, with structs holding an `error`, an enum and a serializable enum (`type_info`
/// gets the structs, the enum, the serializable enum and the program's error members).
#[test]
fn v1model_digest_containing_ser_enum() {
    let mut program = v1model();
    program.actions = vec![
        no_action(false),
        action("MyIngress.set_dmac", &[("dstAddr", bit(48))]),
        action("MyIngress.drop", &[]),
        action(
            "MyIngress.set_nhop",
            &[("dstAddr", bit(32)), ("port", bit(9))],
        ),
        action("MyIngress.send_digest", &[]),
        no_action(false),
        action("MyEgress.rewrite_mac", &[("srcAddr", bit(48))]),
    ];
    let routing = |name: &str, kind: MatchKind, first: &str| {
        let mut t = table(
            name,
            vec![key("hdr.ipv4.dstAddr", bit(32), kind)],
            vec![
                action_ref(first),
                action_ref("MyIngress.drop"),
                action_ref("NoAction"),
            ],
        );
        t.size = Some(1024);
        t.default_action = default_action("NoAction", false);
        t
    };
    let mut send_frame = table(
        "MyEgress.send_frame",
        vec![key(
            "standard_metadata.egress_port",
            bit(9),
            MatchKind::Exact,
        )],
        vec![action_ref("MyEgress.rewrite_mac"), action_ref("NoAction")],
    );
    send_frame.size = Some(1024);
    send_frame.default_action = default_action("NoAction", false);
    program.tables = vec![
        routing("MyIngress.forward", MatchKind::Exact, "MyIngress.set_dmac"),
        routing("MyIngress.ipv4_lpm", MatchKind::Lpm, "MyIngress.set_nhop"),
        send_frame,
    ];
    program.digests = ["test_digest_t", "test_digest2_t", "test_digest3_t"]
        .into_iter()
        .map(|name| Digest {
            name: name.into(),
            ty: named(name),
        })
        .collect();
    program.types = vec![
        TypeDecl::Struct {
            name: "test_digest_t".into(),
            fields: vec![
                ("in_mac_srcAddr".into(), bit(48)),
                ("my_parser_error".into(), P4Type::Error),
                ("pkt_type".into(), named("MyPacketTypes")),
            ],
        },
        TypeDecl::Struct {
            name: "test_digest2_t".into(),
            fields: vec![
                ("in_mac_dstAddr".into(), bit(48)),
                ("my_thing".into(), named("MySerEnum1")),
            ],
        },
        TypeDecl::Struct {
            name: "test_digest3_t".into(),
            fields: vec![("in_mac_etherType".into(), bit(16))],
        },
        TypeDecl::Enum {
            name: "MyPacketTypes".into(),
            members: vec!["IPv4".into(), "Other".into()],
        },
        TypeDecl::SerializableEnum {
            name: "MySerEnum1".into(),
            width: 8,
            members: vec![("foo".into(), 28), ("bar".into(), 17), ("gah".into(), 42)],
        },
    ];
    // core.p4's errors, then the program's `error { UnreachableState }`.
    program.errors = [
        "NoError",
        "PacketTooShort",
        "NoMatch",
        "StackOutOfBounds",
        "HeaderTooShort",
        "ParserTimeout",
        "ParserInvalidArgument",
        "UnreachableState",
    ]
    .map(String::from)
    .to_vec();
    assert_p4c_output_old_default_field(
        &program,
        include_str!("p4c/v1model-digest-containing-ser-enum.p4.p4info.txtpb"),
    );
}

/// p4c testdata/p4_16_samples/issue1352-bmv2.p4: routing tables with explicit `NoAction`
/// defaults and one `digest(1, meta.test_digest)` in an action.
#[test]
fn issue1352_bmv2() {
    let mut program = v1model();
    program.actions = vec![
        no_action(true),
        action("MyIngress.drop", &[]),
        action("MyIngress.set_dmac", &[("dstAddr", bit(48))]),
        action(
            "MyIngress.set_nhop",
            &[("dstAddr", bit(32)), ("port", bit(9))],
        ),
        action("MyIngress.send_digest", &[]),
        no_action(true),
        action("MyEgress.rewrite_mac", &[("srcAddr", bit(48))]),
    ];
    let routing = |name: &str, kind: MatchKind, first: &str| {
        let mut t = table(
            name,
            vec![key("hdr.ipv4.dstAddr", bit(32), kind)],
            vec![
                action_ref(first),
                action_ref("MyIngress.drop"),
                action_ref("NoAction"),
            ],
        );
        t.size = Some(1024);
        t.default_action = default_action("NoAction", false);
        t
    };
    let mut send_frame = table(
        "MyEgress.send_frame",
        vec![key(
            "standard_metadata.egress_port",
            bit(9),
            MatchKind::Exact,
        )],
        vec![action_ref("MyEgress.rewrite_mac"), action_ref("NoAction")],
    );
    send_frame.size = Some(1024);
    send_frame.default_action = default_action("NoAction", false);
    program.tables = vec![
        routing("MyIngress.forward", MatchKind::Exact, "MyIngress.set_dmac"),
        routing("MyIngress.ipv4_lpm", MatchKind::Lpm, "MyIngress.set_nhop"),
        send_frame,
    ];
    program.digests = vec![Digest {
        name: "test_digest_t".into(),
        ty: named("test_digest_t"),
    }];
    program.types = vec![TypeDecl::Struct {
        name: "test_digest_t".into(),
        fields: vec![("in_mac_srcAddr".into(), bit(48))],
    }];
    assert_p4c_output(&program, include_str!("p4c/issue1352-bmv2.p4.p4info.txtpb"));
}

/// p4c testdata/p4_16_samples/action_profile_max_group_size_annotation.p4: `@max_group_size(200)`
/// on an in-place action profile (ignored: no selector) and on an in-place selector.
#[test]
fn action_profile_max_group_size_annotation() {
    let mut program = v1model();
    program.actions = vec![no_action(false), action("IngressI.drop", &[])];
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
    let profile = |name: &str, with_selector: bool, size: i64| ActionProfile {
        name: name.into(),
        annotations: vec![
            Annotation::Name(name.into()),
            Annotation::rendered("@max_group_size(200)"),
        ],
        with_selector,
        size,
        max_group_size: Some(200),
        selector_size_semantics: None,
        in_place: true,
    };
    program.action_profiles = vec![profile("ap", false, 128), profile("ap_ws", true, 1024)];
    assert_p4c_output(
        &program,
        include_str!("p4c/action_profile_max_group_size_annotation.p4.p4info.txtpb"),
    );
}

/// p4c testdata/p4_16_samples/table-entries-exact-bmv2.p4: `const entries`.
#[test]
fn table_entries_exact_bmv2() {
    let mut program = v1model();
    program.actions = vec![
        action("ingress.a", &[]),
        action("ingress.a_with_control_params", &[("x", bit(9))]),
    ];
    let mut t = table(
        "ingress.t_exact",
        vec![key("h.h.e", bit(8), MatchKind::Exact)],
        vec![
            action_ref("ingress.a"),
            action_ref("ingress.a_with_control_params"),
        ],
    );
    t.default_action = default_action("ingress.a", false);
    t.entries = Entries::Const;
    program.tables = vec![t];
    assert_p4c_output(
        &program,
        include_str!("p4c/table-entries-exact-bmv2.p4.p4info.txtpb"),
    );
}

/// p4c testdata/p4_16_samples/init-entries-bmv2.p4: nine tables with (non-const) `entries`
/// lists, some entries `const`, exact + ternary keys.
#[test]
fn init_entries_bmv2() {
    let mut program = v1model();
    program.actions = vec![
        action("ingressImpl.a", &[]),
        action("ingressImpl.a_params", &[("param", bit(32))]),
    ];
    program.tables = ["t1", "t1b", "t2", "t2b", "t3", "t3b", "t4", "t4b", "t5"]
        .into_iter()
        .map(|name| {
            let mut t = table(
                &format!("ingressImpl.{name}"),
                vec![
                    key("hdr.ethernet.src_addr", bit(48), MatchKind::Exact),
                    key("hdr.ethernet.ether_type", bit(16), MatchKind::Ternary),
                ],
                vec![
                    action_ref("ingressImpl.a"),
                    action_ref("ingressImpl.a_params"),
                ],
            );
            t.default_action = default_action("ingressImpl.a", false);
            t.entries = Entries::Initial;
            t
        })
        .collect();
    assert_p4c_output_old_default_field(
        &program,
        include_str!("p4c/init-entries-bmv2.p4.p4info.txtpb"),
    );
}

/// The `acl_wbb_ingress` control of p4c testdata/p4_16_samples/pins/pins_wbb.p4: `@id`s on a
/// table, actions, a `direct_counter` and a `direct_meter`, optional keys on `isValid()`,
/// annotations on keys and action list entries, and a multi-line `@entry_restriction` string.
/// The stored p4c output (pins_wbb.p4.p4info.txtpb) was produced from a later revision of the
/// program than the one available to read (its packet_out header and `@pkginfo` differ), so
/// only what this control produces (the tables, actions, direct counters and direct meters
/// sections) is compared, byte for byte.
#[test]
fn pins_wbb_acl_ingress() {
    let restriction = "@entry_restriction(\"
    // WBB only allows for very specific table entries:

    // Traceroute (6 entries)
    (
      // IPv4 or IPv6
      ((is_ipv4 == 1 && is_ipv6::mask == 0) ||
        (is_ipv4::mask == 0 && is_ipv6 == 1)) &&
      // TTL 0, 1, and 2
      (ttl == 0 || ttl == 1 || ttl == 2) &&
      ether_type::mask == 0 && outer_vlan_id::mask == 0
    ) ||
    // LLDP
    (
      ether_type == 0x88cc &&
      is_ipv4::mask == 0 && is_ipv6::mask == 0 && ttl::mask == 0 &&
      outer_vlan_id::mask == 0
    ) ||
    // ND
    (
    // TODO remove optional match for VLAN ID once VLAN ID is
    // completely removed from ND flows.
      (( outer_vlan_id::mask == 0xfff && outer_vlan_id == 0x0FA0) ||
      outer_vlan_id::mask == 0);
      ether_type == 0x6007;
      is_ipv4::mask == 0;
      is_ipv6::mask == 0;
      ttl::mask == 0
    )
  \")";
    let acl_key = |name: &str, id: u64, ty: P4Type, kind: MatchKind, sai: &str| MatchField {
        name: name.into(),
        ty,
        kind,
        annotations: vec![
            Annotation::Name(name.into()),
            Annotation::Id(id),
            Annotation::rendered(format!("@sai_field({sai})")),
        ],
    };
    let proto_id = |action: &str, id: u32| ActionRef {
        action: action.into(),
        annotations: vec![Annotation::rendered(format!("@proto_id({id})"))],
    };
    let prefix = "ingress.acl_wbb_ingress";
    let mut program = v1model();
    let acl_action = |name: &str, id: u64, sai: &str| Action {
        name: format!("{prefix}.{name}"),
        annotations: vec![
            Annotation::Id(id),
            Annotation::rendered(format!("@sai_action({sai})")),
        ],
        params: vec![],
    };
    program.actions = vec![
        no_action(true),
        acl_action(
            "acl_wbb_ingress_copy",
            0x0100_0107,
            "SAI_PACKET_ACTION_COPY",
        ),
        acl_action(
            "acl_wbb_ingress_trap",
            0x0100_0108,
            "SAI_PACKET_ACTION_TRAP",
        ),
    ];
    let mut acl = table(
        &format!("{prefix}.acl_wbb_ingress_table"),
        vec![
            acl_key(
                "is_ipv4",
                1,
                P4Type::Bool,
                MatchKind::Optional,
                "SAI_ACL_TABLE_ATTR_FIELD_ACL_IP_TYPE / IPV4ANY",
            ),
            acl_key(
                "is_ipv6",
                2,
                P4Type::Bool,
                MatchKind::Optional,
                "SAI_ACL_TABLE_ATTR_FIELD_ACL_IP_TYPE / IPV6ANY",
            ),
            acl_key(
                "ether_type",
                3,
                bit(16),
                MatchKind::Ternary,
                "SAI_ACL_TABLE_ATTR_FIELD_ETHER_TYPE",
            ),
            acl_key(
                "ttl",
                4,
                bit(8),
                MatchKind::Ternary,
                "SAI_ACL_TABLE_ATTR_FIELD_TTL",
            ),
            acl_key(
                "outer_vlan_id",
                5,
                bit(12),
                MatchKind::Ternary,
                "SAI_ACL_TABLE_ATTR_FIELD_OUTER_VLAN_ID",
            ),
        ],
        vec![
            proto_id(&format!("{prefix}.acl_wbb_ingress_copy"), 1),
            proto_id(&format!("{prefix}.acl_wbb_ingress_trap"), 2),
            default_only("NoAction"),
        ],
    );
    acl.annotations = vec![
        Annotation::rendered("@p4runtime_role(\"sdn_controller\")"),
        Annotation::Id(0x0200_0103),
        Annotation::rendered("@sai_acl(INGRESS)"),
        Annotation::rendered(restriction),
    ];
    acl.default_action = default_action("NoAction", true);
    acl.direct_meter = Some(format!("{prefix}.acl_wbb_ingress_meter"));
    acl.direct_counter = Some(format!("{prefix}.acl_wbb_ingress_counter"));
    acl.size = Some(8);
    program.tables = vec![acl];
    program.direct_meters = vec![Direct {
        name: format!("{prefix}.acl_wbb_ingress_meter"),
        annotations: vec![Annotation::Id(0x1500_0101)],
        unit: Unit::Bytes,
        in_place: false,
    }];
    program.direct_counters = vec![Direct {
        name: format!("{prefix}.acl_wbb_ingress_counter"),
        annotations: vec![Annotation::Id(0x1300_0103)],
        unit: Unit::PacketsAndBytes,
        in_place: false,
    }];

    let info = generate(&program).unwrap_or_else(|errors| panic!("{errors:#?}"));
    let ours = to_txtpb(&info);
    let expected = include_str!("p4c/pins_wbb.p4.p4info.txtpb");
    let section = |text: &str| {
        let start = text.find("\ntables {\n").expect("tables") + 1;
        let end = text
            .find("\ncontroller_packet_metadata {\n")
            .or_else(|| text.find("\ntype_info {\n"))
            .expect("an end")
            + 1;
        text[start..end].to_string()
    };
    assert_eq!(section(&ours), section(expected));
}

/// p4c testdata/p4_16_samples/structured_annotations.p4: structured annotations with constant
/// expressions (`1==2` and `5+NUM_CONST` folded to false and 11, `2*3` to 6) on a table and on
/// entries of its actions list.
#[test]
fn structured_annotations() {
    use AnnotationValue::{Bool, Int};
    let text = |s: &str| AnnotationValue::String(s.into());
    let myid = |n: i64| Annotation::Structured {
        name: "myid".into(),
        body: StructuredBody::Expressions(vec![Int(n)]),
    };
    let mut program = v1model();
    program.actions = vec![
        no_action(false),
        action("ingressImpl.my_drop", &[]),
        action("ingressImpl.redirect", &[]),
    ];
    let mut t = table(
        "ingressImpl.t",
        vec![],
        vec![
            ActionRef {
                action: "ingressImpl.redirect".into(),
                annotations: vec![myid(1)],
            },
            ActionRef {
                action: "ingressImpl.my_drop".into(),
                annotations: vec![myid(2)],
            },
            action_ref("NoAction"),
        ],
    );
    t.annotations = vec![
        Annotation::Structured {
            name: "MixedExprList".into(),
            body: StructuredBody::Expressions(vec![
                Int(1),
                text("hello"),
                Bool(true),
                Bool(false),
                Int(11),
            ]),
        },
        Annotation::Structured {
            name: "MixedKV".into(),
            body: StructuredBody::KeyValues(vec![
                ("label".into(), text("text")),
                ("my_bool".into(), Bool(true)),
                ("int_val".into(), Int(6)),
            ]),
        },
    ];
    t.default_action = default_action("NoAction", false);
    program.tables = vec![t];
    assert_p4c_output(
        &program,
        include_str!("p4c/structured_annotations.p4.p4info.txtpb"),
    );
}
