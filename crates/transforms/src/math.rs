//! Rigid-body arithmetic in `f64`: vectors, unit quaternions and poses
//! (a rotation and a translation), with the interpolation tf2 uses.
//!
//! Written out here rather than taken from a linear-algebra crate because
//! the lookups must agree with tf2 (and with an independent reference) to
//! 1e-9: `glam`'s `slerp` switches to a normalised linear blend when two
//! rotations are within about 3.6 degrees, which is off by up to 1e-5 there.
//! [`Quat::slerp`] is the spherical interpolation at every angle, with the
//! angle taken from the relative rotation (`atan2`, exact for small angles).

/// A point or a translation.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Vec3 {
    /// x
    pub x: f64,
    /// y
    pub y: f64,
    /// z
    pub z: f64,
}

impl Vec3 {
    /// The zero vector.
    pub const ZERO: Vec3 = Vec3::new(0.0, 0.0, 0.0);

    /// `(x, y, z)`.
    pub const fn new(x: f64, y: f64, z: f64) -> Self {
        Vec3 { x, y, z }
    }

    fn add(self, o: Vec3) -> Vec3 {
        Vec3::new(self.x + o.x, self.y + o.y, self.z + o.z)
    }

    fn scale(self, s: f64) -> Vec3 {
        Vec3::new(self.x * s, self.y * s, self.z * s)
    }

    fn dot_self(self) -> f64 {
        self.x * self.x + self.y * self.y + self.z * self.z
    }

    fn cross(self, o: Vec3) -> Vec3 {
        Vec3::new(
            self.y * o.z - self.z * o.y,
            self.z * o.x - self.x * o.z,
            self.x * o.y - self.y * o.x,
        )
    }

    /// `self + (other - self) * t`.
    pub fn lerp(self, other: Vec3, t: f64) -> Vec3 {
        Vec3::new(
            self.x + (other.x - self.x) * t,
            self.y + (other.y - self.y) * t,
            self.z + (other.z - self.z) * t,
        )
    }

    /// Whether every component is finite.
    pub fn is_finite(self) -> bool {
        self.x.is_finite() && self.y.is_finite() && self.z.is_finite()
    }
}

/// A rotation as a quaternion `(x, y, z, w)` (`w` the scalar part), in the
/// order ROS and Foxglove messages carry it.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Quat {
    /// x
    pub x: f64,
    /// y
    pub y: f64,
    /// z
    pub z: f64,
    /// w, the scalar part
    pub w: f64,
}

impl Quat {
    /// No rotation.
    pub const IDENTITY: Quat = Quat::new(0.0, 0.0, 0.0, 1.0);

    /// `(x, y, z, w)`.
    pub const fn new(x: f64, y: f64, z: f64, w: f64) -> Self {
        Quat { x, y, z, w }
    }

    fn vector(self) -> Vec3 {
        Vec3::new(self.x, self.y, self.z)
    }

    fn dot(self, o: Quat) -> f64 {
        self.x * o.x + self.y * o.y + self.z * o.z + self.w * o.w
    }

    fn scale(self, s: f64) -> Quat {
        Quat::new(self.x * s, self.y * s, self.z * s, self.w * s)
    }

    fn add(self, o: Quat) -> Quat {
        Quat::new(self.x + o.x, self.y + o.y, self.z + o.z, self.w + o.w)
    }

    /// This rotation scaled to unit length, or `None` when it has no
    /// direction (zero or not finite).
    pub fn normalized(self) -> Option<Quat> {
        let n = self.dot(self).sqrt();
        (n.is_finite() && n > 0.0).then(|| self.scale(1.0 / n))
    }

    /// The inverse of a unit quaternion (its conjugate).
    pub fn conjugate(self) -> Quat {
        Quat::new(-self.x, -self.y, -self.z, self.w)
    }

    /// `v` rotated by this unit quaternion.
    pub fn rotate(self, v: Vec3) -> Vec3 {
        let u = self.vector();
        let t = u.cross(v).scale(2.0);
        v.add(t.scale(self.w)).add(u.cross(t))
    }

    /// The rotation `t` of the way from `self` to `other` along the shorter
    /// arc (`t = 0` is `self`, `t = 1` is `other`), both unit quaternions.
    pub fn slerp(self, other: Quat, t: f64) -> Quat {
        // q and -q are one rotation: go the short way.
        let other = if self.dot(other) < 0.0 {
            other.scale(-1.0)
        } else {
            other
        };
        let relative = self.conjugate() * other;
        let sin_half = relative.vector().dot_self().sqrt();
        let half = sin_half.atan2(relative.w);
        if half == 0.0 {
            return self;
        }
        let s = half.sin();
        self.scale(((1.0 - t) * half).sin() / s)
            .add(other.scale((t * half).sin() / s))
    }

