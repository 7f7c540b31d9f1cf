//! Small vector and matrix values (`Vec2/3/4`, `Mat2/3/4` over the scalar dtypes), flattened
//! while tracing: a [`Vector`] is `N` scalar values and a [`Matrix`] `R × C` of them, so the IR
//! and every backend see only scalars.
//!
//! **Memory layout** (every backend alike): packed scalars with no padding. Vector `i` of a
//! [`VectorArray<T, N>`] is elements `i*N .. i*N+N` of the underlying array (a `Vec3<f32>` takes
//! 12 bytes, not 16); matrix `i` of a [`MatrixArray<T, R, C>`] is elements `i*R*C ..`, row-major.
//! Host data is a flat `[T]` in the same order.
//!
//! **Atomics** fan out per component (seed 003): each component is its own atomic on its own
//! element, in component order, with no all-or-nothing guarantee: another thread may see some
//! components updated and others not. They return the old values.
//!
//! ```
//! use qd::prelude::*;
//! use qd::simt::vector::{Mat2, Vec2, VectorArray};
//!
//! // out[i] = m * p[i] + p[i] for 2-D points, packed as [x0, y0, x1, y1, ...].
//! let k = Kernel::range("rotate", 64, |k| {
//!     let points = VectorArray::<f32, 2>::new(k.array::<f32>("points"));
//!     let out = VectorArray::<f32, 2>::new(k.array::<f32>("out"));
//!     k.parallel_for(0, points.len(), |i| {
//!         let m = Mat2::from_rows([[0.0f32, -1.0], [1.0, 0.0]]);
//!         let p: Vec2<f32> = points.get(i);
//!         out.set(i, m * p + p);
//!     });
//! });
//! # k.trace(&qd::target::Target::cpu(32)).unwrap();
//! ```

use crate::simt::atomic;
use crate::simt::block;
use crate::trace::{select, trace_error, Array, Elem, IntoVal, Num, Scalar, Signed, Val};
use std::ops;

/// `N` values of `T`, component-wise.
pub struct Vector<T, const N: usize>(pub [Val<T>; N]);

/// Two components.
pub type Vec2<T> = Vector<T, 2>;
/// Three components.
pub type Vec3<T> = Vector<T, 3>;
/// Four components.
pub type Vec4<T> = Vector<T, 4>;

impl<T, const N: usize> Clone for Vector<T, N> {
    fn clone(&self) -> Self {
        *self
    }
}
impl<T, const N: usize> Copy for Vector<T, N> {}

impl<T: Scalar, const N: usize> Vector<T, N> {
    /// A vector of these components (values or plain constants).
    ///
    /// ```
    /// use qd::prelude::*;
    /// use qd::simt::vector::{Vec3, VectorArray};
    /// let k = Kernel::range("offset", 32, |k| {
    ///     let p = VectorArray::<f32, 3>::new(k.array::<f32>("p"));
    ///     k.parallel_for(0, p.len(), |i| p.set(i, p.get(i) + Vec3::new([1.0f32, 2.0, 3.0])));
    /// });
    /// let d = Device::cpu();
    /// let p = d.array_from(&[0.0f32, 0.0, 0.0, 10.0, 10.0, 10.0]).unwrap();
    /// d.launch(&k, &[p.arg()]).unwrap();
    /// assert_eq!(p.to_vec().unwrap(), [1.0, 2.0, 3.0, 11.0, 12.0, 13.0]);
    /// ```
    #[track_caller]
    pub fn new<I: IntoVal<T>>(components: [I; N]) -> Self {
        Vector(components.map(IntoVal::into_val))
    }

    /// Every component `x`.
    ///
    /// ```
    /// use qd::prelude::*;
    /// use qd::simt::vector::{Vec4, VectorArray};
    /// let k = Kernel::range("fill", 32, |k| {
    ///     let v = VectorArray::<i32, 4>::new(k.array::<i32>("v"));
    ///     k.parallel_for(0, v.len(), |i| v.set(i, Vec4::splat(i)));
    /// });
    /// let d = Device::cpu();
    /// let v = d.zeros::<i32>(8).unwrap();
    /// d.launch(&k, &[v.arg()]).unwrap();
    /// assert_eq!(v.to_vec().unwrap(), [0, 0, 0, 0, 1, 1, 1, 1]);
    /// ```
    #[track_caller]
    pub fn splat(x: impl IntoVal<T>) -> Self {
        let x = x.into_val();
        Vector([x; N])
    }

    /// The components.
    ///
    /// ```
    /// use qd::prelude::*;
    /// use qd::simt::vector::VectorArray;
    /// // The sum of each vector's components.
    /// let k = Kernel::range("sum", 32, |k| {
    ///     let v = VectorArray::<i32, 3>::new(k.array::<i32>("v"));
    ///     let out = k.array::<i32>("out");
    ///     k.parallel_for(0, v.len(), |i| {
    ///         let [x, y, z] = v.get(i).components();
    ///         out.set(i, x + y + z);
    ///     });
    /// });
    /// let d = Device::cpu();
    /// let v = d.array_from(&[1i32, 2, 3, 4, 5, 6]).unwrap();
    /// let out = d.zeros::<i32>(2).unwrap();
    /// d.launch(&k, &[v.arg(), out.arg()]).unwrap();
    /// assert_eq!(out.to_vec().unwrap(), [6, 15]);
    /// ```
    pub fn components(self) -> [Val<T>; N] {
        self.0
    }

    /// Component `i` chosen at run time (a chain of selects; an index outside `0..N` gives the
    /// last component).
    ///
    /// ```
    /// use qd::prelude::*;
    /// use qd::simt::vector::VectorArray;
    /// // A component picked at run time.
    /// let k = Kernel::range("pick", 32, |k| {
    ///     let v = VectorArray::<f32, 4>::new(k.array::<f32>("v"));
    ///     let which = k.array::<i32>("which");
    ///     let out = k.array::<f32>("out");
    ///     k.parallel_for(0, v.len(), |i| out.set(i, v.get(i).get(which.get(i))));
    /// });
    /// let d = Device::cpu();
    /// let v = d.array_from(&[1.0f32, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0]).unwrap();
    /// let which = d.array_from(&[3i32, 0]).unwrap();
    /// let out = d.zeros::<f32>(2).unwrap();
    /// d.launch(&k, &[v.arg(), which.arg(), out.arg()]).unwrap();
    /// assert_eq!(out.to_vec().unwrap(), [4.0, 5.0]);
    /// ```
    #[track_caller]
    pub fn get(self, i: impl IntoVal<i32>) -> Val<T> {
        let i = i.into_val();
        let mut r = self.0[N - 1];
        for c in (0..N - 1).rev() {
            r = select(i.eq(c as i32), self.0[c], r);
        }
        r
    }

