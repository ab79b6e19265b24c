//! Dates as OpenSearch speaks them (work in progress: see the date helper's task).
