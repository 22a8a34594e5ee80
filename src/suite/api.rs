//! The route a suite's requests take (`[target] api`).

use serde::Deserialize;

/// The OpenAI-compatible route.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Api {
    /// `/v1/completions` with a text prompt.
    Completions,
    /// `/v1/chat/completions` with one user message.
    Chat,
    /// `/v1/responses` (the Responses API) with one user message as its `input`.
    Responses,
    /// `/v1/embeddings` with `inputs` texts a request (whole answers, no output).
    Embeddings,
}

impl Api {
    /// Every route, in the order `slotest init` prefers them.
    pub const ALL: [Api; 4] = [Api::Completions, Api::Chat, Api::Responses, Api::Embeddings];

    /// As a suite writes it (`api = "chat"`).
    pub fn name(self) -> &'static str {
        match self {
            Api::Completions => "completions",
            Api::Chat => "chat",
            Api::Responses => "responses",
            Api::Embeddings => "embeddings",
        }
    }

    /// The route of the requests beside the load (golden prompts, fixed prompts, the
    /// tokenizer's calibration): the row's own, except the chat route for a Responses row (the
    /// same chat template, answers read as chat answers).
    pub fn side(self) -> Api {
        match self {
            Api::Responses => Api::Chat,
            api => api,
        }
    }
}

impl std::str::FromStr for Api {
    type Err = String;

    fn from_str(s: &str) -> Result<Api, String> {
        Api::ALL.into_iter().find(|a| a.name() == s).ok_or_else(|| {
            let names: Vec<&str> = Api::ALL.iter().map(|a| a.name()).collect();
            format!("`{s}` is not a route: one of {}", names.join(", "))
        })
    }
}
