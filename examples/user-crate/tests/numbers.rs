// tests/numbers.rs — run a suite from code and assert on a case's figures.
#[test]
fn short_chat_answers_fast() -> Result<(), slotest::Error> {
    let conclusion = slotest::Run::new()
        .suite("suites/chat.toml")
        .target("mock")
        .results("target/slotest-numbers")
        .arg("--no-baseline")
        .execute()?;
    let case = conclusion.case("chat::short_chat").expect("the case ran");
    let summary = case.summary().expect("measured");
    let ttft_p95_ms = summary.ttft.p95.expect("enough samples for a p95");
    assert!(ttft_p95_ms < 500.0, "ttft p95 {ttft_p95_ms:.1} ms");
    assert_eq!(summary.completed, 60);
    assert!(conclusion.passed(), "{}", conclusion.table());
    Ok(())
}
