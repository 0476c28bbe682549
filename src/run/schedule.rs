//! Where a run may stop: a whole number of steps (leapfrog: dt; Hermite:
//! the largest block step) after its start, so it never stops short of
//! the time asked for. The CLI's `--t-end` and Python's `evolve` check
//! their end times here.

use crate::error::{Error, Result};

/// Whole multiples of `step` in `span`, if `span` is one (to 1e-9).
pub fn whole_steps(span: f64, step: f64) -> Option<u64> {
    let k = (span / step).round();
    ((span - k * step).abs() <= 1e-9 * span.abs().max(step)).then_some(k as u64)
}

/// Checks that a run from `start` can end at `t_end` in steps of `step`;
/// the error names the two nearest times that it can end at. `end_name`
/// and `step_name` are what the front end calls them (`--t-end`, `--dt`).
pub fn check_end(start: f64, t_end: f64, step: f64, end_name: &str, step_name: &str) -> Result<()> {
    let bad = |m: String| Err(Error::InvalidParameter(m));
    if !t_end.is_finite() {
        return bad(format!("{end_name} must be finite, got {t_end}"));
    }
    let span = t_end - start;
    if span < 0.0 {
        return bad(format!(
            "{end_name} {t_end} is before the start time {start} of the initial state"
        ));
    }
    if whole_steps(span, step).is_none() {
        let k = (span / step).floor();
        return bad(format!(
            "{end_name} {t_end} is not a whole number of {step_name} {step} after the start \
             {start}: the run would stop short of it (e.g. {end_name} {} or {})",
            start + k * step,
            start + (k + 1.0) * step
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ends_on_whole_steps_only() {
        assert_eq!(whole_steps(1.0, 1.0 / 64.0), Some(64));
        assert!(check_end(0.5, 1.5, 0.125, "t_end", "dt").is_ok());
        let e = check_end(0.0, 0.1, 0.125, "t_end", "dt").unwrap_err();
        assert!(e.to_string().contains("e.g. t_end 0 or 0.125"), "{e}");
        assert!(check_end(1.0, 0.5, 0.125, "t_end", "dt").is_err());
    }
}
