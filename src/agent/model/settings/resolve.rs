//! Provider resolution: flags > environment > the settings files (the project's over the
//! user's) > the shipped defaults, with the base URL checks (the official endpoints need a
//! key). A project's file never decides where the conversation goes: its `provider` and
//! `base_url`s are ignored with a warning naming the file and line ([`project_endpoint`]).

use std::num::{NonZeroU32, NonZeroU64, NonZeroUsize};
use std::path::{Path, PathBuf};
use std::time::Duration;

use toml::Spanned;

use super::super::config::{url_host, MaxTokensField, ProviderConfig, ProviderKind};
use super::file::{key_line, parse_file, FileProvider, FileSettings, Section};
use super::layers::read_layers;
use super::{ModelFlags, Settings, SettingsError, DEFAULTS, DEFAULTS_NAME};

/// Resolves the settings from the process environment, the user's file, the project's file
/// (merged over the user's) and the defaults.
pub fn resolve(flags: &ModelFlags) -> Result<Settings, SettingsError> {
    let env = |k: &str| std::env::var(k).ok();
    let layers = read_layers(flags)?;
    resolve_layers(
        flags,
        &env,
        layers.user.as_ref().map(|(p, t)| (p.as_path(), t.as_str())),
        layers
            .project
            .as_ref()
            .map(|(p, t)| (p.as_path(), t.as_str())),
    )
}

/// The keys of the settings files that say where the conversation goes (which provider,
/// which endpoint), as (table, key): only the user's own file, the flags and the environment
/// may set them. A repository's `./harness9.toml` setting them would send the prompts and
/// every tool result to a host of its choosing.
const ENDPOINT_KEYS: [(&str, &str); 3] = [
    ("", "provider"),
    ("anthropic", "base_url"),
    ("openai", "base_url"),
];

/// Which of [`ENDPOINT_KEYS`] `file` sets.
fn endpoint_keys(file: &FileSettings) -> Vec<(&'static str, &'static str)> {
    let set = [
        file.provider.is_some(),
        file.anthropic.base_url.is_some(),
        file.openai.base_url.is_some(),
    ];
    ENDPOINT_KEYS
        .iter()
        .zip(set)
        .filter_map(|(k, set)| set.then_some(*k))
        .collect()
}

/// A project's settings without the keys that say where the conversation goes.
fn without_endpoint(mut file: FileSettings) -> FileSettings {
    file.provider = None;
    file.anthropic.base_url = None;
    file.openai.base_url = None;
    file
}

/// The warnings of what a project's `./harness9.toml` may not set (its `provider` and
/// `base_url`s, ignored by [`resolve`]), each naming the file and line.
pub fn project_endpoint(
    flags: &ModelFlags,
    warnings: &mut Vec<String>,
) -> Result<(), SettingsError> {
    let layers = read_layers(flags)?;
    if let Some((path, text)) = &layers.project {
        let own = super::layers::own_settings(super::layers::user_settings_file(flags).as_deref());
        for w in endpoint_warnings(&path.display().to_string(), text, &own)? {
            super::sandbox::push_warning(warnings, Some(w));
        }
    }
    Ok(())
}

/// [`project_endpoint`] for a project file `name` with `text`; `own` names the user's own
/// settings file ([`super::layers::own_settings`]).
pub(super) fn endpoint_warnings(
    name: &str,
    text: &str,
    own: &str,
) -> Result<Vec<String>, SettingsError> {
    let file = parse_file(name, text)?;
    Ok(endpoint_keys(&file)
        .into_iter()
        .map(|(table, key)| {
            let line = key_line(text, table, key);
            let shown = if table.is_empty() {
                key.to_owned()
            } else {
                format!("[{table}] {key}")
            };
            format!(
                "{name}:{line}: {shown} is ignored: a project's settings file may not choose where the conversation goes (the prompts and every tool result); if you trust it, pass --provider/--base-url or set it in {own}"
            )
        })
        .collect())
}

/// [`resolve_from`] with a file of each kind: the project's settings (`./harness9.toml`)
/// merged over the user's, key by key, without the project's `provider` and `base_url`s
/// (see [`project_endpoint`]).
pub fn resolve_layers(
    flags: &ModelFlags,
    env: &dyn Fn(&str) -> Option<String>,
    user: Option<(&Path, &str)>,
    project: Option<(&Path, &str)>,
) -> Result<Settings, SettingsError> {
    let parsed = |f: Option<(&Path, &str)>| -> Result<_, SettingsError> {
        f.map(|(p, t)| Ok((parse_file(&p.display().to_string(), t)?, p.to_path_buf())))
            .transpose()
    };
    let user = parsed(user)?;
    let project = parsed(project)?.map(|(f, p)| (without_endpoint(f), p));
    let (file, path) = match (user, project) {
        (None, None) => (FileSettings::default(), None),
        (Some((u, p)), None) => (u, Some(p)),
        (None, Some((f, p))) => (f, Some(p)),
        (Some((u, _)), Some((f, p))) => (u.under(f), Some(p)),
    };
    resolve_parsed(flags, env, file, path)
}

