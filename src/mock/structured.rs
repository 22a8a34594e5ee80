//! The mock's structured outputs: an answer under `response_format = json_schema` is a JSON
//! document the schema accepts, drawn from the prompt's key, sent a few characters a token, and
//! ending where the document does (finish reason `stop`) — as an engine decoding under a grammar
//! answers. The fault `broken_json` breaks that share of them on purpose: half cut short (not
//! JSON), half with a value of the wrong type.

use serde_json::{Map, Value, json};

/// The schema of a request's `response_format`, if it asks for JSON under one.
pub fn schema_of(body: &Value) -> Option<&Value> {
    let f = &body["response_format"];
    match f["type"].as_str()? {
        "json_schema" => f["json_schema"].get("schema"),
        _ => None,
    }
}

/// The first tool a chat request offers (its name, its parameters) and whether the request
/// requires a call (`tool_choice = "required"`).
pub fn tool_of(body: &Value) -> Option<(String, Value, bool)> {
    let f = &body["tools"].as_array()?.first()?["function"];
    let parameters = f.get("parameters").cloned().unwrap_or(json!({ "type": "object" }));
    Some((f["name"].as_str()?.to_string(), parameters, body["tool_choice"] == "required"))
}

/// The prompt tokens of the tools a chat request offers, as an engine's chat template renders
/// their definitions into the system prompt ahead of the messages: a token for every 4 bytes of
/// their JSON (as BPE tokenizers read JSON), the same tokens for the same tools, so a prefix
/// cache serves them as it serves a real engine's: 125 for the services suite's two tools.
pub fn tools_tokens(body: &Value) -> Vec<u64> {
    let Some(tools) = body["tools"].as_array().filter(|t| !t.is_empty()) else { return Vec::new() };
    let json = serde_json::to_string(tools).unwrap_or_default();
    let fnv = |piece: &[u8]| {
        piece
            .iter()
            .fold(0xcbf2_9ce4_8422_2325_u64, |h, b| (h ^ u64::from(*b)).wrapping_mul(0x0100_0000_01b3))
    };
    json.as_bytes().chunks(4).map(fnv).collect()
}

/// How a structured answer is broken on purpose.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Break {
    /// As the schema asks.
    No,
    /// Cut short: the document's last characters left out.
    Truncated,
    /// A value of the wrong type (a number where a string is asked, or the reverse).
    WrongType,
}

/// The answer's text as tokens: the document (or its broken form) in pieces of up to 4
/// characters, each piece one token.
pub fn answer(schema: &Value, key: u64, broken: Break) -> Vec<String> {
    let mut doc = instance(schema, key, 0);
    if broken == Break::WrongType {
        doc = wrong_type(doc);
    }
    let mut text = doc.to_string();
    if broken == Break::Truncated {
        text.truncate(text.len().saturating_sub(2).max(1));
    }
    let chars: Vec<char> = text.chars().collect();
    chars.chunks(4).map(|c| c.iter().collect()).collect()
}

/// A document the schema accepts (the keywords structured outputs use: `type`, `properties`,
/// `required`, `items`, `enum`, `const`, `anyOf`/`oneOf`, string and number bounds).
fn instance(schema: &Value, key: u64, depth: u32) -> Value {
    let pick = |n: usize| (key.rotate_left(depth * 7) % n.max(1) as u64) as usize;
    if let Some(c) = schema.get("const") {
        return c.clone();
    }
    if let Some(options) = schema.get("enum").and_then(Value::as_array).filter(|o| !o.is_empty()) {
        return options[pick(options.len())].clone();
    }
    if let Some(options) = ["anyOf", "oneOf"]
        .iter()
        .find_map(|k| schema.get(*k).and_then(Value::as_array))
        .filter(|o| !o.is_empty())
    {
        return instance(&options[0], key, depth + 1);
    }
    let ty = match &schema["type"] {
        Value::String(t) => t.as_str(),
        Value::Array(ts) => ts.iter().filter_map(Value::as_str).find(|t| *t != "null").unwrap_or("null"),
        _ if schema.get("properties").is_some() => "object",
        _ => "string",
    };
    match ty {
        "object" => {
            let mut out = Map::new();
            if let Some(props) = schema["properties"].as_object() {
                for (i, (name, sub)) in props.iter().enumerate() {
                    out.insert(name.clone(), instance(sub, key.wrapping_add(i as u64 + 1), depth + 1));
                }
            }
            Value::Object(out)
        }
        "array" => {
            let min = schema["minItems"].as_u64().unwrap_or(1);
            let max = schema["maxItems"].as_u64().unwrap_or(min.max(3)).max(min);
            let n = min + key % (max - min + 1);
            let items = &schema["items"];
            Value::Array((0..n).map(|i| instance(items, key.wrapping_add(i * 31), depth + 1)).collect())
        }
        "integer" | "number" => {
            let low = schema["minimum"].as_i64().unwrap_or(0);
            let high = schema["maximum"].as_i64().unwrap_or(low + 99).max(low);
            json!(low + (key % (high - low + 1) as u64) as i64)
        }
        "boolean" => json!(key.is_multiple_of(2)),
        "null" => Value::Null,
        _ => {
            const WORDS: &[&str] = &["ada", "lovelace", "grace", "hopper", "mock", "engine", "steady"];
            let min = schema["minLength"].as_u64().unwrap_or(1) as usize;
            let max = schema["maxLength"].as_u64().map_or(usize::MAX, |m| m as usize);
            let mut s = WORDS[pick(WORDS.len())].to_string();
            while s.len() < min {
                s.push('x');
            }
            s.truncate(max.max(min));
            json!(s)
        }
    }
}

/// The document with its first scalar replaced by one of another type.
fn wrong_type(doc: Value) -> Value {
    match doc {
        Value::Object(mut m) => {
            if let Some((k, v)) = m.iter().next().map(|(k, v)| (k.clone(), v.clone())) {
                m.insert(k, wrong_type(v));
            }
            Value::Object(m)
        }
        Value::Array(mut a) => {
            if let Some(first) = a.first_mut() {
                *first = wrong_type(first.take());
            }
            Value::Array(a)
        }
        Value::String(_) => json!(12345),
        _ => json!("wrong type"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_answer_follows_the_schema_unless_broken_on_purpose() {
        let schema = json!({"type": "object", "required": ["name", "age", "tags", "kind"],
            "properties": {"name": {"type": "string", "minLength": 2}, "age": {"type": "integer", "minimum": 0, "maximum": 120},
            "tags": {"type": "array", "items": {"type": "string"}, "minItems": 1},
            "kind": {"enum": ["a", "b"]}}, "additionalProperties": false});
        let v = jsonschema::validator_for(&schema).expect("schema");
        let body = json!({"response_format": {"type": "json_schema", "json_schema": {"name": "p", "schema": schema}}});
        assert_eq!(schema_of(&body), Some(&schema));
        for key in 0..50u64 {
            let text: String = answer(&schema, key, Break::No).concat();
            let doc: Value = serde_json::from_str(&text).expect("JSON");
            assert!(v.is_valid(&doc), "{text}");
            let cut: String = answer(&schema, key, Break::Truncated).concat();
            assert!(serde_json::from_str::<Value>(&cut).is_err(), "{cut}");
            let wrong: Value =
                serde_json::from_str(&answer(&schema, key, Break::WrongType).concat()).expect("JSON");
            assert!(!v.is_valid(&wrong), "{wrong}");
        }
        assert!(answer(&schema, 1, Break::No).iter().all(|t| t.chars().count() <= 4));
        assert_eq!(schema_of(&json!({"response_format": {"type": "json_object"}})), None);
    }
}
