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
            "t.toml:2:7: unknown variant `chta`, expected `completions` or `chat`",
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

#[test]
fn request_stream_is_reproducible_and_open_loop_is_scheduled() {
    let p = plan(indoc! {r#"
        [[row]]
        name = "r"
        seed = 7
        input_tokens = { dist = "uniform", min = 10, max = 20 }
        load = { rate = 40.0 }
    "#})
    .expect("valid");
    let a: Vec<_> = workload::RequestStream::new(&p.cases[0]).take(400).collect();
    let b: Vec<_> = workload::RequestStream::new(&p.cases[0]).take(400).collect();
    assert_eq!(a, b);
    assert!(a.iter().all(|r| (10..=20).contains(&r.input_tokens)));
    assert!(a.iter().all(|r| r.prompt.split(' ').count() as u64 == r.input_tokens));
    let offsets: Vec<f64> = a.iter().map(|r| r.offset.expect("open loop").as_secs_f64()).collect();
    let gaps: Vec<f64> = offsets.windows(2).map(|w| w[1] - w[0]).collect();
    let mean = gaps.iter().sum::<f64>() / gaps.len() as f64;
    let sd = (gaps.iter().map(|g| (g - mean).powi(2)).sum::<f64>() / gaps.len() as f64).sqrt();
    assert!((mean - 0.025).abs() < 0.004, "mean gap {mean}");
    assert!((sd / mean - 1.0).abs() < 0.15, "cv {}", sd / mean);
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

mod workloads {
    use super::*;
    use crate::plan::workload::{Prompter, RequestStream};

    fn one(text: &str) -> Case {
        let p = plan(text).expect("valid");
        p.cases.into_iter().next().expect("one case")
    }

    fn mean(xs: &[u64]) -> f64 {
        xs.iter().sum::<u64>() as f64 / xs.len() as f64
    }

    #[test]
    fn distributions_produce_the_planned_lengths() {
        let c = one(indoc! {r#"
            [[row]]
            name = "r"
            seed = 3
            input_tokens = { dist = "lognormal", mean = 500, sigma = 0.6, min = 50, max = 4000 }
            output_tokens = { dist = "empirical", values = [16, 64, 256], weights = [1, 2, 1] }
        "#});
        let reqs: Vec<_> = RequestStream::new(&c).take(20_000).collect();
        let input: Vec<u64> = reqs.iter().map(|r| r.input_tokens).collect();
        assert!(input.iter().all(|&n| (50..=4000).contains(&n)));
        let m = mean(&input);
        assert!((m - 500.0).abs() < 15.0, "lognormal mean {m}");
        // Every prompt is exactly its planned length under the approximate (word) tokenizer.
        assert!(reqs.iter().take(200).all(|r| r.prompt.split_whitespace().count() as u64 == r.input_tokens));
        let n64 = reqs.iter().filter(|r| r.output_tokens == 64).count() as f64 / reqs.len() as f64;
        assert!((n64 - 0.5).abs() < 0.02, "weight 2 of 4 → {n64}");
        assert!(reqs.iter().all(|r| [16, 64, 256].contains(&r.output_tokens)));
        // Same seed, same stream.
        let again: Vec<_> = RequestStream::new(&c).take(50).collect();
        assert_eq!(again, reqs[..50]);
    }

    #[test]
    fn presets_have_their_documented_shape() {
        let c = one(indoc! {r#"
            [[row]]
            name = "r"
            input_tokens = { preset = "chat" }
            output_tokens = { preset = "summarization", max = 400 }
        "#});
        assert!(matches!(c.workload.input_tokens, Length::LogNormal { sigma, .. } if sigma == 1.0));
        assert!(matches!(c.workload.output_tokens, Length::Normal { max: 400, .. }));
        let reqs: Vec<_> = RequestStream::new(&c).take(10_000).collect();
        let out: Vec<u64> = reqs.iter().map(|r| r.output_tokens).collect();
        assert!(out.iter().all(|&n| (50..=400).contains(&n)));
        let err =
            plan("[[row]]\nname = \"r\"\ninput_tokens = { preset = \"poems\" }\n").expect_err("unknown");
        assert!(err.contains("unknown preset `poems`"), "{err}");
    }

    #[test]
    fn prefix_groups_share_exact_prefixes_and_cold_twins_share_none() {
        let warm = one(indoc! {r#"
            [[row]]
            name = "w"
            warmup = { requests = 4 }
            input_tokens = { dist = "uniform", min = 300, max = 400 }
            prefix = { tokens = 200, groups = 3 }
        "#});
        let reqs: Vec<_> = RequestStream::new(&warm).take(60).collect();
        let head = |r: &crate::plan::workload::RequestSpec| {
            r.prompt.split_whitespace().take(200).collect::<Vec<_>>().join(" ")
        };
        let mut heads: Vec<String> = reqs.iter().map(head).collect();
        for (i, r) in reqs.iter().enumerate() {
            assert_eq!(r.prompt.split_whitespace().count() as u64, r.input_tokens, "request {i}");
            assert_eq!(heads[i], heads[i % 3], "request {i} uses prefix {}", i % 3);
        }
        heads.sort();
        heads.dedup();
        assert_eq!(heads.len(), 3, "three distinct prefixes");
        let cold = one(indoc! {r#"
            [[row]]
            name = "w"
            warmup = { requests = 4 }
            input_tokens = { dist = "uniform", min = 300, max = 400 }
            prefix = { tokens = 200, groups = 3, warm = false }
        "#});
        let cold_reqs: Vec<_> = RequestStream::new(&cold).take(60).collect();
        let mut cold_heads: Vec<String> = cold_reqs.iter().map(head).collect();
        cold_heads.sort();
        cold_heads.dedup();
        assert_eq!(cold_heads.len(), 60, "no two cold requests share a prefix");
        let lens =
            |rs: &[crate::plan::workload::RequestSpec]| rs.iter().map(|r| r.input_tokens).collect::<Vec<_>>();
        assert_eq!(lens(&reqs), lens(&cold_reqs), "the twins have the same lengths");
        let err =
            plan("[[row]]\nname = \"r\"\nwarmup = { requests = 2 }\nprefix = { tokens = 10, groups = 4 }\n")
                .expect_err("too few warmups");
        assert!(err.contains("4 warm prefixes need at least 4 warmup requests"), "{err}");
        let err = plan("[[row]]\nname = \"r\"\ninput_tokens = 100\nprefix = { tokens = 100 }\n")
            .expect_err("no room");
        assert!(err.contains("leaves no room"), "{err}");
    }

    #[test]
    fn an_exact_counter_fixes_up_every_prompt() {
        // A tokenizer that merges "of the" into one token: the fix-up adds words until exact.
        let count = std::sync::Arc::new(|s: &str| {
            Some(s.split_whitespace().count() as u64 - s.matches("of the").count() as u64)
        });
        let p =
            Prompter::calibrated(vec!["of".into(), "the".into(), "cat".into()], 1, 1.0, Some(count.clone()));
        let c = one("[[row]]\nname = \"r\"\ninput_tokens = { dist = \"uniform\", min = 20, max = 60 }\n");
        for r in RequestStream::with_prompter(&c, p).take(200) {
            // planned = what the server reports = text tokens + the 1-token overhead.
            assert_eq!(count(&r.prompt).expect("counts") + 1, r.input_tokens, "{}", r.prompt);
        }
    }

    #[test]
    fn traces_replay_on_their_own_clock() {
        let dir = std::env::temp_dir().join(format!("slotest-trace-{}", std::process::id()));
        std::fs::create_dir_all(&dir).expect("dir");
        std::fs::write(
            dir.join("t.jsonl"),
            "{\"timestamp\": 1000, \"input_tokens\": 40, \"output_tokens\": 5}\n\
             {\"timestamp\": 1500, \"input_length\": 80, \"output_length\": 7}\n\
             \n\
             {\"timestamp\": 3000, \"input_tokens\": 20, \"output_tokens\": 9}\n",
        )
        .expect("write");
        let text = indoc! {r#"
            [[row]]
            name = "replay"
            warmup = { requests = 0 }
            dataset = { path = "t.jsonl", format = "trace", time_unit = "ms", speed = 2.0 }
        "#};
        let parsed = parse(Source::new(dir.join("s.toml"), text.to_string())).expect("parses");
        let p = build_with_env(&[parsed], &Overrides::default(), &|_| None).expect("plans");
        let c = &p.cases[0];
        assert!(matches!(c.load, LoadMode::Open { arrival: Arrival::Trace, .. }));
        let reqs: Vec<_> = RequestStream::new(c).collect();
        assert_eq!(reqs.len(), 3, "the stream ends with the trace");
        let at: Vec<f64> = reqs.iter().map(|r| r.offset.expect("scheduled").as_secs_f64()).collect();
        assert_eq!(at, [0.0, 0.25, 1.0], "ms, halved by speed 2");
        assert_eq!(
            reqs.iter().map(|r| (r.input_tokens, r.output_tokens)).collect::<Vec<_>>(),
            [(40, 5), (80, 7), (20, 9)]
        );
        assert!(reqs.iter().all(|r| r.prompt.split_whitespace().count() as u64 == r.input_tokens));
        std::fs::write(dir.join("bad.jsonl"), "{\"timestamp\": 1, \"input_tokens\": 4}\n").expect("write");
        let bad =
            parse(Source::new(dir.join("s.toml"), text.replace("t.jsonl", "bad.jsonl"))).expect("parses");
        let err =
            build_with_env(&[bad], &Overrides::default(), &|_| None).expect_err("bad trace").to_string();
        assert!(err.contains("bad.jsonl:1: no positive `output_tokens`"), "{err}");
        std::fs::remove_dir_all(&dir).ok();
    }

    #[test]
    fn prompt_datasets_are_sent_in_file_order() {
        let share = r#"[{"conversations":[{"from":"human","value":"hello there"},{"from":"gpt","value":"hi"}]},
                        {"conversations":[{"from":"gpt","value":"no human turn"}]},
                        {"conversations":[{"from":"human","value":"tell me a story please"}]}]"#;
        let prompts = crate::plan::dataset::sharegpt(share).expect("parses");
        assert_eq!(
            prompts.iter().map(|p| p.text.as_str()).collect::<Vec<_>>(),
            ["hello there", "tell me a story please"]
        );
        let jl = crate::plan::dataset::jsonl_prompts(
            "{\"prompt\":\"a b c\",\"output_tokens\":7}\n{\"prompt\":\"d\"}\n",
        )
        .expect("parses");
        assert_eq!(jl[0].output_tokens, Some(7));
        assert_eq!(jl[1].output_tokens, None);
        assert!(
            crate::plan::dataset::jsonl_prompts("{\"text\": 3}\n")
                .expect_err("bad")
                .contains("1: no `prompt`")
        );
    }
}

#[test]
fn consecutive_prompts_do_not_share_a_head() {
    let p = plan("[[row]]\nname = \"r\"\ninput_tokens = 96\n").expect("valid");
    let reqs: Vec<_> = workload::RequestStream::new(&p.cases[0]).take(20).collect();
    for w in reqs.windows(2) {
        let a: Vec<&str> = w[0].prompt.split_whitespace().take(4).collect();
        let b: Vec<&str> = w[1].prompt.split_whitespace().take(4).collect();
        assert_ne!(a, b, "requests {} and {} open alike", w[0].index, w[1].index);
    }
}
