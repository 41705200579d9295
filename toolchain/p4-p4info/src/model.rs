//! The input: a P4 program's control-plane objects, after the front end (names are final,
//! top-level actions are localized into the controls that use them, every table has its default
//! action), backend-neutral and free of source positions.
//!
//! Every list is in the order p4c emits its entities, which is the order p4c's
//! `forAllEvaluatedBlocks` meets them: a breadth-first walk from the package, so the parser and
//! the controls in the package's parameter order first (each control contributing its actions in
//! declaration order, localized copies of top-level actions such as `NoAction` first), then the
//! tables and extern instances of each control in declaration order. Direct counters, direct
//! meters and in-place action profiles (`implementation = action_selector(...)`) are emitted
//! when their table is, so they follow the table order; controller headers follow the program's
//! header declaration order; digests follow their first `digest<T>()` call.

/// One annotation on a declaration. `@name`, `@id`, `@brief` and `@description` are consumed
/// by the generator (name, id, `doc`); every other annotation is kept as p4c prints it with
/// `ToP4`, in source order.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Annotation {
    /// `@name("...")`: never emitted (the entity's name is already the control-plane name).
    Name(String),
    /// `@id(N)`: the P4Runtime id, with or without the 8-bit resource prefix.
    Id(u64),
    /// `@brief("...")`, emitted as `doc.brief`.
    Brief(String),
    /// `@description("...")`, emitted as `doc.description`.
    Description(String),
    /// Any other annotation: its name (`hidden`, `defaultonly`, `noWarn`, ...) and its text as
    /// p4c prints it (`@noWarn("unused")`, `@defaultonly`).
    Other { name: String, text: String },
    /// A P4_16 structured annotation (`@name[expr, ...]`, `@name[key=expr, ...]`, `@name[]`)
    /// with its expressions evaluated to constants; P4Info lists it in `structured_annotations`.
    Structured { name: String, body: StructuredBody },
}

/// The body of a structured annotation.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum StructuredBody {
    /// `@name[]`.
    Empty,
    Expressions(Vec<AnnotationValue>),
    KeyValues(Vec<(String, AnnotationValue)>),
}

/// A compile-time constant in a structured annotation.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum AnnotationValue {
    String(String),
    Int(i64),
    Bool(bool),
}

impl Annotation {
    /// An annotation from its printed text (`@defaultonly`, `@noWarn("unused")`); the name is
    /// the identifier after `@`.
    pub fn rendered(text: impl Into<String>) -> Self {
        let text = text.into();
        let name = text
            .trim_start_matches('@')
            .split(['(', '[', ' '])
            .next()
            .unwrap_or_default()
            .to_string();
        Annotation::Other { name, text }
    }

    pub fn name(&self) -> &str {
        match self {
            Annotation::Name(_) => "name",
            Annotation::Id(_) => "id",
            Annotation::Brief(_) => "brief",
            Annotation::Description(_) => "description",
            Annotation::Other { name, .. } | Annotation::Structured { name, .. } => name,
        }
    }
}

/// Annotations as P4Info lists them: all but `@name`, `@id`, `@brief`, `@description` and
/// those `skip` names.
pub(crate) fn rendered(annotations: &[Annotation], skip: &[&str]) -> Vec<String> {
    annotations
        .iter()
        .filter_map(|annotation| match annotation {
            Annotation::Other { name, text } if !skip.contains(&name.as_str()) => {
                Some(text.clone())
            }
            _ => None,
        })
        .collect()
}

/// A P4 type as the control plane sees it. Typedefs are resolved by the caller; named types
/// refer to [`TypeDecl`]s in [`ControlPlane::types`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum P4Type {
    Bit(u32),
    Int(u32),
    Varbit(u32),
    Bool,
    Error,
    /// A struct, header, header union, enum, serializable enum or `type` declaration.
    Named(String),
    Tuple(Vec<P4Type>),
    /// `T[size]` where `T` is a header or header union.
    Stack {
        element: String,
        size: u32,
    },
}

/// How a `type` with `@p4runtime_translation(uri, sdn)` appears to the controller.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SdnType {
    /// `@p4runtime_translation("uri", N)` or `(..., bit<N>)`.
    Bitwidth(u32),
    /// `@p4runtime_translation("uri", string)`.
    String,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Translation {
    pub uri: String,
    pub sdn: SdnType,
}

