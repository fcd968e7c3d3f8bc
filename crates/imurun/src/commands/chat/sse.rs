//! Reading a `text/event-stream` body: bytes in, whole messages out. Only what the server's
//! stream uses is kept: `data:` lines (joined with newlines), `id:`, and `:` comments (the
//! heartbeat), which are skipped.

/// Longest message kept, in bytes. The server's events are a few kilobytes at most (long
/// arguments are cut to 2,000 characters); a bigger message is dropped, not buffered.
pub(crate) const SSE_MESSAGE_BYTES_MAX: usize = 1 << 20;

/// One message of the stream.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct SseMessage {
    /// The `id:` of the message, if it had one; the hub's own notices have none.
    pub(crate) id: Option<String>,
    pub(crate) data: String,
}

/// Turns chunks of the body, cut anywhere, into messages.
#[derive(Debug, Default)]
pub(crate) struct SseParser {
    line: Vec<u8>,
    data: String,
    has_data: bool,
    id: Option<String>,
    /// The message being read grew past the bound: it is skipped up to its blank line.
    oversized: bool,
}

impl SseParser {
    /// Reads `bytes` and returns the messages they complete.
    pub(crate) fn feed(&mut self, bytes: &[u8]) -> Vec<SseMessage> {
        let mut messages = Vec::new();
        for &byte in bytes {
            if byte == b'\n' {
                let mut line = std::mem::take(&mut self.line);
                if line.last() == Some(&b'\r') {
                    line.pop();
                }
                messages.extend(self.line_done(&line));
            } else if self.line.len() < SSE_MESSAGE_BYTES_MAX {
                self.line.push(byte);
            } else {
                self.oversized = true;
            }
        }
        messages
    }

    fn line_done(&mut self, line: &[u8]) -> Option<SseMessage> {
        if line.is_empty() {
            let data = std::mem::take(&mut self.data);
            let has_data = std::mem::take(&mut self.has_data);
            let oversized = std::mem::take(&mut self.oversized);
            let id = self.id.take();
            return (has_data && !oversized).then_some(SseMessage { id, data });
        }
        if line.starts_with(b":") {
            return None;
        }
        let text = String::from_utf8_lossy(line);
        let (field, value) = match text.split_once(':') {
            Some((field, value)) => (field, value.strip_prefix(' ').unwrap_or(value)),
            None => (text.as_ref(), ""),
        };
        match field {
            "data" => {
                if self.has_data {
                    self.data.push('\n');
                }
                self.data.push_str(value);
                self.has_data = true;
                if self.data.len() > SSE_MESSAGE_BYTES_MAX {
                    self.oversized = true;
                    self.data.clear();
                }
            }
            "id" => self.id = Some(value.to_owned()),
            _ => {}
        }
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn check(chunks: &[&str], expect: &[(Option<&str>, &str)]) {
        let mut parser = SseParser::default();
        let messages: Vec<SseMessage> = chunks
            .iter()
            .flat_map(|chunk| parser.feed(chunk.as_bytes()))
            .collect();
        let expect: Vec<SseMessage> = expect
            .iter()
            .map(|(id, data)| SseMessage {
                id: id.map(str::to_owned),
                data: (*data).to_owned(),
            })
            .collect();
        assert_eq!(messages, expect, "{chunks:?}");
    }

    #[test]
    fn messages_are_read_whatever_the_chunks() {
        check(
            &["id: 1\ndata: {\"type\":\"token\"}\n\n"],
            &[(Some("1"), "{\"type\":\"token\"}")],
        );
        check(
            &["id: 4", "2\r\nda", "ta: {}\r", "\n\r\n"],
            &[(Some("42"), "{}")],
        );
        check(&["data: a\ndata: b\n\n"], &[(None, "a\nb")]);
    }

    #[test]
    fn heartbeats_and_unknown_fields_are_skipped() {
        check(
            &[": heartbeat\n\n", "event: x\nretry: 10\n\n", "data:{}\n\n"],
            &[(None, "{}")],
        );
    }

    #[test]
    fn an_oversized_message_is_dropped_and_the_next_one_read() {
        let big = format!("data: {}\n\n", "x".repeat(SSE_MESSAGE_BYTES_MAX + 10));
        check(&[&big, "id: 2\ndata: ok\n\n"], &[(Some("2"), "ok")]);
    }
}
