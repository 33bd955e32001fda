//! What an episode holds until it is kept: its data rows and each camera's
//! encoded frames, in files of their own in the dataset's temporary
//! directory. When the episode ends well they are copied into the dataset's
//! data and video files; an episode that is skipped (`skip_bad_episodes`)
//! is dropped by deleting them. Memory holds one batch of rows and, per
//! camera, the frames queued for its encoder thread; the disk holds at most
//! one episode's data rows and encoded video.

use std::fs::File;
use std::io::{BufReader, BufWriter, Read, Write};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::mpsc::{Receiver, SyncSender, sync_channel};
use std::thread::JoinHandle;

use arrow_array::RecordBatch;
use arrow_ipc::reader::StreamReader;
use arrow_ipc::writer::StreamWriter;
use arrow_schema::SchemaRef;
use logsql_media::images::Pixels;
use logsql_media::video::{EncodedFrame, H264Encoder, VideoOptions, Yuv420};

use crate::error::{Error, Result};
use crate::lerobot::files::create_new;

fn io(path: &Path, e: impl std::fmt::Display) -> Error {
    Error::Write(format!("LeRobot dataset: staging {}: {e}", path.display()))
}

/// The data rows of the current episode (Arrow IPC stream).
pub struct DataStage {
    path: PathBuf,
    writer: StreamWriter<BufWriter<File>>,
}

impl DataStage {
    /// A new stage at `path` for rows of `schema`.
    pub fn create(path: PathBuf, schema: &SchemaRef) -> Result<Self> {
        let file = create_new(&path).map_err(|e| io(&path, e))?;
        let writer =
            StreamWriter::try_new(BufWriter::new(file), schema).map_err(|e| io(&path, e))?;
        Ok(Self { path, writer })
    }

    /// Adds a batch of rows.
    pub fn write(&mut self, batch: &RecordBatch) -> Result<()> {
        self.writer.write(batch).map_err(|e| io(&self.path, e))
    }

    /// Calls `each` with the staged batches in order, then deletes the stage.
    pub fn drain(mut self, mut each: impl FnMut(&RecordBatch) -> Result<()>) -> Result<()> {
        self.writer.finish().map_err(|e| io(&self.path, e))?;
        drop(self.writer);
        let file = File::open(&self.path).map_err(|e| io(&self.path, e))?;
        let reader =
            StreamReader::try_new(BufReader::new(file), None).map_err(|e| io(&self.path, e))?;
        for batch in reader {
            each(&batch.map_err(|e| io(&self.path, e))?)?;
        }
        let _ = std::fs::remove_file(&self.path);
        Ok(())
    }

    /// Deletes the stage (the episode is skipped).
    pub fn discard(self) {
        let path = self.path.clone();
        drop(self);
        let _ = std::fs::remove_file(path);
    }
}

/// One camera's frames of the current episode, encoded by an encoder of its
/// own (so the episode starts with a key frame and its parameter sets), in
/// a file of records `[key frame: u8][length: u32 LE][sample]`.
///
/// The frames are converted and encoded on a thread of the stage's own, so
/// that each camera's encoding runs beside the query and the other cameras;
/// [`VideoStage::push`] waits only when [`FRAMES_IN_FLIGHT`] frames are
/// already queued. A frame pushed again (a camera slower than the dataset's
/// frame rate repeats its latest image) is converted once.
pub struct VideoStage {
    path: PathBuf,
    frames: Option<SyncSender<Arc<Pixels>>>,
    worker: Option<JoinHandle<Result<StagedVideo>>>,
}

/// Frames queued for a camera's encoder thread, at most.
pub const FRAMES_IN_FLIGHT: usize = 4;

impl VideoStage {
    /// A new stage at `path` for `width` x `height` frames of the camera
    /// `label` names (in warnings).
    pub fn create(
        path: PathBuf,
        width: u32,
        height: u32,
        options: VideoOptions,
        label: String,
    ) -> Result<Self> {
        let encoder =
            H264Encoder::new(width, height, options).map_err(|e| Error::Write(e.to_string()))?;
        let file = create_new(&path).map_err(|e| io(&path, e))?;
        let staged = StagedVideo {
            path: path.clone(),
            out: BufWriter::new(file),
            frames: 0,
            params: None,
        };
        let (tx, rx) = sync_channel(FRAMES_IN_FLIGHT);
        let worker = std::thread::Builder::new()
            .name("logsql-video".into())
            .spawn(move || staged.encode(encoder, rx, &label))
            .map_err(|e| io(&path, format!("starting the encoder thread: {e}")))?;
        Ok(Self {
            path,
            frames: Some(tx),
            worker: Some(worker),
        })
    }

    /// Queues an `rgb8` frame to be encoded and staged. An error of an
    /// earlier frame is returned here (or by [`VideoStage::finish`]).
    pub fn push(&mut self, pixels: &Arc<Pixels>) -> Result<()> {
        let sent = match &self.frames {
            Some(tx) => tx.send(Arc::clone(pixels)).is_ok(),
            None => false,
        };
        if sent {
            return Ok(());
        }
        // The thread stopped: it says why.
        self.join().map(|_| ())
    }

