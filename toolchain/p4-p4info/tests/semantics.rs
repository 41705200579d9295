//! Behaviour with no p4c golden file in reach, checked against the rules of p4c's
//! `control-plane/p4RuntimeSerializer.cpp`, `p4RuntimeSymbolTable.cpp` and
//! `p4RuntimeArchStandard.h` (each test names the rule it checks).

use p4_p4info::*;
use p4runtime_proto::p4info::{self as pb, match_field, P4Info};

fn table(name: &str) -> Table {
    Table {
        name: name.into(),
        annotations: vec![],
        match_fields: vec![],
        actions: vec![],
        default_action: None,
        implementation: None,
        direct_counter: None,
        direct_meter: None,
        size: None,
        supports_timeout: false,
        entries: Entries::None,
    }
}

fn action(name: &str, params: Vec<Param>) -> Action {
    Action {
        name: name.into(),
        annotations: vec![],
        params,
    }
}

fn param(name: &str, annotations: Vec<Annotation>) -> Param {
    Param {
        name: name.into(),
        ty: P4Type::Bit(8),
        annotations,
    }
}

fn program() -> ControlPlane {
    ControlPlane {
        arch: "v1model".into(),
        ..Default::default()
    }
}

fn ok(program: &ControlPlane) -> P4Info {
    generate(program).unwrap_or_else(|errors| panic!("{errors:#?}"))
}

fn errors(program: &ControlPlane) -> Vec<P4InfoError> {
    generate(program).expect_err("the program is invalid")
}

fn preamble_of(info: &P4Info, name: &str) -> pb::Preamble {
    info.tables
        .iter()
        .filter_map(|t| t.preamble.clone())
        .chain(info.actions.iter().filter_map(|a| a.preamble.clone()))
        .find(|p| p.name == name)
        .unwrap_or_else(|| panic!("{name} not in P4Info"))
}

/// `isHidden()` keeps a table or action out of P4Info, but it was collected as a symbol, so it
/// still takes part in aliases and hash probing.
#[test]
fn hidden_entities_are_left_out_but_shape_aliases() {
    let mut p = program();
    let mut hidden = action("c1.act", vec![]);
    hidden.annotations.push(Annotation::rendered("@hidden"));
    p.actions = vec![hidden, action("c2.act", vec![])];
    let mut t = table("c1.tbl");
    t.annotations.push(Annotation::rendered("@hidden"));
    p.tables = vec![t];
    let info = ok(&p);
    assert!(info.tables.is_empty());
    assert_eq!(info.actions.len(), 1);
    assert_eq!(preamble_of(&info, "c2.act").alias, "c2.act");
}

/// `externalId`: an `@id` without prefix gets the kind's prefix, one with the right prefix is
/// kept, and the hashed ids avoid both.
#[test]
fn id_annotations_with_and_without_prefix() {
    let mut p = program();
    let mut a = table("a");
    a.annotations.push(Annotation::Id(5));
    let mut b = table("b");
    b.annotations.push(Annotation::Id(0x0200_0006));
    p.tables = vec![a, b, table("c")];
    let info = ok(&p);
    assert_eq!(preamble_of(&info, "a").id, 0x0200_0005);
    assert_eq!(preamble_of(&info, "b").id, 0x0200_0006);
    let hashed = 0x0200_0000 | (jenkins_one_at_a_time(b"c") & 0x00ff_ffff);
    assert_eq!(preamble_of(&info, "c").id, hashed);
}

/// `tryToAssignId` / `externalId` errors carry the declaration's name.
#[test]
fn conflicting_ids_are_errors_naming_the_declaration() {
    let mut p = program();
    let mut a = table("ingress.a");
    a.annotations.push(Annotation::Id(7));
    let mut b = table("ingress.b");
    b.annotations.push(Annotation::Id(0x0200_0007));
    let mut act = action("ingress.x", vec![]);
    act.annotations.push(Annotation::Id(0x0200_0001));
    p.tables = vec![a, b];
    p.actions = vec![act];
    let errs = errors(&p);
    assert!(errs.contains(&P4InfoError::DuplicateId {
        name: "ingress.b".into(),
        id: 0x0200_0007
    }));
    let wrong = errs
        .iter()
        .find(|e| matches!(e, P4InfoError::WrongIdPrefix { .. }))
        .expect("a prefix error");
    assert_eq!(wrong.entity(), "ingress.x");
    assert!(wrong.to_string().contains("wrong 8-bit prefix"), "{wrong}");
}

/// `checkForDuplicates`: two tables with one name make one symbol but two P4Info entries.
#[test]
fn duplicate_table_names_are_errors() {
    let mut p = program();
    p.tables = vec![table("ingress.t"), table("ingress.t")];
    assert_eq!(
        errors(&p),
        vec![P4InfoError::DuplicateName {
            kind: "table",
            name: "ingress.t".into()
        }]
    );
}

/// Actions copied into several controls are the same symbol and listed once.
#[test]
fn repeated_actions_are_listed_once() {
    let mut p = program();
    p.actions = vec![action("NoAction", vec![]), action("NoAction", vec![])];
    assert_eq!(ok(&p).actions.len(), 1);
}

