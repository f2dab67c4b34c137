//! `audit.jsonl`: one JSON record a line, appended; each batch is written
//! whole and `fsync`ed before any of its requests is released.

use std::fs::{File, OpenOptions};
use std::io::Write;

use super::{AuditRecord, AuditStore};

#[derive(Debug)]
pub struct JsonlStore {
    path: String,
    file: File,
    buffer: Vec<u8>,
}

impl JsonlStore {
    pub fn open(path: &str) -> Result<JsonlStore, String> {
        let file = OpenOptions::new()
            .create(true)
            .append(true)
            .open(path)
            .map_err(|err| format!("audit.jsonl `{path}`: {err}"))?;
        Ok(JsonlStore {
            path: path.to_owned(),
            file,
            buffer: Vec::new(),
        })
    }
}

impl AuditStore for JsonlStore {
    fn write(&mut self, batch: &[AuditRecord]) -> Result<(), String> {
        self.buffer.clear();
        for record in batch {
            serde_json::to_writer(&mut self.buffer, record).map_err(|e| e.to_string())?;
            self.buffer.push(b'\n');
        }
        let fail = |err: std::io::Error| format!("audit.jsonl `{}`: {err}", self.path);
        self.file.write_all(&self.buffer).map_err(fail)?;
        self.file.sync_data().map_err(fail)
    }
}
