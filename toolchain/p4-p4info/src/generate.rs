//! Assembly of the P4Info message, entity by entity, in p4c's order.

use std::collections::{BTreeSet, HashMap, HashSet};

use p4runtime_proto::p4info::{
    self as pb, action_profile, action_ref, controller_packet_metadata, match_field,
    table::IdleTimeoutBehavior, table_action_call, Documentation, P4Info, P4TypeInfo, Preamble,
};

use crate::ids::{Kind, SymbolCollector, SymbolTable};
use crate::model::*;
use crate::types::TypeConverter;
use crate::P4InfoError;

/// v1model's table size when `size` is absent or 0 (`V1Model::tableAttributes.defaultTableSize`).
const DEFAULT_TABLE_SIZE: i64 = 1024;

/// Builds the P4Info p4c would emit for `program`, or every error found.
pub fn generate(program: &ControlPlane) -> Result<P4Info, Vec<P4InfoError>> {
    let symbols = collect(program).assign()?;
    let mut gen = Generator {
        program,
        symbols,
        types: TypeConverter::new(&program.types, &program.errors),
        info: P4Info::default(),
        type_info: P4TypeInfo::default(),
        uses_type_info: false,
        errors: Vec::new(),
        param_ids: HashMap::new(),
        direct_counters: program
            .direct_counters
            .iter()
            .map(|c| (c.name.as_str(), c))
            .collect(),
        direct_meters: program
            .direct_meters
            .iter()
            .map(|m| (m.name.as_str(), m))
            .collect(),
        profile_tables: HashMap::new(),
    };
    gen.uses_type_info = program.extern_type_info;
    for table in &program.tables {
        if let Some(profile) = &table.implementation {
            gen.profile_tables
                .entry(profile.as_str())
                .or_default()
                .insert(table.name.as_str());
        }
    }
    gen.run();
    if gen.errors.is_empty() {
        let mut info = gen.info;
        if gen.uses_type_info {
            info.type_info = Some(gen.type_info);
        }
        Ok(info)
    } else {
        Err(gen.errors)
    }
}

fn collect(program: &ControlPlane) -> SymbolCollector {
    let mut symbols = SymbolCollector::default();
    let mut add = |kind, name: &str, annotations: &[Annotation]| {
        symbols.add(kind, name, id_annotation(annotations));
    };
    for action in &program.actions {
        add(Kind::Action, &action.name, &action.annotations);
    }
    for table in &program.tables {
        add(Kind::Table, &table.name, &table.annotations);
    }
    for set in &program.value_sets {
        add(Kind::ValueSet, &set.name, &set.annotations);
    }
    for header in &program.controller_headers {
        add(
            Kind::ControllerHeader,
            &header.type_name,
            &header.annotations,
        );
    }
    // Instances constructed inside a table property are collected by name only.
    let declared = |in_place: bool, annotations: &'_ [Annotation]| -> Vec<Annotation> {
        if in_place {
            Vec::new()
        } else {
            annotations.to_vec()
        }
    };
    for profile in &program.action_profiles {
        let annotations = declared(profile.in_place, &profile.annotations);
        add(Kind::ActionProfile, &profile.name, &annotations);
    }
    for counter in &program.counters {
        add(Kind::Counter, &counter.name, &counter.annotations);
    }
    for counter in &program.direct_counters {
        let annotations = declared(counter.in_place, &counter.annotations);
        add(Kind::DirectCounter, &counter.name, &annotations);
    }
    for meter in &program.meters {
        add(Kind::Meter, &meter.name, &meter.annotations);
    }
    for meter in &program.direct_meters {
        let annotations = declared(meter.in_place, &meter.annotations);
        add(Kind::DirectMeter, &meter.name, &annotations);
    }
    for register in &program.registers {
        add(Kind::Register, &register.name, &register.annotations);
    }
    // p4c names digests after their data type and takes no @id for them.
    for digest in &program.digests {
        add(Kind::Digest, &digest.name, &[]);
    }
    symbols
}

