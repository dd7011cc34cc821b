//! Durations as the rules file writes them: `500ms`, `30s`, `10m`, `1h`, or sums like `1h30m`.

use std::time::Duration;

use serde::Deserializer;

const MAX: Duration = Duration::from_secs(365 * 24 * 3600);

/// Parses `500ms`, `30s`, `10m`, `1h` and concatenations such as `1h30m`.
pub fn parse(text: &str) -> Result<Duration, String> {
    let text = text.trim();
    if text.is_empty() {
        return Err("empty duration".into());
    }
    let mut total = Duration::ZERO;
    let mut rest = text;
    while !rest.is_empty() {
        let digits = rest.len() - rest.trim_start_matches(|c: char| c.is_ascii_digit()).len();
        if digits == 0 {
            return Err(format!("`{text}` is not a duration"));
        }
        let value: u64 = rest[..digits]
            .parse()
            .map_err(|_| format!("`{text}` is too large"))?;
        rest = &rest[digits..];
        let unit_len = rest.len()
            - rest
                .trim_start_matches(|c: char| c.is_ascii_alphabetic())
                .len();
        let part = match &rest[..unit_len] {
            "ms" => Duration::from_millis(value),
            "s" => Duration::from_secs(value),
            "m" => Duration::from_secs(value.saturating_mul(60)),
            "h" => Duration::from_secs(value.saturating_mul(3600)),
            "" => return Err(format!("`{text}` has a number without a unit")),
            unit => return Err(format!("`{unit}` is not a duration unit in `{text}`")),
        };
        total = total.saturating_add(part);
        rest = &rest[unit_len..];
    }
    // Deadlines are computed as now + duration; keep them far from overflow.
    if total > MAX {
        return Err(format!(
            "`{text}` is longer than the longest allowed duration, 8760h (a year)"
        ));
    }
    Ok(total)
}

/// Formats a duration in the units `parse` reads back, for messages and the gate graph.
pub fn format(duration: Duration) -> String {
    let ms = duration.as_millis();
    match ms {
        0 => "0s".into(),
        ms if ms % 3_600_000 == 0 => format!("{}h", ms / 3_600_000),
        ms if ms % 60_000 == 0 => format!("{}m", ms / 60_000),
        ms if ms % 1000 == 0 => format!("{}s", ms / 1000),
        ms => format!("{ms}ms"),
    }
}

/// The JSON Schema of a duration, for `validator rules schema`: the same grammar as [`parse`]
/// (the one-year ceiling is left to the loader).
pub fn schema(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
    schemars::json_schema!({
        "type": "string",
        "pattern": r"^\s*([0-9]+(ms|s|m|h))+\s*$",
        "description": "A duration: a number and a unit (ms, s, m, h), or a sum such as 1h30m.",
        "examples": ["500ms", "30s", "10m", "1h30m"]
    })
}

/// Serde adapter so a bad duration is reported at its own line and column.
pub fn deserialize<'de, D: Deserializer<'de>>(
    deserializer: D,
) -> Result<Option<Duration>, D::Error> {
    crate::yaml::scalar::parse_str(
        deserializer,
        "a duration such as 500ms, 30s, 10m or 1h",
        |text| {
            parse(text)
                .map(Some)
                .map_err(|why| format!("{why}; write a duration such as 500ms, 30s, 10m or 1h"))
        },
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_every_unit_and_sums() {
        assert_eq!(parse("500ms"), Ok(Duration::from_millis(500)));
        assert_eq!(parse("30s"), Ok(Duration::from_secs(30)));
        assert_eq!(parse("10m"), Ok(Duration::from_secs(600)));
        assert_eq!(parse("1h30m"), Ok(Duration::from_secs(5400)));
    }

    #[test]
    fn refuses_what_is_not_a_duration() {
        for bad in [
            "",
            "10",
            "m",
            "10 minutes",
            "1.5s",
            "-1s",
            "10d",
            "18446744073709551615s",
            "9000h",
        ] {
            assert!(parse(bad).is_err(), "{bad} should not parse");
        }
    }

    #[test]
    fn formats_round_trip() {
        for text in ["500ms", "30s", "10m", "1h"] {
            assert_eq!(format(parse(text).unwrap()), text);
        }
    }
}
