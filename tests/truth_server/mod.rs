//! An independent OpenAI-compatible streaming server for wire-truth tests. It shares no code
//! with slotest's client or mock engine: it logs the instant it hands each token to the
//! connection, so tests can compare slotest's figures with the truth.

#![allow(dead_code)]

use axum::Router;
use axum::body::{Body, Bytes};
use axum::extract::State;
use axum::http::header;
use axum::response::Response;
use axum::routing::{get, post};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use tokio::sync::mpsc;

/// How the server paces each response.
#[derive(Clone, Copy, Debug)]
pub struct Pace {
    /// TTFT range (uniform), ms.
    pub ttft_ms: (f64, f64),
    /// Inter-token gap range (uniform), ms.
    pub itl_ms: (f64, f64),
    /// Hold every first token while stalled: the stall starts at this arrival index and lasts.
    pub stall: Option<(u64, Duration)>,
    /// A slow tail: each arrival, with this probability (a seeded draw), waits this many ms
    /// for its first token instead (a chosen share of requests over any bound between).
    pub tail: Option<(f64, f64)>,
}

impl Pace {
    /// A quick server: TTFT 40–70 ms, ITL 2–3 ms.
    pub fn quick() -> Pace {
        Pace { ttft_ms: (40.0, 70.0), itl_ms: (2.0, 3.0), stall: None, tail: None }
    }

    /// The same server with every TTFT multiplied by `factor`.
    pub fn slower_ttft(self, factor: f64) -> Pace {
        Pace { ttft_ms: (self.ttft_ms.0 * factor, self.ttft_ms.1 * factor), ..self }
    }
}

/// What the server saw of one request.
#[derive(Clone, Debug, Default)]
pub struct Seen {
    /// The instant the request's head was parsed, before its body was read.
    pub head: Option<Instant>,
    /// The instant its whole body had been read (the server's TTFT counts from here).
    pub received: Option<Instant>,
    /// Whitespace-separated words of its prompt (`prompt`, or every message's `content`).
    pub prompt_words: u64,
    /// Which prompt it carried ([`prompt_id`]): which request of the client's stream it was,
    /// whatever the order of arrival.
    pub prompt_hash: u64,
    /// Bytes of its body.
    pub body_len: usize,
    pub writes: Vec<Instant>,
    pub finished: Option<Instant>,
    /// The instant a write found the client gone (it closed the connection mid-stream).
    pub gone: Option<Instant>,
    pub authorization: Option<String>,
    /// The body as text (empty when `Truth::keep_bodies` is off).
    pub body: String,
    /// The text streamed back (its first token names the arrival: ` s{n}`).
    pub reply: String,
}

/// Server state shared with the test.
pub struct Truth {
    pub pace: Pace,
    pub log: Mutex<Vec<Seen>>,
    pub arrivals: AtomicU64,
    pub stall_until: Mutex<Option<Instant>>,
    /// (instant, +1 / −1) in-flight events.
    pub in_flight: Mutex<Vec<(Instant, i64)>>,
    /// Mixed into every draw: servers started with different seeds pace the n-th arrival
    /// independently (same seed: the same TTFT for the same arrival index).
    pub seed: u64,
    /// A reasoning model: the first this-many tokens of every stream are sent as
    /// `delta.reasoning_content`, the rest as answer text (0: none; set before sending).
    pub reasoning: AtomicU64,
    /// Requests served at once (0: any; set before sending). With slots the server is an
    /// engine with a batch limit: an arrival waits for a slot before its TTFT starts, and
    /// `/metrics` reports the running and waiting requests under vLLM's gauge names (its
    /// `/v1/models` says `owned_by: vllm`), so the diagnosis can be tried on a server that
    /// shares no code with slotest.
    pub slots: AtomicU64,
    /// Requests holding a slot, and requests waiting for one.
    pub running: AtomicU64,
    pub waiting: AtomicU64,
    /// Keep each request's body in the log (on by default; off for long prompts, whose bodies
    /// would hold hundreds of MB).
    pub keep_bodies: std::sync::atomic::AtomicBool,
    /// Connections accepted.
    pub connections: AtomicU64,
    /// Prefill speed, prompt words per ms (0: none; set before sending): each TTFT adds its
    /// prompt's words at this rate, as an engine's prefill grows with the prompt.
    pub prefill_words_per_ms: AtomicU64,
    /// Slow stretches (0: none; set before sending): `period << 32 | len`, the arrivals whose
    /// index modulo `period` falls in `[period / 2, period / 2 + len)` wait the slow tail's ms
    /// for their first token ([`Pace::tail`]'s): a server whose slow requests come together, as
    /// a host pause or a busy stretch puts them, instead of one by one.
    pub slow_stretch: AtomicU64,
    /// A request that offers `tools` is answered with a call of the first one, its arguments
    /// `{"city": "s{n}"}` streamed in pieces; every this-many-th arrival's arguments are cut
    /// short on purpose (0: none; set before sending). The arguments sent, by arrival, are in
    /// [`Truth::calls`].
    pub break_every: AtomicU64,
    /// The arguments each call was sent with, by arrival: (arrival, arguments).
    pub calls: Mutex<Vec<(u64, String)>>,
}

