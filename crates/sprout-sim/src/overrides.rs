//! Changing any parameter of a Sprout configuration from the command line: `KEY=VALUE`, where
//! KEY is a field of [`sprout_core::Config`] as `sprout params` prints it (nested fields joined
//! by dots, e.g. `model.sigma=250` or `window_skip_ticks=0`) and VALUE is JSON, or a bare word
//! for a named choice (`model.grid=Midpoint`).
//!
//! One key names a preset rather than a field: `model=wide` runs Sprout's Bayesian estimator on
//! the wide rate model (an outage to 1 Gbit/s, [`sprout_core::wide_model`]) with its default
//! parameters, which `estimator.Wide.KEY=VALUE` then changes (e.g.
//! `estimator.Wide.sigma_log=0.5`); `model=paper` returns to the paper's model. Either leaves
//! Sprout-EWMA's estimator as it is, since it has no rate model.

use serde_json::Value;
use sprout_core::{Config, EstimatorKind};

use crate::error::{ParamError, SimError};

/// Applies `assignments` (`KEY=VALUE`, in order) to `cfg`. The result is validated; on any
/// error `cfg` is left unchanged and the message names the assignment at fault.
pub fn apply(cfg: &mut Config, assignments: &[String]) -> Result<(), SimError> {
    if assignments.is_empty() {
        return Ok(());
    }
    let bad = |a: &String, why: ParamError| SimError::BadParameter {
        assignment: a.clone(),
        why,
    };
    let mut tree = serde_json::to_value(&*cfg)?;
    for a in assignments {
        let (key, value) = a
            .split_once('=')
            .ok_or_else(|| bad(a, ParamError::NotAnAssignment))?;
        if key.trim() == "model" && !value.trim().starts_with('{') {
            model_preset(&mut tree, value.trim()).map_err(|e| bad(a, e))?;
            continue;
        }
        let slot = field_mut(&mut tree, key.trim()).map_err(|e| bad(a, e))?;
        *slot = parse_value(value.trim());
        // Check each assignment on its own so that a type error names it.
        serde_json::from_value::<Config>(tree.clone()).map_err(|e| bad(a, e.into()))?;
    }
    let new: Config = serde_json::from_value(tree)?;
    new.validate().map_err(|source| SimError::BadParameters {
        assignments: assignments.join(" "),
        source,
    })?;
    *cfg = new;
    Ok(())
}

/// The rate models `model=NAME` selects.
pub const MODEL_PRESETS: [&str; 2] = ["paper", "wide"];

/// Applies `model=NAME` to the configuration's JSON tree: the estimator becomes the wide model
/// (its default parameters) or the paper's, with the feedback interval of that parameter set
/// ([`Config::wide`]: every tick; the paper's: none), unless the estimator is Sprout-EWMA's,
/// which has no model.
fn model_preset(tree: &mut Value, name: &str) -> Result<(), ParamError> {
    let preset = match name.to_ascii_lowercase().as_str() {
        "wide" => Config::wide(),
        "paper" => Config::default(),
        _ => {
            return Err(ParamError::UnknownModel {
                name: name.to_string(),
                known: &MODEL_PRESETS,
            })
        }
    };
    let slot = field_mut(tree, "estimator")?;
    let current: EstimatorKind = serde_json::from_value(slot.clone())?;
    if !matches!(current, EstimatorKind::Ewma { .. }) {
        *slot = serde_json::to_value(&preset.estimator)?;
        *field_mut(tree, "feedback_interval_us")? =
            serde_json::to_value(preset.feedback_interval_us)?;
    }
    Ok(())
}

/// The configuration as pretty JSON: every key [`apply`] accepts, with its value.
pub fn describe(cfg: &Config) -> String {
    serde_json::to_string_pretty(cfg).unwrap_or_default()
}

fn field_mut<'a>(tree: &'a mut Value, key: &str) -> Result<&'a mut Value, ParamError> {
    if key.is_empty() {
        return Err(ParamError::EmptyKey);
    }
    let mut node = tree;
    let mut path = String::new();
    for part in key.split('.') {
        let Value::Object(map) = node else {
            return Err(ParamError::NoFields(path));
        };
        if !map.contains_key(part) {
            return Err(ParamError::UnknownKey {
                key: part.to_string(),
                within: path,
                known: map.keys().cloned().collect(),
            });
        }
        if !path.is_empty() {
            path.push('.');
        }
        path.push_str(part);
        node = map.get_mut(part).expect("checked above");
    }
    Ok(node)
}

