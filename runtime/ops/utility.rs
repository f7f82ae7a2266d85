//! Placeholder: being implemented.
use super::{AnyNode, BuildCtx, OpSpec};
use crate::dsp::{MathKind, Precision};
use crate::profile::Profile;
fn todo_build(_: &BuildCtx<'_>, _: Precision, _: MathKind) -> Result<AnyNode, String> {
    Err("not implemented yet".into())
}
pub static DC: OpSpec = OpSpec {
    name: "dc",
    doc: "",
    inputs: &["in"],
    outputs: &["out"],
    params: &[],
    tier: Profile::Strict,
    variadic_inputs: false,
    uses_rng: false,
    build: todo_build,
};
pub static GAIN: OpSpec = OpSpec {
    name: "gain",
    doc: "",
    inputs: &["in"],
    outputs: &["out"],
    params: &[],
    tier: Profile::Strict,
    variadic_inputs: false,
    uses_rng: false,
    build: todo_build,
};
pub static MIX: OpSpec = OpSpec {
    name: "mix",
    doc: "",
    inputs: &["in"],
    outputs: &["out"],
    params: &[],
    tier: Profile::Strict,
    variadic_inputs: false,
    uses_rng: false,
    build: todo_build,
};
pub static MULTIPLY: OpSpec = OpSpec {
    name: "multiply",
    doc: "",
    inputs: &["in"],
    outputs: &["out"],
    params: &[],
    tier: Profile::Strict,
    variadic_inputs: false,
    uses_rng: false,
    build: todo_build,
};
pub static PAN: OpSpec = OpSpec {
    name: "pan",
    doc: "",
    inputs: &["in"],
    outputs: &["out"],
    params: &[],
    tier: Profile::Strict,
    variadic_inputs: false,
    uses_rng: false,
    build: todo_build,
};
pub static CAST: OpSpec = OpSpec {
    name: "cast",
    doc: "",
    inputs: &["in"],
    outputs: &["out"],
    params: &[],
    tier: Profile::Strict,
    variadic_inputs: false,
    uses_rng: false,
    build: todo_build,
};
