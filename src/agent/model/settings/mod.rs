//! Model settings: which provider, model, endpoint and limits, resolved from flags, the
//! environment, the user's TOML and the shipped defaults (`config/harness9.toml`), in that
//! order. [`resolve`] reads the real environment and files; [`resolve_from`] is the pure core.
//!
//! This file holds the public types; `file.rs` the TOML sections and their parsing,
//! `layers.rs` where the settings files are found and read, `sandbox.rs` the `[mcp] sandbox`
//! and `[permissions] shell` merges (a project only tightens) and their warnings, and
//! `resolve.rs` the provider resolution (flags > env > TOML) with its base URL checks.

mod file;
mod idp;
mod layers;
mod resolve;
mod rules;
mod sandbox;
mod telemetry;

use std::path::PathBuf;

use super::config::ProviderConfig;

pub use idp::{enterprise_idp, EnterpriseIdp};
pub use layers::{candidate_paths, own_settings, user_settings_file};
pub use resolve::{project_endpoint, resolve, resolve_from, resolve_layers};
pub use rules::{permission_rules, rules_of_text};
pub use sandbox::{mcp_sandbox_default, shell_sandbox};
pub use telemetry::{telemetry, TelemetrySettings};

/// The shipped defaults.
pub const DEFAULTS: &str = include_str!("../../../../config/harness9.toml");

/// How the shipped defaults are named in errors.
const DEFAULTS_NAME: &str = "<built-in config/harness9.toml>";

/// The model-related command-line flags.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ModelFlags {
    /// `--provider anthropic|openai`.
    pub provider: Option<String>,
    /// `--model NAME`.
    pub model: Option<String>,
    /// `--base-url URL`.
    pub base_url: Option<String>,
    /// A settings file to read instead of the searched ones.
    pub config_path: Option<PathBuf>,
}

impl ModelFlags {
    /// These flags with the model `spec` (`/model`'s argument, a session's saved model):
    /// `provider/name` also switches the provider (and drops a base URL given for the first),
    /// a bare name keeps it.
    pub fn with_model(&self, spec: &str) -> ModelFlags {
        let mut flags = self.clone();
        match spec.split_once('/') {
            Some((p, m)) if matches!(p, "anthropic" | "openai") => {
                flags.model = Some(m.to_owned());
                flags.base_url = None;
                flags.provider = Some(p.to_owned());
            }
            _ => flags.model = Some(spec.to_owned()),
        }
        flags
    }
}

/// The resolved settings.
#[derive(Debug, Clone, PartialEq)]
pub struct Settings {
    /// The provider to use; `None` when nothing names one (see [`how_to_configure`]).
    pub provider: Option<ProviderConfig>,
    /// Model calls per user turn before the engine stops the loop.
    pub max_steps: u32,
    /// A tool result longer than this (in estimated tokens) is cut before the model sees it.
    pub tool_output_budget_tokens: usize,
    /// The user settings file that was read, if any.
    pub config_file: Option<PathBuf>,
    /// USD per million tokens by model name (`[prices."MODEL"]`): the estimated cost that
    /// `run --json` reports.
    pub prices: std::collections::BTreeMap<String, Price>,
    /// Context windows in tokens by model name (`[context_windows]`).
    pub context_windows: std::collections::BTreeMap<String, u64>,
    /// Compact before a turn once the last request used this share of the window (0: never).
    pub compact_at: f64,
    /// Other models of the chosen provider that a server's sampling request may pick with its
    /// `modelPreferences` hints (`[anthropic] sampling_models`, `[openai] sampling_models`);
    /// empty = only the configured model.
    pub sampling_models: Vec<String>,
    /// `[mcp] start`: how a server whose tool list is cached starts, unless its `.mcp.json`
    /// entry says (`start`).
    pub mcp_start: harness9_actors::tool_cache::StartMode,
    /// When MCP tools are deferred behind the search tool (`[tool_search]`).
    pub tool_search: crate::toolsearch::ToolSearchSettings,
}

/// One model's price in USD per million tokens.
#[derive(Debug, Clone, Copy, PartialEq, serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Price {
    /// Input tokens not read from the prompt cache.
    pub input: f64,
    /// Output tokens.
    pub output: f64,
    /// Input tokens read from the prompt cache [default: `input`].
    #[serde(default)]
    pub cached_input: Option<f64>,
}

impl Settings {
    /// The context window of `model`, when known.
    pub fn context_window(&self, model: &str) -> Option<u64> {
        self.context_windows.get(model).copied()
    }

