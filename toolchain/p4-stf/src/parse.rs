//! The STF syntax of p4c (`tools/stf/stf_lexer.py`, `stf_parser.py`, bmv2's direct commands):
//! one statement a line, keywords case-insensitive, `#` comments.
//!
//! Extensions over p4c, all of them bmv2 CLI syntax: `value&&&mask` and `low->high` key values,
//! and a comparison after `register_read` to check a register.

use std::fmt;

use crate::ast::*;
use crate::pattern::Pattern;
use crate::value::Value;

/// A syntax error at a place in the file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Diagnostic {
    pub loc: Loc,
    pub message: String,
}

impl fmt::Display for Diagnostic {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "({}): error: {}", self.loc, self.message)
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
enum Tok {
    Ident(String),
    /// Digits as written, maybe with a 0x/0b prefix and `*`s.
    Num(String),
    Punct(&'static str),
}

impl fmt::Display for Tok {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Tok::Ident(s) | Tok::Num(s) => write!(f, "'{s}'"),
            Tok::Punct(p) => write!(f, "'{p}'"),
        }
    }
}

/// Longest first, so `==` is not read as `=` `=`.
const PUNCTS: [&str; 17] = [
    "&&&", "==", "!=", "<=", ">=", "->", ":", ",", ".", "[", "]", "(", ")", "=", "<", ">", "/",
];

fn is_ident_start(c: char) -> bool {
    c.is_ascii_alphabetic() || c == '_' || c == '$'
}

fn is_ident_char(c: char) -> bool {
    c.is_ascii_alphanumeric() || c == '_' || c == '$'
}

/// Tokens of one line, each with its 1-based column.
fn lex(line: &str, line_no: u32) -> Result<Vec<(Tok, u32)>, Diagnostic> {
    let chars: Vec<char> = line.chars().collect();
    let mut toks = Vec::new();
    let mut i = 0;
    while i < chars.len() {
        let c = chars[i];
        let col = i as u32 + 1;
        let err = |message: String| Diagnostic {
            loc: Loc { line: line_no, col },
            message,
        };
        if c.is_whitespace() {
            i += 1;
        } else if c == '#' {
            break;
        } else if c == '"' {
            let end = chars[i + 1..]
                .iter()
                .position(|&d| d == '"')
                .ok_or_else(|| err("unterminated quoted name".to_string()))?;
            toks.push((Tok::Ident(chars[i + 1..i + 1 + end].iter().collect()), col));
            i += end + 2;
        } else if c.is_ascii_digit() {
            let start = i;
            let radix_prefix = c == '0'
                && matches!(chars.get(i + 1), Some('x' | 'X' | 'b' | 'B'))
                && chars
                    .get(i + 2)
                    .is_some_and(|d| d.is_ascii_hexdigit() || *d == '*');
            if radix_prefix {
                i += 2;
                while i < chars.len() && (chars[i].is_ascii_hexdigit() || chars[i] == '*') {
                    i += 1;
                }
            } else {
                while i < chars.len() && chars[i].is_ascii_digit() {
                    i += 1;
                }
            }
            if i < chars.len() && is_ident_char(chars[i]) {
                return Err(Diagnostic {
                    loc: Loc {
                        line: line_no,
                        col: i as u32 + 1,
                    },
                    message: format!(
                        "'{}' cannot follow the number '{}'",
                        chars[i],
                        chars[start..i].iter().collect::<String>()
                    ),
                });
            }
            toks.push((Tok::Num(chars[start..i].iter().collect()), col));
        } else if is_ident_start(c) {
            let start = i;
            while i < chars.len() && is_ident_char(chars[i]) {
                i += 1;
            }
            toks.push((Tok::Ident(chars[start..i].iter().collect()), col));
        } else if let Some(p) = PUNCTS
            .iter()
            .find(|p| p.chars().zip(&chars[i..]).filter(|(a, b)| a == *b).count() == p.len())
        {
            toks.push((Tok::Punct(p), col));
            i += p.len();
        } else {
            return Err(err(format!("unexpected character '{c}'")));
        }
    }
    Ok(toks)
}

