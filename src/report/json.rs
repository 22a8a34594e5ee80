//! `results.json` (a contract, docs/results.md: fields may be added, never renamed).
//!
//! The document is written and read through the same typed structs ([`ResultsDoc`],
//! [`CaseDoc`] and their parts, down to each statistic): `slotest compare`, `merge` and
//! `report` read back exactly what a run wrote, and a missing or mistyped field is an error
//! naming the case, never a silent default. No part is an untyped JSON value. Reading back:
//! [`super::read_results`].

#[cfg(test)]
use super::figures::value;
pub use super::figures::{Client, Metrics, Part, Throughput};
use super::figures::{client, finite_or_nan, metrics, throughput};
pub use super::params::Params;
use super::params::params;
use super::parts;
pub use super::parts::{Agent, Conversation};
use super::{CaseResult, RunInfo, Status};
use crate::baseline::RepeatFigures;
use crate::load::TargetInfo;
use crate::measure::{Batches, Samples, Tokens};
use indexmap::IndexMap;
use serde::{Deserialize, Serialize};
#[cfg(test)]
use serde_json::Value;
use std::collections::BTreeMap;

/// Format version of results.json.
pub const FORMAT_VERSION: u32 = 1;

/// The whole document.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct ResultsDoc {
    /// [`FORMAT_VERSION`].
    pub format_version: u32,
    /// slotest that wrote it.
    pub slotest_version: String,
    /// RFC 3339 start of the run.
    pub started_at: String,
    /// Ctrl-C cut the run short.
    pub interrupted: bool,
    /// Machine, command and git revision.
    pub environment: super::Environment,
    /// Every selected case, in plan order.
    pub cases: Vec<CaseDoc>,
    /// `slotest bisect`: the values searched, every probe and the answer.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub bisect: Option<super::bisect::Bisect>,
    /// `slotest tune`: the knobs, every step, the best configuration and what it cost.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tune: Option<super::tune::Tune>,
    /// The run's conclusion across its cases: what failed, what likely limits, the next
    /// step, the passing cases near a limit (docs/diagnosis.md).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub conclusion: Option<crate::judge::across::RunConclusion>,
}

