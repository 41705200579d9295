//! Diagnostics in the form compilers' users and tools grep for:
//! `FILE(LINE:COL): error: MESSAGE`, then the source line and a caret under the location.

use crate::source::{SourceMap, Span};
use std::fmt::Write;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Severity {
    Error,
    Warning,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Diagnostic {
    pub severity: Severity,
    pub span: Span,
    pub message: String,
}

/// Collects diagnostics of every pass; one location reports at most one error so that a single
/// mistake does not cascade into a screenful.
#[derive(Clone, Debug, Default)]
pub struct Diagnostics {
    items: Vec<Diagnostic>,
}

impl Diagnostics {
    pub fn error(&mut self, span: Span, message: impl Into<String>) {
        if self
            .items
            .iter()
            .any(|d| d.severity == Severity::Error && d.span.lo == span.lo)
        {
            return;
        }
        self.items.push(Diagnostic {
            severity: Severity::Error,
            span,
            message: message.into(),
        });
    }

    /// An error for a construct we parse but cannot compile yet.
    pub fn unsupported(&mut self, span: Span, what: &str) {
        self.error(span, format!("unsupported: {what}"));
    }

    pub fn warning(&mut self, span: Span, message: impl Into<String>) {
        self.items.push(Diagnostic {
            severity: Severity::Warning,
            span,
            message: message.into(),
        });
    }

    pub fn has_errors(&self) -> bool {
        self.items.iter().any(|d| d.severity == Severity::Error)
    }

    pub fn error_count(&self) -> usize {
        self.items
            .iter()
            .filter(|d| d.severity == Severity::Error)
            .count()
    }

    pub fn items(&self) -> &[Diagnostic] {
        &self.items
    }

    /// All diagnostics in source order.
    pub fn render(&self, map: &SourceMap) -> String {
        let mut sorted: Vec<&Diagnostic> = self.items.iter().collect();
        sorted.sort_by_key(|d| d.span.lo);
        let mut out = String::new();
        for d in sorted {
            out.push_str(&render_one(d, map));
        }
        out
    }
}

fn render_one(d: &Diagnostic, map: &SourceMap) -> String {
    let loc = map.locate(d.span.lo);
    let kind = match d.severity {
        Severity::Error => "error",
        Severity::Warning => "warning",
    };
    let mut out = String::new();
    let _ = writeln!(out, "{loc}: {kind}: {}", d.message);
    let line = map.line_at(d.span.lo);
    let _ = writeln!(out, "{line}");
    // The caret line copies tabs so that the caret lines up however the terminal expands them.
    let prefix: String = line
        .chars()
        .take(loc.col as usize - 1)
        .map(|c| if c == '\t' { '\t' } else { ' ' })
        .collect();
    let width = map
        .snippet(d.span)
        .lines()
        .next()
        .map(|s| s.chars().count())
        .unwrap_or(0)
        .max(1);
    let _ = writeln!(out, "{prefix}{}", "^".repeat(width));
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn renders_location_line_and_caret() {
        let map = SourceMap::new("t.p4", "# 4 \"x.p4\"\nconst bit<8> a = foo;\n".to_string());
        let mut d = Diagnostics::default();
        let lo = map.text().find("foo").unwrap();
        d.error(Span::new(lo, lo + 3), "unknown name foo");
        d.error(Span::new(lo, lo + 3), "a cascade at the same place");
        assert_eq!(
            d.render(&map),
            "x.p4(4:18): error: unknown name foo\nconst bit<8> a = foo;\n                 ^^^\n"
        );
        assert_eq!(d.error_count(), 1);
    }
}
