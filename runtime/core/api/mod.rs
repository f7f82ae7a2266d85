//! The embedding API: what a host (the command line, a plugin, a Python
//! module, any program) uses to load a scene and play it.

mod load;
mod overrides;
mod params;

pub use load::{Diagnostics, Loaded};
pub use overrides::{parse_set, set_params};
pub use params::{Param, ParamList, ParamRange, ParamRefused, ParamRoutes};
