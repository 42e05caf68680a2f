#!/usr/bin/env python3
"""Independent reference results for sinew's RBF deformation (issue #7).

Computes deformed high-poly positions with scipy's `RBFInterpolator` (degree 1, smoothing 0;
kernels thin_plate_spline, gaussian, multiquadric, inverse_multiquadric, cubic) and the seed's
normalized Gaussian mode (w = phi(eps r) / sum phi(eps r), in numpy) for:

- sphere: fixtures/assets/rbf (162-vertex cage, 10242-vertex icosphere), poses twist, bend,
  bulge;
- torus: a 12x6 torus cage (major radius 2, minor 0.6) driving a 48x20 torus whose vertices lie
  between the cage's, poses twist and wave;
- slab: an anisotropic 10x5x3 jittered grid over [-5, 5] x [-1, 1] x [-0.3, 0.3] driving 1800
  points crowded towards x = -5 (non-uniform density), poses bend and shear;
- capsule: a capsule of radius 20 and length 160 (Fox's scale) centred at (150, 90, -120), far
  from the origin, 13 rings of 10 controls driving 61 rings of 40 vertices, poses bend and bulge.

Every input is rounded to float32 first (what sinew reads), then computed in float64. The
shape parameter of each mesh is 1 / (mean nearest-neighbour distance of its controls).

Writes into this script's directory:
- manifest.json: meshes (input files, epsilon, sampled vertex indices file) and cases (mesh,
  pose, mode, kernel, offset of the case's block in the mesh's expected file);
- <mesh>_low_rest.f32, <mesh>_low_<pose>.f32, <mesh>_high.f32 (generated meshes only; the
  sphere is read from the fixture OBJ files): little-endian float32, x y z per vertex;
- <mesh>_sample.u32: indices of the high vertices stored (all of them, or every k-th);
- <mesh>_expected.f32: for each case of the mesh in manifest order, the deformed positions of
  the sampled vertices (float32 x y z).

Usage: python3 make_reference.py [--obj-dir FOLDER_WITH_sphere_OBJ_FILES]
Requires numpy and scipy (pip install numpy scipy).
"""

import argparse
import json
import os

import numpy as np
import scipy
from scipy.interpolate import RBFInterpolator
from scipy.spatial import cKDTree

HERE = os.path.dirname(os.path.abspath(__file__))
# The sphere's OBJ files: a folder under the repository's fixtures/assets (sinew_fixtures::asset_path).
FIXTURE_DIR = "rbf"
KERNELS = ["thin_plate_spline", "gaussian", "multiquadric", "inverse_multiquadric", "cubic"]
MAX_SAMPLES = 1100


def f32(a):
    """Round to float32 (what the Rust side reads) and compute in float64."""
    return np.asarray(a, dtype=np.float32).astype(np.float64)


def read_obj_vertices(path):
    out = []
    with open(path) as f:
        for line in f:
            parts = line.split()
            if parts and parts[0] == "v":
                out.append([float(x) for x in parts[1:4]])
    return f32(out)


def mean_nn_distance(points):
    d, _ = cKDTree(points).query(points, k=2)
    return float(np.mean(d[:, 1]))


# ---------------------------------------------------------------------------------------------
# Generated meshes.


def torus_points(n_major, n_minor, big_r, small_r, offset_major=0.0, offset_minor=0.0):
    u = (np.arange(n_major) + offset_major) * 2 * np.pi / n_major
    v = (np.arange(n_minor) + offset_minor) * 2 * np.pi / n_minor
    uu, vv = np.meshgrid(u, v, indexing="ij")
    x = (big_r + small_r * np.cos(vv)) * np.cos(uu)
    y = (big_r + small_r * np.cos(vv)) * np.sin(uu)
    z = small_r * np.sin(vv)
    return np.stack([x.ravel(), y.ravel(), z.ravel()], axis=1)