    /// Applies `f` to every component.
    ///
    /// ```
    /// use qd::prelude::*;
    /// use qd::simt::vector::VectorArray;
    /// let k = Kernel::range("sqrt", 32, |k| {
    ///     let v = VectorArray::<f32, 2>::new(k.array::<f32>("v"));
    ///     k.parallel_for(0, v.len(), |i| v.set(i, v.get(i).map(|x| x.sqrt())));
    /// });
    /// let d = Device::cpu();
    /// let v = d.array_from(&[4.0f32, 9.0]).unwrap();
    /// d.launch(&k, &[v.arg()]).unwrap();
    /// assert_eq!(v.to_vec().unwrap(), [2.0, 3.0]);
    /// ```
    pub fn map<U>(self, f: impl FnMut(Val<T>) -> Val<U>) -> Vector<U, N> {
        Vector(self.0.map(f))
    }

    /// Combines two vectors component by component.
    ///
    /// ```
    /// use qd::prelude::*;
    /// use qd::simt::vector::VectorArray;
    /// // Component-wise "is a below b", as 0/1.
    /// let k = Kernel::range("below", 32, |k| {
    ///     let a = VectorArray::<i32, 3>::new(k.array::<i32>("a"));
    ///     let b = VectorArray::<i32, 3>::new(k.array::<i32>("b"));
    ///     let out = VectorArray::<i32, 3>::new(k.array::<i32>("out"));
    ///     k.parallel_for(0, a.len(), |i| out.set(i, a.get(i).zip_with(b.get(i), |x, y| x.lt(y).to_i32())));
    /// });
    /// let d = Device::cpu();
    /// let a = d.array_from(&[1i32, 5, 3]).unwrap();
    /// let b = d.array_from(&[2i32, 4, 3]).unwrap();
    /// let out = d.zeros::<i32>(3).unwrap();
    /// d.launch(&k, &[a.arg(), b.arg(), out.arg()]).unwrap();
    /// assert_eq!(out.to_vec().unwrap(), [1, 0, 0]);
    /// ```
    pub fn zip_with<U>(self, other: Self, mut f: impl FnMut(Val<T>, Val<T>) -> Val<U>) -> Vector<U, N> {
        Vector(std::array::from_fn(|c| f(self.0[c], other.0[c])))
    }
}

impl<T: Num, const N: usize> Vector<T, N> {
    /// The dot product.
    ///
    /// ```
    /// use qd::prelude::*;
    /// use qd::simt::vector::VectorArray;
    /// let k = Kernel::range("dot", 32, |k| {
    ///     let a = VectorArray::<f64, 3>::new(k.array::<f64>("a"));
    ///     let out = k.array::<f64>("out");
    ///     k.parallel_for(0, a.len(), |i| out.set(i, a.get(i).dot(a.get(i))));
    /// });
    /// let d = Device::cpu();
    /// let a = d.array_from(&[1.0f64, 2.0, 2.0]).unwrap();
    /// let out = d.zeros::<f64>(1).unwrap();
    /// d.launch(&k, &[a.arg(), out.arg()]).unwrap();
    /// assert_eq!(out.to_vec().unwrap(), [9.0]);
    /// ```
    #[track_caller]
    pub fn dot(self, other: Self) -> Val<T> {
        let mut acc = self.0[0] * other.0[0];
        for c in 1..N {
            acc += self.0[c] * other.0[c];
        }
        acc
    }

    /// Component-wise minimum.
    ///
    /// ```
    /// use qd::prelude::*;
    /// use qd::simt::vector::{Vec2, VectorArray};
    /// let k = Kernel::range("clamp_hi", 32, |k| {
    ///     let v = VectorArray::<f32, 2>::new(k.array::<f32>("v"));
    ///     k.parallel_for(0, v.len(), |i| v.set(i, v.get(i).min(Vec2::splat(1.0f32))));
    /// });
    /// let d = Device::cpu();
    /// let v = d.array_from(&[0.5f32, 3.0]).unwrap();
    /// d.launch(&k, &[v.arg()]).unwrap();
    /// assert_eq!(v.to_vec().unwrap(), [0.5, 1.0]);
    /// ```
    #[track_caller]
    pub fn min(self, other: Self) -> Self {
        self.zip_with(other, Val::min)
    }

    /// Component-wise maximum.
    ///
    /// ```
    /// use qd::prelude::*;
    /// use qd::simt::vector::{Vec2, VectorArray};
    /// let k = Kernel::range("clamp_lo", 32, |k| {
    ///     let v = VectorArray::<i32, 2>::new(k.array::<i32>("v"));
    ///     k.parallel_for(0, v.len(), |i| v.set(i, v.get(i).max(Vec2::new([0, 10]))));
    /// });
    /// let d = Device::cpu();
    /// let v = d.array_from(&[-5i32, 3]).unwrap();
    /// d.launch(&k, &[v.arg()]).unwrap();
    /// assert_eq!(v.to_vec().unwrap(), [0, 10]);
    /// ```
    #[track_caller]
    pub fn max(self, other: Self) -> Self {
        self.zip_with(other, Val::max)
    }
}

impl<T, const N: usize> ops::Index<usize> for Vector<T, N> {
    type Output = Val<T>;
    fn index(&self, i: usize) -> &Val<T> {
        &self.0[i]
    }
}

impl<T, const N: usize> ops::IndexMut<usize> for Vector<T, N> {
    fn index_mut(&mut self, i: usize) -> &mut Val<T> {
        &mut self.0[i]
    }
}