/// A type declaration the control plane may need to describe in `type_info`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum TypeDecl {
    Struct {
        name: String,
        fields: Vec<(String, P4Type)>,
    },
    /// Fields of nested structs are given flattened, as p4c's `FlattenHeader` names them
    /// (`s.f8`).
    Header {
        name: String,
        fields: Vec<(String, P4Type)>,
    },
    /// Members are (field name, header type name).
    HeaderUnion {
        name: String,
        members: Vec<(String, String)>,
    },
    Enum {
        name: String,
        members: Vec<String>,
    },
    SerializableEnum {
        name: String,
        width: u32,
        members: Vec<(String, u128)>,
    },
    /// `type T0 T;`: `underlying` is `T0` after typedef resolution.
    NewType {
        name: String,
        underlying: P4Type,
        translation: Option<Translation>,
        /// The declaration's annotations (`@p4runtime_translation` is given as `translation`
        /// and not repeated).
        annotations: Vec<Annotation>,
    },
}

impl TypeDecl {
    pub fn name(&self) -> &str {
        match self {
            TypeDecl::Struct { name, .. }
            | TypeDecl::Header { name, .. }
            | TypeDecl::HeaderUnion { name, .. }
            | TypeDecl::Enum { name, .. }
            | TypeDecl::SerializableEnum { name, .. }
            | TypeDecl::NewType { name, .. } => name,
        }
    }
}

/// A table key's match kind.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum MatchKind {
    Exact,
    Lpm,
    Ternary,
    Range,
    Optional,
    /// v1model's `selector`: feeds the action selector, not shown to the controller.
    Selector,
    /// Any other `match_kind`, reported by name as `other_match_type`.
    Other(String),
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MatchField {
    /// The key's control-plane name: its `@name`, else the key expression as p4c prints it
    /// (`hdr.ipv4.dstAddr`, `meta.data[0].da`).
    pub name: String,
    pub ty: P4Type,
    pub kind: MatchKind,
    pub annotations: Vec<Annotation>,
}

/// An entry of a table's `actions` list.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ActionRef {
    /// The action's fully qualified control-plane name.
    pub action: String,
    /// Annotations on the list entry (`@tableonly`, `@defaultonly`, ...), not on the action.
    pub annotations: Vec<Annotation>,
}

/// A table's default action with its arguments as P4Runtime byte strings.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DefaultAction {
    pub action: String,
    /// One value per action parameter, in parameter order (`bit<32>` 10 is `[0, 0, 0, 10]`).
    pub arguments: Vec<Vec<u8>>,
    /// `const default_action`.
    pub is_const: bool,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Table {
    /// Fully qualified control-plane name (`MyIngress.ipv4_lpm`).
    pub name: String,
    pub annotations: Vec<Annotation>,
    pub match_fields: Vec<MatchField>,
    pub actions: Vec<ActionRef>,
    /// The default action after the front end (which adds `NoAction` when none is written).
    pub default_action: Option<DefaultAction>,
    /// The action profile or selector in `implementation`, by name.
    pub implementation: Option<String>,
    /// The `direct_counter` in `counters`, by name (see [`ControlPlane::direct_counters`]).
    pub direct_counter: Option<String>,
    /// The `direct_meter` in `meters`, by name (see [`ControlPlane::direct_meters`]).
    pub direct_meter: Option<String>,
    /// `size`; absent or 0 means v1model's default, 1024.
    pub size: Option<i64>,
    /// `support_timeout = true`.
    pub supports_timeout: bool,
    pub entries: Entries,
}

/// A table's `entries` property.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Entries {
    #[default]
    None,
    /// `const entries = { ... }`: the control plane cannot change the table.
    Const,
    /// `const entries = { }`: const, but without initial entries.
    ConstEmpty,
    /// `entries = { ... }` (P4_16 1.2.4 initial entries, some of which may be `const`).
    Initial,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Param {
    pub name: String,
    pub ty: P4Type,
    pub annotations: Vec<Annotation>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Action {
    pub name: String,
    pub annotations: Vec<Annotation>,
    /// Control-plane (directionless) parameters.
    pub params: Vec<Param>,
}

/// How an action selector's size is counted (P4Runtime 1.4 `selector_size_semantics`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SelectorSizeSemantics {
    SumOfWeights,
    SumOfMembers { max_member_weight: Option<i32> },
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ActionProfile {
    /// A declared instance's fully qualified name, or for one constructed in a table's
    /// `implementation` property, that property's `@name`.
    pub name: String,
    /// The declaration's annotations (or the property's, when constructed in place). Those
    /// given as fields below (`@max_group_size`, `@selector_size_semantics`,
    /// `@max_member_weight`) are not repeated in P4Info.
    pub annotations: Vec<Annotation>,
    pub with_selector: bool,
    pub size: i64,
    /// `@max_group_size(N)`; p4c ignores it without a selector.
    pub max_group_size: Option<i32>,
    pub selector_size_semantics: Option<SelectorSizeSemantics>,
    /// Constructed in the table's `implementation` property rather than declared; p4c takes
    /// no `@id` for those.
    pub in_place: bool,
}

/// `CounterType` / `MeterType` of v1model.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Unit {
    Packets,
    Bytes,
    PacketsAndBytes,
}

