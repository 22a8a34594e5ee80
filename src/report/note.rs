//! A note's sentence: the one place a [`Note`] becomes words, for the terminal, results.json
//! (`notes`, beside `note_kinds`) and report.html alike.

use crate::baseline::check::describe;
use crate::judge::note::{Note, Side};
use crate::plan::slo::Unit;

/// The note as a line for people.
pub fn line(note: &Note) -> String {
    match note {
        Note::LengthDrift { side, planned: p, actual: a } => {
            let (what, hint) = match side {
                Side::Input => ("input", "set [target] tokenizer = \"server\" or a tokenizer.json"),
                Side::Output => (
                    "output",
                    "the engine stopped early: set [target] engine so ignore_eos/min_tokens are sent",
                ),
            };
            format!(
                "{what} tokens: planned mean {p:.1}, the server counted {a:.1} ({:+.1}%); {hint}",
                (a - p) / p * 100.0
            )
        }
        Note::SharedGpu(gpus) => {
            let shared: Vec<String> = gpus.iter().map(|(i, n)| format!("GPU {i} ({n} processes)")).collect();
            format!(
                "another process shared {} during the measure window: these figures may include its work",
                shared.join(", ")
            )
        }
        Note::Energy(e) => e.line(),
        Note::Imbalance(i) => i.line(),
        Note::MixedFleet(what) => format!("mixed fleet: {what}; its figures are not one engine's"),
        Note::EnergyNotMeasured(why) => format!("energy: not measured ({why})"),
        Note::QualityFailed(what) => format!("quality check failed: {what}"),
        Note::SchemaBroken(s) => s.line(),
        Note::ToolCalls(t) => t.line(),
        Note::Images(i) => i.line(),
        Note::Embeddings(line) => line.clone(),
        Note::OutputsDrift(_) | Note::OutputDiffers { .. } => crate::judge::note::differs_line(note),
        Note::Extension(x) => {
            let looks: Vec<String> = x.looks.iter().map(u64::to_string).collect();
            format!(
                "measured until decisive: {} requests of up to {} (looks at {}, each at {:.2} % error){}",
                x.looks.last().copied().unwrap_or(0),
                x.up_to,
                looks.join(", "),
                x.alpha * 100.0,
                if x.decided { "" } else { "; still undecided" }
            )
        }
        Note::Reasoning(r, p50, p95) => {
            let at = |v: &Option<f64>| v.map_or_else(|| "-".into(), |v| Unit::Ms.format(v));
            format!("{}; ttfo p50 {} p95 {}", r.line(), at(p50), at(p95))
        }
        Note::Agent(line) => line.clone(),
        Note::Roofline(p) => p.line().unwrap_or_default(),
        Note::KvCapacity(room) => format!("kv capacity: {}", room.line()),
        Note::Steady(w) => w.line(),
        Note::PrefixReuse(p) => p.line(),
        Note::Cancel(c, completed) => c.line(*completed),
        Note::ClientNearSaturation(busy) => format!(
            "client near saturation (load threads {:.0}% busy); `slotest calibrate` shows its ceiling",
            busy * 100.0
        ),
        Note::BaselineNotCompared(why) => format!("baseline not compared: {why}"),
        Note::EnvironmentChanged(since, change) => {
            format!("environment changed {}: {change}", crate::judge::conclude::since_words(*since))
        }
        Note::Improved(m) => format!("{} (re-save the baseline to lock it in)", describe(m)),
        Note::BaselineUndecided(m, more, cost) => {
            let more = match more {
                0 => String::new(),
                n => format!(" (and {n} more)"),
            };
            let cost = cost.as_ref().map_or(String::new(), |c| format!("; {c}"));
            format!("baseline {}{more}{cost}", describe(m))
        }
        Note::NotJudged(why) => format!("not judged: {why}"),
        Note::NotLikeForLike(since, what) => crate::judge::conclude::not_like_for_like_line(*since, what),
        Note::NoBaseline(path) => crate::judge::conclude::no_baseline_line(path),
        Note::Diagnosis(d) => format!("{}: {d}", d.label()),
        Note::Attribution(a) => format!("{}: {a}", crate::judge::attribute::LABEL),
        Note::WarmNoFaster { warm_ms: w, cold_ms: c, cold } => format!(
            "hint: warm prefix no faster than cold: TTFT p50 {w:.1} ms vs {c:.1} ms in {cold}; the engine \
             reused no shared prefix (vLLM: --enable-prefix-caching; llama.cpp: --swa-full for \
             sliding-window models such as Gemma 3)"
        ),
        Note::LoadShard(part, requests) => format!(
            "load shard {part}: {requests} of the case's requests; SLOs and baselines are judged by `slotest merge` \
             over every shard"
        ),
        Note::Merged(n, spread) => format!("merged from {n} load shards (their starts {spread:.0} ms apart)"),
        Note::ShardDiffers(shard, first, change) => {
            format!("shard {shard} differs from shard {first}: {change}")
        }
    }
}