fn id_annotation(annotations: &[Annotation]) -> Option<u64> {
    annotations.iter().find_map(|annotation| match annotation {
        Annotation::Id(id) => Some(*id),
        _ => None,
    })
}

fn has(annotations: &[Annotation], name: &str) -> bool {
    annotations
        .iter()
        .any(|annotation| annotation.name() == name)
}

/// Structured annotations, which p4c always lists (whatever their name) in
/// `structured_annotations`, in source order.
fn structured(annotations: &[Annotation]) -> Vec<pb::StructuredAnnotation> {
    use pb::{expression, structured_annotation::Body};
    let value = |v: &AnnotationValue| pb::Expression {
        value: Some(match v {
            AnnotationValue::String(text) => expression::Value::StringValue(text.clone()),
            AnnotationValue::Int(n) => expression::Value::Int64Value(*n),
            AnnotationValue::Bool(b) => expression::Value::BoolValue(*b),
        }),
    };
    annotations
        .iter()
        .filter_map(|annotation| match annotation {
            Annotation::Structured { name, body } => Some(pb::StructuredAnnotation {
                name: name.clone(),
                source_location: None,
                body: match body {
                    StructuredBody::Empty => None,
                    StructuredBody::Expressions(values) => {
                        Some(Body::ExpressionList(pb::ExpressionList {
                            expressions: values.iter().map(value).collect(),
                        }))
                    }
                    StructuredBody::KeyValues(pairs) => {
                        Some(Body::KvPairList(pb::KeyValuePairList {
                            kv_pairs: pairs
                                .iter()
                                .map(|(key, v)| pb::KeyValuePair {
                                    key: key.clone(),
                                    value: Some(value(v)),
                                })
                                .collect(),
                        }))
                    }
                },
            }),
            _ => None,
        })
        .collect()
}

/// `pkg_info.platform_properties`, present only when a known property is given.
fn platform_properties(properties: &[(String, i32)]) -> Option<pb::PlatformProperties> {
    let mut out = None;
    for (key, value) in properties {
        let known = [
            "multicast_group_table_size",
            "multicast_group_table_total_replicas",
            "multicast_group_table_max_replicas_per_entry",
        ];
        if !known.contains(&key.as_str()) {
            continue;
        }
        let p: &mut pb::PlatformProperties = out.get_or_insert_with(Default::default);
        let field = match key.as_str() {
            "multicast_group_table_size" => &mut p.multicast_group_table_size,
            "multicast_group_table_total_replicas" => &mut p.multicast_group_table_total_replicas,
            _ => &mut p.multicast_group_table_max_replicas_per_entry,
        };
        *field = *value;
    }
    out
}

/// `doc` from `@brief` / `@description`, present only when one of them is.
fn documentation(annotations: &[Annotation]) -> Option<Documentation> {
    let mut doc = None;
    for annotation in annotations {
        match annotation {
            Annotation::Brief(text) => {
                doc.get_or_insert_with(Documentation::default).brief = text.clone()
            }
            Annotation::Description(text) => {
                doc.get_or_insert_with(Documentation::default).description = text.clone()
            }
            _ => {}
        }
    }
    doc
}

/// Ids of a message's fields (match fields, params, packet metadata) as p4c's
/// `FieldIdAllocator` gives them: `@id`s first, then position numbers 1, 2, ... skipping ids
/// already taken.
fn field_ids(
    owner: &str,
    fields: &[(&str, &[Annotation])],
    errors: &mut Vec<P4InfoError>,
) -> Vec<u32> {
    let mut taken = BTreeSet::new();
    let mut ids: Vec<Option<u32>> = vec![None; fields.len()];
    for (slot, (field, annotations)) in ids.iter_mut().zip(fields) {
        let Some(id) = id_annotation(annotations) else {
            continue;
        };
        let Ok(id32) = u32::try_from(id) else {
            errors.push(P4InfoError::IdNotUnsigned32 {
                name: format!("{owner}.{field}"),
                id,
            });
            continue;
        };
        if id32 == 0 {
            errors.push(P4InfoError::ZeroFieldId {
                owner: owner.to_string(),
                field: field.to_string(),
            });
        } else if !taken.insert(id32) {
            errors.push(P4InfoError::DuplicateFieldId {
                owner: owner.to_string(),
                field: field.to_string(),
                id,
            });
        }
        *slot = Some(id32);
    }
    let mut index: u32 = 1;
    ids.into_iter()
        .map(|id| match id {
            Some(id) => {
                index += 1;
                id
            }
            None => {
                while taken.contains(&index) {
                    index += 1;
                }
                taken.insert(index);
                index
            }
        })
        .collect()
}

