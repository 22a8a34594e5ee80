//! The starter suite's text: what each row's size proves, each route's rows.

use super::*;

/// Requests over its bound a row's SLO leaves room for.
const ROOM: u64 = 2;

#[test]
fn bounds_round_up_to_a_round_value() {
    assert_eq!(bound(41.9), "50ms");
    assert_eq!(bound(83.8), "100ms");
    assert_eq!(bound(12.0), "20ms");
    assert_eq!(bound(2100.0), "2.5s");
    assert_eq!(bound(6.4 * 2.0), "20ms");
    assert_eq!(bound(100.0), "100ms");
}

#[test]
fn the_long_prefill_is_sized_to_the_context() {
    assert_eq!(long_input(Some(131_072)), 8192);
    assert_eq!(long_input(Some(4096)), 1024);
    assert_eq!(long_input(Some(1000)), 512);
    assert_eq!(long_input(Some(300)), 276);
    assert_eq!(long_input(None), 2048);
}

#[test]
fn a_rows_slo_is_on_what_its_size_can_prove_with_room_for_a_tail() {
    let p = probe();
    let at = |n: u64| stream_slos(&p, n);
    // p95 from 124 requests, p90 from 61, p50 from 11: each with two over its bound.
    assert!(at(124).contains("\"ttft.p95 < 100ms\""), "{}", at(124));
    assert!(at(123).contains("\"ttft.p90 < 100ms\""), "{}", at(123));
    assert!(at(61).contains("\"ttft.p90 < 100ms\""), "{}", at(61));
    assert!(at(60).contains("\"ttft.p50 < 50ms\""), "{}", at(60));
    assert!(at(11).contains("\"tpot.p50 < 20ms\""), "{}", at(11));
    assert!(at(10).contains("\"ttft.max < 200ms\""), "{}", at(10));
    // The table is the binomial's arithmetic: the fewest requests proving each with two over.
    for (n, stat, _) in PROVABLE {
        let share = 1.0 - stat.quantile().expect("a percentile");
        assert_eq!(n, crate::stats::binomial::min_requests(ROOM, share, 0.95), "{stat:?}");
    }
    assert!(
        at(300).contains("# probe: p50 20.0ms, p95 40.0ms, max 50.0ms (8 requests, 4 users)"),
        "{}",
        at(300)
    );
}

fn probe() -> Probe {
    Probe {
        requests: 8,
        users: 4,
        input: 128,
        ttft: [20.0, 40.0, 50.0],
        tpot: [6.0, 7.0, 9.0],
        e2e: [300.0, 400.0, 500.0],
        rate: 10.0,
    }
}

fn server(api: Api, also: Vec<Api>) -> Server {
    Server {
        base_url: "${SLOTEST_TARGET:-http://127.0.0.1:9}".into(),
        shown: "http://127.0.0.1:9".into(),
        engine: Some(Engine::Vllm),
        version: Some("0.26.0".into()),
        model: "BAAI/bge-m3".into(),
        context: Some(8192),
        tokenizer: true,
        api_key_env: None,
        api,
        also,
        images: None,
    }
}

/// The text planned as a suite: its cases, each with its route.
fn planned(text: &str) -> crate::plan::Plan {
    let parsed = crate::suite::parse(crate::suite::Source::new("s.toml", text)).expect("parses");
    crate::plan::build(&[parsed], &crate::plan::Overrides::default()).expect("plans")
}

#[test]
fn an_embeddings_server_gets_rows_of_texts_judged_on_their_latency() {
    let p = probe();
    let text = suite_text("bge", &server(Api::Embeddings, vec![]), (&p, &p, None), 30.0, "now");
    assert!(text.contains("api = \"embeddings\""), "{text}");
    assert!(text.contains("inputs = 16"), "{text}");
    assert!(text.contains("\"e2e.p95 < 1s\""), "{text}");
    assert!(
        !text.contains("ttft") && !text.contains("output_tokens") && !text.contains("also answers"),
        "{text}"
    );
    assert!(
        text.contains("tolerance = { \"e2e.p50\" = \"10%\", \"request_throughput\" = \"5%\" }"),
        "{text}"
    );
    let plan = planned(&text);
    let names: Vec<&str> = plan.cases.iter().filter(|c| !c.ignore).map(|c| c.name.as_str()).collect();
    assert_eq!(names, ["bge::one_text", "bge::batch"]);
    assert!(plan.cases.iter().all(|c| c.target.api == Api::Embeddings));
    assert_eq!(plan.cases[1].workload.inputs, BATCH);
    // The probe's own suite plans too, on the same route.
    let probe = planned(&probe_suite(&server(Api::Embeddings, vec![])));
    assert!(probe.cases.iter().all(|c| c.target.api == Api::Embeddings));
}

#[test]
fn a_chat_server_gets_the_streamed_rows_on_its_route_and_the_others_are_named() {
    let p = probe();
    let text = suite_text(
        "m",
        &server(Api::Chat, vec![Api::Responses, Api::Embeddings]),
        (&p, &p, None),
        30.0,
        "now",
    );
    assert!(text.contains("api = \"chat\""), "{text}");
    assert!(
        text.contains("also answers api = \"responses\", \"embeddings\": `slotest init --api NAME"),
        "{text}"
    );
    let plan = planned(&text);
    assert_eq!(plan.cases.iter().filter(|c| !c.ignore).count(), 2);
    assert!(plan.cases.iter().all(|c| c.target.api == Api::Chat));
}

#[test]
fn a_route_that_takes_pictures_gets_a_photo_row_probed_as_the_others() {
    let p = probe();
    let photo = Probe { ttft: [200.0, 300.0, 320.0], ..probe() };
    let vl = Server { images: Some(Api::Chat), ..server(Api::Chat, vec![]) };
    let text = suite_text("vl", &vl, (&p, &p, Some(&photo)), 30.0, "now");
    assert!(text.contains("name = \"photo\""), "{text}");
    assert!(text.contains("images = { count = 1, width = 1024, height = 768, format = \"jpeg\" }"), "{text}");
    assert!(text.contains("\"ttft.p95 < 1s\",  # probe: p50 200.0ms"), "{text}");
    let plan = planned(&text);
    let names: Vec<&str> = plan.cases.iter().filter(|c| !c.ignore).map(|c| c.name.as_str()).collect();
    assert_eq!(names, ["vl::short_chat", "vl::long_prefill", "vl::photo"]);
    assert!(planned(&probe_suite(&vl)).cases.iter().any(|c| c.name == "probe::photo"));
    // On completions, which carries no picture, the comment says which route does.
    let text_only = Server { images: Some(Api::Chat), ..server(Api::Completions, vec![Api::Chat]) };
    let text = suite_text("vl", &text_only, (&p, &p, None), 30.0, "now");
    assert!(!text.contains("name = \"photo\""), "{text}");
    assert!(
        text.contains(
            "# The model takes pictures on api = \"chat\": `slotest init --api chat` adds a row with a photo."
        ),
        "{text}"
    );
    assert!(!planned(&probe_suite(&text_only)).cases.iter().any(|c| c.name == "probe::photo"));
}