/// One case.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct CaseDoc {
    /// `suite::row[::axis=v,…]`.
    pub name: String,
    /// Suite name.
    pub suite: String,
    /// The suite file and the hash of its text.
    pub suite_file: SuiteFile,
    /// Row name.
    pub row: String,
    /// The row's description.
    pub description: Option<String>,
    /// The resolved workload, load and phases.
    pub params: Params,
    /// Hash of the definition: a changed suite is not compared.
    pub definition: String,
    /// For a failing case or a regression: `rule`, `evidence`, `knob` (docs/diagnosis.md).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub diagnosis: Vec<crate::judge::diagnose::Diagnosis>,
    /// For a regressed or breached latency: where its time went, part by part
    /// (docs/diagnosis.md).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub attribution: Vec<crate::judge::attribute::Attribution>,
    /// What the case was measured on, key by key (engine, server knobs, model, tokenizer, GPU,
    /// host); every comparison names the keys that differ.
    #[serde(default, skip_serializing_if = "std::collections::BTreeMap::is_empty")]
    pub fingerprint: std::collections::BTreeMap<String, String>,
    /// `pass`, `fail`, `inconclusive` or `ignored`.
    pub verdict: String,
    /// Why, one line each.
    pub reasons: Vec<String>,
    /// Wall time of the case.
    #[serde(deserialize_with = "finite_or_nan")]
    pub elapsed_s: f64,
    /// Request counts.
    pub requests: Requests,
    /// Planned vs actual lengths.
    pub tokens: Option<Tokens>,
    /// What the target said it is.
    pub target: Option<TargetInfo>,
    /// Latency statistics.
    pub metrics: Option<Metrics>,
    /// Throughputs and the error rate.
    pub throughput: Option<Throughput>,
    /// The load as it happened.
    pub load: Option<LoadFigures>,
    /// Every SLO, judged.
    pub slo: Vec<crate::judge::SloResult>,
    /// The baseline comparison (`null` where none was made or the case did not run).
    pub baseline: Option<crate::baseline::BaselineOutcome>,
    /// GPU and engine telemetry.
    pub telemetry: crate::telemetry::Telemetry,
    /// The load generator's self-check (cases that ran).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub client: Option<Client>,
    /// Warnings that did not change the verdict (cases that ran).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub notes: Option<Vec<String>>,
    /// Each note's kind, in the order of `notes` (`baseline_undecided`, `diagnosis`, …): what a
    /// script filters on instead of the words (cases that ran).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub note_kinds: Option<Vec<String>>,
    /// Run-to-run figures (cases that ran).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub repeats: Option<Repeats>,
    /// Per-request samples (cases that ran).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub samples: Option<Samples>,
    /// The ITL histogram, base64 of its compressed V2 form (cases that ran).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub itl_histogram: Option<Option<String>>,
    /// Throughput per time slice (cases that ran).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub batches: Option<Batches>,
    /// In flight, throughput and failures over the measure window, in slices (cases that ran).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub timeline: Option<crate::measure::timeline::Timeline>,
    /// When each phase ran (cases that ran): `name` (`setup`, `warmup`, `measure`, `drain`,
    /// `scrape`, `judge`), `start_unix_us`, `end_unix_us`; the OTLP export's spans.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub phases: Option<Vec<crate::measure::phases::Phase>>,
    /// Output tokens/s per GPU, cost per 1M output tokens, replicas for a planned peak (cases
    /// that ran with `gpu_hour_cost`, `gpu_count`, `plan`, or GPUs seen).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cost: Option<crate::measure::cost::Cost>,
    /// The GPUs' energy over the measure window: J per output token and per request, kWh and
    /// its price per 1M output tokens (cases that ran with NVML's GPU telemetry).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub energy: Option<crate::measure::energy::Energy>,
    /// A capacity search's bracket and probes (search rows that ran).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub capacity: Option<crate::measure::capacity::Capacity>,
    /// A case measured until decisive (`measure = { requests, up_to }`): `up_to`, the `looks`
    /// taken (measured requests at each), `planned_looks`, the `alpha` of each look, `decided`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub extension: Option<crate::measure::Extension>,
    /// The engine slotest started for the case (`[server]`): command, startup_s, log.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub server: Option<crate::load::ServerInfo>,
    /// Golden prompts checked (`quality`): `file`, `total`, `passed`, `pass_rate`, `failures`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub quality: Option<crate::measure::quality::QualityOutcome>,
    /// The row's fixed prompts (`outputs`): `requests`, `answered`, every reply, and `drift`
    /// against the baseline (or side A).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub outputs: Option<crate::measure::outputs::OutputsFigures>,
    /// What reasoning the streams carried, when any did: `requests`, `reasoned`, `unanswered`,
    /// `reasoning_tokens_mean`, `answer_tokens_mean` (TTFO is `metrics.ttfo_ms`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reasoning: Option<crate::measure::reasoning::ReasoningFigures>,
    /// How the answers held against the row's JSON Schema (`schema`), when any was checked:
    /// `checked`, `valid`, `valid_rate`, `not_json`, `first_broken`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub schema: Option<crate::measure::structured::SchemaFigures>,
    /// How the tool calls of a row that offers tools went: `requests`, `called`,
    /// `called_rate`, `calls`, `valid`, `valid_rate`, `required`, `required_uncalled`,
    /// `prompt_beyond_text`, `ttftc_ms`, `first_broken`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tool_calls: Option<crate::measure::tools::ToolFigures>,
    /// The shares whose bad outcomes came together in the order sent, by figure name
    /// (`error_rate`, `goodput`, `schema.valid_rate`, `tool_calls.*`): each one's design effect.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub design_effects: BTreeMap<String, f64>,
    /// An embeddings row's texts: `inputs` a request, `inputs_per_s` embedded a second.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub embeddings: Option<crate::measure::structured::EmbeddingFigures>,
    /// The images the requests carried: `requests`, `per_request`, `size`, `format`, `reuse`,
    /// `bytes_sent`, `bytes_per_image`, `tokens_per_request`, `tokens_per_image`, `text_exact`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub images: Option<crate::measure::images::ImageFigures>,
    /// Requests whose client gave up on purpose (`cancel`): `cancelled`, what they received,
    /// and whether the engine freed their work (`freed`, from its gauges).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cancel: Option<crate::measure::cancel::CancelFigures>,
    /// The steady-state window: `start_s`, `end_s` (from the window's start), `share` of the
    /// measure window, `basis`, `only` (the figures are over it alone).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub steady: Option<crate::measure::steady::Steady>,
    /// A prefix-tree trace's own reuse beside the engine's prefix-cache hit rate: `trace`,
    /// `engine` (where the engine reports one).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub prefix_reuse: Option<crate::measure::PrefixReuse>,
    /// Each traffic class of a case with `mix`, by name: its own `requests`, `tokens`,
    /// `metrics` and `throughput`, shaped as the case's.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub classes: Option<IndexMap<String, Part>>,
    /// A fleet's endpoints (`[target] endpoints`), in order: each one's `endpoint` (host and
    /// port), its requests' figures shaped as a class's, and its engine's `server` and
    /// `engine` figures from its own metrics page.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub endpoints: Option<Vec<parts::EndpointPart>>,
    /// The network's part: `requests`, `new_connections` (sent on a connection opened for
    /// them), `connect_ms` (their set-up), `headers_ms` (send → response headers).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub network: Option<crate::measure::network::NetworkFigures>,
    /// A conversation case's `sessions`, `completed_sessions`, `turns_per_session`,
    /// `session_s`, and `turns`: one entry per turn index (`turn`, then the shape of a class).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub conversation: Option<Conversation>,
    /// An agent case's `sessions`, `completed_sessions`, `steps`, `calls`, per-session
    /// `steps_per_session`, `calls_per_session`, `duration_ms`, `context_tokens`, and `by_step`:
    /// one entry per step index (`step`, `sessions`, `calls`, `prompt_tokens_mean`,
    /// `cached_tokens_mean`, `span_ms`, then the shape of a class).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub agent: Option<Agent>,
    /// A load shard's records, for `slotest merge` (runs with `--load-shard i/N`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub shard: Option<Box<crate::measure::shard::ShardRecords>>,
}

