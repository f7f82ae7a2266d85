//! Placeholder: being implemented.
use super::{AnyNode, BuildCtx, OpSpec};
use crate::dsp::{MathKind, Precision};
use crate::profile::Profile;
fn todo_build(_: &BuildCtx<'_>, _: Precision, _: MathKind) -> Result<AnyNode, String> {
    Err("not implemented yet".into())
}
pub static NOISE: OpSpec = OpSpec {
    name: "noise",
    doc: "",
    inputs: &["in"],
    outputs: &["out"],
    params: &[],
    tier: Profile::Strict,
    variadic_inputs: false,
    uses_rng: false,
    build: todo_build,
};
