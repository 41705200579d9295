//! Expected-packet patterns (`expect PORT 0a0b**0d $`) and the packet diff shown on a mismatch.

use std::fmt::Write as _;

/// Hex nibbles, `None` for a `*` (don't care). Without `exact_len`, the pattern is a prefix: a
/// longer packet matches, as in p4c. A trailing `$` sets `exact_len`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Pattern {
    pub nibbles: Vec<Option<u8>>,
    pub exact_len: bool,
}

/// How a packet failed a pattern.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Mismatch {
    /// The packet has fewer nibbles than the pattern.
    TooShort { got: usize, want: usize },
    /// The pattern ends in `$` and the packet is longer.
    TooLong { got: usize, want: usize },
    /// Nibble `first` (0-based) is the first of `count` differing nibbles.
    Differs { first: usize, count: usize },
}

fn nibble(packet: &[u8], i: usize) -> u8 {
    let b = packet[i / 2];
    if i % 2 == 0 {
        b >> 4
    } else {
        b & 0xf
    }
}

impl Pattern {
    /// Parses the text after `expect PORT`: hex digits, `*`, spaces, and an optional final `$`.
    /// On error, returns the 0-based char offset in `text` and a message.
    pub fn parse(text: &str) -> Result<Pattern, (usize, String)> {
        let mut nibbles = Vec::new();
        let mut exact_len = false;
        for (i, c) in text.char_indices() {
            if exact_len && !c.is_whitespace() {
                return Err((i, format!("'{c}' after the end marker '$'")));
            }
            match c {
                '*' => nibbles.push(None),
                '$' => exact_len = true,
                c if c.is_whitespace() => {}
                c => match c.to_digit(16) {
                    Some(d) => nibbles.push(Some(d as u8)),
                    None => {
                        return Err((
                            i,
                            format!(
                            "'{c}' in expected packet data (hex digits, '*' and a final '$' only)"
                        ),
                        ))
                    }
                },
            }
        }
        Ok(Pattern { nibbles, exact_len })
    }

    pub fn check(&self, packet: &[u8]) -> Result<(), Mismatch> {
        let got = packet.len() * 2;
        let want = self.nibbles.len();
        if got < want {
            return Err(Mismatch::TooShort { got, want });
        }
        let differing: Vec<usize> = (0..want)
            .filter(|&i| matches!(self.nibbles[i], Some(n) if n != nibble(packet, i)))
            .collect();
        if let Some(&first) = differing.first() {
            return Err(Mismatch::Differs {
                first,
                count: differing.len(),
            });
        }
        if self.exact_len && got > want {
            return Err(Mismatch::TooLong { got, want });
        }
        Ok(())
    }

    /// The pattern as STF writes it, `*` for don't-care.
    pub fn to_hex(&self) -> String {
        let mut s: String = self
            .nibbles
            .iter()
            .map(|n| match n {
                Some(d) => char::from_digit(u32::from(*d), 16).unwrap_or('?'),
                None => '*',
            })
            .collect();
        if self.exact_len {
            s.push('$');
        }
        s
    }
}

impl Mismatch {
    pub fn summary(&self) -> String {
        match self {
            Mismatch::TooShort { got, want } => format!(
                "packet too short: {} bytes received, the pattern needs {} nibbles ({} bytes)",
                got / 2,
                want,
                want.div_ceil(2)
            ),
            Mismatch::TooLong { got, want } => format!(
                "packet too long: {} bytes received, the pattern ends with '$' after {} nibbles",
                got / 2,
                want
            ),
            Mismatch::Differs { first, count } => format!(
                "{count} nibble(s) differ, first at byte {} (nibble {first})",
                first / 2
            ),
        }
    }
}

/// Nibbles per diff row: 32 bytes, in groups of 4 bytes.
const ROW: usize = 64;
const GROUP: usize = 8;