/// The pure core of [`resolve`]: `env` looks up a variable (empty counts as unset), `user` is
/// the user's settings file (path, text), if any.
pub fn resolve_from(
    flags: &ModelFlags,
    env: &dyn Fn(&str) -> Option<String>,
    user: Option<(&Path, &str)>,
) -> Result<Settings, SettingsError> {
    let (file, path) = match user {
        Some((path, text)) => (
            parse_file(&path.display().to_string(), text)?,
            Some(path.to_path_buf()),
        ),
        None => (FileSettings::default(), None),
    };
    // A `./harness9.toml` comes with the repository: it does not choose the endpoint.
    let project = flags.config_path.is_none()
        && path
            .as_ref()
            .is_some_and(|p| p.file_name().is_some_and(|n| n == "harness9.toml"));
    let file = if project {
        without_endpoint(file)
    } else {
        file
    };
    resolve_parsed(flags, env, file, path)
}

/// The core of [`resolve_from`] and [`resolve_layers`]: `user_file` is the settings files
/// merged (`user_path` the file named in messages), the project's endpoint keys already gone.
fn resolve_parsed(
    flags: &ModelFlags,
    env: &dyn Fn(&str) -> Option<String>,
    user_file: FileSettings,
    user_path: Option<PathBuf>,
) -> Result<Settings, SettingsError> {
    let given = Given { flags, env };
    let defaults = parse_file(DEFAULTS_NAME, DEFAULTS)?;
    let user_name = user_path
        .as_ref()
        .map(|p| p.display().to_string())
        .unwrap_or_default();
    let chosen = choose_provider(&given, &user_file, &user_name)?;
    let mut settings = general(&defaults, &user_file, user_path);
    let Some((kind, origin)) = chosen else {
        return Ok(settings);
    };
    let (base, top) = match kind {
        ProviderKind::Anthropic => (defaults.anthropic, user_file.anthropic),
        ProviderKind::OpenAi => (defaults.openai, user_file.openai),
    };
    let section = base.overlay(top);
    let sampling_models = section.sampling_models.clone().unwrap_or_default();
    settings.provider = Some(provider_config(&given, kind, origin, section)?);
    settings.sampling_models = sampling_models;
    Ok(settings)
}

/// What the flags and the environment give, each value trimmed (an empty one is absent).
struct Given<'a> {
    flags: &'a ModelFlags,
    env: &'a dyn Fn(&str) -> Option<String>,
}

impl Given<'_> {
    fn env(&self, k: &str) -> Option<String> {
        (self.env)(k)
            .map(|v| v.trim().to_owned())
            .filter(|v| !v.is_empty())
    }

    fn flag(v: &Option<String>) -> Option<String> {
        v.as_deref()
            .map(str::trim)
            .filter(|v| !v.is_empty())
            .map(str::to_owned)
    }
}

/// Every setting but the provider's: the user's over the defaults (the user's prices and
/// context windows replace the shipped ones model by model).
fn general(
    defaults: &FileSettings,
    user_file: &FileSettings,
    user_path: Option<PathBuf>,
) -> Settings {
    let max_steps = user_file
        .max_steps
        .or(defaults.max_steps)
        .map_or(50, NonZeroU32::get);
    let tool_output_budget_tokens = user_file
        .tool_output_budget_tokens
        .or(defaults.tool_output_budget_tokens)
        .map_or(25_000, NonZeroUsize::get);
    let mut prices = defaults.prices.clone();
    prices.extend(user_file.prices.clone());
    let mut context_windows = defaults.context_windows.clone();
    context_windows.extend(user_file.context_windows.clone());
    let compact_at = user_file
        .compact_at
        .or(defaults.compact_at)
        .filter(|f| (0.0..=1.0).contains(f))
        .unwrap_or(0.8);
    let mcp_start = match user_file.mcp.start.or(defaults.mcp.start) {
        Some(super::file::FileStart::Lazy) => harness9_actors::tool_cache::StartMode::Lazy,
        _ => harness9_actors::tool_cache::StartMode::Eager,
    };
    let t = defaults
        .tool_search
        .clone()
        .overlay(user_file.tool_search.clone());
    let d = crate::toolsearch::ToolSearchSettings::default();
    let tool_search = crate::toolsearch::ToolSearchSettings {
        mode: t.mode.unwrap_or(d.mode),
        share: t.share.map_or(d.share, Spanned::into_inner),
        pinned: t.pinned.unwrap_or_default(),
    };
    Settings {
        provider: None,
        max_steps,
        tool_output_budget_tokens,
        config_file: user_path,
        prices,
        context_windows,
        compact_at,
        sampling_models: Vec::new(),
        mcp_start,
        tool_search,
    }
}