/// Element-wise `vector op vector` and `vector op scalar`.
macro_rules! elementwise {
    ($trait:ident, $method:ident) => {
        impl<T: Num, const N: usize> ops::$trait for Vector<T, N> {
            type Output = Vector<T, N>;
            #[track_caller]
            fn $method(self, rhs: Self) -> Self {
                Vector(std::array::from_fn(|c| ops::$trait::$method(self.0[c], rhs.0[c])))
            }
        }
        impl<T: Num, const N: usize> ops::$trait<Val<T>> for Vector<T, N> {
            type Output = Vector<T, N>;
            #[track_caller]
            fn $method(self, rhs: Val<T>) -> Self {
                Vector(self.0.map(|x| ops::$trait::$method(x, rhs)))
            }
        }
        impl<T: Num, const R: usize, const C: usize> ops::$trait for Matrix<T, R, C> {
            type Output = Matrix<T, R, C>;
            #[track_caller]
            fn $method(self, rhs: Self) -> Self {
                Matrix(std::array::from_fn(|r| ops::$trait::$method(Vector(self.0[r]), Vector(rhs.0[r])).0))
            }
        }
        impl<T: Num, const R: usize, const C: usize> ops::$trait<Val<T>> for Matrix<T, R, C> {
            type Output = Matrix<T, R, C>;
            #[track_caller]
            fn $method(self, rhs: Val<T>) -> Self {
                Matrix(self.0.map(|row| ops::$trait::$method(Vector(row), rhs).0))
            }
        }
    };
}
elementwise!(Add, add);
elementwise!(Sub, sub);
elementwise!(Div, div);

// `*` is element-wise for vectors and by a scalar; for matrices it is the matrix product.
impl<T: Num, const N: usize> ops::Mul for Vector<T, N> {
    type Output = Vector<T, N>;
    #[track_caller]
    fn mul(self, rhs: Self) -> Self {
        self.zip_with(rhs, |a, b| a * b)
    }
}
impl<T: Num, const N: usize> ops::Mul<Val<T>> for Vector<T, N> {
    type Output = Vector<T, N>;
    #[track_caller]
    fn mul(self, rhs: Val<T>) -> Self {
        self.map(|x| x * rhs)
    }
}

impl<T: Signed, const N: usize> ops::Neg for Vector<T, N> {
    type Output = Vector<T, N>;
    #[track_caller]
    fn neg(self) -> Self {
        self.map(|x| -x)
    }
}

/// `R × C` values of `T`, row-major: `m[r][c]`.
pub struct Matrix<T, const R: usize, const C: usize>(pub [[Val<T>; C]; R]);

/// 2 × 2.
pub type Mat2<T> = Matrix<T, 2, 2>;
/// 3 × 3.
pub type Mat3<T> = Matrix<T, 3, 3>;
/// 4 × 4.
pub type Mat4<T> = Matrix<T, 4, 4>;

impl<T, const R: usize, const C: usize> Clone for Matrix<T, R, C> {
    fn clone(&self) -> Self {
        *self
    }
}
impl<T, const R: usize, const C: usize> Copy for Matrix<T, R, C> {}

impl<T: Scalar, const R: usize, const C: usize> Matrix<T, R, C> {
    /// A matrix from its rows (values or plain constants).
    ///
    /// ```
    /// use qd::prelude::*;
    /// use qd::simt::vector::{Mat2, VectorArray};
    /// // Scale x by 2 and y by 3.
    /// let k = Kernel::range("scale", 32, |k| {
    ///     let p = VectorArray::<f32, 2>::new(k.array::<f32>("p"));
    ///     k.parallel_for(0, p.len(), |i| p.set(i, Mat2::from_rows([[2.0f32, 0.0], [0.0, 3.0]]) * p.get(i)));
    /// });
    /// let d = Device::cpu();
    /// let p = d.array_from(&[1.0f32, 1.0]).unwrap();
    /// d.launch(&k, &[p.arg()]).unwrap();
    /// assert_eq!(p.to_vec().unwrap(), [2.0, 3.0]);
    /// ```
    #[track_caller]
    pub fn from_rows<I: IntoVal<T>>(rows: [[I; C]; R]) -> Self {
        Matrix(rows.map(|row| row.map(IntoVal::into_val)))
    }

    /// Row `r`.
    ///
    /// ```
    /// use qd::prelude::*;
    /// use qd::simt::vector::{MatrixArray, VectorArray};
    /// let k = Kernel::range("rows", 32, |k| {
    ///     let m = MatrixArray::<i32, 2, 3>::new(k.array::<i32>("m"));
    ///     let out = VectorArray::<i32, 3>::new(k.array::<i32>("out"));
    ///     k.parallel_for(0, m.len(), |i| out.set(i, m.get(i).row(1)));
    /// });
    /// let d = Device::cpu();
    /// let m = d.array_from(&[1i32, 2, 3, 4, 5, 6]).unwrap();
    /// let out = d.zeros::<i32>(3).unwrap();
    /// d.launch(&k, &[m.arg(), out.arg()]).unwrap();
    /// assert_eq!(out.to_vec().unwrap(), [4, 5, 6]);
    /// ```
    pub fn row(self, r: usize) -> Vector<T, C> {
        Vector(self.0[r])
    }

    /// Column `c`.
    ///
    /// ```
    /// use qd::prelude::*;
    /// use qd::simt::vector::{MatrixArray, VectorArray};
    /// let k = Kernel::range("cols", 32, |k| {
    ///     let m = MatrixArray::<i32, 2, 3>::new(k.array::<i32>("m"));
    ///     let out = VectorArray::<i32, 2>::new(k.array::<i32>("out"));
    ///     k.parallel_for(0, m.len(), |i| out.set(i, m.get(i).column(2)));
    /// });
    /// let d = Device::cpu();
    /// let m = d.array_from(&[1i32, 2, 3, 4, 5, 6]).unwrap();
    /// let out = d.zeros::<i32>(2).unwrap();
    /// d.launch(&k, &[m.arg(), out.arg()]).unwrap();
    /// assert_eq!(out.to_vec().unwrap(), [3, 6]);
    /// ```
    pub fn column(self, c: usize) -> Vector<T, R> {
        Vector(std::array::from_fn(|r| self.0[r][c]))
    }

