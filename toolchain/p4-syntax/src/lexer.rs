//! Tokens of P4_16. Identifiers are not split into type names and other names here: the parser
//! knows which names are types in scope and decides (the spec's type-name/identifier ambiguity).

use crate::diag::Diagnostics;
use crate::source::{SourceMap, Span};
use num_bigint::BigUint;
use num_traits::Zero;

#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Tok {
    Ident(String),
    /// An integer literal: value, and the `Nw`/`Ns` width prefix if any (width, signed).
    /// Value, `W(w|s)` width and signedness, the radix it was written in.
    Int(BigUint, Option<(u32, bool)>, u32),
    Str(String),
    Punct(&'static str),
    Eof,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Token {
    pub tok: Tok,
    pub span: Span,
}

impl Token {
    pub fn is_punct(&self, p: &str) -> bool {
        matches!(&self.tok, Tok::Punct(q) if *q == p)
    }

    pub fn is_ident(&self, s: &str) -> bool {
        matches!(&self.tok, Tok::Ident(q) if q == s)
    }

    /// How the token reads in an error message.
    pub fn describe(&self) -> String {
        match &self.tok {
            Tok::Ident(s) => format!("'{s}'"),
            Tok::Int(v, ..) => format!("integer {v}"),
            Tok::Str(_) => "string literal".to_string(),
            Tok::Punct(p) => format!("'{p}'"),
            Tok::Eof => "end of file".to_string(),
        }
    }
}

/// Longest first, so that the lexer takes the longest match.
const PUNCTS: &[&str] = &[
    "&&&", "|+|", "|-|", "+:", "<<", "<=", ">=", "==", "!=", "&&", "||", "++", "..", "{", "}", "(",
    ")", "[", "]", "<", ">", ";", ":", ",", ".", "=", "!", "~", "-", "+", "*", "/", "%", "&", "|",
    "^", "?", "@",
];

/// Words that can never be identifiers.
pub const KEYWORDS: &[&str] = &[
    "abstract",
    "action",
    "apply",
    "bit",
    "bool",
    "const",
    "control",
    "default",
    "else",
    "enum",
    "error",
    "exit",
    "extern",
    "false",
    "header",
    "header_union",
    "if",
    "in",
    "inout",
    "int",
    "match_kind",
    "out",
    "package",
    "parser",
    "return",
    "select",
    "state",
    "string",
    "struct",
    "switch",
    "table",
    "transition",
    "true",
    "tuple",
    "typedef",
    "type",
    "value_set",
    "varbit",
    "void",
    "list",
];

pub fn lex(map: &SourceMap, diags: &mut Diagnostics) -> Vec<Token> {
    let text = map.text();
    let bytes = text.as_bytes();
    let mut toks = Vec::new();
    let mut i = 0;
    // Nesting depth inside an annotation's body (`@name( ... )`), 0 outside one.
    let mut annotation_depth = 0usize;
    while i < bytes.len() {
        let c = bytes[i];
        if c.is_ascii_whitespace() {
            i += 1;
            continue;
        }
        // Preprocessor output: line markers and any directive cpp passed through.
        if c == b'#' && map.at_line_start(i) {
            while i < bytes.len() && bytes[i] != b'\n' {
                i += 1;
            }
            continue;
        }
        if text[i..].starts_with("//") {
            while i < bytes.len() && bytes[i] != b'\n' {
                i += 1;
            }
            continue;
        }
        if text[i..].starts_with("/*") {
            match text[i + 2..].find("*/") {
                Some(e) => i += e + 4,
                None => {
                    diags.error(Span::new(i, i + 2), "unterminated comment");
                    i = bytes.len();
                }
            }
            continue;
        }
        let start = i;
        if c.is_ascii_alphabetic() || c == b'_' {
            while i < bytes.len() && (bytes[i].is_ascii_alphanumeric() || bytes[i] == b'_') {
                i += 1;
            }
            toks.push(Token {
                tok: Tok::Ident(text[start..i].to_string()),
                span: Span::new(start, i),
            });
            continue;
        }
        if c.is_ascii_digit() {
            i = lex_number(text, start, &mut toks, diags);
            continue;
        }
        if c == b'"' {
            i = lex_string(text, start, &mut toks, diags);
            continue;
        }
        if let Some(p) = PUNCTS.iter().find(|p| text[i..].starts_with(**p)) {
            i += p.len();
            annotation_depth = match (*p, annotation_depth) {
                ("(" | "[", 0) if opens_annotation_body(&toks) => 1,
                ("(" | "[", d) if d > 0 => d + 1,
                (")" | "]", d) if d > 0 => d - 1,
                (_, d) => d,
            };
            toks.push(Token {
                tok: Tok::Punct(p),
                span: Span::new(start, i),
            });
            continue;
        }
        let ch = text[i..].chars().next().unwrap_or('?');
        i += ch.len_utf8();
        // Free-form annotation bodies may hold any text (p4c keeps it as the annotation's);
        // the parser takes the body from the source, so the character needs no token.
        if annotation_depth == 0 {
            diags.error(Span::new(start, i), format!("unexpected character '{ch}'"));
        }
    }
    toks.push(Token {
        tok: Tok::Eof,
        span: Span::new(bytes.len(), bytes.len()),
    });
    toks
}

/// Whether a `(` or `[` now opens an annotation's body: the tokens before it are `@ name`.
fn opens_annotation_body(toks: &[Token]) -> bool {
    matches!(
        toks,
        [.., at, Token { tok: Tok::Ident(_), .. }] if at.is_punct("@")
    )
}

fn digits_value(s: &str, radix: u32) -> Option<BigUint> {
    let clean: String = s.chars().filter(|c| *c != '_').collect();
    if clean.is_empty() {
        return None;
    }
    BigUint::parse_bytes(clean.as_bytes(), radix)
}

/// `[W(w|s)][0x|0o|0d|0b]DIGITS` with `_` separators anywhere after the first digit.
fn lex_number(text: &str, start: usize, toks: &mut Vec<Token>, diags: &mut Diagnostics) -> usize {
    let bytes = text.as_bytes();
    let word_end = |mut i: usize| {
        while i < bytes.len() && (bytes[i].is_ascii_alphanumeric() || bytes[i] == b'_') {
            i += 1;
        }
        i
    };
    let end = word_end(start);
    let word = &text[start..end];
    let mut width = None;
    let mut body = word;
    let lead: String = word.chars().take_while(|c| c.is_ascii_digit()).collect();
    let after = &word[lead.len()..];
    if after.starts_with('w') || after.starts_with('s') {
        let signed = after.starts_with('s');
        match lead.parse::<u32>() {
            Ok(w) if w > 0 => width = Some((w, signed)),
            _ => diags.error(
                Span::new(start, start + lead.len() + 1),
                format!("invalid width '{lead}' in integer literal"),
            ),
        }
        body = &after[1..];
    }
    let lower = body.to_ascii_lowercase();
    let (radix, digits) = if lower.len() > 1 && lower.starts_with('0') {
        match &lower[1..2] {
            "x" => (16, &body[2..]),
            "b" => (2, &body[2..]),
            "o" => (8, &body[2..]),
            "d" => (10, &body[2..]),
            _ => (10, body),
        }
    } else {
        (10, body)
    };
    let value = match digits_value(digits, radix) {
        Some(v) => v,
        None => {
            diags.error(
                Span::new(start, end),
                format!("malformed integer literal '{word}'"),
            );
            BigUint::zero()
        }
    };
    toks.push(Token {
        tok: Tok::Int(value, width, radix),
        span: Span::new(start, end),
    });
    end
}

fn lex_string(text: &str, start: usize, toks: &mut Vec<Token>, diags: &mut Diagnostics) -> usize {
    let mut s = String::new();
    let mut chars = text[start + 1..].char_indices();
    while let Some((k, c)) = chars.next() {
        match c {
            '"' => {
                let end = start + 1 + k + 1;
                toks.push(Token {
                    tok: Tok::Str(s),
                    span: Span::new(start, end),
                });
                return end;
            }
            '\\' => match chars.next() {
                Some((_, 'n')) => s.push('\n'),
                Some((_, 't')) => s.push('\t'),
                Some((_, 'r')) => s.push('\r'),
                Some((_, o)) => s.push(o),
                None => break,
            },
            '\n' => break,
            c => s.push(c),
        }
    }
    diags.error(Span::new(start, start + 1), "unterminated string literal");
    let end = text[start..]
        .find('\n')
        .map(|e| start + e)
        .unwrap_or(text.len());
    toks.push(Token {
        tok: Tok::Str(s),
        span: Span::new(start, end),
    });
    end
}

#[cfg(test)]
mod tests {
    use super::*;

    fn toks(src: &str) -> (Vec<Tok>, Diagnostics) {
        let map = SourceMap::new("t.p4", src.to_string());
        let mut d = Diagnostics::default();
        let t = lex(&map, &mut d).into_iter().map(|t| t.tok).collect();
        (t, d)
    }

    #[test]
    fn literals_with_widths_and_radixes() {
        let (t, d) = toks("8w0xF_F 4s3 0b101 0d12 0o17 16w10");
        assert!(!d.has_errors());
        let v = |n: u32, w: Option<(u32, bool)>, r: u32| Tok::Int(BigUint::from(n), w, r);
        assert_eq!(
            t,
            vec![
                v(255, Some((8, false)), 16),
                v(3, Some((4, true)), 10),
                v(5, None, 2),
                v(12, None, 10),
                v(15, None, 8),
                v(10, Some((16, false)), 10),
                Tok::Eof
            ]
        );
    }

    #[test]
    fn operators_take_longest_match_and_skip_comments_and_markers() {
        let (t, d) = toks("# 1 \"x.p4\"\na &&& b |+| c // x\n/* y */ ..");
        assert!(!d.has_errors());
        let p = Tok::Punct;
        let id = |s: &str| Tok::Ident(s.into());
        assert_eq!(
            t,
            vec![
                id("a"),
                p("&&&"),
                id("b"),
                p("|+|"),
                id("c"),
                p(".."),
                Tok::Eof
            ]
        );
    }

    #[test]
    fn any_character_may_stand_in_a_free_form_annotation_body() {
        let (t, d) = toks("@note(That's (it) `x`) header $");
        assert_eq!(
            d.error_count(),
            1,
            "only the `$` outside the body: {:?}",
            d.items()
        );
        let p = Tok::Punct;
        let id = |s: &str| Tok::Ident(s.into());
        assert_eq!(
            t,
            vec![
                p("@"),
                id("note"),
                p("("),
                id("That"),
                id("s"),
                p("("),
                id("it"),
                p(")"),
                id("x"),
                p(")"),
                id("header"),
                Tok::Eof
            ]
        );
    }

    #[test]
    fn bad_characters_and_strings_are_reported_not_fatal() {
        let (t, d) = toks("a $ \"abc\nb");
        assert_eq!(d.error_count(), 2);
        assert_eq!(t.last(), Some(&Tok::Eof));
        assert!(t.contains(&Tok::Ident("b".into())));
    }
}