/// The provider and why it is the one: `--provider`, `HARNESS9_PROVIDER`, the file's
/// `provider`, else a key, then an overridden base URL; `None` when nothing names one.
fn choose_provider(
    given: &Given<'_>,
    user_file: &FileSettings,
    user_name: &str,
) -> Result<Option<(ProviderKind, String)>, SettingsError> {
    let named = |value: String, origin: &str| {
        ProviderKind::parse(&value).ok_or(SettingsError::UnknownProvider {
            value,
            origin: origin.to_owned(),
        })
    };
    if let Some(p) = Given::flag(&given.flags.provider) {
        return Ok(Some((named(p, "--provider")?, "by --provider".to_owned())));
    }
    if let Some(p) = given.env("HARNESS9_PROVIDER") {
        return Ok(Some((
            named(p, "HARNESS9_PROVIDER")?,
            "by HARNESS9_PROVIDER".to_owned(),
        )));
    }
    if let Some(p) = user_file.provider {
        let kind = match p {
            FileProvider::Anthropic => ProviderKind::Anthropic,
            FileProvider::Openai => ProviderKind::OpenAi,
        };
        return Ok(Some((kind, format!("by provider in {user_name}"))));
    }
    // Nothing names a provider: pick by key, then by an overridden base URL.
    let by = |kind: ProviderKind, why: String| Some((kind, why));
    Ok(if given.env("ANTHROPIC_API_KEY").is_some() {
        by(ProviderKind::Anthropic, "ANTHROPIC_API_KEY is set".into())
    } else if given.env("OPENAI_API_KEY").is_some() {
        by(ProviderKind::OpenAi, "OPENAI_API_KEY is set".into())
    } else if given.env("OPENAI_BASE_URL").is_some() {
        by(ProviderKind::OpenAi, "OPENAI_BASE_URL is set".into())
    } else if given.env("ANTHROPIC_BASE_URL").is_some() {
        by(ProviderKind::Anthropic, "ANTHROPIC_BASE_URL is set".into())
    } else if Given::flag(&given.flags.base_url).is_some() {
        by(ProviderKind::OpenAi, "--base-url is given".into())
    } else if user_file.openai.base_url.is_some() {
        by(
            ProviderKind::OpenAi,
            format!("[openai] base_url in {user_name}"),
        )
    } else if user_file.anthropic.base_url.is_some() {
        by(
            ProviderKind::Anthropic,
            format!("[anthropic] base_url in {user_name}"),
        )
    } else {
        None
    })
}

/// The chosen provider's configuration from its `section` (the defaults' and the files'
/// merged), the flags and the environment: the model, the base URL (checked), the key (the
/// official endpoints need one).
fn provider_config(
    given: &Given<'_>,
    kind: ProviderKind,
    origin: String,
    section: Section,
) -> Result<ProviderConfig, SettingsError> {
    let model = Given::flag(&given.flags.model)
        .or_else(|| given.env("HARNESS9_MODEL"))
        .or(section.model)
        .ok_or_else(|| {
            SettingsError::Invalid(format!(
                "no model is set for {kind}; pass --model, set HARNESS9_MODEL, or write model under [{kind}] in harness9.toml"
            ))
        })?;
    let (base_url, url_origin) = if let Some(u) = Given::flag(&given.flags.base_url) {
        (u, "--base-url".to_owned())
    } else if let Some(u) = given.env(kind.base_url_var()) {
        (u, kind.base_url_var().to_owned())
    } else if let Some(u) = section.base_url {
        (u, format!("[{kind}] base_url"))
    } else {
        (kind.default_base_url().to_owned(), "the default".to_owned())
    };
    let base_url = base_url.trim_end_matches('/').to_owned();
    if !(base_url.starts_with("http://") || base_url.starts_with("https://")) {
        return Err(SettingsError::Invalid(format!(
            "the base URL \"{base_url}\" (from {url_origin}) must start with http:// or https://; fix {url_origin}"
        )));
    }
    let api_key = given.env(kind.key_var());
    if api_key.is_none() && is_official(kind, &base_url) {
        return Err(SettingsError::MissingKey {
            provider: kind.name(),
            origin,
            key_var: kind.key_var(),
            base_url_var: kind.base_url_var(),
        });
    }
    let secs = |v: Option<NonZeroU64>, d: u64| Duration::from_secs(v.map_or(d, NonZeroU64::get));
    Ok(ProviderConfig {
        kind,
        base_url,
        api_key,
        model,
        max_tokens: section.max_tokens.map_or(8192, NonZeroU32::get),
        max_retries: section.max_retries.unwrap_or(3),
        request_timeout: secs(section.request_timeout_secs, 300),
        idle_timeout: secs(section.idle_timeout_secs, 120),
        prompt_caching: section.prompt_caching.is_none_or(Spanned::into_inner),
        max_tokens_field: section
            .max_tokens_field
            .map_or(MaxTokensField::Auto, Spanned::into_inner),
        tool_images: section.tool_images.map(Spanned::into_inner),
    })
}

/// Whether `url` is the provider's own endpoint (which needs a key).
fn is_official(kind: ProviderKind, url: &str) -> bool {
    let official = match kind {
        ProviderKind::Anthropic => "api.anthropic.com",
        ProviderKind::OpenAi => "api.openai.com",
    };
    url_host(url).as_deref() == Some(official)
}