    /// The transpose.
    ///
    /// ```
    /// use qd::prelude::*;
    /// use qd::simt::vector::MatrixArray;
    /// let k = Kernel::range("t", 32, |k| {
    ///     let m = MatrixArray::<i32, 2, 3>::new(k.array::<i32>("m"));
    ///     let out = MatrixArray::<i32, 3, 2>::new(k.array::<i32>("out"));
    ///     k.parallel_for(0, m.len(), |i| out.set(i, m.get(i).transpose()));
    /// });
    /// let d = Device::cpu();
    /// let m = d.array_from(&[1i32, 2, 3, 4, 5, 6]).unwrap();
    /// let out = d.zeros::<i32>(6).unwrap();
    /// d.launch(&k, &[m.arg(), out.arg()]).unwrap();
    /// assert_eq!(out.to_vec().unwrap(), [1, 4, 2, 5, 3, 6]);
    /// ```
    pub fn transpose(self) -> Matrix<T, C, R> {
        Matrix(std::array::from_fn(|c| std::array::from_fn(|r| self.0[r][c])))
    }

    /// The elements row after row (the memory layout).
    fn flat(self) -> Vec<Val<T>> {
        self.0.iter().flatten().copied().collect()
    }

    fn from_flat(v: &[Val<T>]) -> Self {
        Matrix(std::array::from_fn(|r| std::array::from_fn(|c| v[r * C + c])))
    }
}

impl<T: Num, const R: usize, const C: usize> Matrix<T, R, C> {
    /// Every element `x` on the diagonal and zero elsewhere (the identity for `x = 1`).
    ///
    /// ```
    /// use qd::prelude::*;
    /// use qd::simt::vector::{Mat3, MatrixArray};
    /// let k = Kernel::range("identity", 32, |k| {
    ///     let m = MatrixArray::<f32, 3, 3>::new(k.array::<f32>("m"));
    ///     k.parallel_for(0, m.len(), |i| m.set(i, Mat3::diagonal(1.0f32)));
    /// });
    /// let d = Device::cpu();
    /// let m = d.zeros::<f32>(9).unwrap();
    /// d.launch(&k, &[m.arg()]).unwrap();
    /// assert_eq!(m.to_vec().unwrap(), [1.0, 0.0, 0.0, 0.0, 1.0, 0.0, 0.0, 0.0, 1.0]);
    /// ```
    #[track_caller]
    pub fn diagonal(x: impl IntoVal<T>) -> Self {
        let (x, zero) = (x.into_val(), Val::constant(T::ZERO));
        Matrix(std::array::from_fn(|r| std::array::from_fn(|c| if r == c { x } else { zero })))
    }
}

impl<T, const R: usize, const C: usize> ops::Index<usize> for Matrix<T, R, C> {
    type Output = [Val<T>; C];
    fn index(&self, r: usize) -> &[Val<T>; C] {
        &self.0[r]
    }
}

impl<T, const R: usize, const C: usize> ops::IndexMut<usize> for Matrix<T, R, C> {
    fn index_mut(&mut self, r: usize) -> &mut [Val<T>; C] {
        &mut self.0[r]
    }
}

/// Matrix × vector.
impl<T: Num, const R: usize, const C: usize> ops::Mul<Vector<T, C>> for Matrix<T, R, C> {
    type Output = Vector<T, R>;
    #[track_caller]
    fn mul(self, v: Vector<T, C>) -> Vector<T, R> {
        Vector(std::array::from_fn(|r| self.row(r).dot(v)))
    }
}

/// Matrix × matrix.
impl<T: Num, const R: usize, const K: usize, const C: usize> ops::Mul<Matrix<T, K, C>> for Matrix<T, R, K> {
    type Output = Matrix<T, R, C>;
    #[track_caller]
    fn mul(self, m: Matrix<T, K, C>) -> Matrix<T, R, C> {
        Matrix(std::array::from_fn(|r| std::array::from_fn(|c| self.row(r).dot(m.column(c)))))
    }
}

/// Matrix × scalar.
impl<T: Num, const R: usize, const C: usize> ops::Mul<Val<T>> for Matrix<T, R, C> {
    type Output = Matrix<T, R, C>;
    #[track_caller]
    fn mul(self, s: Val<T>) -> Self {
        Matrix(self.0.map(|row| row.map(|x| x * s)))
    }
}

/// The scalars of `len` packed values of `per` scalars each (an error while tracing when that
/// does not fit a shared array's `u32` length).
#[track_caller]
fn scalars(op: &str, len: u32, per: usize) -> u32 {
    match u32::try_from(per).ok().and_then(|p| len.checked_mul(p)) {
        Some(n) => n,
        None => {
            trace_error(op, format!("{len} values of {per} scalars each are more than {} scalars", u32::MAX));
            0
        }
    }
}

/// An array of `N`-component vectors over a scalar array, packed (see the module's layout).
pub struct VectorArray<T, const N: usize> {
    scalars: Array<T>,
}

impl<T, const N: usize> Clone for VectorArray<T, N> {
    fn clone(&self) -> Self {
        *self
    }
}
impl<T, const N: usize> Copy for VectorArray<T, N> {}

impl<T: Scalar, const N: usize> VectorArray<T, N> {
    /// Views `scalars` (a parameter, shared or per-thread array) as packed vectors.
    ///
    /// ```
    /// use qd::prelude::*;
    /// use qd::simt::vector::VectorArray;
    /// // Vector i is elements 2i and 2i + 1 of the scalar array: no padding.
    /// let k = Kernel::range("swap_xy", 32, |k| {
    ///     let p = VectorArray::<u32, 2>::new(k.array::<u32>("p"));
    ///     k.parallel_for(0, p.len(), |i| {
    ///         let [x, y] = p.get(i).components();
    ///         p.set(i, qd::simt::vector::Vec2::new([y, x]));
    ///     });
    /// });
    /// let d = Device::cpu();
    /// let p = d.array_from(&[1u32, 2, 3, 4]).unwrap();
    /// d.launch(&k, &[p.arg()]).unwrap();
    /// assert_eq!(p.to_vec().unwrap(), [2, 1, 4, 3]);
    /// ```
    pub fn new(scalars: Array<T>) -> Self {
        VectorArray { scalars }
    }