impl Truth {
    /// The calls (or documents) it streamed, and how many of them it cut short.
    pub fn sent_and_cut(&self) -> (usize, usize) {
        let sent = self.calls.lock().expect("lock");
        let cut = sent.iter().filter(|(_, s)| serde_json::from_str::<serde_json::Value>(s).is_err()).count();
        (sent.len(), cut)
    }

    /// Waits for a slot when the server has a limit; the instant it got one.
    async fn admit(&self) -> (Instant, bool) {
        let slots = self.slots.load(Ordering::SeqCst);
        if slots == 0 {
            return (Instant::now(), false);
        }
        // Counted as waiting until admitted, or until the client gives up (the future dropped).
        struct Waiting<'a>(&'a AtomicU64);
        impl Drop for Waiting<'_> {
            fn drop(&mut self) {
                self.0.fetch_sub(1, Ordering::SeqCst);
            }
        }
        self.waiting.fetch_add(1, Ordering::SeqCst);
        let _waiting = Waiting(&self.waiting);
        loop {
            let running = self.running.load(Ordering::SeqCst);
            if running < slots
                && self
                    .running
                    .compare_exchange(running, running + 1, Ordering::SeqCst, Ordering::SeqCst)
                    .is_ok()
            {
                return (Instant::now(), true);
            }
            tokio::time::sleep(Duration::from_millis(1)).await;
        }
    }

    /// The `/metrics` page of a server with slots; `None` without.
    fn metrics(&self) -> Option<String> {
        (self.slots.load(Ordering::SeqCst) > 0).then(|| {
            let (r, w) = (self.running.load(Ordering::SeqCst), self.waiting.load(Ordering::SeqCst));
            format!(
                "# TYPE vllm:num_requests_running gauge\nvllm:num_requests_running{{model_name=\"truth-model\"}} {r}\n\
                 # TYPE vllm:num_requests_waiting gauge\nvllm:num_requests_waiting{{model_name=\"truth-model\"}} {w}\n"
            )
        })
    }
}

/// A cheap deterministic generator (xorshift) so the server needs no RNG crate.
fn uniform(seed: u64, range: (f64, f64)) -> f64 {
    let mut x = seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1;
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    let u = (x >> 11) as f64 / (1u64 << 53) as f64;
    range.0 + u * (range.1 - range.0)
}

/// Whether arrival `n` falls in a slow stretch ([`Truth::slow_stretch`]).
fn in_stretch(stretch: u64, n: u64) -> bool {
    let (period, len) = (stretch >> 32, stretch & 0xFFFF_FFFF);
    period > 0 && (period / 2..period / 2 + len).contains(&(n % period))
}

/// Whether arrival `n` of a server seeded `seed` is in its slow tail of `share`.
pub fn is_slow(seed: u64, n: u64, share: f64) -> bool {
    uniform((n * 104_729 + 17) ^ (seed << 40) ^ 0x5EED, (0.0, 1.0)) < share
}

/// Starts the server on an ephemeral loopback port on the current runtime.
pub async fn start(pace: Pace) -> (String, Arc<Truth>) {
    start_seeded(pace, 0).await
}

