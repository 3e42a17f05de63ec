//! Where a key is written in a TOML policy: line and column for error messages.

/// 1-based line and column (in characters) of a byte offset.
pub(super) fn line_col(text: &str, offset: usize) -> (usize, usize) {
    let mut offset = offset.min(text.len());
    while !text.is_char_boundary(offset) {
        offset -= 1;
    }
    let before = &text[..offset];
    let line = before.matches('\n').count() + 1;
    let line_start = before.rfind('\n').map_or(0, |p| p + 1);
    (line, before[line_start..].chars().count() + 1)
}

/// A line of a TOML document, classified just enough to find keys again.
enum LineKind {
    Header(String),
    Key(String),
    Other,
}

fn unquote_key(raw: &str) -> Option<String> {
    let parts: Vec<String> = raw
        .split('.')
        .map(|p| p.trim().trim_matches('"').trim_matches('\'').to_string())
        .collect();
    if parts.iter().any(|p| {
        p.is_empty()
            || !p
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-' || c == '+')
    }) {
        return None;
    }
    Some(parts.join("."))
}

fn classify(line: &str) -> LineKind {
    let t = line.trim();
    if t.starts_with('#') || t.is_empty() {
        return LineKind::Other;
    }
    if let Some(rest) = t.strip_prefix('[') {
        let rest = rest.trim_start_matches('[');
        if let Some(end) = rest.find(']') {
            if let Some(k) = unquote_key(&rest[..end]) {
                return LineKind::Header(k);
            }
        }
        return LineKind::Other;
    }
    if let Some(eq) = t.find('=') {
        if let Some(k) = unquote_key(&t[..eq]) {
            return LineKind::Key(k);
        }
    }
    LineKind::Other
}

/// Walk the document's lines with the dotted key each one defines.
fn keyed_lines(text: &str) -> Vec<(usize, Option<String>, usize)> {
    // (1-based line, full dotted key defined on the line, column of the key)
    let mut out = Vec::new();
    let mut section = String::new();
    for (i, line) in text.lines().enumerate() {
        let col = line.len() - line.trim_start().len() + 1;
        match classify(line) {
            LineKind::Header(h) => {
                section = h.clone();
                out.push((i + 1, Some(h), col));
            }
            LineKind::Key(k) => {
                let full = if section.is_empty() {
                    k
                } else {
                    format!("{section}.{k}")
                };
                out.push((i + 1, Some(full), col));
            }
            LineKind::Other => out.push((i + 1, None, col)),
        }
    }
    out
}

/// The dotted key in force at `line`: the key written on it, or the nearest key above it
/// (inside a multi-line array), or the table header.
pub(super) fn key_at_line(text: &str, line: usize) -> Option<String> {
    let lines = keyed_lines(text);
    lines
        .iter()
        .take(line)
        .rev()
        .find_map(|(_, k, _)| k.clone())
}

/// Line and column where `key` (dotted) is written, if it is.
pub(super) fn find_key(text: &str, key: &str) -> Option<(usize, usize)> {
    let lines = keyed_lines(text);
    if let Some((l, _, c)) = lines.iter().find(|(_, k, _)| k.as_deref() == Some(key)) {
        return Some((*l, *c));
    }
    // A key inside a table: fall back to the table's own line (e.g. environment.extra.X).
    let parent = key.rsplit_once('.').map(|(p, _)| p)?;
    find_key(text, parent)
}

/// Line and column of an array element or table key `item` written under `key`.
pub(super) fn find_item(text: &str, key: &str, item: &str) -> Option<(usize, usize)> {
    let (start, _) = find_key(text, key)?;
    let lines = keyed_lines(text);
    let quoted = format!("\"{item}\"");
    for (i, line) in text.lines().enumerate().skip(start - 1) {
        // Stop at the next key that is not the one holding the item.
        if i + 1 > start {
            if let Some((_, Some(k), _)) = lines.get(i) {
                if !k.starts_with(key) {
                    break;
                }
            }
        }
        let found = line.find(&quoted).or_else(|| {
            let t = line.trim_start();
            (t.starts_with(item) && t[item.len()..].trim_start().starts_with('='))
                .then(|| line.len() - t.len())
        });
        if let Some(pos) = found {
            return Some((i + 1, line[..pos].chars().count() + 1));
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn key_location() {
        let text = "version = 1\n\n[limits]\n# c\nmemory = \"1MiB\"\n[filesystem]\nread_only = [\n  \"/usr\",\n  \"/etc\",\n]\n";
        assert_eq!(find_key(text, "limits.memory"), Some((5, 1)));
        assert_eq!(
            find_item(text, "filesystem.read_only", "/etc"),
            Some((9, 3))
        );
        assert_eq!(
            key_at_line(text, 8).as_deref(),
            Some("filesystem.read_only")
        );
    }
}
