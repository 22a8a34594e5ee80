use super::*;
use crate::suite::{Source, parse};
use indoc::indoc;

fn plan_env(text: &str, env: &dyn Fn(&str) -> Option<String>) -> Result<Plan, String> {
    let parsed = parse(Source::new("t.toml", text)).map_err(|e| e.to_string())?;
    build_with_env(&[parsed], &Overrides::default(), env).map_err(|e| e.to_string())
}

fn plan(text: &str) -> Result<Plan, String> {
    plan_env(text, &|_| None)
}

fn first_line(err: String) -> String {
    err.lines().next().unwrap_or_default().to_string()
}

#[test]
fn defaults_are_inherited_field_by_field() {
    let p = plan(indoc! {r#"
        [suite]
        name = "chat"
        [defaults]
        input_tokens = 100
        output_tokens = 20
        load = { concurrency = 4 }
        slo = ["ttft.p95 < 1s"]
        [[row]]
        name = "a"
        [[row]]
        name = "b"
        output_tokens = 50
        slo_extra = ["tpot.p95 < 40ms"]
    "#})
    .expect("valid");
    let [a, b] = &p.cases[..] else { panic!("two cases") };
    assert_eq!(a.name, "chat::a");
    assert_eq!(a.workload.output_tokens, Length::Fixed { tokens: 20 });
    assert_eq!(b.workload.output_tokens, Length::Fixed { tokens: 50 });
    assert_eq!(b.workload.input_tokens, Length::Fixed { tokens: 100 });
    assert_eq!(b.load, LoadMode::Closed { concurrency: 4 });
    let exprs: Vec<_> = b.slos.iter().map(|s| s.expr.as_str()).collect();
    assert_eq!(exprs, ["ttft.p95 < 1s", "tpot.p95 < 40ms", "error_rate < 1%"]);
    assert!(b.slos[2].implicit);
}

#[test]
fn sweeps_multiply_and_name_cases() {
    let p = plan(indoc! {r#"
        [[row]]
        name = "sat"
        sweep = { concurrency = [1, 8], output_tokens = [64, 128] }
    "#})
    .expect("valid");
    let names: Vec<_> = p.cases.iter().map(|c| c.name.as_str()).collect();
    assert_eq!(
        names,
        [
            "t::sat::concurrency=1,output_tokens=64",
            "t::sat::concurrency=1,output_tokens=128",
            "t::sat::concurrency=8,output_tokens=64",
            "t::sat::concurrency=8,output_tokens=128",
        ]
    );
    assert_eq!(p.cases[3].load, LoadMode::Closed { concurrency: 8 });
}

#[test]
fn open_loop_and_env_expansion() {
    let p = plan_env(
        indoc! {r#"
            [target]
            base_url = "${SLOTEST_TARGET:-mock}"
            api = "chat"
            [[row]]
            name = "r"
            load = { rate = 4.0, arrival = "gamma", burstiness = 0.5, max_concurrency = 16 }
            measure = { duration = "30s", max_requests = 100 }
        "#},
        &|k| (k == "SLOTEST_TARGET").then(|| "http://127.0.0.1:8000/v1/".to_string()),
    )
    .expect("valid");
    let c = &p.cases[0];
    assert_eq!(c.target.endpoint, Endpoint::Url("http://127.0.0.1:8000".into()));
    assert_eq!(
        c.load,
        LoadMode::Open { rate: 4.0, arrival: Arrival::Gamma { burstiness: 0.5 }, max_concurrency: Some(16) }
    );
    assert_eq!(c.measure, Phase::Duration { duration: Duration::from_secs(30), max_requests: Some(100) });
}

#[test]
fn errors_carry_line_column_and_hint() {
    let cases: &[(&str, &str)] = &[
        ("[[row]]\nname = \"a\"\nmesure = { requests = 1 }\n", "t.toml:3:1: unknown field `mesure`"),
        (
            "[[row]]\nname = \"a\"\nwarmup = { duration = \"5 sex\" }\n",
            "t.toml:3:23: unknown duration unit `sex` in `5 sex`",
        ),
        (
            "[[row]]\nname = \"a\"\nslo = [\"ttft.p95 < fast\"]\n",
            "t.toml:3:8: bad SLO: `fast` does not start with a number",
        ),
        (
            "[[row]]\nname = \"a\"\nload = { concurrency = 2, rate = 1.0 }\n",
            "t.toml:3:8: load sets both `concurrency` (closed loop) and `rate` (open loop)",
        ),
        (
            "[[row]]\nname = \"a\"\nload = { rate = 1.0 }\nsweep = { concurrency = [1] }\n",
            "t.toml:4:26: cannot sweep `concurrency` on a row whose load is not closed loop ({ concurrency = N })",
        ),
        (
            "[target]\napi = \"chta\"\n[[row]]\nname = \"a\"\n",
            "t.toml:2:7: unknown variant `chta`, expected one of `completions`, `chat`, `responses`",
        ),
        (
            "[target]\nbase_url = \"${NOPE}\"\n[[row]]\nname = \"a\"\n",
            "t.toml:2:12: environment variable `NOPE` is not set",
        ),
        ("[[row]]\nname = \"a\"\n[[row]]\nname = \"a\"\n", "t.toml:4:8: row `a` is defined twice"),
        ("[[row]]\nname = \"a\"\nmeasure = { requests = 0 }\n", "t.toml:3:11: measure phase has 0 requests"),
        ("[[row]]\nname = \"a\"\nsweep = { colour = [1] }\n", "t.toml:3:20: unknown sweep axis `colour`"),
        ("[suite]\nname = \"x\"\n", "t.toml:1:1: suite has no [[row]]"),
        (
            "[baseline]\ntolerance = { \"ttft.p97\" = \"5%\" }\n[[row]]\nname = \"a\"\n",
            "t.toml:2:28: unknown baseline metric `ttft.p97`",
        ),
        (
            "[[row]]\nname = \"a\"\nbaseline = { tolerance = { \"ttft.p95\" = \"lots\" } }\n",
            "t.toml:3:41: bad tolerance `lots`",
        ),
        ("[[row]]\nname = \"a\"\nrepeat = 0\n", "t.toml:3:10: repeat must be at least 1"),
    ];
    for (text, want) in cases {
        let err = plan(text).expect_err(text);
        assert!(first_line(err.clone()).starts_with(want), "full error:\n{err}");
        assert!(err.contains("hint:"), "no hint in:\n{err}");
    }
}

#[test]
fn baseline_gates_merge_suite_and_row() {
    let p = plan(indoc! {r#"
        [baseline]
        tolerance = { "ttft.p95" = "5%", "itl.p50" = "20%" }
        [[row]]
        name = "a"
        [[row]]
        name = "b"
        baseline = { metrics = ["ttft.p95", "output_throughput"], tolerance = { "output_throughput" = "2%" } }
    "#})
    .expect("valid");
    let tol = |c: &Case, name: &str| c.gates.iter().find(|(g, _)| g.name() == name).map(|(_, t)| *t);
    let (a, b) = (&p.cases[0], &p.cases[1]);
    assert_eq!(a.gates.len(), gate::DEFAULT_GATES.len() + 1, "defaults plus itl.p50");
    assert_eq!(tol(a, "ttft.p95"), Some(0.05));
    assert_eq!(tol(a, "itl.p50"), Some(0.20));
    assert_eq!(tol(a, "tpot.p95"), Some(0.10));
    // The row's metric list replaces the defaults; the suite's tolerances still apply to it.
    let names: Vec<_> = b.gates.iter().map(|(g, _)| g.name()).collect();
    assert_eq!(names, ["ttft.p95", "output_throughput", "itl.p50"]);
    assert_eq!(tol(b, "output_throughput"), Some(0.02));
}

#[test]
fn typo_hint_names_the_closest_key() {
    let err = plan("[[row]]\nname = \"a\"\nmesure = { requests = 1 }\n").expect_err("typo");
    insta::assert_snapshot!("typo_hint", err);
}

mod properties {
    use super::*;
    use proptest::prelude::*;

    proptest! {
        #[test]
        fn sweeps_make_the_cartesian_product(
            conc in prop::collection::btree_set(1u64..500, 1..5),
            out in prop::collection::btree_set(1u64..4000, 1..4),
        ) {
            let list = |s: &std::collections::BTreeSet<u64>| s.iter().map(u64::to_string).collect::<Vec<_>>().join(", ");
            let text = format!("[[row]]\nname = \"s\"\nsweep = {{ concurrency = [{}], output_tokens = [{}] }}\n", list(&conc), list(&out));
            let p = plan(&text).expect("valid sweep");
            prop_assert_eq!(p.cases.len(), conc.len() * out.len());
            let names: std::collections::HashSet<_> = p.cases.iter().map(|c| c.name.clone()).collect();
            prop_assert_eq!(names.len(), p.cases.len());
        }

        #[test]
        fn arbitrary_text_is_an_error_or_a_plan_never_a_panic(text in "[\\[\\]a-z_=\"{}, .0-9\n#$:-]{0,200}") {
            let _ = plan(&text);
        }

        #[test]
        fn mutated_valid_suites_never_panic(cut in 0usize..400, insert in "[\\[\\]{}=\",.a-z0-9 \n]{0,6}") {
            let base = "[suite]\nname = \"x\"\n[target]\nbase_url = \"mock\"\n[defaults]\nload = { rate = 2.0, arrival = \"gamma\", burstiness = 0.5 }\n[[row]]\nname = \"r\"\nmeasure = { duration = \"2s\" }\nslo = [\"ttft.p95 < 1s\"]\nsweep = { rate = [1, 2.5] }\n";
            let at = cut.min(base.len());
            let mut text = base.to_string();
            text.insert_str(at, &insert);
            let _ = plan(&text);
        }
    }
}

#[test]
fn salt_is_per_run_by_default_fixed_on_request() {
    let p = plan(
        "[[row]]\nname = \"a\"\n[[row]]\nname = \"b\"\nsalt = 7\n[[row]]\nname = \"c\"\nsalt = \"run\"\n",
    )
    .expect("valid");
    let salts: Vec<Salt> = p.cases.iter().map(|c| c.salt).collect();
    assert_eq!(salts, [Salt::PerRun, Salt::Fixed(7), Salt::PerRun]);
    let err = first_line(plan("[[row]]\nname = \"a\"\nsalt = \"often\"\n").expect_err("bad salt"));
    assert!(err.contains("t.toml:3:8: salt must be \"run\" or a non-negative integer"), "{err}");
    let parsed = parse(Source::new("t.toml", "[[row]]\nname = \"a\"\nsalt = 7\n")).expect("parses");
    let over = Overrides { salt: Some(99), ..Overrides::default() };
    assert_eq!(build_with_env(&[parsed], &over, &|_| None).expect("plans").cases[0].salt, Salt::Fixed(99));
    // Repeats never share a salt; a fixed salt gives the same ones every run.
    assert_ne!(Salt::PerRun.for_repeat(5, 0), Salt::PerRun.for_repeat(5, 1));
    assert_eq!(Salt::Fixed(7).for_repeat(5, 2), Salt::Fixed(7).for_repeat(6, 2));
    assert_eq!(Salt::PerRun.for_repeat(5, 0), 5);
}

/// A suite that starts its own engine from `[server]`, needing a binary and a model from the
/// environment, as suites/llamacpp-cpu.toml does.
const SERVED: &str = indoc! {r#"
    [suite]
    name = "cpu"
    needs_target = true
    [server]
    command = "{bin} -m {model} --port {port} -np {parallel}"
    vars = { bin = "${LLAMA_BIN}", model = "${GGUF}", parallel = 2 }
    [[row]]
    name = "plain"
    [[row]]
    name = "slots"
    sweep = { "server.parallel" = [1, 2] }
"#};

#[test]
fn a_server_suite_without_its_variables_is_ignored_naming_them() {
    let p = plan_env(SERVED, &|k| (k == "GGUF").then(|| "/m.gguf".to_string())).expect("plans");
    assert_eq!(p.cases.len(), 3);
    for c in &p.cases {
        assert!(c.ignore, "{}", c.name);
        let Endpoint::Missing(why) = &c.target.endpoint else { panic!("{:?}", c.target.endpoint) };
        assert!(why.contains("set LLAMA_BIN (its [server] command uses them)"), "{why}");
        assert!(c.server.is_none());
    }
    // Set: every case runs on the server slotest starts, a knob per sweep point.
    let env = |k: &str| Some(format!("/{k}"));
    let p = plan_env(SERVED, &env).expect("plans");
    assert!(p.cases.iter().all(|c| !c.ignore && c.target.endpoint == Endpoint::Server));
    let cmd = |i: usize| p.cases[i].server.as_ref().expect("server").vars.clone();
    assert!(
        cmd(1).contains(&("parallel".into(), "1".into()))
            && cmd(2).contains(&("parallel".into(), "2".into()))
    );
    // Without needs_target an unset variable stays an error at its line.
    let err = first_line(plan_env(&SERVED.replace("needs_target = true", ""), &|_| None).expect_err("unset"));
    assert!(err.contains("environment variable `LLAMA_BIN` is not set"), "{err}");
}

#[test]
fn with_target_a_server_knob_sweep_is_ignored_the_rest_runs() {
    let parsed = parse(Source::new("t.toml", SERVED)).expect("parses");
    let over = Overrides { target: Some("http://127.0.0.1:8089".into()), ..Overrides::default() };
    let p = build_with_env(&[parsed], &over, &|_| None).expect("plans");
    let by_name = |n: &str| p.cases.iter().find(|c| c.name == n).expect(n);
    assert!(!by_name("cpu::plain").ignore);
    assert_eq!(by_name("cpu::plain").target.endpoint, Endpoint::Url("http://127.0.0.1:8089".into()));
    let point = by_name("cpu::slots::server.parallel=1");
    assert!(point.ignore);
    let Endpoint::Missing(why) = &point.target.endpoint else { panic!("{:?}", point.target.endpoint) };
    assert!(why.contains("run without --target to sweep it"), "{why}");
    // A server knob in a suite with no [server] is still an error.
    let err =
        first_line(plan("[[row]]\nname = \"a\"\nsweep = { \"server.np\" = [1] }\n").expect_err("no server"));
    assert!(err.contains("the suite has no [server]"), "{err}");
}

#[test]
fn up_to_extends_a_requests_measure_phase_only() {
    let p = plan("[[row]]\nname = \"a\"\nmeasure = { requests = 200, up_to = 2000 }\n").expect("valid");
    assert_eq!((p.cases[0].measure, p.cases[0].up_to), (Phase::Requests(200), Some(2000)));
    for (row, want) in [
        ("measure = { requests = 200, up_to = 100 }", "`up_to` must be more than `requests`"),
        ("measure = { duration = \"60s\", up_to = 100 }", "extends a `requests` phase"),
        ("warmup = { requests = 8, up_to = 100 }", "`up_to` applies to the measure phase"),
        (
            "measure = { requests = 20, up_to = 100 }\nrepeat = 3",
            "cannot be combined with `repeat` or `search`",
        ),
    ] {
        let err = first_line(plan(&format!("[[row]]\nname = \"a\"\n{row}\n")).expect_err(row));
        assert!(err.contains(want), "{row}: {err}");
        assert!(err.starts_with("t.toml:3:"), "{err}");
    }
}

#[test]
fn a_whole_response_row_drops_first_token_gates_and_keeps_streamed_definitions() {
    let p = plan(indoc! {r#"
        [defaults]
        slo = ["e2e.p95 < 2s"]
        [[row]]
        name = "whole"
        stream = false
        [[row]]
        name = "streamed"
    "#})
    .expect("valid");
    let [whole, streamed] = &p.cases[..] else { panic!("two cases") };
    assert!(!whole.workload.stream && streamed.workload.stream);
    assert!(whole.gates.iter().all(|(g, _)| !g.needs_stream()), "{:?}", whole.gates);
    assert!(streamed.gates.iter().any(|(g, _)| g.needs_stream()));
    // A streamed row's definition is what it was before `stream` existed (saved baselines
    // still match); a whole-response row's is its own.
    assert!(!serde_json::to_string(&streamed.workload).expect("json").contains("stream"));
    assert!(serde_json::to_string(&whole.workload).expect("json").contains("\"stream\":false"));
    assert_ne!(whole.definition_hash(), streamed.definition_hash(), "stream is all that differs");
    let err =
        plan("[[row]]\nname = \"w\"\nstream = false\nslo = [\"itl.p99 < 20ms\"]\n").expect_err("invalid");
    assert!(first_line(err).contains("t.toml:4:8: `itl.p99 < 20ms` needs streamed responses"));
}

mod mix_and_conversation {
    use super::*;

    const MIX: &str = r#"
[[row]]
name = "p"
load = { rate = 4.0 }
mix = [
  { name = "chat", weight = 3, input_tokens = 100 },
  { name = "batch", weight = 1.5, stream = false, api = "chat" },
]
slo = ["chat.ttft.p95 < 1s", "batch.e2e.p95 < 9s", "e2e.p99 < 10s"]
baseline = { metrics = ["ttft.p50", "chat.ttft.p95", "batch.ttft.p95", "batch.e2e.p50"] }
"#;

    #[test]
    fn classes_inherit_the_row_and_their_slos_and_gates_name_them() {
        let p = plan(MIX).expect("valid");
        let c = &p.cases[0];
        let [chat, batch] = &c.workload.mix[..] else { panic!("two classes") };
        assert_eq!((chat.name.as_str(), chat.weight), ("chat", 3.0));
        assert_eq!(chat.workload.input_tokens, Length::Fixed { tokens: 100 });
        assert_eq!(batch.workload.input_tokens, Length::Fixed { tokens: 256 }, "the row's default");
        assert!(chat.workload.stream && !batch.workload.stream);
        let classes: Vec<Option<&str>> = c.slos.iter().map(|s| s.class.as_deref()).collect();
        assert_eq!(classes, [Some("chat"), Some("batch"), None, None]);
        // A whole-response class is not gated on its first token.
        let gated: Vec<String> = c.gate_names().into_iter().map(|(n, _)| n).collect();
        assert_eq!(gated, ["ttft.p50", "chat.ttft.p95", "batch.e2e.p50"]);
        // A swept seed reseeds the classes' lengths too.
        let swept = plan(&format!("{MIX}sweep = {{ seed = [1, 2] }}\n")).expect("valid");
        let seeds: Vec<u64> = swept.cases.iter().map(|c| c.workload.mix[0].workload.seed).collect();
        assert_ne!(seeds[0], seeds[1]);
    }

    #[test]
    fn bad_classes_say_what_and_where() {
        let cases = [
            (MIX.replace("weight = 1.5", "weight = 0"), "t.toml:7:30: class `batch` needs a positive weight"),
            (
                MIX.replace("name = \"batch\"", "name = \"goodput\""),
                "class name `goodput` collides with a metric name",
            ),
            (
                MIX.replace("\"chat.ttft.p95 < 1s\"", "\"batch.ttft.p95 < 1s\""),
                "class `batch` has stream = false",
            ),
            (
                MIX.replace("\"e2e.p99 < 10s\"", "\"rag.e2e.p99 < 10s\""),
                "unknown metric `rag` (the row's classes: chat, batch)",
            ),
            (
                MIX.replace("\"batch.e2e.p50\"", "\"rag.e2e.p50\""),
                "no traffic class `rag` in row `p` to gate",
            ),
            (
                MIX.replace("mix = [", "prefix = { tokens = 8 }\nmix = ["),
                "a row with `mix` sets `prefix` and `dataset` on its classes",
            ),
            (MIX.replace("mix = [\n  { name", "mix = [\n  { nme"), "unknown field `nme`"),
            (
                format!("{MIX}sweep = {{ input_tokens = [64, 128] }}\n"),
                "`input_tokens` cannot be swept on a row with `mix`",
            ),
            (
                MIX.replace("stream = false,", "input_tokens = 300, prefix = { tokens = 100, groups = 4 },"),
                "class `batch` has 4 warm prefixes and 33 % of the arrivals: 12 warmup requests prime them on average, this row has 8",
            ),
        ];
        for (text, want) in cases {
            let err = first_line(plan(&text).expect_err(want));
            assert!(err.contains(want), "want {want}: {err}");
        }
    }

    #[test]
    fn a_conversation_takes_its_users_as_the_load_and_refuses_a_second_one() {
        let row = "[[row]]\nname = \"s\"\nconversation = { turns = 4, think_time = \"1.5s\", users = 8 }\n";
        let c = &plan(row).expect("valid").cases[0];
        assert_eq!(c.load, LoadMode::Closed { concurrency: 8 });
        let conv = c.workload.conversation.as_ref().expect("a conversation");
        assert_eq!(
            (conv.turns.clone(), conv.think_ms.clone()),
            (Length::Fixed { tokens: 4 }, Length::Fixed { tokens: 1500 })
        );
        let open = plan("[[row]]\nname = \"s\"\nload = { rate = 2.0 }\nconversation = { turns = 3 }\n")
            .expect("valid");
        assert!(matches!(open.cases[0].load, LoadMode::Open { .. }), "sessions arrive at the rate");
        for (text, want) in [
            (
                format!("{row}load = {{ concurrency = 2 }}\n"),
                "t.toml:4:8: `users` of a conversation is the row's closed-loop load",
            ),
            (row.replace("users = 8", "users = 0"), "users must be at least 1"),
            (row.replace("\"1.5s\"", "\"soon\""), "bad think_time"),
            (row.replace("turns = 4", "turns = 5000"), "5000 turns: at most 1023 a session"),
            (
                format!("{row}mix = [{{ name = \"a\", weight = 1 }}]\n"),
                "cannot be combined with `mix` or `dataset`",
            ),
        ] {
            let err = first_line(plan(&text).expect_err(want));
            assert!(err.contains(want), "want {want}: {err}");
        }
    }
}

#[test]
fn slo_confidence_is_a_suite_setting() {
    let row = "[[row]]\nname = \"a\"\n";
    assert_eq!(plan(row).expect("valid").cases[0].confidence, 0.95, "the default");
    let p = plan(&format!("[suite]\nconfidence = \"99%\"\n{row}")).expect("valid");
    assert!((p.cases[0].confidence - 0.99).abs() < 1e-12);
    let err = first_line(plan(&format!("[suite]\nconfidence = \"40%\"\n{row}")).expect_err("too low"));
    assert!(err.starts_with("t.toml:2:") && err.contains("between 50% and 100%"), "{err}");
}