    /// A block-shared array of `len` vectors (`len * N` scalars).
    ///
    /// ```
    /// use qd::prelude::*;
    /// use qd::simt::vector::VectorArray;
    /// // Stage a block's vectors in shared memory, then read a neighbour's.
    /// let k = Kernel::explicit("neighbour", 32, |k| {
    ///     let v = VectorArray::<f32, 3>::new(k.array::<f32>("v"));
    ///     let s = VectorArray::<f32, 3>::shared(32);
    ///     let t = block::thread_idx();
    ///     s.set(t, v.get(t));
    ///     block::sync();
    ///     v.set(t, s.get((t + 1) % 32));
    /// });
    /// let d = Device::cpu();
    /// let v = d.array_from(&(0..96).map(|x| x as f32).collect::<Vec<_>>()).unwrap();
    /// d.launch_grid(&k, 1, &[v.arg()]).unwrap();
    /// assert_eq!(v.to_vec().unwrap()[..3], [3.0, 4.0, 5.0]);
    /// ```
    #[track_caller]
    pub fn shared(len: u32) -> Self {
        VectorArray::new(block::shared_array::<T>(scalars("VectorArray::shared", len, N)))
    }

    /// The underlying scalars.
    ///
    /// ```
    /// use qd::prelude::*;
    /// use qd::simt::vector::VectorArray;
    /// let k = Kernel::range("flat", 32, |k| {
    ///     let v = VectorArray::<i32, 2>::new(k.array::<i32>("v"));
    ///     k.parallel_for(0, v.scalars().len(), |j| v.scalars().set(j, j)); // one thread per scalar
    /// });
    /// let d = Device::cpu();
    /// let v = d.zeros::<i32>(4).unwrap();
    /// d.launch(&k, &[v.arg()]).unwrap();
    /// assert_eq!(v.to_vec().unwrap(), [0, 1, 2, 3]);
    /// ```
    pub fn scalars(self) -> Array<T> {
        self.scalars
    }

    /// Whole vectors in the array (`len / N` of the scalars).
    ///
    /// ```
    /// use qd::prelude::*;
    /// use qd::simt::vector::VectorArray;
    /// let k = Kernel::range("count", 32, |k| {
    ///     let v = VectorArray::<f32, 3>::new(k.array::<f32>("v"));
    ///     let n = k.array::<i32>("n");
    ///     k.parallel_for(0, 1, |_| n.set(0, v.len())); // whole vectors: 7 scalars hold 2
    /// });
    /// let d = Device::cpu();
    /// let (v, n) = (d.zeros::<f32>(7).unwrap(), d.zeros::<i32>(1).unwrap());
    /// d.launch(&k, &[v.arg(), n.arg()]).unwrap();
    /// assert_eq!(n.to_vec().unwrap(), [2]);
    /// ```
    #[track_caller]
    pub fn len(self) -> Val<i32> {
        self.scalars.len() / N as i32
    }

    /// True when the array holds no whole vector.
    ///
    /// ```
    /// use qd::prelude::*;
    /// use qd::simt::vector::VectorArray;
    /// let k = Kernel::range("empty", 32, |k| {
    ///     let v = VectorArray::<f32, 4>::new(k.array::<f32>("v"));
    ///     let out = k.array::<i32>("out");
    ///     k.parallel_for(0, 1, |_| out.set(0, v.is_empty().to_i32()));
    /// });
    /// let d = Device::cpu();
    /// let (v, out) = (d.zeros::<f32>(3).unwrap(), d.zeros::<i32>(1).unwrap());
    /// d.launch(&k, &[v.arg(), out.arg()]).unwrap();
    /// assert_eq!(out.to_vec().unwrap(), [1]); // 3 scalars: no whole Vec4
    /// ```
    #[track_caller]
    pub fn is_empty(self) -> Val<bool> {
        self.len().eq(0)
    }

    /// Scalar element `c` of vector `i`.
    #[track_caller]
    fn elem(self, i: Val<i32>, c: usize) -> Elem<T> {
        self.scalars.at(i * N as i32 + c as i32)
    }

    /// Loads vector `i`.
    ///
    /// ```
    /// use qd::prelude::*;
    /// use qd::simt::vector::VectorArray;
    /// let k = Kernel::range("lengths", 32, |k| {
    ///     let v = VectorArray::<f32, 2>::new(k.array::<f32>("v"));
    ///     let out = k.array::<f32>("out");
    ///     k.parallel_for(0, v.len(), |i| {
    ///         let p = v.get(i);
    ///         out.set(i, p.dot(p).sqrt());
    ///     });
    /// });
    /// let d = Device::cpu();
    /// let v = d.array_from(&[3.0f32, 4.0, 6.0, 8.0]).unwrap();
    /// let out = d.zeros::<f32>(2).unwrap();
    /// d.launch(&k, &[v.arg(), out.arg()]).unwrap();
    /// assert_eq!(out.to_vec().unwrap(), [5.0, 10.0]);
    /// ```
    #[track_caller]
    pub fn get(self, i: impl IntoVal<i32>) -> Vector<T, N> {
        let i = i.into_val();
        Vector(std::array::from_fn(|c| self.elem(i, c).get()))
    }

    /// Stores `v` as vector `i`.
    ///
    /// ```
    /// use qd::prelude::*;
    /// use qd::simt::vector::{Vec3, VectorArray};
    /// let k = Kernel::range("cross_z", 32, |k| {
    ///     let v = VectorArray::<i32, 3>::new(k.array::<i32>("v"));
    ///     k.parallel_for(0, v.len(), |i| v.set(i, Vec3::new([Val::constant(0), Val::constant(0), i + 1])));
    /// });
    /// let d = Device::cpu();
    /// let v = d.zeros::<i32>(6).unwrap();
    /// d.launch(&k, &[v.arg()]).unwrap();
    /// assert_eq!(v.to_vec().unwrap(), [0, 0, 1, 0, 0, 2]);
    /// ```
    #[track_caller]
    pub fn set(self, i: impl IntoVal<i32>, v: Vector<T, N>) {
        let i = i.into_val();
        for (c, x) in v.0.into_iter().enumerate() {
            self.elem(i, c).set(x);
        }
    }