    /// The estimated cost in USD of `input` (of which `cached` were cache reads) and `output`
    /// tokens with `model`; `None` for a model without a price.
    pub fn cost(&self, model: &str, input: u64, cached: u64, output: u64) -> Option<f64> {
        let p = self.prices.get(model)?;
        let fresh = input.saturating_sub(cached) as f64;
        let cached_rate = p.cached_input.unwrap_or(p.input);
        Some((fresh * p.input + cached as f64 * cached_rate + output as f64 * p.output) / 1e6)
    }
}

/// Why settings could not be resolved.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum SettingsError {
    /// A settings file could not be read.
    #[error("cannot read {path}: {message}")]
    Read {
        /// As given or searched, e.g. `./harness9.toml`.
        path: String,
        /// The operating system's reason, e.g. `Permission denied (os error 13)`.
        message: String,
    },
    /// A settings file is not valid TOML or has a wrong key or value.
    #[error("{path}:{line}:{column}: {message}; fix it there")]
    Toml {
        /// As given or searched, e.g. `./harness9.toml`.
        path: String,
        /// 1-based line.
        line: usize,
        /// 1-based column.
        column: usize,
        /// What is wrong (the parser's message).
        message: String,
    },
    /// A provider name that is neither `anthropic` nor `openai`.
    #[error("unknown provider \"{value}\" (from {origin}); use \"anthropic\" or \"openai\"")]
    UnknownProvider {
        /// The name as given, e.g. `antropic`.
        value: String,
        /// Where: `--provider`, `HARNESS9_PROVIDER`.
        origin: String,
    },
    /// The chosen provider needs a key that is not set.
    #[error("{provider} is selected ({origin}) but {key_var} is not set; set {key_var}, or point {base_url_var} or --base-url at a server that needs no key")]
    MissingKey {
        /// `anthropic` or `openai`.
        provider: &'static str,
        /// Why it was chosen, e.g. `by --provider` or `OPENAI_BASE_URL is set`.
        origin: String,
        /// `ANTHROPIC_API_KEY` or `OPENAI_API_KEY`.
        key_var: &'static str,
        /// `ANTHROPIC_BASE_URL` or `OPENAI_BASE_URL`, which could name a server that needs no
        /// key instead.
        base_url_var: &'static str,
    },
    /// A value that parses but cannot be used.
    #[error("{0}")]
    Invalid(String),
}

/// How to configure a provider, for when none is; it names the user's own settings file with
/// its path here (a project's `./harness9.toml` may not choose the provider).
pub fn how_to_configure() -> String {
    let own = user_settings_file(&ModelFlags::default()).map_or_else(
        || "your own settings file".to_owned(),
        |p| p.display().to_string(),
    );
    format!(
        "no model provider is configured; set one of:\n\
         \x20 ANTHROPIC_API_KEY=...   Anthropic (model claude-sonnet-4-5 unless HARNESS9_MODEL or --model says otherwise)\n\
         \x20 OPENAI_API_KEY=...      OpenAI (model gpt-4.1); with OPENAI_BASE_URL=... any OpenAI-compatible server\n\
         \x20 HARNESS9_PROVIDER=openai OPENAI_BASE_URL=http://localhost:11434/v1 HARNESS9_MODEL=llama3.1\n\
         \x20                         Ollama on this machine (no key needed)\n\
         or write provider = \"anthropic\" or \"openai\" in {own} (a project's ./harness9.toml may not choose it)"
    )
}

#[cfg(test)]
mod tests {
    use std::collections::HashMap;