fn i32_size(name: &str, size: i64) -> Result<i32, P4InfoError> {
    i32::try_from(size).map_err(|_| P4InfoError::SizeTooLarge {
        name: name.to_string(),
        size,
    })
}

fn width_i32(width: u32) -> i32 {
    // Widths come from a type-checked program; P4Runtime carries them as int32.
    i32::try_from(width).unwrap_or(i32::MAX)
}

struct Generator<'a> {
    program: &'a ControlPlane,
    symbols: SymbolTable,
    types: TypeConverter<'a>,
    info: P4Info,
    type_info: P4TypeInfo,
    /// p4c creates `type_info` (possibly empty) as soon as anything may need a type.
    uses_type_info: bool,
    errors: Vec<P4InfoError>,
    /// Action name -> its parameters' ids, for default-action arguments.
    param_ids: HashMap<&'a str, Vec<u32>>,
    direct_counters: HashMap<&'a str, &'a Direct>,
    direct_meters: HashMap<&'a str, &'a Direct>,
    /// Action profile name -> the tables naming it, sorted by name as p4c's std::set keeps them.
    profile_tables: HashMap<&'a str, BTreeSet<&'a str>>,
}

impl<'a> Generator<'a> {
    fn run(&mut self) {
        let program = self.program;
        // Param ids first: tables refer to them in their default actions.
        for action in &program.actions {
            let fields: Vec<(&str, &[Annotation])> = action
                .params
                .iter()
                .map(|param| (param.name.as_str(), param.annotations.as_slice()))
                .collect();
            let ids = field_ids(&action.name, &fields, &mut self.errors);
            self.param_ids.entry(&action.name).or_insert(ids);
        }
        for table in &program.tables {
            self.table(table);
        }
        let mut seen_actions = HashSet::new();
        for action in &program.actions {
            if seen_actions.insert(action.name.as_str()) {
                self.action(action);
            }
        }
        for profile in &program.action_profiles {
            self.action_profile(profile);
        }
        for counter in &program.counters {
            self.counter(counter);
        }
        for meter in &program.meters {
            self.meter(meter);
        }
        for register in &program.registers {
            self.register(register);
        }
        let mut seen_digests = HashSet::new();
        for digest in &program.digests {
            if seen_digests.insert(digest.name.as_str()) {
                self.digest(digest);
            }
        }
        for header in &program.controller_headers {
            self.controller_header(header);
        }
        for set in &program.value_sets {
            self.value_set(set);
        }
        self.package();
        self.check_duplicate_names();
    }

    fn id(&mut self, kind: Kind, owner: &str, name: &str) -> u32 {
        match self.symbols.id(kind, name) {
            Some(id) => id,
            None => {
                self.errors.push(P4InfoError::UnknownReference {
                    owner: owner.to_string(),
                    kind: kind.describe(),
                    name: name.to_string(),
                });
                0
            }
        }
    }

    fn preamble(&self, id: u32, name: &str, annotations: &[Annotation], skip: &[&str]) -> Preamble {
        Preamble {
            id,
            name: name.to_string(),
            alias: self.symbols.alias(name),
            annotations: rendered(annotations, skip),
            structured_annotations: structured(annotations),
            doc: documentation(annotations),
            ..Default::default()
        }
    }

