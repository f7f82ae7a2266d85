//! Explicit node state: named arrays and scalars, precision-tagged, so that a
//! snapshot taken at one precision restores at another (f64 → f32 rounds,
//! f32 → f64 is exact).
//!
//! It lives in the numeric core, not with the operators, because numeric
//! building blocks (the oversampler's filter histories) carry state of their
//! own; `ops` re-exports these types for the operators.

use super::{Precision, Sample};
use std::borrow::Cow;

/// One named piece of state.
#[derive(Clone, Debug, PartialEq)]
pub enum StateValue {
    /// Samples of an f32 node: restored into f64 exactly.
    F32(Vec<f32>),
    /// Samples of an f64 node: restored into f32 rounded to nearest.
    F64(Vec<f64>),
    /// Counters and fixed-point phases: never converted, so they migrate exactly.
    U64(u64),
    /// Signed counters, likewise exact.
    I64(i64),
    /// Flags (a gate, a pending prime).
    Bool(bool),
}

/// A node's state: an ordered list of named values. Operators name entries
/// with static strings (borrowed, so re-snapshotting into an existing
/// `NodeState` of the same shape does not allocate); a state read back from
/// a snapshot file owns its names, and saving into it finds each entry
/// by name without allocating either.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct NodeState {
    /// In the order the operator first wrote them (snapshot files keep it).
    pub entries: Vec<(Cow<'static, str>, StateValue)>,
}

/// How far a state copy spread over several calls has come (see
/// `NodeProcessor::save_part` in `ops`): a save at block boundary N must
/// not copy a 30 s delay line in one audio callback, so long histories are
/// copied in parts over the next blocks.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Progress {
    /// The whole state is written.
    Done,
    /// This many samples of each long history are written; call again
    /// with it before the node runs again.
    Copied(usize),
}

/// The part `[done, done + budget)` of a circular buffer of `len` samples
/// read oldest first from index `start` (where the next frame writes), as
/// at most two contiguous index ranges, and where the copy stands after it
/// (≥ `len`: complete).
pub(crate) fn ring_part(
    len: usize,
    start: usize,
    done: usize,
    budget: usize,
) -> ([std::ops::Range<usize>; 2], usize) {
    let end = done.saturating_add(budget).min(len);
    if len == 0 || done >= end {
        return ([0..0, 0..0], end.max(done));
    }
    let a = (start % len + done) % len;
    let n = end - done;
    let first = n.min(len - a);
    ([a..a + first, 0..n - first], end)
}

/// Zeroes a node's buffers a part at a time, for a reset spread over
/// blocks (see `NodeProcessor::reset_part` in `ops`): the buffers, visited in
/// the same order on every call, are one long sequence, and a call zeroes
/// its `[done, done + budget)`.
pub struct PartClear {
    from: usize,
    to: usize,
    /// Where the next buffer starts in the sequence.
    base: usize,
}

impl PartClear {
    /// The part `[done, done + budget)` of the sequence.
    pub(crate) fn new(done: usize, budget: usize) -> PartClear {
        PartClear {
            from: done,
            to: done.saturating_add(budget),
            base: 0,
        }
    }

    /// Zeroes this buffer's share of the part; call for every buffer, in
    /// the same order each time.
    pub(crate) fn zero<T: Copy>(&mut self, buf: &mut [T], zero: T) {
        let lo = self.from.clamp(self.base, self.base + buf.len()) - self.base;
        let hi = self.to.clamp(self.base, self.base + buf.len()) - self.base;
        buf[lo..hi].fill(zero);
        self.base += buf.len();
    }

    /// After every buffer: complete, or where the next part starts.
    pub(crate) fn progress(&self) -> Progress {
        if self.to >= self.base {
            Progress::Done
        } else {
            Progress::Copied(self.to)
        }
    }
}

/// Why a restore failed.
#[derive(Clone, Debug, PartialEq)]
pub enum StateError {
    /// No entry of that name: the state came from another operator or an
    /// older layout.
    Missing(&'static str),
    /// An array of another length (a node built with other sizes).
    Shape {
        /// The entry's name.
        name: &'static str,
        /// The length this node holds.
        expected: usize,
        /// The length the state holds.
        found: usize,
    },
    /// An entry of another kind (a number where samples were expected).
    Kind(&'static str),
}

impl std::fmt::Display for StateError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            StateError::Missing(n) => write!(f, "state `{n}` is missing"),
            StateError::Shape {
                name,
                expected,
                found,
            } => write!(f, "state `{name}` has {found} values, expected {expected}"),
            StateError::Kind(n) => write!(f, "state `{n}` has the wrong kind"),
        }
    }
}

