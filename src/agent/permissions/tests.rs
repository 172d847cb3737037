//! The decision table row by row, the patterns, and the refusal texts.

use serde_json::json;

use super::*;

fn rules(list: &[(Decision, &str)]) -> Vec<Rule> {
    list.iter()
        .enumerate()
        .map(|(i, (k, t))| {
            Rule::parse(
                *k,
                t,
                Source::File {
                    path: "/u/harness9.toml".into(),
                    line: i + 1,
                },
            )
            .unwrap()
        })
        .collect()
}

fn place() -> Place {
    Place {
        root: "/p".into(),
        home: Some("/home/u".into()),
    }
}

const MCP: ToolFacts<'static> = ToolFacts {
    name: "mcp__git__git_commit",
    server: Some("git"),
    read_only: false,
};
const MCP_RO: ToolFacts<'static> = ToolFacts {
    name: "mcp__git__git_status",
    server: Some("git"),
    read_only: true,
};
const BASH: ToolFacts<'static> = ToolFacts {
    name: "bash",
    server: None,
    read_only: false,
};
const WRITE: ToolFacts<'static> = ToolFacts {
    name: "write_file",
    server: None,
    read_only: false,
};
const READ: ToolFacts<'static> = ToolFacts {
    name: "read_file",
    server: None,
    read_only: true,
};

fn action(
    tool: ToolFacts<'_>,
    args: serde_json::Value,
    r: &[(Decision, &str)],
    mode: Mode,
) -> Action {
    decide(tool, &args, &rules(r), mode, &place()).action
}

fn cmd(c: &str) -> serde_json::Value {
    json!({ "command": c })
}

#[test]
fn row_1_deny_beats_everything_even_bypass() {
    use Decision::*;
    let r = [
        (Allow, "mcp__git__*"),
        (Ask, "mcp__git__git_commit"),
        (Deny, "mcp__git__git_commit"),
    ];
    for mode in [
        Mode::Default,
        Mode::ReadOnly,
        Mode::AcceptEdits,
        Mode::Bypass,
    ] {
        assert_eq!(action(MCP, json!({}), &r, mode), Action::Refuse, "{mode:?}");
    }
    // A deny of a read-only tool too: annotations never loosen a rule.
    assert_eq!(
        action(MCP_RO, json!({}), &[(Deny, "mcp__git__*")], Mode::Default),
        Action::Refuse
    );
    // The user's own call (mcp call) is refused by a deny, runs otherwise.
    let policy = Policy::new(
        Rules::new(rules(&[(Deny, "mcp__git__git_commit")]), vec![]),
        Mode::Default,
        place(),
    );
    assert_eq!(
        policy.decide_explicit(MCP, &json!({})).action,
        Action::Refuse
    );
    assert_eq!(
        policy.decide_explicit(BASH, &cmd("rm -rf x")).action,
        Action::Run
    );
}

#[test]
fn row_2_bypass_runs_what_no_deny_names() {
    assert_eq!(
        action(
            MCP,
            json!({}),
            &[(Decision::Ask, "mcp__git__*")],
            Mode::Bypass
        ),
        Action::Run
    );
    assert_eq!(
        action(BASH, cmd("rm -rf /"), &[], Mode::Bypass),
        Action::Run
    );
}

#[test]
fn row_3_read_only_mode_refuses_what_is_not_read_only_even_allowed() {
    let r = [(Decision::Allow, "bash")];
    assert_eq!(action(BASH, cmd("ls"), &r, Mode::ReadOnly), Action::Refuse);
    assert_eq!(action(MCP_RO, json!({}), &[], Mode::ReadOnly), Action::Run);
    assert_eq!(
        action(READ, json!({"path": "a"}), &[], Mode::ReadOnly),
        Action::Run
    );
}

#[test]
fn row_4_ask_beats_allow_and_read_only() {
    use Decision::*;
    let r = [(Allow, "mcp__git__*"), (Ask, "mcp__git__git_status")];
    assert_eq!(action(MCP_RO, json!({}), &r, Mode::Default), Action::Ask);
    assert_eq!(action(MCP, json!({}), &r, Mode::Default), Action::Run);
    let r = [(Allow, "bash"), (Ask, "bash(git push:*)")];
    assert_eq!(
        action(BASH, cmd("git push origin"), &r, Mode::Default),
        Action::Ask
    );
    // Any command of the line, inside a substitution too.
    assert_eq!(
        action(BASH, cmd("git status && git push"), &r, Mode::Default),
        Action::Ask
    );
    assert_eq!(
        action(BASH, cmd("echo $(git push)"), &r, Mode::Default),
        Action::Ask
    );
    assert_eq!(
        action(BASH, cmd("git status"), &r, Mode::Default),
        Action::Run
    );
    // An ask read rule catches list_dir and grep too.
    let r = [(Ask, "read_file(secrets/**)")];
    assert_eq!(
        action(READ, json!({"path": "secrets/a"}), &r, Mode::Default),
        Action::Ask
    );
    let grep = ToolFacts {
        name: "grep",
        server: None,
        read_only: true,
    };
    assert_eq!(
        action(
            grep,
            json!({"pattern": "x", "path": "secrets"}),
            &r,
            Mode::Default
        ),
        Action::Ask
    );
    assert_eq!(
        action(
            grep,
            json!({"pattern": "x", "path": "src"}),
            &r,
            Mode::Default
        ),
        Action::Run
    );
}

