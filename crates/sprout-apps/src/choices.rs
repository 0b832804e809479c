//! The command lines' names of the bottom floor's enums: clap value parsers of
//! [`Load`] (`--direction`) and [`SproutVariant`] (`--scheme`). The enums themselves stay free
//! of clap; each parser lists the names, aliases and per-value help lines that `--help` shows
//! and gives the enum's value.

use clap::builder::{PossibleValue, PossibleValuesParser, TypedValueParser};
use sprout_core::direction::Load;
use sprout_core::SproutVariant;

/// `--direction` of `sprout client`: `up`, `down`, `both`, each with a help line.
pub fn load_with_help() -> impl TypedValueParser<Value = Load> {
    choices(|| {
        vec![
            (Load::Up, PossibleValue::new("up").help("Client to server")),
            (
                Load::Down,
                PossibleValue::new("down").help("Server to client"),
            ),
            (
                Load::Both,
                PossibleValue::new("both").help("Both at once (the paper's setup)"),
            ),
        ]
    })
}

/// `--direction` of `sprout tcp client`: the bare names `up`, `down`, `both`, as its `--help`
/// has always listed them.
pub fn load_bare() -> impl TypedValueParser<Value = Load> {
    choices(|| {
        Load::ALL
            .into_iter()
            .map(|l| (l, PossibleValue::new(l.as_str())))
            .collect()
    })
}

/// `--scheme`: `sprout-wide` (alias `wide`), `sprout`, `sprout-ewma` (alias `ewma`), each with
/// a help line.
pub fn sprout_variant() -> impl TypedValueParser<Value = SproutVariant> {
    choices(|| {
        use SproutVariant::{Sprout, SproutEwma, SproutWide};
        let name = |v: SproutVariant| PossibleValue::new(v.as_str());
        vec![
            (
                SproutWide,
                name(SproutWide)
                    .alias("wide")
                    .help("Sprout on the wide rate model: outage to 1 Gbit/s (the default)"),
            ),
            (
                Sprout,
                name(Sprout).help(
                    "Sprout on the paper's rate model (to about 12 Mbit/s), as in the paper's \
                     figures",
                ),
            ),
            (
                SproutEwma,
                name(SproutEwma)
                    .alias("ewma")
                    .help("Sprout-EWMA: a moving average of the observed rate"),
            ),
        ]
    })
}

/// A parser of the values `table` names: clap checks the name (its messages and suggestions
/// are those of any list of possible values), then the value named is looked up.
fn choices<T: Copy + Send + Sync + 'static>(
    table: fn() -> Vec<(T, PossibleValue)>,
) -> impl TypedValueParser<Value = T> {
    PossibleValuesParser::new(table().into_iter().map(|(_, v)| v)).try_map(move |name: String| {
        table()
            .into_iter()
            .find(|(_, v)| v.matches(&name, false))
            .map(|(value, _)| value)
            .ok_or_else(|| format!("unknown value '{name}'"))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Parses `arg` as the one option of a command whose parser is `parser`.
    fn parse<T: Clone + Send + Sync + 'static>(
        parser: impl TypedValueParser<Value = T>,
        arg: &str,
    ) -> Result<T, clap::Error> {
        let cmd = clap::Command::new("t").arg(clap::Arg::new("v").long("v").value_parser(parser));
        let m = cmd.try_get_matches_from(["t", "--v", arg])?;
        Ok(m.get_one::<T>("v").expect("a value").clone())
    }

    #[test]
    fn each_name_and_alias_gives_its_value_and_others_are_refused() {
        for l in Load::ALL {
            assert_eq!(parse(load_with_help(), l.as_str()).unwrap(), l);
            assert_eq!(parse(load_bare(), l.as_str()).unwrap(), l);
        }
        for (name, v) in [
            ("sprout-wide", SproutVariant::SproutWide),
            ("wide", SproutVariant::SproutWide),
            ("sprout", SproutVariant::Sprout),
            ("sprout-ewma", SproutVariant::SproutEwma),
            ("ewma", SproutVariant::SproutEwma),
        ] {
            assert_eq!(parse(sprout_variant(), name).unwrap(), v);
        }
        assert!(parse(load_bare(), "Both").is_err());
        assert!(parse(sprout_variant(), "sprout-bbr").is_err());
    }
}
