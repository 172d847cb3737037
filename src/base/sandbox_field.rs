//! The shape of a `sandbox` setting, shared by a `.mcp.json` entry and `[mcp] sandbox` in
//! harness9.toml.

use std::fmt;

use serde::de::{self, MapAccess, Visitor};
use serde::{Deserialize, Deserializer};

/// A `"sandbox"` entry: `true`/`false`, or `{"writable": [...], "network": true|false}` (which
/// turns it on). The same shape is `[mcp] sandbox` in harness9.toml.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct SandboxField {
    /// On at all.
    pub on: bool,
    /// Extra writable paths, as written (`${VAR}` expanded, relative to the config's directory).
    pub writable: Vec<String>,
    /// TCP allowed; off by default.
    pub network: bool,
}

impl<'de> Deserialize<'de> for SandboxField {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        #[derive(Deserialize)]
        #[serde(deny_unknown_fields)]
        struct Options {
            #[serde(default)]
            writable: Vec<String>,
            #[serde(default)]
            network: bool,
        }
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = SandboxField;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str(r#"true, false or {"writable": ["PATH"], "network": false}"#)
            }
            fn visit_bool<E: de::Error>(self, on: bool) -> Result<SandboxField, E> {
                Ok(SandboxField {
                    on,
                    ..SandboxField::default()
                })
            }
            fn visit_map<A: MapAccess<'de>>(self, m: A) -> Result<SandboxField, A::Error> {
                let o = Options::deserialize(de::value::MapAccessDeserializer::new(m))?;
                Ok(SandboxField {
                    on: true,
                    writable: o.writable,
                    network: o.network,
                })
            }
        }
        d.deserialize_any(V)
    }
}
