//! The line transport rmcp reads from: one message per line from stdin, the
//! lines it cannot process answered here, and one writer task that owns stdout.

use std::sync::Arc;
use std::time::Instant;

use rmcp::RoleServer;
use rmcp::model::JsonRpcMessage;
use rmcp::service::{RxJsonRpcMessage, TxJsonRpcMessage};
use rmcp::transport::Transport;
use serde_json::json;
use tokio::io::{AsyncBufRead, AsyncBufReadExt, AsyncRead, AsyncWrite, AsyncWriteExt, BufReader};
use tokio::sync::mpsc;
use tokio::task::JoinHandle;

use super::classify::{Verdict, classify};
use crate::server::log;
use crate::server::rpc::{INVALID_REQUEST, IdField, MessageScan, Reply, Scanned};
use crate::server::timing::{Sending, Timings};

/// The longest line read (one message); a longer one is answered with an error
/// carrying its id, read from the line as it streams past, and skipped. 16 MiB
/// holds any one proposal at the default cap (2 MiB) even with every character
/// escaped (`\u00e9`, 6 bytes for 2); a batch of 100 large notes can pass it,
/// and is told to come as several batches. (A larger limit would let one line
/// hold several times its size in memory while it is parsed twice.)
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
        oversized: None,
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
    line: Vec<u8>,
    /// The line being read is over [`MAX_LINE_BYTES`]: scanned for its id as
    /// it streams past, not kept.
    oversized: Option<Oversized>,
    /// An answer of ours not yet queued for stdout.
    pending: Option<Vec<u8>>,
    out: mpsc::Sender<Outgoing>,
    timings: Arc<Timings>,
}

/// A line over the limit, as far as it has been read.
struct Oversized {
    scan: MessageScan,
    bytes: usize,
}

/// One line read from stdin.
enum Read {
    Line(Vec<u8>),
    /// A line over [`MAX_LINE_BYTES`]: what its scan found, and its length.
    Oversized(Scanned, usize),
}

impl<R: AsyncBufRead + Unpin + Send> LineTransport<R> {
    /// The next line, `None` at the end of input. Cancel-safe: bytes already read
    /// stay in `self.line` (or in the scan of an oversized line).
    async fn next_line(&mut self) -> Option<std::io::Result<Read>> {
        loop {
            let available = match self.reader.fill_buf().await {
                Ok(available) => available,
                Err(error) => return Some(Err(error)),
            };
            if available.is_empty() {
                // The end of input; a last line without a newline still counts.
                if let Some(over) = self.oversized.take() {
                    return Some(Ok(Read::Oversized(over.scan.finish(), over.bytes)));
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
            match &mut self.oversized {
                Some(over) => {
                    over.scan.feed(chunk);
                    over.bytes += chunk.len();
                }
                None if self.line.len() + chunk.len() > MAX_LINE_BYTES => {
                    let mut scan = MessageScan::default();
                    scan.feed(&self.line);
                    scan.feed(chunk);
                    let bytes = self.line.len() + chunk.len();
                    self.oversized = Some(Oversized { scan, bytes });
                    self.line = Vec::new();
                }
                None => self.line.extend_from_slice(chunk),
            }
            self.reader.consume(used);
            if ended {
                if let Some(over) = self.oversized.take() {
                    return Some(Ok(Read::Oversized(over.scan.finish(), over.bytes)));
                }
                return Some(Ok(Read::Line(std::mem::take(&mut self.line))));
            }
        }
    }

    /// Answers a line over the limit with its id, read by the scan; a
    /// notification or response that large is dropped (never answered).
    fn oversized(&mut self, scanned: Scanned, bytes: usize) {
        if scanned.needs_no_answer() {
            log(
                json!({ "event": "rpc_dropped", "why": "oversized_notification_or_response", "bytes": bytes }),
            );
            return;
        }
        let id = match scanned.id {
            IdField::Sent(id) => Some(id),
            _ => None,
        };
        let message = format!(
            "the message is {:.1} MiB, over the {} MiB limit of one message on stdio; nothing was done. Send it \
             in parts: a propose_batch as several smaller batches, a long text as several proposals or patches",
            bytes as f64 / f64::from(1 << 20),
            MAX_LINE_BYTES >> 20
        );
        let data = json!({ "limit_bytes": MAX_LINE_BYTES, "bytes": bytes });
        self.answer(Reply::error(id, INVALID_REQUEST, &message).with_data(data), "oversized");
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
            let line = match self.next_line().await {
                Some(Ok(Read::Line(line))) => line,
                Some(Ok(Read::Oversized(scanned, bytes))) => {
                    self.oversized(scanned, bytes);
                    continue;
                }
                Some(Err(error)) => {
                    log(json!({ "event": "stdin_failed", "error": error.to_string() }));
                    return None;
                }
                None => return None,
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
                Verdict::Answer { reply, why } => self.answer(reply, why),
            }
        }
    }

    async fn close(&mut self) -> Result<(), Self::Error> {
        Ok(())
    }
}

impl<R> LineTransport<R> {
    /// Queues an answer of ours (sent before the next line is read) and logs it.
    fn answer(&mut self, reply: Reply, why: &str) {
        reply.log(why);
        self.pending = Some(line_of(&reply));
    }
}

/// An answer of ours as a line for stdout.
fn line_of(reply: &Reply) -> Vec<u8> {
    let mut line = reply.line().into_bytes();
    line.push(b'\n');
    line
}
