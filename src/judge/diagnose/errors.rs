//! `server errors`: requests the engine failed, and the kind of request it refused outright.

use super::advice::Need;
use super::{Diagnosis, advised, rule};
use crate::judge::Verdict;
use crate::measure::Summary;
use crate::plan::Case;

/// `server errors`: an error-rate SLO breached, or the error rate regressed against the
/// baseline. Where the client fell behind, only when the server's own errors alone breached it
/// (`selfcheck::standing`): a late client's timeouts are that rule's, not this one's.
pub(super) fn server_errors(
    case: &Case,
    sum: &Summary,
    verdict: &Verdict,
    engine: Option<crate::engine::Engine>,
) -> Option<Diagnosis> {
    use crate::plan::metric::Key;
    let is_rate = |m: &crate::plan::slo::Metric| m.figure().is_some_and(|f| f.key == Key::ErrorRate);
    let breached =
        case.slos.iter().zip(&verdict.slo).any(|(s, r)| r.passed == Some(false) && is_rate(&s.metric));
    let regressed = verdict.baseline.as_ref().is_some_and(|b| {
        b.metrics.iter().any(|m| {
            m.verdict == crate::baseline::DeltaVerdict::Regressed && m.metric.figure.key == Key::ErrorRate
        })
    });
    if sum.failed == 0 || !(breached || regressed) || (verdict.fell_behind && !verdict.servers_errors) {
        return None;
    }
    let total = sum.completed + sum.failed;
    let kinds: Vec<String> = sum.errors.iter().map(|(k, n)| format!("{k} ×{n}")).collect();
    let mut evidence = format!("{} of {total} requests failed ({})", sum.failed, kinds.join(", "));
    if let Some(e) = sum.error_examples.first() {
        let e: String = e.chars().take(160).collect();
        evidence.push_str(&format!("; e.g. {e}"));
    }
    if let Some(kind) = refused_kind(case, sum, engine) {
        evidence.push_str(&format!("; every failure a refusal: this engine does not serve {kind}"));
    } else if let Some(when) = stretches(sum) {
        evidence.push_str(&when);
    }
    Some(advised(rule::SERVER_ERRORS, evidence, None, Need::Errors))
}

/// Where the failures came together (a design effect of 2 or more, `measure::together`): when
/// in the window they came, the largest stretches first (at most three), so the engine's log
/// can be read at those times: an outage (a restart, an out-of-memory, a burst of 429s while
/// overloaded) more than a rate.
fn stretches(sum: &Summary) -> Option<String> {
    let deff = crate::measure::together::of(&sum.design_effects, crate::plan::metric::Key::ErrorRate);
    let all = sum.timeline.failure_stretches();
    if deff < 2.0 || all.is_empty() {
        return None;
    }
    let mut shown: Vec<&(f64, f64, u64)> = all.iter().take(3).collect();
    shown.sort_by(|a, b| a.0.total_cmp(&b.0));
    let when: Vec<String> = shown.iter().map(|(a, b, n)| format!("{n} at {a:.2}–{b:.2} s")).collect();
    let rest: u64 = all.iter().skip(3).map(|s| s.2).sum();
    let more = match all.len().saturating_sub(3) {
        0 => String::new(),
        k => format!(", {rest} more in {k} other stretch{}", if k == 1 { "" } else { "es" }),
    };
    Some(format!(
        "; they came together (design effect {deff:.2}: as {:.0} independent requests): {} into the \
window{more}: an outage more than a rate, whose cause the engine's log at those times says",
        (sum.completed + sum.failed) as f64 / deff,
        when.join(", ")
    ))
}

/// The kind of request the case asks that the engine refused, where every failure is a refusal
/// (HTTP 400, 404, 405, 422 or 501, or a 500 whose message says the input is not supported or
/// needs a flag, as llama-server answers an image without `--mmproj` and tools with
/// `--no-jinja`): an engine without the route, the option or the model for it. What would
/// serve it is said in the engine's words where its profile says
/// ([`crate::engine::Kind::remedy`]).
fn refused_kind(case: &Case, sum: &Summary, engine: Option<crate::engine::Engine>) -> Option<String> {
    use crate::load::ErrorKind;
    let says_unsupported = |k: &String| {
        sum.error_examples.iter().any(|e| {
            let e = e.to_ascii_lowercase();
            let says = ["not supported", "unsupported", "requires --"].iter().any(|w| e.contains(w));
            e.starts_with(&format!("{k}:")) && says
        })
    };
    let refusal = |k: &String| match ErrorKind::parse(k) {
        Some(ErrorKind::Http(400 | 404 | 405 | 422 | 501)) => true,
        Some(ErrorKind::Http(500)) => says_unsupported(k),
        _ => false,
    };
    if sum.errors.is_empty() || !sum.errors.keys().all(refusal) {
        return None;
    }
    use crate::engine::Kind;
    // What the request kind is, and what would serve it in the engine's words.
    let said = |kind: Kind, what: &str| {
        let remedy = kind.remedy(engine).map(|r| format!("; {r}")).unwrap_or_default();
        format!("{} ({what}{remedy})", kind.words())
    };
    let w = &case.workload;
    let apis = std::iter::once(case.target.api).chain(w.mix.iter().map(|c| c.api));
    let kinds = apis.filter_map(|api| match api {
        crate::suite::Api::Embeddings => Some(said(Kind::Embeddings, "`/v1/embeddings`")),
        crate::suite::Api::Responses => Some("the Responses API (`/v1/responses`)".to_string()),
        _ => None,
    });
    let asked = kinds
        .chain(w.any_images().then(|| said(Kind::Images, "a vision-language model")))
        .chain(w.any_tools().then(|| said(Kind::Tools, "`tools`")))
        .chain(w.any_schema().then(|| "structured outputs (`response_format` json_schema)".to_string()));
    asked.into_iter().next()
}

