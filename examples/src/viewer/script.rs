//! A scripted run (`viewer --script FILE`): camera keys by frame, and key presses.
//!
//! One command a line, `#` starts a comment:
//!
//! ```text
//! # frame  camera  eye x y z     target x y z
//! 0        camera  0 6 -10       10 0 10
//! 30       camera  5 4 -6        10 0 10
//! 10       key     pause
//! 12       pick    17
//! ```
//!
//! The camera is interpolated linearly between its keys (held before the first and after the
//! last); a `key` line presses that viewer key on that frame (names as [`Action::NAMES`]); a
//! `pick` line picks the character of that spawn index.

use super::Action;
use glam::Vec3;
use std::path::Path;

/// A parsed script.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Script {
    /// Camera keys `(frame, eye, target)`, by frame.
    pub cameras: Vec<(usize, Vec3, Vec3)>,
    /// Key presses `(frame, action)`, by frame.
    pub keys: Vec<(usize, Action)>,
}

impl Script {
    /// Reads and parses `path`.
    ///
    /// # Errors
    /// The file and line, and what is wrong there.
    pub fn load(path: &Path) -> Result<Self, String> {
        let text = std::fs::read_to_string(path)
            .map_err(|e| format!("--script {}: {e}", path.display()))?;
        Self::parse(&text).map_err(|e| format!("--script {}: {e}", path.display()))
    }

    /// Parses a script's text.
    ///
    /// # Errors
    /// `line N: ...` naming what is wrong.
    pub fn parse(text: &str) -> Result<Self, String> {
        let mut s = Script::default();
        for (n, raw) in text.lines().enumerate() {
            let line = raw.split('#').next().unwrap_or("").trim();
            if line.is_empty() {
                continue;
            }
            let bad = |what: String| format!("line {}: {what}: '{}'", n + 1, raw.trim());
            let words: Vec<&str> = line.split_whitespace().collect();
            let frame: usize = words[0]
                .parse()
                .map_err(|_| bad("the first word must be a frame number".into()))?;
            match words.get(1).copied() {
                Some("camera") => {
                    if words.len() != 8 {
                        return Err(bad(
                            "camera takes six numbers (eye x y z, target x y z)".into()
                        ));
                    }
                    let mut v = [0f32; 6];
                    for (k, w) in words[2..].iter().enumerate() {
                        v[k] = w
                            .parse::<f32>()
                            .ok()
                            .filter(|x| x.is_finite())
                            .ok_or_else(|| bad(format!("'{w}' is not a finite number")))?;
                    }
                    let (eye, target) = (Vec3::new(v[0], v[1], v[2]), Vec3::new(v[3], v[4], v[5]));
                    if eye.distance(target) < 1e-3 {
                        return Err(bad("eye and target are the same point".into()));
                    }
                    s.cameras.push((frame, eye, target));
                }
                Some("key") => {
                    let name = words.get(2).ok_or_else(|| bad("key needs a name".into()))?;
                    let action = Action::from_name(name).ok_or_else(|| {
                        bad(format!(
                            "unknown key '{name}' (keys: {})",
                            Action::NAMES.join(", ")
                        ))
                    })?;
                    if words.len() > 3 {
                        return Err(bad("key takes one name".into()));
                    }
                    s.keys.push((frame, action));
                }
                Some("pick") => {
                    let index = match words[2..] {
                        [w] => w.parse::<usize>().ok(),
                        _ => None,
                    }
                    .ok_or_else(|| bad("pick takes one character index".into()))?;
                    s.keys.push((frame, Action::Pick(index)));
                }
                _ => {
                    return Err(bad(
                        "expected 'camera', 'key' or 'pick' after the frame".into()
                    ));
                }
            }
        }
        s.cameras.sort_by_key(|c| c.0);
        s.keys.sort_by_key(|k| k.0);
        Ok(s)
    }

    /// The camera `(eye, target)` at `frame`, or `None` without camera keys.
    pub fn camera_at(&self, frame: usize) -> Option<(Vec3, Vec3)> {
        let first = self.cameras.first()?;
        if frame <= first.0 {
            return Some((first.1, first.2));
        }
        for w in self.cameras.windows(2) {
            let (a, b) = (w[0], w[1]);
            if frame <= b.0 {
                let t = (frame - a.0) as f32 / (b.0 - a.0).max(1) as f32;
                return Some((a.1.lerp(b.1, t), a.2.lerp(b.2, t)));
            }
        }
        self.cameras.last().map(|l| (l.1, l.2))
    }

    /// The key presses of `frame`.
    pub fn keys_at(&self, frame: usize) -> impl Iterator<Item = Action> + '_ {
        self.keys.iter().filter(move |k| k.0 == frame).map(|k| k.1)
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    #[test]
    fn cameras_interpolate_between_keys_and_hold_outside() {
        let s = Script::parse(
            "# comment\n10 camera 0 0 0  0 0 10\n\n20 camera 10 0 0  10 0 10 # end\n15 key pause\n",
        )
        .unwrap();
        assert_eq!(s.camera_at(0).unwrap().0, Vec3::ZERO);
        let (eye, target) = s.camera_at(15).unwrap();
        assert_eq!(eye, Vec3::new(5.0, 0.0, 0.0));
        assert_eq!(target, Vec3::new(5.0, 0.0, 10.0));
        assert_eq!(s.camera_at(99).unwrap().0, Vec3::new(10.0, 0.0, 0.0));
        assert_eq!(s.keys_at(15).collect::<Vec<_>>(), vec![Action::Pause]);
        assert_eq!(s.keys_at(14).count(), 0);
        let s = Script::parse("4 pick 17\n4 key step").unwrap();
        assert_eq!(
            s.keys_at(4).collect::<Vec<_>>(),
            vec![Action::Pick(17), Action::Step]
        );
    }

    #[test]
    fn bad_lines_name_their_line_and_problem() {
        for (text, needle) in [
            ("x camera 0 0 0 1 1 1", "line 1: the first word"),
            ("\n3 camera 0 0 0 1 1", "line 2: camera takes six"),
            ("3 camera 0 0 nan 1 1 1", "'nan' is not a finite"),
            ("3 camera 1 1 1 1 1 1", "same point"),
            ("3 key jump", "unknown key 'jump'"),
            ("3 zoom", "expected 'camera', 'key' or 'pick'"),
            ("3 pick", "pick takes one character index"),
            ("3 pick -1", "pick takes one character index"),
        ] {
            let e = Script::parse(text).unwrap_err();
            assert!(e.contains(needle), "{text:?}: {e}");
        }
    }
}
