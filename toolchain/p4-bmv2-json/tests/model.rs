use p4_bmv2_json::{Expr, MatchType, Program, TransitionKind, Tv};

const P4C_LIKE: &str = r#"{
  "header_types": [
    {"name": "scalars_0", "id": 0, "fields": [["tmp", 32, false], ["s", 8, true]]},
    {"name": "ethernet_t", "id": 1, "fields": [["dst", 48, false], ["etherType", 16, false]]},
    {"name": "vl_t", "id": 2, "fields": [["len", 8, false], ["opts", "*"]], "max_length": 40,
     "length_exp": {"type": "expression", "value": {"op": "*", "left": {"type": "field", "value": ["vl", "len"]}, "right": {"type": "hexstr", "value": "0x8"}}}}
  ],
  "headers": [{"name": "ethernet", "id": 0, "header_type": "ethernet_t", "metadata": false, "pi_omit": true}],
  "errors": [["NoError", 0], ["PacketTooShort", 1]],
  "parsers": [{"name": "parser", "id": 0, "init_state": "start", "parse_states": [{
    "name": "start", "id": 0,
    "parser_ops": [
      {"parameters": [{"type": "regular", "value": "ethernet"}], "op": "extract"},
      {"op": "primitive", "parameters": [{"op": "assign", "parameters": [
         {"type": "field", "value": ["scalars", "tmp"]}, {"type": "hexstr", "value": "0x1"}]}]}
    ],
    "transition_key": [{"type": "field", "value": ["ethernet", "etherType"]}, {"type": "lookahead", "value": [0, 8]}],
    "transitions": [
      {"type": "hexstr", "value": "0x080045", "mask": "0xffffff", "next_state": null},
      {"value": "default", "mask": null, "next_state": null},
      {"type": "parse_vset", "value": "pvs", "mask": null, "next_state": null}
    ]}]}],
  "actions": [{"name": "a", "id": 0, "runtime_data": [{"name": "p", "bitwidth": 9}], "primitives": [
    {"op": "assign", "parameters": [
      {"type": "expression", "value": {"type": "expression", "value": {"op": "access_field",
        "left": {"type": "expression", "value": {"op": "dereference_header_stack",
           "left": {"type": "header_stack", "value": "h2"}, "right": {"type": "field", "value": ["h1", "idx"]}}},
        "right": 0}}},
      {"type": "expression", "value": {"type": "expression", "value": {"op": "?",
        "cond": {"type": "expression", "value": {"op": "d2b", "left": null, "right": {"type": "runtime_data", "value": 0}}},
        "left": {"type": "hexstr", "value": "-0x1"}, "right": {"type": "local", "value": 0}}}}
    ], "source_info": {"filename": "x.p4", "line": 3, "column": 4, "source_fragment": "x = 1"}}
  ]}],
  "pipelines": [{"name": "ingress", "id": 0, "init_table": "t", "tables": [{
    "name": "t", "id": 0, "key": [{"match_type": "lpm", "name": "hdr.x", "target": ["ethernet", "dst"], "mask": null},
                                  {"match_type": "valid", "target": "ethernet", "mask": null}],
    "match_type": "lpm", "type": "simple", "max_size": 16, "with_counters": false, "support_timeout": false,
    "direct_meters": null, "action_ids": [0], "actions": ["a"], "base_default_next": null,
    "next_tables": {"a": null},
    "default_entry": {"action_id": 0, "action_const": true, "action_data": ["0x1"], "action_entry_const": true},
    "entries": [{"match_key": [{"match_type": "lpm", "key": "0x0a0000000000", "prefix_length": 8},
                               {"match_type": "valid", "key": true}],
                 "action_entry": {"action_id": 0, "action_data": ["0x02"]}, "priority": 1}]
  }], "action_profiles": [], "conditionals": []}],
  "calculations": [{"name": "c", "id": 0, "algo": "csum16", "input": [
    {"type": "field", "value": ["ethernet", "dst"]}, {"type": "hexstr", "value": "0x0", "bitwidth": 4}, {"type": "payload", "value": null}]}],
  "checksums": [{"name": "k", "id": 0, "target": ["ethernet", "etherType"], "type": "generic", "calculation": "c", "if_cond": null}],
  "field_aliases": [["queueing_metadata.enq_timestamp", ["standard_metadata", "enq_timestamp"]]],
  "some_future_attribute": {"ignored": true},
  "__meta__": {"version": [2, 23], "compiler": "https://github.com/p4lang/p4c"}
}"#;