    fn record<T>(&mut self, result: Result<T, P4InfoError>) -> Option<T> {
        result.map_err(|err| self.errors.push(err)).ok()
    }

    fn table(&mut self, table: &'a Table) {
        if has(&table.annotations, "hidden") {
            return;
        }
        self.uses_type_info = true;
        let id = self.id(Kind::Table, &table.name, &table.name);
        let mut out = pb::Table {
            preamble: Some(self.preamble(id, &table.name, &table.annotations, &[])),
            size: match table.size {
                None | Some(0) => DEFAULT_TABLE_SIZE,
                Some(size) => size,
            },
            is_const_table: matches!(table.entries, Entries::Const | Entries::ConstEmpty),
            has_initial_entries: matches!(table.entries, Entries::Const | Entries::Initial),
            ..Default::default()
        };

        let keys: Vec<(&str, &[Annotation])> = table
            .match_fields
            .iter()
            .map(|field| (field.name.as_str(), field.annotations.as_slice()))
            .collect();
        let key_ids = field_ids(&table.name, &keys, &mut self.errors);
        for (field, id) in table.match_fields.iter().zip(key_ids) {
            // `selector` keys feed the action selector; p4c leaves them out (they still
            // take a position in the id allocation above).
            if field.kind == MatchKind::Selector {
                continue;
            }
            let converted = self.types.convert(&field.ty, &mut self.type_info);
            self.record(converted);
            let (Some(width), Some(type_name)) = (
                self.record(self.types.width(&field.ty)),
                self.record(self.types.type_name(&field.ty)),
            ) else {
                continue;
            };
            out.match_fields.push(pb::MatchField {
                id,
                name: field.name.clone(),
                annotations: rendered(&field.annotations, &[]),
                structured_annotations: structured(&field.annotations),
                bitwidth: width_i32(width),
                doc: documentation(&field.annotations),
                type_name,
                r#match: Some(match_type(&field.kind)),
                ..Default::default()
            });
        }

        for reference in &table.actions {
            let id = self.id(Kind::Action, &table.name, &reference.action);
            let table_only = has(&reference.annotations, "tableonly");
            let default_only = has(&reference.annotations, "defaultonly");
            if table_only && default_only {
                self.errors.push(P4InfoError::ConflictingScope {
                    table: table.name.clone(),
                    action: reference.action.clone(),
                });
            }
            let scope = if table_only {
                action_ref::Scope::TableOnly
            } else if default_only {
                action_ref::Scope::DefaultOnly
            } else {
                action_ref::Scope::TableAndDefault
            };
            out.action_refs.push(pb::ActionRef {
                id,
                scope: scope as i32,
                annotations: rendered(&reference.annotations, &[]),
                structured_annotations: structured(&reference.annotations),
                ..Default::default()
            });
        }

        if let Some(default) = &table.default_action {
            let action_id = self.id(Kind::Action, &table.name, &default.action);
            if default.is_const {
                out.const_default_action_id = action_id;
            }
            let param_ids = self
                .param_ids
                .get(default.action.as_str())
                .cloned()
                .unwrap_or_default();
            if param_ids.len() != default.arguments.len() {
                self.errors.push(P4InfoError::DefaultActionArity {
                    owner: table.name.clone(),
                    action: default.action.clone(),
                    expected: param_ids.len(),
                    given: default.arguments.len(),
                });
            }
            out.initial_default_action = Some(pb::TableActionCall {
                action_id,
                arguments: param_ids
                    .iter()
                    .zip(&default.arguments)
                    .map(|(&param_id, value)| table_action_call::Argument {
                        param_id,
                        value: value.clone(),
                    })
                    .collect(),
            });
        }

        if let Some(profile) = &table.implementation {
            out.implementation_id = self.id(Kind::ActionProfile, &table.name, profile);
        }
        if let Some(counter) = &table.direct_counter {
            let id = self.id(Kind::DirectCounter, &table.name, counter);
            out.direct_resource_ids.push(id);
            self.direct_counter(counter, id, out.preamble.as_ref().map_or(0, |p| p.id));
        }
        if let Some(meter) = &table.direct_meter {
            let id = self.id(Kind::DirectMeter, &table.name, meter);
            out.direct_resource_ids.push(id);
            self.direct_meter(meter, id, out.preamble.as_ref().map_or(0, |p| p.id));
        }
        if table.supports_timeout {
            out.idle_timeout_behavior = IdleTimeoutBehavior::NotifyControl as i32;
        }
        self.info.tables.push(out);
    }