impl NodeState {
    fn slot(&mut self, name: &'static str) -> &mut StateValue {
        // Reuse the entry of that name when present (no allocation on a
        // snapshot of the same shape).
        match self.entries.iter().position(|(n, _)| n == name) {
            Some(i) => &mut self.entries[i].1,
            None => {
                self.entries
                    .push((Cow::Borrowed(name), StateValue::Bool(false)));
                &mut self.entries.last_mut().expect("just pushed").1
            }
        }
    }

    fn get(&self, name: &'static str) -> Result<&StateValue, StateError> {
        self.entries
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, v)| v)
            .ok_or(StateError::Missing(name))
    }

    /// Writes an array of samples at the sample type's precision.
    pub(crate) fn put_samples<S: Sample>(&mut self, name: &'static str, data: &[S]) {
        let slot = self.slot(name);
        match S::PRECISION {
            Precision::F64 => {
                if !matches!(slot, StateValue::F64(_)) {
                    *slot = StateValue::F64(Vec::with_capacity(data.len()));
                }
                if let StateValue::F64(v) = slot {
                    v.clear();
                    v.extend(data.iter().map(|s| s.to_f64()));
                }
            }
            Precision::F32 => {
                if !matches!(slot, StateValue::F32(_)) {
                    *slot = StateValue::F32(Vec::with_capacity(data.len()));
                }
                if let StateValue::F32(v) = slot {
                    v.clear();
                    v.extend(data.iter().map(|s| s.to_f32()));
                }
            }
        }
    }

    /// Writes `data` into the array `name`, `total` samples long, from
    /// index `offset` on: one part of an array copied over several calls
    /// (see [`Progress`]). An entry that is missing, of another kind or of
    /// another length is first made `total` samples of silence at the
    /// sample type's precision, which allocates: the audio thread only ever
    /// writes parts into a state an earlier full write shaped. A part that
    /// would run past `total` is cut there.
    pub(crate) fn put_samples_part<S: Sample>(
        &mut self,
        name: &'static str,
        total: usize,
        offset: usize,
        data: &[S],
    ) {
        let slot = self.slot(name);
        let end = offset.saturating_add(data.len()).min(total);
        let data = &data[..end.saturating_sub(offset)];
        match S::PRECISION {
            Precision::F64 => {
                if !matches!(slot, StateValue::F64(v) if v.len() == total) {
                    *slot = StateValue::F64(vec![0.0; total]);
                }
                if let StateValue::F64(v) = slot {
                    for (d, x) in v[offset.min(total)..end].iter_mut().zip(data) {
                        *d = x.to_f64();
                    }
                }
            }
            Precision::F32 => {
                if !matches!(slot, StateValue::F32(v) if v.len() == total) {
                    *slot = StateValue::F32(vec![0.0; total]);
                }
                if let StateValue::F32(v) = slot {
                    for (d, x) in v[offset.min(total)..end].iter_mut().zip(data) {
                        *d = x.to_f32();
                    }
                }
            }
        }
    }

    /// Writes the part `[done, done + budget)` of circular buffer `buf`,
    /// read oldest first from `start`, into the array `name` at the same
    /// indices (see [`put_samples_part`](Self::put_samples_part) and
    /// [`ring_part`]). Returns where the copy stands (≥ `buf.len()`:
    /// complete).
    pub(crate) fn put_ring_part<S: Sample>(
        &mut self,
        name: &'static str,
        buf: &[S],
        start: usize,
        done: usize,
        budget: usize,
    ) -> usize {
        let (ranges, next) = ring_part(buf.len(), start, done, budget);
        if done == 0 && ranges.iter().all(|r| r.is_empty()) {
            self.put_samples_part::<S>(name, buf.len(), 0, &[]);
        }
        for r in ranges {
            if !r.is_empty() {
                self.put_samples_part(name, buf.len(), r.start, &buf[r]);
            }
        }
        next
    }

    /// Writes one sample-precision scalar (an array of length 1).
    pub(crate) fn put_sample<S: Sample>(&mut self, name: &'static str, v: S) {
        self.put_samples(name, &[v]);
    }

    /// Writes a counter or fixed-point value, kept exact across precisions.
    pub(crate) fn put_u64(&mut self, name: &'static str, v: u64) {
        *self.slot(name) = StateValue::U64(v);
    }

    /// Writes a signed counter, kept exact across precisions.
    pub(crate) fn put_i64(&mut self, name: &'static str, v: i64) {
        *self.slot(name) = StateValue::I64(v);
    }

    /// Writes a flag.
    pub(crate) fn put_bool(&mut self, name: &'static str, v: bool) {
        *self.slot(name) = StateValue::Bool(v);
    }

    /// Reads an array into `out`, converting precision; the lengths must match.
    pub(crate) fn get_samples<S: Sample>(
        &self,
        name: &'static str,
        out: &mut [S],
    ) -> Result<(), StateError> {
        let shape = |found| StateError::Shape {
            name,
            expected: out.len(),
            found,
        };
        match self.get(name)? {
            StateValue::F64(v) => {
                if v.len() != out.len() {
                    return Err(shape(v.len()));
                }
                for (o, x) in out.iter_mut().zip(v) {
                    *o = S::from_f64(*x);
                }
            }
            StateValue::F32(v) => {
                if v.len() != out.len() {
                    return Err(shape(v.len()));
                }
                for (o, x) in out.iter_mut().zip(v) {
                    *o = S::from_f32(*x);
                }
            }
            _ => return Err(StateError::Kind(name)),
        }
        Ok(())
    }

    /// Reads a scalar written by [`put_sample`](Self::put_sample), converting precision.
    pub(crate) fn get_sample<S: Sample>(&self, name: &'static str) -> Result<S, StateError> {
        let mut v = [S::ZERO];
        self.get_samples(name, &mut v)?;
        Ok(v[0])
    }

    /// Reads a value written by [`put_u64`](Self::put_u64).
    pub(crate) fn get_u64(&self, name: &'static str) -> Result<u64, StateError> {
        match self.get(name)? {
            StateValue::U64(v) => Ok(*v),
            _ => Err(StateError::Kind(name)),
        }
    }

    /// Reads a value written by [`put_i64`](Self::put_i64).
    pub(crate) fn get_i64(&self, name: &'static str) -> Result<i64, StateError> {
        match self.get(name)? {
            StateValue::I64(v) => Ok(*v),
            _ => Err(StateError::Kind(name)),
        }
    }

    /// Reads a flag written by [`put_bool`](Self::put_bool).
    pub(crate) fn get_bool(&self, name: &'static str) -> Result<bool, StateError> {
        match self.get(name)? {
            StateValue::Bool(v) => Ok(*v),
            _ => Err(StateError::Kind(name)),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn precision_migrates_on_restore() {
        let mut st = NodeState::default();
        st.put_samples::<f64>("z", &[0.1, -0.25]);
        st.put_u64("phase", 42);
        let mut out32 = [0f32; 2];
        st.get_samples("z", &mut out32).unwrap();
        assert_eq!(out32, [0.1f32, -0.25]);
        let mut st32 = NodeState::default();
        st32.put_samples::<f32>("z", &out32);
        let mut out64 = [0f64; 2];
        st32.get_samples("z", &mut out64).unwrap();
        assert_eq!(out64, [0.1f32 as f64, -0.25]);
        assert_eq!(st.get_u64("phase").unwrap(), 42);
        assert_eq!(st.get_u64("nope"), Err(StateError::Missing("nope")));
        let mut wrong = [0f64; 3];
        assert!(matches!(
            st.get_samples("z", &mut wrong),
            Err(StateError::Shape { .. })
        ));
    }

    #[test]
    fn resnapshot_reuses_entries() {
        let mut st = NodeState::default();
        st.put_samples::<f64>("z", &[1.0, 2.0]);
        let ptr = match &st.entries[0].1 {
            StateValue::F64(v) => v.as_ptr(),
            _ => unreachable!(),
        };
        st.put_samples::<f64>("z", &[3.0, 4.0]);
        match &st.entries[0].1 {
            StateValue::F64(v) => {
                assert_eq!(v.as_ptr(), ptr);
                assert_eq!(v, &[3.0, 4.0]);
            }
            _ => unreachable!(),
        }
        assert_eq!(st.entries.len(), 1);
    }

    #[test]
    fn owned_names_from_a_file_are_found_not_duplicated() {
        let mut st = NodeState {
            entries: vec![(Cow::Owned("z".to_string()), StateValue::F64(vec![0.0; 2]))],
        };
        let ptr = match &st.entries[0].1 {
            StateValue::F64(v) => v.as_ptr(),
            _ => unreachable!(),
        };
        st.put_samples::<f64>("z", &[3.0, 4.0]);
        assert_eq!(st.entries.len(), 1);
        match &st.entries[0].1 {
            StateValue::F64(v) => {
                assert_eq!(v.as_ptr(), ptr, "the buffer is reused");
                assert_eq!(v, &[3.0, 4.0]);
            }
            _ => unreachable!(),
        }
        assert_eq!(
            st.get_sample::<f64>("z"),
            Err(StateError::Shape {
                name: "z",
                expected: 1,
                found: 2
            })
        );
    }
}
