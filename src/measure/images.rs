//! What a row's images were (results.json `images`): how many a request carried, of what size,
//! the bytes sent, and the tokens the engine counted for them — its prompt tokens less the
//! text's own planned count. Pure.

use serde::{Deserialize, Serialize};

/// results.json `images`, on a case whose requests carry images.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct ImageFigures {
    /// Measured requests that carried images.
    pub requests: u64,
    /// Images a request, planned (a dataset's lines: their mean over the measured requests).
    pub per_request: f64,
    /// Pixels across and down of a drawn picture (absent for a dataset's files).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub size: Option<[u32; 2]>,
    /// `jpeg`, `png`, or `files`.
    pub format: String,
    /// The planned share of images the run had sent before (`reuse`).
    pub reuse: f64,
    /// Encoded bytes of the images of the measured requests, before base64.
    pub bytes_sent: u64,
    /// `bytes_sent` an image.
    pub bytes_per_image: f64,
    /// Prompt tokens the engine counted beyond the text's planned count, a request (mean over
    /// the completed requests it counted): its tokens for the images, by its own rule.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tokens_per_request: Option<f64>,
    /// `tokens_per_request` an image.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tokens_per_image: Option<f64>,
    /// Whether the text's count those are taken from is exact: the prompts were fitted with the
    /// engine's tokenizer (`tokenizer = "server"` or a file), or the embedded mock counts words.
    /// Otherwise a real engine's chat template and word splits land in the images' tokens.
    #[serde(default = "exact")]
    pub text_exact: bool,
}

fn exact() -> bool {
    true
}

/// The images of the measured requests (`measured`) and of those that completed (`ok`);
/// `None` when the case sends none.
pub(super) fn figures(
    case: &crate::plan::Case,
    measured: &[&crate::load::Record],
    ok: &[super::one::One<'_>],
) -> Option<ImageFigures> {
    let images_of = |class: Option<u16>| {
        let w = match class {
            Some(k) => &case.workload.mix.get(usize::from(k))?.workload,
            None => &case.workload,
        };
        w.images.as_deref()
    };
    let first = case
        .workload
        .images
        .as_deref()
        .or_else(|| case.workload.mix.iter().find_map(|c| c.workload.images.as_deref()))?;
    let mut f = ImageFigures {
        requests: 0,
        per_request: 0.0,
        size: first.dataset.is_none().then_some([first.width, first.height]),
        format: if first.dataset.is_some() { "files".into() } else { first.format.name().to_string() },
        reuse: first.reuse,
        bytes_sent: 0,
        bytes_per_image: 0.0,
        tokens_per_request: None,
        tokens_per_image: None,
        text_exact: !matches!(case.target.tokenizer, crate::plan::TokenizerChoice::Approx)
            || matches!(case.target.endpoint, crate::plan::Endpoint::Mock(_)),
    };
    let mut images = 0u64;
    for r in measured {
        let Some(i) = images_of(r.class) else { continue };
        f.requests += 1;
        images += u64::from(i.count_of(r.index));
        f.bytes_sent += r.image_bytes();
    }
    if f.requests == 0 {
        return None;
    }
    f.per_request = images as f64 / f.requests as f64;
    f.bytes_per_image = if images == 0 { 0.0 } else { f.bytes_sent as f64 / images as f64 };
    let (mut extra, mut counted, mut counted_images) = (0.0, 0u64, 0u64);
    for o in ok {
        let (Some(i), Some(prompt)) = (images_of(o.r.class), o.usage().prompt_tokens) else { continue };
        extra += f64::from(prompt) - o.r.planned_input_tokens as f64;
        counted += 1;
        counted_images += u64::from(i.count_of(o.r.index));
    }
    if counted > 0 {
        f.tokens_per_request = Some(extra / counted as f64);
        f.tokens_per_image = (counted_images > 0).then(|| extra / counted_images as f64);
    }
    Some(f)
}

impl ImageFigures {
    /// One line for people: `images: 1 a request, 1024×768 jpeg, 96.1 KB each (reuse 0 %);
    /// the engine counted 999 tokens an image`.
    pub fn line(&self) -> String {
        let size = self.size.map_or_else(|| "from files".to_string(), |[w, h]| format!("{w}×{h}"));
        let kind = if self.format == "files" { String::new() } else { format!(" {}", self.format) };
        let mut out = format!(
            "images: {:.1} a request, {size}{kind}, {:.1} KB each (reuse {:.0} %)",
            self.per_request,
            self.bytes_per_image / 1000.0,
            self.reuse * 100.0
        );
        match self.tokens_per_image {
            Some(t) => {
                out.push_str(&format!("; the engine counted {t:.0} tokens an image beyond the text"));
                if !self.text_exact {
                    out.push_str(
                        " (its planned length: a chat template lands in these; `[target] tokenizer = \"server\"` makes the text exact)",
                    );
                }
            }
            None => out.push_str("; the engine counted no prompt tokens (no usage), so no tokens an image"),
        }
        out
    }
}
