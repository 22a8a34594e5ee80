//! `${VAR}` and `${VAR:-default}` expansion in target strings.

/// Expands variables using `lookup`; an unset `${VAR}` without default is an error.
pub fn expand(text: &str, lookup: impl Fn(&str) -> Option<String>) -> Result<String, String> {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(start) = rest.find("${") {
        out.push_str(&rest[..start]);
        let after = &rest[start + 2..];
        let end = after.find('}').ok_or_else(|| format!("unclosed `${{` in `{text}`"))?;
        let inner = &after[..end];
        let (name, default) = match inner.split_once(":-") {
            Some((n, d)) => (n, Some(d)),
            None => (inner, None),
        };
        if name.is_empty() || !name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_') {
            return Err(format!("bad variable name `{name}` in `{text}`"));
        }
        match (lookup(name).filter(|v| !v.is_empty()), default) {
            (Some(v), _) => out.push_str(&v),
            (None, Some(d)) => out.push_str(d),
            (None, None) => return Err(format!("environment variable `{name}` is not set")),
        }
        rest = &after[end + 1..];
    }
    out.push_str(rest);
    Ok(out)
}

/// The variables `text` needs that are unset (or empty) and have no `:-default`, in order.
pub fn unset(text: &str, lookup: impl Fn(&str) -> Option<String>) -> Vec<String> {
    let mut out = Vec::new();
    let mut rest = text;
    while let Some(start) = rest.find("${") {
        let after = &rest[start + 2..];
        let Some(end) = after.find('}') else { break };
        let inner = &after[..end];
        if !inner.contains(":-")
            && lookup(inner).filter(|v| !v.is_empty()).is_none()
            && !out.iter().any(|o| o == inner)
        {
            out.push(inner.to_string());
        }
        rest = &after[end + 1..];
    }
    out
}

#[cfg(test)]
mod tests {
    use super::{expand, unset};

    #[test]
    fn names_the_unset_variables() {
        assert_eq!(unset("${UNSET} -m ${SET} ${OTHER:-x} ${UNSET}", env), vec!["UNSET".to_string()]);
        assert!(unset("plain ${SET}", env).is_empty());
    }

    fn env(name: &str) -> Option<String> {
        (name == "SET").then(|| "http://h:8000".to_string())
    }

    #[test]
    fn expands() {
        assert_eq!(expand("${SET}", env).as_deref(), Ok("http://h:8000"));
        assert_eq!(expand("${UNSET:-mock}", env).as_deref(), Ok("mock"));
        assert_eq!(expand("${SET:-mock}/x", env).as_deref(), Ok("http://h:8000/x"));
        assert_eq!(expand("plain", env).as_deref(), Ok("plain"));
        assert!(expand("${UNSET}", env).is_err());
        assert!(expand("${SET", env).is_err());
    }
}
