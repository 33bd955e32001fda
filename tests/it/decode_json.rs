//! Decoding JSON payloads against the official readers' decoded output.
