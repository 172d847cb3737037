//! Streamable HTTP request metadata headers (MCP 2026-07-28): the `=?base64?…?=` value
//! encoding, the `x-mcp-header` annotations of a tool's `inputSchema`, and the
//! `Mcp-Param-{Name}` / `Mcp-Name` header values a `tools/call` carries.
//!
//! Pure: no IO, no actix. The schema comes from an untrusted server, so [`header_params`]
//! bounds its walk and quotes what it reports (escaped, truncated).
//!
//! Decisions where the spec is silent:
//! - [`encode_value`] sends the empty string as is (an empty field value is valid HTTP).
//! - A `type` array is permitted when it is one of `integer`/`string`/`boolean`, alone or
//!   with `"null"` (`["string", "null"]`); anything else, duplicates included, is not.
//! - No length cap on `x-mcp-header` values: any non-empty RFC 9110 token is accepted.
//! - Outside the `properties` chain, an `x-mcp-header` key is an error in every schema
//!   position, known keyword or not (a vendor keyword's object included); only the
//!   instance-data keywords `const`, `enum`, `default` and `examples` are not looked into,
//!   and the keys of the name maps (`properties`, `patternProperties`, `$defs`,
//!   `definitions`, `dependentSchemas`, `dependencies`) are names, never annotations.
//! - [`param_headers`]: an integral float (`42.0`) inside the safe range is sent as `42`
//!   (JSON Schema counts it an integer); an integer outside ±(2^53−1), a fractional
//!   number, an object or an array sends no header.

use std::collections::HashMap;

use serde_json::{Map, Value};

/// The opening marker of the base64 form of a header value (lowercase, case-sensitive).
const SENTINEL_PREFIX: &str = "=?base64?";
/// The closing marker of the base64 form of a header value.
const SENTINEL_SUFFIX: &str = "?=";
/// The schema keyword that mirrors a property into a header.
const ANNOTATION: &str = "x-mcp-header";
/// The prefix of every header an annotation names.
const PARAM_PREFIX: &str = "Mcp-Param-";
/// How deep [`header_params`] follows nested schema JSON before giving up.
const MAX_DEPTH: usize = 64;
/// How many characters of an untrusted string an error message quotes.
const SHOWN_CHARS: usize = 64;
/// The largest integer magnitude sent as a header: 2^53 − 1 (JavaScript's safe range).
const MAX_SAFE_INTEGER: u64 = (1 << 53) - 1;

/// Encodes `s` as an HTTP header value, per the spec's request-metadata encoding.
///
/// A value made only of visible ASCII (0x21–0x7E) and spaces, neither starting nor ending
/// with a space, is sent as is; the empty string is sent as is too. Anything else (non-ASCII,
/// any control character: tab, CR, LF, DEL; leading or trailing whitespace) becomes
/// `=?base64?{standard padded base64 of the UTF-8 bytes}?=`. (HTTP allows a tab inside a
/// field value, but the spec names control characters among what must be encoded, and the
/// conformance suite expects a tab encoded.) So does a plain
/// value that already looks like that form (starts with `=?base64?` and ends with `?=`), so
/// a decoder never mistakes a literal for an encoding.
pub fn encode_value(s: &str) -> String {
    if is_plain(s) {
        s.to_owned()
    } else {
        format!("{SENTINEL_PREFIX}{}{SENTINEL_SUFFIX}", base64(s.as_bytes()))
    }
}

/// Whether `s` can travel unencoded (see [`encode_value`]).
fn is_plain(s: &str) -> bool {
    let bytes = s.as_bytes();
    let safe = bytes.iter().all(|&b| (0x20..=0x7e).contains(&b));
    let edge_ws = |b: Option<&u8>| matches!(b, Some(b' ' | b'\t'));
    let sentinel = s.starts_with(SENTINEL_PREFIX) && s.ends_with(SENTINEL_SUFFIX);
    safe && !edge_ws(bytes.first()) && !edge_ws(bytes.last()) && !sentinel
}

/// Standard base64 (RFC 4648 §4 alphabet) with `=` padding.
fn base64(bytes: &[u8]) -> String {
    const ALPHABET: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    let sextet = |n: u32, shift: u32| char::from(ALPHABET[((n >> shift) & 0x3f) as usize]);
    let mut out = String::with_capacity(bytes.len().div_ceil(3) * 4);
    for chunk in bytes.chunks(3) {
        let b0 = u32::from(chunk[0]);
        let b1 = chunk.get(1).copied().map_or(0, u32::from);
        let b2 = chunk.get(2).copied().map_or(0, u32::from);
        let n = (b0 << 16) | (b1 << 8) | b2;
        out.push(sextet(n, 18));
        out.push(sextet(n, 12));
        out.push(if chunk.len() > 1 { sextet(n, 6) } else { '=' });
        out.push(if chunk.len() > 2 { sextet(n, 0) } else { '=' });
    }
    out
}

