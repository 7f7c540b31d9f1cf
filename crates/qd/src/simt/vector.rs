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
    #[track_caller]
    pub fn new<I: IntoVal<T>>(components: [I; N]) -> Self {
        Vector(components.map(IntoVal::into_val))
    }

    /// Every component `x`.
    #[track_caller]
    pub fn splat(x: impl IntoVal<T>) -> Self {
        let x = x.into_val();
        Vector([x; N])
    }

    /// The components.
    pub fn components(self) -> [Val<T>; N] {
        self.0
    }

    /// Component `i` chosen at run time (a chain of selects; an index outside `0..N` gives the
    /// last component).
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
    pub fn map<U>(self, f: impl FnMut(Val<T>) -> Val<U>) -> Vector<U, N> {
        Vector(self.0.map(f))
    }

    /// Combines two vectors component by component.
    pub fn zip_with<U>(self, other: Self, mut f: impl FnMut(Val<T>, Val<T>) -> Val<U>) -> Vector<U, N> {
        Vector(std::array::from_fn(|c| f(self.0[c], other.0[c])))
    }
}

impl<T: Num, const N: usize> Vector<T, N> {
    /// The dot product.
    #[track_caller]
    pub fn dot(self, other: Self) -> Val<T> {
        let mut acc = self.0[0] * other.0[0];
        for c in 1..N {
            acc += self.0[c] * other.0[c];
        }
        acc
    }

    /// Component-wise minimum.
    #[track_caller]
    pub fn min(self, other: Self) -> Self {
        self.zip_with(other, Val::min)
    }

    /// Component-wise maximum.
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
    #[track_caller]
    pub fn from_rows<I: IntoVal<T>>(rows: [[I; C]; R]) -> Self {
        Matrix(rows.map(|row| row.map(IntoVal::into_val)))
    }

    /// Row `r`.
    pub fn row(self, r: usize) -> Vector<T, C> {
        Vector(self.0[r])
    }

    /// Column `c`.
    pub fn column(self, c: usize) -> Vector<T, R> {
        Vector(std::array::from_fn(|r| self.0[r][c]))
    }

    /// The transpose.
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
    pub fn new(scalars: Array<T>) -> Self {
        VectorArray { scalars }
    }

    /// A block-shared array of `len` vectors (`len * N` scalars).
    #[track_caller]
    pub fn shared(len: u32) -> Self {
        VectorArray::new(block::shared_array::<T>(scalars("VectorArray::shared", len, N)))
    }

    /// The underlying scalars.
    pub fn scalars(self) -> Array<T> {
        self.scalars
    }

    /// Whole vectors in the array (`len / N` of the scalars).
    #[track_caller]
    pub fn len(self) -> Val<i32> {
        self.scalars.len() / N as i32
    }

    /// True when the array holds no whole vector.
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
    #[track_caller]
    pub fn get(self, i: impl IntoVal<i32>) -> Vector<T, N> {
        let i = i.into_val();
        Vector(std::array::from_fn(|c| self.elem(i, c).get()))
    }

    /// Stores `v` as vector `i`.
    #[track_caller]
    pub fn set(self, i: impl IntoVal<i32>, v: Vector<T, N>) {
        let i = i.into_val();
        for (c, x) in v.0.into_iter().enumerate() {
            self.elem(i, c).set(x);
        }
    }

    /// `atomic(component, value)` on each component of vector `i` in turn (each its own atomic,
    /// no all-or-nothing guarantee); returns the old components.
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
    #[track_caller]
    pub fn atomic_add(self, i: impl IntoVal<i32>, v: Vector<T, N>) -> Vector<T, N> {
        self.atomic(i, v, atomic::atomic_add)
    }

    /// `atomic_sub` per component; returns the old vector.
    #[track_caller]
    pub fn atomic_sub(self, i: impl IntoVal<i32>, v: Vector<T, N>) -> Vector<T, N> {
        self.atomic(i, v, atomic::atomic_sub)
    }

    /// `atomic_min` per component; returns the old vector.
    #[track_caller]
    pub fn atomic_min(self, i: impl IntoVal<i32>, v: Vector<T, N>) -> Vector<T, N> {
        self.atomic(i, v, atomic::atomic_min)
    }

    /// `atomic_max` per component; returns the old vector.
    #[track_caller]
    pub fn atomic_max(self, i: impl IntoVal<i32>, v: Vector<T, N>) -> Vector<T, N> {
        self.atomic(i, v, atomic::atomic_max)
    }

    /// `atomic_exchange` per component; returns the old vector.
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
    pub fn new(scalars: Array<T>) -> Self {
        MatrixArray { scalars }
    }

    /// A block-shared array of `len` matrices.
    #[track_caller]
    pub fn shared(len: u32) -> Self {
        MatrixArray::new(block::shared_array::<T>(scalars("MatrixArray::shared", len, R * C)))
    }

    /// The underlying scalars.
    pub fn scalars(self) -> Array<T> {
        self.scalars
    }

    /// Whole matrices in the array.
    #[track_caller]
    pub fn len(self) -> Val<i32> {
        self.scalars.len() / (R * C) as i32
    }

    /// True when the array holds no whole matrix.
    #[track_caller]
    pub fn is_empty(self) -> Val<bool> {
        self.len().eq(0)
    }

    #[track_caller]
    fn elem(self, i: Val<i32>, e: usize) -> Elem<T> {
        self.scalars.at(i * (R * C) as i32 + e as i32)
    }

    /// Loads matrix `i`.
    #[track_caller]
    pub fn get(self, i: impl IntoVal<i32>) -> Matrix<T, R, C> {
        let i = i.into_val();
        let flat: Vec<Val<T>> = (0..R * C).map(|e| self.elem(i, e).get()).collect();
        Matrix::from_flat(&flat)
    }

    /// Stores `m` as matrix `i`.
    #[track_caller]
    pub fn set(self, i: impl IntoVal<i32>, m: Matrix<T, R, C>) {
        let i = i.into_val();
        for (e, x) in m.flat().into_iter().enumerate() {
            self.elem(i, e).set(x);
        }
    }

    /// `atomic(element, value)` on each element of matrix `i`, row after row (each its own
    /// atomic); returns the old matrix.
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
    #[track_caller]
    pub fn atomic_add(self, i: impl IntoVal<i32>, m: Matrix<T, R, C>) -> Matrix<T, R, C> {
        self.atomic(i, m, atomic::atomic_add)
    }
}
