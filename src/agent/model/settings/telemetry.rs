//! `[telemetry]` of the user's settings: whether spans and metrics are exported over OTLP,
//! where to, and the opt-in to tool arguments and results. Only the user's own file counts: a
//! project's `[telemetry]` could send what a session does to a collector of its choosing, so
//! it is ignored with a warning naming the file and line.

use super::file::{key_line, parse_file, TelemetryExport};
use super::layers::read_layers;
use super::sandbox::push_warning;
use super::{ModelFlags, SettingsError};

/// What the user's `[telemetry]` says (the `OTEL_*` environment overrides it).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct TelemetrySettings {
    /// `export = "otlp"`: traces and metrics to the collector.
    pub otlp: bool,
    /// `endpoint`: the collector's OTLP/HTTP base URL (`/v1/traces` is added).
    pub endpoint: Option<String>,
    /// `record_content = true`: tool arguments and results on the tool spans.
    pub record_content: bool,
}

/// The user's `[telemetry]` (none: off), and a warning when a project's file has one.
pub fn telemetry(
    flags: &ModelFlags,
    warnings: &mut Vec<String>,
) -> Result<TelemetrySettings, SettingsError> {
    let layers = read_layers(flags)?;
    if let Some((path, text)) = &layers.project {
        let name = path.display().to_string();
        let project = parse_file(&name, text)?.telemetry;
        if project.export.is_some()
            || project.endpoint.is_some()
            || project.record_content.is_some()
        {
            let key = if project.endpoint.is_some() {
                "endpoint"
            } else if project.export.is_some() {
                "export"
            } else {
                "record_content"
            };
            let line = key_line(text, "telemetry", key);
            push_warning(
                warnings,
                Some(format!(
                    "{name}:{line}: [telemetry] is ignored in a project's settings (only your own file may export what a session does); set it in {}",
                    super::layers::own_settings(super::layers::user_settings_file(flags).as_deref())
                )),
            );
        }
    }
    let Some((path, text)) = &layers.user else {
        return Ok(TelemetrySettings::default());
    };
    let t = parse_file(&path.display().to_string(), text)?.telemetry;
    Ok(TelemetrySettings {
        otlp: t.export == Some(TelemetryExport::Otlp),
        endpoint: t.endpoint,
        record_content: t.record_content.unwrap_or(false),
    })
}