/// One valid `x-mcp-header` annotation of a tool's `inputSchema`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HeaderParam {
    /// The `properties` keys leading from the schema root to the annotated property, which
    /// is also where its value sits in the `tools/call` arguments (never empty).
    pub path: Vec<String>,
    /// The full header name, `Mcp-Param-{x-mcp-header value}`.
    pub header: String,
}

/// Collects and validates every `x-mcp-header` annotation in a tool's `inputSchema`.
///
/// `Ok` lists the annotations (empty when there are none), in the order the schema's maps
/// iterate. `Err` means the tool must be rejected (the spec: excluded from `tools/list`),
/// with a short lowercase reason naming where and what. An annotation is valid when:
/// - it is a non-empty string matching the RFC 9110 token syntax (`1*tchar`);
/// - no other annotation in the schema has the same value, compared case-insensitively;
/// - it sits on a property whose `type` is `"integer"`, `"string"` or `"boolean"`, or a
///   `type` array holding exactly one of those plus, optionally, `"null"`;
/// - that property is reached from the root through `properties` keys only: one under
///   `items`, `anyOf`, `$defs`, `additionalProperties` or any other keyword is invalid,
///   and so is one on the root itself.
///
/// The walk stops with an error past 64 levels of nesting.
pub fn header_params(input_schema: &Value) -> Result<Vec<HeaderParam>, String> {
    let mut walker = Walker::default();
    walker.schema(input_schema, true, 0)?;
    Ok(walker.found)
}

/// The state of one [`header_params`] walk.
#[derive(Default)]
struct Walker {
    /// The JSON pointer segments of the current position.
    pointer: Vec<String>,
    /// The `properties` keys of the current position while it is reachable.
    props: Vec<String>,
    /// The annotations found so far.
    found: Vec<HeaderParam>,
    /// Lowercased annotation value → the shown path of the property carrying it.
    seen: HashMap<String, String>,
}

impl Walker {
    /// Walks one schema (an object; anything else holds nothing to check). `reachable`:
    /// the position was reached from the root through `properties` keys only.
    fn schema(&mut self, value: &Value, reachable: bool, depth: usize) -> Result<(), String> {
        if depth > MAX_DEPTH {
            return Err(format!(
                "schema nests too deep (more than {MAX_DEPTH} levels)"
            ));
        }
        let Value::Object(map) = value else {
            return Ok(());
        };
        if let Some(annotation) = map.get(ANNOTATION) {
            if !reachable {
                return Err(format!(
                    "x-mcp-header at {} is not reachable from the root through properties alone",
                    self.shown_pointer()
                ));
            }
            self.annotation(annotation, map)?;
        }
        for (key, sub) in map {
            match key.as_str() {
                ANNOTATION | "const" | "enum" | "default" | "examples" => {}
                "properties" => match sub {
                    Value::Object(props) => {
                        self.pointer.push(key.clone());
                        for (name, prop) in props {
                            self.pointer.push(name.clone());
                            if reachable {
                                self.props.push(name.clone());
                            }
                            let walked = self.schema(prop, reachable, depth + 1);
                            if reachable {
                                self.props.pop();
                            }
                            self.pointer.pop();
                            walked?;
                        }
                        self.pointer.pop();
                    }
                    other => self.nested(key, other, depth)?,
                },
                "patternProperties" | "$defs" | "definitions" | "dependentSchemas"
                | "dependencies" => match sub {
                    Value::Object(named) => {
                        self.pointer.push(key.clone());
                        for (name, entry) in named {
                            self.nested(name, entry, depth + 1)?;
                        }
                        self.pointer.pop();
                    }
                    other => self.nested(key, other, depth)?,
                },
                _ => self.nested(key, sub, depth)?,
            }
        }
        Ok(())
    }

    /// Walks `value`, found under `key`, as a position off the `properties` chain.
    fn nested(&mut self, key: &str, value: &Value, depth: usize) -> Result<(), String> {
        self.pointer.push(key.to_owned());
        let walked = self.any(value, depth + 1);
        self.pointer.pop();
        walked
    }

