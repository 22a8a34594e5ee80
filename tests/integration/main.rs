//! The integration tests, one binary: each `tests/<name>.rs` is the module `<name>` (run one
//! with `cargo test --test integration <name>::`). One binary links the library once where
//! 36 binaries linked it 36 times, and libtest runs its tests side by side: they
//! mostly wait on the clock (a mock engine's pacing, a child process), so `cargo test` takes a
//! fraction of the time it took binary after binary. `.cargo/config.toml` sets how many run at
//! once. Apart, in binaries of their own: the real engine (`tests/llamacpp.rs`, its timing
//! alone on the CPU), the long statistical proofs (`tests/gate_quality.rs`, CPU-bound), the
//! harnesses (`tests/slo.rs`, `tests/suites_plan.rs`) and `tests/gate_proof.rs` (a feature).

#[path = "../support/queue.rs"]
mod queue;
#[path = "../support/situations.rs"]
mod situations;
#[path = "../support/mod.rs"]
mod support;
#[path = "../truth_server/mod.rs"]
mod truth_server;

#[path = "../ab.rs"]
mod ab;
#[path = "../action.rs"]
mod action;
#[path = "../adapters.rs"]
mod adapters;
#[path = "../agent.rs"]
mod agent;
#[path = "../architecture.rs"]
mod architecture;
#[path = "../baseline_cli.rs"]
mod baseline_cli;
#[path = "../bisect.rs"]
mod bisect;
#[path = "../cancel.rs"]
mod cancel;
#[path = "../capacity.rs"]
mod capacity;
#[path = "../capacity_cut.rs"]
mod capacity_cut;
#[path = "../cli.rs"]
mod cli;
#[path = "../conversation.rs"]
mod conversation;
#[path = "../diagnosis_bank.rs"]
mod diagnosis_bank;
#[path = "../docs.rs"]
mod docs;
#[path = "../embeddings.rs"]
mod embeddings;
#[path = "../engines.rs"]
mod engines;
#[path = "../faults.rs"]
mod faults;
#[path = "../fleet.rs"]
mod fleet;
#[path = "../history_changes.rs"]
mod history_changes;
#[path = "../hostile.rs"]
mod hostile;
#[path = "../html_report.rs"]
mod html_report;
#[path = "../images.rs"]
mod images;
#[path = "../import.rs"]
mod import;
#[path = "../init.rs"]
mod init;
#[path = "../interrupts.rs"]
mod interrupts;
#[path = "../library.rs"]
mod library;
#[path = "../llamacpp_script.rs"]
mod llamacpp_script;
#[path = "../logs.rs"]
mod logs;
#[path = "../long_context.rs"]
mod long_context;
#[path = "../mix.rs"]
mod mix;
#[path = "../network.rs"]
mod network;
#[path = "../nonstreaming.rs"]
mod nonstreaming;
#[path = "../otlp.rs"]
mod otlp;
#[path = "../outputs.rs"]
mod outputs;
#[path = "../prefix_trace.rs"]
mod prefix_trace;
#[path = "../progress.rs"]
mod progress;
#[path = "../quality.rs"]
mod quality;
#[path = "../reasoning.rs"]
mod reasoning;
#[path = "../rerender.rs"]
mod rerender;
#[path = "../reruns.rs"]
mod reruns;
#[path = "../responses.rs"]
mod responses;
#[path = "../roofline.rs"]
mod roofline;
#[path = "../sequential.rs"]
mod sequential;
#[path = "../server.rs"]
mod server;
#[path = "../shards.rs"]
mod shards;
#[path = "../slo_bounds.rs"]
mod slo_bounds;
#[path = "../steady.rs"]
mod steady;
#[path = "../structured.rs"]
mod structured;
#[path = "../tools.rs"]
mod tools;
#[path = "../truth.rs"]
mod truth;
#[path = "../tune.rs"]
mod tune;
#[path = "../user_crate.rs"]
mod user_crate;
#[path = "../vllm_script.rs"]
mod vllm_script;
#[path = "../workloads.rs"]
mod workloads;
