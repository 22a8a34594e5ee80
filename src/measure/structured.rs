//! What a row's answers were: how those under a JSON Schema (`schema`) held against it
//! (results.json `schema`, the figure `schema.valid_rate`), and the texts an embeddings row
//! embedded (`embeddings`). Pure.

use crate::plan::structured::Checked;
use serde::{Deserialize, Serialize};

/// results.json `schema`, present when some measured answer was checked against a schema.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct SchemaFigures {
    /// Completed measured requests whose answers were checked.
    pub checked: u64,
    /// Of those, answers that were JSON valid against the schema.
    pub valid: u64,
    /// `valid / checked`.
    pub valid_rate: f64,
    /// Answers that were not JSON at all (truncated at the length cap, text around the
    /// document); the rest of the broken ones were JSON the schema refuses.
    pub not_json: u64,
    /// The first broken answer, why (the request's stream index and the check's words).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub first_broken: Option<String>,
}

/// results.json `embeddings`, on an embeddings row: the texts each request embedded, and the
/// texts embedded a second (the requests a second times the texts a request; the tokens a
/// second are `throughput.input_tokens_per_s`, by the engine's count).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct EmbeddingFigures {
    /// Texts a request (`inputs`).
    pub inputs: u64,
    /// Texts embedded per second of the window.
    pub inputs_per_s: f64,
}

impl EmbeddingFigures {
    /// One line for people, the figures an embeddings row is read by (the results table's are
    /// a stream's): `embeddings: 4 texts a request, 16.0 tokens a text; latency p50 1.420s,
    /// p95 1.648s, p99 1.700s; 0.63 requests/s, 2.53 texts/s, 40.5 tokens/s`.
    pub fn line(&self, sum: &super::Summary) -> String {
        use crate::plan::slo::Unit;
        let texts = if self.inputs == 1 {
            "1 text a request".to_string()
        } else {
            format!("{} texts a request", self.inputs)
        };
        let per_text = sum
            .tokens
            .input_actual_mean
            .filter(|_| self.inputs > 0)
            .map(|t| format!(", {:.1} tokens a text", t / self.inputs as f64))
            .unwrap_or_default();
        let at = |q: Option<f64>, name: &str| q.map(|v| format!("{name} {}", Unit::Ms.format(v)));
        let e = &sum.e2e;
        let latency: Vec<String> =
            [at(e.p50, "p50"), at(e.p95, "p95"), at(e.p99, "p99")].into_iter().flatten().collect();
        let latency =
            if latency.is_empty() { String::new() } else { format!("; latency {}", latency.join(", ")) };
        format!(
            "embeddings: {texts}{per_text}{latency}; {:.2} requests/s, {:.2} texts/s, {:.1} tokens/s",
            sum.request_throughput, self.inputs_per_s, sum.input_throughput
        )
    }
}

/// An embeddings row's texts, from its completed requests a second; `None` on other routes.
pub(super) fn embeddings(case: &crate::plan::Case, requests_per_s: f64) -> Option<EmbeddingFigures> {
    (case.target.api == crate::suite::Api::Embeddings).then_some(EmbeddingFigures {
        inputs: case.workload.inputs,
        inputs_per_s: requests_per_s * case.workload.inputs as f64,
    })
}

/// The figures of the checks of the measured, completed requests; `None` when none was checked.
pub(super) fn figures(ok: &[super::one::One<'_>]) -> Option<SchemaFigures> {
    of_checks(ok.iter().filter_map(|o| Some((o.r.index, o.r.checked()?))))
}

/// The figures of checks given as (stream index, check).
fn of_checks<'a>(checks: impl Iterator<Item = (u64, &'a Checked)>) -> Option<SchemaFigures> {
    let mut f = SchemaFigures { checked: 0, valid: 0, valid_rate: 0.0, not_json: 0, first_broken: None };
    let mut first: Option<(u64, &str)> = None;
    for (index, check) in checks {
        f.checked += 1;
        match check {
            Checked::Valid => f.valid += 1,
            Checked::Broken(why) => {
                f.not_json += u64::from(why.starts_with(crate::plan::structured::NOT_JSON));
                if first.is_none_or(|(i, _)| index < i) {
                    first = Some((index, why));
                }
            }
        }
    }
    (f.checked > 0).then(|| SchemaFigures {
        valid_rate: f.valid as f64 / f.checked as f64,
        first_broken: first.map(|(i, why)| format!("request {i}: {why}")),
        ..f
    })
}

impl SchemaFigures {
    /// One line for people: `schema: 98 of 100 answers valid (98.0%); 1 not JSON; first broken:
    /// request 17: …`.
    pub fn line(&self) -> String {
        let mut out = format!(
            "schema: {} of {} answers valid ({:.1}%)",
            self.valid,
            self.checked,
            self.valid_rate * 100.0
        );
        if self.not_json > 0 {
            out.push_str(&format!("; {} not JSON", self.not_json));
        }
        if let Some(first) = &self.first_broken {
            out.push_str(&format!("; first broken: {first}"));
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_valid_and_broken_answers_and_names_the_first() {
        let broken = |why: &str| Checked::Broken(why.into());
        let checks = [
            (5, broken("breaks the schema at `/age`: -1 is less than 0")),
            (2, Checked::Valid),
            (3, broken("not JSON (EOF)")),
        ];
        let f = of_checks(checks.iter().map(|(i, c)| (*i, c))).expect("checked");
        assert_eq!((f.checked, f.valid, f.not_json), (3, 1, 1));
        assert!((f.valid_rate - 1.0 / 3.0).abs() < 1e-12);
        assert_eq!(f.first_broken.as_deref(), Some("request 3: not JSON (EOF)"));
        assert!(f.line().starts_with("schema: 1 of 3 answers valid (33.3%); 1 not JSON"), "{}", f.line());
        assert_eq!(of_checks(std::iter::empty()), None);
    }
}