    /// Walks a value off the `properties` chain: an object is a schema, an array a list of
    /// them (or of arrays), anything else holds nothing.
    fn any(&mut self, value: &Value, depth: usize) -> Result<(), String> {
        if depth > MAX_DEPTH {
            return Err(format!(
                "schema nests too deep (more than {MAX_DEPTH} levels)"
            ));
        }
        match value {
            Value::Object(_) => self.schema(value, false, depth),
            Value::Array(items) => {
                for (i, item) in items.iter().enumerate() {
                    self.nested(&i.to_string(), item, depth)?;
                }
                Ok(())
            }
            _ => Ok(()),
        }
    }

    /// Validates the annotation `value` of the reachable schema `schema` and records it.
    fn annotation(&mut self, value: &Value, schema: &Map<String, Value>) -> Result<(), String> {
        if self.props.is_empty() {
            return Err("x-mcp-header on the schema root; only a property may carry it".into());
        }
        let at = shown(&self.props.join("."));
        let Value::String(name) = value else {
            return Err(format!(
                "property {at}: x-mcp-header is {}, not a string",
                json_kind(value)
            ));
        };
        if name.is_empty() {
            return Err(format!("property {at}: x-mcp-header is empty"));
        }
        if !name.bytes().all(is_tchar) {
            return Err(format!(
                "property {at}: x-mcp-header {} is not an HTTP token",
                shown(name)
            ));
        }
        if !permitted_type(schema.get("type")) {
            return Err(format!(
                "property {at}: x-mcp-header {} needs type integer, string or boolean, not {}",
                shown(name),
                shown_type(schema.get("type"))
            ));
        }
        if let Some(first) = self.seen.get(&name.to_ascii_lowercase()) {
            return Err(format!(
                "property {at}: x-mcp-header {} repeats the one on property {first} \
                 (header names are case-insensitive)",
                shown(name)
            ));
        }
        self.seen.insert(name.to_ascii_lowercase(), at);
        self.found.push(HeaderParam {
            path: self.props.clone(),
            header: format!("{PARAM_PREFIX}{name}"),
        });
        Ok(())
    }

    /// The current position as a quoted JSON pointer (`"/properties/a/items"`).
    fn shown_pointer(&self) -> String {
        let pointer: String = self
            .pointer
            .iter()
            .map(|seg| format!("/{}", seg.replace('~', "~0").replace('/', "~1")))
            .collect();
        shown(&pointer)
    }
}

/// Whether `b` is an RFC 9110 `tchar`.
fn is_tchar(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b"!#$%&'*+-.^_`|~".contains(&b)
}

/// Whether a schema `type` permits an annotation (see [`header_params`]).
fn permitted_type(ty: Option<&Value>) -> bool {
    const PRIMITIVES: [&str; 3] = ["integer", "string", "boolean"];
    let primitive = |v: &Value| v.as_str().is_some_and(|s| PRIMITIVES.contains(&s));
    match ty {
        Some(Value::String(s)) => PRIMITIVES.contains(&s.as_str()),
        Some(Value::Array(types)) => match types.as_slice() {
            [only] => primitive(only),
            [a, b] => {
                (primitive(a) && b.as_str() == Some("null"))
                    || (a.as_str() == Some("null") && primitive(b))
            }
            _ => false,
        },
        _ => false,
    }
}

