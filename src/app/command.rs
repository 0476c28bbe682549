//! The page's run as a command line: `webgrav run` with the page's
//! settings, on one GPU or under `mpirun` on several, writing a series
//! that the page's "Open series" plays back. A run too large or too long
//! for a browser goes to a workstation or a cluster and comes back.

use super::settings::Settings;
use crate::run::params::RUN_PARAMS;

/// Snapshots a command's series holds at most (one every
/// `steps / SNAPSHOTS` steps, rounded up; the last at its end).
pub const SNAPSHOTS: u64 = 16;

/// Where the command writes its series and log (`--snap-dir`, `--log`).
pub const SERIES_DIR: &str = "run";
pub const LOG_FILE: &str = "run.log.jsonl";

/// `webgrav run` with `settings` (the model, or the file `input` it
/// started from), until `t_end` (rounded up to whole steps, and to a
/// whole number of the series' intervals), writing up to `SNAPSHOTS` snapshots
/// into `SERIES_DIR` and the log into `LOG_FILE`; under `mpirun -np
/// ranks` for several ranks, whose series is written as Bonsai names its
/// per-process files. An error says why there is no such command.
pub fn run_command(
    settings: &Settings,
    input: Option<&str>,
    t_end: f64,
    ranks: u32,
) -> Result<String, String> {
    let run = &settings.run;
    if ranks == 0 {
        return Err("a run takes at least one GPU".into());
    }
    if ranks > 1 {
        if let Some(what) = run.not_on_several_ranks() {
            return Err(format!(
                "{what} is not offered by runs on several GPUs yet: ask for one GPU"
            ));
        }
    }
    if !(t_end.is_finite() && t_end > 0.0) {
        return Err(format!("the run's end must be a time after 0, got {t_end}"));
    }
    let steps = ((t_end / run.dt) - 1e-9).ceil().max(1.0) as u64;
    let every = steps.div_ceil(SNAPSHOTS);
    let steps = every * steps.div_ceil(every);
    let mut words: Vec<String> = Vec::new();
    if ranks > 1 {
        words.extend(["mpirun".into(), "-np".into(), ranks.to_string()]);
    }
    words.extend(["webgrav".into(), "run".into()]);
    if let Some(name) = input {
        words.extend(["--in".into(), quoted(name)]);
    }
    for p in RUN_PARAMS {
        let shapes_model = p.shapes_model();
        let applies = if shapes_model {
            input.is_none() && p.applies_to_model(settings.model)
        } else {
            p.applies_to(run.solver)
        };
        if applies {
            let value = settings.get(p.key).expect("every row has a value");
            words.push(format!("--{}", p.key.replace('_', "-")));
            words.push(quoted(&value));
        }
    }
    let time = |k: u64| (k as f64 * run.dt).to_string();
    words.extend([
        "--t-end".into(),
        time(steps),
        "--snap-every".into(),
        time(every),
        "--snap-dir".into(),
        SERIES_DIR.into(),
        "--log".into(),
        LOG_FILE.into(),
    ]);
    if ranks > 1 {
        words.push("--bonsai-names".into());
    }
    Ok(words.join(" "))
}

/// `word` as a POSIX shell reads it back: as is when it is plain, else
/// in single quotes.
fn quoted(word: &str) -> String {
    let plain = |c: char| c.is_ascii_alphanumeric() || "-_.,/+=:@%".contains(c);
    if !word.is_empty() && word.chars().all(plain) {
        word.to_string()
    } else {
        format!("'{}'", word.replace('\'', r"'\''"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::run::SolverKind;

    #[test]
    fn a_command_ends_on_whole_intervals_and_quotes_what_a_shell_would_split() {
        let mut s = Settings::default();
        s.run.dt = 1.0 / 128.0;
        // 100.5 steps: 101, in intervals of 7 (at most 16 of them) → 105.
        let c = run_command(&s, Some("my run's start.csv"), 100.5 / 128.0, 1).unwrap();
        assert!(
            c.contains("--t-end 0.8203125 --snap-every 0.0546875"),
            "{c}"
        );
        assert!(
            c.starts_with("webgrav run --in 'my run'\\''s start.csv' "),
            "{c}"
        );
        assert!(!c.contains("--model"), "a file's run names no model: {c}");
        s.run.solver = SolverKind::Hermite4;
        assert!(run_command(&s, None, 1.0, 2)
            .unwrap_err()
            .contains("hermite4"));
        assert!(run_command(&s, None, 1.0, 1).is_ok());
        assert!(run_command(&s, None, 0.0, 1).is_err());
        assert!(run_command(&s, None, 1.0, 0).is_err());
    }
}
