//! `images = {…}` read and checked: the drawn form's size, format and reuse, or the dataset
//! form's lines, each file decoded before any request is sent.

use super::{Format, Images, Picture};
use crate::plan::{R, Resolver, Workload};
use crate::suite::{Api, ImagesSpec, RowSpec};
use std::sync::Arc;
use toml::Spanned;

const HINT: &str = "images = { count = 1, width = 1024, height = 768, format = \"jpeg\", reuse = 0.0 } \
on a chat or responses row, or images = { file = \"images.jsonl\" } (lines of {\"image\": \"cat.jpg\"} or \
{\"images\": [\"a.jpg\", \"b.png\"]}, paths relative to that file)";

/// Most images one request carries.
pub const MAX_COUNT: u32 = 64;
/// Most pixels of one drawn picture (a 6K frame; Qwen2-VL's processor resizes to at most
/// 12.8M).
pub const MAX_PIXELS: u64 = 40_000_000;
/// Most bytes a dataset's files may hold together (they are kept in memory as data URLs).
pub const MAX_DATASET_BYTES: u64 = 256 << 20;

impl Resolver<'_> {
    /// The row's request kinds beside its text: `images`, then an embeddings row's shape.
    pub(in crate::plan) fn request_kinds(
        &self,
        api: Api,
        d: &RowSpec,
        r: &RowSpec,
        w: &mut Workload,
    ) -> R<()> {
        if let Some(spec) = r.images.as_ref().or(d.images.as_ref()) {
            let inside = [
                ("a conversation", r.conversation.as_ref().or(d.conversation.as_ref()).map(|_| ())),
                ("an agent", r.agent.as_ref().or(d.agent.as_ref()).map(|_| ())),
            ];
            if let Some((what, _)) = inside.iter().find(|(_, s)| s.is_some()) {
                return self.err(
                    spec.span(),
                    format!("images in {what}: a session's later calls carry only text"),
                    "images on a row of single requests (or a mix class)",
                );
            }
            w.images = self.images(spec, api, w.seed)?;
        }
        self.embeddings(api, d, r, w)
    }

    /// `images = {…}` on a route `api`, drawn from `seed`.
    pub(in crate::plan) fn images(
        &self,
        sp: &Spanned<ImagesSpec>,
        api: Api,
        seed: u64,
    ) -> R<Option<Arc<Images>>> {
        let spec = sp.get_ref();
        if !matches!(api, Api::Chat | Api::Responses) {
            return self.err(sp.span(), "images are sent in chat or Responses API messages", HINT);
        }
        if let Some(file) = &spec.file {
            let drawn = [spec.count.is_some(), spec.width.is_some(), spec.height.is_some()];
            if drawn.iter().any(|d| *d) || spec.format.is_some() || spec.reuse.is_some() {
                return self.err(
                    sp.span(),
                    "`file` names the images: count, width, height, format and reuse are for drawn ones",
                    HINT,
                );
            }
            let path = self.expand(file)?;
            return match read_dataset(&self.relative(&path)) {
                Ok(lines) if lines.is_empty() => self.err(file.span(), format!("{path}: no images"), HINT),
                Ok(lines) => Ok(Some(Arc::new(Images::files(path, lines)))),
                Err((0, why)) => self.err(file.span(), format!("{path}: {why}"), HINT),
                Err((line, why)) => self.err(file.span(), format!("{path}:{line}: {why}"), HINT),
            };
        }
        let at = |s: &Option<Spanned<u32>>| s.as_ref().map_or(sp.span(), Spanned::span);
        let count = spec.count.as_ref().map_or(1, |c| *c.get_ref());
        if count == 0 || count > MAX_COUNT {
            return self.err(
                at(&spec.count),
                format!("count = {count} is not 1 to {MAX_COUNT} images a request"),
                HINT,
            );
        }
        let (width, height) = (
            spec.width.as_ref().map_or(1024, |w| *w.get_ref()),
            spec.height.as_ref().map_or(768, |h| *h.get_ref()),
        );
        for (key, v, s) in [("width", width, &spec.width), ("height", height, &spec.height)] {
            if v == 0 || v > 16_384 {
                return self.err(at(s), format!("{key} = {v} is not 1 to 16384 pixels"), HINT);
            }
        }
        if u64::from(width) * u64::from(height) > MAX_PIXELS {
            let msg = format!("{width}×{height} is more than {MAX_PIXELS} pixels a picture");
            return self.err(sp.span(), msg, HINT);
        }
        let format = match spec.format.as_ref().map(|f| f.get_ref().as_str()) {
            None | Some("jpeg") | Some("jpg") => Format::Jpeg,
            Some("png") => Format::Png,
            Some(other) => {
                let span = spec.format.as_ref().map_or(sp.span(), Spanned::span);
                return self.err(span, format!("image format `{other}` is not jpeg or png"), HINT);
            }
        };
        let reuse = match &spec.reuse {
            None => 0.0,
            Some(toml::Value::String(t)) => match crate::plan::units::split_number(t) {
                Ok((v, "%")) => v / 100.0,
                _ => f64::NAN,
            },
            Some(toml::Value::Float(f)) => *f,
            Some(toml::Value::Integer(i)) => *i as f64,
            Some(_) => f64::NAN,
        };
        if !(0.0..=1.0).contains(&reuse) {
            return self.err(sp.span(), "image reuse must be a share from 0 to 100%", HINT);
        }
        match Images::drawn(count, (width, height), format, reuse, seed) {
            Ok(images) => Ok(Some(Arc::new(images))),
            Err(why) => self.err(sp.span(), format!("cannot draw a {width}×{height} picture: {why}"), HINT),
        }
    }
}

