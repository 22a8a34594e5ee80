//! The request stream's tests: reproducible from the seed, planned lengths, prefixes, datasets.

use super::{Prompter, RequestSpec, RequestStream};
use crate::plan::{Arrival, Case, Length, LoadMode, Overrides, Plan, build_with_env};
use crate::suite::{Source, parse};
use indoc::indoc;

fn plan(text: &str) -> Result<Plan, String> {
    let parsed = parse(Source::new("t.toml", text)).map_err(|e| e.to_string())?;
    build_with_env(&[parsed], &Overrides::default(), &|_| None).map_err(|e| e.to_string())
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
    let a: Vec<_> = RequestStream::new(&p.cases[0]).take(400).collect();
    let b: Vec<_> = RequestStream::new(&p.cases[0]).take(400).collect();
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

mod workloads {
    use super::*;

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
        let head = |r: &RequestSpec| r.prompt.split_whitespace().take(200).collect::<Vec<_>>().join(" ");
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
        let lens = |rs: &[RequestSpec]| rs.iter().map(|r| r.input_tokens).collect::<Vec<_>>();
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
    let reqs: Vec<_> = RequestStream::new(&p.cases[0]).take(20).collect();
    for w in reqs.windows(2) {
        let a: Vec<&str> = w[0].prompt.split_whitespace().take(4).collect();
        let b: Vec<&str> = w[1].prompt.split_whitespace().take(4).collect();
        assert_ne!(a, b, "requests {} and {} open alike", w[0].index, w[1].index);
    }
}

/// A salt changes every word and nothing else: same lengths, arrivals and prefix groups.
#[test]
fn a_salt_changes_the_words_and_nothing_else() {
    let p = plan(indoc! {r#"
        [[row]]
        name = "r"
        warmup = { requests = 3 }
        input_tokens = { dist = "uniform", min = 300, max = 400 }
        prefix = { tokens = 200, groups = 3 }
        load = { rate = 10.0 }
    "#})
    .expect("valid");
    let c = &p.cases[0];
    let plain: Vec<_> = RequestStream::new(c).take(60).collect();
    assert_eq!(plain, RequestStream::new(c).salted(0).take(60).collect::<Vec<_>>(), "salt 0 is no salt");
    let a: Vec<_> = RequestStream::new(c).salted(11).take(60).collect();
    let b: Vec<_> = RequestStream::new(c).salted(12).take(60).collect();
    assert_eq!(a, RequestStream::new(c).salted(11).take(60).collect::<Vec<_>>(), "a salt is reproducible");
    let shape = |rs: &[RequestSpec]| {
        rs.iter().map(|r| (r.index, r.input_tokens, r.output_tokens, r.offset)).collect::<Vec<_>>()
    };
    assert_eq!(shape(&a), shape(&plain));
    assert_eq!(shape(&b), shape(&plain));
    let head = |r: &RequestSpec, n: usize| r.prompt.split_whitespace().take(n).collect::<Vec<_>>().join(" ");
    for ((x, y), z) in a.iter().zip(&b).zip(&plain) {
        assert_ne!(head(x, 8), head(y, 8), "request {} opens alike under two salts", x.index);
        assert_ne!(head(x, 8), head(z, 8), "request {} opens alike salted and not", x.index);
    }
    // Within one salted stream the warm prefixes are still shared, group by group.
    for (i, r) in a.iter().enumerate() {
        assert_eq!(head(r, 200), head(&a[i % 3], 200), "request {i} shares prefix {}", i % 3);
    }
}

mod classes_and_sessions {
    use super::*;

    const MIX: &str = indoc! {r#"
        [[row]]
        name = "r"
        seed = 3
        load = { rate = 10.0 }
        mix = [
          { name = "chat", weight = 3, input_tokens = { dist = "uniform", min = 10, max = 20 }, output_tokens = 4 },
          { name = "rag", weight = 1, input_tokens = 200, output_tokens = 30, prefix = { tokens = 150, groups = 2 } },
        ]
    "#};

    #[test]
    fn classes_are_drawn_by_weight_each_with_its_own_shape_on_one_schedule() {
        let case = &plan(MIX).expect("valid").cases[0];
        let a: Vec<RequestSpec> = RequestStream::new(case).take(4000).collect();
        assert_eq!(a, RequestStream::new(case).take(4000).collect::<Vec<_>>(), "reproducible");
        let chat = a.iter().filter(|r| r.class == Some(0)).count() as f64 / a.len() as f64;
        assert!((chat - 0.75).abs() < 0.025, "3:1 gave {chat}");
        for r in &a {
            match r.class {
                Some(0) => assert!((10..=20).contains(&r.input_tokens) && r.output_tokens == 4),
                Some(1) => assert!(r.input_tokens == 200 && r.output_tokens == 30 && r.group.is_some()),
                other => panic!("class {other:?}"),
            }
            assert_eq!(r.prompt.split(' ').count() as u64, r.input_tokens);
        }
        // One arrival process over all classes, indexed in order.
        assert!(a.iter().enumerate().all(|(i, r)| r.index == i as u64));
        assert!(a.windows(2).all(|w| w[0].offset < w[1].offset));
        let span = a.last().and_then(|r| r.offset).expect("open loop").as_secs_f64();
        assert!((span - 400.0).abs() < 40.0, "4000 arrivals at 10/s over {span} s");
        // A salt changes the words, never which class an arrival is or its lengths.
        let salted: Vec<RequestSpec> = RequestStream::new(case).salted(9).take(4000).collect();
        for (x, y) in a.iter().zip(&salted) {
            assert_eq!(
                (x.class, x.input_tokens, x.output_tokens, x.offset),
                (y.class, y.input_tokens, y.output_tokens, y.offset)
            );
            assert_ne!(x.prompt, y.prompt);
        }
    }

    #[test]
    fn a_session_plans_its_turns_from_the_seed_and_salts_only_their_words() {
        let case = &plan(indoc! {r#"
            [[row]]
            name = "s"
            input_tokens = 30
            output_tokens = 8
            conversation = { turns = { dist = "uniform", min = 2, max = 6 }, think_time = { dist = "uniform", min = "1s", max = "3s" }, users = 4 }
        "#})
        .expect("valid")
        .cases[0];
        assert_eq!(case.load, LoadMode::Closed { concurrency: 4 });
        let a: Vec<RequestSpec> = RequestStream::new(case).take(200).collect();
        let b: Vec<RequestSpec> = RequestStream::new(case).salted(5).take(200).collect();
        let turns: Vec<usize> = a.iter().map(|s| s.later.len() + 1).collect();
        assert!(turns.iter().all(|t| (2..=6).contains(t)), "{turns:?}");
        assert!(turns.contains(&2) && turns.contains(&6), "{turns:?}");
        for (x, y) in a.iter().zip(&b) {
            assert_eq!(x.later.len(), y.later.len());
            for (p, q) in x.later.iter().zip(&y.later) {
                assert_eq!(
                    (p.message_tokens, p.output_tokens, p.think),
                    (q.message_tokens, q.output_tokens, q.think)
                );
                assert!((1000..=3000).contains(&(p.think.as_millis() as u64)), "{:?}", p.think);
                assert_eq!(p.message.split(' ').count(), 30);
                assert_ne!(p.message, q.message);
            }
        }
    }
}

/// An agent session's steps: from the seed and the session's number, words from the salt.
#[test]
fn a_session_plan_comes_from_the_seed_and_its_number_alone() {
    let row = "input_tokens = 40\noutput_tokens = 12\nagent = { steps = { dist = \"uniform\", min = 2, max = 6 }, \
fan_out = { dist = \"uniform\", min = 1, max = 4 }, tool_tokens = 20, tool_time = { dist = \"uniform\", min = \"10ms\", max = \"90ms\" } }";
    let text = format!("[target]\nbase_url = \"mock\"\n[[row]]\nname = \"r\"\n{row}\n");
    let case = plan(&text).expect("valid").cases.remove(0);
    let a: Vec<_> = RequestStream::new(&case).take(40).collect();
    let b: Vec<_> = RequestStream::new(&case).take(40).collect();
    assert_eq!(a, b, "reproducible");
    let salted: Vec<_> = RequestStream::new(&case).salted(9).take(40).collect();
    for (x, y) in a.iter().zip(&salted) {
        let (px, py) = (x.agent.as_deref().expect("a plan"), y.agent.as_deref().expect("a plan"));
        assert_eq!(px.steps.len(), py.steps.len(), "a salt changes words only");
        assert_ne!(px.steps[0].calls[0].tool, py.steps[0].calls[0].tool);
    }
    let mut fanned = 0;
    for spec in &a {
        let p = spec.agent.as_deref().expect("a plan");
        assert!((2..=6).contains(&p.steps.len()));
        assert_eq!(spec.more_calls(), p.calls() - 1, "the phase counts every call");
        let last = p.steps.len() - 1;
        for (k, step) in p.steps.iter().enumerate() {
            assert!((1..=4).contains(&step.calls.len()));
            fanned += usize::from(step.calls.len() > 1);
            assert_eq!(step.tool_time.is_zero(), k == last, "the tool runs between steps only");
            for call in &step.calls {
                assert_eq!(call.output_tokens, 12);
                assert_eq!(call.tool_tokens, if k == last { 0 } else { 20 });
                assert_eq!(call.tool.split_whitespace().count() as u64, call.tool_tokens);
                let sub = if step.calls.len() > 1 { 16 } else { 0 };
                assert_eq!((call.subtask_tokens, call.subtask.split_whitespace().count() as u64), (sub, sub));
            }
        }
    }
    assert!(fanned > 20, "steps fan out as drawn: {fanned}");
}
