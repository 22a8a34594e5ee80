//! Tool calls as load (`tools = { file = "tools.json", choice = "auto" }`): the OpenAI tool
//! definitions every request of a chat row offers, read and compiled once, and the check each
//! call the engine makes is put to when its request ends (its name one of the tools, its
//! arguments JSON its tool's `parameters` accept).

use serde::Serialize;
use std::collections::BTreeMap;
use std::sync::Arc;

/// `tool_choice`: whether the model may answer in text (`auto`) or must call a tool.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Choice {
    /// The model decides.
    Auto,
    /// The model must call a tool.
    Required,
}

/// A row's (or a class's) tools. Part of the row's definition by the tools and the choice.
#[derive(Clone, Serialize)]
pub struct Tools {
    /// The file as the suite names it.
    #[serde(skip)]
    pub file: String,
    /// The tool definitions, as sent in `tools`.
    pub tools: Arc<serde_json::Value>,
    /// `tool_choice`.
    pub choice: Choice,
    #[serde(skip)]
    parameters: Arc<BTreeMap<String, jsonschema::Validator>>,
}

impl std::fmt::Debug for Tools {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Tools")
            .field("file", &self.file)
            .field("choice", &self.choice)
            .finish_non_exhaustive()
    }
}

impl PartialEq for Tools {
    fn eq(&self, other: &Tools) -> bool {
        (&self.tools, self.choice) == (&other.tools, other.choice)
    }
}

const HINT: &str = "a JSON list of OpenAI tools: [{\"type\": \"function\", \"function\": {\"name\": \"get_weather\", \
\"parameters\": {\"type\": \"object\", \"properties\": {\"city\": {\"type\": \"string\"}}}}}]; paths are relative to the suite file";

impl super::Resolver<'_> {
    /// `tools = { file, choice }` on a route `api`: the tools read and compiled, or the file's
    /// line and what is wrong with it; tools only on the chat route.
    pub(super) fn tools(
        &self,
        spec: Option<&toml::Spanned<crate::suite::ToolsSpec>>,
        api: crate::suite::Api,
    ) -> super::R<Option<Arc<Tools>>> {
        let Some(spec) = spec.map(toml::Spanned::get_ref) else { return Ok(None) };
        let span = spec.file.span();
        if api != crate::suite::Api::Chat {
            return self.err(
                span,
                "tools are offered on the chat route",
                "[target] api = \"chat\" (or a mix class with api = \"chat\")",
            );
        }
        let choice = match spec.choice.as_ref().map(|c| c.get_ref().as_str()) {
            None | Some("auto") => Choice::Auto,
            Some("required") => Choice::Required,
            Some(other) => {
                let at = spec.choice.as_ref().map_or(span.clone(), toml::Spanned::span);
                return self.err(at, format!("tool choice `{other}` is not auto or required"), HINT);
            }
        };
        let file = self.expand(&spec.file)?;
        let text = match std::fs::read_to_string(self.relative(&file)) {
            Ok(t) => t,
            Err(e) => return self.err(span, format!("tools file {file}: {e}"), HINT),
        };
        match Tools::parse(&file, &text, choice) {
            Ok(t) => Ok(Some(Arc::new(t))),
            Err((0, why)) => self.err(span, format!("tools file {file}: {why}"), HINT),
            Err((line, why)) => self.err(span, format!("{file}:{line}: {why}"), HINT),
        }
    }
}

/// One tool call as the engine streamed it, reassembled: its id, its function's name and its
/// arguments (the pieces joined).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Call {
    /// `id` (the first piece's).
    pub id: String,
    /// `function.name`.
    pub name: String,
    /// `function.arguments`, every piece in order.
    pub arguments: String,
}

impl Tools {
    /// The tools in `text` (read from `file`), each one's `parameters` compiled: `Err((line,
    /// why))` where it is not JSON (its line) or not tool definitions (line 0).
    pub fn parse(file: &str, text: &str, choice: Choice) -> Result<Tools, (usize, String)> {
        let tools: serde_json::Value =
            serde_json::from_str(text).map_err(|e| (e.line(), format!("not JSON: {e}")))?;
        let list =
            tools.as_array().filter(|l| !l.is_empty()).ok_or((0, "not a list of tools".to_string()))?;
        let mut parameters = BTreeMap::new();
        for (k, tool) in list.iter().enumerate() {
            let f = &tool["function"];
            let Some(name) = f["name"].as_str().filter(|_| tool["type"] == "function") else {
                return Err((
                    0,
                    format!("tool {k} is not {{\"type\": \"function\", \"function\": {{\"name\": …}}}}"),
                ));
            };
            let schema = f.get("parameters").cloned().unwrap_or(serde_json::json!({ "type": "object" }));
            if let Err(e) = jsonschema::meta::validate(&schema) {
                return Err((0, format!("tool `{name}`'s parameters are not a valid JSON Schema: {e}")));
            }
            let v = jsonschema::validator_for(&schema).map_err(|e| (0, format!("tool `{name}`: {e}")))?;
            if parameters.insert(name.to_string(), v).is_some() {
                return Err((0, format!("tool `{name}` is defined twice")));
            }
        }
        Ok(Tools { file: file.to_string(), tools: Arc::new(tools), choice, parameters: Arc::new(parameters) })
    }