/// Parses a numeric literal; `*` digits are allowed only where `allow_dont_care`.
fn number(text: &str, loc: Loc, allow_dont_care: bool) -> Result<Number, Diagnostic> {
    let err = |message: String| Diagnostic { loc, message };
    let lower = text.to_ascii_lowercase();
    let (digits, bits_per_digit, radix) = if let Some(d) = lower.strip_prefix("0x") {
        (d, 4, 16)
    } else if let Some(d) = lower.strip_prefix("0b") {
        (d, 1, 2)
    } else {
        (lower.as_str(), 0, 10)
    };
    let mut value = Value::zero();
    let mut care = Value::zero();
    let mut wildcards = 0;
    for c in digits.chars() {
        let digit_mask = if bits_per_digit == 0 {
            0
        } else {
            (1u32 << bits_per_digit) - 1
        };
        if c == '*' {
            if !allow_dont_care {
                return Err(err(format!(
                    "'*' (don't care) is not allowed in '{text}' here"
                )));
            }
            wildcards += 1;
            value.mul_add(radix, 0);
            care.mul_add(radix, 0);
            continue;
        }
        let d = c
            .to_digit(radix)
            .ok_or_else(|| err(format!("'{c}' is not a digit of '{text}'")))?;
        value.mul_add(radix, d);
        care.mul_add(radix, digit_mask);
    }
    Ok(Number {
        value,
        care: (wildcards > 0).then_some(care),
        digits: digits.len() as u32,
        wildcards,
        bits_per_digit,
        text: text.to_string(),
    })
}

/// A cursor over one line's tokens.
struct Line<'a> {
    toks: &'a [(Tok, u32)],
    pos: usize,
    line_no: u32,
    /// Column just past the last character, for "expected X at end of line".
    end_col: u32,
}

impl<'a> Line<'a> {
    fn loc(&self) -> Loc {
        let col = self.toks.get(self.pos).map_or(self.end_col, |t| t.1);
        Loc {
            line: self.line_no,
            col,
        }
    }

    fn error<T>(&self, what: &str) -> Result<T, Diagnostic> {
        let found = match self.toks.get(self.pos) {
            Some((t, _)) => format!("found {t}"),
            None => "found the end of the line".to_string(),
        };
        Err(Diagnostic {
            loc: self.loc(),
            message: format!("expected {what}, {found}"),
        })
    }

