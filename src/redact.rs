//! One redaction rule, applied at every exit (#59 item 3).
//!
//! Secrets are known in two ways. Where they sit is known to the stage that holds them: a
//! `[server]` var marked secret (or taken from `${ENV}`) is shown as [`MASK`] in the command a
//! report records ([`crate::plan::Server::shown`]), and a URL's password as [`MASK`] ([`url`]).
//! What text they may reach is not: a server's error body, a log line, a reqwest error that
//! quotes its URL. So the runner also [`register`]s every secret value of the plan once, and
//! every exit — report files and baselines ([`Scrub`]), the log, the console — passes its text
//! through [`scrub`], which replaces any registered value. Pure text, no I/O: a side module
//! every stage may use.

use std::borrow::Cow;
use std::sync::RwLock;

/// What a secret reads as wherever it would have been written.
pub const MASK: &str = "***";

/// A value shorter than this is masked where it is known to sit, never searched for in free
/// text: `8` or `true` would mask innocent figures.
pub const MIN_SCRUBBED: usize = 4;

static SECRETS: RwLock<Vec<String>> = RwLock::new(Vec::new());

/// Keeps `value` out of every report, log line and console line from now on.
pub fn register(value: &str) {
    if value.len() < MIN_SCRUBBED {
        return;
    }
    // As results.json and report.html's data spell it too: a `"` or `\` is escaped there.
    let quoted = serde_json::to_string(value).unwrap_or_default();
    let escaped = quoted.get(1..quoted.len().saturating_sub(1)).unwrap_or_default();
    let mut all = SECRETS.write().unwrap_or_else(|p| p.into_inner());
    for form in [value, escaped] {
        if !form.is_empty() && !all.iter().any(|s| s == form) {
            all.push(form.to_string());
        }
    }
    // Longest first: a secret that holds another is masked whole.
    all.sort_by_key(|s| std::cmp::Reverse(s.len()));
}

/// `text` with every registered secret, and every URL's password, replaced by [`MASK`].
pub fn scrub(text: &str) -> Cow<'_, str> {
    let secrets = SECRETS.read().unwrap_or_else(|p| p.into_inner());
    let masked = match secrets.iter().any(|s| text.contains(s.as_str())) {
        false => Cow::Borrowed(text),
        true => Cow::Owned(secrets.iter().fold(text.to_string(), |t, s| t.replace(s.as_str(), MASK))),
    };
    match url(&masked) {
        Cow::Borrowed(_) => masked,
        Cow::Owned(o) => Cow::Owned(o),
    }
}

/// `text` with the password of every `scheme://user:password@host` in it replaced by [`MASK`].
pub fn url(text: &str) -> Cow<'_, str> {
    let mut out = String::new();
    let mut rest = text;
    let mut done = 0;
    while let Some(i) = rest.find("://") {
        let after = &rest[i + 3..];
        // The authority ends at the path, the query, whitespace or a quote.
        let end =
            after.find(|c: char| matches!(c, '/' | '?' | '#' | '"' | '\'' | '<' | '>') || c.is_whitespace());
        let authority = &after[..end.unwrap_or(after.len())];
        if let Some(at) = authority.rfind('@')
            && let Some(colon) = authority[..at].find(':')
            && authority[colon + 1..at] != *MASK
        {
            let start = text.len() - after.len();
            out.push_str(&text[done..start + colon + 1]);
            out.push_str(MASK);
            done = start + at;
        }
        rest = &after[authority.len()..];
    }
    if done == 0 {
        return Cow::Borrowed(text);
    }
    out.push_str(&text[done..]);
    Cow::Owned(out)
}

/// The password in a URL's userinfo, to [`register`].
pub fn url_password(text: &str) -> Option<&str> {
    let after = &text[text.find("://")? + 3..];
    let authority = &after[..after.find(['/', '?', '#']).unwrap_or(after.len())];
    let userinfo = &authority[..authority.rfind('@')?];
    userinfo.split_once(':').map(|(_, p)| p).filter(|p| !p.is_empty())
}

/// Whether a name (a var, a flag, an environment variable) names a secret: one of its words
/// (split at `-` and `_`) is `key`, `apikey`, `token`, `secret`, `password` or `passwd`.
/// `--max-num-batched-tokens` is not one: `tokens` is a count.
pub fn secret_name(name: &str) -> bool {
    name.trim_start_matches('-').split(['-', '_']).any(|w| {
        matches!(
            w.to_ascii_lowercase().as_str(),
            "key" | "apikey" | "token" | "secret" | "password" | "passwd"
        )
    })
}