/// Most bytes of the list of images itself (a suite file's bound).
const MAX_LIST_BYTES: u64 = 16 << 20;

/// Why [`read_bounded`] stopped: the file passed its bound.
const TOO_LARGE: &str = "larger than its bound";

/// The file's bytes, never more than `most` read: a larger file is [`TOO_LARGE`].
fn read_bounded(path: &std::path::Path, most: u64) -> Result<Vec<u8>, String> {
    use std::io::Read;
    let mut bytes = Vec::new();
    std::fs::File::open(path)
        .and_then(|f| f.take(most + 1).read_to_end(&mut bytes))
        .map_err(|e| e.to_string())?;
    if bytes.len() as u64 > most {
        return Err(TOO_LARGE.into());
    }
    Ok(bytes)
}

/// The dataset's lines, each file read and decoded: `Err((line, why))` (line 0: the file).
fn read_dataset(path: &std::path::Path) -> Result<Vec<Vec<Picture>>, (usize, String)> {
    let text = String::from_utf8(read_bounded(path, MAX_LIST_BYTES).map_err(|e| (0, e))?)
        .map_err(|_| (0, "not UTF-8 text".to_string()))?;
    let dir = path.parent().unwrap_or(std::path::Path::new("."));
    let mut lines = Vec::new();
    let mut total = 0u64;
    // A file named on many lines is read, checked and held once.
    let mut read: std::collections::HashMap<String, Picture> = std::collections::HashMap::new();
    for (n, line) in text.lines().enumerate().filter(|(_, l)| !l.trim().is_empty()) {
        let at = |why: String| (n + 1, why);
        let v: serde_json::Value = serde_json::from_str(line).map_err(|e| at(format!("not JSON: {e}")))?;
        let names: Vec<&str> = match (&v["image"], &v["images"]) {
            (serde_json::Value::String(one), serde_json::Value::Null) => vec![one],
            (serde_json::Value::Null, serde_json::Value::Array(many)) if !many.is_empty() => many
                .iter()
                .map(|m| m.as_str().ok_or_else(|| at("`images` holds file names".into())))
                .collect::<Result<_, _>>()?,
            _ => return Err(at("a line is {\"image\": \"file\"} or {\"images\": [\"file\", …]}".into())),
        };
        if names.len() > MAX_COUNT as usize {
            return Err(at(format!("{} images, more than {MAX_COUNT} a request", names.len())));
        }
        let mut pictures = Vec::with_capacity(names.len());
        for name in names {
            if let Some(p) = read.get(name) {
                pictures.push(p.clone());
                continue;
            }
            let left = MAX_DATASET_BYTES - total;
            let bytes = read_bounded(&dir.join(name), left).map_err(|e| match e.as_str() {
                TOO_LARGE => at(format!("the images pass {} MiB together", MAX_DATASET_BYTES >> 20)),
                _ => at(format!("{name}: {e}")),
            })?;
            total += bytes.len() as u64;
            let (format, ..) = super::decode(&bytes).map_err(|why| at(format!("{name} {why}")))?;
            let url = super::data_url(format.mime(), &bytes).into();
            let picture = Picture { url, bytes: bytes.len() as u64 };
            read.insert(name.to_string(), picture.clone());
            pictures.push(picture);
        }
        lines.push(pictures);
    }
    Ok(lines)
}

#[cfg(test)]
mod tests {
    /// A file is read up to its bound and no further: past it, the read stops and says so.
    #[test]
    fn a_file_past_its_bound_is_not_read_whole() {
        let path = std::env::temp_dir().join(format!("slotest-bounded-{}", std::process::id()));
        std::fs::write(&path, [7u8; 10]).expect("file");
        assert_eq!(super::read_bounded(&path, 10).map(|b| b.len()), Ok(10));
        assert_eq!(super::read_bounded(&path, 9), Err(super::TOO_LARGE.to_string()));
        let _ = std::fs::remove_file(&path);
    }
}