/// An indirect `counter` or `meter` instance.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Indexed {
    pub name: String,
    pub annotations: Vec<Annotation>,
    pub unit: Unit,
    pub size: i64,
    /// The index type when it is a `type` (v1model 2020 `counter<I>`), else `None`.
    pub index_type: Option<P4Type>,
}

/// A `direct_counter` or `direct_meter` instance; its table is the one naming it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Direct {
    pub name: String,
    pub annotations: Vec<Annotation>,
    pub unit: Unit,
    /// Constructed in the table's `counters`/`meters` property rather than declared; p4c takes
    /// no `@id` for those.
    pub in_place: bool,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Register {
    pub name: String,
    pub annotations: Vec<Annotation>,
    /// The element type `T` of `register<T>`.
    pub ty: P4Type,
    pub size: i64,
    /// The index type when it is a `type` (v1model 2020 `register<T, I>`), else `None`.
    pub index_type: Option<P4Type>,
}

/// One `digest<T>(receiver, data)` call; calls with the same `T` make one P4Info digest.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Digest {
    /// The control-plane name of `T` (the digest's name in P4Info).
    pub name: String,
    pub ty: P4Type,
}

/// A header type annotated `@controller_header("packet_in" | "packet_out")`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ControllerHeader {
    /// The header type's control-plane name (what its id is derived from).
    pub type_name: String,
    /// The `@controller_header` argument (the P4Info name and alias).
    pub controller_name: String,
    /// All the header type's annotations, `@controller_header(...)` included.
    pub annotations: Vec<Annotation>,
    /// Fields after flattening nested structs.
    pub fields: Vec<Param>,
}

/// How a `value_set<T>` element is described.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ValueSetElement {
    /// `value_set<bit<W>>`.
    Bits(u32),
    /// `value_set<S>` with `S` a struct of `bit<W>` fields; each field may carry `@match(kind)`.
    Struct(Vec<ValueSetField>),
    /// `value_set<E>` with `E` a serializable enum: width and member names.
    SerializableEnum { width: u32, members: Vec<String> },
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ValueSetField {
    pub name: String,
    pub width: u32,
    /// `@match(kind)`; exact when absent.
    pub kind: Option<MatchKind>,
    /// Annotations other than `@match`.
    pub annotations: Vec<Annotation>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ValueSet {
    pub name: String,
    pub annotations: Vec<Annotation>,
    pub size: i32,
    pub element: ValueSetElement,
}

/// `pkg_info`: from the package instance (`main`) and its `@pkginfo(key=value, ...)`.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Package {
    /// Annotations on `main` other than `@pkginfo`.
    pub annotations: Vec<Annotation>,
    pub name: Option<String>,
    pub version: Option<String>,
    pub organization: Option<String>,
    pub contact: Option<String>,
    pub url: Option<String>,
    /// `@pkginfo(arch=...)`, which p4c lets override the architecture (with a warning).
    pub arch: Option<String>,
    /// `@platform_property(key=N, ...)`: `multicast_group_table_size`,
    /// `multicast_group_table_total_replicas`, `multicast_group_table_max_replicas_per_entry`
    /// (P4Runtime's `PlatformProperties`); other keys are ignored, as p4c does.
    pub platform_properties: Vec<(String, i32)>,
}

/// Everything p4c's P4Info generator looks at, for one program.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct ControlPlane {
    /// The architecture, `v1model`.
    pub arch: String,
    pub package: Package,
    pub tables: Vec<Table>,
    /// Every action of every control, `@hidden` ones included (they take part in ids and
    /// aliases). The same name may appear more than once (one copy per control that uses a
    /// top-level action); P4Info lists it once.
    pub actions: Vec<Action>,
    pub action_profiles: Vec<ActionProfile>,
    pub counters: Vec<Indexed>,
    pub direct_counters: Vec<Direct>,
    pub meters: Vec<Indexed>,
    pub direct_meters: Vec<Direct>,
    pub registers: Vec<Register>,
    pub digests: Vec<Digest>,
    pub controller_headers: Vec<ControllerHeader>,
    pub value_sets: Vec<ValueSet>,
    /// Declarations of the named types used above.
    pub types: Vec<TypeDecl>,
    /// The members of `error`, for `type_info.error` when an `error` value reaches the
    /// control plane.
    pub errors: Vec<String>,
    /// Whether p4c's v1model handler creates `type_info` (empty unless a digest needs a type)
    /// for an extern: a control calls an extern function (`mark_to_drop`, `hash`, ...),
    /// directly or in an action the control plane sees, or declares an instance of an extern
    /// type the program declares itself (none of v1model's).
    pub extern_type_info: bool,
}