    fn direct_counter(&mut self, name: &str, id: u32, table_id: u32) {
        let Some(counter) = self.direct_counters.get(name).copied() else {
            return; // already reported: the id lookup failed
        };
        self.info.direct_counters.push(pb::DirectCounter {
            preamble: Some(self.preamble(id, name, &counter.annotations, &[])),
            spec: Some(pb::CounterSpec {
                unit: counter_unit(counter.unit) as i32,
            }),
            direct_table_id: table_id,
        });
    }

    fn direct_meter(&mut self, name: &str, id: u32, table_id: u32) {
        let Some(meter) = self.direct_meters.get(name).copied() else {
            return; // already reported: the id lookup failed
        };
        self.info.direct_meters.push(pb::DirectMeter {
            preamble: Some(self.preamble(id, name, &meter.annotations, &[])),
            spec: Some(pb::MeterSpec {
                unit: meter_unit(meter.unit) as i32,
                ..Default::default()
            }),
            direct_table_id: table_id,
        });
    }

    fn action(&mut self, action: &'a Action) {
        if has(&action.annotations, "hidden") {
            return;
        }
        let id = self.id(Kind::Action, &action.name, &action.name);
        let ids = self
            .param_ids
            .get(action.name.as_str())
            .cloned()
            .unwrap_or_default();
        let mut params = Vec::with_capacity(action.params.len());
        for (param, id) in action.params.iter().zip(ids) {
            let decl = match &param.ty {
                P4Type::Named(name) => self.record(self.types.decl(name)),
                _ => None,
            };
            let allowed = match &param.ty {
                P4Type::Bit(_) | P4Type::Int(_) | P4Type::Bool => true,
                P4Type::Named(_) => matches!(
                    decl,
                    Some(
                        TypeDecl::NewType { .. }
                            | TypeDecl::SerializableEnum { .. }
                            | TypeDecl::Enum { .. }
                    )
                ),
                _ => false,
            };
            if !allowed {
                if decl.is_some() || !matches!(param.ty, P4Type::Named(_)) {
                    self.errors.push(P4InfoError::BadParamType {
                        action: action.name.clone(),
                        param: param.name.clone(),
                    });
                }
                continue;
            }
            self.uses_type_info = true;
            let converted = self.types.convert(&param.ty, &mut self.type_info);
            self.record(converted);
            let (bitwidth, type_name) = match decl {
                // A plain enum has no width; its name is the type name.
                Some(TypeDecl::Enum { name, .. }) => {
                    (0, Some(pb::P4NamedType { name: name.clone() }))
                }
                _ => {
                    let (Some(width), Some(type_name)) = (
                        self.record(self.types.width(&param.ty)),
                        self.record(self.types.type_name(&param.ty)),
                    ) else {
                        continue;
                    };
                    (width_i32(width), type_name)
                }
            };
            params.push(pb::action::Param {
                id,
                name: param.name.clone(),
                annotations: rendered(&param.annotations, &[]),
                structured_annotations: structured(&param.annotations),
                bitwidth,
                doc: documentation(&param.annotations),
                type_name,
                ..Default::default()
            });
        }
        self.info.actions.push(pb::Action {
            preamble: Some(self.preamble(id, &action.name, &action.annotations, &[])),
            params,
        });
    }

