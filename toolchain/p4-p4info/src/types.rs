//! P4 types to `P4DataTypeSpec`, filling `type_info` with every named type reached, as p4c's
//! `TypeSpecConverter` does.

use std::collections::HashMap;

use p4runtime_proto::p4info::{
    p4_bitstring_like_type_spec, p4_data_type_spec::TypeSpec, p4_enum_type_spec,
    p4_header_type_spec, p4_header_union_type_spec, p4_new_type_spec, p4_new_type_translation,
    p4_serializable_enum_type_spec, p4_struct_type_spec, P4BitTypeSpec, P4BitstringLikeTypeSpec,
    P4BoolType, P4DataTypeSpec, P4EnumTypeSpec, P4ErrorType, P4ErrorTypeSpec,
    P4HeaderStackTypeSpec, P4HeaderTypeSpec, P4HeaderUnionStackTypeSpec, P4HeaderUnionTypeSpec,
    P4IntTypeSpec, P4NamedType, P4NewTypeSpec, P4NewTypeTranslation, P4SerializableEnumTypeSpec,
    P4StructTypeSpec, P4TupleTypeSpec, P4TypeInfo, P4VarbitTypeSpec,
};

use crate::model::{rendered, P4Type, SdnType, TypeDecl};
use crate::P4InfoError;

pub struct TypeConverter<'a> {
    decls: HashMap<&'a str, &'a TypeDecl>,
    errors: &'a [String],
}

impl<'a> TypeConverter<'a> {
    pub fn new(decls: &'a [TypeDecl], errors: &'a [String]) -> Self {
        Self {
            decls: decls.iter().map(|decl| (decl.name(), decl)).collect(),
            errors,
        }
    }

