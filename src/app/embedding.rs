//! The page embedded in a course page: which origins may drive it over
//! `postMessage` (the host-page API, `www/host.js`). `origin=` in the URL
//! is a comma-separated allow-list of origins (`scheme://host[:port]`), or
//! `*` for any; without it only the page's own origin may. The parameter
//! belongs to the embedder: it stays in the frame's own address (a reload
//! keeps it) but never in the link a student shares.

use super::settings::parse_query;

/// Who may drive the page besides itself.
#[derive(Clone, Debug, PartialEq)]
pub enum Drivers {
    /// Any origin (`origin=*`).
    Any,
    /// These origins, in the canonical form browsers give `event.origin`.
    Origins(Vec<String>),
}

impl Drivers {
    /// The allow-list a URL query gives (`None` without `origin=`, or when
    /// none of its entries is an origin), and one warning per entry
    /// refused.
    pub fn from_query(query: &str) -> (Option<Drivers>, Vec<String>) {
        let mut warnings = Vec::new();
        let mut any = false;
        let mut origins: Vec<String> = Vec::new();
        for (_, value) in parse_query(query)
            .into_iter()
            .filter(|(k, _)| k == "origin")
        {
            for entry in value.split(',').map(str::trim) {
                if entry == "*" {
                    any = true;
                    continue;
                }
                match canonical_origin(entry) {
                    Ok(o) if !origins.contains(&o) => origins.push(o),
                    Ok(_) => {}
                    Err(why) => warnings.push(format!("origin={entry}: {why}; ignored")),
                }
            }
        }
        let drivers = match (any, origins.is_empty()) {
            (true, _) => Some(Drivers::Any),
            (false, false) => Some(Drivers::Origins(origins)),
            (false, true) => None,
        };
        (drivers, warnings)
    }

    /// The query parameter that gives this list back (for the frame's
    /// address bar).
    pub fn to_query(&self) -> String {
        match self {
            Drivers::Any => "origin=*".to_string(),
            // An origin is letters, digits and `:/.-[]`: nothing to escape
            // but the separator, which none contains.
            Drivers::Origins(list) => format!("origin={}", list.join(",")),
        }
    }
}

/// `entry` as browsers write an origin (`event.origin`): scheme and host
/// in lower case, the scheme's default port left out; refused unless it
/// is `scheme://host[:port]` with nothing after (a path, even `/`, would
/// never equal a message's origin, so it is named rather than dropped).
pub fn canonical_origin(entry: &str) -> Result<String, String> {
    const SHAPE: &str = "an origin is scheme://host[:port], e.g. https://course.example.org";
    let (scheme, rest) = entry
        .split_once("://")
        .ok_or_else(|| format!("not an origin ({SHAPE})"))?;
    let scheme = scheme.to_ascii_lowercase();
    let scheme_ok = scheme.starts_with(|c: char| c.is_ascii_alphabetic())
        && scheme
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || "+.-".contains(c));
    if !scheme_ok {
        return Err(format!("'{scheme}' is not a URL scheme ({SHAPE})"));
    }
    if rest.contains(['/', '?', '#']) {
        return Err(format!(
            "a path, query or fragment after the host ({SHAPE})"
        ));
    }
    // An IPv6 host is bracketed; its colons are not the port's.
    let (host, port) = match rest.rfind(':') {
        Some(i) if !rest[i..].contains(']') => (&rest[..i], Some(&rest[i + 1..])),
        _ => (rest, None),
    };
    let host = host.to_ascii_lowercase();
    let host_ok = if let Some(inner) = host.strip_prefix('[').and_then(|h| h.strip_suffix(']')) {
        !inner.is_empty()
            && inner
                .chars()
                .all(|c| c.is_ascii_hexdigit() || ":.".contains(c))
    } else {
        !host.is_empty()
            && host
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || ".-".contains(c))
    };
    if !host_ok {
        return Err(format!("'{host}' is not a host name ({SHAPE})"));
    }
    let port = match port {
        None => None,
        Some(p) => match p.parse::<u16>() {
            Ok(n) if n > 0 && p.chars().all(|c| c.is_ascii_digit()) => Some(n),
            _ => return Err(format!("'{p}' is not a port ({SHAPE})")),
        },
    };
    let default_port = match scheme.as_str() {
        "http" | "ws" => Some(80),
        "https" | "wss" => Some(443),
        _ => None,
    };
    Ok(match port {
        Some(p) if Some(p) != default_port => format!("{scheme}://{host}:{p}"),
        _ => format!("{scheme}://{host}"),
    })
}