/// [`start`] with draws seeded by `seed`: the TTFT of arrival n no longer matches another
/// server's, as on two real engines (or two runs of one).
pub async fn start_seeded(pace: Pace, seed: u64) -> (String, Arc<Truth>) {
    let truth = Arc::new(Truth {
        seed,
        pace,
        log: Mutex::new(Vec::new()),
        arrivals: AtomicU64::new(0),
        stall_until: Mutex::new(None),
        in_flight: Mutex::new(Vec::new()),
        reasoning: AtomicU64::new(0),
        slots: AtomicU64::new(0),
        running: AtomicU64::new(0),
        waiting: AtomicU64::new(0),
        keep_bodies: std::sync::atomic::AtomicBool::new(true),
        connections: AtomicU64::new(0),
        prefill_words_per_ms: AtomicU64::new(0),
        slow_stretch: AtomicU64::new(0),
        break_every: AtomicU64::new(0),
        calls: Mutex::new(Vec::new()),
    });
    let app =
        Router::new()
            .route("/v1/completions", post(complete))
            .route("/v1/chat/completions", post(complete))
            .route(
                "/v1/models",
                get(|State(t): State<Arc<Truth>>| async move {
                    let owner = if t.slots.load(Ordering::SeqCst) > 0 { r#","owned_by":"vllm""# } else { "" };
                    format!(r#"{{"object":"list","data":[{{"id":"truth-model","object":"model"{owner}}}]}}"#)
                }),
            )
            .route(
                "/metrics",
                get(|State(t): State<Arc<Truth>>| async move {
                    t.metrics().ok_or(axum::http::StatusCode::NOT_FOUND)
                }),
            )
            .with_state(Arc::clone(&truth));
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.expect("bind loopback");
    let addr = listener.local_addr().expect("addr");
    let counted = Arc::clone(&truth);
    tokio::spawn(async move {
        loop {
            let Ok((stream, _)) = listener.accept().await else {
                tokio::time::sleep(Duration::from_millis(5)).await;
                continue;
            };
            let _ = stream.set_nodelay(true);
            counted.connections.fetch_add(1, Ordering::SeqCst);
            let service = hyper_util::service::TowerToHyperService::new(app.clone());
            tokio::spawn(async move {
                // Reads of 8 KiB at most: hyper calls the handler (which stamps `head`) only
                // after its first read of a request, and with its default ~400 KiB buffer that
                // read took most of a long prompt's body with it (0.7 ms for 408 KiB here).
                let _ = hyper::server::conn::http1::Builder::new()
                    .max_buf_size(8192)
                    .serve_connection(hyper_util::rt::TokioIo::new(stream), service)
                    .await;
            });
        }
    });
    (format!("http://{addr}"), truth)
}

/// [`start`] on a runtime of its own (`workers` threads): the server's work (reading and parsing
/// long bodies) never runs on the client's threads. The server lives as long as the runtime.
pub fn start_apart(pace: Pace, workers: usize) -> (String, Arc<Truth>, tokio::runtime::Runtime) {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(workers)
        .thread_name("truth-server")
        .enable_all()
        .build()
        .expect("server runtime");
    let (url, truth) = rt.block_on(start(pace));
    (url, truth, rt)
}

struct Done(Arc<Truth>, usize, bool);

impl Drop for Done {
    fn drop(&mut self) {
        if self.2 {
            self.0.running.fetch_sub(1, Ordering::SeqCst);
        }
        let now = Instant::now();
        self.0.in_flight.lock().expect("lock").push((now, -1));
        self.0.log.lock().expect("lock")[self.1].finished = Some(now);
    }
}

/// The fields of a request body the server reads, borrowed from it: a 128K-token prompt is
/// neither copied nor escaped again (long prompts must not make the server the busy side).
#[derive(serde::Deserialize)]
struct Request<'a> {
    #[serde(borrow, default)]
    prompt: Option<std::borrow::Cow<'a, str>>,
    #[serde(borrow, default)]
    messages: Option<Vec<Message<'a>>>,
    max_tokens: Option<u64>,
    stream: Option<bool>,
    response_format: Option<serde::de::IgnoredAny>,
    #[serde(default)]
    tools: Option<Vec<serde_json::Value>>,
}

#[derive(serde::Deserialize)]
struct Message<'a> {
    #[serde(borrow, default)]
    content: Content<'a>,
}