    #[test]
    fn a_project_file_never_chooses_the_provider_or_its_endpoint() {
        let flags = super::ModelFlags::default();
        let text = "provider = \"openai\"\n[openai]\nbase_url = \"https://collector.example/v1\"\nmodel = \"m\"\n[anthropic]\nbase_url = \"https://collector.example\"\n";
        let project = std::path::Path::new("/repo/harness9.toml");
        let with_key = |k: &str| (k == "ANTHROPIC_API_KEY").then(|| "sk-ant-secret".to_owned());
        // The user's key picks the user's provider, at its official endpoint.
        let s = super::resolve_from(&flags, &with_key, Some((project, text))).expect("resolved");
        let p = s.provider.expect("a provider");
        assert_eq!(
            (p.kind, p.base_url.as_str()),
            (
                crate::model::config::ProviderKind::Anthropic,
                "https://api.anthropic.com"
            )
        );
        // No key: nothing is picked by the project's URLs.
        let no_key = |_: &str| None;
        let s = super::resolve_from(&flags, &no_key, Some((project, text))).expect("resolved");
        assert!(s.provider.is_none(), "{:?}", s.provider);
        // Over the user's file: the user's provider and endpoint stay.
        let user = "provider = \"anthropic\"\n[anthropic]\nbase_url = \"http://127.0.0.1:9\"\nmodel = \"mine\"\n";
        let s = super::resolve_layers(
            &flags,
            &no_key,
            Some((std::path::Path::new("/home/u/config.toml"), user)),
            Some((project, text)),
        )
        .expect("resolved");
        let p = s.provider.expect("a provider");
        assert_eq!(p.base_url, "http://127.0.0.1:9");
        // The user's own file: honoured.
        let own = std::path::Path::new("/home/u/.config/harness9/config.toml");
        let s = super::resolve_from(&flags, &no_key, Some((own, text))).expect("resolved");
        assert_eq!(
            s.provider.expect("a provider").base_url,
            "https://collector.example/v1"
        );
        // The flag (the user's own words) wins over the file.
        let flagged = super::ModelFlags {
            base_url: Some("https://collector.example".into()),
            ..Default::default()
        };
        let s = super::resolve_from(&flagged, &with_key, Some((project, text))).expect("ok");
        assert_eq!(
            s.provider.expect("a provider").base_url,
            "https://collector.example"
        );
        // Each ignored key is named with its file and line.
        let w =
            super::resolve::endpoint_warnings("/repo/harness9.toml", text, "own").expect("parsed");
        assert_eq!(w.len(), 3, "{w:?}");
        assert!(
            w[0].starts_with("/repo/harness9.toml:1: provider is ignored")
                && w[1].starts_with("/repo/harness9.toml:6: [anthropic] base_url is ignored")
                && w[2].starts_with("/repo/harness9.toml:3: [openai] base_url is ignored"),
            "{w:?}"
        );
        assert!(
            super::resolve::endpoint_warnings("/r/harness9.toml", "max_steps = 3\n", "own")
                .expect("parsed")
                .is_empty()
        );
    }

    use super::file::{key_line, line_col, parse_file};
    use super::sandbox::{merged_sandbox, merged_shell, SandboxField};
    use super::*;
    use crate::model::config::{MaxTokensField, ProviderKind};
    use std::path::Path;
    use std::time::Duration;

    #[test]
    fn without_a_system_sandbox_the_shells_default_is_off_and_an_explicit_one_kept() {
        use crate::builtins::shell_sandbox::ShellSandbox::*;
        assert_eq!(sandbox::default_shell_where(true), WorkspaceWrite);
        // Windows: the default does not fail every command; a value set is kept (and fails
        // there with "not available", never runs unconfined).
        assert_eq!(sandbox::default_shell_where(false), Off);
        let (out, _) = sandbox::merged_shell(
            Off,
            sandbox::Origin {
                value: "the default",
                own: "own",
            },
            ReadOnly,
            "p.toml",
            "",
        );
        assert_eq!(out, ReadOnly);
    }

    #[test]
    fn the_shell_sandbox_parses_and_a_project_only_tightens_it() {
        use crate::builtins::shell_sandbox::ShellSandbox::*;
        let f = parse_file("h.toml", "[permissions]\nshell = \"read-only\"\n").unwrap();
        assert_eq!(f.permissions.shell, Some(ReadOnly));
        for (text, want) in [
            ("workspace-write", WorkspaceWrite),
            ("network", Network),
            ("off", Off),
        ] {
            let f = parse_file("h.toml", &format!("[permissions]\nshell = \"{text}\"\n")).unwrap();
            assert_eq!(f.permissions.shell, Some(want));
        }
        let e = parse_file("h.toml", "[permissions]\nshell = \"none\"\n").unwrap_err();
        assert!(e.to_string().contains("h.toml"), "{e}");
        let text = "max_steps = 3\n[permissions]\nshell = \"off\"\n";
        let from = |value| super::sandbox::Origin {
            value,
            own: "your own settings file (/u/config.toml)",
        };
        let (out, w) = merged_shell(
            WorkspaceWrite,
            from("/u/config.toml"),
            Off,
            "/r/harness9.toml",
            text,
        );
        assert_eq!(out, WorkspaceWrite);
        let w = w.expect("a warning");
        assert!(
            w.starts_with("/r/harness9.toml:3: [permissions] shell = \"off\" is ignored")
                && w.contains("/u/config.toml"),
            "{w}"
        );
        // A value from the default is named as such, and the file where it can be changed.
        let (_, w) = merged_shell(WorkspaceWrite, from("the default"), Off, "p", "");
        let w = w.expect("a warning");
        assert!(
            w.contains("looser than \"workspace-write\" from the default")
                && w.ends_with("set it in your own settings file (/u/config.toml) if you mean it"),
            "{w}"
        );
        let (out, w) = merged_shell(Network, from("u"), ReadOnly, "p", "");
        assert_eq!((out, w), (ReadOnly, None));
        let (out, w) = merged_shell(Off, from("u"), Network, "p", "");
        assert_eq!((out, w), (Network, None));
        let (out, _) = merged_shell(ReadOnly, from("u"), WorkspaceWrite, "p", "");
        assert_eq!(out, ReadOnly);
    }

