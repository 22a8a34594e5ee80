//! Images in the mock engine's prompts: each data URL decoded far enough to read its size,
//! turned into tokens by Qwen2-VL's patch rule, hashed for the multimodal cache, and encoded
//! (a cost per image token) unless that cache already holds it.

use std::time::Duration;

/// How the imitated vision-language model sees images: Qwen2-VL's processor (`smart_resize`:
/// sides rounded to 28-pixel patches, the area held within `min_pixels..=max_pixels`, one token
/// a 28×28 patch after the 2×2 merge) and a vision encoder's cost.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Vision {
    /// Fewest pixels an image is resized to (Qwen2-VL's processor: 56 × 56).
    pub min_pixels: u64,
    /// Most pixels an image is resized to (option `max_pixels=N`; Qwen2-VL's processor:
    /// 28 × 28 × 16384).
    pub max_pixels: u64,
    /// Encoder time per image token, spent in the step that starts the request's prefill.
    pub per_image_token: Duration,
    /// Images the multimodal cache holds, least recently used out first (option
    /// `mm_cache=N`; `mm_cache=0` turns it off, as vLLM's `--mm-processor-cache-gb 0` does).
    pub mm_cache_items: usize,
}

/// Pixels of one patch side.
pub const PATCH: u64 = 28;

/// An 8B-class vision-language model on an H100: a 0.6B-parameter ViT.
pub const VISION_H100: Vision = Vision {
    min_pixels: 56 * 56,
    max_pixels: 28 * 28 * 16_384,
    per_image_token: Duration::from_micros(20),
    mm_cache_items: 1024,
};

/// The `fast` profile's: cheap, so tests stay quick.
pub const VISION_FAST: Vision = Vision { per_image_token: Duration::from_micros(2), ..VISION_H100 };

impl Vision {
    /// Tokens of a `width` × `height` image (Qwen2-VL's `smart_resize`, factor 28).
    pub fn tokens(&self, width: u64, height: u64) -> u64 {
        let round = |v: f64| ((v / PATCH as f64).round() as u64).max(1) * PATCH;
        let (mut h, mut w) = (round(height as f64), round(width as f64));
        let area = (width * height) as f64;
        if h * w > self.max_pixels {
            let beta = (area / self.max_pixels as f64).sqrt();
            h = ((height as f64 / beta / PATCH as f64).floor() as u64).max(1) * PATCH;
            w = ((width as f64 / beta / PATCH as f64).floor() as u64).max(1) * PATCH;
        } else if h * w < self.min_pixels {
            let beta = (self.min_pixels as f64 / area).sqrt();
            h = (height as f64 * beta / PATCH as f64).ceil() as u64 * PATCH;
            w = (width as f64 * beta / PATCH as f64).ceil() as u64 * PATCH;
        }
        (h / PATCH) * (w / PATCH)
    }

    /// Applies option `k` = `v` (`max_pixels`, `mm_cache`); false when `k` is neither.
    pub fn option(&mut self, k: &str, v: &str) -> Result<bool, String> {
        let n = || v.parse::<u64>().map_err(|_| format!("mock option `{k}` = `{v}` is not a count"));
        match k {
            "max_pixels" => self.max_pixels = n()?.max(self.min_pixels),
            "mm_cache" => self.mm_cache_items = usize::try_from(n()?).unwrap_or(usize::MAX),
            _ => return Ok(false),
        }
        Ok(true)
    }
}

/// One image of a request: its hash (the multimodal cache's key) and its tokens.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Image {
    /// Hash of its encoded bytes.
    pub hash: u64,
    /// Its tokens by the patch rule.
    pub tokens: u64,
}

/// The image of a data URL, or why the engine refuses it (a 400, as vLLM answers).
pub fn read(url: &str, vision: &Vision) -> Result<Image, String> {
    use base64::Engine;
    let Some(rest) = url.strip_prefix("data:") else {
        return Err("the mock engine fetches no image URLs: send images as data URLs".into());
    };
    let b64 = rest.split_once(";base64,").map(|(_, b)| b).ok_or("an image data URL is base64")?;
    let bytes = base64::engine::general_purpose::STANDARD
        .decode(b64)
        .map_err(|e| format!("the image's base64 does not decode: {e}"))?;
    let (w, h) = dimensions(&bytes).ok_or("cannot identify image file (neither a JPEG nor a PNG)")?;
    let hash = bytes.chunks(8).fold(0xcbf2_9ce4_8422_2325_u64, |h, c| {
        let mut word = [0u8; 8];
        word[..c.len()].copy_from_slice(c);
        (h ^ u64::from_le_bytes(word)).wrapping_mul(0x0100_0000_01b3).rotate_left(5)
    });
    Ok(Image { hash, tokens: vision.tokens(u64::from(w), u64::from(h)) })
}

