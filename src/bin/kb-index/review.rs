//! `kb-index review`: the review page, served on loopback until Ctrl-C (see
//! `kb_mcp::review::page`), its one-time link printed and, with `--open`,
//! opened in the person's browser.

use std::io::Write;
use std::sync::Arc;

use clap::Args;
use kb_mcp::engine::Engine;
use kb_mcp::review::page::ReviewPage;

use crate::Failure;

/// `kb-index review` arguments.
#[derive(Debug, Args)]
pub(crate) struct ReviewArgs {
    /// Open the page in the default browser.
    #[arg(long)]
    open: bool,
    /// The port on 127.0.0.1 (default: a free one).
    #[arg(long, default_value_t = 0)]
    port: u16,
}

pub(crate) const EXAMPLES: &str = "\
Examples:
  kb-index review --open       open the page in your browser
  kb-index review --port 8765  a fixed port (the link still holds a new one-time secret)

The page lists the pending proposals (a new one appears within seconds), shows each whole
with its diff and checks, and applies or rejects it when you click. It listens on 127.0.0.1
only; its link works once, in one browser. Stop it with Ctrl-C.";

pub(crate) fn run(engine: Engine, args: &ReviewArgs, out: &mut dyn Write) -> Result<u8, Failure> {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .map_err(|err| Failure { code: 1, message: format!("cannot start the page's runtime: {err}") })?;
    runtime.block_on(async {
        let page = ReviewPage::bind(Arc::new(engine), args.port).await?;
        writeln!(out, "Review page: {}", page.url())?;
        writeln!(out, "(the link works once, in one browser; Ctrl-C stops the page)")?;
        out.flush()?;
        if args.open
            && let Err(err) = webbrowser::open(page.url())
        {
            eprintln!("kb-index: cannot open a browser ({err}); open the link above yourself");
        }
        page.serve(async {
            let _ = tokio::signal::ctrl_c().await;
        })
        .await?;
        Ok(0)
    })
}
