//! Loader: BMv2 JSON data model -> compiled [`Prog`]. Every semantic error names the JSON path.
//! One file per section of the JSON; this one holds the state they share and the order they
//! are loaded in.

use crate::expr::{Ex, Op1, Op2, K};
use crate::program::*;
use p4_bmv2_json as j;
use p4_bmv2_json::JsonError;
use std::collections::HashMap;

mod actions;
mod deparsers;
mod expressions;
mod externs;
mod headers;
mod parsers;
mod pipelines;

type R<T> = Result<T, JsonError>;

fn err<T>(path: &str, message: impl Into<String>) -> R<T> {
    Err(JsonError {
        path: path.to_string(),
        message: message.into(),
    })
}

/// What an expression may refer to where it is compiled.
#[derive(Clone, Copy)]
struct Scope<'a> {
    params: Option<&'a [(String, u32)]>,
    parser: bool,
}

/// Bounds that keep a hostile program from exhausting memory (bmv2 has none).
const MAX_FIELD_BITS: u32 = 1 << 16;
const MAX_ARRAY_SIZE: u32 = 1 << 24;

fn check_size(size: u32, path: &str) -> R<()> {
    if size > MAX_ARRAY_SIZE {
        return err(
            path,
            format!("size {size} exceeds the supported {MAX_ARRAY_SIZE} cells"),
        );
    }
    Ok(())
}

const NO_SCOPE: Scope<'static> = Scope {
    params: None,
    parser: false,
};

struct L<'a> {
    j: &'a j::Program,
    p: Prog,
    header_by_name: HashMap<&'a str, u32>,
    header_by_id: HashMap<i64, u32>,
    /// Field offsets within a header, by header index.
    field_index: Vec<HashMap<&'a str, u32>>,
    stack_by_name: HashMap<&'a str, u32>,
    union_by_name: HashMap<&'a str, u32>,
    union_by_id: HashMap<i64, u32>,
    /// Member names of each union, in order.
    union_members: Vec<Vec<&'a str>>,
    ustack_by_name: HashMap<&'a str, u32>,
    ustack_type_members: Vec<Vec<&'a str>>,
    aliases: HashMap<&'a str, &'a j::FieldRef>,
    calc_by_name: HashMap<&'a str, u32>,
    counter_by_name: HashMap<&'a str, u32>,
    meter_by_name: HashMap<&'a str, u32>,
    register_by_name: HashMap<&'a str, u32>,
    vset_by_name: HashMap<&'a str, u32>,
    action_by_id: HashMap<i64, u32>,
    node_by_name: HashMap<&'a str, Next>,
}

pub fn load(jp: &j::Program) -> R<Prog> {
    if let Some(meta) = &jp.meta {
        if meta.version.first().is_some_and(|&v| v != 2) {
            return err(
                "__meta__.version",
                format!(
                    "unsupported BMv2 JSON major version {:?} (expected 2)",
                    meta.version
                ),
            );
        }
    }
    let mut l = L {
        j: jp,
        p: Prog::default(),
        header_by_name: HashMap::new(),
        header_by_id: HashMap::new(),
        field_index: Vec::new(),
        stack_by_name: HashMap::new(),
        union_by_name: HashMap::new(),
        union_by_id: HashMap::new(),
        union_members: Vec::new(),
        ustack_by_name: HashMap::new(),
        ustack_type_members: Vec::new(),
        aliases: HashMap::new(),
        calc_by_name: HashMap::new(),
        counter_by_name: HashMap::new(),
        meter_by_name: HashMap::new(),
        register_by_name: HashMap::new(),
        vset_by_name: HashMap::new(),
        action_by_id: HashMap::new(),
        node_by_name: HashMap::new(),
    };
    l.headers()?;
    l.stacks_unions()?;
    l.errors();
    for (name, target) in &jp.field_aliases {
        l.aliases.insert(name.as_str(), target);
    }
    l.intrinsics();
    l.lists()?;
    l.calculations()?;
    l.stateful()?;
    l.actions()?;
    l.parsers()?;
    l.deparsers()?;
    l.pipelines()?;
    l.checksums()?;
    Ok(l.p)
}

fn bin(op: Op2, a: Ex, b: Ex) -> Ex {
    let wide = a.wide || b.wide;
    Ex {
        k: K::Bin(op, Box::new(a), Box::new(b)),
        wide,
    }
}

fn un(op: Op1, a: Ex) -> Ex {
    let wide = a.wide;
    Ex {
        k: K::Un(op, Box::new(a)),
        wide,
    }
}