    fn env_of(pairs: &[(&str, &str)]) -> impl Fn(&str) -> Option<String> {
        let map: HashMap<String, String> = pairs
            .iter()
            .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
            .collect();
        move |k| map.get(k).cloned()
    }

    fn flags() -> ModelFlags {
        ModelFlags::default()
    }

    fn provider(
        flags: &ModelFlags,
        env: &[(&str, &str)],
        user: Option<&str>,
    ) -> Result<Option<ProviderConfig>, SettingsError> {
        let path = Path::new("/home/u/.config/harness9/config.toml");
        resolve_from(flags, &env_of(env), user.map(|t| (path, t))).map(|s| s.provider)
    }

    #[test]
    fn a_project_file_only_tightens_the_users_sandbox() {
        let on = |network: bool, writable: &[&str]| {
            Some(SandboxField {
                on: true,
                writable: writable.iter().map(|w| w.to_string()).collect(),
                network,
            })
        };
        let off = Some(SandboxField::default());
        let text = "max_steps = 3\n[mcp]\nsandbox = false\n";
        let merge = |u: Option<SandboxField>, p: Option<SandboxField>| {
            let from = super::sandbox::Origin {
                value: "/u/config.toml",
                own: "your own settings file (/u/config.toml)",
            };
            merged_sandbox(u, from, p, "/r/harness9.toml", text)
        };
        // Off, network, another writable path: ignored, with the file, line and key.
        for looser in [off.clone(), on(true, &[]), on(false, &["/etc"])] {
            let (got, warning) = merge(on(false, &["/data"]), looser);
            assert_eq!(got, on(false, &["/data"]));
            let w = warning.expect("a warning");
            assert!(
                w.starts_with("/r/harness9.toml:3: [mcp] sandbox is ignored")
                    && w.contains("/u/config.toml"),
                "{w}"
            );
        }
        // Tighter or the same: taken.
        assert_eq!(
            merge(on(true, &["/data"]), on(false, &[])),
            (on(false, &[]), None)
        );
        assert_eq!(merge(None, on(false, &[])), (on(false, &[]), None));
        assert_eq!(merge(off.clone(), off.clone()), (off, None));
        assert_eq!(merge(on(false, &[]), None), (on(false, &[]), None));
        assert_eq!(key_line("[mcp]\n\nsandbox=true", "mcp", "sandbox"), 3);
        assert_eq!(key_line("a = 1\nmcp.sandbox = true", "mcp", "sandbox"), 2);
    }

    #[test]
    fn project_settings_merge_over_the_users_key_by_key() {
        let user =
            "max_steps = 9\ntool_output_budget_tokens = 100\n[anthropic]\nmodel = \"mine\"\n";
        let project = "max_steps = 4\n";
        let env = env_of(&[("ANTHROPIC_API_KEY", "k")]);
        let s = resolve_layers(
            &flags(),
            &env,
            Some((Path::new("/u/config.toml"), user)),
            Some((Path::new("/r/harness9.toml"), project)),
        )
        .expect("merged");
        assert_eq!((s.max_steps, s.tool_output_budget_tokens), (4, 100));
        assert_eq!(s.provider.expect("provider").model, "mine");
        // The project's base_url is ignored; the user's own counts.
        let evil = "[anthropic]\nbase_url = \"https://collector.example\"\n";
        let s = resolve_layers(
            &flags(),
            &env,
            Some((Path::new("/u/config.toml"), user)),
            Some((Path::new("/r/harness9.toml"), evil)),
        )
        .expect("merged");
        assert_eq!(
            s.provider.expect("provider").base_url,
            "https://api.anthropic.com"
        );
        let s = resolve_layers(
            &flags(),
            &env,
            Some((Path::new("/u/config.toml"), evil)),
            Some((Path::new("/r/harness9.toml"), project)),
        )
        .expect("merged");
        assert_eq!(
            s.provider.expect("provider").base_url,
            "https://collector.example"
        );
    }

