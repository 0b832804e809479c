//! The evaluation's outputs: results.csv/json, a table (CSV) and chart (SVG) per experiment,
//! report.md with the paper's values beside ours, and the checks of the paper's findings.
//!
//! [`write_outputs`] writes them all (module `outputs`); report.md's text is in `markdown`,
//! with what we know of why figures depart in `notes`; the tables computed from the rows are in
//! `tables`, the checks in `checks`, the terminal's summary in `terminal`, and the `interactive`
//! experiment's files, table and section in `interactive`, the `rates` experiment's in `rates`,
//! the `calibration` experiment's in `calibration`, the `frontier` experiment's in `frontier`, the `aqm` experiment's in `aqm`
//! (each appends its section to report.md with [`append_section`]).

mod aqm;
mod calibration;
mod checks;
mod format;
mod frontier;
mod interactive;
mod markdown;
mod notes;
mod outputs;
mod rates;
mod section;
mod tables;
mod terminal;

pub use crate::output_dir::write_csv;
pub use aqm::{aqm_chart, aqm_terminal_table, paper_beside_codel, write_aqm};
pub use calibration::{calibration_terminal_table, write_calibration};
pub use checks::{check_lines, checks, Check, DELAY_BASED};
pub(crate) use format::thousands;
pub use frontier::{frontier_terminal_table, write_frontier};
pub use outputs::{paper_point, point, write_outputs};
pub use rates::{rates_terminal_table, write_rates};
pub use section::append_section;
pub use tables::{spread_rows, summary_rows, variant_rows, SpreadRow, SummaryRow, VariantRow};
pub use terminal::summary;
