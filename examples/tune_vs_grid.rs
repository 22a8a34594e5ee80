//! `slotest tune` against the exhaustive grid (`slotest tune --grid`, what vLLM's auto_tune
//! does), on the same knob values, side by side: each one's best objective and what it spent.
//!
//! The mock shaped as vLLM: `slotest mock-server --max-num-seqs × --max-num-batched-tokens ×
//! --kv-capacity`, 4 values each (64 configurations), one row (32 users, 1,024-token prompts,
//! 64-token answers, SLOs on TTFT p95 and TPOT p95), tune started from three bad
//! configurations: too few sequences, a starved KV cache, a prefill budget smaller than the
//! prompts. With `SLOTEST_LLAMA_SERVER` and `SLOTEST_GEMMA_GGUF` set (`eval "$(bash
//! scripts/llamacpp.sh env)"`), llama.cpp too: `-np` × `-t` × `-ub`, tune started from `-np 1`.
//!
//! For capacity (`objective = "capacity"`, each configuration searched): the mock-server's fast
//! profile, `--max-num-seqs × --kv-capacity` (4 × 5), a concurrency search under TTFT p95 <
//! 60 ms, tune started from too few sequences, a starved KV cache, and both at once.
//!
//! `cargo run --release --example tune_vs_grid [-- mock|capacity|llamacpp|all]` (default all;
//! the mock's grid takes about 7 minutes, capacity's about 3, llama.cpp's about 8 on 2 cores).

use std::path::Path;

/// One run's outcome, from its results.json `tune`.
struct Outcome {
    name: String,
    best: f64,
    best_config: String,
    requests: u64,
    restarts: u64,
    seconds: f64,
    steps: String,
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args: Vec<String> = std::env::args().collect();
    // Re-invoked as the engine: `tune_vs_grid cli mock-server …`.
    if args.get(1).map(String::as_str) == Some("cli") {
        let _ = slotest::main_with_args(&args[1..]);
        return Ok(());
    }
    let which = args.get(1).cloned().unwrap_or_else(|| "all".into());
    let runs = |part: &str| which == part || which == "all";
    let dir = std::env::temp_dir().join(format!("slotest-tune-vs-grid-{}", std::process::id()));
    std::fs::create_dir_all(&dir)?;
    let me = std::env::current_exe()?;
    if runs("mock") {
        let engine = format!(
            "{} cli mock-server --port {{port}} --profile h100-8b --max-num-seqs {{seqs}} \
             --max-num-batched-tokens {{budget}} --kv-capacity {{kv}}",
            me.display()
        );
        let suite = format!(
            "[suite]\nname = \"vllm_shaped\"\n[server]\ncommand = \"{engine}\"\n\
             vars = {{ seqs = \"64\", budget = \"8192\", kv = \"400000\" }}\n[target]\napi = \"completions\"\n\
             [[row]]\nname = \"chat\"\ninput_tokens = 1024\noutput_tokens = 64\nwarmup = {{ requests = 8 }}\n\
             measure = {{ requests = 128 }}\nload = {{ concurrency = 32 }}\nslo = [\"ttft.p95 < 2s\", \"tpot.p95 < 100ms\"]\n\
             [tune]\nobjective = \"output_throughput\"\nserver.seqs = [4, 16, 64, 256]\n\
             server.budget = [256, 1024, 4096, 16384]\nserver.kv = [8000, 32000, 128000, 512000]\n"
        );
        let starts: &[(&str, &[&str])] = &[
            ("too few sequences (seqs=4)", &["--var", "seqs=4"]),
            ("starved KV cache (kv=8000)", &["--var", "kv=8000"]),
            ("prefill budget under the prompts (budget=256)", &["--var", "budget=256"]),
        ];
        compare(&dir.join("mock"), &suite, starts, 0.05, 0.25)?;
    }
    if runs("capacity") {
        let engine = format!(
            "{} cli mock-server --port {{port}} --profile fast --max-num-seqs {{seqs}} \
             --max-num-batched-tokens 4096 --kv-capacity {{kv}}",
            me.display()
        );
        let suite = format!(
            "[suite]\nname = \"capacity\"\n[server]\ncommand = \"{engine}\"\n\
             vars = {{ seqs = \"64\", kv = \"200000\" }}\n[target]\napi = \"completions\"\n\
             [[row]]\nname = \"chat\"\ninput_tokens = 512\noutput_tokens = 32\nwarmup = {{ requests = 4 }}\n\
             measure = {{ requests = 64 }}\nload = {{ concurrency = 4 }}\nslo = [\"ttft.p95 < 60ms\"]\n\
             search = {{ vary = \"concurrency\", min = 1, max = 64, precision = \"10%\" }}\n\
             [tune]\nobjective = \"capacity\"\nserver.seqs = [1, 4, 16, 64]\n\
             server.kv = [600, 2400, 9600, 38400, 200000]\n"
        );
        let starts: &[(&str, &[&str])] = &[
            ("too few sequences (seqs=4)", &["--var", "seqs=4"]),
            ("starved KV cache (kv=2400)", &["--var", "kv=2400"]),
            ("both (seqs=1, kv=600)", &["--var", "seqs=1", "--var", "kv=600"]),
        ];
        compare(&dir.join("capacity"), &suite, starts, 0.05, 0.25)?;
    }
    if runs("llamacpp") {
        let (Ok(server), Ok(model)) =
            (std::env::var("SLOTEST_LLAMA_SERVER"), std::env::var("SLOTEST_GEMMA_GGUF"))
        else {
            println!("llama.cpp: skipped (eval \"$(bash scripts/llamacpp.sh env)\" to run it)");
            return Ok(());
        };
        let suite = format!(
            "[suite]\nname = \"llamacpp\"\n[server]\ncommand = \"{server} -m {model} --port {{port}} -c 4096 \
             -np {{np}} -t {{t}} -ub {{ub}} -b 2048 --metrics --no-webui\"\nvars = {{ np = \"1\", t = \"2\", ub = \"512\" }}\n\
             [target]\napi = \"completions\"\nengine = \"llamacpp\"\n\
             [[row]]\nname = \"chat\"\ninput_tokens = 128\noutput_tokens = 32\nwarmup = {{ requests = 2 }}\n\
             measure = {{ requests = 32 }}\nload = {{ concurrency = 4 }}\n\
             [tune]\nobjective = \"output_throughput\"\nserver.np = [1, 2, 4]\nserver.t = [1, 2]\nserver.ub = [64, 512]\n"
        );
        compare(&dir.join("llamacpp"), &suite, &[("-np 1", &["--var", "np=1"])], 0.10, 0.50)?;
    }
    Ok(())
}