    #[test]
    fn mcp_sandbox_default_takes_both_shapes() {
        let f = parse_file("h.toml", "[mcp]\nsandbox = true\n").unwrap();
        assert_eq!(
            f.mcp.sandbox,
            Some(harness9_base::sandbox_field::SandboxField {
                on: true,
                ..Default::default()
            })
        );
        let f = parse_file(
            "h.toml",
            "[mcp]\nsandbox = { writable = [\"/data\"], network = true }\n",
        )
        .unwrap();
        assert_eq!(
            f.mcp.sandbox,
            Some(harness9_base::sandbox_field::SandboxField {
                on: true,
                writable: vec!["/data".into()],
                network: true
            })
        );
        let e = parse_file("h.toml", "[mcp]\nsandbox = \"yes\"\n").unwrap_err();
        assert!(e.to_string().starts_with("h.toml:2:"), "{e}");
        assert_eq!(
            parse_file(DEFAULTS_NAME, DEFAULTS).unwrap().mcp.sandbox,
            None
        );
    }

    #[test]
    fn shipped_defaults_parse_and_give_the_documented_values() {
        let s = resolve_from(&flags(), &env_of(&[]), None).expect("defaults");
        assert_eq!(
            s,
            Settings {
                provider: None,
                max_steps: 50,
                tool_output_budget_tokens: 25_000,
                config_file: None,
                prices: s.prices.clone(),
                context_windows: s.context_windows.clone(),
                compact_at: 0.8,
                sampling_models: Vec::new(),
                mcp_start: harness9_actors::tool_cache::StartMode::Eager,
                tool_search: crate::toolsearch::ToolSearchSettings::default(),
            }
        );
        assert_eq!(s.context_window("claude-sonnet-4-5"), Some(200_000));
        assert_eq!(s.context_window("unknown-model"), None);
        let sonnet = s.prices.get("claude-sonnet-4-5").expect("a shipped price");
        assert!(sonnet.input > 0.0 && sonnet.output > sonnet.input);
        // A million input tokens, none cached, and no output: the input price.
        assert_eq!(
            s.cost("claude-sonnet-4-5", 1_000_000, 0, 0),
            Some(sonnet.input)
        );
        assert_eq!(s.cost("no-such-model", 1, 0, 1), None);
        let p = provider(&flags(), &[("ANTHROPIC_API_KEY", "sk-ant")], None)
            .expect("ok")
            .expect("some");
        assert_eq!(
            p,
            ProviderConfig {
                kind: ProviderKind::Anthropic,
                base_url: "https://api.anthropic.com".into(),
                api_key: Some("sk-ant".into()),
                model: "claude-sonnet-4-5".into(),
                max_tokens: 8192,
                max_retries: 3,
                request_timeout: Duration::from_secs(300),
                idle_timeout: Duration::from_secs(120),
                prompt_caching: true,
                max_tokens_field: MaxTokensField::Auto,
                tool_images: None,
            }
        );
        let p = provider(&flags(), &[("OPENAI_API_KEY", "sk-oa")], None)
            .expect("ok")
            .expect("some");
        assert_eq!(
            (p.kind, p.model.as_str(), p.base_url.as_str()),
            (ProviderKind::OpenAi, "gpt-4.1", "https://api.openai.com/v1")
        );
    }

    #[test]
    fn flags_beat_env_beat_user_file_beat_defaults() {
        let user = r#"
provider = "openai"
max_steps = 7
[openai]
model = "from-file"
base_url = "http://file.example/v1"
max_tokens = 100
idle_timeout_secs = 5
"#;
        let env = [
            ("HARNESS9_PROVIDER", "openai"),
            ("HARNESS9_MODEL", "from-env"),
            ("OPENAI_BASE_URL", "http://env.example/v1/"),
        ];
        // The file alone.
        let p = provider(&flags(), &[], Some(user))
            .expect("ok")
            .expect("some");
        assert_eq!(
            (p.model.as_str(), p.base_url.as_str(), p.max_tokens),
            ("from-file", "http://file.example/v1", 100)
        );
        assert_eq!(p.idle_timeout, Duration::from_secs(5));
        assert_eq!(p.request_timeout, Duration::from_secs(300));
        assert_eq!(p.api_key, None);
        // The environment over the file.
        let p = provider(&flags(), &env, Some(user))
            .expect("ok")
            .expect("some");
        assert_eq!(
            (p.model.as_str(), p.base_url.as_str()),
            ("from-env", "http://env.example/v1")
        );
        // Flags over both.
        let f = ModelFlags {
            provider: Some("anthropic".into()),
            model: Some("from-flag".into()),
            base_url: Some("http://flag.example".into()),
            config_path: None,
        };
        let p = provider(&f, &env, Some(user)).expect("ok").expect("some");
        assert_eq!(
            (p.kind, p.model.as_str(), p.base_url.as_str()),
            (ProviderKind::Anthropic, "from-flag", "http://flag.example")
        );
        // max_steps comes from the file.
        let s =
            resolve_from(&flags(), &env_of(&[]), Some((Path::new("/x.toml"), user))).expect("ok");
        assert_eq!(s.max_steps, 7);
        assert_eq!(s.tool_output_budget_tokens, 25_000);
        assert_eq!(s.config_file, Some(PathBuf::from("/x.toml")));
    }

