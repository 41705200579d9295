//! Errors in a topology's experiment section, found before virtual time starts.

#[derive(Debug, thiserror::Error)]
pub enum ExperimentError {
    #[error("experiment: {0}")]
    Parse(String),
    #[error("experiment.{field}: unknown host '{host}'")]
    UnknownHost { field: String, host: String },
}