/// Every note of a verdict as lines.
pub fn lines(notes: &[Note]) -> Vec<String> {
    notes.iter().map(line).collect()
}

/// A note reads as its sentence: `note.to_string()` is what every report shows.
impl std::fmt::Display for Note {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&line(self))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::judge::note::Since;

    #[test]
    fn each_note_reads_as_the_reports_have_always_worded_it() {
        let shown = |n: Note| n.to_string();
        assert_eq!(
            shown(Note::NotJudged("regression ttft.p50: +40%".into())),
            "not judged: regression ttft.p50: +40%"
        );
        let ab = Note::EnvironmentChanged(Since::A, "server.var.threads: 2 → 1".into());
        assert_eq!(shown(ab), "environment changed since A: server.var.threads: 2 → 1");
        let stored = Note::EnvironmentChanged(Since::Baseline, "engine.version: 0.25 → 0.26".into());
        assert_eq!(shown(stored), "environment changed since the baseline: engine.version: 0.25 → 0.26");
        assert_eq!(
            shown(Note::SharedGpu(vec![(0, 2), (1, 3)])),
            "another process shared GPU 0 (2 processes), GPU 1 (3 processes) during the measure window: \
             these figures may include its work"
        );
        assert_eq!(
            shown(Note::EnergyNotMeasured("no GPU telemetry: the mock engine runs on no GPU".into())),
            "energy: not measured (no GPU telemetry: the mock engine runs on no GPU)"
        );
        let drift = Note::LengthDrift { side: Side::Output, planned: 128.0, actual: 100.0 };
        assert_eq!(
            shown(drift),
            "output tokens: planned mean 128.0, the server counted 100.0 (-21.9%); the engine stopped early: \
             set [target] engine so ignore_eos/min_tokens are sent"
        );
        assert_eq!(
            shown(Note::NoBaseline("baselines/x.json".into())),
            "no baseline at baselines/x.json (save one with --save-baseline)"
        );
        assert_eq!(
            shown(Note::NotLikeForLike(Since::Baseline, "tokenizer: a → b".into())),
            "not like-for-like since the baseline (tokenizer: a → b): the comparison is shown, not judged"
        );
        assert_eq!(
            shown(Note::ClientNearSaturation(0.93)),
            "client near saturation (load threads 93% busy); `slotest calibrate` shows its ceiling"
        );
        assert_eq!(shown(Note::Merged(4, 12.4)), "merged from 4 load shards (their starts 12 ms apart)");
    }

    #[test]
    fn findings_are_the_diagnosis_and_the_split_and_every_kind_is_snake_case() {
        let notes = [Note::NotJudged("x".into()), Note::NoBaseline("p".into()), Note::Merged(2, 1.0)];
        assert!(notes.iter().all(|n| !n.is_finding()));
        assert!(notes.iter().all(|n| n.kind().chars().all(|c| c.is_ascii_lowercase() || c == '_')));
        assert_eq!(notes.map(|n| n.kind()), ["not_judged", "no_baseline", "merged"]);
    }
}