    /// `atomic(component, value)` on each component of vector `i` in turn (each its own atomic,
    /// no all-or-nothing guarantee); returns the old components.
    ///
    /// ```
    /// use qd::prelude::*;
    /// use qd::simt::vector::{Vec2, VectorArray};
    /// // Any per-component atomic: here a bitwise or.
    /// let k = Kernel::range("flags", 32, |k| {
    ///     let v = VectorArray::<u32, 2>::new(k.array::<u32>("v"));
    ///     k.parallel_for(0, 8, |i| {
    ///         let bit = Val::constant(1u32) << i.cast::<u32>();
    ///         v.atomic(0, Vec2::new([bit, bit << 8u32]), atomic_or);
    ///     });
    /// });
    /// let d = Device::cpu();
    /// let v = d.zeros::<u32>(2).unwrap();
    /// d.launch(&k, &[v.arg()]).unwrap();
    /// assert_eq!(v.to_vec().unwrap(), [0xFF, 0xFF00]);
    /// ```
    #[track_caller]
    pub fn atomic(
        self,
        i: impl IntoVal<i32>,
        v: Vector<T, N>,
        atomic: impl Fn(Elem<T>, Val<T>) -> Val<T>,
    ) -> Vector<T, N> {
        let i = i.into_val();
        Vector(std::array::from_fn(|c| atomic(self.elem(i, c), v.0[c])))
    }
}

impl<T: Num, const N: usize> VectorArray<T, N> {
    /// `atomic_add` per component; returns the old vector.
    ///
    /// ```
    /// use qd::prelude::*;
    /// use qd::simt::vector::VectorArray;
    /// // The centroid's running sum: one atomic per component.
    /// let k = Kernel::range("centroid", 32, |k| {
    ///     let p = VectorArray::<f32, 3>::new(k.array::<f32>("p"));
    ///     let sum = VectorArray::<f32, 3>::new(k.array::<f32>("sum"));
    ///     k.parallel_for(0, p.len(), |i| {
    ///         sum.atomic_add(0, p.get(i));
    ///     });
    /// });
    /// let d = Device::cpu();
    /// let p = d.array_from(&[1.0f32, 0.0, 2.0, 3.0, 4.0, 2.0]).unwrap();
    /// let sum = d.zeros::<f32>(3).unwrap();
    /// d.launch(&k, &[p.arg(), sum.arg()]).unwrap();
    /// assert_eq!(sum.to_vec().unwrap(), [4.0, 4.0, 4.0]);
    /// ```
    #[track_caller]
    pub fn atomic_add(self, i: impl IntoVal<i32>, v: Vector<T, N>) -> Vector<T, N> {
        self.atomic(i, v, atomic::atomic_add)
    }

    /// `atomic_sub` per component; returns the old vector.
    ///
    /// ```
    /// use qd::prelude::*;
    /// use qd::simt::vector::{Vec2, VectorArray};
    /// let k = Kernel::range("drain", 32, |k| {
    ///     let v = VectorArray::<i32, 2>::new(k.array::<i32>("v"));
    ///     k.parallel_for(0, 10, |_| {
    ///         v.atomic_sub(0, Vec2::new([1, 2]));
    ///     });
    /// });
    /// let d = Device::cpu();
    /// let v = d.array_from(&[100i32, 100]).unwrap();
    /// d.launch(&k, &[v.arg()]).unwrap();
    /// assert_eq!(v.to_vec().unwrap(), [90, 80]);
    /// ```
    #[track_caller]
    pub fn atomic_sub(self, i: impl IntoVal<i32>, v: Vector<T, N>) -> Vector<T, N> {
        self.atomic(i, v, atomic::atomic_sub)
    }

    /// `atomic_min` per component; returns the old vector.
    ///
    /// ```
    /// use qd::prelude::*;
    /// use qd::simt::vector::VectorArray;
    /// // The lower corner of a bounding box.
    /// let k = Kernel::range("lo", 32, |k| {
    ///     let p = VectorArray::<i32, 2>::new(k.array::<i32>("p"));
    ///     let lo = VectorArray::<i32, 2>::new(k.array::<i32>("lo"));
    ///     k.parallel_for(0, p.len(), |i| {
    ///         lo.atomic_min(0, p.get(i));
    ///     });
    /// });
    /// let d = Device::cpu();
    /// let p = d.array_from(&[5i32, -1, 2, 7, 9, 3]).unwrap();
    /// let lo = d.array_from(&[i32::MAX, i32::MAX]).unwrap();
    /// d.launch(&k, &[p.arg(), lo.arg()]).unwrap();
    /// assert_eq!(lo.to_vec().unwrap(), [2, -1]);
    /// ```
    #[track_caller]
    pub fn atomic_min(self, i: impl IntoVal<i32>, v: Vector<T, N>) -> Vector<T, N> {
        self.atomic(i, v, atomic::atomic_min)
    }

    /// `atomic_max` per component; returns the old vector.
    ///
    /// ```
    /// use qd::prelude::*;
    /// use qd::simt::vector::VectorArray;
    /// // The upper corner of a bounding box.
    /// let k = Kernel::range("hi", 32, |k| {
    ///     let p = VectorArray::<f32, 2>::new(k.array::<f32>("p"));
    ///     let hi = VectorArray::<f32, 2>::new(k.array::<f32>("hi"));
    ///     k.parallel_for(0, p.len(), |i| {
    ///         hi.atomic_max(0, p.get(i));
    ///     });
    /// });
    /// let d = Device::cpu();
    /// let p = d.array_from(&[5.0f32, -1.0, 2.0, 7.0, 9.0, 3.0]).unwrap();
    /// let hi = d.array_from(&[f32::NEG_INFINITY, f32::NEG_INFINITY]).unwrap();
    /// d.launch(&k, &[p.arg(), hi.arg()]).unwrap();
    /// assert_eq!(hi.to_vec().unwrap(), [9.0, 7.0]);
    /// ```
    #[track_caller]
    pub fn atomic_max(self, i: impl IntoVal<i32>, v: Vector<T, N>) -> Vector<T, N> {
        self.atomic(i, v, atomic::atomic_max)
    }

