//! `quality = { file = "golden.jsonl", every = 50 }`: golden prompts sent at temperature 0
//! beside a case's load, each with what its answer must hold. The file is read and every line
//! checked when the suite is planned, so a bad line is a suite error before anything runs.

use serde_json::Value;
use std::path::Path;

/// A row's golden prompts and when they are sent.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct Quality {
    /// The file, as the suite wrote it.
    pub file: String,
    /// One golden prompt after every `every` load requests sent; 0: all of them before the load.
    pub every: u64,
    /// The prompts, in file order.
    pub prompts: Vec<Golden>,
}

/// One line of the golden file.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct Golden {
    /// 1-based line in the file.
    pub line: usize,
    /// `prompt` (text) or `messages` (chat messages, sent as given).
    pub input: Input,
    /// What the answer must hold.
    pub expect: Expect,
    /// Sent as the request's `response_format` (a `json_schema` expectation without one asks
    /// for structured output against that schema).
    pub response_format: Option<Value>,
    /// Most tokens the answer may take. (Default: 256)
    pub max_tokens: u64,
}

/// A golden prompt's input.
#[derive(Debug, Clone, PartialEq)]
pub enum Input {
    /// Text: the completions prompt, or one user message on the chat API.
    Prompt(String),
    /// Chat messages as given (the completions API joins their contents, one per line).
    Messages(Vec<Value>),
}

/// What an answer must hold.
#[derive(Debug, Clone)]
pub enum Expect {
    /// The answer contains this text.
    Contains(String),
    /// The answer, trimmed, is this text.
    Equals(String),
    /// The answer matches this regular expression.
    Regex(regex::Regex),
    /// The answer is JSON valid against this schema.
    JsonSchema(Value),
}

impl Input {
    /// The input as one line of text, for reports.
    pub fn text(&self) -> String {
        match self {
            Input::Prompt(p) => p.clone(),
            Input::Messages(m) => {
                m.iter().filter_map(|m| m["content"].as_str()).collect::<Vec<_>>().join("\n")
            }
        }
    }
}

impl Expect {
    /// `contains "Paris"`, as reports say it.
    pub fn describe(&self) -> String {
        match self {
            Expect::Contains(s) => format!("contains {s:?}"),
            Expect::Equals(s) => format!("equals {s:?}"),
            Expect::Regex(r) => format!("matches /{}/", r.as_str()),
            Expect::JsonSchema(s) => format!("JSON valid against {s}"),
        }
    }

    /// Whether `answer` holds; `Err` says how it does not.
    pub fn check(&self, answer: &str) -> Result<(), String> {
        let ok = match self {
            Expect::Contains(s) => answer.contains(s.as_str()),
            Expect::Equals(s) => answer.trim() == s.trim(),
            Expect::Regex(r) => r.is_match(answer),
            Expect::JsonSchema(schema) => {
                let value: Value = serde_json::from_str(answer.trim())
                    .map_err(|e| format!("the answer is not JSON ({e})"))?;
                let validator = jsonschema::validator_for(schema).map_err(|e| format!("schema: {e}"))?;
                if let Some(e) = validator.iter_errors(&value).next() {
                    return Err(format!("the answer breaks the schema at `{}`: {e}", e.instance_path()));
                }
                true
            }
        };
        if ok { Ok(()) } else { Err(format!("expected an answer that {}", self.describe())) }
    }
}

/// Reads and checks a golden file; `Err((line, why))` for the first bad line (line 0: the file
/// itself).
pub fn read(path: &Path) -> Result<Vec<Golden>, (usize, String)> {
    let text = std::fs::read_to_string(path).map_err(|e| (0, format!("cannot read it: {e}")))?;
    let mut prompts = Vec::new();
    for (i, raw) in text.lines().enumerate() {
        if raw.trim().is_empty() {
            continue;
        }
        prompts.push(line(raw).map_err(|why| (i + 1, why))?);
        prompts.last_mut().expect("just pushed").line = i + 1;
    }
    if prompts.is_empty() {
        return Err((0, "it holds no golden prompt".into()));
    }
    Ok(prompts)
}

/// Keys one expectation may use.
const EXPECT_KEYS: &str = "contains, equals, regex or json_schema";

