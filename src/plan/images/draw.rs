//! Drawn images: one picture of the asked size drawn from the seed, encoded once when the suite
//! is planned, and a cheap way to make each request's copy unique without encoding it again.
//!
//! - **JPEG**: the picture is encoded with a restart marker every [`SALT_MCUS`] MCUs, so each
//!   interval is coded on its own (byte-aligned, DC prediction reset). A request's copy replaces
//!   the first interval with the code of a small salted patch (the top-left 64×16 pixels at
//!   4:2:0), encoded alone with the same tables: the bytes an encoder writes for the whole salted
//!   picture (a unit test holds them equal), for the cost of 1,024 pixels.
//! - **PNG**: the first row is a stored (uncompressed) deflate block, the other rows one
//!   compressed stream that never refers back to it; a copy rewrites that row, and the zlib
//!   Adler-32 and the chunk's CRC are combined from the stored parts' sums.
//!
//! Pixels differ per copy, so an engine that hashes decoded pixels (vLLM's multimodal cache)
//! sees a new image; the same copy twice is byte for byte the same image.

use super::Format;

/// MCUs per JPEG restart interval: the salted patch is this many MCUs wide.
const SALT_MCUS: u16 = 4;
/// JPEG quality: a photo's usual setting (4:2:0 chroma below 90).
const QUALITY: u8 = 85;

/// One drawn picture, encoded, and split where a copy's salt goes.
#[derive(Debug)]
pub struct Drawn {
    /// `jpeg` or `png`.
    pub format: Format,
    /// Pixels across.
    pub width: u32,
    /// Pixels down.
    pub height: u32,
    /// The picture's pixels (RGB), kept for the salted patch's neighbours.
    pixels: Vec<u8>,
    /// Everything before the salted part: JPEG headers through the scan header; PNG signature,
    /// IHDR, the IDAT length field's place is written per copy.
    head: Vec<u8>,
    /// Everything after it: JPEG intervals from the first restart marker to EOI; PNG's
    /// compressed rows after the first.
    tail: Vec<u8>,
    /// PNG: the Adler-32 and CRC-32 of `tail`'s uncompressed rows and bytes.
    png: Option<PngSums>,
}

#[derive(Debug, Clone)]
struct PngSums {
    rest_adler: u32,
    rest_len: u64,
    tail_crc: crc32fast::Hasher,
}

