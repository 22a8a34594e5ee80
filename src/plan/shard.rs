//! Splitting a run across machines: `--load-shard i/N` (one case's request stream in N parts,
//! each sent by its own slotest process) and `--partition count:i/N | hash:i/N` (the cases of a
//! run across N runners, nextest-style). Pure: which request, which case, which share.

use std::fmt;

/// Part `index` (1-based) of `of`, as `--load-shard 2/4` and `--partition count:2/4` write it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
pub struct Part {
    /// 1 ..= `of`.
    pub index: u64,
    /// How many parts.
    pub of: u64,
}

impl Part {
    /// Parses `i/N` with 1 ≤ i ≤ N.
    pub fn parse(s: &str) -> Result<Part, String> {
        let (i, n) = s.split_once('/').ok_or_else(|| format!("`{s}`: expected i/N, e.g. 1/4"))?;
        let num =
            |x: &str| x.trim().parse::<u64>().map_err(|_| format!("`{s}`: `{x}` is not a whole number"));
        let (index, of) = (num(i)?, num(n)?);
        if of == 0 || index == 0 || index > of {
            return Err(format!("`{s}`: i must be between 1 and N (N ≥ 1)"));
        }
        Ok(Part { index, of })
    }

    /// This part's share of `total` (concurrency, a connection cap): `total / N`, the first
    /// `total % N` parts one more, so the shares add up to `total`.
    pub fn share(self, total: u64) -> u64 {
        total / self.of + u64::from(self.index - 1 < total % self.of)
    }

    /// Whether request `index` of a stream belongs to this shard. A request of warm prefix group
    /// `g` goes with its group (`g mod N`), so a group's shared prefix is sent by one process
    /// only; any other request goes round-robin by stream index (`index mod N`).
    pub fn owns(self, index: u64, group: Option<u64>) -> bool {
        group.unwrap_or(index) % self.of == self.index - 1
    }
}

impl fmt::Display for Part {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}/{}", self.index, self.of)
    }
}

/// `--partition`: which of a run's cases this runner takes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Partition {
    /// Case k (0-based, in plan order among the selected) goes to part `k mod N + 1`: even
    /// counts, but adding a case moves the ones after it.
    Count(Part),
    /// A case goes to part `fnv1a(name) mod N + 1`: a case stays on its runner however the
    /// suite around it changes.
    Hash(Part),
}

impl Partition {
    /// Parses `count:i/N` or `hash:i/N`.
    pub fn parse(s: &str) -> Result<Partition, String> {
        match s.split_once(':') {
            Some(("count", p)) => Part::parse(p).map(Partition::Count),
            Some(("hash", p)) => Part::parse(p).map(Partition::Hash),
            _ => Err(format!("`{s}`: expected count:i/N or hash:i/N")),
        }
    }

    /// Keeps the names this part takes, in order.
    pub fn select<'a>(self, names: impl IntoIterator<Item = &'a str>) -> Vec<&'a str> {
        names
            .into_iter()
            .enumerate()
            .filter(|(k, name)| match self {
                Partition::Count(p) => *k as u64 % p.of == p.index - 1,
                Partition::Hash(p) => super::fnv1a(name.as_bytes()) % p.of == p.index - 1,
            })
            .map(|(_, name)| name)
            .collect()
    }
}

impl fmt::Display for Partition {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Partition::Count(p) => write!(f, "count:{p}"),
            Partition::Hash(p) => write!(f, "hash:{p}"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn parts_parse_and_refuse() {
        assert_eq!(Part::parse("2/4"), Ok(Part { index: 2, of: 4 }));
        for bad in ["0/4", "5/4", "1/0", "1", "a/4", "1/b"] {
            assert!(Part::parse(bad).is_err(), "{bad}");
        }
        assert_eq!(Partition::parse("hash:1/3"), Ok(Partition::Hash(Part { index: 1, of: 3 })));
        assert_eq!(Partition::parse("count:2/3").map(|p| p.to_string()), Ok("count:2/3".to_string()));
        assert!(Partition::parse("slice:1/3").is_err());
    }

    proptest! {
        #[test]
        fn shares_add_up_and_each_request_has_one_owner(
            total in 0u64..1000, n in 1u64..17, index in 0u64..10_000, groups in prop::option::of(1u64..64)
        ) {
            let parts: Vec<Part> = (1..=n).map(|i| Part { index: i, of: n }).collect();
            prop_assert_eq!(parts.iter().map(|p| p.share(total)).sum::<u64>(), total);
            let group = groups.map(|g| index % g);
            prop_assert_eq!(parts.iter().filter(|p| p.owns(index, group)).count(), 1);
        }

        #[test]
        fn partitions_are_disjoint_and_cover(names in prop::collection::vec("[a-z:=0-9]{1,12}", 0..40), n in 1u64..9) {
            for make in [Partition::Count as fn(Part) -> Partition, Partition::Hash] {
                let mut seen: Vec<&str> = Vec::new();
                for i in 1..=n {
                    seen.extend(make(Part { index: i, of: n }).select(names.iter().map(String::as_str)));
                }
                let mut all: Vec<&str> = names.iter().map(String::as_str).collect();
                all.sort_unstable();
                seen.sort_unstable();
                prop_assert_eq!(seen, all);
            }
        }
    }
}