#[cfg(test)]
mod refusals {
    use super::refused_kind;

    #[test]
    fn a_route_every_request_of_which_was_refused_is_named() {
        let case = crate::testutil::case(
            "[target]\nbase_url = \"http://127.0.0.1:9\"\napi = \"embeddings\"\n[[row]]\nname = \"e\"\ninputs = 2\n",
        );
        let empty = |c: &crate::plan::Case| crate::measure::summarize(c, &crate::load::Driven::empty());
        let mut sum = empty(&case);
        sum.errors.insert("http_501".into(), 8);
        // An engine not known: every engine's way, in the order they are detected.
        let said = refused_kind(&case, &sum, None).expect("embeddings refused");
        assert!(
            said.starts_with("embeddings (`/v1/embeddings`; llama.cpp: start it with `--embeddings`"),
            "{said}"
        );
        assert!(said.contains("; sglang: start it with an embedding model and `--is-embedding`"), "{said}");
        assert!(said.contains("; vllm: start it with an embedding model (`--runner pooling`)"), "{said}");
        // A known one: its own only.
        let said =
            refused_kind(&case, &sum, Some(crate::engine::Engine::Sglang)).expect("embeddings refused");
        assert_eq!(
            said,
            "embeddings (`/v1/embeddings`; sglang: start it with an embedding model and `--is-embedding`)"
        );
        sum.errors.insert("timeout".into(), 1);
        assert_eq!(refused_kind(&case, &sum, None), None, "a timeout is no refusal");
        let chat = crate::testutil::case(
            "[target]\nbase_url = \"http://127.0.0.1:9\"\napi = \"chat\"\n[[row]]\nname = \"c\"\n",
        );
        let mut plain = empty(&chat);
        plain.errors.insert("http_404".into(), 8);
        assert_eq!(refused_kind(&chat, &plain, None), None, "plain chat asks no kind");
        // llama-server without `--mmproj` answers an image with a 500 that says why.
        let images = crate::testutil::case(
            "[target]\nbase_url = \"http://127.0.0.1:9\"\napi = \"chat\"\n[[row]]\nname = \"v\"\nimages = { count = 1 }\n",
        );
        let mut sum = empty(&images);
        sum.errors.insert("http_500".into(), 6);
        sum.error_examples.push("http_500: 500 Internal Server Error: {\"error\":{\"code\":500,\"message\":\"image input is not supported - hint: ...\"}}".into());
        let said = refused_kind(&images, &sum, None).expect("images refused");
        assert!(said.starts_with("images") && said.contains("llama.cpp: start it with `--mmproj`"), "{said}");
        // In the engine's words: vLLM has no projector flag to name.
        let said = refused_kind(&images, &sum, Some(crate::engine::Engine::Vllm)).expect("images refused");
        assert_eq!(said, "images (a vision-language model)");
        // Tool calls: vLLM's parser flags, not llama.cpp's `--jinja`.
        let mut tools = chat.clone();
        let defined =
            r#"[{"type": "function", "function": {"name": "f", "parameters": {"type": "object"}}}]"#;
        let defined =
            crate::plan::tools::Tools::parse("tools.json", defined, crate::plan::tools::Choice::Auto);
        tools.workload.tools = Some(std::sync::Arc::new(defined.expect("tools")));
        let mut refused = empty(&tools);
        refused.errors.insert("http_400".into(), 4);
        let said = refused_kind(&tools, &refused, Some(crate::engine::Engine::Vllm)).expect("tools refused");
        assert_eq!(
            said,
            "tool calls (`tools`; vllm: start it with `--enable-auto-tool-choice` and the model's `--tool-call-parser`)"
        );
        // llama-server started with `--no-jinja` answers tools with a 500 that names the flag.
        let mut refused = empty(&tools);
        refused.errors.insert("http_500".into(), 4);
        refused.error_examples.push("http_500: 500 Internal Server Error: {\"error\":{\"code\":500,\"message\":\"tools param requires --jinja flag\",\"type\":\"server_error\"}}".into());
        let said =
            refused_kind(&tools, &refused, Some(crate::engine::Engine::Llamacpp)).expect("tools refused");
        assert!(
            said.contains(
                "llama.cpp: start it with `--jinja` (on by default: not `--no-jinja`) and a chat \
template that takes tools"
            ),
            "{said}"
        );
        sum.error_examples[0] = "http_500: 500 Internal Server Error: CUDA error: out of memory".into();
        assert_eq!(
            refused_kind(&images, &sum, None),
            None,
            "a 500 that says nothing of the kind is no refusal"
        );
    }
}