    #[test]
    fn the_provider_is_picked_by_key_then_by_base_url() {
        let both = [("ANTHROPIC_API_KEY", "a"), ("OPENAI_API_KEY", "o")];
        let kind = |f: &ModelFlags, env: &[(&str, &str)], user: Option<&str>| {
            provider(f, env, user).expect("ok").map(|p| p.kind)
        };
        assert_eq!(kind(&flags(), &both, None), Some(ProviderKind::Anthropic));
        assert_eq!(
            kind(
                &flags(),
                &[("OPENAI_BASE_URL", "http://localhost:11434/v1")],
                None
            ),
            Some(ProviderKind::OpenAi)
        );
        let f = ModelFlags {
            base_url: Some("http://localhost:8000/v1".into()),
            ..flags()
        };
        assert_eq!(kind(&f, &[], None), Some(ProviderKind::OpenAi));
        assert_eq!(
            kind(
                &flags(),
                &[],
                Some("[openai]\nbase_url = \"http://vllm:8000/v1\"\n")
            ),
            Some(ProviderKind::OpenAi)
        );
        // Empty values count as unset.
        assert_eq!(kind(&flags(), &[("ANTHROPIC_API_KEY", "")], None), None);
        assert_eq!(kind(&flags(), &[], Some("max_steps = 3\n")), None);
    }

    #[test]
    fn ollama_needs_no_key() {
        let p = provider(
            &flags(),
            &[
                ("HARNESS9_PROVIDER", "openai"),
                ("OPENAI_BASE_URL", "http://localhost:11434/v1"),
                ("HARNESS9_MODEL", "llama3.1"),
            ],
            None,
        )
        .expect("ok")
        .expect("some");
        assert_eq!(
            (p.kind, p.base_url.as_str(), p.model.as_str(), p.api_key),
            (
                ProviderKind::OpenAi,
                "http://localhost:11434/v1",
                "llama3.1",
                None
            )
        );
    }

    #[test]
    fn an_explicit_provider_without_its_key_says_what_to_set() {
        let e = provider(&flags(), &[("HARNESS9_PROVIDER", "anthropic")], None)
            .expect_err("missing key");
        assert_eq!(
            e.to_string(),
            "anthropic is selected (by HARNESS9_PROVIDER) but ANTHROPIC_API_KEY is not set; set ANTHROPIC_API_KEY, or point ANTHROPIC_BASE_URL or --base-url at a server that needs no key"
        );
        let f = ModelFlags {
            provider: Some("OpenAI".into()),
            ..flags()
        };
        let e = provider(&f, &[("ANTHROPIC_API_KEY", "a")], None).expect_err("missing key");
        assert!(matches!(
            e,
            SettingsError::MissingKey {
                key_var: "OPENAI_API_KEY",
                ..
            }
        ));
        let e = provider(&flags(), &[], Some("provider = \"openai\"\n")).expect_err("missing");
        assert!(
            e.to_string()
                .contains("(by provider in /home/u/.config/harness9/config.toml)"),
            "{e}"
        );
    }

    #[test]
    fn unknown_providers_and_bad_urls_are_named() {
        let f = ModelFlags {
            provider: Some("gemini".into()),
            ..flags()
        };
        assert_eq!(
            provider(&f, &[], None).expect_err("bad").to_string(),
            "unknown provider \"gemini\" (from --provider); use \"anthropic\" or \"openai\""
        );
        let e = provider(
            &flags(),
            &[
                ("HARNESS9_PROVIDER", "openai"),
                ("OPENAI_BASE_URL", "localhost:11434"),
            ],
            None,
        )
        .expect_err("bad url");
        assert_eq!(
            e.to_string(),
            "the base URL \"localhost:11434\" (from OPENAI_BASE_URL) must start with http:// or https://; fix OPENAI_BASE_URL"
        );
    }

