//! The buffers of a dispatch: parameters, material filter, rays (or pairs) in and answers
//! out, with the mapped buffers that stage them on the host, kept in a pool between batches.

use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::mpsc::{Receiver, TryRecvError};

use crate::gpu::device::Device;
use crate::gpu::layout::GpuParams;
use crate::gpu::queue::Courier;

/// A dispatch's upload buffer: its parameters (at 0), the material filter and its input.
pub(super) const FILTER_AT: u64 = 256;
pub(super) const INPUT_AT: u64 = FILTER_AT + FILTER_BYTES;

/// The material filter's size: one bit per id.
pub(super) const FILTER_BYTES: u64 = 2048 * 4;

/// The buffers of one dispatch: parameters, material filter, input and output storage, the
/// mapped buffer that stages parameters, filter and input, and the one that reads the output
/// back. Sized in bytes; a batch takes a set at least as large as its dispatch needs.
#[derive(Debug)]
pub(super) struct DispatchBuffers {
    /// The set's number, unique in the process (bind groups are cached by it).
    pub(super) id: u64,
    pub(super) params: wgpu::Buffer,
    pub(super) filter: wgpu::Buffer,
    pub(super) input: wgpu::Buffer,
    pub(super) output: wgpu::Buffer,
    /// Host-writable staging, kept mapped between uses (see `upload_state`).
    pub(super) upload: wgpu::Buffer,
    pub(super) readback: wgpu::Buffer,
    /// Whether the shader reads its input from `upload` (from [`INPUT_AT`] on) and the host
    /// reads the output from `output` itself (`input` and `readback` are those buffers).
    pub(super) host_shared: bool,
    /// Two timestamps around the dispatch, resolved and read back, where the device has
    /// timestamp queries.
    pub(super) timer: Option<(wgpu::QuerySet, wgpu::Buffer, wgpu::Buffer)>,
    /// The material filter last written to `filter` (not written again while it is the same).
    pub(super) filter_words: Vec<u32>,
    upload_state: UploadState,
}

/// Where a set's upload buffer stands: mapped for writing between uses, so that staging a
/// dispatch needs no poll of the device.
#[derive(Debug)]
enum UploadState {
    /// Mapped for writing, the whole buffer.
    Mapped,
    /// The courier has asked for the mapping; done once the receiver has the outcome.
    Mapping(Receiver<Result<(), wgpu::BufferAsyncError>>),
}

impl DispatchBuffers {
    /// A set for `input` and `output` bytes. With `host_shared` (a device whose memory is the
    /// host's, with `MAPPABLE_PRIMARY_BUFFERS`) the shader reads the input where the host
    /// stages it and the host maps the output itself: no copies either way.
    fn new(
        device: &wgpu::Device,
        input: u64,
        output: u64,
        timestamps: bool,
        host_shared: bool,
    ) -> Self {
        let buf = |label, size: u64, usage, mapped_at_creation| {
            device.create_buffer(&wgpu::BufferDescriptor {
                label: Some(label),
                size: size.max(16),
                usage,
                mapped_at_creation,
            })
        };
        use wgpu::BufferUsages as U;
        let shared_usage = |u: U| if host_shared { u } else { U::empty() };
        let upload = buf(
            "upload",
            INPUT_AT + input,
            U::MAP_WRITE | U::COPY_SRC | shared_usage(U::STORAGE),
            true,
        );
        let output = buf(
            "output",
            output,
            U::STORAGE | U::COPY_SRC | U::COPY_DST | shared_usage(U::MAP_READ),
            false,
        );
        let (input, readback) = if host_shared {
            (upload.clone(), output.clone())
        } else {
            (
                buf("input", input, U::STORAGE | U::COPY_DST, false),
                buf("readback", output.size(), U::MAP_READ | U::COPY_DST, false),
            )
        };
        static NEXT_ID: AtomicU64 = AtomicU64::new(0);
        Self {
            id: NEXT_ID.fetch_add(1, Ordering::Relaxed),
            params: buf(
                "params",
                size_of::<GpuParams>() as u64,
                U::UNIFORM | U::COPY_DST,
                false,
            ),
            filter: buf("filter", FILTER_BYTES, U::UNIFORM | U::COPY_DST, false),
            input,
            output,
            upload,
            readback,
            host_shared,
            timer: timestamps.then(|| {
                (
                    device.create_query_set(&wgpu::QuerySetDescriptor {
                        label: Some("kernel time"),
                        ty: wgpu::QueryType::Timestamp,
                        count: 2,
                    }),
                    buf("timestamps", 16, U::QUERY_RESOLVE | U::COPY_SRC, false),
                    buf("timestamps readback", 16, U::MAP_READ | U::COPY_DST, false),
                )
            }),
            filter_words: Vec::new(),
            upload_state: UploadState::Mapped,
        }
    }

