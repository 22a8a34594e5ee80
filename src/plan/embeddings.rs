//! Embeddings rows (`[target] api = "embeddings"`): each request embeds `inputs` texts of the
//! row's `input_tokens` each, and its answer is whole (no stream, no output tokens).

use super::{Length, R, Resolver, Workload};
use crate::suite::{Api, RowSpec};
use toml::Spanned;

/// Most texts one embeddings request may carry.
pub const MAX_INPUTS: u64 = 2048;

const HINT: &str =
    "an embeddings row: [target] api = \"embeddings\", input_tokens = 256, inputs = 8 (texts a request)";

impl Resolver<'_> {
    /// The row's `inputs` and, on an embeddings route, its shape: whole answers of no output;
    /// what an embedding cannot be asked for is an error at its key.
    pub(super) fn embeddings(&self, api: Api, d: &RowSpec, r: &RowSpec, w: &mut Workload) -> R<()> {
        let inputs = r.inputs.as_ref().or(d.inputs.as_ref());
        if api != Api::Embeddings {
            if let Some(n) = inputs {
                return self.err(n.span(), "`inputs` is the texts of an embeddings request", HINT);
            }
            if w.mix.iter().any(|c| c.api == Api::Embeddings) {
                let span = r.mix.as_ref().or(d.mix.as_ref()).map_or(0..0, Spanned::span);
                return self.err(
                    span,
                    "an embeddings class in a mix",
                    "put embeddings in a row of their own",
                );
            }
            return Ok(());
        }
        w.inputs = match inputs {
            Some(n) if *n.get_ref() == 0 || *n.get_ref() > MAX_INPUTS => {
                let msg = format!("inputs = {} is not 1 to {MAX_INPUTS} texts a request", n.get_ref());
                return self.err(n.span(), msg, HINT);
            }
            Some(n) => *n.get_ref(),
            None => 1,
        };
        // Every text of a request is drawn at once: their tokens together are one request's (a
        // distribution left without `max` is held to its mean here).
        let longest = match w.input_tokens.max() {
            m if m >= super::lengths::MAX_TOKENS => w.input_tokens.nominal_mean() as u64,
            m => m,
        };
        let most = w.inputs.saturating_mul(longest);
        if most > super::lengths::MAX_TOKENS {
            let span = inputs.map_or(0..0, Spanned::span);
            let msg = format!(
                "{} texts of up to {} tokens are {most} tokens a request, more than {} (10M)",
                w.inputs,
                longest,
                super::lengths::MAX_TOKENS
            );
            return self.err(span, msg, HINT);
        }
        let refuse = |key: &str, span: std::ops::Range<usize>| {
            self.err(
                span,
                format!("`{key}` on an embeddings row: an embedding is one whole answer of no tokens"),
                HINT,
            )
        };
        if let Some(s) = r.stream.as_ref().or(d.stream.as_ref()).filter(|s| *s.get_ref()) {
            return refuse("stream = true", s.span());
        }
        if let Some(o) = r.output_tokens.as_ref() {
            return refuse("output_tokens", o.span());
        }
        let others = [
            ("schema", r.schema.as_ref().map(Spanned::span)),
            ("conversation", r.conversation.as_ref().map(Spanned::span)),
            ("agent", r.agent.as_ref().map(Spanned::span)),
            ("mix", r.mix.as_ref().map(Spanned::span)),
            ("cancel", r.cancel.as_ref().map(Spanned::span)),
            ("outputs", r.outputs.as_ref().map(Spanned::span)),
            ("quality", r.quality.as_ref().map(Spanned::span)),
        ];
        if let Some((key, Some(span))) = others.into_iter().find(|(_, s)| s.is_some()) {
            return refuse(key, span);
        }
        w.stream = false;
        w.output_tokens = Length::Fixed { tokens: 0 };
        Ok(())
    }
}

/// The texts of one embeddings request: `inputs` of them from one drawn prompt, each its words
/// turned by a share of them (the same words, so the same length, but no two texts alike: an
/// engine that caches by text serves none of them).
pub fn texts(prompt: &str, inputs: u64) -> Vec<String> {
    let words: Vec<&str> = prompt.split(' ').collect();
    let step = words.len().div_ceil(inputs.max(1) as usize).max(1);
    (0..inputs as usize)
        .map(|k| {
            let at = (k * step) % words.len().max(1);
            let mut turned: Vec<&str> = words[at..].to_vec();
            turned.extend_from_slice(&words[..at]);
            turned.join(" ")
        })
        .collect()
}

#[cfg(test)]
mod tests {
    #[test]
    fn each_text_has_the_prompts_words_turned_its_own_way() {
        let t = super::texts("a b c d e f", 3);
        assert_eq!(t, ["a b c d e f", "c d e f a b", "e f a b c d"]);
        assert_eq!(super::texts("solo", 2), ["solo", "solo"]);
    }
}
