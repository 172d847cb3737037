//! The settings files' TOML: the sections (`[anthropic]`, `[openai]`, `[mcp]`,
//! `[permissions]`), the user/project key-by-key merge, and parsing with file:line:column
//! errors.

use std::num::{NonZeroU32, NonZeroU64, NonZeroUsize};

use serde::Deserialize;
use toml::Spanned;

use super::super::config::MaxTokensField;
use super::{Price, SettingsError};

#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub(super) enum FileProvider {
    Anthropic,
    Openai,
}

#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct FileSettings {
    pub(super) provider: Option<FileProvider>,
    pub(super) max_steps: Option<NonZeroU32>,
    pub(super) tool_output_budget_tokens: Option<NonZeroUsize>,
    #[serde(default)]
    pub(super) anthropic: Section,
    #[serde(default)]
    pub(super) openai: Section,
    #[serde(default)]
    pub(super) mcp: McpSection,
    #[serde(default)]
    pub(super) permissions: PermissionsSection,
    #[serde(default)]
    pub(super) prices: std::collections::BTreeMap<String, Price>,
    #[serde(default)]
    pub(super) context_windows: std::collections::BTreeMap<String, u64>,
    pub(super) compact_at: Option<f64>,
    #[serde(default)]
    pub(super) tool_search: ToolSearchSection,
    #[serde(default)]
    pub(super) telemetry: TelemetrySection,
    #[serde(default)]
    pub(super) enterprise_idp: EnterpriseIdpSection,
}

/// `[enterprise_idp]`: the enterprise identity provider of the `enterprise` OAuth grant (the
/// user's own file only).
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct EnterpriseIdpSection {
    /// Its issuer URL (OpenID discovery).
    pub(super) issuer: Option<String>,
    /// harness9's client id there.
    pub(super) client_id: Option<String>,
    /// The variable holding that client's secret, for a confidential client.
    pub(super) client_secret_env: Option<String>,
    /// The SSO login's scopes (`openid` is always asked for).
    pub(super) scopes: Option<Vec<String>>,
    /// The login redirect's loopback port.
    pub(super) callback_port: Option<u16>,
    /// An ID token another SSO tool keeps in this file, instead of harness9's login.
    pub(super) id_token_file: Option<String>,
}

impl EnterpriseIdpSection {
    /// Whether the section says anything.
    pub(super) fn is_set(&self) -> bool {
        self.issuer.is_some()
            || self.client_id.is_some()
            || self.client_secret_env.is_some()
            || self.scopes.is_some()
            || self.callback_port.is_some()
            || self.id_token_file.is_some()
    }
}

/// `[telemetry]`: OpenTelemetry export (the user's own file only).
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct TelemetrySection {
    /// `"otlp"` or `"none"`.
    pub(super) export: Option<TelemetryExport>,
    /// The collector's OTLP/HTTP base URL.
    pub(super) endpoint: Option<String>,
    /// Tool arguments and results on the tool spans (opt-in).
    pub(super) record_content: Option<bool>,
}

/// `[telemetry] export`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub(super) enum TelemetryExport {
    Otlp,
    None,
}

/// `[tool_search]`: when MCP tools are deferred behind the search tool.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct ToolSearchSection {
    pub(super) mode: Option<crate::toolsearch::Mode>,
    pub(super) share: Option<Spanned<f64>>,
    pub(super) pinned: Option<Vec<String>>,
}

impl ToolSearchSection {
    /// The project's keys over the user's; pins add up.
    pub(super) fn overlay(self, top: ToolSearchSection) -> ToolSearchSection {
        let pinned = match (self.pinned, top.pinned) {
            (Some(mut a), Some(b)) => {
                a.extend(b);
                Some(a)
            }
            (a, b) => b.or(a),
        };
        ToolSearchSection {
            mode: top.mode.or(self.mode),
            share: top.share.or(self.share),
            pinned,
        }
    }
}

impl FileSettings {
    /// These (the user's) settings with `top` (the project's) over them, key by key; `[mcp]`
    /// is merged by [`mcp_sandbox_default`] (only tighter), so the user's stays here.
    pub(super) fn under(self, top: FileSettings) -> FileSettings {
        let mut prices = self.prices;
        prices.extend(top.prices);
        let mut context_windows = self.context_windows;
        context_windows.extend(top.context_windows);
        FileSettings {
            provider: top.provider.or(self.provider),
            max_steps: top.max_steps.or(self.max_steps),
            tool_output_budget_tokens: top
                .tool_output_budget_tokens
                .or(self.tool_output_budget_tokens),
            anthropic: self.anthropic.overlay(top.anthropic),
            openai: self.openai.overlay(top.openai),
            // `start` is no safety setting: the project's wins.
            mcp: McpSection {
                start: top.mcp.start.or(self.mcp.start),
                ..self.mcp
            },
            permissions: self.permissions,
            prices,
            context_windows,
            compact_at: top.compact_at.or(self.compact_at),
            tool_search: self.tool_search.overlay(top.tool_search),
            // Where telemetry goes is the user's alone (`settings::telemetry`).
            telemetry: self.telemetry,
            // Where the user's ID token goes too (`settings::enterprise_idp`).
            enterprise_idp: self.enterprise_idp,
        }
    }
}

/// `[mcp]`: defaults for the servers of `.mcp.json`.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct McpSection {
    /// The sandbox of every stdio server whose entry has no `"sandbox"` of its own.
    pub(super) sandbox: Option<harness9_base::sandbox_field::SandboxField>,
    /// How a server whose tool list is cached starts: `"eager"` or `"lazy"`.
    pub(super) start: Option<FileStart>,
}

