//! Storage layout: which BMv2 header instance or `scalars` field holds each P4 l-value.
//!
//! As in p4c: the headers struct's members become header instances named after the member
//! (`hdr.ipv4` → `ipv4`, `hdr.vlan[1]` → `vlan[1]`, union members `u.udp`), the user metadata
//! struct's scalar members become fields of the `scalars` metadata header
//! (`userMetadata.port`), `standard_metadata` keeps its own header, and locals and temporaries
//! get fresh `scalars` fields (headers: fresh header instances that, as p4c's, are not
//! metadata, so they start invalid with each packet).

use crate::{unsupported, Bind, Ctx, Unsupported, R};
use p4_bmv2_json as j;
use p4_bmv2_json::Tv;
use p4_sema::ir::{DeclId, DeclKind, Program, Type, TypeDeclKind, TypeId};
use p4_syntax::Span;
use std::collections::HashMap;

/// Where a P4 value lives.
#[derive(Clone, Debug)]
pub(crate) enum Place {
    /// A field of a header instance (`scalars` for metadata); `ty` is its P4 type.
    Scalar {
        h: String,
        f: String,
        ty: Type,
    },
    Header {
        name: String,
        ty: TypeId,
    },
    Stack {
        name: String,
        elem: TypeId,
        size: u32,
    },
    /// `stack.next` (parser extract target).
    StackNext {
        name: String,
    },
    /// `stack.last`: readable fields only.
    StackLast {
        name: String,
        elem: TypeId,
    },
    Union {
        name: String,
        ty: TypeId,
    },
    /// A stack of header unions (`u[2]` of union type `elem`), indexed by constants only.
    UnionStack {
        name: String,
        elem: TypeId,
        size: u32,
    },
    /// `stack.next` of a stack of header unions: only a member of it can be extracted.
    UnionStackNext {
        name: String,
        elem: TypeId,
    },
    /// `stack.next.member` (parser extract target).
    UnionStackNextMember {
        stack: String,
        member: String,
    },
    /// A struct or tuple: one place per field, in declaration order.
    Struct {
        fields: Vec<Place>,
    },
    /// `base[hi:lo]` of a scalar.
    Slice(Box<Place>, u32, u32),
    /// `stack[i]` with an index known only at run time (`dereference_header_stack`).
    DynHeader {
        stack: String,
        elem: TypeId,
        index: Tv,
    },
    /// A field of a `DynHeader`: the `access_field` expression.
    DynField {
        tv: Tv,
        ty: Type,
    },
    /// A field of `stack.last` (read-only, parsers).
    LastField {
        stack: String,
        f: String,
        ty: Type,
    },
}

#[derive(Default)]
pub(crate) struct Layout {
    /// Header types already emitted, by name.
    types: HashMap<String, usize>,
    pub scalars: Vec<j::FieldDecl>,
    /// Places of the package's headers, user metadata and standard metadata, by type.
    pub roots: HashMap<TypeId, Place>,
    /// The user metadata struct (its `@field_list` fields feed clone/resubmit/recirculate).
    pub meta_ty: Option<TypeId>,
}

/// Width and signedness of a scalar P4 type as BMv2 stores it.
pub(crate) fn scalar_width(ctx: &Ctx, ty: &Type) -> Option<(j::FieldWidth, bool)> {
    Some(match ty {
        Type::Bool => (j::FieldWidth::Bits(1), false),
        Type::Bit(w) => (j::FieldWidth::Bits(*w), false),
        Type::Int(w) => (j::FieldWidth::Bits(*w), true),
        Type::Varbit(_) => (j::FieldWidth::Variable, false),
        Type::Error | Type::Enum(_) => (j::FieldWidth::Bits(32), false),
        Type::SerEnum(_, u) => return scalar_width(ctx, u),
        Type::NewType(id) => match &ctx.p.ty(*id).kind {
            TypeDeclKind::NewType(t) => return scalar_width(ctx, t),
            _ => return None,
        },
        _ => return None,
    })
}