    fn action_profile(&mut self, profile: &ActionProfile) {
        self.uses_type_info = true;
        let id = self.id(Kind::ActionProfile, &profile.name, &profile.name);
        let tables: Vec<&str> = self
            .profile_tables
            .get(profile.name.as_str())
            .map(|tables| tables.iter().copied().collect())
            .unwrap_or_default();
        let table_ids = tables
            .into_iter()
            .map(|table| self.id(Kind::Table, &profile.name, table))
            .collect();
        let skip = [
            "max_group_size",
            "selector_size_semantics",
            "max_member_weight",
        ];
        // As p4c's outputs show: a selector's size is counted as a sum of weights when
        // `@max_group_size` is given without `@selector_size_semantics`, and left unset when
        // neither is given.
        let semantics = match (&profile.selector_size_semantics, profile.max_group_size) {
            (None, Some(_)) => Some(&SelectorSizeSemantics::SumOfWeights),
            (semantics, _) => semantics.as_ref(),
        };
        let selector_size_semantics = if profile.with_selector {
            semantics.map(|semantics| match semantics {
                SelectorSizeSemantics::SumOfWeights => {
                    action_profile::SelectorSizeSemantics::SumOfWeights(
                        action_profile::SumOfWeights {},
                    )
                }
                SelectorSizeSemantics::SumOfMembers { max_member_weight } => {
                    action_profile::SelectorSizeSemantics::SumOfMembers(
                        action_profile::SumOfMembers {
                            max_member_weight: max_member_weight.unwrap_or_default(),
                        },
                    )
                }
            })
        } else {
            None
        };
        self.info.action_profiles.push(pb::ActionProfile {
            preamble: Some(self.preamble(id, &profile.name, &profile.annotations, &skip)),
            table_ids,
            with_selector: profile.with_selector,
            size: profile.size,
            max_group_size: if profile.with_selector {
                profile.max_group_size.unwrap_or_default()
            } else {
                0
            },
            selector_size_semantics,
            ..Default::default()
        });
    }

    fn index_type_name(&mut self, index_type: &Option<P4Type>) -> Option<pb::P4NamedType> {
        let ty = index_type.as_ref()?;
        let converted = self.types.convert(ty, &mut self.type_info);
        self.record(converted);
        self.record(self.types.type_name(ty)).flatten()
    }

    fn counter(&mut self, counter: &Indexed) {
        self.uses_type_info = true;
        let id = self.id(Kind::Counter, &counter.name, &counter.name);
        let index_type_name = self.index_type_name(&counter.index_type);
        self.info.counters.push(pb::Counter {
            preamble: Some(self.preamble(id, &counter.name, &counter.annotations, &[])),
            spec: Some(pb::CounterSpec {
                unit: counter_unit(counter.unit) as i32,
            }),
            size: counter.size,
            index_type_name,
        });
    }

    fn meter(&mut self, meter: &Indexed) {
        self.uses_type_info = true;
        let id = self.id(Kind::Meter, &meter.name, &meter.name);
        let index_type_name = self.index_type_name(&meter.index_type);
        self.info.meters.push(pb::Meter {
            preamble: Some(self.preamble(id, &meter.name, &meter.annotations, &[])),
            spec: Some(pb::MeterSpec {
                unit: meter_unit(meter.unit) as i32,
                ..Default::default()
            }),
            size: meter.size,
            index_type_name,
        });
    }

    fn register(&mut self, register: &Register) {
        self.uses_type_info = true;
        let id = self.id(Kind::Register, &register.name, &register.name);
        let type_spec = self.types.convert(&register.ty, &mut self.type_info);
        let Some(type_spec) = self.record(type_spec) else {
            return;
        };
        let Some(size) = self.record(i32_size(&register.name, register.size)) else {
            return;
        };
        let index_type_name = self.index_type_name(&register.index_type);
        self.info.registers.push(pb::Register {
            preamble: Some(self.preamble(id, &register.name, &register.annotations, &[])),
            type_spec: Some(type_spec),
            size,
            index_type_name,
        });
    }

