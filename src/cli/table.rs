//! The CLI's options for the run parameters, generated from
//! `run::RUN_PARAMS`: each row becomes `--key` (`_` written `-`) with the
//! row's label as help, its default, and a value parser that refuses what
//! the row refuses in the row's words. The CLI, the page and Python thus
//! start from the same settings and accept the same values; a row added to
//! the table is an option of every command that takes its group.

use crate::run::params::{Kind, Param, RUN_PARAMS};
use clap::builder::PossibleValuesParser;
use clap::parser::ValueSource;
use clap::{Arg, ArgAction, ArgMatches, Args, Command, FromArgMatches};

/// A group of table rows that a command takes as options, and the values
/// it makes of them.
pub trait Rows: Clone + Send + Sync + 'static {
    /// Whether the group takes the row.
    fn takes(p: &Param) -> bool;
    /// The group's values from the parsed options.
    fn from_values(v: &Values) -> Self;
}

/// The parsed options of a group, by key.
pub struct Values<'a>(&'a ArgMatches);

impl Values<'_> {
    /// A number (`Number` or `Whole` row), checked against its range.
    pub fn number(&self, key: &str) -> f64 {
        *self
            .0
            .get_one::<f64>(key)
            .expect("a number row with a default")
    }

    /// Whether the command line gave the option (else it is the table's
    /// default).
    pub fn given(&self, key: &str) -> bool {
        self.0.value_source(key) == Some(ValueSource::CommandLine)
    }

    /// A name of a `Choice` row.
    pub fn choice(&self, key: &str) -> &str {
        self.0
            .get_one::<String>(key)
            .expect("a choice row with a default")
    }
}

/// A group's values, read as the group itself.
#[derive(Clone, Debug)]
pub struct Table<T> {
    values: T,
}

impl<T> std::ops::Deref for Table<T> {
    type Target = T;
    fn deref(&self) -> &T {
        &self.values
    }
}

impl<T> std::ops::DerefMut for Table<T> {
    fn deref_mut(&mut self) -> &mut T {
        &mut self.values
    }
}

impl<T: Rows> FromArgMatches for Table<T> {
    fn from_arg_matches(m: &ArgMatches) -> Result<Self, clap::Error> {
        Ok(Table {
            values: T::from_values(&Values(m)),
        })
    }

    fn update_from_arg_matches(&mut self, m: &ArgMatches) -> Result<(), clap::Error> {
        *self = Self::from_arg_matches(m)?;
        Ok(())
    }
}

impl<T: Rows> Args for Table<T> {
    fn augment_args(cmd: Command) -> Command {
        rows::<T>().fold(cmd, |cmd, p| cmd.arg(option(p)))
    }

    fn augment_args_for_update(cmd: Command) -> Command {
        Self::augment_args(cmd)
    }
}

/// The rows group `T` takes, in the table's order.
fn rows<T: Rows>() -> impl Iterator<Item = &'static Param> {
    RUN_PARAMS.iter().filter(|p| T::takes(p))
}

/// The option of one row.
pub fn option(p: &'static Param) -> Arg {
    let arg = Arg::new(p.key)
        .long(p.key.replace('_', "-"))
        .value_name(p.key.to_uppercase())
        .help(help(p))
        .default_value(p.default)
        .action(ArgAction::Set);
    // `-n` as Bonsai's and NEMO's tools spell it.
    let arg = if p.key == "n" { arg.short('n') } else { arg };
    match p.kind {
        Kind::Choice(_) => arg.value_parser(PossibleValuesParser::new(p.choices())),
        Kind::Number(_) | Kind::Whole { .. } => arg
            // A negative value gets the table's message, not clap's.
            .allow_negative_numbers(true)
            .value_parser(move |text: &str| {
                p.parse_number(text)
                    .map_err(|e| format!("{} = {}: {e}", p.key, text.trim()))
            }),
        Kind::Flag => arg.value_parser(move |text: &str| {
            p.parse_flag(text)
                .map(|on| if on { 1.0 } else { 0.0 })
                .map_err(|e| format!("{} = {}: {e}", p.key, text.trim()))
        }),
    }
}

/// The row's label, what a valid value is (choices are listed by clap),
/// and the solvers and models it applies to.
fn help(p: &Param) -> String {
    let mut chars = p.label.chars();
    let mut help: String = chars
        .next()
        .map(|c| c.to_uppercase().collect())
        .unwrap_or_default();
    help.extend(chars);
    if !matches!(p.kind, Kind::Choice(_)) {
        help += &format!("; {}", p.expected());
    }
    let only: Vec<&str> = p
        .solvers
        .iter()
        .map(|s| s.name())
        .chain(p.models.iter().map(|m| m.name()))
        .collect();
    if !only.is_empty() {
        help += &format!(" ({} only)", only.join(", "));
    }
    help
}
