//! Source text and locations: byte spans → `file:line:col` with the offending line shown.

use std::fmt;
use std::ops::Range;
use std::path::PathBuf;

/// One suite file's text, kept so any later stage can point into it.
#[derive(Debug, Clone)]
pub struct Source {
    /// Where the text came from, as given.
    pub path: PathBuf,
    /// The file's contents.
    pub text: String,
}

impl Source {
    /// Wraps text read from `path`.
    pub fn new(path: impl Into<PathBuf>, text: impl Into<String>) -> Self {
        Self { path: path.into(), text: text.into() }
    }

    /// 1-based line and column (in characters) of a byte offset.
    pub fn line_col(&self, offset: usize) -> (usize, usize) {
        let offset = offset.min(self.text.len());
        let before = &self.text[..floor_char_boundary(&self.text, offset)];
        let line = before.matches('\n').count() + 1;
        let line_start = before.rfind('\n').map_or(0, |i| i + 1);
        let col = before[line_start..].chars().count() + 1;
        (line, col)
    }

    /// A located error at `span`, with an optional hint.
    pub fn error(&self, span: Range<usize>, message: impl Into<String>, hint: Option<String>) -> Located {
        let (line, col) = self.line_col(span.start);
        let line_text = self.text.lines().nth(line - 1).unwrap_or("").to_string();
        let span_text = self.text.get(span.clone()).unwrap_or("");
        let first_line = span_text.lines().next().unwrap_or("");
        let width = first_line.chars().count().max(1);
        Located { path: self.path.clone(), line, col, message: message.into(), hint, line_text, width }
    }
}

fn floor_char_boundary(s: &str, mut i: usize) -> usize {
    while i > 0 && !s.is_char_boundary(i) {
        i -= 1;
    }
    i
}

/// An error pinned to a place in a suite file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Located {
    /// Suite file.
    pub path: PathBuf,
    /// 1-based line.
    pub line: usize,
    /// 1-based column.
    pub col: usize,
    /// What is wrong, a lowercase fragment.
    pub message: String,
    /// How to fix it.
    pub hint: Option<String>,
    /// The offending source line.
    pub line_text: String,
    /// Width of the underline.
    pub width: usize,
}

impl fmt::Display for Located {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let num = self.line.to_string();
        let pad = " ".repeat(num.len());
        writeln!(f, "{}:{}:{}: {}", self.path.display(), self.line, self.col, self.message)?;
        writeln!(f, "{pad} |")?;
        writeln!(f, "{num} | {}", self.line_text)?;
        let caret_pad = " ".repeat(self.col.saturating_sub(1));
        write!(f, "{pad} | {caret_pad}{}", "^".repeat(self.width))?;
        if let Some(hint) = &self.hint {
            write!(f, "\n{pad} = hint: {hint}")?;
        }
        Ok(())
    }
}
