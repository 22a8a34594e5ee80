//! What a case was measured on, key by key — engine and version, the server command and its
//! knobs, model and tokenizer identity, GPU, host CPU, slotest version, suite and case — and
//! the diff every comparison prints (`server.var.threads: 2 → 1`). Ephemeral values (ports,
//! loopback addresses, pids, times) are never keys, so a rerun on another port changes nothing.
//! A changed model, tokenizer or GPU makes a comparison not like-for-like. Pure.

use crate::load::TargetInfo;
use crate::plan::Case;
use std::collections::BTreeMap;

/// Key → value; keys sort into groups (`engine…`, `gpu…`, `host…`, `server…`).
pub type Fingerprint = BTreeMap<String, String>;

/// The key of the engine's version (what a trend across runs names beside a shift).
pub const ENGINE_VERSION: &str = "engine.version";

/// Keys whose change makes two measurements not like-for-like: a different model, tokenizer
/// or GPU measures a different system, not a faster or slower one.
pub const LIKE_FOR_LIKE: &[&str] = &["model", "model.file", "tokenizer", "gpu", "gpu.count", "gpu.mig"];

/// Whether `key` describes the server measured (engine, model, tokenizer, its command), not
/// the machine that loaded it: load shards of one run must agree on these.
pub fn is_served(key: &str) -> bool {
    matches!(
        key,
        "target.host" | "engine" | ENGINE_VERSION | "model" | "model.file" | "model.max_len" | "tokenizer"
    ) || key.starts_with("server.")
}

/// The host part of a base URL as a fingerprint keeps it: no port, and any loopback address
/// is `loopback` (a server slotest started listens on a fresh port every run). The mock
/// (`mock:fast`) keeps its profile.
pub fn stable_host(host: &str) -> String {
    if host.starts_with("mock") {
        return host.to_string();
    }
    let name = match host.strip_prefix('[') {
        Some(v6) => v6.split(']').next().unwrap_or(v6),
        None if host.matches(':').count() == 1 => host.split(':').next().unwrap_or(host),
        None => host,
    };
    let loopback = name == "localhost"
        || name == "::1"
        || name.parse::<std::net::IpAddr>().is_ok_and(|ip| ip.is_loopback() || ip.is_unspecified());
    if loopback { "loopback".to_string() } else { name.to_string() }
}

/// What the runner reads of the machine and the model files, for every case of a run.
#[derive(Debug, Clone, Default)]
pub struct Host {
    /// The host's CPU model, when the OS tells.
    pub cpu_model: Option<String>,
    /// CPUs available to the run.
    pub cpus: Option<u64>,
    /// Identity of each model file a started server was given (its resolved command →
    /// "size bytes, header hash").
    pub model_files: BTreeMap<String, String>,
}