fn line(raw: &str) -> Result<Golden, String> {
    let v: Value = serde_json::from_str(raw).map_err(|e| format!("not a JSON object ({e})"))?;
    let input = match (v.get("prompt"), v.get("messages")) {
        (Some(Value::String(p)), None) => Input::Prompt(p.clone()),
        (None, Some(Value::Array(m))) if !m.is_empty() && m.iter().all(|m| m["content"].is_string()) => {
            Input::Messages(m.clone())
        }
        _ => return Err("give either \"prompt\": text or \"messages\": [{\"role\", \"content\"}, …]".into()),
    };
    let Some(Value::Object(e)) = v.get("expect") else {
        return Err(format!("no \"expect\" object ({EXPECT_KEYS})"));
    };
    if e.len() != 1 {
        return Err(format!("\"expect\" takes exactly one of {EXPECT_KEYS}"));
    }
    let (kind, arg) = e.iter().next().expect("one entry");
    let text = || arg.as_str().map(str::to_string).ok_or_else(|| format!("\"{kind}\" takes a string"));
    let expect = match kind.as_str() {
        "contains" => Expect::Contains(text()?),
        "equals" => Expect::Equals(text()?),
        "regex" => Expect::Regex(regex::Regex::new(&text()?).map_err(|e| format!("bad regex: {e}"))?),
        "json_schema" => {
            jsonschema::validator_for(arg).map_err(|e| format!("bad JSON schema: {e}"))?;
            Expect::JsonSchema(arg.clone())
        }
        other => return Err(format!("unknown expectation \"{other}\" (use {EXPECT_KEYS})")),
    };
    let response_format = match (v.get("response_format"), &expect) {
        (Some(f), _) => Some(f.clone()),
        (None, Expect::JsonSchema(schema)) => Some(serde_json::json!({
            "type": "json_schema",
            "json_schema": { "name": "golden", "schema": schema, "strict": true },
        })),
        (None, _) => None,
    };
    let max_tokens = match v.get("max_tokens") {
        None => 256,
        Some(n) => n.as_u64().filter(|&n| n > 0).ok_or("\"max_tokens\" takes a positive integer")?,
    };
    Ok(Golden { line: 0, input, expect, response_format, max_tokens })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn one(raw: &str) -> Result<Golden, String> {
        line(raw)
    }

    #[test]
    fn each_expectation_checks_its_answer() {
        let g = one(r#"{"prompt": "capital?", "expect": {"contains": "Paris"}}"#).expect("valid");
        assert!(g.expect.check("It is Paris.").is_ok());
        assert_eq!(
            g.expect.check("London").expect_err("wrong"),
            "expected an answer that contains \"Paris\""
        );
        let g = one(r#"{"prompt": "ok?", "expect": {"equals": "OK"}}"#).expect("valid");
        assert!(g.expect.check("  OK\n").is_ok() && g.expect.check("OK!").is_err());
        let g = one(r#"{"prompt": "sum?", "expect": {"regex": "\\b4\\b"}}"#).expect("valid");
        assert!(g.expect.check("it is 4.").is_ok() && g.expect.check("it is 42").is_err());
        let schema = r#"{"prompt": "user?", "expect": {"json_schema": {"type": "object", "required": ["name"], "properties": {"age": {"type": "integer"}}}}}"#;
        let g = one(schema).expect("valid");
        assert!(g.expect.check(r#" {"name": "Ada", "age": 36} "#).is_ok());
        assert!(g.expect.check(r#"{"age": 36}"#).expect_err("no name").contains("name"));
        assert!(g.expect.check(r#"{"name": "Ada", "age": "old"}"#).expect_err("age").contains("/age"));
        assert!(g.expect.check("Ada, 36").expect_err("not json").starts_with("the answer is not JSON"));
        // A schema expectation asks for structured output unless the line says otherwise.
        assert_eq!(g.response_format.expect("asked")["json_schema"]["schema"]["required"][0], "name");
        assert_eq!(g.max_tokens, 256);
    }

    #[test]
    fn a_bad_line_says_what_is_wrong() {
        for (raw, says) in [
            ("not json", "not a JSON object"),
            (r#"{"expect": {"contains": "x"}}"#, "give either \"prompt\""),
            (r#"{"prompt": "p", "messages": [], "expect": {"contains": "x"}}"#, "give either"),
            (r#"{"prompt": "p"}"#, "no \"expect\""),
            (r#"{"prompt": "p", "expect": {"contains": "x", "equals": "y"}}"#, "exactly one"),
            (r#"{"prompt": "p", "expect": {"smells_like": "x"}}"#, "unknown expectation \"smells_like\""),
            (r#"{"prompt": "p", "expect": {"regex": "("}}"#, "bad regex"),
            (r#"{"prompt": "p", "expect": {"json_schema": {"type": "nope"}}}"#, "bad JSON schema"),
            (r#"{"prompt": "p", "expect": {"equals": 3}}"#, "\"equals\" takes a string"),
            (r#"{"prompt": "p", "expect": {"equals": "3"}, "max_tokens": 0}"#, "positive integer"),
        ] {
            let err = one(raw).expect_err(raw);
            assert!(err.contains(says), "{raw}: {err}");
        }
        let dir = std::env::temp_dir().join(format!("slotest-golden-{}", std::process::id()));
        std::fs::create_dir_all(&dir).expect("dir");
        let file = dir.join("g.jsonl");
        std::fs::write(&file, "{\"prompt\": \"a\", \"expect\": {\"contains\": \"a\"}}\n\n{\"prompt\": 1}\n")
            .expect("write");
        let (line, why) = read(&file).expect_err("line 3 is bad");
        assert_eq!(line, 3, "{why}");
        std::fs::write(&file, "\n").expect("write");
        assert_eq!(read(&file).expect_err("empty").0, 0);
        assert_eq!(read(&dir.join("missing.jsonl")).expect_err("missing").0, 0);
        let _ = std::fs::remove_dir_all(&dir);
    }
}
