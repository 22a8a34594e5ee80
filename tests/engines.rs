//! Engine detection from each engine's side routes (answers written by us from the engines'
//! documented shapes), served by an in-process stand-in.

use axum::Router;
use axum::http::header;
use axum::response::IntoResponse;
use axum::routing::get;
use slotest::internals::Engine;
use slotest::internals::detect;

fn json(v: &'static str) -> impl Fn() -> std::future::Ready<axum::response::Response> + Clone {
    move || std::future::ready(([(header::CONTENT_TYPE, "application/json")], v).into_response())
}

async fn serve(router: Router) -> String {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.expect("bind");
    let addr = listener.local_addr().expect("addr");
    tokio::spawn(async move { axum::serve(listener, router).await.ok() });
    format!("http://{addr}")
}

#[tokio::test]
async fn each_engine_is_named_with_its_version() {
    let llamacpp = Router::new()
        .route(
            "/v1/models",
            get(|| async {
                (
                    [(header::SERVER, "llama.cpp"), (header::CONTENT_TYPE, "application/json")],
                    r#"{"object":"list","data":[{"id":"gemma-3-270m.gguf","object":"model","owned_by":"llamacpp","meta":{"n_ctx_train":32768}}]}"#,
                )
            }),
        )
        .route("/props", get(json(r#"{"default_generation_settings":{"n_ctx":4096},"total_slots":2,"model_path":"/m.gguf","build_info":"b6420-5c1e9a4"}"#)));
    let vllm = Router::new()
        .route("/v1/models", get(json(r#"{"object":"list","data":[{"id":"meta-llama/Llama-3.1-8B-Instruct","object":"model","owned_by":"vllm","max_model_len":131072}]}"#)))
        .route("/version", get(json(r#"{"version":"0.11.0"}"#)));
    let sglang = Router::new()
        .route("/v1/models", get(json(r#"{"object":"list","data":[{"id":"qwen/qwen2.5-7b","object":"model","owned_by":"sglang","root":"qwen/qwen2.5-7b"}]}"#)))
        .route("/server_info", get(json(r#"{"model_path":"qwen/qwen2.5-7b","version":"0.5.3","tp_size":1}"#)));
    let tgi = Router::new()
        .route("/v1/models", get(json(r#"{"object":"list","data":[{"id":"HuggingFaceH4/zephyr-7b-beta","object":"model","created":0,"owned_by":"HuggingFaceH4/zephyr-7b-beta"}]}"#)))
        .route("/info", get(json(r#"{"model_id":"HuggingFaceH4/zephyr-7b-beta","version":"3.0.1","max_total_tokens":8192,"router":"text-generation-router"}"#)));
    let trtllm = Router::new()
        .route("/v1/models", get(json(r#"{"object":"list","data":[{"id":"llama-3.1-8b","object":"model","owned_by":"tensorrt_llm"}]}"#)))
        .route("/version", get(json(r#"{"version":"1.0.0"}"#)));
    let nim = Router::new()
        .route("/v1/models", get(json(r#"{"object":"list","data":[{"id":"meta/llama-3.1-8b-instruct","object":"model","owned_by":"system","max_model_len":131072}]}"#)))
        .route("/v1/version", get(json(r#"{"release":"1.8.2","api":"1.0.0"}"#)));
    let openai = Router::new().route("/v1/models", get(json(r#"{"object":"list","data":[{"id":"gpt-4o-mini","object":"model","created":1,"owned_by":"system"}]}"#)));

    let client = reqwest::Client::new();
    type Expect = (&'static str, Router, Option<Engine>, Option<&'static str>, Option<u64>);
    let cases: Vec<Expect> = vec![
        // The slot's context (`/props` n_ctx), not the model's trained one (n_ctx_train 32768):
        // a prompt longer than the slot is refused.
        ("llama.cpp", llamacpp, Some(Engine::Llamacpp), Some("b6420-5c1e9a4"), Some(4096)),
        ("vLLM", vllm, Some(Engine::Vllm), Some("0.11.0"), Some(131072)),
        ("SGLang", sglang, Some(Engine::Sglang), Some("0.5.3"), None),
        ("TGI", tgi, Some(Engine::Tgi), Some("3.0.1"), Some(8192)),
        ("TensorRT-LLM", trtllm, Some(Engine::Trtllm), Some("1.0.0"), None),
        ("NIM", nim, Some(Engine::Trtllm), Some("1.8.2"), Some(131072)),
        ("an unknown OpenAI-compatible API", openai, None, None, None),
    ];
    for (name, router, engine, version, ctx) in cases {
        let base = serve(router).await;
        let d = detect(&client, &base, None, None).await;
        assert_eq!(d.engine, engine, "{name}");
        assert_eq!(d.version.as_deref(), version, "{name}");
        assert_eq!(d.max_model_len, ctx, "{name}");
        assert!(d.model.is_some(), "{name}: model id read");
    }
    // Nothing answering: no engine, no error.
    let d = detect(&client, "http://127.0.0.1:9", None, None).await;
    assert_eq!(d, Default::default());
}

/// What an engine says up front it does not serve: llama.cpp's `/props` `modalities.vision`
/// false (no projector) marks images unserved, naming `--mmproj`; its
/// `chat_template_caps.supports_tools` false (a chat template that drops tools: Gemma 3's)
/// marks tool calls unserved, naming `--chat-template-file`; true, or a build too old to say,
/// marks nothing; another engine's answer is not read for it.
#[tokio::test]
async fn llamacpp_says_whether_it_serves_images_and_tools() {
    let llamacpp = |props: &'static str| {
        Router::new()
            .route(
                "/v1/models",
                get(|| async {
                    (
                        [(header::SERVER, "llama.cpp"), (header::CONTENT_TYPE, "application/json")],
                        r#"{"object":"list","data":[{"id":"m.gguf","object":"model","owned_by":"llamacpp"}]}"#,
                    )
                }),
            )
            .route("/props", get(json(props)))
    };
    let client = reqwest::Client::new();
    let cases = [
        (r#"{"build_info":"b11434","modalities":{"vision":false,"audio":false}}"#, true),
        (r#"{"build_info":"b11434","modalities":{"vision":true,"audio":false}}"#, false),
        (r#"{"build_info":"b6420"}"#, false),
    ];
    for (props, unserved) in cases {
        let d = detect(&client, &serve(llamacpp(props)).await, None, None).await;
        assert_eq!(d.engine, Some(Engine::Llamacpp), "{props}");
        assert_eq!(d.unserved.len(), usize::from(unserved), "{props}: {:?}", d.unserved);
        if let Some((_, why)) = d.unserved.first() {
            assert!(why.contains("does not serve images") && why.contains("--mmproj"), "{why}");
        }
    }
    let caps = |tools: bool| -> &'static str {
        if tools {
            r#"{"build_info":"b11434","chat_template_caps":{"supports_tools":true,"supports_tool_calls":true}}"#
        } else {
            r#"{"build_info":"b11434","chat_template_caps":{"supports_tools":false,"supports_tool_calls":false}}"#
        }
    };
    let d = detect(&client, &serve(llamacpp(caps(false))).await, None, None).await;
    let [(_, why)] = d.unserved.as_slice() else { panic!("tools unserved: {:?}", d.unserved) };
    assert_eq!(
        why,
        "llama.cpp says it does not serve tool calls (`/props` chat_template_caps.supports_tools is \
false): start it with `--jinja` (on by default: not `--no-jinja`) and a chat template that takes \
tools (the model's, or `--chat-template-file`)"
    );
    let d = detect(&client, &serve(llamacpp(caps(true))).await, None, None).await;
    assert!(d.unserved.is_empty(), "{:?}", d.unserved);
    let vllm = Router::new()
        .route(
            "/v1/models",
            get(json(r#"{"object":"list","data":[{"id":"m","object":"model","owned_by":"vllm"}]}"#)),
        )
        .route("/version", get(json(r#"{"version":"0.26.0","modalities":{"vision":false}}"#)));
    let d = detect(&client, &serve(vllm).await, None, None).await;
    assert!(d.unserved.is_empty(), "{:?}", d.unserved);
}