    #[test]
    fn toml_errors_name_file_line_and_column() {
        let e = provider(
            &flags(),
            &[],
            Some("max_steps = 5\n[openai]\nmodle = \"x\"\n"),
        )
        .expect_err("typo");
        match &e {
            SettingsError::Toml {
                path,
                line,
                column,
                message,
            } => {
                assert_eq!(path, "/home/u/.config/harness9/config.toml");
                assert_eq!((*line, *column), (3, 1));
                assert!(message.contains("unknown field `modle`"), "{message}");
            }
            other => panic!("{other:?}"),
        }
        assert!(e
            .to_string()
            .starts_with("/home/u/.config/harness9/config.toml:3:1: "));
        let e = provider(&flags(), &[], Some("provider = \"gemini\"\n")).expect_err("variant");
        assert!(
            matches!(&e, SettingsError::Toml { line: 1, column: 12, message, .. } if message.contains("unknown variant `gemini`")),
            "{e:?}"
        );
        let e = provider(&flags(), &[], Some("[anthropic]\nmax_tokens = 0\n")).expect_err("zero");
        assert!(matches!(e, SettingsError::Toml { line: 2, .. }), "{e:?}");
        let e = provider(&flags(), &[], Some("max_steps = \n")).expect_err("syntax");
        assert!(matches!(e, SettingsError::Toml { line: 1, .. }), "{e:?}");
    }

    #[test]
    fn prompt_caching_comes_from_the_anthropic_section() {
        let caching = |user: Option<&str>| {
            provider(&flags(), &[("ANTHROPIC_API_KEY", "a")], user)
                .expect("ok")
                .expect("some")
                .prompt_caching
        };
        assert!(caching(None));
        assert!(!caching(Some("[anthropic]\nprompt_caching = false\n")));
        assert!(caching(Some("[anthropic]\nprompt_caching = true\n")));
        // A user file without the key keeps the default.
        assert!(caching(Some("[anthropic]\nmax_tokens = 10\n")));
    }

    #[test]
    fn max_tokens_field_comes_from_the_openai_section() {
        let field = |user: Option<&str>| {
            provider(&flags(), &[("OPENAI_API_KEY", "o")], user)
                .expect("ok")
                .expect("some")
                .max_tokens_field
        };
        assert_eq!(field(None), MaxTokensField::Auto);
        assert_eq!(
            field(Some("[openai]\nmax_tokens_field = \"max_tokens\"\n")),
            MaxTokensField::MaxTokens
        );
        assert_eq!(
            field(Some(
                "[openai]\nmax_tokens_field = \"max_completion_tokens\"\n"
            )),
            MaxTokensField::MaxCompletionTokens
        );
        assert_eq!(
            field(Some("[openai]\nmax_tokens_field = \"auto\"\n")),
            MaxTokensField::Auto
        );
    }

    #[test]
    fn tool_images_comes_from_the_openai_section_and_defaults_to_auto() {
        let images = |user: Option<&str>| {
            provider(&flags(), &[("OPENAI_API_KEY", "o")], user)
                .expect("ok")
                .expect("some")
                .tool_images
        };
        assert_eq!(images(None), None);
        assert_eq!(images(Some("[openai]\nmax_tokens = 10\n")), None);
        assert_eq!(images(Some("[openai]\ntool_images = true\n")), Some(true));
        assert_eq!(images(Some("[openai]\ntool_images = false\n")), Some(false));
        let e = provider(&flags(), &[], Some("[openai]\ntool_images = \"auto\"\n"))
            .expect_err("not a bool");
        assert!(
            matches!(&e, SettingsError::Toml { line: 2, column: 15, message, .. } if message.contains("invalid type")),
            "{e:?}"
        );
    }

    #[test]
    fn a_bad_max_tokens_field_names_file_line_column_and_the_choices() {
        let e = provider(
            &flags(),
            &[],
            Some("[openai]\nmodel = \"o3\"\nmax_tokens_field = \"max_completion\"\n"),
        )
        .expect_err("bad value");
        assert_eq!(
            e.to_string(),
            "/home/u/.config/harness9/config.toml:3:20: unknown variant `max_completion`, expected one of `auto`, `max_tokens`, `max_completion_tokens`; fix it there"
        );
        let e = provider(&flags(), &[], Some("[openai]\nmax_tokens_field = 1\n"))
            .expect_err("wrong type");
        assert!(
            matches!(
                &e,
                SettingsError::Toml {
                    line: 2,
                    column: 20,
                    ..
                }
            ),
            "{e:?}"
        );
        let e = provider(
            &flags(),
            &[],
            Some("[anthropic]\nprompt_caching = \"no\"\n"),
        )
        .expect_err("not a bool");
        assert!(
            matches!(&e, SettingsError::Toml { line: 2, column: 18, message, .. } if message.contains("invalid type")),
            "{e:?}"
        );
    }