/// JSON if it parses as JSON, otherwise the text as a string (an enum variant's name).
fn parse_value(text: &str) -> Value {
    serde_json::from_str(text).unwrap_or_else(|_| Value::String(text.to_string()))
}

#[cfg(test)]
mod tests {
    use super::*;
    use sprout_core::params::{QueueDrain, RateGrid, WideParams};

    fn set(a: &[&str]) -> Result<Config, String> {
        let mut c = Config::default();
        let list: Vec<String> = a.iter().map(|s| s.to_string()).collect();
        apply(&mut c, &list).map(|()| c).map_err(|e| e.to_string())
    }

    #[test]
    fn numbers_nested_fields_and_named_choices() {
        let c = set(&[
            "window_skip_ticks=0",
            "model.sigma=250",
            "queue_drain=Increment",
            "model.grid=Midpoint",
            "model.bins=257",
            "feedback_interval_us=20000",
        ])
        .unwrap();
        assert_eq!(c.window_skip_ticks, 0);
        assert_eq!(c.model.sigma, 250.0);
        assert_eq!(c.queue_drain, QueueDrain::Increment);
        assert_eq!(c.model.grid, RateGrid::Midpoint);
        assert_eq!(c.model.bins, 257);
        assert_eq!(
            c.feedback_interval_us,
            Some(sprout_core::Duration::from_millis(20))
        );
        let back = set(&["feedback_interval_us=null"]).unwrap();
        assert_eq!(back.feedback_interval_us, None);
    }

    #[test]
    fn bad_assignments_are_named_and_change_nothing() {
        for (a, expect) in [
            ("sigma=3", "unknown key 'sigma' (known:"),
            ("model.nope=1", "unknown key 'nope' in 'model'"),
            ("confidence", "expected KEY=VALUE"),
            ("confidence=high", "parameter 'confidence=high'"),
            ("queue_drain=Sideways", "parameter 'queue_drain=Sideways'"),
            (
                "confidence=1.5",
                "confidence must be strictly between 0 and 1",
            ),
            ("model.sigma.x=1", "'model.sigma' has no fields"),
        ] {
            let mut c = Config::default();
            let err = apply(&mut c, &[a.to_string()]).unwrap_err().to_string();
            assert!(err.contains(expect), "{a}: {err}");
            assert_eq!(c, Config::default(), "{a} changed the configuration");
        }
    }

    #[test]
    fn model_presets_switch_the_rate_model_but_not_ewma() {
        let wide = set(&["model=wide"]).unwrap();
        assert_eq!(wide.estimator, EstimatorKind::Wide(WideParams::default()));
        let tuned = set(&["model=wide", "estimator.Wide.sigma_log=0.5"]).unwrap();
        match tuned.estimator {
            EstimatorKind::Wide(w) => assert_eq!(w.sigma_log, 0.5),
            other => panic!("not the wide model: {other:?}"),
        }
        assert_eq!(
            wide,
            Config::wide(),
            "the preset is the whole wide parameter set"
        );
        let back = set(&["model=wide", "model=paper"]).unwrap();
        assert_eq!(back, Config::default());
        let mut ewma = Config::ewma();
        apply(&mut ewma, &["model=wide".to_string()]).unwrap();
        assert_eq!(ewma, Config::ewma());
        let err = set(&["model=tall"]).unwrap_err();
        assert!(err.contains("unknown model 'tall'"), "{err}");
        let err = set(&["model=wide", "estimator.Wide.log_step=0"]).unwrap_err();
        assert!(err.contains("wide model parameters"), "{err}");
    }

    #[test]
    fn describe_lists_every_key_apply_accepts() {
        let text = describe(&Config::default());
        let tree: Value = serde_json::from_str(&text).unwrap();
        for key in ["confidence", "window_skip_ticks", "model"] {
            assert!(tree.get(key).is_some(), "{key} missing from {text}");
        }
        assert!(tree["model"].get("sigma").is_some());
    }
}
