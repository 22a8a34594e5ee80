use super::*;

#[test]
fn every_spelling_names_one_engine() {
    for e in ALL {
        assert_eq!(Engine::of_name(e.name()), Some(*e));
        for a in profile(*e).aliases {
            assert_eq!(Engine::of_name(a), Some(*e), "{a}");
        }
    }
    assert_eq!(Engine::parse("auto"), Ok(None));
    assert_eq!(Engine::parse("nim"), Ok(Some(Engine::Trtllm)));
    assert_eq!(Engine::parse("llamacpp"), Ok(Some(Engine::Llamacpp)));
    assert!(Engine::parse("vllmm").is_err());
}

#[test]
fn a_metrics_page_names_its_engine_and_tensorrt_llm_has_one_name() {
    let page = ["process_cpu_seconds_total", "trtllm_kv_cache_utilization"];
    assert_eq!(Engine::of_metric_names(page.into_iter()), Some(Engine::Trtllm));
    assert_eq!(Engine::of_metric_names(["vllm:num_requests_running"].into_iter()), Some(Engine::Vllm));
    assert_eq!(Engine::of_metric_names(["up"].into_iter()), None);
}

#[test]
fn a_known_engine_is_advised_in_its_own_flags_an_unknown_one_in_every_engines() {
    assert_eq!(spell(Some(Engine::Vllm), Lever::Slots).as_deref(), Some("`--max-num-seqs`"));
    assert_eq!(spell(Some(Engine::Llamacpp), Lever::Threads).as_deref(), Some("`-t`"));
    assert_eq!(spell(Some(Engine::Sglang), Lever::Slots).as_deref(), Some("`--max-running-requests`"));
    let any = spell(None, Lever::Slots).expect("some engine has slots");
    assert!(any.contains("llama.cpp `-np`") && any.contains("vllm `--max-num-seqs`"), "{any}");
    // vLLM has no thread knob: nothing is advised in another engine's words.
    assert_eq!(spell(Some(Engine::Vllm), Lever::Threads), None);
    assert_eq!(spell(Some(Engine::Openai), Lever::Threads).as_deref(), Some("llama.cpp `-t`"));
}

#[test]
fn every_engine_that_serves_a_gpu_names_the_levers_the_diagnosis_uses() {
    for e in [Engine::Vllm, Engine::Sglang, Engine::Tgi, Engine::Trtllm, Engine::Llamacpp] {
        for lever in [Lever::Slots, Lever::PrefillBudget, Lever::KvMemory, Lever::PrefixCache] {
            assert!(profile(e).knob(lever).is_some(), "{} has no {lever:?}", e.name());
        }
    }
}

#[test]
fn a_server_command_gives_the_setting_of_a_lever() {
    let vllm = "vllm serve m --max-num-seqs 8 --port {port}";
    assert_eq!(setting(Engine::Vllm, Lever::Slots, vllm).as_deref(), Some("8"));
    assert_eq!(setting(Engine::Vllm, Lever::Slots, "vllm serve m --max-num-seqs=16").as_deref(), Some("16"));
    assert_eq!(
        setting(Engine::Llamacpp, Lever::Slots, "llama-server -m g.gguf --parallel 2").as_deref(),
        Some("2")
    );
    assert_eq!(setting(Engine::Llamacpp, Lever::Threads, "llama-server -t 1 -np 2").as_deref(), Some("1"));
    assert_eq!(setting(Engine::Vllm, Lever::Slots, "vllm serve m"), None);
    assert_eq!(setting(Engine::Openai, Lever::Slots, "--max-num-seqs 8"), None);
}

#[test]
fn a_flag_whose_absence_is_the_advice_says_so() {
    assert_eq!(spell(Some(Engine::Vllm), Lever::DecodeKernels).as_deref(), Some("without `--enforce-eager`"));
    assert_eq!(
        spell(Some(Engine::Sglang), Lever::PrefixCache).as_deref(),
        Some("without `--disable-radix-cache`")
    );
}