/// The fingerprint of one measured case.
pub fn of(
    case: &Case,
    target: &TargetInfo,
    gpu: Option<&crate::telemetry::gpu::GpuTelemetry>,
    run: &Host,
) -> Fingerprint {
    let mut f = Fingerprint::new();
    let mut put = |k: &str, v: Option<String>| {
        if let Some(v) = v.filter(|v| !v.is_empty()) {
            f.insert(k.to_string(), v);
        }
    };
    if target.fleet.is_empty() {
        put("target.host", Some(stable_host(&target.host)));
    } else {
        // Every endpoint's host, engine, version and model: a replica upgraded alone shows.
        let hosts: Vec<String> = target.fleet.iter().map(|r| stable_host(&r.host)).collect();
        put("target.host", Some(hosts.join(", ")));
        put("fleet.size", Some(target.fleet.len().to_string()));
        put("fleet.routing", Some(case.target.routing.name().to_string()));
        for (k, r) in target.fleet.iter().enumerate() {
            put(&format!("fleet.{k}.engine"), r.engine.map(|e| e.name().to_string()));
            put(&format!("fleet.{k}.engine.version"), r.engine_version.clone());
            put(&format!("fleet.{k}.model"), Some(r.model.clone()));
        }
    }
    put("engine", target.engine.map(|e| e.name().to_string()));
    put(ENGINE_VERSION, target.engine_version.clone());
    put("model", Some(target.model.clone()));
    put("model.max_len", target.max_model_len.map(|n| n.to_string()));
    put("tokenizer", target.tokenizer_id.clone());
    if let Some(server) = &case.server {
        put("server.command", Some(crate::redact::flags(&server.command).into_owned()));
        for (k, v) in &server.vars {
            // A secret is kept as a short hash: a changed key still shows as a change.
            let shown = match server.secret.contains(k) {
                true => format!("secret {:08x}", crate::plan::fnv1a(v.as_bytes()) as u32),
                false => v.clone(),
            };
            put(&format!("server.var.{k}"), Some(shown));
        }
        put("model.file", run.model_files.get(&server.resolved()).cloned());
    }
    if let Some(g) = gpu.filter(|g| !g.devices.is_empty()) {
        put("gpu", Some(g.describe()));
        put("gpu.count", Some(g.devices.len().to_string()));
        put("gpu.driver", g.driver.clone());
        put("gpu.cuda", g.cuda.clone());
        let each = |f: &dyn Fn(&crate::telemetry::gpu::GpuSettings) -> Option<String>| {
            let mut v: Vec<String> = g.devices.iter().filter_map(|d| f(&d.info.settings)).collect();
            v.dedup();
            (!v.is_empty()).then(|| v.join(", "))
        };
        let on = |b: bool| if b { "on" } else { "off" }.to_string();
        put("gpu.power_limit", each(&|s| s.power_limit_w.map(|w| format!("{w:.0} W"))));
        put("gpu.clock.sm_app", each(&|s| s.app_sm_clock_mhz.map(|c| format!("{c} MHz"))));
        put("gpu.clock.sm_max", each(&|s| s.max_sm_clock_mhz.map(|c| format!("{c} MHz"))));
        put("gpu.mig", each(&|s| s.mig.map(on)));
        put("gpu.ecc", each(&|s| s.ecc.map(on)));
    }
    put("host.cpu", run.cpu_model.clone());
    put("host.cores", run.cpus.map(|n| n.to_string()));
    put("slotest.version", Some(env!("CARGO_PKG_VERSION").to_string()));
    put("suite.hash", Some(case.suite_file.1.clone()));
    put("case.definition", Some(case.definition_hash()));
    put(SCHEMA, Some(crate::plan::structured::schemas_id(&case.workload)));
    f
}

/// One key that differs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Change {
    /// The key (`server.var.threads`).
    pub key: String,
    /// Its value before (the baseline, side A).
    pub old: String,
    /// Its value now (side B).
    pub new: String,
}

impl std::fmt::Display for Change {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}: {} → {}", self.key, self.old, self.new)
    }
}

impl Change {
    /// Whether this change makes the comparison not like-for-like, whatever the engine runs on.
    pub fn breaks_like_for_like(&self) -> bool {
        LIKE_FOR_LIKE.contains(&self.key.as_str())
    }
}

/// The host's keys that break like-for-like where the engine computes on the host's CPU.
pub const HOST_CPU: &[&str] = &["host.cpu", "host.cores"];

/// The key of the JSON Schemas the answers were asked to follow (`none` without): the same row
/// with and without one compares, and says so.
pub const SCHEMA: &str = "workload.schema";

/// Whether both sides' engine computed on the host's own CPU: a server on this host (loopback,
/// as every server slotest starts) with no GPU on either side — llama.cpp's CPU build. Its
/// speed is the CPU's, so another CPU or core count is to it what another GPU is to vLLM. The
/// mock is not one: its engine keeps simulated time (a step the host woke late for is made up
/// by the next), so its baselines hold on any host; nor is a remote engine, whose host is not
/// the one `host.cpu` describes.
pub fn on_host_cpu(old: &Fingerprint, new: &Fingerprint) -> bool {
    let local =
        |f: &Fingerprint| f.get("target.host").is_some_and(|h| h == "loopback") && !f.contains_key("gpu");
    local(old) && local(new)
}

