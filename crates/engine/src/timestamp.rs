//! RFC 3339 timestamps for any time a clock or a file system can hold. A worker sets its done
//! file's mtime (`touch -d 1960-01-01`, or past the year 9999), and the formatting of that
//! time must not panic, as `humantime`'s does outside 1970..=9999: one such file would kill
//! the thread judging it, and every later run that reads it.
//!
//! Inside 1970..=9999 the text is exactly what `humantime` wrote (verdicts written before keep
//! comparing equal); outside, the year carries a sign and as many digits as it needs, as
//! ISO 8601's expanded years do (`-0001-12-31T23:59:59Z`, `+10000-01-01T00:00:00Z`).

use std::time::{Duration, SystemTime, UNIX_EPOCH};

/// `2026-11-23T09:15:02Z`
pub fn seconds(time: SystemTime) -> String {
    format(time, 0)
}

/// `2026-11-23T09:15:02.123Z`
pub fn millis(time: SystemTime) -> String {
    format(time, 3)
}

/// `2026-11-23T09:15:02.123456789Z`
pub fn nanos(time: SystemTime) -> String {
    format(time, 9)
}

/// Seconds and nanoseconds since the epoch, negative before it (nanoseconds always count up).
fn since_epoch(time: SystemTime) -> (i128, u32) {
    match time.duration_since(UNIX_EPOCH) {
        Ok(after) => (i128::from(after.as_secs()), after.subsec_nanos()),
        Err(before) => {
            let before: Duration = before.duration();
            let secs = -i128::from(before.as_secs());
            match before.subsec_nanos() {
                0 => (secs, 0),
                nanos => (secs - 1, 1_000_000_000 - nanos),
            }
        }
    }
}

fn format(time: SystemTime, digits: u32) -> String {
    let (secs, nanos) = since_epoch(time);
    let days = secs.div_euclid(86_400);
    let of_day = secs.rem_euclid(86_400);
    let (year, month, day) = civil_from_days(days);
    let year = if (0..=9999).contains(&year) {
        format!("{year:04}")
    } else {
        format!("{year:+05}")
    };
    let mut text = format!(
        "{year}-{month:02}-{day:02}T{:02}:{:02}:{:02}",
        of_day / 3600,
        of_day / 60 % 60,
        of_day % 60
    );
    if digits > 0 {
        let fraction = nanos / 10u32.pow(9 - digits);
        text.push_str(&format!(".{fraction:0width$}", width = digits as usize));
    }
    text.push('Z');
    text
}

/// The proleptic Gregorian date of a day count from 1970-01-01 (Howard Hinnant's
/// `civil_from_days`), for any day count an `i128` of seconds yields.
fn civil_from_days(days: i128) -> (i128, u32, u32) {
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let day_of_era = z.rem_euclid(146_097);
    let year_of_era =
        (day_of_era - day_of_era / 1460 + day_of_era / 36_524 - day_of_era / 146_096) / 365;
    let day_of_year = day_of_era - (365 * year_of_era + year_of_era / 4 - year_of_era / 100);
    let shifted_month = (5 * day_of_year + 2) / 153;
    let day = (day_of_year - (153 * shifted_month + 2) / 5 + 1) as u32;
    let month = if shifted_month < 10 {
        shifted_month + 3
    } else {
        shifted_month - 9
    } as u32;
    let year = year_of_era + era * 400 + i128::from(month <= 2);
    (year, month, day)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(secs: i64, nanos: u32) -> SystemTime {
        if secs >= 0 {
            UNIX_EPOCH + Duration::new(secs as u64, nanos)
        } else {
            UNIX_EPOCH - Duration::from_secs(secs.unsigned_abs())
                + Duration::from_nanos(nanos.into())
        }
    }

    #[test]
    fn agrees_with_humantime_where_humantime_works() {
        for secs in [
            0,
            1,
            59,
            86_399,
            951_782_400,
            1_700_000_000,
            253_402_300_799,
        ] {
            for fraction in [0, 1, 123_456_789, 999_999_999] {
                let time = at(secs, fraction);
                assert_eq!(
                    seconds(time),
                    humantime::format_rfc3339_seconds(time).to_string()
                );
                assert_eq!(
                    millis(time),
                    humantime::format_rfc3339_millis(time).to_string()
                );
                assert_eq!(
                    nanos(time),
                    humantime::format_rfc3339_nanos(time).to_string()
                );
            }
        }
    }

    #[test]
    fn times_before_1970_and_after_9999_have_a_text_too() {
        assert_eq!(nanos(at(-1, 0)), "1969-12-31T23:59:59.000000000Z");
        assert_eq!(nanos(at(-1, 500_000_000)), "1969-12-31T23:59:59.500000000Z");
        assert_eq!(seconds(at(-315_619_200, 0)), "1960-01-01T00:00:00Z");
        assert_eq!(seconds(at(-62_167_219_201, 0)), "-0001-12-31T23:59:59Z");
        assert_eq!(seconds(at(253_402_300_800, 0)), "+10000-01-01T00:00:00Z");
        // The extremes a 64-bit time_t holds format without overflow.
        let far = UNIX_EPOCH + Duration::from_secs(i64::MAX as u64);
        assert!(seconds(far).starts_with('+'), "{}", seconds(far));
        let early = UNIX_EPOCH - Duration::from_secs(i64::MAX as u64);
        assert!(seconds(early).starts_with('-'), "{}", seconds(early));
    }
}