/// The values a command line gives to its secret flags (`--api-key V`, `--hf-token=V`).
pub fn flag_values(command: &str) -> Vec<String> {
    let words: Vec<&str> = command.split_whitespace().collect();
    let mut out = Vec::new();
    for (i, w) in words.iter().enumerate() {
        if !w.starts_with('-') {
            continue;
        }
        match w.split_once('=') {
            Some((flag, value)) if secret_name(flag) && !value.is_empty() => out.push(value.to_string()),
            None if secret_name(w) => {
                out.extend(words.get(i + 1).filter(|v| !v.starts_with('-')).map(|v| v.to_string()))
            }
            _ => {}
        }
    }
    out.retain(|v| v != MASK);
    out
}

/// `command` with the value of each secret flag ([`flag_values`]) masked.
pub fn flags(command: &str) -> Cow<'_, str> {
    let values = flag_values(command);
    if values.is_empty() {
        return Cow::Borrowed(command);
    }
    let words: Vec<&str> = command.split(' ').collect();
    let mut out: Vec<String> = Vec::with_capacity(words.len());
    let mut mask_next = false;
    for w in words {
        let masked = match w.split_once('=') {
            _ if mask_next && values.iter().any(|v| v == w) => MASK.to_string(),
            Some((flag, value)) if w.starts_with('-') && secret_name(flag) && !value.is_empty() => {
                format!("{flag}={MASK}")
            }
            _ => w.to_string(),
        };
        mask_next = w.starts_with('-') && !w.contains('=') && secret_name(w);
        out.push(masked);
    }
    Cow::Owned(out.join(" "))
}

/// A line for a terminal: [`scrub`]bed, and every control character but a newline and a tab
/// removed, so a server's text can neither retitle the terminal, write its clipboard (OSC 52)
/// nor rewrite lines already printed.
pub fn console(text: &str) -> Cow<'_, str> {
    let bare = |c: char| c.is_control() && c != '\n' && c != '\t';
    match scrub(text) {
        t if !t.contains(bare) => t,
        t => Cow::Owned(t.chars().filter(|c| !bare(*c)).collect()),
    }
}

/// Text for a Markdown page (summary.md, a CI job summary) as data: outside its code spans
/// (which Markdown shows as they are), `<`, `>` and `&` become entities and a backtick that
/// opens no span is escaped, so a server's `<img onerror=…>` is shown, never run; control
/// characters and line breaks go, so it stays one line of a list or a table.
pub fn markdown(text: &str) -> String {
    let text = console(text);
    let mut out = String::with_capacity(text.len());
    let mut rest: &str = &text;
    while let Some(c) = rest.chars().next() {
        if c == '`' {
            let run = rest.len() - rest.trim_start_matches('`').len();
            let body = &rest[run..];
            // A span closes at the next run of exactly as many backticks.
            let close = (0..body.len()).filter(|&i| body.is_char_boundary(i)).find(|&i| {
                let r = body[i..].len() - body[i..].trim_start_matches('`').len();
                r == run && (i == 0 || !body[..i].ends_with('`'))
            });
            match close {
                Some(i) => {
                    out.push_str(&rest[..run + i + run]);
                    rest = &rest[run + i + run..];
                }
                None => {
                    out.push_str(&"\\`".repeat(run));
                    rest = body;
                }
            }
            continue;
        }
        match c {
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '&' => out.push_str("&amp;"),
            '\n' | '\t' => out.push(' '),
            c => out.push(c),
        }
        rest = &rest[c.len_utf8()..];
    }
    out
}

/// A writer that masks every registered secret in what passes through it, even one split
/// across two writes: it holds back the bytes a secret could still be starting in.
pub struct Scrub<W: std::io::Write> {
    inner: W,
    secrets: Vec<Vec<u8>>,
    pending: Vec<u8>,
}

impl<W: std::io::Write> Scrub<W> {
    /// Wraps `inner`, with the secrets registered now.
    pub fn new(inner: W) -> Self {
        let secrets = SECRETS
            .read()
            .unwrap_or_else(|p| p.into_inner())
            .iter()
            .map(|s| s.clone().into_bytes())
            .collect();
        Scrub { inner, secrets, pending: Vec::new() }
    }

