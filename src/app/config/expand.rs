//! `${VAR}`, `${VAR:-default}` and `${input:ID}` expansion of a config's values.

use super::formats::input_var;

/// Expands `${VAR}` and `${VAR:-default}` using `lookup`.
pub fn expand(s: &str, lookup: &dyn Fn(&str) -> Option<String>) -> Result<String, String> {
    let mut out = String::with_capacity(s.len());
    let mut rest = s;
    while let Some(i) = rest.find("${") {
        out.push_str(&rest[..i]);
        let after = &rest[i + 2..];
        let Some(end) = after.find('}') else {
            return Err(format!("unterminated \"${{\" in {s:?}"));
        };
        let inner = &after[..end];
        let (var, default) = match inner.split_once(":-") {
            Some((v, d)) => (v, Some(d)),
            None => (inner, None),
        };
        // `${input:id}` (VS Code's inputs) is looked up like a variable of that name.
        let name = var.strip_prefix("input:").unwrap_or(var);
        let valid = !name.is_empty()
            && name
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-' || c == '.')
            && (var.starts_with("input:") || !name.contains(['-', '.']));
        if !valid {
            return Err(format!(
                "\"${{{inner}}}\" is not a valid variable reference"
            ));
        }
        match (
            lookup(var).filter(|v| !v.is_empty() || default.is_none()),
            default,
        ) {
            (Some(v), _) => out.push_str(&v),
            (None, Some(d)) => out.push_str(d),
            (None, None) => {
                return Err(match var.strip_prefix("input:") {
                    Some(id) => format!(
                        "input {id:?} has no value; set the environment variable {} (the interactive session asks for it once)",
                        input_var(id)
                    ),
                    None => format!(
                        "environment variable {var} is not set; set it or write ${{{var}:-default}}"
                    ),
                })
            }
        }
        rest = &after[end + 1..];
    }
    out.push_str(rest);
    Ok(out)
}
