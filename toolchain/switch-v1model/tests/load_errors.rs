//! A malformed or unsupported program is refused with the JSON path of the offending item.

use serde_json::{json, Value};
use switch_v1model::{Switch, SwitchConfig};

fn base() -> Value {
    let path = format!("{}/tests/stf/l3.json", env!("CARGO_MANIFEST_DIR"));
    serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap()
}

fn error_of(edit: impl FnOnce(&mut Value)) -> String {
    let mut v = base();
    edit(&mut v);
    match Switch::from_json(&v.to_string(), SwitchConfig::default()) {
        Ok(_) => panic!("the edited program loaded"),
        Err(e) => e.to_string(),
    }
}

fn check(edit: impl FnOnce(&mut Value), expected_prefix: &str) {
    let e = error_of(edit);
    assert!(
        e.starts_with(expected_prefix),
        "got: {e}\nwanted: {expected_prefix}"
    );
}

#[test]
fn the_unedited_program_loads() {
    assert!(Switch::from_json(&base().to_string(), SwitchConfig::default()).is_ok());
}

#[test]
fn semantic_errors_name_the_json_path() {
    check(
        |v| {
            v["actions"][2]["primitives"][1]["parameters"][0] =
                json!({"type": "field", "value": ["nohdr", "x"]})
        },
        r#"actions[2].primitives[1].parameters[0]: unknown header "nohdr""#,
    );
    check(
        |v| {
            v["actions"][2]["primitives"][1]["parameters"][0] =
                json!({"type": "field", "value": ["ethernet", "nofield"]})
        },
        r#"actions[2].primitives[1].parameters[0]: header "ethernet" has no field "nofield""#,
    );
    check(
        |v| v["actions"][1]["primitives"][0]["op"] = json!("frobnicate"),
        r#"actions[1].primitives[0].op: unknown primitive "frobnicate""#,
    );
    check(
        |v| {
            v["actions"][1]["primitives"][0]["parameters"] =
                json!([{"type": "hexstr", "value": "0x1"}, {"type": "hexstr", "value": "0x1"}])
        },
        r#"actions[1].primitives[0].parameters: "mark_to_drop" takes 0 to 1 parameters, found 2"#,
    );
    check(
        |v| {
            v["actions"][2]["primitives"][0]["parameters"][1] =
                json!({"type": "runtime_data", "value": 5})
        },
        "actions[2].primitives[0].parameters[1]: action has 2 parameters, no parameter 5",
    );
    check(
        |v| v["parsers"][0]["parse_states"][0]["transitions"][0]["next_state"] = json!("nowhere"),
        r#"parsers[0].parse_states[0].transitions[0].next_state: unknown parse state "nowhere""#,
    );
    check(
        |v| v["calculations"][0]["algo"] = json!("md5"),
        r#"calculations[0].algo: unknown hash algorithm "md5""#,
    );
    check(
        |v| v["pipelines"][0]["conditionals"][0]["true_next"] = json!("ghost"),
        r#"pipelines[0].conditionals[0].true_next: unknown control flow node "ghost""#,
    );
    check(
        |v| v["pipelines"][0]["tables"][0]["next_tables"]["ingress.set_nhop"] = json!("node_2"),
        r#"pipelines[0]: control flow node "node_2" leads back to itself"#,
    );
    check(
        |v| v["pipelines"][0]["conditionals"][0]["expression"]["value"]["op"] = json!("**"),
        r#"pipelines[0].conditionals[0].expression.value.op: unknown expression op "**""#,
    );
    check(
        |v| v["headers"][2]["header_type"] = json!("nothing_t"),
        r#"headers[2].header_type: unknown header type "nothing_t""#,
    );
    check(
        |v| v["pipelines"][0]["tables"][0]["action_ids"][0] = json!(99),
        "pipelines[0].tables[0].action_ids[0]: no action with id 99",
    );
    check(
        |v| v["pipelines"][0]["tables"][0]["default_entry"]["action_data"] = json!(["0x1"]),
        r#"pipelines[0].tables[0].default_entry.action_data: action "ingress.drop" takes 0 parameters, got 1"#,
    );
    check(
        |v| v["checksums"][0]["calculation"] = json!("nocalc"),
        r#"checksums[0].calculation: unknown calculation "nocalc""#,
    );
    check(
        |v| v["__meta__"]["version"] = json!([3, 0]),
        "__meta__.version: unsupported BMv2 JSON major version [3, 0]",
    );
    check(
        |v| {
            v["actions"][1]["primitives"] =
                json!([{"op": "_jump", "parameters": [{"type": "hexstr", "value": "0x9"}]}])
        },
        "actions[1].primitives[0].parameters[0]: jump target 9 is past the action's end",
    );
    check(
        |v| v["parsers"][0]["parse_states"][0]["parser_ops"][0]["parameters"][0] = json!({"type": "lookahead", "value": [0, 8]}),
        "parsers[0].parse_states[0].parser_ops[0].parameters[0]: expected a header, found a lookahead",
    );
    // Sizes that would exhaust memory are refused rather than allocated.
    check(
        |v| v["header_types"][2]["fields"][0] = json!(["dstAddr", 100000, false]),
        "header_types[2].fields[0]: field width 100000 exceeds the supported 65536 bits",
    );
    check(
        |v| {
            v["register_arrays"] =
                json!([{"name": "r", "id": 0, "size": 4000000000u32, "bitwidth": 8}])
        },
        "register_arrays[0].size: size 4000000000 exceeds the supported 16777216 cells",
    );
    check(
        |v| v["header_types"][2]["length_exp"] = json!({"type": "hexstr", "value": "0x8"}),
        "header_types[2].length_exp: length_exp (P4_14 variable-length headers) is not supported",
    );
}

#[test]
fn format_errors_name_the_json_path() {
    check(
        |v| v["pipelines"][0]["tables"][0]["key"][0]["match_type"] = json!("foo"),
        r#"pipelines[0].tables[0].key[0].match_type: unknown match type "foo""#,
    );
    check(
        |v| v["actions"][2]["primitives"][0]["parameters"][1] = json!({"type": "wat", "value": 1}),
        r#"actions[2].primitives[0].parameters[1]: unknown type "wat""#,
    );
    let e = Switch::from_json("{\"headers\": [", SwitchConfig::default()).unwrap_err();
    assert!(e.to_string().contains("EOF"), "{e}");
}