/// A JPEG's (its frame header's) or a PNG's (its IHDR's) width and height.
pub fn dimensions(bytes: &[u8]) -> Option<(u32, u32)> {
    if bytes.starts_with(b"\x89PNG\r\n\x1a\n") && bytes.get(12..16) == Some(b"IHDR") {
        let be = |at: usize| Some(u32::from_be_bytes(bytes.get(at..at + 4)?.try_into().ok()?));
        return Some((be(16)?, be(20)?));
    }
    if !bytes.starts_with(&[0xFF, 0xD8]) {
        return None;
    }
    let mut i = 2;
    while i + 9 < bytes.len() {
        if bytes[i] != 0xFF {
            return None;
        }
        let marker = bytes[i + 1];
        let len = usize::from(u16::from_be_bytes([bytes[i + 2], bytes[i + 3]]));
        // SOF0..SOF15, but DHT (C4), JPG (C8) and DAC (CC).
        if (0xC0..=0xCF).contains(&marker) && !matches!(marker, 0xC4 | 0xC8 | 0xCC) {
            let h = u16::from_be_bytes([bytes[i + 5], bytes[i + 6]]);
            let w = u16::from_be_bytes([bytes[i + 7], bytes[i + 8]]);
            return (w > 0 && h > 0).then_some((u32::from(w), u32::from(h)));
        }
        i += 2 + len;
    }
    None
}

/// The text of chat `messages` (their text parts joined), its images pushed on `images` in
/// order; `Err` where an image cannot be read.
pub fn messages(
    msgs: &[serde_json::Value],
    vision: &Vision,
    images: &mut Vec<Image>,
) -> Result<String, String> {
    let mut texts = Vec::with_capacity(msgs.len());
    for m in msgs {
        match &m["content"] {
            serde_json::Value::String(t) => texts.push(t.as_str()),
            serde_json::Value::Array(parts) => {
                for p in parts {
                    if p["type"] == "image_url" {
                        let url = &p["image_url"];
                        let url =
                            url["url"].as_str().or(url.as_str()).ok_or("an image_url part has no url")?;
                        images.push(read(url, vision)?);
                    } else {
                        texts.extend(p["text"].as_str());
                    }
                }
            }
            _ => {}
        }
    }
    Ok(texts.join(" "))
}

/// A Responses API message's content as chat's: `input_text` parts as `text`, `input_image`
/// parts as `image_url`; text as it is.
pub fn chat_parts(content: serde_json::Value) -> serde_json::Value {
    match content {
        serde_json::Value::Array(parts) => parts
            .into_iter()
            .map(|p| match p["type"].as_str() {
                Some("input_image") => {
                    serde_json::json!({ "type": "image_url", "image_url": { "url": p["image_url"] } })
                }
                _ => serde_json::json!({ "type": "text", "text": p["text"] }),
            })
            .collect(),
        text => text,
    }
}

/// The multimodal cache: which images were encoded, least recently used first out.
#[derive(Debug, Default)]
pub struct Cache {
    used: std::collections::HashMap<u64, u64>,
    tick: u64,
}

impl Cache {
    /// Looks `image` up (and keeps it, evicting the least recently used past `items`):
    /// whether it was there.
    pub fn query(&mut self, image: u64, items: usize) -> bool {
        if items == 0 {
            return false;
        }
        self.tick += 1;
        let hit = self.used.insert(image, self.tick).is_some();
        if self.used.len() > items {
            let oldest = self.used.iter().min_by_key(|(_, t)| **t).map(|(h, _)| *h);
            if let Some(h) = oldest {
                self.used.remove(&h);
            }
        }
        hit
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn qwen2_vl_patch_rule() {
        let v = VISION_H100;
        // 1024×768 → 1036×756 (37 × 27 patches).
        assert_eq!(v.tokens(1024, 768), 999);
        assert_eq!(v.tokens(28, 28), 4, "below min_pixels: scaled up to 56×56");
        assert_eq!(v.tokens(448, 448), 256);
        let capped = Vision { max_pixels: 28 * 28 * 1280, ..v };
        assert!(capped.tokens(4000, 3000) <= 1280, "{}", capped.tokens(4000, 3000));
        assert!(capped.tokens(4000, 3000) > 1100);
    }

    #[test]
    fn the_cache_keeps_the_most_recently_used() {
        let mut c = Cache::default();
        assert!(!c.query(1, 2) && !c.query(2, 2) && c.query(1, 2));
        assert!(!c.query(3, 2), "3 evicts 2, the least recently used");
        assert!(c.query(1, 2) && !c.query(2, 2));
        assert!(!c.query(7, 0) && !c.query(7, 0), "off");
    }
}