/// `suite_file`.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct SuiteFile {
    /// As given on the command line.
    pub path: String,
    /// FNV-1a of the file's text.
    pub hash: String,
}

/// `requests`.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Requests {
    /// Measured requests that completed.
    pub completed: u64,
    /// Measured requests that failed.
    pub failed: u64,
    /// Failures by kind.
    pub errors: BTreeMap<String, u64>,
    /// Warmup requests sent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub warmup: Option<u64>,
    /// The first failure of each kind.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error_examples: Option<Vec<String>>,
    /// Requests that needed a retry.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub retried: Option<u64>,
    /// Retried attempts by kind.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub retries: Option<BTreeMap<String, u64>>,
    /// Requests cut short by Ctrl-C.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub interrupted: Option<u64>,
    /// Measured requests whose client gave up on purpose (`cancel`): neither completed nor
    /// failed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cancelled: Option<u64>,
}

/// `load`: the load as it happened.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct LoadFigures {
    /// Open loop: the rate asked for.
    pub target_rate_per_s: Option<f64>,
    /// Measured send rate.
    pub achieved_rate_per_s: Option<f64>,
    /// Most requests in flight.
    pub peak_in_flight: u64,
    /// Time-weighted mean in flight.
    #[serde(deserialize_with = "finite_or_nan")]
    pub mean_in_flight: f64,
}

/// `repeats`.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Repeats {
    /// Each run's throughput (empty for one run).
    pub runs: Vec<RepeatFigures>,
    /// Coefficient of variation of output throughput across runs.
    pub output_throughput_cv: Option<f64>,
}

impl CaseDoc {
    /// The entry of one case result.
    pub fn new(r: &CaseResult) -> CaseDoc {
        let c = &r.case;
        let mut doc = CaseDoc {
            name: c.name.clone(),
            suite: c.suite.clone(),
            suite_file: SuiteFile { path: c.suite_file.0.clone(), hash: c.suite_file.1.clone() },
            row: c.row.clone(),
            description: c.description.clone(),
            params: params(c),
            definition: c.definition_hash(),
            fingerprint: BTreeMap::new(),
            diagnosis: Vec::new(),
            attribution: Vec::new(),
            verdict: r.verdict_name().to_string(),
            reasons: r.reasons(),
            elapsed_s: r.elapsed.as_secs_f64(),
            requests: Requests {
                completed: 0,
                failed: 0,
                errors: BTreeMap::new(),
                warmup: None,
                error_examples: None,
                retried: None,
                retries: None,
                interrupted: None,
                cancelled: None,
            },
            tokens: None,
            target: None,
            metrics: None,
            throughput: None,
            load: None,
            slo: Vec::new(),
            baseline: None,
            telemetry: crate::telemetry::Telemetry::default(),
            client: None,
            notes: None,
            note_kinds: None,
            repeats: None,
            samples: None,
            itl_histogram: None,
            batches: None,
            timeline: None,
            phases: None,
            cost: None,
            energy: None,
            capacity: None,
            extension: None,
            server: None,
            shard: None,
            quality: None,
            outputs: None,
            reasoning: None,
            schema: None,
            embeddings: None,
            images: None,
            tool_calls: None,
            design_effects: BTreeMap::new(),
            cancel: None,
            steady: None,
            prefix_reuse: None,
            classes: None,
            endpoints: None,
            network: None,
            conversation: None,
            agent: None,
        };
        if let Status::Ran { target, summary, verdict } = &r.status {
            doc.ran(target, summary, verdict);
            doc.cost = r.cost();
            doc.energy = r.energy();
        }
        doc
    }

