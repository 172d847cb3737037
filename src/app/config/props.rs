//! Property tests of the `.mcp.json` parser: no panic on any text or on near-valid configs, and
//! every positioned error points inside the text. `PROPTEST_CASES` sets the case count.

use std::path::Path;

use proptest::prelude::*;
use proptest::test_runner::Config as RunnerConfig;
use serde_json::{json, Value};

use crate::config::{parse, Config, ConfigError};

/// `PROPTEST_CASES` if set, else `default`; failures are shrunk and printed, not saved.
fn runner(default: u32) -> RunnerConfig {
    let cases = std::env::var("PROPTEST_CASES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default);
    RunnerConfig {
        cases,
        failure_persistence: None,
        ..RunnerConfig::default()
    }
}

fn lookup(var: &str) -> Option<String> {
    match var {
        "HOME" => Some("/home/u".into()),
        "TOKEN" => Some("s3cret-token".into()),
        "EMPTY" => Some(String::new()),
        _ => None,
    }
}

fn run(text: &str) -> Result<Config, ConfigError> {
    parse(
        text,
        ".mcp.json",
        Path::new("/proj"),
        &lookup,
        &crate::config::EntryDefaults::in_memory(),
    )
}

/// A `Syntax` error's line and column name a place in `text`: line 1 to the number of lines,
/// column 0 (serde_json's "before the first character") to one past the line's end.
fn check_position(text: &str, res: &Result<Config, ConfigError>) -> Result<(), TestCaseError> {
    if let Err(ConfigError::Syntax {
        line,
        column,
        message,
        ..
    }) = res
    {
        let lines: Vec<&str> = text.split('\n').collect();
        prop_assert!(
            (1..=lines.len()).contains(line),
            "line {} of {} lines: {}",
            line,
            lines.len(),
            message
        );
        let len = lines[line - 1].len();
        prop_assert!(
            *column <= len + 1,
            "column {} on a line of {} bytes: {}",
            column,
            len,
            message
        );
    }
    Ok(())
}

/// Strings as config values: `${VAR}` forms (set, unset, empty, defaults, broken), odd bytes.
fn text_value() -> impl Strategy<Value = String> {
    prop_oneof![
        "[a-z/._ -]{0,12}",
        Just("${HOME}/bin".to_owned()),
        Just("${TOKEN}".to_owned()),
        Just("${EMPTY}".to_owned()),
        Just("${EMPTY:-d}".to_owned()),
        Just("${UNSET}".to_owned()),
        Just("${UNSET:-fallback}".to_owned()),
        Just("${".to_owned()),
        Just("${A B}".to_owned()),
        Just("${}".to_owned()),
        Just("$HOME".to_owned()),
        ".{0,6}",
    ]
}

/// Numbers as timeouts and sizes: valid, zero, negative, fractional, large (past the point
/// where `Duration::from_secs_f64` would panic: the timeouts are bounded), strings.
fn number() -> impl Strategy<Value = Value> {
    prop_oneof![
        (0.001f64..1e6).prop_map(Value::from),
        Just(json!(0)),
        Just(json!(-1)),
        Just(json!(1e18)),
        Just(json!(1e20)),
        Just(json!(1e300)),
        Just(json!(1e-300)),
        any::<u32>().prop_map(Value::from),
        any::<i64>().prop_map(Value::from),
        Just(json!("30")),
        Just(Value::Null),
    ]
}

fn strings() -> impl Strategy<Value = Value> {
    prop_oneof![
        4 => proptest::collection::vec(text_value(), 0..3).prop_map(|v| json!(v)),
        1 => text_value().prop_map(Value::from),
        1 => Just(json!([1, null])),
    ]
}

/// One server entry: any subset of the known fields, each valid or not, and unknown keys.
fn server() -> impl Strategy<Value = Value> {
    let field = prop_oneof![
        prop_oneof![
            Just(json!("stdio")),
            Just(json!("http")),
            Just(json!("sse")),
            Just(json!("websocket")),
            Just(json!(5))
        ]
        .prop_map(|v| ("type", v)),
        text_value().prop_map(|v| ("command", json!(v))),
        strings().prop_map(|v| ("args", v)),
        prop_oneof![
            proptest::collection::btree_map("[A-Z_]{1,5}", text_value(), 0..3)
                .prop_map(|m| json!(m)),
            proptest::collection::vec(prop_oneof!["[A-Z]{1,3}=.{0,4}", text_value()], 0..3)
                .prop_map(|v| json!(v)),
            Just(json!(7)),
        ]
        .prop_map(|v| ("env", v)),
        text_value().prop_map(|v| ("cwd", json!(v))),
        prop_oneof![
            Just(json!("http://127.0.0.1:1/mcp")),
            text_value().prop_map(Value::from)
        ]
        .prop_map(|v| ("url", v)),
        proptest::collection::btree_map("[A-Za-z-]{1,8}", text_value(), 0..3)
            .prop_map(|m| ("headers", json!(m))),
        number().prop_map(|v| ("startupTimeoutSec", v)),
        number().prop_map(|v| ("toolTimeoutSec", v)),
        prop_oneof![Just(json!(true)), Just(json!(false)), Just(json!("yes"))]
            .prop_map(|v| ("disabled", v)),
        strings().prop_map(|v| ("enabledTools", v)),
        strings().prop_map(|v| ("disabledTools", v)),
        number().prop_map(|v| ("maxMessageBytes", v)),
        Just(("unknownKey", json!({"x": 1}))),
    ];
    proptest::collection::vec(field, 0..7).prop_map(|fields| {
        Value::Object(fields.into_iter().map(|(k, v)| (k.to_owned(), v)).collect())
    })
}

/// A near-valid config text: servers by name (duplicate names included, written out by hand
/// since a JSON map cannot hold them), pretty or compact, then perhaps cut or edited.
fn config_text() -> impl Strategy<Value = String> {
    (
        proptest::collection::vec(
            (
                prop_oneof!["[a-z]{1,6}", Just("a".to_owned()), ".{1,4}"],
                server(),
            ),
            0..4,
        ),
        any::<bool>(),
        prop_oneof![
            4 => Just(None),
            1 => any::<usize>().prop_map(|at| Some((at, None))),
            1 => (any::<usize>(), proptest::char::any()).prop_map(|(at, c)| Some((at, Some(c)))),
        ],
        prop_oneof![Just("mcpServers"), Just("servers"), Just("mcpservers")],
    )
        .prop_map(|(servers, pretty, edit, key)| {
            let entries: Vec<String> = servers
                .iter()
                .map(|(name, s)| {
                    let body = if pretty {
                        serde_json::to_string_pretty(s)
                    } else {
                        serde_json::to_string(s)
                    }
                    .unwrap_or_default();
                    format!("{}: {body}", Value::from(name.as_str()))
                })
                .collect();
            let sep = if pretty { ",\n  " } else { "," };
            let mut text = format!("{{\"{key}\": {{{}}}}}", entries.join(sep));
            if let Some((at, c)) = edit {
                let mut chars: Vec<char> = text.chars().collect();
                let at = at % (chars.len() + 1);
                match c {
                    // Cut the text there, or put a character there.
                    None => chars.truncate(at),
                    Some(c) => chars.insert(at, c),
                }
                text = chars.into_iter().collect();
            }
            text
        })
}

proptest! {
    #![proptest_config(runner(256))]

    /// Any text: no panic, and a positioned error is inside the text.
    #[test]
    fn config_any_text(text in ".{0,64}") {
        let res = run(&text);
        check_position(&text, &res)?;
    }

    /// JSON-looking text from config pieces, in any order.
    #[test]
    fn config_json_soup(parts in proptest::collection::vec(prop_oneof![
        Just("{"), Just("}"), Just("["), Just("]"), Just(","), Just(":"), Just("\n"),
        Just("\"mcpServers\""), Just("\"command\""), Just("\"x\""), Just("1"), Just("null"),
        Just("\"\\u00e9\""), Just("\"${"), Just(" "),
    ], 0..40)) {
        let text = parts.concat();
        let res = run(&text);
        check_position(&text, &res)?;
    }

    /// Near-valid configs: no panic, positioned errors inside the text, and a config that
    /// parses lists every server it has (enabled or disabled) once.
    #[test]
    fn config_near_valid(text in config_text()) {
        let res = run(&text);
        check_position(&text, &res)?;
        if let Ok(c) = &res {
            let mut names: Vec<&str> = c.servers.iter().map(|s| &*s.name).collect();
            names.extend(c.disabled.iter().map(String::as_str));
            let unique: std::collections::BTreeSet<&str> = names.iter().copied().collect();
            prop_assert_eq!(unique.len(), names.len(), "a server listed twice: {:?}", names);
        }
    }
}