    fn peek(&self) -> Option<&'a Tok> {
        self.toks.get(self.pos).map(|t| &t.0)
    }

    fn at_punct(&self, p: &str) -> bool {
        matches!(self.peek(), Some(Tok::Punct(q)) if *q == p)
    }

    fn eat_punct(&mut self, p: &str) -> bool {
        let hit = self.at_punct(p);
        if hit {
            self.pos += 1;
        }
        hit
    }

    fn expect_punct(&mut self, p: &str) -> Result<(), Diagnostic> {
        if self.eat_punct(p) {
            Ok(())
        } else {
            self.error(&format!("'{p}'"))
        }
    }

    fn ident(&mut self, what: &str) -> Result<String, Diagnostic> {
        match self.peek() {
            Some(Tok::Ident(s)) => {
                self.pos += 1;
                Ok(s.clone())
            }
            _ => self.error(what),
        }
    }

    fn number(&mut self, what: &str, allow_dont_care: bool) -> Result<Number, Diagnostic> {
        match self.peek() {
            Some(Tok::Num(s)) => {
                let loc = self.loc();
                self.pos += 1;
                number(s, loc, allow_dont_care)
            }
            _ => self.error(what),
        }
    }

    /// A number that must fit `u64` (ports, indices, counts).
    fn small(&mut self, what: &str) -> Result<u64, Diagnostic> {
        let loc = self.loc();
        let n = self.number(what, false)?;
        n.value
            .to_u128()
            .and_then(|v| u64::try_from(v).ok())
            .ok_or(Diagnostic {
                loc,
                message: format!("{what} {} is too large", n.text),
            })
    }

    fn small_u32(&mut self, what: &str) -> Result<u32, Diagnostic> {
        let loc = self.loc();
        let v = self.small(what)?;
        u32::try_from(v).map_err(|_| Diagnostic {
            loc,
            message: format!("{what} {v} does not fit 32 bits"),
        })
    }

    /// `ID ('[' DEC ']')? ('.' ID ('[' DEC ']')?)*`, as one dotted string.
    fn qualified_name(&mut self, what: &str) -> Result<String, Diagnostic> {
        let mut name = self.ident(what)?;
        loop {
            if self.eat_punct("[") {
                let index = self.small("an array index")?;
                self.expect_punct("]")?;
                name.push_str(&format!("[{index}]"));
            }
            if !self.eat_punct(".") {
                return Ok(name);
            }
            name.push('.');
            name.push_str(&self.ident("a name after '.'")?);
        }
    }

    fn done(&self) -> Result<(), Diagnostic> {
        if self.pos < self.toks.len() {
            return self.error("the end of the line");
        }
        Ok(())
    }

    fn is_done(&self) -> bool {
        self.pos >= self.toks.len()
    }

    fn cmp(&mut self) -> Result<Cmp, Diagnostic> {
        let c = match self.peek() {
            Some(Tok::Punct("==")) => Cmp::Eq,
            Some(Tok::Punct("!=")) => Cmp::Ne,
            Some(Tok::Punct("<")) => Cmp::Lt,
            Some(Tok::Punct("<=")) => Cmp::Le,
            Some(Tok::Punct(">")) => Cmp::Gt,
            Some(Tok::Punct(">=")) => Cmp::Ge,
            _ => return self.error("a comparison (==, !=, <, <=, >, >=)"),
        };
        self.pos += 1;
        Ok(c)
    }

    /// `NAME(ARG:NUMBER, ...)`.
    fn action(&mut self) -> Result<ActionCall, Diagnostic> {
        let loc = self.loc();
        let name = self.qualified_name("an action name")?;
        self.expect_punct("(")?;
        let mut args = Vec::new();
        if !self.eat_punct(")") {
            loop {
                let arg = self.ident("an action parameter name")?;
                self.expect_punct(":")?;
                let value = self.number("a parameter value", false)?;
                args.push((arg, value));
                if self.eat_punct(")") {
                    break;
                }
                if !self.eat_punct(",") {
                    return self.error("',' or ')'");
                }
            }
        }
        Ok(ActionCall { loc, name, args })
    }

    /// `FIELD:VALUE` with VALUE one of `N`, `N/LEN`, `N&&&M`, `N->M`.
    fn key_match(&mut self) -> Result<KeyMatch, Diagnostic> {
        let loc = self.loc();
        let field = self.qualified_name("a key field name")?;
        self.expect_punct(":")?;
        let first = self.number("a key value", true)?;
        let value = if self.eat_punct("/") {
            let len_loc = self.loc();
            let len = self.small("a prefix length")?;
            let len = u32::try_from(len).map_err(|_| Diagnostic {
                loc: len_loc,
                message: format!("prefix length {len} is too large"),
            })?;
            KeyValue::Prefix(first, len)
        } else if self.eat_punct("&&&") {
            KeyValue::Masked(first, self.number("a mask", false)?)
        } else if self.eat_punct("->") {
            KeyValue::Range(first, self.number("a range upper bound", false)?)
        } else {
            KeyValue::Number(first)
        };
        Ok(KeyMatch { loc, field, value })
    }

    /// `RATE:BURST` pairs, RATE maybe fractional (`0.5:10`).
    fn meter_rates(&mut self) -> Result<Vec<MeterRate>, Diagnostic> {
        let mut rates = Vec::new();
        while !self.is_done() {
            let loc = self.loc();
            let whole = self.number("a meter rate", false)?;
            let mut text = whole.text.clone();
            if self.eat_punct(".") {
                text.push('.');
                text.push_str(&self.number("the fraction of a meter rate", false)?.text);
            }
            let rate: f64 = text.parse().map_err(|_| Diagnostic {
                loc,
                message: format!("'{text}' is not a rate"),
            })?;
            self.expect_punct(":")?;
            let burst = self.small("a burst size")?;
            rates.push(MeterRate { rate, burst });
        }
        if rates.is_empty() {
            return self.error("RATE:BURST pairs");
        }
        Ok(rates)
    }
}

