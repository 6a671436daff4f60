//! `swaplab bench` (placeholder API).
pub fn run(_quick: bool) -> serde_json::Value {
    serde_json::json!({})
}