    pub fn decl(&self, name: &str) -> Result<&'a TypeDecl, P4InfoError> {
        self.decls
            .get(name)
            .copied()
            .ok_or_else(|| P4InfoError::UnknownType {
                name: name.to_string(),
            })
    }

    /// The width the controller sees: a translated `type`'s SDN width (0 for `string`), an
    /// enum's or error's 0, otherwise the bit width.
    pub fn width(&self, ty: &P4Type) -> Result<u32, P4InfoError> {
        Ok(match ty {
            P4Type::Bit(w) | P4Type::Int(w) | P4Type::Varbit(w) => *w,
            P4Type::Bool => 1,
            P4Type::Error => 0,
            P4Type::Named(name) => match self.decl(name)? {
                TypeDecl::NewType {
                    translation: Some(translation),
                    ..
                } => match translation.sdn {
                    SdnType::Bitwidth(w) => w,
                    SdnType::String => 0,
                },
                // Without a translation the controller sees the bits underneath, even when
                // the underlying type is itself a translated `type`.
                TypeDecl::NewType { .. } => self.width(&self.representation(ty)?)?,
                TypeDecl::SerializableEnum { width, .. } => *width,
                TypeDecl::Enum { .. } => 0,
                TypeDecl::Struct { fields, .. } | TypeDecl::Header { fields, .. } => {
                    let mut total = 0;
                    for (_, field) in fields {
                        total += self.width(field)?;
                    }
                    total
                }
                TypeDecl::HeaderUnion { name, .. } => {
                    return Err(P4InfoError::UnsupportedType {
                        name: name.clone(),
                        what: "a header union has no fixed width",
                    })
                }
            },
            P4Type::Tuple(members) => {
                let mut total = 0;
                for member in members {
                    total += self.width(member)?;
                }
                total
            }
            P4Type::Stack { element, size } => self.width(&P4Type::Named(element.clone()))? * size,
        })
    }

    /// `ty` with every `type` declaration replaced by what it is declared on, as p4c's
    /// `original_type` and widths show it (`type Custom1_t Custom11_t` is `bit<8>`).
    fn representation(&self, ty: &P4Type) -> Result<P4Type, P4InfoError> {
        let mut ty = ty.clone();
        // A chain of `type` declarations is bounded by the number of declarations; a longer
        // walk means the declarations refer to each other.
        for _ in 0..=self.decls.len() {
            match &ty {
                P4Type::Named(name) => match self.decl(name)? {
                    TypeDecl::NewType { underlying, .. } => ty = underlying.clone(),
                    _ => return Ok(ty),
                },
                _ => return Ok(ty),
            }
        }
        Err(P4InfoError::UnsupportedType {
            name: format!("{ty:?}"),
            what: "`type` declarations refer to each other in a cycle",
        })
    }

    /// `type_name` for match fields, params and packet metadata: set for `type` declarations.
    pub fn type_name(&self, ty: &P4Type) -> Result<Option<P4NamedType>, P4InfoError> {
        if let P4Type::Named(name) = ty {
            if let TypeDecl::NewType { .. } = self.decl(name)? {
                return Ok(Some(named(name)));
            }
        }
        Ok(None)
    }

    pub fn convert(
        &self,
        ty: &P4Type,
        info: &mut P4TypeInfo,
    ) -> Result<P4DataTypeSpec, P4InfoError> {
        let spec = match ty {
            P4Type::Bit(_) | P4Type::Int(_) | P4Type::Varbit(_) => {
                TypeSpec::Bitstring(bitstring(ty).unwrap_or_default())
            }
            P4Type::Bool => TypeSpec::Bool(P4BoolType {}),
            P4Type::Error => {
                if info.error.is_none() {
                    info.error = Some(P4ErrorTypeSpec {
                        members: self.errors.to_vec(),
                    });
                }
                TypeSpec::Error(P4ErrorType {})
            }
            P4Type::Tuple(members) => {
                let mut specs = Vec::with_capacity(members.len());
                for member in members {
                    specs.push(self.convert(member, info)?);
                }
                TypeSpec::Tuple(P4TupleTypeSpec { members: specs })
            }
            P4Type::Stack { element, size } => {
                let size = i32::try_from(*size).map_err(|_| P4InfoError::UnsupportedType {
                    name: element.clone(),
                    what: "header stack size does not fit in 32 bits",
                })?;
                let decl = self.decl(element)?;
                self.describe(decl, info)?;
                match decl {
                    TypeDecl::Header { .. } => TypeSpec::HeaderStack(P4HeaderStackTypeSpec {
                        header: Some(named(element)),
                        size,
                    }),
                    TypeDecl::HeaderUnion { .. } => {
                        TypeSpec::HeaderUnionStack(P4HeaderUnionStackTypeSpec {
                            header_union: Some(named(element)),
                            size,
                        })
                    }
                    _ => {
                        return Err(P4InfoError::UnsupportedType {
                            name: element.clone(),
                            what: "stack elements must be headers or header unions",
                        })
                    }
                }
            }
            P4Type::Named(name) => {
                let decl = self.decl(name)?;
                self.describe(decl, info)?;
                let n = named(name);
                match decl {
                    TypeDecl::Struct { .. } => TypeSpec::Struct(n),
                    TypeDecl::Header { .. } => TypeSpec::Header(n),
                    TypeDecl::HeaderUnion { .. } => TypeSpec::HeaderUnion(n),
                    TypeDecl::Enum { .. } => TypeSpec::Enum(n),
                    TypeDecl::SerializableEnum { .. } => TypeSpec::SerializableEnum(n),
                    TypeDecl::NewType { .. } => TypeSpec::NewType(n),
                }
            }
        };
        Ok(P4DataTypeSpec {
            type_spec: Some(spec),
        })
    }

    /// Adds `decl` (and what it refers to) to `type_info` unless already there.
    fn describe(&self, decl: &TypeDecl, info: &mut P4TypeInfo) -> Result<(), P4InfoError> {
        match decl {
            TypeDecl::Struct { name, fields } => {
                if info.structs.contains_key(name) {
                    return Ok(());
                }
                let mut members = Vec::with_capacity(fields.len());
                for (field, ty) in fields {
                    members.push(p4_struct_type_spec::Member {
                        name: field.clone(),
                        type_spec: Some(self.convert(ty, info)?),
                    });
                }
                info.structs.insert(
                    name.clone(),
                    P4StructTypeSpec {
                        members,
                        ..Default::default()
                    },
                );
            }
            TypeDecl::Header { name, fields } => {
                if info.headers.contains_key(name) {
                    return Ok(());
                }
                let mut members = Vec::with_capacity(fields.len());
                for (field, ty) in fields {
                    let spec = bitstring(ty).ok_or_else(|| P4InfoError::UnsupportedType {
                        name: name.clone(),
                        what: "header fields must be bit<W>, int<W> or varbit<W> after flattening",
                    })?;
                    members.push(p4_header_type_spec::Member {
                        name: field.clone(),
                        type_spec: Some(spec),
                    });
                }
                info.headers.insert(
                    name.clone(),
                    P4HeaderTypeSpec {
                        members,
                        ..Default::default()
                    },
                );
            }
            TypeDecl::HeaderUnion { name, members } => {
                if info.header_unions.contains_key(name) {
                    return Ok(());
                }
                let mut specs = Vec::with_capacity(members.len());
                for (field, header) in members {
                    self.describe(self.decl(header)?, info)?;
                    specs.push(p4_header_union_type_spec::Member {
                        name: field.clone(),
                        header: Some(named(header)),
                    });
                }
                info.header_unions.insert(
                    name.clone(),
                    P4HeaderUnionTypeSpec {
                        members: specs,
                        ..Default::default()
                    },
                );
            }
            TypeDecl::Enum { name, members } => {
                info.enums
                    .entry(name.clone())
                    .or_insert_with(|| P4EnumTypeSpec {
                        members: members
                            .iter()
                            .map(|member| p4_enum_type_spec::Member {
                                name: member.clone(),
                                ..Default::default()
                            })
                            .collect(),
                        ..Default::default()
                    });
            }
            TypeDecl::SerializableEnum {
                name,
                width,
                members,
            } => {
                let bitwidth = signed_width(name, *width)?;
                info.serializable_enums
                    .entry(name.clone())
                    .or_insert_with(|| P4SerializableEnumTypeSpec {
                        underlying_type: Some(P4BitTypeSpec { bitwidth }),
                        members: members
                            .iter()
                            .map(|(member, value)| p4_serializable_enum_type_spec::Member {
                                name: member.clone(),
                                value: bytestring(*value, *width),
                                ..Default::default()
                            })
                            .collect(),
                        ..Default::default()
                    });
            }
            TypeDecl::NewType {
                name,
                underlying,
                translation,
                annotations,
            } => {
                if info.new_types.contains_key(name) {
                    return Ok(());
                }
                let representation = match translation {
                    Some(translation) => {
                        p4_new_type_spec::Representation::TranslatedType(P4NewTypeTranslation {
                            uri: translation.uri.clone(),
                            sdn_type: Some(match translation.sdn {
                                SdnType::Bitwidth(w) => {
                                    p4_new_type_translation::SdnType::SdnBitwidth(signed_width(
                                        name, w,
                                    )?)
                                }
                                SdnType::String => p4_new_type_translation::SdnType::SdnString(
                                    p4_new_type_translation::SdnString {},
                                ),
                            }),
                        })
                    }
                    None => p4_new_type_spec::Representation::OriginalType(
                        self.convert(&self.representation(underlying)?, info)?,
                    ),
                };
                info.new_types.insert(
                    name.clone(),
                    P4NewTypeSpec {
                        representation: Some(representation),
                        annotations: rendered(annotations, &["p4runtime_translation"]),
                        ..Default::default()
                    },
                );
            }
        }
        Ok(())
    }
}

