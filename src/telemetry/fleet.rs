//! A fleet's metrics as one engine's: each endpoint's pages summed, series by series, as the
//! Prometheus reader already sums one server's label sets (`prom.rs`). Pure.

use super::ServerRaw;
use super::prom::Page;

/// The fleet's pages: page k is the sum of each endpoint's page k, the last page the sum of
/// each one's last (read after the window). As many pages as the endpoint scraped least, and
/// `None` when an endpoint was not scraped at all — a sum without it would be a part posing as
/// the whole.
pub fn sum(parts: &[Option<ServerRaw>]) -> Option<ServerRaw> {
    let parts: Vec<&ServerRaw> = parts.iter().map(Option::as_ref).collect::<Option<_>>()?;
    let n = parts.iter().map(|p| p.pages.len()).min()?;
    if n == 0 {
        return None;
    }
    let page = |k: usize| {
        let mut out = Page::new();
        for p in &parts {
            let at = if k + 1 == n { p.pages.len() - 1 } else { k };
            for (name, (kind, v)) in &p.pages[at] {
                out.entry(name.clone()).and_modify(|e| e.1 += v).or_insert((*kind, *v));
            }
        }
        out
    };
    let first = parts[0];
    let times = if first.times.len() == first.pages.len() {
        (0..n).map(|k| first.times[if k + 1 == n { first.times.len() - 1 } else { k }]).collect()
    } else {
        Vec::new()
    };
    Some(ServerRaw {
        source: parts.iter().map(|p| p.source.as_str()).collect::<Vec<_>>().join(", "),
        pages: (0..n).map(page).collect(),
        times,
    })
}

#[cfg(test)]
pub(super) mod tests {
    use super::*;
    use crate::telemetry::prom;

    /// One server's scrapes of `pages` (exposition text), one a second (the chain's tests too).
    pub(in crate::telemetry) fn raw(source: &str, pages: &[&str]) -> ServerRaw {
        ServerRaw {
            source: source.into(),
            pages: pages.iter().map(|p| prom::parse(p)).collect(),
            times: (0..pages.len()).map(|k| k as f64).collect(),
        }
    }

    #[test]
    fn counters_and_gauges_add_up_page_by_page_and_the_last_pages_meet() {
        let a = raw("a", &["# TYPE q gauge\nq 1\nc_total 10\n", "q 3\nc_total 20\n", "q 0\nc_total 30\n"]);
        let b = raw("b", &["# TYPE q gauge\nq 2\nc_total 5\n", "q 0\nc_total 9\n"]);
        let s = sum(&[Some(a), Some(b)]).expect("both scraped");
        assert_eq!(s.pages.len(), 2);
        assert_eq!(s.pages[0]["q"].1, 3.0);
        assert_eq!(s.pages[0]["c_total"].1, 15.0);
        // The last: a's third page (after its window) with b's second.
        assert_eq!(s.pages[1]["c_total"].1, 39.0);
        assert_eq!(s.times, [0.0, 2.0]);
        assert_eq!(s.source, "a, b");
    }

    #[test]
    fn an_endpoint_not_scraped_leaves_the_fleet_without_figures() {
        assert!(sum(&[Some(raw("a", &["x 1\n"])), None]).is_none());
        assert!(sum(&[]).is_none());
    }
}
