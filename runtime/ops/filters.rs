//! Placeholder: being implemented.
use super::{AnyNode, BuildCtx, OpSpec};
use crate::dsp::{MathKind, Precision};
use crate::profile::Profile;
fn todo_build(_: &BuildCtx<'_>, _: Precision, _: MathKind) -> Result<AnyNode, String> {
    Err("not implemented yet".into())
}
pub static BIQUAD: OpSpec = OpSpec {
    name: "biquad",
    doc: "",
    inputs: &["in"],
    outputs: &["out"],
    params: &[],
    tier: Profile::Strict,
    variadic_inputs: false,
    uses_rng: false,
    build: todo_build,
};
pub static ONEPOLE: OpSpec = OpSpec {
    name: "onepole",
    doc: "",
    inputs: &["in"],
    outputs: &["out"],
    params: &[],
    tier: Profile::Strict,
    variadic_inputs: false,
    uses_rng: false,
    build: todo_build,
};
pub static SVF: OpSpec = OpSpec {
    name: "svf",
    doc: "",
    inputs: &["in"],
    outputs: &["out"],
    params: &[],
    tier: Profile::Strict,
    variadic_inputs: false,
    uses_rng: false,
    build: todo_build,
};
