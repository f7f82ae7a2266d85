//! Measuring: parity checks (and, to come, timing and calibration).

pub mod parity;