/// The parts a header field of type `ty` is flattened into, named: a struct's fields, an
/// array's elements (`bit<8>[16]`, P4_16 1.2.5; header stacks are never header fields).
fn parts(p: &Program, ty: &Type) -> Option<Vec<(String, Type)>> {
    match ty {
        Type::Struct(_) => Some(
            p.fields(ty)?
                .iter()
                .map(|f| (f.name.clone(), f.ty.clone()))
                .collect(),
        ),
        Type::Stack(e, n) => Some((0..*n).map(|k| (k.to_string(), (**e).clone())).collect()),
        _ => None,
    }
}

/// A header type's fields as BMv2 holds them. A header with a struct-typed field is flattened
/// as p4c's `FlattenHeader` does: the struct's leaves take its place, and every field of that
/// header is renamed `_` + its path joined by `_` + its position (`_row_alt0_valid1`); an
/// array field is flattened the same way, its elements named by index (`_arr_32`: element 3
/// at position 2; p4c's bmv2 backend does not lower arrays in headers at all). Other headers
/// keep their field names.
pub(crate) fn header_fields(p: &Program, ty: TypeId) -> Vec<(String, Type)> {
    fn leaves(p: &Program, ty: &Type, path: &mut Vec<String>, out: &mut Vec<(String, Type)>) {
        match parts(p, ty) {
            Some(ps) => {
                for (name, t) in ps {
                    path.push(name);
                    leaves(p, &t, path, out);
                    path.pop();
                }
            }
            None => {
                let n = out.len();
                out.push((format!("_{}{n}", path.join("_")), ty.clone()));
            }
        }
    }
    let fields = p.fields(&Type::Header(ty)).unwrap_or_default();
    if !fields.iter().any(|f| parts(p, &f.ty).is_some()) {
        return fields
            .iter()
            .map(|f| (f.name.clone(), f.ty.clone()))
            .collect();
    }
    let mut out = Vec::new();
    for f in fields {
        leaves(p, &f.ty, &mut vec![f.name.clone()], &mut out);
    }
    out
}

/// Field `i` of a header of type `ty`: a leaf made by `leaf(position, bmv2 name, type)`, or
/// for a struct- or array-typed field a `Place::Struct` of its parts (an array's elements are
/// then indexed by constants as a tuple's are).
pub(crate) fn header_member(
    p: &Program,
    ty: TypeId,
    i: usize,
    leaf: impl Fn(usize, String, Type) -> Place,
) -> Option<Place> {
    fn count(p: &Program, ty: &Type) -> usize {
        match parts(p, ty) {
            Some(ps) => ps.iter().map(|(_, t)| count(p, t)).sum(),
            None => 1,
        }
    }
    fn build(
        p: &Program,
        ty: &Type,
        next: &mut usize,
        flat: &[(String, Type)],
        leaf: &dyn Fn(usize, String, Type) -> Place,
    ) -> Place {
        match parts(p, ty) {
            Some(ps) => Place::Struct {
                fields: ps
                    .iter()
                    .map(|(_, t)| build(p, t, next, flat, leaf))
                    .collect(),
            },
            None => {
                let k = *next;
                *next += 1;
                let (name, ty) = flat[k].clone();
                leaf(k, name, ty)
            }
        }
    }
    let fields = p.fields(&Type::Header(ty))?;
    let f = fields.get(i)?;
    let mut next: usize = fields[..i].iter().map(|f| count(p, &f.ty)).sum();
    let flat = header_fields(p, ty);
    Some(build(p, &f.ty, &mut next, &flat, &leaf))
}

