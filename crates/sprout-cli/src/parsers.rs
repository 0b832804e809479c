//! Value parsers that the arguments of more than one verb share.

use sprout_link::QueueKind;

/// The parser of a queue discipline on the command line (`sprout sim`, `sprout link`): the
/// link's own [`QueueKind`], its names and their help listed as clap lists an enum's.
pub(crate) fn queue_parser() -> impl clap::builder::TypedValueParser<Value = QueueKind> {
    use clap::builder::{PossibleValue, PossibleValuesParser, TypedValueParser};
    let names = QueueKind::ALL.map(|k| PossibleValue::new(k.key()).help(k.help()));
    PossibleValuesParser::new(names).map(|s| s.parse::<QueueKind>().expect("a possible value"))
}
