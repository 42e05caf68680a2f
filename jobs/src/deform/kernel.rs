//! Radial kernels, evaluated at `r = ε · distance` as scipy's `RBFInterpolator` does.

use std::fmt;
use std::str::FromStr;

use super::DeformError;

/// A radial basis function `φ(r)`, always evaluated at `r = ε · |x − y|`.
///
/// The formulas are scipy's (`scipy.interpolate.RBFInterpolator`), plus the Wendland C2 kernel
/// (support radius `1/ε`) which scipy does not have.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Kernel {
    /// `exp(−r²)`.
    Gaussian,
    /// `r² log r` (0 at r = 0).
    ThinPlateSpline,
    /// `−sqrt(1 + r²)`.
    Multiquadric,
    /// `1 / sqrt(1 + r²)`.
    InverseMultiquadric,
    /// `r³`.
    Cubic,
    /// Wendland C2: `(1 − r)⁴ (4r + 1)` for `r < 1`, else 0. Positive definite in 3D, compact
    /// support of radius `1/ε` in distance, so its interpolation system is sparse.
    Wendland,
}

impl Kernel {
    /// Every kernel, for iteration in tests and tools.
    pub const ALL: [Kernel; 6] = [
        Kernel::Gaussian,
        Kernel::ThinPlateSpline,
        Kernel::Multiquadric,
        Kernel::InverseMultiquadric,
        Kernel::Cubic,
        Kernel::Wendland,
    ];

    /// `φ(r)` with `r = ε · distance` already applied.
    #[inline]
    pub fn eval(self, r: f64) -> f64 {
        match self {
            Kernel::Gaussian => (-r * r).exp(),
            Kernel::ThinPlateSpline => {
                if r == 0.0 {
                    0.0
                } else {
                    r * r * r.ln()
                }
            }
            Kernel::Multiquadric => -(1.0 + r * r).sqrt(),
            Kernel::InverseMultiquadric => 1.0 / (1.0 + r * r).sqrt(),
            Kernel::Cubic => r * r * r,
            Kernel::Wendland => {
                if r >= 1.0 {
                    0.0
                } else {
                    let t = 1.0 - r;
                    let t2 = t * t;
                    t2 * t2 * (4.0 * r + 1.0)
                }
            }
        }
    }

    /// The scipy name (`"thin_plate_spline"`, …; `"wendland"` for [`Kernel::Wendland`]).
    pub fn name(self) -> &'static str {
        match self {
            Kernel::Gaussian => "gaussian",
            Kernel::ThinPlateSpline => "thin_plate_spline",
            Kernel::Multiquadric => "multiquadric",
            Kernel::InverseMultiquadric => "inverse_multiquadric",
            Kernel::Cubic => "cubic",
            Kernel::Wendland => "wendland",
        }
    }

    /// True for kernels that are positive everywhere they are non-zero, so that the seed's
    /// normalisation `φ / Σφ` makes sense (Gaussian, inverse multiquadric, Wendland).
    pub fn is_positive(self) -> bool {
        matches!(
            self,
            Kernel::Gaussian | Kernel::InverseMultiquadric | Kernel::Wendland
        )
    }

    /// True for compactly supported kernels (support radius `1/ε` in distance).
    pub fn is_compact(self) -> bool {
        matches!(self, Kernel::Wendland)
    }
}

impl fmt::Display for Kernel {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl FromStr for Kernel {
    type Err = DeformError;

    /// Parses scipy's names (and `"wendland"`, `"tps"`, `"imq"`, `"mq"`), case-insensitively.
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let lower = s.trim().to_ascii_lowercase();
        Ok(match lower.as_str() {
            "gaussian" => Kernel::Gaussian,
            "thin_plate_spline" | "tps" => Kernel::ThinPlateSpline,
            "multiquadric" | "mq" => Kernel::Multiquadric,
            "inverse_multiquadric" | "imq" => Kernel::InverseMultiquadric,
            "cubic" => Kernel::Cubic,
            "wendland" | "wendland_c2" => Kernel::Wendland,
            _ => {
                return Err(DeformError::InvalidOption {
                    reason: format!(
                        "unknown kernel '{s}' (expected gaussian, thin_plate_spline, multiquadric, \
                         inverse_multiquadric, cubic or wendland)"
                    ),
                });
            }
        })
    }
}
