//! Images in prompts (`images = { count = 1, width = 1024, height = 768, format = "jpeg",
//! reuse = 0.0 }`, or `images = { file = "images.jsonl" }`): real, decodable pictures sent as
//! data URLs beside each request's text — drawn from the seed at the asked size, or read from
//! local files a JSON-lines file names.
//!
//! A drawn picture is encoded once; each image a request sends is a copy of it with its own
//! salted corner ([`draw`]): different pixels, so an engine's multimodal cache sees a new image,
//! unless the copy is one the run sent before (`reuse`, the share of images that are).

pub mod draw;

use serde::Serialize;
use std::borrow::Cow;
use std::sync::Arc;

/// How the pictures are encoded.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Format {
    /// Baseline JPEG, quality 85, 4:2:0.
    Jpeg,
    /// 8-bit RGB PNG.
    Png,
}

impl Format {
    /// Its name in a suite and in results.json: `jpeg`, `png`.
    pub fn name(self) -> &'static str {
        match self {
            Format::Jpeg => "jpeg",
            Format::Png => "png",
        }
    }

    /// The data URL's media type.
    pub fn mime(self) -> &'static str {
        match self {
            Format::Jpeg => "image/jpeg",
            Format::Png => "image/png",
        }
    }
}

/// A row's (or a class's) images. Part of the row's definition by what is drawn (count, size,
/// format, reuse) or by the files' contents (not their paths).
#[derive(Clone, Serialize)]
pub struct Images {
    /// Images a request carries (a dataset's lines may differ: their largest count).
    pub count: u32,
    /// Pixels across of a drawn picture (0 for a dataset).
    pub width: u32,
    /// Pixels down of a drawn picture (0 for a dataset).
    pub height: u32,
    /// How drawn pictures are encoded.
    pub format: Format,
    /// The share of images the run has sent before (what an engine's multimodal cache
    /// serves); a dataset repeats what its lines repeat.
    pub reuse: f64,
    /// A dataset's identity: the hash of its lines' files, in order.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub dataset: Option<String>,
    /// The file as the suite names it, for reports.
    #[serde(skip)]
    pub file: Option<String>,
    #[serde(skip)]
    source: Source,
}

#[derive(Clone)]
enum Source {
    Drawn(Arc<draw::Drawn>),
    /// Each line's images, as data URLs.
    Files(Arc<Vec<Vec<Picture>>>),
}

/// One image read from a file.
#[derive(Debug, Clone)]
pub struct Picture {
    /// `data:image/…;base64,…`.
    pub url: Arc<str>,
    /// Encoded bytes.
    pub bytes: u64,
}

impl std::fmt::Debug for Images {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Images")
            .field("count", &self.count)
            .field("width", &self.width)
            .field("height", &self.height)
            .field("reuse", &self.reuse)
            .field("file", &self.file)
            .finish_non_exhaustive()
    }
}

impl PartialEq for Images {
    fn eq(&self, other: &Images) -> bool {
        (self.count, self.width, self.height, self.format, self.dataset.as_deref())
            == (other.count, other.width, other.height, other.format, other.dataset.as_deref())
            && self.reuse.to_bits() == other.reuse.to_bits()
    }
}

/// The images of one request: data URLs, and the encoded bytes they carry.
#[derive(Debug, Default)]
pub struct Sent<'a> {
    /// `data:…;base64,…`, one an image, in order.
    pub urls: Vec<Cow<'a, str>>,
    /// Encoded bytes of every image together (before base64).
    pub bytes: u64,
}

impl Images {
    /// Drawn pictures: one encoded at `width` × `height` from `seed`.
    pub fn drawn(
        count: u32,
        (width, height): (u32, u32),
        format: Format,
        reuse: f64,
        seed: u64,
    ) -> Result<Images, String> {
        let drawn = draw::Drawn::new(format, width, height, seed)?;
        Ok(Images {
            count,
            width,
            height,
            format,
            reuse,
            dataset: None,
            file: None,
            source: Source::Drawn(Arc::new(drawn)),
        })
    }

