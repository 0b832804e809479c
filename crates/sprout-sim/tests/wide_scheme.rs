//! `sprout sim`'s options with the `sprout-wide` scheme and the wide model's keys: Sprout-EWMA,
//! which has no rate model, refuses them as it refuses the paper model's keys.

use sprout_sim::scheme::Scheme;
use sprout_sim::sim_json::SimOptions;

#[test]
fn sprout_ewma_refuses_the_wide_model_and_sprout_wide_takes_its_keys() {
    for param in ["model=wide", "estimator.Wide.sigma_log=0.5"] {
        let opts = SimOptions {
            scheme: Scheme::SproutEwma,
            params: vec![param.into()],
            ..SimOptions::default()
        };
        let e = opts.config().unwrap_err().to_string();
        assert!(
            e.contains(&format!("--param {param}")) && e.contains("sprout-ewma does not use"),
            "{e}"
        );
    }
    let wide = SimOptions {
        scheme: Scheme::SproutWide,
        params: vec!["estimator.Wide.sigma_log=0.5".into()],
        ..SimOptions::default()
    };
    let cfg = wide.config().unwrap();
    let json = serde_json::to_value(&cfg.protocol.estimator).unwrap();
    assert_eq!(json["Wide"]["sigma_log"], 0.5, "{json}");
    // The paper's Sprout refuses a key of the wide model on its own...
    let paper = SimOptions {
        scheme: Scheme::Sprout,
        params: vec!["estimator.Wide.sigma_log=0.5".into()],
        ..SimOptions::default()
    };
    let e = paper.config().unwrap_err().to_string();
    assert!(e.contains("sprout does not use"), "{e}");
    // ...and takes the preset (becoming the wide model), and after it the wide model's keys.
    let sprout = SimOptions {
        scheme: Scheme::Sprout,
        params: vec!["model=wide".into()],
        ..SimOptions::default()
    };
    assert_eq!(
        sprout.config().unwrap().protocol,
        Scheme::SproutWide.protocol_config()
    );
}
