//! The `ik` example's engine: cases in the terms of ozz's `IKTwoBoneJob` and `IKAimJob`, solved
//! by sinew's [`TwoBoneIkJob`] and [`AimIkJob`].
//!
//! Input: a JSON list of cases, each with an `id` and `kind` (`"two_bone"` or `"aim"`):
//! - two-bone: `start`, `mid`, `end` (model-space 4×4 matrices, 16 floats, column-major,
//!   uniform scale), `target`, `pole_vector` (model space, a direction), `mid_axis` (the mid
//!   joint's local space), `weight`, `soften`, `twist_angle` (radians);
//! - aim: `joint` (a matrix), `target`, `pole_vector`, `forward`, `up`, `offset` (the joint's
//!   local space), `weight`.
//!
//! Output: `{"results":[...]}`, one entry per case: `{"id","kind","ok":true,"start_correction",
//! "mid_correction","reached"}` or `{"id","kind","ok":true,"correction","reached"}`, corrections
//! as local-space quaternions `[x,y,z,w]`, right-multiplied (`local' = local · correction`);
//! `{"id","ok":false,"error"}` for a case sinew refuses. Where sinew's conventions differ from
//! ozz's (the soften curve, the weight, the twist reference, the sign of `mid_axis`), see
//! [`sinew_jobs::ik`]: the resulting positions are what agree.

use glam::{Affine3A, Mat4, Quat, Vec3};
use serde_json::{Value, json};
use sinew_jobs::ik::{AimIkJob, TwoBoneIkJob};

/// Solves every case of `cases` (a JSON array).
///
/// # Errors
/// A message when `cases` is not an array; a bad case is an entry with `"ok": false`.
pub fn solve_cases(cases: &Value) -> Result<Value, String> {
    let list = cases
        .as_array()
        .ok_or("the input must be a JSON list of cases")?;
    let results: Vec<Value> = list.iter().map(solve_case).collect();
    Ok(json!({ "results": results }))
}

fn solve_case(case: &Value) -> Value {
    let id = case.get("id").cloned().unwrap_or(Value::Null);
    let kind = case.get("kind").and_then(Value::as_str).unwrap_or_default();
    let result = match kind {
        "two_bone" => two_bone(case),
        "aim" => aim(case),
        other => Err(format!("unknown kind '{other}' (two_bone or aim)")),
    };
    match result {
        Ok(Value::Object(mut fields)) => {
            fields.insert("id".into(), id);
            fields.insert("kind".into(), json!(kind));
            fields.insert("ok".into(), json!(true));
            Value::Object(fields)
        }
        Ok(_) => json!({ "id": id, "ok": false, "error": "internal: not an object" }),
        Err(error) => json!({ "id": id, "ok": false, "error": error }),
    }
}

fn floats<const N: usize>(case: &Value, key: &str) -> Result<[f32; N], String> {
    let list = case
        .get(key)
        .and_then(Value::as_array)
        .ok_or_else(|| format!("`{key}` is missing or not a list"))?;
    if list.len() != N {
        return Err(format!("`{key}` has {} numbers, not {N}", list.len()));
    }
    let mut out = [0.0f32; N];
    for (o, v) in out.iter_mut().zip(list) {
        *o = v
            .as_f64()
            .ok_or_else(|| format!("`{key}` holds something that is not a number"))?
            as f32;
    }
    Ok(out)
}

fn number(case: &Value, key: &str, default: f32) -> Result<f32, String> {
    match case.get(key) {
        None => Ok(default),
        Some(v) => v
            .as_f64()
            .map(|x| x as f32)
            .ok_or_else(|| format!("`{key}` is not a number")),
    }
}

fn vec3(case: &Value, key: &str) -> Result<Vec3, String> {
    floats::<3>(case, key).map(Vec3::from_array)
}

fn optional_vec3(case: &Value, key: &str) -> Result<Option<Vec3>, String> {
    match case.get(key) {
        None | Some(Value::Null) => Ok(None),
        Some(_) => vec3(case, key).map(Some),
    }
}

/// A column-major 4×4 matrix that must be affine (bottom row 0, 0, 0, 1).
fn matrix(case: &Value, key: &str) -> Result<Affine3A, String> {
    let m = Mat4::from_cols_array(&floats::<16>(case, key)?);
    let row = m.row(3);
    if !m.is_finite() {
        return Err(format!("`{key}` is not finite"));
    }
    if (row - glam::Vec4::W).abs().max_element() > 1e-6 {
        return Err(format!("`{key}` is not affine (bottom row {row})"));
    }
    Ok(Affine3A::from_mat4(m))
}

fn quat(q: Quat) -> Value {
    json!([q.x, q.y, q.z, q.w])
}

fn two_bone(case: &Value) -> Result<Value, String> {
    let mut model = [
        matrix(case, "start")?,
        matrix(case, "mid")?,
        matrix(case, "end")?,
    ];
    let parents = [u32::MAX, 0, 1];
    let mut job = TwoBoneIkJob {
        parents: &parents,
        model: &mut model,
        start: 0,
        mid: 1,
        end: 2,
        target: vec3(case, "target")?,
        pole_vector: optional_vec3(case, "pole_vector")?,
        mid_axis: optional_vec3(case, "mid_axis")?,
        weight: number(case, "weight", 1.0)?,
        soften: number(case, "soften", 1.0)?,
        twist_angle: number(case, "twist_angle", 0.0)?,
    };
    job.validate().map_err(|e| e.to_string())?;
    let r = job.run();
    Ok(json!({
        "start_correction": quat(r.start_correction),
        "mid_correction": quat(r.mid_correction),
        "reached": r.reached,
    }))
}

fn aim(case: &Value) -> Result<Value, String> {
    let mut model = [matrix(case, "joint")?];
    let parents = [u32::MAX];
    let mut job = AimIkJob {
        parents: &parents,
        model: &mut model,
        joint: 0,
        target: vec3(case, "target")?,
        forward: optional_vec3(case, "forward")?.unwrap_or(Vec3::X),
        up: optional_vec3(case, "up")?.unwrap_or(Vec3::Y),
        offset: optional_vec3(case, "offset")?.unwrap_or(Vec3::ZERO),
        pole_vector: optional_vec3(case, "pole_vector")?,
        weight: number(case, "weight", 1.0)?,
    };
    job.validate().map_err(|e| e.to_string())?;
    let r = job.run();
    Ok(json!({ "correction": quat(r.correction), "reached": r.reached }))
}
