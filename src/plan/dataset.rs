//! Datasets a row can draw from: prompt files (ShareGPT JSON, JSONL) and length traces.
//!
//! Loaded once at plan time, so a bad file is a suite error before any traffic. A trace holds
//! arrival times and lengths only — no prompt text ever leaves production; prompts are
//! synthesized to the logged lengths.

use serde::{Deserialize, Serialize};
use std::path::Path;

/// One prompt of a prompt file.
#[derive(Debug, Clone, PartialEq)]
pub struct DatasetPrompt {
    /// The text sent.
    pub text: String,
    /// Output tokens for this prompt, when the file says.
    pub output_tokens: Option<u64>,
}

/// One logged request of a trace.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct TraceEntry {
    /// Seconds after the trace's first request, before the speed factor.
    pub at: f64,
    /// Logged prompt tokens.
    pub input_tokens: u64,
    /// Logged output tokens.
    pub output_tokens: u64,
}

/// What a dataset holds.
#[derive(Debug, Clone, PartialEq)]
pub enum Content {
    /// Prompts, used in file order.
    Prompts(Vec<DatasetPrompt>),
    /// Arrivals and lengths, replayed on their own clock.
    Trace {
        /// Entries in arrival order.
        entries: Vec<TraceEntry>,
        /// Replay speed factor (2.0 = twice as fast).
        speed: f64,
        /// A prefix-tree trace's blocks (`mooncake`): each entry's prompt is its blocks' text.
        blocks: Option<Blocks>,
    },
}

/// The prompt blocks of a prefix-tree trace (Mooncake's `hash_ids`): entry i's prompt is the
/// text of `ids[i]` in order, each block `block_tokens` long (the last one cut to the entry's
/// length). The same id is the same text within a run; different ids share nothing.
#[derive(Debug, Clone, PartialEq)]
pub struct Blocks {
    /// Tokens each id stands for.
    pub block_tokens: u64,
    /// Each entry's block ids, in prompt order.
    pub ids: Vec<Vec<u64>>,
}

impl Blocks {
    /// The ids entry `i` of `input_tokens` tokens uses, each with its length in tokens.
    pub fn of(&self, i: usize, input_tokens: u64) -> Vec<(u64, u64)> {
        let b = self.block_tokens;
        let ids = self.ids.get(i).map_or(&[][..], Vec::as_slice);
        ids.iter()
            .enumerate()
            .map(|(k, id)| (*id, input_tokens.saturating_sub(k as u64 * b).min(b)))
            .take_while(|(_, n)| *n > 0)
            .collect()
    }

    /// The trace's own reuse over the entries `measured` (indices): the share of their prompt
    /// tokens in blocks that an earlier entry (any, warmup included) had already sent. A block
    /// an earlier entry sent only in part counts for what it sent.
    pub fn reuse(&self, entries: &[TraceEntry], measured: impl Iterator<Item = u64>) -> Option<f64> {
        let mut wanted: Vec<usize> = measured.filter_map(|i| usize::try_from(i).ok()).collect();
        wanted.sort_unstable();
        let last = *wanted.last()?;
        let mut seen: std::collections::HashMap<u64, u64> = std::collections::HashMap::new();
        let (mut reused, mut total, mut w) = (0u64, 0u64, 0usize);
        for (i, e) in entries.iter().enumerate().take(last + 1) {
            let blocks = self.of(i, e.input_tokens);
            if wanted.get(w) == Some(&i) {
                w += 1;
                total += e.input_tokens;
                reused +=
                    blocks.iter().map(|(id, n)| seen.get(id).map_or(0, |had| (*had).min(*n))).sum::<u64>();
            }
            for (id, n) in blocks {
                let had = seen.entry(id).or_insert(0);
                *had = (*had).max(n);
            }
        }
        (total > 0).then(|| reused as f64 / total as f64)
    }
}

/// A loaded dataset.
#[derive(Debug, Clone, PartialEq)]
pub struct Dataset {
    /// The path as written in the suite.
    pub path: String,
    /// `sharegpt`, `jsonl` or `trace`.
    pub format: String,
    /// FNV-1a of the file's bytes: a changed file is a changed case definition.
    pub hash: u64,
    /// The data.
    pub content: Content,
}

