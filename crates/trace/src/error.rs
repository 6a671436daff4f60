//! The one error type of trace input: where (file, record number or line) and what was expected.

use std::fmt;

/// Where in the input an error was found.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum At {
    /// The file as a whole (cannot be opened, empty, unknown format).
    File,
    /// The header of a binary trace.
    Header,
    /// Record number (1-based) of a binary trace.
    Record(u64),
    /// Line number (1-based) of a CSV trace.
    Line(u64),
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TraceError {
    pub file: String,
    pub at: At,
    pub message: String,
}

impl TraceError {
    pub fn new(file: &str, at: At, message: impl Into<String>) -> TraceError {
        TraceError { file: file.to_string(), at, message: message.into() }
    }
}

impl fmt::Display for TraceError {
    fn fmt(&self, f: &mut fmt::Formatter) -> fmt::Result {
        match self.at {
            At::File => write!(f, "{}: {}", self.file, self.message),
            At::Header => write!(f, "{}: header: {}", self.file, self.message),
            At::Record(n) => write!(f, "{}: record {}: {}", self.file, n, self.message),
            At::Line(n) => write!(f, "{}:{}: {}", self.file, n, self.message),
        }
    }
}

impl std::error::Error for TraceError {}