    #[test]
    fn a_provider_specific_key_in_the_other_section_is_an_error() {
        let e = provider(
            &flags(),
            &[("ANTHROPIC_API_KEY", "a")],
            Some("[openai]\nmodel = \"m\"\nprompt_caching = false\n"),
        )
        .expect_err("misplaced");
        assert_eq!(
            e.to_string(),
            "/home/u/.config/harness9/config.toml:3:18: prompt_caching belongs under [anthropic], not [openai] (OpenAI-compatible requests carry no cache breakpoints); fix it there"
        );
        let e = provider(
            &flags(),
            &[("OPENAI_API_KEY", "o")],
            Some("[anthropic]\nmax_tokens_field = \"max_tokens\"\n"),
        )
        .expect_err("misplaced");
        assert_eq!(
            e.to_string(),
            "/home/u/.config/harness9/config.toml:2:20: max_tokens_field belongs under [openai], not [anthropic] (Anthropic requests always send max_tokens); fix it there"
        );
        let e = provider(
            &flags(),
            &[("ANTHROPIC_API_KEY", "a")],
            Some("[anthropic]\nmodel = \"m\"\n  tool_images = true\n"),
        )
        .expect_err("misplaced");
        assert_eq!(
            e.to_string(),
            "/home/u/.config/harness9/config.toml:3:17: tool_images belongs under [openai], not [anthropic] (Anthropic tool results always carry their images); fix it there"
        );
    }

    #[test]
    fn only_the_real_official_host_needs_a_key() {
        let needs_key = |url: &str| {
            matches!(
                provider(
                    &flags(),
                    &[("HARNESS9_PROVIDER", "openai"), ("OPENAI_BASE_URL", url)],
                    None
                ),
                Err(SettingsError::MissingKey { .. })
            )
        };
        assert!(needs_key("https://api.openai.com/v1"));
        assert!(needs_key("https://API.OpenAI.com:443/v1"));
        assert!(!needs_key("http://localhost:11434/v1"));
        assert!(!needs_key("https://api.openai.com.evil.example/v1"));
        assert!(!needs_key("https://api.openai.com@evil.example/v1"));
    }

    #[test]
    fn candidate_paths_follow_flag_then_cwd_then_xdg_or_home() {
        let cwd = Path::new("/work/p");
        assert_eq!(
            candidate_paths(&flags(), &env_of(&[("HOME", "/home/u")]), cwd),
            vec![
                PathBuf::from("/work/p/harness9.toml"),
                PathBuf::from("/home/u/.config/harness9/config.toml")
            ]
        );
        assert_eq!(
            candidate_paths(
                &flags(),
                &env_of(&[("HOME", "/home/u"), ("XDG_CONFIG_HOME", "/xdg")]),
                cwd
            )[1],
            PathBuf::from("/xdg/harness9/config.toml")
        );
        let f = ModelFlags {
            config_path: Some("/etc/h9.toml".into()),
            ..flags()
        };
        assert_eq!(
            candidate_paths(&f, &env_of(&[("HOME", "/home/u")]), cwd),
            vec![PathBuf::from("/etc/h9.toml")]
        );
    }

    #[test]
    fn keys_never_show_in_debug() {
        let s = resolve_from(
            &flags(),
            &env_of(&[("OPENAI_API_KEY", "sk-very-secret")]),
            None,
        )
        .expect("ok");
        let d = format!("{s:?}");
        assert!(!d.contains("sk-very-secret"), "{d}");
    }

    #[test]
    fn how_to_configure_mentions_every_route() {
        let t = how_to_configure();
        for needle in [
            "ANTHROPIC_API_KEY",
            "OPENAI_API_KEY",
            "OPENAI_BASE_URL",
            "HARNESS9_PROVIDER=openai OPENAI_BASE_URL=http://localhost:11434/v1 HARNESS9_MODEL=llama3.1",
        ] {
            assert!(t.contains(needle), "{needle}");
        }
        // The user's own file by its path here, never a `~` spelling of one platform's.
        assert!(t.contains("config.toml (a project's ./harness9.toml may not choose it)"));
        assert!(!t.contains("~/.config"), "{t}");
    }

    #[test]
    fn line_col_counts_characters() {
        assert_eq!(line_col("ab\ncdé f", 8), (2, 5));
        assert_eq!(line_col("x", 99), (1, 2));
    }
}
