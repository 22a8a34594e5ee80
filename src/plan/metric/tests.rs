//! The table's own consistency: one row per key, names that parse back, engine figures.

use super::figure::split_class;
use super::*;

#[test]
fn every_key_has_one_row_and_every_name_parses_back() {
    let mut names = std::collections::HashSet::new();
    for d in METRICS {
        assert_eq!(METRICS.iter().filter(|x| x.key == d.key).count(), 1, "{}", d.name);
        assert!(names.insert(d.name), "{} twice", d.name);
        for g in d.gates {
            let f = Figure { key: d.key, stat: g.stat };
            assert_eq!(Figure::parse(&f.name()), Ok(f));
        }
    }
    for l in [
        Latency::Ttft,
        Latency::Ttfo,
        Latency::Tpot,
        Latency::Itl,
        Latency::E2e,
        Latency::SendLag,
        Latency::Session,
    ] {
        assert_eq!(Key::Latency(l).def().name, l.name());
    }
    // Every key has its own row (`Key::def` would otherwise answer with the first).
    let others = [
        Key::RequestThroughput,
        Key::InputThroughput,
        Key::OutputThroughput,
        Key::Goodput,
        Key::ErrorRate,
        Key::Capacity,
        Key::QualityPassRate,
        Key::SchemaValidRate,
        Key::ToolCallsValidRate,
        Key::ToolCallsCalledRate,
        Key::OutputsMatchRate,
        Key::OutputsLogprobDrift,
        Key::ReasoningTokens,
        Key::EnergyPerOutputToken,
        Key::EnergyPerRequest,
        Key::Engine(Engine::PrefillRate),
        Key::Engine(Engine::DecodeRate),
        Key::Engine(Engine::QueueTime),
        Key::Engine(Engine::PrefillTime),
        Key::Engine(Engine::DecodeTime),
        Key::Engine(Engine::Preemptions),
        Key::Engine(Engine::PrefixHitRate),
        Key::Engine(Engine::KvUsage),
        Key::Engine(Engine::Running),
        Key::Engine(Engine::Waiting),
        Key::Engine(Engine::SpecAcceptRate),
        Key::Engine(Engine::KvCapacityTokens),
    ];
    for k in others {
        let exhaustive = match k {
            Key::Latency(_) => 0,
            Key::RequestThroughput
            | Key::InputThroughput
            | Key::OutputThroughput
            | Key::Goodput
            | Key::ErrorRate
            | Key::Capacity
            | Key::QualityPassRate
            | Key::SchemaValidRate
            | Key::ToolCallsValidRate
            | Key::ToolCallsCalledRate
            | Key::OutputsMatchRate
            | Key::OutputsLogprobDrift
            | Key::ReasoningTokens
            | Key::EnergyPerOutputToken
            | Key::EnergyPerRequest
            | Key::Engine(_) => 1,
        };
        assert_eq!(exhaustive, 1);
        assert_eq!(k.def().key, k, "{k:?} has no row in METRICS");
    }
}

/// Every `engine.*` figure telemetry computes parses as a figure of the table, and every
/// engine figure of the table is one telemetry computes.
#[test]
fn engine_figures_and_the_table_agree() {
    for name in crate::telemetry::engine::FIGURES {
        let f = Figure::parse(name).unwrap_or_else(|e| panic!("{name}: {e}"));
        assert!(matches!(f.key, Key::Engine(_)), "{name}");
        assert_eq!(f.name(), *name);
    }
    for d in METRICS.iter().filter(|d| matches!(d.key, Key::Engine(_))) {
        assert!(crate::telemetry::engine::FIGURES.iter().any(|f| f.starts_with(d.name)), "{}", d.name);
        for g in d.gates {
            let name = Figure { key: d.key, stat: g.stat }.name();
            assert!(crate::telemetry::engine::FIGURES.contains(&name.as_str()), "gate {name}");
        }
    }
}

#[test]
fn class_names_split_off() {
    assert_eq!(split_class("rag.ttft.p95"), Some((Some("rag"), Figure::latency(Latency::Ttft, Stat::P95))));
    assert_eq!(split_class("error_rate"), Some((None, Figure::of(Key::ErrorRate))));
    assert_eq!(split_class("quality.pass_rate"), Some((None, Figure::of(Key::QualityPassRate))));
    assert_eq!(split_class("rag.nope"), None);
}

/// A comparison's metric is typed from the gate to the reporters: written out as its name,
/// read back from results.json into the same figure and class, and an unknown name is an
/// error — never the TTFT p50 it once fell back to.
#[test]
fn a_compared_metric_is_its_figure_and_class_written_out_and_read_back() {
    let rag = MetricId { class: Some("rag".into()), figure: Figure::latency(Latency::Ttft, Stat::P95) };
    assert_eq!(rag.to_string(), "rag.ttft.p95");
    assert_eq!(serde_json::to_string(&rag).expect("writes"), "\"rag.ttft.p95\"");
    let back: MetricId = serde_json::from_str("\"rag.ttft.p95\"").expect("reads");
    assert_eq!(back, rag);
    assert_eq!(back.case_latency(), None, "a class's latency is not the case's");
    let case: MetricId = serde_json::from_str("\"error_rate\"").expect("reads");
    assert_eq!(case, MetricId::of(Figure::of(Key::ErrorRate)));
    assert!(case == "error_rate" && case != "rag.error_rate");
    let err = serde_json::from_str::<MetricId>("\"ttft.p42\"").expect_err("no such statistic");
    assert!(err.to_string().contains("unknown statistic"), "{err}");
    assert!(serde_json::from_str::<MetricId>("\"nonsense\"").is_err());
}
