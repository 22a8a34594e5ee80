//! The row keys about what is asked of each answer and of each client: golden prompts
//! (`quality`), fixed prompts kept run to run (`outputs`), a JSON Schema (`schema`), clients
//! that give up (`cancel`). Mirrors the file; `plan` interprets them.

use serde::Deserialize;
use toml::Spanned;

/// `quality = {…}`.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct QualitySpec {
    /// JSON lines of `{"prompt" | "messages", "expect": {…}}`, relative to the suite file.
    pub file: Spanned<String>,
    /// One golden prompt after every N load requests; 0: all of them before the load.
    /// (Default: 0)
    pub every: Option<u64>,
}

/// `cancel = {…}`.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CancelSpec {
    /// The share of requests cancelled: `"10%"` or `0.1`.
    pub share: toml::Value,
    /// Disconnect this long after sending (`"300ms"`).
    pub after: Option<Spanned<String>>,
    /// Disconnect once this many tokens arrived.
    pub after_tokens: Option<u64>,
}

/// `outputs = {…}`.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct OutputsSpec {
    /// Fixed prompts sent after the measurement.
    pub requests: u64,
    /// Most tokens of each answer. (Default: 32)
    pub max_tokens: Option<u64>,
}

/// `schema = {…}`: structured outputs asked of every request of a row (or a class).
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SchemaSpec {
    /// A JSON Schema file, relative to the suite file.
    pub file: Spanned<String>,
    /// The schema's name in `response_format.json_schema.name`. (Default: the file's stem)
    pub name: Option<Spanned<String>>,
    /// `strict` in `response_format.json_schema`. (Default: true)
    pub strict: Option<bool>,
}

/// `tools = {…}`: OpenAI tool definitions every request of a chat row (or a class) offers.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ToolsSpec {
    /// A JSON list of `{"type": "function", "function": {"name", "parameters"}}`, relative to the
    /// suite file.
    pub file: Spanned<String>,
    /// `tool_choice`: `"auto"` or `"required"`. (Default: `"auto"`)
    pub choice: Option<Spanned<String>>,
}

/// `images = {…}`: images every request of a chat or Responses row (or a class) carries —
/// drawn, or read from files a JSON-lines file names.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ImagesSpec {
    /// Images a request carries. (Default: 1)
    pub count: Option<Spanned<u32>>,
    /// Pixels across. (Default: 1024)
    pub width: Option<Spanned<u32>>,
    /// Pixels down. (Default: 768)
    pub height: Option<Spanned<u32>>,
    /// `"jpeg"` or `"png"`. (Default: `"jpeg"`)
    pub format: Option<Spanned<String>>,
    /// The share of images the run has sent before: `"25%"` or `0.25`. (Default: 0)
    pub reuse: Option<toml::Value>,
    /// Lines of `{"image": "cat.jpg"}` or `{"images": ["a.jpg", "b.png"]}` (relative to it), one
    /// a request in turn, instead of drawn images.
    pub file: Option<Spanned<String>>,
}
