//! Decoding ROS1 message definitions payloads against the official readers' decoded output.