    /// Writes out what can no longer be the start of a secret; everything when `all`.
    fn drain(&mut self, all: bool) -> std::io::Result<()> {
        let longest = self.secrets.iter().map(Vec::len).max().unwrap_or(0);
        let mut from = 0;
        loop {
            let first = self
                .secrets
                .iter()
                .filter_map(|s| memchr::memmem::find(&self.pending[from..], s).map(|i| (from + i, s.len())))
                .min_by_key(|&(i, len)| (i, std::cmp::Reverse(len)));
            match first {
                Some((i, len)) => {
                    self.inner.write_all(&self.pending[from..i])?;
                    self.inner.write_all(MASK.as_bytes())?;
                    from = i + len;
                }
                None => break,
            }
        }
        // No whole secret lies in pending[from..]: keep its last bytes, where one may begin.
        let keep = if all { 0 } else { longest.saturating_sub(1).min(self.pending.len() - from) };
        let upto = self.pending.len() - keep;
        self.inner.write_all(&self.pending[from..upto])?;
        self.pending.drain(..upto);
        Ok(())
    }
}

impl<W: std::io::Write> std::io::Write for Scrub<W> {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        if self.secrets.is_empty() {
            return self.inner.write(buf);
        }
        self.pending.extend_from_slice(buf);
        if self.pending.len() >= 1 << 16 {
            self.drain(false)?;
        }
        Ok(buf.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        self.drain(true)?;
        self.inner.flush()
    }
}

impl<W: std::io::Write> Drop for Scrub<W> {
    fn drop(&mut self) {
        let _ = self.drain(true);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;

    #[test]
    fn a_urls_password_is_masked_wherever_it_is() {
        assert_eq!(
            url("see http://user:pa55@host:8000/v1 and https://h/x"),
            "see http://user:***@host:8000/v1 and https://h/x"
        );
        assert_eq!(url("\"http://a:b@h\",\"http://c:d@i/\""), "\"http://a:***@h\",\"http://c:***@i/\"");
        assert_eq!(url("http://user@host/ http://h:80/"), "http://user@host/ http://h:80/");
        assert_eq!(url_password("http://user:pa55@host:8000/v1"), Some("pa55"));
        assert_eq!(url_password("http://host:8000/a@b"), None);
    }

    #[test]
    fn key_flags_are_masked_and_counts_are_not() {
        let cmd = "vllm serve m --api-key sk-1 --max-num-batched-tokens 8192 --hf-token=hf_x -t 4";
        assert_eq!(
            flags(cmd),
            "vllm serve m --api-key *** --max-num-batched-tokens 8192 --hf-token=*** -t 4"
        );
        assert_eq!(flag_values(cmd), ["sk-1", "hf_x"]);
        assert!(secret_name("api_key") && secret_name("HF_TOKEN") && !secret_name("max_num_seqs"));
        assert_eq!(flags("llama-server -m x --port 9"), "llama-server -m x --port 9");
    }

    #[test]
    fn server_text_is_data_on_a_terminal_and_in_markdown() {
        assert_eq!(
            console("ok\x1b]0;owned\x07 \x1b]52;c;ZXZpbA==\x07done\n"),
            "ok]0;owned ]52;c;ZXZpbA==done\n"
        );
        assert_eq!(
            markdown("SLO `ttft.p95 < 1s` breached: http_500: <img src=x onerror=alert(1)> & more"),
            "SLO `ttft.p95 < 1s` breached: http_500: &lt;img src=x onerror=alert(1)&gt; &amp; more"
        );
        assert_eq!(markdown("a ` b <i>\nc"), "a \\` b &lt;i&gt; c");
        assert_eq!(markdown("``a ` <b>`` <c>"), "``a ` <b>`` &lt;c&gt;");
    }

    #[test]
    fn a_registered_secret_is_masked_even_split_across_writes() {
        register("sk-redact-unit-0123456789");
        assert_eq!(
            scrub("key sk-redact-unit-0123456789 twice sk-redact-unit-0123456789"),
            "key *** twice ***"
        );
        let text = b"{\"command\":\"vllm serve --api-key sk-redact-unit-0123456789\",\"n\":8}";
        for cut in 0..text.len() {
            let mut out = Vec::new();
            {
                let mut w = Scrub::new(&mut out);
                w.write_all(&text[..cut]).expect("write");
                w.write_all(&text[cut..]).expect("write");
                w.flush().expect("flush");
            }
            assert_eq!(
                String::from_utf8(out).expect("utf8"),
                "{\"command\":\"vllm serve --api-key ***\",\"n\":8}"
            );
        }
        register("8");
        assert_eq!(scrub("8 users"), "8 users", "too short to search for");
        register("pa\"ss\\word-9");
        let json = serde_json::to_string("key pa\"ss\\word-9").expect("json");
        assert_eq!(scrub(&json), "\"key ***\"", "as JSON spells it");
    }
}
