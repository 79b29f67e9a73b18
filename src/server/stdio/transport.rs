//! The line transport rmcp reads from: one message per line from stdin, the
//! lines it cannot process answered here, and one writer task that owns stdout.

use std::sync::Arc;
use std::time::Instant;

use rmcp::RoleServer;
use rmcp::model::JsonRpcMessage;
use rmcp::service::{RxJsonRpcMessage, TxJsonRpcMessage};
use rmcp::transport::Transport;
use serde_json::{Value, json};
use tokio::io::{AsyncBufRead, AsyncBufReadExt, AsyncRead, AsyncWrite, AsyncWriteExt, BufReader};
use tokio::sync::mpsc;
use tokio::task::JoinHandle;

use super::classify::{INVALID_REQUEST, Verdict, classify, refusal};
use crate::server::log;
use crate::server::timing::{Sending, Timings};

/// The longest line read (one message); longer ones are answered with an error and skipped.
const MAX_LINE_BYTES: usize = 16 << 20;

/// Answers waiting for stdout; a client that stops reading slows the reading down.
const QUEUE: usize = 64;

/// A line for stdout, and the timing of the request it answers (debug log only).
type Outgoing = (Vec<u8>, Option<Sending>);

/// The stdio transport over `read` and `write`, and the task writing to `write`
/// (await it after the service ends, so the last answers reach the client).
/// Requests and answers are noted in `timings` for the debug log.
pub(in crate::server) fn transport<R, W>(
    read: R,
    write: W,
    timings: Arc<Timings>,
) -> (LineTransport<BufReader<R>>, JoinHandle<()>)
where
    R: AsyncRead + Unpin + Send,
    W: AsyncWrite + Unpin + Send + 'static,
{
    let (out, lines) = mpsc::channel(QUEUE);
    let writer = tokio::spawn(write_lines(lines, write));
    let transport = LineTransport {
        reader: BufReader::new(read),
        line: Vec::new(),
        oversized: false,
        pending: None,
        out,
        timings,
    };
    (transport, writer)
}

async fn write_lines<W: AsyncWrite + Unpin>(mut lines: mpsc::Receiver<Outgoing>, mut write: W) {
    while let Some((line, timing)) = lines.recv().await {
        if let Err(error) = async {
            write.write_all(&line).await?;
            write.flush().await
        }
        .await
        {
            log(json!({ "event": "stdout_closed", "error": error.to_string() }));
            return;
        }
        if let Some(timing) = timing {
            timing.written();
        }
    }
}

/// rmcp's transport for the stdio server (see the module docs).
pub(in crate::server) struct LineTransport<R> {
    reader: R,
    /// The line being read: kept here because a read may be cancelled and resumed.
    pub(super) line: Vec<u8>,
    /// The line being read is over [`MAX_LINE_BYTES`]: skipping to its end.
    oversized: bool,
    /// An answer of ours not yet queued for stdout.
    pending: Option<Vec<u8>>,
    pub(super) out: mpsc::Sender<Outgoing>,
    timings: Arc<Timings>,
}

/// One line read from stdin.
enum Read {
    Line(Vec<u8>),
    Oversized,
}

impl<R: AsyncBufRead + Unpin + Send> LineTransport<R> {
    /// The next line, `None` at the end of input. Cancel-safe: bytes already read
    /// stay in `self.line`.
    async fn next_line(&mut self) -> Option<std::io::Result<Read>> {
        loop {
            let available = match self.reader.fill_buf().await {
                Ok(available) => available,
                Err(error) => return Some(Err(error)),
            };
            if available.is_empty() {
                // The end of input; a last line without a newline still counts.
                if self.oversized {
                    self.oversized = false;
                    return Some(Ok(Read::Oversized));
                }
                if self.line.is_empty() {
                    return None;
                }
                return Some(Ok(Read::Line(std::mem::take(&mut self.line))));
            }
            let (chunk, used, ended) = match available.iter().position(|&b| b == b'\n') {
                Some(at) => (&available[..at], at + 1, true),
                None => (available, available.len(), false),
            };
            if !self.oversized {
                if self.line.len() + chunk.len() > MAX_LINE_BYTES {
                    self.oversized = true;
                    self.line = Vec::new();
                } else {
                    self.line.extend_from_slice(chunk);
                }
            }
            self.reader.consume(used);
            if ended {
                if std::mem::take(&mut self.oversized) {
                    return Some(Ok(Read::Oversized));
                }
                return Some(Ok(Read::Line(std::mem::take(&mut self.line))));
            }
        }
    }
}