/// A dataset by its identity: `path`, `format`, `hash` of its content, `entries`, a trace's
/// `speed`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct DatasetRef {
    /// As the suite names it.
    pub path: String,
    /// `sharegpt`, `jsonl`, `trace`…
    pub format: String,
    /// FNV-1a of the content, hex.
    pub hash: String,
    /// Prompts or trace entries.
    pub entries: usize,
    /// A trace's speed factor.
    pub speed: Option<f64>,
}

impl Serialize for Dataset {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        self.identity().serialize(s)
    }
}

impl Dataset {
    /// What reports and the definition hash record of it: path, format, content hash, size.
    pub fn identity(&self) -> DatasetRef {
        let (entries, speed) = match &self.content {
            Content::Prompts(p) => (p.len(), None),
            Content::Trace { entries, speed, .. } => (entries.len(), Some(*speed)),
        };
        DatasetRef {
            path: self.path.clone(),
            format: self.format.clone(),
            hash: format!("{:016x}", self.hash),
            entries,
            speed,
        }
    }

    /// Number of entries.
    pub fn len(&self) -> usize {
        match &self.content {
            Content::Prompts(p) => p.len(),
            Content::Trace { entries, .. } => entries.len(),
        }
    }

    /// True when the file held no usable entry.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Mean arrival rate of a trace at its replay speed.
    pub fn trace_rate(&self) -> Option<f64> {
        match &self.content {
            Content::Trace { entries, speed, .. } => {
                let span = entries.last().map_or(0.0, |e| e.at);
                Some(if span > 0.0 { (entries.len() as f64 - 1.0).max(1.0) / span * speed } else { 1.0 })
            }
            Content::Prompts(_) => None,
        }
    }
}

/// Reads `path` (relative to `base`, the suite's folder) as `format`.
pub fn load(
    base: &Path,
    path: &str,
    format: &str,
    (speed, time_unit_ms): (f64, bool),
    block_tokens: u64,
) -> Result<Dataset, String> {
    let full = if Path::new(path).is_absolute() { path.into() } else { base.join(path) };
    let bytes = std::fs::read(&full).map_err(|e| format!("cannot read dataset {}: {e}", full.display()))?;
    let text = String::from_utf8(bytes).map_err(|_| format!("dataset {} is not UTF-8", full.display()))?;
    let shown = full.display().to_string();
    let content = match format {
        "sharegpt" => Content::Prompts(sharegpt(&text).map_err(|e| format!("{shown}: {e}"))?),
        "jsonl" => Content::Prompts(jsonl_prompts(&text).map_err(|e| format!("{shown}:{e}"))?),
        "trace" => Content::Trace {
            entries: trace(&text, if time_unit_ms { 1e-3 } else { 1.0 })
                .map_err(|e| format!("{shown}:{e}"))?,
            speed,
            blocks: None,
        },
        "mooncake" => {
            let entries =
                trace(&text, if time_unit_ms { 1e-3 } else { 1.0 }).map_err(|e| format!("{shown}:{e}"))?;
            let ids = hash_ids(&text, block_tokens).map_err(|e| format!("{shown}:{e}"))?;
            Content::Trace { entries, speed, blocks: Some(Blocks { block_tokens, ids }) }
        }
        other => return Err(format!("unknown dataset format `{other}` (sharegpt, jsonl, trace, mooncake)")),
    };
    let ds = Dataset {
        path: path.to_string(),
        format: format.to_string(),
        hash: super::fnv1a(text.as_bytes()),
        content,
    };
    if ds.is_empty() {
        return Err(format!("dataset {shown} has no usable entries"));
    }
    Ok(ds)
}

/// ShareGPT: `[{"conversations": [{"from": "human", "value": …}, {"from": "gpt", …}]}]`; the
/// first human turn of each conversation is the prompt.
pub fn sharegpt(text: &str) -> Result<Vec<DatasetPrompt>, String> {
    let v: serde_json::Value = serde_json::from_str(text).map_err(|e| format!("{e}"))?;
    let items = v.as_array().ok_or("a ShareGPT file is a JSON array of conversations")?;
    let mut out = Vec::new();
    for item in items {
        let turns = item.get("conversations").or_else(|| item.get("conversation")).and_then(|c| c.as_array());
        let first_human = turns.into_iter().flatten().find(|t| {
            matches!(t.get("from").or_else(|| t.get("role")).and_then(|f| f.as_str()), Some("human" | "user"))
        });
        let text =
            first_human.and_then(|t| t.get("value").or_else(|| t.get("content"))).and_then(|v| v.as_str());
        if let Some(text) = text.filter(|t| !t.trim().is_empty()) {
            out.push(DatasetPrompt { text: text.to_string(), output_tokens: None });
        }
    }
    Ok(out)
}

