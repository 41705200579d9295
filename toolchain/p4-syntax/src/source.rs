//! Preprocessed source text and the map from byte offsets back to the original files, built from
//! the `# LINE "FILE"` markers the C preprocessor leaves in its output.

use std::fmt;

/// A half-open byte range in the preprocessed text.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct Span {
    pub lo: u32,
    pub hi: u32,
}

impl Span {
    pub fn new(lo: usize, hi: usize) -> Span {
        Span {
            lo: lo as u32,
            hi: hi as u32,
        }
    }

    /// The smallest span covering both.
    pub fn to(self, other: Span) -> Span {
        Span {
            lo: self.lo.min(other.lo),
            hi: self.hi.max(other.hi),
        }
    }
}

/// A position in an original (pre-preprocessing) file.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Location {
    pub file: String,
    pub line: u32,
    pub col: u32,
}

impl fmt::Display for Location {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}({}:{})", self.file, self.line, self.col)
    }
}

#[derive(Clone, Debug)]
struct Marker {
    /// Physical (0-based) line of the preprocessed text that the marker describes.
    phys_line: usize,
    file: usize,
    line: u32,
}

/// The text the lexer reads, with its line table and the line markers found in it.
#[derive(Clone, Debug)]
pub struct SourceMap {
    text: String,
    name: String,
    line_starts: Vec<usize>,
    files: Vec<String>,
    markers: Vec<Marker>,
}

impl SourceMap {
    /// `name` is the file reported for text before the first line marker.
    pub fn new(name: &str, text: String) -> SourceMap {
        let mut line_starts = vec![0];
        for (i, b) in text.bytes().enumerate() {
            if b == b'\n' {
                line_starts.push(i + 1);
            }
        }
        let mut map = SourceMap {
            text,
            name: name.to_string(),
            line_starts,
            files: Vec::new(),
            markers: Vec::new(),
        };
        map.scan_markers();
        map
    }

    pub fn text(&self) -> &str {
        &self.text
    }

    pub fn name(&self) -> &str {
        &self.name
    }

    /// Finds `# N "file"` and `#line N "file"` lines; each says the next physical line is line N
    /// of that file.
    fn scan_markers(&mut self) {
        for phys in 0..self.line_starts.len() {
            let line = self.line_text(phys).to_string();
            if let Some((n, file)) = parse_marker(&line) {
                let file_id = match self.files.iter().position(|f| *f == file) {
                    Some(i) => i,
                    None => {
                        self.files.push(file);
                        self.files.len() - 1
                    }
                };
                self.markers.push(Marker {
                    phys_line: phys + 1,
                    file: file_id,
                    line: n,
                });
            }
        }
    }

    fn line_text(&self, phys: usize) -> &str {
        let start = self.line_starts[phys];
        let end = self
            .line_starts
            .get(phys + 1)
            .map(|e| e - 1)
            .unwrap_or(self.text.len());
        self.text[start..end.max(start)].trim_end_matches('\r')
    }

    fn phys_line_of(&self, offset: usize) -> usize {
        match self.line_starts.binary_search(&offset) {
            Ok(i) => i,
            Err(i) => i - 1,
        }
    }

    /// Whether `offset` is the first non-blank character of a line (where a directive may start).
    pub fn at_line_start(&self, offset: usize) -> bool {
        let phys = self.phys_line_of(offset);
        self.text[self.line_starts[phys]..offset]
            .chars()
            .all(|c| c == ' ' || c == '\t')
    }

    /// The original file, line and (1-based, in characters) column of a byte offset.
    pub fn locate(&self, offset: u32) -> Location {
        let offset = (offset as usize).min(self.text.len());
        let phys = self.phys_line_of(offset);
        let start = self.line_starts[phys];
        let col = self.text[start..offset].chars().count() as u32 + 1;
        let idx = self.markers.partition_point(|m| m.phys_line <= phys);
        let (file, line) = if idx == 0 {
            (self.name.clone(), phys as u32 + 1)
        } else {
            let m = &self.markers[idx - 1];
            (
                self.files[m.file].clone(),
                m.line + (phys - m.phys_line) as u32,
            )
        };
        Location { file, line, col }
    }

    /// The text of the line holding `offset`, as the diagnostics show it.
    pub fn line_at(&self, offset: u32) -> &str {
        let offset = (offset as usize).min(self.text.len());
        self.line_text(self.phys_line_of(offset))
    }

    /// The text a span covers.
    pub fn snippet(&self, span: Span) -> &str {
        let lo = (span.lo as usize).min(self.text.len());
        let hi = (span.hi as usize).clamp(lo, self.text.len());
        self.text.get(lo..hi).unwrap_or("")
    }
}

fn parse_marker(line: &str) -> Option<(u32, String)> {
    let rest = line.trim_start().strip_prefix('#')?.trim_start();
    let rest = rest.strip_prefix("line").unwrap_or(rest).trim_start();
    let digits: String = rest.chars().take_while(|c| c.is_ascii_digit()).collect();
    if digits.is_empty() {
        return None;
    }
    let n: u32 = digits.parse().ok()?;
    let rest = rest[digits.len()..].trim_start();
    let rest = rest.strip_prefix('"')?;
    let mut file = String::new();
    let mut chars = rest.chars();
    while let Some(c) = chars.next() {
        match c {
            '"' => return Some((n, file)),
            '\\' => file.push(chars.next()?),
            c => file.push(c),
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn markers_map_lines_back_to_original_files() {
        let text = "# 1 \"a.p4\"\nx\n# 7 \"inc/b.p4\" 1\ny\nz\n# 3 \"a.p4\" 2\nw\n";
        let map = SourceMap::new("pre.p4", text.to_string());
        let at = |s: &str| map.locate(text.find(s).unwrap() as u32);
        assert_eq!(at("x").to_string(), "a.p4(1:1)");
        assert_eq!(at("y").to_string(), "inc/b.p4(7:1)");
        assert_eq!(at("z").to_string(), "inc/b.p4(8:1)");
        assert_eq!(at("w").to_string(), "a.p4(3:1)");
    }

    #[test]
    fn text_without_markers_uses_the_given_name() {
        let map = SourceMap::new("p.p4", "a\n  bc".to_string());
        assert_eq!(map.locate(5).to_string(), "p.p4(2:4)");
        assert_eq!(map.line_at(5), "  bc");
    }
}