#[test]
fn row_5_allow_by_tool_by_server_by_command_and_by_path() {
    use Decision::*;
    assert_eq!(
        action(
            MCP,
            json!({}),
            &[(Allow, "mcp__git__git_commit")],
            Mode::Default
        ),
        Action::Run
    );
    assert_eq!(
        action(MCP, json!({}), &[(Allow, "mcp__git__*")], Mode::Default),
        Action::Run
    );
    assert_eq!(
        action(MCP, json!({}), &[(Allow, "mcp__github__*")], Mode::Default),
        Action::Ask
    );
    // `mcp__git*` would also match `mcp__github__...`: it is what was written.
    assert_eq!(
        action(MCP, json!({}), &[(Allow, "mcp__gi*")], Mode::Default),
        Action::Run
    );
    let r = [(Allow, "bash(git status:*)"), (Allow, "bash(cargo test*)")];
    assert_eq!(
        action(BASH, cmd("git status"), &r, Mode::Default),
        Action::Run
    );
    assert_eq!(
        action(BASH, cmd("git status --short"), &r, Mode::Default),
        Action::Run
    );
    assert_eq!(
        action(BASH, cmd("git statusx"), &r, Mode::Default),
        Action::Ask
    );
    assert_eq!(
        action(BASH, cmd("git status | cargo test -q"), &r, Mode::Default),
        Action::Run
    );
    // A command the rules do not all vouch for asks.
    assert_eq!(
        action(BASH, cmd("git status; rm -rf ~"), &r, Mode::Default),
        Action::Ask
    );
    assert_eq!(
        action(BASH, cmd("git status && curl x | sh"), &r, Mode::Default),
        Action::Ask
    );
    assert_eq!(
        action(BASH, cmd("git status $(rm -rf ~)"), &r, Mode::Default),
        Action::Ask
    );
    assert_eq!(
        action(BASH, cmd("git status `rm -rf ~`"), &r, Mode::Default),
        Action::Ask
    );
    assert_eq!(
        action(BASH, cmd("git status > ~/.bashrc"), &r, Mode::Default),
        Action::Ask
    );
    assert_eq!(
        action(BASH, cmd("git status 2>&1 >/dev/null"), &r, Mode::Default),
        Action::Run
    );
    assert_eq!(
        action(
            BASH,
            cmd("(rm -rf ~)"),
            &[(Allow, "bash(*)")],
            Mode::Default
        ),
        Action::Ask
    );
    assert_eq!(
        action(BASH, cmd("git status\nrm -rf ~"), &r, Mode::Default),
        Action::Ask
    );
    // Quotes keep operators in: one command.
    let r = [(Allow, "bash(echo:*)")];
    assert_eq!(
        action(BASH, cmd("echo 'a; rm -rf ~'"), &r, Mode::Default),
        Action::Run
    );
    assert_eq!(
        action(BASH, cmd("echo \"$(rm -rf ~)\""), &r, Mode::Default),
        Action::Ask
    );
    // Paths: relative to the project; every form must match.
    let r = [(Allow, "write_file(src/**)")];
    assert_eq!(
        action(WRITE, json!({"path": "src/a/b.rs"}), &r, Mode::Default),
        Action::Run
    );
    assert_eq!(
        action(WRITE, json!({"path": "/p/src/a.rs"}), &r, Mode::Default),
        Action::Run
    );
    assert_eq!(
        action(WRITE, json!({"path": "src/../../etc/x"}), &r, Mode::Default),
        Action::Ask
    );
    assert_eq!(
        action(WRITE, json!({"path": "tests/a.rs"}), &r, Mode::Default),
        Action::Ask
    );
    // A plain `bash` allows every command.
    assert_eq!(
        action(BASH, cmd("a; b $(c)"), &[(Allow, "bash")], Mode::Default),
        Action::Run
    );
}

#[test]
fn row_6_accept_edits_runs_writes_inside_the_project_only() {
    let w = |p: &str| {
        action(
            WRITE,
            json!({"path": p, "content": ""}),
            &[],
            Mode::AcceptEdits,
        )
    };
    assert_eq!(w("src/a.rs"), Action::Run);
    assert_eq!(w("/p/a"), Action::Run);
    assert_eq!(w("../x"), Action::Ask);
    assert_eq!(w("/etc/passwd"), Action::Ask);
    assert_eq!(action(BASH, cmd("ls"), &[], Mode::AcceptEdits), Action::Ask);
    assert_eq!(
        action(WRITE, json!({"path": "src/a.rs"}), &[], Mode::Default),
        Action::Ask
    );
}

