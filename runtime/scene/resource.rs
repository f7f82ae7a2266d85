//! `@resource:NAME` resolution.