    /// Why `call` breaks its tool (an unknown name, arguments that are not JSON or that its
    /// parameters refuse); `None` when it holds.
    pub fn check(&self, call: &Call) -> Option<String> {
        let Some(v) = self.parameters.get(&call.name) else {
            return Some(format!("calls `{}`, which is not one of the tools", call.name));
        };
        let args: serde_json::Value = match serde_json::from_str(call.arguments.trim()) {
            Ok(a) => a,
            Err(e) => {
                let shown: String = call.arguments.chars().take(60).collect();
                return Some(format!("`{}`'s arguments are not JSON ({e}): `{shown}`", call.name));
            }
        };
        v.validate(&args).err().map(|e| {
            format!("`{}`'s arguments break its parameters at `{}`: {e}", call.name, e.instance_path())
        })
    }
}

/// Most calls one answer's are kept of (a server's `index` is not trusted with memory).
pub const MAX_CALLS: usize = 64;

/// Most bytes of a call's name and arguments kept: past it the call is cut (its arguments then
/// are not JSON, and it is broken), never a growing buffer.
pub const MAX_CALL_BYTES: usize = 1 << 20;

/// A stream's tool calls, assembled from `delta.tool_calls` pieces as they come: each piece
/// names its call by `index`; the first carries its `id` and `function.name`, every piece some
/// of `function.arguments`. A piece for a call past [`MAX_CALLS`] is dropped.
pub fn assemble(calls: &mut Vec<Call>, pieces: &serde_json::Value) {
    for piece in pieces.as_array().into_iter().flatten() {
        let at = piece["index"].as_u64().map_or(calls.len().saturating_sub(1), |i| i as usize);
        if at >= MAX_CALLS {
            continue;
        }
        if calls.len() <= at {
            calls.resize_with(at + 1, Call::default);
        }
        let call = &mut calls[at];
        if call.name.len() + call.arguments.len() > MAX_CALL_BYTES {
            continue;
        }
        if let Some(id) = piece["id"].as_str().filter(|_| call.id.is_empty()) {
            call.id = id.to_string();
        }
        if let Some(name) = piece["function"]["name"].as_str() {
            call.name.push_str(name);
        }
        if let Some(args) = piece["function"]["arguments"].as_str() {
            call.arguments.push_str(args);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const WEATHER: &str = r#"[{"type": "function", "function": {"name": "get_weather",
        "parameters": {"type": "object", "required": ["city"], "properties": {"city": {"type": "string"},
        "unit": {"enum": ["c", "f"]}}, "additionalProperties": false}}}]"#;

    #[test]
    fn streamed_pieces_reassemble_byte_for_byte_and_are_checked() {
        let t = Tools::parse("tools.json", WEATHER, Choice::Auto).expect("tools");
        let mut calls = Vec::new();
        let pieces = [
            r#"[{"index": 0, "id": "call_1", "type": "function", "function": {"name": "get_weather", "arguments": ""}}]"#,
            r#"[{"index": 0, "function": {"arguments": "{\"ci"}}]"#,
            r#"[{"index": 0, "function": {"arguments": "ty\": \"Lagos\"}"}}]"#,
            r#"[{"index": 1, "id": "call_2", "function": {"name": "get_weather", "arguments": "{\"city\": 7}"}}]"#,
        ];
        for p in pieces {
            assemble(&mut calls, &serde_json::from_str(p).expect("json"));
        }
        assert_eq!(
            calls[0],
            Call {
                id: "call_1".into(),
                name: "get_weather".into(),
                arguments: r#"{"city": "Lagos"}"#.into()
            }
        );
        assert_eq!(t.check(&calls[0]), None);
        let why = t.check(&calls[1]).expect("a number for a string");
        assert!(why.contains("`/city`"), "{why}");
        let cut = Call { name: "get_weather".into(), arguments: r#"{"city": "La"#.into(), ..Call::default() };
        assert!(t.check(&cut).expect("cut").contains("not JSON"));
        let other = Call { name: "send_mail".into(), arguments: "{}".into(), ..Call::default() };
        assert!(t.check(&other).expect("unknown").contains("not one of the tools"));
        // A hostile index or an endless argument stays bounded.
        let mut calls = Vec::new();
        assemble(&mut calls, &serde_json::json!([{ "index": 1u64 << 40, "function": { "name": "f" } }]));
        assert!(calls.is_empty());
        let big = "x".repeat(MAX_CALL_BYTES);
        for _ in 0..3 {
            assemble(&mut calls, &serde_json::json!([{ "index": 0, "function": { "arguments": big } }]));
        }
        assert!(calls[0].arguments.len() <= 2 * MAX_CALL_BYTES);
    }

    #[test]
    fn a_file_that_is_not_tools_says_why() {
        assert_eq!(Tools::parse("t.json", "[\n{\"type\": 1,}\n]", Choice::Auto).expect_err("json").0, 2);
        assert!(Tools::parse("t.json", "{}", Choice::Auto).expect_err("list").1.contains("not a list"));
        let bad = r#"[{"type": "function", "function": {"name": "f", "parameters": {"type": "objekt"}}}]"#;
        assert!(
            Tools::parse("t.json", bad, Choice::Auto).expect_err("schema").1.contains("`f`'s parameters")
        );
        let twice = r#"[{"type": "function", "function": {"name": "f"}}, {"type": "function", "function": {"name": "f"}}]"#;
        assert!(Tools::parse("t.json", twice, Choice::Auto).expect_err("twice").1.contains("twice"));
    }
}
