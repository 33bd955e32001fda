//! Decoding protobuf payloads against the official readers' decoded output.