    fn ran(&mut self, target: &TargetInfo, s: &crate::measure::Summary, verdict: &crate::judge::Verdict) {
        self.requests = Requests {
            completed: s.completed,
            failed: s.failed,
            errors: s.errors.clone(),
            warmup: Some(s.warmup_requests),
            error_examples: Some(s.error_examples.clone()),
            retried: Some(s.retried_requests),
            retries: Some(s.retries.clone()),
            interrupted: Some(s.interrupted),
            cancelled: s.cancel.as_ref().map(|c| c.cancelled),
        };
        self.client = Some(client(s, verdict.fell_behind));
        self.tokens = Some(s.tokens.clone());
        self.target = Some(target.clone());
        self.fingerprint = target.fingerprint.clone();
        self.server = target.server.clone();
        self.capacity = s.capacity.clone();
        self.extension = s.extension.clone();
        self.shard = s.shard.clone();
        self.quality = s.quality.clone();
        self.outputs = s.outputs.clone();
        self.reasoning = s.reasoning.clone();
        self.schema = s.schema.clone();
        self.embeddings = s.embeddings.clone();
        self.images = s.images.clone();
        self.tool_calls = s.tool_calls.clone();
        self.design_effects.clone_from(&s.design_effects);
        self.steady = s.steady.clone();
        self.prefix_reuse = s.trace_reuse.map(|t| crate::measure::PrefixReuse::with_engine(t, &s.telemetry));
        self.cancel = s.cancel.clone().map(|c| c.with_engine(&s.telemetry.gauges, s.mean_in_flight));
        self.metrics = Some(metrics(s));
        self.throughput = Some(throughput(s));
        self.classes = parts::classes(s);
        self.endpoints = parts::endpoints(s);
        self.network = crate::measure::network::figures(&s.samples);
        self.conversation = parts::conversation(s);
        self.agent = parts::agent(s);
        self.load = Some(LoadFigures {
            target_rate_per_s: s.target_rate,
            achieved_rate_per_s: s.achieved_rate,
            peak_in_flight: s.peak_in_flight,
            mean_in_flight: s.mean_in_flight,
        });
        self.baseline = verdict.baseline.clone();
        self.notes = Some(super::note::lines(&verdict.notes));
        self.note_kinds = Some(verdict.notes.iter().map(|n| n.kind().to_string()).collect());
        self.telemetry = s.telemetry.clone();
        self.repeats =
            Some(Repeats { runs: s.repeats.clone(), output_throughput_cv: crate::measure::repeat_cv(s) });
        self.samples = Some(s.samples.clone());
        self.itl_histogram = Some(crate::measure::codec::encode(&s.itl_histogram).ok());
        self.batches = Some(s.batches.clone());
        self.timeline = Some(s.timeline.clone());
        self.phases = Some(s.trace.phases.clone());
        self.slo = verdict.slo.clone();
        self.diagnosis = verdict.diagnosis.clone();
        self.attribution = verdict.attribution.clone();
    }
}

/// The whole document.
pub fn results_doc(run: &RunInfo, results: &[CaseResult]) -> ResultsDoc {
    ResultsDoc {
        format_version: FORMAT_VERSION,
        slotest_version: run.slotest_version.clone(),
        started_at: run.started_at.clone(),
        interrupted: run.interrupted,
        environment: super::environment::of_run(run, results),
        cases: results.iter().map(CaseDoc::new).collect(),
        bisect: run.bisect.clone(),
        tune: run.tune.clone(),
        conclusion: super::conclusion(results),
    }
}

/// The whole document as a JSON value (tests: the file itself is written from [`results_doc`]
/// without a value tree).
#[cfg(test)]
pub fn results_json(run: &RunInfo, results: &[CaseResult]) -> Value {
    value(&results_doc(run, results))
}