/// `[mcp] start`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub(super) enum FileStart {
    Eager,
    Lazy,
}

/// `[permissions]`: what the agent's own tools may do.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct PermissionsSection {
    /// The sandbox of the built-in `bash`; merged by [`shell_sandbox`] (a project only
    /// tightens).
    pub(super) shell: Option<ShellSandbox>,
    /// Tools that run without asking (see `crate::permissions`).
    pub(super) allow: Option<Vec<Spanned<String>>>,
    /// Tools that ask every time.
    pub(super) ask: Option<Vec<Spanned<String>>>,
    /// Tools that never run.
    pub(super) deny: Option<Vec<Spanned<String>>>,
}

pub(super) type ShellSandbox = crate::builtins::shell_sandbox::ShellSandbox;

#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct Section {
    pub(super) model: Option<String>,
    pub(super) base_url: Option<String>,
    pub(super) max_tokens: Option<NonZeroU32>,
    pub(super) max_retries: Option<u32>,
    pub(super) request_timeout_secs: Option<NonZeroU64>,
    pub(super) idle_timeout_secs: Option<NonZeroU64>,
    /// Anthropic only (rejected under `[openai]` by [`parse_file`]).
    pub(super) prompt_caching: Option<Spanned<bool>>,
    /// OpenAI only (rejected under `[anthropic]` by [`parse_file`]).
    pub(super) max_tokens_field: Option<Spanned<MaxTokensField>>,
    /// OpenAI only (rejected under `[anthropic]` by [`parse_file`]); absent = by host.
    pub(super) tool_images: Option<Spanned<bool>>,
    /// Models a server's sampling hints may pick besides `model`.
    pub(super) sampling_models: Option<Vec<String>>,
}

impl Section {
    pub(super) fn overlay(self, top: Section) -> Section {
        Section {
            model: top.model.or(self.model),
            base_url: top.base_url.or(self.base_url),
            max_tokens: top.max_tokens.or(self.max_tokens),
            max_retries: top.max_retries.or(self.max_retries),
            request_timeout_secs: top.request_timeout_secs.or(self.request_timeout_secs),
            idle_timeout_secs: top.idle_timeout_secs.or(self.idle_timeout_secs),
            prompt_caching: top.prompt_caching.or(self.prompt_caching),
            max_tokens_field: top.max_tokens_field.or(self.max_tokens_field),
            tool_images: top.tool_images.or(self.tool_images),
            sampling_models: top.sampling_models.or(self.sampling_models),
        }
    }
}

pub(super) fn parse_file(path: &str, text: &str) -> Result<FileSettings, SettingsError> {
    let at = |start: usize, message: String| {
        let (line, column) = line_col(text, start);
        SettingsError::Toml {
            path: path.to_owned(),
            line,
            column,
            message,
        }
    };
    let file: FileSettings = toml::from_str(text).map_err(|e| {
        at(
            e.span().map_or(0, |span| span.start),
            e.message().trim().to_owned(),
        )
    })?;
    // The sections share one shape; a key that only one provider's wire format has is an
    // error in the other section, not silently ignored.
    if let Some(v) = &file.openai.prompt_caching {
        return Err(at(
            v.span().start,
            "prompt_caching belongs under [anthropic], not [openai] (OpenAI-compatible requests carry no cache breakpoints)".to_owned(),
        ));
    }
    if let Some(v) = &file.anthropic.max_tokens_field {
        return Err(at(
            v.span().start,
            "max_tokens_field belongs under [openai], not [anthropic] (Anthropic requests always send max_tokens)".to_owned(),
        ));
    }
    if let Some(v) = &file.anthropic.tool_images {
        return Err(at(
            v.span().start,
            "tool_images belongs under [openai], not [anthropic] (Anthropic tool results always carry their images)".to_owned(),
        ));
    }
    if let Some(share) = &file.tool_search.share {
        if !(share.get_ref().is_finite() && *share.get_ref() > 0.0 && *share.get_ref() <= 1.0) {
            return Err(at(
                share.span().start,
                "share under [tool_search] must be a number above 0 and at most 1 (e.g. 0.1 for 10% of the context window)".to_owned(),
            ));
        }
    }
    Ok(file)
}

/// 1-based line and column (in characters) of a byte offset.
pub(super) fn line_col(text: &str, offset: usize) -> (usize, usize) {
    let mut at = offset.min(text.len());
    while !text.is_char_boundary(at) {
        at -= 1;
    }
    let before = &text[..at];
    let line = before.matches('\n').count() + 1;
    let start = before.rfind('\n').map_or(0, |i| i + 1);
    (line, before[start..].chars().count() + 1)
}

/// The 1-based line of `key` in table `table` of TOML `text` (`[table]` then `key = ...`, or a
/// dotted `table.key = ...`); 1 when not found.
pub(super) fn key_line(text: &str, table: &str, key: &str) -> usize {
    let mut current = String::new();
    let starts = |l: &str, k: &str| {
        l.strip_prefix(k)
            .is_some_and(|rest| rest.trim_start().starts_with('='))
    };
    for (i, line) in text.lines().enumerate() {
        let l = line.trim();
        if l.starts_with('[') {
            current = l.trim_matches(['[', ']']).trim().to_owned();
            continue;
        }
        if (current == table && starts(l, key))
            || (current.is_empty() && starts(l, &format!("{table}.{key}")))
        {
            return i + 1;
        }
    }
    1
}