/// A message's content: text, or parts (text and images).
#[derive(serde::Deserialize)]
#[serde(untagged)]
enum Content<'a> {
    Text(#[serde(borrow)] std::borrow::Cow<'a, str>),
    Parts(Vec<Part>),
}

impl Default for Content<'_> {
    fn default() -> Self {
        Content::Text(std::borrow::Cow::Borrowed(""))
    }
}

#[derive(serde::Deserialize)]
struct Part {
    #[serde(default)]
    text: Option<String>,
    #[serde(default)]
    image_url: Option<ImageUrl>,
}

#[derive(serde::Deserialize)]
struct ImageUrl {
    url: String,
}

/// Tokens of an image data URL as Qwen2-VL's processor counts them, written here apart from
/// slotest's mock: each side rounded to a multiple of 28, the area kept within 56² and
/// 28² × 16384 pixels, one token a 28×28 patch. `None` where it is not a JPEG or PNG.
fn image_tokens(url: &str) -> Option<u64> {
    use base64::Engine;
    let b64 = url.split_once(";base64,")?.1;
    let bytes = base64::engine::general_purpose::STANDARD.decode(b64).ok()?;
    let (w, h) = if bytes.starts_with(b"\x89PNG") {
        let info = png::Decoder::new(std::io::Cursor::new(&bytes)).read_info().ok()?.info().clone();
        (f64::from(info.width), f64::from(info.height))
    } else {
        let mut d = zune_jpeg::JpegDecoder::new(std::io::Cursor::new(&bytes));
        d.decode_headers().ok()?;
        let (w, h) = d.dimensions()?;
        (w as f64, h as f64)
    };
    let (min, max, f) = (56.0 * 56.0, 28.0 * 28.0 * 16384.0, 28.0);
    let (mut hb, mut wb) = (((h / f).round()).max(1.0) * f, ((w / f).round()).max(1.0) * f);
    if hb * wb > max {
        let beta = (h * w / max).sqrt();
        hb = ((h / beta / f).floor()).max(1.0) * f;
        wb = ((w / beta / f).floor()).max(1.0) * f;
    } else if hb * wb < min {
        let beta = (min / (h * w)).sqrt();
        hb = (h * beta / f).ceil() * f;
        wb = (w * beta / f).ceil() * f;
    }
    Some((hb / f * (wb / f)) as u64)
}

impl Request<'_> {
    /// The texts of the prompt: `prompt`, or the `content` of every message (its text parts).
    fn texts(&self) -> Vec<&str> {
        match &self.messages {
            Some(messages) => messages
                .iter()
                .flat_map(|m| match &m.content {
                    Content::Text(t) => vec![t.as_ref()],
                    Content::Parts(parts) => parts.iter().filter_map(|p| p.text.as_deref()).collect(),
                })
                .collect(),
            None => self.prompt.as_deref().into_iter().collect(),
        }
    }

    /// The tokens of the messages' images (`None`: there are none).
    fn image_tokens(&self) -> Option<u64> {
        let urls: Vec<&str> = self
            .messages
            .iter()
            .flatten()
            .filter_map(|m| match &m.content {
                Content::Parts(parts) => {
                    Some(parts.iter().filter_map(|p| Some(p.image_url.as_ref()?.url.as_str())))
                }
                Content::Text(_) => None,
            })
            .flatten()
            .collect();
        (!urls.is_empty()).then(|| urls.iter().map(|u| image_tokens(u).unwrap_or(0)).sum())
    }

    /// Words of the prompt (single spaces between words, as slotest's prompts have: a count
    /// of bytes, cheap at 128K tokens).
    fn words(&self) -> u64 {
        self.texts()
            .iter()
            .map(|t| {
                if t.trim().is_empty() {
                    0
                } else {
                    t.trim().bytes().filter(|&b| b == b' ').count() as u64 + 1
                }
            })
            .sum()
    }
}

