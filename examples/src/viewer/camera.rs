//! The viewer's camera: orbit around a point, or fly (look around and move).

use glam::Vec3;
use sinew_gpu::render::Camera;

/// How the camera moves.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CameraMode {
    /// Around `target` at `distance`; dragging turns, the wheel zooms, W/S/A/D move the target.
    Orbit,
    /// From `eye`; dragging looks around, W/S/A/D/Q/E move.
    Fly,
}

/// Yaw and pitch (radians) with a position: the whole camera state.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct ViewCamera {
    /// Orbit or fly.
    pub mode: CameraMode,
    /// Orbit: the point looked at.
    pub target: Vec3,
    /// Orbit: distance from the target.
    pub distance: f32,
    /// Fly: the eye.
    pub eye: Vec3,
    /// Heading around +Y, radians (0 looks along +Z).
    pub yaw: f32,
    /// Up/down, radians (negative looks down).
    pub pitch: f32,
}

const PITCH_LIMIT: f32 = 1.5;

impl ViewCamera {
    /// Orbiting `target` from `distance`, looking along +Z and down by `pitch`.
    pub fn orbit(target: Vec3, distance: f32, yaw: f32, pitch: f32) -> Self {
        let mut c = Self {
            mode: CameraMode::Orbit,
            target,
            distance: distance.max(0.1),
            eye: Vec3::ZERO,
            yaw,
            pitch: pitch.clamp(-PITCH_LIMIT, PITCH_LIMIT),
        };
        c.eye = c.eye_position();
        c
    }

    /// The unit direction the camera looks in.
    pub fn forward(&self) -> Vec3 {
        let (sy, cy) = self.yaw.sin_cos();
        let (sp, cp) = self.pitch.sin_cos();
        Vec3::new(cp * sy, sp, cp * cy)
    }

    /// Where the eye is.
    pub fn eye_position(&self) -> Vec3 {
        match self.mode {
            CameraMode::Orbit => self.target - self.forward() * self.distance,
            CameraMode::Fly => self.eye,
        }
    }

    /// The render camera.
    pub fn camera(&self) -> Camera {
        let eye = self.eye_position();
        let mut c = Camera::look_at(eye, eye + self.forward());
        c.far = 5000.0;
        c
    }

    /// Switches orbit ↔ fly, keeping the eye and the view.
    pub fn toggle_mode(&mut self) {
        let eye = self.eye_position();
        match self.mode {
            CameraMode::Orbit => {
                self.mode = CameraMode::Fly;
                self.eye = eye;
            }
            CameraMode::Fly => {
                self.mode = CameraMode::Orbit;
                self.target = eye + self.forward() * self.distance;
            }
        }
    }

    /// Turns by a mouse drag of `(dx, dy)` pixels.
    pub fn turn(&mut self, dx: f32, dy: f32) {
        // In orbit mode the target stays put and the eye moves round it.
        self.yaw -= dx * 0.005;
        self.pitch = (self.pitch - dy * 0.005).clamp(-PITCH_LIMIT, PITCH_LIMIT);
    }

    /// Wheel: orbit zooms (each step 10 %), fly moves along the view.
    pub fn zoom(&mut self, steps: f32) {
        match self.mode {
            CameraMode::Orbit => {
                self.distance = (self.distance * 0.9f32.powf(steps)).clamp(0.5, 4000.0);
            }
            // A tenth of the orbit distance a step: the scene's scale.
            CameraMode::Fly => self.eye += self.forward() * steps * 0.1 * self.distance,
        }
    }

    /// Moves by `(right, up, forward)` metres: the target in orbit mode, the eye in fly mode.
    /// Forward is horizontal in orbit mode.
    pub fn translate(&mut self, right: f32, up: f32, forward: f32) {
        let f = self.forward();
        let flat = Vec3::new(f.x, 0.0, f.z).normalize_or_zero();
        let side = flat.cross(Vec3::Y).normalize_or_zero();
        match self.mode {
            CameraMode::Orbit => {
                self.target += side * right + Vec3::Y * up + flat * forward;
            }
            CameraMode::Fly => self.eye += side * right + Vec3::Y * up + f * forward,
        }
    }

    /// A camera at `eye` looking at `target` (a script's key), in fly mode.
    pub fn look_at(eye: Vec3, target: Vec3) -> Self {
        let d = (target - eye).normalize_or(Vec3::Z);
        Self {
            mode: CameraMode::Fly,
            target,
            distance: (target - eye).length().max(0.1),
            eye,
            yaw: d.x.atan2(d.z),
            pitch: d.y.clamp(-1.0, 1.0).asin().clamp(-PITCH_LIMIT, PITCH_LIMIT),
        }
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    #[test]
    fn orbit_keeps_the_target_in_the_middle_of_the_image_at_its_distance() {
        let target = Vec3::new(10.0, 1.0, 20.0);
        let mut c = ViewCamera::orbit(target, 15.0, 0.3, -0.4);
        for (dx, dy) in [(0.0, 0.0), (120.0, 0.0), (-40.0, 60.0), (0.0, -2000.0)] {
            c.turn(dx, dy);
            let cam = c.camera();
            assert!((cam.eye.distance(target) - 15.0).abs() < 1e-3);
            let p = cam.project(target, 640, 480).unwrap();
            assert!(
                (p.x - 320.0).abs() < 0.01 && (p.y - 240.0).abs() < 0.01,
                "{p}"
            );
        }
        // Pitch is limited short of straight down (look-at needs a side vector).
        assert!(c.pitch >= -PITCH_LIMIT);
    }

    #[test]
    fn look_at_points_at_the_target_and_mode_switches_keep_the_view() {
        let (eye, target) = (Vec3::new(0.0, 6.0, -10.0), Vec3::new(4.0, 0.0, 12.0));
        let mut c = ViewCamera::look_at(eye, target);
        // The target projects to the image centre (pinhole camera along the view direction).
        let p = c.camera().project(target, 800, 600).unwrap();
        assert!(
            (p.x - 400.0).abs() < 0.05 && (p.y - 300.0).abs() < 0.05,
            "{p}"
        );
        let before = c.camera();
        c.toggle_mode();
        assert_eq!(c.mode, CameraMode::Orbit);
        let after = c.camera();
        assert!(before.eye.distance(after.eye) < 1e-4);
        c.toggle_mode();
        assert!(before.eye.distance(c.camera().eye) < 1e-4);
        // Fly forward by 1 m moves the eye 1 m along the view.
        c.translate(0.0, 0.0, 1.0);
        assert!((c.eye.distance(eye) - 1.0).abs() < 1e-5);
    }
}