#[test]
fn reads_p4c_shaped_document() {
    let p = Program::from_json(P4C_LIKE).unwrap();
    assert_eq!(p.header_types[1].fields[1].name, "etherType");
    assert!(p.header_types[0].fields[1].signed);
    let st = &p.parsers[0].parse_states[0];
    assert!(matches!(st.transitions[1].kind, TransitionKind::Default));
    assert!(
        matches!(&st.transitions[2].kind, TransitionKind::ParseVset { name, .. } if name == "pvs")
    );
    assert!(matches!(
        st.transition_key[1],
        Tv::Lookahead {
            offset: 0,
            bitwidth: 8
        }
    ));
    let table = &p.pipelines[0].tables[0];
    assert_eq!(table.key[0].match_type, MatchType::Lpm);
    assert_eq!(table.entries[0].match_key[0].prefix_length, Some(8));
    let Tv::Expression(e) = &p.actions[0].primitives[0].parameters[1] else {
        panic!("expected an expression")
    };
    let Expr::Tv(Tv::Expression(inner)) = e.as_ref() else {
        panic!("expected a nested expression")
    };
    let Expr::Op(op) = inner.as_ref() else {
        panic!("expected an operation")
    };
    assert_eq!(op.op, "?");
    assert!(op.cond.is_some());
    assert!(matches!(
        p.calculations[0].input[1],
        Tv::SizedHexstr { bitwidth: 4, .. }
    ));
    assert!(matches!(p.calculations[0].input[2], Tv::Payload));
    assert!(p.checksums[0].verify && p.checksums[0].update);
}

#[test]
fn round_trips_through_serialization() {
    let p = Program::from_json(P4C_LIKE).unwrap();
    let again = Program::from_json(&p.to_json_pretty()).unwrap();
    assert_eq!(p, again);
}

fn err(text: &str) -> String {
    Program::from_json(text).unwrap_err().to_string()
}

#[test]
fn errors_name_the_json_path() {
    let bad = P4C_LIKE.replace(
        r#""match_type": "valid", "target""#,
        r#""match_type": "foo", "target""#,
    );
    assert!(err(&bad).starts_with(
        r#"pipelines[0].tables[0].key[1].match_type: unknown match type "foo" at line 36"#
    ));
    let bad = P4C_LIKE.replace(r#""type": "runtime_data""#, r#""type": "bogus""#);
    let e = err(&bad);
    assert!(
        e.starts_with("actions[0].primitives[0].parameters[1].value.value.cond.value.right"),
        "{e}"
    );
    assert!(e.contains(r#"unknown type "bogus""#), "{e}");
    let bad = P4C_LIKE.replace(r#""value": "0x080045""#, r#""value": "0xzz""#);
    let e = err(&bad);
    assert!(
        e.starts_with("parsers[0].parse_states[0].transitions[0]: invalid hexstr"),
        "{e}"
    );
    let bad = P4C_LIKE.replace(r#"["len", 8, false]"#, r#"["len", "x"]"#);
    assert!(err(&bad).starts_with("header_types[2].fields[0]: field width must be"));
    let bad = P4C_LIKE.replace(r#""op": "extract""#, r#""op": "extrakt""#);
    assert!(err(&bad).starts_with(
        r#"parsers[0].parse_states[0].parser_ops[0].op: unknown parser op "extrakt""#
    ));
    assert!(err("{\"actions\": [}").contains("line 1"));
    assert!(err("\"x\"").starts_with(".: invalid type"));
}

/// p4c writes `0` as the signed flag of some fields (members of a struct with a `bool`,
/// tests/p4c-corpus/real-p4c/header-bool-bmv2): 0 and 1 read as false and true.
#[test]
fn signed_flag_may_be_0_or_1() {
    let p =
        Program::from_json(&P4C_LIKE.replace(r#"["len", 8, false]"#, r#"["len", 8, 0]"#)).unwrap();
    assert!(!p.header_types[2].fields[0].signed);
    let p =
        Program::from_json(&P4C_LIKE.replace(r#"["len", 8, false]"#, r#"["len", 8, 1]"#)).unwrap();
    assert!(p.header_types[2].fields[0].signed);
    let bad = P4C_LIKE.replace(r#"["len", 8, false]"#, r#"["len", 8, 2]"#);
    assert!(err(&bad).contains("signed flag must be a boolean, 0 or 1, not 2"));
}