def torus():
    low = f32(torus_points(12, 6, 2.0, 0.6))
    high = f32(torus_points(48, 20, 2.0, 0.6, 0.5, 0.5))

    def twist(p):
        # Rotation about the x axis by an angle proportional to x (+-0.6 rad at the ends).
        a = 0.25 * p[:, 0]
        c, s = np.cos(a), np.sin(a)
        return np.stack([p[:, 0], c * p[:, 1] - s * p[:, 2], s * p[:, 1] + c * p[:, 2]], axis=1)

    def wave(p):
        q = p.copy()
        q[:, 2] += 0.3 * np.sin(1.5 * np.arctan2(p[:, 1], p[:, 0]) * 2)
        q[:, 0] *= 1.0 + 0.1 * p[:, 1]
        return q

    return low, high, {"twist": f32(twist(low)), "wave": f32(wave(low))}


def slab():
    rng = np.random.default_rng(7)
    gx, gy, gz = np.meshgrid(
        np.linspace(-5, 5, 10), np.linspace(-1, 1, 5), np.linspace(-0.3, 0.3, 3), indexing="ij"
    )
    grid = np.stack([gx.ravel(), gy.ravel(), gz.ravel()], axis=1)
    jitter = rng.uniform(-0.15, 0.15, grid.shape) * np.array([1.0, 0.4, 0.08])
    low = f32(grid + jitter)
    # High points crowded towards x = -5: x = -5 + 10 u^2.
    u = rng.uniform(0, 1, 1800)
    high = f32(
        np.stack(
            [-5 + 10 * u**2, rng.uniform(-1, 1, 1800), rng.uniform(-0.3, 0.3, 1800)], axis=1
        )
    )

    def bend(p):
        q = p.copy()
        q[:, 1] += 0.04 * p[:, 0] ** 2
        q[:, 2] += 0.02 * p[:, 0] * p[:, 1]
        return q

    def shear(p):
        q = p.copy()
        q[:, 0] += 0.3 * p[:, 1] + 0.5 * p[:, 2]
        q[:, 2] += 0.1 * np.sin(p[:, 0])
        return q

    return low, high, {"bend": f32(bend(low)), "shear": f32(shear(low))}


CAPSULE_CENTRE = np.array([150.0, 90.0, -120.0])


def capsule_points(n_rings, n_around, radius, half_length, twist):
    """Rings along y over a capsule profile (cylinder of half length `half_length` plus two
    hemispherical caps), parametrised by arc length, plus the two poles."""
    cap = 0.5 * np.pi * radius
    total = 2 * cap + 2 * half_length
    pts = []
    for k in range(1, n_rings + 1):
        s = total * k / (n_rings + 1)
        if s < cap:
            a = s / radius
            y, r = -half_length - radius * np.cos(a), radius * np.sin(a)
        elif s > cap + 2 * half_length:
            a = (s - cap - 2 * half_length) / radius
            y, r = half_length + radius * np.sin(a), radius * np.cos(a)
        else:
            y, r = -half_length + (s - cap), radius
        for j in range(n_around):
            t = 2 * np.pi * (j + twist * (k % 2)) / n_around
            pts.append([r * np.cos(t), y, r * np.sin(t)])
    pts.append([0.0, -half_length - radius, 0.0])
    pts.append([0.0, half_length + radius, 0.0])
    return np.array(pts) + CAPSULE_CENTRE


def capsule():
    low = f32(capsule_points(13, 10, 20.0, 60.0, 0.5))
    high = f32(capsule_points(61, 40, 20.0, 60.0, 0.25))

    def bend(p):
        # The part above the centre rotates about the x axis through the centre, by an angle
        # growing with height (0.6 rad at the top).
        q = p - CAPSULE_CENTRE
        a = 0.6 * np.clip(q[:, 1] / 80.0, 0.0, 1.0) ** 2
        c, s = np.cos(a), np.sin(a)
        out = np.stack([q[:, 0], c * q[:, 1] - s * q[:, 2], s * q[:, 1] + c * q[:, 2]], axis=1)
        return out + CAPSULE_CENTRE

    def bulge(p):
        q = p - CAPSULE_CENTRE
        radial = np.stack([q[:, 0], np.zeros(len(q)), q[:, 2]], axis=1)
        norm = np.maximum(np.linalg.norm(radial, axis=1, keepdims=True), 1e-9)
        amp = 8.0 * np.exp(-((q[:, 1] + 20.0) / 25.0) ** 2)[:, None]
        return p + amp * radial / norm

    return low, high, {"bend": f32(bend(low)), "bulge": f32(bulge(low))}


# ---------------------------------------------------------------------------------------------
# References.