/// What the server reads of a request body.
struct Read {
    max_tokens: u64,
    stream: Option<bool>,
    /// Asked for structured output (`response_format`).
    structured: bool,
    /// The chat API's `messages`.
    chat: bool,
    /// The first tool offered (`tools[0].function.name`), if any.
    tool: Option<String>,
    /// `usage.prompt_tokens`: 7, or — with images — the prompt's words and the images' tokens.
    prompt_tokens: u64,
    words: u64,
    hash: u64,
}

impl Read {
    fn of(body: &[u8]) -> Read {
        let v: Request<'_> = serde_json::from_slice(body).unwrap_or(Request {
            prompt: None,
            messages: None,
            max_tokens: None,
            stream: None,
            response_format: None,
            tools: None,
        });
        Read {
            max_tokens: v.max_tokens.unwrap_or(16),
            stream: v.stream,
            structured: v.response_format.is_some(),
            chat: v.messages.is_some(),
            tool: v.tools.as_ref().and_then(|t| t.first()?["function"]["name"].as_str().map(str::to_string)),
            prompt_tokens: v.image_tokens().map_or(7, |t| v.words() + t),
            words: v.words(),
            hash: prompt_id(&v.texts()),
        }
    }
}

/// Which prompt a request carried, from its texts (`prompt`, or every message's `content`):
/// FNV-1a over their length, their first 256 bytes and their last 256 — random words from the
/// client's seed, which no two prompts of a run share at both ends (prompts of a prefix tree
/// share their beginnings) — so it costs the same at 128K tokens as at 16.
pub fn prompt_id(texts: &[&str]) -> u64 {
    let len: usize = texts.iter().map(|t| t.len()).sum();
    let head: Vec<u8> = texts.iter().flat_map(|t| t.bytes()).take(256).collect();
    let mut tail: Vec<u8> = texts.iter().rev().flat_map(|t| t.bytes().rev()).take(256).collect();
    tail.reverse();
    fnv1a([len.to_string().as_str(), &String::from_utf8_lossy(&head), &String::from_utf8_lossy(&tail)])
}

/// FNV-1a over texts, in order.
pub fn fnv1a<'a>(texts: impl IntoIterator<Item = &'a str>) -> u64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for b in texts.into_iter().flat_map(str::bytes) {
        h ^= u64::from(b);
        h = h.wrapping_mul(0x0000_0100_0000_01b3);
    }
    h
}

