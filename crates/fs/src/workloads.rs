//! Host workloads of the source documents.
