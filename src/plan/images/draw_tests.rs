use super::*;

/// The salted picture as an encoder writes it whole: the bytes a copy must equal.
fn whole(d: &Drawn, salt: u64) -> Vec<u8> {
    let mut pixels = d.pixels.clone();
    let (pw, ph) = if d.head.is_empty() {
        (d.width, d.height)
    } else {
        (d.width.min(16 * u32::from(interval(d.width))), d.height.min(16))
    };
    let patch = d.patch(salt, pw, ph);
    for y in 0..ph as usize {
        let (row, w) = (y * d.width as usize * 3, pw as usize * 3);
        pixels[row..row + w].copy_from_slice(&patch[y * w..(y + 1) * w]);
    }
    jpeg(&pixels, d.width, d.height, interval(d.width)).expect("encode")
}

fn decoded_jpeg(bytes: &[u8]) -> (usize, usize, Vec<u8>) {
    let mut dec = zune_jpeg::JpegDecoder::new(std::io::Cursor::new(bytes));
    let pixels = dec.decode().expect("the copy decodes");
    let (w, h) = dec.dimensions().expect("dimensions");
    (w, h, pixels)
}

#[test]
fn a_jpeg_copy_is_byte_for_byte_the_salted_picture_encoded_whole() {
    for (w, h) in [(1024, 768), (100, 50), (10, 40), (64, 16), (65, 17), (8, 8), (300, 9)] {
        let d = Drawn::new(Format::Jpeg, w, h, 7).expect("drawn");
        for salt in [1u64, 0xdead_beef, 42] {
            let copy = d.copy(salt);
            assert!(
                copy == whole(&d, salt),
                "{w}×{h} salt {salt}: the spliced copy differs from the whole encoding"
            );
            let (dw, dh, pixels) = decoded_jpeg(&copy);
            assert_eq!((dw, dh), (w as usize, h as usize));
            assert_eq!(pixels.len(), (w * h * 3) as usize);
        }
        assert_ne!(d.copy(1), d.copy(2), "{w}×{h}: two salts, two images");
        assert_eq!(d.copy(3), d.copy(3));
    }
}

#[test]
fn a_drawn_1024_by_768_jpeg_is_a_photo_sized_picture_not_a_stub() {
    let d = Drawn::new(Format::Jpeg, 1024, 768, 1).expect("drawn");
    let copy = d.copy(9);
    assert!((20_000..400_000).contains(&copy.len()), "{} bytes", copy.len());
    let (_, _, pixels) = decoded_jpeg(&copy);
    let distinct: std::collections::BTreeSet<&[u8]> = pixels.chunks(3).collect();
    assert!(distinct.len() > 1_000, "{} colours", distinct.len());
    // The two salted copies differ in pixels, not only in bytes.
    let (_, _, other) = decoded_jpeg(&d.copy(10));
    assert_ne!(pixels, other);
}

#[test]
fn a_png_copy_decodes_to_the_picture_with_its_first_row_salted() {
    for (w, h) in [(64, 48), (1, 1), (33, 2), (1024, 768)] {
        let d = Drawn::new(Format::Png, w, h, 5).expect("drawn");
        let copy = d.copy(77);
        let mut dec = png::Decoder::new(std::io::Cursor::new(&copy)).read_info().expect("PNG header");
        let mut buf = vec![0; dec.output_buffer_size().expect("size")];
        let info = dec.next_frame(&mut buf).expect("a PNG with valid CRCs and Adler-32 decodes");
        assert_eq!((info.width, info.height), (w, h));
        let stride = w as usize * 3;
        assert_eq!(&buf[..stride], &d.patch(77, w, 1)[..], "row 0 is the salted row");
        assert_eq!(&buf[stride..info.buffer_size()], &d.pixels[stride..], "the other rows are the picture's");
    }
}

#[test]
fn adler32_combines_as_zlib_does() {
    let data: Vec<u8> = (0..200_000u32).map(|i| (i.wrapping_mul(2_654_435_761) >> 13) as u8).collect();
    for cut in [0, 1, 5_551, 65_521, 100_000, 200_000] {
        let (a, b) = data.split_at(cut);
        assert_eq!(adler32_combine(adler32(a), adler32(b), b.len() as u64), adler32(&data), "cut {cut}");
    }
    assert_eq!(adler32(b"Wikipedia"), 0x11E6_0398);
}
