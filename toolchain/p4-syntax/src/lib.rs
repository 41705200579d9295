//! P4_16 front end: source map with cpp line markers, lexer, parser, AST and diagnostics.

pub mod ast;
pub mod diag;
pub mod lexer;
pub mod parser;
pub mod source;

pub use diag::{Diagnostic, Diagnostics, Severity};
pub use parser::parse;
pub use source::{Location, SourceMap, Span};
