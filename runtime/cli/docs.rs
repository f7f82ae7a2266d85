//! What the command line prints about itself and the scene format: the
//! JSON Schema (`morphrt schema`), shell completions and the manual page.

use crate::host::files::rules::{Inputs, Kind, Output};
use crate::host::HostError;
use clap::CommandFactory;
use std::io::Write;
use std::path::PathBuf;

/// What `morphrt schema` was asked to do: the command's arguments.
#[derive(Clone, Debug, clap::Args)]
pub struct SchemaOptions {
    /// Write it to this file instead of standard output.
    ///
    /// Written under `render`'s output rules.
    #[arg(short = 'o', long = "output")]
    pub output: Option<PathBuf>,
}

/// `morphrt schema`: the scene format's JSON Schema, pretty-printed, to
/// `out` or to `-o` under the output rules (written whole under a
/// temporary name and renamed into place).
pub fn schema(opts: &SchemaOptions, out: &mut (dyn Write + Send)) -> Result<(), HostError> {
    let text = serde_json::to_string_pretty(&crate::graph::schema::scene_schema())
        .expect("a JSON value serialises")
        + "\n";
    match &opts.output {
        None => out
            .write_all(text.as_bytes())
            .map_err(HostError::stdout("cannot write the schema")),
        Some(path) => {
            let o = Output::prepare(path, &Inputs::default(), text.len() as u64, &Kind::SCHEMA)?;
            Ok(o.write_all(text.as_bytes(), out)?)
        }
    }
}

/// `morphrt completions SHELL`: the shell's completion script.
pub fn completions(shell: clap_complete::Shell, out: &mut dyn Write) -> Result<(), HostError> {
    clap_complete::generate(shell, &mut super::Cli::command(), "morphrt", out);
    Ok(())
}

/// `morphrt man`: the manual (roff): the page of `morphrt`, then one page
/// per command (`morphrt-render(1)`, …) with its description and every
/// flag's long help, the same text `morphrt help COMMAND` prints.
pub fn man(out: &mut dyn Write) -> Result<(), HostError> {
    let failed = HostError::stdout("cannot print the manual");
    let mut cli = super::Cli::command();
    cli.build();
    clap_mangen::Man::new(cli.clone())
        .render(out)
        .map_err(failed)?;
    for command in cli.get_subcommands().filter(|c| c.get_name() != "help") {
        let name = format!("morphrt-{}", command.get_name());
        clap_mangen::Man::new(command.clone())
            .title(name)
            .render(out)
            .map_err(failed)?;
    }
    Ok(())
}