#[test]
fn rows_7_and_8_read_only_tools_run_others_ask() {
    assert_eq!(action(MCP_RO, json!({}), &[], Mode::Default), Action::Run);
    assert_eq!(
        action(READ, json!({"path": "x"}), &[], Mode::Default),
        Action::Run
    );
    assert_eq!(action(MCP, json!({}), &[], Mode::Default), Action::Ask);
    assert_eq!(action(BASH, cmd("ls"), &[], Mode::Default), Action::Ask);
    assert_eq!(
        action(WRITE, json!({"path": "a"}), &[], Mode::Default),
        Action::Ask
    );
    // Unannotated, or only destructiveHint: false: not read-only.
    assert!(!ToolFacts::of("t", Some("s"), None).read_only);
    assert!(!ToolFacts::of("t", Some("s"), Some(r#"{"destructiveHint":false}"#)).read_only);
    assert!(ToolFacts::of("t", Some("s"), Some(r#"{"readOnlyHint":true}"#)).read_only);
    assert!(!ToolFacts::of("t", Some("s"), Some(r#"{"readOnlyHint":"yes"}"#)).read_only);
}

#[test]
fn deny_path_rules_follow_symlinks_and_cover_every_read_tool() {
    let dir = std::env::temp_dir().join(format!("h9-perm-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    let secret = dir.join("home/.ssh");
    std::fs::create_dir_all(&secret).unwrap();
    std::fs::create_dir_all(dir.join("p")).unwrap();
    harness9_platform::fs::symlink(&secret, dir.join("p/link")).unwrap();
    let place = Place {
        root: dir.join("p"),
        home: Some(dir.join("home")),
    };
    let r = rules(&[
        (Decision::Deny, "read_file(~/.ssh/**)"),
        (Decision::Allow, "write_file(**)"),
    ]);
    let d = |t, p: &str| decide(t, &json!({"path": p}), &r, Mode::Default, &place).action;
    assert_eq!(d(READ, "link/id_rsa"), Action::Refuse);
    assert_eq!(d(READ, "../home/.ssh"), Action::Refuse);
    let list = ToolFacts {
        name: "list_dir",
        server: None,
        read_only: true,
    };
    assert_eq!(d(list, "link"), Action::Refuse);
    assert_eq!(d(READ, "a.txt"), Action::Run);
    // An allow must hold for the path behind the link too.
    assert_eq!(d(WRITE, "x.rs"), Action::Run);
    let r2 = rules(&[(Decision::Allow, "write_file(*.rs)")]);
    let w = |p: &str| decide(WRITE, &json!({"path": p}), &r2, Mode::Default, &place).action;
    assert_eq!(w("x.rs"), Action::Run);
    assert_eq!(w("link/x.rs"), Action::Ask);
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn the_most_specific_rule_is_the_one_shown() {
    use Decision::*;
    let r = rules(&[
        (Deny, "mcp__*"),
        (Deny, "mcp__git__*"),
        (Deny, "mcp__git__git_commit"),
    ]);
    let v = decide(MCP, &json!({}), &r, Mode::Default, &place());
    assert_eq!(v.reason, Reason::Rule(r[2].clone()));
    let r = rules(&[(Deny, "bash"), (Deny, "bash(rm:*)")]);
    let v = decide(BASH, &cmd("rm -rf x"), &r, Mode::Default, &place());
    assert_eq!(v.reason, Reason::Rule(r[1].clone()));
}

#[test]
fn malformed_rules_say_what_is_wrong() {
    let bad = |t: &str| Pattern::parse(t).unwrap_err();
    assert!(bad("").contains("empty"));
    assert!(bad("bash(git").contains("must end with"));
    assert!(bad("bash()").contains("empty"));
    assert!(bad("bash(:*)").contains("prefix"));
    assert!(bad("mcp__x__y(a)").contains("only bash"));
    assert!(bad("my tool").contains("' '"));
    assert!(bad(&"a".repeat(2000)).contains("at most"));
    let e = parse_flag(
        "bash(git status:*),read_file,oops(",
        Decision::Allow,
        "--allowed-tools",
    )
    .unwrap_err();
    assert!(
        e.starts_with("--allowed-tools: malformed rule \"oops(\""),
        "{e}"
    );
    let ok = parse_flag(
        "bash(git status:*, x),read_file",
        Decision::Allow,
        "--allowed-tools",
    )
    .unwrap();
    assert_eq!(
        ok.iter().map(|r| r.text.as_str()).collect::<Vec<_>>(),
        ["bash(git status:*, x)", "read_file"]
    );
}

fn words(list: &[&str]) -> Vec<String> {
    list.iter().map(|w| (*w).to_owned()).collect()
}

#[test]
fn commands_split_at_operators_outside_quotes() {
    use shell::split_command;
    let s = split_command("a && b || c | d; e & f\ng |& h");
    let firsts: Vec<&str> = s.commands.iter().map(|c| c[0].as_str()).collect();
    assert_eq!(firsts, ["a", "b", "c", "d", "e", "f", "g", "h"]);
    assert!(s.understood);
    // Quotes are removed; what they hold stays one word.
    let s = split_command(r#"git commit -m 'a; b' "c \"d\"" e\ f"#);
    assert!(s.understood, "{s:?}");
    assert_eq!(
        s.commands,
        [words(&["git", "commit", "-m", "a; b", "c \"d\"", "e f"])]
    );
    // Descriptors and /dev/null are in the subset.
    for ok in [
        "git status 2>&1",
        "git status >/dev/null 2>&1",
        "git status &>/dev/null",
        "git status 2> /dev/null",
        "git status </dev/null",
        "git status;",
        "git status &",
        "git status &&\ngit log",
    ] {
        assert!(split_command(ok).understood, "{ok}");
    }
    let s = split_command("if true; then rm -rf x; fi");
    assert!(!s.understood);
    assert!(s.all.contains(&words(&["rm", "-rf", "x"])), "{s:?}");
    for not in [
        "echo {a,b}",
        "{ rm x; }",
        "echo 'unclosed",
        "echo x >> f",
        "echo x > f",
        "cat < f",
        "echo x >&f",
        "cat <<EOF",
        "cat <<< x",
        "a ;; b",
        "; a",
        "a &&",
        "a | | b",
        "FOO=1 a",
        "* x",
        "echo $HOME",
        "echo \"$HOME\"",
        "a # b",
        "a \\\nb",
        "echo a\rb",
        "time a",
        "! a",
        "[[ a ]]",
    ] {
        assert!(!split_command(not).understood, "{not:?}");
    }
    assert!(split_command("cat <(rm x)")
        .all
        .contains(&words(&["rm", "x"])));
}

/// C6: with `allow bash(git status:*)` and `deny bash(rm:*)`, no command hidden behind a
/// construct bash understands differently from a plain split runs unasked; every one that a
/// piece names is refused by the deny rule; the plain command still runs.
#[test]
fn an_allowed_prefix_never_vouches_for_a_hidden_second_command() {
    use Decision::*;
    let r = [(Allow, "bash(git status:*)"), (Deny, "bash(rm:*)")];
    let run = |c: &str| action(BASH, cmd(c), &r, Mode::Default);
    assert_eq!(run("git status"), Action::Run);
    assert_eq!(run("git status --short"), Action::Run);
    assert_eq!(run("git status 2>&1 | git status -s"), Action::Run);
    assert_eq!(run("'git' \"status\" -s"), Action::Run);
    // Each of these hides `rm`: the deny rule finds it.
    for hidden in [
        "git status # $'\\n'rm -rf x",
        "git status $'\\x3b' rm x",
        "git status <<EOF\nx\nEOF\nrm x",
        "git status \\\n; rm x",
        "git status && { rm x; }",
        "git status && ( rm x )",
        "git status $(rm x)",
        "git status `rm x`",
        "git status \"$(rm x)\"",
        "git status <(rm x)",
        "git status >(rm x)",
        "git status | xargs rm",
        "git status | xargs -I{} rm {}",
        "eval 'rm x'",
        "eval rm x",
        "env rm x",
        "env -i FOO=1 rm x",
        "command rm x",
        "builtin rm x",
        "exec rm x",
        "nohup rm x",
        "time rm x",
        "timeout 5 rm x",
        "timeout -s KILL 5 rm x",
        "sudo -u root rm x",
        "sh -c 'rm x'",
        "bash -lc 'git status; rm x'",
        "bash -c \"eval 'rm x'\"",
        "find . -exec rm {} +",
        "/bin/rm x",
        "\\rm x",
        "r\\m x",
        "'rm' x",
        "git status; rm x",
        "git status\nrm x",
        "git status & rm x",
        "git status |& rm x",
        "git status || rm x",
    ] {
        assert_eq!(run(hidden), Action::Refuse, "{hidden:?}");
    }
    // Without the deny rule, none of them runs unasked either.
    let allow_only = [(Allow, "bash(git status:*)")];
    for hidden in [
        "git status # $'\\n'rm -rf x",
        "git status $'\\x3b' rm x",
        "git status <<EOF\nrm x\nEOF",
        "git status \\\n; rm x",
        "git status && { rm x; }",
        "git status $(rm x)",
        "git status `rm x`",
        "git status | xargs rm",
        "git status > .git/hooks/pre-commit",
        "git status $HOME",
        "GIT_PAGER=x git status",
        "git status\r; rm x",
    ] {
        assert_eq!(
            action(BASH, cmd(hidden), &allow_only, Mode::Default),
            Action::Ask,
            "{hidden:?}"
        );
    }
    // A word that looks like the prefix but is one word (`'git status'`) is not the prefix.
    assert_eq!(
        action(BASH, cmd("'git status' x"), &allow_only, Mode::Default),
        Action::Ask
    );
    // An argument that merely says `rm` is not a command.
    assert_eq!(run("git status rm"), Action::Run);
}

#[test]
fn globs() {
    use pattern::glob;
    assert!(glob("mcp__git__*", "mcp__git__x", false));
    assert!(!glob("mcp__git__*", "mcp__gitx", false));
    assert!(glob("/p/src/**", "/p/src/a/b", true));
    assert!(!glob("/p/src/*", "/p/src/a/b", true));
    assert!(glob("/p/*.rs", "/p/a.rs", true));
    assert!(!glob("/p/*.rs", "/p/a/b.rs", true));
    assert!(glob("/p/**/*.rs", "/p/a/b.rs", true));
    assert!(glob("a?c", "abc", true));
    // Many stars on a long text stay quick (no exponential backtracking).
    let t = "a".repeat(5000);
    assert!(!glob("*a*a*a*a*a*a*a*b", &t, false));
}

#[test]
fn always_answers_name_the_tool_or_a_command_prefix() {
    assert_eq!(
        tool_rule("mcp__git__git_commit", Some("git"), &json!({})).as_deref(),
        Some("mcp__git__git_commit")
    );
    // An MCP tool's rule spells its server as configured.
    assert_eq!(
        tool_rule("mcp__my_git__t", Some("my.git"), &json!({})).as_deref(),
        Some("mcp__my.git__t")
    );
    assert_eq!(
        tool_rule("bash", None, &cmd("git status --short")).as_deref(),
        Some("bash(git status:*)")
    );
    assert_eq!(
        tool_rule("bash", None, &cmd("ls -la")).as_deref(),
        Some("bash(ls:*)")
    );
    // No prefix rule for a command that runs others, nor for a line not understood.
    for c in [
        "env FOO=1 make",
        "sh -c 'make'",
        "xargs rm",
        "eval make",
        "sudo make",
        "ls # x",
    ] {
        assert_eq!(tool_rule("bash", None, &cmd(c)), None, "{c}");
    }
    assert_eq!(tool_rule("bash", None, &cmd("ls; rm x")), None);
    assert_eq!(tool_rule("bash", None, &cmd("FOO=1 make")), None);
    assert_eq!(server_rule("git").as_deref(), Some("mcp__git__*"));
    // A server's name as configured, never sanitized; one a rule cannot spell exactly (a `*`
    // would make it a glob over other servers) gets no rule.
    assert_eq!(server_rule("my.srv-x").as_deref(), Some("mcp__my.srv-x__*"));
    assert_eq!(server_rule("my*srv"), None);
    assert_eq!(server_rule("*"), None);
    assert_eq!(server_rule("my srv"), None);
    assert_eq!(tool_rule("mcp__x__t", Some("*"), &json!({})), None);
    for t in [
        tool_rule("bash", None, &cmd("cargo test")).unwrap(),
        server_rule("x").unwrap(),
    ] {
        Pattern::parse(&t).unwrap();
    }
}

#[test]
fn refusal_texts_name_the_rule_or_the_flag() {
    let r = rules(&[(Decision::Deny, "mcp__git__git_commit")]);
    let v = decide(MCP, &json!({}), &r, Mode::Bypass, &place());
    assert_eq!(
        v.refusal("mcp__git__git_commit", Some("git"), true),
        "the call of \"mcp__git__git_commit\" is refused by the user's deny rule \"mcp__git__git_commit\" (/u/harness9.toml:1); do not try it again: tell the user what you wanted to do, or find another way"
    );
    let v = decide(BASH, &cmd("ls"), &[], Mode::Default, &place()).headless();
    assert_eq!(v.action, Action::Refuse);
    assert_eq!(
        v.refusal("bash", None, true),
        "the call of \"bash\" needs the user's permission and this run cannot ask (run -p): no rule allows it, so it did not run. The user can allow it with --allowed-tools 'bash', with allow = [\"bash\"] under [permissions] in your own settings file (a project's harness9.toml may not allow), or with --permission-mode bypass; tell the user what you wanted to do, or find another way"
    );
    let r = rules(&[(Decision::Ask, "bash(git push:*)")]);
    let v = decide(BASH, &cmd("git push"), &r, Mode::Default, &place()).headless();
    assert!(v
        .refusal("bash", None, true)
        .contains("ask rule \"bash(git push:*)\" (/u/harness9.toml:1)"));
    let v = decide(BASH, &cmd("ls"), &[], Mode::ReadOnly, &place());
    assert!(v
        .refusal("bash", None, true)
        .contains("--permission-mode read-only runs only read-only tools"));
}

#[test]
fn remembered_rules_are_learned_once_and_forgotten() {
    let rs = Rules::new(vec![], vec![]);
    let r = Rule::parse(Decision::Allow, "mcp__git__*", Source::Saved).unwrap();
    assert!(rs.learn(r.clone()));
    assert!(!rs.learn(r));
    assert_eq!(
        decide(MCP, &json!({}), &rs.all(), Mode::Default, &place()).action,
        Action::Run
    );
    assert!(rs.forget(Decision::Allow, "mcp__git__*"));
    assert!(!rs.forget(Decision::Allow, "mcp__git__*"));
    assert_eq!(
        decide(MCP, &json!({}), &rs.all(), Mode::Default, &place()).action,
        Action::Ask
    );
}

/// An "always" answer is not seen by a call judged as of a moment before it: the other calls
/// of the same reply, waiting unseen, are asked again; later calls run.
#[test]
fn an_always_answer_covers_later_calls_not_those_already_waiting() {
    let saved = Rule::parse(Decision::Allow, "bash(ls:*)", Source::Saved).unwrap();
    let policy = Policy::new(Rules::new(vec![], vec![saved]), Mode::Default, place());
    let waiting = policy.rules.moment();
    let r = Rule::parse(Decision::Allow, "mcp__git__*", Source::Saved).unwrap();
    assert!(policy.rules.learn(r));
    let later = policy.rules.moment();
    assert!(later > waiting);
    assert_eq!(
        policy.decide_as_of(MCP, &json!({}), waiting).action,
        Action::Ask
    );
    assert_eq!(
        policy.decide_as_of(MCP, &json!({}), later).action,
        Action::Run
    );
    assert_eq!(policy.decide(MCP, &json!({}),).action, Action::Run);
    // Rules saved before the session count at every moment.
    assert_eq!(
        policy.decide_as_of(BASH, &cmd("ls -la"), waiting).action,
        Action::Run
    );
}

#[test]
fn a_server_rule_covers_that_servers_tools_only() {
    // Server `git__evil` registers `mcp__git__evil__x`: not git's.
    let evil = ToolFacts {
        name: "mcp__git__evil__x",
        server: Some("git__evil"),
        read_only: false,
    };
    let r = [(Decision::Allow, "mcp__git__*")];
    assert_eq!(action(evil, json!({}), &r, Mode::Default), Action::Ask);
    assert_eq!(action(MCP, json!({}), &r, Mode::Default), Action::Run);
    // A built-in named like it is no server's.
    let fake = ToolFacts {
        name: "mcp__git__x",
        server: None,
        read_only: false,
    };
    assert_eq!(action(fake, json!({}), &r, Mode::Default), Action::Ask);
    // A rule names a server as its config writes it, never as sanitized: server `my.git`
    // registers `mcp__my_git__...`, but a rule for server `my_git` is not about it.
    let dotted = ToolFacts {
        name: "mcp__my_git__t",
        server: Some("my.git"),
        read_only: false,
    };
    for r in ["mcp__my_git__*", "mcp__my_git__t"] {
        for kind in [Decision::Deny, Decision::Allow] {
            assert_eq!(
                action(dotted, json!({}), &[(kind, r)], Mode::Default),
                Action::Ask,
                "{r}"
            );
        }
    }
    for r in ["mcp__my.git__*", "mcp__my.git__t", "mcp__my*"] {
        assert_eq!(
            action(dotted, json!({}), &[(Decision::Deny, r)], Mode::Default),
            Action::Refuse,
            "{r}"
        );
        assert_eq!(
            action(dotted, json!({}), &[(Decision::Allow, r)], Mode::Default),
            Action::Run,
            "{r}"
        );
    }
    // And the headless refusal suggests that spelling.
    let v = decide(dotted, &json!({}), &[], Mode::Default, &place()).headless();
    assert!(v
        .refusal("mcp__my_git__t", Some("my.git"), true)
        .contains("--allowed-tools 'mcp__my.git__t'"));
    // Other globs stay globs.
    assert_eq!(
        action(
            evil,
            json!({}),
            &[(Decision::Deny, "mcp__git*")],
            Mode::Default
        ),
        Action::Refuse
    );
}

/// C9: Claude Code's spellings mean what they mean there.
#[test]
fn claude_code_spellings_map_to_the_built_ins() {
    use Decision::*;
    let deny = |rule: &str, tool: ToolFacts<'_>, args: serde_json::Value| {
        action(tool, args, &[(Deny, rule)], Mode::Bypass)
    };
    assert_eq!(deny("Bash", BASH, cmd("ls")), Action::Refuse);
    assert_eq!(deny("Bash(rm:*)", BASH, cmd("env rm x")), Action::Refuse);
    assert_eq!(deny("Bash(rm:*)", BASH, cmd("ls")), Action::Run);
    assert_eq!(
        deny("Bash(git status)", BASH, cmd("git status")),
        Action::Refuse
    );
    assert_eq!(deny("Read", READ, json!({"path": "a"})), Action::Refuse);
    for t in ["list_dir", "grep"] {
        let tool = ToolFacts {
            name: t,
            server: None,
            read_only: true,
        };
        assert_eq!(deny("Read", tool, json!({})), Action::Refuse, "{t}");
        assert_eq!(
            deny("Read(~/.ssh/**)", tool, json!({"path": "/home/u/.ssh"})),
            Action::Refuse,
            "{t}"
        );
    }
    assert_eq!(
        deny(
            "Read(~/.ssh/**)",
            READ,
            json!({"path": "/home/u/.ssh/id_rsa"})
        ),
        Action::Refuse
    );
    assert_eq!(
        deny("Edit(src/**)", WRITE, json!({"path": "src/a"})),
        Action::Refuse
    );
    assert_eq!(deny("Write", WRITE, json!({"path": "a"})), Action::Refuse);
    assert_eq!(
        deny("Edit(src/**)", WRITE, json!({"path": "b"})),
        Action::Run
    );
    let list = ToolFacts {
        name: "list_dir",
        server: None,
        read_only: true,
    };
    assert_eq!(deny("LS", list, json!({})), Action::Refuse);
    assert_eq!(deny("Glob", list, json!({})), Action::Refuse);
    // `mcp__server` is every tool of the server; `mcp__server__*` too.
    assert_eq!(deny("mcp__git", MCP, json!({})), Action::Refuse);
    assert_eq!(deny("mcp__git__*", MCP, json!({})), Action::Refuse);
    assert_eq!(deny("mcp__gi", MCP, json!({})), Action::Run);
    assert_eq!(deny("mcp__git__git_commit", MCP, json!({})), Action::Refuse);
    // A Claude Code tool harness9 lacks: a deny rule is kept (it refuses nothing), an allow
    // or ask rule is an error.
    assert!(Rule::parse(Deny, "WebFetch", Source::Saved).is_ok());
    assert!(Rule::parse(Deny, "WebFetch(domain:example.com)", Source::Saved).is_ok());
    for k in [Allow, Ask] {
        assert_eq!(
            Rule::parse(k, "WebSearch", Source::Saved).unwrap_err(),
            "harness9 has no WebSearch tool (a Claude Code tool): remove the rule"
        );
    }
    let flag = parse_flag("Bash,mcp__web", Deny, "--disallowed-tools").unwrap();
    assert_eq!(flag[0].pattern.tool, "bash");
    assert_eq!(flag[1].pattern.tool, "mcp__web__*");
}

/// C9: a rule that names no built-in and no configured server is warned about, naming the
/// rule and where it is written.
#[test]
fn rules_that_match_nothing_are_named() {
    use Decision::*;
    let builtins = ["bash", "read_file", "write_file", "list_dir", "grep"];
    let list = rules(&[
        (Deny, "bash_exec"),
        (Deny, "mcp__brave__*"),
        (Deny, "WebFetch"),
        (Ask, "mcp__git__*"),
        (Deny, "bash(rm:*)"),
        (Deny, "Bash"),
        (Allow, "mcp__git__git_commit"),
        (Allow, "mcp__gi*"),
        (Allow, "mcp__github__x"),
        (Deny, "mcp__*"),
        (Deny, "*"),
    ]);
    let w = unmatched(&list, &builtins, &["git"]);
    assert_eq!(w.len(), 4, "{w:#?}");
    assert!(w[0].starts_with(
        "/u/harness9.toml:1: deny rule \"bash_exec\" denies nothing: it matches no built-in tool (bash, read_file"
    ), "{}", w[0]);
    assert!(w[0].contains("no configured server (git)"), "{}", w[0]);
    assert!(w[1].starts_with("/u/harness9.toml:2: deny rule \"mcp__brave__*\" denies nothing"));
    assert!(w[2].starts_with(
        "/u/harness9.toml:3: deny rule \"WebFetch\" denies nothing: harness9 has no WebFetch tool"
    ), "{}", w[2]);
    assert!(w[3].starts_with("/u/harness9.toml:9: allow rule \"mcp__github__x\" allows nothing"));
    // With the server configured, its rule matches.
    assert_eq!(
        unmatched(&list, &builtins, &["git", "brave", "github"]).len(),
        2
    );
    // A rule written with the sanitized name of `brave-search` names no server: it says the
    // spelling that does.
    let sanitized = rules(&[
        (Deny, "mcp__brave_search__*"),
        (Deny, "mcp__brave-search__*"),
    ]);
    let w = unmatched(&sanitized, &builtins, &["brave-search"]);
    assert_eq!(w.len(), 1, "{w:#?}");
    assert!(
        w[0].contains("deny rule \"mcp__brave_search__*\" denies nothing")
            && w[0].contains("write \"mcp__brave-search__*\" for server \"brave-search\""),
        "{}",
        w[0]
    );
    // Flags are named as the flag.
    let flag = parse_flag("mcp__web", Deny, "--disallowed-tools").unwrap();
    assert!(unmatched(&flag, &builtins, &[])[0]
        .starts_with("--disallowed-tools: deny rule \"mcp__web\" denies nothing"));
}

/// C7: the resolver follows links component by component as the OS does, `..` after them.
#[test]
fn paths_resolve_as_the_os_opens_them() {
    use pattern::{in_git_dir, os_path, path_forms};
    let base = std::env::temp_dir().join(format!("h9-os-path-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&base);
    let project = base.join("p");
    let outside = base.join("outside");
    std::fs::create_dir_all(project.join("dir")).unwrap();
    std::fs::create_dir_all(outside.join("sub")).unwrap();
    harness9_platform::fs::symlink(outside.join("sub"), project.join("dir/link")).unwrap();
    harness9_platform::fs::symlink("dir/link", project.join("rel")).unwrap();
    harness9_platform::fs::symlink("loop", project.join("loop")).unwrap();
    let real = |a: &str| os_path(a, &project).unwrap();
    assert_eq!(real("dir/link/../secret"), outside.join("secret"));
    assert_eq!(real("rel/../x/y"), outside.join("x/y"));
    assert_eq!(real("dir/./new/../f"), project.join("dir/f"));
    assert_eq!(
        real(&outside.join("sub/a").to_string_lossy()),
        outside.join("sub/a")
    );
    assert!(os_path("loop/x", &project)
        .unwrap_err()
        .contains("symbolic links"));
    // The rules see both forms: as written and as opened.
    assert_eq!(
        path_forms("dir/link/../secret", &project),
        [project.join("dir/secret"), outside.join("secret")]
    );
    let deny = [(
        Decision::Deny,
        format!("read_file({}/**)", outside.display()),
    )];
    let deny: Vec<(Decision, &str)> = deny.iter().map(|(k, t)| (*k, t.as_str())).collect();
    let place = Place {
        root: project.clone(),
        home: None,
    };
    let v = decide(
        READ,
        &json!({"path": "dir/link/../secret"}),
        &rules(&deny),
        Mode::Default,
        &place,
    );
    assert_eq!(v.action, Action::Refuse);
    // accept-edits never runs a write into .git unasked.
    let v = decide(
        WRITE,
        &json!({"path": ".git/hooks/pre-commit"}),
        &[],
        Mode::AcceptEdits,
        &place,
    );
    assert_eq!(v.action, Action::Ask);
    assert!(in_git_dir(Path::new("/p/.GIT/config")));
    assert!(!in_git_dir(Path::new("/p/.github/x")));
    let _ = std::fs::remove_dir_all(&base);
}

/// A hostile line (thousands of wrappers, nested `eval`s) is decided quickly, without deep
/// recursion, and the deny rule still finds the command.
#[test]
fn a_pathological_line_is_decided_quickly() {
    use Decision::*;
    let r = [(Allow, "bash(env:*)"), (Deny, "bash(rm:*)")];
    let started = std::time::Instant::now();
    let line = format!("{}rm x", "env ".repeat(50_000));
    assert_eq!(action(BASH, cmd(&line), &r, Mode::Default), Action::Refuse);
    let line = format!("{}'rm x'", "eval ".repeat(20_000));
    assert_eq!(action(BASH, cmd(&line), &r, Mode::Default), Action::Refuse);
    // Past the bounds of the search, a deny rule on commands is taken to match.
    let line: String = (0..100_000).map(|i| format!("a{i}; ")).collect();
    assert_eq!(action(BASH, cmd(&line), &r, Mode::Default), Action::Refuse);
    assert_eq!(
        action(BASH, cmd(&line), &[(Allow, "bash(*)")], Mode::Default),
        Action::Ask
    );
    assert!(
        started.elapsed() < std::time::Duration::from_secs(10),
        "{:?}",
        started.elapsed()
    );
}

const EDIT: ToolFacts<'static> = ToolFacts {
    name: "edit_file",
    server: None,
    read_only: false,
};
const PATCH: ToolFacts<'static> = ToolFacts {
    name: "apply_patch",
    server: None,
    read_only: false,
};

fn edit(p: &str) -> serde_json::Value {
    json!({"path": p, "old_string": "a", "new_string": "b"})
}

fn patch(body: &str) -> serde_json::Value {
    json!({ "input": format!("*** Begin Patch\n{body}\n*** End Patch\n") })
}

/// No side door: what stops `write_file` on a path stops the edit tools on it, every path of
/// a patch (a Move's target too), however the path is spelled.
#[test]
fn a_write_file_deny_stops_edit_file_and_apply_patch_on_every_path_of_a_patch() {
    use Decision::*;
    for deny in [
        "write_file(secrets/**)",
        "Edit(secrets/**)",
        "Write(/p/secrets/**)",
    ] {
        let r = [(Deny, deny), (Allow, "edit_file"), (Allow, "apply_patch")];
        let a = |tool, args| action(tool, args, &r, Mode::Bypass);
        assert_eq!(a(EDIT, edit("secrets/k")), Action::Refuse, "{deny}");
        assert_eq!(a(EDIT, edit("src/../secrets/k")), Action::Refuse, "{deny}");
        assert_eq!(a(EDIT, edit("/p/secrets/k")), Action::Refuse, "{deny}");
        assert_eq!(a(EDIT, edit("src/a.rs")), Action::Run, "{deny}");
        for body in [
            "*** Add File: secrets/new\n+x",
            "*** Delete File: secrets/k",
            "*** Update File: secrets/k\n@@\n-a\n+b",
            "*** Update File: src/a.rs\n*** Move to: secrets/a.rs\n@@\n-a\n+b",
            "*** Update File: src/a.rs\n@@\n-a\n+b\n*** Add File: ./src/../secrets/x\n+y",
        ] {
            assert_eq!(a(PATCH, patch(body)), Action::Refuse, "{deny}: {body}");
        }
        assert_eq!(
            a(PATCH, patch("*** Update File: src/a.rs\n@@\n-a\n+b")),
            Action::Run,
            "{deny}"
        );
    }
    // A bare `write_file` deny names every file writer.
    let r = [(Deny, "write_file")];
    assert_eq!(
        action(EDIT, edit("src/a.rs"), &r, Mode::Bypass),
        Action::Refuse
    );
    assert_eq!(
        action(PATCH, patch("*** Delete File: a"), &r, Mode::Bypass),
        Action::Refuse
    );
    // An allow on write_file's paths allows the edits there; an edit_file rule is its own.
    let r = [(Allow, "write_file(src/**)")];
    assert_eq!(
        action(EDIT, edit("src/a.rs"), &r, Mode::Default),
        Action::Run
    );
    assert_eq!(action(EDIT, edit("a.rs"), &r, Mode::Default), Action::Ask);
    assert_eq!(
        action(
            PATCH,
            patch("*** Update File: src/a.rs\n*** Move to: b.rs\n@@\n-a\n+b"),
            &r,
            Mode::Default
        ),
        Action::Ask
    );
    assert_eq!(
        action(
            WRITE,
            json!({"path": "src/a.rs", "content": ""}),
            &[(Allow, "edit_file")],
            Mode::Default
        ),
        Action::Ask
    );
    assert!(Pattern::parse("edit_file(src/**)").is_ok());
    assert!(Pattern::parse("apply_patch(src/**)").is_ok());
}

#[test]
fn accept_edits_runs_the_edit_tools_inside_the_project_only() {
    let m = Mode::AcceptEdits;
    assert_eq!(action(EDIT, edit("src/a.rs"), &[], m), Action::Run);
    assert_eq!(action(EDIT, edit("../a.rs"), &[], m), Action::Ask);
    assert_eq!(action(EDIT, edit(".git/config"), &[], m), Action::Ask);
    assert_eq!(action(EDIT, json!({}), &[], m), Action::Ask);
    let p = |body: &str| action(PATCH, patch(body), &[], m);
    assert_eq!(
        p("*** Update File: a\n*** Move to: src/b\n@@\n-a\n+b\n*** Delete File: c"),
        Action::Run
    );
    assert_eq!(p("*** Add File: /etc/x\n+a"), Action::Ask);
    assert_eq!(
        p("*** Update File: a\n*** Move to: ../b\n@@\n-a\n+b"),
        Action::Ask
    );
    assert_eq!(p("*** Add File: .git/hooks/pre-commit\n+x"), Action::Ask);
    // A patch that does not parse is asked about (and writes nothing when run).
    assert_eq!(
        action(PATCH, json!({"input": "*** Begin Patch\n"}), &[], m),
        Action::Ask
    );
    assert_eq!(
        action(EDIT, edit("src/a.rs"), &[], Mode::Default),
        Action::Ask
    );
}

/// A link into a denied directory is no side door for the edit tools.
#[test]
fn a_write_deny_follows_symlinks_for_the_edit_tools() {
    let base = std::env::temp_dir().join(format!("harness9-perm-edit-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&base);
    let project = base.join("p");
    std::fs::create_dir_all(project.join("secrets")).unwrap();
    std::fs::write(project.join("secrets/k"), "a\n").unwrap();
    harness9_platform::fs::symlink("secrets", project.join("link")).unwrap();
    let place = Place {
        root: project.clone(),
        home: None,
    };
    let r = rules(&[(Decision::Deny, "write_file(secrets/**)")]);
    let d = |tool, args: serde_json::Value| decide(tool, &args, &r, Mode::Bypass, &place).action;
    assert_eq!(d(EDIT, edit("link/k")), Action::Refuse);
    assert_eq!(
        d(PATCH, patch("*** Update File: link/k\n@@\n-a\n+b")),
        Action::Refuse
    );
    assert_eq!(
        d(
            PATCH,
            patch("*** Add File: x\n+a\n*** Update File: y\n*** Move to: link/z\n@@\n-a\n+b")
        ),
        Action::Refuse
    );
    let _ = std::fs::remove_dir_all(&base);
}

/// On a case-insensitive file system a path's case is the one on disk before any rule sees it
/// (this machine's may be case-sensitive: the choice is tested on listings).
#[test]
fn a_name_is_taken_as_it_is_on_disk_when_it_differs_only_in_case() {
    use std::ffi::OsString;
    let list = |names: &[&str]| {
        names
            .iter()
            .map(OsString::from)
            .collect::<Vec<_>>()
            .into_iter()
    };
    assert_eq!(
        pattern::same_but_case("Secrets", list(&["src", "secrets"])),
        Some(OsString::from("secrets"))
    );
    assert_eq!(
        pattern::same_but_case("Secrets", list(&["secrets", "Secrets"])),
        None
    );
    assert_eq!(
        pattern::same_but_case("ÉTÉ", list(&["été"])),
        Some(OsString::from("été"))
    );
    assert_eq!(pattern::same_but_case("x", list(&["y"])), None);
    // A case-sensitive file system: both names are what they are.
    let base = std::env::temp_dir().join(format!("harness9-perm-case-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&base);
    std::fs::create_dir_all(base.join("secrets")).unwrap();
    let real = pattern::os_path("Secrets/k", &base).unwrap();
    let sensitive = std::fs::symlink_metadata(base.join("SECRETS")).is_err();
    if sensitive {
        assert_eq!(real, base.join("Secrets/k"));
    } else {
        assert_eq!(real, base.join("secrets/k"));
    }
    let _ = std::fs::remove_dir_all(&base);
}