def normalized_gaussian(low_rest, high, disp, eps):
    d2 = ((high[:, None, :] - low_rest[None, :, :]) ** 2).sum(axis=2)
    logw = -(eps**2) * d2
    logw -= logw.max(axis=1, keepdims=True)  # scale-free: avoids underflow far from the cage
    w = np.exp(logw)
    w /= w.sum(axis=1, keepdims=True)
    return high + w @ disp


def interpolate(low_rest, high, disp, kernel, eps):
    rbf = RBFInterpolator(low_rest, disp, kernel=kernel, epsilon=eps, degree=1, smoothing=0.0)
    return high + rbf(high)


def write(name, array, dtype):
    path = os.path.join(HERE, name)
    np.asarray(array, dtype=dtype).astype(dtype.newbyteorder("<")).tofile(path)
    return name


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument(
        "--obj-dir",
        default=os.path.join(HERE, "..", "..", "..", "..", "fixtures", "assets", FIXTURE_DIR),
        help="folder with sphere_*.obj (default: the repository's fixtures/assets/rbf)",
    )
    args = ap.parse_args()

    meshes = []
    sphere_low = read_obj_vertices(os.path.join(args.obj_dir, "sphere_low_rest.obj"))
    sphere_high = read_obj_vertices(os.path.join(args.obj_dir, "sphere_high.obj"))
    sphere_poses = {
        p: read_obj_vertices(os.path.join(args.obj_dir, f"sphere_low_{p}.obj"))
        for p in ["twist", "bend", "bulge"]
    }
    meshes.append(("sphere", sphere_low, sphere_high, sphere_poses, True))
    for name, make in [("torus", torus), ("slab", slab), ("capsule", capsule)]:
        low, high, poses = make()
        meshes.append((name, low, high, poses, False))

    manifest = {
        "generator": "make_reference.py",
        "numpy": np.__version__,
        "scipy": scipy.__version__,
        "meshes": [],
        "cases": [],
    }
    for name, low, high, poses, from_obj in meshes:
        eps = 1.0 / mean_nn_distance(low)
        stride = max(1, -(-len(high) // MAX_SAMPLES))
        sample = np.arange(0, len(high), stride, dtype=np.uint32)
        entry = {
            "name": name,
            "epsilon": eps,
            "controls": len(low),
            "vertices": len(high),
            "sample": write(f"{name}_sample.u32", sample, np.dtype(np.uint32)),
            "expected": f"{name}_expected.f32",
            "poses": list(poses),
        }
        if from_obj:
            entry["fixture_dir"] = FIXTURE_DIR
            entry["low_rest"] = "sphere_low_rest.obj"
            entry["high"] = "sphere_high.obj"
            entry["posed"] = {p: f"sphere_low_{p}.obj" for p in poses}
        else:
            entry["low_rest"] = write(f"{name}_low_rest.f32", low, np.dtype(np.float32))
            entry["high"] = write(f"{name}_high.f32", high, np.dtype(np.float32))
            entry["posed"] = {
                p: write(f"{name}_low_{p}.f32", v, np.dtype(np.float32)) for p, v in poses.items()
            }
        blocks = []
        for pose, posed in poses.items():
            disp = posed - low
            for mode, kernel in [("normalized", "gaussian")] + [("interpolate", k) for k in KERNELS]:
                if mode == "normalized":
                    out = normalized_gaussian(low, high, disp, eps)
                else:
                    out = interpolate(low, high, disp, kernel, eps)
                manifest["cases"].append(
                    {
                        "mesh": name,
                        "pose": pose,
                        "mode": mode,
                        "kernel": kernel,
                        "block": len(blocks),
                        "max_displacement": float(np.abs(out - high).max()),
                    }
                )
                blocks.append(out[sample])
        write(entry["expected"], np.concatenate(blocks), np.dtype(np.float32))
        manifest["meshes"].append(entry)
        print(f"{name}: {len(low)} controls, {len(high)} vertices, eps {eps:.6g}, "
              f"{len(sample)} sampled, {len(blocks)} cases")
    with open(os.path.join(HERE, "manifest.json"), "w") as f:
        json.dump(manifest, f, indent=1)
        f.write("\n")


if __name__ == "__main__":
    main()
