//! Running the PDF text extractor in a child process: the PDF's bytes on its
//! stdin, its answer (JSON) on its stdout, a wall-clock limit after which it
//! is killed, and what its death means (out of memory, out of stack, out of
//! CPU time) read from how it ended and the last words on its stderr.
//!
//! The child is one of kb-mcp's own binaries run again with its hidden
//! `extract-pdf` command: it sets its own memory and CPU limits (RLIMIT_AS,
//! RLIMIT_CPU on Unix) before it reads a byte, and never touches the disk
//! (the parent read the file through the sandbox). On Windows only the wall
//! clock bounds it. A PDF parser in a child can abort, loop or allocate
//! without end and take nothing down with it.

use std::io::{Read, Write};
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// Most bytes of the child's stdout read (its JSON answer).
const STDOUT_MAX: u64 = 64 * 1024 * 1024;

/// Most bytes of the child's stderr kept (its last words).
const STDERR_MAX: u64 = 64 * 1024;

/// Runs `program args…` with `input` on its stdin and returns its stdout when
/// it exits successfully within `timeout`; why not otherwise (the reason a
/// skipped PDF is listed with).
pub(crate) fn run_pdf_extractor(
    program: &Path,
    args: &[std::ffi::OsString],
    input: &[u8],
    timeout: Duration,
) -> Result<Vec<u8>, String> {
    let mut child = Command::new(program)
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .map_err(|err| format!("the text extractor could not be started ({}): {err}", program.display()))?;
    let started = Instant::now();
    let mut stdin = child.stdin.take();
    let stdout = child.stdout.take();
    let stderr = child.stderr.take();
    std::thread::scope(|scope| {
        // Fed and drained on threads of their own: a child that writes before it
        // has read everything, or dies half-way, never blocks the parent.
        let owned = input.to_vec();
        let feeder = scope.spawn(move || {
            if let Some(mut pipe) = stdin.take() {
                let _ = pipe.write_all(&owned);
            }
        });
        let out = scope.spawn(move || drain(stdout, STDOUT_MAX));
        let err = scope.spawn(move || drain(stderr, STDERR_MAX));
        let status = loop {
            match child.try_wait() {
                Ok(Some(status)) => break Some(status),
                Ok(None) if started.elapsed() >= timeout => {
                    let _ = child.kill();
                    let _ = child.wait();
                    break None;
                }
                Ok(None) => std::thread::sleep(Duration::from_millis(5)),
                Err(_) => {
                    let _ = child.kill();
                    let _ = child.wait();
                    break None;
                }
            }
        };
        let _ = feeder.join();
        let stdout = out.join().unwrap_or_default();
        let stderr = err.join().unwrap_or_default();
        let Some(status) = status else {
            return Err(format!("timed out: no text after {} s", timeout.as_secs()));
        };
        if status.success() {
            return Ok(stdout);
        }
        Err(death(&status, &String::from_utf8_lossy(&stderr)))
    })
}

fn drain(pipe: Option<impl Read>, max: u64) -> Vec<u8> {
    let mut bytes = Vec::new();
    if let Some(pipe) = pipe {
        let mut pipe = pipe.take(max);
        let _ = pipe.read_to_end(&mut bytes);
        // Whatever is past the cap is read and dropped so the child is not blocked.
        let _ = std::io::copy(&mut pipe.into_inner(), &mut std::io::sink());
    }
    bytes
}

/// Why the child ended without an answer, from its exit and its stderr.
fn death(status: &std::process::ExitStatus, stderr: &str) -> String {
    if stderr.contains("memory allocation of") || stderr.contains("out of memory") {
        return "out of memory: the text extractor went past its memory limit".to_owned();
    }
    if stderr.contains("overflowed its stack") {
        return "malformed: its objects nest too deeply (the parser ran out of stack)".to_owned();
    }
    #[cfg(unix)]
    {
        use std::os::unix::process::ExitStatusExt;
        // SIGXCPU (24 on Linux and macOS): RLIMIT_CPU reached; SIGKILL: the hard limit.
        if matches!(status.signal(), Some(24 | 9)) {
            return "timed out: the text extractor used up its CPU time".to_owned();
        }
        if status.signal() == Some(11) {
            return "malformed: the parser crashed (out of stack or memory)".to_owned();
        }
    }
    let last = stderr.lines().rev().find(|line| !line.trim().is_empty()).unwrap_or("").trim();
    let last: String = last.chars().take(300).collect();
    if last.is_empty() {
        format!("the text extractor failed ({status})")
    } else {
        format!("the text extractor failed ({status}): {last}")
    }
}