impl<R: AsyncBufRead + Unpin + Send> Transport<RoleServer> for LineTransport<R> {
    type Error = std::io::Error;

    fn send(
        &mut self,
        item: TxJsonRpcMessage<RoleServer>,
    ) -> impl Future<Output = Result<(), Self::Error>> + Send + 'static {
        let out = self.out.clone();
        let answered = match &item {
            JsonRpcMessage::Response(response) => self.timings.answered(&response.id),
            JsonRpcMessage::Error(error) => error.id.as_ref().and_then(|id| self.timings.answered(id)),
            _ => None,
        };
        let started = Instant::now();
        let line = serde_json::to_vec(&item).map(|mut line| {
            line.push(b'\n');
            line
        });
        let timing = match (&line, answered) {
            (Ok(line), Some(open)) => Some(Sending::new(open, started.elapsed(), line.len())),
            _ => None,
        };
        async move {
            let line = line.map_err(std::io::Error::other)?;
            out.send((line, timing))
                .await
                .map_err(|_| std::io::Error::new(std::io::ErrorKind::BrokenPipe, "stdout is closed"))
        }
    }

    async fn receive(&mut self) -> Option<RxJsonRpcMessage<RoleServer>> {
        loop {
            if self.pending.is_some() {
                let permit = self.out.reserve().await.ok()?;
                if let Some(answer) = self.pending.take() {
                    permit.send((answer, None));
                }
            }
            let line = match self.next_line().await? {
                Ok(Read::Line(line)) => line,
                Ok(Read::Oversized) => {
                    let message = format!(
                        "the message is larger than {} MiB; send smaller requests",
                        MAX_LINE_BYTES >> 20
                    );
                    self.answer(refusal(Value::Null, INVALID_REQUEST, &message), "oversized", &Value::Null);
                    continue;
                }
                Err(error) => {
                    log(json!({ "event": "stdin_failed", "error": error.to_string() }));
                    return None;
                }
            };
            match classify(&line) {
                Verdict::Forward(message) => {
                    if let JsonRpcMessage::Request(request) = &*message {
                        self.timings.arrived(&request.id, request.request.method());
                    }
                    return Some(*message);
                }
                Verdict::Skip => {}
                Verdict::Drop { why } => {
                    log(json!({ "event": "rpc_dropped", "why": why, "bytes": line.len() }));
                }
                Verdict::Answer { response, why, id } => self.answer(response, why, &id),
            }
        }
    }

    async fn close(&mut self) -> Result<(), Self::Error> {
        Ok(())
    }
}

impl<R> LineTransport<R> {
    /// Queues an answer of ours (sent before the next line is read) and logs it.
    fn answer(&mut self, response: Value, why: &str, id: &Value) {
        let code = match response.get("error") {
            Some(error) => error["code"].clone(),
            None => serde_json::from_value(response["result"].clone())
                .map_or(Value::Null, |result| json!(crate::tools::error_code(&result))),
        };
        let mut event = json!({ "event": "rpc_refused", "why": why, "code": code });
        if loggable(id) {
            event["id"] = id.clone();
        }
        log(event);
        let mut line = response.to_string().into_bytes();
        line.push(b'\n');
        self.pending = Some(line);
    }
}

/// Whether an id is short enough to log (a client could send megabytes as an id).
fn loggable(id: &Value) -> bool {
    match id {
        Value::String(s) => s.len() <= 128,
        Value::Number(_) | Value::Null => true,
        _ => false,
    }
}