/// A JSON value's kind, for error messages.
fn json_kind(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

/// A schema `type` as an error message shows it.
fn shown_type(ty: Option<&Value>) -> String {
    match ty {
        None => "no type".into(),
        Some(Value::String(s)) => shown(s),
        Some(other) => shown(&other.to_string()),
    }
}

/// An untrusted string quoted for an error message: escaped, and cut after
/// [`SHOWN_CHARS`] characters.
fn shown(s: &str) -> String {
    match s.char_indices().nth(SHOWN_CHARS) {
        Some((cut, _)) => format!("{:?}…", &s[..cut]),
        None => format!("{s:?}"),
    }
}

/// The `Mcp-Param-*` headers of one `tools/call`: `(header name, encoded value)` pairs.
///
/// For each annotation, the argument at its exact path in `arguments` (the call's
/// `arguments` object): a string as is, an integer in decimal, a boolean as `true` or
/// `false`, then through [`encode_value`]. No header is sent for a missing or `null`
/// argument, nor for an object, an array, a fractional number or an integer outside
/// ±(2^53 − 1) (the spec's safe range; such a value breaks the schema anyway). An
/// integral float inside that range (`42.0`) is sent as an integer (`42`).
pub fn param_headers(params: &[HeaderParam], arguments: Option<&Value>) -> Vec<(String, String)> {
    let Some(arguments) = arguments else {
        return Vec::new();
    };
    params
        .iter()
        .filter_map(|param| {
            let value = param
                .path
                .iter()
                .try_fold(arguments, |at, key| at.as_object()?.get(key))?;
            let text = header_text(value)?;
            Some((param.header.clone(), encode_value(&text)))
        })
        .collect()
}

/// An argument's header text before encoding, if it gets a header (see [`param_headers`]).
fn header_text(value: &Value) -> Option<String> {
    match value {
        Value::String(s) => Some(s.clone()),
        Value::Bool(b) => Some(b.to_string()),
        Value::Number(n) => {
            if let Some(i) = n.as_i64() {
                (i.unsigned_abs() <= MAX_SAFE_INTEGER).then(|| i.to_string())
            } else if let Some(u) = n.as_u64() {
                (u <= MAX_SAFE_INTEGER).then(|| u.to_string())
            } else {
                let f = n.as_f64()?;
                let integral = f.fract() == 0.0 && f.abs() <= MAX_SAFE_INTEGER as f64;
                integral.then(|| (f as i64).to_string())
            }
        }
        Value::Null | Value::Array(_) | Value::Object(_) => None,
    }
}

/// The `Mcp-Name` header value for a tool name (or prompt name, or resource URI):
/// the name through [`encode_value`].
pub fn name_header(name: &str) -> String {
    encode_value(name)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn ok(schema: Value) -> Vec<HeaderParam> {
        match header_params(&schema) {
            Ok(mut params) => {
                params.sort_by(|a, b| a.path.cmp(&b.path));
                params
            }
            Err(e) => panic!("expected Ok, got Err({e})"),
        }
    }

    fn err(schema: Value) -> String {
        match header_params(&schema) {
            Ok(params) => panic!("expected Err, got Ok({params:?})"),
            Err(e) => e,
        }
    }

    fn param(path: &[&str], header: &str) -> HeaderParam {
        HeaderParam {
            path: path.iter().map(|s| s.to_string()).collect(),
            header: header.to_string(),
        }
    }

    fn annotated(ty: Value, name: Value) -> Value {
        json!({"type": "object", "properties": {"p": {"type": ty, "x-mcp-header": name}}})
    }

    // ---- encode_value ----

    #[test]
    fn spec_examples_encode() {
        assert_eq!(encode_value("us-west1"), "us-west1");
        assert_eq!(
            encode_value("Hello, 世界"),
            "=?base64?SGVsbG8sIOS4lueVjA==?="
        );
        assert_eq!(encode_value(" padded "), "=?base64?IHBhZGRlZCA=?=");
        assert_eq!(encode_value("line1\nline2"), "=?base64?bGluZTEKbGluZTI=?=");
        assert_eq!(
            encode_value("=?base64?literal?="),
            "=?base64?PT9iYXNlNjQ/bGl0ZXJhbD89?="
        );
    }

    #[test]
    fn plain_values_pass_through() {
        for s in ["", "a", "a b", "!~", "Hello, world", "42", "true"] {
            assert_eq!(encode_value(s), s, "{s:?}");
        }
        let all_visible: String = (0x21u8..=0x7e).map(char::from).collect();
        assert_eq!(encode_value(&all_visible), all_visible);
    }

    #[test]
    fn unsafe_values_are_encoded() {
        for s in [
            " lead",
            "trail ",
            "\tlead",
            "trail\t",
            " ",
            "a\rb",
            "a\0b",
            "a\x7fb",
            "é",
            "x\r\nInjected: yes",
            "a\tb",
        ] {
            let e = encode_value(s);
            assert!(
                e.starts_with("=?base64?") && e.ends_with("?="),
                "{s:?} -> {e}"
            );
            assert!(e.bytes().all(|b| (0x21..=0x7e).contains(&b)), "{e}");
        }
        assert_eq!(
            encode_value("x\r\nInjected: yes"),
            "=?base64?eA0KSW5qZWN0ZWQ6IHllcw==?="
        );
    }

    #[test]
    fn sentinel_lookalikes_are_encoded() {
        // Starts with the prefix and ends with the suffix, even overlapping.
        assert_ne!(encode_value("=?base64??="), "=?base64??=");
        assert_ne!(encode_value("=?base64?="), "=?base64?=");
        assert_ne!(encode_value("=?base64?abc?="), "=?base64?abc?=");
        // Only one marker, or a different case: literal.
        assert_eq!(encode_value("=?base64?abc"), "=?base64?abc");
        assert_eq!(encode_value("abc?="), "abc?=");
        assert_eq!(encode_value("=?BASE64?abc?="), "=?BASE64?abc?=");
    }

    #[test]
    fn base64_matches_rfc4648_vectors() {
        let cases = [
            ("", ""),
            ("f", "Zg=="),
            ("fo", "Zm8="),
            ("foo", "Zm9v"),
            ("foob", "Zm9vYg=="),
            ("fooba", "Zm9vYmE="),
            ("foobar", "Zm9vYmFy"),
        ];
        for (raw, enc) in cases {
            assert_eq!(base64(raw.as_bytes()), enc);
        }
        assert_eq!(base64(&[0xfb, 0xff, 0xbf]), "+/+/");
    }

    #[test]
    fn name_header_encodes() {
        assert_eq!(name_header("get_weather"), "get_weather");
        assert_eq!(name_header("天気"), "=?base64?5aSp5rCX?=");
        assert_eq!(name_header("=?base64?x?="), encode_value("=?base64?x?="));
    }

    // ---- header_params: valid ----

    #[test]
    fn spec_example_schema() {
        let schema = json!({
            "type": "object",
            "properties": {
                "region": {"type": "string", "x-mcp-header": "Region"},
                "query": {"type": "string"}
            },
            "required": ["region", "query"]
        });
        assert_eq!(ok(schema), vec![param(&["region"], "Mcp-Param-Region")]);
    }

    #[test]
    fn no_annotations_is_empty() {
        assert!(ok(json!({"type": "object"})).is_empty());
        assert!(ok(json!({})).is_empty());
        assert!(ok(json!(true)).is_empty());
        assert!(ok(json!({"type": "object", "properties": {"a": {"type": "string"}}})).is_empty());
    }

    #[test]
    fn nested_properties_and_all_primitive_types() {
        let schema = json!({
            "type": "object",
            "properties": {
                "tenant": {"type": "string", "x-mcp-header": "Tenant"},
                "opts": {
                    "type": "object",
                    "properties": {
                        "count": {"type": "integer", "x-mcp-header": "Count"},
                        "deep": {
                            "type": "object",
                            "properties": {
                                "flag": {"type": "boolean", "x-mcp-header": "Flag"}
                            }
                        }
                    }
                }
            }
        });
        assert_eq!(
            ok(schema),
            vec![
                param(&["opts", "count"], "Mcp-Param-Count"),
                param(&["opts", "deep", "flag"], "Mcp-Param-Flag"),
                param(&["tenant"], "Mcp-Param-Tenant"),
            ]
        );
    }

    #[test]
    fn every_tchar_is_accepted() {
        let name = "!#$%&'*+-.^_`|~09AZaz";
        assert_eq!(
            ok(annotated(json!("string"), json!(name))),
            vec![param(&["p"], &format!("Mcp-Param-{name}"))]
        );
    }

    #[test]
    fn nullable_type_arrays() {
        for ty in [
            json!(["string", "null"]),
            json!(["null", "integer"]),
            json!(["boolean"]),
        ] {
            assert_eq!(ok(annotated(ty, json!("P"))).len(), 1);
        }
        for ty in [
            json!(["string", "integer"]),
            json!(["string", "null", "integer"]),
            json!(["number", "null"]),
            json!(["null"]),
            json!(["null", "null"]),
            json!(["string", "string"]),
            json!([]),
            json!([1, "null"]),
        ] {
            let e = err(annotated(ty.clone(), json!("P")));
            assert!(
                e.contains("needs type integer, string or boolean"),
                "{ty}: {e}"
            );
        }
    }

    #[test]
    fn properties_named_like_keywords() {
        let schema = json!({
            "type": "object",
            "properties": {
                "x-mcp-header": {"type": "string", "x-mcp-header": "A"},
                "items": {"type": "integer", "x-mcp-header": "B"},
                "properties": {
                    "type": "object",
                    "properties": {
                        "anyOf": {"type": "boolean", "x-mcp-header": "C"}
                    }
                },
                "$defs": {"type": "string", "x-mcp-header": "D"},
                "const": {"type": "string", "x-mcp-header": "E"}
            }
        });
        assert_eq!(
            ok(schema),
            vec![
                param(&["$defs"], "Mcp-Param-D"),
                param(&["const"], "Mcp-Param-E"),
                param(&["items"], "Mcp-Param-B"),
                param(&["properties", "anyOf"], "Mcp-Param-C"),
                param(&["x-mcp-header"], "Mcp-Param-A"),
            ]
        );
    }

    #[test]
    fn property_named_x_mcp_header_without_annotation_is_not_one() {
        // A property called "x-mcp-header", unannotated, anywhere (even off the chain).
        let schema = json!({
            "type": "object",
            "properties": {
                "x-mcp-header": {"type": "object"},
                "list": {
                    "type": "array",
                    "items": {"type": "object", "properties": {"x-mcp-header": {"type": "string"}}}
                }
            },
            "$defs": {"x-mcp-header": {"type": "string"}},
            "patternProperties": {"x-mcp-header": {"type": "string"}}
        });
        assert!(ok(schema).is_empty());
    }

    #[test]
    fn instance_data_keywords_are_not_schemas() {
        let schema = json!({
            "type": "object",
            "properties": {"a": {"type": "string", "x-mcp-header": "A"}},
            "default": {"x-mcp-header": "whatever"},
            "examples": [{"x-mcp-header": 1}],
            "const": {"x-mcp-header": null},
            "enum": [{"x-mcp-header": "B"}]
        });
        assert_eq!(ok(schema), vec![param(&["a"], "Mcp-Param-A")]);
    }

    #[test]
    fn huge_valid_header_name_is_accepted() {
        let name = "H".repeat(100_000);
        let params = ok(annotated(json!("string"), json!(name)));
        assert_eq!(params[0].header.len(), "Mcp-Param-".len() + 100_000);
    }

    // ---- header_params: invalid values ----

    #[test]
    fn non_string_values_are_rejected() {
        for v in [
            json!(1),
            json!(true),
            json!(null),
            json!(["A"]),
            json!({"n": "A"}),
        ] {
            let e = err(annotated(json!("string"), v.clone()));
            assert!(
                e.contains("not a string") && e.contains("\"p\""),
                "{v}: {e}"
            );
        }
    }

    #[test]
    fn empty_and_non_token_values_are_rejected() {
        assert_eq!(
            err(annotated(json!("string"), json!(""))),
            "property \"p\": x-mcp-header is empty"
        );
        for bad in [
            "X Y",
            "X:Y",
            "X\rY",
            "X\nY",
            "Re\r\ngion",
            "X\tY",
            "X\0",
            "X\"",
            "(X)",
            "X/Y",
            "X@Y",
            "X,Y",
            "X;Y",
            "X=Y",
            "X?",
            "[X]",
            "{X}",
            "X\\",
            "é",
            "X\u{7f}",
        ] {
            let e = err(annotated(json!("string"), json!(bad)));
            assert!(e.ends_with("is not an HTTP token"), "{bad:?}: {e}");
            assert!(!e.contains('\r') && !e.contains('\n'), "{e:?}");
        }
        let schema = json!({"properties": {"a": {"properties": {"b": {"type": "string", "x-mcp-header": "X Y"}}}}});
        assert_eq!(
            err(schema),
            "property \"a.b\": x-mcp-header \"X Y\" is not an HTTP token"
        );
    }

    #[test]
    fn huge_invalid_name_error_is_bounded() {
        let name = format!("{} {}", "A".repeat(50_000), "B".repeat(50_000));
        let e = err(annotated(json!("string"), json!(name)));
        assert!(e.len() < 300, "{} bytes", e.len());
        assert!(e.contains('…'));
        let long_prop = "p".repeat(10_000);
        let schema = json!({"properties": {long_prop: {"type": "number", "x-mcp-header": "N"}}});
        assert!(err(schema).len() < 300);
    }

    #[test]
    fn disallowed_types_are_rejected() {
        for ty in [
            json!("number"),
            json!("object"),
            json!("array"),
            json!("null"),
            json!(7),
        ] {
            let e = err(annotated(ty.clone(), json!("P")));
            assert!(
                e.contains("needs type integer, string or boolean"),
                "{ty}: {e}"
            );
        }
        let missing = json!({"properties": {"p": {"x-mcp-header": "P"}}});
        assert_eq!(
            err(missing),
            "property \"p\": x-mcp-header \"P\" needs type integer, string or boolean, not no type"
        );
        let via_ref = json!({
            "properties": {"p": {"$ref": "#/$defs/s", "x-mcp-header": "P"}},
            "$defs": {"s": {"type": "string"}}
        });
        assert!(err(via_ref).contains("not no type"));
    }

    #[test]
    fn duplicates_differing_in_case_are_rejected() {
        let schema = json!({
            "properties": {
                "a": {"type": "string", "x-mcp-header": "Region"},
                "b": {"properties": {"c": {"type": "string", "x-mcp-header": "rEGION"}}}
            }
        });
        let e = err(schema);
        assert!(e.contains("repeats the one on property"), "{e}");
        assert!(e.contains("case-insensitive"), "{e}");
        let exact = json!({
            "properties": {
                "a": {"type": "string", "x-mcp-header": "R"},
                "b": {"type": "integer", "x-mcp-header": "R"}
            }
        });
        assert!(err(exact).contains("repeats"));
    }

    #[test]
    fn root_annotation_is_rejected() {
        let e = err(json!({"type": "string", "x-mcp-header": "Root"}));
        assert!(e.contains("schema root"), "{e}");
    }

    // ---- header_params: unreachable positions ----

    #[test]
    fn annotations_off_the_properties_chain_are_rejected() {
        let leaf = json!({"type": "string", "x-mcp-header": "X"});
        let placements = [
            ("items", json!({"type": "array", "items": leaf})),
            ("items", json!({"type": "array", "items": [leaf]})),
            (
                "prefixItems",
                json!({"type": "array", "prefixItems": [leaf]}),
            ),
            (
                "additionalProperties",
                json!({"additionalProperties": leaf}),
            ),
            (
                "patternProperties",
                json!({"patternProperties": {"^a": leaf}}),
            ),
            ("anyOf", json!({"anyOf": [leaf]})),
            ("oneOf", json!({"oneOf": [{"type": "string"}, leaf]})),
            ("allOf", json!({"allOf": [leaf]})),
            ("not", json!({"not": leaf})),
            ("if", json!({"if": leaf})),
            ("then", json!({"then": leaf})),
            ("else", json!({"else": leaf})),
            ("$defs", json!({"$defs": {"s": leaf}})),
            ("definitions", json!({"definitions": {"s": leaf}})),
            ("dependentSchemas", json!({"dependentSchemas": {"a": leaf}})),
            ("contains", json!({"contains": leaf})),
            ("x-vendor", json!({"x-vendor": {"deep": [[leaf]]}})),
        ];
        for (keyword, placement) in placements {
            // At the root and under a reachable property.
            let at_root = placement.clone();
            let nested = json!({"properties": {"a": placement}});
            for schema in [at_root, nested] {
                let e = err(schema.clone());
                assert!(e.contains("is not reachable"), "{schema}: {e}");
                assert!(e.contains(keyword), "{schema}: {e}");
            }
        }
    }

    #[test]
    fn properties_under_unreachable_positions_stay_unreachable() {
        let schema = json!({
            "type": "object",
            "properties": {
                "list": {
                    "type": "array",
                    "items": {
                        "type": "object",
                        "properties": {"r": {"type": "string", "x-mcp-header": "R"}}
                    }
                }
            }
        });
        assert_eq!(
            err(schema),
            "x-mcp-header at \"/properties/list/items/properties/r\" is not reachable \
             from the root through properties alone"
        );
    }

    #[test]
    fn unreachable_invalid_value_is_still_rejected() {
        // Not even a string, and in $defs: rejected for being there.
        let e = err(json!({"$defs": {"a": {"x-mcp-header": 5}}}));
        assert!(e.contains("/$defs/a"), "{e}");
    }

    #[test]
    fn pointer_escapes_and_quotes_hostile_names() {
        let schema = json!({"properties": {"a/b~c\n": {"items": {"x-mcp-header": "X"}}}});
        let e = err(schema);
        assert!(e.contains("/properties/a~1b~0c\\n/items"), "{e}");
    }

    #[test]
    fn deep_nesting_is_bounded() {
        let mut deep = json!({"type": "string", "x-mcp-header": "D"});
        for _ in 0..200 {
            deep = json!({"type": "object", "properties": {"p": deep}});
        }
        assert!(err(deep).contains("nests too deep"));

        let mut arrays = json!({"x-mcp-header": "D"});
        for _ in 0..100 {
            arrays = json!([arrays]);
        }
        assert!(err(json!({"x-vendor": arrays})).contains("nests too deep"));

        let mut anys = json!({"type": "string"});
        for _ in 0..100 {
            anys = json!({"anyOf": [anys]});
        }
        assert!(err(anys).contains("nests too deep"));
    }

    #[test]
    fn moderate_nesting_is_fine() {
        let mut deep = json!({"type": "string", "x-mcp-header": "D"});
        for _ in 0..30 {
            deep = json!({"type": "object", "properties": {"p": deep}});
        }
        let params = ok(deep);
        assert_eq!(params.len(), 1);
        assert_eq!(params[0].path.len(), 30);
    }

    // ---- param_headers ----

    fn headers(params: &[HeaderParam], args: Value) -> Vec<(String, String)> {
        param_headers(params, Some(&args))
    }

    fn one(value: Value) -> Vec<(String, String)> {
        headers(&[param(&["v"], "Mcp-Param-V")], json!({"v": value}))
    }

    fn pair(v: &str) -> Vec<(String, String)> {
        vec![("Mcp-Param-V".to_string(), v.to_string())]
    }

    #[test]
    fn spec_example_call() {
        let params = ok(json!({
            "type": "object",
            "properties": {
                "region": {"type": "string", "x-mcp-header": "Region"},
                "query": {"type": "string"}
            }
        }));
        let args = json!({"region": "us-west1", "query": "SELECT 1"});
        assert_eq!(
            headers(&params, args),
            vec![("Mcp-Param-Region".to_string(), "us-west1".to_string())]
        );
    }

    #[test]
    fn value_kinds() {
        assert_eq!(one(json!("us-west1")), pair("us-west1"));
        assert_eq!(
            one(json!("Hello, 世界")),
            pair("=?base64?SGVsbG8sIOS4lueVjA==?=")
        );
        assert_eq!(one(json!("")), pair(""));
        assert_eq!(one(json!(42)), pair("42"));
        assert_eq!(one(json!(-7)), pair("-7"));
        assert_eq!(one(json!(0)), pair("0"));
        assert_eq!(one(json!(true)), pair("true"));
        assert_eq!(one(json!(false)), pair("false"));
        assert_eq!(one(json!(null)), vec![]);
        assert_eq!(one(json!([1])), vec![]);
        assert_eq!(one(json!({"a": 1})), vec![]);
    }

    #[test]
    fn integer_range_and_floats() {
        let max = 9_007_199_254_740_991i64;
        assert_eq!(one(json!(max)), pair("9007199254740991"));
        assert_eq!(one(json!(-max)), pair("-9007199254740991"));
        assert_eq!(one(json!(max + 1)), vec![]);
        assert_eq!(one(json!(-max - 1)), vec![]);
        assert_eq!(one(json!(i64::MIN)), vec![]);
        assert_eq!(one(json!(u64::MAX)), vec![]);
        assert_eq!(one(json!(42.0)), pair("42"));
        assert_eq!(one(json!(-3.0)), pair("-3"));
        assert_eq!(one(json!(-0.0)), pair("0"));
        assert_eq!(one(json!(42.5)), vec![]);
        assert_eq!(one(json!(1e300)), vec![]);
        assert_eq!(one(json!(9_007_199_254_740_992.0)), vec![]);
    }

    #[test]
    fn exact_nested_paths() {
        let params = vec![
            param(&["a", "b"], "Mcp-Param-AB"),
            param(&["a", "c"], "Mcp-Param-AC"),
            param(&["top"], "Mcp-Param-Top"),
        ];
        let args = json!({"a": {"b": 1, "c": null}, "b": 2, "top": "x\ny"});
        assert_eq!(
            headers(&params, args),
            vec![
                ("Mcp-Param-AB".to_string(), "1".to_string()),
                ("Mcp-Param-Top".to_string(), "=?base64?eAp5?=".to_string()),
            ]
        );
        // An intermediate that is not an object, or missing: no header.
        assert!(headers(&params[..1], json!({"a": [1]})).is_empty());
        assert!(headers(&params[..1], json!({"a": "b"})).is_empty());
        assert!(headers(&params[..1], json!({})).is_empty());
        assert!(headers(&params[..1], json!("not an object")).is_empty());
    }

    #[test]
    fn no_arguments_no_headers() {
        let params = vec![param(&["v"], "Mcp-Param-V")];
        assert!(param_headers(&params, None).is_empty());
        assert!(param_headers(&[], Some(&json!({"v": 1}))).is_empty());
    }

    #[test]
    fn sentinel_lookalike_argument_is_encoded() {
        assert_eq!(
            one(json!("=?base64?literal?=")),
            pair("=?base64?PT9iYXNlNjQ/bGl0ZXJhbD89?=")
        );
    }
}