/// The grid, then tune from each start, and the table: best objective against the grid's,
/// requests and engine starts against the grid's.
fn compare(
    dir: &Path,
    suite: &str,
    starts: &[(&str, &[&str])],
    within: f64,
    at_most: f64,
) -> Result<(), Box<dyn std::error::Error>> {
    std::fs::create_dir_all(dir)?;
    let path = dir.join("suite.toml");
    std::fs::write(&path, suite)?;
    let grid = run(&path, &dir.join("grid"), "grid", &["--grid"])?;
    let mut rows = vec![];
    for (i, (name, extra)) in starts.iter().enumerate() {
        rows.push(run(&path, &dir.join(format!("tune{i}")), name, extra)?);
    }
    println!(
        "\n{:<48} {:>10} {:>8} {:>9} {:>8} {:>7} {:>6}  best configuration; steps",
        "", "objective", "of grid", "requests", "of grid", "starts", "s"
    );
    let show = |o: &Outcome| {
        println!(
            "{:<48} {:>10.1} {:>7.1}% {:>9} {:>7.1}% {:>7} {:>6.0}  {}; {}",
            o.name,
            o.best,
            100.0 * o.best / grid.best,
            o.requests,
            100.0 * o.requests as f64 / grid.requests as f64,
            o.restarts,
            o.seconds,
            o.best_config,
            o.steps
        );
    };
    show(&grid);
    let mut met = true;
    for o in &rows {
        show(o);
        met &= o.best >= (1.0 - within) * grid.best && (o.requests as f64) <= at_most * grid.requests as f64;
    }
    println!(
        "goal (within {:.0} % of the grid's best at no more than {:.0} % of its requests): {}\n",
        within * 100.0,
        at_most * 100.0,
        if met { "met" } else { "NOT met" }
    );
    Ok(())
}

/// One `slotest tune` (or `--grid`) in this process; its results.json `tune` read back.
fn run(suite: &Path, out: &Path, name: &str, extra: &[&str]) -> Result<Outcome, Box<dyn std::error::Error>> {
    let mut argv: Vec<String> = ["slotest", "tune", "--suite"].map(String::from).to_vec();
    argv.push(suite.display().to_string());
    argv.extend(["--results".to_string(), out.display().to_string()]);
    argv.extend(extra.iter().map(|s| s.to_string()));
    eprintln!("== {name}: {}", argv[1..].join(" "));
    let _ = slotest::main_with_args(argv);
    let doc: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(out.join("results.json"))?)?;
    let t = &doc["tune"];
    let config = |c: &serde_json::Value| -> String {
        c.as_array()
            .into_iter()
            .flatten()
            .map(|kv| format!("{}={}", kv[0].as_str().unwrap_or(""), kv[1].as_str().unwrap_or("")))
            .collect::<Vec<_>>()
            .join(" ")
    };
    let steps: Vec<String> = t["steps"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|s| {
            format!(
                "{} {}→{} {}",
                s["var"].as_str().unwrap_or(""),
                s["from"].as_str().unwrap_or(""),
                s["to"].as_str().unwrap_or(""),
                s["outcome"].as_str().unwrap_or("")
            )
        })
        .collect();
    Ok(Outcome {
        name: name.to_string(),
        best: t["best_objective"].as_f64().unwrap_or(0.0),
        best_config: config(&t["best"]),
        requests: t["spent"]["requests"].as_u64().unwrap_or(0),
        restarts: t["spent"]["restarts"].as_u64().unwrap_or(0),
        seconds: t["spent"]["elapsed_s"].as_f64().unwrap_or(0.0),
        steps: if steps.is_empty() {
            t["stopped"].as_str().unwrap_or("").to_string()
        } else {
            steps.join(", ")
        },
    })
}
