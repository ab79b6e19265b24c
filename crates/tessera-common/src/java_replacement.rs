//! Java regex replacement strings (`Matcher.replaceAll`'s `$1`, `${name}`, `\$`), which
//! OpenSearch's APIs take (the `gsub` processor, a restore's `rename_replacement`), written in
//! the `regex` crate's syntax (`${1}`, `${name}`, `$$`): `$1a` means group 1 then `a` in Java,
//! and group `1a` to the `regex` crate.

/// `java` in the `regex` crate's replacement syntax.
pub fn to_rust(java: &str) -> String {
    let mut out = String::new();
    let mut chars = java.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '\\' => match chars.next() {
                Some('$') => out.push_str("$$"),
                Some(other) => out.push(other),
                None => {}
            },
            '$' if chars.peek().is_some_and(char::is_ascii_digit) => {
                out.push_str("${");
                while let Some(d) = chars.peek().copied().filter(char::is_ascii_digit) {
                    out.push(d);
                    chars.next();
                }
                out.push('}');
            }
            '$' if chars.peek() == Some(&'{') => out.push('$'),
            '$' => out.push_str("$$"),
            other => out.push(other),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn groups_escapes_and_names() {
        assert_eq!(to_rust("r$1"), "r${1}");
        assert_eq!(to_rust("$1a$2"), "${1}a${2}");
        assert_eq!(to_rust(r"x\$y"), "x$$y");
        assert_eq!(to_rust("${n}"), "${n}");
        assert_eq!(to_rust("cost: $"), "cost: $$");
    }
}
