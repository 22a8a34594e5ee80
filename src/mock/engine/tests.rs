//! The simulator's behaviour: batching, prefix cache, KV pressure.

use super::*;

fn profile(max_num_seqs: usize, per_prefill_us: u64) -> Profile {
    Profile {
        name: "test",
        model: "test",
        step_base: Duration::from_millis(2),
        per_seq: Duration::from_micros(100),
        per_prefill_token: Duration::from_micros(per_prefill_us),
        max_num_seqs,
        kv_capacity_tokens: 1_000_000,
        max_batched_tokens: 4096,
        block_size: 16,
        prefix_cache: true,
        jitter: 0.0,
        dispersion: crate::mock::dispersion::QUIET,
        tokenizer: 1,
        chat_template: 0,
        drift: 0.0,
        thinking: Default::default(),
        keep_cancelled: false,
        models: Vec::new(),
        cold_start_ms: 0,
        slow_decode: 1.0,
        vision: crate::mock::images::VISION_FAST,
        spec: crate::mock::spec::OFF,
        model_size: crate::mock::profile::PROFILES[0].model_size,
    }
}

struct Outcome {
    ttft: Vec<Duration>,
    tokens: u64,
    elapsed: Duration,
    cached: Vec<u64>,
    /// Streams whose tokens came numbered 1, 2, 3, … to their end.
    in_order: usize,
}

/// Submits `prompts` at once and follows every stream to its end.
fn run_batch(tx: &mpsc::UnboundedSender<Admission>, prompts: &[Vec<u64>], max_tokens: u64) -> Outcome {
    follow(submit(tx, prompts, max_tokens))
}

/// Submits `prompts` at once: when they were sent, and each one's stream.
fn submit(
    tx: &mpsc::UnboundedSender<Admission>,
    prompts: &[Vec<u64>],
    max_tokens: u64,
) -> (Instant, Vec<mpsc::UnboundedReceiver<Emit>>) {
    let start = Instant::now();
    let rxs = prompts
        .iter()
        .map(|p| {
            let (t, r) = mpsc::unbounded_channel();
            tx.send(Admission { prompt: p.clone(), max_tokens, tx: t, images: Vec::new(), guided: false })
                .expect("engine alive");
            r
        })
        .collect();
    (start, rxs)
}

/// Follows every stream to its end.
fn follow((start, rxs): (Instant, Vec<mpsc::UnboundedReceiver<Emit>>)) -> Outcome {
    let mut out =
        Outcome { ttft: Vec::new(), tokens: 0, elapsed: Duration::ZERO, cached: Vec::new(), in_order: 0 };
    let mut open: Vec<_> = rxs.into_iter().map(Some).collect();
    let mut next = vec![1u64; open.len()];
    // Poll every stream so each first token is timed when it is emitted, not when read.
    while open.iter().any(Option::is_some) {
        for (slot, next) in open.iter_mut().zip(&mut next) {
            let Some(rx) = slot else { continue };
            while let Ok(e) = rx.try_recv() {
                if let Emit::Token(n) = e {
                    *next = if n == *next { n + 1 } else { u64::MAX };
                }
                match e {
                    Emit::Token(1) => out.ttft.push(start.elapsed()),
                    Emit::Token(_) => {}
                    Emit::Done { completion_tokens, cached_tokens, .. } => {
                        out.in_order += usize::from(*next == completion_tokens + 1);
                        out.tokens += completion_tokens;
                        out.cached.push(cached_tokens);
                        *slot = None;
                        break;
                    }
                }
            }
        }
        std::thread::sleep(Duration::from_micros(50));
    }
    out.elapsed = start.elapsed();
    out.ttft.sort();
    out
}

fn prompts(n: usize, len: u64, salt: u64) -> Vec<Vec<u64>> {
    (0..n as u64).map(|i| (0..len).map(|t| salt * 1_000_003 + i * 10_007 + t).collect()).collect()
}

#[test]
fn batching_has_a_knee_and_queueing_shows_in_ttft() {
    let (tx, rx) = mpsc::unbounded_channel();
    spawn(profile(8, 0), 1, rx).expect("engine thread");
    let one = run_batch(&tx, &prompts(1, 16, 1), 20);
    let eight = run_batch(&tx, &prompts(8, 16, 2), 20);
    let many = run_batch(&tx, &prompts(32, 16, 3), 20);
    let rate = |o: &Outcome| o.tokens as f64 / o.elapsed.as_secs_f64();
    // Batching: 8 sequences share each step's fixed cost.
    assert!(rate(&eight) > 4.0 * rate(&one), "{} vs {}", rate(&eight), rate(&one));
    // Past max_num_seqs throughput flattens and the queue shows in TTFT.
    assert!(rate(&many) < 1.3 * rate(&eight), "{} vs {}", rate(&many), rate(&eight));
    assert!(many.ttft[16] > eight.ttft[4] * 3, "{:?} vs {:?}", many.ttft[16], eight.ttft[4]);
}

#[test]
fn prefix_cache_skips_cached_blocks() {
    let (tx, rx) = mpsc::unbounded_channel();
    spawn(profile(8, 100), 1, rx).expect("engine thread");
    let prompt = prompts(1, 320, 9);
    let cold = run_batch(&tx, &prompt, 2);
    let warm = run_batch(&tx, &prompt, 2);
    assert_eq!(cold.cached, [0]);
    assert_eq!(warm.cached, [319]);
    assert!(warm.ttft[0] * 3 < cold.ttft[0], "warm {:?} vs cold {:?}", warm.ttft[0], cold.ttft[0]);
}