/// A row-by-row view of expected against received, `^` under each differing nibble and `+`/`-`
/// under nibbles only one side has. Rows without a difference are elided when the packet is long.
pub fn render_diff(pattern: &Pattern, packet: &[u8]) -> String {
    let got = packet.len() * 2;
    let want = pattern.nibbles.len();
    let total = got.max(want);
    let rows = total.div_ceil(ROW).max(1);
    let mut out = String::new();
    let mut elided = 0;
    for row in 0..rows {
        let (mut exp, mut rec, mut mark) = (String::new(), String::new(), String::new());
        let mut row_differs = false;
        for i in row * ROW..((row + 1) * ROW).min(total) {
            if i > row * ROW && (i - row * ROW) % GROUP == 0 {
                exp.push(' ');
                rec.push(' ');
                mark.push(' ');
            }
            let e = pattern.nibbles.get(i);
            let r = (i < got).then(|| nibble(packet, i));
            exp.push(match e {
                Some(Some(d)) => char::from_digit(u32::from(*d), 16).unwrap_or('?'),
                Some(None) => '*',
                None => ' ',
            });
            rec.push(r.map_or(' ', |d| char::from_digit(u32::from(d), 16).unwrap_or('?')));
            let m = match (e, r) {
                (Some(Some(d)), Some(x)) if *d != x => '^',
                (Some(_), None) => '-',
                (None, Some(_)) if pattern.exact_len => '+',
                _ => ' ',
            };
            row_differs |= m != ' ';
            mark.push(m);
        }
        if rows > 4 && !row_differs {
            elided += 1;
            continue;
        }
        let offset = row * ROW / 2;
        let _ = writeln!(out, "      {offset:04x} expected {}", exp.trim_end());
        let _ = writeln!(out, "           received {}", rec.trim_end());
        if row_differs {
            let _ = writeln!(out, "                    {}", mark.trim_end());
        }
    }
    if elided > 0 {
        let _ = writeln!(
            out,
            "      ({elided} identical row(s) of 32 bytes not shown)"
        );
    }
    out
}

/// A packet as hex, grouped like the diff.
pub fn to_hex(packet: &[u8]) -> String {
    let mut s = String::with_capacity(packet.len() * 2 + packet.len() / 4);
    for (i, b) in packet.iter().enumerate() {
        if i > 0 && i % 4 == 0 {
            s.push(' ');
        }
        let _ = write!(s, "{b:02x}");
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    fn p(text: &str) -> Pattern {
        Pattern::parse(text).unwrap()
    }

    #[test]
    fn dont_care_nibbles_and_prefix_semantics() {
        let pkt = [0x01, 0x02, 0x03, 0x04];
        assert_eq!(p("01020304").check(&pkt), Ok(()));
        assert_eq!(p("0102").check(&pkt), Ok(()), "a pattern is a prefix");
        assert_eq!(p("0*0*0*04").check(&pkt), Ok(()));
        assert_eq!(
            p("0 1 0 2 * * 0 4").check(&pkt),
            Ok(()),
            "spaces are ignored"
        );
        assert_eq!(
            p("010").check(&pkt),
            Ok(()),
            "odd nibble counts compare nibbles"
        );
        assert_eq!(
            p("0102ff04").check(&pkt),
            Err(Mismatch::Differs { first: 4, count: 2 })
        );
        assert_eq!(
            p("0102030405").check(&pkt),
            Err(Mismatch::TooShort { got: 8, want: 10 })
        );
    }

    #[test]
    fn end_marker_requires_exact_length() {
        let pkt = [0xaa, 0xbb, 0xcc];
        assert_eq!(p("aabbcc$").check(&pkt), Ok(()));
        assert_eq!(p("aabb**$").check(&pkt), Ok(()));
        assert_eq!(
            p("aabb $").check(&pkt),
            Err(Mismatch::TooLong { got: 6, want: 4 })
        );
        assert_eq!(p("AABB$").to_hex(), "aabb$");
    }

    #[test]
    fn bad_pattern_characters_are_located() {
        assert_eq!(
            Pattern::parse("0a0b 0g").unwrap_err(),
            (
                6,
                "'g' in expected packet data (hex digits, '*' and a final '$' only)".into()
            )
        );
        assert_eq!(
            Pattern::parse("0a$ 0b").unwrap_err(),
            (4, "'0' after the end marker '$'".into())
        );
    }

    #[test]
    fn diff_marks_differing_missing_and_extra_nibbles() {
        let pat = p("0102**ff 05$");
        let pkt = [0x01, 0x02, 0x03, 0x04, 0x05, 0x06];
        let diff = render_diff(&pat, &pkt);
        assert_eq!(
            diff,
            "      0000 expected 0102**ff 05\n           received 01020304 0506\n                          ^^   ++\n"
        );
        let short = render_diff(&p("01020304"), &[0x01]);
        assert_eq!(
            short,
            "      0000 expected 01020304\n           received 01\n                      ------\n"
        );
    }

    #[test]
    fn long_packets_show_only_rows_with_differences() {
        let mut pkt = vec![0u8; 200];
        let mut text = "00".repeat(200);
        text.replace_range(300..302, "ab");
        pkt[150] = 0xac;
        let diff = render_diff(&p(&text), &pkt);
        assert!(diff.contains("      0080 expected"), "{diff}");
        assert!(!diff.contains("      0000 expected"), "{diff}");
        assert!(
            diff.ends_with("(6 identical row(s) of 32 bytes not shown)\n"),
            "{diff}"
        );
    }
}