impl Ctx<'_> {
    /// The BMv2 header type for a P4 header type (emitted once).
    fn header_type(&mut self, id: TypeId, span: Span) -> R<String> {
        let decl = self.p.ty(id);
        let name = decl.name.clone();
        if self.lay.types.contains_key(&name) {
            return Ok(name);
        }
        let TypeDeclKind::Header(fields) = &decl.kind else {
            return unsupported(span, format!("`{name}` as a header"));
        };
        let mut out = Vec::new();
        // bmv2's `max_length` is the whole header's largest size in bytes, the fixed fields
        // included (what p4c writes; the varbit's alone made extracts of its largest size fail).
        let mut varbit_bits = None;
        let mut fixed_bits = 0;
        for (name, ty) in header_fields(self.p, id) {
            let Some((width, signed)) = scalar_width(self, &ty) else {
                let span = fields
                    .iter()
                    .find(|f| f.name == name)
                    .map_or(span, |f| f.span);
                return unsupported(span, "a header field of this type");
            };
            match (&ty, &width) {
                (Type::Varbit(w), _) => varbit_bits = Some(*w),
                (_, j::FieldWidth::Bits(b)) => fixed_bits += *b,
                _ => {}
            }
            out.push(j::FieldDecl {
                name,
                width,
                signed,
            });
        }
        let max_length = varbit_bits.map(|v| (fixed_bits + v).div_ceil(8));
        let idx = self.json.header_types.len();
        self.json.header_types.push(j::HeaderType {
            name: name.clone(),
            id: idx as i64,
            fields: out,
            length_exp: None,
            max_length,
        });
        self.lay.types.insert(name.clone(), idx);
        Ok(name)
    }

    /// A header instance of P4 header type `ty`. Never metadata, as p4c makes them (also the
    /// headers of the user metadata and locals): bmv2 resets a header's validity with each
    /// packet and keeps metadata valid, and P4 headers start invalid.
    pub fn add_header_instance(&mut self, name: &str, ty: TypeId, span: Span) -> R<i64> {
        let header_type = self.header_type(ty, span)?;
        Ok(self.push_header(name, header_type, false))
    }

    /// A header instance of the emitted header type `header_type`; its id.
    fn push_header(&mut self, name: &str, header_type: String, meta: bool) -> i64 {
        let id = self.json.headers.len() as i64;
        self.json.headers.push(j::Header {
            name: name.to_string(),
            id,
            header_type,
            metadata: meta,
            pi_omit: None,
        });
        id
    }

    /// A fresh `scalars` field for a value of `ty` named after `base`.
    pub fn scalar(&mut self, base: &str, ty: &Type, span: Span) -> R<Place> {
        let Some((width, signed)) = scalar_width(self, ty) else {
            return unsupported(span, format!("a value of type {}", self.p.show(ty)));
        };
        let f = self.fresh(base);
        self.lay.scalars.push(j::FieldDecl {
            name: f.clone(),
            width,
            signed,
        });
        Ok(Place::Scalar {
            h: "scalars".into(),
            f,
            ty: ty.clone(),
        })
    }

    /// Fresh storage for a value of any type: locals, copy-in/copy-out temporaries. Headers,
    /// unions and stacks are instances with `metadata: false`, as p4c makes them: bmv2 keeps
    /// metadata valid, while a local header starts invalid (`p4-midend`'s `local-headers`
    /// invalidates it again wherever it is declared).
    pub fn fresh_place(&mut self, base: &str, ty: &Type, span: Span) -> R<Place> {
        match ty {
            Type::Header(id) => {
                let name = self.fresh(base);
                self.add_header_instance(&name, *id, span)?;
                Ok(Place::Header { name, ty: *id })
            }
            Type::Struct(_) => {
                let fields = self.p.fields(ty).unwrap_or_default().to_vec();
                let mut out = Vec::new();
                for f in &fields {
                    out.push(self.fresh_place(&format!("{base}.{}", f.name), &f.ty, f.span)?);
                }
                Ok(Place::Struct { fields: out })
            }
            Type::Tuple(ts) => {
                let mut out = Vec::new();
                for (i, t) in ts.iter().enumerate() {
                    out.push(self.fresh_place(&format!("{base}.f{i}"), t, span)?);
                }
                Ok(Place::Struct { fields: out })
            }
            Type::Stack(e, n) => {
                let elem = match **e {
                    Type::Header(elem) => elem,
                    Type::HeaderUnion(elem) => {
                        let name = self.fresh(base);
                        self.add_union_stack(&name, elem, *n, span)?;
                        return Ok(Place::UnionStack {
                            name,
                            elem,
                            size: *n,
                        });
                    }
                    _ => return unsupported(span, "a stack of this element type as a local"),
                };
                let name = self.fresh(base);
                self.add_stack(&name, elem, *n, span)?;
                Ok(Place::Stack {
                    name,
                    elem,
                    size: *n,
                })
            }
            Type::HeaderUnion(id) => {
                let name = self.fresh(base);
                self.add_union(&name, *id, span)?;
                Ok(Place::Union { name, ty: *id })
            }
            Type::Varbit(w) => {
                // bmv2 keeps variable-length fields in headers only (`max_length` bounds the
                // header), so a varbit local is a metadata header of its own, as p4c makes
                // it: type `$varbitW` with the one field `field`.
                let type_name = format!("$varbit{w}");
                if !self.lay.types.contains_key(&type_name) {
                    let idx = self.json.header_types.len();
                    self.json.header_types.push(j::HeaderType {
                        name: type_name.clone(),
                        id: idx as i64,
                        fields: vec![j::FieldDecl {
                            name: "field".into(),
                            width: j::FieldWidth::Variable,
                            signed: false,
                        }],
                        length_exp: None,
                        max_length: Some(w.div_ceil(8)),
                    });
                    self.lay.types.insert(type_name.clone(), idx);
                }
                let name = self.fresh(base);
                self.push_header(&name, type_name, true);
                Ok(Place::Scalar {
                    h: name,
                    f: "field".into(),
                    ty: ty.clone(),
                })
            }
            _ => self.scalar(base, ty, span),
        }
    }

    fn add_stack(&mut self, name: &str, elem: TypeId, n: u32, span: Span) -> R<()> {
        let mut ids = Vec::new();
        for i in 0..n {
            ids.push(self.add_header_instance(&format!("{name}[{i}]"), elem, span)?);
        }
        let header_type = self.header_type(elem, span)?;
        let id = self.json.header_stacks.len() as i64;
        self.json.header_stacks.push(j::HeaderStack {
            name: name.to_string(),
            id,
            header_type,
            size: Some(n),
            header_ids: ids,
        });
        Ok(())
    }

    /// `name[0]` ... `name[n-1]`, each a union with its member headers, and the stack.
    fn add_union_stack(&mut self, name: &str, elem: TypeId, n: u32, span: Span) -> R<()> {
        let mut ids = Vec::new();
        for i in 0..n {
            ids.push(self.add_union(&format!("{name}[{i}]"), elem, span)?);
        }
        let id = self.json.header_union_stacks.len() as i64;
        self.json.header_union_stacks.push(j::HeaderUnionStack {
            name: name.to_string(),
            id,
            union_type: self.p.ty(elem).name.clone(),
            size: Some(n),
            header_union_ids: ids,
        });
        Ok(())
    }

    fn add_union(&mut self, name: &str, ty: TypeId, span: Span) -> R<i64> {
        let decl = self.p.ty(ty);
        let tname = decl.name.clone();
        let TypeDeclKind::HeaderUnion(fields) = &decl.kind else {
            return unsupported(span, "a header union");
        };
        let fields = fields.clone();
        let mut members = Vec::new();
        let mut ids = Vec::new();
        for f in &fields {
            let Type::Header(h) = f.ty else {
                return unsupported(f.span, "a union member that is not a header");
            };
            ids.push(self.add_header_instance(&format!("{name}.{}", f.name), h, span)?);
            members.push((f.name.clone(), self.p.ty(h).name.clone()));
        }
        if !self.json.header_union_types.iter().any(|u| u.name == tname) {
            let id = self.json.header_union_types.len() as i64;
            self.json.header_union_types.push(j::HeaderUnionType {
                name: tname.clone(),
                id,
                headers: members,
            });
        }
        let id = self.json.header_unions.len() as i64;
        self.json.header_unions.push(j::HeaderUnion {
            name: name.to_string(),
            id,
            union_type: tname,
            header_ids: ids,
        });
        Ok(id)
    }

    /// The place of a struct of the package's headers or metadata: headers keep their member
    /// names (under `prefix` when it is not empty), scalars go to `scalars`.
    fn root_struct(&mut self, id: TypeId, prefix: &str, span: Span) -> R<Place> {
        let ty = Type::Struct(id);
        let fields = self.p.fields(&ty).unwrap_or_default().to_vec();
        let mut out = Vec::new();
        for f in &fields {
            let name = if prefix.is_empty() {
                f.name.clone()
            } else {
                format!("{prefix}.{}", f.name)
            };
            // The package's header keeps its name; a local of the same name becomes `h_0`
            // (p4c's UniqueNames): bmv2 refuses two header instances of one name.
            if matches!(
                f.ty,
                Type::Header(_) | Type::Stack(..) | Type::HeaderUnion(_)
            ) {
                self.names.entry(name.clone()).or_insert(1);
            }
            out.push(match &f.ty {
                Type::Header(h) => {
                    self.add_header_instance(&name, *h, f.span)?;
                    Place::Header { name, ty: *h }
                }
                Type::Stack(e, n) => match **e {
                    Type::Header(elem) => {
                        self.add_stack(&name, elem, *n, f.span)?;
                        Place::Stack {
                            name,
                            elem,
                            size: *n,
                        }
                    }
                    Type::HeaderUnion(elem) => {
                        self.add_union_stack(&name, elem, *n, f.span)?;
                        Place::UnionStack {
                            name,
                            elem,
                            size: *n,
                        }
                    }
                    _ => return unsupported(f.span, "a stack of this element type"),
                },
                Type::HeaderUnion(u) => {
                    self.add_union(&name, *u, f.span)?;
                    Place::Union { name, ty: *u }
                }
                Type::Struct(s) => self.root_struct(*s, &name, f.span)?,
                Type::Tuple(_) => {
                    let t = f.ty.clone();
                    self.fresh_place(&name, &t, f.span)?
                }
                other => {
                    let other = other.clone();
                    self.scalar(&name, &other, f.span)?
                }
            });
        }
        let _ = span;
        Ok(Place::Struct { fields: out })
    }

    /// Builds the places of V1Switch's headers, user metadata and standard metadata from the
    /// parser's parameters (`packet_in`, `out H`, `inout M`, `inout standard_metadata_t`).
    pub fn layout_roots(&mut self, blocks: &[DeclId]) -> R<()> {
        let p = self.p;
        let parser = p.decl(blocks[0]);
        let DeclKind::Parser { params, .. } = &parser.kind else {
            return unsupported(parser.span, "V1Switch's first argument must be a parser");
        };
        if params.len() != 4 {
            return unsupported(parser.span, "a v1model parser without four parameters");
        }
        // The scalars header first, as p4c does; its fields are filled in at the end.
        self.json.header_types.push(j::HeaderType {
            name: "scalars_0".into(),
            id: 0,
            fields: Vec::new(),
            length_exp: None,
            max_length: None,
        });
        self.lay.types.insert("scalars_0".into(), 0);
        self.json.headers.push(j::Header {
            name: "scalars".into(),
            id: 0,
            header_type: "scalars_0".into(),
            metadata: true,
            pi_omit: None,
        });
        // standard_metadata: its own header type and instance, aliases for queueing fields.
        let Type::Struct(sm) = params[3].ty else {
            return unsupported(parser.span, "standard_metadata must be a struct");
        };
        let fields = p.fields(&params[3].ty).unwrap_or_default().to_vec();
        let mut decls = Vec::new();
        let mut places = Vec::new();
        for f in &fields {
            let Some((width, signed)) = scalar_width(self, &f.ty) else {
                return unsupported(f.span, "a standard_metadata field of this type");
            };
            decls.push(j::FieldDecl {
                name: f.name.clone(),
                width,
                signed,
            });
            if let Some(alias) = p4_syntax::ast::find_annotation(&f.annotations, "alias")
                .and_then(|a| a.string_arg())
            {
                self.json.field_aliases.push((
                    alias.to_string(),
                    j::FieldRef("standard_metadata".into(), f.name.clone()),
                ));
            }
            places.push(Place::Scalar {
                h: "standard_metadata".into(),
                f: f.name.clone(),
                ty: f.ty.clone(),
            });
        }
        let id = self.json.header_types.len();
        self.json.header_types.push(j::HeaderType {
            name: "standard_metadata".into(),
            id: id as i64,
            fields: decls,
            length_exp: None,
            max_length: None,
        });
        self.lay.types.insert("standard_metadata".into(), id);
        let hid = self.json.headers.len() as i64;
        self.json.headers.push(j::Header {
            name: "standard_metadata".into(),
            id: hid,
            header_type: "standard_metadata".into(),
            metadata: true,
            pi_omit: None,
        });
        self.lay.roots.insert(sm, Place::Struct { fields: places });
        self.std_meta = Some(sm);
        // The user metadata, then the headers (p4c's order of instances).
        let Type::Struct(m) = params[2].ty else {
            return unsupported(parser.span, "the user metadata must be a struct");
        };
        let place = self.root_struct(m, "userMetadata", parser.span)?;
        self.lay.roots.insert(m, place);
        self.lay.meta_ty = Some(m);
        let place = match params[1].ty {
            Type::Struct(h) => (h, self.root_struct(h, "", parser.span)?),
            // p4c-bm2-ss refuses a lone header too, in its backend, after it wrote P4Info:
            // the refusal is kept for the end and the header laid out, so that the blocks
            // are still lowered and their control-plane model is whole.
            Type::Header(h) => {
                self.errors.push(Unsupported {
                    span: parser.span,
                    what: "the headers must be a struct".into(),
                });
                let name = params[1].name.clone();
                self.add_header_instance(&name, h, parser.span)?;
                (h, Place::Header { name, ty: h })
            }
            _ => return unsupported(parser.span, "the headers must be a struct"),
        };
        self.lay.roots.insert(place.0, place.1);
        Ok(())
    }

    /// The binding of a top-level parser/control parameter.
    pub fn root_binding(&mut self, ty: &Type, d: DeclId) -> R<Bind> {
        match ty {
            Type::Extern(id, _)
                if matches!(self.p.ty(*id).name.as_str(), "packet_in" | "packet_out") =>
            {
                Ok(Bind::Packet)
            }
            Type::Struct(id) | Type::Header(id) => match self.lay.roots.get(id) {
                Some(pl) => Ok(Bind::Place(pl.clone())),
                None => unsupported(
                    self.p.decl(d).span,
                    "a block parameter whose type differs from the parser's",
                ),
            },
            _ => unsupported(self.p.decl(d).span, "a block parameter of this type"),
        }
    }

    /// Fills the `scalars` header type with the fields allocated while lowering.
    pub fn finish_layout(&mut self) {
        if let Some(t) = self.json.header_types.first_mut() {
            t.fields = std::mem::take(&mut self.lay.scalars);
        }
    }

    /// A local variable's place (fresh storage named after it).
    pub fn local_place(&mut self, d: DeclId) -> R<Place> {
        let decl = self.p.decl(d);
        let DeclKind::Var { ty, .. } = &decl.kind else {
            return unsupported(decl.span, "not a variable");
        };
        let name = decl.name.clone();
        self.fresh_place(&name, ty, decl.span)
    }
}