    /// `atomic_exchange` per component; returns the old vector.
    ///
    /// ```
    /// use qd::prelude::*;
    /// use qd::simt::vector::{Vec2, VectorArray};
    /// // Swap a vector in and keep the old one.
    /// let k = Kernel::range("swap", 32, |k| {
    ///     let slot = VectorArray::<i32, 2>::new(k.array::<i32>("slot"));
    ///     let old = VectorArray::<i32, 2>::new(k.array::<i32>("old"));
    ///     k.parallel_for(0, 1, |i| old.set(i, slot.atomic_exchange(0, Vec2::new([7, 8]))));
    /// });
    /// let d = Device::cpu();
    /// let (slot, old) = (d.array_from(&[1i32, 2]).unwrap(), d.zeros::<i32>(2).unwrap());
    /// d.launch(&k, &[slot.arg(), old.arg()]).unwrap();
    /// assert_eq!((slot.to_vec().unwrap(), old.to_vec().unwrap()), (vec![7, 8], vec![1, 2]));
    /// ```
    #[track_caller]
    pub fn atomic_exchange(self, i: impl IntoVal<i32>, v: Vector<T, N>) -> Vector<T, N> {
        self.atomic(i, v, atomic::atomic_exchange)
    }
}

/// An array of `R × C` matrices over a scalar array, packed row-major (see the module's layout).
pub struct MatrixArray<T, const R: usize, const C: usize> {
    scalars: Array<T>,
}

impl<T, const R: usize, const C: usize> Clone for MatrixArray<T, R, C> {
    fn clone(&self) -> Self {
        *self
    }
}
impl<T, const R: usize, const C: usize> Copy for MatrixArray<T, R, C> {}

impl<T: Scalar, const R: usize, const C: usize> MatrixArray<T, R, C> {
    /// Views `scalars` as packed row-major matrices.
    ///
    /// ```
    /// use qd::prelude::*;
    /// use qd::simt::vector::{MatrixArray, VectorArray};
    /// // Matrix i is elements 4i .. 4i + 4 of the scalar array, row-major.
    /// let k = Kernel::range("apply", 32, |k| {
    ///     let m = MatrixArray::<f32, 2, 2>::new(k.array::<f32>("m"));
    ///     let p = VectorArray::<f32, 2>::new(k.array::<f32>("p"));
    ///     k.parallel_for(0, p.len(), |i| p.set(i, m.get(0) * p.get(i)));
    /// });
    /// let d = Device::cpu();
    /// let m = d.array_from(&[0.0f32, -1.0, 1.0, 0.0]).unwrap(); // a quarter turn
    /// let p = d.array_from(&[1.0f32, 0.0]).unwrap();
    /// d.launch(&k, &[m.arg(), p.arg()]).unwrap();
    /// assert_eq!(p.to_vec().unwrap(), [0.0, 1.0]);
    /// ```
    pub fn new(scalars: Array<T>) -> Self {
        MatrixArray { scalars }
    }

    /// A block-shared array of `len` matrices.
    ///
    /// ```
    /// use qd::prelude::*;
    /// use qd::simt::vector::MatrixArray;
    /// let k = Kernel::explicit("stage", 32, |k| {
    ///     let m = MatrixArray::<i32, 2, 2>::new(k.array::<i32>("m"));
    ///     let s = MatrixArray::<i32, 2, 2>::shared(32);
    ///     let t = block::thread_idx();
    ///     s.set(t, m.get(t));
    ///     block::sync();
    ///     m.set(t, s.get(31 - t));
    /// });
    /// let d = Device::cpu();
    /// let m = d.array_from(&(0..128).collect::<Vec<i32>>()).unwrap();
    /// d.launch_grid(&k, 1, &[m.arg()]).unwrap();
    /// assert_eq!(m.to_vec().unwrap()[..4], [124, 125, 126, 127]);
    /// ```
    #[track_caller]
    pub fn shared(len: u32) -> Self {
        MatrixArray::new(block::shared_array::<T>(scalars("MatrixArray::shared", len, R * C)))
    }

    /// The underlying scalars.
    ///
    /// ```
    /// use qd::prelude::*;
    /// use qd::simt::vector::MatrixArray;
    /// let k = Kernel::range("zero", 32, |k| {
    ///     let m = MatrixArray::<f32, 3, 3>::new(k.array::<f32>("m"));
    ///     k.parallel_for(0, m.scalars().len(), |j| m.scalars().set(j, 0.0f32));
    /// });
    /// let d = Device::cpu();
    /// let m = d.array_from(&[1.0f32; 9]).unwrap();
    /// d.launch(&k, &[m.arg()]).unwrap();
    /// assert_eq!(m.to_vec().unwrap(), [0.0; 9]);
    /// ```
    pub fn scalars(self) -> Array<T> {
        self.scalars
    }

    /// Whole matrices in the array.
    ///
    /// ```
    /// use qd::prelude::*;
    /// use qd::simt::vector::MatrixArray;
    /// let k = Kernel::range("count", 32, |k| {
    ///     let m = MatrixArray::<f32, 2, 3>::new(k.array::<f32>("m"));
    ///     let n = k.array::<i32>("n");
    ///     k.parallel_for(0, 1, |_| n.set(0, m.len()));
    /// });
    /// let d = Device::cpu();
    /// let (m, n) = (d.zeros::<f32>(13).unwrap(), d.zeros::<i32>(1).unwrap());
    /// d.launch(&k, &[m.arg(), n.arg()]).unwrap();
    /// assert_eq!(n.to_vec().unwrap(), [2]); // 13 scalars hold two 2 x 3 matrices
    /// ```
    #[track_caller]
    pub fn len(self) -> Val<i32> {
        self.scalars.len() / (R * C) as i32
    }

