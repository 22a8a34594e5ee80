//! An embeddings answer (`api = "embeddings"`, `POST /v1/embeddings`): one embedding a text,
//! the engine's count of the texts' tokens. The vectors themselves are skipped, not kept.

use super::Interpreted;
use serde::Deserialize;
use serde::de::IgnoredAny;

#[derive(Deserialize)]
struct Answer {
    #[serde(default)]
    data: Option<Vec<Item>>,
    usage: Option<Usage>,
    error: Option<serde_json::Value>,
}

#[derive(Deserialize)]
struct Item {
    embedding: Option<IgnoredAny>,
}

#[derive(Deserialize)]
struct Usage {
    prompt_tokens: Option<u64>,
}

/// What an embeddings answer carried for `inputs` texts: its token count, or its error object;
/// `Err` where it is not an embeddings answer or holds another number of embeddings.
pub fn interpret_whole(body: &[u8], inputs: u64) -> Result<Interpreted, String> {
    let a: Answer = serde_json::from_slice(body).map_err(|e| format!("not an embeddings answer ({e})"))?;
    if let Some(e) = a.error.filter(|e| !e.is_null()) {
        return Ok(Interpreted { error: Some(super::describe_error(&e)), ..Interpreted::default() });
    }
    let data = a.data.ok_or("an embeddings answer without `data`")?;
    let embedded = data.iter().filter(|d| d.embedding.is_some()).count() as u64;
    if embedded != inputs {
        return Err(format!("{embedded} embeddings answered {inputs} texts"));
    }
    Ok(Interpreted {
        content: true,
        answer: true,
        finished: true,
        prompt_tokens: a.usage.and_then(|u| u.prompt_tokens),
        // An embedding generates nothing.
        completion_tokens: Some(0),
        ..Interpreted::default()
    })
}

#[cfg(test)]
mod tests {
    use super::interpret_whole;

    #[test]
    fn an_answer_counts_its_embeddings_and_the_engines_tokens() {
        // llama.cpp's shape (vLLM's adds `id`, `created`, `model` and `object`s).
        let two = br#"{"model":"m","object":"list","usage":{"prompt_tokens":18,"total_tokens":18},"data":[{"embedding":[0.1,-0.2],"index":0,"object":"embedding"},{"embedding":[0.3,0.4],"index":1,"object":"embedding"}]}"#;
        let it = interpret_whole(two, 2).expect("two");
        assert_eq!((it.content, it.prompt_tokens, it.completion_tokens), (true, Some(18), Some(0)));
        assert_eq!(interpret_whole(two, 3).expect_err("short"), "2 embeddings answered 3 texts");
        let err = interpret_whole(br#"{"error":{"message":"This server does not support embeddings. Start it with `--embeddings`","code":501}}"#, 1);
        assert!(err.expect("error object").error.expect("named").contains("--embeddings"));
        assert!(interpret_whole(br#"{"choices":[]}"#, 1).is_err());
    }
}
