//! Cutting a dataset into batches of whole lines, read straight into the
//! batches' own reused buffers: no copy through a second buffer, and no
//! allocation once every batch has been used.

use std::io::{self, Read};

use serde_json::value::RawValue;

use crate::batch::Batch;

/// How big batches and lines may be.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Sizes {
    /// Bytes a batch reads (its buffer grows only for a longer line).
    pub(crate) batch: usize,
    /// The longest line kept; a longer one keeps its first bytes (it is
    /// then not valid JSON) and the rest is skipped, so memory stays
    /// bounded.
    pub(crate) max_line: usize,
}

/// JSON lines from a stream, batch after batch.
pub(crate) struct LineReader<R> {
    input: R,
    sizes: Sizes,
    /// The unfinished last line of the previous batch.
    carry: Vec<u8>,
    /// Dropping the rest of an over-long line, up to its end.
    skipping: bool,
    eof: bool,
    /// Lines numbered so far.
    number: u64,
}

impl<R: Read> LineReader<R> {
    pub(crate) fn new(input: R, sizes: Sizes) -> Self {
        LineReader {
            input,
            sizes,
            carry: Vec::new(),
            skipping: false,
            eof: false,
            number: 0,
        }
    }

    /// Fill `batch` with the next whole lines; `false` at the end of the
    /// input.
    pub(crate) fn fill(&mut self, batch: &mut Batch) -> io::Result<bool> {
        if self.eof && self.carry.is_empty() {
            return Ok(false);
        }
        let max_line = self.sizes.max_line;
        batch.lines.clear();
        let wanted = self.sizes.batch.max(self.carry.len() + 1);
        if batch.data.len() > 4 * wanted {
            // Grown for a long line: back to the usual size.
            batch.data = Vec::new();
        }
        if batch.data.len() < wanted {
            batch.data.resize(wanted, 0);
        }
        let data = &mut batch.data;
        let mut filled = self.carry.len();
        data[..filled].copy_from_slice(&self.carry);
        let mut bytes = filled as u64;
        self.carry.clear();
        loop {
            while filled < data.len() && !self.eof {
                let n = match self.input.read(&mut data[filled..]) {
                    Ok(0) => {
                        self.eof = true;
                        break;
                    }
                    Ok(n) => n,
                    Err(err) if err.kind() == io::ErrorKind::Interrupted => continue,
                    Err(err) => return Err(err),
                };
                bytes += n as u64;
                if !self.skipping {
                    filled += n;
                } else if let Some(end) = memchr::memchr(b'\n', &data[filled..filled + n]) {
                    // The end of an over-long line: what follows is kept.
                    self.skipping = false;
                    data.copy_within(filled + end + 1..filled + n, filled);
                    filled += n - end - 1;
                }
            }
            if self.eof {
                break;
            }
            // Whole lines go now; an unfinished last line waits for the
            // next batch.
            if let Some(end) = memchr::memrchr(b'\n', &data[..filled]) {
                self.carry.extend_from_slice(&data[end + 1..filled]);
                bytes -= self.carry.len() as u64;
                filled = end + 1;
                break;
            }
            // One unfinished line fills the buffer.
            if filled >= max_line {
                filled = max_line;
                self.skipping = true;
                break;
            }
            let grown = (data.len() * 2).min(max_line);
            data.resize(grown, 0);
        }
        batch.filled = filled;
        batch.bytes = bytes;
        batch.first = self.number + 1;
        let mut start = 0;
        for end in memchr::memchr_iter(b'\n', &data[..filled]) {
            batch.lines.push((start, end.min(start + max_line)));
            start = end + 1;
        }
        if start < filled {
            batch.lines.push((start, filled.min(start + max_line)));
        }
        self.number += batch.lines.len() as u64;
        Ok(filled > 0 || bytes > 0)
    }
}

/// The elements of a JSON array, batch after batch, numbered from 1.
pub(crate) struct ItemReader<'a> {
    items: std::slice::Iter<'a, &'a RawValue>,
    sizes: Sizes,
    number: u64,
}

impl<'a> ItemReader<'a> {
    pub(crate) fn new(items: &'a [&'a RawValue], sizes: Sizes) -> Self {
        ItemReader {
            items: items.iter(),
            sizes,
            number: 0,
        }
    }

    /// Fill `batch` with the next elements; `false` after the last.
    pub(crate) fn fill(&mut self, batch: &mut Batch) -> bool {
        batch.lines.clear();
        batch.data.clear();
        for item in self.items.by_ref() {
            let start = batch.data.len();
            batch.data.extend_from_slice(item.get().as_bytes());
            batch.lines.push((start, batch.data.len()));
            // An element may span lines: lines are where `lines` says.
            batch.data.push(b'\n');
            if batch.data.len() >= self.sizes.batch {
                break;
            }
        }
        batch.filled = batch.data.len();
        batch.bytes = batch.filled as u64;
        batch.first = self.number + 1;
        self.number += batch.lines.len() as u64;
        !batch.lines.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use std::io::{BufReader, Cursor};

    use super::{LineReader, Sizes};
    use crate::batch::Batch;

    /// Every line the reader cuts `text` into, numbered, and the input
    /// bytes its batches stand for.
    fn lines(text: &str, capacity: usize, sizes: Sizes) -> (Vec<(u64, String)>, u64) {
        let input = BufReader::with_capacity(capacity, Cursor::new(text.to_owned()));
        let mut reader = LineReader::new(input, sizes);
        let mut batch = Batch::default();
        let (mut lines, mut bytes) = (Vec::new(), 0);
        while reader.fill(&mut batch).unwrap() {
            bytes += batch.bytes;
            for (at, &(start, end)) in batch.lines.iter().enumerate() {
                let text = String::from_utf8(batch.data[start..end].to_vec()).unwrap();
                lines.push((batch.first + at as u64, text));
            }
        }
        (lines, bytes)
    }

    #[test]
    fn an_over_long_line_keeps_its_head_and_the_next_line_survives() {
        let long = "x".repeat(1000);
        let text = format!("short\n{long}\nafter\n");
        let expected = [
            (1, "short".to_owned()),
            (2, "x".repeat(10)),
            (3, "after".to_owned()),
        ];
        for batch in [4, 7, 64, 4096] {
            for capacity in [3, 64, 4096] {
                let sizes = Sizes {
                    batch,
                    max_line: 10,
                };
                let (lines, bytes) = lines(&text, capacity, sizes);
                assert_eq!(lines, expected, "batches of {batch}, reads of {capacity}");
                assert_eq!(bytes, text.len() as u64, "every input byte is counted");
            }
        }
    }

    #[test]
    fn lines_longer_than_a_batch_grow_it_and_blank_lines_are_numbered() {
        let text = "a\n\nbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb\n\r\nlast without an end";
        for batch in [1, 2, 5, 8, 1000] {
            let sizes = Sizes {
                batch,
                max_line: 1 << 20,
            };
            let (lines, bytes) = lines(text, 4, sizes);
            let want: Vec<(u64, String)> = text
                .split('\n')
                .enumerate()
                .map(|(at, line)| (at as u64 + 1, line.to_owned()))
                .collect();
            assert_eq!(lines, want, "batches of {batch}");
            assert_eq!(bytes, text.len() as u64);
        }
    }
}