/// `FieldIdAllocator`: `@id`s first, then positions 1, 2, ... skipping taken ids; an
/// annotated field still consumes its position.
#[test]
fn field_ids_follow_p4c_allocation() {
    let mut p = program();
    p.actions = vec![
        action(
            "a1",
            vec![param("x", vec![Annotation::Id(2)]), param("y", vec![])],
        ),
        action(
            "a2",
            vec![param("x", vec![]), param("y", vec![Annotation::Id(1)])],
        ),
    ];
    let info = ok(&p);
    let ids = |n: usize| -> Vec<u32> { info.actions[n].params.iter().map(|p| p.id).collect() };
    assert_eq!(ids(0), vec![2, 3]);
    assert_eq!(ids(1), vec![2, 1]);
}

#[test]
fn zero_and_duplicate_field_ids_are_errors() {
    let mut p = program();
    p.actions = vec![action(
        "a",
        vec![
            param("x", vec![Annotation::Id(0)]),
            param("y", vec![Annotation::Id(3)]),
            param("z", vec![Annotation::Id(3)]),
        ],
    )];
    assert_eq!(
        errors(&p),
        vec![
            P4InfoError::ZeroFieldId {
                owner: "a".into(),
                field: "x".into()
            },
            P4InfoError::DuplicateFieldId {
                owner: "a".into(),
                field: "z".into(),
                id: 3
            },
        ]
    );
}

#[test]
fn table_properties_as_p4c_sets_them() {
    let mut p = program();
    p.actions = vec![action("a", vec![])];
    let mut t = table("t");
    t.size = Some(0);
    t.supports_timeout = true;
    t.match_fields = vec![MatchField {
        name: "k".into(),
        ty: P4Type::Bit(4),
        kind: MatchKind::Other("my_kind".into()),
        annotations: vec![
            Annotation::Brief("the key".into()),
            Annotation::Description("longer".into()),
        ],
    }];
    t.actions = vec![ActionRef {
        action: "a".into(),
        annotations: vec![Annotation::rendered("@tableonly")],
    }];
    p.tables = vec![t];
    let info = ok(&p);
    let t = &info.tables[0];
    assert_eq!(t.size, 1024, "size 0 means the default");
    assert_eq!(
        t.idle_timeout_behavior,
        pb::table::IdleTimeoutBehavior::NotifyControl as i32
    );
    assert_eq!(
        t.match_fields[0].r#match,
        Some(match_field::Match::OtherMatchType("my_kind".into()))
    );
    let doc = t.match_fields[0].doc.clone().expect("doc");
    assert_eq!(
        (doc.brief.as_str(), doc.description.as_str()),
        ("the key", "longer")
    );
    assert!(t.match_fields[0].annotations.is_empty());
    assert_eq!(
        t.action_refs[0].scope,
        pb::action_ref::Scope::TableOnly as i32
    );
    assert_eq!(t.action_refs[0].annotations, vec!["@tableonly".to_string()]);
}

#[test]
fn both_scope_annotations_are_an_error() {
    let mut p = program();
    p.actions = vec![action("a", vec![])];
    let mut t = table("t");
    t.actions = vec![ActionRef {
        action: "a".into(),
        annotations: vec![
            Annotation::rendered("@tableonly"),
            Annotation::rendered("@defaultonly"),
        ],
    }];
    p.tables = vec![t];
    assert_eq!(
        errors(&p),
        vec![P4InfoError::ConflictingScope {
            table: "t".into(),
            action: "a".into()
        }]
    );
}

/// Inconsistent input from the caller is an error, never a panic.
#[test]
fn unknown_references_and_bad_arity_are_errors() {
    let mut p = program();
    p.actions = vec![action("a", vec![param("x", vec![])])];
    let mut t = table("t");
    t.actions = vec![ActionRef {
        action: "missing".into(),
        annotations: vec![],
    }];
    t.default_action = Some(DefaultAction {
        action: "a".into(),
        arguments: vec![],
        is_const: false,
    });
    t.direct_counter = Some("nowhere".into());
    p.tables = vec![t];
    let errs = errors(&p);
    assert!(errs.contains(&P4InfoError::UnknownReference {
        owner: "t".into(),
        kind: "action",
        name: "missing".into()
    }));
    assert!(errs.contains(&P4InfoError::UnknownReference {
        owner: "t".into(),
        kind: "direct counter",
        name: "nowhere".into()
    }));
    assert!(errs.contains(&P4InfoError::DefaultActionArity {
        owner: "t".into(),
        action: "a".into(),
        expected: 1,
        given: 0
    }));
}

