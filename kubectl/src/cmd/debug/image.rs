//! The image reference check of upstream's `reference.ReferenceRegexp` (distribution's
//! grammar): `[domain[:port]/]path[/path...][:tag][@digest]`, written out as a small parser
//! since kubectl has no regex engine.

/// Whether `image` is a well-formed reference.
pub fn is_reference(image: &str) -> bool {
    let (rest, digest) = match image.split_once('@') {
        Some((rest, digest)) => (rest, Some(digest)),
        None => (image, None),
    };
    if digest.is_some_and(|d| !is_digest(d)) {
        return false;
    }
    // A tag follows the last ':' after the last '/' (a ':' before it is the domain's port).
    let last_slash = rest.rfind('/').map_or(0, |i| i + 1);
    let (name, tag) = match rest[last_slash..].rfind(':') {
        Some(i) => (&rest[..last_slash + i], Some(&rest[last_slash + i + 1..])),
        None => (rest, None),
    };
    if tag.is_some_and(|t| !is_tag(t)) {
        return false;
    }
    is_name(name)
}

fn is_tag(tag: &str) -> bool {
    let mut chars = tag.chars();
    let word = |c: char| c.is_ascii_alphanumeric() || c == '_';
    chars.next().is_some_and(word)
        && tag.len() <= 128
        && chars.all(|c| word(c) || c == '.' || c == '-')
}

fn is_digest(digest: &str) -> bool {
    let Some((algorithm, hex)) = digest.split_once(':') else {
        return false;
    };
    let components_ok = algorithm.split(['-', '_', '+', '.']).all(|p| {
        p.starts_with(|c: char| c.is_ascii_alphabetic())
            && p.chars().all(|c| c.is_ascii_alphanumeric())
    });
    components_ok && hex.len() >= 32 && hex.chars().all(|c| c.is_ascii_hexdigit())
}

fn is_name(name: &str) -> bool {
    let mut parts: Vec<&str> = name.split('/').collect();
    if parts.len() > 1 && is_domain(parts[0]) {
        parts.remove(0);
    }
    parts.iter().all(|p| is_path_component(p))
}

fn is_domain(text: &str) -> bool {
    let (host, port) = match text.rsplit_once(':') {
        Some((host, port)) => (host, Some(port)),
        None => (text, None),
    };
    if port.is_some_and(|p| p.is_empty() || !p.chars().all(|c| c.is_ascii_digit())) {
        return false;
    }
    if host.starts_with('[') && host.ends_with(']') {
        return host[1..host.len() - 1]
            .parse::<std::net::Ipv6Addr>()
            .is_ok();
    }
    !host.is_empty()
        && host.split('.').all(|c| {
            !c.is_empty()
                && c.chars().all(|ch| ch.is_ascii_alphanumeric() || ch == '-')
                && !c.starts_with('-')
                && !c.ends_with('-')
        })
}

/// `[a-z0-9]+((\.|_|__|-+)[a-z0-9]+)*`
fn is_path_component(text: &str) -> bool {
    let alnum = |c: char| c.is_ascii_lowercase() || c.is_ascii_digit();
    let bytes: Vec<char> = text.chars().collect();
    let mut i = 0;
    loop {
        let start = i;
        while i < bytes.len() && alnum(bytes[i]) {
            i += 1;
        }
        if i == start {
            return false;
        }
        if i == bytes.len() {
            return true;
        }
        let sep_start = i;
        while i < bytes.len() && !alnum(bytes[i]) {
            i += 1;
        }
        let sep: String = bytes[sep_start..i].iter().collect();
        let ok = sep == "." || sep == "_" || sep == "__" || sep.chars().all(|c| c == '-');
        if !ok {
            return false;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::is_reference;

    #[test]
    fn references() {
        for good in [
            "busybox",
            "busybox:1.36",
            "library/busybox:latest",
            "registry.k8s.io/pause:3.9",
            "localhost:5000/a/b_c__d-e:v1",
            "a@sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef",
        ] {
            assert!(is_reference(good), "{good}");
        }
        for bad in [
            "Bad Image",
            "BAD",
            "a:",
            "a::b",
            "-a",
            "a/",
            "a@sha256:12",
            "",
        ] {
            assert!(!is_reference(bad), "{bad}");
        }
    }
}