    /// Bytes allocated on the device.
    pub(super) fn bytes(&self) -> u64 {
        let mut buffers = vec![&self.params, &self.filter, &self.output, &self.upload];
        if !self.host_shared {
            buffers.extend([&self.input, &self.readback]);
        }
        buffers.iter().map(|b| b.size()).sum::<u64>()
            + self
                .timer
                .as_ref()
                .map_or(0, |(_, r, b)| r.size() + b.size())
    }

    fn fits(&self, input: u64, output: u64) -> bool {
        self.upload.size() >= INPUT_AT + input && self.output.size() >= output
    }

    /// Whether the upload buffer is mapped (checked without waiting).
    fn upload_ready(&mut self) -> bool {
        if let UploadState::Mapping(rx) = &self.upload_state {
            match rx.try_recv() {
                Ok(Ok(())) => self.upload_state = UploadState::Mapped,
                Ok(Err(_)) | Err(TryRecvError::Disconnected) | Err(TryRecvError::Empty) => {
                    return false;
                }
            }
        }
        true
    }

    /// Has the courier map the upload buffer again for the next dispatch that takes the set.
    pub(super) fn remap(&mut self, courier: &Courier) {
        if let Some(rx) = courier.remap(&self.upload) {
            self.upload_state = UploadState::Mapping(rx);
        }
    }
}

/// Sets of dispatch buffers not in use, kept for later batches.
#[derive(Debug, Default)]
pub(super) struct BufferPool {
    sets: Mutex<Vec<DispatchBuffers>>,
}

impl BufferPool {
    /// A set of at least `input` and `output` bytes whose upload buffer is mapped: the
    /// smallest such free one, or a new one sized to the next power of two (a set still being
    /// mapped again stays in the pool rather than be waited for).
    pub(super) fn take(&self, device: &Device, input: u64, output: u64) -> DispatchBuffers {
        let mut pool = self
            .sets
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        let best = pool
            .iter_mut()
            .enumerate()
            .filter(|(_, s)| s.fits(input, output))
            .filter_map(|(i, s)| {
                s.upload_ready()
                    .then_some((i, s.upload.size() + s.output.size()))
            })
            .min_by_key(|&(_, size)| size)
            .map(|(i, _)| i);
        match best {
            Some(i) => pool.swap_remove(i),
            None => DispatchBuffers::new(
                &device.wgpu,
                // Whole powers of two of at least 16 bytes keep every size copy-aligned.
                input.max(16).next_power_of_two(),
                output.max(16).next_power_of_two(),
                device.timestamps,
                device.host_shared,
            ),
        }
    }

    /// Keeps `set` for a later dispatch.
    pub(super) fn give_back(&self, set: DispatchBuffers) {
        self.sets
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .push(set);
    }

    /// Bytes of GPU memory the kept sets take.
    pub(super) fn bytes(&self) -> u64 {
        self.sets
            .lock()
            .map_or(0, |p| p.iter().map(DispatchBuffers::bytes).sum())
    }

    /// Frees the kept sets.
    pub(super) fn clear(&self) {
        *self
            .sets
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner) = Vec::new();
        self.sets.clear_poison();
    }
}
