//! Param overrides on a scene's text, before it loads: what `--set
//! node.param=value` and a Python `params={…}` do. The value is written
//! as the scene would write it (`"900Hz"`, `0.5`, `"lowpass"`, `true`),
//! so it is checked, converted and reported exactly as the scene's own.

use serde_json::Value;

/// `node.param=value` split into the param's address and its value: a
/// JSON number, boolean or array as such, anything else a string
/// (`lp.cutoff=900Hz` → `"900Hz"`).
pub fn parse_set(arg: &str) -> Result<(String, Value), String> {
    let Some((key, value)) = arg.split_once('=') else {
        return Err(format!(
            "`{arg}` is not `node.param=value` (e.g. `lp.cutoff=900Hz`)"
        ));
    };
    let key = key.trim();
    if !key.contains('.') || key.starts_with('.') || key.ends_with('.') {
        return Err(format!(
            "`{key}` is not `node.param` (e.g. `lp.cutoff=900Hz`)"
        ));
    }
    let value = value.trim();
    let parsed = match serde_json::from_str::<Value>(value) {
        Ok(v @ (Value::Number(_) | Value::Bool(_) | Value::Array(_))) => v,
        _ => Value::String(value.to_string()),
    };
    Ok((key.to_string(), parsed))
}

/// `text` with each `(node.param, value)` of `sets` written into the
/// node's `params` (a top-level node or a module's), in order. A text that
/// is not a JSON object comes back unchanged (loading it then says
/// where it is wrong); a node the scene does not have is an error naming
/// the nodes it has.
pub fn set_params(text: &str, sets: &[(String, Value)]) -> Result<String, String> {
    if sets.is_empty() {
        return Ok(text.to_string());
    }
    let Ok(mut doc) = serde_json::from_str::<Value>(text.strip_prefix('\u{feff}').unwrap_or(text))
    else {
        return Ok(text.to_string());
    };
    if !doc.is_object() {
        return Ok(text.to_string());
    }
    for (key, value) in sets {
        let Some((node, param)) = key.rsplit_once('.') else {
            return Err(format!("`{key}` is not `node.param`"));
        };
        set_param(&mut doc, node, param, value.clone())?;
    }
    serde_json::to_string_pretty(&doc).map_err(|e| e.to_string())
}

fn set_param(doc: &mut Value, node: &str, param: &str, value: Value) -> Result<(), String> {
    let mut lists: Vec<&mut Value> = Vec::new();
    for (key, v) in doc.as_object_mut().into_iter().flatten() {
        match key.as_str() {
            "nodes" => lists.push(v),
            "modules" => {
                for module in v.as_array_mut().into_iter().flatten() {
                    if let Some(n) = module.get_mut("nodes") {
                        lists.push(n);
                    }
                }
            }
            _ => {}
        }
    }
    let mut ids = Vec::new();
    for list in lists {
        for n in list.as_array_mut().into_iter().flatten() {
            let id = n
                .get("id")
                .and_then(Value::as_str)
                .unwrap_or("")
                .to_string();
            if id != node {
                ids.push(id);
                continue;
            }
            let Some(obj) = n.as_object_mut() else {
                continue;
            };
            let params = obj
                .entry("params")
                .or_insert_with(|| Value::Object(Default::default()));
            let Some(params) = params.as_object_mut() else {
                return Err(format!("node `{node}`: `params` is not an object"));
            };
            params.insert(param.to_string(), value);
            return Ok(());
        }
    }
    Err(format!(
        "`{node}.{param}`: the scene has no node `{node}` (its nodes: {})",
        ids.join(", ")
    ))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::graph::{compile, CompileOptions};

    const SCENE: &str = r#"{ "version": "1.0", "sample_rate": 48000,
      "modules": [{ "id": "m", "nodes": [{ "id": "lp", "op": "biquad", "params": { "cutoff": "2kHz" } }] }],
      "nodes": [{ "id": "osc", "op": "saw", "params": { "freq": "110Hz" } }, { "id": "g", "op": "gain" }],
      "edges": [{ "from": "osc", "to": "lp" }, { "from": "lp", "to": "g" }],
      "outputs": { "main": ["g"] } }"#;

    fn value(text: &str, node: &str, param: &str) -> crate::ops::Value {
        let scene = crate::scene::load_str(text, "t.json", None).unwrap();
        let plan = compile(&scene, &CompileOptions::default()).unwrap();
        let n = plan.nodes.iter().find(|n| n.id == node).unwrap();
        n.values[n.op.param_index(param).unwrap()].clone()
    }

    #[test]
    fn a_set_reads_as_the_scene_would_write_it() {
        assert_eq!(
            parse_set("lp.cutoff=900Hz"),
            Ok(("lp.cutoff".into(), Value::from("900Hz")))
        );
        assert_eq!(
            parse_set("g.gain = 0.5"),
            Ok(("g.gain".into(), Value::from(0.5)))
        );
        assert_eq!(
            parse_set("lp.mode=lowpass"),
            Ok(("lp.mode".into(), Value::from("lowpass")))
        );
        assert_eq!(
            parse_set("x.on=true"),
            Ok(("x.on".into(), Value::from(true)))
        );
        assert!(parse_set("lp.cutoff")
            .unwrap_err()
            .contains("node.param=value"));
        assert!(parse_set("cutoff=3").unwrap_err().contains("node.param"));
    }

    #[test]
    fn set_params_changes_top_level_and_module_nodes_and_adds_params() {
        let sets = [
            parse_set("lp.cutoff=900Hz").unwrap(),
            parse_set("osc.freq=55").unwrap(),
            parse_set("g.gain=-6dB").unwrap(),
        ];
        let text = set_params(SCENE, &sets).unwrap();
        assert_eq!(
            value(&text, "lp", "cutoff"),
            crate::ops::Value::Number(900.0)
        );
        assert_eq!(value(&text, "osc", "freq"), crate::ops::Value::Number(55.0));
        assert_eq!(
            value(&text, "g", "gain"),
            crate::ops::Value::Number(libm::pow(10.0, -6.0 / 20.0))
        );
        assert_eq!(
            value(SCENE, "lp", "cutoff"),
            crate::ops::Value::Number(2000.0)
        );
    }

    #[test]
    fn a_set_is_checked_as_the_scene_is() {
        let text = set_params(SCENE, &[parse_set("lp.cutoff=3ms").unwrap()]).unwrap();
        let scene = crate::scene::load_str(&text, "t.json", None).unwrap();
        let Err(errors) = compile(&scene, &CompileOptions::default()) else {
            panic!("a duration for a cutoff compiles")
        };
        assert!(
            errors
                .iter()
                .any(|d| d.message.contains("frequency") && d.node.as_deref() == Some("lp")),
            "{errors:?}"
        );
        let e = set_params(SCENE, &[parse_set("hp.cutoff=1kHz").unwrap()]).unwrap_err();
        assert!(
            e.contains("no node `hp`") && (e.contains("lp, osc, g") || e.contains("osc, g, lp")),
            "{e}"
        );
        assert_eq!(
            set_params("{ not json", &[parse_set("a.b=1").unwrap()]).unwrap(),
            "{ not json"
        );
    }
}