/// Splits `packet`/`expect` lines by hand: their data is hex runs the general lexer must not see
/// (`0a0b` would lex as a number and a name).
fn packet_line(
    raw: &str,
    line_no: u32,
    keyword_end: usize,
) -> Result<(u32, &str, usize), Diagnostic> {
    let rest = &raw[keyword_end..];
    let port_start = keyword_end + (rest.len() - rest.trim_start().len());
    let port_text: String = raw[port_start..]
        .chars()
        .take_while(|c| c.is_ascii_digit())
        .collect();
    let loc = Loc {
        line: line_no,
        col: raw[..port_start].chars().count() as u32 + 1,
    };
    if port_text.is_empty() {
        return Err(Diagnostic {
            loc,
            message: "expected a port number".to_string(),
        });
    }
    let port = port_text.parse::<u32>().map_err(|_| Diagnostic {
        loc,
        message: format!("port {port_text} does not fit 32 bits"),
    })?;
    let data_start = port_start + port_text.len();
    if raw[data_start..]
        .chars()
        .next()
        .is_some_and(|c| !c.is_whitespace())
    {
        return Err(Diagnostic {
            loc,
            message: "expected whitespace after the port number".to_string(),
        });
    }
    Ok((port, &raw[data_start..], data_start))
}

/// Parses a whole STF text; returns every statement or every error found.
pub fn parse(text: &str) -> Result<Vec<Stmt>, Vec<Diagnostic>> {
    let mut stmts = Vec::new();
    let mut errors = Vec::new();
    for (i, raw_line) in text.lines().enumerate() {
        let line_no = i as u32 + 1;
        let line = match raw_line.find('#') {
            Some(at) => &raw_line[..at],
            None => raw_line,
        };
        match parse_line(line, line_no) {
            Ok(Some(stmt)) => stmts.push(stmt),
            Ok(None) => {}
            Err(e) => errors.push(e),
        }
    }
    if errors.is_empty() {
        Ok(stmts)
    } else {
        Err(errors)
    }
}