    /// Waits for every queued frame to be encoded.
    pub fn finish(mut self) -> Result<StagedVideo> {
        self.join()
    }

    fn join(&mut self) -> Result<StagedVideo> {
        self.frames = None;
        match self.worker.take().map(JoinHandle::join) {
            Some(Ok(staged)) => staged,
            Some(Err(_)) => Err(io(&self.path, "the encoder thread panicked")),
            None => Err(io(&self.path, "the encoder thread already stopped")),
        }
    }

    /// Deletes the stage (the episode is skipped).
    pub fn discard(mut self) {
        let _ = self.join();
        let _ = std::fs::remove_file(&self.path);
    }
}

impl Drop for VideoStage {
    /// Ends the thread (after the frames queued) without waiting for it.
    fn drop(&mut self) {
        self.frames = None;
    }
}

/// A camera's encoded frames of the episode, staged.
pub struct StagedVideo {
    path: PathBuf,
    out: BufWriter<File>,
    frames: u64,
    /// The SPS and PPS of the first frame.
    params: Option<(Vec<u8>, Vec<u8>)>,
}

impl StagedVideo {
    /// The encoder thread: converts, encodes and stages each frame received.
    fn encode(
        mut self,
        mut encoder: H264Encoder,
        frames: Receiver<Arc<Pixels>>,
        label: &str,
    ) -> Result<Self> {
        let exec = |e: logsql_media::MediaError| Error::Write(e.to_string());
        // The last frame converted, and its planes (reused for the next).
        let mut last: Option<(Arc<Pixels>, Yuv420)> = None;
        for pixels in frames {
            let yuv = match &mut last {
                Some((p, yuv)) if Arc::ptr_eq(p, &pixels) => yuv,
                Some((p, yuv)) => {
                    yuv.refill_rgb8(pixels.width, pixels.height, &pixels.data)
                        .map_err(exec)?;
                    *p = pixels;
                    yuv
                }
                None => {
                    let yuv = Yuv420::from_rgb8(pixels.width, pixels.height, &pixels.data)
                        .map_err(exec)?;
                    &mut last.insert((pixels, yuv)).1
                }
            };
            let frame = encoder.encode(yuv).map_err(exec)?;
            if let Some(drop) = encoder.take_quality_drop() {
                log::warn!(
                    "LeRobot dataset: {label}: frame {} of the episode: {drop}",
                    drop.frame
                );
            }
            self.stage(frame)?;
        }
        Ok(self)
    }

    fn stage(&mut self, frame: EncodedFrame) -> Result<()> {
        if self.params.is_none()
            && let (Some(s), Some(p)) = (&frame.sps, &frame.pps)
        {
            self.params = Some((s.clone(), p.clone()));
        }
        let len = u32::try_from(frame.sample.len())
            .map_err(|_| io(&self.path, "an encoded frame over 4 GiB"))?;
        self.out
            .write_all(&[u8::from(frame.is_sync)])
            .and_then(|()| self.out.write_all(&len.to_le_bytes()))
            .and_then(|()| self.out.write_all(&frame.sample))
            .map_err(|e| io(&self.path, e))?;
        self.frames += 1;
        Ok(())
    }

    /// The SPS and PPS of the episode's first frame.
    pub fn parameter_sets(&self) -> Option<(&[u8], &[u8])> {
        self.params
            .as_ref()
            .map(|(s, p)| (s.as_slice(), p.as_slice()))
    }

    /// Calls `each` with the frame number and frame of every staged frame
    /// in order (the first carrying the parameter sets), then deletes the
    /// stage.
    pub fn drain(mut self, mut each: impl FnMut(u64, EncodedFrame) -> Result<()>) -> Result<()> {
        self.out.flush().map_err(|e| io(&self.path, e))?;
        let file = File::open(&self.path).map_err(|e| io(&self.path, e))?;
        let mut r = BufReader::new(file);
        for k in 0..self.frames {
            let mut head = [0u8; 5];
            r.read_exact(&mut head).map_err(|e| io(&self.path, e))?;
            let len = u32::from_le_bytes([head[1], head[2], head[3], head[4]]) as usize;
            // Our own record: its length was the sample's.
            let mut sample = vec![0u8; len];
            r.read_exact(&mut sample).map_err(|e| io(&self.path, e))?;
            let (sps, pps) = match (k, &self.params) {
                (0, Some((s, p))) => (Some(s.clone()), Some(p.clone())),
                _ => (None, None),
            };
            each(
                k,
                EncodedFrame {
                    sample,
                    is_sync: head[0] == 1,
                    sps,
                    pps,
                },
            )?;
        }
        let _ = std::fs::remove_file(&self.path);
        Ok(())
    }
}