fn named(name: &str) -> P4NamedType {
    P4NamedType {
        name: name.to_string(),
    }
}

fn signed_width(name: &str, width: u32) -> Result<i32, P4InfoError> {
    i32::try_from(width).map_err(|_| P4InfoError::UnsupportedType {
        name: name.to_string(),
        what: "width does not fit in 31 bits",
    })
}

fn bitstring(ty: &P4Type) -> Option<P4BitstringLikeTypeSpec> {
    // Widths beyond i32 cannot come out of a P4 program that type-checked; saturate.
    let w = |w: &u32| i32::try_from(*w).unwrap_or(i32::MAX);
    let spec = match ty {
        P4Type::Bit(width) => {
            p4_bitstring_like_type_spec::TypeSpec::Bit(P4BitTypeSpec { bitwidth: w(width) })
        }
        P4Type::Int(width) => {
            p4_bitstring_like_type_spec::TypeSpec::Int(P4IntTypeSpec { bitwidth: w(width) })
        }
        P4Type::Varbit(width) => p4_bitstring_like_type_spec::TypeSpec::Varbit(P4VarbitTypeSpec {
            max_bitwidth: w(width),
        }),
        _ => return None,
    };
    Some(P4BitstringLikeTypeSpec {
        type_spec: Some(spec),
        ..Default::default()
    })
}

/// `value` as a big-endian byte string of the type's width rounded up to bytes (P4Runtime's
/// full-width encoding, what p4c's `stringRepr` gives).
pub fn bytestring(value: u128, width: u32) -> Vec<u8> {
    let len = width.div_ceil(8).max(1) as usize;
    let bytes = value.to_be_bytes();
    if len <= bytes.len() {
        bytes[bytes.len() - len..].to_vec()
    } else {
        let mut out = vec![0; len - bytes.len()];
        out.extend_from_slice(&bytes);
        out
    }
}
