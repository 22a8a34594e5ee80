//! Values with units: durations (`"500ms"`), percentages (`1%`), rates (`500 tok/s`).

use std::time::Duration;

/// Parses a duration with a unit: `"250us"`, `"40ms"`, `"2s"`, `"1m"`, `"1.5s"`.
pub fn parse_duration(text: &str) -> Result<Duration, String> {
    let (value, unit) = split_number(text.trim())?;
    let scale = match unit {
        "ns" => 1e-9,
        "us" | "µs" => 1e-6,
        "ms" => 1e-3,
        "s" => 1.0,
        "m" | "min" => 60.0,
        "h" => 3600.0,
        "" => return Err(format!("duration `{text}` has no unit")),
        other => return Err(format!("unknown duration unit `{other}` in `{text}`")),
    };
    if value < 0.0 {
        return Err(format!("duration `{text}` is negative"));
    }
    let secs = value * scale;
    if secs > MAX_DURATION.as_secs_f64() {
        // Past Duration's range it panicked (#59); far below it, an instant plus it can still.
        return Err(format!("duration `{text}` is more than a year: at most 8760h"));
    }
    Ok(Duration::from_secs_f64(secs))
}

/// The longest duration a suite may give: a year.
pub const MAX_DURATION: Duration = Duration::from_secs(365 * 24 * 3600);

/// Hint shown with a bad duration.
pub const DURATION_HINT: &str = "write a number with a unit: \"250us\", \"40ms\", \"2s\", \"1m\"";

/// Splits `"12.5ms"` / `"500 tok/s"` into the number and the trimmed unit.
pub fn split_number(text: &str) -> Result<(f64, &str), String> {
    let end = text
        .char_indices()
        .find(|&(i, c)| !(c.is_ascii_digit() || c == '.' || (i == 0 && (c == '-' || c == '+'))))
        .map_or(text.len(), |(i, _)| i);
    let (num, unit) = text.split_at(end);
    let value: f64 = num.parse().map_err(|_| format!("`{text}` does not start with a number"))?;
    if !value.is_finite() {
        return Err(format!("`{text}` is not a finite number"));
    }
    Ok((value, unit.trim()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations() {
        assert_eq!(parse_duration("500ms"), Ok(Duration::from_millis(500)));
        assert_eq!(parse_duration("2s"), Ok(Duration::from_secs(2)));
        assert_eq!(parse_duration("1.5s"), Ok(Duration::from_millis(1500)));
        assert_eq!(parse_duration("250us"), Ok(Duration::from_micros(250)));
        assert_eq!(parse_duration("1m"), Ok(Duration::from_secs(60)));
        assert!(parse_duration("5").is_err());
        assert!(parse_duration("5 sex").is_err());
        assert!(parse_duration("ms").is_err());
    }
}