fn lines(text: &str) -> impl Iterator<Item = (usize, Result<serde_json::Value, String>)> {
    text.lines().enumerate().filter(|(_, l)| !l.trim().is_empty()).map(|(i, l)| {
        (i + 1, serde_json::from_str::<serde_json::Value>(l).map_err(|e| format!("{}: {e}", i + 1)))
    })
}

/// JSONL prompts: `{"prompt": "…", "output_tokens": 128}` per line (`output_tokens` optional).
pub fn jsonl_prompts(text: &str) -> Result<Vec<DatasetPrompt>, String> {
    let mut out = Vec::new();
    for (n, v) in lines(text) {
        let v = v?;
        let prompt = v.get("prompt").or_else(|| v.get("text")).and_then(|p| p.as_str());
        let Some(prompt) = prompt else { return Err(format!("{n}: no `prompt` string")) };
        let output_tokens = match v.get("output_tokens") {
            None => None,
            Some(o) => Some(o.as_u64().filter(|x| *x > 0).ok_or(format!("{n}: bad `output_tokens`"))?),
        };
        out.push(DatasetPrompt { text: prompt.to_string(), output_tokens });
    }
    Ok(out)
}

/// Trace JSONL: `{"timestamp": 0.25, "input_tokens": 812, "output_tokens": 95}` per line.
/// Also reads Mooncake's `input_length` / `output_length` and Azure's `ContextTokens` /
/// `GeneratedTokens`. Timestamps must not decrease.
pub fn trace(text: &str, unit_s: f64) -> Result<Vec<TraceEntry>, String> {
    let field = |v: &serde_json::Value, names: &[&str]| names.iter().find_map(|k| v.get(*k)).cloned();
    let mut out: Vec<TraceEntry> = Vec::new();
    let mut t0 = None;
    for (n, v) in lines(text) {
        let v = v?;
        let ts = field(&v, &["timestamp", "time", "arrival", "TIMESTAMP"])
            .and_then(|t| t.as_f64())
            .filter(|t| t.is_finite() && *t >= 0.0)
            .ok_or(format!("{n}: no numeric `timestamp`"))?;
        let count = |names: &[&str], what: &str| {
            field(&v, names)
                .and_then(|x| x.as_u64())
                .filter(|x| *x > 0)
                .ok_or(format!("{n}: no positive `{what}`"))
        };
        let input_tokens = count(&["input_tokens", "input_length", "ContextTokens"], "input_tokens")?;
        let output_tokens = count(&["output_tokens", "output_length", "GeneratedTokens"], "output_tokens")?;
        let base = *t0.get_or_insert(ts);
        let at = (ts - base) * unit_s;
        if out.last().is_some_and(|p| at < p.at) {
            return Err(format!("{n}: timestamps go backwards"));
        }
        out.push(TraceEntry { at, input_tokens, output_tokens });
    }
    Ok(out)
}

/// Mooncake's `hash_ids` of every line: one id per `block_tokens` of the line's input (the last
/// block may be partial), so a line needs at least ⌈input_length / block_tokens⌉ of them.
fn hash_ids(text: &str, block_tokens: u64) -> Result<Vec<Vec<u64>>, String> {
    let mut out = Vec::new();
    for (n, v) in lines(text) {
        let v = v?;
        let ids: Option<Vec<u64>> = v
            .get("hash_ids")
            .and_then(|h| h.as_array())
            .map(|a| a.iter().filter_map(|x| x.as_u64()).collect());
        let ids = ids.ok_or(format!("{n}: no `hash_ids` array of block ids"))?;
        let input = ["input_length", "input_tokens"].iter().find_map(|k| v.get(*k)).and_then(|x| x.as_u64());
        let need = input.unwrap_or(0).div_ceil(block_tokens);
        if (ids.len() as u64) < need {
            return Err(format!(
                "{n}: {} hash_ids cover {} tokens, not the line's {} (block_tokens = {block_tokens})",
                ids.len(),
                ids.len() as u64 * block_tokens,
                input.unwrap_or(0)
            ));
        }
        out.push(ids);
    }
    Ok(out)
}

