//! `reverb` through the scene loader and compiler: bad settings are
//! located errors.

/// Bad settings in a scene are refused with the file, line and column,
/// the node and the valid range.
#[test]
fn bad_settings_are_located_errors() {
    use morphrt::graph::compile;
    use morphrt::scene::load_str;
    let scene = |params: &str, extra: &str| {
        format!(
            r#"{{ "version": "1.0", "seed": 1,
  "nodes": [
    {{ "id": "src", "op": "noise" }},
    {{ "id": "verb", "op": "reverb",
      "params": {params} }}
  ],
  "edges": [ {{ "from": "src", "to": "verb" }}{extra} ],
  "outputs": {{ "main": ["verb:out", "verb:out_r"] }} }}"#
        )
    };
    let refused_with = |params: &str, extra: &str, needles: &[&str]| {
        let text = scene(params, extra);
        let diags = match load_str(&text, "verb.json", None) {
            Err(d) => d,
            Ok(s) => match compile(&s, &morphrt::host::files::resources::compile_options()) {
                Err(d) => d,
                Ok(_) => panic!("{params}: accepted"),
            },
        };
        let shown: Vec<String> = diags.iter().map(|d| d.to_string()).collect();
        let all = shown.join("\n");
        for n in needles {
            assert!(all.contains(n), "{params}: expected `{n}` in:\n{all}");
        }
    };
    let refused = |params: &str, needles: &[&str]| refused_with(params, "", needles);
    refused(
        r#"{ "size": 8 }"#,
        &["verb.json:5:", "`size` = 8 is out of range", "0.25 … 4"],
    );
    refused(
        r#"{ "mix": 1.5 }"#,
        &["verb.json:5:", "`mix` = 1.5 is out of range", "0 … 1"],
    );
    refused(
        r#"{ "rt60_low": "0.01s" }"#,
        &["verb.json:5:", "`rt60_low`", "out of range"],
    );
    refused(
        r#"{ "predelay": "2 s" }"#,
        &["verb.json:5:", "`predelay`", "out of range"],
    );
    refused(
        r#"{ "crossover": "3 s" }"#,
        &["verb.json:5:", "`crossover`"],
    );
    refused(
        r#"{ "rt60_high": "1 kHz" }"#,
        &["verb.json:5:", "`rt60_high`"],
    );
    refused(r#"{ "damping": 0.5 }"#, &["verb.json:5:", "damping"]);
    // `size` is read once at build: no edge may drive it.
    refused_with(
        "{}",
        r#", { "from": "src", "to": "verb:size" }"#,
        &["verb.json:7:", "size"],
    );
}