async fn complete(State(t): State<Arc<Truth>>, request: axum::extract::Request) -> Response {
    // The head is parsed: stamped before the body is read, so a long prompt's upload lies
    // inside the server's view of TTFT as it lies inside the client's.
    let head = Instant::now();
    let (parts, body) = request.into_parts();
    let body = axum::body::to_bytes(body, usize::MAX).await.unwrap_or_default();
    let received = Instant::now();
    let n = t.arrivals.fetch_add(1, Ordering::SeqCst);
    t.in_flight.lock().expect("lock").push((received, 1));
    // A long body is read on a blocking thread: parsed on a worker, a 128K-token prompt held
    // up the heads of the requests behind it, and so their `head` instants.
    let v = if body.len() < 1 << 16 {
        Read::of(&body)
    } else {
        let whole = body.clone();
        tokio::task::spawn_blocking(move || Read::of(&whole)).await.expect("read")
    };
    let max_tokens = v.max_tokens;
    let prompt_tokens = v.prompt_tokens;
    let keep = t.keep_bodies.load(Ordering::SeqCst);
    // Read before the log's lock is taken: other requests' handlers wait on it.
    let seen = Seen {
        head: Some(head),
        received: Some(received),
        prompt_words: v.words,
        prompt_hash: v.hash,
        body_len: body.len(),
        authorization: parts.headers.get("authorization").and_then(|h| h.to_str().ok()).map(str::to_string),
        body: if keep { String::from_utf8_lossy(&body).into_owned() } else { String::new() },
        ..Seen::default()
    };
    let slot = {
        let mut log = t.log.lock().expect("lock");
        log.push(seen);
        log.len() - 1
    };
    if let Some((_, len)) = t.pace.stall.filter(|(at, _)| *at == n) {
        *t.stall_until.lock().expect("lock") = Some(received + len);
    }
    // A server with slots paces from the instant a slot was free.
    let (received, held) = t.admit().await;
    if v.stream == Some(false) {
        // A whole response: the same pacing, then one JSON body; `finished` is logged as the
        // body is handed over.
        let _done = Done(Arc::clone(&t), slot, held);
        generate(&t, (n, slot, received), max_tokens, |_, _| true).await;
        // Asked for structured output: a JSON object as the text.
        let text: String = if v.structured {
            format!("{{\"n\": {max_tokens}}}")
        } else {
            (0..max_tokens).map(|i| format!(" t{i}")).collect()
        };
        let choice = if v.chat {
            serde_json::json!({ "index": 0, "message": { "role": "assistant", "content": text }, "finish_reason": "length" })
        } else {
            serde_json::json!({ "index": 0, "text": text, "finish_reason": "length" })
        };
        let body = serde_json::json!({ "choices": [choice], "usage": { "prompt_tokens": v.prompt_tokens, "completion_tokens": max_tokens } });
        return Response::builder()
            .header(header::CONTENT_TYPE, "application/json")
            .body(Body::from(body.to_string()))
            .expect("response");
    }
    if let Some(tool) = v.tool.clone() {
        return tool_call(t, (n, slot, received, held), max_tokens, Some(tool));
    }
    if v.structured {
        return tool_call(t, (n, slot, received, held), max_tokens, None);
    }
    // Streamed text: the first token names the arrival, so every reply is its own.
    let token = move |i: u64| if i == 0 { format!(" s{n}") } else { format!(" t{i}") };
    let reasoning = t.reasoning.load(Ordering::SeqCst);
    t.log.lock().expect("lock")[slot].reply = (0..max_tokens).map(token).collect();
    let (tx, rx) = mpsc::unbounded_channel::<Bytes>();
    let truth = Arc::clone(&t);
    tokio::spawn(async move {
        let _done = Done(Arc::clone(&truth), slot, held);
        let sent = generate(&truth, (n, slot, received), max_tokens, |i, last| {
            let finish = if last { "\"length\"" } else { "null" };
            let chunk = if i < reasoning {
                format!(
                    "data: {{\"choices\":[{{\"index\":0,\"delta\":{{\"reasoning_content\":\"{}\"}},\"finish_reason\":{finish}}}]}}\n\n",
                    token(i)
                )
            } else {
                format!(
                    "data: {{\"choices\":[{{\"index\":0,\"text\":\"{}\",\"finish_reason\":{finish}}}]}}\n\n",
                    token(i)
                )
            };
            tx.send(Bytes::from(chunk)).is_ok()
        })
        .await;
        if !sent {
            truth.log.lock().expect("lock")[slot].gone = Some(Instant::now());
        }
        if sent {
            let _ = tx.send(usage_tail(prompt_tokens, max_tokens));
        }
    });
    sse(rx)
}

/// The last events of a stream: the usage, then `[DONE]`.
fn usage_tail(prompt_tokens: u64, max_tokens: u64) -> Bytes {
    Bytes::from(format!(
        "data: {{\"choices\":[],\"usage\":{{\"prompt_tokens\":{prompt_tokens},\"completion_tokens\":{max_tokens}}}}}\n\ndata: [DONE]\n\n"
    ))
}

/// A streamed response of what `rx` hands over.
fn sse(rx: mpsc::UnboundedReceiver<Bytes>) -> Response {
    let stream = futures_util::stream::unfold(rx, |mut rx| async move {
        rx.recv().await.map(|b| (Ok::<_, std::io::Error>(b), rx))
    });
    Response::builder()
        .header(header::CONTENT_TYPE, "text/event-stream")
        .body(Body::from_stream(stream))
        .expect("response")
}

