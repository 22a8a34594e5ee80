//! Suite stage: TOML files → [`ParsedSuite`]s (schema structs plus their source text).
//!
//! Reads files and checks syntax and keys; it does not interpret values (that is `plan`'s job)
//! and never touches the network.

mod answers;
mod api;
mod schema;
mod source;
mod tune;

pub use answers::*;
pub use api::Api;
pub use schema::*;
pub use source::{Located, Source};
pub use tune::TuneSpec;

use std::path::{Path, PathBuf};

/// A setup error: bad suite or unreadable file. Exit code 2.
#[derive(Debug, thiserror::Error)]
pub enum SuiteError {
    /// A file or directory could not be read.
    #[error("cannot read {path}: {source}")]
    Io {
        /// The path that failed.
        path: PathBuf,
        /// The OS error.
        source: std::io::Error,
    },
    /// A suite file larger than 16 MiB.
    #[error("{path} is over {} MiB: not a suite (split it, or keep the data in a dataset file)", cap >> 20)]
    TooLarge {
        /// The file.
        path: PathBuf,
        /// The cap, in bytes.
        cap: u64,
    },
    /// A directory held no `*.toml` suite.
    #[error("no suites (*.toml) found in {0}")]
    Empty(PathBuf),
    /// Invalid content, pinned to a location.
    #[error("{0}")]
    Invalid(Box<Located>),
}

impl From<Located> for SuiteError {
    fn from(l: Located) -> Self {
        SuiteError::Invalid(Box::new(l))
    }
}

/// One parsed suite file.
#[derive(Debug)]
pub struct ParsedSuite {
    /// The text, for locating later errors.
    pub source: Source,
    /// The schema structs.
    pub file: SuiteFile,
}

/// Reads every suite under `paths` (files, or directories scanned for `*.toml`, sorted).
pub fn load(paths: &[PathBuf]) -> Result<Vec<ParsedSuite>, SuiteError> {
    let mut files = Vec::new();
    for path in paths {
        files.extend(suite_files(path)?);
    }
    files.iter().map(|p| load_file(p)).collect()
}

/// Lists the suite files a path names: itself, or the `*.toml` files in it.
pub fn suite_files(path: &Path) -> Result<Vec<PathBuf>, SuiteError> {
    let io = |source| SuiteError::Io { path: path.to_path_buf(), source };
    if !path.is_dir() {
        std::fs::metadata(path).map_err(io)?;
        return Ok(vec![path.to_path_buf()]);
    }
    let mut found: Vec<PathBuf> = std::fs::read_dir(path)
        .map_err(io)?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|e| e == "toml"))
        .collect();
    found.sort();
    if found.is_empty() {
        return Err(SuiteError::Empty(path.to_path_buf()));
    }
    Ok(found)
}

/// Reads and parses one file.
pub fn load_file(path: &Path) -> Result<ParsedSuite, SuiteError> {
    use std::io::Read;
    let io = |source| SuiteError::Io { path: path.to_path_buf(), source };
    // Read up to one byte past the cap: `/dev/zero` has no size to check first, and read whole
    // it took memory until there was none (#59).
    let mut bytes = Vec::new();
    std::fs::File::open(path)
        .and_then(|f| f.take(MAX_SUITE_BYTES + 1).read_to_end(&mut bytes))
        .map_err(io)?;
    if bytes.len() as u64 > MAX_SUITE_BYTES {
        return Err(SuiteError::TooLarge { path: path.to_path_buf(), cap: MAX_SUITE_BYTES });
    }
    let text = String::from_utf8(bytes)
        .map_err(|e| io(std::io::Error::new(std::io::ErrorKind::InvalidData, e.utf8_error())))?;
    parse(Source::new(path, text))
}

/// The largest suite file read: 16 MiB (a 50,000-row suite is about 3 MiB).
pub const MAX_SUITE_BYTES: u64 = 16 << 20;

/// Parses suite text; syntax errors and unknown keys come back located.
pub fn parse(source: Source) -> Result<ParsedSuite, SuiteError> {
    match toml::from_str::<SuiteFile>(&source.text) {
        Ok(file) => Ok(ParsedSuite { source, file }),
        Err(e) => {
            let span = e.span().unwrap_or(0..0);
            let message = first_line(e.message());
            let hint = hint_for(&message);
            Err(source.error(span, message, hint).into())
        }
    }
}

fn first_line(msg: &str) -> String {
    msg.lines().next().unwrap_or(msg).trim().to_string()
}

/// For `unknown field `x`, expected one of `a`, `b``: the closest known key.
fn did_you_mean(message: &str) -> Option<String> {
    let mut ticks = message.split('`').skip(1).step_by(2);
    let unknown = ticks.next()?;
    ticks
        .map(|k| (edit_distance(unknown, k), k))
        .filter(|(d, k)| *d <= 2.max(k.len() / 3))
        .min()
        .map(|(_, k)| format!("did you mean `{k}`? every key is listed in docs/suite-format.md"))
}

fn edit_distance(a: &str, b: &str) -> usize {
    let b: Vec<char> = b.chars().collect();
    let mut row: Vec<usize> = (0..=b.len()).collect();
    for (i, ca) in a.chars().enumerate() {
        let mut prev = row[0];
        row[0] = i + 1;
        for (j, cb) in b.iter().enumerate() {
            let cur = row[j + 1];
            row[j + 1] = (prev + usize::from(ca != *cb)).min(row[j] + 1).min(cur + 1);
            prev = cur;
        }
    }
    row[b.len()]
}

fn hint_for(message: &str) -> Option<String> {
    if let Some(h) = message.starts_with("unknown field").then(|| did_you_mean(message)).flatten() {
        return Some(h);
    }
    let hint = if message.starts_with("unknown field") {
        "check the spelling; every key is listed in docs/suite-format.md"
    } else if message.contains("did not match any variant") {
        "a token length is a number (256) or a table like { dist = \"lognormal\", mean = 500, sigma = 0.8 }"
    } else if message.starts_with("unknown variant") {
        "use one of the listed values"
    } else if message.contains("missing field") {
        "add the field; see docs/suite-format.md"
    } else if message.starts_with("invalid type") {
        "check the value's type: numbers unquoted, durations quoted (\"2s\")"
    } else {
        "see docs/suite-format.md for the format"
    };
    Some(hint.to_string())
}