    fn digest(&mut self, digest: &Digest) {
        self.uses_type_info = true;
        let id = self.id(Kind::Digest, &digest.name, &digest.name);
        let type_spec = self.types.convert(&digest.ty, &mut self.type_info);
        let Some(type_spec) = self.record(type_spec) else {
            return;
        };
        self.info.digests.push(pb::Digest {
            preamble: Some(self.preamble(id, &digest.name, &[], &[])),
            type_spec: Some(type_spec),
        });
    }

    fn controller_header(&mut self, header: &ControllerHeader) {
        if has(&header.annotations, "hidden") {
            return;
        }
        let id = self.id(Kind::ControllerHeader, &header.type_name, &header.type_name);
        let fields: Vec<(&str, &[Annotation])> = header
            .fields
            .iter()
            .map(|field| (field.name.as_str(), field.annotations.as_slice()))
            .collect();
        let ids = field_ids(&header.type_name, &fields, &mut self.errors);
        let mut metadata = Vec::with_capacity(header.fields.len());
        for (field, id) in header.fields.iter().zip(ids) {
            if has(&field.annotations, "hidden") {
                continue;
            }
            self.uses_type_info = true;
            let converted = self.types.convert(&field.ty, &mut self.type_info);
            self.record(converted);
            let (Some(width), Some(type_name)) = (
                self.record(self.types.width(&field.ty)),
                self.record(self.types.type_name(&field.ty)),
            ) else {
                continue;
            };
            metadata.push(controller_packet_metadata::Metadata {
                id,
                name: field.name.clone(),
                annotations: rendered(&field.annotations, &[]),
                structured_annotations: structured(&field.annotations),
                bitwidth: width_i32(width),
                type_name,
                ..Default::default()
            });
        }
        // The P4Info name and alias are the @controller_header argument, not the type name.
        let mut preamble = self.preamble(id, &header.controller_name, &header.annotations, &[]);
        preamble.alias = header.controller_name.clone();
        self.info
            .controller_packet_metadata
            .push(pb::ControllerPacketMetadata {
                preamble: Some(preamble),
                metadata,
            });
    }

    fn value_set(&mut self, set: &ValueSet) {
        let id = self.id(Kind::ValueSet, &set.name, &set.name);
        let exact = Some(match_type(&MatchKind::Exact));
        let matches = match &set.element {
            ValueSetElement::Bits(width) => vec![pb::MatchField {
                id: 1,
                bitwidth: width_i32(*width),
                r#match: exact,
                ..Default::default()
            }],
            ValueSetElement::Struct(fields) => {
                let named: Vec<(&str, &[Annotation])> = fields
                    .iter()
                    .map(|field| (field.name.as_str(), field.annotations.as_slice()))
                    .collect();
                let ids = field_ids(&set.name, &named, &mut self.errors);
                fields
                    .iter()
                    .zip(ids)
                    .map(|(field, id)| pb::MatchField {
                        id,
                        name: field.name.clone(),
                        annotations: rendered(&field.annotations, &["match"]),
                        structured_annotations: structured(&field.annotations),
                        bitwidth: width_i32(field.width),
                        doc: documentation(&field.annotations),
                        r#match: Some(match_type(field.kind.as_ref().unwrap_or(&MatchKind::Exact))),
                        ..Default::default()
                    })
                    .collect()
            }
            ValueSetElement::SerializableEnum { width, members } => members
                .iter()
                .zip(1..)
                .map(|(member, id)| pb::MatchField {
                    id,
                    name: member.clone(),
                    bitwidth: width_i32(*width),
                    r#match: exact.clone(),
                    ..Default::default()
                })
                .collect(),
        };
        self.info.value_sets.push(pb::ValueSet {
            preamble: Some(self.preamble(id, &set.name, &set.annotations, &[])),
            r#match: matches,
            size: set.size,
        });
    }

