use super::*;

#[test]
fn reuse_is_the_share_of_slots_that_repeat_an_earlier_copy() {
    let fresh = Images::drawn(1, (16, 16), Format::Jpeg, 0.0, 1).expect("drawn");
    let copies: Vec<u64> = (0..2_000).map(|g| fresh.copy_of(11, g)).collect();
    let distinct: std::collections::BTreeSet<_> = copies.iter().collect();
    assert_eq!(distinct.len(), copies.len(), "reuse 0: every image new");
    assert!(copies.iter().all(|c| *c != 0));

    let half = Images::drawn(1, (16, 16), Format::Jpeg, 0.5, 1).expect("drawn");
    let copies: Vec<u64> = (0..4_000).map(|g| half.copy_of(11, g)).collect();
    let mut seen = std::collections::BTreeSet::new();
    let repeats = copies.iter().filter(|c| !seen.insert(**c)).count();
    assert!((1_800..2_200).contains(&repeats), "{repeats} of 4000 repeat an earlier image");
    assert_eq!(copies, (0..4_000).map(|g| half.copy_of(11, g)).collect::<Vec<_>>(), "reproducible");
    assert_ne!(
        copies[1..50],
        (1..50).map(|g| half.copy_of(12, g)).collect::<Vec<_>>()[..],
        "a salt changes them"
    );
}

#[test]
fn a_request_sends_its_count_of_data_urls_that_decode() {
    let images = Images::drawn(3, (200, 100), Format::Jpeg, 0.0, 4).expect("drawn");
    let sent = images.of_request(9, 5);
    assert_eq!(sent.urls.len(), 3);
    let mut bytes = 0;
    for url in &sent.urls {
        let b64 = url.strip_prefix("data:image/jpeg;base64,").expect("a JPEG data URL");
        use base64::Engine;
        let raw = base64::engine::general_purpose::STANDARD.decode(b64).expect("base64");
        bytes += raw.len() as u64;
        assert_eq!(decode(&raw), Ok((Format::Jpeg, 200, 100)));
    }
    assert_eq!(sent.bytes, bytes);
    assert_ne!(sent.urls[0], sent.urls[1], "no two images of a request alike at reuse 0");
}

#[test]
fn what_does_not_decode_says_why() {
    assert!(decode(b"GIF89a").expect_err("refused").contains("neither a JPEG nor a PNG"));
    assert!(
        decode(&[0xFF, 0xD8, 0xFF, 0xE0, 0, 2]).expect_err("refused").contains("does not decode as JPEG")
    );
    assert!(
        decode(b"\x89PNG\r\n\x1a\n\0\0\0\x0dIHDR").expect_err("refused").contains("does not decode as PNG")
    );
}
