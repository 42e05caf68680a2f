//! Blend-tree weights from the outside: reads one JSON request on stdin, prints one JSON answer.
//!
//! ```text
//! echo '{"kind": "1d", "points": [0.0, 1.5, 4.0], "queries": [0.75, 5.0]}' \
//!   | cargo run --example blend_weights
//! {"weights":[[0.5,0.5,0.0],[0.0,0.0,1.0]]}
//! ```
//!
//! Kinds: `1d` (thresholds), `cartesian` (gradient band interpolation, sinew's 2D freeform
//! cartesian), `directional` (its polar variant, sinew's 2D freeform directional; angles
//! weigh `DIRECTIONAL_ANGLE_SCALE` = 2 against relative magnitudes) and `simple_directional`.
//! Points are numbers (1d) or `[x, y]` pairs; one row of weights per query, children in the
//! order given. An invalid layout or request prints `{"error": "..."}` and exits with status 1.

use glam::Vec2;
use serde_json::{Value, json};
use sinew_jobs::controller::BlendTreeKind;
use sinew_jobs::controller::blend_tree::{check_layout, weights_1d, weights_2d};
use std::io::Read;
use std::process::ExitCode;

fn main() -> ExitCode {
    let mut text = String::new();
    let answer = match std::io::stdin().read_to_string(&mut text) {
        Err(e) => Err(format!("stdin: {e}")),
        Ok(_) => answer(&text),
    };
    match answer {
        Ok(v) => {
            println!("{v}");
            ExitCode::SUCCESS
        }
        Err(e) => {
            println!("{}", json!({ "error": e }));
            ExitCode::FAILURE
        }
    }
}

fn number(v: &Value, what: &str) -> Result<f32, String> {
    let x = v
        .as_f64()
        .ok_or_else(|| format!("{what}: expected a number, got {v}"))?;
    let f = x as f32;
    if !f.is_finite() {
        return Err(format!("{what}: {x} is not a finite f32"));
    }
    Ok(f)
}

fn pair(v: &Value, what: &str) -> Result<Vec2, String> {
    match v.as_array().map(Vec::as_slice) {
        Some([x, y]) => Ok(Vec2::new(number(x, what)?, number(y, what)?)),
        _ => Err(format!("{what}: expected [x, y], got {v}")),
    }
}

fn list<'a>(req: &'a Value, key: &str) -> Result<&'a Vec<Value>, String> {
    req.get(key)
        .and_then(Value::as_array)
        .ok_or_else(|| format!("the request needs an array '{key}'"))
}

fn answer(text: &str) -> Result<Value, String> {
    let req: Value = serde_json::from_str(text).map_err(|e| format!("request: {e}"))?;
    let kind = req
        .get("kind")
        .and_then(Value::as_str)
        .ok_or("the request needs a string 'kind'")?;
    let points = list(&req, "points")?;
    let queries = list(&req, "queries")?;
    let mut rows = Vec::with_capacity(queries.len());
    if kind == "1d" {
        let t = points
            .iter()
            .enumerate()
            .map(|(i, p)| number(p, &format!("points[{i}]")))
            .collect::<Result<Vec<f32>, String>>()?;
        check_layout(BlendTreeKind::OneD, &t, &[]).map_err(|e| e.to_string())?;
        let mut w = vec![0.0; t.len()];
        for (i, q) in queries.iter().enumerate() {
            weights_1d(&t, number(q, &format!("queries[{i}]"))?, &mut w);
            rows.push(w.clone());
        }
    } else {
        let kind = match kind {
            "cartesian" => BlendTreeKind::FreeformCartesian,
            "directional" => BlendTreeKind::FreeformDirectional,
            "simple_directional" => BlendTreeKind::SimpleDirectional,
            other => {
                return Err(format!(
                    "unknown kind '{other}' (1d, cartesian, directional, simple_directional)"
                ));
            }
        };
        let p = points
            .iter()
            .enumerate()
            .map(|(i, p)| pair(p, &format!("points[{i}]")))
            .collect::<Result<Vec<Vec2>, String>>()?;
        check_layout(kind, &[], &p).map_err(|e| e.to_string())?;
        let mut w = vec![0.0; p.len()];
        for (i, q) in queries.iter().enumerate() {
            weights_2d(kind, &p, pair(q, &format!("queries[{i}]"))?, &mut w);
            rows.push(w.clone());
        }
    }
    Ok(json!({ "weights": rows }))
}
