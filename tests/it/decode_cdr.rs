//! Decoding ROS 2 message definitions and CDR payloads against the official readers' decoded output.
