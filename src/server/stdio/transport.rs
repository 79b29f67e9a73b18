//! The line transport rmcp reads from: one message per line from stdin, the
//! lines it cannot process answered here, the ids of the requests in flight
//! kept (a second request with one of them is refused; once stdin closes,
//! each is answered before the transport ends), and one writer task that owns
//! stdout.

use std::collections::HashSet;
use std::sync::Arc;
use std::time::{Duration, Instant};

use rmcp::model::{ClientNotification, JsonRpcMessage, RequestId};
use rmcp::service::{RxJsonRpcMessage, TxJsonRpcMessage};
use rmcp::transport::Transport;
use rmcp::{ErrorData, RoleServer};
use serde_json::json;
use tokio::io::{AsyncBufRead, AsyncBufReadExt, AsyncRead, AsyncWrite, AsyncWriteExt, BufReader};
use tokio::sync::mpsc;
use tokio::task::JoinHandle;

use super::classify::{Verdict, classify};
use crate::server::log;
use crate::server::rpc::{
    INTERNAL_ERROR, INVALID_REQUEST, IdField, MessageScan, Reply, Scanned, SentId, duplicate_id,
};
use crate::server::timing::{Sending, Timings};

/// The longest line read (one message); a longer one is answered with an error
/// carrying its id, read from the line as it streams past, and skipped. 16 MiB
/// holds any one proposal at the default cap (2 MiB) even with every character
/// escaped (`\u00e9`, 6 bytes for 2); a batch of 100 large notes can pass it,
/// and is told to come as several batches. (A larger limit would let one line
/// hold several times its size in memory while it is parsed twice.)
const MAX_LINE_BYTES: usize = 16 << 20;

/// Once stdin has closed, how long the requests still in flight have to finish:
/// then each is answered with an error and the transport ends.
const DRAIN: Duration = Duration::from_secs(30);

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
        in_flight: HashSet::new(),
        asked: HashSet::new(),
        closed: None,
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
    /// The client's requests handed to rmcp and not yet answered.
    in_flight: HashSet<RequestId>,
    /// The server's requests to the client (a confirmation) not yet answered.
    asked: HashSet<RequestId>,
    /// When stdin closed (or failed): no more lines come.
    closed: Option<Instant>,
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

    /// Once stdin has closed: the requests in flight are answered first (see
    /// [`DRAIN`]), then `None` ends the service. Called again after each answer
    /// rmcp sends meanwhile (it drops this future to send), so its state lives
    /// in `self`.
    async fn end_of_input(&mut self, closed: Instant) -> Option<RxJsonRpcMessage<RoleServer>> {
        // A question to the client can no longer be answered: it fails, so the
        // call waiting for it (an apply's confirmation) ends instead of waiting.
        if let Some(id) = self.asked.iter().next().cloned() {
            self.asked.remove(&id);
            let error = ErrorData::internal_error("stdin closed before the client answered", None);
            return Some(JsonRpcMessage::error(error, Some(id)));
        }
        if self.in_flight.is_empty() {
            return None;
        }
        tokio::time::sleep_until((closed + DRAIN).into()).await;
        // Past the bound: each request still in flight gets its answer here (a
        // late one from rmcp is then dropped by `send`).
        while !self.in_flight.is_empty() {
            let permit = self.out.reserve().await.ok()?;
            let Some(id) = self.in_flight.iter().next().cloned() else { break };
            self.in_flight.remove(&id);
            let message = format!(
                "stdin closed while this request was running, and it did not finish within {} s; whether it \
                 took effect is unknown: check before sending it again (list_proposals says whether an apply happened)",
                DRAIN.as_secs()
            );
            let reply = Reply::error(Some(SentId::of(&id)), INTERNAL_ERROR, &message);
            reply.log("unfinished_at_exit");
            permit.send((line_of(&reply), None));
        }
        None
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

    /// Hands rmcp a message it can process, keeping count of the requests in
    /// flight both ways; `None` when it is a request whose id is in flight
    /// already (then answered here).
    fn forward(&mut self, message: RxJsonRpcMessage<RoleServer>) -> Option<RxJsonRpcMessage<RoleServer>> {
        match &message {
            JsonRpcMessage::Request(request) => {
                if !self.in_flight.insert(request.id.clone()) {
                    self.answer(duplicate_id(SentId::of(&request.id)), "duplicate_id");
                    return None;
                }
                self.timings.arrived(&request.id, request.request.method());
            }
            JsonRpcMessage::Response(response) => {
                self.asked.remove(&response.id);
            }
            JsonRpcMessage::Error(error) => {
                if let Some(id) = &error.id {
                    self.asked.remove(id);
                }
            }
            // A cancelled request expects no answer: its id is free again.
            JsonRpcMessage::Notification(notification) => {
                if let ClientNotification::CancelledNotification(cancelled) = &notification.notification
                    && let Some(id) = &cancelled.params.request_id
                {
                    self.in_flight.remove(id);
                }
            }
        }
        Some(message)
    }
}

impl<R: AsyncBufRead + Unpin + Send> Transport<RoleServer> for LineTransport<R> {
    type Error = std::io::Error;

    fn send(
        &mut self,
        item: TxJsonRpcMessage<RoleServer>,
    ) -> impl Future<Output = Result<(), Self::Error>> + Send + 'static {
        let out = self.out.clone();
        let answers = match &item {
            JsonRpcMessage::Response(response) => Some(&response.id),
            JsonRpcMessage::Error(error) => error.id.as_ref(),
            JsonRpcMessage::Request(request) => {
                self.asked.insert(request.id.clone());
                None
            }
            JsonRpcMessage::Notification(_) => None,
        };
        // Exactly one answer per request: one whose request is no longer in
        // flight (cancelled, or answered here when stdin closed) is dropped.
        let unasked = answers.filter(|id| !self.in_flight.remove(id)).cloned();
        if let Some(id) = &unasked {
            log(
                json!({ "event": "answer_dropped", "id": SentId::of(id).loggable(), "why": "no request with this id is in flight" }),
            );
        }
        let answered = answers.and_then(|id| self.timings.answered(id));
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
            if unasked.is_some() {
                return Ok(());
            }
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
            if let Some(closed) = self.closed {
                return self.end_of_input(closed).await;
            }
            let line = match self.next_line().await {
                Some(Ok(Read::Line(line))) => line,
                Some(Ok(Read::Oversized(scanned, bytes))) => {
                    self.oversized(scanned, bytes);
                    continue;
                }
                Some(Err(error)) => {
                    log(json!({ "event": "stdin_failed", "error": error.to_string() }));
                    self.closed = Some(Instant::now());
                    continue;
                }
                None => {
                    self.closed = Some(Instant::now());
                    continue;
                }
            };
            match classify(&line) {
                Verdict::Forward(message) => {
                    if let Some(message) = self.forward(*message) {
                        return Some(message);
                    }
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