    fn package(&mut self) {
        let package = &self.program.package;
        self.info.pkg_info = Some(pb::PkgInfo {
            arch: package
                .arch
                .clone()
                .unwrap_or_else(|| self.program.arch.clone()),
            name: package.name.clone().unwrap_or_default(),
            version: package.version.clone().unwrap_or_default(),
            organization: package.organization.clone().unwrap_or_default(),
            contact: package.contact.clone().unwrap_or_default(),
            url: package.url.clone().unwrap_or_default(),
            annotations: rendered(&package.annotations, &["pkginfo", "platform_property"]),
            structured_annotations: structured(&package.annotations),
            doc: documentation(&package.annotations),
            platform_properties: platform_properties(&package.platform_properties),
            ..Default::default()
        });
    }

    /// p4c's `checkForDuplicates`: two entities of one kind may not share a name.
    fn check_duplicate_names(&mut self) {
        fn names<'p>(preambles: impl Iterator<Item = Option<&'p Preamble>>) -> Vec<&'p str> {
            preambles.flatten().map(|p| p.name.as_str()).collect()
        }
        let info = &self.info;
        let lists: [(&'static str, Vec<&str>); 11] = [
            (
                "table",
                names(info.tables.iter().map(|t| t.preamble.as_ref())),
            ),
            (
                "action",
                names(info.actions.iter().map(|t| t.preamble.as_ref())),
            ),
            (
                "action profile",
                names(info.action_profiles.iter().map(|t| t.preamble.as_ref())),
            ),
            (
                "counter",
                names(info.counters.iter().map(|t| t.preamble.as_ref())),
            ),
            (
                "direct counter",
                names(info.direct_counters.iter().map(|t| t.preamble.as_ref())),
            ),
            (
                "meter",
                names(info.meters.iter().map(|t| t.preamble.as_ref())),
            ),
            (
                "direct meter",
                names(info.direct_meters.iter().map(|t| t.preamble.as_ref())),
            ),
            (
                "controller packet metadata",
                names(
                    info.controller_packet_metadata
                        .iter()
                        .map(|t| t.preamble.as_ref()),
                ),
            ),
            (
                "value set",
                names(info.value_sets.iter().map(|t| t.preamble.as_ref())),
            ),
            (
                "register",
                names(info.registers.iter().map(|t| t.preamble.as_ref())),
            ),
            (
                "digest",
                names(info.digests.iter().map(|t| t.preamble.as_ref())),
            ),
        ];
        for (kind, list) in lists {
            let mut seen = HashSet::new();
            for name in list {
                if !seen.insert(name) {
                    self.errors.push(P4InfoError::DuplicateName {
                        kind,
                        name: name.to_string(),
                    });
                }
            }
        }
    }
}

fn match_type(kind: &MatchKind) -> match_field::Match {
    use match_field::MatchType;
    let standard = match kind {
        MatchKind::Exact => MatchType::Exact,
        MatchKind::Lpm => MatchType::Lpm,
        MatchKind::Ternary => MatchType::Ternary,
        MatchKind::Range => MatchType::Range,
        MatchKind::Optional => MatchType::Optional,
        MatchKind::Selector => MatchType::Unspecified,
        MatchKind::Other(name) => return match_field::Match::OtherMatchType(name.clone()),
    };
    match_field::Match::MatchType(standard as i32)
}

fn counter_unit(unit: Unit) -> pb::counter_spec::Unit {
    match unit {
        Unit::Packets => pb::counter_spec::Unit::Packets,
        Unit::Bytes => pb::counter_spec::Unit::Bytes,
        Unit::PacketsAndBytes => pb::counter_spec::Unit::Both,
    }
}

/// v1model meters count packets or bytes; p4c maps anything else to UNSPECIFIED.
fn meter_unit(unit: Unit) -> pb::meter_spec::Unit {
    match unit {
        Unit::Packets => pb::meter_spec::Unit::Packets,
        Unit::Bytes => pb::meter_spec::Unit::Bytes,
        Unit::PacketsAndBytes => pb::meter_spec::Unit::Unspecified,
    }
}