fn parse_line(line: &str, line_no: u32) -> Result<Option<Stmt>, Diagnostic> {
    let trimmed = line.trim_start();
    if trimmed.trim().is_empty() {
        return Ok(None);
    }
    let indent = line.len() - trimmed.len();
    let loc = Loc {
        line: line_no,
        col: line[..indent].chars().count() as u32 + 1,
    };
    let keyword: String = trimmed
        .chars()
        .take_while(|&c| is_ident_char(c))
        .collect::<String>()
        .to_ascii_lowercase();
    let text = line.trim().to_string();
    let stmt = |kind| {
        Ok(Some(Stmt {
            loc,
            text: text.clone(),
            kind,
        }))
    };

    if keyword == "packet" || keyword == "expect" {
        let (port, data, data_at) = packet_line(line, line_no, indent + keyword.len())?;
        let data_col = |offset: usize| Loc {
            line: line_no,
            col: line[..data_at + offset].chars().count() as u32 + 1,
        };
        if keyword == "expect" {
            let pattern = Pattern::parse(data).map_err(|(at, message)| Diagnostic {
                loc: data_col(at),
                message,
            })?;
            let pattern = (!pattern.nibbles.is_empty()).then_some(pattern);
            return stmt(StmtKind::Expect { port, pattern });
        }
        let mut nibbles = Vec::new();
        for (at, c) in data.char_indices() {
            if c.is_whitespace() {
                continue;
            }
            let d = c.to_digit(16).ok_or_else(|| Diagnostic {
                loc: data_col(at),
                message: format!("'{c}' in packet data (hex digits only)"),
            })?;
            nibbles.push(d as u8);
        }
        // As p4c's runner reads packet data: digits pair up into bytes, and an odd last digit is a
        // byte of its own (`20 0` is 0x20 0x00); no data at all is an empty packet.
        let data = nibbles
            .chunks(2)
            .map(|p| p.iter().fold(0, |byte, d| (byte << 4) | d))
            .collect();
        return stmt(StmtKind::Packet { port, data });
    }

    let toks = lex(line, line_no)?;
    let mut l = Line {
        toks: &toks,
        pos: 1,
        line_no,
        end_col: line.chars().count() as u32 + 1,
    };
    let kind = match keyword.as_str() {
        "add" => {
            let table = l.qualified_name("a table name")?;
            // A priority is a bare number; keys and the action start with a name.
            let priority = match l.peek() {
                Some(Tok::Num(_)) => Some(l.small_u32("a priority")?),
                _ => None,
            };
            let mut keys = Vec::new();
            loop {
                // Keys and the action both start with a dotted name: `:` or `(` tells them apart.
                let start = l.pos;
                l.qualified_name("a key field or an action name")?;
                let is_key = l.at_punct(":");
                l.pos = start;
                if !is_key {
                    break;
                }
                keys.push(l.key_match()?);
            }
            let action = l.action()?;
            let name = if l.eat_punct("=") {
                Some(l.ident("an entry name after '='")?)
            } else {
                None
            };
            l.done()?;
            StmtKind::Add {
                table,
                priority,
                keys,
                action,
                name,
            }
        }
        "setdefault" => {
            let table = l.qualified_name("a table name")?;
            let action = l.action()?;
            l.done()?;
            StmtKind::SetDefault { table, action }
        }
        "remove" => {
            match l.ident("'all'") {
                Ok(w) if w.eq_ignore_ascii_case("all") => {}
                _ => {
                    l.pos = 1;
                    return l.error("'all' (only 'remove all' is supported)");
                }
            }
            l.done()?;
            StmtKind::RemoveAll
        }
        "no_packet" => {
            l.done()?;
            StmtKind::NoPacket
        }
        "wait" => {
            l.done()?;
            StmtKind::Wait
        }
        "check_counter" => {
            let counter = l.qualified_name("a counter name")?;
            l.expect_punct("(")?;
            let index = match l.peek() {
                Some(Tok::Ident(id)) => {
                    l.pos += 1;
                    CounterRef::Entry(id.trim_start_matches('$').to_string())
                }
                _ => CounterRef::Index(l.small("a counter index or $ENTRY")?),
            };
            l.expect_punct(")")?;
            let check = if l.is_done() {
                None
            } else {
                let kind = match l
                    .ident("'packets' or 'bytes'")?
                    .to_ascii_lowercase()
                    .as_str()
                {
                    "packets" => CountKind::Packets,
                    "bytes" => CountKind::Bytes,
                    _ => {
                        l.pos -= 1;
                        return l.error("'packets' or 'bytes'");
                    }
                };
                let cmp = l.cmp()?;
                Some((kind, cmp, l.small("a count")?))
            };
            l.done()?;
            StmtKind::CheckCounter {
                counter,
                index,
                check,
            }
        }
        "mirroring_add" => {
            let session = l.small_u32("a mirror session id")?;
            let port = l.small_u32("an egress port")?;
            l.done()?;
            StmtKind::MirroringAdd { session, port }
        }
        "mirroring_add_mc" => {
            let session = l.small_u32("a mirror session id")?;
            let mgrp = l.small_u32("a multicast group id")?;
            l.done()?;
            StmtKind::MirroringAddMc { session, mgrp }
        }
        "mirroring_delete" | "mirroring_get" => {
            let session = l.small_u32("a mirror session id")?;
            l.done()?;
            if keyword == "mirroring_delete" {
                StmtKind::MirroringDelete { session }
            } else {
                StmtKind::MirroringGet { session }
            }
        }
        "mc_mgrp_create" => {
            let mgrp = l.small_u32("a multicast group id")?;
            l.done()?;
            StmtKind::McMgrpCreate { mgrp }
        }
        "mc_node_create" | "mc_node_update" => {
            let first = l.small_u32(if keyword == "mc_node_create" {
                "a replication id"
            } else {
                "a node handle"
            })?;
            let mut ports = Vec::new();
            while !l.is_done() {
                ports.push(l.small_u32("a port number")?);
            }
            if keyword == "mc_node_create" {
                StmtKind::McNodeCreate { rid: first, ports }
            } else {
                StmtKind::McNodeUpdate {
                    handle: first,
                    ports,
                }
            }
        }
        "mc_node_associate" => {
            let mgrp = l.small_u32("a multicast group id")?;
            let handle = l.small_u32("a node handle")?;
            l.done()?;
            StmtKind::McNodeAssociate { mgrp, handle }
        }
        "counter_read" => {
            let counter = l.qualified_name("a counter name")?;
            let index = l.small("a counter index")?;
            l.done()?;
            StmtKind::CounterRead { counter, index }
        }
        "counter_write" => {
            let counter = l.qualified_name("a counter name")?;
            let index = l.small("a counter index")?;
            let packets = l.small("a packet count")?;
            let bytes = l.small("a byte count")?;
            l.done()?;
            StmtKind::CounterWrite {
                counter,
                index,
                packets,
                bytes,
            }
        }
        "register_read" => {
            let register = l.qualified_name("a register name")?;
            let index = l.small("a register index")?;
            let check = if l.is_done() {
                None
            } else {
                let cmp = l.cmp()?;
                Some((cmp, l.number("a register value", false)?.value))
            };
            l.done()?;
            StmtKind::RegisterRead {
                register,
                index,
                check,
            }
        }
        "register_write" => {
            let register = l.qualified_name("a register name")?;
            let index = l.small("a register index")?;
            let value = l.number("a register value", false)?.value;
            l.done()?;
            StmtKind::RegisterWrite {
                register,
                index,
                value,
            }
        }
        "register_reset" => {
            let register = l.qualified_name("a register name")?;
            l.done()?;
            StmtKind::RegisterReset { register }
        }
        "meter_set_rates" => {
            let meter = l.qualified_name("a meter name")?;
            let index = Some(l.small("a meter index")?);
            let rates = l.meter_rates()?;
            StmtKind::MeterSetRates {
                meter,
                index,
                rates,
            }
        }
        "meter_array_set_rates" => {
            let meter = l.qualified_name("a meter name")?;
            let rates = l.meter_rates()?;
            StmtKind::MeterSetRates {
                meter,
                index: None,
                rates,
            }
        }
        "meter_get_rates" => {
            let meter = l.qualified_name("a meter name")?;
            let index = l.small("a meter index")?;
            l.done()?;
            StmtKind::MeterGetRates { meter, index }
        }
        _ => {
            return Err(Diagnostic {
                loc,
                message: format!(
                    "unknown statement '{}'",
                    trimmed.split_whitespace().next().unwrap_or_default()
                ),
            })
        }
    };
    stmt(kind)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn one(line: &str) -> StmtKind {
        let mut stmts = parse(line).unwrap_or_else(|e| panic!("{line}: {e:?}"));
        assert_eq!(stmts.len(), 1);
        stmts.remove(0).kind
    }

    fn err(text: &str) -> String {
        let errors = parse(text).unwrap_err();
        errors
            .iter()
            .map(|e| e.to_string())
            .collect::<Vec<_>>()
            .join("\n")
    }

    fn num(text: &str) -> Number {
        number(text, Loc { line: 1, col: 1 }, true).unwrap()
    }

    #[test]
    fn numbers_keep_digits_and_dont_care_masks() {
        let n = num("0x****0101");
        assert_eq!(n.value, Value::from_u128(0x0101));
        assert_eq!(n.care, Some(Value::from_u128(0xffff)));
        assert_eq!((n.digits, n.wildcards, n.bits_per_digit), (8, 4, 4));
        let b = num("0b1*0");
        assert_eq!(b.value, Value::from_u128(0b100));
        assert_eq!(b.care, Some(Value::from_u128(0b101)));
        let d = num("4294967296");
        assert_eq!(d.value, Value::from_u128(1 << 32));
        assert_eq!((d.care, d.bits_per_digit), (None, 0));
        let wide = num("0x0123456789abcdef0123456789abcdef01");
        assert_eq!(wide.value.bits(), 129);
    }

    #[test]
    fn add_with_priority_keys_action_and_name() {
        let kind = one("ADD test1 503 data.f1:0x****0202 ingress.setb1(val:7, port:3) = A");
        let StmtKind::Add {
            table,
            priority,
            keys,
            action,
            name,
        } = kind
        else {
            panic!("not an add: {kind:?}")
        };
        assert_eq!(table, "test1");
        assert_eq!(priority, Some(503));
        assert_eq!(keys.len(), 1);
        assert_eq!(keys[0].field, "data.f1");
        assert_eq!(keys[0].loc, Loc { line: 1, col: 15 });
        assert_eq!(keys[0].value, KeyValue::Number(num("0x****0202")));
        assert_eq!(action.name, "ingress.setb1");
        assert_eq!(
            action.args,
            vec![
                ("val".to_string(), num("7")),
                ("port".to_string(), num("3"))
            ]
        );
        assert_eq!(name.as_deref(), Some("A"));
    }

    #[test]
    fn add_key_forms() {
        let StmtKind::Add { keys, priority, .. } = one(
            "add t h.ipv4.dst:0x0a000000/8 extra$0.h:0x25** m:0x10&&&0xf0 r:10->20 stack[1].f:1 fwd()",
        ) else {
            panic!()
        };
        assert_eq!(priority, None);
        let values: Vec<_> = keys.iter().map(|k| (k.field.as_str(), &k.value)).collect();
        assert_eq!(
            values[0],
            ("h.ipv4.dst", &KeyValue::Prefix(num("0x0a000000"), 8))
        );
        assert_eq!(values[1], ("extra$0.h", &KeyValue::Number(num("0x25**"))));
        assert_eq!(
            values[2],
            ("m", &KeyValue::Masked(num("0x10"), num("0xf0")))
        );
        assert_eq!(values[3], ("r", &KeyValue::Range(num("10"), num("20"))));
        assert_eq!(values[4], ("stack[1].f", &KeyValue::Number(num("1"))));
    }

    #[test]
    fn packets_and_expectations() {
        assert_eq!(
            one("packet 0 01010101 03030303  9999"),
            StmtKind::Packet {
                port: 0,
                data: vec![1, 1, 1, 1, 3, 3, 3, 3, 0x99, 0x99]
            }
        );
        let StmtKind::Expect { port, pattern } = one("expect 12 *1010101 0303 $") else {
            panic!()
        };
        assert_eq!(port, 12);
        let pattern = pattern.unwrap();
        assert_eq!(pattern.to_hex(), "*10101010303$");
        assert!(pattern.exact_len);
        assert_eq!(
            one("  expect 5   # any number of packets"),
            StmtKind::Expect {
                port: 5,
                pattern: None
            }
        );
    }

    #[test]
    fn odd_and_empty_packet_data_read_as_p4c_does() {
        assert_eq!(
            one("packet 0 0a 20 5"),
            StmtKind::Packet {
                port: 0,
                data: vec![0x0a, 0x20, 0x05]
            }
        );
        assert_eq!(
            one("packet 3 "),
            StmtKind::Packet {
                port: 3,
                data: vec![]
            }
        );
    }

    #[test]
    fn control_statements() {
        assert_eq!(
            one("setdefault ethertype_match l2_packet()"),
            StmtKind::SetDefault {
                table: "ethertype_match".into(),
                action: ActionCall {
                    loc: Loc { line: 1, col: 28 },
                    name: "l2_packet".into(),
                    args: vec![]
                }
            }
        );
        assert_eq!(
            one("check_counter cntDum(10) packets == 2"),
            StmtKind::CheckCounter {
                counter: "cntDum".into(),
                index: CounterRef::Index(10),
                check: Some((CountKind::Packets, Cmp::Eq, 2))
            }
        );
        assert_eq!(
            one("check_counter cntDum($A) bytes >= 64"),
            StmtKind::CheckCounter {
                counter: "cntDum".into(),
                index: CounterRef::Entry("A".into()),
                check: Some((CountKind::Bytes, Cmp::Ge, 64))
            }
        );
        assert_eq!(
            one("mc_node_create 0 1 2 3"),
            StmtKind::McNodeCreate {
                rid: 0,
                ports: vec![1, 2, 3]
            }
        );
        assert_eq!(
            one("mc_node_associate 1 0"),
            StmtKind::McNodeAssociate { mgrp: 1, handle: 0 }
        );
        assert_eq!(one("mc_mgrp_create 1"), StmtKind::McMgrpCreate { mgrp: 1 });
        assert_eq!(
            one("mirroring_add 5 3"),
            StmtKind::MirroringAdd {
                session: 5,
                port: 3
            }
        );
        assert_eq!(
            one("register_write MyIngress.reg 3 0x1234"),
            StmtKind::RegisterWrite {
                register: "MyIngress.reg".into(),
                index: 3,
                value: Value::from_u128(0x1234)
            }
        );
        assert_eq!(
            one("register_read reg 3 != 5"),
            StmtKind::RegisterRead {
                register: "reg".into(),
                index: 3,
                check: Some((Cmp::Ne, Value::from_u128(5)))
            }
        );
        assert_eq!(
            one("meter_set_rates m 2 0.5:100 1:200"),
            StmtKind::MeterSetRates {
                meter: "m".into(),
                index: Some(2),
                rates: vec![
                    MeterRate {
                        rate: 0.5,
                        burst: 100
                    },
                    MeterRate {
                        rate: 1.0,
                        burst: 200
                    }
                ]
            }
        );
        assert_eq!(one("WAIT"), StmtKind::Wait);
        assert_eq!(one("remove all"), StmtKind::RemoveAll);
        assert_eq!(one("no_packet"), StmtKind::NoPacket);
    }

    #[test]
    fn comments_blank_lines_and_locations() {
        let stmts = parse("# header\n\n  wait # trailing\npacket 1 00\n").unwrap();
        assert_eq!(stmts.len(), 2);
        assert_eq!(stmts[0].loc, Loc { line: 3, col: 3 });
        assert_eq!(stmts[0].text, "wait");
        assert_eq!(stmts[1].loc, Loc { line: 4, col: 1 });
    }

    #[test]
    fn errors_are_located_and_all_reported() {
        assert_eq!(
            err("packet 0 0a 0g"),
            "(1:14): error: 'g' in packet data (hex digits only)"
        );
        assert_eq!(err("packet x 00"), "(1:8): error: expected a port number");
        assert_eq!(
            err("expect 1 00 *z"),
            "(1:14): error: 'z' in expected packet data (hex digits, '*' and a final '$' only)"
        );
        assert_eq!(
            err("frobnicate 1"),
            "(1:1): error: unknown statement 'frobnicate'"
        );
        assert_eq!(
            err("add t k:1 act(p:1"),
            "(1:18): error: expected ',' or ')', found the end of the line"
        );
        assert_eq!(
            err("add t k:1"),
            "(1:10): error: expected a key field or an action name, found the end of the line"
        );
        assert_eq!(
            err("add t k:0x1g a()"),
            "(1:12): error: 'g' cannot follow the number '0x1'"
        );
        assert_eq!(
            err("setdefault t a(p:0x1*)"),
            "(1:18): error: '*' (don't care) is not allowed in '0x1*' here"
        );
        assert_eq!(
            err("check_counter c(1) frames == 1"),
            "(1:20): error: expected 'packets' or 'bytes', found 'frames'"
        );
        assert_eq!(
            err("mirroring_add 1"),
            "(1:16): error: expected an egress port, found the end of the line"
        );
        assert_eq!(
            err("wait now"),
            "(1:6): error: expected the end of the line, found 'now'"
        );
        assert_eq!(
            err("remove some"),
            "(1:8): error: expected 'all' (only 'remove all' is supported), found 'some'"
        );
        assert_eq!(
            err("wait\nbogus\npacket 1 0g\n"),
            "(2:1): error: unknown statement 'bogus'\n(3:11): error: 'g' in packet data (hex digits only)"
        );
    }
}