    /// Pictures read from files, one list a line.
    pub fn files(file: String, lines: Vec<Vec<Picture>>) -> Images {
        let count = lines.iter().map(Vec::len).max().unwrap_or(0) as u32;
        let mut h: u64 = super::fnv1a(b"images");
        for p in lines.iter().flatten() {
            h = super::fnv1a(&[h.to_le_bytes().as_slice(), p.url.as_bytes()].concat());
        }
        Images {
            count,
            width: 0,
            height: 0,
            format: Format::Jpeg,
            reuse: 0.0,
            dataset: Some(format!("{h:016x}")),
            file: Some(file),
            source: Source::Files(Arc::new(lines)),
        }
    }

    /// Images request `index` carries.
    pub fn count_of(&self, index: u64) -> u32 {
        match &self.source {
            Source::Files(lines) if !lines.is_empty() => {
                lines[(index % lines.len() as u64) as usize].len() as u32
            }
            Source::Files(_) => 0,
            Source::Drawn(_) => self.count,
        }
    }

    /// The images request `index` sends, in a stream whose text seed is `seed` (a salt
    /// changes it, so two runs never share an image unless they share their text).
    pub fn of_request(&self, seed: u64, index: u64) -> Sent<'_> {
        match &self.source {
            Source::Files(lines) if !lines.is_empty() => {
                let line = &lines[(index % lines.len() as u64) as usize];
                Sent {
                    urls: line.iter().map(|p| Cow::Borrowed(&*p.url)).collect(),
                    bytes: line.iter().map(|p| p.bytes).sum(),
                }
            }
            Source::Files(_) => Sent::default(),
            Source::Drawn(drawn) => {
                let mut sent = Sent::default();
                for j in 0..u64::from(self.count) {
                    let copy = drawn.copy(self.copy_of(seed, index * u64::from(self.count) + j));
                    sent.bytes += copy.len() as u64;
                    sent.urls.push(Cow::Owned(data_url(self.format.mime(), &copy)));
                }
                sent
            }
        }
    }

    /// The copy (its salt) that image slot `slot` of the run sends: a new one, or — for a
    /// `reuse` share of the slots — the copy of an earlier slot, drawn uniformly. Never 0 (the
    /// picture as drawn is never sent), the same for the same seed and slot.
    pub fn copy_of(&self, seed: u64, mut slot: u64) -> u64 {
        loop {
            let mut s = seed ^ slot.wrapping_mul(0xA24B_AED4_963E_E407);
            let draw = draw::splitmix(&mut s);
            let reused = slot > 0 && ((draw >> 11) as f64 / (1u64 << 53) as f64) < self.reuse;
            if !reused {
                return draw::splitmix(&mut s) | 1;
            }
            slot = draw::splitmix(&mut s) % slot;
        }
    }
}

/// `data:{mime};base64,{bytes}`.
pub fn data_url(mime: &str, bytes: &[u8]) -> String {
    use base64::Engine;
    let mut out = String::with_capacity(mime.len() + 13 + bytes.len().div_ceil(3) * 4);
    out.push_str("data:");
    out.push_str(mime);
    out.push_str(";base64,");
    base64::engine::general_purpose::STANDARD.encode_string(bytes, &mut out);
    out
}

/// What the file's magic bytes say it is, and its size once decoded: `Err` names why it does
/// not decode.
pub fn decode(bytes: &[u8]) -> Result<(Format, u32, u32), String> {
    if bytes.starts_with(&[0xFF, 0xD8]) {
        let mut d = zune_jpeg::JpegDecoder::new(std::io::Cursor::new(bytes));
        let pixels = d.decode().map_err(|e| format!("does not decode as JPEG: {e:?}"))?;
        let (w, h) = d.dimensions().ok_or("a JPEG without dimensions")?;
        if pixels.is_empty() {
            return Err("a JPEG of no pixels".into());
        }
        return Ok((Format::Jpeg, w as u32, h as u32));
    }
    if bytes.starts_with(b"\x89PNG\r\n\x1a\n") {
        let mut d = png::Decoder::new(std::io::Cursor::new(bytes))
            .read_info()
            .map_err(|e| format!("does not decode as PNG: {e}"))?;
        let mut buf = vec![0; d.output_buffer_size().ok_or("a PNG too large to decode")?];
        let info = d.next_frame(&mut buf).map_err(|e| format!("does not decode as PNG: {e}"))?;
        return Ok((Format::Png, info.width, info.height));
    }
    Err("neither a JPEG nor a PNG (its first bytes are neither's signature)".into())
}

mod spec;

#[cfg(test)]
mod tests;
