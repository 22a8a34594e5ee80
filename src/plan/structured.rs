//! Structured outputs as load (`schema = { file = "person.json" }`): the JSON Schema every
//! request of a row asks its answer to follow, read and compiled once when the suite is planned,
//! and the check each answer is put to when it ends.

use serde::Serialize;
use std::sync::Arc;

/// A row's (or a class's) JSON Schema, sent as `response_format` and checked against each
/// answer. Part of the row's definition by its name, strictness and the schema itself (not by
/// its path: the same schema moved is the same workload).
#[derive(Clone, Serialize)]
pub struct Schema {
    /// The file as the suite names it (reports show it).
    #[serde(skip)]
    pub file: String,
    /// `response_format.json_schema.name`: the file's stem unless the suite names it.
    pub name: String,
    /// `response_format.json_schema.strict`.
    pub strict: bool,
    /// The schema.
    pub schema: Arc<serde_json::Value>,
    /// The request's `response_format`, made once.
    #[serde(skip)]
    pub response_format: Arc<serde_json::Value>,
    /// A Responses API request's `text` (`{"format": {"type": "json_schema", …}}`), made once.
    #[serde(skip)]
    pub text_format: Arc<serde_json::Value>,
    #[serde(skip)]
    validator: Arc<jsonschema::Validator>,
}

impl std::fmt::Debug for Schema {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Schema").field("file", &self.file).field("name", &self.name).finish_non_exhaustive()
    }
}

impl PartialEq for Schema {
    fn eq(&self, other: &Schema) -> bool {
        (&self.name, self.strict, &self.schema) == (&other.name, other.strict, &other.schema)
    }
}

/// How a [`Checked::Broken`] answer that is not JSON at all begins.
pub const NOT_JSON: &str = "not JSON";

/// How one answer held against its schema.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Checked {
    /// JSON, and valid against the schema.
    Valid,
    /// Not JSON at all (a truncated document, text around it), or JSON the schema refuses: why,
    /// in a line.
    Broken(Box<str>),
}

impl Schema {
    /// The schema in `text` (read from `file`), compiled: `Err((line, why))` where it is not
    /// JSON (its line, 1-based) or not a JSON Schema (line 0).
    pub fn parse(
        file: &str,
        text: &str,
        name: Option<String>,
        strict: bool,
    ) -> Result<Schema, (usize, String)> {
        let schema: serde_json::Value =
            serde_json::from_str(text).map_err(|e| (e.line(), format!("not JSON: {e}")))?;
        if !schema.is_object() && !schema.is_boolean() {
            return Err((0, "a JSON Schema is an object (or true/false)".into()));
        }
        if let Err(e) = jsonschema::meta::validate(&schema) {
            return Err((0, format!("not a valid JSON Schema: {e} at `{}`", e.instance_path())));
        }
        let validator =
            jsonschema::validator_for(&schema).map_err(|e| (0, format!("not a usable JSON Schema: {e}")))?;
        let stem = std::path::Path::new(file).file_stem().map(|s| s.to_string_lossy().into_owned());
        let name = name.or(stem).unwrap_or_else(|| "schema".into());
        // `response_format.json_schema.name`: letters, digits, `_` and `-` (OpenAI's rule).
        let name: String =
            name.chars().map(|c| if c.is_ascii_alphanumeric() || c == '-' { c } else { '_' }).collect();
        let response_format = Arc::new(serde_json::json!({
            "type": "json_schema",
            "json_schema": { "name": name, "schema": schema, "strict": strict },
        }));
        let text_format = Arc::new(serde_json::json!({
            "format": { "type": "json_schema", "name": name, "schema": schema, "strict": strict },
        }));
        let (schema, validator) = (Arc::new(schema), Arc::new(validator));
        Ok(Schema { file: file.to_string(), name, strict, schema, response_format, text_format, validator })
    }

    /// Checks one answer's text (reasoning in `<think>` tags before it left out).
    pub fn check(&self, answer: &str) -> Checked {
        let answer = answer.rsplit_once("</think>").map_or(answer, |(_, after)| after);
        let value: serde_json::Value = match serde_json::from_str(answer.trim()) {
            Ok(v) => v,
            Err(e) => {
                let shown: String = answer.trim().chars().take(60).collect();
                return Checked::Broken(format!("{NOT_JSON} ({e}): `{shown}`").into());
            }
        };
        match self.validator.validate(&value) {
            Ok(()) => Checked::Valid,
            Err(e) => {
                let at = e.instance_path().to_string();
                let at = if at.is_empty() { "/".to_string() } else { at };
                Checked::Broken(format!("breaks the schema at `{at}`: {e}").into())
            }
        }
    }
}

/// The workload without its JSON Schemas (the row's and its classes'): the schema is not a
/// case's identity, so the same row with and without one is an A/B of guided decoding (the
/// fingerprint's `workload.schema` says which side had it).
pub(super) fn without_schemas(w: &super::Workload) -> super::Workload {
    let mut w = w.clone();
    w.schema = None;
    for c in &mut w.mix {
        c.workload.schema = None;
    }
    w
}

/// The JSON Schemas a workload's requests ask answers to follow, as the fingerprint names them
/// (`person 1a2b3c4d5e6f7a8b`, and each class's own), or `none`.
pub fn schemas_id(w: &super::Workload) -> String {
    let id = |s: &Schema| format!("{} {:016x}", s.name, super::fnv1a(s.schema.to_string().as_bytes()));
    let mut ids: Vec<String> = w.schema.as_deref().map(id).into_iter().collect();
    ids.extend(w.mix.iter().filter_map(|c| c.workload.schema.as_deref().map(id)));
    ids.dedup();
    if ids.is_empty() { "none".into() } else { ids.join(", ") }
}

#[cfg(test)]
mod tests {
    use super::*;

    const PERSON: &str = r#"{"type": "object", "required": ["name", "age"],
        "properties": {"name": {"type": "string"}, "age": {"type": "integer", "minimum": 0}},
        "additionalProperties": false}"#;

    #[test]
    fn an_answer_is_valid_not_json_or_against_the_schema() {
        let s = Schema::parse("schemas/person.json", PERSON, None, true).expect("valid");
        assert_eq!(s.name, "person");
        assert_eq!(s.check(r#" {"name": "Ada", "age": 36} "#), Checked::Valid);
        let Checked::Broken(why) = s.check(r#"{"name": "Ada", "age": "#) else { panic!("truncated") };
        assert!(why.starts_with("not JSON"), "{why}");
        let Checked::Broken(why) = s.check(r#"{"name": "Ada", "age": -1}"#) else { panic!("minimum") };
        assert!(why.contains("`/age`"), "{why}");
        let Checked::Broken(why) = s.check(r#"{"name": "Ada"}"#) else { panic!("required") };
        assert!(why.contains("`/`") && why.contains("age"), "{why}");
        assert_eq!(s.response_format["json_schema"]["schema"]["required"][1], "age");
    }

    #[test]
    fn a_file_that_is_not_a_schema_says_where() {
        let (line, why) =
            Schema::parse("p.json", "{\n\"type\": \"object\",\n}", None, true).expect_err("JSON");
        assert_eq!(line, 3, "{why}");
        let (line, why) = Schema::parse("p.json", r#"{"type": "nope"}"#, None, true).expect_err("schema");
        assert_eq!(line, 0);
        assert!(why.contains("not a valid JSON Schema"), "{why}");
        assert!(Schema::parse("p.json", "[1]", None, true).is_err());
        assert_eq!(
            Schema::parse("a b.json", "true", Some("my schema".into()), false).expect("ok").name,
            "my_schema"
        );
    }
}
