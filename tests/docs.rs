//! The docs, checked for what a reader would trip on: output pasted from a failing test, and
//! figures that their own tables contradict.

use std::path::{Path, PathBuf};

fn docs() -> Vec<PathBuf> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut out: Vec<PathBuf> = std::fs::read_dir(root.join("docs"))
        .expect("docs/")
        .filter_map(Result::ok)
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|x| x == "md"))
        .collect();
    out.push(root.join("README.md"));
    out.sort();
    out
}

/// A Rust panic's backtrace or a test harness's failure output, pasted by accident.
#[test]
fn no_doc_carries_a_pasted_backtrace_or_panic() {
    let marks = ["stack backtrace:", "rust_begin_unwind", "core::panicking", "/rustc/", "panicked at '"];
    let mut found = Vec::new();
    for path in docs() {
        let text = std::fs::read_to_string(&path).expect("doc");
        for (i, line) in text.lines().enumerate() {
            if marks.iter().any(|m| line.contains(m)) {
                found.push(format!("{}:{}: {line}", path.display(), i + 1));
            }
        }
    }
    assert!(found.is_empty(), "pasted output in the docs:\n{}", found.join("\n"));
}

/// The first number after `key` in `text` (`$3.50`, `434`).
fn number_after(text: &str, key: &str) -> Option<f64> {
    let rest = &text[text.find(key)? + key.len()..];
    let start = rest.find(|c: char| c.is_ascii_digit())?;
    let digits: String = rest[start..].chars().take_while(|c| c.is_ascii_digit() || *c == '.').collect();
    digits.trim_end_matches('.').parse().ok()
}

/// docs/gpu.md's cost for one user is the GPU-hour price over the one_user row's output
/// tokens an hour, as its own table gives them ($3.50 / (434 tok/s × 3,600 s) = $2.24 per
/// million; it once said $2.08).
#[test]
fn gpu_md_cost_per_million_tokens_follows_from_its_table() {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("docs/gpu.md");
    let text = std::fs::read_to_string(path).expect("docs/gpu.md");
    let price = number_after(&text, "Cost at $").expect("a GPU-hour price");
    // The results table's row: its fifth cell is output tok/s.
    let tokens_per_s: f64 = text
        .lines()
        .filter(|l| l.starts_with("| `one_user` |"))
        .find_map(|row| row.split('|').map(str::trim).nth(5)?.parse().ok())
        .expect("the one_user row of the results table");
    let claim =
        text.find(" for one user").map(|at| &text[..at]).and_then(|t| t.rfind('$').map(|d| &t[d + 1..]));
    let claimed: f64 = claim.and_then(|c| c.parse().ok()).expect("a cost for one user");
    let cost = price / (tokens_per_s * 3600.0) * 1e6;
    assert!(
        (claimed - cost).abs() < 0.01,
        "docs/gpu.md says ${claimed} for one user; its table gives ${cost:.2}"
    );
}

/// The text of `markdown` outside code: fenced blocks and inline code spans blanked.
fn prose(markdown: &str) -> String {
    let mut out = String::new();
    let mut fenced = false;
    for line in markdown.lines() {
        if line.trim_start().starts_with("```") {
            fenced = !fenced;
            out.push('\n');
            continue;
        }
        if !fenced {
            let mut inside = false;
            out.extend(line.chars().map(|c| {
                if c == '`' {
                    inside = !inside;
                }
                if inside || c == '`' { ' ' } else { c }
            }));
        }
        out.push('\n');
    }
    out
}

/// A heading's anchor as GitHub and mdBook make it: lower case, spaces to `-`, other
/// punctuation gone.
fn slug(heading: &str) -> String {
    heading
        .trim()
        .to_lowercase()
        .chars()
        .filter_map(|c| match c {
            ' ' => Some('-'),
            c if c.is_alphanumeric() || c == '-' || c == '_' => Some(c),
            _ => None,
        })
        .collect()
}

/// The anchors of a markdown file's headings (code spans kept as their text).
fn anchors(markdown: &str) -> Vec<String> {
    let mut fenced = false;
    let mut out = Vec::new();
    for line in markdown.lines() {
        if line.trim_start().starts_with("```") {
            fenced = !fenced;
        } else if !fenced && line.starts_with('#') {
            out.push(slug(line.trim_start_matches('#')));
        }
    }
    out
}

/// Every link target of a markdown file's prose: `[text](target)`.
fn links(markdown: &str) -> Vec<String> {
    let text = prose(markdown);
    let mut out = Vec::new();
    let mut rest = text.as_str();
    while let Some(i) = rest.find("](") {
        rest = &rest[i + 2..];
        if let Some(end) = rest.find(')') {
            out.push(rest[..end].trim().to_string());
        }
    }
    out
}

/// Every relative link of the README and the book goes to a file of the repository, and an
/// anchor to a heading of it: the book is built by CI, and a moved page or a renamed section
/// must not leave a reader at a dead end.
#[test]
fn every_link_of_the_readme_and_the_book_resolves() {
    let mut dead = Vec::new();
    for path in docs() {
        let text = std::fs::read_to_string(&path).expect("doc");
        let dir = path.parent().expect("a folder");
        for link in links(&text) {
            if link.contains("://") || link.starts_with("mailto:") {
                continue;
            }
            let (file, anchor) = link.split_once('#').unwrap_or((link.as_str(), ""));
            let target = if file.is_empty() { path.clone() } else { dir.join(file) };
            if !target.exists() {
                dead.push(format!("{}: {link}: no such file", path.display()));
                continue;
            }
            let is_md = target.extension().is_some_and(|x| x == "md");
            if !anchor.is_empty() && is_md {
                let headings = anchors(&std::fs::read_to_string(&target).expect("linked doc"));
                if !headings.iter().any(|h| h == anchor) {
                    dead.push(format!("{}: {link}: no such heading", path.display()));
                }
            }
        }
    }
    assert!(dead.is_empty(), "dead links:\n{}", dead.join("\n"));
}

/// The book holds every page of docs/: each one is a chapter of docs/SUMMARY.md.
#[test]
fn every_page_of_docs_is_a_chapter_of_the_book() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let summary = std::fs::read_to_string(root.join("docs/SUMMARY.md")).expect("docs/SUMMARY.md");
    let chapters = links(&summary);
    let missing: Vec<String> = docs()
        .into_iter()
        .filter(|p| p.parent() == Some(&root.join("docs")))
        .filter_map(|p| p.file_name().map(|n| n.to_string_lossy().into_owned()))
        .filter(|n| n != "SUMMARY.md" && !chapters.contains(n))
        .collect();
    assert!(missing.is_empty(), "pages of docs/ the book leaves out: {missing:?}");
    let readme = std::fs::read_to_string(root.join("README.md")).expect("README.md");
    assert!(readme.lines().count() <= 200, "the README is a front door: 200 lines at most");
}

/// Anchors are made as GitHub makes them.
#[test]
fn anchors_are_githubs() {
    assert_eq!(slug(" Secrets in `[server]`"), "secrets-in-server");
    assert_eq!(slug("How much load does it hold?"), "how-much-load-does-it-hold");
    assert_eq!(slug("Measuring until decisive"), "measuring-until-decisive");
}
