//! What a target serves, as detected, kept typed from the probe to the reports and baselines:
//! one engine, or a fleet whose replicas run different ones. Written by name at the file's
//! edge (results.json, a baseline: `"vllm"`, `"llama.cpp"`, `"mixed"`), read back by name there
//! and nowhere else.

use super::Engine;
use serde::{Deserialize, Deserializer, Serialize, Serializer};

/// The engine behind a target.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Served {
    /// One engine (every replica of a fleet the same).
    One(Engine),
    /// A fleet whose replicas run different engines.
    Mixed,
}

impl Served {
    /// The name files and reports use (`vllm`, `llama.cpp`, `mixed`).
    pub fn name(self) -> &'static str {
        match self {
            Served::One(e) => e.name(),
            Served::Mixed => "mixed",
        }
    }

    /// The one engine, where there is one.
    pub fn engine(self) -> Option<Engine> {
        match self {
            Served::One(e) => Some(e),
            Served::Mixed => None,
        }
    }

    /// What a name in a file denotes, however it is spelt (`None`: a name slotest does not know).
    pub fn of_name(name: &str) -> Option<Served> {
        if name == "mixed" { Some(Served::Mixed) } else { Engine::of_name(name).map(Served::One) }
    }
}

impl From<Engine> for Served {
    fn from(e: Engine) -> Served {
        Served::One(e)
    }
}

impl std::fmt::Display for Served {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

impl Serialize for Served {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(self.name())
    }
}

impl<'de> Deserialize<'de> for Served {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Served, D::Error> {
        let name = String::deserialize(d)?;
        Served::of_name(&name).ok_or_else(|| serde::de::Error::custom(format!("unknown engine `{name}`")))
    }
}

/// Reads an optional engine name leniently: a name this slotest does not know (a later
/// version's engine) reads as unknown, never as an unreadable file.
pub fn lenient<'de, D: Deserializer<'de>>(d: D) -> Result<Option<Served>, D::Error> {
    Ok(Option::<String>::deserialize(d)?.as_deref().and_then(Served::of_name))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every engine and `mixed` are written by name and read back; an unknown name reads as none.
    #[test]
    fn names_round_trip_and_unknown_ones_read_as_none() {
        for &e in super::super::ALL {
            let json = serde_json::to_string(&Served::One(e)).expect("json");
            assert_eq!(json, format!("\"{}\"", e.name()));
            assert_eq!(serde_json::from_str::<Served>(&json).expect("reads"), Served::One(e));
        }
        assert_eq!(serde_json::to_string(&Served::Mixed).expect("json"), "\"mixed\"");
        #[derive(Deserialize)]
        struct Doc {
            #[serde(default, deserialize_with = "lenient")]
            engine: Option<Served>,
        }
        let doc: Doc = serde_json::from_str(r#"{"engine":"some-future-engine"}"#).expect("reads");
        assert_eq!(doc.engine, None);
    }
}
