//! Where the scheduler takes its next request from: the request stream itself, or — where the
//! prompts are long, their words taking milliseconds to draw (3 ms for 128K tokens in a test
//! build) — a blocking thread that draws them a couple of requests ahead. The runtime's two
//! workers then keep reading the streams in flight meanwhile: drawn on a worker, 64 users' 128K
//! prompts put reads 1.7 ms (p99) behind the server's writes.

use super::workload::RequestSpec;
use tokio::sync::mpsc;

/// Prompts of at least this many tokens are drawn ahead, off the workers.
pub const LONG_PROMPT: u64 = 4096;

/// Requests drawn ahead of the scheduler: few, as each holds its prompt (5–6 bytes a token).
const AHEAD: usize = 2;

/// The scheduler's source of requests.
pub enum Specs<I> {
    /// Drawn on the scheduler's own task (short prompts: a channel would cost more).
    Here(I),
    /// Drawn ahead by a blocking thread, which stops when this end is dropped.
    Ahead(mpsc::Receiver<RequestSpec>),
}

impl<I: Iterator<Item = RequestSpec> + Send + 'static> Specs<I> {
    /// The requests of `stream`, drawn ahead when `long`. Must run inside a Tokio runtime.
    pub fn new(stream: I, long: bool) -> Self {
        if !long {
            return Specs::Here(stream);
        }
        let (tx, rx) = mpsc::channel(AHEAD);
        tokio::task::spawn_blocking(move || {
            for spec in stream {
                if tx.blocking_send(spec).is_err() {
                    break; // the scheduler is done
                }
            }
        });
        Specs::Ahead(rx)
    }

    /// The next request, `None` when the stream is over.
    pub async fn next(&mut self) -> Option<RequestSpec> {
        match self {
            Specs::Here(stream) => stream.next(),
            Specs::Ahead(rx) => rx.recv().await,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn specs(n: u64) -> impl Iterator<Item = RequestSpec> + Send + 'static {
        (0..n).map(|index| RequestSpec {
            index,
            prompt: "w ".repeat(8),
            input_tokens: 8,
            output_tokens: 1,
            offset: None,
            group: None,
            class: None,
            later: Vec::new(),
            agent: None,
            image_seed: 0,
        })
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn drawn_ahead_the_stream_is_the_same_and_stops_with_its_reader() {
        let (mut here, mut ahead) = (Specs::new(specs(5), false), Specs::new(specs(5), true));
        for _ in 0..5 {
            let (a, b) = (here.next().await.expect("here"), ahead.next().await.expect("ahead"));
            assert_eq!(a, b);
        }
        assert!(here.next().await.is_none() && ahead.next().await.is_none());
        // An endless stream: dropping the reader ends the thread (the runtime's end would
        // otherwise wait for it).
        let mut endless = Specs::new(specs(u64::MAX), true);
        assert_eq!(endless.next().await.map(|s| s.index), Some(0));
        drop(endless);
    }
}