/// SplitMix64: a fast, well-mixed stream from one seed (pixels, salts).
pub(super) fn splitmix(state: &mut u64) -> u64 {
    *state = state.wrapping_add(0x9E37_79B9_7F4A_7C15);
    let mut z = *state;
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

/// A picture drawn from `seed`: a smooth two-colour gradient, a few filled rectangles and
/// discs, and (a photo's) a little grain — what an encoder and an engine's resize work on.
pub(super) fn picture(width: u32, height: u32, seed: u64, grain: bool) -> Vec<u8> {
    let (w, h) = (width as usize, height as usize);
    let mut s = seed ^ 0x1AA6_E5ED;
    let colour = |s: &mut u64| {
        let v = splitmix(s);
        [(v & 0xff) as f32, ((v >> 8) & 0xff) as f32, ((v >> 16) & 0xff) as f32]
    };
    let (c0, c1) = (colour(&mut s), colour(&mut s));
    let shapes: Vec<([f32; 3], [u64; 4])> = (0..12)
        .map(|_| {
            let c = colour(&mut s);
            let v = splitmix(&mut s);
            let dims = [
                v % w as u64,
                (v >> 16) % h as u64,
                1 + (v >> 32) % (w as u64 / 3 + 1),
                1 + (v >> 48) % (h as u64 / 3 + 1),
            ];
            (c, dims)
        })
        .collect();
    let mut noise = seed.rotate_left(17);
    let mut out = Vec::with_capacity(w * h * 3);
    for y in 0..h {
        for x in 0..w {
            let t = (x + y) as f32 / (w + h) as f32;
            let mut px = [0.0f32; 3];
            for k in 0..3 {
                px[k] = c0[k] * (1.0 - t) + c1[k] * t;
            }
            for (i, (c, [cx, cy, rx, ry])) in shapes.iter().enumerate() {
                let (dx, dy) = (x as i64 - *cx as i64, y as i64 - *cy as i64);
                let inside = if i % 2 == 0 {
                    dx.unsigned_abs() < *rx && dy.unsigned_abs() < *ry
                } else {
                    let (fx, fy) = (dx as f32 / *rx as f32, dy as f32 / *ry as f32);
                    fx * fx + fy * fy < 1.0
                };
                if inside {
                    px = *c;
                }
            }
            let n = if grain { splitmix(&mut noise) } else { 0x0808_0808 };
            for (k, v) in px.iter().enumerate() {
                let noise = ((n >> (8 * k)) & 0x0f) as f32 - 8.0;
                out.push((v + noise).clamp(0.0, 255.0) as u8);
            }
        }
    }
    out
}

impl Drawn {
    /// Draws and encodes the picture. `Err` only where the encoder refuses the size.
    pub fn new(format: Format, width: u32, height: u32, seed: u64) -> Result<Drawn, String> {
        // A photo has grain; a PNG is a screenshot or a chart, without it.
        let pixels = picture(width, height, seed, format == Format::Jpeg);
        match format {
            Format::Jpeg => jpeg_parts(width, height, pixels),
            Format::Png => Ok(png_parts(width, height, pixels)),
        }
    }

    /// The encoded bytes of copy `salt` (0: the picture as drawn).
    pub fn copy(&self, salt: u64) -> Vec<u8> {
        match self.format {
            Format::Jpeg => self.jpeg_copy(salt),
            Format::Png => self.png_copy(salt),
        }
    }

    /// The top-left patch's pixels salted by `salt` (0: unchanged): `(pixels, w, h)`.
    fn patch(&self, salt: u64, pw: u32, ph: u32) -> Vec<u8> {
        let mut out = Vec::with_capacity((pw * ph * 3) as usize);
        let mut s = salt;
        for y in 0..ph as usize {
            let row = y * self.width as usize * 3;
            for x in 0..pw as usize * 3 {
                let v = self.pixels[row + x];
                out.push(if salt == 0 { v } else { v ^ (splitmix(&mut s) as u8 & 0x3f) });
            }
        }
        out
    }

    fn jpeg_copy(&self, salt: u64) -> Vec<u8> {
        let interval = interval(self.width);
        if self.head.is_empty() {
            // A picture of one interval: the whole of it is the patch.
            let (w, h) = (self.width, self.height);
            return jpeg(&self.patch(salt, w, h), w, h, interval).unwrap_or_default();
        }
        let (pw, ph) = (self.width.min(16 * u32::from(interval)), self.height.min(16));
        let small = jpeg(&self.patch(salt, pw, ph), pw, ph, interval).unwrap_or_default();
        let scan = scan_data(&small);
        let mut out = Vec::with_capacity(self.head.len() + scan.len() + self.tail.len());
        out.extend_from_slice(&self.head);
        out.extend_from_slice(scan);
        out.extend_from_slice(&self.tail);
        out
    }

    fn png_copy(&self, salt: u64) -> Vec<u8> {
        let sums = self.png.as_ref().expect("invariant: a PNG has its sums");
        let mut row0 = vec![0u8];
        row0.extend(self.patch(salt, self.width, 1));
        let stored = stored_block(&row0);
        let adler = adler32_combine(adler32(&row0), sums.rest_adler, sums.rest_len);
        let idat_len = 2 + stored.len() + self.tail.len() + 4;
        let mut out = Vec::with_capacity(self.head.len() + idat_len + 24);
        out.extend_from_slice(&self.head);
        out.extend_from_slice(&(idat_len as u32).to_be_bytes());
        let start = out.len();
        out.extend_from_slice(b"IDAT\x78\x01");
        out.extend_from_slice(&stored);
        let mut crc = crc32fast::Hasher::new();
        crc.update(&out[start..]);
        out.extend_from_slice(&self.tail);
        crc.combine(&sums.tail_crc);
        let adler = adler.to_be_bytes();
        crc.update(&adler);
        out.extend_from_slice(&adler);
        out.extend_from_slice(&crc.finalize().to_be_bytes());
        out.extend_from_slice(&png_chunk(b"IEND", &[]));
        out
    }
}

/// MCUs per restart interval of a picture `width` pixels across: [`SALT_MCUS`], or one row of
/// 16×16 MCUs (4:2:0) where a row holds fewer — an interval never spans two rows, so the
/// salted patch (the first interval) is a rectangle: 64×16 pixels, or the first MCU row.
fn interval(width: u32) -> u16 {
    let columns = width.div_ceil(16).clamp(1, u32::from(SALT_MCUS));
    columns as u16
}

/// A baseline JPEG of `pixels` (RGB) with a restart marker every `interval` MCUs.
pub(super) fn jpeg(pixels: &[u8], width: u32, height: u32, interval: u16) -> Result<Vec<u8>, String> {
    let mut out = Vec::with_capacity(pixels.len() / 8);
    let mut enc = jpeg_encoder::Encoder::new(&mut out, QUALITY);
    enc.set_restart_interval(interval);
    let (w, h) =
        (u16::try_from(width).map_err(|_| "too wide")?, u16::try_from(height).map_err(|_| "too tall")?);
    enc.encode(pixels, w, h, jpeg_encoder::ColorType::Rgb).map_err(|e| e.to_string())?;
    Ok(out)
}

/// The entropy-coded data of a JPEG's (only) scan: after the SOS segment, before EOI.
fn scan_data(jpeg: &[u8]) -> &[u8] {
    let sos = sos_end(jpeg).unwrap_or(jpeg.len());
    let end = jpeg.len().saturating_sub(2).max(sos);
    &jpeg[sos..end]
}

/// Where the scan's data begins: just past the SOS segment.
fn sos_end(jpeg: &[u8]) -> Option<usize> {
    let mut i = 2;
    while i + 4 <= jpeg.len() {
        if jpeg[i] != 0xFF {
            return None;
        }
        let len = usize::from(u16::from_be_bytes([jpeg[i + 2], jpeg[i + 3]]));
        if jpeg[i + 1] == 0xDA {
            return Some(i + 2 + len);
        }
        i += 2 + len;
    }
    None
}

fn jpeg_parts(width: u32, height: u32, pixels: Vec<u8>) -> Result<Drawn, String> {
    let whole = jpeg(&pixels, width, height, interval(width))?;
    let start = sos_end(&whole).ok_or("the encoder wrote no scan")?;
    // The first restart marker (FF D0) ends the first interval; a picture of one interval has
    // none, and is encoded whole per copy.
    let rst = whole[start..].windows(2).position(|w| w == [0xFF, 0xD0]).map(|p| start + p);
    let (head, tail) = match rst {
        Some(at) => (whole[..start].to_vec(), whole[at..].to_vec()),
        None => (Vec::new(), Vec::new()),
    };
    Ok(Drawn { format: Format::Jpeg, width, height, pixels, head, tail, png: None })
}

fn png_parts(width: u32, height: u32, pixels: Vec<u8>) -> Drawn {
    let stride = width as usize * 3;
    let mut rest = Vec::with_capacity((stride + 1) * height as usize);
    for row in pixels.chunks_exact(stride).skip(1) {
        // Filter Sub: each byte less the pixel before it (never the row above: row 0 is a
        // copy's own), so the smooth parts compress as a screenshot's do.
        rest.push(1);
        rest.extend(row.iter().enumerate().map(|(i, &b)| if i < 3 { b } else { b.wrapping_sub(row[i - 3]) }));
    }
    // The final block: a raw deflate stream of its own, so it never refers back to row 0.
    let tail = miniz_oxide::deflate::compress_to_vec(&rest, 6);
    let mut tail_crc = crc32fast::Hasher::new();
    tail_crc.update(&tail);
    let sums = PngSums { rest_adler: adler32(&rest), rest_len: rest.len() as u64, tail_crc };
    let mut head = b"\x89PNG\r\n\x1a\n".to_vec();
    let mut ihdr = Vec::with_capacity(13);
    ihdr.extend_from_slice(&width.to_be_bytes());
    ihdr.extend_from_slice(&height.to_be_bytes());
    ihdr.extend_from_slice(&[8, 2, 0, 0, 0]); // 8 bits, RGB, deflate, filter 0, no interlace
    head.extend_from_slice(&png_chunk(b"IHDR", &ihdr));
    Drawn { format: Format::Png, width, height, pixels, head, tail, png: Some(sums) }
}

/// A non-final stored deflate block (or blocks: 65,535 bytes each) holding `data`.
fn stored_block(data: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(data.len() + 5 * (data.len() / 65_535 + 1));
    for piece in data.chunks(65_535) {
        let len = piece.len() as u16;
        out.push(0); // BFINAL 0, BTYPE 00, padded to the byte
        out.extend_from_slice(&len.to_le_bytes());
        out.extend_from_slice(&(!len).to_le_bytes());
        out.extend_from_slice(piece);
    }
    out
}

fn png_chunk(kind: &[u8; 4], data: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(data.len() + 12);
    out.extend_from_slice(&(data.len() as u32).to_be_bytes());
    out.extend_from_slice(kind);
    out.extend_from_slice(data);
    let mut crc = crc32fast::Hasher::new();
    crc.update(kind);
    crc.update(data);
    out.extend_from_slice(&crc.finalize().to_be_bytes());
    out
}

const ADLER_BASE: u64 = 65_521;

/// zlib's Adler-32 of `data`.
pub(super) fn adler32(data: &[u8]) -> u32 {
    let (mut a, mut b) = (1u64, 0u64);
    for chunk in data.chunks(5_552) {
        for &x in chunk {
            a += u64::from(x);
            b += a;
        }
        (a, b) = (a % ADLER_BASE, b % ADLER_BASE);
    }
    ((b << 16) | a) as u32
}

/// The Adler-32 of two byte strings one after the other, from each one's sum and the second's
/// length (zlib's `adler32_combine`).
pub(super) fn adler32_combine(first: u32, second: u32, second_len: u64) -> u32 {
    let rem = second_len % ADLER_BASE;
    let (a1, b1) = (u64::from(first & 0xffff), u64::from(first >> 16));
    let (a2, b2) = (u64::from(second & 0xffff), u64::from(second >> 16));
    let a = (a1 + a2 + ADLER_BASE - 1) % ADLER_BASE;
    let b = (rem * a1 % ADLER_BASE + b1 + b2 + ADLER_BASE - rem) % ADLER_BASE;
    ((b << 16) | a) as u32
}

#[cfg(test)]
#[path = "draw_tests.rs"]
mod tests;