    /// True when the array holds no whole matrix.
    ///
    /// ```
    /// use qd::prelude::*;
    /// use qd::simt::vector::MatrixArray;
    /// let k = Kernel::range("empty", 32, |k| {
    ///     let m = MatrixArray::<f32, 2, 2>::new(k.array::<f32>("m"));
    ///     let out = k.array::<i32>("out");
    ///     k.parallel_for(0, 1, |_| out.set(0, m.is_empty().to_i32()));
    /// });
    /// let d = Device::cpu();
    /// let (m, out) = (d.zeros::<f32>(4).unwrap(), d.zeros::<i32>(1).unwrap());
    /// d.launch(&k, &[m.arg(), out.arg()]).unwrap();
    /// assert_eq!(out.to_vec().unwrap(), [0]);
    /// ```
    #[track_caller]
    pub fn is_empty(self) -> Val<bool> {
        self.len().eq(0)
    }

    #[track_caller]
    fn elem(self, i: Val<i32>, e: usize) -> Elem<T> {
        self.scalars.at(i * (R * C) as i32 + e as i32)
    }

    /// Loads matrix `i`.
    ///
    /// ```
    /// use qd::prelude::*;
    /// use qd::simt::vector::MatrixArray;
    /// // Products of matrix pairs.
    /// let k = Kernel::range("mul", 32, |k| {
    ///     let a = MatrixArray::<i32, 2, 2>::new(k.array::<i32>("a"));
    ///     let out = MatrixArray::<i32, 2, 2>::new(k.array::<i32>("out"));
    ///     k.parallel_for(0, out.len(), |i| out.set(i, a.get(2 * i) * a.get(2 * i + 1)));
    /// });
    /// let d = Device::cpu();
    /// let a = d.array_from(&[1i32, 2, 3, 4, 0, 1, 1, 0]).unwrap();
    /// let out = d.zeros::<i32>(4).unwrap();
    /// d.launch(&k, &[a.arg(), out.arg()]).unwrap();
    /// assert_eq!(out.to_vec().unwrap(), [2, 1, 4, 3]); // [[1,2],[3,4]] * [[0,1],[1,0]]
    /// ```
    #[track_caller]
    pub fn get(self, i: impl IntoVal<i32>) -> Matrix<T, R, C> {
        let i = i.into_val();
        let flat: Vec<Val<T>> = (0..R * C).map(|e| self.elem(i, e).get()).collect();
        Matrix::from_flat(&flat)
    }

    /// Stores `m` as matrix `i`.
    ///
    /// ```
    /// use qd::prelude::*;
    /// use qd::simt::vector::{Mat2, MatrixArray};
    /// let k = Kernel::range("scaled", 32, |k| {
    ///     let m = MatrixArray::<f32, 2, 2>::new(k.array::<f32>("m"));
    ///     k.parallel_for(0, m.len(), |i| m.set(i, Mat2::diagonal(i.cast::<f32>() + 1.0f32)));
    /// });
    /// let d = Device::cpu();
    /// let m = d.zeros::<f32>(8).unwrap();
    /// d.launch(&k, &[m.arg()]).unwrap();
    /// assert_eq!(m.to_vec().unwrap(), [1.0, 0.0, 0.0, 1.0, 2.0, 0.0, 0.0, 2.0]);
    /// ```
    #[track_caller]
    pub fn set(self, i: impl IntoVal<i32>, m: Matrix<T, R, C>) {
        let i = i.into_val();
        for (e, x) in m.flat().into_iter().enumerate() {
            self.elem(i, e).set(x);
        }
    }

    /// `atomic(element, value)` on each element of matrix `i`, row after row (each its own
    /// atomic); returns the old matrix.
    ///
    /// ```
    /// use qd::prelude::*;
    /// use qd::simt::vector::{Mat2, MatrixArray};
    /// let k = Kernel::range("mask", 32, |k| {
    ///     let m = MatrixArray::<u32, 2, 2>::new(k.array::<u32>("m"));
    ///     k.parallel_for(0, 4, |i| {
    ///         let bit = Val::constant(1u32) << i.cast::<u32>();
    ///         let zero = Val::constant(0u32);
    ///         m.atomic(0, Mat2::from_rows([[bit, zero], [zero, bit]]), atomic_xor);
    ///     });
    /// });
    /// let d = Device::cpu();
    /// let m = d.zeros::<u32>(4).unwrap();
    /// d.launch(&k, &[m.arg()]).unwrap();
    /// assert_eq!(m.to_vec().unwrap(), [0xF, 0, 0, 0xF]);
    /// ```
    #[track_caller]
    pub fn atomic(
        self,
        i: impl IntoVal<i32>,
        m: Matrix<T, R, C>,
        atomic: impl Fn(Elem<T>, Val<T>) -> Val<T>,
    ) -> Matrix<T, R, C> {
        let i = i.into_val();
        let old: Vec<Val<T>> = m.flat().into_iter().enumerate().map(|(e, x)| atomic(self.elem(i, e), x)).collect();
        Matrix::from_flat(&old)
    }
}

impl<T: Num, const R: usize, const C: usize> MatrixArray<T, R, C> {
    /// `atomic_add` per element; returns the old matrix.
    ///
    /// ```
    /// use qd::prelude::*;
    /// use qd::simt::vector::MatrixArray;
    /// // Accumulate outer products into one matrix.
    /// let k = Kernel::range("cov", 32, |k| {
    ///     let x = k.array::<f32>("x");
    ///     let acc = MatrixArray::<f32, 2, 2>::new(k.array::<f32>("acc"));
    ///     k.parallel_for(0, x.len() / 2, |i| {
    ///         let (a, b) = (x.get(2 * i), x.get(2 * i + 1));
    ///         let outer = qd::simt::vector::Mat2::from_rows([[a * a, a * b], [b * a, b * b]]);
    ///         acc.atomic_add(0, outer);
    ///     });
    /// });
    /// let d = Device::cpu();
    /// let x = d.array_from(&[1.0f32, 2.0, 3.0, -1.0]).unwrap();
    /// let acc = d.zeros::<f32>(4).unwrap();
    /// d.launch(&k, &[x.arg(), acc.arg()]).unwrap();
    /// assert_eq!(acc.to_vec().unwrap(), [10.0, -1.0, -1.0, 5.0]);
    /// ```
    #[track_caller]
    pub fn atomic_add(self, i: impl IntoVal<i32>, m: Matrix<T, R, C>) -> Matrix<T, R, C> {
        self.atomic(i, m, atomic::atomic_add)
    }
}
