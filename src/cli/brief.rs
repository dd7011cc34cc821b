//! `validator brief`: a task's brief for its worker, printed up front (the library's
//! `brief`), as text under 50 lines or as JSON.

use std::io::Write;
use std::process::ExitCode;

use anyhow::{Context, Result};

use super::{Found, load};

#[derive(clap::Args)]
pub(crate) struct BriefArgs {
    /// The task's name (picks the pipeline and the contract) [default: the name of the
    /// directory the rules file was found in, as `check` names it]
    #[arg(long, value_name = "NAME")]
    pub(crate) task: Option<String>,
    /// Brief for this pipeline instead of the first one whose `tasks` match
    #[arg(long, value_name = "NAME")]
    pub(crate) pipeline: Option<String>,
    /// Text for the worker (under 50 lines), or JSON
    #[arg(long, value_enum, default_value_t = BriefFormat::Text)]
    pub(crate) format: BriefFormat,
}

#[derive(Clone, Copy, clap::ValueEnum)]
pub(crate) enum BriefFormat {
    Text,
    Json,
}

pub(crate) fn brief(found: &Found, args: BriefArgs) -> Result<ExitCode> {
    let rules = load(&found.path)?;
    let task = args
        .task
        .unwrap_or_else(|| validator::task::name_from_dir(&found.project_dir()));
    let pipeline = rules.pipeline_for(&task, args.pipeline.as_deref())?;
    let brief = validator::brief::brief(&rules, pipeline, &task)?;
    let text = match args.format {
        BriefFormat::Text => brief.text(),
        BriefFormat::Json => {
            let json = serde_json::to_string_pretty(&brief)?;
            validator_text::json_inert(&json).into_owned() + "\n"
        }
    };
    let mut out = anstream::stdout();
    out.write_all(text.as_bytes())
        .and_then(|()| out.flush())
        .context("cannot write the brief to stdout")?;
    Ok(ExitCode::SUCCESS)
}