/// A streamed call of `tool`: its first piece the id and name, the arguments in the pieces after
/// it (one a token), the last with `finish_reason: "tool_calls"`. Without a tool, the same
/// document `{"city": "s{n}"}` as the answer's text (asked for structured output), a piece a
/// token. Either is cut short on every `break_every`-th arrival.
fn tool_call(
    t: Arc<Truth>,
    (n, slot, received, held): (u64, usize, Instant, bool),
    max_tokens: u64,
    tool: Option<String>,
) -> Response {
    let every = t.break_every.load(Ordering::SeqCst);
    let mut args = format!("{{\"city\": \"s{n}\"}}");
    if every > 0 && n % every == 0 {
        args.truncate(args.len() - 2); // cut short: not JSON
    }
    t.calls.lock().expect("lock").push((n, args.clone()));
    let chars: Vec<char> = args.chars().collect();
    let pieces = max_tokens.saturating_sub(1).max(1) as usize;
    let per = chars.len().div_ceil(pieces);
    let piece = move |i: u64| -> String {
        let at = (i as usize - 1) * per;
        chars.iter().skip(at).take(per).collect()
    };
    let (tx, rx) = mpsc::unbounded_channel::<Bytes>();
    tokio::spawn(async move {
        let _done = Done(Arc::clone(&t), slot, held);
        let sent = generate(&t, (n, slot, received), max_tokens, |i, last| {
            let Some(tool) = &tool else {
                let text = if i == 0 { String::new() } else { piece(i) };
                let finish = if last { serde_json::json!("length") } else { serde_json::Value::Null };
                let chunk = serde_json::json!({ "choices": [{ "index": 0, "text": text, "finish_reason": finish }] });
                return tx.send(Bytes::from(format!("data: {chunk}\n\n"))).is_ok();
            };
            let finish = if last { "\"tool_calls\"" } else { "null" };
            let call = if i == 0 {
                serde_json::json!({ "index": 0, "id": format!("call_{n}"), "type": "function",
                    "function": { "name": tool, "arguments": "" } })
            } else {
                serde_json::json!({ "index": 0, "function": { "arguments": piece(i) } })
            };
            let chunk = serde_json::json!({ "choices": [{ "index": 0, "delta": { "tool_calls": [call] }, "finish_reason": null }] });
            let mut text = format!("data: {chunk}\n\n");
            if last {
                text = text.replace("\"finish_reason\":null", &format!("\"finish_reason\":{finish}"));
            }
            tx.send(Bytes::from(text)).is_ok()
        })
        .await;
        if sent {
            let _ = tx.send(usage_tail(7, max_tokens));
        }
    });
    sse(rx)
}

/// Paces the tokens of arrival `n` (logged in `slot`): TTFT after `received`, then the gaps;
/// `emit(i, last)` hands token i over (false: the client is gone). True when all were handed.
async fn generate(
    truth: &Truth,
    (n, slot, received): (u64, usize, Instant),
    max_tokens: u64,
    mut emit: impl FnMut(u64, bool) -> bool,
) -> bool {
    let mut ttft_ms = uniform((n * 2 + 1) ^ (truth.seed << 40), truth.pace.ttft_ms);
    if let Some((share, slow_ms)) = truth.pace.tail
        && (is_slow(truth.seed, n, share) || in_stretch(truth.slow_stretch.load(Ordering::SeqCst), n))
    {
        ttft_ms = slow_ms;
    }
    let rate = truth.prefill_words_per_ms.load(Ordering::SeqCst);
    if rate > 0 {
        ttft_ms += truth.log.lock().expect("lock")[slot].prompt_words as f64 / rate as f64;
    }
    let ttft = Duration::from_secs_f64(ttft_ms / 1e3);
    let mut next = received + ttft;
    let stall = *truth.stall_until.lock().expect("lock");
    if let Some(until) = stall.filter(|u| *u > received) {
        next = next.max(until);
    }
    for i in 0..max_tokens {
        tokio::time::sleep_until(next.into()).await;
        truth.log.lock().expect("lock")[slot].writes.push(Instant::now());
        if !emit(i, i + 1 == max_tokens) {
            return false;
        }
        let gap = uniform((n * 7919 + i * 31 + 3) ^ (truth.seed << 40), truth.pace.itl_ms);
        next = Instant::now().max(next) + Duration::from_secs_f64(gap / 1e3);
    }
    true
}

/// numpy-linear percentile of unsorted data.
pub fn percentile(v: &[f64], q: f64) -> f64 {
    let mut s = v.to_vec();
    s.sort_by(f64::total_cmp);
    slotest::internals::percentile_sorted(&s, q).expect("non-empty")
}

pub fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1e3
}