#[test]
fn kv_capacity_limits_admission() {
    let (tx, rx) = mpsc::unbounded_channel();
    let mut p = profile(8, 0);
    p.kv_capacity_tokens = 40; // room for two 16-token prompts and their first tokens
    // All four are queued before the engine starts, so it takes them in one read: each one's
    // wait is then the engine's own time, which a busy host cannot squeeze (a step woken late
    // is made up by the next ones, back to back, but each still counts its 2 ms).
    let sent = submit(&tx, &prompts(4, 16, 5), 4);
    let stats = spawn(p, 1, rx).expect("engine thread");
    let o = follow(sent);
    assert_eq!(o.tokens, 16);
    let text = stats.render("m");
    // Two run, two wait: those two are admitted only when a running sequence finished and freed
    // its KV, four steps of at least 2 ms after the others. Read from the order the client saw
    // first tokens and finishes in, this failed on a busy host: the engine's catch-up steps
    // came back to back, and one stream was read to its end before the other's first token.
    assert!(
        text.contains("vllm:request_queue_time_seconds_bucket{model_name=\"m\",le=\"0.005\"} 2\n"),
        "{text}"
    );
    assert!(text.contains("vllm:request_queue_time_seconds_count{model_name=\"m\"} 4\n"), "{text}");
    assert!(text.contains("vllm:request_decode_time_seconds_count{model_name=\"m\"} 4\n"), "{text}");
}

#[test]
fn kv_pressure_preempts_the_newest_and_recomputes_it() {
    let (tx, rx) = mpsc::unbounded_channel();
    let mut p = profile(8, 0);
    p.kv_capacity_tokens = 100; // four 16-token prompts fit; their 4 × 34 generated tokens do not
    let stats = spawn(p, 1, rx).expect("engine thread");
    let o = run_batch(&tx, &prompts(4, 16, 5), 34);
    let preempted = stats.preemptions_total.load(Ordering::Relaxed);
    assert!(preempted >= 2, "{preempted} preemptions");
    // Nothing is lost: every request still gets all its tokens, once each (run_batch counts
    // them from `Done`, and the stream's numbering is checked below).
    assert_eq!(o.tokens, 4 * 34);
    assert_eq!(o.in_order, 4, "every stream numbered its tokens 1, 2, 3, … without repeats");

    // The same load with room to spare preempts nothing.
    let (tx, rx) = mpsc::unbounded_channel();
    let stats = spawn(profile(8, 0), 1, rx).expect("engine thread");
    let o = run_batch(&tx, &prompts(4, 16, 5), 34);
    assert_eq!(stats.preemptions_total.load(Ordering::Relaxed), 0);
    assert_eq!(o.tokens, 4 * 34);
}

/// The costs `plan_step` gives `steps` decode steps of `running` sequences on profile `p`
/// (the first step, their prefill, left out).
fn step_costs(p: Profile, running: usize, steps: usize) -> Vec<Duration> {
    let mut e = Engine {
        stats: Arc::new(Stats::default()),
        p,
        waiting: VecDeque::new(),
        running: Vec::new(),
        kv_used: 0,
        cache: HashMap::new(),
        mm_cache: crate::mock::images::Cache::default(),
        tick: 0,
        rng: ChaCha8Rng::seed_from_u64(5),
    };
    let mut streams = Vec::new();
    for prompt in prompts(running, 8, 9) {
        let (tx, rx) = mpsc::unbounded_channel();
        streams.push(rx);
        e.arrive(
            Admission { prompt, max_tokens: 1 << 20, tx, images: Vec::new(), guided: false },
            Instant::now(),
        );
    }
    e.admit(Instant::now());
    let _prefill = e.plan_step();
    (0..steps).map(|_| e.plan_step().0).collect()
}

/// Dispersion is in the step's cost: a quiet engine's decode steps all cost their nominal
/// time; with the graphs, three sequences pay for four; with host overhead every step costs
/// more by a heavy-tailed amount around its median.
#[test]
fn steps_pay_padded_batches_and_host_time_with_dispersion() {
    use crate::mock::dispersion::{Dispersion, QUIET, VLLM};
    let nominal = |seqs: u32| Duration::from_millis(2) + Duration::from_micros(100) * seqs;
    let quiet = step_costs(profile(8, 10), 3, 200);
    assert!(quiet.iter().all(|c| *c == nominal(3)), "{:?}", &quiet[..3]);
    let graphs = Dispersion { graphs: true, ..QUIET };
    let padded = step_costs(Profile { dispersion: graphs, ..profile(8, 10) }, 3, 200);
    assert!(padded.iter().all(|c| *c == nominal(4)), "{:?}", &padded[..3]);
    let no_pauses = Dispersion { pause_every: Duration::ZERO, ..VLLM };
    let mut host: Vec<f64> = step_costs(Profile { dispersion: no_pauses, ..profile(8, 10) }, 3, 4000)
        .iter()
        .map(|c| (*c - nominal(4)).as_secs_f64() * 1e3)
        .collect();
    host.sort_by(f64::total_cmp);
    let (p50, p99) = (host[2000], host[3960]);
    assert!((0.6..0.8).contains(&p50) && p99 > 3.0 * p50, "host time p50 {p50} ms, p99 {p99} ms");
}
