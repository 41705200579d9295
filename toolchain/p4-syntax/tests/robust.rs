//! The parser never panics: every prefix of real programs, and programs with tokens deleted,
//! parse to diagnostics (or to a tree) without a crash.

use p4_syntax::{parse, Diagnostics, SourceMap};
use std::path::Path;

fn corpus() -> Vec<String> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let files = [
        "toolchain/p4-compile/p4include/core.p4",
        "toolchain/p4-compile/p4include/v1model.p4",
        "tests/compiler/good/router.p4",
    ];
    // What cpp would hand over: each file with everything it includes in front.
    let mut text = String::new();
    files
        .iter()
        .map(|f| {
            text.push_str(&std::fs::read_to_string(root.join(f)).unwrap());
            text.clone()
        })
        .collect()
}

fn parse_text(text: &str) -> Diagnostics {
    let map = SourceMap::new("t.p4", text.to_string());
    let mut d = Diagnostics::default();
    parse(&map, &mut d);
    d
}

#[test]
fn whole_files_parse_cleanly() {
    for text in corpus() {
        let d = parse_text(&text);
        assert!(!d.has_errors(), "{:?}", d.items());
    }
}

#[test]
fn truncated_programs_do_not_panic() {
    for text in corpus() {
        let cuts: Vec<usize> = (0..text.len())
            .step_by(7)
            .filter(|i| text.is_char_boundary(*i))
            .collect();
        let mut errors = 0;
        for cut in cuts {
            errors += parse_text(&text[..cut]).error_count();
        }
        assert!(errors > 0);
    }
}

#[test]
fn deleted_spans_do_not_panic() {
    for text in corpus() {
        let mut i = 0;
        while i + 5 < text.len() {
            if text.is_char_boundary(i) && text.is_char_boundary(i + 5) {
                let mutated = format!("{}{}", &text[..i], &text[i + 5..]);
                parse_text(&mutated);
            }
            i += 37;
        }
    }
}

#[test]
fn deep_nesting_is_an_error_not_a_crash() {
    let src = format!(
        "const bit<8> x = {}1{};",
        "(".repeat(5000),
        ")".repeat(5000)
    );
    let d = parse_text(&src);
    assert!(d.items().iter().any(|x| x.message == "nesting too deep"));
}
