//! The hidden command both binaries answer when run as `<binary> __extract-pdf`:
//! the engine's PDF text extractor in a child process (see
//! `kb_engine::engine::PdfExtractor`). It reads one PDF from stdin, sets its
//! own limits first (RLIMIT_CPU on Unix; RLIMIT_AS on Linux, as a budget on
//! top of what the process maps at start; elsewhere the parent's wall-clock
//! timeout alone bounds memory), and writes the outcome as JSON on
//! stdout. It never touches the disk and never starts a server.

use std::io::{Read, Write};
use std::process::ExitCode;

use kb_mcp::engine::{PDF_MAX_BYTES, PdfExtractor, extract_pdf_child};

/// The first argument that makes a binary the extractor.
pub(crate) const EXTRACT_PDF_ARG: &str = "__extract-pdf";

/// Whether this process was started as the extractor.
pub(crate) fn asked() -> bool {
    std::env::args_os().nth(1).is_some_and(|arg| arg == EXTRACT_PDF_ARG)
}

/// The extractor the engine should run: this very program, as the extractor.
pub(crate) fn extractor() -> PdfExtractor {
    match std::env::current_exe() {
        Ok(program) => PdfExtractor::Command { program, args: vec![EXTRACT_PDF_ARG.into()] },
        Err(_) => PdfExtractor::Off,
    }
}

/// The address space this process maps now (Linux: `VmSize` in
/// `/proc/self/status`, in kB).
#[cfg(target_os = "linux")]
fn mapped_bytes() -> Option<u64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = status.lines().find(|line| line.starts_with("VmSize:"))?;
    let kib: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kib * 1024)
}

/// Runs as the extractor: limits, stdin, the outcome on stdout.
pub(crate) fn run() -> ExitCode {
    #[cfg(unix)]
    {
        use kb_mcp::engine::CHILD_CPU_SECONDS;
        use rlimit::Resource;
        if Resource::CPU.set(CHILD_CPU_SECONDS, CHILD_CPU_SECONDS + 1).is_err() {
            eprintln!("kb-extract-pdf: cannot set the CPU limit");
            return ExitCode::from(2);
        }
        // The budget is on top of what the process has mapped already: the
        // allocator reserves a 1 GiB arena at start (reserved, not used), so a
        // flat limit of 1 GiB would leave the stack no room to grow.
        #[cfg(target_os = "linux")]
        {
            let mapped = mapped_bytes().unwrap_or(0);
            let limit = mapped.saturating_add(kb_mcp::engine::CHILD_MEMORY_MAX);
            if Resource::AS.set(limit, limit).is_err() {
                eprintln!("kb-extract-pdf: cannot set the memory limit");
                return ExitCode::from(2);
            }
        }
    }
    let mut bytes = Vec::new();
    if std::io::stdin().lock().take(PDF_MAX_BYTES + 1).read_to_end(&mut bytes).is_err() {
        eprintln!("kb-extract-pdf: cannot read the PDF from stdin");
        return ExitCode::from(2);
    }
    let answer = extract_pdf_child(&bytes);
    let mut out = std::io::stdout().lock();
    if out.write_all(&answer).and_then(|()| out.flush()).is_err() {
        return ExitCode::from(2);
    }
    ExitCode::SUCCESS
}
