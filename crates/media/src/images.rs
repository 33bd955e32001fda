//! Camera images: compressed (JPEG, PNG) and raw pixel encodings.