impl super::Resolver<'_> {
    /// `dataset = { path, format, speed, time_unit, block_tokens }`, read and checked.
    pub(super) fn dataset(&self, ds: &toml::Spanned<crate::suite::DatasetSpec>) -> super::R<Dataset> {
        let spec = ds.get_ref();
        let speed = spec.speed.unwrap_or(1.0);
        if !(speed > 0.0 && speed.is_finite()) {
            return self.err(
                ds.span(),
                "dataset speed must be positive",
                "speed = 2.0 replays twice as fast",
            );
        }
        let format = spec.format.get_ref();
        if !["sharegpt", "jsonl", "trace", "mooncake"].contains(&format.as_str()) {
            return self.err(
                spec.format.span(),
                format!("unknown dataset format `{format}`"),
                "sharegpt, jsonl, trace or mooncake",
            );
        }
        let mooncake = format == "mooncake";
        let ms = match spec.time_unit.as_ref().map(|u| u.get_ref().as_str()) {
            None => mooncake, // Mooncake's traces count milliseconds
            Some("s") => false,
            Some("ms") => true,
            Some(other) => {
                let span = spec.time_unit.as_ref().map_or(0..0, |u| u.span());
                return self.err(span, format!("unknown time_unit `{other}`"), "\"s\" or \"ms\"");
            }
        };
        let block_tokens = match (&spec.block_tokens, mooncake) {
            (None, _) => 512,
            (Some(b), true) if (1..=1 << 20).contains(b.get_ref()) => *b.get_ref(),
            (Some(b), true) => {
                return self.err(b.span(), "block_tokens must be at least 1", "block_tokens = 512");
            }
            (Some(b), false) => {
                return self.err(
                    b.span(),
                    "block_tokens applies to a prefix-tree trace",
                    "dataset = { path = \"trace.jsonl\", format = \"mooncake\", block_tokens = 512 }",
                );
            }
        };
        let path = self.expand(&spec.path)?;
        let base = self.src.path.parent().unwrap_or(std::path::Path::new("."));
        load(base, &path, format, (speed, ms), block_tokens).or_else(|e| {
            self.err(
                spec.path.span(),
                e,
                "paths are relative to the suite file; see docs/suite-format.md#datasets",
            )
        })
    }
}

#[cfg(test)]
mod mooncake_tests {
    use super::*;

    #[test]
    fn blocks_cover_the_input_and_reuse_counts_what_was_sent_before() {
        let text = "{\"timestamp\": 0, \"input_length\": 150, \"output_length\": 4, \"hash_ids\": [1, 2, 3]}\n\
                    {\"timestamp\": 40, \"input_length\": 100, \"output_length\": 4, \"hash_ids\": [1, 2]}\n";
        let ids = hash_ids(text, 64).expect("valid");
        let entries = trace(text, 1e-3).expect("valid");
        assert_eq!(entries[1].at, 0.04, "Mooncake counts milliseconds");
        let b = Blocks { block_tokens: 64, ids };
        assert_eq!(b.of(0, 150), vec![(1, 64), (2, 64), (3, 22)]);
        assert_eq!(b.of(1, 100), vec![(1, 64), (2, 36)]);
        // The second line's 100 tokens were all sent by the first.
        assert_eq!(b.reuse(&entries, [1].into_iter()), Some(1.0));
        assert_eq!(b.reuse(&entries, [0].into_iter()), Some(0.0));
        let short = "{\"timestamp\": 0, \"input_length\": 150, \"output_length\": 4, \"hash_ids\": [1, 2]}\n";
        let err = hash_ids(short, 64).expect_err("two ids cover 128 tokens");
        assert!(err.contains("1: 2 hash_ids cover 128 tokens, not the line's 150"), "{err}");
        assert!(hash_ids("{\"timestamp\": 0, \"input_length\": 5, \"output_length\": 1}", 64).is_err());
    }
}
