//! The modulation effects (`chorus`, `flanger`, `phaser`) through the
//! scene loader and compiler: bad settings are located errors.

/// Bad settings through the scene loader and compiler: each an error at
/// the offending value's line and column (or, for what only the build can
/// tell, the node's), naming the node and what is valid.
#[test]
fn bad_settings_are_located_errors() {
    use morphrt::graph::compile;
    let cases: &[(&str, &str, &str, &str, Option<&str>)] = &[
        // (op, params, offending text, message, help)
        (
            "chorus",
            r#"{ "voices": 9 }"#,
            "9",
            "`voices` = 9 is out of range",
            Some("valid range: 1 … 8"),
        ),
        (
            "chorus",
            r#"{ "voices": 0 }"#,
            "0",
            "`voices` = 0 is out of range",
            Some("valid range: 1 … 8"),
        ),
        (
            "chorus",
            r#"{ "delay": "80ms" }"#,
            "\"80ms\"",
            "`delay` = 0.08 is out of range",
            Some("valid range: 0 … 0.05 s"),
        ),
        (
            "chorus",
            r#"{ "depth": "3Hz" }"#,
            "\"3Hz\"",
            "param `depth`",
            None,
        ),
        (
            "flanger",
            r#"{ "feedback": 1.2 }"#,
            "1.2",
            "`feedback` = 1.2 is out of range",
            Some("valid range: -0.99 … 0.99"),
        ),
        (
            "flanger",
            r#"{ "rate": "-1Hz" }"#,
            "\"-1Hz\"",
            "`rate` = -1 is out of range",
            Some("valid range: 0 … 20 Hz"),
        ),
        (
            "phaser",
            r#"{ "stages": 14 }"#,
            "14",
            "`stages` = 14 is out of range",
            Some("valid range: 2 … 12"),
        ),
        (
            "phaser",
            r#"{ "mix": 2 }"#,
            "2",
            "`mix` = 2 is out of range",
            Some("valid range: 0 … 1"),
        ),
    ];
    let scene = |op: &str, params: &str| {
        format!(
            "{{ \"version\": \"1.0\", \"seed\": 1,\n  \"nodes\": [\n    {{ \"id\": \"src\", \"op\": \"noise\" }},\n    \
             {{ \"id\": \"fx\", \"op\": \"{op}\",\n      \"params\": {params} }}\n  ],\n  \
             \"edges\": [ {{ \"from\": \"src\", \"to\": \"fx\" }} ],\n  \"outputs\": {{ \"main\": [\"fx\"] }} }}"
        )
    };
    let compiled = |text: &str| {
        let s = morphrt::scene::load_str(text, "t.json", None).expect("the scene loads");
        match compile(&s, &morphrt::host::files::resources::compile_options()) {
            Ok(_) => panic!("compiled:\n{text}"),
            Err(d) => d,
        }
    };
    for (op, params, bad, message, help) in cases {
        let text = scene(op, params);
        let d = compiled(&text);
        let e = d.iter().find(|d| d.is_error()).expect("an error");
        // The offending value sits on line 5, after `"params": `.
        let col = 17 + params.find(bad).expect("the bad text") as u32;
        let loc = e.loc.as_ref().expect("located");
        assert_eq!((loc.line, loc.col), (5, col), "{op} {params}: {e:?}");
        assert_eq!(e.node.as_deref(), Some("fx"), "{op} {params}");
        assert!(e.message.contains(message), "{op} {params}: {}", e.message);
        if let Some(h) = help {
            assert_eq!(e.help.as_deref(), Some(*h), "{op} {params}");
        }
    }
    // An odd number of stages: only the build can tell; at the node.
    let text = scene("phaser", r#"{ "stages": 5 }"#);
    let d = compiled(&text);
    let e = d.iter().find(|d| d.is_error()).expect("an error");
    let loc = e.loc.as_ref().expect("located");
    assert_eq!(loc.line, 4, "{e:?}");
    assert_eq!(e.node.as_deref(), Some("fx"));
    assert_eq!(
        e.message,
        "cannot build `phaser`: `stages` = 5 is not an even number of stages from 2 to 12 \
         (2, 4, 6, … 12): the notches come in pairs of stages"
    );
}
