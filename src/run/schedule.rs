//! Where a run may stop: a whole number of steps (leapfrog: dt; Hermite:
//! the largest block step) after its start, so it never stops short of
//! the time asked for, and never more than `MAX_STEPS` steps (an end time
//! beyond that is a typo, not a run). The CLI's `--t-end` and Python's
//! `evolve` check their end times here.

use crate::error::{Error, Result};

/// Most steps (leapfrog) or largest block steps (Hermite) one run or one
/// `evolve` may take: 2^40, over a week even at a microsecond a step.
pub const MAX_STEPS: f64 = (1u64 << 40) as f64;

/// Whole multiples of `step` in `span`, if `span` is one (to 1e-9).
pub fn whole_steps(span: f64, step: f64) -> Option<u64> {
    let k = (span / step).round();
    ((span - k * step).abs() <= 1e-9 * span.abs().max(step)).then_some(k as u64)
}

/// The next time after `t` on the grid `origin + k × every` (∞ without
/// one: `every` = 0). Runs resumed from a checkpoint keep the grid of the
/// run that wrote it (`Run::origin`), so their outputs fall where an
/// uninterrupted run's do.
pub fn next_on_grid(t: f64, origin: f64, every: f64) -> f64 {
    if every <= 0.0 {
        return f64::INFINITY;
    }
    let k = ((t - origin) / every + 1e-9).floor() + 1.0;
    origin + k * every
}

/// A time as a message shows it: as written where it is of ordinary
/// size, in exponent notation where the decimals would run to hundreds of
/// digits (`--dt 1e-300`).
pub fn shown(x: f64) -> String {
    if x == 0.0 || !x.is_finite() || (1e-6..1e15).contains(&x.abs()) {
        format!("{x}")
    } else {
        format!("{x:e}")
    }
}

/// `a` is the time `b`, to rounding (never an infinite `b`: no grid).
pub fn at(a: f64, b: f64) -> bool {
    b.is_finite() && (a - b).abs() <= 1e-9 * b.abs().max(1.0)
}

/// `t` lies on the grid `origin + k × every` (never without one).
pub fn on_grid(t: f64, origin: f64, every: f64) -> bool {
    every > 0.0 && at(t, origin + ((t - origin) / every).round() * every)
}

/// Checks that a run from `start` can end at `t_end` in steps of `step`;
/// the error names the two nearest times that it can end at. `end_name`
/// and `step_name` are what the front end calls them (`--t-end`, `--dt`).
pub fn check_end(start: f64, t_end: f64, step: f64, end_name: &str, step_name: &str) -> Result<()> {
    let bad = |m: String| Err(Error::InvalidParameter(m));
    if !t_end.is_finite() {
        return bad(format!("{end_name} must be finite, got {}", shown(t_end)));
    }
    let span = t_end - start;
    if span < 0.0 {
        return bad(format!(
            "{end_name} {} is before the start time {} of the initial state",
            shown(t_end),
            shown(start)
        ));
    }
    if span / step > MAX_STEPS {
        return bad(format!(
            "{end_name} {} is {:.3e} steps of {step_name} {} after the start {}; \
             a run takes at most {MAX_STEPS:.3e} (2^40) steps",
            shown(t_end),
            span / step,
            shown(step),
            shown(start)
        ));
    }
    if whole_steps(span, step).is_none() {
        let k = (span / step).floor();
        return bad(format!(
            "{end_name} {} is not a whole number of {step_name} {} after the start \
             {}: the run would stop short of it (e.g. {end_name} {} or {})",
            shown(t_end),
            shown(step),
            shown(start),
            shown(start + k * step),
            shown(start + (k + 1.0) * step)
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

    // An end time that would take for ever is refused by its step count
    // (it is a whole number of steps, to rounding, so nothing else did).
    // Issue 48 item 8: --dt 1e-300 was shown with 300 zeros.
    #[test]
    fn tiny_and_huge_times_are_shown_in_exponent_notation() {
        let e = check_end(0.0, 1.0, 1e-300, "--t-end", "--dt").unwrap_err();
        assert!(e.to_string().contains("--dt 1e-300 after"), "{e}");
        assert!(e.to_string().len() < 200, "{e}");
        assert_eq!(shown(0.0078125), "0.0078125");
        assert_eq!(shown(2.5e20), "2.5e20");
    }

    #[test]
    fn end_times_beyond_the_step_limit_are_refused() {
        let e = check_end(0.0, 1e300, 1.0 / 128.0, "--t-end", "--dt").unwrap_err();
        assert!(
            e.to_string().contains("1.280e302 steps of --dt 0.0078125"),
            "{e}"
        );
        assert!(check_end(0.0, MAX_STEPS / 128.0, 1.0 / 128.0, "t", "dt").is_ok());
    }
}
