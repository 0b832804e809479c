//! How each opt-in experiment adds its section to report.md, after the rest.

/// Appends `section` to `out`/report.md (written before by [`super::write_outputs`]; created if it
/// was not): how each opt-in experiment adds its section after the rest.
pub fn append_section(out: &std::path::Path, section: &str) -> crate::error::Result<()> {
    let path = out.join("report.md");
    let mut report = if path.exists() {
        sprout_files::read_to_string_capped(&path, 64 << 20).map_err(|e| {
            crate::error::EvalError::Io {
                what: "reading",
                path: path.clone(),
                source: std::io::Error::other(e),
            }
        })?
    } else {
        String::new()
    };
    report.push_str(section);
    crate::output_dir::write_atomically(&path, report)?;
    Ok(())
}
