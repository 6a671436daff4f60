//! The one error type of the workload language: a user's mistake, located.

/// A user's mistake in a workload file, with enough context to fix it.
#[derive(Clone, Debug, PartialEq)]
pub struct ConfigError {
    pub file: String,
    pub line: Option<usize>,
    pub key: String,
    pub message: String,
}

/// Always one line: a name or value echoed from the user's text may hold newlines or other
/// control characters; they are shown escaped (`\n`).
impl std::fmt::Display for ConfigError {
    fn fmt(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        let line = self.line.map(|l| format!(":{l}")).unwrap_or_default();
        let text = if self.key.is_empty() {
            format!("{}{line}: {}", self.file, self.message)
        } else {
            format!("{}{line}: {}: {}", self.file, self.key, self.message)
        };
        for c in text.chars() {
            if c.is_control() {
                write!(f, "{}", c.escape_default())?;
            } else {
                write!(f, "{c}")?;
            }
        }
        Ok(())
    }
}

impl std::error::Error for ConfigError {}