    /// Roll, pitch and yaw in radians (rotations about x, then y, then z of
    /// the fixed frame: tf2's `getRPY`).
    pub fn to_euler(self) -> (f64, f64, f64) {
        let Quat { x, y, z, w } = self;
        let roll = (2.0 * (w * x + y * z)).atan2(1.0 - 2.0 * (x * x + y * y));
        let pitch = (2.0 * (w * y - z * x)).clamp(-1.0, 1.0).asin();
        let yaw = (2.0 * (w * z + x * y)).atan2(1.0 - 2.0 * (y * y + z * z));
        (roll, pitch, yaw)
    }

    /// Whether every component is finite.
    pub fn is_finite(self) -> bool {
        self.x.is_finite() && self.y.is_finite() && self.z.is_finite() && self.w.is_finite()
    }
}

/// `a * b`: `b` applied first, then `a` (the Hamilton product).
impl std::ops::Mul for Quat {
    type Output = Quat;

    fn mul(self, o: Quat) -> Quat {
        Quat::new(
            self.w * o.x + self.x * o.w + self.y * o.z - self.z * o.y,
            self.w * o.y - self.x * o.z + self.y * o.w + self.z * o.x,
            self.w * o.z + self.x * o.y - self.y * o.x + self.z * o.w,
            self.w * o.w - self.x * o.x - self.y * o.y - self.z * o.z,
        )
    }
}

/// Where a frame is in another: `p_parent = rotation * p_child +
/// translation`, as a `geometry_msgs/Transform` states a child frame in its
/// parent.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Pose {
    /// The child frame's origin in the parent frame.
    pub translation: Vec3,
    /// The child frame's axes in the parent frame (a unit quaternion).
    pub rotation: Quat,
}

impl Pose {
    /// The frame itself.
    pub const IDENTITY: Pose = Pose {
        translation: Vec3::ZERO,
        rotation: Quat::IDENTITY,
    };

    /// `self` after `inner`: if `inner` is B in A and `self` is A in P, the
    /// result is B in P.
    pub fn then_in(self, inner: Pose) -> Pose {
        Pose {
            translation: self
                .rotation
                .rotate(inner.translation)
                .add(self.translation),
            rotation: self.rotation * inner.rotation,
        }
    }

    /// The parent in the child: the inverse transform.
    pub fn inverse(self) -> Pose {
        let r = self.rotation.conjugate();
        Pose {
            translation: r.rotate(self.translation).scale(-1.0),
            rotation: r,
        }
    }

    /// A point of the child frame, in the parent frame.
    pub fn apply(self, point: Vec3) -> Vec3 {
        self.rotation.rotate(point).add(self.translation)
    }

    /// The pose `t` of the way from `self` to `other`: translation linear,
    /// rotation spherical (tf2's interpolation between two stamps).
    pub fn interpolate(self, other: Pose, t: f64) -> Pose {
        Pose {
            translation: self.translation.lerp(other.translation, t),
            rotation: self.rotation.slerp(other.rotation, t),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn close(a: f64, b: f64) -> bool {
        (a - b).abs() < 1e-12
    }

    fn about_z(angle: f64) -> Quat {
        Quat::new(0.0, 0.0, (angle / 2.0).sin(), (angle / 2.0).cos())
    }

    #[test]
    fn rotation_and_inverse() {
        let pose = Pose {
            translation: Vec3::new(1.0, 2.0, 3.0),
            rotation: about_z(std::f64::consts::FRAC_PI_2),
        };
        let p = pose.apply(Vec3::new(1.0, 0.0, 0.0));
        assert!(
            close(p.x, 1.0) && close(p.y, 3.0) && close(p.z, 3.0),
            "{p:?}"
        );
        let back = pose.inverse().apply(p);
        assert!(close(back.x, 1.0) && close(back.y, 0.0) && close(back.z, 0.0));
        let id = pose.then_in(pose.inverse());
        assert!(close(id.translation.x, 0.0) && close(id.rotation.w.abs(), 1.0));
    }

    #[test]
    fn slerp_is_spherical_at_small_and_large_angles() {
        for angle in [1e-9, 1e-4, 0.05, 1.0, 3.0] {
            let (a, b) = (about_z(0.3), about_z(0.3 + angle));
            for t in [0.0, 0.25, 0.5, 1.0] {
                let q = a.slerp(b, t);
                let want = about_z(0.3 + angle * t);
                assert!(
                    (q.dot(want).abs() - 1.0).abs() < 1e-15 && close(q.z, want.z),
                    "{angle} {t}: {q:?} vs {want:?}"
                );
            }
        }
        // q and -q: the shorter arc, whichever sign the second has.
        let q = about_z(0.2).slerp(about_z(0.4).scale(-1.0), 0.5);
        assert!(close(q.dot(about_z(0.3)).abs(), 1.0));
    }

    #[test]
    fn euler_angles() {
        let (r, p, y) = about_z(0.7).to_euler();
        assert!(close(r, 0.0) && close(p, 0.0) && close(y, 0.7));
        let half = std::f64::consts::FRAC_PI_4;
        let (r, p, y) = Quat::new(half.sin(), 0.0, 0.0, half.cos()).to_euler();
        assert!(close(r, std::f64::consts::FRAC_PI_2) && close(p, 0.0) && close(y, 0.0));
    }
}