#[test]
fn package_info_from_pkginfo_and_annotations() {
    let mut p = program();
    p.package = Package {
        annotations: vec![
            Annotation::rendered("@pkginfo(name=\"x\")"),
            Annotation::rendered("@my_note"),
            Annotation::rendered("@platform_property(multicast_group_table_size=10)"),
            Annotation::Brief("a switch".into()),
        ],
        name: Some("lossless.p4".into()),
        version: Some("1.0".into()),
        platform_properties: vec![
            ("multicast_group_table_size".into(), 10),
            ("no_such_property".into(), 1),
            ("multicast_group_table_max_replicas_per_entry".into(), 30),
        ],
        ..Default::default()
    };
    let pkg = ok(&p).pkg_info.expect("pkg_info");
    assert_eq!(pkg.arch, "v1model");
    assert_eq!(pkg.name, "lossless.p4");
    assert_eq!(pkg.version, "1.0");
    assert_eq!(pkg.annotations, vec!["@my_note".to_string()]);
    // As p4c's pkginfo_annotation output: the known keys, the others left out.
    assert_eq!(
        pkg.platform_properties,
        Some(pb::PlatformProperties {
            multicast_group_table_size: 10,
            multicast_group_table_total_replicas: 0,
            multicast_group_table_max_replicas_per_entry: 30,
        })
    );
    assert_eq!(pkg.doc.map(|d| d.brief), Some("a switch".into()));
}

/// v1model 2020 `meter<I>` with a `type` index: `index_type_name` and `type_info.new_types`.
#[test]
fn indexed_meter_with_typed_index() {
    let mut p = program();
    p.types = vec![TypeDecl::NewType {
        name: "port_t".into(),
        underlying: P4Type::Bit(9),
        translation: None,
        // p4c lists a `type`'s annotations with it (p416-type-use3's `EthT_t`).
        annotations: vec![
            Annotation::rendered("@custom_annotation_0"),
            Annotation::rendered("@p4runtime_translation(\"u\", 9)"),
        ],
    }];
    p.meters = vec![Indexed {
        name: "ingress.m".into(),
        annotations: vec![],
        unit: Unit::Bytes,
        size: 512,
        index_type: Some(P4Type::Named("port_t".into())),
    }];
    let info = ok(&p);
    let m = &info.meters[0];
    assert_eq!(m.size, 512);
    assert_eq!(
        m.spec.map(|s| s.unit),
        Some(pb::meter_spec::Unit::Bytes as i32)
    );
    assert_eq!(
        m.index_type_name.as_ref().map(|n| n.name.as_str()),
        Some("port_t")
    );
    let new_types = info.type_info.expect("type_info").new_types;
    assert_eq!(new_types["port_t"].annotations, ["@custom_annotation_0"]);
    assert_eq!(m.preamble.as_ref().map(|p| p.id >> 24), Some(0x14));
}

#[test]
fn digests_of_one_type_are_one_entry_and_bit_value_sets_have_one_field() {
    let mut p = program();
    p.types = vec![TypeDecl::Struct {
        name: "learn_t".into(),
        fields: vec![("mac".into(), P4Type::Bit(48))],
    }];
    let digest = Digest {
        name: "learn_t".into(),
        ty: P4Type::Named("learn_t".into()),
    };
    p.digests = vec![digest.clone(), digest];
    p.value_sets = vec![ValueSet {
        name: "parser.pvs".into(),
        annotations: vec![],
        size: 4,
        element: ValueSetElement::Bits(16),
    }];
    let info = ok(&p);
    assert_eq!(info.digests.len(), 1);
    let field = &info.value_sets[0].r#match[0];
    assert_eq!((field.id, field.name.as_str(), field.bitwidth), (1, "", 16));
}

#[test]
fn unknown_types_are_errors() {
    let mut p = program();
    p.registers = vec![Register {
        name: "r".into(),
        annotations: vec![],
        ty: P4Type::Named("nowhere_t".into()),
        size: 4,
        index_type: None,
    }];
    assert_eq!(
        errors(&p),
        vec![P4InfoError::UnknownType {
            name: "nowhere_t".into()
        }]
    );
}

#[test]
fn txtpb_starts_with_p4cs_comment_lines() {
    let text = to_txtpb(&ok(&program()));
    assert!(text.starts_with(
        "# proto-file: p4/config/v1/p4info.proto\n# proto-message: p4.config.v1.P4Info\n\npkg_info {\n"
    ));
}

/// `collectTableProperties` adds an action profile or direct resource constructed in a table
/// property by name only: an `@id` there is not honoured; on a declared instance it is.
#[test]
fn id_on_in_place_instances_is_ignored() {
    let mut p = program();
    let profile = |name: &str, in_place: bool| ActionProfile {
        name: name.into(),
        annotations: vec![Annotation::Id(0x11)],
        with_selector: false,
        size: 16,
        max_group_size: None,
        selector_size_semantics: None,
        in_place,
    };
    let mut t1 = table("t1");
    t1.implementation = Some("declared".into());
    let mut t2 = table("t2");
    t2.implementation = Some("in_place".into());
    p.tables = vec![t1, t2];
    p.action_profiles = vec![profile("declared", false), profile("in_place", true)];
    let info = ok(&p);
    let id = |n: usize| info.action_profiles[n].preamble.as_ref().map(|p| p.id);
    assert_eq!(id(0), Some(0x1100_0011));
    let hashed = 0x1100_0000 | (jenkins_one_at_a_time(b"in_place") & 0x00ff_ffff);
    assert_eq!(id(1), Some(hashed));
}
