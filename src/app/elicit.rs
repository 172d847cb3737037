//! An elicitation's requested schema as form fields, and the checks an answer must pass before
//! it is sent: shared by the TUI's form and the headless answers (`--elicitation-answers`).
//! The spec allows a flat object of primitives: strings (with `format` email, uri, date,
//! date-time and length bounds), numbers and integers (with bounds), booleans, single-select
//! enums (`enum` with `enumNames`, or `oneOf` of `const`/`title`) and multi-select ones
//! (`array` of such `items`, with `minItems`/`maxItems`).

use serde_json::{Map, Value};

/// What a field takes.
#[derive(Debug, Clone, PartialEq)]
pub enum FieldKind {
    /// Text, with an optional `format` and length bounds.
    Text {
        /// `email`, `uri`, `date` or `date-time` (others are not checked).
        format: Option<String>,
        /// `minLength`.
        min: Option<u64>,
        /// `maxLength`.
        max: Option<u64>,
    },
    /// A number (`integer` when whole numbers only), with bounds.
    Number {
        /// `type: integer`.
        integer: bool,
        /// `minimum`.
        min: Option<f64>,
        /// `maximum`.
        max: Option<f64>,
    },
    /// `true` or `false`.
    Boolean,
    /// One of `options` (value, label).
    Choice(Vec<(String, String)>),
    /// Any of `options` (value, label), within the item bounds.
    Multi {
        /// The values and their labels.
        options: Vec<(String, String)>,
        /// `minItems`.
        min: Option<u64>,
        /// `maxItems`.
        max: Option<u64>,
    },
}

/// One field of the form.
#[derive(Debug, Clone, PartialEq)]
pub struct Field {
    /// The property's name (the key in `content`).
    pub name: String,
    /// `title`, else the name.
    pub title: String,
    /// `description`.
    pub description: Option<String>,
    /// What it takes.
    pub kind: FieldKind,
    /// In the schema's `required`.
    pub required: bool,
    /// `default`, when it fits the kind.
    pub default: Option<Value>,
}

/// The options of an enum schema: `oneOf`/`anyOf` of `{const, title}`, else `enum` with
/// `enumNames` as labels.
fn options(schema: &Value) -> Option<Vec<(String, String)>> {
    for key in ["oneOf", "anyOf"] {
        if let Some(list) = schema.get(key).and_then(Value::as_array) {
            let opts: Vec<_> = list
                .iter()
                .filter_map(|o| {
                    let v = o.get("const").and_then(Value::as_str)?;
                    let label = o.get("title").and_then(Value::as_str).unwrap_or(v);
                    Some((v.to_owned(), label.to_owned()))
                })
                .collect();
            return Some(opts);
        }
    }
    let values = schema.get("enum").and_then(Value::as_array)?;
    let names = schema.get("enumNames").and_then(Value::as_array);
    Some(
        values
            .iter()
            .enumerate()
            .filter_map(|(i, v)| {
                let v = v.as_str()?;
                let label = names
                    .and_then(|n| n.get(i))
                    .and_then(Value::as_str)
                    .unwrap_or(v);
                Some((v.to_owned(), label.to_owned()))
            })
            .collect(),
    )
}

