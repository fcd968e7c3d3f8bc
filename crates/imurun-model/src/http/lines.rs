//! Reading a response body within bounds: whole (for JSON answers), line by line (for SSE
//! and NDJSON streams), or a short prefix (for error bodies), watching the stop flag while
//! the server is silent.

use imurun_core::{ModelError, StopFlag};
use reqwest::Response;
use reqwest::header::CONTENT_LENGTH;

use super::errors::chain;
use super::{ERROR_BODY_BYTES_MAX, STREAM_LINE_BYTES_MAX};

/// What a read gave: an item, the end of the body, or nothing because the stop flag was set.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Read<T> {
    Item(T),
    End,
    Stopped,
}

/// A response body read within `bytes_max` bytes in all.
#[derive(Debug)]
pub(crate) struct BodyReader {
    response: Response,
    url: String,
    bytes_read: usize,
    bytes_max: usize,
    /// Bytes received and not yet returned as lines.
    pending: Vec<u8>,
    /// `pending[..scanned]` holds no newline, so the next search starts here.
    scanned: usize,
    ended: bool,
}

impl BodyReader {
    pub(crate) fn new(response: Response, url: &str, bytes_max: usize) -> Self {
        Self {
            response,
            url: url.to_owned(),
            bytes_read: 0,
            bytes_max,
            pending: Vec::new(),
            scanned: 0,
            ended: false,
        }
    }

    /// The whole body; `Protocol` when it is longer than `bytes_max`.
    pub(crate) async fn read_all(mut self, stop: &StopFlag) -> Result<Read<Vec<u8>>, ModelError> {
        let declared = self
            .response
            .headers()
            .get(CONTENT_LENGTH)
            .and_then(|value| value.to_str().ok()?.parse::<usize>().ok());
        if declared.is_some_and(|declared| declared > self.bytes_max) {
            return Err(self.too_large());
        }
        loop {
            match self.receive(stop).await? {
                Read::Item(()) => {}
                Read::End => return Ok(Read::Item(self.pending)),
                Read::Stopped => return Ok(Read::Stopped),
            }
        }
    }

    /// The next line, without its `\n` or `\r\n`. A last line without a newline is returned
    /// before `End`. `Protocol` for a line longer than `STREAM_LINE_BYTES_MAX` or one that
    /// is not UTF-8.
    pub(crate) async fn next_line(&mut self, stop: &StopFlag) -> Result<Read<String>, ModelError> {
        loop {
            if let Some(offset) = self.pending[self.scanned..]
                .iter()
                .position(|&byte| byte == b'\n')
            {
                let end = self.scanned + offset;
                if end > STREAM_LINE_BYTES_MAX {
                    return Err(self.line_too_long());
                }
                let mut line: Vec<u8> = self.pending.drain(..=end).collect();
                line.pop();
                if line.last() == Some(&b'\r') {
                    line.pop();
                }
                self.scanned = 0;
                return self.utf8(line).map(Read::Item);
            }
            self.scanned = self.pending.len();
            if self.pending.len() > STREAM_LINE_BYTES_MAX {
                return Err(self.line_too_long());
            }
            if self.ended {
                if self.pending.is_empty() {
                    return Ok(Read::End);
                }
                let line = std::mem::take(&mut self.pending);
                self.scanned = 0;
                return self.utf8(line).map(Read::Item);
            }
            match self.receive(stop).await? {
                Read::Item(()) => {}
                Read::End => self.ended = true,
                Read::Stopped => return Ok(Read::Stopped),
            }
        }
    }

    /// Appends the next piece of the body to `pending`, or ends when `stop` is set, even
    /// while the server is silent. Dropping `Response::chunk`'s future loses nothing: it
    /// takes a frame only when one is ready.
    async fn receive(&mut self, stop: &StopFlag) -> Result<Read<()>, ModelError> {
        let chunk = tokio::select! {
            chunk = self.response.chunk() => chunk,
            () = stop.stopped() => return Ok(Read::Stopped),
        };
        match chunk {
            Ok(Some(chunk)) => {
                self.bytes_read = self.bytes_read.saturating_add(chunk.len());
                if self.bytes_read > self.bytes_max {
                    return Err(self.too_large());
                }
                self.pending.extend_from_slice(&chunk);
                Ok(Read::Item(()))
            }
            Ok(None) => Ok(Read::End),
            Err(error) => Err(ModelError::Transport {
                message: format!(
                    "the connection to {} broke mid-response: {}",
                    self.url,
                    chain(&error)
                ),
            }),
        }
    }

    fn too_large(&self) -> ModelError {
        ModelError::Protocol {
            message: format!(
                "the response from {} is longer than {} bytes",
                self.url, self.bytes_max
            ),
        }
    }

    fn line_too_long(&self) -> ModelError {
        ModelError::Protocol {
            message: format!(
                "the stream from {} has a line longer than {STREAM_LINE_BYTES_MAX} bytes",
                self.url
            ),
        }
    }

    fn utf8(&self, line: Vec<u8>) -> Result<String, ModelError> {
        String::from_utf8(line).map_err(|_| ModelError::Protocol {
            message: format!("the stream from {} is not UTF-8", self.url),
        })
    }
}

/// The data of the next server-sent event: its `data:` lines joined with `\n`, dispatched
/// at a blank line or the end of the body. Comments (`: ...`) and the `event`, `id` and
/// `retry` fields are skipped: OpenAI-compatible servers put everything in `data`.
pub(crate) async fn next_sse_data(
    reader: &mut BodyReader,
    stop: &StopFlag,
) -> Result<Read<String>, ModelError> {
    let mut data: Option<String> = None;
    loop {
        let line = match reader.next_line(stop).await? {
            Read::Item(line) => line,
            Read::End => return Ok(data.map_or(Read::End, Read::Item)),
            Read::Stopped => return Ok(Read::Stopped),
        };
        if line.is_empty() {
            if let Some(data) = data.take() {
                return Ok(Read::Item(data));
            }
            continue;
        }
        let Some(value) = line.strip_prefix("data:") else {
            continue;
        };
        let value = value.strip_prefix(' ').unwrap_or(value);
        match &mut data {
            Some(data) => {
                data.push('\n');
                data.push_str(value);
            }
            None => data = Some(value.to_owned()),
        }
    }
}

/// Up to `ERROR_BODY_BYTES_MAX` bytes of an error response's body, as text. A body that
/// breaks off or is not UTF-8 gives what could be read: it only decorates an error.
pub(crate) async fn error_body(mut response: Response) -> String {
    let mut body = Vec::new();
    while body.len() < ERROR_BODY_BYTES_MAX {
        match response.chunk().await {
            Ok(Some(chunk)) => body.extend_from_slice(&chunk),
            Ok(None) | Err(_) => break,
        }
    }
    body.truncate(ERROR_BODY_BYTES_MAX);
    String::from_utf8_lossy(&body).into_owned()
}
