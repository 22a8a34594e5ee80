//! A fleet's routing policy and its endpoints' names (`[target] endpoints`, `routing`).

use super::Endpoint;

/// The name of each endpoint of a fleet, as reports show it: its host and port (never a key
/// or a path), `mock:<profile>` for a mock; a name two endpoints share gets ` #k` (1-based).
pub fn fleet_names(fleet: &[Endpoint]) -> Vec<String> {
    let base = |e: &Endpoint| match e {
        Endpoint::Mock(spec) => format!("mock:{}", if spec.is_empty() { "h100-8b" } else { spec }),
        Endpoint::Url(u) => {
            let rest = u.split_once("://").map_or(u.as_str(), |(_, r)| r);
            let host = rest.split('/').next().unwrap_or(rest);
            host.rsplit_once('@').map_or(host, |(_, h)| h).to_string()
        }
        Endpoint::Missing(_) => "missing".into(),
        Endpoint::Server => "server".into(),
    };
    let names: Vec<String> = fleet.iter().map(base).collect();
    names
        .iter()
        .enumerate()
        .map(
            |(k, n)| {
                if names.iter().filter(|m| *m == n).count() > 1 {
                    format!("{n} #{}", k + 1)
                } else {
                    n.clone()
                }
            },
        )
        .collect()
}

/// How a fleet's requests are spread over its endpoints (`[target] routing`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Routing {
    /// Each request to the next endpoint in turn.
    #[default]
    RoundRobin,
    /// Each request to the endpoint with the fewest of this run's requests in flight (the
    /// first such, in the order listed).
    LeastInFlight,
    /// A session (a conversation's or agent's turns; a single request's warm prefix group,
    /// else the request itself) to one endpoint picked by a hash of it, as prefix-aware
    /// routers keep a session's cache warm; every later turn follows.
    SessionAffinity,
}

impl Routing {
    /// The suite's spelling.
    pub fn name(self) -> &'static str {
        match self {
            Routing::RoundRobin => "round_robin",
            Routing::LeastInFlight => "least_in_flight",
            Routing::SessionAffinity => "session_affinity",
        }
    }

    /// Parses the suite's spelling.
    pub fn parse(s: &str) -> Option<Routing> {
        [Routing::RoundRobin, Routing::LeastInFlight, Routing::SessionAffinity]
            .into_iter()
            .find(|r| r.name() == s)
    }
}

#[cfg(test)]
mod tests {
    use super::super::*;
    use crate::suite::{Source, parse};

    fn plan(text: &str) -> Result<Plan, String> {
        let parsed = parse(Source::new("t.toml", text)).map_err(|e| e.to_string())?;
        build_with_env(&[parsed], &Overrides::default(), &|_| None).map_err(|e| e.to_string())
    }

    #[test]
    fn a_bad_fleet_is_an_error_at_its_place_with_a_hint() {
        let cases: &[(&str, &str)] = &[
            (
                "[target]\nbase_url = \"mock\"\nendpoints = [\"mock\", \"mock\"]\n[[row]]\nname = \"a\"\n",
                "t.toml:3:13: give base_url or endpoints, not both",
            ),
            (
                "[target]\nendpoints = [\"mock\"]\n[[row]]\nname = \"a\"\n",
                "t.toml:2:13: a fleet needs two or more endpoints",
            ),
            (
                "[target]\nendpoints = [\"mock\", \"ftp://x\"]\n[[row]]\nname = \"a\"\n",
                "t.toml:2:22: target `ftp://x` is not a URL or a mock",
            ),
            (
                "[target]\nendpoints = [\"mock\", \"mock\"]\nrouting = \"random\"\n[[row]]\nname = \"a\"\n",
                "t.toml:3:11: unknown routing `random`",
            ),
        ];
        for (text, want) in cases {
            let err = plan(text).expect_err(text);
            assert!(err.lines().next().is_some_and(|l| l.starts_with(want)), "full error:\n{err}");
            assert!(err.contains("hint:"), "no hint in:\n{err}");
        }
    }

    #[test]
    fn a_fleet_from_the_suite_or_the_command_line() {
        let p = plan("[target]\nendpoints = [\"http://a:1/v1\", \"mock\", \"mock\"]\nrouting = \"session_affinity\"\n[[row]]\nname = \"r\"\n")
            .expect("valid");
        let t = &p.cases[0].target;
        assert_eq!(
            t.fleet,
            [
                Endpoint::Url("http://a:1".into()),
                Endpoint::Mock(String::new()),
                Endpoint::Mock(String::new())
            ]
        );
        assert_eq!(
            (t.endpoint.clone(), t.routing),
            (Endpoint::Url("http://a:1".into()), Routing::SessionAffinity)
        );
        assert_eq!(fleet_names(&t.fleet), ["a:1", "mock:h100-8b #2", "mock:h100-8b #3"]);
        let parsed = parse(Source::new("t.toml", "[[row]]\nname = \"r\"\n")).expect("parses");
        let over = Overrides { target: Some("http://a:1, http://b:2".into()), ..Overrides::default() };
        let p = build_with_env(&[parsed], &over, &|_| None).expect("valid");
        let t = &p.cases[0].target;
        assert_eq!(t.fleet.len(), 2);
        assert_eq!(t.routing, Routing::RoundRobin);
        // A mock's own commas stay in its spec.
        let parsed = parse(Source::new("t.toml", "[[row]]\nname = \"r\"\n")).expect("parses");
        let over = Overrides { target: Some("mock:fast?models=a,b,mock".into()), ..Overrides::default() };
        let t = build_with_env(&[parsed], &over, &|_| None).expect("valid").cases.remove(0).target;
        assert_eq!(t.fleet, [Endpoint::Mock("fast?models=a,b".into()), Endpoint::Mock(String::new())]);
        // One URL is no fleet.
        let parsed = parse(Source::new("t.toml", "[[row]]\nname = \"r\"\n")).expect("parses");
        let over = Overrides { target: Some("http://a:1".into()), ..Overrides::default() };
        assert!(build_with_env(&[parsed], &over, &|_| None).expect("valid").cases[0].target.fleet.is_empty());
    }
}
