use p4runtime_proto::p4info::{self, P4Info};
use p4runtime_proto::p4runtime::{self, WriteRequest};
use p4runtime_proto::{from_binary, from_json, from_text, to_json, to_text, CodecError};
use prost::Message;

/// The layout of p4c's output for p4c/testdata/p4_16_samples_outputs/
/// action_selector_shared-bmv2.p4.p4info.txtpb (ids as p4c assigned them), without its two
/// leading `# proto-file` comment lines.
const P4C_TEXT: &str = r#"pkg_info {
  arch: "v1model"
}
tables {
  preamble {
    id: 38116258
    name: "IngressI.indirect_ws"
    alias: "indirect_ws"
  }
  action_refs {
    id: 23455883
  }
  action_refs {
    id: 21257015
  }
  const_default_action_id: 21257015
  implementation_id: 291652621
  size: 1024
}
actions {
  preamble {
    id: 21257015
    name: "NoAction"
    alias: "NoAction"
    annotations: "@noWarn(\"unused\")"
  }
}
action_profiles {
  preamble {
    id: 291652621
    name: "IngressI.as"
    alias: "as"
  }
  table_ids: 38116258
  with_selector: true
  size: 1024
}
type_info {
}
"#;

fn sample() -> P4Info {
    from_text(P4C_TEXT).expect("p4c's text parses")
}

#[test]
fn text_from_p4c_prints_back_identically() {
    let info = sample();
    assert_eq!(info.tables[0].preamble.as_ref().unwrap().id, 38116258);
    assert_eq!(info.action_profiles[0].table_ids, vec![38116258]);
    assert_eq!(to_text(&info), P4C_TEXT);
}

#[test]
fn binary_round_trip() {
    let info = sample();
    let bytes = info.encode_to_vec();
    assert_eq!(from_binary::<P4Info>(&bytes).unwrap(), info);
}

#[test]
fn json_round_trip_uses_proto3_json_names() {
    let info = sample();
    let json = to_json(&info);
    assert!(
        json.starts_with("{\n \"pkgInfo\": {\n  \"arch\": \"v1model\"\n },\n"),
        "{json}"
    );
    assert!(
        json.contains("\"constDefaultActionId\": 21257015"),
        "{json}"
    );
    assert!(json.contains("\"withSelector\": true"), "{json}");
    assert_eq!(from_json::<P4Info>(&json).unwrap(), info);
}

#[test]
fn text_json_binary_chain_is_lossless() {
    let info = sample();
    let via_json: P4Info = from_json(&to_json(&info)).unwrap();
    let via_text: P4Info = from_text(&to_text(&via_json)).unwrap();
    let via_binary: P4Info = from_binary(&via_text.encode_to_vec()).unwrap();
    assert_eq!(via_binary, info);
}

#[test]
fn text_error_reports_line_and_column() {
    let err = from_text::<P4Info>("pkg_info {\n  arch: \"v1model\"\n}\ntables {\n  sise: 3\n}\n")
        .unwrap_err();
    match err {
        CodecError::Text { line, column, .. } => assert_eq!((line, column), (5, 3)),
        other => panic!("unexpected {other:?}"),
    }
}

#[test]
fn json_error_reports_line_and_column() {
    let err = from_json::<P4Info>("{\n \"tables\": [\n  {\"size\": \"x\"}\n ]\n}").unwrap_err();
    assert!(matches!(err, CodecError::Json { line: 3, .. }), "{err:?}");
}

#[test]
fn p4runtime_bytes_fields_are_base64_in_json() {
    let request = WriteRequest {
        device_id: 1,
        election_id: Some(p4runtime::Uint128 { high: 0, low: 7 }),
        updates: vec![p4runtime::Update {
            r#type: p4runtime::update::Type::Insert as i32,
            entity: Some(p4runtime::Entity {
                entity: Some(p4runtime::entity::Entity::TableEntry(
                    p4runtime::TableEntry {
                        table_id: 38116258,
                        r#match: vec![p4runtime::FieldMatch {
                            field_id: 1,
                            field_match_type: Some(p4runtime::field_match::FieldMatchType::Exact(
                                p4runtime::field_match::Exact {
                                    value: vec![0x0a, 0, 0, 1],
                                },
                            )),
                        }],
                        ..Default::default()
                    },
                )),
            }),
        }],
        ..Default::default()
    };
    let json = to_json(&request);
    // uint64 is a string in proto3 JSON; bytes are base64.
    assert!(json.contains("\"deviceId\": \"1\""), "{json}");
    assert!(json.contains("\"value\": \"CgAAAQ==\""), "{json}");
    assert_eq!(from_json::<WriteRequest>(&json).unwrap(), request);
    let text = to_text(&request);
    assert!(text.contains("type: INSERT"), "{text}");
    assert_eq!(from_text::<WriteRequest>(&text).unwrap(), request);
}

#[test]
fn match_type_enum_is_printed_by_name() {
    let mut info = P4Info::default();
    info.tables.push(p4info::Table {
        match_fields: vec![p4info::MatchField {
            id: 1,
            name: "hdr.ipv4.dstAddr".into(),
            bitwidth: 32,
            r#match: Some(p4info::match_field::Match::MatchType(
                p4info::match_field::MatchType::Lpm as i32,
            )),
            ..Default::default()
        }],
        ..Default::default()
    });
    assert!(to_text(&info).contains("    match_type: LPM\n"));
}
