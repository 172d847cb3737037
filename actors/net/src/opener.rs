//! The system opener: a browser (`$BROWSER`, or the one given), else the platform's opener
//! (`xdg-open`, `open` on macOS), started detached through the platform seam
//! (`harness9_platform::open`): in a session of its own, which the exit sweep spares (a GUI
//! program it starts may outlive harness9). Tokio reaps it. Used by the OAuth login (the
//! authorization URL) and the TUI (a file to edit, a URL the user said yes to).
//!
//! A URL is checked first ([`check_url`]): only `https`, or `http` to a loopback host; no
//! control, whitespace or invisible formatting character anywhere; parsed with a WHATWG URL
//! parser and handed over as that parser writes it back (ASCII, percent-encoded), which is the
//! exact string the caller prints. It then always begins with `https://` or `http://`, so no
//! program can read it as an option. `--` is not passed: `xdg-open` refuses it and `$BROWSER`
//! may be any program (Firefox opens a tab named `--`).

use std::ffi::OsStr;
use std::net::IpAddr;
use std::path::Path;

/// Whether `c` may not appear in a URL handed to a browser: controls (C0, DEL, C1, ESC),
/// whitespace, and invisible formatting characters (bidi controls and marks, zero-width
/// characters, soft hyphen, tags), which make the printed copy read differently from what
/// it is.
fn forbidden(c: char) -> bool {
    c.is_control() || c.is_whitespace() || harness9_protocol::chars::is_invisible_format(c)
}

/// Whether `host` is a loopback host: `localhost`, 127.0.0.0/8 or `::1`.
fn loopback(host: &url::Host<&str>) -> bool {
    match host {
        url::Host::Domain(d) => d.eq_ignore_ascii_case("localhost"),
        url::Host::Ipv4(a) => IpAddr::V4(*a).is_loopback(),
        url::Host::Ipv6(a) => IpAddr::V6(*a).is_loopback(),
    }
}

/// `raw` as a URL a browser may be given: `https` (or `http` to a loopback host) with a host,
/// no control, whitespace or invisible character, not starting with `-`. The parsed URL (its
/// [`url::Url::as_str`] is what to print and open), or why not.
pub fn check_url(raw: &str) -> Result<url::Url, String> {
    if raw.starts_with('-') {
        return Err("it starts with `-` (a browser would read it as an option)".to_owned());
    }
    if let Some(c) = raw.chars().find(|c| forbidden(*c)) {
        return Err(format!(
            "it contains the invisible or control character U+{:04X}",
            u32::from(c)
        ));
    }
    let url = url::Url::parse(raw).map_err(|e| format!("it is not a URL ({e})"))?;
    let scheme = url.scheme();
    if scheme != "https" && scheme != "http" {
        return Err(format!(
            "its scheme `{scheme}` is not https (only https, or http to loopback, is opened)"
        ));
    }
    let Some(host) = url.host() else {
        return Err("it has no host".to_owned());
    };
    if scheme == "http" && !loopback(&host) {
        return Err("plain http is opened only for a loopback host".to_owned());
    }
    Ok(url)
}

/// The host of `raw` as a browser reads it (`https://a.example\@b.example/` is `a.example`),
/// in its ASCII form (punycode), or `None` when it is no URL with a host.
pub fn host_of(raw: &str) -> Option<String> {
    let url = url::Url::parse(raw.trim()).ok()?;
    url.host_str()
        .filter(|h| !h.is_empty())
        .map(|h| h.trim_start_matches('[').trim_end_matches(']').to_owned())
}

/// Opens the URL `raw` after [`check_url`] with `browser` (a command line, words split on
/// whitespace; a `%s` word is replaced by the URL, else it goes last), else `$BROWSER` when
/// `use_browser_env`, else the system opener. `(program, the exact URL opened)`, or why not.
pub fn open_url(
    raw: &str,
    browser: Option<&str>,
    use_browser_env: bool,
) -> Result<(String, String), String> {
    let url = check_url(raw).map_err(|e| format!("refusing to open this address: {e}"))?;
    let program = open(OsStr::new(url.as_str()), browser, use_browser_env)?;
    Ok((program, url.into()))
}

/// Opens the file `path` with the system opener (never `$BROWSER`); a relative path is made
/// absolute first, so it never begins with `-`. The program's name, or why it could not start.
pub fn open_file(path: &Path) -> Result<String, String> {
    let absolute = std::path::absolute(path).map_err(|e| format!("{}: {e}", path.display()))?;
    open(absolute.as_os_str(), None, false)
}

/// Starts the opener on `target` (already checked by [`open_url`] or [`open_file`]).
fn open(target: &OsStr, browser: Option<&str>, use_browser_env: bool) -> Result<String, String> {
    let browser = browser
        .map(str::to_owned)
        .or_else(|| {
            use_browser_env
                .then(|| std::env::var("BROWSER").ok())
                .flatten()
        })
        .filter(|b| !b.trim().is_empty());
    let (program, args): (String, Vec<String>) = match &browser {
        Some(b) => {
            let mut words = b.split_whitespace().map(str::to_owned);
            (words.next().unwrap_or_default(), words.collect())
        }
        None => (
            harness9_platform::open::system_opener().to_owned(),
            Vec::new(),
        ),
    };
    let placeholder = args.iter().any(|a| a == "%s");
    let mut argv: Vec<&OsStr> = args
        .iter()
        .map(|a| if a == "%s" { target } else { OsStr::new(a) })
        .collect();
    if !placeholder {
        argv.push(target);
    }
    harness9_platform::open::spawn_detached(&program, &argv)?;
    Ok(program)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_https_and_loopback_http_without_hidden_characters_are_opened() {
        for ok in [
            "https://auth.example/authorize?x=1",
            "http://127.0.0.1:8080/cb",
            "http://127.9.9.9/",
            "http://[::1]:1/x",
            "http://localhost:3000/",
            "HTTPS://Auth.Example/a",
        ] {
            assert!(check_url(ok).is_ok(), "{ok}");
        }
        for bad in [
            "--evil-option=x",
            "-https://a.example/",
            "file:///etc/passwd",
            "javascript:alert(1)",
            "vscode://x/y",
            "data:text/html,hi",
            "http://auth.example/",
            "http://127.0.0.1.evil.example/",
            "https://a.example/\u{1b}]52;c;aGk=\u{7}",
            "https://a.example/\u{202e}gpj.exe",
            "https://a.example/\u{200b}",
            "https://a.example/ b",
            "https://a.example/\tb",
            " https://a.example/",
            "https:///",
            "",
        ] {
            assert!(check_url(bad).is_err(), "{bad:?}");
        }
        // What is opened is the parser's ASCII form: percent-encoded, punycode host.
        let u = check_url("https://bücher.example/ä?q=é").map(String::from);
        assert_eq!(
            u.as_deref(),
            Ok("https://xn--bcher-kva.example/%C3%A4?q=%C3%A9")
        );
    }

    #[test]
    fn the_host_is_the_one_a_browser_goes_to() {
        let h = |s: &str| host_of(s);
        assert_eq!(
            h("https://evil.example\\@accounts.google.com/").as_deref(),
            Some("evil.example")
        );
        assert_eq!(
            h("https://accounts.google.com@evil.example/").as_deref(),
            Some("evil.example")
        );
        assert_eq!(
            h("https://user:pw@login.example.com:8443/a?b").as_deref(),
            Some("login.example.com")
        );
        assert_eq!(h("https://[::1]:9/").as_deref(), Some("::1"));
        assert_eq!(h("mailto:x@y"), None);
        assert_eq!(h("not a url"), None);
    }
}
