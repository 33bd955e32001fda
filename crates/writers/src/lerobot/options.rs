//! The `COPY ... STORED AS LEROBOT OPTIONS (...)` keys, and the frame rate
//! they and `time_grid` take ([`parse_fps`]).

use std::collections::HashMap;

use crate::error::{Error, Result};

/// The highest frame rate [`parse_fps`] takes.
pub const MAX_FPS: f64 = 100_000.0;

/// A frame rate: a positive number of frames per second (at most
/// [`MAX_FPS`]).
pub fn parse_fps(text: &str) -> Result<f64> {
    match text.trim().parse::<f64>() {
        Ok(f) if f.is_finite() && f > 0.0 && f <= MAX_FPS => Ok(f),
        _ => Err(Error::Input(format!(
            "frame rate '{text}' is not a number of frames per second (above 0, at most {MAX_FPS})"
        ))),
    }
}

/// The known keys (without DataFusion's `format.` prefix).
pub const OPTION_KEYS: &[&str] = &[
    "fps",
    "robot_type",
    "images",
    "quality",
    "chunks_size",
    "data_files_size_in_mb",
    "video_files_size_in_mb",
    "skip_bad_episodes",
    "presorted",
];

/// How camera frames are stored.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ImageStorage {
    /// H.264 MP4 files under `videos/` (feature dtype `video`).
    Video,
    /// PNG image values in the data files (feature dtype `image`).
    Parquet,
}

/// How a LeRobot dataset is written.
#[derive(Debug, Clone, PartialEq)]
pub struct LeRobotOptions {
    /// Frames per second (required).
    pub fps: Option<f64>,
    /// `robot_type` of `meta/info.json`.
    pub robot_type: Option<String>,
    /// Where images go.
    pub images: ImageStorage,
    /// H.264 quality, 1 to 100 (see `logsql_media::video::VideoOptions`); 75 by default.
    pub quality: u8,
    /// Files per `chunk-XXX` directory.
    pub chunks_size: u64,
    /// A data file is closed at the first episode end past this size.
    pub data_files_size_in_mb: u64,
    /// A video file is closed at the first episode end past this size.
    pub video_files_size_in_mb: u64,
    /// An episode with a problem (a vector whose length changes, a frame
    /// whose size changes, a topic missing from its recording, ...) is left
    /// out and listed instead of failing the export.
    pub skip_bad_episodes: bool,
    /// The query's rows already come grouped by episode, in time order (an
    /// `ORDER BY` that DataFusion needs no sort for, but cannot prove gives
    /// `episode_index, log_time` order: episodes numbered by a window
    /// function). The writer takes them as they come instead of asking for a
    /// sort, and checks the order (an error where it does not hold).
    pub presorted: bool,
}

impl Default for LeRobotOptions {
    fn default() -> Self {
        Self {
            fps: None,
            robot_type: None,
            images: ImageStorage::Video,
            quality: 75,
            chunks_size: 1000,
            data_files_size_in_mb: 100,
            video_files_size_in_mb: 200,
            skip_bad_episodes: false,
            presorted: false,
        }
    }
}

impl LeRobotOptions {
    /// The options of `COPY ... OPTIONS (...)`; unknown keys are refused with
    /// the known ones listed.
    pub fn parse(options: &HashMap<String, String>) -> Result<Self> {
        let mut out = Self::default();
        let positive = |key: &str, v: &str| -> Result<u64> {
            match v.trim().parse::<u64>() {
                Ok(n) if n > 0 => Ok(n),
                _ => Err(Error::Options(format!(
                    "LeRobot option {key} '{v}' is not a positive whole number"
                ))),
            }
        };
        let flag = |key: &str, v: &str| -> Result<bool> {
            match v.trim().to_ascii_lowercase().as_str() {
                "true" | "1" | "yes" => Ok(true),
                "false" | "0" | "no" => Ok(false),
                _ => Err(Error::Options(format!(
                    "LeRobot option {key} '{v}' is not 'true' or 'false'"
                ))),
            }
        };
        for (key, value) in options {
            let bare = key.strip_prefix("format.").unwrap_or(key);
            match bare {
                "fps" => out.fps = Some(parse_fps(value)?),
                "robot_type" => out.robot_type = Some(value.clone()),
                "images" => {
                    out.images = match value.trim().to_ascii_lowercase().as_str() {
                        "video" => ImageStorage::Video,
                        "parquet" | "image" => ImageStorage::Parquet,
                        _ => {
                            return Err(Error::Options(format!(
                                "LeRobot option images '{value}' is not 'video' or 'parquet'"
                            )));
                        }
                    }
                }
                "quality" => {
                    out.quality = match value.trim().parse::<u8>() {
                        Ok(q) if (1..=100).contains(&q) => q,
                        _ => {
                            return Err(Error::Options(format!(
                                "LeRobot option quality '{value}' is not 1 to 100"
                            )));
                        }
                    }
                }
                "chunks_size" => out.chunks_size = positive(bare, value)?,
                "data_files_size_in_mb" => out.data_files_size_in_mb = positive(bare, value)?,
                "video_files_size_in_mb" => out.video_files_size_in_mb = positive(bare, value)?,
                "skip_bad_episodes" => out.skip_bad_episodes = flag(bare, value)?,
                "presorted" => out.presorted = flag(bare, value)?,
                _ => {
                    return Err(Error::Options(format!(
                        "unknown option '{key}' for LeRobot output (known: {})",
                        OPTION_KEYS.join(", ")
                    )));
                }
            }
        }
        Ok(out)
    }

    /// The frame rate, or the error of a `COPY` without one.
    pub fn fps(&self) -> Result<f64> {
        self.fps.ok_or_else(|| {
            Error::Input(
                "a LeRobot dataset needs its frame rate: COPY (...) TO 'dir' STORED AS LEROBOT OPTIONS (fps '30')".into(),
            )
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn frame_rates_are_positive_numbers() {
        assert_eq!(parse_fps(" 30 ").unwrap(), 30.0);
        for bad in ["0", "-1", "x", "inf", "100001"] {
            let e = parse_fps(bad).unwrap_err();
            assert!(matches!(e, Error::Input(_)), "{bad}: {e}");
            assert!(
                e.to_string()
                    .contains("is not a number of frames per second")
            );
        }
    }

    #[test]
    fn options_parse_and_refuse_what_they_do_not_know() {
        let map = |kv: &[(&str, &str)]| -> HashMap<String, String> {
            kv.iter()
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect()
        };
        let o = LeRobotOptions::parse(&map(&[
            ("format.fps", "30"),
            ("images", "parquet"),
            ("skip_bad_episodes", "yes"),
        ]))
        .unwrap();
        assert_eq!(o.fps().unwrap(), 30.0);
        assert_eq!(o.images, ImageStorage::Parquet);
        assert!(o.skip_bad_episodes);
        let e = LeRobotOptions::parse(&map(&[("quality", "0")])).unwrap_err();
        assert!(matches!(e, Error::Options(_)));
        assert!(e.to_string().contains("quality '0' is not 1 to 100"), "{e}");
        let e = LeRobotOptions::parse(&map(&[("codec", "x")])).unwrap_err();
        assert!(
            e.to_string()
                .contains("unknown option 'codec' for LeRobot output (known: fps")
        );
        let e = LeRobotOptions::default().fps().unwrap_err();
        assert!(matches!(e, Error::Input(_)));
        assert!(e.to_string().contains("OPTIONS (fps '30')"), "{e}");
    }
}