/// The form of an elicitation's `requestedSchema`: required fields first, then the others,
/// each group by name (a parsed JSON object does not keep the server's order).
pub fn fields(schema: Option<&Value>) -> Vec<Field> {
    let Some(schema) = schema else {
        return Vec::new();
    };
    let required: Vec<&str> = schema
        .get("required")
        .and_then(Value::as_array)
        .map(|r| r.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default();
    let Some(props) = schema.get("properties").and_then(Value::as_object) else {
        return Vec::new();
    };
    let u = |s: &Value, k: &str| s.get(k).and_then(Value::as_u64);
    let f = |s: &Value, k: &str| s.get(k).and_then(Value::as_f64);
    let mut out: Vec<Field> = props
        .iter()
        .map(|(name, p)| {
            let ty = p.get("type").and_then(Value::as_str).unwrap_or("string");
            let kind = match ty {
                "boolean" => FieldKind::Boolean,
                "number" | "integer" => FieldKind::Number {
                    integer: ty == "integer",
                    min: f(p, "minimum"),
                    max: f(p, "maximum"),
                },
                "array" => FieldKind::Multi {
                    options: p.get("items").and_then(options).unwrap_or_default(),
                    min: u(p, "minItems"),
                    max: u(p, "maxItems"),
                },
                _ => match options(p) {
                    Some(opts) => FieldKind::Choice(opts),
                    None => FieldKind::Text {
                        format: p.get("format").and_then(Value::as_str).map(str::to_owned),
                        min: u(p, "minLength"),
                        max: u(p, "maxLength"),
                    },
                },
            };
            let mut field = Field {
                name: name.clone(),
                title: p
                    .get("title")
                    .and_then(Value::as_str)
                    .unwrap_or(name)
                    .to_owned(),
                description: p
                    .get("description")
                    .and_then(Value::as_str)
                    .map(str::to_owned),
                kind,
                required: required.contains(&name.as_str()),
                default: None,
            };
            field.default = p
                .get("default")
                .filter(|d| check(&field, d).is_ok())
                .cloned();
            field
        })
        .collect();
    out.sort_by_key(|f| !f.required);
    out
}

fn is_date(s: &str) -> bool {
    let b = s.as_bytes();
    b.len() == 10
        && b[4] == b'-'
        && b[7] == b'-'
        && b.iter()
            .enumerate()
            .all(|(i, c)| i == 4 || i == 7 || c.is_ascii_digit())
}

fn format_ok(format: &str, s: &str) -> bool {
    match format {
        "email" => s.split_once('@').is_some_and(|(a, b)| {
            !a.is_empty() && b.contains('.') && !s.contains(char::is_whitespace)
        }),
        "uri" => s.split_once(':').is_some_and(|(scheme, rest)| {
            !scheme.is_empty()
                && scheme
                    .chars()
                    .all(|c| c.is_ascii_alphanumeric() || "+.-".contains(c))
                && !rest.is_empty()
        }),
        "date" => is_date(s),
        "date-time" => s.len() > 11 && is_date(&s[..10]) && matches!(&s[10..11], "T" | "t" | " "),
        _ => true,
    }
}

/// Whether `value` fits `field`; else what is wrong, for the user.
pub fn check(field: &Field, value: &Value) -> Result<(), String> {
    match (&field.kind, value) {
        (FieldKind::Text { format, min, max }, Value::String(s)) => {
            let n = s.chars().count() as u64;
            if min.is_some_and(|m| n < m) {
                return Err(format!("at least {} characters", min.unwrap_or(0)));
            }
            if max.is_some_and(|m| n > m) {
                return Err(format!("at most {} characters", max.unwrap_or(0)));
            }
            match format {
                Some(f) if !format_ok(f, s) => Err(format!("not a valid {f}")),
                _ => Ok(()),
            }
        }
        (FieldKind::Number { integer, min, max }, Value::Number(n)) => {
            let x = n.as_f64().unwrap_or(f64::NAN);
            if *integer && !(n.is_i64() || n.is_u64()) {
                return Err("a whole number".to_owned());
            }
            if min.is_some_and(|m| x < m) || max.is_some_and(|m| x > m) {
                return Err(match (min, max) {
                    (Some(a), Some(b)) => format!("between {a} and {b}"),
                    (Some(a), None) => format!("at least {a}"),
                    (None, Some(b)) => format!("at most {b}"),
                    (None, None) => "a number".to_owned(),
                });
            }
            Ok(())
        }
        (FieldKind::Boolean, Value::Bool(_)) => Ok(()),
        (FieldKind::Choice(opts), Value::String(s)) if opts.iter().any(|(v, _)| v == s) => Ok(()),
        (FieldKind::Multi { options, min, max }, Value::Array(items)) => {
            let all_known = items.iter().all(|i| {
                i.as_str()
                    .is_some_and(|s| options.iter().any(|(v, _)| v == s))
            });
            if !all_known {
                return Err("an option that is not offered".to_owned());
            }
            let n = items.len() as u64;
            if min.is_some_and(|m| n < m) {
                return Err(format!("choose at least {}", min.unwrap_or(0)));
            }
            if max.is_some_and(|m| n > m) {
                return Err(format!("choose at most {}", max.unwrap_or(0)));
            }
            Ok(())
        }
        (FieldKind::Choice(_), _) => Err("one of the options".to_owned()),
        (FieldKind::Text { .. }, _) => Err("text".to_owned()),
        (FieldKind::Number { .. }, _) => Err("a number".to_owned()),
        (FieldKind::Boolean, _) => Err("true or false".to_owned()),
        (FieldKind::Multi { .. }, _) => Err("a list of options".to_owned()),
    }
}

/// Checks a whole answer: every required field present, every present one valid. The first
/// problem names its field.
pub fn validate(fields: &[Field], content: &Map<String, Value>) -> Result<(), String> {
    for f in fields {
        match content.get(&f.name) {
            None if f.required => return Err(format!("{} is required", f.title)),
            None => {}
            Some(v) => check(f, v).map_err(|e| format!("{}: {e}", f.title))?,
        }
    }
    Ok(())
}

/// The headless answer from `--elicitation-answers`: each requested field takes the file's
/// value of that name, else its default; accepted when it validates, else declined (with the
/// reason, for the log).
pub fn from_answers(params: &Value, answers: &Map<String, Value>) -> Result<Value, String> {
    let fields = fields(params.get("requestedSchema"));
    let mut content = Map::new();
    for f in &fields {
        if let Some(v) = answers.get(&f.name).or(f.default.as_ref()) {
            content.insert(f.name.clone(), v.clone());
        }
    }
    validate(&fields, &content)?;
    Ok(serde_json::json!({ "action": "accept", "content": content }))
}

/// The headless answer of `--elicitation accept-defaults`: every field with a default takes
/// it; a form with a required field that has none is declined (with the reason, naming the
/// fields), never sent without it.
pub fn from_defaults(params: &Value) -> Result<Value, String> {
    let fields = fields(params.get("requestedSchema"));
    let missing: Vec<String> = fields
        .iter()
        .filter(|f| f.required && f.default.is_none())
        .map(|f| format!("\"{}\"", f.name))
        .collect();
    if !missing.is_empty() {
        let (noun, verb) = if missing.len() == 1 {
            ("field", "has")
        } else {
            ("fields", "have")
        };
        return Err(format!(
            "required {noun} {} {verb} no default; answer with --elicitation-answers FILE",
            missing.join(", ")
        ));
    }
    from_answers(params, &Map::new())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn accept_defaults_declines_a_required_field_without_a_default() {
        let params = json!({"requestedSchema": schema()});
        let e = from_defaults(&params).unwrap_err();
        assert!(e.contains("required field \"age\" has no default"), "{e}");
        let ok = json!({"requestedSchema": {"type": "object",
            "properties": {"n": {"type": "integer", "default": 3}, "s": {"type": "string"}},
            "required": ["n"]}});
        assert_eq!(
            from_defaults(&ok).unwrap(),
            json!({"action": "accept", "content": {"n": 3}})
        );
    }

    fn schema() -> Value {
        json!({
            "type": "object",
            "properties": {
                "name": {"type": "string", "title": "Name", "minLength": 2, "default": "Ann"},
                "email": {"type": "string", "format": "email"},
                "age": {"type": "integer", "minimum": 0, "maximum": 150},
                "ok": {"type": "boolean", "default": true},
                "color": {"type": "string", "enum": ["r", "g"], "enumNames": ["Red", "Green"]},
                "size": {"type": "string", "oneOf": [{"const": "s", "title": "Small"}, {"const": "l", "title": "Large"}]},
                "tags": {"type": "array", "items": {"type": "string", "enum": ["a", "b", "c"]}, "maxItems": 2},
                "day": {"type": "string", "format": "date"}
            },
            "required": ["name", "age"]
        })
    }

    #[test]
    fn a_schema_becomes_fields_and_answers_are_checked() {
        let f = fields(Some(&schema()));
        assert_eq!(f.len(), 8);
        let by = |n: &str| f.iter().find(|x| x.name == n).unwrap();
        assert!(by("name").required && by("age").required && !by("ok").required);
        assert_eq!(by("name").default, Some(json!("Ann")));
        assert_eq!(
            by("color").kind,
            FieldKind::Choice(vec![
                ("r".into(), "Red".into()),
                ("g".into(), "Green".into())
            ])
        );
        assert!(matches!(&by("size").kind, FieldKind::Choice(o) if o[1].1 == "Large"));
        assert!(
            matches!(&by("tags").kind, FieldKind::Multi { options, max: Some(2), .. } if options.len() == 3)
        );
        assert!(check(by("email"), &json!("a@b.io")).is_ok());
        assert!(check(by("email"), &json!("nope")).is_err());
        assert!(check(by("age"), &json!(3.5)).is_err());
        assert!(check(by("age"), &json!(200)).is_err());
        assert!(check(by("day"), &json!("2026-07-28")).is_ok());
        assert!(check(by("day"), &json!("28.07.2026")).is_err());
        assert!(check(by("tags"), &json!(["a", "b", "c"])).is_err());
        assert!(check(by("tags"), &json!(["a", "z"])).is_err());
        assert!(check(by("name"), &json!("A")).is_err());

        let mut content = Map::new();
        content.insert("name".into(), json!("Bo"));
        assert_eq!(validate(&f, &content), Err("age is required".into()));
        content.insert("age".into(), json!(30));
        assert_eq!(validate(&f, &content), Ok(()));

        let params = json!({"message": "m", "requestedSchema": schema()});
        let answers = json!({"age": 41, "tags": ["c"]});
        let got = from_answers(&params, answers.as_object().unwrap()).unwrap();
        assert_eq!(
            got,
            json!({"action": "accept", "content": {"name": "Ann", "age": 41, "ok": true, "tags": ["c"]}})
        );
        assert!(from_answers(&params, &Map::new()).is_err());
    }
}
