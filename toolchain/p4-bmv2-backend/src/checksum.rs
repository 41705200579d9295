//! The verify/compute checksum controls and the deparser.
//!
//! `verify_checksum(c, data, f, algo)` and `update_checksum(...)` (and `_with_payload`) become
//! a calculation over `data` and a `checksums` entry on `f` guarded by `c`; the deparser's
//! `emit` calls become its header order (a stack emits each element, a struct each member).

use crate::layout::Place;
use crate::prims::Body;
use crate::{unsupported, Ctx, R};
use p4_bmv2_json as j;
use p4_sema::ir::{CallTarget, DeclId, DeclKind, ExprKind, Stmt, StmtKind, TypeDeclKind};

impl Ctx<'_> {
    pub fn lower_checksums(&mut self, d: DeclId, verify: bool) -> R<()> {
        let DeclKind::Control { apply, .. } = &self.p.decl(d).kind else {
            return unsupported(
                self.p.decl(d).span,
                "a checksum block that is not a control",
            );
        };
        for s in &apply.stmts {
            self.checksum_stmt(s, verify)?;
        }
        Ok(())
    }

    fn checksum_stmt(&mut self, s: &Stmt, verify: bool) -> R<()> {
        match &s.kind {
            StmtKind::Empty => Ok(()),
            StmtKind::Block(b) => {
                for s in &b.stmts {
                    self.checksum_stmt(s, verify)?;
                }
                Ok(())
            }
            StmtKind::Call(e) => {
                let ExprKind::Call(c) = &e.kind else {
                    return unsupported(s.span, "this statement in a checksum control");
                };
                let CallTarget::ExternFunction(f) = &c.target else {
                    return unsupported(s.span, "this call in a checksum control");
                };
                let name = self.p.decl(*f).name.clone();
                let payload = name.ends_with("_with_payload");
                let is_verify = name.starts_with("verify_checksum");
                if !(is_verify || name.starts_with("update_checksum")) || is_verify != verify {
                    return unsupported(s.span, format!("`{name}` in this control"));
                }
                let arg = |i: usize| match c.args.get(i) {
                    Some(Some(a)) => Ok(a),
                    _ => unsupported(s.span, "an omitted argument"),
                };
                let algo = self.enum_member(arg(3)?)?;
                let calc = self.calculation(None, &algo, arg(1)?, payload)?;
                let mut scratch = Body::new(false);
                let cond = self.rv(&mut scratch, arg(0)?)?;
                let target = match self.place(&mut scratch, arg(2)?)? {
                    Place::Scalar { h, f, .. } => j::FieldRef(h, f),
                    _ => return unsupported(arg(2)?.span, "a checksum field that is not a field"),
                };
                if !scratch.prims.is_empty() {
                    return unsupported(s.span, "side effects in checksum arguments");
                }
                let name = self.fresh("cksum");
                let id = self.json.checksums.len() as i64;
                self.json.checksums.push(j::Checksum {
                    name,
                    id,
                    target,
                    kind: "generic".into(),
                    calculation: calc,
                    update: !verify,
                    verify,
                    if_cond: Some(cond),
                });
                Ok(())
            }
            _ => unsupported(
                s.span,
                "statements other than verify_checksum/update_checksum in a checksum control",
            ),
        }
    }

    pub fn lower_deparser(&mut self, d: DeclId) -> R<()> {
        let DeclKind::Control { apply, .. } = &self.p.decl(d).kind else {
            return unsupported(self.p.decl(d).span, "a deparser that is not a control");
        };
        let mut order = Vec::new();
        for s in &apply.stmts {
            let StmtKind::Call(e) = &s.kind else {
                if matches!(s.kind, StmtKind::Empty) {
                    continue;
                }
                return unsupported(s.span, "statements other than emit in the deparser");
            };
            let ExprKind::Call(c) = &e.kind else {
                return unsupported(s.span, "this statement in the deparser");
            };
            let CallTarget::Method {
                extern_ty, index, ..
            } = &c.target
            else {
                return unsupported(s.span, "calls other than emit in the deparser");
            };
            let is_emit = matches!(&self.p.ty(*extern_ty).kind,
                TypeDeclKind::Extern { methods, .. } if methods.get(*index).is_some_and(|m| m.name == "emit"));
            if !is_emit {
                return unsupported(s.span, "calls other than emit in the deparser");
            }
            let Some(Some(a)) = c.args.first() else {
                return unsupported(s.span, "emit without an argument");
            };
            let mut scratch = Body::new(false);
            let pl = self.place(&mut scratch, a)?;
            self.emit_order(&pl, &mut order, a.span)?;
        }
        self.json.deparsers.push(j::Deparser {
            name: "deparser".into(),
            id: 0,
            order,
            primitives: vec![],
        });
        Ok(())
    }

    fn emit_order(&self, pl: &Place, order: &mut Vec<String>, span: p4_syntax::Span) -> R<()> {
        match pl {
            Place::Header { name, .. } => order.push(name.clone()),
            Place::Stack { name, size, .. } => {
                for i in 0..*size {
                    order.push(format!("{name}[{i}]"));
                }
            }
            Place::Union { name, ty } => {
                for f in self
                    .p
                    .fields(&p4_sema::ir::Type::HeaderUnion(*ty))
                    .unwrap_or_default()
                {
                    order.push(format!("{name}.{}", f.name));
                }
            }
            Place::UnionStack { name, elem, size } => {
                for i in 0..*size {
                    let union = Place::Union {
                        name: format!("{name}[{i}]"),
                        ty: *elem,
                    };
                    self.emit_order(&union, order, span)?;
                }
            }
            Place::Struct { fields, .. } => {
                for f in fields {
                    if !matches!(f, Place::Scalar { .. }) {
                        self.emit_order(f, order, span)?;
                    }
                }
            }
            _ => return unsupported(span, "emitting this value"),
        }
        Ok(())
    }
}