/// The changes worth a note: all but the load generator's host ([`HOST_CPU`]) where the mock
/// served both sides. The mock's engine keeps simulated time, so the host that runs it is no
/// part of what it measures: its shipped baselines hold on any machine, and a fresh clone's
/// first run names no change it did not make.
pub fn noted<'a>(old: &Fingerprint, new: &Fingerprint, changes: &'a [Change]) -> Vec<&'a Change> {
    let mock = |f: &Fingerprint| f.get("target.host").is_some_and(|h| h.starts_with("mock"));
    let hostless = mock(old) && mock(new);
    changes.iter().filter(|c| !(hostless && HOST_CPU.contains(&c.key.as_str()))).collect()
}

/// The changes that make a comparison of `old` with `new` not like-for-like: [`LIKE_FOR_LIKE`]'s
/// keys always, [`HOST_CPU`]'s where the engine computes on the host ([`on_host_cpu`]).
pub fn unlike<'a>(old: &Fingerprint, new: &Fingerprint, changes: &'a [Change]) -> Vec<&'a Change> {
    let cpu = on_host_cpu(old, new);
    changes
        .iter()
        .filter(|c| c.breaks_like_for_like() || (cpu && HOST_CPU.contains(&c.key.as_str())))
        .collect()
}

/// The keys whose values differ. A key recorded on one side only (an older baseline, a run
/// without telemetry) is not a change — except the GPU, whose absence on one side is.
pub fn diff(old: &Fingerprint, new: &Fingerprint) -> Vec<Change> {
    let keys: std::collections::BTreeSet<&String> = old.keys().chain(new.keys()).collect();
    keys.into_iter()
        .filter_map(|k| {
            let (a, b) = (old.get(k), new.get(k));
            let differs = match (a, b) {
                (Some(a), Some(b)) => a != b,
                (None, None) => false,
                _ => k == "gpu",
            };
            let shown = |v: Option<&String>| v.cloned().unwrap_or_else(|| "none".to_string());
            differs.then(|| Change { key: k.clone(), old: shown(a), new: shown(b) })
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hosts_lose_ports_and_loopback_addresses() {
        assert_eq!(stable_host("127.0.0.1:43077"), "loopback");
        assert_eq!(stable_host("localhost:8000"), "loopback");
        assert_eq!(stable_host("[::1]:8000"), "loopback");
        assert_eq!(stable_host("0.0.0.0:8000"), "loopback");
        assert_eq!(stable_host("gpu-7.internal:8000"), "gpu-7.internal");
        assert_eq!(stable_host("10.0.0.5:8000"), "10.0.0.5");
        assert_eq!(stable_host("mock:fast"), "mock:fast");
    }

    #[test]
    fn a_gpus_power_cap_clocks_mig_and_ecc_are_keys() {
        use crate::telemetry::gpu::{GpuInfo, GpuSettings, summarize};
        let info = |power: f64, app: u32| GpuInfo {
            index: 0,
            name: "NVIDIA H100 80GB HBM3".into(),
            memory_total_gib: 79.6,
            peak_bandwidth_bytes_per_s: None,
            settings: GpuSettings {
                power_limit_w: Some(power),
                app_sm_clock_mhz: Some(app),
                max_sm_clock_mhz: Some(1980),
                mig: Some(false),
                ecc: Some(true),
            },
        };
        let case = crate::testutil::case("[[row]]\nname = \"r\"\n");
        let target = TargetInfo::default();
        let fp = |i: GpuInfo| {
            let g = summarize(
                &[i],
                Some("570.86".into()),
                Some("12.8".into()),
                &[crate::testutil::gpu_sample(0.0), crate::testutil::gpu_sample(1.0)],
                (0.0, 1.0),
            );
            of(&case, &target, g.as_ref(), &Host::default())
        };
        let (full, capped) = (fp(info(700.0, 1980)), fp(info(500.0, 1410)));
        assert_eq!(full["gpu.power_limit"], "700 W");
        assert_eq!(full["gpu.clock.sm_app"], "1980 MHz");
        assert_eq!(full["gpu.clock.sm_max"], "1980 MHz");
        assert_eq!((full["gpu.mig"].as_str(), full["gpu.ecc"].as_str()), ("off", "on"));
        let lines: Vec<String> = diff(&full, &capped).iter().map(ToString::to_string).collect();
        assert_eq!(lines, ["gpu.clock.sm_app: 1980 MHz → 1410 MHz", "gpu.power_limit: 700 W → 500 W"]);
        assert!(
            diff(&full, &capped).iter().all(|c| !c.breaks_like_for_like()),
            "a capped GPU is still that GPU"
        );
    }

    #[test]
    fn the_diff_names_changed_keys_only() {
        let fp = |pairs: &[(&str, &str)]| -> Fingerprint {
            pairs.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect()
        };
        let a = fp(&[
            ("target.host", "loopback"),
            ("server.var.threads", "2"),
            ("tokenizer", "ab12"),
            ("gpu", "H100"),
        ]);
        let b = fp(&[
            ("target.host", "loopback"),
            ("server.var.threads", "1"),
            ("tokenizer", "ab12"),
            ("host.cpu", "EPYC"),
        ]);
        let d = diff(&a, &b);
        let lines: Vec<String> = d.iter().map(ToString::to_string).collect();
        assert_eq!(lines, ["gpu: H100 → none", "server.var.threads: 2 → 1"]);
        assert!(d[0].breaks_like_for_like());
        assert!(!d[1].breaks_like_for_like());
    }

    #[test]
    fn another_cpu_is_another_system_only_for_an_engine_on_this_hosts_cpu() {
        let fp = |host: &str, cpu: &str, gpu: Option<&str>| -> Fingerprint {
            let mut f: Fingerprint = [("target.host", host), ("host.cpu", cpu), ("host.cores", "2")]
                .iter()
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect();
            if let Some(g) = gpu {
                f.insert("gpu".into(), g.into());
            }
            f
        };
        let unlike_keys = |a: &Fingerprint, b: &Fingerprint| -> Vec<String> {
            unlike(a, b, &diff(a, b)).iter().map(|c| c.key.clone()).collect()
        };
        // llama.cpp's CPU build on this host: the CPU is its GPU.
        let (xeon, epyc) = (fp("loopback", "Xeon", None), fp("loopback", "EPYC", None));
        assert_eq!(unlike_keys(&xeon, &epyc), ["host.cpu"]);
        let mut four = xeon.clone();
        four.insert("host.cores".into(), "4".into());
        assert_eq!(unlike_keys(&xeon, &four), ["host.cores"]);
        // The mock keeps simulated time; an engine with a GPU, or on another machine, is not
        // measured by the client's CPU: the change is shown and judged.
        assert!(unlike_keys(&fp("mock:fast", "Xeon", None), &fp("mock:fast", "EPYC", None)).is_empty());
        assert!(
            unlike_keys(&fp("loopback", "Xeon", Some("H100")), &fp("loopback", "EPYC", Some("H100")))
                .is_empty()
        );
        assert!(unlike_keys(&fp("gpu-7", "Xeon", None), &fp("gpu-7", "EPYC", None)).is_empty());
    }

    /// The mock keeps simulated time: another load generator is no note on it (a fresh clone's
    /// first run against the shipped baselines names nothing), while on any real engine it is.
    #[test]
    fn the_load_generators_host_is_no_note_where_the_mock_served_both_sides() {
        let fp = |host: &str, cpu: &str| -> Fingerprint {
            [("target.host", host), ("host.cpu", cpu), ("suite.hash", "1")]
                .iter()
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect()
        };
        let noted_keys = |a: &Fingerprint, b: &Fingerprint| -> Vec<String> {
            noted(a, b, &diff(a, b)).iter().map(|c| c.key.clone()).collect()
        };
        assert!(noted_keys(&fp("mock:h100-8b", "Xeon"), &fp("mock:h100-8b", "EPYC")).is_empty());
        let mut edited = fp("mock:h100-8b", "EPYC");
        edited.insert("suite.hash".into(), "2".into());
        assert_eq!(noted_keys(&fp("mock:h100-8b", "Xeon"), &edited), ["suite.hash"]);
        assert_eq!(noted_keys(&fp("gpu-7", "Xeon"), &fp("gpu-7", "EPYC")), ["host.cpu"]);
        assert_eq!(noted_keys(&fp("loopback", "Xeon"), &fp("loopback", "EPYC")), ["host.cpu"]);
    }
}
